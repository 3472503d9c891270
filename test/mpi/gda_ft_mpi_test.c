/*
 * gda_ft_mpi_test: one-sided puts and accumulates and point-to-point
 * messages between two ranks, checked for a correct result; run by
 * contrib/mpi-failover.sh over UCX_TLS=gda_ft,tcp with one rank's primary
 * soft port failing in the middle.
 *
 * Every iteration, each rank (symmetrically, to its peer):
 *  - in an access epoch (passive target: MPI_Win_lock/MPI_Win_flush/
 *    MPI_Win_unlock, or active target: MPI_Win_fence) puts a patterned
 *    block of 1 byte to 2 MiB into slot it % NSLOTS of the peer's window
 *    (MPI_Win_allocate), adds 1 to a counter there (MPI_Accumulate,
 *    MPI_SUM on MPI_INT64_T) and 1 to a second one whose old value it
 *    fetches (MPI_Fetch_and_op): the k-th must return k, so that no value
 *    comes back twice or is skipped;
 *  - every 8th iteration reads its last write back (MPI_Get) and checks it;
 *  - exchanges a patterned message of 8 bytes to 4 MiB with the peer
 *    (MPI_Sendrecv: eager and rendezvous) and checks what it received.
 * The run lasts at least -n iterations and -t seconds (so that a fault
 * scheduled by time lands in the middle). At the end each rank checks its
 * whole window: every slot holds the peer's last write to it, the counters
 * equal the numbers of increments, the bytes around the slots are intact.
 * When an epoch failed, its operations are in doubt: the counters may hold
 * them or not, but nothing more, whatever the transport's log says.
 *
 * --bench N instead times N MPI_Accumulate and N MPI_Fetch_and_op calls
 * of rank 0 on rank 1's counters, each followed by MPI_Win_flush, in one
 * passive epoch: the cost of an atomic as UCX_ATOMIC_MODE executes it.
 *
 * Output: per rank "rank R: ..." lines, then from rank 0
 * "MPI failover test: RESULT PASS|FAIL ..."; exit status 0 on success.
 *
 * The fault can also come from the program itself (-F RANK -f ITER): that
 * rank takes down its first soft port through the soft HCA's control
 * command (the plugin is preloaded: gda_ft_soft_ctl_exec is in-process).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include <mpi.h>

#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define NSLOTS        16
#define GUARD         64
#define GUARD_BYTE    0xa5
#define INIT_BYTE     0x5a
#define GET_EVERY     8
#define ACC_OFF       0     /* window offset of the accumulate counter */
#define FOP_OFF       8     /* ... and of the fetch-and-op counter */
#define COUNTERS_LEN  16

/* An RMA call of an epoch, made only while every call before it succeeded */
#define RMA_CALL(_rc, _call) \
    do { \
        if ((_rc) == MPI_SUCCESS) { \
            (_rc) = (_call); \
        } \
    } while (0)

/* A fence of an epoch: collective, so made whatever failed before it */
#define FENCE_CALL(_rc, _win) \
    do { \
        int _fence_rc = MPI_Win_fence(0, _win); \
        \
        if ((_rc) == MPI_SUCCESS) { \
            (_rc) = _fence_rc; \
        } \
    } while (0)

static const size_t slot_sizes[NSLOTS] = {
    1, 8, 63, 64, 129, 1000, 4096, 8193, 65536, 100003, 262144, 524288,
    1048575, 1048576, 1048577, 2u << 20
};

static const size_t msg_sizes[] = {
    8, 100, 4096, 16384, 65536, 262144, 1048576, 4u << 20
};
#define NMSG (sizeof(msg_sizes) / sizeof(msg_sizes[0]))

static int      rank, peer;
static size_t   slot_off[NSLOTS], win_size;
static uint8_t *win_base;
static MPI_Win  win;

static struct {
    long   iters;
    double min_time;
    int    fence;
    int    acc;
    int    fop;
    long   bench;
    int    p2p;
    size_t max_size;
    int    origin;      /* the only rank that does RMA; -1: both */
    int    fault_rank;
    long   fault_at;
    long   up_at;
    int    verbose;
} opt = {
    .iters      = 300,
    .min_time   = 0.0,
    .fence      = 0,
    .acc        = 1,
    .fop        = 1,
    .bench      = 0,
    .p2p        = 1,
    .max_size   = 2u << 20,
    .origin     = -1,
    .fault_rank = -1,
    .fault_at   = -1,
    .up_at      = -1,
    .verbose    = 0
};

