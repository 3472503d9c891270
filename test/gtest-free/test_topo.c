/*
 * Backup HCA choice on synthetic hwloc topologies (the XML files in
 * test/topo/): the nearest port to a GPU or NUMA node, and each port's backup
 * by the rules of design §4, asserted port by port.
 */
#include "gda_ft_test.h"

#include <uct/ib/gda_ft/gda_ft_topo.h>
#include <ucs/debug/log.h>
#include <stdarg.h>
#ifdef __SANITIZE_ADDRESS__
#  include <sanitizer/lsan_interface.h>
#endif


typedef struct {
    const char *name;
    unsigned    num_ports;
    const char *pci_bus_id;
    int         numa_node;
} test_topo_dev_t;


/* ucs_error messages captured while a topology is created */
static unsigned test_topo_num_errors;
static char     test_topo_last_error[512];


static ucs_log_func_rc_t
test_topo_log_handler(const char *file, unsigned line, const char *function,
                      ucs_log_level_t level,
                      const ucs_log_component_config_t *comp_conf,
                      const char *message, va_list ap)
{
    if (level != UCS_LOG_LEVEL_ERROR) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    ++test_topo_num_errors;
    vsnprintf(test_topo_last_error, sizeof(test_topo_last_error), message, ap);
    return UCS_LOG_FUNC_RC_STOP;
}

static ucs_status_t test_topo_try_create(const char *xml,
                                         const test_topo_dev_t *devs,
                                         unsigned num_devs, const char *map,
                                         uct_gda_ft_topo_t **topo_p)
{
    gda_ft_hca_dev_info_t infos[16];
    uct_gda_ft_topo_params_t params;
    char path[1024];
    ucs_status_t status;
    unsigned i;

    GDA_FT_ASSERT(num_devs <= 16);
    memset(infos, 0, sizeof(infos));
    for (i = 0; i < num_devs; ++i) {
        snprintf(infos[i].name, sizeof(infos[i].name), "%s", devs[i].name);
        snprintf(infos[i].pci_bus_id, sizeof(infos[i].pci_bus_id), "%s",
                 devs[i].pci_bus_id);
        infos[i].num_ports = devs[i].num_ports;
        infos[i].numa_node = devs[i].numa_node;
    }

    if (xml != NULL) {
        snprintf(path, sizeof(path), "%s/test/topo/%s", gda_ft_test_srcdir(),
                 xml);
    }

    params.xml_path    = (xml != NULL) ? path : NULL;
    params.devices     = infos;
    params.num_devices = num_devs;
    params.backup_map  = map;

    test_topo_num_errors    = 0;
    test_topo_last_error[0] = '\0';
    ucs_log_push_handler(test_topo_log_handler);
    status = uct_gda_ft_topo_create(&params, topo_p);
    ucs_log_pop_handler();
    return status;
}

static uct_gda_ft_topo_t *test_topo_create(const char *xml,
                                           const test_topo_dev_t *devs,
                                           unsigned num_devs, const char *map)
{
    uct_gda_ft_topo_t *topo;
    ucs_status_t status;

    status = test_topo_try_create(xml, devs, num_devs, map, &topo);
    if (status != UCS_OK) {
        GDA_FT_FAIL("topology %s: %s (%s)", xml ? xml : "of this machine",
                    ucs_status_string(status), test_topo_last_error);
    }
    GDA_FT_ASSERT_EQ(test_topo_num_errors, 0);
    return topo;
}

static unsigned test_topo_port(const uct_gda_ft_topo_t *topo, const char *dev,
                               unsigned port_num)
{
    unsigned index;

    if (uct_gda_ft_topo_find_port(topo, dev, port_num, &index) != UCS_OK) {
        GDA_FT_FAIL("no port %s:%u in the topology", dev, port_num);
    }
    return index;
}

