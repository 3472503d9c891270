/*
 * UCT transport wire formats: the packed remote key, the device address and
 * the endpoint address. Round trips byte for byte, every kind of malformed
 * input refused with its status, and fuzzing: random, truncated and mutated
 * buffers placed against a PROT_NONE guard page, so that a read past the
 * end crashes the test instead of going unnoticed. The same tests run under
 * valgrind (uct_wire.valgrind_clean).
 */
#include "gda_ft_test.h"

#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <ucs/algorithm/crc.h>
#include <arpa/inet.h>
#include <endian.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>


#define WIRE_MAX_LEN 2048  /* twice the largest blob (a channel directory of
                              64 channels, 784 bytes), for random lengths */


/* ---- helpers ------------------------------------------------------------- */

static unsigned test_wire_fuzz_iters(unsigned dflt)
{
    const char *env = getenv("GDA_FT_FUZZ_ITERS");

    return (env != NULL) ? (unsigned)strtoul(env, NULL, 0) : dflt;
}

static uint64_t test_wire_rand_state = 0x2545f4914f6cdd1dull;

static uint64_t test_wire_rand(void)
{
    /* xorshift64*: deterministic, so that a failure reproduces */
    test_wire_rand_state ^= test_wire_rand_state >> 12;
    test_wire_rand_state ^= test_wire_rand_state << 25;
    test_wire_rand_state ^= test_wire_rand_state >> 27;
    return test_wire_rand_state * 0x2545f4914f6cdd1dull;
}

/* A buffer whose last byte is the last byte before a PROT_NONE page */
typedef struct {
    uint8_t *map;
    size_t   page;
} guard_t;

static void guard_init(guard_t *g)
{
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    g->map  = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    GDA_FT_ASSERT(g->map != MAP_FAILED);
    GDA_FT_ASSERT_EQ(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
}

static void guard_cleanup(guard_t *g)
{
    munmap(g->map, 2 * g->page);
}

/* Copies len bytes so that they end exactly at the guard page */
static uint8_t *guard_place(guard_t *g, const void *data, size_t len)
{
    uint8_t *dst = g->map + g->page - len;

    memcpy(dst, data, len);
    return dst;
}

static void fill_random(uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (uint8_t)test_wire_rand();
    }
}

static uct_gda_ft_rkey_info_t make_rkey(uint32_t k0, uint32_t k1, int backup)
{
    uct_gda_ft_rkey_info_t info = {{k0, k1}, backup};
    return info;
}

/* RoCEv2 over IPv4 ports: ::ffff:10.0.0.1 and ::ffff:10.0.0.2 */
static uct_gda_ft_dev_addr_info_t make_dev_addr_ipv4(int backup)
{
    uct_gda_ft_dev_addr_info_t info;
    unsigned path;

    memset(&info, 0, sizeof(info));
    for (path = 0; path <= (unsigned)backup; ++path) {
        info.gid[path][10] = info.gid[path][11] = 0xff;
        info.gid[path][12] = 10;
        info.gid[path][15] = (uint8_t)(1 + path);
    }
    info.has_backup = backup;
    return info;
}

/* InfiniBand ports: fe80::/64, LIDs */
static uct_gda_ft_dev_addr_info_t make_dev_addr_gid(int backup)
{
    uct_gda_ft_dev_addr_info_t info;
    unsigned i;

    memset(&info, 0, sizeof(info));
    info.gid[0][0] = 0xfe;
    info.gid[0][1] = 0x80;
    for (i = 8; i < 16; ++i) {
        info.gid[0][i] = (uint8_t)(0x10 + i);
    }
    info.lid[0] = 0x1234;
    if (backup) {
        memcpy(info.gid[1], info.gid[0], 8);
        for (i = 8; i < 16; ++i) {
            info.gid[1][i] = (uint8_t)(0x80 + i);
        }
        info.lid[1] = 0xbeef;
    }
    info.has_backup = backup;
    return info;
}


/* ---- remote key ---------------------------------------------------------- */

GDA_FT_TEST(uct_wire, rkey_round_trip_and_layout)
{
    uct_gda_ft_wire_rkey_t wire;
    uct_gda_ft_rkey_info_t in, out;
    const char *reason = NULL;
    uint8_t buf[16];

    in = make_rkey(0x11223344, 0xa5a6a7a8, 1);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)));

    /* layout: magic "gF", version, flags, big-endian keys, check value */
    memcpy(&wire, buf, sizeof(wire));
    GDA_FT_ASSERT_EQ(buf[0], 'g');
    GDA_FT_ASSERT_EQ(buf[1], 'F');
    GDA_FT_ASSERT_EQ(wire.version, UCT_GDA_FT_WIRE_VERSION);
    GDA_FT_ASSERT_EQ(wire.flags, UCT_GDA_FT_WIRE_F_BACKUP);
    GDA_FT_ASSERT_EQ(buf[4], 0x11);
    GDA_FT_ASSERT_EQ(buf[7], 0x44);
    GDA_FT_ASSERT_EQ(buf[8], 0xa5);
    GDA_FT_ASSERT_EQ(ntohl(wire.check),
                     ucs_crc32(UCT_GDA_FT_RKEY_CHECK_SEED, buf, 12));

    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_unpack(buf, sizeof(buf), &out,
                                                 &reason));
    GDA_FT_ASSERT_EQ(out.key[0], 0x11223344);
    GDA_FT_ASSERT_EQ(out.key[1], 0xa5a6a7a8);
    GDA_FT_ASSERT_EQ(out.has_backup, 1);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_to_uct(&out),
                     0xa5a6a7a811223344ull);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_path(0xa5a6a7a811223344ull, 0),
                     0x11223344);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_path(0xa5a6a7a811223344ull, 1),
                     0xa5a6a7a8);

    /* without a backup HCA */
    in = make_rkey(0xdeadbeef, 0, 0);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)));
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_unpack(buf, sizeof(buf), &out,
                                                 NULL));
    GDA_FT_ASSERT_EQ(out.key[0], 0xdeadbeef);
    GDA_FT_ASSERT_EQ(out.key[1], 0);
    GDA_FT_ASSERT_EQ(out.has_backup, 0);
}

