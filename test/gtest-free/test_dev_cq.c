/*
 * CQ polling of device/gda_ft_cq.h, compiled for the host: the tests play
 * the HCA, writing mlx5 CQE64s byte by byte (owner bit flipping every pass
 * of the ring, op_own written last), and check what the poller reports.
 */
#include "gda_ft_test.h"

#include "gda_ft_cq.h"

#define TEST_QPN 0x00123456u

typedef struct {
    gda_ft_dev_cq_t cq;
    uint8_t        *buf;
    uint32_t        hw_index; /* next CQE the "HCA" writes */
} test_cq_t;


static void test_cq_init(test_cq_t *t, uint32_t cqe_cnt, int collapsed)
{
    t->buf = (uint8_t*)aligned_alloc(GDA_FT_MLX5_CQE_SIZE,
                                     cqe_cnt * GDA_FT_MLX5_CQE_SIZE);
    GDA_FT_ASSERT(t->buf != NULL);
    memset(t->buf, 0xcc, cqe_cnt * GDA_FT_MLX5_CQE_SIZE);
    gda_ft_cq_init_buf(t->buf, cqe_cnt);
    gda_ft_dev_cq_init(&t->cq, t->buf, cqe_cnt, collapsed);
    t->hw_index = 0;
}

static void test_cq_cleanup(test_cq_t *t)
{
    free(t->buf);
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, (uint16_t)(v >> 16));
    put_be16(p + 2, (uint16_t)v);
}

/* Writes the next CQE as the HCA would: fields first, op_own last */
static void hca_write_cqe(test_cq_t *t, uint8_t opcode, uint16_t wqe_counter,
                          uint32_t byte_cnt, uint32_t imm)
{
    uint32_t slot  = t->hw_index & (t->cq.cqe_cnt - 1);
    uint8_t  owner = t->cq.collapsed ? 0 :
                     (uint8_t)((t->hw_index / t->cq.cqe_cnt) & 1);
    uint8_t *cqe   = t->buf + slot * GDA_FT_MLX5_CQE_SIZE;

    memset(cqe, 0, GDA_FT_MLX5_CQE_SIZE - 1);
    put_be32(cqe + 36, imm);
    put_be32(cqe + 44, byte_cnt);
    put_be32(cqe + 56, TEST_QPN);
    put_be16(cqe + 60, wqe_counter);
    __atomic_store_n(&cqe[63], (uint8_t)((opcode << 4) | owner),
                     __ATOMIC_RELEASE);
    t->hw_index++;
}

static void hca_write_err_cqe(test_cq_t *t, uint8_t opcode,
                              uint16_t wqe_counter, uint8_t syndrome,
                              uint8_t vendor_synd, uint8_t wqe_opcode)
{
    uint32_t slot  = t->hw_index & (t->cq.cqe_cnt - 1);
    uint8_t  owner = t->cq.collapsed ? 0 :
                     (uint8_t)((t->hw_index / t->cq.cqe_cnt) & 1);
    uint8_t *cqe   = t->buf + slot * GDA_FT_MLX5_CQE_SIZE;

    memset(cqe, 0, GDA_FT_MLX5_CQE_SIZE - 1);
    cqe[54] = vendor_synd;
    cqe[55] = syndrome;
    put_be32(cqe + 56, ((uint32_t)wqe_opcode << 24) | TEST_QPN);
    put_be16(cqe + 60, wqe_counter);
    __atomic_store_n(&cqe[63], (uint8_t)((opcode << 4) | owner),
                     __ATOMIC_RELEASE);
    t->hw_index++;
}


