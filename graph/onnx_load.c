/* graph/onnx_load.c: ONNX ModelProto -> pp_graph. A wire-format pre-pass copies the protobuf without
 * the payloads of large tensors (weights), so loading costs the size of the graph structure, never
 * the size of the weights; protobuf-c decodes that small copy, everything is copied into the
 * graph's arena, the protobuf-c tree is freed and the graph is linked. */
#include "graph/graph.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"

/* Default-domain opsets whose operators perfpred's shape inference implements. */
#define PP_OPSET_MIN 7
#define PP_OPSET_MAX 17
/* Real ONNX files nest messages about 8 deep (model, graph, value_info, type, tensor type, shape,
 * dimension); this bound keeps protobuf-c's recursive decoder off a stack-exhausting input. */
#define WIRE_MAX_DEPTH 48

/* ================================================================ wire pre-pass ====
 * Copies a ModelProto field by field, guided by the protobuf-c descriptors, dropping:
 *  - TensorProto payloads (float_data 4, int32_data 5, string_data 6, int64_data 7, raw_data 9,
 *    double_data 10, uint64_data 11) of tensors whose dims give more than PP_CONST_MAX_ELEMS
 *    elements (or negative dims, or more than PP_MAX_RANK dims: the decoder rejects those);
 *  - ModelProto.training_info (20): training graphs, which may carry another copy of the weights.
 * and replacing by an empty message (kept, so the decoder can name what it does not support):
 *  - GraphProto.sparse_initializer (15), AttributeProto.g (6), graphs (11), sparse_tensor (22),
 *    sparse_tensors (23): subgraphs and sparse tensors are rejected, their contents never read.
 * Every other field is copied verbatim; a skipped length-delimited field is stepped over by its
 * length, so the pages holding the weights of an mmap'd file are never touched.
 * Nested messages change length, so their length prefixes are re-encoded: a measuring pass records
 * the filtered size of every rewritten message in pre-order, the writing pass consumes them.
 * The output is never longer than the input (only drops and minimal re-encodings). */

typedef struct filt {
    const uint8_t *base;   /* start of the input, for byte offsets in messages */
    uint8_t *out;          /* NULL while measuring */
    size_t cap, pos;
    size_t *sizes;         /* filtered size of each rewritten nested message, pre-order */
    size_t n_sizes, cap_sizes, cursor;
    int oom;
    char why[160];
} filt;

typedef struct wfield {
    const uint8_t *start, *key_end, *val, *end; /* field start, after key, payload, field end */
    uint64_t num, ival;
    unsigned wt;
    size_t vlen;
} wfield;

enum { F_KEEP, F_DROP, F_EMPTY, F_RECURSE };

static int filt_fail(filt *f, const uint8_t *at, const char *what)
{
    snprintf(f->why, sizeof f->why, "%s at byte %zu", what, (size_t)(at - f->base));
    return -1;
}

static int wire_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *pp;
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1) return -1;   /* more than 64 bits */
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *v = r;
            return 0;
        }
    }
    return -1;
}

