/*
 * The mlx5 provider's control path over the recording backend: every PRM
 * field it writes is read back from the recorded command and compared with
 * what it was asked for; every failing call must unwind without a leak and
 * with an error logged; syndromes and async events map as documented.
 * Here: enumeration, open (ports, GIDs, UAR), syndromes, events and codes.
 * The suite goes on in test_mlx5_provider_cmd.c (the commands' fields),
 * test_mlx5_provider_mem.c (memory and rings) and
 * test_mlx5_provider_fail.c (failures and refusals); the world they share
 * is mlx5_harness.h's.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mlx5_harness.h"
#include "gda_ft_test.h"

#include <ucs/debug/memtrack_int.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

GDA_FT_TEST(mlx5_provider, no_rdma_subsystem_is_no_devices)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count = 99;

    mlx5_rec_init();
    mlx5_rec.no_rdma = 1;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 0);
    ucs_free(infos);

    mlx5_rec.no_rdma  = 0;
    mlx5_rec.num_devs = 0;
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 0);
    ucs_free(infos);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, enumerates_mlx5_devices_with_locality)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count;

    mlx5_rec_init();
    mlx5_rec.devs[1]           = mlx5_rec.devs[0];
    mlx5_rec.devs[1].name      = "irdma0";  /* not an mlx5 device */
    mlx5_rec.devs[1].supported = 0;
    mlx5_rec.devs[2]           = mlx5_rec.devs[0];
    mlx5_rec.devs[2].name      = "mlx5_1";
    mlx5_rec.devs[2].num_ports = 1;
    mlx5_rec.devs[2].pci_bus_id = NULL;
    mlx5_rec.num_devs          = 3;

    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    GDA_FT_ASSERT_EQ(count, 2);
    GDA_FT_ASSERT(!strcmp(infos[0].name, "mlx5_0"));
    GDA_FT_ASSERT(infos[0].provider == &gda_ft_mlx5_provider);
    GDA_FT_ASSERT_EQ(infos[0].num_ports, 2);
    GDA_FT_ASSERT_EQ(infos[0].numa_node, 1);
    GDA_FT_ASSERT(!strcmp(infos[0].pci_bus_id, "0000:17:00.0"));
    GDA_FT_ASSERT(!strcmp(infos[1].name, "mlx5_1"));
    GDA_FT_ASSERT_EQ(infos[1].num_ports, 1);
    GDA_FT_ASSERT(!strcmp(infos[1].pci_bus_id, ""));
    ucs_free(infos);
    /* the devices opened to count their ports are closed again */
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_OPEN_DEVICE), 2);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, registered_in_the_hca_registry)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i, found = 0;

    mlx5_rec_init();
    GDA_FT_ASSERT_OK(gda_ft_hca_query_devices(&infos, &count));
    for (i = 0; i < count; ++i) {
        found += !strcmp(infos[i].name, "mlx5_0") &&
                 !strcmp(infos[i].provider->name, "mlx5");
    }
    gda_ft_hca_free_device_list(infos);
    GDA_FT_ASSERT_EQ(found, 1);
}

GDA_FT_TEST(mlx5_provider, open_reads_ports_and_chooses_the_roce_v2_gid)
{
    gda_ft_hca_port_attr_t port;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(t.dev->attr.info.num_ports, 2);
    GDA_FT_ASSERT_EQ(t.dev->attr.flags, 0);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_sq_wqebb, 32768);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_rd_atomic, 16);
    GDA_FT_ASSERT_EQ(t.pd->pdn, 0x1234);
    /* doorbells: a non-cached UAR, our own where rdma-core has the type;
     * CQs: completion vector 0 */
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_ALLOC_UAR, 0)->arg[0],
                     TEST_MLX5_UAR_FIRST);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_QUERY_EQN, 0)->arg[0], 0);

    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 1, &port));
    GDA_FT_ASSERT_EQ(port.state, GDA_FT_HCA_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(port.active_mtu, 4096);
    GDA_FT_ASSERT_MEM_EQ(port.gid, mlx5_rec.devs[0].gids[3].gid.raw, 16);
    GDA_FT_ASSERT_EQ(ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->
                     ports[0].gid_index, 3);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 2, &port));
    GDA_FT_ASSERT_EQ(port.state, GDA_FT_HCA_PORT_DOWN);
    test_mlx5_close(&t);
}

/*
 * The device's capabilities at open: the largest send WQE bounds inline
 * data, and the current atomic capabilities say in which byte order 8-byte
 * fetching atomics return (mlx5_core picks host order where it can): both
 * profiles, and a device without atomics.
 */
