/*
 * Software HCA internals: engine, devices, ports, MRs, CQs and QPs.
 *
 * Threads: the engine has one or more workers (UCX_GDA_FT_SOFT_THREADS),
 * each a thread serving its own devices: their ports, QPs, CQs and delayed
 * packets. A device belongs to one worker for its whole life, so what a
 * device owns needs no lock of its own.
 *
 * Locking: one reader-writer lock per engine. A worker holds it shared
 * while it works on a pass; verbs-like calls (open, create, modify,
 * destroy, register), the control socket and the fault schedule hold it
 * exclusive, so they see no worker at work. What workers share during a
 * pass is read-only then (device list, QP and MR tables, configuration),
 * or has its own guard: a port's loopback queue (any worker may send to
 * it), atomics on GPU memory. Posters never take the lock: they only write
 * rings and doorbell records, which the worker reads, as hardware does.
 */
#ifndef GDA_FT_SOFT_INT_H_
#define GDA_FT_SOFT_INT_H_

#include "gda_ft_soft.h"
#include "gda_ft_soft_wire.h"
#include "gda_ft_mlx5_prm.h"

#include <ucs/sys/preprocessor.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <time.h>
#include <pthread.h>
#include <sys/socket.h>

#define GDA_FT_SOFT_MAX_DEVS        16
#define GDA_FT_SOFT_MAX_SGE         4
#define GDA_FT_SOFT_MAX_INLINE      512
#define GDA_FT_SOFT_MAX_PKTS_INFLIGHT 256
#define GDA_FT_SOFT_RD_RESP_QUEUE   16
#define GDA_FT_SOFT_RD_RESP_BUDGET  32
#define GDA_FT_SOFT_RX_BUDGET_MAX   1024  /* datagrams from a port a pass */
#define GDA_FT_SOFT_ATOMIC_CACHE    32
#define GDA_FT_SOFT_RX_BATCH        32
/* Datagrams a port holds from ports of the same process (LOOPBACK): about
 * the socket buffer's 4 MiB */
#define GDA_FT_SOFT_LOOPBACK_QUEUE  1024
#define GDA_FT_SOFT_TX_QUANTUM_MIN  4    /* datagrams a sending QP may send
                                            per pass, at least */
#define GDA_FT_SOFT_EVENT_QUEUE     64
/* A QP whose owner judges the path by its progress over less than this
 * (its failover deadline) keeps its engine thread awake: waking one took
 * 100-250 us on the virtual machines measured (docs/device-datapath.md) */
#define GDA_FT_SOFT_AWAKE_BELOW_NS  10000000ull
/* How often worker 0 asks its control and link sockets whether something
 * came, between passes: a system call each time */
#define GDA_FT_SOFT_FD_POLL_NS      100000ull
/* The least time between two link checks on the kernel's notices: on a
 * host whose links or addresses change all the time (containers come and
 * go) the engine would otherwise spend its passes in getifaddrs() */
#define GDA_FT_SOFT_LINK_CHECK_GAP_NS 10000000ull
#define GDA_FT_SOFT_PKT_MAX         (GDA_FT_ROCE_MAX_HDR + 4096 + 8)

typedef struct gda_ft_soft_engine gda_ft_soft_engine_t;
typedef struct gda_ft_soft_worker gda_ft_soft_worker_t;
typedef struct gda_ft_soft_dev    gda_ft_soft_dev_t;


/* A datagram on its way between two ports of the process (LOOPBACK) */
typedef struct gda_ft_soft_loopback_pkt {
    uint64_t           arrival_ns;
    struct sockaddr_in src;
    uint32_t           len;
    uint8_t            data[GDA_FT_SOFT_PKT_MAX];
} gda_ft_soft_loopback_pkt_t;


