/*
 * The mlx5 provider over the DEVX emulator: two devices, QPs created and
 * connected by the provider's own DEVX commands, WQEs posted with the
 * device/ datapath into the provider's rings, executed by the soft engine
 * behind the emulator, completions read from the provider's CQ buffers.
 * Both 8-byte atomic reply orders; a port going down; and the commands
 * the emulator refuses as firmware does.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_test.h"
#include "soft_harness.h"
#include "uct_harness.h"
#include "mlx5_harness.h"
#include "gda_ft_mlx5_int.h"
#include "gda_ft_mlx5_emu.h"
#include "gda_ft_mlx5_emu_check.h"
#include "gda_ft_mlx5_prm.h"

#include <endian.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct test_emu {
    const gda_ft_mlx5_sys_t *prev_sys;
    soft_pair_t              p;      /* its devices are mlx5 devices */
} test_emu_t;

/* The byte order of 8-byte atomic replies the process was started with
 * (strdup'ed, NULL: none), before a test sets its own */
static char *test_emu_order_save(void)
{
    const char *order = getenv("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER");

    return (order != NULL) ? strdup(order) : NULL;
}

/* Puts it back for the tests after, and frees it */
static void test_emu_order_restore(char *order)
{
    if (order != NULL) {
        setenv("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER", order, 1);
        free(order);
    } else {
        unsetenv("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER");
    }
    GDA_FT_ASSERT_OK(gda_ft_soft_reload_config());
}

/* Declares tsoft0 and tsoft1 (extra: a soft setting), installs the
 * emulator in the provider and opens both through the provider */
static ucs_status_t test_emu_try_open(const char *name,
                                      gda_ft_hca_dev_t **dev_p)
{
    gda_ft_hca_dev_info_t info;

    memset(&info, 0, sizeof(info));
    strcpy(info.name, name);
    info.provider = &gda_ft_mlx5_provider;
    return gda_ft_mlx5_provider.dev_open(&info, dev_p);
}

static gda_ft_hca_dev_t *test_emu_open(const char *name)
{
    gda_ft_hca_dev_t *dev;

    GDA_FT_ASSERT_OK(test_emu_try_open(name, &dev));
    GDA_FT_ASSERT(!strcmp(dev->provider->name, "mlx5"));
    return dev;
}

static void test_emu_init(test_emu_t *t, const char *extra,
                          const soft_conn_params_t *params)
{
    memset(t, 0, sizeof(*t));
    soft_test_env(2, extra);
    t->prev_sys = gda_ft_mlx5_sys_set(&gda_ft_mlx5_sys_emu);
    t->p.dev0   = test_emu_open("tsoft0");
    t->p.dev1   = test_emu_open("tsoft1");
    soft_ep_create(&t->p.a, t->p.dev0, 1);
    soft_ep_create(&t->p.b, t->p.dev1, 1);
    soft_ep_pair_connect(&t->p.a, &t->p.b,
                         (params != NULL) ? params : &soft_default_params);
}

static void test_emu_fini(test_emu_t *t)
{
    soft_ep_destroy(&t->p.a);
    soft_ep_destroy(&t->p.b);
    gda_ft_hca_close(t->p.dev0);
    gda_ft_hca_close(t->p.dev1);
    gda_ft_mlx5_sys_set(t->prev_sys);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_live_objects(), 0);
}

static void test_emu_expect_ok(soft_ep_t *ep, uint16_t idx)
{
    gda_ft_dev_cqe_info_t info;

    soft_ep_wait_send(ep, &info, 10000);
    if (info.opcode != GDA_FT_MLX5_CQE_REQ) {
        GDA_FT_FAIL("CQE opcode 0x%x syndrome %s", info.opcode,
                    gda_ft_hca_syndrome_str(info.syndrome));
    }
    GDA_FT_ASSERT_EQ(info.wqe_counter, idx);
}

GDA_FT_TEST(mlx5_emu, devices_are_mlx5_devices_of_the_soft_names)
{
    test_emu_t t;

    test_emu_init(&t, NULL, NULL);
    GDA_FT_ASSERT(!strcmp(t.p.dev0->attr.info.name, "tsoft0"));
    /* what QUERY_HCA_CAP said: 512-byte send WQEs, less the headers */
    GDA_FT_ASSERT_EQ(t.p.dev0->attr.max_inline, 512 - 36);
    /* a CPU thread plays it, and a CPU poster's doorbell wakes it */
    GDA_FT_ASSERT(t.p.dev0->attr.flags & GDA_FT_HCA_DEV_FLAG_CPU_ENGINE);
    GDA_FT_ASSERT(t.p.a.qp->wake_fd >= 0);
    GDA_FT_ASSERT(t.p.a.qp->wake_armed != NULL);
    test_emu_fini(&t);
}

