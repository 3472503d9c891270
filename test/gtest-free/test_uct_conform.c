/*
 * Conformance with what UCX expects of a transport: claimed capabilities
 * have their operations, iov limits, alignment, tracing, queue lengths,
 * diagnostics, the v2 address. The out-of-band channel's resources are
 * test_uct_conform_oob.c's.
 */
#include "uct_harness.h"
#include "chan_harness.h"   /* chan_world_time_scale() */
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <uct/ib/gda_ft/uct_gda_ft_perf.h>
#include <uct/ib/gda_ft/uct_gda_ft_oob_stats.h>
#include <ucp/core/ucp_types.h>   /* UCX_ADDRESS_VERSION=v2 packing */
#include <gda_ft_ucs_compat.h>

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


/* ---- conformance with UCX's expectations --------------------------------- */

typedef struct {
    uint64_t    cap;        /* 0: always called */
    size_t      offset;     /* in uct_iface_ops_t */
    const char *name;
} test_op_t;

#define TEST_OP(_cap, _op) \
    {(_cap), offsetof(uct_iface_ops_t, _op), #_op}

/* UCX calls an operation through the interface's table without a check:
 * every one it may call for a capability the interface claims is set */
static void test_assert_ops_for_caps(uct_iface_h iface,
                                     const uct_iface_attr_t *attr)
{
    static const test_op_t ops[] = {
        TEST_OP(0, ep_flush),
        TEST_OP(0, ep_fence),
        TEST_OP(0, ep_create),
        TEST_OP(0, ep_destroy),
        TEST_OP(0, ep_pending_add),
        TEST_OP(0, ep_pending_purge),
        TEST_OP(0, iface_flush),
        TEST_OP(0, iface_fence),
        TEST_OP(0, iface_progress_enable),
        TEST_OP(0, iface_progress_disable),
        TEST_OP(0, iface_progress),
        TEST_OP(0, iface_event_fd_get),
        TEST_OP(0, iface_event_arm),
        TEST_OP(0, iface_close),
        TEST_OP(0, iface_query),
        TEST_OP(0, iface_get_device_address),
        TEST_OP(0, iface_get_address),
        TEST_OP(0, iface_is_reachable),
        TEST_OP(UCT_IFACE_FLAG_PUT_SHORT, ep_put_short),
        TEST_OP(UCT_IFACE_FLAG_PUT_BCOPY, ep_put_bcopy),
        TEST_OP(UCT_IFACE_FLAG_PUT_ZCOPY, ep_put_zcopy),
        TEST_OP(UCT_IFACE_FLAG_GET_SHORT, ep_get_short),
        TEST_OP(UCT_IFACE_FLAG_GET_BCOPY, ep_get_bcopy),
        TEST_OP(UCT_IFACE_FLAG_GET_ZCOPY, ep_get_zcopy),
        TEST_OP(UCT_IFACE_FLAG_AM_SHORT, ep_am_short),
        TEST_OP(UCT_IFACE_FLAG_AM_SHORT, ep_am_short_iov),
        TEST_OP(UCT_IFACE_FLAG_AM_BCOPY, ep_am_bcopy),
        TEST_OP(UCT_IFACE_FLAG_AM_ZCOPY, ep_am_zcopy),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic_cswap64),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic_cswap32),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic32_post),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic64_post),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic32_fetch),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic64_fetch),
        TEST_OP(UCT_IFACE_FLAG_PENDING, ep_pending_add),
        TEST_OP(UCT_IFACE_FLAG_EP_CHECK, ep_check),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_EP, ep_get_address),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_EP, ep_connect_to_ep),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_IFACE, iface_get_address),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_SHORT, ep_tag_eager_short),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_BCOPY, ep_tag_eager_bcopy),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_ZCOPY, ep_tag_eager_zcopy),
        TEST_OP(UCT_IFACE_FLAG_TAG_RNDV_ZCOPY, ep_tag_rndv_zcopy)
    };
    unsigned i;

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        if (((ops[i].cap == 0) || (attr->cap.flags & ops[i].cap)) &&
            (*(void**)UCS_PTR_BYTE_OFFSET(&iface->ops, ops[i].offset) ==
             NULL)) {
            GDA_FT_FAIL("the interface claims capability 0x%" PRIx64
                        " but has no %s", ops[i].cap, ops[i].name);
        }
    }
}

