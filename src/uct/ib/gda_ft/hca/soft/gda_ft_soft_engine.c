/*
 * Software HCA engine: one thread per process serving every soft device.
 *
 * It receives datagrams, reads doorbell records, runs the requester and
 * responder state machines and the retransmission timers. It spins while
 * there is traffic and sleeps in epoll_wait() when idle: CPU posters wake it
 * through an eventfd; while any QP has rings a GPU posts into (not in host
 * memory), it never sleeps, since a kernel cannot write an eventfd.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

gda_ft_soft_engine_t gda_ft_soft_engine = {
    .lock    = PTHREAD_MUTEX_INITIALIZER,
    .epfd    = -1,
    .wake_fd = -1,
    .ctl_fd  = -1
};

static void UCS_F_CTOR gda_ft_soft_engine_ctor(void)
{
    ucs_list_head_init(&gda_ft_soft_engine.devs);
    ucs_list_head_init(&gda_ft_soft_engine.qps);
    ucs_list_head_init(&gda_ft_soft_engine.delayed);
    kh_init_inplace(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash);
    kh_init_inplace(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash);
}

static void UCS_F_DTOR gda_ft_soft_engine_dtor(void)
{
    kh_destroy_inplace(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash);
    kh_destroy_inplace(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash);
}

uint64_t gda_ft_soft_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* xorshift64*: reproducible for a given UCX_GDA_FT_SOFT_SEED */
double gda_ft_soft_random(void)
{
    uint64_t x = gda_ft_soft_engine.rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    gda_ft_soft_engine.rng = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

void gda_ft_soft_engine_wake(void)
{
    uint64_t one = 1;

    if ((gda_ft_soft_engine.wake_fd >= 0) &&
        (write(gda_ft_soft_engine.wake_fd, &one, sizeof(one)) < 0)) {
        /* eventfd saturated: the engine is awake anyway */
    }
}

/* The open port of this process at dst_ip and the sender's UDP port */
static gda_ft_soft_port_t *gda_ft_soft_loopback_find(gda_ft_soft_port_t *from,
                                                     uint32_t dst_ip)
{
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_port_t *port;
    unsigned p;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            port = &dev->ports[p];
            if ((port->addr.sin_addr.s_addr == dst_ip) &&
                (port->addr.sin_port == from->addr.sin_port) &&
                (port->fd >= 0)) {
                return port;
            }
        }
    }
    return NULL;
}

/*
 * Queues a datagram for a port of this process. A full queue drops it, as
 * a full socket buffer would; retransmission recovers.
 */
static void gda_ft_soft_loopback_send(gda_ft_soft_port_t *from,
                                      gda_ft_soft_port_t *to,
                                      const void *pkt, size_t len)
{
    gda_ft_soft_loopback_pkt_t *lb;

    if (to->lb_queue == NULL) {
        to->lb_queue = ucs_malloc(GDA_FT_SOFT_LOOPBACK_QUEUE *
                                  sizeof(*to->lb_queue), "soft_loopback");
    }
    if ((to->lb_queue == NULL) ||
        ((to->lb_tail - to->lb_head) == GDA_FT_SOFT_LOOPBACK_QUEUE)) {
        ++from->stats.fault_dropped;
        return;
    }

    lb             = &to->lb_queue[to->lb_tail % GDA_FT_SOFT_LOOPBACK_QUEUE];
    lb->arrival_ns = gda_ft_soft_realtime_ns();
    lb->src        = from->addr;
    lb->len        = len;
    memcpy(lb->data, pkt, len);
    ++to->lb_tail;
    ++gda_ft_soft_engine.loopback_queued;
    ++from->stats.tx_pkts;
    from->stats.tx_bytes += len;
}

void gda_ft_soft_loopback_close(gda_ft_soft_port_t *port)
{
    gda_ft_soft_engine.loopback_queued -= port->lb_tail - port->lb_head;
    port->lb_head = port->lb_tail = 0;
    ucs_free(port->lb_queue);
    port->lb_queue = NULL;
}

void gda_ft_soft_sendto(gda_ft_soft_port_t *port, uint32_t dst_ip,
                        const void *pkt, size_t len)
{
    struct sockaddr_in dst = port->addr;
    gda_ft_soft_port_t *local;
    ssize_t ret;

    if (gda_ft_soft_engine.config.loopback) {
        local = gda_ft_soft_loopback_find(port, dst_ip);
        if (local != NULL) {
            gda_ft_soft_loopback_send(port, local, pkt, len);
            return;
        }
    }

    dst.sin_addr.s_addr = dst_ip;
    ret = sendto(port->fd, pkt, len, 0, (struct sockaddr*)&dst, sizeof(dst));
    if (ret < 0) {
        /* Like a lost packet: unreachable network (link down in a
         * namespace) or a full socket buffer; retransmission recovers */
        ++port->stats.fault_dropped;
        return;
    }
    ++port->stats.tx_pkts;
    port->stats.tx_bytes += len;
}

