/*
 * gda_ft_ucp_ext_check: src/ucp_ext's host API from one process. Contexts
 * A and B (UCX_TLS=gda_ft,tcp, device channels) are connected both ways;
 * context C has tcp alone. It checks that a device endpoint and a memory
 * list built from A's endpoint carry the right keys and move data (a CPU
 * thread's put_signal and fetch-add into B), and that each bad input gets
 * its status: an endpoint without a gda_ft lane, memory not registered on
 * gda_ft, a foreign or corrupt remote key, host memory for a kernel, an
 * element outside its registration, a local address without its handle.
 * Prints "RESULT PASS" and exits 0 when every check holds.
 */
#include "gda_ft_ucp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_REGION 65536

typedef struct {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    uint8_t      *buf;
    ucp_mem_h     memh;
    void         *rkey_buf;
    size_t        rkey_len;
} check_node_t;

static unsigned check_failures;

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAILED (line %d): ", __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
            ++check_failures; \
        } \
    } while (0)

#define CHECK_STATUS(_expr, _expected) \
    do { \
        ucs_status_t _s = (_expr); \
        CHECK(_s == (_expected), "%s: %s, not %s", #_expr, \
              ucs_status_string(_s), ucs_status_string(_expected)); \
    } while (0)

static void check_die(const char *what, ucs_status_t status)
{
    printf("%s: %s\nRESULT FAIL\n", what, ucs_status_string(status));
    exit(1);
}

static void check_node_init(check_node_t *n, const char *tls)
{
    ucp_worker_params_t wparams = {0};
    ucp_mem_map_params_t mparams = {0};
    ucp_params_t params = {0};
    ucp_config_t *config;
    ucs_status_t status;

    memset(n, 0, sizeof(*n));
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        check_die("ucp_config_read", status);
    }
    ucp_config_modify(config, "TLS", tls);
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    status = ucp_init(&params, config, &n->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        check_die("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(n->context, &wparams, &n->worker);
    if (status != UCS_OK) {
        check_die("ucp_worker_create", status);
    }

    n->buf             = calloc(1, CHECK_REGION);
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = n->buf;
    mparams.length     = CHECK_REGION;
    status = ucp_mem_map(n->context, &mparams, &n->memh);
    if (status != UCS_OK) {
        check_die("ucp_mem_map", status);
    }
    status = ucp_rkey_pack(n->context, n->memh, &n->rkey_buf, &n->rkey_len);
    if (status != UCS_OK) {
        check_die("ucp_rkey_pack", status);
    }
}

static void check_node_fini(check_node_t *n)
{
    ucp_request_param_t param = {0};
    void *req;

    if (n->ep != NULL) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        req = ucp_ep_close_nbx(n->ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(n->worker);
            }
            ucp_request_free(req);
        }
    }
    ucp_rkey_buffer_release(n->rkey_buf);
    ucp_mem_unmap(n->context, n->memh);
    free(n->buf);
    ucp_worker_destroy(n->worker);
    ucp_cleanup(n->context);
}

/* from's endpoint to to's worker */
static void check_connect(check_node_t *from, check_node_t *to)
{
    ucp_ep_params_t eparams = {0};
    ucp_address_t *addr;
    size_t len;
    ucs_status_t status;

    status = ucp_worker_get_address(to->worker, &addr, &len);
    if (status != UCS_OK) {
        check_die("ucp_worker_get_address", status);
    }
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    status = ucp_ep_create(from->worker, &eparams, &from->ep);
    ucp_worker_release_address(to->worker, addr);
    if (status != UCS_OK) {
        check_die("ucp_ep_create", status);
    }
}

/* Flushes a's endpoint, progressing both workers, until it is wired up */
static void check_wireup(check_node_t *a, check_node_t *b)
{
    ucp_request_param_t param = {0};
    void *req = ucp_ep_flush_nbx(a->ep, &param);

    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(a->worker);
            ucp_worker_progress(b->worker);
        }
        ucp_request_free(req);
    }
}

