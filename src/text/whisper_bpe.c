/* whisper_bpe.c — Whisper's byte-level BPE tokenizer (see whisper_bpe.h).
 *
 * Tables:
 *   - every token's string as written in vocabulary.txt ("Ġthe"; GPT-2 byte↔unicode form) and its
 *     raw bytes (" the"), both in one arena;
 *   - a string→id hash over the vocabulary form (used by token_id and BPE);
 *   - a (left id, right id)→(rank, merged id) hash built from tokenizer.json model.merges.
 * Encoding = GPT-2 pre-tokenizer regex (PCRE2, UTF + UCP) → bytes → base tokens → BPE merges by
 * lowest rank (leftmost first on ties), which is what HF tokenizers' BPE and tiktoken both compute.
 * This file holds the tables, lookup, encoding and decoding; whisper_bpe_build.c fills the tables.
 */
#include "text/whisper_bpe_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* GPT-2's pre-tokenizer pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * with \s spelled out as the Unicode White_Space property, which is what \s means in the
 * reference engines (HF tokenizers' Oniguruma, tiktoken's Rust regex). PCRE2's \s under UCP is
 * \p{Zs} + \h + \v, and its \h still lists U+180E MONGOLIAN VOWEL SEPARATOR (a Cf character
 * since Unicode 6.3), which would split "\u180e'm" differently. */
#define WS_CHARS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
const char wbpe_gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS_CHARS
                                   "\\p{L}\\p{N}]+|[" WS_CHARS "]+(?![^" WS_CHARS "])|[" WS_CHARS
                                   "]+";


/* ------------------------------------------------------------------------------------------- */
/* GPT-2 wbpe_bytes_to_unicode                                                                        */

/* byte → code point (GPT-2's wbpe_bytes_to_unicode); printable Latin-1 bytes map to themselves, the
 * others to 256, 257, ... in byte order. */
void wbpe_bytes_to_unicode(int b2u[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        b2u[b] = keep ? b : 256 + n++;
    }
}

/* Decodes one UTF-8 sequence strictly (no overlongs, surrogates, > U+10FFFF). Returns its length
 * (1..4) and sets *cp, or 0 when invalid/truncated. */
int wbpe_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
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

int wbpe_utf8_valid(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int l = wbpe_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!l) return 0;
        i += (size_t)l;
    }
    return 1;
}

int wbpe_utf8_encode(uint32_t cp, char *out) {
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

int wbpe_vocab_lookup(const steno_tokenizer *t, const char *s, size_t n) {
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
void wbpe_vocab_insert(steno_tokenizer *t, int id) {
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

void wbpe_merge_insert(steno_tokenizer *t, int a, int b, int rank, int merged) {
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
/* Lookup / decode                                                                               */

int steno_tokenizer_n_vocab(const steno_tokenizer *t) { return t ? t->n_vocab : 0; }

int steno_tokenizer_token_id(const steno_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    return wbpe_vocab_lookup(t, token, strlen(token));
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
    if (!wbpe_utf8_valid(text, len))
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
