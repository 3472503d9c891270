/*
 * Poster threads of the channel tests, and the checks of a world after
 * them (see chan_workers.h).
 */
#include "chan_workers.h"
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t worker_region(const chan_worker_t *wk)
{
    return wk->w->params.data_len / wk->nthreads;
}

/* Where iteration i of a worker writes, and how much */
static void worker_put_geometry(const chan_worker_t *wk, unsigned i,
                                uint64_t *off_p, uint32_t *len_p)
{
    size_t blocks = worker_region(wk) / WORKER_BLOCK;

    *off_p = wk->id * worker_region(wk) + (i % blocks) * WORKER_BLOCK;
    *len_p = 8 + ((i * 97 + wk->id * 13) % (WORKER_BLOCK - 8));
}

static void worker_record(chan_worker_t *wk, const gda_ft_dev_request_t *req,
                          unsigned wqebbs)
{
    if (wk->nres == WORKER_MAX_POSTS) {
        return;     /* a run until failure: nothing to verify */
    }
    wk->res_start[wk->nres] = req->end - wqebbs;
    wk->res_end[wk->nres]   = req->end;
    ++wk->nres;
}

gda_ft_dev_status_t worker_wait(gda_ft_dev_request_t *req)
{
    gda_ft_dev_status_t status;

    do {
        status = gda_ft_dev_progress(req);
    } while (status == GDA_FT_DEV_INPROGRESS);
    return status;
}

void worker_settle(gda_ft_chan_t *chan)
{
    uint32_t state;

    do {
        gda_ft_chan_progress(chan);
        state = gda_ft_atomic_load_acq32(&chan->state);
    } while ((state != GDA_FT_CHAN_ACTIVE) && (state != GDA_FT_CHAN_NO_PATH));
}

/* Waits for a fetch-add posted into result slot `slot` (at loff) and
 * keeps what it fetched */
static gda_ft_dev_status_t worker_fetched(chan_worker_t *wk,
                                          gda_ft_dev_request_t *req,
                                          unsigned slot, uint64_t loff)
{
    gda_ft_dev_status_t status = worker_wait(req);

    if (status == GDA_FT_DEV_OK) {
        wk->fetched[slot]    = gda_ft_dev_fetched(
                &wk->w->ep, (uint8_t*)wk->w->results + loff);
        wk->fetched_ok[slot] = 1;
    } else if (status == GDA_FT_DEV_IN_DOUBT) {
        ++wk->in_doubt;
        status = GDA_FT_DEV_OK;
    }
    return status;
}

/* Iteration i's batch, as a warp posts it: four puts */
static void worker_batch_ops(chan_worker_t *wk, unsigned i,
                             gda_ft_chan_op_t ops[4])
{
    uint64_t off;
    uint32_t len;
    unsigned k;

    for (k = 0; k < 4; ++k) {
        worker_put_geometry(wk, i + k * 8, &off, &len);
        GDA_FT_ASSERT(gda_ft_dev_op_rdma(&ops[k], GDA_FT_CHAN_OP_PUT,
                                         &wk->w->ml, CHAN_ELEM_DATA, off,
                                         off, len));
    }
}

/*
 * Iteration i through the worker's poster: the operations that the plain
 * calls of worker_step post, built here, in one post each (put_signal: the
 * data, then its signal)
 */
