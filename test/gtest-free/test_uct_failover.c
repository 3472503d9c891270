/*
 * Failover through the UCT API: a port that dies mid-traffic, atomics lost
 * with it, both paths gone, posts held while a switch settles, the strict
 * fence, the guardian's settings.
 */
#include "uct_harness.h"
#include "chan_harness.h"   /* chan_world_time_scale() */
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <uct/ib/gda_ft/uct_gda_ft_perf.h>
#include <uct/ib/gda_ft/uct_gda_ft_oob_stats.h>
#include <ucp/core/ucp_types.h>   /* UCX_ADDRESS_VERSION=v2 packing */

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <alloca.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>


/* ---- failover through the UCT API ---------------------------------------- */


GDA_FT_TEST(uct_failover, primary_down_fails_over_without_loss)
{
    const unsigned n = 400;
    test_counters_t counters, iface_counters;
    test_comp_t comp;
    uint64_t value;
    uct_iov_t iov;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 NULL);
    test_uct_setup(&t);

    /* warm up the primary path */
    value = 1;
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    /* the primary port of A dies; puts keep flowing */
    test_port_set(&t, "tsoft0", 0);
    for (i = 0; i < n; ++i) {
        value = 0x1000 + i;
        GDA_FT_ASSERT_OK(test_put_short(&t, &value, 8, 8 * i));
    }
    soft_fill(t.node[NODE_A].buf + 65536, 100000, 77);
    iov.buffer = t.node[NODE_A].buf + 65536;
    iov.length = 100000;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 1);
    do {
        status = uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                  raddr_b(&t, 65536), rkey_b(&t),
                                  &comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            test_progress(&t);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(comp.calls, 1);
    GDA_FT_ASSERT_OK(comp.super.status);

    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 0x1000 + i);
    }
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf + 65536,
                         t.node[NODE_A].buf + 65536, 100000);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.replays >= 1);
    GDA_FT_ASSERT_EQ(counters.no_path, 0);
    GDA_FT_ASSERT_OK(t.query_iface_counters(t.node[NODE_A].iface,
                                            &iface_counters));
    GDA_FT_ASSERT_EQ(iface_counters.switches, 1);
    GDA_FT_ASSERT_EQ(iface_counters.replays, counters.replays);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    printf("switches %u, replays %u\n", counters.switches, counters.replays);
    test_uct_cleanup(&t);
}

/* An atomic posted into a dead primary: the peer never saw it */
static void test_atomic_into_dead_primary(test_uct_t *t, uint64_t *result,
                                          test_comp_t *comp)
{
    uint64_t value = 1000;

    GDA_FT_ASSERT_OK(uct_ep_put_short(t->node[NODE_A].ep, &value, 8,
                                      raddr_b(t, 0), rkey_b(t)));
    GDA_FT_ASSERT_OK(test_flush(t));
    test_assert_no_switch(t, "warm-up");

    test_port_set(t, "tsoft0", 0);
    test_comp_init(comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t->node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 1, result,
                                           raddr_b(t, 0), rkey_b(t),
                                           &comp->super),
                     UCS_INPROGRESS);
    TEST_WAIT(t, comp->calls == 1, 5000);
}

/*
 * `gda_ft_softctl counters` asks the transport's own control socket
 * (UCX_GDA_FT_CTL_DIR), not the soft HCA's, which is off here: a line per
 * endpoint of the process, A's on the backup after its switch. The socket
 * goes when the last interface closes.
 */
