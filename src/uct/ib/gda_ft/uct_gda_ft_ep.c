/*
 * gda_ft UCT transport: endpoint operations.
 *
 * Every operation is posted through the endpoint's host channel (design
 * §4, uct_gda_ft_hchan.c): the device datapath builds the WQE on the
 * active path, keeps it in the ring with the keys of both paths, and
 * completes it in post order, after a switch and replay if needed. The
 * cookie is a descriptor (uct_gda_ft_op_t) when a bounce buffer belongs to
 * the operation or its waiter needs more than a completion, the completion
 * itself for a zero-copy one, 0 otherwise (uct_gda_ft_ep.inl).
 *
 * Active messages are in uct_gda_ft_am.c, the hot helpers both use in
 * uct_gda_ft_ep.inl.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"

#include <gda_ft_uct_compat.h>
#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <stdlib.h>
#include <string.h>


static void uct_gda_ft_op_get_bcopy(uct_gda_ft_op_t *op, ucs_status_t status)
{
    if (status == UCS_OK) {
        op->get.unpack_cb(op->get.arg, uct_gda_ft_op_payload(op),
                          op->get.length);
    }
    uct_gda_ft_op_complete(op, status);
}

/* The old value arrives big-endian, as the HCA writes it; an 8-byte one
 * in host order where the HCAs answer so */
static void uct_gda_ft_op_atomic_fetch(uct_gda_ft_op_t *op,
                                       ucs_status_t status)
{
    const void *payload = uct_gda_ft_op_payload(op);
    uint64_t value64;
    uint32_t value32;

    if (status == UCS_OK) {
        if (op->atomic.size == sizeof(uint32_t)) {
            memcpy(&value32, payload, sizeof(value32));
            *(uint32_t*)op->atomic.result = gda_ft_be32toh(value32);
        } else {
            memcpy(&value64, payload, sizeof(value64));
            *(uint64_t*)op->atomic.result =
                    uct_gda_ft_ep_iface(op->ep)->config.atomic_host_order ?
                    value64 : gda_ft_be64toh(value64);
        }
    }
    uct_gda_ft_op_complete(op, status);
}


/* ---- put ----------------------------------------------------------------- */

