/*
 * gda_ft UCT transport: the out-of-band wireup channel (see
 * uct_gda_ft_oob.h). Byte layouts are in uct_gda_ft_wire.h.
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
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE   /* accept4 */
#endif

#include "uct_gda_ft_oob.h"
#include "uct_gda_ft_iface.h"
#include "uct_gda_ft_perf.h"
#include "uct_gda_ft_wire.h"

#include <gda_ft_uct_compat.h>
#include <uct/base/uct_worker.h>
#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/type/class.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>


/* How long an endpoint waits for the peer's listener to accept */
#define UCT_GDA_FT_OOB_CONNECT_MS  10000

/* A largest message on the wire: header and payload */
#define UCT_GDA_FT_OOB_MSG_MAX     (sizeof(uct_gda_ft_wire_oob_hdr_t) + \
                                    UCT_GDA_FT_OOB_MAX_PAYLOAD)

/* Buffers of a connection read and dispatched in one go: a sender that
 * never stops cannot hold the progress or the async thread forever (the
 * rest waits for the next event or progress) */
#define UCT_GDA_FT_OOB_RX_ROUNDS   16


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


static uct_gda_ft_oob_iface_t *uct_gda_ft_oob_ep_iface(uct_gda_ft_oob_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_gda_ft_oob_iface_t);
}

static ucs_async_context_t *
uct_gda_ft_oob_async(uct_gda_ft_oob_iface_t *iface)
{
    return iface->super.worker->async;
}

static ucs_status_t uct_gda_ft_oob_watch(uct_gda_ft_oob_iface_t *iface,
                                         int fd, ucs_event_set_types_t events,
                                         ucs_async_event_cb_t cb, void *arg)
{
    ucs_async_context_t *async = uct_gda_ft_oob_async(iface);

    return ucs_async_set_event_handler(async->mode, fd, events, cb, arg,
                                       async);
}

int uct_gda_ft_oob_is_dev_name(const char *dev_name)
{
    const char *colon = strrchr(dev_name, ':');

    return (colon != NULL) && !strcmp(colon + 1, UCT_GDA_FT_OOB_DEV_SUFFIX);
}

ucs_status_t uct_gda_ft_oob_ipv4(uct_md_h tl_md, uint32_t *ipv4_be)
{
    uct_gda_ft_md_t *md = ucs_derived_of(tl_md, uct_gda_ft_md_t);
    gda_ft_hca_port_attr_t attr;
    ucs_status_t status;

    status = gda_ft_hca_port_query(md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca, 1,
                                   &attr);
    if (status != UCS_OK) {
        return status;
    }
    return gda_ft_hca_gid_to_ipv4(attr.gid, ipv4_be) ? UCS_OK :
                                                      UCS_ERR_UNSUPPORTED;
}


/* ---- receive side -------------------------------------------------------- */

/* Ends a connection: its handler and fd stay until the interface closes */
static void uct_gda_ft_oob_conn_close(uct_gda_ft_oob_conn_t *conn)
{
    if (!conn->closed) {
        shutdown(conn->fd, SHUT_RDWR);
        conn->closed = 1;
    }
}

/*
 * Runs the handlers of the complete messages at the head of the buffer, in
 * order. From the async context only handlers that allow it run; the first
 * one that does not waits, with everything after it, for progress.
 */
static unsigned uct_gda_ft_oob_conn_dispatch(uct_gda_ft_oob_conn_t *conn,
                                             int async)
{
    uct_gda_ft_oob_iface_t *iface = conn->iface;
    size_t offset                 = 0;
    unsigned count                = 0;
    const char *reason;
    uint32_t length;
    uint8_t am_id;

    while (conn->length - offset >= sizeof(uct_gda_ft_wire_oob_hdr_t)) {
        if (uct_gda_ft_wire_oob_hdr_unpack(conn->buf + offset,
                                           conn->length - offset, &am_id,
                                           &length, &reason) != UCS_OK) {
            ucs_error("oob: refusing the connection on fd %d: %s",
                      conn->fd, reason);
            ++iface->stats.refused;
            uct_gda_ft_oob_conn_close(conn);
            conn->length = 0;
            return count;
        }
        if (conn->length - offset <
            sizeof(uct_gda_ft_wire_oob_hdr_t) + length) {
            break;      /* the rest is still on its way */
        }
        if (async && !(iface->super.am[am_id].flags & UCT_CB_FLAG_ASYNC)) {
            break;
        }
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id,
                           conn->buf + offset +
                           sizeof(uct_gda_ft_wire_oob_hdr_t), length,
                           "RX: fd %d AM_BCOPY%s", conn->fd,
                           async ? " (async)" : "");
        uct_iface_invoke_am(&iface->super, am_id,
                            conn->buf + offset +
                            sizeof(uct_gda_ft_wire_oob_hdr_t), length, 0);
        offset += sizeof(uct_gda_ft_wire_oob_hdr_t) + length;
        ++count;
    }

    if (offset > 0) {
        memmove(conn->buf, conn->buf + offset, conn->length - offset);
        conn->length -= offset;
    }
    return count;
}

