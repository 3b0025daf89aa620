/* run/probe.c: the figures of the CPU perfpred runs on, and the descriptor written from them.
 * /proc/cpuinfo, /proc/meminfo and sysfs caches say what the CPU is; a STREAM triad and a loop of
 * independent vector FMAs (the method of tools/cpu_figures.c, with pthreads) measure what it does.
 * The framework's own figures (per-op cost, resident memory) come from runners/host_probe.py. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "devices/devices.h"
#include "predictor/calib.h"
#include "predictor/predictor.h"
#include "run/run.h"

/* ---- what Linux says ---- */

static FILE *open_under(const char *root, const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s%s", root ? root : "", path);
    return fopen(p, "r");
}

/* "key<spaces/tabs>: value" -> value (trimmed) when the line's key is `key`. */
static const char *field_of(const char *line, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0) return NULL;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static void copy_trim(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src);
    size_t l = strlen(dst);
    while (l && (dst[l - 1] == '\n' || dst[l - 1] == ' ' || dst[l - 1] == '\r')) dst[--l] = 0;
}

static int has_flag(const char *flags, const char *f)
{
    size_t n = strlen(f);
    for (const char *p = flags; (p = strstr(p, f)); p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0)) return 1;
    return 0;
}

static void read_cpuinfo(const char *root, pp_run_cpu *c)
{
    FILE *f = open_under(root, "/proc/cpuinfo");
    if (!f) return;
    char line[8192];
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        const char *v;
        if (line[0] == '\n') first = 0; /* the first processor's block only */
        if (!first) continue;
        if ((v = field_of(line, "model name")) && !c->model_name[0])
            copy_trim(c->model_name, sizeof c->model_name, v);
        else if ((v = field_of(line, "vendor_id"))) copy_trim(c->vendor, sizeof c->vendor, v);
        else if ((v = field_of(line, "cpu family"))) c->family = atoi(v);
        else if ((v = field_of(line, "model"))) c->model = atoi(v);
        else if ((v = field_of(line, "cpu MHz"))) c->mhz = atof(v);
        else if ((v = field_of(line, "flags")) || (v = field_of(line, "Features"))) {
            if (has_flag(v, "hypervisor")) c->hypervisor = 1;
            if (has_flag(v, "avx512f")) {
                c->simd_lanes = 16;
                snprintf(c->isa, sizeof c->isa, "avx512f");
            } else if (has_flag(v, "avx2") && has_flag(v, "fma")) {
                c->simd_lanes = 8;
                snprintf(c->isa, sizeof c->isa, "avx2+fma");
            } else if (has_flag(v, "asimd")) {
                c->simd_lanes = 4;
                snprintf(c->isa, sizeof c->isa, "asimd");
                if (!c->vendor[0]) snprintf(c->vendor, sizeof c->vendor, "ARM");
            } else if (has_flag(v, "sse2")) {
                c->simd_lanes = 4;
                snprintf(c->isa, sizeof c->isa, "sse2");
            }
        } else if ((v = field_of(line, "CPU part")) && !c->model_name[0]) {
            snprintf(c->model_name, sizeof c->model_name, "ARM CPU part ");
            copy_trim(c->model_name + strlen(c->model_name),
                      sizeof c->model_name - strlen(c->model_name), v);
        }
    }
    fclose(f);
}

/* The first line of root/path into buf ("" when it cannot be read). */
static void first_line(const char *root, const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = open_under(root, path);
    if (!f) return;
    if (!fgets(buf, (int)n, f)) buf[0] = 0;
    fclose(f);
}

/* A sysfs cache size ("48K", "2M", or plain bytes) in KiB; 0 when it is neither. */
static double size_kib(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K': return v;
    case 'M': return v * 1024;
    case 'G': return v * 1024 * 1024;
    case '\n':
    case 0: return v / 1024;
    default: return 0;
    }
}

static void read_caches(const char *root, pp_run_cpu *c)
{
    for (int i = 0; i < 8; i++) {
        char p[256], lv[16], ty[32], sz[64];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        first_line(root, p, lv, sizeof lv);
        if (!lv[0]) continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        first_line(root, p, ty, sizeof ty);
        if (strncmp(ty, "Instruction", 11) == 0) continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        first_line(root, p, sz, sizeof sz);
        double kib = size_kib(sz);
        int level = atoi(lv);
        if (level == 1) c->l1d_kib = kib;
        else if (level == 2) c->l2_kib = kib;
        else if (level >= 3 && kib > c->l3_kib) c->l3_kib = kib;
    }
}

static void read_meminfo(const char *root, pp_run_cpu *c)
{
    FILE *f = open_under(root, "/proc/meminfo");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        const char *v = field_of(line, "MemTotal");
        if (v) c->mem_gib = atof(v) / (1024.0 * 1024.0);
    }
    fclose(f);
}