static gda_ft_dev_status_t worker_step_poster(chan_worker_t *wk, unsigned i)
{
    static const unsigned wqebbs[8] = {1, 1, 1, 1, 2, 1, 1, 4};
    chan_world_t *w     = wk->w;
    gda_ft_chan_t *chan = wk->poster.chan;
    unsigned slot       = wk->fadds % WORKER_MAX_FADDS;
    uint64_t loff       = (wk->id * WORKER_MAX_FADDS + slot) *
                          sizeof(uint64_t);
    gda_ft_dev_status_t status;
    gda_ft_dev_request_t req;
    gda_ft_chan_op_t ops[4];
    unsigned n = 1;
    uint64_t off;
    uint32_t len;

    worker_put_geometry(wk, i, &off, &len);
    switch (i % 8) {
    case 4:
        GDA_FT_ASSERT(gda_ft_dev_op_rdma(&ops[0], GDA_FT_CHAN_OP_PUT, &w->ml,
                                         CHAN_ELEM_DATA, off, off, len));
        GDA_FT_ASSERT(gda_ft_dev_op_signal(&ops[1], chan, &w->ml,
                                           CHAN_ELEM_SIGNAL, wk->id * 8, 1));
        n = 2;
        break;
    case 5:
        GDA_FT_ASSERT(gda_ft_dev_op_signal(&ops[0], chan, &w->ml,
                                           CHAN_ELEM_SIGNAL, wk->id * 8, 1));
        break;
    case 6:
        GDA_FT_ASSERT(gda_ft_dev_op_atomic(&ops[0], GDA_FT_CHAN_OP_ATOMIC,
                                           GDA_FT_MLX5_OPCODE_ATOMIC_FA,
                                           &w->ml, CHAN_ELEM_COUNTER, loff,
                                           0, 1, 0));
        ++wk->fadds;
        break;
    case 7:
        worker_batch_ops(wk, i, ops);
        n = 4;
        break;
    default:
        GDA_FT_ASSERT(gda_ft_dev_op_rdma(&ops[0], GDA_FT_CHAN_OP_PUT, &w->ml,
                                         CHAN_ELEM_DATA, off, off, len));
        break;
    }
    status = gda_ft_dev_poster_post(&wk->poster, ops, n, &req);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }
    worker_record(wk, &req, wqebbs[i % 8]);
    if ((i % 8) == 6) {
        return worker_fetched(wk, &req, slot, loff);
    }
    wk->signals += ((i % 8) == 4) || ((i % 8) == 5);
    return GDA_FT_DEV_OK;
}

/* One iteration: returns the post's status */
static gda_ft_dev_status_t worker_step(chan_worker_t *wk, unsigned i)
{
    chan_world_t *w = wk->w;
    gda_ft_chan_op_t ops[4];
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t status;
    uint64_t off, loff;
    uint32_t len;
    unsigned slot;

    if (wk->use_poster) {
        return worker_step_poster(wk, i);
    }
    worker_put_geometry(wk, i, &off, &len);
    slot = wk->fadds % WORKER_MAX_FADDS;
    loff = (wk->id * WORKER_MAX_FADDS + slot) * sizeof(uint64_t);
    switch (i % 8) {
    case 4:
        status = gda_ft_dev_put_signal(&w->ep, &w->ml, CHAN_ELEM_DATA, off,
                                       off, len, CHAN_ELEM_SIGNAL,
                                       wk->id * 8, 1, wk->chan, &req);
        if (status == GDA_FT_DEV_OK) {
            worker_record(wk, &req, 2);
            ++wk->signals;
        }
        return status;
    case 5:
        status = gda_ft_dev_signal(&w->ep, &w->ml, CHAN_ELEM_SIGNAL,
                                   wk->id * 8, 1, wk->chan, &req);
        if (status == GDA_FT_DEV_OK) {
            worker_record(wk, &req, 1);
            ++wk->signals;
        }
        return status;
    case 6:
        ++wk->fadds;
        status = gda_ft_dev_atomic_fetch_add(&w->ep, &w->ml,
                                             CHAN_ELEM_COUNTER, loff, 0, 1,
                                             wk->chan, &req);
        if (status != GDA_FT_DEV_OK) {
            return status;
        }
        worker_record(wk, &req, 1);
        return worker_fetched(wk, &req, slot, loff);
    case 7:
        /* a batch, as a warp posts: one reservation, one doorbell */
        worker_batch_ops(wk, i, ops);
        status = gda_ft_dev_post(&w->chans[wk->chan], ops, 4, &req);
        if (status == GDA_FT_DEV_OK) {
            worker_record(wk, &req, 4);
        }
        return status;
    default:
        status = gda_ft_dev_put_single(&w->ep, &w->ml, CHAN_ELEM_DATA, off,
                                       off, len, wk->chan, &req);
        if (status == GDA_FT_DEV_OK) {
            worker_record(wk, &req, 1);
        }
        return status;
    }
}

/* Quiet reports the first failure since the last quiet on the channel: a
 * fetch-add in doubt was counted already when its request reported it */