static int varint_len(uint64_t v)
{
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Reads the field at p (bounds: end) into w; every length is checked against end. */
static int wire_next(filt *f, const uint8_t *p, const uint8_t *end, wfield *w)
{
    uint64_t key;
    w->start = p;
    if (wire_varint(&p, end, &key)) return filt_fail(f, w->start, "malformed field key");
    w->num = key >> 3;
    w->wt = (unsigned)(key & 7);
    w->key_end = p;
    w->val = p;
    w->vlen = 0;
    if (w->num == 0 || w->num > 0x1fffffff) return filt_fail(f, w->start, "invalid field number");
    switch (w->wt) {
    case 0:
        if (wire_varint(&p, end, &w->ival)) return filt_fail(f, w->key_end, "malformed varint");
        break;
    case 1:
        if (end - p < 8) return filt_fail(f, p, "truncated 64-bit field");
        p += 8;
        break;
    case 5:
        if (end - p < 4) return filt_fail(f, p, "truncated 32-bit field");
        p += 4;
        break;
    case 2: {
        uint64_t l;
        if (wire_varint(&p, end, &l)) return filt_fail(f, w->key_end, "malformed field length");
        if (l > (uint64_t)(end - p))
            return filt_fail(f, w->start, "field runs past the end of its message (truncated?)");
        w->val = p;
        w->vlen = (size_t)l;
        p += l;
        break;
    }
    default: {
        char what[64];
        snprintf(what, sizeof what, "field %llu has wire type %u, which ONNX never uses",
                 (unsigned long long)w->num, w->wt);
        return filt_fail(f, w->start, what);
    }
    }
    w->end = p;
    return 0;
}

static void emit(filt *f, const void *src, size_t n)
{
    if (f->out) {
        PP_ASSERT(n <= f->cap - f->pos);
        memcpy(f->out + f->pos, src, n);
    }
    f->pos += n;
}

static void emit_varint(filt *f, uint64_t v)
{
    uint8_t b[10];
    int k = 0;
    do {
        b[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[k] |= 0x80;
        k++;
    } while (v);
    emit(f, b, (size_t)k);
}

/* Decides from the dims alone whether a TensorProto's payload is dropped. */
static int tensor_is_large(filt *f, const uint8_t *p, const uint8_t *end, int *large)
{
    int64_t n = 1;
    int rank = 0, bad = 0;
    while (p < end) {
        wfield w;
        if (wire_next(f, p, end, &w)) return -1;
        p = w.end;
        if (w.num != 1) continue;
        const uint8_t *q = w.val, *qe = w.val + w.vlen;
        for (;;) {
            uint64_t d;
            if (w.wt == 0) {
                d = w.ival;
            } else if (w.wt == 2) {   /* packed dims */
                if (q >= qe) break;
                if (wire_varint(&q, qe, &d)) return filt_fail(f, q, "malformed packed dims");
            } else {
                break;                /* wrong wire type: protobuf-c rejects it */
            }
            rank++;
            if ((int64_t)d < 0 || pp_mul_overflow_i64(n, (int64_t)d, &n)) bad = 1;
            if (w.wt == 0) break;
        }
    }
    *large = bad || rank > PP_MAX_RANK || n > PP_CONST_MAX_ELEMS;
    return 0;
}

static int filt_action(const ProtobufCMessageDescriptor *d, const wfield *w, int drop_payload,
                       const ProtobufCMessageDescriptor **child)
{
    if (drop_payload && d == &onnx__tensor_proto__descriptor) {
        switch (w->num) {
        case 4: case 5: case 6: case 7: case 9: case 10: case 11: return F_DROP;
        default: break;
        }
    }
    if (w->wt != 2) return F_KEEP;
    if (d == &onnx__model_proto__descriptor && w->num == 20) return F_DROP;
    if (d == &onnx__graph_proto__descriptor && w->num == 15) return F_EMPTY;
    if (d == &onnx__attribute_proto__descriptor &&
        (w->num == 6 || w->num == 11 || w->num == 22 || w->num == 23))
        return F_EMPTY;
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field(d, (unsigned)w->num);
    if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
        *child = fd->descriptor;
        return F_RECURSE;
    }
    return F_KEEP;
}

static int filt_msg(filt *f, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                    const uint8_t *end, int depth)
{
    if (depth > WIRE_MAX_DEPTH) return filt_fail(f, p, "messages nested too deeply");
    int drop = 0;
    if (d == &onnx__tensor_proto__descriptor && tensor_is_large(f, p, end, &drop)) return -1;
    while (p < end) {
        wfield w;
        const ProtobufCMessageDescriptor *child = NULL;
        if (wire_next(f, p, end, &w)) return -1;
        p = w.end;
        switch (filt_action(d, &w, drop, &child)) {
        case F_KEEP:
            emit(f, w.start, (size_t)(w.end - w.start));
            break;
        case F_DROP:
            break;
        case F_EMPTY:
            emit(f, w.start, (size_t)(w.key_end - w.start));
            emit(f, "", 1);   /* length 0 */
            break;
        case F_RECURSE:
            emit(f, w.start, (size_t)(w.key_end - w.start));
            if (!f->out) {
                if (f->n_sizes == f->cap_sizes) {
                    size_t nc = f->cap_sizes ? f->cap_sizes * 2 : 256;
                    size_t *ns = realloc(f->sizes, nc * sizeof *ns);
                    if (!ns) {
                        f->oom = 1;
                        return -1;
                    }
                    f->sizes = ns;
                    f->cap_sizes = nc;
                }
                size_t k = f->n_sizes++, start = f->pos;
                if (filt_msg(f, child, w.val, w.val + w.vlen, depth + 1)) return -1;
                size_t sz = f->pos - start;
                f->sizes[k] = sz;
                f->pos += (size_t)varint_len(sz);
            } else {
                PP_ASSERT(f->cursor < f->n_sizes);
                size_t sz = f->sizes[f->cursor++];
                emit_varint(f, sz);
                size_t start = f->pos;
                if (filt_msg(f, child, w.val, w.val + w.vlen, depth + 1)) return -1;
                PP_ASSERT(f->pos - start == sz);
            }
            break;
        }
    }
    return 0;
}

perfpred_status pp_onnx_strip_payloads(const char *path_for_errors, const uint8_t *buf, size_t len,
                                       uint8_t **out, size_t *out_len, pp_err *err)
{
    const char *path = path_for_errors ? path_for_errors : "<memory>";
    if (!out || !out_len || (!buf && len))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: pp_onnx_strip_payloads: bad arguments",
                          path);
    if (!buf) buf = (const uint8_t *)"";
    filt f;
    memset(&f, 0, sizeof f);
    f.base = buf;
    *out = NULL;
    *out_len = 0;
    perfpred_status st = PERFPRED_OK;
    if (filt_msg(&f, &onnx__model_proto__descriptor, buf, buf + len, 0)) goto fail;
    PP_ASSERT(f.pos <= len);
    f.cap = f.pos;
    f.out = malloc(f.cap ? f.cap : 1);
    if (!f.out) {
        f.oom = 1;
        goto fail;
    }
    f.pos = 0;
    if (filt_msg(&f, &onnx__model_proto__descriptor, buf, buf + len, 0)) goto fail;
    PP_ASSERT(f.pos == f.cap && f.cursor == f.n_sizes);
    *out = f.out;
    *out_len = f.cap;
    free(f.sizes);
    return PERFPRED_OK;
fail:
    if (f.oom)
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory while reading the model", path);
    else
        st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not a valid ONNX model (%s)", path, f.why);
    free(f.out);
    free(f.sizes);
    return st;
}

/* ================================================================ tree -> IR ==== */

typedef struct ld {
    pp_graph *g;
    pp_err *err;
    const char *path;
    const Onnx__ModelProto *m;
} ld;

static perfpred_status ld_nomem(ld *L)
{
    return pp_err_set(L->err, PERFPRED_ERR_NOMEM, "%s: out of memory while loading", L->path);
}

