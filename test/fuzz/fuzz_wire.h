/*
 * What the libFuzzer harnesses of the transport's wire formats share.
 *
 * Each harness takes a mode byte, then the blob. Mode 0 unpacks the blob
 * as it came. Mode 1 first makes a valid blob of the fuzzer's bytes (they
 * fill the unpacked form, which is packed), so that the check values do
 * not hide what lies behind them, then lets the fuzzer's remaining bytes
 * overwrite parts of it. Every blob an unpack function accepts must be
 * exactly what the pack function makes of the result: a format with one
 * spelling per value, so that nothing foreign passes as ours.
 */
#ifndef FUZZ_WIRE_H_
#define FUZZ_WIRE_H_

#include "uct_gda_ft_wire.h"

#include <ucs/sys/math.h>

#include <stdlib.h>
#include <string.h>

#define FUZZ_BLOB_MAX 2048

/* A copy of exactly len bytes: AddressSanitizer sees any read past them */
static inline uint8_t *fuzz_copy(const void *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);

    memcpy(copy, data, len);
    return copy;
}

/* An accepted blob must be what packing its meaning gives */
static inline void fuzz_expect_canonical(ucs_status_t pack_status,
                                         const uint8_t *packed,
                                         const uint8_t *blob, size_t len)
{
    if ((pack_status != UCS_OK) || (memcmp(packed, blob, len) != 0)) {
        abort();
    }
}

/* The unpacked form of a blob, and the blob of an unpacked form */
typedef ucs_status_t (*fuzz_unpack_func_t)(const void *buf, size_t length,
                                           void *info);
typedef ucs_status_t (*fuzz_pack_func_t)(const void *info, void *buf,
                                         size_t max, size_t *length_p);

typedef struct fuzz_wire_format {
    size_t             info_size;
    fuzz_unpack_func_t unpack;
    fuzz_pack_func_t   pack;
} fuzz_wire_format_t;

/* An accepted blob means one value, which packs into one blob that means
 * the same value again */
static inline void fuzz_wire_check(const fuzz_wire_format_t *fmt,
                                   const uint8_t *blob, size_t length)
{
    uint8_t packed[FUZZ_BLOB_MAX], repacked[FUZZ_BLOB_MAX];
    uint8_t info[2][FUZZ_BLOB_MAX];
    size_t packed_len, repacked_len;

    memset(info, 0, sizeof(info));
    if (fmt->unpack(blob, length, info[0]) != UCS_OK) {
        return;
    }
    if ((fmt->pack(info[0], packed, sizeof(packed), &packed_len) != UCS_OK) ||
        (fmt->unpack(packed, packed_len, info[1]) != UCS_OK) ||
        (memcmp(info[0], info[1], fmt->info_size) != 0) ||
        (fmt->pack(info[1], repacked, sizeof(repacked), &repacked_len) !=
         UCS_OK) ||
        (repacked_len != packed_len) ||
        (memcmp(packed, repacked, packed_len) != 0)) {
        abort();
    }
}

/*
 * Mode byte 0: data is the blob. Otherwise the first info_size bytes fill
 * the unpacked form; a form the pack function takes must unpack again,
 * and the remaining bytes, (position, value) pairs, then edit the blob.
 */
static inline int fuzz_wire_run(const fuzz_wire_format_t *fmt,
                                const uint8_t *data, size_t size)
{
    uint8_t blob[FUZZ_BLOB_MAX], info[2][FUZZ_BLOB_MAX], *copy;
    size_t length, i;

    if ((size < 1) || (size - 1 > FUZZ_BLOB_MAX)) {
        return 0;
    }
    if (data[0] == 0) {
        length = size - 1;
        memcpy(blob, data + 1, length);
    } else {
        if (size - 1 < fmt->info_size) {
            return 0;
        }
        memcpy(info[0], data + 1, fmt->info_size);
        if (fmt->pack(info[0], blob, sizeof(blob), &length) != UCS_OK) {
            return 0;
        }
        memset(info[1], 0, sizeof(info[1]));
        if (fmt->unpack(blob, length, info[1]) != UCS_OK) {
            abort();   /* a blob of ours refused */
        }
        for (i = 1 + fmt->info_size; (i + 1 < size) && (length > 0);
             i += 2) {
            blob[data[i] % length] = data[i + 1];
        }
    }

    /* exactly the blob's bytes: AddressSanitizer sees any read past */
    copy = fuzz_copy(blob, length);
    fuzz_wire_check(fmt, copy, length);
    free(copy);
    return 0;
}

#endif
