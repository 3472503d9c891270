#!/bin/bash
#
# Installs everything gda_ft needs on Debian 12 and builds it. Idempotent:
# packages already present are not reinstalled, the UCX source is fetched
# once, and the build tree is reused.
#
#   contrib/setup.sh [--asan|--tsan] [--no-build]
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
asan=no
tsan=no
do_build=yes
for arg in "$@"; do
    case $arg in
    --asan)     asan=yes; build_dir=${GDA_FT_BUILD_DIR:-$top/build-asan} ;;
    --tsan)     tsan=yes; build_dir=${GDA_FT_BUILD_DIR:-$top/build-tsan} ;;
    --no-build) do_build=no ;;
    *) echo "setup.sh: unknown option '$arg'" >&2; exit 1 ;;
    esac
done

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

packages="build-essential autoconf automake libtool pkg-config dpkg-dev
          libucx-dev ucx-utils libibverbs-dev rdma-core libhwloc-dev zlib1g-dev
          hwloc iproute2 tshark openmpi-bin libopenmpi-dev python3
          gnuplot-nox valgrind clang libclang-rt-dev"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done

# deb-src entries, needed for 'apt-get source ucx': the machine's own deb
# entries (its archive, suites and keys) with their type changed
src_list=/etc/apt/sources.list.d/gda-ft-deb-src
have_src=no
grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && have_src=yes
grep -rqs '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/ &&
    have_src=yes
if [ $have_src = no ]; then
    echo "setup: adding deb-src entries beside the machine's deb entries"
    deb822=$(awk '
        BEGIN { RS = ""; ORS = "\n\n" }
        /(^|\n)Types:[ \t]*deb[ \t]*(\n|$)/ {
            sub(/Types:[ \t]*deb[ \t]*/, "Types: deb-src"); print }' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null)
    # either file may be missing: cat's status is not the answer
    oneline=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
                    2>/dev/null || true) |
              sed -n 's/^deb\([[:space:]]\)/deb-src\1/p')
    if [ -z "$deb822" ] && [ -z "$oneline" ]; then
        echo "setup: APT has no deb entry to take a deb-src entry from;" \
             "add one for the UCX source package" >&2
        exit 1
    fi
    [ -z "$deb822" ] || printf '%s\n' "$deb822" |
        $sudo tee $src_list.sources >/dev/null
    [ -z "$oneline" ] || printf '%s\n' "$oneline" |
        $sudo tee $src_list.list >/dev/null
    need_update=yes
fi

if [ -n "$missing" ] || [ "${need_update:-no}" = yes ]; then
    echo "setup: installing:$missing"
    $sudo apt-get update -qq
    [ -z "$missing" ] ||
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            --no-install-recommends $missing >/dev/null
fi

# UCX source of exactly the installed version
ucx_version=$(ucx_info -v | sed -n -e 's/^# Version \([0-9.]*\).*/\1/p' -e 's/^# Library version: \([0-9.]*\).*/\1/p')
ucx_src=$top/third_party/ucx-$ucx_version
if [ ! -f "$ucx_src/src/uct/base/uct_iface.h" ]; then
    echo "setup: fetching the UCX $ucx_version source package"
    mkdir -p "$top/third_party/dl"
    (cd "$top/third_party/dl" &&
     apt-get source --download-only "ucx=$(dpkg-query -W -f='${Version}' libucx0)" \
         >/dev/null 2>&1 &&
     rm -rf "$ucx_src.tmp" &&
     dpkg-source --no-check -x ucx_*.dsc "$ucx_src.tmp" >/dev/null)
    mv "$ucx_src.tmp" "$ucx_src"
fi

# The kernel's PRM layouts (include/linux/mlx5/mlx5_ifc.h), a second
# source that the mlx5 layout test checks the provider's own against: two files of
# Debian's linux-headers-<version>-common, the one the architecture's
# linux-headers package depends on
fetch_kernel_ifc() {
    local flavour common deb tmp dest
    flavour=$(apt-cache depends "linux-headers-$(dpkg --print-architecture)" \
              2>/dev/null | sed -n 's/^ *Depends: \(linux-headers-.*\)$/\1/p' |
              head -1)
    common=$(apt-cache depends "$flavour" 2>/dev/null |
             sed -n 's/^ *Depends: \(linux-headers-.*-common\)$/\1/p' | head -1)
    [ -n "$common" ] || return 1
    mkdir -p "$top/third_party/dl"
    (cd "$top/third_party/dl" && apt-get download "$common" >/dev/null 2>&1) ||
        return 1
    deb=$(ls "$top/third_party/dl/${common}"_*.deb | head -1)
    tmp=$(mktemp -d)
    dest=$top/third_party/linux-mlx5-ifc-${common#linux-headers-}
    if dpkg-deb --fsys-tarfile "$deb" |
       tar -x -C "$tmp" --wildcards '*/include/linux/mlx5/mlx5_ifc*.h'; then
        mkdir -p "$dest"
        cp "$tmp"/usr/src/*/include/linux/mlx5/mlx5_ifc.h \
           "$tmp"/usr/src/*/include/linux/mlx5/mlx5_ifc_fpga.h "$dest"/
    fi
    rm -rf "$tmp"
    [ -f "$dest/mlx5_ifc.h" ]
}
if ! ls -d "$top"/third_party/linux-mlx5-ifc-* >/dev/null 2>&1; then
    echo "setup: fetching the kernel's mlx5_ifc.h (linux-headers-*-common)"
    fetch_kernel_ifc ||
        echo "setup: no kernel mlx5_ifc.h: the mlx5 layout cross-check" \
             "will be left out"
fi

[ $do_build = yes ] || exit 0

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
    (cd "$top" && ./autogen.sh >/dev/null 2>&1)
fi
mkdir -p "$build_dir"
cd "$build_dir"
if [ ! -f Makefile ]; then
    conf_args="--with-ucx-src=$ucx_src"
    [ $asan = yes ] && conf_args="$conf_args --enable-asan"
    [ $tsan = yes ] && conf_args="$conf_args --enable-tsan"
    "$top/configure" $conf_args >configure.log 2>&1 ||
        { tail -20 configure.log; echo "setup: configure failed" >&2; exit 1; }
fi
# two goals in one make race (automake's "all" re-enters make): run each
(make -j"$(nproc)" all && make -j"$(nproc)" build-tests) >make.log 2>&1 ||
    { grep -B2 -A8 -m5 'error' make.log; echo "setup: build failed" >&2; exit 1; }
echo "setup: built in $build_dir"
