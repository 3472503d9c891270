/*
 * The gda_ft UCT transport through the UCT API, in one process, on software
 * HCAs (uct_harness.h). Every operation's data or result is compared with
 * what it must be.
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


/* ---- out-of-band wireup channel ------------------------------------------ */

/* UCX 1.13 names no synchronous flag: a handler without ASYNC is one */
#define TEST_CB_SYNC 0

typedef struct {
    unsigned  calls;
    uint32_t  next;      /* sequence number expected next */
    unsigned  bad;       /* out of order or wrong content */
    pthread_t thread;    /* that ran the last call */
} test_oob_rx_t;

typedef struct {
    uint32_t seq;
    size_t   length;
} test_oob_msg_t;

static uint8_t test_oob_byte(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 7 + i);
}

static size_t test_oob_pack(void *dest, void *arg)
{
    const test_oob_msg_t *msg = arg;
    uint8_t *p                = dest;
    size_t i;

    memcpy(p, &msg->seq, sizeof(msg->seq));
    for (i = sizeof(msg->seq); i < msg->length; ++i) {
        p[i] = test_oob_byte(msg->seq, i);
    }
    return msg->length;
}

static ucs_status_t test_oob_am_cb(void *arg, void *data, size_t length,
                                   unsigned flags)
{
    test_oob_rx_t *rx = arg;
    const uint8_t *p  = data;
    uint32_t seq;
    size_t i;

    memcpy(&seq, p, sizeof(seq));
    rx->bad += (seq != rx->next);
    for (i = sizeof(seq); i < length; ++i) {
        rx->bad += (p[i] != test_oob_byte(seq, i));
    }
    ++rx->next;
    rx->thread = pthread_self();
    __atomic_add_fetch(&rx->calls, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

/* Sends from A, progressing both sides while A's queue is full */
static void test_oob_send(test_uct_t *t, uint8_t am_id, uint32_t seq,
                          size_t length)
{
    test_oob_msg_t msg = {seq, length};
    ssize_t ret;

    while ((ret = uct_ep_am_bcopy(t->node[NODE_A].ep, am_id, test_oob_pack,
                                  &msg, 0)) == UCS_ERR_NO_RESOURCE) {
        test_progress(t);
    }
    GDA_FT_ASSERT_EQ(ret, (ssize_t)length);
}

/* A's endpoint to B's interface, both the out-of-band channel */
static void test_oob_setup(test_uct_t *t)
{
    uint8_t dev_addr[64], iface_addr[64];
    uct_ep_params_t ep_params;

    test_uct_env(t, 4, NULL);
    test_node_open(t, &t->node[NODE_A], "gda_ft_tsoft0", "tsoft0:oob");
    test_node_open(t, &t->node[NODE_B], "gda_ft_tsoft2", "tsoft2:oob");
    GDA_FT_ASSERT(t->node[NODE_B].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    GDA_FT_ASSERT(t->node[NODE_B].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_CB_ASYNC);

    GDA_FT_ASSERT_OK(uct_iface_get_device_address(
            t->node[NODE_B].iface, (uct_device_addr_t*)dev_addr));
    GDA_FT_ASSERT_OK(uct_iface_get_address(t->node[NODE_B].iface,
                                           (uct_iface_addr_t*)iface_addr));
    GDA_FT_ASSERT(uct_iface_is_reachable(t->node[NODE_A].iface,
                                         (uct_device_addr_t*)dev_addr,
                                         (uct_iface_addr_t*)iface_addr));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = t->node[NODE_A].iface;
    ep_params.dev_addr   = (uct_device_addr_t*)dev_addr;
    ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
    GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &t->node[NODE_A].ep));
}

static void test_oob_cleanup(test_uct_t *t)
{
    test_node_close(t, &t->node[NODE_A]);
    if (t->node[NODE_B].iface != NULL) {
        test_node_close(t, &t->node[NODE_B]);
    }
}

GDA_FT_TEST(uct_oob, messages_arrive_in_order_sync_and_async)
{
    test_oob_rx_t sync_rx = {0}, async_rx = {0};
    double deadline;
    test_uct_t t;
    uint32_t i;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &sync_rx,
                                              TEST_CB_SYNC));
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                              test_oob_am_cb, &async_rx,
                                              UCT_CB_FLAG_ASYNC));

    /* every size up to the largest, in order, run by B's progress */
    for (i = 0; i < 300; ++i) {
        test_oob_send(&t, 5, i, (i == 299) ? UCT_GDA_FT_OOB_MAX_PAYLOAD :
                                sizeof(uint32_t) + (i * 331) % 65000);
    }
    TEST_WAIT(&t, sync_rx.calls == 300, 10000);
    GDA_FT_ASSERT_EQ(sync_rx.bad, 0);
    GDA_FT_ASSERT(pthread_equal(sync_rx.thread, pthread_self()));

    /* an asynchronous handler runs without B's progress, in UCX's async
     * thread */
    for (i = 0; i < 10; ++i) {
        test_oob_send(&t, 6, i, 100 + i);
    }
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&async_rx.calls, __ATOMIC_ACQUIRE) < 10) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(async_rx.bad, 0);
    GDA_FT_ASSERT(!pthread_equal(async_rx.thread, pthread_self()));
    GDA_FT_ASSERT_EQ(sync_rx.calls, 300);
    test_oob_cleanup(&t);
}

/*
 * A message that arrives while the receiver's async context is blocked (in
 * loopback, by the sender's own am_bcopy) finds UCX's async thread unable to
 * run the connection's handler; UCX keeps the event for the next progress
 * and the edge-triggered socket raises no other. The asynchronous handler
 * must still run without progress (UCX's am_async on oob/loopback failed
 * with "prev_am_count+1" when it did not).
 */
GDA_FT_TEST(uct_oob, async_handler_runs_after_an_event_met_a_blocked_context)
{
    test_oob_rx_t rx = {0};
    double deadline;
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                              test_oob_am_cb, &rx,
                                              UCT_CB_FLAG_ASYNC));

    /* the connection is accepted and watched: the first message came */
    test_oob_send(&t, 6, 0, 100);
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < 1) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }

    /* the second arrives while B's context is blocked */
    UCS_ASYNC_BLOCK(t.node[NODE_B].async);
    test_oob_send(&t, 6, 1, 101);
    usleep(300000);
    GDA_FT_ASSERT_EQ(__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE), 1);
    UCS_ASYNC_UNBLOCK(t.node[NODE_B].async);

    /* within a few OOB_ASYNC_TICKs (100 ms), with no progress of B */
    deadline = soft_now_sec() + 2;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < 2) {
        if (soft_now_sec() > deadline) {
            GDA_FT_FAIL("the message that met a blocked async context was "
                        "not handled in 2 s without progress");
        }
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT(!pthread_equal(rx.thread, pthread_self()));
    test_oob_cleanup(&t);
}

GDA_FT_TEST(uct_oob, malformed_addresses_are_refused)
{
    uint8_t iface_addr[64], junk[64];
    uct_ep_params_t ep_params;
    uct_ep_h ep;
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_get_address(t.node[NODE_B].iface,
                                           (uct_iface_addr_t*)iface_addr));

    /* an HCA's device address is not reachable over the channel, and an
     * endpoint to garbage is refused */
    memset(junk, 0, sizeof(junk));
    junk[0] = 1;
    junk[1] = 0x02;     /* an IPv4-form HCA address */
    GDA_FT_ASSERT(!uct_iface_is_reachable(t.node[NODE_A].iface,
                                          (uct_device_addr_t*)junk,
                                          (uct_iface_addr_t*)iface_addr));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = t.node[NODE_A].iface;
    ep_params.dev_addr   = (uct_device_addr_t*)junk;
    ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
    GDA_FT_ASSERT(uct_ep_create(&ep_params, &ep) != UCS_OK);
    test_oob_cleanup(&t);
}

/* A stranger's connection to B's listener */
static int test_oob_stranger(test_uct_t *t)
{
    uint8_t dev_addr[64], iface_addr[64];
    struct sockaddr_in sa;
    int fd;

    GDA_FT_ASSERT_OK(uct_iface_get_device_address(
            t->node[NODE_B].iface, (uct_device_addr_t*)dev_addr));
    GDA_FT_ASSERT_OK(uct_iface_get_address(t->node[NODE_B].iface,
                                           (uct_iface_addr_t*)iface_addr));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    memcpy(&sa.sin_addr, dev_addr + 2, 4);
    memcpy(&sa.sin_port, iface_addr, 2);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    GDA_FT_ASSERT(fd >= 0);
    GDA_FT_ASSERT_EQ(connect(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    return fd;
}

typedef void (*test_oob_stats_func_t)(uct_iface_h, uct_gda_ft_oob_stats_t*);

static uct_gda_ft_oob_stats_t test_oob_stats(test_uct_t *t)
{
    test_oob_stats_func_t func;
    uct_gda_ft_oob_stats_t stats;

    func = (test_oob_stats_func_t)dlsym(t->plugin,
                                        "uct_gda_ft_oob_iface_stats");
    GDA_FT_ASSERT(func != NULL);
    func(t->node[NODE_B].iface, &stats);
    return stats;
}

static size_t test_open_fds(void)
{
    struct dirent *entry;
    size_t count = 0;
    DIR *dir      = opendir("/proc/self/fd");

    GDA_FT_ASSERT(dir != NULL);
    while ((entry = readdir(dir)) != NULL) {
        count += (entry->d_name[0] != '.');
    }
    closedir(dir);
    return count;
}

/*
 * Strangers on the listener: junk is refused, half a message is dropped
 * when its connection ends, and 200 connections that come and go leave
 * no descriptor behind; each is counted, and the real peer's messages keep
 * arriving, each once, in between and after.
 */
GDA_FT_TEST(uct_oob, strangers_are_refused_counted_and_freed)
{
    uct_gda_ft_wire_oob_hdr_t hdr;
    uct_gda_ft_oob_stats_t stats;
    test_oob_rx_t rx = {0};
    uint8_t junk[64];
    size_t fds_before;
    test_uct_t t;
    int fd, i;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));
    test_oob_send(&t, 5, 0, 64);
    TEST_WAIT(&t, rx.calls == 1, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.accepted, 1);   /* A's endpoint */
    GDA_FT_ASSERT_EQ(stats.open, 1);

    /* junk: refused, the connection closed by B */
    fd = test_oob_stranger(&t);
    memset(junk, 0x5a, sizeof(junk));
    GDA_FT_ASSERT_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    TEST_WAIT(&t, recv(fd, junk, sizeof(junk), MSG_DONTWAIT) == 0, 5000);
    close(fd);
    TEST_WAIT(&t, test_oob_stats(&t).open == 1, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.refused, 1);
    GDA_FT_ASSERT_EQ(stats.truncated, 0);

    /* a valid header promising 1000 bytes, 10 of them, then the end */
    fd = test_oob_stranger(&t);
    uct_gda_ft_wire_oob_hdr_pack(5, 1000, &hdr);
    GDA_FT_ASSERT_EQ(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    GDA_FT_ASSERT_EQ(write(fd, junk, 10), 10);
    test_oob_send(&t, 5, 1, 64);
    TEST_WAIT(&t, rx.calls == 2, 5000);
    close(fd);
    TEST_WAIT(&t, test_oob_stats(&t).truncated == 1, 5000);
    TEST_WAIT(&t, test_oob_stats(&t).open == 1, 5000);
    GDA_FT_ASSERT_EQ(rx.calls, 2);   /* the half message ran no handler */

    /* a flood of connections: half send junk, half nothing */
    fds_before = test_open_fds();
    for (i = 0; i < 200; ++i) {
        fd = test_oob_stranger(&t);
        if (i & 1) {
            GDA_FT_ASSERT_EQ(write(fd, junk, 16), 16);
        }
        close(fd);
        if ((i % 20) == 0) {
            test_oob_send(&t, 5, 2 + i / 20, 64);
        }
    }
    TEST_WAIT(&t, (test_oob_stats(&t).accepted == 203) &&
                  (test_oob_stats(&t).open == 1), 10000);
    TEST_WAIT(&t, rx.calls == 12, 5000);
    stats = test_oob_stats(&t);
    GDA_FT_ASSERT_EQ(stats.refused, 101);
    GDA_FT_ASSERT_EQ(stats.truncated, 1);
    GDA_FT_ASSERT(test_open_fds() <= fds_before);
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_oob_cleanup(&t);
}

GDA_FT_TEST(uct_oob, peer_gone_is_an_endpoint_error)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg = {0, 8};
    test_uct_t t;

    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));
    test_oob_send(&t, 5, 0, 8);
    TEST_WAIT(&t, rx.calls == 1, 5000);

    /* B goes away: A's error handler hears of it once */
    test_node_close(&t, &t.node[NODE_B]);
    t.node[NODE_B].iface  = NULL;
    t.node[NODE_B].worker = NULL;
    TEST_WAIT(&t, t.node[NODE_A].errors == 1, 5000);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_CONNECTION_RESET);
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), UCS_ERR_CONNECTION_RESET);
    uct_worker_progress(t.node[NODE_A].worker);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 1);
    test_oob_cleanup(&t);
}

