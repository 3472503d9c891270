/*
 * The software HCA's control socket driven by the gda_ft_softctl binary
 * (suite soft_2proc, as test_soft_2proc.c): port state and statistics of
 * a child process's device, malformed commands, unreachable processes.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "soft_2proc.h"
#include "gda_ft_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the control socket, through the gda_ft_softctl binary -------------- */

typedef struct p2_ctl {
    p2_t p;
    char dir[64];
    char sock[128];
    char softctl[1024];
} p2_ctl_t;

static void p2_ctl_start(p2_ctl_t *c)
{
    unsigned port = p2_udp_port();
    p2_info_t none = {0}, remote;
    char spec[128];
    p2_reply_t r;

    snprintf(c->softctl, sizeof(c->softctl), "%s/src/tools/gda_ft_softctl",
             gda_ft_test_builddir());
    if (access(c->softctl, X_OK) != 0) {
        GDA_FT_FAIL("%s is not built (make all)", c->softctl);
    }

    strcpy(c->dir, "/tmp/gda_ft_ctl.XXXXXX");
    GDA_FT_ASSERT(mkdtemp(c->dir) != NULL);
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", c->dir, 1);

    snprintf(spec, sizeof(spec), "ctl0=127.0.0.21:%u,ctl1=127.0.0.22:%u",
             port, port);
    p2_fork(&c->p, spec, "ctl0", 1);
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 1);

    /* no QP of ours: the child only shows its control socket */
    p2_write_all(c->p.to_child, &none, sizeof(none));
    GDA_FT_ASSERT_EQ(p2_read_all(c->p.from_child, &remote, sizeof(remote),
                                 P2_IO_TIMEOUT), 0);

    snprintf(c->sock, sizeof(c->sock), "%s/gda_ft-soft.%d.sock", c->dir,
             c->p.child);
    r = p2_call(&c->p, P2_CMD_PORT_STATE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, GDA_FT_HCA_PORT_ACTIVE);
    if (strcmp(r.text, c->sock)) {
        GDA_FT_FAIL("control socket is '%s', expected '%s'", r.text,
                    c->sock);
    }
}

static void p2_ctl_stop(p2_ctl_t *c)
{
    p2_call(&c->p, P2_CMD_EXIT, 0, 0, 0, 0);
    p2_reap(&c->p);
    close(c->p.to_child);
    close(c->p.from_child);
    /* the engine removed its socket when the child closed its devices */
    GDA_FT_ASSERT(access(c->sock, F_OK) != 0);
    GDA_FT_ASSERT_EQ(rmdir(c->dir), 0);
}

/* "dropped N" of DEV:1 in a stats reply */
static unsigned long p2_stats_dropped(const char *out, const char *port,
                                      const char *state)
{
    char key[64];
    const char *line, *dropped;

    snprintf(key, sizeof(key), "%s %s ", port, state);
    line = strstr(out, key);
    if (line == NULL) {
        GDA_FT_FAIL("no '%s' line in the stats reply", key);
    }
    dropped = strstr(line, " dropped ");
    GDA_FT_ASSERT(dropped != NULL);
    return strtoul(dropped + 9, NULL, 10);
}

