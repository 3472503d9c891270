/*
 * gda_ft transport's control socket: what gda_ft_softctl asks the
 * transport of a process, whatever HCA provider it runs on.
 *
 * One UNIX datagram socket per process, $UCX_GDA_FT_CTL_DIR/gda_ft-uct.<pid>.sock,
 * open while an interface is. UCX's async thread reads a command and
 * answers the sender with one datagram. Commands:
 *
 *   counters   a line per endpoint of every interface (and per device
 *              channel), as uct_gda_ft_iface_format_counters() writes them
 *
 * uct_gda_ft_ctl_exec() runs a command in the process itself (the UCP
 * failover program prints the counters with it).
 *
 * Locking: `lock` guards the interfaces and is the only lock the handler
 * takes; `open_lock` orders opening and closing, and is held while the
 * handler is removed synchronously, which `lock` must not be.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_ctl.h"
#include "uct_gda_ft_chan.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define UCT_GDA_FT_CTL_MAX_MSG 65536

static struct {
    pthread_mutex_t  open_lock;
    pthread_mutex_t  lock;
    ucs_list_link_t  ifaces;     /* uct_gda_ft_iface_t.ctl_list */
    unsigned         refs;       /* interfaces added */
    int              fd;         /* -1: no socket */
    char             path[sizeof(((struct sockaddr_un*)0)->sun_path)];
} uct_gda_ft_ctl = {
    .open_lock = PTHREAD_MUTEX_INITIALIZER,
    .lock      = PTHREAD_MUTEX_INITIALIZER,
    .ifaces    = UCS_LIST_INITIALIZER(&uct_gda_ft_ctl.ifaces,
                                      &uct_gda_ft_ctl.ifaces),
    .fd        = -1
};

size_t uct_gda_ft_iface_format_counters(uct_gda_ft_iface_t *iface,
                                        char *reply, size_t max)
{
    uct_gda_ft_ep_counters_t counters, *c = &counters;
    const char *path;
    uct_gda_ft_ep_t *ep;
    char prefix[64];
    size_t len = 0;

    pthread_mutex_lock(&iface->eps_lock);
    ucs_list_for_each(ep, &iface->eps, list) {
        /* the endpoint's: its host channel's (whose own line follows with
         * the device channels') */
        uct_gda_ft_ep_query_counters(&ep->super.super, c);
        path = (ep->hchan.chan == NULL) ? "unconnected" :
               uct_gda_ft_ep_no_path(ep) ? "none" :
               (gda_ft_atomic_load_acq32(&ep->hchan.chan->active) == 0) ?
               "primary" : "backup";
        len += snprintf(reply + len, (len < max) ? max - len : 0,
                        "%s ep %p paths %u: path %s, control %s/%s, "
                        "switches %u "
                        "replays %u fences %u in_doubt %u failbacks %u "
                        "no_path %u op_errors %u confirmed %u am_sent %u "
                        "am_received %u am_duplicates %u am_gaps %u "
                        "am_held %u outstanding %u pending %s\n",
                        iface->path[0].dev->hca->attr.info.name, ep,
                        (ep->chans != NULL) ? ep->chans->num_paths : 0, path,
                        ep->ctl[0].failed ? "down" : "up",
                        ep->ctl[1].failed ? "down" : "up",
                        c->switches, c->replays, c->fences, c->in_doubt,
                        c->failbacks, c->no_path, c->op_errors,
                        c->confirmed, ep->am.counters.sent,
                        ep->am.counters.received, ep->am.counters.duplicates,
                        ep->am.counters.gaps, ep->am.num_held,
                        (unsigned)uct_gda_ft_ep_outstanding(ep),
                        ucs_arbiter_group_is_empty(&ep->arb_group) ?
                        "no" : "yes");
        snprintf(prefix, sizeof(prefix), "%s ep %p ",
                 iface->path[0].dev->hca->attr.info.name, ep);
        len += uct_gda_ft_ep_chans_format(ep, prefix, reply + len,
                                          (len < max) ? max - len : 0);
    }
    pthread_mutex_unlock(&iface->eps_lock);
    return len;
}

ucs_status_t uct_gda_ft_ctl_exec(const char *cmd, char *reply, size_t max)
{
    uct_gda_ft_iface_t *iface;
    size_t len = 0;

    if (max > 0) {
        reply[0] = '\0';
    }
    if (strcmp(cmd, "counters") != 0) {
        snprintf(reply, max, "unknown command '%s' (the transport answers: "
                 "counters)\n", cmd);
        return UCS_ERR_NO_ELEM;
    }

    pthread_mutex_lock(&uct_gda_ft_ctl.lock);
    ucs_list_for_each(iface, &uct_gda_ft_ctl.ifaces, ctl_list) {
        len += uct_gda_ft_iface_format_counters(iface, reply + len,
                                                (len < max) ? max - len : 0);
    }
    pthread_mutex_unlock(&uct_gda_ft_ctl.lock);
    return UCS_OK;
}

