/*
 * Software HCA engine: worker threads, each serving its own soft devices.
 *
 * A worker receives its ports' datagrams, reads its QPs' doorbell records,
 * runs their requester and responder state machines and retransmission
 * timers. It spins while there is traffic and sleeps in epoll_wait() when
 * the whole engine is idle: CPU posters wake it through its eventfd. It
 * never sleeps while any of its QPs has rings a GPU posts into (a kernel
 * cannot write an eventfd) or a deadline shorter than waking it takes
 * (gda_ft_soft_int.h, awake_qps). Worker 0 also serves the engine's own
 * work: the control socket, the fault schedule and the link check.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

gda_ft_soft_engine_t gda_ft_soft_engine = {
    .ctl_fd  = -1,
    .link_fd = -1
};

static void UCS_F_CTOR gda_ft_soft_engine_ctor(void)
{
    pthread_rwlockattr_t attr;

    /* Writers first: the workers take the lock shared for one pass after
     * another, and a verbs call must not wait for a gap between them */
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gda_ft_soft_engine.lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    ucs_list_head_init(&gda_ft_soft_engine.devs);
    kh_init_inplace(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash);
    kh_init_inplace(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash);
}

static void UCS_F_DTOR gda_ft_soft_engine_dtor(void)
{
    kh_destroy_inplace(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash);
    kh_destroy_inplace(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash);
    pthread_rwlock_destroy(&gda_ft_soft_engine.lock);
}

/*
 * A link failure loses what is on the wire, as on hardware: a datagram that
 * reached the port before it went down is handled (an HCA would have done so
 * at once; the engine thread may have been descheduled), and what it makes
 * the port send leaves too (gda_ft_soft_tx). Without an arrival time, or a
 * time of the failure, it is dropped.
 */
static int gda_ft_soft_rx_port_up(gda_ft_soft_port_t *port,
                                  uint64_t arrival_ns)
{
    if (gda_ft_soft_port_is_up(port)) {
        return 1;
    }
    if ((port->down_ns != 0) && (arrival_ns != 0) &&
        (arrival_ns < port->down_ns)) {
        port->dev->worker->late_port = port;
        return 1;
    }
    return 0;
}

static void gda_ft_soft_rx(gda_ft_soft_port_t *port,
                           const struct sockaddr_in *src, const void *buf,
                           size_t len, uint64_t arrival_ns)
{
    gda_ft_roce_parse_result_t result;
    gda_ft_roce_pkt_t pkt;
    gda_ft_soft_qp_t *qp;

    ++port->stats.rx_pkts;
    port->stats.rx_bytes += len;

    if (!gda_ft_soft_rx_port_up(port, arrival_ns)) {
        ++port->stats.fault_dropped;
        return;
    }

    result = gda_ft_roce_parse(buf, len, &pkt);
    if (result == GDA_FT_ROCE_PARSE_BAD_ICRC) {
        ++port->stats.rx_bad_icrc;
        return;
    } else if (result != GDA_FT_ROCE_PARSE_OK) {
        ++port->stats.rx_malformed;
        return;
    }

    qp = gda_ft_soft_qp_lookup(pkt.dqpn);
    if ((qp == NULL) || (gda_ft_soft_qp_port(qp) != port)) {
        ++port->stats.rx_bad_qpn;
        return;
    }

    if ((qp->super.state != GDA_FT_HCA_QP_RTR) &&
        (qp->super.state != GDA_FT_HCA_QP_RTS)) {
        ++port->stats.rx_bad_state;
        return;
    }

    if ((src->sin_addr.s_addr != qp->remote_ip) ||
        (src->sin_port != port->addr.sin_port)) {
        ++port->stats.rx_bad_src;
        return;
    }

    if (gda_ft_roce_opcode_is_response(pkt.opcode)) {
        gda_ft_soft_req_handle_response(qp, &pkt);
    } else {
        gda_ft_soft_resp_handle_request(qp, &pkt);
    }
}

