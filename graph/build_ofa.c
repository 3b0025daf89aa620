/* graph/build_ofa.c: once-for-all MobileNetV3 subnets (ofa_mbv3_d234_e346_k357_w1.2, the supernet
 * HELP's OFA latencies come from) from their kernel sizes, expand ratios, stage depths and input
 * resolution, as get_active_subnet() of OFA's OFAMobileNetV3 constructs them. */
#include "graph/builders.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* OFA's make_divisible(v, 8): round to the nearest multiple of 8, never below 8 or 0.9 v. */
static int64_t make_divisible(double v)
{
    int64_t nv = (int64_t)(v + 4.0) / 8 * 8;
    if (nv < 8) nv = 8;
    if ((double)nv < 0.9 * v) nv += 8;
    return nv;
}

/* Reads a list of n integers separated by ',' or ' ' from s[0..len). */
static int parse_list(const char *s, size_t len, int *out, int n)
{
    char buf[256];
    if (len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    int k = 0;
    char *p = buf;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t l = strcspn(p, ", ");
        char tok[16];
        int64_t v;
        if (l == 0 || l >= sizeof tok || k == n) return -1;
        memcpy(tok, p, l);
        tok[l] = '\0';
        if (pp_parse_i64(tok, &v) != 0 || v < 0 || v > 100000) return -1;
        out[k++] = (int)v;
        p += l;
        if (*p == ',') {
            p++;
            if (!*p) return -1;
        }
    }
    return k == n ? 0 : -1;
}

static int in_set(int v, const int *set, int n)
{
    for (int i = 0; i < n; i++)
        if (v == set[i]) return 1;
    return 0;
}

perfpred_status pp_ofa_parse(const char *s, pp_ofa_arch *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "ofa: NULL architecture");
    int seen[4] = {0, 0, 0, 0};
    const char *p = s;
    while (*p) {
        size_t len = strcspn(p, ";");
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': field '%.*s' has no '='", s,
                              (int)len, p);
        size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
        int key = -1, r[1];
        static const char *const keys[4] = {"ks", "e", "d", "r"};
        for (int k = 0; k < 4; k++)
            if (klen == strlen(keys[k]) && strncmp(p, keys[k], klen) == 0) key = k;
        if (key < 0)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': unknown field '%.*s' (ks, e, d, r)",
                              s, (int)klen, p);
        if (seen[key]++)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': field '%s' given twice", s,
                              keys[key]);
        int bad = key == 0   ? parse_list(eq + 1, vlen, out->ks, PP_OFA_BLOCKS)
                  : key == 1 ? parse_list(eq + 1, vlen, out->e, PP_OFA_BLOCKS)
                  : key == 2 ? parse_list(eq + 1, vlen, out->d, PP_OFA_STAGES)
                             : parse_list(eq + 1, vlen, r, 1);
        if (bad)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': field '%s' needs %d integers", s,
                              keys[key], key == 0 || key == 1 ? PP_OFA_BLOCKS
                                         : key == 2          ? PP_OFA_STAGES
                                                             : 1);
        if (key == 3) out->r = r[0];
        p += len;
        if (*p == ';') p++;
    }
    for (int k = 0; k < 4; k++)
        if (!seen[k])
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': missing field '%s'", s,
                              k == 0 ? "ks" : k == 1 ? "e" : k == 2 ? "d" : "r");
    static const int ks_ok[3] = {3, 5, 7}, e_ok[3] = {3, 4, 6}, d_ok[3] = {2, 3, 4};
    for (int i = 0; i < PP_OFA_BLOCKS; i++) {
        if (!in_set(out->ks[i], ks_ok, 3))
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': ks[%d] = %d is not 3, 5 or 7", s,
                              i, out->ks[i]);
        if (!in_set(out->e[i], e_ok, 3))
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': e[%d] = %d is not 3, 4 or 6", s, i,
                              out->e[i]);
    }
    for (int i = 0; i < PP_OFA_STAGES; i++)
        if (!in_set(out->d[i], d_ok, 3))
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': d[%d] = %d is not 2, 3 or 4", s,
                              i, out->d[i]);
    if (out->r < 32 || out->r > 1024)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "ofa '%s': resolution %d is outside 32..1024", s,
                          out->r);
    return PERFPRED_OK;
}