/* ---- resources ----------------------------------------------------------- */

GDA_FT_TEST(uct_ops, resources_and_capabilities)
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
    GDA_FT_ASSERT_EQ(attr->ep_addr_len, 24);  /* QPNs and mailbox */
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

GDA_FT_TEST(uct_ops, rkey_and_address_checks)
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

GDA_FT_TEST(uct_ops, put_short)
{
    static const unsigned sizes[] = {0, 1, 7, 8, 64, 100, 128};
    uint8_t data[128];
    test_uct_t t;
    ucs_status_t status;
    size_t offset = 0;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        soft_fill(data, sizes[i], 100 + i);
        do {
            status = uct_ep_put_short(t.node[NODE_A].ep, data, sizes[i],
                                      raddr_b(&t, offset), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
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

typedef struct {
    const uint8_t *src;
    size_t         length;
} test_pack_arg_t;

static size_t test_pack_cb(void *dest, void *arg)
{
    test_pack_arg_t *pack = arg;

    memcpy(dest, pack->src, pack->length);
    return pack->length;
}

GDA_FT_TEST(uct_ops, put_bcopy)
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

GDA_FT_TEST(uct_ops, put_zcopy)
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

typedef struct {
    uint8_t *dest;
    size_t   length;
    unsigned calls;
} test_unpack_arg_t;

static void test_unpack_cb(void *arg, const void *data, size_t length)
{
    test_unpack_arg_t *unpack = arg;

    GDA_FT_ASSERT_EQ(length, unpack->length);
    memcpy(unpack->dest, data, length);
    ++unpack->calls;
}

GDA_FT_TEST(uct_ops, get_bcopy)
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

GDA_FT_TEST(uct_ops, get_zcopy)
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


/* ---- atomics ------------------------------------------------------------- */

static uint64_t test_amo_apply(unsigned opcode, uint64_t old, uint64_t value,
                               uint64_t compare, uint64_t mask)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:   return (old + value) & mask;
    case UCT_ATOMIC_OP_AND:   return old & value;
    case UCT_ATOMIC_OP_OR:    return old | value;
    case UCT_ATOMIC_OP_XOR:   return old ^ value;
    case UCT_ATOMIC_OP_SWAP:  return value;
    case UCT_ATOMIC_OP_CSWAP: return (old == compare) ? value : old;
    }
    GDA_FT_FAIL("bad opcode %u", opcode);
}

static const char *test_amo_name(unsigned opcode)
{
    static const char *names[] = {"add", "and", "or", "xor", "swap",
                                  "cswap"};
    return names[opcode];
}

/* One atomic of `size` bytes on B's memory: post (fetch == 0) or fetch */
static void test_amo_one(test_uct_t *t, unsigned opcode, unsigned size,
                         int fetch, uint64_t init, uint64_t value,
                         uint64_t compare)
{
    uint64_t mask     = (size == 4) ? UINT32_MAX : UINT64_MAX;
    uint64_t expected = test_amo_apply(opcode, init & mask, value & mask,
                                       compare & mask, mask);
    uint64_t raddr    = raddr_b(t, 4096 + 8 * opcode);
    uct_ep_h ep       = t->node[NODE_A].ep;
    uint64_t result64 = 0xdeadbeefdeadbeefull, remote;
    uint32_t result32 = 0xdeadbeef;
    test_comp_t comp;
    ucs_status_t status;

    if (size == 4) {
        *(uint32_t*)(uintptr_t)raddr = (uint32_t)init;
    } else {
        *(uint64_t*)(uintptr_t)raddr = init;
    }

    test_comp_init(&comp, 1);
    if (opcode == UCT_ATOMIC_OP_CSWAP) {
        status = (size == 4) ?
                 uct_ep_atomic_cswap32(ep, (uint32_t)compare, (uint32_t)value,
                                       raddr, rkey_b(t), &result32,
                                       &comp.super) :
                 uct_ep_atomic_cswap64(ep, compare, value, raddr, rkey_b(t),
                                       &result64, &comp.super);
    } else if (fetch) {
        status = (size == 4) ?
                 uct_ep_atomic32_fetch(ep, opcode, (uint32_t)value, &result32,
                                       raddr, rkey_b(t), &comp.super) :
                 uct_ep_atomic64_fetch(ep, opcode, value, &result64, raddr,
                                       rkey_b(t), &comp.super);
    } else {
        status = (size == 4) ?
                 uct_ep_atomic32_post(ep, opcode, (uint32_t)value, raddr,
                                      rkey_b(t)) :
                 uct_ep_atomic64_post(ep, opcode, value, raddr, rkey_b(t));
    }

    if (fetch || (opcode == UCT_ATOMIC_OP_CSWAP)) {
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        TEST_WAIT(t, comp.calls == 1, 10000);
        GDA_FT_ASSERT_OK(comp.super.status);
        if (size == 4) {
            if (result32 != (uint32_t)init) {
                GDA_FT_FAIL("%s32: fetched 0x%x, expected 0x%x",
                            test_amo_name(opcode), result32, (uint32_t)init);
            }
        } else if (result64 != init) {
            GDA_FT_FAIL("%s64: fetched 0x%lx, expected 0x%lx",
                        test_amo_name(opcode), result64, init);
        }
    } else {
        GDA_FT_ASSERT_OK(status);
        GDA_FT_ASSERT_OK(test_flush(t));
    }

    remote = (size == 4) ? *(volatile uint32_t*)(uintptr_t)raddr :
                           *(volatile uint64_t*)(uintptr_t)raddr;
    if (remote != expected) {
        GDA_FT_FAIL("%s%u (%s): remote 0x%lx, expected 0x%lx (init 0x%lx "
                    "value 0x%lx)", test_amo_name(opcode), size * 8,
                    fetch ? "fetch" : "post", remote, expected, init, value);
    }
    /* the neighbour of a 4-byte atomic is untouched */
    if (size == 4) {
        GDA_FT_ASSERT_EQ(*(volatile uint32_t*)(uintptr_t)(raddr + 4), 0);
    }
}

GDA_FT_TEST(uct_ops, atomics_every_op_and_size)
{
    static const uint64_t inits[]  = {0x0123456789abcdefull,
                                      0xfffffffffffffff0ull, 0};
    static const uint64_t values[] = {0x00ff00ff00ff00ffull, 0x11,
                                      0xffffffffffffffffull};
    unsigned opcode, size, fetch, i;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    for (size = 4; size <= 8; size += 4) {
        for (opcode = UCT_ATOMIC_OP_ADD; opcode <= UCT_ATOMIC_OP_XOR;
             ++opcode) {
            for (fetch = 0; fetch <= 1; ++fetch) {
                for (i = 0; i < 3; ++i) {
                    test_amo_one(&t, opcode, size, fetch, inits[i],
                                 values[i], 0);
                }
            }
        }
        for (i = 0; i < 3; ++i) {
            test_amo_one(&t, UCT_ATOMIC_OP_SWAP, size, 1, inits[i],
                         values[i], 0);
            /* compare equal (swaps) and not equal (keeps) */
            test_amo_one(&t, UCT_ATOMIC_OP_CSWAP, size, 1, inits[i],
                         values[i], inits[i]);
            test_amo_one(&t, UCT_ATOMIC_OP_CSWAP, size, 1, inits[i],
                         values[i], inits[i] ^ 1);
        }
    }
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, atomic_add_many_counts_exactly)
{
    const unsigned n = 2000;
    volatile uint64_t *counter;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    counter  = (volatile uint64_t*)(t.node[NODE_B].buf + 512);
    *counter = 1000;
    for (i = 0; i < n; ++i) {
        do {
            status = uct_ep_atomic64_post(t.node[NODE_A].ep,
                                          UCT_ATOMIC_OP_ADD, 3,
                                          raddr_b(&t, 512), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(*counter, 1000 + 3ull * n);
    test_uct_cleanup(&t);
}


/* ---- flush, fence, pending ----------------------------------------------- */

GDA_FT_TEST(uct_ops, flush_ep_and_iface)
{
    const unsigned n = 600;
    uint64_t value;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);

    /* nothing outstanding: both flushes complete at once */
    GDA_FT_ASSERT_OK(uct_ep_flush(t.node[NODE_A].ep, 0, NULL));
    GDA_FT_ASSERT_OK(uct_iface_flush(t.node[NODE_A].iface, 0, NULL));

    for (i = 0; i < n; ++i) {
        value = i + 1;
        do {
            status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 8 * i), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
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
        do {
            status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 8 * i), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 10 * i);
    }
    GDA_FT_ASSERT_OK(uct_ep_flush(t.node[NODE_A].ep, 0, NULL));
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, fence_orders_atomic_before_get)
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

typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint64_t          value;
    size_t            offset;
    unsigned          calls;
    unsigned          purged;
} test_pending_t;

static ucs_status_t test_pending_cb(uct_pending_req_t *self)
{
    test_pending_t *req = ucs_container_of(self, test_pending_t, super);
    ucs_status_t status;

    status = uct_ep_put_short(req->t->node[NODE_A].ep, &req->value, 8,
                              raddr_b(req->t, req->offset),
                              rkey_b(req->t));
    if (status == UCS_OK) {
        ++req->calls;
    }
    return status;
}

static void test_pending_purge_cb(uct_pending_req_t *self, void *arg)
{
    test_pending_t *req = ucs_container_of(self, test_pending_t, super);

    ++req->purged;
    ++*(unsigned*)arg;
}

GDA_FT_TEST(uct_ops, pending_add_dispatch_purge)
{
    test_pending_t reqs[8];
    uint64_t value = 7;
    unsigned i, posted = 0, purged = 0;
    test_uct_t t;
    ucs_status_t status;

    test_uct_env(&t, 4, "UCX_GDA_FT_LOG_SIZE=16", NULL);
    test_uct_setup(&t);

    /* resources available: pending_add refuses */
    reqs[0].super.func = test_pending_cb;
    GDA_FT_ASSERT_EQ(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[0].super, 0),
                     UCS_ERR_BUSY);

    /* fill the endpoint's 16-operation log without progressing; two
     * entries stay for the guardian's mailbox writes */
    while ((status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t))) ==
           UCS_OK) {
        ++posted;
    }
    GDA_FT_ASSERT_EQ(status, UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(posted, 14);

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

    /* progress dispatches them in order as the log drains */
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

GDA_FT_TEST(uct_ops, flush_cancel)
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
GDA_FT_TEST(uct_ops, destroy_completes_a_canceled_flush)
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
GDA_FT_TEST(uct_ops, ep_check_keeps_healthy_ep)
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


/* ---- failover through the UCT API ---------------------------------------- */

/* A failover before the fault would make the rest meaningless */
static void test_assert_no_switch(test_uct_t *t, const char *when)
{
    test_counters_t counters;

    GDA_FT_ASSERT_OK(t->query_counters(t->node[NODE_A].ep, &counters));
    if (counters.switches != 0) {
        GDA_FT_FAIL("failover during %s, before any fault: the soft HCA "
                    "made no progress for a whole deadline (overloaded "
                    "machine?)", when);
    }
}

GDA_FT_TEST(uct_ops, primary_down_fails_over_without_loss)
{
    const unsigned n = 400;
    test_counters_t counters, iface_counters;
    test_comp_t comp;
    uint64_t value;
    uct_iov_t iov;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 NULL);
    test_uct_setup(&t);

    /* warm up the primary path */
    value = 1;
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    /* the primary port of A dies; puts keep flowing */
    test_port_set(&t, "tsoft0", 0);
    for (i = 0; i < n; ++i) {
        value = 0x1000 + i;
        do {
            status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 8 * i), rkey_b(&t));
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
    }
    soft_fill(t.node[NODE_A].buf + 65536, 100000, 77);
    iov.buffer = t.node[NODE_A].buf + 65536;
    iov.length = 100000;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 1);
    do {
        status = uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                  raddr_b(&t, 65536), rkey_b(&t),
                                  &comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            test_progress(&t);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(comp.calls, 1);
    GDA_FT_ASSERT_OK(comp.super.status);

    for (i = 0; i < n; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 0x1000 + i);
    }
    GDA_FT_ASSERT_MEM_EQ(t.node[NODE_B].buf + 65536,
                         t.node[NODE_A].buf + 65536, 100000);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.replays >= 1);
    GDA_FT_ASSERT_EQ(counters.no_path, 0);
    GDA_FT_ASSERT_OK(t.query_iface_counters(t.node[NODE_A].iface,
                                            &iface_counters));
    GDA_FT_ASSERT_EQ(iface_counters.switches, 1);
    GDA_FT_ASSERT_EQ(iface_counters.replays, counters.replays);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    printf("switches %u, replays %u\n", counters.switches, counters.replays);
    test_uct_cleanup(&t);
}

