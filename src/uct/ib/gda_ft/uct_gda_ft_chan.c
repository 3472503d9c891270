/*
 * gda_ft UCT transport: the device channels of an endpoint (see
 * uct_gda_ft_chan.h).
 *
 * A channel is posted on by one side only. Our channel i has two initiator
 * QPs (primary, backup) connected to the peer's two target QPs of channel
 * i, and the peer's channel i the other way round. So when a guardian
 * fences or re-arms the far end of one of its paths, it touches a QP that
 * no poster of the peer uses: nothing the peer's kernels hold is reset
 * under them, and a peer whose kernels are idle still answers.
 *
 * Channel 0 is the endpoint's host channel (uct_gda_ft_hchan.c), the
 * others are device channels. Without a backup HCA at either end every
 * channel has one path: the backup is left failed from the start, never
 * re-armed, and a failure of the primary ends in NO_PATH once its re-arm
 * does not come.
 *
 * The guardian of each initiator channel (gda_ft_chan_host_guard) asks the
 * peer through gda_ft_chan_peer_ops_t: here, a question written into the
 * peer endpoint's mailbox by a control operation over the other path (the
 * one the channel did not leave), answered in ours the same way. One
 * question is in flight per channel; the channel guardian bounds how long
 * it waits.
 *
 * Control operations are RDMA WRITEs that the guardian posts on the
 * endpoint's control QPs (uct_gda_ft_ep_ctl_t), one per path, connected
 * to the peer's: a channel that nobody posts on through the datapath. No
 * switch of any channel fences them, so a control write waits neither for
 * a channel's ring nor for a switch, and its path stays usable while the
 * channels come and go on it. A control QP leaves service only on an error
 * completion; the end whose control QP has the lower number then re-arms
 * the pair, asking the peer over the other control path (mailbox slot
 * UCT_GDA_FT_WIRE_CTL_SLOT). A write that cannot go out, or that is silent
 * for a deadline, is asked again at the next pass.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_chan.h"
#include "gda_ft_device_api.h"
#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_event.h"

#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/debug/memtrack_int.h>
#include <stdlib.h>
#include <string.h>

/* Ring of a target QP: it only responds */
#define UCT_GDA_FT_CHAN_TARGET_RING 64

/* Whole pages: the device API's host side maps each region into the GPU
 * on its own (cudaHostRegister), which a page shared with other data
 * would forbid */
static void *uct_gda_ft_chan_alloc(size_t size, void *arg)
{
    size_t page = ucs_get_page_size();
    void *ptr   = NULL;

    (void)arg;
    if (posix_memalign(&ptr, page, ucs_align_up(size, page)) != 0) {
        return NULL;
    }
    memset(ptr, 0, ucs_align_up(size, page));
    return ptr;
}

static void uct_gda_ft_chan_free(void *ptr, void *arg)
{
    (void)arg;
    free(ptr);
}

/* First PSN of the direction src -> dst, which both ends compute alike:
 * connections start anywhere in the 24-bit space */
static uint32_t uct_gda_ft_chan_first_psn(uint32_t src_qpn, uint32_t dst_qpn)
{
    return ((src_qpn * 2654435761u) ^ (dst_qpn * 0x9e3779b1u) ^
            (src_qpn >> 7)) & 0xffffff;
}

/* ---- control operations ------------------------------------------------- */

/* The control ring of `path` starts over once its QP was connected or
 * re-armed (RESET -> RTS: ring index 0, an empty CQE) */
static void uct_gda_ft_ctl_reset(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];

    ctl->sq              = ep->chans->ctl->chan.path[path].sq;
    ctl->sq.pi           = 0;
    ctl->sq.ci           = 0;
    ctl->sq.db_pi        = 0;
    ctl->sq.last_wqe_idx = 0;
    ctl->busy_ns         = 0;
    ctl->failed          = 0;
    ctl->unacked         = 0;
    ctl->rearming        = 0;
}

/* Retires what the peer acknowledged; an error completion leaves the
 * control path unusable until its re-arm */
void uct_gda_ft_ctl_poll(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_cq_t cq;
    uint64_t now, since;

    if (ctl->failed || (ctl->sq.ci == ctl->sq.pi)) {
        return;
    }
    gda_ft_dev_cq_init(&cq, ep->chans->ctl->path[path].cqe, 1, 0);
    if (gda_ft_cq_poll_collapsed(&cq, ctl->sq.ci, &info) != GDA_FT_DEV_OK) {
        now   = gda_ft_dev_now_ns();
        since = ((int64_t)(ctl->done_ns - ctl->busy_ns) > 0) ?
                ctl->done_ns : ctl->busy_ns;
        if ((deadline != 0) &&
            ((now - since) >
             ucs_max(GDA_FT_TIMING_CTL_DEAD_DEADLINES * deadline,
                     2 * uct_gda_ft_iface_retransmit_ns(
                             uct_gda_ft_ep_iface(ep))))) {
            ctl->failed    = 1;
            ctl->failed_ns = now;
            ucs_diag("ep %p: control QP of the %s path answered nothing "
                     "for %.0f ms: control writes take the other path until "
                     "it is re-armed", ep, uct_gda_ft_path_name(path),
                     (now - since) / 1e6);
        }
        return;
    }
    if (gda_ft_cq_opcode_is_error(info.opcode)) {
        ctl->failed    = 1;
        ctl->unacked   = (info.syndrome ==
                          GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
        ctl->failed_ns = gda_ft_dev_now_ns();
        ucs_diag("ep %p: control QP of the %s path failed (%s): control "
                 "writes take the other path until it is re-armed", ep,
                 uct_gda_ft_path_name(path),
                 gda_ft_hca_syndrome_str(info.syndrome));
        return;
    }
    gda_ft_sq_retire(&ctl->sq, info.wqe_counter);
    ctl->done_ns = gda_ft_dev_now_ns();
}

/*
 * Whether a control path takes a write now: not failed, room for a
 * question, and no write silent on it for a deadline. A dead link answers
 * nothing until the HCA's retries run out, which takes many deadlines:
 * questions are asked again on the other path meanwhile.
 */
static int uct_gda_ft_ctl_usable(uct_gda_ft_ep_t *ep, unsigned path,
                                 uint64_t now)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    uint64_t since;

    uct_gda_ft_ctl_poll(ep, path);
    if (ctl->failed || (gda_ft_sq_free_wqebbs(&ctl->sq) < 2)) {
        return 0;
    }
    if ((ctl->sq.ci == ctl->sq.pi) || (deadline == 0)) {
        return 1;
    }
    since = ((int64_t)(ctl->done_ns - ctl->busy_ns) > 0) ? ctl->done_ns :
                                                            ctl->busy_ns;
    return (now - since) <= deadline;
}

