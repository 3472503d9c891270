/*
 * gda_ft UCT transport: the interface's event fd and arm (see
 * uct_gda_ft_event.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_event.h"
#include "uct_gda_ft_ep.inl"
#include "gda_ft_cq.h"

#include <ucs/debug/log.h>
#include <ucs/time/time.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>


static void uct_gda_ft_iface_event_close(uct_gda_ft_iface_event_t *event)
{
    if (event->fd >= 0) {
        close(event->fd);
    }
    if (event->timer_fd >= 0) {
        close(event->timer_fd);
    }
    if (event->cq_fd >= 0) {
        close(event->cq_fd);
    }
    event->fd       = -1;
    event->timer_fd = -1;
    event->cq_fd    = -1;
}

static ucs_status_t uct_gda_ft_iface_event_watch(uct_gda_ft_iface_event_t
                                                 *event, int fd)
{
    struct epoll_event ev = {0};

    ev.events  = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(event->fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        ucs_error("cannot add fd %d to the event set: %m", fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_gda_ft_iface_event_init(uct_gda_ft_iface_t *iface,
                                         const gda_ft_hca_dev_t *primary,
                                         const gda_ft_hca_dev_t *backup)
{
    uct_gda_ft_iface_event_t *event = &iface->event;
    ucs_status_t status;

    event->fd       = -1;
    event->cq_fd    = -1;
    event->timer_fd = -1;
    event->armed    = 0;
    if (!uct_gda_ft_hca_has(primary, GDA_FT_HCA_DEV_FLAG_CQ_EVENTS) ||
        ((backup != NULL) &&
         !uct_gda_ft_hca_has(backup, GDA_FT_HCA_DEV_FLAG_CQ_EVENTS))) {
        ucs_debug("iface %p: the HCAs have no completion events",
                  iface);
        return UCS_OK;
    }

    event->cq_fd    = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    event->timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                     TFD_NONBLOCK | TFD_CLOEXEC);
    event->fd       = epoll_create1(EPOLL_CLOEXEC);
    if ((event->cq_fd < 0) || (event->timer_fd < 0) || (event->fd < 0)) {
        ucs_error("cannot open the interface's event fds: %m");
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    status = uct_gda_ft_iface_event_watch(event, event->cq_fd);
    if (status != UCS_OK) {
        goto err;
    }
    status = uct_gda_ft_iface_event_watch(event, event->timer_fd);
    if (status != UCS_OK) {
        goto err;
    }
    return UCS_OK;

err:
    uct_gda_ft_iface_event_close(event);
    return status;
}

void uct_gda_ft_iface_event_cleanup(uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_iface_event_close(&iface->event);
}

void uct_gda_ft_iface_event_cq_attr(uct_gda_ft_iface_t *iface,
                                    int32_t **armed_p, int *fd_p)
{
    if (uct_gda_ft_iface_event_enabled(iface)) {
        *armed_p = &iface->event.armed;
        *fd_p    = iface->event.cq_fd;
    } else {
        *armed_p = NULL;
        *fd_p    = -1;
    }
}

ucs_status_t uct_gda_ft_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);

    if (!uct_gda_ft_iface_event_enabled(iface)) {
        return UCS_ERR_UNSUPPORTED;
    }
    *fd_p = iface->event.fd;
    return UCS_OK;
}

/* Empties a nonblocking eventfd or timerfd: it is no longer readable */
static void uct_gda_ft_iface_event_drain(int fd)
{
    uint64_t value;

    while (read(fd, &value, sizeof(value)) == sizeof(value)) {
    }
}

/* Whether a receive CQ holds a CQE that progress has not polled */
static int uct_gda_ft_iface_rx_pending(const uct_gda_ft_iface_t *iface)
{
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_cq_t dcq;
    unsigned path, i;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        for (i = 0; i < iface->path[path].num_rx_cqs; ++i) {
            dcq = iface->path[path].rx_cqs[i]->dcq;   /* a copy: a peek */
            if (gda_ft_cq_poll_ring(&dcq, &info) != GDA_FT_DEV_INPROGRESS) {
                return 1;
            }
        }
    }
    return 0;
}

/* Whether progress has something to do now. The host channels' pass
 * hands out nothing: it marks the endpoints whose operations completed. */
static int uct_gda_ft_iface_event_pending(uct_gda_ft_iface_t *iface)
{
    if (!ucs_list_is_empty(&iface->hchan_eps) &&
        (uct_gda_ft_hchan_progress(iface) > 0)) {
        return 1;
    }
    if ((!ucs_list_is_empty(&iface->hchan_eps) ||
         (iface->dir_pending > 0)) &&
        ((gda_ft_dev_now_ns() - iface->last_chan_guard_ns) >
         iface->config.chan_guard_ns)) {
        return 1;
    }
    return !ucs_list_is_empty(&iface->ready_eps) ||
           uct_gda_ft_iface_rx_pending(iface);
}

/* The guardian's next pass, while operations are outstanding or channel
 * directories are being exchanged */
static void uct_gda_ft_iface_event_timer(uct_gda_ft_iface_t *iface)
{
    struct itimerspec spec = {{0, 0}, {0, 0}};
    uint64_t due           = iface->last_chan_guard_ns +
                             iface->config.chan_guard_ns;
    uint64_t now           = gda_ft_dev_now_ns();
    uint64_t delay;

    if (!ucs_list_is_empty(&iface->hchan_eps) || (iface->dir_pending > 0)) {
        delay                 = (due > now) ? (due - now) : 1;
        spec.it_value.tv_sec  = delay / UCS_NSEC_PER_SEC;
        spec.it_value.tv_nsec = delay % UCS_NSEC_PER_SEC;
    }
    if (timerfd_settime(iface->event.timer_fd, 0, &spec, NULL) < 0) {
        ucs_warn("iface %p: cannot set its guardian timer: %m",
                 iface);
    }
}

ucs_status_t uct_gda_ft_iface_event_arm(uct_iface_h tl_iface,
                                        unsigned events)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);

    if (!uct_gda_ft_iface_event_enabled(iface)) {
        return UCS_ERR_UNSUPPORTED;
    }

    uct_gda_ft_iface_event_drain(iface->event.cq_fd);
    uct_gda_ft_iface_event_drain(iface->event.timer_fd);

    /* The word first, then the CQs: a CQE the look below misses writes the
     * fd (the HCA orders its CQE before its read of the word) */
    __atomic_store_n(&iface->event.armed, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (uct_gda_ft_iface_event_pending(iface)) {
        return UCS_ERR_BUSY;
    }

    uct_gda_ft_iface_event_timer(iface);
    return UCS_OK;
}
