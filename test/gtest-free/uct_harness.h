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
#include "gda_ft_ep.h"

#include <uct/api/uct.h>
#include <ucs/async/async.h>

#define NODE_A   0
#define NODE_B   1
#define BUF_SIZE (1024 * 1024)


typedef gda_ft_dev_ep_counters_t test_counters_t;

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

#endif
