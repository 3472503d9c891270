/*
 * Software HCA between two processes: every opcode with the requester in
 * one process and the responder in another, each with its own soft device
 * and engine, connection parameters exchanged over pipes as two nodes
 * would (soft_2proc.h); then the demo program end to end. The control
 * socket is test_soft_softctl.c's, the fault schedule
 * test_soft_fault_sched.c's.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "soft_2proc.h"
#include "gda_ft_test.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- every opcode between two processes -------------------------------- */

static const struct {
    size_t len, soff, doff;
} p2_write_cases[] = {
    {1, 0, 0}, {4095, 3, 5}, {4096, 0, 0}, {4097, 1, 7}, {65539, 5, 3},
    {4 * P2_MB + 3, 3, 5}, {11 * P2_MB + 1, 7, 1}
};

GDA_FT_TEST_TIMEOUT(soft_2proc, write_multi_mb_unaligned, 180)
{
    uint8_t *src;
    size_t i, len, soff, doff;
    char what[64];
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    src = p.buf;
    for (i = 0; i < sizeof(p2_write_cases) / sizeof(p2_write_cases[0]); ++i) {
        len  = p2_write_cases[i].len;
        soff = p2_write_cases[i].soff;
        doff = p2_write_cases[i].doff;
        snprintf(what, sizeof(what), "write of %zu from +%zu to +%zu", len,
                 soff, doff);

        p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
        soft_fill(src + soff, len, (unsigned)(i + 1));
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.ep.sq, (uintptr_t)src + soff, p.mr->lkey, len,
                p.remote.addr + doff, p.remote.rkey, GDA_FT_WQE_SIGNALED,
                &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, what);
        p2_expect_remote(&p, doff, len, (unsigned)(i + 1), what);
    }
    p2_stop(&p);
}

GDA_FT_TEST_TIMEOUT(soft_2proc, read_multi_mb_unaligned, 180)
{
    uint8_t *dst, *ref;
    size_t i, len, loff, roff, total;
    char what[64];
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    dst = p.buf;
    ref = malloc(P2_BUF_SIZE);
    for (i = 0; i < sizeof(p2_write_cases) / sizeof(p2_write_cases[0]); ++i) {
        len   = p2_write_cases[i].len;
        loff  = p2_write_cases[i].doff;
        roff  = p2_write_cases[i].soff;
        total = len + loff + 64;
        snprintf(what, sizeof(what), "read of %zu from +%zu to +%zu", len,
                 roff, loff);

        p2_call(&p, P2_CMD_FILL, roff, len, (unsigned)(i + 100), 0);
        memset(dst, 0x5a, total);
        memset(ref, 0x5a, total);
        soft_fill(ref + loff, len, (unsigned)(i + 100));
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.ep.sq, (uintptr_t)dst + loff, p.mr->lkey, len,
                p.remote.addr + roff, p.remote.rkey, GDA_FT_WQE_SIGNALED,
                &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, what);
        GDA_FT_ASSERT_MEM_EQ(dst, ref, total);
    }
    free(ref);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, send_and_send_imm)
{
    static const uint32_t sizes[] = {0, 1, 4095, 4097, 65536 + 3,
                                     1024 * 1024 + 5};
    uint8_t *src;
    p2_reply_t r;
    unsigned i;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    src = p.buf + 1;   /* unaligned source */
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
        p2_call(&p, P2_CMD_POST_RECV, 3, sizes[i] + 16, 0, 0);
        soft_fill(src, sizes[i], i + 200);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_imm(
                    &p.ep.sq, (uintptr_t)src, p.mr->lkey, sizes[i],
                    0xc0de0000 + i, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
        } else {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(
                    &p.ep.sq, (uintptr_t)src, p.mr->lkey, sizes[i],
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        soft_ep_ring(&p.ep);
        p2_expect_ok(&p, idx, "send");

        r = p2_call(&p, P2_CMD_WAIT_RECV, 0, 0, 0, 0);
        GDA_FT_ASSERT_EQ(r.info.opcode, (i & 1) ?
                         GDA_FT_MLX5_CQE_RESP_SEND_IMM :
                         GDA_FT_MLX5_CQE_RESP_SEND);
        GDA_FT_ASSERT_EQ(r.info.byte_cnt, sizes[i]);
        GDA_FT_ASSERT_EQ(r.info.wqe_counter, i);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(r.info.imm, 0xc0de0000 + i);
        }
        p2_expect_remote(&p, 3, sizes[i], i + 200, "send");
    }
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, write_imm_consumes_receive)
{
    size_t len = 3 * 4096 + 11;
    p2_reply_t r;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    p2_call(&p, P2_CMD_RESET, 0, 0, 0, 0);
    /* the receive WQE's buffer stays untouched: the data goes to raddr */
    p2_call(&p, P2_CMD_POST_RECV, 8 * P2_MB, 64, 0, 0);
    soft_fill(p.buf + 5, len, 31);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_imm(
            &p.ep.sq, (uintptr_t)p.buf + 5, p.mr->lkey, len,
            p.remote.addr + 9, p.remote.rkey, 0x12345678,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "write_imm");

    r = p2_call(&p, P2_CMD_WAIT_RECV, 0, 0, 0, 0);
    GDA_FT_ASSERT_EQ(r.info.opcode, GDA_FT_MLX5_CQE_RESP_WR_IMM);
    GDA_FT_ASSERT_EQ(r.info.imm, 0x12345678);
    GDA_FT_ASSERT_EQ(r.info.byte_cnt, len);
    GDA_FT_ASSERT_EQ(r.info.wqe_counter, 0);
    p2_expect_remote(&p, 9, len, 31, "write_imm");
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, 8 * P2_MB, 0, 0, 0).value,
                     0xa5a5a5a5a5a5a5a5ull);
    p2_stop(&p);
}