void pp_run_cpu_read(const char *root, pp_run_cpu *out)
{
    memset(out, 0, sizeof *out);
    out->family = out->model = -1;
    read_cpuinfo(root, out);
    read_caches(root, out);
    read_meminfo(root, out);
    long n = root && root[0] ? 0 : sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) {
        /* a fake root: count "processor" lines */
        FILE *f = open_under(root, "/proc/cpuinfo");
        char line[512];
        n = 0;
        while (f && fgets(line, sizeof line, f))
            if (field_of(line, "processor")) n++;
        if (f) fclose(f);
    }
    out->logical_cpus = (int)n;
}

/* ---- what it does ---- */

/* Shared by the triad's threads: they start together once every one exists (or quit when one
 * could not be created), then time each trial between two barriers. */
typedef struct triad_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, quit;
    pthread_barrier_t bar;
} triad_gate;

typedef struct triad_job {
    float *a, *b, *c;
    size_t lo, hi;
    triad_gate *gate;
    int trials;
    double *t_best; /* thread 0 keeps the best trial's time */
} triad_job;

/* Not instrumented under the sanitizers: a bandwidth loop checked element by element times the
 * checks, not the memory (and took seconds of test_calib_run's time under ASan). */
__attribute__((no_sanitize("address", "undefined"))) static void *triad_worker(void *arg)
{
    triad_job *j = arg;
    pthread_mutex_lock(&j->gate->mu);
    while (!j->gate->go && !j->gate->quit) pthread_cond_wait(&j->gate->cv, &j->gate->mu);
    int quit = j->gate->quit;
    pthread_mutex_unlock(&j->gate->mu);
    if (quit) return NULL;
    for (size_t i = j->lo; i < j->hi; i++) {
        j->a[i] = 0;
        j->b[i] = 1;
        j->c[i] = 2;
    }
    for (int t = 0; t < j->trials; t++) {
        pthread_barrier_wait(&j->gate->bar);
        double t0 = pp_now_s();
        for (size_t i = j->lo; i < j->hi; i++) j->a[i] = j->b[i] + 0.5f * j->c[i];
        pthread_barrier_wait(&j->gate->bar);
        double dt = pp_now_s() - t0;
        if (j->t_best && (*j->t_best == 0 || dt < *j->t_best)) *j->t_best = dt;
    }
    return NULL;
}

double pp_run_triad_gbs(int threads, double mib, int trials)
{
    if (threads < 1 || threads > 256 || mib <= 0 || trials < 1) return 0;
    size_t n = (size_t)(mib * 1048576.0 / sizeof(float));
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    triad_job *jobs = calloc((size_t)threads, sizeof *jobs);
    triad_gate gate = {.go = 0, .quit = 0};
    double best = 0, gbs = 0;
    if (a && b && c && tid && jobs && pthread_mutex_init(&gate.mu, NULL) == 0) {
        pthread_cond_init(&gate.cv, NULL);
        pthread_barrier_init(&gate.bar, NULL, (unsigned)threads);
        int started = 1;
        for (int i = 0; i < threads; i++) {
            jobs[i] = (triad_job){a, b, c, n * (size_t)i / (size_t)threads,
                                  n * (size_t)(i + 1) / (size_t)threads, &gate, trials,
                                  i == 0 ? &best : NULL};
            if (i > 0) {
                if (pthread_create(&tid[i], NULL, triad_worker, &jobs[i]) != 0) break;
                started = i + 1;
            }
        }
        pthread_mutex_lock(&gate.mu);
        if (started == threads) gate.go = 1;
        else gate.quit = 1;
        pthread_cond_broadcast(&gate.cv);
        pthread_mutex_unlock(&gate.mu);
        if (started == threads) triad_worker(&jobs[0]);
        for (int i = 1; i < started; i++) pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&gate.bar);
        pthread_cond_destroy(&gate.cv);
        pthread_mutex_destroy(&gate.mu);
        if (started == threads && best > 0) gbs = (double)n * 3 * sizeof(float) / best * 1e-9;
    }
    free(a);
    free(b);
    free(c);
    free(tid);
    free(jobs);
    return gbs;
}

/* One core's fp32 FMA rate: 12 independent vector accumulators hide the FMA latency on two pipes;
 * x = x * m + d with m just below 1 stays finite. The sink keeps the loop. */
