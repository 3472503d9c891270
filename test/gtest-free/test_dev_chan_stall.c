/*
 * Silences of a concurrent device channel that are no failure (suite
 * dev_chan, as test_dev_chan.c): a slow peer, a stall of the last path
 * left, a full ring behind it, and a busy path shared by many channels.
 * Nothing switches, and every byte, signal and fetched value is exact.
 */
#include "chan_harness.h"
#include "chan_workers.h"
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A slow peer is not a dead one: every packet the target sends waits half
 * a deadline, traffic goes on, and nothing switches */
GDA_FT_TEST_TIMEOUT(dev_chan, slow_peer_no_switch, 120)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    chan_worker_t wk[4];
    pthread_t th[4];
    chan_world_t w;

    chan_world_default_params(&params);
    params.timeout = 16;   /* the HCA's retry budget (268 ms x 7) too */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    fault.delay      = 1.0;
    fault.delay_time = params.deadline_ns * 0.5 / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[2], 1, &fault));
    workers_start(&w, wk, th, 4, 96);
    workers_join(th, 4);
    workers_verify(&w, wk, 4);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, switches), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, in_doubt), 0);
    chan_world_fini(&w);
}

/*
 * The backup stalls while the primary's port is down: every packet the
 * backup's target sends waits two deadlines, for six. Its silence is sat
 * out rather than taken for a failure, since leaving it would find no
 * path: no channel loses both paths, nothing fails, everything is exact.
 * (Leaving it was what a soft HCA whose engine paused did to channels on
 * a GPU, at 1 ms and 200 us deadlines.)
 */
GDA_FT_TEST_TIMEOUT(dev_chan, last_path_stall_is_sat_out, 180)
{
    gda_ft_soft_fault_t fault = {0}, none = {0};
    chan_world_params_t params;
    chan_worker_t wk[4];
    pthread_t th[4];
    chan_world_t w;
    double until;

    chan_world_default_params(&params);
    params.timeout = 16;   /* the HCA's retry budget (268 ms x 7) too */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start_under_way(&w, wk, th, 4, 600, 0);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    until = soft_now_sec() + 60;
    while (CHAN_WORLD_SUM(&w, switches) < params.nchan) {
        GDA_FT_ASSERT(soft_now_sec() < until);
        usleep(1000);
    }

    fault.delay      = 1.0;
    fault.delay_time = params.deadline_ns * 2.0 / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[3], 1, &fault));
    usleep(params.deadline_ns * 6 / 1000);
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[3], 1, &none));

    workers_join(th, 4);
    workers_verify(&w, wk, 4);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, switches), params.nchan);
    chan_world_fini(&w);
}

/* While set, the peer's end of every path says nothing (as over the
 * transport, where the peer is heard by its traffic): it goes quiet */
static int stall_unheard;

static int stall_port_up(void *arg, gda_ft_chan_host_t *ch, unsigned path)
{
    return __atomic_load_n(&stall_unheard, __ATOMIC_ACQUIRE) ? -1 :
           chan_peer_ops.port_up(arg, ch, path);
}

/* A world of params whose channels moved to the backup with a put each,
 * the primary's port down; peer: its guardians' peer, NULL: the
 * harness's */
static void stall_world_on_backup(chan_world_t *w,
                                  const chan_world_params_t *params,
                                  const gda_ft_chan_peer_ops_t *peer)
{
    gda_ft_dev_request_t req[2];
    unsigned c;

    chan_world_init(w, params);
    w->guard_peer = peer;
    chan_world_guard_start(w);
    chan_world_port(w, GDA_FT_CHAN_PRIMARY, 0);
    chans_put_each(w, req, GDA_FT_DEV_OK);
    for (c = 0; c < params->nchan; ++c) {
        GDA_FT_ASSERT_EQ(w->chans[c].active, GDA_FT_CHAN_BACKUP);
    }
}

/* The backup holds every packet for `deadlines` deadlines while a put goes
 * on every channel (req[c]), each to end with expect */