#define P2_COUNTER_OFF  (4096 + 8)

GDA_FT_TEST(soft_2proc, atomic_fetch_add_and_cswap_counters)
{
    uint64_t *results, expect = 1000, n = 500, posted = 0, done = 0;
    gda_ft_dev_cqe_info_t info;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    results = (uint64_t*)p.buf;
    p2_call(&p, P2_CMD_WRITE64, P2_COUNTER_OFF, 0, 0, 1000);

    /* 500 fetch-adds of 1, 2, 3, ... with 32 in flight: old values come
     * back in order, each exactly once */
    while (done < n) {
        while ((posted < n) && (posted - done < 32)) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.ep.sq, (uintptr_t)&results[posted % 32], p.mr->lkey,
                    p.remote.addr + P2_COUNTER_OFF, p.remote.rkey,
                    posted + 1, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
            ++posted;
        }
        soft_ep_ring(&p.ep);
        soft_ep_wait_send(&p.ep, &info, 10000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(be64toh(results[done % 32]), expect);
        expect += ++done;
    }
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 1000 + n * (n + 1) / 2);
    GDA_FT_ASSERT_EQ(expect, 1000 + n * (n + 1) / 2);

    /* compare-swap: a failing compare leaves the counter, returns it */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(
            &p.ep.sq, (uintptr_t)results, p.mr->lkey,
            p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, 7, 99,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "cswap (fails)");
    GDA_FT_ASSERT_EQ(be64toh(results[0]), expect);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, expect);

    /* ... a matching one swaps */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(
            &p.ep.sq, (uintptr_t)results, p.mr->lkey,
            p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, expect,
            0xfeedfacecafebeefull, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "cswap (swaps)");
    GDA_FT_ASSERT_EQ(be64toh(results[0]), expect);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 0xfeedfacecafebeefull);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, atomic_masked_32_and_64)
{
    uint64_t *result, off = 8192, value;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    result = (uint64_t*)p.buf;

    /* 32-bit masked fetch-add: wraps within 32 bits, neighbour untouched */
    p2_call(&p, P2_CMD_WRITE64, off, 0, 0, 0x77777777fffffff0ull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa32(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off,
            p.remote.rkey, 0x20, 0, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_fa32");
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)result), 0xfffffff0u);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off, 0, 0, 0).value,
                     0x7777777700000010ull);

    /* 32-bit masked compare-swap at +4: swaps the low byte when the
     * compared byte matches */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 4,
            p.remote.rkey, 0x00007700, 0x000000aa, 0x0000ff00, 0x000000ff,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_cs32");
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)result), 0x77777777u);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off, 0, 0, 0).value,
                     0x777777aa00000010ull);

    /* 64-bit masked compare-swap: swap the high half when the low matches */
    p2_call(&p, P2_CMD_WRITE64, off + 8, 0, 0, 0x1111111122222222ull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 8,
            p.remote.rkey, 0x22222222ull, 0x9999999900000000ull,
            0xffffffffull, 0xffffffff00000000ull, GDA_FT_WQE_SIGNALED, &idx),
            GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_cs64");
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 0x1111111122222222ull);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, off + 8, 0, 0, 0).value,
                     0x9999999922222222ull);

    /* 64-bit masked fetch-add, two 32-bit fields: no carry between them */
    p2_call(&p, P2_CMD_WRITE64, off + 16, 0, 0, 0x00000001ffffffffull);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa64(
            &p.ep.sq, (uintptr_t)result, p.mr->lkey, p.remote.addr + off + 16,
            p.remote.rkey, 0x0000000100000001ull, 1ull << 31,
            GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.ep);
    p2_expect_ok(&p, idx, "masked_fa64");
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 0x00000001ffffffffull);
    value = p2_call(&p, P2_CMD_READ64, off + 16, 0, 0, 0).value;
    GDA_FT_ASSERT_EQ(value, 0x0000000200000000ull);
    p2_stop(&p);
}

