/*
 * Two processes with a software HCA each (see soft_2proc.h): the pipes
 * between them, the child that serves the parent's commands, and the
 * parent's connection to it.
 *
 * The tests fork before they open anything: a soft HCA engine is a
 * thread, and threads do not survive fork().
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "soft_2proc.h"
#include "gda_ft_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


/* ---- plumbing ---------------------------------------------------------- */

void p2_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = write(fd, p, len);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            GDA_FT_FAIL("pipe write: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
}

/* 0 on success, -1 when the other end closed */
int p2_read_all(int fd, void *buf, size_t len, double timeout)
{
    double deadline = soft_now_sec() + timeout;
    struct pollfd pfd;
    uint8_t *p = buf;
    ssize_t ret;

    while (len > 0) {
        pfd.fd     = fd;
        pfd.events = POLLIN;
        ret = poll(&pfd, 1, 100);
        if ((ret < 0) && (errno != EINTR)) {
            GDA_FT_FAIL("poll: %s", strerror(errno));
        }
        if (ret <= 0) {
            if (soft_now_sec() > deadline) {
                GDA_FT_FAIL("no message from the other process within %.0f "
                            "s", timeout);
            }
            continue;
        }
        ret = read(fd, p, len);
        if (ret == 0) {
            return -1;
        }
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            GDA_FT_FAIL("pipe read: %s", strerror(errno));
        }
        p   += ret;
        len -= ret;
    }
    return 0;
}

/*
 * Connection parameters of the two-process pairs: these tests check data,
 * not retransmission timing, so the retry budget (8 x 268 ms) leaves room
 * for a loaded host where a peer process may not run for a while
 */
static soft_conn_params_t p2_params(void)
{
    soft_conn_params_t params = soft_default_params;

    params.timeout = 16;
    return params;
}

/* One UDP port per test process: parallel runs do not collide */
unsigned p2_udp_port(void)
{
    return 20000 + (getpid() % 20000);
}

static void p2_local_info(soft_ep_t *ep, gda_ft_hca_mr_t *mr, p2_info_t *info)
{
    memset(info, 0, sizeof(*info));
    info->qpn  = ep->qp->qpn;
    info->rkey = (mr != NULL) ? mr->rkey : 0;
    info->addr = (mr != NULL) ? (uintptr_t)mr->addr : 0;
    info->len  = (mr != NULL) ? mr->length : 0;
    soft_ep_gid(ep, info->gid);
}

static void *p2_alloc(size_t len)
{
    void *ptr = NULL;

    GDA_FT_ASSERT_EQ(posix_memalign(&ptr, 4096, len), 0);
    return ptr;
}


/* ---- the child --------------------------------------------------------- */

