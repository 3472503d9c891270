/*
 * The dual-path endpoint of device/gda_ft_ep.h driven over software HCAs:
 * deadline and error-CQE detection, ordered replay on the backup path,
 * atomics in doubt, no path, and failback. Four HCAs: A's primary tsoft0
 * and backup tsoft1, B's primary tsoft2 and backup tsoft3.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"
#include "gda_ft_ep.h"
#include "chan_harness.h"   /* chan_world_time_scale() */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_SIZE       64
#define FT_DEADLINE_NS 50000000ull

typedef struct ft_setup {
    gda_ft_hca_dev_t *dev[4];
    soft_ep_t         a[2], b[2];     /* [path] */
    gda_ft_dev_ep_t   ep;
    gda_ft_dev_op_t   log[LOG_SIZE];
    uint32_t          ring_log[2 * SOFT_TEST_SQ_SIZE];
    uint8_t          *src, *dst;
    size_t            len;
    uint32_t          lkey[2], rkey[2];
    int               error_cqe_first; /* an error CQE came before any
                                          switch */
} ft_setup_t;

static void ft_init(ft_setup_t *s, size_t len, uint64_t deadline_ns,
                    const soft_conn_params_t *params)
{
    gda_ft_hca_qp_query_attr_t qattr;
    gda_ft_hca_mr_t *mr;
    char name[16];
    unsigned i;

    soft_test_env(4, NULL);
    for (i = 0; i < 4; ++i) {
        snprintf(name, sizeof(name), "tsoft%u", i);
        s->dev[i] = soft_open(name);
    }

    for (i = 0; i < 2; ++i) {
        soft_ep_create(&s->a[i], s->dev[i], 1);
        soft_ep_create(&s->b[i], s->dev[2 + i], 1);
        soft_ep_pair_connect(&s->a[i], &s->b[i], params);
    }

    s->error_cqe_first = 0;
    s->len             = len;
    s->src             = malloc(len);
    s->dst = calloc(1, len);
    soft_fill(s->src, len, 42);
    for (i = 0; i < 2; ++i) {
        mr         = soft_mr(&s->a[i], s->src, len,
                             GDA_FT_HCA_ACCESS_LOCAL_WRITE);
        s->lkey[i] = mr->lkey;
        mr         = soft_mr(&s->b[i], s->dst, len, GDA_FT_HCA_ACCESS_ALL);
        s->rkey[i] = mr->rkey;
    }

    gda_ft_dev_ep_init(&s->ep, s->log, LOG_SIZE, s->ring_log,
                       SOFT_TEST_SQ_SIZE, deadline_ns);
    for (i = 0; i < 2; ++i) {
        s->ep.sq[i] = s->a[i].sq;
        /* the PSN accounting starts where the QPs do */
        GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(s->a[i].qp, &qattr));
        GDA_FT_ASSERT_EQ(qattr.state, GDA_FT_HCA_QP_RTS);
        s->ep.next_psn[i] = qattr.sq_psn;
        s->ep.mtu         = qattr.path_mtu;
    }
}

static void ft_fini(ft_setup_t *s)
{
    unsigned i;

    for (i = 0; i < 2; ++i) {
        soft_ep_destroy(&s->a[i]);
        soft_ep_destroy(&s->b[i]);
    }
    for (i = 0; i < 4; ++i) {
        gda_ft_hca_close(s->dev[i]);
    }
    free(s->src);
    free(s->dst);
}

/* One progress pass: CQs of both paths, then the deadline */
static void ft_progress(ft_setup_t *s)
{
    gda_ft_dev_cqe_info_t info;
    unsigned path;

    for (path = 0; path < 2; ++path) {
        while (gda_ft_cq_poll_ring(&s->a[path].dscq, &info) !=
               GDA_FT_DEV_INPROGRESS) {
            if (gda_ft_cq_opcode_is_error(info.opcode) &&
                (s->ep.counters.switches == 0)) {
                s->error_cqe_first = 1;
            }
            gda_ft_ep_handle_cqe(&s->ep, path, &info);
        }
    }
    gda_ft_ep_check_deadline(&s->ep, gda_ft_dev_now_ns());
}

