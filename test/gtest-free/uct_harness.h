/*
 * A world of two gda_ft UCT nodes in one process, on software HCAs tsoft0..3:
 * node A is the MD gda_ft_tsoft0 (device tsoft0:1, backup tsoft1), node B
 * the MD gda_ft_tsoft2 (tsoft2:1, backup tsoft3); their endpoints are
 * connected to each other, so that the primary path runs tsoft0 <-> tsoft2
 * and the backup path tsoft1 <-> tsoft3. Shared by the UCT tests.
 *
 * The plugin is the built libuct_gda_ft.so, loaded with dlopen() as UCX
 * programs preload it: its constructor registers the component with libuct.
 */
#ifndef GDA_FT_UCT_HARNESS_H_
#define GDA_FT_UCT_HARNESS_H_

#include "gda_ft_test.h"
#include "soft_harness.h"
#include "gda_ft_chan_types.h"
#include "uct_gda_ft_counters.h"

#include <uct/api/uct.h>
#include <ucs/async/async.h>

#define NODE_A   0
#define NODE_B   1
#define BUF_SIZE (1024 * 1024)


typedef uct_gda_ft_ep_counters_t test_counters_t;

typedef ucs_status_t (*query_counters_func_t)(uct_ep_h, test_counters_t*);
typedef ucs_status_t (*query_iface_counters_func_t)(uct_iface_h,
                                                    test_counters_t*);
typedef gda_ft_hca_dev_t *(*soft_dev_find_func_t)(const char*);
typedef ucs_status_t (*soft_port_set_fault_func_t)(
        gda_ft_hca_dev_t*, uint8_t, const gda_ft_soft_fault_t*);
typedef ucs_status_t (*soft_port_set_up_func_t)(gda_ft_hca_dev_t*, uint8_t,
                                                int);

typedef struct {
    const char       *md_name;
    const char       *dev_name;
    uct_md_h          md;
    uct_md_attr_t     md_attr;
    ucs_async_context_t *async;
    uct_worker_h      worker;
    uct_iface_h       iface;
    uct_iface_attr_t  iface_attr;
    uct_ep_h          ep;
    uint8_t          *buf;       /* registered, BUF_SIZE */
    uct_mem_h         memh;
    uint8_t           rkey_buf[64];
    unsigned          errors;    /* error handler calls */
    ucs_status_t      last_error;
} test_node_t;

typedef struct {
    void                   *plugin;
    uct_component_h         comp;
    test_node_t             node[2];
    uct_rkey_bundle_t       rkey[2]; /* rkey[i]: node i's memory */
    query_counters_func_t   query_counters;
    query_iface_counters_func_t query_iface_counters;
} test_uct_t;

typedef struct {
    uct_completion_t super;
    unsigned         calls;
} test_comp_t;



/* The plugin test_uct_env() loads; a test may pick the one built with
 * UCX's data tracing compiled in */
extern const char *test_uct_plugin;

/* Completion counter: comp->calls once comp->super.count reaches 0 */
void test_comp_init(test_comp_t *comp, int count);

/* Declares tsoft0..3, loads the plugin; extra: "VAR=value" settings, NULL
 * last */
void test_uct_env(test_uct_t *t, unsigned ndev, ...);

/* What the host channel of `node`'s endpoint has been through */
void test_host_channel_query(test_uct_t *t, unsigned node,
                             gda_ft_chan_query_t *q);

/* Opens MD md_name and an interface on dev_name; a failure to open the
 * interface is returned, with everything else released again */
ucs_status_t test_node_try_open(test_uct_t *t, test_node_t *node,
                                const char *md_name, const char *dev_name);
void test_node_open(test_uct_t *t, test_node_t *node, const char *md_name,
                    const char *dev_name);
void test_node_close(test_uct_t *t, test_node_t *node);
void test_connect(test_uct_t *t);

/* A on tsoft0 (backup tsoft1), B on tsoft2 (backup tsoft3), connected */
void test_uct_setup(test_uct_t *t);
void test_uct_cleanup(test_uct_t *t);
/* Progresses both nodes (a node closed by its test has no worker) */
unsigned test_progress(test_uct_t *t);

/* Flushes A's endpoint and waits for the flush to complete */
ucs_status_t test_flush(test_uct_t *t);

/* B's buffer, as A reaches it */
uint64_t raddr_b(test_uct_t *t, size_t offset);
uct_rkey_t rkey_b(test_uct_t *t);

/* Port 1 of software HCA `dev` up or down */
void test_port_set(test_uct_t *t, const char *dev, int up);

/* Port 1 of software HCA `dev` under `fault` */
void test_port_set_fault(test_uct_t *t, const char *dev,
                         const gda_ft_soft_fault_t *fault);

/* Loses every answer (ACKs, read and atomic responses) a port sends */
void test_port_lose_answers(test_uct_t *t, const char *dev);

