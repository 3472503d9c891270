/*
 * gda_ft UCT transport: active messages. SENDs with immediate on the
 * endpoint's host channel into the receive queues of the peer's target
 * QPs of that channel: the receive queues of both paths and their
 * buffers, the sequence number in every message's immediate data,
 * in-order and exactly-once delivery across a switch (held messages,
 * resynchronization), and the sends.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_am.h"
#include "uct_gda_ft_event.h"
#include "gda_ft_cq.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <string.h>


/* ---- receive queues ------------------------------------------------------ */

ucs_status_t uct_gda_ft_iface_rx_cq_open(uct_gda_ft_iface_t *iface,
                                         unsigned path)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    unsigned cqe_cnt               = iface->config.rx_cq_len;
    uct_gda_ft_rx_cq_t **rx_cqs, *rx_cq;
    gda_ft_hca_cq_attr_t cq_attr;
    ucs_status_t status;

    rx_cqs = ucs_realloc(ipath->rx_cqs,
                         (ipath->num_rx_cqs + 1) * sizeof(*rx_cqs),
                         "gda_ft_rx_cqs");
    if (rx_cqs == NULL) {
        ucs_error("no memory for a receive CQ");
        return UCS_ERR_NO_MEMORY;
    }
    ipath->rx_cqs = rx_cqs;

    rx_cq = ucs_calloc(1, sizeof(*rx_cq), "gda_ft_rx_cq");
    if (rx_cq == NULL) {
        ucs_error("no memory for a receive CQ");
        return UCS_ERR_NO_MEMORY;
    }

    if (posix_memalign(&rx_cq->buf, ucs_get_page_size(),
                       (size_t)cqe_cnt * GDA_FT_MLX5_CQE_SIZE) != 0) {
        ucs_error("no memory for a receive CQ of %u entries",
                  cqe_cnt);
        status = UCS_ERR_NO_MEMORY;
        goto err_free_rx_cq;
    }
    gda_ft_cq_init_buf(rx_cq->buf, cqe_cnt);
    gda_ft_dev_cq_init(&rx_cq->dcq, rx_cq->buf, cqe_cnt, 0);

    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.buf      = rx_cq->buf;
    cq_attr.cqe_cnt  = cqe_cnt;
    cq_attr.flags    = 0;
    cq_attr.mem_type = GDA_FT_HCA_MEM_HOST;
    uct_gda_ft_iface_event_cq_attr(iface, &cq_attr.event_armed,
                                   &cq_attr.event_fd);
    status = gda_ft_hca_cq_create(ipath->dev->hca, &cq_attr, &rx_cq->cq);
    if (status != UCS_OK) {
        ucs_error("failed to create receive CQ %u on %s: %s",
                  ipath->num_rx_cqs, ipath->dev->hca->attr.info.name,
                  ucs_status_string(status));
        goto err_free_buf;
    }

    ipath->rx_cqs[ipath->num_rx_cqs++] = rx_cq;
    ucs_debug("iface %p: %s path has %u receive CQs", iface,
              (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup",
              ipath->num_rx_cqs);
    return UCS_OK;

err_free_buf:
    free(rx_cq->buf);
err_free_rx_cq:
    ucs_free(rx_cq);
    return status;
}

ucs_status_t uct_gda_ft_iface_rx_cq_get(uct_gda_ft_iface_t *iface,
                                        unsigned path,
                                        uct_gda_ft_rx_cq_t **rx_cq_p)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    unsigned rx_len                = iface->config.rx_queue_len;
    uct_gda_ft_rx_cq_t *rx_cq;
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < ipath->num_rx_cqs; ++i) {
        rx_cq = ipath->rx_cqs[i];
        if ((rx_cq->reserved + rx_len) <= iface->config.rx_cq_len) {
            goto out;
        }
    }

    status = uct_gda_ft_iface_rx_cq_open(iface, path);
    if (status != UCS_OK) {
        return status;
    }
    rx_cq = ipath->rx_cqs[ipath->num_rx_cqs - 1];

