/* graph/build_ref.c: a model ref resolved to an analysed graph: a NAS encoding built by the
 * builders of this folder, or an .onnx file loaded; and the held-out family of a ref. Shared by the
 * prediction path (perfpred_predict_many) and the calibration of whole networks. */
#include "graph/builders.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int ends_with_onnx(const char *s)
{
    size_t n = strlen(s);
    if (n < 5) return 0;
    const char *e = s + n - 5;
    return e[0] == '.' && tolower((unsigned char)e[1]) == 'o' &&
           tolower((unsigned char)e[2]) == 'n' && tolower((unsigned char)e[3]) == 'n' &&
           tolower((unsigned char)e[4]) == 'x';
}

int pp_net_ref_is_builtin(const char *ref)
{
    return ref && (has_prefix(ref, "nb201:") || has_prefix(ref, "fbnet:") || has_prefix(ref, "ofa:"));
}

/* Splits "body@suffix;opt" of an nb201/fbnet ref (after the prefix) into its parts. */
typedef struct ref_parts {
    char body[512];
    char dataset[32];
    pp_nb201_mode mode;
} ref_parts;

static perfpred_status split_ref(const char *ref, const char *rest, int allow_fold, ref_parts *p,
                                 pp_err *err)
{
    memset(p, 0, sizeof p[0]);
    size_t blen = strcspn(rest, "@;");
    if (blen >= sizeof p->body)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "ref '%s': architecture too long", ref);
    memcpy(p->body, rest, blen);
    const char *q = rest + blen;
    if (*q == '@') {
        q++;
        size_t dlen = strcspn(q, ";");
        if (dlen == 0 || dlen >= sizeof p->dataset)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ref '%s': bad dataset after '@'", ref);
        memcpy(p->dataset, q, dlen);
        q += dlen;
    }
    while (*q == ';') {
        q++;
        size_t olen = strcspn(q, ";");
        if (allow_fold && olen == 4 && strncmp(q, "fold", 4) == 0 && !p->mode) {
            p->mode = PP_NB201_FOLD;
        } else if (allow_fold && olen == 5 && strncmp(q, "prune", 5) == 0 && !p->mode) {
            p->mode = PP_NB201_PRUNE;
        } else {
            return pp_err_set(err, PERFPRED_ERR_PARSE, "ref '%s': unknown or repeated option '%.*s'%s",
                              ref, (int)olen, q, allow_fold ? " (known: fold or prune)" : "");
        }
        q += olen;
    }
    if (*q) return pp_err_set(err, PERFPRED_ERR_PARSE, "ref '%s': trailing text '%s'", ref, q);
    return PERFPRED_OK;
}

perfpred_status pp_net_graph_from_ref(const char *ref, const pp_shape_opts *opts, pp_graph **out,
                                      pp_err *err)
{
    if (!out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "ref: NULL out");
    *out = NULL;
    if (!ref || !*ref) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "ref: empty model ref");
    pp_shape_opts none = {0};
    if (!opts) opts = &none;
    int64_t batch = opts->batch > 0 ? opts->batch : 1;
    if (pp_net_ref_is_builtin(ref) && opts->n_inputs > 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "ref '%s': input overrides apply to .onnx files; a search-space network "
                          "takes its input from the dataset suffix",
                          ref);
    ref_parts p;
    perfpred_status st;
    if (has_prefix(ref, "nb201:")) {
        if ((st = split_ref(ref, ref + 6, 1, &p, err))) return st;
        pp_nb201_arch a;
        if ((st = pp_nb201_parse(p.body, &a, err))) return st;
        pp_nb201_opts o = pp_nb201_default_opts();
        if (p.dataset[0] && (st = pp_nb201_dataset(p.dataset, &o, err))) return st;
        o.batch = batch;
        o.mode = p.mode;
        o.memo = opts->memo;
        return pp_build_nb201(&a, &o, out, err);
    }
    if (has_prefix(ref, "fbnet:")) {
        if ((st = split_ref(ref, ref + 6, 0, &p, err))) return st;
        int imagenet = 0;
        if (p.dataset[0] && strcmp(p.dataset, "cifar100") != 0) {
            if (strcmp(p.dataset, "imagenet") != 0)
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "ref '%s': FBNet dataset '%s' (cifar100 or imagenet)", ref,
                                  p.dataset);
            imagenet = 1;
        }
        pp_fbnet_arch a;
        if ((st = pp_fbnet_parse(p.body, &a, err))) return st;
        return pp_build_fbnet(&a, imagenet, batch, opts->memo, out, err);
    }
    if (has_prefix(ref, "ofa:")) {
        pp_ofa_arch a;
        if ((st = pp_ofa_parse(ref + 4, &a, err))) return st;
        return pp_build_ofa(&a, batch, opts->memo, out, err);
    }
    if (ends_with_onnx(ref)) return pp_graph_load_full(ref, opts, out, err);
    return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                      "ref '%s' is neither nb201:, fbnet:, ofa: nor a path to an .onnx file", ref);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int pp_net_ref_family(const char *ref, char *out, size_t n)
{
    if (!ref || !out || n == 0) return -1;
    pp_err e;
    ref_parts p;
    char canon[512];
    const char *space;
    if (has_prefix(ref, "nb201:")) {
        pp_nb201_arch a;
        if (split_ref(ref, ref + 6, 1, &p, &e) || pp_nb201_parse(p.body, &a, &e)) return -1;
        pp_nb201_format(&a, canon, sizeof canon);
        space = "nb201";
    } else if (has_prefix(ref, "fbnet:")) {
        pp_fbnet_arch a;
        if (split_ref(ref, ref + 6, 0, &p, &e) || pp_fbnet_parse(p.body, &a, &e)) return -1;
        size_t off = 0;
        for (int i = 0; i < PP_FBNET_LAYERS; i++)
            off += (size_t)snprintf(canon + off, sizeof canon - off, "%d,", a.op[i]);
        space = "fbnet";
    } else if (has_prefix(ref, "ofa:")) {
        pp_ofa_arch a;
        if (pp_ofa_parse(ref + 4, &a, &e)) return -1;
        /* the blocks a subnet uses, and its resolution: unused ks/e entries do not matter */
        size_t off = 0;
        for (int s = 0; s < PP_OFA_STAGES; s++)
            for (int i = 0; i < a.d[s]; i++)
                off += (size_t)snprintf(canon + off, sizeof canon - off, "%d.%d,", a.ks[s * 4 + i],
                                        a.e[s * 4 + i]);
        snprintf(canon + off, sizeof canon - off, "r%d", a.r);
        space = "ofa";
    } else {
        const char *base = strrchr(ref, '/');
        base = base ? base + 1 : ref;
        size_t len = strlen(base);
        if (ends_with_onnx(base)) len -= 5;
        if (len == 0 || len >= n) return -1;
        memcpy(out, base, len);
        out[len] = '\0';
        return 0;
    }
    if (snprintf(out, n, "%s-h%02d", space, (int)(fnv1a64(canon) % 100)) >= (int)n) return -1;
    return 0;
}