GDA_FT_TEST(dev_cq, init_buf_marks_every_cqe_invalid_with_owner_1)
{
    test_cq_t t;
    uint32_t  i, j;

    test_cq_init(&t, 8, 0);
    for (i = 0; i < 8; ++i) {
        const uint8_t *cqe = t.buf + i * GDA_FT_MLX5_CQE_SIZE;

        GDA_FT_ASSERT_EQ(cqe[63], 0xf1);
        for (j = 0; j < 63; ++j) {
            GDA_FT_ASSERT_EQ(cqe[j], 0);
        }
    }
    GDA_FT_ASSERT_EQ(t.cq.version, GDA_FT_DEV_VERSION);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, empty_ring_is_in_progress)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;
    int                   i;

    test_cq_init(&t, 4, 0);
    for (i = 0; i < 3; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info),
                         GDA_FT_DEV_INPROGRESS);
    }
    GDA_FT_ASSERT_EQ(t.cq.ci, 0);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, ring_poll_follows_owner_bit_across_wraps)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;
    uint16_t              i;

    test_cq_init(&t, 4, 0);
    /* five passes over the ring, one CQE at a time: after each CQE the next
     * slot still holds the previous pass's CQE, which must not be taken */
    for (i = 0; i < 20; ++i) {
        hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, (uint16_t)(i * 3), 8 * i, 0);
        GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(info.wqe_counter, i * 3);
        GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
        GDA_FT_ASSERT_EQ(info.byte_cnt, 8 * i);
        GDA_FT_ASSERT_EQ(info.qpn, TEST_QPN);
        GDA_FT_ASSERT_EQ(info.syndrome, 0);
        GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info),
                         GDA_FT_DEV_INPROGRESS);
    }
    GDA_FT_ASSERT_EQ(t.cq.ci, 20);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, ring_poll_takes_a_full_ring_in_order)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;
    int                   pass, i;

    test_cq_init(&t, 4, 0);
    for (pass = 0; pass < 3; ++pass) {
        for (i = 0; i < 4; ++i) {
            hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ,
                          (uint16_t)(pass * 4 + i), 0, 0);
        }
        for (i = 0; i < 4; ++i) {
            GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info),
                             GDA_FT_DEV_OK);
            GDA_FT_ASSERT_EQ(info.wqe_counter, pass * 4 + i);
        }
        GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info),
                         GDA_FT_DEV_INPROGRESS);
    }
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, ring_receive_cqe_reports_length_and_imm)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 4, 0);
    hca_write_cqe(&t, GDA_FT_MLX5_CQE_RESP_SEND_IMM, 5, 1234, 0xa1b2c3d4);
    hca_write_cqe(&t, GDA_FT_MLX5_CQE_RESP_SEND, 6, 99, 0xa1b2c3d4);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_SEND_IMM);
    GDA_FT_ASSERT_EQ(info.byte_cnt, 1234);
    GDA_FT_ASSERT_EQ(info.imm, 0xa1b2c3d4);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 5);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_SEND);
    GDA_FT_ASSERT_EQ(info.imm, 0); /* no immediate without _IMM */
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, ring_error_cqe_returns_error_with_syndrome)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 4, 0);
    hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, 0, 0, 0);
    hca_write_err_cqe(&t, GDA_FT_MLX5_CQE_REQ_ERR, 7,
                      GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR, 0x81,
                      GDA_FT_MLX5_OPCODE_RDMA_WRITE);
    hca_write_err_cqe(&t, GDA_FT_MLX5_CQE_REQ_ERR, 8,
                      GDA_FT_MLX5_SYND_WR_FLUSH_ERR, 0, 0x12);

    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ_ERR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    GDA_FT_ASSERT_EQ(info.vendor_synd, 0x81);
    GDA_FT_ASSERT_EQ(info.wqe_opcode, GDA_FT_MLX5_OPCODE_RDMA_WRITE);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 7);
    GDA_FT_ASSERT_EQ(info.qpn, TEST_QPN);
    GDA_FT_ASSERT_EQ(GDA_FT_DEV_RESULT_SYNDROME(
                             GDA_FT_DEV_RESULT(GDA_FT_DEV_ERROR,
                                               info.syndrome,
                                               info.vendor_synd)),
                     0x15);

    /* the error CQE is consumed: the flush error behind it comes next */
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 8);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info),
                     GDA_FT_DEV_INPROGRESS);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, ring_resp_error_cqe_returns_error)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 2, 0);
    hca_write_err_cqe(&t, GDA_FT_MLX5_CQE_RESP_ERR, 3,
                      GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR, 0, 0);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&t.cq, &info), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_RESP_ERR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 3);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, collapsed_poll_compares_wqe_counter)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 1, 1);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 0, &info),
                     GDA_FT_DEV_INPROGRESS);

    hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, 3, 64, 0);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 2, &info),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 3);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 3, &info),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 4, &info),
                     GDA_FT_DEV_INPROGRESS);
    /* polling a collapsed CQ consumes nothing */
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 3, &info),
                     GDA_FT_DEV_OK);

    hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, 9, 64, 0);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 9, &info),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 9);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, collapsed_poll_is_wrap_safe)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 1, 1);
    hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, 65535, 0, 0);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 0, &info),
                     GDA_FT_DEV_INPROGRESS);
    hca_write_cqe(&t, GDA_FT_MLX5_CQE_REQ, 2, 0, 0);
    /* 2 comes after 65530 in 16-bit counter order */
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 65530, &info),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 1, &info),
                     GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 3, &info),
                     GDA_FT_DEV_INPROGRESS);
    test_cq_cleanup(&t);
}

