#!/bin/bash
#
# Builds gda_ft against a UCX other than the installed one and runs its
# tests there: UCX from a release tag of an openucx/ucx git clone (or an
# unpacked source tree) into a prefix, gda_ft against that prefix and tree,
# then the test runner with the prefix's libraries first on the library
# path (Open MPI and the UCP programs load that UCX too). The last line is
# the runner's "N passed, N failed, N skipped". docs/ucx-versions.md has
# the results and the exact commands.
#
#   contrib/ucx-version.sh --git CLONE --tag v1.16.0 [options]
#   contrib/ucx-version.sh --src UCX_SOURCE_TREE [options]
#
#   --work DIR      where the UCX tree, its prefix and gda_ft's build go
#                   (default: <source tree>/ucx-versions)
#   --build-only    build UCX and gda_ft, run nothing
#   -f GLOB         run only the tests matching GLOB (repeatable)
#   -j N            parallel make jobs (default: the number of CPUs)
#
# CI can't fetch UCX: it keeps Debian's 1.13.1. The UCX configure options
# leave out what gda_ft does not use (CUDA, ROCm, bindings, docs).
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
work=$top/ucx-versions
git_dir=""
tag=""
src=""
build_only=no
filters=()
jobs=$(nproc)

usage() {
    sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' -e 's/^# \{0,1\}//' >&2
    exit "$1"
}

while [ $# -gt 0 ]; do
    case $1 in
    --git) git_dir=$2; shift ;;
    --tag) tag=$2; shift ;;
    --src) src=$2; shift ;;
    --work) work=$2; shift ;;
    --build-only) build_only=yes ;;
    -f) filters+=(-f "$2"); shift ;;
    -j) jobs=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "ucx-version.sh: unknown option '$1'" >&2; usage 1 ;;
    esac
    shift
done

if [ -n "$git_dir" ]; then
    [ -n "$tag" ] || { echo "ucx-version.sh: --git needs --tag" >&2; exit 1; }
    git -C "$git_dir" rev-parse --verify --quiet "$tag^{commit}" >/dev/null ||
        { echo "ucx-version.sh: no tag $tag in $git_dir" >&2; exit 1; }
    src=$work/ucx-${tag#v}
    if [ ! -f "$src/configure.ac" ]; then
        mkdir -p "$src"
        git -C "$git_dir" archive "$tag" | tar -x -C "$src"
    fi
elif [ -z "$src" ]; then
    echo "ucx-version.sh: give --git CLONE --tag TAG, or --src DIR" >&2
    exit 1
fi
[ -f "$src/configure.ac" ] ||
    { echo "ucx-version.sh: $src is not a UCX source tree" >&2; exit 1; }
src=$(cd "$src" && pwd)
version=$(sed -n 's/^define(.ucx_ver_\(major\|minor\|patch\)., \([0-9]*\)).*/\2/p' \
          "$src/configure.ac" | paste -sd. -)
prefix=$work/ucx-$version-install
build=$work/gda_ft-ucx-$version
log=$work/logs-$version
mkdir -p "$log"
echo "ucx-version.sh: UCX $version from $src"

# UCX: --enable-mt as Debian's and Ubuntu's packages are built
if [ ! -x "$prefix/bin/ucx_info" ]; then
    echo "ucx-version.sh: building UCX $version into $prefix" \
         "(logs in $log)"
    (cd "$src" && { [ -x configure ] || ./autogen.sh; }) \
        >"$log/ucx-autogen.log" 2>&1
    mkdir -p "$src/build-gda-ft"
    (cd "$src/build-gda-ft" &&
     ../configure --prefix="$prefix" --enable-mt --disable-debug \
         --disable-assertions --without-cuda --without-rocm --without-java \
         --without-go --disable-doxygen-doc --without-knem --without-xpmem \
         --without-ugni) >"$log/ucx-configure.log" 2>&1
    make -C "$src/build-gda-ft" -j"$jobs" >"$log/ucx-make.log" 2>&1
    make -C "$src/build-gda-ft" install >"$log/ucx-install.log" 2>&1
fi

# gda_ft against it
echo "ucx-version.sh: building gda_ft in $build"
(cd "$top" && { [ -x configure ] || ./autogen.sh; }) \
    >"$log/gda_ft-autogen.log" 2>&1
mkdir -p "$build"
if [ ! -f "$build/Makefile" ]; then
    (cd "$build" &&
     "$top/configure" --with-ucx="$prefix" --with-ucx-src="$src") \
        >"$log/gda_ft-configure.log" 2>&1 ||
        { tail -5 "$log/gda_ft-configure.log" >&2; exit 1; }
fi
sed -n '/gda_ft configured:/,$p' "$log/gda_ft-configure.log" | cut -c12-
# all before build-tests: both link the same convenience libraries
make -C "$build" -j"$jobs" all >"$log/gda_ft-make.log" 2>&1 &&
    make -C "$build" -j"$jobs" build-tests >>"$log/gda_ft-make.log" 2>&1 ||
    { grep -E "error|Error" "$log/gda_ft-make.log" | head -20 >&2; exit 1; }
warnings=$(grep -c "warning:" "$log/gda_ft-make.log" || true)
echo "ucx-version.sh: gda_ft built against UCX $version ($warnings compiler" \
     "warnings; log $log/gda_ft-make.log)"
[ $build_only = no ] || exit 0

export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$build/test/gtest-free/gda_ft_tests" "${filters[@]}" 2>&1 |
    tee "$log/tests.log" | grep -E "^\[(FAIL|SKIP)\]|passed,"
