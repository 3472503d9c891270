/*
 * Software HCA requester: runs the operations parsed from mlx5 send WQEs
 * (gda_ft_soft_parse.c): segments them into RC packets, tracks PSNs,
 * handles ACK/NAK/RNR and read/atomic responses, retransmits on timeout
 * (go-back-N) and writes mlx5 CQEs, including the error CQE and the flush
 * of every later WQE when the QP fails.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* RNR NAK timer field (IBA table 45), in microseconds */
static const uint32_t gda_ft_soft_rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520
};

static uint32_t gda_ft_soft_op_last_psn(const gda_ft_soft_op_t *op)
{
    return gda_ft_psn_add(op->first_psn, op->npkts - 1);
}

static int gda_ft_soft_op_has_psn(const gda_ft_soft_op_t *op, uint32_t psn)
{
    return (op->npkts > 0) && (gda_ft_psn_diff(psn, op->first_psn) >= 0) &&
           (gda_ft_psn_diff(psn, op->first_psn) < (int32_t)op->npkts);
}

static uint8_t gda_ft_soft_write_opcode(const gda_ft_soft_op_t *op,
                                        uint32_t k)
{
    int imm   = (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM) ||
                (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_SEND_IMM);
    int send  = (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_SEND) ||
                (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_SEND_IMM);
    uint8_t base = send ? GDA_FT_ROCE_SEND_FIRST : GDA_FT_ROCE_WRITE_FIRST;

    /* FIRST, MIDDLE, LAST, LAST_IMM, ONLY, ONLY_IMM share one layout */
    if (op->npkts == 1) {
        return base + 4 + imm;
    } else if (k == 0) {
        return base;
    } else if (k == op->npkts - 1) {
        return base + 2 + imm;
    }
    return base + 1;
}

/* Builds and sends packet k of a request; an error, and nothing sent, when
 * its bytes in device memory cannot be read */
