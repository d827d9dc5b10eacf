/* safetensors.c — see safetensors.h. The header is parsed with cJSON; tensor data is read in
 * place (the format stores it little-endian, as every platform steno builds for). */
#include "formats/safetensors.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"

struct steno_safetensors {
    char *path;
    char *buf;  /* the whole file */
    size_t len;
    const char *data; /* the byte after the header */
    size_t data_len;
    cJSON *header;
};

steno_status steno_safetensors_open(const char *path, size_t max_bytes, steno_safetensors **out) {
    *out = NULL;
    steno_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    steno_status s = steno_read_file(path, max_bytes, &st->buf, &st->len);
    if (s != STENO_OK) {
        steno_safetensors_close(st);
        return s;
    }
    uint64_t hlen = 0;
    if (st->len >= 8) {
        for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | (unsigned char)st->buf[i];
    }
    /* The data must start 4-byte aligned in our buffer for in-place float views: the writers pad
     * the header to a multiple of 8, and malloc aligns the buffer. */
    if (st->len < 8 || hlen > st->len - 8 || (8 + hlen) % 4 != 0) {
        steno_safetensors_close(st);
        return steno_fail(STENO_E_FORMAT, "%s: not a safetensors file (bad header length)", path);
    }
    st->header = cJSON_ParseWithLength(st->buf + 8, (size_t)hlen);
    if (!cJSON_IsObject(st->header)) {
        steno_safetensors_close(st);
        return steno_fail(STENO_E_FORMAT, "%s: not a safetensors file (header is not a JSON object)", path);
    }
    st->data = st->buf + 8 + hlen;
    st->data_len = st->len - 8 - (size_t)hlen;
    *out = st;
    return STENO_OK;
}

steno_status steno_safetensors_f32(const steno_safetensors *st, const char *name, const size_t *dims, int n_dims,
                                   const float **data) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(st->header, name);
    if (!cJSON_IsObject(t)) return steno_fail(STENO_E_FORMAT, "%s: tensor %s missing", st->path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    if (!cJSON_IsString(dtype) || strcmp(dtype->valuestring, "F32") != 0)
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s is not F32", st->path, name);
    int ok = cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == n_dims;
    size_t count = 1;
    for (int i = 0; ok && i < n_dims; i++) {
        const cJSON *d = cJSON_GetArrayItem(shape, i);
        ok = cJSON_IsNumber(d) && d->valuedouble == (double)dims[i];
        count *= dims[i];
    }
    if (!ok) return steno_fail(STENO_E_FORMAT, "%s: tensor %s has an unexpected shape", st->path, name);
    const cJSON *b = cJSON_GetArrayItem(offs, 0), *e = cJSON_GetArrayItem(offs, 1);
    if (!cJSON_IsArray(offs) || !cJSON_IsNumber(b) || !cJSON_IsNumber(e) || b->valuedouble < 0 ||
        e->valuedouble > (double)st->data_len || e->valuedouble - b->valuedouble != (double)(count * sizeof(float)) ||
        (size_t)b->valuedouble % sizeof(float) != 0)
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s has bad data offsets", st->path, name);
    *data = (const float *)(const void *)(st->data + (size_t)b->valuedouble);
    return STENO_OK;
}

void steno_safetensors_close(steno_safetensors *st) {
    if (!st) return;
    cJSON_Delete(st->header);
    free(st->buf);
    free(st->path);
    free(st);
}
