/*
 * DEVX emulator: device profiles read from `ibv_devinfo -v` texts
 * (gda_ft_mlx5_emu_caps.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_emu_caps.h"
#include "gda_ft_mlx5_ifc.h"
#include "gda_ft_ucs_compat.h"

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Send WQEs the kernel counts SGEs in (max_sge): up to 512 bytes, a
 * control and a remote address segment, then 16-byte data segments */
#define GDA_FT_MLX5_EMU_SQ_DESC_MAX  512
#define GDA_FT_MLX5_EMU_SQ_DESC_HDR  32
#define GDA_FT_MLX5_EMU_DATA_SEG     16
/* Files larger than this are no ibv_devinfo output */
#define GDA_FT_MLX5_EMU_CAPS_FILE_MAX (1024 * 1024)

typedef struct gda_ft_mlx5_emu_config {
    char *device;
} gda_ft_mlx5_emu_config_t;

static ucs_config_field_t gda_ft_mlx5_emu_config_table[] = {
    {"DEVICE", GDA_FT_MLX5_EMU_CAPS_DEFAULT,
     "The device the DEVX emulator plays (UCX_GDA_FT_MLX5_SYS=emu): its\n"
     "capabilities, QP, CQ and WQE limits and the byte order of 8-byte\n"
     "atomic replies. '" GDA_FT_MLX5_EMU_CAPS_DEFAULT "' - a ConnectX-6 Dx\n"
     "with firmware 22.36, as its ibv_devinfo -v reads; or the path of a\n"
     "file holding the output of 'ibv_devinfo -v' for one device (the\n"
     "first one in it is taken; contrib/hw-check.sh's report holds one).",
     ucs_offsetof(gda_ft_mlx5_emu_config_t, device),
     UCS_CONFIG_TYPE_STRING},

    {NULL}
};

UCS_CONFIG_REGISTER_TABLE(gda_ft_mlx5_emu_config_table,
                          "GDA_FT mlx5 DEVX emulator", "GDA_FT_MLX5_EMU_",
                          gda_ft_mlx5_emu_config_t, &ucs_config_global_list)

/* A ConnectX-6 Dx (MCX623106AN-CDA) with firmware 22.36.1010 on Ethernet:
 * the fields the emulator reads, with the values two public ibv_devinfo -v
 * reports of that card give alike (others they print are left out) */
static const char gda_ft_mlx5_emu_caps_connectx_6dx[] =
    "hca_id:\tconnectx-6dx\n"
    "\tfw_ver:\t\t\t\t22.36.1010\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4125\n"
    "\tmax_qp:\t\t\t\t131072\n"
    "\tmax_qp_wr:\t\t\t32768\n"
    "\tmax_sge:\t\t\t30\n"
    "\tmax_cq:\t\t\t\t16777216\n"
    "\tmax_cqe:\t\t\t4194303\n"
    "\tmax_qp_rd_atom:\t\t\t16\n"
    "\tmax_qp_init_rd_atom:\t\t16\n"
    "\tatomic_cap:\t\t\tATOMIC_HCA (1)\n"
    "\t\tport:\t1\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n";

typedef struct gda_ft_mlx5_emu_caps_field {
    const char *key;
    int         found;
    char        value[64];
} gda_ft_mlx5_emu_caps_field_t;

enum {
    GDA_FT_MLX5_EMU_F_FW_VER,
    GDA_FT_MLX5_EMU_F_PART_ID,
    GDA_FT_MLX5_EMU_F_MAX_QP,
    GDA_FT_MLX5_EMU_F_MAX_QP_WR,
    GDA_FT_MLX5_EMU_F_MAX_SGE,
    GDA_FT_MLX5_EMU_F_MAX_CQ,
    GDA_FT_MLX5_EMU_F_MAX_CQE,
    GDA_FT_MLX5_EMU_F_RD_ATOM,
    GDA_FT_MLX5_EMU_F_INIT_RD_ATOM,
    GDA_FT_MLX5_EMU_F_ATOMIC_CAP,
    GDA_FT_MLX5_EMU_F_MAX_MSG,
    GDA_FT_MLX5_EMU_F_LAST
};

/* Fills the fields the text names for its first device, from its hca_id
 * line to the next one; the first occurrence of a key counts (max_msg_sz:
 * the first port's) */
