/*
 * Software HCA responder: checks every request (PSN, rkey, PD, bounds,
 * access rights) before it touches memory, executes writes, sends, reads and
 * atomics, answers with coalesced ACKs, NAKs and responses, and replays
 * duplicate reads and atomics without executing an atomic twice.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>

/* RNR NAK timer field sent to requesters */
static uint8_t gda_ft_soft_resp_rnr_timer(gda_ft_soft_qp_t *qp)
{
    return qp->min_rnr_timer;
}

static void gda_ft_soft_resp_nak(gda_ft_soft_qp_t *qp, uint32_t psn,
                                 uint8_t code);

/*
 * Whether the responder must stay silent: a copy it made into or out of
 * device memory was refused (the memory went away while registered). The
 * refused copy's PSN gets a remote access NAK and the QP fails, as a
 * ConnectX answers an access to memory whose key was invalidated; nothing
 * after it is acknowledged until the QP is reset.
 */
static int gda_ft_soft_resp_silent(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_mem_flush();   /* writes on their way: refused or landed */
    if (!qp->resp_refused.refused) {
        return 0;
    }
    if (qp->super.state != GDA_FT_HCA_QP_ERR) {
        gda_ft_soft_resp_nak(qp, qp->resp_refused.tag,
                             GDA_FT_AETH_NAK_REMOTE_ACCESS);
    }
    return 1;
}

/* Builds and sends a packet of the responder; a payload in device memory
 * that cannot be read fails the QP instead */
static void gda_ft_soft_resp_packet(gda_ft_soft_qp_t *qp, uint8_t opcode,
                                    uint32_t psn, const void *ext,
                                    size_t ext_len, const void *payload,
                                    gda_ft_hca_mem_type_t mem_type,
                                    size_t len)
{
    static __thread uint8_t pkt[GDA_FT_SOFT_PKT_MAX];
    size_t hdr_len;

    hdr_len = gda_ft_roce_build_hdr(pkt, opcode, qp->dest_qpn, psn, 0, len,
                                    ext, ext_len);
    if ((len > 0) &&
        (gda_ft_soft_mem_copy(pkt + hdr_len, GDA_FT_HCA_MEM_HOST, payload,
                              mem_type, len, &qp->resp_refused,
                              psn) != UCS_OK)) {
        (void)gda_ft_soft_resp_silent(qp);
        return;
    }
    hdr_len += len;
    hdr_len += gda_ft_roce_finish(pkt, hdr_len);
    gda_ft_soft_tx(gda_ft_soft_qp_port(qp), qp->remote_ip, pkt, hdr_len, 1);
}

/* A response, an acknowledgement or an RNR NAK, unless the responder must
 * stay silent */
static void gda_ft_soft_resp_send(gda_ft_soft_qp_t *qp, uint8_t opcode,
                                  uint32_t psn, const void *ext,
                                  size_t ext_len, const void *payload,
                                  gda_ft_hca_mem_type_t mem_type, size_t len)
{
    if (!gda_ft_soft_resp_silent(qp)) {
        gda_ft_soft_resp_packet(qp, opcode, psn, ext, ext_len, payload,
                                mem_type, len);
    }
}

static void gda_ft_soft_resp_send_aeth(gda_ft_soft_qp_t *qp, uint32_t psn,
                                       uint8_t syndrome)
{
    gda_ft_roce_aeth_t aeth;

    aeth.syn_msn = htonl(((uint32_t)syndrome << 24) | (qp->msn & 0xffffff));
    if ((syndrome & GDA_FT_AETH_TYPE_MASK) == GDA_FT_AETH_NAK) {
        gda_ft_soft_resp_packet(qp, GDA_FT_ROCE_ACKNOWLEDGE, psn, &aeth,
                                sizeof(aeth), NULL, GDA_FT_HCA_MEM_HOST, 0);
    } else {
        gda_ft_soft_resp_send(qp, GDA_FT_ROCE_ACKNOWLEDGE, psn, &aeth,
                              sizeof(aeth), NULL, GDA_FT_HCA_MEM_HOST, 0);
    }
}

void gda_ft_soft_resp_flush_ack(gda_ft_soft_qp_t *qp)
{
    if (!qp->ack_pending) {
        return;
    }

    qp->ack_pending = 0;
    ++gda_ft_soft_qp_port(qp)->stats.tx_acks;
    gda_ft_soft_resp_send_aeth(qp, gda_ft_psn_add(qp->epsn,
                                                  GDA_FT_ROCE_PSN_MASK),
                               GDA_FT_AETH_ACK | GDA_FT_AETH_CREDIT_INVALID);
}

/* Sends a NAK; errors other than PSN sequence also fail the QP */
static void gda_ft_soft_resp_nak(gda_ft_soft_qp_t *qp, uint32_t psn,
                                 uint8_t code)
{
    gda_ft_soft_port_t *port = gda_ft_soft_qp_port(qp);

    ++port->stats.tx_naks;
    gda_ft_soft_resp_send_aeth(qp, psn, GDA_FT_AETH_NAK | code);
    if (code != GDA_FT_AETH_NAK_PSN_SEQ) {
        ucs_debug("%s: QP 0x%x: NAK %u for PSN 0x%x, QP -> ERR",
                  qp->super.dev->attr.info.name, qp->super.qpn, code, psn);
        gda_ft_soft_qp_enter_error(qp);
    }
}

