/*
 * RoCEv2 packet format of the software HCA: round trips, strict rejection
 * of malformed datagrams, and a fuzz loop that must never crash.
 */
#include "gda_ft_test.h"
#include "gda_ft_soft_wire.h"
#include "soft_harness.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static size_t build_write_only(uint8_t *pkt, size_t payload_len)
{
    gda_ft_roce_reth_t reth = {htobe64(0x1122334455667788ull),
                               htonl(0xabcd), htonl((uint32_t)payload_len)};
    size_t len;

    len  = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_WRITE_ONLY, 0x123456,
                                 0xfedcba, 1, payload_len, &reth,
                                 sizeof(reth));
    memset(pkt + len, 0x77, payload_len);
    len += payload_len;
    return len + gda_ft_roce_finish(pkt, len);
}

GDA_FT_TEST(soft_wire, write_only_round_trip)
{
    uint8_t pkt[256];
    gda_ft_roce_pkt_t parsed;
    size_t payload, len;

    for (payload = 0; payload < 9; ++payload) {
        len = build_write_only(pkt, payload);
        GDA_FT_ASSERT_EQ(len % 4, 0);
        GDA_FT_ASSERT_EQ(gda_ft_roce_parse(pkt, len, &parsed),
                         GDA_FT_ROCE_PARSE_OK);
        GDA_FT_ASSERT_EQ(parsed.opcode, GDA_FT_ROCE_WRITE_ONLY);
        GDA_FT_ASSERT_EQ(parsed.dqpn, 0x123456);
        GDA_FT_ASSERT_EQ(parsed.psn, 0xfedcba);
        GDA_FT_ASSERT_EQ(parsed.ackreq, 1);
        GDA_FT_ASSERT(parsed.reth != NULL);
        GDA_FT_ASSERT_EQ(ntohl(parsed.reth->rkey), 0xabcd);
        GDA_FT_ASSERT_EQ(ntohl(parsed.reth->dma_len), payload);
        GDA_FT_ASSERT_EQ(parsed.payload_len, payload);
    }
}

GDA_FT_TEST(soft_wire, every_truncation_rejected)
{
    uint8_t pkt[256];
    gda_ft_roce_pkt_t parsed;
    size_t len, cut;

    len = build_write_only(pkt, 13);
    for (cut = 0; cut < len; ++cut) {
        GDA_FT_ASSERT_NE(gda_ft_roce_parse(pkt, cut, &parsed),
                         GDA_FT_ROCE_PARSE_OK);
    }
}

GDA_FT_TEST(soft_wire, corruption_and_bad_fields_rejected)
{
    uint8_t pkt[256], copy[256];
    gda_ft_roce_pkt_t parsed;
    size_t len, i;
    unsigned bit;

    len = build_write_only(pkt, 16);
    /* any single bit flip is caught (by the ICRC if nothing else) */
    for (i = 0; i < len; ++i) {
        for (bit = 0; bit < 8; ++bit) {
            memcpy(copy, pkt, len);
            copy[i] ^= (uint8_t)(1u << bit);
            GDA_FT_ASSERT_NE(gda_ft_roce_parse(copy, len, &parsed),
                             GDA_FT_ROCE_PARSE_OK);
        }
    }

    /* reserved opcode, with a valid ICRC */
    memcpy(copy, pkt, len);
    copy[0] = 0x1d;
    gda_ft_roce_finish(copy, len - GDA_FT_ROCE_ICRC_LEN);
    GDA_FT_ASSERT_EQ(gda_ft_roce_parse(copy, len, &parsed),
                     GDA_FT_ROCE_PARSE_BAD_OPCODE);

    /* payload on an opcode that carries none, with a valid ICRC */
    len = gda_ft_roce_build_hdr(copy, GDA_FT_ROCE_ACKNOWLEDGE, 1, 1, 0, 4,
                                "\0\0\0\0", 4);
    memset(copy + len, 0, 4);
    len += 4;
    len += gda_ft_roce_finish(copy, len);
    GDA_FT_ASSERT_EQ(gda_ft_roce_parse(copy, len, &parsed),
                     GDA_FT_ROCE_PARSE_BAD_PAD);
}

GDA_FT_TEST(soft_wire, fuzz_never_crashes)
{
    uint8_t pkt[512];
    gda_ft_roce_pkt_t parsed;
    unsigned iter, ok = 0;
    size_t len;

    for (iter = 0; iter < 200000; ++iter) {
        len = build_write_only(pkt, iter % 64);
        /* mutate a few bytes, then fix the ICRC half of the time so that
         * the structural checks are exercised too */
        soft_fill(pkt + (iter % len), 1 + iter % 3, iter);
        if (iter & 1) {
            gda_ft_roce_finish(pkt, len - GDA_FT_ROCE_ICRC_LEN);
        }
        len = (iter % 7 == 0) ? (iter % len) : len;
        if (gda_ft_roce_parse(pkt, len, &parsed) == GDA_FT_ROCE_PARSE_OK) {
            /* whatever is accepted must lie inside the datagram */
            GDA_FT_ASSERT(parsed.payload >= pkt);
            GDA_FT_ASSERT(parsed.payload + parsed.payload_len <= pkt + len);
            ++ok;
        }
    }
    printf("%u of %u mutated packets parsed\n", ok, iter);
}
