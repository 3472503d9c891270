/*
 * One mlx5 provider test's world over the recording backend (see
 * mlx5_harness.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mlx5_harness.h"
#include "gda_ft_test.h"

#include <ucs/debug/log_def.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int  test_mlx5_errors;
char test_mlx5_last_error[512];

ucs_log_func_rc_t
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

void *test_mlx5_pages(size_t size)
{
    void *ptr;

    GDA_FT_ASSERT(posix_memalign(&ptr, sysconf(_SC_PAGESIZE), size) == 0);
    memset(ptr, 0, size);
    return ptr;
}

char *test_mlx5_device_set(const char *text, char *path)
{
    char *prev = getenv("UCX_GDA_FT_MLX5_EMU_DEVICE");
    FILE *file;
    int fd;

    prev = (prev != NULL) ? strdup(prev) : NULL;
    fd   = mkstemp(path);
    GDA_FT_ASSERT(fd >= 0);
    file = fdopen(fd, "w");
    GDA_FT_ASSERT(file != NULL);
    fputs(text, file);
    fclose(file);
    setenv("UCX_GDA_FT_MLX5_EMU_DEVICE", path, 1);
    return prev;
}

void test_mlx5_device_restore(char *prev, const char *path)
{
    if (prev != NULL) {
        setenv("UCX_GDA_FT_MLX5_EMU_DEVICE", prev, 1);
    } else {
        unsetenv("UCX_GDA_FT_MLX5_EMU_DEVICE");
    }
    free(prev);
    unlink(path);
}

void test_mlx5_setup(test_mlx5_t *t)
{
    mlx5_rec_init();
    ucs_log_push_handler(test_mlx5_log);
    memset(t, 0, sizeof(*t));
    t->cq_buf = test_mlx5_pages(CQ_CNT * 64);
    t->wq_buf = test_mlx5_pages((RQ_CNT + SQ_CNT) * 64);
    t->dbrec  = test_mlx5_pages(4096);
}

void test_mlx5_open(test_mlx5_t *t)
{
    gda_ft_hca_dev_info_t info;

    memset(&info, 0, sizeof(info));
    strcpy(info.name, "mlx5_0");
    info.provider = &gda_ft_mlx5_provider;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.dev_open(&info, &t->dev));
    GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(t->dev, &t->pd));
}

void test_mlx5_free_rings(test_mlx5_t *t)
{
    free(t->cq_buf);
    free(t->wq_buf);
    free(t->dbrec);
}

void test_mlx5_close(test_mlx5_t *t)
{
    gda_ft_hca_pd_free(t->pd);
    gda_ft_hca_close(t->dev);
    test_mlx5_free_rings(t);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

gda_ft_hca_cq_t *test_mlx5_cq(test_mlx5_t *t, unsigned cnt,
                              unsigned flags)
{
    gda_ft_hca_cq_attr_t attr = {t->cq_buf, cnt, flags, GDA_FT_HCA_MEM_HOST};
    gda_ft_hca_cq_t *cq;

    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(t->dev, &attr, &cq));
    return cq;
}

void test_mlx5_qp_init(test_mlx5_t *t, gda_ft_hca_cq_t *scq,
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

void test_mlx5_qp_attr(gda_ft_hca_qp_attr_t *attr)
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
