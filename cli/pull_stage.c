/* pull_stage.c — download, verify and atomically install a model directory (pull_stage.h). */
#include "pull_stage.h"
#include "download.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOURCE_FILE ".source"
#define COMPLETE_FILE ".complete"
#define GOT_MAX (2 * EVP_MAX_MD_SIZE + 1)

int stage_mkdirs(const char *path) {
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0') continue;
        char keep = *c;
        *c = '\0';
        struct stat st;
        if (mkdir(p, 0755) != 0 && (errno != EEXIST || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))) {
            int e = errno == EEXIST ? ENOTDIR : errno;
            fprintf(stderr, "steno: pull: cannot create %s: %s\n", path, strerror(e));
            return -1;
        }
        *c = keep;
        if (!keep) return 0;
    }
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    return remove(path);
}

int stage_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int read_small(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

static int write_small(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int stage_open(stage *s, const char *root, const char *name, const char *source) {
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    snprintf(s->root, sizeof s->root, "%s", root);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->source, sizeof s->source, "%s", source);
    snprintf(s->dir, sizeof s->dir, "%s/%s.partial", root, name);
    /* The lock lives beside the staging directory, not in it: it must outlive the rename. */
    char lock[4400];
    snprintf(lock, sizeof lock, "%s/.%s.lock", root, name);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lock_fd < 0) {
        fprintf(stderr, "steno: pull: cannot create %s: %s\n", lock, strerror(errno));
        return -1;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "steno: pull: another steno pull is downloading %s into %s\n", name, root);
        return -1;
    }
    /* Partial files of another repository or revision would only fail verification later. */
    char path[4500], had[sizeof s->source] = "";
    snprintf(path, sizeof path, "%s/%s", s->dir, SOURCE_FILE);
    if (read_small(path, had, sizeof had) == 0 && strcmp(had, source) != 0 &&
        stage_remove_tree(s->dir) != 0) {
        fprintf(stderr, "steno: pull: cannot empty %s: %s\n", s->dir, strerror(errno));
        return -1;
    }
    if (mkdir(s->dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "steno: pull: cannot create %s: %s\n", s->dir, strerror(errno));
        return -1;
    }
    if (write_small(path, source) != 0) {
        fprintf(stderr, "steno: pull: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

void stage_close(stage *s) {
    if (s->lock_fd >= 0) close(s->lock_fd);
    s->lock_fd = -1;
}

/* Hex digest of prefix + the file's bytes; -1 (errno set) when it cannot be read. */
static int hash_file(const char *path, const EVP_MD *md, const char *prefix, size_t prefix_len,
                     char *hex) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, md, NULL) && EVP_DigestUpdate(ctx, prefix, prefix_len);
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    ssize_t n = 0;
    while (ok && buf && (n = read(fd, buf, CHUNK)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0 && EVP_DigestUpdate(ctx, buf, (size_t)n);
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    ok = ok && buf && EVP_DigestFinal_ex(ctx, d, &dlen);
    int e = errno;
    free(buf);
    EVP_MD_CTX_free(ctx);
    close(fd);
    if (!ok) {
        errno = e ? e : EIO;
        return -1;
    }
    for (unsigned i = 0; i < dlen; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    return 0;
}

/* 1 verified, 0 wrong (got holds what was found, kind the hash's name), -1 unreadable. */
static int verify(const char *path, const stage_file *f, char *got, const char **kind) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if ((int64_t)st.st_size != f->size) {
        *kind = "size";
        snprintf(got, GOT_MAX, "%" PRId64 " bytes", (int64_t)st.st_size);
        return 0;
    }
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (f->sha256[0]) {
        *kind = "sha256";
        if (hash_file(path, EVP_sha256(), "", 0, hex) != 0) return -1;
        snprintf(got, GOT_MAX, "%s", hex);
        return strcmp(hex, f->sha256) == 0;
    }
    char prefix[64];
    int plen = snprintf(prefix, sizeof prefix, "blob %" PRId64, f->size) + 1; /* with its NUL */
    *kind = "git blob sha1";
    if (hash_file(path, EVP_sha1(), prefix, (size_t)plen, hex) != 0) return -1;
    snprintf(got, GOT_MAX, "%s", hex);
    return strcmp(hex, f->blob_sha1) == 0;
}

int stage_fetch(stage *s, const stage_file *f, const char *endpoint, int progress) {
    char path[4600], url[4096], got[GOT_MAX], err[4096];
    const char *kind = "";
    snprintf(path, sizeof path, "%s/%s", s->dir, f->path);
    snprintf(url, sizeof url, "%s/%s", s->source, f->path);
    struct stat st;
    int have = stat(path, &st) == 0;
    /* A complete-looking leftover is kept only if it verifies: the revision may have moved. */
    if (have && (int64_t)st.st_size >= f->size) {
        if ((int64_t)st.st_size == f->size && verify(path, f, got, &kind) == 1) return 0;
        unlink(path);
    }
    if (steno_dl_file(url, endpoint, path, f->size, f->path, progress, err, sizeof err) != 0) {
        fprintf(stderr, "steno: pull: %s\n", err);
        return -1;
    }
    int v = verify(path, f, got, &kind);
    if (v == 1) return 0;
    if (v < 0) {
        fprintf(stderr, "steno: pull: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    unlink(path);
    char want[GOT_MAX];
    if (!strcmp(kind, "size")) snprintf(want, sizeof want, "%" PRId64 " bytes", f->size);
    else snprintf(want, sizeof want, "%s", f->sha256[0] ? f->sha256 : f->blob_sha1);
    fprintf(stderr, "steno: pull: %s: %s mismatch: expected %s, got %s (from %s; deleted)\n",
            f->path, kind, want, got, url);
    return -1;
}

static int fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int stage_install(stage *s, const char *dest, int force) {
    char path[4600], old[4600];
    snprintf(path, sizeof path, "%s/%s", s->dir, SOURCE_FILE);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", s->dir, COMPLETE_FILE);
    if (write_small(path, "") != 0 || fsync_dir(s->dir) != 0) {
        fprintf(stderr, "steno: pull: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int moved = 0;
    snprintf(old, sizeof old, "%s/.%s.old.%ld", s->root, s->name, (long)getpid());
    if (force && rename(dest, old) == 0) moved = 1;
    else if (force && errno != ENOENT) {
        fprintf(stderr, "steno: pull: cannot move %s aside: %s\n", dest, strerror(errno));
        return -1;
    }
    if (rename(s->dir, dest) != 0) {
        int e = errno;
        if (moved) rename(old, dest);
        fprintf(stderr, "steno: pull: cannot rename %s to %s: %s\n", s->dir, dest,
                e == ENOTEMPTY || e == EEXIST ? "it exists (--force replaces it)" : strerror(e));
        return -1;
    }
    fsync_dir(s->root);
    if (moved && stage_remove_tree(old) != 0)
        fprintf(stderr, "steno: pull: warning: could not delete the replaced %s: %s\n", old,
                strerror(errno));
    return 0;
}