GDA_FT_TEST(uct_wire, rkey_pack_rejects_bad_input)
{
    uct_gda_ft_rkey_info_t in = make_rkey(1, 2, 0);
    uint8_t buf[32];

    /* a backup key without a backup */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    in = make_rkey(1, 2, 1);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_pack(&in, buf, 15),
                     UCS_ERR_BUFFER_TOO_SMALL);
}

GDA_FT_TEST(uct_wire, rkey_unpack_rejects_short_foreign_corrupt)
{
    uct_gda_ft_rkey_info_t in = make_rkey(0x01020304, 0x05060708, 1), out;
    uint8_t buf[16], bad[16];
    const char *reason;
    unsigned len, byte, bit;
    uint32_t check;
    guard_t g;

    guard_init(&g);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)));

    /* every truncation, against the guard page */
    for (len = 0; len < sizeof(buf); ++len) {
        reason = NULL;
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(guard_place(&g, buf, len),
                                                     len, &out, &reason),
                         UCS_ERR_MESSAGE_TRUNCATED);
        GDA_FT_ASSERT(reason != NULL);
    }
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(NULL, 16, &out, NULL),
                     UCS_ERR_MESSAGE_TRUNCATED);

    /* every single-bit corruption */
    for (byte = 0; byte < sizeof(buf); ++byte) {
        for (bit = 0; bit < 8; ++bit) {
            memcpy(bad, buf, sizeof(bad));
            bad[byte] ^= (uint8_t)(1u << bit);
            GDA_FT_ASSERT(uct_gda_ft_wire_rkey_unpack(bad, sizeof(bad), &out,
                                                      &reason) != UCS_OK);
        }
    }

    /* a foreign key: another transport's bytes */
    memset(bad, 0, sizeof(bad));
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(bad, sizeof(bad), &out,
                                                 &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "magic") != NULL);

    /* another version, with a valid check value */
    memcpy(bad, buf, sizeof(bad));
    bad[2] = UCT_GDA_FT_WIRE_VERSION + 1;
    check  = htonl(ucs_crc32(UCT_GDA_FT_RKEY_CHECK_SEED, bad, 12));
    memcpy(bad + 12, &check, 4);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(bad, sizeof(bad), &out,
                                                 &reason),
                     UCS_ERR_UNSUPPORTED);

    /* unknown flags, valid check value */
    memcpy(bad, buf, sizeof(bad));
    bad[3] |= 0x80;
    check   = htonl(ucs_crc32(UCT_GDA_FT_RKEY_CHECK_SEED, bad, 12));
    memcpy(bad + 12, &check, 4);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(bad, sizeof(bad), &out,
                                                 &reason),
                     UCS_ERR_INVALID_PARAM);

    /* a backup key without the backup flag, valid check value */
    memcpy(bad, buf, sizeof(bad));
    bad[3] = 0;
    check  = htonl(ucs_crc32(UCT_GDA_FT_RKEY_CHECK_SEED, bad, 12));
    memcpy(bad + 12, &check, 4);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_unpack(bad, sizeof(bad), &out,
                                                 &reason),
                     UCS_ERR_INVALID_PARAM);

    /* a longer buffer is fine: only the first 16 bytes are the key */
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_unpack(buf, sizeof(buf), &out,
                                                 NULL));
    guard_cleanup(&g);
}


/* ---- device address ------------------------------------------------------ */

GDA_FT_TEST(uct_wire, dev_addr_ipv4_round_trip_and_layout)
{
    uct_gda_ft_dev_addr_info_t in, out;
    uint8_t buf[32];
    int backup;

    for (backup = 0; backup <= 1; ++backup) {
        in = make_dev_addr_ipv4(backup);
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 10);
        memset(buf, 0xee, sizeof(buf));
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&in, buf, 10));
        GDA_FT_ASSERT_EQ(buf[0], UCT_GDA_FT_WIRE_VERSION);
        GDA_FT_ASSERT_EQ(buf[1], UCT_GDA_FT_WIRE_F_IPV4 |
                                 (backup ? UCT_GDA_FT_WIRE_F_BACKUP : 0));
        GDA_FT_ASSERT_MEM_EQ(buf + 2, in.gid[0] + 12, 4);
        GDA_FT_ASSERT_MEM_EQ(buf + 6, in.gid[1] + 12, 4);
        GDA_FT_ASSERT_EQ(buf[10], 0xee);     /* nothing written past it */

        memset(&out, 0xcc, sizeof(out));
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_unpack(buf, 10, &out,
                                                         NULL));
        GDA_FT_ASSERT_EQ(out.has_backup, backup);
        GDA_FT_ASSERT_EQ(out.lid[0], 0);
        GDA_FT_ASSERT_EQ(out.lid[1], 0);
        GDA_FT_ASSERT_MEM_EQ(out.gid, in.gid, sizeof(in.gid));
    }
}

GDA_FT_TEST(uct_wire, dev_addr_gid_round_trip_and_layout)
{
    uct_gda_ft_dev_addr_info_t in, out;
    uint8_t buf[32];
    int backup;

    for (backup = 0; backup <= 1; ++backup) {
        in = make_dev_addr_gid(backup);
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 30);
        GDA_FT_ASSERT(uct_gda_ft_wire_dev_addr_size(&in) <= 31); /* UCP */
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&in, buf, 30));
        GDA_FT_ASSERT_EQ(buf[1], UCT_GDA_FT_WIRE_F_GID |
                                 (backup ? UCT_GDA_FT_WIRE_F_BACKUP : 0));
        GDA_FT_ASSERT_EQ(buf[2], 0x12);      /* big-endian LID */
        GDA_FT_ASSERT_EQ(buf[3], 0x34);
        GDA_FT_ASSERT_MEM_EQ(buf + 6, in.gid[0], 8);
        GDA_FT_ASSERT_MEM_EQ(buf + 14, in.gid[0] + 8, 8);

        memset(&out, 0xcc, sizeof(out));
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_unpack(buf, 30, &out,
                                                         NULL));
        GDA_FT_ASSERT_EQ(out.has_backup, backup);
        GDA_FT_ASSERT_EQ(out.lid[0], 0x1234);
        GDA_FT_ASSERT_EQ(out.lid[1], backup ? 0xbeef : 0);
        GDA_FT_ASSERT_MEM_EQ(out.gid, in.gid, sizeof(in.gid));
    }
}

