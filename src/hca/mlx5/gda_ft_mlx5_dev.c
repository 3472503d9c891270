/*
 * mlx5 provider: settings, enumeration, device open and close, ports and
 * their GIDs, async events; the provider's operations table.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_int.h"
#include "gda_ft_mlx5_prm.h"

#include <ucs/config/parser.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Operations tables selectable by name, beside the verbs one */
#define GDA_FT_MLX5_MAX_SYS 4

const gda_ft_mlx5_sys_t *gda_ft_mlx5_sys = &gda_ft_mlx5_sys_verbs;
gda_ft_mlx5_config_t     gda_ft_mlx5_config;
static int               gda_ft_mlx5_config_loaded;
static const gda_ft_mlx5_sys_t *gda_ft_mlx5_sys_registered[GDA_FT_MLX5_MAX_SYS];
static unsigned          gda_ft_mlx5_num_sys;

static ucs_config_field_t gda_ft_mlx5_config_table[] = {
    {"GID_INDEX", "auto",
     "GID table index of every mlx5 port. auto: the first RoCE v2 entry\n"
     "with an IPv4-mapped address, else the first RoCE v2 entry, else 0\n"
     "(InfiniBand).",
     ucs_offsetof(gda_ft_mlx5_config_t, gid_index), UCS_CONFIG_TYPE_ULUNITS},

    {"SL", "0",
     "Service level of every QP (the Ethernet priority on RoCE). DevX QPs\n"
     "are given it explicitly: they do not take the kernel's defaults.",
     ucs_offsetof(gda_ft_mlx5_config_t, sl), UCS_CONFIG_TYPE_UINT},

    {"CMD_LOG", "",
     "File to append every DEVX command to: its input as sent and the\n"
     "firmware's status and syndrome (contrib/hw-check.sh attaches it to\n"
     "its report). Empty: none.",
     ucs_offsetof(gda_ft_mlx5_config_t, cmd_log), UCS_CONFIG_TYPE_STRING},

    {"SYS", "verbs",
     "What the provider drives: 'verbs' - ConnectX devices through\n"
     "rdma-core; 'emu' - the DEVX emulator, which serves every command,\n"
     "ring and doorbell as ConnectX firmware would, over the software HCA's\n"
     "engine: each device of UCX_GDA_FT_SOFT_DEVICES becomes an mlx5 device\n"
     "of the same name, and no soft device is seen beside them.",
     ucs_offsetof(gda_ft_mlx5_config_t, sys), UCS_CONFIG_TYPE_STRING},

    {NULL}
};

UCS_CONFIG_REGISTER_TABLE(gda_ft_mlx5_config_table, "GDA_FT mlx5 HCA",
                          "GDA_FT_MLX5_", gda_ft_mlx5_config_t,
                          &ucs_config_global_list)

void gda_ft_mlx5_sys_register(const gda_ft_mlx5_sys_t *sys)
{
    ucs_assert_always(gda_ft_mlx5_num_sys < GDA_FT_MLX5_MAX_SYS);
    gda_ft_mlx5_sys_registered[gda_ft_mlx5_num_sys++] = sys;
}

/* The table the setting names; a table installed by a test
 * (gda_ft_mlx5_sys_set) stays */
static ucs_status_t gda_ft_mlx5_sys_select(const char *name)
{
    unsigned i;

    if (!strcmp(name, gda_ft_mlx5_sys_verbs.name) ||
        (gda_ft_mlx5_sys != &gda_ft_mlx5_sys_verbs)) {
        return UCS_OK;
    }

    for (i = 0; i < gda_ft_mlx5_num_sys; ++i) {
        if (!strcmp(gda_ft_mlx5_sys_registered[i]->name, name)) {
            gda_ft_mlx5_sys = gda_ft_mlx5_sys_registered[i];
            if (gda_ft_mlx5_sys->selected != NULL) {
                gda_ft_mlx5_sys->selected();
            }
            ucs_debug("mlx5 provider: driving '%s'", name);
            return UCS_OK;
        }
    }

    ucs_error("UCX_GDA_FT_MLX5_SYS=%s: no such backend (verbs%s%s)", name,
              (gda_ft_mlx5_num_sys > 0) ? ", " : "",
              (gda_ft_mlx5_num_sys > 0) ?
              gda_ft_mlx5_sys_registered[0]->name : "");
    return UCS_ERR_NO_ELEM;
}