/* Reads what the socket has until the buffer holds a largest message;
 * closes the connection at its end. Returns whether the buffer is full (the
 * socket may hold more). */
static int uct_gda_ft_oob_conn_read(uct_gda_ft_oob_conn_t *conn)
{
    ssize_t ret;

    while (!conn->closed && (conn->length < UCT_GDA_FT_OOB_MSG_MAX)) {
        if (conn->buf == NULL) {
            conn->buf = ucs_malloc(UCT_GDA_FT_OOB_MSG_MAX, "gda_ft_oob_rx");
            if (conn->buf == NULL) {
                ucs_error("oob: no memory to receive on fd %d",
                          conn->fd);
                uct_gda_ft_oob_conn_close(conn);
                return 0;
            }
        }

        ret = recv(conn->fd, conn->buf + conn->length,
                   UCT_GDA_FT_OOB_MSG_MAX - conn->length, MSG_DONTWAIT);
        if (ret > 0) {
            conn->length += ret;
        } else if ((ret < 0) && (errno == EINTR)) {
            continue;
        } else if ((ret < 0) && (errno == EAGAIN)) {
            return 0;
        } else {
            /* the peer's endpoint is gone: what it sent stays queued */
            ucs_debug("oob: connection on fd %d closed (%s)",
                      conn->fd, (ret == 0) ? "by the peer" : strerror(errno));
            uct_gda_ft_oob_conn_close(conn);
        }
    }
    return !conn->closed;
}

/*
 * Reads and dispatches in turns, while the buffer fills up and its head
 * message finds a handler that runs here; a bounded number of times.
 * Returns the messages dispatched.
 */
static unsigned uct_gda_ft_oob_conn_progress(uct_gda_ft_oob_conn_t *conn,
                                             int async)
{
    unsigned count = 0, rounds = 0, dispatched;
    int full;

    do {
        full        = uct_gda_ft_oob_conn_read(conn);
        dispatched  = uct_gda_ft_oob_conn_dispatch(conn, async);
        count      += dispatched;
    } while (full && (dispatched > 0) &&
             (++rounds < UCT_GDA_FT_OOB_RX_ROUNDS));
    return count;
}

static void uct_gda_ft_oob_conn_event(int fd, ucs_event_set_types_t events,
                                      void *arg)
{
    uct_gda_ft_oob_conn_progress(arg, 1);
}

/*
 * The async thread's own pass over the connections. UCX does not call a
 * handler whose event finds the async context blocked (by am_bcopy, for
 * one: in loopback the message arrives while its sender still holds the
 * context); it queues the event for the next ucs_async_check_miss(), which
 * only progress makes. The connections' handlers are edge-triggered, so the
 * data left in the socket raises no new event, and a message for an
 * asynchronous handler waited for progress (UCX's am_async, "prev_am_count
 * + 1"). A timer that finds the context blocked is called again at its next
 * tick.
 */
static void uct_gda_ft_oob_async_timer(int id, ucs_event_set_types_t events,
                                       void *arg)
{
    uct_gda_ft_oob_iface_t *iface = arg;
    uct_gda_ft_oob_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        uct_gda_ft_oob_conn_progress(conn, 1);
    }
}