/* a's device endpoint to b: its channels are handed out once both ends
 * connected them, which takes b's progress too */
static ucs_status_t check_device_ep(check_node_t *a, check_node_t *b,
                                    gda_ft_ucp_device_ep_h *dev_ep_p)
{
    ucs_status_t status;
    unsigned i;

    for (;;) {
        status = gda_ft_ucp_device_ep_create(a->ep, GDA_FT_UCP_PLACE_HOST,
                                             dev_ep_p);
        if (status != UCS_ERR_NOT_CONNECTED) {
            return status;
        }
        for (i = 0; i < 1000; ++i) {
            ucp_worker_progress(b->worker);
        }
    }
}

static void check_elem(gda_ft_ucp_mem_elem_t *e, ucp_mem_h memh, void *local,
                       size_t length, ucp_rkey_h rkey, uint64_t remote)
{
    memset(e, 0, sizeof(*e));
    e->memh        = memh;
    e->local_addr  = local;
    e->length      = length;
    e->rkey        = rkey;
    e->remote_addr = remote;
}

/* One list of one element: its status */
static ucs_status_t check_list(ucp_ep_h ep, const gda_ft_ucp_mem_elem_t *e,
                               gda_ft_ucp_place_t place)
{
    gda_ft_ucp_mem_list_h ml = NULL;
    ucs_status_t status;

    status = gda_ft_ucp_mem_list_create(ep, e, 1, place, &ml);
    if (status == UCS_OK) {
        gda_ft_ucp_mem_list_destroy(ml);
    } else {
        CHECK(ml == NULL, "a failed list was handed out");
    }
    return status;
}

/* The outcome of a posted request, progressing both workers meanwhile */
static gda_ft_dev_status_t check_complete(gda_ft_dev_status_t posted,
                                          gda_ft_dev_request_t *req,
                                          check_node_t *a, check_node_t *b)
{
    gda_ft_dev_status_t st = posted;

    while (st == GDA_FT_DEV_OK) {
        st = gda_ft_dev_progress(req);
        if (st != GDA_FT_DEV_INPROGRESS) {
            break;
        }
        st = GDA_FT_DEV_OK;
        ucp_worker_progress(a->worker);
        ucp_worker_progress(b->worker);
    }
    return st;
}

/* A put_signal and a fetch-add from this thread into b, through the
 * device endpoint and list built from a's endpoint */
