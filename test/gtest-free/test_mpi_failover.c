/*
 * Open MPI over gda_ft through a port failure: runs contrib/mpi-failover.sh
 * (2 ranks of this host, test/mpi/gda_ft_mpi_test: MPI_Put, MPI_Accumulate,
 * MPI_Get and MPI_Sendrecv; rank 1's primary soft port fails by the fault
 * schedule) and checks its summary line
 *
 *   mpi-failover: mode=M pml=P result=PASS|FAIL exit=N switches=N
 *                 atomics_in_doubt=N [reason="..."]
 *
 * Skipped when mpirun or the MPI program is missing (configure found no
 * mpicc).
 */
#include "gda_ft_test.h"

#include <string.h>

#include <sys/wait.h>
#include <unistd.h>


#define MPIFO_OUT_MAX (256 * 1024)


/* Runs the script; returns its output (the summary line is the last) */
static char *mpifo_run(const char *args)
{
    char cmd[2048], *out = malloc(MPIFO_OUT_MAX);
    size_t len = 0, n;
    FILE *pipe;
    int ret;

    GDA_FT_ASSERT(out != NULL);
    snprintf(cmd, sizeof(cmd), "env -u GDA_FT_BUILD_DIR -u UCX_LOG_LEVEL "
             "%s/contrib/mpi-failover.sh -q -B '%s' %s 2>&1",
             gda_ft_test_srcdir(), gda_ft_test_builddir(), args);
    pipe = popen(cmd, "r");
    GDA_FT_ASSERT(pipe != NULL);
    while ((len + 1 < MPIFO_OUT_MAX) &&
           ((n = fread(out + len, 1, MPIFO_OUT_MAX - len - 1, pipe)) > 0)) {
        len += n;
    }
    out[len] = '\0';
    ret = pclose(pipe);
    GDA_FT_ASSERT(WIFEXITED(ret));

    if (WEXITSTATUS(ret) == 77) {
        char *skip = strstr(out, "SKIP: ");

        GDA_FT_SKIP("%s", (skip != NULL) ? skip + 6 : out);
    }
    printf("%s", out);
    return out;
}

static long mpifo_field(const char *out, const char *key)
{
    const char *line = strstr(out, "mpi-failover: mode="), *p;
    char pattern[64];

    if (line == NULL) {
        GDA_FT_FAIL("no summary line in the output above");
    }
    snprintf(pattern, sizeof(pattern), " %s=", key);
    p = strstr(line, pattern);
    if (p == NULL) {
        GDA_FT_FAIL("no %s= in the summary line", key);
    }
    return strtol(p + strlen(pattern), NULL, 10);
}

static void mpifo_expect_pass(const char *out)
{
    if (strstr(out, "result=PASS") == NULL) {
        GDA_FT_FAIL("the MPI failover test did not pass (summary above)");
    }
    GDA_FT_ASSERT_EQ(mpifo_field(out, "exit"), 0);
}

/*
 * A rank whose own port fails is an origin too: a fetching atomic (a window
 * lock, osc ucx's accumulate lock) that the peer executed while its reply
 * was on the failing link is in doubt, by the design's rule 4, and osc ucx
 * then aborts. That outcome is accepted only exactly so: every atomic in
 * doubt confirmed executed by the peer, the MPI call failing with it, no
 * hang; anything else fails. Returns whether the run passed.
 */
static int mpifo_expect_pass_or_reply_lost(const char *out)
{
    if (strstr(out, "result=PASS") != NULL) {
        GDA_FT_ASSERT_EQ(mpifo_field(out, "exit"), 0);
        return 1;
    }
    if ((strstr(out, "an MPI one-sided call failed at the failover") ==
         NULL) || (mpifo_field(out, "atomics_in_doubt") < 1) ||
        (mpifo_field(out, "atomics_in_doubt") !=
         mpifo_field(out, "reply_lost"))) {
        GDA_FT_FAIL("the MPI failover test failed otherwise than by an "
                    "atomic whose reply was lost (summary above)");
    }
    printf("outcome: %ld atomic(s) executed by the peer with the reply lost "
           "on the failing link, in doubt as designed\n",
           mpifo_field(out, "reply_lost"));
    return 0;
}


