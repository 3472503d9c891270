/*
 * The mlx5 provider's control path over the recording backend: every PRM
 * field it writes is read back from the recorded command and compared with
 * what it was asked for; every failing call must unwind without a leak and
 * with an error logged; syndromes and async events map as documented.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_test.h"
#include "mlx5_recorder.h"
#include "gda_ft_mlx5_int.h"
#include "gda_ft_mlx5_prm.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <ucs/debug/log_def.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QPC_GET(_entry, _cmd, _fld) \
    GDA_FT_MLX5_GET(qpc, GDA_FT_MLX5_ADDR_OF(_cmd, (_entry)->in, qpc), \
                      _fld)
#define CQC_GET(_entry, _fld) \
    GDA_FT_MLX5_GET(cqc, \
                      GDA_FT_MLX5_ADDR_OF(create_cq_in, (_entry)->in, cqc), \
                      _fld)

/* The UAR types the provider asks for before write-combining: a
 * dedicated non-cached page where rdma-core has the type, then the
 * context's shared one */
#if HAVE_DECL_MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
#  define TEST_MLX5_UAR_FIRST    MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
#  define TEST_MLX5_UAR_NC_TYPES 2
#else
#  define TEST_MLX5_UAR_FIRST    MLX5DV_UAR_ALLOC_TYPE_NC
#  define TEST_MLX5_UAR_NC_TYPES 1
#endif

static int test_mlx5_errors;
static char test_mlx5_last_error[512];

static ucs_log_func_rc_t
test_mlx5_log(const char *file, unsigned line, const char *function,
              ucs_log_level_t level, const ucs_log_component_config_t *comp,
              const char *message, va_list ap)
{
    if (level == UCS_LOG_LEVEL_ERROR) {
        ++test_mlx5_errors;
        vsnprintf(test_mlx5_last_error, sizeof(test_mlx5_last_error),
                  message, ap);
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* One test's world: the recorder, a device, a PD and page-aligned rings */
typedef struct test_mlx5 {
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_pd_t  *pd;
    void             *cq_buf;
    void             *wq_buf;   /* RQ_CNT * 64 of RQ, then SQ_CNT * 64 */
    uint32_t         *dbrec;
} test_mlx5_t;

enum { RQ_CNT = 16, SQ_CNT = 64, CQ_CNT = 256 };

static void *test_mlx5_pages(size_t size)
{
    void *ptr;

    GDA_FT_ASSERT(posix_memalign(&ptr, sysconf(_SC_PAGESIZE), size) == 0);
    memset(ptr, 0, size);
    return ptr;
}

static void test_mlx5_setup(test_mlx5_t *t)
{
    mlx5_rec_init();
    ucs_log_push_handler(test_mlx5_log);
    memset(t, 0, sizeof(*t));
    t->cq_buf = test_mlx5_pages(CQ_CNT * 64);
    t->wq_buf = test_mlx5_pages((RQ_CNT + SQ_CNT) * 64);
    t->dbrec  = test_mlx5_pages(4096);
}

static void test_mlx5_open(test_mlx5_t *t)
{
    gda_ft_hca_dev_info_t info;

    memset(&info, 0, sizeof(info));
    strcpy(info.name, "mlx5_0");
    info.provider = &gda_ft_mlx5_provider;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.dev_open(&info, &t->dev));
    GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(t->dev, &t->pd));
}

static void test_mlx5_free_rings(test_mlx5_t *t)
{
    free(t->cq_buf);
    free(t->wq_buf);
    free(t->dbrec);
}

static void test_mlx5_close(test_mlx5_t *t)
{
    gda_ft_hca_pd_free(t->pd);
    gda_ft_hca_close(t->dev);
    test_mlx5_free_rings(t);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

static gda_ft_hca_cq_t *test_mlx5_cq(test_mlx5_t *t, unsigned cnt,
                                     unsigned flags)
{
    gda_ft_hca_cq_attr_t attr = {t->cq_buf, cnt, flags, GDA_FT_HCA_MEM_HOST};
    gda_ft_hca_cq_t *cq;

    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(t->dev, &attr, &cq));
    return cq;
}

static void test_mlx5_qp_init(test_mlx5_t *t, gda_ft_hca_cq_t *scq,
                              gda_ft_hca_cq_t *rcq,
                              gda_ft_hca_qp_init_attr_t *init)
{
    memset(init, 0, sizeof(*init));
    init->send_cq      = scq;
    init->recv_cq      = rcq;
    init->rq_buf       = (rcq != NULL) ? t->wq_buf : NULL;
    init->rq_wqe_cnt   = (rcq != NULL) ? RQ_CNT : 0;
    init->rq_wqe_size  = (rcq != NULL) ? 64 : 0;
    init->sq_buf       = (char*)t->wq_buf + ((rcq != NULL) ? RQ_CNT * 64 : 0);
    init->sq_wqebb_cnt = SQ_CNT;
    init->dbrec        = t->dbrec + 8;   /* 32 bytes into its page */
    init->ring_mem     = GDA_FT_HCA_MEM_HOST;
    init->port_num     = 1;
}

static void test_mlx5_qp_attr(gda_ft_hca_qp_attr_t *attr)
{
    static const uint8_t dgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
                                     0xff, 10, 9, 8, 7};

    memset(attr, 0, sizeof(*attr));
    attr->access             = GDA_FT_HCA_ACCESS_ALL;
    attr->dest_qpn           = 0xabcde;
    memcpy(attr->dest_gid, dgid, sizeof(dgid));
    attr->rq_psn             = 0x123456;
    attr->path_mtu           = 1024;
    attr->traffic_class      = 0x68;
    attr->hop_limit          = 33;
    attr->min_rnr_timer      = 12;
    attr->max_dest_rd_atomic = 16;
    attr->sq_psn             = 0x654321;
    attr->timeout            = 14;
    attr->retry_cnt          = 5;
    attr->rnr_retry          = 6;
    attr->max_rd_atomic      = 8;
}

