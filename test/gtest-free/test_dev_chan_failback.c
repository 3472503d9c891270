/*
 * Re-arm and failback of the concurrent device channel (suite dev_chan, as
 * test_dev_chan.c): the host's re-arm waits for the peer's word and for
 * the switch to end, a waiter's timeout holds during a switch, no failback
 * onto a port that is down again, failback under load and on a channel
 * that is never idle, and a busy channel that follows the peer's finding.
 */
#include "chan_harness.h"
#include "chan_workers.h"
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Channel 0 of a world of one: its primary's far port goes down under a
 * 4 KiB put, which completes on the backup; the port comes back, and the
 * guardian re-arms the primary and reports its link up */
static void chan_switch_and_rearm(chan_world_t *w)
{
    uint32_t rearm  = w->a[0].mbox->rearm[GDA_FT_CHAN_PRIMARY];
    double deadline = soft_now_sec() + 10;
    gda_ft_dev_request_t req;

    chan_world_port(w, GDA_FT_CHAN_PRIMARY, 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w->ep, &w->ml, CHAN_ELEM_DATA,
                                           0, 0, 4096, 0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(w->chans[0].active, GDA_FT_CHAN_BACKUP);

    chan_world_port(w, GDA_FT_CHAN_PRIMARY, 1);
    while ((__atomic_load_n(&w->a[0].mbox->rearm[GDA_FT_CHAN_PRIMARY],
                            __ATOMIC_ACQUIRE) == rearm) ||
           !__atomic_load_n(&w->a[0].mbox->link_up[GDA_FT_CHAN_PRIMARY],
                            __ATOMIC_ACQUIRE)) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }
}

/* A peer whose word on a fence comes late, and whose port the guardian
 * believes up meanwhile (as a UCT peer answers for its own ports) */
static struct {
    uint64_t first_fence_ns;
    uint64_t answer_after_ns;
    int      answered;
    int      pretend_up;
    unsigned rearms;
    unsigned rearms_before_answer;
} chan_late;

static ucs_status_t chan_late_fence(void *arg, gda_ft_chan_host_t *ch,
                                    unsigned path, unsigned why,
                                    uint32_t *epsn_p)
{
    uint64_t now = gda_ft_dev_now_ns();

    if (chan_late.first_fence_ns == 0) {
        chan_late.first_fence_ns = now;
    }
    if ((now - chan_late.first_fence_ns) < chan_late.answer_after_ns) {
        return UCS_INPROGRESS;
    }
    chan_late.answered   = 1;
    chan_late.pretend_up = 0;
    return chan_peer_ops.fence(arg, ch, path, why, epsn_p);
}

static ucs_status_t chan_late_rearm(void *arg, gda_ft_chan_host_t *ch,
                                    unsigned path,
                                    const gda_ft_hca_qp_attr_t *local)
{
    ++chan_late.rearms;
    if (!chan_late.answered) {
        ++chan_late.rearms_before_answer;
    }
    return chan_peer_ops.rearm(arg, ch, path, local);
}

static int chan_late_port_up(void *arg, gda_ft_chan_host_t *ch,
                             unsigned path)
{
    return chan_late.pretend_up || chan_peer_ops.port_up(arg, ch, path);
}

/*
 * No re-arm while a switch waits for the peer's word. Through UCT, both go
 * through the channel's one question slot in the peer's mailbox: a re-arm
 * begun a recovery window after the fence replaced the fence's question,
 * the answer was never seen, and the replay's signals ended in doubt (the
 * MoE job on a loaded host, 4 runs of 8). Here the word comes three
 * recovery windows after the fence, and the path looks up all along.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, rearm_waits_for_the_peers_word, 60)
{
    gda_ft_chan_peer_ops_t late_ops = chan_peer_ops;
    chan_world_params_t params;
    chan_worker_t wk[1];
    pthread_t th[1];
    chan_world_t w;
    double deadline;

    late_ops.fence   = chan_late_fence;
    late_ops.rearm   = chan_late_rearm;
    late_ops.port_up = chan_late_port_up;
    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    memset(&chan_late, 0, sizeof(chan_late));
    chan_late.answer_after_ns = 3 * params.recovery_ns;

    workers_start_under_way(&w, wk, th, 1, 1200, 0);
    chan_late.pretend_up = 1;
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);

    /* the guardian, driven here with the late peer */
    deadline = soft_now_sec() + 30;
    while (!chan_late.answered || !workers_done(wk, 1)) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        gda_ft_chan_host_guard(&w.a[0], &late_ops, &w, gda_ft_dev_now_ns());
        usleep(20);
    }
    workers_join(th, 1);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);

    printf("word after %.0f ms; re-arms %u, %u of them before the word\n",
           chan_late.answer_after_ns / 1e6, chan_late.rearms,
           chan_late.rearms_before_answer);
    GDA_FT_ASSERT_EQ(chan_late.rearms_before_answer, 0);
    GDA_FT_ASSERT(CHAN_WORLD_SUM(&w, switches) >= 1);
    GDA_FT_ASSERT(w.a[0].counters.resolved >= 1);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, in_doubt), 0);
    workers_verify(&w, wk, 1);
    chan_world_fini(&w);
}