static void test_topo_expect_port(const uct_gda_ft_topo_t *topo,
                                  unsigned index, const char *what,
                                  const char *dev, unsigned port_num)
{
    const uct_gda_ft_topo_port_t *port = uct_gda_ft_topo_port(topo, index);

    if (strcmp(port->dev_name, dev) || (port->port_num != port_num)) {
        GDA_FT_FAIL("%s: got %s:%u, expected %s:%u", what, port->dev_name,
                    port->port_num, dev, port_num);
    }
}

static void test_topo_expect_gpu(const uct_gda_ft_topo_t *topo,
                                 const char *gpu, const char *dev,
                                 unsigned port_num)
{
    unsigned index;
    char what[64];

    GDA_FT_ASSERT_OK(uct_gda_ft_topo_nearest_to_gpu(topo, gpu, &index));
    snprintf(what, sizeof(what), "nearest port to GPU %s", gpu);
    test_topo_expect_port(topo, index, what, dev, port_num);
}

static void test_topo_expect_numa(const uct_gda_ft_topo_t *topo, int numa,
                                  const char *dev, unsigned port_num)
{
    unsigned index;
    char what[64];

    GDA_FT_ASSERT_OK(uct_gda_ft_topo_nearest_to_numa(topo, numa, &index));
    snprintf(what, sizeof(what), "nearest port to NUMA node %d", numa);
    test_topo_expect_port(topo, index, what, dev, port_num);
}

static void test_topo_expect_backup(const uct_gda_ft_topo_t *topo,
                                    const char *dev, unsigned port_num,
                                    const char *backup_dev,
                                    unsigned backup_port,
                                    uct_gda_ft_topo_backup_reason_t reason)
{
    unsigned index = test_topo_port(topo, dev, port_num);
    const uct_gda_ft_topo_port_t *port = uct_gda_ft_topo_port(topo, index);
    char what[64];

    if (port->backup_reason != reason) {
        GDA_FT_FAIL("%s:%u: backup reason '%s', expected '%s'", dev, port_num,
                    uct_gda_ft_topo_backup_reason_str(port->backup_reason),
                    uct_gda_ft_topo_backup_reason_str(reason));
    }

    if (backup_dev == NULL) {
        GDA_FT_ASSERT_EQ(port->backup, -1);
        return;
    }

    GDA_FT_ASSERT(port->backup >= 0);
    snprintf(what, sizeof(what), "backup of %s:%u", dev, port_num);
    test_topo_expect_port(topo, port->backup, what, backup_dev, backup_port);
}

static void test_topo_expect_str(const uct_gda_ft_topo_t *topo,
                                 const char *dev, unsigned port_num,
                                 const char *expected)
{
    char buf[UCT_GDA_FT_TOPO_STR_MAX];

    uct_gda_ft_topo_backup_str(topo, test_topo_port(topo, dev, port_num), buf,
                               sizeof(buf));
    if (strcmp(buf, expected)) {
        GDA_FT_FAIL("decision text '%s', expected '%s'", buf, expected);
    }
}


/*
 * DGX-like: each leaf PCIe switch holds GPU i and mlx5_i; two leaf switches
 * share a top-level switch. The provider lists the NICs out of PCI order:
 * pairs follow PCI order, not the list.
 */
static const test_topo_dev_t test_topo_dgx_devs[] = {
    {"mlx5_2", 1, "0000:35:00.0", 0}, {"mlx5_0", 1, "0000:15:00.0", 0},
    {"mlx5_5", 1, "0000:a5:00.0", 1}, {"mlx5_3", 1, "0000:45:00.0", 0},
    {"mlx5_7", 1, "0000:c5:00.0", 1}, {"mlx5_1", 1, "0000:25:00.0", 0},
    {"mlx5_6", 1, "0000:b5:00.0", 1}, {"mlx5_4", 1, "0000:95:00.0", 1}
};

static const char *test_topo_dgx_gpus[] = {
    "0000:14:00.0", "0000:24:00.0", "0000:34:00.0", "0000:44:00.0",
    "0000:94:00.0", "0000:a4:00.0", "0000:b4:00.0", "0000:c4:00.0"
};

