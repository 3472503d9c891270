/*
 * What the wire format tests share (see wire_harness.h).
 */
#include "wire_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

unsigned wire_fuzz_iters(unsigned dflt)
{
    const char *env = getenv("GDA_FT_FUZZ_ITERS");

    return (env != NULL) ? (unsigned)strtoul(env, NULL, 0) : dflt;
}

static uint64_t wire_rand_state = 0x2545f4914f6cdd1dull;

uint64_t wire_rand(void)
{
    /* xorshift64*: deterministic, so that a failure reproduces */
    wire_rand_state ^= wire_rand_state >> 12;
    wire_rand_state ^= wire_rand_state << 25;
    wire_rand_state ^= wire_rand_state >> 27;
    return wire_rand_state * 0x2545f4914f6cdd1dull;
}


void guard_init(guard_t *g)
{
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    g->map  = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    GDA_FT_ASSERT(g->map != MAP_FAILED);
    GDA_FT_ASSERT_EQ(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
}

void guard_cleanup(guard_t *g)
{
    munmap(g->map, 2 * g->page);
}

/* Copies len bytes so that they end exactly at the guard page */
uint8_t *guard_place(guard_t *g, const void *data, size_t len)
{
    uint8_t *dst = g->map + g->page - len;

    memcpy(dst, data, len);
    return dst;
}

void wire_fill_random(uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (uint8_t)wire_rand();
    }
}

uct_gda_ft_rkey_info_t wire_make_rkey(uint32_t k0, uint32_t k1, int backup)
{
    uct_gda_ft_rkey_info_t info = {{k0, k1}, backup};
    return info;
}

/* RoCEv2 over IPv4 ports: ::ffff:10.0.0.1 and ::ffff:10.0.0.2 */
uct_gda_ft_dev_addr_info_t wire_make_dev_addr_ipv4(int backup)
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
uct_gda_ft_dev_addr_info_t wire_make_dev_addr_gid(int backup)
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



/* An endpoint address of `num` channels: its host channel's QPNs, a
 * mailbox and control QPs */
void wire_make_chan_ep_addr(uct_gda_ft_ep_addr_info_t *in, unsigned num)
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


/* A directory of `num` device channels of the endpoint whose mailbox is
 * DIR_MBOX */
void wire_make_chan_dir(uct_gda_ft_chan_dir_info_t *in, unsigned num)
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
