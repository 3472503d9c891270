/*
 * gda_ft UCT transport: the types of the interface, the endpoint and the
 * operation, in the role of UCX's rc_iface.h and rc_ep.h.
 *
 * An interface runs on one port of the MD's primary HCA (the tl device
 * "<dev>:<port>") and, when the topology gives that port a backup, on the
 * backup port too. Every endpoint has channels of the device datapath
 * (device/gda_ft_chan_*.h): channel 0 is its host channel, which carries
 * its RMA, atomics and active messages, posted by the endpoint's thread
 * with the datapath compiled for the CPU; channels 1.. are the device
 * channels of DEVICE_CHANNELS, posted by kernels. Each channel has a
 * primary and a backup path; without a backup HCA at either end it has
 * the primary alone, and a failure of that path is the endpoint's.
 *
 * The guardian's messages to the peer (uct_gda_ft_chan_ctl.c) are control
 * operations on the endpoint's control QPs (::ctl), and land in the peer
 * endpoint's mailbox (::mbox). Byte layouts that leave the
 * process are in uct_gda_ft_wire.h.
 */
#ifndef UCT_GDA_FT_TYPES_H_
#define UCT_GDA_FT_TYPES_H_

#include "uct_gda_ft_md.h"
#include "uct_gda_ft_counters.h"
#include "gda_ft_chan_types.h"
#include "uct_gda_ft_wire.h"
#include "uct_gda_ft_peer.h"

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

/* Largest put_short and am_short (header included): up to 16 bytes go
 * inline in the channel's WQE, more through a bounce buffer */
#define UCT_GDA_FT_MAX_SHORT       128
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
    ucs_time_t               peer_timeout;  /* PEER_TIMEOUT */
    double                   timeout;       /* TIMEOUT, seconds */
    unsigned                 retry_count;
    unsigned                 rnr_retry;
    unsigned                 traffic_class;
    unsigned                 rx_queue_len;  /* receive WQEs per QP */
    unsigned                 rx_cq_len;
    unsigned                 max_poll;
    size_t                   seg_size;
    int                      failover;
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
    unsigned                 dev_db_defer;  /* DEVICE_DOORBELL_DEFER */
    int                      dev_failover;  /* DEVICE_FAILOVER */
    char                    *ctl_dir;       /* CTL_DIR */
    uct_iface_mpool_config_t tx_mp;
    uct_iface_mpool_config_t rx_mp;
} uct_gda_ft_iface_config_t;


/*
 * Completion of an operation: its cookie is a pointer to one of these (0
 * for operations nobody waits for). Descriptors come from the interface's
 * registered pools; the payload follows the header.
 */
typedef void (*uct_gda_ft_op_handler_t)(uct_gda_ft_op_t *op,
                                        ucs_status_t status);

struct uct_gda_ft_op {
    uct_gda_ft_op_handler_t handler;
    uct_completion_t       *comp;
    uct_gda_ft_ep_t        *ep;
    uint64_t                raddr;       /* for error and in-doubt reports */
    ucs_queue_elem_t        queue;       /* flush requests: ep->flush_q */
    uint32_t                sn;          /* receive buffers: the message's
                                            sequence number */
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
            uint8_t               path;   /* target QP it was received on */
        } rx;                             /* receive buffers: queue:
                                             ep->am.held */
        struct {
            void                 *result;
            uint8_t               size;
            uint8_t               opcode;  /* UCT_ATOMIC_OP_*, or
                                              UCT_ATOMIC_OP_LAST for cswap */
        } atomic;
        struct {
            uint64_t              chan_end; /* everything posted on the
                                               host channel before it */
        } flush;                            /* flush requests */
    };
} UCS_V_ALIGNED(16);


/*
 * The receive queue of one of our target QPs of the peer's host channel,
 * where its active messages land (uct_gda_ft_am.c). One buffer per WQE.
 */
typedef struct uct_gda_ft_rxq {
    gda_ft_hca_qp_t         *qp;      /* NULL: none */
    gda_ft_dev_rq_t          rq;
    uct_gda_ft_op_t        **desc;    /* [RQ index & mask]: buffer posted */
    void                    *buf;     /* its WQEs (the QP's owner frees) */
    uint32_t                *dbrec;
    struct uct_gda_ft_rx_cq *cq;      /* where its receives complete */
    uint8_t                  path;
} uct_gda_ft_rxq_t;

/* Where the peer's port of one path is, once connected */
typedef struct uct_gda_ft_ep_peer {
    uint8_t          gid[GDA_FT_HCA_GID_LEN];
    uint16_t         lid;
} uct_gda_ft_ep_peer_t;

