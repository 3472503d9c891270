/* libFuzzer harness: device addresses (both ports' GIDs and LIDs) */
#include "fuzz_wire.h"

static ucs_status_t fuzz_dev_addr_unpack(const void *buf, size_t length,
                                         void *info)
{
    return uct_gda_ft_wire_dev_addr_unpack(buf, length, info, NULL);
}

static ucs_status_t fuzz_dev_addr_pack(const void *info, void *buf,
                                       size_t max, size_t *length_p)
{
    *length_p = uct_gda_ft_wire_dev_addr_size(info);
    if (*length_p == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    return uct_gda_ft_wire_dev_addr_pack(info, buf, max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fuzz_wire_format_t fmt = {
        sizeof(uct_gda_ft_dev_addr_info_t), fuzz_dev_addr_unpack,
        fuzz_dev_addr_pack
    };

    return fuzz_wire_run(&fmt, data, size);
}
