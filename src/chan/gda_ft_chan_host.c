/*
 * Host half of a concurrent device channel: resources and guardian.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_chan_host.h"
#include "gda_ft_cq.h"
#include "gda_ft_dev_atomic.h"
#include "gda_ft_dev_common.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <stdio.h>
#include <string.h>

#define GDA_FT_CHAN_SCRATCH_SIZE 64
#define GDA_FT_CHAN_DBREC_SIZE   64

/* Counters have one writer, the guardian; queries read them from other
 * threads */
static void gda_ft_chan_host_count(uint32_t *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

/* Fresh PSNs for a re-armed path: anywhere in the 24-bit space, so that a
 * stale packet of the old incarnation is out of window */
static uint32_t gda_ft_chan_host_fresh_psn(gda_ft_chan_host_t *ch,
                                           unsigned salt, uint64_t now_ns)
{
    return (uint32_t)((now_ns >> 10) * 2654435761u + ch->chan.id * 97 +
                      salt * 0x5a5a5) & 0xffffff;
}

static void gda_ft_chan_host_free_path(gda_ft_chan_host_t *ch,
                                       gda_ft_chan_host_path_t *p)
{
    const gda_ft_chan_host_mem_t *mem = &ch->params.mem;

    if (p->qp != NULL) {
        gda_ft_hca_qp_destroy(p->qp);
    }
    if (p->cq != NULL) {
        gda_ft_hca_cq_destroy(p->cq);
    }
    if (p->wq_buf != NULL) {
        mem->free(p->wq_buf, mem->arg);   /* the RQ and the SQ */
    }
    if (p->cqe != NULL) {
        mem->free(p->cqe, mem->arg);
    }
    if (p->dbrec != NULL) {
        mem->free(p->dbrec, mem->arg);
    }
    if (p->slots != NULL) {
        ch->params.slot_mem.free(p->slots, ch->params.slot_mem.arg);
    }
}

static ucs_status_t gda_ft_chan_host_init_path(gda_ft_chan_host_t *ch,
                                               unsigned path)
{
    const gda_ft_chan_host_mem_t *mem = &ch->params.mem;
    gda_ft_chan_host_path_t *p        = &ch->path[path];
    gda_ft_chan_path_t *dp            = &ch->chan.path[path];
    unsigned wqebbs                   = ch->params.wqebb_cnt;
    gda_ft_hca_cq_attr_t cq_attr      = {0};
    gda_ft_hca_qp_init_attr_t qp_attr = {0};
    volatile uint64_t *uar;
    ucs_status_t status;
    size_t rq_len;

    /* One work queue buffer, the RQ then the SQ, as a ConnectX reads a
     * QP's (the mlx5 provider registers it as one umem) */
    rq_len    = (size_t)ch->params.rq_wqe_cnt * GDA_FT_MLX5_DS_SIZE;
    p->wq_buf = mem->alloc(rq_len + wqebbs * GDA_FT_MLX5_WQE_BB, mem->arg);
    p->cqe    = mem->alloc(GDA_FT_MLX5_CQE_SIZE, mem->arg);
    p->dbrec  = mem->alloc(GDA_FT_CHAN_DBREC_SIZE, mem->arg);
    p->slots  = ch->params.slot_mem.alloc(wqebbs *
                                          sizeof(gda_ft_chan_slot_t),
                                          ch->params.slot_mem.arg);
    if ((p->wq_buf == NULL) || (p->cqe == NULL) || (p->dbrec == NULL) ||
        (p->slots == NULL)) {
        ucs_error("channel %u: out of memory for path %u rings",
                  ch->chan.id, path);
        return UCS_ERR_NO_MEMORY;
    }
    p->rq_buf = (rq_len != 0) ? p->wq_buf : NULL;
    p->sq_buf = (char*)p->wq_buf + rq_len;
    gda_ft_cq_init_buf(p->cqe, 1);

    cq_attr.buf      = p->cqe;
    cq_attr.cqe_cnt  = 1;
    cq_attr.flags    = GDA_FT_HCA_CQ_COLLAPSED;
    cq_attr.mem_type    = mem->type;
    cq_attr.event_armed = ch->params.event_armed;
    cq_attr.event_fd    = ch->params.event_fd;
    status = gda_ft_hca_cq_create(p->pd->dev, &cq_attr, &p->cq);
    if (status != UCS_OK) {
        return status;
    }

    qp_attr.send_cq      = p->cq;
    qp_attr.sq_buf       = p->sq_buf;
    qp_attr.sq_wqebb_cnt = wqebbs;
    qp_attr.recv_cq      = ch->params.recv_cq[path];
    qp_attr.rq_buf       = p->rq_buf;
    qp_attr.rq_wqe_cnt   = ch->params.rq_wqe_cnt;
    qp_attr.rq_wqe_size  = GDA_FT_MLX5_DS_SIZE;   /* one data segment */
    qp_attr.dbrec        = p->dbrec;
    qp_attr.ring_mem     = mem->type;
    qp_attr.port_num     = p->port;
    qp_attr.response_ns  = ch->params.deadline_ns;
    status = gda_ft_hca_qp_create(p->pd, &qp_attr, &p->qp);
    if (status != UCS_OK) {
        return status;
    }

    /* A kernel reaches the provider's doorbell register where the
     * provider maps it for the GPU (mlx5: the UAR registered as I/O
     * memory); the software HCA reads the doorbell record alone, so there
     * the doorbell write of a GPU poster lands beside the record. */
    if (mem->type == GDA_FT_HCA_MEM_HOST) {
        uar = p->qp->uar;
    } else if (p->qp->dev_uar != NULL) {
        uar = p->qp->dev_uar;
    } else {
        uar = (volatile uint64_t*)(p->dbrec + 2);
    }
    gda_ft_dev_sq_init(&dp->sq, p->sq_buf, wqebbs, p->qp->qpn, p->dbrec, uar,
                       (mem->type == GDA_FT_HCA_MEM_HOST) ? p->qp->wake_fd :
                                                            -1,
                       p->qp->wake_armed, p->pd->dev->attr.max_inline);
    dp->cqe        = p->cqe;
    dp->cq_dbrec   = NULL;    /* the collapsed CQ of the soft HCA has none */
    dp->slots      = p->slots;
    dp->ring_off   = 0;
    dp->ring_next  = 0;
    dp->next_psn   = 0;
    dp->failed     = 0;
    dp->seen_rearm = 0;
    p->window_ns   = ch->params.recovery_ns;
    p->backoff_ns  = ch->params.rearm_backoff_ns;
    return UCS_OK;
}

ucs_status_t gda_ft_chan_host_init(gda_ft_chan_host_t *ch,
                                   gda_ft_hca_pd_t *const *pd,
                                   const uint8_t *port, unsigned id,
                                   gda_ft_chan_health_t *health,
                                   const gda_ft_chan_host_params_t *params)
{
    const gda_ft_chan_host_mem_t *mem = &params->mem;
    gda_ft_hca_mr_attr_t mr_attr;
    ucs_status_t status;
    unsigned path;

    if ((params->wqebb_cnt < 64) ||
        (params->wqebb_cnt > GDA_FT_CHAN_MAX_WQEBBS) ||
        (params->wqebb_cnt & (params->wqebb_cnt - 1)) ||
        (params->max_chunk == 0) ||
        (params->rq_wqe_cnt & (params->rq_wqe_cnt - 1))) {
        ucs_error("channel %u: ring size %u must be a power of 2 in "
                  "[64, %u], chunk size %u non-zero, receive queue %u a "
                  "power of 2 or 0", id, params->wqebb_cnt,
                  GDA_FT_CHAN_MAX_WQEBBS, params->max_chunk,
                  params->rq_wqe_cnt);
        return UCS_ERR_INVALID_PARAM;
    }

    memset(ch, 0, sizeof(*ch));
    ch->params                = *params;
    if (ch->params.slot_mem.alloc == NULL) {
        ch->params.slot_mem = params->mem;
    }
    ch->chan.version          = GDA_FT_DEV_VERSION;
    ch->chan.id               = (uint16_t)id;
    ch->chan.wqebb_cnt        = params->wqebb_cnt;
    ch->chan.deadline_ns      = params->deadline_ns;
    ch->chan.resolve_ns       = params->resolve_ns;
    ch->chan.max_chunk        = params->max_chunk;
    ch->chan.db_defer         = params->db_defer;
    ch->chan.health           = health;
    ch->chan.active           = GDA_FT_CHAN_PRIMARY;
    ch->chan.state            = GDA_FT_CHAN_ACTIVE;
    ch->chan.seen_fail_gen    = 0;   /* health starts zeroed */

    ch->mbox     = mem->alloc(sizeof(*ch->mbox), mem->arg);
    ch->scratch  = mem->alloc(GDA_FT_CHAN_SCRATCH_SIZE, mem->arg);
    ch->outcomes = ch->params.slot_mem.alloc(
            GDA_FT_CHAN_OUTCOME_CNT(params->wqebb_cnt) *
            sizeof(*ch->outcomes),
                                             ch->params.slot_mem.arg);
    if ((ch->mbox == NULL) || (ch->scratch == NULL) ||
        (ch->outcomes == NULL)) {
        ucs_error("channel %u: out of memory for its mailbox", id);
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }
    ch->chan.mbox         = ch->mbox;
    ch->chan.outcomes     = ch->outcomes;
    /* the links are up when the channel is connected; the guardian
     * reports them from its first pass on */
    ch->mbox->link_up[GDA_FT_CHAN_PRIMARY] = GDA_FT_CHAN_LINK_UP;
    ch->mbox->link_up[GDA_FT_CHAN_BACKUP]  = GDA_FT_CHAN_LINK_UP;
    ch->mbox->no_path_final = params->no_path_final;
    ch->heard_ns          = gda_ft_dev_now_ns();
    if (ch->params.quiet_ns == 0) {
        ch->params.quiet_ns = gda_ft_timing_quiet_ns(params->deadline_ns, 0);
    }
    ch->chan.scratch_addr = (uintptr_t)ch->scratch;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        ch->path[path].pd   = pd[path];
        ch->path[path].port = port[path];
        status = gda_ft_chan_host_init_path(ch, path);
        if (status != UCS_OK) {
            goto err;
        }

        mr_attr.addr     = ch->scratch;
        mr_attr.length   = GDA_FT_CHAN_SCRATCH_SIZE;
        mr_attr.access   = GDA_FT_HCA_ACCESS_LOCAL_WRITE;
        mr_attr.mem_type = mem->type;
        status = gda_ft_hca_mr_reg(pd[path], &mr_attr,
                                   &ch->scratch_mr[path]);
        if (status != UCS_OK) {
            goto err;
        }
        ch->chan.scratch_lkey[path] = ch->scratch_mr[path]->lkey;
    }
    return UCS_OK;

err:
    gda_ft_chan_host_cleanup(ch);
    return status;
}

