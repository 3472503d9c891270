/*
 * Software HCA: device enumeration and the verbs-like provider operations
 * (PD, MR, CQ, QP and their state changes). The configuration is
 * gda_ft_soft_config.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

extern const gda_ft_hca_provider_t gda_ft_soft_provider;

static ucs_status_t gda_ft_soft_query_devices(gda_ft_hca_dev_info_t **infos_p,
                                              unsigned *count_p)
{
    struct sockaddr_in addrs[GDA_FT_SOFT_MAX_DEVS][GDA_FT_HCA_MAX_PORTS];
    ucs_status_t status;
    unsigned i;

    status = gda_ft_soft_config_get();
    if (status != UCS_OK) {
        return status;
    }

    status = gda_ft_soft_parse_devices(gda_ft_soft_engine.config.devices,
                                       infos_p, count_p, addrs);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; i < *count_p; ++i) {
        (*infos_p)[i].provider = &gda_ft_soft_provider;
    }
    return UCS_OK;
}

static uint32_t gda_ft_soft_random_u32(void)
{
    uint32_t value;

    if (getrandom(&value, sizeof(value), 0) != sizeof(value)) {
        value = (uint32_t)random() ^ ((uint32_t)random() << 16);
    }
    return value;
}

static ucs_status_t gda_ft_soft_port_open(gda_ft_soft_port_t *port)
{
    struct epoll_event ev = {0};
    char addr_str[32];
    int fd, bufsize = 4 << 20, on = 1;

    inet_ntop(AF_INET, &port->addr.sin_addr, addr_str, sizeof(addr_str));
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("%s: socket() failed: %m", port->dev->super.attr.info.name);
        return UCS_ERR_IO_ERROR;
    }

    /* Large buffers absorb bursts of a window; the FORCE variants exceed
     * net.core.rmem_max when allowed (root) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsize,
                   sizeof(bufsize)) < 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsize,
                   sizeof(bufsize)) < 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
    }
    /* Arrival times: a port that goes down still handles what reached it
     * before (gda_ft_soft_rx) */
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
    if (bind(fd, (struct sockaddr*)&port->addr, sizeof(port->addr)) < 0) {
        if (errno == EADDRINUSE) {
            /* Another process (or socket) has this port's address: a
             * second process given the same UCX_GDA_FT_SOFT_DEVICES */
            ucs_error("soft HCA %s port %u: UDP address %s:%u is in use, "
                      "probably by another process given the same "
                      "UCX_GDA_FT_SOFT_DEVICES: each process needs addresses "
                      "or a UDP port of its own (name=ADDR[:UDP_PORT])",
                      port->dev->super.attr.info.name, port->num, addr_str,
                      ntohs(port->addr.sin_port));
            close(fd);
            return UCS_ERR_BUSY;
        }
        ucs_error("soft HCA %s port %u: cannot bind UDP address %s:%u: %m",
                  port->dev->super.attr.info.name, port->num, addr_str,
                  ntohs(port->addr.sin_port));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    ev.events   = EPOLLIN;
    ev.data.ptr = port;
    if (epoll_ctl(port->dev->worker->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        ucs_error("epoll_ctl(ADD) failed: %m");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    port->fd = fd;
    ucs_debug("%s: port %u on %s:%u", port->dev->super.attr.info.name,
              port->num, addr_str, ntohs(port->addr.sin_port));
    return UCS_OK;
}

static void gda_ft_soft_port_close(gda_ft_soft_port_t *port)
{
    gda_ft_soft_loopback_close(port);
    if (port->fd >= 0) {
        epoll_ctl(port->dev->worker->epfd, EPOLL_CTL_DEL, port->fd, NULL);
        close(port->fd);
        port->fd = -1;
    }
}

static void gda_ft_soft_dev_free(gda_ft_soft_dev_t *dev)
{
    unsigned p;

    for (p = 0; p < GDA_FT_HCA_MAX_PORTS; ++p) {
        pthread_spin_destroy(&dev->ports[p].lb_lock);
    }
    free(dev);
}

static ucs_status_t gda_ft_soft_dev_open(const gda_ft_hca_dev_info_t *info,
                                         gda_ft_hca_dev_t **dev_p)
{
    struct sockaddr_in addrs[GDA_FT_SOFT_MAX_DEVS][GDA_FT_HCA_MAX_PORTS];
    gda_ft_soft_config_t *config = &gda_ft_soft_engine.config;
    gda_ft_hca_dev_info_t *infos = NULL;
    gda_ft_soft_dev_t *dev;
    ucs_status_t status;
    unsigned count, i, p;

    status = gda_ft_soft_engine_get();
    if (status != UCS_OK) {
        return status;
    }

    gda_ft_soft_engine_lock();
    if (gda_ft_soft_dev_find(info->name) != NULL) {
        ucs_error("soft HCA %s is already open in this process", info->name);
        status = UCS_ERR_BUSY;
        goto err_unlock;
    }

    status = gda_ft_soft_parse_devices(config->devices, &infos, &count,
                                       addrs);
    if (status != UCS_OK) {
        goto err_unlock;
    }

    for (i = 0; (i < count) && strcmp(infos[i].name, info->name); ++i) {
    }
    if (i == count) {
        status = UCS_ERR_NO_DEVICE;
        goto err_free_infos;
    }

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_infos;
    }

    dev->super.provider                = &gda_ft_soft_provider;
    dev->super.attr.info               = infos[i];
    dev->super.attr.info.provider      = &gda_ft_soft_provider;
    dev->super.attr.ring_mem_caps      =
            GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST) |
            GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST_MAPPED);
    dev->super.attr.mr_mem_caps        =
            GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST) |
            GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST_MAPPED) |
            GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_CUDA);
    dev->super.attr.max_sq_wqebb       = 32768;
    dev->super.attr.max_rq_wqe         = 32768;
    dev->super.attr.max_inline         = GDA_FT_SOFT_MAX_INLINE;
    dev->super.attr.max_msg_size       = 1ul << 31;
    dev->super.attr.max_rd_atomic      = 16;
    dev->super.attr.masked_atomics     = 1;
    dev->super.attr.flags              = GDA_FT_HCA_DEV_FLAG_CPU_ENGINE |
                                         GDA_FT_HCA_DEV_FLAG_IPV4_ONLY |
                                         GDA_FT_HCA_DEV_FLAG_CQ_EVENTS;
    if (gda_ft_soft_engine.config.atomic_host_order) {
        dev->super.attr.flags |= GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER;
    }
    dev->engine                        = &gda_ft_soft_engine;
    dev->worker                        = gda_ft_soft_worker_of(i);
    dev->next_pdn                      = 1;
    dev->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (dev->event_fd < 0) {
        status = UCS_ERR_IO_ERROR;
        goto err_free_dev;
    }

    for (p = 0; p < GDA_FT_HCA_MAX_PORTS; ++p) {
        dev->ports[p].fd  = -1;
        dev->ports[p].dev = dev;
        pthread_spin_init(&dev->ports[p].lb_lock, PTHREAD_PROCESS_PRIVATE);
    }

    for (p = 0; p < info->num_ports; ++p) {
        dev->ports[p].dev         = dev;
        dev->ports[p].num         = p + 1;
        dev->ports[p].addr        = addrs[i][p];
        dev->ports[p].admin_up    = 1;
        dev->ports[p].link_up     = 1;
        dev->ports[p].reported_up = 1;
        dev->ports[p].fault.drop       = config->drop;
        dev->ports[p].fault.delay      = config->delay;
        dev->ports[p].fault.delay_time = config->delay_time;
        dev->ports[p].fault.reorder    = config->reorder;
        dev->ports[p].fault.ack_drop   = config->ack_drop;
        status = gda_ft_soft_port_open(&dev->ports[p]);
        if (status != UCS_OK) {
            goto err_close_ports;
        }
    }

    ucs_list_add_tail(&gda_ft_soft_engine.devs, &dev->list);
    gda_ft_soft_engine_unlock();
    free(infos);
    *dev_p = &dev->super;
    return UCS_OK;