/*
 * The guardian's control operations on one path: RDMA WRITEs into the
 * peer's mailbox, posted on the endpoint's control QP of that path
 * (uct_gda_ft_chan_ctl.c). No channel switch fences a control QP: it leaves
 * service only on an error completion, until the two ends re-arm it.
 */
typedef struct uct_gda_ft_ep_ctl {
    gda_ft_dev_sq_t          sq;       /* its send ring */
    uint64_t                 busy_ns;  /* when it last went from empty to
                                          having writes in flight */
    uint64_t                 done_ns;  /* last write the peer acknowledged */
    uint64_t                 failed_ns; /* when it failed, or its last
                                           re-arm try began */
    uint8_t                  failed;   /* absent, or an error completion:
                                          unused until re-armed */
    uint8_t                  unacked;  /* failed for want of the peer's
                                          acknowledgements (the HCA's
                                          retries ran out); any other
                                          failure says nothing of the
                                          peer */
    uint8_t                  rearming; /* our QP is re-armed, the peer's
                                          is being asked */
    uint32_t                 gen;      /* bumped when its ring starts over
                                          or it fails: what was in flight
                                          before is lost */
} uct_gda_ft_ep_ctl_t;


/* A control write, to learn whether it landed (uct_gda_ft_ctl_landed) */
typedef struct uct_gda_ft_ctl_mark {
    uint32_t                 gen;      /* its control QP's, when posted */
    uint16_t                 pi;       /* its ring's, after it */
    uint8_t                  carrier;  /* the path of its control QP */
    uint8_t                  valid;    /* something was posted */
} uct_gda_ft_ctl_mark_t;


/*
 * Channels of an endpoint (uct_gda_ft_chan.c): the host channel (0) and
 * the device channels, each a pair of initiator QPs that our posters use
 * and a pair of target QPs that the peer's posters reach.
 */
typedef struct uct_gda_ft_ep_chans {
    unsigned              refs;      /* the endpoint's, and the device
                                        endpoints' that use them: a device
                                        endpoint keeps them (QPs, rings)
                                        after UCP destroyed the endpoint */
    struct uct_gda_ft_ep *ep;        /* NULL once it is destroyed */
    unsigned              num;       /* created: 1 + DEVICE_CHANNELS */
    unsigned              count;     /* usable: the host channel, and
                                        the device channels once both
                                        ends connected them (the smaller
                                        of both sides' counts) */
    unsigned              peer_num;  /* the peer's channels, as its
                                        address says */
    unsigned              num_paths; /* 2, or 1 without a backup HCA at
                                        either end */
    struct gda_ft_chan_host *init;   /* [num] */
    struct gda_ft_chan_host *target; /* [num] */
    struct gda_ft_chan_host *ctl;    /* the control QPs: a channel that
                                        nobody posts on, connected to the
                                        peer's */
    uint32_t              peer_ctl_qpn[2];
    int                   has_ctl;   /* ctl initialized */
    gda_ft_chan_t        *poster;    /* [num]: the posters' view */
    const gda_ft_chan_t  *view;      /* the device channels where kernels
                                        post ([count - 1], a device
                                        endpoint's copy in GPU memory), or
                                        NULL: `poster` */
    ucs_status_t        (*read_view)(void *dst, const void *src,
                                     size_t size);
    gda_ft_chan_health_t *health;    /* shared by the channels */
    int                   handed_out; /* the device channels were handed
                                        out: a kernel may wait on the peer
                                        with nothing in flight */
    struct {
        uint32_t          ask;       /* our question in flight, 0: none */
        uint32_t          ask_epoch;
        uint32_t          ask_psn[2]; /* its arguments: a question with
                                        others is a new one */
        uint64_t          ask_ns;
        uint8_t           carrier;   /* the control path it went on */
        uint32_t          seen_epoch; /* the peer's last question
                                         answered */
        uint32_t          done_epoch; /* the peer's last question done:
                                         its kind and path, arguments and
                                         answer (that question, or one
                                         asked again with the same
                                         re-arm's PSNs, is answered
                                         again, never done again) */
        uint32_t          done_req;
        uint32_t          done_psn[2];
        uint32_t          done_refused;
        uint32_t          done_answer_psn;
    } q[UCT_GDA_FT_WIRE_CHAN_MAX + 1]; /* per channel, then the control
                                          QPs (UCT_GDA_FT_WIRE_CTL_SLOT) */
    uint64_t              guardian_ns; /* when the peer's guardian last
                                         answered or asked a question, or
                                         its liveness probe came */
    uint32_t              seen_beat;   /* the last probe count seen */
    uint64_t              guard_ns;    /* our guardian's last pass */
    struct {
        uint64_t          progress;   /* the channels' progress stamp of
                                         the path (health) last seen */
        uint32_t          rq_psns;    /* the targets' expected PSNs, summed */
        uint64_t          queried_ns; /* when those were last read */
        uint64_t          moved_ns;   /* when either last changed */
        uint64_t          read_ns;    /* when they were last looked at */
    } heard[2];                       /* per path: the peer's traffic */
    uct_gda_ft_peer_t     peer;      /* whether the peer is alive
                                        (uct_gda_ft_peer.c) */
    struct {
        uint8_t           pending;   /* the exchange goes on: the device
                                        channels are not handed out */
        uint8_t           connected; /* ours connected to the peer's
                                        directory */
        uint8_t           acked;     /* the peer connected its own to our
                                        directory */
        uint8_t           taken;     /* the peer's directory was taken */
        uint32_t          pushes;    /* of our directory: the last one's
                                        epoch */
        uct_gda_ft_ctl_mark_t push[GDA_FT_NUM_PATHS]; /* the last push
                                        over each control path */
        uint64_t          answer;    /* ours to the peer's directory, once
                                        taken */
        uct_gda_ft_ctl_mark_t answered[GDA_FT_NUM_PATHS]; /* it, over
                                        each control path */
        ucs_status_t      status;    /* why the exchange failed: the
                                        endpoint's error */
    } dir;                           /* the channel directories
                                        (uct_gda_ft_wire_chan_dir_t) */
} uct_gda_ft_ep_chans_t;


