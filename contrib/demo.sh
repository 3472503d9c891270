#!/bin/bash
#
# The main job: DeepEP-style MoE dispatch and combine over gda_ft's device
# API (contrib/examples/moe), 2 ranks, with rank 0's primary port going
# down at iteration 20 and coming back at iteration 40. It posts from CUDA
# kernels where nvidia-smi finds a GPU (or with --gpu), else from CPU
# threads (or with --cpu). Every token's result is checked, and the
# timeline goes to moe_timeline.png. Builds nothing.
#
#   contrib/demo.sh [moe options]       (--help lists them; --compare adds
#                                        the same job with failover off)
#   contrib/demo.sh --hca [options]     the software HCA's own demo: RDMA
#                                        writes and atomics through a port
#                                        failure, without failover
#
# The binaries are taken from the build tree in GDA_FT_BUILD_DIR (default:
# build/ at the top of the source tree).
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}

if [ "${1:-}" = "--hca" ]; then
    shift
    demo=$build_dir/src/tools/gda_ft_soft_demo
    if [ ! -x "$demo" ]; then
        demo=$(command -v gda_ft_soft_demo || true)
    fi
    [ -x "$demo" ] || { echo "demo.sh: build gda_ft_soft_demo first" >&2;
                        exit 1; }
    exec "$demo" "$@"
fi

moe=$build_dir/contrib/examples/moe/moe
if [ ! -x "$moe" ]; then
    echo "demo.sh: no $moe: build it first (contrib/setup.sh, or make -C" \
         "$build_dir)" >&2
    exit 1
fi

place=--cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
then
    place=--gpu
fi
for arg in "$@"; do
    case $arg in
    --gpu|--cpu) place="" ;;
    esac
done

exec "$moe" $place "$@"
