/*
 * Atomics through the UCT API on software HCAs: every operation and size,
 * and many adds counted exactly.
 */
#include "uct_harness.h"
#include "chan_harness.h"   /* chan_world_time_scale() */
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <uct/ib/gda_ft/uct_gda_ft_perf.h>
#include <uct/ib/gda_ft/uct_gda_ft_oob_stats.h>
#include <ucp/core/ucp_types.h>   /* UCX_ADDRESS_VERSION=v2 packing */

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <alloca.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>


/* ---- atomics ------------------------------------------------------------- */

static uint64_t test_amo_apply(unsigned opcode, uint64_t old, uint64_t value,
                               uint64_t compare, uint64_t mask)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:   return (old + value) & mask;
    case UCT_ATOMIC_OP_AND:   return old & value;
    case UCT_ATOMIC_OP_OR:    return old | value;
    case UCT_ATOMIC_OP_XOR:   return old ^ value;
    case UCT_ATOMIC_OP_SWAP:  return value;
    case UCT_ATOMIC_OP_CSWAP: return (old == compare) ? value : old;
    }
    GDA_FT_FAIL("bad opcode %u", opcode);
}

static const char *test_amo_name(unsigned opcode)
{
    static const char *names[] = {"add", "and", "or", "xor", "swap",
                                  "cswap"};
    return names[opcode];
}

/* One atomic of `size` bytes on B's memory: post (fetch == 0) or fetch */
static void test_amo_one(test_uct_t *t, unsigned opcode, unsigned size,
                         int fetch, uint64_t init, uint64_t value,
                         uint64_t compare)
{
    uint64_t mask     = (size == 4) ? UINT32_MAX : UINT64_MAX;
    uint64_t expected = test_amo_apply(opcode, init & mask, value & mask,
                                       compare & mask, mask);
    uint64_t raddr    = raddr_b(t, 4096 + 8 * opcode);
    uct_ep_h ep       = t->node[NODE_A].ep;
    uint64_t result64 = 0xdeadbeefdeadbeefull, remote;
    uint32_t result32 = 0xdeadbeef;
    test_comp_t comp;
    ucs_status_t status;

    if (size == 4) {
        *(uint32_t*)(uintptr_t)raddr = (uint32_t)init;
    } else {
        *(uint64_t*)(uintptr_t)raddr = init;
    }

    test_comp_init(&comp, 1);
    if (opcode == UCT_ATOMIC_OP_CSWAP) {
        status = (size == 4) ?
                 uct_ep_atomic_cswap32(ep, (uint32_t)compare, (uint32_t)value,
                                       raddr, rkey_b(t), &result32,
                                       &comp.super) :
                 uct_ep_atomic_cswap64(ep, compare, value, raddr, rkey_b(t),
                                       &result64, &comp.super);
    } else if (fetch) {
        status = (size == 4) ?
                 uct_ep_atomic32_fetch(ep, opcode, (uint32_t)value, &result32,
                                       raddr, rkey_b(t), &comp.super) :
                 uct_ep_atomic64_fetch(ep, opcode, value, &result64, raddr,
                                       rkey_b(t), &comp.super);
    } else {
        status = (size == 4) ?
                 uct_ep_atomic32_post(ep, opcode, (uint32_t)value, raddr,
                                      rkey_b(t)) :
                 uct_ep_atomic64_post(ep, opcode, value, raddr, rkey_b(t));
    }

    if (fetch || (opcode == UCT_ATOMIC_OP_CSWAP)) {
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        TEST_WAIT(t, comp.calls == 1, 10000);
        GDA_FT_ASSERT_OK(comp.super.status);
        if (size == 4) {
            if (result32 != (uint32_t)init) {
                GDA_FT_FAIL("%s32: fetched 0x%x, expected 0x%x",
                            test_amo_name(opcode), result32, (uint32_t)init);
            }
        } else if (result64 != init) {
            GDA_FT_FAIL("%s64: fetched 0x%lx, expected 0x%lx",
                        test_amo_name(opcode), result64, init);
        }
    } else {
        GDA_FT_ASSERT_OK(status);
        GDA_FT_ASSERT_OK(test_flush(t));
    }

    remote = (size == 4) ? *(volatile uint32_t*)(uintptr_t)raddr :
                           *(volatile uint64_t*)(uintptr_t)raddr;
    if (remote != expected) {
        GDA_FT_FAIL("%s%u (%s): remote 0x%lx, expected 0x%lx (init 0x%lx "
                    "value 0x%lx)", test_amo_name(opcode), size * 8,
                    fetch ? "fetch" : "post", remote, expected, init, value);
    }
    /* the neighbour of a 4-byte atomic is untouched */
    if (size == 4) {
        GDA_FT_ASSERT_EQ(*(volatile uint32_t*)(uintptr_t)(raddr + 4), 0);
    }
}

/* Every operation and size; `setting` chooses the soft HCAs' mode */
static void test_amo_every_op_and_size(const char *setting)
{
    static const uint64_t inits[]  = {0x0123456789abcdefull,
                                      0xfffffffffffffff0ull, 0};
    static const uint64_t values[] = {0x00ff00ff00ff00ffull, 0x11,
                                      0xffffffffffffffffull};
    unsigned opcode, size, fetch, i;
    test_uct_t t;

    test_uct_env(&t, 4, setting, NULL);
    test_uct_setup(&t);

    for (size = 4; size <= 8; size += 4) {
        for (opcode = UCT_ATOMIC_OP_ADD; opcode <= UCT_ATOMIC_OP_XOR;
             ++opcode) {
            for (fetch = 0; fetch <= 1; ++fetch) {
                for (i = 0; i < 3; ++i) {
                    test_amo_one(&t, opcode, size, fetch, inits[i],
                                 values[i], 0);
                }
            }
        }
        for (i = 0; i < 3; ++i) {
            test_amo_one(&t, UCT_ATOMIC_OP_SWAP, size, 1, inits[i],
                         values[i], 0);
            /* compare equal (swaps) and not equal (keeps) */
            test_amo_one(&t, UCT_ATOMIC_OP_CSWAP, size, 1, inits[i],
                         values[i], inits[i]);
            test_amo_one(&t, UCT_ATOMIC_OP_CSWAP, size, 1, inits[i],
                         values[i], inits[i] ^ 1);
        }
    }
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_atomics, atomics_every_op_and_size)
{
    test_amo_every_op_and_size(NULL);
}

/* HCAs that return 8-byte results in host byte order (a ConnectX in the
 * mode mlx5_core selects where it can): the same values, 4-byte ones
 * still big-endian on the wire */
GDA_FT_TEST(uct_atomics, atomics_with_results_in_host_byte_order)
{
    test_amo_every_op_and_size("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=y");
}

GDA_FT_TEST(uct_atomics, atomic_add_many_counts_exactly)
{
    const unsigned n = 2000;
    volatile uint64_t *counter;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    counter  = (volatile uint64_t*)(t.node[NODE_B].buf + 512);
    *counter = 1000;
    for (i = 0; i < n; ++i) {
        do {
            status = uct_ep_atomic64_post(t.node[NODE_A].ep,
                                          UCT_ATOMIC_OP_ADD, 3,
                                          raddr_b(&t, 512), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(*counter, 1000 + 3ull * n);
    test_uct_cleanup(&t);
}
