/*
 * Failback through the UCT API: back to the primary once its port
 * returns, damped when the path flaps, the back-off's cap.
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
#include <dlfcn.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>


GDA_FT_TEST(uct_failback, failback_after_port_returns)
{
    test_counters_t a, b;
    double start, end;
    unsigned i = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=50ms", NULL);
    test_uct_setup(&t);
    test_put_word(&t, i, 1000 + i);
    ++i;

    /* the primary port of A dies: one switch, the old QP fenced */
    test_port_set(&t, "tsoft0", 0);
    test_put_word(&t, i, 1000 + i);
    ++i;
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    /* the old QP is fenced (a host channel's guardian does it after its
     * grace period, while the channel already posts on the backup) */
    TEST_WAIT(&t, (t.query_counters(t.node[NODE_A].ep, &a) == UCS_OK) &&
                  (a.fences >= 1), 1000);

    /* while the port is down nothing fails back */
    for (start = soft_now_sec(); soft_now_sec() < start + 0.3;) {
        test_progress(&t);
        usleep(1000);
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.failbacks, 0);

    /* the port returns: the guardians re-arm, probe, wait, fail back */
    test_port_set(&t, "tsoft0", 1);
    start = soft_now_sec();
    do {
        test_put_word(&t, i, 1000 + i);
        ++i;
        for (end = soft_now_sec() + 0.01; soft_now_sec() < end;) {
            test_progress(&t);
        }
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
    } while (a.failbacks == 0);
    printf("failback %.0f ms after the port returned (%u puts)\n",
           (soft_now_sec() - start) * 1e3, i);

    /* traffic is on the primary again and keeps flowing */
    for (end = i + 20; i < end; ++i) {
        test_put_word(&t, i, 1000 + i);
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 1);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    /* A's puts went on A's host channel, whose QPs B does not post on:
     * B, which posted nothing, had nothing to leave */
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_B].ep, &b));
    GDA_FT_ASSERT_EQ(b.switches, b.failbacks);
    GDA_FT_ASSERT_EQ(b.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_B].errors, 0);
    test_uct_cleanup(&t);
}


/* A's primary fails and comes back, then flaps right after failing back;
 * *first and *second get how long each failback took from the switch */
/* A's host channel is back on the primary and active: a port lost before
 * it is would find the channel on the backup, with nothing to switch */
static void test_wait_host_channel_primary(test_uct_t *t)
{
    gda_ft_chan_query_t q;
    double start = soft_now_sec();

    for (;;) {
        test_host_channel_query(t, NODE_A, &q);
        if ((q.state == GDA_FT_CHAN_ACTIVE) &&
            (q.active == GDA_FT_CHAN_PRIMARY)) {
            return;
        }
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
        test_progress(t);
    }
}

static void test_fail_back_twice(test_uct_t *t, test_counters_t *a,
                                 double *first, double *second)
{
    unsigned slot = 0;

    test_port_set(t, "tsoft0", 0);
    test_put_until(t, &slot, a, &a->switches, 1);
    test_port_set(t, "tsoft0", 1);
    *first = test_put_until(t, &slot, a, &a->failbacks, 1);
    test_wait_host_channel_primary(t);
    test_port_set(t, "tsoft0", 0);
    test_put_until(t, &slot, a, &a->switches, 2);
    test_port_set(t, "tsoft0", 1);
    *second = test_put_until(t, &slot, a, &a->failbacks, 2);
}

GDA_FT_TEST(uct_failback, failback_is_damped_when_the_path_flaps)
{
    test_counters_t a = {0};
    double first, second;
    test_uct_t t;

    /* back-off 200 ms and recovery window 100 ms: a failback comes at
     * least 300 ms after its failover; a path failing again within ten
     * recovery windows of a failback waits twice as long (>= 500 ms).
     * Timed from when the test sees the switch: a few ms later than it,
     * tens on a loaded machine. Without the damping: 100 and 300 ms. */
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=200ms", NULL);
    test_uct_setup(&t);

    test_fail_back_twice(&t, &a, &first, &second);

    printf("failback after %.0f ms, after the flap %.0f ms\n", first * 1e3,
           second * 1e3);
    GDA_FT_ASSERT(first >= 0.3 - 0.05);
    GDA_FT_ASSERT(second >= 0.5 - 0.05);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}