/*
 * A short put: a channel's WQEs carry at most 16 bytes inline; a longer
 * one goes from a bounce buffer.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_post_short(uct_gda_ft_iface_t *iface, uct_gda_ft_ep_t *ep,
                         const void *buffer, unsigned length,
                         uint64_t remote_addr, const uint32_t *rkeys)
{
    uct_gda_ft_op_t *desc;
    gda_ft_chan_op_t op;
    ucs_status_t status;

    if (length <= sizeof(op.operand)) {
        uct_gda_ft_hchan_op_inline(&op, GDA_FT_CHAN_OP_PUT,
                                   GDA_FT_MLX5_OPCODE_RDMA_WRITE, buffer,
                                   length, remote_addr, rkeys);
        return uct_gda_ft_hchan_post(ep, &op, 0);
    }

    desc = uct_gda_ft_op_get(&iface->tx_mp, ep, uct_gda_ft_op_release, NULL,
                             remote_addr);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(uct_gda_ft_op_payload(desc), buffer, length);
    status = uct_gda_ft_ep_post_rdma(ep, GDA_FT_CHAN_OP_PUT,
                                     (uintptr_t)uct_gda_ft_op_payload(desc),
                                     desc->lkey, length, remote_addr, rkeys,
                                     (uintptr_t)desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}

ucs_status_t uct_gda_ft_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                     unsigned length, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uint32_t rkeys[GDA_FT_NUM_PATHS];
    ucs_status_t ret;

    UCT_CHECK_LENGTH(length, 0, UCT_GDA_FT_MAX_SHORT, "put_short");
    UCT_GDA_FT_EP_CHECK_RES(iface, ep);

    uct_gda_ft_rkeys(rkey, rkeys);
    ret = uct_gda_ft_ep_post_short(iface, ep, buffer, length, remote_addr,
                                   rkeys);
    if (ucs_unlikely(ret != UCS_OK)) {
        return ret;
    }

    uct_gda_ft_ep_trace_rdma(ep, "PUT_SHORT", buffer, length, remote_addr,
                             rkeys);
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    return UCS_OK;
}


ssize_t uct_gda_ft_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                void *arg, uint64_t remote_addr,
                                uct_rkey_t rkey)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;
    ucs_status_t status;
    ssize_t length;

    UCT_GDA_FT_EP_CHECK_RES(iface, ep);
    length = uct_gda_ft_ep_bcopy_pack(iface, ep, pack_cb, arg, remote_addr,
                                      "put_bcopy", &desc);
    if (ucs_unlikely(length < 0)) {
        return length;
    }

    status = uct_gda_ft_ep_post_bcopy(iface, ep, desc, GDA_FT_CHAN_OP_PUT,
                                      (uint32_t)length, remote_addr, rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}


/* Local buffer of a zero-copy operation; max_iov is 1 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_zcopy_iov(uct_gda_ft_iface_t *iface, const uct_iov_t *iov,
                        size_t iovcnt, const char *name, uint64_t *laddr_p,
                        uint32_t *length_p, uint32_t *lkeys)
{
    const uct_gda_ft_memh_t *memh;
    size_t length;

    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, name);
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(length, 0, iface->config.max_msg, name);

    if (length == 0) {
        *laddr_p = 0;
        lkeys[0] = lkeys[1] = 0;
    } else {
        memh = iov[0].memh;
        if (ucs_unlikely(memh == UCT_MEM_HANDLE_NULL)) {
            ucs_error("%s of %zu bytes without a memory handle",
                      name, length);
            return UCS_ERR_INVALID_PARAM;
        }
        *laddr_p = (uintptr_t)iov[0].buffer;
        lkeys[0] = memh->lkey[UCT_GDA_FT_PATH_PRIMARY];
        lkeys[1] = memh->lkey[UCT_GDA_FT_PATH_BACKUP];
    }

    *length_p = (uint32_t)length;
    return UCS_OK;
}

/* put_zcopy and get_zcopy: one registered buffer, RDMA WRITE or READ */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                    uint64_t remote_addr, uct_rkey_t rkey,
                    uct_completion_t *comp, int is_put)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uint32_t rkeys[GDA_FT_NUM_PATHS], lkeys[GDA_FT_NUM_PATHS];
    ucs_status_t status;
    uint32_t length;
    uint64_t laddr;

    status = uct_gda_ft_ep_zcopy_iov(iface, iov, iovcnt,
                                     is_put ? "put_zcopy" : "get_zcopy",
                                     &laddr, &length, lkeys);
    if (status != UCS_OK) {
        return status;
    }

    UCT_GDA_FT_EP_CHECK_RES(iface, ep);

    /* its cookie alone tracks it: the completion */
    uct_gda_ft_rkeys(rkey, rkeys);
    status = uct_gda_ft_ep_post_rdma(ep, is_put ? GDA_FT_CHAN_OP_PUT :
                                                  GDA_FT_CHAN_OP_GET,
                                     laddr, lkeys, length, remote_addr, rkeys,
                                     uct_gda_ft_cookie_of_comp(comp));
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    uct_gda_ft_ep_trace_rdma(ep, is_put ? "PUT_ZCOPY" : "GET_ZCOPY",
                             (void*)(uintptr_t)laddr, length, remote_addr,
                             rkeys);
    if (is_put) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY, length);
    } else {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY, length);
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_gda_ft_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_gda_ft_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey, comp,
                               1);
}


/* ---- get ----------------------------------------------------------------- */

ucs_status_t uct_gda_ft_ep_get_bcopy(uct_ep_h tl_ep,
                                     uct_unpack_callback_t unpack_cb,
                                     void *arg, size_t length,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.seg_size, "get_bcopy");
    UCT_GDA_FT_EP_CHECK_RES(iface, ep);

    desc = uct_gda_ft_op_get(&iface->tx_mp, ep, uct_gda_ft_op_get_bcopy, comp,
                             remote_addr);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    desc->get.unpack_cb = unpack_cb;
    desc->get.arg       = arg;
    desc->get.length    = length;

    status = uct_gda_ft_ep_post_bcopy(iface, ep, desc, GDA_FT_CHAN_OP_GET,
                                      (uint32_t)length, remote_addr, rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gda_ft_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                     size_t iovcnt, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_gda_ft_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey, comp,
                               0);
}


