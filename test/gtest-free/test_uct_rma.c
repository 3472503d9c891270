/*
 * RMA through the UCT API on software HCAs: resources, put and get in
 * every protocol, flush, fence, pending and cancel, CUDA memory.
 */
#include "uct_harness.h"
#include "chan_harness.h"   /* chan_world_time_scale() */
#include <uct/ib/gda_ft/uct_gda_ft_wire.h>
#include <uct/ib/gda_ft/uct_gda_ft_perf.h>
#include <uct/ib/gda_ft/uct_gda_ft_oob_stats.h>
#include <ucp/core/ucp_types.h>   /* UCX_ADDRESS_VERSION=v2 packing */

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <alloca.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/socket.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>


/* ---- resources ----------------------------------------------------------- */

GDA_FT_TEST(uct_rma, resources_and_capabilities)
{
    uct_component_attr_t cattr;
    uct_tl_resource_desc_t *tls;
    uct_iface_attr_t *attr;
    unsigned i, num_tls;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);

    cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    GDA_FT_ASSERT_OK(uct_component_query(t.comp, &cattr));
    GDA_FT_ASSERT_EQ(cattr.md_resource_count, 4);
    cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    cattr.md_resources = alloca(4 * sizeof(*cattr.md_resources));
    GDA_FT_ASSERT_OK(uct_component_query(t.comp, &cattr));
    for (i = 0; i < 4; ++i) {
        char name[32];

        snprintf(name, sizeof(name), "gda_ft_tsoft%u", i);
        GDA_FT_ASSERT(!strcmp(cattr.md_resources[i].md_name, name));
    }

    test_uct_setup(&t);

    GDA_FT_ASSERT_OK(uct_md_query_tl_resources(t.node[NODE_A].md, &tls,
                                               &num_tls));
    /* the HCA port and the out-of-band wireup channel next to it */
    GDA_FT_ASSERT_EQ(num_tls, 2);
    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT(!strcmp(tls[i].tl_name, "gda_ft"));
        GDA_FT_ASSERT_EQ(tls[i].dev_type, UCT_DEVICE_TYPE_NET);
    }
    GDA_FT_ASSERT(!strcmp(tls[0].dev_name, "tsoft0:1"));
    GDA_FT_ASSERT(!strcmp(tls[1].dev_name, "tsoft0:oob"));
    uct_release_tl_resource_list(tls);

    GDA_FT_ASSERT_EQ(t.node[NODE_A].md_attr.rkey_packed_size, 16);
    GDA_FT_ASSERT(t.node[NODE_A].md_attr.cap.flags & UCT_MD_FLAG_REG);
    GDA_FT_ASSERT(t.node[NODE_A].md_attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);

    attr = &t.node[NODE_A].iface_attr;
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_PUT_SHORT);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_GET_ZCOPY);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_PENDING);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    GDA_FT_ASSERT(!(attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE));
    GDA_FT_ASSERT_EQ(attr->device_addr_len, 10); /* IPv4 form */
    /* mailbox, count and control QPs; the host channel's QPNs */
    GDA_FT_ASSERT_EQ(attr->ep_addr_len, 36);
    GDA_FT_ASSERT_EQ(attr->iface_addr_len, 0);
    GDA_FT_ASSERT_EQ(attr->cap.put.max_short, 128);
    GDA_FT_ASSERT_EQ(attr->cap.put.max_bcopy, 8192);
    GDA_FT_ASSERT_EQ(attr->cap.put.max_iov, 1);
    GDA_FT_ASSERT_EQ(attr->cap.atomic64.fop_flags,
                     UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                     UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR) |
                     UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                     UCS_BIT(UCT_ATOMIC_OP_CSWAP));
    GDA_FT_ASSERT(attr->latency.c > 0);
    GDA_FT_ASSERT(attr->bandwidth.shared + attr->bandwidth.dedicated > 0);

    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_rma, rkey_and_address_checks)
{
    uct_rkey_bundle_t bundle;
    uint8_t garbage[64], dev_addr[64];
    test_uct_t t;
    uint32_t k0, k1;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    /* both keys in one uct_rkey_t */
    k0 = (uint32_t)t.rkey[NODE_B].rkey;
    k1 = (uint32_t)(t.rkey[NODE_B].rkey >> 32);
    GDA_FT_ASSERT_NE(k0, 0);
    GDA_FT_ASSERT_NE(k1, 0);
    GDA_FT_ASSERT_NE(k0, k1);

    /* garbage and corrupt keys are refused */
    memset(garbage, 0xab, sizeof(garbage));
    GDA_FT_ASSERT(uct_rkey_unpack(t.comp, garbage, &bundle) != UCS_OK);
    memcpy(garbage, t.node[NODE_B].rkey_buf, 16);
    garbage[6] ^= 0x01;
    GDA_FT_ASSERT(uct_rkey_unpack(t.comp, garbage, &bundle) != UCS_OK);

    /* unreachable: a malformed device address */
    GDA_FT_ASSERT_OK(uct_iface_get_device_address(
            t.node[NODE_B].iface, (uct_device_addr_t*)dev_addr));
    GDA_FT_ASSERT(uct_iface_is_reachable(t.node[NODE_A].iface,
                                         (uct_device_addr_t*)dev_addr, NULL));
    dev_addr[0] = 0x7f;
    GDA_FT_ASSERT(!uct_iface_is_reachable(t.node[NODE_A].iface,
                                          (uct_device_addr_t*)dev_addr,
                                          NULL));
    test_uct_cleanup(&t);
}


