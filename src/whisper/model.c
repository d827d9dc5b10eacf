#include "whisper/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/ct2.h"

/* Weight loading happens in two passes over the same table: the first sums sizes, the second
 * converts into the arena. */
typedef struct loader {
    const ct2_model *ct2;
    const char *path;
    int f16;            /* keep the tensors asked for as half in float16 */
    int wq;             /* 0, or quantize the matrices asked for to this wq type */
    float *arena;
    uint16_t *arena16;
    unsigned char *arena_q;
    float *scratch;      /* one tensor in float32 on its way to arena_q */
    size_t used, used16; /* elements */
    size_t used_q, max_q; /* bytes; elements of the largest quantized tensor */
    steno_status st;
} loader;

static const ct2_var *check(loader *L, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    if (L->st != STENO_OK) return NULL;
    const ct2_var *v = ct2_find(L->ct2, name);
    if (!v) {
        L->st = steno_fail(STENO_E_FORMAT, "%s: missing tensor %s", L->path, name);
        return NULL;
    }
    const int64_t want[3] = {d0, d1, d2};
    int ok = v->rank == rank && (v->dtype == CT2_F32 || v->dtype == CT2_F16 || v->dtype == CT2_BF16);
    for (int i = 0; ok && i < rank; i++) ok = want[i] < 0 || v->dims[i] == want[i];
    if (!ok) {
        L->st = steno_fail(STENO_E_FORMAT, "%s: tensor %s has an unexpected shape or type", L->path,
                           name);
        return NULL;
    }
    return v;
}

static const float *take(loader *L, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    const ct2_var *v = check(L, name, rank, d0, d1, d2);
    if (!v) return NULL;
    float *dst = NULL;
    if (L->arena) {
        dst = L->arena + L->used;
        ct2_to_f32(v, dst);
        ct2_release(L->ct2, v);
    }
    L->used += (size_t)v->n_elems;
    return dst;
}

/* A matrix the fast path reads in float16: kept as half when the loader runs in f16 mode. */
static void take_matrix(loader *L, const char *name, int64_t d0, int64_t d1, const float **w32,
                        const uint16_t **w16) {
    *w32 = NULL;
    *w16 = NULL;
    if (!L->f16) {
        *w32 = take(L, name, 2, d0, d1, 0);
        return;
    }
    const ct2_var *v = check(L, name, 2, d0, d1, 0);
    if (!v) return;
    if (L->arena16) {
        uint16_t *dst = L->arena16 + L->used16;
        ct2_to_f16(v, dst);
        ct2_release(L->ct2, v);
        *w16 = dst;
    }
    L->used16 += (size_t)v->n_elems;
}

/* A matrix kept only quantized (L->wq): converted to float32 in the scratch, then quantized. */
static void take_quant(loader *L, const char *name, int64_t d0, int64_t d1, wq_mat *q) {
    memset(q, 0, sizeof *q);
    const ct2_var *v = check(L, name, 2, d0, d1, 0);
    if (!v) return;
    const size_t bytes = wq_bytes(L->wq, (int)d0, (int)d1);
    if (!bytes) {
        L->st = steno_fail(STENO_E_INVALID_ARG, "%s: tensor %s: width %lld is not a multiple of %s's group of %d",
                           L->path, name, (long long)d1, wq_name(L->wq), wq_group(L->wq));
        return;
    }
    if (L->arena_q) {
        ct2_to_f32(v, L->scratch);
        ct2_release(L->ct2, v);
        wq_quantize(L->wq, L->scratch, (int)d0, (int)d1, L->arena_q + L->used_q, q);
    }
    L->used_q += (bytes + 63) & ~(size_t)63;
    if ((size_t)v->n_elems > L->max_q) L->max_q = (size_t)v->n_elems;
}

static void take_ln(loader *L, const char *prefix, int D, nn_layernorm *ln) {
    char name[256];
    snprintf(name, sizeof name, "%s/gamma", prefix);
    ln->gamma = take(L, name, 1, D, 0, 0);
    snprintf(name, sizeof name, "%s/beta", prefix);
    ln->beta = take(L, name, 1, D, 0, 0);
    ln->n = D;
}