/* ---- atomics ------------------------------------------------------------- */

/*
 * UCT atomic -> datapath atomic. 64-bit add and compare-swap are the
 * standard RDMA atomics; the bitwise operations and swap are masked
 * compare-swaps that always "compare equal" (compare_mask 0) and replace the
 * bits of swap_mask; xor is a masked fetch-add whose every bit is its own
 * field (field_boundary all ones), so that no carry propagates; 32-bit
 * operations use the 4-byte masked forms.
 */
static ucs_status_t
uct_gda_ft_atomic_operands(unsigned opcode, unsigned size, uint64_t value,
                           uint64_t compare, unsigned *kind_p,
                           uint64_t *operand)
{
    uint64_t mask = (size == sizeof(uint32_t)) ? UINT32_MAX : UINT64_MAX;

    value   &= mask;
    compare &= mask;
    operand[0] = operand[1] = operand[2] = operand[3] = 0;

    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        if (size == sizeof(uint64_t)) {
            *kind_p    = UCT_GDA_FT_ATOMIC_FADD64;
            operand[0] = value;
        } else {
            *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_FA;
            operand[0] = value;
            operand[1] = 0;          /* one field: a plain add */
        }
        return UCS_OK;
    case UCT_ATOMIC_OP_XOR:
        *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_FA;
        operand[0] = value;
        operand[1] = mask;           /* every bit a field: add = xor */
        return UCS_OK;
    case UCT_ATOMIC_OP_AND:
        *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_CS;
        operand[1] = 0;              /* swap: clear ... */
        operand[3] = ~value & mask;  /* ... the bits not in value */
        return UCS_OK;
    case UCT_ATOMIC_OP_OR:
        *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_CS;
        operand[1] = value;          /* set ... */
        operand[3] = value;          /* ... the bits of value */
        return UCS_OK;
    case UCT_ATOMIC_OP_SWAP:
        *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_CS;
        operand[1] = value;
        operand[3] = mask;
        return UCS_OK;
    case UCT_ATOMIC_OP_CSWAP:
        if (size == sizeof(uint64_t)) {
            *kind_p    = UCT_GDA_FT_ATOMIC_CSWAP64;
            operand[0] = compare;
            operand[1] = value;
        } else {
            *kind_p    = UCT_GDA_FT_ATOMIC_MASKED_CS;
            operand[0] = compare;
            operand[1] = value;
            operand[2] = mask;
            operand[3] = mask;
        }
        return UCS_OK;
    default:
        ucs_error("unsupported atomic opcode %u", opcode);
        return UCS_ERR_UNSUPPORTED;
    }
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gda_ft_ep_atomic(uct_ep_h tl_ep, unsigned opcode, unsigned size,
                     uint64_t value, uint64_t compare, uint64_t remote_addr,
                     uct_rkey_t rkey, void *result, uct_completion_t *comp)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uint32_t rkeys[GDA_FT_NUM_PATHS];
    uct_gda_ft_op_t *desc;
    uint64_t operand[4];
    ucs_status_t status;
    unsigned kind;

    if (ucs_unlikely(remote_addr & (size - 1))) {
        ucs_error("%u-byte atomic on unaligned remote address 0x%"
                  PRIx64, size, remote_addr);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gda_ft_atomic_operands(opcode, size, value, compare, &kind,
                                        operand);
    if (status != UCS_OK) {
        return status;
    }

    UCT_GDA_FT_EP_CHECK_RES(iface, ep);

    /* Every atomic has a descriptor: the old value needs a registered
     * buffer, and an in-doubt report names the remote address */
    desc = uct_gda_ft_op_get(&iface->op_mp, ep,
                             (result != NULL) ? uct_gda_ft_op_atomic_fetch :
                                                uct_gda_ft_op_release,
                             comp, remote_addr);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    desc->atomic.result = result;
    desc->atomic.size   = (uint8_t)size;
    desc->atomic.opcode = (uint8_t)opcode;

    uct_gda_ft_rkeys(rkey, rkeys);
    status = uct_gda_ft_ep_post_atomic(ep, kind, result == NULL, size,
                                       operand,
                                       (uintptr_t)uct_gda_ft_op_payload(desc),
                                       desc->lkey, remote_addr, rkeys,
                                       (uintptr_t)desc);
    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
        return status;
    }

    ucs_trace_data("TX: ep %p ATOMIC%u op %u%s value 0x%" PRIx64 " compare 0x%"
                   PRIx64 " [rva 0x%" PRIx64 " rkey 0x%x/0x%x]", ep, size * 8,
                   opcode, (result != NULL) ? " fetch" : "", value, compare,
                   remote_addr, rkeys[UCT_GDA_FT_PATH_PRIMARY],
                   rkeys[UCT_GDA_FT_PATH_BACKUP]);
    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t uct_gda_ft_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                          uint64_t swap, uint64_t remote_addr,
                                          uct_rkey_t rkey, uint64_t *result,
                                          uct_completion_t *comp)
{
    return uct_gda_ft_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint64_t),
                                swap, compare, remote_addr, rkey, result,
                                comp);
}