static void uct_gda_ft_oob_accept_event(int fd, ucs_event_set_types_t events,
                                        void *arg)
{
    uct_gda_ft_oob_iface_t *iface = arg;
    uct_gda_ft_oob_conn_t *conn;
    int conn_fd, one = 1;

    for (;;) {
        conn_fd = accept4(iface->listen_fd, NULL, NULL,
                          SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (conn_fd < 0) {
            if ((errno != EAGAIN) && (errno != EINTR)) {
                ucs_error("oob: accept() failed: %m");
            }
            return;
        }

        conn = ucs_calloc(1, sizeof(*conn), "gda_ft_oob_conn");
        if (conn == NULL) {
            ucs_error("oob: no memory for a connection");
            close(conn_fd);
            continue;
        }
        conn->iface   = iface;
        conn->fd      = conn_fd;
        conn->closed  = 0;
        conn->watched = 0;
        ++iface->stats.accepted;
        ++iface->stats.open;
        setsockopt(conn_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ucs_list_add_tail(&iface->conns, &conn->list);
        /* edge-triggered: what the handler leaves in the socket while a
         * message waits for progress must not wake it again and again */
        if (uct_gda_ft_oob_watch(iface, conn_fd,
                                 UCS_EVENT_SET_EVREAD |
                                 UCS_EVENT_SET_EDGE_TRIGGERED,
                                 uct_gda_ft_oob_conn_event, conn) != UCS_OK) {
            ucs_error("oob: cannot watch connection fd %d", conn_fd);
            shutdown(conn_fd, SHUT_RDWR);
            conn->closed = 1;
        } else {
            conn->watched = 1;
        }
    }
}

/* Its handler is removed, once a call in progress returns: no event of
 * the fd enters the context's queue after */
static void uct_gda_ft_oob_conn_unwatch(uct_gda_ft_oob_conn_t *conn)
{
    if (conn->watched) {
        ucs_async_remove_handler(conn->fd, 1);
        conn->watched = 0;
    }
}

/* Takes the events that met the context blocked out of its queue (those
 * of removed handlers are dropped), so that no fd closed after is named
 * there. From progress, on the context's thread. */
static void uct_gda_ft_oob_drain_missed(ucs_async_context_t *async)
{
    do {
        ucs_async_check_miss(async);
    } while (!ucs_mpmc_queue_is_empty(&async->missed));
}

/* From progress, unwatched and with no event of the fd left in the queue;
 * or when the interface closes, whose worker's context goes with it */
static void uct_gda_ft_oob_conn_free(uct_gda_ft_oob_conn_t *conn)
{
    uct_gda_ft_oob_conn_unwatch(conn);
    close(conn->fd);
    ucs_list_del(&conn->list);
    --conn->iface->stats.open;
    ucs_free(conn->buf);
    ucs_free(conn);
}

void uct_gda_ft_oob_iface_stats(uct_iface_h tl_iface,
                                uct_gda_ft_oob_stats_t *stats)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);

    UCS_ASYNC_BLOCK(async);
    *stats = iface->stats;
    UCS_ASYNC_UNBLOCK(async);
}

/* ---- send side ----------------------------------------------------------- */

static void uct_gda_ft_oob_ep_failed(uct_gda_ft_oob_ep_t *ep, const char *what)
{
    if (!ep->failed) {
        ucs_diag("oob: ep %p: connection broken (%s)", ep, what);
        ep->failed = 1;
    }
}

/* The peer never writes to our endpoint's socket: readable means closed;
 * returns whether it is */
static int uct_gda_ft_oob_ep_closed(uct_gda_ft_oob_ep_t *ep)
{
    uint8_t byte;
    ssize_t ret;

    ret = recv(ep->fd, &byte, sizeof(byte), MSG_DONTWAIT | MSG_PEEK);
    if ((ret == 0) || ((ret < 0) && (errno != EAGAIN) && (errno != EINTR))) {
        uct_gda_ft_oob_ep_failed(ep, "closed by the peer");
        return 1;
    }
    return 0;
}

/* Edge-triggered: the peer's close wakes it once; the endpoint removes
 * the handler when it is destroyed */
static void uct_gda_ft_oob_ep_event(int fd, ucs_event_set_types_t events,
                                    void *arg)
{
    uct_gda_ft_oob_ep_closed(arg);
}

/* UCP checks its wireup endpoints while the wireup runs: a peer process
 * that is gone has closed the connection; progress reports it */
static ucs_status_t uct_gda_ft_oob_ep_check(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    uct_gda_ft_oob_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);

    GDA_FT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    if (!ep->failed) {
        uct_gda_ft_oob_ep_closed(ep);
    }
    return UCS_OK;
}

static size_t uct_gda_ft_oob_ep_unwritten(const uct_gda_ft_oob_ep_t *ep)
{
    return ep->tx_length - ep->tx_offset;
}

/* Whether the queue takes a largest message more before progress */
static int uct_gda_ft_oob_ep_has_room(const uct_gda_ft_oob_iface_t *iface,
                                      const uct_gda_ft_oob_ep_t *ep)
{
    return ((uct_gda_ft_oob_ep_unwritten(ep) + UCT_GDA_FT_OOB_MSG_MAX) <=
            iface->config.tx_queue) &&
           (ep->tx_msgs < iface->config.tx_max_msgs);
}

/* Whether am_bcopy sends now: room, and no older request waits */
static int uct_gda_ft_oob_ep_can_send(const uct_gda_ft_oob_iface_t *iface,
                                      const uct_gda_ft_oob_ep_t *ep)
{
    return uct_gda_ft_oob_ep_has_room(iface, ep) &&
           (ep->in_pending || ucs_queue_is_empty(&ep->pending_q));
}

