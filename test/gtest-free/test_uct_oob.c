/*
 * The out-of-band wireup channel of the gda_ft UCT transport: ordered
 * messages, refused strangers and malformed addresses, peers that vanish.
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
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

GDA_FT_TEST(uct_oob, messages_arrive_in_order_sync_and_async)
{
    test_oob_rx_t sync_rx = {0}, async_rx = {0};
    double deadline;
    test_uct_t t;
    uint32_t i;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &sync_rx,
                                              TEST_CB_SYNC));
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                              test_oob_am_cb, &async_rx,
                                              UCT_CB_FLAG_ASYNC));

    /* every size up to the largest, in order, run by B's progress */
    for (i = 0; i < 300; ++i) {
        test_oob_send(&t, 5, i, (i == 299) ? UCT_GDA_FT_OOB_MAX_PAYLOAD :
                                sizeof(uint32_t) + (i * 331) % 65000);
    }
    TEST_WAIT(&t, sync_rx.calls == 300, 10000);
    GDA_FT_ASSERT_EQ(sync_rx.bad, 0);
    GDA_FT_ASSERT(pthread_equal(sync_rx.thread, pthread_self()));

    /* an asynchronous handler runs without B's progress, in UCX's async
     * thread */
    for (i = 0; i < 10; ++i) {
        test_oob_send(&t, 6, i, 100 + i);
    }
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&async_rx.calls, __ATOMIC_ACQUIRE) < 10) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(async_rx.bad, 0);
    GDA_FT_ASSERT(!pthread_equal(async_rx.thread, pthread_self()));
    GDA_FT_ASSERT_EQ(sync_rx.calls, 300);
    test_oob_cleanup(&t);
}

/*
 * A message that arrives while the receiver's async context is blocked (in
 * loopback, by the sender's own am_bcopy) finds UCX's async thread unable to
 * run the connection's handler; UCX keeps the event for the next progress
 * and the edge-triggered socket raises no other. The asynchronous handler
 * must still run without progress (UCX's am_async on oob/loopback failed
 * with "prev_am_count+1" when it did not).
 */
GDA_FT_TEST(uct_oob, async_handler_runs_after_an_event_met_a_blocked_context)
{
    test_oob_rx_t rx = {0};
    double deadline;
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                              test_oob_am_cb, &rx,
                                              UCT_CB_FLAG_ASYNC));

    /* the connection is accepted and watched: the first message came */
    test_oob_send(&t, 6, 0, 100);
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < 1) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }

    /* the second arrives while B's context is blocked */
    UCS_ASYNC_BLOCK(t.node[NODE_B].async);
    test_oob_send(&t, 6, 1, 101);
    usleep(300000);
    GDA_FT_ASSERT_EQ(__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE), 1);
    UCS_ASYNC_UNBLOCK(t.node[NODE_B].async);

    /* within a few OOB_ASYNC_TICKs (100 ms), with no progress of B */
    deadline = soft_now_sec() + 2;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < 2) {
        if (soft_now_sec() > deadline) {
            GDA_FT_FAIL("the message that met a blocked async context was "
                        "not handled in 2 s without progress");
        }
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT(!pthread_equal(rx.thread, pthread_self()));
    test_oob_cleanup(&t);
}

GDA_FT_TEST(uct_oob, malformed_addresses_are_refused)
{
    uint8_t iface_addr[64], junk[64];
    uct_ep_params_t ep_params;
    uct_ep_h ep;
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_get_address(t.node[NODE_B].iface,
                                           (uct_iface_addr_t*)iface_addr));

    /* an HCA's device address is not reachable over the channel, and an
     * endpoint to garbage is refused */
    memset(junk, 0, sizeof(junk));
    junk[0] = 1;
    junk[1] = 0x02;     /* an IPv4-form HCA address */
    GDA_FT_ASSERT(!uct_iface_is_reachable(t.node[NODE_A].iface,
                                          (uct_device_addr_t*)junk,
                                          (uct_iface_addr_t*)iface_addr));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = t.node[NODE_A].iface;
    ep_params.dev_addr   = (uct_device_addr_t*)junk;
    ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
    GDA_FT_ASSERT(uct_ep_create(&ep_params, &ep) != UCS_OK);
    test_oob_cleanup(&t);
}

