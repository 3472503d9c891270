/*
 * gda_ft UCT transport: packing and validation of the remote key, device
 * address and endpoint address (layouts in uct_gda_ft_wire.h).
 *
 * Buffers are read field by field with memcpy into locals after the length
 * check, so that an unaligned or short buffer is never dereferenced past its
 * end.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_wire.h"

#include <ucs/algorithm/crc.h>
#include <arpa/inet.h>
#include <endian.h>
#include <string.h>


#define UCT_GDA_FT_WIRE_FAIL(_status, _reason) \
    do { \
        if (reason_p != NULL) { \
            *reason_p = (_reason); \
        } \
        return (_status); \
    } while (0)


static int uct_gda_ft_wire_is_zero(const void *buf, size_t length)
{
    const uint8_t *p = buf;
    size_t i;

    for (i = 0; i < length; ++i) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static void uct_gda_ft_wire_put_qpn(uint8_t *dst, uint32_t qpn)
{
    dst[0] = (uint8_t)(qpn >> 16);
    dst[1] = (uint8_t)(qpn >> 8);
    dst[2] = (uint8_t)qpn;
}

static uint32_t uct_gda_ft_wire_get_qpn(const uint8_t *src)
{
    return ((uint32_t)src[0] << 16) | ((uint32_t)src[1] << 8) | src[2];
}

static uint32_t uct_gda_ft_wire_rkey_check(const uct_gda_ft_wire_rkey_t *wire)
{
    return ucs_crc32(UCT_GDA_FT_RKEY_CHECK_SEED, wire,
                     offsetof(uct_gda_ft_wire_rkey_t, check));
}


/* ---- remote key ---------------------------------------------------------- */

ucs_status_t uct_gda_ft_wire_rkey_pack(const uct_gda_ft_rkey_info_t *info,
                                       void *buf, size_t max)
{
    uct_gda_ft_wire_rkey_t wire;

    if (max < sizeof(wire)) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    if (!info->has_backup && (info->key[1] != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&wire, 0, sizeof(wire));
    wire.magic   = htons(UCT_GDA_FT_RKEY_MAGIC);
    wire.version = UCT_GDA_FT_WIRE_VERSION;
    wire.flags   = info->has_backup ? UCT_GDA_FT_WIRE_F_BACKUP : 0;
    wire.key[0]  = htonl(info->key[0]);
    wire.key[1]  = htonl(info->key[1]);
    wire.check   = htonl(uct_gda_ft_wire_rkey_check(&wire));
    memcpy(buf, &wire, sizeof(wire));
    return UCS_OK;
}

ucs_status_t uct_gda_ft_wire_rkey_unpack(const void *buf, size_t length,
                                         uct_gda_ft_rkey_info_t *info,
                                         const char **reason_p)
{
    uct_gda_ft_wire_rkey_t wire;
    int has_backup;

    if ((buf == NULL) || (length < sizeof(wire))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "packed rkey is shorter than 16 bytes");
    }

    memcpy(&wire, buf, sizeof(wire));
    if (ntohs(wire.magic) != UCT_GDA_FT_RKEY_MAGIC) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "not a gda_ft remote key (bad magic)");
    }
    if (wire.version != UCT_GDA_FT_WIRE_VERSION) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_UNSUPPORTED,
                             "remote key of another gda_ft wire version");
    }
    if (ntohl(wire.check) != uct_gda_ft_wire_rkey_check(&wire)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "corrupt remote key (check value mismatch)");
    }
    if (wire.flags & ~UCT_GDA_FT_WIRE_F_ALL) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "remote key with unknown flags");
    }

    has_backup = !!(wire.flags & UCT_GDA_FT_WIRE_F_BACKUP);
    if (!has_backup && (wire.key[1] != 0)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "remote key has a backup key but no backup "
                             "flag");
    }

    info->key[0]     = ntohl(wire.key[0]);
    info->key[1]     = ntohl(wire.key[1]);
    info->has_backup = has_backup;
    return UCS_OK;
}


/* ---- device address ------------------------------------------------------ */

/* ::ffff:a.b.c.d */
static int uct_gda_ft_wire_gid_is_ipv4(const uint8_t *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return !memcmp(gid, prefix, sizeof(prefix));
}