ucs_status_t gda_ft_mlx5_config_get(void)
{
    ucs_status_t status;

    if (gda_ft_mlx5_config_loaded) {
        return UCS_OK;
    }

    status = GDA_FT_CONFIG_FILL_OPTS(&gda_ft_mlx5_config,
                                     gda_ft_mlx5_config_table, "UCX_", 0);
    if (status != UCS_OK) {
        return status;
    }

    if (gda_ft_mlx5_config.sl > 15) {
        ucs_error("UCX_GDA_FT_MLX5_SL=%u: must be 0..15",
                  gda_ft_mlx5_config.sl);
        status = UCS_ERR_INVALID_PARAM;
        goto err_release;
    }

    status = gda_ft_mlx5_sys_select(gda_ft_mlx5_config.sys);
    if (status != UCS_OK) {
        goto err_release;
    }

    gda_ft_mlx5_config_loaded = 1;
    return UCS_OK;

err_release:
    ucs_config_parser_release_opts(&gda_ft_mlx5_config,
                                   gda_ft_mlx5_config_table);
    return status;
}

const gda_ft_mlx5_sys_t *gda_ft_mlx5_sys_set(const gda_ft_mlx5_sys_t *sys)
{
    const gda_ft_mlx5_sys_t *prev = gda_ft_mlx5_sys;

    gda_ft_mlx5_sys = sys;
    return prev;
}

static void gda_ft_mlx5_info_locality(gda_ft_hca_dev_info_t *info)
{
    char buf[64];

    info->numa_node     = -1;
    info->pci_bus_id[0] = '\0';
    if ((gda_ft_mlx5_sys->read_sysfs(info->name, "device/numa_node", buf,
                                     sizeof(buf)) == 0)) {
        info->numa_node = atoi(buf);
    }
    /* "device" is the link to the PCI function: its name is the bus id */
    if ((gda_ft_mlx5_sys->read_sysfs(info->name, "device", buf,
                                     sizeof(buf)) == 0) &&
        (strlen(buf) < sizeof(info->pci_bus_id))) {
        strcpy(info->pci_bus_id, buf);
    }
}

/* The number of ports of a device: only an opened device tells it */
static int gda_ft_mlx5_info_ports(struct ibv_device *device, unsigned *num_p)
{
    struct ibv_device_attr attr;
    struct ibv_context *ctx;
    int ret;

    ctx = gda_ft_mlx5_sys->open_device(device);
    if (ctx == NULL) {
        return errno ? errno : EIO;
    }

    ret = gda_ft_mlx5_sys->query_device(ctx, &attr);
    gda_ft_mlx5_sys->close_device(ctx);
    if (ret == 0) {
        *num_p = ucs_min(attr.phys_port_cnt, GDA_FT_HCA_MAX_PORTS);
    }
    return ret;
}

static ucs_status_t gda_ft_mlx5_query_devices(gda_ft_hca_dev_info_t **infos_p,
                                              unsigned *count_p)
{
    gda_ft_hca_dev_info_t *infos, *info;
    struct ibv_device **list;
    ucs_status_t status;
    int num, i, ret;

    *infos_p = NULL;
    *count_p = 0;

    /* the setting chooses what is enumerated */
    status = gda_ft_mlx5_config_get();
    if (status != UCS_OK) {
        return status;
    }

    list = gda_ft_mlx5_sys->get_device_list(&num);
    if (list == NULL) {
        /* no RDMA subsystem in this kernel: no devices, not an error */
        ucs_debug("mlx5: no RDMA devices: %m");
        return UCS_OK;
    }

    infos = ucs_calloc(ucs_max(num, 1), sizeof(*infos), "gda_ft_mlx5_infos");
    if (infos == NULL) {
        gda_ft_mlx5_sys->free_device_list(list);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num; ++i) {
        if (!gda_ft_mlx5_sys->is_supported(list[i])) {
            continue;
        }

        info = &infos[*count_p];
        ucs_strncpy_zero(info->name,
                         gda_ft_mlx5_sys->get_device_name(list[i]),
                         sizeof(info->name));
        ret = gda_ft_mlx5_info_ports(list[i], &info->num_ports);
        if (ret != 0) {
            ucs_diag("mlx5 device %s left out: cannot open it "
                     "for DEVX: %s", info->name, strerror(ret));
            continue;
        }
        info->provider = &gda_ft_mlx5_provider;
        gda_ft_mlx5_info_locality(info);
        ++(*count_p);
    }

    gda_ft_mlx5_sys->free_device_list(list);
    *infos_p = infos;
    return UCS_OK;
}