void gda_ft_soft_tx(gda_ft_soft_port_t *port, uint32_t dst_ip, void *pkt,
                    size_t len, int is_response)
{
    if (!gda_ft_soft_port_is_up(port) &&
        (gda_ft_soft_engine.late_port != port)) {
        ++port->stats.fault_dropped;
        return;
    }

    if (gda_ft_soft_fault_tx(port, dst_ip, pkt, len, is_response)) {
        return;   /* dropped or queued by the fault injector */
    }

    gda_ft_soft_sendto(port, dst_ip, pkt, len);
}

static gda_ft_soft_qp_t *gda_ft_soft_qp_lookup(uint32_t qpn)
{
    khiter_t iter = kh_get(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, qpn);

    return (iter == kh_end(&gda_ft_soft_engine.qp_hash)) ? NULL :
           kh_val(&gda_ft_soft_engine.qp_hash, iter);
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
        gda_ft_soft_engine.late_port = port;
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
    gda_ft_soft_loopback_pkt_t *lb;
    int count;

    for (count = 0; (count < GDA_FT_SOFT_RX_BATCH) &&
                    (port->lb_head != port->lb_tail); ++count) {
        lb = &port->lb_queue[port->lb_head % GDA_FT_SOFT_LOOPBACK_QUEUE];
        ++port->stats.rx_loopback;
        gda_ft_soft_rx(port, &lb->src, lb->data, lb->len, lb->arrival_ns);
        gda_ft_soft_engine.late_port = NULL;
        ++port->lb_head;
        --gda_ft_soft_engine.loopback_queued;
    }
    return count;
}

/* Receives up to one batch on a port; returns the number of datagrams */
static int gda_ft_soft_rx_port(gda_ft_soft_port_t *port)
{
    static uint8_t bufs[GDA_FT_SOFT_RX_BATCH][GDA_FT_SOFT_PKT_MAX];
    static struct sockaddr_in srcs[GDA_FT_SOFT_RX_BATCH];
    static uint8_t cmsgs[GDA_FT_SOFT_RX_BATCH]
                        [CMSG_SPACE(sizeof(struct timespec))];
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
        gda_ft_soft_engine.late_port = NULL;
    }
    return count;
}

/* Receives with rx (a batch at most per call) until a batch is not full,
 * or GDA_FT_SOFT_RX_BATCHES of them: the peer may send faster than one
 * batch per pass. Returns the number of datagrams. */
static int gda_ft_soft_rx_drain(gda_ft_soft_port_t *port,
                                int (*rx)(gda_ft_soft_port_t *port))
{
    int count, total = 0;
    unsigned i;

    for (i = 0; i < GDA_FT_SOFT_RX_BATCHES; ++i) {
        count  = rx(port);
        total += count;
        if (count < GDA_FT_SOFT_RX_BATCH) {
            break;
        }
    }
    return total;
}

void gda_ft_soft_engine_stats(gda_ft_soft_engine_stats_t *stats)
{
    const gda_ft_soft_engine_stats_t *cur = &gda_ft_soft_engine.stats;
    unsigned i;

    /* word by word: the engine thread counts on beside us */
    stats->passes     = __atomic_load_n(&cur->passes, __ATOMIC_RELAXED);
    stats->max_gap_ns = __atomic_load_n(&cur->max_gap_ns, __ATOMIC_RELAXED);
    stats->max_pass_ns = __atomic_load_n(&cur->max_pass_ns,
                                         __ATOMIC_RELAXED);
    for (i = 0; i < ucs_static_array_size(cur->max_part_ns); ++i) {
        stats->max_part_ns[i] = __atomic_load_n(&cur->max_part_ns[i],
                                                __ATOMIC_RELAXED);
    }
    for (i = 0; i < GDA_FT_SOFT_ENGINE_GAP_BUCKETS; ++i) {
        stats->gaps[i] = __atomic_load_n(&cur->gaps[i], __ATOMIC_RELAXED);
    }
}

static void gda_ft_soft_engine_max(uint64_t *max, uint64_t value)
{
    if (value > *max) {
        __atomic_store_n(max, value, __ATOMIC_RELAXED);
    }
}