static void take_linear(loader *L, const char *prefix, int n_out, int n_in, nn_linear *l, int half) {
    char name[256];
    snprintf(name, sizeof name, "%s/weight", prefix);
    memset(&l->q, 0, sizeof l->q);
    l->w = NULL;
    l->w16 = NULL;
    if (L->wq && half >= 0) take_quant(L, name, n_out, n_in, &l->q);
    else if (half > 0) take_matrix(L, name, n_out, n_in, &l->w, &l->w16);
    else l->w = take(L, name, 2, n_out, n_in, 0);
    snprintf(name, sizeof name, "%s/bias", prefix);
    l->b = ct2_find(L->ct2, name) ? take(L, name, 1, n_out, 0, 0) : NULL;
    l->n_out = n_out;
    l->n_in = n_in;
}

static void take_all(loader *L, whisper_model *m) {
    const int Da = m->n_audio_state, Dt = m->n_text_state;
    char p[128], q[160];
    m->conv1_w = take(L, "encoder/conv1/weight", 3, Da, m->n_mels, 3);
    m->conv1_b = take(L, "encoder/conv1/bias", 1, Da, 0, 0);
    m->conv2_w = take(L, "encoder/conv2/weight", 3, Da, Da, 3);
    m->conv2_b = take(L, "encoder/conv2/bias", 1, Da, 0, 0);
    m->enc_pos = take(L, "encoder/position_encodings/encodings", 2, m->n_audio_ctx, Da, 0);
    for (int i = 0; i < m->n_audio_layer; i++) {
        whisper_layer *y = &m->enc[i];
        snprintf(p, sizeof p, "encoder/layer_%d", i);
        snprintf(q, sizeof q, "%s/self_attention/layer_norm", p);
        take_ln(L, q, Da, &y->attn_ln);
        snprintf(q, sizeof q, "%s/self_attention/linear_0", p);
        take_linear(L, q, 3 * Da, Da, &y->attn_qkv, 0);
        snprintf(q, sizeof q, "%s/self_attention/linear_1", p);
        take_linear(L, q, Da, Da, &y->attn_out, 0);
        snprintf(q, sizeof q, "%s/ffn/layer_norm", p);
        take_ln(L, q, Da, &y->mlp_ln);
        snprintf(q, sizeof q, "%s/ffn/linear_0", p);
        take_linear(L, q, 4 * Da, Da, &y->fc1, 0);
        snprintf(q, sizeof q, "%s/ffn/linear_1", p);
        take_linear(L, q, Da, 4 * Da, &y->fc2, 0);
    }
    take_ln(L, "encoder/layer_norm", Da, &m->enc_ln_post);
    if (L->wq) {
        m->tok_emb = NULL;
        m->tok_emb16 = NULL;
        take_quant(L, "decoder/embeddings/weight", m->n_vocab, Dt, &m->tok_emb_q);
    } else {
        take_matrix(L, "decoder/embeddings/weight", m->n_vocab, Dt, &m->tok_emb, &m->tok_emb16);
    }
    m->dec_pos = take(L, "decoder/position_encodings/encodings", 2, m->n_text_ctx, Dt, 0);
    for (int i = 0; i < m->n_text_layer; i++) {
        whisper_layer *y = &m->dec[i];
        snprintf(p, sizeof p, "decoder/layer_%d", i);
        snprintf(q, sizeof q, "%s/self_attention/layer_norm", p);
        take_ln(L, q, Dt, &y->attn_ln);
        snprintf(q, sizeof q, "%s/self_attention/linear_0", p);
        take_linear(L, q, 3 * Dt, Dt, &y->attn_qkv, 1);
        snprintf(q, sizeof q, "%s/self_attention/linear_1", p);
        take_linear(L, q, Dt, Dt, &y->attn_out, 1);
        snprintf(q, sizeof q, "%s/attention/layer_norm", p);
        take_ln(L, q, Dt, &y->cross_ln);
        snprintf(q, sizeof q, "%s/attention/linear_0", p);
        take_linear(L, q, Dt, Dt, &y->cross_q, 1);
        snprintf(q, sizeof q, "%s/attention/linear_1", p);
        take_linear(L, q, 2 * Dt, Dt, &y->cross_kv, -1); /* float32: the per-window GEMM */
        snprintf(q, sizeof q, "%s/attention/linear_2", p);
        take_linear(L, q, Dt, Dt, &y->cross_out, 1);
        snprintf(q, sizeof q, "%s/ffn/layer_norm", p);
        take_ln(L, q, Dt, &y->mlp_ln);
        snprintf(q, sizeof q, "%s/ffn/linear_0", p);
        take_linear(L, q, 4 * Dt, Dt, &y->fc1, 1);
        snprintf(q, sizeof q, "%s/ffn/linear_1", p);
        take_linear(L, q, Dt, 4 * Dt, &y->fc2, 1);
    }
    take_ln(L, "decoder/layer_norm", Dt, &m->dec_ln);
}

