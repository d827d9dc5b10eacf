/* ggml_export.c — whisper.cpp ggml model files from a loaded Whisper model (see ggml_export.h;
 * follows whisper.cpp's models/convert-pt-to-ggml.py and src/whisper.cpp: whisper_model_load). */
#include "whisper/convert/ggml_export.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "core/error.h"
#include "core/fp16.h"
#include "formats/wtab/wtab.h"
#include "text/whisper_bpe.h"

#define GGML_FILE_MAGIC 0x67676d6c /* "ggml" */
#define GGML_TTYPE_F32 0
#define GGML_TTYPE_F16 1

typedef struct writer {
    FILE *f;
    const char *path;
    int use_f16;
    steno_status st;
    float *buf; /* conversion buffer, n_buf floats */
    size_t n_buf;
} writer;

static void put(writer *w, const void *p, size_t n) {
    if (w->st != STENO_OK || n == 0) return;
    if (fwrite(p, 1, n, w->f) != n)
        w->st = steno_fail(STENO_E_IO, "%s: write failed: %s", w->path, strerror(errno));
}

static void put_i32(writer *w, int32_t v) { put(w, &v, 4); }

/* One tensor from float32 data, or from float16 data16 when data is NULL (models loaded with
 * whisper_model_load_ex(decoder_f16) keep some matrices only as float16). shape is PyTorch's
 * order (slowest axis first), written reversed as ggml's ne[]. as_f16: the tensor is stored as
 * float16 when the file is f16 (convert-pt-to-ggml.py's rule). */
static void put_tensor16(writer *w, const char *name, const float *data, const uint16_t *data16,
                         int rank, const int64_t *shape, int as_f16) {
    if (w->st != STENO_OK) return;
    if (!data && !data16) {
        w->st = steno_fail(STENO_E_INVALID_ARG, "%s: model has no weights for %s", w->path, name);
        return;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] <= 0 || shape[i] > INT32_MAX) goto too_big;
        n *= shape[i];
        if (n > INT32_MAX) goto too_big; /* whisper.cpp counts elements in an int32 */
    }
    const int f16 = w->use_f16 && as_f16;
    const size_t len = strlen(name);
    put_i32(w, rank);
    put_i32(w, (int32_t)len);
    put_i32(w, f16 ? GGML_TTYPE_F16 : GGML_TTYPE_F32);
    for (int i = rank - 1; i >= 0; i--) put_i32(w, (int32_t)shape[i]);
    put(w, name, len);
    if (!f16 && data) {
        put(w, data, (size_t)n * sizeof(float));
        return;
    }
    if (f16 && !data && data16) {
        put(w, data16, (size_t)n * sizeof(uint16_t));
        return;
    }
    /* convert in chunks through w->buf (n_buf floats or 2·n_buf halves) */
    for (int64_t off = 0; off < n && w->st == STENO_OK; off += (int64_t)w->n_buf) {
        size_t k = (size_t)(n - off) < w->n_buf ? (size_t)(n - off) : w->n_buf;
        if (f16) {
            uint16_t *h = (uint16_t *)w->buf;
            for (size_t i = 0; i < k; i++) h[i] = wt_f32_to_f16(data[off + (int64_t)i]);
            put(w, h, k * sizeof(uint16_t));
        } else {
            for (size_t i = 0; i < k; i++) w->buf[i] = steno_fp16_to_f32(data16[off + (int64_t)i]);
            put(w, w->buf, k * sizeof(float));
        }
    }
    return;
too_big:
    w->st = steno_fail(STENO_E_UNSUPPORTED, "%s: tensor %s is too large for the ggml format",
                       w->path, name);
}

static void put_tensor(writer *w, const char *name, const float *data, int rank,
                       const int64_t *shape, int as_f16) {
    put_tensor16(w, name, data, NULL, rank, shape, as_f16);
}

static void put_vec(writer *w, const char *name, const float *data, int n) {
    const int64_t shape[1] = {n};
    put_tensor(w, name, data, 1, shape, 0);
}

static void put_mat(writer *w, const char *name, const float *data, const uint16_t *data16,
                    int rows, int cols) {
    const int64_t shape[2] = {rows, cols};
    put_tensor16(w, name, data, data16, 2, shape, 1);
}

static void put_ln(writer *w, const char *prefix, const nn_layernorm *ln) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", prefix);
    put_vec(w, name, ln->gamma, ln->n);
    snprintf(name, sizeof name, "%s.bias", prefix);
    put_vec(w, name, ln->beta, ln->n);
}