static gda_ft_dev_status_t worker_quiet(chan_worker_t *wk)
{
    gda_ft_dev_status_t status = gda_ft_dev_quiet(&wk->w->ep, wk->chan, 0);

    return (status == GDA_FT_DEV_IN_DOUBT) ? GDA_FT_DEV_OK : status;
}

static void *worker_run(void *arg)
{
    chan_worker_t *wk = (chan_worker_t*)arg;
    gda_ft_dev_status_t status;
    unsigned i;

    for (i = 0; (i < wk->iters) &&
                !__atomic_load_n(&wk->stop, __ATOMIC_ACQUIRE); ++i) {
        status = worker_step(wk, i);
        if ((status == GDA_FT_DEV_OK) && ((i % 256) == 255)) {
            status = worker_quiet(wk);
        }
        if (status != GDA_FT_DEV_OK) {
            wk->failure   = status;
            wk->fail_iter = i;
            break;
        }
    }
    if (wk->failure == GDA_FT_DEV_OK) {
        wk->iters   = i;
        wk->failure = worker_quiet(wk);
    }
    __atomic_store_n(&wk->end_ns, gda_ft_dev_now_ns(), __ATOMIC_RELEASE);
    return NULL;
}

void workers_start_posters(chan_world_t *w, chan_worker_t *wk, pthread_t *th,
                           unsigned n, unsigned iters, unsigned posters)
{
    unsigned t;

    for (t = 0; t < n; ++t) {
        memset(&wk[t], 0, sizeof(wk[t]));
        wk[t].w          = w;
        wk[t].id         = t;
        wk[t].nthreads   = n;
        wk[t].iters      = iters;
        wk[t].chan       = t % w->params.nchan;
        wk[t].use_poster = !!(posters & (1u << t));
        GDA_FT_ASSERT_EQ(gda_ft_dev_poster_init(&wk[t].poster, &w->ep,
                                                wk[t].chan), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(pthread_create(&th[t], NULL, worker_run, &wk[t]),
                         0);
    }
}

void workers_start(chan_world_t *w, chan_worker_t *wk, pthread_t *th,
                   unsigned n, unsigned iters)
{
    workers_start_posters(w, wk, th, n, iters, 0);
}

void workers_join(pthread_t *th, unsigned n)
{
    unsigned t;

    for (t = 0; t < n; ++t) {
        pthread_join(th[t], NULL);
    }
}

int workers_done(chan_worker_t *wk, unsigned n)
{
    unsigned t;

    for (t = 0; t < n; ++t) {
        if (__atomic_load_n(&wk[t].end_ns, __ATOMIC_ACQUIRE) == 0) {
            return 0;
        }
    }
    return 1;
}

void workers_stop(chan_worker_t *wk, unsigned n)
{
    unsigned t;

    for (t = 0; t < n; ++t) {
        __atomic_store_n(&wk[t].stop, 1, __ATOMIC_RELEASE);
    }
}

void workers_verify(chan_world_t *w, chan_worker_t *wk, unsigned n)
{
    uint64_t *starts, total_fadds = 0, off;
    unsigned t, i, c, k, nvals = 0, nres;
    uint32_t len;
    uint8_t *written = calloc(1, w->params.data_len);
    uint64_t *vals;

    for (t = 0; t < n; ++t) {
        if (wk[t].failure != GDA_FT_DEV_OK) {
            printf("worker %u failed at iteration %u: switches %u "
                   "op_errors %u no_path %u in_doubt %u error 0x%x\n", t,
                   wk[t].fail_iter, CHAN_WORLD_SUM(w, switches),
                   CHAN_WORLD_SUM(w, op_errors), CHAN_WORLD_SUM(w, no_path),
                   CHAN_WORLD_SUM(w, in_doubt), w->chans[wk[t].chan].error);
        }
        GDA_FT_ASSERT_EQ(wk[t].failure, GDA_FT_DEV_OK);
        GDA_FT_ASSERT(wk[t].nres < WORKER_MAX_POSTS);
        GDA_FT_ASSERT(wk[t].fadds <= WORKER_MAX_FADDS);
        for (i = 0; i < wk[t].iters; ++i) {
            for (k = 0; k < (((i % 8) == 7) ? 4u : 1u); ++k) {
                worker_put_geometry(&wk[t], i + k * 8, &off, &len);
                if (((i % 8) == 5) || ((i % 8) == 6)) {
                    continue;
                }
                memset(written + off, 1, len);
            }
        }
        if (w->signals[t] != wk[t].signals) {
            printf("worker %u on channel %u: %u signals posted, %lu "
                   "arrived\n", t, wk[t].chan, wk[t].signals,
                   (unsigned long)w->signals[t]);
        }
        GDA_FT_ASSERT_EQ(w->signals[t], wk[t].signals);
        total_fadds += wk[t].fadds;
    }
    for (off = 0; off < w->params.data_len; ++off) {
        if (written[off] && (w->dst[off] != w->src[off])) {
            GDA_FT_FAIL("byte %lu differs", (unsigned long)off);
        }
    }
    free(written);

    /* every fetch-add ran exactly once; none returned a value twice */
    GDA_FT_ASSERT_EQ(w->counters[0], total_fadds);
    vals = calloc(total_fadds + 1, sizeof(*vals));
    for (t = 0; t < n; ++t) {
        for (i = 0; i < wk[t].fadds; ++i) {
            if (wk[t].fetched_ok[i]) {
                GDA_FT_ASSERT(wk[t].fetched[i] < total_fadds);
                vals[nvals++] = wk[t].fetched[i];
            }
        }
    }
    qsort(vals, nvals, sizeof(*vals), chan_cmp_u64);
    for (i = 1; i < nvals; ++i) {
        GDA_FT_ASSERT_NE(vals[i], vals[i - 1]);
    }
    free(vals);

    /* reservations of each channel tile [resv_base, word) without
     * overlap */
    for (c = 0; c < w->params.nchan; ++c) {
        starts = calloc(WORKER_MAX_POSTS * n, 2 * sizeof(uint64_t));
        nres   = 0;
        for (t = 0; t < n; ++t) {
            if (wk[t].chan != c) {
                continue;
            }
            for (i = 0; i < wk[t].nres; ++i) {
                starts[2 * nres]     = wk[t].res_start[i];
                starts[2 * nres + 1] = wk[t].res_end[i];
                ++nres;
            }
        }
        qsort(starts, nres, 2 * sizeof(uint64_t), chan_cmp_u64);
        for (i = 0; i < nres; ++i) {
            GDA_FT_ASSERT_EQ(starts[2 * i], (i == 0) ? w->resv_base[c] :
                                            starts[2 * i - 1]);
        }
        GDA_FT_ASSERT_EQ(starts[2 * nres - 1],
                         GDA_FT_CHAN_WORD_INDEX(w->chans[c].word));
        free(starts);
    }
}

/* PSNs follow ring order on the active path and end where the QP is */
void chan_verify_psns(chan_world_t *w, unsigned c)
{
    gda_ft_chan_t *chan = &w->chans[c];
    gda_ft_chan_path_t *p = &chan->path[chan->active];
    uint64_t end = GDA_FT_CHAN_WORD_INDEX(chan->word), seq;
    uint64_t start = (end > chan->wqebb_cnt) ? end - chan->wqebb_cnt : 0;
    gda_ft_hca_qp_query_attr_t qattr;
    gda_ft_chan_slot_t *slot, *prev = NULL;

    /* from the first WQE of this path's incarnation within the window */
    if (start < p->ring_off) {
        start = p->ring_off;
    }
    while ((start < end) && (gda_ft_chan_slot(chan, p, start)->seq != start)) {
        ++start;
    }
    for (seq = start; seq < end; seq += slot->wqebbs) {
        slot = gda_ft_chan_slot(chan, p, seq);
        GDA_FT_ASSERT_EQ(slot->seq, seq);
        if (prev != NULL) {
            GDA_FT_ASSERT_EQ(slot->psn, gda_ft_dev_psn_add(prev->psn,
                                                            prev->npkts));
        }
        prev = slot;
    }
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(w->a[c].path[chan->active].qp,
                                         &qattr));
    GDA_FT_ASSERT_EQ(qattr.sq_psn, p->next_psn);
}

