/* tests/fuzz/harness.c: the libFuzzer harness of one entry of entries.c, chosen at build time
 * (-DPP_FUZZ_ENTRY=pp_fuzz_<name>; CMakeLists.txt builds fuzz_<name> for each). */
#include "tests/fuzz/entries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) { return PP_FUZZ_ENTRY(data, len); }
