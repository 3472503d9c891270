/*
 * Software HCA control socket (gda_ft_softctl): port states, faults and
 * statistics from outside the process, and the commands other layers
 * register (extensions). Commands run with the engine lock exclusive.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

const char *gda_ft_soft_ctl_path(void)
{
    return gda_ft_soft_engine.ctl_path;
}

ucs_status_t gda_ft_soft_ctl_open(int epfd)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct sockaddr_un addr      = {.sun_family = AF_UNIX};
    const char *dir              = engine->config.ctl_dir;
    struct epoll_event ev        = {0};
    int fd;

    engine->ctl_path[0] = '\0';
    if ((dir == NULL) || (*dir == '\0')) {
        return UCS_OK;
    }

    if ((size_t)snprintf(engine->ctl_path, sizeof(engine->ctl_path),
                         "%s/gda_ft-soft.%d.sock", dir, getpid()) >=
        sizeof(engine->ctl_path)) {
        ucs_error("UCX_GDA_FT_SOFT_CTL_DIR '%s' is too long", dir);
        engine->ctl_path[0] = '\0';
        return UCS_ERR_INVALID_PARAM;
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("control socket: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    strcpy(addr.sun_path, engine->ctl_path);
    unlink(addr.sun_path);
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        ucs_warn("control socket %s: bind failed: %m (gda_ft_softctl will not"
                 " reach this process)", addr.sun_path);
        close(fd);
        engine->ctl_path[0] = '\0';
        return UCS_OK;
    }

    ev.events   = EPOLLIN;
    ev.data.ptr = engine;   /* wakes the engine; handled by ctl_progress */
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    engine->ctl_fd = fd;
    return UCS_OK;
}

void gda_ft_soft_ctl_close(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    if (engine->ctl_fd >= 0) {
        close(engine->ctl_fd);
        unlink(engine->ctl_path);
        engine->ctl_fd = -1;
    }
    engine->ctl_path[0] = '\0';
}

static void gda_ft_soft_ctl_engine_stats(char *reply, size_t max)
{
    gda_ft_soft_engine_stats_t st;
    char line[768];

    gda_ft_soft_engine_stats(&st);
    gda_ft_soft_engine_stats_format(&st, line, sizeof(line));
    snprintf(reply, max, "engine threads %u: %s\n", st.workers, line);
}

static void gda_ft_soft_ctl_stats(char *reply, size_t max)
{
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_port_t *port;
    size_t len = 0;
    unsigned p;

    reply[0] = '\0';
    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            port = &dev->ports[p];
            len += snprintf(reply + len, (len < max) ? max - len : 0,
                    "%s:%u %s tx %lu rx %lu retrans %lu implied_naks %lu "
                    "dropped %lu "
                    "malformed %lu bad_icrc %lu bad_qpn %lu bad_src %lu "
                    "out_of_seq %lu dup %lu naks %lu rnr_naks %lu "
                    "loopback %lu\n",
                    dev->super.attr.info.name, port->num,
                    gda_ft_soft_port_is_up(port) ? "ACTIVE" : "DOWN",
                    port->stats.tx_pkts, port->stats.rx_pkts,
                    port->stats.retransmits, port->stats.implied_naks,
                    port->stats.fault_dropped,
                    port->stats.rx_malformed, port->stats.rx_bad_icrc,
                    port->stats.rx_bad_qpn, port->stats.rx_bad_src,
                    port->stats.rx_out_of_seq, port->stats.rx_duplicate,
                    port->stats.tx_naks, port->stats.tx_rnr_naks,
                    port->stats.rx_loopback);
        }
    }
    gda_ft_soft_ctl_engine_stats(reply + ucs_min(len, max),
                                 (len < max) ? max - len : 0);
}

/* Commands added by upper layers (the UCT transport's "counters") */
typedef struct gda_ft_soft_ctl_ext {
    char                   name[32];
    gda_ft_soft_ctl_func_t func;
    void                  *arg;
} gda_ft_soft_ctl_ext_t;

#define GDA_FT_SOFT_CTL_MAX_EXT 16

static gda_ft_soft_ctl_ext_t gda_ft_soft_ctl_exts[GDA_FT_SOFT_CTL_MAX_EXT];

ucs_status_t gda_ft_soft_ctl_register(const char *name,
                                      gda_ft_soft_ctl_func_t func, void *arg)
{
    ucs_status_t status = UCS_ERR_EXCEEDS_LIMIT;
    unsigned i;

    if (strlen(name) >= sizeof(gda_ft_soft_ctl_exts[0].name)) {
        return UCS_ERR_INVALID_PARAM;
    }

    gda_ft_soft_engine_lock();
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if (gda_ft_soft_ctl_exts[i].func == NULL) {
            strcpy(gda_ft_soft_ctl_exts[i].name, name);
            gda_ft_soft_ctl_exts[i].func = func;
            gda_ft_soft_ctl_exts[i].arg  = arg;
            status                       = UCS_OK;
            break;
        }
    }
    gda_ft_soft_engine_unlock();
    return status;
}

void gda_ft_soft_ctl_unregister(gda_ft_soft_ctl_func_t func, void *arg)
{
    unsigned i;

    gda_ft_soft_engine_lock();
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if ((gda_ft_soft_ctl_exts[i].func == func) &&
            (gda_ft_soft_ctl_exts[i].arg == arg)) {
            memset(&gda_ft_soft_ctl_exts[i], 0, sizeof(gda_ft_soft_ctl_exts[i]));
        }
    }
    gda_ft_soft_engine_unlock();
}