GDA_FT_TEST(uct_conform, claimed_capabilities_have_their_operations)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_assert_ops_for_caps(t.node[NODE_A].iface,
                             &t.node[NODE_A].iface_attr);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_assert_ops_for_caps(t.node[NODE_A].iface,
                             &t.node[NODE_A].iface_attr);
    test_oob_cleanup(&t);
}

/* Splits data[0..length) into iovcnt entries of uneven sizes, some empty */
static void test_iov_split(uct_iov_t *iov, size_t iovcnt, uint8_t *data,
                           size_t length)
{
    size_t i, offset = 0, part;

    for (i = 0; i < iovcnt; ++i) {
        part = (i == iovcnt - 1) ? (length - offset) :
               ((i % 3 == 1) ? 0 : ucs_min(length - offset, 3 + 5 * i));
        iov[i].buffer = data + offset;
        iov[i].length = part;
        iov[i].memh   = UCT_MEM_HANDLE_NULL;
        iov[i].stride = 0;
        iov[i].count  = 1;
        offset       += part;
    }
}

typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint64_t          seq;
    unsigned          calls;
} test_am_iov_req_t;

/* Message `seq` of a stream (see test_am_stream_cb) in two iov entries */
static ucs_status_t test_am_iov_send_seq(test_uct_t *t, uint64_t seq)
{
    uint8_t payload[24];
    uct_iov_t iov[2];

    soft_fill(payload, sizeof(payload), (unsigned)seq);
    test_iov_split(iov, 1, (uint8_t*)&seq, sizeof(seq));
    test_iov_split(iov + 1, 1, payload, sizeof(payload));
    return uct_ep_am_short_iov(t->node[NODE_A].ep, TEST_AM_ID, iov, 2);
}

static ucs_status_t test_am_iov_pending_cb(uct_pending_req_t *self)
{
    test_am_iov_req_t *req = ucs_container_of(self, test_am_iov_req_t,
                                              super);
    ucs_status_t status;

    status = test_am_iov_send_seq(req->t, req->seq);
    req->calls += (status == UCS_OK);
    return status;
}

/* UCP's active messages send through am_short_iov: every size up to
 * max_short in 1..max_iov entries arrives as their concatenation, inline
 * and through a bounce buffer; the limits are checked; a full endpoint
 * says NO_RESOURCE and its pending queue sends in order */