typedef struct gda_ft_soft_port {
    gda_ft_soft_dev_t        *dev;
    uint8_t                   num;
    struct sockaddr_in        addr;
    int                       fd;
    int                       admin_up;   /* fault injection */
    int                       link_up;    /* netdev carrier, when known */
    int                       reported_up;/* state of the last port event */
    uint64_t                  down_ns;    /* CLOCK_REALTIME when it went
                                             down; 0 while up or unknown */
    gda_ft_soft_fault_t       fault;
    uint64_t                  pace_due_ns; /* the paced transmit is busy
                                              until then */
    gda_ft_soft_port_stats_t  stats;
    /* datagrams from ports of this process, as a socket buffer would hold
     * them: GDA_FT_SOFT_LOOPBACK_QUEUE, allocated at the first one. Any
     * worker may add (under lb_lock, tail released); the port's own worker
     * takes them from the head (released after it handled the datagram) */
    gda_ft_soft_loopback_pkt_t *lb_queue;
    pthread_spinlock_t        lb_lock;
    unsigned                  lb_head, lb_tail;
} gda_ft_soft_port_t;


struct gda_ft_soft_dev {
    gda_ft_hca_dev_t      super;
    gda_ft_soft_engine_t *engine;
    gda_ft_soft_worker_t *worker;     /* serves it, for its whole life */
    ucs_list_link_t       list;
    gda_ft_soft_port_t    ports[GDA_FT_HCA_MAX_PORTS];
    int                   event_fd;
    gda_ft_hca_event_t    events[GDA_FT_SOFT_EVENT_QUEUE];
    unsigned              event_head, event_tail;
    uint32_t              next_pdn;
};


typedef struct gda_ft_soft_mr {
    gda_ft_hca_mr_t   super;
    gda_ft_hca_dev_t *dev;   /* outlives the PD pointer for close() */
} gda_ft_soft_mr_t;


typedef struct gda_ft_soft_cq {
    gda_ft_hca_cq_t super;
    uint32_t        pi;           /* CQEs produced */
} gda_ft_soft_cq_t;


/* A local buffer of a WQE: data segments or inline data */
typedef struct gda_ft_soft_sge {
    uint64_t               addr;
    uint32_t               length;
    gda_ft_hca_mem_type_t  mem_type;
} gda_ft_soft_sge_t;


/* One parsed send WQE on its way through the RC protocol */
/* Largest message whose data in device memory is copied to the host at
 * once (gda_ft_soft_parse.c) */
#define GDA_FT_SOFT_SNAPSHOT_MAX (256u * 1024)

/*
 * A message's bytes read from device memory to be sent: the read is queued
 * when the engine finds the WQE and lands while the engine goes on
 * (gda_ft_soft_mem.c); the op is sent once it has.
 */
enum {
    GDA_FT_SOFT_SNAPSHOT_LANDED,
    GDA_FT_SOFT_SNAPSHOT_READING,
    GDA_FT_SOFT_SNAPSHOT_ORPHANED   /* its op went while it was read */
};

/*
 * Where the engine learns that the CUDA runtime refused a copy into or out
 * of device memory (memory freed while registered): its bytes did not
 * move, and the operation it served must fail. The first refusal is kept,
 * with the tag its copy was queued with (a PSN, an op's index).
 */
typedef struct gda_ft_soft_refusal {
    int      refused;
    uint32_t tag;
} gda_ft_soft_refusal_t;

/*
 * A read-modify-write of a word of device memory (gda_ft_soft_mem_word_op).
 * run gets whether the word could be read and its value before the op
 * (after the ops before it on the same word); it returns 1 with the new
 * value, or 0 to leave the word as it is.
 */
typedef struct gda_ft_soft_word_op gda_ft_soft_word_op_t;

typedef int (*gda_ft_soft_word_op_run_t)(const gda_ft_soft_word_op_t *op,
                                         int readable, uint64_t old,
                                         uint64_t *new_value);

struct gda_ft_soft_word_op {
    void                     *addr;        /* device memory, size-aligned */
    unsigned                  size;        /* 4 or 8 */
    uint8_t                   code;        /* the owner's: what run does */
    uint64_t                  operand[4];
    void                     *owner;
    uint32_t                  tag;         /* the owner's, and a refusal's */
    gda_ft_soft_refusal_t    *refusal;     /* a copy of the word refused */
    gda_ft_soft_word_op_run_t run;
};

typedef struct gda_ft_soft_snapshot {
    int                   state;
    gda_ft_soft_refusal_t refusal;   /* a read of it refused */
    uint8_t               data[];
} gda_ft_soft_snapshot_t;

