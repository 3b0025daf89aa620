/* tests/test_artifact_data.c: every file of data/ that a shipped artifact says it was trained or
 * judged on exists in the tree: any "path" or "data" string of the JSON files under
 * configs/artifacts/ that names a data/ file (a manifest's sources[].path, an artifact's provenance
 * line). Upstream files (NeuSight's, read from ../shared/datasets) are not the tree's and are not
 * checked here. And data/ holds only what data/README.md's file table lists, one row per file:
 * nothing unlisted lingers, and no row names a file that is gone. */
#include "tests/helpers.h"

#include <stdarg.h>
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

/* Paths below data/, in the order found. */
typedef struct listing {
    char **path;
    int n, cap;
} listing;

static void listing_add(listing *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->path = realloc(l->path, (size_t)l->cap * sizeof *l->path);
        assert_non_null(l->path);
    }
    char *c = malloc(len + 1);
    assert_non_null(c);
    memcpy(c, s, len);
    c[len] = '\0';
    l->path[l->n++] = c;
}

static int listing_count(const listing *l, const char *s)
{
    int k = 0;
    for (int i = 0; i < l->n; i++) k += !strcmp(l->path[i], s);
    return k;
}

/* Whether path i appears again after i (a repeated row is reported once, at its last). */
static int appears_later(const listing *l, int i)
{
    for (int j = i + 1; j < l->n; j++)
        if (!strcmp(l->path[j], l->path[i])) return 1;
    return 0;
}

static void listing_free(listing *l)
{
    for (int i = 0; i < l->n; i++) free(l->path[i]);
    free(l->path);
}

/* One problem more, its line appended to f->msg. */
__attribute__((format(printf, 2, 3))) static void add_msg(found *f, const char *fmt, ...)
{
    size_t l = strlen(f->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg + l, sizeof f->msg - l, fmt, ap);
    va_end(ap);
    f->missing++;
}

/* The first cell of every row of README's file table (the one whose header starts "| file |"): a
 * path below data/ in backquotes. A row without one is reported by its line. */
static int table_paths(const char *readme, listing *l, found *f)
{
    const char *p = readme;
    int line = 1, in_table = 0, seen = 0;
    while (*p) {
        size_t len = strcspn(p, "\n");
        if (!in_table) {
            if (!seen && !strncmp(p, "| file |", 8)) in_table = seen = 1;
        } else if (*p != '|') {
            break;
        } else if (strncmp(p, "|---", 4) != 0) {
            const char *a = p + 1;
            while (*a == ' ') a++;
            const char *b = *a == '`' ? memchr(a + 1, '`', len - (size_t)(a + 1 - p)) : NULL;
            if (b && b > a + 1)
                listing_add(l, a + 1, (size_t)(b - a - 1));
            else
                add_msg(f, "data/README.md:%d: a row of the file table without a `path`\n", line);
        }
        p += len + (p[len] == '\n');
        line++;
    }
    return seen;
}

/* Every file below dir (data/), by its path below it; hidden names are skipped, and README.md at
 * the top. */
static void data_files(const char *dir, const char *rel, listing *out)
{
    char path[2048];
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (!*rel && !strcmp(e->d_name, "README.md")) continue;
        char sub[1024], full[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, sub);
        if (is_dir(full))
            data_files(dir, sub, out);
        else
            listing_add(out, sub, strlen(sub));
    }
    closedir(d);
}

/* root/data/README.md's file table against the files under root/data/: f->named counts the rows,
 * f->missing the files not listed, the rows naming no file and the rows listed more than once. */
