/*
 * Software HCA between two processes: every opcode with the requester in
 * one process and the responder in another, each with its own soft device
 * and engine, connection parameters exchanged over pipes as two nodes
 * would. Then the control socket driven by the gda_ft_softctl binary, the
 * fault schedule of the environment, and the demo program end to end.
 *
 * The test forks before it opens anything: a soft HCA engine is a thread,
 * and threads do not survive fork().
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "soft_harness.h"
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

#define P2_MB            (1024ul * 1024ul)
#define P2_BUF_SIZE      (12 * P2_MB)  /* the responder's buffer */
#define P2_GUARD         0xa5
#define P2_IO_TIMEOUT    60.0          /* seconds for one command */

/* Commands the parent sends to the child that serves them */
typedef enum {
    P2_CMD_RESET = 1,   /* fill the whole buffer with the guard byte */
    P2_CMD_FILL,        /* pattern(seed) at [off, off + len) */
    P2_CMD_CHECK,       /* pattern(seed) at [off, off + len), guards around */
    P2_CMD_POST_RECV,   /* receive WQE of [off, off + len) */
    P2_CMD_WAIT_RECV,   /* one receive completion */
    P2_CMD_READ64,
    P2_CMD_WRITE64,
    P2_CMD_FETCH_ADDS,  /* len fetch-adds of `value` on the parent's off */
    P2_CMD_PORT_STATE,  /* state of the device's port 1 */
    P2_CMD_EVENTS,      /* port events seen since the last query */
    P2_CMD_LOOP_WRITE,  /* one write between the child's two devices */
    P2_CMD_STATS,       /* counters of the device's port 1 */
    P2_CMD_EXIT
} p2_cmd_op_t;

typedef struct p2_cmd {
    uint32_t op;
    uint32_t seed;
    uint64_t off;
    uint64_t len;
    uint64_t value;
} p2_cmd_t;

typedef struct p2_reply {
    int32_t               status;   /* 0: ok */
    uint32_t              reserved;
    uint64_t              value;
    uint64_t              value2;
    gda_ft_dev_cqe_info_t info;
    char                  text[128];
} p2_reply_t;

/* What one side tells the other, as a CM exchange would */
typedef struct p2_info {
    uint32_t qpn;
    uint32_t rkey;
    uint8_t  gid[GDA_FT_HCA_GID_LEN];
    uint64_t addr;
    uint64_t len;
} p2_info_t;

typedef struct p2 {
    pid_t             child;
    int               to_child, from_child;
    gda_ft_hca_dev_t *dev;
    soft_ep_t         ep;
    p2_info_t         remote;
    uint8_t          *buf;     /* the parent's own registered buffer */
    gda_ft_hca_mr_t  *mr;
} p2_t;

/* The child's state */
typedef struct p2_child {
    int               in, out;
    gda_ft_hca_dev_t *dev;
    soft_ep_t         ep;
    p2_info_t         remote;
    uint8_t          *buf;
    gda_ft_hca_mr_t  *mr;
    /* control-socket tests: a second device and a connected pair on it */
    gda_ft_hca_dev_t *dev2;
    soft_ep_t         la, lb;
    uint64_t          events;  /* bit per event type seen */
} p2_child_t;


/* ---- plumbing ---------------------------------------------------------- */