GDA_FT_TEST(topo, dgx_gpu_nic_per_switch_adjacent_backup)
{
    uct_gda_ft_topo_t *topo;
    char nic[16], pair[16];
    unsigned i;

    topo = test_topo_create("dgx_8gpu_8nic.xml", test_topo_dgx_devs, 8, NULL);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_num_ports(topo), 8);

    for (i = 0; i < 8; ++i) {
        snprintf(nic, sizeof(nic), "mlx5_%u", i);
        snprintf(pair, sizeof(pair), "mlx5_%u", i ^ 1);
        test_topo_expect_gpu(topo, test_topo_dgx_gpus[i], nic, 1);
        test_topo_expect_backup(topo, nic, 1, pair, 1,
                                UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
        /* ports are indexed in PCI order */
        GDA_FT_ASSERT_EQ(test_topo_port(topo, nic, 1), i);
    }

    /* GPUs by hwloc OS device name, and upper-case bus ids */
    test_topo_expect_gpu(topo, "cuda5", "mlx5_5", 1);
    test_topo_expect_gpu(topo, "0000:B4:00.0", "mlx5_6", 1);

    test_topo_expect_str(topo, "mlx5_0", 1,
                         "mlx5_0:1 -> backup mlx5_1:1 (adjacent pair)");
    test_topo_expect_str(topo, "mlx5_7", 1,
                         "mlx5_7:1 -> backup mlx5_6:1 (adjacent pair)");
    uct_gda_ft_topo_destroy(topo);
}


/* 4 dual-port cards, each beside one GPU */
static const test_topo_dev_t test_topo_dual_port_devs[] = {
    {"mlx5_0", 2, "0000:13:00.0", 0}, {"mlx5_1", 2, "0000:33:00.0", 0},
    {"mlx5_2", 2, "0000:93:00.0", 1}, {"mlx5_3", 2, "0000:b3:00.0", 1}
};