static int count_layers(const ct2_model *c, const char *side) {
    char name[128];
    int n = 0;
    for (;;) {
        snprintf(name, sizeof name, "%s/layer_%d/ffn/linear_0/weight", side, n);
        if (!ct2_find(c, name)) return n;
        n++;
    }
}

static int dim_of(const ct2_model *c, const char *name, int axis) {
    const ct2_var *v = ct2_find(c, name);
    if (!v || v->rank <= axis || v->dims[axis] <= 0 || v->dims[axis] > (1 << 24)) return 0;
    return (int)v->dims[axis];
}

static steno_status resolve_special(whisper_model *m, const char *dir) {
    const steno_tokenizer *t = m->tokenizer;
    struct { int *dst; const char *tok; const char *alt; } want[] = {
        {&m->special.eot, "<|endoftext|>", NULL},
        {&m->special.sot, "<|startoftranscript|>", NULL},
        {&m->special.sot_prev, "<|startofprev|>", NULL},
        {&m->special.sot_lm, "<|startoflm|>", NULL},
        {&m->special.no_speech, "<|nospeech|>", "<|nocaptions|>"},
        {&m->special.no_timestamps, "<|notimestamps|>", NULL},
        {&m->special.timestamp_begin, "<|0.00|>", NULL},
        {&m->special.translate, "<|translate|>", NULL},
        {&m->special.transcribe, "<|transcribe|>", NULL},
        {&m->special.lang_first, "<|en|>", NULL},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int id = steno_tokenizer_token_id(t, want[i].tok);
        if (id < 0 && want[i].alt) id = steno_tokenizer_token_id(t, want[i].alt);
        if (id < 0 || id >= m->n_vocab)
            return steno_fail(STENO_E_FORMAT, "%s: vocabulary lacks the special token %s", dir,
                              want[i].tok);
        *want[i].dst = id;
    }
    return STENO_OK;
}

steno_status whisper_model_load(const char *dir, whisper_model **out) { return whisper_model_load_ex(dir, 0, out); }

/* config.json's token ids and alignment heads index the model's vocabulary and decoder: an id or
 * a head outside them is a malformed file, not something to clamp. */
static steno_status check_config(const whisper_model *m, const char *path) {
    const whisper_config *c = &m->config;
    const struct { const int *ids; int n; const char *name; } sets[] = {
        {c->suppress_ids, c->n_suppress_ids, "suppress_ids"},
        {c->suppress_ids_begin, c->n_suppress_ids_begin, "suppress_ids_begin"},
        {c->lang_ids, c->n_lang_ids, "lang_ids"}};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
        for (int i = 0; i < sets[k].n; i++)
            if (sets[k].ids[i] < 0 || sets[k].ids[i] >= m->n_vocab)
                return steno_fail(STENO_E_FORMAT, "%s: %s: token id %d is outside the vocabulary (0..%d)", path,
                                  sets[k].name, sets[k].ids[i], m->n_vocab - 1);
    for (int i = 0; i < c->n_alignment_heads; i++) {
        const int l = c->alignment_heads[i][0], h = c->alignment_heads[i][1];
        if (l < 0 || l >= m->n_text_layer || h < 0 || h >= m->n_text_head)
            return steno_fail(STENO_E_FORMAT,
                              "%s: alignment_heads: (%d, %d) is not a decoder head (%d layers of %d heads)", path, l, h,
                              m->n_text_layer, m->n_text_head);
    }
    return STENO_OK;
}

steno_status whisper_model_load_ex(const char *dir, int decoder_f16, whisper_model **out) {
    return whisper_model_load_q(dir, decoder_f16, 0, out);
}

