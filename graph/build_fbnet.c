/* graph/build_fbnet.c: FBNet networks from the 22 block choices HELP and HW-NAS-Bench encode
 * (FBNet_Infer of HW-NAS-Bench's hw_nas_bench_api/fbnet_models/model_infer.py): a ConvNorm stem,
 * seven stages of ConvBlock / Skip layers, a 1x1 ConvNorm header, global pooling and a classifier. */
#include "graph/builders.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const block_names[PP_FBNET_N_BLOCKS] = {
    "k3_e1", "k3_e1_g2", "k3_e3", "k3_e6", "k5_e1", "k5_e1_g2", "k5_e3", "k5_e6", "skip"};
/* kernel, expansion, groups of blocks 0..7 (8 is skip) */
static const int block_k[8] = {3, 3, 3, 3, 5, 5, 5, 5};
static const int block_e[8] = {1, 1, 3, 6, 1, 1, 3, 6};
static const int block_g[8] = {1, 2, 1, 1, 1, 2, 1, 1};

perfpred_status pp_fbnet_parse(const char *s, pp_fbnet_arch *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "fbnet: NULL architecture");
    const char *p = s;
    int n = 0;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t len = strcspn(p, ", ");
        if (n == PP_FBNET_LAYERS)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "fbnet '%s': more than %d blocks", s,
                              PP_FBNET_LAYERS);
        char tok[16];
        if (len == 0 || len >= sizeof tok)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "fbnet '%s': empty or overlong block %d", s,
                              n + 1);
        memcpy(tok, p, len);
        tok[len] = '\0';
        int op = -1;
        if (len == 1 && isdigit((unsigned char)tok[0]) && tok[0] - '0' < PP_FBNET_N_BLOCKS) {
            op = tok[0] - '0';
        } else {
            for (int k = 0; k < PP_FBNET_N_BLOCKS; k++)
                if (strcmp(tok, block_names[k]) == 0) op = k;
        }
        if (op < 0)
            return pp_err_set(err, PERFPRED_ERR_PARSE,
                              "fbnet '%s': block %d '%s' is neither an index 0..8 nor a block "
                              "name (k3_e1, k3_e1_g2, k3_e3, k3_e6, k5_e1, k5_e1_g2, k5_e3, k5_e6, "
                              "skip)",
                              s, n + 1, tok);
        out->op[n++] = op;
        p += len;
        if (*p == ',') {
            p++;
            if (!*p)
                return pp_err_set(err, PERFPRED_ERR_PARSE, "fbnet '%s': trailing ','", s);
        }
    }
    if (n != PP_FBNET_LAYERS)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "fbnet '%s': %d blocks, expected %d", s, n,
                          PP_FBNET_LAYERS);
    return PERFPRED_OK;
}

/* padding = ceil((k - stride) / 2): "assume h_out = h_in / s" in model_infer.py */
static int fb_pad(int k, int stride) { return (k - stride + 1) / 2; }

static int conv_norm(pp_bld *b, int x, int64_t cin, int64_t cout, int k, int stride, int pad)
{
    int c = pp_bld_conv(b, x, cin, cout, k, stride, pad, 1, 0);
    return pp_bld_unary(b, "Relu", pp_bld_bn(b, c, cout));
}

/* ChannelShuffle: view(N, g, C/g, H, W) -> permute(0, 2, 1, 3, 4) -> view(N, C, H, W). */
static int shuffle(pp_bld *b, int x, int64_t n, int64_t c, int64_t h, int64_t w, int g)
{
    int64_t s5[5] = {n, g, c / g, h, w}, s4[4] = {n, c, h, w}, perm[5] = {0, 2, 1, 3, 4};
    int r = pp_bld_binary(b, "Reshape", x, pp_bld_ints(b, 5, s5));
    int t = pp_bld_unary(b, "Transpose", r);
    if (!b->st) {
        pp_attr *a = pp_node_add_attr(b->g, b->g->n_nodes - 1, "perm", PP_ATTR_INTS);
        int64_t *v = pp_arena_array(b->g->arena, 5, sizeof(int64_t));
        if (!a || !v) {
            b->st = pp_err_set(b->err, PERFPRED_ERR_NOMEM, "%s: out of memory", b->g->path);
            return -1;
        }
        memcpy(v, perm, sizeof perm);
        a->ints = v;
        a->n = 5;
    }
    return pp_bld_binary(b, "Reshape", t, pp_bld_ints(b, 4, s4));
}