GDA_FT_TEST_TIMEOUT(uct_failover, counters_through_the_transport_socket, 60)
{
    char dir[] = "/tmp/gda_ft_ctl.XXXXXX", env[128], cmd[1024];
    char out[8192], sock[256], target[32];
    test_counters_t counters = {0};
    unsigned slot = 0, i;
    struct stat st;
    test_uct_t t;

    GDA_FT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(env, sizeof(env), "UCX_GDA_FT_CTL_DIR=%s", dir);
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", env, NULL);
    test_uct_setup(&t);
    snprintf(sock, sizeof(sock), "%s/gda_ft-uct.%d.sock", dir, (int)getpid());
    GDA_FT_ASSERT_EQ(stat(sock, &st), 0);

    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &counters, &counters.switches, 1);
    snprintf(target, sizeof(target), "-p %d", (int)getpid());

    /* listed, by its transport socket alone */
    snprintf(cmd, sizeof(cmd), "%s/src/tools/gda_ft_softctl -d %s list 2>&1",
             gda_ft_test_builddir(), dir);
    GDA_FT_ASSERT_EQ(gda_ft_test_shell(cmd, out, sizeof(out)), 0);
    GDA_FT_ASSERT(strstr(out, sock) != NULL);

    /* by pid, and every process with a socket in the directory (-a): a
     * process with no soft HCA socket is found by its transport socket */
    for (i = 0; i < 2; ++i) {
        snprintf(cmd, sizeof(cmd), "%s/src/tools/gda_ft_softctl -d %s %s "
                 "counters 2>&1", gda_ft_test_builddir(), dir,
                 (i == 0) ? target : "-a");
        GDA_FT_ASSERT_EQ(gda_ft_test_shell(cmd, out, sizeof(out)), 0);
        printf("%s", out);
        GDA_FT_ASSERT(strstr(out, "tsoft0 ep 0x") != NULL);
        GDA_FT_ASSERT(strstr(out, "tsoft2 ep 0x") != NULL);
        GDA_FT_ASSERT(strstr(out, ": path backup, switches 1 ") != NULL);
    }

    test_uct_cleanup(&t);
    GDA_FT_ASSERT(stat(sock, &st) != 0);
    rmdir(dir);
}

GDA_FT_TEST(uct_failover, atomic_lost_with_primary_is_replayed_once)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_atomic_into_dead_primary(&t, &result, &comp);

    /* B said it never executed it: it went over the backup, once */
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_EQ(result, 1000);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1001);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 0);
    GDA_FT_ASSERT(counters.replays >= 1);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_failover, atomic_lost_without_resolution_completes_in_doubt)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", "UCX_GDA_FT_RESOLVE=n",
                 NULL);
    test_uct_setup(&t);
    test_atomic_into_dead_primary(&t, &result, &comp);

    /* never retried: an error, not a second application */
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(counters.switches, 1);

    /* the endpoint goes on over the backup path */
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t.node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 5, &result,
                                           raddr_b(&t, 8), rkey_b(&t),
                                           &comp.super),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, comp.calls == 1, 5000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1000);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_failover, atomic_executed_with_lost_reply_is_in_doubt)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0, value = 1000;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    /* B executes both atomics; its answers never reach A */
    test_port_lose_answers(&t, "tsoft2");
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t.node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 1, &result,
                                           raddr_b(&t, 0), rkey_b(&t),
                                           &comp.super),
                     UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(uct_ep_atomic64_post(t.node[NODE_A].ep,
                                          UCT_ATOMIC_OP_ADD, 10,
                                          raddr_b(&t, 0), rkey_b(&t)));
    TEST_WAIT(&t, comp.calls == 1, 5000);

    /* the old value is lost: the fetch is in doubt, never applied twice;
     * the posted add is known applied, so the flush succeeds */
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1011);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(counters.confirmed, 1);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_failover, both_paths_down_reports_ep_error)
{
    double deadline = 0.2 * chan_world_time_scale();
    test_counters_t counters;
    test_comp_t comp;
    uint64_t value = 5;
    char env[64];
    uct_iov_t iov;
    test_uct_t t;
    double start, elapsed;

    /* the HCA retries for 8 x 1 s: the error must come from the deadlines */
    snprintf(env, sizeof(env), "UCX_GDA_FT_DEADLINE=%.0fms", deadline * 1e3);
    test_uct_env(&t, 4, env, "UCX_GDA_FT_TIMEOUT=1s", NULL);
    test_uct_setup(&t);

    test_port_set(&t, "tsoft0", 0);
    test_port_set(&t, "tsoft1", 0);
    start = soft_now_sec();

    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    iov.buffer = t.node[NODE_A].buf;
    iov.length = 4096;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0), rkey_b(&t),
                                      &comp.super),
                     UCS_INPROGRESS);

    /* The error comes from the deadlines (two of them, 0.4 s unscaled),
     * not from the hardware's 8 s retry window. The bound is half that
     * window rather than a multiple of the deadline: a loaded CI machine
     * under ASan once took 3 deadlines, which is no defect. */
    TEST_WAIT(&t, (comp.calls == 1) && (t.node[NODE_A].errors == 1), 4000);
    elapsed = soft_now_sec() - start;
    GDA_FT_ASSERT(elapsed < 4.0);
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_ENDPOINT_TIMEOUT);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_ENDPOINT_TIMEOUT);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.no_path, 2);

    /* no more operations on it, and the error is reported once */
    GDA_FT_ASSERT_EQ(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)),
                     UCS_ERR_ENDPOINT_TIMEOUT);
    test_progress(&t);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 1);
    printf("endpoint error after %.0f ms (deadline %.0f ms)\n",
           elapsed * 1e3, deadline * 1e3);
    test_uct_cleanup(&t);
}

