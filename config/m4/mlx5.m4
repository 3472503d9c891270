#
# The mlx5 HCA provider (src/hca/mlx5): ConnectX NICs through rdma-core's
# DEVX API. It needs rdma-core's mlx5dv (header and library, Debian 12's
# libibverbs-dev); the PRM layouts it writes are its own
# (src/hca/mlx5/gda_ft_mlx5_ifc.h).
#
#   --with-mlx5=auto (default): built when all of it is there, else left
#                    out with a notice
#   --with-mlx5=yes: configure fails when a piece is missing
#   --with-mlx5=no:  left out
#
AC_DEFUN([GDA_FT_CHECK_MLX5], [
    AC_ARG_WITH([mlx5],
        [AS_HELP_STRING([--with-mlx5@<:@=auto|yes|no@:>@],
                        [build the mlx5 (ConnectX, DEVX) HCA provider (default: auto)])],
        [], [with_mlx5=auto])
    mlx5_happy=no
    mlx5_missing=""
    MLX5_CPPFLAGS=""
    MLX5_LIBS=""
    AS_IF([test "x$with_mlx5" != xno], [
        AS_IF([test "x$verbs_happy" != xyes],
              [mlx5_missing="rdma-core's infiniband/mlx5dv.h (libibverbs-dev)"])

        AS_IF([test -z "$mlx5_missing"], [
            AC_CHECK_LIB([mlx5], [mlx5dv_devx_obj_create], [:],
                         [mlx5_missing="libmlx5 with DEVX (rdma-core)"])])
        AS_IF([test -z "$mlx5_missing"], [
            AC_CHECK_LIB([ibverbs], [ibv_reg_dmabuf_mr], [:],
                         [mlx5_missing="libibverbs with ibv_reg_dmabuf_mr (rdma-core >= 34)"])])

        AS_IF([test -z "$mlx5_missing"], [
            mlx5_happy=yes
            MLX5_LIBS="-lmlx5 -libverbs"
            AC_CHECK_DECLS([mlx5dv_devx_umem_reg_ex,
                            MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED], [], [],
                           [[#include <infiniband/mlx5dv.h>]])
        ], [test "x$with_mlx5" = xyes], [
            AC_MSG_ERROR([--with-mlx5=yes: missing $mlx5_missing])
        ], [
            AC_MSG_NOTICE([the mlx5 HCA provider is left out: missing $mlx5_missing])
        ])
    ])

    # The kernel's include/linux/mlx5/mlx5_ifc.h (contrib/setup.sh takes it
    # from Debian's linux-headers-*-common): a second source of the same
    # layouts, which test_mlx5_prm_kernel.c checks ours against
    AC_ARG_WITH([kernel-mlx5-ifc],
        [AS_HELP_STRING([--with-kernel-mlx5-ifc=DIR],
                        [directory of the kernel's mlx5_ifc.h for the mlx5 layout cross-check (default: the newest third_party/linux-mlx5-ifc-*)])],
        [], [with_kernel_mlx5_ifc=$(ls -d "$(cd "$srcdir" && pwd)"/third_party/linux-mlx5-ifc-* 2>/dev/null | sort -V | tail -n 1)])
    KERNEL_MLX5_IFC_CPPFLAGS=""
    AS_IF([test "x$mlx5_happy" = xyes && test -n "$with_kernel_mlx5_ifc"], [
        AC_MSG_CHECKING([for the kernel's mlx5_ifc.h in $with_kernel_mlx5_ifc])
        save_CPPFLAGS="$CPPFLAGS"
        CPPFLAGS="$CPPFLAGS -I$with_kernel_mlx5_ifc"
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
                #include <infiniband/mlx5dv.h>
                typedef uint8_t u8;
                #define BIT(_n) (1UL << (_n))
                #define BIT_ULL(_n) (1ULL << (_n))
                #include <mlx5_ifc.h>
            ]], [[
                return DEVX_ST_SZ_BYTES(create_cq_in) +
                       __devx_bit_off(cqc, cc) +
                       DEVX_ST_SZ_BYTES(qp_2err_in);
            ]])],
            [AC_MSG_RESULT([yes])
             KERNEL_MLX5_IFC_CPPFLAGS="-I$with_kernel_mlx5_ifc"
             AC_DEFINE([HAVE_KERNEL_MLX5_IFC], [1],
                       [the kernel's mlx5_ifc.h for the layout cross-check])],
            [AC_MSG_RESULT([no])])
        CPPFLAGS="$save_CPPFLAGS"])
    AS_IF([test "x$mlx5_happy" = xyes && test -z "$KERNEL_MLX5_IFC_CPPFLAGS"],
          [AC_MSG_NOTICE([the kernel's mlx5_ifc.h not found: the mlx5 layout cross-check will skip])])
    AC_SUBST([KERNEL_MLX5_IFC_CPPFLAGS])
    AC_SUBST([MLX5_CPPFLAGS])
    AC_SUBST([MLX5_LIBS])
    AM_CONDITIONAL([HAVE_MLX5], [test "x$mlx5_happy" = xyes])
])
