/* llama2c.c — llama2.c checkpoint and tokenizer readers; see llama2c.h (llama2.c run.c). */
#include "formats/llama2c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/file.h"

struct llama2c_file {
    char *name;
    const uint8_t *base;
    size_t size;
    int mapped;
    llama2c_config cfg;
    llama2c_weights w;
};

/* Maps path read-only. *size 0 gives base "" (nothing mapped). */
static steno_status map_file(const char *path, const uint8_t **base, size_t *size, int *mapped) {
    static const steno_map_words words = {.open = "", .stat = "", .dir = "is a directory"};
    steno_mapped_file mf;
    steno_status s = steno_map_file(path, &words, &mf);
    if (s != STENO_OK) return s;
    *base = mf.data;
    *size = mf.size;
    *mapped = mf.mapped;
    return STENO_OK;
}

static steno_status parse_checkpoint(llama2c_file *f) {
    int32_t h[7];
    if (f->size < sizeof h)
        return steno_fail(STENO_E_FORMAT, "%s: %zu bytes is too small for a llama2.c checkpoint (28-byte header)",
                          f->name, f->size);
    memcpy(h, f->base, sizeof h);
    if (memcmp(f->base, "24ka", 4) == 0 || h[0] == 0x616b3432)
        return steno_fail(STENO_E_UNSUPPORTED,
                          "%s: versioned llama2.c checkpoint (magic \"ak42\"); only the legacy format is supported",
                          f->name);
    llama2c_config *c = &f->cfg;
    c->dim = h[0];
    c->hidden_dim = h[1];
    c->n_layers = h[2];
    c->n_heads = h[3];
    c->n_kv_heads = h[4];
    c->shared_classifier = h[5] > 0;
    c->vocab_size = h[5] < 0 ? (h[5] == INT32_MIN ? 0 : -h[5]) : h[5];
    c->seq_len = h[6];
    const int lim = 1 << 20;
#define BAD(cond, what, v)                                                                            \
    if (cond) return steno_fail(STENO_E_FORMAT, "%s: neither GGUF nor a llama2.c checkpoint (read as llama2.c: %s = %d)", \
                                f->name, what, v)
    BAD(c->dim <= 0 || c->dim > lim, "dim", c->dim);
    BAD(c->hidden_dim <= 0 || c->hidden_dim > lim, "hidden_dim", c->hidden_dim);
    BAD(c->n_layers <= 0 || c->n_layers > 4096, "n_layers", c->n_layers);
    BAD(c->n_heads <= 0 || c->n_heads > c->dim || c->dim % c->n_heads != 0, "n_heads", c->n_heads);
    BAD(c->n_kv_heads <= 0 || c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0, "n_kv_heads",
        c->n_kv_heads);
    BAD(c->vocab_size <= 0 || c->vocab_size > (1 << 24), "vocab_size", h[5]);
    BAD(c->seq_len <= 0 || c->seq_len > (1 << 24), "seq_len", c->seq_len);
#undef BAD
    int head_size = c->dim / c->n_heads;
    if (head_size % 2 != 0)
        return steno_fail(STENO_E_FORMAT, "%s: head size %d is odd (RoPE needs pairs)", f->name, head_size);
    uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t kv_dim = (uint64_t)c->n_kv_heads * (uint64_t)head_size, V = (uint64_t)c->vocab_size;
    /* No overflow: vocab <= 2^24, dims <= 2^20 and L <= 2^12 keep every term below 2^52 and the
     * sum below 2^56. */
    uint64_t n = V * dim;                         /* token_embedding */
    uint64_t off_rms_att = n;       n += L * dim;
    uint64_t off_wq = n;            n += L * dim * dim;
    uint64_t off_wk = n;            n += L * kv_dim * dim;
    uint64_t off_wv = n;            n += L * kv_dim * dim;
    uint64_t off_wo = n;            n += L * dim * dim;
    uint64_t off_rms_ffn = n;       n += L * dim;
    uint64_t off_w1 = n;            n += L * hid * dim;
    uint64_t off_w2 = n;            n += L * dim * hid;
    uint64_t off_w3 = n;            n += L * hid * dim;
    uint64_t off_rms_final = n;     n += dim;
    n += (uint64_t)c->seq_len * (uint64_t)head_size; /* freq_cis_real + imag: 2 × seq_len × hs/2 */
    uint64_t off_wcls = n;
    if (!c->shared_classifier) n += V * dim;
    uint64_t expect = 28 + 4 * n;
    if ((uint64_t)f->size != expect)
        return steno_fail(STENO_E_FORMAT,
                          "%s: file is %zu bytes but its header (dim %d, hidden %d, layers %d, heads %d/%d, "
                          "vocab %d, seq_len %d) needs %llu: truncated or not a llama2.c checkpoint",
                          f->name, f->size, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                          c->vocab_size, c->seq_len, (unsigned long long)expect);
    const float *p = (const float *)(f->base + 28);
    llama2c_weights *w = &f->w;
    w->token_embedding = p;
    w->rms_att = p + off_rms_att;
    w->wq = p + off_wq;
    w->wk = p + off_wk;
    w->wv = p + off_wv;
    w->wo = p + off_wo;
    w->rms_ffn = p + off_rms_ffn;
    w->w1 = p + off_w1;
    w->w2 = p + off_w2;
    w->w3 = p + off_w3;
    w->rms_final = p + off_rms_final;
    w->wcls = c->shared_classifier ? p : p + off_wcls;
    return STENO_OK;
}

static steno_status finish(llama2c_file *f, llama2c_file **out) {
    steno_status st = parse_checkpoint(f);
    if (st != STENO_OK) {
        llama2c_close(f);
        return st;
    }
    *out = f;
    return STENO_OK;
}