GDA_FT_TEST(uct_conform, am_short_iov_sizes_limits_and_pending)
{
    size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 0};
    test_am_iov_req_t reqs[4];
    const uct_iface_attr_t *attr;
    uct_iov_t iov[16];
    uint8_t src[256];
    test_am_rx_t *rx;
    size_t s, n, max_iov, sent = 0;
    ucs_status_t status;
    uint64_t seq;
    test_uct_t t;
    unsigned i;

    /* a channel WQE takes up to 16 bytes inline, longer ones go through a
     * bounce buffer */
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    attr    = &t.node[NODE_A].iface_attr;
    max_iov = attr->cap.am.max_iov;
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    GDA_FT_ASSERT(t.node[NODE_A].iface->ops.ep_am_short_iov != NULL);
    GDA_FT_ASSERT(max_iov >= 4);    /* UCP's AM header, data, user header,
                                       reply footer */
    GDA_FT_ASSERT(max_iov < sizeof(iov) / sizeof(iov[0]));
    sizes[7] = attr->cap.am.max_short;
    GDA_FT_ASSERT(sizes[7] <= sizeof(src));

    rx = calloc(1, sizeof(*rx));
    soft_fill(src, sizeof(src), 5);
    test_am_set_handler(&t, NODE_B, test_am_cb, rx);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        for (n = 1; n <= max_iov; ++n) {
            test_iov_split(iov, n, src + n, sizes[s]);
            while ((status = uct_ep_am_short_iov(t.node[NODE_A].ep,
                                                 TEST_AM_ID, iov, n)) ==
                   UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
            GDA_FT_ASSERT_OK(status);
            ++sent;
            TEST_WAIT(&t, rx->count == sent, 5000);
            GDA_FT_ASSERT_EQ(rx->last_len, sizes[s]);
            GDA_FT_ASSERT_MEM_EQ(rx->last, src + n, sizes[s]);
        }
    }
    GDA_FT_ASSERT_EQ(rx->errors, 0);

    /* the limits: too long, too many entries, a bad id */
    test_iov_split(iov, 2, src, sizes[7] + 1);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         2), UCS_ERR_INVALID_PARAM);
    test_iov_split(iov, max_iov + 1, src, 16);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         max_iov + 1), UCS_ERR_INVALID_PARAM);
    test_iov_split(iov, 1, src, 16);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, UCT_AM_ID_MAX,
                                         iov, 1), UCS_ERR_INVALID_PARAM);

    /* a full endpoint: NO_RESOURCE, then the pending queue sends, in
     * order after what was posted */
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);
    for (seq = 0; (status = test_am_iov_send_seq(&t, seq)) == UCS_OK;
         ++seq) {
        GDA_FT_ASSERT(seq < 1000);
    }
    GDA_FT_ASSERT_EQ(status, UCS_ERR_NO_RESOURCE);
    for (i = 0; i < 4; ++i) {
        reqs[i].super.func = test_am_iov_pending_cb;
        reqs[i].t          = &t;
        reqs[i].seq        = seq + i;
        reqs[i].calls      = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep,
                                            &reqs[i].super, 0));
    }
    TEST_WAIT(&t, rx->count == seq + 4, 10000);
    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 1);
    }
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->next, seq + 4);
    GDA_FT_ASSERT_OK(test_flush(&t));
    free(rx);
    test_uct_cleanup(&t);
}


/* UCX's uct_p2p_am_alignment.invalid_align and invalid_offset, and what
 * UCP asks for, on both kinds of interface */
static void test_am_alignment_params(test_uct_t *t)
{
    const uint64_t align  = UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT;
    const uint64_t offset = UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET;
    test_node_t *node     = &t->node[NODE_A];

    /* not a power of 2 */
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align, 0, 0),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align, 3, 1),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align | offset, 24, 0),
                     UCS_ERR_INVALID_PARAM);
    /* an offset without an alignment */
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 0, 11),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 8, 8),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 8, 11),
                     UCS_ERR_INVALID_PARAM);
    /* valid: with and without an offset, and UCP's header offset (8) with
     * a smaller alignment */
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align, 64, 0));
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align | offset, 4096, 100));
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align | offset, 2, 8));
}

GDA_FT_TEST(uct_conform, am_alignment_params_are_checked)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_am_alignment_params(&t);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_am_alignment_params(&t);
    test_oob_cleanup(&t);
}

typedef struct {
    unsigned send;      /* UCT_AM_TRACE_TYPE_SEND calls */
    unsigned recv;
    unsigned bad;       /* wrong id, length or content */
    size_t   length;    /* expected of every message */
} test_tracer_t;

static void test_am_tracer(void *arg, uct_am_trace_type_t type, uint8_t id,
                           const void *data, size_t length, char *buffer,
                           size_t max)
{
    test_tracer_t *tr = arg;
    uint8_t expect[256];

    soft_fill(expect, sizeof(expect), 77);
    tr->bad += (id != TEST_AM_ID) || (length != tr->length) ||
               (length > sizeof(expect)) || memcmp(data, expect, length);
    if (type == UCT_AM_TRACE_TYPE_SEND) {
        ++tr->send;
    } else if (type == UCT_AM_TRACE_TYPE_RECV) {
        ++tr->recv;
    } else {
        ++tr->bad;
    }
    snprintf(buffer, max, "test tracer");
}