typedef struct gda_ft_soft_op {
    uint16_t          wqe_idx;
    uint8_t           mlx5_opcode;
    uint8_t           opmod;
    uint8_t           signaled;
    uint8_t           fence;
    uint8_t           done;
    uint8_t           syndrome;     /* != 0: complete with this error */
    uint32_t          first_psn;
    uint32_t          npkts;        /* PSNs consumed */
    uint32_t          pkts_sent;    /* of this transmission round */
    uint32_t          resp_next;    /* next read response PSN offset */
    uint32_t          resp_gap;     /* 1 + resp_next when a later response
                                       showed it lost and the op was sent
                                       again; 0: none */
    uint32_t          length;
    uint64_t          raddr;
    uint32_t          rkey;
    uint32_t          imm;
    uint64_t          operand[4];   /* atomic operands, host order */
    unsigned          num_sge;
    gda_ft_soft_sge_t sge[GDA_FT_SOFT_MAX_SGE];
    uint8_t          *inline_data;  /* copy of inline data, or the
                                       snapshot's data; NULL: none */
    gda_ft_soft_snapshot_t *snapshot; /* of data in device memory: sent
                                         once landed; NULL: none */
} gda_ft_soft_op_t;


typedef struct gda_ft_soft_atomic_cache {
    uint32_t psn;
    int      valid;
    int      pending;    /* queued on a word of device memory: orig is
                            known once the thread's next flush ran it */
    uint64_t orig;
} gda_ft_soft_atomic_cache_t;


/*
 * A response the responder owes, queued in PSN order: a read's (they go
 * out a budget per engine pass, so that a multi-MB read does not overflow
 * the requester's socket), or an atomic's acknowledgement, which waits
 * behind the reads before it: responses leave in request order, as an
 * HCA's do.
 */
typedef struct gda_ft_soft_rd_resp {
    uint32_t psn;        /* PSN of the first response */
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
    uint32_t npkts;
    uint32_t sent;
    uint32_t msn;
    int      is_atomic;  /* an atomic's acknowledgement, of orig */
    uint64_t orig;
    uint8_t *snapshot;   /* a read's bytes from response snap_from on, as
                            they were before a later write or atomic
                            changed them; NULL: read from memory */
    uint32_t snap_from;
} gda_ft_soft_rd_resp_t;


typedef struct gda_ft_soft_qp {
    gda_ft_hca_qp_t       super;
    ucs_list_link_t       list;
    int                   keeps_awake;  /* counted in its awake_qps */
    uint64_t              uar_word;
    uint32_t              remote_ip;    /* network order */
    uint32_t              dest_qpn;
    unsigned              mtu;
    unsigned              access;
    uint8_t               timeout;
    uint8_t               retry_cnt;
    uint8_t               rnr_retry;
    uint8_t               min_rnr_timer;
    unsigned              max_rd_atomic;

    /* Requester */
    uint16_t              sq_parse;     /* next WQEBB to parse (counter) */
    gda_ft_soft_op_t     *ops;          /* ring, sq_wqebb_cnt entries */
    unsigned              op_head;      /* oldest not completed */
    unsigned              op_send;      /* next to (re)transmit */
    unsigned              op_tail;      /* next free */
    unsigned              read_ahead;   /* ops from op_send to here have
                                           their messages in device memory
                                           read or being read */
    uint32_t              next_psn;
    uint32_t              acked_psn;    /* highest PSN acknowledged */
    unsigned              rd_atomic_inflight;
    int                   retries_left;
    int                   rnr_left;
    uint64_t              timer_start;  /* last transmission or progress */
    uint64_t              rnr_until;    /* RNR back-off end, 0 = none */
    gda_ft_soft_refusal_t req_refused;  /* a response's bytes refused by
                                           device memory: the op to fail */

    /* Responder */
    uint32_t              epsn;
    uint32_t              msn;
    int                   nak_sent;     /* PSN sequence NAK outstanding */
    int                   ack_pending;
    uint32_t              ack_syndrome;
    /* multi-packet WRITE/SEND in progress */
    int                   in_msg;
    uint8_t               msg_opcode;   /* first opcode of the message */
    uint64_t              msg_va;
    uint32_t              msg_len;
    uint32_t              msg_done;
    uint32_t              msg_rkey;
    uint16_t              rq_ci;
    uint16_t              rq_taken;     /* RQ WQE taken by the message */
    gda_ft_soft_refusal_t resp_refused; /* a copy into or out of device
                                           memory refused: the PSN to NAK */
    gda_ft_soft_rd_resp_t rd_resp[GDA_FT_SOFT_RD_RESP_QUEUE];
    unsigned              rd_resp_head, rd_resp_tail;
    gda_ft_soft_atomic_cache_t atomic_cache[GDA_FT_SOFT_ATOMIC_CACHE];
    unsigned              atomic_cache_next;
} gda_ft_soft_qp_t;


