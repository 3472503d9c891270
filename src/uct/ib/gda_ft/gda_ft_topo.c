/*
 * HCA locality and backup choice from the hwloc topology.
 *
 * Distance between two objects of the hwloc tree: the deeper their common
 * ancestor, the closer they are (a shared PCIe switch beats a shared host
 * bridge, which beats a shared package, which beats the machine); among
 * equally deep common ancestors, fewer hops win; then PCI order. Every HCA
 * device is located at its PCI device object when the topology has one, else
 * at its NUMA node, else at the root; all ports of a device share its place.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_topo.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/debug/assert.h>
#include <hwloc.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>


typedef struct gda_ft_topo_dev {
    char        name[GDA_FT_HCA_NAME_MAX];
    unsigned    list_index;   /* position in the caller's device list */
    unsigned    num_ports;
    int         numa_node;
    int         has_pci;
    unsigned    pci_domain;
    unsigned    pci_bus;
    unsigned    pci_dev;
    unsigned    pci_func;
    hwloc_obj_t obj;          /* where the device sits in the tree */
    unsigned    first_port;   /* index of its port 1 in topo->ports */
} gda_ft_topo_dev_t;


struct uct_gda_ft_topo {
    hwloc_topology_t        topology;
    gda_ft_topo_dev_t      *devs;       /* in PCI order */
    unsigned                num_devs;
    uct_gda_ft_topo_port_t *ports;
    unsigned                num_ports;
};


typedef struct gda_ft_topo_dist {
    unsigned common_level;  /* level of the common ancestor, root = 0 */
    unsigned hops;          /* edges from one object to the other */
} gda_ft_topo_dist_t;


static const char *gda_ft_topo_reason_names[] = {
    [UCT_GDA_FT_TOPO_BACKUP_NONE]      = "no backup",
    [UCT_GDA_FT_TOPO_BACKUP_EXPLICIT]  = "explicit map",
    [UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT] = "dual port",
    [UCT_GDA_FT_TOPO_BACKUP_ADJACENT]  = "adjacent pair",
    [UCT_GDA_FT_TOPO_BACKUP_NEAREST]   = "nearest"
};


/* "dddd:bb:dd.f" or "bb:dd.f"; the whole string must match */
static int gda_ft_topo_parse_busid(const char *str, gda_ft_topo_dev_t *dev)
{
    unsigned domain = 0, bus, device, func;
    int n = -1;

    if ((sscanf(str, "%x:%x:%x.%x%n", &domain, &bus, &device, &func,
                &n) != 4) || (str[n] != '\0')) {
        n      = -1;
        domain = 0;
        if ((sscanf(str, "%x:%x.%x%n", &bus, &device, &func, &n) != 3) ||
            (str[n] != '\0')) {
            return 0;
        }
    }

    if ((domain > 0xffff) || (bus > 0xff) || (device > 0x1f) || (func > 7)) {
        return 0;
    }

    dev->pci_domain = domain;
    dev->pci_bus    = bus;
    dev->pci_dev    = device;
    dev->pci_func   = func;
    return 1;
}

static hwloc_obj_t gda_ft_topo_find_osdev(hwloc_topology_t topology,
                                          const char *name, int is_gpu)
{
    hwloc_obj_t obj = NULL;
    hwloc_obj_osdev_type_t type;

    while ((obj = hwloc_get_next_osdev(topology, obj)) != NULL) {
        if ((obj->name == NULL) || strcmp(obj->name, name)) {
            continue;
        }

        type = obj->attr->osdev.type;
        if (is_gpu ? ((type == HWLOC_OBJ_OSDEV_COPROC) ||
                      (type == HWLOC_OBJ_OSDEV_GPU)) :
                     (type == HWLOC_OBJ_OSDEV_OPENFABRICS)) {
            /* the PCI device it belongs to, when there is one */
            return (obj->parent != NULL) ? obj->parent : obj;
        }
    }

    return NULL;
}

