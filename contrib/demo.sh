#!/bin/bash
#
# Runs the two-process soft HCA demo: a client streams checksummed RDMA
# writes and fetch-add atomics to a server, the server's port goes down in
# the middle, the client's QP fails with TRANSPORT_RETRY_EXC_ERR and the
# server verifies what arrived. Builds nothing.
#
#   contrib/demo.sh [gda_ft_soft_demo options]     (--help lists them)
#
# The binary is taken from the build tree in GDA_FT_BUILD_DIR (default:
# build/ at the top of the source tree), else from PATH (installed).
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
demo=$build_dir/src/tools/gda_ft_soft_demo

if [ ! -x "$demo" ]; then
    if command -v gda_ft_soft_demo >/dev/null 2>&1; then
        demo=$(command -v gda_ft_soft_demo)
    else
        echo "demo.sh: no gda_ft_soft_demo in $build_dir/src/tools nor in" \
             "PATH: build it first (make -C $build_dir) or set" \
             "GDA_FT_BUILD_DIR" >&2
        exit 1
    fi
fi

exec "$demo" "$@"
