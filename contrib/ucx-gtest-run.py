#!/usr/bin/env python3
"""Runs UCX googletest cases one suite per process and groups the results.

    ucx-gtest-run.py [options] OUTDIR COMMAND...

COMMAND is the gtest program with whatever runs it (contrib/gda_ft-run.sh
preloads the plugin); the environment is passed on. Each test suite runs in
a process of its own, under a time limit and a memory limit; a process that
crashes or hangs in a test records that test and the suite goes on in a new
process from the next one. OUTDIR gets results.tsv (test, status, seconds,
cause) and logs/. The last line printed is "N passed, N failed, N skipped";
crashed, hung and killed tests count as failed. Exit status 1 when one
failed.
"""
import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import time

RUN = re.compile(r"^\[ RUN      \] (\S+)")
END = re.compile(r"^\[(       OK |  FAILED  )\] ([^\s,]+)(?:, where .*)?"
                 r" \((\d+) ms\)$")
SKIP = re.compile(r"^\[\s+SKIP\s*\]\s*(.*)")
CAPTURED = re.compile(r"^\[     INFO \] < (.*) >$")


def norm(s):
    """A message without its numbers, addresses, times and host names"""
    s = re.sub(r"^\[\d+\.\d+\] \[[^\]]*\]\s*", "", s)
    s = re.sub(r"0x[0-9a-f]+", "0x..", s)
    s = re.sub(r"\d+", "N", s)
    return re.sub(r"\s+", " ", s).strip()[:160]


def list_tests(cmd, flt):
    out = subprocess.run(cmd + ["--gtest_list_tests", "--gtest_filter=" + flt],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=600).stdout
    suites, suite = collections.OrderedDict(), None
    for line in out.splitlines():
        if not line.strip() or line.startswith(("[", "Note:")):
            continue
        if not line.startswith(" "):
            suite = line.split()[0] if line.rstrip().endswith(".") else None
            if suite:
                suites.setdefault(suite, [])
        elif suite:
            suites[suite].append(suite + line.split()[0])
    return suites


# Suites whose tests are measurements of a fixed number of iterations, not
# of a time: UCX's test_uct_perf.envelope sends about 8.4 million messages
# in 21 measurements (2 million per rate), 140 to 154 s on a soft HCA on 2
# cores (0.09 to 0.16 million messages a second, no measurement stalled),
# more than the 120 s that bounds every other test. They get 600 s a test.
LONG_SUITES = {"test_uct_perf.": 600}


def limits(suite, ntests, test_timeout, suite_timeout):
    """UCX's watchdog per test and the process limit for SUITE"""
    for name, secs in LONG_SUITES.items():
        if suite.endswith("/" + name) or suite == name:
            return (max(secs, test_timeout),
                    max(suite_timeout, secs * ntests))
    return test_timeout, suite_timeout


def rss_gib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / float(1 << 20)
    except OSError:
        pass
    return 0.0


def run_once(cmd, tests, log, proc_timeout, mem_gib):
    """One process for TESTS: returns (exit status, why it was killed)"""
    # gtest filters treat '-' as the start of the negative patterns
    flt = ":".join(t.replace("-", "?") for t in tests)
    t0 = time.time()
    with open(log, "w") as lf:
        p = subprocess.Popen(cmd + ["--gtest_filter=" + flt], stdout=lf,
                             stderr=subprocess.STDOUT, start_new_session=True)
        while True:
            try:
                return p.wait(timeout=1), None
            except subprocess.TimeoutExpired:
                pass
            killed = ("TIMEOUT" if time.time() - t0 > proc_timeout else
                      "MEMORY" if rss_gib(p.pid) > mem_gib else None)
            if killed:
                os.killpg(p.pid, signal.SIGKILL)
                return p.wait(), killed


def cause(lines):
    """Why a test did not pass: its first gtest failure, else what UCX
    logged that the harness counted as errors and warnings"""
    failures, captured = [], []
    for i, line in enumerate(lines):
        if line.endswith(": Failure"):
            where = os.path.basename(line.rsplit(":", 2)[0])
            msg = []
            for l in lines[i + 1:i + 5]:
                if l.startswith("[") or l.endswith(": Failure"):
                    break
                if l.strip():
                    msg.append(l.strip())
            msg = msg[:2]
            failures.append("%s: %s" % (where, " / ".join(msg)))
        m = CAPTURED.match(line)
        if m:
            captured.append(m.group(1))
    counted = [f for f in failures if "errors and" in f]
    other = [f for f in failures if "errors and" not in f]
    if other:
        return norm(other[0])
    if counted:
        return "UCX logged: " + (norm(captured[-1]) if captured else
                                 norm(counted[0]))
    return None


