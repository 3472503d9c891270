/*
 * gda_ft_ucp_wakeup: a UCP worker that sleeps is woken over gda_ft. One
 * process, two workers of one context with UCP_FEATURE_WAKEUP, connected
 * to each other (UCX_TLS=gda_ft, soft HCAs from UCX_GDA_FT_SOFT_DEVICES):
 *
 *  - worker B, in a thread of its own, progresses, arms and sleeps in
 *    poll() on its event fd until an active message arrives; A sends it
 *    once B has slept 100 ms. B must have armed (UCS_OK) and been woken
 *    by the fd, not by poll's 10 s timeout.
 *  - worker A puts 64 KiB into B's memory and waits for its flush in
 *    ucp_worker_wait(), then checks the bytes.
 *
 * Prints "WAKEUP armed=N woken=N am=1 put=ok" and exits 0, or prints what
 * went wrong and exits 1.
 */
#include <ucp/api/ucp.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define WK_AM_ID     7
#define WK_PUT_SIZE  (64 * 1024)

typedef struct {
    ucp_worker_h worker;
    ucp_ep_h     ep;
} wk_peer_t;

static wk_peer_t wk_a, wk_b;
static volatile int wk_am_count;
static volatile int wk_b_armed;    /* B has armed and sleeps */
static unsigned wk_armed, wk_woken;

#define WK_CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
            exit(1); \
        } \
    } while (0)

static ucs_status_t wk_am_cb(void *arg, const void *header,
                             size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param)
{
    __atomic_add_fetch(&wk_am_count, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

/* Progresses both workers until the request completes */
static void wk_wait_both(void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return;
    }
    WK_CHECK(!UCS_PTR_IS_ERR(req), "request failed: %s",
             ucs_status_string(UCS_PTR_STATUS(req)));
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(wk_a.worker);
        ucp_worker_progress(wk_b.worker);
    }
    WK_CHECK(status == UCS_OK, "request ended: %s",
             ucs_status_string(status));
    ucp_request_free(req);
}

static void wk_connect(wk_peer_t *from, wk_peer_t *to)
{
    ucp_ep_params_t params = {0};
    ucp_address_t *addr;
    size_t len;

    WK_CHECK(ucp_worker_get_address(to->worker, &addr, &len) == UCS_OK,
             "ucp_worker_get_address");
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = addr;
    WK_CHECK(ucp_ep_create(from->worker, &params, &from->ep) == UCS_OK,
             "ucp_ep_create");
    ucp_worker_release_address(to->worker, addr);
}

/* B: progress, arm, sleep on the fd, until the message is there */
static void *wk_b_thread(void *arg)
{
    ucs_status_t status;
    struct pollfd pfd;
    int efd, ret;

    WK_CHECK(ucp_worker_get_efd(wk_b.worker, &efd) == UCS_OK,
             "ucp_worker_get_efd");
    while (__atomic_load_n(&wk_am_count, __ATOMIC_ACQUIRE) == 0) {
        if (ucp_worker_progress(wk_b.worker) != 0) {
            continue;
        }
        status = ucp_worker_arm(wk_b.worker);
        if (status == UCS_ERR_BUSY) {
            continue;
        }
        WK_CHECK(status == UCS_OK, "ucp_worker_arm: %s",
                 ucs_status_string(status));
        ++wk_armed;
        __atomic_store_n(&wk_b_armed, 1, __ATOMIC_RELEASE);
        pfd.fd     = efd;
        pfd.events = POLLIN;
        ret        = poll(&pfd, 1, 10000);
        WK_CHECK(ret == 1, "worker B was not woken in 10 s (poll: %d)",
                 ret);
        ++wk_woken;
    }
    return NULL;
}