/*
 * The endpoint's host channel: its RMA, atomics and active messages are
 * posted through channel 0 of its channels, with the device datapath
 * compiled for the CPU, and complete in post order from there
 * (uct_gda_ft_hchan.c, uct_gda_ft_am.c).
 */
typedef struct uct_gda_ft_ep_hchan {
    gda_ft_chan_t   *chan;       /* NULL until connected */
    uint64_t        *cookies;    /* [ring size], at the logical index of an
                                    operation's last WQE: its cookie, or
                                    UCT_GDA_FT_HCHAN_END; 0 elsewhere */
    uint64_t         posted;     /* logical index after the last post */
    gda_ft_chan_memo_t memo;     /* the only poster: how it left the
                                    channel (no turn to wait for) */
    uint64_t         delivered;  /* completions handed out before it */
    uint32_t         ops;        /* operations posted, not handed out */
    uint32_t         no_path_ops; /* handed out failed for lack of a path */
    uint64_t         aborted;    /* what was posted before it completes
                                    with abort_status, done or not: a
                                    flush(CANCEL) */
    uint8_t          abort_status; /* canceled */
    ucs_list_link_t  list;       /* iface->hchan_eps, while `in_list` */
    uint8_t          in_list;
    uint8_t          op_status;  /* the first failure of the operation
                                    being handed out, WQE by WQE */
    gda_ft_chan_counters_t reported; /* switches and failbacks logged */
} uct_gda_ft_ep_hchan_t;


