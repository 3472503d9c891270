/*
 * Software HCA conformance: every opcode between two QPs of one process,
 * data compared byte for byte, at the sizes where segmentation changes and
 * at unaligned addresses.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)

static void expect_ok_cqe(soft_ep_t *ep, uint16_t wqe_idx, uint8_t wqe_opcode)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(ep, &info, 10000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        GDA_FT_FAIL("expected REQ CQE, got opcode 0x%x syndrome %s",
                    info.opcode, gda_ft_hca_syndrome_str(info.syndrome));
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, wqe_idx);
    (void)wqe_opcode;
}

/* RDMA WRITE of size bytes from src+soff to dst+doff; checks the guards */
static void check_write(soft_pair_t *p, size_t size, size_t soff, size_t doff)
{
    size_t guard = 64, total = size + doff + guard;
    uint8_t *src = malloc(size + soff + 1);
    uint8_t *dst = malloc(total);
    uint8_t *ref = malloc(total);
    gda_ft_hca_mr_t *smr, *dmr;
    uint16_t idx;

    soft_fill(src, size + soff + 1, (unsigned)size);
    memset(dst, 0xa5, total);
    memcpy(ref, dst, total);
    memcpy(ref + doff, src + soff, size);

    smr = soft_mr(&p->a, src, size + soff + 1, 0);
    dmr = soft_mr(&p->b, dst, total, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p->a.sq,
                                               (uintptr_t)src + soff,
                                               smr->lkey, size,
                                               (uintptr_t)dst + doff,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p->a);
    expect_ok_cqe(&p->a, idx, GDA_FT_MLX5_OPCODE_RDMA_WRITE);
    GDA_FT_ASSERT_MEM_EQ(dst, ref, total);

    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
    free(src);
    free(dst);
    free(ref);
}

