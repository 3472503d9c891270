#
# hwloc: the topology from which the backup HCA of each primary is chosen.
#
AC_DEFUN([GDA_FT_CHECK_HWLOC], [
    PKG_CHECK_MODULES([HWLOC], [hwloc], [hwloc_happy=yes],
        [AC_MSG_ERROR([hwloc not found: install libhwloc-dev])])
])
