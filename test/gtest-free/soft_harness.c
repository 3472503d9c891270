/*
 * Software HCA test harness.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <ucs/sys/math.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const soft_conn_params_t soft_default_params = {
    .timeout       = 12,
    .retry_cnt     = 7,
    .rnr_retry     = 7,
    .min_rnr_timer = 1,
    .mtu           = 4096
};

static unsigned soft_test_udp_port(void)
{
    /* One UDP port per test process: parallel runs do not collide */
    return 20000 + (getpid() % 20000);
}

void soft_test_env_addrs(const char *spec)
{
    setenv("UCX_GDA_FT_SOFT_DEVICES", spec, 1);
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 0);
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
}

void soft_test_env(unsigned ndev, const char *extra)
{
    char spec[512], *eq, var[256];
    size_t len = 0;
    unsigned i;

    for (i = 0; i < ndev; ++i) {
        len += snprintf(spec + len, sizeof(spec) - len, "%stsoft%u=127.0.0.%u:%u",
                        (i > 0) ? "," : "", i, i + 1, soft_test_udp_port());
    }

    if (extra != NULL) {
        snprintf(var, sizeof(var), "%s", extra);
        eq = strchr(var, '=');
        GDA_FT_ASSERT(eq != NULL);
        *eq = '\0';
        setenv(var, eq + 1, 1);
    }
    soft_test_env_addrs(spec);
}

gda_ft_hca_dev_t *soft_open(const char *name)
{
    gda_ft_hca_dev_t *dev = NULL;

    GDA_FT_ASSERT_OK(gda_ft_hca_open(name, &dev));
    return dev;
}

static void *soft_alloc(size_t size)
{
    void *ptr = NULL;

    GDA_FT_ASSERT_EQ(posix_memalign(&ptr, 4096, size), 0);
    memset(ptr, 0, size);
    return ptr;
}

void soft_ep_create(soft_ep_t *ep, gda_ft_hca_dev_t *dev, uint8_t port)
{
    gda_ft_hca_cq_attr_t cq_attr = {0};
    gda_ft_hca_qp_init_attr_t qp_attr = {0};

    memset(ep, 0, sizeof(*ep));
    ep->dev  = dev;
    ep->port = port;
    GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(dev, &ep->pd));

    ep->scq_buf = soft_alloc(SOFT_TEST_CQ_SIZE * 64);
    ep->rcq_buf = soft_alloc(SOFT_TEST_CQ_SIZE * 64);
    gda_ft_cq_init_buf(ep->scq_buf, SOFT_TEST_CQ_SIZE);
    gda_ft_cq_init_buf(ep->rcq_buf, SOFT_TEST_CQ_SIZE);
    gda_ft_dev_cq_init(&ep->dscq, ep->scq_buf, SOFT_TEST_CQ_SIZE, 0);
    gda_ft_dev_cq_init(&ep->drcq, ep->rcq_buf, SOFT_TEST_CQ_SIZE, 0);

    cq_attr.cqe_cnt  = SOFT_TEST_CQ_SIZE;
    cq_attr.mem_type = GDA_FT_HCA_MEM_HOST;
    cq_attr.buf      = ep->scq_buf;
    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(dev, &cq_attr, &ep->scq));
    cq_attr.buf      = ep->rcq_buf;
    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(dev, &cq_attr, &ep->rcq));

    /* one work queue buffer, the RQ then the SQ, as a ConnectX reads a
     * QP's: the endpoints serve the mlx5 provider too */
    ep->rq_buf = soft_alloc(SOFT_TEST_RQ_SIZE * 16 * SOFT_TEST_RQ_SGE +
                            SOFT_TEST_SQ_SIZE * 64);
    ep->sq_buf = (char*)ep->rq_buf +
                 SOFT_TEST_RQ_SIZE * 16 * SOFT_TEST_RQ_SGE;
    ep->dbrec  = soft_alloc(64);

    qp_attr.send_cq      = ep->scq;
    qp_attr.recv_cq      = ep->rcq;
    qp_attr.sq_buf       = ep->sq_buf;
    qp_attr.sq_wqebb_cnt = SOFT_TEST_SQ_SIZE;
    qp_attr.rq_buf       = ep->rq_buf;
    qp_attr.rq_wqe_cnt   = SOFT_TEST_RQ_SIZE;
    qp_attr.rq_wqe_size  = 16 * SOFT_TEST_RQ_SGE;
    qp_attr.dbrec        = ep->dbrec;
    qp_attr.ring_mem     = GDA_FT_HCA_MEM_HOST;
    qp_attr.port_num     = port;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(ep->pd, &qp_attr, &ep->qp));

    gda_ft_dev_sq_init(&ep->sq, ep->sq_buf, SOFT_TEST_SQ_SIZE, ep->qp->qpn,
                       ep->dbrec, ep->qp->uar, ep->qp->wake_fd,
                       ep->qp->wake_armed, dev->attr.max_inline);
    gda_ft_dev_rq_init(&ep->rq, ep->rq_buf, SOFT_TEST_RQ_SIZE,
                       16 * SOFT_TEST_RQ_SGE, ep->dbrec);
}