static uint64_t le_bytes(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* IEEE 754 binary16 -> double (subnormals, infinities and NaN included). */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(m + 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bits_to_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int dtype_is_int(int32_t dt)
{
    switch (dt) {
    case PP_DT_UINT8: case PP_DT_INT8: case PP_DT_UINT16: case PP_DT_INT16: case PP_DT_INT32:
    case PP_DT_INT64: case PP_DT_BOOL: case PP_DT_UINT32: case PP_DT_UINT64:
        return 1;
    default:
        return 0;
    }
}

/* One element from the bits it is stored as (raw little-endian bytes or a typed field). Unsigned
 * 64-bit values above INT64_MAX wrap: no shape arithmetic needs them. */
static void put_elem(int32_t dt, uint64_t b, int64_t *iv, double *fv, size_t i)
{
    switch (dt) {
    case PP_DT_FLOAT: fv[i] = bits_to_float((uint32_t)b); break;
    case PP_DT_DOUBLE: { double d; memcpy(&d, &b, sizeof d); fv[i] = d; break; }
    case PP_DT_FLOAT16: fv[i] = half_to_double((uint16_t)b); break;
    case PP_DT_BFLOAT16: fv[i] = bits_to_float((uint32_t)(uint16_t)b << 16); break;
    case PP_DT_INT8: iv[i] = (int8_t)(uint8_t)b; break;
    case PP_DT_INT16: iv[i] = (int16_t)(uint16_t)b; break;
    case PP_DT_INT32: iv[i] = (int32_t)(uint32_t)b; break;
    case PP_DT_UINT8: case PP_DT_BOOL: iv[i] = (uint8_t)b; break;
    case PP_DT_UINT16: iv[i] = (uint16_t)b; break;
    case PP_DT_UINT32: iv[i] = (uint32_t)b; break;
    default: iv[i] = (int64_t)b; break;   /* INT64, UINT64 */
    }
}

/* Decodes the values of a small tensor (v->n <= PP_CONST_MAX_ELEMS). Sets *known when v->ival or
 * v->fval now holds them; strings and complex numbers keep their shape only. */
static perfpred_status decode_values(ld *L, const Onnx__TensorProto *tp, const char *what,
                                     pp_value *v, int *known)
{
    *known = 0;
    int32_t dt = v->dtype;
    size_t typed = tp->n_float_data + tp->n_int32_data + tp->n_string_data + tp->n_int64_data +
                   tp->n_double_data + tp->n_uint64_data;
    if (tp->has_raw_data && typed)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s holds both raw_data and typed data",
                          L->path, what);
    int is_f = pp_dtype_is_float(dt), is_i = dtype_is_int(dt);
    if (!is_f && !is_i) return PERFPRED_OK;
    size_t n = (size_t)v->n;
    int64_t *iv = NULL;
    double *fv = NULL;
    if (is_f) fv = pp_arena_array(L->g->arena, n ? n : 1, sizeof *fv);
    else iv = pp_arena_array(L->g->arena, n ? n : 1, sizeof *iv);
    if (!fv && !iv) return ld_nomem(L);
    if (tp->has_raw_data) {
        int sz = pp_dtype_size(dt);
        if (tp->raw_data.len != n * (size_t)sz)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: %s: raw_data holds %zu bytes, but %zu %s elements need %zu",
                              L->path, what, tp->raw_data.len, n, pp_dtype_name(dt),
                              n * (size_t)sz);
        for (size_t i = 0; i < n; i++)
            put_elem(dt, le_bytes(tp->raw_data.data + i * (size_t)sz, sz), iv, fv, i);
    } else {
        size_t have;
        const char *field;
        switch (dt) {
        case PP_DT_FLOAT: have = tp->n_float_data; field = "float_data"; break;
        case PP_DT_DOUBLE: have = tp->n_double_data; field = "double_data"; break;
        case PP_DT_INT64: have = tp->n_int64_data; field = "int64_data"; break;
        case PP_DT_UINT32: case PP_DT_UINT64: have = tp->n_uint64_data; field = "uint64_data"; break;
        default: have = tp->n_int32_data; field = "int32_data"; break;
        }
        if (have != n)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: %s: %s holds %zu values, but its dims give %zu elements",
                              L->path, what, field, have, n);
        for (size_t i = 0; i < n; i++) {
            switch (dt) {
            case PP_DT_FLOAT: fv[i] = tp->float_data[i]; break;
            case PP_DT_DOUBLE: fv[i] = tp->double_data[i]; break;
            case PP_DT_INT64: iv[i] = tp->int64_data[i]; break;
            case PP_DT_UINT32: case PP_DT_UINT64: iv[i] = (int64_t)tp->uint64_data[i]; break;
            default: put_elem(dt, (uint32_t)tp->int32_data[i], iv, fv, i); break;
            }
        }
    }
    v->ival = iv;
    v->fval = fv;
    *known = 1;
    return PERFPRED_OK;
}

static perfpred_status check_dtype(ld *L, const char *what, int64_t dt, int allow_undefined)
{
    if (dt == PP_DT_UNDEFINED && !allow_undefined)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s has no data type", L->path, what);
    if (dt < 0 || dt > PP_DT_BFLOAT16)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: %s has data type %lld, which perfpred does not support", L->path,
                          what, (long long)dt);
    return PERFPRED_OK;
}

/* TensorProto -> pp_value: dtype and dims always, values when n <= PP_CONST_MAX_ELEMS and the data
 * lives in the file. *external is set for data_location EXTERNAL (the file it names is never opened). */