GDA_FT_TEST(mlx5_provider, no_rdma_subsystem_is_no_devices)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count = 99;

    mlx5_rec_init();
    mlx5_rec.no_rdma = 1;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 0);
    ucs_free(infos);

    mlx5_rec.no_rdma  = 0;
    mlx5_rec.num_devs = 0;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 0);
    ucs_free(infos);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, enumerates_mlx5_devices_with_locality)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count;

    mlx5_rec_init();
    mlx5_rec.devs[1]           = mlx5_rec.devs[0];
    mlx5_rec.devs[1].name      = "irdma0";  /* not an mlx5 device */
    mlx5_rec.devs[1].supported = 0;
    mlx5_rec.devs[2]           = mlx5_rec.devs[0];
    mlx5_rec.devs[2].name      = "mlx5_1";
    mlx5_rec.devs[2].num_ports = 1;
    mlx5_rec.devs[2].pci_bus_id = NULL;
    mlx5_rec.num_devs          = 3;

    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 2);
    GDA_FT_ASSERT(!strcmp(infos[0].name, "mlx5_0"));
    GDA_FT_ASSERT(infos[0].provider == &gda_ft_mlx5_provider);
    GDA_FT_ASSERT_EQ(infos[0].num_ports, 2);
    GDA_FT_ASSERT_EQ(infos[0].numa_node, 1);
    GDA_FT_ASSERT(!strcmp(infos[0].pci_bus_id, "0000:17:00.0"));
    GDA_FT_ASSERT(!strcmp(infos[1].name, "mlx5_1"));
    GDA_FT_ASSERT_EQ(infos[1].num_ports, 1);
    GDA_FT_ASSERT(!strcmp(infos[1].pci_bus_id, ""));
    ucs_free(infos);
    /* the devices opened to count their ports are closed again */
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_OPEN_DEVICE), 2);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, registered_in_the_hca_registry)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i, found = 0;

    mlx5_rec_init();
    GDA_FT_ASSERT_OK(gda_ft_hca_query_devices(&infos, &count));
    for (i = 0; i < count; ++i) {
        found += !strcmp(infos[i].name, "mlx5_0") &&
                 !strcmp(infos[i].provider->name, "mlx5");
    }
    gda_ft_hca_free_device_list(infos);
    GDA_FT_ASSERT_EQ(found, 1);
}

GDA_FT_TEST(mlx5_provider, open_reads_ports_and_chooses_the_roce_v2_gid)
{
    gda_ft_hca_port_attr_t port;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(t.dev->attr.info.num_ports, 2);
    GDA_FT_ASSERT_EQ(t.dev->attr.flags, 0);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_sq_wqebb, 32768);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_rd_atomic, 16);
    GDA_FT_ASSERT_EQ(t.pd->pdn, 0x1234);
    /* doorbells: a non-cached UAR, our own where rdma-core has the type;
     * CQs: completion vector 0 */
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_ALLOC_UAR, 0)->arg[0],
                     TEST_MLX5_UAR_FIRST);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_QUERY_EQN, 0)->arg[0], 0);

    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 1, &port));
    GDA_FT_ASSERT_EQ(port.state, GDA_FT_HCA_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(port.active_mtu, 4096);
    GDA_FT_ASSERT_MEM_EQ(port.gid, mlx5_rec.devs[0].gids[3].gid.raw, 16);
    GDA_FT_ASSERT_EQ(ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->
                     ports[0].gid_index, 3);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 2, &port));
    GDA_FT_ASSERT_EQ(port.state, GDA_FT_HCA_PORT_DOWN);
    test_mlx5_close(&t);
}

/*
 * The device's capabilities at open: the largest send WQE bounds inline
 * data, and the current atomic capabilities say in which byte order 8-byte
 * fetching atomics return (mlx5_core picks host order where it can): both
 * profiles, and a device without atomics.
 */
GDA_FT_TEST(mlx5_provider, open_reads_wqe_size_and_atomic_reply_order)
{
    const mlx5_rec_entry_t *cmd;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.atomic_host_order = 1;
    mlx5_rec.max_wqe_sz_sq     = 512;
    test_mlx5_open(&t);
    GDA_FT_ASSERT(t.dev->attr.flags & GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_inline, 512 - 36);
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP, 1);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(query_hca_cap_in, cmd->in, op_mod),
                     (GDA_FT_MLX5_HCA_CAP_ATOMIC << 1) | 1);
    test_mlx5_close(&t);

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    GDA_FT_ASSERT(!(t.dev->attr.flags &
                    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER));
    GDA_FT_ASSERT_EQ(t.dev->attr.max_inline, 1024 - 36);
    test_mlx5_close(&t);

    test_mlx5_setup(&t);
    mlx5_rec.atomic = 0;
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(mlx5_rec_count_cmd(GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP), 1);
    GDA_FT_ASSERT(!(t.dev->attr.flags &
                    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER));
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, uar_falls_back_to_write_combining)
{
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.uar_nc_fails = 1;
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_ALLOC_UAR),
                     TEST_MLX5_UAR_NC_TYPES + 1);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_ALLOC_UAR,
                                   TEST_MLX5_UAR_NC_TYPES)->arg[0],
                     MLX5DV_UAR_ALLOC_TYPE_BF);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, open_refuses_an_eq_number_the_cq_cannot_hold)
{
    gda_ft_hca_dev_info_t info = {.name = "mlx5_0"};
    gda_ft_hca_dev_t *dev;

    mlx5_rec_init();
    ucs_log_push_handler(test_mlx5_log);
    mlx5_rec.eqn = 0x100;
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_provider.dev_open(&info, &dev),
                     UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "cqc.c_eqn") != NULL);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, gid_choice_rules)
{
    struct ibv_gid_entry e[3];

    memset(e, 0, sizeof(e));
    e[0].gid_index = 4;
    e[0].gid_type  = IBV_GID_TYPE_ROCE_V2;
    e[0].gid.raw[0] = 0xfe;                          /* IPv6 */
    e[1].gid_index = 7;
    e[1].gid_type  = IBV_GID_TYPE_ROCE_V1;
    e[1].gid.raw[10] = e[1].gid.raw[11] = 0xff;      /* IPv4, v1 */
    e[2].gid_index = 9;
    e[2].gid_type  = IBV_GID_TYPE_ROCE_V2;
    e[2].gid.raw[10] = e[2].gid.raw[11] = 0xff;      /* IPv4, v2 */
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 3, IBV_LINK_LAYER_ETHERNET), 9);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 2, IBV_LINK_LAYER_ETHERNET), 4);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e + 1, 1,
                                            IBV_LINK_LAYER_ETHERNET), -1);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 3,
                                            IBV_LINK_LAYER_INFINIBAND), 4);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 0, IBV_LINK_LAYER_ETHERNET),
                     -1);
}