/*
 * The control path that carries a question or answer about a channel's
 * `path`: the other one, so that it does not ride on the ports in
 * question, unless that one is unusable now; -1 when neither is.
 */
static int uct_gda_ft_ctl_carrier(uct_gda_ft_ep_t *ep, unsigned path,
                                  uint64_t now)
{
    unsigned other = 1 - path;

    if (uct_gda_ft_ctl_usable(ep, other, now)) {
        return other;
    }
    return uct_gda_ft_ctl_usable(ep, path, now) ? (int)path : -1;
}

/*
 * Writes `arg` at arg_offset of the peer's mailbox, then, with an
 * epoch_length, `epoch` at epoch_offset (RC: they land in that order),
 * over the control path that carries news of `path`; *carrier_p: which
 * one. UCS_ERR_NO_RESOURCE when no control path takes it now: the caller
 * writes again at its next pass.
 */
static ucs_status_t uct_gda_ft_ctl_write(uct_gda_ft_ep_t *ep, unsigned path,
                                        size_t arg_offset, const void *arg,
                                        size_t arg_length, size_t epoch_offset,
                                        const uint32_t *epoch,
                                        unsigned *carrier_p)
{
    uint64_t now = gda_ft_dev_now_ns();
    int carrier  = uct_gda_ft_ctl_carrier(ep, path, now);
    uct_gda_ft_ep_ctl_t *ctl;
    uint32_t rkey;

    if (carrier < 0) {
        return UCS_ERR_NO_RESOURCE;
    }
    ctl  = &ep->ctl[carrier];
    rkey = ep->peer_mbox_rkey[carrier];
    if (ctl->sq.ci == ctl->sq.pi) {
        ctl->busy_ns = now;
    }
    /* two WQEs of ctrl, raddr and at most 16 bytes inline: the room that
     * uct_gda_ft_ctl_usable() found */
    (void)gda_ft_sq_post_rdma_write_inline(&ctl->sq, arg, arg_length,
                                           ep->peer_mbox + arg_offset, rkey,
                                           GDA_FT_WQE_SIGNALED, NULL);
    if (epoch != NULL) {
        (void)gda_ft_sq_post_rdma_write_inline(&ctl->sq, epoch,
                                               sizeof(*epoch),
                                               ep->peer_mbox + epoch_offset,
                                               rkey, GDA_FT_WQE_SIGNALED,
                                               NULL);
    }
    gda_ft_sq_ring_db(&ctl->sq);
    *carrier_p = carrier;
    return UCS_OK;
}


/* Which end's PSNs a control path takes when both ends re-arm it at once:
 * those of the end whose control QP there has the lower number (then the
 * lower mailbox address); the other end's question is refused */
static int uct_gda_ft_ctl_rearms(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uint32_t qpn             = c->ctl->path[path].qp->qpn;

    return (qpn != c->peer_ctl_qpn[path]) ? (qpn < c->peer_ctl_qpn[path]) :
           ((uintptr_t)ep->mbox < ep->peer_mbox);
}


/* ---- questions to the peer ----------------------------------------------- */

/*
 * Asks the peer to do `op` to its end of channel ch's `path`, or collects
 * the answer: UCS_OK (with *psn_p), UCS_ERR_REJECTED, or UCS_INPROGRESS
 * while it is on its way. Each channel has its own question slot in the
 * peer's mailbox, and one question in flight.
 */
static ucs_status_t uct_gda_ft_chan_ask(uct_gda_ft_ep_t *ep, unsigned op,
                                        gda_ft_chan_host_t *ch, unsigned path,
                                        uint32_t psn0, uint32_t psn1,
                                        uint32_t *psn_p)
{
    unsigned id              = ch->chan.id;
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_mbox_t *mbox  = ep->mbox;
    uint32_t key             = (op << 16) | path;
    uint64_t now             = gda_ft_dev_now_ns();
    uint32_t args[4];
    unsigned carrier, refused;
    uint32_t epoch;

    if ((op == UCT_GDA_FT_CHAN_ASK_FENCE) &&
        !uct_gda_ft_ep_iface(ep)->config.resolve) {
        /* not to be asked (RESOLVE=n: what a failed path left is in
         * doubt) */
        return UCS_ERR_UNSUPPORTED;
    }

    if (c->q[id].ask == key) {
        if (uct_gda_ft_mbox_read_answer(&mbox->chan[id], c->q[id].ask_epoch,
                                        &refused, psn_p)) {
            c->q[id].ask   = 0;
            c->guardian_ns = now;
            return (refused == 0) ? UCS_OK : UCS_ERR_REJECTED;
        }
        if (((now - c->q[id].ask_ns) < ch->params.resolve_ns) &&
            uct_gda_ft_ctl_usable(ep, c->q[id].carrier, now)) {
            return UCS_INPROGRESS;
        }
        /* lost, or its control path fell silent: asked again, within the
         * channel guardian's own bound */
    }

    epoch   = c->q[id].ask_epoch + 1;
    args[0] = epoch;
    args[1] = key;
    args[2] = psn0;
    args[3] = psn1;
    if (uct_gda_ft_ctl_write(ep, path,
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].req_tag),
                             args, sizeof(args),
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].req_epoch),
                             &epoch, &carrier) != UCS_OK) {
        return UCS_INPROGRESS;        /* no room now: the next pass asks */
    }
    c->q[id].ask       = key;
    c->q[id].ask_epoch = epoch;
    c->q[id].ask_ns    = now;
    c->q[id].carrier   = (uint8_t)carrier;
    return UCS_INPROGRESS;
}

