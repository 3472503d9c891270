/* libFuzzer harness: endpoint addresses (mailbox, host channel's QPNs) */
#include "fuzz_wire.h"

static ucs_status_t fuzz_ep_addr_unpack(const void *buf, size_t length,
                                        void *info)
{
    return uct_gda_ft_wire_ep_addr_unpack(buf, length, info, NULL);
}

static ucs_status_t fuzz_ep_addr_pack(const void *info, void *buf,
                                      size_t max, size_t *length_p)
{
    const uct_gda_ft_ep_addr_info_t *ep_info = info;

    if (ep_info->num_chan > UCT_GDA_FT_WIRE_CHAN_MAX) {
        return UCS_ERR_INVALID_PARAM;
    }
    *length_p = UCT_GDA_FT_WIRE_EP_ADDR_MAX;
    return uct_gda_ft_wire_ep_addr_pack(info, buf, max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fuzz_wire_format_t fmt = {
        sizeof(uct_gda_ft_ep_addr_info_t), fuzz_ep_addr_unpack,
        fuzz_ep_addr_pack
    };

    return fuzz_wire_run(&fmt, data, size);
}
