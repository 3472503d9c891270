/*
 * The RoCEv2 wire format of the software HCA as an independent dissector
 * sees it: one packet of every RC opcode is built with gda_ft_roce_build_hdr()
 * and gda_ft_roce_finish(), wrapped in Ethernet + IPv4 + UDP (port 4791) and
 * written to a classic pcap file, which tshark decodes. Every decoded BTH and
 * extended header field must equal what was built, and tshark must report no
 * malformed packet. No capture privileges are needed: tshark only reads the
 * file. The tests skip when tshark is not installed (GDA_FT_TSHARK may name
 * the binary).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_test.h"
#include "gda_ft_soft_wire.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TS_MAX_PKTS     40
#define TS_MAX_PAYLOAD  256
#define TS_ETH_LEN      14
#define TS_IP_LEN       20
#define TS_UDP_LEN      8
#define TS_FRAME_MAX    (TS_ETH_LEN + TS_IP_LEN + TS_UDP_LEN + \
                         GDA_FT_ROCE_MAX_HDR + TS_MAX_PAYLOAD + 3 + \
                         GDA_FT_ROCE_ICRC_LEN)
#define TS_OUT_MAX      (256 * 1024)

/* Extended headers of a packet, in the order they follow the BTH */
enum {
    TS_RETH       = 1u << 0,
    TS_AETH       = 1u << 1,
    TS_ATOMIC     = 1u << 2,
    TS_ATOMIC_ACK = 1u << 3,
    TS_IMM        = 1u << 4
};

/* What one packet is built from, hence what tshark must decode */
typedef struct ts_spec {
    const char *name;
    uint8_t     opcode;
    uint32_t    dqpn;
    uint32_t    psn;
    int         ackreq;
    unsigned    hdrs;
    uint64_t    va;          /* RETH or AtomicETH */
    uint32_t    rkey;        /* RETH or AtomicETH */
    uint32_t    dma_len;     /* RETH */
    uint8_t     syndrome;    /* AETH */
    uint32_t    msn;         /* AETH */
    uint64_t    swap_add;    /* AtomicETH */
    uint64_t    compare;     /* AtomicETH */
    uint64_t    orig;        /* AtomicAckETH */
    uint32_t    imm;         /* ImmDt */
    size_t      payload_len;
} ts_spec_t;

/* One packet of every RC opcode of the HCA; the ACKNOWLEDGE as an ACK, an
 * RNR NAK and a NAK. Lengths cover every pad count, QPNs and PSNs the
 * extremes of their 24 bits. QPN 0 and 1 are left out: Wireshark decodes
 * SEND payloads to QP1 as management datagrams (GSI), as it should. */
