/*
 * Two gda_ft UCT nodes in one process (see uct_harness.h).
 */
#include "uct_harness.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <strings.h>
#include <unistd.h>

/* ---- setup --------------------------------------------------------------- */

static void test_comp_cb(uct_completion_t *self)
{
    test_comp_t *comp = ucs_container_of(self, test_comp_t, super);

    ++comp->calls;
}

void test_comp_init(test_comp_t *comp, int count)
{
    comp->super.func   = test_comp_cb;
    comp->super.count  = count;
    comp->super.status = UCS_OK;
    comp->calls        = 0;
}

static ucs_status_t test_err_handler(void *arg, uct_ep_h ep,
                                     ucs_status_t status)
{
    test_node_t *node = arg;

    ++node->errors;
    node->last_error = status;
    return UCS_OK;
}

const char *test_uct_plugin = "libuct_gda_ft.so";

static void *test_uct_load_plugin(void)
{
    char path[1024];
    void *handle;

    snprintf(path, sizeof(path), "%s/.libs/%s", gda_ft_test_builddir(),
             test_uct_plugin);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        GDA_FT_FAIL("cannot load the plugin %s: %s", path, dlerror());
    }
    return handle;
}

static uct_component_h test_uct_find_component(void)
{
    uct_component_h *comps, comp;
    uct_component_attr_t attr;
    unsigned i, num;

    GDA_FT_ASSERT_OK(uct_query_components(&comps, &num));
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        GDA_FT_ASSERT_OK(uct_component_query(comps[i], &attr));
        if (!strcmp(attr.name, "gda_ft")) {
            comp = comps[i];
            uct_release_component_list(comps);
            return comp;
        }
    }
    uct_release_component_list(comps);
    GDA_FT_FAIL("component gda_ft is not registered");
}

void test_host_channel_query(test_uct_t *t, unsigned node,
                             gda_ft_chan_query_t *q)
{
    typedef ucs_status_t (*query_func_t)(uct_ep_h, gda_ft_chan_query_t*);
    query_func_t query = (query_func_t)dlsym(
            t->plugin, "uct_gda_ft_ep_query_host_channel");

    GDA_FT_ASSERT(query != NULL);
    GDA_FT_ASSERT_OK(query(t->node[node].ep, q));
}

/* With UCX_GDA_FT_MLX5_SYS=emu, the transport sees the emulated mlx5
 * devices only: a run of the suites that way runs over the mlx5 provider */
static void test_uct_check_providers(test_uct_t *t)
{
    typedef ucs_status_t (*query_func_t)(gda_ft_hca_dev_info_t**, unsigned*);
    typedef void (*free_func_t)(gda_ft_hca_dev_info_t*);
    query_func_t query = (query_func_t)dlsym(t->plugin,
                                             "gda_ft_hca_query_devices");
    free_func_t free_list = (free_func_t)dlsym(t->plugin,
                                               "gda_ft_hca_free_device_list");
    const char *sys = getenv("UCX_GDA_FT_MLX5_SYS");
    gda_ft_hca_dev_info_t *infos;
    unsigned i, count;

    if ((sys == NULL) || strcmp(sys, "emu")) {
        return;
    }
    GDA_FT_ASSERT((query != NULL) && (free_list != NULL));
    GDA_FT_ASSERT_OK(query(&infos, &count));
    GDA_FT_ASSERT(count > 0);
    for (i = 0; i < count; ++i) {
        GDA_FT_ASSERT(!strcmp(infos[i].provider->name, "mlx5"));
    }
    free_list(infos);
}

/* Declares tsoft0..3, loads the plugin; extra: "VAR=value" settings */
void test_uct_env(test_uct_t *t, unsigned ndev, ...)
{
    const char *setting;
    char var[256], *eq;
    va_list ap;

    memset(t, 0, sizeof(*t));
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 1);
    setenv("UCX_GDA_FT_CTL_DIR", "", 1);
    va_start(ap, ndev);
    while ((setting = va_arg(ap, const char*)) != NULL) {
        snprintf(var, sizeof(var), "%s", setting);
        eq = strchr(var, '=');
        GDA_FT_ASSERT(eq != NULL);
        *eq = '\0';
        setenv(var, eq + 1, 1);
    }
    va_end(ap);
    soft_test_env(ndev, NULL);

    t->plugin         = test_uct_load_plugin();
    t->comp           = test_uct_find_component();
    t->query_counters = (query_counters_func_t)dlsym(
            t->plugin, "uct_gda_ft_ep_query_counters");
    t->query_iface_counters = (query_iface_counters_func_t)dlsym(
            t->plugin, "uct_gda_ft_iface_query_counters");
    GDA_FT_ASSERT(t->query_counters != NULL);
    GDA_FT_ASSERT(t->query_iface_counters != NULL);
    test_uct_check_providers(t);
}

