/* loader.c — GGUF LLMs into llm/model.h's structs (see loader.h): the shared keys, the registry row's
 * hook, tensors by role with their shapes checked, every tensor of the file accounted for. */
#include "llm/loader.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "kernels/quant/quant.h"
#include "llm/arch.h"
#include "text/jinja/jinja.h"
#include "text/llm_vocab.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        steno_status st_ = (x);                                                                    \
        if (st_ != STENO_OK) return st_;                                                           \
    } while (0)

const char *llm_key(llm_loader *g, const char *suffix) {
    snprintf(g->key, sizeof g->key, "%s.%s", g->prefix, suffix);
    return g->key;
}

steno_status llm_get_int(llm_loader *g, const char *suffix, int def, int lo, int hi, int *out) {
    int64_t v;
    const char *k = llm_key(g, suffix);
    if (!gguf_get_int(g->m->gguf, k, &v)) {
        const gguf_kv *kv = gguf_find(g->m->gguf, k);
        if (kv && kv->type == GGUF_TYPE_ARRAY && kv->n > 0 && kv->arr_type != GGUF_TYPE_STRING &&
            kv->arr_type != GGUF_TYPE_FLOAT32 && kv->arr_type != GGUF_TYPE_FLOAT64) {
            /* per-layer arrays (e.g. head_count_kv): all values must agree here */
            v = gguf_arr_int(kv, 0);
            for (uint64_t i = 1; i < kv->n; i++)
                if (gguf_arr_int(kv, i) != v)
                    return steno_fail(STENO_E_UNSUPPORTED, "%s: %s varies per layer, which steno does not support",
                                      g->fn, k);
        } else if (kv) {
            return steno_fail(STENO_E_FORMAT, "%s: %s has type %s, expected an integer", g->fn, k,
                              gguf_type_name(kv->type));
        } else if (def >= 0) {
            *out = def;
            return STENO_OK;
        } else {
            return steno_fail(STENO_E_FORMAT, "%s: required metadata %s is missing", g->fn, k);
        }
    }
    if (v < lo || v > hi)
        return steno_fail(STENO_E_FORMAT, "%s: %s = %lld is out of range (%d..%d)", g->fn, k, (long long)v, lo, hi);
    *out = (int)v;
    return STENO_OK;
}

steno_status llm_get_float(llm_loader *g, const char *suffix, double def, int required, float *out) {
    double v;
    const char *k = llm_key(g, suffix);
    if (!gguf_get_float(g->m->gguf, k, &v)) {
        if (gguf_find(g->m->gguf, k)) return steno_fail(STENO_E_FORMAT, "%s: %s is not a number", g->fn, k);
        if (required) return steno_fail(STENO_E_FORMAT, "%s: required metadata %s is missing", g->fn, k);
        v = def;
    }
    if (!isfinite(v)) return steno_fail(STENO_E_FORMAT, "%s: %s is not finite", g->fn, k);
    *out = (float)v;
    return STENO_OK;
}

steno_status llm_get_bool(llm_loader *g, const char *suffix, int def, int *out) {
    int64_t v;
    const char *k = llm_key(g, suffix);
    if (gguf_get_int(g->m->gguf, k, &v)) {
        *out = v != 0;
        return STENO_OK;
    }
    if (gguf_find(g->m->gguf, k)) return steno_fail(STENO_E_FORMAT, "%s: %s is not a boolean", g->fn, k);
    *out = def;
    return STENO_OK;
}

static void claim(llm_loader *g, const gguf_tensor *t) {
    const gguf_tensor *t0 = gguf_tensor_at(g->m->gguf, 0);
    if (t0 && t >= t0 && t - t0 < gguf_n_tensors(g->m->gguf)) g->used[t - t0] = 1;
}

steno_status llm_get_mat3(llm_loader *g, const char *name, int64_t ne0, int64_t ne1, int64_t ne2, int required,
                          steno_mat *out) {
    memset(out, 0, sizeof *out);
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t) {
        if (!required) return STENO_OK;
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' is missing", g->fn, name);
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != 1) {
        char want[96];
        if (ne2 == 1) snprintf(want, sizeof want, "[%lld, %lld]", (long long)ne0, (long long)ne1);
        else snprintf(want, sizeof want, "[%lld, %lld, %lld]", (long long)ne0, (long long)ne1, (long long)ne2);
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected %s", g->fn,
                          name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                          want);
    }
    const steno_type_traits *tr = steno_type_get(t->type);
    if (!tr || !tr->vec_dot)
        return steno_fail(STENO_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which steno cannot multiply", g->fn, name,
                          steno_type_name(t->type));
    out->type = t->type;
    out->n_in = ne0;
    out->n_out = ne1;
    out->row_bytes = steno_row_size(t->type, ne0);
    out->data = t->data;
    g->m->weight_bytes += t->size;
    claim(g, t);
    return STENO_OK;
}