static char test_trace_log[65536];

/* Keeps the data-trace messages, prints nothing */
static ucs_log_func_rc_t
test_trace_log_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    size_t used = strlen(test_trace_log);
    char buf[512];

    if (level != UCS_LOG_LEVEL_TRACE_DATA) {
        return (level <= UCS_LOG_LEVEL_WARN) ? UCS_LOG_FUNC_RC_CONTINUE :
                                                UCS_LOG_FUNC_RC_STOP;
    }
    vsnprintf(buf, sizeof(buf), message, ap);
    snprintf(test_trace_log + used, sizeof(test_trace_log) - used, "%s\n",
             buf);
    return UCS_LOG_FUNC_RC_STOP;
}

static void test_trace_expect(const char *text)
{
    if (strstr(test_trace_log, text) == NULL) {
        GDA_FT_FAIL("no trace with '%s' in:\n%s", text, test_trace_log);
    }
}

/*
 * With logging on (UCX_LOG_LEVEL=trace_data in a build that keeps it), UCX
 * traces every active message sent and received through the interface's
 * AM tracer and ucs_trace_data(), and its tests count them: am_short,
 * am_short_iov and am_bcopy on the HCA interface, am_bcopy on the
 * out-of-band one, one SEND at the sender, one RECV at the receiver, each
 * with the id, the length and the bytes of the message.
 */
GDA_FT_TEST(uct_conform, am_send_and_receive_are_traced)
{
    test_tracer_t tx = {0}, rx = {0};
    test_am_rx_t *am_rx;
    test_am_pack_t pack;
    uint8_t src[256];
    uct_iov_t iov[2];
    test_uct_t t;

    /* UCX_LOG_LEVEL=trace_data, which libucs read when it loaded */
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_DATA;
    ucs_log_push_handler(test_trace_log_handler);
    test_uct_plugin = "libuct_gda_ft_trace.so";
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    soft_fill(src, sizeof(src), 77);
    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, test_am_tracer, &tx);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, test_am_tracer, &rx);

    tx.length = rx.length = 40;
    test_am_short(&t, *(uint64_t*)src, src + 8, 32);
    test_iov_split(iov, 2, src, 40);
    GDA_FT_ASSERT_OK(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         2));
    TEST_WAIT(&t, am_rx->count == 2, 5000);
    tx.length = rx.length = 200;
    test_am_bcopy(&t, src, 200);
    TEST_WAIT(&t, am_rx->count == 3, 5000);
    GDA_FT_ASSERT_EQ(tx.send, 3);
    GDA_FT_ASSERT_EQ(tx.recv, 0);
    GDA_FT_ASSERT_EQ(rx.recv, 3);
    GDA_FT_ASSERT_EQ(rx.send, 0);
    GDA_FT_ASSERT_EQ(tx.bad + rx.bad, 0);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, NULL, NULL);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, NULL, NULL);
    GDA_FT_ASSERT_OK(test_flush(&t));
    free(am_rx);
    test_uct_cleanup(&t);

    /* the out-of-band channel */
    memset(&tx, 0, sizeof(tx));
    memset(&rx, 0, sizeof(rx));
    test_oob_setup(&t);
    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, test_am_tracer, &tx);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, test_am_tracer, &rx);
    tx.length = rx.length = 100;
    pack.src    = src;
    pack.length = 100;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, TEST_AM_ID,
                                     test_am_pack, &pack, 0), 100);
    TEST_WAIT(&t, am_rx->count == 1, 5000);
    GDA_FT_ASSERT_EQ(tx.send, 1);
    GDA_FT_ASSERT_EQ(rx.recv, 1);
    GDA_FT_ASSERT_EQ(tx.bad + rx.bad, 0);
    free(am_rx);
    test_oob_cleanup(&t);

    /* and ucs_trace_data() logged them, with what the tracer wrote */
    ucs_log_pop_handler();
    test_trace_expect("TX: ep");
    test_trace_expect("AM_SHORT_IOV");
    test_trace_expect("AM_BCOPY");
    test_trace_expect("RX: ep");
    test_trace_expect("RX: fd");
    test_trace_expect("test tracer");
}