out:
    rx_cq->reserved += rx_len;
    *rx_cq_p         = rx_cq;
    return UCS_OK;
}

void uct_gda_ft_iface_rx_cq_put(uct_gda_ft_iface_t *iface,
                                uct_gda_ft_rx_cq_t *rx_cq)
{
    ucs_assert(rx_cq->reserved >= iface->config.rx_queue_len);
    rx_cq->reserved -= iface->config.rx_queue_len;
}


/*
 * Each of our target QPs of the peer's host channel has a receive queue of
 * RX_QUEUE_LEN WQEs of one data segment, each naming a SEG_SIZE buffer of
 * iface->rx_mp (registered on both HCAs: a path posts with its own lkey).
 * rxq->desc[] remembers the buffer at each RQ index, so that a CQE's
 * wqe_counter finds it.
 */

/* Posts a buffer on a receive queue; the doorbell is the caller's */
static ucs_status_t uct_gda_ft_rxq_post(uct_gda_ft_iface_t *iface,
                                        uct_gda_ft_ep_t *ep,
                                        uct_gda_ft_rxq_t *rxq,
                                        uct_gda_ft_op_t *desc)
{
    gda_ft_dev_sge_t sge;
    uint16_t idx;

    sge.addr   = (uintptr_t)uct_gda_ft_op_payload(desc);
    sge.length = (uint32_t)iface->config.seg_size;
    sge.lkey   = desc->lkey[rxq->path];
    if (gda_ft_rq_post(&rxq->rq, &sge, 1, &idx) != GDA_FT_DEV_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    desc->ep                           = ep;
    rxq->desc[idx & rxq->rq.wqe_mask] = desc;
    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE int uct_gda_ft_rxq_alive(const uct_gda_ft_rxq_t *rxq)
{
    return (rxq->qp != NULL) && (rxq->desc != NULL) &&
           (rxq->qp->state != GDA_FT_HCA_QP_RESET) &&
           (rxq->qp->state != GDA_FT_HCA_QP_ERR);
}

/* A delivered (or dropped) message's buffer goes back on the queue it came
 * from; to the pool if that QP is gone or its RQ was refilled meanwhile */
static void uct_gda_ft_rxq_repost(uct_gda_ft_iface_t *iface,
                                  uct_gda_ft_ep_t *ep, uct_gda_ft_rxq_t *rxq,
                                  uct_gda_ft_op_t *desc)
{
    if (!uct_gda_ft_rxq_alive(rxq) ||
        (uct_gda_ft_rxq_post(iface, ep, rxq, desc) != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return;
    }
    gda_ft_rq_ring_db(&rxq->rq);
}

ucs_status_t uct_gda_ft_rxq_fill(uct_gda_ft_iface_t *iface,
                                 uct_gda_ft_ep_t *ep, uct_gda_ft_rxq_t *rxq)
{
    gda_ft_dev_rq_t *rq = &rxq->rq;
    uct_gda_ft_op_t *desc;
    ucs_status_t status = UCS_OK;

    while ((uint16_t)(rq->pi - rq->ci) < rq->wqe_cnt) {
        desc = ucs_mpool_get_inline(&iface->rx_mp);
        if (desc == NULL) {
            ucs_error("ep %p: no receive buffer for the %s target QP (%u "
                      "of %u posted)", ep, uct_gda_ft_path_name(rxq->path),
                      (uint16_t)(rq->pi - rq->ci), rq->wqe_cnt);
            status = UCS_ERR_NO_MEMORY;
            break;
        }
        status = uct_gda_ft_rxq_post(iface, ep, rxq, desc);
        ucs_assert_always(status == UCS_OK);
    }
    gda_ft_rq_ring_db(rq);
    return status;
}

ucs_status_t uct_gda_ft_rxq_init(uct_gda_ft_iface_t *iface,
                                 uct_gda_ft_rxq_t *rxq, unsigned path,
                                 gda_ft_hca_qp_t *qp,
                                 void *buf, uint32_t *dbrec,
                                 uct_gda_ft_rx_cq_t *cq)
{
    unsigned rx_len = iface->config.rx_queue_len;

    rxq->desc = ucs_calloc(rx_len, sizeof(*rxq->desc), "gda_ft_rx_desc");
    if (rxq->desc == NULL) {
        ucs_error("no memory for a receive queue of %u", rx_len);
        return UCS_ERR_NO_MEMORY;
    }
    rxq->qp    = qp;
    rxq->buf   = buf;
    rxq->dbrec = dbrec;
    rxq->cq    = cq;
    rxq->path  = (uint8_t)path;
    gda_ft_dev_rq_init(&rxq->rq, buf, rx_len, GDA_FT_MLX5_DS_SIZE, dbrec);
    return UCS_OK;
}

/* Returns the buffers posted on a receive queue to the pool */
static void uct_gda_ft_rxq_release(uct_gda_ft_rxq_t *rxq)
{
    gda_ft_dev_rq_t *rq = &rxq->rq;
    uct_gda_ft_op_t **slot;

    if (rxq->desc == NULL) {
        return;
    }
    for (; rq->ci != rq->pi; rq->ci = (uint16_t)(rq->ci + 1)) {
        slot = &rxq->desc[rq->ci & rq->wqe_mask];
        if (*slot != NULL) {
            ucs_mpool_put_inline(*slot);
            *slot = NULL;
        }
    }
}

void uct_gda_ft_rxq_rearm(uct_gda_ft_ep_t *ep, uct_gda_ft_rxq_t *rxq)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);

    if (rxq->desc == NULL) {
        return;
    }
    /* What the QP received before its RESET is in the receive CQ: take it
     * (it is delivered later, in order), then forget the old ring */
    uct_gda_ft_iface_poll_rx(iface, rxq->path, UINT_MAX);
    uct_gda_ft_rxq_release(rxq);
    rxq->dbrec[GDA_FT_MLX5_RCV_DBR] = 0;
    gda_ft_dev_rq_init(&rxq->rq, rxq->buf, iface->config.rx_queue_len,
                       GDA_FT_MLX5_DS_SIZE, rxq->dbrec);
    (void)uct_gda_ft_rxq_fill(iface, ep, rxq);
}

void uct_gda_ft_rxq_cleanup(uct_gda_ft_iface_t *iface, uct_gda_ft_rxq_t *rxq)
{
    if (rxq->desc == NULL) {
        return;
    }
    uct_gda_ft_rxq_release(rxq);
    uct_gda_ft_iface_rx_cq_put(iface, rxq->cq);
    ucs_free(rxq->desc);
    rxq->desc = NULL;
    rxq->cq   = NULL;
    rxq->qp   = NULL;
}


/* ---- active messages: receive -------------------------------------------- */

/* 26-bit sequence numbers: a - b, wrap-safe */
static UCS_F_ALWAYS_INLINE int32_t uct_gda_ft_am_seq_diff(uint32_t a,
                                                          uint32_t b)
{
    return ((int32_t)((a - b) << UCT_GDA_FT_AM_ID_BITS)) >>
           UCT_GDA_FT_AM_ID_BITS;
}

static int uct_gda_ft_ep_am_is_held(uct_gda_ft_ep_t *ep, uint32_t seq)
{
    uct_gda_ft_op_t *desc;

    ucs_queue_for_each(desc, &ep->am.held, queue) {
        if (desc->sn == seq) {
            return 1;
        }
    }
    return 0;
}

/*
 * A receive completion of one of the endpoint's target QPs. Messages are
 * kept in ep->am.held and delivered by uct_gda_ft_ep_am_deliver() in
 * sequence order: the two paths are two QPs with no order between them,
 * and a switch may replay a message the peer already received (no
 * resolution) or hand the rest of the stream to the other path while the
 * first still has completions to poll. A sequence number below the next
 * expected one is such a duplicate and is dropped.
 */
static void uct_gda_ft_ep_rx_cqe(uct_gda_ft_iface_t *iface,
                                 uct_gda_ft_ep_t *ep, unsigned path,
                                 const gda_ft_dev_cqe_info_t *info)
{
    uct_gda_ft_rxq_t *rxq = &ep->chan_rx[path];
    gda_ft_dev_rq_t *rq   = &rxq->rq;
    uct_gda_ft_op_t **slot;
    uct_gda_ft_op_t *desc;
    uint32_t seq;
    int32_t diff;

    if ((rxq->desc == NULL) ||
        !GDA_FT_U16_LE(rq->ci, info->wqe_counter) ||
        !GDA_FT_U16_LT(info->wqe_counter, rq->pi)) {
        /* of a receive queue since re-armed */
        ucs_trace_data("ep %p: stale receive CQE %u on the %s QP",
                       ep, info->wqe_counter, uct_gda_ft_path_name(path));
        return;
    }

    /* Receive completions come in RQ order */
    while (rq->ci != info->wqe_counter) {
        ucs_debug("ep %p: receive WQE %u of the %s QP 0x%x "
                  "completed without a CQE", ep, rq->ci,
                  uct_gda_ft_path_name(path), info->qpn);
        slot = &rxq->desc[rq->ci & rq->wqe_mask];
        ucs_mpool_put_inline(*slot);
        *slot  = NULL;
        rq->ci = (uint16_t)(rq->ci + 1);
    }
    slot   = &rxq->desc[rq->ci & rq->wqe_mask];
    desc   = *slot;
    *slot  = NULL;
    rq->ci = (uint16_t)(rq->ci + 1);

    if (gda_ft_cq_opcode_is_error(info->opcode)) {
        if (info->syndrome == GDA_FT_MLX5_SYND_WR_FLUSH_ERR) {
            ucs_mpool_put_inline(desc);   /* the QP left: no repost */
            return;
        }
        ucs_error("ep %p: receive error on the %s QP 0x%x: %s", ep,
                  uct_gda_ft_path_name(path), info->qpn,
                  gda_ft_hca_syndrome_str(info->syndrome));
        uct_gda_ft_rxq_repost(iface, ep, rxq, desc);
        return;
    }

    if (ucs_unlikely(info->opcode != GDA_FT_MLX5_CQE_RESP_SEND_IMM)) {
        ucs_error("ep %p: unexpected receive completion opcode %u "
                  "on the %s QP 0x%x: message dropped", ep, info->opcode,
                  uct_gda_ft_path_name(path), info->qpn);
        uct_gda_ft_rxq_repost(iface, ep, rxq, desc);
        return;
    }

    seq  = info->imm >> UCT_GDA_FT_AM_ID_BITS;
    diff = uct_gda_ft_am_seq_diff(seq, ep->am.rx_seq);
    if ((diff < 0) ||
        ((ep->am.num_held != 0) && uct_gda_ft_ep_am_is_held(ep, seq))) {
        ucs_trace_data("ep %p: duplicate active message seq %u on "
                       "the %s path dropped", ep, seq,
                       uct_gda_ft_path_name(path));
        ++ep->am.counters.duplicates;
        uct_gda_ft_rxq_repost(iface, ep, rxq, desc);
        return;
    }

    diff = uct_gda_ft_am_seq_diff(seq, ep->am.rx_arrival);
    if (diff >= 0) {
        if (diff > 0) {
            ++ep->am.counters.reordered;  /* overtook an earlier one */
        }
        ep->am.rx_arrival = (seq + 1) & UCT_GDA_FT_AM_SEQ_MASK;
    }
    desc->sn        = seq;
    desc->rx.length = info->byte_cnt;
    desc->rx.imm    = info->imm;
    desc->rx.path   = (uint8_t)path;
    ucs_queue_push(&ep->am.held, &desc->queue);
    ++ep->am.num_held;
    uct_gda_ft_iface_ep_ready(iface, ep);
}

static unsigned uct_gda_ft_iface_poll_rx_cq(uct_gda_ft_iface_t *iface,
                                            unsigned path,
                                            uct_gda_ft_rx_cq_t *rx_cq,
                                            unsigned max)
{
    gda_ft_dev_cqe_info_t info;
    uct_gda_ft_ep_t *ep;
    unsigned count;

    for (count = 0; count < max; ++count) {
        if (gda_ft_cq_poll_ring(&rx_cq->dcq, &info) ==
            GDA_FT_DEV_INPROGRESS) {
            break;
        }

        ep = uct_gda_ft_iface_qp_find(iface, path, info.qpn);
        if (ep == NULL) {
            ucs_trace_data("iface %p: receive CQE of unknown %s QP "
                           "0x%x", iface, uct_gda_ft_path_name(path),
                           info.qpn);
            continue;
        }
        uct_gda_ft_ep_rx_cqe(iface, ep, path, &info);
    }
    return count;
}

unsigned uct_gda_ft_iface_poll_rx(uct_gda_ft_iface_t *iface, unsigned path,
                                  unsigned max)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    unsigned count                 = 0;
    unsigned i, idx;

    /* Every receive CQ of the path, the first one in turn: a busy CQ does
     * not starve the others of a bounded progress */
    for (i = 0; (i < ipath->num_rx_cqs) && (count < max); ++i) {
        idx = (ipath->rx_poll_next + i) % ipath->num_rx_cqs;
        count += uct_gda_ft_iface_poll_rx_cq(iface, path,
                                             ipath->rx_cqs[idx], max - count);
    }
    if (ipath->num_rx_cqs > 1) {
        ipath->rx_poll_next = (ipath->rx_poll_next + 1) % ipath->num_rx_cqs;
    }
    return count;
}

