/*
 * gda_ft UCT transport: the interface's progress (uct_gda_ft_progress.c).
 */
#ifndef UCT_GDA_FT_PROGRESS_H_
#define UCT_GDA_FT_PROGRESS_H_

#include "uct_gda_ft_types.h"

/* Interface progress: receive CQs, host channels, the channels' guardian,
 * completions, pending requests */
unsigned uct_gda_ft_iface_progress(uct_iface_h tl_iface);

#endif
