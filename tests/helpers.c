/* tests/helpers.c: float compares with relative tolerance, fixture paths, temp and text files. */
#include "tests/helpers.h"

#include <sys/resource.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* pp_test_tmpfile's files (the test binary's counter values and suffixes), removed at exit. */
static struct {
    int counter;
    char suffix[16];
} tmp_made[1024];
static int n_tmp_made;

static void remove_tmpfiles(void)
{
    char path[4096];
    for (int i = 0; i < n_tmp_made; i++) {
        snprintf(path, sizeof path, "%s/pp_test_%ld_%d%s", PP_BINARY_DIR, (long)getpid(),
                 tmp_made[i].counter, tmp_made[i].suffix);
        unlink(path);
    }
}

const char *pp_test_tmpfile(const void *data, size_t len, const char *suffix)
{
    static char buf[4096];
    static int counter;
    if (!suffix) suffix = "";
    if (strlen(suffix) >= sizeof tmp_made[0].suffix || n_tmp_made == 1024) return NULL;
    if (n_tmp_made == 0) atexit(remove_tmpfiles);
    tmp_made[n_tmp_made].counter = counter;
    snprintf(tmp_made[n_tmp_made++].suffix, sizeof tmp_made[0].suffix, "%s", suffix);
    snprintf(buf, sizeof buf, "%s/pp_test_%ld_%d%s", PP_BINARY_DIR, (long)getpid(), counter++,
             suffix);
    FILE *f = fopen(buf, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        if (f) fclose(f);
        return NULL;
    }
    fclose(f);
    return buf;
}

void pp_test_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void pp_test_write_text(const char *path, const char *text)
{
    pp_test_write_bytes(path, text, strlen(text));
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

int pp_test_toy_relu_rows(char *text, size_t cap, int off, int first, int last, int every,
                          int step, double log_a, double slope)
{
    for (int i = first; i <= last; i += every) {
        int n = step * i;
        double t = 8e-6 * n;
        off += snprintf(text + off, cap - (size_t)off,
                        "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:%d,,%.17g,,10,,,"
                        "test,2026-01-01\n", n, t * exp(log_a + slope * log(t)));
    }
    return off;
}

void pp_test_write_toy_sessions(const char *early, const char *later, double log_a, double slope)
{
    static char text[16384];
    int off = snprintf(text, sizeof text, "%s", PP_TEST_LAYER_HEADER);
    pp_test_toy_relu_rows(text, sizeof text, off, 1, 40, 1, 1000, 0, 0);
    pp_test_write_text(early, text);
    off = snprintf(text, sizeof text, "%s", PP_TEST_LAYER_HEADER);
    off = pp_test_toy_relu_rows(text, sizeof text, off, 1, 40, 2, 1000, log_a, slope);
    pp_test_toy_relu_rows(text, sizeof text, off, 1, 79, 2, 500, log_a, slope);
    pp_test_write_text(later, text);
}

perfpred_fit_params pp_test_fit_params(const char *device, const char *const *files, int n,
                                       const char *config_dir, const char *out_dir)
{
    perfpred_fit_params p = perfpred_fit_default_params();
    p.device = device;
    p.layers_csvs = files;
    p.n_layers_csvs = n;
    p.config_dir = config_dir;
    p.out_dir = out_dir;
    p.nthread = 1;
    p.n_rounds = 20;
    return p;
}

perfpred_fit_params pp_test_rescale_fit_params(const char *device, const char *const *files,
                                               const char *const *rescaled,
                                               const char *config_dir, const char *out_dir)
{
    perfpred_fit_params p = pp_test_fit_params(device, files, 1, config_dir, out_dir);
    p.rescaled_csvs = rescaled;
    p.n_rescaled_csvs = 1;
    return p;
}

void pp_test_limit_address_space(size_t extra)
{
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    unsigned long long vm_kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &vm_kb) == 1) break;
    fclose(f);
    assert_true(vm_kb > 0);
    struct rlimit rl = {(rlim_t)(vm_kb * 1024ULL + extra), (rlim_t)(vm_kb * 1024ULL + extra)};
    assert_int_equal(setrlimit(RLIMIT_AS, &rl), 0);
}

#ifdef PP_CLI_PATH
#include <sys/wait.h>

int pp_test_run_cli(const char *args, char *out, size_t cap, const char *tag)
{
    char out_path[4096], cmd[8192];
    snprintf(out_path, sizeof out_path, "%s/%s_out.txt", PP_BINARY_DIR, tag);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >'%s' 2>&1", PP_SOURCE_DIR, PP_CLI_PATH, args,
             out_path);
    int rc = system(cmd);
    FILE *f = fopen(out_path, "rb");
    size_t n = f && cap > 0 ? fread(out, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    if (cap > 0) out[n] = '\0';
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
#endif

perfpred_predict_params pp_test_kernels_into(perfpred_kernel *ks, int cap, int *nk)
{
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.kernels = ks;
    pp.kernels_cap = cap;
    pp.n_kernels = nk;
    return pp;
}
