/*
 * Provider registry and argument-checking dispatchers.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_hca.h"

#include <ucs/debug/log.h>
#include <ucs/debug/assert.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define GDA_FT_HCA_MAX_PROVIDERS 4

static const gda_ft_hca_provider_t *gda_ft_hca_providers[GDA_FT_HCA_MAX_PROVIDERS];
static int gda_ft_hca_hidden[GDA_FT_HCA_MAX_PROVIDERS];
static unsigned gda_ft_hca_num_providers;

void gda_ft_hca_provider_register(const gda_ft_hca_provider_t *provider)
{
    ucs_assert_always(gda_ft_hca_num_providers < GDA_FT_HCA_MAX_PROVIDERS);
    gda_ft_hca_providers[gda_ft_hca_num_providers++] = provider;
}

void gda_ft_hca_provider_hide(const gda_ft_hca_provider_t *provider)
{
    unsigned i;

    for (i = 0; i < gda_ft_hca_num_providers; ++i) {
        if (gda_ft_hca_providers[i] == provider) {
            gda_ft_hca_hidden[i] = 1;
        }
    }
}

static int gda_ft_hca_provider_hidden(const gda_ft_hca_provider_t *provider)
{
    unsigned i;

    for (i = 0; i < gda_ft_hca_num_providers; ++i) {
        if (gda_ft_hca_providers[i] == provider) {
            return gda_ft_hca_hidden[i];
        }
    }
    return 0;
}

ucs_status_t gda_ft_hca_query_devices(gda_ft_hca_dev_info_t **infos_p,
                                      unsigned *count_p)
{
    gda_ft_hca_dev_info_t *all = NULL, *infos, *tmp;
    unsigned total = 0, count, i;
    ucs_status_t status;

    for (i = 0; i < gda_ft_hca_num_providers; ++i) {
        status = gda_ft_hca_providers[i]->query_devices(&infos, &count);
        if (status != UCS_OK) {
            ucs_debug("provider %s found no devices: %s",
                      gda_ft_hca_providers[i]->name,
                      ucs_status_string(status));
            continue;
        }

        if (count > 0) {
            tmp = realloc(all, (total + count) * sizeof(*all));
            if (tmp == NULL) {
                free(infos);
                free(all);
                return UCS_ERR_NO_MEMORY;
            }
            all = tmp;
            memcpy(all + total, infos, count * sizeof(*all));
            total += count;
        }
        free(infos);
    }

    /* asking a provider may hide another (one that comes before it) */
    for (i = 0, count = 0; i < total; ++i) {
        if (!gda_ft_hca_provider_hidden(all[i].provider)) {
            all[count++] = all[i];
        }
    }

    *infos_p = all;
    *count_p = count;
    return UCS_OK;
}

void gda_ft_hca_free_device_list(gda_ft_hca_dev_info_t *infos)
{
    free(infos);
}

ucs_status_t gda_ft_hca_open(const char *name, gda_ft_hca_dev_t **dev_p)
{
    gda_ft_hca_dev_info_t *infos;
    ucs_status_t status;
    unsigned count, i;

    status = gda_ft_hca_query_devices(&infos, &count);
    if (status != UCS_OK) {
        return status;
    }

    status = UCS_ERR_NO_DEVICE;
    for (i = 0; i < count; ++i) {
        if (!strcmp(infos[i].name, name)) {
            status = infos[i].provider->dev_open(&infos[i], dev_p);
            break;
        }
    }

    if (i == count) {
        ucs_error("no HCA named '%s' (%u devices found)", name,
                  count);
    }
    gda_ft_hca_free_device_list(infos);
    return status;
}

void gda_ft_hca_close(gda_ft_hca_dev_t *dev)
{
    if (dev != NULL) {
        dev->provider->dev_close(dev);
    }
}

ucs_status_t gda_ft_hca_port_query(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                   gda_ft_hca_port_attr_t *attr)
{
    if ((port_num < 1) || (port_num > dev->attr.info.num_ports)) {
        ucs_error("%s: invalid port %u (device has %u)", dev->attr.info.name,
                  port_num, dev->attr.info.num_ports);
        return UCS_ERR_INVALID_PARAM;
    }
    return dev->provider->port_query(dev, port_num, attr);
}

