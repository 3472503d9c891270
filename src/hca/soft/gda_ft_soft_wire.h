/*
 * RoCEv2 wire format of the software HCA.
 *
 * A packet is one UDP datagram to port 4791 carrying the InfiniBand transport
 * headers (BTH and the extended headers of the opcode), the payload padded to
 * 4 bytes, and a 4-byte ICRC, so that tshark's RoCE dissector decodes it.
 * The ICRC is a CRC32 over the transport headers and payload (the kernel owns
 * the IP/UDP headers, so they are not covered as on hardware).
 */
#ifndef GDA_FT_SOFT_WIRE_H_
#define GDA_FT_SOFT_WIRE_H_

#include <stddef.h>
#include <stdint.h>

#define GDA_FT_ROCE_UDP_PORT     4791
#define GDA_FT_ROCE_ICRC_LEN     4
#define GDA_FT_ROCE_DEFAULT_PKEY 0xffff
#define GDA_FT_ROCE_PSN_MASK     0xffffffu
#define GDA_FT_ROCE_MAX_HDR      64

/* RC opcodes (IBA Table 38; transport bits 000) */
enum {
    GDA_FT_ROCE_SEND_FIRST            = 0x00,
    GDA_FT_ROCE_SEND_MIDDLE           = 0x01,
    GDA_FT_ROCE_SEND_LAST             = 0x02,
    GDA_FT_ROCE_SEND_LAST_IMM         = 0x03,
    GDA_FT_ROCE_SEND_ONLY             = 0x04,
    GDA_FT_ROCE_SEND_ONLY_IMM         = 0x05,
    GDA_FT_ROCE_WRITE_FIRST           = 0x06,
    GDA_FT_ROCE_WRITE_MIDDLE          = 0x07,
    GDA_FT_ROCE_WRITE_LAST            = 0x08,
    GDA_FT_ROCE_WRITE_LAST_IMM        = 0x09,
    GDA_FT_ROCE_WRITE_ONLY            = 0x0a,
    GDA_FT_ROCE_WRITE_ONLY_IMM        = 0x0b,
    GDA_FT_ROCE_READ_REQUEST          = 0x0c,
    GDA_FT_ROCE_READ_RESPONSE_FIRST   = 0x0d,
    GDA_FT_ROCE_READ_RESPONSE_MIDDLE  = 0x0e,
    GDA_FT_ROCE_READ_RESPONSE_LAST    = 0x0f,
    GDA_FT_ROCE_READ_RESPONSE_ONLY    = 0x10,
    GDA_FT_ROCE_ACKNOWLEDGE           = 0x11,
    GDA_FT_ROCE_ATOMIC_ACKNOWLEDGE    = 0x12,
    GDA_FT_ROCE_COMPARE_SWAP          = 0x13,
    GDA_FT_ROCE_FETCH_ADD             = 0x14,
    /* Masked (extended) atomics have no IBA opcode; they use one from the
     * reserved RC range with the GDA_FT extended atomic header below. */
    GDA_FT_ROCE_MASKED_ATOMIC         = 0x1e
};

/* AETH syndrome (bits 7:5 select ACK / RNR NAK / NAK) */
#define GDA_FT_AETH_ACK               0x00
#define GDA_FT_AETH_RNR_NAK           0x20
#define GDA_FT_AETH_NAK               0x60
#define GDA_FT_AETH_TYPE_MASK         0x60
#define GDA_FT_AETH_CREDIT_INVALID    0x1f
#define GDA_FT_AETH_NAK_PSN_SEQ       0x0
#define GDA_FT_AETH_NAK_INVALID_REQ   0x1
#define GDA_FT_AETH_NAK_REMOTE_ACCESS 0x2
#define GDA_FT_AETH_NAK_REMOTE_OP     0x3

/* BTH flags byte: SE | M | PadCnt(2) | TVer(4) */
#define GDA_FT_BTH_SE                 0x80
#define GDA_FT_BTH_MIGREQ             0x40
#define GDA_FT_BTH_PAD_SHIFT          4
#define GDA_FT_BTH_ACKREQ             0x80000000u /* in apsn */

/* All fields big-endian */
typedef struct gda_ft_roce_bth {
    uint8_t  opcode;
    uint8_t  flags;
    uint16_t pkey;
    uint32_t dqpn;      /* F/B:2 | rsvd:6 | dest QP:24 */
    uint32_t apsn;      /* AckReq:1 | rsvd:7 | PSN:24 */
} __attribute__((packed)) gda_ft_roce_bth_t;

typedef struct gda_ft_roce_reth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
} __attribute__((packed)) gda_ft_roce_reth_t;

typedef struct gda_ft_roce_aeth {
    uint32_t syn_msn;   /* syndrome:8 | MSN:24 */
} __attribute__((packed)) gda_ft_roce_aeth_t;

typedef struct gda_ft_roce_atomic_eth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;
    uint64_t compare;
} __attribute__((packed)) gda_ft_roce_atomic_eth_t;