ucs_status_t uct_gda_ft_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                          uint32_t swap, uint64_t remote_addr,
                                          uct_rkey_t rkey, uint32_t *result,
                                          uct_completion_t *comp)
{
    return uct_gda_ft_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint32_t),
                                swap, compare, remote_addr, rkey, result,
                                comp);
}

ucs_status_t uct_gda_ft_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                         uint32_t value, uint64_t remote_addr,
                                         uct_rkey_t rkey)
{
    return uct_gda_ft_ep_atomic(tl_ep, opcode, sizeof(uint32_t), value, 0,
                                remote_addr, rkey, NULL, NULL);
}

ucs_status_t uct_gda_ft_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                         uint64_t value, uint64_t remote_addr,
                                         uct_rkey_t rkey)
{
    return uct_gda_ft_ep_atomic(tl_ep, opcode, sizeof(uint64_t), value, 0,
                                remote_addr, rkey, NULL, NULL);
}

ucs_status_t uct_gda_ft_ep_atomic32_fetch(uct_ep_h tl_ep, unsigned opcode,
                                          uint32_t value, uint32_t *result,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    return uct_gda_ft_ep_atomic(tl_ep, opcode, sizeof(uint32_t), value, 0,
                                remote_addr, rkey, result, comp);
}

ucs_status_t uct_gda_ft_ep_atomic64_fetch(uct_ep_h tl_ep, unsigned opcode,
                                          uint64_t value, uint64_t *result,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    return uct_gda_ft_ep_atomic(tl_ep, opcode, sizeof(uint64_t), value, 0,
                                remote_addr, rkey, result, comp);
}


/* ---- pending ------------------------------------------------------------- */

ucs_status_t uct_gda_ft_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);

    /* the same test as the operations' and the flush's: a request told
     * to retry at once must find room (a switch in the way is no room) */
    if (!uct_gda_ft_ep_must_queue(iface, ep)) {
        return UCS_ERR_BUSY;
    }

    UCS_STATIC_ASSERT(sizeof(uct_pending_req_priv_arb_t) <=
                      UCT_PENDING_REQ_PRIV_LEN);
    uct_pending_req_arb_group_push(&ep->arb_group, req);
    UCT_TL_EP_STAT_PEND(&ep->super);

    if (uct_gda_ft_hchan_has_room(iface, ep)) {
        /* older requests wait: it goes after them */
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    }
    return UCS_OK;
}

ucs_arbiter_cb_result_t
uct_gda_ft_ep_process_pending(ucs_arbiter_t *arbiter,
                              ucs_arbiter_group_t *group,
                              ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req    = ucs_container_of(elem, uct_pending_req_t,
                                                 priv);
    uct_gda_ft_ep_t *ep       = ucs_container_of(group, uct_gda_ft_ep_t,
                                                 arb_group);
    ucs_status_t status;

    ucs_trace_data("progressing pending request %p", req);
    ep->flags |= UCT_GDA_FT_EP_FLAG_IN_PENDING;
    status     = req->func(req);
    ep->flags &= ~UCT_GDA_FT_EP_FLAG_IN_PENDING;
    ucs_trace_data("pending request %p returned %s", req,
                   ucs_status_string(status));

    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
}

typedef struct {
    uct_pending_purge_callback_t cb;
    void                         *arg;
} uct_gda_ft_purge_args_t;