GDA_FT_TEST(mlx5_emu, write_read_and_write_imm_through_provider_rings)
{
    enum { LEN = 10000 };
    uint8_t *src = malloc(LEN), *dst = malloc(LEN), *back = malloc(LEN);
    gda_ft_hca_mr_t *smr, *dmr, *bmr, *rmr;
    gda_ft_dev_cqe_info_t info;
    uint8_t rbuf[16];
    test_emu_t t;
    uint16_t idx;

    test_emu_init(&t, NULL, NULL);
    soft_fill(src, LEN, 3);
    memset(dst, 0, LEN);
    memset(back, 0, LEN);
    smr = soft_mr(&t.p.a, src, LEN, 0);
    bmr = soft_mr(&t.p.a, back, LEN, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    dmr = soft_mr(&t.p.b, dst, LEN, GDA_FT_HCA_ACCESS_REMOTE_WRITE |
                                    GDA_FT_HCA_ACCESS_REMOTE_READ);
    rmr = soft_mr(&t.p.b, rbuf, sizeof(rbuf), GDA_FT_HCA_ACCESS_LOCAL_WRITE);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.p.a.sq, (uintptr_t)src,
                                               smr->lkey, LEN,
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    test_emu_expect_ok(&t.p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(dst, src, LEN);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_read(&t.p.a.sq, (uintptr_t)back,
                                              bmr->lkey, LEN,
                                              (uintptr_t)dst, dmr->rkey,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    test_emu_expect_ok(&t.p.a, idx);
    GDA_FT_ASSERT_MEM_EQ(back, src, LEN);

    /* the peer's receive queue is the first part of its WQ umem */
    soft_ep_post_recv(&t.p.b, rbuf, sizeof(rbuf), rmr->lkey);
    soft_fill(src, LEN, 4);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write_imm(&t.p.a.sq, (uintptr_t)src,
                                                   smr->lkey, LEN,
                                                   (uintptr_t)dst, dmr->rkey,
                                                   0xfeedf00d,
                                                   GDA_FT_WQE_SIGNALED,
                                                   &idx), GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    test_emu_expect_ok(&t.p.a, idx);
    soft_ep_wait_recv(&t.p.b, &info, 10000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_WR_IMM);
    GDA_FT_ASSERT_EQ(info.imm, 0xfeedf00d);
    GDA_FT_ASSERT_EQ(info.byte_cnt, LEN);
    GDA_FT_ASSERT_MEM_EQ(dst, src, LEN);

    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(bmr);
    gda_ft_hca_mr_dereg(dmr);
    gda_ft_hca_mr_dereg(rmr);
    test_emu_fini(&t);
    free(src);
    free(dst);
    free(back);
}

/* Fetch-add and compare-swap; the fetched value in the order the
 * device's QUERY_HCA_CAP says, the operands always big-endian */
static void test_emu_atomics(const char *order, int host_order)
{
    char *prev_order = test_emu_order_save();
    uint64_t *remote = NULL, *result = NULL;
    gda_ft_hca_mr_t *lmr, *rmr;
    uint64_t fetched;
    test_emu_t t;
    uint16_t idx;

    test_emu_init(&t, order, NULL);
    GDA_FT_ASSERT_EQ(!!(t.p.dev0->attr.flags &
                        GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER), host_order);
    GDA_FT_ASSERT_EQ(posix_memalign((void**)&remote, 64, 64), 0);
    GDA_FT_ASSERT_EQ(posix_memalign((void**)&result, 64, 64), 0);
    remote[0] = 0x0102030405060708ull;
    lmr = soft_mr(&t.p.a, result, 64, GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    rmr = soft_mr(&t.p.b, remote, 64, GDA_FT_HCA_ACCESS_REMOTE_ATOMIC |
                                      GDA_FT_HCA_ACCESS_LOCAL_WRITE);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_fa(&t.p.a.sq, (uintptr_t)result,
                                              lmr->lkey, (uintptr_t)remote,
                                              rmr->rkey, 0x10,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    test_emu_expect_ok(&t.p.a, idx);
    fetched = host_order ? result[0] : be64toh(result[0]);
    GDA_FT_ASSERT_EQ(fetched, 0x0102030405060708ull);
    GDA_FT_ASSERT_EQ(remote[0], 0x0102030405060718ull);

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_atomic_cs(&t.p.a.sq, (uintptr_t)result,
                                              lmr->lkey, (uintptr_t)remote,
                                              rmr->rkey,
                                              0x0102030405060718ull, 77,
                                              GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    test_emu_expect_ok(&t.p.a, idx);
    fetched = host_order ? result[0] : be64toh(result[0]);
    GDA_FT_ASSERT_EQ(fetched, 0x0102030405060718ull);
    GDA_FT_ASSERT_EQ(remote[0], 77);

    gda_ft_hca_mr_dereg(lmr);
    gda_ft_hca_mr_dereg(rmr);
    test_emu_fini(&t);
    free(remote);
    free(result);

    test_emu_order_restore(prev_order);
}

GDA_FT_TEST(mlx5_emu, atomics_big_endian_profile)
{
    test_emu_atomics("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=n", 0);
}

GDA_FT_TEST(mlx5_emu, atomics_host_order_profile)
{
    test_emu_atomics("UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=y", 1);
}

/* The port under the peer goes down: the write is retried until the
 * retry count is spent, an error CQE lands in the provider's CQ, the QP
 * reads ERR, and the port change comes as an async event */
GDA_FT_TEST(mlx5_emu, port_down_gives_an_error_cqe_and_a_port_event)
{
    static const soft_conn_params_t params = {
        .timeout = 8, .retry_cnt = 1, .rnr_retry = 1, .min_rnr_timer = 1,
        .mtu = 4096
    };
    uint8_t src[64] = {1}, dst[64];
    gda_ft_hca_qp_query_attr_t query;
    gda_ft_hca_mr_t *smr, *dmr;
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_event_t event;
    test_emu_t t;
    uint16_t idx;
    double end;

    test_emu_init(&t, NULL, &params);
    smr = soft_mr(&t.p.a, src, sizeof(src), 0);
    dmr = soft_mr(&t.p.b, dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(gda_ft_soft_dev_find("tsoft1"),
                                             1, 0));

    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.p.a.sq, (uintptr_t)src,
                                               smr->lkey, sizeof(src),
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&t.p.a);
    soft_ep_wait_send(&t.p.a, &info, 10000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ_ERR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    GDA_FT_ASSERT(gda_ft_mlx5_syndrome_is_path_error(info.syndrome));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(t.p.a.qp, &query));
    GDA_FT_ASSERT_EQ(query.state, GDA_FT_HCA_QP_ERR);

    /* the provider reads the peer's device's events through the
     * emulator's async fd */
    for (end = soft_now_sec() + 5;
         gda_ft_hca_get_event(t.p.dev1, &event) != UCS_OK;) {
        GDA_FT_ASSERT(soft_now_sec() < end);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(event.port_num, 1);

    GDA_FT_ASSERT_OK(gda_ft_soft_port_set_up(gda_ft_soft_dev_find("tsoft1"),
                                             1, 1));
    for (end = soft_now_sec() + 5;
         gda_ft_hca_get_event(t.p.dev1, &event) != UCS_OK;) {
        GDA_FT_ASSERT(soft_now_sec() < end);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(event.type, GDA_FT_HCA_EVENT_PORT_ACTIVE);

    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
    test_emu_fini(&t);
}

/* The commands themselves, sent to the emulator's table directly */
typedef struct test_emu_cmds {
    struct ibv_device      **list;
    struct ibv_context      *ctx;
    struct ibv_pd           *pd;
    struct mlx5dv_devx_uar  *uar;
    struct mlx5dv_devx_umem *wq, *dbr, *cqbuf;
    void                    *pages;
    uint32_t                 pdn;
} test_emu_cmds_t;

static void test_emu_cmds_open(test_emu_cmds_t *c)
{
    const gda_ft_mlx5_sys_t *sys = &gda_ft_mlx5_sys_emu;
    int num;

    soft_test_env(2, NULL);
    c->list = sys->get_device_list(&num);
    GDA_FT_ASSERT((c->list != NULL) && (num == 2));
    c->ctx = sys->open_device(c->list[0]);
    GDA_FT_ASSERT(c->ctx != NULL);
    c->pd  = sys->alloc_pd(c->ctx);
    GDA_FT_ASSERT(c->pd != NULL);
    GDA_FT_ASSERT_EQ(sys->pd_number(c->pd, &c->pdn), 0);
    c->uar = sys->alloc_uar(c->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
    GDA_FT_ASSERT(c->uar != NULL);
    GDA_FT_ASSERT_EQ(posix_memalign(&c->pages, 4096, 3 * 4096), 0);
    memset(c->pages, 0, 3 * 4096);
    c->wq    = sys->umem_reg(c->ctx, c->pages, 4096, 0, -1);
    c->cqbuf = sys->umem_reg(c->ctx, (char*)c->pages + 4096, 4096, 0, -1);
    c->dbr   = sys->umem_reg(c->ctx, (char*)c->pages + 8192, 64, 0, -1);
    GDA_FT_ASSERT((c->wq != NULL) && (c->cqbuf != NULL) && (c->dbr != NULL));
}

static void test_emu_cmds_close(test_emu_cmds_t *c)
{
    const gda_ft_mlx5_sys_t *sys = &gda_ft_mlx5_sys_emu;

    GDA_FT_ASSERT_EQ(sys->umem_dereg(c->wq), 0);
    GDA_FT_ASSERT_EQ(sys->umem_dereg(c->cqbuf), 0);
    GDA_FT_ASSERT_EQ(sys->umem_dereg(c->dbr), 0);
    sys->free_uar(c->uar);
    GDA_FT_ASSERT_EQ(sys->dealloc_pd(c->pd), 0);
    GDA_FT_ASSERT_EQ(sys->close_device(c->ctx), 0);
    sys->free_device_list(c->list);
    free(c->pages);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_live_objects(), 0);
}

/* A CREATE_CQ the emulator accepts: 64 CQEs */
static void test_emu_cq_in(test_emu_cmds_t *c, uint32_t *in)
{
    void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);

    memset(in, 0, GDA_FT_MLX5_ST_SZ_BYTES(create_cq_in));
    GDA_FT_MLX5_SET(create_cq_in, in, opcode, GDA_FT_MLX5_CMD_OP_CREATE_CQ);
    GDA_FT_MLX5_SET(create_cq_in, in, cq_umem_valid, 1);
    GDA_FT_MLX5_SET(create_cq_in, in, cq_umem_id, c->cqbuf->umem_id);
    GDA_FT_MLX5_SET(cqc, cqc, log_cq_size, 6);
    GDA_FT_MLX5_SET(cqc, cqc, uar_page, c->uar->page_id);
    GDA_FT_MLX5_SET(cqc, cqc, c_eqn, 7);
    GDA_FT_MLX5_SET(cqc, cqc, dbr_umem_valid, 1);
    GDA_FT_MLX5_SET(cqc, cqc, dbr_umem_id, c->dbr->umem_id);
}

/* Sends a CREATE_CQ; with a syndrome expected, checks the refusal */
static struct mlx5dv_devx_obj *test_emu_create(test_emu_cmds_t *c,
                                               const uint32_t *in,
                                               uint32_t syndrome)
{
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(create_qp_out)] = {0};
    struct mlx5dv_devx_obj *obj;

    errno = 0;
    obj   = gda_ft_mlx5_sys_emu.obj_create(c->ctx, in,
                                           GDA_FT_MLX5_ST_SZ_BYTES(
                                                   create_qp_in),
                                           out, sizeof(out));
    if (syndrome == 0) {
        GDA_FT_ASSERT(obj != NULL);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_out, out, status), 0);
    } else {
        if (obj != NULL) {
            GDA_FT_FAIL("accepted a command to refuse with 0x%x", syndrome);
        }
        GDA_FT_ASSERT_EQ(errno, EREMOTEIO);
        GDA_FT_ASSERT(GDA_FT_MLX5_GET(modify_qp_out, out, status) != 0);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_out, out, syndrome),
                         syndrome);
    }
    return obj;
}

GDA_FT_TEST(mlx5_emu, create_cq_refuses_what_firmware_refuses)
{
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_cq_in)];
    void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);
    struct mlx5dv_devx_obj *cq;
    test_emu_cmds_t c;

    test_emu_cmds_open(&c);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(create_cq_in, in, cq_umem_id, 0x7777);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_UNKNOWN);

    test_emu_cq_in(&c, in);      /* 128 CQEs do not fit the page */
    GDA_FT_MLX5_SET(cqc, cqc, log_cq_size, 7);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_RANGE);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET64(create_cq_in, in, cq_umem_offset, 64);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_RANGE);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(cqc, cqc, log_cq_size, 23);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_LOG_SIZE);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(cqc, cqc, uar_page, c.uar->page_id + 1);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UAR_UNKNOWN);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(cqc, cqc, c_eqn, 8);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_EQN_UNKNOWN);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(cqc, cqc, dbr_umem_valid, 0);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_MISSING);

    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET64(cqc, cqc, dbr_addr, 4);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_ALIGN);

    test_emu_cq_in(&c, in);
    cq = test_emu_create(&c, in, 0);
    /* a umem under a CQ stays */
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_sys_emu.umem_dereg(c.cqbuf), EBUSY);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_sys_emu.obj_destroy(cq), 0);
    test_emu_cmds_close(&c);
}

