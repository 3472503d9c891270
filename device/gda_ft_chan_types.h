/*
 * gda_ft device datapath: layout of a concurrent channel (design §6).
 *
 * A channel is one primary RC QP and one backup RC QP to one peer, each
 * with its own send ring, collapsed CQ and per-slot metadata. Any number of
 * posters (GPU threads, warps, CPU threads) post into it at once:
 *
 *  - word:      FROZEN | epoch | logical WQEBB index. A poster reserves
 *               WQEBBs with one CAS that checks FROZEN and ring space
 *               against `completed`; it never holds a reservation while
 *               waiting for space.
 *  - ready:     the word as the last publication left it: its index is
 *               the logical index published up to. Posters publish in
 *               ring order: each waits for ready to reach its reservation,
 *               then assigns its WQEs' PSNs, stamps them, rings the
 *               doorbell and advances ready. Beside it, `published` keeps
 *               that publication's next PSN and ring offset: a poster that
 *               finds the word still where ready says takes it with one
 *               CAS, its turn proven (no wait, no PSN to read).
 *  - completed: logical index completed up to, raised (atomic max) by
 *               whoever reads a CQE.
 *
 * Logical indices run on across path switches: a WQE keeps its logical
 * index when it is replayed on the other path (the switch copies the
 * window [completed, freeze) in order, one WQE for one WQE), so requests
 * never need remapping: logical = ring index + path.ring_off.
 *
 * The host and the GPU meet only through the host-mapped mailbox: the GPU
 * writes switch records, the host writes answers and re-arm notices, each
 * field with a single writer.
 */
#ifndef GDA_FT_CHAN_TYPES_H_
#define GDA_FT_CHAN_TYPES_H_

#include "gda_ft_dev_types.h"
#include "gda_ft_timing.h"

#define GDA_FT_CHAN_PRIMARY       0
#define GDA_FT_CHAN_BACKUP        1

/* The reservation word */
#define GDA_FT_CHAN_FROZEN        (1ull << 63)
#define GDA_FT_CHAN_EPOCH_SHIFT   48
#define GDA_FT_CHAN_EPOCH_MASK    0x7fffull
#define GDA_FT_CHAN_INDEX_MASK    ((1ull << GDA_FT_CHAN_EPOCH_SHIFT) - 1)

#define GDA_FT_CHAN_WORD(_epoch, _index) \
    ((((uint64_t)(_epoch) & GDA_FT_CHAN_EPOCH_MASK) << \
      GDA_FT_CHAN_EPOCH_SHIFT) | ((uint64_t)(_index) & GDA_FT_CHAN_INDEX_MASK))
#define GDA_FT_CHAN_WORD_EPOCH(_w) \
    (((_w) >> GDA_FT_CHAN_EPOCH_SHIFT) & GDA_FT_CHAN_EPOCH_MASK)
#define GDA_FT_CHAN_WORD_INDEX(_w) ((_w) & GDA_FT_CHAN_INDEX_MASK)
/*
 * What a publication leaves in `published` for the next poster: the
 * path's next PSN, the low 16 bits of its ring offset (all a post uses:
 * ring positions are masked, the WQE and doorbell counters are 16-bit),
 * and a check: the index it published plus one, its low 24 bits. `ready`
 * and `published` are two stores; a pair whose check does not match was
 * read torn (consecutive publications' differ, each taking 1 to
 * wqebb_cnt / 2 WQEBBs). A channel that published nothing has 0, which
 * matches no index it can be at (index 0 needs 1).
 */
#define GDA_FT_CHAN_PUB_CHECK(_index) (((uint64_t)(_index) + 1) & 0xffffffull)
#define GDA_FT_CHAN_PUB(_psn, _off, _index) \
    (((uint64_t)(_psn) & 0xffffffull) | \
     (((uint64_t)(_off) & 0xffffull) << 24) | \
     (GDA_FT_CHAN_PUB_CHECK(_index) << 40))