KHASH_MAP_INIT_INT(gda_ft_soft_qp, gda_ft_soft_qp_t*)
KHASH_MAP_INIT_INT(gda_ft_soft_mr, gda_ft_soft_mr_t*)


typedef struct gda_ft_soft_delayed {
    ucs_list_link_t     list;
    uint64_t            due;
    gda_ft_soft_port_t *port;
    struct sockaddr_in  dst;
    size_t              len;
    uint8_t             data[];
} gda_ft_soft_delayed_t;


typedef struct gda_ft_soft_sched_event {
    uint64_t  at;           /* ns since engine start */
    char      dev[GDA_FT_HCA_NAME_MAX];
    uint8_t   port;
    int       up;
    int       done;
} gda_ft_soft_sched_event_t;


/* Receive buffers of one recvmmsg() */
typedef struct gda_ft_soft_rx_bufs {
    uint8_t            data[GDA_FT_SOFT_RX_BATCH][GDA_FT_SOFT_PKT_MAX];
    struct sockaddr_in srcs[GDA_FT_SOFT_RX_BATCH];
    uint8_t            cmsgs[GDA_FT_SOFT_RX_BATCH]
                            [CMSG_SPACE(sizeof(struct timespec))];
} gda_ft_soft_rx_bufs_t;


/* An engine thread and what its devices own */
struct gda_ft_soft_worker {
    unsigned                   index;
    pthread_t                  thread;
    int                        thread_started;
    int                        epfd;
    int                        wake_fd;
    ucs_list_link_t            qps;            /* of its devices */
    /* QPs that keep the worker awake while any exists: those whose rings
     * a GPU posts into (it cannot write an eventfd), and those whose owner
     * judges the path within GDA_FT_SOFT_AWAKE_BELOW_NS (waking a sleeping
     * thread takes longer than such a deadline can spare) */
    unsigned                   awake_qps;
    ucs_list_link_t            delayed;        /* its ports' */
    uint64_t                   rng;
    /* A port that is down, while the worker handles a packet that reached
     * it before: what the packet makes the port send leaves too */
    gda_ft_soft_port_t        *late_port;
    uint64_t                   last_pass_ns;   /* atomic: 0 after a sleep */
    struct rusage              last_ru;        /* at it (PASS_CPU_TIME) */
    gda_ft_soft_engine_stats_t stats;          /* the worker writes */
    unsigned                   loopback_queued; /* atomic: in its ports'
                                                   lb_queue */
    int32_t                    sleeping;       /* atomic: it said it is
                                                  going to wait in epoll:
                                                  CPU posters' doorbells
                                                  and senders of loopback
                                                  datagrams wake it */
    gda_ft_soft_rx_bufs_t     *rx_bufs;
    unsigned                   tx_senders;     /* QPs that sent datagrams
                                                  in its last pass */
    unsigned                   pass_rx;        /* its last pass's
                                                  datagrams, */
    uint64_t                   pass_rx_ns;     /* and their time; */
    uint64_t                   pass_qps_ns;    /* its QPs' in that pass */
    int                        cuda_ready;     /* atomic: its CUDA stream
                                                  and staging areas are
                                                  set up (or failed) */
};


