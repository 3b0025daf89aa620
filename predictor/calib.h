/* predictor/calib.h: the calibrated side of a prediction: which devices have trained layer
 * models (their own, or through the device they derive from) and the per-kernel answers. */
#ifndef PP_CALIB_H
#define PP_CALIB_H

#include "devices/devices.h"
#include "graph/graph.h"

typedef struct pp_calib pp_calib;

/* Opens the layer models of every descriptor in db that names an artifacts directory under
 * config_dir: manifests are read and checked now, the regressors when first needed
 * (pp_calib_ready). A descriptor without artifacts is not an error; a corrupt manifest, or one
 * naming a missing model file, is. */
perfpred_status pp_calib_open(const pp_device_db *db, const char *config_dir, pp_calib **out,
                              pp_err *err);
void pp_calib_close(pp_calib *c);

/* The device whose layer models answer for d: d itself, its MIG parent, or the descriptor it is
 * scaled from; NULL when none is calibrated. *source names the models' training data. */
const pp_device *pp_calib_source_device(const pp_calib *c, const pp_device *d,
                                        const char **source);

/* Reads the regressors of d's layer models if not yet read (d as returned by
 * pp_calib_source_device; PERFPRED_OK for a device without models). A corrupt model file is an
 * error naming it. Call before pp_calib_node_ms, which cannot report one. Thread-safe. */
perfpred_status pp_calib_ready(const pp_calib *c, const pp_device *d, pp_err *err);

/* Latency in ms of a node on calibrated device d (d must have models: pp_calib_source_device(d)
 * == d). Returns 1 when a model for the node's op kind answered, 0 otherwise. Thread-safe. */
int pp_calib_node_ms(const pp_calib *c, const pp_device *d, const pp_node_feat *f, double *ms);

/* The timing floor (ms) of d's latency model for op kind k: the fastest operator its training rows
 * hold. Event-timed single operators (NeuSight) include the host's dispatch of the operator, so
 * the floor is mostly the host's; 0 when d has no such model. */
double pp_calib_floor_ms(const pp_calib *c, const pp_device *d, pp_op_kind k);

/* The graph-level correction of device d (configs/artifacts/<d>/gnn-latency.{bin,json}).
 * Applied as latency = layer sum x exp(out[0]) and, when the model has a second target,
 * energy = layer sum x 1 W x exp(out[1]).
 * pp_calib_has_gnn: whether d has one (its manifest was read at open), *source naming its training
 * data and *n_targets its targets; reads no weights.
 * pp_calib_gnn: the correction itself, *out NULL when d has none. Its weights (and an ensemble's
 * members) are read the first time a prediction asks, once, under a lock: a context that never
 * predicts on d never pays for them. A weights file that fails to load fails every prediction on
 * d with its error. Thread-safe. */
struct pp_gnn;
int pp_calib_has_gnn(const pp_calib *c, const pp_device *d, const char **source, int *n_targets);
perfpred_status pp_calib_gnn(const pp_calib *c, const pp_device *d, const struct pp_gnn **out,
                             const char **source, pp_err *err);
/* The figures an in-network overhead correction may state (overhead-latency.json): a file outside
 * them is refused, and a fit outside them is not written. */
#define PP_OVERHEAD_SCALE_MIN 0.05
#define PP_OVERHEAD_SCALE_MAX 20
#define PP_OVERHEAD_TERM_MAX_MS 100

/* The terms of an in-network overhead correction: latency = w[0] x layer sum + w[1] ms x kernels
 * + w[2] ms x 10^6 bytes the kernels move + w[3] ms x 10^6 bytes of cold weights. */
enum { PP_OVERHEAD_TERMS = 4 };
/* d's own in-network overhead correction: its provenance text (NULL when it has none), and where
 * w is not NULL its PP_OVERHEAD_TERMS figures. */
