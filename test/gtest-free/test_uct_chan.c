/*
 * Device channels of gda_ft UCT endpoints (UCX_GDA_FT_DEVICE_CHANNELS):
 * their count travels in the endpoint address and their QPs in the
 * endpoints' channel directories, exchanged after it; the endpoints'
 * guardians keep them alive. CPU threads post through the device API into the
 * channels of two connected UCT endpoints, both ways at once, while the
 * primary port of one node goes down and comes back.
 */
#include "uct_harness.h"
#include "chan_workers.h"
#include "chan_harness.h"   /* chan_world_time_scale */
#include <uct/ib/gda_ft/uct_gda_ft_md.h>   /* the lkeys of a memh */
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>  /* an endpoint's mailbox */
#include <ucs/debug/log.h>

#include <dlfcn.h>
#include <endian.h>
#include <string.h>
#include <unistd.h>


/* Each node's channel area: what its posters send and fetch into, and what
 * the peer's posters write */
#define AREA_SIZE     (2048 * 1024)
#define AREA_SRC      0
#define AREA_DST      (256 * 1024)
#define AREA_DATA_LEN (256 * 1024)
#define AREA_SIGNAL   (512 * 1024)
#define AREA_SIG_LEN  4096
#define AREA_COUNTER  (1024 * 1024)
#define AREA_RESULT   (1536 * 1024)
#define AREA_WORD_LEN (256 * 1024)   /* each poster's 512 result slots:
                                        32 posters */

#define TEST_POSTERS  4      /* per direction */

typedef ucs_status_t (*device_channels_func_t)(uct_ep_h, gda_ft_chan_t**,
                                               unsigned*);
typedef ucs_status_t (*query_channel_func_t)(uct_ep_h, unsigned,
                                             const gda_ft_chan_t*,
                                             gda_ft_chan_query_t*);
typedef uint32_t (*device_flags_func_t)(uct_ep_h);
typedef gda_ft_hca_qp_t *(*control_qp_func_t)(uct_ep_h, unsigned, int*);

typedef struct {
    test_uct_t             t;
    uint8_t               *area[2];
    uct_mem_h              memh[2];
    gda_ft_dev_mem_elem_t  elems[2][CHAN_ELEM_COUNT];
    chan_world_t           view[2];   /* node i posting into node 1 - i */
    device_channels_func_t device_channels;
    query_channel_func_t   query_channel;
    device_flags_func_t    device_flags;
    control_qp_func_t      control_qp;
} test_chan_t;


static void test_chan_env(test_chan_t *c, const char *channels)
{
    char setting[64];

    memset(c, 0, sizeof(*c));
    snprintf(setting, sizeof(setting), "UCX_GDA_FT_DEVICE_CHANNELS=%s",
             channels);
    test_uct_env(&c->t, 4, setting, "UCX_GDA_FT_DEADLINE=100ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=50ms", NULL);
    c->device_channels = (device_channels_func_t)dlsym(
            c->t.plugin, "uct_gda_ft_ep_device_channels");
    c->query_channel   = (query_channel_func_t)dlsym(
            c->t.plugin, "uct_gda_ft_ep_query_channel");
    c->device_flags    = (device_flags_func_t)dlsym(
            c->t.plugin, "uct_gda_ft_ep_device_flags");
    c->control_qp      = (control_qp_func_t)dlsym(
            c->t.plugin, "uct_gda_ft_ep_control_qp");
    GDA_FT_ASSERT((c->device_channels != NULL) &&
                  (c->query_channel != NULL) && (c->device_flags != NULL) &&
                  (c->control_qp != NULL));
}

static void test_chan_elem(gda_ft_dev_mem_elem_t *e, const uint8_t *local,
                           uct_mem_h lmemh, const uint8_t *remote,
                           uct_mem_h rmemh, size_t length)
{
    const uct_gda_ft_memh_t *lm = (const uct_gda_ft_memh_t*)lmemh;
    const uct_gda_ft_memh_t *rm = (const uct_gda_ft_memh_t*)rmemh;
    unsigned path;

    e->laddr  = (uintptr_t)local;
    e->raddr  = (uintptr_t)remote;
    e->length  = length;
    e->rlength = length;
    for (path = 0; path < 2; ++path) {
        e->lkey[path] = lm->lkey[path];
        e->rkey[path] = rm->rkey[path];
    }
}

/* The world a poster thread of node i sees: node i's channels to node j */
static void test_chan_view(test_chan_t *c, unsigned i)
{
    unsigned j         = 1 - i;
    chan_world_t *view = &c->view[i];
    gda_ft_dev_mem_elem_t *e = c->elems[i];
    gda_ft_chan_t *chans;
    unsigned count;
    size_t k;

    GDA_FT_ASSERT_OK(c->device_channels(c->t.node[i].ep, &chans, &count));
    memset(view, 0, sizeof(*view));
    view->params.nchan    = count;
    view->params.data_len = AREA_DATA_LEN;
    view->src      = c->area[i] + AREA_SRC;
    view->dst      = c->area[j] + AREA_DST;
    view->signals  = (uint64_t*)(c->area[j] + AREA_SIGNAL);
    view->counters = (uint64_t*)(c->area[j] + AREA_COUNTER);
    view->results  = (uint64_t*)(c->area[i] + AREA_RESULT);
    view->chans    = chans;
    for (k = 0; k < AREA_DATA_LEN; ++k) {
        view->src[k] = (uint8_t)(k * 7 + i * 101 + (k >> 9));
    }

    test_chan_elem(&e[CHAN_ELEM_DATA], view->src, c->memh[i], view->dst,
                   c->memh[j], AREA_DATA_LEN);
    test_chan_elem(&e[CHAN_ELEM_SIGNAL], c->area[i] + AREA_SIGNAL,
                   c->memh[i], (uint8_t*)view->signals, c->memh[j],
                   AREA_SIG_LEN);
    test_chan_elem(&e[CHAN_ELEM_COUNTER], (uint8_t*)view->results,
                   c->memh[i], (uint8_t*)view->counters, c->memh[j],
                   AREA_WORD_LEN);
    view->ml.version      = GDA_FT_DEV_VERSION;
    view->ml.count        = CHAN_ELEM_COUNT;
    view->ml.elems        = e;
    view->ep.version      = GDA_FT_DEV_VERSION;
    view->ep.num_channels = (uint16_t)count;
    view->ep.flags        = c->device_flags(c->t.node[i].ep);
    view->ep.channels     = chans;
}

/* Progresses both nodes until each endpoint hands its device channels
 * out (or fails); the status of each */
static void test_chan_wait(test_chan_t *c, ucs_status_t *status)
{
    double deadline = soft_now_sec() + 20;
    gda_ft_chan_t *chans;
    unsigned count, i;

    for (;;) {
        for (i = 0; i < 2; ++i) {
            status[i] = c->device_channels(c->t.node[i].ep, &chans, &count);
        }
        if ((status[0] != UCS_ERR_NOT_CONNECTED) &&
            (status[1] != UCS_ERR_NOT_CONNECTED)) {
            return;
        }
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        if (test_progress(&c->t) == 0) {
            usleep(10);
        }
    }
}