/* The held message with the next sequence number, if it has arrived */
static uct_gda_ft_op_t *uct_gda_ft_ep_am_take_next(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_op_t *desc;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(desc, iter, &ep->am.held, queue) {
        if (desc->sn == ep->am.rx_seq) {
            ucs_queue_del_iter(&ep->am.held, iter);
            --ep->am.num_held;
            return desc;
        }
    }
    return NULL;
}

/*
 * A gap that does not fill: more messages wait than one receive queue
 * holds, so the missing one is not merely queued behind on the other path.
 * Never happens while the peer replays what it did not see; should it,
 * delivery resumes at the oldest message held.
 */
static int uct_gda_ft_ep_am_resync(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;
    uint32_t oldest;

    if (ep->am.num_held <= iface->config.rx_queue_len) {
        return 0;
    }

    oldest = ucs_queue_head_elem_non_empty(&ep->am.held, uct_gda_ft_op_t,
                                           queue)->sn;
    ucs_queue_for_each(desc, &ep->am.held, queue) {
        if (uct_gda_ft_am_seq_diff(desc->sn, oldest) < 0) {
            oldest = desc->sn;
        }
    }

    if (ep->am.counters.gaps++ == 0) {
        ucs_error("ep %p: active messages %u..%u never arrived (%u "
                  "later ones wait); delivery resumes at %u", ep,
                  ep->am.rx_seq,
                  (unsigned)((oldest - 1) & UCT_GDA_FT_AM_SEQ_MASK),
                  ep->am.num_held, oldest);
    }
    ep->am.rx_seq = oldest;
    return 1;
}

