/*
 * gda_ft UCT transport: the hot helpers of every poster (resource checks,
 * post bookkeeping, operation descriptors and their completion), in the
 * role of UCX's rc_mlx5.inl. Included by the operations' and the active
 * messages' files.
 */
#ifndef UCT_GDA_FT_EP_INL_
#define UCT_GDA_FT_EP_INL_

#include "uct_gda_ft_ep.h"
#include "uct_gda_ft_hchan.h"

#include <ucs/debug/log.h>
#include <string.h>


/* Returns from a post function when the endpoint cannot take an operation
 * now (not connected, canceled, failed, or out of resources) */
#define UCT_GDA_FT_EP_CHECK_RES(_iface, _ep) \
    { \
        ucs_status_t _status = uct_gda_ft_ep_check_res(_iface, _ep); \
        if (ucs_unlikely(_status != UCS_OK)) { \
            return _status; \
        } \
    }


static inline const char *uct_gda_ft_path_name(unsigned path)
{
    return (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup";
}

static UCS_F_ALWAYS_INLINE void uct_gda_ft_rkeys(uct_rkey_t rkey,
                                                 uint32_t *rkeys)
{
    rkeys[UCT_GDA_FT_PATH_PRIMARY] =
            uct_gda_ft_wire_rkey_path(rkey, UCT_GDA_FT_PATH_PRIMARY);
    rkeys[UCT_GDA_FT_PATH_BACKUP]  =
            uct_gda_ft_wire_rkey_path(rkey, UCT_GDA_FT_PATH_BACKUP);
}

/*
 * Every RDMA post is traced, as UCX's IB transports trace theirs
 * (uct_ib_log_post): the operation, the local buffer and the remote one
 * with the rkey of each path. ucs_trace_data() is compiled out unless
 * UCS_MAX_LOG_LEVEL keeps it (the _trace plugin).
 */
static UCS_F_ALWAYS_INLINE void
uct_gda_ft_ep_trace_rdma(uct_gda_ft_ep_t *ep, const char *name,
                         const void *buffer, size_t length,
                         uint64_t remote_addr, const uint32_t *rkeys)
{
    ucs_trace_data("TX: ep %p %s [va %p len %zu] [rva 0x%" PRIx64
                   " rkey 0x%x/0x%x]", ep, name, buffer, length, remote_addr,
                   rkeys[UCT_GDA_FT_PATH_PRIMARY],
                   rkeys[UCT_GDA_FT_PATH_BACKUP]);
}

/* Operations in flight on the endpoint's host channel */
static UCS_F_ALWAYS_INLINE uint64_t
uct_gda_ft_ep_outstanding(const uct_gda_ft_ep_t *ep)
{
    return uct_gda_ft_hchan_outstanding(ep);
}

/* Whether somebody may wait on the peer: a kernel (the device channels
 * were handed out) or an operation in flight. Only then does the guardian
 * probe the peer and read its traffic. */
static UCS_F_ALWAYS_INLINE int
uct_gda_ft_ep_peer_awaited(const uct_gda_ft_ep_t *ep)
{
    return ep->chans->handed_out || (uct_gda_ft_ep_outstanding(ep) > 0);
}

/* Whether its host channel has no path left */
static UCS_F_ALWAYS_INLINE int uct_gda_ft_ep_no_path(const uct_gda_ft_ep_t *ep)
{
    return (ep->hchan.chan != NULL) &&
           (gda_ft_atomic_load_acq32(&ep->hchan.chan->state) ==
            GDA_FT_CHAN_NO_PATH);
}

/*
 * Whether an operation or a flush must wait in the pending queue: no room
 * on the host channel (its ring, or a switch holding it), or older requests
 * wait there (an operation must not overtake them, and a flush must cover
 * them)
 */
static UCS_F_ALWAYS_INLINE int
uct_gda_ft_ep_pending_ahead(uct_gda_ft_ep_t *ep)
{
    return !(ep->flags & UCT_GDA_FT_EP_FLAG_IN_PENDING) &&
           !ucs_arbiter_group_is_empty(&ep->arb_group);
}

static UCS_F_ALWAYS_INLINE int
uct_gda_ft_ep_must_queue(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep)
{
    return !uct_gda_ft_hchan_has_room(iface, ep) ||
           uct_gda_ft_ep_pending_ahead(ep);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_check_res(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep)
{
    if (ucs_unlikely(!(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
                     (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) ||
                     uct_gda_ft_ep_no_path(ep))) {
        if (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) {
            return UCS_ERR_CANCELED;
        }
        return (ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ?
               UCS_ERR_ENDPOINT_TIMEOUT : UCS_ERR_NOT_CONNECTED;
    }

    if (ucs_unlikely(uct_gda_ft_ep_must_queue(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}


/* ---- posting on the host channel ----------------------------------------- */

/* An RDMA WRITE (GDA_FT_CHAN_OP_PUT) or READ (GDA_FT_CHAN_OP_GET) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_post_rdma(uct_gda_ft_ep_t *ep, uint8_t kind, uint64_t laddr,
                        const uint32_t *lkeys, uint32_t length, uint64_t raddr,
                        const uint32_t *rkeys, uint64_t cookie)
{
    gda_ft_chan_op_t op;

    uct_gda_ft_hchan_op(&op, kind, (kind == GDA_FT_CHAN_OP_PUT) ?
                                   GDA_FT_MLX5_OPCODE_RDMA_WRITE :
                                   GDA_FT_MLX5_OPCODE_RDMA_READ,
                        laddr, lkeys, length, raddr, rkeys);
    return uct_gda_ft_hchan_post(ep, &op, cookie);
}

/* Kinds of atomics (uct_gda_ft_atomic_operands) */
enum {
    UCT_GDA_FT_ATOMIC_FADD64 = 0,  /* operand[0] = add */
    UCT_GDA_FT_ATOMIC_CSWAP64,     /* operand[0] = compare, [1] = swap */
    UCT_GDA_FT_ATOMIC_MASKED_CS,   /* compare, swap, compare mask, swap
                                      mask */
    UCT_GDA_FT_ATOMIC_MASKED_FA    /* add, field boundary */
};

/*
 * An atomic of a UCT_GDA_FT_ATOMIC_* kind, size and operands: a fetching
 * atomic (exactly once, or in doubt) or, when nobody wants the old value
 * (posted), a signal (exactly once); the old value lands big-endian at
 * laddr. The channel takes the operands in its own order (swap or add,
 * compare; swap mask or field boundary, compare mask).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_post_atomic(uct_gda_ft_ep_t *ep, unsigned kind, int posted,
                          unsigned size, const uint64_t *operand,
                          uint64_t laddr, const uint32_t *lkeys,
                          uint64_t raddr, const uint32_t *rkeys,
                          uint64_t cookie)
{
    gda_ft_chan_op_t op;

    uct_gda_ft_hchan_op(&op, posted ? GDA_FT_CHAN_OP_SIGNAL :
                                      GDA_FT_CHAN_OP_ATOMIC,
                        GDA_FT_MLX5_OPCODE_ATOMIC_FA, laddr, lkeys, size,
                        raddr, rkeys);
    switch (kind) {
    case UCT_GDA_FT_ATOMIC_FADD64:
        op.operand[0] = operand[0];
        break;
    case UCT_GDA_FT_ATOMIC_CSWAP64:
        op.opcode     = GDA_FT_MLX5_OPCODE_ATOMIC_CS;
        op.operand[0] = operand[1];
        op.operand[1] = operand[0];
        break;
    case UCT_GDA_FT_ATOMIC_MASKED_CS:
        op.opcode     = GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS;
        op.operand[0] = operand[1];
        op.operand[1] = operand[0];
        op.mask[0]    = operand[3];
        op.mask[1]    = operand[2];
        break;
    default: /* UCT_GDA_FT_ATOMIC_MASKED_FA */
        op.opcode     = GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA;
        op.operand[0] = operand[0];
        op.mask[0]    = operand[1];
        break;
    }
    return uct_gda_ft_hchan_post(ep, &op, cookie);
}


static UCS_F_ALWAYS_INLINE uct_gda_ft_op_t *
uct_gda_ft_op_get(ucs_mpool_t *mp, uct_gda_ft_ep_t *ep,
                  uct_gda_ft_op_handler_t handler, uct_completion_t *comp,
                  uint64_t raddr)
{
    uct_gda_ft_op_t *op = ucs_mpool_get_inline(mp);

    if (ucs_unlikely(op == NULL)) {
        return NULL;
    }

    op->handler = handler;
    op->comp    = comp;
    op->ep      = ep;
    op->raddr   = raddr;
    return op;
}

static UCS_F_ALWAYS_INLINE void *uct_gda_ft_op_payload(uct_gda_ft_op_t *op)
{
    return op + 1;
}


/* ---- completion handlers ------------------------------------------------- */

static inline void uct_gda_ft_op_release(uct_gda_ft_op_t *op,
                                         ucs_status_t status)
{
    ucs_mpool_put_inline(op);
}

static inline void uct_gda_ft_op_complete(uct_gda_ft_op_t *op,
                                          ucs_status_t status)
{
    uct_completion_t *comp = op->comp;

    ucs_mpool_put_inline(op);
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/* Releases an operation of a destroyed endpoint; its waiter learns */
static inline void uct_gda_ft_op_cancel(uct_gda_ft_op_t *op)
{
    uct_gda_ft_op_complete(op, UCS_ERR_CANCELED);
}


/*
 * An operation's cookie (at its last WQE in hchan.cookies): 0 when nobody
 * waits and no buffer belongs to the operation; a descriptor when one does, or when the
 * waiter needs more than its completion (a get's unpack, an atomic's old
 * value); or, for a zero-copy operation, its completion with bit 0 set.
 * Such an operation is tracked once, by its cookie, with no descriptor
 * beside it. Descriptors and completions are both 8-byte aligned.
 */
#define UCT_GDA_FT_COOKIE_COMP 1ul

static UCS_F_ALWAYS_INLINE uint64_t
uct_gda_ft_cookie_of_comp(uct_completion_t *comp)
{
    return (comp != NULL) ? ((uintptr_t)comp | UCT_GDA_FT_COOKIE_COMP) : 0;
}

static UCS_F_ALWAYS_INLINE uct_gda_ft_op_t *
uct_gda_ft_cookie_desc(uint64_t cookie)
{
    return (cookie & UCT_GDA_FT_COOKIE_COMP) ?
           NULL : (uct_gda_ft_op_t*)(uintptr_t)cookie;
}

/* The completion a cookie's waiter gets, NULL when there is none */
static UCS_F_ALWAYS_INLINE uct_completion_t *
uct_gda_ft_cookie_comp(uint64_t cookie)
{
    const uct_gda_ft_op_t *desc = uct_gda_ft_cookie_desc(cookie);

    if (desc != NULL) {
        return desc->comp;
    }
    return (uct_completion_t*)(uintptr_t)(cookie & ~UCT_GDA_FT_COOKIE_COMP);
}

/* Hands a finished operation to what its cookie names */
static inline void uct_gda_ft_cookie_complete(uint64_t cookie,
                                              ucs_status_t status)
{
    uct_gda_ft_op_t *desc = uct_gda_ft_cookie_desc(cookie);
    uct_completion_t *comp;

    if (desc != NULL) {
        desc->handler(desc, status);
    } else if ((comp = uct_gda_ft_cookie_comp(cookie)) != NULL) {
        uct_invoke_completion(comp, status);
    }
}

/* An operation of a destroyed endpoint: its waiter learns, and a
 * descriptor's handler does not run (what it would do is for an endpoint
 * that lives on) */
static inline void uct_gda_ft_cookie_cancel(uint64_t cookie)
{
    uct_gda_ft_op_t *desc = uct_gda_ft_cookie_desc(cookie);
    uct_completion_t *comp;

    if (desc != NULL) {
        uct_gda_ft_op_cancel(desc);
    } else if ((comp = uct_gda_ft_cookie_comp(cookie)) != NULL) {
        uct_invoke_completion(comp, UCS_ERR_CANCELED);
    }
}

/* The failure of an operation nobody waited for, once */
static inline ucs_status_t uct_gda_ft_ep_take_unreported(uct_gda_ft_ep_t *ep)
{
    ucs_status_t status = ep->unreported_status;

    ep->unreported_status = UCS_OK;
    return status;
}

/* put_bcopy and get_bcopy: RDMA WRITE from, or READ into, the payload of a
 * registered bounce descriptor; the descriptor goes back on failure */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_post_bcopy(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep,
                         uct_gda_ft_op_t *desc, uint8_t kind, uint32_t length,
                         uint64_t remote_addr, uct_rkey_t rkey)
{
    uint32_t rkeys[GDA_FT_NUM_PATHS];
    ucs_status_t status;

    uct_gda_ft_rkeys(rkey, rkeys);
    status = uct_gda_ft_ep_post_rdma(ep, kind,
                                     (uintptr_t)uct_gda_ft_op_payload(desc),
                                     desc->lkey, length, remote_addr, rkeys,
                                     (uintptr_t)desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    uct_gda_ft_ep_trace_rdma(ep, (kind == GDA_FT_CHAN_OP_PUT) ? "PUT_BCOPY" :
                                                           "GET_BCOPY",
                             uct_gda_ft_op_payload(desc), length, remote_addr,
                             rkeys);
    return UCS_OK;
}

/* A bounce descriptor packed by the caller's callback (put and AM bcopy);
 * returns the packed length, or a negative status */
static UCS_F_ALWAYS_INLINE ssize_t
uct_gda_ft_ep_bcopy_pack(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep,
                         uct_pack_callback_t pack_cb, void *arg,
                         uint64_t remote_addr, const char *name,
                         uct_gda_ft_op_t **desc_p)
{
    uct_gda_ft_op_t *desc;
    size_t length;

    desc = uct_gda_ft_op_get(&iface->tx_mp, ep, uct_gda_ft_op_release, NULL,
                             remote_addr);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(uct_gda_ft_op_payload(desc), arg);
    if (ucs_unlikely(length > iface->config.seg_size)) {
        ucs_error("%s packed %zu bytes into a %zu-byte segment", name,
                  length, iface->config.seg_size);
        ucs_mpool_put_inline(desc);
        return UCS_ERR_INVALID_PARAM;
    }

    *desc_p = desc;
    return length;
}


/* Whether the port of the interface's `path` is up (0 without the path) */
static UCS_F_ALWAYS_INLINE int
uct_gda_ft_iface_port_up(const uct_gda_ft_iface_t *iface, unsigned path)
{
    const uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    gda_ft_hca_port_attr_t attr;

    return (ipath->dev != NULL) &&
           (gda_ft_hca_port_query(ipath->dev->hca, ipath->port_num, &attr) ==
            UCS_OK) && (attr.state == GDA_FT_HCA_PORT_ACTIVE);
}

/* How long a QP waits for an acknowledgement before it retransmits (the
 * IB encoding of TIMEOUT: 4.096 us * 2^N) */
static UCS_F_ALWAYS_INLINE uint64_t
uct_gda_ft_iface_retransmit_ns(const uct_gda_ft_iface_t *iface)
{
    return 4096ull << iface->config.timeout;
}

static UCS_F_ALWAYS_INLINE int
uct_gda_ft_iface_has_backup(const uct_gda_ft_iface_t *iface)
{
    return iface->path[UCT_GDA_FT_PATH_BACKUP].dev != NULL;
}

static UCS_F_ALWAYS_INLINE uint64_t uct_gda_ft_qp_key(unsigned path,
                                                      uint32_t qpn)
{
    return ((uint64_t)path << 32) | qpn;
}

/* Receive completions of QP qpn of path go to ep: a target QP of its host
 * channel, which receives the peer's active messages */
static inline ucs_status_t uct_gda_ft_iface_qp_add(uct_gda_ft_iface_t *iface,
                                                   unsigned path,
                                                   uint32_t qpn,
                                                   uct_gda_ft_ep_t *ep)
{
    khiter_t iter;
    int ret;

    iter = kh_put(uct_gda_ft_qp, &iface->qp_hash,
                  uct_gda_ft_qp_key(path, qpn), &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(&iface->qp_hash, iter) = ep;
    return UCS_OK;
}

/* Undoes uct_gda_ft_iface_qp_add(), if qpn of path still goes to ep */
static inline void uct_gda_ft_iface_qp_del(uct_gda_ft_iface_t *iface,
                                           unsigned path, uint32_t qpn,
                                           uct_gda_ft_ep_t *ep)
{
    khiter_t iter = kh_get(uct_gda_ft_qp, &iface->qp_hash,
                           uct_gda_ft_qp_key(path, qpn));

    if ((iter != kh_end(&iface->qp_hash)) &&
        (kh_val(&iface->qp_hash, iter) == ep)) {
        kh_del(uct_gda_ft_qp, &iface->qp_hash, iter);
    }
}

/* The endpoint that QP qpn of path belongs to (uct_gda_ft_iface_qp_add),
 * or NULL: a completion of a destroyed endpoint's QP */
static UCS_F_ALWAYS_INLINE uct_gda_ft_ep_t *
uct_gda_ft_iface_qp_find(uct_gda_ft_iface_t *iface, unsigned path,
                         uint32_t qpn)
{
    khiter_t iter = kh_get(uct_gda_ft_qp, &iface->qp_hash,
                           uct_gda_ft_qp_key(path, qpn));

    return (iter == kh_end(&iface->qp_hash)) ? NULL :
           kh_val(&iface->qp_hash, iter);
}

/* Marks an endpoint as having completions to deliver */
static inline void uct_gda_ft_iface_ep_ready(uct_gda_ft_iface_t *iface,
                                             uct_gda_ft_ep_t *ep)
{
    if (!(ep->flags & UCT_GDA_FT_EP_FLAG_READY)) {
        ucs_list_add_tail(&iface->ready_eps, &ep->ready);
        ep->flags |= UCT_GDA_FT_EP_FLAG_READY;
    }
}

/* QP parameters of a path to the peer, with the given PSNs (dest_qpn is
 * the caller's) */
static inline void
uct_gda_ft_ep_qp_attr(uct_gda_ft_ep_t *ep, unsigned path, uint32_t rq_psn,
                      uint32_t sq_psn, gda_ft_hca_qp_attr_t *attr)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);

    memset(attr, 0, sizeof(*attr));
    attr->access             = GDA_FT_HCA_ACCESS_ALL;
    memcpy(attr->dest_gid, ep->peer[path].gid, sizeof(attr->dest_gid));
    attr->rq_psn             = rq_psn;
    attr->path_mtu           = iface->config.path_mtu;
    attr->traffic_class      = iface->config.traffic_class;
    attr->hop_limit          = 64;
    attr->min_rnr_timer      = 12;
    attr->max_dest_rd_atomic = iface->config.max_rd_atomic;
    attr->sq_psn             = sq_psn;
    attr->timeout            = iface->config.timeout;
    attr->retry_cnt          = iface->config.retry_count;
    attr->rnr_retry          = iface->config.rnr_retry;
    attr->max_rd_atomic      = iface->config.max_rd_atomic;
}

#endif