/* Once the nodes are connected: their channel areas and posters' views */
static void test_chan_prepare(test_chan_t *c)
{
    ucs_status_t status[2];
    unsigned i;

    test_chan_wait(c, status);
    GDA_FT_ASSERT_OK(status[0]);
    GDA_FT_ASSERT_OK(status[1]);

    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_EQ(posix_memalign((void**)&c->area[i], 4096,
                                        AREA_SIZE), 0);
        memset(c->area[i], 0, AREA_SIZE);
        GDA_FT_ASSERT_OK(uct_md_mem_reg(c->t.node[i].md, c->area[i],
                                        AREA_SIZE, UCT_MD_MEM_ACCESS_ALL,
                                        &c->memh[i]));
    }
    for (i = 0; i < 2; ++i) {
        test_chan_view(c, i);
    }
}

static void test_chan_setup(test_chan_t *c)
{
    test_uct_setup(&c->t);
    test_chan_prepare(c);
}

static void test_chan_cleanup(test_chan_t *c)
{
    unsigned i;

    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_OK(uct_md_mem_dereg(c->t.node[i].md, c->memh[i]));
    }
    test_uct_cleanup(&c->t);
    for (i = 0; i < 2; ++i) {
        free(c->area[i]);
    }
}

/* Progresses both nodes for ms milliseconds */
static void test_chan_progress_for(test_chan_t *c, unsigned ms)
{
    double until = soft_now_sec() + ms * 1e-3;

    while (soft_now_sec() < until) {
        if (test_progress(&c->t) == 0) {
            usleep(20);
        }
    }
}

static int test_chan_workers_done(chan_worker_t *wk, unsigned n)
{
    unsigned t;

    for (t = 0; t < n; ++t) {
        if (__atomic_load_n(&wk[t].end_ns, __ATOMIC_ACQUIRE) == 0) {
            return 0;
        }
    }
    return 1;
}

/* Every channel of both nodes back on the primary, after as many
 * failbacks as switches */
static int test_chan_all_back(test_chan_t *c)
{
    const gda_ft_chan_t *ch;
    unsigned i, k;

    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c->view[i].params.nchan; ++k) {
            ch = &c->view[i].chans[k];
            if ((__atomic_load_n(&ch->active, __ATOMIC_ACQUIRE) !=
                 GDA_FT_CHAN_PRIMARY) ||
                (__atomic_load_n(&ch->state, __ATOMIC_ACQUIRE) !=
                 GDA_FT_CHAN_ACTIVE)) {
                return 0;
            }
        }
    }
    return 1;
}

/* Where each channel that is not back on its primary stands */
static void test_chan_print_stuck(test_chan_t *c)
{
    const gda_ft_chan_mbox_t *m;
    const gda_ft_chan_t *ch;
    unsigned i, k;

    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c->view[i].params.nchan; ++k) {
            ch = &c->view[i].chans[k];
            m  = ch->mbox;
            if ((ch->active == GDA_FT_CHAN_PRIMARY) &&
                (ch->state == GDA_FT_CHAN_ACTIVE)) {
                continue;
            }
            printf("node %u channel %u: state %u phase %u active %u; "
                   "records %u answered %u; re-arms seen %u/%u of %u/%u; "
                   "links %u/%u; awaits re-arm %u\n", i, k, ch->state,
                   ch->sw.phase, ch->active, m->req_seq, m->ans_seq,
                   ch->path[0].seen_rearm, ch->path[1].seen_rearm,
                   m->rearm[0], m->rearm[1], m->link_up[0], m->link_up[1],
                   m->awaits_rearm);
        }
    }
}

/* A poster that went quiet wakes its channel: failback happens at a post
 * or a wait (the host only announces the re-arm) */
static void test_chan_nudge(test_chan_t *c)
{
    unsigned i, k;

    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c->view[i].params.nchan; ++k) {
            gda_ft_chan_progress(&c->view[i].chans[k]);
        }
    }
}


GDA_FT_TEST(uct_chan, address_and_settings)
{
    ucs_status_t status[2];
    gda_ft_chan_t *chans;
    test_chan_t c;
    unsigned count;

    /* no device channels: the host channel alone is in the address */
    test_chan_env(&c, "0");
    test_uct_setup(&c.t);
    GDA_FT_ASSERT_EQ(c.t.node[NODE_A].iface_attr.ep_addr_len, 24 + 12);
    GDA_FT_ASSERT_EQ(c.device_channels(c.t.node[NODE_A].ep, &chans, &count),
                     UCS_ERR_UNSUPPORTED);
    test_uct_cleanup(&c.t);

    /* the most: the address keeps its size, the count in it */
    test_chan_env(&c, "64");
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    GDA_FT_ASSERT_EQ(c.t.node[NODE_A].iface_attr.ep_addr_len, 24 + 12);
    /* the peer has one: one connects, the others stay unused */
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", "1", 1);
    test_node_open(&c.t, &c.t.node[NODE_B], "gda_ft_tsoft2", "tsoft2:1");
    GDA_FT_ASSERT_EQ(c.t.node[NODE_B].iface_attr.ep_addr_len, 24 + 12);
    test_connect(&c.t);
    test_chan_wait(&c, status);
    GDA_FT_ASSERT_OK(c.device_channels(c.t.node[NODE_A].ep, &chans, &count));
    GDA_FT_ASSERT_EQ(count, 1);
    GDA_FT_ASSERT_OK(c.device_channels(c.t.node[NODE_B].ep, &chans, &count));
    GDA_FT_ASSERT_EQ(count, 1);
    /* the device API numbers them after the host channel, channel 0 */
    GDA_FT_ASSERT_EQ(chans[0].id, 1);
    GDA_FT_ASSERT_EQ(chans[0].state, GDA_FT_CHAN_ACTIVE);
    test_uct_cleanup(&c.t);

    /* out of range: clear refusals */
    test_chan_env(&c, "65");
    GDA_FT_ASSERT_EQ(test_node_try_open(&c.t, &c.t.node[NODE_A],
                                        "gda_ft_tsoft0", "tsoft0:1"),
                     UCS_ERR_INVALID_PARAM);
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", "1", 1);
    setenv("UCX_GDA_FT_DEVICE_CHANNEL_RING", "100", 1);
    GDA_FT_ASSERT_EQ(test_node_try_open(&c.t, &c.t.node[NODE_A],
                                        "gda_ft_tsoft0", "tsoft0:1"),
                     UCS_ERR_INVALID_PARAM);
}

/* Creates both nodes' endpoints and takes their addresses, as
 * test_connect() does, without connecting them */
static void test_chan_eps(test_chan_t *c, uint8_t (*dev_addr)[64],
                          uint8_t (*ep_addr)[64])
{
    uct_ep_params_t ep_params;
    unsigned i;

    for (i = 0; i < 2; ++i) {
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = c->t.node[i].iface;
        GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &c->t.node[i].ep));
        GDA_FT_ASSERT_OK(uct_iface_get_device_address(
                c->t.node[i].iface, (uct_device_addr_t*)dev_addr[i]));
        GDA_FT_ASSERT_OK(uct_ep_get_address(c->t.node[i].ep,
                                            (uct_ep_addr_t*)ep_addr[i]));
        GDA_FT_ASSERT_OK(uct_rkey_unpack(c->t.comp, c->t.node[i].rkey_buf,
                                         &c->t.rkey[i]));
    }
}