steno_status whisper_model_load_q(const char *dir, int decoder_f16, int wq_type, whisper_model **out) {
    *out = NULL;
    if (wq_type && !wq_group(wq_type))
        return steno_fail(STENO_E_INVALID_ARG, "%s: unknown weight quantization %d", dir, wq_type);
    char path[4096];
    whisper_model *m = calloc(1, sizeof *m);
    if (!m) return steno_fail(STENO_E_NOMEM, "out of memory");
    ct2_model *c = NULL;
    steno_status st;

    snprintf(path, sizeof path, "%s/model.bin", dir);
    if ((st = ct2_open(path, &c)) != STENO_OK) goto fail;
    if (strcmp(ct2_spec_name(c), "WhisperSpec") != 0) {
        st = steno_fail(STENO_E_FORMAT, "%s: not a Whisper model (spec %s)", path, ct2_spec_name(c));
        goto fail;
    }
    m->n_audio_state = dim_of(c, "encoder/conv1/weight", 0);
    m->n_mels = dim_of(c, "encoder/conv1/weight", 1);
    m->n_audio_ctx = dim_of(c, "encoder/position_encodings/encodings", 0);
    m->n_vocab = dim_of(c, "decoder/embeddings/weight", 0);
    m->n_text_state = dim_of(c, "decoder/embeddings/weight", 1);
    m->n_text_ctx = dim_of(c, "decoder/position_encodings/encodings", 0);
    m->n_audio_layer = count_layers(c, "encoder");
    m->n_text_layer = count_layers(c, "decoder");
    int ok1 = 0, ok2 = 0;
    m->n_audio_head = (int)ct2_scalar_int(c, "encoder/num_heads", &ok1);
    m->n_text_head = (int)ct2_scalar_int(c, "decoder/num_heads", &ok2);
    if (!m->n_audio_state || !m->n_mels || !m->n_audio_ctx || !m->n_vocab || !m->n_text_state ||
        !m->n_text_ctx || !m->n_audio_layer || !m->n_text_layer || !ok1 || !ok2 ||
        m->n_audio_head <= 0 || m->n_text_head <= 0 || m->n_audio_state % m->n_audio_head ||
        m->n_text_state % m->n_text_head || m->n_audio_state != m->n_text_state) {
        st = steno_fail(STENO_E_FORMAT, "%s: missing or inconsistent Whisper dimensions", path);
        goto fail;
    }
    m->multilingual = m->n_vocab >= 51865;
    m->enc = calloc((size_t)m->n_audio_layer, sizeof *m->enc);
    m->dec = calloc((size_t)m->n_text_layer, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto fail;
    }
    m->decoder_f16 = decoder_f16 != 0 || wq_type != 0; /* the faithful path can't run either way */
    m->wq_type = wq_type;
    loader L = {.ct2 = c, .path = path, .f16 = m->decoder_f16, .wq = wq_type};
    take_all(&L, m); /* sizing pass */
    if (L.st != STENO_OK) {
        st = L.st;
        goto fail;
    }
    m->arena = malloc(L.used * sizeof(float));
    m->arena16 = L.used16 ? malloc(L.used16 * sizeof(uint16_t)) : NULL;
    m->arena_q = L.used_q ? aligned_alloc(64, L.used_q) : NULL;
    L.scratch = L.max_q ? malloc(L.max_q * sizeof(float)) : NULL;
    if (!m->arena || (L.used16 && !m->arena16) || (L.used_q && (!m->arena_q || !L.scratch))) {
        free(L.scratch);
        st = steno_fail(STENO_E_NOMEM, "%s: cannot allocate %zu MB for weights", path,
                        L.used * sizeof(float) >> 20);
        goto fail;
    }
    L.arena = m->arena;
    L.arena16 = m->arena16;
    L.arena_q = m->arena_q;
    L.used = L.used16 = L.used_q = 0;
    take_all(&L, m);
    free(L.scratch);
    ct2_close(c);
    c = NULL;

    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = whisper_config_load(path, &m->config)) != STENO_OK) goto fail;
    if ((st = check_config(m, path)) != STENO_OK) goto fail;
    if ((st = steno_tokenizer_load(dir, &m->tokenizer)) != STENO_OK) goto fail;
    if (steno_tokenizer_n_vocab(m->tokenizer) != m->n_vocab) {
        st = steno_fail(STENO_E_FORMAT, "%s: vocabulary has %d tokens but model.bin has %d", dir,
                        steno_tokenizer_n_vocab(m->tokenizer), m->n_vocab);
        goto fail;
    }
    if ((st = resolve_special(m, dir)) != STENO_OK) goto fail;
    *out = m;
    return STENO_OK;
fail:
    ct2_close(c);
    whisper_model_free(m);
    return st;
}

void whisper_model_free(whisper_model *m) {
    if (!m) return;
    free(m->arena);
    free(m->arena16);
    free(m->arena_q);
    free(m->enc);
    free(m->dec);
    whisper_config_free(&m->config);
    steno_tokenizer_free(m->tokenizer);
    free(m);
}
