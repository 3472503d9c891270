/*
 * gda_ft UCT transport: whether an endpoint's peer is alive.
 *
 * A port that dies is failed over; a peer that dies (its process, node or
 * GPU) leaves both paths dead, and the endpoint's guardian gives it up:
 * while the channels are connected, each control path carries a liveness
 * probe (an RDMA WRITE into the peer's mailbox, UCT_GDA_FT_PEER_BEAT_DIV
 * times a PEER_TIMEOUT) unless a control write is already in flight
 * there.
 * The HCA acknowledges a write only while the peer's QP exists. A peer
 * with a control write unanswered (or a control QP whose retries ran out)
 * on every path whose local port is up, none answered and none of its
 * traffic heard on any path for PEER_TIMEOUT (auto: 1.5 deadlines, at
 * least two retransmission timeouts and 100 ms; 1 s on a soft HCA), is
 * gone; so is the peer of an endpoint that UCT reported failed.
 *
 * Gone is final for these channels: the peer's state word (health and
 * mailboxes, device/gda_ft_chan_peer.h) says GONE, posts and waits to it
 * fail at once with GDA_FT_DEV_PEER_GONE, the device channels' and the
 * control QPs move to ERR, and the guardian re-arms nothing and guards
 * the host channel alone (UCT's endpoint ends on its own terms). A
 * restarted peer is a new process with new QPs: it comes back on a new
 * endpoint, whose state says BACK (uct_gda_ft_peer_back).
 */
#ifndef UCT_GDA_FT_PEER_H_
#define UCT_GDA_FT_PEER_H_

#include <stdint.h>

/* Probes per PEER_TIMEOUT on an idle control path (at least one a
 * deadline) */
#define UCT_GDA_FT_PEER_BEAT_DIV     4

typedef struct uct_gda_ft_peer {
    uint32_t word;         /* GDA_FT_PEER_WORD() published last */
    uint32_t beats;        /* probes written */
    uint64_t since_ns;     /* answers count from then: the first pass, or
                              the last one that came late */
    uint64_t check_ns;     /* the last pass */
    uint64_t beat_ns[2];   /* last probe per control path */
    uint64_t gone_ns;      /* when it was given up, 0: not */
    uint8_t  draining;     /* control paths (bits) fenced once the write
                              in flight on them when the peer was given up
                              completes: the last answer goes out */
} uct_gda_ft_peer_t;

struct uct_gda_ft_ep;

/*
 * The guardian's pass over the peer's liveness: probes, and the decision.
 * Returns 1 while the peer is gone (the guardian then guards the host
 * channel alone), else 0.
 */
int uct_gda_ft_peer_check(struct uct_gda_ft_ep *ep, uint64_t now);

/* The endpoint failed (UCT reported it): its peer is given up */
void uct_gda_ft_peer_ep_failed(struct uct_gda_ft_ep *ep, uint64_t now);

struct uct_gda_ft_ep_chans;

/* The channels of a restarted peer's new endpoint take over from those of
 * its old one, whose word was `gone_word` (GONE): their state says BACK,
 * one generation on */
void uct_gda_ft_peer_back(struct uct_gda_ft_ep_chans *c, uint32_t gone_word);

/* The peer's state word (GDA_FT_PEER_WORD) and when it was given up (0:
 * it was not), as the guardian last published them */
uint32_t uct_gda_ft_peer_word(const uct_gda_ft_peer_t *peer,
                              uint64_t *gone_ns_p);

#endif