/* ---- put ----------------------------------------------------------------- */

GDA_FT_TEST(uct_rma, put_short)
{
    static const unsigned sizes[] = {0, 1, 7, 8, 64, 100, 128};
    uint8_t data[128];
    test_uct_t t;
    size_t offset = 0;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(data, sizes[i], 100 + i);
        GDA_FT_ASSERT_OK(test_put_short(&t, data, sizes[i], offset));
        offset += 256;
    }
    GDA_FT_ASSERT_OK(test_flush(&t));

    for (i = 0, offset = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(data, sizes[i], 100 + i);
        GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf + offset, data, sizes[i]);
        /* nothing written past the message */
        GDA_FT_ASSERT_EQ(t.node[NODE_B].buf[offset + sizes[i]], 0);
        offset += 256;
    }

    /* longer than max_short: refused */
    GDA_FT_ASSERT(uct_ep_put_short(t.node[NODE_A].ep, data, 129,
                                   raddr_b(&t, 0), rkey_b(&t)) != UCS_OK);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_rma, put_bcopy)
{
    static const size_t sizes[] = {0, 1, 129, 4096, 8191, 8192};
    uint8_t data[8192];
    test_pack_arg_t arg;
    test_uct_t t;
    ssize_t ret;
    size_t offset = 0;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(data, sizes[i], 200 + i);
        arg.src    = data;
        arg.length = sizes[i];
        do {
            ret = uct_ep_put_bcopy(t.node[NODE_A].ep, test_pack_cb, &arg,
                                   raddr_b(&t, offset), rkey_b(&t));
            if (ret == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (ret == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_EQ(ret, (ssize_t)sizes[i]);
        offset += 16384;
    }
    GDA_FT_ASSERT_OK(test_flush(&t));

    for (i = 0, offset = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(data, sizes[i], 200 + i);
        GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf + offset, data, sizes[i]);
        offset += 16384;
    }
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_rma, put_zcopy)
{
    static const size_t sizes[] = {0, 1, 4095, 4096, 65536, 300001};
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    ucs_status_t status;
    size_t offset = 0;
    unsigned i, posted = 0;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    test_comp_init(&comp, 0);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(t.node[NODE_A].buf + offset, sizes[i], 300 + i);
        iov.buffer = t.node[NODE_A].buf + offset;
        iov.length = sizes[i];
        iov.memh   = t.node[NODE_A].memh;
        iov.stride = 0;
        iov.count  = 1;
        ++comp.super.count;
        status = uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                  raddr_b(&t, offset), rkey_b(&t),
                                  &comp.super);
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        ++posted;
        offset += (sizes[i] + 63) & ~(size_t)63;
    }

    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_EQ(comp.super.count, 0);

    for (i = 0, offset = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf + offset,
                             t.node[NODE_A].buf + offset, sizes[i]);
        offset += (sizes[i] + 63) & ~(size_t)63;
    }
    (void)posted;
    test_uct_cleanup(&t);
}


/* ---- get ----------------------------------------------------------------- */