/*
 * The peer is gone (both its ports down) while ours stay up: after the
 * endpoint's error, its host channel's guardian tries no re-arm. A re-arm
 * needs the peer's guardian, which the endpoint can no longer reach; 255
 * such endpoints kept re-arming and starved the rest of the process.
 */
GDA_FT_TEST(uct_failover, failed_endpoint_rearms_nothing)
{
    double deadline = 0.1 * chan_world_time_scale();
    gda_ft_chan_query_t before, after;
    uint64_t value = 5;
    char env[64];
    test_uct_t t;
    double end;

    snprintf(env, sizeof(env), "UCX_GDA_FT_DEADLINE=%.0fms", deadline * 1e3);
    test_uct_env(&t, 4, env, "UCX_GDA_FT_TIMEOUT=1s",
                 "UCX_GDA_FT_REARM_BACKOFF=10ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=20ms", NULL);
    test_uct_setup(&t);
    test_port_set(&t, "tsoft2", 0);
    test_port_set(&t, "tsoft3", 0);

    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    TEST_WAIT(&t, t.node[NODE_A].errors == 1, 4000);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_ENDPOINT_TIMEOUT);
    test_host_channel_query(&t, NODE_A, &before);

    /* many recovery windows, each of which would begin a re-arm */
    end = soft_now_sec() + 10 * deadline;
    while (soft_now_sec() < end) {
        test_progress(&t);
    }
    test_host_channel_query(&t, NODE_A, &after);
    printf("re-arms begun: %u at the error, %u %.0f ms later\n",
           before.host.rearm_tries, after.host.rearm_tries,
           10 * deadline * 1e3);
    GDA_FT_ASSERT_EQ(after.host.rearm_tries, before.host.rearm_tries);
    test_uct_cleanup(&t);
}

/*
 * A single-NIC machine: the endpoints' channels have one path. They work,
 * and the loss of the port is the endpoint's error within a few deadlines
 * (no switch, nothing to switch to), not after the HCA's retry window.
 */