GDA_FT_TEST(uct_wire, dev_addr_forms_that_do_not_fit)
{
    uct_gda_ft_dev_addr_info_t in;
    uint8_t buf[32];

    /* two GIDs of different prefixes: no form holds them */
    in = make_dev_addr_gid(1);
    in.gid[1][0] = 0x20;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);

    /* a LID on the backup port: only the GID form holds it */
    in = make_dev_addr_ipv4(1);
    in.lid[1] = 7;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 30);

    /* no primary GID */
    memset(&in, 0, sizeof(in));
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);

    in = make_dev_addr_gid(0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_pack(&in, buf, 29),
                     UCS_ERR_BUFFER_TOO_SMALL);
}

GDA_FT_TEST(uct_wire, dev_addr_rejects_malformed)
{
    uct_gda_ft_dev_addr_info_t in, out;
    uint8_t ipv4[10], gid[30], bad[32];
    const char *reason;
    unsigned len;
    guard_t g;

    guard_init(&g);
    in = make_dev_addr_ipv4(1);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&in, ipv4, sizeof(ipv4)));
    in = make_dev_addr_gid(1);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&in, gid, sizeof(gid)));

    /* every truncation of both forms, against the guard page */
    for (len = 0; len < sizeof(ipv4); ++len) {
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(
                                 guard_place(&g, ipv4, len), len, &out,
                                 &reason),
                         UCS_ERR_MESSAGE_TRUNCATED);
    }
    for (len = 0; len < sizeof(gid); ++len) {
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(
                                 guard_place(&g, gid, len), len, &out,
                                 &reason),
                         UCS_ERR_MESSAGE_TRUNCATED);
    }

    memcpy(bad, ipv4, sizeof(ipv4));
    bad[0] = 0;                                   /* version */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_UNSUPPORTED);

    memcpy(bad, ipv4, sizeof(ipv4));
    bad[1] |= 0x40;                               /* unknown flag */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, ipv4, sizeof(ipv4));
    bad[1] |= UCT_GDA_FT_WIRE_F_GID;              /* two forms */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 30, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, ipv4, sizeof(ipv4));
    bad[1] = UCT_GDA_FT_WIRE_F_BACKUP;            /* no form */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, ipv4, sizeof(ipv4));
    memset(bad + 2, 0, 4);                        /* 0.0.0.0 primary */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, ipv4, sizeof(ipv4));
    memset(bad + 6, 0, 4);                        /* 0.0.0.0 backup */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, ipv4, sizeof(ipv4));
    bad[1] &= ~UCT_GDA_FT_WIRE_F_BACKUP;          /* backup without flag */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 10, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, gid, sizeof(gid));
    memset(bad + 14, 0, 8);                       /* zero interface ID */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 30, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    memcpy(bad, gid, sizeof(gid));
    bad[1] &= ~UCT_GDA_FT_WIRE_F_BACKUP;          /* backup without flag */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 30, &out, &reason),
                     UCS_ERR_INVALID_PARAM);

    /* an IPv4 address in the GID form: two encodings of one value */
    memset(bad, 0, sizeof(bad));
    bad[0]  = UCT_GDA_FT_WIRE_VERSION;
    bad[1]  = UCT_GDA_FT_WIRE_F_GID;
    bad[16] = bad[17] = 0xff;
    bad[18] = 10;
    bad[21] = 1;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(bad, 30, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "canonical") != NULL);
    guard_cleanup(&g);
}


/* ---- endpoint address ---------------------------------------------------- */

/* An endpoint address of `num` channels: its host channel's QPNs, a
 * mailbox and control QPs */
static void make_chan_ep_addr(uct_gda_ft_ep_addr_info_t *in, unsigned num)
{
    unsigned path;

    memset(in, 0, sizeof(*in));
    in->mbox_va      = 0x1122334455667788ull;
    in->mbox_rkey[0] = 0xa1a2a3a4;
    in->mbox_rkey[1] = 0xb1b2b3b4;
    in->ctl_qpn[0]   = 0xc00001;
    in->ctl_qpn[1]   = 0xc00002;
    in->num_chan     = num;
    for (path = 0; path < 2; ++path) {
        in->host.init_qpn[path]   = 0xa00000 + path;
        in->host.target_qpn[path] = 0xb00000 + path;
    }
}

GDA_FT_TEST(uct_wire, ep_addr_round_trip_and_layout)
{
    uct_gda_ft_ep_addr_info_t in, out;
    uint8_t buf[UCT_GDA_FT_WIRE_EP_ADDR_MAX];

    /* one size at any channel count, within UCP address v1's 63 bytes */
    GDA_FT_ASSERT_EQ(UCT_GDA_FT_WIRE_EP_ADDR_MAX, 36);

    make_chan_ep_addr(&in, UCT_GDA_FT_WIRE_CHAN_MAX);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)));
    GDA_FT_ASSERT_EQ(buf[0], UCT_GDA_FT_WIRE_EP_ADDR_VERSION);
    GDA_FT_ASSERT_EQ(buf[1], 65);                 /* count */
    GDA_FT_ASSERT_EQ(buf[2], 0xa1);               /* rkeys, big-endian */
    GDA_FT_ASSERT_EQ(buf[9], 0xb4);
    GDA_FT_ASSERT_EQ(buf[10], 0x11);              /* mailbox, big-endian */
    GDA_FT_ASSERT_EQ(buf[17], 0x88);
    GDA_FT_ASSERT_EQ(buf[18], 0xc0);              /* control QPs */
    GDA_FT_ASSERT_EQ(buf[23], 0x02);
    GDA_FT_ASSERT_EQ(buf[24], 0xa0);              /* ch 0 primary init */
    GDA_FT_ASSERT_EQ(buf[26], 0x00);
    GDA_FT_ASSERT_EQ(buf[29], 0x01);              /* ch 0 backup init */
    GDA_FT_ASSERT_EQ(buf[30], 0xb0);              /* ch 0 primary target */
    GDA_FT_ASSERT_EQ(buf[35], 0x01);              /* ch 0 backup target */
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_unpack(buf, sizeof(buf), &out,
                                                    NULL));
    GDA_FT_ASSERT_EQ(out.num_chan, 65);
    GDA_FT_ASSERT_MEM_EQ(&out.host, &in.host, sizeof(in.host));
    GDA_FT_ASSERT_EQ(out.mbox_va, 0x1122334455667788ull);
    GDA_FT_ASSERT_EQ(out.mbox_rkey[0], 0xa1a2a3a4);
    GDA_FT_ASSERT_EQ(out.mbox_rkey[1], 0xb1b2b3b4);
    GDA_FT_ASSERT_EQ(out.ctl_qpn[0], 0xc00001);
    GDA_FT_ASSERT_EQ(out.ctl_qpn[1], 0xc00002);

    /* the host channel alone, without a backup key */
    make_chan_ep_addr(&in, 1);
    in.mbox_rkey[1] = 0;
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_pack(&in, buf, 36));
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_unpack(buf, 36, &out, NULL));
    GDA_FT_ASSERT_EQ(out.num_chan, 1);
    GDA_FT_ASSERT_EQ(out.mbox_rkey[1], 0);
    GDA_FT_ASSERT_MEM_EQ(&out.host, &in.host, sizeof(in.host));
}