static perfpred_status decode_tensor(ld *L, const Onnx__TensorProto *tp, const char *what,
                                     pp_value *v, int *known, int *external)
{
    perfpred_status st;
    memset(v, 0, sizeof *v);
    v->n = -1;
    *known = 0;
    *external = 0;
    if ((st = check_dtype(L, what, tp->has_data_type ? tp->data_type : 0, 0))) return st;
    v->dtype = tp->data_type;
    if (tp->n_dims > PP_MAX_RANK)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: %s has %zu dims; perfpred supports at most %d", L->path, what,
                          tp->n_dims, PP_MAX_RANK);
    int64_t n = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s has a negative dim (%lld)",
                              L->path, what, (long long)tp->dims[d]);
        if (pp_mul_overflow_i64(n, tp->dims[d], &n))
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s: element count overflows",
                              L->path, what);
        v->dims[d] = tp->dims[d];
    }
    v->rank = (int)tp->n_dims;
    v->n = n;
    if (tp->segment)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: %s is one segment of a chunked tensor, which is not supported",
                          L->path, what);
    if (tp->has_data_location) {
        if (tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            *external = 1;
            return PERFPRED_OK;
        }
        if (tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s has unknown data_location %d",
                              L->path, what, (int)tp->data_location);
    }
    if (n <= PP_CONST_MAX_ELEMS) return decode_values(L, tp, what, v, known);
    return PERFPRED_OK;
}

static void tensor_take_value(pp_tensor *t, const pp_value *v, int known)
{
    pp_tensor_set_shape(t, v->dtype, v->rank, v->dims);
    for (int d = 0; d < PP_MAX_RANK; d++) t->dim_param[d] = NULL;
    if (known) {
        t->val = *v;
        t->flags |= PP_T_CONST;
    }
}

/* ---- value infos: shape and dtype hints ---- */
typedef struct type_hint {
    int present;            /* a tensor type was given */
    int32_t dtype;
    int rank;               /* -1: no shape */
    int64_t dims[PP_MAX_RANK];
    const char *params[PP_MAX_RANK];
} type_hint;

static const char *type_kind_name(Onnx__TypeProto__ValueCase c)
{
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "a sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "a map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "an optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor";
    default: return "of no type";
    }
}

static perfpred_status decode_type(ld *L, const Onnx__TypeProto *tp, const char *what,
                                   type_hint *h)
{
    perfpred_status st;
    memset(h, 0, sizeof *h);
    h->rank = -1;
    if (!tp) return PERFPRED_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: %s is %s; only tensors are supported", L->path, what,
                          type_kind_name(tp->value_case));
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int64_t dt = tt->has_elem_type ? tt->elem_type : 0;
    if ((st = check_dtype(L, what, dt, 1))) return st;
    h->present = 1;
    h->dtype = (int32_t)dt;
    if (!tt->shape) return PERFPRED_OK;
    if (tt->shape->n_dim > PP_MAX_RANK)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: %s has %zu dims; perfpred supports at most %d", L->path, what,
                          tt->shape->n_dim, PP_MAX_RANK);
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        h->dims[d] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0)
                return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s has a negative dim (%lld)",
                                  L->path, what, (long long)dim->dim_value);
            h->dims[d] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0]) {
            h->params[d] = pp_arena_strdup(L->g->arena, dim->dim_param);
            if (!h->params[d]) return ld_nomem(L);
        }
    }
    h->rank = (int)tt->shape->n_dim;
    return PERFPRED_OK;
}

/* Records a hint on a tensor unless it has one of the flags in keep: initializers and constants are
 * authoritative, and a graph input's declaration outranks value_info and output hints. */
static void apply_hint(pp_tensor *t, const type_hint *h, uint32_t keep)
{
    if (!h->present || (t->flags & keep)) return;
    if (h->dtype != PP_DT_UNDEFINED) t->dtype = h->dtype;
    if (h->rank < 0) return;
    pp_tensor_set_shape(t, h->dtype, h->rank, h->dims);
    for (int d = 0; d < PP_MAX_RANK; d++) t->dim_param[d] = d < h->rank ? h->params[d] : NULL;
}

static int value_info_tensor(ld *L, const Onnx__ValueInfoProto *vi, const char *role, size_t i,
                             perfpred_status *st)
{
    if (!vi->name || !vi->name[0]) {
        *st = pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s #%zu has no name", L->path, role, i);
        return -1;
    }
    int t = pp_graph_tensor(L->g, vi->name);
    if (t < 0) *st = ld_nomem(L);
    return t;
}

/* ---- attributes ---- */
static const char *attr_type_name(int type)
{
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "?";
    }
}