#define GDA_FT_CHAN_PUB_PSN(_p)   ((uint32_t)((_p) & 0xffffff))
#define GDA_FT_CHAN_PUB_OFF(_p)   (((_p) >> 24) & 0xffff)
#define GDA_FT_CHAN_PUB_MATCH(_p, _word) \
    (((_p) >> 40) == GDA_FT_CHAN_PUB_CHECK(GDA_FT_CHAN_WORD_INDEX(_word)))

/*
 * An entry of the outcome table: a failure that a switch settled for the
 * WQE at a logical index, kept by index modulo the table's size: its
 * index, its status, whether a request will read it (OWNED) and whether it
 * did (READ). An entry whose index is not the one asked about says OK.
 * The index is kept plus one: the zeroed table names no index, not 0.
 *
 * The table holds GDA_FT_CHAN_OUTCOME_RINGS rings' worth of entries: a
 * failure stays readable until the channel has posted that many rings
 * beyond it, whatever paths it took meanwhile (a slot of a ring is
 * rewritten by the next post there, a ring later). Holding the ring until
 * a request reads its failure would be exact for longer, but would hang a
 * poster that keeps several requests in flight and reads each in turn:
 * its next post waits for room that only its own reading frees. A failure
 * overwritten before its request read it is counted (`outcomes_lost`).
 */
#define GDA_FT_CHAN_OUTCOME_RINGS 16
#define GDA_FT_CHAN_OUTCOME_CNT(_wqebb_cnt) \
    ((uint64_t)(_wqebb_cnt) * GDA_FT_CHAN_OUTCOME_RINGS)
#define GDA_FT_CHAN_OUTCOME(_seq, _status, _flags) \
    ((((uint64_t)(_seq) + 1) << 16) | (uint64_t)(_flags) | \
     (uint64_t)(_status))
#define GDA_FT_CHAN_OUTCOME_SEQ(_e)    (((_e) >> 16) - 1)
#define GDA_FT_CHAN_OUTCOME_STATUS(_e) ((gda_ft_dev_status_t)((_e) & 0xff))
#define GDA_FT_CHAN_OUTCOME_OWNED      (1ull << 8)
#define GDA_FT_CHAN_OUTCOME_READ       (1ull << 9)

/* Every switch moves to the other path and to the next epoch, and epoch 0
 * posts on the primary: a word names its path, and a poster that took a
 * reservation reads no `active` (the mask keeps the parity across wrap) */
#define GDA_FT_CHAN_WORD_PATH(_w)  ((uint8_t)(GDA_FT_CHAN_WORD_EPOCH(_w) & 1))

/* Largest ring: wqe_counter in a CQE is 16 bits, and a ring index is
 * recovered from it by a wrap-safe 16-bit difference, which holds while
 * fewer than 2^15 WQEBBs are outstanding */
#define GDA_FT_CHAN_MAX_WQEBBS    16384
/* A WQE that ends past a multiple of this many WQEBBs is signalled: the
 * deadline sees progress at least that often within a batch, not only at
 * its end (a warp's 32-WQE batch behind another on a busy software HCA
 * first completed 0.7-0.9 ms after it was posted, against a 1 ms
 * deadline) */
#define GDA_FT_CHAN_SIGNAL_WQEBBS 8

/* Channel states */
enum {
    GDA_FT_CHAN_ACTIVE    = 0, /* posting on `active` */
    GDA_FT_CHAN_SWITCHING = 1, /* one thread is advancing a switch or
                                  failback */
    GDA_FT_CHAN_NO_PATH   = 2, /* both paths failed: everything fails
                                  until the host re-arms one */
    GDA_FT_CHAN_PARKED    = 3  /* a switch waits (for the host, a re-arm,
                                  the backup's drain): the next progress
                                  pass to take it advances it */
};