GDA_FT_TEST(uct_failover, single_device_works_without_backup)
{
    gda_ft_chan_query_t q;
    test_counters_t counters;
    uint64_t value = 99;
    test_uct_t t;
    double start;

    /* one HCA: two interfaces of its MD talk to each other; its QPs
     * retry for 8 x 1 s */
    test_uct_env(&t, 1, "UCX_GDA_FT_DEADLINE=100ms", "UCX_GDA_FT_TIMEOUT=1s",
                 NULL);
    test_node_open(&t, &t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&t, &t.node[NODE_B], "gda_ft_tsoft0", "tsoft0:1");
    test_connect(&t);

    /* no backup key in the rkey */
    GDA_FT_ASSERT_EQ(t.rkey[NODE_B].rkey >> 32, 0);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(*(uint64_t*)t.node[NODE_B].buf, 99);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 0);
    test_host_channel_query(&t, NODE_A, &q);
    GDA_FT_ASSERT_EQ(q.active, GDA_FT_CHAN_PRIMARY);

    test_port_set(&t, "tsoft0", 0);
    start = soft_now_sec();
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 8), rkey_b(&t)));
    TEST_WAIT(&t, t.node[NODE_A].errors == 1, 4000);
    printf("the endpoint failed %.0f ms after the port went down\n",
           (soft_now_sec() - start) * 1e3);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_ENDPOINT_TIMEOUT);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 0);
    GDA_FT_ASSERT_EQ(counters.no_path, 1);
    test_uct_cleanup(&t);
}




/* The settled failover of the test below: the put posted before it
 * replayed once, the one after it behind it, nothing in doubt */
static void test_settled_in_order(test_uct_t *t)
{
    test_counters_t counters;

    GDA_FT_ASSERT_OK(test_flush(t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t->node[NODE_B].buf)[0], 5);
    GDA_FT_ASSERT_EQ(((uint64_t*)(t->node[NODE_B].buf + 64))[0], 77);
    GDA_FT_ASSERT_OK(t->query_counters(t->node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.replays, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 0);
    test_uct_cleanup(t);
}

/*
 * A switch waits for the peer's word, which B's guardian gives in B's
 * progress: once the switch shows it has settled, the endpoint takes
 * posts at once, behind the replay.
 */
GDA_FT_TEST(uct_failover, settled_switch_takes_posts_behind_the_replay)
{
    test_counters_t counters = {0};
    uint64_t value = 5;
    double deadline;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_port_set(&t, "tsoft0", 0);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));

    deadline = soft_now_sec() + 10;
    while (counters.switches == 0) {
        test_progress(&t);
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(100);
    }

    value = 77;
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 64), rkey_b(&t)));
    test_settled_in_order(&t);
}

/* Retries an operation while the endpoint has no room */
#define TEST_POST(_t, _call) \
    ({ \
        ucs_status_t __status; \
        while ((__status = (_call)) == UCS_ERR_NO_RESOURCE) { \
            test_progress(_t); \
        } \
        __status; \
    })

/*
 * The pattern of MPI one-sided epochs through a failover: a put of a block,
 * a get of a word elsewhere, a get of the block back, flushed; every get
 * must read its own remote address, before and after the switch
 */