GDA_FT_TEST(mlx5_provider, open_reads_wqe_size_and_atomic_reply_order)
{
    const mlx5_rec_entry_t *cmd;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.atomic_host_order = 1;
    mlx5_rec.max_wqe_sz_sq     = 512;
    test_mlx5_open(&t);
    GDA_FT_ASSERT(t.dev->attr.flags & GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER);
    GDA_FT_ASSERT_EQ(t.dev->attr.max_inline, 512 - 36);
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP, 1);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(query_hca_cap_in, cmd->in, op_mod),
                     (GDA_FT_MLX5_HCA_CAP_ATOMIC << 1) | 1);
    test_mlx5_close(&t);

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    GDA_FT_ASSERT(!(t.dev->attr.flags &
                    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER));
    GDA_FT_ASSERT_EQ(t.dev->attr.max_inline, 1024 - 36);
    test_mlx5_close(&t);

    test_mlx5_setup(&t);
    mlx5_rec.atomic = 0;
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(mlx5_rec_count_cmd(GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP), 1);
    GDA_FT_ASSERT(!(t.dev->attr.flags &
                    GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER));
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, uar_falls_back_to_write_combining)
{
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.uar_nc_fails = 1;
    test_mlx5_open(&t);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_ALLOC_UAR),
                     TEST_MLX5_UAR_NC_TYPES + 1);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_ALLOC_UAR,
                                   TEST_MLX5_UAR_NC_TYPES)->arg[0],
                     MLX5DV_UAR_ALLOC_TYPE_BF);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, open_refuses_an_eq_number_the_cq_cannot_hold)
{
    gda_ft_hca_dev_info_t info = {.name = "mlx5_0"};
    gda_ft_hca_dev_t *dev;

    mlx5_rec_init();
    ucs_log_push_handler(test_mlx5_log);
    mlx5_rec.eqn = 0x100;
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_provider.dev_open(&info, &dev),
                     UCS_ERR_IO_ERROR);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "cqc.c_eqn") != NULL);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

GDA_FT_TEST(mlx5_provider, gid_choice_rules)
{
    struct ibv_gid_entry e[3];

    memset(e, 0, sizeof(e));
    e[0].gid_index = 4;
    e[0].gid_type  = IBV_GID_TYPE_ROCE_V2;
    e[0].gid.raw[0] = 0xfe;                          /* IPv6 */
    e[1].gid_index = 7;
    e[1].gid_type  = IBV_GID_TYPE_ROCE_V1;
    e[1].gid.raw[10] = e[1].gid.raw[11] = 0xff;      /* IPv4, v1 */
    e[2].gid_index = 9;
    e[2].gid_type  = IBV_GID_TYPE_ROCE_V2;
    e[2].gid.raw[10] = e[2].gid.raw[11] = 0xff;      /* IPv4, v2 */
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 3, IBV_LINK_LAYER_ETHERNET), 9);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 2, IBV_LINK_LAYER_ETHERNET), 4);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e + 1, 1,
                                            IBV_LINK_LAYER_ETHERNET), -1);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 3,
                                            IBV_LINK_LAYER_INFINIBAND), 4);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_gid_choose(e, 0, IBV_LINK_LAYER_ETHERNET),
                     -1);
}

GDA_FT_TEST(mlx5_provider, gid_index_setting_overrides_the_choice)
{
    gda_ft_hca_port_attr_t port;
    test_mlx5_t t;

    setenv("UCX_GDA_FT_MLX5_GID_INDEX", "1", 1);
    test_mlx5_setup(&t);
    mlx5_rec.devs[0].gid_missing[2] = 1;   /* a hole in the table */
    test_mlx5_open(&t);
    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(t.dev, 1, &port));
    GDA_FT_ASSERT_MEM_EQ(port.gid, mlx5_rec.devs[0].gids[1].gid.raw, 16);
    GDA_FT_ASSERT_EQ(ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->
                     ports[0].gid_index, 1);
    test_mlx5_close(&t);
}


GDA_FT_TEST(mlx5_provider, syndromes_map_to_statuses)
{
    static const struct {
        uint8_t      syndrome;
        ucs_status_t status;
        int          path;
    } map[] = {
        {GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR,       UCS_ERR_MESSAGE_TRUNCATED, 0},
        {GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR,        UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_LOCAL_PROT_ERR,         UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_WR_FLUSH_ERR,           UCS_ERR_CANCELED,          0},
        {GDA_FT_MLX5_SYND_BAD_RESP_ERR,           UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR,       UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR,   UCS_ERR_INVALID_PARAM,     0},
        {GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR,      UCS_ERR_INVALID_ADDR,      0},
        {GDA_FT_MLX5_SYND_REMOTE_OP_ERR,          UCS_ERR_IO_ERROR,          0},
        {GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR, UCS_ERR_ENDPOINT_TIMEOUT, 1},
        {GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR,      UCS_ERR_BUSY,              0},
        {GDA_FT_MLX5_SYND_REMOTE_ABORTED_ERR,     UCS_ERR_CONNECTION_RESET,  0},
        {0x77,                                    UCS_ERR_IO_ERROR,          0}
    };
    unsigned i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_syndrome_status(map[i].syndrome),
                         map[i].status);
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_syndrome_is_path_error(map[i].syndrome),
                         map[i].path);
    }
}