unsigned uct_gda_ft_ep_am_deliver(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;
    unsigned path;
    uint8_t am_id;

    desc = uct_gda_ft_ep_am_take_next(ep);
    if ((desc == NULL) && uct_gda_ft_ep_am_resync(ep)) {
        desc = uct_gda_ft_ep_am_take_next(ep);
    }
    if (desc == NULL) {
        return 0;
    }

    ep->am.rx_seq = (ep->am.rx_seq + 1) & UCT_GDA_FT_AM_SEQ_MASK;
    ++ep->am.counters.received;
    path  = desc->rx.path;
    am_id = desc->rx.imm & UCT_GDA_FT_AM_ID_MASK;
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, am_id,
                       uct_gda_ft_op_payload(desc), desc->rx.length,
                       "RX: ep %p AM seq %u on the %s path", ep,
                       desc->rx.imm >> UCT_GDA_FT_AM_ID_BITS,
                       uct_gda_ft_path_name(path));

    /* The handler may destroy the endpoint: its cleanup clears
     * am_dispatch_ep, and the buffer then goes back to the pool */
    iface->am_dispatch_ep = ep;
    uct_iface_invoke_am(&iface->super, am_id, uct_gda_ft_op_payload(desc),
                        desc->rx.length, 0);
    ep                    = iface->am_dispatch_ep;
    iface->am_dispatch_ep = NULL;
    if (ep != NULL) {
        uct_gda_ft_rxq_repost(iface, ep, &ep->chan_rx[path], desc);
    } else {
        ucs_mpool_put_inline(desc);
    }
    return 1;
}