static void uct_gda_ft_ctl_handler(int fd, ucs_event_set_types_t events,
                                   void *arg)
{
    static char cmd[1024], reply[UCT_GDA_FT_CTL_MAX_MSG];
    struct sockaddr_un from;
    socklen_t from_len;
    ssize_t len;

    for (;;) {
        from_len = sizeof(from);
        len      = recvfrom(fd, cmd, sizeof(cmd) - 1, 0,
                            (struct sockaddr*)&from, &from_len);
        if (len < 0) {
            if ((errno != EAGAIN) && (errno != EINTR)) {
                ucs_diag("control socket: recvfrom failed: %m");
            }
            return;
        }
        while ((len > 0) && ((cmd[len - 1] == '\n') || (cmd[len - 1] == ' '))) {
            --len;
        }
        cmd[len] = '\0';
        uct_gda_ft_ctl_exec(cmd, reply, sizeof(reply));
        if ((from_len > sizeof(sa_family_t)) &&
            (sendto(fd, reply, strlen(reply), 0, (struct sockaddr*)&from,
                    from_len) < 0)) {
            ucs_diag("control socket: no reply to %s: %m",
                     from.sun_path);
        }
    }
}

/* Opens the socket in dir (empty: none). Called with open_lock held. */
static void uct_gda_ft_ctl_open(const char *dir)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    ucs_status_t status;
    int fd;

    if ((dir == NULL) || (dir[0] == '\0')) {
        return;
    }
    if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path),
                         "%s/gda_ft-uct.%d.sock", dir, getpid()) >=
        sizeof(addr.sun_path)) {
        ucs_warn("UCX_GDA_FT_CTL_DIR '%s' is too long for a socket path: no "
                 "control socket (gda_ft_softctl counters will not reach "
                 "this process)", dir);
        return;
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_warn("control socket: socket() failed: %m");
        return;
    }
    unlink(addr.sun_path);
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        ucs_warn("control socket %s: bind failed: %m (gda_ft_softctl "
                 "counters will not reach this process)", addr.sun_path);
        close(fd);
        return;
    }

    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_MUTEX, fd,
                                         UCS_EVENT_SET_EVREAD,
                                         uct_gda_ft_ctl_handler, NULL, NULL);
    if (status != UCS_OK) {
        ucs_warn("control socket %s: no async handler: %s",
                 addr.sun_path, ucs_status_string(status));
        close(fd);
        unlink(addr.sun_path);
        return;
    }
    uct_gda_ft_ctl.fd = fd;
    ucs_strncpy_zero(uct_gda_ft_ctl.path, addr.sun_path,
                     sizeof(uct_gda_ft_ctl.path));
}

void uct_gda_ft_ctl_add(uct_gda_ft_iface_t *iface, const char *dir)
{
    pthread_mutex_lock(&uct_gda_ft_ctl.open_lock);
    if (uct_gda_ft_ctl.refs == 0) {
        uct_gda_ft_ctl_open(dir);
    }
    pthread_mutex_lock(&uct_gda_ft_ctl.lock);
    ucs_list_add_tail(&uct_gda_ft_ctl.ifaces, &iface->ctl_list);
    ++uct_gda_ft_ctl.refs;
    pthread_mutex_unlock(&uct_gda_ft_ctl.lock);
    pthread_mutex_unlock(&uct_gda_ft_ctl.open_lock);
}

void uct_gda_ft_ctl_remove(uct_gda_ft_iface_t *iface)
{
    pthread_mutex_lock(&uct_gda_ft_ctl.open_lock);
    pthread_mutex_lock(&uct_gda_ft_ctl.lock);
    ucs_list_del(&iface->ctl_list);
    --uct_gda_ft_ctl.refs;
    pthread_mutex_unlock(&uct_gda_ft_ctl.lock);
    if ((uct_gda_ft_ctl.refs == 0) && (uct_gda_ft_ctl.fd >= 0)) {
        ucs_async_remove_handler(uct_gda_ft_ctl.fd, 1);
        close(uct_gda_ft_ctl.fd);
        unlink(uct_gda_ft_ctl.path);
        uct_gda_ft_ctl.fd = -1;
    }
    pthread_mutex_unlock(&uct_gda_ft_ctl.open_lock);
}

const char *uct_gda_ft_ctl_path(void)
{
    const char *path;

    pthread_mutex_lock(&uct_gda_ft_ctl.open_lock);
    path = (uct_gda_ft_ctl.fd >= 0) ? uct_gda_ft_ctl.path : NULL;
    pthread_mutex_unlock(&uct_gda_ft_ctl.open_lock);
    return path;
}