/* Writes what the socket takes of the queue, never waiting */
static ucs_status_t uct_gda_ft_oob_ep_tx_write(uct_gda_ft_oob_ep_t *ep)
{
    ssize_t ret;

    while (ep->tx_offset < ep->tx_length) {
        ret = send(ep->fd, ep->tx_buf + ep->tx_offset,
                   ep->tx_length - ep->tx_offset, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (ret > 0) {
            ucs_trace_data("oob: ep %p fd %d wrote %zd of %zu bytes",
                           ep, ep->fd, ret, ep->tx_length - ep->tx_offset);
            ep->tx_offset += ret;
        } else if ((ret < 0) && (errno == EINTR)) {
            continue;
        } else if ((ret < 0) && (errno == EAGAIN)) {
            return UCS_OK;      /* progress writes the rest */
        } else {
            uct_gda_ft_oob_ep_failed(ep, strerror(errno));
            return UCS_ERR_CONNECTION_RESET;
        }
    }

    ep->tx_offset = 0;
    ep->tx_length = 0;
    return UCS_OK;
}

/* Room for a largest message at the tail of the queue */
static ucs_status_t
uct_gda_ft_oob_ep_tx_reserve(const uct_gda_ft_oob_iface_t *iface,
                             uct_gda_ft_oob_ep_t *ep)
{
    size_t unwritten = uct_gda_ft_oob_ep_unwritten(ep);
    uint8_t *buf;
    size_t size;

    if ((ep->tx_size - ep->tx_length) >= UCT_GDA_FT_OOB_MSG_MAX) {
        return UCS_OK;
    }

    if (ep->tx_offset > 0) {
        memmove(ep->tx_buf, ep->tx_buf + ep->tx_offset, unwritten);
        ep->tx_offset = 0;
        ep->tx_length = unwritten;
        if ((ep->tx_size - ep->tx_length) >= UCT_GDA_FT_OOB_MSG_MAX) {
            return UCS_OK;
        }
    }

    /* has_room() keeps the queue within tx_queue */
    size = ucs_min(ucs_max(2 * ep->tx_size,
                           ep->tx_length + UCT_GDA_FT_OOB_MSG_MAX),
                   iface->config.tx_queue);
    buf  = ucs_realloc(ep->tx_buf, size, "gda_ft_oob_tx");
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ep->tx_buf  = buf;
    ep->tx_size = size;
    return UCS_OK;
}

static ssize_t uct_gda_ft_oob_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                          uct_pack_callback_t pack_cb,
                                          void *arg, unsigned flags)
{
    uct_gda_ft_oob_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);
    uct_gda_ft_oob_iface_t *iface = uct_gda_ft_oob_ep_iface(ep);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    ucs_status_t status;
    uint8_t *msg;
    size_t length;
    ssize_t ret;

    UCT_CHECK_AM_ID(id);

    UCS_ASYNC_BLOCK(async);
    if (ep->failed) {
        ret = UCS_ERR_CONNECTION_RESET;
        goto out;
    }

    if (!uct_gda_ft_oob_ep_can_send(iface, ep)) {
        UCT_TL_IFACE_STAT_TX_NO_DESC(&iface->super);
        ret = UCS_ERR_NO_RESOURCE;
        goto out;
    }

    status = uct_gda_ft_oob_ep_tx_reserve(iface, ep);
    if (status != UCS_OK) {
        ret = status;
        goto out;
    }

    msg    = ep->tx_buf + ep->tx_length;
    length = pack_cb(msg + sizeof(uct_gda_ft_wire_oob_hdr_t), arg);
    if (ucs_unlikely(length > UCT_GDA_FT_OOB_MAX_PAYLOAD)) {
        ucs_error("oob: am_bcopy packed %zu bytes, more than %u",
                  length, UCT_GDA_FT_OOB_MAX_PAYLOAD);
        ret = UCS_ERR_INVALID_PARAM;
        goto out;
    }
    uct_gda_ft_wire_oob_hdr_pack(id, length, (uct_gda_ft_wire_oob_hdr_t*)msg);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       msg + sizeof(uct_gda_ft_wire_oob_hdr_t), length,
                       "TX: ep %p fd %d AM_BCOPY, %zu bytes queued before",
                       ep, ep->fd, uct_gda_ft_oob_ep_unwritten(ep));
    ep->tx_length += sizeof(uct_gda_ft_wire_oob_hdr_t) + length;
    ++ep->tx_msgs;

    status = uct_gda_ft_oob_ep_tx_write(ep);
    if (status != UCS_OK) {
        ret = status;
        goto out;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    ret = length;
out:
    UCS_ASYNC_UNBLOCK(async);
    return ret;
}

/* Waits while am_bcopy or flush would say UCS_ERR_NO_RESOURCE */
static ucs_status_t uct_gda_ft_oob_ep_pending_add(uct_ep_h tl_ep,
                                                  uct_pending_req_t *req,
                                                  unsigned flags)
{
    uct_gda_ft_oob_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);
    uct_gda_ft_oob_iface_t *iface = uct_gda_ft_oob_ep_iface(ep);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    ucs_status_t status;

    UCS_ASYNC_BLOCK(async);
    if (uct_gda_ft_oob_ep_can_send(iface, ep) &&
        (uct_gda_ft_oob_ep_unwritten(ep) == 0)) {
        status = UCS_ERR_BUSY;
    } else {
        uct_pending_req_queue_push(&ep->pending_q, req);
        UCT_TL_EP_STAT_PEND(&ep->super);
        status = UCS_OK;
    }
    UCS_ASYNC_UNBLOCK(async);
    return status;
}

