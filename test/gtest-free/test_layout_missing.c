/*
 * Stands in for test_layout.c in a build configured without rdma-core's
 * <infiniband/mlx5dv.h>: the check of the PRM layouts did not run, and
 * says why (strict mode fails it: setup installs libibverbs-dev).
 */
#include "gda_ft_test.h"

GDA_FT_TEST(mlx5_layout, checked_against_rdma_core)
{
    GDA_FT_SKIP("configured without rdma-core's infiniband/mlx5dv.h "
                "(libibverbs-dev): the mlx5 layouts were not checked");
}