/* Whether every channel is back on its primary */
static int chans_on_primary(chan_world_t *w)
{
    unsigned c;

    for (c = 0; c < w->params.nchan; ++c) {
        if ((__atomic_load_n(&w->chans[c].state, __ATOMIC_ACQUIRE) !=
             GDA_FT_CHAN_ACTIVE) ||
            (__atomic_load_n(&w->chans[c].active, __ATOMIC_ACQUIRE) !=
             GDA_FT_CHAN_PRIMARY)) {
            return 0;
        }
    }
    return 1;
}

/* Channel and QP state, printed when a test gives up waiting */
void chans_dump(chan_world_t *w)
{
    gda_ft_hca_qp_query_attr_t qa, qb;
    const gda_ft_chan_record_t *rec;
    gda_ft_chan_t *ch;
    uint16_t cnt[2];
    uint8_t own[2];
    unsigned c, p, r;

    for (c = 0; c < w->params.nchan; ++c) {
        ch = &w->chans[c];
        for (p = 0; p < 2; ++p) {
            own[p] = gda_ft_chan_read_cqe_tail(&ch->path[p], &cnt[p]);
        }
        printf("chan %u: state %u active %u word 0x%lx ready %lu completed "
               "0x%lx failed %u/%u cqe 0x%x:%u 0x%x:%u records %u/%u "
               "switches %u failbacks %u\n", c,
               ch->state, ch->active, (unsigned long)ch->word,
               (unsigned long)ch->ready, (unsigned long)ch->completed,
               ch->path[0].failed, ch->path[1].failed, own[0], cnt[0],
               own[1], cnt[1], ch->mbox->req_seq, ch->mbox->ans_seq,
               ch->counters.switches, ch->counters.failbacks);
        for (r = 1; (r <= ch->mbox->req_seq) &&
                    (r <= GDA_FT_CHAN_MBOX_RECORDS); ++r) {
            rec = &ch->mbox->rec[r % GDA_FT_CHAN_MBOX_RECORDS];
            printf("chan %u record %u: left path %u why %u freeze %lu\n",
                   c, r, rec->failed, rec->why, (unsigned long)rec->freeze);
        }
        for (p = 0; p < 2; ++p) {
            gda_ft_hca_qp_query(w->a[c].path[p].qp, &qa);
            gda_ft_hca_qp_query(w->b[c].path[p].qp, &qb);
            printf("chan %u path %u: A state %d sq_psn 0x%x; B state %d "
                   "rq_psn 0x%x; channel's next PSN 0x%x\n", c, p, qa.state,
                   qa.sq_psn, qb.state, qb.rq_psn, ch->path[p].next_psn);
        }
    }
}