GDA_FT_TEST(dev_cq, collapsed_error_cqe_fails_any_wait)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             t;

    test_cq_init(&t, 1, 1);
    hca_write_err_cqe(&t, GDA_FT_MLX5_CQE_REQ_ERR, 4,
                      GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR, 0x22,
                      GDA_FT_MLX5_OPCODE_ATOMIC_FA);
    /* waiting for a later WQE: it will never complete, say so now */
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 10, &info),
                     GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(info.syndrome, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR);
    GDA_FT_ASSERT_EQ(info.vendor_synd, 0x22);
    GDA_FT_ASSERT_EQ(info.wqe_opcode, GDA_FT_MLX5_OPCODE_ATOMIC_FA);
    GDA_FT_ASSERT_EQ(info.wqe_counter, 4);
    GDA_FT_ASSERT_EQ(gda_ft_cq_poll_collapsed(&t.cq, 2, &info),
                     GDA_FT_DEV_ERROR);
    test_cq_cleanup(&t);
}


/* Send queue retirement from completions */

typedef struct {
    gda_ft_dev_sq_t   sq;
    uint8_t          *buf;
    volatile uint32_t dbrec[2];
    volatile uint64_t uar;
} test_sq_t;

static void test_sq_init(test_sq_t *t, uint32_t wqebb_cnt)
{
    t->buf = (uint8_t*)aligned_alloc(GDA_FT_MLX5_WQE_BB,
                                     wqebb_cnt * GDA_FT_MLX5_WQE_BB);
    GDA_FT_ASSERT(t->buf != NULL);
    gda_ft_dev_sq_init(&t->sq, t->buf, wqebb_cnt, 1, t->dbrec, &t->uar, -1,
                       NULL, 64);
}

GDA_FT_TEST(dev_cq, sq_retire_frees_unsignalled_wqes_before_signalled)
{
    test_sq_t t;
    uint16_t  idx = UINT16_MAX;   /* the post sets it */

    test_sq_init(&t, 8);
    gda_ft_sq_post_nop(&t.sq, 0, NULL);                                /* 0 */
    gda_ft_sq_post_rdma_write(&t.sq, 0x1000, 1, 8, 0x2000, 2, 0, NULL); /* 1 */
    gda_ft_sq_post_masked_cs64(&t.sq, 0x1000, 1, 0x2000, 2, 0, 0, 0, 0,
                               GDA_FT_WQE_SIGNALED, &idx);           /* 2-3 */
    gda_ft_sq_post_nop(&t.sq, GDA_FT_WQE_SIGNALED, NULL);              /* 4 */
    GDA_FT_ASSERT_EQ(idx, 2);
    GDA_FT_ASSERT_EQ(gda_ft_sq_free_wqebbs(&t.sq), 3);

    /* completion of the two-WQEBB WQE retires it and everything before */
    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 2), 4);
    GDA_FT_ASSERT_EQ(t.sq.ci, 4);
    GDA_FT_ASSERT_EQ(gda_ft_sq_free_wqebbs(&t.sq), 7);

    /* an old counter, or one past pi, changes nothing */
    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 2), 0);
    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 5), 0);
    GDA_FT_ASSERT_EQ(t.sq.ci, 4);

    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 4), 1);
    GDA_FT_ASSERT_EQ(t.sq.ci, 5);
    GDA_FT_ASSERT_EQ(gda_ft_sq_free_wqebbs(&t.sq), 8);
    free(t.buf);
}