static long errors;


static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Content written by `writer` in iteration `it` (kind: 0 RMA, 1 message) */
static void fill(uint8_t *p, size_t size, int writer, long it, int kind)
{
    uint64_t base = mix64(((uint64_t)kind << 60) ^ ((uint64_t)writer << 48) ^
                          (uint64_t)it), w;
    size_t i;

    for (i = 0; i < size; i += 8) {
        w = mix64(base + i);
        memcpy(p + i, &w, ((size - i) < 8) ? (size - i) : 8);
    }
}

/* Compares; reports the first difference */
static int check(const uint8_t *got, const uint8_t *exp, size_t size,
                 const char *what, long it)
{
    size_t i;

    if (memcmp(got, exp, size) == 0) {
        return 0;
    }
    for (i = 0; got[i] == exp[i]; ++i) {
    }
    printf("rank %d: ERROR %s of iteration %ld (%zu bytes): byte %zu is "
           "0x%02x, expected 0x%02x\n", rank, what, it, size, i, got[i],
           exp[i]);
    fflush(stdout);
    ++errors;
    return -1;
}

/* Takes this rank's first soft port down or up, in-process */
static void soft_port(const char *state)
{
    typedef int (*exec_t)(const char*, char*, size_t);
    exec_t exec = (exec_t)dlsym(RTLD_DEFAULT, "gda_ft_soft_ctl_exec");
    const char *devs = getenv("UCX_GDA_FT_SOFT_DEVICES");
    char cmd[256], reply[1024];
    int ret;

    if ((exec == NULL) || (devs == NULL)) {
        printf("rank %d: ERROR cannot inject a fault (%s)\n", rank,
               (exec == NULL) ? "gda_ft_soft_ctl_exec not found: plugin not "
                                "preloaded?" : "no UCX_GDA_FT_SOFT_DEVICES");
        ++errors;
        return;
    }
    snprintf(cmd, sizeof(cmd), "port %.*s 1 %s", (int)strcspn(devs, "=,"),
             devs, state);
    reply[0] = '\0';
    ret      = exec(cmd, reply, sizeof(reply));
    printf("rank %d: fault '%s': status %d, %.*s\n", rank, cmd, ret,
           (int)strcspn(reply, "\n"), reply);
    fflush(stdout);
    if (ret != 0) {
        ++errors;
    }
}

static void layout(void)
{
    size_t cur = COUNTERS_LEN;
    int s;

    for (s = 0; s < NSLOTS; ++s) {
        cur += GUARD;
        cur  = (cur + 63) & ~(size_t)63;
        slot_off[s] = cur;
        cur += slot_sizes[s];
    }
    win_size = ((cur + GUARD) + 63) & ~(size_t)63;
}

static size_t slot_size(int s)
{
    return (slot_sizes[s] < opt.max_size) ? slot_sizes[s] : opt.max_size;
}

/* What a rank wrote into its peer's window */
typedef struct {
    long last_it[NSLOTS];   /* last iteration whose epoch succeeded */
    long doubt_it[NSLOTS];  /* an iteration whose epoch failed, or -1 */
    long acc_ok;            /* increments in successful epochs */
    long acc_doubt;         /* increments in failed epochs */
    long fop_ok;            /* fetch-and-ops in successful epochs */
    long fop_doubt;         /* fetch-and-ops in failed epochs */
} written_t;

static written_t mine, theirs;

/*
 * Slot s of the local window holds the peer's write of iteration last (or
 * the initial bytes); when an epoch of iteration doubt failed, each byte may
 * also come from that write
 */