static void p2_child_fetch_adds(p2_child_t *c, uint64_t off, uint64_t count,
                                uint64_t addend, p2_reply_t *reply)
{
    uint64_t *results = p2_alloc(16 * sizeof(uint64_t));
    gda_ft_hca_mr_t *rmr = soft_mr(&c->ep, results, 16 * sizeof(uint64_t),
                                   GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    uint64_t posted = 0, done = 0, expect = 0;
    gda_ft_dev_cqe_info_t info;
    uint16_t idx;

    /* 16 in flight; the only adder: old values come back in order */
    while (done < count) {
        while ((posted < count) && (posted - done < 16)) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &c->ep.sq, (uintptr_t)&results[posted % 16], rmr->lkey,
                    c->remote.addr + off, c->remote.rkey, addend,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
            ++posted;
        }
        soft_ep_ring(&c->ep);
        soft_ep_wait_send(&c->ep, &info, 10000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        if (be64toh(results[done % 16]) != expect) {
            reply->status = 1;
        }
        expect += addend;
        ++done;
    }
    gda_ft_hca_mr_dereg(rmr);
    free(results);
}

static void p2_child_loop_write(p2_child_t *c, p2_reply_t *reply)
{
    static uint8_t src[256], dst[256];
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    uint16_t idx;

    /* dev2 (requester) -> dev (responder, the port under control) */
    soft_fill(src, sizeof(src), 77);
    smr = soft_mr(&c->la, src, sizeof(src), 0);
    dmr = soft_mr(&c->lb, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&c->la.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&c->la);
    soft_ep_wait_send(&c->la, &info, 10000);
    reply->info  = info;
    reply->value = (info.opcode == GDA_FT_MLX5_CQE_REQ) &&
                   !memcmp(src, dst, sizeof(src));
    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
}

static void p2_child_events(p2_child_t *c)
{
    gda_ft_hca_event_t event;

    while (gda_ft_hca_get_event(c->dev, &event) == UCS_OK) {
        if (event.port_num == 1) {
            c->events |= 1ull << event.type;
        }
    }
}

/* Serves the parent's commands until EXIT or until the parent is gone */
static void p2_child_serve(p2_child_t *c)
{
    gda_ft_hca_port_attr_t attr;
    gda_ft_soft_port_stats_t stats;
    p2_reply_t reply;
    uint8_t *ref;
    p2_cmd_t cmd;
    uint64_t i;

    for (;;) {
        if (p2_read_all(c->in, &cmd, sizeof(cmd), 3600) < 0) {
            return;
        }

        memset(&reply, 0, sizeof(reply));
        switch (cmd.op) {
        case P2_CMD_RESET:
            memset(c->buf, P2_GUARD, P2_BUF_SIZE);
            break;
        case P2_CMD_FILL:
            GDA_FT_ASSERT(cmd.off + cmd.len <= P2_BUF_SIZE);
            soft_fill(c->buf + cmd.off, cmd.len, cmd.seed);
            break;
        case P2_CMD_CHECK:
            GDA_FT_ASSERT(cmd.off + cmd.len <= P2_BUF_SIZE);
            ref = malloc(cmd.len + 1);
            soft_fill(ref, cmd.len, cmd.seed);
            for (i = 0; i < cmd.len; ++i) {
                if (c->buf[cmd.off + i] != ref[i]) {
                    reply.status = 1;
                    reply.value  = i;
                    reply.value2 = (c->buf[cmd.off + i] << 8) | ref[i];
                    break;
                }
            }
            if ((reply.status == 0) && (cmd.off > 0) &&
                (c->buf[cmd.off - 1] != P2_GUARD)) {
                reply.status = 2;   /* written before the target */
            }
            if ((reply.status == 0) && (cmd.off + cmd.len < P2_BUF_SIZE) &&
                (c->buf[cmd.off + cmd.len] != P2_GUARD)) {
                reply.status = 3;   /* written past the end */
            }
            free(ref);
            break;
        case P2_CMD_POST_RECV:
            soft_ep_post_recv(&c->ep, c->buf + cmd.off, (uint32_t)cmd.len,
                              c->mr->lkey);
            break;
        case P2_CMD_WAIT_RECV:
            soft_ep_wait_recv(&c->ep, &reply.info, 10000);
            break;
        case P2_CMD_READ64:
            reply.value = __atomic_load_n((uint64_t*)(c->buf + cmd.off),
                                          __ATOMIC_ACQUIRE);
            break;
        case P2_CMD_WRITE64:
            __atomic_store_n((uint64_t*)(c->buf + cmd.off), cmd.value,
                             __ATOMIC_RELEASE);
            break;
        case P2_CMD_FETCH_ADDS:
            p2_child_fetch_adds(c, cmd.off, cmd.len, cmd.value, &reply);
            break;
        case P2_CMD_PORT_STATE:
            GDA_FT_ASSERT_OK(gda_ft_hca_port_query(c->dev, 1, &attr));
            reply.value = attr.state;
            snprintf(reply.text, sizeof(reply.text), "%s",
                     gda_ft_soft_ctl_path());
            break;
        case P2_CMD_EVENTS:
            p2_child_events(c);
            reply.value = c->events;
            c->events   = 0;
            break;
        case P2_CMD_LOOP_WRITE:
            p2_child_loop_write(c, &reply);
            break;
        case P2_CMD_STATS:
            stats        = soft_port_stats(c->dev, 1);
            reply.value  = stats.fault_dropped;
            reply.value2 = stats.rx_pkts;
            break;
        case P2_CMD_EXIT:
            p2_write_all(c->out, &reply, sizeof(reply));
            return;
        default:
            GDA_FT_FAIL("unknown command %u", cmd.op);
        }
        p2_write_all(c->out, &reply, sizeof(reply));
    }
}

static void p2_child_main(int in, int out, const char *spec,
                          const char *name, int control)
{
    soft_conn_params_t params = soft_default_params;
    p2_child_t c;
    p2_info_t local;

    memset(&c, 0, sizeof(c));
    c.in  = in;
    c.out = out;
    soft_test_env_addrs(spec);
    c.dev = soft_open(name);
    soft_ep_create(&c.ep, c.dev, 1);
    c.buf = p2_alloc(P2_BUF_SIZE);
    memset(c.buf, P2_GUARD, P2_BUF_SIZE);
    c.mr  = soft_mr(&c.ep, c.buf, P2_BUF_SIZE, GDA_FT_HCA_ACCESS_ALL);

    if (control) {
        /* a pair on this process's two devices: traffic through the port
         * that the control socket takes down; short retries */
        c.dev2 = soft_open("ctl1");
        soft_ep_create(&c.la, c.dev2, 1);
        soft_ep_create(&c.lb, c.dev, 1);
        params.timeout   = 15;    /* 134 ms, 4 transmissions */
        params.retry_cnt = 3;
        soft_ep_pair_connect(&c.la, &c.lb, &params);
    }

    /* the exchange: the parent speaks first */
    GDA_FT_ASSERT_EQ(p2_read_all(in, &c.remote, sizeof(c.remote),
                                 P2_IO_TIMEOUT), 0);
    p2_local_info(&c.ep, c.mr, &local);
    p2_write_all(out, &local, sizeof(local));
    if (c.remote.qpn != 0) {
        params = p2_params();
        soft_ep_connect(&c.ep, c.remote.qpn, c.remote.gid, &params);
    }

    p2_child_serve(&c);

    if (control) {
        soft_ep_destroy(&c.la);
        soft_ep_destroy(&c.lb);
        gda_ft_hca_close(c.dev2);
    }
    gda_ft_hca_mr_dereg(c.mr);
    soft_ep_destroy(&c.ep);
    gda_ft_hca_close(c.dev);
    free(c.buf);
}

/*
 * Forks the child, which opens child_spec's device child_name; returns in
 * the parent with the pipes set up. The parent opens nothing here.
 */
void p2_fork(p2_t *p, const char *child_spec, const char *child_name,
             int control)
{
    int down[2], up[2];

    memset(p, 0, sizeof(*p));
    GDA_FT_ASSERT_EQ(pipe(down), 0);
    GDA_FT_ASSERT_EQ(pipe(up), 0);

    fflush(NULL);
    p->child = fork();
    GDA_FT_ASSERT(p->child >= 0);
    if (p->child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(down[1]);
        close(up[0]);
        p2_child_main(down[0], up[1], child_spec, child_name, control);
        fflush(NULL);
        _exit(0);
    }

    close(down[0]);
    close(up[1]);
    p->to_child   = down[1];
    p->from_child = up[0];
}

/* Waits for the child; fails unless it exited with 0 */
void p2_reap(p2_t *p)
{
    double deadline = soft_now_sec() + 30;
    int status;
    pid_t ret;

    while ((ret = waitpid(p->child, &status, WNOHANG)) == 0) {
        if (soft_now_sec() > deadline) {
            kill(p->child, SIGKILL);
            GDA_FT_FAIL("child %d did not exit", p->child);
        }
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(ret, p->child);
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        GDA_FT_FAIL("child process %d failed: %s %d (its output is above)",
                    p->child, WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) :
                    WTERMSIG(status));
    }
}

