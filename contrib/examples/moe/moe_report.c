/*
 * moe: what the launcher reports of a job: a line per iteration, the
 * summary, whether the job passed, and the timeline plotted with gnuplot
 * (see moe_int.h).
 */
#include "moe_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int moe_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* Whether rank r is the one --kill-rank kills and that never reports (it
 * is not started again) */
static int moe_killed(unsigned r)
{
    return ((int)r == opt.kill_rank) && (opt.rejoin_at < 0);
}

/* Whether rank r had no process at iteration it: killed, not back yet */
static int moe_absent(const moe_job_t *job, unsigned r, unsigned it)
{
    return !job->got[r] ||
           (((int)r == opt.kill_rank) && ((int)it >= opt.kill_at) &&
            ((opt.rejoin_at < 0) || ((int)it < opt.rejoin_at)));
}

/* Iterations every rank finished (the killed rank aside) */
unsigned moe_job_done(const moe_job_t *job)
{
    unsigned r, done = opt.iters;

    for (r = 0; r < opt.ranks; ++r) {
        if (!moe_killed(r)) {
            done = MOE_MIN(done, job->got[r] ? job->sum[r].done : 0);
        }
    }
    return done;
}

/* An iteration's time: the slowest rank's dispatch + combine; 0 with
 * *failed when some rank never finished it */
static uint64_t moe_iter_ns(const moe_job_t *job, unsigned it, int *failed)
{
    uint64_t worst = 0;
    unsigned r;

    *failed = (it >= moe_job_done(job));
    for (r = 0; !*failed && (r < opt.ranks); ++r) {
        if (job->got[r]) {
            worst = MOE_MAX(worst, job->recs[r][it].dispatch_ns +
                                   job->recs[r][it].combine_ns);
        }
    }
    return *failed ? 0 : worst;
}

/* How long the ranks that reported spent on iteration it before they gave
 * up */
static uint64_t moe_stall_ns(const moe_job_t *job, unsigned it)
{
    uint64_t worst = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (job->got[r] && (it < opt.iters)) {
            worst = MOE_MAX(worst, job->recs[r][it].dispatch_ns +
                                   job->recs[r][it].combine_ns);
        }
    }
    return worst;
}

void moe_print_iterations(const moe_job_t *job)
{
    unsigned it, r, done = moe_job_done(job), masked;
    uint64_t d, c;
    char paths[64];

    printf("iter  dispatch(ms)  combine(ms)  paths (rank:P primary, "
           "B backup)\n");
    for (it = 0; (it <= done) && (it < opt.iters); ++it) {
        d = c = 0;
        masked   = 0;
        paths[0] = '\0';
        for (r = 0; (it < done) && (r < opt.ranks); ++r) {
            if (moe_absent(job, r, it)) {
                snprintf(paths + strlen(paths),
                         sizeof(paths) - strlen(paths), " %u:-", r);
                continue;
            }
            masked += job->recs[r][it].masked;
            d = MOE_MAX(d, job->recs[r][it].dispatch_ns);
            c = MOE_MAX(c, job->recs[r][it].combine_ns);
            snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths),
                     " %u:%c", r, job->recs[r][it].on_backup ? 'B' : 'P');
        }
        if (it == done) {
            printf("%4u  NEVER FINISHED (given up after %.2f s)\n", it,
                   moe_stall_ns(job, it) / 1e9);
            break;
        }
        printf("%4u  %12.3f  %11.3f %s%s%s%s%s", it, d / 1e6, c / 1e6,
               paths,
               ((int)it == opt.fault_at) && (opt.fault_rank >= 0) ?
               "   <- port down" : "",
               ((int)it == opt.up_at) && (opt.fault_rank >= 0) ?
               "   <- port up" : "",
               ((int)it == opt.kill_at) && (opt.kill_rank >= 0) ?
               "   <- rank killed" : "",
               ((int)it == opt.rejoin_at) && (opt.kill_rank >= 0) ?
               "   <- rank back" : "");
        if (masked > 0) {
            printf("   %u masked", masked);
        }
        printf("\n");
    }
}

