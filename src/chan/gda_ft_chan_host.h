/*
 * Host half of a concurrent device channel (design §6.4): the two RC QPs
 * and their rings, and the guardian that answers the poster's switch
 * records, fences abandoned QPs, resolves with the peer and re-arms failed
 * paths for failback.
 *
 * It speaks to HCAs through the provider interface only, and to the peer
 * through gda_ft_chan_peer_ops_t, which the caller implements (UCT over
 * its out-of-band channel; the tests directly, both ends being local).
 * The host and the poster meet only through the channel's mailbox.
 */
#ifndef GDA_FT_CHAN_HOST_H_
#define GDA_FT_CHAN_HOST_H_

#include "gda_ft_hca.h"
#include "gda_ft_chan_types.h"

/* Where rings, CQEs, slots and the mailbox live: host memory for CPU
 * posters, host memory mapped into the GPU for kernels */
typedef struct gda_ft_chan_host_mem {
    void               *(*alloc)(size_t size, void *arg); /* zeroed, 64-byte
                                                              aligned */
    void                (*free)(void *ptr, void *arg);
    void                 *arg;
    gda_ft_hca_mem_type_t type;
} gda_ft_chan_host_mem_t;

typedef struct gda_ft_chan_host_params {
    unsigned               wqebb_cnt;   /* ring size, power of 2 */
    uint64_t               deadline_ns; /* 0: never switch on silence */
    uint64_t               resolve_ns;  /* wait for the peer's word */
    uint64_t               quiet_ns;    /* a peer heard on no path this
                                           long is not waited for (0:
                                           gda_ft_timing_quiet_ns() of a
                                           NIC) */
    uint32_t               max_chunk;   /* bytes per put/get WQE */
    uint64_t               recovery_ns; /* a failed path must stay up this
                                           long before it is re-armed */
    uint64_t               rearm_backoff_ns;     /* a failed path is re-armed
                                                    no sooner than this after
                                                    it was left (0: as soon
                                                    as it is ready); doubled
                                                    when it fails again within
                                                    ten recovery windows of a
                                                    re-arm, up to */
    uint64_t               rearm_backoff_max_ns; /* this */
    uint64_t               grace_ns;    /* completions of an abandoned QP
                                           still count this long before it
                                           is fenced (a slow path is not a
                                           dead one) */
    gda_ft_chan_host_mem_t mem;         /* rings, CQEs, mailbox: what the
                                           HCA or the host reads */
    gda_ft_chan_host_mem_t slot_mem;    /* per-WQE slots and the outcome
                                           table, which only the posters
                                           touch (GPU memory for kernels),
                                           zeroed; alloc NULL: mem */
    unsigned               rq_wqe_cnt;  /* receive WQEs of one data
                                           segment per QP (power of 2), in
                                           `mem`; 0: no receive queue */
    gda_ft_hca_cq_t       *recv_cq[2];  /* where each path's receives
                                           complete, with rq_wqe_cnt */
    int32_t               *event_armed; /* the send CQs' completion
                                           events (gda_ft_hca_cq_attr_t);
                                           NULL: none */
    int                    event_fd;
    uint32_t               no_path_final; /* 1: a channel that lost both
                                             paths stays without one (its
                                             user fails it); 0: it takes
                                             back the first path re-armed */
    uint32_t               db_defer;    /* WQEBBs a publication may leave
                                           for the next one to ring (0:
                                           every one rings; device
                                           gda_ft_chan_ring_later) */
} gda_ft_chan_host_params_t;