/* Returns to the primary: failbacks, and switches off the backup (on a
 * channel back on its primary, `switches` counts each twice, the move
 * off and the way back, and a failback not at all) */
static uint32_t chans_returns(chan_world_t *w)
{
    uint32_t returns = 0, switches, failbacks;
    unsigned c;

    for (c = 0; c < w->params.nchan; ++c) {
        switches  = __atomic_load_n(&w->chans[c].counters.switches,
                                    __ATOMIC_ACQUIRE);
        failbacks = __atomic_load_n(&w->chans[c].counters.failbacks,
                                    __ATOMIC_ACQUIRE);
        returns  += failbacks +
                    ((switches > failbacks) ? (switches - failbacks) / 2 : 0);
    }
    return returns;
}

void chans_wait_failback(chan_world_t *w, uint32_t returns)
{
    double deadline = soft_now_sec() + 10;
    unsigned c;

    while ((chans_returns(w) < returns) || !chans_on_primary(w)) {
        for (c = 0; c < w->params.nchan; ++c) {
            gda_ft_chan_progress(&w->chans[c]);
        }
        if (soft_now_sec() > deadline) {
            chans_dump(w);
            GDA_FT_FAIL("%u of %u returns to the primary in 10 s",
                        chans_returns(w), returns);
        }
        usleep(100);
    }
}

/*
 * Starts n posters of iters iterations each, and returns once they have
 * completed a tenth of them (each iteration posts at least one WQE): a
 * fault injected then comes mid-run on any machine. A fixed 30 ms did not:
 * on 16 cores the posters were done before it, nothing switched, and the
 * test waited for a failback.
 */