/*
 * A waiter's timeout holds while a switch waits for the host: the switch
 * parks (its window holds a signal, so it asks for the peer's word, and no
 * guardian runs yet), quiet() returns TIMEOUT with the switch still
 * waiting, and the next waits, once the guardian answers, finish it with
 * the signal applied once.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, waiter_timeout_holds_during_a_switch, 60)
{
    chan_world_params_t params;
    gda_ft_dev_status_t status;
    chan_world_t w;
    double start;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);

    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    GDA_FT_ASSERT_EQ(gda_ft_dev_signal(&w.ep, &w.ml, CHAN_ELEM_SIGNAL, 0, 1,
                                       0, NULL),
                     GDA_FT_DEV_OK);
    /* short waits until one returns with the switch under way: it waits
     * for the host's answer resolve_ns (over a deadline) */
    start = soft_now_sec();
    do {
        status = gda_ft_dev_quiet(&w.ep, 0, params.deadline_ns / 4);
        GDA_FT_ASSERT_EQ(status, GDA_FT_DEV_TIMEOUT);
        GDA_FT_ASSERT(soft_now_sec() < start + 20 * params.deadline_ns / 1e9);
    } while (w.chans[0].state == GDA_FT_CHAN_ACTIVE);
    GDA_FT_ASSERT_EQ(w.chans[0].state, GDA_FT_CHAN_PARKED);
    GDA_FT_ASSERT_EQ(w.chans[0].sw.phase, GDA_FT_CHAN_PHASE_HEAR);
    GDA_FT_ASSERT(w.chans[0].word & GDA_FT_CHAN_FROZEN);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 0);

    /* the guardian answers (the peer's word: the signal never arrived),
     * the next wait finishes the switch, the replay applies it once */
    chan_world_guard_start(&w);
    GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w.ep, 0, 0), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(w.chans[0].state, GDA_FT_CHAN_ACTIVE);
    GDA_FT_ASSERT_EQ(w.chans[0].active, GDA_FT_CHAN_BACKUP);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.resolved, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.in_doubt, 0);
    GDA_FT_ASSERT_EQ(w.signals[0], 1);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    chan_world_fini(&w);
}

/*
 * A re-armed primary whose port goes down again before the channel takes
 * it back is not taken back. The channel left the primary (its port went
 * down), the port came back, the guardian re-armed the primary, and the
 * port went down again before the channel's next idle moment, where it
 * looks at re-arm notices. Failing back then put the next posts on a dead
 * path, and the channel had to switch a second time (seen on the GPU: a
 * failback at the end of a run that began with a stall). The channel
 * stays on the backup while the primary's link is down, and fails back
 * once it is up, with one switch and one failback in all.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, no_failback_onto_a_port_down_again, 60)
{
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    double until;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

    chan_switch_and_rearm(&w);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    /* the guardian's next pass reports the link down; the channel looks
     * at its re-arm notices from then on */
    while (__atomic_load_n(&w.a[0].mbox->link_up[GDA_FT_CHAN_PRIMARY],
                           __ATOMIC_ACQUIRE)) {
        usleep(100);
    }
    until = soft_now_sec() + 4.0 * params.recovery_ns / 1e9;
    while (soft_now_sec() < until) {
        gda_ft_chan_progress(&w.chans[0]);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(w.chans[0].active, GDA_FT_CHAN_BACKUP);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.failbacks, 0);

    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    chans_wait_failback(&w, 1);
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                           4096, 4096, 4096, 0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src, 8192);
    GDA_FT_ASSERT_EQ(w.chans[0].active, GDA_FT_CHAN_PRIMARY);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.failbacks, 1);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.no_path, 0);
    chan_world_fini(&w);
}

/* The primary comes back while the posters keep posting: each channel
 * fails back under load, and the re-armed primary carries the rest with
 * every byte, signal and fetched value exact */