static void stall_the_backup(chan_world_t *w, double deadlines,
                             gda_ft_dev_request_t *req,
                             gda_ft_dev_status_t expect)
{
    gda_ft_soft_fault_t fault = {0}, none = {0};

    fault.delay      = 1.0;
    fault.delay_time = w->params.deadline_ns * deadlines / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w->dev[3], 1, &fault));
    chans_put_each(w, req, expect);
    GDA_FT_ASSERT_OK(soft_port_set_fault(w->dev[3], 1, &none));
}

/*
 * The channels are on their backup (the primary's port is down) when the
 * backup holds every packet, and the peer is heard on no path, for longer
 * than a last path's silence is sat out: each channel gives both paths
 * up, with the put it was carrying. Once the stall ends, the host re-arms
 * the backup (its ends are up), and each channel takes it back: the put
 * still reports NO_PATH, posters run exactly there and through the
 * primary's return. A stall, not a dead link, used to cost the channel
 * for good (the 32-channel UCT test under ThreadSanitizer on 2 cores,
 * links up at both ends). With the peer heard, the same stall ends in
 * the put done late (dev_chan.slow_peer_heard_never_loses_its_path).
 */
GDA_FT_TEST_TIMEOUT(dev_chan, no_path_after_a_stall_regains_the_backup, 180)
{
    static gda_ft_chan_peer_ops_t peer;
    chan_world_params_t params;
    gda_ft_dev_request_t req[2];
    chan_world_t w;

    peer         = chan_peer_ops;
    peer.port_up = stall_port_up;
    chan_world_default_params(&params);
    params.deadline_ns /= 10;   /* the silence sat out: 64 deadlines */
    params.timeout      = 16;   /* the HCA's retry budget (268 ms x 7) */
    stall_world_on_backup(&w, &params, &peer);

    __atomic_store_n(&stall_unheard, 1, __ATOMIC_RELEASE);
    stall_the_backup(&w, 200, req, GDA_FT_DEV_NO_PATH);
    __atomic_store_n(&stall_unheard, 0, __ATOMIC_RELEASE);

    chans_wait_active_on(&w, GDA_FT_CHAN_BACKUP, 1);
    chans_verify_regained(&w, req);
    chan_world_fini(&w);
}

/*
 * A stall longer than the silence sat out on a last path, with the peer
 * heard (its ports up, its guardian taking part): a slow end, not a gone
 * one. The channels sit it out on the backup however long it lasts, and
 * each put completes once it ends, exactly once, with no NO_PATH: a slow
 * HCA (the software HCA's engine waiting for GPU copies) costs time, never
 * the path.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, slow_peer_heard_never_loses_its_path, 180)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req[2];
    chan_world_t w;
    unsigned c;

    chan_world_default_params(&params);
    params.deadline_ns /= 10;
    /* the HCA's retry budget (268 ms x 8) outlasts the stall at any
     * scale: the QPs see no error, only the silence */
    params.timeout      = chan_world_scaled_timeout(16);
    stall_world_on_backup(&w, &params, NULL);

    stall_the_backup(&w, 100, req, GDA_FT_DEV_OK);   /* > the sit-out */
    for (c = 0; c < params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(w.chans[c].active, GDA_FT_CHAN_BACKUP);
    }
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);
    chan_world_fini(&w);
}

/* While set, the peer does not answer a re-arm: the path waits for it */
static int stall_rearm_held;

static ucs_status_t stall_rearm(void *arg, gda_ft_chan_host_t *ch,
                                unsigned path,
                                const gda_ft_hca_qp_attr_t *local)
{
    return __atomic_load_n(&stall_rearm_held, __ATOMIC_ACQUIRE) ?
           UCS_INPROGRESS : chan_peer_ops.rearm(arg, ch, path, local);
}

/* The peer is heard on the primary only: the backup's far end is not
 * known (its packets there are not seen), never down */
