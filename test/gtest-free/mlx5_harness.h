/*
 * One mlx5 provider test's world over the recording backend
 * (mlx5_recorder.h): a device, a PD and page-aligned rings; the errors the
 * provider logs, counted and the last one kept; and the accessors of the
 * recorded commands' fields.
 */
#ifndef GDA_FT_MLX5_HARNESS_H_
#define GDA_FT_MLX5_HARNESS_H_

#include "mlx5_recorder.h"
#include "gda_ft_mlx5_int.h"
#include "gda_ft_mlx5_prm.h"

#include <ucs/debug/log_def.h>
#include <stdarg.h>

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

/* Errors the provider logged (test_mlx5_log()), and the last one */
extern int  test_mlx5_errors;
extern char test_mlx5_last_error[512];

/* A log handler that counts errors and keeps the last one, and stops
 * every message */
ucs_log_func_rc_t
test_mlx5_log(const char *file, unsigned line, const char *function,
              ucs_log_level_t level, const ucs_log_component_config_t *comp,
              const char *message, va_list ap);

/* One test's world: the recorder, a device, a PD and page-aligned rings */
typedef struct test_mlx5 {
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_pd_t  *pd;
    void             *cq_buf;
    void             *wq_buf;   /* RQ_CNT * 64 of RQ, then SQ_CNT * 64 */
    uint32_t         *dbrec;
} test_mlx5_t;

enum { RQ_CNT = 16, SQ_CNT = 64, CQ_CNT = 256 };


/* size bytes of zeroed, page-aligned memory (free() it) */
void *test_mlx5_pages(size_t size);

/* Makes a file of the text from the mkstemp() template path, and names
 * it in UCX_GDA_FT_MLX5_EMU_DEVICE; returns the setting it had (NULL:
 * none), for test_mlx5_device_restore() */
char *test_mlx5_device_set(const char *text, char *path);

/* Puts UCX_GDA_FT_MLX5_EMU_DEVICE back as it was, frees prev, removes the
 * file */
void test_mlx5_device_restore(char *prev, const char *path);

/* A fresh recorder, the log handler, and rings */
void test_mlx5_setup(test_mlx5_t *t);

/* Opens mlx5_0 and allocates a PD */
void test_mlx5_open(test_mlx5_t *t);
void test_mlx5_free_rings(test_mlx5_t *t);

/* Closes what test_mlx5_open() opened, frees the rings; no leak */
void test_mlx5_close(test_mlx5_t *t);

/* A CQ of cnt entries on the world's CQ buffer */
gda_ft_hca_cq_t *test_mlx5_cq(test_mlx5_t *t, unsigned cnt,
                              unsigned flags);

/* QP creation attributes on the world's rings (a receive queue when rcq
 * is given), port 1 */
void test_mlx5_qp_init(test_mlx5_t *t, gda_ft_hca_cq_t *scq,
                       gda_ft_hca_cq_t *rcq,
                       gda_ft_hca_qp_init_attr_t *init);

/* Connection attributes with a distinct value in every field */
void test_mlx5_qp_attr(gda_ft_hca_qp_attr_t *attr);

#endif