ucs_status_t gda_ft_hca_get_event(gda_ft_hca_dev_t *dev,
                                  gda_ft_hca_event_t *event)
{
    return dev->provider->get_event(dev, event);
}

int gda_ft_hca_event_fd(gda_ft_hca_dev_t *dev)
{
    return dev->provider->event_fd(dev);
}

ucs_status_t gda_ft_hca_pd_alloc(gda_ft_hca_dev_t *dev, gda_ft_hca_pd_t **pd_p)
{
    return dev->provider->pd_alloc(dev, pd_p);
}

void gda_ft_hca_pd_free(gda_ft_hca_pd_t *pd)
{
    if (pd != NULL) {
        pd->dev->provider->pd_free(pd);
    }
}

ucs_status_t gda_ft_hca_mr_reg(gda_ft_hca_pd_t *pd,
                               const gda_ft_hca_mr_attr_t *attr,
                               gda_ft_hca_mr_t **mr_p)
{
    gda_ft_hca_dev_t *dev = pd->dev;

    if (attr->mem_type >= GDA_FT_HCA_MEM_LAST) {
        ucs_error("%s: invalid memory type %d", dev->attr.info.name,
                  attr->mem_type);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!(dev->attr.mr_mem_caps & GDA_FT_HCA_MEM_BIT(attr->mem_type))) {
        ucs_error("%s: cannot register memory of type %d",
                  dev->attr.info.name, attr->mem_type);
        return UCS_ERR_UNSUPPORTED;
    }

    if ((attr->addr == NULL) && (attr->length > 0)) {
        ucs_error("%s: NULL address with length %zu", dev->attr.info.name,
                  attr->length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (((uintptr_t)attr->addr + attr->length) < (uintptr_t)attr->addr) {
        ucs_error("%s: region %p+%zu wraps around", dev->attr.info.name,
                  attr->addr, attr->length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (attr->access & ~GDA_FT_HCA_ACCESS_ALL) {
        ucs_error("%s: unknown access flags 0x%x", dev->attr.info.name,
                  attr->access);
        return UCS_ERR_INVALID_PARAM;
    }

    return dev->provider->mr_reg(pd, attr, mr_p);
}

void gda_ft_hca_mr_dereg(gda_ft_hca_mr_t *mr)
{
    if (mr != NULL) {
        mr->pd->dev->provider->mr_dereg(mr);
    }
}

static int gda_ft_hca_is_pow2(unsigned n)
{
    return (n != 0) && ((n & (n - 1)) == 0);
}

ucs_status_t gda_ft_hca_cq_create(gda_ft_hca_dev_t *dev,
                                  const gda_ft_hca_cq_attr_t *attr,
                                  gda_ft_hca_cq_t **cq_p)
{
    if ((attr->buf == NULL) || !gda_ft_hca_is_pow2(attr->cqe_cnt) ||
        ((attr->flags & GDA_FT_HCA_CQ_COLLAPSED) && (attr->cqe_cnt != 1))) {
        ucs_error("%s: invalid CQ buffer %p / cqe_cnt %u / flags 0x%x",
                  dev->attr.info.name, attr->buf, attr->cqe_cnt, attr->flags);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((attr->mem_type >= GDA_FT_HCA_MEM_LAST) ||
        !(dev->attr.ring_mem_caps & GDA_FT_HCA_MEM_BIT(attr->mem_type))) {
        ucs_error("%s: CQ buffer cannot live in memory type %d",
                  dev->attr.info.name, attr->mem_type);
        return UCS_ERR_UNSUPPORTED;
    }

    if ((attr->event_armed != NULL) &&
        (!(dev->attr.flags & GDA_FT_HCA_DEV_FLAG_CQ_EVENTS) ||
         (attr->event_fd < 0))) {
        ucs_error("%s: no completion events on this device, or no fd (%d) "
                  "for them", dev->attr.info.name, attr->event_fd);
        return UCS_ERR_UNSUPPORTED;
    }

    return dev->provider->cq_create(dev, attr, cq_p);
}

void gda_ft_hca_cq_destroy(gda_ft_hca_cq_t *cq)
{
    if (cq != NULL) {
        cq->dev->provider->cq_destroy(cq);
    }
}

ucs_status_t gda_ft_hca_qp_create(gda_ft_hca_pd_t *pd,
                                  const gda_ft_hca_qp_init_attr_t *attr,
                                  gda_ft_hca_qp_t **qp_p)
{
    gda_ft_hca_dev_t *dev = pd->dev;
    const char *name      = dev->attr.info.name;

    if ((attr->send_cq == NULL) || (attr->sq_buf == NULL) ||
        (attr->dbrec == NULL) || !gda_ft_hca_is_pow2(attr->sq_wqebb_cnt) ||
        (attr->sq_wqebb_cnt > dev->attr.max_sq_wqebb)) {
        ucs_error("%s: invalid send queue (cq %p buf %p dbrec %p size %u)",
                  name, attr->send_cq, attr->sq_buf, attr->dbrec,
                  attr->sq_wqebb_cnt);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((attr->recv_cq != NULL) &&
        ((attr->rq_buf == NULL) || !gda_ft_hca_is_pow2(attr->rq_wqe_cnt) ||
         (attr->rq_wqe_cnt > dev->attr.max_rq_wqe) ||
         !gda_ft_hca_is_pow2(attr->rq_wqe_size) ||
         (attr->rq_wqe_size < 16))) {
        ucs_error("%s: invalid receive queue (buf %p count %u stride %u)",
                  name, attr->rq_buf, attr->rq_wqe_cnt, attr->rq_wqe_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((attr->port_num < 1) || (attr->port_num > dev->attr.info.num_ports)) {
        ucs_error("%s: invalid port %u", name, attr->port_num);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((attr->ring_mem >= GDA_FT_HCA_MEM_LAST) ||
        !(dev->attr.ring_mem_caps & GDA_FT_HCA_MEM_BIT(attr->ring_mem))) {
        ucs_error("%s: QP rings cannot live in memory type %d", name,
                  attr->ring_mem);
        return UCS_ERR_UNSUPPORTED;
    }

    return dev->provider->qp_create(pd, attr, qp_p);
}

ucs_status_t gda_ft_hca_qp_modify(gda_ft_hca_qp_t *qp,
                                  gda_ft_hca_qp_state_t state,
                                  const gda_ft_hca_qp_attr_t *attr)
{
    gda_ft_hca_qp_state_t cur;
    int valid;

    /* RESET and ERR are reachable from anywhere: the state, which the HCA
     * may be changing (a QP that fails by itself), is not read for them */
    if ((state == GDA_FT_HCA_QP_RESET) || (state == GDA_FT_HCA_QP_ERR)) {
        return qp->dev->provider->qp_modify(qp, state, attr);
    }

    cur = qp->state;
    switch (state) {
    case GDA_FT_HCA_QP_INIT:
        valid = (cur == GDA_FT_HCA_QP_RESET) || (cur == GDA_FT_HCA_QP_INIT);
        break;
    case GDA_FT_HCA_QP_RTR:
        valid = (cur == GDA_FT_HCA_QP_INIT);
        break;
    case GDA_FT_HCA_QP_RTS:
        valid = (cur == GDA_FT_HCA_QP_RTR);
        break;
    default:
        valid = 0;
        break;
    }

    if (!valid) {
        ucs_error("%s: QP 0x%x: invalid transition %s -> %s",
                  qp->dev->attr.info.name, qp->qpn,
                  gda_ft_hca_qp_state_str(cur),
                  gda_ft_hca_qp_state_str(state));
        return UCS_ERR_INVALID_PARAM;
    }

    if ((attr == NULL) && ((state == GDA_FT_HCA_QP_INIT) ||
                           (state == GDA_FT_HCA_QP_RTR) ||
                           (state == GDA_FT_HCA_QP_RTS))) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((state == GDA_FT_HCA_QP_RTR) &&
        ((attr->path_mtu < 256) || (attr->path_mtu > 4096) ||
         !gda_ft_hca_is_pow2(attr->path_mtu) ||
         (attr->dest_qpn > 0xffffff) || (attr->rq_psn > 0xffffff) ||
         (attr->min_rnr_timer > 31))) {
        ucs_error("%s: QP 0x%x: invalid RTR parameters (mtu %u dest_qpn 0x%x"
                  " rq_psn 0x%x min_rnr_timer %u)", qp->dev->attr.info.name,
                  qp->qpn, attr->path_mtu, attr->dest_qpn, attr->rq_psn,
                  attr->min_rnr_timer);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((state == GDA_FT_HCA_QP_RTS) &&
        ((attr->sq_psn > 0xffffff) || (attr->timeout > 31) ||
         (attr->retry_cnt > 7) || (attr->rnr_retry > 7))) {
        ucs_error("%s: QP 0x%x: invalid RTS parameters (sq_psn 0x%x timeout"
                  " %u retry_cnt %u rnr_retry %u)", qp->dev->attr.info.name,
                  qp->qpn, attr->sq_psn, attr->timeout, attr->retry_cnt,
                  attr->rnr_retry);
        return UCS_ERR_INVALID_PARAM;
    }

    return qp->dev->provider->qp_modify(qp, state, attr);
}

/* QP queries this process made (on mlx5 each is a firmware command) */
static uint64_t gda_ft_hca_qp_queries;

ucs_status_t gda_ft_hca_qp_query(gda_ft_hca_qp_t *qp,
                                 gda_ft_hca_qp_query_attr_t *attr)
{
    if ((qp == NULL) || (attr == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    __atomic_fetch_add(&gda_ft_hca_qp_queries, 1, __ATOMIC_RELAXED);
    return qp->dev->provider->qp_query(qp, attr);
}

uint64_t gda_ft_hca_qp_query_count(void)
{
    return __atomic_load_n(&gda_ft_hca_qp_queries, __ATOMIC_RELAXED);
}

void gda_ft_hca_qp_destroy(gda_ft_hca_qp_t *qp)
{
    if (qp != NULL) {
        qp->dev->provider->qp_destroy(qp);
    }
}

ucs_status_t gda_ft_hca_qp_connect(gda_ft_hca_qp_t *qp,
                                   const gda_ft_hca_qp_attr_t *attr)
{
    static const gda_ft_hca_qp_state_t steps[] = {
        GDA_FT_HCA_QP_INIT, GDA_FT_HCA_QP_RTR, GDA_FT_HCA_QP_RTS
    };
    ucs_status_t status;
    unsigned i;

    if ((qp->state != GDA_FT_HCA_QP_RESET) &&
        (qp->state != GDA_FT_HCA_QP_INIT)) {
        status = gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL);
        if (status != UCS_OK) {
            return status;
        }
    }

    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
        status = gda_ft_hca_qp_modify(qp, steps[i], attr);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

const char *gda_ft_hca_qp_state_str(gda_ft_hca_qp_state_t state)
{
    static const char *names[] = {
        [GDA_FT_HCA_QP_RESET] = "RESET",
        [GDA_FT_HCA_QP_INIT]  = "INIT",
        [GDA_FT_HCA_QP_RTR]   = "RTR",
        [GDA_FT_HCA_QP_RTS]   = "RTS",
        [GDA_FT_HCA_QP_ERR]   = "ERR"
    };

    return (state < GDA_FT_HCA_QP_STATE_LAST) ? names[state] : "?";
}

const char *gda_ft_hca_syndrome_str(uint8_t syndrome)
{
    switch (syndrome) {
    case 0x01: return "LOCAL_LENGTH_ERR";
    case 0x02: return "LOCAL_QP_OP_ERR";
    case 0x04: return "LOCAL_PROT_ERR";
    case 0x05: return "WR_FLUSH_ERR";
    case 0x10: return "BAD_RESP_ERR";
    case 0x11: return "LOCAL_ACCESS_ERR";
    case 0x12: return "REMOTE_INVAL_REQ_ERR";
    case 0x13: return "REMOTE_ACCESS_ERR";
    case 0x14: return "REMOTE_OP_ERR";
    case 0x15: return "TRANSPORT_RETRY_EXC_ERR";
    case 0x16: return "RNR_RETRY_EXC_ERR";
    case 0x22: return "REMOTE_ABORTED_ERR";
    default:   return "UNKNOWN_ERR";
    }
}

void gda_ft_hca_gid_from_ipv4(uint32_t addr_be, uint8_t *gid)
{
    memset(gid, 0, GDA_FT_HCA_GID_LEN);
    gid[10] = 0xff;
    gid[11] = 0xff;
    memcpy(gid + 12, &addr_be, sizeof(addr_be));
}

int gda_ft_hca_gid_to_ipv4(const uint8_t *gid, uint32_t *addr_be)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    if (memcmp(gid, prefix, sizeof(prefix))) {
        return 0;
    }
    memcpy(addr_be, gid + 12, sizeof(*addr_be));
    return 1;
}
