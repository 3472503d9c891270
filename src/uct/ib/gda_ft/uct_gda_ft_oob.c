/*
 * gda_ft UCT transport: the out-of-band wireup channel (see
 * uct_gda_ft_oob.h). Byte layouts are in uct_gda_ft_wire.h.
 *
 * Threads: the accept and read handlers run in UCX's async context (a
 * thread, or a signal, or progress in poll mode); progress takes the same
 * context's lock, so the two never run together. Sends write the socket
 * from the caller's thread and touch nothing the handlers use.
 *
 * File descriptors: UCX names an event handler by its fd, and an event
 * that found the context busy waits in the context's "missed" queue under
 * that number even after the handler is removed. Were the fd closed, the
 * number could come back as another async context's handler and the late
 * event would reach it (UCX asserts on that). So a connection that ends is
 * shut down, not closed, and its fd is closed with the interface.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE   /* accept4 */
#endif

#include "uct_gda_ft_oob.h"
#include "uct_gda_ft_md.h"
#include "uct_gda_ft_wire.h"

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


typedef struct uct_gda_ft_oob_iface {
    uct_base_iface_t super;
    int              listen_fd;
    uint32_t         ipv4_be;
    uint16_t         port_be;
    ucs_list_link_t  conns;     /* accepted connections (receive side) */
    ucs_list_link_t  eps;       /* endpoints (send side) */
    int             *retired_fds; /* of destroyed endpoints, see above */
    unsigned         num_retired;
} uct_gda_ft_oob_iface_t;

/* An accepted connection: what the peer's endpoint sends us */
typedef struct uct_gda_ft_oob_conn {
    ucs_list_link_t         list;
    uct_gda_ft_oob_iface_t *iface;
    int                     fd;
    int                     closed;   /* ended: no handler, shut down */
    uint8_t                *buf;      /* received, not yet dispatched */
    size_t                  length;
    size_t                  size;
} uct_gda_ft_oob_conn_t;