steno_status llm_get_mat(llm_loader *g, const char *name, int64_t ne0, int64_t ne1, int required, steno_mat *out) {
    return llm_get_mat3(g, name, ne0, ne1, 1, required, out);
}

static float *own(steno_llm *m, size_t n) {
    float **o = realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *o);
    if (!o) return NULL;
    m->owned = o;
    float *p = malloc(n * sizeof(float));
    if (!p) return NULL;
    m->owned[m->n_owned++] = p;
    return p;
}

steno_status llm_get_vec(llm_loader *g, const char *name, int64_t n, int required, const float **out) {
    *out = NULL;
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t) {
        if (!required) return STENO_OK;
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' is missing", g->fn, name);
    }
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has %lld x %lld values, expected %lld", g->fn, name,
                          (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    const steno_type_traits *tr = steno_type_get(t->type);
    if (!tr || !tr->to_float)
        return steno_fail(STENO_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which steno cannot read", g->fn, name,
                          steno_type_name(t->type));
    g->m->weight_bytes += t->size;
    claim(g, t);
    if (t->type == STENO_T_F32 && ((uintptr_t)t->data & 3) == 0) {
        *out = t->data;
        return STENO_OK;
    }
    float *p = own(g->m, (size_t)n);
    if (!p) return steno_fail(STENO_E_NOMEM, "%s: out of memory", g->fn);
    tr->to_float(t->data, p, n);
    *out = p;
    return STENO_OK;
}

int64_t llm_vec_len(llm_loader *g, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t) return 0;
    return t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1 ? t->ne[0] : -1;
}

/* ---- the keys every architecture shares ------------------------------------------------------ */