static void uct_gda_ft_oob_ep_pending_purge(uct_ep_h tl_ep,
                                            uct_pending_purge_callback_t cb,
                                            void *arg)
{
    uct_gda_ft_oob_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(
                                            uct_gda_ft_oob_ep_iface(ep));
    uct_pending_req_priv_queue_t *priv;

    UCS_ASYNC_BLOCK(async);
    uct_pending_queue_purge(priv, &ep->pending_q, 1, cb, arg);
    UCS_ASYNC_UNBLOCK(async);
}

/* Done when the socket has taken everything; until then NO_RESOURCE, and
 * a pending request to retry */
static ucs_status_t uct_gda_ft_oob_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    uct_gda_ft_oob_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(
                                            uct_gda_ft_oob_ep_iface(ep));
    ucs_status_t status;

    UCS_ASYNC_BLOCK(async);
    if (ep->failed) {
        status = UCS_ERR_CONNECTION_RESET;
    } else if ((uct_gda_ft_oob_ep_unwritten(ep) > 0) ||
               (!ep->in_pending && !ucs_queue_is_empty(&ep->pending_q))) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        status = UCS_ERR_NO_RESOURCE;
    } else {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        status = UCS_OK;
    }
    UCS_ASYNC_UNBLOCK(async);
    return status;
}

/* From progress, under the async lock: writes the queue, completes what
 * it held, and runs pending requests while there is room */
static unsigned uct_gda_ft_oob_ep_tx_progress(uct_gda_ft_oob_iface_t *iface,
                                              uct_gda_ft_oob_ep_t *ep)
{
    uct_pending_req_priv_queue_t *priv;
    unsigned count = 0;
    uint8_t *buf;

    if (ep->failed ||
        (uct_gda_ft_oob_ep_tx_write(ep) != UCS_OK) ||
        (uct_gda_ft_oob_ep_unwritten(ep) > 0)) {
        return 0;
    }

    if (ep->tx_msgs > 0) {
        ep->tx_msgs = 0;
        ++count;
        if (ep->tx_size > UCT_GDA_FT_OOB_MSG_MAX) {
            /* back to one message's room */
            buf = ucs_realloc(ep->tx_buf, UCT_GDA_FT_OOB_MSG_MAX,
                              "gda_ft_oob_tx");
            if (buf != NULL) {
                ep->tx_buf  = buf;
                ep->tx_size = UCT_GDA_FT_OOB_MSG_MAX;
            }
        }
    }

    if (!ucs_queue_is_empty(&ep->pending_q)) {
        ep->in_pending = 1;
        uct_pending_queue_dispatch(priv, &ep->pending_q,
                                   uct_gda_ft_oob_ep_has_room(iface, ep));
        ep->in_pending = 0;
        ++count;
    }
    return count;
}

