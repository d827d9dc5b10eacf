/* whisper_bpe_build.c — builds the Whisper BPE tokenizer's tables (whisper_bpe_internal.h):
 * from a model folder (vocabulary.txt or vocab.json, tokenizer.json's model.merges) or from
 * tiktoken-style ranks. */
#include "text/whisper_bpe_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/file.h"
#include "core/json_file.h"

#define TOK_MAX_FILE_BYTES (512u << 20)

/* ------------------------------------------------------------------------------------------- */
/* Loading                                                                                       */

static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Collects the token strings (vocab form) into a temporary list of (ptr,len) pairs. */
typedef struct {
    const char **s;
    size_t *n;
    int count;
} strlist;

static steno_status vocab_from_txt(const char *path, char *buf, size_t len, strlist *out) {
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n') lines++;
    if (len > 0 && buf[len - 1] != '\n') lines++;
    if (lines == 0) return steno_fail(STENO_E_FORMAT, "%s: empty vocabulary", path);
    out->s = malloc((size_t)lines * sizeof *out->s);
    out->n = malloc((size_t)lines * sizeof *out->n);
    if (!out->s || !out->n) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    size_t start = 0;
    int k = 0;
    for (size_t i = 0; i <= len && k < lines; i++) {
        if (i == len || buf[i] == '\n') {
            size_t n = i - start;
            if (n > 0 && buf[start + n - 1] == '\r') n--; /* byte-level tokens never hold '\r' */
            /* an empty line is an unused id: CTranslate2's multilingual Whisper vocabularies
             * hold "" at 50256 (tiktoken's multilingual ranks stop at 50255); it decodes to no
             * bytes (tokenizer.json maps "" to it too) */
            if (memchr(buf + start, '\0', n))
                return steno_fail(STENO_E_FORMAT, "%s: line %d: NUL byte in token", path, k + 1);
            if (!wbpe_utf8_valid(buf + start, n))
                return steno_fail(STENO_E_FORMAT, "%s: line %d: invalid UTF-8", path, k + 1);
            out->s[k] = buf + start;
            out->n[k] = n;
            k++;
            start = i + 1;
        }
    }
    out->count = k;
    return STENO_OK;
}

static steno_status vocab_from_json(const char *path, const cJSON *root, strlist *out) {
    if (!cJSON_IsArray(root))
        return steno_fail(STENO_E_FORMAT, "%s: not a JSON list of token strings", path);
    int cnt = cJSON_GetArraySize(root);
    if (cnt <= 0) return steno_fail(STENO_E_FORMAT, "%s: empty vocabulary", path);
    out->s = malloc((size_t)cnt * sizeof *out->s);
    out->n = malloc((size_t)cnt * sizeof *out->n);
    if (!out->s || !out->n) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (!cJSON_IsString(it) || !it->valuestring) /* "" = an unused id, as in vocab_from_txt */
            return steno_fail(STENO_E_FORMAT, "%s: entry %d: not a token string", path, k);
        out->s[k] = it->valuestring;
        out->n[k] = strlen(it->valuestring);
        k++;
    }
    out->count = k;
    return STENO_OK;
}

/* tokenizer.json's model.vocab {token: id} and added_tokens [{id, content}] as a list by id; ids
 * nobody names are empty (unused) tokens. */
static steno_status vocab_from_hf(const char *path, const cJSON *root, strlist *out) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = model ? cJSON_GetObjectItemCaseSensitive(model, "vocab") : NULL;
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab)) return steno_fail(STENO_E_FORMAT, "%s: no model.vocab object", path);
    int max_id = -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e7)
            return steno_fail(STENO_E_FORMAT, "%s: model.vocab: a bad id", path);
        if ((int)it->valuedouble > max_id) max_id = (int)it->valuedouble;
    }
    if (cJSON_IsArray(added))
        cJSON_ArrayForEach(it, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
            if (!cJSON_IsNumber(id) || !cJSON_IsString(c) || id->valuedouble < 0 || id->valuedouble > 1e7)
                return steno_fail(STENO_E_FORMAT, "%s: added_tokens: a bad entry", path);
            if ((int)id->valuedouble > max_id) max_id = (int)id->valuedouble;
        }
    if (max_id < 0) return steno_fail(STENO_E_FORMAT, "%s: empty vocabulary", path);
    out->count = max_id + 1;
    out->s = calloc((size_t)out->count, sizeof *out->s);
    out->n = calloc((size_t)out->count, sizeof *out->n);
    if (!out->s || !out->n) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < out->count; i++) out->s[i] = "";
    cJSON_ArrayForEach(it, vocab) {
        const int id = (int)it->valuedouble;
        out->s[id] = it->string;
        out->n[id] = strlen(it->string);
    }
    if (cJSON_IsArray(added))
        cJSON_ArrayForEach(it, added) {
            const int id = (int)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
            const char *c = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
            out->s[id] = c;
            out->n[id] = strlen(c);
        }
    for (int i = 0; i < out->count; i++)
        if (!wbpe_utf8_valid(out->s[i], out->n[i])) return steno_fail(STENO_E_FORMAT, "%s: token %d: invalid UTF-8", path, i);
    return STENO_OK;
}

