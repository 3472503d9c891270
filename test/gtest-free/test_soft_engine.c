/*
 * The software HCA's engine thread: where it runs, how it hands datagrams
 * between ports, and when it checks the interfaces carrying the ports.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "soft_harness.h"
#include "gda_ft_soft_int.h"
#include "gda_ft_test.h"

#include <dirent.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_TASKS 256

typedef struct {
    cpu_set_t          cpus;    /* the opener binds itself to these */
    pid_t              tid;
    gda_ft_hca_dev_t  *dev;
    ucs_status_t       status;
    int                opened;
    int                done;    /* set by the test: the opener may leave */
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
} engine_opener_t;

static unsigned list_tasks(pid_t *tids, unsigned max)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *d;
    unsigned n = 0;

    GDA_FT_ASSERT(dir != NULL);
    while (((d = readdir(dir)) != NULL) && (n < max)) {
        if (d->d_name[0] != '.') {
            tids[n++] = atoi(d->d_name);
        }
    }
    closedir(dir);
    return n;
}

/* Whether thread tid of this process has the name comm */
static int task_named(pid_t tid, const char *comm)
{
    char path[64], name[32];
    int found = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fgets(name, sizeof(name), f) != NULL) {
        name[strcspn(name, "\n")] = '\0';
        found = !strcmp(name, comm);
    }
    fclose(f);
    return found;
}

static int tid_in(pid_t tid, const pid_t *tids, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        if (tids[i] == tid) {
            return 1;
        }
    }
    return 0;
}

/* Binds itself to one CPU, as UCX's performance tests bind their threads,
 * and opens the first soft device of the process */