/* A stranger's connection to B's listener */
static int test_oob_stranger(test_uct_t *t)
{
    uint8_t dev_addr[64], iface_addr[64];
    struct sockaddr_in sa;
    int fd;

    GDA_FT_ASSERT_OK(uct_iface_get_device_address(
            t->node[NODE_B].iface, (uct_device_addr_t*)dev_addr));
    GDA_FT_ASSERT_OK(uct_iface_get_address(t->node[NODE_B].iface,
                                           (uct_iface_addr_t*)iface_addr));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    memcpy(&sa.sin_addr, dev_addr + 2, 4);
    memcpy(&sa.sin_port, iface_addr, 2);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    GDA_FT_ASSERT(fd >= 0);
    GDA_FT_ASSERT_EQ(connect(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    return fd;
}

typedef void (*test_oob_stats_func_t)(uct_iface_h, uct_gda_ft_oob_stats_t*);

static uct_gda_ft_oob_stats_t test_oob_stats(test_uct_t *t)
{
    test_oob_stats_func_t func;
    uct_gda_ft_oob_stats_t stats;

    func = (test_oob_stats_func_t)dlsym(t->plugin,
                                        "uct_gda_ft_oob_iface_stats");
    GDA_FT_ASSERT(func != NULL);
    func(t->node[NODE_B].iface, &stats);
    return stats;
}

static size_t test_open_fds(void)
{
    struct dirent *entry;
    size_t count = 0;
    DIR *dir      = opendir("/proc/self/fd");

    GDA_FT_ASSERT(dir != NULL);
    while ((entry = readdir(dir)) != NULL) {
        count += (entry->d_name[0] != '.');
    }
    closedir(dir);
    return count;
}

/*
 * Strangers on the listener: junk is refused, half a message is dropped
 * when its connection ends, and 200 connections that come and go leave
 * no descriptor behind; each is counted, and the real peer's messages keep
 * arriving, each once, in between and after.
 */
GDA_FT_TEST(uct_oob, strangers_are_refused_counted_and_freed)
{
    uct_gda_ft_wire_oob_hdr_t hdr;
    uct_gda_ft_oob_stats_t stats;
    test_oob_rx_t rx = {0};
    uint8_t junk[64];
    size_t fds_before;
    test_uct_t t;
    int fd, i;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));
    test_oob_send(&t, 5, 0, 64);
    TEST_WAIT(&t, rx.calls == 1, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.accepted, 1);   /* A's endpoint */
    GDA_FT_ASSERT_EQ(stats.open, 1);

    /* junk: refused, the connection closed by B */
    fd = test_oob_stranger(&t);
    memset(junk, 0x5a, sizeof(junk));
    GDA_FT_ASSERT_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    TEST_WAIT(&t, recv(fd, junk, sizeof(junk), MSG_DONTWAIT) == 0, 5000);
    close(fd);
    TEST_WAIT(&t, test_oob_stats(&t).open == 1, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.refused, 1);
    GDA_FT_ASSERT_EQ(stats.truncated, 0);

    /* a valid header promising 1000 bytes, 10 of them, then the end */
    fd = test_oob_stranger(&t);
    uct_gda_ft_wire_oob_hdr_pack(5, 1000, &hdr);
    GDA_FT_ASSERT_EQ(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    GDA_FT_ASSERT_EQ(write(fd, junk, 10), 10);
    test_oob_send(&t, 5, 1, 64);
    TEST_WAIT(&t, rx.calls == 2, 5000);
    close(fd);
    TEST_WAIT(&t, test_oob_stats(&t).truncated == 1, 5000);
    TEST_WAIT(&t, test_oob_stats(&t).open == 1, 5000);
    GDA_FT_ASSERT_EQ(rx.calls, 2);   /* the half message ran no handler */

    /* a flood of connections: half send junk, half nothing */
    fds_before = test_open_fds();
    for (i = 0; i < 200; ++i) {
        fd = test_oob_stranger(&t);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(write(fd, junk, 16), 16);
        }
        close(fd);
        if ((i % 20) == 0) {
            test_oob_send(&t, 5, 2 + i / 20, 64);
        }
    }
    TEST_WAIT(&t, (test_oob_stats(&t).accepted == 203) &&
                  (test_oob_stats(&t).open == 1), 10000);
    TEST_WAIT(&t, rx.calls == 12, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.refused, 101);
    GDA_FT_ASSERT_EQ(stats.truncated, 1);
    GDA_FT_ASSERT(test_open_fds() <= fds_before);
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_oob_cleanup(&t);
}

GDA_FT_TEST(uct_oob, peer_gone_is_an_endpoint_error)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg = {0, 8};
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));
    test_oob_send(&t, 5, 0, 8);
    TEST_WAIT(&t, rx.calls == 1, 5000);

    /* B goes away: A's error handler hears of it once */
    test_node_close(&t, &t.node[NODE_B]);
    t.node[NODE_B].iface  = NULL;
    t.node[NODE_B].worker = NULL;
    TEST_WAIT(&t, t.node[NODE_A].errors == 1, 5000);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_CONNECTION_RESET);
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), UCS_ERR_CONNECTION_RESET);
    uct_worker_progress(t.node[NODE_A].worker);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 1);
    test_oob_cleanup(&t);
}