ucs_status_t
uct_gda_ft_ep_query_am_counters(uct_ep_h tl_ep,
                                uct_gda_ft_am_counters_t *counters)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    *counters = ep->am.counters;
    return UCS_OK;
}

/* ---- active messages: send ----------------------------------------------- */

static UCS_F_ALWAYS_INLINE uint32_t uct_gda_ft_ep_am_imm(uct_gda_ft_ep_t *ep,
                                                         uint8_t id)
{
    return (ep->am.tx_seq << UCT_GDA_FT_AM_ID_BITS) | id;
}

static UCS_F_ALWAYS_INLINE void uct_gda_ft_ep_am_sent(uct_gda_ft_ep_t *ep)
{
    ep->am.tx_seq = (ep->am.tx_seq + 1) & UCT_GDA_FT_AM_SEQ_MASK;
    ++ep->am.counters.sent;
}

/* A SEND with immediate on the host channel: inline (data != NULL, at
 * most 16 bytes) or from a bounce descriptor, whose cookie it is */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_hchan_post_send(uct_gda_ft_ep_t *ep, const void *data,
                           uct_gda_ft_op_t *desc, uint32_t length,
                           uint32_t imm)
{
    static const uint32_t no_keys[GDA_FT_NUM_PATHS] = {0, 0};
    gda_ft_chan_op_t op;

    if (data != NULL) {
        uct_gda_ft_hchan_op_inline(&op, GDA_FT_CHAN_OP_SEND,
                                   GDA_FT_MLX5_OPCODE_SEND_IMM, data, length,
                                   imm, NULL);
        return uct_gda_ft_hchan_post(ep, &op, 0);
    }
    uct_gda_ft_hchan_op(&op, GDA_FT_CHAN_OP_SEND, GDA_FT_MLX5_OPCODE_SEND_IMM,
                        (uintptr_t)uct_gda_ft_op_payload(desc), desc->lkey,
                        length, imm, no_keys);
    return uct_gda_ft_hchan_post(ep, &op, (uintptr_t)desc);
}