static const char *moe_status_name(uint32_t status)
{
    static const char *names[] = {"OK", "INPROGRESS", "NO_RESOURCE",
                                  "PATH_SWITCHED", "IN_DOUBT", "NO_PATH",
                                  "ERROR", "TIMEOUT", "PEER_GONE"};

    return (status < 9) ? names[status] : "?";
}

/* The ranks' deadline (UCX_GDA_FT_DEADLINE as moe_spawn leaves it): what
 * the time from a kill to its mask is counted in */
static double moe_deadline_sec(void)
{
    const char *value = getenv("UCX_GDA_FT_DEADLINE");
    double number;
    char *unit;

    if (value == NULL) {
        return 0.1;
    }
    number = strtod(value, &unit);
    return !strcmp(unit, "ms") ? number * 1e-3 :
           !strcmp(unit, "us") ? number * 1e-6 :
           !strcmp(unit, "ns") ? number * 1e-9 :
           (!strcmp(unit, "s") || (*unit == '\0')) ? number : 0;
}

/* The latest of the survivors' times from the kill to its mask, in
 * seconds; -1 when one of them never masked it */
static double moe_mask_sec(const moe_job_t *job)
{
    uint64_t latest = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (((int)r == opt.kill_rank) || !job->got[r]) {
            continue;
        }
        if (job->sum[r].gone_ns < job->kill_ns) {
            return -1;
        }
        latest = MOE_MAX(latest, job->sum[r].gone_ns - job->kill_ns);
    }
    return latest / 1e9;
}

/* The latest of the survivors' times from the killed rank's restart to
 * its device endpoint swapped in, in seconds; -1 when one never did */
static double moe_rejoin_sec(const moe_job_t *job)
{
    uint64_t latest = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (((int)r == opt.kill_rank) || !job->got[r]) {
            continue;
        }
        if ((job->restart_ns == 0) ||
            (job->sum[r].back_ns < job->restart_ns)) {
            return -1;
        }
        latest = MOE_MAX(latest, job->sum[r].back_ns - job->restart_ns);
    }
    return latest / 1e9;
}