GDA_FT_TEST(mlx5_provider, async_events_map_to_port_and_qp_events)
{
    struct ibv_qp verbs_qp = {.qp_num = 0x77};
    gda_ft_hca_event_t ev;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    mlx5_rec.events[0] = (struct ibv_async_event){
        .event_type = IBV_EVENT_PORT_ERR, .element.port_num = 2};
    mlx5_rec.events[1] = (struct ibv_async_event){
        .event_type = IBV_EVENT_LID_CHANGE, .element.port_num = 1};
    mlx5_rec.events[2] = (struct ibv_async_event){
        .event_type = IBV_EVENT_PORT_ACTIVE, .element.port_num = 2};
    mlx5_rec.events[3] = (struct ibv_async_event){
        .event_type = IBV_EVENT_QP_FATAL, .element.qp = &verbs_qp};
    mlx5_rec.events[4] = (struct ibv_async_event){
        .event_type = IBV_EVENT_DEVICE_FATAL};
    mlx5_rec.num_events = 5;
    test_mlx5_open(&t);

    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));  /* LID skipped */
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ACTIVE);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_QP_FATAL);
    GDA_FT_ASSERT_EQ(ev.qpn, 0x77);
    /* a dead device: every port goes down */
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 1);
    GDA_FT_ASSERT_OK(gda_ft_hca_get_event(t.dev, &ev));
    GDA_FT_ASSERT_EQ(ev.type, GDA_FT_HCA_EVENT_PORT_ERR);
    GDA_FT_ASSERT_EQ(ev.port_num, 2);
    GDA_FT_ASSERT_EQ(gda_ft_hca_get_event(t.dev, &ev), UCS_ERR_NO_ELEM);
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_ACK_ASYNC_EVENT), 5);
    GDA_FT_ASSERT(gda_ft_hca_event_fd(t.dev) >= 0);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, mtu_state_and_udp_port_codes)
{
    static const unsigned mtus[] = {256, 512, 1024, 2048, 4096};
    gda_ft_hca_qp_state_t state;
    unsigned i;

    for (i = 0; i < 5; ++i) {
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_code(mtus[i]), i + 1);
        GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_bytes(i + 1), mtus[i]);
    }
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_code(1500), 0);
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_mtu_bytes(7), 0);

    GDA_FT_ASSERT(gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_SQER,
                                                &state));
    GDA_FT_ASSERT_EQ(state, GDA_FT_HCA_QP_ERR);
    GDA_FT_ASSERT(gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_RTR,
                                                &state));
    GDA_FT_ASSERT_EQ(state, GDA_FT_HCA_QP_RTR);
    GDA_FT_ASSERT(!gda_ft_mlx5_qp_state_from_prm(GDA_FT_MLX5_QPC_STATE_SQD,
                                                 &state));

    for (i = 0; i < 1000; ++i) {
        GDA_FT_ASSERT(gda_ft_mlx5_udp_sport(i, 0x1000 + i) >= 0xc000);
    }
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_udp_sport(5, 9), gda_ft_mlx5_udp_sport(5, 9));
    GDA_FT_ASSERT_NE(gda_ft_mlx5_udp_sport(5, 9),
                     gda_ft_mlx5_udp_sport(6, 9));
}

/* The real backend, on whatever this machine has (no RDMA device in CI):
 * enumeration answers without an error, and what it finds is complete */
GDA_FT_TEST(mlx5_provider, verbs_backend_enumerates_without_error)
{
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i;

    gda_ft_mlx5_sys_set(&gda_ft_mlx5_sys_verbs);
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.query_devices(&infos, &count));
    for (i = 0; i < count; ++i) {
        GDA_FT_ASSERT(infos[i].provider == &gda_ft_mlx5_provider);
        GDA_FT_ASSERT(infos[i].num_ports >= 1);
        GDA_FT_ASSERT(strlen(infos[i].name) > 0);
    }
    printf("%u mlx5 device(s) on this machine\n", count);
    ucs_free(infos);
}
