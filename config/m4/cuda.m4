#
# CUDA is optional: with it, nvcc builds GPU tests and the soft HCA reaches
# CUDA memory through the runtime (loaded at run time, so that binaries work
# on machines without a GPU driver).
#
AC_DEFUN([GDA_FT_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit (default: /usr/local/cuda if present)])],
        [], [with_cuda=guess])
    cuda_happy=no
    AS_IF([test "x$with_cuda" = xguess], [with_cuda=/usr/local/cuda])
    AS_IF([test "x$with_cuda" != xno],
          [AC_PATH_PROG([NVCC], [nvcc], [], [$with_cuda/bin$PATH_SEPARATOR$PATH])
           AS_IF([test -n "$NVCC" && test -f "$with_cuda/include/cuda_runtime.h"],
                 [cuda_happy=yes
                  CUDA_CPPFLAGS="-I$with_cuda/include"
                  CUDA_LIBS="-L$with_cuda/lib64 -lcudart"
                  AC_DEFINE([HAVE_CUDA], [1], [CUDA toolkit available])])])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LIBS])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$cuda_happy" = xyes])
])
