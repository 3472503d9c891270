/*
 * gda_ft UCT transport: whether an endpoint's peer is alive (see
 * uct_gda_ft_peer.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_peer.h"
#include "uct_gda_ft_chan_ctl.h"
#include "uct_gda_ft_ep.inl"
#include "gda_ft_chan_peer.h"

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>

/* Publishes a new state of the peer: every channel's mailbox, then the
 * health word that posters on the host read (a progress pass that copies
 * a mailbox into a GPU health takes only a newer generation) */
static void uct_gda_ft_peer_publish(uct_gda_ft_ep_chans_t *c, unsigned state)
{
    uint32_t word = GDA_FT_PEER_WORD(state, GDA_FT_PEER_GEN(c->peer.word) + 1);
    unsigned i;

    c->peer.word = word;
    for (i = 0; i < c->num; ++i) {
        if (c->init[i].mbox != NULL) {
            gda_ft_atomic_store_rel32(&c->init[i].mbox->peer_state, word);
        }
    }
    gda_ft_atomic_store_rel32(&c->health->peer_state, word);
}

/* The control QP of `path` moves to ERR, once the write in flight on it
 * completed (an answer the peer may still take: that its directory was
 * refused, say), or after two retransmission timeouts */
static void uct_gda_ft_peer_fence_ctl(uct_gda_ft_ep_t *ep, unsigned path,
                                      uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint32_t epsn;

    uct_gda_ft_ctl_poll(ep, path);
    if (!ctl->failed && (ctl->sq.ci != ctl->sq.pi) &&
        ((now - c->peer.gone_ns) <
         2 * uct_gda_ft_iface_retransmit_ns(uct_gda_ft_ep_iface(ep)))) {
        c->peer.draining |= UCS_BIT(path);
        return;
    }
    c->peer.draining &= ~UCS_BIT(path);
    if (!c->ctl->path[path].absent) {
        (void)gda_ft_chan_host_fence_qp(c->ctl->path[path].qp, &epsn);
    }
    ctl->failed = 1;
}

/* Nothing more goes to a peer given up: the device channels' QPs and the
 * control QPs to it move to ERR (what was posted flushes; no HCA keeps
 * retrying towards its address, where a restarted peer may listen). The
 * host channel is UCT's: its endpoint fails on its own terms. A control
 * QP with a write in flight drains first, for two retransmission timeouts
 * at most. */
static void uct_gda_ft_peer_fence(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    unsigned i, path;
    uint32_t epsn;

    for (path = 0; path < c->num_paths; ++path) {
        for (i = 1; i < c->count; ++i) {
            if (!c->init[i].path[path].absent) {
                (void)gda_ft_chan_host_fence_qp(c->init[i].path[path].qp,
                                                &epsn);
                (void)gda_ft_chan_host_fence_qp(c->target[i].path[path].qp,
                                                &epsn);
            }
        }
        uct_gda_ft_peer_fence_ctl(ep, path, now);
    }
}

/* The control paths that drain, while the peer is gone */
static void uct_gda_ft_peer_drain(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    unsigned path;

    for (path = 0; c->peer.draining && (path < c->num_paths); ++path) {
        if (c->peer.draining & UCS_BIT(path)) {
            uct_gda_ft_peer_fence_ctl(ep, path, now);
        }
    }
}

static void uct_gda_ft_peer_give_up(uct_gda_ft_ep_t *ep, uint64_t now,
                                    const char *why)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    c->peer.gone_ns = now;
    uct_gda_ft_peer_publish(c, GDA_FT_PEER_GONE);
    uct_gda_ft_peer_fence(ep, now);
    /* a diagnostic, as UCX logs a peer failure that an error handler
     * takes: the endpoint's handler and the kernels' status say it */
    ucs_diag("ep %p: the peer is gone (%s): posts and waits to it fail with "
             "'%s' from now on", ep, why,
             gda_ft_dev_status_str(GDA_FT_DEV_PEER_GONE));
}

/*
 * A probe on an idle control path: one signalled 4-byte write into the
 * peer's mailbox, which its HCA acknowledges while its QP exists. Every
 * quarter timeout, and at least every deadline: its answer keeps the path
 * heard (GDA_FT_TIMING_HEARD_DEADLINES) without reading the peer's
 * targets, which costs a firmware command per QP on mlx5
 * (uct_gda_ft_chan_heard_ns).
 */
static void uct_gda_ft_peer_beat(uct_gda_ft_ep_t *ep, unsigned path,
                                 uint64_t now, uint64_t timeout)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t every           = ucs_min(timeout / UCT_GDA_FT_PEER_BEAT_DIV,
                                       uct_gda_ft_ep_iface(ep)->
                                       config.deadline_ns);
    uint64_t last;

    if (ctl->failed || (ctl->sq.ci != ctl->sq.pi) ||
        (gda_ft_sq_free_wqebbs(&ctl->sq) < 2) ||
        !uct_gda_ft_iface_port_up(uct_gda_ft_ep_iface(ep), path)) {
        return;   /* failed, a write in flight probes it already, or our
                     own port is down */
    }
    last = gda_ft_timing_later(ctl->done_ns, c->peer.beat_ns[path]);
    /* signed: an answer polled in this pass is newer than `now`, and an
     * unsigned age would send a probe at once */
    if ((int64_t)(now - last) < (int64_t)every) {
        return;
    }
    ++c->peer.beats;
    ctl->busy_ns            = now;
    c->peer.beat_ns[path]   = now;
    uct_gda_ft_ctl_post_inline(
            ep, path, ucs_offsetof(uct_gda_ft_mbox_t,
                                   chan[UCT_GDA_FT_WIRE_CTL_SLOT].beat),
            &c->peer.beats, sizeof(c->peer.beats));
    gda_ft_sq_ring_db(&ctl->sq);
}

