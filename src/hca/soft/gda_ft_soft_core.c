/*
 * Software HCA: its core, which every other room calls and which calls
 * none of them: the clock, the workers' random numbers, lookups of QPs and
 * MRs, the CQE writer and device events, a QP's move to error, and
 * transmission (the per-packet fault hooks, the loopback queues between
 * ports of the process, the socket). Above it: the verbs (dev), the
 * requester and responder (req, resp), the fault schedule and port
 * commands (fault), the engine threads (engine) and the control socket
 * (ctl).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* ---- the real-time clock and the workers' random numbers ---------- */

uint64_t gda_ft_soft_realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* xorshift64*, one sequence per worker: reproducible for a given
 * UCX_GDA_FT_SOFT_SEED and THREADS */
double gda_ft_soft_random(gda_ft_soft_worker_t *worker)
{
    uint64_t x = worker->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    worker->rng = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}


/* ---- workers, lookups and statistics ------------------------------ */

static void gda_ft_soft_worker_wake(gda_ft_soft_worker_t *worker)
{
    uint64_t one = 1;

    if ((worker->wake_fd >= 0) &&
        (write(worker->wake_fd, &one, sizeof(one)) < 0)) {
        /* eventfd saturated: the worker is awake anyway */
    }
}

void gda_ft_soft_engine_wake(void)
{
    unsigned i;

    for (i = 0; i < gda_ft_soft_engine.num_workers; ++i) {
        gda_ft_soft_worker_wake(&gda_ft_soft_engine.workers[i]);
    }
}

gda_ft_soft_worker_t *gda_ft_soft_worker_of(unsigned index)
{
    return &gda_ft_soft_engine.workers[index %
                                       gda_ft_soft_engine.num_workers];
}

gda_ft_soft_qp_t *gda_ft_soft_qp_lookup(uint32_t qpn)
{
    khiter_t iter = kh_get(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, qpn);

    return (iter == kh_end(&gda_ft_soft_engine.qp_hash)) ? NULL :
           kh_val(&gda_ft_soft_engine.qp_hash, iter);
}

gda_ft_soft_mr_t *gda_ft_soft_mr_lookup(uint32_t key)
{
    khiter_t iter = kh_get(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash, key);

    return (iter == kh_end(&gda_ft_soft_engine.mr_hash)) ? NULL :
           kh_val(&gda_ft_soft_engine.mr_hash, iter);
}

gda_ft_soft_port_t *gda_ft_soft_qp_port(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_dev_t *dev = ucs_derived_of(qp->super.dev, gda_ft_soft_dev_t);

    return &dev->ports[qp->super.init.port_num - 1];
}

int gda_ft_soft_port_is_up(gda_ft_soft_port_t *port)
{
    /* read without the engine lock by port queries, which the guardians
     * of device channels make every pass: the engine must not yield to
     * them */
    return __atomic_load_n(&port->admin_up, __ATOMIC_RELAXED) &&
           __atomic_load_n(&port->link_up, __ATOMIC_RELAXED);
}

