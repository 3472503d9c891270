/*
 * Copyright (c) 2026 gda_ft authors. See LICENSE.
 *
 * The UCS interfaces that changed between the UCX versions gda_ft builds
 * against (1.13 to 1.22), for every part of gda_ft, the providers
 * included; gda_ft_uct_compat.h has the UCT ones. Each change sits behind
 * one macro keyed on the UCT API version of the headers in use; the
 * version where it changed was read from the openucx/ucx release tags.
 */

#ifndef GDA_FT_UCS_COMPAT_H_
#define GDA_FT_UCS_COMPAT_H_

#include <uct/api/version.h>
#include <ucs/config/parser.h>

#define GDA_FT_UCX_AT_LEAST(_major, _minor) \
    (UCT_API >= UCT_VERSION(_major, _minor))


/* 1.17: the alignment and power-of-two helpers left ucs/sys/math.h */
#if GDA_FT_UCX_AT_LEAST(1, 17)
#  include <ucs/sys/ptr_arith.h>
#else
#  include <ucs/sys/math.h>
#endif


/*
 * 1.15: the parser takes the table's registered entry, which carries the
 * table's prefix, instead of the table and its prefix
 */
#if GDA_FT_UCX_AT_LEAST(1, 15)
#  define GDA_FT_CONFIG_FILL_OPTS(_opts, _table, _env_prefix, _ignore) \
       ucs_config_parser_fill_opts(_opts, UCS_CONFIG_GET_TABLE(_table), \
                                   _env_prefix, _ignore)
#else
#  define GDA_FT_CONFIG_FILL_OPTS(_opts, _table, _env_prefix, _ignore) \
       ucs_config_parser_fill_opts(_opts, _table, _env_prefix, \
                                   (_table##_config_entry).prefix, _ignore)
#endif


/*
 * 1.19: uct_config_modify() matches a setting's name with its table's
 * prefix in front ("GDA_FT_TX_QUEUE_LEN"); before, without it. Here
 * rather than in gda_ft_uct_compat.h since users of the public UCT API
 * (the tests) need it too.
 */
#if GDA_FT_UCX_AT_LEAST(1, 19)
#  define GDA_FT_UCT_CONFIG_NAME(_table_prefix, _name) _table_prefix _name
#else
#  define GDA_FT_UCT_CONFIG_NAME(_table_prefix, _name) _name
#endif

#endif
