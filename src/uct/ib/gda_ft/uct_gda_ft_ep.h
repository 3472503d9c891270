/*
 * gda_ft UCT transport: endpoint operations.
 */
#ifndef UCT_GDA_FT_EP_H_
#define UCT_GDA_FT_EP_H_

#include "uct_gda_ft_iface.h"

#include <ucs/type/class.h>


UCS_CLASS_DECLARE(uct_gda_ft_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_gda_ft_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gda_ft_ep_t, uct_ep_t);


ucs_status_t uct_gda_ft_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr);

ucs_status_t uct_gda_ft_ep_connect_to_ep(uct_ep_h tl_ep,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_ep_addr_t *ep_addr);

ucs_status_t uct_gda_ft_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                     unsigned length, uint64_t remote_addr,
                                     uct_rkey_t rkey);

/* The HCA endpoint behind tl_ep, or NULL: the out-of-band channel is a
 * gda_ft transport too, of another kind, without RDMA operations */
static inline uct_gda_ft_ep_t *uct_gda_ft_hca_ep(uct_ep_h tl_ep)
{
    return (tl_ep->iface->ops.ep_put_short == uct_gda_ft_ep_put_short) ?
           ucs_derived_of(tl_ep, uct_gda_ft_ep_t) : NULL;
}

ssize_t uct_gda_ft_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                void *arg, uint64_t remote_addr,
                                uct_rkey_t rkey);

ucs_status_t uct_gda_ft_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_get_bcopy(uct_ep_h tl_ep,
                                     uct_unpack_callback_t unpack_cb,
                                     void *arg, size_t length,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                          uint64_t swap, uint64_t remote_addr,
                                          uct_rkey_t rkey, uint64_t *result,
                                          uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                          uint32_t swap, uint64_t remote_addr,
                                          uct_rkey_t rkey, uint32_t *result,
                                          uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                         uint32_t value, uint64_t remote_addr,
                                         uct_rkey_t rkey);

ucs_status_t uct_gda_ft_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                         uint64_t value, uint64_t remote_addr,
                                         uct_rkey_t rkey);

ucs_status_t uct_gda_ft_ep_atomic32_fetch(uct_ep_h tl_ep, unsigned opcode,
                                          uint32_t value, uint32_t *result,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_atomic64_fetch(uct_ep_h tl_ep, unsigned opcode,
                                          uint64_t value, uint64_t *result,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags);

void uct_gda_ft_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg);

ucs_arbiter_cb_result_t
uct_gda_ft_ep_process_pending(ucs_arbiter_t *arbiter,
                              ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg);

ucs_status_t uct_gda_ft_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp);

ucs_status_t uct_gda_ft_ep_fence(uct_ep_h tl_ep, unsigned flags);

ucs_status_t uct_gda_ft_ep_check(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp);

/*
 * Delivers at most one completion of the endpoint (an operation, a flush, or
 * the endpoint's error); returns 0 when it has nothing to deliver. A callback
 * may destroy endpoints: the caller must not touch ep after a non-zero
 * return before looking it up again.
 */
unsigned uct_gda_ft_ep_deliver_one(uct_gda_ft_ep_t *ep);

/* Active messages over SEND/RECV with immediate */
ucs_status_t uct_gda_ft_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                    uint64_t header, const void *payload,
                                    unsigned length);
ucs_status_t uct_gda_ft_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                        const uct_iov_t *iov, size_t iovcnt);

ssize_t uct_gda_ft_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                               uct_pack_callback_t pack_cb, void *arg,
                               unsigned flags);

/* Delivers the next active message of the endpoint if it has arrived;
 * returns 0 otherwise. Same rules as uct_gda_ft_ep_deliver_one(). */
unsigned uct_gda_ft_ep_am_deliver(uct_gda_ft_ep_t *ep);

/* Receive queues (uct_gda_ft_am.c). init: of a QP created with it (buf
 * and dbrec are the QP's, cq reserved by uct_gda_ft_iface_rx_cq_get, whose
 * reservation it then holds); fill: with fresh buffers, in INIT before
 * RTR; cleanup: buffers back to the pool once the receive CQ is drained of
 * the QP's completions (the QP destroyed, or never connected), and the CQ's
 * reservation returned */
ucs_status_t uct_gda_ft_rxq_init(uct_gda_ft_iface_t *iface,
                                 uct_gda_ft_rxq_t *rxq, unsigned path,
                                 gda_ft_hca_qp_t *qp,
                                 void *buf, uint32_t *dbrec,
                                 struct uct_gda_ft_rx_cq *cq);
ucs_status_t uct_gda_ft_rxq_fill(uct_gda_ft_iface_t *iface,
                                 uct_gda_ft_ep_t *ep, uct_gda_ft_rxq_t *rxq);
void uct_gda_ft_rxq_cleanup(uct_gda_ft_iface_t *iface,
                            uct_gda_ft_rxq_t *rxq);

/* After the QP of a receive queue went to RESET (a re-arm): takes what it
 * received before from the receive CQ, returns the buffers it had posted,
 * resets its receive ring and posts fresh buffers */
void uct_gda_ft_rxq_rearm(uct_gda_ft_ep_t *ep, uct_gda_ft_rxq_t *rxq);

/* Active-message counters of an endpoint, for tests and the counters CLI */
ucs_status_t
uct_gda_ft_ep_query_am_counters(uct_ep_h tl_ep,
                                uct_gda_ft_am_counters_t *counters);

/* Counters of an endpoint (switches, replays, in doubt, failbacks, no path),
 * for statistics, tests and the counters CLI */
ucs_status_t uct_gda_ft_ep_query_counters(uct_ep_h tl_ep,
                                          uct_gda_ft_ep_counters_t *counters);

/* The sum of the counters of the interface's current endpoints */
ucs_status_t
uct_gda_ft_iface_query_counters(uct_iface_h tl_iface,
                                uct_gda_ft_ep_counters_t *counters);

#endif