static perfpred_status decode_attr(ld *L, int ni, const Onnx__AttributeProto *ap, size_t ai)
{
    pp_graph *g = L->g;
    const char *nn = g->nodes[ni].name, *op = g->nodes[ni].op_type;
    if (!ap->name || !ap->name[0])
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: node '%s' (%s): attribute #%zu has no name",
                          L->path, nn, op, ai);
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: node '%s' (%s): attribute '%s' refers to function attribute '%s', "
                          "which is only valid inside a function",
                          L->path, nn, op, ap->name, ap->ref_attr_name);
    if (!ap->has_type)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: node '%s' (%s): attribute '%s' has no type",
                          L->path, nn, op, ap->name);
    if (pp_node_attr(&g->nodes[ni], ap->name))
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: node '%s' (%s): attribute '%s' is given twice", L->path, nn, op,
                          ap->name);
    int type = (int)ap->type;
    switch (type) {
    case PP_ATTR_FLOAT: case PP_ATTR_INT: case PP_ATTR_STRING: case PP_ATTR_TENSOR:
    case PP_ATTR_FLOATS: case PP_ATTR_INTS: case PP_ATTR_STRINGS:
        break;
    case PP_ATTR_GRAPH: case PP_ATTR_GRAPHS:
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: node '%s' (%s): attribute '%s' holds a subgraph; control flow "
                          "(If, Loop, Scan) is not supported",
                          L->path, nn, op, ap->name);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: node '%s' (%s): attribute '%s' has type %s, which is not supported",
                          L->path, nn, op, ap->name, attr_type_name(type));
    default:
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: node '%s' (%s): attribute '%s' has unknown type %d", L->path, nn,
                          op, ap->name, type);
    }
    /* the node's attrs array was sized for every attribute by read_nodes */
    pp_node *node = &g->nodes[ni];
    pp_attr *a = &node->attrs[node->n_attrs];
    a->name = pp_arena_strdup(g->arena, ap->name);
    if (!a->name) return ld_nomem(L);
    a->type = type;
    a->t.n = -1;
    node->n_attrs++;
    pp_arena *ar = g->arena;
    switch (type) {
    case PP_ATTR_FLOAT:
        a->f = ap->f;
        break;
    case PP_ATTR_INT:
        a->i = ap->i;
        break;
    case PP_ATTR_STRING:
        a->s = ap->has_s ? pp_arena_strndup(ar, (const char *)ap->s.data, ap->s.len)
                         : pp_arena_strdup(ar, "");
        if (!a->s) return ld_nomem(L);
        break;
    case PP_ATTR_FLOATS:
        a->n = (int64_t)ap->n_floats;
        a->floats = pp_arena_array(ar, ap->n_floats ? ap->n_floats : 1, sizeof(double));
        if (!a->floats) return ld_nomem(L);
        for (size_t k = 0; k < ap->n_floats; k++) a->floats[k] = ap->floats[k];
        break;
    case PP_ATTR_INTS:
        a->n = (int64_t)ap->n_ints;
        a->ints = pp_arena_array(ar, ap->n_ints ? ap->n_ints : 1, sizeof(int64_t));
        if (!a->ints) return ld_nomem(L);
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case PP_ATTR_STRINGS:
        a->n = (int64_t)ap->n_strings;
        a->strings = pp_arena_array(ar, ap->n_strings ? ap->n_strings : 1, sizeof(char *));
        if (!a->strings) return ld_nomem(L);
        for (size_t k = 0; k < ap->n_strings; k++) {
            a->strings[k] = pp_arena_strndup(ar, (const char *)ap->strings[k].data,
                                             ap->strings[k].len);
            if (!a->strings[k]) return ld_nomem(L);
        }
        break;
    case PP_ATTR_TENSOR: {
        char what[PP_ERR_MSG / 2];
        snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", nn, op, ap->name);
        if (!ap->t)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: %s has type TENSOR but holds none",
                              L->path, what);
        int known, external;
        perfpred_status st = decode_tensor(L, ap->t, what, &a->t, &known, &external);
        if (st) return st;
        break;
    }
    default:
        break;
    }
    return PERFPRED_OK;
}

/* Constant keeps its node, and its output tensor also gets the value (dims always; values when
 * small), so linking and shape inference see a constant. */
static perfpred_status materialize_constant(ld *L, int ni)
{
    pp_graph *g = L->g;
    const pp_node *n = &g->nodes[ni];
    if (n->n_outputs != 1 || n->outputs[0] < 0)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: node '%s' (Constant) must have exactly one output", L->path,
                          n->name);
    const pp_attr *src = NULL;
    int count = 0;
    for (int k = 0; k < n->n_attrs; k++) {
        const pp_attr *a = &n->attrs[k];
        if (!strcmp(a->name, "value_string") || !strcmp(a->name, "value_strings") ||
            !strcmp(a->name, "sparse_value"))
            return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                              "%s: node '%s' (Constant): attribute '%s' is not supported (string "
                              "and sparse constants)",
                              L->path, n->name, a->name);
        int want = !strcmp(a->name, "value")          ? PP_ATTR_TENSOR
                   : !strcmp(a->name, "value_float")  ? PP_ATTR_FLOAT
                   : !strcmp(a->name, "value_floats") ? PP_ATTR_FLOATS
                   : !strcmp(a->name, "value_int")    ? PP_ATTR_INT
                   : !strcmp(a->name, "value_ints")   ? PP_ATTR_INTS
                                                      : -1;
        if (want < 0) continue;
        if (a->type != want)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: node '%s' (Constant): attribute '%s' has the wrong type",
                              L->path, n->name, a->name);
        src = a;
        count++;
    }
    if (count != 1)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: node '%s' (Constant) needs exactly one value attribute, has %d",
                          L->path, n->name, count);
    pp_value v;
    memset(&v, 0, sizeof v);
    int known = 1;
    switch (src->type) {
    case PP_ATTR_TENSOR:
        v = src->t;
        known = v.ival || v.fval;
        break;
    case PP_ATTR_FLOAT:
    case PP_ATTR_INT:
        v.dtype = src->type == PP_ATTR_FLOAT ? PP_DT_FLOAT : PP_DT_INT64;
        v.rank = 0;
        v.n = 1;
        if (src->type == PP_ATTR_FLOAT) {
            v.fval = pp_arena_alloc(g->arena, sizeof(double));
            if (!v.fval) return ld_nomem(L);
            v.fval[0] = src->f;
        } else {
            v.ival = pp_arena_alloc(g->arena, sizeof(int64_t));
            if (!v.ival) return ld_nomem(L);
            v.ival[0] = src->i;
        }
        break;
    default: /* FLOATS, INTS: a 1-D tensor; the attribute already holds a copy of the values */
        v.dtype = src->type == PP_ATTR_FLOATS ? PP_DT_FLOAT : PP_DT_INT64;
        v.rank = 1;
        v.dims[0] = v.n = src->n;
        known = src->n <= PP_CONST_MAX_ELEMS;
        if (known) {
            v.fval = src->type == PP_ATTR_FLOATS ? src->floats : NULL;
            v.ival = src->type == PP_ATTR_INTS ? src->ints : NULL;
        }
        break;
    }
    if (!known) {
        v.ival = NULL;
        v.fval = NULL;
    }
    tensor_take_value(&g->tensors[n->outputs[0]], &v, known);
    return PERFPRED_OK;
}