GDA_FT_TEST(uct_rma, get_bcopy)
{
    static const size_t sizes[] = {1, 8, 1000, 4096, 8192};
    uint8_t dest[5][8192];
    test_unpack_arg_t args[5];
    test_comp_t comp;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    soft_fill(t.node[NODE_B].buf, BUF_SIZE, 400);
    test_comp_init(&comp, 5);
    for (i = 0; i < 5; ++i) {
        memset(dest[i], 0, sizeof(dest[i]));
        args[i].dest   = dest[i];
        args[i].length = sizes[i];
        args[i].calls  = 0;
        status = uct_ep_get_bcopy(t.node[NODE_A].ep, test_unpack_cb, &args[i],
                                  sizes[i], raddr_b(&t, i * 10000 + 3),
                                  rkey_b(&t), &comp.super);
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
    }
    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_OK(comp.super.status);

    for (i = 0; i < 5; ++i) {
        GDA_FT_ASSERT_EQ(args[i].calls, 1);
        GDA_FT_ASSERT_MEM_EQ(dest[i], t.node[NODE_B].buf + i * 10000 + 3,
                             sizes[i]);
    }
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_rma, get_zcopy)
{
    static const size_t sizes[] = {1, 4096, 65536, 500000};
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    size_t offset = 0;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    soft_fill(t.node[NODE_B].buf, BUF_SIZE, 500);
    test_comp_init(&comp, 4);
    for (i = 0; i < 4; ++i) {
        iov.buffer = t.node[NODE_A].buf + offset;
        iov.length = sizes[i];
        iov.memh   = t.node[NODE_A].memh;
        iov.stride = 0;
        iov.count  = 1;
        GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                          raddr_b(&t, offset + 17),
                                          rkey_b(&t), &comp.super),
                         UCS_INPROGRESS);
        offset += sizes[i];
    }
    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_OK(comp.super.status);

    for (i = 0, offset = 0; i < 4; ++i) {
        GDA_FT_ASSERT_MEM_EQ(t.node[NODE_A].buf + offset,
                             t.node[NODE_B].buf + offset + 17, sizes[i]);
        offset += sizes[i];
    }
    test_uct_cleanup(&t);
}



/* ---- flush, fence, pending ----------------------------------------------- */

GDA_FT_TEST(uct_rma, flush_ep_and_iface)
{
    const unsigned n = 600;
    uint64_t value;
    test_uct_t t;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    /* nothing outstanding: both flushes complete at once */
    GDA_FT_ASSERT_OK(uct_ep_flush(t.node[NODE_A].ep, 0, NULL));
    GDA_FT_ASSERT_OK(uct_iface_flush(t.node[NODE_A].iface, 0, NULL));

    for (i = 0; i < n; ++i) {
        value = i + 1;
        GDA_FT_ASSERT_OK(test_put_short(&t, &value, 8, 8 * i));
    }

    /* iface flush: in progress until every put is complete, then every one
     * is visible */
    GDA_FT_ASSERT_EQ(uct_iface_flush(t.node[NODE_A].iface, 0, NULL),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, uct_iface_flush(t.node[NODE_A].iface, 0, NULL) == UCS_OK,
              20000);
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], i + 1);
    }

    /* ep flush with a completion after more puts */
    for (i = 0; i < n; ++i) {
        value = 10 * i;
        test_put_short(&t, &value, 8, 8 * i);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 10 * i);
    }
    GDA_FT_ASSERT_OK(uct_ep_flush(t.node[NODE_A].ep, 0, NULL));
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_rma, fence_orders_atomic_before_get)
{
    test_unpack_arg_t arg;
    uint64_t got = 0, result;
    test_comp_t comp;
    test_uct_t t;
    unsigned round;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    *(volatile uint64_t*)(t.node[NODE_B].buf + 64) = 5;
    for (round = 1; round <= 50; ++round) {
        /* fetch-add, fence, get: the get must see the add */
        test_comp_init(&comp, 2);
        GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t.node[NODE_A].ep,
                                               UCT_ATOMIC_OP_ADD, 1, &result,
                                               raddr_b(&t, 64), rkey_b(&t),
                                               &comp.super),
                         UCS_INPROGRESS);
        GDA_FT_ASSERT_OK(uct_ep_fence(t.node[NODE_A].ep, 0));
        arg.dest   = (uint8_t*)&got;
        arg.length = 8;
        arg.calls  = 0;
        GDA_FT_ASSERT_EQ(uct_ep_get_bcopy(t.node[NODE_A].ep, test_unpack_cb,
                                          &arg, 8, raddr_b(&t, 64),
                                          rkey_b(&t), &comp.super),
                         UCS_INPROGRESS);
        TEST_WAIT(&t, comp.calls == 1, 10000);
        GDA_FT_ASSERT_OK(comp.super.status);
        GDA_FT_ASSERT_EQ(result, 4 + round);
        GDA_FT_ASSERT_EQ(got, 5 + round);
    }
    GDA_FT_ASSERT_OK(uct_iface_fence(t.node[NODE_A].iface, 0));
    test_uct_cleanup(&t);
}