/* An atomic posted into a dead primary: the peer never saw it */
static void test_atomic_into_dead_primary(test_uct_t *t, uint64_t *result,
                                          test_comp_t *comp)
{
    uint64_t value = 1000;

    GDA_FT_ASSERT_OK(uct_ep_put_short(t->node[NODE_A].ep, &value, 8,
                                      raddr_b(t, 0), rkey_b(t)));
    GDA_FT_ASSERT_OK(test_flush(t));
    test_assert_no_switch(t, "warm-up");

    test_port_set(t, "tsoft0", 0);
    test_comp_init(comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t->node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 1, result,
                                           raddr_b(t, 0), rkey_b(t),
                                           &comp->super),
                     UCS_INPROGRESS);
    TEST_WAIT(t, comp->calls == 1, 5000);
}

GDA_FT_TEST(uct_ops, atomic_lost_with_primary_is_replayed_once)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_atomic_into_dead_primary(&t, &result, &comp);

    /* B said it never executed it: it went over the backup, once */
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_EQ(result, 1000);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1001);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 0);
    GDA_FT_ASSERT(counters.replays >= 1);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, atomic_lost_without_resolution_completes_in_doubt)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", "UCX_GDA_FT_RESOLVE=n",
                 NULL);
    test_uct_setup(&t);
    test_atomic_into_dead_primary(&t, &result, &comp);

    /* never retried: an error, not a second application */
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(counters.switches, 1);

    /* the endpoint goes on over the backup path */
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t.node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 5, &result,
                                           raddr_b(&t, 8), rkey_b(&t),
                                           &comp.super),
                     UCS_INPROGRESS);
    TEST_WAIT(&t, comp.calls == 1, 5000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1000);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, atomic_executed_with_lost_reply_is_in_doubt)
{
    test_counters_t counters;
    test_comp_t comp;
    uint64_t result = 0, value = 1000;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    /* B executes both atomics; its answers never reach A */
    test_port_lose_answers(&t, "tsoft2");
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_atomic64_fetch(t.node[NODE_A].ep,
                                           UCT_ATOMIC_OP_ADD, 1, &result,
                                           raddr_b(&t, 0), rkey_b(&t),
                                           &comp.super),
                     UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(uct_ep_atomic64_post(t.node[NODE_A].ep,
                                          UCT_ATOMIC_OP_ADD, 10,
                                          raddr_b(&t, 0), rkey_b(&t)));
    TEST_WAIT(&t, comp.calls == 1, 5000);

    /* the old value is lost: the fetch is in doubt, never applied twice;
     * the posted add is known applied, so the flush succeeds */
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 1011);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 1);
    GDA_FT_ASSERT_EQ(counters.confirmed, 1);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, both_paths_down_reports_ep_error)
{
    double deadline = 0.2 * chan_world_time_scale();
    test_counters_t counters;
    test_comp_t comp;
    uint64_t value = 5;
    char env[64];
    uct_iov_t iov;
    test_uct_t t;
    double start, elapsed;

    /* the HCA retries for 8 x 1 s: the error must come from the deadlines */
    snprintf(env, sizeof(env), "UCX_GDA_FT_DEADLINE=%.0fms", deadline * 1e3);
    test_uct_env(&t, 4, env, "UCX_GDA_FT_TIMEOUT=1s", NULL);
    test_uct_setup(&t);

    test_port_set(&t, "tsoft0", 0);
    test_port_set(&t, "tsoft1", 0);
    start = soft_now_sec();

    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    iov.buffer = t.node[NODE_A].buf;
    iov.length = 4096;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0), rkey_b(&t),
                                      &comp.super),
                     UCS_INPROGRESS);

    /* two deadlines and half a deadline for a loaded machine, not the
     * hardware retry window */
    TEST_WAIT(&t, (comp.calls == 1) && (t.node[NODE_A].errors == 1), 3000);
    elapsed = soft_now_sec() - start;
    GDA_FT_ASSERT(elapsed <= 2.5 * deadline);
    GDA_FT_ASSERT_EQ(comp.super.status, UCS_ERR_ENDPOINT_TIMEOUT);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].last_error, UCS_ERR_ENDPOINT_TIMEOUT);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.no_path, 2);

    /* no more operations on it, and the error is reported once */
    GDA_FT_ASSERT_EQ(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)),
                     UCS_ERR_ENDPOINT_TIMEOUT);
    test_progress(&t);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 1);
    printf("endpoint error after %.0f ms (deadline %.0f ms)\n",
           elapsed * 1e3, deadline * 1e3);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, single_device_works_without_backup)
{
    test_counters_t counters;
    uint64_t value = 99;
    test_uct_t t;

    /* one HCA: two interfaces of its MD talk to each other */
    test_uct_env(&t, 1, NULL);
    test_node_open(&t, &t.node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(&t, &t.node[NODE_B], "gda_ft_tsoft0", "tsoft0:1");
    test_connect(&t);

    /* no backup key in the rkey */
    GDA_FT_ASSERT_EQ(t.rkey[NODE_B].rkey >> 32, 0);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(*(uint64_t*)t.node[NODE_B].buf, 99);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 0);
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

GDA_FT_TEST(uct_ops, cuda_memory_put_get)
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
static void test_put_word(test_uct_t *t, unsigned slot, uint64_t value)
{
    ucs_status_t status;

    do {
        status = uct_ep_put_short(t->node[NODE_A].ep, &value, 8,
                                  raddr_b(t, 8 * slot), rkey_b(t));
        if (status == UCS_ERR_NO_RESOURCE) {
            test_progress(t);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_OK(status);
    GDA_FT_ASSERT_OK(test_flush(t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t->node[NODE_B].buf)[slot], value);
}

/*
 * While a failover settles (the peer has not answered yet) the endpoint is
 * held: operations return NO_RESOURCE, pending_add queues (it must not
 * answer BUSY, or UCP retries at once forever), and a flush waits behind
 * the queued requests; once the peer answers, all of it goes, in order
 */
GDA_FT_TEST(uct_ops, settling_failover_holds_posts_and_flushes)
{
    test_counters_t counters = {0};
    uint64_t value = 5;
    test_pending_t req;
    test_comp_t comp;
    double deadline, switched;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_port_set(&t, "tsoft0", 0);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));

    /* only A progresses: it switches and asks B, who cannot answer */
    deadline = soft_now_sec() + 10;
    while (counters.switches == 0) {
        uct_worker_progress(t.node[NODE_A].worker);
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(100);
    }
    switched = soft_now_sec();

    GDA_FT_ASSERT_EQ(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 8), rkey_b(&t)),
                     UCS_ERR_NO_RESOURCE);
    req.super.func = test_pending_cb;
    req.t          = &t;
    req.value      = 77;
    req.offset     = 64;
    req.calls      = 0;
    req.purged     = 0;
    GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep, &req.super, 0));
    test_comp_init(&comp, 1);
    GDA_FT_ASSERT_EQ(uct_ep_flush(t.node[NODE_A].ep, 0, &comp.super),
                     UCS_ERR_NO_RESOURCE);
    /* for half the settlement's timeout (the deadline) nothing moves; a
     * machine that stalled this thread past the timeout settles without
     * B, and the hold cannot be seen */
    while (soft_now_sec() - switched < 0.1) {
        uct_worker_progress(t.node[NODE_A].worker);
        usleep(1000);
    }
    if (soft_now_sec() - switched < 0.2) {
        GDA_FT_ASSERT_EQ(req.calls, 0);
    } else {
        printf("stalled for %.0f ms: the hold was not checked\n",
               (soft_now_sec() - switched) * 1e3);
    }

    /* B answers: the put is replayed once, then the queued request runs */
    TEST_WAIT(&t, req.calls == 1, 10000);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[0], 5);
    GDA_FT_ASSERT_EQ(((uint64_t*)(t.node[NODE_B].buf + 64))[0], 77);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.replays, 1);
    test_uct_cleanup(&t);
}

/* Retries an operation while the endpoint has no room */
#define TEST_POST(_t, _call) \
    ({ \
        ucs_status_t __status; \
        while ((__status = (_call)) == UCS_ERR_NO_RESOURCE) { \
            test_progress(_t); \
        } \
        __status; \
    })

/*
 * The pattern of MPI one-sided epochs through a failover: a put of a block,
 * a get of a word elsewhere, a get of the block back, flushed; every get
 * must read its own remote address, before and after the switch
 */
GDA_FT_TEST(uct_ops, puts_and_gets_keep_their_addresses_through_failover)
{
    const size_t block = 8193, word_off = 0, block_off = 65536;
    const uint64_t word = 0x1122334455667788ull;
    uint8_t *src, *back;
    test_unpack_arg_t arg;
    test_counters_t counters;
    uint64_t got;
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    ucs_status_t status;
    unsigned it;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    memcpy(t.node[NODE_B].buf + word_off, &word, sizeof(word));
    src  = t.node[NODE_A].buf;
    back = t.node[NODE_A].buf + 2 * block_off;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;

    for (it = 0; it < 120; ++it) {
        if (it == 40) {
            test_port_set(&t, "tsoft0", 0);
        }
        soft_fill(src, block, it);
        memset(back, 0, block);
        got = 0;
        test_comp_init(&comp, 3);

        iov.buffer = src;
        iov.length = block;
        status = TEST_POST(&t, uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                                raddr_b(&t, block_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        arg.dest   = (uint8_t*)&got;
        arg.length = sizeof(got);
        arg.calls  = 0;
        status = TEST_POST(&t, uct_ep_get_bcopy(t.node[NODE_A].ep,
                                                test_unpack_cb, &arg,
                                                sizeof(got),
                                                raddr_b(&t, word_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        /* the get of the block must see the put before it: fence */
        GDA_FT_ASSERT_OK(uct_ep_fence(t.node[NODE_A].ep, 0));
        iov.buffer = back;
        status = TEST_POST(&t, uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                                raddr_b(&t, block_off),
                                                rkey_b(&t), &comp.super));
        GDA_FT_ASSERT_EQ(status, UCS_INPROGRESS);
        TEST_WAIT(&t, comp.calls == 1, 10000);
        GDA_FT_ASSERT_OK(comp.super.status);
        if (got != word) {
            GDA_FT_FAIL("iteration %u: the word read 0x%lx", it,
                        (unsigned long)got);
        }
        if (memcmp(back, src, block)) {
            GDA_FT_FAIL("iteration %u: the block read back differs", it);
        }
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    printf("replays %u, confirmed %u\n", counters.replays,
           counters.confirmed);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, failback_after_port_returns)
{
    test_counters_t a, b;
    double start, end;
    unsigned i = 0;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=50ms", NULL);
    test_uct_setup(&t);
    test_put_word(&t, i, 1000 + i);
    ++i;

    /* the primary port of A dies: one switch, the old QP fenced */
    test_port_set(&t, "tsoft0", 0);
    test_put_word(&t, i, 1000 + i);
    ++i;
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT(a.fences >= 1);

    /* while the port is down nothing fails back */
    for (start = soft_now_sec(); soft_now_sec() < start + 0.3;) {
        test_progress(&t);
        usleep(1000);
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.failbacks, 0);

    /* the port returns: the guardians re-arm, probe, wait, fail back */
    test_port_set(&t, "tsoft0", 1);
    start = soft_now_sec();
    do {
        test_put_word(&t, i, 1000 + i);
        ++i;
        for (end = soft_now_sec() + 0.01; soft_now_sec() < end;) {
            test_progress(&t);
        }
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
    } while (a.failbacks == 0);
    printf("failback %.0f ms after the port returned (%u puts)\n",
           (soft_now_sec() - start) * 1e3, i);

    /* traffic is on the primary again and keeps flowing */
    for (end = i + 20; i < end; ++i) {
        test_put_word(&t, i, 1000 + i);
    }
    /* A asked B to fence its end of the primary (resolution), so B left
     * it too, and returns to it with A */
    start = soft_now_sec();
    do {
        test_progress(&t);
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_B].ep, &b));
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
    } while (b.failbacks == 0);
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 1);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(b.no_path, 0);
    GDA_FT_ASSERT_EQ(b.switches, 1);
    GDA_FT_ASSERT_EQ(b.failbacks, 1);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_B].errors, 0);
    test_uct_cleanup(&t);
}

/* Puts until *counter, a field of *c (A's counters, refreshed), reaches
 * the value; returns how long it took */
