/* placeholder until the runner lands */
#include "gda_ft_test.h"
void gda_ft_test_register(gda_ft_test_t *t) { (void)t; }
int main(void) { printf("0 passed, 0 failed\n"); return 0; }