typedef struct gda_ft_chan_host_path {
    gda_ft_hca_pd_t     *pd;
    uint8_t              port;
    gda_ft_hca_cq_t     *cq;
    gda_ft_hca_qp_t     *qp;
    void                *wq_buf;      /* the RQ, then the SQ */
    void                *sq_buf;
    void                *rq_buf;      /* params.rq_wqe_cnt WQEs, or NULL;
                                         the owner posts them */
    void                *cqe;
    uint32_t            *dbrec;
    gda_ft_chan_slot_t  *slots;
    gda_ft_hca_qp_attr_t conn;        /* how it was last connected */
    int                  absent;      /* the channel has no such path: its
                                         QP is never connected */
    int                  needs_rearm; /* left by the poster, not re-armed */
    int                  rearm_now;   /* left for an error completion: the
                                         port is fine, no recovery wait */
    int                  rearming;    /* our QP is re-armed, the peer's is
                                         being asked */
    uint64_t             rearm_ask_ns;/* since when */
    uint32_t             left_epoch;  /* the channel's epoch when the
                                         poster left it */
    int                  probing;     /* both are: our probe is out */
    uint64_t             probe_ns;    /* since when */
    uint64_t             up_since_ns; /* port seen up since, 0: down */
    uint64_t             window_ns;   /* recovery window now (damped) */
    uint64_t             rearmed_ns;  /* last re-arm */
    uint64_t             left_ns;     /* when it was last left */
    uint64_t             backoff_ns;  /* re-arm no sooner after that */
} gda_ft_chan_host_path_t;


/* Where the guardian's time went on the last switch record it answered
 * (ns on the caller's clock, and the monotonic clock for the fences) */
typedef struct gda_ft_chan_host_answer_time {
    uint64_t waited_ns;  /* seen -> answering began: the grace period of a
                            record that asks for the peer's word, and the
                            guardian's passes */
    uint64_t fence_ns;   /* our end of the left path to ERR */
    uint64_t peer_ns;    /* the peer's word: its end fenced (the call that
                            answered) */
    uint32_t seq;        /* the record; 0: none answered yet */
    uint32_t reserved;
} gda_ft_chan_host_answer_time_t;

typedef struct gda_ft_chan_host {
    gda_ft_chan_t               chan;   /* the poster's view */
    gda_ft_chan_mbox_t         *mbox;
    void                       *scratch;
    uint64_t                   *outcomes; /* the posters' outcome table,
                                             in slot memory */
    gda_ft_hca_mr_t            *scratch_mr[2];
    gda_ft_chan_host_path_t     path[2];
    gda_ft_chan_host_params_t   params;
    uint32_t                    handled_seq;
    uint32_t                    pending_seq;  /* record seen, not answered */
    uint32_t                    fenced_seq;   /* record whose path we
                                                 fenced */
    uint64_t                    pending_ns;   /* when it was seen */
    uint64_t                    heard_ns;     /* last pass that heard the
                                                 peer on a path (or the
                                                 channel's creation) */
    int                         peer_quiet;   /* that pass's judgement
                                                 (mailbox peer_quiet) */
    gda_ft_chan_host_counters_t counters;
    gda_ft_chan_host_answer_time_t answer_time;
} gda_ft_chan_host_t;

/* Whether a switch for `why` found the path itself failing (not one
 * operation's fault, nor a failback): the peer's channels on it may
 * follow */
static inline int gda_ft_chan_why_path_failed(unsigned why)
{
    return (why == GDA_FT_CHAN_WHY_DEADLINE) ||
           (why == GDA_FT_CHAN_WHY_ERR_CQE) ||
           (why == GDA_FT_CHAN_WHY_RETRY);
}

/* The channel has no path `path` (no backup HCA at one end): the posters
 * never take it, and the guardian never re-arms it */
void gda_ft_chan_host_set_absent(gda_ft_chan_host_t *ch, unsigned path);

/* The peer's channels left our primary for its failure: our channels on
 * it with work in flight follow (mailbox peer_left) */
void gda_ft_chan_host_peer_left(gda_ft_chan_host_t *ch);

/*
 * What the guardian asks of the peer's end of a channel path. The peer may
 * be in another process: fence and rearm return UCS_INPROGRESS until its
 * answer comes, and the guardian asks again at its next pass with the same
 * arguments (an implementation keeps one question in flight and times it
 * out itself).
 */