static int uct_gda_ft_wire_fits_ipv4(const uct_gda_ft_dev_addr_info_t *info)
{
    return (info->lid[0] == 0) &&
           uct_gda_ft_wire_gid_is_ipv4(info->gid[0]) &&
           !uct_gda_ft_wire_is_zero(info->gid[0] + 12, 4) &&
           (!info->has_backup ||
            ((info->lid[1] == 0) &&
             uct_gda_ft_wire_gid_is_ipv4(info->gid[1]) &&
             !uct_gda_ft_wire_is_zero(info->gid[1] + 12, 4)));
}

static int uct_gda_ft_wire_fits_gid(const uct_gda_ft_dev_addr_info_t *info)
{
    return !uct_gda_ft_wire_is_zero(info->gid[0], UCT_GDA_FT_WIRE_GID_LEN) &&
           !uct_gda_ft_wire_is_zero(info->gid[0] + 8, 8) &&
           (!info->has_backup ||
            (!memcmp(info->gid[0], info->gid[1], 8) &&
             !uct_gda_ft_wire_is_zero(info->gid[1] + 8, 8)));
}

size_t uct_gda_ft_wire_dev_addr_size(const uct_gda_ft_dev_addr_info_t *info)
{
    if (uct_gda_ft_wire_fits_ipv4(info)) {
        return sizeof(uct_gda_ft_wire_dev_addr_ipv4_t);
    } else if (uct_gda_ft_wire_fits_gid(info)) {
        return sizeof(uct_gda_ft_wire_dev_addr_gid_t);
    }
    return 0;
}