/* The kernel's arrival time of a datagram (SO_TIMESTAMPNS), or 0 */
static uint64_t gda_ft_soft_rx_arrival_ns(struct msghdr *msg)
{
    struct cmsghdr *cmsg;
    struct timespec ts;

    for (cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
         cmsg = CMSG_NXTHDR(msg, cmsg)) {
        if ((cmsg->cmsg_level == SOL_SOCKET) &&
            (cmsg->cmsg_type == SCM_TIMESTAMPNS)) {
            memcpy(&ts, CMSG_DATA(cmsg), sizeof(ts));
            return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
        }
    }
    return 0;
}

/*
 * Handles up to one batch of the datagrams from ports of this process.
 * What they make this port send may land in this very queue, behind them.
 */
static int gda_ft_soft_rx_loopback(gda_ft_soft_port_t *port)
{
    gda_ft_soft_worker_t *worker = port->dev->worker;
    gda_ft_soft_loopback_pkt_t *lb;
    unsigned head;
    int count;

    for (count = 0; count < GDA_FT_SOFT_RX_BATCH; ++count) {
        head = port->lb_head;
        if (head == __atomic_load_n(&port->lb_tail, __ATOMIC_ACQUIRE)) {
            break;
        }
        lb = &port->lb_queue[head % GDA_FT_SOFT_LOOPBACK_QUEUE];
        ++port->stats.rx_loopback;
        gda_ft_soft_rx(port, &lb->src, lb->data, lb->len, lb->arrival_ns);
        worker->late_port = NULL;
        /* the slot is free for senders once the datagram is handled */
        __atomic_store_n(&port->lb_head, head + 1, __ATOMIC_RELEASE);
        __atomic_fetch_sub(&worker->loopback_queued, 1, __ATOMIC_RELAXED);
    }
    return count;
}

/* Receives up to one batch on a port; returns the number of datagrams */
static int gda_ft_soft_rx_port(gda_ft_soft_port_t *port)
{
    gda_ft_soft_rx_bufs_t *rx_bufs = port->dev->worker->rx_bufs;
    uint8_t (*bufs)[GDA_FT_SOFT_PKT_MAX] = rx_bufs->data;
    struct sockaddr_in *srcs             = rx_bufs->srcs;
    uint8_t (*cmsgs)[CMSG_SPACE(sizeof(struct timespec))] = rx_bufs->cmsgs;
    struct mmsghdr msgs[GDA_FT_SOFT_RX_BATCH];
    struct iovec iovs[GDA_FT_SOFT_RX_BATCH];
    int i, count;

    if (port->fd < 0) {
        return 0;
    }

    memset(msgs, 0, sizeof(msgs));
    for (i = 0; i < GDA_FT_SOFT_RX_BATCH; ++i) {
        iovs[i].iov_base            = bufs[i];
        iovs[i].iov_len             = sizeof(bufs[i]);
        msgs[i].msg_hdr.msg_iov     = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen  = 1;
        msgs[i].msg_hdr.msg_name    = &srcs[i];
        msgs[i].msg_hdr.msg_namelen = sizeof(srcs[i]);
        msgs[i].msg_hdr.msg_control    = cmsgs[i];
        msgs[i].msg_hdr.msg_controllen = sizeof(cmsgs[i]);
    }

    count = recvmmsg(port->fd, msgs, GDA_FT_SOFT_RX_BATCH, MSG_DONTWAIT,
                     NULL);
    if (count <= 0) {
        return 0;
    }

    for (i = 0; i < count; ++i) {
        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            ++port->stats.rx_malformed;   /* larger than any valid packet */
            continue;
        }
        gda_ft_soft_rx(port, &srcs[i], bufs[i], msgs[i].msg_len,
                       gda_ft_soft_rx_arrival_ns(&msgs[i].msg_hdr));
        port->dev->worker->late_port = NULL;
    }
    return count;
}

static void gda_ft_soft_engine_max(uint64_t *max, uint64_t value)
{
    if (value > *max) {
        __atomic_store_n(max, value, __ATOMIC_RELAXED);
    }
}

