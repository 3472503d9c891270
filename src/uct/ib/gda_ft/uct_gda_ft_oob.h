/*
 * gda_ft UCT transport: the out-of-band wireup channel.
 *
 * gda_ft endpoints connect to endpoints (RC QPs), so UCP must exchange
 * their addresses before they work: it sends its wireup messages over an
 * auxiliary transport that connects to interfaces and runs callbacks
 * asynchronously (UD for rc_mlx5). A software HCA has no UD, and UCX's tcp
 * makes no asynchronous callbacks, so UCX 1.13 finds no auxiliary transport
 * for endpoints whose wireup lane is gda_ft (tag matching with gda_ft
 * rendezvous lanes, or gda_ft alone).
 *
 * Each gda_ft memory domain therefore also offers the device "<hca>:oob": a
 * TCP listener on the HCA's IPv4 address. Its endpoints connect to
 * interfaces and send active messages (bcopy) as framed messages on a TCP
 * connection, reliable and in order; received messages run their handlers
 * from an asynchronous event handler when the handler allows it
 * (UCT_CB_FLAG_ASYNC: UCP's wireup) and from progress otherwise. Its
 * performance estimates are poor on purpose: UCP uses it for wireup only
 * when a better transport carries the data.
 */
#ifndef UCT_GDA_FT_OOB_H_
#define UCT_GDA_FT_OOB_H_

#include "uct_gda_ft_oob_stats.h"

#include <uct/base/uct_iface.h>
#include <ucs/sys/math.h>


/* Both kinds of gda_ft interface open on a device only */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_check_open_mode(const uct_iface_params_t *params)
{
    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

/*
 * Active-message alignment parameters, checked as UCX's own transports
 * check them (uct_iface_param_am_alignment() and the receive pool the
 * alignment sets up): an offset needs an alignment, and an alignment is a
 * power of 2. An offset of at least the alignment is fine (UCP asks for its
 * 8-byte header with any alignment). gda_ft hands its handlers data they
 * cannot keep (no UCT_CB_PARAM_FLAG_DESC), which no alignment applies to.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_check_am_alignment(const uct_iface_params_t *params,
                              size_t seg_size)
{
    size_t align, align_offset;
    ucs_status_t status;

    status = uct_iface_param_am_alignment(params, seg_size, 0, 0, &align,
                                          &align_offset);
    if (status != UCS_OK) {
        return status;
    }

    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) &&
        ((align == 0) || !ucs_is_pow2(align))) {
        ucs_error("AM alignment %zu is not a power of 2", align);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* Device name suffix of the channel: "<hca>:oob" */
#define UCT_GDA_FT_OOB_DEV_SUFFIX  "oob"

/* Whether a device name is an out-of-band channel's */
int uct_gda_ft_oob_is_dev_name(const char *dev_name);

/* Opens the channel's interface on the MD's primary HCA */
ucs_status_t uct_gda_ft_oob_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *config,
                                       uct_iface_h *iface_p);

/* The IPv4 address (network order) the channel of this HCA listens on;
 * UCS_ERR_UNSUPPORTED when its first port's GID is not IPv4-mapped */
ucs_status_t uct_gda_ft_oob_ipv4(uct_md_h md, uint32_t *ipv4_be);

#endif
