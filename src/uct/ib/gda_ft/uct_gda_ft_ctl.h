/*
 * gda_ft UCT transport: its control socket (uct_gda_ft_ctl.c), which
 * gda_ft_softctl talks to, and the counters command it serves.
 */
#ifndef UCT_GDA_FT_CTL_H_
#define UCT_GDA_FT_CTL_H_

#include "uct_gda_ft_types.h"

/* A line of counters per endpoint (and per device channel) of the
 * interface into reply; returns the length it needed */
size_t uct_gda_ft_iface_format_counters(uct_gda_ft_iface_t *iface,
                                        char *reply, size_t max);

/* The socket: open while an interface is, in dir (CTL_DIR; empty: none) */
void uct_gda_ft_ctl_add(uct_gda_ft_iface_t *iface, const char *dir);
void uct_gda_ft_ctl_remove(uct_gda_ft_iface_t *iface);

/* Runs a control command in the process ("counters"); UCS_ERR_NO_ELEM for
 * an unknown one, with a line saying so in reply */
ucs_status_t uct_gda_ft_ctl_exec(const char *cmd, char *reply, size_t max);

/* The socket's path, NULL when none is open */
const char *uct_gda_ft_ctl_path(void);

#endif
