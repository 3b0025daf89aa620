/* tests/helpers.c: float compares with relative tolerance, fixture paths, temp and text files. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void pp_test_assert_rel_close(double a, double b, double rel, const char *file, int line)
{
    double scale = fmax(fabs(a), fabs(b));
    if (isnan(a) || isnan(b) || (scale > 1e-300 && fabs(a - b) > rel * scale)) {
        print_error("%s:%d: %.17g and %.17g differ by more than %g relative\n", file, line, a, b,
                    rel);
        _fail(file, line);
    }
}

const char *pp_test_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", PP_SOURCE_DIR, rel);
    return buf;
}

const char *pp_test_tmpfile(const void *data, size_t len, const char *suffix)
{
    static char buf[4096];
    static int counter;
    snprintf(buf, sizeof buf, "%s/pp_test_%ld_%d%s", PP_BINARY_DIR, (long)getpid(), counter++,
             suffix ? suffix : "");
    FILE *f = fopen(buf, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        if (f) fclose(f);
        return NULL;
    }
    fclose(f);
    return buf;
}

void pp_test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

void pp_test_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

char *pp_test_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}