/* A fence question carries why the channel left the path (req_psn[0]) */
static ucs_status_t uct_gda_ft_chan_peer_fence(void *arg,
                                               gda_ft_chan_host_t *ch,
                                               unsigned path, unsigned why,
                                               uint32_t *epsn_p)
{
    return uct_gda_ft_chan_ask((uct_gda_ft_ep_t*)arg,
                               UCT_GDA_FT_CHAN_ASK_FENCE, ch, path, why, 0,
                               epsn_p);
}

static ucs_status_t
uct_gda_ft_chan_peer_rearm(void *arg, gda_ft_chan_host_t *ch, unsigned path,
                           const gda_ft_hca_qp_attr_t *local)
{
    uint32_t unused;

    return uct_gda_ft_chan_ask((uct_gda_ft_ep_t*)arg,
                               UCT_GDA_FT_CHAN_ASK_REARM, ch, path,
                               local->sq_psn, local->rq_psn, &unused);
}

uint64_t uct_gda_ft_chan_heard_ns(uct_gda_ft_ep_t *ep, unsigned path,
                                  uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    gda_ft_hca_qp_query_attr_t attr;
    uint32_t rq_psns = 0;
    unsigned i;

    if ((now - c->heard[path].read_ns) >=
        gda_ft_timing_peer_look_ns(deadline)) {
        c->heard[path].read_ns = now;
        for (i = 0; i < c->count; ++i) {
            if (gda_ft_hca_qp_query(c->target[i].path[path].qp, &attr) ==
                UCS_OK) {
                rq_psns += attr.rq_psn;
            }
        }
        if (rq_psns != c->heard[path].rq_psns) {
            c->heard[path].rq_psns  = rq_psns;
            c->heard[path].moved_ns = now;
        }
    }
    return c->heard[path].moved_ns;
}

/*
 * Whether the peer's port of `path` is up, as far as its traffic shows:
 * within GDA_FT_TIMING_HEARD_DEADLINES deadlines, the PSN our target QPs
 * of that path expect next moved (packets of the peer came in through that
 * port), or the endpoint's own QP of that path saw a completion (the peer
 * acknowledged through it). Nothing is posted for it; the targets are read
 * at most every eighth of a deadline. Older, or a peer that sends nothing,
 * is not known (-1), never "down": a path is sat out on the peer's behalf
 * only while the peer is heard, and a peer whose ports died falls silent.
 */
static int uct_gda_ft_chan_peer_port_up(void *arg, gda_ft_chan_host_t *ch,
                                        unsigned path)
{
    uct_gda_ft_ep_t *ep      = (uct_gda_ft_ep_t*)arg;
    uint64_t deadline        = ch->params.deadline_ns;
    uint64_t now             = gda_ft_dev_now_ns();
    uint64_t heard_ns;

    if ((deadline == 0) || (path >= ep->chans->num_paths)) {
        return -1;
    }
    heard_ns = uct_gda_ft_chan_heard_ns(ep, path, now);
    uct_gda_ft_ctl_poll(ep, path);
    if ((int64_t)(ep->ctl[path].done_ns - heard_ns) > 0) {
        heard_ns = ep->ctl[path].done_ns;
    }
    return ((heard_ns != 0) &&
            ((int64_t)(now - heard_ns) <
             (int64_t)(GDA_FT_TIMING_HEARD_DEADLINES * deadline))) ? 1 : -1;
}

/* Whether the peer's guardian answered or asked a question, or sent a
 * liveness probe, within `ns`: the peer runs its progress (a peer given
 * up does not: nothing waits for it) */
static int uct_gda_ft_chan_peer_guardian_active(void *arg,
                                                gda_ft_chan_host_t *ch,
                                                uint64_t ns)
{
    uct_gda_ft_ep_chans_t *c = ((uct_gda_ft_ep_t*)arg)->chans;

    (void)ch;
    return (c->peer.gone_ns == 0) && (c->guardian_ns != 0) &&
           ((gda_ft_dev_now_ns() - c->guardian_ns) <= ns);
}

static const gda_ft_chan_peer_ops_t uct_gda_ft_chan_peer_ops = {
    uct_gda_ft_chan_peer_fence,
    uct_gda_ft_chan_peer_rearm,
    uct_gda_ft_chan_peer_port_up,
    uct_gda_ft_chan_peer_guardian_active
};

/* The peer's channels left the primary for its failure: ours follow */
static void uct_gda_ft_chan_peer_left(uct_gda_ft_ep_chans_t *c)
{
    unsigned i;

    for (i = 0; i < c->count; ++i) {
        gda_ft_chan_host_peer_left(&c->init[i]);
    }
}

