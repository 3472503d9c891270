/*
 * gda_ft UCT transport: the interface's settings, the table that
 * `ucx_info -c` prints, and their check and derivation at interface open.
 */
#ifndef UCT_GDA_FT_IFACE_CONFIG_H_
#define UCT_GDA_FT_IFACE_CONFIG_H_

#include "uct_gda_ft_types.h"

#include <ucs/config/parser.h>

/* UCX_GDA_FT_* */
extern ucs_config_field_t uct_gda_ft_iface_config_table[];

/* Checks the settings and fills iface->config from them and from the
 * HCAs' limits (the backup's port: backup_port, 0 without one); logs what
 * it refuses */
ucs_status_t
uct_gda_ft_iface_init_config(uct_gda_ft_iface_t *iface,
                             const uct_gda_ft_iface_config_t *config,
                             uct_gda_ft_md_t *md, uint8_t backup_port);

#endif