/* ---- export_params=False: parameters arrive as graph inputs ----
 * A graph input without an initializer is taken for a weight when all of these hold:
 *  - it is not the first graph input that lacks an initializer (that one is the data);
 *  - its shape is fully static (no dim_param, no unknown dim: data inputs carry a batch dim);
 *  - its dtype is floating point (index and mask inputs are integers or bools);
 *  - it has a consumer, and every consumer takes it at a parameter position: input >= 1 of Conv,
 *    ConvTranspose, Gemm, BatchNormalization, InstanceNormalization, LayerNormalization,
 *    GroupNormalization, PRelu; any input of MatMul, Add, Mul, Sub, Div, Concat; input 0 (the
 *    table) of Gather; input 0 of Expand, Tile, Reshape, Unsqueeze, Squeeze, Transpose (a learned
 *    token or bias table reshaped or broadcast: ViT's class_token, Swin's and MaxViT's relative
 *    position tables). Identity is looked through: PyTorch shares equal parameters (the zero biases left by
 *    folding BatchNorm into Conv) by feeding one input through several Identity nodes.
 * A second static float data input used only by such ops cannot be told apart from a parameter;
 * giving it a symbolic dim (or an initializer to the parameters) resolves it. */
static int weight_position(const pp_node *n, int k)
{
    static const char *const from1[] = {"Conv", "ConvTranspose", "Gemm", "BatchNormalization",
                                        "InstanceNormalization", "LayerNormalization",
                                        "GroupNormalization", "PRelu"};
    static const char *const any[] = {"MatMul", "Add", "Mul", "Sub", "Div", "Concat"};
    static const char *const at0[] = {"Gather",    "Expand",  "Tile",     "Reshape",
                                      "Unsqueeze", "Squeeze", "Transpose"};
    if (n->domain[0]) return 0;
    for (size_t i = 0; i < sizeof from1 / sizeof *from1; i++)
        if (!strcmp(n->op_type, from1[i])) return k >= 1;
    for (size_t i = 0; i < sizeof any / sizeof *any; i++)
        if (!strcmp(n->op_type, any[i])) return 1;
    for (size_t i = 0; i < sizeof at0 / sizeof *at0; i++)
        if (!strcmp(n->op_type, at0[i])) return k == 0;
    return 0;
}

static int is_identity(const pp_node *n)
{
    return !n->domain[0] && !strcmp(n->op_type, "Identity") && n->n_outputs >= 1;
}

typedef struct use {
    int node, k;
} use;

static perfpred_status mark_input_weights(ld *L, int first_input)
{
    pp_graph *g = L->g;
    size_t nt = (size_t)g->n_tensors, total = 0;
    /* tensor -> its uses (node, input position), CSR */
    int *off = calloc(nt + 2, sizeof *off);
    int *stamp = malloc((nt + 1) * sizeof *stamp), *stack = malloc((nt + 1) * sizeof *stack);
    use *uses = NULL;
    perfpred_status st = PERFPRED_OK;
    if (!off || !stamp || !stack) goto oom;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) off[g->nodes[i].inputs[k] + 2]++, total++;
    for (size_t t = 0; t < nt; t++) off[t + 2] += off[t + 1];
    uses = malloc((total + 1) * sizeof *uses);
    if (!uses) goto oom;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k];
            if (t >= 0) uses[off[t + 1]++] = (use){i, k};
        }
    /* now uses of t are uses[off[t] .. off[t + 1]) */
    for (size_t t = 0; t < nt; t++) stamp[t] = -1;
    for (int t = 0; t < (int)nt; t++) {
        pp_tensor *T = &g->tensors[t];
        if (!(T->flags & PP_T_GRAPH_INPUT) || (T->flags & PP_T_INITIALIZER) || t == first_input ||
            !(T->flags & PP_T_SHAPE_KNOWN) || !pp_dtype_is_float(T->dtype))
            continue;
        int sp = 0, at_weight = 0, elsewhere = 0;
        stack[sp++] = t;
        stamp[t] = t;
        while (sp && !elsewhere) {
            int x = stack[--sp];
            for (int u = off[x]; u < off[x + 1]; u++) {
                const pp_node *n = &g->nodes[uses[u].node];
                int o = n->outputs[0];
                if (is_identity(n)) {
                    if (o >= 0 && stamp[o] != t) {
                        stamp[o] = t;
                        stack[sp++] = o;
                    }
                } else if (weight_position(n, uses[u].k)) {
                    at_weight = 1;
                } else {
                    elsewhere = 1;
                }
            }
        }
        if (at_weight && !elsewhere) T->flags |= PP_T_WEIGHT;
    }
    goto done;
oom:
    st = ld_nomem(L);
done:
    free(off);
    free(stamp);
    free(stack);
    free(uses);
    return st;
}

/* After linking (topological order): the output of an Identity of a weight is a weight too. */
static void propagate_weights(pp_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *n = &g->nodes[i];
        if (is_identity(n) && n->n_inputs == 1 && n->inputs[0] >= 0 && n->outputs[0] >= 0 &&
            (g->tensors[n->inputs[0]].flags & PP_T_WEIGHT))
            g->tensors[n->outputs[0]].flags |= PP_T_WEIGHT;
    }
}

/* ---- the model ---- */
static int is_default_domain(const char *d)
{
    return !d || !d[0] || !strcmp(d, "ai.onnx");
}

