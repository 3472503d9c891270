#!/bin/sh
#
# Runs a command with the gda_ft UCX transport plugin preloaded.
#
# UCX 1.13 loads only the modules it was built with; libuct_gda_ft.so
# registers the "gda_ft" component and transport from a constructor, so any
# UCX program (ucx_info, ucx_perftest, mpirun ..., NVSHMEM programs) sees it
# once the library is preloaded. Select it with UCX_TLS=gda_ft (plus e.g. tcp
# for UCP wireup); software HCAs are declared with UCX_GDA_FT_SOFT_DEVICES.
#
#   contrib/gda_ft-run.sh ucx_info -d -t gda_ft
#   UCX_GDA_FT_SOFT_DEVICES=soft0=127.0.0.1,soft1=127.0.0.2 \
#       contrib/gda_ft-run.sh ucx_perftest -t put_bw -x gda_ft -d soft0:1
#
# GDA_FT_BUILD_DIR: where libuct_gda_ft.so is: a libtool .libs directory, a
# build tree (its .libs is used) or an install prefix's lib directory.
# Default: build/.libs of the source tree holding this script.
# GDA_FT_LIB: the library's file name (default libuct_gda_ft.so);
# libuct_gda_ft_trace.so, built with the tests, is the plugin with UCX's
# data tracing compiled in, for a UCX built with logging (its own gtest).
#
set -e

usage() {
    echo "usage: $0 COMMAND [ARGS...]" >&2
    echo "  runs COMMAND with LD_PRELOAD of libuct_gda_ft.so found in" >&2
    echo "  GDA_FT_BUILD_DIR (default: <source tree>/build/.libs)" >&2
}

if [ $# -eq 0 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    usage
    [ $# -eq 0 ] && exit 2
    exit 0
fi

script_dir=$(cd "$(dirname "$0")" && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$script_dir/../build/.libs}

lib=""
name=${GDA_FT_LIB:-libuct_gda_ft.so}
for candidate in "$build_dir/$name" "$build_dir/.libs/$name"; do
    if [ -f "$candidate" ]; then
        lib=$candidate
        break
    fi
done

if [ -z "$lib" ]; then
    echo "$0: $name not found in $build_dir" \
         "(build it with 'make', or set GDA_FT_BUILD_DIR)" >&2
    exit 127
fi

lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
# A sanitizer build of the plugin needs its runtime first in the library
# list of the (uninstrumented) program, whose own leaks are not ours
asan=$(ldd "$lib" 2>/dev/null | awk '/libasan\.so/ {print $3; exit}')
if [ -n "$asan" ]; then
    case ":${LD_PRELOAD:-}:" in
    *"$asan"*) ;;
    *) LD_PRELOAD="$asan${LD_PRELOAD:+:$LD_PRELOAD}" ;;
    esac
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fi
# after the caller's preloads: a sanitizer runtime must stay first
LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$lib"
export LD_PRELOAD
exec "$@"