static void gda_ft_soft_resp_rnr_nak(gda_ft_soft_qp_t *qp, uint32_t psn)
{
    ++gda_ft_soft_qp_port(qp)->stats.tx_rnr_naks;
    gda_ft_soft_resp_send_aeth(qp, psn, GDA_FT_AETH_RNR_NAK |
                               gda_ft_soft_resp_rnr_timer(qp));
}

/*
 * Checks a remote access of [va, va+len) with rkey. Returns the MR, or NULL
 * when the access must be refused.
 */
static gda_ft_soft_mr_t *gda_ft_soft_resp_check_rkey(gda_ft_soft_qp_t *qp,
                                                     uint32_t rkey,
                                                     uint64_t va,
                                                     uint64_t len,
                                                     unsigned access)
{
    /* A zero-length RDMA WRITE or READ touches no memory, and the IBA does
     * not check its R_Key or VA (UCX probes endpoints with such a WRITE to
     * address 0, R_Key 0): it gets an MR that stands for nothing */
    static gda_ft_soft_mr_t zero_length_mr = {
        .super = {.mem_type = GDA_FT_HCA_MEM_HOST}
    };
    gda_ft_soft_mr_t *mr;
    uint64_t start, end;
    const char *why;

    if (len == 0) {
        return &zero_length_mr;
    }

    mr = gda_ft_soft_mr_lookup(rkey);
    if (mr == NULL) {
        why = "no such key";
    } else if (mr->super.pd != qp->super.pd) {
        why = "key of another protection domain";
    } else if (((qp->access & access) != access) ||
               ((mr->super.access & access) != access)) {
        why = "access not allowed";
    } else {
        start = (uintptr_t)mr->super.addr;
        end   = start + mr->super.length;
        if ((va >= start) && (va + len >= va) && (va + len <= end)) {
            return mr;
        }
        why = "out of the region's bounds";
    }

    ucs_diag("%s: QP 0x%x refuses a remote access of %" PRIu64 " bytes at "
             "0x%" PRIx64 " with rkey 0x%x: %s", qp->super.dev->attr.info.name,
             qp->super.qpn, len, va, rkey, why);
    return NULL;
}

static gda_ft_soft_rd_resp_t *gda_ft_soft_resp_entry(gda_ft_soft_qp_t *qp,
                                                     unsigned idx)
{
    return &qp->rd_resp[idx % GDA_FT_SOFT_RD_RESP_QUEUE];
}

static int gda_ft_soft_resp_queue_full(const gda_ft_soft_qp_t *qp)
{
    return (qp->rd_resp_tail - qp->rd_resp_head) == GDA_FT_SOFT_RD_RESP_QUEUE;
}

/* Drops the queued responses, from the last one back to the first whose
 * last PSN is before psn (all of them when all) */
static void gda_ft_soft_resp_drop_from(gda_ft_soft_qp_t *qp, uint32_t psn,
                                       int all)
{
    gda_ft_soft_rd_resp_t *rd;

    gda_ft_soft_mem_flush();   /* no copy still on its way into them */

    while (qp->rd_resp_tail != qp->rd_resp_head) {
        rd = gda_ft_soft_resp_entry(qp, qp->rd_resp_tail - 1);
        if (!all && (gda_ft_psn_diff(gda_ft_psn_add(rd->psn, rd->npkts - 1),
                                     psn) < 0)) {
            break;
        }
        free(rd->snapshot);
        rd->snapshot = NULL;
        --qp->rd_resp_tail;
    }
}

void gda_ft_soft_resp_reset(gda_ft_soft_qp_t *qp)
{
    gda_ft_soft_resp_drop_from(qp, 0, 1);
    qp->rd_resp_head = qp->rd_resp_tail = 0;
    qp->resp_refused.refused = 0;
}

/*
 * Requests execute in PSN order, but a read's data leaves over later
 * engine passes: before a later write or atomic changes bytes that a queued
 * read has still to send, the read keeps a copy of them, so that it
 * answers what was there when it executed, as an HCA does. Returns 0 when
 * no copy could be made: the caller drops its request unexecuted, and the
 * requester sends it again.
 */
static int gda_ft_soft_resp_hold_reads(gda_ft_soft_qp_t *qp, uint64_t va,
                                       size_t len)
{
    gda_ft_soft_rd_resp_t *rd;
    gda_ft_soft_mr_t *mr;
    uint64_t from, end;
    unsigned idx;

    for (idx = qp->rd_resp_head; idx != qp->rd_resp_tail; ++idx) {
        rd   = gda_ft_soft_resp_entry(qp, idx);
        from = rd->va + (uint64_t)rd->sent * qp->mtu;
        end  = rd->va + rd->len;
        if (rd->is_atomic || (rd->snapshot != NULL) || (va >= end) ||
            (va + len <= from)) {
            continue;
        }
        /* a key gone since: the read's next response reports it */
        mr = gda_ft_soft_resp_check_rkey(qp, rd->rkey, from, end - from,
                                         GDA_FT_HCA_ACCESS_REMOTE_READ);
        if (mr == NULL) {
            continue;
        }
        rd->snapshot = malloc(end - from);
        if (rd->snapshot == NULL) {
            return 0;
        }
        gda_ft_soft_mem_copy(rd->snapshot, GDA_FT_HCA_MEM_HOST,
                             (void*)(uintptr_t)from, mr->super.mem_type,
                             end - from, &qp->resp_refused, rd->psn);
        rd->snap_from = rd->sent;
    }
    return 1;
}