/* The peer asks about our target end of its channel `id` */
static void
uct_gda_ft_chan_answer_peer(uct_gda_ft_ep_t *ep, unsigned id,
                            const uct_gda_ft_mbox_question_t *question)
{
    uct_gda_ft_iface_t *iface  = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c   = ep->chans;
    gda_ft_chan_host_t *target = (id == UCT_GDA_FT_WIRE_CTL_SLOT) ?
                                 c->ctl : &c->target[id];
    unsigned op                = question->op;
    unsigned path              = question->path;
    uint32_t psn0              = question->psn[0];
    uint32_t psn1              = question->psn[1];
    uint32_t refused           = 1;
    uint32_t psn               = 0;
    unsigned carrier;
    uint64_t answer;

    if (path >= c->num_paths) {
        ucs_diag("ep %p: ignoring the peer's question %u about path %u of "
                 "channel %u: no such path", ep, op, path, id);
        c->q[id].seen_epoch = question->epoch;
        return;
    }

    if ((op == UCT_GDA_FT_CHAN_ASK_FENCE) &&
        (id != UCT_GDA_FT_WIRE_CTL_SLOT)) {
        if (gda_ft_chan_host_fence_qp(target->path[path].qp, &psn) ==
            UCS_OK) {
            refused = 0;
        }
        if ((path == UCT_GDA_FT_PATH_PRIMARY) &&
            gda_ft_chan_why_path_failed(psn0)) {
            /* the peer found the primary dead: our channels on it follow
             * rather than each wait for a deadline of its own */
            uct_gda_ft_chan_peer_left(c);
        }
    } else if ((op == UCT_GDA_FT_CHAN_ASK_REARM) &&
               (id == UCT_GDA_FT_WIRE_CTL_SLOT) &&
               ep->ctl[path].rearming && uct_gda_ft_ctl_rearms(ep, path)) {
        /* we re-arm this control path too, and our PSNs win: refused */
    } else if (op == UCT_GDA_FT_CHAN_ASK_REARM) {
        if (uct_gda_ft_iface_port_up(iface, path) &&
            (gda_ft_chan_host_reconnect(target, path, psn0, psn1) ==
             UCS_OK)) {
            if (id == 0) {
                /* the peer's host channel: what the QP received before is
                 * taken, and fresh buffers go up */
                uct_gda_ft_rxq_rearm(ep, &ep->chan_rx[path]);
            } else if (id == UCT_GDA_FT_WIRE_CTL_SLOT) {
                uct_gda_ft_ctl_reset(ep, path);
                ucs_diag("ep %p: control QP of the %s path re-armed by the "
                         "peer", ep, uct_gda_ft_path_name(path));
            }
            refused = 0;
        }
    } else {
        ucs_diag("ep %p: ignoring the peer's question of unknown kind %u "
                 "about channel %u", ep, op, id);
    }

    answer = UCT_GDA_FT_MBOX_ANSWER(question->epoch, refused, psn);
    if (uct_gda_ft_ctl_write(ep, path,
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].answer),
                             &answer, sizeof(answer), 0, NULL,
                             &carrier) != UCS_OK) {
        return;    /* no room now: answered again at the next pass */
    }
    c->q[id].seen_epoch = question->epoch;
    ucs_debug("ep %p: channel %u path %u: the peer's %s %s", ep, id,
              path, (op == UCT_GDA_FT_CHAN_ASK_FENCE) ? "fence" : "re-arm",
              refused ? "refused" : "done");
}


/* ---- lifetime ------------------------------------------------------------ */

static void uct_gda_ft_chan_params(uct_gda_ft_iface_t *iface,
                                   unsigned wqebb_cnt,
                                   gda_ft_chan_host_params_t *params)
{
    /* without failover a channel waits for its primary as long as the HCA
     * retries, like any RC QP */
    uint64_t deadline = iface->config.dev_failover ?
                        iface->config.deadline_ns : 0;

    memset(params, 0, sizeof(*params));
    params->wqebb_cnt   = wqebb_cnt;
    params->deadline_ns = deadline;
    params->grace_ns    = gda_ft_timing_grace_ns(deadline);
    params->resolve_ns  = (deadline != 0) ?
                          gda_ft_timing_resolve_ns(
                                  deadline, iface->config.chan_guard_ns) :
                          iface->config.recovery_ns;
    params->quiet_ns    = gda_ft_timing_quiet_ns(deadline,
                                                 iface->config.cpu_engine);
    params->max_chunk   = UCT_GDA_FT_CHAN_MAX_CHUNK;
    params->recovery_ns = iface->config.recovery_ns;
    params->mem.alloc   = uct_gda_ft_chan_alloc;
    params->mem.free    = uct_gda_ft_chan_free;
    params->mem.type    = iface->config.dev_channel_mapped ?
                          GDA_FT_HCA_MEM_HOST_MAPPED : GDA_FT_HCA_MEM_HOST;
    uct_gda_ft_iface_event_cq_attr(iface, &params->event_armed,
                                   &params->event_fd);
}

static void uct_gda_ft_chans_free(uct_gda_ft_ep_chans_t *c)
{
    unsigned i;

    for (i = 0; i < c->num; ++i) {
        gda_ft_chan_host_cleanup(&c->init[i]);
        gda_ft_chan_host_cleanup(&c->target[i]);
    }
    if (c->has_ctl) {
        gda_ft_chan_host_cleanup(c->ctl);
    }
    ucs_free(c->ctl);
    ucs_free(c->init);
    ucs_free(c->target);
    free(c->poster);
    free(c->health);
    ucs_free(c);
}

void uct_gda_ft_channels_put(uct_gda_ft_ep_chans_t *chans)
{
    if (--chans->refs == 0) {
        uct_gda_ft_chans_free(chans);
    }
}

/* ---- the peer's host channel's active messages ---------------------------
 *
 * Our target QPs of channel 0 have receive queues: the peer's host channel
 * sends its active messages there (SEND with immediate, uct_gda_ft_am.c).
 * Their receive completions go to the interface's receive CQs.
 */

/* The interface's path that holds our QPs of `path`: without a backup
 * HCA, those of the backup are placeholders on the primary, never
 * connected, so that every channel has the same shape */
static unsigned uct_gda_ft_chan_local_path(uct_gda_ft_iface_t *iface,
                                           unsigned path)
{
    return uct_gda_ft_iface_has_backup(iface) ? path :
                                                UCT_GDA_FT_PATH_PRIMARY;
}

/* Before the target QPs of channel 0 are created: a share of a receive CQ
 * on each path */