static const ts_spec_t ts_specs[] = {
    {"SEND_FIRST", GDA_FT_ROCE_SEND_FIRST, 0x000011, 0x000000, 0,
     .payload_len = 64},
    {"SEND_MIDDLE", GDA_FT_ROCE_SEND_MIDDLE, 0x000011, 0x000001, 0,
     .payload_len = 64},
    {"SEND_LAST", GDA_FT_ROCE_SEND_LAST, 0x000011, 0x000002, 1,
     .payload_len = 13},
    {"SEND_LAST_IMM", GDA_FT_ROCE_SEND_LAST_IMM, 0x000002, 0x000003, 1,
     TS_IMM, .imm = 0xdeadbeef, .payload_len = 6},
    {"SEND_ONLY", GDA_FT_ROCE_SEND_ONLY, 0xabcdef, 0x7fffff, 1,
     .payload_len = 1},
    {"SEND_ONLY_IMM", GDA_FT_ROCE_SEND_ONLY_IMM, 0x123456, 0x800000, 1,
     TS_IMM, .imm = 0x01020304, .payload_len = 7},
    {"WRITE_FIRST", GDA_FT_ROCE_WRITE_FIRST, 0xffffff, 0xfffffe, 0, TS_RETH,
     .va = 0x00007f0011223340ull, .rkey = 0x00abcdef, .dma_len = 150,
     .payload_len = 64},
    {"WRITE_MIDDLE", GDA_FT_ROCE_WRITE_MIDDLE, 0xffffff, 0xffffff, 0,
     .payload_len = 64},
    {"WRITE_LAST", GDA_FT_ROCE_WRITE_LAST, 0xffffff, 0x000000, 1,
     .payload_len = 22},
    {"WRITE_LAST_IMM", GDA_FT_ROCE_WRITE_LAST_IMM, 0x000100, 0x000010, 1,
     TS_IMM, .imm = 0xcafef00d, .payload_len = 9},
    {"WRITE_ONLY", GDA_FT_ROCE_WRITE_ONLY, 0x0000ff, 0x123456, 1, TS_RETH,
     .va = 0xfedcba9876543210ull, .rkey = 0xffffffff, .dma_len = 5,
     .payload_len = 5},
    {"WRITE_ONLY_IMM", GDA_FT_ROCE_WRITE_ONLY_IMM, 0x00ff00, 0x654321, 1,
     TS_RETH | TS_IMM, .va = 0x1000, .rkey = 0x80000001, .dma_len = 3,
     .imm = 0xa5a55a5a, .payload_len = 3},
    {"READ_REQUEST", GDA_FT_ROCE_READ_REQUEST, 0x0a0b0c, 0x00abcd, 1, TS_RETH,
     .va = 0x8000000000000000ull, .rkey = 0x12345678, .dma_len = 200000},
    {"READ_RESPONSE_FIRST", GDA_FT_ROCE_READ_RESPONSE_FIRST, 0x0c0b0a,
     0x00abcd, 0, TS_AETH, .syndrome = GDA_FT_AETH_ACK | 0x0a,
     .msn = 0x000042, .payload_len = 64},
    {"READ_RESPONSE_MIDDLE", GDA_FT_ROCE_READ_RESPONSE_MIDDLE, 0x0c0b0a,
     0x00abce, 0, .payload_len = 64},
    {"READ_RESPONSE_LAST", GDA_FT_ROCE_READ_RESPONSE_LAST, 0x0c0b0a,
     0x00abcf, 0, TS_AETH, .syndrome = GDA_FT_AETH_ACK | 0x0b,
     .msn = 0x000043, .payload_len = 11},
    {"READ_RESPONSE_ONLY", GDA_FT_ROCE_READ_RESPONSE_ONLY, 0x0c0b0a,
     0x00abd0, 0, TS_AETH, .syndrome = GDA_FT_AETH_ACK |
     GDA_FT_AETH_CREDIT_INVALID, .msn = 0xffffff, .payload_len = 2},
    {"ACKNOWLEDGE(ACK)", GDA_FT_ROCE_ACKNOWLEDGE, 0x000777, 0x000555, 0,
     TS_AETH, .syndrome = GDA_FT_AETH_ACK | 0x05, .msn = 0x000001},
    {"ACKNOWLEDGE(RNR NAK)", GDA_FT_ROCE_ACKNOWLEDGE, 0x000777, 0x000556, 0,
     TS_AETH, .syndrome = GDA_FT_AETH_RNR_NAK | 0x0e, .msn = 0x000002},
    {"ACKNOWLEDGE(NAK remote access)", GDA_FT_ROCE_ACKNOWLEDGE, 0x000777,
     0x000557, 0, TS_AETH, .syndrome = GDA_FT_AETH_NAK |
     GDA_FT_AETH_NAK_REMOTE_ACCESS, .msn = 0x000003},
    {"ACKNOWLEDGE(NAK PSN sequence)", GDA_FT_ROCE_ACKNOWLEDGE, 0x000777,
     0x000558, 0, TS_AETH, .syndrome = GDA_FT_AETH_NAK |
     GDA_FT_AETH_NAK_PSN_SEQ, .msn = 0x800000},
    {"COMPARE_SWAP", GDA_FT_ROCE_COMPARE_SWAP, 0x345678, 0x000100, 1,
     TS_ATOMIC, .va = 0x00007f00aabbcc08ull, .rkey = 0x0000beef,
     .swap_add = 0x1111222233334444ull, .compare = 0x5555666677778888ull},
    {"FETCH_ADD", GDA_FT_ROCE_FETCH_ADD, 0x345678, 0x000101, 1, TS_ATOMIC,
     .va = 0x00007f00aabbcc10ull, .rkey = 0x0000beef,
     .swap_add = 0xffffffffffffffffull, .compare = 0},
    {"ATOMIC_ACKNOWLEDGE", GDA_FT_ROCE_ATOMIC_ACKNOWLEDGE, 0x876543,
     0x000101, 0, TS_AETH | TS_ATOMIC_ACK, .syndrome = GDA_FT_AETH_ACK |
     0x1f, .msn = 0x000044, .orig = 0x0123456789abcdefull}
};

#define TS_NUM_SPECS (sizeof(ts_specs) / sizeof(ts_specs[0]))

/* A built packet: the RoCE part (BTH .. ICRC) and the whole frame */
typedef struct ts_pkt {
    const ts_spec_t *spec;
    uint8_t          roce[TS_FRAME_MAX];
    size_t           roce_len;
    uint8_t          payload[TS_MAX_PAYLOAD];
    uint8_t          frame[TS_FRAME_MAX];
    size_t           frame_len;
} ts_pkt_t;

/* The fields tshark prints, in this order (Wireshark 4.0 names; the
 * AtomicETH VA and R_Key are reported with the RETH field names) */
static const char *ts_fields[] = {
    "frame.number",
    "frame.protocols",
    "ip.len",
    "ip.checksum.status",
    "udp.dstport",
    "udp.length",
    "infiniband.bth.opcode",
    "infiniband.bth.se",
    "infiniband.bth.m",
    "infiniband.bth.padcnt",
    "infiniband.bth.tver",
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.syndrome.opcode",
    "infiniband.aeth.syndrome.credit_count",
    "infiniband.aeth.syndrome.timer",
    "infiniband.aeth.syndrome.error_code",
    "infiniband.aeth.msn",
    "infiniband.atomiceth.swapdt",
    "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt",
    "infiniband.immdt",
    "data.data",
    "infiniband.invariant.crc"
};

