/*
 * gda_ft topology: which HCA port is nearest to a GPU or to a CPU location,
 * and which port backs up each primary port (design §4 "Backup choice").
 *
 * The topology is built once from the device list the HCA providers report
 * and an hwloc topology (the live machine, or an XML file for tests). Ports
 * are indexed in PCI order: devices sorted by PCI bus id (devices without
 * one follow, in list order), ports of a device in ascending port number.
 *
 * Backup rules, first match wins:
 *   1. explicit map from configuration ("mlx5_0:1=mlx5_1:1,...");
 *   2. the other port of a dual-port card: port 2 for port 1 and vice versa
 *      on a two-port device, or the same port of the sibling PCI function
 *      (function f ^ 1 of the same domain:bus:device);
 *   3. the adjacent device of a pair (0<->1, 2<->3, ... in PCI order);
 *   4. the nearest other device;
 *   5. none: a valid outcome (single NIC), not an error.
 */
#ifndef UCT_GDA_FT_TOPO_H_
#define UCT_GDA_FT_TOPO_H_

#include "hca/gda_ft_hca.h"

#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


/* Longest text uct_gda_ft_topo_backup_str() writes, with the terminator */
#define UCT_GDA_FT_TOPO_STR_MAX (2 * GDA_FT_HCA_NAME_MAX + 48)


typedef struct uct_gda_ft_topo uct_gda_ft_topo_t;


/* Why a port got its backup */
typedef enum {
    UCT_GDA_FT_TOPO_BACKUP_NONE = 0, /* no other port exists */
    UCT_GDA_FT_TOPO_BACKUP_EXPLICIT, /* configured map */
    UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT,/* other port of the same card */
    UCT_GDA_FT_TOPO_BACKUP_ADJACENT, /* pair 0<->1, 2<->3 in PCI order */
    UCT_GDA_FT_TOPO_BACKUP_NEAREST,  /* nearest other device */
    UCT_GDA_FT_TOPO_BACKUP_LAST
} uct_gda_ft_topo_backup_reason_t;


typedef struct uct_gda_ft_topo_params {
    const char                  *xml_path;    /* NULL: the live machine */
    const gda_ft_hca_dev_info_t *devices;     /* as the providers report them */
    unsigned                     num_devices;
    const char                  *backup_map;  /* NULL or "": no explicit map */
} uct_gda_ft_topo_params_t;


/* One HCA port and its backup decision */
typedef struct uct_gda_ft_topo_port {
    char                            dev_name[GDA_FT_HCA_NAME_MAX];
    uint8_t                         port_num;      /* 1-based */
    char                            pci_bus_id[16];/* "" when unknown */
    int                             numa_node;     /* -1 when unknown */
    unsigned                        dev_index;     /* device, in PCI order */
    int                             backup;        /* port index, -1: none */
    uct_gda_ft_topo_backup_reason_t backup_reason;
} uct_gda_ft_topo_port_t;


/*
 * Loads the hwloc topology, orders the ports and computes every port's
 * backup. A malformed explicit map (bad syntax, unknown device or port,
 * a port mapped to itself or mapped twice) fails with UCS_ERR_INVALID_PARAM
 * and one error message naming the bad entry.
 */
ucs_status_t uct_gda_ft_topo_create(const uct_gda_ft_topo_params_t *params,
                                    uct_gda_ft_topo_t **topo_p);

void uct_gda_ft_topo_destroy(uct_gda_ft_topo_t *topo);

unsigned uct_gda_ft_topo_num_ports(const uct_gda_ft_topo_t *topo);

/* Port by index, 0 <= index < uct_gda_ft_topo_num_ports() */
const uct_gda_ft_topo_port_t *
uct_gda_ft_topo_port(const uct_gda_ft_topo_t *topo, unsigned index);

/* Index of "dev_name:port_num"; UCS_ERR_NO_ELEM when there is no such port */
ucs_status_t uct_gda_ft_topo_find_port(const uct_gda_ft_topo_t *topo,
                                       const char *dev_name, uint8_t port_num,
                                       unsigned *index_p);

/*
 * Nearest port to a GPU, given by PCI bus id ("0000:07:00.0", as
 * cudaDeviceGetPCIBusId() writes it) or by hwloc OS device name ("cuda0").
 * Nearest: deepest common ancestor in the hwloc tree (same PCIe switch beats
 * same host bridge beats same socket), then fewest hops, then PCI order.
 * UCS_ERR_NO_DEVICE when the GPU is not in the topology or no port exists.
 */
ucs_status_t uct_gda_ft_topo_nearest_to_gpu(const uct_gda_ft_topo_t *topo,
                                            const char *gpu,
                                            unsigned *index_p);

/* Nearest port to a NUMA node (host memory, CPU threads on that node) */
ucs_status_t uct_gda_ft_topo_nearest_to_numa(const uct_gda_ft_topo_t *topo,
                                             int numa_node,
                                             unsigned *index_p);

/*
 * Nearest port to the calling thread: its CPU binding, or the CPU it last ran
 * on when it is not bound. UCS_ERR_UNSUPPORTED on a topology that does not
 * describe this machine (an XML file).
 */
ucs_status_t uct_gda_ft_topo_nearest_to_caller(const uct_gda_ft_topo_t *topo,
                                               unsigned *index_p);

/* "adjacent pair", "dual port", "explicit map", "nearest", "no backup" */
const char *
uct_gda_ft_topo_backup_reason_str(uct_gda_ft_topo_backup_reason_t reason);

/*
 * The decision for one port as ucx_info shows it:
 * "mlx5_0:1 -> backup mlx5_1:1 (adjacent pair)" or "mlx5_0:1 -> no backup".
 * Returns buf.
 */
const char *uct_gda_ft_topo_backup_str(const uct_gda_ft_topo_t *topo,
                                       unsigned index, char *buf,
                                       size_t max);

/* Every port's decision, one line each, each line starting with prefix */
void uct_gda_ft_topo_print(const uct_gda_ft_topo_t *topo, FILE *stream,
                           const char *prefix);

#endif