ucs_status_t test_node_try_open(test_uct_t *t, test_node_t *node,
                                const char *md_name, const char *dev_name)
{
    uct_iface_config_t *iface_config;
    uct_md_config_t *md_config;
    uct_iface_params_t params;
    ucs_status_t status;

    node->md_name  = md_name;
    node->dev_name = dev_name;
    GDA_FT_ASSERT_OK(uct_md_config_read(t->comp, NULL, NULL, &md_config));
    GDA_FT_ASSERT_OK(uct_md_open(t->comp, md_name, md_config, &node->md));
    uct_config_release(md_config);
    GDA_FT_ASSERT_OK(uct_md_query(node->md, &node->md_attr));

    GDA_FT_ASSERT_OK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                              &node->async));
    GDA_FT_ASSERT_OK(uct_worker_create(node->async, UCS_THREAD_MODE_SINGLE,
                                       &node->worker));

    GDA_FT_ASSERT_OK(uct_md_iface_config_read(node->md, "gda_ft", NULL, NULL,
                                              &iface_config));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "gda_ft";
    params.mode.device.dev_name = dev_name;
    params.stats_root           = NULL;
    params.rx_headroom          = 0;
    params.err_handler          = test_err_handler;
    params.err_handler_arg      = node;
    params.err_handler_flags    = 0;
    status = uct_iface_open(node->md, node->worker, &params, iface_config,
                            &node->iface);
    uct_config_release(iface_config);
    if (status != UCS_OK) {
        uct_worker_destroy(node->worker);
        ucs_async_context_destroy(node->async);
        uct_md_close(node->md);
        memset(node, 0, sizeof(*node));
        return status;
    }
    GDA_FT_ASSERT_OK(uct_iface_query(node->iface, &node->iface_attr));
    uct_iface_progress_enable(node->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    GDA_FT_ASSERT_EQ(posix_memalign((void**)&node->buf, 4096, BUF_SIZE), 0);
    memset(node->buf, 0, BUF_SIZE);
    GDA_FT_ASSERT_OK(uct_md_mem_reg(node->md, node->buf, BUF_SIZE,
                                    UCT_MD_MEM_ACCESS_ALL, &node->memh));
    GDA_FT_ASSERT(node->md_attr.rkey_packed_size <= sizeof(node->rkey_buf));
    GDA_FT_ASSERT_OK(uct_md_mkey_pack(node->md, node->memh, node->rkey_buf));
    return UCS_OK;
}

void test_node_open(test_uct_t *t, test_node_t *node, const char *md_name,
                    const char *dev_name)
{
    GDA_FT_ASSERT_OK(test_node_try_open(t, node, md_name, dev_name));
}

void test_node_close(test_uct_t *t, test_node_t *node)
{
    if (node->ep != NULL) {
        uct_ep_destroy(node->ep);
    }
    GDA_FT_ASSERT_OK(uct_md_mem_dereg(node->md, node->memh));
    free(node->buf);
    uct_iface_close(node->iface);
    uct_worker_destroy(node->worker);
    ucs_async_context_destroy(node->async);
    uct_md_close(node->md);
}

void test_connect(test_uct_t *t)
{
    uint8_t dev_addr[2][64], ep_addr[2][64];
    uct_ep_params_t ep_params;
    unsigned i;

    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT(t->node[i].iface_attr.device_addr_len <= 64);
        GDA_FT_ASSERT(t->node[i].iface_attr.ep_addr_len <= 64);
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = t->node[i].iface;
        GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &t->node[i].ep));
        GDA_FT_ASSERT_OK(uct_iface_get_device_address(
                t->node[i].iface, (uct_device_addr_t*)dev_addr[i]));
        GDA_FT_ASSERT_OK(uct_ep_get_address(t->node[i].ep,
                                            (uct_ep_addr_t*)ep_addr[i]));
    }

    for (i = 0; i < 2; ++i) {
        GDA_FT_ASSERT(uct_iface_is_reachable(
                t->node[i].iface, (uct_device_addr_t*)dev_addr[1 - i], NULL));
        GDA_FT_ASSERT_OK(uct_ep_connect_to_ep(
                t->node[i].ep, (uct_device_addr_t*)dev_addr[1 - i],
                (uct_ep_addr_t*)ep_addr[1 - i]));
        GDA_FT_ASSERT_OK(uct_rkey_unpack(t->comp, t->node[i].rkey_buf,
                                         &t->rkey[i]));
    }
}