/* Builds the arena, offsets, byte forms and the string hash from the token list. */
static steno_status build_vocab(steno_tokenizer *t, const char *path, const strlist *L) {
    int b2u[256], u2b[512];
    wbpe_bytes_to_unicode(b2u);
    for (int i = 0; i < 512; i++) u2b[i] = -1;
    for (int b = 0; b < 256; b++) u2b[b2u[b]] = b;

    size_t total = 0;
    for (int i = 0; i < L->count; i++) total += 2 * (L->n[i] + 1); /* byte form is never longer */
    t->n_vocab = L->count;
    t->arena = malloc(total);
    t->str_off = malloc((size_t)L->count * sizeof *t->str_off);
    t->bytes_off = malloc((size_t)L->count * sizeof *t->bytes_off);
    t->bytes_len = malloc((size_t)L->count * sizeof *t->bytes_len);
    t->hash_cap = 1;
    while (t->hash_cap < (size_t)L->count * 2) t->hash_cap <<= 1;
    t->hash = malloc(t->hash_cap * sizeof *t->hash);
    if (!t->arena || !t->str_off || !t->bytes_off || !t->bytes_len || !t->hash)
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    memset(t->hash, 0xff, t->hash_cap * sizeof *t->hash);

    size_t pos = 0;
    for (int i = 0; i < L->count; i++) {
        t->str_off[i] = pos;
        memcpy(t->arena + pos, L->s[i], L->n[i]);
        pos += L->n[i];
        t->arena[pos++] = '\0';
    }
    for (int i = 0; i < L->count; i++) {
        const unsigned char *s = (const unsigned char *)L->s[i];
        size_t n = L->n[i], j = 0, o = 0;
        char *dst = t->arena + pos;
        int ok = 1;
        while (j < n) {
            uint32_t cp;
            int l = wbpe_utf8_decode(s + j, n - j, &cp);
            if (!l || cp >= 512 || u2b[cp] < 0) {
                ok = 0;
                break;
            }
            dst[o++] = (char)u2b[cp];
            j += (size_t)l;
        }
        if (!ok) { /* not byte-level form (e.g. an added token): keep the literal text */
            memcpy(dst, s, n);
            o = n;
        }
        t->bytes_off[i] = pos;
        t->bytes_len[i] = (uint32_t)o;
        pos += o;
        t->arena[pos++] = '\0';
    }
    for (int i = 0; i < L->count; i++) wbpe_vocab_insert(t, i);

    for (int b = 0; b < 256; b++) {
        char u[4];
        int l = wbpe_utf8_encode((uint32_t)b2u[b], u);
        t->base_id[b] = wbpe_vocab_lookup(t, u, (size_t)l);
        if (t->base_id[b] < 0)
            return steno_fail(STENO_E_FORMAT,
                              "%s: not a byte-level BPE vocabulary (no token for byte 0x%02x)",
                              path, b);
    }
    t->eot = wbpe_vocab_lookup(t, "<|endoftext|>", 13);
    if (t->eot < 0) t->eot = t->n_vocab;
    return STENO_OK;
}

/* Copies at most size - 1 bytes of s into out for an error message, control characters shown as
 * '?' and a cut shown as "...", so that a token read from a file cannot break the one-line rule. */
static void printable_prefix(const char *s, char *out, size_t size) {
    size_t n = 0, len = strlen(s);
    for (; n + 1 < size && n < len; n++) out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    if (n < len && size > 4) memcpy(out + size - 4, "...", 3), n = size - 1;
    out[n] = '\0';
}

