/* devices/devices_internal.h: what the files of devices/ share and no other module uses: a parsed,
 * not yet resolved descriptor (values plus "was this field written" marks and the file:line:col of
 * every key, so that inheritance, MIG derivation and duplicate checks can name the place). */
#ifndef PP_DEVICES_INTERNAL_H
#define PP_DEVICES_INTERNAL_H

#include "devices/devices.h"

typedef struct pp_dev_pos {
    const char *file;
    int line, col;     /* 1-based */
} pp_dev_pos;

/* Fields that inheritance (`base:`) copies from the parent unless the child writes them. name,
 * aliases, description, mig, artifacts and hostable belong to one descriptor and are never
 * inherited. */
enum {
    PP_F_VENDOR = 0,
    PP_F_KIND,
    PP_F_PEAK,                                   /* PP_F_PEAK + precision */
    PP_F_BW = PP_F_PEAK + PP_PREC__COUNT,
    PP_F_MEM,
    PP_F_CU,
    PP_F_CLOCK,
    PP_F_L2,
    PP_F_IDLE,
    PP_F_MAXP,
    PP_F_FRAMEWORK,
    PP_F_PRECISION,
    PP_F_LAUNCH,
    PP_F_RTMEM,
    PP_F_WORKSPACE,
    PP_F_FUSION,
    PP_F_COMPOSITE,
    PP_F_CC,
    PP_F_HOSTSCALE,
    PP_F_HOSTSRC,
    PP_F_MEMTYPE,
    PP_F_GEMM,
    PP_F_CONVCALL,
    PP_F_FP16ACC16,
    PP_F_STREAM,
    PP_F__COUNT
};

typedef struct pp_dev_mig_src {
    const char *name;          /* "3g.20gb" */
    int g, m;
    double memory_gb;          /* 0 = derive from the parent: memory_gb * m / total_memory */
    int compute_units;
    pp_dev_pos at;
} pp_dev_mig_src;

typedef struct pp_dev_src {
    pp_device d;                        /* values as written; a field counts only if set[] says so */
    unsigned char set[PP_F__COUNT];
    unsigned char rset[PP_F__COUNT];    /* set here or anywhere up the base chain */
    pp_dev_pos at;                      /* the descriptor's mapping */
    pp_dev_pos name_at, base_at, description_at, calibration_from_at;
    pp_dev_pos alias_at[PP_DEV_MAX_ALIASES];
    pp_dev_pos field_at[PP_F__COUNT];
    int has_description;

    /* mig: (a parent GPU's profile table) */
    int has_mig;
    pp_dev_pos mig_at;
    int mig_total_compute, mig_total_memory;
    pp_dev_mig_src *profiles;
    int n_profiles;

    /* mig_instance: (one resolved slice, as pp_device_to_yaml writes it) */
    int has_mig_instance;
    pp_dev_pos mig_instance_at;
    const char *mig_parent;

    /* filled while resolving */
    int state;                          /* 0 new, 1 resolving, 2 resolved */
    pp_device *resolved;
} pp_dev_src;

/* Parses every YAML document of path into *srcs (grown in the arena; *n and *cap updated).
 * Strings and positions live in a. Errors: PERFPRED_ERR_IO, _PARSE (YAML syntax), _DEVICE (schema). */
perfpred_status pp_dev_parse_file(const char *path, pp_arena *a, pp_dev_src **srcs, int *n,
                                  int *cap, pp_err *err);

/* Checks src's profile table against its resolved parent and writes the derived slices into out
 * (n_profiles devices, parent pointer and generated aliases set). Sets parent->mig_profiles. */
perfpred_status pp_dev_mig_derive(pp_arena *a, const pp_dev_src *src, pp_device *parent,
                                  pp_device *out, pp_err *err);

/* Calls add(key, dev, at, user) for every short name of a derived MIG slice (its canonical name is
 * not included): "<parent alias>-mig-<profile>" for each alias of the parent, and
 * "<parent name or alias>-mig-<g>g" for the profile with the fewest memory slices among those with
 * g compute slices. Also fills each slice's aliases[] with the first PP_DEV_MAX_ALIASES of them
 * (the "-mig-<g>g" forms first). Stops at the first non-OK status. */
typedef perfpred_status (*pp_dev_alias_fn)(const char *key, const pp_device *dev, pp_dev_pos at,
                                           void *user);
perfpred_status pp_dev_mig_aliases(pp_arena *a, const pp_dev_src *src, const pp_device *parent,
                                   pp_device *slices, pp_dev_alias_fn add, void *user);

/* "file:line:col: " + message, into err with the given status. */
perfpred_status pp_dev_err_at(pp_err *err, perfpred_status st, pp_dev_pos at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));


#endif