typedef struct uct_gda_ft_oob_ep {
    uct_base_ep_t    super;
    ucs_list_link_t  list;
    int              fd;
    int              failed;      /* the connection broke */
    int              reported;    /* ...and the error handler knows */
    uint8_t         *buf;         /* header + largest payload */
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
                                         int fd, ucs_async_event_cb_t cb,
                                         void *arg)
{
    ucs_async_context_t *async = uct_gda_ft_oob_async(iface);

    return ucs_async_set_event_handler(async->mode, fd, UCS_EVENT_SET_EVREAD,
                                       cb, arg, async);
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

/* Ends a connection: its fd stays open until the interface closes */
static void uct_gda_ft_oob_conn_close(uct_gda_ft_oob_conn_t *conn)
{
    if (!conn->closed) {
        ucs_async_remove_handler(conn->fd, 0);
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
            ucs_error("gda_ft oob: closing the connection on fd %d: %s",
                      conn->fd, reason);
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

/* Reads what the socket has; closes the connection at its end */
static void uct_gda_ft_oob_conn_read(uct_gda_ft_oob_conn_t *conn)
{
    size_t room = sizeof(uct_gda_ft_wire_oob_hdr_t) +
                  UCT_GDA_FT_OOB_MAX_PAYLOAD;
    uint8_t *buf;
    ssize_t ret;

    while (!conn->closed) {
        if (conn->size - conn->length < room) {
            /* the buffer holds at least one whole message more */
            buf = ucs_realloc(conn->buf, conn->length + room,
                              "gda_ft_oob_rx");
            if (buf == NULL) {
                ucs_error("gda_ft oob: no memory to receive on fd %d",
                          conn->fd);
                uct_gda_ft_oob_conn_close(conn);
                return;
            }
            conn->buf  = buf;
            conn->size = conn->length + room;
        }

        ret = recv(conn->fd, conn->buf + conn->length,
                   conn->size - conn->length, MSG_DONTWAIT);
        if (ret > 0) {
            conn->length += ret;
        } else if ((ret < 0) && ((errno == EAGAIN) || (errno == EINTR))) {
            return;
        } else {
            /* the peer's endpoint is gone: what it sent stays queued */
            ucs_debug("gda_ft oob: connection on fd %d closed (%s)",
                      conn->fd, (ret == 0) ? "by the peer" : strerror(errno));
            uct_gda_ft_oob_conn_close(conn);
        }
    }
}

static void uct_gda_ft_oob_conn_event(int fd, ucs_event_set_types_t events,
                                      void *arg)
{
    uct_gda_ft_oob_conn_t *conn = arg;

    uct_gda_ft_oob_conn_read(conn);
    uct_gda_ft_oob_conn_dispatch(conn, 1);
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
                ucs_error("gda_ft oob: accept() failed: %m");
            }
            return;
        }

        conn = ucs_calloc(1, sizeof(*conn), "gda_ft_oob_conn");
        if (conn == NULL) {
            ucs_error("gda_ft oob: no memory for a connection");
            close(conn_fd);
            continue;
        }
        conn->iface  = iface;
        conn->fd     = conn_fd;
        conn->closed = 0;
        setsockopt(conn_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ucs_list_add_tail(&iface->conns, &conn->list);
        if (uct_gda_ft_oob_watch(iface, conn_fd, uct_gda_ft_oob_conn_event,
                                 conn) != UCS_OK) {
            ucs_error("gda_ft oob: cannot watch connection fd %d", conn_fd);
            shutdown(conn_fd, SHUT_RDWR);
            conn->closed = 1;
        }
    }
}

/* With the interface: its handler is gone (or removed now, waiting) */
static void uct_gda_ft_oob_conn_free(uct_gda_ft_oob_conn_t *conn)
{
    if (!conn->closed) {
        ucs_async_remove_handler(conn->fd, 1);
    }
    close(conn->fd);
    ucs_list_del(&conn->list);
    ucs_free(conn->buf);
    ucs_free(conn);
}

static unsigned uct_gda_ft_oob_iface_progress(uct_iface_h tl_iface)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    uct_gda_ft_oob_conn_t *conn;
    uct_gda_ft_oob_ep_t *ep;
    unsigned count = 0;
    int reported;

    UCS_ASYNC_BLOCK(async);
    ucs_list_for_each(conn, &iface->conns, list) {
        uct_gda_ft_oob_conn_read(conn);
        count += uct_gda_ft_oob_conn_dispatch(conn, 0);
        if (conn->closed && (conn->length == 0) && (conn->buf != NULL)) {
            ucs_free(conn->buf);    /* nothing more will come */
            conn->buf  = NULL;
            conn->size = 0;
        }
    }
    UCS_ASYNC_UNBLOCK(async);

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


/* ---- send side ----------------------------------------------------------- */

static void uct_gda_ft_oob_ep_failed(uct_gda_ft_oob_ep_t *ep, const char *what)
{
    if (!ep->failed) {
        ucs_diag("gda_ft oob: ep %p: connection broken (%s)", ep, what);
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

static void uct_gda_ft_oob_ep_event(int fd, ucs_event_set_types_t events,
                                    void *arg)
{
    if (uct_gda_ft_oob_ep_closed(arg)) {
        ucs_async_remove_handler(fd, 0);
    }
}

/* UCP checks its wireup endpoints while the wireup runs: a peer process
 * that is gone has closed the connection; progress reports it */
static ucs_status_t uct_gda_ft_oob_ep_check(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    uct_gda_ft_oob_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    if (!ep->failed) {
        uct_gda_ft_oob_ep_closed(ep);
    }
    return UCS_OK;
}

/* Writes everything, waiting while the socket buffer is full */
static ucs_status_t uct_gda_ft_oob_ep_write(uct_gda_ft_oob_ep_t *ep,
                                            const uint8_t *data, size_t length)
{
    struct pollfd pfd = {.fd = ep->fd, .events = POLLOUT};
    ssize_t ret;

    while (length > 0) {
        ret = send(ep->fd, data, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (ret > 0) {
            data   += ret;
            length -= ret;
        } else if ((ret < 0) && ((errno == EAGAIN) || (errno == EINTR))) {
            poll(&pfd, 1, 100);
        } else {
            uct_gda_ft_oob_ep_failed(ep, strerror(errno));
            return UCS_ERR_CONNECTION_RESET;
        }
    }
    return UCS_OK;
}

static ssize_t uct_gda_ft_oob_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                          uct_pack_callback_t pack_cb,
                                          void *arg, unsigned flags)
{
    uct_gda_ft_oob_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);
    uint8_t *payload        = ep->buf + sizeof(uct_gda_ft_wire_oob_hdr_t);
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    if (ep->failed) {
        return UCS_ERR_CONNECTION_RESET;
    }

    length = pack_cb(payload, arg);
    UCT_CHECK_LENGTH(length, 0, UCT_GDA_FT_OOB_MAX_PAYLOAD, "am_bcopy");
    uct_gda_ft_wire_oob_hdr_pack(id, length,
                                 (uct_gda_ft_wire_oob_hdr_t*)ep->buf);
    status = uct_gda_ft_oob_ep_write(ep, ep->buf,
                                     sizeof(uct_gda_ft_wire_oob_hdr_t) +
                                     length);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}

/* Sends complete at once: there is never a reason to wait */
static ucs_status_t uct_gda_ft_oob_ep_pending_add(uct_ep_h tl_ep,
                                                  uct_pending_req_t *req,
                                                  unsigned flags)
{
    return UCS_ERR_BUSY;
}

static ucs_status_t uct_gda_ft_oob_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    uct_gda_ft_oob_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);

    return ep->failed ? UCS_ERR_CONNECTION_RESET : UCS_OK;
}