typedef struct gda_ft_roce_atomic_ack_eth {
    uint64_t orig;
} __attribute__((packed)) gda_ft_roce_atomic_ack_eth_t;

typedef struct gda_ft_roce_immdt {
    uint32_t imm;
} __attribute__((packed)) gda_ft_roce_immdt_t;

/* Extended (masked) atomic header, GDA_FT_ROCE_MASKED_ATOMIC */
enum {
    GDA_FT_ROCE_MASKED_CS = 0,
    GDA_FT_ROCE_MASKED_FA = 1
};

typedef struct gda_ft_roce_masked_eth {
    uint64_t va;
    uint32_t rkey;
    uint8_t  op;        /* GDA_FT_ROCE_MASKED_CS / _FA */
    uint8_t  log_size;  /* 2: 4 bytes, 3: 8 bytes */
    uint16_t reserved;
    uint64_t operand[4];/* CS: swap, compare, swap_mask, compare_mask;
                           FA: add, field_boundary, 0, 0 */
} __attribute__((packed)) gda_ft_roce_masked_eth_t;

_Static_assert(sizeof(gda_ft_roce_bth_t) == 12, "BTH size");
_Static_assert(sizeof(gda_ft_roce_reth_t) == 16, "RETH size");
_Static_assert(sizeof(gda_ft_roce_aeth_t) == 4, "AETH size");
_Static_assert(sizeof(gda_ft_roce_atomic_eth_t) == 28, "AtomicETH size");
_Static_assert(sizeof(gda_ft_roce_atomic_ack_eth_t) == 8, "AtomicAckETH");
_Static_assert(sizeof(gda_ft_roce_masked_eth_t) == 48, "masked ETH size");


/* A parsed packet: pointers into the datagram, host-order fields */
typedef struct gda_ft_roce_pkt {
    uint8_t                             opcode;
    uint8_t                             se;
    uint8_t                             ackreq;
    uint32_t                            dqpn;
    uint32_t                            psn;
    const gda_ft_roce_reth_t           *reth;
    const gda_ft_roce_aeth_t           *aeth;
    const gda_ft_roce_atomic_eth_t     *atomic;
    const gda_ft_roce_atomic_ack_eth_t *atomic_ack;
    const gda_ft_roce_masked_eth_t     *masked;
    const gda_ft_roce_immdt_t          *immdt;
    const uint8_t                      *payload;
    size_t                              payload_len;
} gda_ft_roce_pkt_t;


/* Why gda_ft_roce_parse() rejected a datagram */
typedef enum {
    GDA_FT_ROCE_PARSE_OK = 0,
    GDA_FT_ROCE_PARSE_TRUNCATED,
    GDA_FT_ROCE_PARSE_BAD_OPCODE,
    GDA_FT_ROCE_PARSE_BAD_VERSION,
    GDA_FT_ROCE_PARSE_BAD_ICRC,
    GDA_FT_ROCE_PARSE_BAD_PAD,
    GDA_FT_ROCE_PARSE_LAST
} gda_ft_roce_parse_result_t;


/* Opcode properties */
int gda_ft_roce_opcode_has_payload(uint8_t opcode);
int gda_ft_roce_opcode_is_response(uint8_t opcode);
int gda_ft_roce_opcode_is_first(uint8_t opcode);  /* FIRST or ONLY */
int gda_ft_roce_opcode_is_last(uint8_t opcode);   /* LAST or ONLY */
const char *gda_ft_roce_opcode_str(uint8_t opcode);

/* Validates a whole datagram (lengths, opcode, pad, ICRC) and fills pkt */
gda_ft_roce_parse_result_t gda_ft_roce_parse(const void *buf, size_t len,
                                             gda_ft_roce_pkt_t *pkt);

const char *gda_ft_roce_parse_result_str(gda_ft_roce_parse_result_t result);

/*
 * Builds the headers of a packet in buf (at least GDA_FT_ROCE_MAX_HDR
 * bytes) and returns their length. Extended headers are given by the caller
 * already in wire order; a NULL one is omitted.
 */
size_t gda_ft_roce_build_hdr(void *buf, uint8_t opcode, uint32_t dqpn,
                             uint32_t psn, int ackreq, size_t payload_len,
                             const void *ext, size_t ext_len);

/* Pad and ICRC after the payload; returns the trailer length */
size_t gda_ft_roce_finish(void *pkt, size_t hdr_payload_len);

/* Size of the pad for a payload length */
static inline unsigned gda_ft_roce_pad(size_t payload_len)
{
    return (unsigned)(-payload_len & 3);
}

/* 24-bit PSN arithmetic: a - b as a signed distance */
static inline int32_t gda_ft_psn_diff(uint32_t a, uint32_t b)
{
    return ((int32_t)((a - b) << 8)) >> 8;
}

static inline uint32_t gda_ft_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & GDA_FT_ROCE_PSN_MASK;
}

#endif