static ucs_status_t uct_gda_ft_chan_rx_reserve(uct_gda_ft_ep_t *ep,
                                               uct_gda_ft_iface_t *iface,
                                               gda_ft_chan_host_params_t
                                               *params)
{
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        status = uct_gda_ft_iface_rx_cq_get(
                iface, uct_gda_ft_chan_local_path(iface, path),
                &ep->chan_rx[path].cq);
        if (status != UCS_OK) {
            return status;
        }
        params->recv_cq[path] = ep->chan_rx[path].cq->cq;
    }
    params->rq_wqe_cnt = iface->config.rx_queue_len;
    return UCS_OK;
}

/* Once they are: their receive queues, and their QPNs known to the
 * interface's receive progress (not a placeholder's) */
static ucs_status_t uct_gda_ft_chan_rx_init(uct_gda_ft_ep_t *ep,
                                            uct_gda_ft_iface_t *iface,
                                            gda_ft_chan_host_t *target)
{
    gda_ft_chan_host_path_t *p;
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (uct_gda_ft_chan_local_path(iface, path) != path) {
            continue;
        }
        p      = &target->path[path];
        status = uct_gda_ft_rxq_init(iface, &ep->chan_rx[path], path, p->qp,
                                     p->rq_buf, p->dbrec,
                                     ep->chan_rx[path].cq);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_gda_ft_iface_qp_add(iface, path, p->qp->qpn, ep);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

void uct_gda_ft_ep_chan_rx_stop(uct_gda_ft_ep_t *ep)
{
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (ep->chan_rx[path].qp != NULL) {
            /* its posted buffers complete as flushed */
            (void)gda_ft_hca_qp_modify(ep->chan_rx[path].qp,
                                       GDA_FT_HCA_QP_ERR, NULL);
        }
    }
}

void uct_gda_ft_ep_chan_rx_cleanup(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_rxq_t *rxq;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        rxq = &ep->chan_rx[path];
        if (rxq->qp != NULL) {
            uct_gda_ft_iface_qp_del(iface, path, rxq->qp->qpn, ep);
        }
        if (rxq->desc != NULL) {
            uct_gda_ft_rxq_cleanup(iface, rxq);
        } else if (rxq->cq != NULL) {
            uct_gda_ft_iface_rx_cq_put(iface, rxq->cq);
            rxq->cq = NULL;
        }
    }
}

void uct_gda_ft_ep_chans_destroy(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    if (c == NULL) {
        return;
    }
    ep->chans = NULL;
    c->ep     = NULL;   /* no guardian, no peer to ask: posters that go on
                           find out by their deadlines */
    if (c->refs > 1) {
        ucs_debug("gda_ft: ep %p destroyed while device endpoints use its "
                  "%u channels: they stay until released", ep, c->count);
    }
    uct_gda_ft_channels_put(c);
}

ucs_status_t uct_gda_ft_ep_chans_create(uct_gda_ft_ep_t *ep,
                                        uct_gda_ft_iface_t *iface)
{
    unsigned num             = iface->config.num_channels;
    gda_ft_hca_pd_t *pd[GDA_FT_NUM_PATHS];
    uct_gda_ft_ep_chans_t *c;
    uint8_t port[GDA_FT_NUM_PATHS];
    gda_ft_chan_host_params_t params, host_params, target_params;
    gda_ft_chan_host_params_t host_target_params, ctl_params;
    ucs_status_t status;
    unsigned i, path, local;

    c = ucs_calloc(1, sizeof(*c), "gda_ft_ep_chans");
    if (c == NULL) {
        ucs_error("ep %p: out of memory for its channels", ep);
        return UCS_ERR_NO_MEMORY;
    }
    c->refs   = 1;
    c->ep     = ep;
    ep->chans = c;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        local      = uct_gda_ft_chan_local_path(iface, path);
        pd[path]   = iface->path[local].dev->pd;
        port[path] = iface->path[local].port_num;
    }
    uct_gda_ft_chan_params(iface, iface->config.dev_channel_ring, &params);
    /* the host channel: CPU posters ring its doorbell, its ring holds the
     * largest UCT operation twice */
    uct_gda_ft_chan_params(iface, iface->config.hchan_ring, &host_params);
    host_params.mem.type = GDA_FT_HCA_MEM_HOST;
    /* an active message is one SEND of up to SEG_SIZE bytes */
    host_params.max_chunk = ucs_max(host_params.max_chunk,
                                    iface->config.seg_size);
    host_params.rearm_backoff_ns     = iface->config.rearm_backoff_ns;
    host_params.rearm_backoff_max_ns = iface->config.rearm_backoff_max_ns;
    /* Our ends of the peer's channels only respond: host memory
     * (DEVICE_CHANNEL_TARGETS). In mapped memory a target QP keeps the
     * software HCA's engine awake, and it answered a CPU poster's single
     * operation about 4 ms late on 2 cores (ucx_perftest put_bw -O 1, 38
     * us in host memory); side by side on an H100 machine the two placed
     * kernels' and threads' put_bw within noise. Our ends of the peer's
     * host channel take our control writes too: host memory whatever the
     * setting. */
    uct_gda_ft_chan_params(iface, UCT_GDA_FT_CHAN_TARGET_RING,
                           &target_params);
    target_params.mem.type = iface->config.dev_target_mapped ?
                             GDA_FT_HCA_MEM_HOST_MAPPED : GDA_FT_HCA_MEM_HOST;
    host_target_params          = target_params;
    host_target_params.mem.type = GDA_FT_HCA_MEM_HOST;
    status = uct_gda_ft_chan_rx_reserve(ep, iface, &host_target_params);
    if (status != UCS_OK) {
        goto err;
    }

    c->init   = ucs_calloc(num, sizeof(*c->init), "gda_ft_chan_init");
    c->target = ucs_calloc(num, sizeof(*c->target), "gda_ft_chan_target");
    c->ctl    = ucs_calloc(1, sizeof(*c->ctl), "gda_ft_chan_ctl");
    c->poster = uct_gda_ft_chan_alloc(num * sizeof(*c->poster), NULL);
    c->health = uct_gda_ft_chan_alloc(sizeof(*c->health), NULL);
    if ((c->init == NULL) || (c->target == NULL) || (c->ctl == NULL) ||
        (c->poster == NULL) || (c->health == NULL)) {
        ucs_error("ep %p: out of memory for %u channels", ep, num);
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    /* the control QPs: host memory, a ring of the smallest size, no
     * receive queue */
    ctl_params            = target_params;
    ctl_params.mem.type   = GDA_FT_HCA_MEM_HOST;
    ctl_params.rq_wqe_cnt = 0;
    status = gda_ft_chan_host_init(c->ctl, pd, port,
                                   UCT_GDA_FT_WIRE_CTL_SLOT, NULL,
                                   &ctl_params);
    if (status != UCS_OK) {
        goto err;
    }
    c->has_ctl = 1;

    for (i = 0; i < num; ++i) {
        status = gda_ft_chan_host_init(&c->init[i], pd, port, i, c->health,
                                       (i == 0) ? &host_params : &params);
        if (status != UCS_OK) {
            goto err;
        }
        status = gda_ft_chan_host_init(&c->target[i], pd, port, i, NULL,
                                       (i == 0) ? &host_target_params :
                                                  &target_params);
        if (status != UCS_OK) {
            gda_ft_chan_host_cleanup(&c->init[i]);
            goto err;
        }
        c->num = i + 1;
    }
    status = uct_gda_ft_chan_rx_init(ep, iface, &c->target[0]);
    if (status != UCS_OK) {
        goto err;
    }
    return UCS_OK;

err:
    /* nothing was received: the QPs were never connected */
    uct_gda_ft_ep_chan_rx_cleanup(ep);
    uct_gda_ft_ep_chans_destroy(ep);
    return status;
}