/* What a switch waits for between progress passes (gda_ft_chan_switch_t) */
enum {
    GDA_FT_CHAN_PHASE_DRAIN = 1, /* failback: what the backup holds
                                    completes */
    GDA_FT_CHAN_PHASE_REARM = 2, /* the other path failed too: its re-arm */
    GDA_FT_CHAN_PHASE_TELL  = 3, /* room in the mailbox for the record */
    GDA_FT_CHAN_PHASE_HEAR  = 4, /* the host's answer to the record */
    GDA_FT_CHAN_PHASE_GONE  = 5  /* no path left: the host is told, then
                                    everything fails */
};

/* Kind of the WQE that starts at a slot */
enum {
    GDA_FT_CHAN_OP_NONE   = 0, /* not the first WQEBB of a WQE */
    GDA_FT_CHAN_OP_PUT    = 1, /* RDMA WRITE: idempotent, replayed */
    GDA_FT_CHAN_OP_GET    = 2, /* RDMA READ: replayed even if executed */
    GDA_FT_CHAN_OP_SIGNAL = 3, /* non-fetching atomic add: exactly once */
    GDA_FT_CHAN_OP_ATOMIC = 4, /* fetching atomic: exactly once or in doubt */
    GDA_FT_CHAN_OP_NOP    = 5, /* stands for a WQE settled by a switch */
    GDA_FT_CHAN_OP_SEND   = 6  /* SEND with immediate into the peer's
                                  receive queue: replayed like a put, and
                                  the receiver drops a copy it has seen
                                  (the immediate carries its sequence) */
};

/* Slot flags */
enum {
    GDA_FT_CHAN_SLOT_RADDR  = 1u << 0, /* WQE has a raddr segment (seg 1) */
    GDA_FT_CHAN_SLOT_DATA   = 1u << 1, /* last segment is a pointer data seg */
    GDA_FT_CHAN_SLOT_FAILED = 1u << 2, /* `status` holds its failure */
    GDA_FT_CHAN_SLOT_OWNED  = 1u << 3, /* a request will read its outcome
                                          (the last WQE of a post that
                                          has one) */
    GDA_FT_CHAN_SLOT_MORE   = 1u << 4  /* a chunk: another WQE of its
                                          operation follows */
};

/* Why a switch happens (switch record, counters) */
enum {
    GDA_FT_CHAN_WHY_DEADLINE = 1, /* no progress for DEADLINE */
    GDA_FT_CHAN_WHY_ERR_CQE  = 2, /* error CQE naming no culprit (a flush):
                                     the port may well be up */
    GDA_FT_CHAN_WHY_OP_ERROR = 3, /* error CQE blaming one WQE */
    GDA_FT_CHAN_WHY_PEER     = 4, /* another channel to the peer switched */
    GDA_FT_CHAN_WHY_FAILBACK = 5, /* the host re-armed the primary */
    GDA_FT_CHAN_WHY_RETRY    = 6  /* the HCA gave up retrying: path dead */
};

/*
 * Per-WQE metadata beside the ring, indexed like the ring. The WQE itself
 * stays in the ring until completed and is the replay log.
 */
typedef struct gda_ft_chan_slot {
    uint32_t lkey[2];     /*  0: local key on each path */
    uint32_t rkey[2];     /*  8: remote key on each path */
    uint64_t post_ns;     /* 16: when it was published (or replayed) */
    uint64_t seq;         /* 24: its logical index */
    uint32_t psn;         /* 32: first PSN on its path */
    uint16_t npkts;       /* 36: PSNs it occupies */
    uint8_t  kind;        /* 38: GDA_FT_CHAN_OP_* */
    uint8_t  flags;       /* 39: GDA_FT_CHAN_SLOT_* */
    uint8_t  wqebbs;      /* 40: size of the WQE */
    uint8_t  status;      /* 41: gda_ft_dev_status_t when FAILED */
    uint8_t  syndrome;    /* 42: of an error CQE */
    uint8_t  strikes;     /* 43: error switches it was the oldest WQE of */
    uint8_t  reserved[4]; /* 44 */
} gda_ft_chan_slot_t;