static void *engine_opener(void *arg)
{
    engine_opener_t *o = arg;

    o->tid = (pid_t)syscall(SYS_gettid);
    if (sched_setaffinity(0, sizeof(o->cpus), &o->cpus) == 0) {
        o->status = gda_ft_hca_open("tsoft0", &o->dev);
    } else {
        o->status = UCS_ERR_IO_ERROR;
    }

    pthread_mutex_lock(&o->lock);
    o->opened = 1;
    pthread_cond_broadcast(&o->cond);
    while (!o->done) {
        pthread_cond_wait(&o->cond, &o->lock);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

/*
 * A thread bound to one CPU that opens the first device must not bind the
 * engine to that CPU too: the engine then shared it with that thread's busy
 * polling while the other CPUs idled, and UCX's test_uct_perf ran past its
 * watchdog on 2 cores. The engine runs where the process may run.
 */
GDA_FT_TEST(soft_engine, thread_runs_on_the_process_cpus_not_the_opener_cpu)
{
    pid_t before[MAX_TASKS], after[MAX_TASKS], engine_tid = 0;
    cpu_set_t process, engine;
    engine_opener_t o;
    unsigned nbefore, nafter, i;
    pthread_t thread;
    int cpu;

    GDA_FT_ASSERT_EQ(sched_getaffinity(0, sizeof(process), &process), 0);
    if (CPU_COUNT(&process) < 2) {
        GDA_FT_SKIP_UNAVAILABLE("needs 2 CPUs, the process may use %d",
                    CPU_COUNT(&process));
    }

    soft_test_env(1, "UCX_GDA_FT_SOFT_THREADS=1");
    memset(&o, 0, sizeof(o));
    pthread_mutex_init(&o.lock, NULL);
    pthread_cond_init(&o.cond, NULL);
    for (cpu = 0; !CPU_ISSET(cpu, &process); ++cpu) {
    }
    CPU_ZERO(&o.cpus);
    CPU_SET(cpu, &o.cpus);

    nbefore = list_tasks(before, MAX_TASKS);
    GDA_FT_ASSERT_EQ(pthread_create(&thread, NULL, engine_opener, &o), 0);
    pthread_mutex_lock(&o.lock);
    while (!o.opened) {
        pthread_cond_wait(&o.cond, &o.lock);
    }
    pthread_mutex_unlock(&o.lock);
    GDA_FT_ASSERT_OK(o.status);

    /* The engine is the thread named so that appeared with the device (a
     * sanitizer may start threads of its own) */
    nafter = list_tasks(after, MAX_TASKS);
    for (i = 0; i < nafter; ++i) {
        if ((after[i] != o.tid) && !tid_in(after[i], before, nbefore) &&
            task_named(after[i], "gda_ft_soft0")) {
            GDA_FT_ASSERT_EQ(engine_tid, 0);
            engine_tid = after[i];
        }
    }
    GDA_FT_ASSERT_NE(engine_tid, 0);

    GDA_FT_ASSERT_EQ(sched_getaffinity(engine_tid, sizeof(engine), &engine),
                     0);
    if (!CPU_EQUAL(&engine, &process)) {
        GDA_FT_FAIL("engine thread %d may run on %d CPU(s), the process on "
                    "%d: it took the affinity of the thread that opened "
                    "the device (bound to CPU %d)", engine_tid,
                    CPU_COUNT(&engine), CPU_COUNT(&process), cpu);
    }


    pthread_mutex_lock(&o.lock);
    o.done = 1;
    pthread_cond_broadcast(&o.cond);
    pthread_mutex_unlock(&o.lock);
    pthread_join(thread, NULL);
    gda_ft_hca_close(o.dev);
    pthread_cond_destroy(&o.cond);
    pthread_mutex_destroy(&o.lock);
}

/*
 * LOOPBACK: between two soft HCAs of one process the datagrams skip the
 * kernel by default and go through it with LOOPBACK=n; the bytes, the
 * packet counts and the engine's stats are the same either way.
 */
/* Whether a thread of this process has the name comm */
static int thread_named(const char *comm)
{
    pid_t tids[MAX_TASKS];
    unsigned i, n;

    n = list_tasks(tids, MAX_TASKS);
    for (i = 0; i < n; ++i) {
        if (task_named(tids[i], comm)) {
            return 1;
        }
    }
    return 0;
}

/* One signalled write of len bytes from p's a to its b, its bytes
 * checked */
static void engine_test_write(soft_pair_t *p, size_t len, int seed)
{
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    gda_ft_dev_cqe_info_t info;
    gda_ft_hca_mr_t *smr, *dmr;
    uint16_t idx;

    soft_fill(src, len, seed);
    smr = soft_mr(&p->a, src, len, 0);
    dmr = soft_mr(&p->b, dst, len, GDA_FT_HCA_ACCESS_REMOTE_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&p->a.sq, (uintptr_t)src,
                                               smr->lkey, len,
                                               (uintptr_t)dst, dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&p->a);
    soft_ep_wait_send(&p->a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_MEM_EQ(dst, src, len);
    gda_ft_hca_mr_dereg(smr);
    gda_ft_hca_mr_dereg(dmr);
    free(src);
    free(dst);
}

static void loopback_write(const char *env, int expect_loopback,
                           unsigned expect_threads)
{
    size_t len = 256 * 1024;
    gda_ft_soft_port_stats_t tx, rx;
    gda_ft_soft_engine_stats_t es;
    char reply[4096];
    soft_pair_t p;

    soft_pair_init(&p, env, NULL);
    engine_test_write(&p, len, 3);

    tx = soft_port_stats(p.dev0, 1);
    rx = soft_port_stats(p.dev1, 1);
    /* 64 packets of 4 KiB out, their ACKs back */
    GDA_FT_ASSERT(rx.rx_pkts >= len / 4096);
    GDA_FT_ASSERT_EQ(rx.rx_pkts, tx.tx_pkts);
    GDA_FT_ASSERT_EQ(rx.rx_loopback, expect_loopback ? rx.rx_pkts : 0);
    GDA_FT_ASSERT_EQ(tx.rx_loopback, expect_loopback ? tx.rx_pkts : 0);

    gda_ft_soft_engine_stats(&es);
    GDA_FT_ASSERT_EQ(es.workers, expect_threads);
    GDA_FT_ASSERT(thread_named((expect_threads > 1) ? "gda_ft_soft1" :
                                                      "gda_ft_soft0"));
    GDA_FT_ASSERT(!thread_named((expect_threads > 1) ? "gda_ft_soft2" :
                                                       "gda_ft_soft1"));
    GDA_FT_ASSERT(es.passes > 0);
    GDA_FT_ASSERT(es.max_pass_ns > 0);
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_exec("stats", reply, sizeof(reply)));
    GDA_FT_ASSERT(strstr(reply, "engine threads ") != NULL);
    GDA_FT_ASSERT(strstr(reply, expect_loopback ? "loopback 64" :
                                                  "loopback 0\n") != NULL);
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_engine, loopback_between_ports_of_one_process)
{
    loopback_write("UCX_GDA_FT_SOFT_THREADS=1", 1, 1);
}

GDA_FT_TEST(soft_engine, loopback_off_goes_through_the_kernel)
{
    setenv("UCX_GDA_FT_SOFT_THREADS", "1", 1);
    loopback_write("UCX_GDA_FT_SOFT_LOOPBACK=n", 0, 1);
}

/* THREADS=2: each of the two devices has an engine thread of its own, and
 * the write goes from one to the other as with one */
GDA_FT_TEST(soft_engine, thread_per_device_hands_datagrams_across)
{
    loopback_write("UCX_GDA_FT_SOFT_THREADS=2", 1, 2);
}

GDA_FT_TEST(soft_engine, thread_per_device_through_the_kernel)
{
    setenv("UCX_GDA_FT_SOFT_THREADS", "2", 1);
    loopback_write("UCX_GDA_FT_SOFT_LOOPBACK=n", 0, 2);
}


/*
 * RX_BUDGET: one engine thread, the datagrams between its two devices
 * through its own queues, and a sender that puts a whole 1 MiB write (256
 * packets, TX_BUDGET=256) out in one pass: the next pass finds all of
 * them waiting, and takes no more than the budget from the port.
 */
static void rx_budget_write(const char *budget, unsigned expect_max)
{
    gda_ft_soft_engine_stats_t es;
    soft_pair_t p;

    setenv("UCX_GDA_FT_SOFT_THREADS", "1", 1);
    setenv("UCX_GDA_FT_SOFT_TX_BUDGET", "256", 1);
    setenv("UCX_GDA_FT_SOFT_RX_BUDGET", budget, 1);
    soft_pair_init(&p, "UCX_GDA_FT_SOFT_LOOPBACK=y", NULL);
    engine_test_write(&p, 1024 * 1024, 5);

    gda_ft_soft_engine_stats(&es);
    printf("RX_BUDGET=%s: the most datagrams from a port in a pass %" PRIu64
           "\n", budget, es.max_port_rx);
    if (expect_max != 0) {
        GDA_FT_ASSERT_EQ(es.max_port_rx, expect_max);
    } else {
        GDA_FT_ASSERT(es.max_port_rx > 64);
    }
    soft_pair_fini(&p);
}

GDA_FT_TEST(soft_engine, rx_budget_bounds_a_pass)
{
    rx_budget_write("32", 32);
}

GDA_FT_TEST(soft_engine, rx_budget_of_256_takes_a_burst_at_once)
{
    rx_budget_write("256", 0);
}

/* Whether this process may have the kernel's link notices */
static int rtnetlink_available(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

    if (fd < 0) {
        return 0;
    }
    close(fd);
    return 1;
}

static uint64_t engine_link_checks(void)
{
    gda_ft_soft_engine_stats_t es;

    gda_ft_soft_engine_stats(&es);
    return es.link_checks;
}

/* A pair of soft devices and an 8-byte word that a writes into b */
typedef struct {
    soft_pair_t      p;
    uint64_t         word;
    uint64_t         target;
    gda_ft_hca_mr_t *smr;
    gda_ft_hca_mr_t *dmr;
} word_pair_t;

static void word_pair_init(word_pair_t *w, const char *env)
{
    soft_pair_init(&w->p, env, NULL);
    w->word   = 0;
    w->target = 0;
    w->smr    = soft_mr(&w->p.a, &w->word, sizeof(w->word), 0);
    w->dmr    = soft_mr(&w->p.b, &w->target, sizeof(w->target),
                        GDA_FT_HCA_ACCESS_REMOTE_WRITE);
}

/* The next value of the word, written and completed */
static void word_pair_write(word_pair_t *w)
{
    gda_ft_dev_cqe_info_t info;
    uint16_t idx;

    ++w->word;
    GDA_FT_ASSERT_EQ(gda_ft_sq_post_rdma_write(&w->p.a.sq, (uintptr_t)&w->word,
                                               w->smr->lkey, sizeof(w->word),
                                               (uintptr_t)&w->target,
                                               w->dmr->rkey,
                                               GDA_FT_WQE_SIGNALED, &idx),
                     GDA_FT_DEV_OK);
    soft_ep_ring(&w->p.a);
    soft_ep_wait_send(&w->p.a, &info, 5000);
    GDA_FT_ASSERT_EQ(info.opcode, GDA_FT_MLX5_CQE_REQ);
    GDA_FT_ASSERT_EQ(w->target, w->word);
}

/*
 * The link check (a netlink dump of every address, in the engine's thread
 * between passes) runs when the kernel says a link or an address changed,
 * not every LINK_CHECK: with 5 ms, 300 ms of traffic made about 60 before.
 */
GDA_FT_TEST(soft_engine, link_check_waits_for_the_kernels_notice)
{
    word_pair_t w;
    uint64_t checks;
    double end;

    if (!rtnetlink_available()) {
        GDA_FT_SKIP_UNAVAILABLE("no NETLINK_ROUTE socket here: the link "
                                "check runs every LINK_CHECK");
    }
    word_pair_init(&w, "UCX_GDA_FT_SOFT_LINK_CHECK=5ms");
    for (end = soft_now_sec() + 0.3; soft_now_sec() < end;) {
        word_pair_write(&w);
    }
    checks = engine_link_checks();
    printf("%" PRIu64 " writes, %" PRIu64 " link checks in 0.3 s\n", w.word,
           checks);
    GDA_FT_ASSERT(w.word > 0);
    GDA_FT_ASSERT(checks >= 1);   /* the first, at the start */
    GDA_FT_ASSERT(checks <= 4);   /* a few notices of other interfaces */
    soft_pair_fini(&w.p);
}

static void loopback_set_up(int up)
{
    struct ifreq ifr = {{{0}}};
    int fd           = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    GDA_FT_ASSERT(fd >= 0);
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    GDA_FT_ASSERT_EQ(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
    ifr.ifr_flags = up ? (ifr.ifr_flags | IFF_UP) : (ifr.ifr_flags & ~IFF_UP);
    GDA_FT_ASSERT_EQ(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
    close(fd);
}

/* Seconds until port 1 of dev is in state, at most timeout; -1: never */
static double port_reaches(gda_ft_hca_dev_t *dev,
                           gda_ft_hca_port_state_t state, double timeout)
{
    double start = soft_now_sec();
    gda_ft_hca_port_attr_t attr;

    do {
        GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
        if (attr.state == state) {
            return soft_now_sec() - start;
        }
        usleep(1000);
    } while (soft_now_sec() - start < timeout);
    return -1;
}

/*
 * The interface carrying a port goes down and up (in a network namespace
 * of the test's own, its "lo"), with LINK_CHECK at 100 s: the port follows
 * on the kernel's notice (at once, or 10 ms after the check before it),
 * where it used to wait for the next periodic check.
 */
GDA_FT_TEST(soft_engine, port_follows_its_interface_on_the_kernels_notice)
{
    gda_ft_hca_dev_t *dev;
    double start, down, up;

    if (unshare(CLONE_NEWNET) != 0) {
        if (geteuid() != 0) {
            GDA_FT_SKIP_UNAVAILABLE("a network namespace of its own needs "
                                    "root / CAP_SYS_ADMIN: %m");
        }
        GDA_FT_SKIP("cannot make a network namespace as root: %m");
    }
    if (!rtnetlink_available()) {
        GDA_FT_SKIP_UNAVAILABLE("no NETLINK_ROUTE socket here");
    }
    loopback_set_up(1);
    soft_test_env(1, "UCX_GDA_FT_SOFT_LINK_CHECK=100s");
    dev = soft_open("tsoft0");   /* 127.0.0.1, on "lo" */
    for (start = soft_now_sec(); engine_link_checks() == 0;) {
        if (soft_now_sec() - start > 5) {
            GDA_FT_FAIL("no link check at the engine's start");
        }
        usleep(1000);
    }
    GDA_FT_ASSERT(port_reaches(dev, GDA_FT_HCA_PORT_ACTIVE, 0) >= 0);

    loopback_set_up(0);
    down = port_reaches(dev, GDA_FT_HCA_PORT_DOWN, 5);
    loopback_set_up(1);
    up   = port_reaches(dev, GDA_FT_HCA_PORT_ACTIVE, 5);
    printf("port down %.1f ms after its interface, up again after %.1f ms; "
           "%" PRIu64 " link checks\n", down * 1e3, up * 1e3,
           engine_link_checks());
    GDA_FT_ASSERT(down >= 0);
    GDA_FT_ASSERT(up >= 0);
    gda_ft_hca_close(dev);
}

/* PASS_CPU_TIME: the longest gap's CPU time is measured, no longer than
 * the gap; a gap in which the engine thread sleeps 20 ms on a lock the
 * test holds (a verbs call takes the engine's lock) is counted as
 * blocked; without the setting, nothing is measured */
static void pass_cpu_time(const char *env, int measured)
{
    gda_ft_soft_engine_stats_t es;
    word_pair_t w;
    unsigned i;

    setenv("UCX_GDA_FT_SOFT_SPIN_TIME", "10s", 1);   /* no sleep: a gap */
    word_pair_init(&w, env);
    for (i = 0; i < 200; ++i) {
        word_pair_write(&w);
        if (i == 100) {
            /* the engine is awake and spinning (it had work): a writer
             * holds its lock for 20 ms, and it waits for it */
            gda_ft_soft_engine_lock();
            usleep(20000);
            gda_ft_soft_engine_unlock();
        }
    }
    gda_ft_soft_engine_stats(&es);
    printf("longest gap %.1f us, its CPU time %.1f us; %" PRIu64 " gaps "
           "over %.0f us: mostly switched out %" PRIu64 ", blocked %" PRIu64
           ", stolen %" PRIu64 "\n", es.max_gap_ns / 1e3,
           es.max_gap_cpu_ns / 1e3, es.long_gaps,
           GDA_FT_SOFT_LONG_GAP_NS / 1e3, es.long_gaps_switched,
           es.long_gaps_blocked, es.long_gaps_stolen);
    GDA_FT_ASSERT(es.max_gap_ns >= 20000000);
    if (measured) {
        /* the blocked 20 ms: the longest gap, nearly no CPU in it */
        GDA_FT_ASSERT(es.max_gap_cpu_ns < es.max_gap_ns / 2);
        GDA_FT_ASSERT(es.long_gaps_blocked >= 1);
        GDA_FT_ASSERT(es.long_gaps >= es.long_gaps_switched +
                                      es.long_gaps_blocked +
                                      es.long_gaps_stolen);
    } else {
        GDA_FT_ASSERT_EQ(es.max_gap_cpu_ns, 0);
        GDA_FT_ASSERT_EQ(es.long_gaps, 0);
    }
    soft_pair_fini(&w.p);
}

GDA_FT_TEST(soft_engine, pass_cpu_time_tells_a_blocked_gap)
{
    pass_cpu_time("UCX_GDA_FT_SOFT_PASS_CPU_TIME=y", 1);
}

GDA_FT_TEST(soft_engine, pass_cpu_time_off_by_default)
{
    pass_cpu_time("UCX_GDA_FT_SOFT_THREADS=1", 0);
}

typedef struct {
    gda_ft_hca_qp_t *qp;
    uint32_t         rq_psn;
    int              done;     /* atomic */
} query_arg_t;

static void *query_run(void *arg)
{
    query_arg_t *q = (query_arg_t*)arg;
    gda_ft_hca_qp_query_attr_t attr;

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(q->qp, &attr));
    q->rq_psn = attr.rq_psn;
    __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A QP's PSNs are read without waiting for the engine threads' passes,
 * which hold the engine's lock shared (a guardian reading its target
 * QPs every pass waited for every pass: 15-20 ms a pass under 512 warps
 * on a GPU); after a move to ERR they are final */
GDA_FT_TEST(soft_engine, qp_query_waits_for_no_pass)
{
    query_arg_t q = {0};
    soft_pair_t p;
    pthread_t th;
    double until;
    int done;

    soft_pair_init(&p, NULL, NULL);
    q.qp = p.b.qp;
    pthread_rwlock_rdlock(&gda_ft_soft_engine.lock);   /* a pass */
    GDA_FT_ASSERT_EQ(pthread_create(&th, NULL, query_run, &q), 0);
    until = soft_now_sec() + 2;
    while (!(done = __atomic_load_n(&q.done, __ATOMIC_ACQUIRE)) &&
           (soft_now_sec() < until)) {
        usleep(1000);
    }
    pthread_rwlock_unlock(&gda_ft_soft_engine.lock);
    pthread_join(th, NULL);
    GDA_FT_ASSERT(done);
    GDA_FT_ASSERT_EQ(q.rq_psn, 0x123);   /* soft_default_params */
    soft_pair_fini(&p);
}