enum {
    UCT_GDA_FT_EP_FLAG_CONNECTED  = UCS_BIT(0),
    UCT_GDA_FT_EP_FLAG_READY      = UCS_BIT(1), /* in iface->ready_eps */
    UCT_GDA_FT_EP_FLAG_ERR_REPORTED = UCS_BIT(2),
    UCT_GDA_FT_EP_FLAG_CANCELED   = UCS_BIT(3), /* flush(CANCEL) was done */
    /* Its pending queue is being dispatched: the request running is the
     * oldest one left, and it may post */
    UCT_GDA_FT_EP_FLAG_IN_PENDING = UCS_BIT(4),
    UCT_GDA_FT_EP_FLAG_FENCE      = UCS_BIT(5), /* fence the next WQE */
    /* Failed otherwise than by losing its paths (chans->dir.status): the
     * error is reported by the next progress */
    UCT_GDA_FT_EP_FLAG_FAILED     = UCS_BIT(6)
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
    unsigned                 flags;
    ucs_arbiter_group_t      arb_group;
    ucs_queue_head_t         flush_q;
    ucs_list_link_t          list;      /* iface->eps */
    ucs_list_link_t          ready;     /* iface->ready_eps */
    uct_gda_ft_ep_peer_t     peer[GDA_FT_NUM_PATHS];
    uct_gda_ft_mbox_t       *mbox;      /* ours, written by the peer */
    struct uct_gda_ft_memh  *mbox_memh;
    uint64_t                 peer_mbox; /* the peer's */
    uint32_t                 peer_mbox_rkey[GDA_FT_NUM_PATHS];
    uct_gda_ft_ep_ctl_t      ctl[GDA_FT_NUM_PATHS];
    uct_gda_ft_ep_am_t       am;        /* active messages */
    uct_gda_ft_ep_chans_t   *chans;     /* host and device channels */
    uct_gda_ft_ep_hchan_t    hchan;     /* RMA, atomics and active
                                           messages on channel 0 */
    uct_gda_ft_rxq_t         chan_rx[GDA_FT_NUM_PATHS]; /* where the peer's
                                           host channel's messages land:
                                           our target QPs of channel 0 */
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

/*
 * Completion events (uct_gda_ft_event.c): the HCA writes cq_fd when a CQE
 * of the interface's CQs lands while `armed` is set; timer_fd wakes the
 * channels' guardian while operations are outstanding. UCT's event fd is
 * fd, an epoll set of both.
 */
typedef struct uct_gda_ft_iface_event {
    int                    fd;       /* -1: the HCAs have no CQ events */
    int                    cq_fd;
    int                    timer_fd;
    int32_t                armed;    /* the CQs' event_armed word */
} uct_gda_ft_iface_event_t;

typedef struct uct_gda_ft_iface_path {
    uct_gda_ft_dev_t      *dev;      /* NULL: no such path */
    uint8_t                port_num;
    gda_ft_hca_port_attr_t port_attr;
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
    ucs_list_link_t         ready_eps;   /* endpoints with completions */
    ucs_list_link_t         hchan_eps;   /* endpoints with operations on
                                            their host channel */
    ucs_arbiter_t           arbiter;
    ucs_mpool_t             tx_mp;       /* bounce buffers, registered */
    ucs_mpool_t             op_mp;       /* descriptors, registered */
    ucs_mpool_t             rx_mp;       /* receive buffers, registered */
    /* The endpoint whose active message is being delivered; cleared if the
     * handler destroys it (the buffer then goes back to the pool) */
    uct_gda_ft_ep_t        *am_dispatch_ep;
    size_t                  dev_addr_len;
    uint64_t                last_chan_guard_ns;
    unsigned                dir_pending; /* endpoints whose channel
                                            directories are being
                                            exchanged: the guardian runs */
    uct_gda_ft_iface_event_t event;
    pthread_mutex_t         eps_lock;    /* eps: the counters command
                                            reads it from another thread */
    struct {
        uint64_t            deadline_ns; /* 0: no deadline */
        uint64_t            peer_timeout_ns; /* a silent peer is given up
                                                after it; 0: never */
        uint8_t             timeout;     /* IB encoding */
        uint8_t             retry_count;
        uint8_t             rnr_retry;
        uint8_t             traffic_class;
        unsigned            path_mtu;
        unsigned            rx_queue_len;
        unsigned            rx_cq_len;
        unsigned            am_max_short;
        unsigned            max_poll;
        size_t              seg_size;
        size_t              max_msg;
        unsigned            max_rd_atomic;
        int                 atomic_host_order; /* 8-byte results in host
                                                  byte order (both HCAs) */
        int                 resolve;
        uint64_t            recovery_ns;
        uint64_t            rearm_backoff_ns;
        uint64_t            rearm_backoff_max_ns;
        int                 soft_yield;  /* yield when polling finds
                                            nothing: the HCA is a thread */
        int                 cpu_engine;  /* either HCA is played by CPU
                                            threads (a loaded machine may
                                            not run them) */
        unsigned            dev_channels;     /* per endpoint */
        unsigned            dev_channel_ring; /* WQEBBs per channel path */
        int                 dev_channel_mapped; /* rings for GPU posters */
        int                 dev_target_mapped; /* the peer's channels'
                                                  targets in mapped memory */
        unsigned            dev_db_defer;     /* WQEBBs a device channel's
                                                 publication may leave for
                                                 the next one to ring */
        int                 dev_failover;     /* device channels may
                                                 switch */
        unsigned            num_channels;     /* host + device, per ep */
        unsigned            hchan_ring;       /* WQEBBs of the host one */
        unsigned            hchan_op_wqebbs;  /* its largest operation */
        uint64_t            chan_guard_ns;    /* the channels' guardian's
                                                 interval: a switch waits
                                                 for it */
    } config;
    char                    backup_desc[UCT_GDA_FT_TOPO_STR_MAX];
};


static UCS_F_ALWAYS_INLINE uct_gda_ft_iface_t *
uct_gda_ft_ep_iface(uct_gda_ft_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_gda_ft_iface_t);
}

#endif
