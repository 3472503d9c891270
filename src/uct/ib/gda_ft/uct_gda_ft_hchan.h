/*
 * gda_ft UCT transport: the endpoint's host channel.
 *
 * The endpoint's RMA and atomic operations, and its active messages (SEND
 * with immediate into the receive queues of the peer's target QPs of the
 * channel), are posted through channel 0 of its channels with the device
 * datapath (device/gda_ft_chan_*.h) compiled for the CPU: the reservation, publication, deadline, switch, replay and
 * resolution that GPU kernels run serve the host operations too, and the
 * channel's host half (gda_ft_chan_host.c) is their guardian. Each
 * operation leaves a cookie (uct_gda_ft_ep.inl) at the logical index of
 * its last WQE, and completions are handed out in post order as the
 * channel's `completed` passes them.
 *
 * The endpoint's thread is the channel's only poster, and also runs its
 * host half: a switch that waits for the host's answer parks, and the
 * interface's progress takes turns between its steps and the answer.
 */
#ifndef UCT_GDA_FT_HCHAN_H_
#define UCT_GDA_FT_HCHAN_H_

#include "uct_gda_ft_types.h"
#include "gda_ft_chan_post.h"

#include <string.h>


/* A cookie slot that ends an operation nobody waits for */
#define UCT_GDA_FT_HCHAN_END 2ul


/* Operations posted on the host channel and not yet handed out */
static UCS_F_ALWAYS_INLINE uint64_t
uct_gda_ft_hchan_outstanding(const uct_gda_ft_ep_t *ep)
{
    return ep->hchan.posted - ep->hchan.delivered;
}

/* Whether the host channel takes the largest operation now: room in its
 * ring (counted from what was handed out, since a cookie's slot must not
 * be reused before), and no switch holding it */
static UCS_F_ALWAYS_INLINE int
uct_gda_ft_hchan_has_room(const uct_gda_ft_iface_t *iface,
                          const uct_gda_ft_ep_t *ep)
{
    const gda_ft_chan_t *chan = ep->hchan.chan;

    return (chan == NULL) ||
           ((uct_gda_ft_hchan_outstanding(ep) +
             iface->config.hchan_op_wqebbs <= chan->wqebb_cnt) &&
            !(gda_ft_atomic_load_acq64(&chan->word) & GDA_FT_CHAN_FROZEN) &&
            (gda_ft_atomic_load_acq32(&chan->state) != GDA_FT_CHAN_NO_PATH));
}

/* A channel operation of the kind and keys the endpoint's ops use */
static UCS_F_ALWAYS_INLINE void
uct_gda_ft_hchan_op(gda_ft_chan_op_t *op, uint8_t kind, uint8_t opcode,
                    uint64_t laddr, const uint32_t *lkeys, uint32_t length,
                    uint64_t raddr, const uint32_t *rkeys)
{
    gda_ft_chan_op_init(op, laddr, lkeys, length, raddr, rkeys);
    op->kind   = kind;
    op->opcode = opcode;
}

/* An operation whose data (at most 16 bytes) goes inline in its WQE, and
 * nobody waits for: a short put, or a short active message (a SEND with
 * its immediate in raddr) */
static UCS_F_ALWAYS_INLINE void
uct_gda_ft_hchan_op_inline(gda_ft_chan_op_t *op, uint8_t kind,
                           uint8_t opcode, const void *data, uint32_t length,
                           uint64_t raddr, const uint32_t *rkeys)
{
    static const uint32_t no_keys[GDA_FT_NUM_PATHS] = {0, 0};

    uct_gda_ft_hchan_op(op, kind, opcode, 0, no_keys, length, raddr,
                        (rkeys != NULL) ? rkeys : no_keys);
    op->inl = 1;
    memcpy(op->operand, data, length);
}

/*
 * Posts op on the endpoint's host channel with its cookie. UCS_OK;
 * UCS_ERR_NO_RESOURCE while the ring is full or a switch holds it;
 * UCS_ERR_ENDPOINT_TIMEOUT without a path.
 */
ucs_status_t uct_gda_ft_hchan_post(uct_gda_ft_ep_t *ep,
                                   const gda_ft_chan_op_t *op,
                                   uint64_t cookie);

/* Hands out the next completion of the host channel, if any: 1 if it did
 * (the callback may have destroyed the endpoint), 0 otherwise */
unsigned uct_gda_ft_hchan_deliver_one(uct_gda_ft_ep_t *ep);

/* Progress of the interface's host channels with operations in flight:
 * their completions, deadlines and switches; returns how many endpoints
 * have completions to hand out */
unsigned uct_gda_ft_hchan_progress(uct_gda_ft_iface_t *iface);

/* The guardian's pass over an idle host channel: failback, and a peer
 * that switched (the channel looks only when asked) */
void uct_gda_ft_hchan_idle_pass(uct_gda_ft_ep_t *ep);

/* Once the channels are connected: the endpoint posts on channel 0 */
ucs_status_t uct_gda_ft_hchan_connect(uct_gda_ft_ep_t *ep);

/* flush(CANCEL): the channel's QPs stop, and what was posted completes as
 * canceled */
void uct_gda_ft_hchan_cancel(uct_gda_ft_ep_t *ep);

/* Endpoint destroyed: its QPs stop, its cookies are canceled */
void uct_gda_ft_hchan_cleanup(uct_gda_ft_ep_t *ep);

/* The endpoint's counters: its host channel's */
void uct_gda_ft_hchan_counters(const uct_gda_ft_ep_t *ep,
                               uct_gda_ft_ep_counters_t *counters);

#endif