int gda_ft_mlx5_gid_choose(const struct ibv_gid_entry *entries,
                           unsigned count, int link_layer)
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff};
    int any_v2 = -1;
    unsigned i;

    if (link_layer != IBV_LINK_LAYER_ETHERNET) {
        return (count > 0) ? (int)entries[0].gid_index : -1;
    }

    for (i = 0; i < count; ++i) {
        if (entries[i].gid_type != IBV_GID_TYPE_ROCE_V2) {
            continue;
        }
        if (!memcmp(entries[i].gid.raw, v4_prefix, sizeof(v4_prefix))) {
            return entries[i].gid_index;
        }
        if (any_v2 < 0) {
            any_v2 = entries[i].gid_index;
        }
    }
    return any_v2;
}

/* Reads the port's GID table and keeps the entry to use */
static ucs_status_t gda_ft_mlx5_port_gid(gda_ft_mlx5_dev_t *dev,
                                         uint8_t port_num, int gid_tbl_len)
{
    gda_ft_mlx5_port_t *port = &dev->ports[port_num - 1];
    struct ibv_gid_entry *entries;
    unsigned count = 0;
    int i, chosen;

    gid_tbl_len = ucs_min(gid_tbl_len, GDA_FT_MLX5_MAX_GIDS);
    entries     = ucs_calloc(ucs_max(gid_tbl_len, 1), sizeof(*entries),
                             "gda_ft_mlx5_gids");
    if (entries == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < gid_tbl_len; ++i) {
        /* empty entries answer an error: skipped */
        if (gda_ft_mlx5_sys->query_gid(dev->ctx, port_num, i,
                                       &entries[count]) == 0) {
            ++count;
        }
    }

    if (gda_ft_mlx5_config.gid_index != UCS_ULUNITS_AUTO) {
        for (chosen = -1, i = 0; i < (int)count; ++i) {
            if (entries[i].gid_index == gda_ft_mlx5_config.gid_index) {
                chosen = entries[i].gid_index;
            }
        }
    } else {
        chosen = gda_ft_mlx5_gid_choose(entries, count, port->link_layer);
    }

    port->gid_index = chosen;
    memset(port->gid, 0, sizeof(port->gid));
    for (i = 0; i < (int)count; ++i) {
        if ((int)entries[i].gid_index == chosen) {
            memcpy(port->gid, entries[i].gid.raw, sizeof(port->gid));
        }
    }
    ucs_free(entries);
    return UCS_OK;
}

