/*
 * DEVX emulator: its tables, shared by the verbs side and the commands.
 * One mutex guards every table; the count of live objects shows a leak.
 */
#ifndef GDA_FT_MLX5_EMU_TABLE_H_
#define GDA_FT_MLX5_EMU_TABLE_H_

#include "gda_ft_mlx5_emu_int.h"

extern pthread_mutex_t gda_ft_mlx5_emu_lock;
extern unsigned        gda_ft_mlx5_emu_live;

/* The context's umem with this id; NULL when it has none */
gda_ft_mlx5_emu_umem_t *gda_ft_mlx5_emu_umem_find(gda_ft_mlx5_emu_ctx_t *ctx,
                                                  uint32_t id);

/* Whether the context allocated the UAR page; the PD of that number */
int gda_ft_mlx5_emu_uar_known(gda_ft_mlx5_emu_ctx_t *ctx, uint32_t page_id);
gda_ft_mlx5_emu_pd_t *gda_ft_mlx5_emu_pd_find(gda_ft_mlx5_emu_ctx_t *ctx,
                                              uint32_t pdn);

/* The GID table entry of a port, as query_gid answers it; 0 or ENODATA */
int gda_ft_mlx5_emu_gid(gda_ft_mlx5_emu_ctx_t *ctx, uint8_t port_num,
                        uint32_t index, struct ibv_gid_entry *entry);

#endif
