/*
 * Poster threads of the channel tests: each posts puts, put_signals,
 * signals, fetch-adds and batches into one channel of a chan_world_t (a
 * world of its own, or a view of UCT endpoints' channels), and the check
 * of everything they did: every byte, signal and fetched value, and no
 * ring slot handed out twice; then the checks of the world's channels
 * after a failure (PSNs in ring order, every channel failed back).
 */
#ifndef GDA_FT_CHAN_WORKERS_H_
#define GDA_FT_CHAN_WORKERS_H_

#include "chan_harness.h"

#define WORKER_MAX_POSTS  8192
#define WORKER_MAX_FADDS  512
#define WORKER_BLOCK      4096

typedef struct chan_worker {
    chan_world_t *w;
    unsigned      id;
    unsigned      nthreads;
    unsigned      iters;
    unsigned      chan;
    unsigned      signals;        /* signal adds that completed OK */
    unsigned      fadds;          /* fetch-adds posted */
    unsigned      in_doubt;       /* fetch-adds reported IN_DOUBT */
    uint64_t      fetched[WORKER_MAX_FADDS];
    uint8_t       fetched_ok[WORKER_MAX_FADDS];
    uint64_t      res_start[WORKER_MAX_POSTS];
    uint64_t      res_end[WORKER_MAX_POSTS];
    unsigned      nres;
    gda_ft_dev_status_t failure;  /* first unexpected status */
    unsigned      fail_iter;
    uint64_t      end_ns;         /* when it stopped (atomic: 0 running) */
    int           stop;           /* atomic: set by workers_stop() */
    int           use_poster;     /* posts through `poster`, not the
                                     plain calls */
    gda_ft_dev_poster_t poster;
} chan_worker_t;

/* Waits for a request to finish; returns its status */
gda_ft_dev_status_t worker_wait(gda_ft_dev_request_t *req);

/* Progresses chan until no switch is under way: a request may complete
 * while the switch that its late completion raced waits for the host */
void worker_settle(gda_ft_chan_t *chan);

/* n threads, `iters` operations each, thread t on channel t % nchan */
void workers_start(chan_world_t *w, chan_worker_t *wk, pthread_t *th,
                   unsigned n, unsigned iters);

/* The same, thread t posting through a poster (gda_ft_dev_poster_t) when
 * bit t of posters is set */
void workers_start_posters(chan_world_t *w, chan_worker_t *wk, pthread_t *th,
                           unsigned n, unsigned iters, unsigned posters);
void workers_join(pthread_t *th, unsigned n);

/* Whether all n have ended their run (or failed) */
int workers_done(chan_worker_t *wk, unsigned n);

/* Ends their runs after the current iteration; iters becomes what each
 * one did, so that workers_verify() checks that much */
void workers_stop(chan_worker_t *wk, unsigned n);

/* Every byte written, every signal, every fetched value; no slot twice */
void workers_verify(chan_world_t *w, chan_worker_t *wk, unsigned n);

/* Starts n posters as workers_start_posters(), and returns once they have
 * completed a tenth of their iterations: a fault injected then comes
 * mid-run on any machine */
void workers_start_under_way(chan_world_t *w, chan_worker_t *wk,
                             pthread_t *th, unsigned n,
                             unsigned iters, unsigned posters);

/* PSNs follow ring order on channel c's active path and end where the QP
 * is */
void chan_verify_psns(chan_world_t *w, unsigned c);

/* Channel and QP state, printed when a test gives up waiting */
void chans_dump(chan_world_t *w);

/* Keeps calling progress until every channel is back on its primary
 * after `returns` returns in all (failbacks, and switches off the
 * backup), or 10 s */
void chans_wait_failback(chan_world_t *w, uint32_t returns);

/* Progresses every channel until each one is active on `path` with
 * `regains` paths taken back after losing both, or fails after 20 s */
void chans_wait_active_on(chan_world_t *w, uint8_t path, uint32_t regains);

/* Posts a 64-byte put on every channel of w (req[c]: channel c's), then
 * waits for each: it must end with `expect` */
void chans_put_each(chan_world_t *w, gda_ft_dev_request_t *req,
                    gda_ft_dev_status_t expect);

/* Once every channel of w took its backup back after losing both paths,
 * the primary's port down, with req[c] a request that ended NO_PATH on
 * channel c: the request still reads NO_PATH and a quiet reports it once;
 * 4 posters then run exactly there and through the primary's return, and
 * every channel fails back */
void chans_verify_regained(chan_world_t *w, gda_ft_dev_request_t *req);

/* After a port failure and its return under n posters: every channel back
 * on its primary and quiet, everything exact, each switch with its
 * failback, PSNs in ring order, no channel without a path */
void chans_verify_failed_back(chan_world_t *w, chan_worker_t *wk,
                              unsigned n);

#endif