ucs_status_t gda_ft_mlx5_port_refresh_gid(gda_ft_mlx5_dev_t *dev,
                                          uint8_t port_num)
{
    struct ibv_port_attr port_attr;
    int ret;

    ret = gda_ft_mlx5_sys->query_port(dev->ctx, port_num, &port_attr);
    if (ret != 0) {
        ucs_error("%s: port %u: query failed: %s",
                  dev->super.attr.info.name, port_num, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return gda_ft_mlx5_port_gid(dev, port_num, port_attr.gid_tbl_len);
}

static ucs_status_t gda_ft_mlx5_port_query(gda_ft_hca_dev_t *hca_dev,
                                           uint8_t port_num,
                                           gda_ft_hca_port_attr_t *attr)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);
    struct ibv_port_attr port_attr;
    ucs_status_t status;
    int ret;

    ret = gda_ft_mlx5_sys->query_port(dev->ctx, port_num, &port_attr);
    if (ret != 0) {
        ucs_error("%s: port %u: query failed: %s", hca_dev->attr.info.name,
                  port_num, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    dev->ports[port_num - 1].link_layer = port_attr.link_layer;
    /* GIDs come and go with the netdev's addresses: chosen afresh */
    status = gda_ft_mlx5_port_gid(dev, port_num, port_attr.gid_tbl_len);
    if (status != UCS_OK) {
        return status;
    }

    memset(attr, 0, sizeof(*attr));
    attr->state      = (port_attr.state == IBV_PORT_ACTIVE) ?
                       GDA_FT_HCA_PORT_ACTIVE : GDA_FT_HCA_PORT_DOWN;
    attr->active_mtu = 128u << port_attr.active_mtu; /* IBV_MTU_256 = 1 */
    attr->lid        = port_attr.lid;
    memcpy(attr->gid, dev->ports[port_num - 1].gid, sizeof(attr->gid));
    if (dev->ports[port_num - 1].gid_index < 0) {
        ucs_diag("%s: port %u has no usable GID (RoCE v2 entries: none)",
                 hca_dev->attr.info.name, port_num);
    }
    return UCS_OK;
}

/* Current capabilities of one type (QUERY_HCA_CAP); out holds the
 * command's output, the capability at its `capability` field */
static ucs_status_t gda_ft_mlx5_dev_query_cap(gda_ft_mlx5_dev_t *dev,
                                              const char *name, unsigned type,
                                              uint32_t *out, size_t outlen)
{
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(query_hca_cap_in)] = {0};

    GDA_FT_MLX5_SET(query_hca_cap_in, in, opcode,
                    GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP);
    GDA_FT_MLX5_SET(query_hca_cap_in, in, op_mod,
                    GDA_FT_MLX5_HCA_CAP_OP_MOD(type));
    return gda_ft_mlx5_cmd_done(name, in, sizeof(in), out,
                                gda_ft_mlx5_sys->general_cmd(dev->ctx, in,
                                                             sizeof(in), out,
                                                             outlen) == 0) ?
           UCS_OK : UCS_ERR_IO_ERROR;
}

/*
 * What the device's capabilities change in its attributes: the largest
 * send WQE (inline data is what is left of it after the control, remote
 * address and inline headers), and the byte order of 8-byte atomic
 * results, which mlx5_core switches to host order where it can.
 */
static ucs_status_t gda_ft_mlx5_dev_read_caps(gda_ft_mlx5_dev_t *dev,
                                              const char *name)
{
    gda_ft_hca_dev_attr_t *attr = &dev->super.attr;
    uint32_t *out;
    void *cap;
    unsigned max_wqe;
    ucs_status_t status;

    out = ucs_calloc(1, GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_out),
                     "gda_ft_mlx5_caps");
    if (out == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    cap = GDA_FT_MLX5_ADDR_OF(query_hca_cap_out, out, capability);

    status = gda_ft_mlx5_dev_query_cap(dev, name, GDA_FT_MLX5_HCA_CAP_GENERAL,
                                       out,
                                       GDA_FT_MLX5_ST_SZ_BYTES(
                                               query_hca_cap_out));
    if (status != UCS_OK) {
        goto out;
    }
    max_wqe = GDA_FT_MLX5_GET(cmd_hca_cap, cap, max_wqe_sz_sq);
    if (max_wqe < GDA_FT_MLX5_WQE_BB) {
        ucs_error("%s: the device's largest send WQE is %u bytes", name,
                  max_wqe);
        status = UCS_ERR_UNSUPPORTED;
        goto out;
    }
    attr->max_inline = ucs_min(max_wqe, GDA_FT_MLX5_MAX_WQE_BYTES) -
                       GDA_FT_MLX5_INLINE_OVERHEAD;
    if (!GDA_FT_MLX5_GET(cmd_hca_cap, cap, atomic)) {
        goto out;   /* no atomic capabilities to ask for */
    }

    memset(out, 0, GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_out));
    status = gda_ft_mlx5_dev_query_cap(dev, name, GDA_FT_MLX5_HCA_CAP_ATOMIC,
                                       out,
                                       GDA_FT_MLX5_ST_SZ_BYTES(
                                               query_hca_cap_out));
    if ((status == UCS_OK) &&
        (GDA_FT_MLX5_GET(atomic_caps, cap, atomic_req_8B_endianness_mode) ==
         GDA_FT_MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS)) {
        attr->flags |= GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER;
    }
out:
    ucs_free(out);
    return status;
}

