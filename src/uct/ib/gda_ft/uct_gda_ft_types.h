/*
 * gda_ft UCT transport: the types of the interface, the endpoint and the
 * operation, in the role of UCX's rc_iface.h and rc_ep.h.
 *
 * An interface runs on one port of the MD's primary HCA (the tl device
 * "<dev>:<port>") and, when the topology gives that port a backup, on the
 * backup port too: one send CQ per path, in host memory, polled by the
 * interface progress. Every endpoint is a gda_ft_dev_ep_t of device/ (the
 * datapath GPU kernels run) with a primary QP and a backup QP to one peer;
 * operations are posted, completed, failed over and replayed by it, and the
 * interface only turns its completions into UCT completions.
 *
 * Each endpoint keeps both HCA QP handles and the peer's addresses in
 * uct_gda_ft_ep_t::path[], its path state in uct_gda_ft_ep_t::dev (active,
 * state, path_failed, counters) and its guardian state in ::guard. Byte
 * layouts that leave the process are in uct_gda_ft_wire.h.
 */
#ifndef UCT_GDA_FT_TYPES_H_
#define UCT_GDA_FT_TYPES_H_

#include "uct_gda_ft_md.h"
#include "gda_ft_ep.h"
#include "gda_ft_chan_types.h"
#include "uct_gda_ft_wire.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <pthread.h>


#define UCT_GDA_FT_TL_NAME         "gda_ft"

/* Largest zero-copy message: one operation must finish well within the
 * failover deadline even on a slow (software) HCA; UCP fragments above it */
#define UCT_GDA_FT_MAX_ZCOPY       (16ul * UCS_MBYTE)

/* Payload room of the small registered descriptors (atomic results) */
#define UCT_GDA_FT_OP_PAYLOAD      16

/* am_short through a bounce buffer when the HCAs allow less inline */
#define UCT_GDA_FT_AM_MIN_SHORT    128
/* Most iov entries of am_short_iov (cap.am.max_iov): they are copied into
 * the WQE or a bounce buffer; UCP's active messages use up to four */
#define UCT_GDA_FT_AM_MAX_IOV      8


typedef struct uct_gda_ft_iface uct_gda_ft_iface_t;
typedef struct uct_gda_ft_ep    uct_gda_ft_ep_t;
typedef struct uct_gda_ft_op    uct_gda_ft_op_t;


typedef struct uct_gda_ft_iface_config {
    uct_iface_config_t       super;
    ucs_time_t               deadline;      /* DEADLINE */
    ucs_time_t               guard_interval;/* GUARD_INTERVAL */
    double                   timeout;       /* TIMEOUT, seconds */
    unsigned                 retry_count;
    unsigned                 rnr_retry;
    unsigned                 traffic_class;
    unsigned                 tx_queue_len;  /* operations per send queue */
    unsigned                 log_size;      /* operations per endpoint */
    unsigned                 cq_len;
    unsigned                 rx_queue_len;  /* receive WQEs per QP */
    unsigned                 rx_cq_len;
    unsigned                 max_poll;
    size_t                   max_inline;
    size_t                   seg_size;
    int                      failover;
    int                      failback;
    int                      strict_fence;
    int                      resolve;
    double                   recovery_window;
    double                   rearm_backoff;
    double                   rearm_backoff_max;
    int                      print_backup;  /* ucs_on_off_auto_value_t */
    size_t                   oob_tx_queue;  /* out-of-band channel: bytes */
    unsigned                 oob_tx_max_msgs;
    ucs_time_t               oob_async_tick; /* 0: no timer */
    unsigned                 dev_channels;  /* DEVICE_CHANNELS */
    unsigned                 dev_channel_ring; /* DEVICE_CHANNEL_RING */
    int                      dev_channel_rings; /* DEVICE_CHANNEL_RINGS:
                                                   0 mapped, 1 host */
    int                      dev_channel_targets; /* DEVICE_CHANNEL_TARGETS:
                                                     0 mapped, 1 host */
    int                      dev_failover;  /* DEVICE_FAILOVER */
    int                      host_channel;  /* HOST_CHANNEL: UCS_NO,
                                               UCS_YES, UCS_TRY */
    char                    *ctl_dir;       /* CTL_DIR */
    uct_iface_mpool_config_t tx_mp;
    uct_iface_mpool_config_t rx_mp;
} uct_gda_ft_iface_config_t;


/*
 * Completion of a logged operation: the op's user cookie is a pointer to one
 * of these (0 for operations nobody waits for). Descriptors come from the
 * interface's registered pools; the payload follows the header.
 */
