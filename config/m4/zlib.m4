#
# zlib: the CRC32 of RoCEv2's ICRC in the soft provider.
#
AC_DEFUN([GDA_FT_CHECK_ZLIB], [
    AC_CHECK_HEADER([zlib.h], [],
        [AC_MSG_ERROR([zlib.h not found: install zlib1g-dev])])
    AC_CHECK_LIB([z], [crc32], [:],
        [AC_MSG_ERROR([libz not found: install zlib1g-dev])])
])
