/*
 * The mlx5 provider's failures (suite mlx5_provider, as
 * test_mlx5_provider.c): every failing call of the control path unwinds
 * without a leak and with an error logged, a failed command logs its
 * status and syndrome, and what a DEVX QP cannot do is refused.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mlx5_harness.h"
#include "gda_ft_test.h"

#include <ucs/debug/memtrack_int.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
