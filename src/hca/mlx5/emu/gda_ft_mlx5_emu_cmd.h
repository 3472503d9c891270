/*
 * DEVX emulator: the commands on DEVX objects (CQs and QPs) and the
 * general ones, as the emulator's operations table names them.
 */
#ifndef GDA_FT_MLX5_EMU_CMD_H_
#define GDA_FT_MLX5_EMU_CMD_H_

#include "gda_ft_mlx5_emu_int.h"

struct mlx5dv_devx_obj *
gda_ft_mlx5_emu_obj_create(struct ibv_context *ctx, const void *in,
                           size_t inlen, void *out, size_t outlen);
int gda_ft_mlx5_emu_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                               size_t inlen, void *out, size_t outlen);
int gda_ft_mlx5_emu_obj_query(struct mlx5dv_devx_obj *obj, const void *in,
                              size_t inlen, void *out, size_t outlen);
int gda_ft_mlx5_emu_obj_destroy(struct mlx5dv_devx_obj *obj);
void gda_ft_mlx5_emu_qp_wake(struct mlx5dv_devx_obj *qp, int *wake_fd_p,
                             const int32_t **wake_armed_p);
int gda_ft_mlx5_emu_general_cmd(struct ibv_context *ctx, const void *in,
                                size_t inlen, void *out, size_t outlen);

/* The context's QPs of the port connected with that source GID index,
 * in RTR or RTS; with the lock held */
unsigned gda_ft_mlx5_emu_ctx_qps_sending_from(gda_ft_mlx5_emu_ctx_t *ctx,
                                              uint8_t port_num,
                                              unsigned gid_index);

#endif
