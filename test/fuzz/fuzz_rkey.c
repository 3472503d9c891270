/* libFuzzer harness: packed remote keys (uct_rkey_unpack of a peer's key) */
#include "fuzz_wire.h"

static ucs_status_t fuzz_rkey_unpack(const void *buf, size_t length,
                                     void *info)
{
    return uct_gda_ft_wire_rkey_unpack(buf, length, info, NULL);
}

static ucs_status_t fuzz_rkey_pack(const void *info, void *buf, size_t max,
                                   size_t *length_p)
{
    *length_p = sizeof(uct_gda_ft_wire_rkey_t);
    return uct_gda_ft_wire_rkey_pack(info, buf, max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fuzz_wire_format_t fmt = {
        sizeof(uct_gda_ft_rkey_info_t), fuzz_rkey_unpack, fuzz_rkey_pack
    };

    return fuzz_wire_run(&fmt, data, size);
}