GDA_FT_TEST(mlx5_provider, gid_index_setting_overrides_the_choice)
{
    gda_ft_hca_port_attr_t port;
    test_mlx5_t t;

    setenv("UCX_GDA_FT_MLX5_GID_INDEX", "1", 1);
    test_mlx5_setup(&t);
    mlx5_rec.devs[0].gid_missing[2] = 1;   /* a hole in the table */
    test_mlx5_open(&t);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 1, &port));
    GDA_FT_ASSERT_MEM_EQ(port.gid, mlx5_rec.devs[0].gids[1].gid.raw, 16);
    GDA_FT_ASSERT_EQ(ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->
                     ports[0].gid_index, 1);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, create_cq_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *buf_umem, *dbr_umem;
    gda_ft_mlx5_cq_t *mcq;
    gda_ft_hca_cq_t *cq;
    unsigned collapsed;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    for (collapsed = 0; collapsed <= 1; ++collapsed) {
        cq  = test_mlx5_cq(&t, collapsed ? 1 : CQ_CNT,
                           collapsed ? GDA_FT_HCA_CQ_COLLAPSED : 0);
        mcq = ucs_derived_of(cq, gda_ft_mlx5_cq_t);
        cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_CQ, collapsed);
        buf_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 2 * collapsed);
        dbr_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 2 * collapsed + 1);
        GDA_FT_ASSERT(cmd != NULL);
        GDA_FT_ASSERT_EQ(cq->cqn, 0x400 + collapsed);
        GDA_FT_ASSERT_EQ(buf_umem->arg[0], (uintptr_t)t.cq_buf);
        GDA_FT_ASSERT_EQ(buf_umem->arg[1],
                         ucs_align_up((collapsed ? 1 : CQ_CNT) * 64,
                                      sysconf(_SC_PAGESIZE)));
        GDA_FT_ASSERT_EQ(buf_umem->arg[3], (uint64_t)-1);   /* no dma-buf */
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_cq_in, cmd->in,
                                           cq_umem_valid), 1);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_cq_in, cmd->in, cq_umem_id),
                         0x100 + 2 * collapsed);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET64(create_cq_in, cmd->in,
                                             cq_umem_offset), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, cqe_sz), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, cc), collapsed);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, oi), 1);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, log_cq_size), collapsed ? 0 : 8);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, uar_page), 0xabc);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, c_eqn), 0x17);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, log_page_size),
                         ucs_ilog2(sysconf(_SC_PAGESIZE)) - 12);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, page_offset), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, dbr_umem_valid), 1);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, dbr_umem_id), 0x101 + 2 * collapsed);
        /* the DBR umem covers its page; dbr_addr is its offset there */
        GDA_FT_ASSERT_EQ(dbr_umem->arg[0] + GDA_FT_MLX5_GET64(cqc,
                         GDA_FT_MLX5_ADDR_OF(create_cq_in, cmd->in, cqc),
                         dbr_addr), (uintptr_t)mcq->dbrec);
        gda_ft_hca_cq_destroy(cq);
    }
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_OBJ_DESTROY), 2);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, create_qp_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *wq_umem, *dbr_umem;
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_cq_t *scq, *rcq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    scq = test_mlx5_cq(&t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    rcq = test_mlx5_cq(&t, CQ_CNT, 0);
    test_mlx5_qp_init(&t, scq, rcq, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));

    cmd      = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 0);
    wq_umem  = mlx5_rec_find(MLX5_REC_UMEM_REG, 4);
    dbr_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 5);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(qp->qpn, 0x2a0);
    GDA_FT_ASSERT_EQ(qp->state, GDA_FT_HCA_QP_RESET);
    GDA_FT_ASSERT((void*)qp->uar ==
                  ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->uar->reg_addr);
    GDA_FT_ASSERT_EQ(qp->wake_fd, -1);
    GDA_FT_ASSERT_EQ(wq_umem->arg[0], (uintptr_t)t.wq_buf);
    GDA_FT_ASSERT_EQ(wq_umem->arg[1], ucs_align_up((RQ_CNT + SQ_CNT) * 64,
                                                   sysconf(_SC_PAGESIZE)));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_qp_in, cmd->in, wq_umem_valid),
                     1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_qp_in, cmd->in, wq_umem_id),
                     0x104);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, st), GDA_FT_MLX5_QPC_ST_RC);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, pm_state),
                     GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, pd), 0x1234);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, uar_page), 0xabc);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, ts_format),
                     GDA_FT_MLX5_QPC_TS_FORMAT_DEFAULT);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_page_size),
                     ucs_ilog2(sysconf(_SC_PAGESIZE)) - 12);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_sq_size), 6);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_size), 4);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_stride), 2);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, rq_type), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, no_sq), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_snd), scq->cqn);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_rcv), rcq->cqn);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, dbr_umem_valid), 1);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, dbr_umem_id), 0x105);
    GDA_FT_ASSERT_EQ(dbr_umem->arg[0], (uintptr_t)t.dbrec);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET64(qpc, GDA_FT_MLX5_ADDR_OF(
                     create_qp_in, cmd->in, qpc), dbr_addr), 32);
    gda_ft_hca_qp_destroy(qp);

    /* without a receive queue: a zero-length RQ, completions on scq */
    test_mlx5_qp_init(&t, scq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 1);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, rq_type), 3);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_size), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_rcv), scq->cqn);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_UMEM_REG, 6)->arg[0],
                     (uintptr_t)t.wq_buf);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(rcq);
    gda_ft_hca_cq_destroy(scq);
    test_mlx5_close(&t);
}

