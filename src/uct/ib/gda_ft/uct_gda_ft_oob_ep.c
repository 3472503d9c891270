/*
 * gda_ft UCT transport: the out-of-band channel's send side. An endpoint
 * connects to the peer interface's listener and sends active messages
 * (bcopy) as framed messages on its TCP connection, queueing what the
 * socket does not take at once; progress writes the rest and lets pending
 * requests in. Threads, back-pressure and file descriptors:
 * uct_gda_ft_oob_types.h.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_oob_ep.h"

#include <gda_ft_uct_compat.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>



/* How long an endpoint waits for the peer's listener to accept */
#define UCT_GDA_FT_OOB_CONNECT_MS  10000


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
ucs_status_t uct_gda_ft_oob_ep_check(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp)
{
    uct_gda_ft_oob_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_oob_ep_t);

    GDA_FT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    if (!ep->failed) {
        uct_gda_ft_oob_ep_closed(ep);
    }
    return UCS_OK;
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

ssize_t uct_gda_ft_oob_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
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
ucs_status_t uct_gda_ft_oob_ep_pending_add(uct_ep_h tl_ep,
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

void uct_gda_ft_oob_ep_pending_purge(uct_ep_h tl_ep,
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
ucs_status_t uct_gda_ft_oob_ep_flush(uct_ep_h tl_ep, unsigned flags,
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
unsigned uct_gda_ft_oob_ep_tx_progress(uct_gda_ft_oob_iface_t *iface,
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
UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t);