typedef void (*uct_gda_ft_op_handler_t)(uct_gda_ft_op_t *op,
                                        ucs_status_t status);

struct uct_gda_ft_op {
    uct_gda_ft_op_handler_t handler;
    uct_completion_t       *comp;
    uct_gda_ft_ep_t        *ep;
    uint64_t                raddr;       /* for error and in-doubt reports */
    ucs_queue_elem_t        queue;       /* flush requests: ep->flush_q */
    uint32_t                sn;          /* flush requests: log index */
    uint32_t                lkey[GDA_FT_NUM_PATHS]; /* of the payload */
    union {
        struct {
            uct_unpack_callback_t unpack_cb;
            void                 *arg;
            size_t                length;
        } get;
        struct {
            uint32_t              length; /* bytes received */
            uint32_t              imm;    /* seq << 6 | am_id */
            uint8_t               path;   /* QP it was received on: */
            uint8_t               chan;   /* 1: the peer's host
                                             channel's target QP */
        } rx;                             /* receive buffers: sn = seq,
                                             queue: ep->am.held */
        struct {
            void                 *result;
            uint8_t               size;
            uint8_t               opcode;  /* UCT_ATOMIC_OP_*, or
                                              UCT_ATOMIC_OP_LAST for cswap */
        } atomic;
        struct {
            uint64_t              chan_end; /* and everything posted on the
                                               host channel before it */
        } flush;                            /* flush requests */
    };
} UCS_V_ALIGNED(16);


/*
 * The receive queue of a QP that active messages reach: the endpoint's own
 * QP of a path, or our target QP of the peer's host channel on that path
 * (uct_gda_ft_am.c). One buffer per WQE.
 */
typedef struct uct_gda_ft_rxq {
    gda_ft_hca_qp_t         *qp;      /* NULL: none */
    gda_ft_dev_rq_t          rq;
    uct_gda_ft_op_t        **desc;    /* [RQ index & mask]: buffer posted */
    void                    *buf;     /* its WQEs (the QP's owner frees) */
    uint32_t                *dbrec;
    struct uct_gda_ft_rx_cq *cq;      /* where its receives complete */
    uint8_t                  path;
    uint8_t                  chan;    /* desc->rx.chan of its buffers */
} uct_gda_ft_rxq_t;

/* One path of an endpoint: its QP and the peer it is connected to */
typedef struct uct_gda_ft_ep_path {
    gda_ft_hca_qp_t *qp;          /* NULL: this endpoint has no such path */
    void            *sq_buf;
    void            *rq_buf;      /* the QP's work queue: RQ, then SQ */
    uct_gda_ft_rxq_t rx;          /* its receive queue */
    uint32_t        *dbrec;
    uint32_t         dest_qpn;    /* valid once connected */
    uint8_t          dest_gid[GDA_FT_HCA_GID_LEN];
    uint16_t         dest_lid;
} uct_gda_ft_ep_path_t;


typedef enum {
    UCT_GDA_FT_GUARD_IDLE,        /* healthy, or waiting to retry */
    UCT_GDA_FT_GUARD_REQUESTED,   /* asked the peer to re-arm */
    UCT_GDA_FT_GUARD_ANSWERED,    /* re-armed for the peer, awaits its probe */
    UCT_GDA_FT_GUARD_PROBING,     /* our probe of the primary is in flight */
    UCT_GDA_FT_GUARD_RECOVERING   /* probe passed, quiet window running */
} uct_gda_ft_guard_state_t;

typedef struct uct_gda_ft_ep_guard {
    uct_gda_ft_mbox_t        *mbox;          /* ours, written by the peer */
    struct uct_gda_ft_memh   *mbox_memh;
    uint64_t                  peer_mbox;     /* 0: the peer has none */
    uint32_t                  peer_mbox_rkey[GDA_FT_NUM_PATHS];
    uint8_t                   fenced[GDA_FT_NUM_PATHS];
    uct_gda_ft_guard_state_t  state;
    uint32_t                  epoch;          /* current attempt */
    uint32_t                  seen_req_epoch; /* last request answered */
    uint32_t                  my_psn;
    uint64_t                  started_ns;     /* of the current step */
    uint64_t                  next_try_ns;
    uint64_t                  backoff_ns;
    uint64_t                  recover_at_ns;
    uint64_t                  failback_ns;    /* last failback */
    /* Resolution of a failover: which of the failed path's operations the
     * peer executed */
    uint32_t                  fence_epoch;      /* our last question */
    uint32_t                  seen_fence_epoch; /* the peer's, answered */
    uint8_t                   resolving;        /* path asked about + 1 */
    uint64_t                  resolve_start_ns;
} uct_gda_ft_ep_guard_t;