/* An opened device with one RC QP on port 1 over a collapsed CQ, and the
 * attributes to connect it with */
static gda_ft_hca_qp_t *test_mlx5_open_qp(test_mlx5_t *t,
                                          gda_ft_hca_cq_t **cq_p,
                                          gda_ft_hca_qp_attr_t *attr)
{
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_t *qp;

    test_mlx5_open(t);
    *cq_p = test_mlx5_cq(t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    test_mlx5_qp_init(t, *cq_p, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t->pd, &init, &qp));
    test_mlx5_qp_attr(attr);
    return qp;
}

static void test_mlx5_close_qp(test_mlx5_t *t, gda_ft_hca_cq_t *cq,
                               gda_ft_hca_qp_t *qp)
{
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(t);
}

static void test_mlx5_check_rtr(const mlx5_rec_entry_t *cmd,
                                const gda_ft_hca_qp_attr_t *attr,
                                uint32_t qpn)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in, cmd->in, qpc);

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(init2rtr_qp_in, cmd->in, qpn), qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, mtu),
                     GDA_FT_MLX5_QPC_MTU_1K_BYTES);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_msg_max), 30);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, remote_qpn), 0xabcde);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, next_rcv_psn), 0x123456);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, min_rnr_nak), 12);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_rra_max), 4);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_vhca_port_num), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_rmac_47_32), 0x0211);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_rmac_31_0), 0x22334455);
    /* RoCE: no GRH bit (InfiniBand's), and RoCE v2's DSCP from the
     * traffic class, as the kernel sets a verbs QP's path */
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_grh), 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_dscp),
                     0x68 >> 2);
    GDA_FT_ASSERT_MEM_EQ(GDA_FT_MLX5_ADDR_OF(qpc, qpc,
                         primary_path_rgid_rip), attr->dest_gid, 16);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_src_addr_index), 3);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_hop_limit), 33);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_tclass), 0x68);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_eth_prio), 5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_udp_sport),
                     gda_ft_mlx5_udp_sport(qpn, 0xabcde));
}

static void test_mlx5_check_rts(const mlx5_rec_entry_t *cmd, uint32_t qpn)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(rtr2rts_qp_in, cmd->in, qpc);

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(rtr2rts_qp_in, cmd->in, qpn), qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, next_send_psn), 0x654321);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_ack_timeout), 14);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, retry_count), 5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rnr_retry), 6);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_sra_max), 3);
}

static void test_mlx5_check_state(gda_ft_hca_qp_t *qp,
                                  gda_ft_hca_qp_state_t state)
{
    gda_ft_hca_qp_query_attr_t q;

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(qp, &q));
    GDA_FT_ASSERT_EQ(q.state, state);
    GDA_FT_ASSERT_EQ(qp->state, state);
}

GDA_FT_TEST(mlx5_provider, modify_through_every_state_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *mac;
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_query_attr_t q;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    setenv("UCX_GDA_FT_MLX5_SL", "5", 1);
    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    cq = test_mlx5_cq(&t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    test_mlx5_qp_init(&t, cq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    test_mlx5_qp_attr(&attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));

    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP, 0);
    qpc = GDA_FT_MLX5_ADDR_OF(rst2init_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(rst2init_qp_in, cmd->in, qpn),
                     qp->qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, pm_state),
                     GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_vhca_port_num), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rwe), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rre), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rae), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, atomic_mode),
                     GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B);

    test_mlx5_check_rtr(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, 0),
                        &attr, qp->qpn);
    mac = mlx5_rec_find(MLX5_REC_RESOLVE_MAC, 0);
    GDA_FT_ASSERT_EQ(mac->arg[0], 1);
    GDA_FT_ASSERT_EQ(mac->arg[1], 3);
    GDA_FT_ASSERT_MEM_EQ(mac->in, attr.dest_gid, 16);
    test_mlx5_check_rts(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, 0),
                        qp->qpn);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(qp, &q));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(query_qp_in, cmd->in, qpn), qp->qpn);
    GDA_FT_ASSERT_EQ(q.state, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(q.sq_psn, 0x654321);
    GDA_FT_ASSERT_EQ(q.rq_psn, 0x123456);
    GDA_FT_ASSERT_EQ(q.path_mtu, 1024);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2ERR_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_in, cmd->in, qpn), qp->qpn);
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_ERR);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2RST_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_in, cmd->in, qpn), qp->qpn);
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RESET);

    /* every command went whole: inputs as long as the PRM's commands */
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(create_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_CQ, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(create_cq_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(rst2init_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(init2rtr_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(rtr2rts_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2ERR_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2RST_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(query_qp_in));

    /* and again from RESET: a failed-over path comes back this way */
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 0);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
}

/*
 * The transport moves an endpoint's QPs to INIT when it creates them and
 * connects them later (gda_ft_hca_qp_connect asks for INIT again).
 * Firmware takes RST2INIT only from RESET: from INIT the move is
 * INIT2INIT, with the same access rights and port.
 */
GDA_FT_TEST(mlx5_provider, init_again_is_init2init)
{
    const mlx5_rec_entry_t *cmd;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_INIT, &attr));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(mlx5_rec.refused, 0);

    GDA_FT_ASSERT_EQ(mlx5_rec_count_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP), 1);
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2INIT_QP, 0);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(cmd->inlen, GDA_FT_MLX5_ST_SZ_BYTES(init2init_qp_in));
    qpc = GDA_FT_MLX5_ADDR_OF(init2init_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(init2init_qp_in, cmd->in, qpn),
                     qp->qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_vhca_port_num),
                     1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rwe), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rae), 1);

    /* what firmware refuses (INIT2RTR of a QP in RTS), the provider
     * reports with its status and syndrome */
    GDA_FT_ASSERT(qp->dev->provider->qp_modify(qp, GDA_FT_HCA_QP_RTR,
                                               &attr) != UCS_OK);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "0x1a2b3c") != NULL);
    GDA_FT_ASSERT_EQ(mlx5_rec.refused, 1);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    test_mlx5_close_qp(&t, cq, qp);
}