/* Places a device in the tree: PCI device, OpenFabrics name, NUMA, root */
static void gda_ft_topo_locate_dev(hwloc_topology_t topology,
                                   gda_ft_topo_dev_t *dev)
{
    hwloc_obj_t obj = NULL;

    if (dev->has_pci) {
        obj = hwloc_get_pcidev_by_busid(topology, dev->pci_domain,
                                        dev->pci_bus, dev->pci_dev,
                                        dev->pci_func);
    }

    if (obj == NULL) {
        obj = gda_ft_topo_find_osdev(topology, dev->name, 0);
        if ((obj != NULL) && !dev->has_pci &&
            (obj->type == HWLOC_OBJ_PCI_DEVICE)) {
            /* the topology knows the PCI address the provider did not give */
            dev->has_pci    = 1;
            dev->pci_domain = obj->attr->pcidev.domain;
            dev->pci_bus    = obj->attr->pcidev.bus;
            dev->pci_dev    = obj->attr->pcidev.dev;
            dev->pci_func   = obj->attr->pcidev.func;
        }
    }

    if ((obj == NULL) && (dev->numa_node >= 0)) {
        obj = hwloc_get_numanode_obj_by_os_index(topology, dev->numa_node);
    }

    if (obj == NULL) {
        ucs_debug("%s is not in the hwloc topology, locality unknown",
                  dev->name);
        obj = hwloc_get_root_obj(topology);
    }

    dev->obj = obj;
}

static unsigned gda_ft_topo_obj_level(hwloc_obj_t obj)
{
    unsigned level = 0;

    while (obj->parent != NULL) {
        obj = obj->parent;
        ++level;
    }
    return level;
}

/*
 * hwloc_get_common_ancestor_obj() compares depths, which are negative for
 * I/O objects; walk parent pointers by level instead.
 */
static void gda_ft_topo_distance(hwloc_obj_t a, hwloc_obj_t b,
                                 gda_ft_topo_dist_t *dist)
{
    unsigned level_a = gda_ft_topo_obj_level(a);
    unsigned level_b = gda_ft_topo_obj_level(b);

    dist->hops = 0;
    while (level_a > level_b) {
        a = a->parent;
        --level_a;
        ++dist->hops;
    }
    while (level_b > level_a) {
        b = b->parent;
        --level_b;
        ++dist->hops;
    }
    while (a != b) {
        a = a->parent;
        b = b->parent;
        --level_a;
        dist->hops += 2;
    }
    dist->common_level = level_a;
}

static int gda_ft_topo_dist_better(const gda_ft_topo_dist_t *a,
                                   const gda_ft_topo_dist_t *b)
{
    return (a->common_level > b->common_level) ||
           ((a->common_level == b->common_level) && (a->hops < b->hops));
}

/* Nearest port to target on a device other than exclude_dev; -1: none */
static int gda_ft_topo_nearest_port(const uct_gda_ft_topo_t *topo,
                                    hwloc_obj_t target, int exclude_dev)
{
    gda_ft_topo_dist_t dist, best_dist = {0, 0};
    int best = -1;
    unsigned i;

    for (i = 0; i < topo->num_ports; ++i) {
        if ((int)topo->ports[i].dev_index == exclude_dev) {
            continue;
        }

        gda_ft_topo_distance(target, topo->devs[topo->ports[i].dev_index].obj,
                             &dist);
        if ((best < 0) || gda_ft_topo_dist_better(&dist, &best_dist)) {
            best      = i;
            best_dist = dist;
        }
    }

    return best;
}

/* PCI devices by address, then devices without one in list order */
static int gda_ft_topo_dev_compare(const void *p1, const void *p2)
{
    const gda_ft_topo_dev_t *d1 = p1, *d2 = p2;
    uint64_t key1, key2;

    if (d1->has_pci != d2->has_pci) {
        return d1->has_pci ? -1 : 1;
    }

    if (d1->has_pci) {
        key1 = ((uint64_t)d1->pci_domain << 16) | (d1->pci_bus << 8) |
               (d1->pci_dev << 3) | d1->pci_func;
        key2 = ((uint64_t)d2->pci_domain << 16) | (d2->pci_bus << 8) |
               (d2->pci_dev << 3) | d2->pci_func;
        if (key1 != key2) {
            return (key1 < key2) ? -1 : 1;
        }
    }

    return (d1->list_index < d2->list_index) ? -1 :
           (d1->list_index > d2->list_index);
}

