/*
 * gda_ft UCT transport: component, memory domain, remote keys.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_md.h"

#include <gda_ft_uct_compat.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/math.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#ifdef __SANITIZE_ADDRESS__
#  include <sanitizer/lsan_interface.h>
#endif


/* ---- configuration ------------------------------------------------------- */

static ucs_config_field_t uct_gda_ft_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gda_ft_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"BACKUP_MAP", "",
     "Explicit backup ports, overriding the topology choice: a comma-\n"
     "separated list of PRIMARY_DEV:PORT=BACKUP_DEV:PORT, e.g.\n"
     "mlx5_0:1=mlx5_3:1.\n"
     "Ports not listed get their backup from the topology (other port of a\n"
     "dual-port card, else the adjacent HCA of a pair, else the nearest).",
     ucs_offsetof(uct_gda_ft_md_config_t, backup_map),
     UCS_CONFIG_TYPE_STRING},

    {"TOPO_FILE", "",
     "hwloc XML topology used for the backup choice instead of the live\n"
     "machine (for tests and for machines whose topology hwloc misreads).",
     ucs_offsetof(uct_gda_ft_md_config_t, topo_file),
     UCS_CONFIG_TYPE_STRING},

    {"CUDA_REG", "try",
     "Register CUDA device memory (detected through the CUDA driver API):\n"
     "yes - required (fail opening the MD without a CUDA driver),\n"
     "try - when a CUDA driver is present, no - host memory only.",
     ucs_offsetof(uct_gda_ft_md_config_t, cuda), UCS_CONFIG_TYPE_TERNARY},

    {NULL}
};


/* ---- device cache -------------------------------------------------------- */

static pthread_mutex_t uct_gda_ft_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(uct_gda_ft_dev_list);

static ucs_status_t uct_gda_ft_dev_get(const char *name,
                                       uct_gda_ft_dev_t **dev_p)
{
    uct_gda_ft_dev_t *dev;
    ucs_status_t status;

    pthread_mutex_lock(&uct_gda_ft_dev_lock);
    ucs_list_for_each(dev, &uct_gda_ft_dev_list, list) {
        if (!strcmp(dev->hca->attr.info.name, name)) {
            ++dev->refcount;
            goto out;
        }
    }

    dev = ucs_calloc(1, sizeof(*dev), "gda_ft_dev");
    if (dev == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_unlock;
    }

    status = gda_ft_hca_open(name, &dev->hca);
    if (status != UCS_OK) {
        ucs_error("failed to open HCA %s: %s", name,
                  ucs_status_string(status));
        goto err_free;
    }

    status = gda_ft_hca_pd_alloc(dev->hca, &dev->pd);
    if (status != UCS_OK) {
        ucs_error("%s: failed to allocate a PD: %s", name,
                  ucs_status_string(status));
        goto err_close;
    }

    dev->refcount = 1;
    ucs_list_add_tail(&uct_gda_ft_dev_list, &dev->list);
    ucs_debug("opened HCA %s", name);
out:
    pthread_mutex_unlock(&uct_gda_ft_dev_lock);
    *dev_p = dev;
    return UCS_OK;

err_close:
    gda_ft_hca_close(dev->hca);
err_free:
    ucs_free(dev);
err_unlock:
    pthread_mutex_unlock(&uct_gda_ft_dev_lock);
    return status;
}

static void uct_gda_ft_dev_put(uct_gda_ft_dev_t *dev)
{
    pthread_mutex_lock(&uct_gda_ft_dev_lock);
    if (--dev->refcount == 0) {
        ucs_list_del(&dev->list);
        ucs_debug("closing HCA %s", dev->hca->attr.info.name);
        gda_ft_hca_pd_free(dev->pd);
        gda_ft_hca_close(dev->hca);
        ucs_free(dev);
    }
    pthread_mutex_unlock(&uct_gda_ft_dev_lock);
}


/* ---- CUDA pointer detection ---------------------------------------------- */

