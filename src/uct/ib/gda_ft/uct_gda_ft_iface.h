/*
 * gda_ft UCT transport: the interface's functions that the other rooms
 * call (progress, receive CQs, the counters command). The types are in
 * uct_gda_ft_types.h; the inline helpers every room shares in
 * uct_gda_ft_ep.inl.
 *
 * The host half of failover (fencing the abandoned QP, the peer's word,
 * re-arm and failback) is the channels' guardian (gda_ft_chan_host.c,
 * uct_gda_ft_chan.c): it runs from the interface progress.
 */
#ifndef UCT_GDA_FT_IFACE_H_
#define UCT_GDA_FT_IFACE_H_

#include "uct_gda_ft_types.h"


extern uct_iface_ops_t uct_gda_ft_iface_ops;

/* Interface progress: receive CQs, host channels, the channels' guardian,
 * completions, pending requests */
unsigned uct_gda_ft_iface_progress(uct_iface_h tl_iface);

/* Polls the receive CQ of a path: messages wait in their endpoint for
 * uct_gda_ft_ep_deliver_one(); no callbacks */
unsigned uct_gda_ft_iface_poll_rx(uct_gda_ft_iface_t *iface, unsigned path,
                                  unsigned max);

/* The receive CQs of a path (uct_gda_ft_am.c): one more opened */
ucs_status_t uct_gda_ft_iface_rx_cq_open(uct_gda_ft_iface_t *iface,
                                         unsigned path);

/* A receive CQ of a path with room for the receive WQEs of one more
 * endpoint's QP, opened if none has; taken until uct_gda_ft_iface_rx_cq_put */
ucs_status_t uct_gda_ft_iface_rx_cq_get(uct_gda_ft_iface_t *iface,
                                        unsigned path,
                                        uct_gda_ft_rx_cq_t **rx_cq_p);

void uct_gda_ft_iface_rx_cq_put(uct_gda_ft_iface_t *iface,
                                uct_gda_ft_rx_cq_t *rx_cq);

/* A line of counters per endpoint (and per device channel) of the
 * interface into reply; returns the length it needed (uct_gda_ft_ctl.c) */
size_t uct_gda_ft_iface_format_counters(uct_gda_ft_iface_t *iface,
                                        char *reply, size_t max);

/* The transport's control socket (uct_gda_ft_ctl.c): open while an
 * interface is, in dir (CTL_DIR; empty: none) */
void uct_gda_ft_ctl_add(uct_gda_ft_iface_t *iface, const char *dir);
void uct_gda_ft_ctl_remove(uct_gda_ft_iface_t *iface);

/* Runs a control command in the process ("counters"); UCS_ERR_NO_ELEM for
 * an unknown one, with a line saying so in reply */
ucs_status_t uct_gda_ft_ctl_exec(const char *cmd, char *reply, size_t max);

/* The socket's path, NULL when none is open */
const char *uct_gda_ft_ctl_path(void);

#endif