/* The workers' counts together: the sums, and the longest of each */
void gda_ft_soft_engine_stats(gda_ft_soft_engine_stats_t *stats)
{
    const gda_ft_soft_engine_stats_t *cur;
    unsigned i, w;

    /* without the lock: the control socket asks for them with it held */
    memset(stats, 0, sizeof(*stats));
    for (w = 0; w < gda_ft_soft_engine.num_workers; ++w) {
        /* word by word: the workers count on beside us */
        cur             = &gda_ft_soft_engine.workers[w].stats;
        stats->passes  += __atomic_load_n(&cur->passes, __ATOMIC_RELAXED);
        stats->max_gap_ns  = ucs_max(stats->max_gap_ns,
                                     __atomic_load_n(&cur->max_gap_ns,
                                                     __ATOMIC_RELAXED));
        stats->max_pass_ns = ucs_max(stats->max_pass_ns,
                                     __atomic_load_n(&cur->max_pass_ns,
                                                     __ATOMIC_RELAXED));
        stats->max_port_rx = ucs_max(stats->max_port_rx,
                                     __atomic_load_n(&cur->max_port_rx,
                                                     __ATOMIC_RELAXED));
        if (__atomic_load_n(&cur->max_gap_ns, __ATOMIC_RELAXED) >=
            stats->max_gap_ns) {
            stats->max_gap_cpu_ns = __atomic_load_n(&cur->max_gap_cpu_ns,
                                                    __ATOMIC_RELAXED);
        }
        stats->long_gaps          += __atomic_load_n(&cur->long_gaps,
                                                     __ATOMIC_RELAXED);
        stats->long_gaps_switched += __atomic_load_n(&cur->long_gaps_switched,
                                                     __ATOMIC_RELAXED);
        stats->long_gaps_blocked  += __atomic_load_n(&cur->long_gaps_blocked,
                                                     __ATOMIC_RELAXED);
        stats->long_gaps_stolen   += __atomic_load_n(&cur->long_gaps_stolen,
                                                     __ATOMIC_RELAXED);
        for (i = 0; i < ucs_static_array_size(cur->max_part_ns); ++i) {
            stats->max_part_ns[i] = ucs_max(stats->max_part_ns[i],
                                            __atomic_load_n(
                                                    &cur->max_part_ns[i],
                                                    __ATOMIC_RELAXED));
        }
        for (i = 0; i < GDA_FT_SOFT_ENGINE_GAP_BUCKETS; ++i) {
            stats->gaps[i] += __atomic_load_n(&cur->gaps[i],
                                              __ATOMIC_RELAXED);
        }
    }
    gda_ft_soft_mem_cuda_stats(stats);
    stats->workers = gda_ft_soft_engine.num_workers;
    stats->link_checks = __atomic_load_n(&gda_ft_soft_engine.link_checks,
                                         __ATOMIC_RELAXED);
}

void gda_ft_soft_engine_stats_format(const gda_ft_soft_engine_stats_t *st,
                                     char *buf, size_t max)
{
    snprintf(buf, max, "%lu passes, gaps <16us %lu <64us %lu <256us %lu "
             "<1ms %lu <4ms %lu >=4ms %lu, longest %.3f ms (its work: "
             "%.3f ms; longest receive %.3f, queues %.3f, housekeeping "
             "%.3f ms), the most datagrams from a port in a pass %lu, "
             "gaps over %.0f us %lu, of them mostly switched out "
             "%lu blocked %lu stolen %lu, the longest's CPU time %.3f ms; "
             "%lu link checks; %lu waits for GPU copies, %.3f ms in all, "
             "the longest %.3f ms; %lu copies queued, %.3f ms in the "
             "calls, the longest %.3f ms; %lu queries of reads, %.3f ms",
             (unsigned long)st->passes, (unsigned long)st->gaps[0],
             (unsigned long)st->gaps[1], (unsigned long)st->gaps[2],
             (unsigned long)st->gaps[3], (unsigned long)st->gaps[4],
             (unsigned long)st->gaps[5], st->max_gap_ns / 1e6,
             st->max_pass_ns / 1e6, st->max_part_ns[0] / 1e6,
             st->max_part_ns[1] / 1e6, st->max_part_ns[2] / 1e6,
             (unsigned long)st->max_port_rx,
             GDA_FT_SOFT_LONG_GAP_NS / 1e3, (unsigned long)st->long_gaps,
             (unsigned long)st->long_gaps_switched,
             (unsigned long)st->long_gaps_blocked,
             (unsigned long)st->long_gaps_stolen, st->max_gap_cpu_ns / 1e6,
             (unsigned long)st->link_checks, (unsigned long)st->cuda_waits,
             st->cuda_wait_ns / 1e6, st->max_cuda_wait_ns / 1e6,
             (unsigned long)st->cuda_copies, st->cuda_copy_ns / 1e6,
             st->max_cuda_copy_ns / 1e6, (unsigned long)st->cuda_queries,
             st->cuda_query_ns / 1e6);
}

