/* test_util.h — shared helpers of the C unit tests: CHECK counting, and locating the default
 * model ($STENO_MODEL_DIR, else $XDG_CACHE_HOME/steno/models/tiny.en, else
 * ~/.cache/steno/models/tiny.en). A missing model fails the test: scripts/test.sh fetches it. */
#ifndef STENO_TEST_UTIL_H
#define STENO_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int g_checks, g_failures;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        g_checks++;                                                   \
        if (!(cond)) {                                                \
            g_failures++;                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                             \
            fputc('\n', stderr);                                      \
        }                                                             \
    } while (0)

static inline const char *test_model_dir(void) {
    static char dir[4096];
    const char *e = getenv("STENO_MODEL_DIR");
    if (e && *e) snprintf(dir, sizeof dir, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(dir, sizeof dir, "%s/steno/models/tiny.en", e);
    else snprintf(dir, sizeof dir, "%s/.cache/steno/models/tiny.en", getenv("HOME") ? getenv("HOME") : "");
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/model.bin", dir);
    if (stat(p, &st) != 0) {
        fprintf(stderr, "FAIL: the model is not installed (%s missing); run scripts/fetch_model.sh\n", p);
        exit(1);
    }
    return dir;
}

static inline const char *test_shared_dir(void) {
    const char *e = getenv("STENO_SHARED");
    return e && *e ? e : "../shared";
}

/** The whole file at path, NUL-terminated (malloc'd; the caller frees), or NULL; its length in *len
 *  when len is not NULL. */
static inline char *test_read_all_n(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) {
        b[n] = '\0';
        if (len) *len = (size_t)n;
    }
    fclose(f);
    return b;
}

/** test_read_all_n without the length. */
static inline char *test_read_all(const char *path) { return test_read_all_n(path, NULL); }

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}

#endif
