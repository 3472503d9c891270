/*
 * Compile check of the device datapath under nvcc: one kernel calls every
 * post, doorbell and poll function once, so that the headers in device/ are
 * compiled as CUDA C++ for the GPU. Built by `make build-tests` when CUDA is
 * available; never run.
 */
#include "gda_ft_cq.h"

extern "C" __global__ void
gda_ft_dev_compile_check(gda_ft_dev_sq_t *sq, gda_ft_dev_rq_t *rq,
                         gda_ft_dev_cq_t *cq, gda_ft_dev_cq_t *ccq,
                         uint64_t laddr, uint32_t lkey, uint64_t raddr,
                         uint32_t rkey, uint32_t *result)
{
    const unsigned        sig = GDA_FT_WQE_SIGNALED;
    uint8_t               payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gda_ft_dev_sge_t      sge;
    gda_ft_dev_cqe_info_t info;
    uint16_t              idx;
    uint32_t              acc = 0;

    acc |= gda_ft_sq_post_nop(sq, sig, &idx);
    acc |= gda_ft_sq_post_rdma_write(sq, laddr, lkey, 64, raddr, rkey, 0,
                                     &idx);
    acc |= gda_ft_sq_post_rdma_write_inline(sq, payload, sizeof(payload),
                                            raddr, rkey, 0, &idx);
    acc |= gda_ft_sq_post_rdma_write_imm(sq, laddr, lkey, 64, raddr, rkey, 7,
                                         0, &idx);
    acc |= gda_ft_sq_post_rdma_read(sq, laddr, lkey, 64, raddr, rkey,
                                    GDA_FT_WQE_FENCE, &idx);
    acc |= gda_ft_sq_post_send(sq, laddr, lkey, 64, 0, &idx);
    acc |= gda_ft_sq_post_send_inline(sq, payload, sizeof(payload), 0, &idx);
    acc |= gda_ft_sq_post_send_imm(sq, laddr, lkey, 64, 7, 0, &idx);
    acc |= gda_ft_sq_post_atomic_fa(sq, laddr, lkey, raddr, rkey, 1, 0, &idx);
    acc |= gda_ft_sq_post_atomic_cs(sq, laddr, lkey, raddr, rkey, 0, 1, 0,
                                    &idx);
    acc |= gda_ft_sq_post_masked_cs32(sq, laddr, lkey, raddr, rkey, 0, 1, ~0u,
                                      ~0u, 0, &idx);
    acc |= gda_ft_sq_post_masked_cs64(sq, laddr, lkey, raddr, rkey, 0, 1,
                                      ~0ull, ~0ull, 0, &idx);
    acc |= gda_ft_sq_post_masked_fa32(sq, laddr, lkey, raddr, rkey, 1, 0, 0,
                                      &idx);
    acc |= gda_ft_sq_post_masked_fa64(sq, laddr, lkey, raddr, rkey, 1, 0, sig,
                                      &idx);
    gda_ft_sq_ring_db(sq);

    sge.addr   = laddr;
    sge.length = 64;
    sge.lkey   = lkey;
    acc |= gda_ft_rq_post(rq, &sge, 1, &idx);
    gda_ft_rq_ring_db(rq);

    acc |= gda_ft_cq_poll_ring(cq, &info);
    acc |= info.syndrome;
    acc |= gda_ft_sq_retire(sq, info.wqe_counter);
    acc |= gda_ft_rq_retire(rq, info.wqe_counter);
    acc |= gda_ft_cq_poll_collapsed(ccq, idx, &info);
    if (ccq->cqe_cnt == 0) {
        gda_ft_cq_init_buf(ccq->buf, 1);
    }

    if (gda_ft_dev_status_str(GDA_FT_DEV_IN_DOUBT)[0] != 'i') {
        acc |= 1u << 31;
    }
    *result = acc | GDA_FT_DEV_RESULT(GDA_FT_DEV_ERROR, info.syndrome,
                                      info.vendor_synd);
}