/* One path of a channel: an RC QP's send ring and its collapsed CQ */
typedef struct gda_ft_chan_path {
    gda_ft_dev_sq_t     sq;         /*  0: ring, dbrec, uar, qpn, wake_fd;
                                       its pi/ci are not used here */
    uint8_t            *cqe;        /* 64: collapsed CQE (64 bytes) */
    volatile uint32_t  *cq_dbrec;   /* 72: CQ consumer index record (BE),
                                       or NULL */
    gda_ft_chan_slot_t *slots;      /* 80: wqebb_cnt entries */
    uint64_t            ring_off;   /* 88: logical = ring index + ring_off */
    uint64_t            ring_next;  /* 96: ring index of its next WQE */
    uint32_t            next_psn;   /* 104: PSN of its next packet */
    uint32_t            failed;     /* 108: GDA_FT_CHAN_WHY_* of the switch
                                       away from it, 0 once re-armed */
    uint32_t            seen_rearm; /* 112: mailbox rearm count applied */
    uint32_t            seen_peer_left; /* 116: mailbox peer_left applied
                                       (the primary's) */
    uint32_t            retry_us;   /* 120: its QP's retry window, the
                                       least time before its HCA gives up
                                       a silent WQE (0: never, or not
                                       known), microseconds */
    uint32_t            reserved;   /* 124 */
} gda_ft_chan_path_t;

/* One switch record: what the poster that switched tells the host */
typedef struct gda_ft_chan_record {
    uint32_t epoch;          /*  0: epoch the switch leaves */
    uint32_t failed;         /*  4: path left */
    uint32_t why;            /*  8: GDA_FT_CHAN_WHY_* */
    uint32_t first_psn;      /* 12: first PSN whose fate is asked */
    uint64_t freeze;         /* 16: logical freeze index */
    uint32_t resolve;        /* 24: 1: the poster awaits the peer's word */
    uint32_t reserved;       /* 28 */
} gda_ft_chan_record_t;

/* What the host half knows of a path's ports (mailbox link_up) */
enum {
    GDA_FT_CHAN_LINK_DOWN  = 0, /* ours, or the peer's, is down */
    GDA_FT_CHAN_LINK_UP    = 1, /* both are up */
    GDA_FT_CHAN_LINK_LOCAL = 2  /* ours is up, the peer's is not known */
};

/* Records the poster may write ahead of the host's answers */
#define GDA_FT_CHAN_MBOX_RECORDS 8

/*
 * Mailbox between the GPU (or CPU poster) and the host guardian, in
 * host-mapped memory. Each field has one writer. The poster writes record
 * req_seq at rec[req_seq % RECORDS], then req_seq (release); the host
 * handles records in order and publishes ans_seq (release) after the
 * answer to that record.
 */
