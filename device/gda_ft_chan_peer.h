/*
 * gda_ft device datapath: the state of a channel's peer as a whole.
 *
 * A path that dies is failover's business; a peer that dies (its process,
 * its node, its GPU) leaves nothing to fail over to. The host half decides
 * that a peer is gone (both paths dead: the peer answered nothing on
 * either for UCX_GDA_FT_PEER_TIMEOUT, uct_gda_ft_peer.c) and publishes one
 * word per peer:
 *
 *  - in the peer's health (gda_ft_chan_health_t.peer_state), which every
 *    channel to the peer and every poster's memo already points at: a
 *    post or a wait checks the peer with one load of a word it shares
 *    with the path health;
 *  - in each channel's mailbox (peer_state), host-mapped memory: where the
 *    health lives in GPU memory (kernels), a progress pass of any channel
 *    to the peer copies the mailbox's word into it.
 *
 * The word: bits 0..7 the state (GDA_FT_PEER_*), bits 8..31 a generation,
 * bumped at each change, so that a kernel that saw GONE and then BACK
 * knows that the peer it talks to now is a new one.
 *
 * While the peer is GONE, every post to it returns GDA_FT_DEV_PEER_GONE at
 * once (nothing is reserved or written), and so does every wait on a
 * request or a channel to it; what was in flight to it ends with it. Posts
 * to other peers read other words: nothing of theirs is touched.
 */
#ifndef GDA_FT_CHAN_PEER_H_
#define GDA_FT_CHAN_PEER_H_

#include "gda_ft_chan_types.h"
#include "gda_ft_dev_atomic.h"

/* States of a peer */
enum {
    GDA_FT_PEER_REACHABLE = 0, /* connected (the state a health starts in) */
    GDA_FT_PEER_GONE      = 1, /* the host half gave it up */
    GDA_FT_PEER_BACK      = 2  /* reachable again after it was gone: a new
                                  process, on new channels */
};

#define GDA_FT_PEER_WORD(_state, _gen) \
    (((uint32_t)(_gen) << 8) | ((uint32_t)(_state) & 0xff))
#define GDA_FT_PEER_STATE(_w)      ((_w) & 0xff)
#define GDA_FT_PEER_GEN(_w)        ((_w) >> 8)

/* The peer's word as posters on chan see it (one load); 0 (reachable) for
 * a channel without a health */
GDA_FT_DEV_FUNC uint32_t
gda_ft_chan_peer_word(const gda_ft_chan_health_t *health)
{
    return (health != NULL) ?
           gda_ft_atomic_load_acq32(&health->peer_state) : 0;
}

GDA_FT_DEV_FUNC int gda_ft_chan_peer_gone(const gda_ft_chan_health_t *health)
{
    return GDA_FT_PEER_STATE(gda_ft_chan_peer_word(health)) ==
           GDA_FT_PEER_GONE;
}

/*
 * A progress pass brings the host's word into the health when it lives
 * elsewhere (GPU memory); where the host writes the health itself, the
 * two are equal and this is one load of the mailbox. Only a newer
 * generation is taken, with a CAS from the word it replaces: a pass that
 * read the mailbox before the host's last change never puts it back.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_peer_sync(gda_ft_chan_t *chan)
{
    uint32_t word, seen;

    if ((chan->health == NULL) || (chan->mbox == NULL)) {
        return;
    }
    word = gda_ft_atomic_load_acq32_sys(&chan->mbox->peer_state);
    seen = gda_ft_atomic_load_acq32(&chan->health->peer_state);
    if ((int32_t)(GDA_FT_PEER_GEN(word) - GDA_FT_PEER_GEN(seen)) > 0) {
        (void)gda_ft_atomic_cas32(&chan->health->peer_state, seen, word);
    }
}

#endif