static void check_slot(int s, long last, long doubt, uint8_t *exp1,
                       uint8_t *exp2)
{
    const uint8_t *got = win_base + slot_off[s];
    size_t size = slot_size(s), i;

    if (last < 0) {
        memset(exp1, INIT_BYTE, size);
    } else {
        fill(exp1, size, peer, last, 0);
    }
    if (doubt < 0) {
        check(got, exp1, size, "final window slot", last);
        return;
    }
    fill(exp2, size, peer, doubt, 0);
    for (i = 0; i < size; ++i) {
        if ((got[i] != exp1[i]) && (got[i] != exp2[i])) {
            printf("rank %d: ERROR slot %d (in doubt between iterations %ld "
                   "and %ld): byte %zu is 0x%02x, from neither\n", rank, s,
                   last, doubt, i, got[i]);
            ++errors;
            return;
        }
    }
}

/* A counter of the local window against the peer's increments: those of
 * its successful epochs, and at most those of a failed one */
static void check_counter(const char *what, int64_t value, long ok,
                          long doubt)
{
    if ((value >= ok) && (value <= ok + doubt)) {
        return;
    }
    printf("rank %d: ERROR %s is %" PRId64 ", expected %ld%s%ld\n", rank,
           what, value, ok, doubt ? " plus at most " : "", doubt ? doubt : 0);
    ++errors;
}

/* --bench: rank 0 times opt.bench accumulates, then as many fetch-and-ops,
 * each flushed, on rank 1's counters; rank 1 checks them */