/* Waits for the oldest op; returns its status */
static gda_ft_dev_status_t ft_wait_one(ft_setup_t *s, uint64_t expect_user,
                                       double timeout)
{
    double deadline = soft_now_sec() + timeout;
    gda_ft_dev_op_t op;

    for (;;) {
        ft_progress(s);
        if (gda_ft_ep_pop(&s->ep, &op)) {
            GDA_FT_ASSERT_EQ(op.user, expect_user);
            return (gda_ft_dev_status_t)op.status;
        }
        if (soft_now_sec() > deadline) {
            GDA_FT_FAIL("operation %lu not completed in %.1f s",
                        (unsigned long)expect_user, timeout);
        }
        usleep(50);
    }
}

#define FT_SEQ_USER 1000   /* user values of ft_put_seq()'s puts */

static void ft_put_chunk(ft_setup_t *s, unsigned i, size_t chunk)
{
    GDA_FT_ASSERT_EQ(gda_ft_ep_put(&s->ep, (uintptr_t)s->src + i * chunk,
                                   s->lkey, chunk,
                                   (uintptr_t)s->dst + i * chunk, s->rkey, i),
                     GDA_FT_DEV_OK);
}

static soft_conn_params_t ft_slow_hw_params(void)
{
    soft_conn_params_t params = soft_default_params;

    /* One retransmission after 16.8 ms, the hardware gives up after
     * 8 x 16.8 = 134 ms. The deadline (50 ms) lets a lost packet be
     * retransmitted twice before the path is declared dead, and still
     * fails over long before the hardware would report an error. */
    params.timeout   = 12;
    params.retry_cnt = 7;
    return params;
}

GDA_FT_TEST(dev_ep_failover, healthy_path_no_switch)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t operand[4] = {5, 0, 0, 0};
    ft_setup_t s;
    unsigned i;

    ft_init(&s, 64 * 1024, FT_DEADLINE_NS, &params);
    for (i = 0; i < 16; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 5), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, s.len);

    /* get back into src's second half... and an atomic on dst[0] */
    memset(s.src, 0, 4096);
    GDA_FT_ASSERT_EQ(gda_ft_ep_get(&s.ep, (uintptr_t)s.src, s.lkey, 4096,
                                   (uintptr_t)s.dst + 4096, s.rkey, 100),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 100, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_MEM_EQ(s.src, s.dst + 4096, 4096);

    ((uint64_t*)s.dst)[0] = 10;
    GDA_FT_ASSERT_EQ(gda_ft_ep_atomic(&s.ep, GDA_FT_ATOMIC_FADD64, 8, operand,
                                      (uintptr_t)s.src, s.lkey,
                                      (uintptr_t)s.dst, s.rkey, 101),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 101, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(((uint64_t*)s.dst)[0], 15);
    GDA_FT_ASSERT_EQ(be64toh(((uint64_t*)s.src)[0]), 10);

    GDA_FT_ASSERT_EQ(s.ep.counters.switches, 0);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 0);
    GDA_FT_ASSERT_EQ(soft_port_stats(s.dev[1], 1).tx_pkts, 0);
    ft_fini(&s);
}

/* An 8-byte put of i from its own source word to the one word after the
 * n chunks that every such put overwrites: the last to land stays */
static void ft_put_seq(ft_setup_t *s, unsigned i, unsigned n, size_t chunk)
{
    uint64_t *words = (uint64_t*)(s->src + n * chunk);

    words[i] = i;
    GDA_FT_ASSERT_EQ(gda_ft_ep_put(&s->ep, (uintptr_t)&words[i], s->lkey, 8,
                                   (uintptr_t)s->dst + n * chunk, s->rkey,
                                   FT_SEQ_USER + i), GDA_FT_DEV_OK);
}

/*
 * Each chunk is followed by a put of its number to one shared word: the
 * word ends holding the last number only if every put, those replayed on
 * the backup included, landed in the order posted (a final compare of the
 * disjoint chunks alone would not see a replay out of order).
 */