#define FMA_ACC 12
static volatile float fma_sink;

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) static double fma_avx512(long iters)
{
    __m512 acc[FMA_ACC], m = _mm512_set1_ps(0.999999f), d = _mm512_set1_ps(1e-7f);
    for (int j = 0; j < FMA_ACC; j++) acc[j] = _mm512_set1_ps((float)(j + 1));
    double t0 = pp_now_s();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < FMA_ACC; j++) acc[j] = _mm512_fmadd_ps(acc[j], m, d);
    double t = pp_now_s() - t0;
    float s = 0;
    for (int j = 0; j < FMA_ACC; j++) s += _mm512_reduce_add_ps(acc[j]);
    fma_sink = s;
    return (double)iters * FMA_ACC * 16 * 2 / t * 1e-9;
}

__attribute__((target("avx2,fma"))) static double fma_avx2(long iters)
{
    __m256 acc[FMA_ACC], m = _mm256_set1_ps(0.999999f), d = _mm256_set1_ps(1e-7f);
    for (int j = 0; j < FMA_ACC; j++) acc[j] = _mm256_set1_ps((float)(j + 1));
    double t0 = pp_now_s();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < FMA_ACC; j++) acc[j] = _mm256_fmadd_ps(acc[j], m, d);
    double t = pp_now_s() - t0;
    float out[8], s = 0;
    for (int j = 0; j < FMA_ACC; j++) {
        _mm256_storeu_ps(out, acc[j]);
        for (int k = 0; k < 8; k++) s += out[k];
    }
    fma_sink = s;
    return (double)iters * FMA_ACC * 8 * 2 / t * 1e-9;
}
#endif

/* Without a vector FMA the CPU's own multiply and add (4 lanes: SSE or NEON), counted as 2 FLOP. */
static double fma_portable(long iters)
{
#if defined(__aarch64__)
    float32x4_t acc[FMA_ACC], m = vdupq_n_f32(0.999999f), d = vdupq_n_f32(1e-7f);
    for (int j = 0; j < FMA_ACC; j++) acc[j] = vdupq_n_f32((float)(j + 1));
    double t0 = pp_now_s();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < FMA_ACC; j++) acc[j] = vfmaq_f32(d, acc[j], m);
    double t = pp_now_s() - t0;
    float s = 0;
    for (int j = 0; j < FMA_ACC; j++) s += vaddvq_f32(acc[j]);
#else
    typedef float v4 __attribute__((vector_size(16)));
    v4 acc[FMA_ACC], m = {0.999999f, 0.999999f, 0.999999f, 0.999999f},
                     d = {1e-7f, 1e-7f, 1e-7f, 1e-7f};
    for (int j = 0; j < FMA_ACC; j++) acc[j] = m * (float)(j + 1);
    double t0 = pp_now_s();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < FMA_ACC; j++) acc[j] = acc[j] * m + d;
    double t = pp_now_s() - t0;
    float s = 0;
    for (int j = 0; j < FMA_ACC; j++)
        for (int k = 0; k < 4; k++) s += acc[j][k];
#endif
    fma_sink = s;
    return (double)iters * FMA_ACC * 4 * 2 / t * 1e-9;
}

double pp_run_fma_gflops(int trials, const char **isa_used)
{
    double (*fn)(long) = fma_portable;
    const char *isa = "4-lane multiply-add";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        fn = fma_avx512;
        isa = "avx512f";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        fn = fma_avx2;
        isa = "avx2+fma";
    }
#elif defined(__aarch64__)
    isa = "neon fma";
#endif
    if (isa_used) *isa_used = isa;
    /* size the loop to about 0.1 s from a short first try: the loop touches no memory and
     * reaches its rate within microseconds, so a longer one would only wait longer for a quiet
     * moment on a shared machine, which the best of the trials already finds */
    double g0 = fn(200000);
    long iters = g0 > 0 ? (long)(0.1 * g0 * 1e9 / (FMA_ACC * 2 * 16)) : 7000000L;
    if (iters < 100000) iters = 100000;
    double best = 0;
    for (int t = 0; t < trials; t++) {
        double g = fn(iters);
        if (g > best) best = g;
    }
    return best;
}

/* ---- the descriptor ---- */

const char *pp_run_nearest_cpu(const perfpred_ctx *ctx, const pp_run_figures *f)
{
    /* this machine as a descriptor of its measured figures, eager PyTorch on one thread */
    pp_device me;
    memset(&me, 0, sizeof me);
    int cores = f->cpu.logical_cpus > 0 ? f->cpu.logical_cpus : 1;
    me.kind = PP_DEV_CPU;
    me.vendor = f->cpu.vendor;
    me.runtime_framework = "pytorch-eager";
    me.runtime_precision = PP_PREC_FP32;
    me.compute_units = cores;
    me.peak_tflops[PP_PREC_FP32] = f->core_gflops * cores * 1e-3;
    me.memory_bandwidth_gbs = f->triad_gbs;
    me.gemm_gflops = f->gemm_gflops;
    const pp_device *s = pp_calib_nearest_cpu(pp_ctx_calib(ctx), &me);
    return s ? s->name : NULL;
}