/* Receive WQE available? */
static int gda_ft_soft_resp_rq_ready(gda_ft_soft_qp_t *qp)
{
    uint16_t pi;

    if (qp->super.init.recv_cq == NULL) {
        return 0;
    }
    pi = gda_ft_be32toh(__atomic_load_n(
            &qp->super.init.dbrec[GDA_FT_MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
    return pi != qp->rq_ci;
}

/*
 * Scatters a SEND payload at 'offset' of the current receive WQE.
 * Returns a CQE syndrome, 0 on success.
 */
static uint8_t gda_ft_soft_resp_rq_scatter(gda_ft_soft_qp_t *qp,
                                           uint32_t psn, uint32_t offset,
                                           const uint8_t *data, uint32_t len)
{
    const gda_ft_hca_qp_init_attr_t *init = &qp->super.init;
    const gda_ft_mlx5_data_seg_t *dseg;
    gda_ft_soft_mr_t *mr;
    uint32_t bc, lkey, chunk;
    uint64_t addr, start;
    unsigned i, nseg;

    dseg = (const gda_ft_mlx5_data_seg_t*)
           ((const uint8_t*)init->rq_buf +
            (size_t)(qp->rq_ci & (init->rq_wqe_cnt - 1)) * init->rq_wqe_size);
    nseg = init->rq_wqe_size / sizeof(*dseg);

    for (i = 0; (i < nseg) && (len > 0); ++i) {
        bc   = gda_ft_be32toh(dseg[i].byte_count);
        lkey = gda_ft_be32toh(dseg[i].lkey);
        addr = gda_ft_be64toh(dseg[i].addr);
        if ((lkey == GDA_FT_MLX5_INVALID_LKEY) || (bc == 0)) {
            break;
        }
        if (offset >= bc) {
            offset -= bc;
            continue;
        }

        chunk = ucs_min(bc - offset, len);
        mr    = gda_ft_soft_mr_lookup(lkey);
        start = (mr != NULL) ? (uintptr_t)mr->super.addr : 0;
        if ((mr == NULL) || (mr->super.pd != qp->super.pd) ||
            !(mr->super.access & GDA_FT_HCA_ACCESS_LOCAL_WRITE) ||
            (addr + offset < start) ||
            (addr + offset + chunk > start + mr->super.length)) {
            return GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
        }

        gda_ft_soft_mem_copy((void*)(uintptr_t)(addr + offset),
                             mr->super.mem_type, data, GDA_FT_HCA_MEM_HOST,
                             chunk, &qp->resp_refused, psn);
        data  += chunk;
        len   -= chunk;
        offset = 0;
    }

    return (len > 0) ? GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR : 0;
}

/* A receive's CQE; one whose bytes (or those of a message before it) the
 * CUDA runtime refused to write is an error, and the QP's next packet a
 * NAK (gda_ft_soft_resp_silent) */
static void gda_ft_soft_resp_recv_cqe(gda_ft_soft_qp_t *qp, uint8_t opcode,
                                      uint8_t syndrome, uint32_t byte_cnt,
                                      uint32_t imm_be)
{
    if (syndrome == 0) {
        gda_ft_soft_mem_flush();
        if (qp->resp_refused.refused) {
            opcode   = GDA_FT_MLX5_CQE_RESP_ERR;
            syndrome = GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
        }
    }
    gda_ft_soft_cq_write((gda_ft_soft_cq_t*)qp->super.init.recv_cq, opcode,
                         syndrome, qp->rq_ci, qp->super.qpn, 0, byte_cnt,
                         imm_be);
    ++qp->rq_ci;
}

static int gda_ft_soft_opcode_has_imm(uint8_t opcode)
{
    return (opcode == GDA_FT_ROCE_SEND_LAST_IMM) ||
           (opcode == GDA_FT_ROCE_SEND_ONLY_IMM) ||
           (opcode == GDA_FT_ROCE_WRITE_LAST_IMM) ||
           (opcode == GDA_FT_ROCE_WRITE_ONLY_IMM);
}

static int gda_ft_soft_opcode_is_send(uint8_t opcode)
{
    return opcode <= GDA_FT_ROCE_SEND_ONLY_IMM;
}

/* WRITE and SEND packets; returns 0 when the PSN must not advance */
static int gda_ft_soft_resp_write_send(gda_ft_soft_qp_t *qp,
                                       const gda_ft_roce_pkt_t *pkt)
{
    int send  = gda_ft_soft_opcode_is_send(pkt->opcode);
    int first = gda_ft_roce_opcode_is_first(pkt->opcode);
    int last  = gda_ft_roce_opcode_is_last(pkt->opcode);
    int imm   = gda_ft_soft_opcode_has_imm(pkt->opcode);
    gda_ft_soft_mr_t *mr;
    uint8_t synd;

    if (first) {
        if (qp->in_msg) {
            gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_INVALID_REQ);
            return 0;
        }
        qp->msg_done = 0;
        if (send) {
            qp->msg_len = 0;
        } else {
            qp->msg_va   = gda_ft_be64toh(pkt->reth->va);
            qp->msg_len  = ntohl(pkt->reth->dma_len);
            mr = gda_ft_soft_resp_check_rkey(qp, ntohl(pkt->reth->rkey),
                                             qp->msg_va, qp->msg_len,
                                             GDA_FT_HCA_ACCESS_REMOTE_WRITE);
            if (mr == NULL) {
                gda_ft_soft_resp_nak(qp, pkt->psn,
                                     GDA_FT_AETH_NAK_REMOTE_ACCESS);
                return 0;
            }
            /* Keep the key, not the MR: it may be deregistered between
             * packets */
            qp->msg_rkey = mr->super.rkey;
        }
    } else if (!qp->in_msg ||
               (gda_ft_soft_opcode_is_send(qp->msg_opcode) != send)) {
        gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_INVALID_REQ);
        return 0;
    }

    /* Packet sizes: all but the last exactly one MTU */
    if ((!last && (pkt->payload_len != qp->mtu)) ||
        (!send && ((uint64_t)qp->msg_done + pkt->payload_len >
                   qp->msg_len)) ||
        (!send && last &&
         (qp->msg_done + pkt->payload_len != qp->msg_len))) {
        gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_INVALID_REQ);
        return 0;
    }

    /* A receive WQE is needed by SEND and by WRITE with immediate */
    if ((send && first) || (!send && imm)) {
        if (!gda_ft_soft_resp_rq_ready(qp)) {
            gda_ft_soft_resp_rnr_nak(qp, pkt->psn);
            return 0;
        }
    }

    if (send) {
        synd = gda_ft_soft_resp_rq_scatter(qp, pkt->psn, qp->msg_done,
                                           pkt->payload,
                                           pkt->payload_len);
        if (synd != 0) {
            gda_ft_soft_resp_recv_cqe(qp, GDA_FT_MLX5_CQE_RESP_ERR, synd, 0,
                                      0);
            gda_ft_soft_resp_nak(qp, pkt->psn,
                                 (synd == GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR) ?
                                 GDA_FT_AETH_NAK_INVALID_REQ :
                                 GDA_FT_AETH_NAK_REMOTE_OP);
            return 0;
        }
    } else if (pkt->payload_len > 0) {
        mr = gda_ft_soft_resp_check_rkey(qp, qp->msg_rkey,
                                         qp->msg_va + qp->msg_done,
                                         pkt->payload_len,
                                         GDA_FT_HCA_ACCESS_REMOTE_WRITE);
        if (mr == NULL) {
            gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_REMOTE_ACCESS);
            return 0;
        }
        if (!gda_ft_soft_resp_hold_reads(qp, qp->msg_va + qp->msg_done,
                                         pkt->payload_len)) {
            return 0;   /* unexecuted: the requester sends it again */
        }
        gda_ft_soft_mem_copy((void*)(uintptr_t)(qp->msg_va + qp->msg_done),
                             mr->super.mem_type, pkt->payload,
                             GDA_FT_HCA_MEM_HOST, pkt->payload_len,
                             &qp->resp_refused, pkt->psn);
    }

    qp->msg_done   += pkt->payload_len;
    qp->in_msg      = !last;
    qp->msg_opcode  = pkt->opcode;
    if (last) {
        ++qp->msn;
        if (send || imm) {
            gda_ft_soft_resp_recv_cqe(qp, send ?
                                      (imm ? GDA_FT_MLX5_CQE_RESP_SEND_IMM :
                                             GDA_FT_MLX5_CQE_RESP_SEND) :
                                      GDA_FT_MLX5_CQE_RESP_WR_IMM, 0,
                                      qp->msg_done,
                                      imm ? pkt->immdt->imm : 0);
        }
    }
    return 1;
}

