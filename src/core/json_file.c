/* json_file.c — reads and parses a JSON file with cJSON; a parse error names the line. */
#include "core/json_file.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/file.h"

steno_status steno_json_load(const char *path, size_t max_bytes, int name_empty, cJSON **root) {
    *root = NULL;
    char *buf;
    size_t len;
    steno_status s = steno_read_file(path, max_bytes, &buf, &len);
    if (s != STENO_OK) return s;

    const char *end = NULL;
    cJSON *r = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!r) {
        /* cJSON reports where parsing stopped; turn it into a 1-based line number */
        int line = 1;
        const char *stop = end && end >= buf && end <= buf + len ? end : buf + len;
        for (const char *p = buf; p < stop; p++)
            if (*p == '\n') line++;
        if (name_empty && len == 0) s = steno_fail(STENO_E_FORMAT, "%s: not JSON (empty file)", path);
        else s = steno_fail(STENO_E_FORMAT, "%s: not JSON (line %d)", path, line);
        free(buf);
        return s;
    }
    free(buf);
    *root = r;
    return STENO_OK;
}