gda_ft_hca_dev_t *gda_ft_soft_dev_find(const char *name)
{
    gda_ft_soft_dev_t *dev;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        if (!strcmp(dev->super.attr.info.name, name)) {
            return &dev->super;
        }
    }
    return NULL;
}

/* An open device of this provider: one of the engine's */
int gda_ft_soft_is_soft_dev(gda_ft_hca_dev_t *hca_dev)
{
    gda_ft_soft_dev_t *dev;

    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        if (&dev->super == hca_dev) {
            return 1;
        }
    }
    return 0;
}

/* ---- what the HCA writes back: CQEs, events, a QP in error -------- */

/* The CQ's completion event, when its consumer armed it: the CQE is in
 * place; the fence orders that store before the load of the armed word, as
 * the consumer's orders its store of the word before it looks at the CQ */
static void gda_ft_soft_cq_notify(gda_ft_soft_cq_t *cq)
{
    int32_t *armed = cq->super.attr.event_armed;
    uint64_t one   = 1;

    if (armed == NULL) {
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((__atomic_load_n(armed, __ATOMIC_RELAXED) != 0) &&
        (__atomic_exchange_n(armed, 0, __ATOMIC_ACQ_REL) != 0) &&
        (write(cq->super.attr.event_fd, &one, sizeof(one)) < 0) &&
        (errno != EAGAIN)) {
        ucs_warn("%s: CQ %u: cannot write its event fd %d: %m",
                 cq->super.dev->attr.info.name, cq->super.cqn,
                 cq->super.attr.event_fd);
    }
}

void gda_ft_soft_cq_write(gda_ft_soft_cq_t *cq, uint8_t opcode,
                          uint8_t syndrome, uint16_t wqe_counter,
                          uint32_t qpn, uint8_t wqe_opcode,
                          uint32_t byte_cnt, uint32_t imm)
{
    gda_ft_hca_cq_attr_t *attr = &cq->super.attr;
    unsigned index             = cq->pi & (attr->cqe_cnt - 1);
    gda_ft_mlx5_cqe64_t cqe;
    gda_ft_mlx5_err_cqe_t *err;
    gda_ft_mlx5_cqe64_t *dst;
    uint32_t tail;
    uint8_t owner;

    gda_ft_soft_mem_flush();   /* what it completes is in place first */

    memset(&cqe, 0, sizeof(cqe));
    if ((opcode == GDA_FT_MLX5_CQE_REQ_ERR) ||
        (opcode == GDA_FT_MLX5_CQE_RESP_ERR)) {
        err                   = (gda_ft_mlx5_err_cqe_t*)&cqe;
        err->syndrome         = syndrome;
        err->vendor_err_synd  = syndrome;
        err->s_wqe_opcode_qpn = htonl(((uint32_t)wqe_opcode << 24) |
                                      (qpn & 0xffffff));
    } else {
        cqe.byte_cnt       = htonl(byte_cnt);
        cqe.imm_inval_pkey = imm;  /* already big-endian from the wire */
        cqe.sop_drop_qpn   = htonl(((uint32_t)wqe_opcode << 24) |
                                   (qpn & 0xffffff));
    }
    cqe.wqe_counter = htons(wqe_counter);

    owner = (attr->flags & GDA_FT_HCA_CQ_COLLAPSED) ? 0 :
            !!(cq->pi & attr->cqe_cnt);
    dst   = (gda_ft_mlx5_cqe64_t*)attr->buf + index;

    /* The body first; then wqe_counter, signature and op_own together in
     * one release store, as hardware makes the CQE valid only when all of
     * it is written. A poller of a collapsed CQ reads that word in one
     * load: it never sees a new op_own with an old counter, or the
     * reverse. */
    cqe.op_own = (uint8_t)((opcode << 4) | owner);
    memcpy(&tail, &cqe.wqe_counter, sizeof(tail));
    memcpy(dst, &cqe, offsetof(gda_ft_mlx5_cqe64_t, wqe_counter));
    __atomic_store_n((uint32_t*)&dst->wqe_counter, tail, __ATOMIC_RELEASE);
    ++cq->pi;
    gda_ft_soft_cq_notify(cq);
}

void gda_ft_soft_dev_post_event(gda_ft_soft_dev_t *dev,
                                gda_ft_hca_event_type_t type, uint8_t port,
                                uint32_t qpn)
{
    uint64_t one = 1;
    gda_ft_hca_event_t *event;

    if ((dev->event_tail - dev->event_head) == GDA_FT_SOFT_EVENT_QUEUE) {
        ++dev->event_head;   /* overflow: drop the oldest */
    }
    event = &dev->events[dev->event_tail++ % GDA_FT_SOFT_EVENT_QUEUE];
    event->type     = type;
    event->port_num = port;
    event->qpn      = qpn;
    if (write(dev->event_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: the reader will still find the queue */
    }
}

/* The QP's outstanding work is flushed by its worker's next pass
 * (gda_ft_soft_req_progress), after the error CQE that caused this */
void gda_ft_soft_qp_enter_error(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_dev_t *dev = ucs_derived_of(qp->super.dev, gda_ft_soft_dev_t);

    if (qp->super.state == GDA_FT_HCA_QP_ERR) {
        return;
    }

    __atomic_store_n(&qp->super.state, GDA_FT_HCA_QP_ERR,
                     __ATOMIC_RELAXED);   /* read by qp_query */
    gda_ft_soft_dev_post_event(dev, GDA_FT_HCA_EVENT_QP_FATAL,
                               qp->super.init.port_num, qp->super.qpn);
}


/* ---- transmit: the fault hooks, loopback queues, the socket ------- */

static void gda_ft_soft_delay(gda_ft_soft_port_t *port, uint32_t dst_ip,
                              const void *pkt, size_t len, uint64_t delay_ns)
{
    gda_ft_soft_delayed_t *delayed;
    ucs_list_link_t *head, *pos;

    delayed = malloc(sizeof(*delayed) + len);
    if (delayed == NULL) {
        ++port->stats.fault_dropped;
        return;
    }

    delayed->due                 = gda_ft_soft_now_ns() + delay_ns;
    delayed->port                = port;
    delayed->dst                 = port->addr;
    delayed->dst.sin_addr.s_addr = dst_ip;
    delayed->len                 = len;
    memcpy(delayed->data, pkt, len);

    /* Keep the list sorted by due time, equal times in arrival order. The
     * walk starts from the tail: a paced port's packet is due after every
     * other, and thousands of them may wait at once */
    head = &port->dev->worker->delayed;
    pos  = head->prev;
    while ((pos != head) &&
           (ucs_container_of(pos, gda_ft_soft_delayed_t, list)->due >
            delayed->due)) {
        pos = pos->prev;
    }
    ucs_list_insert_after(pos, &delayed->list);
    ++port->stats.fault_delayed;
}

int gda_ft_soft_fault_tx(gda_ft_soft_port_t *port, uint32_t dst_ip,
                         const void *pkt, size_t len, int is_response)
{
    const gda_ft_soft_fault_t *fault = &port->fault;
    gda_ft_soft_worker_t *worker     = port->dev->worker;
    uint64_t now;

    /* 1 draws no random number: the other faults' sequence stays as
     * without it */
    if (is_response && (fault->ack_drop > 0) &&
        ((fault->ack_drop >= 1.0) ||
         (gda_ft_soft_random(worker) < fault->ack_drop))) {
        ++port->stats.fault_dropped;
        return 1;
    }

    if ((fault->drop > 0) && (gda_ft_soft_random(worker) < fault->drop)) {
        ++port->stats.fault_dropped;
        return 1;
    }

    if ((fault->delay > 0) && (gda_ft_soft_random(worker) < fault->delay)) {
        gda_ft_soft_delay(port, dst_ip, pkt, len,
                          (uint64_t)(fault->delay_time * 1e9));
        return 1;
    }

    if ((fault->reorder > 0) && (gda_ft_soft_random(worker) < fault->reorder)) {
        /* Held back briefly: the packets sent next overtake it */
        gda_ft_soft_delay(port, dst_ip, pkt, len,
                          20000 + (uint64_t)(gda_ft_soft_random(worker) * 80000));
        return 1;
    }

    if (fault->pace_time > 0) {
        /* In line behind what the port still has to send */
        now               = gda_ft_soft_now_ns();
        port->pace_due_ns = ucs_max(now, port->pace_due_ns) +
                            (uint64_t)(fault->pace_time * 1e9);
        gda_ft_soft_delay(port, dst_ip, pkt, len, port->pace_due_ns - now);
        return 1;
    }

    return 0;
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
 * Queues a datagram for a port of this process, which another worker may
 * serve. A full queue drops it, as a full socket buffer would;
 * retransmission recovers.
 */
static void gda_ft_soft_loopback_send(gda_ft_soft_port_t *from,
                                      gda_ft_soft_port_t *to,
                                      const void *pkt, size_t len)
{
    gda_ft_soft_worker_t *worker = to->dev->worker;
    gda_ft_soft_loopback_pkt_t *lb;
    unsigned tail;

    pthread_spin_lock(&to->lb_lock);
    if (to->lb_queue == NULL) {
        to->lb_queue = ucs_malloc(GDA_FT_SOFT_LOOPBACK_QUEUE *
                                  sizeof(*to->lb_queue), "soft_loopback");
    }
    tail = to->lb_tail;
    if ((to->lb_queue == NULL) ||
        ((tail - __atomic_load_n(&to->lb_head, __ATOMIC_ACQUIRE)) ==
         GDA_FT_SOFT_LOOPBACK_QUEUE)) {
        pthread_spin_unlock(&to->lb_lock);
        ++from->stats.fault_dropped;
        return;
    }

    lb             = &to->lb_queue[tail % GDA_FT_SOFT_LOOPBACK_QUEUE];
    lb->arrival_ns = gda_ft_soft_realtime_ns();
    lb->src        = from->addr;
    lb->len        = len;
    memcpy(lb->data, pkt, len);
    /* the datagram, then its place in the queue: the receiving worker
     * reads the tail without the lock */
    __atomic_store_n(&to->lb_tail, tail + 1, __ATOMIC_RELEASE);
    pthread_spin_unlock(&to->lb_lock);
    ++from->stats.tx_pkts;
    from->stats.tx_bytes += len;

    /* A worker that has said it is going to sleep is woken, as the kernel
     * wakes one for a datagram; one that has not will see the count (both
     * sides store, then load, in sequential consistency) */
    __atomic_fetch_add(&worker->loopback_queued, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&worker->sleeping, __ATOMIC_SEQ_CST)) {
        gda_ft_soft_worker_wake(worker);
    }
}

/* With the engine lock exclusive: no worker sends or receives */
void gda_ft_soft_loopback_close(gda_ft_soft_port_t *port)
{
    __atomic_fetch_sub(&port->dev->worker->loopback_queued,
                       port->lb_tail - port->lb_head, __ATOMIC_RELAXED);
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
    /* a packet may tell the peer that what this thread wrote is in
     * place (an ACK, a response, the next request): it is, first */
    gda_ft_soft_mem_flush();

    if (!gda_ft_soft_port_is_up(port) &&
        (port->dev->worker->late_port != port)) {
        ++port->stats.fault_dropped;
        return;
    }

    if (gda_ft_soft_fault_tx(port, dst_ip, pkt, len, is_response)) {
        return;   /* dropped or queued by the fault injector */
    }

    gda_ft_soft_sendto(port, dst_ip, pkt, len);
}
