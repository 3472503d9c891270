/*
 * Software HCA conformance: error syndromes, protection checks, RNR and
 * retransmission behaviour, link flaps, and hostile datagrams.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"
#include "gda_ft_soft_wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void expect_error(soft_ep_t *ep, uint16_t idx, uint8_t syndrome)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(ep, &info, 10000);
    if ((info.opcode != GDA_FT_MLX5_CQE_REQ_ERR) ||
        (info.syndrome != syndrome)) {
        GDA_FT_FAIL("expected %s on WQE %u, got CQE opcode 0x%x %s on %u",
                    gda_ft_hca_syndrome_str(syndrome), idx, info.opcode,
                    gda_ft_hca_syndrome_str(info.syndrome), info.wqe_counter);
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
}

/* Posts n more writes and expects each to be flushed */
static void expect_flush_of_later(soft_pair_t *p, void *src, uint32_t lkey,
                                  void *dst, uint32_t rkey, unsigned n)
{
    uint16_t idx[8];
    unsigned i;

    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p->a.sq, (uintptr_t)src,
                                                   lkey, 8, (uintptr_t)dst,
                                                   rkey, 0, &idx[i]),
                         GDA_FT_DEV_OK);
    }
    soft_ep_ring(&p->a);
    for (i = 0; i < n; ++i) {
        expect_error(&p->a, idx[i], GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
    }
    GDA_FT_ASSERT_EQ(p->a.qp->state, GDA_FT_HCA_QP_ERR);
}

GDA_FT_TEST(soft_errors, bad_lkey_local_prot_error_then_flush)
{
    uint8_t src[256], dst[256], zero[256] = {0};
    gda_ft_hca_mr_t *smr, *dmr;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    memset(dst, 0, sizeof(dst));
    soft_fill(src, sizeof(src), 1);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey ^ 0x5a5a5a5a,
                                               sizeof(src), (uintptr_t)dst,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_error(&p.a, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    expect_flush_of_later(&p, src, smr->lkey, dst, dmr->rkey, 3);
    GDA_FT_ASSERT_MEM_EQ(dst, zero, sizeof(dst));

    /* lkey beyond the region: also a protection error */
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, local_buffer_out_of_bounds)
{
    uint8_t src[256], dst[512], zero[512] = {0};
    gda_ft_hca_mr_t *smr, *dmr;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    memset(dst, 0, sizeof(dst));
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src) + 1,
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_error(&p.a, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    GDA_FT_ASSERT_MEM_EQ(dst, zero, sizeof(dst));
    soft_pair_fini(&p);
}

/* A remote access that must be refused with nothing written */
static void check_remote_refused(unsigned mr_access, int op, int key_flip,
                                 size_t oob)
{
    uint64_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    uint8_t ref[4096];
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_status_t status;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, 4096, 2);
    soft_fill(dst, 4096, 3);
    memcpy(ref, dst, sizeof(ref));
    smr = soft_mr(&p.a, src, 4096, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    /* The MR covers the first 2 KiB only */
    dmr = soft_mr(&p.b, dst, 2048, mr_access);

    switch (op) {
    case 0:
        status = gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                           smr->lkey, 1024,
                                           (uintptr_t)dst + 1024 + oob,
                                           dmr->rkey ^ key_flip,
                                           GDA_FT_WQE_SIGNALED, &idx);
        break;
    case 1:
        status = gda_ft_sq_post_rdma_read(&p.a.sq, (uintptr_t)src,
                                          smr->lkey, 1024,
                                          (uintptr_t)dst + 1024 + oob,
                                          dmr->rkey ^ key_flip,
                                          GDA_FT_WQE_SIGNALED, &idx);
        break;
    default:
        status = gda_ft_sq_post_atomic_fa(&p.a.sq, (uintptr_t)src, smr->lkey,
                                          (uintptr_t)dst + 1024 + oob,
                                          dmr->rkey ^ key_flip, 1,
                                          GDA_FT_WQE_SIGNALED, &idx);
        break;
    }
    GDA_FT_ASSERT_EQ(status, GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_error(&p.a, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
    GDA_FT_ASSERT_MEM_EQ(dst, ref, sizeof(ref));
    soft_pair_fini(&p);
    free(src);
    free(dst);
}

GDA_FT_TEST(soft_errors, bad_rkey_remote_access_error)
{
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 0, 0x10000, 0);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 1, 0x1, 0);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 2, 0x80000000, 0);
}

GDA_FT_TEST(soft_errors, out_of_bounds_remote_access_error)
{
    /* the write straddles the end of the MR by one byte */
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 0, 0, 1);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 1, 0, 1);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL, 2, 0, 1024);
}

/*
 * The protection domain: a valid rkey of the target's device, in bounds
 * and with every right, but of a memory region registered in another PD
 * than the target QP's, is refused and the memory is untouched.
 */
GDA_FT_TEST(soft_errors, rkey_of_another_pd_refused)
{
    uint64_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    gda_ft_hca_mr_attr_t attr = {dst, 4096, GDA_FT_HCA_ACCESS_ALL,
                                 GDA_FT_HCA_MEM_HOST};
    gda_ft_hca_mr_t *smr, *dmr, *own;
    gda_ft_hca_pd_t *other_pd;
    uint8_t ref[4096];
    soft_pair_t p;
    uint16_t idx;
    int op;

    for (op = 0; op < 3; ++op) {
        soft_pair_init(&p, NULL, NULL);
        soft_fill(src, 4096, 2);
        soft_fill(dst, 4096, 3);
        memcpy(ref, dst, sizeof(ref));
        smr = soft_mr(&p.a, src, 4096, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
        GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(p.dev1, &other_pd));
        GDA_FT_ASSERT(other_pd != p.b.pd);
        GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(other_pd, &attr, &dmr));
        /* the same memory in the QP's own PD works: the key is the fault */
        own = soft_mr(&p.b, dst, 4096, GDA_FT_HCA_ACCESS_ALL);
        GDA_FT_ASSERT(own->rkey != dmr->rkey);
        switch (op) {
        case 0:
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                    &p.a.sq, (uintptr_t)src, smr->lkey, 1024,
                    (uintptr_t)dst, dmr->rkey, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
            break;
        case 1:
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                    &p.a.sq, (uintptr_t)src, smr->lkey, 1024,
                    (uintptr_t)dst, dmr->rkey, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
            break;
        default:
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.a.sq, (uintptr_t)src, smr->lkey, (uintptr_t)dst,
                    dmr->rkey, 1, GDA_FT_WQE_SIGNALED, &idx),
                    GDA_FT_DEV_OK);
            break;
        }
        soft_ep_ring(&p.a);
        expect_error(&p.a, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
        GDA_FT_ASSERT_MEM_EQ(dst, ref, sizeof(ref));
        gda_ft_hca_mr_dereg(dmr);
        gda_ft_hca_mr_dereg(own);
        gda_ft_hca_pd_free(other_pd);
        soft_pair_fini(&p);
    }
    free(src);
    free(dst);
}