GDA_FT_TEST(uct_wire, ep_addr_rejects_malformed)
{
    uint8_t buf[UCT_GDA_FT_WIRE_EP_ADDR_MAX], bad[sizeof(buf)];
    uct_gda_ft_ep_addr_info_t in, out;
    const char *reason;
    unsigned len;
    guard_t g;

    make_chan_ep_addr(&in, 3);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)));

    /* every truncation is refused, none read past the end */
    guard_init(&g);
    for (len = 0; len < sizeof(buf); ++len) {
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(
                                 guard_place(&g, buf, len), len, &out,
                                 &reason),
                         UCS_ERR_MESSAGE_TRUNCATED);
    }
    guard_cleanup(&g);

    memcpy(bad, buf, sizeof(bad));
    bad[0] = 0xff;                                /* another version */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(bad, sizeof(bad), &out,
                                                    &reason),
                     UCS_ERR_UNSUPPORTED);
    memcpy(bad, buf, sizeof(bad));
    bad[1] = 0;                                   /* no channels */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(bad, sizeof(bad), &out,
                                                    &reason),
                     UCS_ERR_INVALID_PARAM);
    bad[1] = 66;                                  /* beyond the most */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(bad, sizeof(bad), &out,
                                                    &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "[1, 65]") != NULL);
    memcpy(bad, buf, sizeof(bad));
    memset(bad + 33, 0, 3);                       /* zero channel QPN */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(bad, sizeof(bad), &out,
                                                    &reason),
                     UCS_ERR_INVALID_PARAM);
    memcpy(bad, buf, sizeof(bad));
    memset(bad + 21, 0, 3);                       /* zero control QPN */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_unpack(bad, sizeof(bad), &out,
                                                    &reason),
                     UCS_ERR_INVALID_PARAM);

    /* what the layout cannot carry */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, 35),
                     UCS_ERR_BUFFER_TOO_SMALL);
    in.num_chan = UCT_GDA_FT_WIRE_CHAN_MAX + 1;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    in.num_chan = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    make_chan_ep_addr(&in, 1);
    in.host.target_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    make_chan_ep_addr(&in, 1);
    in.host.init_qpn[0] = 0x1000000;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    make_chan_ep_addr(&in, 1);
    in.ctl_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
}


/* ---- channel directory --------------------------------------------------- */

#define DIR_MBOX 0x7766554433221100ull

/* A directory of `num` device channels of the endpoint whose mailbox is
 * DIR_MBOX */
static void make_chan_dir(uct_gda_ft_chan_dir_info_t *in, unsigned num)
{
    unsigned i, path;

    memset(in, 0, sizeof(*in));
    in->mbox_va  = DIR_MBOX;
    in->num_chan = num;
    for (i = 0; i < num; ++i) {
        for (path = 0; path < 2; ++path) {
            in->chan[i].init_qpn[path]   = 0xa00000 + i * 16 + path;
            in->chan[i].target_qpn[path] = 0xb00000 + i * 16 + path;
        }
    }
}

GDA_FT_TEST(uct_wire, chan_dir_round_trip_and_layout)
{
    uct_gda_ft_chan_dir_info_t in, out;
    uint8_t buf[UCT_GDA_FT_WIRE_DIR_MAX];
    unsigned num;

    GDA_FT_ASSERT_EQ(UCT_GDA_FT_WIRE_DIR_MAX, 16 + 64 * 12);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_size(32), 16 + 32 * 12);
    /* the mailbox holds both directories in one page */
    GDA_FT_ASSERT(sizeof(uct_gda_ft_mbox_t) <= 4096);

    make_chan_dir(&in, 64);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)));
    GDA_FT_ASSERT_EQ(buf[0], UCT_GDA_FT_WIRE_DIR_VERSION);
    GDA_FT_ASSERT_EQ(buf[1], 64);                 /* count */
    GDA_FT_ASSERT_EQ(buf[2], 0x03);               /* length 784, BE */
    GDA_FT_ASSERT_EQ(buf[3], 0x10);
    GDA_FT_ASSERT_EQ(buf[8], 0x77);               /* mailbox, BE */
    GDA_FT_ASSERT_EQ(buf[15], 0x00);
    GDA_FT_ASSERT_EQ(buf[16], 0xa0);              /* ch 1 primary init */
    GDA_FT_ASSERT_EQ(buf[21], 0x01);              /* ch 1 backup init */
    GDA_FT_ASSERT_EQ(buf[22], 0xb0);              /* ch 1 primary target */
    GDA_FT_ASSERT_EQ(buf[16 + 63 * 12 + 9], 0xb0); /* ch 64 backup target */
    GDA_FT_ASSERT_EQ(buf[16 + 63 * 12 + 11], 0xf1);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_unpack(buf, sizeof(buf), 64,
                                                     DIR_MBOX, &out, NULL));
    GDA_FT_ASSERT_EQ(out.num_chan, 64);
    GDA_FT_ASSERT_EQ(out.mbox_va, DIR_MBOX);
    GDA_FT_ASSERT_MEM_EQ(out.chan, in.chan, sizeof(in.chan));

    for (num = 1; num <= 64; num *= 2) {
        make_chan_dir(&in, num);
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_pack(
                &in, buf, uct_gda_ft_wire_chan_dir_size(num)));
        memset(&out, 0, sizeof(out));
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_unpack(
                buf, uct_gda_ft_wire_chan_dir_size(num), num, DIR_MBOX, &out,
                NULL));
        GDA_FT_ASSERT_EQ(out.num_chan, num);
        GDA_FT_ASSERT_MEM_EQ(out.chan, in.chan, num * sizeof(in.chan[0]));
    }
}