/* Parses tokenizer.json: checks model.vocab against the vocabulary, builds the merge table. */
static steno_status load_merges(steno_tokenizer *t, const char *path) {
    cJSON *root;
    steno_status s = steno_json_load(path, TOK_MAX_FILE_BYTES, 0, &root);
    if (s != STENO_OK) return s;

    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *merges = model ? cJSON_GetObjectItemCaseSensitive(model, "merges") : NULL;
    const cJSON *vocab = model ? cJSON_GetObjectItemCaseSensitive(model, "vocab") : NULL;
    if (!cJSON_IsObject(model) || !cJSON_IsArray(merges)) {
        cJSON_Delete(root);
        return steno_fail(STENO_E_FORMAT, "%s: no model.merges list (not a BPE tokenizer.json)",
                          path);
    }
    if (cJSON_IsObject(vocab)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, vocab) {
            int id = wbpe_vocab_lookup(t, it->string, strlen(it->string));
            if (!cJSON_IsNumber(it) || (double)id != it->valuedouble) {
                /* the token is file content: keep the message one line (fuzz_tokenizer find) */
                char shown[48];
                printable_prefix(it->string, shown, sizeof shown);
                s = steno_fail(STENO_E_FORMAT,
                               "%s: model.vocab['%s'] disagrees with the vocabulary file", path, shown);
                cJSON_Delete(root);
                return s;
            }
        }
    }

    int cnt = cJSON_GetArraySize(merges);
    t->merges_cap = 1;
    while (t->merges_cap < (size_t)cnt * 2 + 2) t->merges_cap <<= 1;
    t->merges = calloc(t->merges_cap, sizeof *t->merges);
    if (!t->merges) {
        cJSON_Delete(root);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    char tmp[1024];
    int rank = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, merges) {
        const char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        if (cJSON_IsString(it) && it->valuestring) { /* "a b" */
            const char *sp = strchr(it->valuestring, ' ');
            if (sp) {
                a = it->valuestring;
                na = (size_t)(sp - a);
                b = sp + 1;
                nb = strlen(b);
            }
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2) { /* ["a", "b"] */
            const cJSON *x = cJSON_GetArrayItem(it, 0), *y = cJSON_GetArrayItem(it, 1);
            if (cJSON_IsString(x) && cJSON_IsString(y)) {
                a = x->valuestring;
                na = strlen(a);
                b = y->valuestring;
                nb = strlen(b);
            }
        }
        if (!a || !b || na == 0 || nb == 0 || na + nb >= sizeof tmp) {
            s = steno_fail(STENO_E_FORMAT, "%s: model.merges[%d]: not a token pair", path, rank);
            break;
        }
        int ia = wbpe_vocab_lookup(t, a, na), ib = wbpe_vocab_lookup(t, b, nb);
        memcpy(tmp, a, na);
        memcpy(tmp + na, b, nb);
        int im = wbpe_vocab_lookup(t, tmp, na + nb);
        if (ia < 0 || ib < 0 || im < 0) {
            s = steno_fail(STENO_E_FORMAT, "%s: model.merges[%d] uses a token not in the vocabulary",
                           path, rank);
            break;
        }
        wbpe_merge_insert(t, ia, ib, rank, im);
        rank++;
    }
    t->n_merges = rank;
    cJSON_Delete(root);
    return s;
}

steno_status steno_tokenizer_load(const char *model_dir, steno_tokenizer **out) {
    if (out) *out = NULL;
    if (!model_dir || !out) return steno_fail(STENO_E_INVALID_ARG, "tokenizer: NULL argument");

    steno_status s = STENO_OK;
    steno_tokenizer *t = calloc(1, sizeof *t);
    char *txt_path = path_join(model_dir, "vocabulary.txt");
    char *json_path = path_join(model_dir, "vocabulary.json");
    char *tok_path = path_join(model_dir, "tokenizer.json");
    char *buf = NULL;
    size_t len = 0;
    cJSON *vjson = NULL;
    strlist L = {0};
    if (!t || !txt_path || !json_path || !tok_path) {
        s = steno_fail(STENO_E_NOMEM, "%s: out of memory", model_dir);
        goto done;
    }

    if (!file_exists(txt_path) && !file_exists(json_path) && file_exists(tok_path)) {
        /* a Hugging Face directory: the vocabulary is tokenizer.json's model.vocab + added_tokens */
        s = steno_read_file(tok_path, TOK_MAX_FILE_BYTES, &buf, &len);
        if (s == STENO_OK) {
            vjson = cJSON_ParseWithLength(buf, len);
            if (!vjson) s = steno_fail(STENO_E_FORMAT, "%s: not JSON", tok_path);
            else s = vocab_from_hf(tok_path, vjson, &L);
        }
        if (s == STENO_OK) s = build_vocab(t, tok_path, &L);
    } else if (file_exists(txt_path) || !file_exists(json_path)) {
        s = steno_read_file(txt_path, TOK_MAX_FILE_BYTES, &buf, &len);
        if (s == STENO_OK) s = vocab_from_txt(txt_path, buf, len, &L);
    } else {
        s = steno_read_file(json_path, TOK_MAX_FILE_BYTES, &buf, &len);
        if (s == STENO_OK) {
            vjson = cJSON_ParseWithLength(buf, len);
            if (!vjson) s = steno_fail(STENO_E_FORMAT, "%s: not JSON", json_path);
            else s = vocab_from_json(json_path, vjson, &L);
        }
    }
    if (s == STENO_OK && !t->arena) s = build_vocab(t, file_exists(txt_path) ? txt_path : json_path, &L);
    free(L.s);
    free(L.n);
    cJSON_Delete(vjson);
    free(buf);
    if (s != STENO_OK) goto done;

    s = load_merges(t, tok_path);
    if (s != STENO_OK) goto done;

    int err;
    PCRE2_SIZE eoff;
    t->re = pcre2_compile((PCRE2_SPTR)wbpe_gpt2_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                          &err, &eoff, NULL);
    if (!t->re) {
        s = steno_fail(STENO_E_UNSUPPORTED, "tokenizer: PCRE2 cannot compile the GPT-2 pattern");
        goto done;
    }
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional; the interpreter is used otherwise */

done:
    free(txt_path);
    free(json_path);
    free(tok_path);
    if (s != STENO_OK) {
        steno_tokenizer_free(t);
        return s;
    }
    *out = t;
    return STENO_OK;
}