GDA_FT_TEST(soft_2proc, softctl_port_down_changes_state_and_stats)
{
    char out[8192], line[256];
    unsigned long dropped;
    p2_reply_t r;
    p2_ctl_t c;

    p2_ctl_start(&c);

    /* the process is listed, with its socket */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' list", c.softctl,
                           c.dir), 0);
    snprintf(line, sizeof(line), "%-8d %s\n", c.p.child, c.sock);
    GDA_FT_ASSERT(strstr(out, line) != NULL);

    /* traffic through the port while it is up */
    r = p2_call(&c.p, P2_CMD_LOOP_WRITE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, 1);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d stats",
                           c.softctl, c.dir, c.p.child), 0);
    GDA_FT_ASSERT_EQ(p2_stats_dropped(out, "ctl0:1", "ACTIVE"), 0);
    GDA_FT_ASSERT(strstr(out, "ctl1:1 ACTIVE ") != NULL);
    p2_call(&c.p, P2_CMD_EVENTS, 0, 0, 0, 0);

    /* down */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d port ctl0 1 "
                           "down", c.softctl, c.dir, c.p.child), 0);
    GDA_FT_ASSERT(!strcmp(out, "ok: ctl0 port 1 down\n"));
    r = p2_call(&c.p, P2_CMD_PORT_STATE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, GDA_FT_HCA_PORT_DOWN);
    r = p2_call(&c.p, P2_CMD_EVENTS, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, 1ull << GDA_FT_HCA_EVENT_PORT_ERR);

    /* the next write into the port retries until it gives up; the port
     * counts what it dropped */
    r = p2_call(&c.p, P2_CMD_LOOP_WRITE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.info.opcode, GDA_FT_MLX5_CQE_REQ_ERR);
    GDA_FT_ASSERT_EQ(r.info.syndrome, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    r = p2_call(&c.p, P2_CMD_STATS, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, 4);     /* retry_cnt 3: 4 transmissions */

    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -s '%s' stats", c.softctl,
                           c.sock), 0);
    dropped = p2_stats_dropped(out, "ctl0:1", "DOWN");
    GDA_FT_ASSERT_EQ(dropped, 4);
    GDA_FT_ASSERT(strstr(out, "ctl1:1 ACTIVE ") != NULL);

    /* up again, through -a */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -a port ctl0 1 up",
                           c.softctl, c.dir), 0);
    snprintf(line, sizeof(line), "==> pid %d (%s) <==\nok: ctl0 port 1 up\n",
             c.p.child, c.sock);
    GDA_FT_ASSERT(!strcmp(out, line));
    r = p2_call(&c.p, P2_CMD_PORT_STATE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, GDA_FT_HCA_PORT_ACTIVE);
    r = p2_call(&c.p, P2_CMD_EVENTS, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, 1ull << GDA_FT_HCA_EVENT_PORT_ACTIVE);

    /* fault settings are accepted and echoed */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d drop ctl0 1 "
                           "0.25", c.softctl, c.dir, c.p.child), 0);
    GDA_FT_ASSERT(!strcmp(out, "ok: ctl0 port 1 drop 0.25\n"));
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d ackloss ctl0 "
                           "1 0", c.softctl, c.dir, c.p.child), 0);
    p2_ctl_stop(&c);
}

GDA_FT_TEST(soft_2proc, softctl_malformed_commands_get_errors)
{
    static const struct {
        const char *cmd;
        const char *reply;   /* start of the expected reply */
    } cases[] = {
        {"port ctl0 1 sideways", "error: commands:"},
        {"port nosuch 1 down",   "error: no soft port nosuch:1"},
        {"port ctl0 3 down",     "error: no soft port ctl0:3"},
        {"port ctl0 x down",     "error: no soft port ctl0:x"},
        {"drop ctl0 1 1.5",      "error: probability must be within [0, 1]"},
        {"drop ctl0 1 -0.1",     "error: probability must be within [0, 1]"},
        {"delay ctl0 1 abc",     "error: commands:"},
        {"frobnicate",           "error: commands:"},
        {"stats now",            "error: commands:"},
        {"port ctl0 1",          "error: commands:"}
    };
    char out[8192];
    p2_reply_t r;
    unsigned i;
    p2_ctl_t c;

    p2_ctl_start(&c);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d %s",
                               c.softctl, c.dir, c.p.child, cases[i].cmd), 1);
        if (strncmp(out, cases[i].reply, strlen(cases[i].reply))) {
            GDA_FT_FAIL("'%s': reply '%s', expected '%s...'", cases[i].cmd,
                        out, cases[i].reply);
        }
    }

    /* nothing changed, and the socket still answers */
    r = p2_call(&c.p, P2_CMD_PORT_STATE, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, GDA_FT_HCA_PORT_ACTIVE);
    r = p2_call(&c.p, P2_CMD_EVENTS, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.value, 0);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d stats",
                           c.softctl, c.dir, c.p.child), 0);
    GDA_FT_ASSERT(strstr(out, "ctl0:1 ACTIVE ") != NULL);

    /* usage errors are the client's own: exit 2, nothing sent */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' stats", c.softctl,
                           c.dir), 2);
    GDA_FT_ASSERT(strstr(out, "exactly one of -p PID, -s SOCKET and -a"));
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -a -p %d stats",
                           c.softctl, c.dir, c.p.child), 2);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -p %d", c.softctl,
                           c.p.child), 2);
    GDA_FT_ASSERT(strstr(out, "missing command"));
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -p %d port %0300d 1 down",
                           c.softctl, c.p.child, 0), 2);
    GDA_FT_ASSERT(strstr(out, "at most 255 are accepted"));
    p2_ctl_stop(&c);
}