void gda_ft_chan_host_cleanup(gda_ft_chan_host_t *ch)
{
    const gda_ft_chan_host_mem_t *mem = &ch->params.mem;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (ch->scratch_mr[path] != NULL) {
            gda_ft_hca_mr_dereg(ch->scratch_mr[path]);
            ch->scratch_mr[path] = NULL;
        }
        gda_ft_chan_host_free_path(ch, &ch->path[path]);
        memset(&ch->path[path], 0, sizeof(ch->path[path]));
    }
    if (ch->mbox != NULL) {
        mem->free(ch->mbox, mem->arg);
        ch->mbox = NULL;
    }
    if (ch->scratch != NULL) {
        mem->free(ch->scratch, mem->arg);
        ch->scratch = NULL;
    }
    if (ch->outcomes != NULL) {
        ch->params.slot_mem.free(ch->outcomes, ch->params.slot_mem.arg);
        ch->outcomes = NULL;
    }
}

ucs_status_t gda_ft_chan_host_connect(gda_ft_chan_host_t *ch, unsigned path,
                                      const gda_ft_hca_qp_attr_t *attr)
{
    ucs_status_t status;

    /* posts count packets with a shift (gda_ft_chan_geom_t) */
    if (!ucs_is_pow2(attr->path_mtu) || (attr->path_mtu < 256) ||
        (attr->path_mtu > 4096)) {
        ucs_error("channel %u: path MTU %u is not one of 256, 512, "
                  "1024, 2048, 4096", ch->chan.id, attr->path_mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    status = gda_ft_hca_qp_connect(ch->path[path].qp, attr);
    if (status != UCS_OK) {
        return status;
    }
    ch->path[path].conn          = *attr;
    ch->chan.path[path].next_psn = attr->sq_psn & 0xffffff;
    ch->chan.path[path].retry_us = (uint32_t)ucs_min(
            gda_ft_timing_qp_retry_ns(attr->timeout, attr->retry_cnt) / 1000,
            UINT32_MAX);
    ch->chan.mtu                 = attr->path_mtu;
    return UCS_OK;
}

ucs_status_t gda_ft_chan_host_fence_qp(gda_ft_hca_qp_t *qp, uint32_t *epsn_p)
{
    gda_ft_hca_qp_query_attr_t qattr;
    ucs_status_t status;

    status = gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL);
    if (status != UCS_OK) {
        return status;
    }
    status = gda_ft_hca_qp_query(qp, &qattr);
    if (status != UCS_OK) {
        return status;
    }
    *epsn_p = qattr.rq_psn;
    return UCS_OK;
}

/* Path `path` was left at now_ns. Its re-arm back-off doubles when it
 * fails again within ten recovery windows of its last re-arm (flapping),
 * and starts over otherwise. */
static void gda_ft_chan_host_left(gda_ft_chan_host_t *ch, unsigned path,
                                  uint64_t now_ns)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];

    if ((p->rearmed_ns != 0) &&
        ((now_ns - p->rearmed_ns) < 10 * ch->params.recovery_ns)) {
        p->backoff_ns = ucs_min(2 * p->backoff_ns,
                                ch->params.rearm_backoff_max_ns);
    } else {
        p->backoff_ns = ch->params.rearm_backoff_ns;
    }
    p->left_ns = now_ns;
}

