#include "core/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
