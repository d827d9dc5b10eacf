/* wtab_ggml.c — a whisper.cpp ggml Whisper file as a weight table (wtab_readers.h).
 *
 * Layout (whisper.cpp src/whisper.cpp: whisper_model_load; models/convert-pt-to-ggml.py), all
 * little-endian int32 unless said:
 *   magic 0x67676d6c; hparams n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
 *   n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype (% 1000: the quantization
 *   version is ftype / 1000);
 *   mel filters: n_mel, n_fft, n_mel × n_fft float32;
 *   vocabulary: n_words, n_words × { u32 len, len bytes } (tiktoken ranks 0 .. n_words-1);
 *   tensors to the end of the file: { n_dims, name_len, ttype, ne[n_dims] (fastest axis first),
 *   name, data } with ttype a ggml_type: 0 f32, 1 f16, 2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1, 8 q8_0.
 * Tensor data follows its header unaligned, as whisper.cpp reads it. The conv biases, written as
 * [n_state][1], are views of shape [n_state]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/wtab/wtab_readers.h"

#define GGML_MAGIC 0x67676d6cu

typedef struct {
    const uint8_t *p;
    size_t len, off;
} cur;

static int rd_i32(cur *c, int32_t *v) {
    if (c->len - c->off < 4) return 0;
    memcpy(v, c->p + c->off, 4);
    c->off += 4;
    return 1;
}

static int ggml_type(int32_t t, wt_dtype *d) {
    switch (t) {
    case 0: *d = WT_F32; return 1;
    case 1: *d = WT_F16; return 1;
    case 2: *d = WT_Q4_0; return 1;
    case 3: *d = WT_Q4_1; return 1;
    case 6: *d = WT_Q5_0; return 1;
    case 7: *d = WT_Q5_1; return 1;
    case 8: *d = WT_Q8_0; return 1;
    default: return 0;
    }
}

steno_status wtab_read_ggml(const char *path, wtab **out) {
    *out = NULL;
    wtab *w = wtab_new("ggml", path);
    if (!w) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    steno_status st;
    cur c = {0};
    if ((st = wtab_map_file(w, path, &c.p, &c.len)) != STENO_OK) goto fail;
    int32_t magic = 0, hp[11];
    if (!rd_i32(&c, &magic) || (uint32_t)magic != GGML_MAGIC) {
        st = steno_fail(STENO_E_FORMAT, "%s: not a whisper.cpp ggml file (bad magic)", path);
        goto fail;
    }
    for (int i = 0; i < 11; i++)
        if (!rd_i32(&c, &hp[i])) goto truncated;
    whisper_dims *d = &w->dims;
    d->n_vocab = hp[0], d->n_audio_ctx = hp[1], d->n_audio_state = hp[2], d->n_audio_head = hp[3];
    d->n_audio_layer = hp[4], d->n_text_ctx = hp[5], d->n_text_state = hp[6], d->n_text_head = hp[7];
    d->n_text_layer = hp[8], d->n_mels = hp[9];
    w->ggml_ftype = hp[10] % 1000;
    for (int i = 0; i < 10; i++)
        if (hp[i] <= 0 || hp[i] > (1 << 24)) {
            st = steno_fail(STENO_E_FORMAT, "%s: hyperparameter %d is out of range (%d)", path, i, hp[i]);
            goto fail;
        }
    int32_t n_mel = 0, n_fft = 0;
    if (!rd_i32(&c, &n_mel) || !rd_i32(&c, &n_fft)) goto truncated;
    if (n_mel <= 0 || n_fft <= 0 || n_mel > 1024 || n_fft > 65536 ||
        (size_t)n_mel * (size_t)n_fft * 4 > c.len - c.off) {
        st = steno_fail(STENO_E_FORMAT, "%s: mel filters of %d × %d do not fit the file", path, n_mel, n_fft);
        goto fail;
    }
    if (n_fft != 201 || n_mel != d->n_mels) {
        st = steno_fail(STENO_E_FORMAT, "%s: mel filters are %d × %d, expected %d × 201", path, n_mel, n_fft,
                        d->n_mels);
        goto fail;
    }
    if (((uintptr_t)(c.p + c.off) & 3) == 0) {
        w->mel_filters = (const float *)(const void *)(c.p + c.off);
    } else { /* unaligned in the mapping: an owned copy */
        float *f = malloc((size_t)n_mel * 201 * sizeof *f);
        if (!f || wtab_own(w, f, 0) != 0) {
            st = steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        memcpy(f, c.p + c.off, (size_t)n_mel * 201 * sizeof *f);
        w->mel_filters = f;
    }
    w->n_mel_filters = n_mel;
    c.off += (size_t)n_mel * (size_t)n_fft * 4;
    int32_t n_words = 0;
    if (!rd_i32(&c, &n_words)) goto truncated;
    if (n_words <= 256 || n_words > d->n_vocab) {
        st = steno_fail(STENO_E_FORMAT, "%s: vocabulary of %d words (model has %d tokens)", path, n_words, d->n_vocab);
        goto fail;
    }
    w->tok = malloc((size_t)n_words * sizeof *w->tok);
    w->tok_len = malloc((size_t)n_words * sizeof *w->tok_len);
    if (!w->tok || !w->tok_len) {
        st = steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (int i = 0; i < n_words; i++) {
        int32_t len = 0;
        if (!rd_i32(&c, &len)) goto truncated;
        if (len < 0 || (size_t)len > c.len - c.off || len > 1024) {
            st = steno_fail(STENO_E_FORMAT, "%s: vocabulary word %d has a bad length (%d)", path, i, len);
            goto fail;
        }
        w->tok[i] = c.p + c.off;
        w->tok_len[i] = len;
        c.off += (size_t)len;
    }
    w->n_tok = n_words;
    while (c.off < c.len) {
        int32_t nd = 0, nl = 0, tt = 0, ne[4] = {1, 1, 1, 1};
        if (!rd_i32(&c, &nd) || !rd_i32(&c, &nl) || !rd_i32(&c, &tt)) goto truncated;
        wt_dtype dt;
        if (nd < 1 || nd > 4 || nl <= 0 || nl > 255 || !ggml_type(tt, &dt)) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor header at byte %zu is malformed (dims %d, name length %d, type %d)",
                            path, c.off - 12, nd, nl, tt);
            goto fail;
        }
        for (int i = 0; i < nd; i++)
            if (!rd_i32(&c, &ne[i])) goto truncated;
        if ((size_t)nl > c.len - c.off) goto truncated;
        char name[256];
        memcpy(name, c.p + c.off, (size_t)nl);
        name[nl] = '\0';
        c.off += (size_t)nl;
        if (memchr(name, '\0', (size_t)nl)) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor name with a NUL byte", path);
            goto fail;
        }
        int64_t dims[4];
        int rank = nd;
        for (int i = 0; i < nd; i++) dims[i] = ne[nd - 1 - i];
        if (rank == 2 && dims[1] == 1 && strstr(name, "conv") && strstr(name, ".bias")) rank = 1;
        if ((st = wtab_add(w, name, dt, rank, dims, c.p + c.off, c.len - c.off)) != STENO_OK) goto fail;
        c.off += w->t[w->n - 1].n_bytes;
    }
    w->have_dims = 1;
    if ((st = wtab_dims_from_shapes(w)) != STENO_OK) goto fail;
    *out = w;
    return STENO_OK;
truncated:
    st = steno_fail(STENO_E_FORMAT, "%s: truncated at byte %zu", path, c.off);
fail:
    wtab_free(w);
    return st;
}
