/*
 * UCT transport wire formats: the packed remote key, the device address and
 * the endpoint address. Round trips byte for byte, every kind of malformed
 * input refused with its status, and fuzzing: random, truncated and mutated
 * buffers placed against a PROT_NONE guard page, so that a read past the
 * end crashes the test instead of going unnoticed. The same tests run under
 * valgrind (uct_wire.valgrind_clean).
 */
#include "gda_ft_test.h"
#include "wire_harness.h"

#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <ucs/algorithm/crc.h>
#include <arpa/inet.h>
#include <endian.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>




/* ---- remote key ---------------------------------------------------------- */

GDA_FT_TEST(uct_wire, rkey_round_trip_and_layout)
{
    uct_gda_ft_wire_rkey_t wire;
    uct_gda_ft_rkey_info_t in, out;
    const char *reason = NULL;
    uint8_t buf[16];

    in = wire_make_rkey(0x11223344, 0xa5a6a7a8, 1);
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
    in = wire_make_rkey(0xdeadbeef, 0, 0);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)));
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_rkey_unpack(buf, sizeof(buf), &out,
                                                 NULL));
    GDA_FT_ASSERT_EQ(out.key[0], 0xdeadbeef);
    GDA_FT_ASSERT_EQ(out.key[1], 0);
    GDA_FT_ASSERT_EQ(out.has_backup, 0);
}

GDA_FT_TEST(uct_wire, rkey_pack_rejects_bad_input)
{
    uct_gda_ft_rkey_info_t in = wire_make_rkey(1, 2, 0);
    uint8_t buf[32];

    /* a backup key without a backup */
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    in = wire_make_rkey(1, 2, 1);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_rkey_pack(&in, buf, 15),
                     UCS_ERR_BUFFER_TOO_SMALL);
}

GDA_FT_TEST(uct_wire, rkey_unpack_rejects_short_foreign_corrupt)
{
    uct_gda_ft_rkey_info_t in = wire_make_rkey(0x01020304, 0x05060708, 1), out;
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
        in = wire_make_dev_addr_ipv4(backup);
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
        in = wire_make_dev_addr_gid(backup);
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
    in = wire_make_dev_addr_gid(1);
    in.gid[1][0] = 0x20;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);

    /* a LID on the backup port: only the GID form holds it */
    in = wire_make_dev_addr_ipv4(1);
    in.lid[1] = 7;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 30);

    /* no primary GID */
    memset(&in, 0, sizeof(in));
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_size(&in), 0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_dev_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);

    in = wire_make_dev_addr_gid(0);
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
    in = wire_make_dev_addr_ipv4(1);
    GDA_FT_ASSERT_OK(uct_gda_ft_wire_dev_addr_pack(&in, ipv4, sizeof(ipv4)));
    in = wire_make_dev_addr_gid(1);
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

GDA_FT_TEST(uct_wire, ep_addr_round_trip_and_layout)
{
    uct_gda_ft_ep_addr_info_t in, out;
    uint8_t buf[UCT_GDA_FT_WIRE_EP_ADDR_MAX];

    /* one size at any channel count, within UCP address v1's 63 bytes */
    GDA_FT_ASSERT_EQ(UCT_GDA_FT_WIRE_EP_ADDR_MAX, 36);

    wire_make_chan_ep_addr(&in, UCT_GDA_FT_WIRE_CHAN_MAX);
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
    wire_make_chan_ep_addr(&in, 1);
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

    wire_make_chan_ep_addr(&in, 3);
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
    wire_make_chan_ep_addr(&in, 1);
    in.host.target_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    wire_make_chan_ep_addr(&in, 1);
    in.host.init_qpn[0] = 0x1000000;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
    wire_make_chan_ep_addr(&in, 1);
    in.ctl_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_ep_addr_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
}


/* ---- channel directory --------------------------------------------------- */

GDA_FT_TEST(uct_wire, chan_dir_round_trip_and_layout)
{
    uct_gda_ft_chan_dir_info_t in, out;
    uint8_t buf[UCT_GDA_FT_WIRE_DIR_MAX];
    unsigned num;

    GDA_FT_ASSERT_EQ(UCT_GDA_FT_WIRE_DIR_MAX, 16 + 64 * 12);
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_size(32), 16 + 32 * 12);
    /* the mailbox holds the peer's directory once per control path, and
     * ours, in two pages */
    GDA_FT_ASSERT(sizeof(uct_gda_ft_mbox_t) <= 8192);
    GDA_FT_ASSERT_EQ(offsetof(uct_gda_ft_mbox_t, dir_in[1]) -
                     offsetof(uct_gda_ft_mbox_t, dir_in[0]),
                     UCT_GDA_FT_WIRE_DIR_MAX);

    wire_make_chan_dir(&in, 64);
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
        wire_make_chan_dir(&in, num);
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

    wire_make_chan_dir(&in, 32);
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
    wire_make_chan_dir(&in, 32);
    in.chan[31].target_qpn[1] = 0;
    GDA_FT_ASSERT_EQ(uct_gda_ft_wire_chan_dir_pack(&in, buf, sizeof(buf)),
                     UCS_ERR_INVALID_PARAM);
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
