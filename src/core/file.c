#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

steno_status steno_read_file(const char *path, size_t max_bytes, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return steno_fail(STENO_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        fclose(f);
        return steno_fail(STENO_E_IO, "%s: is a directory or not readable", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return steno_fail(STENO_E_FORMAT, "%s: file too large (%lld bytes, at most %zu)", path,
                          (long long)st.st_size, max_bytes);
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *b = malloc(cap);
    if (!b) {
        fclose(f);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) { /* the file grew, or a pipe/procfs file with st_size 0 */
            if (cap > max_bytes) {
                free(b);
                fclose(f);
                return steno_fail(STENO_E_FORMAT, "%s: file too large (more than %zu bytes)", path, max_bytes);
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                fclose(f);
                return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        const size_t got = fread(b + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    const int err = ferror(f);
    fclose(f);
    if (err) {
        free(b);
        return steno_fail(STENO_E_IO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return STENO_OK;
}

steno_status steno_map_file(const char *path, const steno_map_words *w, steno_mapped_file *out) {
    out->data = NULL;
    out->size = 0;
    out->mapped = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return steno_fail(STENO_E_IO, "%s: %s%s", path, w->open, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        if (!w->stat) return steno_fail(STENO_E_IO, "%s: %s", path, w->not_regular);
        return steno_fail(STENO_E_IO, "%s: %s%s", path, w->stat, strerror(e));
    }
    if (S_ISDIR(st.st_mode) && w->dir) {
        close(fd);
        return steno_fail(STENO_E_IO, "%s: %s", path, w->dir);
    }
    if (!S_ISREG(st.st_mode) && w->not_regular) {
        close(fd);
        return steno_fail(STENO_E_IO, "%s: %s", path, w->not_regular);
    }
    if (st.st_size == 0 && w->empty) {
        close(fd);
        return steno_fail(STENO_E_FORMAT, "%s: %s", path, w->empty);
    }
    if (w->too_large && (uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2) {
        close(fd);
        return steno_fail(STENO_E_FORMAT, "%s: %s", path, w->too_large);
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        close(fd);
        out->data = (const uint8_t *)"";
        return STENO_OK;
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        if (w->map_names_size)
            return steno_fail(STENO_E_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
        return steno_fail(STENO_E_IO, "%s: cannot map: %s", path, strerror(e));
    }
    out->data = p;
    out->size = size;
    out->mapped = 1;
    return STENO_OK;
}

void steno_unmap_file(const steno_mapped_file *f) {
    if (f->mapped) munmap((void *)f->data, f->size);
}