void soft_ep_destroy(soft_ep_t *ep)
{
    gda_ft_hca_qp_destroy(ep->qp);
    gda_ft_hca_cq_destroy(ep->scq);
    gda_ft_hca_cq_destroy(ep->rcq);
    gda_ft_hca_pd_free(ep->pd);
    free(ep->rq_buf);   /* the SQ's too */
    free(ep->scq_buf);
    free(ep->rcq_buf);
    free(ep->dbrec);
}

void soft_test_gid(gda_ft_hca_dev_t *dev, uint8_t port, uint8_t *gid)
{
    gda_ft_hca_port_attr_t attr;

    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, port, &attr));
    memcpy(gid, attr.gid, GDA_FT_HCA_GID_LEN);
}

void soft_ep_gid(soft_ep_t *ep, uint8_t *gid)
{
    soft_test_gid(ep->dev, ep->port, gid);
}

void soft_ep_connect(soft_ep_t *ep, uint32_t dest_qpn, const uint8_t *gid,
                     const soft_conn_params_t *params)
{
    gda_ft_hca_qp_attr_t attr = {0};

    attr.access             = GDA_FT_HCA_ACCESS_ALL;
    attr.dest_qpn           = dest_qpn;
    memcpy(attr.dest_gid, gid, GDA_FT_HCA_GID_LEN);
    attr.rq_psn             = (params->psn != 0) ? params->psn : 0x123;
    attr.path_mtu           = params->mtu;
    attr.hop_limit          = 64;
    attr.min_rnr_timer      = params->min_rnr_timer;
    attr.max_dest_rd_atomic = ucs_min(16, ep->dev->attr.max_rd_atomic);
    attr.sq_psn             = attr.rq_psn;
    attr.timeout            = params->timeout;
    attr.retry_cnt          = params->retry_cnt;
    attr.rnr_retry          = params->rnr_retry;
    attr.max_rd_atomic      = attr.max_dest_rd_atomic;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(ep->qp, &attr));
}

/*
 * Every pair starts at PSNs of its own, as a QP connected again would: a
 * datagram of an earlier connection of the same QPs (a late ACK of a QP
 * since reset) must not fit the new one's window and acknowledge what it
 * never saw.
 */
void soft_ep_pair_connect(soft_ep_t *a, soft_ep_t *b,
                          const soft_conn_params_t *params)
{
    static uint32_t pairs;
    soft_conn_params_t own = *params;
    uint8_t gid_a[16], gid_b[16];

    if (own.psn == 0) {
        own.psn = (0x123 + 0x40000 * (pairs++ % 63)) & 0xffffff;
    }
    soft_ep_gid(a, gid_a);
    soft_ep_gid(b, gid_b);
    soft_ep_connect(a, b->qp->qpn, gid_b, &own);
    soft_ep_connect(b, a->qp->qpn, gid_a, &own);
}

gda_ft_hca_mr_t *soft_mr(soft_ep_t *ep, void *buf, size_t len,
                         unsigned access)
{
    gda_ft_hca_mr_attr_t attr = {buf, len, access, GDA_FT_HCA_MEM_HOST};
    gda_ft_hca_mr_t *mr;

    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(ep->pd, &attr, &mr));
    return mr;
}

void soft_ep_ring(soft_ep_t *ep)
{
    gda_ft_sq_ring_db(&ep->sq);
}

void soft_pair_init(soft_pair_t *p, const char *extra_env,
                    const soft_conn_params_t *params)
{
    soft_test_env(2, extra_env);
    p->dev0 = soft_open("tsoft0");
    p->dev1 = soft_open("tsoft1");
    soft_ep_create(&p->a, p->dev0, 1);
    soft_ep_create(&p->b, p->dev1, 1);
    soft_ep_pair_connect(&p->a, &p->b,
                         (params != NULL) ? params : &soft_default_params);
}

void soft_pair_fini(soft_pair_t *p)
{
    soft_ep_destroy(&p->a);
    soft_ep_destroy(&p->b);
    gda_ft_hca_close(p->dev0);
    gda_ft_hca_close(p->dev1);
}

double soft_now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

gda_ft_dev_status_t soft_ep_poll_send(soft_ep_t *ep,
                                      gda_ft_dev_cqe_info_t *info)
{
    gda_ft_dev_status_t status = gda_ft_cq_poll_ring(&ep->dscq, info);

    if (status != GDA_FT_DEV_INPROGRESS) {
        gda_ft_sq_retire(&ep->sq, info->wqe_counter);
    }
    return status;
}

