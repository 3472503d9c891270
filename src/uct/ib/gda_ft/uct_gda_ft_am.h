/*
 * gda_ft UCT transport: active messages (uct_gda_ft_am.c), and the
 * interface's receive CQs that take them.
 */
#ifndef UCT_GDA_FT_AM_H_
#define UCT_GDA_FT_AM_H_

#include "uct_gda_ft_types.h"

/* Polls the receive CQ of a path: messages wait in their endpoint for
 * uct_gda_ft_ep_deliver_one(); no callbacks */
unsigned uct_gda_ft_iface_poll_rx(uct_gda_ft_iface_t *iface, unsigned path,
                                  unsigned max);

/* The receive CQs of a path: one more opened */
ucs_status_t uct_gda_ft_iface_rx_cq_open(uct_gda_ft_iface_t *iface,
                                         unsigned path);

/* A receive CQ of a path with room for the receive WQEs of one more
 * endpoint's QP, opened if none has; taken until uct_gda_ft_iface_rx_cq_put */
ucs_status_t uct_gda_ft_iface_rx_cq_get(uct_gda_ft_iface_t *iface,
                                        unsigned path,
                                        uct_gda_ft_rx_cq_t **rx_cq_p);

void uct_gda_ft_iface_rx_cq_put(uct_gda_ft_iface_t *iface,
                                uct_gda_ft_rx_cq_t *rx_cq);

#endif