GDA_FT_TEST(dev_ep_failover, deadline_switches_and_replays_in_order)
{
    soft_conn_params_t params = ft_slow_hw_params();
    gda_ft_dev_status_t status;
    size_t chunk = 64 * 1024;
    unsigned i, k, n = 32, switched = 0;
    double t_down = 0, t_first_backup = 0;
    uint64_t last;
    ft_setup_t s;

    ft_init(&s, n * chunk + 8 * n, FT_DEADLINE_NS, &params);
    for (i = 0; i < n; ++i) {
        ft_put_chunk(&s, i, chunk);
        ft_put_seq(&s, i, n, chunk);
        gda_ft_ep_ring(&s.ep);
        if (i == 8) {
            /* B's primary port dies: A's primary path to B is gone */
            GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
            t_down = soft_now_sec();
        }
    }

    for (i = 0; i < 2 * n; ++i) {
        k      = (i & 1) ? (FT_SEQ_USER + i / 2) : (i / 2);
        status = ft_wait_one(&s, k, 5);
        if (status == GDA_FT_DEV_PATH_SWITCHED) {
            if (!switched++) {
                t_first_backup = soft_now_sec();
            }
        } else if (status != GDA_FT_DEV_OK) {
            GDA_FT_FAIL("op %u: status %s", k, gda_ft_dev_status_str(status));
        }
    }

    printf("interruption: %.1f ms (deadline 50 ms, HW window %.0f ms); "
           "%u replayed\n", (t_first_backup - t_down) * 1e3,
           8 * 4.096e-6 * (1 << 12) * 1e3, s.ep.counters.replays);
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, n * chunk);
    memcpy(&last, s.dst + n * chunk, 8);
    GDA_FT_ASSERT_EQ(last, n - 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.switches, 1);
    GDA_FT_ASSERT(s.ep.counters.replays >= 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, switched);
    GDA_FT_ASSERT_EQ(s.ep.active, GDA_FT_PATH_BACKUP);
    GDA_FT_ASSERT_EQ(s.ep.state, GDA_FT_EP_FAILED_OVER);
    /* detected by the deadline, before the hardware gave up (no error
     * completion came first) */
    GDA_FT_ASSERT_EQ(s.error_cqe_first, 0);

    /* new traffic flows on the backup */
    ft_put_chunk(&s, 0, chunk);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 0, 5), GDA_FT_DEV_OK);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, error_cqe_switches_without_deadline)
{
    soft_conn_params_t params = soft_default_params;
    gda_ft_dev_status_t status;
    ft_setup_t s;
    unsigned i;

    /* no deadline: only the retry-exceeded CQE (3 x 4 ms) can tell */
    params.timeout   = 10;
    params.retry_cnt = 2;
    ft_init(&s, 16 * 4096, 0, &params);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[0], 1, 0));
    for (i = 0; i < 16; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    for (i = 0; i < 16; ++i) {
        status = ft_wait_one(&s, i, 5);
        GDA_FT_ASSERT_EQ(status, GDA_FT_DEV_PATH_SWITCHED);
    }
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, s.len);
    GDA_FT_ASSERT_EQ(s.ep.counters.switches, 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 16);
    GDA_FT_ASSERT_EQ(s.log[0].syndrome,
                     GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, lost_atomic_is_in_doubt_never_twice)
{
    soft_conn_params_t params = ft_slow_hw_params();
    gda_ft_soft_fault_t fault = {0};
    uint64_t operand[4] = {7, 0, 0, 0};
    uint64_t *counter;
    ft_setup_t s;

    ft_init(&s, 4096, FT_DEADLINE_NS, &params);
    counter    = (uint64_t*)s.dst;
    counter[0] = 1000;

    /* The fetch-add lands on B but its response is lost */
    fault.ack_drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(s.dev[2], 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_ep_atomic(&s.ep, GDA_FT_ATOMIC_FADD64, 8, operand,
                                      (uintptr_t)s.src, s.lkey,
                                      (uintptr_t)counter, s.rkey, 1),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 1, 5), GDA_FT_DEV_IN_DOUBT);
    GDA_FT_ASSERT_EQ(s.ep.counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 0);

    /* A later atomic goes over the backup; the lost one was not repeated */
    operand[0] = 100;
    GDA_FT_ASSERT_EQ(gda_ft_ep_atomic(&s.ep, GDA_FT_ATOMIC_FADD64, 8, operand,
                                      (uintptr_t)s.src, s.lkey,
                                      (uintptr_t)counter, s.rkey, 2),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 2, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(be64toh(((uint64_t*)s.src)[0]), 1007);
    usleep(100000);   /* the primary keeps retrying: still applied once */
    GDA_FT_ASSERT_EQ(counter[0], 1107);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, both_paths_down_fail_in_bounded_time)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t deadline_ns      = FT_DEADLINE_NS * chan_world_time_scale();
    double start, elapsed;
    ft_setup_t s;
    unsigned i;

    /* the HCA retries for 8 x 268 ms = 2.1 s, 43 deadlines: the error must
     * come from the deadlines */
    params.timeout = 16;
    ft_init(&s, 8 * 4096, deadline_ns, &params);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[3], 1, 0));
    start = soft_now_sec();
    for (i = 0; i < 8; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 5), GDA_FT_DEV_NO_PATH);
    }
    elapsed = soft_now_sec() - start;
    printf("no path reported after %.1f ms (deadline %.0f ms)\n",
           elapsed * 1e3, deadline_ns / 1e6);
    /* two deadlines by design; the bound is the HCA's retry window (see
     * test_dev_chan.c's both_paths_down) */
    GDA_FT_ASSERT(elapsed < 2.1);
    GDA_FT_ASSERT_EQ(s.error_cqe_first, 0);
    GDA_FT_ASSERT_EQ(s.ep.state, GDA_FT_EP_NO_PATH);
    GDA_FT_ASSERT_EQ(s.ep.counters.no_path, 8);
    GDA_FT_ASSERT_EQ(gda_ft_ep_put(&s.ep, (uintptr_t)s.src, s.lkey, 8,
                                   (uintptr_t)s.dst, s.rkey, 9),
                     GDA_FT_DEV_NO_PATH);
    ft_fini(&s);
}

