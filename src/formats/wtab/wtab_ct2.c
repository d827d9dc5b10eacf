/* wtab_ct2.c — a CTranslate2 WhisperSpec model.bin as a weight table (wtab_readers.h).
 *
 * Name map (CTranslate2 python/ctranslate2/converters/transformers.py: WhisperLoader and
 * specs/whisper_spec.py):
 *   encoder/conv{1,2}/{weight,bias}                  → encoder.conv{1,2}.{weight,bias}
 *   {en,de}coder/position_encodings/encodings        → {en,de}coder.positional_embedding
 *   .../self_attention/layer_norm/{gamma,beta}       → ...attn_ln.{weight,bias}
 *   .../self_attention/linear_0 [3D][D] (fused)      → ...attn.{query,key,value} (row views)
 *   .../self_attention/linear_1                      → ...attn.out
 *   decoder/layer_N/attention/layer_norm             → ...cross_attn_ln
 *   decoder/layer_N/attention/linear_0               → ...cross_attn.query
 *   decoder/layer_N/attention/linear_1 [2D][D]       → ...cross_attn.{key,value} (row views)
 *   decoder/layer_N/attention/linear_2               → ...cross_attn.out
 *   .../ffn/layer_norm, linear_0, linear_1           → ...mlp_ln, mlp.0, mlp.2
 *   encoder/layer_norm, decoder/layer_norm           → encoder.ln_post, decoder.ln
 *   decoder/embeddings/weight                        → decoder.token_embedding.weight
 * int8 and int8_float16 files store a Linear's weight as int8 with "<weight>_scale" (one float32
 * or float16 scale a row); the views carry it. The zero key bias of the fused projection is left
 * out (openai-whisper has none). Heads come from {en,de}coder/num_heads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/ct2.h"
#include "formats/wtab/wtab_readers.h"

static wt_dtype ct2_wt(ct2_dtype d, int *ok) {
    *ok = 1;
    switch (d) {
    case CT2_F32: return WT_F32;
    case CT2_F16: return WT_F16;
    case CT2_BF16: return WT_BF16;
    case CT2_I8: return WT_I8;
    default: *ok = 0; return WT_F32;
    }
}

static size_t ct2_elem(ct2_dtype d) {
    switch (d) {
    case CT2_I8: return 1;
    case CT2_I16: case CT2_F16: case CT2_BF16: return 2;
    default: return 4;
    }
}

/* Adds rows [r0, r0 + nr) of v (a weight [R][C] or a bias [R]) as name. */
static steno_status add_rows(wtab *w, const ct2_model *c, const char *ct2_name, const ct2_var *v, const char *name,
                             int64_t r0, int64_t nr) {
    int ok;
    const wt_dtype d = ct2_wt(v->dtype, &ok);
    if (!ok || v->rank < 1 || v->rank > 3 || r0 + nr > v->dims[0])
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s has an unexpected type or shape", w->path, ct2_name);
    int64_t dims[4] = {nr, 0, 0, 0}, row = 1;
    for (int i = 1; i < v->rank; i++) dims[i] = v->dims[i], row *= v->dims[i];
    const size_t es = ct2_elem(v->dtype);
    const size_t total = (size_t)v->n_elems * es, off = (size_t)(r0 * row) * es;
    steno_status st = wtab_add(w, name, d, v->rank, dims, (const char *)v->data + off, total - off);
    if (st != STENO_OK || d != WT_I8) return st;
    char sname[320];
    snprintf(sname, sizeof sname, "%s_scale", ct2_name);
    const ct2_var *s = ct2_find(c, sname);
    if (!s || s->rank != 1 || s->dims[0] != v->dims[0] || (s->dtype != CT2_F32 && s->dtype != CT2_F16))
        return steno_fail(STENO_E_FORMAT, "%s: int8 tensor %s has no per-row scale %s", w->path, ct2_name, sname);
    wt_tensor *t = &w->t[w->n - 1];
    t->scale_dtype = s->dtype == CT2_F16 ? WT_F16 : WT_F32;
    t->scale = (const char *)s->data + (size_t)r0 * (s->dtype == CT2_F16 ? 2 : 4);
    return STENO_OK;
}