GDA_FT_TEST(uct_wire, chan_dir_rejects_malformed_and_truncated)
{
    uint8_t buf[UCT_GDA_FT_WIRE_DIR_MAX], bad[sizeof(buf)];
    size_t size = uct_gda_ft_wire_chan_dir_size(32);
    uct_gda_ft_chan_dir_info_t in, out, orig;
    const char *reason;
    unsigned len;
    guard_t g;

    make_chan_dir(&in, 32);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)));
    memset(&orig, 0x5a, sizeof(orig));
    out = orig;

    /* every truncation of the bytes is refused, none read past the end */
    guard_init(&g);
    for (len = 0; len < size; ++len) {
        GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(
                                 guard_place(&g, buf, len), len, 32,
                                 DIR_MBOX, &out, &reason),
                         UCS_ERR_MESSAGE_TRUNCATED);
    }
    guard_cleanup(&g);
    GDA_FT_ASSERT_MEM_EQ(&out, &orig, sizeof(out));   /* untouched */

    /* a length that ends inside the channels */
    memcpy(bad, buf, sizeof(bad));
    bad[2] = 0;
    bad[3] = 16 + 12;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_MESSAGE_TRUNCATED);
    GDA_FT_ASSERT(strstr(reason, "ends inside its channels") != NULL);
    /* a longer one */
    bad[2] = 0x03;
    bad[3] = 0x10;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    /* another version */
    memcpy(bad, buf, sizeof(bad));
    bad[0] = 2;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_UNSUPPORTED);
    /* counts out of range */
    memcpy(bad, buf, sizeof(bad));
    bad[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    bad[1] = 65;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "[1, 64]") != NULL);
    /* a byte of a channel changed: the check value */
    memcpy(bad, buf, sizeof(bad));
    bad[100] ^= 0x40;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "check value") != NULL);
    /* zeros */
    memset(bad, 0, sizeof(bad));
    GDA_FT_ASSERT(uct_gda_ft_wire_chan_dir_unpack(bad, sizeof(bad), 32,
                                                  DIR_MBOX, &out, &reason) !=
                  UCS_OK);
    /* another endpoint's, or a count the address did not say */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(buf, sizeof(buf), 31,
                                                     DIR_MBOX, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_unpack(buf, sizeof(buf), 32,
                                                     DIR_MBOX + 64, &out,
                                                     &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT(strstr(reason, "another endpoint") != NULL);
    GDA_FT_ASSERT_MEM_EQ(&out, &orig, sizeof(out));   /* untouched */

    /* what the layout cannot carry */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_pack(&in, buf, size - 1),
                     UCS_ERR_BUFFER_TOO_SMALL);
    in.num_chan = 65;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    in.num_chan = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    make_chan_dir(&in, 32);
    in.chan[31].target_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
}


/* ---- fuzzing ------------------------------------------------------------- */

typedef enum {
    BLOB_RKEY, BLOB_DEV_ADDR, BLOB_EP_ADDR,
    BLOB_OOB_ADDR,  /* out-of-band device address (6) + iface address (2) */
    BLOB_OOB_HDR,
    BLOB_CHAN_DIR   /* checked against the count and mailbox it says */
} blob_t;

#define OOB_DEV_LEN  sizeof(uct_gda_ft_wire_oob_dev_addr_t)

/* An out-of-band address of len bytes: its device part, then its port */
static ucs_status_t oob_addr_unpack(const uint8_t *buf, size_t len,
                                    uint32_t *ip, uint16_t *port,
                                    const char **reason)
{
    size_t dev_len = (len < OOB_DEV_LEN) ? len : OOB_DEV_LEN;

    return uct_gda_ft_wire_oob_addr_unpack(buf, dev_len, buf + dev_len,
                                           len - dev_len, ip, port, reason);
}

/* Largest encoding of a blob */
static size_t blob_size(blob_t blob)
{
    switch (blob) {
    case BLOB_RKEY:     return sizeof(uct_gda_ft_wire_rkey_t);
    case BLOB_DEV_ADDR: return UCT_GDA_FT_WIRE_DEV_ADDR_MAX;
    case BLOB_OOB_ADDR: return OOB_DEV_LEN + sizeof(uint16_t);
    case BLOB_OOB_HDR:  return sizeof(uct_gda_ft_wire_oob_hdr_t);
    case BLOB_CHAN_DIR: return UCT_GDA_FT_WIRE_DIR_MAX;
    default:            return UCT_GDA_FT_WIRE_EP_ADDR_MAX;
    }
}

/*
 * Unpacks buf; when it is accepted, packs the result again and requires the
 * same bytes (no two encodings of one value, nothing unchecked). Returns
 * whether it was accepted.
 */