static double test_put_until(test_uct_t *t, unsigned *slot,
                             test_counters_t *c, const uint32_t *counter,
                             uint32_t value)
{
    double start = soft_now_sec(), end;

    do {
        test_put_word(t, *slot % 512, 5000 + *slot);
        ++*slot;
        for (end = soft_now_sec() + 0.005; soft_now_sec() < end;) {
            test_progress(t);
        }
        GDA_FT_ASSERT_OK(t->query_counters(t->node[NODE_A].ep, c));
        GDA_FT_ASSERT(soft_now_sec() < start + 20);
    } while (*counter < value);
    return soft_now_sec() - start;
}

/* A's primary fails and comes back, then flaps right after failing back;
 * *first and *second get how long each failback took from the switch */
static void test_fail_back_twice(test_uct_t *t, test_counters_t *a,
                                 double *first, double *second)
{
    unsigned slot = 0;

    test_port_set(t, "tsoft0", 0);
    test_put_until(t, &slot, a, &a->switches, 1);
    test_port_set(t, "tsoft0", 1);
    *first = test_put_until(t, &slot, a, &a->failbacks, 1);
    test_port_set(t, "tsoft0", 0);
    test_put_until(t, &slot, a, &a->switches, 2);
    test_port_set(t, "tsoft0", 1);
    *second = test_put_until(t, &slot, a, &a->failbacks, 2);
}

GDA_FT_TEST(uct_ops, failback_is_damped_when_the_path_flaps)
{
    test_counters_t a = {0};
    double first, second;
    test_uct_t t;

    /* back-off 200 ms and recovery window 100 ms: a failback comes at
     * least 300 ms after its failover; a path failing again within ten
     * recovery windows of a failback waits twice as long (>= 500 ms).
     * Timed from when the test sees the switch: a few ms later than it. */
    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=200ms", NULL);
    test_uct_setup(&t);

    test_fail_back_twice(&t, &a, &first, &second);

    printf("failback after %.0f ms, after the flap %.0f ms\n", first * 1e3,
           second * 1e3);
    GDA_FT_ASSERT(first >= 0.3 - 0.02);
    GDA_FT_ASSERT(second >= 0.5 - 0.02);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}


/*
 * REARM_BACKOFF_MAX caps the doubled back-off: with 200 ms doubling to
 * 400 ms after the flap but a cap of 250 ms, the second failback comes
 * after the capped wait and the recovery window (>= 350 ms), and before
 * the uncapped one would allow (500 ms).
 */
GDA_FT_TEST(uct_ops, rearm_backoff_max_caps_the_damping)
{
    test_counters_t a = {0};
    double first, second;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=200ms",
                 "UCX_GDA_FT_REARM_BACKOFF_MAX=250ms", NULL);
    test_uct_setup(&t);

    test_fail_back_twice(&t, &a, &first, &second);

    printf("failback after %.0f ms, after the flap %.0f ms (cap 250 ms)\n",
           first * 1e3, second * 1e3);
    GDA_FT_ASSERT(first >= 0.3 - 0.02);
    GDA_FT_ASSERT(second >= 0.35 - 0.02);
    GDA_FT_ASSERT(second < 0.5 - 0.02);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}

/*
 * STRICT_FENCE without RESOLVE: the abandoned QP is fenced before the
 * replay (what the setting promises of this end), the puts of the window
 * land once on the backup, and every word holds its last put.
 */
GDA_FT_TEST(uct_ops, strict_fence_replays_after_the_local_fence)
{
    test_counters_t a = {0};
    unsigned slot = 0, i;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_STRICT_FENCE=y", "UCX_GDA_FT_RESOLVE=n", NULL);
    test_uct_setup(&t);

    test_port_set(&t, "tsoft0", 0);
    test_put_until(&t, &slot, &a, &a.switches, 1);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.fences, 1);
    GDA_FT_ASSERT(a.replays >= 1);
    GDA_FT_ASSERT_EQ(a.confirmed, 0);   /* nobody asked the peer */
    for (i = 0; (i < slot) && (i < 512); ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i],
                         5000 + i + 512 * ((slot - 1 - i) / 512));
    }
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    test_uct_cleanup(&t);
}

/* ---- active messages ----------------------------------------------------- */

#define TEST_AM_ID        7
#define TEST_AM_MAX_LAST  (64 * 1024)

/* uct_gda_ft_am_counters_t of uct_gda_ft_iface.h */
typedef struct {
    uint32_t sent;
    uint32_t received;
    uint32_t duplicates;
    uint32_t reordered;
    uint32_t gaps;
} test_am_counters_t;

typedef ucs_status_t (*query_am_counters_func_t)(uct_ep_h,
                                                 test_am_counters_t*);

typedef struct {
    unsigned count;        /* messages delivered */
    unsigned errors;       /* content or order mismatches, DESC flags */
    uint64_t next;         /* stream: sequence number expected next */
    size_t   last_len;
    uint8_t  last[TEST_AM_MAX_LAST];
} test_am_rx_t;

typedef struct {
    const uint8_t *src;
    size_t         length;
} test_am_pack_t;

static ucs_status_t test_am_cb(void *arg, void *data, size_t length,
                               unsigned flags)
{
    test_am_rx_t *rx = arg;

    if ((flags & UCT_CB_PARAM_FLAG_DESC) || (length > TEST_AM_MAX_LAST)) {
        ++rx->errors;
        return UCS_OK;
    }
    memcpy(rx->last, data, length);
    rx->last_len = length;
    ++rx->count;
    return UCS_OK;
}

/* Stream messages start with their 8-byte sequence number; the rest of a
 * message is soft_fill()ed with the sequence number as the seed */
static ucs_status_t test_am_stream_cb(void *arg, void *data, size_t length,
                                      unsigned flags)
{
    test_am_rx_t *rx = arg;
    uint8_t expect[4096];
    uint64_t seq;

    if (length < sizeof(seq)) {
        ++rx->errors;
        return UCS_OK;
    }
    memcpy(&seq, data, sizeof(seq));
    if (seq != rx->next) {
        if (rx->errors++ < 5) {
            printf("message %" PRIu64 " arrived where %" PRIu64 " was "
                   "expected\n", seq, rx->next);
        }
    }
    if ((length - sizeof(seq)) <= sizeof(expect)) {
        soft_fill(expect, length - sizeof(seq), (unsigned)seq);
        if (memcmp(expect, UCS_PTR_BYTE_OFFSET(data, sizeof(seq)),
                   length - sizeof(seq))) {
            if (rx->errors++ < 5) {
                printf("message %" PRIu64 ": wrong content\n", seq);
            }
        }
    }
    rx->next = seq + 1;
    ++rx->count;
    return UCS_OK;
}

static size_t test_am_pack(void *dest, void *arg)
{
    test_am_pack_t *pack = arg;

    memcpy(dest, pack->src, pack->length);
    return pack->length;
}

static void test_am_set_handler(test_uct_t *t, unsigned node,
                                uct_am_callback_t cb, test_am_rx_t *rx)
{
    memset(rx, 0, sizeof(*rx));
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t->node[node].iface,
                                              TEST_AM_ID, cb, rx, 0));
}

static void test_am_counters(test_uct_t *t, unsigned node,
                             test_am_counters_t *c)
{
    query_am_counters_func_t query = (query_am_counters_func_t)dlsym(
            t->plugin, "uct_gda_ft_ep_query_am_counters");

    GDA_FT_ASSERT(query != NULL);
    GDA_FT_ASSERT_OK(query(t->node[node].ep, c));
}

static void test_am_short(test_uct_t *t, uint64_t header, const void *payload,
                          unsigned length)
{
    ucs_status_t status;

    do {
        status = uct_ep_am_short(t->node[NODE_A].ep, TEST_AM_ID, header,
                                 payload, length);
        if (status == UCS_ERR_NO_RESOURCE) {
            test_progress(t);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_OK(status);
}

static void test_am_bcopy(test_uct_t *t, const void *data, size_t length)
{
    test_am_pack_t pack = {data, length};
    ssize_t packed;

    do {
        packed = uct_ep_am_bcopy(t->node[NODE_A].ep, TEST_AM_ID,
                                 test_am_pack, &pack, 0);
        if (packed == UCS_ERR_NO_RESOURCE) {
            test_progress(t);
        }
    } while (packed == UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(packed, (ssize_t)length);
}

/* Message `seq` of a stream: am_short or am_bcopy of varying sizes */
static void test_am_stream_send(test_uct_t *t, uint64_t seq)
{
    size_t max_short = t->node[NODE_A].iface_attr.cap.am.max_short;
    uint8_t data[4096 + 8];
    size_t length;

    if (seq % 3 == 0) {
        length = (seq / 3) % (max_short - 8 + 1);
        soft_fill(data, length, (unsigned)seq);
        test_am_short(t, seq, data, length);
    } else {
        length = 8 + (seq * 37) % 4096;
        memcpy(data, &seq, sizeof(seq));
        soft_fill(data + 8, length - 8, (unsigned)seq);
        test_am_bcopy(t, data, length);
    }
}

/* Every size class, inline and through bounce buffers, content checked */
GDA_FT_TEST(uct_ops, am_short_and_bcopy_sizes)
{
    test_am_counters_t a, b;
    const uct_iface_attr_t *attr;
    size_t sizes[5], max_short, seg_size;
    test_am_rx_t *rx;
    uint8_t *src;
    uint64_t header;
    unsigned i, sent = 0;
    test_uct_t t;

    /* inline up to 32 bytes: longer am_short go through a bounce buffer */
    test_uct_env(&t, 4, "UCX_GDA_FT_MAX_INLINE=32", NULL);
    test_uct_setup(&t);
    attr      = &t.node[NODE_A].iface_attr;
    max_short = attr->cap.am.max_short;
    seg_size  = attr->cap.am.max_bcopy;
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_CB_SYNC);
    GDA_FT_ASSERT(!(attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE));
    GDA_FT_ASSERT_EQ(max_short, 128);
    GDA_FT_ASSERT_EQ(seg_size, 8192);
    GDA_FT_ASSERT_EQ(attr->cap.am.max_hdr, 0);

    rx  = calloc(1, sizeof(*rx));
    src = malloc(seg_size + 8);     /* messages start at src + i, i < 8 */
    soft_fill(src, seg_size + 8, 99);
    test_am_set_handler(&t, NODE_B, test_am_cb, rx);

    /* am_short: 8-byte header + payload, inline and not */
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = 8;
    sizes[3] = 24;              /* 32 with the header: the last inline */
    sizes[4] = max_short - 8;
    for (i = 0; i < 5; ++i) {
        header = 0x1122334455667700ull + i;
        test_am_short(&t, header, src + i, sizes[i]);
        ++sent;
        TEST_WAIT(&t, rx->count == sent, 5000);
        GDA_FT_ASSERT_EQ(rx->last_len, 8 + sizes[i]);
        GDA_FT_ASSERT_MEM_EQ(rx->last, &header, 8);
        GDA_FT_ASSERT_MEM_EQ(rx->last + 8, src + i, sizes[i]);
    }
    GDA_FT_ASSERT_EQ(uct_ep_am_short(t.node[NODE_A].ep, TEST_AM_ID, 0, src,
                                     max_short - 7),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(uct_ep_am_short(t.node[NODE_A].ep, UCT_AM_ID_MAX, 0,
                                     src, 0), UCS_ERR_INVALID_PARAM);

    /* am_bcopy */
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = 8;
    sizes[3] = max_short;
    sizes[4] = seg_size;
    for (i = 0; i < 5; ++i) {
        test_am_bcopy(&t, src + i, sizes[i]);
        ++sent;
        TEST_WAIT(&t, rx->count == sent, 5000);
        GDA_FT_ASSERT_EQ(rx->last_len, sizes[i]);
        GDA_FT_ASSERT_MEM_EQ(rx->last, src + i, sizes[i]);
    }

    /* many, both kinds mixed, far more than the receive queue holds:
     * every one arrives, in order, with its content */
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);
    for (i = 0; i < 3000; ++i) {
        test_am_stream_send(&t, i);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    TEST_WAIT(&t, rx->count == 3000, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->next, 3000);

    test_am_counters(&t, NODE_A, &a);
    test_am_counters(&t, NODE_B, &b);
    GDA_FT_ASSERT_EQ(a.sent, sent + 3000);
    GDA_FT_ASSERT_EQ(b.received, sent + 3000);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    test_assert_no_switch(&t, "active messages");
    free(src);
    free(rx);
    test_uct_cleanup(&t);
}

/* Streams n messages; after `fault_at` of them A's primary port goes down
 * (lose_answers = 0), or B's primary port starts to lose its ACKs: B
 * receives what A then sends there, A never learns it */
static void test_am_stream_failover(test_uct_t *t, test_am_rx_t *rx,
                                    unsigned n, unsigned fault_at,
                                    int lose_answers)
{
    unsigned i;

    test_am_set_handler(t, NODE_B, test_am_stream_cb, rx);
    for (i = 0; i < n; ++i) {
        if ((i == fault_at) && lose_answers) {
            test_port_lose_answers(t, "tsoft2");
        } else if (i == fault_at) {
            test_port_set(t, "tsoft0", 0);
        }
        test_am_stream_send(t, i);
        if ((i % 16) == 0) {
            test_progress(t);
        }
    }
    GDA_FT_ASSERT_OK(test_flush(t));
    TEST_WAIT(t, rx->count >= n, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->count, n);
    GDA_FT_ASSERT_EQ(rx->next, n);
}

GDA_FT_TEST(uct_ops, am_stream_survives_failover_exactly_once)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 0);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.no_path, 0);
    test_am_counters(&t, NODE_B, &b);
    /* the peer said what it executed: nothing was sent twice */
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, 2000);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    printf("replays %u, confirmed %u, arrived out of order %u\n",
           counters.replays, counters.confirmed, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, am_stream_dedups_replays_without_resolution)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", "UCX_GDA_FT_RESOLVE=n",
                 NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 1);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.replays >= 1);
    test_am_counters(&t, NODE_B, &b);
    /* B had received what A replayed: every copy was dropped */
    GDA_FT_ASSERT_EQ(b.received, 2000);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT(b.duplicates >= 1);
    GDA_FT_ASSERT(b.duplicates <= counters.replays);
    printf("replays %u, duplicates dropped %u, arrived out of order %u\n",
           counters.replays, b.duplicates, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

GDA_FT_TEST(uct_ops, am_stream_keeps_order_through_failback)
{
    test_am_counters_t b;
    test_counters_t a;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    unsigned i = 0, extra = 0;
    double start;
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms",
                 "UCX_GDA_FT_RECOVERY_WINDOW=100ms",
                 "UCX_GDA_FT_REARM_BACKOFF=50ms", NULL);
    test_uct_setup(&t);
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);

    for (; i < 200; ++i) {
        test_am_stream_send(&t, i);
    }
    test_port_set(&t, "tsoft0", 0);
    for (start = soft_now_sec(); soft_now_sec() < start + 0.3; ++i) {
        test_am_stream_send(&t, i);
        test_progress(&t);
    }

    /* the port returns; the stream goes on through the failback and for
     * a while after it, on the primary */
    test_port_set(&t, "tsoft0", 1);
    start = soft_now_sec();
    do {
        test_am_stream_send(&t, i++);
        test_progress(&t);
        GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
        GDA_FT_ASSERT(soft_now_sec() < start + 10);
        if (a.failbacks > 0) {
            ++extra;
        }
    } while (extra < 500);

    GDA_FT_ASSERT_OK(test_flush(&t));
    TEST_WAIT(&t, rx->count >= i, 20000);
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->count, i);
    GDA_FT_ASSERT_EQ(rx->next, i);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &a));
    GDA_FT_ASSERT_EQ(a.switches, 1);
    GDA_FT_ASSERT_EQ(a.failbacks, 1);
    GDA_FT_ASSERT_EQ(a.no_path, 0);
    test_am_counters(&t, NODE_B, &b);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, i);
    GDA_FT_ASSERT_EQ(t.node[NODE_A].errors, 0);
    GDA_FT_ASSERT_EQ(t.node[NODE_B].errors, 0);
    printf("%u messages, failback after %u, arrived out of order %u\n", i,
           i - extra, b.reordered);
    free(rx);
    test_uct_cleanup(&t);
}