typedef struct gda_ft_chan_mbox {
    uint32_t             req_seq;      /*  0: poster: records written */
    uint32_t             ans_seq;      /*  4: host: records handled */
    uint32_t             ans_known;    /*  8: host: 1: ans_epsn is the
                                          peer's word on record ans_seq */
    uint32_t             ans_epsn;     /* 12: PSN the peer's fenced end
                                          expected */
    uint32_t             rearm[2];     /* 16: host: bumped each time it
                                          re-armed a path (QP RESET->RTS,
                                          ring at 0) */
    uint32_t             rearm_psn[2]; /* 24: its first PSN after re-arm */
    gda_ft_chan_record_t rec[GDA_FT_CHAN_MBOX_RECORDS]; /* 32 */
    uint32_t             link_up[2];   /* 288: host: GDA_FT_CHAN_LINK_* of
                                          the path's ports (up: a re-arm
                                          will come) */
    uint32_t             rearm_ring[2];/* 296: ring index the posters start
                                          at after a re-arm: the host's
                                          probe of the path took those
                                          before it */
    uint32_t             done_epoch;   /* 304: poster: the epoch its last
                                          switch ended in; from then on it
                                          reads no ring of the path it
                                          left, which the host may re-arm
                                          and probe */
    uint32_t             peer_left;    /* 308: host: bumped when the peer's
                                          channels left the primary for
                                          its failure: posters on the
                                          primary with work in flight
                                          follow, rather than wait a
                                          deadline of their own */
    uint32_t             awaits_rearm; /* 312: poster: 1 + the path whose
                                          re-arm a switch waits for, the
                                          other one being failed too (0:
                                          none): no recovery window to sit
                                          out then */
    uint32_t             peer_state;   /* 316: host: GDA_FT_PEER_WORD() of
                                          the peer (gda_ft_chan_peer.h),
                                          mirrored into the health word by
                                          progress passes */
    uint32_t             peer_quiet;   /* 320: host: 1 while the peer has
                                          been heard on no path for
                                          GDA_FT_TIMING_QUIET_DEADLINES
                                          deadlines, or its guardian
                                          takes part in no question: a
                                          silence is no longer sat out
                                          for it */
    uint32_t             no_path_final; /* 324: host: 1 when the channel
                                          stays in NO_PATH once there
                                          (a UCT endpoint's own, whose
                                          failure UCP handles); 0: it
                                          regains a path the host
                                          re-arms */
} gda_ft_chan_mbox_t;

/* Path health of one peer, shared by all channels to it */
typedef struct gda_ft_chan_health {
    uint32_t fail_gen;       /*  0: bumped when a channel finds the primary
                                dead: the others follow at their next post
                                (after publishing it) or wait */
    uint32_t peer_state;     /*  4: GDA_FT_PEER_WORD() (gda_ft_chan_peer.h):
                                whether the peer is reachable, gone or
                                back; what posts and waits check */
    uint64_t progress_ns[2]; /*  8: last completion any channel to the peer
                                saw on each path. A path judged by its own
                                progress: one channel waiting behind the
                                others' traffic on a busy HCA is not on a
                                dead path. */
} gda_ft_chan_health_t;

typedef struct gda_ft_chan_counters {
    uint32_t switches;       /* moves to the other path */
    uint32_t replays;        /* WQEs posted again */
    uint32_t resolved;       /* switches settled with the peer's word */
    uint32_t confirmed;      /* WQEs the peer said it executed */
    uint32_t in_doubt;       /* fetching atomics whose reply was lost */
    uint32_t failbacks;      /* returns to the primary */
    uint32_t no_path;        /* times both paths were found dead */
    uint32_t op_errors;      /* WQEs failed by their own fault */
} gda_ft_chan_counters_t;

/*
 * A switch between progress passes. Only the thread that holds the
 * channel in SWITCHING reads or writes it; parking (a release store of
 * PARKED) and taking it up (a CAS from PARKED) hand it over.
 */
typedef struct gda_ft_chan_switch {
    uint64_t freeze;     /*  0: the window's end */
    uint64_t first;      /*  8: its start, once the record is written */
    uint64_t since_ns;   /* 16: when the current phase began */
    uint32_t phase;      /* 24: GDA_FT_CHAN_PHASE_* */
    uint32_t from;       /* 28: path left */
    uint32_t why;        /* 32: GDA_FT_CHAN_WHY_* */
    uint32_t record;     /* 36: switch record awaiting its answer (0: no
                            answer to wait for) */
    uint32_t asked;      /* 40: the record asked for the peer's word */
    uint32_t strike;     /* 44: the oldest WQE takes a strike
                            (gda_ft_chan_strike) */
} gda_ft_chan_switch_t;

