#!/bin/bash
#
# Builds the libFuzzer harnesses (make fuzz) and runs each of them, from
# the corpus kept in test/fuzz/corpus/<harness>/, for SECONDS (default 30)
# or for RUNS executions. Prints one line per harness; the exit status is
# non-zero when one found a crash, whose input it names.
#
#   contrib/fuzz.sh [-t SECONDS | -n RUNS] [--merge] [HARNESS...]
#
# --merge adds what the run found that covers new code to the kept corpus
# (minimised), for a commit. Sets up first, as contrib/test.sh does.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
limit="-max_total_time=30"
merge=no
harnesses=""
while [ $# -gt 0 ]; do
    case $1 in
    -t)      limit="-max_total_time=$2"; shift 2 ;;
    -n)      limit="-runs=$2"; shift 2 ;;
    --merge) merge=yes; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*)      echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *)       harnesses="$harnesses $1"; shift ;;
    esac
done

GDA_FT_BUILD_DIR=$build_dir "$top/contrib/setup.sh" >/dev/null
make -C "$build_dir" -s fuzz
harnesses=${harnesses:-$(cd "$top/test/fuzz" && ls fuzz_*.c |
                         sed 's/^fuzz_\(.*\)\.c$/\1/')}

work=$(mktemp -d /tmp/gda_ft_fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
for h in $harnesses; do
    kept=$top/test/fuzz/corpus/$h
    mkdir -p "$kept" "$work/$h"
    # new inputs go to the first directory; crashes into $work
    if "$build_dir/test/fuzz/fuzz_$h" $limit -print_final_stats=1 \
           -artifact_prefix="$work/$h-" "$work/$h" "$kept" \
           >"$work/$h.log" 2>&1; then
        result=ok
    else
        result=CRASH
        failed=1
        mkdir -p "$top/fuzz-crashes"
        cp "$work/$h"-* "$top/fuzz-crashes/" 2>/dev/null || true
        tail -30 "$work/$h.log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log")
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' \
               "$work/$h.log")
    cov=$(grep -o 'cov: [0-9]*' "$work/$h.log" | tail -1)
    echo "fuzz $h: $result, ${runs:-?} executions in ${secs:-?} s," \
         "${cov:-cov: ?} edges, corpus $(ls "$kept" | wc -l) kept +" \
         "$(ls "$work/$h" | wc -l) new"
    if [ $merge = yes ] && [ $result = ok ]; then
        "$build_dir/test/fuzz/fuzz_$h" -merge=1 "$kept" "$work/$h" \
            >"$work/$h.merge.log" 2>&1
    fi
done
[ $failed -eq 0 ] || echo "fuzz: crashing inputs in $top/fuzz-crashes/"
exit $failed
