#include "whisper/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "core/error.h"
#include "formats/wtab/wtab_readers.h"
#include "whisper/model/tokenizer_config.h"

/* Weight loading happens in two passes over the same table: the first sums sizes, the second
 * converts into the arena. Tensors come from the weight table (formats/wtab/wtab.h) by openai-whisper
 * name, whatever file they were read from; the fused projections this code runs (Q/K/V, cross
 * K/V) are concatenated here from the separate ones. */
typedef struct loader {
    const wtab *w;
    const char *path;
    int f16;            /* keep the tensors asked for as half in float16 */
    int wq;             /* 0, or quantize the matrices asked for to this wq type */
    float *arena;
    uint16_t *arena16;
    unsigned char *arena_q, *arena_x;
    float *scratch;      /* one tensor in float32 on its way to arena_q or arena_x */
    size_t used, used16; /* elements */
    size_t used_q, max_q; /* bytes; elements of the largest quantized tensor */
    size_t used_x;        /* bytes of the x8 copies (arena_x) */
    unsigned char *qtmp;  /* ggml rows of one matrix on their way to its x8 copy (none kept) */
    size_t max_qtmp;
    steno_status st;
} loader;

static const wt_tensor *check(loader *L, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    if (L->st != STENO_OK) return NULL;
    const wt_tensor *v = wtab_find(L->w, name);
    if (!v) {
        L->st = steno_fail(STENO_E_FORMAT, "%s: missing tensor %s", L->path, name);
        return NULL;
    }
    const int64_t want[3] = {d0, d1, d2};
    int ok = v->rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = want[i] < 0 || v->dims[i] == want[i];
    if (!ok) {
        L->st = steno_fail(STENO_E_FORMAT, "%s: tensor %s has an unexpected shape", L->path, name);
        return NULL;
    }
    return v;
}

/* Rows of one or more tensors (parts, each [rows_k][...] of the same row length) concatenated into
 * one float32 block; a NULL name stands for rows of zeros (the key projection's absent bias). */
static const float *take_parts(loader *L, const char *const *names, int n, int rank, int64_t rows, int64_t d1,
                               int64_t d2) {
    const int64_t row = rank == 1 ? 1 : rank == 2 ? d1 : d1 * d2;
    float *dst = L->arena ? L->arena + L->used : NULL;
    for (int k = 0; k < n; k++) {
        if (names[k]) {
            const wt_tensor *v = check(L, names[k], rank, rows, d1, d2);
            if (!v) return NULL;
            if (dst) wt_to_f32(v, 0, v->n_elems, dst + (size_t)k * (size_t)(rows * row));
        } else if (dst) {
            memset(dst + (size_t)k * (size_t)(rows * row), 0, (size_t)(rows * row) * sizeof *dst);
        }
    }
    L->used += (size_t)(n * rows * row);
    return dst;
}

static const float *take(loader *L, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    return take_parts(L, &name, 1, rank, d0, d1, d2);
}

/* A matrix the fast path reads in float16: kept as half when the loader runs in f16 mode. */
static void take_matrix_parts(loader *L, const char *const *names, int n, int64_t d0, int64_t d1, const float **w32,
                              const uint16_t **w16) {
    *w32 = NULL;
    *w16 = NULL;
    if (!L->f16) {
        *w32 = take_parts(L, names, n, 2, d0, d1, 0);
        return;
    }
    uint16_t *dst = L->arena16 ? L->arena16 + L->used16 : NULL;
    for (int k = 0; k < n; k++) {
        const wt_tensor *v = check(L, names[k], 2, d0, d1, 0);
        if (!v) return;
        if (dst) wt_to_f16(v, 0, v->n_elems, dst + (size_t)k * (size_t)(d0 * d1));
    }
    *w16 = dst;
    L->used16 += (size_t)(n * d0 * d1);
}

/* A matrix kept only quantized (L->wq): the parts (each [d0][d1], stacked by rows) converted to
 * float32 in the scratch, then quantized; no float copy stays. */