ucs_status_t
uct_gda_ft_wire_dev_addr_pack(const uct_gda_ft_dev_addr_info_t *info,
                              void *buf, size_t max)
{
    uct_gda_ft_wire_dev_addr_ipv4_t ipv4;
    uct_gda_ft_wire_dev_addr_gid_t gid;
    size_t size = uct_gda_ft_wire_dev_addr_size(info);
    uint8_t flags;

    if (size == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (max < size) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    flags = info->has_backup ? UCT_GDA_FT_WIRE_F_BACKUP : 0;
    if (size == sizeof(ipv4)) {
        memset(&ipv4, 0, sizeof(ipv4));
        ipv4.hdr.version = UCT_GDA_FT_WIRE_VERSION;
        ipv4.hdr.flags   = flags | UCT_GDA_FT_WIRE_F_IPV4;
        memcpy(ipv4.ipv4[0], info->gid[0] + 12, 4);
        if (info->has_backup) {
            memcpy(ipv4.ipv4[1], info->gid[1] + 12, 4);
        }
        memcpy(buf, &ipv4, sizeof(ipv4));
    } else {
        memset(&gid, 0, sizeof(gid));
        gid.hdr.version = UCT_GDA_FT_WIRE_VERSION;
        gid.hdr.flags   = flags | UCT_GDA_FT_WIRE_F_GID;
        gid.lid[0]      = htons(info->lid[0]);
        memcpy(gid.prefix, info->gid[0], 8);
        memcpy(gid.iid[0], info->gid[0] + 8, 8);
        if (info->has_backup) {
            gid.lid[1] = htons(info->lid[1]);
            memcpy(gid.iid[1], info->gid[1] + 8, 8);
        }
        memcpy(buf, &gid, sizeof(gid));
    }
    return UCS_OK;
}

ucs_status_t uct_gda_ft_wire_dev_addr_unpack(const void *buf, size_t length,
                                             uct_gda_ft_dev_addr_info_t *info,
                                             const char **reason_p)
{
    uct_gda_ft_wire_dev_addr_ipv4_t ipv4;
    uct_gda_ft_wire_dev_addr_gid_t gid;
    uct_gda_ft_wire_dev_addr_hdr_t hdr;
    uct_gda_ft_dev_addr_info_t out;
    unsigned form;

    if ((buf == NULL) || (length < sizeof(hdr))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "device address is shorter than its header");
    }

    memcpy(&hdr, buf, sizeof(hdr));
    if (hdr.version != UCT_GDA_FT_WIRE_VERSION) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_UNSUPPORTED,
                             "device address of another gda_ft wire "
                             "version");
    }
    if (hdr.flags & ~UCT_GDA_FT_WIRE_F_DEV_ALL) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "device address with unknown flags");
    }

    memset(&out, 0, sizeof(out));
    out.has_backup = !!(hdr.flags & UCT_GDA_FT_WIRE_F_BACKUP);
    form           = hdr.flags & (UCT_GDA_FT_WIRE_F_IPV4 |
                                  UCT_GDA_FT_WIRE_F_GID);
    if (form == UCT_GDA_FT_WIRE_F_IPV4) {
        if (length < sizeof(ipv4)) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                                 "IPv4 device address is shorter than 10 "
                                 "bytes");
        }
        memcpy(&ipv4, buf, sizeof(ipv4));
        if (uct_gda_ft_wire_is_zero(ipv4.ipv4[0], 4) ||
            (out.has_backup && uct_gda_ft_wire_is_zero(ipv4.ipv4[1], 4))) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "device address with a zero IPv4 address");
        }
        if (!out.has_backup && !uct_gda_ft_wire_is_zero(ipv4.ipv4[1], 4)) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "device address has a backup port but no "
                                 "backup flag");
        }
        out.gid[0][10] = out.gid[0][11] = 0xff;
        memcpy(out.gid[0] + 12, ipv4.ipv4[0], 4);
        if (out.has_backup) {
            out.gid[1][10] = out.gid[1][11] = 0xff;
            memcpy(out.gid[1] + 12, ipv4.ipv4[1], 4);
        }
    } else if (form == UCT_GDA_FT_WIRE_F_GID) {
        if (length < sizeof(gid)) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                                 "GID device address is shorter than 30 "
                                 "bytes");
        }
        memcpy(&gid, buf, sizeof(gid));
        if (uct_gda_ft_wire_is_zero(gid.iid[0], 8) ||
            (out.has_backup && uct_gda_ft_wire_is_zero(gid.iid[1], 8))) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "device address with a zero interface ID");
        }
        if (!out.has_backup && ((gid.lid[1] != 0) ||
                                !uct_gda_ft_wire_is_zero(gid.iid[1], 8))) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "device address has a backup port but no "
                                 "backup flag");
        }
        out.lid[0] = ntohs(gid.lid[0]);
        out.lid[1] = ntohs(gid.lid[1]);
        memcpy(out.gid[0], gid.prefix, 8);
        memcpy(out.gid[0] + 8, gid.iid[0], 8);
        if (out.has_backup) {
            memcpy(out.gid[1], gid.prefix, 8);
            memcpy(out.gid[1] + 8, gid.iid[1], 8);
        }
        if (uct_gda_ft_wire_fits_ipv4(&out)) {
            /* one value, one encoding: this one is the IPv4 form's */
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "GID device address of IPv4-mapped GIDs "
                                 "(not canonical)");
        }
    } else {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "device address of no known form");
    }

    *info = out;
    return UCS_OK;
}


/* ---- endpoint address ---------------------------------------------------- */

static int uct_gda_ft_wire_qpn_valid(uint32_t qpn)
{
    return (qpn != 0) && (qpn <= UCT_GDA_FT_WIRE_QPN_MASK);
}

static int uct_gda_ft_wire_chan_valid(const uct_gda_ft_chan_qpns_t *qpns)
{
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (!uct_gda_ft_wire_qpn_valid(qpns->init_qpn[path]) ||
            !uct_gda_ft_wire_qpn_valid(qpns->target_qpn[path])) {
            return 0;
        }
    }
    return 1;
}

static void uct_gda_ft_wire_chan_put(const uct_gda_ft_chan_qpns_t *qpns,
                                     void *buf)
{
    uct_gda_ft_wire_chan_t wchan;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        uct_gda_ft_wire_put_qpn(wchan.init_qpn[path], qpns->init_qpn[path]);
        uct_gda_ft_wire_put_qpn(wchan.target_qpn[path],
                                qpns->target_qpn[path]);
    }
    memcpy(buf, &wchan, sizeof(wchan));
}