/*
 * Device channels of an endpoint (uct_gda_ft_chan.c), when the interface
 * has UCX_GDA_FT_DEVICE_CHANNELS: each a pair of initiator QPs that our
 * posters use and a pair of target QPs that the peer's posters reach.
 */
typedef struct uct_gda_ft_ep_chans {
    unsigned              refs;      /* the endpoint's, and the device
                                        endpoints' that use them: a device
                                        endpoint keeps them (QPs, rings)
                                        after UCP destroyed the endpoint */
    struct uct_gda_ft_ep *ep;        /* NULL once it is destroyed */
    unsigned              num;       /* created */
    unsigned              first_dev; /* the first device channel: 1 when
                                        channel 0 is the endpoint's host
                                        channel */
    unsigned              count;     /* connected: the smaller of both
                                        sides' counts */
    struct gda_ft_chan_host *init;   /* [num] */
    struct gda_ft_chan_host *target; /* [num] */
    gda_ft_chan_t        *poster;    /* [num]: the posters' view */
    const gda_ft_chan_t  *view;      /* the device channels where kernels
                                        post ([count - first_dev], a
                                        device endpoint's copy in GPU
                                        memory), or NULL: `poster` */
    ucs_status_t        (*read_view)(void *dst, const void *src,
                                     size_t size);
    gda_ft_chan_health_t *health;    /* shared by the channels */
    struct {
        uint32_t          ask;       /* our question in flight, 0: none */
        uint32_t          ask_epoch;
        uint64_t          ask_ns;
        uint32_t          seen_epoch; /* the peer's last question */
    } q[UCT_GDA_FT_WIRE_CHAN_MAX];
    struct {
        uint32_t          rq_psns;    /* the targets' expected PSNs, summed */
        uint64_t          moved_ns;   /* when that last changed */
        uint64_t          read_ns;    /* when it was last read */
    } heard[2];                       /* per path: the peer's traffic */
} uct_gda_ft_ep_chans_t;


/*
 * The endpoint's host channel (HOST_CHANNEL, try by default): its RMA,
 * atomics and active messages are posted through channel 0 of its
 * channels, with the device datapath compiled for the CPU, and complete in
 * post order from there (uct_gda_ft_hchan.c, uct_gda_ft_am.c).
 */
typedef struct uct_gda_ft_ep_hchan {
    gda_ft_chan_t   *chan;       /* NULL: the operations use `dev` */
    uint64_t        *cookies;    /* [ring size], at the logical index of an
                                    operation's last WQE: its cookie, or
                                    UCT_GDA_FT_HCHAN_END; 0 elsewhere */
    uint64_t         posted;     /* logical index after the last post */
    gda_ft_chan_memo_t memo;     /* the only poster: how it left the
                                    channel (no turn to wait for) */
    uint64_t         delivered;  /* completions handed out before it */
    uint32_t         ops;        /* operations posted, not handed out */
    uint32_t         no_path_ops; /* handed out failed for lack of a path,
                                     as the endpoint's no_path counts */
    uint64_t         aborted;    /* what was posted before it completes
                                    with abort_status, done or not: a
                                    flush(CANCEL), or the endpoint's QPs
                                    found no path either */
    uint8_t          abort_status; /* canceled, or NO_PATH */
    ucs_list_link_t  list;       /* iface->hchan_eps, while `in_list` */
    uint8_t          in_list;
    uint8_t          op_status;  /* the first failure of the operation
                                    being handed out, WQE by WQE */
    uint8_t          am;         /* active messages go on it too: the
                                    peer's targets have receive queues */
    uint8_t          left;       /* paths it left that the endpoint's QPs
                                    are still to leave (bit per path);
                                    in iface->hchan_left meanwhile */
    ucs_list_link_t  left_list;
    gda_ft_chan_counters_t reported; /* switches and failbacks logged */
} uct_gda_ft_ep_hchan_t;