static int bench_atomics(void)
{
    int64_t one = 1, fetched, counters[2];
    double t0, t_acc = 0, t_fop = 0;
    int rc = MPI_SUCCESS, pass;
    long i;

    if (rank == 0) {
        rc |= MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
        t0 = now_s();
        for (i = 0; i < opt.bench; ++i) {
            rc |= MPI_Accumulate(&one, 1, MPI_INT64_T, peer, ACC_OFF, 1,
                                 MPI_INT64_T, MPI_SUM, win);
            rc |= MPI_Win_flush(peer, win);
        }
        t_acc = now_s() - t0;
        t0    = now_s();
        for (i = 0; i < opt.bench; ++i) {
            rc |= MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, peer,
                                   FOP_OFF, MPI_SUM, win);
            rc |= MPI_Win_flush(peer, win);
            if (fetched != i) {
                ++errors;
            }
        }
        t_fop = now_s() - t0;
        rc |= MPI_Win_unlock(peer, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        MPI_Win_sync(win);
        memcpy(counters, win_base, sizeof(counters));
        MPI_Win_unlock_all(win);
        errors += (counters[0] != opt.bench) + (counters[1] != opt.bench);
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    pass = (rc == MPI_SUCCESS) && (errors == 0);
    if (rank == 0) {
        printf("MPI atomics bench: atomic_mode=%s accumulate_us=%.2f "
               "fetch_and_op_us=%.2f ops=%ld RESULT %s\n",
               getenv("UCX_ATOMIC_MODE") ? getenv("UCX_ATOMIC_MODE") :
               "(UCX's default)", t_acc * 1e6 / opt.bench,
               t_fop * 1e6 / opt.bench, opt.bench, pass ? "PASS" : "FAIL");
        fflush(stdout);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return pass ? 0 : 1;
}

/* A target-only rank's part of the origin's fence epochs */
static int target_fences(long it)
{
    int rc = MPI_Win_fence(0, win);

    if ((it % GET_EVERY) == GET_EVERY - 1) {
        rc |= MPI_Win_fence(0, win);
    }
    return rc;
}

static void usage(void)
{
    printf("Usage: gda_ft_mpi_test [-n ITERS] [-t SECONDS] [-s MAX_PUT] "
           "[--fence] [--no-acc] [--no-p2p]\n"
           "                       [-F RANK -f ITER [-u ITER]] [-v]\n"
           "  -n ITERS     at least this many iterations (300)\n"
           "  -t SECONDS   and at least this long (0)\n"
           "  -s BYTES     largest put (2 MiB)\n"
           "  --fence      active target (MPI_Win_fence) instead of "
           "lock/flush/unlock\n"
           "  --no-acc     no MPI_Accumulate\n"
           "  --no-fop     no MPI_Fetch_and_op\n"
           "  --bench N    time N accumulates and N fetch-and-ops instead\n"
           "  --origin R   only rank R puts, accumulates and gets (the other\n"
           "               is a target only; fences stay collective)\n"
           "  --no-p2p     no MPI_Sendrecv\n"
           "  -F RANK -f I rank RANK takes its first soft port down at "
           "iteration I\n"
           "  -u I         ... and up again at iteration I\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"fence",  no_argument, NULL, 'e'},
        {"no-acc", no_argument, NULL, 'A'},
        {"no-fop", no_argument, NULL, 'Q'},
        {"bench",  required_argument, NULL, 'b'},
        {"no-p2p", no_argument, NULL, 'P'},
        {"origin", required_argument, NULL, 'O'},
        {"help",   no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    uint8_t *src, *exp, *getbuf, *sbuf, *rbuf;
    long it, total_errors, total_rma_failures, rma_failures = 0;
    long iters_done = 0;
    int pass;
    long puts = 0, accs = 0, fops = 0, gets = 0, msgs = 0;
    int size, c, s, done, local_done, stop = 0;
    int64_t one = 1, counter, fop_counter, fetched = 0;
    double start, t_end;
    size_t msz, i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    while ((c = getopt_long(argc, argv, "n:t:s:F:f:u:vh", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'n': opt.iters = strtol(optarg, NULL, 0); break;
        case 't': opt.min_time = strtod(optarg, NULL); break;
        case 's': opt.max_size = strtoul(optarg, NULL, 0); break;
        case 'F': opt.fault_rank = atoi(optarg); break;
        case 'f': opt.fault_at = strtol(optarg, NULL, 0); break;
        case 'u': opt.up_at = strtol(optarg, NULL, 0); break;
        case 'e': opt.fence = 1; break;
        case 'A': opt.acc = 0; break;
        case 'Q': opt.fop = 0; break;
        case 'b': opt.bench = strtol(optarg, NULL, 0); break;
        case 'P': opt.p2p = 0; break;
        case 'O': opt.origin = atoi(optarg); break;
        case 'v': opt.verbose = 1; break;
        case 'h':
            if (rank == 0) usage();
            MPI_Finalize();
            return 0;
        default:
            if (rank == 0) usage();
            MPI_Finalize();
            return 2;
        }
    }
    if (size != 2) {
        if (rank == 0) {
            printf("MPI failover test: RESULT FAIL: needs exactly 2 ranks, "
                   "got %d\n", size);
        }
        MPI_Finalize();
        return 2;
    }
    peer = 1 - rank;
    if (opt.max_size < 1) {
        opt.max_size = 1;
    }

    /* the window: counter, guards, slots */
    layout();
    MPI_Win_allocate(win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_base,
                     &win);
    memset(win_base, GUARD_BYTE, win_size);
    memset(win_base, 0, COUNTERS_LEN);
    for (s = 0; s < NSLOTS; ++s) {
        memset(win_base + slot_off[s], INIT_BYTE, slot_sizes[s]);
        mine.last_it[s]  = -1;
        mine.doubt_it[s] = -1;
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    src    = malloc(opt.max_size);
    exp    = malloc(opt.max_size > msg_sizes[NMSG - 1] ?
                    opt.max_size : msg_sizes[NMSG - 1]);
    getbuf = malloc(opt.max_size);
    sbuf   = malloc(msg_sizes[NMSG - 1]);
    rbuf   = malloc(msg_sizes[NMSG - 1]);
    if (!src || !exp || !getbuf || !sbuf || !rbuf) {
        printf("rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (opt.bench > 0) {
        return bench_atomics();
    }
    if (opt.fence) {
        MPI_Win_fence(0, win);
    }
    if (rank == 0) {
        printf("MPI failover test: 2 ranks, window of %zu bytes, %d slots "
               "(1 byte to %zu bytes), %s, accumulate %s, messages %s, at "
               "least %ld iterations and %.1f s\n", win_size, NSLOTS,
               slot_size(NSLOTS - 1), opt.fence ? "fence" :
               "lock/flush/unlock", opt.acc ? (opt.fop ? "and fetch-and-op "
               "on" : "on") : (opt.fop ? "off, fetch-and-op on" : "off"),
               opt.p2p ? "8 B to 4 MiB" : "off", opt.iters, opt.min_time);
        fflush(stdout);
    }

    start = now_s();
    for (it = 0;; ++it) {
        int rc = MPI_SUCCESS, locked = 0;

        /* both ranks agree to go on: at least iters and min_time */
        local_done = ((it >= opt.iters) && (now_s() - start >= opt.min_time))
                     || stop;
        MPI_Allreduce(&local_done, &done, 1, MPI_INT, MPI_LOR,
                      MPI_COMM_WORLD);
        if (done) {
            break;
        }

        if ((opt.fault_rank == rank) && (it == opt.fault_at)) {
            soft_port("down");
        }
        if ((opt.fault_rank == rank) && (it == opt.up_at)) {
            soft_port("up");
        }

        /* RMA: a put into the peer's slot and an increment of its counter;
         * a target-only rank joins the fences and nothing else */
        s = it % NSLOTS;
        if ((opt.origin >= 0) && (opt.origin != rank)) {
            if (opt.fence && (target_fences(it) != MPI_SUCCESS)) {
                printf("rank %d: ERROR MPI_Win_fence of iteration %ld "
                       "failed\n", rank, it);
                fflush(stdout);
                ++rma_failures;
                stop = 1;
            }
            goto rma_done;
        }
        fill(src, slot_size(s), rank, it, 0);
        /* Nothing follows a failed call but the unlock of a lock we hold:
         * Open MPI's osc ucx takes its accumulate lock by spinning on a
         * compare-and-swap until the lock word is free, and a lock or
         * release whose atomic was in doubt (applied or not) may have
         * left it set: the next accumulate would spin forever */
        if (!opt.fence) {
            rc = MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
            locked = (rc == MPI_SUCCESS);
        }
        RMA_CALL(rc, MPI_Put(src, slot_size(s), MPI_BYTE, peer, slot_off[s],
                             slot_size(s), MPI_BYTE, win));
        ++puts;
        if (opt.acc) {
            RMA_CALL(rc, MPI_Accumulate(&one, 1, MPI_INT64_T, peer, ACC_OFF,
                                        1, MPI_INT64_T, MPI_SUM, win));
            ++accs;
        }
        if (opt.fop) {
            RMA_CALL(rc, MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, peer,
                                          FOP_OFF, MPI_SUM, win));
            ++fops;
        }
        if (opt.fence) {
            FENCE_CALL(rc, win);
        } else {
            RMA_CALL(rc, MPI_Win_flush(peer, win));
        }
        /* the k-th increment returns k, whatever path carried it */
        if (opt.fop && (rc == MPI_SUCCESS) && (fetched != mine.fop_ok)) {
            printf("rank %d: ERROR MPI_Fetch_and_op of iteration %ld "
                   "returned %" PRId64 ", expected %ld (a value returned "
                   "twice or skipped)\n", rank, it, fetched, mine.fop_ok);
            fflush(stdout);
            ++errors;
        }
        /* read it back now and then */
        if ((it % GET_EVERY) == GET_EVERY - 1) {
            RMA_CALL(rc, MPI_Get(getbuf, slot_size(s), MPI_BYTE, peer,
                                 slot_off[s], slot_size(s), MPI_BYTE, win));
            if (opt.fence) {
                FENCE_CALL(rc, win);
            } else {
                RMA_CALL(rc, MPI_Win_flush(peer, win));
            }
            if (rc == MPI_SUCCESS) {
                check(getbuf, src, slot_size(s), "MPI_Get of the put", it);
            }
            ++gets;
        }
        if (locked && (MPI_Win_unlock(peer, win) != MPI_SUCCESS)) {
            rc = MPI_ERR_OTHER;
        }
        if (rc != MPI_SUCCESS) {
            /* the put and the increment of this epoch are in doubt */
            printf("rank %d: ERROR an RMA call of iteration %ld failed "
                   "(its put and accumulate are in doubt)\n", rank, it);
            fflush(stdout);
            ++rma_failures;
            mine.doubt_it[s] = it;
            mine.acc_doubt  += opt.acc;
            mine.fop_doubt  += opt.fop;
            stop = 1;   /* both ranks stop at the next agreement */
        } else {
            mine.last_it[s] = it;
            mine.acc_ok    += opt.acc;
            mine.fop_ok    += opt.fop;
        }
rma_done:

        /* point to point */
        if (opt.p2p) {
            msz = msg_sizes[it % NMSG];
            fill(sbuf, msz, rank, it, 1);
            MPI_Sendrecv(sbuf, msz, MPI_BYTE, peer, (int)(it & 0x7fff),
                         rbuf, msz, MPI_BYTE, peer, (int)(it & 0x7fff),
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            fill(exp, msz, peer, it, 1);
            check(rbuf, exp, msz, "message", it);
            ++msgs;
        }
        iters_done = it + 1;
        if (opt.verbose && ((it % 100) == 99)) {
            printf("rank %d: iteration %ld (%.2f s)\n", rank, it + 1,
                   now_s() - start);
            fflush(stdout);
        }
    }
    t_end = now_s();

    /* what the peer knows it wrote into our window */
    MPI_Sendrecv(&mine, sizeof(mine), MPI_BYTE, peer, 0x7ffe, &theirs,
                 sizeof(theirs), MPI_BYTE, peer, 0x7ffe, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);

    /* end the access epochs, then read the local window (no lock atomics:
     * MPI_MODE_NOCHECK) */
    if (opt.fence) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Win_sync(win);
    for (s = 0; s < NSLOTS; ++s) {
        check_slot(s, theirs.last_it[s], theirs.doubt_it[s], exp, getbuf);
        /* the part of the slot beyond -s is never written */
        for (i = slot_size(s); i < slot_sizes[s]; ++i) {
            if (win_base[slot_off[s] + i] != INIT_BYTE) {
                printf("rank %d: ERROR slot %d byte %zu written beyond the "
                       "put\n", rank, s, i);
                ++errors;
                break;
            }
        }
    }
    for (i = COUNTERS_LEN; i < win_size; ++i) {
        int in_slot = 0;

        for (s = 0; s < NSLOTS; ++s) {
            if ((i >= slot_off[s]) && (i < slot_off[s] + slot_sizes[s])) {
                in_slot = 1;
                i       = slot_off[s] + slot_sizes[s] - 1;
                break;
            }
        }
        if (!in_slot && (win_base[i] != GUARD_BYTE)) {
            printf("rank %d: ERROR guard byte at offset %zu is 0x%02x\n",
                   rank, i, win_base[i]);
            ++errors;
            break;
        }
    }
    memcpy(&counter, win_base + ACC_OFF, 8);
    memcpy(&fop_counter, win_base + FOP_OFF, 8);
    MPI_Win_unlock_all(win);
    /* exactly the peer's successful increments, plus any of those in doubt,
     * each at most once */
    check_counter("counter", counter, theirs.acc_ok, theirs.acc_doubt);
    check_counter("fetch-and-op counter", fop_counter, theirs.fop_ok,
                  theirs.fop_doubt);

    printf("rank %d: iterations=%ld puts=%ld accumulates=%ld "
           "fetch_and_ops=%ld gets=%ld messages=%ld counter=%" PRId64
           " fop_counter=%" PRId64 " rma_failures=%ld data_errors=%ld "
           "time=%.2f\n", rank, iters_done, puts, accs, fops, gets, msgs,
           counter, fop_counter, rma_failures, errors, t_end - start);
    fflush(stdout);

    MPI_Allreduce(&errors, &total_errors, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&rma_failures, &total_rma_failures, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    if (total_rma_failures != 0) {
        /* A failed lock or accumulate may have left the peer's lock word
         * set (an atomic in doubt may have been applied), and Open MPI's
         * osc ucx MPI_Win_free waits for the local lock word to clear:
         * it would wait forever. Report and abort instead. */
        if (rank == 0) {
            printf("MPI failover test: RESULT FAIL: iterations=%ld "
                   "rma_failures=%ld data_errors=%ld (aborting: the window "
                   "cannot be freed after a failed lock or accumulate)\n",
                   iters_done, total_rma_failures, total_errors);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_free(&win);
    free(src);
    free(exp);
    free(getbuf);
    free(sbuf);
    free(rbuf);
    pass = (total_errors == 0) && (total_rma_failures == 0);
    if (rank == 0) {
        printf("MPI failover test: RESULT %s: iterations=%ld "
               "rma_failures=%ld data_errors=%ld\n", pass ? "PASS" : "FAIL",
               iters_done, total_rma_failures, total_errors);
        fflush(stdout);
    }
    MPI_Finalize();
    return pass ? 0 : 1;
}