static int blob_check(blob_t blob, const uint8_t *buf, size_t len)
{
    uct_gda_ft_rkey_info_t rkey;
    uct_gda_ft_dev_addr_info_t dev;
    uct_gda_ft_ep_addr_info_t ep;
    uct_gda_ft_chan_dir_info_t dir;
    uint8_t again[WIRE_MAX_LEN];
    const char *reason = NULL;
    size_t packed      = blob_size(blob);
    ucs_status_t status;
    uint64_t mbox_be;
    uint32_t ip, length;
    uint16_t port;
    uint8_t am_id;

    switch (blob) {
    case BLOB_OOB_ADDR:
        status = oob_addr_unpack(buf, len, &ip, &port, &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT_OK(uct_gda_ft_wire_oob_addr_pack(
                    ip, port, again, OOB_DEV_LEN, again + OOB_DEV_LEN,
                    sizeof(port)));
        }
        break;
    case BLOB_OOB_HDR:
        status = uct_gda_ft_wire_oob_hdr_unpack(buf, len, &am_id, &length,
                                                &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT(am_id < UCT_GDA_FT_WIRE_AM_ID_MAX);
            GDA_FT_ASSERT(length <= UCT_GDA_FT_OOB_MAX_PAYLOAD);
            uct_gda_ft_wire_oob_hdr_pack(am_id, length,
                                         (uct_gda_ft_wire_oob_hdr_t*)again);
        }
        break;
    case BLOB_CHAN_DIR:
        mbox_be = 0;
        if (len >= 16) {
            memcpy(&mbox_be, buf + 8, sizeof(mbox_be));
        }
        status = uct_gda_ft_wire_chan_dir_unpack(buf, len,
                                                 (len >= 2) ? buf[1] : 0,
                                                 be64toh(mbox_be), &dir,
                                                 &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_pack(&dir, again,
                                                           sizeof(again)));
            packed = uct_gda_ft_wire_chan_dir_size(dir.num_chan);
        }
        break;
    case BLOB_RKEY:
        status = uct_gda_ft_wire_rkey_unpack(buf, len, &rkey, &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&rkey, again,
                                                       sizeof(again)));
        }
        break;
    case BLOB_DEV_ADDR:
        status = uct_gda_ft_wire_dev_addr_unpack(buf, len, &dev, &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&dev, again,
                                                           sizeof(again)));
            packed = uct_gda_ft_wire_dev_addr_size(&dev);
        }
        break;
    default:
        status = uct_gda_ft_wire_ep_addr_unpack(buf, len, &ep, &reason);
        if (status == UCS_OK) {
            GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_pack(&ep, again,
                                                          sizeof(again)));
        }
        break;
    }

    if (status != UCS_OK) {
        GDA_FT_ASSERT((status == UCS_ERR_MESSAGE_TRUNCATED) ||
                      (status == UCS_ERR_UNSUPPORTED) ||
                      (status == UCS_ERR_INVALID_PARAM));
        GDA_FT_ASSERT((reason != NULL) && (reason[0] != '\0'));
        return 0;
    }

    GDA_FT_ASSERT(len >= packed);
    GDA_FT_ASSERT_MEM_EQ(again, buf, packed);
    return 1;
}

/* Packs a random valid blob into buf; returns its size */
static size_t blob_valid(blob_t blob, uint8_t *buf)
{
    uct_gda_ft_rkey_info_t rkey = make_rkey((uint32_t)test_wire_rand(),
                                            (uint32_t)test_wire_rand(), 1);
    uct_gda_ft_dev_addr_info_t dev = (test_wire_rand() & 1) ?
                                     make_dev_addr_ipv4(test_wire_rand() & 1) :
                                     make_dev_addr_gid(test_wire_rand() & 1);
    uct_gda_ft_ep_addr_info_t ep = {test_wire_rand(),
                                    {(uint32_t)test_wire_rand(),
                                     (uint32_t)test_wire_rand()},
                                    {1 + (test_wire_rand() & 0xfffffe),
                                     1 + (test_wire_rand() & 0xfffffe)}};
    uct_gda_ft_chan_dir_info_t dir;
    uint32_t qpn;
    unsigned i;

    switch (blob) {
    case BLOB_CHAN_DIR:
        dir.mbox_va  = test_wire_rand();
        dir.num_chan = 1 + test_wire_rand() % UCT_GDA_FT_WIRE_DEV_CHAN_MAX;
        for (i = 0; i < dir.num_chan * 4; ++i) {
            qpn = 1 + (test_wire_rand() & 0xfffffe);
            if (i & 2) {
                dir.chan[i / 4].target_qpn[i & 1] = qpn;
            } else {
                dir.chan[i / 4].init_qpn[i & 1] = qpn;
            }
        }
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_chan_dir_pack(&dir, buf,
                                                       WIRE_MAX_LEN));
        return uct_gda_ft_wire_chan_dir_size(dir.num_chan);
    case BLOB_OOB_ADDR:
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_oob_addr_pack(
                (uint32_t)test_wire_rand() | 1, (uint16_t)test_wire_rand() | 1,
                buf, OOB_DEV_LEN, buf + OOB_DEV_LEN, sizeof(uint16_t)));
        return blob_size(blob);
    case BLOB_OOB_HDR:
        uct_gda_ft_wire_oob_hdr_pack(test_wire_rand() %
                                     UCT_GDA_FT_WIRE_AM_ID_MAX,
                                     test_wire_rand() %
                                     (UCT_GDA_FT_OOB_MAX_PAYLOAD + 1),
                                     (uct_gda_ft_wire_oob_hdr_t*)buf);
        return blob_size(blob);
    case BLOB_RKEY:
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&rkey, buf, WIRE_MAX_LEN));
        return sizeof(uct_gda_ft_wire_rkey_t);
    case BLOB_DEV_ADDR:
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&dev, buf,
                                                       WIRE_MAX_LEN));
        return uct_gda_ft_wire_dev_addr_size(&dev);
    default:
        ep.num_chan = 1 + test_wire_rand() % UCT_GDA_FT_WIRE_CHAN_MAX;
        for (i = 0; i < 4; ++i) {
            qpn = 1 + (test_wire_rand() & 0xfffffe);
            if (i & 2) {
                ep.host.target_qpn[i & 1] = qpn;
            } else {
                ep.host.init_qpn[i & 1] = qpn;
            }
        }
        GDA_FT_ASSERT_OK(uct_gda_ft_wire_ep_addr_pack(&ep, buf, WIRE_MAX_LEN));
        return UCT_GDA_FT_WIRE_EP_ADDR_MAX;
    }
}

