/*
 * contrib/hw-check.sh, the report a user with two ConnectX ports attaches
 * to an issue, run on a made-up sysfs (GDA_FT_SYSFS) with stand-ins for
 * the build, ucx_info and ucx_perftest: what it finds, what it runs, and
 * that it says which steps cannot run yet. It never runs on a NIC here.
 */
#include "gda_ft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HW_OUT_MAX 65536

/* A sysfs with mlx5_0 (two RoCE ports, netdevs eth4 and eth5, one with an
 * IPv4 RoCE v2 GID), a build tree whose unit tests pass and whose
 * configure took the provider, a ucx_info that answers and a ucx_perftest
 * that fails as the transport's QPs are refused today */
static const char *hw_setup =
    "set -e; d=$1; ib=$d/sys/class/infiniband/mlx5_0; "
    "mkdir -p $d/pci/0000:17:00.0/net/eth4 $d/pci/0000:17:00.0/net/eth5 "
    "  $d/build/test/gtest-free $d/build/.libs $d/bin; "
    "echo 1 >$d/pci/0000:17:00.0/numa_node; "
    "echo 0 >$d/pci/0000:17:00.0/net/eth4/dev_port; "
    "echo 1 >$d/pci/0000:17:00.0/net/eth5/dev_port; "
    "mkdir -p $ib; ln -s $d/pci/0000:17:00.0 $ib/device; "
    "echo 28.39.1002 >$ib/fw_ver; echo MT_0000000838 >$ib/board_id; "
    "for p in 1 2; do "
    "  mkdir -p $ib/ports/$p/gids $ib/ports/$p/gid_attrs/types; "
    "  echo Ethernet >$ib/ports/$p/link_layer; "
    "  echo '4: ACTIVE' >$ib/ports/$p/state; "
    "  echo fe80:0000:0000:0000:0000:0000:0000:0001 >$ib/ports/$p/gids/0; "
    "  echo 'RoCE v2' >$ib/ports/$p/gid_attrs/types/0; "
    "  echo 0000:0000:0000:0000:0000:ffff:0a01:0203 >$ib/ports/$p/gids/3; "
    "  echo 'RoCE v2' >$ib/ports/$p/gid_attrs/types/3; "
    "  : >$ib/ports/$p/gid_attrs/types/1; "
    "done; "
    "echo \"HAVE_MLX5_TRUE=''\" >$d/build/config.log; "
    ": >$d/build/.libs/libuct_gda_ft.so; "
    "printf '#!/bin/sh\\necho \"47 passed, 0 failed, 0 skipped\"\\n' "
    "  >$d/build/test/gtest-free/gda_ft_tests; "
    "printf '#!/bin/sh\\necho \"#      Device: mlx5_0:1\"\\n"
    "echo \"#      Device: mlx5_0:2\"\\n' >$d/bin/ucx_info; "
    "printf '#!/bin/sh\\necho \"hca_id:\tmlx5_0\"\\n"
    "echo \"\tmax_qp_wr:\t32768 ($*)\"\\n' >$d/bin/ibv_devinfo; "
    "printf '#!/bin/sh\\necho \"QP refused: UNSUPPORTED\"; exit 1\\n' "
    "  >$d/bin/ucx_perftest; "
    "chmod +x $d/build/test/gtest-free/gda_ft_tests $d/bin/*";

static char *hw_check_dir(void)
{
    static char dir[] = "/tmp/gda_ft_hw_check_XXXXXX";
    char cmd[512], out[256];

    FILE *f;

    GDA_FT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof(cmd), "%s/setup.sh", dir);
    f = fopen(cmd, "w");
    GDA_FT_ASSERT(f != NULL);
    fputs(hw_setup, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "bash %s/setup.sh %s 2>&1", dir, dir);
    if (gda_ft_test_shell(cmd, out, sizeof(out)) != 0) {
        GDA_FT_FAIL("cannot make the fake machine: %s", out);
    }
    return dir;
}

static int hw_check(const char *dir, const char *args, char *out)
{
    char cmd[4096];

    snprintf(cmd, sizeof(cmd),
             "cd %s && GDA_FT_HW_SERVER_WAIT=0.1 GDA_FT_SYSFS=%s/sys "
             "GDA_FT_BUILD_DIR=%s/build "
             "PATH=%s/bin:$PATH %s/contrib/hw-check.sh -o %s/report %s "
             ">/dev/null 2>&1; echo rc=$?; cat %s/report",
             dir, dir, dir, dir, gda_ft_test_srcdir(), dir, args, dir);
    return gda_ft_test_shell(cmd, out, HW_OUT_MAX);
}

static void hw_check_cleanup(const char *dir)
{
    char cmd[512], out[64];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    gda_ft_test_shell(cmd, out, sizeof(out));
}