GDA_FT_TEST(uct_failover, puts_and_gets_keep_their_addresses_through_failover)
{
    const size_t block = 8193, word_off = 0, block_off = 65536;
    const uint64_t word = 0x1122334455667788ull;
    uint8_t *src, *back;
    test_unpack_arg_t arg;
    test_counters_t counters;
    uint64_t got;
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    ucs_status_t status;
    unsigned it;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    memcpy(t.node[NODE_B].buf + word_off, &word, sizeof(word));
    src  = t.node[NODE_A].buf;
    back = t.node[NODE_A].buf + 2 * block_off;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;

    for (it = 0; it < 120; ++it) {
        if (it == 40) {
            test_port_set(&t, "tsoft0", 0);
        }
        soft_fill(src, block, it);
        memset(back, 0, block);
        got = 0;
        test_comp_init(&comp, 3);

        iov.buffer = src;
        iov.length = block;
        status = TEST_POST(&t, uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                                raddr_b(&t, block_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        arg.dest   = (uint8_t*)&got;
        arg.length = sizeof(got);
        arg.calls  = 0;
        status = TEST_POST(&t, uct_ep_get_bcopy(t.node[NODE_A].ep,
                                                test_unpack_cb, &arg,
                                                sizeof(got),
                                                raddr_b(&t, word_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        /* the get of the block must see the put before it: fence */
        GDA_FT_ASSERT_OK(uct_ep_fence(t.node[NODE_A].ep, 0));
        iov.buffer = back;
        status = TEST_POST(&t, uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                                raddr_b(&t, block_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        TEST_WAIT(&t, comp.calls == 1, 10000);
        GDA_FT_ASSERT_OK(comp.super.status);
        if (got != word) {
            GDA_FT_FAIL("iteration %u: the word read 0x%lx", it,
                        (unsigned long)got);
        }
        if (memcmp(back, src, block)) {
            GDA_FT_FAIL("iteration %u: the block read back differs", it);
        }
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    printf("replays %u, confirmed %u\n", counters.replays,
           counters.confirmed);
    test_uct_cleanup(&t);
}


/*
 * Without the peer's word (RESOLVE=n) a switch still fences the abandoned
 * QP before it replays: the puts of the window land once on the backup,
 * and every word holds its last put.
 */
GDA_FT_TEST(uct_failover, replay_without_resolution_follows_the_fence)
{
    test_counters_t a = {0};
    unsigned slot = 0, i;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", "UCX_GDA_FT_RESOLVE=n",
                 NULL);
    test_uct_setup(&t);

    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.fences, 1);
    GDA_FT_ASSERT(a.replays >= 1);
    GDA_FT_ASSERT_EQ(a.confirmed, 0);   /* nobody asked the peer */
    for (i = 0; (i < slot) && (i < 512); ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i],
                         5000 + i + 512 * ((slot - 1 - i) / 512));
    }
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}


GDA_FT_TEST(uct_failover, guard_interval_must_be_finite)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    setenv("UCX_GDA_FT_GUARD_INTERVAL", "inf", 1);
    GDA_FT_ASSERT_EQ(test_open_aligned(&t, &t.node[NODE_A], 0, 0, 0),
                     UCS_ERR_INVALID_PARAM);
    setenv("UCX_GDA_FT_GUARD_INTERVAL", "50us", 1);
    GDA_FT_ASSERT_OK(test_open_aligned(&t, &t.node[NODE_A], 0, 0, 0));
    unsetenv("UCX_GDA_FT_GUARD_INTERVAL");
    test_uct_cleanup(&t);
}

/*
 * A port failure seen by one side follows to the other. A's primary port
 * goes down; A's host channel switches and asks B for its word about the
 * path (a fence). B, whose host channel was idle, then posts: without
 * A's finding its put would wait on the dead primary for a deadline of
 * its own before switching; with it, B's channel follows within an eighth
 * of one.
 */
GDA_FT_TEST(uct_failover, idle_peer_follows_the_switch_of_the_other_side)
{
    test_counters_t a, b;
    test_comp_t comp;
    unsigned slot = 0;
    uint64_t value = 0x5eed;
    double start, took;
    ucs_status_t status;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=10s", NULL);
    test_uct_setup(&t);

    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);

    /* B's put to A, and its flush */
    start = soft_now_sec();
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_B].ep, &value, 8,
                                      (uintptr_t)t.node[NODE_A].buf,
                                      t.rkey[NODE_A].rkey));
    test_comp_init(&comp, 1);
    status = uct_ep_flush(t.node[NODE_B].ep, 0, &comp.super);
    GDA_FT_ASSERT((status == UCS_OK) || (status == UCS_INPROGRESS));
    while ((status == UCS_INPROGRESS) && (comp.calls == 0)) {
        test_progress(&t);
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
    }
    took = soft_now_sec() - start;
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_B].ep, &b));
    printf("B's put completed %.1f ms after it was posted (deadline 200 "
           "ms); B's switches %u\n", took * 1e3, b.switches);
    GDA_FT_ASSERT_EQ(*(uint64_t*)t.node[NODE_A].buf, value);
    GDA_FT_ASSERT_EQ(b.switches, 1);
    GDA_FT_ASSERT(took < 0.1);
    test_uct_cleanup(&t);
}