/*
 * A read of device memory is copied as it executes, with the copies and
 * atomics the engine thread queues until its next flush: its responses
 * leave from the copy, without a copy and a wait each. One too long for
 * that reads its bytes as its responses are built.
 */
static void gda_ft_soft_resp_read_early(gda_ft_soft_qp_t *qp,
                                        gda_ft_soft_rd_resp_t *rd,
                                        const gda_ft_soft_mr_t *mr)
{
    if ((mr->super.mem_type != GDA_FT_HCA_MEM_CUDA) || (rd->len == 0)) {
        return;
    }
    rd->snapshot = malloc(rd->len);
    if (rd->snapshot == NULL) {
        return;
    }
    rd->snap_from = 0;
    if (!gda_ft_soft_mem_read_at_flush(rd->snapshot,
                                       (void*)(uintptr_t)rd->va, rd->len,
                                       &qp->resp_refused, rd->psn)) {
        free(rd->snapshot);
        rd->snapshot = NULL;
    }
}

/*
 * Queues the responses of a read request at psn; returns PSNs consumed.
 * A full queue drops the request: the requester retransmits it.
 */
static uint32_t gda_ft_soft_resp_read(gda_ft_soft_qp_t *qp,
                                      const gda_ft_roce_pkt_t *pkt)
{
    uint64_t va  = gda_ft_be64toh(pkt->reth->va);
    uint32_t len = ntohl(pkt->reth->dma_len);
    gda_ft_soft_rd_resp_t *rd;
    gda_ft_soft_mr_t *mr;
    uint32_t npkts;

    mr = gda_ft_soft_resp_check_rkey(qp, ntohl(pkt->reth->rkey), va, len,
                                     GDA_FT_HCA_ACCESS_REMOTE_READ);
    if (mr == NULL) {
        gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_REMOTE_ACCESS);
        return 0;
    }

    npkts = ucs_max(1, (len + qp->mtu - 1) / qp->mtu);
    if (gda_ft_soft_resp_queue_full(qp)) {
        return npkts;
    }

    rd            = gda_ft_soft_resp_entry(qp, qp->rd_resp_tail++);
    rd->psn       = pkt->psn;
    rd->va        = va;
    rd->rkey      = ntohl(pkt->reth->rkey);
    rd->len       = len;
    rd->npkts     = npkts;
    rd->sent      = 0;
    rd->msn       = qp->msn + 1;
    rd->is_atomic = 0;
    rd->snapshot  = NULL;
    gda_ft_soft_resp_read_early(qp, rd, mr);
    return npkts;
}

