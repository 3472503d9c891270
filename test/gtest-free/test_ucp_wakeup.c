/*
 * UCP workers that sleep are woken over gda_ft: runs
 * test/ucp/gda_ft_ucp_wakeup (two workers of one process, UCX_TLS=gda_ft,
 * UCP_FEATURE_WAKEUP) through contrib/gda_ft-run.sh with the plugin of this
 * build tree on two soft HCAs.
 */
#include "gda_ft_test.h"
#include "soft_harness.h"

#include <stdlib.h>
#include <string.h>


#define UWK_OUT_MAX (256 * 1024)

/* B armed its worker, slept on the fd and was woken by A's active
 * message; A waited for its put's flush in ucp_worker_wait() */
GDA_FT_TEST_TIMEOUT(ucp_wakeup, sleeping_worker_is_woken_by_am_and_own_put,
                    120)
{
    char cmd[4096], *out;
    int code;

    soft_test_env(2, NULL);
    out = malloc(UWK_OUT_MAX);
    GDA_FT_ASSERT(out != NULL);
    snprintf(cmd, sizeof(cmd),
             "env GDA_FT_BUILD_DIR='%s/.libs' UCX_GDA_FT_SOFT_CTL_DIR= "
             "UCX_TLS=gda_ft UCX_NET_DEVICES=all "
             "%s/contrib/gda_ft-run.sh %s/test/ucp/gda_ft_ucp_wakeup 2>&1",
             gda_ft_test_builddir(), gda_ft_test_srcdir(),
             gda_ft_test_builddir());
    code = gda_ft_test_shell(cmd, out, UWK_OUT_MAX);
    if ((code != 0) || (strstr(out, "WAKEUP armed=") == NULL) ||
        (strstr(out, "UCX  ERROR") != NULL)) {
        printf("%s\n", out);
        GDA_FT_FAIL("gda_ft_ucp_wakeup exited %d", code);
    }
    free(out);
}