/* Host half of failback: both ends of the primary reset with fresh PSNs */
static void ft_rearm_primary(ft_setup_t *s)
{
    soft_conn_params_t params = ft_slow_hw_params();

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(s->a[0].qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(s->b[0].qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    /* What the old QP completed before its reset (the port came back while
     * it retried) must not be taken for the new ring's: drain it first */
    ft_progress(s);
    s->a[0].dbrec[0] = s->a[0].dbrec[1] = 0;
    gda_ft_dev_sq_init(&s->ep.sq[0], s->a[0].sq_buf, SOFT_TEST_SQ_SIZE,
                       s->a[0].qp->qpn, s->a[0].dbrec, s->a[0].qp->uar,
                       s->a[0].qp->wake_fd, s->a[0].qp->wake_armed,
                       s->dev[0]->attr.max_inline);
    soft_ep_pair_connect(&s->a[0], &s->b[0], &params);
}

GDA_FT_TEST(dev_ep_failover, failback_returns_traffic_to_primary)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t tx_primary, tx_backup;
    ft_setup_t s;
    unsigned i;

    ft_init(&s, 16 * 4096, FT_DEADLINE_NS, &params);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    ft_put_chunk(&s, 0, 4096);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 0, 5), GDA_FT_DEV_PATH_SWITCHED);

    /* the port returns; the primary QPs are in ERR or stale: re-arm */
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 1));
    ft_rearm_primary(&s);
    gda_ft_ep_failback(&s.ep);
    GDA_FT_ASSERT_EQ(s.ep.active, GDA_FT_PATH_PRIMARY);
    GDA_FT_ASSERT_EQ(s.ep.counters.failbacks, 1);

    tx_primary = soft_port_stats(s.dev[0], 1).tx_pkts;
    tx_backup  = soft_port_stats(s.dev[1], 1).tx_pkts;
    for (i = 1; i < 16; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    for (i = 1; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 5), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, s.len);
    GDA_FT_ASSERT(soft_port_stats(s.dev[0], 1).tx_pkts >= tx_primary + 15);
    GDA_FT_ASSERT_EQ(soft_port_stats(s.dev[1], 1).tx_pkts, tx_backup);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, operation_error_fails_alone)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint32_t bad_rkey[2];
    ft_setup_t s;
    unsigned i;

    /* A bad rkey is the operation's fault: it fails with ERROR and is not
     * replayed (the backup would refuse it too); what follows it moves to
     * the backup, since the primary QP is in ERR now */
    ft_init(&s, 8 * 4096, FT_DEADLINE_NS, &params);
    bad_rkey[0] = s.rkey[0] ^ 0x100;
    bad_rkey[1] = s.rkey[1] ^ 0x100;
    ft_put_chunk(&s, 0, 4096);
    GDA_FT_ASSERT_EQ(gda_ft_ep_put(&s.ep, (uintptr_t)s.src, s.lkey, 4096,
                                   (uintptr_t)s.dst + 4096, bad_rkey, 1),
                     GDA_FT_DEV_OK);
    for (i = 2; i < 8; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 0, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 1, 5), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(s.log[1].syndrome, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
    for (i = 2; i < 8; ++i) {
        GDA_FT_ASSERT_NE(ft_wait_one(&s, i, 5), GDA_FT_DEV_ERROR);
    }
    GDA_FT_ASSERT_EQ(s.ep.counters.op_errors, 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.switches, 1);
    GDA_FT_ASSERT_MEM_EQ(s.dst + 2 * 4096, s.src + 2 * 4096, 6 * 4096);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, strict_mode_replays_after_fence)
{
    soft_conn_params_t params = ft_slow_hw_params();
    ft_setup_t s;
    unsigned i;

    ft_init(&s, 8 * 4096, FT_DEADLINE_NS, &params);
    s.ep.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    for (i = 0; i < 8; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);

    /* the deadline switches, but nothing moves before the fence */
    while (s.ep.replay_pending == 0) {
        ft_progress(&s);
        usleep(100);
    }
    GDA_FT_ASSERT_EQ(s.ep.active, GDA_FT_PATH_BACKUP);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 0);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(s.a[0].qp, GDA_FT_HCA_QP_ERR, NULL));
    gda_ft_ep_replay_pending(&s.ep);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 8);
    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 5), GDA_FT_DEV_PATH_SWITCHED);
    }
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, s.len);
    ft_fini(&s);
}