/* Receives with rx (a batch at most per call) until a batch is not full,
 * or RX_BUDGET datagrams came: the peer may send faster than one batch per
 * pass. Returns the number of datagrams. */
static int gda_ft_soft_rx_drain(gda_ft_soft_port_t *port,
                                int (*rx)(gda_ft_soft_port_t *port))
{
    unsigned budget = gda_ft_soft_engine.config.rx_budget;
    int count, total = 0;

    do {
        count  = rx(port);
        total += count;
    } while ((count == GDA_FT_SOFT_RX_BATCH) && (total < budget));
    gda_ft_soft_engine_max(&port->dev->worker->stats.max_port_rx, total);
    /* what the datagrams wrote into GPU memory is in place before the
     * worker goes on: nothing it wrote waits for its next send */
    gda_ft_soft_mem_flush();
    return total;
}

static uint64_t gda_ft_soft_rusage_cpu_ns(const struct rusage *ru)
{
    return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
           (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
}

/* PASS_CPU_TIME: what the thread did in a gap of gap_ns since its last
 * pass began (its rusage then in worker->last_ru) */
static void gda_ft_soft_worker_count_gap_cpu(gda_ft_soft_worker_t *worker,
                                             uint64_t gap_ns, int counted)
{
    gda_ft_soft_engine_stats_t *stats = &worker->stats;
    struct rusage ru;
    uint64_t cpu_ns;
    uint64_t *why;

    getrusage(RUSAGE_THREAD, &ru);
    if (counted) {
        cpu_ns = gda_ft_soft_rusage_cpu_ns(&ru) -
                 gda_ft_soft_rusage_cpu_ns(&worker->last_ru);
        if (gap_ns >= stats->max_gap_ns) {
            __atomic_store_n(&stats->max_gap_cpu_ns, cpu_ns,
                             __ATOMIC_RELAXED);
        }
        if (gap_ns >= GDA_FT_SOFT_LONG_GAP_NS) {
            __atomic_store_n(&stats->long_gaps, stats->long_gaps + 1,
                             __ATOMIC_RELAXED);
            if ((cpu_ns * 2) < gap_ns) {
                /* blocked first: a thread that waits for a lock on a busy
                 * machine may wait for a CPU after it, too */
                why = (ru.ru_nvcsw != worker->last_ru.ru_nvcsw) ?
                      &stats->long_gaps_blocked :
                      (ru.ru_nivcsw != worker->last_ru.ru_nivcsw) ?
                      &stats->long_gaps_switched : &stats->long_gaps_stolen;
                __atomic_store_n(why, *why + 1, __ATOMIC_RELAXED);
            }
        }
    }
    worker->last_ru = ru;
}

/* Counts the gap since the previous pass (none after a sleep) */
static void gda_ft_soft_worker_count_pass(gda_ft_soft_worker_t *worker,
                                          uint64_t now)
{
    gda_ft_soft_engine_stats_t *stats = &worker->stats;
    uint64_t gap                      = 0;
    uint64_t limit                    = 16000;
    unsigned bucket                   = 0;

    __atomic_store_n(&stats->passes, stats->passes + 1, __ATOMIC_RELAXED);
    if (worker->last_pass_ns != 0) {
        gap = now - worker->last_pass_ns;
        while ((bucket < GDA_FT_SOFT_ENGINE_GAP_BUCKETS - 1) &&
               (gap >= limit)) {
            ++bucket;
            limit *= 4;
        }
        __atomic_store_n(&stats->gaps[bucket], stats->gaps[bucket] + 1,
                         __ATOMIC_RELAXED);
    }
    if (gda_ft_soft_engine.config.pass_cpu_time) {
        gda_ft_soft_worker_count_gap_cpu(worker, gap,
                                         worker->last_pass_ns != 0);
    }
    if (gap != 0) {
        gda_ft_soft_engine_max(&stats->max_gap_ns, gap);
    }
    __atomic_store_n(&worker->last_pass_ns, now, __ATOMIC_RELAXED);
}

/* Ends part `part` of the pass, which began at *start; returns its time */
static uint64_t gda_ft_soft_worker_count_part(gda_ft_soft_worker_t *worker,
                                              unsigned part, uint64_t *start)
{
    uint64_t now  = gda_ft_soft_now_ns();
    uint64_t took = now - *start;

    gda_ft_soft_engine_max(&worker->stats.max_part_ns[part], took);
    *start = now;
    return took;
}

/* A pass of LONG_PASS or more, reported (diag) with what its GPU copies
 * took */
static void gda_ft_soft_worker_report_pass(gda_ft_soft_worker_t *worker,
                                           uint64_t took_ns,
                                           const gda_ft_soft_engine_stats_t
                                           *before)
{
    gda_ft_soft_engine_stats_t after;

    gda_ft_soft_mem_cuda_stats(&after);
    ucs_diag("soft HCA: engine thread %u made a pass of %.3f ms "
             "(receive %.3f ms, %u datagrams; QPs %.3f ms, %u of them "
             "sending): %lu waits for GPU copies, %.3f ms; %lu copies "
             "queued, %.3f ms in the calls (every engine thread's)",
             worker->index, took_ns / 1e6, worker->pass_rx_ns / 1e6,
             worker->pass_rx, worker->pass_qps_ns / 1e6, worker->tx_senders,
             (unsigned long)(after.cuda_waits - before->cuda_waits),
             (after.cuda_wait_ns - before->cuda_wait_ns) / 1e6,
             (unsigned long)(after.cuda_copies - before->cuda_copies),
             (after.cuda_copy_ns - before->cuda_copy_ns) / 1e6);
}

/* One pass over the worker's devices and QPs, with the engine lock shared;
 * returns nonzero when work was done */
static int gda_ft_soft_worker_progress(gda_ft_soft_worker_t *worker,
                                       uint64_t now, uint64_t *next_timer)
{
    const gda_ft_soft_config_t *engine_config = &gda_ft_soft_engine.config;
    unsigned quantum, left, senders;
    uint64_t part_start = now;
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_qp_t *qp;
    unsigned p;
    int work = 0;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        if (dev->worker != worker) {
            continue;
        }
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            /* Drain more than one batch: the peer may send faster than one
             * batch per pass */
            work += gda_ft_soft_rx_drain(&dev->ports[p],
                                         gda_ft_soft_rx_port);
            work += gda_ft_soft_rx_drain(&dev->ports[p],
                                         gda_ft_soft_rx_loopback);
        }
    }

    worker->pass_rx    = work;
    worker->pass_rx_ns = gda_ft_soft_worker_count_part(worker, 0,
                                                       &part_start);

    /* The pass's datagrams are shared by the QPs that sent in the last
     * one: a pass stays about TX_BUDGET datagrams long however many QPs
     * are busy, so that the acknowledgements of each come within a few
     * short passes (a replay onto four busy QPs met its first completion
     * 0.5 ms after its doorbell with 32 datagrams each, 0.18 ms with 4).
     * A burst also stays small enough for the kernel to deliver at once
     * over loopback UDP. */
    quantum = ucs_max(engine_config->tx_budget /
                      ucs_max(worker->tx_senders, 1),
                      GDA_FT_SOFT_TX_QUANTUM_MIN);
    senders = 0;
    *next_timer = UINT64_MAX;
    ucs_list_for_each(qp, &worker->qps, list) {
        left        = quantum;
        gda_ft_soft_resp_flush_ack(qp);
        work       += gda_ft_soft_resp_progress(qp);
        work       += gda_ft_soft_req_progress(qp, now, &left);
        senders    += (left != quantum);
        *next_timer = ucs_min(*next_timer, gda_ft_soft_qp_next_timer(qp));
    }
    worker->tx_senders = senders;
    /* the messages the QPs read ahead, in one batch */
    gda_ft_soft_mem_reads_submit();

    worker->pass_qps_ns = gda_ft_soft_worker_count_part(worker, 1,
                                                        &part_start);

    gda_ft_soft_delayed_progress(worker, now);
    if (!ucs_list_is_empty(&worker->delayed)) {
        *next_timer = ucs_min(*next_timer, ucs_list_head(
                &worker->delayed, gda_ft_soft_delayed_t, list)->due);
    }

    /* nothing the pass queued outlives it: atomics on device memory hold
     * their words' locks until they have run */
    gda_ft_soft_mem_flush();

    /* queued for a port of this worker by a timer, a command or another
     * worker: the kernel would wake a sleeping engine for it; nothing else
     * will */
    return work + (__atomic_load_n(&worker->loopback_queued,
                                   __ATOMIC_RELAXED) != 0);
}