/* 0 when a QPN is zero */
static int uct_gda_ft_wire_chan_get(const void *buf,
                                    uct_gda_ft_chan_qpns_t *qpns)
{
    uct_gda_ft_wire_chan_t wchan;
    unsigned path;

    memcpy(&wchan, buf, sizeof(wchan));
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        qpns->init_qpn[path]   = uct_gda_ft_wire_get_qpn(wchan.init_qpn[path]);
        qpns->target_qpn[path] =
                uct_gda_ft_wire_get_qpn(wchan.target_qpn[path]);
        if ((qpns->init_qpn[path] == 0) || (qpns->target_qpn[path] == 0)) {
            return 0;
        }
    }
    return 1;
}

ucs_status_t
uct_gda_ft_wire_ep_addr_pack(const uct_gda_ft_ep_addr_info_t *info,
                             void *buf, size_t max)
{
    uct_gda_ft_wire_ep_addr_t wire;
    unsigned path;

    if ((info->num_chan == 0) || (info->num_chan > UCT_GDA_FT_WIRE_CHAN_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (max < UCT_GDA_FT_WIRE_EP_ADDR_MAX) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (!uct_gda_ft_wire_qpn_valid(info->ctl_qpn[path])) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if (!uct_gda_ft_wire_chan_valid(&info->host)) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&wire, 0, sizeof(wire));
    wire.version      = UCT_GDA_FT_WIRE_EP_ADDR_VERSION;
    wire.num_chan     = (uint8_t)info->num_chan;
    wire.mbox_rkey[0] = htonl(info->mbox_rkey[0]);
    wire.mbox_rkey[1] = htonl(info->mbox_rkey[1]);
    wire.mbox_va      = htobe64(info->mbox_va);
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        uct_gda_ft_wire_put_qpn(wire.ctl_qpn[path], info->ctl_qpn[path]);
    }
    memcpy(buf, &wire, sizeof(wire));
    uct_gda_ft_wire_chan_put(&info->host,
                             UCS_PTR_BYTE_OFFSET(buf, sizeof(wire)));
    return UCS_OK;
}

ucs_status_t uct_gda_ft_wire_ep_addr_unpack(const void *buf, size_t length,
                                            uct_gda_ft_ep_addr_info_t *info,
                                            const char **reason_p)
{
    uct_gda_ft_ep_addr_info_t out;
    uct_gda_ft_wire_ep_addr_t wire;
    unsigned path;

    if ((buf == NULL) || (length < sizeof(wire))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "endpoint address is shorter than 24 bytes");
    }

    memcpy(&wire, buf, sizeof(wire));
    if (wire.version != UCT_GDA_FT_WIRE_EP_ADDR_VERSION) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_UNSUPPORTED,
                             "endpoint address of another gda_ft wire "
                             "version");
    }
    if ((wire.num_chan == 0) || (wire.num_chan > UCT_GDA_FT_WIRE_CHAN_MAX)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "endpoint address with a channel count out of "
                             "[1, 65]");
    }
    if (length < UCT_GDA_FT_WIRE_EP_ADDR_MAX) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "endpoint address ends inside its host "
                             "channel");
    }

    memset(&out, 0, sizeof(out));
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        out.ctl_qpn[path] = uct_gda_ft_wire_get_qpn(wire.ctl_qpn[path]);
        if (out.ctl_qpn[path] == 0) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "endpoint address with a zero control "
                                 "QPN");
        }
    }
    if (!uct_gda_ft_wire_chan_get(UCS_PTR_BYTE_OFFSET(buf, sizeof(wire)),
                                  &out.host)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "endpoint address with a zero channel QPN");
    }
    out.num_chan     = wire.num_chan;
    out.mbox_va      = be64toh(wire.mbox_va);
    out.mbox_rkey[0] = ntohl(wire.mbox_rkey[0]);
    out.mbox_rkey[1] = ntohl(wire.mbox_rkey[1]);
    *info = out;
    return UCS_OK;
}


/* ---- channel directory --------------------------------------------------- */

size_t uct_gda_ft_wire_chan_dir_size(unsigned num_chan)
{
    return sizeof(uct_gda_ft_wire_chan_dir_t) +
           num_chan * sizeof(uct_gda_ft_wire_chan_t);
}