static void p2_write_all(int fd, const void *buf, size_t len)
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
static int p2_read_all(int fd, void *buf, size_t len, double timeout)
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
static unsigned p2_udp_port(void)
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
static void p2_fork(p2_t *p, const char *child_spec, const char *child_name,
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
static void p2_reap(p2_t *p)
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

static p2_reply_t p2_call(p2_t *p, p2_cmd_op_t op, uint64_t off, uint64_t len,
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
static void p2_start(p2_t *p)
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

static void p2_stop(p2_t *p)
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

static void p2_expect_ok(p2_t *p, uint16_t idx, const char *what)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(&p->ep, &info, 20000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        GDA_FT_FAIL("%s: CQE opcode 0x%x syndrome %s", what, info.opcode,
                    gda_ft_hca_syndrome_str(info.syndrome));
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
}

static void p2_expect_remote(p2_t *p, uint64_t off, uint64_t len,
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


/* ---- every opcode between two processes -------------------------------- */

static const struct {
    size_t len, soff, doff;
} p2_write_cases[] = {
    {1, 0, 0}, {4095, 3, 5}, {4096, 0, 0}, {4097, 1, 7}, {65539, 5, 3},
    {4 * P2_MB + 3, 3, 5}, {11 * P2_MB + 1, 7, 1}
};

GDA_FT_TEST_TIMEOUT(soft_2proc, write_multi_mb_unaligned, 180)
{
    uint8_t *src;
    size_t i, len, soff, doff;
    char what[64];
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    src = p.buf;
    for (i = 0; i < sizeof(p2_write_cases) / sizeof(p2_write_cases[0]); ++i) {
        len  = p2_write_cases[i].len;
        soff = p2_write_cases[i].soff;
        doff = p2_write_cases[i].doff;
        snprintf(what, sizeof(what), "write of %zu from +%zu to +%zu", len,
                 soff, doff);

        p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
        soft_fill(src + soff, len, (unsigned)(i + 1));
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.ep.sq, (uintptr_t)src + soff, p.mr->lkey, len,
                p.remote.addr + doff, p.remote.rkey, GDA_FT_WQE_SIGNALED,
                &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, what);
        p2_expect_remote(&p, doff, len, (unsigned)(i + 1), what);
    }
    p2_stop(&p);
}

GDA_FT_TEST_TIMEOUT(soft_2proc, read_multi_mb_unaligned, 180)
{
    uint8_t *dst, *ref;
    size_t i, len, loff, roff, total;
    char what[64];
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    dst = p.buf;
    ref = malloc(P2_BUF_SIZE);
    for (i = 0; i < sizeof(p2_write_cases) / sizeof(p2_write_cases[0]); ++i) {
        len   = p2_write_cases[i].len;
        loff  = p2_write_cases[i].doff;
        roff  = p2_write_cases[i].soff;
        total = len + loff + 64;
        snprintf(what, sizeof(what), "read of %zu from +%zu to +%zu", len,
                 roff, loff);

        p2_call(&p, P2_CMD_FILL, roff, len, (unsigned)(i + 100), 0);
        memset(dst, 0x5a, total);
        memset(ref, 0x5a, total);
        soft_fill(ref + loff, len, (unsigned)(i + 100));
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.ep.sq, (uintptr_t)dst + loff, p.mr->lkey, len,
                p.remote.addr + roff, p.remote.rkey, GDA_FT_WQE_SIGNALED,
                &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, what);
        GDA_FT_ASSERT_MEM_EQ(dst, ref, total);
    }
    free(ref);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, send_and_send_imm)
{
    static const uint32_t sizes[] = {0, 1, 4095, 4097, 65536 + 3,
                                     1024 * 1024 + 5};
    uint8_t *src;
    p2_reply_t r;
    unsigned i;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    src = p.buf + 1;   /* unaligned source */
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
        p2_call(&p, P2_CMD_POST_RECV, 3, sizes[i] + 16, 0, 0);
        soft_fill(src, sizes[i], i + 200);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_imm(
                    &p.ep.sq, (uintptr_t)src, p.mr->lkey, sizes[i],
                    0xc0de0000 + i, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
        } else {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(
                    &p.ep.sq, (uintptr_t)src, p.mr->lkey, sizes[i],
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, "send");

        r = p2_call(&p, P2_CMD_WAIT_RECV, 0, 0, 0, 0);
        GDA_FT_ASSERT_EQ(r.info.opcode, (i & 1) ?
                         GDA_FT_MLX5_CQE_RESP_SEND_IMM :
                         GDA_FT_MLX5_CQE_RESP_SEND);
        GDA_FT_ASSERT_EQ(r.info.byte_cnt, sizes[i]);
        GDA_FT_ASSERT_EQ(r.info.wqe_counter, i);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(r.info.imm, 0xc0de0000 + i);
        }
        p2_expect_remote(&p, 3, sizes[i], i + 200, "send");
    }
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, write_imm_consumes_receive)
{
    size_t len = 3 * 4096 + 11;
    p2_reply_t r;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
    /* the receive WQE's buffer stays untouched: the data goes to raddr */
    p2_call(&p, P2_CMD_POST_RECV, 8 * P2_MB, 64, 0, 0);
    soft_fill(p.buf + 5, len, 31);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_imm(
            &p.ep.sq, (uintptr_t)p.buf + 5, p.mr->lkey, len,
            p.remote.addr + 9, p.remote.rkey, 0x12345678,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "write_imm");

    r = p2_call(&p, P2_CMD_WAIT_RECV, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.info.opcode, GDA_FT_MLX5_CQE_RESP_WR_IMM);
    GDA_FT_ASSERT_EQ(r.info.imm, 0x12345678);
    GDA_FT_ASSERT_EQ(r.info.byte_cnt, len);
    GDA_FT_ASSERT_EQ(r.info.wqe_counter, 0);
    p2_expect_remote(&p, 9, len, 31, "write_imm");
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, 8 * P2_MB, 0, 0, 0).value,
                     0xa5a5a5a5a5a5a5a5ull);
    p2_stop(&p);
}