static ucs_status_t uct_gda_ft_oob_ep_connect(uct_gda_ft_oob_ep_t *ep,
                                              const struct sockaddr_in *addr)
{
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int one = 1, err = 0, ret;

    ep->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ep->fd < 0) {
        ucs_error("gda_ft oob: socket() failed: %m");
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
        ucs_error("gda_ft oob: cannot connect to %s:%u: %s",
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
        ucs_error("gda_ft oob: an endpoint needs the peer's device and "
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
        ucs_error("gda_ft oob: invalid peer address: %s", reason);
        return status;
    }

    self->failed   = 0;
    self->reported = 0;
    self->buf      = ucs_malloc(sizeof(uct_gda_ft_wire_oob_hdr_t) +
                                UCT_GDA_FT_OOB_MAX_PAYLOAD, "gda_ft_oob_tx");
    if (self->buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gda_ft_oob_ep_connect(self, &addr);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_gda_ft_oob_watch(iface, self->fd, uct_gda_ft_oob_ep_event,
                                  self);
    if (status != UCS_OK) {
        goto err_close;
    }

    ucs_list_add_tail(&iface->eps, &self->list);
    ucs_debug("gda_ft oob: ep %p connected to %s:%u on fd %d", self,
              inet_ntoa(addr.sin_addr), ntohs(addr.sin_port), self->fd);
    return UCS_OK;

err_close:
    close(self->fd);
err_free:
    ucs_free(self->buf);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_oob_ep_t)
{
    uct_gda_ft_oob_iface_t *iface = uct_gda_ft_oob_ep_iface(self);
    int *fds;

    ucs_async_remove_handler(self->fd, 1);
    ucs_list_del(&self->list);
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
    ucs_free(self->buf);
}

UCS_CLASS_DEFINE(uct_gda_ft_oob_ep_t, uct_base_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t,
                                 const uct_ep_params_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t);


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
     * picks it only where nothing else connects to interfaces */
    attr->latency             = ucs_linear_func_make(1e-3, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = 100.0 * UCS_MBYTE;
    attr->overhead            = 50e-6;
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

static ucs_status_t uct_gda_ft_oob_iface_flush(uct_iface_h tl_iface,
                                               unsigned flags,
                                               uct_completion_t *comp)
{
    return UCS_OK;
}

static uct_iface_ops_t uct_gda_ft_oob_iface_ops;

static uct_iface_internal_ops_t uct_gda_ft_oob_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                           ucs_empty_function_return_unsupported
};

static ucs_status_t uct_gda_ft_oob_listen(uct_gda_ft_oob_iface_t *iface)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);

    iface->listen_fd = socket(AF_INET,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->listen_fd < 0) {
        ucs_error("gda_ft oob: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = iface->ipv4_be;
    if ((bind(iface->listen_fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) ||
        (listen(iface->listen_fd, SOMAXCONN) < 0) ||
        (getsockname(iface->listen_fd, (struct sockaddr*)&addr, &len) < 0)) {
        ucs_error("gda_ft oob: cannot listen on %s: %m",
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
    ucs_status_t status;

    status = uct_gda_ft_check_open_mode(params);
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

    status = uct_gda_ft_oob_ipv4(tl_md, &self->ipv4_be);
    if (status != UCS_OK) {
        ucs_error("gda_ft oob: device %s has no IPv4 address to listen on",
                  params->mode.device.dev_name);
        return status;
    }

    status = uct_gda_ft_oob_listen(self);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_oob_watch(self, self->listen_fd,
                                  uct_gda_ft_oob_accept_event, self);
    if (status != UCS_OK) {
        close(self->listen_fd);
        return status;
    }

    ucs_debug("gda_ft oob: iface %p listens on %s:%u", self,
              inet_ntoa(*(struct in_addr*)&self->ipv4_be),
              ntohs(self->port_be));
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_oob_iface_t)
{
    uct_gda_ft_oob_conn_t *conn, *tmp;
    unsigned i;

    /* the worker must not call our progress once we are gone */
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_async_remove_handler(self->listen_fd, 1);
    close(self->listen_fd);
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        uct_gda_ft_oob_conn_free(conn);
    }
    for (i = 0; i < self->num_retired; ++i) {
        close(self->retired_fds[i]);
    }
    ucs_free(self->retired_fds);
    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("gda_ft oob: iface %p closed with endpoints open", self);
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
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)
                                ucs_empty_function,
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