/* The check value of a directory of `length` bytes, its check field 0 */
static uint32_t uct_gda_ft_wire_chan_dir_check(const void *buf, size_t length)
{
    static const uint32_t zero = 0;
    size_t check_at            = offsetof(uct_gda_ft_wire_chan_dir_t, check);
    size_t after               = check_at + sizeof(zero);
    uint32_t crc;

    crc = ucs_crc32(UCT_GDA_FT_WIRE_DIR_CHECK_SEED, buf, check_at);
    crc = ucs_crc32(crc, &zero, sizeof(zero));
    return ucs_crc32(crc, UCS_PTR_BYTE_OFFSET(buf, after), length - after);
}

ucs_status_t
uct_gda_ft_wire_chan_dir_pack(const uct_gda_ft_chan_dir_info_t *info,
                              void *buf, size_t max)
{
    size_t size = uct_gda_ft_wire_chan_dir_size(info->num_chan);
    uct_gda_ft_wire_chan_dir_t wire;
    unsigned i;

    if ((info->num_chan == 0) ||
        (info->num_chan > UCT_GDA_FT_WIRE_DEV_CHAN_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (max < size) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    for (i = 0; i < info->num_chan; ++i) {
        if (!uct_gda_ft_wire_chan_valid(&info->chan[i])) {
            return UCS_ERR_INVALID_PARAM;
        }
    }

    memset(&wire, 0, sizeof(wire));
    wire.version  = UCT_GDA_FT_WIRE_DIR_VERSION;
    wire.num_chan = (uint8_t)info->num_chan;
    wire.length   = htons((uint16_t)size);
    wire.mbox_va  = htobe64(info->mbox_va);
    memcpy(buf, &wire, sizeof(wire));
    for (i = 0; i < info->num_chan; ++i) {
        uct_gda_ft_wire_chan_put(&info->chan[i],
                                 UCS_PTR_BYTE_OFFSET(
                                         buf,
                                         uct_gda_ft_wire_chan_dir_size(i)));
    }
    wire.check = htonl(uct_gda_ft_wire_chan_dir_check(buf, size));
    memcpy(buf, &wire, sizeof(wire));
    return UCS_OK;
}

ucs_status_t uct_gda_ft_wire_chan_dir_unpack(const void *buf, size_t length,
                                             unsigned num_chan,
                                             uint64_t mbox_va,
                                             uct_gda_ft_chan_dir_info_t *info,
                                             const char **reason_p)
{
    uct_gda_ft_chan_dir_info_t out;
    uct_gda_ft_wire_chan_dir_t wire;
    size_t size;
    unsigned i;

    if ((buf == NULL) || (length < sizeof(wire))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "channel directory is shorter than its "
                             "16-byte header");
    }

    memcpy(&wire, buf, sizeof(wire));
    if (wire.version != UCT_GDA_FT_WIRE_DIR_VERSION) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_UNSUPPORTED,
                             "channel directory of another gda_ft wire "
                             "version");
    }
    if ((wire.num_chan == 0) ||
        (wire.num_chan > UCT_GDA_FT_WIRE_DEV_CHAN_MAX)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "channel directory with a channel count out "
                             "of [1, 64]");
    }
    size = uct_gda_ft_wire_chan_dir_size(wire.num_chan);
    if (ntohs(wire.length) < size) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "channel directory ends inside its channels");
    }
    if ((ntohs(wire.length) != size) || (length < size)) {
        UCT_GDA_FT_WIRE_FAIL((length < size) ? UCS_ERR_MESSAGE_TRUNCATED :
                                               UCS_ERR_INVALID_PARAM,
                             "channel directory of a length that is not "
                             "its channels'");
    }
    if (ntohl(wire.check) != uct_gda_ft_wire_chan_dir_check(buf, size)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "corrupt channel directory (check value "
                             "mismatch)");
    }
    if ((wire.num_chan != num_chan) || (be64toh(wire.mbox_va) != mbox_va)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "channel directory of another endpoint than "
                             "the address (channel count or mailbox)");
    }

    for (i = 0; i < wire.num_chan; ++i) {
        if (!uct_gda_ft_wire_chan_get(
                    UCS_PTR_BYTE_OFFSET(buf,
                                        uct_gda_ft_wire_chan_dir_size(i)),
                    &out.chan[i])) {
            UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                                 "channel directory with a zero channel "
                                 "QPN");
        }
    }
    out.num_chan = wire.num_chan;
    out.mbox_va  = mbox_va;
    memcpy(info, &out, offsetof(uct_gda_ft_chan_dir_info_t, chan) +
                       out.num_chan * sizeof(out.chan[0]));
    return UCS_OK;
}