static ucs_status_t gda_ft_soft_send_request(gda_ft_soft_qp_t *qp,
                                             gda_ft_soft_op_t *op,
                                             uint32_t k)
{
    static __thread uint8_t pkt[GDA_FT_SOFT_PKT_MAX];
    uint8_t ext[sizeof(gda_ft_roce_masked_eth_t)];
    gda_ft_roce_atomic_eth_t *aeth = (gda_ft_roce_atomic_eth_t*)ext;
    gda_ft_roce_masked_eth_t *meth = (gda_ft_roce_masked_eth_t*)ext;
    gda_ft_roce_reth_t *reth       = (gda_ft_roce_reth_t*)ext;
    uint32_t psn = gda_ft_psn_add(op->first_psn, k);
    uint32_t offset = 0, len = 0;
    size_t ext_len  = 0, hdr_len;
    uint8_t opcode;
    int ackreq, i;

    switch (op->mlx5_opcode) {
    case GDA_FT_MLX5_OPCODE_RDMA_READ:
        /* k > 0 resumes a read whose first k responses arrived: the
         * request asks for the rest only, at the PSN of the next one */
        opcode        = GDA_FT_ROCE_READ_REQUEST;
        offset        = k * qp->mtu;
        reth->va      = gda_ft_htobe64(op->raddr + offset);
        reth->rkey    = htonl(op->rkey);
        reth->dma_len = htonl(op->length - offset);
        ext_len       = sizeof(*reth);
        offset        = 0;
        break;
    case GDA_FT_MLX5_OPCODE_ATOMIC_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_FA:
        opcode         = (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_ATOMIC_CS) ?
                         GDA_FT_ROCE_COMPARE_SWAP : GDA_FT_ROCE_FETCH_ADD;
        aeth->va       = gda_ft_htobe64(op->raddr);
        aeth->rkey     = htonl(op->rkey);
        aeth->swap_add = gda_ft_htobe64(op->operand[0]);
        aeth->compare  = gda_ft_htobe64(op->operand[1]);
        ext_len        = sizeof(*aeth);
        break;
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA:
        opcode         = GDA_FT_ROCE_MASKED_ATOMIC;
        meth->va       = gda_ft_htobe64(op->raddr);
        meth->rkey     = htonl(op->rkey);
        meth->op       = (op->mlx5_opcode ==
                          GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) ?
                         GDA_FT_ROCE_MASKED_CS : GDA_FT_ROCE_MASKED_FA;
        meth->log_size = (gda_ft_soft_op_atomic_size(op) == 4) ? 2 : 3;
        meth->reserved = 0;
        for (i = 0; i < 4; ++i) {
            meth->operand[i] = gda_ft_htobe64(op->operand[i]);
        }
        ext_len        = sizeof(*meth);
        break;
    default:
        opcode = gda_ft_soft_write_opcode(op, k);
        offset = k * qp->mtu;
        len    = ucs_min(qp->mtu, op->length - offset);
        if ((opcode == GDA_FT_ROCE_WRITE_FIRST) ||
            (opcode == GDA_FT_ROCE_WRITE_ONLY) ||
            (opcode == GDA_FT_ROCE_WRITE_ONLY_IMM)) {
            reth->va      = gda_ft_htobe64(op->raddr);
            reth->rkey    = htonl(op->rkey);
            reth->dma_len = htonl(op->length);
            ext_len       = sizeof(*reth);
        }
        if ((opcode == GDA_FT_ROCE_WRITE_ONLY_IMM) ||
            (opcode == GDA_FT_ROCE_WRITE_LAST_IMM) ||
            (opcode == GDA_FT_ROCE_SEND_ONLY_IMM) ||
            (opcode == GDA_FT_ROCE_SEND_LAST_IMM)) {
            memcpy(ext + ext_len, &op->imm, sizeof(op->imm));
            ext_len += sizeof(op->imm);
        }
        break;
    }

    /* Ask for an ACK at the end of a message and now and then inside long
     * ones, so that the window keeps moving */
    ackreq  = (k == op->npkts - 1) || ((k & 15) == 15);
    hdr_len = gda_ft_roce_build_hdr(pkt, opcode, qp->dest_qpn, psn, ackreq,
                                    len, ext, ext_len);
    if ((len > 0) &&
        (gda_ft_soft_op_gather(op, offset, pkt + hdr_len, len) != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }
    hdr_len += len;
    hdr_len += gda_ft_roce_finish(pkt, hdr_len);
    gda_ft_soft_tx(gda_ft_soft_qp_port(qp), qp->remote_ip, pkt, hdr_len, 0);
    return UCS_OK;
}

/*
 * One past the last op with packets on the wire: op_send, or the op at
 * op_send itself while it is partly sent (a message longer than the window
 * goes out over several passes). The retransmission timer runs while any
 * op before it is unacknowledged.
 */
static unsigned gda_ft_soft_req_sent_end(gda_ft_soft_qp_t *qp)
{
    return qp->op_send +
           ((qp->op_send != qp->op_tail) &&
            (gda_ft_soft_op_at(qp, qp->op_send)->pkts_sent > 0));
}

static int gda_ft_soft_req_in_flight(gda_ft_soft_qp_t *qp)
{
    return qp->op_head != gda_ft_soft_req_sent_end(qp);
}

/* Sends what the QP may send; *budget_p: datagrams it may send in this
 * pass (gda_ft_soft_worker_progress shares them out), less what it sent */
static int gda_ft_soft_req_transmit(gda_ft_soft_qp_t *qp, uint64_t now,
                                    unsigned *budget_p)
{
    gda_ft_soft_op_t *op;
    uint32_t psn;
    int work = 0;

    if ((qp->rnr_until != 0) && (now < qp->rnr_until)) {
        return 0;
    }
    qp->rnr_until = 0;

    while (qp->op_send != qp->op_tail) {
        op = gda_ft_soft_op_at(qp, qp->op_send);
        if (op->syndrome != 0) {
            break;    /* completes with its error once it is the oldest */
        }

        if (op->fence && (qp->op_send != qp->op_head)) {
            break;    /* fenced: wait for everything before it */
        }

        if (op->done || (op->npkts == 0)) {
            op->done = 1;
            ++qp->op_send;
            continue;
        }

        if (gda_ft_soft_op_needs_response(op) && (op->pkts_sent == 0)) {
            if (qp->rd_atomic_inflight >= qp->max_rd_atomic) {
                break;
            }
            ++qp->rd_atomic_inflight;
            if (!gda_ft_soft_req_in_flight(qp)) {
                qp->timer_start = now;
            }
            (void)gda_ft_soft_send_request(qp, op, op->resp_next);
            op->pkts_sent = op->npkts;  /* one request covers all PSNs */
            work          = 1;
        }

        if ((op->pkts_sent == 0) && !gda_ft_soft_req_ready(qp)) {
            return 1;     /* its message is being read: the next pass */
        }

        while (op->pkts_sent < op->npkts) {
            psn = gda_ft_psn_add(op->first_psn, op->pkts_sent);
            if (gda_ft_psn_diff(psn, qp->acked_psn) >
                GDA_FT_SOFT_MAX_PKTS_INFLIGHT) {
                return work;  /* window full */
            }
            if (*budget_p == 0) {
                return 1;     /* more next pass */
            }
            --*budget_p;
            if (!gda_ft_soft_req_in_flight(qp)) {
                qp->timer_start = now;   /* the first packet in flight */
            }
            if (gda_ft_soft_send_request(qp, op, op->pkts_sent) != UCS_OK) {
                /* its message cannot be read: it fails once the oldest */
                op->syndrome = GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
                return 1;
            }
            ++op->pkts_sent;
            work = 1;
        }

        ++qp->op_send;
    }
    return work;
}

/* Writes the CQE of a completed op */
static void gda_ft_soft_op_complete(gda_ft_soft_qp_t *qp,
                                    gda_ft_soft_op_t *op, uint8_t syndrome)
{
    gda_ft_soft_cq_t *cq = (gda_ft_soft_cq_t*)qp->super.init.send_cq;

    if (syndrome != 0) {
        gda_ft_soft_cq_write(cq, GDA_FT_MLX5_CQE_REQ_ERR, syndrome,
                             op->wqe_idx, qp->super.qpn, op->mlx5_opcode, 0,
                             0);
    } else if (op->signaled) {
        gda_ft_soft_cq_write(cq, GDA_FT_MLX5_CQE_REQ, 0, op->wqe_idx,
                             qp->super.qpn, op->mlx5_opcode,
                             gda_ft_soft_op_needs_response(op) ?
                             op->length : 0, 0);
    }

    if (gda_ft_soft_op_needs_response(op) && (op->pkts_sent > 0) &&
        (qp->rd_atomic_inflight > 0)) {
        --qp->rd_atomic_inflight;
    }
    gda_ft_soft_op_release_data(op);
}

static void gda_ft_soft_req_fail(gda_ft_soft_qp_t *qp, gda_ft_soft_op_t *op,
                                 uint8_t syndrome)
{
    ucs_debug("%s: QP 0x%x: WQE %u failed: %s",
              qp->super.dev->attr.info.name, qp->super.qpn, op->wqe_idx,
              gda_ft_hca_syndrome_str(syndrome));
    gda_ft_soft_op_complete(qp, op, syndrome);
    ++qp->op_head;
    if (qp->op_send < qp->op_head) {
        qp->op_send = qp->op_head;
    }
    gda_ft_soft_qp_enter_error(qp);
}

/*
 * Whether the CUDA runtime refused to write the response of op, the oldest,
 * into device memory: known once the writes on their way are queued, so
 * before the op completes, signalled or not (a later op's CQE would
 * complete it too)
 */
static int gda_ft_soft_req_refused(gda_ft_soft_qp_t *qp,
                                   const gda_ft_soft_op_t *op)
{
    if (!gda_ft_soft_op_in_device_memory(op)) {
        return 0;
    }
    gda_ft_soft_mem_flush();
    return qp->req_refused.refused && (qp->req_refused.tag == qp->op_head);
}

/* Completes, in order, every op that is done */
static int gda_ft_soft_req_retire(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_op_t *op;
    int work = 0;

    while ((qp->super.state == GDA_FT_HCA_QP_RTS) &&
           (qp->op_head != qp->op_tail)) {
        op = gda_ft_soft_op_at(qp, qp->op_head);
        if (op->syndrome != 0) {
            if (qp->op_head == qp->op_send) {
                gda_ft_soft_req_fail(qp, op, op->syndrome);
                return 1;
            }
            break;
        }

        if ((qp->op_head == qp->op_send) || !op->done) {
            break;
        }

        if (gda_ft_soft_op_needs_response(op) &&
            gda_ft_soft_req_refused(qp, op)) {
            gda_ft_soft_req_fail(qp, op, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR);
            return 1;
        }
        gda_ft_soft_op_complete(qp, op, 0);
        ++qp->op_head;
        work = 1;
    }
    return work;
}

/* Go-back-N: transmit again from op index 'from' */
static void gda_ft_soft_req_rewind(gda_ft_soft_qp_t *qp, unsigned from)
{
    unsigned end = gda_ft_soft_req_sent_end(qp);
    gda_ft_soft_op_t *op;
    unsigned idx;
    int32_t acked;

    for (idx = from; idx != end; ++idx) {
        op = gda_ft_soft_op_at(qp, idx);
        if (op->done) {
            continue;
        }
        if (gda_ft_soft_op_needs_response(op)) {
            op->pkts_sent = 0;  /* a read keeps resp_next: it resumes */
        } else {
            /* The responder has every packet up to acked_psn, in order,
             * and keeps the message context: resume after them */
            acked = gda_ft_psn_diff(qp->acked_psn, op->first_psn) + 1;
            op->pkts_sent = (acked <= 0) ? 0 :
                            ucs_min((uint32_t)acked, op->npkts - 1);
        }
    }
    qp->op_send = from;

    qp->rd_atomic_inflight = 0;
    for (idx = qp->op_head; idx != qp->op_send; ++idx) {
        op = gda_ft_soft_op_at(qp, idx);
        if (gda_ft_soft_op_needs_response(op) && !op->done) {
            ++qp->rd_atomic_inflight;
        }
    }
}

/*
 * Takes an acknowledgement of psn; returns 1 on progress. Every sent op
 * up to the highest PSN acknowledged so far is done, also on an old or
 * duplicate one: an op acknowledged while it was still partly sent (a
 * message longer than the window), or sent again after a rewind, gets
 * only duplicate acknowledgements from then on.
 */
static int gda_ft_soft_req_ack(gda_ft_soft_qp_t *qp, uint32_t psn)
{
    int progress = gda_ft_psn_diff(psn, qp->acked_psn) > 0;
    gda_ft_soft_op_t *op;
    unsigned idx;

    if (progress && (gda_ft_psn_diff(psn, qp->next_psn) >= 0)) {
        /* A ghost: it names a PSN this QP never used since it was
         * connected, so it answers an earlier connection of the QP (a
         * packet held in the network across a reset), and an HCA drops
         * it. Taking it would complete every op posted so far, sent or
         * not, with nothing executed. */
        ++gda_ft_soft_qp_port(qp)->stats.rx_unexpected;
        return 0;
    }

    if (progress) {
        qp->acked_psn    = psn;
        qp->retries_left = qp->retry_cnt;
        qp->timer_start  = gda_ft_soft_now_ns();
    }

    for (idx = qp->op_head; idx != qp->op_send; ++idx) {
        op = gda_ft_soft_op_at(qp, idx);
        if (gda_ft_psn_diff(gda_ft_soft_op_last_psn(op), qp->acked_psn) >
            0) {
            break;
        }
        if (!gda_ft_soft_op_needs_response(op)) {
            op->done = 1;
        }
    }
    return progress;
}

/* Index of the sent (or partly sent) op that holds psn, or
 * gda_ft_soft_req_sent_end() when none: a NAK may name a packet of a
 * message still going out */
static unsigned gda_ft_soft_req_find(gda_ft_soft_qp_t *qp, uint32_t psn)
{
    unsigned end = gda_ft_soft_req_sent_end(qp);
    unsigned idx;

    for (idx = qp->op_head; idx != end; ++idx) {
        if (gda_ft_soft_op_has_psn(gda_ft_soft_op_at(qp, idx), psn)) {
            break;
        }
    }
    return idx;
}

static void gda_ft_soft_req_handle_nak(gda_ft_soft_qp_t *qp, uint32_t psn,
                                       uint8_t syndrome)
{
    gda_ft_soft_port_t *port = gda_ft_soft_qp_port(qp);
    uint8_t type             = syndrome & GDA_FT_AETH_TYPE_MASK;
    unsigned idx;
    uint8_t synd;

    if (gda_ft_psn_diff(psn, qp->next_psn) >= 0) {
        ++port->stats.rx_unexpected;   /* a ghost, as in ..._req_ack() */
        return;
    }

    gda_ft_soft_req_ack(qp, gda_ft_psn_add(psn, GDA_FT_ROCE_PSN_MASK));
    idx = gda_ft_soft_req_find(qp, psn);
    if (idx == gda_ft_soft_req_sent_end(qp)) {
        ++port->stats.rx_unexpected;
        return;
    }

    if (type == GDA_FT_AETH_RNR_NAK) {
        if (qp->rnr_retry != 7) {
            if (qp->rnr_left == 0) {
                gda_ft_soft_op_at(qp, idx)->syndrome =
                        GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR;
                gda_ft_soft_req_rewind(qp, idx);
                return;
            }
            --qp->rnr_left;
        }
        qp->rnr_until = gda_ft_soft_now_ns() + 1000ull *
                        gda_ft_soft_rnr_timer_us[syndrome & 0x1f];
        gda_ft_soft_req_rewind(qp, idx);
        return;
    }

    switch (syndrome & 0x1f) {
    case GDA_FT_AETH_NAK_PSN_SEQ:
        gda_ft_soft_req_rewind(qp, idx);
        return;
    case GDA_FT_AETH_NAK_INVALID_REQ:
        synd = GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR;
        break;
    case GDA_FT_AETH_NAK_REMOTE_ACCESS:
        synd = GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR;
        break;
    default:
        synd = GDA_FT_MLX5_SYND_REMOTE_OP_ERR;
        break;
    }

    /* The failed op completes with the error once all before it did */
    gda_ft_soft_op_at(qp, idx)->syndrome = synd;
    gda_ft_soft_req_rewind(qp, idx);
}

/*
 * Responses come in PSN order, so one for op idx at psn that is not the
 * next one expected shows those before it lost (IBA 9.7.5.1.2, an implied
 * NAK): the requester goes back at once to the first op still waiting for
 * a response (a read resumes from its first missing one), as an HCA does,
 * instead of a retransmission timeout per lost response. Once per lost
 * response: the rest of the old stream, still on its way, is beyond it
 * too. Returns 1 when psn showed a loss.
 */
static int gda_ft_soft_req_response_gap(gda_ft_soft_qp_t *qp, unsigned idx,
                                        uint32_t psn)
{
    gda_ft_soft_op_t *op;
    unsigned first;

    for (first = qp->op_head; first != idx; ++first) {
        op = gda_ft_soft_op_at(qp, first);
        if (gda_ft_soft_op_needs_response(op) && !op->done) {
            break;
        }
    }

    op = gda_ft_soft_op_at(qp, first);
    if ((first == idx) &&
        (!gda_ft_soft_op_is_read(op) ||
         (gda_ft_psn_diff(psn, op->first_psn) <= (int32_t)op->resp_next))) {
        return 0;
    }

    ++gda_ft_soft_qp_port(qp)->stats.rx_out_of_seq;
    if (op->resp_gap != op->resp_next + 1) {
        op->resp_gap = op->resp_next + 1;
        ++gda_ft_soft_qp_port(qp)->stats.implied_naks;
        gda_ft_soft_req_rewind(qp, first);
    }
    return 1;
}

/*
 * An acknowledgement, NAK or response. The ops it completes retire in the
 * pass's progress (gda_ft_soft_req_progress), after the receive batch:
 * what the batch's responses wrote into device memory lands in one wait
 * at its end, not in one per response before each CQE.
 */
void gda_ft_soft_req_handle_response(gda_ft_soft_qp_t *qp,
                                     const gda_ft_roce_pkt_t *pkt)
{
    gda_ft_soft_port_t *port = gda_ft_soft_qp_port(qp);
    uint32_t syn_msn, offset;
    gda_ft_soft_op_t *op;
    uint8_t orig_bytes[8];
    uint64_t orig;
    unsigned idx;
    int size;

    if (qp->super.state != GDA_FT_HCA_QP_RTS) {
        ++port->stats.rx_bad_state;
        return;
    }

    if (pkt->opcode == GDA_FT_ROCE_ACKNOWLEDGE) {
        syn_msn = ntohl(pkt->aeth->syn_msn);
        if (((syn_msn >> 24) & GDA_FT_AETH_TYPE_MASK) == GDA_FT_AETH_ACK) {
            gda_ft_soft_req_ack(qp, pkt->psn);
        } else {
            gda_ft_soft_req_handle_nak(qp, pkt->psn, syn_msn >> 24);
        }
        return;   /* what it completes retires in the pass's progress */
    }

    idx = gda_ft_soft_req_find(qp, pkt->psn);
    if (idx == gda_ft_soft_req_sent_end(qp)) {
        ++port->stats.rx_duplicate;
        return;
    }

    op = gda_ft_soft_op_at(qp, idx);
    if (op->done) {
        ++port->stats.rx_duplicate;
        return;
    }
    if (gda_ft_soft_req_response_gap(qp, idx, pkt->psn)) {
        return;
    }

    if (pkt->opcode == GDA_FT_ROCE_ATOMIC_ACKNOWLEDGE) {
        if (!gda_ft_soft_op_is_atomic(op)) {
            ++port->stats.rx_unexpected;
            return;
        }
        /* The original value lands big-endian, as ConnectX writes it; an
         * 8-byte one in host order in that mode (ATOMIC_HOST_ORDER) */
        size = gda_ft_soft_op_atomic_size(op);
        orig = gda_ft_be64toh(pkt->atomic_ack->orig);
        if (size == 4) {
            uint32_t orig32 = htonl((uint32_t)orig);
            memcpy(orig_bytes, &orig32, 4);
        } else {
            if (!gda_ft_soft_engine.config.atomic_host_order) {
                orig = gda_ft_htobe64(orig);
            }
            memcpy(orig_bytes, &orig, 8);
        }
        gda_ft_soft_op_scatter(op, 0, orig_bytes, size, &qp->req_refused,
                               idx);
        op->done = 1;
    } else {
        /* Read response: accepted only in order (one beyond the next was
         * taken above as a loss; this is one already had) */
        if (!gda_ft_soft_op_is_read(op) ||
            (gda_ft_psn_diff(pkt->psn, op->first_psn) !=
             (int32_t)op->resp_next)) {
            ++port->stats.rx_unexpected;
            return;
        }
        offset = op->resp_next * qp->mtu;
        if ((pkt->payload_len > qp->mtu) ||
            (offset + pkt->payload_len > op->length) ||
            (gda_ft_roce_opcode_is_last(pkt->opcode) !=
             (op->resp_next == op->npkts - 1))) {
            ++port->stats.rx_unexpected;
            return;
        }
        gda_ft_soft_op_scatter(op, offset, pkt->payload, pkt->payload_len,
                               &qp->req_refused, idx);
        if (++op->resp_next == op->npkts) {
            op->done = 1;
        }
    }

    /* A response also acknowledges every request before it. It is progress
     * even when an ACK already covered its PSN (the responder acknowledges
     * a read's PSNs when it accepts the request, before the data flows). */
    gda_ft_soft_req_ack(qp, pkt->psn);
    qp->retries_left = qp->retry_cnt;
    qp->timer_start  = gda_ft_soft_now_ns();
}

static int gda_ft_soft_req_check_timer(gda_ft_soft_qp_t *qp, uint64_t now)
{
    gda_ft_soft_op_t *op;

    /* timer_start may be later than this pass's 'now': an ACK received in
     * the pass restarted the timer */
    if (!gda_ft_soft_req_in_flight(qp) || (qp->rnr_until != 0) ||
        (now < qp->timer_start) ||
        (now - qp->timer_start < gda_ft_soft_timeout_ns(qp->timeout))) {
        return 0;
    }

    ++gda_ft_soft_qp_port(qp)->stats.retransmits;
    op = gda_ft_soft_op_at(qp, qp->op_head);
    ucs_debug("%s: QP 0x%x: retransmission timeout, %d retries left; oldest"
              " WQE %u opcode 0x%x psn 0x%x+%u resp_next %u acked 0x%x",
              qp->super.dev->attr.info.name, qp->super.qpn,
              qp->retries_left, op->wqe_idx, op->mlx5_opcode, op->first_psn,
              op->npkts, op->resp_next, qp->acked_psn);
    if (qp->retries_left == 0) {
        op = gda_ft_soft_op_at(qp, qp->op_head);
        gda_ft_soft_req_fail(qp, op, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
        return 1;
    }

    --qp->retries_left;
    qp->timer_start = now;
    gda_ft_soft_req_rewind(qp, qp->op_head);
    return 1;
}

int gda_ft_soft_req_progress(gda_ft_soft_qp_t *qp, uint64_t now,
                             unsigned *budget_p)
{
    int work = 0;

    switch (qp->super.state) {
    case GDA_FT_HCA_QP_RTS:
        work |= gda_ft_soft_req_parse(qp);
        work |= gda_ft_soft_req_retire(qp);
        work |= gda_ft_soft_req_check_timer(qp, now);
        if (qp->super.state == GDA_FT_HCA_QP_RTS) {
            work |= gda_ft_soft_req_transmit(qp, now, budget_p);
        }
        return work;
    case GDA_FT_HCA_QP_ERR:
        return gda_ft_soft_qp_flush(qp);
    default:
        return 0;
    }
}

int gda_ft_soft_qp_busy(gda_ft_soft_qp_t *qp)
{
    return qp->op_head != qp->op_tail;
}

uint64_t gda_ft_soft_qp_next_timer(gda_ft_soft_qp_t *qp)
{
    uint64_t timeout;

    if (qp->super.state != GDA_FT_HCA_QP_RTS) {
        return UINT64_MAX;
    }

    if (qp->rnr_until != 0) {
        return qp->rnr_until;
    }

    if (!gda_ft_soft_req_in_flight(qp)) {
        return UINT64_MAX;
    }

    timeout = gda_ft_soft_timeout_ns(qp->timeout);
    return (timeout == UINT64_MAX) ? UINT64_MAX : qp->timer_start + timeout;
}

static int gda_ft_soft_rq_flush(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_cq_t *cq = (gda_ft_soft_cq_t*)qp->super.init.recv_cq;
    uint16_t pi;
    int work = 0;

    if (cq == NULL) {
        return 0;
    }

    pi = gda_ft_be32toh(__atomic_load_n(
            &qp->super.init.dbrec[GDA_FT_MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
    for (; qp->rq_ci != pi; ++qp->rq_ci) {
        gda_ft_soft_cq_write(cq, GDA_FT_MLX5_CQE_RESP_ERR,
                             GDA_FT_MLX5_SYND_WR_FLUSH_ERR, qp->rq_ci,
                             qp->super.qpn, 0, 0, 0);
        work = 1;
    }
    return work;
}

int gda_ft_soft_qp_flush(gda_ft_soft_qp_t *qp)
{
    uint16_t pi = gda_ft_soft_sq_pi(qp);
    gda_ft_soft_op_t *op;
    gda_ft_soft_op_t scratch;
    int work = 0;

    /* Parsed WQEs first, then whatever the poster added since */
    for (; qp->op_head != qp->op_tail; ++qp->op_head) {
        op = gda_ft_soft_op_at(qp, qp->op_head);
        gda_ft_soft_op_complete(qp, op, GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
        work = 1;
    }
    qp->op_send = qp->op_head;

    while (qp->sq_parse != pi) {
        qp->sq_parse += gda_ft_soft_parse_wqe(qp, &scratch, qp->sq_parse);
        gda_ft_soft_op_complete(qp, &scratch, GDA_FT_MLX5_SYND_WR_FLUSH_ERR);
        work = 1;
    }

    work |= gda_ft_soft_rq_flush(qp);
    return work;
}

const char *gda_ft_soft_req_describe(gda_ft_soft_qp_t *qp, char *buf,
                                     size_t max)
{
    const gda_ft_soft_op_t *op = (qp->op_send != qp->op_tail) ?
                                 gda_ft_soft_op_at(qp, qp->op_send) : NULL;
    uint64_t now               = gda_ft_soft_now_ns();

    snprintf(buf, max, "ops: %u sent unretired, %u parsed unsent (head %u "
             "send %u tail %u); PSN next 0x%x acked 0x%x; atomics in flight "
             "%u of %u; retries left %d; timer started %.3f ms ago, timeout "
             "%.3f ms%s; doorbell record %u, parsed to %u; next to send: "
             "%s%s",
             qp->op_send - qp->op_head, qp->op_tail - qp->op_send,
             qp->op_head, qp->op_send, qp->op_tail, qp->next_psn,
             qp->acked_psn, qp->rd_atomic_inflight, qp->max_rd_atomic,
             qp->retries_left, ((int64_t)(now - qp->timer_start)) / 1e6,
             gda_ft_soft_timeout_ns(qp->timeout) / 1e6,
             (qp->rnr_until != 0) ? ", RNR back-off" : "",
             gda_ft_soft_sq_pi(qp), qp->sq_parse,
             (op == NULL) ? "none" :
             gda_ft_soft_op_needs_response(op) ? "read/atomic" : "write/send",
             ((op != NULL) && op->fence) ? " (fenced)" : "");
    return buf;
}

void gda_ft_soft_qp_reset_state(gda_ft_soft_qp_t *qp)
{
    unsigned idx;

    for (idx = qp->op_head; idx != qp->op_tail; ++idx) {
        gda_ft_soft_op_release_data(gda_ft_soft_op_at(qp, idx));
    }

    qp->op_head = qp->op_send = qp->op_tail = qp->read_ahead = 0;
    qp->rd_atomic_inflight  = 0;
    qp->rnr_until           = 0;
    qp->req_refused.refused = 0;
    qp->in_msg              = 0;
    qp->nak_sent            = 0;
    qp->ack_pending         = 0;
    qp->msn                 = 0;
    memset(qp->atomic_cache, 0, sizeof(qp->atomic_cache));
    gda_ft_soft_resp_reset(qp);
}
