/*
 * gda_ft UCT transport: component and memory domain.
 *
 * One MD per primary HCA ("gda_ft_<dev>"). The MD opens the primary device
 * and the device of its backup port (design §4 "Backup choice", computed by
 * gda_ft_topo) and registers every region on both, so that a remote key
 * names the memory on either path. Opened devices and their PDs are shared
 * by every MD of the process (a device may be one MD's primary and another's
 * backup), through a reference-counted cache.
 */
#ifndef UCT_GDA_FT_MD_H_
#define UCT_GDA_FT_MD_H_

#include "uct_gda_ft_wire.h"
#include "gda_ft_topo.h"
#include "hca/gda_ft_hca.h"

#include <uct/base/uct_md.h>
#include <ucs/datastruct/list.h>


#define UCT_GDA_FT_NAME           "gda_ft"
#define UCT_GDA_FT_MD_PREFIX      "gda_ft_"
#define UCT_GDA_FT_CONFIG_PREFIX  "GDA_FT_"

/* Paths of an endpoint: index into every [2] array of this transport */
#define UCT_GDA_FT_PATH_PRIMARY   0
#define UCT_GDA_FT_PATH_BACKUP    1


extern uct_component_t uct_gda_ft_component;


/* Whether the provider says its device is of a kind (GDA_FT_HCA_DEV_FLAG_*):
 * the transport decides by that, never by which provider it is */
static UCS_F_ALWAYS_INLINE int uct_gda_ft_hca_has(const gda_ft_hca_dev_t *hca,
                                                  unsigned flag)
{
    return (hca != NULL) && (hca->attr.flags & flag);
}


/* An opened HCA and its PD, shared by the MDs that use it */
typedef struct uct_gda_ft_dev {
    ucs_list_link_t   list;
    unsigned          refcount;
    gda_ft_hca_dev_t *hca;
    gda_ft_hca_pd_t  *pd;
} uct_gda_ft_dev_t;


/* Backup decision for one port of the primary device */
typedef struct uct_gda_ft_md_port {
    uint8_t                         backup_port; /* on md->dev[BACKUP];
                                                    0: no backup */
    uct_gda_ft_topo_backup_reason_t reason;
    char                            desc[UCT_GDA_FT_TOPO_STR_MAX];
} uct_gda_ft_md_port_t;


typedef struct uct_gda_ft_md_config {
    uct_md_config_t super;
    char            *backup_map;  /* explicit "dev:port=dev:port,..." */
    char            *topo_file;   /* hwloc XML instead of the live machine */
    int             cuda;         /* ucs_ternary_auto_value_t: register CUDA
                                     memory */
} uct_gda_ft_md_config_t;


typedef struct uct_gda_ft_md {
    uct_md_t             super;
    /* [PRIMARY]: the MD's device; [BACKUP]: the device of the backup ports,
     * NULL when no port has a backup, equal to [PRIMARY] when the backup is
     * the other port of the same card (one registration, one key) */
    uct_gda_ft_dev_t    *dev[GDA_FT_NUM_PATHS];
    unsigned             num_ports;
    uct_gda_ft_md_port_t port[GDA_FT_HCA_MAX_PORTS];
    int                  cuda_reg;    /* CUDA pointers are registered */
} uct_gda_ft_md_t;


/* A registration on both HCAs */
typedef struct uct_gda_ft_memh {
    void                 *address;
    size_t                length;
    gda_ft_hca_mem_type_t mem_type;
    gda_ft_hca_mr_t      *mr[GDA_FT_NUM_PATHS]; /* [BACKUP] NULL when
                                                       shared or absent */
    uint32_t              lkey[GDA_FT_NUM_PATHS];
    uint32_t              rkey[GDA_FT_NUM_PATHS];
} uct_gda_ft_memh_t;


static UCS_F_ALWAYS_INLINE int uct_gda_ft_md_has_backup(uct_gda_ft_md_t *md)
{
    return md->dev[UCT_GDA_FT_PATH_BACKUP] != NULL;
}

/* Registers [address, address+length) on both HCAs for local and remote
 * access; used by mem_reg and by the transport's bounce-buffer pools */
ucs_status_t uct_gda_ft_md_reg(uct_gda_ft_md_t *md, void *address,
                               size_t length, unsigned flags,
                               uct_gda_ft_memh_t **memh_p);

void uct_gda_ft_md_dereg(uct_gda_ft_md_t *md, uct_gda_ft_memh_t *memh);

/*
 * Exported for the device API's host side (src/ucp_ext): the keys of a
 * registration on the primary and the backup HCA (0 without backup), and
 * its bounds. UCS_ERR_INVALID_PARAM when tl_md is not a gda_ft MD.
 */
ucs_status_t uct_gda_ft_md_mem_keys(uct_md_h tl_md, uct_mem_h memh,
                                    uint32_t *lkeys, uint32_t *rkeys,
                                    void **address_p, size_t *length_p);

/* CUDA memory type of a pointer through the driver API (dlopen'ed);
 * GDA_FT_HCA_MEM_HOST when there is no driver or no GPU */
gda_ft_hca_mem_type_t uct_gda_ft_detect_mem_type(const void *address);

/* Whether a kernel of the current device can dereference address: GPU
 * memory, or host memory mapped into the GPU at the same address */
int uct_gda_ft_gpu_reaches(const void *address);

/* Name of the MD of the index-th device: "gda_ft_<dev>", or, when that is
 * longer than UCT_MD_NAME_MAX allows, "gda_ft_<head of dev>~<index>" */
void uct_gda_ft_md_name(const char *dev_name, unsigned index, char *buf,
                        size_t max);

#endif
