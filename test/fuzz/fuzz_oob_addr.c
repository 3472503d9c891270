/*
 * libFuzzer harness: out-of-band addresses (a 6-byte device address and a
 * 2-byte interface address). The second byte splits the input between
 * them; an accepted pair must be what packing its address and port gives.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t dev_packed[sizeof(uct_gda_ft_wire_oob_dev_addr_t)];
    uint8_t iface_packed[sizeof(uint16_t)];
    uint8_t *dev, *iface;
    size_t dev_len, iface_len;
    uint16_t port;
    uint32_t ip;

    if (size < 1) {
        return 0;
    }
    dev_len   = ucs_min(data[0] % 16, size - 1);
    iface_len = size - 1 - dev_len;
    dev       = fuzz_copy(data + 1, dev_len);
    iface     = fuzz_copy(data + 1 + dev_len, iface_len);
    if (uct_gda_ft_wire_oob_addr_unpack(dev, dev_len, iface, iface_len, &ip,
                                        &port, NULL) == UCS_OK) {
        fuzz_expect_canonical(uct_gda_ft_wire_oob_addr_pack(
                                      ip, port, dev_packed,
                                      sizeof(dev_packed), iface_packed,
                                      sizeof(iface_packed)),
                              dev_packed, dev, sizeof(dev_packed));
        fuzz_expect_canonical(UCS_OK, iface_packed, iface,
                              sizeof(iface_packed));
    }
    free(dev);
    free(iface);
    return 0;
}
