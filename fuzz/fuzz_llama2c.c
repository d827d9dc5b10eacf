/* fuzz_llama2c.c — libFuzzer target for the llama2.c readers (src/formats/llama2c.c): a
 * checkpoint (llama2c_open_buffer) and its tokenizer.bin (llama2c_tokenizer_load_buffer, sized by
 * the checkpoint's vocabulary). Input: fuzz_split() parts = checkpoint, tokenizer.bin; each part
 * is copied into malloc'd memory, which is float-aligned as llama2c_open_buffer requires.
 *
 * Invariants: an opened checkpoint's config is positive and every weight pointer lies inside the
 * image (the reader checked the sizes against the length: the last float of the classifier is
 * read); a loaded tokenizer has exactly vocab_size pieces, each NUL-terminated at its length,
 * no longer than max_token_length; failures leave *out NULL with a one-line message.
 * Run: scripts/fuzz.sh llama2c 10 */
#include "formats/llama2c.h"
#include "fuzz_util.h"

static void in_image(const float *p, uint64_t n, const uint8_t *base, size_t size) {
    if (n == 0) return;
    const uint8_t *a = (const uint8_t *)p, *b = (const uint8_t *)(p + n);
    if (a < base || b > base + size) abort();
    volatile float sink = p[0] + p[n - 1];
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *ck, *tk;
    size_t nck, ntk;
    fuzz_split(data, size, &ck, &nck, &tk, &ntk);
    uint8_t *img = malloc(nck ? nck : 1), *tok = malloc(ntk ? ntk : 1);
    if (!img || !tok) abort();
    memcpy(img, ck, nck);
    memcpy(tok, tk, ntk);

    llama2c_file *f = NULL;
    if (llama2c_open_buffer(img, nck, "fuzz.bin", &f) != STENO_OK) {
        if (f || strchr(steno_errmsg(), '\n')) abort();
    } else {
        const llama2c_config *c = llama2c_get_config(f);
        if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
            c->vocab_size <= 0 || c->seq_len <= 0)
            abort();
        const llama2c_weights *w = llama2c_get_weights(f);
        const uint64_t d = (uint64_t)c->dim, V = (uint64_t)c->vocab_size;
        in_image(w->token_embedding, V * d, img, nck);
        in_image(w->rms_final, d, img, nck);
        in_image(w->wcls, V * d, img, nck);

        llama2c_tokenizer *t = NULL;
        if (llama2c_tokenizer_load_buffer(tok, ntk, "tokenizer.bin", c->vocab_size, &t) != STENO_OK) {
            if (t || strchr(steno_errmsg(), '\n')) abort();
        } else {
            if (t->n != c->vocab_size) abort();
            for (int i = 0; i < t->n; i++)
                if (t->lens[i] < 0 || t->lens[i] > t->max_token_length || strlen(t->pieces[i]) > (size_t)t->lens[i])
                    abort();
            llama2c_tokenizer_free(t);
        }
        llama2c_close(f);
    }
    free(img);
    free(tok);
    return 0;
}