/* Rows [row0, row0 + D) of a fused Linear as the openai Linear "<prefix>" (weight [D][n_in] and,
 * when with_bias, bias [D]). */
static void put_linear_rows(writer *w, const char *prefix, const nn_linear *l, int row0, int D,
                            int with_bias) {
    char name[160];
    if (w->st == STENO_OK && (row0 + D > l->n_out || (with_bias && !l->b))) {
        w->st = steno_fail(STENO_E_INVALID_ARG, "%s: layer for %s has an unexpected shape",
                           w->path, prefix);
        return;
    }
    snprintf(name, sizeof name, "%s.weight", prefix);
    const size_t off = (size_t)row0 * (size_t)l->n_in;
    put_mat(w, name, l->w ? l->w + off : NULL, l->w16 ? l->w16 + off : NULL, D, l->n_in);
    if (with_bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        put_vec(w, name, l->b + row0, D);
    }
}

static void put_linear(writer *w, const char *prefix, const nn_linear *l) {
    put_linear_rows(w, prefix, l, 0, l->n_out, 1);
}

/* A self-attention block's Q/K/V/out as openai's MultiHeadAttention (query, key without bias,
 * value, out). */
static void put_self_attn(writer *w, const char *prefix, const whisper_layer *y, int D) {
    char p[160];
    snprintf(p, sizeof p, "%s.query", prefix);
    put_linear_rows(w, p, &y->attn_qkv, 0, D, 1);
    snprintf(p, sizeof p, "%s.key", prefix);
    put_linear_rows(w, p, &y->attn_qkv, D, D, 0);
    snprintf(p, sizeof p, "%s.value", prefix);
    put_linear_rows(w, p, &y->attn_qkv, 2 * D, D, 1);
    snprintf(p, sizeof p, "%s.out", prefix);
    put_linear(w, p, &y->attn_out);
}

static void put_mlp(writer *w, const char *block, const whisper_layer *y) {
    char p[160];
    snprintf(p, sizeof p, "%s.mlp.0", block);
    put_linear(w, p, &y->fc1);
    snprintf(p, sizeof p, "%s.mlp.2", block);
    put_linear(w, p, &y->fc2);
    snprintf(p, sizeof p, "%s.mlp_ln", block);
    put_ln(w, p, &y->mlp_ln);
}

/* Tensors in openai-whisper's state_dict order (whisper/model.py: a module's own parameters and
 * persistent buffers, then its children in construction order). whisper.cpp reads them by name,
 * so the order only matters for byte-identity with convert-pt-to-ggml.py's output. */
static void put_tensors(writer *w, const whisper_model *m) {
    const int Da = m->n_audio_state, Dt = m->n_text_state;
    char b[96], p[160];
    int64_t shape[3];

    shape[0] = m->n_audio_ctx, shape[1] = Da;
    put_tensor(w, "encoder.positional_embedding", m->enc_pos, 2, shape, 0);
    shape[0] = Da, shape[1] = m->n_mels, shape[2] = 3;
    put_tensor(w, "encoder.conv1.weight", m->conv1_w, 3, shape, 1);
    shape[0] = Da, shape[1] = 1; /* convert-pt-to-ggml.py reshapes the conv biases to [n, 1] */
    put_tensor(w, "encoder.conv1.bias", m->conv1_b, 2, shape, 0);
    shape[0] = Da, shape[1] = Da, shape[2] = 3;
    put_tensor(w, "encoder.conv2.weight", m->conv2_w, 3, shape, 1);
    shape[0] = Da, shape[1] = 1;
    put_tensor(w, "encoder.conv2.bias", m->conv2_b, 2, shape, 0);
    for (int i = 0; i < m->n_audio_layer; i++) {
        const whisper_layer *y = &m->enc[i];
        snprintf(b, sizeof b, "encoder.blocks.%d", i);
        snprintf(p, sizeof p, "%s.attn", b);
        put_self_attn(w, p, y, Da);
        snprintf(p, sizeof p, "%s.attn_ln", b);
        put_ln(w, p, &y->attn_ln);
        put_mlp(w, b, y);
    }
    put_ln(w, "encoder.ln_post", &m->enc_ln_post);

    shape[0] = m->n_text_ctx, shape[1] = Dt;
    put_tensor(w, "decoder.positional_embedding", m->dec_pos, 2, shape, 0);
    put_mat(w, "decoder.token_embedding.weight", m->tok_emb, m->tok_emb16, m->n_vocab, Dt);
    for (int i = 0; i < m->n_text_layer; i++) {
        const whisper_layer *y = &m->dec[i];
        snprintf(b, sizeof b, "decoder.blocks.%d", i);
        snprintf(p, sizeof p, "%s.attn", b);
        put_self_attn(w, p, y, Dt);
        snprintf(p, sizeof p, "%s.attn_ln", b);
        put_ln(w, p, &y->attn_ln);
        snprintf(p, sizeof p, "%s.cross_attn.query", b);
        put_linear(w, p, &y->cross_q);
        snprintf(p, sizeof p, "%s.cross_attn.key", b);
        put_linear_rows(w, p, &y->cross_kv, 0, Dt, 0);
        snprintf(p, sizeof p, "%s.cross_attn.value", b);
        put_linear_rows(w, p, &y->cross_kv, Dt, Dt, 1);
        snprintf(p, sizeof p, "%s.cross_attn.out", b);
        put_linear(w, p, &y->cross_out);
        snprintf(p, sizeof p, "%s.cross_attn_ln", b);
        put_ln(w, p, &y->cross_ln);
        put_mlp(w, b, y);
    }
    put_ln(w, "decoder.ln", &m->dec_ln);
}