int main(void)
{
    ucp_params_t params             = {0};
    ucp_worker_params_t wparams     = {0};
    ucp_am_handler_param_t am_param = {0};
    ucp_request_param_t rparam      = {0};
    ucp_mem_map_params_t mparams    = {0};
    ucp_context_h context;
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    pthread_t thread;
    uint64_t header = 0x1234;
    void *rkey_buf, *req;
    size_t rkey_len, i;
    uint8_t *src, *dst;
    ucs_status_t status;

    params.field_mask        = UCP_PARAM_FIELD_FEATURES |
                               UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features          = UCP_FEATURE_AM | UCP_FEATURE_RMA |
                               UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;
    WK_CHECK(ucp_init(&params, NULL, &context) == UCS_OK, "ucp_init");
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    WK_CHECK(ucp_worker_create(context, &wparams, &wk_a.worker) == UCS_OK,
             "ucp_worker_create");
    WK_CHECK(ucp_worker_create(context, &wparams, &wk_b.worker) == UCS_OK,
             "ucp_worker_create");

    am_param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                          UCP_AM_HANDLER_PARAM_FIELD_CB;
    am_param.id         = WK_AM_ID;
    am_param.cb         = wk_am_cb;
    WK_CHECK(ucp_worker_set_am_recv_handler(wk_b.worker, &am_param) ==
             UCS_OK, "ucp_worker_set_am_recv_handler");

    /* B's memory for A's put */
    dst                = calloc(1, WK_PUT_SIZE);
    src                = malloc(WK_PUT_SIZE);
    WK_CHECK((dst != NULL) && (src != NULL), "out of memory");
    for (i = 0; i < WK_PUT_SIZE; ++i) {
        src[i] = (uint8_t)(i * 7 + 3);
    }
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = dst;
    mparams.length     = WK_PUT_SIZE;
    WK_CHECK(ucp_mem_map(context, &mparams, &memh) == UCS_OK,
             "ucp_mem_map");
    WK_CHECK(ucp_rkey_pack(context, memh, &rkey_buf, &rkey_len) == UCS_OK,
             "ucp_rkey_pack");

    wk_connect(&wk_a, &wk_b);
    wk_connect(&wk_b, &wk_a);
    wk_wait_both(ucp_ep_flush_nbx(wk_a.ep, &rparam));
    wk_wait_both(ucp_ep_flush_nbx(wk_b.ep, &rparam));
    WK_CHECK(ucp_ep_rkey_unpack(wk_a.ep, rkey_buf, &rkey) == UCS_OK,
             "ucp_ep_rkey_unpack");

    /* B sleeps; A's active message wakes it */
    WK_CHECK(pthread_create(&thread, NULL, wk_b_thread, NULL) == 0,
             "pthread_create");
    while (!__atomic_load_n(&wk_b_armed, __ATOMIC_ACQUIRE)) {
        usleep(1000);
    }
    usleep(100000);
    req = ucp_am_send_nbx(wk_a.ep, WK_AM_ID, &header, sizeof(header), NULL,
                          0, &rparam);
    if (req != NULL) {
        WK_CHECK(!UCS_PTR_IS_ERR(req), "ucp_am_send_nbx: %s",
                 ucs_status_string(UCS_PTR_STATUS(req)));
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(wk_a.worker);
        }
        ucp_request_free(req);
    }
    pthread_join(thread, NULL);
    WK_CHECK(wk_am_count == 1, "%d active messages", wk_am_count);
    WK_CHECK((wk_armed > 0) && (wk_woken > 0), "armed %u, woken %u",
             wk_armed, wk_woken);

    /* A waits for its own put's flush in ucp_worker_wait() */
    req = ucp_put_nbx(wk_a.ep, src, WK_PUT_SIZE, (uintptr_t)dst, rkey,
                      &rparam);
    WK_CHECK(!UCS_PTR_IS_ERR(req), "ucp_put_nbx");
    if (req != NULL) {
        ucp_request_free(req);
    }
    req = ucp_ep_flush_nbx(wk_a.ep, &rparam);
    WK_CHECK(!UCS_PTR_IS_ERR(req), "ucp_ep_flush_nbx");
    while ((req != NULL) &&
           ((status = ucp_request_check_status(req)) == UCS_INPROGRESS)) {
        if (ucp_worker_progress(wk_a.worker) == 0) {
            status = ucp_worker_wait(wk_a.worker);
            WK_CHECK(status == UCS_OK, "ucp_worker_wait: %s",
                     ucs_status_string(status));
        }
    }
    if (req != NULL) {
        WK_CHECK(status == UCS_OK, "flush: %s", ucs_status_string(status));
        ucp_request_free(req);
    }
    WK_CHECK(memcmp(src, dst, WK_PUT_SIZE) == 0, "the put's bytes differ");

    printf("WAKEUP armed=%u woken=%u am=%d put=ok\n", wk_armed, wk_woken,
           wk_am_count);
    ucp_rkey_destroy(rkey);
    ucp_rkey_buffer_release(rkey_buf);
    ucp_mem_unmap(context, memh);
    wk_wait_both(ucp_ep_close_nbx(wk_a.ep, &rparam));
    wk_wait_both(ucp_ep_close_nbx(wk_b.ep, &rparam));
    ucp_worker_destroy(wk_b.worker);
    ucp_worker_destroy(wk_a.worker);
    ucp_cleanup(context);
    free(src);
    free(dst);
    return 0;
}