/*
 * The guardians' questions and answers travel on the endpoints' control
 * QPs. One that fails (here A's backup one, moved to the error state) is
 * left for the other path, and re-armed with the peer once that path
 * carries the question: a switch after it has the peer's word again.
 */
GDA_FT_TEST(uct_failover, failed_control_qp_is_rearmed)
{
    typedef gda_ft_hca_qp_t *(*control_qp_func_t)(uct_ep_h, unsigned, int*);
    typedef ucs_status_t (*qp_modify_func_t)(gda_ft_hca_qp_t*, int,
                                             const gda_ft_hca_qp_attr_t*);
    typedef ucs_status_t (*qp_query_func_t)(gda_ft_hca_qp_t*,
                                            gda_ft_hca_qp_query_attr_t*);
    control_qp_func_t control_qp;
    qp_modify_func_t qp_modify;
    qp_query_func_t qp_query;
    gda_ft_hca_qp_query_attr_t qattr;
    gda_ft_chan_query_t before, after;
    test_counters_t a = {0};
    gda_ft_hca_qp_t *qp;
    unsigned slot = 0;
    test_uct_t t;
    double end;
    int usable;

    /* a QP retries for 8 x 1 s: A's primary control QP outlives the
     * outage, its writes go when the port returns */
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=100ms", "UCX_GDA_FT_TIMEOUT=1s",
                 "UCX_GDA_FT_RECOVERY_WINDOW=50ms",
                 "UCX_GDA_FT_REARM_BACKOFF=20ms", NULL);
    test_uct_setup(&t);
    control_qp = (control_qp_func_t)dlsym(t.plugin,
                                          "uct_gda_ft_ep_control_qp");
    qp_modify  = (qp_modify_func_t)dlsym(t.plugin, "gda_ft_hca_qp_modify");
    qp_query   = (qp_query_func_t)dlsym(t.plugin, "gda_ft_hca_qp_query");
    GDA_FT_ASSERT((control_qp != NULL) && (qp_modify != NULL) &&
                  (qp_query != NULL));
    /* the peer answers the first liveness probes, after one
     * retransmission of those sent before B connected (a control QP that
     * fails before any answer starts over instead: the peer may not have
     * connected its end yet) */
    end = soft_now_sec() + 1.5;
    while (soft_now_sec() < end) {
        test_progress(&t);
    }
    qp = control_qp(t.node[NODE_A].ep, 1, &usable);
    GDA_FT_ASSERT((qp != NULL) && usable);
    GDA_FT_ASSERT_OK(qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL));

    /* A's primary fails: the question about it finds the backup's control
     * QP broken, and waits for the primary */
    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);
    test_port_set(&t, "tsoft0", 1);

    /* the broken control QP answers nothing: it is taken for dead, and
     * re-armed with the peer over the primary (out of the error state,
     * which nothing else does; taken for dead and re-armed may come in
     * one progress call) */
    end = soft_now_sec() + 10;
    do {
        test_progress(&t);
        GDA_FT_ASSERT(soft_now_sec() < end);
        (void)control_qp(t.node[NODE_A].ep, 1, &usable);
        GDA_FT_ASSERT_OK(qp_query(qp, &qattr));
    } while (!usable || (qattr.state == GDA_FT_HCA_QP_ERR));
    test_put_until(&t, &slot, &a, &a.failbacks, 1);

    /* the primary fails again: its question goes on the re-armed backup
     * control QP, and the peer's word comes */
    test_host_channel_query(&t, NODE_A, &before);
    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 2);
    do {
        test_progress(&t);
        test_host_channel_query(&t, NODE_A, &after);
    } while (after.host.records == before.host.records);
    GDA_FT_ASSERT_EQ(after.host.resolved, before.host.resolved + 1);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}