#define P2_COUNTER_OFF  (4096 + 8)

GDA_FT_TEST(soft_2proc, atomic_fetch_add_and_cswap_counters)
{
    uint64_t *results, expect = 1000, n = 500, posted = 0, done = 0;
    gda_ft_dev_cqe_info_t info;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    results = (uint64_t*)p.buf;
    p2_call(&p, P2_CMD_WRITE64, P2_COUNTER_OFF, 0, 0, 1000);

    /* 500 fetch-adds of 1, 2, 3, ... with 32 in flight: old values come
     * back in order, each exactly once */
    while (done < n) {
        while ((posted < n) && (posted - done < 32)) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.ep.sq, (uintptr_t)&results[posted % 32], p.mr->lkey,
                    p.remote.addr + P2_COUNTER_OFF, p.remote.rkey,
                    posted + 1, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
            ++posted;
        }
        soft_ep_ring(&p.ep);
        soft_ep_wait_send(&p.ep, &info, 10000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(be64toh(results[done % 32]), expect);
        expect += ++done;
    }
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 1000 + n * (n + 1) / 2);
    GDA_FT_ASSERT_EQ(expect, 1000 + n * (n + 1) / 2);

    /* compare-swap: a failing compare leaves the counter, returns it */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(
            &p.ep.sq, (uintptr_t)results, p.mr->lkey,
            p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, 7, 99,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "cswap (fails)");
    GDA_FT_ASSERT_EQ(be64toh(results[0]), expect);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, expect);

    /* ... a matching one swaps */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(
            &p.ep.sq, (uintptr_t)results, p.mr->lkey,
            p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, expect,
            0xfeedfacecafebeefull, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "cswap (swaps)");
    GDA_FT_ASSERT_EQ(be64toh(results[0]), expect);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 0xfeedfacecafebeefull);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, atomic_masked_32_and_64)
{
    uint64_t *result, off = 8192, value;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    result = (uint64_t*)p.buf;

    /* 32-bit masked fetch-add: wraps within 32 bits, neighbour untouched */
    p2_call(&p, P2_CMD_WRITE64, off, 0, 0, 0x77777777fffffff0ull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa32(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off,
            p.remote.rkey, 0x20, 0, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_fa32");
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)result), 0xfffffff0u);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off, 0, 0, 0).value,
                     0x7777777700000010ull);

    /* 32-bit masked compare-swap at +4: swaps the low byte when the
     * compared byte matches */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 4,
            p.remote.rkey, 0x00007700, 0x000000aa, 0x0000ff00, 0x000000ff,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_cs32");
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)result), 0x77777777u);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off, 0, 0, 0).value,
                     0x777777aa00000010ull);

    /* 64-bit masked compare-swap: swap the high half when the low matches */
    p2_call(&p, P2_CMD_WRITE64, off + 8, 0, 0, 0x1111111122222222ull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 8,
            p.remote.rkey, 0x22222222ull, 0x9999999900000000ull,
            0xffffffffull, 0xffffffff00000000ull, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_cs64");
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 0x1111111122222222ull);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off + 8, 0, 0, 0).value,
                     0x9999999922222222ull);

    /* 64-bit masked fetch-add, two 32-bit fields: no carry between them */
    p2_call(&p, P2_CMD_WRITE64, off + 16, 0, 0, 0x00000001ffffffffull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa64(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 16,
            p.remote.rkey, 0x0000000100000001ull, 1ull << 31,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_fa64");
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 0x00000001ffffffffull);
    value = p2_call(&p, P2_CMD_READ64, off + 16, 0, 0, 0).value;
    GDA_FT_ASSERT_EQ(value, 0x0000000200000000ull);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, bidirectional_fetch_add_counters)
{
    uint64_t n = 2000, posted = 0, done = 0, *results;
    gda_ft_dev_cqe_info_t info;
    p2_cmd_t cmd = {P2_CMD_FETCH_ADDS, 0, P2_COUNTER_OFF, 2000, 3};
    p2_reply_t reply;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    results = (uint64_t*)(p.buf + 8 * P2_MB);
    p2_call(&p, P2_CMD_WRITE64, P2_COUNTER_OFF, 0, 0, 0);

    /* both processes add to the other's counter at the same time: the
     * child 2000 x 3 into ours, we 2000 x 5 into the child's */
    p2_write_all(p.to_child, &cmd, sizeof(cmd));
    while (done < n) {
        while ((posted < n) && (posted - done < 16)) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.ep.sq, (uintptr_t)&results[posted % 16], p.mr->lkey,
                    p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, 5,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
            ++posted;
        }
        soft_ep_ring(&p.ep);
        soft_ep_wait_send(&p.ep, &info, 10000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(be64toh(results[done % 16]), 5 * done);
        ++done;
    }

    GDA_FT_ASSERT_EQ(p2_read_all(p.from_child, &reply, sizeof(reply),
                                 P2_IO_TIMEOUT), 0);
    GDA_FT_ASSERT_EQ(reply.status, 0);   /* its old values were in order */
    GDA_FT_ASSERT_EQ(__atomic_load_n((uint64_t*)(p.buf + P2_COUNTER_OFF),
                                     __ATOMIC_ACQUIRE), 3 * n);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 5 * n);
    p2_stop(&p);
}