steno_status llama2c_open(const char *path, llama2c_file **out) {
    *out = NULL;
    llama2c_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(path))) {
        free(f);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    steno_status st = map_file(path, &f->base, &f->size, &f->mapped);
    if (st != STENO_OK) {
        free(f->name);
        free(f);
        return st;
    }
    return finish(f, out);
}

steno_status llama2c_open_buffer(const void *data, size_t size, const char *name, llama2c_file **out) {
    *out = NULL;
    /* the weights are handed out as float pointers into the image; a misaligned image would make
     * every load through them undefined behaviour (a fault on strict-alignment CPUs) */
    if ((uintptr_t)data % _Alignof(float) != 0)
        return steno_fail(STENO_E_INVALID_ARG, "%s: llama2.c image at %p is not %zu-byte aligned", name ? name : "<memory>",
                          data, (size_t)_Alignof(float));
    llama2c_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(name ? name : "<memory>"))) {
        free(f);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    f->base = size ? data : (const uint8_t *)"";
    f->size = size;
    return finish(f, out);
}

void llama2c_close(llama2c_file *f) {
    if (!f) return;
    if (f->mapped) munmap((void *)f->base, f->size);
    free(f->name);
    free(f);
}

const llama2c_config *llama2c_get_config(const llama2c_file *f) { return &f->cfg; }
const llama2c_weights *llama2c_get_weights(const llama2c_file *f) { return &f->w; }

/* ------------------------------------------------------------------------------------------- */

void llama2c_tokenizer_free(llama2c_tokenizer *t) {
    if (!t) return;
    if (t->pieces)
        for (int i = 0; i < t->n; i++) free(t->pieces[i]);
    free(t->pieces);
    free(t->scores);
    free(t->lens);
    free(t);
}

steno_status llama2c_tokenizer_load_buffer(const void *data, size_t size, const char *name,
                                           int vocab_size, llama2c_tokenizer **out) {
    *out = NULL;
    const uint8_t *p = data;
    if (vocab_size <= 0 || vocab_size > (1 << 24))
        return steno_fail(STENO_E_INVALID_ARG, "%s: invalid vocabulary size %d", name, vocab_size);
    if (size < 4)
        return steno_fail(STENO_E_FORMAT, "%s: truncated llama2.c tokenizer (%zu bytes, no header)", name, size);
    /* vocab_size comes from the checkpoint: an entry takes at least 8 bytes (score, length), so
     * check it against this file's length before it sizes three arrays */
    if ((size - 4) / 8 < (size_t)vocab_size)
        return steno_fail(STENO_E_FORMAT, "%s: truncated llama2.c tokenizer (%zu bytes cannot hold %d tokens)", name,
                          size, vocab_size);
    llama2c_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return steno_fail(STENO_E_NOMEM, "%s: out of memory", name);
    int32_t maxlen;
    memcpy(&maxlen, p, 4);
    if (maxlen <= 0 || maxlen > (1 << 16)) {
        llama2c_tokenizer_free(t);
        return steno_fail(STENO_E_FORMAT, "%s: not a llama2.c tokenizer (max_token_length %d)", name, maxlen);
    }
    t->max_token_length = maxlen;
    t->scores = malloc((size_t)vocab_size * sizeof(float));
    t->lens = malloc((size_t)vocab_size * sizeof(int));
    t->pieces = calloc((size_t)vocab_size, sizeof(char *));
    if (!t->scores || !t->lens || !t->pieces) {
        llama2c_tokenizer_free(t);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", name);
    }
    size_t pos = 4;
    for (int i = 0; i < vocab_size; i++) {
        int32_t len;
        if (size - pos < 8) {
            t->n = i;
            llama2c_tokenizer_free(t);
            return steno_fail(STENO_E_FORMAT, "%s: truncated llama2.c tokenizer (token %d of %d at byte %zu)",
                              name, i, vocab_size, pos);
        }
        memcpy(&t->scores[i], p + pos, 4);
        memcpy(&len, p + pos + 4, 4);
        pos += 8;
        if (len < 0 || len > maxlen || (size_t)len > size - pos) {
            t->n = i;
            llama2c_tokenizer_free(t);
            if (len >= 0 && len <= maxlen)
                return steno_fail(STENO_E_FORMAT, "%s: truncated llama2.c tokenizer (token %d of %d at byte %zu)",
                                  name, i, vocab_size, pos);
            return steno_fail(STENO_E_FORMAT, "%s: token %d has invalid length %d (max_token_length %d)", name, i,
                              len, maxlen);
        }
        t->pieces[i] = malloc((size_t)len + 1);
        if (!t->pieces[i]) {
            t->n = i;
            llama2c_tokenizer_free(t);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory", name);
        }
        memcpy(t->pieces[i], p + pos, (size_t)len);
        t->pieces[i][len] = '\0';
        t->lens[i] = len;
        pos += (size_t)len;
    }
    t->n = vocab_size;
    if (pos != size) {
        llama2c_tokenizer_free(t);
        return steno_fail(STENO_E_FORMAT, "%s: %zu trailing bytes after %d tokens (tokenizer for another model?)", name,
                          size - pos, vocab_size);
    }
    *out = t;
    return STENO_OK;
}

steno_status llama2c_tokenizer_load(const char *path, int vocab_size, llama2c_tokenizer **out) {
    const uint8_t *base = NULL;
    size_t size = 0;
    int mapped = 0;
    *out = NULL;
    steno_status st = map_file(path, &base, &size, &mapped);
    if (st != STENO_OK) return st;
    st = llama2c_tokenizer_load_buffer(base, size, path, vocab_size, out);
    if (mapped) munmap((void *)base, size);
    return st;
}