static void take_quant_parts(loader *L, const char *const *names, int n, int64_t d0, int64_t d1, wq_mat *q) {
    memset(q, 0, sizeof *q);
    const wt_tensor *v[4];
    for (int k = 0; k < n; k++)
        if (!(v[k] = check(L, names[k], 2, d0, d1, 0))) return;
    const int rows = (int)(n * d0);
    const size_t bytes = wq_bytes(L->wq, rows, (int)d1);
    if (!bytes) {
        L->st = steno_fail(STENO_E_INVALID_ARG, "%s: tensor %s: width %lld is not a multiple of %s's group of %d",
                           L->path, names[0], (long long)d1, wq_name(L->wq), wq_group(L->wq));
        return;
    }
    /* the x8 copy every product and the embedding's lookups read (linear_quant.h, wq_dequant_rows);
     * ggml rows only for a type without an x8 layout */
    const steno_mat sm = {L->wq, d1, rows, bytes / (size_t)rows, L->path /* any non-NULL: only sizes are read */, NULL};
    const size_t xbytes = L->wq < WQ_MLX_Q4_G32 && steno_xmat_supported(&sm) ? steno_xmat_bytes(&sm) : 0;
    const int rows_kept = !xbytes;
    if (L->arena_x || L->arena_q) { /* the filling pass */
        for (int k = 0; k < n; k++) wt_to_f32(v[k], 0, v[k]->n_elems, L->scratch + (size_t)k * (size_t)(d0 * d1));
        wq_quantize(L->wq, L->scratch, rows, (int)d1, rows_kept ? L->arena_q + L->used_q : L->qtmp, q);
        if (xbytes) {
            const steno_mat src = {q->type, q->n_in, q->n_out, q->q_row, q->q, NULL};
            steno_xmat_pack_into(&src, &q->x, L->arena_x + L->used_x);
            if (!rows_kept) {
                q->q = q->x.data;
                q->q_row = 0;
            }
        }
    }
    if (rows_kept) L->used_q += (bytes + 63) & ~(size_t)63;
    else if (bytes > L->max_qtmp) L->max_qtmp = bytes;
    L->used_x += (xbytes + 63) & ~(size_t)63;
    if ((size_t)(rows * d1) > L->max_q) L->max_q = (size_t)(rows * d1);
}

static void take_ln(loader *L, const char *prefix, int D, nn_layernorm *ln) {
    char name[256];
    snprintf(name, sizeof name, "%s.weight", prefix);
    ln->gamma = take(L, name, 1, D, 0, 0);
    snprintf(name, sizeof name, "%s.bias", prefix);
    ln->beta = take(L, name, 1, D, 0, 0);
    ln->n = D;
}

/* The Linear made of the openai Linears parts[0..n) stacked by rows (each [n_out][n_in]). The key
 * projections have no bias: when some part has one, the others' absent biases are zeros.
 * half > 0: float16 in f16 mode; 0: float32; < 0: float32 always (never quantized: the
 * cross-attention K/V of the per-window GEMM). With L->wq every matrix with half >= 0 is kept
 * only quantized. */
static void take_linear(loader *L, const char *const *parts, int n, int n_out, int n_in, nn_linear *l, int half) {
    char wn[4][256], bn[4][256];
    const char *wp[4], *bp[4];
    int any_bias = 0;
    for (int k = 0; k < n; k++) {
        snprintf(wn[k], sizeof wn[k], "%s.weight", parts[k]);
        snprintf(bn[k], sizeof bn[k], "%s.bias", parts[k]);
        wp[k] = wn[k];
        bp[k] = wtab_find(L->w, bn[k]) ? bn[k] : NULL;
        any_bias |= bp[k] != NULL;
    }
    memset(&l->q, 0, sizeof l->q);
    l->w = NULL;
    l->w16 = NULL;
    if (L->wq && half >= 0) take_quant_parts(L, wp, n, n_out, n_in, &l->q);
    else if (half > 0) take_matrix_parts(L, wp, n, n_out, n_in, &l->w, &l->w16);
    else l->w = take_parts(L, wp, n, 2, n_out, n_in, 0);
    l->b = any_bias ? take_parts(L, bp, n, 1, n_out, 0, 0) : NULL;
    l->n_out = n * n_out;
    l->n_in = n_in;
}