static void gda_ft_mlx5_dev_set_attr(gda_ft_mlx5_dev_t *dev,
                                     const gda_ft_hca_dev_info_t *info,
                                     const struct ibv_device_attr *dattr)
{
    gda_ft_hca_dev_attr_t *attr = &dev->super.attr;
    unsigned all_mem;

    all_mem = GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST) |
              GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_HOST_MAPPED) |
              GDA_FT_HCA_MEM_BIT(GDA_FT_HCA_MEM_CUDA);

    dev->super.provider = &gda_ft_mlx5_provider;
    attr->info          = *info;
    attr->info.num_ports = ucs_min(dattr->phys_port_cnt,
                                   GDA_FT_HCA_MAX_PORTS);
    attr->flags         = 0;
    attr->ring_mem_caps = all_mem;
    attr->mr_mem_caps   = all_mem;
    attr->max_sq_wqebb  = ucs_rounddown_pow2(dattr->max_qp_wr);
    attr->max_rq_wqe    = ucs_rounddown_pow2(dattr->max_qp_wr);
    /* until the capabilities say (gda_ft_mlx5_dev_read_caps) */
    attr->max_inline    = GDA_FT_MLX5_MAX_WQE_BYTES -
                          GDA_FT_MLX5_INLINE_OVERHEAD;
    attr->max_msg_size  = 1ul << 30;
    attr->max_rd_atomic = dattr->max_qp_rd_atom;
    attr->masked_atomics = 1;
}

/* Several workers may create QPs of one device at once */
static pthread_mutex_t gda_ft_mlx5_uar_gpu_lock = PTHREAD_MUTEX_INITIALIZER;

ucs_status_t gda_ft_mlx5_dev_gpu_doorbell(gda_ft_mlx5_dev_t *dev,
                                          volatile uint64_t **db_p)
{
    size_t offset = (char*)dev->uar->reg_addr - (char*)dev->uar->base_addr;
    ucs_status_t status = UCS_OK;
    void *gpu_page;
    int ret;

    pthread_mutex_lock(&gda_ft_mlx5_uar_gpu_lock);
    if (dev->uar_gpu == NULL) {
        /* portable: the one mapping of the device serves QPs made under
         * any CUDA context (a second GPU sharing the NIC), whose kernels
         * see the page at the same address (unified addressing) */
        ret = gda_ft_mlx5_sys->cuda_map_io(dev->uar->base_addr,
                                           sysconf(_SC_PAGESIZE),
                                           GDA_FT_CU_MEMHOSTREGISTER_PORTABLE |
                                           GDA_FT_CU_MEMHOSTREGISTER_IOMEMORY |
                                           GDA_FT_CU_MEMHOSTREGISTER_DEVICEMAP,
                                           &gpu_page);
        if (ret != 0) {
            ucs_error("%s: cannot map the doorbell page %p into the GPU "
                      "(cuMemHostRegister as I/O memory): %s%s",
                      dev->super.attr.info.name, dev->uar->base_addr,
                      strerror(ret), (ret == ENOSYS) ? " (no libcuda)" :
                      (ret == EINVAL) ? " (is the CUDA context current?)" :
                      "");
            status = UCS_ERR_UNSUPPORTED;
            goto out;
        }
        dev->uar_gpu = gpu_page;
    }
    *db_p = (volatile uint64_t*)((char*)dev->uar_gpu + offset);
out:
    pthread_mutex_unlock(&gda_ft_mlx5_uar_gpu_lock);
    return status;
}

static void gda_ft_mlx5_dev_free_uar(gda_ft_mlx5_dev_t *dev)
{
    int ret;

    if (dev->uar_gpu != NULL) {
        ret = gda_ft_mlx5_sys->cuda_unmap_io(dev->uar->base_addr);
        if (ret != 0) {
            ucs_error("%s: unmapping the doorbell page from the GPU failed: "
                      "%s", dev->super.attr.info.name, strerror(ret));
        }
        dev->uar_gpu = NULL;
    }
    gda_ft_mlx5_sys->free_uar(dev->uar);
}

/* UAR for doorbells: a non-cached page of our own where rdma-core can
 * give one (the plain NC type returns the context's shared page, whose
 * doorbells rdma-core rings too), then the shared non-cached one (what a
 * GPU maps), else the write-combining ones */