static void test_chan_connect_one(test_chan_t *c, unsigned i,
                                  uint8_t (*dev_addr)[64],
                                  uint8_t (*ep_addr)[64])
{
    GDA_FT_ASSERT_OK(uct_ep_connect_to_ep(
            c->t.node[i].ep, (uct_device_addr_t*)dev_addr[1 - i],
            (uct_ep_addr_t*)ep_addr[1 - i]));
}

/*
 * The device channels are handed out only once both ends connected them:
 * not while the peer's endpoint is not connected (our directory waits in
 * the HCA's retransmissions), and then to both ends. The first end to
 * connect pushes its directory into a QP of the peer that drops it, as
 * UCP's wireup has it; `apart_ms` past the HCA's retries (the control
 * QPs' silence is judged after 8 deadlines, 0.8 s here) the first end's
 * control QPs start over, and the peer is not given up.
 */
static void test_chan_connect_apart(unsigned apart_ms)
{
    uint8_t dev_addr[2][64], ep_addr[2][64];
    ucs_status_t status[2];
    gda_ft_chan_t *chans;
    test_chan_t c;
    unsigned count, i;

    test_chan_env(&c, "8");
    setenv("UCX_GDA_FT_PEER_TIMEOUT", "auto", 1);
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&c.t, &c.t.node[NODE_B], "gda_ft_tsoft2", "tsoft2:1");
    test_chan_eps(&c, dev_addr, ep_addr);

    /* A alone: its device channels are not handed out */
    test_chan_connect_one(&c, NODE_A, dev_addr, ep_addr);
    test_chan_progress_for(&c, apart_ms);
    GDA_FT_ASSERT_EQ(c.device_channels(c.t.node[NODE_A].ep, &chans, &count),
                     UCS_ERR_NOT_CONNECTED);
    GDA_FT_ASSERT_EQ(c.device_channels(c.t.node[NODE_B].ep, &chans, &count),
                     UCS_ERR_NOT_CONNECTED);

    /* B too: B has A's directory at once, A has B's once B connected
     * them; neither hands them out before the other's answer */
    test_chan_connect_one(&c, NODE_B, dev_addr, ep_addr);
    GDA_FT_ASSERT_EQ(c.device_channels(c.t.node[NODE_B].ep, &chans, &count),
                     UCS_ERR_NOT_CONNECTED);
    test_chan_wait(&c, status);
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_OK(status[i]);
        GDA_FT_ASSERT_OK(c.device_channels(c.t.node[i].ep, &chans, &count));
        GDA_FT_ASSERT_EQ(count, 8);
        GDA_FT_ASSERT_EQ(chans[7].id, 8);
        GDA_FT_ASSERT_EQ(c.t.node[i].errors, 0);
    }
    test_chan_prepare(&c);
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&c.view[i].ep),
                         GDA_FT_PEER_REACHABLE);
    }
    test_chan_cleanup(&c);
}

GDA_FT_TEST_TIMEOUT(uct_chan, channels_wait_for_both_ends, 60)
{
    test_chan_connect_apart(300);
}

GDA_FT_TEST_TIMEOUT(uct_chan, channels_wait_for_an_end_that_connects_late,
                    60)
{
    test_chan_connect_apart(3000);
}

/*
 * A's primary port is down while the two ends connect (a rank that
 * rejoins while a port of the job is down): the directories come over
 * the backup control path, which each end writes beside the primary's,
 * and the device channels are handed out and carry traffic both ways
 * (from the backup); they come back to the primary with the port.
 */
GDA_FT_TEST_TIMEOUT(uct_chan, channels_connect_while_a_primary_port_is_down,
                    120)
{
    chan_worker_t wk[2][2];
    pthread_t th[2][2];
    ucs_status_t status[2];
    gda_ft_chan_query_t q;
    double deadline;
    test_chan_t c;
    unsigned i, k;

    test_chan_env(&c, "2");
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&c.t, &c.t.node[NODE_B], "gda_ft_tsoft2", "tsoft2:1");
    test_port_set(&c.t, "tsoft0", 0);
    test_connect(&c.t);
    test_chan_wait(&c, status);
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_OK(status[i]);
    }
    test_chan_prepare(&c);
    for (i = 0; i < 2; ++i) {
        workers_start(&c.view[i], wk[i], th[i], 2, 200);
    }
    deadline = soft_now_sec() + 60;
    for (i = 0; i < 2; ++i) {
        while (!test_chan_workers_done(wk[i], 2)) {
            GDA_FT_ASSERT(soft_now_sec() < deadline);
            test_chan_progress_for(&c, 5);
        }
        workers_join(th[i], 2);
        workers_verify(&c.view[i], wk[i], 2);
    }
    test_port_set(&c.t, "tsoft0", 1);
    deadline = soft_now_sec() + 60;
    while (!test_chan_all_back(&c)) {
        if (soft_now_sec() >= deadline) {
            test_chan_print_stuck(&c);
            GDA_FT_FAIL("the channels did not come back to the primary");
        }
        test_chan_nudge(&c);
        test_chan_progress_for(&c, 5);
    }
    /* every channel left the dead primary and came back, none lost both */
    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c.view[i].params.nchan; ++k) {
            GDA_FT_ASSERT_OK(c.query_channel(c.t.node[i].ep, k, NULL, &q));
            GDA_FT_ASSERT(q.poster.switches >= 1);
            GDA_FT_ASSERT_EQ((q.poster.switches - q.poster.failbacks) % 2,
                             0);
            GDA_FT_ASSERT_EQ(q.poster.no_path, 0);
        }
    }
    test_chan_cleanup(&c);
}

static unsigned test_chan_log_errors;
static char     test_chan_log_error[512];

