/* tests/test_fuzz_replay.c: replays every committed fuzz input (tests/fuzz/corpus/<name>/ seeds
 * and tests/fuzz/regressions/<name>/ crashes found once) through the same entry the libFuzzer
 * harness calls, so that a fixed crash stays fixed in the normal suite, sanitizers included. */
#include "tests/helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/entries.h"
#include "util/util.h"

static int replay_dir(const pp_fuzz_entry *e, const char *kind)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", PP_SOURCE_DIR, kind, e->name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        uint8_t *b;
        size_t len;
        assert_int_equal(pp_read_file(p, &b, &len, NULL), PERFPRED_OK);
        assert_int_equal(e->fn(b, len), 0);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

/* Every harness has a seed corpus, and every input in it and in its regressions replays cleanly
 * (a crash aborts this executable; ASan and UBSan see the same paths in the sanitized suite). */
static void fuzz_inputs_should_replay_without_crashing(void **state)
{
    int seeds = 0, regressions = 0;
    for (const pp_fuzz_entry *e = pp_fuzz_entries; e->name; e++) {
        int n = replay_dir(e, "corpus");
        if (n == 0) fail_msg("tests/fuzz/corpus/%s has no seed", e->name);
        seeds += n;
        regressions += replay_dir(e, "regressions");
    }
    print_message("replayed %d seeds and %d regression inputs\n", seeds, regressions);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_inputs_should_replay_without_crashing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
