/* layer_models/lm_xgb.h (internal to layer_models/): XGBoost's C API, loaded by dlopen the first
 * time a regressor must be read, trained or asked through XGBoost. Loading libxgboost (its C++
 * static registries, relocations, OpenMP) costs ~15 ms, a third of a cold start, and a warm start
 * reads every regressor from the flat-tree cache without it. */
#ifndef PP_LM_XGB_H
#define PP_LM_XGB_H

#include <xgboost/c_api.h>

#include "util/util.h"

#define PP_XGB_FUNCS(X)                                                                       \
    X(XGBGetLastError) X(XGBSetGlobalConfig) X(XGBRegisterLogCallback) X(XGBoosterCreate)     \
    X(XGBoosterFree) X(XGBoosterGetNumFeature) X(XGBoosterLoadModelFromBuffer)               \
    X(XGBoosterPredict) X(XGBoosterSaveModelToBuffer) X(XGBoosterSetParam)                    \
    X(XGBoosterUpdateOneIter) X(XGDMatrixCreateFromMat) X(XGDMatrixFree) X(XGDMatrixSetFloatInfo)

typedef struct pp_xgb_api {
#define PP_XGB_FIELD(f) __typeof__(f) *f;
    PP_XGB_FUNCS(PP_XGB_FIELD)
#undef PP_XGB_FIELD
} pp_xgb_api;

/* The API, loaded once (thread-safe); NULL with err set (PERFPRED_ERR_MODEL, naming the library
 * and dlerror's text) when the library or a symbol is missing, then and on every later call. */
const pp_xgb_api *pp_xgb(pp_err *err);

#endif
