/*
 * libFuzzer harness: a datagram as the soft HCA's engine receives it
 * (gda_ft_roce_parse). With the first byte odd, the rest gets a valid pad
 * and ICRC first (gda_ft_roce_finish), so that the fuzzer reaches the
 * header checks behind the CRC. A datagram accepted must point only
 * inside itself.
 */
#include "gda_ft_soft_wire.h"

#include <stdlib.h>
#include <string.h>

#define FUZZ_PKT_MAX (GDA_FT_ROCE_MAX_HDR + 4096 + 8)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t scratch[FUZZ_PKT_MAX + 8];
    gda_ft_roce_pkt_t pkt;
    uint8_t *buf;
    size_t len;

    if ((size < 1) || (size - 1 > FUZZ_PKT_MAX)) {
        return 0;
    }
    len = size - 1;
    memcpy(scratch, data + 1, len);
    if (data[0] & 1) {
        len += gda_ft_roce_finish(scratch, len);
    }
    /* exactly the datagram's bytes: AddressSanitizer sees any read past */
    buf = malloc(len ? len : 1);
    memcpy(buf, scratch, len);
    if ((gda_ft_roce_parse(buf, len, &pkt) == GDA_FT_ROCE_PARSE_OK) &&
        (pkt.payload_len > 0) &&
        ((pkt.payload < buf) || (pkt.payload + pkt.payload_len > buf + len))) {
        abort();   /* an accepted datagram points outside itself */
    }
    free(buf);
    return 0;
}