static ucs_status_t gda_ft_topo_load(uct_gda_ft_topo_t *topo,
                                     const char *xml_path)
{
    const char *what = (xml_path != NULL) ? xml_path : "this machine";

    if (hwloc_topology_init(&topo->topology) != 0) {
        ucs_error("hwloc_topology_init() failed: %m");
        return UCS_ERR_NO_MEMORY;
    }

    hwloc_topology_set_io_types_filter(topo->topology,
                                       HWLOC_TYPE_FILTER_KEEP_ALL);

    if (xml_path != NULL) {
        if (hwloc_topology_set_xml(topo->topology, xml_path) != 0) {
            ucs_error("cannot use hwloc XML topology '%s': %m",
                      xml_path);
            goto err_destroy;
        }
        hwloc_topology_set_flags(topo->topology,
                                 HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT);
    }

    if (hwloc_topology_load(topo->topology) != 0) {
        ucs_error("failed to load the hwloc topology of %s: %m", what);
        goto err_destroy;
    }

    return UCS_OK;

err_destroy:
    hwloc_topology_destroy(topo->topology);
    topo->topology = NULL;
    return UCS_ERR_IO_ERROR;
}

static ucs_status_t
gda_ft_topo_init_devs(uct_gda_ft_topo_t *topo,
                      const uct_gda_ft_topo_params_t *params)
{
    char busid[sizeof(params->devices->pci_bus_id) + 1];
    const gda_ft_hca_dev_info_t *info;
    gda_ft_topo_dev_t *dev;
    unsigned i, j, port;

    topo->devs = ucs_calloc(params->num_devices ? params->num_devices : 1,
                            sizeof(*topo->devs), "gda_ft_topo_devs");
    if (topo->devs == NULL) {
        ucs_error("failed to allocate %u topology devices",
                  params->num_devices);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < params->num_devices; ++i) {
        info = &params->devices[i];
        if (info->num_ports == 0) {
            ucs_debug("%.*s has no ports, ignored",
                      (int)sizeof(info->name), info->name);
            continue;
        }

        if ((info->num_ports > GDA_FT_HCA_MAX_PORTS) ||
            (strnlen(info->name, sizeof(info->name)) == 0) ||
            (strnlen(info->name, sizeof(info->name)) == sizeof(info->name))) {
            ucs_error("invalid HCA device '%.*s' with %u ports",
                      (int)sizeof(info->name), info->name, info->num_ports);
            return UCS_ERR_INVALID_PARAM;
        }

        for (j = 0; j < topo->num_devs; ++j) {
            if (!strcmp(topo->devs[j].name, info->name)) {
                ucs_error("HCA device '%s' listed twice", info->name);
                return UCS_ERR_INVALID_PARAM;
            }
        }

        dev             = &topo->devs[topo->num_devs++];
        memcpy(dev->name, info->name, sizeof(dev->name));
        dev->list_index = i;
        dev->num_ports  = info->num_ports;
        dev->numa_node  = info->numa_node;
        memcpy(busid, info->pci_bus_id, sizeof(info->pci_bus_id));
        busid[sizeof(info->pci_bus_id)] = '\0';
        if (busid[0] != '\0') {
            dev->has_pci = gda_ft_topo_parse_busid(busid, dev);
            if (!dev->has_pci) {
                ucs_warn("%s: cannot parse PCI bus id '%s', ignored",
                         dev->name, busid);
            }
        }
        gda_ft_topo_locate_dev(topo->topology, dev);
        topo->num_ports += dev->num_ports;
    }

    qsort(topo->devs, topo->num_devs, sizeof(*topo->devs),
          gda_ft_topo_dev_compare);

    topo->ports = ucs_calloc(topo->num_ports ? topo->num_ports : 1,
                             sizeof(*topo->ports), "gda_ft_topo_ports");
    if (topo->ports == NULL) {
        ucs_error("failed to allocate %u topology ports",
                  topo->num_ports);
        return UCS_ERR_NO_MEMORY;
    }

    topo->num_ports = 0;
    for (i = 0; i < topo->num_devs; ++i) {
        dev             = &topo->devs[i];
        dev->first_port = topo->num_ports;
        for (port = 1; port <= dev->num_ports; ++port) {
            uct_gda_ft_topo_port_t *p = &topo->ports[topo->num_ports++];

            memcpy(p->dev_name, dev->name, sizeof(p->dev_name));
            p->port_num  = port;
            p->numa_node = dev->numa_node;
            p->dev_index = i;
            p->backup    = -1;
            if (dev->has_pci) {
                snprintf(p->pci_bus_id, sizeof(p->pci_bus_id),
                         "%04x:%02x:%02x.%x", dev->pci_domain, dev->pci_bus,
                         dev->pci_dev, dev->pci_func);
            }
        }
    }

    return UCS_OK;
}