GDA_FT_TEST(topo, dual_port_backup_is_other_port)
{
    static const char *gpus[] = {"0000:12:00.0", "0000:32:00.0",
                                 "0000:92:00.0", "0000:b2:00.0"};
    uct_gda_ft_topo_t *topo;
    char nic[16];
    unsigned i;

    topo = test_topo_create("dual_port_4nic.xml", test_topo_dual_port_devs, 4,
                            NULL);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_num_ports(topo), 8);

    for (i = 0; i < 4; ++i) {
        snprintf(nic, sizeof(nic), "mlx5_%u", i);
        /* both ports are equally near: port 1 */
        test_topo_expect_gpu(topo, gpus[i], nic, 1);
        test_topo_expect_backup(topo, nic, 1, nic, 2,
                                UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
        test_topo_expect_backup(topo, nic, 2, nic, 1,
                                UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    }

    test_topo_expect_str(topo, "mlx5_2", 2,
                         "mlx5_2:2 -> backup mlx5_2:1 (dual port)");
    uct_gda_ft_topo_destroy(topo);
}


/*
 * Dual-port cards with one PCI function per port: the sibling function is
 * the backup. mlx5_2 and mlx5_3 come without a PCI id; the topology knows
 * them by name.
 */
GDA_FT_TEST(topo, dual_function_backup_is_sibling_function)
{
    static const test_topo_dev_t devs[] = {
        {"mlx5_3", 1, "", 0}, {"mlx5_1", 1, "0000:13:00.1", 0},
        {"mlx5_2", 1, "", 0}, {"mlx5_0", 1, "0000:13:00.0", 0}
    };
    const uct_gda_ft_topo_port_t *port;
    uct_gda_ft_topo_t *topo;

    topo = test_topo_create("dual_function_2nic.xml", devs, 4, NULL);

    /* the PCI id the provider did not give, found by device name */
    port = uct_gda_ft_topo_port(topo, test_topo_port(topo, "mlx5_3", 1));
    GDA_FT_ASSERT(!strcmp(port->pci_bus_id, "0000:33:00.1"));

    test_topo_expect_gpu(topo, "0000:12:00.0", "mlx5_0", 1);
    test_topo_expect_gpu(topo, "cuda1", "mlx5_2", 1);
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    test_topo_expect_backup(topo, "mlx5_1", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    test_topo_expect_backup(topo, "mlx5_2", 1, "mlx5_3", 1,
                            UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    test_topo_expect_backup(topo, "mlx5_3", 1, "mlx5_2", 1,
                            UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    uct_gda_ft_topo_destroy(topo);
}


/* Two GPUs per switch share its NIC */
GDA_FT_TEST(topo, shared_nic_same_primary_adjacent_backup)
{
    static const test_topo_dev_t devs[] = {
        {"mlx5_0", 1, "0000:14:00.0", 0}, {"mlx5_1", 1, "0000:34:00.0", 0},
        {"mlx5_2", 1, "0000:94:00.0", 1}, {"mlx5_3", 1, "0000:b4:00.0", 1}
    };
    static const char *gpus[] = {
        "0000:12:00.0", "0000:13:00.0", "0000:32:00.0", "0000:33:00.0",
        "0000:92:00.0", "0000:93:00.0", "0000:b2:00.0", "0000:b3:00.0"
    };
    uct_gda_ft_topo_t *topo;
    char nic[16], pair[16];
    unsigned i;

    topo = test_topo_create("shared_nic_8gpu_4nic.xml", devs, 4, NULL);

    for (i = 0; i < 8; ++i) {
        snprintf(nic, sizeof(nic), "mlx5_%u", i / 2);
        test_topo_expect_gpu(topo, gpus[i], nic, 1);
    }

    for (i = 0; i < 4; ++i) {
        snprintf(nic, sizeof(nic), "mlx5_%u", i);
        snprintf(pair, sizeof(pair), "mlx5_%u", i ^ 1);
        test_topo_expect_backup(topo, nic, 1, pair, 1,
                                UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    }
    uct_gda_ft_topo_destroy(topo);
}


GDA_FT_TEST(topo, single_nic_no_backup)
{
    static const test_topo_dev_t devs[] = {{"mlx5_0", 1, "0000:3b:00.0", 0}};
    uct_gda_ft_topo_t *topo;
    char *text;
    size_t size;
    FILE *stream;
    unsigned index;

    topo = test_topo_create("single_nic.xml", devs, 1, NULL);

    test_topo_expect_gpu(topo, "0000:17:00.0", "mlx5_0", 1);
    test_topo_expect_numa(topo, 0, "mlx5_0", 1);
    test_topo_expect_backup(topo, "mlx5_0", 1, NULL, 0,
                            UCT_GDA_FT_TOPO_BACKUP_NONE);
    test_topo_expect_str(topo, "mlx5_0", 1, "mlx5_0:1 -> no backup");

    stream = open_memstream(&text, &size);
    GDA_FT_ASSERT(stream != NULL);
    uct_gda_ft_topo_print(topo, stream, "# ");
    fclose(stream);
    GDA_FT_ASSERT(!strcmp(text, "# mlx5_0:1 -> no backup\n"));
    free(text);

    /* a GPU the topology does not have */
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_gpu(topo, "0000:18:00.0",
                                                    &index),
                     UCS_ERR_NO_DEVICE);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_gpu(topo, "cuda1", &index),
                     UCS_ERR_NO_DEVICE);
    uct_gda_ft_topo_destroy(topo);
}


GDA_FT_TEST(topo, no_devices_no_port)
{
    uct_gda_ft_topo_t *topo;
    unsigned index;

    topo = test_topo_create("single_nic.xml", NULL, 0, NULL);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_num_ports(topo), 0);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_gpu(topo, "0000:17:00.0",
                                                    &index),
                     UCS_ERR_NO_DEVICE);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_numa(topo, 0, &index),
                     UCS_ERR_NO_DEVICE);
    uct_gda_ft_topo_destroy(topo);
}