/*
 * Every put, get and atomic is traced with ucs_trace_data(), as UCX's IB
 * transports trace every post (uct_ib_log_post): UCX's p2p tests count at
 * least one such line per transfer. Each operation, with its remote
 * address.
 */
GDA_FT_TEST(uct_conform, rma_is_traced)
{
    uint8_t data[256], dest[256];
    test_unpack_arg_t unpack;
    test_pack_arg_t pack;
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    char raddr[32];

    test_trace_log[0] = '\0';
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_DATA;
    ucs_log_push_handler(test_trace_log_handler);
    test_uct_plugin = "libuct_gda_ft_trace.so";
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    soft_fill(data, sizeof(data), 79);

    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, data, 16,
                                      raddr_b(&t, 0x100), rkey_b(&t)));
    pack.src    = data;
    pack.length = 200;
    GDA_FT_ASSERT_EQ(uct_ep_put_bcopy(t.node[NODE_A].ep, test_pack_cb, &pack,
                                      raddr_b(&t, 0x200), rkey_b(&t)), 200);
    memcpy(t.node[NODE_A].buf, data, 64);
    iov.buffer = t.node[NODE_A].buf;
    iov.length = 64;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 3);
    GDA_FT_ASSERT_EQ(uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0x300), rkey_b(&t),
                                      &comp.super), UCS_INPROGRESS);
    unpack.dest   = dest;
    unpack.length = 16;
    unpack.calls  = 0;
    GDA_FT_ASSERT_EQ(uct_ep_get_bcopy(t.node[NODE_A].ep, test_unpack_cb,
                                      &unpack, 16, raddr_b(&t, 0x100),
                                      rkey_b(&t), &comp.super),
                     UCS_INPROGRESS);
    GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0x400), rkey_b(&t),
                                      &comp.super), UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(uct_ep_atomic64_post(t.node[NODE_A].ep, UCT_ATOMIC_OP_ADD,
                                          1, raddr_b(&t, 0x500),
                                          rkey_b(&t)));
    TEST_WAIT(&t, comp.calls == 1, 5000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_MEM_EQ(dest, data, 16);
    snprintf(raddr, sizeof(raddr), "rva 0x%" PRIx64, raddr_b(&t, 0x300));
    test_uct_cleanup(&t);

    ucs_log_pop_handler();
    test_trace_expect("PUT_SHORT");
    test_trace_expect("PUT_BCOPY");
    test_trace_expect("PUT_ZCOPY");
    test_trace_expect("GET_BCOPY");
    test_trace_expect("GET_ZCOPY");
    test_trace_expect("ATOMIC64");
    test_trace_expect(raddr);
}

/*
 * The receive CQ's size bounds no endpoint count: with room for the
 * receive WQEs of 2 endpoints per CQ, 7 endpoints on each side send and
 * receive.
 */