/* B's end of the connection A's endpoint made: the socket whose local port
 * is B's listener's and that does not listen */
static int test_oob_conn_fd(test_uct_t *t)
{
    struct sockaddr_in addr;
    uint16_t port_be;
    socklen_t len;
    int fd, listening, found = -1;

    GDA_FT_ASSERT_OK(uct_iface_get_address(t->node[NODE_B].iface,
                                           (uct_iface_addr_t*)&port_be));
    for (fd = 3; fd < 4096; ++fd) {
        len = sizeof(addr);
        if ((getsockname(fd, (struct sockaddr*)&addr, &len) != 0) ||
            (addr.sin_family != AF_INET) || (addr.sin_port != port_be)) {
            continue;
        }
        len = sizeof(listening);
        if ((getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
                        &len) == 0) && !listening) {
            GDA_FT_ASSERT_EQ(found, -1);
            found = fd;
        }
    }
    GDA_FT_ASSERT(found >= 0);
    return found;
}

static void test_oob_count_event(int id, ucs_event_set_types_t events,
                                 void *arg)
{
    __atomic_add_fetch((unsigned*)arg, 1, __ATOMIC_RELAXED);
}

/*
 * A connection that ends while B's async context is blocked leaves its
 * event in the context's queue of missed events under the fd's number.
 * The progress that frees the connection takes it out before it closes
 * the fd. Were it still queued when the number came back as another
 * context's handler (another worker's accept), B's next look at the queue
 * would run that handler under B's lock, or assert "handler->async ==
 * async" (UCP's multi_ep_2sided with many endpoints). Here the number comes
 * back as an eventfd nobody writes, watched by a context of the test's.
 */
GDA_FT_TEST(uct_oob, freed_connection_leaves_no_event_under_its_fd)
{
    ucs_async_context_t *other;
    test_oob_rx_t rx = {0};
    unsigned calls = 0;
    int fd, efd;
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));
    test_oob_send(&t, 5, 0, 64);
    TEST_WAIT(&t, rx.calls == 1, 5000);
    GDA_FT_ASSERT_EQ(test_oob_stats(&t).open, 1);
    fd = test_oob_conn_fd(&t);

    /* the end of A's endpoint meets B's context blocked */
    UCS_ASYNC_BLOCK(t.node[NODE_B].async);
    uct_ep_destroy(t.node[NODE_A].ep);
    t.node[NODE_A].ep = NULL;
    usleep(300000);
    UCS_ASYNC_UNBLOCK(t.node[NODE_B].async);

    /* B's progress frees the connection */
    TEST_WAIT(&t, test_oob_stats(&t).open == 0, 5000);
    GDA_FT_ASSERT(fcntl(fd, F_GETFD) < 0);

    /* the number comes back, in another context */
    GDA_FT_ASSERT_OK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                              &other));
    efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    GDA_FT_ASSERT(efd >= 0);
    if (efd != fd) {
        GDA_FT_ASSERT_EQ(dup2(efd, fd), fd);
        close(efd);
    }
    GDA_FT_ASSERT_OK(ucs_async_set_event_handler(
            UCS_ASYNC_MODE_THREAD_SPINLOCK, fd, UCS_EVENT_SET_EVREAD,
            test_oob_count_event, &calls, other));

    /* what UCP's progress of B does next */
    __ucs_async_poll_missed(t.node[NODE_B].async);
    GDA_FT_ASSERT_EQ(__atomic_load_n(&calls, __ATOMIC_RELAXED), 0);

    ucs_async_remove_handler(fd, 1);
    close(fd);
    ucs_async_context_destroy(other);
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    test_oob_cleanup(&t);
}

/* Endpoints that come and go (UCP's wireup endpoints, one per connection)
 * hold no descriptors past the next progress of either end: their sockets
 * and B's ends of them are closed */
GDA_FT_TEST(uct_oob, destroyed_endpoints_hold_no_fds_after_progress)
{
    size_t fds_before;
    test_uct_t t;
    int i;

    test_oob_setup(&t);
    TEST_WAIT(&t, test_oob_stats(&t).open == 1, 5000);
    fds_before = test_open_fds();
    for (i = 0; i < 50; ++i) {
        uct_ep_destroy(test_oob_ep_create(&t));
    }
    TEST_WAIT(&t, test_open_fds() <= fds_before, 10000);
    GDA_FT_ASSERT_EQ(test_oob_stats(&t).open, 1);   /* A's first one */
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_oob_cleanup(&t);
}