static int all_zero(const ct2_var *v, int64_t r0, int64_t nr) {
    const size_t es = ct2_elem(v->dtype);
    const unsigned char *p = (const unsigned char *)v->data + (size_t)r0 * es;
    for (size_t i = 0; i < (size_t)nr * es; i++) /* +0 only: a -0 bias is kept */
        if (p[i]) return 0;
    return 1;
}

/* A Linear: CT2 prefix → openai prefixes for each group of rows (n_parts of them). */
static steno_status add_linear(wtab *w, const ct2_model *c, const char *cp, const char *const *op, int n_parts,
                               int key_part) {
    char cn[300], on[300];
    snprintf(cn, sizeof cn, "%s/weight", cp);
    const ct2_var *wv = ct2_find(c, cn);
    if (!wv || wv->rank != 2 || wv->dims[0] % n_parts)
        return steno_fail(STENO_E_FORMAT, "%s: missing or misshapen tensor %s", w->path, cn);
    const int64_t D = wv->dims[0] / n_parts;
    steno_status st;
    for (int k = 0; k < n_parts; k++) {
        snprintf(on, sizeof on, "%s.weight", op[k]);
        if ((st = add_rows(w, c, cn, wv, on, k * D, D)) != STENO_OK) return st;
    }
    snprintf(cn, sizeof cn, "%s/bias", cp);
    const ct2_var *bv = ct2_find(c, cn);
    if (!bv) return STENO_OK;
    if (bv->rank != 1 || bv->dims[0] != wv->dims[0])
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s has an unexpected shape", w->path, cn);
    for (int k = 0; k < n_parts; k++) {
        if (k == key_part && all_zero(bv, k * D, D)) continue;
        snprintf(on, sizeof on, "%s.bias", op[k]);
        if ((st = add_rows(w, c, cn, bv, on, k * D, D)) != STENO_OK) return st;
    }
    return STENO_OK;
}

static steno_status add_one(wtab *w, const ct2_model *c, const char *cn, const char *on) {
    const ct2_var *v = ct2_find(c, cn);
    if (!v) return steno_fail(STENO_E_FORMAT, "%s: missing tensor %s", w->path, cn);
    return add_rows(w, c, cn, v, on, 0, v->rank ? v->dims[0] : 1);
}

static steno_status add_ln(wtab *w, const ct2_model *c, const char *cp, const char *op) {
    char cn[300], on[300];
    snprintf(cn, sizeof cn, "%s/gamma", cp);
    snprintf(on, sizeof on, "%s.weight", op);
    steno_status st = add_one(w, c, cn, on);
    if (st != STENO_OK) return st;
    snprintf(cn, sizeof cn, "%s/beta", cp);
    snprintf(on, sizeof on, "%s.bias", op);
    return add_one(w, c, cn, on);
}

static int count_layers(const ct2_model *c, const char *side) {
    char name[128];
    int n = 0;
    for (;;) {
        snprintf(name, sizeof name, "%s/layer_%d/ffn/linear_0/weight", side, n);
        if (!ct2_find(c, name) || n > 4096) return n;
        n++;
    }
}

