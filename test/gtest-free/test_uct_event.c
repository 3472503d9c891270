/*
 * The interface's completion events through the UCT API: its event fd
 * wakes for a peer's active message and for the completion of our own
 * operation, arm answers UCS_ERR_BUSY while something waits for progress,
 * and the channels' guardian wakes it while an operation is outstanding.
 */
#include "uct_harness.h"

#include <uct/api/uct.h>
#include <dlfcn.h>
#include <poll.h>
#include <string.h>


/* Whether fd is readable within timeout_ms */
/* Liveness probes every 25 ms on idle control paths: they wake nobody,
 * so each of these tests sees the one event it waits for and no other */
#define TEST_EVENT_BUSY_PROBES "UCX_GDA_FT_PEER_TIMEOUT=100ms"

static int test_event_fd_ready(int fd, int timeout_ms)
{
    struct pollfd pfd;
    int ret;

    pfd.fd      = fd;
    pfd.events  = POLLIN;
    pfd.revents = 0;
    do {
        ret = poll(&pfd, 1, timeout_ms);
    } while ((ret < 0) && (errno == EINTR));
    GDA_FT_ASSERT(ret >= 0);
    return ret;
}

/* Progresses the node until arm takes; returns the event fd */
static int test_event_arm(test_uct_t *t, unsigned node, unsigned events)
{
    test_node_t *n = &t->node[node];
    double deadline = soft_now_sec() + 10.0;
    ucs_status_t status;
    int fd;

    GDA_FT_ASSERT_OK(uct_iface_event_fd_get(n->iface, &fd));
    while ((status = uct_iface_event_arm(n->iface, events)) ==
           UCS_ERR_BUSY) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        uct_worker_progress(n->worker);
    }
    GDA_FT_ASSERT_OK(status);
    return fd;
}

GDA_FT_TEST(uct_event, iface_claims_send_and_recv_events_with_an_fd)
{
    const uct_iface_attr_t *attr;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES, NULL);
    test_uct_setup(&t);
    attr = &t.node[NODE_A].iface_attr;
    GDA_FT_ASSERT(attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_SEND_COMP);
    GDA_FT_ASSERT(attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV);
    GDA_FT_ASSERT(attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);
    GDA_FT_ASSERT_OK(uct_iface_event_fd_get(t.node[NODE_A].iface, &fd));
    GDA_FT_ASSERT(fd >= 0);
    test_uct_cleanup(&t);
}

/* B sleeps armed; A's active message makes B's fd readable without any
 * progress of B's, and arm then says BUSY until B's progress takes it */
GDA_FT_TEST(uct_event, peer_am_wakes_an_armed_iface)
{
    test_am_rx_t *rx;
    uint64_t payload = 0x5a5a5a5a12345678ull;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES, NULL);
    test_uct_setup(&t);
    rx = calloc(1, sizeof(*rx));
    GDA_FT_ASSERT(rx != NULL);
    test_am_set_handler(&t, NODE_B, test_am_cb, rx);

    fd = test_event_arm(&t, NODE_B, UCT_EVENT_RECV);
    GDA_FT_ASSERT_EQ(test_event_fd_ready(fd, 50), 0);

    test_am_short(&t, 0x1122334455667788ull, &payload, sizeof(payload));
    GDA_FT_ASSERT_EQ(test_event_fd_ready(fd, 10000), 1);
    GDA_FT_ASSERT_EQ(rx->count, 0);
    GDA_FT_ASSERT_EQ(uct_iface_event_arm(t.node[NODE_B].iface,
                                         UCT_EVENT_RECV), UCS_ERR_BUSY);

    TEST_WAIT(&t, rx->count == 1, 10000);
    GDA_FT_ASSERT_EQ(rx->last_len, 8 + sizeof(payload));
    GDA_FT_ASSERT_MEM_EQ(rx->last + 8, &payload, sizeof(payload));
    free(rx);
    test_uct_cleanup(&t);
}

/* A get whose answer the peer's port holds back 200 ms: A arms while it is
 * outstanding, and its fd wakes for the read's completion within the 5 s
 * it waits (the guardian's timer is 10 s away here): one progress pass
 * then hands it out */
GDA_FT_TEST(uct_event, own_get_completion_wakes_an_armed_iface)
{
    gda_ft_soft_fault_t fault = {0};
    test_unpack_arg_t arg;
    test_comp_t comp;
    uint64_t got = 0, value = 0x0123456789abcdefull;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES, "UCX_GDA_FT_DEADLINE=600s",
                 "UCX_GDA_FT_GUARD_INTERVAL=10s", NULL);
    test_uct_setup(&t);
    memcpy(t.node[NODE_B].buf + 64, &value, sizeof(value));

    fault.delay      = 1.0;
    fault.delay_time = 0.2;
    test_port_set_fault(&t, "tsoft2", &fault);

    test_comp_init(&comp, 1);
    arg.dest   = (uint8_t*)&got;
    arg.length = sizeof(got);
    arg.calls  = 0;
    GDA_FT_ASSERT_EQ(uct_ep_get_bcopy(t.node[NODE_A].ep, test_unpack_cb,
                                      &arg, sizeof(got), raddr_b(&t, 64),
                                      rkey_b(&t), &comp.super),
                     UCS_INPROGRESS);

    fd = test_event_arm(&t, NODE_A, UCT_EVENT_SEND_COMP);
    GDA_FT_ASSERT_EQ(comp.calls, 0);
    GDA_FT_ASSERT_EQ(test_event_fd_ready(fd, 5000), 1);
    GDA_FT_ASSERT_EQ(uct_iface_event_arm(t.node[NODE_A].iface,
                                         UCT_EVENT_SEND_COMP),
                     UCS_ERR_BUSY);
    uct_worker_progress(t.node[NODE_A].worker);
    GDA_FT_ASSERT_EQ(comp.calls, 1);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_EQ(got, value);

    memset(&fault, 0, sizeof(fault));
    test_port_set_fault(&t, "tsoft2", &fault);
    test_uct_cleanup(&t);
}