err_close_ports:
    for (p = 0; p < info->num_ports; ++p) {
        gda_ft_soft_port_close(&dev->ports[p]);
    }
    close(dev->event_fd);
err_free_dev:
    gda_ft_soft_dev_free(dev);
err_free_infos:
    free(infos);
err_unlock:
    gda_ft_soft_engine_unlock();
    gda_ft_soft_engine_put();
    return status;
}

/* Like closing a verbs context: MRs still registered on the device go */
static void gda_ft_soft_dev_release_mrs(gda_ft_soft_dev_t *dev)
{
    khash_t(gda_ft_soft_mr) *hash = &gda_ft_soft_engine.mr_hash;
    unsigned count = 0;
    gda_ft_soft_mr_t *mr;
    khiter_t iter;

    for (iter = kh_begin(hash); iter != kh_end(hash); ++iter) {
        if (!kh_exist(hash, iter)) {
            continue;
        }
        mr = kh_val(hash, iter);
        if (mr->dev == &dev->super) {
            kh_del(gda_ft_soft_mr, hash, iter);
            free(mr);
            ++count;
        }
    }

    if (count > 0) {
        ucs_debug("%s: released %u memory regions left registered",
                  dev->super.attr.info.name, count);
    }
}

static void gda_ft_soft_dev_close(gda_ft_hca_dev_t *hca_dev)
{
    gda_ft_soft_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_soft_dev_t);
    gda_ft_soft_delayed_t *delayed, *tmp;
    unsigned p;

    gda_ft_soft_engine_lock();
    gda_ft_soft_dev_release_mrs(dev);
    ucs_list_for_each_safe(delayed, tmp, &dev->worker->delayed, list) {
        if (delayed->port->dev == dev) {
            ucs_list_del(&delayed->list);
            free(delayed);
        }
    }
    for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
        /* what each port carried, for a program whose traffic is asked
         * to have gone through it (the perftest tests) */
        ucs_info("%s:%u carried tx %lu packets %lu bytes, rx %lu packets "
                 "%lu bytes, %lu retransmissions",
                 dev->super.attr.info.name, dev->ports[p].num,
                 dev->ports[p].stats.tx_pkts, dev->ports[p].stats.tx_bytes,
                 dev->ports[p].stats.rx_pkts, dev->ports[p].stats.rx_bytes,
                 dev->ports[p].stats.retransmits);
        gda_ft_soft_port_close(&dev->ports[p]);
    }
    ucs_list_del(&dev->list);
    gda_ft_soft_engine_unlock();

    close(dev->event_fd);
    gda_ft_soft_dev_free(dev);
    gda_ft_soft_engine_put();
}