GDA_FT_TEST(soft_2proc, bidirectional_fetch_add_counters)
{
    uint64_t n = 2000, posted = 0, done = 0, *results;
    gda_ft_dev_cqe_info_t info;
    p2_cmd_t cmd = {P2_CMD_FETCH_ADDS, 0, P2_COUNTER_OFF, 2000, 3};
    p2_reply_t reply;
    uint16_t idx;
    p2_t p;

    p2_start(&p);
    results = (uint64_t*)(p.buf + 8 * P2_MB);
    p2_call(&p, P2_CMD_WRITE64, P2_COUNTER_OFF, 0, 0, 0);

    /* both processes add to the other's counter at the same time: the
     * child 2000 x 3 into ours, we 2000 x 5 into the child's */
    p2_write_all(p.to_child, &cmd, sizeof(cmd));
    while (done < n) {
        while ((posted < n) && (posted - done < 16)) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.ep.sq, (uintptr_t)&results[posted % 16], p.mr->lkey,
                    p.remote.addr + P2_COUNTER_OFF, p.remote.rkey, 5,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
            ++posted;
        }
        soft_ep_ring(&p.ep);
        soft_ep_wait_send(&p.ep, &info, 10000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(be64toh(results[done % 16]), 5 * done);
        ++done;
    }

    GDA_FT_ASSERT_EQ(p2_read_all(p.from_child, &reply, sizeof(reply),
                                 P2_IO_TIMEOUT), 0);
    GDA_FT_ASSERT_EQ(reply.status, 0);   /* its old values were in order */
    GDA_FT_ASSERT_EQ(__atomic_load_n((uint64_t*)(p.buf + P2_COUNTER_OFF),
                                     __ATOMIC_ACQUIRE), 3 * n);
    GDA_FT_ASSERT_EQ(p2_call(&p, P2_CMD_READ64, P2_COUNTER_OFF, 0, 0,
                             0).value, 5 * n);
    p2_stop(&p);
}



/* ---- the demo, end to end ----------------------------------------------- */

GDA_FT_TEST_TIMEOUT(soft_2proc, demo_detects_port_down_and_verifies, 120)
{
    char demo[1024], out[65536];

    snprintf(demo, sizeof(demo), "%s/src/tools/gda_ft_soft_demo",
             gda_ft_test_builddir());
    if (access(demo, X_OK) != 0) {
        GDA_FT_FAIL("%s is not built (make all)", demo);
    }

    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 1);
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' --udp-port %u "
                           "--server-addr 127.0.0.31 --client-addr 127.0.0.32"
                           " --size 16384 --slots 128 --window 32 --timeout 15 "
                           "--down-after-ops 150 --progress 5", demo,
                           p2_udp_port()), 0);
    GDA_FT_ASSERT(strstr(out, "syndrome 0x15 TRANSPORT_RETRY_EXC_ERR after")
                  != NULL);
    GDA_FT_ASSERT(strstr(out, "31 later WQEs flushed: WR_FLUSH_ERR") != NULL);
    GDA_FT_ASSERT(strstr(out, "[server] verification passed") != NULL);
    GDA_FT_ASSERT(strstr(out, "demo PASSED") != NULL);

    /* the schedule variant */
    GDA_FT_ASSERT_EQ(p2_sh(out, sizeof(out), "'%s' --udp-port %u "
                           "--server-addr 127.0.0.31 --client-addr 127.0.0.32"
                           " --size 16384 --slots 128 --window 32 --timeout 15 "
                           "--down-after-ms 400 --progress 5", demo,
                           p2_udp_port()), 0);
    GDA_FT_ASSERT(strstr(out, "DOWN (fault schedule, 400 ms after open)") !=
                  NULL);
    GDA_FT_ASSERT(strstr(out, "demo PASSED") != NULL);
}
