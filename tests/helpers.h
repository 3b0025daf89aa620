/* tests/helpers.h: what every cmocka test executable shares. */
#ifndef PP_TEST_HELPERS_H
#define PP_TEST_HELPERS_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "perfpred_calibrate.h"

/* The layer CSV header (docs/measurements.md). */
#define PP_TEST_LAYER_HEADER                                                                      \
    "device,runtime,runtime_version,precision,op_kind,op_type,batch,inputs,attrs,latency_ms,"     \
    "latency_spread_ms,repetitions,energy_j,memory_bytes,source,date\n"

/* A toy CPU whose roofline is easy to do by hand: 1 TFLOP/s, 1 GB/s, no launch cost. */
#define PP_TEST_TOY_ROOFLINE_YAML                                                                 \
    "name: toy-roofline\n"                                                                       \
    "description: Toy device for the calibration tests (1 TFLOP/s, 1 GB/s, no launch cost)\n"    \
    "vendor: Test\n"                                                                             \
    "kind: cpu\n"                                                                                \
    "hardware:\n"                                                                                \
    "  peak_tflops:\n"                                                                           \
    "    fp32: 1.0\n"                                                                            \
    "  memory_bandwidth_gbs: 1.0\n"                                                              \
    "  memory_gb: 1\n"                                                                           \
    "  compute_units: 1\n"                                                                       \
    "runtime:\n"                                                                                 \
    "  framework: pytorch-eager\n"                                                               \
    "  precision: fp32\n"                                                                        \
    "  launch_overhead_us: 0\n"

/* |a - b| <= rel * max(|a|, |b|) (or both tiny); fails the test with both values printed. */
#define assert_rel_close(a, b, rel) pp_test_assert_rel_close((a), (b), (rel), __FILE__, __LINE__)
void pp_test_assert_rel_close(double a, double b, double rel, const char *file, int line);
/* Path under the source tree: pp_test_path("tests/fixtures/x.onnx") (static buffer, one at a time). */
const char *pp_test_path(const char *rel);
/* Writes bytes to a temporary file in the build folder and returns its path (static buffer); the
 * file is removed when the test binary exits. */
const char *pp_test_tmpfile(const void *data, size_t len, const char *suffix);
/* Writes text to path (fails the test if it cannot). */
void pp_test_write_text(const char *path, const char *text);
/* Writes len bytes of data to path (replacing it), asserting success. */
void pp_test_write_bytes(const char *path, const void *data, size_t len);
/* The whole file as a NUL-terminated string (caller frees), or NULL if it cannot be opened. */
char *pp_test_read_text(const char *path);
/* Appends layer rows of device "toy-roofline" (1 GB/s, no launch cost) to text at off: Relu on
 * n = step x i floats, i in [first, last] by every, each timed at its roofline (8n bytes at 1 GB/s)
 * times exp(log_a + slope ln(roofline ms)); returns the new offset. */
int pp_test_toy_relu_rows(char *text, size_t cap, int off, int first, int last, int every,
                          int step, double log_a, double slope);
/* Two sessions of toy rows: early, 40 Relu sizes (1000 .. 40000 floats) at the roofline; later,
 * 20 of them again (1000, 3000, ..) and 40 new ones (500, 1500, ..), all slowed by
 * exp(log_a + slope ln(roofline ms)). */
void pp_test_write_toy_sessions(const char *early, const char *later, double log_a, double slope);
/* A layer fit of device (its descriptor under config_dir) from files[0..n) into out_dir: one
 * thread, 20 boosting rounds. */
perfpred_fit_params pp_test_fit_params(const char *device, const char *const *files, int n,
                                       const char *config_dir, const char *out_dir);
/* The same fit from files[0] with rescaled[0] a later session's rows rescaled onto it (both
 * arrays the caller's, one element each). */
perfpred_fit_params pp_test_rescale_fit_params(const char *device, const char *const *files,
                                               const char *const *rescaled,
                                               const char *config_dir, const char *out_dir);
/* Limits this process's address space to what it maps now plus extra bytes (RLIMIT_AS), so that a
 * bigger allocation fails; for a forked child that tests a bound on memory. */
void pp_test_limit_address_space(size_t extra);
/* Runs the CLI (PP_CLI_PATH, defined for the tests that run it) with args (shell words) from the
 * source tree, its stdout and stderr into out (NUL-terminated, at most cap - 1 bytes) through
 * <build>/<tag>_out.txt; returns the exit code, -1 if it did not exit. */
int pp_test_run_cli(const char *args, char *out, size_t cap, const char *tag);
/* Default predict parameters that list the kernels into ks (at most cap; their count into *nk). */
perfpred_predict_params pp_test_kernels_into(perfpred_kernel *ks, int cap, int *nk);
#endif
