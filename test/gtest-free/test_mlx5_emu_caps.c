/*
 * The DEVX emulator's device profiles (gda_ft_mlx5_emu_caps.h): the
 * built-in ConnectX-6 Dx, a whole `ibv_devinfo -v` report read back into
 * HCA_CAP fields, and texts that are no such report refused with the
 * reason.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_test.h"
#include "mlx5_harness.h"
#include "gda_ft_mlx5_emu_caps.h"

#include <ucs/debug/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_CAPS_VAR "UCX_GDA_FT_MLX5_EMU_DEVICE"

/* Two devices as `ibv_devinfo -v` prints them, trimmed. The first one's
 * numbers are made up, other than the built-in device's in every field
 * the emulator reads; the second is the built-in device. */
static const char test_caps_report[] =
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.39.1002\n"
    "\tnode_guid:\t\t\t0000:0000:0000:0001\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
    "\tmax_qp:\t\t\t\t262144\n"
    "\tmax_qp_wr:\t\t\t8192\n"
    "\tdevice_cap_flags:\t\t0x21361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\tmax_sge:\t\t\t14\n"
    "\tmax_sge_rd:\t\t\t14\n"
    "\tmax_cq:\t\t\t\t8388608\n"
    "\tmax_cqe:\t\t\t1048575\n"
    "\tmax_mr:\t\t\t\t16777216\n"
    "\tmax_qp_rd_atom:\t\t\t8\n"
    "\tmax_qp_init_rd_atom:\t\t32\n"
    "\tatomic_cap:\t\t\tATOMIC_NONE (0)\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_msg_sz:\t\t0x10000000\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\n"
    "hca_id:\tmlx5_1\n"
    "\tfw_ver:\t\t\t\t22.36.1010\n"
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

/* The report with one line changed: the line starting with `key:` (its
 * first) replaced by `line`, or dropped when line is NULL */
static char *test_caps_edit(const char *key, const char *line)
{
    char *text = malloc(sizeof(test_caps_report) + 256);
    const char *at, *eol;
    char pattern[64];

    snprintf(pattern, sizeof(pattern), "\t%s:", key);
    at = strstr(test_caps_report, pattern);
    GDA_FT_ASSERT((text != NULL) && (at != NULL));
    eol = strchr(at, '\n') + 1;
    sprintf(text, "%.*s%s%s%s", (int)(at - test_caps_report),
            test_caps_report, (line != NULL) ? line : "",
            (line != NULL) ? "\n" : "", eol);
    return text;
}

/* The text is refused, with an error naming the field */
static void test_caps_refused(const char *text, const char *field)
{
    gda_ft_mlx5_emu_caps_t caps;

    test_mlx5_errors = 0;
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_caps_parse(text, "report", &caps),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    if (strstr(test_mlx5_last_error, field) == NULL) {
        GDA_FT_FAIL("the error '%s' does not name %s", test_mlx5_last_error,
                    field);
    }
}

static void test_caps_env(const char *value)
{
    if (value != NULL) {
        setenv(TEST_CAPS_VAR, value, 1);
    } else {
        unsetenv(TEST_CAPS_VAR);
    }
}

/* The fields read back, the name aside */
static void test_caps_expect(const gda_ft_mlx5_emu_caps_t *caps,
                             const gda_ft_mlx5_emu_caps_t *expected)
{
    GDA_FT_ASSERT(!strcmp(caps->fw_ver, expected->fw_ver));
    GDA_FT_ASSERT_EQ(caps->vendor_part_id, expected->vendor_part_id);
    GDA_FT_ASSERT_EQ(caps->log_max_qp, expected->log_max_qp);
    GDA_FT_ASSERT_EQ(caps->log_max_qp_sz, expected->log_max_qp_sz);
    GDA_FT_ASSERT_EQ(caps->log_max_cq, expected->log_max_cq);
    GDA_FT_ASSERT_EQ(caps->log_max_cq_sz, expected->log_max_cq_sz);
    GDA_FT_ASSERT_EQ(caps->log_max_ra_req_qp, expected->log_max_ra_req_qp);
    GDA_FT_ASSERT_EQ(caps->log_max_ra_res_qp, expected->log_max_ra_res_qp);
    GDA_FT_ASSERT_EQ(caps->log_max_msg, expected->log_max_msg);
    GDA_FT_ASSERT_EQ(caps->max_wqe_sz_sq, expected->max_wqe_sz_sq);
    GDA_FT_ASSERT_EQ(caps->atomic_host_order, expected->atomic_host_order);
}

