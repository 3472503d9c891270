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

void gda_ft_soft_sendto(gda_ft_soft_port_t *port, uint32_t dst_ip,
                        const void *pkt, size_t len)
{
    struct sockaddr_in dst = port->addr;
    ssize_t ret;

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

/* One pass over everything; returns nonzero when work was done */
static int gda_ft_soft_engine_progress(uint64_t now, uint64_t *next_timer)
{
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_qp_t *qp;
    unsigned p, i;
    int work = 0, count;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            /* Drain more than one batch: the peer may send faster than one
             * batch per pass */
            for (i = 0; i < GDA_FT_SOFT_RX_BATCHES; ++i) {
                count = gda_ft_soft_rx_port(&dev->ports[p]);
                work += count;
                if (count < GDA_FT_SOFT_RX_BATCH) {
                    break;
                }
            }
        }
    }

    *next_timer = UINT64_MAX;
    ucs_list_for_each(qp, &gda_ft_soft_engine.qps, list) {
        gda_ft_soft_resp_flush_ack(qp);
        work      += gda_ft_soft_resp_progress(qp);
        work      += gda_ft_soft_req_progress(qp, now);
        *next_timer = ucs_min(*next_timer, gda_ft_soft_qp_next_timer(qp));
    }

    gda_ft_soft_delayed_progress(now);
    if (!ucs_list_is_empty(&gda_ft_soft_engine.delayed)) {
        *next_timer = ucs_min(*next_timer, ucs_list_head(
                &gda_ft_soft_engine.delayed, gda_ft_soft_delayed_t,
                list)->due);
    }

    gda_ft_soft_sched_progress(now);
    gda_ft_soft_ctl_progress();
    gda_ft_soft_link_check(now);
    return work;
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
        work   = gda_ft_soft_engine_progress(now, &next_timer);
        device = gda_ft_soft_engine.device_qps != 0;
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