/* A CREATE_QP the emulator accepts: 16 RQ WQEs of 16 bytes then 32 send
 * WQE blocks, all in the WQ page */
static void test_emu_qp_in(test_emu_cmds_t *c, uint32_t cqn, uint32_t *in)
{
    void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);

    memset(in, 0, GDA_FT_MLX5_ST_SZ_BYTES(create_qp_in));
    GDA_FT_MLX5_SET(create_qp_in, in, opcode, GDA_FT_MLX5_CMD_OP_CREATE_QP);
    GDA_FT_MLX5_SET(create_qp_in, in, wq_umem_valid, 1);
    GDA_FT_MLX5_SET(create_qp_in, in, wq_umem_id, c->wq->umem_id);
    GDA_FT_MLX5_SET(qpc, qpc, st, GDA_FT_MLX5_QPC_ST_RC);
    GDA_FT_MLX5_SET(qpc, qpc, pm_state, GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_MLX5_SET(qpc, qpc, pd, c->pdn);
    GDA_FT_MLX5_SET(qpc, qpc, uar_page, c->uar->page_id);
    GDA_FT_MLX5_SET(qpc, qpc, log_sq_size, 5);
    GDA_FT_MLX5_SET(qpc, qpc, log_rq_size, 4);
    GDA_FT_MLX5_SET(qpc, qpc, cqn_snd, cqn);
    GDA_FT_MLX5_SET(qpc, qpc, cqn_rcv, cqn);
    GDA_FT_MLX5_SET(qpc, qpc, dbr_umem_valid, 1);
    GDA_FT_MLX5_SET(qpc, qpc, dbr_umem_id, c->dbr->umem_id);
    GDA_FT_MLX5_SET64(qpc, qpc, dbr_addr, 8);
}