static void gda_ft_mlx5_emu_caps_scan(const char *text,
                                      gda_ft_mlx5_emu_caps_field_t *fields)
{
    const char *line, *end, *colon, *value;
    int devices = 0;
    size_t key_len, value_len;
    unsigned i;

    for (line = text; *line != '\0'; line = (*end == '\0') ? end : end + 1) {
        end = strchr(line, '\n');
        if (end == NULL) {
            end = line + strlen(line);
        }
        line += strspn(line, " \t");
        colon = memchr(line, ':', end - line);
        if (colon == NULL) {
            continue;
        }
        key_len = colon - line;
        if ((key_len == strlen("hca_id")) &&
            !strncmp(line, "hca_id", key_len) && (++devices > 1)) {
            return;
        } else if (devices == 0) {
            continue;
        }

        value     = colon + 1 + strspn(colon + 1, " \t");
        value_len = end - value;
        for (i = 0; i < GDA_FT_MLX5_EMU_F_LAST; ++i) {
            if (!fields[i].found && (strlen(fields[i].key) == key_len) &&
                !strncmp(fields[i].key, line, key_len)) {
                fields[i].found = 1;
                value_len = ucs_min(value_len, sizeof(fields[i].value) - 1);
                memcpy(fields[i].value, value, value_len);
                fields[i].value[value_len] = '\0';
            }
        }
    }
}

/* A field's number; 0 with the reason logged when it is none */
static int gda_ft_mlx5_emu_caps_number(const char *origin,
                                       const gda_ft_mlx5_emu_caps_field_t *f,
                                       unsigned long *value_p)
{
    char *end;

    errno    = 0;
    *value_p = strtoul(f->value, &end, 0);
    if ((end == f->value) || (errno != 0) ||
        (end[strspn(end, " \t\r")] != '\0')) {
        ucs_error("%s: %s is '%s', not a number", origin, f->key, f->value);
        return 0;
    }
    return 1;
}

/* The log of a field the kernel prints as 1 << log (less one: minus);
 * 0 with the reason logged when the number is no such value */
static int gda_ft_mlx5_emu_caps_log(const char *origin,
                                    const gda_ft_mlx5_emu_caps_field_t *f,
                                    unsigned minus, unsigned *log_p)
{
    unsigned long value;

    if (!gda_ft_mlx5_emu_caps_number(origin, f, &value)) {
        return 0;
    }
    value += minus;
    if ((value == 0) || !ucs_is_pow2(value) || (value > (1ul << 31))) {
        ucs_error("%s: %s %lu is not a power of two%s", origin, f->key,
                  value - minus, (minus != 0) ? " less one" : "");
        return 0;
    }
    *log_p = ucs_ilog2(value);
    return 1;
}

ucs_status_t gda_ft_mlx5_emu_caps_parse(const char *text, const char *origin,
                                        gda_ft_mlx5_emu_caps_t *caps)
{
    gda_ft_mlx5_emu_caps_field_t f[GDA_FT_MLX5_EMU_F_LAST] = {
        [GDA_FT_MLX5_EMU_F_FW_VER]       = {"fw_ver"},
        [GDA_FT_MLX5_EMU_F_PART_ID]      = {"vendor_part_id"},
        [GDA_FT_MLX5_EMU_F_MAX_QP]       = {"max_qp"},
        [GDA_FT_MLX5_EMU_F_MAX_QP_WR]    = {"max_qp_wr"},
        [GDA_FT_MLX5_EMU_F_MAX_SGE]      = {"max_sge"},
        [GDA_FT_MLX5_EMU_F_MAX_CQ]       = {"max_cq"},
        [GDA_FT_MLX5_EMU_F_MAX_CQE]      = {"max_cqe"},
        [GDA_FT_MLX5_EMU_F_RD_ATOM]      = {"max_qp_rd_atom"},
        [GDA_FT_MLX5_EMU_F_INIT_RD_ATOM] = {"max_qp_init_rd_atom"},
        [GDA_FT_MLX5_EMU_F_ATOMIC_CAP]   = {"atomic_cap"},
        [GDA_FT_MLX5_EMU_F_MAX_MSG]      = {"max_msg_sz"}
    };
    unsigned long part_id, max_sge;
    unsigned i;

    gda_ft_mlx5_emu_caps_scan(text, f);
    for (i = 0; i < GDA_FT_MLX5_EMU_F_LAST; ++i) {
        if (!f[i].found) {
            ucs_error("%s: no %s (not the output of 'ibv_devinfo -v')",
                      origin, f[i].key);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    memset(caps, 0, sizeof(*caps));
    if (!gda_ft_mlx5_emu_caps_number(origin, &f[GDA_FT_MLX5_EMU_F_PART_ID],
                                     &part_id) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_MAX_QP], 0,
                                  &caps->log_max_qp) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_MAX_QP_WR], 0,
                                  &caps->log_max_qp_sz) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_MAX_CQ], 0,
                                  &caps->log_max_cq) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_MAX_CQE], 1,
                                  &caps->log_max_cq_sz) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_RD_ATOM], 0,
                                  &caps->log_max_ra_req_qp) ||
        !gda_ft_mlx5_emu_caps_log(origin,
                                  &f[GDA_FT_MLX5_EMU_F_INIT_RD_ATOM], 0,
                                  &caps->log_max_ra_res_qp) ||
        !gda_ft_mlx5_emu_caps_log(origin, &f[GDA_FT_MLX5_EMU_F_MAX_MSG], 0,
                                  &caps->log_max_msg) ||
        !gda_ft_mlx5_emu_caps_number(origin, &f[GDA_FT_MLX5_EMU_F_MAX_SGE],
                                     &max_sge)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((max_sge == 0) ||
        (max_sge > (GDA_FT_MLX5_EMU_SQ_DESC_MAX - GDA_FT_MLX5_EMU_SQ_DESC_HDR) /
                   GDA_FT_MLX5_EMU_DATA_SEG)) {
        ucs_error("%s: max_sge %lu: an mlx5 device has 1 to 30", origin,
                  max_sge);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!strncmp(f[GDA_FT_MLX5_EMU_F_ATOMIC_CAP].value, "ATOMIC_HCA",
                 strlen("ATOMIC_HCA"))) {
        caps->atomic_host_order = 1;
    } else if (strncmp(f[GDA_FT_MLX5_EMU_F_ATOMIC_CAP].value, "ATOMIC_NONE",
                       strlen("ATOMIC_NONE"))) {
        ucs_error("%s: atomic_cap '%s': an mlx5 device reports ATOMIC_HCA "
                  "or ATOMIC_NONE", origin,
                  f[GDA_FT_MLX5_EMU_F_ATOMIC_CAP].value);
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_strncpy_zero(caps->name, origin, sizeof(caps->name));
    ucs_strncpy_zero(caps->fw_ver, f[GDA_FT_MLX5_EMU_F_FW_VER].value,
                     sizeof(caps->fw_ver));
    caps->vendor_part_id  = part_id;
    /* the kernel counts SGEs in at most 512 bytes: a device that says 30
     * has at least that, and the emulator plays one with exactly that */
    caps->max_wqe_sz_sq   = GDA_FT_MLX5_EMU_SQ_DESC_HDR +
                            max_sge * GDA_FT_MLX5_EMU_DATA_SEG;
    caps->max_atomic_mode = GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B;
    return UCS_OK;
}