static steno_status shared_hparams(llm_loader *g, llm_hparams *hp) {
    steno_llm *m = g->m;
    TRY(llm_get_int(g, "embedding_length", -1, 1, 1 << 16, &hp->n_embd));
    TRY(llm_get_int(g, "block_count", -1, 1, 1024, &hp->n_layer));
    TRY(llm_get_int(g, "feed_forward_length", -1, 1, 1 << 20, &hp->n_ff));
    TRY(llm_get_int(g, "attention.head_count", -1, 1, 1024, &hp->n_head));
    TRY(llm_get_int(g, "attention.head_count_kv", hp->n_head, 1, hp->n_head, &hp->n_head_kv));
    if (hp->n_head % hp->n_head_kv != 0)
        return steno_fail(STENO_E_FORMAT, "%s: %d heads are not a multiple of %d KV heads", g->fn, hp->n_head,
                          hp->n_head_kv);
    if (hp->n_embd % hp->n_head != 0 && !gguf_find(m->gguf, llm_key(g, "attention.key_length")))
        return steno_fail(STENO_E_FORMAT, "%s: embedding length %d is not a multiple of %d heads", g->fn, hp->n_embd,
                          hp->n_head);
    TRY(llm_get_int(g, "attention.key_length", hp->n_embd / hp->n_head, 2, 4096, &hp->head_dim_k));
    TRY(llm_get_int(g, "attention.value_length", hp->head_dim_k, 1, 4096, &hp->head_dim_v));
    TRY(llm_get_int(g, "rope.dimension_count", hp->head_dim_k, 2, hp->head_dim_k, &hp->n_rot));
    if (hp->n_rot % 2) return steno_fail(STENO_E_FORMAT, "%s: rope.dimension_count %d is odd", g->fn, hp->n_rot);
    TRY(llm_get_int(g, "context_length", 4096, 1, 1 << 24, &hp->n_ctx_train));
    TRY(llm_get_float(g, "attention.layer_norm_rms_epsilon", 1e-5, 1, &hp->norm_eps));
    TRY(llm_get_float(g, "rope.freq_base", 10000.0, 0, &hp->rope_base));
    if (!(hp->rope_base > 0)) return steno_fail(STENO_E_FORMAT, "%s: rope.freq_base must be positive", g->fn);
    hp->rope_freq_scale = 1.0f;
    const gguf_str *rs = gguf_get_str(m->gguf, llm_key(g, "rope.scaling.type"));
    /* Llama 3's frequencies come as the rope_freqs tensor (read below), whatever the type says */
    /* LongRoPE's factors too (rope_factors_long/short below; rope.scaling.attn_factor) */
    if (rs && !(rs->len == 4 && memcmp(rs->ptr, "none", 4) == 0) && !(rs->len == 6 && memcmp(rs->ptr, "llama3", 6) == 0) &&
        !(rs->len == 8 && memcmp(rs->ptr, "longrope", 8) == 0)) {
        if (rs->len == 6 && memcmp(rs->ptr, "linear", 6) == 0) {
            float f;
            TRY(llm_get_float(g, "rope.scaling.factor", 1.0, 0, &f));
            if (!(f > 0)) return steno_fail(STENO_E_FORMAT, "%s: rope.scaling.factor must be positive", g->fn);
            hp->rope_freq_scale = 1.0f / f;
        } else {
            return steno_fail(STENO_E_UNSUPPORTED, "%s: RoPE scaling '%.*s' is not supported", g->fn,
                              (int)(rs->len > 32 ? 32 : rs->len), rs->ptr);
        }
    }
    /* mixture of experts (llama.cpp load_hparams: expert_count, expert_used_count, ...) */
    TRY(llm_get_int(g, "expert_count", 0, 0, 4096, &hp->n_expert));
    if (hp->n_expert > 0) {
        TRY(llm_get_int(g, "expert_used_count", -1, 1, hp->n_expert, &hp->n_expert_used));
        TRY(llm_get_int(g, "expert_feed_forward_length", hp->n_ff / hp->n_expert_used, 1, 1 << 20, &hp->n_ff_exp));
        TRY(llm_get_int(g, "expert_shared_feed_forward_length", hp->n_ff, 1, 1 << 20, &hp->n_ff_shexp));
        TRY(llm_get_float(g, "expert_weights_scale", 0.0, 0, &hp->expert_weights_scale));
    }
    if (hp->expert_weights_scale == 0.0f) hp->expert_weights_scale = 1.0f;
    hp->moe_norm_w = hp->arch->moe_norm_w;
    if ((hp->arch->required & LT_BIT(LT_GATE_INP)) && hp->n_expert == 0)
        return steno_fail(STENO_E_FORMAT, "%s: required metadata %s is missing", g->fn, llm_key(g, "expert_count"));
    TRY(llm_get_float(g, "rope.scaling.attn_factor", 1.0, 0, &hp->rope_mscale));
    TRY(llm_get_int(g, "rope.scaling.original_context_length", hp->n_ctx_train, 1, 1 << 24, &hp->n_ctx_orig));
    hp->fused_gate_up = hp->arch->fused_gate_up;
    hp->is_swa = calloc((size_t)hp->n_layer, 1);
    if (!hp->is_swa) return steno_fail(STENO_E_NOMEM, "%s: out of memory", g->fn);
    hp->embd_scale = 1.0f;
    hp->kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->q_scale = 1.0f;
    hp->logit_scale = 1.0f;
    hp->res_scale = 1.0f;
    hp->rope_neox = hp->arch->rope_neox;
    hp->qk_norm = hp->arch->qk_norm;
    return STENO_OK;
}

/* ---- tensors by role ----------------------------------------------------------------------- */

typedef enum { D_1, D_E, D_NQ, D_NK, D_NV, D_NO, D_F, D_HK, D_NEXP, D_FEXP, D_FSH, D_NQKV } dim;

