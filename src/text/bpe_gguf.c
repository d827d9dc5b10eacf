/* bpe_gguf.c — byte-level BPE (GPT-2 style) from GGUF metadata, for one raw-text fragment.
 *
 * Pre-tokenizer: bpe_pre.c, llama.cpp's for tokenizer.ggml.pre.
 * Merges (llm_tokenizer_bpe_session::tokenize): the word's bytes are mapped to GPT-2's
 * bytes_to_unicode characters; with ignore_merges a word that is a token as a whole is that token;
 * otherwise adjacent symbols are merged lowest merge rank first (leftmost on ties) while
 * "left right" is in tokenizer.ggml.merges, and each final symbol is a token (or, if not in the
 * vocabulary, the tokens of its single bytes, as llama.cpp looks them up).
 * SentencePiece-style types (TEXT_PRE_RAW: gemma4, sarvam-moe, whitespace) skip the byte mapping:
 * symbols are the word's UTF-8 characters and missing bytes become <0xXX> tokens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bigram_heap.h"
#include "text/pretok/bpe_pre.h"
#include "text/llm_vocab.h"

int steno_bpe_init_pre(steno_vocab *v, const char *pre, const char **why) {
    const char *w = NULL;
    text_bpe_pre_opts o = {0};
    text_bpe_pre *p = text_bpe_pre_new(pre, &o, &w);
    if (why) *why = w;
    if (!p) return -1;
    char *name = strdup(pre);
    if (!name) {
        text_bpe_pre_free(p);
        return -1;
    }
    steno_bpe_free_pre(v);
    free(v->pre);
    v->pre = name;
    v->pre_split = p;
    v->ignore_merges = o.ignore_merges;
    v->pre_add_bos = o.add_bos;
    v->pre_raw = o.raw;
    /* llama.cpp forces BOS on for gemma4 whatever add_bos_token says */
    if ((o.raw & TEXT_PRE_FORCE_BOS) && v->bos >= 0) v->add_bos = 1;
    return 0;
}

void steno_bpe_free_pre(steno_vocab *v) {
    text_bpe_pre_free(v->pre_split);
    v->pre_split = NULL;
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
    const int raw = v->pre_raw & TEXT_PRE_RAW;
    for (size_t i = 0; raw && i < n;) { /* raw UTF-8: one symbol per character */
        int cl = text_utf8_len(b[i]);
        if ((size_t)cl > n - i) cl = (int)(n - i);
        memcpy(w + wl, b + i, (size_t)cl);
        s[ns].start = wl;
        s[ns].n = cl;
        s[ns].prev = ns - 1;
        i += (size_t)cl;
        wl += cl;
        s[ns].next = i == n ? -1 : ns + 1;
        ns++;
    }
    for (size_t i = 0; !raw && i < n; i++) {
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
    /* the whole word when it is a token: ignore_merges, or gemma4's words of newlines */
    int nl_only = (v->pre_raw & TEXT_PRE_NL_WHOLE) && wl > 0;
    for (int i = 0; nl_only && i < wl; i++) nl_only = w[i] == '\n';
    if (v->ignore_merges || nl_only) {
        int id = steno_vocab_find(v, w, (size_t)wl);
        if (id >= 0) {
            rc = steno_ivec_push(out, id);
            goto done;
        }
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
        /* not a token: llama.cpp looks up each byte of the mapped text on its own and drops
         * the ones that are not tokens (a 2-byte byte-level character never is one) */
        for (int j = s[i].start; j < s[i].start + s[i].n; j++) {
            char hex[8];
            int t = raw ? steno_vocab_find(v, hex, (size_t)snprintf(hex, sizeof hex, "<0x%02X>", (unsigned char)w[j]))
                        : steno_vocab_find(v, w + j, 1);
            if (t >= 0 && steno_ivec_push(out, t) != 0) goto done;
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
    size_t *off = NULL, *wl = NULL;
    int n = 0, rc = -1;
    if (len == 0) return 0;
    if (text_bpe_pre_split(v->pre_split, text, len, &off, &wl, &n) != 0) return -1;
    for (int i = 0; i < n; i++)
        if (bpe_word(v, (const unsigned char *)text + off[i], wl[i], out) != 0) goto done;
    rc = 0;
done:
    free(off);
    free(wl);
    return rc;
}