p2_reply_t p2_call(p2_t *p, p2_cmd_op_t op, uint64_t off, uint64_t len,
                   uint32_t seed, uint64_t value)
{
    p2_cmd_t cmd = {op, seed, off, len, value};
    p2_reply_t reply;

    p2_write_all(p->to_child, &cmd, sizeof(cmd));
    if (p2_read_all(p->from_child, &reply, sizeof(reply), P2_IO_TIMEOUT) <
        0) {
        p2_reap(p);   /* reports how the child died */
        GDA_FT_FAIL("child closed its pipe during command %d", op);
    }
    return reply;
}

/* Forks a responder on p2b, opens p2a here and connects the two QPs */
void p2_start(p2_t *p)
{
    soft_conn_params_t params;
    unsigned port = p2_udp_port();
    char spec_a[64], spec_b[64];
    p2_info_t local;

    snprintf(spec_a, sizeof(spec_a), "p2a=127.0.0.11:%u", port);
    snprintf(spec_b, sizeof(spec_b), "p2b=127.0.0.12:%u", port);
    p2_fork(p, spec_b, "p2b", 0);

    soft_test_env_addrs(spec_a);
    p->dev = soft_open("p2a");
    soft_ep_create(&p->ep, p->dev, 1);
    p->buf = p2_alloc(P2_BUF_SIZE);
    memset(p->buf, 0, P2_BUF_SIZE);
    p->mr  = soft_mr(&p->ep, p->buf, P2_BUF_SIZE, GDA_FT_HCA_ACCESS_ALL);

    p2_local_info(&p->ep, p->mr, &local);
    p2_write_all(p->to_child, &local, sizeof(local));
    GDA_FT_ASSERT_EQ(p2_read_all(p->from_child, &p->remote,
                                 sizeof(p->remote), P2_IO_TIMEOUT), 0);
    GDA_FT_ASSERT_EQ(p->remote.len, P2_BUF_SIZE);
    params = p2_params();
    soft_ep_connect(&p->ep, p->remote.qpn, p->remote.gid, &params);
}

