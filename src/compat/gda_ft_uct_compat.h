/*
 * Copyright (c) 2026 gda_ft authors. See LICENSE.
 *
 * The UCT internal interfaces that changed between the UCX versions
 * gda_ft builds against (1.13 to 1.22), for the transport (its files
 * force-include UCX's own config.h, which these headers need). Each change
 * sits behind one macro or inline keyed on the UCT API version; the version
 * where it changed was read from the openucx/ucx release tags.
 */

#ifndef GDA_FT_UCT_COMPAT_H_
#define GDA_FT_UCT_COMPAT_H_

#include <gda_ft_ucs_compat.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/sys/string.h>

/*
 * 1.14: a pool's settings include its largest chunk and growth factor;
 * gda_ft takes UCX transports' usual values (128m, 1.0)
 */
#if GDA_FT_UCX_AT_LEAST(1, 14)
#  define GDA_FT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, \
                                           _mp_name, _offset, _desc) \
       UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, 128m, \
                                     1.0, _mp_name, _offset, _desc)
#else
#  define GDA_FT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, \
                                           _mp_name, _offset, _desc) \
       UCT_IFACE_MPOOL_CONFIG_FIELDS(_prefix, _dfl_max, _dfl_grow, \
                                     _mp_name, _offset, _desc)
#endif


/* 1.14: ucs_mpool_init() takes a parameter struct */
static inline ucs_status_t
gda_ft_mpool_init(ucs_mpool_t *mp, size_t priv_size, size_t elem_size,
                  size_t alignment, unsigned elems_per_chunk,
                  unsigned max_elems, ucs_mpool_ops_t *ops, const char *name)
{
#if GDA_FT_UCX_AT_LEAST(1, 14)
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = 0;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, 0, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}


/*
 * Memory domain operations that came and went: mem_attach (1.14),
 * is_sockaddr_accessible (gone in 1.16), mem_elem_pack (1.21, UCP's device
 * API). gda_ft supports none of them; each expands to an initializer, or
 * to nothing where the member does not exist.
 */
#if GDA_FT_UCX_AT_LEAST(1, 14)
#  define GDA_FT_MD_OPS_MEM_ATTACH \
       .mem_attach = (uct_md_mem_attach_func_t) \
                     ucs_empty_function_return_unsupported,
#else
#  define GDA_FT_MD_OPS_MEM_ATTACH
#endif

#if GDA_FT_UCX_AT_LEAST(1, 16)
#  define GDA_FT_MD_OPS_IS_SOCKADDR_ACCESSIBLE
#else
#  define GDA_FT_MD_OPS_IS_SOCKADDR_ACCESSIBLE \
       .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t) \
                                 ucs_empty_function_return_zero_int,
#endif

#if GDA_FT_UCX_AT_LEAST(1, 21)
#  define GDA_FT_MD_OPS_MEM_ELEM_PACK \
       .mem_elem_pack = (uct_md_mem_elem_pack_func_t) \
                        ucs_empty_function_return_unsupported,
#else
#  define GDA_FT_MD_OPS_MEM_ELEM_PACK
#endif

/*
 * Memory domain attributes: 1.14 queries through uct_md_attr_v2_t, whose
 * capabilities are top-level fields rather than members of `cap`
 */
#if GDA_FT_UCX_AT_LEAST(1, 14)
typedef uct_md_attr_v2_t gda_ft_md_attr_t;
#  define GDA_FT_MD_CAP(_attr, _field) ((_attr)->_field)
#else
typedef uct_md_attr_t gda_ft_md_attr_t;
#  define GDA_FT_MD_CAP(_attr, _field) ((_attr)->cap._field)
#endif


/*
 * Interface operations that UCP calls through the internal table in newer
 * versions, each a thin adapter onto the transport's version-1 operation
 * in its public table (which every version still has): connect_to_ep v2
 * (1.14), is_reachable v2 (1.15), ep_is_connected (1.16), query v2 (1.20),
 * and the device and SGL operations gda_ft does not offer (1.20-1.22).
 */
#if GDA_FT_UCX_AT_LEAST(1, 14)
static UCS_F_MAYBE_UNUSED ucs_status_t
gda_ft_ep_connect_to_ep_v2(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr,
                           const uct_ep_connect_to_ep_params_t *params)
{
    return ep->iface->ops.ep_connect_to_ep(ep, dev_addr, ep_addr);
}
#  define GDA_FT_INTERNAL_OPS_CONNECT_TO_EP_V2 \
       .ep_connect_to_ep_v2 = gda_ft_ep_connect_to_ep_v2,
#else
#  define GDA_FT_INTERNAL_OPS_CONNECT_TO_EP_V2
#endif