def parse(log, status_of_unfinished, results):
    """Records the tests the log ran; returns the names it finished"""
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    done, cur, block, skip = set(), None, [], None
    for line in lines:
        m = RUN.match(line)
        if m:
            cur, block, skip = m.group(1), [], None
            continue
        if cur is None:
            continue
        block.append(line)
        m = SKIP.match(line)
        if m and skip is None:
            skip = m.group(1).strip() or "(no reason given)"
        m = END.match(line)
        if m and m.group(2) == cur:
            secs = int(m.group(3) or 0) / 1000.0
            if m.group(1).strip() == "OK":
                results[cur] = ("SKIP", secs, skip) if skip else \
                               ("PASS", secs, "")
            else:
                results[cur] = ("FAIL", secs, cause(block) or "failed")
            done.add(cur)
            cur = None
    if cur is not None and status_of_unfinished:
        sig = [l for l in block if "Caught signal" in l]
        why = cause(block)
        if sig:
            why = norm(sig[0][sig[0].index("Caught"):])
        if any("timed out - abort testing" in l for l in block[-20:]):
            # UCX's watchdog (-t) ended a test that did not finish
            status_of_unfinished = "TIMEOUT"
            why = "UCX's watchdog: no progress within the test timeout"
            info = [l for l in block if l.startswith("[     INFO ]")]
            if info:
                why += " (last: %s)" % norm(info[-1][12:])
        results[cur] = (status_of_unfinished, 0.0, why or
                        (norm(block[-1]) if block else "no output"))
        done.add(cur)
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-f", "--filter", default="gda_ft/*",
                    help="gtest filter (default %(default)s)")
    ap.add_argument("-t", "--test-timeout", type=int, default=120,
                    help="UCX's watchdog per test, seconds")
    ap.add_argument("--suite-timeout", type=int, default=600,
                    help="time limit of one suite process, seconds")
    ap.add_argument("--mem-limit", type=float, default=4.0,
                    help="memory limit of one suite process, GiB")
    ap.add_argument("outdir")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if not args.command:
        ap.error("no gtest command")

    os.makedirs(os.path.join(args.outdir, "logs"), exist_ok=True)
    suites = list_tests(args.command, args.filter)
    if not suites:
        print("no tests match %s" % args.filter)
        return 2
    print("%d tests in %d suites" % (sum(map(len, suites.values())),
                                      len(suites)), flush=True)
    results = collections.OrderedDict()
    for suite, tests in suites.items():
        left, n = list(tests), 0
        test_timeout, suite_timeout = limits(suite, len(tests),
                                             args.test_timeout,
                                             args.suite_timeout)
        cmd = args.command + ["-t", str(test_timeout)]
        while left:
            n += 1
            log = os.path.join(args.outdir, "logs", "%s.%d.log" %
                               (suite.replace("/", "_").rstrip("."), n))
            rc, killed = run_once(cmd, left, log, suite_timeout,
                                  args.mem_limit)
            unfinished = killed or ("CRASH" if rc not in (0, 1) else "FAIL")
            done = parse(log, unfinished, results)
            if not done:
                for t in left:
                    results[t] = ("FAIL", 0.0, "exit status %d before any "
                                  "test ran (%s)" % (rc, log))
                break
            left = [t for t in left if t not in results]
        counts = collections.Counter(results[t][0] for t in tests)
        print("  %-58s %s" % (suite, " ".join(
            "%s %d" % kv for kv in sorted(counts.items()))), flush=True)

    with open(os.path.join(args.outdir, "results.tsv"), "w") as f:
        for name, (status, secs, why) in results.items():
            f.write("%s\t%s\t%.1f\t%s\n" % (name, status, secs, why))

    def grouped(title, statuses):
        groups = collections.defaultdict(list)
        for name, (status, _, why) in results.items():
            if status in statuses:
                groups[(status if status != "SKIP" else "") + " " + why] \
                    .append(name)
        if groups:
            print(title)
        for why, names in sorted(groups.items(), key=lambda g: -len(g[1])):
            cases = collections.Counter(
                n.split("/")[1].split(".")[0] + "." +
                n.split(".", 1)[1].split("/")[0] for n in names)
            print("  %4d %s" % (len(names), why.strip()))
            print("       " + ", ".join(
                c + ("" if k == 1 else " x%d" % k)
                for c, k in sorted(cases.items()))[:600])

    grouped("skipped, by reason:", ("SKIP",))
    grouped("failed, by cause:", ("FAIL", "CRASH", "TIMEOUT", "MEMORY"))
    counts = collections.Counter(r[0] for r in results.values())
    failed = len(results) - counts["PASS"] - counts["SKIP"]
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], failed,
                                               counts["SKIP"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