void workers_start_under_way(chan_world_t *w, chan_worker_t *wk,
                             pthread_t *th, unsigned n,
                             unsigned iters, unsigned posters)
{
    double deadline = soft_now_sec() + 60;

    workers_start_posters(w, wk, th, n, iters, posters);
    while (chan_world_completed(w) < n * iters / 10) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(10);
    }
}

/*
 * After a port failure and its return under n posters: every channel back
 * on its primary and quiet, everything the posters did exact, each move
 * off the primary matched by a return, PSNs in ring order, and no channel
 * without a path. A return is a failback, or, where a machine stalls the
 * software HCA for a deadline (a sanitizer build on 2 busy cores), a
 * switch off the backup onto the re-armed primary. `switches` counts
 * moves both ways but not failbacks, so it exceeds `failbacks` by twice
 * the number of such switches.
 */
void chans_verify_failed_back(chan_world_t *w, chan_worker_t *wk,
                              unsigned n)
{
    unsigned c;

    chans_wait_failback(w, w->params.nchan);
    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w->ep, c, 1000000000ull),
                         GDA_FT_DEV_OK);
    }
    workers_verify(w, wk, n);
    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(w->chans[c].active, GDA_FT_CHAN_PRIMARY);
        GDA_FT_ASSERT(w->chans[c].counters.switches >= 1);
        GDA_FT_ASSERT(w->chans[c].counters.switches >=
                      w->chans[c].counters.failbacks);
        GDA_FT_ASSERT_EQ((w->chans[c].counters.switches -
                          w->chans[c].counters.failbacks) % 2, 0);
        chan_verify_psns(w, c);
    }
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(w, no_path), 0);
}

void chans_wait_active_on(chan_world_t *w, uint8_t path, uint32_t regains)
{
    double until = soft_now_sec() + 20;
    unsigned c, done;

    do {
        if (soft_now_sec() > until) {
            chans_dump(w);
            GDA_FT_FAIL("channels not active on path %u with %u regains "
                        "in 20 s", path, regains);
        }
        usleep(1000);
        for (c = done = 0; c < w->params.nchan; ++c) {
            gda_ft_chan_progress(&w->chans[c]);
            done += (w->chans[c].state == GDA_FT_CHAN_ACTIVE) &&
                    (w->chans[c].active == path) &&
                    (w->chans[c].regains == regains);
        }
    } while (done < w->params.nchan);
}

void chans_verify_regained(chan_world_t *w, gda_ft_dev_request_t *req)
{
    chan_worker_t wk[4];
    pthread_t th[4];
    double until;
    unsigned c;

    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_request_outcome(&req[c]),
                         GDA_FT_DEV_NO_PATH);
        /* the failure since the last quiet, once */
        GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w->ep, c, 0), GDA_FT_DEV_NO_PATH);
        GDA_FT_ASSERT_EQ(gda_ft_dev_quiet(&w->ep, c, 0), GDA_FT_DEV_OK);
        w->resv_base[c] = GDA_FT_CHAN_WORD_INDEX(w->chans[c].word);
    }
    workers_start_under_way(w, wk, th, 4, 400, 0);
    chan_world_port(w, GDA_FT_CHAN_PRIMARY, 1);
    until = soft_now_sec() + 60;
    while (!workers_done(wk, 4)) {
        GDA_FT_ASSERT(soft_now_sec() < until);
        usleep(1000);
    }
    workers_join(th, 4);
    workers_verify(w, wk, 4);
    chans_wait_active_on(w, GDA_FT_CHAN_PRIMARY, 1);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(w, no_path), w->params.nchan);
}

void chans_put_each(chan_world_t *w, gda_ft_dev_request_t *req,
                    gda_ft_dev_status_t expect)
{
    unsigned c;

    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(gda_ft_dev_put_single(&w->ep, &w->ml,
                                               CHAN_ELEM_DATA, c * 64,
                                               c * 64, 64, c, &req[c]),
                         GDA_FT_DEV_OK);
    }
    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(worker_wait(&req[c]), expect);
    }
}