/*
 * Whether waits on the peer stop sitting out its silence
 * (gda_ft_timing.h): it has been heard on no path for params.quiet_ns, or
 * its guardian took part in no question for the silence sat out, and no
 * shorter than params.quiet_ns. Without a deadline, never.
 */
static int gda_ft_chan_host_peer_quiet(const gda_ft_chan_host_t *ch,
                                       const gda_ft_chan_peer_ops_t *peer,
                                       void *arg, uint64_t now_ns)
{
    uint64_t deadline = ch->params.deadline_ns;

    return (deadline != 0) &&
           (((now_ns - ch->heard_ns) > ch->params.quiet_ns) ||
            !peer->guardian_active(arg, (gda_ft_chan_host_t*)ch,
                                   gda_ft_timing_guardian_quiet_ns(
                                           deadline, ch->params.quiet_ns)));
}

/* How long after first seeing a switch record the host waits for the
 * peer's word (gda_ft_timing_word_window_ns) */
static uint64_t gda_ft_chan_host_word_window(const gda_ft_chan_host_t *ch)
{
    int heard = 0;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        heard |= (ch->mbox->link_up[path] == GDA_FT_CHAN_LINK_UP);
    }
    return gda_ft_timing_word_window_ns(ch->params.deadline_ns,
                                        ch->params.resolve_ns, heard,
                                        ch->peer_quiet);
}

