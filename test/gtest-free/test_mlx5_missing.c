/*
 * Stands in for the mlx5 provider's tests in a build configured without
 * it (configure says which piece was missing): they did not run. A
 * failure in strict mode (CI): contrib/setup.sh installs all it needs.
 */
#include "gda_ft_test.h"

GDA_FT_TEST(mlx5_provider, built)
{
    GDA_FT_SKIP("configured without the mlx5 provider (see configure's "
                "notice): its tests did not run");
}
