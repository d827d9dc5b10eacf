/* whisper_bpe.c — Whisper's byte-level BPE tokenizer (see whisper_bpe.h).
 *
 * Tables:
 *   - every token's string as written in vocabulary.txt ("Ġthe"; GPT-2 byte↔unicode form) and its
 *     raw bytes (" the"), both in one arena;
 *   - a string→id hash over the vocabulary form (used by token_id and BPE);
 *   - a (left id, right id)→(rank, merged id) hash built from tokenizer.json model.merges.
 * Encoding = GPT-2 pre-tokenizer regex (PCRE2, UTF + UCP) → bytes → base tokens → BPE merges by
 * lowest rank (leftmost first on ties), which is what HF tokenizers' BPE and tiktoken both compute.
 */
#include "text/whisper_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/file.h"

#define TOK_MAX_FILE_BYTES (512u << 20)

/* GPT-2's pre-tokenizer pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * with \s spelled out as the Unicode White_Space property, which is what \s means in the
 * reference engines (HF tokenizers' Oniguruma, tiktoken's Rust regex). PCRE2's \s under UCP is
 * \p{Zs} + \h + \v, and its \h still lists U+180E MONGOLIAN VOWEL SEPARATOR (a Cf character
 * since Unicode 6.3), which would split "\u180e'm" differently. */
#define WS_CHARS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS_CHARS
                                   "\\p{L}\\p{N}]+|[" WS_CHARS "]+(?![^" WS_CHARS "])|[" WS_CHARS
                                   "]+";

typedef struct {
    uint64_t key;   /* (left << 32) | right; 0 = empty slot (ids are never both 0 and merged) */
    int32_t rank;
    int32_t merged;
} merge_slot;

struct steno_tokenizer {
    int n_vocab;
    char *arena;          /* vocab-form strings then byte-form strings, NUL-separated */
    size_t *str_off;      /* vocab-form string of id i: arena + str_off[i] (NUL-terminated) */
    size_t *bytes_off;    /* raw bytes of id i: arena + bytes_off[i], length bytes_len[i] */
    uint32_t *bytes_len;
    int32_t *hash;        /* open addressing over vocab-form strings: id or -1 */
    size_t hash_cap;      /* power of two */
    merge_slot *merges;
    size_t merges_cap;    /* power of two */
    int n_merges;
    int base_id[256];     /* id of the single-byte token of each byte */
    int eot;              /* id of <|endoftext|> (skip_special threshold) */
    pcre2_code *re;
};

/* ------------------------------------------------------------------------------------------- */
/* GPT-2 bytes_to_unicode                                                                        */

/* byte → code point (GPT-2's bytes_to_unicode); printable Latin-1 bytes map to themselves, the
 * others to 256, 257, ... in byte order. */
static void bytes_to_unicode(int b2u[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        b2u[b] = keep ? b : 256 + n++;
    }
}

/* Decodes one UTF-8 sequence strictly (no overlongs, surrogates, > U+10FFFF). Returns its length
 * (1..4) and sets *cp, or 0 when invalid/truncated. */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

static int utf8_valid(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int l = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!l) return 0;
        i += (size_t)l;
    }
    return 1;
}

static int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3; /* only code points < 0x10000 are produced here */
}

/* ------------------------------------------------------------------------------------------- */
/* Hashes                                                                                        */

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int vocab_lookup(const steno_tokenizer *t, const char *s, size_t n) {
    if (!t->hash) return -1;
    size_t mask = t->hash_cap - 1;
    for (size_t i = fnv1a(s, n) & mask;; i = (i + 1) & mask) {
        int32_t id = t->hash[i];
        if (id < 0) return -1;
        const char *k = t->arena + t->str_off[id];
        if (strncmp(k, s, n) == 0 && k[n] == '\0') return id;
    }
}

/* Inserts id (first occurrence of a string wins, like a dict built in id order would not — but
 * vocabularies have unique strings; a duplicate keeps the lower id). */
static void vocab_insert(steno_tokenizer *t, int id) {
    const char *k = t->arena + t->str_off[id];
    size_t n = strlen(k);
    size_t mask = t->hash_cap - 1;
    for (size_t i = fnv1a(k, n) & mask;; i = (i + 1) & mask) {
        if (t->hash[i] < 0) {
            t->hash[i] = id;
            return;
        }
        if (strcmp(t->arena + t->str_off[t->hash[i]], k) == 0) return;
    }
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t merge_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static const merge_slot *merge_lookup(const steno_tokenizer *t, int a, int b) {
    if (!t->merges) return NULL;
    uint64_t key = merge_key(a, b) + 1; /* +1 keeps 0 free as the empty marker */
    size_t mask = t->merges_cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (t->merges[i].key == 0) return NULL;
        if (t->merges[i].key == key) return &t->merges[i];
    }
}