/*
 * The configuration of the issue: pml ucx and osc ucx over gda_ft,tcp.
 * UCP picks gda_ft for every lane (active messages over SEND/RECV,
 * rendezvous and one-sided over RDMA) and wires it up over gda_ft's
 * out-of-band channel; tcp is in no lane.
 */

GDA_FT_TEST_TIMEOUT(mpi_failover, no_failure, 240)
{
    char *out = mpifo_run("--mode none -t 2 -n 200");

    mpifo_expect_pass(out);
    GDA_FT_ASSERT_EQ(mpifo_field(out, "switches"), 0);
    free(out);
}

/*
 * Rank 1's primary port goes down at 1.5 s of a 5 s run of MPI_Put,
 * MPI_Accumulate and MPI_Get in lock/flush/unlock epochs and MPI_Sendrecv
 * (eager messages as gda_ft active messages, rendezvous over gda_ft's
 * RDMA): everything goes on over the backup path and the result is exact.
 * Open MPI's osc ucx takes its locks and makes accumulates atomic with UCP
 * atomics, so atomics in flight at the failure must not fail an MPI call:
 * the peer tells which of them it executed.
 */
GDA_FT_TEST_TIMEOUT(mpi_failover, port_down_put_accumulate, 240)
{
    char *out = mpifo_run("--mode down -a 1500ms -t 5 -n 200");

    if (mpifo_expect_pass_or_reply_lost(out)) {
        GDA_FT_ASSERT_EQ(mpifo_field(out, "atomics_in_doubt"), 0);
    }
    GDA_FT_ASSERT(mpifo_field(out, "switches") >= 1);
    free(out);
}

/* Only rank 0 is an origin: the failing port is the target's, whose
 * replies leave before it fails or whose requests never arrive: every
 * accumulate and lock completes exactly once */
GDA_FT_TEST_TIMEOUT(mpi_failover, port_down_accumulate_into_failed_target,
                    240)
{
    char *out = mpifo_run("--mode down -a 1500ms -t 5 -n 200 -- "
                          "--origin 0");

    mpifo_expect_pass(out);
    GDA_FT_ASSERT(mpifo_field(out, "switches") >= 1);
    GDA_FT_ASSERT_EQ(mpifo_field(out, "atomics_in_doubt"), 0);
    free(out);
}

/* UCX_TLS=gda_ft alone: wireup over its out-of-band channel */
GDA_FT_TEST_TIMEOUT(mpi_failover, gda_ft_alone_port_down, 240)
{
    char *out = mpifo_run("--tls gda_ft --mode down -a 1500ms -t 5 -n 200 "
                          "-- --origin 0");

    mpifo_expect_pass(out);
    GDA_FT_ASSERT(mpifo_field(out, "switches") >= 1);
    free(out);
}

/* Puts and gets in fence epochs (osc ucx uses no atomics for them) and
 * messages: replayed puts, every byte checked */
GDA_FT_TEST_TIMEOUT(mpi_failover, port_down_fence_puts, 240)
{
    char *out = mpifo_run("--mode down -a 1500ms -t 5 -n 200 "
                          "-- --fence --no-acc");

    mpifo_expect_pass(out);
    GDA_FT_ASSERT(mpifo_field(out, "switches") >= 1);
    GDA_FT_ASSERT_EQ(mpifo_field(out, "atomics_in_doubt"), 0);
    free(out);
}

/* ... and the port comes back at 3 s (failback under MPI traffic) */
GDA_FT_TEST_TIMEOUT(mpi_failover, port_down_then_up_fence_puts, 240)
{
    char *out = mpifo_run("--mode updown -a 1500ms -u 3s -t 5 -n 200 "
                          "-- --fence --no-acc");

    mpifo_expect_pass(out);
    GDA_FT_ASSERT(mpifo_field(out, "switches") >= 1);
    free(out);
}

/* Rendezvous messages over two rails, both gda_ft HCAs, without failure */
GDA_FT_TEST_TIMEOUT(mpi_failover, no_failure_rendezvous_two_rails, 240)
{
    char *out = mpifo_run("--mode none --rndv-rails 2 -t 2 -n 200");

    mpifo_expect_pass(out);
    free(out);
}