void pp_run_descriptor_yaml(pp_strbuf *b, const char *name, const pp_run_figures *f,
                            const char *borrow)
{
    const pp_run_cpu *c = &f->cpu;
    int cores = c->logical_cpus > 0 ? c->logical_cpus : 1;
    pp_strbuf_printf(b,
                     "# %s: written by `perfpred calibrate run` on %s from what Linux says of the\n"
                     "# machine and from perfpred's own micro-benchmarks; every figure names its "
                     "source.\n"
                     "#   /proc/cpuinfo: \"%s\" (%s, family %d model %d), %d logical CPUs%s;\n"
                     "#   widest vector FMA: %s; caches (sysfs, cpu0): L1d %.0f KiB, L2 %.0f KiB, "
                     "last level %.0f KiB\n"
                     "---\n"
                     "name: %s\n"
                     "description: %d-CPU %s%s, %s, %s eager fp32\n"
                     "vendor: %s\n"
                     "kind: cpu\n"
                     "hostable: true\n",
                     name, f->date, c->model_name[0] ? c->model_name : "unknown",
                     c->vendor[0] ? c->vendor : "unknown vendor", c->family, c->model,
                     c->logical_cpus, c->hypervisor ? ", under a hypervisor" : "",
                     c->isa[0] ? c->isa : "unknown", c->l1d_kib, c->l2_kib, c->l3_kib, name, cores,
                     c->model_name[0] ? c->model_name : "CPU", c->hypervisor ? " guest" : "",
                     c->isa[0] ? c->isa : "unknown ISA",
                     f->framework_version[0] ? f->framework_version : "PyTorch",
                     c->vendor[0] ? c->vendor : "unknown");
    if (borrow)
        pp_strbuf_printf(b,
                         "# until this device has layer models of its own, the nearest calibrated "
                         "CPU's answer,\n# each kernel scaled by the FLOP/s and bandwidth ratios "
                         "(labelled transferred)\ncalibration_from: %s\n",
                         borrow);
    pp_strbuf_put(b, "hardware:\n  peak_tflops:\n");
    pp_strbuf_printf(b, "    # measured: %s; x %d logical CPUs\n    fp32: %.4g\n", f->src_flops,
                     cores, f->core_gflops * cores * 1e-3);
    pp_strbuf_printf(b, "  # measured: %s\n  memory_bandwidth_gbs: %.3g\n", f->src_bw,
                     f->triad_gbs);
    pp_strbuf_printf(b, "  memory_gb: %.1f              # /proc/meminfo: MemTotal\n", c->mem_gib);
    pp_strbuf_printf(b, "  compute_units: %d             # online logical CPUs\n", cores);
    if (c->mhz > 0)
        pp_strbuf_printf(b, "  clock_mhz: %.0f   # /proc/cpuinfo: cpu MHz (as reported)\n", c->mhz);
    double llc = c->l3_kib > 0 ? c->l3_kib : c->l2_kib;
    if (llc > 0)
        pp_strbuf_printf(b, "  l2_mb: %.4g                  # sysfs: last-level cache of cpu0\n",
                         llc / 1024.0);
    pp_strbuf_put(b, "runtime:\n"
                     "  # the runner's stack: PyTorch eager (runners/), fp32\n"
                     "  framework: pytorch-eager\n"
                     "  precision: fp32\n");
    if (f->launch_overhead_us > 0)
        pp_strbuf_printf(b, "  # measured: %s\n  launch_overhead_us: %.3g\n", f->src_launch,
                         f->launch_overhead_us);
    if (f->gemm_gflops > 0)
        pp_strbuf_printf(b, "  # measured: %s\n  gemm_gflops: %.3g\n", f->src_gemm, f->gemm_gflops);
    if (f->conv_call_us > 0)
        pp_strbuf_printf(b, "  # measured: %s\n  conv_call_us: %.3g\n", f->src_conv,
                         f->conv_call_us);
    if (f->runtime_memory_mb > 0)
        pp_strbuf_printf(b, "  # measured: %s\n  runtime_memory_overhead_mb: %.0f\n", f->src_mem,
                         f->runtime_memory_mb);
    pp_strbuf_put(b,
                  "  # nn.Linear: one addmm for 2-D and 3-D inputs; matmul, then add_, for 4-D\n"
                  "  fusion: [{ops: [MatMul, Add], max_input_rank: 3}]\n"
                  "  # torch.onnx's decompositions of one eager op: GELU, SiLU, HardSwish (opset < "
                  "14)\n"
                  "  composite_ops: [[Div, Erf, Add, Mul, Mul], [Sigmoid, Mul], [HardSigmoid, "
                  "Mul]]\n");
}