static void check_data_listing(const char *root, found *f)
{
    char dir[2048], readme[2100];
    snprintf(dir, sizeof dir, "%s/data", root);
    snprintf(readme, sizeof readme, "%s/README.md", dir);
    char *text = pp_test_read_text(readme);
    assert_non_null(text);
    listing rows = {0}, files = {0};
    if (!table_paths(text, &rows, f))
        add_msg(f, "data/README.md has no file table (a header starting \"| file |\")\n");
    free(text);
    data_files(dir, "", &files);
    f->named += rows.n;
    for (int i = 0; i < files.n; i++)
        if (!listing_count(&rows, files.path[i]))
            add_msg(f, "data/%s is not in data/README.md's file table\n", files.path[i]);
    for (int i = 0; i < rows.n; i++) {
        if (!listing_count(&files, rows.path[i]))
            add_msg(f, "data/README.md lists %s, which is not there\n", rows.path[i]);
        else if (listing_count(&rows, rows.path[i]) > 1 && !appears_later(&rows, i))
            add_msg(f, "data/README.md lists %s more than once\n", rows.path[i]);
    }
    listing_free(&rows);
    listing_free(&files);
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

static void data_readme_should_list_every_data_file(void **state)
{
    (void)state;
    found f = {0};
    check_data_listing(PP_SOURCE_DIR, &f);
    if (f.missing) fail_msg("data/ and data/README.md's file table disagree (%d):\n%s", f.missing,
                            f.msg);
    assert_true(f.named >= 20); /* host-cpu's, epyc-kvm-2vcpu's and gpu-stacks' files */
}

/* The listing check itself: a file in no row (at any depth), a row naming no file, a row listed
 * twice and a row without a path are each reported; a listed file, README.md itself, a hidden file
 * and the rows of another table are not. */
static void listing_check_should_report_unlisted_files_and_stale_rows(void **state)
{
    (void)state;
    char root[1024], path[2048];
    snprintf(root, sizeof root, "%s/pp_data_listing_%ld", PP_BINARY_DIR, (long)getpid());
    static const char *const dirs[] = {"", "/data", "/data/dev", "/data/gpu", "/data/gpu/run1"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s%s", root, dirs[i]);
        mkdir(path, 0777);
    }
    static const char *const files[] = {"data/dev/here.csv", "data/dev/stray.csv",
                                        "data/gpu/run1/h100.csv", "data/dev/.hidden"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        pp_test_write_text(path, "x\n");
    }
    snprintf(path, sizeof path, "%s/data/README.md", root);
    pp_test_write_text(path, "# data\n\n| old | new |\n|---|---|\n| `dev/old.csv` | `dev/here.csv` |\n"
                             "\n| file | role |\n|---|---|\n| `dev/here.csv` | trains |\n"
                             "| `dev/gone.csv` | judges |\n| `dev/here.csv` | again |\n"
                             "| dev/bare.csv | no quotes |\n\nMore text.\n| `dev/after.csv` | x |\n");
    found f = {0};
    check_data_listing(root, &f);
    assert_int_equal(f.named, 3);
    assert_int_equal(f.missing, 5);
    assert_non_null(strstr(f.msg, "data/dev/stray.csv is not in data/README.md's file table"));
    assert_non_null(strstr(f.msg, "data/gpu/run1/h100.csv is not in data/README.md's file table"));
    assert_non_null(strstr(f.msg, "data/README.md lists dev/gone.csv, which is not there"));
    assert_non_null(strstr(f.msg, "data/README.md lists dev/here.csv more than once"));
    assert_non_null(strstr(f.msg, "data/README.md:12: a row of the file table without a `path`"));
    assert_null(strstr(f.msg, "old.csv"));
    assert_null(strstr(f.msg, "after.csv"));
    assert_null(strstr(f.msg, "hidden"));
    assert_null(strstr(f.msg, "data/README.md is not"));

    /* a tree whose table lists exactly its files passes */
    pp_test_write_text(path, "| file | role |\n|---|---|\n| `dev/here.csv` | trains |\n"
                             "| `dev/stray.csv` | judges |\n| `gpu/run1/h100.csv` | trains |\n");
    found g = {0};
    check_data_listing(root, &g);
    assert_int_equal(g.named, 3);
    assert_int_equal(g.missing, 0);

    static const char *const rm[] = {"data/README.md", "data/dev/here.csv", "data/dev/stray.csv",
                                     "data/gpu/run1/h100.csv", "data/dev/.hidden", "data/gpu/run1",
                                     "data/gpu", "data/dev", "data", ""};
    for (int i = 0; i < 10; i++) {
        snprintf(path, sizeof path, "%s/%s", root, rm[i]);
        remove(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_artifacts_should_name_only_data_files_that_exist),
        cmocka_unit_test(check_should_report_each_missing_file),
        cmocka_unit_test(data_readme_should_list_every_data_file),
        cmocka_unit_test(listing_check_should_report_unlisted_files_and_stale_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