GDA_FT_TEST(uct_conform, eps_exceed_a_rx_cq)
{
    enum { NUM_EPS = 6 };
    uint8_t dev_addr[2][64], ep_addr[2][64];
    uct_ep_h eps[2][NUM_EPS];
    uct_ep_params_t ep_params;
    test_am_rx_t *am_rx;
    uint64_t header;
    test_uct_t t;
    unsigned i, n;
    ucs_status_t status;

    test_uct_env(&t, 4, "UCX_GDA_FT_RX_QUEUE_LEN=64",
                 "UCX_GDA_FT_RX_CQ_LEN=128", NULL);
    test_uct_setup(&t);

    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    for (i = 0; i < NUM_EPS; ++i) {
        for (n = 0; n < 2; ++n) {
            ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
            ep_params.iface      = t.node[n].iface;
            GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &eps[n][i]));
            GDA_FT_ASSERT_OK(uct_iface_get_device_address(
                    t.node[n].iface, (uct_device_addr_t*)dev_addr[n]));
            GDA_FT_ASSERT_OK(uct_ep_get_address(eps[n][i],
                                                (uct_ep_addr_t*)ep_addr[n]));
        }
        for (n = 0; n < 2; ++n) {
            GDA_FT_ASSERT_OK(uct_ep_connect_to_ep(
                    eps[n][i], (uct_device_addr_t*)dev_addr[1 - n],
                    (uct_ep_addr_t*)ep_addr[1 - n]));
        }
    }

    for (i = 0; i < NUM_EPS; ++i) {
        header = i;
        do {
            status = uct_ep_am_short(eps[NODE_A][i], TEST_AM_ID, header,
                                     NULL, 0);
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
        TEST_WAIT(&t, am_rx->count == i + 1, 5000);
        GDA_FT_ASSERT_EQ(am_rx->last_len, sizeof(header));
        GDA_FT_ASSERT_MEM_EQ(am_rx->last, &header, sizeof(header));
    }
    test_am_short(&t, NUM_EPS, NULL, 0);
    TEST_WAIT(&t, am_rx->count == NUM_EPS + 1, 5000);
    GDA_FT_ASSERT_EQ(am_rx->errors, 0);

    for (i = 0; i < NUM_EPS; ++i) {
        for (n = 0; n < 2; ++n) {
            uct_ep_destroy(eps[n][i]);
        }
    }
    free(am_rx);
    test_uct_cleanup(&t);
}

/* The MD reports what UCX's IB MDs report: no allocation of its own
 * (uct_mem_alloc() passes it over for another method) and no limit on the
 * buffers its transports move (UCX's tests skip every transfer larger than
 * max_alloc / 2.5) */
GDA_FT_TEST(uct_conform, md_max_alloc_and_flags_agree)
{
    uct_alloc_method_t methods[] = {UCT_ALLOC_METHOD_MD,
                                    UCT_ALLOC_METHOD_HEAP};
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;
    const uct_md_attr_t *attr;
    size_t length = 4 * 1024 * 1024;
    uct_mem_h memh;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    attr = &t.node[NODE_A].md_attr;
    GDA_FT_ASSERT(!(attr->cap.flags & UCT_MD_FLAG_ALLOC));
    GDA_FT_ASSERT_EQ(attr->cap.alloc_mem_types, 0);
    GDA_FT_ASSERT(attr->cap.max_alloc == ULONG_MAX);
    GDA_FT_ASSERT(attr->cap.max_reg == ULONG_MAX);
    GDA_FT_ASSERT(attr->cap.max_alloc / 2.5 >=
                  t.node[NODE_A].iface_attr.cap.put.max_zcopy);

    /* UCX allocates by another method, and the MD registers it */
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mds.mds    = &t.node[NODE_A].md;
    params.mds.count  = 1;
    params.name       = "test";
    GDA_FT_ASSERT_OK(uct_mem_alloc(length, methods, 2, &params, &mem));
    GDA_FT_ASSERT_EQ(mem.method, UCT_ALLOC_METHOD_HEAP);
    GDA_FT_ASSERT_OK(uct_md_mem_reg(t.node[NODE_A].md, mem.address,
                                    mem.length, UCT_MD_MEM_ACCESS_ALL,
                                    &memh));
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(t.node[NODE_A].md, memh));
    GDA_FT_ASSERT_OK(uct_mem_free(&mem));
    test_uct_cleanup(&t);
}

static unsigned test_log_switch_warnings;
static unsigned test_log_switch_diags;