static ucs_log_func_rc_t
test_chan_log_handler(const char *file, unsigned line, const char *function,
                      ucs_log_level_t level,
                      const ucs_log_component_config_t *comp_conf,
                      const char *message, va_list ap)
{
    char text[sizeof(test_chan_log_error)];

    if (level != UCS_LOG_LEVEL_ERROR) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
    vsnprintf(text, sizeof(text), message, ap);
    if (strstr(text, "channel directory") != NULL) {
        if (test_chan_log_errors++ == 0) {
            memcpy(test_chan_log_error, text, sizeof(text));
        }
        return UCS_LOG_FUNC_RC_STOP;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

/* Connects A and B with B's directory spoilt by `spoil` first; the status
 * each end's channels end with, and the error A logged */
static void test_chan_bad_dir(void (*spoil)(uint8_t *dir),
                              ucs_status_t *status)
{
    uint8_t dev_addr[2][64], ep_addr[2][64];
    uint64_t mbox_be;
    test_chan_t c;
    unsigned i;

    test_chan_env(&c, "32");
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&c.t, &c.t.node[NODE_B], "gda_ft_tsoft2", "tsoft2:1");
    test_chan_eps(&c, dev_addr, ep_addr);
    /* B wrote its directory into its mailbox when it was created; the
     * address says where that is */
    memcpy(&mbox_be, ep_addr[NODE_B] +
                     offsetof(uct_gda_ft_wire_ep_addr_t, mbox_va),
           sizeof(mbox_be));
    spoil(((uct_gda_ft_mbox_t*)(uintptr_t)be64toh(mbox_be))->dir_out);
    test_chan_log_errors = 0;
    ucs_log_push_handler(test_chan_log_handler);
    for (i = 0; i < 2; ++i) {
        test_chan_connect_one(&c, i, dev_addr, ep_addr);
    }
    test_chan_wait(&c, status);
    /* the endpoints report their failure: a clean end */
    TEST_WAIT(&c.t, (c.t.node[NODE_A].errors == 1) &&
              (c.t.node[NODE_B].errors == 1), 10000);
    ucs_log_pop_handler();
    GDA_FT_ASSERT_EQ(c.t.node[NODE_A].last_error, status[NODE_A]);
    GDA_FT_ASSERT_EQ(c.t.node[NODE_B].last_error, UCS_ERR_REJECTED);
    GDA_FT_ASSERT_EQ(status[NODE_B], UCS_ERR_REJECTED);
    /* once: A refused it, B was refused */
    GDA_FT_ASSERT_EQ(test_chan_log_errors, 2);
    printf("A: %s; B: %s\n", ucs_status_string(status[NODE_A]),
           ucs_status_string(status[NODE_B]));
    for (i = 0; i < 2; ++i) {
        c.t.node[i].errors = 0;
    }
    test_uct_cleanup(&c.t);
}

/* Its length says it ends after 31 of its 32 channels */
static void test_chan_dir_truncate(uint8_t *dir)
{
    dir[2] = (16 + 31 * 12) >> 8;
    dir[3] = (16 + 31 * 12) & 0xff;
}

/* A QPN zeroed: the check value no longer holds */
static void test_chan_dir_corrupt(uint8_t *dir)
{
    memset(dir + 16 + 5 * 12, 0, 3);
}

GDA_FT_TEST_TIMEOUT(uct_chan, malformed_directory_fails_both_ends, 60)
{
    ucs_status_t status[2];

    test_chan_bad_dir(test_chan_dir_truncate, status);
    GDA_FT_ASSERT_EQ(status[NODE_A], UCS_ERR_MESSAGE_TRUNCATED);
    GDA_FT_ASSERT(strstr(test_chan_log_error, "invalid peer channel "
                         "directory: channel directory ends inside its "
                         "channels") != NULL);

    test_chan_bad_dir(test_chan_dir_corrupt, status);
    GDA_FT_ASSERT_EQ(status[NODE_A], UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(test_chan_log_error, "check value") != NULL);
}

/*
 * The host channel is channel 0 of the endpoint, before the device
 * channels: it carries the endpoint's RMA and active messages, and the
 * counters command names it.
 */
GDA_FT_TEST(uct_chan, host_channel_beside_device_channels)
{
    size_t (*format)(uct_iface_h iface, char *reply, size_t max);
    gda_ft_chan_query_t query;
    char counters[4096];
    test_am_counters_t am;
    test_am_rx_t *rx;
    test_chan_t c;
    unsigned i;
    uint64_t value = 0x600d;

    test_chan_env(&c, "2");
    /* the transport's interface is its uct_iface_h (the first member) */
    format = (size_t (*)(uct_iface_h, char*, size_t))dlsym(
            c.t.plugin, "uct_gda_ft_iface_format_counters");
    GDA_FT_ASSERT(format != NULL);
    test_chan_setup(&c);

    /* A's put and active messages go on its host channel */
    GDA_FT_ASSERT_OK(test_put_short(&c.t, &value, 8, 0));
    rx = calloc(1, sizeof(*rx));
    test_am_set_handler(&c.t, NODE_B, test_am_stream_cb, rx);
    for (i = 0; i < 300; ++i) {
        test_am_stream_send(&c.t, i);
    }
    GDA_FT_ASSERT_OK(test_flush(&c.t));
    GDA_FT_ASSERT_EQ(*(uint64_t*)c.t.node[NODE_B].buf, value);
    TEST_WAIT(&c.t, rx->count == 300, 10000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    test_am_counters(&c.t, NODE_B, &am);
    GDA_FT_ASSERT_EQ(am.received, 300);
    GDA_FT_ASSERT_EQ(am.duplicates, 0);
    test_host_channel_query(&c.t, NODE_A, &query);
    GDA_FT_ASSERT_EQ(query.active, GDA_FT_CHAN_PRIMARY);
    GDA_FT_ASSERT_EQ(query.poster.switches, 0);

    /* the device channels stay idle */
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_OK(c.query_channel(c.t.node[NODE_A].ep, i, NULL,
                                         &query));
        GDA_FT_ASSERT_EQ(query.poster.switches, 0);
    }
    GDA_FT_ASSERT_EQ(c.query_channel(c.t.node[NODE_A].ep, 2, NULL, &query),
                     UCS_ERR_INVALID_PARAM);

    format(c.t.node[NODE_A].iface, counters, sizeof(counters));
    GDA_FT_ASSERT(strstr(counters, "paths 2: path primary") != NULL);
    GDA_FT_ASSERT(strstr(counters, "host channel 0: path primary") != NULL);
    GDA_FT_ASSERT(strstr(counters, " channel 2: path primary") != NULL);
    free(rx);
    test_chan_cleanup(&c);
}

/*
 * Without a backup HCA the channels have one path: device channels work,
 * posted on by CPU threads, and say so (the backup path failed from the
 * start, no HCA port for it); the host channel too.
 */
GDA_FT_TEST_TIMEOUT(uct_chan, one_path_without_a_backup_hca, 120)
{
    chan_worker_t wk[2][2];
    pthread_t th[2][2];
    gda_ft_chan_query_t q;
    gda_ft_chan_t *chans;
    double deadline;
    test_chan_t c;
    unsigned count, i;

    memset(&c, 0, sizeof(c));
    test_uct_env(&c.t, 1, "UCX_GDA_FT_DEVICE_CHANNELS=1",
                 "UCX_GDA_FT_DEVICE_CHANNEL_RINGS=host", NULL);
    c.device_channels = (device_channels_func_t)dlsym(
            c.t.plugin, "uct_gda_ft_ep_device_channels");
    c.query_channel   = (query_channel_func_t)dlsym(
            c.t.plugin, "uct_gda_ft_ep_query_channel");
    c.device_flags    = (device_flags_func_t)dlsym(
            c.t.plugin, "uct_gda_ft_ep_device_flags");
    /* one HCA: two interfaces of its MD talk to each other */
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&c.t, &c.t.node[NODE_B], "gda_ft_tsoft0", "tsoft0:1");
    test_connect(&c.t);
    test_chan_prepare(&c);

    GDA_FT_ASSERT_OK(c.device_channels(c.t.node[NODE_A].ep, &chans, &count));
    GDA_FT_ASSERT_EQ(count, 1);
    GDA_FT_ASSERT(chans[0].path[GDA_FT_CHAN_BACKUP].failed != 0);
    GDA_FT_ASSERT_EQ(chans[0].mbox->link_up[GDA_FT_CHAN_BACKUP],
                     GDA_FT_CHAN_LINK_DOWN);

    for (i = 0; i < 2; ++i) {
        workers_start(&c.view[i], wk[i], th[i], 2, 300);
    }
    deadline = soft_now_sec() + 60;
    while (!test_chan_workers_done(wk[0], 2) ||
           !test_chan_workers_done(wk[1], 2)) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        test_chan_progress_for(&c, 5);
    }
    for (i = 0; i < 2; ++i) {
        workers_join(th[i], 2);
        workers_verify(&c.view[i], wk[i], 2);
        GDA_FT_ASSERT_OK(c.query_channel(c.t.node[i].ep, 0, NULL, &q));
        GDA_FT_ASSERT_EQ(q.poster.switches, 0);
        GDA_FT_ASSERT_EQ(q.poster.no_path, 0);
        GDA_FT_ASSERT_EQ(q.active, GDA_FT_CHAN_PRIMARY);
        test_host_channel_query(&c.t, i, &q);
        GDA_FT_ASSERT_EQ(q.active, GDA_FT_CHAN_PRIMARY);
    }
    test_chan_cleanup(&c);
}