enum {
    F_FRAME, F_PROTOCOLS, F_IP_LEN, F_IP_CSUM_STATUS, F_UDP_DPORT,
    F_UDP_LEN, F_OPCODE, F_SE, F_M, F_PADCNT, F_TVER, F_PKEY, F_DESTQP, F_A,
    F_PSN, F_VA, F_RKEY, F_DMALEN, F_SYNDROME, F_SYN_OPCODE, F_SYN_CREDIT,
    F_SYN_TIMER, F_SYN_ERROR, F_MSN, F_SWAP, F_CMP, F_ORIG, F_IMMDT,
    F_PAYLOAD, F_ICRC, F_LAST
};

_Static_assert(sizeof(ts_fields) / sizeof(ts_fields[0]) == F_LAST,
               "one name per field");

/* A temporary directory with the pcap and tshark's output */
typedef struct ts_ctx {
    char tshark[512];
    char dir[64];
    char pcap[128];
} ts_ctx_t;


static int ts_find_tshark(char *path, size_t max)
{
    const char *env = getenv("GDA_FT_TSHARK");
    const char *dirs = getenv("PATH");
    const char *p, *end;

    if ((env != NULL) && (*env != '\0')) {
        snprintf(path, max, "%s", env);
        return access(path, X_OK) == 0;
    }

    for (p = (dirs != NULL) ? dirs : "/usr/bin:/usr/sbin:/bin"; *p != '\0';
         p = (*end != '\0') ? end + 1 : end) {
        end = strchr(p, ':');
        if (end == NULL) {
            end = p + strlen(p);
        }
        if (end > p) {
            snprintf(path, max, "%.*s/tshark", (int)(end - p), p);
            if (access(path, X_OK) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

static void ts_ctx_init(ts_ctx_t *ctx)
{
    if (!ts_find_tshark(ctx->tshark, sizeof(ctx->tshark))) {
        GDA_FT_SKIP("tshark is not installed (not found in PATH; set "
                    "GDA_FT_TSHARK to its path, or install Wireshark's "
                    "tshark)");
    }

    strcpy(ctx->dir, "/tmp/gda_ft_tshark.XXXXXX");
    GDA_FT_ASSERT(mkdtemp(ctx->dir) != NULL);
    snprintf(ctx->pcap, sizeof(ctx->pcap), "%s/roce.pcap", ctx->dir);
}

/* Removes the directory and what the test wrote in it (on success only: a
 * failed test leaves it for a look) */
static void ts_ctx_cleanup(ts_ctx_t *ctx)
{
    struct dirent *entry;
    char path[sizeof(ctx->dir) + sizeof(entry->d_name) + 1];
    DIR *d;

    d = opendir(ctx->dir);
    GDA_FT_ASSERT(d != NULL);
    while ((entry = readdir(d)) != NULL) {
        if (entry->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", ctx->dir, entry->d_name);
            unlink(path);
        }
    }
    closedir(d);
    GDA_FT_ASSERT_EQ(rmdir(ctx->dir), 0);
}

static void ts_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint16_t ts_ip_checksum(const uint8_t *hdr, size_t len)
{
    uint32_t sum = 0;
    size_t i;

    for (i = 0; i < len; i += 2) {
        sum += ((uint32_t)hdr[i] << 8) | hdr[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/* Builds the RoCE packet of a spec with the HCA's own functions */
static void ts_build_roce(ts_pkt_t *pkt, const ts_spec_t *spec, unsigned idx)
{
    uint8_t ext[GDA_FT_ROCE_MAX_HDR];
    gda_ft_roce_reth_t reth;
    gda_ft_roce_aeth_t aeth;
    gda_ft_roce_atomic_eth_t atomic;
    gda_ft_roce_atomic_ack_eth_t atomic_ack;
    gda_ft_roce_immdt_t immdt;
    size_t ext_len = 0, len, i;

    /* wire order of the IBA: RETH, AETH, AtomicAckETH, AtomicETH, ImmDt */
    if (spec->hdrs & TS_RETH) {
        reth.va      = htobe64(spec->va);
        reth.rkey    = htonl(spec->rkey);
        reth.dma_len = htonl(spec->dma_len);
        memcpy(ext + ext_len, &reth, sizeof(reth));
        ext_len     += sizeof(reth);
    }
    if (spec->hdrs & TS_AETH) {
        aeth.syn_msn = htonl(((uint32_t)spec->syndrome << 24) |
                             (spec->msn & 0xffffff));
        memcpy(ext + ext_len, &aeth, sizeof(aeth));
        ext_len     += sizeof(aeth);
    }
    if (spec->hdrs & TS_ATOMIC_ACK) {
        atomic_ack.orig = htobe64(spec->orig);
        memcpy(ext + ext_len, &atomic_ack, sizeof(atomic_ack));
        ext_len        += sizeof(atomic_ack);
    }
    if (spec->hdrs & TS_ATOMIC) {
        atomic.va       = htobe64(spec->va);
        atomic.rkey     = htonl(spec->rkey);
        atomic.swap_add = htobe64(spec->swap_add);
        atomic.compare  = htobe64(spec->compare);
        memcpy(ext + ext_len, &atomic, sizeof(atomic));
        ext_len        += sizeof(atomic);
    }
    if (spec->hdrs & TS_IMM) {
        immdt.imm = htonl(spec->imm);
        memcpy(ext + ext_len, &immdt, sizeof(immdt));
        ext_len  += sizeof(immdt);
    }

    GDA_FT_ASSERT(spec->payload_len <= TS_MAX_PAYLOAD);
    for (i = 0; i < spec->payload_len; ++i) {
        pkt->payload[i] = (uint8_t)(0xa5 ^ (i * 7 + idx));
    }

    pkt->spec = spec;
    len       = gda_ft_roce_build_hdr(pkt->roce, spec->opcode, spec->dqpn,
                                      spec->psn, spec->ackreq,
                                      spec->payload_len, ext, ext_len);
    GDA_FT_ASSERT_EQ(len, sizeof(gda_ft_roce_bth_t) + ext_len);
    memcpy(pkt->roce + len, pkt->payload, spec->payload_len);
    len          += spec->payload_len;
    len          += gda_ft_roce_finish(pkt->roce, len);
    pkt->roce_len = len;
}

/* Ethernet + IPv4 + UDP (to port 4791, no UDP checksum) around the packet */
static void ts_wrap(ts_pkt_t *pkt, unsigned idx)
{
    static const uint8_t dmac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    static const uint8_t smac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    uint8_t *eth = pkt->frame;
    uint8_t *ip  = eth + TS_ETH_LEN;
    uint8_t *udp = ip + TS_IP_LEN;
    size_t udp_len = TS_UDP_LEN + pkt->roce_len;

    memcpy(eth, dmac, 6);
    memcpy(eth + 6, smac, 6);
    ts_put16(eth + 12, 0x0800);

    memset(ip, 0, TS_IP_LEN);
    ip[0] = 0x45;                                /* v4, 5 words */
    ts_put16(ip + 2, (uint16_t)(TS_IP_LEN + udp_len));
    ts_put16(ip + 4, (uint16_t)(0x1000 + idx));  /* identification */
    ts_put16(ip + 6, 0x4000);                    /* DF */
    ip[8] = 64;                                  /* TTL */
    ip[9] = 17;                                  /* UDP */
    ip[12] = 10; ip[13] = 0; ip[14] = 0; ip[15] = 1;
    ip[16] = 10; ip[17] = 0; ip[18] = 0; ip[19] = 2;
    ts_put16(ip + 10, ts_ip_checksum(ip, TS_IP_LEN));

    ts_put16(udp, (uint16_t)(49152 + idx));      /* source port: entropy */
    ts_put16(udp + 2, GDA_FT_ROCE_UDP_PORT);
    ts_put16(udp + 4, (uint16_t)udp_len);
    ts_put16(udp + 6, 0);

    memcpy(udp + TS_UDP_LEN, pkt->roce, pkt->roce_len);
    pkt->frame_len = TS_ETH_LEN + TS_IP_LEN + udp_len;
}

/* Classic pcap, microsecond timestamps, LINKTYPE_ETHERNET (1) */
static void ts_write_pcap(const char *path, const ts_pkt_t *pkts, size_t n)
{
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t  thiszone;
        uint32_t sigfigs, snaplen, linktype;
    } hdr = {0xa1b2c3d4, 2, 4, 0, 0, 65535, 1};
    struct {
        uint32_t ts_sec, ts_usec, incl_len, orig_len;
    } rec;
    FILE *f;
    size_t i;

    f = fopen(path, "wb");
    GDA_FT_ASSERT(f != NULL);
    GDA_FT_ASSERT_EQ(fwrite(&hdr, sizeof(hdr), 1, f), 1);
    for (i = 0; i < n; ++i) {
        rec.ts_sec   = 1700000000u;
        rec.ts_usec  = (uint32_t)i;
        rec.incl_len = (uint32_t)pkts[i].frame_len;
        rec.orig_len = (uint32_t)pkts[i].frame_len;
        GDA_FT_ASSERT_EQ(fwrite(&rec, sizeof(rec), 1, f), 1);
        GDA_FT_ASSERT_EQ(fwrite(pkts[i].frame, pkts[i].frame_len, 1, f), 1);
    }
    GDA_FT_ASSERT_EQ(fclose(f), 0);
}

/*
 * Runs tshark on the pcap with the given arguments; returns its stdout (a
 * static buffer) and fails the test on a nonzero exit. Personal Wireshark
 * preferences are kept out by pointing its configuration at the temp dir.
 *
 * The RPC-over-RDMA heuristic on InfiniBand payloads is disabled: in
 * Wireshark 4.0 it reads a 32-bit word at offset 12 of any SEND payload
 * before checking its length, so a SEND shorter than 16 bytes is reported
 * as "[Malformed Packet: RPCoRDMA]" whatever the RoCE headers hold.
 */
static const char *ts_run(const ts_ctx_t *ctx, const char *fmt, ...)
{
    static char out[TS_OUT_MAX];
    char args[4096], cmd[8192], err[4096], errpath[128];
    size_t len = 0, elen = 0;
    va_list ap;
    FILE *f;
    int status;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);

    snprintf(errpath, sizeof(errpath), "%s/tshark.err", ctx->dir);
    snprintf(cmd, sizeof(cmd),
             "WIRESHARK_CONFIG_DIR='%s' '%s' -n -r '%s' "
             "--disable-heuristic rpcrdma_infiniband %s 2>'%s' </dev/null",
             ctx->dir, ctx->tshark, ctx->pcap, args, errpath);

    fflush(NULL);
    f = popen(cmd, "r");
    GDA_FT_ASSERT(f != NULL);
    while ((len + 1 < sizeof(out)) && !feof(f)) {
        len += fread(out + len, 1, sizeof(out) - len - 1, f);
        if (ferror(f)) {
            break;
        }
    }
    out[len] = '\0';
    status   = pclose(f);

    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        f = fopen(errpath, "r");
        if (f != NULL) {
            elen = fread(err, 1, sizeof(err) - 1, f);
            fclose(f);
        }
        err[elen] = '\0';
        GDA_FT_FAIL("tshark failed (status 0x%x): %s\nstdout:\n%s\nstderr:\n%s",
                    status, cmd, out, err);
    }
    return out;
}

/* Splits a line of tab-separated fields; empty fields are empty strings */
static size_t ts_split(char *line, char **fields, size_t max)
{
    size_t n = 0;
    char *tab;

    for (;;) {
        GDA_FT_ASSERT(n < max);
        fields[n++] = line;
        tab = strchr(line, '\t');
        if (tab == NULL) {
            return n;
        }
        *tab = '\0';
        line = tab + 1;
    }
}

/* Context of a field check, for the failure message */
typedef struct ts_check {
    unsigned           frame;
    const ts_spec_t   *spec;
    const char *const *names;   /* of the fields */
    char             **fields;
} ts_check_t;

#define TS_FAIL(_c, _f, _fmt, ...) \
    GDA_FT_FAIL("frame %u (%s): %s = '%s': " _fmt, (_c)->frame, \
                (_c)->spec->name, (_c)->names[_f], (_c)->fields[_f], \
                ## __VA_ARGS__)

/* tshark prints integers in decimal or 0x-hex, booleans as 1/0 or
 * True/False, depending on the field and version */
static uint64_t ts_uint(const ts_check_t *c, int field)
{
    const char *s = c->fields[field];
    unsigned long long v;
    char *end;

    if (!strcmp(s, "True")) {
        return 1;
    } else if (!strcmp(s, "False")) {
        return 0;
    }

    errno = 0;
    v     = strtoull(s, &end, 0);
    if ((*s == '\0') || (*end != '\0') || (errno != 0)) {
        TS_FAIL(c, field, "not decoded as a number");
    }
    return v;
}

static void ts_expect(const ts_check_t *c, int field, uint64_t expected)
{
    uint64_t v = ts_uint(c, field);

    if (v != expected) {
        TS_FAIL(c, field, "decoded 0x%llx, built 0x%llx",
                (unsigned long long)v, (unsigned long long)expected);
    }
}

static void ts_expect_absent(const ts_check_t *c, int field)
{
    if (c->fields[field][0] != '\0') {
        TS_FAIL(c, field, "decoded a header the packet does not have");
    }
}

/* A bytes field (hex, with or without ':' separators) equals buf */
static void ts_expect_bytes(const ts_check_t *c, int field,
                            const uint8_t *buf, size_t len)
{
    const char *s = c->fields[field];
    unsigned byte;
    size_t i;

    for (i = 0; i < len; ++i) {
        if ((*s == ':') && (i > 0)) {
            ++s;
        }
        if (sscanf(s, "%2x", &byte) != 1) {
            TS_FAIL(c, field, "%zu bytes decoded, built %zu", i, len);
        }
        if (byte != buf[i]) {
            TS_FAIL(c, field, "byte %zu decoded 0x%02x, built 0x%02x", i,
                    byte, buf[i]);
        }
        s += 2;
    }
    if (*s != '\0') {
        TS_FAIL(c, field, "more than the %zu bytes built", len);
    }
}

static void ts_check_frame(const ts_check_t *c, const ts_pkt_t *pkt)
{
    const ts_spec_t *spec = pkt->spec;
    unsigned pad          = gda_ft_roce_pad(spec->payload_len);
    uint8_t syn_type      = spec->syndrome & GDA_FT_AETH_TYPE_MASK;
    uint8_t imm[4], padded[TS_MAX_PAYLOAD + 3];
    uint32_t icrc;

    /* the frame around it: RoCEv2 reached over Ethernet/IPv4/UDP */
    if (strcmp(c->fields[F_PROTOCOLS], "eth:ethertype:ip:udp:infiniband") &&
        strncmp(c->fields[F_PROTOCOLS], "eth:ethertype:ip:udp:infiniband:",
                32)) {
        TS_FAIL(c, F_PROTOCOLS, "not dissected as RoCEv2 over UDP");
    }
    ts_expect(c, F_IP_LEN, pkt->frame_len - TS_ETH_LEN);
    ts_expect(c, F_IP_CSUM_STATUS, 1);                  /* good */
    ts_expect(c, F_UDP_DPORT, GDA_FT_ROCE_UDP_PORT);
    ts_expect(c, F_UDP_LEN, TS_UDP_LEN + pkt->roce_len);

    /* BTH */
    ts_expect(c, F_OPCODE, spec->opcode);
    ts_expect(c, F_SE, 0);
    ts_expect(c, F_M, 0);
    ts_expect(c, F_PADCNT, pad);
    ts_expect(c, F_TVER, 0);
    ts_expect(c, F_PKEY, GDA_FT_ROCE_DEFAULT_PKEY);
    ts_expect(c, F_DESTQP, spec->dqpn);
    ts_expect(c, F_A, !!spec->ackreq);
    ts_expect(c, F_PSN, spec->psn);

    /* RETH; the AtomicETH VA and R_Key share its fields */
    if (spec->hdrs & (TS_RETH | TS_ATOMIC)) {
        ts_expect(c, F_VA, spec->va);
        ts_expect(c, F_RKEY, spec->rkey);
    } else {
        ts_expect_absent(c, F_VA);
        ts_expect_absent(c, F_RKEY);
    }
    if (spec->hdrs & TS_RETH) {
        ts_expect(c, F_DMALEN, spec->dma_len);
    } else {
        ts_expect_absent(c, F_DMALEN);
    }

    /* AETH: syndrome type (0 ACK, 1 RNR NAK, 3 NAK) and its low 5 bits */
    if (spec->hdrs & TS_AETH) {
        ts_expect(c, F_SYNDROME, spec->syndrome);
        ts_expect(c, F_SYN_OPCODE, syn_type >> 5);
        if (syn_type == GDA_FT_AETH_ACK) {
            ts_expect(c, F_SYN_CREDIT, spec->syndrome & 0x1f);
        } else if (syn_type == GDA_FT_AETH_RNR_NAK) {
            ts_expect(c, F_SYN_TIMER, spec->syndrome & 0x1f);
        } else {
            ts_expect(c, F_SYN_ERROR, spec->syndrome & 0x1f);
        }
        ts_expect(c, F_MSN, spec->msn);
    } else {
        ts_expect_absent(c, F_SYNDROME);
        ts_expect_absent(c, F_MSN);
    }

    /* AtomicETH */
    if (spec->hdrs & TS_ATOMIC) {
        ts_expect(c, F_SWAP, spec->swap_add);
        ts_expect(c, F_CMP, spec->compare);
    } else {
        ts_expect_absent(c, F_SWAP);
        ts_expect_absent(c, F_CMP);
    }

    /* AtomicAckETH */
    if (spec->hdrs & TS_ATOMIC_ACK) {
        ts_expect(c, F_ORIG, spec->orig);
    } else {
        ts_expect_absent(c, F_ORIG);
    }

    /* ImmDt (a bytes field, in wire order) */
    if (spec->hdrs & TS_IMM) {
        imm[0] = (uint8_t)(spec->imm >> 24);
        imm[1] = (uint8_t)(spec->imm >> 16);
        imm[2] = (uint8_t)(spec->imm >> 8);
        imm[3] = (uint8_t)spec->imm;
        ts_expect_bytes(c, F_IMMDT, imm, sizeof(imm));
    } else {
        ts_expect_absent(c, F_IMMDT);
    }

    /* payload (no upper layer protocol claims it, so the data dissector
     * shows it): Wireshark 4.0 ignores PadCnt here and shows the pad bytes
     * as payload, so expect them, zero, after it. Then the ICRC, the last
     * 4 bytes of the datagram. */
    if (spec->payload_len > 0) {
        memcpy(padded, pkt->payload, spec->payload_len);
        memset(padded + spec->payload_len, 0, pad);
        ts_expect_bytes(c, F_PAYLOAD, padded, spec->payload_len + pad);
    } else {
        ts_expect_absent(c, F_PAYLOAD);
    }
    memcpy(&icrc, pkt->roce + pkt->roce_len - GDA_FT_ROCE_ICRC_LEN,
           sizeof(icrc));
    ts_expect(c, F_ICRC, ntohl(icrc));
}

/* tshark -T fields of every frame; checks each against its packet */
static void ts_check_decode(const ts_ctx_t *ctx, const ts_pkt_t *pkts,
                            size_t n)
{
    char args[2048], *line, *next, *fields[F_LAST + 1];
    const char *out;
    ts_check_t c;
    size_t len = 0, i, nf;
    unsigned frame = 0;

    len += snprintf(args, sizeof(args),
                    "-o ip.check_checksum:TRUE -T fields -E separator=/t "
                    "-E occurrence=f");
    for (i = 0; i < F_LAST; ++i) {
        len += snprintf(args + len, sizeof(args) - len, " -e %s",
                        ts_fields[i]);
    }
    GDA_FT_ASSERT(len < sizeof(args));

    out = ts_run(ctx, "%s", args);
    printf("tshark decoded:\n%s", out);
    line = (char*)out;
    for (; (line != NULL) && (*line != '\0'); line = next) {
        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }

        nf = ts_split(line, fields, F_LAST + 1);
        if (nf != F_LAST) {
            GDA_FT_FAIL("tshark printed %zu fields, not %d: '%s'", nf,
                        F_LAST, line);
        }
        ++frame;
        GDA_FT_ASSERT(frame <= n);
        c.frame  = frame;
        c.spec   = pkts[frame - 1].spec;
        c.names  = ts_fields;
        c.fields = fields;
        ts_expect(&c, F_FRAME, frame);
        ts_check_frame(&c, &pkts[frame - 1]);
    }
    GDA_FT_ASSERT_EQ(frame, n);
}

/* Frame numbers tshark reports as malformed, as a string ("" when none) */
static const char *ts_malformed(const ts_ctx_t *ctx)
{
    return ts_run(ctx, "-Y _ws.malformed -T fields -e frame.number");
}

static void ts_build_all(ts_pkt_t *pkts)
{
    gda_ft_roce_pkt_t parsed;
    size_t i;

    for (i = 0; i < TS_NUM_SPECS; ++i) {
        ts_build_roce(&pkts[i], &ts_specs[i], (unsigned)i);
        /* the HCA's own parser accepts what tshark is given */
        GDA_FT_ASSERT_EQ(gda_ft_roce_parse(pkts[i].roce, pkts[i].roce_len,
                                           &parsed), GDA_FT_ROCE_PARSE_OK);
        GDA_FT_ASSERT_EQ(parsed.payload_len, ts_specs[i].payload_len);
        ts_wrap(&pkts[i], (unsigned)i);
    }
}

GDA_FT_TEST(soft_tshark, every_opcode_decoded)
{
    static ts_pkt_t pkts[TS_MAX_PKTS];
    const char *malformed;
    ts_ctx_t ctx;

    _Static_assert(TS_NUM_SPECS <= TS_MAX_PKTS, "room for every spec");

    ts_ctx_init(&ctx);
    ts_build_all(pkts);
    ts_write_pcap(ctx.pcap, pkts, TS_NUM_SPECS);

    malformed = ts_malformed(&ctx);
    if (malformed[0] != '\0') {
        GDA_FT_FAIL("tshark reports malformed frames (numbers):\n%s",
                    malformed);
    }

    ts_check_decode(&ctx, pkts, TS_NUM_SPECS);

    ts_ctx_cleanup(&ctx);
}

/* The malformed check above can fire: a WRITE_ONLY cut inside its RETH, in
 * a correct IPv4/UDP frame, is reported malformed by the same command */
GDA_FT_TEST(soft_tshark, truncated_packet_reported_malformed)
{
    static ts_pkt_t pkts[2];
    const ts_spec_t *write_only = NULL;
    const char *malformed;
    ts_ctx_t ctx;
    size_t i;

    for (i = 0; i < TS_NUM_SPECS; ++i) {
        if (ts_specs[i].opcode == GDA_FT_ROCE_WRITE_ONLY) {
            write_only = &ts_specs[i];
        }
    }
    GDA_FT_ASSERT(write_only != NULL);

    ts_ctx_init(&ctx);
    ts_build_roce(&pkts[0], write_only, 0);
    ts_wrap(&pkts[0], 0);
    ts_build_roce(&pkts[1], write_only, 1);
    pkts[1].roce_len = sizeof(gda_ft_roce_bth_t) + 8;   /* half a RETH */
    ts_wrap(&pkts[1], 1);
    ts_write_pcap(ctx.pcap, pkts, 2);

    malformed = ts_malformed(&ctx);
    GDA_FT_ASSERT(!strcmp(malformed, "2\n"));

    ts_ctx_cleanup(&ctx);
}

/*
 * GDA_FT_ROCE_MASKED_ATOMIC (0x1e) is no IBA opcode: Wireshark 4.0 decodes
 * its BTH, calls the opcode "Unknown (30)" and shows everything after the
 * BTH (the masked atomic header and the ICRC) as "Unknown/Vendor Specific
 * Data", without calling the packet malformed. Should a later Wireshark give
 * 0x1e a meaning, this test fails and flags the collision.
 */
GDA_FT_TEST(soft_tshark, masked_atomic_decoded_as_unknown_opcode)
{
    enum {
        M_PROTOCOLS, M_OPCODE, M_DESTQP, M_A, M_PSN, M_RETH, M_AETH,
        M_ATOMIC, M_DATA, M_ICRC, M_VENDOR, M_LAST
    };
    static const char *names[] = {
        "frame.protocols", "infiniband.bth.opcode", "infiniband.bth.destqp",
        "infiniband.bth.a", "infiniband.bth.psn", "infiniband.reth.va",
        "infiniband.aeth.syndrome", "infiniband.atomiceth.swapdt",
        "data.data", "infiniband.invariant.crc", "infiniband.vendor"
    };
    static const ts_spec_t spec = {"MASKED_ATOMIC", GDA_FT_ROCE_MASKED_ATOMIC,
                                   0x24680a, 0x13579b, 1};
    static ts_pkt_t pkt;
    gda_ft_roce_masked_eth_t masked;
    gda_ft_roce_pkt_t parsed;
    uint8_t expected[sizeof(masked) + GDA_FT_ROCE_ICRC_LEN];
    char args[1024], *fields[M_LAST + 1], *line, *nl;
    const char *malformed;
    ts_check_t c;
    ts_ctx_t ctx;
    size_t len = 0, i;

    _Static_assert(sizeof(names) / sizeof(names[0]) == M_LAST, "names");

    memset(&masked, 0, sizeof(masked));
    masked.va         = htobe64(0x00007f0012345678ull);
    masked.rkey       = htonl(0x0000beef);
    masked.op         = GDA_FT_ROCE_MASKED_CS;
    masked.log_size   = 3;
    masked.operand[0] = htobe64(0x1111111111111111ull);
    masked.operand[1] = htobe64(0x2222222222222222ull);
    masked.operand[2] = htobe64(0x00000000ffffffffull);
    masked.operand[3] = htobe64(0xffffffff00000000ull);

    ts_ctx_init(&ctx);
    pkt.spec     = &spec;
    pkt.roce_len = gda_ft_roce_build_hdr(pkt.roce, spec.opcode, spec.dqpn,
                                         spec.psn, spec.ackreq, 0, &masked,
                                         sizeof(masked));
    pkt.roce_len += gda_ft_roce_finish(pkt.roce, pkt.roce_len);
    GDA_FT_ASSERT_EQ(gda_ft_roce_parse(pkt.roce, pkt.roce_len, &parsed),
                     GDA_FT_ROCE_PARSE_OK);
    GDA_FT_ASSERT(parsed.masked != NULL);
    ts_wrap(&pkt, 0);
    ts_write_pcap(ctx.pcap, &pkt, 1);

    len += snprintf(args, sizeof(args),
                    "-T fields -E separator=/t -E occurrence=l");
    for (i = 0; i < M_LAST; ++i) {
        len += snprintf(args + len, sizeof(args) - len, " -e %s", names[i]);
    }
    GDA_FT_ASSERT(len < sizeof(args));
    line = (char*)ts_run(&ctx, "%s", args);
    printf("tshark decoded:\n%s", line);
    nl = strchr(line, '\n');
    GDA_FT_ASSERT((nl != NULL) && (nl[1] == '\0'));   /* one frame */
    *nl = '\0';
    GDA_FT_ASSERT_EQ(ts_split(line, fields, M_LAST + 1), M_LAST);

    /* the BTH as built, the opcode unknown to the dissector */
    c.frame  = 1;
    c.spec   = &spec;
    c.names  = names;
    c.fields = fields;
    GDA_FT_ASSERT(!strcmp(fields[M_PROTOCOLS],
                          "eth:ethertype:ip:udp:infiniband"));
    ts_expect(&c, M_OPCODE, GDA_FT_ROCE_MASKED_ATOMIC);
    ts_expect(&c, M_DESTQP, spec.dqpn);
    ts_expect(&c, M_A, 1);
    ts_expect(&c, M_PSN, spec.psn);

    /* no IBA header read into it; the masked atomic header and the ICRC
     * are the unknown data, byte for byte */
    for (i = M_RETH; i <= M_ICRC; ++i) {
        if (fields[i][0] != '\0') {
            GDA_FT_FAIL("%s = '%s': decoded from a masked atomic", names[i],
                        fields[i]);
        }
    }
    memcpy(expected, &masked, sizeof(masked));
    memcpy(expected + sizeof(masked),
           pkt.roce + pkt.roce_len - GDA_FT_ROCE_ICRC_LEN,
           GDA_FT_ROCE_ICRC_LEN);
    GDA_FT_ASSERT_EQ(pkt.roce_len, sizeof(gda_ft_roce_bth_t) +
                     sizeof(expected));
    ts_expect_bytes(&c, M_VENDOR, expected, sizeof(expected));

    malformed = ts_malformed(&ctx);
    if (malformed[0] != '\0') {
        GDA_FT_FAIL("tshark reports the masked atomic malformed");
    }

    ts_ctx_cleanup(&ctx);
}