static char *gda_ft_topo_strip(char *str)
{
    char *end;

    while (isspace((unsigned char)*str)) {
        ++str;
    }

    end = str + strlen(str);
    while ((end > str) && isspace((unsigned char)end[-1])) {
        *--end = '\0';
    }
    return str;
}

/* "dev:port" -> port index; on failure writes the reason to why */
static int gda_ft_topo_parse_port_spec(const uct_gda_ft_topo_t *topo,
                                       char *spec, char *why, size_t max,
                                       unsigned *index_p)
{
    char *colon, *end;
    unsigned long port;
    unsigned i;

    spec  = gda_ft_topo_strip(spec);
    colon = strrchr(spec, ':');
    if ((colon == NULL) || (colon == spec)) {
        snprintf(why, max, "'%s' is not <device>:<port>", spec);
        return 0;
    }

    *colon = '\0';
    errno  = 0;
    port   = strtoul(colon + 1, &end, 10);
    if (!isdigit((unsigned char)colon[1]) || (*end != '\0') ||
        (errno != 0) || (port == 0) || (port > UINT8_MAX)) {
        snprintf(why, max, "bad port number '%s' of '%s'", colon + 1, spec);
        return 0;
    }

    for (i = 0; i < topo->num_devs; ++i) {
        if (!strcmp(topo->devs[i].name, spec)) {
            break;
        }
    }

    if (i == topo->num_devs) {
        snprintf(why, max, "unknown device '%s'", spec);
        return 0;
    }

    if (port > topo->devs[i].num_ports) {
        snprintf(why, max, "device '%s' has no port %lu", spec, port);
        return 0;
    }

    *index_p = topo->devs[i].first_port + port - 1;
    return 1;
}

/*
 * "dev:port=dev:port[,dev:port=dev:port...]": the backup of the left port is
 * the right port. explicit[i] receives the backup of port i, or -1.
 */