/*
 * REARM_BACKOFF_MAX caps the doubled back-off: with 200 ms doubling to
 * 400 ms after the flap but a cap of 250 ms, the second failback comes
 * after the capped wait and the recovery window (>= 350 ms), and before
 * the uncapped one would allow (500 ms).
 */
GDA_FT_TEST(uct_failback, rearm_backoff_max_caps_the_damping)
{
    test_counters_t a = {0};
    double first, second;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=200ms",
                 "UCX_GDA_FT_REARM_BACKOFF_MAX=250ms", NULL);
    test_uct_setup(&t);

    test_fail_back_twice(&t, &a, &first, &second);

    printf("failback after %.0f ms, after the flap %.0f ms (cap 250 ms)\n",
           first * 1e3, second * 1e3);
    GDA_FT_ASSERT(first >= 0.3 - 0.05);
    GDA_FT_ASSERT(second >= 0.35 - 0.02);
    GDA_FT_ASSERT(second < 0.5 - 0.02);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}

/*
 * A path whose ports are up but which loses its answers is never failed
 * back to: B's primary port keeps losing its answers, so every probe of
 * A's re-armed primary fails, and the probe's failure is the guardian's
 * business, not the user's: the next flush succeeds. A channel that failed
 * back without a probe would leave the path again at every deadline.
 */
GDA_FT_TEST(uct_failback, no_failback_onto_a_path_that_loses_answers)
{
    test_counters_t a;
    double end;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=100ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=50ms",
                 "UCX_GDA_FT_REARM_BACKOFF=20ms",
                 "UCX_GDA_FT_REARM_BACKOFF_MAX=40ms", NULL);
    test_uct_setup(&t);
    test_put_word(&t, 0, 1000);

    /* A's operations reach B, B's answers never reach A: A leaves the
     * primary, and B confirms what it executed over the backup */
    test_port_lose_answers(&t, "tsoft2");
    test_put_word(&t, 1, 1001);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);

    /* the guardian re-arms the primary and probes it, again and again:
     * each probe reaches B and its answer is lost */
    for (end = soft_now_sec() + 1.5; soft_now_sec() < end;) {
        test_progress(&t);
        usleep(100);
    }

    /* no failback came, and nothing the user posted failed */
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 0);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    test_put_word(&t, 2, 1002);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}

/*
 * A re-arm that the peer leaves unanswered (its process makes no progress,
 * its ports are up) backs off, doubling from REARM_BACKOFF: 100 ms, then
 * 200, 400. Each try resets the channel's QP and asks the peer for up to
 * two resolve windows (240 ms here); it used to be tried again a recovery
 * window after the last one gave up, 6 times in 1.5 s.
 */
GDA_FT_TEST(uct_failback, unanswered_rearm_backs_off)
{
    gda_ft_chan_query_t before, after;
    test_counters_t a;
    unsigned slot = 0;
    test_uct_t t;
    double end;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=100ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=20ms",
                 "UCX_GDA_FT_REARM_BACKOFF=100ms", NULL);
    test_uct_setup(&t);
    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);
    test_host_channel_query(&t, NODE_A, &before);
    GDA_FT_ASSERT_EQ(before.poster.switches, 1);

    /* the port returns; from now on only A makes progress (for a fixed
     * time: a slower machine can only try less often) */
    test_port_set(&t, "tsoft0", 1);
    for (end = soft_now_sec() + 1.5; soft_now_sec() < end;) {
        uct_worker_progress(t.node[NODE_A].worker);
    }
    test_host_channel_query(&t, NODE_A, &after);
    printf("re-arms begun in 1.5 s with an unanswering peer: %u\n",
           after.host.rearm_tries - before.host.rearm_tries);
    GDA_FT_ASSERT(after.host.rearm_tries > before.host.rearm_tries);
    GDA_FT_ASSERT(after.host.rearm_tries - before.host.rearm_tries <= 4);
    GDA_FT_ASSERT_EQ(after.host.rearms, before.host.rearms);
    test_uct_cleanup(&t);
}
