/*
 * libFuzzer harness: the header of every out-of-band message, read from a
 * TCP stream that anybody may connect to. An accepted header must be what
 * packing its AM id and length gives.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uct_gda_ft_wire_oob_hdr_t packed;
    uint32_t length;
    uint8_t am_id, *buf;

    buf = fuzz_copy(data, size);
    if (uct_gda_ft_wire_oob_hdr_unpack(buf, size, &am_id, &length, NULL) ==
        UCS_OK) {
        uct_gda_ft_wire_oob_hdr_pack(am_id, length, &packed);
        fuzz_expect_canonical(UCS_OK, (const uint8_t*)&packed, buf,
                              sizeof(packed));
    }
    free(buf);
    return 0;
}