static int stall_heard_on_primary(void *arg, gda_ft_chan_host_t *ch,
                                  unsigned path)
{
    return (path == GDA_FT_CHAN_BACKUP) ? -1 :
           chan_peer_ops.port_up(arg, ch, path);
}

/*
 * Both links up, the primary awaiting a re-arm that the peer is slow to
 * answer, and the backup, the channels' last path, stalling for longer
 * than a silence is sat out while the peer is heard (on the primary): the
 * channels stay on the backup, each put completes once the stall ends,
 * and the primary is taken back once its re-arm comes. No NO_PATH: with
 * links up and the peer heard, a slow path and a slow re-arm cost time.
 * (Under 512 warps a rank over UCP at a 1 ms deadline, every channel gave
 * both paths up that way.)
 */
GDA_FT_TEST_TIMEOUT(dev_chan, heard_peer_keeps_the_last_path_through_a_slow_rearm,
                    180)
{
    static gda_ft_chan_peer_ops_t peer;
    chan_world_params_t params;
    gda_ft_dev_request_t req[2];
    chan_worker_t wk[4];
    pthread_t th[4];
    chan_world_t w;
    unsigned c;

    peer         = chan_peer_ops;
    peer.rearm   = stall_rearm;
    peer.port_up = stall_heard_on_primary;
    chan_world_default_params(&params);
    params.deadline_ns /= 10;
    params.timeout      = chan_world_scaled_timeout(16);
    __atomic_store_n(&stall_rearm_held, 1, __ATOMIC_RELEASE);
    stall_world_on_backup(&w, &params, &peer);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    usleep(params.deadline_ns * 4 / 1000);   /* the host sees it up */

    stall_the_backup(&w, 100, req, GDA_FT_DEV_OK);   /* > the sit-out */
    for (c = 0; c < params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(w.chans[c].active, GDA_FT_CHAN_BACKUP);
    }
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);

    __atomic_store_n(&stall_rearm_held, 0, __ATOMIC_RELEASE);
    chans_wait_active_on(&w, GDA_FT_CHAN_PRIMARY, 0);
    for (c = 0; c < params.nchan; ++c) {
        w.resv_base[c] = GDA_FT_CHAN_WORD_INDEX(w.chans[c].word);
    }
    workers_start_under_way(&w, wk, th, 4, 400, 0);
    workers_join(th, 4);
    workers_verify(&w, wk, 4);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);
    chan_world_fini(&w);
}

/* One thread's burst: single-packet signalled puts into its own region,
 * then a quiet */
typedef struct burst {
    chan_world_t       *w;
    unsigned            chan, count;
    gda_ft_dev_status_t status;
} burst_t;

#define BURST_PUT_LEN 64

static void *burst_run(void *arg)
{
    burst_t *b = (burst_t*)arg;
    gda_ft_dev_request_t req;
    uint64_t off;
    unsigned i;

    b->status = GDA_FT_DEV_OK;
    for (i = 0; (i < b->count) && (b->status == GDA_FT_DEV_OK); ++i) {
        off       = ((uint64_t)b->chan * b->count + i) * BURST_PUT_LEN;
        b->status = gda_ft_dev_put_single(&b->w->ep, &b->w->ml,
                                          CHAN_ELEM_DATA, off, off,
                                          BURST_PUT_LEN, b->chan, &req);
    }
    if (b->status == GDA_FT_DEV_OK) {
        b->status = gda_ft_dev_quiet(&b->w->ep, b->chan, 0);
    }
    return NULL;
}

/*
 * The channels are on their backup (the primary's port is down) when the
 * backup holds every packet for stall_deadlines deadlines, while a burst
 * on each keeps the smallest ring full. Every post and every put must end
 * OK.
 */