/* relu6(y) as torch.onnx (opset >= 11) writes it: Relu, then Clip(0, 6). */
static int relu6(pp_bld *b, int y)
{
    int in[3] = {pp_bld_unary(b, "Relu", y), -1, -1};
    in[1] = pp_bld_scalar(b, 0.0);
    in[2] = pp_bld_scalar(b, 6.0);
    return pp_bld_node(b, "Clip", in, 3);
}

/* relu6(x + 3) / 6, as OFA's Hsigmoid writes it (Add, relu6, Div). */
static int hsigmoid(pp_bld *b, int x)
{
    int c = relu6(b, pp_bld_binary(b, "Add", x, pp_bld_scalar(b, 3.0)));
    return pp_bld_binary(b, "Div", c, pp_bld_scalar(b, 6.0));
}

/* x * relu6(x + 3) / 6 (OFA's Hswish: Add, relu6, Mul, Div). */
static int hswish(pp_bld *b, int x)
{
    int c = relu6(b, pp_bld_binary(b, "Add", x, pp_bld_scalar(b, 3.0)));
    return pp_bld_binary(b, "Div", pp_bld_binary(b, "Mul", x, c), pp_bld_scalar(b, 6.0));
}

static int act(pp_bld *b, int x, int hs) { return hs ? hswish(b, x) : pp_bld_unary(b, "Relu", x); }

static int reduce_mean(pp_bld *b, int x, int64_t axis)
{
    int y = pp_bld_unary(b, "ReduceMean", x);
    if (b->st) return -1;
    /* each add may move the node's attribute array: fill one before adding the next */
    int64_t *v = pp_arena_array(b->g->arena, 1, sizeof(int64_t));
    pp_attr *a = v ? pp_node_add_attr(b->g, b->g->n_nodes - 1, "axes", PP_ATTR_INTS) : NULL;
    if (a) {
        v[0] = axis;
        a->ints = v;
        a->n = 1;
        a = pp_node_add_attr(b->g, b->g->n_nodes - 1, "keepdims", PP_ATTR_INT);
        if (a) a->i = 1;
    }
    if (!a) {
        b->st = pp_err_set(b->err, PERFPRED_ERR_NOMEM, "%s: out of memory", b->g->path);
        return -1;
    }
    return y;
}

/* x.mean(3, keepdim=True).mean(2, keepdim=True) */
static int spatial_mean(pp_bld *b, int x) { return reduce_mean(b, reduce_mean(b, x, 3), 2); }

/* SEModule(channel): mean, Conv1x1 to make_divisible(C // 4) with bias, ReLU, Conv1x1 back with
 * bias, h-sigmoid, x * y. */
static int squeeze_excite(pp_bld *b, int x, int64_t c)
{
    int64_t mid = make_divisible((double)(c / 4));
    int y = spatial_mean(b, x);
    y = pp_bld_unary(b, "Relu", pp_bld_conv(b, y, c, mid, 1, 1, 0, 1, 1));
    y = hsigmoid(b, pp_bld_conv(b, y, mid, c, 1, 1, 0, 1, 1));
    return pp_bld_binary(b, "Mul", x, y);
}

/* MBConvLayer: [Conv1x1-BN-act to mid], depthwise KxK-BN-act, [SE], Conv1x1-BN. mid = 0: no
 * inverted bottleneck (expand ratio 1). */
static int mbconv(pp_bld *b, int x, int64_t cin, int64_t cout, int k, int stride, int64_t mid,
                  int hs, int se)
{
    int y = x;
    if (mid > 0) {
        y = act(b, pp_bld_bn(b, pp_bld_conv(b, y, cin, mid, 1, 1, 0, 1, 0), mid), hs);
    } else {
        mid = cin;
    }
    y = act(b, pp_bld_bn(b, pp_bld_conv(b, y, mid, mid, k, stride, k / 2, mid, 0), mid), hs);
    if (se) y = squeeze_excite(b, y, mid);
    return pp_bld_bn(b, pp_bld_conv(b, y, mid, cout, 1, 1, 0, 1, 0), cout);
}