static void gda_ft_soft_resp_atomic_ack(gda_ft_soft_qp_t *qp, uint32_t psn,
                                        uint32_t msn, uint64_t orig)
{
    struct {
        gda_ft_roce_aeth_t           aeth;
        gda_ft_roce_atomic_ack_eth_t ack;
    } __attribute__((packed)) ext;

    ext.aeth.syn_msn = htonl(((uint32_t)(GDA_FT_AETH_ACK |
                                         GDA_FT_AETH_CREDIT_INVALID) << 24) |
                             (msn & 0xffffff));
    ext.ack.orig     = gda_ft_htobe64(orig);
    gda_ft_soft_resp_send(qp, GDA_FT_ROCE_ATOMIC_ACKNOWLEDGE, psn, &ext,
                          sizeof(ext), NULL, GDA_FT_HCA_MEM_HOST, 0);
}

/* Sends the queued responses in order, reads' a budget per call */
int gda_ft_soft_resp_progress(gda_ft_soft_qp_t *qp)
{
    unsigned budget = GDA_FT_SOFT_RD_RESP_BUDGET;
    gda_ft_roce_aeth_t aeth;
    gda_ft_soft_rd_resp_t *rd;
    gda_ft_soft_mr_t *mr;
    uint32_t k, chunk;
    uint64_t va;
    uint8_t opcode;
    int work = 0;

    while ((qp->rd_resp_head != qp->rd_resp_tail) && (budget > 0) &&
           ((qp->super.state == GDA_FT_HCA_QP_RTR) ||
            (qp->super.state == GDA_FT_HCA_QP_RTS))) {
        rd = gda_ft_soft_resp_entry(qp, qp->rd_resp_head);
        if (rd->is_atomic) {
            gda_ft_soft_mem_flush();   /* a queued atomic's orig is known */
            gda_ft_soft_resp_atomic_ack(qp, rd->psn, rd->msn, rd->orig);
            ++qp->rd_resp_head;
            --budget;
            work = 1;
            continue;
        }
        k  = rd->sent;
        va = rd->va + (uint64_t)k * qp->mtu;
        chunk = ucs_min(qp->mtu, rd->len - k * qp->mtu);

        /* The MR may have gone since the request was checked */
        mr = gda_ft_soft_resp_check_rkey(qp, rd->rkey, va, chunk,
                                         GDA_FT_HCA_ACCESS_REMOTE_READ);
        if (mr == NULL) {
            gda_ft_soft_resp_nak(qp, gda_ft_psn_add(rd->psn, k),
                                 GDA_FT_AETH_NAK_REMOTE_ACCESS);
            gda_ft_soft_resp_drop_from(qp, 0, 1);
            return 1;
        }

        if (rd->npkts == 1) {
            opcode = GDA_FT_ROCE_READ_RESPONSE_ONLY;
        } else if (k == 0) {
            opcode = GDA_FT_ROCE_READ_RESPONSE_FIRST;
        } else if (k == rd->npkts - 1) {
            opcode = GDA_FT_ROCE_READ_RESPONSE_LAST;
        } else {
            opcode = GDA_FT_ROCE_READ_RESPONSE_MIDDLE;
        }

        aeth.syn_msn = htonl(((uint32_t)(GDA_FT_AETH_ACK |
                                         GDA_FT_AETH_CREDIT_INVALID) << 24) |
                             (rd->msn & 0xffffff));
        gda_ft_soft_resp_send(qp, opcode, gda_ft_psn_add(rd->psn, k), &aeth,
                              (opcode == GDA_FT_ROCE_READ_RESPONSE_MIDDLE) ?
                              0 : sizeof(aeth),
                              (rd->snapshot != NULL) ?
                              rd->snapshot +
                              (uint64_t)(k - rd->snap_from) * qp->mtu :
                              (void*)(uintptr_t)va,
                              (rd->snapshot != NULL) ? GDA_FT_HCA_MEM_HOST :
                              mr->super.mem_type, chunk);
        if (++rd->sent == rd->npkts) {
            free(rd->snapshot);
            rd->snapshot = NULL;
            ++qp->rd_resp_head;
        }
        --budget;
        work = 1;
    }
    return work;
}

