/* tests/fuzz/entries.h: the fuzz entries (entries.c), one per reader of outside files; each takes
 * any bytes and returns 0. pp_fuzz_entries lists them by name, NULL-terminated. */
#ifndef PP_FUZZ_ENTRIES_H
#define PP_FUZZ_ENTRIES_H
#include <stddef.h>
#include <stdint.h>

typedef struct pp_fuzz_entry {
    const char *name;  /* also the harness name (fuzz_<name>) and its corpus folder */
    int (*fn)(const uint8_t *data, size_t len);
} pp_fuzz_entry;
extern const pp_fuzz_entry pp_fuzz_entries[];

int pp_fuzz_onnx(const uint8_t *data, size_t len);
int pp_fuzz_yaml(const uint8_t *data, size_t len);
int pp_fuzz_layer_csv(const uint8_t *data, size_t len);
int pp_fuzz_net_csv(const uint8_t *data, size_t len);
int pp_fuzz_gnn_weights(const uint8_t *data, size_t len);
int pp_fuzz_gnn_manifest(const uint8_t *data, size_t len);
int pp_fuzz_overhead(const uint8_t *data, size_t len);
int pp_fuzz_lm_set(const uint8_t *data, size_t len);
int pp_fuzz_lm_cache(const uint8_t *data, size_t len);
int pp_fuzz_deepbench(const uint8_t *data, size_t len);
int pp_fuzz_mobile(const uint8_t *data, size_t len);
int pp_fuzz_neusight(const uint8_t *data, size_t len);
int pp_fuzz_gpu_artifacts(const uint8_t *data, size_t len);
int pp_fuzz_power_sweep(const uint8_t *data, size_t len);
int pp_fuzz_intervals(const uint8_t *data, size_t len);
#endif