static void full_ring_stall_on_backup(chan_world_params_t *params,
                                      double stall_deadlines)
{
    gda_ft_soft_fault_t fault = {0}, none = {0};
    gda_ft_dev_request_t req;
    burst_t b[2];
    pthread_t th[2];
    chan_world_t w;
    unsigned c;

    params->wqebb_cnt = 64;
    chan_world_init(&w, params);
    chan_world_guard_start(&w);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    for (c = 0; c < params->nchan; ++c) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                               0, 0, 64, c, &req),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(w.chans[c].active, GDA_FT_CHAN_BACKUP);
    }

    fault.delay      = 1.0;
    fault.delay_time = params->deadline_ns * stall_deadlines / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[3], 1, &fault));
    for (c = 0; c < params->nchan; ++c) {
        b[c].w     = &w;
        b[c].chan  = c;
        b[c].count = 400;
        GDA_FT_ASSERT_EQ(pthread_create(&th[c], NULL, burst_run, &b[c]), 0);
    }
    usleep(params->deadline_ns * (stall_deadlines + 2) / 1000);
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[3], 1, &none));
    for (c = 0; c < params->nchan; ++c) {
        pthread_join(th[c], NULL);
        GDA_FT_ASSERT_EQ(b[c].status, GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src,
                         params->nchan * b[0].count * BURST_PUT_LEN);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, switches), params->nchan);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    chan_world_fini(&w);
}

/*
 * A post waits for ring room as long as the channel may wait: the backup
 * holds every packet for ten deadlines. The channels sit the silence out
 * on their last path; a post waiting for room must not give up before
 * they do (it reported TIMEOUT after four deadlines and the resolution,
 * for a ring that then drained). Every put lands.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, full_ring_post_waits_out_a_last_path_stall,
                    180)
{
    chan_world_params_t params;

    chan_world_default_params(&params);
    /* the HCA's retry budget (268 ms x 8) outlasts the stall */
    params.timeout = chan_world_scaled_timeout(16);
    full_ring_stall_on_backup(&params, 10);
}

/*
 * While the peer is heard, the channels sit a silence out however long it
 * lasts, and a post waits for ring room as long: here the stall outlasts
 * the post wait for a peer not heard (gda_ft_timing_post_wait_ns, about
 * 136 deadlines here), where a post gave up with TIMEOUT, nothing posted,
 * for a ring that then drained.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, full_ring_post_waits_while_the_peer_is_heard,
                    180)
{
    chan_world_params_t params;

    chan_world_default_params(&params);
    params.deadline_ns /= 10;
    params.resolve_ns  /= 10;
    /* the HCA's retry budget (536 ms x 8) outlasts the stall */
    params.timeout      = chan_world_scaled_timeout(17);
    GDA_FT_ASSERT(gda_ft_timing_post_wait_ns(params.deadline_ns,
                                             params.resolve_ns) <
                  params.deadline_ns * 200);
    full_ring_stall_on_backup(&params, 250);
}

/*
 * A busy path is not a dead one. Four channels to one peer each post a
 * burst of 40 signalled puts into an HCA port that sends one packet per
 * twentieth of a deadline, and that serves one channel's queue after the
 * other. The last channel's first completion comes 6 deadlines after its
 * post, while the path completes something every twentieth of one:
 * nothing switches.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, busy_shared_path_no_switch, 120)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    burst_t burst[4];
    pthread_t th[4];
    chan_world_t w;
    unsigned c;

    chan_world_default_params(&params);
    params.nchan       = 4;
    params.deadline_ns = 30000000ull * chan_world_time_scale();
    params.timeout     = 18;   /* 1.07 s: packets queue for 6 deadlines */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    fault.pace_time = params.deadline_ns / 20 / 1e9;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[0], 1, &fault));
    for (c = 0; c < 4; ++c) {
        burst[c].w     = &w;
        burst[c].chan  = c;
        burst[c].count = 40;
        GDA_FT_ASSERT_EQ(pthread_create(&th[c], NULL, burst_run, &burst[c]),
                         0);
    }
    for (c = 0; c < 4; ++c) {
        pthread_join(th[c], NULL);
        GDA_FT_ASSERT_EQ(burst[c].status, GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(memcmp(w.src, w.dst, 4 * 40 * BURST_PUT_LEN), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, switches), 0);
    chan_world_fini(&w);
}
