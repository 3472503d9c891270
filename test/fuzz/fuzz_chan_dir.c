/* libFuzzer harness: channel directories (device channels' QPNs), checked
 * against the count and mailbox they say */
#include "fuzz_wire.h"

#include <endian.h>

static ucs_status_t fuzz_chan_dir_unpack(const void *buf, size_t length,
                                         void *info)
{
    const uint8_t *bytes = buf;
    uint64_t mbox_be     = 0;

    if (length >= sizeof(uct_gda_ft_wire_chan_dir_t)) {
        memcpy(&mbox_be, bytes + 8, sizeof(mbox_be));
    }
    return uct_gda_ft_wire_chan_dir_unpack(buf, length,
                                           (length >= 2) ? bytes[1] : 0,
                                           be64toh(mbox_be), info, NULL);
}

static ucs_status_t fuzz_chan_dir_pack(const void *info, void *buf,
                                       size_t max, size_t *length_p)
{
    const uct_gda_ft_chan_dir_info_t *dir = info;

    if (dir->num_chan > UCT_GDA_FT_WIRE_DEV_CHAN_MAX) {
        return UCS_ERR_INVALID_PARAM;
    }
    *length_p = uct_gda_ft_wire_chan_dir_size(dir->num_chan);
    return uct_gda_ft_wire_chan_dir_pack(info, buf, max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fuzz_wire_format_t fmt = {
        sizeof(uct_gda_ft_chan_dir_info_t), fuzz_chan_dir_unpack,
        fuzz_chan_dir_pack
    };

    return fuzz_wire_run(&fmt, data, size);
}