typedef struct gda_ft_chan {
    uint64_t                word;          /*   0: reservation word */
    uint64_t                ready;         /*   8: the word after the last
                                              publication: published
                                              before its index */
    uint64_t                completed;     /*  16: epoch | completed before
                                              it (as in `word`) */
    uint64_t                last_progress_ns; /* 24: last completion seen */
    uint32_t                state;         /*  32: GDA_FT_CHAN_* */
    uint32_t                active;        /*  36: path of this epoch */
    uint32_t                wqebb_cnt;     /*  40: ring size, both paths */
    uint32_t                mtu;           /*  44: path MTU (PSN count) */
    uint64_t                deadline_ns;   /*  48: no progress for it:
                                              the path is dead; 0: never */
    uint64_t                resolve_ns;    /*  56: wait for the peer's word */
    gda_ft_chan_health_t   *health;        /*  64: per peer, shared */
    gda_ft_chan_mbox_t     *mbox;          /*  72: host-mapped */
    gda_ft_chan_counters_t  counters;      /*  80 */
    uint32_t                error;         /* 112: first failure seen by a
                                              wait: GDA_FT_DEV_RESULT() */
    uint32_t                seen_fail_gen; /* 116: health->fail_gen applied */
    uint16_t                version;       /* 120: GDA_FT_DEV_VERSION */
    uint16_t                id;            /* 122: channel id */
    uint32_t                max_chunk;     /* 124: bytes per WQE of a put or
                                              get: larger ones are cut into
                                              signalled chunks */
    uint64_t                scratch_addr;  /* 128: 8 bytes for the result
                                              of a non-fetching add */
    uint32_t                scratch_lkey[2]; /* 136 */
    gda_ft_chan_path_t      path[2];       /* 144 */
    uint64_t                switch_ns;     /* 400: when the last switch away
                                              from a failed path posted its
                                              replay */
    uint64_t                recovered_ns;  /* 408: first completion on the
                                              new path after it: the
                                              interruption's end */
    uint64_t                detect_ns;     /* 416: when that switch was
                                              decided */
    uint64_t                silent_since_ns; /* 424: the channel's last
                                              progress before it */
    uint64_t                answered_ns;   /* 432: when its switch heard
                                              the host's answer (0: asked
                                              for none) */
    uint64_t                rearm_check_ns; /* 440: a busy channel looks
                                              at the mailbox from then on:
                                              on its backup for re-arm
                                              notices, on its primary for
                                              the peer's finding */
    gda_ft_chan_switch_t    sw;            /* 448: the switch under way */
    uint64_t                published;     /* 496: the last publication's
                                              next PSN and ring offset
                                              (GDA_FT_CHAN_PUB) */
    uint64_t               *outcomes;      /* 504: OUTCOME_CNT(wqebb_cnt)
                                              entries (GDA_FT_CHAN_OUTCOME),
                                              zeroed: the failures that
                                              switches settled */
    uint32_t                outcomes_lost; /* 512: failures overwritten in
                                              the table before their
                                              requests read them */
    uint32_t                regains;       /* 516: times it took a path
                                              back after losing both */
    uint64_t                host_turn_ns;  /* 520: until when a progress
                                              pass holds the turn to read
                                              the channel's host words
                                              (gda_ft_chan_host_turn_take);
                                              0: free */
    uint64_t                rung;          /* 528: the logical index the
                                              last doorbell rang up to
                                              (only the poster in its
                                              turn reads or writes it) */
    uint32_t                db_defer;      /* 536: WQEBBs a publication
                                              may leave unrung for the
                                              next one (0: each rings;
                                              gda_ft_chan_ring_later) */
    uint32_t                reserved;      /* 540 */
} gda_ft_chan_t;

/* Counters of a channel's host guardian */
typedef struct gda_ft_chan_host_counters {
    uint32_t records;    /* switch records handled */
    uint32_t fences;     /* abandoned QPs moved to ERR */
    uint32_t resolved;   /* answers with the peer's word */
    uint32_t rearms;     /* paths re-armed */
    uint32_t rearm_tries;/* re-arms begun (a QP reset and reconnected) */
} gda_ft_chan_host_counters_t;