GDA_FT_TEST(soft_2proc, softctl_reports_unreachable_processes)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    char softctl[1024], dir[64], out[4096];
    double start, elapsed;
    int fd, status;
    pid_t dead;

    snprintf(softctl, sizeof(softctl), "%s/src/tools/gda_ft_softctl",
             gda_ft_test_builddir());
    if (access(softctl, X_OK) != 0) {
        GDA_FT_FAIL("%s is not built (make all)", softctl);
    }
    strcpy(dir, "/tmp/gda_ft_ctl.XXXXXX");
    GDA_FT_ASSERT(mkdtemp(dir) != NULL);

    /* an empty directory: nobody to list, nobody for -a */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' list", softctl,
                           dir), 0);
    GDA_FT_ASSERT(strstr(out, "no live process") != NULL);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -a stats", softctl,
                           dir), 3);
    GDA_FT_ASSERT(strstr(out, "no live process") != NULL);

    /* a process that does not exist */
    dead = fork();
    if (dead == 0) {
        _exit(0);
    }
    waitpid(dead, &status, 0);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d stats",
                           softctl, dir, dead), 3);
    GDA_FT_ASSERT(strstr(out, "no process") != NULL);

    /* a live process (this one) without a socket */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d stats",
                           softctl, dir, getpid()), 3);
    GDA_FT_ASSERT(strstr(out, "has no control socket") != NULL);

    /* a socket whose owner is gone (stale file): refused at once */
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/gda_ft-soft.%d.sock",
             dir, dead);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    GDA_FT_ASSERT_EQ(bind(fd, (struct sockaddr*)&addr, sizeof(addr)), 0);
    close(fd);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -s '%s' stats", softctl,
                           addr.sun_path), 3);
    GDA_FT_ASSERT(strstr(out, "nobody listens") != NULL);
    /* ... and list skips it: its pid is dead */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' list", softctl,
                           dir), 0);
    GDA_FT_ASSERT(strstr(out, addr.sun_path) == NULL);
    unlink(addr.sun_path);

    /* a socket of this live process that never answers: 2 s, then exit 3 */
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/gda_ft-soft.%d.sock",
             dir, getpid());
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    GDA_FT_ASSERT_EQ(bind(fd, (struct sockaddr*)&addr, sizeof(addr)), 0);
    start   = soft_now_sec();
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' -d '%s' -p %d stats",
                           softctl, dir, getpid()), 3);
    elapsed = soft_now_sec() - start;
    GDA_FT_ASSERT(strstr(out, "no reply from process") != NULL);
    GDA_FT_ASSERT((elapsed >= 1.9) && (elapsed < 10));
    /* the command did arrive */
    GDA_FT_ASSERT_EQ(recv(fd, out, sizeof(out), MSG_DONTWAIT), 5);
    close(fd);
    unlink(addr.sun_path);
    GDA_FT_ASSERT_EQ(rmdir(dir), 0);
}