struct gda_ft_soft_engine {
    pthread_rwlock_t           lock;
    int                        stop;           /* atomic */
    int                        ctl_fd;
    char                       ctl_path[108];
    unsigned                   refcount;
    ucs_list_link_t            devs;
    khash_t(gda_ft_soft_qp)    qp_hash;
    khash_t(gda_ft_soft_mr)    mr_hash;
    uint64_t                   start_ns;
    /* threads other than the workers waiting for the lock: the workers,
     * which would otherwise take it back at once, let them in first */
    unsigned                   lock_waiters;
    uint64_t                   last_link_check_ns;
    int                        link_fd;        /* rtnetlink notices; -1:
                                                  check every LINK_CHECK */
    int                        link_changed;   /* a notice since the last
                                                  check */
    uint64_t                   link_checks;    /* made, for the stats */
    uint64_t                   last_fd_poll_ns; /* of the control and link
                                                   sockets, by worker 0 */
    gda_ft_soft_sched_event_t *sched;
    unsigned                   sched_count;
    gda_ft_soft_config_t       config;
    gda_ft_soft_worker_t      *workers;
    unsigned                   num_workers;
    /* atomic: the last pass of any worker that found work. A worker
     * sleeps only when the whole engine has been idle for SPIN_TIME, as
     * one thread did: a path that carried nothing for a while (a backup)
     * must answer at once when traffic moves to it, and waking a sleeping
     * thread takes tens of microseconds or more */
    uint64_t                   last_busy_ns;
    /* atomic: device memory was registered: every worker sets up its CUDA
     * streams and staging areas before that registration returns, not in
     * the pass that first meets device memory, while kernels post */
    int                        cuda_wanted;
};


/* Engine (gda_ft_soft_engine.c) */
extern gda_ft_soft_engine_t gda_ft_soft_engine;
/* Has every engine thread set up its access to device memory, once, and
 * waits until they have (not from an engine thread) */
void gda_ft_soft_engine_prepare_cuda(void);

/* Takes the engine lock exclusive from a thread other than the workers:
 * ahead of them, who are busy for as long as GPU-posted rings exist */
static inline void gda_ft_soft_engine_lock(void)
{
    __atomic_fetch_add(&gda_ft_soft_engine.lock_waiters, 1, __ATOMIC_ACQ_REL);
    pthread_rwlock_wrlock(&gda_ft_soft_engine.lock);
    __atomic_fetch_sub(&gda_ft_soft_engine.lock_waiters, 1, __ATOMIC_ACQ_REL);
}

static inline void gda_ft_soft_engine_unlock(void)
{
    pthread_rwlock_unlock(&gda_ft_soft_engine.lock);
}

ucs_status_t gda_ft_soft_engine_get(void);
void gda_ft_soft_engine_put(void);

/* The engine's clock (CLOCK_MONOTONIC), read by every room */
static UCS_F_ALWAYS_INLINE uint64_t gda_ft_soft_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Core (gda_ft_soft_core.c): what every room calls */
/* CLOCK_REALTIME, the clock of the sockets' arrival timestamps */
uint64_t gda_ft_soft_realtime_ns(void);
double gda_ft_soft_random(gda_ft_soft_worker_t *worker);
/* Wakes every worker (after a command or a port change) */
void gda_ft_soft_engine_wake(void);
/* The worker that serves the device at position index of the
 * configuration's device list */
gda_ft_soft_worker_t *gda_ft_soft_worker_of(unsigned index);
/* The QP of this process with number qpn, or NULL (engine lock held) */
gda_ft_soft_qp_t *gda_ft_soft_qp_lookup(uint32_t qpn);
gda_ft_soft_mr_t *gda_ft_soft_mr_lookup(uint32_t key);
gda_ft_soft_port_t *gda_ft_soft_qp_port(gda_ft_soft_qp_t *qp);
int gda_ft_soft_port_is_up(gda_ft_soft_port_t *port);
void gda_ft_soft_cq_write(gda_ft_soft_cq_t *cq, uint8_t opcode,
                          uint8_t syndrome, uint16_t wqe_counter,
                          uint32_t qpn, uint8_t wqe_opcode,
                          uint32_t byte_cnt, uint32_t imm);
void gda_ft_soft_dev_post_event(gda_ft_soft_dev_t *dev,
                                gda_ft_hca_event_type_t type,
                                uint8_t port, uint32_t qpn);
void gda_ft_soft_qp_enter_error(gda_ft_soft_qp_t *qp);
/* Sends a datagram from a port through its fault hooks */
void gda_ft_soft_tx(gda_ft_soft_port_t *port, uint32_t dst_ip, void *pkt,
                    size_t len, int is_response);
