/*
 * gda_ft UCT transport: the out-of-band channel's receive side. The
 * listener accepts the peers' endpoints; each accepted connection reads
 * framed messages and runs their handlers in order, from the async
 * context when the handler allows it and from progress otherwise. Threads,
 * handlers and file descriptors: uct_gda_ft_oob_types.h.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE   /* accept4 */
#endif

#include "uct_gda_ft_oob_conn.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


/* Buffers of a connection read and dispatched in one go: a sender that
 * never stops cannot hold the progress or the async thread forever (the
 * rest waits for the next event or progress) */
#define UCT_GDA_FT_OOB_RX_ROUNDS   16


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
unsigned uct_gda_ft_oob_conn_progress(uct_gda_ft_oob_conn_t *conn,
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
void uct_gda_ft_oob_async_timer(int id, ucs_event_set_types_t events,
                                void *arg)
{
    uct_gda_ft_oob_iface_t *iface = arg;
    uct_gda_ft_oob_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        uct_gda_ft_oob_conn_progress(conn, 1);
    }
}

void uct_gda_ft_oob_accept_event(int fd, ucs_event_set_types_t events,
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
void uct_gda_ft_oob_conn_unwatch(uct_gda_ft_oob_conn_t *conn)
{
    if (conn->watched) {
        ucs_async_remove_handler(conn->fd, 1);
        conn->watched = 0;
    }
}

/* Takes the events that met the context blocked out of its queue (those
 * of removed handlers are dropped), so that no fd closed after is named
 * there. From progress, on the context's thread. */
void uct_gda_ft_oob_drain_missed(ucs_async_context_t *async)
{
    do {
        ucs_async_check_miss(async);
    } while (!ucs_mpmc_queue_is_empty(&async->missed));
}

/* From progress, unwatched and with no event of the fd left in the queue;
 * or when the interface closes, whose worker's context goes with it */
void uct_gda_ft_oob_conn_free(uct_gda_ft_oob_conn_t *conn)
{
    uct_gda_ft_oob_conn_unwatch(conn);
    close(conn->fd);
    ucs_list_del(&conn->list);
    --conn->iface->stats.open;
    ucs_free(conn->buf);
    ucs_free(conn);
}