/* B executes what A sent on the primary, its ACKs are lost: the peer's word
 * completes those sends, none is sent twice */
GDA_FT_TEST(uct_ops, am_stream_lost_acks_resolved_exactly_once)
{
    test_am_counters_t b;
    test_counters_t counters;
    test_am_rx_t *rx = calloc(1, sizeof(*rx));
    test_uct_t t;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    test_am_stream_failover(&t, rx, 2000, 500, 1);

    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    test_am_counters(&t, NODE_B, &b);
    printf("replays %u, confirmed %u, duplicates %u, arrived out of order "
           "%u\n", counters.replays, counters.confirmed, b.duplicates,
           b.reordered);
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT(counters.confirmed >= 1);
    GDA_FT_ASSERT_EQ(b.duplicates, 0);
    GDA_FT_ASSERT_EQ(b.gaps, 0);
    GDA_FT_ASSERT_EQ(b.received, 2000);
    free(rx);
    test_uct_cleanup(&t);
}


/* ---- conformance with UCX's expectations --------------------------------- */

typedef struct {
    uint64_t    cap;        /* 0: always called */
    size_t      offset;     /* in uct_iface_ops_t */
    const char *name;
} test_op_t;

#define TEST_OP(_cap, _op) \
    {(_cap), offsetof(uct_iface_ops_t, _op), #_op}

/* UCX calls an operation through the interface's table without a check:
 * every one it may call for a capability the interface claims is set */
static void test_assert_ops_for_caps(uct_iface_h iface,
                                     const uct_iface_attr_t *attr)
{
    static const test_op_t ops[] = {
        TEST_OP(0, ep_flush),
        TEST_OP(0, ep_fence),
        TEST_OP(0, ep_create),
        TEST_OP(0, ep_destroy),
        TEST_OP(0, ep_pending_add),
        TEST_OP(0, ep_pending_purge),
        TEST_OP(0, iface_flush),
        TEST_OP(0, iface_fence),
        TEST_OP(0, iface_progress_enable),
        TEST_OP(0, iface_progress_disable),
        TEST_OP(0, iface_progress),
        TEST_OP(0, iface_event_fd_get),
        TEST_OP(0, iface_event_arm),
        TEST_OP(0, iface_close),
        TEST_OP(0, iface_query),
        TEST_OP(0, iface_get_device_address),
        TEST_OP(0, iface_get_address),
        TEST_OP(0, iface_is_reachable),
        TEST_OP(UCT_IFACE_FLAG_PUT_SHORT, ep_put_short),
        TEST_OP(UCT_IFACE_FLAG_PUT_BCOPY, ep_put_bcopy),
        TEST_OP(UCT_IFACE_FLAG_PUT_ZCOPY, ep_put_zcopy),
        TEST_OP(UCT_IFACE_FLAG_GET_SHORT, ep_get_short),
        TEST_OP(UCT_IFACE_FLAG_GET_BCOPY, ep_get_bcopy),
        TEST_OP(UCT_IFACE_FLAG_GET_ZCOPY, ep_get_zcopy),
        TEST_OP(UCT_IFACE_FLAG_AM_SHORT, ep_am_short),
        TEST_OP(UCT_IFACE_FLAG_AM_SHORT, ep_am_short_iov),
        TEST_OP(UCT_IFACE_FLAG_AM_BCOPY, ep_am_bcopy),
        TEST_OP(UCT_IFACE_FLAG_AM_ZCOPY, ep_am_zcopy),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic_cswap64),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic_cswap32),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic32_post),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic64_post),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic32_fetch),
        TEST_OP(UCT_IFACE_FLAG_ATOMIC_DEVICE, ep_atomic64_fetch),
        TEST_OP(UCT_IFACE_FLAG_PENDING, ep_pending_add),
        TEST_OP(UCT_IFACE_FLAG_EP_CHECK, ep_check),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_EP, ep_get_address),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_EP, ep_connect_to_ep),
        TEST_OP(UCT_IFACE_FLAG_CONNECT_TO_IFACE, iface_get_address),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_SHORT, ep_tag_eager_short),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_BCOPY, ep_tag_eager_bcopy),
        TEST_OP(UCT_IFACE_FLAG_TAG_EAGER_ZCOPY, ep_tag_eager_zcopy),
        TEST_OP(UCT_IFACE_FLAG_TAG_RNDV_ZCOPY, ep_tag_rndv_zcopy)
    };
    unsigned i;

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        if (((ops[i].cap == 0) || (attr->cap.flags & ops[i].cap)) &&
            (*(void**)UCS_PTR_BYTE_OFFSET(&iface->ops, ops[i].offset) ==
             NULL)) {
            GDA_FT_FAIL("the interface claims capability 0x%" PRIx64
                        " but has no %s", ops[i].cap, ops[i].name);
        }
    }
}

GDA_FT_TEST(uct_conform, claimed_capabilities_have_their_operations)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_assert_ops_for_caps(t.node[NODE_A].iface,
                             &t.node[NODE_A].iface_attr);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_assert_ops_for_caps(t.node[NODE_A].iface,
                             &t.node[NODE_A].iface_attr);
    test_oob_cleanup(&t);
}

/* Splits data[0..length) into iovcnt entries of uneven sizes, some empty */
static void test_iov_split(uct_iov_t *iov, size_t iovcnt, uint8_t *data,
                           size_t length)
{
    size_t i, offset = 0, part;

    for (i = 0; i < iovcnt; ++i) {
        part = (i == iovcnt - 1) ? (length - offset) :
               ((i % 3 == 1) ? 0 : ucs_min(length - offset, 3 + 5 * i));
        iov[i].buffer = data + offset;
        iov[i].length = part;
        iov[i].memh   = UCT_MEM_HANDLE_NULL;
        iov[i].stride = 0;
        iov[i].count  = 1;
        offset       += part;
    }
}

typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint64_t          seq;
    unsigned          calls;
} test_am_iov_req_t;

/* Message `seq` of a stream (see test_am_stream_cb) in two iov entries */
static ucs_status_t test_am_iov_send_seq(test_uct_t *t, uint64_t seq)
{
    uint8_t payload[24];
    uct_iov_t iov[2];

    soft_fill(payload, sizeof(payload), (unsigned)seq);
    test_iov_split(iov, 1, (uint8_t*)&seq, sizeof(seq));
    test_iov_split(iov + 1, 1, payload, sizeof(payload));
    return uct_ep_am_short_iov(t->node[NODE_A].ep, TEST_AM_ID, iov, 2);
}

static ucs_status_t test_am_iov_pending_cb(uct_pending_req_t *self)
{
    test_am_iov_req_t *req = ucs_container_of(self, test_am_iov_req_t,
                                              super);
    ucs_status_t status;

    status = test_am_iov_send_seq(req->t, req->seq);
    req->calls += (status == UCS_OK);
    return status;
}

/* UCP's active messages send through am_short_iov: every size up to
 * max_short in 1..max_iov entries arrives as their concatenation, inline
 * and through a bounce buffer; the limits are checked; a full endpoint
 * says NO_RESOURCE and its pending queue sends in order */
GDA_FT_TEST(uct_conform, am_short_iov_sizes_limits_and_pending)
{
    size_t sizes[] = {0, 1, 7, 8, 31, 32, 33, 0};
    test_am_iov_req_t reqs[4];
    const uct_iface_attr_t *attr;
    uct_iov_t iov[16];
    uint8_t src[256];
    test_am_rx_t *rx;
    size_t s, n, max_iov, sent = 0;
    ucs_status_t status;
    uint64_t seq;
    test_uct_t t;
    unsigned i;

    /* inline up to 32 bytes, longer ones through a bounce buffer */
    test_uct_env(&t, 4, "UCX_GDA_FT_MAX_INLINE=32", "UCX_GDA_FT_LOG_SIZE=16",
                 NULL);
    test_uct_setup(&t);
    attr    = &t.node[NODE_A].iface_attr;
    max_iov = attr->cap.am.max_iov;
    GDA_FT_ASSERT(attr->cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    GDA_FT_ASSERT(t.node[NODE_A].iface->ops.ep_am_short_iov != NULL);
    GDA_FT_ASSERT(max_iov >= 4);    /* UCP's AM header, data, user header,
                                       reply footer */
    GDA_FT_ASSERT(max_iov < sizeof(iov) / sizeof(iov[0]));
    sizes[7] = attr->cap.am.max_short;
    GDA_FT_ASSERT(sizes[7] <= sizeof(src));

    rx = calloc(1, sizeof(*rx));
    soft_fill(src, sizeof(src), 5);
    test_am_set_handler(&t, NODE_B, test_am_cb, rx);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        for (n = 1; n <= max_iov; ++n) {
            test_iov_split(iov, n, src + n, sizes[s]);
            while ((status = uct_ep_am_short_iov(t.node[NODE_A].ep,
                                                 TEST_AM_ID, iov, n)) ==
                   UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
            GDA_FT_ASSERT_OK(status);
            ++sent;
            TEST_WAIT(&t, rx->count == sent, 5000);
            GDA_FT_ASSERT_EQ(rx->last_len, sizes[s]);
            GDA_FT_ASSERT_MEM_EQ(rx->last, src + n, sizes[s]);
        }
    }
    GDA_FT_ASSERT_EQ(rx->errors, 0);

    /* the limits: too long, too many entries, a bad id */
    test_iov_split(iov, 2, src, sizes[7] + 1);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         2), UCS_ERR_INVALID_PARAM);
    test_iov_split(iov, max_iov + 1, src, 16);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         max_iov + 1), UCS_ERR_INVALID_PARAM);
    test_iov_split(iov, 1, src, 16);
    GDA_FT_ASSERT_EQ(uct_ep_am_short_iov(t.node[NODE_A].ep, UCT_AM_ID_MAX,
                                         iov, 1), UCS_ERR_INVALID_PARAM);

    /* a full endpoint: NO_RESOURCE, then the pending queue sends, in
     * order after what was posted */
    test_am_set_handler(&t, NODE_B, test_am_stream_cb, rx);
    for (seq = 0; (status = test_am_iov_send_seq(&t, seq)) == UCS_OK;
         ++seq) {
        GDA_FT_ASSERT(seq < 1000);
    }
    GDA_FT_ASSERT_EQ(status, UCS_ERR_NO_RESOURCE);
    for (i = 0; i < 4; ++i) {
        reqs[i].super.func = test_am_iov_pending_cb;
        reqs[i].t          = &t;
        reqs[i].seq        = seq + i;
        reqs[i].calls      = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep,
                                            &reqs[i].super, 0));
    }
    TEST_WAIT(&t, rx->count == seq + 4, 10000);
    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 1);
    }
    GDA_FT_ASSERT_EQ(rx->errors, 0);
    GDA_FT_ASSERT_EQ(rx->next, seq + 4);
    GDA_FT_ASSERT_OK(test_flush(&t));
    free(rx);
    test_uct_cleanup(&t);
}