GDA_FT_TEST(uct_chan, not_connected_has_no_channels_yet)
{
    uct_ep_params_t ep_params;
    gda_ft_chan_t *chans;
    test_chan_t c;
    unsigned count;
    uct_ep_h ep;

    test_chan_env(&c, "2");
    test_node_open(&c.t, &c.t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = c.t.node[NODE_A].iface;
    GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &ep));
    GDA_FT_ASSERT_EQ(c.device_channels(ep, &chans, &count),
                     UCS_ERR_NOT_CONNECTED);
    uct_ep_destroy(ep);
    test_node_close(&c.t, &c.t.node[NODE_A]);
}

/*
 * `posters` CPU threads a direction post on `nchan` device channels of
 * each node (thread t on channel t % nchan), both ways at once, while A's
 * primary port fails and comes back: every channel switches, fails back,
 * and every byte, signal and fetched value is checked. The deadline is
 * scaled with the sanitizers' slowdown: under ThreadSanitizer, 64 posters
 * starved the software HCA for longer than the peer's silence may last
 * (quiet on both paths), and channels that had just left the primary gave
 * the backup up too and ended in NO_PATH.
 */
static void test_chan_both_ways(const char *nchan, unsigned posters,
                                unsigned iters, unsigned deadline_ms)
{
    char deadline_env[64];
    chan_worker_t *wk[2];
    pthread_t *th[2];
    gda_ft_chan_query_t (*q)[UCT_GDA_FT_WIRE_CHAN_MAX];
    uint64_t ready_at_fault[2][UCT_GDA_FT_WIRE_CHAN_MAX];
    double deadline;
    test_chan_t c;
    unsigned i, k;

    q = calloc(2, sizeof(*q));
    GDA_FT_ASSERT(q != NULL);
    deadline_ms *= chan_world_time_scale();
    test_chan_env(&c, nchan);
    snprintf(deadline_env, sizeof(deadline_env), "%ums", deadline_ms);
    setenv("UCX_GDA_FT_DEADLINE", deadline_env, 1);
    test_chan_setup(&c);
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT_EQ(c.view[i].params.nchan, atoi(nchan));
        wk[i] = calloc(posters, sizeof(*wk[i]));
        th[i] = calloc(posters, sizeof(*th[i]));
        GDA_FT_ASSERT((wk[i] != NULL) && (th[i] != NULL));
        workers_start(&c.view[i], wk[i], th[i], posters, iters);
    }
    /* A's primary port fails mid-run, once a tenth of the posts are done
     * (a fixed time was outrun by 16 cores): both directions of its
     * primary path stop (A's posters' QPs, and B's posters' target QPs on
     * A) */
    deadline = soft_now_sec() + 60;
    while (chan_world_completed(&c.view[0]) +
           chan_world_completed(&c.view[1]) < 2 * posters * iters / 10) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        if (test_progress(&c.t) == 0) {
            usleep(10);
        }
    }
    test_port_set(&c.t, "tsoft0", 0);
    /* a channel posted on after the fault has work that only the backup
     * can complete, and switches; one whose posters had all posted before
     * it may have nothing left to move (a sanitizer's scheduling, or a
     * poster not yet back from its last completion, made a poster that
     * had not ended yet a poor sign of work left) */
    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c.view[i].params.nchan; ++k) {
            ready_at_fault[i][k] = gda_ft_chan_ready(&c.view[i].chans[k]);
        }
    }
    test_chan_progress_for(&c, 3 * deadline_ms);
    test_port_set(&c.t, "tsoft0", 1);

    deadline = soft_now_sec() + 120;
    while (!test_chan_workers_done(wk[0], posters) ||
           !test_chan_workers_done(wk[1], posters)) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        test_chan_progress_for(&c, 5);
    }
    for (i = 0; i < 2; ++i) {
        workers_join(th[i], posters);
    }

    /* 64 posting threads on 2 cores may hold the guardians' passes back */
    deadline = soft_now_sec() + 60;
    while (!test_chan_all_back(&c) && (soft_now_sec() < deadline)) {
        test_chan_nudge(&c);
        test_chan_progress_for(&c, 5);
    }

    for (i = 0; i < 2; ++i) {
        for (k = 0; k < c.view[i].params.nchan; ++k) {
            GDA_FT_ASSERT_OK(c.query_channel(c.t.node[i].ep, k, NULL,
                                             &q[i][k]));
            printf("node %u channel %u on path %u: switches %u replays %u "
                   "resolved %u confirmed %u in doubt %u failbacks %u; "
                   "guardian: fences %u resolved %u re-arms %u\n", i, k,
                   q[i][k].active, q[i][k].poster.switches,
                   q[i][k].poster.replays, q[i][k].poster.resolved,
                   q[i][k].poster.confirmed, q[i][k].poster.in_doubt,
                   q[i][k].poster.failbacks, q[i][k].host.fences,
                   q[i][k].host.resolved, q[i][k].host.rearms);
        }
    }
    if (!test_chan_all_back(&c)) {
        test_chan_print_stuck(&c);
        GDA_FT_FAIL("the channels did not all fail back");
    }
    for (i = 0; i < 2; ++i) {
        workers_verify(&c.view[i], wk[i], posters);
        for (k = 0; k < c.view[i].params.nchan; ++k) {
            /* every move off the primary came back, by a failback or
             * (a guardian held back past a deadline) a switch off the
             * backup, which `switches` counts as well */
            GDA_FT_ASSERT((gda_ft_chan_ready(&c.view[i].chans[k]) ==
                           ready_at_fault[i][k]) ||
                          (q[i][k].poster.switches >= 1));
            GDA_FT_ASSERT(q[i][k].poster.switches >=
                          q[i][k].poster.failbacks);
            GDA_FT_ASSERT_EQ((q[i][k].poster.switches -
                              q[i][k].poster.failbacks) % 2, 0);
            GDA_FT_ASSERT_EQ(q[i][k].poster.no_path, 0);
            GDA_FT_ASSERT_EQ(q[i][k].outcomes_lost, 0);
            GDA_FT_ASSERT(q[i][k].host.rearms >= q[i][k].poster.failbacks);
            GDA_FT_ASSERT_EQ(q[i][k].active, GDA_FT_CHAN_PRIMARY);
        }
    }
    test_chan_cleanup(&c);
    for (i = 0; i < 2; ++i) {
        free(wk[i]);
        free(th[i]);
    }
    free(q);
}

