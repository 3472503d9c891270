/*
 * Active messages through the UCT API: short and bcopy sizes, a stream
 * that survives failover and failback exactly once and in order.
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

/* Every size class, inline and through bounce buffers, content checked */
GDA_FT_TEST(uct_am, am_short_and_bcopy_sizes)
{
    test_am_counters_t a, b;
    const uct_iface_attr_t *attr;
    size_t sizes[5], max_short, seg_size;
    test_am_rx_t *rx;
    uint8_t *src;
    uint64_t header;
    unsigned i, sent = 0;
    test_uct_t t;

    /* a channel WQE takes up to 16 bytes inline: longer am_short go
     * through a bounce buffer */
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    attr      = &t.node[NODE_A].iface_attr;
    max_short = attr->cap.am.max_short;
    seg_size  = attr->cap.am.max_bcopy;
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_CB_SYNC);
    GDA_FT_ASSERT(!(attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE));
    GDA_FT_ASSERT_EQ(max_short, 128);
    GDA_FT_ASSERT_EQ(seg_size, 8192);
    GDA_FT_ASSERT_EQ(attr->cap.am.max_hdr, 0);

    rx  = calloc(1, sizeof(*rx));
    src = malloc(seg_size + 8);     /* messages start at src + i, i < 8 */
    soft_fill(src, seg_size + 8, 99);
    test_am_set_handler(&t, NODE_B, test_am_cb, rx);

    /* am_short: 8-byte header + payload, inline and not */
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = 8;
    sizes[3] = 9;               /* 17 with the header: the first bounced */
    sizes[4] = max_short - 8;
    for (i = 0; i < 5; ++i) {
        header = 0x1122334455667700ull + i;
        test_am_short(&t, header, src + i, sizes[i]);
        ++sent;
        TEST_WAIT(&t, rx->count == sent, 5000);
        GDA_FT_ASSERT_EQ(rx->last_len, 8 + sizes[i]);
        GDA_FT_ASSERT_MEM_EQ(rx->last, &header, 8);
        GDA_FT_ASSERT_MEM_EQ(rx->last + 8, src + i, sizes[i]);
    }
    GDA_FT_ASSERT_EQ(uct_ep_am_short(t.node[NODE_A].ep, TEST_AM_ID, 0, src,
                                     max_short - 7),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(uct_ep_am_short(t.node[NODE_A].ep, UCT_AM_ID_MAX, 0,
                                     src, 0), UCS_ERR_INVALID_PARAM);

    /* am_bcopy */
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = 8;
    sizes[3] = max_short;
    sizes[4] = seg_size;
    for (i = 0; i < 5; ++i) {
        test_am_bcopy(&t, src + i, sizes[i]);
        ++sent;
        TEST_WAIT(&t, rx->count == sent, 5000);
        GDA_FT_ASSERT_EQ(rx->last_len, sizes[i]);
        GDA_FT_ASSERT_MEM_EQ(rx->last, src + i, sizes[i]);
    }

    /* many, both kinds mixed, far more than the receive queue holds:
     * every one arrives, in order, with its content */
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);
    for (i = 0; i < 3000; ++i) {
        test_am_stream_send(&t, i);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    TEST_WAIT(&t, rx->count == 3000, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->next, 3000);

    test_am_counters(&t, NODE_A, &a);
    test_am_counters(&t, NODE_B, &b);
    GDA_FT_ASSERT_EQ(a.sent, sent + 3000);
    GDA_FT_ASSERT_EQ(b.received, sent + 3000);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    test_assert_no_switch(&t, "active messages");
    free(src);
    free(rx);
    test_uct_cleanup(&t);
}

/* After a stream of active messages alone through a port failure: they
 * went on A's host channel, which replayed or had the peer confirm some */
static void test_am_assert_datapath(test_uct_t *t)
{
    gda_ft_chan_query_t q;

    test_host_channel_query(t, NODE_A, &q);
    GDA_FT_ASSERT_EQ(q.poster.switches, 1);
    GDA_FT_ASSERT(q.poster.replays + q.poster.confirmed >= 1);
}