/*
 * A link flap can change the port's GID table (the netdev's address goes
 * and comes back at another index). A QP connected again after it (a
 * re-arm, a failback) must send from the entry that holds the address
 * now, not from the index chosen at open: the table is read again at
 * every INIT2RTR.
 */
GDA_FT_TEST(mlx5_provider, connect_after_a_flap_reads_the_gid_table_again)
{
    static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                   10, 1, 2, 3};
    mlx5_rec_dev_t *rdev = &mlx5_rec.devs[0];
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in,
                              mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                                0)->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_src_addr_index),
                     3);

    /* the flap: the RoCE v2 IPv4 entry is now at index 5 */
    rdev->gid_missing[3] = 1;
    rdev->gid_missing[4] = 1;
    rdev->num_gids       = 6;
    rdev->gids[5]          = rdev->gids[3];
    rdev->gids[5].gid_index = 5;
    memcpy(rdev->gids[5].gid.raw, v4, sizeof(v4));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in,
                              mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                                1)->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_src_addr_index),
                     5);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 0);
    test_mlx5_close_qp(&t, cq, qp);
}

/* UCX_GDA_FT_MLX5_CMD_LOG: every command as sent and what firmware said,
 * a line each, the refused one with its status and syndrome */
GDA_FT_TEST(mlx5_provider, command_log_records_inputs_and_answers)
{
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    char path[64], log[16384];
    test_mlx5_t t;
    size_t len;
    FILE *file;

    snprintf(path, sizeof(path), "/tmp/gda_ft_mlx5_cmds.%d", (int)getpid());
    unlink(path);
    setenv("UCX_GDA_FT_MLX5_CMD_LOG", path, 1);
    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    GDA_FT_ASSERT(qp->dev->provider->qp_modify(qp, GDA_FT_HCA_QP_RTR,
                                               &attr) != UCS_OK);
    test_mlx5_close_qp(&t, cq, qp);
    unsetenv("UCX_GDA_FT_MLX5_CMD_LOG");

    file = fopen(path, "r");
    GDA_FT_ASSERT(file != NULL);
    len      = fread(log, 1, sizeof(log) - 1, file);
    log[len] = '\0';
    fclose(file);
    unlink(path);
    GDA_FT_ASSERT(strstr(log, "mlx5_0 QUERY_HCA_CAP opcode 0x100 op_mod "
                              "0x1 ok") != NULL);
    GDA_FT_ASSERT(strstr(log, "QUERY_HCA_CAP opcode 0x100 op_mod 0x7 ok")
                  != NULL);
    GDA_FT_ASSERT(strstr(log, "CREATE_CQ opcode 0x400") != NULL);
    GDA_FT_ASSERT(strstr(log, "CREATE_QP opcode 0x500") != NULL);
    GDA_FT_ASSERT(strstr(log, "RTR2RTS_QP opcode 0x504 op_mod 0x0 ok")
                  != NULL);
    /* the input as sent: INIT2RTR's first dword, opcode 0x503 */
    GDA_FT_ASSERT(strstr(log, "opcode 0x503 op_mod 0x0 ok status 0x0 "
                              "syndrome 0x0 in 05030000") != NULL);
    GDA_FT_ASSERT(strstr(log, "INIT2RTR_QP opcode 0x503 op_mod 0x0 FAILED "
                              "status 0x10 syndrome 0x1a2b3c") != NULL);
}

GDA_FT_TEST(mlx5_provider, memory_regions_host_and_cuda)
{
    gda_ft_hca_mr_attr_t attr;
    const mlx5_rec_entry_t *e;
    size_t page = sysconf(_SC_PAGESIZE);
    gda_ft_hca_mr_t *mr;
    test_mlx5_t t;
    char *buf;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    buf = test_mlx5_pages(4 * page);
    t.dev->attr.mr_mem_caps = ~0u;

    attr.addr     = buf + 100;
    attr.length   = 2 * page;
    attr.access   = GDA_FT_HCA_ACCESS_REMOTE_READ;
    attr.mem_type = GDA_FT_HCA_MEM_HOST;
    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(t.pd, &attr, &mr));
    e = mlx5_rec_find(MLX5_REC_REG_MR, 0);
    GDA_FT_ASSERT_EQ(e->arg[0], (uintptr_t)buf + 100);
    GDA_FT_ASSERT_EQ(e->arg[1], 2 * page);
    GDA_FT_ASSERT_EQ(e->arg[2], IBV_ACCESS_REMOTE_READ);
    GDA_FT_ASSERT_NE(mr->lkey, mr->rkey);
    gda_ft_hca_mr_dereg(mr);

    /* CUDA memory: a dma-buf of the pages around it */
    mlx5_rec.have_cuda_dmabuf = 1;
    attr.access   = GDA_FT_HCA_ACCESS_ALL;
    attr.mem_type = GDA_FT_HCA_MEM_CUDA;
    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(t.pd, &attr, &mr));
    e = mlx5_rec_find(MLX5_REC_CUDA_DMABUF_FD, 0);
    GDA_FT_ASSERT_EQ(e->arg[0], (uintptr_t)buf);
    GDA_FT_ASSERT_EQ(e->arg[1], 3 * page);
    e = mlx5_rec_find(MLX5_REC_REG_DMABUF_MR, 0);
    GDA_FT_ASSERT_EQ(e->arg[0], 100);
    GDA_FT_ASSERT_EQ(e->arg[1], 2 * page);
    GDA_FT_ASSERT_EQ(e->arg[2], (uintptr_t)buf + 100);
    GDA_FT_ASSERT_EQ(e->arg[4], IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC);
    /* the fd is closed once the MR holds the dma-buf */
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_CLOSE_FD, 0)->arg[0],
                     e->arg[3]);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_REG_MR), 1);
    gda_ft_hca_mr_dereg(mr);

    /* no dma-buf: peer memory, a plain registration */
    mlx5_rec.have_cuda_dmabuf = 0;
    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(t.pd, &attr, &mr));
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_REG_MR), 2);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_REG_MR, 1)->arg[0],
                     (uintptr_t)buf + 100);
    gda_ft_hca_mr_dereg(mr);
    free(buf);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, rings_in_cuda_memory_use_a_dmabuf_umem)
{
    gda_ft_hca_cq_attr_t attr = {0};
    const mlx5_rec_entry_t *e;
    gda_ft_hca_cq_t *cq;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    mlx5_rec.have_cuda_dmabuf = 1;
    attr.buf      = t.cq_buf;
    attr.cqe_cnt  = CQ_CNT;
    attr.flags    = 0;
    attr.mem_type = GDA_FT_HCA_MEM_CUDA;
    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(t.dev, &attr, &cq));
    e = mlx5_rec_find(MLX5_REC_UMEM_REG, 0);
    GDA_FT_ASSERT((int64_t)e->arg[3] >= 0);
    GDA_FT_ASSERT(!e->failed);
    /* the dma-buf is exported from the ring's page: the umem starts at
     * its offset 0, not at the ring's virtual address */
    GDA_FT_ASSERT_EQ(e->arg[0], 0);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_CUDA_DMABUF_FD, 0)->arg[1],
                     e->arg[1]);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_CLOSE_FD, 0)->arg[0], e->arg[3]);
    /* the provider's own CQ doorbell record is host memory */
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_UMEM_REG, 1)->arg[3],
                     (uint64_t)-1);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
}

