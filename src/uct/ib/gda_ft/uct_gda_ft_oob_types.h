/*
 * gda_ft UCT transport: the out-of-band wireup channel's types, shared by
 * its interface (uct_gda_ft_oob.c), its accepted connections, the
 * receive side (uct_gda_ft_oob_conn.c), and its endpoints, the send side
 * (uct_gda_ft_oob_ep.c). What the channel is: uct_gda_ft_oob.h. Byte
 * layouts are in uct_gda_ft_wire.h.
 *
 * Threads: the accept and read handlers run in UCX's async context (a
 * thread, or a signal, or progress in poll mode); progress takes the same
 * context's lock, so the two never run together. Sends (from the caller's
 * thread, or from a handler) and the progress that writes their queue take
 * it too.
 *
 * Back-pressure: an endpoint queues what its socket does not take at once
 * (up to OOB_TX_QUEUE bytes, and OOB_TX_MAX_MSGS messages between the
 * progress calls that find them all written); beyond that am_bcopy returns
 * UCS_ERR_NO_RESOURCE and pending requests wait for progress. A connection
 * buffers one largest message: the receiver stops reading while a handler
 * that needs progress holds the head, and TCP makes the sender wait.
 *
 * Handlers are removed at teardown only, waiting for a call in progress
 * (ucs_async_remove_handler(fd, 1)); both handlers are edge-triggered,
 * so a connection that ends, or an endpoint whose peer closed, wakes its
 * handler once more at most (changing its events could race that removal:
 * epoll_ctl(MOD) of a deleted fd). A handler that removed itself, or
 * was removed without waiting, could still be running, or about to run
 * from the async thread that holds a reference to it, when the interface
 * freed its connection and the test or UCP destroyed the async context
 * (UCX: "releasing async context with 1 handlers",
 * "ucs_recursive_spinlock_destroy() failed: busy", and a crash in the
 * freed connection).
 *
 * File descriptors: UCX names an event handler by its fd, and an event
 * that found the context busy waits in the context's "missed" queue under
 * that number even after the handler is removed. Were the fd closed, the
 * number could come back as another async context's handler (another
 * worker's accept) and the late event would reach it: UCX asserts
 * "handler->async == async" in the progress that takes it. So a
 * connection that ends is shut down; progress frees it (handler removed,
 * the context's queue emptied, then the fd closed), and closes the fds of
 * endpoints destroyed since (their handlers were removed then).
 */
#ifndef UCT_GDA_FT_OOB_TYPES_H_
#define UCT_GDA_FT_OOB_TYPES_H_

#include "uct_gda_ft_oob.h"
#include "uct_gda_ft_wire.h"

#include <uct/base/uct_iface.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>


/* A largest message on the wire: header and payload */
#define UCT_GDA_FT_OOB_MSG_MAX     (sizeof(uct_gda_ft_wire_oob_hdr_t) + \
                                    UCT_GDA_FT_OOB_MAX_PAYLOAD)


typedef struct uct_gda_ft_oob_iface {
    uct_base_iface_t super;
    int              listen_fd;
    uint32_t         ipv4_be;
    uint16_t         port_be;
    ucs_list_link_t  conns;     /* accepted connections (receive side) */
    ucs_list_link_t  eps;       /* endpoints (send side) */
    int             *retired_fds; /* of destroyed endpoints, until the
                                     next progress, see above */
    unsigned         num_retired;
    int              timer_id;    /* OOB_ASYNC_TICK; -1: none */
    uct_gda_ft_oob_stats_t stats;
    struct {
        size_t       tx_queue;    /* OOB_TX_QUEUE */
        unsigned     tx_max_msgs; /* OOB_TX_MAX_MSGS */
    } config;
} uct_gda_ft_oob_iface_t;

/* An accepted connection: what the peer's endpoint sends us */
typedef struct uct_gda_ft_oob_conn {
    ucs_list_link_t         list;
    uct_gda_ft_oob_iface_t *iface;
    int                     fd;
    int                     closed;   /* ended: no events, shut down */
    int                     watched;  /* has a handler, until freed */
    uint8_t                *buf;      /* received, not yet dispatched:
                                         room for a largest message */
    size_t                  length;
} uct_gda_ft_oob_conn_t;

typedef struct uct_gda_ft_oob_ep {
    uct_base_ep_t    super;
    ucs_list_link_t  list;
    int              fd;
    int              failed;      /* the connection broke */
    int              reported;    /* ...and the error handler knows */
    int              in_pending;  /* its pending queue is dispatched */
    /* Send queue: framed messages, [tx_offset, tx_length) not yet taken
     * by the socket; room for a largest message at least */
    uint8_t         *tx_buf;
    size_t           tx_size;
    size_t           tx_offset;
    size_t           tx_length;
    unsigned         tx_msgs;     /* sent since progress last found the
                                     queue written */
    ucs_queue_head_t pending_q;
} uct_gda_ft_oob_ep_t;


static UCS_F_ALWAYS_INLINE uct_gda_ft_oob_iface_t *
uct_gda_ft_oob_ep_iface(uct_gda_ft_oob_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_gda_ft_oob_iface_t);
}

static UCS_F_ALWAYS_INLINE ucs_async_context_t *
uct_gda_ft_oob_async(uct_gda_ft_oob_iface_t *iface)
{
    return iface->super.worker->async;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_oob_watch(uct_gda_ft_oob_iface_t *iface, int fd,
                     ucs_event_set_types_t events, ucs_async_event_cb_t cb,
                     void *arg)
{
    ucs_async_context_t *async = uct_gda_ft_oob_async(iface);

    return ucs_async_set_event_handler(async->mode, fd, events, cb, arg,
                                       async);
}

/* Bytes of the send queue the socket has yet to take */
static UCS_F_ALWAYS_INLINE size_t
uct_gda_ft_oob_ep_unwritten(const uct_gda_ft_oob_ep_t *ep)
{
    return ep->tx_length - ep->tx_offset;
}

#endif
