#!/bin/bash
#
# Runs UCX's own googletest suites for UCT and MD on gda_ft: builds the
# gtest program of the installed UCX version's source tree (the one
# contrib/setup.sh fetches) with gda_ft added to the generic UCT and MD
# instantiation lists, and runs it with the plugin preloaded on two soft
# HCAs, one suite per process (contrib/ucx-gtest-run.py). The last line is
# "N passed, N failed, N skipped"; failures and skips are grouped by cause
# above it. docs/ucx-conformance.md has the results.
#
#   contrib/ucx-gtest.sh [--no-setup] [-f GTEST_FILTER]
#
# --no-setup: the plugin is already built (make check-ucx); otherwise
#             contrib/setup.sh builds it first.
# GDA_FT_BUILD_DIR    the plugin's build tree (default <source tree>/build)
# UCX_GTEST_DIR       where UCX is built and the results go
#                     (default $GDA_FT_BUILD_DIR/ucx-gtest)
# UCX_GTEST_PORT      UDP port of the soft HCAs (default 24791): one run at a
#                     time per port, or the second finds no device
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
setup=yes
filter='gda_ft/*'
while [ $# -gt 0 ]; do
    case $1 in
    --no-setup) setup=no ;;
    -f) filter=$2; shift ;;
    *) echo "ucx-gtest.sh: unknown option '$1'" >&2; exit 1 ;;
    esac
    shift
done

# setup.sh also builds the tests, libuct_gda_ft_trace.so among them
[ $setup = no ] || GDA_FT_BUILD_DIR=$build_dir "$top/contrib/setup.sh"
build_dir=$(cd "$build_dir" && pwd)
ucx_version=$(ucx_info -v | sed -n -e 's/^# Version \([0-9.]*\).*/\1/p' -e 's/^# Library version: \([0-9.]*\).*/\1/p')
ucx_src=$top/third_party/ucx-$ucx_version
work=${UCX_GTEST_DIR:-$build_dir/ucx-gtest}
ucx=$work/ucx-$ucx_version
jobs=$(nproc)
[ "$jobs" -le 2 ] || jobs=$((jobs - 1))
mkdir -p "$work"

t0=$(date +%s)
if [ ! -f "$ucx/Makefile" ]; then
    echo "ucx-gtest: configuring UCX $ucx_version in $ucx"
    rm -rf "$ucx"
    cp -a "$ucx_src" "$ucx"
    # gda_ft joins the transports every generic UCT test is instantiated
    # for, and the MDs of test_md
    sed -i 's/^\(    knem\)$/\1,                    \\\n    gda_ft/' \
        "$ucx/test/gtest/uct/uct_test.h"
    sed -i 's/^\(  *rdmacm\) \\$/\1, \\\n                   gda_ft \\/' \
        "$ucx/test/gtest/uct/test_md.cc"
    grep -q '^    gda_ft$' "$ucx/test/gtest/uct/uct_test.h" &&
    grep -q 'gda_ft \\$' "$ucx/test/gtest/uct/test_md.cc" ||
        { echo "ucx-gtest: cannot add gda_ft to the test lists" >&2; exit 1; }
    # Debian's ABI-relevant options (ucx_info -b), so that the plugin,
    # built against Debian's UCX, runs on these libraries; no IB or GPU
    # transport, which the gda_ft tests do not use. Logging stays on
    # (Debian has --disable-logging): the transfer tests then check that
    # the transport traces its data, as they do in UCX's own CI, and the
    # plugin preloaded is the one with tracing compiled in.
    (cd "$ucx" && ./autogen.sh && ./configure --enable-gtest --enable-mt \
        --enable-cma --disable-doxygen-doc --disable-examples \
        --without-verbs --without-rdmacm --without-knem --without-xpmem \
        --without-cuda --without-rocm --without-java --without-go \
        --without-ugni --without-fuse3) >"$work/configure.log" 2>&1 ||
        { tail -20 "$work/configure.log"; rm -f "$ucx/Makefile"; exit 1; }
fi

# Only what the UCT tests link: UCX's libraries, googletest, and the common
# and UCT test sources (not UCS's, UCM's and UCP's: the gtest program's
# object list is replaced)
echo "ucx-gtest: building UCX's libraries and UCT tests (make -j$jobs)"
gtest_objs=$(cd "$ucx/test/gtest" &&
             for f in common/*.cc uct/*.cc uct/v2/*.cc; do
                 echo "$(dirname "$f")/gtest-$(basename "$f" .cc).o"
             done)
(
    for dir in src/ucm src/ucs src/uct src/ucp src/tools/perf/lib \
               test/gtest/common/googletest; do
        # (set -e does not apply left of ||)
        nice make -j"$jobs" -C "$ucx/$dir" || exit 1
    done
    # Not optimized (configure's "-g -O2" replaced): with inlining, gcc 12
    # refuses an always_inline UCX function that test_tag.cc calls
    # through a pointer, and warns where UCX's -Werror stops the build
    nice make -j"$jobs" -C "$ucx/test/gtest" gtest \
        am_gtest_OBJECTS="$(echo $gtest_objs)" CXXFLAGS="-g -Wno-error"
) >"$work/make.log" 2>&1 ||
    { grep -B2 -A8 -m5 'error' "$work/make.log"; exit 1; }
t1=$(date +%s)
echo "ucx-gtest: built in $((t1 - t0)) s"

port=${UCX_GTEST_PORT:-24791}
export UCX_GDA_FT_SOFT_DEVICES="soft0=127.0.0.1:$port,soft1=127.0.0.2:$port"
export UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_LOG_PRINT_ENABLE=y
export UCX_WARN_UNUSED_ENV_VARS=n
export GDA_FT_BUILD_DIR=$build_dir GDA_FT_LIB=libuct_gda_ft_trace.so
rm -rf "$work/results"
status=0
python3 "$top/contrib/ucx-gtest-run.py" -f "$filter" "$work/results" \
    "$top/contrib/gda_ft-run.sh" "$ucx/test/gtest/gtest" || status=$?
echo "ucx-gtest: ran in $(($(date +%s) - t1)) s; logs in $work/results" >&2
exit $status