/* Adds within the fields delimited by boundary bits (carry stops there) */
static uint64_t gda_ft_soft_field_add(uint64_t value, uint64_t add,
                                      uint64_t boundary, int bits)
{
    uint64_t result = 0, mask;
    int lo = 0, hi;

    for (hi = 0; hi < bits; ++hi) {
        if ((hi == bits - 1) || (boundary & (1ull << hi))) {
            mask    = ((hi - lo + 1) == 64) ? ~0ull :
                      (((1ull << (hi - lo + 1)) - 1) << lo);
            result |= ((value & mask) + (add & mask)) & mask;
            lo      = hi + 1;
        }
    }
    return result;
}

static uint64_t gda_ft_soft_atomic_apply(uint64_t old, uint8_t op,
                                         const uint64_t *arg, int size)
{
    uint64_t mask = (size == 4) ? 0xffffffffull : ~0ull;

    switch (op) {
    case GDA_FT_ROCE_COMPARE_SWAP:
        return (old == arg[1]) ? arg[0] : old;
    case GDA_FT_ROCE_FETCH_ADD:
        return old + arg[0];
    case GDA_FT_ROCE_MASKED_CS:
        /* operands: swap, compare, swap_mask, compare_mask */
        if ((old & arg[3]) != (arg[1] & arg[3])) {
            return old;
        }
        return ((old & ~arg[2]) | (arg[0] & arg[2])) & mask;
    default: /* GDA_FT_ROCE_MASKED_FA: add, field boundary */
        return gda_ft_soft_field_add(old, arg[0], arg[1], size * 8);
    }
}

const char *gda_ft_soft_resp_describe(const gda_ft_soft_qp_t *qp, char *buf,
                                      size_t max)
{
    snprintf(buf, max, "expects PSN 0x%x (msn %u, NAK sent %d, ACK pending "
             "%d, in a message %d, %u responses queued)", qp->epsn, qp->msn,
             qp->nak_sent, qp->ack_pending, qp->in_msg,
             qp->rd_resp_tail - qp->rd_resp_head);
    return buf;
}

