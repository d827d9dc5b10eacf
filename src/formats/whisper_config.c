/* whisper_config.c — parses a CTranslate2 Whisper config.json with cJSON. */
#include "formats/whisper_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/json_file.h"

#define CONFIG_MAX_BYTES (64u << 20)


static int json_int(const cJSON *it, int *out) {
    if (!cJSON_IsNumber(it)) return 0;
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < INT_MIN || d > INT_MAX) return 0;
    *out = (int)d;
    return 1;
}

/* Parses an optional list of ints under key; absent or null leaves an empty array. */
static steno_status int_list(const char *path, const cJSON *root, const char *key, int **arr,
                             int *n) {
    *arr = NULL;
    *n = 0;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a || cJSON_IsNull(a)) return STENO_OK;
    if (!cJSON_IsArray(a))
        return steno_fail(STENO_E_FORMAT, "%s: %s: not a list of integers", path, key);
    int cnt = cJSON_GetArraySize(a);
    if (cnt == 0) return STENO_OK;
    int *v = malloc((size_t)cnt * sizeof *v);
    if (!v) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (!json_int(it, &v[i])) {
            free(v);
            return steno_fail(STENO_E_FORMAT, "%s: %s[%d]: not an integer", path, key, i);
        }
        i++;
    }
    *arr = v;
    *n = i;
    return STENO_OK;
}

static steno_status pair_list(const char *path, const cJSON *root, const char *key,
                              int (**arr)[2], int *n) {
    *arr = NULL;
    *n = 0;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a || cJSON_IsNull(a)) return STENO_OK;
    if (!cJSON_IsArray(a))
        return steno_fail(STENO_E_FORMAT, "%s: %s: not a list of pairs", path, key);
    int cnt = cJSON_GetArraySize(a);
    if (cnt == 0) return STENO_OK;
    int(*v)[2] = malloc((size_t)cnt * sizeof *v);
    if (!v) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 ||
            !json_int(cJSON_GetArrayItem(it, 0), &v[i][0]) ||
            !json_int(cJSON_GetArrayItem(it, 1), &v[i][1]) || v[i][0] < 0 || v[i][1] < 0) {
            free(v);
            return steno_fail(STENO_E_FORMAT, "%s: %s: not a list of pairs (entry %d)", path, key,
                              i);
        }
        i++;
    }
    *arr = v;
    *n = i;
    return STENO_OK;
}

steno_status whisper_config_load(const char *path, whisper_config *out) {
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "whisper_config_load: NULL output");
    memset(out, 0, sizeof *out);
    if (!path) return steno_fail(STENO_E_INVALID_ARG, "whisper_config_load: NULL path");

    cJSON *root;
    steno_status s = steno_json_load(path, CONFIG_MAX_BYTES, 1, &root);
    if (s != STENO_OK) return s;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return steno_fail(STENO_E_FORMAT, "%s: not a JSON object", path);
    }

    s = pair_list(path, root, "alignment_heads", &out->alignment_heads, &out->n_alignment_heads);
    if (s == STENO_OK)
        s = int_list(path, root, "suppress_ids", &out->suppress_ids, &out->n_suppress_ids);
    if (s == STENO_OK)
        s = int_list(path, root, "suppress_ids_begin", &out->suppress_ids_begin,
                     &out->n_suppress_ids_begin);
    if (s == STENO_OK) s = int_list(path, root, "lang_ids", &out->lang_ids, &out->n_lang_ids);
    cJSON_Delete(root);
    if (s != STENO_OK) whisper_config_free(out);
    return s;
}

void whisper_config_free(whisper_config *c) {
    if (!c) return;
    free(c->alignment_heads);
    free(c->suppress_ids);
    free(c->suppress_ids_begin);
    free(c->lang_ids);
    memset(c, 0, sizeof *c);
}
