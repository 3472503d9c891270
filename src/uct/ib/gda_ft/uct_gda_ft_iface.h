/*
 * gda_ft UCT transport: the interface (uct_gda_ft_iface.c). The types are
 * in uct_gda_ft_types.h; the inline helpers every room shares in
 * uct_gda_ft_ep.inl; its progress in uct_gda_ft_progress.h, its receive
 * CQs in uct_gda_ft_am.h, its counters command in uct_gda_ft_ctl.h.
 *
 * The host half of failover (fencing the abandoned QP, the peer's word,
 * re-arm and failback) is the channels' guardian (src/chan,
 * uct_gda_ft_chan.c): it runs from the interface progress.
 */
#ifndef UCT_GDA_FT_IFACE_H_
#define UCT_GDA_FT_IFACE_H_

#include "uct_gda_ft_types.h"


extern uct_iface_ops_t uct_gda_ft_iface_ops;

#endif