static void merge_insert(steno_tokenizer *t, int a, int b, int rank, int merged) {
    uint64_t key = merge_key(a, b) + 1;
    size_t mask = t->merges_cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        if (t->merges[i].key == 0) {
            t->merges[i].key = key;
            t->merges[i].rank = rank;
            t->merges[i].merged = merged;
            return;
        }
        if (t->merges[i].key == key) return; /* keep the lowest rank */
    }
}

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
            if (!utf8_valid(buf + start, n))
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
        if (!utf8_valid(out->s[i], out->n[i])) return steno_fail(STENO_E_FORMAT, "%s: token %d: invalid UTF-8", path, i);
    return STENO_OK;
}

/* Builds the arena, offsets, byte forms and the string hash from the token list. */
static steno_status build_vocab(steno_tokenizer *t, const char *path, const strlist *L) {
    int b2u[256], u2b[512];
    bytes_to_unicode(b2u);
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
            int l = utf8_decode(s + j, n - j, &cp);
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
    for (int i = 0; i < L->count; i++) vocab_insert(t, i);

    for (int b = 0; b < 256; b++) {
        char u[4];
        int l = utf8_encode((uint32_t)b2u[b], u);
        t->base_id[b] = vocab_lookup(t, u, (size_t)l);
        if (t->base_id[b] < 0)
            return steno_fail(STENO_E_FORMAT,
                              "%s: not a byte-level BPE vocabulary (no token for byte 0x%02x)",
                              path, b);
    }
    t->eot = vocab_lookup(t, "<|endoftext|>", 13);
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
    char *buf;
    size_t len;
    steno_status s = steno_read_file(path, TOK_MAX_FILE_BYTES, &buf, &len);
    if (s != STENO_OK) return s;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        int line = 1;
        const char *stop = end && end >= buf && end <= buf + len ? end : buf + len;
        for (const char *p = buf; p < stop; p++)
            if (*p == '\n') line++;
        free(buf);
        return steno_fail(STENO_E_FORMAT, "%s: not JSON (line %d)", path, line);
    }
    free(buf);

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
            int id = vocab_lookup(t, it->string, strlen(it->string));
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
        int ia = vocab_lookup(t, a, na), ib = vocab_lookup(t, b, nb);
        memcpy(tmp, a, na);
        memcpy(tmp + na, b, nb);
        int im = vocab_lookup(t, tmp, na + nb);
        if (ia < 0 || ib < 0 || im < 0) {
            s = steno_fail(STENO_E_FORMAT, "%s: model.merges[%d] uses a token not in the vocabulary",
                           path, rank);
            break;
        }
        merge_insert(t, ia, ib, rank, im);
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
    t->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
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

/* ------------------------------------------------------------------------------------------- */
/* Lookup / decode                                                                               */

int steno_tokenizer_n_vocab(const steno_tokenizer *t) { return t ? t->n_vocab : 0; }

int steno_tokenizer_token_id(const steno_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    return vocab_lookup(t, token, strlen(token));
}

const char *steno_tokenizer_token_bytes(const steno_tokenizer *t, int id, size_t *len) {
    if (!t || id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->bytes_len[id];
    return t->arena + t->bytes_off[id];
}

char *steno_tokenizer_decode(const steno_tokenizer *t, const int *ids, int n, int skip_special) {
    if (!t) return NULL;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= t->n_vocab) continue; /* invalid ids contribute nothing */
        if (skip_special && id >= t->eot) continue;
        total += t->bytes_len[id];
    }
    char *out = malloc(total + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= t->n_vocab) continue;
        if (skip_special && id >= t->eot) continue;
        memcpy(out + o, t->arena + t->bytes_off[id], t->bytes_len[id]);
        o += t->bytes_len[id];
    }
    out[o] = '\0';
    return out;
}

/* ------------------------------------------------------------------------------------------- */
/* Encode                                                                                        */

typedef struct {
    int *v;
    int n, cap;
} ivec;

static int ivec_push(ivec *a, int x) {
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 64;
        int *nv = realloc(a->v, (size_t)nc * sizeof *nv);
        if (!nv) return 0;
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = x;
    return 1;
}

/* BPE over one pre-token piece; appends its ids to out. sym is scratch of at least n ints. */
static int bpe_piece(const steno_tokenizer *t, const unsigned char *p, size_t n, int *sym,
                     ivec *out) {
    size_t m = n;
    for (size_t i = 0; i < n; i++) sym[i] = t->base_id[p[i]];
    while (m > 1) {
        int best_rank = INT32_MAX, best_merged = -1;
        size_t best_i = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            const merge_slot *ms = merge_lookup(t, sym[i], sym[i + 1]);
            if (ms && ms->rank < best_rank) {
                best_rank = ms->rank;
                best_merged = ms->merged;
                best_i = i;
            }
        }
        if (best_merged < 0) break;
        /* merge every non-overlapping occurrence of the best pair, left to right (GPT-2 bpe()) */
        int a = sym[best_i], b = sym[best_i + 1];
        size_t w = 0;
        for (size_t i = 0; i < m;) {
            if (i >= best_i && i + 1 < m && sym[i] == a && sym[i + 1] == b) {
                sym[w++] = best_merged;
                i += 2;
            } else {
                sym[w++] = sym[i++];
            }
        }
        m = w;
    }
    for (size_t i = 0; i < m; i++)
        if (!ivec_push(out, sym[i])) return 0;
    return 1;
}