/* Counts the gap since the previous pass (none after a sleep) */
static void gda_ft_soft_engine_count_pass(gda_ft_soft_engine_t *engine,
                                          uint64_t now)
{
    gda_ft_soft_engine_stats_t *stats = &engine->stats;
    uint64_t gap, limit               = 16000;
    unsigned bucket                   = 0;

    __atomic_store_n(&stats->passes, stats->passes + 1, __ATOMIC_RELAXED);
    if (engine->last_pass_ns != 0) {
        gap = now - engine->last_pass_ns;
        while ((bucket < GDA_FT_SOFT_ENGINE_GAP_BUCKETS - 1) &&
               (gap >= limit)) {
            ++bucket;
            limit *= 4;
        }
        __atomic_store_n(&stats->gaps[bucket], stats->gaps[bucket] + 1,
                         __ATOMIC_RELAXED);
        gda_ft_soft_engine_max(&stats->max_gap_ns, gap);
    }
    engine->last_pass_ns = now;
}

/* Ends part `part` of the pass, which began at *start */
static void gda_ft_soft_engine_count_part(unsigned part, uint64_t *start)
{
    uint64_t now = gda_ft_soft_now_ns();

    gda_ft_soft_engine_max(&gda_ft_soft_engine.stats.max_part_ns[part],
                           now - *start);
    *start = now;
}

/* One pass over everything; returns nonzero when work was done */
static int gda_ft_soft_engine_progress(uint64_t now, uint64_t *next_timer)
{
    uint64_t part_start = now;
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_qp_t *qp;
    unsigned p;
    int work = 0;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            /* Drain more than one batch: the peer may send faster than one
             * batch per pass */
            work += gda_ft_soft_rx_drain(&dev->ports[p],
                                         gda_ft_soft_rx_port);
            work += gda_ft_soft_rx_drain(&dev->ports[p],
                                         gda_ft_soft_rx_loopback);
        }
    }

    gda_ft_soft_engine_count_part(0, &part_start);

    *next_timer = UINT64_MAX;
    ucs_list_for_each(qp, &gda_ft_soft_engine.qps, list) {
        gda_ft_soft_resp_flush_ack(qp);
        work      += gda_ft_soft_resp_progress(qp);
        work      += gda_ft_soft_req_progress(qp, now);
        *next_timer = ucs_min(*next_timer, gda_ft_soft_qp_next_timer(qp));
    }

    gda_ft_soft_engine_count_part(1, &part_start);

    gda_ft_soft_delayed_progress(now);
    if (!ucs_list_is_empty(&gda_ft_soft_engine.delayed)) {
        *next_timer = ucs_min(*next_timer, ucs_list_head(
                &gda_ft_soft_engine.delayed, gda_ft_soft_delayed_t,
                list)->due);
    }

    gda_ft_soft_sched_progress(now);
    gda_ft_soft_ctl_progress();
    gda_ft_soft_link_check(now);
    gda_ft_soft_engine_count_part(2, &part_start);
    /* queued for a port of this process by a timer or a command: the
     * kernel would wake a sleeping engine for it; nothing else will */
    return work + (gda_ft_soft_engine.loopback_queued != 0);
}

static void gda_ft_soft_engine_sleep(uint64_t now, uint64_t next_timer)
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

    n = epoll_pwait2(gda_ft_soft_engine.epfd, events, 8, &ts, NULL);
    for (i = 0; i < n; ++i) {
        if ((events[i].data.ptr == NULL) &&
            (read(gda_ft_soft_engine.wake_fd, &value, sizeof(value)) < 0)) {
            /* already drained */
        }
    }
}

static void *gda_ft_soft_engine_thread(void *arg)
{
    uint64_t spin_ns = (uint64_t)(gda_ft_soft_engine.config.spin_time * 1e9);
    uint64_t now, next_timer;
    int work, device;

    while (!__atomic_load_n(&gda_ft_soft_engine.stop, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&gda_ft_soft_engine.lock);
        now    = gda_ft_soft_now_ns();
        gda_ft_soft_engine_count_pass(&gda_ft_soft_engine, now);
        work   = gda_ft_soft_engine_progress(now, &next_timer);
        device = gda_ft_soft_engine.device_qps != 0;
        gda_ft_soft_engine_max(&gda_ft_soft_engine.stats.max_pass_ns,
                               gda_ft_soft_now_ns() - now);
        pthread_mutex_unlock(&gda_ft_soft_engine.lock);
        while (__atomic_load_n(&gda_ft_soft_engine.lock_waiters,
                               __ATOMIC_ACQUIRE) != 0) {
            sched_yield();   /* a control call waits: let it in */
        }

        if (work) {
            gda_ft_soft_engine.last_busy_ns = now;
        } else if (device ||
                   ((now - gda_ft_soft_engine.last_busy_ns) < spin_ns)) {
            sched_yield();
        } else {
            gda_ft_soft_engine_sleep(now, next_timer);
            gda_ft_soft_engine.last_pass_ns = 0;
        }
    }
    return NULL;
}