GDA_FT_TEST(topo, explicit_map_overrides)
{
    uct_gda_ft_topo_t *topo;

    topo = test_topo_create("dgx_8gpu_8nic.xml", test_topo_dgx_devs, 8,
                            " mlx5_0:1=mlx5_7:1 , mlx5_3:1=mlx5_4:1");
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_7", 1,
                            UCT_GDA_FT_TOPO_BACKUP_EXPLICIT);
    test_topo_expect_backup(topo, "mlx5_3", 1, "mlx5_4", 1,
                            UCT_GDA_FT_TOPO_BACKUP_EXPLICIT);
    /* the map is one-way: everything else follows the rules */
    test_topo_expect_backup(topo, "mlx5_7", 1, "mlx5_6", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_1", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_4", 1, "mlx5_5", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_str(topo, "mlx5_0", 1,
                         "mlx5_0:1 -> backup mlx5_7:1 (explicit map)");
    /* the primary choice does not change */
    test_topo_expect_gpu(topo, test_topo_dgx_gpus[0], "mlx5_0", 1);
    uct_gda_ft_topo_destroy(topo);

    /* over the other port of a dual-port card */
    topo = test_topo_create("dual_port_4nic.xml", test_topo_dual_port_devs, 4,
                            "mlx5_0:1=mlx5_1:2,mlx5_0:2=mlx5_0:1");
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_1", 2,
                            UCT_GDA_FT_TOPO_BACKUP_EXPLICIT);
    test_topo_expect_backup(topo, "mlx5_0", 2, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_EXPLICIT);
    test_topo_expect_backup(topo, "mlx5_1", 2, "mlx5_1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT);
    uct_gda_ft_topo_destroy(topo);

    /* empty and blank maps are no map */
    topo = test_topo_create("dgx_8gpu_8nic.xml", test_topo_dgx_devs, 8, "");
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    uct_gda_ft_topo_destroy(topo);
    topo = test_topo_create("dgx_8gpu_8nic.xml", test_topo_dgx_devs, 8, "  ");
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    uct_gda_ft_topo_destroy(topo);
}


GDA_FT_TEST(topo, malformed_explicit_map_rejected)
{
    static const struct {
        const char *map;
        const char *token;  /* the message must name it */
    } cases[] = {
        {"mlx5_9:1=mlx5_1:1",                   "'mlx5_9:1=mlx5_1:1'"},
        {"mlx5_0:1=mlx5_1:1,mlx5_2:1=mlx5_8:1", "'mlx5_2:1=mlx5_8:1'"},
        {"mlx5_0:1=mlx5_0:1",                   "'mlx5_0:1=mlx5_0:1'"},
        {"mlx5_0:1-mlx5_1:1",                   "'mlx5_0:1-mlx5_1:1'"},
        {"mlx5_0:1=mlx5_1:1,mlx5_2:1",          "'mlx5_2:1'"},
        {"mlx5_0:1=mlx5_1:1=mlx5_2:1",          "'mlx5_0:1=mlx5_1:1=mlx5_2:1'"},
        {"mlx5_0=mlx5_1:1",                     "'mlx5_0=mlx5_1:1'"},
        {"mlx5_0:one=mlx5_1:1",                 "'mlx5_0:one=mlx5_1:1'"},
        {"mlx5_0:0=mlx5_1:1",                   "'mlx5_0:0=mlx5_1:1'"},
        {"mlx5_0:1=mlx5_1:+1",                  "'mlx5_0:1=mlx5_1:+1'"},
        {"mlx5_0:2=mlx5_1:1",                   "'mlx5_0:2=mlx5_1:1'"},
        {"mlx5_0:1=:1",                         "'mlx5_0:1=:1'"},
        {"mlx5_0:1=",                           "'mlx5_0:1='"},
        {"mlx5_0:1=mlx5_1:1,,mlx5_2:1=mlx5_3:1", "empty entry"},
        {"mlx5_0:1=mlx5_1:1,",                  "empty entry"},
        {"mlx5_0:1=mlx5_1:1,mlx5_0:1=mlx5_2:1", "'mlx5_0:1=mlx5_2:1'"}
    };
    uct_gda_ft_topo_t *topo;
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        topo   = NULL;
        status = test_topo_try_create("dgx_8gpu_8nic.xml", test_topo_dgx_devs,
                                      8, cases[i].map, &topo);
        if (status != UCS_ERR_INVALID_PARAM) {
            GDA_FT_FAIL("map '%s': status %s, expected %s", cases[i].map,
                        ucs_status_string(status),
                        ucs_status_string(UCS_ERR_INVALID_PARAM));
        }
        GDA_FT_ASSERT(topo == NULL);
        if (test_topo_num_errors != 1) {
            GDA_FT_FAIL("map '%s': %u error messages, expected 1",
                        cases[i].map, test_topo_num_errors);
        }
        if (strstr(test_topo_last_error, cases[i].token) == NULL) {
            GDA_FT_FAIL("map '%s': message '%s' does not name %s",
                        cases[i].map, test_topo_last_error, cases[i].token);
        }
    }
}