/*
 * Handles switch record seq: fence, and the peer's word when asked. Returns
 * 0 while the peer's word is on its way (ask again at the next pass).
 */
static int gda_ft_chan_host_answer(gda_ft_chan_host_t *ch,
                                   const gda_ft_chan_peer_ops_t *peer,
                                   void *arg, uint32_t seq, uint64_t now_ns)
{
    gda_ft_chan_mbox_t *mbox         = ch->mbox;
    const gda_ft_chan_record_t *rec  =
            &mbox->rec[seq % GDA_FT_CHAN_MBOX_RECORDS];
    unsigned failed                  = rec->failed;
    gda_ft_chan_host_answer_time_t *time = &ch->answer_time;
    uint32_t epsn                    = 0;
    uint32_t known                   = 0;
    uint64_t start;
    ucs_status_t status;

    if (failed >= GDA_FT_NUM_PATHS) {
        ucs_error("channel %u: switch record %u names path %u",
                  ch->chan.id, seq, failed);
    } else if (rec->why != GDA_FT_CHAN_WHY_FAILBACK) {
        if (ch->fenced_seq != seq) {
            /* Fence our end first: nothing of the abandoned QP may land
             * later. A backup left by a failback stays connected. */
            ch->fenced_seq  = seq;
            time->waited_ns = now_ns - ch->pending_ns;
            time->peer_ns   = 0;
            start           = gda_ft_dev_now_ns();
            if (gda_ft_hca_qp_modify(ch->path[failed].qp, GDA_FT_HCA_QP_ERR,
                                     NULL) == UCS_OK) {
                gda_ft_chan_host_count(&ch->counters.fences);
            }
            time->fence_ns  = gda_ft_dev_now_ns() - start;
            ch->path[failed].needs_rearm = 1;
            ch->path[failed].left_epoch  = rec->epoch;
            /* a QP error on a port that is up needs no recovery window */
            ch->path[failed].rearm_now   = (rec->why ==
                                            GDA_FT_CHAN_WHY_OP_ERROR) ||
                                           (rec->why ==
                                            GDA_FT_CHAN_WHY_ERR_CQE);
            ch->path[failed].up_since_ns = 0;
            gda_ft_chan_host_left(ch, failed, now_ns);
        }

        if (rec->resolve) {
            start         = gda_ft_dev_now_ns();
            status        = peer->fence(arg, ch, failed, rec->why, &epsn);
            time->peer_ns = gda_ft_dev_now_ns() - start;
            if ((status == UCS_INPROGRESS) &&
                ((now_ns - ch->pending_ns) <
                 gda_ft_chan_host_word_window(ch))) {
                return 0;   /* the poster has stopped waiting after this */
            }
            if (status == UCS_OK) {
                known = 1;
                gda_ft_chan_host_count(&ch->counters.resolved);
            }
        } else if ((failed == GDA_FT_CHAN_PRIMARY) &&
                   gda_ft_chan_why_path_failed(rec->why)) {
            /* no word to wait for (the record is answered in this call),
             * but the peer hears of the finding, its channels on the path
             * follow, and its end is fenced: asked once, not awaited */
            (void)peer->fence(arg, ch, failed, rec->why, &epsn);
        }
        time->seq = seq;
        ucs_diag("channel %u: left path %u (reason %u) at index "
                 "%lu; peer's word: %s (expected PSN 0x%x) after %.1f ms; "
                 "peer heard %.1f ms ago%s",
                 ch->chan.id, failed, rec->why, (unsigned long)rec->freeze,
                 known ? "known" :
                 rec->resolve ? "none in time" : "not needed", epsn,
                 (now_ns - ch->pending_ns) / 1e6,
                 (now_ns - ch->heard_ns) / 1e6,
                 ch->peer_quiet ? ", quiet" : "");
    }

    gda_ft_chan_host_count(&ch->counters.records);
    mbox->ans_known = known;
    mbox->ans_epsn  = epsn;
    gda_ft_atomic_store_rel32(&mbox->ans_seq, seq);
    return 1;
}

