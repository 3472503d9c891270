/*
 * gda_ft UCT transport: the out-of-band channel's send side, its
 * endpoints (uct_gda_ft_oob_ep.c): the operations the interface's table
 * names and the progress of their send queues.
 */
#ifndef UCT_GDA_FT_OOB_EP_H_
#define UCT_GDA_FT_OOB_EP_H_

#include "uct_gda_ft_oob_types.h"

#include <ucs/type/class.h>


UCS_CLASS_DECLARE_NEW_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gda_ft_oob_ep_t, uct_ep_t);

ssize_t uct_gda_ft_oob_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                   uct_pack_callback_t pack_cb,
                                   void *arg, unsigned flags);

ucs_status_t uct_gda_ft_oob_ep_pending_add(uct_ep_h tl_ep,
                                           uct_pending_req_t *req,
                                           unsigned flags);

void uct_gda_ft_oob_ep_pending_purge(uct_ep_h tl_ep,
                                     uct_pending_purge_callback_t cb,
                                     void *arg);

ucs_status_t uct_gda_ft_oob_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp);

ucs_status_t uct_gda_ft_oob_ep_check(uct_ep_h tl_ep, unsigned flags,
                                     uct_completion_t *comp);

/* From progress, under the async lock: writes the queue, completes what
 * it held, and runs pending requests while there is room */
unsigned uct_gda_ft_oob_ep_tx_progress(uct_gda_ft_oob_iface_t *iface,
                                       uct_gda_ft_oob_ep_t *ep);

#endif