static void put_header(writer *w, const whisper_model *m, const float *filters) {
    put_i32(w, GGML_FILE_MAGIC);
    const int32_t hp[11] = {m->n_vocab,      m->n_audio_ctx,  m->n_audio_state, m->n_audio_head,
                            m->n_audio_layer, m->n_text_ctx,  m->n_text_state,  m->n_text_head,
                            m->n_text_layer, m->n_mels,       w->use_f16 ? 1 : 0};
    for (int i = 0; i < 11; i++) put_i32(w, hp[i]);

    put_i32(w, m->n_mels);
    put_i32(w, STENO_N_FFT / 2 + 1);
    put(w, filters, (size_t)m->n_mels * (STENO_N_FFT / 2 + 1) * sizeof(float));

    /* The base BPE vocabulary: ranks 0 .. eot-1 (50256 for English-only models, 50257 for
     * multilingual ones), as the .tiktoken file lists them. */
    const int n_base = m->special.eot;
    put_i32(w, n_base);
    for (int id = 0; id < n_base && w->st == STENO_OK; id++) {
        size_t len = 0;
        const char *bytes = steno_tokenizer_token_bytes(m->tokenizer, id, &len);
        if (!bytes || len > INT32_MAX) {
            w->st = steno_fail(STENO_E_FORMAT, "%s: token %d has no bytes", w->path, id);
            return;
        }
        put_i32(w, (int32_t)len);
        put(w, bytes, len);
    }
}

steno_status whisper_write_ggml_ex(const whisper_model *m, const char *path, int use_f16) {
    if (!m || !path || !*path) return steno_fail(STENO_E_INVALID_ARG, "whisper_write_ggml: no model or path");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return steno_fail(STENO_E_UNSUPPORTED, "%s: ggml files are little-endian; this host is not", path);
#endif
    if (!m->tokenizer || m->special.eot <= 0 || m->special.eot > m->n_vocab)
        return steno_fail(STENO_E_INVALID_ARG, "%s: model has no tokenizer", path);

    steno_status st;
    float *filters = malloc((size_t)m->n_mels * (STENO_N_FFT / 2 + 1) * sizeof(float));
    writer w = {.path = path, .use_f16 = use_f16 != 0, .n_buf = 1 << 16};
    w.buf = malloc(w.n_buf * sizeof(float));
    if (!filters || !w.buf) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    if ((st = steno_mel_filters(m->n_mels, filters)) != STENO_OK) goto done;

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    w.f = fopen(tmp, "wb");
    if (!w.f) {
        st = steno_fail(STENO_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        goto done;
    }
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);

    put_header(&w, m, filters);
    put_tensors(&w, m);
    if (fclose(w.f) != 0 && w.st == STENO_OK)
        w.st = steno_fail(STENO_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (w.st == STENO_OK && rename(tmp, path) != 0)
        w.st = steno_fail(STENO_E_IO, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
    if (w.st != STENO_OK) remove(tmp);
    free(tmp);
    st = w.st;
done:
    free(filters);
    free(w.buf);
    return st;
}

steno_status whisper_write_ggml(const whisper_model *m, const char *path) {
    return whisper_write_ggml_ex(m, path, 1);
}