static ucs_status_t gda_ft_soft_port_query(gda_ft_hca_dev_t *hca_dev,
                                           uint8_t port_num,
                                           gda_ft_hca_port_attr_t *attr)
{
    gda_ft_soft_dev_t *dev   = ucs_derived_of(hca_dev, gda_ft_soft_dev_t);
    gda_ft_soft_port_t *port = &dev->ports[port_num - 1];

    memset(attr, 0, sizeof(*attr));
    attr->state      = gda_ft_soft_port_is_up(port) ? GDA_FT_HCA_PORT_ACTIVE :
                                                      GDA_FT_HCA_PORT_DOWN;
    attr->active_mtu = gda_ft_soft_engine.config.mtu;
    gda_ft_hca_gid_from_ipv4(port->addr.sin_addr.s_addr, attr->gid);
    return UCS_OK;
}

static ucs_status_t gda_ft_soft_get_event(gda_ft_hca_dev_t *hca_dev,
                                          gda_ft_hca_event_t *event)
{
    gda_ft_soft_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_soft_dev_t);
    ucs_status_t status    = UCS_ERR_NO_ELEM;
    uint64_t value;

    gda_ft_soft_engine_lock();
    if (dev->event_head != dev->event_tail) {
        *event = dev->events[dev->event_head++ % GDA_FT_SOFT_EVENT_QUEUE];
        status = UCS_OK;
    } else if (read(dev->event_fd, &value, sizeof(value)) < 0) {
        /* drained */
    }
    gda_ft_soft_engine_unlock();
    return status;
}

static int gda_ft_soft_event_fd(gda_ft_hca_dev_t *hca_dev)
{
    return ucs_derived_of(hca_dev, gda_ft_soft_dev_t)->event_fd;
}

static ucs_status_t gda_ft_soft_pd_alloc(gda_ft_hca_dev_t *hca_dev,
                                         gda_ft_hca_pd_t **pd_p)
{
    gda_ft_soft_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_soft_dev_t);
    gda_ft_hca_pd_t *pd;

    pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pd->dev = hca_dev;
    gda_ft_soft_engine_lock();
    pd->pdn = dev->next_pdn++;
    gda_ft_soft_engine_unlock();
    *pd_p = pd;
    return UCS_OK;
}

static void gda_ft_soft_pd_free(gda_ft_hca_pd_t *pd)
{
    free(pd);
}