static unsigned test_log_warnings;
static char     test_log_last[256];

/* Counts UCX warnings and errors, keeps the last one */
static ucs_log_func_rc_t
test_log_count_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++test_log_warnings;
        vsnprintf(test_log_last, sizeof(test_log_last), message, ap);
        printf("%s:%u %s\n", file, line, test_log_last);
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

/* Closes a node and forgets it; UCX warns when its worker still has
 * callbacks, or its async context handlers */
static void test_node_close_checked(test_uct_t *t, test_node_t *node)
{
    if (node->ep != NULL) {
        uct_ep_destroy(node->ep);
        node->ep = NULL;
    }
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(node->md, node->memh));
    free(node->buf);
    uct_iface_close(node->iface);
    node->iface = NULL;
    uct_worker_destroy(node->worker);
    node->worker = NULL;
    ucs_async_context_destroy(node->async);
    uct_md_close(node->md);
}

/* The out-of-band interface leaves nothing behind: its progress callback
 * leaves the worker, its listener's and connections' handlers the async
 * context; UCX warns of either at cleanup (and a callback left behind
 * would run on freed memory). Both orders: B closes with A's connection
 * open, or after A's endpoint closed it. */
GDA_FT_TEST(uct_conform, oob_iface_close_leaves_no_callback_or_handler)
{
    test_oob_rx_t sync_rx, async_rx;
    double deadline;
    test_uct_t t;
    unsigned order;
    uint32_t i;

    for (order = 0; order < 2; ++order) {
        memset(&sync_rx, 0, sizeof(sync_rx));
        memset(&async_rx, 0, sizeof(async_rx));
        test_oob_setup(&t);
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                                  test_oob_am_cb, &sync_rx,
                                                  TEST_CB_SYNC));
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                                  test_oob_am_cb, &async_rx,
                                                  UCT_CB_FLAG_ASYNC));
        for (i = 0; i < 10; ++i) {
            test_oob_send(&t, 5, i, 64);
            test_oob_send(&t, 6, i, 64);
        }
        TEST_WAIT(&t, sync_rx.calls == 10, 10000);
        deadline = soft_now_sec() + 10;
        while (__atomic_load_n(&async_rx.calls, __ATOMIC_ACQUIRE) < 10) {
            GDA_FT_ASSERT(soft_now_sec() < deadline);
            usleep(1000);
        }

        test_log_warnings = 0;
        ucs_log_push_handler(test_log_count_handler);
        if (order == 1) {
            /* B sees the end of the connection before it closes */
            uct_ep_destroy(t.node[NODE_A].ep);
            t.node[NODE_A].ep = NULL;
            deadline = soft_now_sec() + 0.1;
            while (soft_now_sec() < deadline) {
                test_progress(&t);
            }
        }
        test_node_close_checked(&t, &t.node[NODE_B]);
        test_node_close_checked(&t, &t.node[NODE_A]);
        ucs_log_pop_handler();
        GDA_FT_ASSERT_EQ(test_log_warnings, 0);
    }
}

/*
 * The end of a connection races the interface's close: A's endpoint goes
 * while messages still arrive, and B closes at once, while its async
 * thread may be reading the connection's end. B's cleanup must wait for
 * that handler, not free the connection under it or leave it registered
 * (UCX: "releasing async context with 1 handlers", "spinlock destroy
 * failed: busy", a crash in the freed connection). Many rounds, as UCX's
 * suites ran into it.
 */
GDA_FT_TEST_TIMEOUT(uct_conform, oob_close_racing_connection_end, 120)
{
    test_oob_rx_t async_rx;
    double end = soft_now_sec() + 5;
    unsigned round, rounds = 0;
    test_uct_t t;
    uint32_t i;

    for (round = 0; (round < 300) && (soft_now_sec() < end); ++round) {
        memset(&async_rx, 0, sizeof(async_rx));
        test_oob_setup(&t);
        GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 6,
                                                  test_oob_am_cb, &async_rx,
                                                  UCT_CB_FLAG_ASYNC));
        for (i = 0; i < 8; ++i) {
            test_oob_send(&t, 6, i, 64 << (i % 8));
        }

        test_log_warnings = 0;
        ucs_log_push_handler(test_log_count_handler);
        uct_ep_destroy(t.node[NODE_A].ep);
        t.node[NODE_A].ep = NULL;
        if (round & 1) {
            usleep(round % 200);
        }
        test_node_close_checked(&t, &t.node[NODE_B]);
        test_node_close_checked(&t, &t.node[NODE_A]);
        ucs_log_pop_handler();
        GDA_FT_ASSERT_EQ(test_log_warnings, 0);
        ++rounds;
    }
    printf("%u rounds\n", rounds);
}

typedef struct {
    uct_pending_req_t super;
    test_uct_t       *t;
    uint32_t          seq;
    size_t            length;
    unsigned          calls;
} test_oob_req_t;

static ucs_status_t test_oob_pending_cb(uct_pending_req_t *self)
{
    test_oob_req_t *req = ucs_container_of(self, test_oob_req_t, super);
    test_oob_msg_t msg  = {req->seq, req->length};
    ssize_t ret;

    ret = uct_ep_am_bcopy(req->t->node[NODE_A].ep, 5, test_oob_pack, &msg, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    ++req->calls;
    return UCS_OK;
}

static size_t test_rss_bytes(void)
{
    unsigned long size, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    GDA_FT_ASSERT(f != NULL);
    GDA_FT_ASSERT_EQ(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* A receiver whose handler waits for its progress, which does not come:
 * the sender's queue fills up to OOB_TX_QUEUE, am_bcopy then says
 * NO_RESOURCE (neither side's memory grows), pending requests and the
 * flush wait; with the receiver's progress everything arrives in order */
GDA_FT_TEST(uct_conform, oob_full_queue_is_no_resource_and_pending_works)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg;
    test_oob_req_t reqs[4];
    size_t rss_before, rss_growth;
    uint32_t sent, i;
    test_uct_t t;
    ssize_t ret;

    setenv("UCX_GDA_FT_OOB_TX_QUEUE", "256k", 1);
    setenv("UCX_GDA_FT_OOB_TX_MAX_MSGS", "1000000", 1);
    test_oob_setup(&t);
    GDA_FT_ASSERT(t.node[NODE_A].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_PENDING);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              TEST_CB_SYNC));

    /* nothing to wait for: pending_add refuses */
    reqs[0].super.func = test_oob_pending_cb;
    GDA_FT_ASSERT_EQ(uct_ep_pending_add(t.node[NODE_A].ep, &reqs[0].super, 0),
                     UCS_ERR_BUSY);

    /* largest messages, only A progresses: TCP buffers what B does not
     * read, then A's queue fills (2048 would be 128 MiB) */
    rss_before = test_rss_bytes();
    for (sent = 0; sent < 2048; ++sent) {
        msg.seq    = sent;
        msg.length = UCT_GDA_FT_OOB_MAX_PAYLOAD;
        ret        = uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            break;
        }
        GDA_FT_ASSERT_EQ(ret, UCT_GDA_FT_OOB_MAX_PAYLOAD);
        uct_worker_progress(t.node[NODE_A].worker);
    }
    rss_growth = test_rss_bytes() - rss_before;
    printf("%u largest messages taken before NO_RESOURCE, RSS grew by %zu "
           "KiB\n", sent, rss_growth / 1024);
    GDA_FT_ASSERT(sent < 2048);
    GDA_FT_ASSERT(rss_growth < 16 * 1024 * 1024);
    GDA_FT_ASSERT_EQ(rx.calls, 0);

    /* requests wait in order, the flush waits behind them */
    for (i = 0; i < 4; ++i) {
        reqs[i].super.func = test_oob_pending_cb;
        reqs[i].t          = &t;
        reqs[i].seq        = sent + i;
        reqs[i].length     = 100 + i;
        reqs[i].calls      = 0;
        GDA_FT_ASSERT_OK(uct_ep_pending_add(t.node[NODE_A].ep,
                                            &reqs[i].super, 0));
    }
    GDA_FT_ASSERT_EQ(uct_ep_flush(t.node[NODE_A].ep, 0, NULL),
                     UCS_ERR_NO_RESOURCE);
    GDA_FT_ASSERT_EQ(uct_iface_flush(t.node[NODE_A].iface, 0, NULL),
                     UCS_INPROGRESS);
    msg.seq    = 0;
    msg.length = 8;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), UCS_ERR_NO_RESOURCE);

    /* B progresses: everything arrives, in order, once */
    TEST_WAIT(&t, rx.calls == sent + 4, 30000);
    TEST_WAIT(&t, uct_ep_flush(t.node[NODE_A].ep, 0, NULL) == UCS_OK, 5000);
    GDA_FT_ASSERT_OK(uct_iface_flush(t.node[NODE_A].iface, 0, NULL));
    for (i = 0; i < 4; ++i) {
        GDA_FT_ASSERT_EQ(reqs[i].calls, 1);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);
    GDA_FT_ASSERT_EQ(rx.next, sent + 4);
    test_oob_cleanup(&t);
}

/* A receiver that keeps up by itself (asynchronous handler): the sender
 * still takes no more than OOB_TX_MAX_MSGS messages between two of its
 * progress calls, as UCX's am_tx_max_bufs expects */
GDA_FT_TEST(uct_conform, oob_messages_between_progress_are_bounded)
{
    test_oob_rx_t rx = {0};
    test_oob_msg_t msg = {0, 8};
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_h iface;
    double deadline;
    test_uct_t t;
    uint32_t sent;
    ssize_t ret;

    setenv("UCX_GDA_FT_OOB_TX_MAX_MSGS", "32", 1);
    test_oob_setup(&t);
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t.node[NODE_B].iface, 5,
                                              test_oob_am_cb, &rx,
                                              UCT_CB_FLAG_ASYNC));
    for (sent = 0; sent < 1000; ++sent) {
        msg.seq = sent;
        ret     = uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack, &msg,
                                  0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            break;
        }
        GDA_FT_ASSERT_EQ(ret, 8);
    }
    GDA_FT_ASSERT_EQ(sent, 32);

    /* A's progress finds them written: the next one goes out */
    uct_worker_progress(t.node[NODE_A].worker);
    msg.seq = sent++;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, 5, test_oob_pack,
                                     &msg, 0), 8);
    deadline = soft_now_sec() + 10;
    while (__atomic_load_n(&rx.calls, __ATOMIC_ACQUIRE) < sent) {
        GDA_FT_ASSERT(soft_now_sec() < deadline);
        usleep(1000);
    }
    GDA_FT_ASSERT_EQ(rx.bad, 0);

    /* a queue that cannot hold a largest message is refused */
    GDA_FT_ASSERT_OK(uct_md_iface_config_read(t.node[NODE_A].md, "gda_ft",
                                              NULL, NULL, &config));
    GDA_FT_ASSERT_OK(uct_config_modify(config, "OOB_TX_QUEUE", "64k"));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gda_ft";
    params.mode.device.dev_name = "tsoft0:oob";
    GDA_FT_ASSERT_EQ(uct_iface_open(t.node[NODE_A].md, t.node[NODE_A].worker,
                                    &params, config, &iface),
                     UCS_ERR_INVALID_PARAM);
    uct_config_release(config);
    test_oob_cleanup(&t);
}

/* Opens another interface on a node's device with AM alignment parameters
 * (field_mask: which of them), closes it; returns the status */