/* SEND of the payload of a bounce descriptor, which goes back on failure */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_post_am_bcopy(uct_gda_ft_ep_t *ep, uct_gda_ft_op_t *desc,
                            uint8_t id, uint32_t length)
{
    ucs_status_t status;

    status = uct_gda_ft_hchan_post_send(ep, NULL, desc, length,
                                        uct_gda_ft_ep_am_imm(ep, id));
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }
    uct_gda_ft_ep_am_sent(ep);
    return UCS_OK;
}

/* The bytes of a short message: the header and the payload of am_short, or
 * the iov of am_short_iov (iov != NULL) */
static UCS_F_ALWAYS_INLINE void
uct_gda_ft_ep_am_short_pack(void *dest, uint64_t header, const void *payload,
                            unsigned length, const uct_iov_t *iov,
                            size_t iovcnt)
{
    size_t i;

    if (iov == NULL) {
        memcpy(dest, &header, sizeof(header));
        if (length > 0) {   /* payload may be NULL then */
            memcpy(UCS_PTR_BYTE_OFFSET(dest, sizeof(header)), payload,
                   length);
        }
        return;
    }

    /* an empty entry's buffer may be NULL (UCP sends a header alone so),
     * which memcpy must not see */
    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length > 0) {
            memcpy(dest, iov[i].buffer, iov[i].length);
            dest = UCS_PTR_BYTE_OFFSET(dest, iov[i].length);
        }
    }
}