static const struct {
    const char *name; /* after "blk.N." */
    dim d0, d1, d2;   /* d1 == D_1: a vector; d2 != D_1: one matrix per expert */
    size_t off;       /* into llm_layer: a steno_mat (matrices) or a const float * (vectors) */
} ROLES[LT_COUNT] = {
    [LT_ATTN_NORM] = {"attn_norm.weight", D_E, D_1, D_1, offsetof(llm_layer, attn_norm)},
    [LT_Q] = {"attn_q.weight", D_E, D_NQ, D_1, offsetof(llm_layer, wq)},
    [LT_K] = {"attn_k.weight", D_E, D_NK, D_1, offsetof(llm_layer, wk)},
    [LT_V] = {"attn_v.weight", D_E, D_NV, D_1, offsetof(llm_layer, wv)},
    [LT_O] = {"attn_output.weight", D_NO, D_E, D_1, offsetof(llm_layer, wo)},
    [LT_Q_BIAS] = {"attn_q.bias", D_NQ, D_1, D_1, offsetof(llm_layer, bq)},
    [LT_K_BIAS] = {"attn_k.bias", D_NK, D_1, D_1, offsetof(llm_layer, bk)},
    [LT_V_BIAS] = {"attn_v.bias", D_NV, D_1, D_1, offsetof(llm_layer, bv)},
    [LT_O_BIAS] = {"attn_output.bias", D_E, D_1, D_1, offsetof(llm_layer, bo)},
    [LT_Q_NORM] = {"attn_q_norm.weight", D_HK, D_1, D_1, offsetof(llm_layer, q_norm)},
    [LT_K_NORM] = {"attn_k_norm.weight", D_HK, D_1, D_1, offsetof(llm_layer, k_norm)},
    [LT_POST_ATTN_NORM] = {"post_attention_norm.weight", D_E, D_1, D_1, offsetof(llm_layer, post_attn_norm)},
    [LT_FFN_NORM] = {"ffn_norm.weight", D_E, D_1, D_1, offsetof(llm_layer, ffn_norm)},
    [LT_GATE] = {"ffn_gate.weight", D_E, D_F, D_1, offsetof(llm_layer, ffn_gate)},
    [LT_UP] = {"ffn_up.weight", D_E, D_F, D_1, offsetof(llm_layer, ffn_up)},
    [LT_DOWN] = {"ffn_down.weight", D_F, D_E, D_1, offsetof(llm_layer, ffn_down)},
    [LT_POST_FFN_NORM] = {"post_ffw_norm.weight", D_E, D_1, D_1, offsetof(llm_layer, post_ffn_norm)},
    [LT_QKV] = {"attn_qkv.weight", D_E, D_NQKV, D_1, offsetof(llm_layer, wqkv)},
    [LT_GATE_INP] = {"ffn_gate_inp.weight", D_E, D_NEXP, D_1, offsetof(llm_layer, ffn_gate_inp)},
    [LT_GATE_EXPS] = {"ffn_gate_exps.weight", D_E, D_FEXP, D_NEXP, offsetof(llm_layer, ffn_gate_exps)},
    [LT_UP_EXPS] = {"ffn_up_exps.weight", D_E, D_FEXP, D_NEXP, offsetof(llm_layer, ffn_up_exps)},
    [LT_DOWN_EXPS] = {"ffn_down_exps.weight", D_FEXP, D_E, D_NEXP, offsetof(llm_layer, ffn_down_exps)},
    [LT_GATE_INP_SHEXP] = {"ffn_gate_inp_shexp.weight", D_E, D_1, D_1, offsetof(llm_layer, ffn_gate_inp_shexp)},
    [LT_GATE_SHEXP] = {"ffn_gate_shexp.weight", D_E, D_FSH, D_1, offsetof(llm_layer, ffn_gate_shexp)},
    [LT_UP_SHEXP] = {"ffn_up_shexp.weight", D_E, D_FSH, D_1, offsetof(llm_layer, ffn_up_shexp)},
    [LT_DOWN_SHEXP] = {"ffn_down_shexp.weight", D_FSH, D_E, D_1, offsetof(llm_layer, ffn_down_shexp)},
};

static int64_t dim_of(const llm_hparams *hp, dim d, llm_tensor_role r) {
    switch (d) {
    case D_1: return 1;
    case D_E: return hp->n_embd;
    case D_NQ: return (int64_t)hp->n_head * hp->head_dim_k;
    case D_NK: return (int64_t)hp->n_head_kv * hp->head_dim_k;
    case D_NV: return (int64_t)hp->n_head_kv * hp->head_dim_v;
    case D_NO: return (int64_t)hp->n_head * hp->head_dim_v;
    case D_F: return hp->n_ff;
    case D_NEXP: return hp->n_expert;
    case D_FEXP: return hp->n_ff_exp;
    case D_FSH: return hp->n_ff_shexp;
    case D_NQKV: return (int64_t)hp->n_head * hp->head_dim_k + (int64_t)hp->n_head_kv * (hp->head_dim_k + hp->head_dim_v);
    case D_HK: /* QK-norm: one head's width, or the whole projection (OLMo 2) */
        if (hp->qk_norm != LLM_QK_NORM_FULL) return hp->head_dim_k;
        return r == LT_Q_NORM ? (int64_t)hp->n_head * hp->head_dim_k : (int64_t)hp->n_head_kv * hp->head_dim_k;
    }
    return 0;
}