/* ConvBlock(C_in, C_out, expansion, kernel, stride, groups) at spatial size h x w (input). */
static int conv_block(pp_bld *b, int x, int64_t n, int64_t cin, int64_t cout, int op, int stride,
                      int64_t h, int64_t w)
{
    int k = block_k[op], g = block_g[op];
    int64_t mid = cin * block_e[op];
    int y = pp_bld_conv(b, x, cin, mid, 1, 1, 0, g, 0);
    y = pp_bld_unary(b, "Relu", pp_bld_bn(b, y, mid));
    if (g > 1) y = shuffle(b, y, n, mid, h, w, g);
    y = pp_bld_conv(b, y, mid, mid, k, stride, fb_pad(k, stride), mid, 0);
    y = pp_bld_unary(b, "Relu", pp_bld_bn(b, y, mid));
    y = pp_bld_bn(b, pp_bld_conv(b, y, mid, cout, 1, 1, 0, g, 0), cout);
    if (cin == cout && stride == 1) y = pp_bld_binary(b, "Add", y, x);
    return y;
}

perfpred_status pp_build_fbnet(const pp_fbnet_arch *a, int imagenet, int64_t batch,
                               pp_node_memo *memo, pp_graph **out, pp_err *err)
{
    *out = NULL;
    if (!a) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "fbnet: NULL architecture");
    char path[128];
    size_t off = (size_t)snprintf(path, sizeof path, "fbnet:");
    for (int i = 0; i < PP_FBNET_LAYERS; i++) {
        if (a->op[i] < 0 || a->op[i] >= PP_FBNET_N_BLOCKS)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "fbnet: layer %d has block %d", i,
                              a->op[i]);
        off += (size_t)snprintf(path + off, sizeof path - off, "%s%d", i ? "," : "", a->op[i]);
    }
    if (imagenet) snprintf(path + off, sizeof path - off, "@imagenet");
    if (batch < 1) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: batch %lld", path,
                                     (long long)batch);
    static const int n_layers[7] = {1, 4, 4, 4, 4, 4, 1};
    static const int64_t chans[7] = {16, 24, 32, 64, 112, 184, 352};
    static const int strides_cifar[7] = {1, 1, 2, 2, 1, 2, 1}, strides_in[7] = {1, 2, 2, 2, 1, 2, 1};
    const int *strides = imagenet ? strides_in : strides_cifar;
    int64_t hw = imagenet ? 224 : 32, header = imagenet ? 1984 : 1504, classes = imagenet ? 1000 : 100;
    int stem_stride = imagenet ? 2 : 1;

    pp_bld b;
    int x = pp_bld_begin(&b, path, batch, 3, hw, hw, err);
    b.memo = memo;
    b.scope = "stem";
    x = conv_norm(&b, x, 3, 16, 3, stem_stride, 1);
    hw = (hw + 2 - 3) / stem_stride + 1;
    int64_t cprev = 16;
    int layer = 0;
    char scope[32];
    for (int s = 0; s < 7; s++) {
        for (int i = 0; i < n_layers[s]; i++, layer++) {
            int stride = i == 0 ? strides[s] : 1, op = a->op[layer];
            snprintf(scope, sizeof scope, "cells.%d", layer);
            b.scope = scope;
            if (op == 8) {
                if (stride == 2 || cprev != chans[s]) x = conv_norm(&b, x, cprev, chans[s], 1, stride, 0);
            } else {
                x = conv_block(&b, x, batch, cprev, chans[s], op, stride, hw, hw);
            }
            if (stride == 2) hw = (hw + 2 * fb_pad(3, 2) - 3) / 2 + 1; /* k3 and k5 both halve */
            cprev = chans[s];
        }
    }
    b.scope = "head";
    x = conv_norm(&b, x, 352, header, 1, 1, 0);
    x = pp_bld_unary(&b, "GlobalAveragePool", x);
    x = pp_bld_unary(&b, "Flatten", x);
    x = pp_bld_gemm(&b, x, header, classes);
    return pp_bld_finish(&b, x, out);
}