/* Sends a transition; 0 when accepted, else the syndrome it got */
static uint32_t test_emu_modify(struct mlx5dv_devx_obj *qp, uint16_t opcode,
                                uint32_t qpn, uint32_t *in)
{
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(modify_qp_out)] = {0};
    int ret;

    GDA_FT_MLX5_SET(rst2init_qp_in, in, opcode, opcode);
    GDA_FT_MLX5_SET(rst2init_qp_in, in, qpn, qpn);
    ret = gda_ft_mlx5_sys_emu.obj_modify(qp, in,
                                         GDA_FT_MLX5_ST_SZ_BYTES(
                                                 rst2init_qp_in),
                                         out, sizeof(out));
    if (ret == 0) {
        return 0;
    }
    GDA_FT_ASSERT_EQ(ret, EREMOTEIO);
    return GDA_FT_MLX5_GET(modify_qp_out, out, syndrome);
}

static void test_emu_rtr_in(uint32_t *in)
{
    static const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                    127, 0, 0, 2};
    void *qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in, in, qpc);

    memset(in, 0, GDA_FT_MLX5_ST_SZ_BYTES(init2rtr_qp_in));
    GDA_FT_MLX5_SET(qpc, qpc, mtu, GDA_FT_MLX5_QPC_MTU_1K_BYTES);
    GDA_FT_MLX5_SET(qpc, qpc, log_msg_max, 30);
    GDA_FT_MLX5_SET(qpc, qpc, remote_qpn, 0x1234);
    memcpy(GDA_FT_MLX5_ADDR_OF(qpc, qpc, primary_path_rgid_rip), gid, 16);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index, 3);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_hop_limit, 64);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_tclass, 106);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_dscp, 106 >> 2);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_rmac_31_0, 0x7f000002);
}