/* A put whose acknowledgement never comes makes no CQE (the HCA's
 * retransmissions outlast the test): the fd of an armed A still wakes when
 * the channels' guardian is due, and arm then says BUSY, so that a path
 * that fails while the user sleeps is judged */
GDA_FT_TEST(uct_event, guardian_wakes_an_armed_iface_with_an_op_outstanding)
{
    uint64_t value = 77;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES, "UCX_GDA_FT_TIMEOUT=10s",
                 NULL);
    test_uct_setup(&t);
    test_port_lose_answers(&t, "tsoft2");

    GDA_FT_ASSERT_EQ(uct_ep_put_short(t.node[NODE_A].ep, &value,
                                      sizeof(value), raddr_b(&t, 0),
                                      rkey_b(&t)), UCS_OK);
    fd = test_event_arm(&t, NODE_A, UCT_EVENT_SEND_COMP);
    GDA_FT_ASSERT_EQ(test_event_fd_ready(fd, 10000), 1);
    GDA_FT_ASSERT_EQ(uct_iface_event_arm(t.node[NODE_A].iface,
                                         UCT_EVENT_SEND_COMP),
                     UCS_ERR_BUSY);

    /* the put still lands, on the backup path */
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf, &value, sizeof(value));
    test_uct_cleanup(&t);
}

typedef ucs_status_t (*test_event_channels_func_t)(uct_ep_h, void**,
                                                   unsigned*);

/* Hands out both endpoints' device channels, as to a kernel that may wait
 * on the peer: liveness probes go on while nothing is in flight */
static void test_event_hand_out_channels(test_uct_t *t)
{
    test_event_channels_func_t channels = (test_event_channels_func_t)
            dlsym(t->plugin, "uct_gda_ft_ep_device_channels");
    double deadline = soft_now_sec() + 20;
    unsigned count, i, done;
    void *chans;

    GDA_FT_ASSERT(channels != NULL);
    do {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        test_progress(t);
        for (i = done = 0; i < 2; ++i) {
            done += channels(t->node[i].ep, &chans, &count) == UCS_OK;
        }
    } while (done < 2);
}

/* The liveness probes a node's endpoint wrote so far */
static uint32_t test_event_probes(test_uct_t *t, unsigned node)
{
    uct_gda_ft_ep_counters_t c;

    GDA_FT_ASSERT_OK(t->query_counters(t->node[node].ep, &c));
    return c.probes;
}

/* An idle connection whose device channels were handed out, with liveness
 * probes every 25 ms (PEER_TIMEOUT 100 ms): A progresses, which posts a
 * probe whenever one is due, then sleeps armed for 100 ms, twenty times
 * over. A probe's completion lands while A sleeps, and must not wake it:
 * nothing of A's own is outstanding, and B's progress in between keeps
 * the peer alive */
GDA_FT_TEST(uct_event, liveness_probes_wake_nobody)
{
    unsigned round, wakes = 0, probes;
    double until, start;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES,
                 "UCX_GDA_FT_DEVICE_CHANNELS=1", NULL);
    test_uct_setup(&t);
    test_event_hand_out_channels(&t);
    start = soft_now_sec();
    for (round = 0; round < 20; ++round) {
        until = soft_now_sec() + 0.03;
        while (soft_now_sec() < until) {
            uct_worker_progress(t.node[NODE_A].worker);
            uct_worker_progress(t.node[NODE_B].worker);
        }
        fd     = test_event_arm(&t, NODE_A,
                                UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
        wakes += test_event_fd_ready(fd, 100);
        uct_worker_progress(t.node[NODE_A].worker);
    }
    GDA_FT_ASSERT_EQ(wakes, 0);
    /* a probe at least every round */
    /* a probe at least every round, and at most one per path every
     * quarter of PEER_TIMEOUT (an answer polled in the pass that judged
     * its age once sent one at every pass) */
    probes = test_event_probes(&t, NODE_A);
    printf("%u probes in %.2f s\n", probes, soft_now_sec() - start);
    GDA_FT_ASSERT(probes >= 20);
    GDA_FT_ASSERT(probes <= 2 * ((soft_now_sec() - start) / 0.025 + 1));
    test_uct_cleanup(&t);
}

/* The same connection without device channels handed out, and nothing in
 * flight: nobody waits on the peer, and no probe goes (a process with
 * hundreds of idle endpoints probed each of them every quarter timeout).
 * The connection still works. */
GDA_FT_TEST(uct_event, idle_endpoint_sends_no_probes)
{
    double until;
    test_uct_t t;

    test_uct_env(&t, 4, TEST_EVENT_BUSY_PROBES, NULL);
    test_uct_setup(&t);
    until = soft_now_sec() + 0.5;
    while (soft_now_sec() < until) {
        test_progress(&t);
    }
    GDA_FT_ASSERT_EQ(test_event_probes(&t, NODE_A), 0);
    GDA_FT_ASSERT_EQ(test_event_probes(&t, NODE_B), 0);
    test_put_word(&t, 0, 0x1234);
    test_uct_cleanup(&t);
}
