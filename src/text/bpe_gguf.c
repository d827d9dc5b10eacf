/* bpe_gguf.c — byte-level BPE (GPT-2 style) from GGUF metadata, for one raw-text fragment.
 *
 * Pre-tokenizer: the regexes llama.cpp uses for tokenizer.ggml.pre (src/llama-vocab.cpp,
 * llm_tokenizer_bpe constructor), applied as unicode_regex_split does: each expression splits every
 * piece left by the previous one into its matches and the text between them. PCRE2 (UTF + Unicode
 * properties) evaluates the expressions; each piece is matched on its own, so a lookahead never
 * sees past the piece.
 * Merges (llm_tokenizer_bpe_session::tokenize): the piece's bytes are mapped to GPT-2's
 * bytes_to_unicode characters, then adjacent symbols are merged lowest merge rank first (leftmost on
 * ties) while "left right" is in tokenizer.ggml.merges; each final symbol is a token (or, if not in
 * the vocabulary, its bytes' tokens).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "text/bigram_heap.h"
#include "text/llm_vocab.h"

#define PRE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

typedef struct {
    const char *names[12]; /* tokenizer.ggml.pre values, NULL-terminated */
    const char *exprs[5];  /* NULL-terminated */
} pre_def;

static const pre_def PRE_DEFS[] = {
    /* LLAMA_VOCAB_PRE_TYPE_STARCODER/REFACT/COMMAND_R/SMOLLM/CODESHELL/EXAONE/MINERVA */
    {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", NULL},
     {"\\p{N}", PRE_GPT2, NULL}},
    /* LLAMA_VOCAB_PRE_TYPE_GPT2/MPT/OLMO/JAIS */
    {{"gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", NULL}, {PRE_GPT2, NULL}},
    /* LLAMA_VOCAB_PRE_TYPE_LLAMA3 (llama.cpp's adapted expression) */
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", NULL},
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
    /* LLAMA_VOCAB_PRE_TYPE_QWEN2 */
    {{"qwen2", NULL},
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
    /* LLAMA_VOCAB_PRE_TYPE_DEFAULT */
    {{"default", NULL}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", PRE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL}},
};

int steno_bpe_init_pre(steno_vocab *v, const char *pre) {
    const pre_def *def = NULL;
    for (size_t k = 0; k < sizeof PRE_DEFS / sizeof PRE_DEFS[0] && !def; k++)
        for (int j = 0; PRE_DEFS[k].names[j]; j++)
            if (strcmp(PRE_DEFS[k].names[j], pre) == 0) {
                def = &PRE_DEFS[k];
                break;
            }
    if (!def) return -1;
    const char *const *exprs = def->exprs;
    int n = 0;
    while (n < 5 && exprs[n]) n++;
    v->regex = calloc((size_t)n, sizeof(void *));
    if (!v->regex) return -1;
    v->pre = strdup(pre);
    for (int i = 0; i < n; i++) {
        int err;
        PCRE2_SIZE eoff;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)exprs[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                       &err, &eoff, NULL);
        if (!re) return -1;
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
        v->regex[v->n_regex++] = re;
    }
    return 0;
}

void steno_bpe_free_pre(steno_vocab *v) {
    for (int i = 0; i < v->n_regex; i++) pcre2_code_free((pcre2_code *)v->regex[i]);
    free(v->regex);
    v->regex = NULL;
    v->n_regex = 0;
}

typedef struct {
    size_t *off, *len;
    int n, cap;
} pieces;

static int piece_push(pieces *p, size_t off, size_t len) {
    if (p->n == p->cap) {
        int nc = p->cap ? p->cap * 2 : 32;
        size_t *a = realloc(p->off, (size_t)nc * sizeof(size_t));
        if (!a) return -1;
        p->off = a;
        size_t *b = realloc(p->len, (size_t)nc * sizeof(size_t));
        if (!b) return -1;
        p->len = b;
        p->cap = nc;
    }
    p->off[p->n] = off;
    p->len[p->n] = len;
    p->n++;
    return 0;
}

/* Splits each piece of in by re into out (matches and the gaps between them). */
static int split(pcre2_code *re, const char *text, const pieces *in, pieces *out) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return -1;
    int rc = 0;
    for (int i = 0; i < in->n && rc == 0; i++) {
        const char *s = text + in->off[i];
        size_t n = in->len[i], pos = 0, last = 0;
        while (pos <= n) {
            int m = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (m < 0) break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) { /* empty match: step one character */
                pos = ms + 1;
                while (pos < n && ((unsigned char)s[pos] & 0xC0) == 0x80) pos++;
                continue;
            }
            if (ms > last && piece_push(out, in->off[i] + last, ms - last) != 0) { rc = -1; break; }
            if (piece_push(out, in->off[i] + ms, me - ms) != 0) { rc = -1; break; }
            last = pos = me;
        }
        if (rc == 0 && last < n && piece_push(out, in->off[i] + last, n - last) != 0) rc = -1;
    }
    pcre2_match_data_free(md);
    return rc;
}