/*
 * The engine's own work, which worker 0 does after its passes, with the
 * engine lock exclusive since it changes any device's ports: the fault
 * schedule, the control socket and the link check. It takes the lock only
 * when one of them has something to do.
 */
static void gda_ft_soft_engine_housekeeping(gda_ft_soft_worker_t *worker,
                                            uint64_t now)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    uint64_t part_start          = now;
    struct pollfd fds[2]         = {{.fd = engine->ctl_fd, .events = POLLIN},
                                    {.fd = engine->link_fd, .events = POLLIN}};
    int ready = 0;

    /* a system call: not every pass (60 000 a second under load) */
    if (((engine->ctl_fd >= 0) || (engine->link_fd >= 0)) &&
        ((now - engine->last_fd_poll_ns) >= GDA_FT_SOFT_FD_POLL_NS)) {
        engine->last_fd_poll_ns = now;
        ready = poll(fds, 2, 0) > 0;   /* a negative fd is left out */
    }
    if (!ready && !gda_ft_soft_sched_due(now) &&
        !gda_ft_soft_link_check_due(now)) {
        return;
    }
    if (fds[1].revents != 0) {
        gda_ft_soft_link_watch_read();
    }

    gda_ft_soft_engine_lock();
    gda_ft_soft_sched_progress(now);
    gda_ft_soft_ctl_progress();
    gda_ft_soft_link_check(now);
    gda_ft_soft_engine_unlock();
    gda_ft_soft_worker_count_part(worker, 2, &part_start);
}