/* One bit of n values: how often it is set */
static unsigned bit_count(const uint32_t *v, unsigned n, unsigned bit)
{
    unsigned i, count = 0;

    for (i = 0; i < n; ++i) {
        count += (v[i] >> bit) & 1;
    }
    return count;
}

/*
 * Keys and QP numbers an attacker must not guess from those it saw: over
 * 2000 registrations and 256 QPs, no value repeats, no two successive
 * differences are equal (no counter), and each random bit is set in
 * 50% +- 6 sigma of them (5 sigma over 56 bits failed one run in about
 * 30000, and did once in CI's sanitizer job)
 */
static void expect_unpredictable(const char *what, const uint32_t *v,
                                 unsigned n, unsigned bits)
{
    double sigma = sqrt(n) / 2.0;
    unsigned i, j, bit, count, steps = 0;

    for (i = 0; i < n; ++i) {
        for (j = i + 1; j < n; ++j) {
            if (v[i] == v[j]) {
                GDA_FT_FAIL("%s %u and %u are both 0x%x", what, i, j, v[i]);
            }
        }
    }
    for (i = 2; i < n; ++i) {
        steps += ((v[i] - v[i - 1]) == (v[i - 1] - v[i - 2]));
    }
    GDA_FT_ASSERT(steps < n / 100);
    for (bit = 0; bit < bits; ++bit) {
        count = bit_count(v, n, bit);
        if (fabs(count - n / 2.0) > 6 * sigma) {
            GDA_FT_FAIL("%s: bit %u set in %u of %u", what, bit, count, n);
        }
    }
    printf("%s: %u values, all distinct, %u equal steps, every bit of %u "
           "within 6 sigma of half\n", what, n, steps, bits);
}

GDA_FT_TEST(soft_errors, rkeys_and_qpns_unpredictable)
{
    enum { NMR = 2000, NQP = 256 };
    static uint32_t rkeys[NMR], lkeys[NMR], qpns[NQP];
    static soft_ep_t eps[NQP];
    uint8_t buf[64];
    gda_ft_hca_mr_t *mr;
    gda_ft_hca_dev_t *dev;
    unsigned i;

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");
    soft_ep_create(&eps[0], dev, 1);
    for (i = 0; i < NMR; ++i) {
        /* registered and released one after the other: a reused slot
         * must not give a key seen before */
        mr       = soft_mr(&eps[0], buf, sizeof(buf),
                           GDA_FT_HCA_ACCESS_ALL);
        rkeys[i] = mr->rkey;
        lkeys[i] = mr->lkey;
        gda_ft_hca_mr_dereg(mr);
    }
    qpns[0] = eps[0].qp->qpn;
    for (i = 1; i < NQP; ++i) {
        soft_ep_create(&eps[i], dev, 1);
        qpns[i] = eps[i].qp->qpn;
    }
    expect_unpredictable("rkeys", rkeys, NMR, 32);
    expect_unpredictable("lkeys", lkeys, NMR, 32);
    expect_unpredictable("QPNs", qpns, NQP, 24);   /* QPNs have 24 bits */
    for (i = 0; i < NQP; ++i) {
        GDA_FT_ASSERT(qpns[i] < (1u << 24));
        soft_ep_destroy(&eps[i]);
    }
    gda_ft_hca_close(dev);
}

GDA_FT_TEST(soft_errors, missing_access_right)
{
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL & ~GDA_FT_HCA_ACCESS_REMOTE_WRITE,
                         0, 0, 0);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL & ~GDA_FT_HCA_ACCESS_REMOTE_READ,
                         1, 0, 0);
    check_remote_refused(GDA_FT_HCA_ACCESS_ALL &
                         ~GDA_FT_HCA_ACCESS_REMOTE_ATOMIC, 2, 0, 0);
}