/* ---- connection ---------------------------------------------------------- */

void uct_gda_ft_ep_chans_pack(uct_gda_ft_ep_t *ep,
                              uct_gda_ft_ep_addr_info_t *info)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    unsigned i, path;

    info->num_chan = c->num;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        info->ctl_qpn[path] = c->ctl->path[path].qp->qpn;
    }
    for (i = 0; i < info->num_chan; ++i) {
        for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
            info->chan[i].init_qpn[path]   = c->init[i].path[path].qp->qpn;
            info->chan[i].target_qpn[path] = c->target[i].path[path].qp->qpn;
        }
    }
}

/* Connects one of our QPs of `path` to the peer's QP dest_qpn */
static ucs_status_t uct_gda_ft_chan_connect_qp(uct_gda_ft_ep_t *ep,
                                               gda_ft_chan_host_t *ch,
                                               unsigned path,
                                               uint32_t dest_qpn)
{
    uint32_t qpn = ch->path[path].qp->qpn;
    gda_ft_hca_qp_attr_t attr;
    ucs_status_t status;

    uct_gda_ft_ep_qp_attr(ep, path, uct_gda_ft_chan_first_psn(dest_qpn, qpn),
                          uct_gda_ft_chan_first_psn(qpn, dest_qpn), &attr);
    attr.dest_qpn = dest_qpn;
    status        = gda_ft_chan_host_connect(ch, path, &attr);
    if (status != UCS_OK) {
        ucs_error("gda_ft: ep %p: failed to connect channel %u's %s QP 0x%x "
                  "to peer QP 0x%x: %s", ep, ch->chan.id,
                  (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup",
                  qpn, dest_qpn,
                  ucs_status_string(status));
    }
    return status;
}

ucs_status_t uct_gda_ft_ep_chans_connect(uct_gda_ft_ep_t *ep,
                                         const uct_gda_ft_ep_addr_info_t *peer,
                                         unsigned num_paths)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c  = ep->chans;
    ucs_status_t status;
    unsigned i, path, count;

    count = ucs_min(c->num, peer->num_chan);
    if (c->num != peer->num_chan) {
        ucs_diag("ep %p: %u channels here, %u at the peer: %u connected", ep,
                 c->num, peer->num_chan, count);
    }

    c->num_paths = num_paths;
    for (i = 0; i < count; ++i) {
        for (path = 0; path < num_paths; ++path) {
            status = uct_gda_ft_chan_connect_qp(
                    ep, &c->init[i], path, peer->chan[i].target_qpn[path]);
            if (status != UCS_OK) {
                return status;
            }
            status = uct_gda_ft_chan_connect_qp(
                    ep, &c->target[i], path, peer->chan[i].init_qpn[path]);
            if (status != UCS_OK) {
                return status;
            }
            if ((i == 0) && (ep->chan_rx[path].desc != NULL)) {
                /* after INIT, which takes the RQ's producer index: a
                 * message that comes first waits for them (RNR) */
                status = uct_gda_ft_rxq_fill(iface, ep, &ep->chan_rx[path]);
                if (status != UCS_OK) {
                    return status;
                }
            }
        }
        for (; path < GDA_FT_NUM_PATHS; ++path) {
            /* no backup HCA at one end: one path, without failover */
            gda_ft_chan_host_set_absent(&c->init[i], path);
            gda_ft_chan_host_set_absent(&c->target[i], path);
        }
        if (!iface->config.dev_failover) {
            /* DEVICE_FAILOVER=n: the backup is never taken, and an error
             * of the primary leaves the channel without a path */
            c->init[i].chan.path[UCT_GDA_FT_PATH_BACKUP].failed =
                    GDA_FT_CHAN_WHY_RETRY;
        }
        /* the posters' copy, with the PSNs and MTU of the connection */
        c->poster[i] = c->init[i].chan;
    }
    c->count = count;
    /* the peer's guardian took part in the connection: a switch soon
     * after it, before a probe or a question came, waits for its word as
     * a later one does */
    c->guardian_ns = gda_ft_dev_now_ns();

    /* the control QPs, on the paths the channels have */
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        c->peer_ctl_qpn[path] = peer->ctl_qpn[path];
        if (path < num_paths) {
            status = uct_gda_ft_chan_connect_qp(ep, c->ctl, path,
                                                peer->ctl_qpn[path]);
            if (status != UCS_OK) {
                return status;
            }
        } else {
            gda_ft_chan_host_set_absent(c->ctl, path);
        }
        uct_gda_ft_ctl_reset(ep, path);
        ep->ctl[path].failed = (path >= num_paths);
    }
    return UCS_OK;
}