/* am_short and am_short_iov: SEND with the data inline when a channel WQE
 * takes that much, else through a bounce buffer; total is checked by the
 * caller */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_am_short_common(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep,
                              uint8_t id, uint32_t total, uint64_t header,
                              const void *payload, unsigned length,
                              const uct_iov_t *iov, size_t iovcnt)
{
    gda_ft_chan_op_t *op;
    uint8_t data[sizeof(op->operand)];
    uct_gda_ft_op_t *desc;
    ucs_status_t status;

    UCT_GDA_FT_EP_CHECK_RES(iface, ep);

    if (total <= sizeof(op->operand)) {
        uct_gda_ft_ep_am_short_pack(data, header, payload, length, iov,
                                    iovcnt);
        status = uct_gda_ft_hchan_post_send(ep, data, NULL, total,
                                            uct_gda_ft_ep_am_imm(ep, id));
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, data,
                           total, "TX: ep %p AM_SHORT%s seq %u", ep,
                           (iov == NULL) ? "" : "_IOV", ep->am.tx_seq);
        uct_gda_ft_ep_am_sent(ep);
    } else {
        /* more than a WQE takes inline: through a bounce buffer */
        desc = uct_gda_ft_op_get(&iface->tx_mp, ep, uct_gda_ft_op_release,
                                 NULL, 0);
        if (ucs_unlikely(desc == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
        uct_gda_ft_ep_am_short_pack(uct_gda_ft_op_payload(desc), header,
                                    payload, length, iov, iovcnt);
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                           uct_gda_ft_op_payload(desc), total,
                           "TX: ep %p AM_SHORT%s seq %u (bounce)", ep,
                           (iov == NULL) ? "" : "_IOV", ep->am.tx_seq);
        status = uct_gda_ft_ep_post_am_bcopy(ep, desc, id, total);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
    return UCS_OK;
}

ucs_status_t uct_gda_ft_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                    uint64_t header, const void *payload,
                                    unsigned length)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uint32_t total            = sizeof(header) + length;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(total, 0, iface->config.am_max_short, "am_short");
    return uct_gda_ft_ep_am_short_common(iface, ep, id, total, header,
                                         payload, length, NULL, 0);
}

ucs_status_t uct_gda_ft_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                        const uct_iov_t *iov, size_t iovcnt)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    size_t total              = uct_iov_total_length(iov, iovcnt);

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_GDA_FT_AM_MAX_IOV,
                       "am_short_iov");
    UCT_CHECK_LENGTH(total, 0, iface->config.am_max_short, "am_short_iov");
    return uct_gda_ft_ep_am_short_common(iface, ep, id, total, 0, NULL, 0,
                                         iov, iovcnt);
}

ssize_t uct_gda_ft_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                               uct_pack_callback_t pack_cb, void *arg,
                               unsigned flags)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;
    ucs_status_t status;
    ssize_t length;

    UCT_CHECK_AM_ID(id);
    UCT_GDA_FT_EP_CHECK_RES(iface, ep);
    length = uct_gda_ft_ep_bcopy_pack(iface, ep, pack_cb, arg, 0, "am_bcopy",
                                      &desc);
    if (ucs_unlikely(length < 0)) {
        return length;
    }

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       uct_gda_ft_op_payload(desc), length,
                       "TX: ep %p AM_BCOPY seq %u", ep, ep->am.tx_seq);
    status = uct_gda_ft_ep_post_am_bcopy(ep, desc, id, (uint32_t)length);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}
