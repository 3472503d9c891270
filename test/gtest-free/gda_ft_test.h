/*
 * gtest-free: a small plain-C test runner.
 *
 * A test is a function registered from a constructor:
 *
 *     GDA_FT_TEST(soft_write, sizes) { ...; GDA_FT_ASSERT_EQ(a, b); }
 *
 * Each test runs in a forked child with its own timeout, so a crash or a hang
 * fails one test, not the run. A test may skip itself with a reason
 * (GDA_FT_SKIP); skipped tests are reported but are neither passed nor failed.
 */
#ifndef GDA_FT_TEST_H_
#define GDA_FT_TEST_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*gda_ft_test_func_t)(void);

typedef struct gda_ft_test {
    const char         *suite;
    const char         *name;
    gda_ft_test_func_t  func;
    unsigned            timeout_s;
    struct gda_ft_test *next;
} gda_ft_test_t;

void gda_ft_test_register(gda_ft_test_t *test);

/* Called by assertion macros: prints the failure and exits the test child */
void gda_ft_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

/* Marks the running test as skipped, with a reason, and exits. With
 * GDA_FT_TEST_STRICT=1 (CI) such a skip is a failure: the machine lacks
 * something setup installs or CI has (a tool, root). */
void gda_ft_test_skip(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

/* The same for what no setup can give: a GPU, a build without sanitizers,
 * a second CPU. A skip even in strict mode. */
void gda_ft_test_skip_unavailable(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

/* Directory of the build tree (for helper programs and scripts) */
const char *gda_ft_test_builddir(void);
const char *gda_ft_test_srcdir(void);

/* Runs a shell command; its output (stdout and what it redirects) goes to
 * out, cut at max - 1 bytes. Returns its exit code; a command killed by a
 * signal fails the test. */
int gda_ft_test_shell(const char *cmd, char *out, size_t max);

#define GDA_FT_TEST_DEFAULT_TIMEOUT 60

#define GDA_FT_TEST_TIMEOUT(_suite, _name, _timeout) \
    static void gda_ft_test_##_suite##_##_name(void); \
    static gda_ft_test_t gda_ft_test_desc_##_suite##_##_name = { \
        #_suite, #_name, gda_ft_test_##_suite##_##_name, (_timeout), NULL \
    }; \
    static void __attribute__((constructor)) \
    gda_ft_test_ctor_##_suite##_##_name(void) \
    { \
        gda_ft_test_register(&gda_ft_test_desc_##_suite##_##_name); \
    } \
    static void gda_ft_test_##_suite##_##_name(void)

#define GDA_FT_TEST(_suite, _name) \
    GDA_FT_TEST_TIMEOUT(_suite, _name, GDA_FT_TEST_DEFAULT_TIMEOUT)

#define GDA_FT_FAIL(...) gda_ft_test_fail(__FILE__, __LINE__, __VA_ARGS__)
#define GDA_FT_SKIP(...) gda_ft_test_skip(__VA_ARGS__)
#define GDA_FT_SKIP_UNAVAILABLE(...) gda_ft_test_skip_unavailable(__VA_ARGS__)

#define GDA_FT_ASSERT(_cond) \
    do { \
        if (!(_cond)) { \
            GDA_FT_FAIL("assertion failed: %s", #_cond); \
        } \
    } while (0)

#define GDA_FT_ASSERT_EQ(_a, _b) \
    do { \
        long long __a = (long long)(_a), __b = (long long)(_b); \
        if (__a != __b) { \
            GDA_FT_FAIL("%s == %s: %lld != %lld (0x%llx != 0x%llx)", #_a, \
                        #_b, __a, __b, __a, __b); \
        } \
    } while (0)

#define GDA_FT_ASSERT_NE(_a, _b) \
    do { \
        long long __a = (long long)(_a), __b = (long long)(_b); \
        if (__a == __b) { \
            GDA_FT_FAIL("%s != %s: both %lld", #_a, #_b, __a); \
        } \
    } while (0)

/* ucs_status_t must be UCS_OK */
#define GDA_FT_ASSERT_OK(_status) \
    do { \
        int __s = (int)(_status); \
        if (__s != 0) { \
            GDA_FT_FAIL("%s: status %d", #_status, __s); \
        } \
    } while (0)

#define GDA_FT_ASSERT_MEM_EQ(_a, _b, _len) \
    do { \
        size_t __len = (_len), __i; \
        const uint8_t *__pa = (const uint8_t*)(_a), \
                      *__pb = (const uint8_t*)(_b); \
        for (__i = 0; __i < __len; ++__i) { \
            if (__pa[__i] != __pb[__i]) { \
                GDA_FT_FAIL("%s and %s differ at byte %zu of %zu: " \
                            "0x%02x != 0x%02x", #_a, #_b, __i, __len, \
                            __pa[__i], __pb[__i]); \
            } \
        } \
    } while (0)

#endif