static perfpred_status read_opsets(ld *L)
{
    const Onnx__ModelProto *m = L->m;
    int found = 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!is_default_domain(o->domain)) continue;
        if (found)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: not a valid ONNX model (opset_import lists the default domain "
                              "twice)",
                              L->path);
        if (!o->has_version)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: not a valid ONNX model (default-domain opset_import has no "
                              "version)",
                              L->path);
        if (o->version < PP_OPSET_MIN || o->version > PP_OPSET_MAX)
            return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                              "%s: opset %lld of the default ONNX domain is not supported "
                              "(perfpred supports opsets %d to %d)",
                              L->path, (long long)o->version, PP_OPSET_MIN, PP_OPSET_MAX);
        L->g->opset = o->version;
        found = 1;
    }
    int default_nodes = 0;
    for (size_t i = 0; m->graph && i < m->graph->n_node; i++)
        default_nodes += is_default_domain(m->graph->node[i]->domain);
    if (!found && !default_nodes && m->n_opset_import > 0 && m->opset_import[0]->domain)
        /* a valid model of another operator set only (e.g. ai.onnx.preview.training) */
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: the model imports no default ONNX opset (only domain '%s'); "
                          "perfpred models default-domain graphs",
                          L->path, m->opset_import[0]->domain);
    if (!found)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: not a valid ONNX model (no opset_import for the default domain)",
                          L->path);
    return PERFPRED_OK;
}

static int domain_declared(const Onnx__ModelProto *m, const char *dom)
{
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (m->opset_import[i]->domain && !strcmp(m->opset_import[i]->domain, dom)) return 1;
    return 0;
}

static perfpred_status read_initializers(ld *L, const Onnx__GraphProto *gp)
{
    pp_graph *g = L->g;
    if (gp->n_sparse_initializer)
        return pp_err_set(L->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: sparse initializers are not supported", L->path);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0])
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: initializer #%zu has no name",
                              L->path, i);
        int t = pp_graph_tensor(g, tp->name);
        if (t < 0) return ld_nomem(L);
        if (g->tensors[t].flags & PP_T_INITIALIZER)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: initializer '%s' is listed twice",
                              L->path, tp->name);
        char what[PP_ERR_MSG / 2];
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        pp_value v;
        int known, external;
        perfpred_status st = decode_tensor(L, tp, what, &v, &known, &external);
        if (st) return st;
        pp_tensor *T = &g->tensors[t];
        tensor_take_value(T, &v, known);
        T->flags |= PP_T_INITIALIZER | PP_T_WEIGHT | (external ? PP_T_EXTERNAL : 0u);
    }
    return PERFPRED_OK;
}

static perfpred_status read_value_infos(ld *L, const Onnx__GraphProto *gp, int *first_input)
{
    pp_graph *g = L->g;
    perfpred_status st = PERFPRED_OK;
    char what[PP_ERR_MSG / 2];
    type_hint h;
    *first_input = -1;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        int t = value_info_tensor(L, vi, "graph input", i, &st);
        if (t < 0) return st;
        if (g->tensors[t].flags & PP_T_GRAPH_INPUT)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: graph input '%s' is listed twice",
                              L->path, vi->name);
        if (!vi->type && !(g->tensors[t].flags & PP_T_INITIALIZER))
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: graph input '%s' has no type",
                              L->path, vi->name);
        snprintf(what, sizeof what, "graph input '%s'", vi->name);
        if ((st = decode_type(L, vi->type, what, &h))) return st;
        apply_hint(&g->tensors[t], &h, PP_T_INITIALIZER | PP_T_CONST);
        if (*first_input < 0 && !(g->tensors[t].flags & PP_T_INITIALIZER)) *first_input = t;
        g->tensors[t].flags |= PP_T_GRAPH_INPUT;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        int t = value_info_tensor(L, vi, "graph output", i, &st);
        if (t < 0) return st;
        if (g->tensors[t].flags & PP_T_GRAPH_OUTPUT)
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: graph output '%s' is listed twice",
                              L->path, vi->name);
        snprintf(what, sizeof what, "graph output '%s'", vi->name);
        if ((st = decode_type(L, vi->type, what, &h))) return st;
        apply_hint(&g->tensors[t], &h, PP_T_INITIALIZER | PP_T_CONST | PP_T_GRAPH_INPUT);
        g->tensors[t].flags |= PP_T_GRAPH_OUTPUT;
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        /* Hints only: a sequence or map value is rejected by the op that makes it, not here. */
        if (vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) continue;
        int t = value_info_tensor(L, vi, "value_info", i, &st);
        if (t < 0) return st;
        snprintf(what, sizeof what, "value_info '%s'", vi->name);
        if ((st = decode_type(L, vi->type, what, &h))) return st;
        apply_hint(&g->tensors[t], &h, PP_T_INITIALIZER | PP_T_CONST | PP_T_GRAPH_INPUT);
    }
    return PERFPRED_OK;
}