static ucs_status_t gda_ft_topo_parse_map(const uct_gda_ft_topo_t *topo,
                                          const char *map, int *explicit)
{
    char *copy, *entry, *next, *eq;
    const char *text  = map;
    size_t text_len   = 0;
    unsigned primary, backup;
    char why[128];

    copy = ucs_strdup(map, "gda_ft_backup_map");
    if (copy == NULL) {
        ucs_error("failed to copy the backup map");
        return UCS_ERR_NO_MEMORY;
    }

    if (*gda_ft_topo_strip(copy) == '\0') {
        ucs_free(copy);
        return UCS_OK; /* empty: no explicit map */
    }

    for (entry = copy; entry != NULL; entry = next) {
        next = strchr(entry, ',');
        if (next != NULL) {
            *next++ = '\0';
        }

        /* the entry as written (offsets in copy are offsets in map) */
        entry    = gda_ft_topo_strip(entry);
        text     = map + (entry - copy);
        text_len = strlen(entry);

        if (*entry == '\0') {
            snprintf(why, sizeof(why), "empty entry");
            goto err_entry;
        }

        eq = strchr(entry, '=');
        if ((eq == NULL) || (strchr(eq + 1, '=') != NULL)) {
            snprintf(why, sizeof(why),
                     "expected <device>:<port>=<device>:<port>");
            goto err_entry;
        }

        *eq = '\0';
        if (!gda_ft_topo_parse_port_spec(topo, entry, why, sizeof(why),
                                         &primary) ||
            !gda_ft_topo_parse_port_spec(topo, eq + 1, why, sizeof(why),
                                         &backup)) {
            goto err_entry;
        }

        if (primary == backup) {
            snprintf(why, sizeof(why), "port mapped to itself");
            goto err_entry;
        }

        if (explicit[primary] >= 0) {
            snprintf(why, sizeof(why), "%s:%u mapped twice",
                     topo->ports[primary].dev_name,
                     topo->ports[primary].port_num);
            goto err_entry;
        }

        explicit[primary] = backup;
    }

    ucs_free(copy);
    return UCS_OK;

err_entry:
    ucs_error("invalid backup map entry '%.*s': %s", (int)text_len,
              text, why);
    ucs_free(copy);
    return UCS_ERR_INVALID_PARAM;
}

/* Sibling PCI function of a two-function card (same domain:bus:device) */
static int gda_ft_topo_sibling_function(const uct_gda_ft_topo_t *topo,
                                        unsigned dev_index)
{
    const gda_ft_topo_dev_t *dev = &topo->devs[dev_index], *other;
    unsigned i;

    if (!dev->has_pci) {
        return -1;
    }

    for (i = 0; i < topo->num_devs; ++i) {
        other = &topo->devs[i];
        if (other->has_pci && (other->pci_domain == dev->pci_domain) &&
            (other->pci_bus == dev->pci_bus) &&
            (other->pci_dev == dev->pci_dev) &&
            (other->pci_func == (dev->pci_func ^ 1))) {
            return i;
        }
    }

    return -1;
}

/* The port of device dev_index with port_num if it has one, else its first */
static int gda_ft_topo_dev_port(const uct_gda_ft_topo_t *topo,
                                unsigned dev_index, unsigned port_num)
{
    const gda_ft_topo_dev_t *dev = &topo->devs[dev_index];

    return dev->first_port + ((port_num <= dev->num_ports) ? port_num - 1 : 0);
}

static void gda_ft_topo_choose_backups(uct_gda_ft_topo_t *topo,
                                       const int *explicit)
{
    uct_gda_ft_topo_port_t *port;
    gda_ft_topo_dev_t *dev;
    int other;
    unsigned i;

    for (i = 0; i < topo->num_ports; ++i) {
        port = &topo->ports[i];
        dev  = &topo->devs[port->dev_index];

        if (explicit[i] >= 0) {
            port->backup        = explicit[i];
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_EXPLICIT;
        } else if (dev->num_ports == 2) {
            port->backup        = dev->first_port + (2 - port->port_num);
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT;
        } else if ((other = gda_ft_topo_sibling_function(
                            topo, port->dev_index)) >= 0) {
            port->backup        = gda_ft_topo_dev_port(topo, other,
                                                       port->port_num);
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_DUAL_PORT;
        } else if ((port->dev_index ^ 1) < topo->num_devs) {
            port->backup        = gda_ft_topo_dev_port(topo,
                                                       port->dev_index ^ 1,
                                                       port->port_num);
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_ADJACENT;
        } else if ((other = gda_ft_topo_nearest_port(topo, dev->obj,
                                                     port->dev_index)) >= 0) {
            port->backup        = other;
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_NEAREST;
        } else {
            port->backup        = -1;
            port->backup_reason = UCT_GDA_FT_TOPO_BACKUP_NONE;
        }
    }
}

