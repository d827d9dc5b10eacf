/* spm.c — SentencePiece-style BPE over UTF-8 characters with byte fallback, for one raw-text
 * fragment. llama.cpp src/llama-vocab.cpp llm_tokenizer_spm_session::tokenize (which is also what
 * llama2.c run.c encode() computes): start from UTF-8 characters, repeatedly merge the adjacent
 * pair whose concatenation is a token with the highest score (leftmost first on ties), then emit
 * each symbol's token, or its bytes as <0xXX> tokens when the symbol is not in the vocabulary.
 * With escape_whitespace, ' ' is written as U+2581 first. */
#include <stdlib.h>
#include <string.h>

#include "text/bigram_heap.h"
#include "text/llm_vocab.h"

typedef struct {
    const char *text;
    int n;
    int prev, next;
} sym;

static int try_add(const steno_vocab *v, sym *s, text_bigram_heap *h, int left, int right) {
    if (left < 0 || right < 0) return 0;
    int id = steno_vocab_find(v, s[left].text, (size_t)(s[left].n + s[right].n));
    if (id < 0) return 0;
    return text_bigram_push(h, (text_bigram){left, right, s[left].n + s[right].n, v->score[id]});
}

int steno_spm_tokenize(const steno_vocab *v, const char *text, size_t len, steno_ivec *out) {
    char *esc = NULL;
    if (v->escape_whitespace) {
        size_t spaces = 0;
        for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
        esc = malloc(len + 2 * spaces + 1);
        if (!esc) return -1;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (text[i] == ' ') {
                esc[o++] = (char)0xE2;
                esc[o++] = (char)0x96;
                esc[o++] = (char)0x81;
            } else {
                esc[o++] = text[i];
            }
        }
        text = esc;
        len = o;
    }
    int rc = -1;
    sym *s = malloc((len ? len : 1) * sizeof *s);
    text_bigram_heap h = {0};
    if (!s) goto done;
    int ns = 0;
    for (size_t off = 0; off < len;) {
        int l = text_utf8_len((unsigned char)text[off]);
        if ((size_t)l > len - off) l = (int)(len - off);
        s[ns].text = text + off;
        s[ns].n = l;
        s[ns].prev = ns - 1;
        off += (size_t)l;
        s[ns].next = off == len ? -1 : ns + 1;
        ns++;
    }
    for (int i = 1; i < ns; i++)
        if (try_add(v, s, &h, i - 1, i) != 0) goto done;
    while (h.n > 0) {
        text_bigram b = text_bigram_pop(&h);
        sym *l = &s[b.left], *r = &s[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = b.left;
        if (try_add(v, s, &h, l->prev, b.left) != 0) goto done;
        if (try_add(v, s, &h, b.left, l->next) != 0) goto done;
    }
    for (int i = ns > 0 ? 0 : -1; i != -1; i = s[i].next) {
        if (s[i].n == 0) continue;
        int id = steno_vocab_find(v, s[i].text, (size_t)s[i].n);
        if (id >= 0) {
            if (steno_ivec_push(out, id) != 0) goto done;
            continue;
        }
        for (int j = 0; j < s[i].n; j++) {
            int bt = v->byte_tok[(unsigned char)s[i].text[j]];
            if (bt < 0) bt = v->unk >= 0 ? v->unk : 0;
            if (steno_ivec_push(out, bt) != 0) goto done;
        }
    }
    rc = 0;
done:
    text_bigram_heap_free(&h);
    free(s);
    free(esc);
    return rc;
}