/* Streams n messages; after `fault_at` of them A's primary port goes down
 * (lose_answers = 0), or B's primary port starts to lose its ACKs: B
 * receives what A then sends there, A never learns it */
static void test_am_stream_failover(test_uct_t *t, test_am_rx_t *rx,
                                    unsigned n, unsigned fault_at,
                                    int lose_answers)
{
    unsigned i;

    test_am_set_handler(t, NODE_B, test_am_stream_cb, rx);
    for (i = 0; i < n; ++i) {
        if ((i == fault_at) && lose_answers) {
            test_port_lose_answers(t, "tsoft2");
        } else if (i == fault_at) {
            test_port_set(t, "tsoft0", 0);
        }
        test_am_stream_send(t, i);
        if ((i % 16) == 0) {
            test_progress(t);
        }
    }
    GDA_FT_ASSERT_OK(test_flush(t));
    TEST_WAIT(t, rx->count >= n, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->count, n);
    GDA_FT_ASSERT_EQ(rx->next, n);
    test_am_assert_datapath(t);
}

GDA_FT_TEST(uct_am, am_stream_survives_failover_exactly_once)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 0);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.no_path, 0);
    test_am_counters(&t, NODE_B, &b);
    /* the peer said what it executed: nothing was sent twice */
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, 2000);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    printf("replays %u, confirmed %u, arrived out of order %u\n",
           counters.replays, counters.confirmed, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_am, am_stream_dedups_replays_without_resolution)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", "UCX_GDA_FT_RESOLVE=n",
                 NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 1);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.replays >= 1);
    test_am_counters(&t, NODE_B, &b);
    /* B had received what A replayed: every copy was dropped */
    GDA_FT_ASSERT_EQ(b.received, 2000);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT(b.duplicates >= 1);
    GDA_FT_ASSERT(b.duplicates <= counters.replays);
    printf("replays %u, duplicates dropped %u, arrived out of order %u\n",
           counters.replays, b.duplicates, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_am, am_stream_keeps_order_through_failback)
{
    test_am_counters_t b;
    test_counters_t a;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    unsigned i = 0, extra = 0;
    double start;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=50ms", NULL);
    test_uct_setup(&t);
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);

    for (; i < 200; ++i) {
        test_am_stream_send(&t, i);
    }
    test_port_set(&t, "tsoft0", 0);
    for (start = soft_now_sec(); soft_now_sec() < start + 0.3; ++i) {
        test_am_stream_send(&t, i);
        test_progress(&t);
    }

    /* the port returns; the stream goes on through the failback and for
     * a while after it, on the primary */
    test_port_set(&t, "tsoft0", 1);
    start = soft_now_sec();
    do {
        test_am_stream_send(&t, i++);
        test_progress(&t);
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
        if (a.failbacks > 0) {
            ++extra;
        }
    } while (extra < 500);

    GDA_FT_ASSERT_OK(test_flush(&t));
    TEST_WAIT(&t, rx->count >= i, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->count, i);
    GDA_FT_ASSERT_EQ(rx->next, i);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 1);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    test_am_counters(&t, NODE_B, &b);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, i);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_B].errors, 0);
    printf("%u messages, failback after %u, arrived out of order %u\n", i,
           i - extra, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

/* B executes what A sent on the primary, its ACKs are lost: the peer's word
 * completes those sends, none is sent twice */
GDA_FT_TEST(uct_am, am_stream_lost_acks_resolved_exactly_once)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 1);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    test_am_counters(&t, NODE_B, &b);
    printf("replays %u, confirmed %u, duplicates %u, arrived out of order "
           "%u\n", counters.replays, counters.confirmed, b.duplicates,
           b.reordered);
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.confirmed >= 1);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, 2000);
    free(rx);
    test_uct_cleanup(&t);
}
