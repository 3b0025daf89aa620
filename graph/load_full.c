/* graph/load_full.c: the one call every front end uses to turn an ONNX file into an analysed
 * graph: parse and link, infer shapes (with batch and input overrides), features, liveness. */
#include "graph/graph.h"

perfpred_status pp_graph_load_full(const char *path, const pp_shape_opts *opts, pp_graph **out,
                                   pp_err *err)
{
    if (!out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_graph_load_full: NULL out");
    *out = NULL;
    if (!path) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_graph_load_full: NULL path");
    pp_shape_opts none = {0};
    pp_graph *g = NULL;
    perfpred_status st = pp_onnx_load(path, &g, err);
    if (st) {
        pp_graph_free(g); /* the loader frees on failure; NULL is a no-op either way */
        return st;
    }
    if ((st = pp_graph_infer_shapes(g, opts ? opts : &none, err)) ||
        (st = pp_graph_features(g, err)) || (st = pp_graph_liveness(g, err))) {
        pp_graph_free(g);
        return st;
    }
    *out = g;
    return PERFPRED_OK;
}