static void take_block(loader *L, const char *side, int i, int D, whisper_layer *y, int dec) {
    char p[128], q[200], k[200], v[200];
    snprintf(p, sizeof p, "%s.blocks.%d", side, i);
    snprintf(q, sizeof q, "%s.attn_ln", p);
    take_ln(L, q, D, &y->attn_ln);
    snprintf(q, sizeof q, "%s.attn.query", p);
    snprintf(k, sizeof k, "%s.attn.key", p);
    snprintf(v, sizeof v, "%s.attn.value", p);
    const char *qkv[3] = {q, k, v};
    take_linear(L, qkv, 3, D, D, &y->attn_qkv, 1);
    snprintf(q, sizeof q, "%s.attn.out", p);
    take_linear(L, qkv, 1, D, D, &y->attn_out, 1);
    if (dec) {
        snprintf(q, sizeof q, "%s.cross_attn_ln", p);
        take_ln(L, q, D, &y->cross_ln);
        snprintf(q, sizeof q, "%s.cross_attn.query", p);
        take_linear(L, qkv, 1, D, D, &y->cross_q, 1);
        snprintf(k, sizeof k, "%s.cross_attn.key", p);
        snprintf(v, sizeof v, "%s.cross_attn.value", p);
        const char *kv[2] = {k, v};
        take_linear(L, kv, 2, D, D, &y->cross_kv, -1); /* float32: the per-window GEMM */
        snprintf(q, sizeof q, "%s.cross_attn.out", p);
        take_linear(L, qkv, 1, D, D, &y->cross_out, 1);
    }
    snprintf(q, sizeof q, "%s.mlp_ln", p);
    take_ln(L, q, D, &y->mlp_ln);
    snprintf(q, sizeof q, "%s.mlp.0", p);
    take_linear(L, qkv, 1, 4 * D, D, &y->fc1, 1);
    snprintf(q, sizeof q, "%s.mlp.2", p);
    take_linear(L, qkv, 1, D, 4 * D, &y->fc2, 1);
}