/* ---- out-of-band channel ------------------------------------------------- */

ucs_status_t uct_gda_ft_wire_oob_addr_pack(uint32_t ipv4_be, uint16_t port_be,
                                           void *dev_buf, size_t dev_max,
                                           void *iface_buf, size_t iface_max)
{
    uct_gda_ft_wire_oob_dev_addr_t wire;

    if ((dev_max < sizeof(wire)) || (iface_max < sizeof(port_be))) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    if ((ipv4_be == 0) || (port_be == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    wire.version = UCT_GDA_FT_WIRE_VERSION;
    wire.flags   = UCT_GDA_FT_WIRE_F_OOB;
    memcpy(wire.ipv4, &ipv4_be, sizeof(wire.ipv4));
    memcpy(dev_buf, &wire, sizeof(wire));
    memcpy(iface_buf, &port_be, sizeof(port_be));
    return UCS_OK;
}

ucs_status_t uct_gda_ft_wire_oob_addr_unpack(const void *dev_buf,
                                             size_t dev_length,
                                             const void *iface_buf,
                                             size_t iface_length,
                                             uint32_t *ipv4_be,
                                             uint16_t *port_be,
                                             const char **reason_p)
{
    uct_gda_ft_wire_oob_dev_addr_t wire;
    uint16_t port;
    uint32_t ip;

    if ((dev_buf == NULL) || (iface_buf == NULL) ||
        (dev_length < sizeof(wire)) || (iface_length < sizeof(port))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "out-of-band address is shorter than 6 + 2 "
                             "bytes");
    }

    /* the two header bytes first: an HCA's address is no longer */
    memcpy(&wire, dev_buf, 2);
    if (wire.version != UCT_GDA_FT_WIRE_VERSION) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_UNSUPPORTED,
                             "out-of-band address of another gda_ft wire "
                             "version");
    }
    if (wire.flags != UCT_GDA_FT_WIRE_F_OOB) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "not an out-of-band address");
    }

    memcpy(&wire, dev_buf, sizeof(wire));
    memcpy(&ip, wire.ipv4, sizeof(ip));
    memcpy(&port, iface_buf, sizeof(port));
    if ((ip == 0) || (port == 0)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "out-of-band address with a zero IPv4 address "
                             "or port");
    }

    *ipv4_be = ip;
    *port_be = port;
    return UCS_OK;
}

void uct_gda_ft_wire_oob_hdr_pack(uint8_t am_id, uint32_t length,
                                  uct_gda_ft_wire_oob_hdr_t *hdr)
{
    hdr->magic    = UCT_GDA_FT_OOB_MAGIC;
    hdr->version  = UCT_GDA_FT_WIRE_VERSION;
    hdr->am_id    = am_id;
    hdr->reserved = 0;
    hdr->length   = htonl(length);
}

ucs_status_t uct_gda_ft_wire_oob_hdr_unpack(const void *buf, size_t length,
                                            uint8_t *am_id,
                                            uint32_t *payload_length,
                                            const char **reason_p)
{
    uct_gda_ft_wire_oob_hdr_t hdr;
    uint32_t len;

    if ((buf == NULL) || (length < sizeof(hdr))) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_MESSAGE_TRUNCATED,
                             "out-of-band message shorter than its header");
    }

    memcpy(&hdr, buf, sizeof(hdr));
    len = ntohl(hdr.length);
    if ((hdr.magic != UCT_GDA_FT_OOB_MAGIC) ||
        (hdr.version != UCT_GDA_FT_WIRE_VERSION) || (hdr.reserved != 0)) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "not a gda_ft out-of-band message");
    }
    if (hdr.am_id >= UCT_GDA_FT_WIRE_AM_ID_MAX) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "out-of-band message with an invalid AM id");
    }
    if (len > UCT_GDA_FT_OOB_MAX_PAYLOAD) {
        UCT_GDA_FT_WIRE_FAIL(UCS_ERR_INVALID_PARAM,
                             "out-of-band message longer than 64 KiB");
    }

    *am_id          = hdr.am_id;
    *payload_length = len;
    return UCS_OK;
}