/* When the peer's traffic last came in on path, as far as it can be
 * dated: PSNs that moved since a read older than a quarter deadline moved
 * some time after that read, which is all that is known */
static uint64_t uct_gda_ft_peer_heard(uct_gda_ft_ep_t *ep, unsigned path,
                                      uint64_t now)
{
    uint64_t read_ns = ep->chans->heard[path].read_ns;
    uint64_t deadline = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    uint64_t heard_ns = uct_gda_ft_chan_heard_ns(ep, path, now);

    return ((heard_ns == now) && ((now - read_ns) > (deadline / 4))) ?
           read_ns : heard_ns;
}

/* What path's control QP says of the peer: 1 silent (a write unanswered,
 * or failed for want of the peer's acknowledgements: the HCA's retries
 * ran out), 0 nothing (our own port is down, or the QP failed otherwise:
 * a flush of its own, or taken for dead while a storm of switches went
 * on), -1 alive (nothing asked that went unanswered) */
static int uct_gda_ft_peer_silent(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];

    if (!uct_gda_ft_iface_port_up(uct_gda_ft_ep_iface(ep), path)) {
        return 0;
    }
    if (ctl->failed) {
        return ctl->unacked ? 1 : 0;
    }
    return (ctl->sq.ci != ctl->sq.pi) ? 1 : -1;
}

int uct_gda_ft_peer_check(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c  = ep->chans;
    uint64_t timeout          = iface->config.peer_timeout_ns;
    uint64_t answered;
    unsigned path;
    int silent, said;

    if (c->peer.gone_ns != 0) {
        uct_gda_ft_peer_drain(ep, now);
        return 1;
    }
    if ((timeout == 0) || (ep->peer_mbox == 0)) {
        return 0;   /* never given up for silence */
    }
    if (!uct_gda_ft_ep_peer_awaited(ep)) {
        /* A dead peer shows at the next operation, as on RC, and UCP's
         * keepalive covers idle endpoints: probing every idle endpoint
         * cost O(endpoints) writes and engine passes. The silence counts
         * from the next check after the pause (below). */
        return 0;
    }
    for (path = 0; path < c->num_paths; ++path) {
        uct_gda_ft_ctl_poll(ep, path);
        uct_gda_ft_peer_beat(ep, path, now, timeout);
    }
    if ((ep->ctl[UCT_GDA_FT_PATH_PRIMARY].done_ns == 0) &&
        (ep->ctl[UCT_GDA_FT_PATH_BACKUP].done_ns == 0)) {
        /* not answered once since the connection: the peer may not have
         * connected its end yet (uct_gda_ft_ctl_poll) */
        return 0;
    }
    /* a pass that comes a quarter of the timeout late says this process
     * did not run (a loaded machine): the silence it saw is not the
     * peer's alone, and counts from now */
    if ((c->peer.since_ns == 0) ||
        ((now - c->peer.check_ns) > (timeout / 4))) {
        c->peer.since_ns = now;
    }
    c->peer.check_ns = now;

    /* the peer's last sign of life: an answer to a control write, or its
     * own traffic coming in, on any path */
    answered = c->peer.since_ns;
    silent   = 1;
    said     = 0;
    for (path = 0; path < c->num_paths; ++path) {
        answered = gda_ft_timing_later(answered, ep->ctl[path].done_ns);
        /* silent on every path that can speak of it, and one can */
        switch (uct_gda_ft_peer_silent(ep, path)) {
        case 1:  said   = 1; break;
        case -1: silent = 0; break;
        default: break;
        }
    }
    /* its traffic is read (the targets' PSNs, under the HCA's lock) only
     * once the answers are half the timeout old */
    for (path = 0; silent && said && (path < c->num_paths) &&
                   ((int64_t)(now - answered) > (int64_t)(timeout / 2));
         ++path) {
        answered = gda_ft_timing_later(answered,
                                         uct_gda_ft_peer_heard(ep, path,
                                                               now));
    }
    /* signed: an answer polled in this pass is newer than `now` */
    if (silent && said && ((int64_t)(now - answered) > (int64_t)timeout)) {
        uct_gda_ft_peer_give_up(ep, now, "no answer on any path");
        return 1;
    }
    return 0;
}

void uct_gda_ft_peer_back(uct_gda_ft_ep_chans_t *c, uint32_t gone_word)
{
    c->peer.word = gone_word;
    uct_gda_ft_peer_publish(c, GDA_FT_PEER_BACK);
}

void uct_gda_ft_peer_ep_failed(uct_gda_ft_ep_t *ep, uint64_t now)
{
    if (ep->chans->peer.gone_ns == 0) {
        uct_gda_ft_peer_give_up(ep, now, "its endpoint failed");
    } else {
        uct_gda_ft_peer_drain(ep, now);
    }
}

uint32_t uct_gda_ft_peer_word(const uct_gda_ft_peer_t *peer,
                              uint64_t *gone_ns_p)
{
    if (gone_ns_p != NULL) {
        *gone_ns_p = peer->gone_ns;
    }
    return peer->word;
}