static void take_all(loader *L, whisper_model *m) {
    const int Da = m->n_audio_state, Dt = m->n_text_state;
    m->conv1_w = take(L, "encoder.conv1.weight", 3, Da, m->n_mels, 3);
    m->conv1_b = take(L, "encoder.conv1.bias", 1, Da, 0, 0);
    m->conv2_w = take(L, "encoder.conv2.weight", 3, Da, Da, 3);
    m->conv2_b = take(L, "encoder.conv2.bias", 1, Da, 0, 0);
    m->enc_pos = take(L, "encoder.positional_embedding", 2, m->n_audio_ctx, Da, 0);
    for (int i = 0; i < m->n_audio_layer; i++) take_block(L, "encoder", i, Da, &m->enc[i], 0);
    take_ln(L, "encoder.ln_post", Da, &m->enc_ln_post);
    const char *emb = "decoder.token_embedding.weight";
    if (L->wq) {
        m->tok_emb = NULL;
        m->tok_emb16 = NULL;
        take_quant_parts(L, &emb, 1, m->n_vocab, Dt, &m->tok_emb_q);
    } else {
        take_matrix_parts(L, &emb, 1, m->n_vocab, Dt, &m->tok_emb, &m->tok_emb16);
    }
    m->dec_pos = take(L, "decoder.positional_embedding", 2, m->n_text_ctx, Dt, 0);
    for (int i = 0; i < m->n_text_layer; i++) take_block(L, "decoder", i, Dt, &m->dec[i], 1);
    take_ln(L, "decoder.ln", Dt, &m->dec_ln);
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

steno_status whisper_model_load(const char *path, whisper_model **out) { return whisper_model_load_ex(path, 0, out); }

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

steno_status whisper_model_load_table(const wtab *w, const char *path, int decoder_f16, int wq_type,
                                      whisper_model **out) {
    *out = NULL;
    if (wq_type && !wq_group(wq_type))
        return steno_fail(STENO_E_INVALID_ARG, "%s: unknown weight quantization %d", path, wq_type);
    whisper_model *m = calloc(1, sizeof *m);
    if (!m) return steno_fail(STENO_E_NOMEM, "out of memory");
    steno_status st;
    const whisper_dims *d = &w->dims;
    m->n_mels = d->n_mels, m->n_audio_ctx = d->n_audio_ctx, m->n_audio_state = d->n_audio_state;
    m->n_audio_head = d->n_audio_head, m->n_audio_layer = d->n_audio_layer, m->n_vocab = d->n_vocab;
    m->n_text_ctx = d->n_text_ctx, m->n_text_state = d->n_text_state, m->n_text_head = d->n_text_head;
    m->n_text_layer = d->n_text_layer;
    if (!w->have_dims || m->n_audio_state <= 0 || m->n_audio_head <= 0 || m->n_text_head <= 0 ||
        m->n_audio_state % m->n_audio_head || m->n_text_state % m->n_text_head ||
        m->n_audio_state != m->n_text_state || m->n_audio_layer <= 0 || m->n_text_layer <= 0) {
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
    loader L = {.w = w, .path = path, .f16 = m->decoder_f16, .wq = wq_type};
    take_all(&L, m); /* sizing pass */
    if (L.st != STENO_OK) {
        st = L.st;
        goto fail;
    }
    /* in 2 MiB pages (core/bigmem.h): the decoder streams its weights once per token */
    m->arena = L.used ? steno_bigmem_alloc(L.used * sizeof(float)) : NULL;
    m->arena16 = L.used16 ? steno_bigmem_alloc(L.used16 * sizeof(uint16_t)) : NULL;
    m->arena_q = L.used_q ? steno_bigmem_alloc(L.used_q) : NULL;
    m->arena_x = L.used_x ? steno_bigmem_alloc(L.used_x) : NULL;
    L.scratch = L.max_q ? malloc(L.max_q * sizeof(float)) : NULL;
    L.qtmp = L.max_qtmp ? aligned_alloc(64, (L.max_qtmp + 63) & ~(size_t)63) : NULL;
    if ((L.used && !m->arena) || (L.used16 && !m->arena16) || (L.used_q && !m->arena_q) || (L.max_q && !L.scratch) ||
        (L.used_x && !m->arena_x) || (L.max_qtmp && !L.qtmp)) {
        free(L.scratch);
        free(L.qtmp);
        st = steno_fail(STENO_E_NOMEM, "%s: cannot allocate %zu MB for weights", path,
                        (L.used * sizeof(float) + L.used16 * sizeof(uint16_t) + L.used_q + L.used_x +
                         L.max_q * sizeof(float) + L.max_qtmp) >> 20);
        goto fail;
    }
    L.arena = m->arena;
    L.arena16 = m->arena16;
    L.arena_q = m->arena_q;
    L.arena_x = m->arena_x;
    L.used = L.used16 = L.used_q = L.used_x = 0;
    take_all(&L, m);
    free(L.scratch);
    free(L.qtmp);

    if ((st = whisper_side_load(w, path, &m->config, &m->tokenizer)) != STENO_OK) goto fail;
    if ((st = check_config(m, path)) != STENO_OK) goto fail;
    if ((st = resolve_special(m, path)) != STENO_OK) goto fail;
    *out = m;
    return STENO_OK;
fail:
    whisper_model_free(m);
    return st;
}

steno_status whisper_model_load_q(const char *path, int decoder_f16, int wq_type, whisper_model **out) {
    *out = NULL;
    wtab *w = NULL;
    steno_status st = wtab_open(path, &w);
    if (st != STENO_OK) return st;
    st = whisper_model_load_table(w, path, decoder_f16, wq_type, out);
    wtab_free(w);
    return st;
}

steno_status whisper_model_load_ex(const char *path, int decoder_f16, whisper_model **out) {
    return whisper_model_load_q(path, decoder_f16, 0, out);
}

void whisper_model_free(whisper_model *m) {
    if (!m) return;
    steno_bigmem_free(m->arena);
    steno_bigmem_free(m->arena16);
    steno_bigmem_free(m->arena_q);
    steno_bigmem_free(m->arena_x);
    free(m->enc);
    free(m->dec);
    whisper_config_free(&m->config);
    steno_tokenizer_free(m->tokenizer);
    free(m);
}
