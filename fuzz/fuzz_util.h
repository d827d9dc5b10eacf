/* fuzz_util.h — what several fuzz targets share: the input written to a file the readers open
 * by path (a memfd, so no disk I/O), and the split of one input into two files. */
#ifndef STENO_FUZZ_UTIL_H
#define STENO_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A named file holding bytes; rewritten for every input. dir != NULL: dir/name on disk (readers
 * that take a directory); else an anonymous memfd reached as /proc/self/fd/N. */
typedef struct fuzz_file {
    int fd;
    char path[4200];
} fuzz_file;

static inline void fuzz_file_init(fuzz_file *f, const char *dir, const char *name) {
    f->fd = -1;
    if (!dir) {
        f->fd = memfd_create(name, MFD_CLOEXEC);
        if (f->fd >= 0) snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    } else {
        snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    }
    if (!dir && f->fd < 0) { perror("memfd_create"); abort(); }
}

/* Writes data as the file's whole content (size 0: the file exists and is empty). */
static inline void fuzz_file_write(fuzz_file *f, const uint8_t *data, size_t size) {
    FILE *fp = NULL;
    if (f->fd >= 0) {
        if (ftruncate(f->fd, 0) != 0) abort();
        for (size_t off = 0; off < size;) {
            ssize_t w = pwrite(f->fd, data + off, size - off, (off_t)off);
            if (w <= 0) abort();
            off += (size_t)w;
        }
        return;
    }
    fp = fopen(f->path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0) abort();
}

/* Splits an input into two parts: a little-endian u32 length of the first, then the first, then
 * the second (what is left). A short or overlong length gives an empty first part. */
static inline void fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *na, const uint8_t **b,
                              size_t *nb) {
    uint32_t n = 0;
    if (size >= 4) memcpy(&n, data, 4);
    size_t off = size >= 4 ? 4 : size;
    if (n > size - off) n = 0;
    *a = data + off;
    *na = n;
    *b = data + off + n;
    *nb = size - off - n;
}

/* A private directory for readers that take one (removed at exit by the OS's tmp cleaning only;
 * the fuzzer is a long-lived process, and the files in it are rewritten for every input). */
static inline const char *fuzz_tmpdir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/steno_fuzz_XXXXXX");
        if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
    }
    return dir;
}

#endif