/* ---- the control socket, through the gda_ft_softctl binary -------------- */

typedef struct p2_ctl {
    p2_t p;
    char dir[64];
    char sock[128];
    char softctl[1024];
} p2_ctl_t;

/* Runs a command line, output (stdout and stderr) into out; exit status */
static int p2_sh(char *out, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int p2_sh(char *out, size_t max, const char *fmt, ...)
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


/* ---- the fault schedule of the environment ------------------------------ */

/* Opens tsoft0 with UCX_GDA_FT_SOFT_FAULTS=spec; the log goes to log */
static ucs_status_t p2_open_with_faults(const char *spec,
                                        gda_ft_hca_dev_t **dev_p, char *log,
                                        size_t max)
{
    char path[] = "/tmp/gda_ft_sched.XXXXXX";
    int fd, saved_out, saved_err;
    ucs_status_t status;
    ssize_t len;

    setenv("UCX_GDA_FT_SOFT_FAULTS", spec, 1);
    soft_test_env(1, NULL);

    fd = mkstemp(path);
    GDA_FT_ASSERT(fd >= 0);
    unlink(path);
    fflush(NULL);
    saved_out = dup(STDOUT_FILENO);
    saved_err = dup(STDERR_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    status = gda_ft_hca_open("tsoft0", dev_p);
    fflush(NULL);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);

    len = pread(fd, log, max - 1, 0);
    log[(len > 0) ? len : 0] = '\0';
    close(fd);
    printf("UCX_GDA_FT_SOFT_FAULTS='%s': %s\n%s", spec,
           ucs_status_string(status), log);
    return status;
}

GDA_FT_TEST(soft_fault_sched, invalid_specs_fail_open)
{
    static const char *specs[] = {
        "100:tsoft0:1:down",            /* no unit */
        "100ms:tsoft0:1:sideways",      /* neither up nor down */
        "100ms:tsoft0:3:down",          /* no such port number */
        "100ms:tsoft0:0:down",
        "100ms:tsoft0:1",               /* a field missing */
        "100ms:tsoft0:1:down:later",    /* one too many */
        "-5ms:tsoft0:1:down",           /* before the start */
        "100 ms:tsoft0:1:down",
        "1s:tsoft0:one:down",
        "100ms:tsoft0:1:down;garbage",  /* one bad entry spoils the list */
        "100ms:a_device_name_longer_than_thirty_two:1:down"
    };
    gda_ft_hca_dev_t *dev = NULL;
    char log[8192];
    unsigned i;

    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); ++i) {
        GDA_FT_ASSERT_EQ(p2_open_with_faults(specs[i], &dev, log,
                                             sizeof(log)),
                         UCS_ERR_INVALID_PARAM);
        /* the error names the variable, the value and the syntax */
        GDA_FT_ASSERT(strstr(log, "UCX_GDA_FT_SOFT_FAULTS") != NULL);
        GDA_FT_ASSERT(strstr(log, specs[i]) != NULL);
        GDA_FT_ASSERT(strstr(log, "TIME{s|ms|us}:DEVICE:PORT:down|up") !=
                      NULL);
    }

    /* a failed open leaves nothing behind: a valid schedule opens */
    GDA_FT_ASSERT_OK(p2_open_with_faults("", &dev, log, sizeof(log)));
    gda_ft_hca_close(dev);
    unsetenv("UCX_GDA_FT_SOFT_FAULTS");
}