/* The few driver API definitions needed; no CUDA headers at build time */
#define UCT_GDA_FT_CU_SUCCESS                     0
#define UCT_GDA_FT_CU_POINTER_ATTR_MEMORY_TYPE    2
#define UCT_GDA_FT_CU_POINTER_ATTR_DEVICE_POINTER 3
#define UCT_GDA_FT_CU_POINTER_ATTR_IS_MANAGED     8
#define UCT_GDA_FT_CU_MEMORYTYPE_DEVICE           2

/* cuPointerGetAttributes: unlike cuPointerGetAttribute, it succeeds on
 * memory CUDA does not know (the attributes read 0), so a host pointer
 * is no driver error, which compute-sanitizer would report as the
 * program's */
typedef int (*uct_gda_ft_cu_pointer_get_attrs_t)(unsigned count,
                                                 int *attributes,
                                                 void **data,
                                                 unsigned long long ptr);

static pthread_once_t uct_gda_ft_cuda_once = PTHREAD_ONCE_INIT;
static uct_gda_ft_cu_pointer_get_attrs_t uct_gda_ft_cu_pointer_get_attrs;

static void uct_gda_ft_cuda_load(void)
{
    void *handle;

    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        ucs_debug("no CUDA driver (%s): host memory only",
                  dlerror());
        return;
    }

    uct_gda_ft_cu_pointer_get_attrs = (uct_gda_ft_cu_pointer_get_attrs_t)
                                      dlsym(handle,
                                            "cuPointerGetAttributes");
    if (uct_gda_ft_cu_pointer_get_attrs == NULL) {
        ucs_debug("libcuda.so.1 has no cuPointerGetAttributes");
        dlclose(handle);
        return;
    }
    /* the handle stays open for the life of the process */
    ucs_debug("CUDA driver loaded: CUDA pointers are detected");
}

static int uct_gda_ft_cuda_available(void)
{
    pthread_once(&uct_gda_ft_cuda_once, uct_gda_ft_cuda_load);
    return uct_gda_ft_cu_pointer_get_attrs != NULL;
}

/* What the driver knows of a pointer; all 0 for memory it does not know
 * (or without a driver, or in a process that never used CUDA) */
typedef struct {
    uint32_t           mem_type;   /* CUmemorytype */
    uint32_t           managed;
    unsigned long long dev_ptr;    /* CUdeviceptr */
} uct_gda_ft_cu_pointer_t;

static void uct_gda_ft_cu_pointer_query(const void *address,
                                        uct_gda_ft_cu_pointer_t *info)
{
    int attributes[] = {UCT_GDA_FT_CU_POINTER_ATTR_MEMORY_TYPE,
                        UCT_GDA_FT_CU_POINTER_ATTR_IS_MANAGED,
                        UCT_GDA_FT_CU_POINTER_ATTR_DEVICE_POINTER};
    void *data[]     = {&info->mem_type, &info->managed, &info->dev_ptr};

    memset(info, 0, sizeof(*info));
    if (uct_gda_ft_cuda_available() &&
        (uct_gda_ft_cu_pointer_get_attrs(ucs_static_array_size(attributes),
                                         attributes, data,
                                         (uintptr_t)address) !=
         UCT_GDA_FT_CU_SUCCESS)) {
        memset(info, 0, sizeof(*info));
    }
}

gda_ft_hca_mem_type_t uct_gda_ft_detect_mem_type(const void *address)
{
    uct_gda_ft_cu_pointer_t info;

    uct_gda_ft_cu_pointer_query(address, &info);
    /* managed memory is reachable from the host: registered as such */
    return ((info.mem_type == UCT_GDA_FT_CU_MEMORYTYPE_DEVICE) &&
            !info.managed) ? GDA_FT_HCA_MEM_CUDA : GDA_FT_HCA_MEM_HOST;
}