static steno_status load_layer(llm_loader *g, int l, llm_layer *L) {
    const llm_arch *a = g->m->hp.arch;
    const llm_hparams *hp = &g->m->hp;
    char nm[128];
    for (int r = 0; r < LT_COUNT; r++) {
        const unsigned bit = LT_BIT(r);
        if (!((a->required | a->optional) & bit)) continue;
        const int required = (a->required & bit) != 0;
        snprintf(nm, sizeof nm, "blk.%d.%s", l, ROLES[r].name);
        const int64_t d0 = dim_of(hp, ROLES[r].d0, (llm_tensor_role)r);
        char *field = (char *)L + ROLES[r].off;
        if (ROLES[r].d1 == D_1) TRY(llm_get_vec(g, nm, d0, required, (const float **)(void *)field));
        else if (ROLES[r].d2 == D_1) {
            int64_t d1 = dim_of(hp, ROLES[r].d1, (llm_tensor_role)r);
            if (r == LT_UP && hp->fused_gate_up) d1 *= 2; /* [gate; up] */
            TRY(llm_get_mat(g, nm, d0, d1, required, (steno_mat *)(void *)field));
        }
        else
            TRY(llm_get_mat3(g, nm, d0, dim_of(hp, ROLES[r].d1, (llm_tensor_role)r), hp->n_expert, required,
                             (steno_mat *)(void *)field));
    }
    if ((L->q_norm == NULL) != (L->k_norm == NULL))
        return steno_fail(STENO_E_FORMAT, "%s: blk.%d has only one of attn_q_norm and attn_k_norm", g->fn, l);
    return STENO_OK;
}

/* The generic tier takes QK-norm in either shape; the first layer's decides (every layer must agree). */
static void generic_qk_norm(llm_loader *g, llm_hparams *hp) {
    const int64_t n = llm_vec_len(g, "blk.0.attn_q_norm.weight");
    hp->qk_norm = n == 0 ? LLM_QK_NORM_NONE
                  : n == (int64_t)hp->n_head * hp->head_dim_k && n != hp->head_dim_k ? LLM_QK_NORM_FULL
                                                                                     : LLM_QK_NORM_HEAD;
}

static steno_status load_tensors(llm_loader *g) {
    steno_llm *m = g->m;
    llm_hparams *hp = &m->hp;
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return steno_fail(STENO_E_FORMAT, "%s: tensor 'token_embd.weight' is missing", g->fn);
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return steno_fail(STENO_E_FORMAT, "%s: token_embd.weight has %lld rows", g->fn, (long long)te->ne[1]);
    hp->n_vocab = (int)te->ne[1];
    int nv;
    TRY(llm_get_int(g, "vocab_size", hp->n_vocab, hp->n_vocab, hp->n_vocab, &nv));
    TRY(llm_get_mat(g, "token_embd.weight", hp->n_embd, hp->n_vocab, 1, &m->tok_embd));
    TRY(llm_get_mat(g, "output.weight", hp->n_embd, hp->n_vocab, 0, &m->output));
    if (!m->output.data) m->output = m->tok_embd;
    TRY(llm_get_vec(g, "output_norm.weight", hp->n_embd, 1, &m->output_norm));
    TRY(llm_get_vec(g, "rope_freqs.weight", hp->n_rot / 2, 0, &hp->rope_freqs));
    TRY(llm_get_vec(g, "rope_factors_long.weight", hp->n_rot / 2, 0, &hp->rope_long));
    TRY(llm_get_vec(g, "rope_factors_short.weight", hp->n_rot / 2, 0, &hp->rope_short));
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return steno_fail(STENO_E_NOMEM, "%s: out of memory", g->fn);
    for (int l = 0; l < hp->n_layer; l++) {
        TRY(load_layer(g, l, &m->layers[l]));
        const llm_layer *L = &m->layers[l], *L0 = &m->layers[0];
        /* the forward applies a piece to every layer or to none */
        if ((L->q_norm == NULL) != (L0->q_norm == NULL) || (L->attn_norm == NULL) != (L0->attn_norm == NULL) ||
            (L->ffn_norm == NULL) != (L0->ffn_norm == NULL) ||
            (L->post_attn_norm == NULL) != (L0->post_attn_norm == NULL) ||
            (L->post_ffn_norm == NULL) != (L0->post_ffn_norm == NULL))
            return steno_fail(STENO_E_UNSUPPORTED, "%s: blk.%d's norms differ from blk.0's, which steno does not support",
                              g->fn, l);
    }
    if (!m->layers[0].q_norm) hp->qk_norm = LLM_QK_NORM_NONE;
    return STENO_OK;
}

