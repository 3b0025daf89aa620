/* layer_models/lm_cache.c: where a regressor's flat trees are cached between processes, so that a
 * warm start reads ~1 MB of flat arrays instead of entering XGBoost (UBJSON load, JSON save, cJSON
 * parse). The bytes' format and checks are lm_flat.c's; here: the folder, the file name, the source
 * identity, and writing through a temp file and rename. Every failure here is silent: a cache that
 * cannot be used leaves the model to XGBoost. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "layer_models/layer_models.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xgboost/version_config.h>

#define RACY_NS 2000000000LL

/* mkdir -p of an absolute or relative path (mode 0700: a user's cache). */
static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST) return -1;
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int pp_lm_cache_dir(char *buf, size_t len)
{
    const char *own = getenv("PERFPRED_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (own && *own) {
        if (strcmp(own, "off") == 0) return -1;
        n = snprintf(buf, len, "%s/flat-trees", own);
    } else if (xdg && xdg[0] == '/') { /* the XDG spec: a relative value is to be ignored */
        n = snprintf(buf, len, "%s/perfpred/flat-trees", xdg);
    } else if (home && home[0] == '/') {
        n = snprintf(buf, len, "%s/.cache/perfpred/flat-trees", home);
    } else {
        return -1;
    }
    if (n < 0 || (size_t)n >= len) return -1;
    struct stat sb;
    if (stat(buf, &sb) == 0) return S_ISDIR(sb.st_mode) ? 0 : -1;
    return mkdirs(buf);
}

int pp_lm_src_id_of(const char *path, pp_lm_src_id *id)
{
    struct stat sb;
    memset(id, 0, sizeof *id);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return -1;
    /* the version built against (asking the library would load it, which a warm start avoids) */
    int ma = XGBOOST_VER_MAJOR, mi = XGBOOST_VER_MINOR, pa = XGBOOST_VER_PATCH;
    id->size = (uint64_t)sb.st_size;
    id->ino = (uint64_t)sb.st_ino;
    id->dev = (uint64_t)sb.st_dev;
    id->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    id->ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec;
    id->xgb_version = (uint64_t)ma << 32 | (uint64_t)(mi & 0xFFFF) << 16 | (uint64_t)(pa & 0xFFFF);
    return 0;
}

/* <cache dir>/<FNV-1a of the model file's real path>.flat */
static int cache_path(const char *model, char *out, size_t len)
{
    char dir[PATH_MAX], real[PATH_MAX];
    if (pp_lm_cache_dir(dir, sizeof dir) != 0 || !realpath(model, real)) return -1;
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)real; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    int n = snprintf(out, len, "%s/%016llx.flat", dir, (unsigned long long)h);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

pp_lm_flat *pp_lm_cache_load(const char *path)
{
    char cp[PATH_MAX + 64];
    pp_lm_src_id id;
    if (pp_lm_src_id_of(path, &id) != 0 || cache_path(path, cp, sizeof cp) != 0) return NULL;
    int fd = open(cp, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    void *map = MAP_FAILED;
    /* a cache file is at most a few MB; anything past 1 GiB is not one of ours */
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && sb.st_size < (1 << 30))
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
    pp_lm_flat *f = NULL;
    pp_err e = {0};
    (void)pp_lm_flat_from_mapping(map, (size_t)sb.st_size, &id, &f, &e);
    return f;
}

void pp_lm_cache_store(const char *path, const pp_lm_flat *f)
{
    static atomic_uint seq;
    char cp[PATH_MAX + 64], tmp[PATH_MAX + 128];
    pp_lm_src_id id;
    if (!f || !pp_lm_flat_is_sound(f) || pp_lm_src_id_of(path, &id) != 0 ||
        cache_path(path, cp, sizeof cp) != 0)
        return;
    /* git's "racily clean" rule: a file modified within the last seconds may change again within
     * the same timestamp tick at the same size, so its identity cannot vouch for its content yet;
     * it is cached by a later start */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    if (id.mtime_ns > now_ns - RACY_NS) return;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pp_lm_flat_serialize(f, &id, &buf, &len, NULL) != PERFPRED_OK) return;
    /* a name no other writer (process or thread) uses; readers only ever see a whole file */
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", cp, (long)getpid(), atomic_fetch_add(&seq, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        free(buf);
        return;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    free(buf);
    if (close(fd) != 0 || off != len || rename(tmp, cp) != 0) unlink(tmp);
}