static ucs_status_t test_open_aligned(test_uct_t *t, test_node_t *node,
                                      uint64_t field_mask, size_t align,
                                      size_t offset)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;
    uct_iface_h iface;

    GDA_FT_ASSERT_OK(uct_md_iface_config_read(node->md, "gda_ft", NULL, NULL,
                                              &config));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE | field_mask;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gda_ft";
    params.mode.device.dev_name = node->dev_name;
    params.am_alignment         = align;
    params.am_align_offset      = offset;
    status = uct_iface_open(node->md, node->worker, &params, config, &iface);
    uct_config_release(config);
    if (status == UCS_OK) {
        uct_iface_close(iface);
    }
    return status;
}

/* UCX's uct_p2p_am_alignment.invalid_align and invalid_offset, and what
 * UCP asks for, on both kinds of interface */
static void test_am_alignment_params(test_uct_t *t)
{
    const uint64_t align  = UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT;
    const uint64_t offset = UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET;
    test_node_t *node     = &t->node[NODE_A];

    /* not a power of 2 */
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align, 0, 0),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align, 3, 1),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, align | offset, 24, 0),
                     UCS_ERR_INVALID_PARAM);
    /* an offset without an alignment */
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 0, 11),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 8, 8),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_open_aligned(t, node, offset, 8, 11),
                     UCS_ERR_INVALID_PARAM);
    /* valid: with and without an offset, and UCP's header offset (8) with
     * a smaller alignment */
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align, 64, 0));
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align | offset, 4096, 100));
    GDA_FT_ASSERT_OK(test_open_aligned(t, node, align | offset, 2, 8));
}

GDA_FT_TEST(uct_conform, am_alignment_params_are_checked)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_am_alignment_params(&t);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_am_alignment_params(&t);
    test_oob_cleanup(&t);
}

typedef struct {
    unsigned send;      /* UCT_AM_TRACE_TYPE_SEND calls */
    unsigned recv;
    unsigned bad;       /* wrong id, length or content */
    size_t   length;    /* expected of every message */
} test_tracer_t;

static void test_am_tracer(void *arg, uct_am_trace_type_t type, uint8_t id,
                           const void *data, size_t length, char *buffer,
                           size_t max)
{
    test_tracer_t *tr = arg;
    uint8_t expect[256];

    soft_fill(expect, sizeof(expect), 77);
    tr->bad += (id != TEST_AM_ID) || (length != tr->length) ||
               (length > sizeof(expect)) || memcmp(data, expect, length);
    if (type == UCT_AM_TRACE_TYPE_SEND) {
        ++tr->send;
    } else if (type == UCT_AM_TRACE_TYPE_RECV) {
        ++tr->recv;
    } else {
        ++tr->bad;
    }
    snprintf(buffer, max, "test tracer");
}

static char test_trace_log[65536];

/* Keeps the data-trace messages, prints nothing */
static ucs_log_func_rc_t
test_trace_log_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    size_t used = strlen(test_trace_log);
    char buf[512];

    if (level != UCS_LOG_LEVEL_TRACE_DATA) {
        return (level <= UCS_LOG_LEVEL_WARN) ? UCS_LOG_FUNC_RC_CONTINUE :
                                                UCS_LOG_FUNC_RC_STOP;
    }
    vsnprintf(buf, sizeof(buf), message, ap);
    snprintf(test_trace_log + used, sizeof(test_trace_log) - used, "%s\n",
             buf);
    return UCS_LOG_FUNC_RC_STOP;
}

static void test_trace_expect(const char *text)
{
    if (strstr(test_trace_log, text) == NULL) {
        GDA_FT_FAIL("no trace with '%s' in:\n%s", text, test_trace_log);
    }
}

/*
 * With logging on (UCX_LOG_LEVEL=trace_data in a build that keeps it), UCX
 * traces every active message sent and received through the interface's
 * AM tracer and ucs_trace_data(), and its tests count them: am_short,
 * am_short_iov and am_bcopy on the HCA interface, am_bcopy on the
 * out-of-band one, one SEND at the sender, one RECV at the receiver, each
 * with the id, the length and the bytes of the message.
 */
GDA_FT_TEST(uct_conform, am_send_and_receive_are_traced)
{
    test_tracer_t tx = {0}, rx = {0};
    test_am_rx_t *am_rx;
    test_am_pack_t pack;
    uint8_t src[256];
    uct_iov_t iov[2];
    test_uct_t t;

    /* UCX_LOG_LEVEL=trace_data, which libucs read when it loaded */
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_DATA;
    ucs_log_push_handler(test_trace_log_handler);
    test_uct_plugin = "libuct_gda_ft_trace.so";
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    soft_fill(src, sizeof(src), 77);
    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, test_am_tracer, &tx);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, test_am_tracer, &rx);

    tx.length = rx.length = 40;
    test_am_short(&t, *(uint64_t*)src, src + 8, 32);
    test_iov_split(iov, 2, src, 40);
    GDA_FT_ASSERT_OK(uct_ep_am_short_iov(t.node[NODE_A].ep, TEST_AM_ID, iov,
                                         2));
    TEST_WAIT(&t, am_rx->count == 2, 5000);
    tx.length = rx.length = 200;
    test_am_bcopy(&t, src, 200);
    TEST_WAIT(&t, am_rx->count == 3, 5000);
    GDA_FT_ASSERT_EQ(tx.send, 3);
    GDA_FT_ASSERT_EQ(tx.recv, 0);
    GDA_FT_ASSERT_EQ(rx.recv, 3);
    GDA_FT_ASSERT_EQ(rx.send, 0);
    GDA_FT_ASSERT_EQ(tx.bad + rx.bad, 0);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, NULL, NULL);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, NULL, NULL);
    GDA_FT_ASSERT_OK(test_flush(&t));
    free(am_rx);
    test_uct_cleanup(&t);

    /* the out-of-band channel */
    memset(&tx, 0, sizeof(tx));
    memset(&rx, 0, sizeof(rx));
    test_oob_setup(&t);
    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    uct_iface_set_am_tracer(t.node[NODE_A].iface, test_am_tracer, &tx);
    uct_iface_set_am_tracer(t.node[NODE_B].iface, test_am_tracer, &rx);
    tx.length = rx.length = 100;
    pack.src    = src;
    pack.length = 100;
    GDA_FT_ASSERT_EQ(uct_ep_am_bcopy(t.node[NODE_A].ep, TEST_AM_ID,
                                     test_am_pack, &pack, 0), 100);
    TEST_WAIT(&t, am_rx->count == 1, 5000);
    GDA_FT_ASSERT_EQ(tx.send, 1);
    GDA_FT_ASSERT_EQ(rx.recv, 1);
    GDA_FT_ASSERT_EQ(tx.bad + rx.bad, 0);
    free(am_rx);
    test_oob_cleanup(&t);

    /* and ucs_trace_data() logged them, with what the tracer wrote */
    ucs_log_pop_handler();
    test_trace_expect("TX: ep");
    test_trace_expect("AM_SHORT_IOV");
    test_trace_expect("AM_BCOPY");
    test_trace_expect("RX: ep");
    test_trace_expect("RX: fd");
    test_trace_expect("test tracer");
}

/*
 * Every put, get and atomic is traced with ucs_trace_data(), as UCX's IB
 * transports trace every post (uct_ib_log_post): UCX's p2p tests count at
 * least one such line per transfer. Each operation, with its remote
 * address.
 */
GDA_FT_TEST(uct_conform, rma_is_traced)
{
    uint8_t data[256], dest[256];
    test_unpack_arg_t unpack;
    test_pack_arg_t pack;
    test_comp_t comp;
    uct_iov_t iov;
    test_uct_t t;
    char raddr[32];

    test_trace_log[0] = '\0';
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_DATA;
    ucs_log_push_handler(test_trace_log_handler);
    test_uct_plugin = "libuct_gda_ft_trace.so";
    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    soft_fill(data, sizeof(data), 79);

    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, data, 16,
                                      raddr_b(&t, 0x100), rkey_b(&t)));
    pack.src    = data;
    pack.length = 200;
    GDA_FT_ASSERT_EQ(uct_ep_put_bcopy(t.node[NODE_A].ep, test_pack_cb, &pack,
                                      raddr_b(&t, 0x200), rkey_b(&t)), 200);
    memcpy(t.node[NODE_A].buf, data, 64);
    iov.buffer = t.node[NODE_A].buf;
    iov.length = 64;
    iov.memh   = t.node[NODE_A].memh;
    iov.stride = 0;
    iov.count  = 1;
    test_comp_init(&comp, 3);
    GDA_FT_ASSERT_EQ(uct_ep_put_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0x300), rkey_b(&t),
                                      &comp.super), UCS_INPROGRESS);
    unpack.dest   = dest;
    unpack.length = 16;
    unpack.calls  = 0;
    GDA_FT_ASSERT_EQ(uct_ep_get_bcopy(t.node[NODE_A].ep, test_unpack_cb,
                                      &unpack, 16, raddr_b(&t, 0x100),
                                      rkey_b(&t), &comp.super),
                     UCS_INPROGRESS);
    GDA_FT_ASSERT_EQ(uct_ep_get_zcopy(t.node[NODE_A].ep, &iov, 1,
                                      raddr_b(&t, 0x400), rkey_b(&t),
                                      &comp.super), UCS_INPROGRESS);
    GDA_FT_ASSERT_OK(uct_ep_atomic64_post(t.node[NODE_A].ep, UCT_ATOMIC_OP_ADD,
                                          1, raddr_b(&t, 0x500),
                                          rkey_b(&t)));
    TEST_WAIT(&t, comp.calls == 1, 5000);
    GDA_FT_ASSERT_OK(comp.super.status);
    GDA_FT_ASSERT_OK(test_flush(&t));
    GDA_FT_ASSERT_MEM_EQ(dest, data, 16);
    snprintf(raddr, sizeof(raddr), "rva 0x%" PRIx64, raddr_b(&t, 0x300));
    test_uct_cleanup(&t);

    ucs_log_pop_handler();
    test_trace_expect("PUT_SHORT");
    test_trace_expect("PUT_BCOPY");
    test_trace_expect("PUT_ZCOPY");
    test_trace_expect("GET_BCOPY");
    test_trace_expect("GET_ZCOPY");
    test_trace_expect("ATOMIC64");
    test_trace_expect(raddr);
}

/*
 * TX_QUEUE_LEN is a number of operations, as rc's is (UCX's tests read it
 * as one: "auto" read as 0), and one smaller than LOG_SIZE is refused. The
 * receive CQ's size bounds no endpoint count: with room for the receive
 * WQEs of 2 endpoints per CQ, 7 endpoints on each side send and receive.
 */