/* Counts warnings (test_log_switch_warnings) and the diagnostics that
 * report a switch to the backup path, prints nothing else */
static ucs_log_func_rc_t
test_log_level_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    char buf[512];

    vsnprintf(buf, sizeof(buf), message, ap);
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++test_log_switch_warnings;
        printf("%s: %s\n", ucs_log_level_names[level], buf);
    } else if ((level == UCS_LOG_LEVEL_DIAG) &&
               (strstr(buf, "switched to the backup path") != NULL)) {
        ++test_log_switch_diags;
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/*
 * A switch to the backup path that the endpoint survives is what gda_ft is
 * for: UCX's convention for such an event is a diagnostic (UCX's own
 * peer-failure tests fail on any warning), and the counters keep the
 * record. Warnings and errors stay for what the user must know: atomics in
 * doubt, no path left.
 */
GDA_FT_TEST(uct_conform, survived_switch_is_a_diagnostic_not_a_warning)
{
    test_counters_t counters;
    uint64_t value = 7;
    test_uct_t t;
    unsigned i;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_DIAG;
    test_log_switch_warnings = 0;
    test_log_switch_diags    = 0;
    ucs_log_push_handler(test_log_level_handler);
    test_port_set(&t, "tsoft0", 0);
    for (i = 0; i < 100; ++i) {
        value = 0x2000 + i;
        GDA_FT_ASSERT_OK(test_put_short(&t, &value, 8, 8 * i));
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    ucs_log_pop_handler();

    for (i = 0; i < 100; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 0x2000 + i);
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 0);
    GDA_FT_ASSERT_EQ(test_log_switch_diags, 1);
    GDA_FT_ASSERT_EQ(test_log_switch_warnings, 0);
    test_uct_cleanup(&t);
}

static char test_log_errors[2048];

/* Keeps the errors, prints nothing */
static ucs_log_func_rc_t
test_log_error_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    size_t used = strlen(test_log_errors);

    if (level == UCS_LOG_LEVEL_ERROR) {
        vsnprintf(test_log_errors + used, sizeof(test_log_errors) - used,
                  message, ap);
        used = strlen(test_log_errors);
        snprintf(test_log_errors + used, sizeof(test_log_errors) - used,
                 "\n");
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* A second process given the same soft device (its UDP address taken, here
 * by a socket of ours): opening the MD fails as busy, with an error that
 * names the address and port and says what to do */
GDA_FT_TEST(uct_conform, soft_address_in_use_is_a_clear_error)
{
    uct_md_config_t *md_config;
    struct sockaddr_in sa;
    char expect[64];
    const char *spec;
    ucs_status_t status;
    uct_md_h md;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, NULL);
    spec = getenv("UCX_GDA_FT_SOFT_DEVICES");   /* tsoft0=127.0.0.1:PORT */
    GDA_FT_ASSERT(spec != NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(0x7f000001);
    sa.sin_port        = htons(atoi(strchr(spec, ':') + 1));
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    GDA_FT_ASSERT(fd >= 0);
    GDA_FT_ASSERT_EQ(bind(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);

    test_log_errors[0] = '\0';
    GDA_FT_ASSERT_OK(uct_md_config_read(t.comp, NULL, NULL, &md_config));
    ucs_log_push_handler(test_log_error_handler);
    status = uct_md_open(t.comp, "gda_ft_tsoft0", md_config, &md);
    ucs_log_pop_handler();
    uct_config_release(md_config);
    printf("%s", test_log_errors);
    GDA_FT_ASSERT_EQ(status, UCS_ERR_BUSY);
    snprintf(expect, sizeof(expect), "127.0.0.1:%u is in use",
             ntohs(sa.sin_port));
    GDA_FT_ASSERT(strstr(test_log_errors, expect) != NULL);
    GDA_FT_ASSERT(strstr(test_log_errors, "tsoft0") != NULL);
    GDA_FT_ASSERT(strstr(test_log_errors, "UCX_GDA_FT_SOFT_DEVICES") != NULL);

    /* once the address is free, the same MD opens */
    close(fd);
    GDA_FT_ASSERT_OK(uct_md_config_read(t.comp, NULL, NULL, &md_config));
    GDA_FT_ASSERT_OK(uct_md_open(t.comp, "gda_ft_tsoft0", md_config, &md));
    uct_config_release(md_config);
    uct_md_close(md);
}

/* Whether an interface's estimates reach the peer unchanged in a v2
 * address: ucp_address_pack_iface_attr_v2() and its unpack, with one
 * process per node */
static void test_assert_v2_round_trip(const char *what, double latency,
                                      double overhead, double bandwidth)
{
    double lat_ns = latency * UCS_NSEC_PER_SEC;
    double ovh_ns = overhead * UCS_NSEC_PER_SEC;
    double lat, ovh, bw;

    lat = UCS_FP8_UNPACK(LATENCY, UCS_FP8_PACK(LATENCY, lat_ns));
    ovh = UCS_FP8_UNPACK(OVERHEAD, UCS_FP8_PACK(OVERHEAD, ovh_ns));
    bw  = UCS_FP8_UNPACK(BANDWIDTH, UCS_FP8_PACK(BANDWIDTH, bandwidth));
    printf("%s: latency %.0f -> %.0f ns, overhead %.0f -> %.0f ns, "
           "bandwidth %.0f -> %.0f MiB/s\n", what, lat_ns, lat, ovh_ns, ovh,
           bandwidth / UCS_MBYTE, bw / UCS_MBYTE);
    if ((lat != lat_ns) || (ovh != ovh_ns) || (bw != bandwidth)) {
        GDA_FT_FAIL("%s: the v2 address does not carry these estimates",
                    what);
    }
}

static void test_assert_iface_v2(const char *what,
                                 const uct_iface_attr_t *attr)
{
    GDA_FT_ASSERT(attr->latency.m == 0);
    test_assert_v2_round_trip(what, attr->latency.c, attr->overhead,
                              attr->bandwidth.dedicated +
                              attr->bandwidth.shared);
}

/*
 * UCX_ADDRESS_VERSION=v2 packs latency, overhead and bandwidth in a byte
 * each: gda_ft's estimates (the soft HCA's, a hardware HCA's, the
 * out-of-band channel's) are values it carries exactly, so the peer picks
 * lanes by the numbers this side uses. Was: the soft HCA's 450 MiB/s
 * arrived as almost 0 B/s, the channel's 1 ms as 65 us.
 */
GDA_FT_TEST(uct_conform, estimates_survive_the_v2_address)
{
    test_uct_t t;

    /* What this UCX makes of values outside the byte's range (1.13: 450
     * MiB/s became 0 and 1 ms 65 us; later versions clamp differently):
     * printed, since it is UCX's behaviour, not gda_ft's */
    printf("this UCX packs 450 MiB/s as %.0f MiB/s and 1 ms as %.0f ns\n",
           UCS_FP8_UNPACK(BANDWIDTH, UCS_FP8_PACK(BANDWIDTH,
                                                  450.0 * UCS_MBYTE)) /
           UCS_MBYTE,
           UCS_FP8_UNPACK(LATENCY, UCS_FP8_PACK(LATENCY, 1e6)));

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_assert_iface_v2("soft HCA", &t.node[NODE_A].iface_attr);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_assert_iface_v2("out-of-band", &t.node[NODE_A].iface_attr);
    test_oob_cleanup(&t);

    /* no hardware HCA here: its estimates as iface_query reports them */
    test_assert_v2_round_trip("hardware HCA", UCT_GDA_FT_PERF_HW_LATENCY,
                              UCT_GDA_FT_PERF_HW_OVERHEAD,
                              UCT_GDA_FT_PERF_HW_BANDWIDTH);
}

/* The guardian settles failovers and fails back: an interval that never
 * comes is refused when the interface opens, with its reason */
