/*
 * UCT transport wire formats, fuzzed: random, truncated and mutated
 * buffers of every blob placed against a PROT_NONE guard page, so that a
 * read past the end crashes the test instead of going unnoticed; what is
 * accepted packs back to the same bytes. And the out-of-band blobs, which
 * must refuse each other's and the HCA addresses' bytes.
 */
#include "gda_ft_test.h"
#include "wire_harness.h"

#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

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
    uct_gda_ft_rkey_info_t rkey = wire_make_rkey((uint32_t)wire_rand(),
                                            (uint32_t)wire_rand(), 1);
    uct_gda_ft_dev_addr_info_t dev = (wire_rand() & 1) ?
                                     wire_make_dev_addr_ipv4(wire_rand() & 1) :
                                     wire_make_dev_addr_gid(wire_rand() & 1);
    uct_gda_ft_ep_addr_info_t ep = {wire_rand(),
                                    {(uint32_t)wire_rand(),
                                     (uint32_t)wire_rand()},
                                    {1 + (wire_rand() & 0xfffffe),
                                     1 + (wire_rand() & 0xfffffe)}};
    uct_gda_ft_chan_dir_info_t dir;
    uint32_t qpn;
    unsigned i;

    switch (blob) {
    case BLOB_CHAN_DIR:
        dir.mbox_va  = wire_rand();
        dir.num_chan = 1 + wire_rand() % UCT_GDA_FT_WIRE_DEV_CHAN_MAX;
        for (i = 0; i < dir.num_chan * 4; ++i) {
            qpn = 1 + (wire_rand() & 0xfffffe);
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
                (uint32_t)wire_rand() | 1, (uint16_t)wire_rand() | 1,
                buf, OOB_DEV_LEN, buf + OOB_DEV_LEN, sizeof(uint16_t)));
        return blob_size(blob);
    case BLOB_OOB_HDR:
        uct_gda_ft_wire_oob_hdr_pack(wire_rand() %
                                     UCT_GDA_FT_WIRE_AM_ID_MAX,
                                     wire_rand() %
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
        ep.num_chan = 1 + wire_rand() % UCT_GDA_FT_WIRE_CHAN_MAX;
        for (i = 0; i < 4; ++i) {
            qpn = 1 + (wire_rand() & 0xfffffe);
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
            len = wire_rand() % (size * 2 + 1);
            wire_fill_random(buf, len);
            accepted += blob_check(blob, guard_place(&g, buf, len), len);
            break;
        case 1: /* a valid blob, truncated */
            valid = blob_valid(blob, buf);
            len   = wire_rand() % (valid + 1);
            GDA_FT_ASSERT_EQ(blob_check(blob, guard_place(&g, buf, len), len),
                             len == valid);
            break;
        default: /* a valid blob with 1..4 random bytes changed */
            valid = blob_valid(blob, buf);
            memcpy(orig, buf, valid);
            for (n = 1 + (wire_rand() % 4); n > 0; --n) {
                buf[wire_rand() % valid] = (uint8_t)wire_rand();
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
    unsigned iters = wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_RKEY, iters, &random_ok, &mutated_ok);
    /* the check value leaves random and mutated keys no chance */
    GDA_FT_ASSERT_EQ(random_ok, 0);
    GDA_FT_ASSERT_EQ(mutated_ok, 0);
    printf("%u rkey buffers, none accepted\n", iters);
}

GDA_FT_TEST(uct_wire, fuzz_dev_addr)
{
    unsigned iters = wire_fuzz_iters(300000), random_ok, mutated_ok;

    /* a GID is opaque: mutated GIDs are valid addresses, and each accepted
     * one was checked to re-pack to the same bytes */
    blob_fuzz(BLOB_DEV_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u device addresses: %u random and %u mutated accepted\n", iters,
           random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_ep_addr)
{
    unsigned iters = wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_EP_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u endpoint addresses: %u random and %u mutated accepted\n",
           iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_chan_dir)
{
    unsigned iters = wire_fuzz_iters(100000), random_ok, mutated_ok;

    /* the check value leaves random and mutated directories no chance */
    blob_fuzz(BLOB_CHAN_DIR, iters, &random_ok, &mutated_ok);
    GDA_FT_ASSERT_EQ(random_ok, 0);
    GDA_FT_ASSERT_EQ(mutated_ok, 0);
    printf("%u channel directories, none accepted\n", iters);
}

GDA_FT_TEST(uct_wire, fuzz_oob_addr)
{
    unsigned iters = wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_OOB_ADDR, iters, &random_ok, &mutated_ok);
    printf("%u out-of-band addresses: %u random and %u mutated accepted\n",
           iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, fuzz_oob_hdr)
{
    unsigned iters = wire_fuzz_iters(300000), random_ok, mutated_ok;

    blob_fuzz(BLOB_OOB_HDR, iters, &random_ok, &mutated_ok);
    printf("%u out-of-band message headers: %u random and %u mutated "
           "accepted\n", iters, random_ok, mutated_ok);
}

GDA_FT_TEST(uct_wire, oob_addr_and_hca_addr_refuse_each_other)
{
    uct_gda_ft_dev_addr_info_t dev = wire_make_dev_addr_ipv4(1), out;
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