/* ---- guardian ------------------------------------------------------------ */

/*
 * A control path that failed: once its port is up and the re-arm back-off
 * passed, our control QP goes RESET -> RTS with fresh PSNs, and the peer
 * is asked over the other control path to do the same with its own; the
 * path serves again once it answers. A try that is refused (the peer
 * re-arms it too, with its PSNs) or gets no answer in two resolve windows
 * waits for the back-off again.
 */
static void uct_gda_ft_ctl_rearm(uct_gda_ft_ep_t *ep, unsigned path,
                                 uint64_t now)
{
    uct_gda_ft_iface_t *iface  = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_ctl_t *ctl   = &ep->ctl[path];
    gda_ft_chan_host_t *ch     = ep->chans->ctl;
    gda_ft_chan_host_path_t *p = &ch->path[path];
    uint32_t unused;
    ucs_status_t status;

    if (!ctl->failed || p->absent ||
        !uct_gda_ft_iface_port_up(iface, path)) {
        return;
    }
    if (!ctl->rearming) {
        if ((now - ctl->failed_ns) < iface->config.rearm_backoff_ns) {
            return;
        }
        ctl->failed_ns = now;
        status = gda_ft_chan_host_reconnect(
                ch, path, uct_gda_ft_chan_first_psn((uint32_t)(now >> 10),
                                                    p->qp->qpn),
                uct_gda_ft_chan_first_psn(p->qp->qpn,
                                          (uint32_t)(now >> 10)));
        if (status != UCS_OK) {
            return;
        }
        ctl->rearming = 1;
    }

    status = uct_gda_ft_chan_ask(ep, UCT_GDA_FT_CHAN_ASK_REARM, ch, path,
                                 p->conn.sq_psn, p->conn.rq_psn, &unused);
    if (status == UCS_INPROGRESS) {
        if ((now - ctl->failed_ns) <
            gda_ft_timing_rearm_answer_ns(ch->params.resolve_ns)) {
            return;
        }
        status = UCS_ERR_TIMED_OUT;
    }
    ctl->rearming = 0;
    if (status != UCS_OK) {
        ctl->failed_ns = now;   /* tried again after the back-off */
        return;
    }
    uct_gda_ft_ctl_reset(ep, path);
    ucs_diag("ep %p: control QP of the %s path re-armed", ep,
             uct_gda_ft_path_name(path));
}


void uct_gda_ft_ep_chans_progress(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_mbox_question_t question;
    unsigned i, path;
    uint32_t beat;
    int gone;

    /* An endpoint that UCT reported failed (its host channel lost every
     * path) rests: a re-arm would only ask nobody, and each resets a QP
     * (on the soft HCA, under its engine's lock; docs/ucx-conformance.md).
     * Of one whose peer is gone, only the host channel is guarded: UCT's
     * own endpoint ends on its own terms */
    if ((c == NULL) || (c->count == 0)) {
        return;
    }
    if (ep->flags & UCT_GDA_FT_EP_FLAG_ERR_REPORTED) {
        uct_gda_ft_peer_ep_failed(ep, now);
        return;
    }
    gone = uct_gda_ft_peer_check(ep, now);
    beat = uct_gda_ft_mbox_epoch(
            &ep->mbox->chan[UCT_GDA_FT_WIRE_CTL_SLOT].beat);
    if (beat != c->seen_beat) {
        c->seen_beat   = beat;
        c->guardian_ns = now;    /* the peer's guardian runs */
    }

    if (uct_gda_ft_mbox_read_question(
                &ep->mbox->chan[UCT_GDA_FT_WIRE_CTL_SLOT],
                c->q[UCT_GDA_FT_WIRE_CTL_SLOT].seen_epoch, &question)) {
        c->guardian_ns = now;
        uct_gda_ft_chan_answer_peer(ep, UCT_GDA_FT_WIRE_CTL_SLOT, &question);
    }
    for (path = 0; !gone && (path < c->num_paths); ++path) {
        uct_gda_ft_ctl_rearm(ep, path, now);
    }
    for (i = 0; i < (gone ? 1 : c->count); ++i) {
        if (uct_gda_ft_mbox_read_question(&ep->mbox->chan[i],
                                          c->q[i].seen_epoch, &question)) {
            c->guardian_ns = now;
            uct_gda_ft_chan_answer_peer(ep, i, &question);
        }
        gda_ft_chan_host_guard(&c->init[i], &uct_gda_ft_chan_peer_ops, ep,
                               now);
    }
}

size_t uct_gda_ft_ep_chans_format(uct_gda_ft_ep_t *ep, const char *prefix,
                                  char *buf, size_t max)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    const gda_ft_chan_t *poster;
    char host_prefix[128];
    gda_ft_chan_query_t query;
    gda_ft_chan_t copy;
    size_t len = 0;
    unsigned i;
    int ret;

    snprintf(host_prefix, sizeof(host_prefix), "%shost ", prefix);
    for (i = 0; (c != NULL) && (i < c->count); ++i) {
        poster = &c->poster[i];
        if ((i >= 1) && (c->view != NULL) &&
            (c->read_view(&copy, &c->view[i - 1],
                          sizeof(copy)) == UCS_OK)) {
            poster = &copy;   /* the kernels' counters */
        }
        gda_ft_chan_host_query(&c->init[i], poster, &query);
        ret = gda_ft_chan_query_format(&query,
                                       (i == 0) ? host_prefix : prefix,
                                       buf + len,
                                       (len < max) ? max - len : 0);
        len += (ret > 0) ? ret : 0;
        if (len >= max) {
            break;
        }
    }
    return ucs_min(len, max);
}


