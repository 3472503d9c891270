/*
 * The mlx5 provider's memory (suite mlx5_provider, as
 * test_mlx5_provider.c): memory regions on host and CUDA memory, rings in
 * CUDA memory on a dmabuf umem, and the doorbell a GPU posts through.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mlx5_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