static void check_datapath(check_node_t *a, check_node_t *b,
                           ucp_rkey_h rkey)
{
    const gda_ft_dev_endpoint_t *dep;
    const gda_ft_dev_mem_list_t *ml;
    gda_ft_ucp_device_ep_attr_t attr;
    gda_ft_ucp_device_ep_h dev_ep;
    gda_ft_ucp_mem_list_h list;
    gda_ft_ucp_mem_elem_t e[2];
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t st;
    unsigned i;

    CHECK_STATUS(check_device_ep(a, b, &dev_ep), UCS_OK);
    if (check_failures != 0) {
        return;
    }
    dep = gda_ft_ucp_device_ep(dev_ep);
    CHECK(dep->num_channels == 2, "%u channels, not 2", dep->num_channels);

    /* which HCAs carry the paths, and how many channels, from the host */
    CHECK_STATUS(gda_ft_ucp_device_ep_attr(dev_ep, &attr), UCS_OK);
    CHECK(attr.num_channels == 2, "attr: %u channels, not 2",
          attr.num_channels);
    CHECK((attr.path[0].device[0] == 't') && (attr.path[1].device[0] == 't') &&
          strcmp(attr.path[0].device, attr.path[1].device) &&
          (attr.path[0].port == 1) && (attr.path[1].port == 1),
          "attr: paths %s:%u and %s:%u", attr.path[0].device,
          attr.path[0].port, attr.path[1].device, attr.path[1].port);
    printf("paths: primary %s:%u, backup %s:%u, %u channels\n",
           attr.path[0].device, attr.path[0].port, attr.path[1].device,
           attr.path[1].port, attr.num_channels);

    for (i = 0; i < 256; ++i) {
        a->buf[i] = (uint8_t)(i * 7 + 1);
    }
    /* data: a's [0, 256) -> b's [1024, 1280); counter: b's word at 4096,
     * the old value to a's word at 8192 */
    check_elem(&e[0], a->memh, a->buf, 256, rkey,
               (uintptr_t)b->buf + 1024);
    check_elem(&e[1], a->memh, a->buf + 8192, 8, rkey,
               (uintptr_t)b->buf + 4096);
    CHECK_STATUS(gda_ft_ucp_mem_list_create(a->ep, e, 2,
                                            GDA_FT_UCP_PLACE_HOST, &list),
                 UCS_OK);
    if (check_failures != 0) {
        gda_ft_ucp_device_ep_destroy(dev_ep);
        return;
    }
    ml = gda_ft_ucp_mem_list(list);
    CHECK(ml->count == 2, "list of %u elements", ml->count);

    *(uint64_t*)(b->buf + 4096) = 41;
    st = check_complete(gda_ft_dev_put_signal(dep, ml, 0, 0, 0, 256, 1, 0,
                                              1, 1, &req), &req, a, b);
    CHECK(st == GDA_FT_DEV_OK, "put_signal: status %d", st);
    CHECK(!memcmp(b->buf + 1024, a->buf, 256), "put data differs");
    CHECK(*(uint64_t*)(b->buf + 4096) == 42, "signal: %lu, not 42",
          (unsigned long)*(uint64_t*)(b->buf + 4096));

    st = check_complete(gda_ft_dev_atomic_fetch_add(dep, ml, 1, 0, 0, 10,
                                                    0, &req), &req, a, b);
    CHECK(st == GDA_FT_DEV_OK, "fetch-add: status %d", st);
    CHECK(gda_ft_dev_fetched(dep, a->buf + 8192) == 42, "fetched %lu, not 42",
          (unsigned long)gda_ft_dev_fetched(dep, a->buf + 8192));
    CHECK(*(uint64_t*)(b->buf + 4096) == 52, "counter: %lu, not 52",
          (unsigned long)*(uint64_t*)(b->buf + 4096));

    gda_ft_ucp_mem_list_destroy(list);

    /* lengths per end: one local result word beside the peer's two
     * counter words; a remote offset past the peer's part is refused
     * before anything is posted, and so is one past the local part's */
    check_elem(&e[0], a->memh, a->buf + 8192, 8, rkey,
               (uintptr_t)b->buf + 4096);
    e[0].remote_length = 16;
    CHECK_STATUS(gda_ft_ucp_mem_list_create(a->ep, e, 1,
                                            GDA_FT_UCP_PLACE_HOST, &list),
                 UCS_OK);
    if (check_failures == 0) {
        ml = gda_ft_ucp_mem_list(list);
        *(uint64_t*)(b->buf + 4104) = 7;
        st = check_complete(gda_ft_dev_atomic_fetch_add(dep, ml, 0, 0, 8, 1,
                                                        0, &req), &req, a,
                            b);
        CHECK(st == GDA_FT_DEV_OK, "fetch-add at remote offset 8: status %d",
              st);
        CHECK(gda_ft_dev_fetched(dep, a->buf + 8192) == 7,
              "fetched %lu, not 7",
              (unsigned long)gda_ft_dev_fetched(dep, a->buf + 8192));
        CHECK(*(uint64_t*)(b->buf + 4104) == 8, "second counter: %lu",
              (unsigned long)*(uint64_t*)(b->buf + 4104));
        st = gda_ft_dev_atomic_fetch_add(dep, ml, 0, 0, 16, 1, 0, &req);
        CHECK(st == GDA_FT_DEV_ERROR, "remote offset 16 of 16: status %d",
              st);
        st = gda_ft_dev_atomic_fetch_add(dep, ml, 0, 8, 0, 1, 0, &req);
        CHECK(st == GDA_FT_DEV_ERROR, "local offset 8 of 8: status %d", st);
        CHECK(*(uint64_t*)(b->buf + 4096) == 52, "first counter: %lu",
              (unsigned long)*(uint64_t*)(b->buf + 4096));
        gda_ft_ucp_mem_list_destroy(list);
    }

    /* without remote_length, the peer's part is as long as the local */
    e[0].remote_length = 0;
    CHECK_STATUS(gda_ft_ucp_mem_list_create(a->ep, e, 1,
                                            GDA_FT_UCP_PLACE_HOST, &list),
                 UCS_OK);
    if (check_failures == 0) {
        ml = gda_ft_ucp_mem_list(list);
        st = gda_ft_dev_atomic_fetch_add(dep, ml, 0, 0, 8, 1, 0, &req);
        CHECK(st == GDA_FT_DEV_ERROR, "remote offset 8 of 8: status %d", st);
        gda_ft_ucp_mem_list_destroy(list);
    }
    gda_ft_ucp_device_ep_destroy(dev_ep);
}