static ucs_arbiter_cb_result_t
uct_gda_ft_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                       ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req        = ucs_container_of(elem, uct_pending_req_t,
                                                     priv);
    uct_gda_ft_purge_args_t *args = arg;

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    } else {
        ucs_debug("canceling pending request %p", req);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_gda_ft_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg)
{
    uct_gda_ft_ep_t *ep          = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface    = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_purge_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group,
                            uct_gda_ft_ep_purge_cb, &args);
}


/* ---- flush, fence, check ------------------------------------------------- */

/*
 * flush(CANCEL): the HCA must stop touching the buffers of the outstanding
 * operations before they are reported canceled, so the host channel's QPs
 * go to ERR (the endpoint is unusable afterwards, as UCT specifies); what
 * was posted completes as canceled.
 */
static void uct_gda_ft_ep_cancel(uct_gda_ft_ep_t *ep)
{
    if (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) {
        return;
    }

    ep->flags |= UCT_GDA_FT_EP_FLAG_CANCELED;
    uct_gda_ft_hchan_cancel(ep);
    ucs_debug("ep %p: canceled %" PRIu64 " outstanding WQEBBs", ep,
              uct_gda_ft_ep_outstanding(ep));
    uct_gda_ft_iface_ep_ready(uct_gda_ft_ep_iface(ep), ep);
}

ucs_status_t uct_gda_ft_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_op_t *desc;

    /* Purging the pending requests before a cancel is the caller's
     * business */
    if (ucs_unlikely(flags & UCT_FLUSH_FLAG_CANCEL)) {
        uct_gda_ft_ep_cancel(ep);
    } else if (uct_gda_ft_ep_pending_ahead(ep) ||
               (uct_gda_ft_ep_must_queue(iface, ep) &&
                (uct_gda_ft_ep_outstanding(ep) > 0))) {
        /* A flush covers what was posted before it: requests still in the
         * pending queue, or those a switch holds back, go first (UCP
         * queues the flush behind them) */
        return UCS_ERR_NO_RESOURCE;
    }

    if ((uct_gda_ft_ep_outstanding(ep) == 0) &&
        ucs_queue_is_empty(&ep->flush_q)) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return uct_gda_ft_ep_take_unreported(ep);
    }

    if (comp != NULL) {
        desc = uct_gda_ft_op_get(&iface->op_mp, ep, NULL, comp, 0);
        if (ucs_unlikely(desc == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
        /* done when everything posted so far is handed out */
        desc->flush.chan_end = ep->hchan.posted;
        ucs_queue_push(&ep->flush_q, &desc->queue);
        uct_gda_ft_iface_ep_ready(iface, ep);
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gda_ft_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    /* The next WQE waits for every earlier one (reads and atomics
     * included) to complete; nothing to wait for when none is in flight.
     * A replay copies the WQE with its fence. */
    if (uct_gda_ft_ep_outstanding(ep) > 0) {
        ep->flags |= UCT_GDA_FT_EP_FLAG_FENCE;
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

/*
 * Keepalive: an endpoint with operations in flight is being checked by
 * their deadline already; an idle one posts a zero-length RDMA WRITE on
 * its host channel (no memory is touched, the R_Key is not checked for a
 * zero-length access), whose loss the channel's deadline turns into a
 * switch and, with no path left, into the endpoint error.
 */
ucs_status_t uct_gda_ft_ep_check(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    static const uint8_t no_data = 0;
    gda_ft_chan_op_t op;
    ucs_status_t status;

    GDA_FT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);

    if (!(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
        (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) ||
        uct_gda_ft_ep_no_path(ep) || (uct_gda_ft_ep_outstanding(ep) > 0) ||
        !uct_gda_ft_hchan_has_room(iface, ep)) {
        return UCS_OK;
    }

    uct_gda_ft_hchan_op_inline(&op, GDA_FT_CHAN_OP_PUT,
                               GDA_FT_MLX5_OPCODE_RDMA_WRITE, &no_data, 0, 0,
                               NULL);
    status = uct_gda_ft_hchan_post(ep, &op, 0);
    return (status == UCS_ERR_NO_RESOURCE) ? UCS_OK : status;
}