static void test_pending_purge_cb(uct_pending_req_t *self, void *arg)
{
    test_pending_t *req = ucs_container_of(self, test_pending_t, super);

    ++req->purged;
    ++*(unsigned*)arg;
}

GDA_FT_TEST(uct_rma, pending_add_dispatch_purge)
{
    test_pending_t reqs[8];
    uint64_t value = 7;
    unsigned i, posted = 0, purged = 0;
    test_uct_t t;
    ucs_status_t status;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEVICE_CHANNEL_RING=64", NULL);
    test_uct_setup(&t);

    /* resources available: pending_add refuses */
    reqs[0].super.func = test_pending_cb;
    GDA_FT_ASSERT_EQ(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[0].super, 0),
                     UCS_ERR_BUSY);

    /* fill the host channel without progressing: its ring of 512 WQEBBs
     * (twice the largest operation, 16 MiB in 64 KiB chunks) takes puts of
     * one WQEBB while the largest operation still fits after them */
    while ((status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t))) ==
           UCS_OK) {
        ++posted;
    }
    GDA_FT_ASSERT_EQ(status, UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(posted, 512 - 256 + 1);

    for (i = 0; i < 8; ++i) {
        reqs[i].super.func = test_pending_cb;
        reqs[i].t          = &t;
        reqs[i].value      = 1000 + i;
        reqs[i].offset     = 64 + 8 * i;
        reqs[i].calls      = 0;
        reqs[i].purged     = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[i].super,
                                            0));
    }

    /* progress dispatches them in order as the ring drains */
    TEST_WAIT(&t, reqs[7].calls == 1, 10000);
    GDA_FT_ASSERT_OK(test_flush(&t));
    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 1);
        GDA_FT_ASSERT_EQ(((uint64_t*)(t.node[NODE_B].buf + 64))[i], 1000 + i);
    }

    /* purge: fill again, queue, purge; nothing runs later */
    while (uct_ep_put_short(t.node[NODE_A].ep, &value, 8, raddr_b(&t, 0),
                            rkey_b(&t)) == UCS_OK) {
    }
    for (i = 0; i < 8; ++i) {
        reqs[i].calls = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[i].super,
                                            0));
    }
    uct_ep_pending_purge(t.node[NODE_A].ep, test_pending_purge_cb, &purged);
    GDA_FT_ASSERT_EQ(purged, 8);
    GDA_FT_ASSERT_OK(test_flush(&t));
    for (i = 0; i < 8; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 0);
        GDA_FT_ASSERT_EQ(reqs[i].purged, 1);
    }
    test_uct_cleanup(&t);
}

/* Up to max gets of 256 KiB from B into A, one completion for all, as many
 * as A takes (at least one); returns how many */
static unsigned test_post_gets(test_uct_t *t, test_comp_t *comp,
                               unsigned max)
{
    ucs_status_t status;
    unsigned posted;
    uct_iov_t iov;

    test_comp_init(comp, 0);
    for (posted = 0; posted < max; ++posted) {
        iov.buffer = t->node[NODE_A].buf;
        iov.length = 256 * 1024;
        iov.memh   = t->node[NODE_A].memh;
        iov.stride = 0;
        iov.count  = 1;
        ++comp->super.count;
        status = uct_ep_get_zcopy(t->node[NODE_A].ep, &iov, 1,
                                  raddr_b(t, 0), rkey_b(t), &comp->super);
        if (status != UCS_INPROGRESS) {
            --comp->super.count;
            break;
        }
    }
    GDA_FT_ASSERT(posted > 0);
    return posted;
}

