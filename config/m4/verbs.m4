#
# rdma-core's <infiniband/mlx5dv.h>: only the test of the PRM layouts in
# device/gda_ft_mlx5_prm.h against rdma-core's needs it (the soft provider
# needs nothing of rdma-core). Without it that test is left out with a
# notice, and a stand-in test says so (a skip that strict mode fails, since
# setup installs libibverbs-dev).
#
AC_DEFUN([GDA_FT_CHECK_VERBS], [
    AC_CHECK_HEADER([infiniband/mlx5dv.h], [verbs_happy=yes],
                    [verbs_happy=no])
    AS_IF([test "x$verbs_happy" != xyes],
          [AC_MSG_NOTICE([rdma-core's mlx5dv.h not found (libibverbs-dev): the mlx5 layout test is left out])])
    AM_CONDITIONAL([HAVE_MLX5DV], [test "x$verbs_happy" = xyes])
])