#if GDA_FT_UCX_AT_LEAST(1, 15)
static UCS_F_MAYBE_UNUSED int
gda_ft_iface_is_reachable_v2(const uct_iface_h iface,
                             const uct_iface_is_reachable_params_t *params)
{
    const uint64_t need = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                          UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR;
    const uint64_t info = UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                          UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH;
    int reachable;

    reachable = ((params->field_mask & need) == need) &&
                iface->ops.iface_is_reachable(iface, params->device_addr,
                                              params->iface_addr);
    if (!reachable &&
        ((params->field_mask & info) == info) &&
        (params->info_string != NULL)) {
        ucs_snprintf_zero(params->info_string, params->info_string_length,
                          "no path to that address (another subnet, "
                          "a malformed address, or not a gda_ft peer)");
    }
    return reachable;
}
#  define GDA_FT_INTERNAL_OPS_IS_REACHABLE_V2 \
       .iface_is_reachable_v2 = gda_ft_iface_is_reachable_v2,
#else
#  define GDA_FT_INTERNAL_OPS_IS_REACHABLE_V2
#endif

#if GDA_FT_UCX_AT_LEAST(1, 16)
#  define GDA_FT_INTERNAL_OPS_EP_IS_CONNECTED \
       .ep_is_connected = uct_base_ep_is_connected,
#else
#  define GDA_FT_INTERNAL_OPS_EP_IS_CONNECTED
#endif

#if GDA_FT_UCX_AT_LEAST(1, 22) || \
    (UCT_API == UCT_VERSION(1, 20))
#  define GDA_FT_INTERNAL_OPS_QUERY_V2 \
       .iface_query_v2 = uct_iface_base_query_v2,
#else
#  define GDA_FT_INTERNAL_OPS_QUERY_V2
#endif

#if GDA_FT_UCX_AT_LEAST(1, 20)
#  define GDA_FT_INTERNAL_OPS_GET_DEVICE_EP \
       .ep_get_device_ep = (uct_ep_get_device_ep_func_t) \
                           ucs_empty_function_return_unsupported,
#else
#  define GDA_FT_INTERNAL_OPS_GET_DEVICE_EP
#endif

#if UCT_API == UCT_VERSION(1, 20)
#  define GDA_FT_INTERNAL_OPS_MEM_ELEMENT_PACK \
       .iface_mem_element_pack = (uct_iface_mem_element_pack_func_t) \
                                 ucs_empty_function_return_unsupported,
#else
#  define GDA_FT_INTERNAL_OPS_MEM_ELEMENT_PACK
#endif

#if GDA_FT_UCX_AT_LEAST(1, 22)
#  define GDA_FT_INTERNAL_OPS_PUT_SGL_ZCOPY \
       .ep_put_sgl_zcopy = (uct_ep_put_sgl_zcopy_func_t) \
                           ucs_empty_function_return_unsupported,
#else
#  define GDA_FT_INTERNAL_OPS_PUT_SGL_ZCOPY
#endif

/* The members of uct_iface_internal_ops_t that came after 1.13 */
#define GDA_FT_INTERNAL_OPS_SINCE_1_13 \
    GDA_FT_INTERNAL_OPS_QUERY_V2 \
    GDA_FT_INTERNAL_OPS_MEM_ELEMENT_PACK \
    GDA_FT_INTERNAL_OPS_CONNECT_TO_EP_V2 \
    GDA_FT_INTERNAL_OPS_IS_REACHABLE_V2 \
    GDA_FT_INTERNAL_OPS_EP_IS_CONNECTED \
    GDA_FT_INTERNAL_OPS_GET_DEVICE_EP \
    GDA_FT_INTERNAL_OPS_PUT_SGL_ZCOPY


/*
 * 1.22: ep_check accepts a completion (called when the check ends later;
 * gda_ft's checks end at once), and its parameter check takes the flags
 * alone
 */
#if GDA_FT_UCX_AT_LEAST(1, 22)
#  define GDA_FT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp) \
       UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#else
#  define GDA_FT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp) \
       UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#endif


/*
 * 1.19: rkey_unpack takes parameters (the system device the key will be
 * used from, which a gda_ft key does not depend on). The component's
 * table names GDA_FT_RKEY_UNPACK(fn), where fn has the 1.13 signature.
 */
#if GDA_FT_UCX_AT_LEAST(1, 19)
#  define GDA_FT_RKEY_UNPACK_ADAPTER(_fn) \
       static ucs_status_t _fn##_v2(uct_component_t *component, \
                                    const void *rkey_buffer, \
                                    const uct_rkey_unpack_params_t *params, \
                                    uct_rkey_t *rkey_p, void **handle_p) \
       { \
           return _fn(component, rkey_buffer, rkey_p, handle_p); \
       }
#  define GDA_FT_RKEY_UNPACK(_fn) _fn##_v2
#else
#  define GDA_FT_RKEY_UNPACK_ADAPTER(_fn)
#  define GDA_FT_RKEY_UNPACK(_fn) _fn
#endif

#endif