static ucs_status_t uct_gda_ft_oob_ep_connect(uct_gda_ft_oob_ep_t *ep,
                                              const struct sockaddr_in *addr)
{
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int one = 1, err = 0, ret;

    ep->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ep->fd < 0) {
        ucs_error("oob: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    setsockopt(ep->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    if ((connect(ep->fd, (const struct sockaddr*)addr, sizeof(*addr)) < 0) &&
        (errno != EINPROGRESS)) {
        err = errno;
    } else {
        pfd.fd     = ep->fd;
        pfd.events = POLLOUT;
        do {
            ret = poll(&pfd, 1, UCT_GDA_FT_OOB_CONNECT_MS);
        } while ((ret < 0) && (errno == EINTR));
        if (ret == 0) {
            err = ETIMEDOUT;
        } else if ((ret < 0) ||
                   (getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err,
                               &len) < 0)) {
            err = errno;
        }
    }

    if (err != 0) {
        ucs_error("oob: cannot connect to %s:%u: %s",
                  inet_ntoa(addr->sin_addr), ntohs(addr->sin_port),
                  strerror(err));
        close(ep->fd);
        ep->fd = -1;
        return UCS_ERR_UNREACHABLE;
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gda_ft_oob_ep_t, const uct_ep_params_t *params)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(params->iface,
                                                   uct_gda_ft_oob_iface_t);
    struct sockaddr_in addr;
    ucs_status_t status;
    const char *reason;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("oob: an endpoint needs the peer's device and "
                  "interface addresses");
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    status = uct_gda_ft_wire_oob_addr_unpack(
            params->dev_addr, sizeof(uct_gda_ft_wire_oob_dev_addr_t),
            params->iface_addr, sizeof(uint16_t), &addr.sin_addr.s_addr,
            &addr.sin_port, &reason);
    if (status != UCS_OK) {
        ucs_error("oob: invalid peer address: %s", reason);
        return status;
    }

    self->failed     = 0;
    self->reported   = 0;
    self->in_pending = 0;
    self->tx_offset  = 0;
    self->tx_length  = 0;
    self->tx_msgs    = 0;
    self->tx_size    = UCT_GDA_FT_OOB_MSG_MAX;
    self->tx_buf     = ucs_malloc(self->tx_size, "gda_ft_oob_tx");
    if (self->tx_buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_queue_head_init(&self->pending_q);

    status = uct_gda_ft_oob_ep_connect(self, &addr);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_gda_ft_oob_watch(iface, self->fd,
                                  UCS_EVENT_SET_EVREAD |
                                  UCS_EVENT_SET_EDGE_TRIGGERED,
                                  uct_gda_ft_oob_ep_event, self);
    if (status != UCS_OK) {
        goto err_close;
    }

    ucs_list_add_tail(&iface->eps, &self->list);
    ucs_debug("oob: ep %p connected to %s:%u on fd %d", self,
              inet_ntoa(addr.sin_addr), ntohs(addr.sin_port), self->fd);
    return UCS_OK;

err_close:
    close(self->fd);
err_free:
    ucs_free(self->tx_buf);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_oob_ep_t)
{
    uct_gda_ft_oob_iface_t *iface = uct_gda_ft_oob_ep_iface(self);
    int *fds;

    ucs_async_remove_handler(self->fd, 1);
    ucs_list_del(&self->list);
    if (uct_gda_ft_oob_ep_unwritten(self) > 0) {
        ucs_debug("oob: ep %p destroyed with %zu bytes unsent", self,
                  uct_gda_ft_oob_ep_unwritten(self));
    }
    shutdown(self->fd, SHUT_RDWR);  /* the peer sees the end now */
    fds = ucs_realloc(iface->retired_fds,
                      (iface->num_retired + 1) * sizeof(*fds),
                      "gda_ft_oob_fds");
    if (fds != NULL) {
        iface->retired_fds                      = fds;
        iface->retired_fds[iface->num_retired++] = self->fd;
    } else {
        close(self->fd);    /* no room to remember it */
    }
    ucs_free(self->tx_buf);
}

UCS_CLASS_DEFINE(uct_gda_ft_oob_ep_t, uct_base_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t,
                                 const uct_ep_params_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t);


/* ---- progress ------------------------------------------------------------ */

/* The fds of destroyed endpoints, whose handlers are gone */
static void uct_gda_ft_oob_close_retired(uct_gda_ft_oob_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_retired; ++i) {
        close(iface->retired_fds[i]);
    }
    iface->num_retired = 0;
}

static unsigned uct_gda_ft_oob_iface_progress(uct_iface_h tl_iface)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    uct_gda_ft_oob_conn_t *conn, *next;
    uct_gda_ft_oob_ep_t *ep, *tmp;
    UCS_LIST_HEAD(ended);
    unsigned count = 0;
    int reported;

    UCS_ASYNC_BLOCK(async);
    ucs_list_for_each_safe(conn, next, &iface->conns, list) {
        count += uct_gda_ft_oob_conn_progress(conn, 0);
        if (!conn->closed) {
            continue;
        }
        /* Every whole message ran above: nothing more will come. What is
         * left is part of one (a stranger's, or a peer killed while it
         * wrote). The connection goes now, not with the interface, so
         * that connections that come and go hold no descriptors. */
        if (conn->length > 0) {
            ucs_debug("oob: connection on fd %d ended %zu bytes into "
                      "a message; dropped", conn->fd, conn->length);
            ++iface->stats.truncated;
        }
        ucs_list_del(&conn->list);
        ucs_list_add_tail(&ended, &conn->list);
    }
    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        count += uct_gda_ft_oob_ep_tx_progress(iface, ep);
    }
    UCS_ASYNC_UNBLOCK(async);

    /* off the list, so that the async timer no longer sees them; their
     * handlers go, once a call in progress returns, and their fds, and
     * those of destroyed endpoints, once no event waits under their
     * numbers */
    if (!ucs_list_is_empty(&ended) || (iface->num_retired > 0)) {
        ucs_list_for_each(conn, &ended, list) {
            UCS_ASYNC_BLOCK(async);
            uct_gda_ft_oob_conn_unwatch(conn);
            UCS_ASYNC_UNBLOCK(async);
        }
        uct_gda_ft_oob_drain_missed(async);
        ucs_list_for_each_safe(conn, next, &ended, list) {
            UCS_ASYNC_BLOCK(async);
            uct_gda_ft_oob_conn_free(conn);
            UCS_ASYNC_UNBLOCK(async);
        }
        uct_gda_ft_oob_close_retired(iface);
    }

    /* Broken connections of our endpoints, once each; the handler may
     * destroy the endpoint: restart after every report */
    for (;;) {
        reported = 0;
        ucs_list_for_each(ep, &iface->eps, list) {
            if (ep->failed && !ep->reported) {
                ep->reported = 1;
                reported     = 1;
                uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                        UCS_ERR_CONNECTION_RESET);
                break;
            }
        }
        if (!reported) {
            return count;
        }
        ++count;
    }
}