GDA_FT_TEST(soft_errors, rnr_retry_exceeded_without_receive)
{
    soft_conn_params_t params = soft_default_params;
    uint8_t src[64];
    gda_ft_hca_mr_t *smr;
    soft_pair_t p;
    uint16_t idx;

    params.rnr_retry     = 2;
    params.min_rnr_timer = 1;   /* 10 us */
    soft_pair_init(&p, NULL, &params);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&p.a.sq, (uintptr_t)src, smr->lkey,
                                         sizeof(src), GDA_FT_WQE_SIGNALED,
                                         &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_error(&p.a, idx, GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR);
    GDA_FT_ASSERT(soft_port_stats(p.dev1, 1).tx_rnr_naks >= 3);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, rnr_recovers_when_receive_posted)
{
    uint8_t src[64], dst[64];
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);    /* rnr_retry 7: infinite */
    soft_fill(src, sizeof(src), 4);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_send(&p.a.sq, (uintptr_t)src, smr->lkey,
                                         sizeof(src), GDA_FT_WQE_SIGNALED,
                                         &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    usleep(20000);
    GDA_FT_ASSERT_EQ(soft_ep_poll_send(&p.a, &info), GDA_FT_DEV_INPROGRESS);
    GDA_FT_ASSERT(soft_port_stats(p.dev1, 1).tx_rnr_naks >= 1);
    soft_ep_post_recv(&p.b, dst, sizeof(dst), dmr->lkey);
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    soft_ep_wait_recv(&p.b, &info, 5000);
    GDA_FT_ASSERT_EQ(info.byte_cnt, sizeof(src));
    GDA_FT_ASSERT_MEM_EQ(dst, src, sizeof(src));
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, retry_exceeded_after_port_down_in_time)
{
    soft_conn_params_t params = soft_default_params;
    uint8_t src[4096], dst[4096];
    gda_ft_hca_mr_t *smr, *dmr;
    double start, elapsed, expected;
    soft_pair_t p;
    uint16_t idx;

    /* timeout 12: 16.8 ms per try; 3 retries: 4 tries in all */
    params.timeout   = 12;
    params.retry_cnt = 3;
    expected         = 4 * 4.096e-6 * (1 << 12);
    soft_pair_init(&p, NULL, &params);
    smr = soft_mr(&p.a, src, sizeof(src), 0);
    dmr = soft_mr(&p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 0));
    start = soft_now_sec();
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_error(&p.a, idx, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    elapsed = soft_now_sec() - start;
    printf("retry exceeded after %.1f ms (expected %.1f ms)\n", elapsed * 1e3,
           expected * 1e3);
    /* never early; late only by scheduling noise (a loaded 2-core
     * machine can delay the engine thread by a good fraction of a second) */
    GDA_FT_ASSERT(elapsed >= expected * 0.95);
    GDA_FT_ASSERT(elapsed <= expected + 1.0);
    GDA_FT_ASSERT_EQ(soft_port_stats(p.dev0, 1).retransmits, 4);
    expect_flush_of_later(&p, src, smr->lkey, dst, dmr->rkey, 4);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, flap_shorter_than_retry_window_loses_nothing)
{
    size_t len = 1 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    /* retry window: 8 tries of 16.8 ms = 134 ms; the flap lasts 40 ms */
    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len, 5);
    smr = soft_mr(&p.a, src, len, 0);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq,
                                                   (uintptr_t)src + i * 65536,
                                                   smr->lkey, 65536,
                                                   (uintptr_t)dst + i * 65536,
                                                   dmr->rkey,
                                                   GDA_FT_WQE_SIGNALED, &idx),
                         GDA_FT_DEV_OK);
        if (i == 4) {
            soft_ep_ring(&p.a);
            GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 0));
        }
    }
    soft_ep_ring(&p.a);
    usleep(40000);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(p.dev1, 1, 1));
    for (i = 0; i < 16; ++i) {
        soft_ep_wait_send(&p.a, &info, 5000);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).retransmits >= 1);
    GDA_FT_ASSERT_EQ(p.a.qp->state, GDA_FT_HCA_QP_RTS);
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, port_events_and_state)
{
    gda_ft_hca_port_attr_t attr;
    gda_ft_hca_event_t event;
    gda_ft_hca_dev_t *dev;

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(dev, &event), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(dev, 1, 0));
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    GDA_FT_ASSERT_EQ(attr.state, GDA_FT_HCA_PORT_DOWN);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(dev, &event));
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(event.port_num, 1);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(dev, 1, 1));
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    GDA_FT_ASSERT_EQ(attr.state, GDA_FT_HCA_PORT_ACTIVE);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(dev, &event));
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(dev, &event), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_EQ(gda_ft_soft_port_set_up(dev, 2, 0),
                     UCS_ERR_INVALID_PARAM);
    gda_ft_hca_close(dev);
}

GDA_FT_TEST(soft_errors, invalid_arguments_refused)
{
    gda_ft_hca_qp_attr_t attr = {0};
    gda_ft_hca_mr_attr_t mr_attr = {0};
    gda_ft_hca_mr_t *mr;
    gda_ft_hca_dev_t *dev;
    soft_ep_t ep;

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");
    soft_ep_create(&ep, dev, 1);

    /* RESET -> RTS is not a transition */
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_modify(ep.qp, GDA_FT_HCA_QP_RTS, &attr),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(ep.qp, GDA_FT_HCA_QP_INIT, &attr));
    attr.path_mtu = 1000;   /* not a power of 2 */
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_modify(ep.qp, GDA_FT_HCA_QP_RTR, &attr),
                     UCS_ERR_INVALID_PARAM);
    attr.path_mtu = 4096;   /* GID not IPv4-mapped */
    memset(attr.dest_gid, 0xfe, sizeof(attr.dest_gid));
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_modify(ep.qp, GDA_FT_HCA_QP_RTR, &attr),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(ep.qp->state, GDA_FT_HCA_QP_INIT);

    mr_attr.addr   = NULL;
    mr_attr.length = 100;
    GDA_FT_ASSERT_EQ(gda_ft_hca_mr_reg(ep.pd, &mr_attr, &mr),
                     UCS_ERR_INVALID_PARAM);
    mr_attr.addr   = &attr;
    mr_attr.length = sizeof(attr);
    mr_attr.access = 0x100;
    GDA_FT_ASSERT_EQ(gda_ft_hca_mr_reg(ep.pd, &mr_attr, &mr),
                     UCS_ERR_INVALID_PARAM);
    mr_attr.access   = 0;
    mr_attr.mem_type = GDA_FT_HCA_MEM_LAST;
    GDA_FT_ASSERT_EQ(gda_ft_hca_mr_reg(ep.pd, &mr_attr, &mr),
                     UCS_ERR_INVALID_PARAM);

    soft_ep_destroy(&ep);
    gda_ft_hca_close(dev);
}