void gda_ft_chan_host_set_absent(gda_ft_chan_host_t *ch, unsigned path)
{
    ch->path[path].absent      = 1;
    ch->path[path].needs_rearm = 0;
    ch->chan.path[path].failed = GDA_FT_CHAN_WHY_RETRY;
    gda_ft_atomic_store_rel32(&ch->mbox->link_up[path],
                              GDA_FT_CHAN_LINK_DOWN);
}

void gda_ft_chan_host_peer_left(gda_ft_chan_host_t *ch)
{
    gda_ft_atomic_store_rel32(&ch->mbox->peer_left,
                              ch->mbox->peer_left + 1);
}

/* Empties a collapsed CQE that a poster may still be reading: the word it
 * reads first (counter, op_own) says INVALID in one store, before the rest
 * is cleared */
static void gda_ft_chan_host_reset_cqe(void *buf)
{
    gda_ft_mlx5_cqe64_t *cqe = (gda_ft_mlx5_cqe64_t*)buf;
    gda_ft_mlx5_cqe64_t empty;
    uint32_t tail;

    gda_ft_cq_init_buf(&empty, 1);
    memcpy(&tail, &empty.wqe_counter, sizeof(tail));
    gda_ft_atomic_store_rel32((uint32_t*)&cqe->wqe_counter, tail);
    memset(cqe, 0, offsetof(gda_ft_mlx5_cqe64_t, wqe_counter));
}

ucs_status_t gda_ft_chan_host_reconnect(gda_ft_chan_host_t *ch,
                                        unsigned path, uint32_t rq_psn,
                                        uint32_t sq_psn)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];
    gda_ft_hca_qp_attr_t attr  = p->conn;
    ucs_status_t status;

    status = gda_ft_hca_qp_modify(p->qp, GDA_FT_HCA_QP_RESET, NULL);
    if (status != UCS_OK) {
        return status;
    }
    p->dbrec[GDA_FT_MLX5_RCV_DBR] = 0;
    p->dbrec[GDA_FT_MLX5_SND_DBR] = 0;
    gda_ft_chan_host_reset_cqe(p->cqe);
    attr.rq_psn = rq_psn & 0xffffff;
    attr.sq_psn = sq_psn & 0xffffff;
    return gda_ft_chan_host_connect(ch, path, &attr);
}

/*
 * Probes a re-armed path before the posters hear of it: a signalled RDMA
 * WRITE of no bytes (it touches no memory and needs no key, but the peer
 * must answer it) at ring index 0, from the ring that nobody posts on
 * until then. The ports' state and the peer's re-arm answer, which came
 * over the other path, do not show a path that is up but loses its
 * answers; a channel moved back onto one would leave it again at every
 * deadline.
 */
static ucs_status_t gda_ft_chan_host_probe(gda_ft_chan_host_t *ch,
                                           unsigned path)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];
    gda_ft_dev_sq_t sq;
    uint16_t idx;

    gda_ft_dev_sq_init(&sq, p->sq_buf, ch->params.wqebb_cnt, p->qp->qpn,
                       p->dbrec, p->qp->uar, p->qp->wake_fd,
                       p->qp->wake_armed, p->pd->dev->attr.max_inline);
    /* no data segment at all: ctrl and remote address */
    if (gda_ft_sq_post_rdma_write(&sq, 0, 0, 0, 0, 0, GDA_FT_WQE_SIGNALED,
                                  &idx) != GDA_FT_DEV_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    gda_ft_sq_ring_db(&sq);
    return UCS_OK;
}