int uct_gda_ft_gpu_reaches(const void *address)
{
    uct_gda_ft_cu_pointer_t info;

    uct_gda_ft_cu_pointer_query(address, &info);
    /* GPU memory, or host memory mapped into the GPU (cudaHostAlloc with
     * cudaHostAllocMapped, cudaHostRegister with cudaHostRegisterMapped)
     * at the address the host sees: a kernel dereferences that one */
    return (info.mem_type == UCT_GDA_FT_CU_MEMORYTYPE_DEVICE) ||
           ((info.dev_ptr != 0) && (info.dev_ptr == (uintptr_t)address));
}


/* ---- registration -------------------------------------------------------- */

ucs_status_t uct_gda_ft_md_reg(uct_gda_ft_md_t *md, void *address,
                               size_t length, unsigned flags,
                               uct_gda_ft_memh_t **memh_p)
{
    gda_ft_hca_mr_attr_t attr;
    uct_gda_ft_memh_t *memh;
    ucs_status_t status;
    unsigned path;

    memh = ucs_calloc(1, sizeof(*memh), "gda_ft_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memh->address  = address;
    memh->length   = length;
    memh->mem_type = md->cuda_reg ? uct_gda_ft_detect_mem_type(address) :
                                    GDA_FT_HCA_MEM_HOST;

    attr.addr     = address;
    attr.length   = length;
    attr.access   = GDA_FT_HCA_ACCESS_ALL;
    attr.mem_type = memh->mem_type;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if ((path == UCT_GDA_FT_PATH_BACKUP) &&
            (md->dev[path] == md->dev[UCT_GDA_FT_PATH_PRIMARY])) {
            /* dual-port card: the backup port shares the registration */
            memh->lkey[path] = memh->lkey[UCT_GDA_FT_PATH_PRIMARY];
            memh->rkey[path] = memh->rkey[UCT_GDA_FT_PATH_PRIMARY];
            continue;
        }
        if (md->dev[path] == NULL) {
            continue;
        }

        status = gda_ft_hca_mr_reg(md->dev[path]->pd, &attr, &memh->mr[path]);
        if (status != UCS_OK) {
            uct_md_log_mem_reg_error(flags,
                                     "failed to register %p..%p "
                                     "(%s) on %s: %s", address,
                                     UCS_PTR_BYTE_OFFSET(address, length),
                                     (memh->mem_type ==
                                      GDA_FT_HCA_MEM_CUDA) ? "cuda" : "host",
                                     md->dev[path]->hca->attr.info.name,
                                     ucs_status_string(status));
            goto err_dereg;
        }
        memh->lkey[path] = memh->mr[path]->lkey;
        memh->rkey[path] = memh->mr[path]->rkey;
    }

    ucs_trace("registered %p..%p lkey 0x%x/0x%x rkey 0x%x/0x%x",
              address, UCS_PTR_BYTE_OFFSET(address, length), memh->lkey[0],
              memh->lkey[1], memh->rkey[0], memh->rkey[1]);
    *memh_p = memh;
    return UCS_OK;

err_dereg:
    uct_gda_ft_md_dereg(md, memh);
    return status;
}

void uct_gda_ft_md_dereg(uct_gda_ft_md_t *md, uct_gda_ft_memh_t *memh)
{
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (memh->mr[path] != NULL) {
            gda_ft_hca_mr_dereg(memh->mr[path]);
        }
    }
    ucs_free(memh);
}