/* Deferred switch: waits until the deadline moved new posts to the backup */
static void ft_wait_deferred_switch(ft_setup_t *s)
{
    double deadline = soft_now_sec() + 5;

    while (s->ep.replay_pending == 0) {
        ft_progress(s);
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(100);
    }
    GDA_FT_ASSERT_EQ(s->ep.active, GDA_FT_PATH_BACKUP);
    GDA_FT_ASSERT_EQ(s->ep.counters.replays, 0);
}

/*
 * Both fences of a resolution, as the two guardians do them: A's end of the
 * failed path, then B's, whose QP then reports the PSN it expected next
 */
static uint32_t ft_fence_both(ft_setup_t *s, unsigned path)
{
    gda_ft_hca_qp_query_attr_t attr;

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(s->a[path].qp, GDA_FT_HCA_QP_ERR,
                                          NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(s->b[path].qp, GDA_FT_HCA_QP_ERR,
                                          NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(s->b[path].qp, &attr));
    GDA_FT_ASSERT_EQ(attr.state, GDA_FT_HCA_QP_ERR);
    return attr.rq_psn;
}

/* A fetch-add, a posted add and a put, users 1, 2, 3 */
static void ft_post_atomics_and_put(ft_setup_t *s, uint64_t *counter)
{
    uint64_t operand[4] = {7, 0, 0, 0};

    GDA_FT_ASSERT_EQ(gda_ft_ep_atomic(&s->ep, GDA_FT_ATOMIC_FADD64, 8,
                                      operand, (uintptr_t)s->src, s->lkey,
                                      (uintptr_t)counter, s->rkey, 1),
                     GDA_FT_DEV_OK);
    operand[0] = 100;
    GDA_FT_ASSERT_EQ(gda_ft_ep_atomic(&s->ep, GDA_FT_ATOMIC_FADD64 |
                                      GDA_FT_ATOMIC_F_POSTED, 8, operand,
                                      (uintptr_t)s->src + 8, s->lkey,
                                      (uintptr_t)counter, s->rkey, 2),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_ep_put(&s->ep, (uintptr_t)s->src + 4096, s->lkey,
                                   3 * 4096, (uintptr_t)s->dst + 4096,
                                   s->rkey, 3),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s->ep);
}

GDA_FT_TEST(dev_ep_failover, resolution_replays_what_the_peer_never_saw)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t *counter;
    uint32_t epsn;
    ft_setup_t s;

    ft_init(&s, 4 * 4096, FT_DEADLINE_NS, &params);
    s.ep.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    counter    = (uint64_t*)s.dst;
    counter[0] = 1000;

    /* the PSNs move on the primary first */
    GDA_FT_ASSERT_EQ(gda_ft_ep_nop(&s.ep, 0), GDA_FT_DEV_OK);
    ft_put_chunk(&s, 3, 4096);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 0, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 3, 5), GDA_FT_DEV_OK);

    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    ft_post_atomics_and_put(&s, counter);
    ft_wait_deferred_switch(&s);

    /* B saw none of them: all three go again, the atomics too */
    epsn = ft_fence_both(&s, GDA_FT_PATH_PRIMARY);
    GDA_FT_ASSERT_EQ(epsn, s.log[0].psn + 1);  /* the NOP takes no PSN */
    gda_ft_ep_replay_resolved(&s.ep, GDA_FT_PATH_PRIMARY, epsn);
    GDA_FT_ASSERT_EQ(s.ep.replay_pending, 0);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 3);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 1, 5), GDA_FT_DEV_PATH_SWITCHED);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 2, 5), GDA_FT_DEV_PATH_SWITCHED);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 3, 5), GDA_FT_DEV_PATH_SWITCHED);
    GDA_FT_ASSERT_EQ(be64toh(((uint64_t*)s.src)[0]), 1000);
    GDA_FT_ASSERT_EQ(counter[0], 1107);
    GDA_FT_ASSERT_MEM_EQ(s.dst + 4096, s.src + 4096, 3 * 4096);
    GDA_FT_ASSERT_EQ(s.ep.counters.in_doubt, 0);
    GDA_FT_ASSERT_EQ(s.ep.counters.confirmed, 0);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, resolution_confirms_what_the_peer_executed)
{
    soft_conn_params_t params = ft_slow_hw_params();
    gda_ft_soft_fault_t fault = {0};
    uint64_t *counter;
    ft_setup_t s;

    ft_init(&s, 4 * 4096, FT_DEADLINE_NS, &params);
    s.ep.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    counter    = (uint64_t*)s.dst;
    counter[0] = 1000;

    /* B executes all three, every answer to A is lost */
    fault.ack_drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(s.dev[2], 1, &fault));
    ft_post_atomics_and_put(&s, counter);
    ft_wait_deferred_switch(&s);

    gda_ft_ep_replay_resolved(&s.ep, GDA_FT_PATH_PRIMARY,
                              ft_fence_both(&s, GDA_FT_PATH_PRIMARY));
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 0);
    /* the fetch-add's old value is lost: in doubt, not applied again; the
     * posted add and the put are complete */
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 1, 5), GDA_FT_DEV_IN_DOUBT);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 2, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 3, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(s.ep.counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.confirmed, 2);
    GDA_FT_ASSERT_EQ(counter[0], 1107);
    GDA_FT_ASSERT_MEM_EQ(s.dst + 4096, s.src + 4096, 3 * 4096);
    ft_fini(&s);
}