ucs_status_t uct_gda_ft_topo_create(const uct_gda_ft_topo_params_t *params,
                                    uct_gda_ft_topo_t **topo_p)
{
    uct_gda_ft_topo_t *topo;
    ucs_status_t status;
    int *explicit;
    char line[UCT_GDA_FT_TOPO_STR_MAX];
    unsigned i;

    if ((params->num_devices > 0) && (params->devices == NULL)) {
        ucs_error("topology: %u devices but no device list",
                  params->num_devices);
        return UCS_ERR_INVALID_PARAM;
    }

    topo = ucs_calloc(1, sizeof(*topo), "gda_ft_topo");
    if (topo == NULL) {
        ucs_error("failed to allocate the topology");
        return UCS_ERR_NO_MEMORY;
    }

    status = gda_ft_topo_load(topo, params->xml_path);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gda_ft_topo_init_devs(topo, params);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    explicit = ucs_malloc((topo->num_ports ? topo->num_ports : 1) *
                          sizeof(*explicit), "gda_ft_topo_explicit");
    if (explicit == NULL) {
        ucs_error("failed to allocate the backup map");
        status = UCS_ERR_NO_MEMORY;
        goto err_destroy;
    }

    for (i = 0; i < topo->num_ports; ++i) {
        explicit[i] = -1;
    }

    if (params->backup_map != NULL) {
        status = gda_ft_topo_parse_map(topo, params->backup_map, explicit);
        if (status != UCS_OK) {
            goto err_free_explicit;
        }
    }

    gda_ft_topo_choose_backups(topo, explicit);
    ucs_free(explicit);

    for (i = 0; i < topo->num_ports; ++i) {
        ucs_debug("%s", uct_gda_ft_topo_backup_str(topo, i, line,
                                                           sizeof(line)));
    }

    *topo_p = topo;
    return UCS_OK;

err_free_explicit:
    ucs_free(explicit);
err_destroy:
    ucs_free(topo->ports);
    ucs_free(topo->devs);
    hwloc_topology_destroy(topo->topology);
err_free:
    ucs_free(topo);
    return status;
}

void uct_gda_ft_topo_destroy(uct_gda_ft_topo_t *topo)
{
    if (topo == NULL) {
        return;
    }

    ucs_free(topo->ports);
    ucs_free(topo->devs);
    hwloc_topology_destroy(topo->topology);
    ucs_free(topo);
}

unsigned uct_gda_ft_topo_num_ports(const uct_gda_ft_topo_t *topo)
{
    return topo->num_ports;
}

const uct_gda_ft_topo_port_t *
uct_gda_ft_topo_port(const uct_gda_ft_topo_t *topo, unsigned index)
{
    ucs_assert_always(index < topo->num_ports);
    return &topo->ports[index];
}

ucs_status_t uct_gda_ft_topo_find_port(const uct_gda_ft_topo_t *topo,
                                       const char *dev_name, uint8_t port_num,
                                       unsigned *index_p)
{
    unsigned i;

    for (i = 0; i < topo->num_ports; ++i) {
        if ((topo->ports[i].port_num == port_num) &&
            !strcmp(topo->ports[i].dev_name, dev_name)) {
            *index_p = i;
            return UCS_OK;
        }
    }

    return UCS_ERR_NO_ELEM;
}

static ucs_status_t gda_ft_topo_nearest_to_obj(const uct_gda_ft_topo_t *topo,
                                               hwloc_obj_t target,
                                               const char *what,
                                               unsigned *index_p)
{
    int index = gda_ft_topo_nearest_port(topo, target, -1);

    if (index < 0) {
        ucs_diag("no HCA port to choose for %s", what);
        return UCS_ERR_NO_DEVICE;
    }

    ucs_debug("nearest HCA port to %s is %s:%u", what,
              topo->ports[index].dev_name, topo->ports[index].port_num);
    *index_p = index;
    return UCS_OK;
}

ucs_status_t uct_gda_ft_topo_nearest_to_gpu(const uct_gda_ft_topo_t *topo,
                                            const char *gpu,
                                            unsigned *index_p)
{
    hwloc_obj_t obj;

    obj = hwloc_get_pcidev_by_busidstring(topo->topology, gpu);
    if (obj == NULL) {
        obj = gda_ft_topo_find_osdev(topo->topology, gpu, 1);
    }

    if (obj == NULL) {
        ucs_diag("GPU '%s' is not in the hwloc topology", gpu);
        return UCS_ERR_NO_DEVICE;
    }

    return gda_ft_topo_nearest_to_obj(topo, obj, gpu, index_p);
}