GDA_FT_TEST_TIMEOUT(uct_chan, threads_both_ways_through_failover_and_back,
                    180)
{
    test_chan_both_ways("2", TEST_POSTERS, 1200, 100);
}

typedef uint64_t (*qp_query_count_func_t)(void);

/*
 * While somebody may wait on the peer, what shows it on each path is read
 * for free: the channels' completions on the primary, the liveness
 * probes' on the idle backup. The guardians then read none of the peer's
 * targets' PSNs: on mlx5 each read is a QUERY_QP command to the NIC's
 * firmware, and both nodes' guardians of 9 channels read them on both
 * paths every eighth of a deadline (2880 a second at 100 ms).
 */
GDA_FT_TEST_TIMEOUT(uct_chan, busy_paths_are_heard_without_querying_the_nic,
                    120)
{
    qp_query_count_func_t queries;
    chan_worker_t wk[2][8];
    pthread_t th[2][8];
    char deadline_env[64];
    uint64_t before, after;
    double start, elapsed;
    test_chan_t c;
    unsigned i;

    test_chan_env(&c, "8");
    snprintf(deadline_env, sizeof(deadline_env), "%lums",
             (unsigned long)(100 * chan_world_time_scale()));
    setenv("UCX_GDA_FT_DEADLINE", deadline_env, 1);
    test_chan_setup(&c);
    queries = (qp_query_count_func_t)dlsym(c.t.plugin,
                                           "gda_ft_hca_qp_query_count");
    GDA_FT_ASSERT(queries != NULL);
    for (i = 0; i < 2; ++i) {
        workers_start(&c.view[i], wk[i], th[i], 8, WORKER_MAX_POSTS / 4);
    }
    test_chan_progress_for(&c, 300);   /* the first looks and probes */
    before = queries();
    start  = soft_now_sec();
    test_chan_progress_for(&c, 1000);
    after   = queries();
    elapsed = soft_now_sec() - start;
    for (i = 0; i < 2; ++i) {
        workers_stop(wk[i], 8);
    }
    while (!test_chan_workers_done(wk[0], 8) ||
           !test_chan_workers_done(wk[1], 8)) {
        test_chan_progress_for(&c, 5);
    }
    for (i = 0; i < 2; ++i) {
        workers_join(th[i], 8);
        workers_verify(&c.view[i], wk[i], 8);
    }
    printf("%lu QP queries in %.2f s of traffic both ways\n",
           (unsigned long)(after - before), elapsed);
    /* a tenth of what reading them at every look made */
    GDA_FT_ASSERT(after - before <= (uint64_t)(288 * elapsed));
    test_chan_cleanup(&c);
}

/* As many channels as DeepEP's low-latency mode takes per peer (one per
 * local expert): their QPNs do not fit in the address, and come through
 * the channel directories. 64 posting threads on a small machine starve
 * the software HCA's engines: a deadline of 300 ms keeps the peer's word
 * within its window (with 100 ms, under a load of 30 on 2 cores, switches
 * settled without it and their signals ended in doubt) */
GDA_FT_TEST_TIMEOUT(uct_chan, channels_32_both_ways_through_failover_and_back,
                    300)
{
    test_chan_both_ways("32", 32, 240, 300);
}


/* ---- a peer that dies --------------------------------------------------- */

typedef struct {
    const chan_world_t  *view;
    unsigned             channel;
    unsigned             posted;
    gda_ft_dev_status_t  status;   /* the first that was not OK */
    uint64_t             end_ns;
} test_peer_poster_t;

/* Put-and-signal on one channel until something fails */
static void *test_peer_post(void *arg)
{
    test_peer_poster_t *p    = (test_peer_poster_t*)arg;
    const chan_world_t *view = p->view;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t status;

    do {
        status = gda_ft_dev_put_signal(&view->ep, &view->ml, CHAN_ELEM_DATA,
                                       0, 4096 * p->channel, 4096,
                                       CHAN_ELEM_SIGNAL, 8 * p->channel, 1,
                                       p->channel, &req);
        if (status != GDA_FT_DEV_OK) {
            break;
        }
        do {
            status = gda_ft_dev_progress(&req);
        } while (status == GDA_FT_DEV_INPROGRESS);
        __atomic_fetch_add(&p->posted, status == GDA_FT_DEV_OK,
                           __ATOMIC_RELEASE);
    } while (status == GDA_FT_DEV_OK);
    p->status = status;
    __atomic_store_n(&p->end_ns, gda_ft_dev_now_ns(), __ATOMIC_RELEASE);
    return NULL;
}

/*
 * B dies while A's posters keep posting to it: its primary port goes
 * first (A's channels begin switching), then its backup, so nothing of
 * B answers any more. With PEER_TIMEOUT at 1.5 deadlines (what auto is
 * on ConnectX; on soft HCAs auto waits 1 s), A's guardian gives B up
 * within two deadlines of the second port: the peer's state says GONE,
 * and every poster ends with PEER_GONE, not NO_PATH deadlines later, and
 * without hanging in the switch it was in. Before that, one dead port of
 * B's (the primary, idle) gave it up to nobody: the backup's probes
 * answered.
 */