/*
 * A replay settled late (the peer's word never came) queues behind what the
 * backup already owed: it must not restart the backup's clock. Found as a
 * flaky bound in ucp_failover.both_ports_down_error_in_bounded_time: the
 * settle won the race against the backup's deadline by microseconds, and
 * the endpoint failed a whole deadline later.
 */
GDA_FT_TEST(dev_ep_failover, late_replay_keeps_the_backups_clock)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t deadline_ns      = FT_DEADLINE_NS * chan_world_time_scale();
    double owed_from;
    ft_setup_t s;
    unsigned i;

    params.timeout = 16;   /* the HCA reports nothing for 2.1 s */
    ft_init(&s, 8 * 4096, deadline_ns, &params);
    s.ep.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[3], 1, 0));
    for (i = 0; i < 4; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);
    ft_wait_deferred_switch(&s);

    /* new posts go to the (dead) backup and wait there */
    owed_from = soft_now_sec();
    for (i = 4; i < 8; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    gda_ft_ep_ring(&s.ep);

    /* no deadline check until the settle, which comes 0.6 deadlines later,
     * and the next one 0.6 deadlines after it */
    usleep(deadline_ns * 6 / 10000);
    gda_ft_ep_replay_pending(&s.ep);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 4);
    usleep(deadline_ns * 6 / 10000);
    GDA_FT_ASSERT(soft_now_sec() - owed_from > deadline_ns / 1e9);
    ft_progress(&s);
    GDA_FT_ASSERT_EQ(s.ep.state, GDA_FT_EP_NO_PATH);
    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 1), GDA_FT_DEV_NO_PATH);
    }
    ft_fini(&s);
}