static steno_status add_block(wtab *w, const ct2_model *c, const char *side, int i, const char *oside) {
    char cp[200], op[200], a[240], b[240], d[240];
    steno_status st;
    snprintf(cp, sizeof cp, "%s/layer_%d", side, i);
    snprintf(op, sizeof op, "%s.blocks.%d", oside, i);
    snprintf(a, sizeof a, "%s/self_attention/layer_norm", cp);
    snprintf(b, sizeof b, "%s.attn_ln", op);
    if ((st = add_ln(w, c, a, b)) != STENO_OK) return st;
    char q[240], k[240], v[240];
    snprintf(q, sizeof q, "%s.attn.query", op);
    snprintf(k, sizeof k, "%s.attn.key", op);
    snprintf(v, sizeof v, "%s.attn.value", op);
    const char *qkv[3] = {q, k, v};
    snprintf(a, sizeof a, "%s/self_attention/linear_0", cp);
    if ((st = add_linear(w, c, a, qkv, 3, 1)) != STENO_OK) return st;
    snprintf(a, sizeof a, "%s/self_attention/linear_1", cp);
    snprintf(b, sizeof b, "%s.attn.out", op);
    const char *out[1] = {b};
    if ((st = add_linear(w, c, a, out, 1, -1)) != STENO_OK) return st;
    if (strcmp(side, "decoder") == 0) {
        snprintf(a, sizeof a, "%s/attention/layer_norm", cp);
        snprintf(b, sizeof b, "%s.cross_attn_ln", op);
        if ((st = add_ln(w, c, a, b)) != STENO_OK) return st;
        snprintf(a, sizeof a, "%s/attention/linear_0", cp);
        snprintf(b, sizeof b, "%s.cross_attn.query", op);
        if ((st = add_linear(w, c, a, out, 1, -1)) != STENO_OK) return st;
        snprintf(k, sizeof k, "%s.cross_attn.key", op);
        snprintf(v, sizeof v, "%s.cross_attn.value", op);
        const char *kv[2] = {k, v};
        snprintf(a, sizeof a, "%s/attention/linear_1", cp);
        if ((st = add_linear(w, c, a, kv, 2, 0)) != STENO_OK) return st;
        snprintf(a, sizeof a, "%s/attention/linear_2", cp);
        snprintf(b, sizeof b, "%s.cross_attn.out", op);
        if ((st = add_linear(w, c, a, out, 1, -1)) != STENO_OK) return st;
    }
    snprintf(a, sizeof a, "%s/ffn/layer_norm", cp);
    snprintf(b, sizeof b, "%s.mlp_ln", op);
    if ((st = add_ln(w, c, a, b)) != STENO_OK) return st;
    snprintf(a, sizeof a, "%s/ffn/linear_0", cp);
    snprintf(d, sizeof d, "%s.mlp.0", op);
    const char *m0[1] = {d};
    if ((st = add_linear(w, c, a, m0, 1, -1)) != STENO_OK) return st;
    snprintf(a, sizeof a, "%s/ffn/linear_1", cp);
    snprintf(d, sizeof d, "%s.mlp.2", op);
    return add_linear(w, c, a, m0, 1, -1);
}

steno_status wtab_read_ct2(const char *path, wtab **out) {
    *out = NULL;
    wtab *w = wtab_new("ct2", path);
    if (!w) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    ct2_model *c = NULL;
    steno_status st = ct2_open(path, &c);
    if (st != STENO_OK) goto fail;
    if (wtab_own(w, c, 2) != 0) {
        st = steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (strcmp(ct2_spec_name(c), "WhisperSpec") != 0) {
        st = steno_fail(STENO_E_FORMAT, "%s: not a Whisper model (spec %s)", path, ct2_spec_name(c));
        goto fail;
    }
    static const char *const one[][2] = {
        {"encoder/conv1/weight", "encoder.conv1.weight"}, {"encoder/conv1/bias", "encoder.conv1.bias"},
        {"encoder/conv2/weight", "encoder.conv2.weight"}, {"encoder/conv2/bias", "encoder.conv2.bias"},
        {"encoder/position_encodings/encodings", "encoder.positional_embedding"},
        {"decoder/embeddings/weight", "decoder.token_embedding.weight"},
        {"decoder/position_encodings/encodings", "decoder.positional_embedding"},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if ((st = add_one(w, c, one[i][0], one[i][1])) != STENO_OK) goto fail;
    const int ne = count_layers(c, "encoder"), nd = count_layers(c, "decoder");
    for (int i = 0; i < ne; i++)
        if ((st = add_block(w, c, "encoder", i, "encoder")) != STENO_OK) goto fail;
    if ((st = add_ln(w, c, "encoder/layer_norm", "encoder.ln_post")) != STENO_OK) goto fail;
    for (int i = 0; i < nd; i++)
        if ((st = add_block(w, c, "decoder", i, "decoder")) != STENO_OK) goto fail;
    if ((st = add_ln(w, c, "decoder/layer_norm", "decoder.ln")) != STENO_OK) goto fail;
    int ok1 = 0, ok2 = 0;
    whisper_dims *d = &w->dims;
    d->n_audio_head = (int)ct2_scalar_int(c, "encoder/num_heads", &ok1);
    d->n_text_head = (int)ct2_scalar_int(c, "decoder/num_heads", &ok2);
    d->n_audio_layer = ne;
    d->n_text_layer = nd;
    if (!ok1 || !ok2) {
        st = steno_fail(STENO_E_FORMAT, "%s: missing encoder/num_heads or decoder/num_heads", path);
        goto fail;
    }
    if ((st = wtab_dims_from_shapes(w)) != STENO_OK) goto fail;
    *out = w;
    return STENO_OK;
fail:
    wtab_free(w);
    return st;
}