/* A on tsoft0 (backup tsoft1), B on tsoft2 (backup tsoft3), connected */
void test_uct_setup(test_uct_t *t)
{
    test_node_open(t, &t->node[NODE_A], "gda_ft_tsoft0", "tsoft0:1");
    test_node_open(t, &t->node[NODE_B], "gda_ft_tsoft2", "tsoft2:1");
    test_connect(t);
}

void test_uct_cleanup(test_uct_t *t)
{
    unsigned i;

    for (i = 0; i < 2; ++i) {
        uct_rkey_release(t->comp, &t->rkey[i]);
    }
    for (i = 0; i < 2; ++i) {
        test_node_close(t, &t->node[i]);
    }
}

/* Progresses both nodes (a node closed by its test has no worker) */
unsigned test_progress(test_uct_t *t)
{
    unsigned i, count = 0;

    for (i = 0; i < 2; ++i) {
        if (t->node[i].worker != NULL) {
            count += uct_worker_progress(t->node[i].worker);
        }
    }
    return count;
}

/* Flushes A's endpoint and waits for the flush to complete */
ucs_status_t test_flush(test_uct_t *t)
{
    test_comp_t comp;
    ucs_status_t status;

    test_comp_init(&comp, 1);
    do {
        status = uct_ep_flush(t->node[NODE_A].ep, 0, &comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            test_progress(t);
        }
    } while (status == UCS_ERR_NO_RESOURCE);

    if (status == UCS_INPROGRESS) {
        TEST_WAIT(t, comp.calls == 1, 10000);
        return comp.super.status;
    }
    return status;
}

uint64_t raddr_b(test_uct_t *t, size_t offset)
{
    return (uintptr_t)(t->node[NODE_B].buf + offset);
}

uct_rkey_t rkey_b(test_uct_t *t)
{
    return t->rkey[NODE_B].rkey;
}



void test_port_set(test_uct_t *t, const char *dev, int up)
{
    soft_dev_find_func_t find = (soft_dev_find_func_t)dlsym(
            t->plugin, "gda_ft_soft_dev_find");
    soft_port_set_up_func_t set_up = (soft_port_set_up_func_t)dlsym(
            t->plugin, "gda_ft_soft_port_set_up");
    gda_ft_hca_dev_t *hca;

    GDA_FT_ASSERT((find != NULL) && (set_up != NULL));
    hca = find(dev);
    GDA_FT_ASSERT(hca != NULL);
    GDA_FT_ASSERT_OK(set_up(hca, 1, up));
}

void test_port_set_fault(test_uct_t *t, const char *dev,
                         const gda_ft_soft_fault_t *fault)
{
    soft_dev_find_func_t find = (soft_dev_find_func_t)dlsym(
            t->plugin, "gda_ft_soft_dev_find");
    soft_port_set_fault_func_t set_fault = (soft_port_set_fault_func_t)dlsym(
            t->plugin, "gda_ft_soft_port_set_fault");
    gda_ft_hca_dev_t *hca;

    GDA_FT_ASSERT((find != NULL) && (set_fault != NULL));
    hca = find(dev);
    GDA_FT_ASSERT(hca != NULL);
    GDA_FT_ASSERT_OK(set_fault(hca, 1, fault));
}

void test_port_lose_answers(test_uct_t *t, const char *dev)
{
    gda_ft_soft_fault_t fault = {0};

    fault.ack_drop = 1.0;
    test_port_set_fault(t, dev, &fault);
}

void test_unpack_cb(void *arg, const void *data, size_t length)
{
    test_unpack_arg_t *unpack = arg;

    GDA_FT_ASSERT_EQ(length, unpack->length);
    memcpy(unpack->dest, data, length);
    ++unpack->calls;
}

ucs_status_t test_pending_cb(uct_pending_req_t *self)
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

ucs_status_t test_put_short(test_uct_t *t, const void *data, unsigned length,
                            size_t offset)
{
    ucs_status_t status;

    while ((status = uct_ep_put_short(t->node[NODE_A].ep, data, length,
                                      raddr_b(t, offset), rkey_b(t))) ==
           UCS_ERR_NO_RESOURCE) {
        test_progress(t);
    }
    return status;
}

