/* layer_models/lm_xgb.c: dlopen of XGBoost on first use (lm_xgb.h). The library's name is its
 * SONAME, read from the library CMake found (PP_XGBOOST_SONAME). */
#include "layer_models/lm_xgb.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef PP_XGBOOST_SONAME
#define PP_XGBOOST_SONAME "libxgboost.so.0"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pp_xgb_api api;
static int loaded;
static char why[512];

static void load(void)
{
    /* RTLD_NODELETE: the library stays for the process (its threads and registries outlive us) */
    void *h = dlopen(PP_XGBOOST_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load XGBoost (%s): %s", PP_XGBOOST_SONAME, e ? e : "?");
        return;
    }
#define PP_XGB_LOAD(f)                                                                          \
    if (!(*(void **)(void *)&api.f = dlsym(h, #f))) {                                         \
        snprintf(why, sizeof why, "cannot load XGBoost (%s): no symbol %s", PP_XGBOOST_SONAME, \
                 #f);                                                                         \
        return;                                                                               \
    }
    PP_XGB_FUNCS(PP_XGB_LOAD)
#undef PP_XGB_LOAD
    loaded = 1;
}

const pp_xgb_api *pp_xgb(pp_err *err)
{
    pthread_once(&once, load);
    if (loaded) return &api;
    pp_err_set(err, PERFPRED_ERR_MODEL, "%s", why);
    return NULL;
}