GDA_FT_TEST_TIMEOUT(dev_chan, failback_under_load, 180)
{
    uint64_t failback_ns, end_ns = UINT64_MAX;
    chan_world_params_t params;
    chan_worker_t wk[8];
    pthread_t th[8];
    chan_world_t w;
    unsigned t;

    chan_world_default_params(&params);
    params.nchan       = 4;
    params.wqebb_cnt   = 512;   /* the GPU runs' ring: it wraps often */
    /* the switch and the failback come early in the posters' run, with a
     * sanitizer's time scale too; the posters stop once every channel is
     * back. With a 20 ms recovery window, 8 posters on 2 cores finished
     * 4000 iterations before every channel failed back in 1 run of 8;
     * the window is quartered, and they have 8000. The deadline is not:
     * at a quarter (25 ms), a backup that the loaded software HCA served
     * late was judged dead in 1 run of 5, and its channel went back to
     * the primary by a switch, not a failback. */
    params.recovery_ns = params.recovery_ns / 4;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start_under_way(&w, wk, th, 8, 8000, 0);
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 0);
    /* down until every channel left it: a port back within a deadline or
     * two may let the HCA's retransmission save the primary (1 run in 20) */
    while (CHAN_WORLD_SUM(&w, switches) < params.nchan) {
        if (workers_done(wk, 8)) {
            chans_dump(&w);
            GDA_FT_FAIL("the posters finished before every channel left "
                        "the primary (%u of %u)",
                        CHAN_WORLD_SUM(&w, switches), params.nchan);
        }
        usleep(100);
    }
    chan_world_port(&w, GDA_FT_CHAN_PRIMARY, 1);
    while (CHAN_WORLD_SUM(&w, failbacks) < params.nchan) {
        /* the test's premise: the posters are still at work */
        if (workers_done(wk, 8)) {
            chans_dump(&w);
            GDA_FT_FAIL("the posters finished before every channel failed "
                        "back (%u of %u)", CHAN_WORLD_SUM(&w, failbacks),
                        params.nchan);
        }
        usleep(100);
    }
    failback_ns = gda_ft_dev_now_ns();
    workers_stop(wk, 8);
    workers_join(th, 8);
    for (t = 0; t < 8; ++t) {
        end_ns = (wk[t].end_ns < end_ns) ? wk[t].end_ns : end_ns;
    }
    GDA_FT_ASSERT(failback_ns < end_ns);
    chans_verify_failed_back(&w, wk, 8);
    chan_world_fini(&w);
}

/*
 * A channel that always has work in flight still takes its primary back.
 * Re-arm notices were read only when the channel was idle, and a closed
 * loop that posts the next operation before it waits for the last one is
 * never idle: on the GPU, a steady load that switched once stayed on the
 * backup for the rest of a 30 s run. Here the backup is paced so that a
 * put is still in flight at the first progress call after the re-arm:
 * that call takes the primary back.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, failback_while_never_idle, 60)
{
    gda_ft_soft_fault_t fault = {0};
    chan_world_params_t params;
    gda_ft_dev_request_t req;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

    chan_switch_and_rearm(&w);
    usleep(params.deadline_ns / 1000);   /* past the next look at notices */

    /* 16 packets of the backup 0.5 ms apart: in flight for 8 ms, within
     * the QP's retransmission timeout (4.2 ms) packet by packet and within
     * a deadline in all */
    fault.pace_time = 0.0005;
    GDA_FT_ASSERT_OK(soft_port_set_fault(w.dev[1], 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w.ep, &w.ml, CHAN_ELEM_DATA,
                                           4096, 4096, 16 * CHAN_WORLD_MTU,
                                           0, &req),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT(gda_ft_chan_completed(&w.chans[0]) !=
                  gda_ft_chan_ready(&w.chans[0]));
    /* the failback begins with the put in flight (it waits for the
     * backup's drain), and ends once the put completed */
    gda_ft_chan_progress(&w.chans[0]);
    GDA_FT_ASSERT(w.chans[0].word & GDA_FT_CHAN_FROZEN);
    GDA_FT_ASSERT_EQ(w.chans[0].sw.phase, GDA_FT_CHAN_PHASE_DRAIN);
    GDA_FT_ASSERT_EQ(worker_wait(&req), GDA_FT_DEV_OK);
    worker_settle(&w.chans[0]);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.failbacks, 1);
    GDA_FT_ASSERT_MEM_EQ(w.dst, w.src, 4096 + 16 * CHAN_WORLD_MTU);
    GDA_FT_ASSERT_EQ(w.chans[0].active, GDA_FT_CHAN_PRIMARY);
    GDA_FT_ASSERT_EQ(w.chans[0].counters.switches, 1);
    chan_world_fini(&w);
}