static ucs_status_t gda_ft_soft_mr_reg(gda_ft_hca_pd_t *pd,
                                       const gda_ft_hca_mr_attr_t *attr,
                                       gda_ft_hca_mr_t **mr_p)
{
    gda_ft_soft_mr_t *mr;
    khiter_t iter;
    uint32_t key;
    int ret;

    if (gda_ft_soft_mem_prepare(attr->mem_type) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;   /* logged by the loader */
    }
    if (attr->mem_type == GDA_FT_HCA_MEM_CUDA) {
        gda_ft_soft_engine_prepare_cuda();
    }

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    mr->super.pd       = pd;
    mr->dev            = pd->dev;
    mr->super.addr     = attr->addr;
    mr->super.length   = attr->length;
    mr->super.access   = attr->access;
    mr->super.mem_type = attr->mem_type;

    gda_ft_soft_engine_lock();
    /* Keys are random so that a peer cannot guess another MR's key */
    do {
        key = gda_ft_soft_random_u32();
    } while ((key == 0) || (gda_ft_soft_mr_lookup(key) != NULL));
    iter = kh_put(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash, key, &ret);
    if (ret < 0) {
        gda_ft_soft_engine_unlock();
        free(mr);
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(&gda_ft_soft_engine.mr_hash, iter) = mr;
    gda_ft_soft_engine_unlock();

    mr->super.lkey = key;
    mr->super.rkey = key;
    *mr_p          = &mr->super;
    return UCS_OK;
}

static void gda_ft_soft_mr_dereg(gda_ft_hca_mr_t *mr)
{
    khiter_t iter;

    gda_ft_soft_engine_lock();
    iter = kh_get(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash, mr->lkey);
    if (iter != kh_end(&gda_ft_soft_engine.mr_hash)) {
        kh_del(gda_ft_soft_mr, &gda_ft_soft_engine.mr_hash, iter);
    }
    gda_ft_soft_engine_unlock();
    free(mr);
}

static ucs_status_t gda_ft_soft_cq_create(gda_ft_hca_dev_t *dev,
                                          const gda_ft_hca_cq_attr_t *attr,
                                          gda_ft_hca_cq_t **cq_p)
{
    static uint32_t next_cqn = 1;
    gda_ft_soft_cq_t *cq;

    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    cq->super.dev  = dev;
    cq->super.attr = *attr;
    gda_ft_soft_engine_lock();
    cq->super.cqn  = next_cqn++;
    gda_ft_soft_engine_unlock();
    *cq_p          = &cq->super;
    return UCS_OK;
}

static void gda_ft_soft_cq_destroy(gda_ft_hca_cq_t *cq)
{
    free(cq);
}

static ucs_status_t gda_ft_soft_qp_create(gda_ft_hca_pd_t *pd,
                                          const gda_ft_hca_qp_init_attr_t *attr,
                                          gda_ft_hca_qp_t **qp_p)
{
    gda_ft_soft_worker_t *worker = ucs_derived_of(pd->dev,
                                                  gda_ft_soft_dev_t)->worker;
    gda_ft_soft_qp_t *qp;
    khiter_t iter;
    uint32_t qpn;
    int ret;

    /* The device's worker writes the CQEs: a CQ of another device, which
     * another worker may write at the same time, is refused (verbs ties
     * both to one context, too) */
    if ((attr->send_cq->dev != pd->dev) ||
        ((attr->recv_cq != NULL) && (attr->recv_cq->dev != pd->dev))) {
        ucs_error("soft HCA %s: a QP's CQs must be of its own device",
                  pd->dev->attr.info.name);
        return UCS_ERR_INVALID_PARAM;
    }

    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    qp->ops = calloc(attr->sq_wqebb_cnt, sizeof(*qp->ops));
    if (qp->ops == NULL) {
        free(qp);
        return UCS_ERR_NO_MEMORY;
    }

    qp->super.dev     = pd->dev;
    qp->super.pd      = pd;
    qp->super.state   = GDA_FT_HCA_QP_RESET;
    qp->super.init    = *attr;
    qp->super.uar     = &qp->uar_word;
    qp->super.wake_fd    = worker->wake_fd;
    qp->super.wake_armed = &worker->sleeping;

    gda_ft_soft_engine_lock();
    do {
        qpn = gda_ft_soft_random_u32() & 0xffffff;
    } while ((qpn < 2) ||
             (kh_get(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, qpn) !=
              kh_end(&gda_ft_soft_engine.qp_hash)));
    iter = kh_put(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, qpn, &ret);
    if (ret < 0) {
        gda_ft_soft_engine_unlock();
        free(qp->ops);
        free(qp);
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(&gda_ft_soft_engine.qp_hash, iter) = qp;
    qp->super.qpn = qpn;
    gda_ft_soft_qp_reset_state(qp);
    ucs_list_add_tail(&worker->qps, &qp->list);
    qp->keeps_awake = (attr->ring_mem != GDA_FT_HCA_MEM_HOST) ||
                      ((attr->response_ns != 0) &&
                       (attr->response_ns < GDA_FT_SOFT_AWAKE_BELOW_NS));
    worker->awake_qps += qp->keeps_awake;
    gda_ft_soft_engine_unlock();

    *qp_p = &qp->super;
    return UCS_OK;
}

/*
 * A fence of a path the transport gave up on, with work left: where the
 * QP's requester and responder stood, its worker, and the responder of its
 * peer when that is in this process, tell a dead link from a stuck QP
 */
static void gda_ft_soft_qp_log_fence(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_worker_t *worker = ucs_derived_of(qp->super.dev,
                                                  gda_ft_soft_dev_t)->worker;
    gda_ft_soft_qp_t *peer       = gda_ft_soft_qp_lookup(qp->dest_qpn);
    /* the worker writes them outside the lock too (it sleeps without it) */
    uint64_t last_pass_ns        = __atomic_load_n(&worker->last_pass_ns,
                                                   __ATOMIC_RELAXED);
    uint64_t passes              = __atomic_load_n(&worker->stats.passes,
                                                   __ATOMIC_RELAXED);
    char req[320], resp[160], last_pass[48];

    if (last_pass_ns == 0) {
        ucs_snprintf_zero(last_pass, sizeof(last_pass), "none since it slept");
    } else {
        ucs_snprintf_zero(last_pass, sizeof(last_pass), "%.3f ms ago",
                          (gda_ft_soft_now_ns() - last_pass_ns) / 1e6);
    }
    ucs_diag("%s: QP 0x%x fenced with work left: requester %s; responder "
             "%s; its worker's last pass %s, %lu passes",
             qp->super.dev->attr.info.name, qp->super.qpn,
             gda_ft_soft_req_describe(qp, req, sizeof(req)),
             gda_ft_soft_resp_describe(qp, resp, sizeof(resp)), last_pass,
             passes);
    if (peer != NULL) {
        ucs_diag("%s: its peer QP 0x%x in this process: state %d, responder "
                 "%s", peer->super.dev->attr.info.name, peer->super.qpn,
                 peer->super.state,
                 gda_ft_soft_resp_describe(peer, resp, sizeof(resp)));
    }
}

static ucs_status_t gda_ft_soft_qp_modify(gda_ft_hca_qp_t *hca_qp,
                                          gda_ft_hca_qp_state_t state,
                                          const gda_ft_hca_qp_attr_t *attr)
{
    gda_ft_soft_qp_t *qp = gda_ft_soft_qp(hca_qp);
    ucs_status_t status  = UCS_OK;
    uint32_t ip;

    gda_ft_soft_engine_lock();
    switch (state) {
    case GDA_FT_HCA_QP_RESET:
        gda_ft_soft_qp_reset_state(qp);
        break;
    case GDA_FT_HCA_QP_INIT:
        if (qp->super.state == GDA_FT_HCA_QP_RESET) {
            /* Work starts where the producers are now */
            qp->sq_parse = gda_ft_be32toh(
                    qp->super.init.dbrec[GDA_FT_MLX5_SND_DBR]) & 0xffff;
            qp->rq_ci    = gda_ft_be32toh(
                    qp->super.init.dbrec[GDA_FT_MLX5_RCV_DBR]) & 0xffff;
        }
        qp->access = attr->access;
        break;
    case GDA_FT_HCA_QP_RTR:
        if (!gda_ft_hca_gid_to_ipv4(attr->dest_gid, &ip)) {
            ucs_error("%s: QP 0x%x: destination GID is not IPv4-mapped "
                      "(soft HCAs speak RoCEv2 over IPv4)",
                      qp->super.dev->attr.info.name, qp->super.qpn);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }
        qp->remote_ip     = ip;
        qp->dest_qpn      = attr->dest_qpn;
        qp->mtu           = ucs_min(attr->path_mtu,
                                    gda_ft_soft_engine.config.mtu);
        __atomic_store_n(&qp->epsn, attr->rq_psn, __ATOMIC_RELAXED);
        qp->min_rnr_timer = attr->min_rnr_timer;
        break;
    case GDA_FT_HCA_QP_RTS:
        __atomic_store_n(&qp->next_psn, attr->sq_psn, __ATOMIC_RELAXED);
        qp->acked_psn     = gda_ft_psn_add(attr->sq_psn, GDA_FT_ROCE_PSN_MASK);
        qp->timeout       = attr->timeout;
        qp->retry_cnt     = attr->retry_cnt;
        qp->rnr_retry     = attr->rnr_retry;
        qp->retries_left  = attr->retry_cnt;
        qp->rnr_left      = attr->rnr_retry;
        qp->max_rd_atomic = ucs_max(1, ucs_min(attr->max_rd_atomic, 16));
        break;
    case GDA_FT_HCA_QP_ERR:
        if ((qp->super.state == GDA_FT_HCA_QP_RTS) &&
            (qp->op_head != qp->op_tail)) {
            gda_ft_soft_qp_log_fence(qp);
        }
        __atomic_store_n(&qp->super.state, GDA_FT_HCA_QP_ERR,
                         __ATOMIC_RELAXED);
        gda_ft_soft_qp_flush(qp);
        goto out;
    default:
        status = UCS_ERR_INVALID_PARAM;
        goto out;
    }
    __atomic_store_n(&qp->super.state, state, __ATOMIC_RELAXED);
out:
    gda_ft_soft_engine_unlock();
    gda_ft_soft_engine_wake();
    return status;
}

static ucs_status_t gda_ft_soft_qp_query(gda_ft_hca_qp_t *hca_qp,
                                         gda_ft_hca_qp_query_attr_t *attr)
{
    gda_ft_soft_qp_t *qp = gda_ft_soft_qp(hca_qp);

    /* Without the engine lock, which waits for every engine thread's pass
     * (a guardian reading its targets every pass took 15-20 ms a pass
     * under 512 warps). A request being executed moves epsn only once it
     * is done; after a move to ERR, which takes the lock, nothing moves
     * it any more: gda_ft_chan_host_fence_qp() reads it exact. */
    attr->state    = __atomic_load_n(&qp->super.state, __ATOMIC_RELAXED);
    attr->sq_psn   = __atomic_load_n(&qp->next_psn, __ATOMIC_RELAXED);
    attr->rq_psn   = __atomic_load_n(&qp->epsn, __ATOMIC_RELAXED);
    attr->path_mtu = qp->mtu;
    return UCS_OK;
}

static void gda_ft_soft_qp_destroy(gda_ft_hca_qp_t *hca_qp)
{
    gda_ft_soft_qp_t *qp = gda_ft_soft_qp(hca_qp);
    khiter_t iter;

    gda_ft_soft_engine_lock();
    iter = kh_get(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, hca_qp->qpn);
    if (iter != kh_end(&gda_ft_soft_engine.qp_hash)) {
        kh_del(gda_ft_soft_qp, &gda_ft_soft_engine.qp_hash, iter);
    }
    ucs_list_del(&qp->list);
    gda_ft_soft_qp_reset_state(qp);
    ucs_derived_of(hca_qp->dev, gda_ft_soft_dev_t)->worker->awake_qps -=
            qp->keeps_awake;
    gda_ft_soft_engine_unlock();
    free(qp->ops);
    free(qp);
}

const gda_ft_hca_provider_t gda_ft_soft_provider = {
    .name          = "soft",
    .query_devices = gda_ft_soft_query_devices,
    .dev_open      = gda_ft_soft_dev_open,
    .dev_close     = gda_ft_soft_dev_close,
    .port_query    = gda_ft_soft_port_query,
    .get_event     = gda_ft_soft_get_event,
    .event_fd      = gda_ft_soft_event_fd,
    .pd_alloc      = gda_ft_soft_pd_alloc,
    .pd_free       = gda_ft_soft_pd_free,
    .mr_reg        = gda_ft_soft_mr_reg,
    .mr_dereg      = gda_ft_soft_mr_dereg,
    .cq_create     = gda_ft_soft_cq_create,
    .cq_destroy    = gda_ft_soft_cq_destroy,
    .qp_create     = gda_ft_soft_qp_create,
    .qp_modify     = gda_ft_soft_qp_modify,
    .qp_query      = gda_ft_soft_qp_query,
    .qp_destroy    = gda_ft_soft_qp_destroy
};

static void UCS_F_CTOR gda_ft_soft_provider_init(void)
{
    gda_ft_hca_provider_register(&gda_ft_soft_provider);
}