/* A device endpoint outlives its UCP endpoint: UCP may destroy an endpoint
 * that failed while kernels still post into its channels */
static void check_outlives_ep(check_node_t *a, check_node_t *b,
                              ucp_rkey_h rkey)
{
    ucp_request_param_t param = {0};
    gda_ft_ucp_device_ep_h dev_ep;
    gda_ft_ucp_mem_list_h list;
    gda_ft_ucp_mem_elem_t e;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t st;
    void *close_req;

    check_elem(&e, a->memh, a->buf, 128, rkey, (uintptr_t)b->buf + 2048);
    if (check_device_ep(a, b, &dev_ep) != UCS_OK) {
        CHECK(0, "no device endpoint");
        return;
    }
    if (gda_ft_ucp_mem_list_create(a->ep, &e, 1, GDA_FT_UCP_PLACE_HOST,
                                   &list) != UCS_OK) {
        CHECK(0, "no memory list");
        gda_ft_ucp_device_ep_destroy(dev_ep);
        return;
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    close_req          = ucp_ep_close_nbx(a->ep, &param);
    if (UCS_PTR_IS_PTR(close_req)) {
        while (ucp_request_check_status(close_req) == UCS_INPROGRESS) {
            ucp_worker_progress(a->worker);
        }
        ucp_request_free(close_req);
    }
    a->ep = NULL;

    st = check_complete(gda_ft_dev_put_single(gda_ft_ucp_device_ep(dev_ep),
                                              gda_ft_ucp_mem_list(list), 0,
                                              0, 0, 128, 0, &req),
                        &req, b, b);
    CHECK(st == GDA_FT_DEV_OK, "put after the endpoint's close: status %d",
          st);
    CHECK(!memcmp(b->buf + 2048, a->buf, 128), "put data differs");
    gda_ft_ucp_mem_list_destroy(list);
    gda_ft_ucp_device_ep_destroy(dev_ep);
}

int main(void)
{
    gda_ft_ucp_device_ep_h dev_ep;
    gda_ft_ucp_signal_mem_t sig;
    check_node_t a, b, c;
    gda_ft_ucp_mem_elem_t e;
    ucp_rkey_h rkey, rkey_c;
    uint8_t *bad_rkey;
    ucs_status_t status;
    size_t i;

    setenv("UCX_GDA_FT_DEVICE_CHANNELS", "2", 0);
    setenv("UCX_GDA_FT_DEADLINE", "2s", 0);     /* slow under valgrind */
    setenv("UCX_GDA_FT_DEVICE_CHANNEL_RINGS", "host", 0);
    check_node_init(&a, "gda_ft,tcp");
    check_node_init(&b, "gda_ft,tcp");
    check_node_init(&c, "tcp");
    check_connect(&a, &b);
    check_connect(&b, &a);
    check_connect(&c, &b);
    check_wireup(&a, &b);
    check_wireup(&b, &a);
    check_wireup(&c, &b);

    status = ucp_ep_rkey_unpack(a.ep, b.rkey_buf, &rkey);
    if (status != UCS_OK) {
        check_die("ucp_ep_rkey_unpack", status);
    }

    /* the good path, with data */
    check_datapath(&a, &b, rkey);

    /* an endpoint without a gda_ft lane */
    CHECK_STATUS(gda_ft_ucp_device_ep_create(c.ep, GDA_FT_UCP_PLACE_HOST,
                                             &dev_ep), UCS_ERR_UNSUPPORTED);
    check_elem(&e, a.memh, a.buf, 64, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(gda_ft_ucp_mem_list_create(c.ep, &e, 1,
                                            GDA_FT_UCP_PLACE_HOST, NULL),
                 UCS_ERR_INVALID_PARAM);
    CHECK_STATUS(check_list(c.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_UNSUPPORTED);

    /* memory registered elsewhere (a context without gda_ft) */
    check_elem(&e, c.memh, c.buf, 64, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);

    /* elements outside their registration, and without a handle */
    check_elem(&e, a.memh, a.buf + CHECK_REGION - 8, 64, rkey,
               (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);
    check_elem(&e, a.memh, a.buf - 64, 64, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);
    check_elem(&e, a.memh, a.buf, SIZE_MAX, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);
    check_elem(&e, NULL, a.buf, 64, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);
    check_elem(&e, a.memh, a.buf, 64, NULL, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                 UCS_ERR_INVALID_PARAM);

    /* host memory where a kernel needs GPU memory: refused before any
     * CUDA call, so on any machine */
    check_elem(&e, a.memh, a.buf, 64, rkey, (uintptr_t)b.buf);
    CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_CUDA),
                 UCS_ERR_INVALID_PARAM);

    /* a remote key of memory the peer registered without gda_ft */
    status = ucp_ep_rkey_unpack(a.ep, c.rkey_buf, &rkey_c);
    if (status == UCS_OK) {
        check_elem(&e, a.memh, a.buf, 64, rkey_c, (uintptr_t)b.buf);
        CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                     UCS_ERR_UNREACHABLE);
        ucp_rkey_destroy(rkey_c);
    }

    /* a remote key whose gda_ft part is corrupt: the transport refuses its
     * part (an error is logged), and a list refuses the rest */
    bad_rkey = malloc(b.rkey_len);
    memcpy(bad_rkey, b.rkey_buf, b.rkey_len);
    for (i = 0; i + 16 <= b.rkey_len; ++i) {
        if ((bad_rkey[i] == 0x67) && (bad_rkey[i + 1] == 0x46)) {
            bad_rkey[i + 4] ^= 0x01;    /* "gF": a bit of its primary key */
            break;
        }
    }
    CHECK(i + 16 <= b.rkey_len, "no gda_ft key in B's packed remote key");
    if (ucp_ep_rkey_unpack(a.ep, bad_rkey, &rkey_c) == UCS_OK) {
        check_elem(&e, a.memh, a.buf, 64, rkey_c, (uintptr_t)b.buf);
        CHECK_STATUS(check_list(a.ep, &e, GDA_FT_UCP_PLACE_HOST),
                     UCS_ERR_UNREACHABLE);
        ucp_rkey_destroy(rkey_c);
    }
    free(bad_rkey);

    /* signal memory */
    CHECK_STATUS(gda_ft_ucp_signal_alloc(a.context, 0, GDA_FT_UCP_PLACE_HOST,
                                         &sig), UCS_ERR_INVALID_PARAM);
    CHECK_STATUS(gda_ft_ucp_signal_alloc(a.context, 4096,
                                         GDA_FT_UCP_PLACE_HOST, &sig),
                 UCS_OK);
    if (sig.address != NULL) {
        CHECK(*(uint64_t*)sig.address == 0, "signal memory not zeroed");
        gda_ft_ucp_signal_free(a.context, &sig);
    }

    check_outlives_ep(&a, &b, rkey);
    ucp_rkey_destroy(rkey);
    check_node_fini(&c);
    check_node_fini(&a);
    check_node_fini(&b);
    printf("RESULT %s (%u failures)\n", check_failures ? "FAIL" : "PASS",
           check_failures);
    return check_failures ? 1 : 0;
}