/* ---- exported ------------------------------------------------------------ */

/* The channels of a connected HCA endpoint, or why there are none */
static ucs_status_t uct_gda_ft_chan_usable(uct_ep_h tl_ep,
                                           uct_gda_ft_ep_chans_t **chans_p)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);

    if ((ep == NULL) || (ep->chans == NULL) || (ep->chans->num <= 1)) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (!(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
        (ep->chans->count <= 1)) {
        return UCS_ERR_NOT_CONNECTED;
    }
    *chans_p = ep->chans;
    return UCS_OK;
}

ucs_status_t uct_gda_ft_ep_device_channels(uct_ep_h tl_ep,
                                           gda_ft_chan_t **chans_p,
                                           unsigned *count_p)
{
    uct_gda_ft_ep_chans_t *c;
    ucs_status_t status;

    status = uct_gda_ft_chan_usable(tl_ep, &c);
    if (status == UCS_OK) {
        *chans_p = uct_gda_ft_channels(c, count_p);
    }
    return status;
}

uint32_t uct_gda_ft_ep_device_flags(uct_ep_h tl_ep)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    return uct_gda_ft_ep_iface(ep)->config.atomic_host_order ?
           GDA_FT_DEV_EP_F_FETCH_HOST_ORDER : 0;
}

ucs_status_t uct_gda_ft_ep_channels_get(uct_ep_h tl_ep,
                                        uct_gda_ft_ep_chans_t **chans_p)
{
    ucs_status_t status = uct_gda_ft_chan_usable(tl_ep, chans_p);

    if (status == UCS_OK) {
        ++(*chans_p)->refs;
    }
    return status;
}

gda_ft_chan_t *uct_gda_ft_channels(uct_gda_ft_ep_chans_t *chans,
                                   unsigned *count_p)
{
    *count_p = chans->count - 1;
    return chans->poster + 1;
}

ucs_status_t uct_gda_ft_channels_query(uct_gda_ft_ep_chans_t *chans,
                                       unsigned id,
                                       const gda_ft_chan_t *poster,
                                       gda_ft_chan_query_t *query)
{
    unsigned index = 1 + id;

    if (index >= chans->count) {
        return UCS_ERR_INVALID_PARAM;
    }
    gda_ft_chan_host_query(&chans->init[index],
                           (poster != NULL) ? poster : &chans->poster[index],
                           query);
    return UCS_OK;
}

ucs_status_t uct_gda_ft_channels_path(const uct_gda_ft_ep_chans_t *chans,
                                      unsigned path, const char **device_p,
                                      unsigned *port_p)
{
    const gda_ft_chan_host_path_t *p;

    if ((chans->count <= 1) || (path >= chans->num_paths)) {
        return UCS_ERR_INVALID_PARAM;
    }
    p         = &chans->init[1].path[path];
    *device_p = p->pd->dev->attr.info.name;
    *port_p   = p->port;
    return UCS_OK;
}

/* Sets the view to `view` if it is `expect`; the counters command reads
 * it under the interface's eps_lock */
static void uct_gda_ft_channels_swap_view(uct_gda_ft_ep_chans_t *chans,
                                          const gda_ft_chan_t *expect,
                                          int any, const gda_ft_chan_t *view,
                                          ucs_status_t (*read)(void*,
                                                               const void*,
                                                               size_t))
{
    uct_gda_ft_iface_t *iface = (chans->ep != NULL) ?
                                uct_gda_ft_ep_iface(chans->ep) : NULL;

    if (iface != NULL) {
        pthread_mutex_lock(&iface->eps_lock);
    }
    if (any || (chans->view == expect)) {
        chans->view      = view;
        chans->read_view = read;
    }
    if (iface != NULL) {
        pthread_mutex_unlock(&iface->eps_lock);
    }
}

void uct_gda_ft_channels_set_view(uct_gda_ft_ep_chans_t *chans,
                                  const gda_ft_chan_t *view,
                                  ucs_status_t (*read)(void *dst,
                                                       const void *src,
                                                       size_t size))
{
    uct_gda_ft_channels_swap_view(chans, NULL, 1, view, read);
}

void uct_gda_ft_channels_drop_view(uct_gda_ft_ep_chans_t *chans,
                                   const gda_ft_chan_t *view)
{
    uct_gda_ft_channels_swap_view(chans, view, 0, NULL, NULL);
}

ucs_status_t uct_gda_ft_ep_query_channel(uct_ep_h tl_ep, unsigned id,
                                         const gda_ft_chan_t *poster,
                                         gda_ft_chan_query_t *query)
{
    uct_gda_ft_ep_chans_t *c;
    ucs_status_t status;

    status = uct_gda_ft_chan_usable(tl_ep, &c);
    return (status == UCS_OK) ?
           uct_gda_ft_channels_query(c, id, poster, query) : status;
}

gda_ft_hca_qp_t *uct_gda_ft_ep_control_qp(uct_ep_h tl_ep, unsigned path,
                                          int *usable_p)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);

    if ((ep == NULL) || !(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
        (path >= GDA_FT_NUM_PATHS)) {
        return NULL;
    }
    uct_gda_ft_ctl_poll(ep, path);
    *usable_p = !ep->ctl[path].failed;
    return ep->chans->ctl->path[path].qp;
}

ucs_status_t uct_gda_ft_ep_query_host_channel(uct_ep_h tl_ep,
                                              gda_ft_chan_query_t *query)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);

    if ((ep == NULL) || (ep->hchan.chan == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }
    gda_ft_chan_host_query(&ep->chans->init[0], ep->hchan.chan, query);
    return UCS_OK;
}