/* The fault hooks alone: 1 when they dropped or queued the datagram */
int gda_ft_soft_fault_tx(gda_ft_soft_port_t *port, uint32_t dst_ip,
                         const void *pkt, size_t len, int is_response);
/* Sends a raw datagram from a port (no fault injection) */
void gda_ft_soft_sendto(gda_ft_soft_port_t *port, uint32_t dst_ip,
                        const void *pkt, size_t len);
void gda_ft_soft_loopback_close(gda_ft_soft_port_t *port);

/* Configuration (gda_ft_soft_config.c) */

/* Loads the configuration if it is not yet */
ucs_status_t gda_ft_soft_config_get(void);

/* Device and verbs (gda_ft_soft_dev.c) */
ucs_status_t gda_ft_soft_parse_devices(const char *spec,
                                       gda_ft_hca_dev_info_t **infos_p,
                                       unsigned *count_p,
                                       struct sockaddr_in (*addrs)[GDA_FT_HCA_MAX_PORTS]);

/* Memory access with the type of the MR (gda_ft_soft_mem.c) */

/* Readies the access to a type of memory (loads the CUDA runtime): at
 * registration, not in the datapath, where it would stall the engine for
 * the first packet; the engine threads' streams follow
 * (gda_ft_soft_engine_prepare_cuda) */
ucs_status_t gda_ft_soft_mem_prepare(gda_ft_hca_mem_type_t type);

/* A copy between any two kinds of memory. A write into device memory may
 * still be on its way when it returns: it completes, in order with this
 * thread's other copies, before this thread reads device memory, writes
 * host memory, or calls gda_ft_soft_mem_flush(). A copy of device memory
 * the CUDA runtime refuses is noted in refusal, with tag: at once (and an
 * error returned), or for a write on its way, by the time
 * gda_ft_soft_mem_flush() returns. */
ucs_status_t gda_ft_soft_mem_copy(void *dst, gda_ft_hca_mem_type_t dst_type,
                                  const void *src,
                                  gda_ft_hca_mem_type_t src_type, size_t len,
                                  gda_ft_soft_refusal_t *refusal,
                                  uint32_t tag);

/* Runs a copy of op: at the engine thread's next flush, with every other
 * one queued since the last (CUDA_ATOMIC_BATCH): their words read behind
 * the thread's queued writes in one wait, their new values landed before
 * the flush returns; else (or without a staging area) now, waiting for
 * the word. A word the runtime refuses to read is noted in the op's
 * refusal. The engine threads change a word one at a time. */
void gda_ft_soft_mem_word_op(const gda_ft_soft_word_op_t *op);

/* Reads len bytes of device memory into host memory at dst by the time
 * the thread's next flush returns, in stream order behind the writes
 * queued before it (what was there when it was asked for). 1: queued, or
 * refused at once (noted in refusal, with tag); 0: not this way (too long,
 * or no staging area): read when needed. */
int gda_ft_soft_mem_read_at_flush(void *dst, const void *src, size_t len,
                                  gda_ft_soft_refusal_t *refusal,
                                  uint32_t tag);

/* Notes a refused copy with tag, unless one was noted before */
void gda_ft_soft_refusal_note(gda_ft_soft_refusal_t *refusal, uint32_t tag);

/* Completes this thread's writes into device memory, and runs its queued
 * word ops: before anything that makes them visible (a packet sent, a CQE
 * written, an atomic's end) */
void gda_ft_soft_mem_flush(void);

/* The engine threads' waits for copies of device memory so far, and
 * their calls that queued copies: how many, their time in all and the
 * longest (the stats' cuda_* fields) */
void gda_ft_soft_mem_cuda_stats(gda_ft_soft_engine_stats_t *stats);

/* Sets up the calling engine thread's access to device memory */
void gda_ft_soft_mem_thread_prepare(void);

/* A piece of a message in device memory, to read into a snapshot */
typedef struct gda_ft_soft_read_piece {
    const void *src;     /* device memory */
    uint32_t    offset;  /* in the snapshot's data */
    uint32_t    length;
} gda_ft_soft_read_piece_t;