/* Every tensor of the file must belong to a role: one no role claims is a part of the model the
 * forward would skip. */
static steno_status check_all_claimed(llm_loader *g, int generic) {
    const int n = gguf_n_tensors(g->m->gguf);
    for (int i = 0; i < n; i++) {
        if (g->used[i]) continue;
        char names[512];
        llm_arch_names(names, sizeof names);
        const char *t = gguf_tensor_at(g->m->gguf, i)->name;
        if (generic)
            return steno_fail(STENO_E_UNSUPPORTED,
                              "%s: architecture '%s' is not in steno's table and does not fit the generic dense "
                              "decoder: tensor '%s' is not part of its layout (steno's architectures: %s)",
                              g->fn, g->prefix, t, names);
        return steno_fail(STENO_E_UNSUPPORTED, "%s: tensor '%s' is not part of the %s layout steno knows", g->fn, t,
                          g->prefix);
    }
    return STENO_OK;
}

static char *dup_str(const gguf_str *s) {
    char *p = malloc(s->len + 1);
    if (p) {
        memcpy(p, s->ptr, s->len);
        p[s->len] = '\0';
    }
    return p;
}

steno_status llm_load_gguf(steno_llm *m) {
    llm_loader g = {m, m->path, NULL, NULL, {0}};
    const gguf_str *arch = gguf_get_str(m->gguf, "general.architecture");
    if (!arch) return steno_fail(STENO_E_FORMAT, "%s: general.architecture is missing", m->path);
    char archbuf[64];
    snprintf(archbuf, sizeof archbuf, "%.*s", (int)(arch->len > 63 ? 63 : arch->len), arch->ptr);
    llm_hparams *hp = &m->hp;
    hp->arch = llm_arch_find(archbuf);
    const int generic = hp->arch == NULL;
    if (generic) hp->arch = llm_arch_generic();
    if (!(m->arch_name = strdup(archbuf))) return steno_fail(STENO_E_NOMEM, "%s: out of memory", m->path);
    hp->arch_name = m->arch_name;
    g.prefix = m->arch_name;
    const gguf_str *name = gguf_get_str(m->gguf, "general.name");
    if (name) m->name = dup_str(name);
    const gguf_str *tmpl = gguf_get_str(m->gguf, "tokenizer.chat_template");
    if (tmpl && (m->chat_template = dup_str(tmpl)) != NULL) {
        /* a template that does not compile does not stop the load: completions still work, and a
         * chat request gets the error with the template's line */
        if (steno_jinja_compile(m->chat_template, tmpl->len, &m->chat_jinja) != STENO_OK) steno_clear_error();
    }
    const int nt = gguf_n_tensors(m->gguf);
    g.used = calloc((size_t)(nt > 0 ? nt : 1), 1);
    if (!g.used) return steno_fail(STENO_E_NOMEM, "%s: out of memory", m->path);
    steno_status st = shared_hparams(&g, hp);
    if (st == STENO_OK && generic) generic_qk_norm(&g, hp);
    if (st == STENO_OK && hp->arch->hparams) st = hp->arch->hparams(&g, hp);
    if (st == STENO_OK) st = load_tensors(&g);
    if (st == STENO_OK) st = check_all_claimed(&g, generic);
    free(g.used);
    if (st != STENO_OK) return st;
    if (generic) {
        char names[512];
        llm_arch_names(names, sizeof names);
        fprintf(stderr,
                "steno: %s: architecture '%s' is not in steno's table (%s); it runs on the generic dense decoder, "
                "driven by its metadata and tensors\n",
                m->path, archbuf, names);
    }
    return steno_vocab_from_gguf(m->gguf, hp->n_vocab, &m->vocab);
}
