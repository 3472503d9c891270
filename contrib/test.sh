#!/bin/bash
#
# Sets everything up (packages, UCX source, build) and runs the test suite.
# The last line printed is "N passed, N failed, N skipped"; the exit status
# is non-zero when a test failed.
#
#   contrib/test.sh [--asan|--tsan] [runner options, e.g. -f 'soft_*']
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
setup_args=""
if [ "${1:-}" = "--asan" ]; then
    setup_args="--asan"
    shift
    build_dir=${GDA_FT_BUILD_DIR:-$top/build-asan}
    # sanitizers slow everything down: scale the per-test timeouts
    export GDA_FT_TEST_TIMEOUT_SCALE=${GDA_FT_TEST_TIMEOUT_SCALE:-4}
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
elif [ "${1:-}" = "--tsan" ]; then
    setup_args="--tsan"
    shift
    build_dir=${GDA_FT_BUILD_DIR:-$top/build-tsan}
    export GDA_FT_TEST_TIMEOUT_SCALE=${GDA_FT_TEST_TIMEOUT_SCALE:-4}
    # UCX's own libraries are not instrumented: what they do inside is not
    # reported, what the project's code does with their memory is
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:report_mutex_bugs=0:suppressions=$top/contrib/tsan.supp}
    # UCX's memory hooks intercept madvise() at thread exit and crash
    # under ThreadSanitizer; the tests need no memory events
    export UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
else
    build_dir=${GDA_FT_BUILD_DIR:-$top/build}
fi

GDA_FT_BUILD_DIR=$build_dir "$top/contrib/setup.sh" $setup_args
exec "$build_dir/test/gtest-free/gda_ft_tests" "$@"