enum {
    UCT_GDA_FT_EP_FLAG_CONNECTED  = UCS_BIT(0),
    UCT_GDA_FT_EP_FLAG_ACTIVE     = UCS_BIT(1), /* in iface->active_eps */
    UCT_GDA_FT_EP_FLAG_READY      = UCS_BIT(2), /* in iface->ready_eps */
    UCT_GDA_FT_EP_FLAG_ERR_REPORTED = UCS_BIT(3),
    UCT_GDA_FT_EP_FLAG_CANCELED   = UCS_BIT(4), /* flush(CANCEL) was done */
    UCT_GDA_FT_EP_FLAG_FENCE      = UCS_BIT(5), /* fence the next post */
    /* A failback waits for the backup path to complete what it carries, so
     * that nothing posted on the primary overtakes it: new posts wait */
    UCT_GDA_FT_EP_FLAG_FAILBACK_DRAIN = UCS_BIT(6),
    /* Its pending queue is being dispatched: the request running is the
     * oldest one left, and it may post */
    UCT_GDA_FT_EP_FLAG_IN_PENDING = UCS_BIT(7),
    /* A fence found operations in flight with a host channel: new
     * operations wait until those before it on the other datapath
     * completed, which no WQE fence orders (uct_gda_ft_ep_fence_passed) */
    UCT_GDA_FT_EP_FLAG_FENCE_WAIT = UCS_BIT(8),
    UCT_GDA_FT_EP_FLAG_HCHAN_FENCE = UCS_BIT(9)  /* fence the next WQE of
                                                    the host channel */
};


/* Active-message counters of an endpoint (receive side) */
typedef struct uct_gda_ft_am_counters {
    uint32_t sent;        /* messages posted */
    uint32_t received;    /* messages delivered to the AM handlers */
    uint32_t duplicates;  /* replayed copies dropped */
    uint32_t reordered;   /* arrived before an earlier one */
    uint32_t gaps;        /* sequence gaps given up on (must stay 0) */
} uct_gda_ft_am_counters_t;


/* Active-message state of an endpoint */
typedef struct uct_gda_ft_ep_am {
    uint32_t                 tx_seq;      /* of the next message sent */
    uint32_t                 rx_seq;      /* next one to deliver */
    uint32_t                 rx_arrival;  /* after the latest arrived */
    ucs_queue_head_t         held;        /* received, not yet delivered */
    unsigned                 num_held;
    uct_gda_ft_am_counters_t counters;
} uct_gda_ft_ep_am_t;


struct uct_gda_ft_ep {
    uct_base_ep_t            super;
    gda_ft_dev_ep_t          dev;       /* the datapath endpoint */
    gda_ft_dev_op_t         *log;
    uct_gda_ft_ep_path_t     path[GDA_FT_NUM_PATHS];
    unsigned                 flags;
    uint32_t                 cancel_sn; /* ops before it: canceled */
    ucs_arbiter_group_t      arb_group;
    ucs_queue_head_t         flush_q;
    ucs_list_link_t          list;      /* iface->eps */
    ucs_list_link_t          active;    /* iface->active_eps */
    ucs_list_link_t          ready;     /* iface->ready_eps */
    gda_ft_dev_ep_counters_t reported;  /* counters already logged */
    uct_gda_ft_ep_guard_t    guard;     /* fence and failback */
    uct_gda_ft_ep_am_t       am;        /* active messages */
    uct_gda_ft_ep_chans_t   *chans;     /* device channels, or NULL */
    uct_gda_ft_ep_hchan_t    hchan;     /* RMA, atomics and active
                                           messages on a channel */
    uct_gda_ft_rxq_t         chan_rx[GDA_FT_NUM_PATHS]; /* where the peer's
                                           host channel's messages land:
                                           our target QPs of channel 0 */
    struct {
        uint32_t             log_sn;    /* FENCE_WAIT: until the log and */
        uint64_t             chan_seq;  /* the host channel delivered these */
    } fence;
    ucs_status_t             unreported_status; /* for the next flush */
};


KHASH_MAP_INIT_INT64(uct_gda_ft_qp, uct_gda_ft_ep_t*);


/*
 * A receive CQ of a path: RX_CQ_LEN entries for the QPs of up to
 * RX_CQ_LEN / RX_QUEUE_LEN endpoints, each of which may complete all of its
 * receive WQEs into it. The path opens another when they are all taken, so
 * the CQ's size bounds no endpoint count.
 */
typedef struct uct_gda_ft_rx_cq {
    gda_ft_hca_cq_t       *cq;
    void                  *buf;
    gda_ft_dev_cq_t        dcq;
    unsigned               reserved; /* RX_QUEUE_LEN per endpoint on it */
} uct_gda_ft_rx_cq_t;