/* Runs every extension named argv[0], appending their replies */
static int gda_ft_soft_ctl_run_extension(int argc, char **argv, char *reply,
                                         size_t max)
{
    size_t len = 0;
    int found  = 0;
    unsigned i;

    reply[0] = '\0';
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if ((gda_ft_soft_ctl_exts[i].func != NULL) &&
            !strcmp(gda_ft_soft_ctl_exts[i].name, argv[0]) && (len < max)) {
            gda_ft_soft_ctl_exts[i].func(gda_ft_soft_ctl_exts[i].arg, argc,
                                         argv, reply + len, max - len);
            len  += strlen(reply + len);
            found = 1;
        }
    }
    return found;
}

/* Executes a command with the engine lock held */
static ucs_status_t gda_ft_soft_ctl_exec_locked(char *cmd, char *reply,
                                                size_t max)
{
    char *argv[8], *save = NULL, *end;
    const char *why;
    gda_ft_soft_port_t *port;
    gda_ft_hca_dev_t *dev;
    gda_ft_soft_fault_t fault;
    unsigned long port_num;
    double value;
    int argc = 0;

    for (argv[argc] = strtok_r(cmd, " \t\n", &save);
         (argv[argc] != NULL) && (argc < 7);
         argv[++argc] = strtok_r(NULL, " \t\n", &save)) {
    }

    if ((argc == 1) && !strcmp(argv[0], "stats")) {
        gda_ft_soft_ctl_stats(reply, max);
        return UCS_OK;
    }

    if ((argc >= 1) && gda_ft_soft_ctl_run_extension(argc, argv, reply, max)) {
        return UCS_OK;
    }

    if (argc != 4) {
        goto usage;
    }

    dev      = gda_ft_soft_dev_find(argv[1]);
    port_num = strtoul(argv[2], &end, 10);
    if ((dev == NULL) || (*end != '\0') ||
        ((port = gda_ft_soft_port_get(dev, (uint8_t)port_num)) == NULL) ||
        (port_num > GDA_FT_HCA_MAX_PORTS)) {
        snprintf(reply, max, "error: no soft port %s:%s in process %d\n",
                 argv[1], argv[2], getpid());
        return UCS_ERR_NO_DEVICE;
    }

    if (!strcmp(argv[0], "port")) {
        if (strcmp(argv[3], "up") && strcmp(argv[3], "down")) {
            goto usage;
        }
        gda_ft_soft_port_set_up_locked(dev, port_num, !strcmp(argv[3], "up"));
        snprintf(reply, max, "ok: %s port %lu %s\n", argv[1], port_num,
                 argv[3]);
        return UCS_OK;
    }

    fault = port->fault;
    value = strtod(argv[3], &end);
    if (*end != '\0') {
        goto usage;
    }

    if (!strcmp(argv[0], "drop")) {
        fault.drop = value;
    } else if (!strcmp(argv[0], "delay")) {
        fault.delay = value;
    } else if (!strcmp(argv[0], "reorder")) {
        fault.reorder = value;
    } else if (!strcmp(argv[0], "ackloss")) {
        fault.ack_drop = value;
    } else if (!strcmp(argv[0], "pace")) {
        fault.pace_time = value;
    } else {
        goto usage;
    }

    why = gda_ft_soft_fault_invalid(&fault);
    if (why != NULL) {
        snprintf(reply, max, "error: %s\n", why);
        return UCS_ERR_INVALID_PARAM;
    }
    port->fault = fault;
    snprintf(reply, max, "ok: %s port %lu %s %g\n", argv[1], port_num,
             argv[0], value);
    return UCS_OK;

usage:
    snprintf(reply, max, "error: commands: stats | port DEV PORT up|down | "
             "drop|delay|reorder|ackloss DEV PORT PROB | "
             "pace DEV PORT SECONDS | "
             "commands added by the transport (counters)\n");
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t gda_ft_soft_ctl_exec(const char *cmd, char *reply, size_t max)
{
    ucs_status_t status;
    char *copy;

    copy = strdup(cmd);
    if (copy == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    gda_ft_soft_engine_lock();
    status = gda_ft_soft_ctl_exec_locked(copy, reply, max);
    gda_ft_soft_engine_unlock();
    free(copy);
    gda_ft_soft_engine_wake();
    return status;
}

void gda_ft_soft_ctl_progress(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct sockaddr_un from;
    socklen_t from_len = sizeof(from);
    char cmd[256], reply[4096];
    ssize_t len;

    if (engine->ctl_fd < 0) {
        return;
    }

    len = recvfrom(engine->ctl_fd, cmd, sizeof(cmd) - 1, MSG_DONTWAIT,
                   (struct sockaddr*)&from, &from_len);
    if (len <= 0) {
        return;
    }

    cmd[len] = '\0';
    gda_ft_soft_ctl_exec_locked(cmd, reply, sizeof(reply));
    if (from_len > sizeof(sa_family_t)) {
        sendto(engine->ctl_fd, reply, strlen(reply), MSG_DONTWAIT,
               (struct sockaddr*)&from, from_len);
    }
}