static ucs_status_t gda_ft_mlx5_dev_alloc_uar(gda_ft_mlx5_dev_t *dev)
{
    dev->uar = NULL;
#if HAVE_DECL_MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
    dev->uar = gda_ft_mlx5_sys->alloc_uar(dev->ctx,
                                          MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED);
#endif
    if (dev->uar == NULL) {
        dev->uar = gda_ft_mlx5_sys->alloc_uar(dev->ctx,
                                              MLX5DV_UAR_ALLOC_TYPE_NC);
    }
    if (dev->uar == NULL) {
        dev->uar = gda_ft_mlx5_sys->alloc_uar(dev->ctx,
                                              MLX5DV_UAR_ALLOC_TYPE_BF);
    }
    if (dev->uar == NULL) {
        ucs_error("%s: mlx5dv_devx_alloc_uar failed: %m",
                  dev->super.attr.info.name);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t gda_ft_mlx5_dev_setup(gda_ft_mlx5_dev_t *dev)
{
    const char *name = dev->super.attr.info.name;
    gda_ft_hca_port_attr_t port_attr;
    ucs_status_t status;
    int ret, fd, flags;
    uint8_t p;

    for (p = 1; p <= dev->super.attr.info.num_ports; ++p) {
        status = gda_ft_mlx5_port_query(&dev->super, p, &port_attr);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = gda_ft_mlx5_dev_alloc_uar(dev);
    if (status != UCS_OK) {
        return status;
    }

    ret = gda_ft_mlx5_sys->query_eqn(dev->ctx, 0, &dev->eqn);
    if (ret != 0) {
        ucs_error("%s: mlx5dv_devx_query_eqn failed: %s", name,
                  strerror(ret));
        goto err_free_uar;
    }

    /* the PRM layouts used give the CQ context 8 bits of EQ number */
    if (dev->eqn > 0xff) {
        ucs_error("%s: completion EQ 0x%x does not fit cqc.c_eqn", name,
                  dev->eqn);
        goto err_free_uar;
    }

    /* get_event polls: the async fd must not block */
    fd    = gda_ft_mlx5_sys->async_fd(dev->ctx);
    flags = fcntl(fd, F_GETFL);
    if ((flags < 0) || (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: cannot make the async event fd %d non-blocking: %m",
                  name, fd);
        goto err_free_uar;
    }
    return UCS_OK;

err_free_uar:
    gda_ft_mlx5_dev_free_uar(dev);
    return UCS_ERR_IO_ERROR;
}

static ucs_status_t gda_ft_mlx5_dev_open(const gda_ft_hca_dev_info_t *info,
                                         gda_ft_hca_dev_t **dev_p)
{
    struct ibv_device **list, *device = NULL;
    struct ibv_device_attr dattr;
    gda_ft_mlx5_dev_t *dev;
    ucs_status_t status;
    int num, i, ret;

    status = gda_ft_mlx5_config_get();
    if (status != UCS_OK) {
        return status;
    }

    list = gda_ft_mlx5_sys->get_device_list(&num);
    for (i = 0; (list != NULL) && (i < num); ++i) {
        if (!strcmp(gda_ft_mlx5_sys->get_device_name(list[i]), info->name)) {
            device = list[i];
        }
    }
    if (device == NULL) {
        ucs_error("mlx5 device %s is gone", info->name);
        status = UCS_ERR_NO_DEVICE;
        goto out_free_list;
    }

    dev = ucs_calloc(1, sizeof(*dev), "gda_ft_mlx5_dev");
    if (dev == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_free_list;
    }

    dev->ctx = gda_ft_mlx5_sys->open_device(device);
    if (dev->ctx == NULL) {
        ucs_error("%s: mlx5dv_open_device(DEVX) failed: %m", info->name);
        status = UCS_ERR_IO_ERROR;
        goto err_free_dev;
    }

    ret = gda_ft_mlx5_sys->query_device(dev->ctx, &dattr);
    if (ret != 0) {
        ucs_error("%s: ibv_query_device failed: %s", info->name,
                  strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    gda_ft_mlx5_dev_set_attr(dev, info, &dattr);
    if (gda_ft_mlx5_sys->dev_flags != NULL) {
        dev->super.attr.flags |= gda_ft_mlx5_sys->dev_flags(dev->ctx) &
                                 GDA_FT_HCA_DEV_FLAG_CPU_ENGINE;
    }
    status = gda_ft_mlx5_dev_read_caps(dev, info->name);
    if (status != UCS_OK) {
        goto err_close;
    }
    status = gda_ft_mlx5_dev_setup(dev);
    if (status != UCS_OK) {
        goto err_close;
    }

    *dev_p = &dev->super;
    goto out_free_list;

err_close:
    gda_ft_mlx5_sys->close_device(dev->ctx);
err_free_dev:
    ucs_free(dev);
out_free_list:
    if (list != NULL) {
        gda_ft_mlx5_sys->free_device_list(list);
    }
    return status;
}

static void gda_ft_mlx5_dev_close(gda_ft_hca_dev_t *hca_dev)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);

    gda_ft_mlx5_dev_free_uar(dev);
    gda_ft_mlx5_sys->close_device(dev->ctx);
    ucs_free(dev);
}

int gda_ft_mlx5_event_map(const struct ibv_async_event *ibv_event,
                          gda_ft_hca_event_t *event)
{
    memset(event, 0, sizeof(*event));
    switch (ibv_event->event_type) {
    case IBV_EVENT_PORT_ACTIVE:
        event->type     = GDA_FT_HCA_EVENT_PORT_ACTIVE;
        event->port_num = ibv_event->element.port_num;
        return 1;
    case IBV_EVENT_PORT_ERR:
        event->type     = GDA_FT_HCA_EVENT_PORT_ERR;
        event->port_num = ibv_event->element.port_num;
        return 1;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        /* verbs QPs only: errors of DEVX QPs come through DEVX event
         * channels, and show in their CQEs */
        event->type = GDA_FT_HCA_EVENT_QP_FATAL;
        event->qpn  = ibv_event->element.qp->qp_num;
        return 1;
    default:
        return 0;
    }
}

static ucs_status_t gda_ft_mlx5_get_event(gda_ft_hca_dev_t *hca_dev,
                                          gda_ft_hca_event_t *event)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);
    unsigned num_ports     = hca_dev->attr.info.num_ports;
    struct ibv_async_event ibv_event;
    int mapped;

    for (;;) {
        if (dev->fatal_ports > 0) {
            /* the device died: every port is down, one event each */
            memset(event, 0, sizeof(*event));
            event->type     = GDA_FT_HCA_EVENT_PORT_ERR;
            event->port_num = num_ports - --dev->fatal_ports;
            return UCS_OK;
        }

        if (gda_ft_mlx5_sys->get_async_event(dev->ctx, &ibv_event) != 0) {
            return UCS_ERR_NO_ELEM;   /* EAGAIN: none pending */
        }

        if (ibv_event.event_type == IBV_EVENT_DEVICE_FATAL) {
            ucs_error("%s: device fatal event", hca_dev->attr.info.name);
            dev->fatal_ports = num_ports;
            mapped           = 0;
        } else {
            mapped = gda_ft_mlx5_event_map(&ibv_event, event);
        }
        gda_ft_mlx5_sys->ack_async_event(&ibv_event);
        if (mapped) {
            return UCS_OK;
        }
    }
}

static int gda_ft_mlx5_event_fd(gda_ft_hca_dev_t *hca_dev)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);

    return gda_ft_mlx5_sys->async_fd(dev->ctx);
}

