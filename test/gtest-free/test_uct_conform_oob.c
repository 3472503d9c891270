/*
 * Conformance with what UCX expects of a transport (suite uct_conform, as
 * test_uct_conform.c), for the out-of-band channel: closing an interface
 * leaves no callback or handler, even racing a connection's end; a full
 * send queue is NO_RESOURCE and pending requests get in; the messages
 * between two progress calls are bounded.
 */
#include "uct_harness.h"
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <gda_ft_ucs_compat.h>

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static unsigned test_log_warnings;
static char     test_log_last[256];

/* Counts UCX warnings and errors, keeps the last one */
static ucs_log_func_rc_t
test_log_count_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++test_log_warnings;
        vsnprintf(test_log_last, sizeof(test_log_last), message, ap);
        printf("%s:%u %s\n", file, line, test_log_last);
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

/* Closes a node and forgets it; UCX warns when its worker still has
 * callbacks, or its async context handlers */
static void test_node_close_checked(test_uct_t *t, test_node_t *node)
{
    if (node->ep != NULL) {
        uct_ep_destroy(node->ep);
        node->ep = NULL;
    }
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(node->md, node->memh));
    free(node->buf);
    uct_iface_close(node->iface);
    node->iface = NULL;
    uct_worker_destroy(node->worker);
    node->worker = NULL;
    ucs_async_context_destroy(node->async);
    uct_md_close(node->md);
}

/* The out-of-band interface leaves nothing behind: its progress callback
 * leaves the worker, its listener's and connections' handlers the async
 * context; UCX warns of either at cleanup (and a callback left behind
 * would run on freed memory). Both orders: B closes with A's connection
 * open, or after A's endpoint closed it. */
GDA_FT_TEST(uct_conform, oob_iface_close_leaves_no_callback_or_handler)
{
    test_oob_rx_t sync_rx, async_rx;
    double deadline;
    test_uct_t t;
    unsigned order;
    uint32_t i;

    for (order = 0; order < 2; ++order) {
        memset(&sync_rx, 0, sizeof(sync_rx));
        memset(&async_rx, 0, sizeof(async_rx));
        test_oob_setup(&t);
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                                  test_oob_am_cb, &sync_rx,
                                                  TEST_CB_SYNC));
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                                  test_oob_am_cb, &async_rx,
                                                  UCT_CB_FLAG_ASYNC));
        for (i = 0; i < 10; ++i) {
            test_oob_send(&t, 5, i, 64);
            test_oob_send(&t, 6, i, 64);
        }
        TEST_WAIT(&t, sync_rx.calls == 10, 10000);
        deadline = soft_now_sec() + 10;
        while (__atomic_load_n(&async_rx.calls, __ATOMIC_ACQUIRE) < 10) {
            GDA_FT_ASSERT(soft_now_sec() < deadline);
            usleep(1000);
        }

        test_log_warnings = 0;
        ucs_log_push_handler(test_log_count_handler);
        if (order == 1) {
            /* B sees the end of the connection before it closes */
            uct_ep_destroy(t.node[NODE_A].ep);
            t.node[NODE_A].ep = NULL;
            deadline = soft_now_sec() + 0.1;
            while (soft_now_sec() < deadline) {
                test_progress(&t);
            }
        }
        test_node_close_checked(&t, &t.node[NODE_B]);
        test_node_close_checked(&t, &t.node[NODE_A]);
        ucs_log_pop_handler();
        GDA_FT_ASSERT_EQ(test_log_warnings, 0);
    }
}

/*
 * The end of a connection races the interface's close: A's endpoint goes
 * while messages still arrive, and B closes at once, while its async
 * thread may be reading the connection's end. B's cleanup must wait for
 * that handler, not free the connection under it or leave it registered
 * (UCX: "releasing async context with 1 handlers", "spinlock destroy
 * failed: busy", a crash in the freed connection). Many rounds, as UCX's
 * suites ran into it.
 */
GDA_FT_TEST_TIMEOUT(uct_conform, oob_close_racing_connection_end, 120)
{
    test_oob_rx_t async_rx;
    double end = soft_now_sec() + 5;
    unsigned round, rounds = 0;
    test_uct_t t;
    uint32_t i;

    for (round = 0; (round < 300) && (soft_now_sec() < end); ++round) {
        memset(&async_rx, 0, sizeof(async_rx));
        test_oob_setup(&t);
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                                  test_oob_am_cb, &async_rx,
                                                  UCT_CB_FLAG_ASYNC));
        for (i = 0; i < 8; ++i) {
            test_oob_send(&t, 6, i, 64 << (i % 8));
        }

        test_log_warnings = 0;
        ucs_log_push_handler(test_log_count_handler);
        uct_ep_destroy(t.node[NODE_A].ep);
        t.node[NODE_A].ep = NULL;
        if (round & 1) {
            usleep(round % 200);
        }
        test_node_close_checked(&t, &t.node[NODE_B]);
        test_node_close_checked(&t, &t.node[NODE_A]);
        ucs_log_pop_handler();
        GDA_FT_ASSERT_EQ(test_log_warnings, 0);
        ++rounds;
    }
    printf("%u rounds\n", rounds);
}

typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint32_t          seq;
    size_t            length;
    unsigned          calls;
} test_oob_req_t;