void test_put_word(test_uct_t *t, unsigned slot, uint64_t value)
{
    GDA_FT_ASSERT_OK(test_put_short(t, &value, 8, 8 * slot));
    GDA_FT_ASSERT_OK(test_flush(t));
    GDA_FT_ASSERT_EQ(((uint64_t*)t->node[NODE_B].buf)[slot], value);
}

/* Puts until *counter, a field of *c (A's counters, refreshed), reaches
 * the value; returns how long it took */
double test_put_until(test_uct_t *t, unsigned *slot, test_counters_t *c,
                      const uint32_t *counter, uint32_t value)
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

/* Opens another interface on a node's device with AM alignment parameters
 * (field_mask: which of them), closes it; returns the status */
ucs_status_t test_open_aligned(test_uct_t *t, test_node_t *node,
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

uint8_t test_oob_byte(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 7 + i);
}

size_t test_oob_pack(void *dest, void *arg)
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

ucs_status_t test_oob_am_cb(void *arg, void *data, size_t length,
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
void test_oob_send(test_uct_t *t, uint8_t am_id, uint32_t seq,
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
uct_ep_h test_oob_ep_create(test_uct_t *t)
{
    uint8_t dev_addr[64], iface_addr[64];
    uct_ep_params_t ep_params;
    uct_ep_h ep;

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
    GDA_FT_ASSERT_OK(uct_ep_create(&ep_params, &ep));
    return ep;
}

void test_oob_setup(test_uct_t *t)
{
    test_uct_env(t, 4, NULL);
    test_node_open(t, &t->node[NODE_A], "gda_ft_tsoft0", "tsoft0:oob");
    test_node_open(t, &t->node[NODE_B], "gda_ft_tsoft2", "tsoft2:oob");
    GDA_FT_ASSERT(t->node[NODE_B].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    GDA_FT_ASSERT(t->node[NODE_B].iface_attr.cap.flags &
                  UCT_IFACE_FLAG_CB_ASYNC);
    t->node[NODE_A].ep = test_oob_ep_create(t);
}

void test_oob_cleanup(test_uct_t *t)
{
    test_node_close(t, &t->node[NODE_A]);
    if (t->node[NODE_B].iface != NULL) {
        test_node_close(t, &t->node[NODE_B]);
    }
}

ucs_status_t test_am_cb(void *arg, void *data, size_t length,
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
ucs_status_t test_am_stream_cb(void *arg, void *data, size_t length,
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

size_t test_am_pack(void *dest, void *arg)
{
    test_am_pack_t *pack = arg;

    memcpy(dest, pack->src, pack->length);
    return pack->length;
}

void test_am_set_handler(test_uct_t *t, unsigned node,
                         uct_am_callback_t cb, test_am_rx_t *rx)
{
    memset(rx, 0, sizeof(*rx));
    GDA_FT_ASSERT_OK(uct_iface_set_am_handler(t->node[node].iface,
                                              TEST_AM_ID, cb, rx, 0));
}

void test_am_counters(test_uct_t *t, unsigned node,
                      test_am_counters_t *c)
{
    query_am_counters_func_t query = (query_am_counters_func_t)dlsym(
            t->plugin, "uct_gda_ft_ep_query_am_counters");

    GDA_FT_ASSERT(query != NULL);
    GDA_FT_ASSERT_OK(query(t->node[node].ep, c));
}

void test_am_short(test_uct_t *t, uint64_t header, const void *payload,
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

void test_am_bcopy(test_uct_t *t, const void *data, size_t length)
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
void test_am_stream_send(test_uct_t *t, uint64_t seq)
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

/* A failover before the fault would make the rest meaningless */
void test_assert_no_switch(test_uct_t *t, const char *when)
{
    test_counters_t counters;

    GDA_FT_ASSERT_OK(t->query_counters(t->node[NODE_A].ep, &counters));
    if (counters.switches != 0) {
        GDA_FT_FAIL("failover during %s, before any fault: the soft HCA "
                    "made no progress for a whole deadline (overloaded "
                    "machine?)", when);
    }
}

size_t test_pack_cb(void *dest, void *arg)
{
    test_pack_arg_t *pack = arg;

    memcpy(dest, pack->src, pack->length);
    return pack->length;
}