/*
 * A kernel that posts to a QP rings its doorbell itself: QPs whose rings
 * are mapped into the GPU (or live there) get the UAR as the GPU sees it,
 * the page registered once per device as I/O memory and released when the
 * device closes. CPU-posted QPs map nothing. Without the mapping (no
 * libcuda, no current context, no IOMEMORY support) such a QP is refused
 * with the reason.
 */
GDA_FT_TEST(mlx5_provider, gpu_posted_rings_get_a_gpu_doorbell)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    gda_ft_hca_qp_init_attr_t init;
    const mlx5_rec_entry_t *e;
    gda_ft_hca_qp_t *qp[3];
    gda_ft_hca_cq_t *cq;
    test_mlx5_t t;
    char *uar_cpu;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    cq = test_mlx5_cq(&t, CQ_CNT, 0);
    test_mlx5_qp_init(&t, cq, NULL, &init);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp[0]));
    GDA_FT_ASSERT(qp[0]->dev_uar == NULL);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_CUDA_MAP_IO), 0);

    init.ring_mem = GDA_FT_HCA_MEM_HOST_MAPPED;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp[1]));
    init.ring_mem = GDA_FT_HCA_MEM_CUDA;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp[2]));
    /* one mapping of the UAR's page, the doorbell at the same offset */
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_CUDA_MAP_IO), 1);
    e       = mlx5_rec_find(MLX5_REC_CUDA_MAP_IO, 0);
    uar_cpu = (char*)(uintptr_t)qp[0]->uar;
    GDA_FT_ASSERT_EQ(e->arg[0], (uintptr_t)uar_cpu & ~(page - 1));
    GDA_FT_ASSERT_EQ(e->arg[1], page);
    /* one mapping serves QPs made under any CUDA context (a second GPU
     * on the same NIC): it is registered portable */
    GDA_FT_ASSERT_EQ(e->arg[2], GDA_FT_CU_MEMHOSTREGISTER_PORTABLE |
                                GDA_FT_CU_MEMHOSTREGISTER_DEVICEMAP |
                                GDA_FT_CU_MEMHOSTREGISTER_IOMEMORY);
    GDA_FT_ASSERT(qp[1]->dev_uar != NULL);
    GDA_FT_ASSERT(qp[1]->dev_uar != qp[1]->uar);
    GDA_FT_ASSERT_EQ((uintptr_t)qp[1]->dev_uar % page,
                     (uintptr_t)uar_cpu % page);
    GDA_FT_ASSERT(qp[2]->dev_uar == qp[1]->dev_uar);

    gda_ft_hca_qp_destroy(qp[2]);
    gda_ft_hca_qp_destroy(qp[1]);
    gda_ft_hca_qp_destroy(qp[0]);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_CUDA_UNMAP_IO), 0);
    gda_ft_hca_cq_destroy(cq);
    gda_ft_hca_pd_free(t.pd);
    gda_ft_hca_close(t.dev);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_CUDA_UNMAP_IO), 1);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_CUDA_UNMAP_IO, 0)->arg[0],
                     e->arg[0]);
    test_mlx5_free_rings(&t);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
    ucs_log_pop_handler();

    /* no mapping: refused, with the reason, and nothing left */
    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    mlx5_rec.cuda_io_error = EINVAL;
    cq = test_mlx5_cq(&t, CQ_CNT, 0);
    test_mlx5_qp_init(&t, cq, NULL, &init);
    init.ring_mem = GDA_FT_HCA_MEM_HOST_MAPPED;
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_create(t.pd, &init, &qp[0]),
                     UCS_ERR_UNSUPPORTED);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "into the GPU") != NULL);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "CUDA context") != NULL);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
    ucs_log_pop_handler();
}

/* The whole control path once; stops at the first failure, releases what
 * it made, and returns the failing step's status */
