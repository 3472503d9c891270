/*
 * Software HCA conformance: error syndromes, protection checks, RNR, and
 * arguments and configurations refused. The suite goes on in
 * test_soft_retransmit.c (retransmission, link flaps, lost responses) and
 * test_soft_hostile.c (hostile datagrams, forged packets, control
 * commands).
 */
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


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
    soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
    soft_expect_flush_of_later(&p, src, smr->lkey, dst, dmr->rkey, 3);
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
    soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
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
    soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
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
        soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
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
    soft_expect_error(&p.a, idx, GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR);
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

/* A setting below its range and above it is refused, one at its edge
 * taken */
static void soft_config_bounds(const char *name, const char *below,
                               const char *above, const char *edge)
{
    setenv(name, below, 1);
    GDA_FT_ASSERT_EQ(gda_ft_soft_reload_config(), UCS_ERR_INVALID_PARAM);
    setenv(name, above, 1);
    GDA_FT_ASSERT_EQ(gda_ft_soft_reload_config(), UCS_ERR_INVALID_PARAM);
    setenv(name, edge, 1);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
    unsetenv(name);
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

    soft_config_bounds("UCX_GDA_FT_SOFT_TX_BUDGET", "0", "257", "256");
    soft_config_bounds("UCX_GDA_FT_SOFT_RX_BUDGET", "31", "1025", "32");
}