#define ASSERT_HAS(_out, _text) \
    do { \
        if (strstr((_out), (_text)) == NULL) { \
            GDA_FT_FAIL("the report lacks '%s':\n%s", (_text), (_out)); \
        } \
    } while (0)

GDA_FT_TEST(mlx5_hw_check, report_on_two_ports)
{
    char *dir = hw_check_dir();
    char *out = malloc(HW_OUT_MAX);

    GDA_FT_ASSERT_EQ(hw_check(dir, "-n", out), 0);
    ASSERT_HAS(out, "rc=0");
    ASSERT_HAS(out, "mlx5_0: fw 28.39.1002, board MT_0000000838, pci "
                    "0000:17:00.0, numa 1");
    ASSERT_HAS(out, "  port 1: 4: ACTIVE, Ethernet, netdev eth4");
    ASSERT_HAS(out, "  port 2: 4: ACTIVE, Ethernet, netdev eth5");
    ASSERT_HAS(out, "gid 3: 0000:0000:0000:0000:0000:ffff:0a01:0203 "
                    "(RoCE v2)");
    ASSERT_HAS(out, "port A: mlx5_0:1 (eth4), port B: mlx5_0:2 (eth5)");
    ASSERT_HAS(out, "about 0.5 s");
    ASSERT_HAS(out, "mlx5 provider configured in");
    /* the device's capabilities, once for its two ports */
    ASSERT_HAS(out, "UCX_GDA_FT_MLX5_EMU_DEVICE=<this report>");
    ASSERT_HAS(out, "hca_id:\tmlx5_0\n\tmax_qp_wr:\t32768 (-v -d mlx5_0)\n");
    GDA_FT_ASSERT(strstr(strstr(out, "hca_id:") + 1, "hca_id:") == NULL);
    ASSERT_HAS(out, "RESULT unit PASS");
    ASSERT_HAS(out, "RESULT ucx_info_ports PASS");
    /* the transport's QPs are refused today: said, not hidden */
    ASSERT_HAS(out, "first run of the transport over mlx5");
    ASSERT_HAS(out, "RESULT perftest_put_bw FAIL");
    ASSERT_HAS(out, "RESULT perftest_get_bw FAIL");
    ASSERT_HAS(out, "RESULT perftest_add_lat FAIL");
    ASSERT_HAS(out, "NOT AVAILABLE");
    ASSERT_HAS(out, "RESULT link_down SKIPPED");
    /* what firmware said to each command, or that there were none */
    ASSERT_HAS(out, "== DEVX commands and firmware's answers");
    ASSERT_HAS(out, "== summary");
    free(out);
    hw_check_cleanup(dir);
}

GDA_FT_TEST(mlx5_hw_check, ports_chosen_by_the_user_and_no_provider)
{
    char *dir = hw_check_dir();
    char *out = malloc(HW_OUT_MAX);
    char cmd[512], small[64];

    snprintf(cmd, sizeof(cmd), ": >%s/build/config.log", dir);
    GDA_FT_ASSERT_EQ(gda_ft_test_shell(cmd, small, sizeof(small)), 0);
    GDA_FT_ASSERT_EQ(hw_check(dir, "-n -a mlx5_0:2 -b mlx5_0:1", out), 0);
    ASSERT_HAS(out, "port A: mlx5_0:2 (eth5), port B: mlx5_0:1 (eth4)");
    ASSERT_HAS(out, "the mlx5 provider is NOT configured in");
    /* a port the plugin does not list */
    snprintf(cmd, sizeof(cmd), "sed -i /mlx5_0:2/d %s/bin/ucx_info", dir);
    GDA_FT_ASSERT_EQ(gda_ft_test_shell(cmd, small, sizeof(small)), 0);
    GDA_FT_ASSERT_EQ(hw_check(dir, "-n", out), 0);
    ASSERT_HAS(out, "RESULT ucx_info_ports FAIL");
    free(out);
    hw_check_cleanup(dir);
}

GDA_FT_TEST(mlx5_hw_check, one_port_is_not_enough)
{
    char *dir = hw_check_dir();
    char *out = malloc(HW_OUT_MAX);
    char cmd[512], small[64];

    snprintf(cmd, sizeof(cmd), "rm -rf %s/sys/class/infiniband/mlx5_0/ports/2",
             dir);
    GDA_FT_ASSERT_EQ(gda_ft_test_shell(cmd, small, sizeof(small)), 0);
    GDA_FT_ASSERT_EQ(hw_check(dir, "-n", out), 0);
    ASSERT_HAS(out, "rc=1");
    ASSERT_HAS(out, "fewer than two mlx5 ports");
    GDA_FT_ASSERT(strstr(out, "RESULT") == NULL);
    free(out);
    hw_check_cleanup(dir);
}