/* A snapshot of len bytes, landed (to be filled by its owner) */
gda_ft_soft_snapshot_t *gda_ft_soft_snapshot_alloc(size_t len);

/* Frees a snapshot; one whose read is in flight is freed when it lands */
void gda_ft_soft_snapshot_free(gda_ft_soft_snapshot_t *snapshot);

/* Whether every read into the snapshot has landed */
int gda_ft_soft_snapshot_landed(const gda_ft_soft_snapshot_t *snapshot);

/* Queues reads of the pieces into the snapshot on this thread's read
 * stream, in one batch with the others queued before the next
 * gda_ft_soft_mem_reads_submit(). 1: queued, the snapshot reads as not
 * landed until gda_ft_soft_mem_reads_land() lands them; 0: no room now
 * (reads in flight hold it); -1: never (copy the pieces instead) */
int gda_ft_soft_mem_read_snapshot(gda_ft_soft_snapshot_t *snapshot,
                                  const gda_ft_soft_read_piece_t *pieces,
                                  unsigned count);

/* Closes the batch of reads queued on this thread (with CUDA_READ_ASYNC=n,
 * waits for it and lands it) */
void gda_ft_soft_mem_reads_submit(void);

/* Lands this thread's reads whose batch is done, without waiting; returns
 * the reads still in flight */
int gda_ft_soft_mem_reads_land(void);

/* Requester (gda_ft_soft_req.c) */
int gda_ft_soft_req_progress(gda_ft_soft_qp_t *qp, uint64_t now,
                             unsigned *budget_p);
void gda_ft_soft_req_handle_response(gda_ft_soft_qp_t *qp,
                                     const gda_ft_roce_pkt_t *pkt);
void gda_ft_soft_qp_reset_state(gda_ft_soft_qp_t *qp);
/* Where the requester stands (ops, PSNs, atomics, timer), for a message */
const char *gda_ft_soft_req_describe(gda_ft_soft_qp_t *qp, char *buf,
                                     size_t max);
int gda_ft_soft_qp_flush(gda_ft_soft_qp_t *qp);
int gda_ft_soft_qp_busy(gda_ft_soft_qp_t *qp);
uint64_t gda_ft_soft_qp_next_timer(gda_ft_soft_qp_t *qp);

/* Send WQE parser and an op's local data (gda_ft_soft_parse.c), for the
 * requester */

static inline gda_ft_soft_op_t *gda_ft_soft_op_at(gda_ft_soft_qp_t *qp,
                                                 unsigned idx)
{
    return &qp->ops[idx & (qp->super.init.sq_wqebb_cnt - 1)];
}

static inline int gda_ft_soft_op_is_read(const gda_ft_soft_op_t *op)
{
    return op->mlx5_opcode == GDA_FT_MLX5_OPCODE_RDMA_READ;
}

static inline int gda_ft_soft_op_is_atomic(const gda_ft_soft_op_t *op)
{
    switch (op->mlx5_opcode) {
    case GDA_FT_MLX5_OPCODE_ATOMIC_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_FA:
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA:
        return 1;
    default:
        return 0;
    }
}

/* Operations completed only by a response carrying data */
static inline int gda_ft_soft_op_needs_response(const gda_ft_soft_op_t *op)
{
    return gda_ft_soft_op_is_read(op) || gda_ft_soft_op_is_atomic(op);
}

/* Whether any of the op's local buffers is in device memory */
static inline int gda_ft_soft_op_in_device_memory(const gda_ft_soft_op_t *op)
{
    unsigned i;

    for (i = 0; i < op->num_sge; ++i) {
        if (op->sge[i].mem_type == GDA_FT_HCA_MEM_CUDA) {
            return 1;
        }
    }
    return 0;
}

static inline int gda_ft_soft_op_atomic_size(const gda_ft_soft_op_t *op)
{
    if ((op->mlx5_opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) ||
        (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA)) {
        return 1 << ((op->opmod & 7) + 2);
    }
    return 8;
}

/* The send queue's producer index, from its doorbell record */
static inline uint16_t gda_ft_soft_sq_pi(gda_ft_soft_qp_t *qp)
{
    return gda_ft_be32toh(__atomic_load_n(
            &qp->super.init.dbrec[GDA_FT_MLX5_SND_DBR], __ATOMIC_ACQUIRE)) &
           0xffff;
}