typedef struct uct_gda_ft_iface_path {
    uct_gda_ft_dev_t      *dev;      /* NULL: no such path */
    uint8_t                port_num;
    gda_ft_hca_port_attr_t port_attr;
    gda_ft_hca_cq_t       *cq;
    void                  *cq_buf;
    gda_ft_dev_cq_t        dcq;
    uct_gda_ft_rx_cq_t   **rx_cqs;   /* receive completions of its QPs */
    unsigned               num_rx_cqs;
    unsigned               rx_poll_next; /* the CQ progress polls first */
} uct_gda_ft_iface_path_t;


struct uct_gda_ft_iface {
    uct_base_iface_t        super;
    uct_gda_ft_iface_path_t path[GDA_FT_NUM_PATHS];
    khash_t(uct_gda_ft_qp)  qp_hash;     /* path << 32 | QPN -> ep */
    ucs_list_link_t         eps;         /* all endpoints */
    ucs_list_link_t         ctl_list;    /* the control socket's
                                            interfaces (uct_gda_ft_ctl.c) */
    ucs_list_link_t         active_eps;  /* endpoints with operations */
    ucs_list_link_t         ready_eps;   /* endpoints with completions */
    ucs_list_link_t         hchan_eps;   /* endpoints with operations on
                                            their host channel */
    ucs_list_link_t         hchan_left;  /* endpoints whose host channel
                                            left a path their QPs are
                                            still on (the guardian moves
                                            them) */
    ucs_arbiter_t           arbiter;
    ucs_mpool_t             tx_mp;       /* bounce buffers, registered */
    ucs_mpool_t             op_mp;       /* descriptors, registered */
    ucs_mpool_t             rx_mp;       /* receive buffers, registered */
    /* The endpoint whose active message is being delivered; cleared if the
     * handler destroys it (the buffer then goes back to the pool) */
    uct_gda_ft_ep_t        *am_dispatch_ep;
    unsigned                outstanding; /* logged operations, all eps */
    size_t                  dev_addr_len;
    uint64_t                last_deadline_check_ns;
    uint64_t                last_guard_ns;
    uint64_t                last_chan_guard_ns;
    pthread_mutex_t         eps_lock;    /* eps: the counters command
                                            reads it from another thread */
    struct {
        uint64_t            deadline_ns; /* 0: no deadline */
        uint64_t            guard_ns;    /* guardian pass interval */
        uint8_t             timeout;     /* IB encoding */
        uint8_t             retry_count;
        uint8_t             rnr_retry;
        uint8_t             traffic_class;
        unsigned            path_mtu;
        unsigned            log_size;
        unsigned            ep_max_ops;  /* log entries operations may use */
        unsigned            sq_wqebbs;
        unsigned            op_wqebbs;   /* largest WQE of any operation */
        unsigned            cq_len;
        unsigned            rx_queue_len;
        unsigned            rx_cq_len;
        unsigned            am_max_short;
        unsigned            max_outstanding;
        unsigned            max_poll;
        unsigned            max_inline;
        size_t              seg_size;
        size_t              max_msg;
        unsigned            max_rd_atomic;
        int                 atomic_host_order; /* 8-byte results in host
                                                  byte order (both HCAs) */
        int                 failover;
        int                 failback;
        int                 strict_fence;
        int                 resolve;
        uint64_t            recovery_ns;
        uint64_t            rearm_backoff_ns;
        uint64_t            rearm_backoff_max_ns;
        int                 soft_yield;  /* yield when polling finds
                                            nothing: the HCA is a thread */
        unsigned            dev_channels;     /* per endpoint */
        unsigned            dev_channel_ring; /* WQEBBs per channel path */
        int                 dev_channel_mapped; /* rings for GPU posters */
        int                 dev_target_mapped; /* the peer's channels'
                                                  targets in mapped memory */
        int                 dev_failover;     /* channels may switch */
        int                 host_channel;     /* channel 0: the endpoint's
                                                 RMA and atomics */
        unsigned            num_channels;     /* host + device, per ep */
        unsigned            hchan_ring;       /* WQEBBs of the host one */
        unsigned            hchan_op_wqebbs;  /* its largest operation */
        uint64_t            chan_guard_ns;    /* their guardian's interval:
                                                 a switch waits for it */
    } config;
    char                    backup_desc[UCT_GDA_FT_TOPO_STR_MAX];
};


static UCS_F_ALWAYS_INLINE uct_gda_ft_iface_t *
uct_gda_ft_ep_iface(uct_gda_ft_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_gda_ft_iface_t);
}

#endif
