/* tests/test_artifact_data.c: every file of data/ that a shipped artifact says it was trained or
 * judged on exists in the tree (data/README.md): any "path" or "data" string of the JSON files
 * under configs/artifacts/ that names a data/ file (a manifest's sources[].path, an artifact's
 * provenance line). Upstream files (NeuSight's, read from ../shared/datasets) are not the tree's
 * and are not checked here. */
#include "tests/helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

typedef struct found {
    int named, missing;
    char msg[4096];
} found;

/* A string that names a data/ file: its first word ("data/x/y.csv rows of ..."). */
static void check_ref(const char *root, const char *artifact, const char *s, found *f)
{
    if (!s || strncmp(s, "data/", 5) != 0) return;
    char rel[1024], path[2048];
    size_t n = strcspn(s, " \t,;");
    if (n >= sizeof rel) n = sizeof rel - 1;
    memcpy(rel, s, n);
    rel[n] = '\0';
    f->named++;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    if (access(path, R_OK) == 0) return;
    f->missing++;
    size_t rl = strlen(root);
    if (!strncmp(artifact, root, rl) && artifact[rl] == '/') artifact += rl + 1;
    size_t l = strlen(f->msg);
    snprintf(f->msg + l, sizeof f->msg - l, "%s names %s, which is not there\n", artifact, rel);
}

/* Every "path" and "data" string of the document, at any depth (a manifest's sources[].path, an
 * artifact's "data" provenance, an entry's own "data"). */
static void check_item(const char *root, const char *artifact, const cJSON *it, found *f)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, it)
    {
        if (cJSON_IsString(c) && c->string &&
            (!strcmp(c->string, "path") || !strcmp(c->string, "data")))
            check_ref(root, artifact, c->valuestring, f);
        else if (cJSON_IsObject(c) || cJSON_IsArray(c))
            check_item(root, artifact, c, f);
    }
}

static void check_json(const char *root, const char *path, found *f)
{
    char *text = pp_test_read_text(path);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) fail_msg("%s: not JSON", path);
    check_item(root, path, j, f);
    cJSON_Delete(j);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every *.json of dir and of its sub-folders (configs/artifacts/<device>/), one level down. */
static void check_tree(const char *root, const char *dir, int depth, found *f)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (is_dir(path)) {
            if (depth == 0) check_tree(root, path, 1, f);
        } else if (l > 5 && !strcmp(e->d_name + l - 5, ".json")) {
            check_json(root, path, f);
        }
    }
    closedir(d);
}

static void shipped_artifacts_should_name_only_data_files_that_exist(void **state)
{
    (void)state;
    found f = {0};
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/configs/artifacts", PP_SOURCE_DIR);
    check_tree(PP_SOURCE_DIR, dir, 0, &f);
    if (f.missing) fail_msg("%d of %d data files named by artifacts are missing:\n%s", f.missing,
                            f.named, f.msg);
    assert_true(f.named >= 10); /* host-cpu's and epyc-kvm-2vcpu's layer and network files */
}

/* The check itself: a manifest and an artifact naming files that are not there are both reported,
 * by artifact and file; a file that is there and an upstream path are not. */
static void check_should_report_each_missing_file(void **state)
{
    (void)state;
    char root[1024], path[2048];
    snprintf(root, sizeof root, "%s/pp_artifact_data_%ld", PP_BINARY_DIR, (long)getpid());
    snprintf(path, sizeof path, "%s/data", root);
    mkdir(root, 0777);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/art", root);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/art/dev", root);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/data/here.csv", root);
    pp_test_write_text(path, "x\n");
    snprintf(path, sizeof path, "%s/art/dev/manifest.json", root);
    pp_test_write_text(path, "{\"sources\": [{\"path\": \"data/here.csv\"}, {\"path\": "
                             "\"data/gone.csv\"}, {\"path\": \"scripts/upstream.csv\"}]}");
    snprintf(path, sizeof path, "%s/art/dev/overhead-latency.json", root);
    pp_test_write_text(path, "{\"data\": \"data/also-gone.csv rows of dev\", \"paths\": [{\"data\": "
                             "\"data/deep-gone.csv, 4 folds\"}]}");
    found f = {0};
    snprintf(path, sizeof path, "%s/art", root);
    check_tree(root, path, 0, &f);
    assert_int_equal(f.named, 4);
    assert_int_equal(f.missing, 3);
    assert_non_null(strstr(f.msg, "manifest.json names data/gone.csv"));
    assert_non_null(strstr(f.msg, "overhead-latency.json names data/also-gone.csv,"));
    assert_non_null(strstr(f.msg, "overhead-latency.json names data/deep-gone.csv,"));
    assert_null(strstr(f.msg, "here.csv"));
    static const char *const rm[] = {"art/dev/manifest.json", "art/dev/overhead-latency.json",
                                     "data/here.csv", "art/dev", "art", "data", ""};
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/%s", root, rm[i]);
        remove(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_artifacts_should_name_only_data_files_that_exist),
        cmocka_unit_test(check_should_report_each_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