/* The probe's outcome: UCS_INPROGRESS until its completion, or its
 * deadline, comes */
static ucs_status_t gda_ft_chan_host_probe_done(gda_ft_chan_host_t *ch,
                                                unsigned path,
                                                uint64_t now_ns)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];
    uint64_t timeout = gda_ft_timing_probe_wait_ns(ch->params.deadline_ns,
                                                   ch->params.resolve_ns,
                                                   ch->params.quiet_ns);
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_status_t done;
    gda_ft_dev_cq_t cq;

    gda_ft_dev_cq_init(&cq, p->cqe, 1, 0);
    done = gda_ft_cq_poll_collapsed(&cq, 0, &info);
    if (done == GDA_FT_DEV_OK) {
        gda_ft_chan_host_reset_cqe(p->cqe);   /* the posters' CQE now */
        return UCS_OK;
    }
    if ((done == GDA_FT_DEV_INPROGRESS) && ((now_ns - p->probe_ns) < timeout)) {
        return UCS_INPROGRESS;
    }

    /* our QP stops retrying; the next attempt resets it */
    (void)gda_ft_hca_qp_modify(p->qp, GDA_FT_HCA_QP_ERR, NULL);
    ucs_diag("channel %u: probe of re-armed path %u failed (%s): "
             "the posters stay off it", ch->chan.id, path,
             (done == GDA_FT_DEV_INPROGRESS) ? "no completion" :
             gda_ft_hca_syndrome_str(info.syndrome));
    return UCS_ERR_UNREACHABLE;
}

/*
 * RESET -> RTS of our QP of `path` and the peer's, with fresh PSNs that we
 * choose for both directions; the ring restarts at index 0 and the CQE is
 * empty again. Our QP is ready before the peer's; the host probes the path
 * then, and the posters hear of the re-arm only once the probe came back:
 * nothing is sent into a QP that is not ready, nor moved onto a path that
 * does not answer. UCS_INPROGRESS while the peer or the probe has not
 * answered.
 */
static ucs_status_t gda_ft_chan_host_rearm(gda_ft_chan_host_t *ch,
                                           const gda_ft_chan_peer_ops_t *peer,
                                           void *arg, unsigned path,
                                           uint64_t now_ns)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];
    ucs_status_t status;

    if (p->probing) {
        status = gda_ft_chan_host_probe_done(ch, path, now_ns);
        if (status == UCS_INPROGRESS) {
            return status;
        }
        p->probing = 0;
        if (status != UCS_OK) {
            return status;
        }
        goto announce;
    }

    if (!p->rearming) {
        status = gda_ft_chan_host_reconnect(
                ch, path, gda_ft_chan_host_fresh_psn(ch, path + 2, now_ns),
                gda_ft_chan_host_fresh_psn(ch, path, now_ns));
        if (status != UCS_OK) {
            return status;
        }
        p->rearming   = 1;
        p->rearm_ask_ns = now_ns;
        gda_ft_chan_host_count(&ch->counters.rearm_tries);
    }

    status = peer->rearm(arg, ch, path, &p->conn);
    if (status == UCS_INPROGRESS) {
        if ((now_ns - p->rearm_ask_ns) <
            gda_ft_timing_rearm_answer_ns(ch->params.resolve_ns,
                                          ch->params.quiet_ns)) {
            return status;
        }
        status = UCS_ERR_TIMED_OUT;   /* the peer did not answer */
    }
    p->rearming = 0;
    if (status != UCS_OK) {
        return status;
    }

    status = gda_ft_chan_host_probe(ch, path);
    if (status != UCS_OK) {
        return status;
    }
    p->probing  = 1;
    p->probe_ns = now_ns;
    return UCS_INPROGRESS;

announce:
    p->needs_rearm = 0;
    p->rearmed_ns  = now_ns;
    gda_ft_chan_host_count(&ch->counters.rearms);
    /* the probe took ring index 0 and one PSN */
    ch->mbox->rearm_ring[path] = 1;
    ch->mbox->rearm_psn[path]  = (p->conn.sq_psn + 1) & 0xffffff;
    gda_ft_atomic_store_rel32(&ch->mbox->rearm[path],
                              ch->mbox->rearm[path] + 1);
    ucs_diag("channel %u: path %u re-armed (PSN 0x%x)", ch->chan.id,
             path, p->conn.sq_psn);
    return UCS_OK;
}