static void gda_ft_soft_worker_sleep(gda_ft_soft_worker_t *worker,
                                     uint64_t now, uint64_t next_timer)
{
    gda_ft_soft_config_t *config = &gda_ft_soft_engine.config;
    struct epoll_event events[8];
    uint64_t sleep_ns, value;
    struct timespec ts;
    int i, n;

    sleep_ns = (uint64_t)(config->idle_poll * 1e9);
    if (next_timer != UINT64_MAX) {
        sleep_ns = ucs_min(sleep_ns, (next_timer > now) ?
                                     (next_timer - now) : 0);
    }
    ts.tv_sec  = sleep_ns / 1000000000ull;
    ts.tv_nsec = sleep_ns % 1000000000ull;

    n = epoll_pwait2(worker->epfd, events, 8, &ts, NULL);
    for (i = 0; i < n; ++i) {
        if ((events[i].data.ptr == NULL) &&
            (read(worker->wake_fd, &value, sizeof(value)) < 0)) {
            /* already drained */
        }
    }
}

static void *gda_ft_soft_worker_thread(void *arg)
{
    gda_ft_soft_worker_t *worker = arg;
    const gda_ft_soft_config_t *config = &gda_ft_soft_engine.config;
    uint64_t spin_ns      = (uint64_t)(config->spin_time * 1e9);
    uint64_t long_pass_ns = (uint64_t)(config->long_pass * 1e9);
    gda_ft_soft_engine_stats_t cuda_before;
    uint64_t now, next_timer, took;
    int64_t idle_ns;
    int work, awake;

    while (!__atomic_load_n(&gda_ft_soft_engine.stop, __ATOMIC_ACQUIRE)) {
        if (!worker->cuda_ready &&
            __atomic_load_n(&gda_ft_soft_engine.cuda_wanted,
                            __ATOMIC_ACQUIRE)) {
            gda_ft_soft_mem_thread_prepare();
            __atomic_store_n(&worker->cuda_ready, 1, __ATOMIC_RELEASE);
        }
        if (ucs_log_is_enabled(UCS_LOG_LEVEL_DIAG)) {
            gda_ft_soft_mem_cuda_stats(&cuda_before);
        }
        pthread_rwlock_rdlock(&gda_ft_soft_engine.lock);
        now    = gda_ft_soft_now_ns();
        gda_ft_soft_worker_count_pass(worker, now);
        work   = gda_ft_soft_worker_progress(worker, now, &next_timer);
        awake  = worker->awake_qps != 0;
        took   = gda_ft_soft_now_ns() - now;
        gda_ft_soft_engine_max(&worker->stats.max_pass_ns, took);
        pthread_rwlock_unlock(&gda_ft_soft_engine.lock);
        if ((took >= long_pass_ns) &&
            ucs_log_is_enabled(UCS_LOG_LEVEL_DIAG)) {
            gda_ft_soft_worker_report_pass(worker, took, &cuda_before);
        }
        if (worker->index == 0) {
            gda_ft_soft_engine_housekeeping(worker, now);
        }
        while (__atomic_load_n(&gda_ft_soft_engine.lock_waiters,
                               __ATOMIC_ACQUIRE) != 0) {
            sched_yield();   /* a control call waits: let it in */
        }

        /* signed: another worker may have stored a later time */
        idle_ns = (int64_t)(now -
                            __atomic_load_n(&gda_ft_soft_engine.last_busy_ns,
                                            __ATOMIC_RELAXED));
        if (work || awake || (idle_ns < (int64_t)spin_ns)) {
            if (worker->sleeping) {
                __atomic_store_n(&worker->sleeping, 0, __ATOMIC_RELAXED);
            }
            if (work && (idle_ns > 1000)) {   /* a shared line: once a
                                                 microsecond at most */
                __atomic_store_n(&gda_ft_soft_engine.last_busy_ns, now,
                                 __ATOMIC_RELAXED);
            } else if (!work) {
                sched_yield();
            }
        } else if (!worker->sleeping) {
            /* Say it, then look at every doorbell record and queue once
             * more in the next pass: a poster that rang before we said it
             * is seen there, one that rings after sees the word and wakes
             * us (gda_ft_sq_wake, gda_ft_soft_loopback_send) */
            __atomic_store_n(&worker->sleeping, 1, __ATOMIC_SEQ_CST);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
        } else {
            if (__atomic_load_n(&worker->loopback_queued,
                                __ATOMIC_SEQ_CST) == 0) {
                gda_ft_soft_worker_sleep(worker, now, next_timer);
            }
            __atomic_store_n(&worker->sleeping, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&worker->last_pass_ns, 0, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

void gda_ft_soft_engine_prepare_cuda(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    unsigned i;

    if (__atomic_exchange_n(&engine->cuda_wanted, 1, __ATOMIC_ACQ_REL)) {
        return;   /* asked by an earlier registration */
    }
    gda_ft_soft_engine_wake();
    for (i = 0; i < engine->num_workers; ++i) {
        while (!__atomic_load_n(&engine->workers[i].cuda_ready,
                                __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&engine->stop, __ATOMIC_ACQUIRE)) {
            usleep(100);
        }
    }
}

/* How many workers: THREADS, or by the devices and the CPUs we may use */
static unsigned gda_ft_soft_engine_num_workers(unsigned num_devs)
{
    unsigned long threads = gda_ft_soft_engine.config.threads;
    cpu_set_t cpus;
    unsigned ncpus;

    if (threads != UCS_ULUNITS_AUTO) {
        return ucs_max(1, ucs_min(threads, GDA_FT_SOFT_MAX_DEVS));
    }

    ncpus = (sched_getaffinity(getpid(), sizeof(cpus), &cpus) == 0) ?
            CPU_COUNT(&cpus) : 1;
    return ucs_max(1, ucs_min(num_devs, ncpus / 4));
}

/*
 * Starts a worker thread on the CPUs of the process (its main thread's
 * affinity), not on those of the thread that opened the first device: a
 * caller bound to one CPU, as ucx_perftest and UCX's performance tests bind
 * each of their threads, would otherwise share that CPU with the engine
 * while it busy-polls, and starve it (on 2 cores, one measurement of UCX's
 * test_uct_perf took 137 s instead of about 20 s).
 */
static int gda_ft_soft_worker_start_thread(gda_ft_soft_worker_t *worker)
{
    pthread_attr_t attr;
    cpu_set_t cpus;
    char name[16];
    int ret;

    ret = pthread_attr_init(&attr);
    if (ret != 0) {
        return ret;
    }

    if (sched_getaffinity(getpid(), sizeof(cpus), &cpus) == 0) {
        ret = pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
        if (ret != 0) {
            ucs_debug("soft HCA: engine thread affinity not set: %s",
                      strerror(ret));
        }
    } else {
        ucs_debug("soft HCA: process CPU affinity unknown: %m");
    }

    ret = pthread_create(&worker->thread, &attr, gda_ft_soft_worker_thread,
                         worker);
    pthread_attr_destroy(&attr);
    if (ret == 0) {
        /* visible in /proc/PID/task/TID/comm, top -H, gdb */
        snprintf(name, sizeof(name), "gda_ft_soft%u", worker->index);
        pthread_setname_np(worker->thread, name);
        worker->thread_started = 1;
    }
    return ret;
}

static void gda_ft_soft_worker_cleanup(gda_ft_soft_worker_t *worker)
{
    if (worker->epfd >= 0) {
        close(worker->epfd);
    }
    if (worker->wake_fd >= 0) {
        close(worker->wake_fd);
    }
    ucs_free(worker->rx_bufs);
}

static ucs_status_t gda_ft_soft_worker_init(gda_ft_soft_worker_t *worker,
                                            unsigned index)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct epoll_event ev        = {0};

    worker->index        = index;
    worker->epfd         = epoll_create1(EPOLL_CLOEXEC);
    worker->wake_fd      = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    worker->rx_bufs      = ucs_malloc(sizeof(*worker->rx_bufs),
                                      "soft_rx_bufs");
    worker->rng          = (engine->config.seed + index) *
                           0x9e3779b97f4a7c15ull + 1;
    ucs_list_head_init(&worker->qps);
    ucs_list_head_init(&worker->delayed);
    if ((worker->epfd < 0) || (worker->wake_fd < 0)) {
        ucs_error("soft HCA: epoll/eventfd creation failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    if (worker->rx_bufs == NULL) {
        ucs_error("soft HCA: no memory for receive buffers");
        return UCS_ERR_NO_MEMORY;
    }

    ev.events   = EPOLLIN;
    ev.data.ptr = NULL;
    epoll_ctl(worker->epfd, EPOLL_CTL_ADD, worker->wake_fd, &ev);
    return UCS_OK;
}

/* Stops and frees the workers (all, or those started so far) */
static void gda_ft_soft_engine_stop_workers(gda_ft_soft_engine_t *engine)
{
    unsigned i;

    __atomic_store_n(&engine->stop, 1, __ATOMIC_RELEASE);
    gda_ft_soft_engine_wake();
    for (i = 0; i < engine->num_workers; ++i) {
        if (engine->workers[i].thread_started) {
            pthread_join(engine->workers[i].thread, NULL);
        }
        gda_ft_soft_worker_cleanup(&engine->workers[i]);
    }
    ucs_free(engine->workers);
    engine->workers     = NULL;
    engine->num_workers = 0;
}

/* Starts the workers, with the engine lock exclusive: on failure, the
 * caller stops those started once it has let go of the lock */
static ucs_status_t gda_ft_soft_engine_start_workers(gda_ft_soft_engine_t *engine)
{
    struct sockaddr_in addrs[GDA_FT_SOFT_MAX_DEVS][GDA_FT_HCA_MAX_PORTS];
    gda_ft_hca_dev_info_t *infos;
    ucs_status_t status;
    unsigned i, num_devs;
    int ret;

    status = gda_ft_soft_parse_devices(engine->config.devices, &infos,
                                       &num_devs, addrs);
    if (status != UCS_OK) {
        return status;
    }
    free(infos);

    engine->num_workers = gda_ft_soft_engine_num_workers(num_devs);
    engine->workers     = ucs_calloc(engine->num_workers,
                                     sizeof(*engine->workers),
                                     "soft_workers");
    if (engine->workers == NULL) {
        engine->num_workers = 0;
        ucs_error("soft HCA: no memory for %u engine threads",
                  gda_ft_soft_engine_num_workers(num_devs));
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < engine->num_workers; ++i) {
        engine->workers[i].epfd    = -1;
        engine->workers[i].wake_fd = -1;
    }

    for (i = 0; i < engine->num_workers; ++i) {
        status = gda_ft_soft_worker_init(&engine->workers[i], i);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = gda_ft_soft_ctl_open(engine->workers[0].epfd);
    if (status != UCS_OK) {
        return status;
    }
    gda_ft_soft_link_watch_open(engine->workers[0].epfd);

    for (i = 0; i < engine->num_workers; ++i) {
        ret = gda_ft_soft_worker_start_thread(&engine->workers[i]);
        if (ret != 0) {
            ucs_error("soft HCA: cannot start engine thread %u: %s", i,
                      strerror(ret));
            return UCS_ERR_NO_RESOURCE;
        }
    }

    ucs_debug("soft HCA: %u engine thread(s) for %u device(s)",
              engine->num_workers, num_devs);
    return UCS_OK;
}

ucs_status_t gda_ft_soft_engine_get(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    ucs_status_t status;

    gda_ft_soft_engine_lock();
    if (engine->refcount++ > 0) {
        gda_ft_soft_engine_unlock();
        return UCS_OK;
    }

    if (!engine->config.devices) {
        /* reload is refused while refcount > 0: fill it directly */
        --engine->refcount;
        gda_ft_soft_engine_unlock();
        status = gda_ft_soft_reload_config();
        if (status != UCS_OK) {
            return status;
        }
        return gda_ft_soft_engine_get();
    }

    engine->stop               = 0;
    engine->start_ns           = gda_ft_soft_now_ns();
    engine->last_link_check_ns = engine->start_ns;
    engine->last_busy_ns       = engine->start_ns;

    status = gda_ft_soft_sched_parse(engine->config.faults, &engine->sched,
                                     &engine->sched_count);
    if (status != UCS_OK) {
        goto err;
    }

    status = gda_ft_soft_engine_start_workers(engine);
    if (status != UCS_OK) {
        goto err_stop;
    }

    gda_ft_soft_engine_unlock();
    return UCS_OK;

err_stop:
    __atomic_store_n(&engine->stop, 1, __ATOMIC_RELEASE);
    --engine->refcount;
    gda_ft_soft_engine_unlock();
    gda_ft_soft_engine_stop_workers(engine);   /* they take the lock */
    gda_ft_soft_ctl_close();
    gda_ft_soft_link_watch_close();
    free(engine->sched);
    engine->sched       = NULL;
    engine->sched_count = 0;
    return status;
err:
    --engine->refcount;
    gda_ft_soft_engine_unlock();
    return status;
}

void gda_ft_soft_engine_put(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    gda_ft_soft_engine_lock();
    if (--engine->refcount > 0) {
        gda_ft_soft_engine_unlock();
        return;
    }
    gda_ft_soft_engine_unlock();

    /* the workers take the lock shared until they see stop */
    gda_ft_soft_engine_stop_workers(engine);
    gda_ft_soft_ctl_close();
    gda_ft_soft_link_watch_close();
    free(engine->sched);
    engine->sched       = NULL;
    engine->sched_count = 0;
}