GDA_FT_TEST(mlx5_emu, qp_commands_refuse_what_firmware_refuses)
{
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_qp_in)];
    void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);
    uint32_t cq_in[GDA_FT_MLX5_ST_SZ_DW(create_cq_in)];
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(create_qp_out)] = {0};
    struct mlx5dv_devx_obj *cq, *qp;
    test_emu_cmds_t c;
    uint32_t cqn, qpn;

    test_emu_cmds_open(&c);
    test_emu_cq_in(&c, cq_in);
    cq = gda_ft_mlx5_sys_emu.obj_create(c.ctx, cq_in, sizeof(cq_in), out,
                                        sizeof(out));
    GDA_FT_ASSERT(cq != NULL);
    cqn = GDA_FT_MLX5_GET(create_cq_out, out, cqn);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET(qpc, qpc, pm_state, 0);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_PM_STATE);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET(qpc, qpc, pd, c.pdn + 1);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_PD_UNKNOWN);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET(qpc, qpc, cqn_snd, cqn + 100);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_CQN_UNKNOWN);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET(qpc, qpc, no_sq, 1);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_LOG_SIZE);

    test_emu_qp_in(&c, cqn, in);   /* 64 blocks and the RQ: past the page */
    GDA_FT_MLX5_SET(qpc, qpc, log_sq_size, 6);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_RANGE);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET64(create_qp_in, in, wq_umem_offset, 4096 - 64);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_UMEM_RANGE);

    test_emu_qp_in(&c, cqn, in);
    GDA_FT_MLX5_SET(qpc, qpc, st, 1);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_ST);

    test_emu_qp_in(&c, cqn, in);
    memset(out, 0, sizeof(out));
    qp = gda_ft_mlx5_sys_emu.obj_create(c.ctx, in, sizeof(in), out,
                                        sizeof(out));
    GDA_FT_ASSERT(qp != NULL);
    qpn = GDA_FT_MLX5_GET(create_qp_out, out, qpn);
    /* a CQ under a QP stays */
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_sys_emu.obj_destroy(cq), EBUSY);

    /* RESET: only RST2INIT, with the port and pm_state */
    test_emu_rtr_in(in);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_QP_STATE);
    memset(in, 0, sizeof(in));
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2INIT_QP,
                                     qpn, in),
                     GDA_FT_MLX5_EMU_SYND_QP_STATE);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_PM_STATE);
    GDA_FT_MLX5_SET(qpc, qpc, pm_state, GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_PORT);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_vhca_port_num, 1);
    GDA_FT_MLX5_SET(qpc, qpc, atomic_mode, 4);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_ATOMIC_MODE);
    GDA_FT_MLX5_SET(qpc, qpc, atomic_mode, 3);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP,
                                     qpn + 1, in), GDA_FT_MLX5_EMU_SYND_QPN);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP, qpn,
                                     in), 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RST2INIT_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_QP_STATE);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2INIT_QP,
                                     qpn, in), 0);

    /* INIT2RTR: every path field RoCE needs */
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, mtu, 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_MTU);
    test_emu_rtr_in(in);
    memset(GDA_FT_MLX5_ADDR_OF(qpc, qpc, primary_path_rgid_rip), 0, 16);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_RGID);
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_hop_limit, 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_HOP_LIMIT);
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_dscp, 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_DSCP);
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_rmac_31_0, 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_RMAC);
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, log_rra_max, 5);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_RA_MAX);
    test_emu_rtr_in(in);           /* a RoCE v1 entry */
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index, 2);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_GID_INDEX);
    test_emu_rtr_in(in);           /* an empty entry */
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index, 4);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_GID_INDEX);
    test_emu_rtr_in(in);           /* link-local (IPv6), an IPv4 peer */
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index, 1);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_GID_NETWORK);
    /* the IPv4 address's entries moved as across a flap: index 3 is an
     * IPv6 address's now, 5 the IPv4 address's */
    GDA_FT_ASSERT_OK(gda_ft_mlx5_emu_gid_move("tsoft0", 1, 1));
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_gid_move("tsoft0", 3, 1),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_gid_move("nosuch", 1, 1),
                     UCS_ERR_NO_DEVICE);
    test_emu_rtr_in(in);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_GID_NETWORK);
    test_emu_rtr_in(in);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index, 5);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, qpn,
                                     in), 0);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_qps_sending_from("tsoft0", 1, 5), 1);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_qps_sending_from("tsoft0", 1, 3), 0);

    /* RTR2RTS once, then 2ERR and 2RST from anywhere */
    memset(in, 0, sizeof(in));
    GDA_FT_MLX5_SET(qpc, qpc, log_sra_max, 5);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_RA_MAX);
    GDA_FT_MLX5_SET(qpc, qpc, log_sra_max, 4);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, qpn,
                                     in), 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, qpn,
                                     in), GDA_FT_MLX5_EMU_SYND_QP_STATE);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_2ERR_QP, qpn, in),
                     0);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_qps_sending_from("tsoft0", 1, 5), 0);
    GDA_FT_ASSERT_EQ(test_emu_modify(qp, GDA_FT_MLX5_CMD_OP_2RST_QP, qpn, in),
                     0);

    GDA_FT_ASSERT_EQ(gda_ft_mlx5_sys_emu.obj_destroy(qp), 0);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_sys_emu.obj_destroy(cq), 0);
    test_emu_cmds_close(&c);
}