GDA_FT_TEST(soft_errors, malformed_device_config_refused)
{
    static const char *bad[] = {
        "x", "=127.0.0.1", "a=", "a=1.2.3", "a=127.0.0.1:0",
        "a=127.0.0.1:70000", "a=127.0.0.1+127.0.0.2+127.0.0.3",
        "a=127.0.0.1,a=127.0.0.2",
        "averyveryveryveryveryverylongdevicename=127.0.0.1"
    };
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        setenv("UCX_GDA_FT_SOFT_DEVICES", bad[i], 1);
        GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
        GDA_FT_ASSERT_OK(gda_ft_hca_query_devices(&infos, &count));
        if (count != 0) {
            GDA_FT_FAIL("'%s' was accepted", bad[i]);
        }
        gda_ft_hca_free_device_list(infos);
    }

    setenv("UCX_GDA_FT_SOFT_DEVICES", "d0=127.0.0.1+127.0.0.2:5000", 1);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
    GDA_FT_ASSERT_OK(gda_ft_hca_query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 1);
    GDA_FT_ASSERT_EQ(infos[0].num_ports, 2);
    gda_ft_hca_free_device_list(infos);

    setenv("UCX_GDA_FT_SOFT_MTU", "1000", 1);
    GDA_FT_ASSERT_EQ(gda_ft_soft_reload_config(), UCS_ERR_INVALID_PARAM);
    unsetenv("UCX_GDA_FT_SOFT_MTU");

    for (i = 0; i < 2; ++i) {
        setenv("UCX_GDA_FT_SOFT_TX_BUDGET", (i == 0) ? "0" : "257", 1);
        GDA_FT_ASSERT_EQ(gda_ft_soft_reload_config(), UCS_ERR_INVALID_PARAM);
    }
    setenv("UCX_GDA_FT_SOFT_TX_BUDGET", "256", 1);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
    unsetenv("UCX_GDA_FT_SOFT_TX_BUDGET");
}