GDA_FT_TEST(uct_rma, flush_cancel)
{
    test_comp_t comp, flush_comp;
    test_uct_t t;
    ucs_status_t status;
    unsigned i, posted;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    posted = test_post_gets(&t, &comp, 32);

    test_comp_init(&flush_comp, 1);
    status = uct_ep_flush(t.node[NODE_A].ep, UCT_FLUSH_FLAG_CANCEL,
                          &flush_comp.super);
    if (status == UCS_INPROGRESS) {
        TEST_WAIT(&t, flush_comp.calls == 1, 10000);
    } else {
        GDA_FT_ASSERT_OK(status);
    }
    /* every get completed; none was seen complete before the cancel (no
     * progress in between), so they all completed as canceled */
    GDA_FT_ASSERT_EQ(comp.calls, 1);
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_CANCELED);
    /* the endpoint is unusable afterwards */
    GDA_FT_ASSERT(uct_ep_put_short(t.node[NODE_A].ep, &i, 4, raddr_b(&t, 0),
                                   rkey_b(&t)) != UCS_OK);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    printf("%u gets posted, completion status %s\n", posted,
           ucs_status_string(comp.super.status));
    test_uct_cleanup(&t);
}

/*
 * An endpoint destroyed before progress ran again completes what was in
 * flight and the flush(CANCEL) waiting for it, as canceled: UCP discards a
 * failed or closed endpoint with such a flush and releases it only when
 * its completion runs (a worker destroyed right after a force close
 * asserted on the endpoint still held).
 */
GDA_FT_TEST(uct_rma, destroy_completes_a_canceled_flush)
{
    test_comp_t comp, flush_comp;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    test_post_gets(&t, &comp, 8);

    test_comp_init(&flush_comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_flush(t.node[NODE_A].ep, UCT_FLUSH_FLAG_CANCEL,
                                  &flush_comp.super), UCS_INPROGRESS);
    GDA_FT_ASSERT_EQ(flush_comp.calls, 0);

    uct_ep_destroy(t.node[NODE_A].ep);
    t.node[NODE_A].ep = NULL;
    GDA_FT_ASSERT_EQ(comp.calls, 1);
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_CANCELED);
    GDA_FT_ASSERT_EQ(flush_comp.calls, 1);
    GDA_FT_ASSERT_EQ(flush_comp.super.status, UCS_ERR_CANCELED);
    test_uct_cleanup(&t);
}

/*
 * The keepalive probe is a zero-length RDMA WRITE to address 0, R_Key 0, as
 * rc_mlx5 posts it: no HCA checks the R_Key of a zero-length access.
 */
GDA_FT_TEST(uct_rma, ep_check_keeps_healthy_ep)
{
    test_counters_t counters;
    uint64_t value = 42;
    double end;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    GDA_FT_ASSERT_OK(uct_ep_check(t.node[NODE_A].ep, 0, NULL));
    end = soft_now_sec() + 0.3;
    while (soft_now_sec() < end) {
        test_progress(&t);
    }
    GDA_FT_ASSERT_OK(uct_iface_flush(t.node[NODE_A].iface, 0, NULL));
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    if ((t.node[NODE_A].errors != 0) || (counters.switches != 0)) {
        GDA_FT_FAIL("the zero-length RDMA WRITE probe failed %u path(s) and "
                    "the endpoint: the software HCA checks the R_Key of a "
                    "zero-length access, which hardware does not "
                    "(gda_ft_soft_resp.c, first packet of an RDMA WRITE and "
                    "RDMA READ request)", counters.switches + 1);
    }

    /* and the endpoint still works */
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(*(uint64_t*)t.node[NODE_B].buf, 42);
    test_uct_cleanup(&t);
}



/* ---- CUDA memory (GPU machines only) ------------------------------------- */

/* The few driver API entry points the test needs, loaded with dlopen */
typedef struct {
    int (*init)(unsigned);
    int (*device_get)(int*, int);
    int (*primary_ctx_retain)(void**, int);
    int (*ctx_set_current)(void*);
    int (*mem_alloc)(unsigned long long*, size_t);
    int (*mem_free)(unsigned long long);
    int (*memcpy_htod)(unsigned long long, const void*, size_t);
    int (*memcpy_dtoh)(void*, unsigned long long, size_t);
} test_cuda_t;