/* The transport over the mlx5 provider: its endpoints' QPs and their host
 * channels are created by DEVX commands, their rings registered as umems */
GDA_FT_TEST(mlx5_emu, uct_put_and_get_over_the_emulator)
{
    static const size_t len = 3000;
    uint8_t data[3000], back[3000];
    uct_iov_t iov;
    test_uct_t t;

    setenv("UCX_GDA_FT_MLX5_SYS", "emu", 1);
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    soft_fill(data, len, 9);
    memcpy(t.node[NODE_A].buf, data, len);
    iov.buffer = t.node[NODE_A].buf;
    iov.length = len;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    GDA_FT_ASSERT(uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                   raddr_b(&t, 0), rkey_b(&t), NULL) >= 0);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf, data, len);

    memset(back, 0, len);
    iov.buffer = t.node[NODE_A].buf + 8192;
    GDA_FT_ASSERT(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                   raddr_b(&t, 0), rkey_b(&t), NULL) >= 0);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_A].buf + 8192, data, len);
    test_uct_cleanup(&t);
}

/* Round trips of an 8-byte put and a flush on A's endpoint; returns how
 * many progress calls found nothing to do, per round trip. The loop never
 * sleeps: a program that polls its CQ does not. */
static double test_emu_empty_polls_per_round_trip(test_uct_t *t,
                                                  unsigned iters)
{
    double deadline     = soft_now_sec() + 60;
    unsigned long empty = 0;
    ucs_status_t status;
    test_comp_t comp;
    uint64_t value;
    unsigned i;

    for (i = 0; i < iters; ++i) {
        value = 1000 + i;
        GDA_FT_ASSERT_OK(test_put_short(t, &value, sizeof(value), 0));
        test_comp_init(&comp, 1);
        while ((status = uct_ep_flush(t->node[NODE_A].ep, 0,
                                      &comp.super)) == UCS_ERR_NO_RESOURCE) {
            empty += (test_progress(t) == 0);
        }
        if (status == UCS_INPROGRESS) {
            while (comp.calls == 0) {
                empty += (test_progress(t) == 0);
                if (soft_now_sec() > deadline) {
                    GDA_FT_FAIL("round trip %u of %u not done in 60 s", i,
                                iters);
                }
            }
            status = comp.super.status;
        }
        GDA_FT_ASSERT_OK(status);
        GDA_FT_ASSERT_EQ(*(uint64_t*)t->node[NODE_B].buf, value);
    }
    return (double)empty / iters;
}