/* Parses one WQE at WQEBB counter bb into op (its syndrome on bad input)
 * and gives it its PSNs; returns its size in WQEBBs */
unsigned gda_ft_soft_parse_wqe(gda_ft_soft_qp_t *qp, gda_ft_soft_op_t *op,
                               uint16_t bb);
/* Parses the WQEs the doorbell gave into ops; 1 when it took any */
int gda_ft_soft_req_parse(gda_ft_soft_qp_t *qp);
/* Whether the op at op_send may be sent now: 0 while its message is read
 * from device memory. Reads the next ops' messages ahead. */
int gda_ft_soft_req_ready(gda_ft_soft_qp_t *qp);
/* Frees the op's inline data or snapshot */
void gda_ft_soft_op_release_data(gda_ft_soft_op_t *op);
/* Copies [offset, offset+len) of the op's local data into dst; an error
 * when device memory refused to be read */
ucs_status_t gda_ft_soft_op_gather(gda_ft_soft_op_t *op, uint32_t offset,
                                   uint8_t *dst, uint32_t len);
/* Copies src into [offset, offset+len) of the op's local buffers; a copy
 * into device memory refused is noted in refusal with tag */
void gda_ft_soft_op_scatter(const gda_ft_soft_op_t *op, uint32_t offset,
                            const uint8_t *src, uint32_t len,
                            gda_ft_soft_refusal_t *refusal, uint32_t tag);

/* Responder (gda_ft_soft_resp.c) */
void gda_ft_soft_resp_handle_request(gda_ft_soft_qp_t *qp,
                                     const gda_ft_roce_pkt_t *pkt);
void gda_ft_soft_resp_flush_ack(gda_ft_soft_qp_t *qp);
int gda_ft_soft_resp_progress(gda_ft_soft_qp_t *qp);
/* Drops every response the responder still owes */
void gda_ft_soft_resp_reset(gda_ft_soft_qp_t *qp);
/* Where the responder stands (expected PSN, acknowledgements), for a
 * message */
const char *gda_ft_soft_resp_describe(const gda_ft_soft_qp_t *qp, char *buf,
                                      size_t max);

/* Ports and fault injection (gda_ft_soft_fault.c) */
gda_ft_soft_port_t *gda_ft_soft_port_get(gda_ft_hca_dev_t *hca_dev,
                                         uint8_t port_num);
ucs_status_t gda_ft_soft_port_set_up_locked(gda_ft_hca_dev_t *dev,
                                            uint8_t port_num, int up);
/* NULL for fault settings a port can take, else why not */
const char *gda_ft_soft_fault_invalid(const gda_ft_soft_fault_t *fault);
ucs_status_t gda_ft_soft_sched_parse(const char *spec,
                                     gda_ft_soft_sched_event_t **events_p,
                                     unsigned *count_p);
/* Whether an entry of the fault schedule is due */
int gda_ft_soft_sched_due(uint64_t now);
void gda_ft_soft_sched_progress(uint64_t now);
void gda_ft_soft_delayed_progress(gda_ft_soft_worker_t *worker, uint64_t now);
void gda_ft_soft_link_watch_open(int epfd);
void gda_ft_soft_link_watch_close(void);
void gda_ft_soft_link_watch_read(void);
int gda_ft_soft_link_check_due(uint64_t now);
void gda_ft_soft_link_check(uint64_t now);

/* Control socket (gda_ft_soft_ctl.c) */

/* Opens the control socket; its readiness wakes the epoll set epfd */
ucs_status_t gda_ft_soft_ctl_open(int epfd);
void gda_ft_soft_ctl_close(void);
void gda_ft_soft_ctl_progress(void);

static inline gda_ft_soft_qp_t *gda_ft_soft_qp(gda_ft_hca_qp_t *qp)
{
    return (gda_ft_soft_qp_t*)qp;
}

/* Retransmission timeout: 4.096 us * 2^timeout (0 = infinite) */
static inline uint64_t gda_ft_soft_timeout_ns(uint8_t timeout)
{
    return (timeout == 0) ? UINT64_MAX : (4096ull << timeout);
}

#endif