static ucs_status_t test_mlx5_lifecycle(test_mlx5_t *t)
{
    gda_ft_hca_dev_info_t *infos = NULL;
    gda_ft_hca_cq_t *cq          = NULL;
    gda_ft_hca_qp_t *qp          = NULL;
    gda_ft_hca_mr_t *mr          = NULL;
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_mr_attr_t mr_attr;
    gda_ft_hca_qp_query_attr_t q;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_event_t event;
    unsigned count;
    ucs_status_t status;

    status = gda_ft_mlx5_provider.query_devices(&infos, &count);
    ucs_free(infos);
    if ((status != UCS_OK) || (count != 1)) {
        return (status != UCS_OK) ? status : UCS_ERR_NO_DEVICE;
    }

    status = gda_ft_mlx5_provider.dev_open(
                     &(gda_ft_hca_dev_info_t){.name = "mlx5_0"}, &t->dev);
    if (status != UCS_OK) {
        return status;
    }
    status = gda_ft_hca_pd_alloc(t->dev, &t->pd);
    if (status != UCS_OK) {
        goto out_close;
    }
    mr_attr = (gda_ft_hca_mr_attr_t){t->wq_buf, 4096, GDA_FT_HCA_ACCESS_ALL,
                                     GDA_FT_HCA_MEM_CUDA};
    status  = gda_ft_hca_mr_reg(t->pd, &mr_attr, &mr);
    if (status != UCS_OK) {
        goto out_pd;
    }
    cq     = NULL;
    status = gda_ft_hca_cq_create(t->dev, &(gda_ft_hca_cq_attr_t){
                     t->cq_buf, 1, GDA_FT_HCA_CQ_COLLAPSED,
                     GDA_FT_HCA_MEM_CUDA}, &cq);
    if (status != UCS_OK) {
        goto out_mr;
    }
    test_mlx5_qp_init(t, cq, cq, &init);
    init.ring_mem = GDA_FT_HCA_MEM_CUDA;
    status        = gda_ft_hca_qp_create(t->pd, &init, &qp);
    if (status != UCS_OK) {
        goto out_cq;
    }
    test_mlx5_qp_attr(&attr);
    status = gda_ft_hca_qp_connect(qp, &attr);
    if (status == UCS_OK) {
        status = gda_ft_hca_qp_query(qp, &q);
    }
    if (status == UCS_OK) {
        status = gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL);
    }
    if (status == UCS_OK) {
        status = gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL);
    }
    if (status == UCS_OK) {
        status = gda_ft_hca_get_event(t->dev, &event);
    }
    gda_ft_hca_qp_destroy(qp);
out_cq:
    gda_ft_hca_cq_destroy(cq);
out_mr:
    gda_ft_hca_mr_dereg(mr);
out_pd:
    gda_ft_hca_pd_free(t->pd);
out_close:
    gda_ft_hca_close(t->dev);
    return status;
}

GDA_FT_TEST(mlx5_provider, every_failing_call_unwinds_with_an_error)
{
    static const mlx5_rec_call_t tolerated[] = {
        MLX5_REC_READ_SYSFS,      /* locality unknown */
        MLX5_REC_QUERY_GID,       /* an empty GID entry */
        MLX5_REC_CUDA_DMABUF_FD,  /* peer memory instead */
        MLX5_REC_REG_DMABUF_MR,   /* the same */
        MLX5_REC_ALLOC_UAR        /* NC refused: BF */
    };
    struct ibv_async_event port_err = {.event_type = IBV_EVENT_PORT_ERR,
                                       .element.port_num = 1};
    unsigned i, failures = 0, tolerated_failures = 0;
    const mlx5_rec_entry_t *failed;
    ucs_status_t status;
    test_mlx5_t t;
    int k, ok;

    for (k = 0; ; ++k) {
        test_mlx5_setup(&t);
        mlx5_rec.have_cuda_dmabuf = 1;
        mlx5_rec.events[0]        = port_err;
        mlx5_rec.num_events       = 1;
        mlx5_rec.fail_at          = k;
        test_mlx5_errors          = 0;
        status = test_mlx5_lifecycle(&t);
        ucs_log_pop_handler();
        test_mlx5_free_rings(&t);
        GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);

        if (mlx5_rec.num_failable <= k) {
            /* the lifecycle made fewer calls than k: every one failed once */
            GDA_FT_ASSERT_OK(status);
            break;
        }

        for (failed = NULL, i = 0; i < mlx5_rec.num_calls; ++i) {
            if (mlx5_rec.calls[i].failed) {
                failed = &mlx5_rec.calls[i];
            }
        }
        GDA_FT_ASSERT(failed != NULL);
        if (status == UCS_OK) {
            for (ok = 0, i = 0; i < sizeof(tolerated) / sizeof(*tolerated);
                 ++i) {
                ok |= (failed->call == tolerated[i]);
            }
            if (!ok) {
                GDA_FT_FAIL("call %d (%s) failed and the lifecycle succeeded",
                            k, mlx5_rec_call_name(failed->call));
            }
            ++tolerated_failures;
        } else if ((status != UCS_ERR_NO_DEVICE) &&
                   (failed->call != MLX5_REC_GET_ASYNC_EVENT) &&
                   (test_mlx5_errors == 0)) {
            /* enumeration leaves out what it cannot open (a diagnostic,
             * no error), and a failed event read is "no event";
             * everything else says why */
            GDA_FT_FAIL("call %d (%s) failed with status %s and no error "
                        "was logged", k, mlx5_rec_call_name(failed->call),
                        ucs_status_string(status));
        } else {
            ++failures;
        }
    }
    printf("%d calls failed in turn: %u unwound with an error, %u were "
           "tolerated\n", k, failures, tolerated_failures);
    GDA_FT_ASSERT(failures >= 15);
}