GDA_FT_TEST_TIMEOUT(uct_chan, dead_peer_is_given_up_within_two_deadlines,
                    120)
{
    test_peer_poster_t p[2];
    uint64_t deadline_ns = 100000000ull, dead_ns, gone_ns;
    pthread_t th[2];
    test_chan_t c;
    unsigned k;

    setenv("UCX_GDA_FT_PEER_TIMEOUT", "150ms", 1);
    test_chan_env(&c, "2");
    test_chan_setup(&c);

    /* one port of B's down for three deadlines: B stays reachable */
    test_port_set(&c.t, "tsoft2", 0);
    test_chan_progress_for(&c, 3 * deadline_ns / 1000000);
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&c.view[NODE_A].ep),
                     GDA_FT_PEER_REACHABLE);
    test_port_set(&c.t, "tsoft2", 1);
    test_chan_progress_for(&c, 2 * deadline_ns / 1000000);

    memset(p, 0, sizeof(p));
    for (k = 0; k < 2; ++k) {
        p[k].view    = &c.view[NODE_A];
        p[k].channel = k;
        GDA_FT_ASSERT_EQ(pthread_create(&th[k], NULL, test_peer_post, &p[k]),
                         0);
    }
    /* both posting (a loaded machine may start them late) */
    TEST_WAIT(&c.t, (__atomic_load_n(&p[0].posted, __ATOMIC_ACQUIRE) > 0) &&
              (__atomic_load_n(&p[1].posted, __ATOMIC_ACQUIRE) > 0),
              10000);
    test_port_set(&c.t, "tsoft2", 0);
    test_chan_progress_for(&c, deadline_ns / 2000000);   /* a switch begins */
    test_port_set(&c.t, "tsoft3", 0);
    dead_ns = gda_ft_dev_now_ns();
    TEST_WAIT(&c.t, (__atomic_load_n(&p[0].end_ns, __ATOMIC_ACQUIRE) != 0) &&
              (__atomic_load_n(&p[1].end_ns, __ATOMIC_ACQUIRE) != 0),
              20 * deadline_ns / 1000000);
    for (k = 0; k < 2; ++k) {
        pthread_join(th[k], NULL);
    }

    gone_ns = 0;
    for (k = 0; k < 2; ++k) {
        printf("poster %u: %u put_signals, then '%s' %.2f deadlines after "
               "B's second port\n", k, p[k].posted,
               gda_ft_dev_status_str(p[k].status),
               (double)(p[k].end_ns - dead_ns) / deadline_ns);
        GDA_FT_ASSERT_EQ(p[k].status, GDA_FT_DEV_PEER_GONE);
        GDA_FT_ASSERT(p[k].posted > 0);
        gone_ns = ucs_max(gone_ns, p[k].end_ns);
    }
    GDA_FT_ASSERT_EQ(gda_ft_dev_peer_state(&c.view[NODE_A].ep),
                     GDA_FT_PEER_GONE);
    GDA_FT_ASSERT(gone_ns - dead_ns < 2 * deadline_ns);

    /* a post now fails at once; B's ports come back for the cleanup */
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&c.view[NODE_A].ep,
                                       &c.view[NODE_A].ml, CHAN_ELEM_SIGNAL,
                                       0, 1, 0, NULL),
                     GDA_FT_DEV_PEER_GONE);
    test_port_set(&c.t, "tsoft2", 1);
    test_port_set(&c.t, "tsoft3", 1);
    test_chan_cleanup(&c);
}


/* A process that stops progressing for longer than a silence is sat out
 * (it computes, or waits outside UCX) read none of the peer's probes
 * meanwhile: at its next pass the peer's guardian counts as active, not
 * as silent since before the pause, so that a channel switching under
 * load does not give up a path that the peer answers on */
GDA_FT_TEST_TIMEOUT(uct_chan, own_pause_is_not_the_peers_silence, 60)
{
    const gda_ft_chan_mbox_t *m;
    test_chan_t c;

    test_chan_env(&c, "1");
    setenv("UCX_GDA_FT_DEADLINE", "1ms", 1);   /* a sit-out of 64 ms */
    test_chan_setup(&c);
    m = c.view[NODE_A].chans[0].mbox;
    test_chan_progress_for(&c, 200);   /* connected, probes answered */
    GDA_FT_ASSERT_EQ(__atomic_load_n(&m->peer_quiet, __ATOMIC_ACQUIRE), 0);

    /* neither progresses: longer than the sit-out, shorter than the
     * 250 ms a peer over a software HCA may go unheard */
    usleep(150000);
    uct_worker_progress(c.t.node[NODE_A].worker);   /* A looks, B not */
    GDA_FT_ASSERT_EQ(__atomic_load_n(&m->peer_quiet, __ATOMIC_ACQUIRE), 0);
    test_chan_cleanup(&c);
}

/* The peer's guardian stops (its process computes) for longer than a
 * silence is sat out, while its HCA still answers: it is not quiet until
 * it has been silent for as long as a peer over a software HCA may go
 * unheard (250 ms), and is quiet after that. Under 512 warps a rank at a
 * 1 ms deadline, a guardian starved for 64 ms had the peer's channels take
 * it for gone, with both links up and its HCA answering. */
GDA_FT_TEST_TIMEOUT(uct_chan, peer_guardian_quiet_after_the_unheard_bound, 60)
{
    const gda_ft_chan_mbox_t *m;
    test_chan_t c;
    double until;
    int quiet_at_150;

    test_chan_env(&c, "1");
    setenv("UCX_GDA_FT_DEADLINE", "1ms", 1);   /* a sit-out of 64 ms */
    test_chan_setup(&c);
    m = c.view[NODE_A].chans[0].mbox;
    test_chan_progress_for(&c, 200);
    GDA_FT_ASSERT_EQ(__atomic_load_n(&m->peer_quiet, __ATOMIC_ACQUIRE), 0);

    /* only A progresses */
    until = soft_now_sec() + 0.15;
    while (soft_now_sec() < until) {
        uct_worker_progress(c.t.node[NODE_A].worker);
        usleep(20);
    }
    quiet_at_150 = __atomic_load_n(&m->peer_quiet, __ATOMIC_ACQUIRE);
    until = soft_now_sec() + 0.25;
    while (soft_now_sec() < until) {
        uct_worker_progress(c.t.node[NODE_A].worker);
        usleep(20);
    }
    GDA_FT_ASSERT_EQ(quiet_at_150, 0);
    GDA_FT_ASSERT_EQ(__atomic_load_n(&m->peer_quiet, __ATOMIC_ACQUIRE), 1);
    test_chan_cleanup(&c);
}

/* One endpoint's channel `k` query */
static void test_chan_query(test_chan_t *c, unsigned node, unsigned k,
                            gda_ft_chan_query_t *q)
{
    GDA_FT_ASSERT_OK(c->query_channel(c->t.node[node].ep, k, NULL, q));
}

/* Progresses one node alone for ms milliseconds */
static void test_chan_progress_one(test_chan_t *c, unsigned node,
                                   unsigned ms)
{
    double until = soft_now_sec() + ms * 1e-3;

    while (soft_now_sec() < until) {
        uct_worker_progress(c->t.node[node].worker);
        usleep(20);
    }
}

/*
 * A re-arm try that the peer answers only after it was given up: its
 * answer, which names the PSNs of that try, must not answer the next try,
 * which reset the QP with fresh ones. Taken for it, every next try probed
 * a path whose far end expected other PSNs, and the channel's path never
 * came back (a 1 ms deadline under load: probe after probe failed with
 * both links up).
 */