static perfpred_status read_nodes(ld *L, const Onnx__GraphProto *gp)
{
    pp_graph *g = L->g;
    perfpred_status st;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np->op_type || !np->op_type[0])
            return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: node #%zu ('%s') has no op_type",
                              L->path, i, np->name ? np->name : "");
        if (np->n_input > INT_MAX / 2 || np->n_output > INT_MAX / 2 ||
            np->n_attribute > INT_MAX / 2 || (size_t)g->n_nodes >= INT_MAX / 2)
            return ld_nomem(L);
        const char *dom = is_default_domain(np->domain) ? "" : np->domain;
        int ni = pp_graph_add_node(g, np->name, np->op_type, dom, (const char *const *)np->input,
                                   (int)np->n_input, (const char *const *)np->output,
                                   (int)np->n_output);
        if (ni < 0) return ld_nomem(L);
        if (dom[0] && !domain_declared(L->m, dom))
            return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                              "%s: node '%s' (%s) uses domain '%s', which opset_import does not "
                              "declare",
                              L->path, g->nodes[ni].name, np->op_type, dom);
        /* one array for all attributes (pp_node_add_attr would copy the array per attribute) */
        g->nodes[ni].attrs =
            pp_arena_array(g->arena, np->n_attribute ? np->n_attribute : 1, sizeof(pp_attr));
        if (!g->nodes[ni].attrs) return ld_nomem(L);
        for (size_t a = 0; a < np->n_attribute; a++)
            if ((st = decode_attr(L, ni, np->attribute[a], a))) return st;
        if (!dom[0] && !strcmp(np->op_type, "Constant") && (st = materialize_constant(L, ni)))
            return st;
    }
    return PERFPRED_OK;
}

static perfpred_status list_io(ld *L)
{
    pp_graph *g = L->g;
    int ni = 0, no = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        uint32_t f = g->tensors[t].flags;
        if ((f & PP_T_GRAPH_INPUT) && !(f & PP_T_WEIGHT)) ni++;
        if (f & PP_T_GRAPH_OUTPUT) no++;
    }
    g->inputs = pp_arena_array(g->arena, (size_t)ni + 1, sizeof(int));
    g->outputs = pp_arena_array(g->arena, (size_t)no + 1, sizeof(int));
    if (!g->inputs || !g->outputs) return ld_nomem(L);
    return PERFPRED_OK;
}

static perfpred_status build_graph(ld *L)
{
    const Onnx__ModelProto *m = L->m;
    pp_graph *g = L->g;
    perfpred_status st;
    if (!m->has_ir_version)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: not a valid ONNX model (no ir_version)",
                          L->path);
    /* IR versions 1..10 exist today; a wild number means this is not an ONNX file. */
    if (m->ir_version < 1 || m->ir_version > 100)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE,
                          "%s: not a valid ONNX model (ir_version %lld)", L->path,
                          (long long)m->ir_version);
    if (!m->graph)
        return pp_err_set(L->err, PERFPRED_ERR_PARSE, "%s: not a valid ONNX model (no graph)",
                          L->path);
    if ((st = read_opsets(L))) return st;
    g->ir_version = m->ir_version;
    g->producer_name = pp_arena_strdup(g->arena, m->producer_name ? m->producer_name : "");
    if (!g->producer_name) return ld_nomem(L);

    const Onnx__GraphProto *gp = m->graph;
    int first_input;
    if ((st = read_initializers(L, gp))) return st;
    if ((st = read_value_infos(L, gp, &first_input))) return st;
    if ((st = read_nodes(L, gp))) return st;
    if ((st = mark_input_weights(L, first_input))) return st;
    if ((st = list_io(L))) return st;
    /* inputs and outputs in file order, not tensor-creation order */
    for (size_t i = 0; i < gp->n_input; i++) {
        int t = pp_graph_find(g, gp->input[i]->name);
        if (!(g->tensors[t].flags & PP_T_WEIGHT)) g->inputs[g->n_inputs++] = t;
    }
    for (size_t i = 0; i < gp->n_output; i++)
        g->outputs[g->n_outputs++] = pp_graph_find(g, gp->output[i]->name);
    if ((st = pp_graph_link(g, L->err))) return st;
    propagate_weights(g);
    return PERFPRED_OK;
}

perfpred_status pp_onnx_load_buffer(const char *path_for_errors, const uint8_t *buf, size_t len,
                                    pp_graph **out, pp_err *err)
{
    const char *path = path_for_errors ? path_for_errors : "<memory>";
    if (!out || (!buf && len))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: pp_onnx_load_buffer: bad arguments",
                          path);
    *out = NULL;
    if (len == 0)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not a valid ONNX model (empty file)", path);
    uint8_t *fbuf;
    size_t flen;
    perfpred_status st = pp_onnx_strip_payloads(path, buf, len, &fbuf, &flen, err);
    if (st) return st;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, flen, fbuf);
    free(fbuf);
    if (!m)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: not a valid ONNX model (protobuf does not decode as a ModelProto: "
                          "a field has the wrong type or is truncated)",
                          path);
    ld L = {.g = pp_graph_new(path), .err = err, .path = path, .m = m};
    if (!L.g) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    } else {
        L.path = L.g->path;
        st = build_graph(&L);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    if (st) {
        pp_graph_free(L.g);
        return st;
    }
    *out = L.g;
    return PERFPRED_OK;
}

perfpred_status pp_onnx_load(const char *path, pp_graph **out, pp_err *err)
{
    if (!path || !out)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_onnx_load: NULL path or output");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: is a directory", path);
    }
    if (!S_ISREG(sb.st_mode)) {   /* a pipe or device: no mmap, read it whole */
        close(fd);
        uint8_t *buf;
        size_t len;
        perfpred_status st = pp_read_file(path, &buf, &len, err);
        if (st) return st;
        st = pp_onnx_load_buffer(path, buf, len, out, err);
        free(buf);
        return st;
    }
    if (sb.st_size == 0) {
        close(fd);
        return pp_onnx_load_buffer(path, NULL, 0, out, err);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: too large to map", path);
    }
    size_t len = (size_t)sb.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot map: %s", path, strerror(e));
    /* Only the graph structure is read; no read-ahead into the weights around it. */
    posix_madvise(map, len, POSIX_MADV_RANDOM);
    perfpred_status st = pp_onnx_load_buffer(path, map, len, out, err);
    munmap(map, len);
    return st;
}