void steno_tokenizer_free(steno_tokenizer *t) {
    if (!t) return;
    free(t->arena);
    free(t->str_off);
    free(t->bytes_off);
    free(t->bytes_len);
    free(t->hash);
    free(t->merges);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

steno_status steno_tokenizer_from_ranks(const uint8_t *const *tok, const int32_t *tok_len, int n_base,
                                        const char *const *specials, int n_specials, steno_tokenizer **out) {
    *out = NULL;
    if (n_base < 256 || n_specials < 0 || n_base > (1 << 24) || n_specials > (1 << 20))
        return steno_fail(STENO_E_FORMAT, "tokenizer: a vocabulary of %d ranks", n_base);
    steno_tokenizer *t = calloc(1, sizeof *t);
    strlist L = {0};
    char *forms = NULL;
    steno_status s = STENO_OK;
    int b2u[256];
    wbpe_bytes_to_unicode(b2u);
    size_t total = 0;
    for (int i = 0; i < n_base; i++) total += (size_t)tok_len[i] * 2 + 1;
    L.count = n_base + n_specials;
    L.s = malloc((size_t)L.count * sizeof *L.s);
    L.n = malloc((size_t)L.count * sizeof *L.n);
    forms = malloc(total + 1);
    if (!t || !L.s || !L.n || !forms) {
        s = steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    size_t pos = 0;
    for (int i = 0; i < n_base; i++) { /* raw bytes → GPT-2's byte-level form */
        L.s[i] = forms + pos;
        for (int j = 0; j < tok_len[i]; j++) pos += (size_t)wbpe_utf8_encode((uint32_t)b2u[tok[i][j]], forms + pos);
        L.n[i] = (size_t)(forms + pos - L.s[i]);
    }
    for (int i = 0; i < n_specials; i++) {
        L.s[n_base + i] = specials[i];
        L.n[n_base + i] = strlen(specials[i]);
    }
    if ((s = build_vocab(t, "tokenizer ranks", &L)) != STENO_OK) goto done;
    /* tiktoken merges the adjacent pair whose concatenation has the lowest rank: every split of a
     * token into two tokens is a merge of that token's rank (transformers'
     * convert_slow_tokenizer.py: TikTokenConverter.extract_vocab_merges_from_model does the same). */
    size_t n_m = 0;
    for (int i = 0; i < n_base; i++) n_m += tok_len[i] > 1 ? (size_t)tok_len[i] - 1 : 0;
    t->merges_cap = 1;
    while (t->merges_cap < n_m * 2 + 2) t->merges_cap <<= 1;
    t->merges = calloc(t->merges_cap, sizeof *t->merges);
    if (!t->merges) {
        s = steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    int n_merges = 0;
    for (int i = 0; i < n_base; i++) {
        const char *f = L.s[i];
        const size_t n = L.n[i];
        for (size_t k = 1; k < n; k++) {
            if (((unsigned char)f[k] & 0xC0) == 0x80) continue; /* split between characters only */
            const int a = wbpe_vocab_lookup(t, f, k), b = wbpe_vocab_lookup(t, f + k, n - k);
            if (a < 0 || b < 0 || a >= n_base || b >= n_base) continue;
            wbpe_merge_insert(t, a, b, i, i);
            n_merges++;
        }
    }
    t->n_merges = n_merges;
    int err;
    PCRE2_SIZE eoff;
    t->re = pcre2_compile((PCRE2_SPTR)wbpe_gpt2_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
    if (!t->re) {
        s = steno_fail(STENO_E_UNSUPPORTED, "tokenizer: PCRE2 cannot compile the GPT-2 pattern");
        goto done;
    }
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
done:
    free(L.s);
    free(L.n);
    free(forms);
    if (s != STENO_OK) {
        steno_tokenizer_free(t);
        return s;
    }
    *out = t;
    return STENO_OK;
}