void p2_stop(p2_t *p)
{
    p2_call(p, P2_CMD_EXIT, 0, 0, 0, 0);
    p2_reap(p);
    gda_ft_hca_mr_dereg(p->mr);
    soft_ep_destroy(&p->ep);
    gda_ft_hca_close(p->dev);
    free(p->buf);
    close(p->to_child);
    close(p->from_child);
}

void p2_expect_ok(p2_t *p, uint16_t idx, const char *what)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(&p->ep, &info, 20000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        GDA_FT_FAIL("%s: CQE opcode 0x%x syndrome %s", what, info.opcode,
                    gda_ft_hca_syndrome_str(info.syndrome));
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
}

void p2_expect_remote(p2_t *p, uint64_t off, uint64_t len,
                      uint32_t seed, const char *what)
{
    p2_reply_t r = p2_call(p, P2_CMD_CHECK, off, len, seed, 0);

    switch (r.status) {
    case 0:
        return;
    case 1:
        GDA_FT_FAIL("%s: remote byte %lu of %lu is 0x%02x, expected 0x%02x",
                    what, (unsigned long)r.value, (unsigned long)len,
                    (unsigned)(r.value2 >> 8), (unsigned)(r.value2 & 0xff));
    case 2:
        GDA_FT_FAIL("%s: the byte before the target was written", what);
    default:
        GDA_FT_FAIL("%s: the byte after the target was written", what);
    }
}

/* ---- the shell, for the programs the tests run ------------------------ */

int p2_sh(char *out, size_t max, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    int status;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd) - 8, fmt, ap);
    va_end(ap);
    strcat(cmd, " 2>&1");

    fflush(NULL);
    status = gda_ft_test_shell(cmd, out, max);
    printf("$ %s\n%s[exit %d]\n", cmd, out, status);
    return status;
}