static void check_read(soft_pair_t *p, size_t size, size_t loff, size_t roff)
{
    size_t guard = 64, total = size + loff + guard;
    uint8_t *remote = malloc(size + roff + 1);
    uint8_t *local  = malloc(total);
    uint8_t *ref    = malloc(total);
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_mr_t *lmr, *rmr;
    uint16_t idx;

    soft_fill(remote, size + roff + 1, (unsigned)size + 7);
    memset(local, 0x5a, total);
    memcpy(ref, local, total);
    memcpy(ref + loff, remote + roff, size);

    lmr = soft_mr(&p->a, local, total, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    rmr = soft_mr(&p->b, remote, size + roff + 1,
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&p->a.sq,
                                              (uintptr_t)local + loff,
                                              lmr->lkey, size,
                                              (uintptr_t)remote + roff,
                                              rmr->rkey, GDA_FT_WQE_SIGNALED,
                                              &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p->a);
    soft_ep_wait_send(&p->a, &info, 10000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        gda_ft_soft_port_stats_t sa = soft_port_stats(p->dev0, 1);
        gda_ft_soft_port_stats_t sb = soft_port_stats(p->dev1, 1);
        GDA_FT_FAIL("read of %zu: CQE opcode 0x%x syndrome %s; requester: "
                    "tx %lu rx %lu retrans %lu dropped %lu dup %lu unexp %lu;"
                    " responder: tx %lu rx %lu dropped %lu dup %lu oos %lu",
                    size, info.opcode,
                    gda_ft_hca_syndrome_str(info.syndrome), sa.tx_pkts,
                    sa.rx_pkts, sa.retransmits, sa.fault_dropped,
                    sa.rx_duplicate, sa.rx_unexpected, sb.tx_pkts,
                    sb.rx_pkts, sb.fault_dropped, sb.rx_duplicate,
                    sb.rx_out_of_seq);
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
    GDA_FT_ASSERT_EQ(info.byte_cnt, size);
    GDA_FT_ASSERT_MEM_EQ(local, ref, total);

    gda_ft_hca_mr_dereg(lmr);
    gda_ft_hca_mr_dereg(rmr);
    free(remote);
    free(local);
    free(ref);
}

static const size_t soft_sizes[] = {0, 1, 4095, 4096, 4097, 8193,
                                    4 * MB + 3};

GDA_FT_TEST(soft_ops, write_sizes_and_alignment)
{
    soft_pair_t p;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    for (i = 0; i < sizeof(soft_sizes) / sizeof(soft_sizes[0]); ++i) {
        check_write(&p, soft_sizes[i], 0, 0);
        check_write(&p, soft_sizes[i], 3, 5);
    }
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, write_small_mtu)
{
    soft_pair_t p;

    /* MTU 1024: MTU-1, MTU+1 and a multi-packet message */
    soft_pair_init(&p, "UCX_GDA_FT_SOFT_MTU=1024", NULL);
    check_write(&p, 1023, 1, 0);
    check_write(&p, 1025, 0, 7);
    check_write(&p, 1 * MB + 1, 2, 3);
    check_read(&p, 1023, 0, 1);
    check_read(&p, 1025, 7, 0);
    check_read(&p, 1 * MB + 1, 3, 2);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, read_sizes_and_alignment)
{
    soft_pair_t p;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    for (i = 0; i < sizeof(soft_sizes) / sizeof(soft_sizes[0]); ++i) {
        check_read(&p, soft_sizes[i], 0, 0);
        check_read(&p, soft_sizes[i], 1, 6);
    }
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, write_inline)
{
    static const uint32_t sizes[] = {1, 12, 13, 44, 45, 100, 200};
    uint8_t src[256], dst[256 + 8];
    gda_ft_hca_mr_t *dmr;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(src, sizeof(src), i);
        memset(dst, 0, sizeof(dst));
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_inline(
                &p.a.sq, src, sizes[i], (uintptr_t)dst + 1, dmr->rkey,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        expect_ok_cqe(&p.a, idx, GDA_FT_MLX5_OPCODE_RDMA_WRITE);
        GDA_FT_ASSERT_MEM_EQ(dst + 1, src, sizes[i]);
        GDA_FT_ASSERT_EQ(dst[0], 0);
        GDA_FT_ASSERT_EQ(dst[1 + sizes[i]], 0);
    }
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, write_imm_consumes_receive)
{
    uint8_t src[5000], dst[5000], rbuf[16];
    gda_ft_hca_mr_t *smr, *dmr, *rmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, sizeof(src), 1);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    rmr = soft_mr(&p.b, rbuf, sizeof(rbuf), GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    soft_ep_post_recv(&p.b, rbuf, sizeof(rbuf), rmr->lkey);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_imm(&p.a.sq, (uintptr_t)src,
                                                   smr->lkey, sizeof(src),
                                                   (uintptr_t)dst, dmr->rkey,
                                                   0xdeadbeef,
                                                   GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_ok_cqe(&p.a, idx, GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM);
    soft_ep_wait_recv(&p.b, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_WR_IMM);
    GDA_FT_ASSERT_EQ(info.imm, 0xdeadbeef);
    GDA_FT_ASSERT_EQ(info.byte_cnt, sizeof(src));
    GDA_FT_ASSERT_EQ(info.wqe_counter, 0);
    GDA_FT_ASSERT_MEM_EQ(dst, src, sizeof(src));
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, send_sizes_and_imm)
{
    static const uint32_t sizes[] = {0, 1, 4095, 4097, 65536 + 3};
    size_t max = 65536 + 16;
    uint8_t *src = malloc(max), *dst = malloc(max + 2);
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    smr = soft_mr(&p.a, src, max, 0);
    dmr = soft_mr(&p.b, dst, max + 2, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(src, max, i + 100);
        memset(dst, 0, max + 2);
        soft_ep_post_recv(&p.b, dst + 1, max, dmr->lkey);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_imm(&p.a.sq, (uintptr_t)src,
                                                     smr->lkey, sizes[i],
                                                     0x1234 + i,
                                                     GDA_FT_WQE_SIGNALED,
                                                     &idx), GDA_FT_DEV_OK);
        } else {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&p.a.sq, (uintptr_t)src,
                                                 smr->lkey, sizes[i],
                                                 GDA_FT_WQE_SIGNALED, &idx),
                             GDA_FT_DEV_OK);
        }
        soft_ep_ring(&p.a);
        expect_ok_cqe(&p.a, idx, GDA_FT_MLX5_OPCODE_SEND);
        soft_ep_wait_recv(&p.b, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, (i & 1) ? GDA_FT_MLX5_CQE_RESP_SEND_IMM :
                                                GDA_FT_MLX5_CQE_RESP_SEND);
        GDA_FT_ASSERT_EQ(info.byte_cnt, sizes[i]);
        GDA_FT_ASSERT_EQ(info.wqe_counter, i);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(info.imm, 0x1234 + i);
        }
        GDA_FT_ASSERT_MEM_EQ(dst + 1, src, sizes[i]);
        GDA_FT_ASSERT_EQ(dst[0], 0);
        GDA_FT_ASSERT_EQ(dst[1 + sizes[i]], 0);
    }
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, send_inline)
{
    uint8_t src[100], dst[128];
    gda_ft_hca_mr_t *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, sizeof(src), 9);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    soft_ep_post_recv(&p.b, dst, sizeof(dst), dmr->lkey);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send_inline(&p.a.sq, src, sizeof(src),
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_ok_cqe(&p.a, idx, GDA_FT_MLX5_OPCODE_SEND);
    soft_ep_wait_recv(&p.b, &info, 5000);
    GDA_FT_ASSERT_EQ(info.byte_cnt, sizeof(src));
    GDA_FT_ASSERT_MEM_EQ(dst, src, sizeof(src));
    soft_pair_fini(&p);
}