const gda_ft_hca_provider_t gda_ft_mlx5_provider = {
    .name          = "mlx5",
    .query_devices = gda_ft_mlx5_query_devices,
    .dev_open      = gda_ft_mlx5_dev_open,
    .dev_close     = gda_ft_mlx5_dev_close,
    .port_query    = gda_ft_mlx5_port_query,
    .get_event     = gda_ft_mlx5_get_event,
    .event_fd      = gda_ft_mlx5_event_fd,
    .pd_alloc      = gda_ft_mlx5_pd_alloc,
    .pd_free       = gda_ft_mlx5_pd_free,
    .mr_reg        = gda_ft_mlx5_mr_reg,
    .mr_dereg      = gda_ft_mlx5_mr_dereg,
    .cq_create     = gda_ft_mlx5_cq_create,
    .cq_destroy    = gda_ft_mlx5_cq_destroy,
    .qp_create     = gda_ft_mlx5_qp_create,
    .qp_modify     = gda_ft_mlx5_qp_modify,
    .qp_query      = gda_ft_mlx5_qp_query,
    .qp_destroy    = gda_ft_mlx5_qp_destroy
};

static void UCS_F_CTOR gda_ft_mlx5_provider_init(void)
{
    gda_ft_hca_provider_register(&gda_ft_mlx5_provider);
}