/*
 * Whether the poster's switch away from `path` is over (mailbox
 * done_epoch past the epoch it left). Until then a poster may still copy
 * its window out of the path's ring, where a re-arm's probe would write:
 * an error completion's re-arm comes at once, while that switch may be
 * going on.
 */
static int gda_ft_chan_host_switch_over(gda_ft_chan_host_t *ch,
                                        unsigned path)
{
    uint32_t done = gda_ft_atomic_load_acq32(&ch->mbox->done_epoch);
    uint32_t ends = (done - ch->path[path].left_epoch) &
                    GDA_FT_CHAN_EPOCH_MASK;

    /* it ended in the epoch after the one it left, or a later switch did */
    return (ends != 0) && (ends <= (GDA_FT_CHAN_EPOCH_MASK / 2));
}

/* What is known of the ports at both ends of a path: GDA_FT_CHAN_LINK_* */
static uint32_t gda_ft_chan_host_link_up(gda_ft_chan_host_t *ch,
                                         const gda_ft_chan_peer_ops_t *peer,
                                         void *arg, unsigned path)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];
    gda_ft_hca_port_attr_t attr;
    int peer_up;

    if (p->absent ||
        (gda_ft_hca_port_query(p->pd->dev, p->port, &attr) != UCS_OK) ||
        (attr.state != GDA_FT_HCA_PORT_ACTIVE)) {
        return GDA_FT_CHAN_LINK_DOWN;
    }
    peer_up = peer->port_up(arg, ch, path);
    return (peer_up < 0) ? GDA_FT_CHAN_LINK_LOCAL :
           (peer_up > 0) ? GDA_FT_CHAN_LINK_UP : GDA_FT_CHAN_LINK_DOWN;
}

/* Whether both ends of a path have been up for its recovery window; a path
 * that fails again soon after a re-arm waits twice as long next time */
static int gda_ft_chan_host_path_ready(gda_ft_chan_host_t *ch,
                                       const gda_ft_chan_peer_ops_t *peer,
                                       void *arg, unsigned path,
                                       uint64_t now_ns)
{
    gda_ft_chan_host_path_t *p = &ch->path[path];

    if (!ch->mbox->link_up[path]) {
        if ((p->up_since_ns != 0) && (p->rearmed_ns != 0) &&
            ((now_ns - p->rearmed_ns) < 4 * p->window_ns)) {
            p->window_ns *= 2;    /* flapping: damp */
        }
        p->up_since_ns = 0;
        return 0;
    }
    if (p->up_since_ns == 0) {
        p->up_since_ns = now_ns;
    }
    /* the posters left the other path too: they wait for this one, and
     * its recovery window would only make them give up; a try that
     * failed still backs off (a peer that does not answer) */
    if (ch->path[1 - path].needs_rearm ||
        (gda_ft_atomic_load_acq32(&ch->mbox->awaits_rearm) == path + 1)) {
        return (now_ns - p->left_ns) >= p->backoff_ns;
    }
    return p->rearm_now ||
           (((now_ns - p->up_since_ns) >= p->window_ns) &&
            ((now_ns - p->left_ns) >= p->backoff_ns + p->window_ns));
}