GDA_FT_TEST_TIMEOUT(uct_chan, late_answer_to_a_given_up_rearm_answers_nothing,
                    60)
{
    gda_ft_dev_request_t req;
    gda_ft_chan_query_t q;
    test_chan_t c;
    double until;

    test_chan_env(&c, "1");
    setenv("UCX_GDA_FT_DEADLINE", "1ms", 1);
    setenv("UCX_GDA_FT_REARM_BACKOFF", "1s", 1);   /* tries well apart */
    test_chan_setup(&c);

    /* A's channel leaves its primary for the port's failure */
    test_port_set(&c.t, "tsoft0", 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&c.view[NODE_A].ep,
                                           &c.view[NODE_A].ml,
                                           CHAN_ELEM_DATA, 0, 0, 64, 0,
                                           &req), GDA_FT_DEV_OK);
    until = soft_now_sec() + 10;
    while (gda_ft_dev_progress(&req) == GDA_FT_DEV_INPROGRESS) {
        GDA_FT_ASSERT(soft_now_sec() < until);
        test_progress(&c.t);
    }
    GDA_FT_ASSERT_EQ(gda_ft_dev_request_outcome(&req), GDA_FT_DEV_OK);
    test_chan_progress_for(&c, 20);   /* the peer's word, the fence */
    test_port_set(&c.t, "tsoft0", 1);

    /* the first try, unanswered until A gives it up (250 ms over a
     * software HCA) */
    until = soft_now_sec() + 10;
    do {
        GDA_FT_ASSERT(soft_now_sec() < until);
        test_chan_progress_one(&c, NODE_A, 5);
        test_chan_query(&c, NODE_A, 0, &q);
    } while (q.host.rearm_tries == 0);
    test_chan_progress_one(&c, NODE_A, 300);
    test_chan_query(&c, NODE_A, 0, &q);
    GDA_FT_ASSERT_EQ(q.host.rearm_tries, 1);
    GDA_FT_ASSERT_EQ(q.host.rearms, 0);

    /* B answers it now, with A's next try to come */
    test_chan_progress_one(&c, NODE_B, 50);

    until = soft_now_sec() + 5;
    do {
        GDA_FT_ASSERT(soft_now_sec() < until);
        test_chan_progress_for(&c, 5);
        test_chan_query(&c, NODE_A, 0, &q);
    } while (q.host.rearms == 0);
    printf("re-armed after %u tries\n", q.host.rearm_tries);
    GDA_FT_ASSERT_EQ(q.host.rearm_tries, 2);
    test_chan_cleanup(&c);
}

/* A guardian whose passes come further apart than it looks at the peer's
 * traffic (every eighth of a deadline: 125 us at 1 ms; a host thread busy
 * elsewhere, a loaded machine) still hears a peer that posts at it all
 * along: its path counts as known up at both ends. A moved count of the
 * peer's packets was once ignored after such a gap, and a peer whose
 * channels posted thousands of operations a second went unheard for 300
 * to 500 ms under 512 warps a rank at a 1 ms deadline. */
GDA_FT_TEST_TIMEOUT(uct_chan, sparse_guardian_passes_hear_a_busy_peer, 60)
{
    uint64_t scale   = chan_world_time_scale();
    const gda_ft_chan_mbox_t *m;
    unsigned samples = 0, up = 0;
    chan_worker_t wk[2];
    pthread_t th[2];
    test_chan_t c;
    char deadline[32];
    double until;

    test_chan_env(&c, "1");
    /* the deadline and the guardian's gap scale together (sanitizers) */
    snprintf(deadline, sizeof(deadline), "%lums", (unsigned long)scale);
    setenv("UCX_GDA_FT_DEADLINE", deadline, 1);
    /* no liveness probes: the peer's own traffic is the sign to read */
    setenv("UCX_GDA_FT_PEER_TIMEOUT", "inf", 1);
    test_chan_setup(&c);
    m = c.view[NODE_A].chans[0].mbox;
    workers_start(&c.view[NODE_B], wk, th, 2, WORKER_MAX_POSTS);
    test_chan_progress_for(&c, 5);

    /* A's guardian every 400 us, while B's posters run */
    until = soft_now_sec() + 0.3 * scale;
    while ((soft_now_sec() < until) && !test_chan_workers_done(wk, 2)) {
        uct_worker_progress(c.t.node[NODE_A].worker);
        uct_worker_progress(c.t.node[NODE_B].worker);
        up += (__atomic_load_n(&m->link_up[GDA_FT_CHAN_PRIMARY],
                               __ATOMIC_ACQUIRE) == GDA_FT_CHAN_LINK_UP) ||
              (__atomic_load_n(&m->link_up[GDA_FT_CHAN_BACKUP],
                               __ATOMIC_ACQUIRE) == GDA_FT_CHAN_LINK_UP);
        ++samples;
        usleep(400 * scale);
    }
    workers_stop(wk, 2);
    while (!test_chan_workers_done(wk, 2)) {
        test_chan_progress_for(&c, 5);
    }
    workers_join(th, 2);
    printf("a path known up at %u of %u passes\n", up, samples);
    GDA_FT_ASSERT(samples >= 20);
    GDA_FT_ASSERT(up * 2 > samples);
    test_chan_cleanup(&c);
}

/* Whether A's control QP of `path` serves (not failed) */
static int test_chan_control_serves(test_chan_t *c, unsigned path)
{
    int usable = 0;

    GDA_FT_ASSERT(c->control_qp(c->t.node[NODE_A].ep, path, &usable) !=
                  NULL);
    return usable;
}

/*
 * The peer's answers are lost on one path, then on both, for longer than a
 * control write may go unanswered (8 deadlines, 160 ms) and shorter than
 * the HCA's retries (8 x 67 ms): the first control path to fall silent is
 * taken for dead, the last one is not. Its question re-arms the other once
 * the answers come back. Taken for dead both, nothing could carry the
 * question of either re-arm: the channels' paths were never re-armed
 * again, and ended in NO_PATH with every link up (port failures of both
 * ranks in turn, on a loaded machine).
 */
GDA_FT_TEST_TIMEOUT(uct_chan, last_control_path_outlives_its_silence, 60)
{
    gda_ft_soft_fault_t none = {0};
    test_chan_t c;
    double until;
    int backup_failed = 0;

    test_chan_env(&c, "1");
    setenv("UCX_GDA_FT_DEADLINE", "20ms", 1);
    setenv("UCX_GDA_FT_TIMEOUT", "64ms", 1);
    test_chan_setup(&c);
    test_chan_progress_for(&c, 300);   /* probes answered */
    GDA_FT_ASSERT(test_chan_control_serves(&c, 0));
    GDA_FT_ASSERT(test_chan_control_serves(&c, 1));

    /* B's primary port loses its answers: A's primary control QP fails */
    test_port_lose_answers(&c.t, "tsoft2");
    until = soft_now_sec() + 2;
    while (test_chan_control_serves(&c, 0)) {
        test_chan_progress_for(&c, 1);
        GDA_FT_ASSERT(soft_now_sec() < until);
    }

    /* and its backup port too, for 300 ms */
    test_port_lose_answers(&c.t, "tsoft3");
    until = soft_now_sec() + 0.3;
    while (soft_now_sec() < until) {
        test_chan_progress_for(&c, 1);
        backup_failed |= !test_chan_control_serves(&c, 1);
    }
    test_port_set_fault(&c.t, "tsoft3", &none);
    test_port_set_fault(&c.t, "tsoft2", &none);

    /* both serve again */
    until = soft_now_sec() + 5;
    while (!test_chan_control_serves(&c, 0) ||
           !test_chan_control_serves(&c, 1)) {
        test_chan_progress_for(&c, 1);
        GDA_FT_ASSERT(soft_now_sec() < until);
    }
    printf("the backup control path %s while the primary's was failed\n",
           backup_failed ? "failed too" : "stayed");
    test_chan_cleanup(&c);
}
