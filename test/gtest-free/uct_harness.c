/*
 * Two gda_ft UCT nodes in one process (see uct_harness.h).
 */
#include "uct_harness.h"

#include <dlfcn.h>
#include <stdarg.h>
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

/* Declares tsoft0..3, loads the plugin; extra: "VAR=value" settings */
void test_uct_env(test_uct_t *t, unsigned ndev, ...)
{
    const char *setting;
    char var[256], *eq;
    va_list ap;

    memset(t, 0, sizeof(*t));
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 1);
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

void test_port_lose_answers(test_uct_t *t, const char *dev)
{
    soft_dev_find_func_t find = (soft_dev_find_func_t)dlsym(
            t->plugin, "gda_ft_soft_dev_find");
    soft_port_set_fault_func_t set_fault = (soft_port_set_fault_func_t)dlsym(
            t->plugin, "gda_ft_soft_port_set_fault");
    gda_ft_soft_fault_t fault = {0};
    gda_ft_hca_dev_t *hca;

    GDA_FT_ASSERT((find != NULL) && (set_fault != NULL));
    hca = find(dev);
    GDA_FT_ASSERT(hca != NULL);
    fault.ack_drop = 1.0;
    GDA_FT_ASSERT_OK(set_fault(hca, 1, &fault));
}