typedef struct gda_ft_chan_peer_ops {
    /* Move the peer's QP of `path` to ERR and report the PSN it expected
     * next; `why` (GDA_FT_CHAN_WHY_*) is why our poster left the path,
     * which the peer's own channels may follow */
    ucs_status_t (*fence)(void *arg, gda_ft_chan_host_t *ch, unsigned path,
                          unsigned why, uint32_t *epsn_p);
    /* Re-arm the peer's QP of `path` (RESET -> RTS) towards ours, which is
     * ready: it receives from local->sq_psn on and sends from
     * local->rq_psn on */
    ucs_status_t (*rearm)(void *arg, gda_ft_chan_host_t *ch, unsigned path,
                          const gda_ft_hca_qp_attr_t *local);
    /* Whether the peer's port of `path` is up: 1 up, 0 down, -1 not
     * known */
    int          (*port_up)(void *arg, gda_ft_chan_host_t *ch,
                            unsigned path);
    /* Whether the peer's guardian answered or asked a question within
     * `ns`: a peer that takes part is worth waiting for, one that does not
     * run its progress (a long computation) is not */
    int          (*guardian_active)(void *arg, gda_ft_chan_host_t *ch,
                                    uint64_t ns);
} gda_ft_chan_peer_ops_t;

/* pd[path], port[path]: the primary and the backup HCA */
ucs_status_t gda_ft_chan_host_init(gda_ft_chan_host_t *ch,
                                   gda_ft_hca_pd_t *const *pd,
                                   const uint8_t *port, unsigned id,
                                   gda_ft_chan_health_t *health,
                                   const gda_ft_chan_host_params_t *params);

void gda_ft_chan_host_cleanup(gda_ft_chan_host_t *ch);

/* Brings the QP of `path` to RTS with attr (dest_qpn, dest_gid, PSNs,
 * timers); the channel starts counting PSNs at attr->sq_psn */
ucs_status_t gda_ft_chan_host_connect(gda_ft_chan_host_t *ch, unsigned path,
                                      const gda_ft_hca_qp_attr_t *attr);

/* RESET -> RTS of the QP of `path` towards the same peer QP, with new PSNs;
 * its ring restarts at 0 (the posters must have left the path, or the
 * channel must be a passive target) */
ucs_status_t gda_ft_chan_host_reconnect(gda_ft_chan_host_t *ch,
                                        unsigned path, uint32_t rq_psn,
                                        uint32_t sq_psn);

/*
 * One pass of the guardian: answers a new switch record (fence, resolve),
 * re-arms failed paths whose ports stayed up for the recovery window.
 * Returns 1 when it did something.
 */
int gda_ft_chan_host_guard(gda_ft_chan_host_t *ch,
                           const gda_ft_chan_peer_ops_t *peer, void *arg,
                           uint64_t now_ns);

/* Fences a QP and reports the PSN its receive side expected next: what
 * the peer's end does in gda_ft_chan_peer_ops_t.fence */
ucs_status_t gda_ft_chan_host_fence_qp(gda_ft_hca_qp_t *qp,
                                       uint32_t *epsn_p);


/*
 * Fills q from the guardian's counters and from `poster`: the posters'
 * channel where the host can read it (host memory, or a copy of a channel
 * in GPU memory). Reads it field by field with atomic loads, so posters
 * may run meanwhile. Safe beside a running guardian.
 */
void gda_ft_chan_host_query(const gda_ft_chan_host_t *ch,
                            const gda_ft_chan_t *poster,
                            gda_ft_chan_query_t *q);

/* One line of `gda_ft_softctl counters` for q, after `prefix`; returns
 * what snprintf returns */
int gda_ft_chan_query_format(const gda_ft_chan_query_t *q,
                             const char *prefix, char *buf, size_t max);

#endif