ucs_status_t uct_gda_ft_topo_nearest_to_numa(const uct_gda_ft_topo_t *topo,
                                             int numa_node,
                                             unsigned *index_p)
{
    char what[32];
    hwloc_obj_t obj;

    obj = (numa_node < 0) ? NULL :
          hwloc_get_numanode_obj_by_os_index(topo->topology, numa_node);
    if (obj == NULL) {
        ucs_diag("NUMA node %d is not in the hwloc topology",
                 numa_node);
        return UCS_ERR_INVALID_PARAM;
    }

    snprintf(what, sizeof(what), "NUMA node %d", numa_node);
    return gda_ft_topo_nearest_to_obj(topo, obj, what, index_p);
}

ucs_status_t uct_gda_ft_topo_nearest_to_caller(const uct_gda_ft_topo_t *topo,
                                               unsigned *index_p)
{
    hwloc_topology_t topology = topo->topology;
    hwloc_obj_t obj           = NULL;
    ucs_status_t status;
    hwloc_bitmap_t set;

    if (!hwloc_topology_is_thissystem(topology)) {
        ucs_diag("the hwloc topology does not describe this machine");
        return UCS_ERR_UNSUPPORTED;
    }

    set = hwloc_bitmap_alloc();
    if (set == NULL) {
        ucs_error("failed to allocate a cpuset");
        return UCS_ERR_NO_MEMORY;
    }

    /* bound: the binding; not bound: where the thread runs now */
    if ((hwloc_get_cpubind(topology, set, HWLOC_CPUBIND_THREAD) != 0) ||
        hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topology),
                                set)) {
        if (hwloc_get_last_cpu_location(topology, set,
                                        HWLOC_CPUBIND_THREAD) != 0) {
            hwloc_bitmap_zero(set);
        }
    }

    if (!hwloc_bitmap_iszero(set)) {
        obj = hwloc_get_obj_covering_cpuset(topology, set);
    }
    if (obj == NULL) {
        obj = hwloc_get_root_obj(topology);
    }

    status = gda_ft_topo_nearest_to_obj(topo, obj, "the calling thread",
                                        index_p);
    hwloc_bitmap_free(set);
    return status;
}

const char *
uct_gda_ft_topo_backup_reason_str(uct_gda_ft_topo_backup_reason_t reason)
{
    if ((unsigned)reason >= UCT_GDA_FT_TOPO_BACKUP_LAST) {
        return "invalid";
    }
    return gda_ft_topo_reason_names[reason];
}

const char *uct_gda_ft_topo_backup_str(const uct_gda_ft_topo_t *topo,
                                       unsigned index, char *buf, size_t max)
{
    const uct_gda_ft_topo_port_t *port, *backup;

    if (index >= topo->num_ports) {
        snprintf(buf, max, "<no port %u>", index);
        return buf;
    }

    port = &topo->ports[index];
    if (port->backup < 0) {
        snprintf(buf, max, "%s:%u -> %s", port->dev_name, port->port_num,
                 uct_gda_ft_topo_backup_reason_str(
                         UCT_GDA_FT_TOPO_BACKUP_NONE));
        return buf;
    }

    backup = &topo->ports[port->backup];
    snprintf(buf, max, "%s:%u -> backup %s:%u (%s)", port->dev_name,
             port->port_num, backup->dev_name, backup->port_num,
             uct_gda_ft_topo_backup_reason_str(port->backup_reason));
    return buf;
}

void uct_gda_ft_topo_print(const uct_gda_ft_topo_t *topo, FILE *stream,
                           const char *prefix)
{
    char line[UCT_GDA_FT_TOPO_STR_MAX];
    unsigned i;

    for (i = 0; i < topo->num_ports; ++i) {
        fprintf(stream, "%s%s\n", prefix,
                uct_gda_ft_topo_backup_str(topo, i, line, sizeof(line)));
    }
}
