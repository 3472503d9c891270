#
# Finds the installed UCX and the UCX source tree of exactly the same version.
# The plugin needs UCX's internal headers (uct/base, ucs internals), which no
# binary package ships; struct layouts must match the running library, so the
# source version must equal the library version and config.h is regenerated
# from the library itself (ucx_info -b).
#
AC_DEFUN([GDA_FT_CHECK_UCX], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx=PREFIX], [installed UCX prefix (default: /usr)])],
        [], [with_ucx=/usr])
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
                        [UCX source tree of the installed version
                         (default: third_party/ucx-<version>)])],
        [], [with_ucx_src=])

    AC_PATH_PROG([UCX_INFO], [ucx_info], [], [$with_ucx/bin$PATH_SEPARATOR$PATH])
    AS_IF([test -z "$UCX_INFO"],
          [AC_MSG_ERROR([ucx_info not found: install ucx-utils and libucx-dev (contrib/setup.sh does), or pass --with-ucx=PREFIX])])

    # "# Version 1.13.1" up to 1.15, "# Library version: 1.16.0" since
    ucx_lib_version=`$UCX_INFO -v | sed -n -e 's/^# Version \(@<:@0-9.@:>@*\).*/\1/p' -e 's/^# Library version: \(@<:@0-9.@:>@*\).*/\1/p'`
    AS_IF([test -z "$ucx_lib_version"],
          [AC_MSG_ERROR([cannot read the UCX version from '$UCX_INFO -v'])])
    AC_MSG_NOTICE([installed UCX version: $ucx_lib_version])

    UCX_LIBDIR=""
    for d in "$with_ucx/lib/x86_64-linux-gnu" "$with_ucx/lib64" "$with_ucx/lib"; do
        AS_IF([test -z "$UCX_LIBDIR" && test -e "$d/libucs.so"], [UCX_LIBDIR="$d"])
    done
    AS_IF([test -z "$UCX_LIBDIR"],
          [AC_MSG_ERROR([libucs.so not found under $with_ucx: install libucx-dev])])
    AS_IF([test ! -f "$with_ucx/include/uct/api/uct.h"],
          [AC_MSG_ERROR([$with_ucx/include/uct/api/uct.h not found: install libucx-dev])])

    AS_IF([test -z "$with_ucx_src"],
          [with_ucx_src="$ac_pwd/third_party/ucx-$ucx_lib_version"])
    AC_MSG_CHECKING([for the UCX $ucx_lib_version source in $with_ucx_src])
    AS_IF([test ! -f "$with_ucx_src/src/uct/base/uct_iface.h"],
          [AC_MSG_RESULT([no])
           AC_MSG_ERROR([UCX source not found in $with_ucx_src: run contrib/setup.sh (fetches Debian's source package) or pass --with-ucx-src=DIR])])
    ucx_src_version=`sed -n 's/^de@&t@fine(.ucx_ver_\(major\|minor\|patch\)., \(@<:@0-9@:>@*\)).*/\2/p' "$with_ucx_src/configure.ac" | paste -sd. -`
    AC_MSG_RESULT([yes, version $ucx_src_version])
    AS_CASE(["$ucx_lib_version"],
            ["$ucx_src_version"|"$ucx_src_version".*], [],
            [AC_MSG_ERROR([UCX source version $ucx_src_version differs from the installed library $ucx_lib_version: struct layouts would not match])])

    # config.h of the installed library, so that internal headers see the
    # same feature macros (ENABLE_MT, ENABLE_STATS, ...) as libucs/libuct.
    mkdir -p ucx_config
    $UCX_INFO -b > ucx_config/config.h || AC_MSG_ERROR([ucx_info -b failed])

    UCX_SRCDIR="$with_ucx_src"
    UCX_CPPFLAGS="-I\$(abs_top_builddir)/ucx_config -I\$(abs_top_srcdir)/src/compat -I$with_ucx_src/src -I$with_ucx/include"
    # UCX's headers include valgrind/memcheck.h unless NVALGRIND is set,
    # which UCX's own config.h does where valgrind was missing; the files
    # that use the project's config.h instead need it set the same way
    AC_CHECK_HEADER([valgrind/memcheck.h], [],
                    [UCX_CPPFLAGS="$UCX_CPPFLAGS -DNVALGRIND"])
    UCX_LIBS="-L$UCX_LIBDIR -luct -lucs"
    UCP_LIBS="-L$UCX_LIBDIR -lucp -luct -lucs"
    AC_SUBST([UCX_SRCDIR])
    AC_SUBST([UCX_LIBDIR])
    AC_SUBST([UCX_CPPFLAGS])
    AC_SUBST([UCX_LIBS])
    AC_SUBST([UCP_LIBS])
    AC_SUBST([UCX_INFO])
    UCX_BINDIR=`dirname "$UCX_INFO"`
    AC_SUBST([UCX_BINDIR])
    AC_PATH_PROG([UCX_PERFTEST], [ucx_perftest], [], [$with_ucx/bin$PATH_SEPARATOR$PATH])
])
