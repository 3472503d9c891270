/*
 * moe: the program's internals, shared by its files. The options; what a
 * rank reports to the launcher; the messages between them and the
 * counters a summary adds up (moe_msg.c); a rank (moe_rank.c); the
 * launcher's report of a job (moe_report.c). The launcher and main are
 * moe_launcher.c's; the iterations themselves, run by a kernel or CPU
 * threads, moe.h's.
 */
#ifndef MOE_INT_H_
#define MOE_INT_H_

#include "moe.h"

#include <stdint.h>

#define MOE_MAX_ITERS 10000
#define MOE_MAX_WORKERS 1024    /* a block of GPU threads */
#define MOE_MIN(_a, _b) (((_a) < (_b)) ? (_a) : (_b))
#define MOE_MAX(_a, _b) (((_a) > (_b)) ? (_a) : (_b))

/* The options, of the launcher and of every rank (moe_launcher.c) */
typedef struct moe_opt {
    unsigned    ranks, experts, topk, hidden, tokens, iters, workers, nchan;
    unsigned    blocks;       /* GPU: CTAs of every phase's kernel */
    int         fault_rank, fault_at, up_at;
    int         kill_rank, kill_at;   /* -1: none */
    int         rejoin_at;            /* -1: none */
    int         rejoined;             /* this process is the restarted
                                         rank */
    int         failover;     /* 1: on, 0: off, -1: both (--compare) */
    int         use_gpu;      /* -1: auto */
    int         engine_stats; /* each rank prints its engine's statistics */
    double      timeout;      /* of one wait, seconds */
    double      retry_window; /* failover off: the HCA's, seconds */
    const char *plot;
    uint64_t    seed;
    int         rank;         /* -1: launcher */
    int         sock;
} moe_opt_t;

extern moe_opt_t opt;

/* What a rank reports per iteration */
typedef struct {
    uint64_t dispatch_ns, combine_ns;
    uint32_t status;      /* gda_ft_dev_status_t; TIMEOUT: never finished */
    uint32_t on_backup;   /* channels of ours on the backup after it */
    uint32_t masked;      /* our (token, k) routed to a gone rank */
    uint32_t gone;        /* the ranks masked (bit r) */
} moe_iter_rec_t;

/* And once, at the end */
typedef struct {
    uint32_t done;        /* iterations that finished */
    uint32_t checked, wrong, signal_errors;
    uint32_t gpu;
    gda_ft_chan_counters_t chan;   /* of all our channels */
    double   first_backup_ms;  /* after the switch, 0: none */
    uint32_t masked;           /* tokens masked */
    uint32_t reserved;
    uint64_t gone_ns;          /* the transport gave a peer up (its clock,
                                  the latest of our peers), 0: never */
    uint64_t back_ns;          /* the restarted rank swapped in, 0: never */
} moe_summary_t;

typedef struct {
    moe_iter_rec_t *recs[MOE_MAX_RANKS];
    moe_summary_t   sum[MOE_MAX_RANKS];
    int             got[MOE_MAX_RANKS];
    int             failover;
    uint64_t        kill_ns;    /* when the killed rank died, 0: none */
    uint64_t        restart_ns; /* when it was started again, 0: never */
} moe_job_t;

/* Rank to launcher: a typed message; launcher to rank: blobs */
enum {
    MOE_MSG_GATHER = 1,   /* a contribution to an all-gather */
    MOE_MSG_REPORT = 2,   /* records and summary, once */
    MOE_MSG_BYE    = 3,   /* launcher: every rank reported */
    MOE_MSG_DYING  = 4    /* the rank kills itself now: its clock */
};


/* ---- messages between a rank and the launcher (moe_msg.c) -------------- */

/* Prints the error, as this rank or the launcher, and exits with 1 */
void moe_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                  noreturn));

/* All of len bytes from fd: 0, or -1 when it closed */
int moe_read(int fd, void *buf, size_t len);

/* A blob: its length, then its bytes; a typed message: its type, then a
 * blob */
void moe_send_blob(int fd, const void *buf, uint32_t len);
void moe_send_msg(int fd, uint32_t type, const void *buf, uint32_t len);

/* A blob received (malloc'd, one byte more than its length), NULL when
 * the other end closed */
void *moe_recv_blob(int fd, uint32_t *len_p);

/*
 * Every rank's blob, in rank order (the launcher relays); freed with
 * moe_free_all(). While it waits for the launcher, a rank calls `idle`
 * (moe_set_idle: its UCP worker's progress, which returns what it did): a
 * message it posted on a path that died moves to the other path only as
 * the sender progresses, and a peer that waits for it (a rank rejoining
 * while a port is down) would wait forever.
 */
void **moe_allgather(const void *buf, uint32_t len, uint32_t *lens);
void moe_set_idle(unsigned (*idle)(void *arg), void *arg);
void moe_free_all(void **all);

/* Adds the counters of b to a */
void moe_counters_add(gda_ft_chan_counters_t *a,
                      const gda_ft_chan_counters_t *b);


/* ---- a rank (moe_rank.c) ------------------------------------------------ */

/* A rank's whole life: connect, run the iterations, report */
int moe_rank_main(void);


/* ---- the launcher's report of a job (moe_report.c) ---------------------- */

/* Iterations that every rank present finished */
unsigned moe_job_done(const moe_job_t *job);

/* One line per iteration */
void moe_print_iterations(const moe_job_t *job);

/* The summary of a job, a line each into lines; returns how many */
unsigned moe_summary_lines(const moe_job_t *job, char lines[][80]);

/* Whether the job finished and everything it checked was exact */
int moe_job_ok(const moe_job_t *job);

/* The timeline of the jobs, plotted into opt.plot */
void moe_plot(const moe_job_t *jobs, unsigned njobs);

#endif