GDA_FT_TEST(soft_errors, lost_atomic_ack_applied_once)
{
    uint64_t *remote = aligned_alloc(64, 64), *result = aligned_alloc(64, 64);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *rmr, *lmr;
    gda_ft_dev_cqe_info_t info;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    remote[0] = 100;
    rmr = soft_mr(&p.b, remote, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    lmr = soft_mr(&p.a, result, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);

    /* The request lands, the response is lost: the requester retransmits
     * and the responder answers from its cache without adding again */
    fault.ack_drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&p.a.sq, (uintptr_t)result,
                                              lmr->lkey, (uintptr_t)remote,
                                              rmr->rkey, 7,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    usleep(40000);   /* two retransmissions of 16.8 ms */
    GDA_FT_ASSERT_EQ(remote[0], 107);
    fault.ack_drop = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    soft_ep_wait_send(&p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_EQ(remote[0], 107);
    GDA_FT_ASSERT_EQ(be64toh(result[0]), 100);
    GDA_FT_ASSERT(soft_port_stats(p.dev1, 1).rx_duplicate >= 1);
    soft_pair_fini(&p);
    free(remote);
    free(result);
}

/* The n-th completion of a transfer under injected faults is a success;
 * else both ports' counters tell what the faults did */
static void expect_ok_under_faults(soft_pair_t *p, unsigned n)
{
    gda_ft_soft_port_stats_t sa, sb;
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(&p->a, &info, 20000);
    if (info.opcode == GDA_FT_MLX5_CQE_REQ) {
        return;
    }
    sa = soft_port_stats(p->dev0, 1);
    sb = soft_port_stats(p->dev1, 1);
    GDA_FT_FAIL("CQE %u: %s; requester retrans %lu rx %lu dropped %lu dup "
                "%lu unexp %lu; responder rx %lu dup %lu oos %lu naks %lu",
                n, gda_ft_hca_syndrome_str(info.syndrome), sa.retransmits,
                sa.rx_pkts, sa.fault_dropped, sa.rx_duplicate,
                sa.rx_unexpected, sb.rx_pkts, sb.rx_duplicate,
                sb.rx_out_of_seq, sb.tx_naks);
}

/*
 * UCX_GDA_FT_SOFT_ACK_DROP loses a fraction of the responses only: writes,
 * reads and atomics land once and complete, the requester retransmits what
 * it heard nothing of, and the responder answers its duplicates; the
 * requester's port (which sends requests only) drops nothing.
 */
GDA_FT_TEST(soft_errors, ack_drop_setting_loses_responses_only)
{
    size_t len = 256 << 10, chunk = len / 8;
    uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
    uint64_t *counter = aligned_alloc(64, 64), *old = aligned_alloc(64, 512);
    gda_ft_hca_mr_t *smr, *dmr, *bmr, *cmr, *omr;
    gda_ft_soft_port_stats_t req, resp;
    unsigned i, round;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, "UCX_GDA_FT_SOFT_ACK_DROP=0.2", NULL);
    unsetenv("UCX_GDA_FT_SOFT_ACK_DROP");
    soft_fill(src, len, 11);
    counter[0] = 0;
    smr = soft_mr(&p.a, src, len, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    omr = soft_mr(&p.a, old, 512, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    cmr = soft_mr(&p.b, counter, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);

    for (round = 0; round < 8; ++round) {
        for (i = 0; i < 8; ++i) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                    &p.a.sq, (uintptr_t)src + i * chunk, smr->lkey, chunk,
                    (uintptr_t)dst + i * chunk, dmr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                    &p.a.sq, (uintptr_t)&old[round * 8 + i], omr->lkey,
                    (uintptr_t)counter, cmr->rkey, 1, GDA_FT_WQE_SIGNALED,
                    &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)back, bmr->lkey, len, (uintptr_t)dst,
                dmr->rkey, GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE, &idx),
                GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (i = 0; i < 17; ++i) {
            expect_ok_under_faults(&p, round * 17 + i);
        }
        GDA_FT_ASSERT_MEM_EQ(back, src, len);
        memset(back, 0, len);
    }

    /* 64 increments, each applied once: the old values are 0..63 */
    GDA_FT_ASSERT_EQ(counter[0], 64);
    for (i = 0; i < 64; ++i) {
        GDA_FT_ASSERT_EQ(be64toh(old[i]), i);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    req  = soft_port_stats(p.dev0, 1);
    resp = soft_port_stats(p.dev1, 1);
    GDA_FT_ASSERT_EQ(req.fault_dropped, 0);
    GDA_FT_ASSERT(resp.fault_dropped > 0);
    GDA_FT_ASSERT(req.retransmits > 0);
    GDA_FT_ASSERT(resp.rx_duplicate > 0);
    soft_pair_fini(&p);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
    free(src);
    free(dst);
    free(back);
    free(counter);
    free(old);
}

/*
 * A lost response shows by the next one: the requester goes back at once
 * (an implied NAK) instead of waiting a retransmission timeout per lost
 * response, which made a 3 MiB read under 0.7% loss miss a 1 s failover
 * deadline. Each round has a 512 KiB read, four 4 KiB reads and a fetch-add
 * in flight at once. Going back, the requester asks for all of them again
 * (the read from its first missing response), and the responder drops the
 * answers it queued for the first one asked again and those after it,
 * never those before: it used to drop them all at each duplicate, so that
 * only the last read asked again was answered, the rest after a timeout.
 * The atomic's answer leaves behind the reads before it, in PSN order.
 */
GDA_FT_TEST(soft_errors, lost_responses_recovered_without_the_timer)
{
    size_t big = 512 << 10, small = 4096, rounds = 16, i, j;
    size_t slot = big + 4 * small;
    uint8_t *src = malloc(big), *dst = malloc(slot * rounds);
    uint64_t *counter = aligned_alloc(64, 64), *old = aligned_alloc(64, 128);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *cmr, *omr;
    gda_ft_soft_port_stats_t req;
    soft_pair_t p;
    uint16_t idx;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, big, 12);
    memset(dst, 0, slot * rounds);
    counter[0] = 0;
    dmr = soft_mr(&p.a, dst, slot * rounds, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    omr = soft_mr(&p.a, old, 128, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    smr = soft_mr(&p.b, src, big, GDA_FT_HCA_ACCESS_REMOTE_READ);
    cmr = soft_mr(&p.b, counter, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    fault.ack_drop = 0.01;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (i = 0; i < rounds; ++i) {
        /* the big read, then four small ones of its last pages */
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)dst + i * slot, dmr->lkey, big,
                (uintptr_t)src, smr->rkey, GDA_FT_WQE_SIGNALED, &idx),
                GDA_FT_DEV_OK);
        for (j = 1; j <= 4; ++j) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                    &p.a.sq, (uintptr_t)dst + i * slot + big +
                    (j - 1) * small, dmr->lkey, small,
                    (uintptr_t)src + big - j * small, smr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(
                &p.a.sq, (uintptr_t)&old[i], omr->lkey, (uintptr_t)counter,
                cmr->rkey, 1, GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (j = 0; j < 6; ++j) {
            expect_ok_under_faults(&p, i * 6 + j);
        }
        GDA_FT_ASSERT_MEM_EQ(dst + i * slot, src, big);
        for (j = 1; j <= 4; ++j) {
            GDA_FT_ASSERT_MEM_EQ(dst + i * slot + big + (j - 1) * small,
                                 src + big - j * small, small);
        }
        GDA_FT_ASSERT_EQ(be64toh(old[i]), i);
    }
    GDA_FT_ASSERT_EQ(counter[0], rounds);

    req = soft_port_stats(p.dev0, 1);
    printf("%lu responses lost, %lu implied NAKs, %lu timeouts\n",
           (unsigned long)soft_port_stats(p.dev1, 1).fault_dropped,
           (unsigned long)req.implied_naks, (unsigned long)req.retransmits);
    GDA_FT_ASSERT(req.implied_naks >= 8);
    /* only a lost last response of a round waits for the timer (1 with
     * this seed; an atomic answer overtaking the reads' cost one timeout
     * in every round) */
    GDA_FT_ASSERT(req.retransmits <= rounds / 2);
    soft_pair_fini(&p);
    free(src);
    free(dst);
    free(counter);
    free(old);
}

GDA_FT_TEST(soft_errors, drop_delay_reorder_lose_nothing)
{
    size_t len = 2 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len), *back = calloc(1, len);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *bmr;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len, 6);
    smr = soft_mr(&p.a, src, len, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    fault.drop       = 0.02;
    fault.delay      = 0.02;
    fault.delay_time = 0.001;
    fault.reorder    = 0.05;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.a.sq, (uintptr_t)src + i * (len / 8), smr->lkey, len / 8,
                (uintptr_t)dst + i * (len / 8), dmr->rkey,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&p.a.sq, (uintptr_t)back,
                                              bmr->lkey, len, (uintptr_t)dst,
                                              dmr->rkey,
                                              GDA_FT_WQE_SIGNALED |
                                              GDA_FT_WQE_FENCE, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    for (i = 0; i < 9; ++i) {
        expect_ok_under_faults(&p, i);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT_MEM_EQ(back, src, len);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_dropped > 0);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_delayed > 0);
    free(src);
    free(dst);
    free(back);
    soft_pair_fini(&p);
}

/*
 * Writes and reads longer than the requester's window (256 packets), one
 * packet in 500 lost, and (when delay) one in 1000 delayed by 200 us and
 * one in 1000 held behind later ones: every loss is recovered by a NAK or
 * the timer, and nothing waits for more than the retry budget.
 */