GDA_FT_TEST(dev_cq, sq_retire_ignores_counter_inside_a_wqe)
{
    test_sq_t t;

    test_sq_init(&t, 8);
    gda_ft_sq_post_masked_cs64(&t.sq, 0x1000, 1, 0x2000, 2, 0, 0, 0, 0,
                               GDA_FT_WQE_SIGNALED, NULL);            /* 0-1 */
    /* 1 is the second WQEBB of WQE 0, not a WQE */
    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 1), 0);
    GDA_FT_ASSERT_EQ(t.sq.ci, 0);
    GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, 0), 2);
    free(t.buf);
}

GDA_FT_TEST(dev_cq, sq_retire_wraps_with_the_ring)
{
    gda_ft_dev_cqe_info_t info;
    test_cq_t             c;
    test_sq_t             t;
    uint16_t              idx;
    int                   i;

    test_sq_init(&t, 4);
    test_cq_init(&c, 2, 0);
    t.sq.pi = t.sq.ci = t.sq.db_pi = 65533;
    for (i = 0; i < 40; ++i) {
        /* two WQEs per round, the second signalled; 3 WQEBBs per round on
         * a 4-WQEBB ring, so rounds wrap the ring and the 16-bit index */
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_nop(&t.sq, 0, NULL), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, 0, 1, 0, 2, 0, 0,
                                                    0, 0, GDA_FT_WQE_SIGNALED,
                                                    &idx),
                         GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_sq_post_masked_cs64(&t.sq, 0, 1, 0, 2, 0, 0,
                                                    0, 0, 0, NULL),
                         GDA_FT_DEV_NO_RESOURCE);
        hca_write_cqe(&c, GDA_FT_MLX5_CQE_REQ, idx, 0, 0);
        GDA_FT_ASSERT_EQ(gda_ft_cq_poll_ring(&c.cq, &info), GDA_FT_DEV_OK);
        GDA_FT_ASSERT_EQ(gda_ft_sq_retire(&t.sq, info.wqe_counter), 3);
        GDA_FT_ASSERT_EQ(t.sq.ci, t.sq.pi);
    }
    test_cq_cleanup(&c);
    free(t.buf);
}

GDA_FT_TEST(dev_cq, rq_retire_consumes_receive_wqes)
{
    volatile uint32_t dbrec[2] = {0, 0};
    uint8_t           buf[4 * 16];
    gda_ft_dev_rq_t   rq;
    gda_ft_dev_sge_t  sge = {0x1000, 64, 5};
    int               i;

    gda_ft_dev_rq_init(&rq, buf, 4, 16, dbrec);
    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, &sge, 1, NULL), GDA_FT_DEV_OK);
    }
    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, &sge, 1, NULL),
                     GDA_FT_DEV_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(gda_ft_rq_retire(&rq, 1), 2);
    GDA_FT_ASSERT_EQ(gda_ft_rq_retire(&rq, 1), 0);
    GDA_FT_ASSERT_EQ(gda_ft_rq_retire(&rq, 4), 0);
    GDA_FT_ASSERT_EQ(gda_ft_rq_post(&rq, &sge, 1, NULL), GDA_FT_DEV_OK);
    GDA_FT_ASSERT_EQ(rq.pi, 5);
}

GDA_FT_TEST(dev_cq, status_names_and_result_packing)
{
    uint32_t r = GDA_FT_DEV_RESULT(GDA_FT_DEV_ERROR,
                                   GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR, 0x9a);

    GDA_FT_ASSERT_EQ(GDA_FT_DEV_RESULT_STATUS(r), GDA_FT_DEV_ERROR);
    GDA_FT_ASSERT_EQ(GDA_FT_DEV_RESULT_SYNDROME(r),
                     GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR);
    GDA_FT_ASSERT_EQ(GDA_FT_DEV_RESULT_VENDOR_SYND(r), 0x9a);
    GDA_FT_ASSERT(!strcmp(gda_ft_dev_status_str(GDA_FT_DEV_IN_DOUBT),
                          "in doubt"));
    GDA_FT_ASSERT(!strcmp(gda_ft_dev_status_str(GDA_FT_DEV_NO_PATH),
                          "no path"));
    GDA_FT_ASSERT(!strcmp(gda_ft_dev_status_str(GDA_FT_DEV_INPROGRESS),
                          "in progress"));
}
