/*
 * DEVX emulator: its tables, as the verbs side (gda_ft_mlx5_emu_dev.c) and
 * the commands (gda_ft_mlx5_emu_cmd.c) both use them. The lock that
 * guards every table and the count of what lives in them; a context's
 * umems, UAR pages and PDs found by number; a port's GID table as
 * query_gid answers it.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_emu_table.h"
#include "gda_ft_soft.h"

#include <errno.h>
#include <string.h>

pthread_mutex_t gda_ft_mlx5_emu_lock = PTHREAD_MUTEX_INITIALIZER;
unsigned        gda_ft_mlx5_emu_live;

unsigned gda_ft_mlx5_emu_live_objects(void)
{
    return gda_ft_mlx5_emu_live;
}

int gda_ft_mlx5_emu_gid(gda_ft_mlx5_emu_ctx_t *ctx, uint8_t port_num,
                        uint32_t index, struct ibv_gid_entry *entry)
{
    gda_ft_hca_port_attr_t soft_attr;
    uint32_t ipv4_first;

    if ((port_num < 1) || (port_num > ctx->hca->soft->attr.info.num_ports) ||
        (gda_ft_soft_provider.port_query(ctx->hca->soft, port_num,
                                         &soft_attr) != UCS_OK)) {
        return ENODATA;
    }

    /* the IPv4 address's pair of entries, after the link-local pair and,
     * once moved, an IPv6 address's pair; the rest is empty */
    ipv4_first = ctx->hca->gid_moved[port_num - 1] ? 4 : 2;
    if (index >= ipv4_first + 2) {
        return ENODATA;
    }

    memset(entry, 0, sizeof(*entry));
    entry->gid_index = index;
    entry->port_num  = port_num;
    entry->gid_type  = (index % 2) ? IBV_GID_TYPE_ROCE_V2 :
                                     IBV_GID_TYPE_ROCE_V1;
    if (index < 2) {
        /* fe80::, then an interface id made of the IPv4 address */
        entry->gid.raw[0] = 0xfe;
        entry->gid.raw[1] = 0x80;
        memcpy(&entry->gid.raw[12], &soft_attr.gid[12], 4);
    } else if (index < ipv4_first) {
        /* 2001:db8:: (documentation prefix), the same interface id */
        entry->gid.raw[0] = 0x20;
        entry->gid.raw[1] = 0x01;
        entry->gid.raw[2] = 0x0d;
        entry->gid.raw[3] = 0xb8;
        memcpy(&entry->gid.raw[12], &soft_attr.gid[12], 4);
    } else {
        memcpy(entry->gid.raw, soft_attr.gid, sizeof(entry->gid.raw));
    }
    return 0;
}

gda_ft_mlx5_emu_pd_t *gda_ft_mlx5_emu_pd_find(gda_ft_mlx5_emu_ctx_t *ctx,
                                              uint32_t pdn)
{
    gda_ft_mlx5_emu_pd_t *pd;

    ucs_list_for_each(pd, &ctx->pds, list) {
        if (pd->soft->pdn == pdn) {
            return pd;
        }
    }
    return NULL;
}

gda_ft_mlx5_emu_umem_t *gda_ft_mlx5_emu_umem_find(gda_ft_mlx5_emu_ctx_t *ctx,
                                                  uint32_t id)
{
    gda_ft_mlx5_emu_umem_t *umem;

    ucs_list_for_each(umem, &ctx->umems, list) {
        if (umem->super.umem_id == id) {
            return umem;
        }
    }
    return NULL;
}

int gda_ft_mlx5_emu_uar_known(gda_ft_mlx5_emu_ctx_t *ctx, uint32_t page_id)
{
    gda_ft_mlx5_emu_uar_t *uar;

    ucs_list_for_each(uar, &ctx->uars, list) {
        if (uar->super.page_id == page_id) {
            return 1;
        }
    }
    return 0;
}