static void blob_fuzz(blob_t blob, unsigned iters, unsigned *accepted_p,
                      unsigned *mutated_accepted_p)
{
    uint8_t buf[WIRE_MAX_LEN], orig[WIRE_MAX_LEN];
    unsigned i, n, accepted = 0, mutated_accepted = 0;
    size_t len, valid, size = blob_size(blob);
    guard_t g;

    guard_init(&g);
    for (i = 0; i < iters; ++i) {
        memset(buf, 0, sizeof(buf));
        switch (i % 3) {
        case 0: /* random bytes, random length */
            len = test_wire_rand() % (size * 2 + 1);
            fill_random(buf, len);
            accepted += blob_check(blob, guard_place(&g, buf, len), len);
            break;
        case 1: /* a valid blob, truncated */
            valid = blob_valid(blob, buf);
            len   = test_wire_rand() % (valid + 1);
            GDA_FT_ASSERT_EQ(blob_check(blob, guard_place(&g, buf, len), len),
                             len == valid);
            break;
        default: /* a valid blob with 1..4 random bytes changed */
            valid = blob_valid(blob, buf);
            memcpy(orig, buf, valid);
            for (n = 1 + (test_wire_rand() % 4); n > 0; --n) {
                buf[test_wire_rand() % valid] = (uint8_t)test_wire_rand();
            }
            if (!memcmp(orig, buf, valid)) {
                /* the "changes" wrote the same bytes back */
                GDA_FT_ASSERT(blob_check(blob, guard_place(&g, buf, valid),
                                         valid));
                break;
            }
            mutated_accepted += blob_check(blob, guard_place(&g, buf, valid),
                                           valid);
            break;
        }
    }
    guard_cleanup(&g);
    *accepted_p         = accepted;
    *mutated_accepted_p = mutated_accepted;
}

GDA_FT_TEST(uct_wire, fuzz_rkey)
{
    unsigned iters = test_wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_RKEY, iters, &random_ok, &mutated_ok);
    /* the check value leaves random and mutated keys no chance */
    GDA_FT_ASSERT_EQ(random_ok, 0);
    GDA_FT_ASSERT_EQ(mutated_ok, 0);
    printf("%u rkey buffers, none accepted\n", iters);
}

GDA_FT_TEST(uct_wire, fuzz_dev_addr)
{
    unsigned iters = test_wire_fuzz_iters(300000), random_ok, mutated_ok;

    /* a GID is opaque: mutated GIDs are valid addresses, and each accepted
     * one was checked to re-pack to the same bytes */
    blob_fuzz(BLOB_DEV_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u device addresses: %u random and %u mutated accepted\n", iters,
           random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_ep_addr)
{
    unsigned iters = test_wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_EP_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u endpoint addresses: %u random and %u mutated accepted\n",
           iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_chan_dir)
{
    unsigned iters = test_wire_fuzz_iters(100000), random_ok, mutated_ok;

    /* the check value leaves random and mutated directories no chance */
    blob_fuzz(BLOB_CHAN_DIR, iters, &random_ok, &mutated_ok);
    GDA_FT_ASSERT_EQ(random_ok, 0);
    GDA_FT_ASSERT_EQ(mutated_ok, 0);
    printf("%u channel directories, none accepted\n", iters);
}

GDA_FT_TEST(uct_wire, fuzz_oob_addr)
{
    unsigned iters = test_wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_OOB_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u out-of-band addresses: %u random and %u mutated accepted\n",
           iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_oob_hdr)
{
    unsigned iters = test_wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_OOB_HDR, iters, &random_ok, &mutated_ok);
    printf("%u out-of-band message headers: %u random and %u mutated "
           "accepted\n", iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, oob_addr_and_hca_addr_refuse_each_other)
{
    uct_gda_ft_dev_addr_info_t dev = make_dev_addr_ipv4(1), out;
    uint8_t buf[WIRE_MAX_LEN];
    const char *reason;
    uint32_t ip;
    uint16_t port;

    /* an HCA's device address is no out-of-band address... */
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&dev, buf, sizeof(buf)));
    GDA_FT_ASSERT_EQ(oob_addr_unpack(buf, blob_size(BLOB_OOB_ADDR), &ip, &port,
                                     &reason), UCS_ERR_INVALID_PARAM);
    printf("HCA address as out-of-band: %s\n", reason);

    /* ...and the other way round, from the header alone */
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_oob_addr_pack(
            htonl(0x7f000001), htons(4000), buf, OOB_DEV_LEN,
            buf + OOB_DEV_LEN, sizeof(port)));
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_unpack(buf, 2, &out, &reason),
                     UCS_ERR_INVALID_PARAM);
    printf("out-of-band address as HCA: %s\n", reason);

    /* a zero address or port cannot be packed or unpacked */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_oob_addr_pack(0, htons(1), buf,
                                                   OOB_DEV_LEN,
                                                   buf + OOB_DEV_LEN, 2),
                     UCS_ERR_INVALID_PARAM);
    memset(buf + OOB_DEV_LEN, 0, 2);
    GDA_FT_ASSERT_EQ(oob_addr_unpack(buf, blob_size(BLOB_OOB_ADDR), &ip, &port,
                                     &reason), UCS_ERR_INVALID_PARAM);
}

