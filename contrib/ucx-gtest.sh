#!/bin/bash
#
# Runs UCX's own googletest suites for UCT and MD, or for UCP, on gda_ft:
# builds the gtest program of the installed UCX version's source tree (the
# one contrib/setup.sh fetches) with gda_ft added to the generic UCT, MD and
# UCP instantiation lists, and runs it with the plugin preloaded on two soft
# HCAs, one suite per process (contrib/ucx-gtest-run.py). The last line is
# "N passed, N failed, N skipped"; failures and skips are grouped by cause
# above it. docs/ucx-conformance.md has the results.
#
#   contrib/ucx-gtest.sh [--no-setup] [--ucp] [-f GTEST_FILTER]
#
# --no-setup: the plugin is already built (make check-ucx); otherwise
#             contrib/setup.sh builds it first.
# --ucp:      the UCP suites (UCX_TLS=gda_ft) instead of the UCT and MD ones
# -f:         a gtest filter instead of all of gda_ft's tests of the kind
# GDA_FT_BUILD_DIR    the plugin's build tree (default <source tree>/build)
# UCX_GTEST_DIR       where UCX is built and the results go
#                     (default $GDA_FT_BUILD_DIR/ucx-gtest)
# UCX_GTEST_PORT      UDP port of the soft HCAs (default 24791): one run at a
#                     time per port, or the second finds no device
# UCX_GTEST_UCP_TESTS with --ucp: the UCP test files built and run, by name
#                     (test_ucp_NAME.cc: "wireup am", ...; default: all)
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
setup=yes
ucp=no
filter=
while [ $# -gt 0 ]; do
    case $1 in
    --no-setup) setup=no ;;
    --ucp) ucp=yes ;;
    -f) filter=$2; shift ;;
    *) echo "ucx-gtest.sh: unknown option '$1'" >&2; exit 1 ;;
    esac
    shift
done
ucp_tests=${UCX_GTEST_UCP_TESTS:-}
if [ -z "$filter" ] && [ $ucp = no ]; then
    filter='gda_ft/*-gda_ft/test_ucp*'
elif [ -z "$filter" ] && [ -z "$ucp_tests" ]; then
    filter='gda_ft/test_ucp*'
elif [ -z "$filter" ]; then
    filter=$(for name in $ucp_tests; do
                 printf 'gda_ft/test_ucp_%s*:' "$name"
             done)
    filter=${filter%:}
fi

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
# gda_ft joins the transports of every generic UCP test, GPU-aware or not
# (a tree configured before the UCP suites ran here gets it too)
ucp_test_h=$ucx/test/gtest/ucp/ucp_test.h
if ! grep -q '(_test_case, gda_ft,' "$ucp_test_h"; then
    sed -i -e 's/^\(    UCP_INSTANTIATE_TEST_CASE_TLS(_test_case, tcp, *"tcp")\)$/\1 \\\n    UCP_INSTANTIATE_TEST_CASE_TLS(_test_case, gda_ft, "gda_ft")/' \
        -e 's/^\( *\)"tcp")$/\1"tcp") \\\n    UCP_INSTANTIATE_TEST_CASE_TLS_GPU_AWARE(_test_case, gda_ft, \\\n\1"gda_ft")/' \
        "$ucp_test_h"
    [ "$(grep -c '(_test_case, gda_ft,' "$ucp_test_h")" = 2 ] ||
        { echo "ucx-gtest: cannot add gda_ft to the UCP test lists" >&2
          exit 1; }
fi

# Only what the tests link: UCX's libraries, googletest, and the common
# and UCT test sources, with --ucp UCP's base and the UCP test files asked
# for (not UCS's and UCM's: the gtest program's object list is replaced)
test_srcs="common/*.cc uct/*.cc uct/v2/*.cc"
if [ $ucp = yes ] && [ -z "$ucp_tests" ]; then
    test_srcs="$test_srcs ucp/*.cc"
elif [ $ucp = yes ]; then
    test_srcs="$test_srcs ucp/ucp_test.cc ucp/ucp_datatype.cc"
    test_srcs="$test_srcs ucp/test_ucp_memheap.cc"
    for name in $ucp_tests; do
        [ -f "$ucx/test/gtest/ucp/test_ucp_$name.cc" ] ||
            { echo "ucx-gtest: no UCP test file test_ucp_$name.cc" >&2
              exit 1; }
        test_srcs="$test_srcs ucp/test_ucp_$name.cc"
    done
fi
echo "ucx-gtest: building UCX's libraries and tests (make -j$jobs)"
gtest_objs=$(cd "$ucx/test/gtest" &&
             for f in $test_srcs; do
                 echo "$(dirname "$f")/gtest-$(basename "$f" .cc).o"
             done | sort -u)
# make relinks by time, not by the list: another list is another program
if [ "$(cat "$work/gtest-objs" 2>/dev/null)" != "$gtest_objs" ]; then
    rm -f "$ucx/test/gtest/gtest"
    echo "$gtest_objs" >"$work/gtest-objs"
fi
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