/*
 * Starts the engine thread on the CPUs of the process (its main thread's
 * affinity), not on those of the thread that opened the first device: a
 * caller bound to one CPU, as ucx_perftest and UCX's performance tests bind
 * each of their threads, would otherwise share that CPU with the engine
 * while it busy-polls, and starve it (on 2 cores, one measurement of UCX's
 * test_uct_perf took 137 s instead of about 20 s).
 */
static int gda_ft_soft_engine_start_thread(gda_ft_soft_engine_t *engine)
{
    pthread_attr_t attr;
    cpu_set_t cpus;
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

    ret = pthread_create(&engine->thread, &attr, gda_ft_soft_engine_thread,
                         NULL);
    pthread_attr_destroy(&attr);
    if (ret == 0) {
        /* visible in /proc/PID/task/TID/comm, top -H, gdb */
        pthread_setname_np(engine->thread, "gda_ft_soft");
    }
    return ret;
}

ucs_status_t gda_ft_soft_engine_get(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct epoll_event ev        = {0};
    ucs_status_t status;
    int ret;

    pthread_mutex_lock(&engine->lock);
    if (engine->refcount++ > 0) {
        pthread_mutex_unlock(&engine->lock);
        return UCS_OK;
    }

    if (!engine->config.devices) {
        /* reload is refused while refcount > 0: fill it directly */
        --engine->refcount;
        pthread_mutex_unlock(&engine->lock);
        status = gda_ft_soft_reload_config();
        if (status != UCS_OK) {
            return status;
        }
        return gda_ft_soft_engine_get();
    }

    engine->stop         = 0;
    engine->start_ns     = gda_ft_soft_now_ns();
    engine->last_pass_ns = 0;
    memset(&engine->stats, 0, sizeof(engine->stats));
    engine->last_busy_ns = engine->start_ns;
    engine->last_link_check_ns = engine->start_ns;
    engine->rng          = engine->config.seed * 0x9e3779b97f4a7c15ull + 1;

    status = gda_ft_soft_sched_parse(engine->config.faults, &engine->sched,
                                     &engine->sched_count);
    if (status != UCS_OK) {
        goto err;
    }

    engine->epfd    = epoll_create1(EPOLL_CLOEXEC);
    engine->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((engine->epfd < 0) || (engine->wake_fd < 0)) {
        ucs_error("soft HCA: epoll/eventfd creation failed: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    ev.events   = EPOLLIN;
    ev.data.ptr = NULL;
    epoll_ctl(engine->epfd, EPOLL_CTL_ADD, engine->wake_fd, &ev);

    status = gda_ft_soft_ctl_open();
    if (status != UCS_OK) {
        goto err_close;
    }

    ret = gda_ft_soft_engine_start_thread(engine);
    if (ret != 0) {
        ucs_error("soft HCA: cannot start the engine thread: %s",
                  strerror(ret));
        status = UCS_ERR_NO_RESOURCE;
        goto err_ctl;
    }
    engine->thread_started = 1;
    pthread_mutex_unlock(&engine->lock);
    return UCS_OK;

err_ctl:
    gda_ft_soft_ctl_close();
err_close:
    if (engine->epfd >= 0) {
        close(engine->epfd);
    }
    if (engine->wake_fd >= 0) {
        close(engine->wake_fd);
    }
    engine->epfd    = -1;
    engine->wake_fd = -1;
    free(engine->sched);
    engine->sched = NULL;
err:
    --engine->refcount;
    pthread_mutex_unlock(&engine->lock);
    return status;
}

void gda_ft_soft_engine_put(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    pthread_mutex_lock(&engine->lock);
    if (--engine->refcount > 0) {
        pthread_mutex_unlock(&engine->lock);
        return;
    }
    __atomic_store_n(&engine->stop, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&engine->lock);

    gda_ft_soft_engine_wake();
    if (engine->thread_started) {
        pthread_join(engine->thread, NULL);
        engine->thread_started = 0;
    }

    gda_ft_soft_ctl_close();
    close(engine->epfd);
    close(engine->wake_fd);
    engine->epfd    = -1;
    engine->wake_fd = -1;
    free(engine->sched);
    engine->sched       = NULL;
    engine->sched_count = 0;
}