static ucs_status_t test_oob_pending_cb(uct_pending_req_t *self)
{
    test_oob_req_t *req = ucs_container_of(self, test_oob_req_t, super);
    test_oob_msg_t msg  = {req->seq, req->length};
    ssize_t ret;

    ret = uct_ep_am_bcopy(req->t->node[NODE_A].ep, 5, test_oob_pack, &msg, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    ++req->calls;
    return UCS_OK;
}

static size_t test_rss_bytes(void)
{
    unsigned long size, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    GDA_FT_ASSERT(f != NULL);
    GDA_FT_ASSERT_EQ(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* A receiver whose handler waits for its progress, which does not come:
 * the sender's queue fills up to OOB_TX_QUEUE, am_bcopy then says
 * NO_RESOURCE (neither side's memory grows), pending requests and the
 * flush wait; with the receiver's progress everything arrives in order */
GDA_FT_TEST(uct_conform, oob_full_queue_is_no_resource_and_pending_works)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg;
    test_oob_req_t reqs[4];
    size_t rss_before, rss_growth;
    uint32_t sent, i;
    test_uct_t t;
    ssize_t ret;

    setenv("UCX_GDA_FT_OOB_TX_QUEUE", "256k", 1);
    setenv("UCX_GDA_FT_OOB_TX_MAX_MSGS", "1000000", 1);
    test_oob_setup(&t);
    GDA_FT_ASSERT(t.node[NODE_A].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_PENDING);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));

    /* nothing to wait for: pending_add refuses */
    reqs[0].super.func = test_oob_pending_cb;
    GDA_FT_ASSERT_EQ(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[0].super, 0),
                     UCS_ERR_BUSY);

    /* largest messages, only A progresses: TCP buffers what B does not
     * read, then A's queue fills (2048 would be 128 MiB) */
    rss_before = test_rss_bytes();
    for (sent = 0; sent < 2048; ++sent) {
        msg.seq    = sent;
        msg.length = UCT_GDA_FT_OOB_MAX_PAYLOAD;
        ret        = uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            break;
        }
        GDA_FT_ASSERT_EQ(ret, UCT_GDA_FT_OOB_MAX_PAYLOAD);
        uct_worker_progress(t.node[NODE_A].worker);
    }
    rss_growth = test_rss_bytes() - rss_before;
    printf("%u largest messages taken before NO_RESOURCE, RSS grew by %zu "
           "KiB\n", sent, rss_growth / 1024);
    GDA_FT_ASSERT(sent < 2048);
    GDA_FT_ASSERT(rss_growth < 16 * 1024 * 1024);
    GDA_FT_ASSERT_EQ(rx.calls, 0);

    /* requests wait in order, the flush waits behind them */
    for (i = 0; i < 4; ++i) {
        reqs[i].super.func = test_oob_pending_cb;
        reqs[i].t          = &t;
        reqs[i].seq        = sent + i;
        reqs[i].length     = 100 + i;
        reqs[i].calls      = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep,
                                            &reqs[i].super, 0));
    }
    GDA_FT_ASSERT_EQ(uct_ep_flush(t.node[NODE_A].ep, 0, NULL),
                     UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(uct_iface_flush(t.node[NODE_A].iface, 0, NULL),
                     UCS_INPROGRESS);
    msg.seq    = 0;
    msg.length = 8;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), UCS_ERR_NO_RESOURCE);

    /* B progresses: everything arrives, in order, once */
    TEST_WAIT(&t, rx.calls == sent + 4, 30000);
    TEST_WAIT(&t, uct_ep_flush(t.node[NODE_A].ep, 0, NULL) == UCS_OK, 5000);
    GDA_FT_ASSERT_OK(uct_iface_flush(t.node[NODE_A].iface, 0, NULL));
    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 1);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT_EQ(rx.next, sent + 4);
    test_oob_cleanup(&t);
}

/* A receiver that keeps up by itself (asynchronous handler): the sender
 * still takes no more than OOB_TX_MAX_MSGS messages between two of its
 * progress calls, as UCX's am_tx_max_bufs expects */
GDA_FT_TEST(uct_conform, oob_messages_between_progress_are_bounded)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg = {0, 8};
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_h iface;
    double deadline;
    test_uct_t t;
    uint32_t sent;
    ssize_t ret;

    setenv("UCX_GDA_FT_OOB_TX_MAX_MSGS", "32", 1);
    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              UCT_CB_FLAG_ASYNC));
    for (sent = 0; sent < 1000; ++sent) {
        msg.seq = sent;
        ret     = uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack, &msg,
                                  0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            break;
        }
        GDA_FT_ASSERT_EQ(ret, 8);
    }
    GDA_FT_ASSERT_EQ(sent, 32);

    /* A's progress finds them written: the next one goes out */
    uct_worker_progress(t.node[NODE_A].worker);
    msg.seq = sent++;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), 8);
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < sent) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);

    /* a queue that cannot hold a largest message is refused */
    GDA_FT_ASSERT_OK(uct_md_iface_config_read(t.node[NODE_A].md, "gda_ft",
                                              NULL, NULL, &config));
    GDA_FT_ASSERT_OK(uct_config_modify(
            config, GDA_FT_UCT_CONFIG_NAME("GDA_FT_", "OOB_TX_QUEUE"), "64k"));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gda_ft";
    params.mode.device.dev_name = "tsoft0:oob";
    GDA_FT_ASSERT_EQ(uct_iface_open(t.node[NODE_A].md, t.node[NODE_A].worker,
                                    &params, config, &iface),
                     UCS_ERR_INVALID_PARAM);
    uct_config_release(config);
    test_oob_cleanup(&t);
}
