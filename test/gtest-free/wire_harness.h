/*
 * What the wire format tests share (test_uct_wire.c, test_uct_wire_fuzz.c):
 * deterministic random bytes, a buffer that ends at a PROT_NONE page, and
 * the unpacked forms of each blob to pack.
 */
#ifndef WIRE_HARNESS_H_
#define WIRE_HARNESS_H_

#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_MAX_LEN 2048  /* twice the largest blob (a channel directory of
                              64 channels, 784 bytes), for random lengths */

/* Iterations of a fuzzing test: GDA_FT_FUZZ_ITERS, else dflt */
unsigned wire_fuzz_iters(unsigned dflt);

/* xorshift64*: deterministic, so that a failure reproduces */
uint64_t wire_rand(void);
void wire_fill_random(uint8_t *buf, size_t len);

/* A buffer whose last byte is the last byte before a PROT_NONE page */
typedef struct {
    uint8_t *map;
    size_t   page;
} guard_t;

void guard_init(guard_t *g);
void guard_cleanup(guard_t *g);
/* Copies len bytes so that they end exactly at the guard page */
uint8_t *guard_place(guard_t *g, const void *data, size_t len);

uct_gda_ft_rkey_info_t wire_make_rkey(uint32_t k0, uint32_t k1, int backup);
/* RoCEv2 over IPv4 ports: ::ffff:10.0.0.1 and ::ffff:10.0.0.2 */
uct_gda_ft_dev_addr_info_t wire_make_dev_addr_ipv4(int backup);
/* InfiniBand ports: fe80::/64, LIDs */
uct_gda_ft_dev_addr_info_t wire_make_dev_addr_gid(int backup);
/* An endpoint address of `num` channels: its host channel's QPNs, a
 * mailbox and control QPs */
void wire_make_chan_ep_addr(uct_gda_ft_ep_addr_info_t *in, unsigned num);

#define DIR_MBOX 0x7766554433221100ull
/* A directory of `num` device channels of the endpoint whose mailbox is
 * DIR_MBOX */
void wire_make_chan_dir(uct_gda_ft_chan_dir_info_t *in, unsigned num);

#endif