static void soft_cq_wait(gda_ft_dev_cq_t *cq, gda_ft_dev_cqe_info_t *info,
                         unsigned timeout_ms, const char *what)
{
    double deadline = soft_now_sec() + timeout_ms * 1e-3;

    while (gda_ft_cq_poll_ring(cq, info) == GDA_FT_DEV_INPROGRESS) {
        if (soft_now_sec() > deadline) {
            GDA_FT_FAIL("no %s completion within %u ms", what, timeout_ms);
        }
        usleep(20);
    }
}

void soft_ep_wait_send(soft_ep_t *ep, gda_ft_dev_cqe_info_t *info,
                       unsigned timeout_ms)
{
    soft_cq_wait(&ep->dscq, info, timeout_ms, "send");
    gda_ft_sq_retire(&ep->sq, info->wqe_counter);
}

void soft_ep_wait_recv(soft_ep_t *ep, gda_ft_dev_cqe_info_t *info,
                       unsigned timeout_ms)
{
    soft_cq_wait(&ep->drcq, info, timeout_ms, "receive");
    gda_ft_rq_retire(&ep->rq, info->wqe_counter);
}

void soft_ep_post_recv(soft_ep_t *ep, void *buf, uint32_t len, uint32_t lkey)
{
    gda_ft_dev_sge_t sge = {(uintptr_t)buf, len, lkey};
    uint16_t idx;

    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&ep->rq, &sge, 1, &idx), GDA_FT_DEV_OK);
    gda_ft_rq_ring_db(&ep->rq);
}

void soft_fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *p = buf;
    uint32_t x = seed * 2654435761u + 1;
    size_t i;

    for (i = 0; i < len; ++i) {
        x    = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

gda_ft_hca_dev_t *soft_dev_of(gda_ft_hca_dev_t *dev)
{
    gda_ft_hca_dev_t *soft;

    if (gda_ft_soft_is_soft_dev(dev)) {
        return dev;
    }
    /* an mlx5 device of the emulator: the soft device of its name */
    soft = gda_ft_soft_dev_find(dev->attr.info.name);
    GDA_FT_ASSERT(soft != NULL);
    return soft;
}

ucs_status_t soft_port_set_up(gda_ft_hca_dev_t *dev, uint8_t port, int up)
{
    return gda_ft_soft_port_set_up(soft_dev_of(dev), port, up);
}

ucs_status_t soft_port_set_fault(gda_ft_hca_dev_t *dev, uint8_t port,
                                 const gda_ft_soft_fault_t *fault)
{
    return gda_ft_soft_port_set_fault(soft_dev_of(dev), port, fault);
}

gda_ft_soft_port_stats_t soft_port_stats(gda_ft_hca_dev_t *dev, uint8_t port)
{
    gda_ft_soft_port_stats_t stats;

    GDA_FT_ASSERT_OK(gda_ft_soft_port_stats(soft_dev_of(dev), port, &stats));
    return stats;
}

/* The CQE of WQE idx: an error with that syndrome */
void soft_expect_error(soft_ep_t *ep, uint16_t idx, uint8_t syndrome)
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
void soft_expect_flush_of_later(soft_pair_t *p, void *src, uint32_t lkey,
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
        soft_expect_error(&p->a, idx[i], GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
    }
    GDA_FT_ASSERT_EQ(p->a.qp->state, GDA_FT_HCA_QP_ERR);
}

/* The n-th completion of a transfer under injected faults is a success;
 * else both ports' counters tell what the faults did */
void soft_expect_ok_under_faults(soft_pair_t *p, unsigned n)
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

soft_fake_cudart_count_t soft_fake_cudart_load(unsigned copy_us)
{
    static const char *path = GDA_FT_BUILDDIR
                              "/test/fake_cudart/.libs/libcudart.so";
    soft_fake_cudart_count_t count;
    char value[32];
    void *handle;

    snprintf(value, sizeof(value), "%u", copy_us);
    setenv("GDA_FT_FAKE_CUDART_COPY_US", value, 0);   /* the caller's first */
    handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) {
        GDA_FT_FAIL("%s (built with the tests): %s", path, dlerror());
    }
    count = (soft_fake_cudart_count_t)dlsym(
            handle, "gda_ft_fake_cudart_copies_started");
    GDA_FT_ASSERT(count != NULL);
    return count;
}

soft_fake_cudart_count_t soft_fake_cudart_counter(const char *name)
{
    soft_fake_cudart_count_t count = (soft_fake_cudart_count_t)dlsym(
            RTLD_DEFAULT, name);

    GDA_FT_ASSERT(count != NULL);
    return count;
}

soft_fake_cudart_count_t soft_fake_cudart_streams(void)
{
    return soft_fake_cudart_counter("gda_ft_fake_cudart_streams_created");
}
