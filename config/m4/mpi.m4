#
# MPI is optional: with an mpicc, the MPI failover test (test/mpi/) is built
# with mpicc's own compile and link flags, and contrib/mpi-failover.sh runs
# it with mpirun. Open MPI's mpicc answers --showme:compile/--showme:link,
# MPICH's -compile_info/-link_info (whose first word, the compiler, is
# dropped).
#
AC_DEFUN([GDA_FT_CHECK_MPI], [
    AC_ARG_WITH([mpi],
        [AS_HELP_STRING([--with-mpi=DIR],
                        [MPI whose DIR/bin has mpicc and mpirun (default: from PATH; no: do not build the MPI test)])],
        [], [with_mpi=guess])
    mpi_happy=no
    MPI_CFLAGS=""
    MPI_LIBS=""
    AS_IF([test "x$with_mpi" != xno],
          [AS_CASE(["$with_mpi"],
                   [guess|yes], [mpi_path="$PATH"],
                   [mpi_path="$with_mpi/bin$PATH_SEPARATOR$PATH"])
           AC_PATH_PROG([MPICC], [mpicc], [], [$mpi_path])
           AC_PATH_PROG([MPIRUN], [mpirun], [], [$mpi_path])])

    AS_IF([test -n "$MPICC"],
          [AC_MSG_CHECKING([for the compile and link flags of $MPICC])
           AS_IF([MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` &&
                  MPI_LIBS=`$MPICC --showme:link 2>/dev/null`],
                 [],
                 [MPI_CFLAGS=`$MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
                  MPI_LIBS=`$MPICC -link_info 2>/dev/null | cut -d' ' -f2-`])
           AC_MSG_RESULT([$MPI_CFLAGS | $MPI_LIBS])

           AC_MSG_CHECKING([whether MPI programs link with them])
           gda_ft_mpi_save_CPPFLAGS="$CPPFLAGS"
           gda_ft_mpi_save_LIBS="$LIBS"
           CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
           LIBS="$MPI_LIBS $LIBS"
           AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                                           [[MPI_Win win; (void)win;
                                             MPI_Init(0, 0);
                                             MPI_Finalize();]])],
                          [mpi_happy=yes], [mpi_happy=no])
           CPPFLAGS="$gda_ft_mpi_save_CPPFLAGS"
           LIBS="$gda_ft_mpi_save_LIBS"
           AC_MSG_RESULT([$mpi_happy])])

    AS_IF([test "x$with_mpi" != xguess && test "x$with_mpi" != xno &&
           test "x$mpi_happy" != xyes],
          [AC_MSG_ERROR([--with-mpi=$with_mpi given, but no working mpicc was found])])
    AS_IF([test "x$mpi_happy" != xyes],
          [AC_MSG_NOTICE([no MPI: the MPI failover test is not built])])

    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AC_SUBST([MPIRUN])
    AM_CONDITIONAL([HAVE_MPI], [test "x$mpi_happy" = xyes])
])