/* ---- interface ----------------------------------------------------------- */

static ucs_status_t uct_gda_ft_oob_iface_query(uct_iface_h tl_iface,
                                               uct_iface_attr_t *attr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);

    uct_base_iface_query(&iface->super, attr);
    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_CB_ASYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.am.max_bcopy = UCT_GDA_FT_OOB_MAX_PAYLOAD;
    attr->cap.am.max_iov   = 1;
    attr->device_addr_len  = sizeof(uct_gda_ft_wire_oob_dev_addr_t);
    attr->iface_addr_len   = sizeof(uint16_t);
    attr->ep_addr_len      = 0;

    /* A slow path on purpose (a TCP connection to the peer process): UCP
     * picks it only where nothing else connects to interfaces; estimates
     * the peer receives exactly (uct_gda_ft_perf.h) */
    attr->latency             = ucs_linear_func_make(
                                        UCT_GDA_FT_PERF_OOB_LATENCY, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = UCT_GDA_FT_PERF_OOB_BANDWIDTH;
    attr->overhead            = UCT_GDA_FT_PERF_OOB_OVERHEAD;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t
uct_gda_ft_oob_iface_get_device_address(uct_iface_h tl_iface,
                                        uct_device_addr_t *addr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    uint16_t port;

    return uct_gda_ft_wire_oob_addr_pack(iface->ipv4_be, iface->port_be, addr,
                                         sizeof(uct_gda_ft_wire_oob_dev_addr_t),
                                         &port, sizeof(port));
}

static ucs_status_t uct_gda_ft_oob_iface_get_address(uct_iface_h tl_iface,
                                                     uct_iface_addr_t *addr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    uct_gda_ft_wire_oob_dev_addr_t dev_addr;

    return uct_gda_ft_wire_oob_addr_pack(iface->ipv4_be, iface->port_be,
                                         &dev_addr, sizeof(dev_addr), addr,
                                         sizeof(uint16_t));
}

static int uct_gda_ft_oob_iface_is_reachable(const uct_iface_h tl_iface,
                                             const uct_device_addr_t *dev_addr,
                                             const uct_iface_addr_t *iface_addr)
{
    uint32_t ipv4;
    uint16_t port;

    /* UCT gives no lengths: the header decides before anything more is
     * read, and an HCA's device address fails it */
    return uct_gda_ft_wire_oob_addr_unpack(
                   dev_addr, sizeof(uct_gda_ft_wire_oob_dev_addr_t),
                   iface_addr, sizeof(port), &ipv4, &port, NULL) == UCS_OK;
}

/* Done when every endpoint's socket has taken everything; until then
 * progress writes, and the caller asks again */
static ucs_status_t uct_gda_ft_oob_iface_flush(uct_iface_h tl_iface,
                                               unsigned flags,
                                               uct_completion_t *comp)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    ucs_status_t status           = UCS_OK;
    uct_gda_ft_oob_ep_t *ep;

    UCT_CHECK_PARAM(comp == NULL, "oob: iface flush with a "
                    "completion is not supported");

    UCS_ASYNC_BLOCK(async);
    ucs_list_for_each(ep, &iface->eps, list) {
        if (!ep->failed &&
            ((uct_gda_ft_oob_ep_unwritten(ep) > 0) ||
             !ucs_queue_is_empty(&ep->pending_q))) {
            status = UCS_INPROGRESS;
            break;
        }
    }
    UCS_ASYNC_UNBLOCK(async);

    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

static uct_iface_ops_t uct_gda_ft_oob_iface_ops;

static uct_iface_internal_ops_t uct_gda_ft_oob_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                           ucs_empty_function_return_unsupported,
    GDA_FT_INTERNAL_OPS_SINCE_1_13
};