GDA_FT_TEST(uct_conform, tx_queue_len_is_a_number_and_eps_exceed_a_rx_cq)
{
    enum { NUM_EPS = 6 };
    uint8_t dev_addr[2][64], ep_addr[2][64];
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    uct_ep_h eps[2][NUM_EPS];
    uct_ep_params_t ep_params;
    test_am_rx_t *am_rx;
    uct_iface_h iface;
    char value[64];
    uint64_t header;
    test_uct_t t;
    unsigned i, n;
    ucs_status_t status;

    test_uct_env(&t, 4, "UCX_GDA_FT_RX_QUEUE_LEN=64",
                 "UCX_GDA_FT_RX_CQ_LEN=128", NULL);
    test_uct_setup(&t);

    GDA_FT_ASSERT_OK(uct_md_iface_config_read(t.node[NODE_A].md, "gda_ft",
                                              NULL, NULL, &iface_config));
    GDA_FT_ASSERT_OK(uct_config_get(iface_config, "TX_QUEUE_LEN", value,
                                    sizeof(value)));
    GDA_FT_ASSERT_EQ(strtoul(value, NULL, 10), 256);
    GDA_FT_ASSERT_OK(uct_config_modify(iface_config, "TX_QUEUE_LEN", "128"));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gda_ft";
    params.mode.device.dev_name = "tsoft0:1";
    status = uct_iface_open(t.node[NODE_A].md, t.node[NODE_A].worker,
                            &params, iface_config, &iface);
    GDA_FT_ASSERT_EQ(status, UCS_ERR_INVALID_PARAM);
    uct_config_release(iface_config);

    am_rx = calloc(1, sizeof(*am_rx));
    test_am_set_handler(&t, NODE_B, test_am_cb, am_rx);
    for (i = 0; i < NUM_EPS; ++i) {
        for (n = 0; n < 2; ++n) {
            ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
            ep_params.iface      = t.node[n].iface;
            GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &eps[n][i]));
            GDA_FT_ASSERT_OK(uct_iface_get_device_address(
                    t.node[n].iface, (uct_device_addr_t*)dev_addr[n]));
            GDA_FT_ASSERT_OK(uct_ep_get_address(eps[n][i],
                                                (uct_ep_addr_t*)ep_addr[n]));
        }
        for (n = 0; n < 2; ++n) {
            GDA_FT_ASSERT_OK(uct_ep_connect_to_ep(
                    eps[n][i], (uct_device_addr_t*)dev_addr[1 - n],
                    (uct_ep_addr_t*)ep_addr[1 - n]));
        }
    }

    for (i = 0; i < NUM_EPS; ++i) {
        header = i;
        do {
            status = uct_ep_am_short(eps[NODE_A][i], TEST_AM_ID, header,
                                     NULL, 0);
            if (status == UCS_ERR_NO_RESOURCE) {
                test_progress(&t);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        GDA_FT_ASSERT_OK(status);
        TEST_WAIT(&t, am_rx->count == i + 1, 5000);
        GDA_FT_ASSERT_EQ(am_rx->last_len, sizeof(header));
        GDA_FT_ASSERT_MEM_EQ(am_rx->last, &header, sizeof(header));
    }
    test_am_short(&t, NUM_EPS, NULL, 0);
    TEST_WAIT(&t, am_rx->count == NUM_EPS + 1, 5000);
    GDA_FT_ASSERT_EQ(am_rx->errors, 0);

    for (i = 0; i < NUM_EPS; ++i) {
        for (n = 0; n < 2; ++n) {
            uct_ep_destroy(eps[n][i]);
        }
    }
    free(am_rx);
    test_uct_cleanup(&t);
}

/* The MD reports what UCX's IB MDs report: no allocation of its own
 * (uct_mem_alloc() passes it over for another method) and no limit on the
 * buffers its transports move (UCX's tests skip every transfer larger than
 * max_alloc / 2.5) */
GDA_FT_TEST(uct_conform, md_max_alloc_and_flags_agree)
{
    uct_alloc_method_t methods[] = {UCT_ALLOC_METHOD_MD,
                                    UCT_ALLOC_METHOD_HEAP};
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;
    const uct_md_attr_t *attr;
    size_t length = 4 * 1024 * 1024;
    uct_mem_h memh;
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    attr = &t.node[NODE_A].md_attr;
    GDA_FT_ASSERT(!(attr->cap.flags & UCT_MD_FLAG_ALLOC));
    GDA_FT_ASSERT_EQ(attr->cap.alloc_mem_types, 0);
    GDA_FT_ASSERT(attr->cap.max_alloc == ULONG_MAX);
    GDA_FT_ASSERT(attr->cap.max_reg == ULONG_MAX);
    GDA_FT_ASSERT(attr->cap.max_alloc / 2.5 >=
                  t.node[NODE_A].iface_attr.cap.put.max_zcopy);

    /* UCX allocates by another method, and the MD registers it */
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mds.mds    = &t.node[NODE_A].md;
    params.mds.count  = 1;
    params.name       = "test";
    GDA_FT_ASSERT_OK(uct_mem_alloc(length, methods, 2, &params, &mem));
    GDA_FT_ASSERT_EQ(mem.method, UCT_ALLOC_METHOD_HEAP);
    GDA_FT_ASSERT_OK(uct_md_mem_reg(t.node[NODE_A].md, mem.address,
                                    mem.length, UCT_MD_MEM_ACCESS_ALL,
                                    &memh));
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(t.node[NODE_A].md, memh));
    GDA_FT_ASSERT_OK(uct_mem_free(&mem));
    test_uct_cleanup(&t);
}

static unsigned test_log_switch_diags;

/* Counts warnings (test_log_warnings) and the diagnostics that report a
 * switch to the backup path, prints nothing else */
static ucs_log_func_rc_t
test_log_level_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    char buf[512];

    vsnprintf(buf, sizeof(buf), message, ap);
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++test_log_warnings;
        printf("%s: %s\n", ucs_log_level_names[level], buf);
    } else if ((level == UCS_LOG_LEVEL_DIAG) &&
               (strstr(buf, "switched to the backup path") != NULL)) {
        ++test_log_switch_diags;
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/*
 * A switch to the backup path that the endpoint survives is what gda_ft is
 * for: UCX's convention for such an event is a diagnostic (UCX's own
 * peer-failure tests fail on any warning), and the counters keep the
 * record. Warnings and errors stay for what the user must know: atomics in
 * doubt, no path left.
 */
GDA_FT_TEST(uct_conform, survived_switch_is_a_diagnostic_not_a_warning)
{
    test_counters_t counters;
    uint64_t value = 7;
    test_uct_t t;
    ucs_status_t status;
    unsigned i;

    test_uct_env(&t, 4, "UCX_GDA_FT_DEADLINE=200ms", NULL);
    test_uct_setup(&t);
    GDA_FT_ASSERT_OK(uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                      raddr_b(&t, 0), rkey_b(&t)));
    GDA_FT_ASSERT_OK(test_flush(&t));
    test_assert_no_switch(&t, "warm-up");

    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_DIAG;
    test_log_warnings     = 0;
    test_log_switch_diags = 0;
    ucs_log_push_handler(test_log_level_handler);
    test_port_set(&t, "tsoft0", 0);
    for (i = 0; i < 100; ++i) {
        value = 0x2000 + i;
        while ((status = uct_ep_put_short(t.node[NODE_A].ep, &value, 8,
                                          raddr_b(&t, 8 * i), rkey_b(&t))) ==
               UCS_ERR_NO_RESOURCE) {
            test_progress(&t);
        }
        GDA_FT_ASSERT_OK(status);
    }
    GDA_FT_ASSERT_OK(test_flush(&t));
    ucs_log_pop_handler();

    for (i = 0; i < 100; ++i) {
        GDA_FT_ASSERT_EQ(((uint64_t*)t.node[NODE_B].buf)[i], 0x2000 + i);
    }
    GDA_FT_ASSERT_OK(t.query_counters(t.node[NODE_A].ep, &counters));
    GDA_FT_ASSERT_EQ(counters.switches, 1);
    GDA_FT_ASSERT_EQ(counters.in_doubt, 0);
    GDA_FT_ASSERT_EQ(test_log_switch_diags, 1);
    GDA_FT_ASSERT_EQ(test_log_warnings, 0);
    test_uct_cleanup(&t);
}

static char test_log_errors[2048];

/* Keeps the errors, prints nothing */
static ucs_log_func_rc_t
test_log_error_handler(const char *file, unsigned line, const char *function,
                       ucs_log_level_t level,
                       const ucs_log_component_config_t *comp_conf,
                       const char *message, va_list ap)
{
    size_t used = strlen(test_log_errors);

    if (level == UCS_LOG_LEVEL_ERROR) {
        vsnprintf(test_log_errors + used, sizeof(test_log_errors) - used,
                  message, ap);
        used = strlen(test_log_errors);
        snprintf(test_log_errors + used, sizeof(test_log_errors) - used,
                 "\n");
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* A second process given the same soft device (its UDP address taken, here
 * by a socket of ours): opening the MD fails as busy, with an error that
 * names the address and port and says what to do */
GDA_FT_TEST(uct_conform, soft_address_in_use_is_a_clear_error)
{
    uct_md_config_t *md_config;
    struct sockaddr_in sa;
    char expect[64];
    const char *spec;
    ucs_status_t status;
    uct_md_h md;
    test_uct_t t;
    int fd;

    test_uct_env(&t, 4, NULL);
    spec = getenv("UCX_GDA_FT_SOFT_DEVICES");   /* tsoft0=127.0.0.1:PORT */
    GDA_FT_ASSERT(spec != NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(0x7f000001);
    sa.sin_port        = htons(atoi(strchr(spec, ':') + 1));
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    GDA_FT_ASSERT(fd >= 0);
    GDA_FT_ASSERT_EQ(bind(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);

    test_log_errors[0] = '\0';
    GDA_FT_ASSERT_OK(uct_md_config_read(t.comp, NULL, NULL, &md_config));
    ucs_log_push_handler(test_log_error_handler);
    status = uct_md_open(t.comp, "gda_ft_tsoft0", md_config, &md);
    ucs_log_pop_handler();
    uct_config_release(md_config);
    printf("%s", test_log_errors);
    GDA_FT_ASSERT_EQ(status, UCS_ERR_BUSY);
    snprintf(expect, sizeof(expect), "127.0.0.1:%u is in use",
             ntohs(sa.sin_port));
    GDA_FT_ASSERT(strstr(test_log_errors, expect) != NULL);
    GDA_FT_ASSERT(strstr(test_log_errors, "tsoft0") != NULL);
    GDA_FT_ASSERT(strstr(test_log_errors, "UCX_GDA_FT_SOFT_DEVICES") != NULL);

    /* once the address is free, the same MD opens */
    close(fd);
    GDA_FT_ASSERT_OK(uct_md_config_read(t.comp, NULL, NULL, &md_config));
    GDA_FT_ASSERT_OK(uct_md_open(t.comp, "gda_ft_tsoft0", md_config, &md));
    uct_config_release(md_config);
    uct_md_close(md);
}

/* Whether an interface's estimates reach the peer unchanged in a v2
 * address: ucp_address_pack_iface_attr_v2() and its unpack, with one
 * process per node */
static void test_assert_v2_round_trip(const char *what, double latency,
                                      double overhead, double bandwidth)
{
    double lat_ns = latency * UCS_NSEC_PER_SEC;
    double ovh_ns = overhead * UCS_NSEC_PER_SEC;
    double lat, ovh, bw;

    lat = UCS_FP8_UNPACK(LATENCY, UCS_FP8_PACK(LATENCY, lat_ns));
    ovh = UCS_FP8_UNPACK(OVERHEAD, UCS_FP8_PACK(OVERHEAD, ovh_ns));
    bw  = UCS_FP8_UNPACK(BANDWIDTH, UCS_FP8_PACK(BANDWIDTH, bandwidth));
    printf("%s: latency %.0f -> %.0f ns, overhead %.0f -> %.0f ns, "
           "bandwidth %.0f -> %.0f MiB/s\n", what, lat_ns, lat, ovh_ns, ovh,
           bandwidth / UCS_MBYTE, bw / UCS_MBYTE);
    if ((lat != lat_ns) || (ovh != ovh_ns) || (bw != bandwidth)) {
        GDA_FT_FAIL("%s: the v2 address does not carry these estimates",
                    what);
    }
}

static void test_assert_iface_v2(const char *what,
                                 const uct_iface_attr_t *attr)
{
    GDA_FT_ASSERT(attr->latency.m == 0);
    test_assert_v2_round_trip(what, attr->latency.c, attr->overhead,
                              attr->bandwidth.dedicated +
                              attr->bandwidth.shared);
}

/*
 * UCX_ADDRESS_VERSION=v2 packs latency, overhead and bandwidth in a byte
 * each: gda_ft's estimates (the soft HCA's, a hardware HCA's, the
 * out-of-band channel's) are values it carries exactly, so the peer picks
 * lanes by the numbers this side uses. Was: the soft HCA's 450 MiB/s
 * arrived as almost 0 B/s, the channel's 1 ms as 65 us.
 */
GDA_FT_TEST(uct_conform, estimates_survive_the_v2_address)
{
    test_uct_t t;

    /* UCX's packing, as this test relies on it */
    GDA_FT_ASSERT(UCS_FP8_UNPACK(BANDWIDTH, UCS_FP8_PACK(BANDWIDTH,
                                                         450.0 * UCS_MBYTE))
                  < 1.0);
    GDA_FT_ASSERT_EQ(UCS_FP8_UNPACK(LATENCY, UCS_FP8_PACK(LATENCY, 1e6)),
                     65536);

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    test_assert_iface_v2("soft HCA", &t.node[NODE_A].iface_attr);
    test_uct_cleanup(&t);

    test_oob_setup(&t);
    test_assert_iface_v2("out-of-band", &t.node[NODE_A].iface_attr);
    test_oob_cleanup(&t);

    /* no hardware HCA here: its estimates as iface_query reports them */
    test_assert_v2_round_trip("hardware HCA", UCT_GDA_FT_PERF_HW_LATENCY,
                              UCT_GDA_FT_PERF_HW_OVERHEAD,
                              UCT_GDA_FT_PERF_HW_BANDWIDTH);
}

/* The guardian settles failovers and fails back: an interval that never
 * comes is refused when the interface opens, with its reason */
GDA_FT_TEST(uct_ops, guard_interval_must_be_finite)
{
    test_uct_t t;

    test_uct_env(&t, 4, NULL);
    test_uct_setup(&t);
    setenv("UCX_GDA_FT_GUARD_INTERVAL", "inf", 1);
    GDA_FT_ASSERT_EQ(test_open_aligned(&t, &t.node[NODE_A], 0, 0, 0),
                     UCS_ERR_INVALID_PARAM);
    setenv("UCX_GDA_FT_GUARD_INTERVAL", "50us", 1);
    GDA_FT_ASSERT_OK(test_open_aligned(&t, &t.node[NODE_A], 0, 0, 0));
    unsetenv("UCX_GDA_FT_GUARD_INTERVAL");
    test_uct_cleanup(&t);
}