static int test_cuda_load(test_cuda_t *cu)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    void *ctx;
    int dev;

    if (handle == NULL) {
        return 0;
    }
    cu->init               = dlsym(handle, "cuInit");
    cu->device_get         = dlsym(handle, "cuDeviceGet");
    cu->primary_ctx_retain = dlsym(handle, "cuDevicePrimaryCtxRetain");
    cu->ctx_set_current    = dlsym(handle, "cuCtxSetCurrent");
    cu->mem_alloc          = dlsym(handle, "cuMemAlloc_v2");
    cu->mem_free           = dlsym(handle, "cuMemFree_v2");
    cu->memcpy_htod        = dlsym(handle, "cuMemcpyHtoD_v2");
    cu->memcpy_dtoh        = dlsym(handle, "cuMemcpyDtoH_v2");
    if ((cu->init == NULL) || (cu->memcpy_dtoh == NULL) ||
        (cu->init(0) != 0) || (cu->device_get(&dev, 0) != 0) ||
        (cu->primary_ctx_retain(&ctx, dev) != 0) ||
        (cu->ctx_set_current(ctx) != 0)) {
        return 0;
    }
    return 1;
}

GDA_FT_TEST(uct_rma, cuda_memory_put_get)
{
    const size_t len = 256 * 1024;
    unsigned long long dbuf;
    uct_rkey_bundle_t drkey;
    uint8_t drkey_buf[64], *host;
    uct_mem_h dmemh;
    test_comp_t comp;
    test_cuda_t cu;
    uct_iov_t iov;
    test_uct_t t;

    if (!test_cuda_load(&cu)) {
        GDA_FT_SKIP_UNAVAILABLE("no CUDA driver or no GPU");
    }

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    GDA_FT_ASSERT(t.node[NODE_A].md_attr.cap.reg_mem_types &
                  UCS_BIT(UCS_MEMORY_TYPE_CUDA));

    /* A's CUDA buffer, registered on both HCAs as CUDA memory */
    host = malloc(len);
    GDA_FT_ASSERT_EQ(cu.mem_alloc(&dbuf, len), 0);
    soft_fill(host, len, 900);
    GDA_FT_ASSERT_EQ(cu.memcpy_htod(dbuf, host, len), 0);
    GDA_FT_ASSERT_OK(uct_md_mem_reg(t.node[NODE_A].md, (void*)dbuf, len,
                                    UCT_MD_MEM_ACCESS_ALL, &dmemh));

    /* zero-copy put from GPU memory into B's host memory */
    iov.buffer = (void*)dbuf;
    iov.length = len;
    iov.memh   = dmemh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0), rkey_b(&t),
                                      &comp.super),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf, host, len);

    /* zero-copy get from B's host memory into GPU memory */
    soft_fill(t.node[NODE_B].buf + len, len, 901);
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, len), rkey_b(&t),
                                      &comp.super),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_EQ(cu.memcpy_dtoh(host, dbuf, len), 0);
    GDA_FT_ASSERT_MEM_EQ(host, t.node[NODE_B].buf + len, len);

    /* B writes into A's GPU memory through its packed rkey */
    GDA_FT_ASSERT_OK(uct_md_mkey_pack(t.node[NODE_A].md, dmemh, drkey_buf));
    GDA_FT_ASSERT_OK(uct_rkey_unpack(t.comp, drkey_buf, &drkey));
    soft_fill(host, 64, 902);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_B].ep, host, 64,
                                      (uintptr_t)dbuf + 128, drkey.rkey));
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_flush(t.node[NODE_B].ep, 0, &comp.super),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, comp.calls == 1, 20000);
    GDA_FT_ASSERT_EQ(cu.memcpy_dtoh(host + 64, dbuf + 128, 64), 0);
    GDA_FT_ASSERT_MEM_EQ(host + 64, host, 64);

    uct_rkey_release(t.comp, &drkey);
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(t.node[NODE_A].md, dmemh));
    GDA_FT_ASSERT_EQ(cu.mem_free(dbuf), 0);
    free(host);
    test_uct_cleanup(&t);
}

/* Puts one word and flushes, progressing until it is accepted */