/*
 * No GPU: 2 sockets x 2 NUMA nodes; NICs on NUMA 0, 1 and 3 (two there).
 * The nearest NIC shares the NUMA node, else the socket.
 */
GDA_FT_TEST(topo, cpu_numa_nearest_nic)
{
    static const test_topo_dev_t devs[] = {
        {"mlx5_0", 1, "0000:17:00.0", 0}, {"mlx5_1", 1, "0000:3b:00.0", 1},
        {"mlx5_2", 1, "0000:d8:00.0", 3}, {"mlx5_3", 1, "0000:d9:00.0", 3}
    };
    uct_gda_ft_topo_t *topo;
    unsigned index;

    topo = test_topo_create("cpu_numa_4node.xml", devs, 4, NULL);
    test_topo_expect_numa(topo, 0, "mlx5_0", 1);
    test_topo_expect_numa(topo, 1, "mlx5_1", 1);
    test_topo_expect_numa(topo, 2, "mlx5_2", 1);
    test_topo_expect_numa(topo, 3, "mlx5_2", 1);
    test_topo_expect_backup(topo, "mlx5_1", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_2", 1, "mlx5_3", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);

    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_numa(topo, 4, &index),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_numa(topo, -1, &index),
                     UCS_ERR_INVALID_PARAM);
    /* an XML topology is not the machine the caller runs on */
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_nearest_to_caller(topo, &index),
                     UCS_ERR_UNSUPPORTED);
    uct_gda_ft_topo_destroy(topo);
}


/*
 * Soft HCAs have no PCI id: pairs follow the list order, the odd one out
 * takes the nearest other device by NUMA node.
 */