perfpred_status pp_build_ofa(const pp_ofa_arch *a, int64_t batch, pp_node_memo *memo, pp_graph **out,
                             pp_err *err)
{
    *out = NULL;
    if (!a) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "ofa: NULL architecture");
    char path[256];
    size_t off = (size_t)snprintf(path, sizeof path, "ofa:ks=");
    for (int i = 0; i < PP_OFA_BLOCKS; i++)
        off += (size_t)snprintf(path + off, sizeof path - off, "%s%d", i ? "," : "", a->ks[i]);
    off += (size_t)snprintf(path + off, sizeof path - off, ";e=");
    for (int i = 0; i < PP_OFA_BLOCKS; i++)
        off += (size_t)snprintf(path + off, sizeof path - off, "%s%d", i ? "," : "", a->e[i]);
    off += (size_t)snprintf(path + off, sizeof path - off, ";d=");
    for (int i = 0; i < PP_OFA_STAGES; i++)
        off += (size_t)snprintf(path + off, sizeof path - off, "%s%d", i ? "," : "", a->d[i]);
    snprintf(path + off, sizeof path - off, ";r=%d", a->r);
    for (int i = 0; i < PP_OFA_BLOCKS; i++)
        if ((a->ks[i] != 3 && a->ks[i] != 5 && a->ks[i] != 7) || a->e[i] < 1 || a->e[i] > 8)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: bad block %d", path, i);
    for (int i = 0; i < PP_OFA_STAGES; i++)
        if (a->d[i] < 1 || a->d[i] > 4)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: bad depth %d", path, a->d[i]);
    if (a->r < 32 || a->r > 1024 || batch < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: bad resolution or batch", path);

    /* width multiplier 1.2 on base widths 16,16,24,40,80,112,160 | 960 | 1280 */
    static const double base[9] = {16, 16, 24, 40, 80, 112, 160, 960, 1280};
    static const int strides[6] = {1, 2, 2, 2, 1, 2};
    static const int hs[6] = {0, 0, 0, 1, 1, 1}, se[6] = {0, 0, 1, 0, 1, 1};
    int64_t width[7];
    for (int i = 0; i < 7; i++) width[i] = make_divisible(base[i] * 1.2);
    int64_t final_expand = make_divisible(base[7] * 1.2), last = make_divisible(base[8] * 1.2);

    pp_bld b;
    int x = pp_bld_begin(&b, path, batch, 3, a->r, a->r, err);
    b.memo = memo;
    b.scope = "first_conv";
    x = hswish(&b, pp_bld_bn(&b, pp_bld_conv(&b, x, 3, width[0], 3, 2, 1, 1, 0), width[0]));
    b.scope = "blocks.0";
    int y = mbconv(&b, x, width[0], width[1], 3, strides[0], 0, hs[0], se[0]);
    x = width[0] == width[1] ? pp_bld_binary(&b, "Add", y, x) : y;
    int64_t feat = width[1];
    char scope[32];
    int block = 1;
    for (int s = 0; s < PP_OFA_STAGES; s++) {
        int64_t w = width[s + 2];
        for (int i = 0; i < a->d[s]; i++, block++) {
            int j = s * 4 + i, stride = i == 0 ? strides[s + 1] : 1;
            /* DynamicMBConvLayer.active_middle_channel: make_divisible(round(C_in * e)) */
            int64_t mid = make_divisible((double)(feat * a->e[j]));
            snprintf(scope, sizeof scope, "blocks.%d", block);
            b.scope = scope;
            y = mbconv(&b, x, feat, w, a->ks[j], stride, mid, hs[s + 1], se[s + 1]);
            x = (stride == 1 && feat == w) ? pp_bld_binary(&b, "Add", y, x) : y;
            feat = w;
        }
    }
    b.scope = "head";
    x = hswish(&b, pp_bld_bn(&b, pp_bld_conv(&b, x, feat, final_expand, 1, 1, 0, 1, 0), final_expand));
    x = spatial_mean(&b, x);
    x = hswish(&b, pp_bld_conv(&b, x, final_expand, last, 1, 1, 0, 1, 0));
    x = pp_bld_unary(&b, "Flatten", x);
    x = pp_bld_gemm(&b, x, last, 1000);
    return pp_bld_finish(&b, x, out);
}
