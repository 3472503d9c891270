/*
 * mlx5 provider: what each DEVX command sent and what firmware answered.
 *
 * A failed command is logged with the firmware's status and syndrome.
 * With UCX_GDA_FT_MLX5_CMD_LOG=FILE every command is also appended to
 * FILE, one line each: the device, the command, its opcode and op_mod,
 * whether it passed, the status and syndrome, and the input as sent in
 * hex. contrib/hw-check.sh attaches that file to its report, so that the
 * first run on a NIC shows what firmware accepted and refused.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_int.h"

#include <ucs/debug/log.h>
#include <errno.h>
#include <stdio.h>

/* The PRM's name of a command, from the opcode of its input */
static const char *gda_ft_mlx5_cmd_name(const void *in)
{
    switch (GDA_FT_MLX5_GET(modify_qp_in, in, opcode)) {
    case GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP: return "QUERY_HCA_CAP";
    case GDA_FT_MLX5_CMD_OP_CREATE_CQ:     return "CREATE_CQ";
    case GDA_FT_MLX5_CMD_OP_CREATE_QP:     return "CREATE_QP";
    case GDA_FT_MLX5_CMD_OP_RST2INIT_QP:   return "RST2INIT_QP";
    case GDA_FT_MLX5_CMD_OP_INIT2INIT_QP:  return "INIT2INIT_QP";
    case GDA_FT_MLX5_CMD_OP_INIT2RTR_QP:   return "INIT2RTR_QP";
    case GDA_FT_MLX5_CMD_OP_RTR2RTS_QP:    return "RTR2RTS_QP";
    case GDA_FT_MLX5_CMD_OP_RTS2RTS_QP:    return "RTS2RTS_QP";
    case GDA_FT_MLX5_CMD_OP_2ERR_QP:       return "2ERR_QP";
    case GDA_FT_MLX5_CMD_OP_2RST_QP:       return "2RST_QP";
    case GDA_FT_MLX5_CMD_OP_QUERY_QP:      return "QUERY_QP";
    default:                               return "command";
    }
}

static void gda_ft_mlx5_cmd_append(const char *dev_name, const char *cmd,
                                   const void *in, size_t inlen,
                                   const void *out, int ok)
{
    const uint8_t *bytes = (const uint8_t*)in;
    FILE *file;
    size_t i;

    file = fopen(gda_ft_mlx5_config.cmd_log, "a");
    if (file == NULL) {
        ucs_warn("%s: cannot append to UCX_GDA_FT_MLX5_CMD_LOG=%s: %m",
                 dev_name, gda_ft_mlx5_config.cmd_log);
        return;
    }
    fprintf(file, "%s %s opcode 0x%x op_mod 0x%x %s status 0x%x "
            "syndrome 0x%x in", dev_name, cmd,
            (unsigned)GDA_FT_MLX5_GET(modify_qp_in, in, opcode),
            (unsigned)GDA_FT_MLX5_GET(query_hca_cap_in, in, op_mod),
            ok ? "ok" : "FAILED",
            (unsigned)GDA_FT_MLX5_GET(modify_qp_out, out, status),
            (unsigned)GDA_FT_MLX5_GET(modify_qp_out, out, syndrome));
    for (i = 0; i < inlen; ++i) {
        fprintf(file, "%s%02x", (i % 4) ? "" : " ", bytes[i]);
    }
    fprintf(file, "\n");
    fclose(file);
}

int gda_ft_mlx5_cmd_done(const char *dev_name, const void *in, size_t inlen,
                         const void *out, int ok)
{
    const char *cmd = gda_ft_mlx5_cmd_name(in);
    int err         = errno;

    if ((gda_ft_mlx5_config.cmd_log != NULL) &&
        (gda_ft_mlx5_config.cmd_log[0] != '\0')) {
        gda_ft_mlx5_cmd_append(dev_name, cmd, in, inlen, out, ok);
    }
    if (!ok) {
        errno = err;
        ucs_error("%s: %s failed: %m (status 0x%x syndrome 0x%x)", dev_name,
                  cmd, (unsigned)GDA_FT_MLX5_GET(modify_qp_out, out, status),
                  (unsigned)GDA_FT_MLX5_GET(modify_qp_out, out, syndrome));
    }
    return ok;
}