/* 1.14 passes the flags in a parameter struct */
#if GDA_FT_UCX_AT_LEAST(1, 14)
static ucs_status_t uct_gda_ft_mem_reg(uct_md_h uct_md, void *address,
                                       size_t length,
                                       const uct_md_mem_reg_params_t *params,
                                       uct_mem_h *memh_p)
{
    unsigned flags = UCT_MD_MEM_REG_FIELD_VALUE(params, flags,
                                                FIELD_FLAGS, 0);
#else
static ucs_status_t uct_gda_ft_mem_reg(uct_md_h uct_md, void *address,
                                       size_t length, unsigned flags,
                                       uct_mem_h *memh_p)
{
#endif
    uct_gda_ft_md_t *md = ucs_derived_of(uct_md, uct_gda_ft_md_t);
    uct_gda_ft_memh_t *memh;
    ucs_status_t status;

    status = uct_gda_ft_md_reg(md, address, length, flags, &memh);
    if (status != UCS_OK) {
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_gda_ft_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
{
    uct_gda_ft_md_t *md = ucs_derived_of(uct_md, uct_gda_ft_md_t);

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    uct_gda_ft_md_dereg(md, params->memh);
    return UCS_OK;
}

/* 1.16 passes the packed range too; gda_ft's rkeys cover the whole region */
static ucs_status_t
uct_gda_ft_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh,
#if GDA_FT_UCX_AT_LEAST(1, 16)
                     void *address, size_t length,
#endif
                     const uct_md_mkey_pack_params_t *params,
                     void *rkey_buffer)
{
    uct_gda_ft_md_t *md     = ucs_derived_of(uct_md, uct_gda_ft_md_t);
    uct_gda_ft_memh_t *memh = uct_memh;
    uct_gda_ft_rkey_info_t info;

    info.has_backup = uct_gda_ft_md_has_backup(md);
    info.key[0]     = memh->rkey[UCT_GDA_FT_PATH_PRIMARY];
    info.key[1]     = info.has_backup ? memh->rkey[UCT_GDA_FT_PATH_BACKUP] :
                                        0;
    return uct_gda_ft_wire_rkey_pack(&info, rkey_buffer,
                                     sizeof(uct_gda_ft_wire_rkey_t));
}


/* ---- MD ------------------------------------------------------------------ */

static ucs_status_t uct_gda_ft_md_query(uct_md_h uct_md,
                                        gda_ft_md_attr_t *attr)
{
    uct_gda_ft_md_t *md = ucs_derived_of(uct_md, uct_gda_ft_md_t);

    memset(attr, 0, sizeof(*attr));
    GDA_FT_MD_CAP(attr, flags)            = UCT_MD_FLAG_REG |
                                            UCT_MD_FLAG_NEED_MEMH |
                                            UCT_MD_FLAG_NEED_RKEY;
    GDA_FT_MD_CAP(attr, reg_mem_types)    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    if (md->cuda_reg) {
        GDA_FT_MD_CAP(attr, reg_mem_types) |= UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    }
    GDA_FT_MD_CAP(attr, access_mem_types) = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    GDA_FT_MD_CAP(attr, detect_mem_types) = 0;
    /* As UCX's IB MDs: no UCT_MD_FLAG_ALLOC and no alloc_mem_types, so
     * uct_mem_alloc() never asks this MD to allocate, and no size limit on
     * what its users allocate and register (UCX's tests size their
     * transfers by max_alloc: 0 made them skip every one) */
    GDA_FT_MD_CAP(attr, alloc_mem_types)  = 0;
    GDA_FT_MD_CAP(attr, max_alloc)        = ULONG_MAX;
    GDA_FT_MD_CAP(attr, max_reg)          = ULONG_MAX;
    attr->rkey_packed_size     = sizeof(uct_gda_ft_wire_rkey_t);
    /* two registrations, each about what an ibv_reg_mr costs */
    attr->reg_cost             = ucs_linear_func_make(32e-6, 0.14e-9);
    ucs_strncpy_zero(attr->component_name, UCT_GDA_FT_NAME,
                     sizeof(attr->component_name));
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static void uct_gda_ft_md_close(uct_md_h uct_md)
{
    uct_gda_ft_md_t *md = ucs_derived_of(uct_md, uct_gda_ft_md_t);

    if ((md->dev[UCT_GDA_FT_PATH_BACKUP] != NULL) &&
        (md->dev[UCT_GDA_FT_PATH_BACKUP] != md->dev[UCT_GDA_FT_PATH_PRIMARY])) {
        uct_gda_ft_dev_put(md->dev[UCT_GDA_FT_PATH_BACKUP]);
    }
    uct_gda_ft_dev_put(md->dev[UCT_GDA_FT_PATH_PRIMARY]);
    ucs_free(md);
}

static uct_md_ops_t uct_gda_ft_md_ops = {
    .close                  = uct_gda_ft_md_close,
    .query                  = uct_gda_ft_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gda_ft_mem_reg,
    .mem_dereg              = uct_gda_ft_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)
                              ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_gda_ft_mkey_pack,
    GDA_FT_MD_OPS_MEM_ATTACH
    GDA_FT_MD_OPS_IS_SOCKADDR_ACCESSIBLE
    GDA_FT_MD_OPS_MEM_ELEM_PACK
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                              ucs_empty_function_return_unsupported
};

void uct_gda_ft_md_name(const char *dev_name, unsigned index, char *buf,
                        size_t max)
{
    size_t room = ucs_min(max, UCT_MD_NAME_MAX);
    char suffix[16];
    int keep;

    if (strlen(UCT_GDA_FT_MD_PREFIX) + strlen(dev_name) < room) {
        ucs_snprintf_zero(buf, max, "%s%s", UCT_GDA_FT_MD_PREFIX, dev_name);
        return;
    }

    /* "gda_ft_<head>~<index>": unique among the devices of the process */
    snprintf(suffix, sizeof(suffix), "~%u", index);
    keep = (int)(room - 1 - strlen(UCT_GDA_FT_MD_PREFIX) - strlen(suffix));
    ucs_snprintf_zero(buf, max, "%s%.*s%s", UCT_GDA_FT_MD_PREFIX,
                      ucs_max(keep, 0), dev_name, suffix);
}

/*
 * Backup decision of every port of the primary device. The MD registers on
 * one backup device: the device of port 1's backup (the usual case: a
 * single-port HCA backed by its pair, or a dual-port card by its other
 * port). A port whose backup lies on yet another device runs without one.
 */
static ucs_status_t
uct_gda_ft_md_choose_backup(uct_gda_ft_md_t *md,
                            const uct_gda_ft_md_config_t *config,
                            const gda_ft_hca_dev_info_t *primary,
                            char *backup_name)
{
    uct_gda_ft_topo_params_t params;
    const uct_gda_ft_topo_port_t *port, *backup;
    gda_ft_hca_dev_info_t *infos;
    uct_gda_ft_topo_t *topo;
    ucs_status_t status;
    unsigned count, index;
    uint8_t p;

    status = gda_ft_hca_query_devices(&infos, &count);
    if (status != UCS_OK) {
        return status;
    }

    params.xml_path    = (config->topo_file[0] != '\0') ? config->topo_file :
                                                          NULL;
    params.devices     = infos;
    params.num_devices = count;
    params.backup_map  = config->backup_map;
#ifdef __SANITIZE_ADDRESS__
    /* libpciaccess, under hwloc's PCI discovery, leaks about 1 KiB a load */
    __lsan_disable();
#endif
    status             = uct_gda_ft_topo_create(&params, &topo);
#ifdef __SANITIZE_ADDRESS__
    __lsan_enable();
#endif
    if (status != UCS_OK) {
        goto out_free_infos;
    }

    backup_name[0] = '\0';
    for (p = 1; p <= md->num_ports; ++p) {
        uct_gda_ft_md_port_t *mport = &md->port[p - 1];

        mport->backup_port = 0;
        mport->reason      = UCT_GDA_FT_TOPO_BACKUP_NONE;
        if (uct_gda_ft_topo_find_port(topo, primary->name, p, &index) !=
            UCS_OK) {
            ucs_snprintf_zero(mport->desc, sizeof(mport->desc),
                              "%s:%u -> no backup (not in the topology)",
                              primary->name, p);
            continue;
        }

        port = uct_gda_ft_topo_port(topo, index);
        uct_gda_ft_topo_backup_str(topo, index, mport->desc,
                                   sizeof(mport->desc));
        if (port->backup < 0) {
            continue;
        }

        backup = uct_gda_ft_topo_port(topo, port->backup);
        if (backup_name[0] == '\0') {
            ucs_strncpy_zero(backup_name, backup->dev_name,
                             GDA_FT_HCA_NAME_MAX);
        } else if (strcmp(backup_name, backup->dev_name)) {
            ucs_warn("%s (the backup of port %u) is not the backup "
                     "device %s of %s: port %u runs without a backup",
                     backup->dev_name, p, backup_name, primary->name, p);
            ucs_snprintf_zero(mport->desc, sizeof(mport->desc),
                              "%s:%u -> no backup (%s:%u is on a second "
                              "backup device)", primary->name, p,
                              backup->dev_name, backup->port_num);
            continue;
        }
        mport->backup_port = backup->port_num;
        mport->reason      = port->backup_reason;
    }

    uct_gda_ft_topo_destroy(topo);
out_free_infos:
    gda_ft_hca_free_device_list(infos);
    return status;
}

static ucs_status_t
uct_gda_ft_md_open(uct_component_t *component, const char *md_name,
                   const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_gda_ft_md_config_t *config =
            ucs_derived_of(uct_config, uct_gda_ft_md_config_t);
    char name[UCT_MD_NAME_MAX], backup_name[GDA_FT_HCA_NAME_MAX];
    gda_ft_hca_dev_info_t *infos, primary;
    uct_gda_ft_md_t *md;
    ucs_status_t status;
    unsigned count, i;

    status = gda_ft_hca_query_devices(&infos, &count);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; i < count; ++i) {
        uct_gda_ft_md_name(infos[i].name, i, name, sizeof(name));
        if (!strcmp(name, md_name)) {
            break;
        }
    }
    if (i == count) {
        gda_ft_hca_free_device_list(infos);
        ucs_error("no HCA for memory domain %s", md_name);
        return UCS_ERR_NO_DEVICE;
    }
    primary = infos[i];
    gda_ft_hca_free_device_list(infos);

    md = ucs_calloc(1, sizeof(*md), "gda_ft_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_gda_ft_md_ops;
    md->super.component = &uct_gda_ft_component;
    md->num_ports       = ucs_min(primary.num_ports, GDA_FT_HCA_MAX_PORTS);

    status = uct_gda_ft_md_choose_backup(md, config, &primary, backup_name);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_gda_ft_dev_get(primary.name,
                                &md->dev[UCT_GDA_FT_PATH_PRIMARY]);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (backup_name[0] == '\0') {
        ucs_diag("%s has no backup HCA: memory domain %s works "
                 "without failover", primary.name, md_name);
    } else if (!strcmp(backup_name, primary.name)) {
        md->dev[UCT_GDA_FT_PATH_BACKUP] = md->dev[UCT_GDA_FT_PATH_PRIMARY];
    } else {
        status = uct_gda_ft_dev_get(backup_name,
                                    &md->dev[UCT_GDA_FT_PATH_BACKUP]);
        if (status != UCS_OK) {
            goto err_put_primary;
        }
    }

    if (config->cuda == UCS_NO) {
        md->cuda_reg = 0;
    } else {
        md->cuda_reg = uct_gda_ft_cuda_available();
        if (!md->cuda_reg && (config->cuda == UCS_YES)) {
            ucs_error("UCX_GDA_FT_CUDA_REG=yes but the CUDA driver "
                      "(libcuda.so.1) cannot be loaded");
            status = UCS_ERR_UNSUPPORTED;
            goto err_put_backup;
        }
    }

    for (i = 0; i < md->num_ports; ++i) {
        ucs_debug("%s: %s", md_name, md->port[i].desc);
    }

    *md_p = &md->super;
    return UCS_OK;

err_put_backup:
    if ((md->dev[UCT_GDA_FT_PATH_BACKUP] != NULL) &&
        (md->dev[UCT_GDA_FT_PATH_BACKUP] != md->dev[UCT_GDA_FT_PATH_PRIMARY])) {
        uct_gda_ft_dev_put(md->dev[UCT_GDA_FT_PATH_BACKUP]);
    }
err_put_primary:
    uct_gda_ft_dev_put(md->dev[UCT_GDA_FT_PATH_PRIMARY]);
err_free:
    ucs_free(md);
    return status;
}


/* ---- component ----------------------------------------------------------- */

static ucs_status_t
uct_gda_ft_query_md_resources(uct_component_t *component,
                              uct_md_resource_desc_t **resources_p,
                              unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    gda_ft_hca_dev_info_t *infos;
    unsigned count, i, num = 0;
    ucs_status_t status;

    status = gda_ft_hca_query_devices(&infos, &count);
    if (status != UCS_OK) {
        ucs_debug("no HCAs: %s", ucs_status_string(status));
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    if (count == 0) {
        gda_ft_hca_free_device_list(infos);
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    resources = ucs_calloc(count, sizeof(*resources), "gda_ft_md_resources");
    if (resources == NULL) {
        gda_ft_hca_free_device_list(infos);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < count; ++i) {
        uct_gda_ft_md_name(infos[i].name, i, resources[num].md_name,
                           sizeof(resources[num].md_name));
        ++num;
    }

    gda_ft_hca_free_device_list(infos);
    *resources_p     = resources;
    *num_resources_p = num;
    return UCS_OK;
}

static ucs_status_t
uct_gda_ft_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                       uct_rkey_t *rkey_p, void **handle_p)
{
    uct_gda_ft_rkey_info_t info;
    const char *reason;
    ucs_status_t status;

    /* UCT gives no length: the buffer holds md_attr.rkey_packed_size bytes */
    status = uct_gda_ft_wire_rkey_unpack(rkey_buffer,
                                         sizeof(uct_gda_ft_wire_rkey_t),
                                         &info, &reason);
    if (status != UCS_OK) {
        ucs_error("cannot unpack remote key: %s", reason);
        /* UCX 1.13's ucp_ep_rkey_unpack() crashes releasing the keys it
         * had not unpacked yet when one fails with another status; with
         * this one it drops our part, and the key reaches nothing here */
        return UCS_ERR_UNREACHABLE;
    }

    *rkey_p   = uct_gda_ft_wire_rkey_to_uct(&info);
    *handle_p = NULL;
    return UCS_OK;
}

GDA_FT_RKEY_UNPACK_ADAPTER(uct_gda_ft_rkey_unpack)

uct_component_t uct_gda_ft_component = {
    .query_md_resources = uct_gda_ft_query_md_resources,
    .md_open            = uct_gda_ft_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                          ucs_empty_function_return_unsupported,
    .rkey_unpack        = GDA_FT_RKEY_UNPACK(uct_gda_ft_rkey_unpack),
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                          ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                          ucs_empty_function_return_success,
    .name               = UCT_GDA_FT_NAME,
    .md_config          = {
        .name           = "GDA_FT memory domain",
        .prefix         = UCT_GDA_FT_CONFIG_PREFIX,
        .table          = uct_gda_ft_md_config_table,
        .size           = sizeof(uct_gda_ft_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_gda_ft_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                          ucs_empty_function
};

ucs_status_t uct_gda_ft_md_mem_keys(uct_md_h tl_md, uct_mem_h memh,
                                    uint32_t *lkeys, uint32_t *rkeys,
                                    void **address_p, size_t *length_p)
{
    const uct_gda_ft_memh_t *m = memh;
    unsigned path;

    if ((tl_md == NULL) || (tl_md->component != &uct_gda_ft_component) ||
        (memh == NULL) || (memh == UCT_MEM_HANDLE_NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        lkeys[path] = m->lkey[path];
        rkeys[path] = m->rkey[path];
    }
    *address_p = m->address;
    *length_p  = m->length;
    return UCS_OK;
}