static ucs_status_t uct_gda_ft_oob_listen(uct_gda_ft_oob_iface_t *iface)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);

    iface->listen_fd = socket(AF_INET,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->listen_fd < 0) {
        ucs_error("oob: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = iface->ipv4_be;
    if ((bind(iface->listen_fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) ||
        (listen(iface->listen_fd, SOMAXCONN) < 0) ||
        (getsockname(iface->listen_fd, (struct sockaddr*)&addr, &len) < 0)) {
        ucs_error("oob: cannot listen on %s: %m",
                  inet_ntoa(addr.sin_addr));
        close(iface->listen_fd);
        return UCS_ERR_IO_ERROR;
    }

    iface->port_be = addr.sin_port;
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gda_ft_oob_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gda_ft_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gda_ft_iface_config_t);
    ucs_status_t status;

    status = uct_gda_ft_check_open_mode(params);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_check_am_alignment(params,
                                           UCT_GDA_FT_OOB_MAX_PAYLOAD);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, &uct_gda_ft_oob_iface_ops,
            &uct_gda_ft_oob_iface_internal_ops, tl_md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
            UCS_STATS_ARG(params->mode.device.dev_name));

    ucs_list_head_init(&self->conns);
    ucs_list_head_init(&self->eps);
    self->retired_fds = NULL;
    self->num_retired = 0;
    self->timer_id    = -1;
    memset(&self->stats, 0, sizeof(self->stats));

    if ((config->oob_tx_queue < UCT_GDA_FT_OOB_MSG_MAX) ||
        (config->oob_tx_max_msgs == 0)) {
        ucs_error("oob: OOB_TX_QUEUE=%zu must hold a largest message "
                  "(%zu bytes) and OOB_TX_MAX_MSGS=%u at least one",
                  config->oob_tx_queue, UCT_GDA_FT_OOB_MSG_MAX,
                  config->oob_tx_max_msgs);
        return UCS_ERR_INVALID_PARAM;
    }
    self->config.tx_queue    = config->oob_tx_queue;
    self->config.tx_max_msgs = config->oob_tx_max_msgs;

    status = uct_gda_ft_oob_ipv4(tl_md, &self->ipv4_be);
    if (status != UCS_OK) {
        ucs_error("oob: device %s has no IPv4 address to listen on",
                  params->mode.device.dev_name);
        return status;
    }

    status = uct_gda_ft_oob_listen(self);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_oob_watch(self, self->listen_fd, UCS_EVENT_SET_EVREAD,
                                  uct_gda_ft_oob_accept_event, self);
    if (status != UCS_OK) {
        goto err_close;
    }

    if (config->oob_async_tick > 0) {
        status = ucs_async_add_timer(uct_gda_ft_oob_async(self)->mode,
                                     config->oob_async_tick,
                                     uct_gda_ft_oob_async_timer, self,
                                     uct_gda_ft_oob_async(self),
                                     &self->timer_id);
        if (status != UCS_OK) {
            ucs_error("oob: cannot add the async timer: %s",
                      ucs_status_string(status));
            goto err_remove_listener;
        }
    }

    ucs_debug("oob: iface %p listens on %s:%u", self,
              inet_ntoa(*(struct in_addr*)&self->ipv4_be),
              ntohs(self->port_be));
    return UCS_OK;

err_remove_listener:
    ucs_async_remove_handler(self->listen_fd, 1);
err_close:
    close(self->listen_fd);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_oob_iface_t)
{
    uct_gda_ft_oob_conn_t *conn, *tmp;

    /* the worker must not call our progress once we are gone */
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (self->timer_id >= 0) {
        /* waits for a call in progress, as the fd handlers' removal */
        ucs_async_remove_handler(self->timer_id, 1);
    }
    ucs_async_remove_handler(self->listen_fd, 1);
    close(self->listen_fd);
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        uct_gda_ft_oob_conn_free(conn);
    }
    if ((self->stats.refused + self->stats.truncated) > 0) {
        ucs_diag("oob: of %" PRIu64 " connections accepted, %" PRIu64
                 " were refused (malformed) and %" PRIu64 " ended in the "
                 "middle of a message", self->stats.accepted,
                 self->stats.refused, self->stats.truncated);
    }
    uct_gda_ft_oob_close_retired(self);
    ucs_free(self->retired_fds);
    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("oob: iface %p closed with endpoints open", self);
    }
}

UCS_CLASS_DEFINE(uct_gda_ft_oob_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_oob_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_oob_iface_t, uct_iface_t);

ucs_status_t uct_gda_ft_oob_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *config,
                                       uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_oob_iface_t)(md, worker, params,
                                                           config, iface_p);
}

static uct_iface_ops_t uct_gda_ft_oob_iface_ops = {
    .ep_am_bcopy              = uct_gda_ft_oob_ep_am_bcopy,
    .ep_pending_add           = uct_gda_ft_oob_ep_pending_add,
    .ep_pending_purge         = uct_gda_ft_oob_ep_pending_purge,
    .ep_flush                 = uct_gda_ft_oob_ep_flush,
    .ep_fence                 = (uct_ep_fence_func_t)
                                ucs_empty_function_return_success,
    .ep_check                 = uct_gda_ft_oob_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_oob_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gda_ft_oob_ep_t),
    .iface_flush              = uct_gda_ft_oob_iface_flush,
    .iface_fence              = (uct_iface_fence_func_t)
                                ucs_empty_function_return_success,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gda_ft_oob_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)
                                ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)
                                ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gda_ft_oob_iface_t),
    .iface_query              = uct_gda_ft_oob_iface_query,
    .iface_get_device_address = uct_gda_ft_oob_iface_get_device_address,
    .iface_get_address        = uct_gda_ft_oob_iface_get_address,
    .iface_is_reachable       = uct_gda_ft_oob_iface_is_reachable
};