typedef struct atomic_case {
    soft_pair_t     *p;
    uint64_t        *remote;
    uint64_t        *result;
    gda_ft_hca_mr_t *rmr, *lmr;
} atomic_case_t;

static void atomic_setup(atomic_case_t *c, soft_pair_t *p)
{
    c->p      = p;
    c->remote = aligned_alloc(64, 64);
    c->result = aligned_alloc(64, 64);
    memset(c->remote, 0, 64);
    c->rmr = soft_mr(&p->b, c->remote, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    c->lmr = soft_mr(&p->a, c->result, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
}

static void atomic_cleanup(atomic_case_t *c)
{
    free(c->remote);
    free(c->result);
}

static void atomic_wait(atomic_case_t *c, uint16_t idx)
{
    soft_ep_ring(&c->p->a);
    expect_ok_cqe(&c->p->a, idx, 0);
}

GDA_FT_TEST(soft_ops, atomic_fetch_add_and_cswap)
{
    atomic_case_t c;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    atomic_setup(&c, &p);
    c.remote[0] = 1000;

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&p.a.sq, (uintptr_t)c.result,
                                              c.lmr->lkey,
                                              (uintptr_t)c.remote,
                                              c.rmr->rkey, 5,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(c.remote[0], 1005);
    GDA_FT_ASSERT_EQ(be64toh(c.result[0]), 1000);  /* old value, BE */

    /* compare fails: unchanged, old value returned */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(&p.a.sq, (uintptr_t)c.result,
                                              c.lmr->lkey,
                                              (uintptr_t)c.remote,
                                              c.rmr->rkey, 1, 77,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(c.remote[0], 1005);
    GDA_FT_ASSERT_EQ(be64toh(c.result[0]), 1005);

    /* compare succeeds */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(&p.a.sq, (uintptr_t)c.result,
                                              c.lmr->lkey,
                                              (uintptr_t)c.remote,
                                              c.rmr->rkey, 1005, 77,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(c.remote[0], 77);
    GDA_FT_ASSERT_EQ(be64toh(c.result[0]), 1005);
    soft_pair_fini(&p);
    atomic_cleanup(&c);
}

GDA_FT_TEST(soft_ops, atomic_masked_32_and_64)
{
    uint32_t *r32;
    atomic_case_t c;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    atomic_setup(&c, &p);
    r32 = (uint32_t*)&c.remote[1];

    /* 32-bit masked fetch-add, no field boundary: plain add at +8 */
    r32[0] = 0xfffffff0u;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa32(&p.a.sq, (uintptr_t)c.result,
                                                c.lmr->lkey, (uintptr_t)r32,
                                                c.rmr->rkey, 0x20, 0,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(r32[0], 0x10);             /* wraps within 32 bits */
    GDA_FT_ASSERT_EQ(r32[1], 0);                /* neighbour untouched */
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)c.result), 0xfffffff0u);

    /* 32-bit masked compare-swap used as "xor 0xff": compare nothing */
    r32[1] = 0x12345678;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(&p.a.sq, (uintptr_t)c.result,
                                                c.lmr->lkey,
                                                (uintptr_t)&r32[1],
                                                c.rmr->rkey, 0, 0x12345687,
                                                0, 0xff, GDA_FT_WQE_SIGNALED,
                                                &idx), GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(r32[1], 0x12345687);
    GDA_FT_ASSERT_EQ(ntohl(*(uint32_t*)c.result), 0x12345678);

    /* 32-bit masked compare-swap whose masked compare fails */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs32(&p.a.sq, (uintptr_t)c.result,
                                                c.lmr->lkey,
                                                (uintptr_t)&r32[1],
                                                c.rmr->rkey, 0x0000ff00, 0,
                                                0x0000ff00, 0xffffffff,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(r32[1], 0x12345687);

    /* 64-bit masked compare-swap: swap the high half when the low matches */
    c.remote[2] = 0x1111111122222222ull;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&p.a.sq, (uintptr_t)c.result,
                                                c.lmr->lkey,
                                                (uintptr_t)&c.remote[2],
                                                c.rmr->rkey,
                                                0x22222222ull,
                                                0x9999999900000000ull,
                                                0xffffffffull,
                                                0xffffffff00000000ull,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(c.remote[2], 0x9999999922222222ull);
    GDA_FT_ASSERT_EQ(be64toh(c.result[0]), 0x1111111122222222ull);

    /* 64-bit masked fetch-add with a boundary at bit 31: two 32-bit fields,
     * the carry of the low one does not reach the high one */
    c.remote[3] = 0x00000001ffffffffull;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_fa64(&p.a.sq, (uintptr_t)c.result,
                                                c.lmr->lkey,
                                                (uintptr_t)&c.remote[3],
                                                c.rmr->rkey,
                                                0x0000000100000001ull,
                                                1ull << 31,
                                                GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    atomic_wait(&c, idx);
    GDA_FT_ASSERT_EQ(c.remote[3], 0x0000000200000000ull);
    GDA_FT_ASSERT_EQ(be64toh(c.result[0]), 0x00000001ffffffffull);
    soft_pair_fini(&p);
    atomic_cleanup(&c);
}

GDA_FT_TEST(soft_ops, unsignaled_retired_by_signaled)
{
    uint8_t src[64], dst[64 * 16];
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx = 0;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, sizeof(src), 3);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                                   smr->lkey, sizeof(src),
                                                   (uintptr_t)dst + 64 * i,
                                                   dmr->rkey,
                                                   (i == 15) ?
                                                   GDA_FT_WQE_SIGNALED : 0,
                                                   &idx), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&p.a.sq, GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);

    /* Exactly two CQEs: the last write and the NOP */
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_EQ(info.wqe_counter, (uint16_t)(idx - 1));
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
    usleep(20000);
    GDA_FT_ASSERT_EQ(soft_ep_poll_send(&p.a, &info), GDA_FT_DEV_INPROGRESS);
    GDA_FT_ASSERT_EQ(p.a.sq.ci, p.a.sq.pi);
    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_MEM_EQ(dst + 64 * i, src, sizeof(src));
    }
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, fence_orders_write_after_read)
{
    uint64_t *remote = aligned_alloc(64, 64), *local = aligned_alloc(64, 64);
    uint64_t newval = 0xabcdef;
    gda_ft_hca_mr_t *rmr, *lmr, *nmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;
    int round;

    soft_pair_init(&p, NULL, NULL);
    rmr = soft_mr(&p.b, remote, 64, GDA_FT_HCA_ACCESS_REMOTE_READ |
                  GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    lmr = soft_mr(&p.a, local, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    nmr = soft_mr(&p.a, &newval, sizeof(newval), 0);

    for (round = 0; round < 20; ++round) {
        remote[0] = round;
        local[0]  = ~0ull;
        newval    = 1000 + round;
        /* read, then a fenced write of the same word: the read must see the
         * value from before the write */
        gda_ft_sq_post_rdma_read(&p.a.sq, (uintptr_t)local, lmr->lkey, 8,
                                 (uintptr_t)remote, rmr->rkey, 0, &idx);
        gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)&newval, nmr->lkey, 8,
                                  (uintptr_t)remote, rmr->rkey,
                                  GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE,
                                  &idx);
        soft_ep_ring(&p.a);
        soft_ep_wait_send(&p.a, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(local[0], (uint64_t)round);
        GDA_FT_ASSERT_EQ(remote[0], 1000 + round);
    }
    soft_pair_fini(&p);
    free(remote);
    free(local);
}

/*
 * The responder executes requests in PSN order, as an HCA does, also when
 * a read's data is still leaving over later engine passes: a 512 KiB read
 * followed, unfenced, by a write and a fetch-add of bytes it covers
 * returns what was there before either; the atomic returns the value the
 * write left. The read's 128 PSNs leave the write room in the requester's
 * window of 256, so that it lands while the read is still being answered.
 * Every byte read is compared: one that the later requests changed first
 * would show.
 *
 * The property holds while the read is not asked again: a read sent again
 * after its ACK timeout executes again, after the write, on an HCA too
 * (that is what a fence is for). Under ThreadSanitizer the 128 responses
 * outlasted the default 16.7 ms timeout in every run, so the QPs wait
 * 4.3 s here, and a retransmission fails the test by name.
 */
GDA_FT_TEST(soft_ops, read_then_unfenced_write_and_atomic_read_the_old)
{
    size_t len = 512 << 10, wlen = 64 << 10;
    uint8_t *remote = aligned_alloc(64, len), *local = aligned_alloc(64, len);
    uint8_t *expect = malloc(len), *newdata = malloc(wlen);
    uint64_t *old = aligned_alloc(64, 64), word;
    soft_conn_params_t params = soft_default_params;
    gda_ft_hca_mr_t *rmr, *lmr, *nmr, *omr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;
    int round;

    params.timeout = 20;   /* 4.096 us << 20 */
    soft_pair_init(&p, NULL, &params);
    rmr = soft_mr(&p.b, remote, len, GDA_FT_HCA_ACCESS_REMOTE_READ |
                  GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    lmr = soft_mr(&p.a, local, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    nmr = soft_mr(&p.a, newdata, wlen, 0);
    omr = soft_mr(&p.a, old, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);

    for (round = 0; round < 8; ++round) {
        soft_fill(remote, len, 100 + round);
        soft_fill(newdata, wlen, 200 + round);
        memcpy(expect, remote, len);
        memset(local, 0, len);
        /* the write lands in the read's last quarter, the atomic on the
         * read's last word, inside the write */
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)local, lmr->lkey, len, (uintptr_t)remote,
                rmr->rkey, 0, &idx), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.a.sq, (uintptr_t)newdata, nmr->lkey, wlen,
                (uintptr_t)remote + len - wlen, rmr->rkey, 0, &idx),
                GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                &p.a.sq, (uintptr_t)old, omr->lkey,
                (uintptr_t)remote + len - 8, rmr->rkey, 5,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        soft_ep_wait_send(&p.a, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(soft_port_stats(p.dev0, 1).retransmits, 0);

        GDA_FT_ASSERT_MEM_EQ(local, expect, len);
        memcpy(&word, newdata + wlen - 8, 8);
        GDA_FT_ASSERT_EQ(be64toh(old[0]), word);
        word += 5;
        GDA_FT_ASSERT_MEM_EQ(remote + len - wlen, newdata, wlen - 8);
        GDA_FT_ASSERT_MEM_EQ(remote + len - 8, &word, 8);
        GDA_FT_ASSERT_MEM_EQ(remote, expect, len - wlen);
    }
    soft_pair_fini(&p);
    free(remote);
    free(local);
    free(expect);
    free(newdata);
    free(old);
}

GDA_FT_TEST(soft_ops, loopback_same_device)
{
    uint8_t src[3000], dst[3000];
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_mr_t *smr, *dmr;
    soft_ep_t a, b;
    uint16_t idx;

    /* Two QPs of one port talking to each other */
    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");
    soft_ep_create(&a, dev, 1);
    soft_ep_create(&b, dev, 1);
    soft_ep_pair_connect(&a, &b, &soft_default_params);
    soft_fill(src, sizeof(src), 5);
    smr = soft_mr(&a, src, sizeof(src), 0);
    dmr = soft_mr(&b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&a.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&a);
    expect_ok_cqe(&a, idx, 0);
    GDA_FT_ASSERT_MEM_EQ(dst, src, sizeof(src));
    soft_ep_destroy(&a);
    soft_ep_destroy(&b);
    gda_ft_hca_close(dev);
}

GDA_FT_TEST(soft_ops, many_outstanding_wrap_sq)
{
    size_t n = 2000, len = 777;
    uint8_t *src = malloc(len), *dst = malloc(n * len);
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_status_t status;
    soft_pair_t p;
    size_t i, done = 0;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len, 11);
    memset(dst, 0, n * len);
    smr = soft_mr(&p.a, src, len, 0);
    dmr = soft_mr(&p.b, dst, n * len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 0; i < n;) {
        status = gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src, smr->lkey,
                                           len, (uintptr_t)dst + i * len,
                                           dmr->rkey, GDA_FT_WQE_SIGNALED,
                                           &idx);
        if (status == GDA_FT_DEV_NO_RESOURCE) {
            soft_ep_ring(&p.a);
            soft_ep_wait_send(&p.a, &info, 5000);
            GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
            ++done;
            continue;
        }
        GDA_FT_ASSERT_EQ(status, GDA_FT_DEV_OK);
        ++i;
    }
    soft_ep_ring(&p.a);
    while (done < n) {
        soft_ep_wait_send(&p.a, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        ++done;
    }
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_MEM_EQ(dst + i * len, src, len);
    }
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_ops, zero_length_ignores_rkey_and_address)
{
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    /* As on hardware: no memory is touched, so no key is checked (the
     * probe UCX's ep_check posts) */
    soft_pair_init(&p, NULL, NULL);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, 0, 0, 0, 0, 0,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&p.a.sq, 0, 0, 0, 0, 0,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
    GDA_FT_ASSERT_EQ(info.byte_cnt, 0);
    GDA_FT_ASSERT_EQ(p.b.qp->state, GDA_FT_HCA_QP_RTS);
    soft_pair_fini(&p);
}