static void faults_in_messages_longer_than_the_window(int delay)
{
    size_t len = 3 << 20, count = 8, i;
    uint8_t *src = malloc(len * count), *dst = calloc(count, len);
    uint8_t *back = calloc(1, len);
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_mr_t *smr, *dmr, *bmr;
    soft_pair_t p;
    uint16_t idx;
    unsigned round;

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, len * count, 9);
    smr = soft_mr(&p.a, src, len * count, 0);
    bmr = soft_mr(&p.a, back, len, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&p.b, dst, len * count, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                  GDA_FT_HCA_ACCESS_REMOTE_READ);
    fault.drop = 0.002;
    if (delay) {
        fault.delay      = 0.001;
        fault.delay_time = 0.0002;
        fault.reorder    = 0.001;
    }
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));

    for (round = 0; round < 4; ++round) {
        for (i = 0; i < count; ++i) {
            GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                    &p.a.sq, (uintptr_t)src + i * len, smr->lkey, len,
                    (uintptr_t)dst + i * len, dmr->rkey,
                    GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
        }
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(
                &p.a.sq, (uintptr_t)back, bmr->lkey, len,
                (uintptr_t)dst + round * len, dmr->rkey,
                GDA_FT_WQE_SIGNALED | GDA_FT_WQE_FENCE, &idx),
                GDA_FT_DEV_OK);
        soft_ep_ring(&p.a);
        for (i = 0; i <= count; ++i) {
            expect_ok_under_faults(&p, round * (count + 1) + i);
        }
        GDA_FT_ASSERT_MEM_EQ(back, src + round * len, len);
    }
    GDA_FT_ASSERT_MEM_EQ(dst, src, len * count);
    GDA_FT_ASSERT(soft_port_stats(p.dev0, 1).fault_dropped > 0);
    free(src);
    free(dst);
    free(back);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_errors, drops_in_messages_longer_than_the_window)
{
    faults_in_messages_longer_than_the_window(0);
}

GDA_FT_TEST(soft_errors, drops_and_delays_in_messages_longer_than_the_window)
{
    faults_in_messages_longer_than_the_window(1);
}

/* ---- hostile datagrams --------------------------------------------------- */

typedef struct attacker {
    volatile int stop;
    uint16_t     udp_port;
    uint32_t     victim_qpn;
    unsigned     sent;
} attacker_t;

static void attacker_send(int fd, uint16_t port, const void *buf, size_t len)
{
    struct sockaddr_in dst = {0};

    dst.sin_family      = AF_INET;
    dst.sin_port        = htons(port);
    dst.sin_addr.s_addr = htonl(0x7f000002);   /* tsoft1 */
    sendto(fd, buf, len, 0, (struct sockaddr*)&dst, sizeof(dst));
}

static void *attacker_thread(void *arg)
{
    attacker_t *a = arg;
    struct sockaddr_in src = {0};
    uint8_t pkt[256];
    gda_ft_roce_reth_t reth;
    unsigned i = 0;
    size_t len;
    int fd;

    fd = socket(AF_INET, SOCK_DGRAM, 0);
    src.sin_family      = AF_INET;
    src.sin_port        = htons(a->udp_port);   /* looks like RoCE */
    src.sin_addr.s_addr = htonl(0x7f000009);   /* not the peer */
    if (bind(fd, (struct sockaddr*)&src, sizeof(src)) < 0) {
        src.sin_port = 0;
        bind(fd, (struct sockaddr*)&src, sizeof(src));
    }

    while (!a->stop) {
        switch (i++ % 5) {
        case 0: /* random bytes */
            soft_fill(pkt, sizeof(pkt), i);
            attacker_send(fd, a->udp_port, pkt, 7 + i % 200);
            break;
        case 1: /* truncated BTH */
            attacker_send(fd, a->udp_port, pkt, 5);
            break;
        case 2: /* well-formed write to the victim QP from a stranger */
            reth.va      = 0;
            reth.rkey    = htonl(0x12345678);
            reth.dma_len = htonl(16);
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_WRITE_ONLY,
                                        a->victim_qpn, 0x123 + i, 1, 16,
                                        &reth, sizeof(reth));
            memset(pkt + len, 0xee, 16);
            len += 16;
            len += gda_ft_roce_finish(pkt, len);
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        case 3: /* well-formed packet to a QP that does not exist */
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_SEND_ONLY,
                                        a->victim_qpn ^ 0x1, 0, 1, 0, NULL,
                                        0);
            len += gda_ft_roce_finish(pkt, len);
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        default: /* valid headers, corrupted ICRC */
            len = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_ACKNOWLEDGE,
                                        a->victim_qpn, 0, 0, 0, "\0\0\0\0",
                                        4);
            len += gda_ft_roce_finish(pkt, len);
            pkt[len - 1] ^= 0x40;
            attacker_send(fd, a->udp_port, pkt, len);
            break;
        }
        ++a->sent;
        usleep(20);   /* a steady stream, not a flood (that is a DoS) */
    }
    close(fd);
    return NULL;
}

GDA_FT_TEST(soft_errors, hostile_datagrams_dropped_and_counted)
{
    size_t len = 4 << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    gda_ft_soft_port_stats_t stats;
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_port_attr_t pattr;
    attacker_t attacker = {0};
    pthread_t thread;
    soft_pair_t p;
    uint16_t idx;
    unsigned i;

    soft_pair_init(&p, NULL, NULL);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(p.dev1, 1, &pattr));
    soft_fill(src, len, 8);
    smr = soft_mr(&p.a, src, len, 0);
    dmr = soft_mr(&p.b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    attacker.udp_port   = 20000 + (getpid() % 20000);
    attacker.victim_qpn = p.b.qp->qpn;
    pthread_create(&thread, NULL, attacker_thread, &attacker);
    while (attacker.sent < 500) {
        usleep(1000);
    }

    for (i = 0; i < 16; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(
                &p.a.sq, (uintptr_t)src + i * (len / 16), smr->lkey,
                len / 16, (uintptr_t)dst + i * (len / 16), dmr->rkey,
                GDA_FT_WQE_SIGNALED, &idx), GDA_FT_DEV_OK);
    }
    soft_ep_ring(&p.a);
    for (i = 0; i < 16; ++i) {
        soft_ep_wait_send(&p.a, &info, 20000);
        if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
            stats = soft_port_stats(p.dev0, 1);
            GDA_FT_FAIL("CQE %u: %s (requester retransmits %lu, bad_src "
                        "%lu)", i, gda_ft_hca_syndrome_str(info.syndrome),
                        stats.retransmits, stats.rx_bad_src);
        }
    }
    attacker.stop = 1;
    pthread_join(thread, NULL);

    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    GDA_FT_ASSERT_EQ(p.b.qp->state, GDA_FT_HCA_QP_RTS);
    stats = soft_port_stats(p.dev1, 1);
    printf("attacker sent %u: malformed %lu bad_icrc %lu bad_qpn %lu "
           "bad_src %lu\n", attacker.sent, stats.rx_malformed,
           stats.rx_bad_icrc, stats.rx_bad_qpn, stats.rx_bad_src);
    GDA_FT_ASSERT(stats.rx_malformed > 0);
    GDA_FT_ASSERT(stats.rx_bad_icrc > 0);
    GDA_FT_ASSERT(stats.rx_bad_qpn > 0);
    GDA_FT_ASSERT(stats.rx_bad_src > 0);
    free(src);
    free(dst);
    soft_pair_fini(&p);
}