steno_status steno_tokenizer_encode(const steno_tokenizer *t, const char *text, int **ids, int *n) {
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!t || !text || !ids || !n) return steno_fail(STENO_E_INVALID_ARG, "tokenizer: NULL argument");
    size_t len = strlen(text);
    if (!utf8_valid(text, len))
        return steno_fail(STENO_E_INVALID_ARG, "tokenizer: text is not valid UTF-8");
    if (len > (size_t)INT32_MAX / 2)
        return steno_fail(STENO_E_INVALID_ARG, "tokenizer: text too long (%zu bytes)", len);

    ivec out = {0};
    int *sym = NULL;
    size_t sym_cap = 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) return steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
    steno_status s = STENO_OK;
    size_t off = 0;
    while (off < len) {
        int rc = pcre2_match(t->re, (PCRE2_SPTR)text, len, off, PCRE2_NO_UTF_CHECK, md, NULL);
        size_t a, b;
        if (rc < 0) { /* cannot happen: every character matches one alternative */
            a = off;
            b = len;
        } else {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            a = ov[0];
            b = ov[1];
            if (b <= a) { /* empty match: impossible with this pattern; step one character */
                b = a + 1;
                while (b < len && ((unsigned char)text[b] & 0xC0) == 0x80) b++;
            }
        }
        /* bytes between off and a (if the regex ever skipped any) form their own piece */
        size_t pieces[2][2] = {{off, a}, {a, b}};
        for (int k = 0; k < 2; k++) {
            size_t pa = pieces[k][0], pb = pieces[k][1];
            if (pb <= pa) continue;
            size_t pn = pb - pa;
            if (pn > sym_cap) {
                int *ns = realloc(sym, pn * sizeof *ns);
                if (!ns) {
                    s = steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
                    goto done;
                }
                sym = ns;
                sym_cap = pn;
            }
            if (!bpe_piece(t, (const unsigned char *)text + pa, pn, sym, &out)) {
                s = steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
                goto done;
            }
        }
        off = b;
    }
done:
    pcre2_match_data_free(md);
    free(sym);
    if (s != STENO_OK) {
        free(out.v);
        return s;
    }
    if (!out.v) { /* empty text: return a valid (empty) allocation */
        out.v = malloc(sizeof *out.v);
        if (!out.v) return steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
    }
    *ids = out.v;
    *n = out.n;
    return STENO_OK;
}

/* ------------------------------------------------------------------------------------------- */
/* A tokenizer from tiktoken-style ranks                                                         */

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
    bytes_to_unicode(b2u);
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
        for (int j = 0; j < tok_len[i]; j++) pos += (size_t)utf8_encode((uint32_t)b2u[tok[i][j]], forms + pos);
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
            const int a = vocab_lookup(t, f, k), b = vocab_lookup(t, f + k, n - k);
            if (a < 0 || b < 0 || a >= n_base || b >= n_base) continue;
            merge_insert(t, a, b, i, i);
            n_merges++;
        }
    }
    t->n_merges = n_merges;
    int err;
    PCRE2_SIZE eoff;
    t->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
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

const char *steno_tokenizer_token_str(const steno_tokenizer *t, int id) {
    if (!t || id < 0 || id >= t->n_vocab) return NULL;
    return t->arena + t->str_off[id];
}

static int cmp_merge(const void *a, const void *b) {
    const int *x = a, *y = b; /* (rank, left, right) */
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1]) return x[1] < y[1] ? -1 : 1;
    return x[2] < y[2] ? -1 : x[2] > y[2];
}

steno_status steno_tokenizer_merges(const steno_tokenizer *t, int (**pairs)[2], int *n) {
    *pairs = NULL;
    *n = 0;
    int (*tmp)[3] = malloc((size_t)(t->n_merges + 1) * sizeof *tmp);
    int (*out)[2] = malloc((size_t)(t->n_merges + 1) * sizeof *out);
    if (!tmp || !out) {
        free(tmp);
        free(out);
        return steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
    }
    int k = 0;
    for (size_t i = 0; i < t->merges_cap && k < t->n_merges; i++) {
        if (!t->merges[i].key) continue;
        const uint64_t key = t->merges[i].key - 1;
        tmp[k][0] = t->merges[i].rank;
        tmp[k][1] = (int)(uint32_t)(key >> 32);
        tmp[k][2] = (int)(uint32_t)key;
        k++;
    }
    qsort(tmp, (size_t)k, sizeof *tmp, cmp_merge);
    for (int i = 0; i < k; i++) out[i][0] = tmp[i][1], out[i][1] = tmp[i][2];
    free(tmp);
    *pairs = out;
    *n = k;
    return STENO_OK;
}