GDA_FT_TEST(topo, no_pci_id_list_order_pairs)
{
    static const test_topo_dev_t devs[] = {
        {"soft0", 1, "", 0}, {"soft1", 1, "", 3}, {"soft2", 1, "", 1}
    };
    uct_gda_ft_topo_t *topo;

    topo = test_topo_create("cpu_numa_4node.xml", devs, 3, NULL);
    test_topo_expect_backup(topo, "soft0", 1, "soft1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "soft1", 1, "soft0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "soft2", 1, "soft0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_NEAREST);
    test_topo_expect_str(topo, "soft2", 1,
                         "soft2:1 -> backup soft0:1 (nearest)");
    test_topo_expect_numa(topo, 1, "soft2", 1);
    test_topo_expect_numa(topo, 2, "soft1", 1);
    test_topo_expect_numa(topo, 3, "soft1", 1);
    uct_gda_ft_topo_destroy(topo);
}


/*
 * One host bridge: the GPU and mlx5_1 on root ports, mlx5_0 behind a PCIe
 * switch. Both share only the host bridge with the GPU; fewer hops win over
 * PCI order.
 */
GDA_FT_TEST(topo, same_host_bridge_fewer_hops)
{
    static const test_topo_dev_t devs[] = {
        {"mlx5_0", 1, "0000:18:00.0", 0}, {"mlx5_1", 1, "0000:3b:00.0", 0}
    };
    uct_gda_ft_topo_t *topo;

    topo = test_topo_create("host_bridge_2nic.xml", devs, 2, NULL);
    test_topo_expect_gpu(topo, "0000:3a:00.0", "mlx5_1", 1);
    test_topo_expect_gpu(topo, "cuda0", "mlx5_1", 1);
    test_topo_expect_numa(topo, 0, "mlx5_1", 1);
    test_topo_expect_backup(topo, "mlx5_1", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    uct_gda_ft_topo_destroy(topo);
}


/* An odd device out takes the nearest other device as its backup */
GDA_FT_TEST(topo, odd_device_nearest_backup)
{
    static const test_topo_dev_t devs3[] = {
        {"mlx5_5", 1, "0000:a5:00.0", 1}, {"mlx5_0", 1, "0000:15:00.0", 0},
        {"mlx5_4", 1, "0000:95:00.0", 1}
    };
    static const test_topo_dev_t devs5[] = {
        {"mlx5_0", 1, "0000:15:00.0", 0}, {"mlx5_1", 1, "0000:25:00.0", 0},
        {"mlx5_2", 1, "0000:35:00.0", 0}, {"mlx5_3", 1, "0000:45:00.0", 0},
        {"mlx5_4", 1, "0000:95:00.0", 1}
    };
    uct_gda_ft_topo_t *topo;

    /* PCI order mlx5_0, mlx5_4, mlx5_5: mlx5_5 is odd; mlx5_4 shares its
     * top-level switch, mlx5_0 is on the other socket */
    topo = test_topo_create("dgx_8gpu_8nic.xml", devs3, 3, NULL);
    test_topo_expect_backup(topo, "mlx5_0", 1, "mlx5_4", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_4", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_5", 1, "mlx5_4", 1,
                            UCT_GDA_FT_TOPO_BACKUP_NEAREST);
    test_topo_expect_str(topo, "mlx5_5", 1,
                         "mlx5_5:1 -> backup mlx5_4:1 (nearest)");
    /* GPUs whose NIC is missing go to the nearest one left */
    test_topo_expect_gpu(topo, test_topo_dgx_gpus[1], "mlx5_0", 1);
    test_topo_expect_gpu(topo, test_topo_dgx_gpus[3], "mlx5_0", 1);
    test_topo_expect_gpu(topo, test_topo_dgx_gpus[5], "mlx5_5", 1);
    test_topo_expect_gpu(topo, test_topo_dgx_gpus[7], "mlx5_4", 1);
    uct_gda_ft_topo_destroy(topo);

    /* mlx5_4 is odd; all of socket 0 is equally far: PCI order decides */
    topo = test_topo_create("dgx_8gpu_8nic.xml", devs5, 5, NULL);
    test_topo_expect_backup(topo, "mlx5_3", 1, "mlx5_2", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "mlx5_4", 1, "mlx5_0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_NEAREST);
    uct_gda_ft_topo_destroy(topo);
}


/* The machine this runs on, with two soft HCAs */
GDA_FT_TEST(topo, live_machine_soft_devices)
{
    static const test_topo_dev_t devs[] = {
        {"soft0", 1, "", -1}, {"soft1", 1, "", -1}
    };
    uct_gda_ft_topo_t *topo;
    unsigned index;

#ifdef __SANITIZE_ADDRESS__
    /* libpciaccess, under hwloc's PCI discovery, leaks about 1 KiB a load */
    __lsan_disable();
#endif
    topo = test_topo_create(NULL, devs, 2, NULL);
#ifdef __SANITIZE_ADDRESS__
    __lsan_enable();
#endif
    GDA_FT_ASSERT_EQ(uct_gda_ft_topo_num_ports(topo), 2);
    test_topo_expect_backup(topo, "soft0", 1, "soft1", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    test_topo_expect_backup(topo, "soft1", 1, "soft0", 1,
                            UCT_GDA_FT_TOPO_BACKUP_ADJACENT);
    GDA_FT_ASSERT_OK(uct_gda_ft_topo_nearest_to_caller(topo, &index));
    GDA_FT_ASSERT(index < 2);
    uct_gda_ft_topo_destroy(topo);
}