/*
 * The emulated device is a CPU thread, as a soft device is: the transport
 * knows it (GDA_FT_HCA_DEV_FLAG_CPU_ENGINE) and yields it the CPU while it
 * waits. With the program and the engine on one CPU, a poller that did not
 * yield would spin out its time slice before the engine ran again (a tick,
 * 4 ms with HZ=250): thousands of empty polls per round trip, where
 * yielding leaves a few. Counted, not timed.
 */
GDA_FT_TEST_TIMEOUT(mlx5_emu, one_cpu_round_trips_yield_to_the_engine, 120)
{
    enum { ITERS = 300 };
    cpu_set_t one;
    double polls;
    test_uct_t t;

    /* the engine threads start on the process's CPUs: this one only */
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    GDA_FT_ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);

    setenv("UCX_GDA_FT_MLX5_SYS", "emu", 1);
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=10s", NULL);
    test_uct_setup(&t);

    polls = test_emu_empty_polls_per_round_trip(&t, ITERS);
    printf("%.1f empty polls per round trip\n", polls);
    GDA_FT_ASSERT(polls < 100);
    test_uct_cleanup(&t);
}

/*
 * A CPU poster's doorbell wakes a sleeping engine through the soft QP's
 * eventfd, as over a soft device. The engine sleeps as soon as it is idle
 * (no spin) for an hour at a time, and nothing but the doorbell has
 * anything for it: each write completes only if ringing woke it.
 */
GDA_FT_TEST(mlx5_emu, cpu_doorbells_wake_a_sleeping_engine)
{
    uint64_t src = 0, dst = 0;
    gda_ft_hca_mr_t *smr, *dmr;
    test_emu_t t;
    uint16_t idx;
    unsigned i;

    setenv("UCX_GDA_FT_SOFT_SPIN_TIME", "0", 1);
    test_emu_init(&t, "UCX_GDA_FT_SOFT_IDLE_POLL=3600s", NULL);
    smr = soft_mr(&t.p.a, &src, sizeof(src), 0);
    dmr = soft_mr(&t.p.b, &dst, sizeof(dst), GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    for (i = 1; i <= 5; ++i) {
        usleep(20000);   /* the engine has gone to sleep */
        src = i;
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&t.p.a.sq, (uintptr_t)&src,
                                                   smr->lkey, sizeof(src),
                                                   (uintptr_t)&dst, dmr->rkey,
                                                   GDA_FT_WQE_SIGNALED, &idx),
                         GDA_FT_DEV_OK);
        soft_ep_ring(&t.p.a);
        test_emu_expect_ok(&t.p.a, idx);
        GDA_FT_ASSERT_EQ(dst, i);
    }
    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
    test_emu_fini(&t);
}

typedef ucs_status_t (*test_emu_gid_move_func_t)(const char*, uint8_t, int);
typedef unsigned (*test_emu_sending_from_func_t)(const char*, uint8_t,
                                                 unsigned);

/*
 * A port flap after which the port's GID table holds another address at
 * the index its QPs were connected with (an IPv6 address took the IPv4
 * address's entries; NCCL #2157 met this on ConnectX): the provider reads
 * the table again when the primary is re-armed, so the re-armed QPs send
 * from the IPv4 address's new entry and the endpoint fails back. A QP
 * connected with the stale index would send from the IPv6 address, and
 * the emulator refuses that connect.
 */