/* What a channel has been through: the posters' side and the guardian's */
typedef struct gda_ft_chan_query {
    unsigned                    id;
    uint32_t                    state;        /* GDA_FT_CHAN_* */
    uint32_t                    active;       /* path of this epoch */
    gda_ft_chan_counters_t      poster;
    gda_ft_chan_host_counters_t host;
    uint64_t                    switch_ns;    /* last switch's replay and */
    uint64_t                    recovered_ns; /* the first completion after
                                                 it (posters' clock) */
    uint32_t                    outcomes_lost; /* failures overwritten
                                                  before their request read
                                                  them: 0 unless a request
                                                  goes unread for 16 rings */
    uint32_t                    regains;      /* paths taken back after
                                                 both were lost */
} gda_ft_chan_query_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_slot_t) == 48, chan_slot_size);
/* gda_ft_chan_slot_write() writes these as three 16-byte words */
GDA_FT_STATIC_ASSERT((offsetof(gda_ft_chan_slot_t, rkey) == 8) &&
                     (offsetof(gda_ft_chan_slot_t, post_ns) == 16) &&
                     (offsetof(gda_ft_chan_slot_t, seq) == 24) &&
                     (offsetof(gda_ft_chan_slot_t, psn) == 32) &&
                     (offsetof(gda_ft_chan_slot_t, npkts) == 36) &&
                     (offsetof(gda_ft_chan_slot_t, kind) == 38) &&
                     (offsetof(gda_ft_chan_slot_t, flags) == 39) &&
                     (offsetof(gda_ft_chan_slot_t, wqebbs) == 40) &&
                     (offsetof(gda_ft_chan_slot_t, strikes) == 43),
                     chan_slot_words);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_path_t) == 128, chan_path_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_record_t) == 32, chan_record_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_mbox_t) == 328, chan_mbox_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_counters_t) == 32,
                     chan_counters_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_chan_t, counters) == 80,
                     chan_counters_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_chan_t, path) == 144, chan_path_offset);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_health_t) == 24, chan_health_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_chan_health_t, peer_state) == 4,
                     chan_health_peer_state_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_chan_mbox_t, peer_state) == 316,
                     chan_mbox_peer_state_offset);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_switch_t) == 48, chan_switch_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_chan_t) == 544, chan_size);

/* What a post needs of its channel that does not change once it is
 * connected: read from the channel, or kept by a poster's memo, so that a
 * warp's post does not wait on L2 for them before its reservation (the
 * health pointer too: a load through it waited for the pointer's, and the
 * CAS behind both) */
typedef struct gda_ft_chan_geom {
    const gda_ft_chan_health_t *health; /* the peer's, or NULL */
    uint32_t wqebb_cnt;  /* ring size, both paths */
    uint32_t max_chunk;  /* bytes per WQE of a put or get */
    uint32_t mtu_shift;  /* log2 of the path MTU (MTUs are powers of 2) */
} gda_ft_chan_geom_t;

/*
 * What one poster remembers of a channel between its posts: a copy in the
 * poster's registers, shared with nobody. When a CAS that expects the
 * remembered word succeeds, nobody reserved and nothing switched since the
 * holder's last publication (a switch moves the epoch; a freeze that did
 * nothing puts the word back as it was, having changed nothing the memo
 * holds). Then `ready` is where the holder's own publication left it, and
 * the path's ring offset and next PSN are what it left: the post reads
 * neither the word, nor `ready`, nor the PSN, three round trips to L2 of a
 * warp's post, and the CAS needs no acquire. A CAS that fails costs one
 * round trip and takes the shared way. A stale memo (another lane's, an
 * older one) is safe: its CAS fails.
 */
typedef struct gda_ft_chan_memo {
    uint64_t word;       /* the word after the last reservation it saw
                            published */
    uint64_t off;        /* that word's path's ring_off */
    uint64_t completed;  /* `completed` as last read: a stale one only
                            understates the room */
    uint32_t psn;        /* the path's next PSN after that publication */
    uint32_t valid;      /* 0: nothing remembered (never CAS then: the
                            word may be FROZEN with any index) */
    gda_ft_chan_geom_t geom; /* the channel's, when valid */
} gda_ft_chan_memo_t;

#endif