/* Executes an atomic in host memory, atomically w.r.t. CPU threads */
static uint64_t gda_ft_soft_atomic_exec(void *addr, int size, uint8_t op,
                                        const uint64_t *arg)
{
    uint64_t old, new_value;
    uint32_t old32;

    /* a signal lands behind the data its QP wrote before it */
    gda_ft_soft_mem_flush();

    if (size == 4) {
        old32 = __atomic_load_n((uint32_t*)addr, __ATOMIC_RELAXED);
        do {
            new_value = gda_ft_soft_atomic_apply(old32, op, arg, 4);
        } while (!__atomic_compare_exchange_n((uint32_t*)addr, &old32,
                                              (uint32_t)new_value, 0,
                                              __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old32;
    }

    old = __atomic_load_n((uint64_t*)addr, __ATOMIC_RELAXED);
    do {
        new_value = gda_ft_soft_atomic_apply(old, op, arg, 8);
    } while (!__atomic_compare_exchange_n((uint64_t*)addr, &old, new_value, 0,
                                          __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
    return old;
}

/* An atomic's acknowledgement leaves now, or behind the reads before it.
 * One on a word in device memory is queued: its old value is known, and
 * its new value in place, once the engine thread has flushed. */
static void gda_ft_soft_resp_answer_atomic(gda_ft_soft_qp_t *qp,
                                           uint32_t psn, uint64_t orig,
                                           gda_ft_hca_mem_type_t mem_type)
{
    gda_ft_soft_rd_resp_t *rd;

    if ((qp->rd_resp_head == qp->rd_resp_tail) &&
        (mem_type != GDA_FT_HCA_MEM_CUDA)) {
        gda_ft_soft_resp_atomic_ack(qp, psn, qp->msn, orig);
        return;
    }

    /* the caller checked that there is room */
    rd            = gda_ft_soft_resp_entry(qp, qp->rd_resp_tail++);
    rd->psn       = psn;
    rd->npkts     = 1;
    rd->msn       = qp->msn;
    rd->is_atomic = 1;
    rd->orig      = orig;
    rd->snapshot  = NULL;
}

static gda_ft_soft_atomic_cache_t *
gda_ft_soft_atomic_cache_find(gda_ft_soft_qp_t *qp, uint32_t psn)
{
    unsigned i;

    for (i = 0; i < GDA_FT_SOFT_ATOMIC_CACHE; ++i) {
        if (qp->atomic_cache[i].valid && (qp->atomic_cache[i].psn == psn)) {
            return &qp->atomic_cache[i];
        }
    }
    return NULL;
}

/* Remembers an atomic's result: a retransmitted request gets it again
 * without executing the atomic twice */
static gda_ft_soft_atomic_cache_t *
gda_ft_soft_resp_atomic_remember(gda_ft_soft_qp_t *qp, uint32_t psn,
                                 uint64_t orig)
{
    gda_ft_soft_atomic_cache_t *entry;

    entry          = &qp->atomic_cache[qp->atomic_cache_next++ %
                                       GDA_FT_SOFT_ATOMIC_CACHE];
    entry->psn     = psn;
    entry->orig    = orig;
    entry->valid   = 1;
    entry->pending = 0;
    return entry;
}

/*
 * Runs an atomic on a word of device memory: not when the word could not
 * be read, nor when a copy of its QP was refused at or before its PSN (the
 * QP fails there, and an atomic that cannot be undone must not run). Its
 * old value goes to its acknowledgement and the QP's cache.
 */
static int gda_ft_soft_resp_atomic_run(const gda_ft_soft_word_op_t *wop,
                                       int readable, uint64_t old,
                                       uint64_t *new_value)
{
    gda_ft_soft_qp_t *qp = wop->owner;
    gda_ft_soft_atomic_cache_t *entry;
    gda_ft_soft_rd_resp_t *rd;
    unsigned idx;
    int run;

    run   = readable &&
            (!qp->resp_refused.refused ||
             (gda_ft_psn_diff(wop->tag, qp->resp_refused.tag) < 0));
    entry = gda_ft_soft_atomic_cache_find(qp, wop->tag);
    if (entry != NULL) {
        entry->orig    = old;
        entry->valid   = run;
        entry->pending = 0;
    }
    if (!run) {
        return 0;
    }
    for (idx = qp->rd_resp_head; idx != qp->rd_resp_tail; ++idx) {
        rd = gda_ft_soft_resp_entry(qp, idx);
        if (rd->is_atomic && (rd->psn == wop->tag)) {
            rd->orig = old;
        }
    }
    *new_value = gda_ft_soft_atomic_apply(old, wop->code, wop->operand,
                                          wop->size);
    return 1;
}

/* An atomic on a word of device memory, whose acknowledgement and cache
 * entry wait for its old value: it runs with the others at the engine
 * thread's next flush, or now (gda_ft_soft_mem_word_op) */
static void gda_ft_soft_resp_atomic_on_device(gda_ft_soft_qp_t *qp,
                                              uint32_t psn, uint64_t va,
                                              int size, uint8_t op,
                                              const uint64_t *arg)
{
    gda_ft_soft_word_op_t wop;

    wop.addr    = (void*)(uintptr_t)va;
    wop.size    = size;
    wop.code    = op;
    memcpy(wop.operand, arg, sizeof(wop.operand));
    wop.owner   = qp;
    wop.tag     = psn;
    wop.refusal = &qp->resp_refused;
    wop.run     = gda_ft_soft_resp_atomic_run;
    gda_ft_soft_mem_word_op(&wop);
}

static int gda_ft_soft_resp_atomic(gda_ft_soft_qp_t *qp,
                                   const gda_ft_roce_pkt_t *pkt)
{
    gda_ft_soft_atomic_cache_t *entry;
    gda_ft_soft_mr_t *mr;
    uint64_t va, arg[4], orig;
    uint32_t rkey;
    uint8_t op;
    int size, i;

    if (pkt->masked != NULL) {
        va   = gda_ft_be64toh(pkt->masked->va);
        rkey = ntohl(pkt->masked->rkey);
        size = 1 << pkt->masked->log_size;
        op   = (pkt->masked->op == GDA_FT_ROCE_MASKED_CS) ?
               GDA_FT_ROCE_MASKED_CS : GDA_FT_ROCE_MASKED_FA;
        for (i = 0; i < 4; ++i) {
            arg[i] = gda_ft_be64toh(pkt->masked->operand[i]);
        }
        if (((size != 4) && (size != 8)) ||
            (pkt->masked->op > GDA_FT_ROCE_MASKED_FA)) {
            gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_INVALID_REQ);
            return 0;
        }
    } else {
        va     = gda_ft_be64toh(pkt->atomic->va);
        rkey   = ntohl(pkt->atomic->rkey);
        size   = 8;
        op     = pkt->opcode;
        arg[0] = gda_ft_be64toh(pkt->atomic->swap_add);
        arg[1] = gda_ft_be64toh(pkt->atomic->compare);
        arg[2] = arg[3] = 0;
    }

    if (va & (size - 1)) {
        gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_INVALID_REQ);
        return 0;
    }

    mr = gda_ft_soft_resp_check_rkey(qp, rkey, va, size,
                                     GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);
    if (mr == NULL) {
        gda_ft_soft_resp_nak(qp, pkt->psn, GDA_FT_AETH_NAK_REMOTE_ACCESS);
        return 0;
    }

    /* no room for its answer behind the reads (the requester keeps fewer
     * in flight, duplicates aside), or for what they must answer: unexecuted,
     * the requester sends it again */
    if (gda_ft_soft_resp_queue_full(qp) ||
        !gda_ft_soft_resp_hold_reads(qp, va, size)) {
        return 0;
    }

    /* not after a refused copy, which fails the QP before an atomic that
     * cannot be undone runs */
    if (mr->super.mem_type == GDA_FT_HCA_MEM_CUDA) {
        if (qp->resp_refused.refused) {
            (void)gda_ft_soft_resp_silent(qp);   /* the NAK */
            return 0;
        }
        ++qp->msn;
        entry          = gda_ft_soft_resp_atomic_remember(qp, pkt->psn, 0);
        entry->pending = 1;
        gda_ft_soft_resp_answer_atomic(qp, pkt->psn, 0, mr->super.mem_type);
        gda_ft_soft_resp_atomic_on_device(qp, pkt->psn, va, size, op, arg);
        return 1;
    }

    if (gda_ft_soft_resp_silent(qp)) {
        return 0;
    }
    orig = gda_ft_soft_atomic_exec((void*)(uintptr_t)va, size, op, arg);
    ++qp->msn;
    gda_ft_soft_resp_atomic_remember(qp, pkt->psn, orig);
    gda_ft_soft_resp_answer_atomic(qp, pkt->psn, orig, mr->super.mem_type);
    return 1;
}

static void gda_ft_soft_resp_duplicate(gda_ft_soft_qp_t *qp,
                                       const gda_ft_roce_pkt_t *pkt)
{
    gda_ft_soft_atomic_cache_t *entry;

    ++gda_ft_soft_qp_port(qp)->stats.rx_duplicate;
    switch (pkt->opcode) {
    case GDA_FT_ROCE_READ_REQUEST:
        /* The requester went back to this read (or to its rest, from a
         * lost response on): the answers queued for it and for every later
         * read are stale (it sends those requests again too, in order,
         * each a duplicate that lands here); those of the reads before it
         * are not. Reads are idempotent, so answer it again. */
        gda_ft_soft_resp_drop_from(qp, pkt->psn, 0);
        gda_ft_soft_resp_read(qp, pkt);
        break;
    case GDA_FT_ROCE_COMPARE_SWAP:
    case GDA_FT_ROCE_FETCH_ADD:
    case GDA_FT_ROCE_MASKED_ATOMIC:
        entry = gda_ft_soft_atomic_cache_find(qp, pkt->psn);
        if ((entry != NULL) && entry->pending) {
            gda_ft_soft_mem_flush();   /* runs it: its result is known */
        }
        /* its answer goes behind the reads before it, which its
         * requester asks for again too: those after it are stale */
        gda_ft_soft_resp_drop_from(qp, pkt->psn, 0);
        if ((entry != NULL) && entry->valid &&
            !gda_ft_soft_resp_queue_full(qp)) {
            gda_ft_soft_resp_answer_atomic(qp, pkt->psn, entry->orig,
                                           GDA_FT_HCA_MEM_HOST);
        }
        break;
    default:
        qp->ack_pending = 1;   /* re-acknowledge what we have */
        break;
    }
}

void gda_ft_soft_resp_handle_request(gda_ft_soft_qp_t *qp,
                                     const gda_ft_roce_pkt_t *pkt)
{
    gda_ft_soft_port_t *port = gda_ft_soft_qp_port(qp);
    int32_t diff             = gda_ft_psn_diff(pkt->psn, qp->epsn);
    uint32_t consumed        = 1;

    if (diff > 0) {
        ++port->stats.rx_out_of_seq;
        if (!qp->nak_sent) {
            qp->nak_sent = 1;
            gda_ft_soft_resp_nak(qp, qp->epsn, GDA_FT_AETH_NAK_PSN_SEQ);
        }
        return;
    } else if (diff < 0) {
        gda_ft_soft_resp_duplicate(qp, pkt);
        return;
    }

    qp->nak_sent = 0;
    switch (pkt->opcode) {
    case GDA_FT_ROCE_READ_REQUEST:
        consumed = gda_ft_soft_resp_read(qp, pkt);
        if (consumed > 0) {
            ++qp->msn;
        }
        break;
    case GDA_FT_ROCE_COMPARE_SWAP:
    case GDA_FT_ROCE_FETCH_ADD:
    case GDA_FT_ROCE_MASKED_ATOMIC:
        consumed = gda_ft_soft_resp_atomic(qp, pkt);
        break;
    default:
        consumed = gda_ft_soft_resp_write_send(qp, pkt);
        if (consumed && (pkt->ackreq ||
                         gda_ft_roce_opcode_is_last(pkt->opcode))) {
            qp->ack_pending = 1;
        }
        break;
    }

    /* atomic: gda_ft_soft_qp_query() reads it without the engine lock */
    __atomic_store_n(&qp->epsn, gda_ft_psn_add(qp->epsn, consumed),
                     __ATOMIC_RELAXED);
}