static void ctl_echo(void *arg, int argc, char **argv, char *reply,
                     size_t max)
{
    snprintf(reply, max, "%s: %d args, last %s\n", (const char*)arg, argc,
             argv[argc - 1]);
}

/*
 * Forged datagrams that claim the peer's own address (IPv4 source and UDP
 * port spoofed through a raw socket, which needs root): a write to a QPN
 * of nobody, one at a PSN far ahead of the window, and a replay of a PSN
 * already executed with other bytes are all dropped and counted, and the
 * target's memory keeps what the real peer wrote. A forged write at the
 * very PSN the target expects is executed: from the right address it is
 * the peer, which shows that the forged ones did reach the responder.
 */
static void spoof_write(int fd, uint16_t udp_port, uint32_t dqpn,
                        uint32_t psn, uint64_t va, uint32_t rkey,
                        uint8_t fill)
{
    uint8_t frame[20 + 8 + GDA_FT_ROCE_MAX_HDR + 16 + 8];
    uint8_t *ip = frame, *udp = frame + 20, *pkt = frame + 28;
    struct sockaddr_in dst = {0};
    gda_ft_roce_reth_t reth;
    uint16_t word;
    size_t len;

    reth.va      = htobe64(va);
    reth.rkey    = htonl(rkey);
    reth.dma_len = htonl(16);
    len  = gda_ft_roce_build_hdr(pkt, GDA_FT_ROCE_WRITE_ONLY, dqpn, psn, 1,
                                 16, &reth, sizeof(reth));
    memset(pkt + len, fill, 16);
    len += 16;
    len += gda_ft_roce_finish(pkt, len);

    memset(frame, 0, 28);
    ip[0]  = 0x45;                        /* IPv4, 20-byte header */
    word   = htons(28 + len);
    memcpy(ip + 2, &word, 2);             /* the kernel fills the checksum */
    ip[8]  = 64;
    ip[9]  = IPPROTO_UDP;
    ip[12] = 127; ip[15] = 1;             /* from tsoft0, the peer */
    ip[16] = 127; ip[19] = 2;             /* to tsoft1 */
    word   = htons(udp_port);
    memcpy(udp, &word, 2);
    memcpy(udp + 2, &word, 2);
    word   = htons(8 + len);              /* no UDP checksum: allowed */
    memcpy(udp + 4, &word, 2);

    dst.sin_family      = AF_INET;
    dst.sin_addr.s_addr = htonl(0x7f000002);
    GDA_FT_ASSERT_EQ(sendto(fd, frame, 28 + len, 0, (struct sockaddr*)&dst,
                            sizeof(dst)), (ssize_t)(28 + len));
}

GDA_FT_TEST(soft_errors, forged_packets_from_the_peer_address)
{
    uint16_t udp_port = 20000 + (getpid() % 20000);
    uint64_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    gda_ft_soft_port_stats_t before, after;
    gda_ft_hca_qp_query_attr_t qa;
    gda_ft_hca_mr_t *smr, *dmr;
    uint8_t ref[16], forged[16];
    soft_pair_t p;
    uint16_t idx;
    uint32_t epsn;
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    if (fd < 0) {
        GDA_FT_SKIP_UNAVAILABLE("a raw socket to spoof the peer's address "
                                "needs root: %m");
    }
    GDA_FT_ASSERT_EQ(setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one,
                                sizeof(one)), 0);

    soft_pair_init(&p, NULL, NULL);
    soft_fill(src, 4096, 4);
    memset(dst, 0, 4096);
    smr = soft_mr(&p.a, src, 4096, 0);
    dmr = soft_mr(&p.b, dst, 4096, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    /* the real peer writes 16 bytes: its PSN is used now */
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, 16, (uintptr_t)dst,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    expect_ok_under_faults(&p, 0);
    memcpy(ref, dst, sizeof(ref));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(p.b.qp, &qa));
    epsn   = qa.rq_psn;
    before = soft_port_stats(p.dev1, 1);

    spoof_write(fd, udp_port, p.b.qp->qpn ^ 0x5, epsn, (uintptr_t)dst,
                dmr->rkey, 0xa1);                      /* nobody's QPN */
    spoof_write(fd, udp_port, p.b.qp->qpn, (epsn + 4096) & 0xffffff,
                (uintptr_t)dst, dmr->rkey, 0xa2);      /* far ahead */
    spoof_write(fd, udp_port, p.b.qp->qpn, (epsn - 1) & 0xffffff,
                (uintptr_t)dst, dmr->rkey, 0xa3);      /* a replay */
    after = soft_port_stats(p.dev1, 1);
    while ((after.rx_bad_qpn == before.rx_bad_qpn) ||
           (after.rx_out_of_seq == before.rx_out_of_seq) ||
           (after.rx_duplicate == before.rx_duplicate)) {
        usleep(1000);   /* the test's timeout bounds it */
        after = soft_port_stats(p.dev1, 1);
    }
    GDA_FT_ASSERT_EQ(after.rx_bad_qpn - before.rx_bad_qpn, 1);
    GDA_FT_ASSERT_EQ(after.rx_out_of_seq - before.rx_out_of_seq, 1);
    GDA_FT_ASSERT_EQ(after.rx_duplicate - before.rx_duplicate, 1);
    GDA_FT_ASSERT_MEM_EQ(dst, ref, sizeof(ref));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(p.b.qp, &qa));
    GDA_FT_ASSERT_EQ(qa.rq_psn, epsn);

    /* the PSN the target expects, from the peer's address: executed */
    spoof_write(fd, udp_port, p.b.qp->qpn, epsn, (uintptr_t)dst, dmr->rkey,
                0xa4);
    memset(forged, 0xa4, sizeof(forged));
    while (memcmp(dst, forged, sizeof(forged)) != 0) {
        usleep(1000);
    }
    close(fd);
    soft_pair_fini(&p);
    free(src);
    free(dst);
}

