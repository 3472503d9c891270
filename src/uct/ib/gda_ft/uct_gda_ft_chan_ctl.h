/*
 * gda_ft UCT transport: the control QPs of an endpoint's channels.
 *
 * One control QP per path, connected to the peer's, carries the RDMA
 * WRITEs of the channel guardians into the peer endpoint's mailbox: their
 * questions about a channel's path (fence it, re-arm it) and the answers
 * to the peer's. Nobody posts on them through the datapath, so no switch
 * of a channel fences them.
 */
#ifndef UCT_GDA_FT_CHAN_CTL_H_
#define UCT_GDA_FT_CHAN_CTL_H_

#include "uct_gda_ft_iface.h"
#include "uct_gda_ft_wire.h"
#include "gda_ft_chan_host.h"

/* How a channel guardian asks the peer about a channel's path */
extern const gda_ft_chan_peer_ops_t uct_gda_ft_chan_peer_ops;

/* First PSN of the direction src -> dst, which both ends compute alike */
uint32_t uct_gda_ft_chan_first_psn(uint32_t src_qpn, uint32_t dst_qpn);

/* The control ring of `path` starts over once its QP was connected or
 * re-armed */
void uct_gda_ft_ctl_reset(uct_gda_ft_ep_t *ep, unsigned path);

/* Retires what the peer acknowledged on the control QP of `path` */
void uct_gda_ft_ctl_poll(uct_gda_ft_ep_t *ep, unsigned path);

/*
 * Writes `arg` at arg_offset of the peer's mailbox, then, with an epoch,
 * `epoch` at epoch_offset (they land in that order), over the control
 * path that carries news of `path` (the other one while it is usable);
 * *carrier_p: which one. UCS_ERR_NO_RESOURCE when no control path takes it
 * now: the caller writes again at its next pass.
 */
ucs_status_t uct_gda_ft_ctl_write(uct_gda_ft_ep_t *ep, unsigned path,
                                 size_t arg_offset, const void *arg,
                                 size_t arg_length, size_t epoch_offset,
                                 const uint32_t *epoch, unsigned *carrier_p);

/* Posts, without ringing the doorbell, an inline RDMA WRITE of `length`
 * bytes (at most 16) of `arg` at `offset` of the peer's mailbox on the
 * control QP of `carrier`, which the caller found room on */
void uct_gda_ft_ctl_post_inline(uct_gda_ft_ep_t *ep, unsigned carrier,
                                size_t offset, const void *arg,
                                size_t length);

/*
 * Whether the marked write landed: UCS_OK once the peer acknowledged it,
 * UCS_INPROGRESS while the HCA may still deliver it, UCS_ERR_CANCELED when
 * it never will (its control QP failed or started over first, or nothing
 * was marked): the caller writes it again.
 */
ucs_status_t uct_gda_ft_ctl_landed(uct_gda_ft_ep_t *ep,
                                   const uct_gda_ft_ctl_mark_t *mark);

/*
 * Pushes our channel directory (the first `length` bytes of our mailbox's
 * dir_out) into the peer's mailbox over control path `carrier`, into the
 * directory slot of that path, then `epoch` into that path's dir_epoch;
 * *mark: the push. Each control path writes its own slots, so pushes over
 * both paths at once never write the same bytes. UCS_ERR_NO_RESOURCE when
 * that path takes no write now.
 */
ucs_status_t uct_gda_ft_ctl_write_dir(uct_gda_ft_ep_t *ep, unsigned carrier,
                                     size_t length, uint32_t epoch,
                                     uct_gda_ft_ctl_mark_t *mark);

/* Our answer to the peer's directory (UCT_GDA_FT_MBOX_ANSWER()), into
 * the peer's dir_ack of control path `carrier`, over that path; as
 * uct_gda_ft_ctl_write_dir() */
ucs_status_t uct_gda_ft_ctl_answer_dir(uct_gda_ft_ep_t *ep, unsigned carrier,
                                      uint64_t answer,
                                      uct_gda_ft_ctl_mark_t *mark);

/* Re-arms the control QP of `path` once it failed and its port is up,
 * with the peer, after the re-arm back-off */
void uct_gda_ft_ctl_rearm(uct_gda_ft_ep_t *ep, unsigned path, uint64_t now);

/* Does what the peer's question about our target end of its channel `id`
 * asks (UCT_GDA_FT_WIRE_CTL_SLOT: our control QP), and answers it */
void uct_gda_ft_chan_answer_peer(uct_gda_ft_ep_t *ep, unsigned id,
                                 const uct_gda_ft_mbox_question_t *question);

/* When the peer's traffic last came in on `path` (the PSNs our target QPs
 * expect moved; read at most every eighth of a deadline), 0: never */
uint64_t uct_gda_ft_chan_heard_ns(uct_gda_ft_ep_t *ep, unsigned path,
                                  uint64_t now);

#endif