int gda_ft_chan_host_guard(gda_ft_chan_host_t *ch,
                           const gda_ft_chan_peer_ops_t *peer, void *arg,
                           uint64_t now_ns)
{
    uint32_t seq = gda_ft_atomic_load_acq32(&ch->mbox->req_seq);
    const gda_ft_chan_record_t *rec;
    int work     = 0;
    ucs_status_t status;
    uint32_t next, link;
    unsigned path;

    /* What is known of the ports first: a guardian that was not scheduled
     * for a while must not take the peer for quiet before it looked */
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        link = gda_ft_chan_host_link_up(ch, peer, arg, path);
        if (link == GDA_FT_CHAN_LINK_UP) {
            ch->heard_ns = now_ns;
        }
        gda_ft_atomic_store_rel32(&ch->mbox->link_up[path], link);
    }
    ch->peer_quiet = gda_ft_chan_host_peer_quiet(ch, peer, arg, now_ns);
    gda_ft_atomic_store_rel32(&ch->mbox->peer_quiet, ch->peer_quiet);

    /* Records in order. One that asks for the peer's word waits a grace
     * period first: completions of the abandoned QP that come late still
     * count until it is fenced (a slow path is not a dead one). */
    while (ch->handled_seq != seq) {
        next = ch->handled_seq + 1;
        rec  = &ch->mbox->rec[next % GDA_FT_CHAN_MBOX_RECORDS];
        if (next != ch->pending_seq) {
            ch->pending_seq = next;
            ch->pending_ns  = now_ns;
        }
        if (rec->resolve && (now_ns - ch->pending_ns < ch->params.grace_ns)) {
            break;
        }
        work = 1;
        if (!gda_ft_chan_host_answer(ch, peer, arg, next, now_ns)) {
            break;
        }
        ch->handled_seq = next;
    }

    /* No re-arm while a switch waits for the peer's word: the question of
     * a re-arm would take the channel's one question slot in the peer's
     * mailbox, and the fence's answer would never be seen. Under load, a
     * re-arm that began a recovery window after the fence kept replacing
     * the fence's question, and the replay's signals ended in doubt. */
    if (ch->handled_seq != seq) {
        return work;
    }
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (ch->path[path].needs_rearm &&
            (ch->path[path].rearming || ch->path[path].probing ||
             gda_ft_chan_host_switch_over(ch, path)) &&
            gda_ft_chan_host_path_ready(ch, peer, arg, path, now_ns)) {
            status = gda_ft_chan_host_rearm(ch, peer, arg, path, now_ns);
            if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
                /* no answer from the peer, or a failed probe: as a path
                 * that fails soon after its re-arm, the next try waits
                 * twice as long (a dead peer whose port looks up was
                 * asked every recovery window) */
                ch->path[path].rearmed_ns  = now_ns;
                ch->path[path].up_since_ns = 0;
                gda_ft_chan_host_left(ch, path, now_ns);
            }
            work = 1;
        }
    }
    return work;
}

/* Copies a struct of 32-bit counters that another thread may be bumping,
 * one atomic load per counter */
static void gda_ft_chan_load_counters(void *dst, const void *src,
                                      size_t size)
{
    const uint32_t *from = (const uint32_t*)src;
    uint32_t *to         = (uint32_t*)dst;
    size_t i;

    for (i = 0; i < size / sizeof(uint32_t); ++i) {
        to[i] = gda_ft_atomic_load_acq32(&from[i]);
    }
}

void gda_ft_chan_host_query(const gda_ft_chan_host_t *ch,
                            const gda_ft_chan_t *poster,
                            gda_ft_chan_query_t *q)
{
    GDA_FT_STATIC_ASSERT(sizeof(q->poster) % sizeof(uint32_t) == 0,
                         chan_counters_words);
    GDA_FT_STATIC_ASSERT(sizeof(q->host) % sizeof(uint32_t) == 0,
                         chan_host_counters_words);
    q->id     = ch->chan.id;
    q->state  = gda_ft_atomic_load_acq32(&poster->state);
    q->active = gda_ft_atomic_load_acq32(&poster->active);
    gda_ft_chan_load_counters(&q->poster, &poster->counters,
                              sizeof(q->poster));
    gda_ft_chan_load_counters(&q->host, &ch->counters, sizeof(q->host));
    q->switch_ns    = gda_ft_atomic_load_acq64(&poster->switch_ns);
    q->recovered_ns = gda_ft_atomic_load_acq64(&poster->recovered_ns);
    q->outcomes_lost = gda_ft_atomic_load_acq32(&poster->outcomes_lost);
    q->regains       = gda_ft_atomic_load_acq32(&poster->regains);
}

int gda_ft_chan_query_format(const gda_ft_chan_query_t *q,
                             const char *prefix, char *buf, size_t max)
{
    static const char *paths[] = {"primary", "backup"};

    return snprintf(buf, max,
                    "%schannel %u: path %s, switches %u replays %u "
                    "resolved %u confirmed %u in_doubt %u failbacks %u "
                    "no_path %u regains %u op_errors %u outcomes_lost %u; "
                    "guardian: "
                    "records %u fences "
                    "%u resolved %u rearms %u of %u; last switch: first "
                    "completion %.3f ms after its replay\n",
                    prefix, q->id,
                    (q->state == GDA_FT_CHAN_NO_PATH) ? "none" :
                    paths[q->active & 1], q->poster.switches,
                    q->poster.replays, q->poster.resolved,
                    q->poster.confirmed, q->poster.in_doubt,
                    q->poster.failbacks, q->poster.no_path, q->regains,
                    q->poster.op_errors, q->outcomes_lost, q->host.records,
                    q->host.fences,
                    q->host.resolved, q->host.rearms, q->host.rearm_tries,
                    (q->recovered_ns >= q->switch_ns) ?
                    (q->recovered_ns - q->switch_ns) / 1e6 : -1.0);
}