/*
 * A path left for an operation's error is re-armed at once, and the re-arm
 * probes it with a WQE at ring index 0. The poster's switch may still be
 * copying its window out of that ring then: the host waits until the
 * switch says it is over (mailbox done_epoch), whatever else is ready.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, rearm_waits_for_the_switch_to_end, 60)
{
    gda_ft_chan_host_t *host = NULL;
    chan_world_params_t params;
    uint8_t ring0[GDA_FT_MLX5_WQE_BB];
    gda_ft_chan_t *chan;
    uint32_t record;
    double deadline;
    unsigned pass;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    host = &w.a[0];
    chan = &w.chans[0];
    memcpy(ring0, host->path[GDA_FT_CHAN_PRIMARY].sq_buf, sizeof(ring0));

    /* the poster leaves the primary for an operation's error: its record */
    GDA_FT_ASSERT(gda_ft_chan_tell_host(chan, GDA_FT_CHAN_PRIMARY,
                                        GDA_FT_CHAN_WHY_OP_ERROR, 0, 0,
                                        &record));
    GDA_FT_ASSERT_EQ(record, 1);
    for (pass = 0; pass < 200; ++pass) {
        gda_ft_chan_host_guard(host, &chan_peer_ops, &w,
                               gda_ft_dev_now_ns());
        usleep(100);
    }
    /* answered and fenced, but neither re-armed nor probed */
    GDA_FT_ASSERT_EQ(host->mbox->ans_seq, 1);
    GDA_FT_ASSERT_EQ(host->counters.fences, 1);
    GDA_FT_ASSERT_EQ(host->counters.rearms, 0);
    GDA_FT_ASSERT_EQ(host->mbox->rearm[GDA_FT_CHAN_PRIMARY], 0);
    GDA_FT_ASSERT(!host->path[GDA_FT_CHAN_PRIMARY].probing);
    GDA_FT_ASSERT_MEM_EQ(host->path[GDA_FT_CHAN_PRIMARY].sq_buf, ring0,
                         sizeof(ring0));

    /* the switch is over: re-armed, probed, and the posters told where the
     * ring and the PSNs go on */
    gda_ft_chan_switch_ended(chan, 0);
    deadline = soft_now_sec() + 10;
    while (host->mbox->rearm[GDA_FT_CHAN_PRIMARY] == 0) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        gda_ft_chan_host_guard(host, &chan_peer_ops, &w,
                               gda_ft_dev_now_ns());
        usleep(20);
    }
    GDA_FT_ASSERT_EQ(host->counters.rearms, 1);
    GDA_FT_ASSERT_EQ(host->mbox->rearm_ring[GDA_FT_CHAN_PRIMARY], 1);
    GDA_FT_ASSERT_EQ(host->mbox->rearm_psn[GDA_FT_CHAN_PRIMARY],
                     (host->path[GDA_FT_CHAN_PRIMARY].conn.sq_psn + 1) &
                     0xffffff);
    chan_world_fini(&w);
}

/*
 * What the peer found on the path counts here too. A port failure seen
 * by one side only when it posts again took a second deadline after the
 * other side had switched (the MoE job: 230 ms instead of 115 at a 100 ms
 * deadline, in about one 2-rank run of three). Our host hears of it in the
 * peer's fence question (mailbox peer_left), and a channel with work in
 * flight on the primary follows within an eighth of a deadline, on a
 * healthy path losing nothing.
 */
GDA_FT_TEST_TIMEOUT(dev_chan, busy_channel_follows_the_peers_finding, 60)
{
    chan_world_params_t params;
    chan_worker_t wk[2];
    pthread_t th[2];
    uint64_t hinted, decided;
    double deadline;
    chan_world_t w;

    chan_world_default_params(&params);
    params.nchan = 1;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    workers_start_under_way(&w, wk, th, 2, 4000, 0);

    hinted = gda_ft_dev_now_ns();
    gda_ft_chan_host_peer_left(&w.a[0]);
    deadline = soft_now_sec() + 10;
    while (gda_ft_atomic_load_acq32(&w.chans[0].counters.switches) == 0) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(100);
    }
    workers_join(th, 2);
    decided = w.chans[0].detect_ns;
    printf("decided %.2f ms after the peer's finding (deadline %.0f ms)\n",
           (decided - hinted) / 1e6, params.deadline_ns / 1e6);

    GDA_FT_ASSERT_EQ(w.a[0].mbox->rec[1].why, GDA_FT_CHAN_WHY_PEER);
    GDA_FT_ASSERT(decided - hinted < params.deadline_ns / 2);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, in_doubt), 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(&w, no_path), 0);
    workers_verify(&w, wk, 2);
    chan_verify_psns(&w, 0);
    chan_world_fini(&w);
}