GDA_FT_TEST(uct_wire, oob_hdr_refuses_bad_id_length_magic)
{
    uct_gda_ft_wire_oob_hdr_t hdr;
    const char *reason;
    uint32_t length;
    uint8_t am_id;

    uct_gda_ft_wire_oob_hdr_pack(63, UCT_GDA_FT_OOB_MAX_PAYLOAD, &hdr);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_oob_hdr_unpack(&hdr, sizeof(hdr), &am_id,
                                                    &length, &reason));
    GDA_FT_ASSERT_EQ(am_id, 63);
    GDA_FT_ASSERT_EQ(length, UCT_GDA_FT_OOB_MAX_PAYLOAD);
    GDA_FT_ASSERT_EQ(ntohl(hdr.length), UCT_GDA_FT_OOB_MAX_PAYLOAD);

    uct_gda_ft_wire_oob_hdr_pack(64, 1, &hdr);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_oob_hdr_unpack(&hdr, sizeof(hdr), &am_id,
                                                    &length, &reason),
                     UCS_ERR_INVALID_PARAM);
    uct_gda_ft_wire_oob_hdr_pack(1, UCT_GDA_FT_OOB_MAX_PAYLOAD + 1, &hdr);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_oob_hdr_unpack(&hdr, sizeof(hdr), &am_id,
                                                    &length, &reason),
                     UCS_ERR_INVALID_PARAM);
    uct_gda_ft_wire_oob_hdr_pack(1, 1, &hdr);
    hdr.magic = 'x';
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_oob_hdr_unpack(&hdr, sizeof(hdr), &am_id,
                                                    &length, &reason),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_oob_hdr_unpack(&hdr, 7, &am_id, &length,
                                                    &reason),
                     UCS_ERR_MESSAGE_TRUNCATED);
}

/* The tests above under valgrind: no invalid or uninitialized read */
GDA_FT_TEST_TIMEOUT(uct_wire, valgrind_clean, 300)
{
    char exe[PATH_MAX], cmd[PATH_MAX + 512];
    ssize_t len;
    int ret;

#ifdef __SANITIZE_ADDRESS__
    GDA_FT_SKIP_UNAVAILABLE("sanitizer build: AddressSanitizer checks these tests");
#endif
    if (system("valgrind --version >/dev/null 2>&1") != 0) {
        GDA_FT_SKIP("valgrind is not installed");
    }
    if (getenv("GDA_FT_UNDER_VALGRIND") != NULL) {
        GDA_FT_SKIP_UNAVAILABLE("already under valgrind");
    }

    len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    GDA_FT_ASSERT(len > 0);
    exe[len] = '\0';

    snprintf(cmd, sizeof(cmd),
             "GDA_FT_UNDER_VALGRIND=1 GDA_FT_FUZZ_ITERS=3000 "
             "valgrind -q --trace-children=yes --error-exitcode=99 "
             "'%s' -f 'uct_wire.*' -x 'uct_wire.valgrind_clean' 2>&1", exe);
    ret = system(cmd);
    GDA_FT_ASSERT(WIFEXITED(ret));
    GDA_FT_ASSERT_EQ(WEXITSTATUS(ret), 0);
}

/* Writes a question into mailbox slot q as the peer's control writes do:
 * its fields with `tag`, then its epoch */
static void wire_question(volatile struct uct_gda_ft_mbox_slot *q,
                          uint32_t tag, uint32_t epoch, unsigned op,
                          unsigned path, uint32_t psn0, uint32_t psn1)
{
    q->req_tag    = tag;
    q->req        = (op << 16) | path;
    q->req_psn[0] = psn0;
    q->req_psn[1] = psn1;
    __atomic_store_n(&q->req_epoch, epoch, __ATOMIC_RELEASE);
}

/*
 * The peer's questions and answers come over either control path, and a
 * late write over one may land after a newer one over the other. A late
 * question is none (answered again, a late re-arm reset an end that a
 * newer question had fenced, with the PSNs of before, and the word on the
 * next switch came from another PSN space); a question whose fields a
 * late write overtook is read once they are its own; an answer's fields
 * are its epoch's, whatever landed around it.
 */
GDA_FT_TEST(uct_wire, mailbox_questions_and_answers_survive_late_writes)
{
    volatile struct uct_gda_ft_mbox_slot slot;
    uct_gda_ft_mbox_question_t question;
    unsigned refused;
    uint32_t psn;

    memset((void*)&slot, 0, sizeof(slot));
    GDA_FT_ASSERT(!uct_gda_ft_mbox_read_question(&slot, 0, &question));

    wire_question(&slot, 7, 7, UCT_GDA_FT_CHAN_ASK_FENCE, 1, 4, 0);
    GDA_FT_ASSERT(uct_gda_ft_mbox_read_question(&slot, 6, &question));
    GDA_FT_ASSERT_EQ(question.epoch, 7);
    GDA_FT_ASSERT_EQ(question.op, UCT_GDA_FT_CHAN_ASK_FENCE);
    GDA_FT_ASSERT_EQ(question.path, 1);
    GDA_FT_ASSERT_EQ(question.psn[0], 4);
    /* answered: seen is 7 */
    GDA_FT_ASSERT(!uct_gda_ft_mbox_read_question(&slot, 7, &question));

    /* question 6, a re-arm, lands late and whole */
    wire_question(&slot, 6, 6, UCT_GDA_FT_CHAN_ASK_REARM, 1, 0x123456,
                  0x654321);
    GDA_FT_ASSERT(!uct_gda_ft_mbox_read_question(&slot, 7, &question));

    /* question 8, whose fields a late write of 6 overtook */
    wire_question(&slot, 6, 8, UCT_GDA_FT_CHAN_ASK_FENCE, 0, 4, 0);
    GDA_FT_ASSERT(!uct_gda_ft_mbox_read_question(&slot, 7, &question));
    slot.req_tag = 8;
    GDA_FT_ASSERT(uct_gda_ft_mbox_read_question(&slot, 7, &question));
    GDA_FT_ASSERT_EQ(question.path, 0);

    /* epochs wrap */
    wire_question(&slot, 2, 2, UCT_GDA_FT_CHAN_ASK_REARM, 0, 1, 2);
    GDA_FT_ASSERT(uct_gda_ft_mbox_read_question(&slot, UINT32_MAX - 1,
                                                &question));

    /* an answer is one word: the answer to 8 is 8's */
    slot.answer = UCT_GDA_FT_MBOX_ANSWER(7, 1, 0x111111);
    GDA_FT_ASSERT(!uct_gda_ft_mbox_read_answer(&slot, 8, &refused, &psn));
    slot.answer = UCT_GDA_FT_MBOX_ANSWER(8, 0, 0xabcdef);
    GDA_FT_ASSERT(uct_gda_ft_mbox_read_answer(&slot, 8, &refused, &psn));
    GDA_FT_ASSERT_EQ(refused, 0);
    GDA_FT_ASSERT_EQ(psn, 0xabcdef);
}