/*
 * The guardian writes to the peer over the surviving path before the
 * deferred replay, so the backup ring holds its newer probes ahead of the
 * older operations replayed behind them: a completion is matched by ring
 * position, and the probe's does not complete the replayed get early
 */
GDA_FT_TEST(dev_ep_failover, replay_behind_probes_completes_in_ring_order)
{
    soft_conn_params_t params = ft_slow_hw_params();
    const size_t half         = 64 * 1024;
    uint64_t word             = 0x77;
    gda_ft_dev_op_t op;
    ft_setup_t s;
    unsigned i;

    ft_init(&s, 2 * half, FT_DEADLINE_NS, &params);
    s.ep.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    soft_fill(s.dst + half, half, 77);      /* what the get reads */
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));

    /* puts of the first half, a get of the second half into the source */
    for (i = 0; i < 4; ++i) {
        ft_put_chunk(&s, i, 4096);
    }
    GDA_FT_ASSERT_EQ(gda_ft_ep_get(&s.ep, (uintptr_t)s.src + half, s.lkey,
                                   half, (uintptr_t)s.dst + half, s.rkey, 4),
                     GDA_FT_DEV_OK);
    gda_ft_ep_ring(&s.ep);
    ft_wait_deferred_switch(&s);

    /* the guardian's question goes out first, then the replay */
    GDA_FT_ASSERT_EQ(gda_ft_ep_probe(&s.ep, GDA_FT_PATH_BACKUP, &word,
                                     sizeof(word), (uintptr_t)s.dst + 2 * half
                                     - sizeof(word), s.rkey, 9),
                     GDA_FT_DEV_OK);
    gda_ft_ep_replay_resolved(&s.ep, GDA_FT_PATH_PRIMARY,
                              ft_fence_both(&s, GDA_FT_PATH_PRIMARY));
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 5);

    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(ft_wait_one(&s, i, 5), GDA_FT_DEV_PATH_SWITCHED);
    }
    /* popped only once its data is there */
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 4, 5), GDA_FT_DEV_PATH_SWITCHED);
    GDA_FT_ASSERT_MEM_EQ(s.src + half, s.dst + half,
                         half - sizeof(word));
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 9, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT(!gda_ft_ep_pop(&s.ep, &op));
    GDA_FT_ASSERT_MEM_EQ(s.dst, s.src, 4 * 4096);
    ft_fini(&s);
}

GDA_FT_TEST(dev_ep_failover, probe_tests_an_inactive_path)
{
    soft_conn_params_t params = ft_slow_hw_params();
    uint64_t word = 0x1234;
    ft_setup_t s;

    ft_init(&s, 4096, FT_DEADLINE_NS, &params);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 0));
    ft_put_chunk(&s, 0, 4096);
    gda_ft_ep_ring(&s.ep);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 0, 5), GDA_FT_DEV_PATH_SWITCHED);

    /* the primary still down: its probe fails, traffic stays on backup */
    GDA_FT_ASSERT_EQ(gda_ft_ep_probe(&s.ep, GDA_FT_PATH_PRIMARY, &word,
                                     sizeof(word), (uintptr_t)s.dst, s.rkey,
                                     7), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 7, 5), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(s.ep.active, GDA_FT_PATH_BACKUP);
    GDA_FT_ASSERT_EQ(s.ep.counters.switches, 1);
    GDA_FT_ASSERT_EQ(s.ep.counters.replays, 1);

    /* port back, QPs re-armed: the probe lands over the primary */
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(s.dev[2], 1, 1));
    ft_rearm_primary(&s);
    GDA_FT_ASSERT_EQ(gda_ft_ep_probe(&s.ep, GDA_FT_PATH_PRIMARY, &word,
                                     sizeof(word), (uintptr_t)s.dst, s.rkey,
                                     8), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(ft_wait_one(&s, 8, 5), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(*(uint64_t*)s.dst, 0x1234);
    GDA_FT_ASSERT_EQ(s.ep.active, GDA_FT_PATH_BACKUP);
    ft_fini(&s);
}