/* A file's text, NUL-terminated; NULL with the reason logged */
static char *gda_ft_mlx5_emu_caps_read(const char *path)
{
    char *text;
    size_t len;
    FILE *file;

    file = fopen(path, "r");
    if (file == NULL) {
        ucs_error("UCX_GDA_FT_MLX5_EMU_DEVICE=%s: neither a built-in device "
                  "(" GDA_FT_MLX5_EMU_CAPS_DEFAULT ") nor a file that "
                  "opens: %m", path);
        return NULL;
    }

    text = ucs_malloc(GDA_FT_MLX5_EMU_CAPS_FILE_MAX + 1,
                      "gda_ft_mlx5_emu_caps");
    if (text == NULL) {
        ucs_error("no memory for the text of %s", path);
        fclose(file);
        return NULL;
    }

    len = fread(text, 1, GDA_FT_MLX5_EMU_CAPS_FILE_MAX + 1, file);
    if (ferror(file) || (len > GDA_FT_MLX5_EMU_CAPS_FILE_MAX)) {
        ucs_error("UCX_GDA_FT_MLX5_EMU_DEVICE=%s: %s", path,
                  ferror(file) ? "cannot be read" :
                  "larger than an ibv_devinfo output");
        ucs_free(text);
        fclose(file);
        return NULL;
    }
    text[len] = '\0';
    fclose(file);
    return text;
}

static ucs_status_t gda_ft_mlx5_emu_caps_load(const char *device,
                                              gda_ft_mlx5_emu_caps_t *caps)
{
    ucs_status_t status;
    char *text;

    if (!strcmp(device, GDA_FT_MLX5_EMU_CAPS_DEFAULT)) {
        return gda_ft_mlx5_emu_caps_parse(gda_ft_mlx5_emu_caps_connectx_6dx,
                                          device, caps);
    }

    text = gda_ft_mlx5_emu_caps_read(device);
    if (text == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = gda_ft_mlx5_emu_caps_parse(text, device, caps);
    ucs_free(text);
    return status;
}

ucs_status_t gda_ft_mlx5_emu_caps_configured(gda_ft_mlx5_emu_caps_t *caps)
{
    gda_ft_mlx5_emu_config_t config;
    ucs_status_t status;

    status = GDA_FT_CONFIG_FILL_OPTS(&config, gda_ft_mlx5_emu_config_table,
                                     "UCX_", 0);
    if (status != UCS_OK) {
        return status;
    }

    status = gda_ft_mlx5_emu_caps_load(config.device, caps);
    ucs_config_parser_release_opts(&config, gda_ft_mlx5_emu_config_table);
    return status;
}