GDA_FT_TEST(mlx5_emu_caps, built_in_connectx_6dx)
{
    static const gda_ft_mlx5_emu_caps_t built_in = {
        .fw_ver = "22.36.1010", .vendor_part_id = 4125,
        .log_max_qp = 17, .log_max_qp_sz = 15, .log_max_cq = 24,
        .log_max_cq_sz = 22, .log_max_ra_req_qp = 4,
        .log_max_ra_res_qp = 4, .log_max_msg = 30, .max_wqe_sz_sq = 512,
        .atomic_host_order = 1
    };
    gda_ft_mlx5_emu_caps_t caps;
    char *prev = getenv(TEST_CAPS_VAR);

    prev = (prev != NULL) ? strdup(prev) : NULL;
    test_caps_env(NULL);
    GDA_FT_ASSERT_OK(gda_ft_mlx5_emu_caps_configured(&caps));
    test_caps_env(prev);
    free(prev);

    /* 131072 QPs of 32768 WQEs, 16M CQs of 4M CQEs, 16 reads each way,
     * 30 SGEs (512-byte send WQEs), 1 GiB messages, ATOMIC_HCA */
    GDA_FT_ASSERT(!strcmp(caps.name, GDA_FT_MLX5_EMU_CAPS_DEFAULT));
    test_caps_expect(&caps, &built_in);
}

GDA_FT_TEST(mlx5_emu_caps, a_report_reads_back_into_hca_caps)
{
    static const gda_ft_mlx5_emu_caps_t first = {
        .fw_ver = "28.39.1002", .vendor_part_id = 4129,
        .log_max_qp = 18, .log_max_qp_sz = 13, .log_max_cq = 23,
        .log_max_cq_sz = 20, .log_max_ra_req_qp = 3,
        .log_max_ra_res_qp = 5, .log_max_msg = 28,
        .max_wqe_sz_sq = 32 + 14 * 16, .atomic_host_order = 0
    };
    char text[sizeof(test_caps_report) + 128];
    gda_ft_mlx5_emu_caps_t caps;

    /* as in contrib/hw-check.sh's report: its own lines come first */
    snprintf(text, sizeof(text), "== 1. devices and ports\n"
             "mlx5_0: fw 0.0.0, board MT_0000000000\nmax_qp_wr: 64\n%s",
             test_caps_report);
    GDA_FT_ASSERT_OK(gda_ft_mlx5_emu_caps_parse(text, "report", &caps));
    /* the first device's, not the second's; the kernel prints
     * log_max_ra_req_qp as max_qp_rd_atom */
    test_caps_expect(&caps, &first);
}

GDA_FT_TEST(mlx5_emu_caps, refuses_what_no_device_reports)
{
    static const struct {
        const char *key, *line;
    } cases[] = {
        {"max_qp_wr", NULL},
        {"atomic_cap", NULL},
        {"max_msg_sz", NULL},
        {"max_qp_wr", "\tmax_qp_wr:\t\t\t1000"},
        {"max_qp_wr", "\tmax_qp_wr:\t\t\t0"},
        {"max_qp_wr", "\tmax_qp_wr:\t\t\t32768x"},
        {"max_qp_wr", "\tmax_qp_wr:"},
        {"max_cqe", "\tmax_cqe:\t\t\t4194304"},
        {"max_qp", "\tmax_qp:\t\t\t\t-1"},
        {"max_qp_rd_atom", "\tmax_qp_rd_atom:\t\t\t12"},
        {"max_sge", "\tmax_sge:\t\t\t0"},
        {"max_sge", "\tmax_sge:\t\t\t31"},
        {"atomic_cap", "\tatomic_cap:\t\t\tATOMIC_GLOB (2)"},
        {"max_msg_sz", "\t\t\tmax_msg_sz:\t\t0x30000000"},
        {"vendor_part_id", "\tvendor_part_id:\t\t\tfour"}
    };
    unsigned i;
    char *text;

    ucs_log_push_handler(test_mlx5_log);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        text = test_caps_edit(cases[i].key, cases[i].line);
        test_caps_refused(text, cases[i].key);
        free(text);
    }
    test_caps_refused("", "fw_ver");
    /* fields only count from the device's hca_id line on */
    test_caps_refused("fw_ver: 1.0\nmax_qp_wr: 64\n", "fw_ver");
    ucs_log_pop_handler();
}

GDA_FT_TEST(mlx5_emu_caps, the_setting_names_a_file_or_a_built_in)
{
    char path[] = "/tmp/gda_ft_emu_caps_XXXXXX";
    gda_ft_mlx5_emu_caps_t caps;
    char *prev;

    prev = test_mlx5_device_set(test_caps_report, path);
    GDA_FT_ASSERT_OK(gda_ft_mlx5_emu_caps_configured(&caps));
    GDA_FT_ASSERT_EQ(caps.vendor_part_id, 4129);
    GDA_FT_ASSERT(!strcmp(caps.name, path));

    ucs_log_push_handler(test_mlx5_log);
    unlink(path);
    test_mlx5_errors = 0;
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_caps_configured(&caps),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, path) != NULL);

    test_caps_env("connectx-9");
    test_mlx5_errors = 0;
    GDA_FT_ASSERT_EQ(gda_ft_mlx5_emu_caps_configured(&caps),
                     UCS_ERR_INVALID_PARAM);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "built-in") != NULL);
    ucs_log_pop_handler();
    test_mlx5_device_restore(prev, path);
}