/* Waits for a port event of dev; returns seconds since t0 */
static double p2_wait_port_event(gda_ft_hca_dev_t *dev,
                                 gda_ft_hca_event_type_t type, double t0)
{
    gda_ft_hca_event_t event;
    double deadline = soft_now_sec() + 5;

    while (soft_now_sec() < deadline) {
        if (gda_ft_hca_get_event(dev, &event) == UCS_OK) {
            GDA_FT_ASSERT_EQ(event.type, type);
            GDA_FT_ASSERT_EQ(event.port_num, 1);
            return soft_now_sec() - t0;
        }
        usleep(1000);
    }
    GDA_FT_FAIL("no port event %d within 5 s", type);
}

static gda_ft_hca_port_state_t p2_port_state(gda_ft_hca_dev_t *dev)
{
    gda_ft_hca_port_attr_t attr;

    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    return attr.state;
}

GDA_FT_TEST(soft_fault_sched, valid_specs_take_port_down_and_up)
{
    static const char *specs[] = {
        "150ms:tsoft0:1:down;400ms:tsoft0:1:up",
        "0.15s:tsoft0:1:down;400000us:tsoft0:1:up",
        /* entries in any order; one for a device this process lacks */
        "400ms:tsoft0:1:up;50ms:nosuch:1:down;150ms:tsoft0:1:down"
    };
    gda_ft_hca_dev_t *dev;
    char log[8192];
    double t0, t;
    unsigned i;

    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); ++i) {
        t0 = soft_now_sec();
        GDA_FT_ASSERT_OK(p2_open_with_faults(specs[i], &dev, log,
                                             sizeof(log)));
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_ACTIVE);

        t = p2_wait_port_event(dev, GDA_FT_HCA_EVENT_PORT_ERR, t0);
        GDA_FT_ASSERT(t >= 0.149);
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_DOWN);

        t = p2_wait_port_event(dev, GDA_FT_HCA_EVENT_PORT_ACTIVE, t0);
        GDA_FT_ASSERT(t >= 0.399);
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_ACTIVE);
        gda_ft_hca_close(dev);
    }
    unsetenv("UCX_GDA_FT_SOFT_FAULTS");
}


/* ---- the demo, end to end ----------------------------------------------- */

GDA_FT_TEST_TIMEOUT(soft_2proc, demo_detects_port_down_and_verifies, 120)
{
    char demo[1024], out[65536];

    snprintf(demo, sizeof(demo), "%s/src/tools/gda_ft_soft_demo",
             gda_ft_test_builddir());
    if (access(demo, X_OK) != 0) {
        GDA_FT_FAIL("%s is not built (make all)", demo);
    }

    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 1);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' --udp-port %u "
                           "--server-addr 127.0.0.31 --client-addr 127.0.0.32"
                           " --size 16384 --slots 128 --window 32 --timeout 15 "
                           "--down-after-ops 150 --progress 5", demo,
                           p2_udp_port()), 0);
    GDA_FT_ASSERT(strstr(out, "syndrome 0x15 TRANSPORT_RETRY_EXC_ERR after")
                  != NULL);
    GDA_FT_ASSERT(strstr(out, "31 later WQEs flushed: WR_FLUSH_ERR") != NULL);
    GDA_FT_ASSERT(strstr(out, "[server] verification passed") != NULL);
    GDA_FT_ASSERT(strstr(out, "demo PASSED") != NULL);

    /* the schedule variant */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' --udp-port %u "
                           "--server-addr 127.0.0.31 --client-addr 127.0.0.32"
                           " --size 16384 --slots 128 --window 32 --timeout 15 "
                           "--down-after-ms 400 --progress 5", demo,
                           p2_udp_port()), 0);
    GDA_FT_ASSERT(strstr(out, "DOWN (fault schedule, 400 ms after open)") !=
                  NULL);
    GDA_FT_ASSERT(strstr(out, "demo PASSED") != NULL);
}
