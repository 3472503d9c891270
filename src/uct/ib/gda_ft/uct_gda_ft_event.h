/*
 * gda_ft UCT transport: the interface's event fd and arm (UCT's
 * UCT_IFACE_FLAG_EVENT_FD, EVENT_SEND_COMP and EVENT_RECV), with which
 * ucp_worker_wait(), ucp_worker_arm() and an epoll set of the user's
 * sleep until a completion comes.
 *
 * Every CQ of the interface (the receive CQs of both paths, and the CQs of
 * its endpoints' channels and control QPs) shares one armed word and one
 * eventfd, which the HCA writes once after a CQE while the word is set
 * (GDA_FT_HCA_DEV_FLAG_CQ_EVENTS). Arm sets the word and then looks for
 * what progress would do: a CQE not yet polled, an endpoint with
 * completions to hand out, a host channel that completed, the guardian
 * due; any of them is UCS_ERR_BUSY. While operations are outstanding a
 * timer wakes the fd when the channels' guardian is due, so that a path
 * that fails while the user sleeps is switched within its deadline. An
 * idle interface wakes for a completion only; the peer's questions about a
 * switch (its writes to our mailbox make no CQE) wait for that wake or the
 * next progress.
 */
#ifndef UCT_GDA_FT_EVENT_H_
#define UCT_GDA_FT_EVENT_H_

#include "uct_gda_ft_types.h"


/* Opens the event fds when the interface's HCAs (the backup's may be NULL)
 * have completion events; else the interface claims none. Before the
 * interface creates its first CQ. */
ucs_status_t uct_gda_ft_iface_event_init(uct_gda_ft_iface_t *iface,
                                         const gda_ft_hca_dev_t *primary,
                                         const gda_ft_hca_dev_t *backup);

void uct_gda_ft_iface_event_cleanup(uct_gda_ft_iface_t *iface);

/* Whether the interface has completion events (its cap.event_flags) */
static UCS_F_ALWAYS_INLINE int
uct_gda_ft_iface_event_enabled(const uct_gda_ft_iface_t *iface)
{
    return iface->event.fd >= 0;
}

/* The armed word and eventfd for a CQ of the interface, if it has events */
void uct_gda_ft_iface_event_cq_attr(uct_gda_ft_iface_t *iface,
                                    int32_t **armed_p, int *fd_p);

ucs_status_t uct_gda_ft_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);

ucs_status_t uct_gda_ft_iface_event_arm(uct_iface_h tl_iface,
                                        unsigned events);

#endif