typedef struct {
    int start, n; /* byte range in the mapped word */
    int prev, next;
} bsym;

static int add_bigram(const steno_vocab *v, const char *w, const bsym *s, text_bigram_heap *h, int left, int right,
                      char *tmp) {
    if (left < 0 || right < 0) return 0;
    int ln = s[left].n, rn = s[right].n;
    memcpy(tmp, w + s[left].start, (size_t)ln);
    tmp[ln] = ' ';
    memcpy(tmp + ln + 1, w + s[right].start, (size_t)rn);
    int rank = steno_strmap_get(v->merges, tmp, (size_t)(ln + 1 + rn));
    if (rank < 0) return 0;
    return text_bigram_push(h, (text_bigram){left, right, ln + rn, -(double)rank});
}

/* Maps one pre-tokenized word's bytes to byte-level characters and runs the merges. */
static int bpe_word(const steno_vocab *v, const unsigned char *b, size_t n, steno_ivec *out) {
    int rc = -1;
    char *w = malloc(n * 2 + 1), *tmp = malloc(n * 4 + 2);
    bsym *s = malloc((n ? n : 1) * sizeof *s);
    text_bigram_heap h = {0};
    if (!w || !tmp || !s) goto done;
    int wl = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        int tok = v->byte_tok[b[i]];
        /* the byte's character (1 or 2 UTF-8 bytes); byte_tok's text is exactly that character */
        const char *ch = tok >= 0 ? v->text[tok] : NULL;
        int cl = tok >= 0 ? v->len[tok] : 0;
        if (!ch) { /* vocabulary without this byte: keep the raw byte */
            w[wl] = (char)b[i];
            cl = 1;
        } else {
            memcpy(w + wl, ch, (size_t)cl);
        }
        s[ns].start = wl;
        s[ns].n = cl;
        s[ns].prev = ns - 1;
        s[ns].next = i + 1 == n ? -1 : ns + 1;
        wl += cl;
        ns++;
    }
    for (int i = 1; i < ns; i++)
        if (add_bigram(v, w, s, &h, i - 1, i, tmp) != 0) goto done;
    while (h.n > 0) {
        text_bigram g = text_bigram_pop(&h);
        bsym *l = &s[g.left], *r = &s[g.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != g.size || l->next != g.right) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = g.left;
        if (add_bigram(v, w, s, &h, l->prev, g.left, tmp) != 0) goto done;
        if (add_bigram(v, w, s, &h, g.left, l->next, tmp) != 0) goto done;
    }
    for (int i = ns > 0 ? 0 : -1; i != -1; i = s[i].next) {
        if (s[i].n == 0) continue;
        int id = steno_vocab_find(v, w + s[i].start, (size_t)s[i].n);
        if (id >= 0) {
            if (steno_ivec_push(out, id) != 0) goto done;
            continue;
        }
        /* not a token: one token per UTF-8 character (each is a byte-level char) */
        for (int j = s[i].start; j < s[i].start + s[i].n;) {
            int cl = text_utf8_len((unsigned char)w[j]);
            if (j + cl > s[i].start + s[i].n) cl = s[i].start + s[i].n - j;
            int t = steno_vocab_find(v, w + j, (size_t)cl);
            if (t < 0) t = v->unk >= 0 ? v->unk : 0;
            if (steno_ivec_push(out, t) != 0) goto done;
            j += cl;
        }
    }
    rc = 0;
done:
    text_bigram_heap_free(&h);
    free(s);
    free(tmp);
    free(w);
    return rc;
}

int steno_bpe_tokenize(const steno_vocab *v, const char *text, size_t len, steno_ivec *out) {
    pieces a = {0}, b = {0};
    int rc = -1;
    if (len == 0) return 0;
    if (piece_push(&a, 0, len) != 0) goto done;
    for (int r = 0; r < v->n_regex; r++) {
        b.n = 0;
        if (split((pcre2_code *)v->regex[r], text, &a, &b) != 0) goto done;
        pieces t = a;
        a = b;
        b = t;
    }
    for (int i = 0; i < a.n; i++)
        if (bpe_word(v, (const unsigned char *)text + a.off[i], a.len[i], out) != 0) goto done;
    rc = 0;
done:
    free(a.off);
    free(a.len);
    free(b.off);
    free(b.len);
    return rc;
}