/* The summary of a job, as lines, for printing alone or side by side */
unsigned moe_summary_lines(const moe_job_t *job, char lines[][80])
{
    moe_summary_t t = {0};
    unsigned r, it, n = 0, done = moe_job_done(job), k = 0;
    uint64_t *times = calloc(opt.iters, sizeof(*times)), med = 0, worst = 0;
    double mask;
    int failed;

    for (r = 0; r < opt.ranks; ++r) {
        t.masked        += job->sum[r].masked;
        t.checked       += job->sum[r].checked;
        t.wrong         += job->sum[r].wrong;
        t.signal_errors += job->sum[r].signal_errors;
        moe_counters_add(&t.chan, &job->sum[r].chan);
        t.first_backup_ms = MOE_MAX(t.first_backup_ms,
                                    job->sum[r].first_backup_ms);
        t.gpu          |= job->sum[r].gpu;
    }
    for (it = 0; it < done; ++it) {
        times[k++] = moe_iter_ns(job, it, &failed);
        worst      = MOE_MAX(worst, times[k - 1]);
    }
    if (k > 0) {
        qsort(times, k, sizeof(*times), moe_cmp_u64);
        med = times[k / 2];
    }
    free(times);

    snprintf(lines[n++], 80, "failover %s, %s", job->failover ? "ON" : "OFF",
             t.gpu ? "GPU kernels" : "CPU threads");
    snprintf(lines[n++], 80, "iterations finished   %u of %u", done,
             opt.iters);
    snprintf(lines[n++], 80, "switches / failbacks  %u / %u",
             t.chan.switches, t.chan.failbacks);
    snprintf(lines[n++], 80, "replays / resolved    %u / %u",
             t.chan.replays, t.chan.resolved);
    snprintf(lines[n++], 80, "atomics in doubt      %u", t.chan.in_doubt);
    snprintf(lines[n++], 80, "tokens checked        %u", t.checked);
    snprintf(lines[n++], 80, "lost / duplicated     %u / %u", t.wrong,
             t.signal_errors);
    snprintf(lines[n++], 80, "signals exact         %s",
             (t.signal_errors == 0) ? "yes" : "NO");
    snprintf(lines[n++], 80, "median iteration      %.2f ms", med / 1e6);
    snprintf(lines[n++], 80, "slowest iteration     %.2f ms (%.0fx median)",
             worst / 1e6, med ? (double)worst / med : 0.0);
    if (done < opt.iters) {
        snprintf(lines[n++], 80, "interruption          never recovered");
    } else {
        snprintf(lines[n++], 80, "interruption          %.1f ms",
                 (worst - med) / 1e6);
    }
    snprintf(lines[n++], 80, "first backup reply    %.2f ms after switch",
             t.first_backup_ms);
    if (opt.kill_rank >= 0) {
        mask = moe_mask_sec(job);
        snprintf(lines[n++], 80, "rank killed           %d, at iteration %d",
                 opt.kill_rank, opt.kill_at);
        snprintf(lines[n++], 80, "tokens masked         %u", t.masked);
        if ((job->kill_ns == 0) || (mask < 0)) {
            snprintf(lines[n++], 80, "kill -> mask          never");
        } else {
            snprintf(lines[n++], 80, "kill -> mask          %.1f ms (%.2f "
                     "deadlines)", mask * 1e3, mask / moe_deadline_sec());
        }
    }
    if ((opt.kill_rank >= 0) && (opt.rejoin_at >= 0)) {
        mask = moe_rejoin_sec(job);
        if (mask < 0) {
            snprintf(lines[n++], 80, "restart -> rejoin     never");
        } else {
            snprintf(lines[n++], 80, "restart -> rejoin     %.1f ms, at "
                     "iteration %d", mask * 1e3, opt.rejoin_at);
        }
    }
    if (done < opt.iters) {
        snprintf(lines[n++], 80, "iteration %-4u        NEVER FINISHED",
                 done);
        for (r = 0; r < opt.ranks; ++r) {
            it = job->got[r] ? job->sum[r].done : 0;
            if (moe_killed(r)) {
                continue;
            }
            if (!job->got[r]) {
                snprintf(lines[n++], 80, " rank %u died", r);
            } else if (it < opt.iters) {
                snprintf(lines[n++], 80, " rank %u: iteration %u, %s after "
                         "%.2f s", r, it,
                         moe_status_name(job->recs[r][it].status),
                         (job->recs[r][it].dispatch_ns +
                          job->recs[r][it].combine_ns) / 1e9);
            }
        }
    }
    return n;
}

int moe_job_ok(const moe_job_t *job)
{
    unsigned r;
    uint32_t wrong = 0, sigerr = 0;

    for (r = 0; r < opt.ranks; ++r) {
        wrong  += job->sum[r].wrong;
        sigerr += job->sum[r].signal_errors;
    }
    /* a killed rank must have been masked: its tokens were not exact */
    return (moe_job_done(job) == opt.iters) && (wrong == 0) &&
           (sigerr == 0) &&
           ((opt.kill_rank < 0) || (moe_mask_sec(job) >= 0)) &&
           ((opt.rejoin_at < 0) || (moe_rejoin_sec(job) >= 0));
}

/* The first iteration after the fault with every rank's channels back on
 * their primaries, or -1 */
static int moe_failback_iter(const moe_job_t *job)
{
    unsigned it, r, back, done = moe_job_done(job);

    for (it = (opt.fault_at > 0) ? opt.fault_at : 0; it < done; ++it) {
        back = 0;
        for (r = 0; r < opt.ranks; ++r) {
            back += job->got[r] ? job->recs[r][it].on_backup : 0;
        }
        if ((back == 0) && ((int)it > opt.fault_at)) {
            return it;
        }
    }
    return -1;
}