/* Progresses until *cond is non-zero; fails after timeout_ms */
#define TEST_WAIT(_t, _cond, _timeout_ms) \
    do { \
        double __deadline = soft_now_sec() + (_timeout_ms) * 1e-3; \
        while (!(_cond)) { \
            if (soft_now_sec() > __deadline) { \
                GDA_FT_FAIL("timeout waiting for %s", #_cond); \
            } \
            if (test_progress(_t) == 0) { \
                usleep(10); \
            } \
        } \
    } while (0)


/* Shared by the test files of the UCT transport (test_uct_*.c) */

/* What a put_bcopy's pack callback (test_pack_cb) copies from */
typedef struct {
    const uint8_t *src;
    size_t         length;
} test_pack_arg_t;

size_t test_pack_cb(void *dest, void *arg);

/* Where a get_bcopy's unpack callback (test_unpack_cb) copies to */
typedef struct {
    uint8_t *dest;
    size_t   length;
    unsigned calls;
} test_unpack_arg_t;

/* A pending request that puts `value` at B's `offset` (test_pending_cb) */
typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint64_t          value;
    size_t            offset;
    unsigned          calls;
    unsigned          purged;
} test_pending_t;

void test_unpack_cb(void *arg, const void *data, size_t length);

ucs_status_t test_pending_cb(uct_pending_req_t *self);

/* put_short of length bytes from A into B's buffer at offset, progressing
 * while A's endpoint has no resources; returns the status it ended with */
ucs_status_t test_put_short(test_uct_t *t, const void *data, unsigned length,
                            size_t offset);

/* Puts value into B's 8-byte slot, flushes, checks it landed */
void test_put_word(test_uct_t *t, unsigned slot, uint64_t value);

/* Puts until *counter, a field of *c (A's counters, refreshed), reaches
 * the value; returns how long it took */
double test_put_until(test_uct_t *t, unsigned *slot, test_counters_t *c,
                      const uint32_t *counter, uint32_t value);

/* Opens another interface on a node's device with AM alignment parameters
 * (field_mask: which of them), closes it; returns the status */
ucs_status_t test_open_aligned(test_uct_t *t, test_node_t *node,
                               uint64_t field_mask, size_t align,
                               size_t offset);

/* ---- out-of-band wireup channel ------------------------------------------ */

/* UCX 1.13 names no synchronous flag: a handler without ASYNC is one */
#define TEST_CB_SYNC 0

typedef struct {
    unsigned  calls;
    uint32_t  next;      /* sequence number expected next */
    unsigned  bad;       /* out of order or wrong content */
    pthread_t thread;    /* that ran the last call */
} test_oob_rx_t;

typedef struct {
    uint32_t seq;
    size_t   length;
} test_oob_msg_t;

uint8_t test_oob_byte(uint32_t seq, size_t i);

size_t test_oob_pack(void *dest, void *arg);

ucs_status_t test_oob_am_cb(void *arg, void *data, size_t length,
                            unsigned flags);

/* Sends from A, progressing both sides while A's queue is full */
void test_oob_send(test_uct_t *t, uint8_t am_id, uint32_t seq,
                   size_t length);

/* A's endpoint to B's interface, both the out-of-band channel */
void test_oob_setup(test_uct_t *t);

/* Another endpoint of A's to B's out-of-band interface */
uct_ep_h test_oob_ep_create(test_uct_t *t);

void test_oob_cleanup(test_uct_t *t);

/* ---- active messages ----------------------------------------------------- */

#define TEST_AM_ID        7

#define TEST_AM_MAX_LAST  (64 * 1024)

/* uct_gda_ft_am_counters_t of uct_gda_ft_iface.h */
typedef struct {
    uint32_t sent;
    uint32_t received;
    uint32_t duplicates;
    uint32_t reordered;
    uint32_t gaps;
} test_am_counters_t;

typedef ucs_status_t (*query_am_counters_func_t)(uct_ep_h,
                                                 test_am_counters_t*);

typedef struct {
    unsigned count;        /* messages delivered */
    unsigned errors;       /* content or order mismatches, DESC flags */
    uint64_t next;         /* stream: sequence number expected next */
    size_t   last_len;
    uint8_t  last[TEST_AM_MAX_LAST];
} test_am_rx_t;

typedef struct {
    const uint8_t *src;
    size_t         length;
} test_am_pack_t;

ucs_status_t test_am_cb(void *arg, void *data, size_t length,
                        unsigned flags);

/* Stream messages start with their 8-byte sequence number; the rest of a
 * message is soft_fill()ed with the sequence number as the seed */
ucs_status_t test_am_stream_cb(void *arg, void *data, size_t length,
                               unsigned flags);

size_t test_am_pack(void *dest, void *arg);

void test_am_set_handler(test_uct_t *t, unsigned node,
                         uct_am_callback_t cb, test_am_rx_t *rx);

void test_am_counters(test_uct_t *t, unsigned node,
                      test_am_counters_t *c);

void test_am_short(test_uct_t *t, uint64_t header, const void *payload,
                   unsigned length);

void test_am_bcopy(test_uct_t *t, const void *data, size_t length);

/* Message `seq` of a stream: am_short or am_bcopy of varying sizes */
void test_am_stream_send(test_uct_t *t, uint64_t seq);

/* A failover before the fault would make the rest meaningless */
void test_assert_no_switch(test_uct_t *t, const char *when);

#endif