GDA_FT_TEST(mlx5_emu, failback_after_a_flap_that_moved_the_gid)
{
    test_emu_gid_move_func_t gid_move;
    test_emu_sending_from_func_t sending_from;
    unsigned slot = 0, before, i;
    test_counters_t a;
    test_uct_t t;

    setenv("UCX_GDA_FT_MLX5_SYS", "emu", 1);
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=1s",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=50ms", NULL);
    gid_move     = (test_emu_gid_move_func_t)dlsym(
            t.plugin, "gda_ft_mlx5_emu_gid_move");
    sending_from = (test_emu_sending_from_func_t)dlsym(
            t.plugin, "gda_ft_mlx5_emu_qps_sending_from");
    GDA_FT_ASSERT((gid_move != NULL) && (sending_from != NULL));
    test_uct_setup(&t);
    test_put_word(&t, slot, 1000 + slot);
    ++slot;
    before = sending_from("tsoft0", 1, 3);
    printf("before: %u QPs of tsoft0:1 send from GID index 3\n", before);
    GDA_FT_ASSERT(before > 0);
    GDA_FT_ASSERT_EQ(sending_from("tsoft0", 1, 5), 0);

    /* the primary port goes down; while it is, the table changes */
    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);
    GDA_FT_ASSERT_OK(gid_move("tsoft0", 1, 1));
    test_port_set(&t, "tsoft0", 1);
    test_put_until(&t, &slot, &a, &a.failbacks, 1);
    for (i = 0; i < 20; ++i, ++slot) {
        test_put_word(&t, slot % 512, 1000 + slot);
    }

    /* the re-armed ones send from the new entry; a QP the flap did not
     * fail (a host channel's target end, which B never posted to) is not
     * re-armed and keeps the old index */
    printf("after: %u from index 3, %u from 5\n",
           sending_from("tsoft0", 1, 3), sending_from("tsoft0", 1, 5));
    GDA_FT_ASSERT(sending_from("tsoft0", 1, 5) > 0);
    GDA_FT_ASSERT(sending_from("tsoft0", 1, 3) < before);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 1);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_B].errors, 0);
    test_uct_cleanup(&t);
}

/* A made-up device smaller than the built-in one in every limit the
 * provider reads, whose firmware answers 8-byte atomics big-endian only */
static const char test_emu_small_device[] =
    "hca_id:\tmlx5_small\n"
    "\tfw_ver:\t\t\t\t1.0.0\n"
    "\tvendor_part_id:\t\t\t4125\n"
    "\tmax_qp:\t\t\t\t1024\n"
    "\tmax_qp_wr:\t\t\t4096\n"
    "\tmax_sge:\t\t\t14\n"
    "\tmax_cq:\t\t\t\t1024\n"
    "\tmax_cqe:\t\t\t65535\n"
    "\tmax_qp_rd_atom:\t\t\t4\n"
    "\tmax_qp_init_rd_atom:\t\t4\n"
    "\tatomic_cap:\t\t\tATOMIC_NONE (0)\n"
    "\t\tport:\t1\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n";

/* The provider takes its limits from what the device answers: a smaller
 * device gives smaller queues and inline data, its firmware refuses what
 * is past them, and a big-endian-only device cannot be played by an
 * engine that answers in host order */
GDA_FT_TEST(mlx5_emu, the_device_profile_limits_the_provider)
{
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_qp_in)];
    void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);
    void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);
    char path[] = "/tmp/gda_ft_emu_device_XXXXXX";
    char *prev_order = test_emu_order_save();
    const gda_ft_mlx5_sys_t *prev_sys;
    gda_ft_hca_dev_t *dev;
    test_emu_cmds_t c;
    test_emu_t t;
    char *prev;

    prev       = test_mlx5_device_set(test_emu_small_device, path);
    test_emu_init(&t, "UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=n", NULL);
    GDA_FT_ASSERT_EQ(t.p.dev0->attr.max_sq_wqebb, 4096);
    GDA_FT_ASSERT_EQ(t.p.dev0->attr.max_rq_wqe, 4096);
    GDA_FT_ASSERT_EQ(t.p.dev0->attr.max_inline, 32 + 14 * 16 - 36);
    GDA_FT_ASSERT_EQ(t.p.dev0->attr.max_rd_atomic, 4);
    GDA_FT_ASSERT(!(t.p.dev0->attr.flags &
                    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER));
    test_emu_fini(&t);

    test_emu_cmds_open(&c);
    test_emu_cq_in(&c, in);
    GDA_FT_MLX5_SET(cqc, cqc, log_cq_size, 17);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_LOG_SIZE);
    test_emu_qp_in(&c, 0, in);
    GDA_FT_MLX5_SET(qpc, qpc, log_sq_size, 13);
    test_emu_create(&c, in, GDA_FT_MLX5_EMU_SYND_LOG_SIZE);
    test_emu_cmds_close(&c);

    soft_test_env(2, "UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=y");
    prev_sys = gda_ft_mlx5_sys_set(&gda_ft_mlx5_sys_emu);
    ucs_log_push_handler(test_mlx5_log);
    test_mlx5_errors = 0;
    GDA_FT_ASSERT(test_emu_try_open("tsoft0", &dev) != UCS_OK);
    ucs_log_pop_handler();
    gda_ft_mlx5_sys_set(prev_sys);
    GDA_FT_ASSERT(test_mlx5_errors >= 1);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_live_objects(), 0);

    test_emu_order_restore(prev_order);
    test_mlx5_device_restore(prev, path);
}
