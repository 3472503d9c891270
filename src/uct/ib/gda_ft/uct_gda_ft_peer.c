/*
 * gda_ft UCT transport: whether an endpoint's peer is alive (see
 * uct_gda_ft_peer.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_peer.h"
#include "uct_gda_ft_chan.h"
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

static void uct_gda_ft_peer_give_up(uct_gda_ft_ep_t *ep, uint64_t now,
                                    const char *why)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    c->peer.gone_ns = now;
    uct_gda_ft_peer_publish(c, GDA_FT_PEER_GONE);
    ucs_warn("ep %p: the peer is gone (%s): posts and waits to it fail with "
             "'%s' from now on", ep, why,
             gda_ft_dev_status_str(GDA_FT_DEV_PEER_GONE));
}

/* A probe on an idle control path: one signalled 4-byte write into the
 * peer's mailbox, which its HCA acknowledges while its QP exists */
static void uct_gda_ft_peer_beat(uct_gda_ft_ep_t *ep, unsigned path,
                                 uint64_t now, uint64_t deadline)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t last;

    if (ctl->failed || (ctl->sq.ci != ctl->sq.pi) ||
        (gda_ft_sq_free_wqebbs(&ctl->sq) < 2)) {
        return;   /* failed, or a write in flight probes it already */
    }
    last = ((int64_t)(ctl->done_ns - c->peer.beat_ns[path]) > 0) ?
           ctl->done_ns : c->peer.beat_ns[path];
    if ((now - last) < (deadline / UCT_GDA_FT_PEER_BEAT_DIV)) {
        return;
    }
    ++c->peer.beats;
    ctl->busy_ns            = now;
    c->peer.beat_ns[path]   = now;
    (void)gda_ft_sq_post_rdma_write_inline(
            &ctl->sq, &c->peer.beats, sizeof(c->peer.beats),
            ep->peer_mbox + ucs_offsetof(uct_gda_ft_mbox_t,
                                         chan[UCT_GDA_FT_WIRE_CTL_SLOT].beat),
            ep->peer_mbox_rkey[path], GDA_FT_WQE_SIGNALED, NULL);
    gda_ft_sq_ring_db(&ctl->sq);
}

int uct_gda_ft_peer_check(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    uint64_t answered;
    unsigned path;
    int waiting;

    if (c->peer.gone_ns != 0) {
        return 1;
    }
    if (ep->flags & UCT_GDA_FT_EP_FLAG_ERR_REPORTED) {
        uct_gda_ft_peer_give_up(ep, now, "its endpoint failed");
        return 1;
    }
    if ((deadline == 0) || (ep->peer_mbox == 0)) {
        return 0;   /* failover off: no deadline to give up by */
    }
    if (c->peer.since_ns == 0) {
        c->peer.since_ns = now;
    }

    answered = c->peer.since_ns;
    waiting  = 1;
    for (path = 0; path < c->num_paths; ++path) {
        uct_gda_ft_ctl_poll(ep, path);
        uct_gda_ft_peer_beat(ep, path, now, deadline);
        if ((int64_t)(ep->ctl[path].done_ns - answered) > 0) {
            answered = ep->ctl[path].done_ns;
        }
        /* a path with nothing asked says nothing of the peer */
        waiting = waiting && (ep->ctl[path].failed ||
                              (ep->ctl[path].sq.ci != ep->ctl[path].sq.pi));
    }
    /* signed: an answer polled in this pass is newer than `now` */
    if (waiting && ((int64_t)(now - answered) >
                    (int64_t)(deadline * UCT_GDA_FT_PEER_GONE_EIGHTHS) / 8)) {
        uct_gda_ft_peer_give_up(ep, now, "no answer on any path");
        return 1;
    }
    return 0;
}

uint32_t uct_gda_ft_peer_word(const uct_gda_ft_peer_t *peer,
                              uint64_t *gone_ns_p)
{
    if (gone_ns_p != NULL) {
        *gone_ns_p = peer->gone_ns;
    }
    return peer->word;
}