/* CSV of iteration times and the gnuplot timeline */
void moe_plot(const moe_job_t *jobs, unsigned njobs)
{
    char csv[PATH_MAX], cmd[PATH_MAX * 3], failback[160] = "";
    char ports[320] = "", killed[200] = "", back[200] = "";
    double rejoin = moe_rejoin_sec(&jobs[0]);
    int fb = ((opt.fault_rank >= 0) && jobs[0].failover) ?
             moe_failback_iter(&jobs[0]) : -1;
    double mask = moe_mask_sec(&jobs[0]);
    unsigned it, j;
    FILE *f;
    int failed;

    snprintf(csv, sizeof(csv), "%s.csv", opt.plot);
    f = fopen(csv, "w");
    if (f == NULL) {
        printf("cannot write %s\n", csv);
        return;
    }
    for (it = 0; it < opt.iters; ++it) {
        fprintf(f, "%u", it);
        for (j = 0; j < njobs; ++j) {
            uint64_t t = moe_iter_ns(&jobs[j], it, &failed);

            if (failed && (it == moe_job_done(&jobs[j]))) {
                /* the iteration that never finished: until it gave up */
                fprintf(f, " %.3f", moe_stall_ns(&jobs[j], it) / 1e6);
            } else if (failed) {
                fprintf(f, " NaN");
            } else {
                fprintf(f, " %.3f", t / 1e6);
            }
        }
        fprintf(f, "\n");
    }
    fclose(f);

    if (opt.fault_rank >= 0) {
        snprintf(ports, sizeof(ports),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead lc 'red'; "
                 "set arrow from %d, graph 0 to %d, graph 1 nohead "
                 "lc 'green'; set label 'port down' at %d, graph 0.95 "
                 "tc 'red'; set label 'port up' at %d, graph 0.88 "
                 "tc 'green'; ", opt.fault_at, opt.fault_at, opt.up_at,
                 opt.up_at, opt.fault_at, opt.up_at);
    }
    if ((opt.kill_rank >= 0) && (mask >= 0)) {
        /* the mask comes within the kill's iteration */
        snprintf(killed, sizeof(killed),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead "
                 "lc 'purple'; set label 'rank %d killed, masked %.0f ms "
                 "later' at %d, graph 0.74 tc 'purple'; ", opt.kill_at,
                 opt.kill_at, opt.kill_rank, mask * 1e3, opt.kill_at);
    }
    if ((opt.kill_rank >= 0) && (opt.rejoin_at >= 0) && (rejoin >= 0)) {
        snprintf(back, sizeof(back),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 "
                 "lc 'dark-green'; set label 'rank %d back, %.0f ms after "
                 "its restart' at %d, graph 0.67 tc 'dark-green'; ",
                 opt.rejoin_at, opt.rejoin_at, opt.kill_rank, rejoin * 1e3,
                 opt.rejoin_at);
    }
    if (fb >= 0) {
        snprintf(failback, sizeof(failback),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 "
                 "lc 'blue'; set label 'failback' at %d, graph 0.81 "
                 "tc 'blue'; ", fb, fb, fb);
    }
    snprintf(cmd, sizeof(cmd),
             "gnuplot -e \"set terminal png size 900,420; set output '%s'; "
             "set xlabel 'iteration'; set ylabel 'iteration time (ms)'; "
             "set logscale y; set key top left; set grid; %s%s%s%s"
             "plot '%s' using 1:2 with linespoints title 'failover %s'%s\" "
             "2>&1", opt.plot, ports, killed, back, failback, csv,
             jobs[0].failover ? "on" : "off",
             (njobs > 1) ? ", '' using 1:3 with linespoints "
                           "title 'failover off'" : "");
    if (system(cmd) == 0) {
        printf("timeline: %s (data: %s)\n", opt.plot, csv);
    } else {
        printf("timeline: gnuplot failed or is missing; data in %s\n", csv);
    }
}