GDA_FT_TEST(mlx5_provider, failed_command_logs_status_and_syndrome)
{
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    cq = test_mlx5_cq(&t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    test_mlx5_qp_init(&t, cq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    test_mlx5_qp_attr(&attr);
    /* RST2INIT, the port and its 4 GIDs read again, the MAC look-up,
     * then INIT2RTR fails */
    mlx5_rec.fail_at = mlx5_rec.num_failable + 7;
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_connect(qp, &attr), UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT_EQ(qp->state, GDA_FT_HCA_QP_INIT);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "INIT2RTR_QP failed") != NULL);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error,
                         "status 0x3 syndrome 0x5a5a5a") != NULL);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, refuses_what_a_devx_qp_cannot_do)
{
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.devs[0].link_layer[1] = IBV_LINK_LAYER_INFINIBAND;
    test_mlx5_open(&t);
    cq = test_mlx5_cq(&t, CQ_CNT, 0);

    /* RQ and SQ apart: one DEVX work queue buffer cannot hold them */
    test_mlx5_qp_init(&t, cq, cq, &init);
    init.sq_buf = (char*)init.sq_buf + 4096;
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_create(t.pd, &init, &qp),
                     UCS_ERR_UNSUPPORTED);
    /* a work queue that does not start on a WQE */
    test_mlx5_qp_init(&t, cq, NULL, &init);
    init.sq_buf = (char*)init.sq_buf + 32;
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_create(t.pd, &init, &qp),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_OBJ_CREATE), 1);

    /* one inside a page: the umem holds the page, the offset says where
     * the queue starts in it */
    test_mlx5_qp_init(&t, cq, NULL, &init);
    init.sq_buf = (char*)init.sq_buf + 64;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET64(create_qp_in,
                                       mlx5_rec_find_cmd(
                                               GDA_FT_MLX5_CMD_OP_CREATE_QP,
                                               0)->in, wq_umem_offset), 64);
    gda_ft_hca_qp_destroy(qp);

    /* an InfiniBand port: the interface carries no LID */
    test_mlx5_qp_init(&t, cq, NULL, &init);
    init.port_num = 2;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    test_mlx5_qp_attr(&attr);
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_connect(qp, &attr), UCS_ERR_UNSUPPORTED);
    gda_ft_hca_qp_destroy(qp);

    /* a RoCE port without a RoCE v2 GID (any more) */
    mlx5_rec.devs[0].gid_missing[1] = 1;
    mlx5_rec.devs[0].gid_missing[3] = 1;
    test_mlx5_qp_init(&t, cq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    GDA_FT_ASSERT_EQ(gda_ft_hca_qp_connect(qp, &attr), UCS_ERR_UNREACHABLE);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_RESOLVE_MAC), 0);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, syndromes_map_to_statuses)
{
    static const struct {
        uint8_t      syndrome;
        ucs_status_t status;
        int          path;
    } map[] = {
        {GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR,       UCS_ERR_MESSAGE_TRUNCATED, 0},
        {GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR,        UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_LOCAL_PROT_ERR,         UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_WR_FLUSH_ERR,           UCS_ERR_CANCELED,          0},
        {GDA_FT_MLX5_SYND_BAD_RESP_ERR,           UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR,       UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR,   UCS_ERR_INVALID_PARAM,     0},
        {GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR,      UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_REMOTE_OP_ERR,          UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR, UCS_ERR_ENDPOINT_TIMEOUT, 1},
        {GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR,      UCS_ERR_BUSY,              0},
        {GDA_FT_MLX5_SYND_REMOTE_ABORTED_ERR,     UCS_ERR_CONNECTION_RESET,  0},
        {0x77,                                    UCS_ERR_IO_ERROR,          0}
    };
    unsigned i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_syndrome_status(map[i].syndrome),
                         map[i].status);
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_syndrome_is_path_error(map[i].syndrome),
                         map[i].path);
    }
}

GDA_FT_TEST(mlx5_provider, async_events_map_to_port_and_qp_events)
{
    struct ibv_qp verbs_qp = {.qp_num = 0x77};
    gda_ft_hca_event_t ev;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.events[0] = (struct ibv_async_event){
        .event_type = IBV_EVENT_PORT_ERR, .element.port_num = 2};
    mlx5_rec.events[1] = (struct ibv_async_event){
        .event_type = IBV_EVENT_LID_CHANGE, .element.port_num = 1};
    mlx5_rec.events[2] = (struct ibv_async_event){
        .event_type = IBV_EVENT_PORT_ACTIVE, .element.port_num = 2};
    mlx5_rec.events[3] = (struct ibv_async_event){
        .event_type = IBV_EVENT_QP_FATAL, .element.qp = &verbs_qp};
    mlx5_rec.events[4] = (struct ibv_async_event){
        .event_type = IBV_EVENT_DEVICE_FATAL};
    mlx5_rec.num_events = 5;
    test_mlx5_open(&t);

    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));  /* LID skipped */
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_QP_FATAL);
    GDA_FT_ASSERT_EQ(ev.qpn, 0x77);
    /* a dead device: every port goes down */
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 1);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(t.dev, &ev), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_ACK_ASYNC_EVENT), 5);
    GDA_FT_ASSERT(gda_ft_hca_event_fd(t.dev) >= 0);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, mtu_state_and_udp_port_codes)
{
    static const unsigned mtus[] = {256, 512, 1024, 2048, 4096};
    gda_ft_hca_qp_state_t state;
    unsigned i;

    for (i = 0; i < 5; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_code(mtus[i]), i + 1);
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_bytes(i + 1), mtus[i]);
    }
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_code(1500), 0);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_bytes(7), 0);

    GDA_FT_ASSERT(gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_SQER,
                                                &state));
    GDA_FT_ASSERT_EQ(state, GDA_FT_HCA_QP_ERR);
    GDA_FT_ASSERT(gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_RTR,
                                                &state));
    GDA_FT_ASSERT_EQ(state, GDA_FT_HCA_QP_RTR);
    GDA_FT_ASSERT(!gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_SQD,
                                                 &state));

    for (i = 0; i < 1000; ++i) {
        GDA_FT_ASSERT(gda_ft_mlx5_udp_sport(i, 0x1000 + i) >= 0xc000);
    }
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_udp_sport(5, 9), gda_ft_mlx5_udp_sport(5, 9));
    GDA_FT_ASSERT_NE(gda_ft_mlx5_udp_sport(5, 9),
                     gda_ft_mlx5_udp_sport(6, 9));
}

/* The real backend, on whatever this machine has (no RDMA device in CI):
 * enumeration answers without an error, and what it finds is complete */
GDA_FT_TEST(mlx5_provider, verbs_backend_enumerates_without_error)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i;

    gda_ft_mlx5_sys_set(&gda_ft_mlx5_sys_verbs);
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    for (i = 0; i < count; ++i) {
        GDA_FT_ASSERT(infos[i].provider == &gda_ft_mlx5_provider);
        GDA_FT_ASSERT(infos[i].num_ports >= 1);
        GDA_FT_ASSERT(strlen(infos[i].name) > 0);
    }
    printf("%u mlx5 device(s) on this machine\n", count);
    ucs_free(infos);
}