const char *pp_calib_overhead(const pp_calib *c, const pp_device *d, double *w);
/* The correction that answers for d: its own, else that of the device whose layer models d
 * borrows (calibration_from, or the nearest CPU), scaled by pp_overhead_transfer; NULL when
 * neither has one. */
const char *pp_calib_overhead_answer(const pp_calib *c, const pp_device *d, double *w);
/* The calibrated eager-PyTorch CPU (own layer models, d's precision) a CPU described by d would
 * borrow: of d's maker first (pp_cpu_vendor_family), then of any, the nearest by
 * pp_device_cpu_distance (the first of pp_calib_cover_cpus with no source); NULL where none is,
 * d is no eager-PyTorch CPU or lacks the figures. Also for a descriptor not in the context
 * (calibrate run's probe). */
const pp_device *pp_calib_nearest_cpu(const pp_calib *c, const pp_device *d);
/* Where the layer models answering for CPU d (src: d's own, or those it borrows) do not cover a
 * compute-bound kernel (an operator, kernel size, stride, dilation or group they never saw), the
 * other calibrated eager-PyTorch CPUs of d's precision that may time it, scaled to d through the
 * two descriptors as a borrowed model is (a datasheet roofline prices a CPU convolution at every
 * core's FMA peak, 2-5x fast; the predictor asks only for kernels its roofline prices so):
 * up to max of them into out, of d's maker first, then of any, each group nearest first
 * (pp_device_cpu_distance); src and d left out. 0 for other devices. Their regressors are read
 * when a kernel first asks (pp_calib_node_ms); one whose files fail to read answers nothing,
 * and a prediction on that device itself reports the error. */
#define PP_CALIB_MAX_COVER 4
int pp_calib_cover_cpus(const pp_calib *c, const pp_device *d, const pp_device *src,
                        const pp_device **out, int max);
/* Correction w of device `from` for a device `to` that borrows from's layer models: the scale as
 * it is, the time per kernel (host work between ops) x to's / from's launch_overhead_us, the
 * times per MB (memory traffic) x from's / to's memory_bandwidth_gbs; a figure either descriptor
 * lacks leaves its term unscaled. */
void pp_overhead_transfer(const double *w, const pp_device *from, const pp_device *to,
                          double *out);
/* The weights a forward pass of g reads from beyond d's last-level cache (l2_mb), which a layer
 * timed alone, back to back, found in it: where the pass's working set (weights_bytes and peak live
 * activations_bytes) exceeds that cache, the weights of the nodes whose own working set (weights,
 * inputs, outputs, x bf, the bytes per element against fp32) fits it, else 0 (also where d states
 * no cache). A layer whose working set alone exceeds the cache streamed its weights from memory
 * when timed alone too: its time already holds them. */
double pp_overhead_cold_weight_bytes(const pp_device *d, const pp_graph *g, double bf,
                                     double weights_bytes, double activations_bytes);
/* That correction's latency: w[0] x layer_ms + w[1] x n_kernels + (w[2] x kernel_bytes + w[3] x
 * cold_weight_bytes) / 10^6. */
double pp_overhead_latency_ms(const double *w, double layer_ms, int n_kernels, double kernel_bytes,
                              double cold_weight_bytes);
/* A context's calibrations (predictor/predictor.c). */
const pp_calib *pp_ctx_calib(const perfpred_ctx *ctx);
/* A context's device descriptors and its config folder (predictor/predictor.c). */
const pp_device_db *pp_ctx_db(const perfpred_ctx *ctx);
const char *pp_ctx_config_dir(const perfpred_ctx *ctx);
/* The runtime stacks d has and their provenance, in words (NULL: none; predictor/predictor.c). */
const char *pp_ctx_stack_text(const perfpred_ctx *ctx, const pp_device *d);
/* The layer models of the device named like d, its own (not a parent's or calibration_from's),
 * or NULL. */
const struct pp_layer_models *pp_calib_own_models(const pp_calib *c, const pp_device *d);

#endif