/* Resets both QPs and connects them again from `psn` on, as a re-arm does;
 * the requester's rings start over at index 0 */
static void soft_pair_reconnect(soft_pair_t *p, const soft_conn_params_t *cp)
{
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(p->a.qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(p->b.qp, GDA_FT_HCA_QP_RESET,
                                          NULL));
    memset(p->a.dbrec, 0, 64);
    gda_ft_dev_sq_init(&p->a.sq, p->a.sq_buf, SOFT_TEST_SQ_SIZE,
                       p->a.qp->qpn, p->a.dbrec, p->a.qp->uar,
                       p->a.qp->wake_fd, p->a.qp->wake_armed,
                       p->dev0->attr.max_inline);
    soft_ep_pair_connect(&p->a, &p->b, cp);
}

/*
 * An acknowledgement held in the network while its QPs were reset and
 * connected again reaches the new connection. Its PSN is just ahead of
 * the new one's, which has a write outstanding that the target never
 * received: an HCA drops such a ghost (it names a PSN the QP has not
 * sent since it was connected); taking it would complete the write OK
 * with nothing written.
 */
GDA_FT_TEST(soft_errors, ack_of_an_earlier_connection_is_a_ghost)
{
    soft_conn_params_t cp = soft_default_params;
    uint8_t *src = aligned_alloc(64, 4096), *dst = aligned_alloc(64, 4096);
    gda_ft_soft_port_stats_t before, after;
    gda_ft_soft_fault_t fault = {0};
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_mr_t *smr, *dmr;
    soft_pair_t p;
    uint16_t idx;
    double until;

    cp.psn     = 0x10000;
    cp.timeout = 17;           /* the first retransmission after 0.5 s */
    soft_pair_init(&p, NULL, &cp);
    soft_fill(src, 4096, 9);
    memset(dst, 0, 4096);
    smr = soft_mr(&p.a, src, 4096, 0);
    dmr = soft_mr(&p.b, dst, 4096, GDA_FT_HCA_ACCESS_REMOTE_WRITE);

    /* the target's answers are held back for 200 ms */
    fault.delay      = 1.0;
    fault.delay_time = 0.2;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src,
                                               smr->lkey, 64, (uintptr_t)dst,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);
    while (memcmp(dst, src, 64) != 0) {
        usleep(100);   /* landed; its ACK (PSN 0x10000) is on hold */
    }

    /* connected again 100 PSNs before it; the requester's packets are
     * lost from now on, so the new write cannot land */
    cp.psn = 0x10000 - 100;
    soft_pair_reconnect(&p, &cp);
    fault.delay = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev1, 1, &fault));
    fault.drop = 1.0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    before = soft_port_stats(p.dev0, 1);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p.a.sq, (uintptr_t)src + 64,
                                               smr->lkey, 64,
                                               (uintptr_t)dst + 64,
                                               dmr->rkey, GDA_FT_WQE_SIGNALED,
                                               &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&p.a);

    until = soft_now_sec() + 0.4;
    while (soft_now_sec() < until) {
        GDA_FT_ASSERT_EQ(soft_ep_poll_send(&p.a, &info),
                         GDA_FT_DEV_INPROGRESS);
        usleep(100);
    }
    after = soft_port_stats(p.dev0, 1);
    GDA_FT_ASSERT_EQ(after.rx_unexpected - before.rx_unexpected, 1);
    GDA_FT_ASSERT_EQ(dst[64], 0);

    /* the path heals: the write is sent again, lands and completes */
    fault.drop = 0;
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_fault(p.dev0, 1, &fault));
    expect_ok_under_faults(&p, 1);
    GDA_FT_ASSERT_MEM_EQ(dst + 64, src + 64, 64);
    soft_pair_fini(&p);
    free(src);
    free(dst);
}

GDA_FT_TEST(soft_errors, control_commands_and_extensions)
{
    gda_ft_hca_dev_t *dev;
    char reply[4096];

    soft_test_env(1, NULL);
    dev = soft_open("tsoft0");

    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("port tsoft0 1 down", reply,
                                          sizeof(reply)));
    GDA_FT_ASSERT(strstr(reply, "ok") == reply);
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("stats", reply, sizeof(reply)));
    GDA_FT_ASSERT(strstr(reply, "tsoft0:1 DOWN") != NULL);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("port tsoft9 1 down", reply,
                                          sizeof(reply)), UCS_ERR_NO_DEVICE);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("drop tsoft0 1 1.5", reply,
                                          sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("counters", reply, sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);

    /* an upper layer adds a command; two registrations both answer */
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_register("counters", ctl_echo, "A"));
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_register("counters", ctl_echo, "B"));
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("counters x y", reply,
                                          sizeof(reply)));
    GDA_FT_ASSERT(!strcmp(reply, "A: 3 args, last y\nB: 3 args, last y\n"));
    gda_ft_soft_ctl_unregister(ctl_echo, "A");
    gda_ft_soft_ctl_unregister(ctl_echo, "B");
    GDA_FT_ASSERT_EQ(gda_ft_soft_ctl_exec("counters", reply, sizeof(reply)),
                     UCS_ERR_INVALID_PARAM);
    gda_ft_hca_close(dev);
}
