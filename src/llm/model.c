/* model.c — loading LLMs from GGUF (llama, gemma3) and llama2.c checkpoints into llm/model.h's
 * structs; model-level public API (steno_llm.h). The configuration is read from the file's metadata
 * (GGUF keys as llama.cpp's llama-model.cpp load_hparams; llama2.c header) and every tensor's shape is
 * checked against it before use. */
#include "llm/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "kernels/quant/quant.h"
#include "text/jinja/jinja.h"
#include "text/llm_vocab.h"

steno_llm_load_params steno_llm_default_load_params(void) {
    steno_llm_load_params p = {NULL};
    return p;
}

/* ------------------------------------------------------------------------------------------- */
/* Name resolution                                                                               */

typedef struct {
    const char *name, *file;
} known_model;

static const known_model KNOWN[] = {
    {"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"},
    {"gemma3", "gemma-3-270m-q4_k_m.gguf"},
};

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

steno_status steno_llm_resolve(const char *model, char *buf, size_t n) {
    struct stat st;
    if (!model || !*model) return steno_fail(STENO_E_INVALID_ARG, "no model given");
    if (!buf || n == 0) return steno_fail(STENO_E_INVALID_ARG, "%s: no buffer for the resolved path", model);
    if (stat(model, &st) == 0 || strchr(model, '/')) {
        if ((size_t)snprintf(buf, n, "%s", model) >= n)
            return steno_fail(STENO_E_INVALID_ARG, "%s: path longer than the buffer (%zu bytes)", model, n);
        return STENO_OK;
    }
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++) {
        if (strcmp(model, KNOWN[i].name) != 0) continue;
        const char *e;
        char root[4096];
        if ((e = getenv("STENO_MODELS_DIR")) && *e) snprintf(root, sizeof root, "%s", e);
        else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(root, sizeof root, "%s/steno/models", e);
        else if ((e = getenv("HOME")) && *e) snprintf(root, sizeof root, "%s/.cache/steno/models", e);
        else return steno_fail(STENO_E_IO, "%s: no model cache (set STENO_MODELS_DIR or HOME)", model);
        if ((size_t)snprintf(buf, n, "%s/%s/%s", root, KNOWN[i].name, KNOWN[i].file) >= n)
            return steno_fail(STENO_E_INVALID_ARG, "%s: resolved path longer than the buffer (%zu bytes)", model, n);
        if (!is_file(buf))
            return steno_fail(STENO_E_IO, "%s: model not found at %s (fetch it with scripts/fetch_llm_models.sh %s)",
                              model, buf, model);
        return STENO_OK;
    }
    return steno_fail(STENO_E_IO, "%s: no such file, and not a known model name (smollm2, gemma3)", model);
}

/* ------------------------------------------------------------------------------------------- */

void steno_llm_free(steno_llm *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    free(m->hp.is_swa);
    steno_vocab_free(m->vocab);
    gguf_close(m->gguf);
    llama2c_close(m->l2c);
    free(m->path);
    free(m->name);
    free(m->chat_template);
    steno_jinja_template_free(m->chat_jinja);
    llm_fast_free(m);
    free(m);
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

/* ---- GGUF ---------------------------------------------------------------------------------- */

typedef struct {
    steno_llm *m;
    const char *fn;
    const char *arch; /* key prefix */
    char key[256];
} gctx;

static const char *akey(gctx *g, const char *suffix) {
    snprintf(g->key, sizeof g->key, "%s.%s", g->arch, suffix);
    return g->key;
}

/* Reads {arch}.suffix as a positive int (required unless def >= 0). */
static steno_status get_int(gctx *g, const char *suffix, int def, int lo, int hi, int *out) {
    int64_t v;
    const char *k = akey(g, suffix);
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

static steno_status get_float(gctx *g, const char *suffix, double def, int required, float *out) {
    double v;
    const char *k = akey(g, suffix);
    if (!gguf_get_float(g->m->gguf, k, &v)) {
        if (gguf_find(g->m->gguf, k))
            return steno_fail(STENO_E_FORMAT, "%s: %s is not a number", g->fn, k);
        if (required) return steno_fail(STENO_E_FORMAT, "%s: required metadata %s is missing", g->fn, k);
        v = def;
    }
    if (!isfinite(v)) return steno_fail(STENO_E_FORMAT, "%s: %s is not finite", g->fn, k);
    *out = (float)v;
    return STENO_OK;
}

/* A 2-D weight [ne0 (row length)][ne1 rows]. */
static steno_status get_mat(gctx *g, const char *name, int64_t ne0, int64_t ne1, int required, steno_mat *out) {
    memset(out, 0, sizeof *out);
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t) {
        if (!required) return STENO_OK;
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' is missing", g->fn, name);
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1)
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                          g->fn, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                          (long long)t->ne[3], (long long)ne0, (long long)ne1);
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
    return STENO_OK;
}

/* A 1-D float vector of n values (converted to float32 when stored otherwise). */
static steno_status get_vec(gctx *g, const char *name, int64_t n, int required, const float **out) {
    *out = NULL;
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t) {
        if (!required) return STENO_OK;
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' is missing", g->fn, name);
    }
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has %lld x %lld values, expected %lld", g->fn, name,
                          (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    g->m->weight_bytes += t->size;
    if (t->type == STENO_T_F32 && ((uintptr_t)t->data & 3) == 0) {
        *out = t->data;
        return STENO_OK;
    }
    float *p = own(g->m, (size_t)n);
    if (!p) return steno_fail(STENO_E_NOMEM, "%s: out of memory", g->fn);
    steno_type_get(t->type)->to_float(t->data, p, n);
    *out = p;
    return STENO_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        steno_status st_ = (x);                                                                    \
        if (st_ != STENO_OK) return st_;                                                           \
    } while (0)

static steno_status load_gguf(steno_llm *m) {
    gctx g = {m, m->path, NULL, {0}};
    const gguf_str *arch = gguf_get_str(m->gguf, "general.architecture");
    if (!arch) return steno_fail(STENO_E_FORMAT, "%s: general.architecture is missing", m->path);
    char archbuf[64];
    snprintf(archbuf, sizeof archbuf, "%.*s", (int)(arch->len > 63 ? 63 : arch->len), arch->ptr);
    llm_hparams *hp = &m->hp;
    if (strcmp(archbuf, "llama") == 0) hp->arch = LLM_ARCH_LLAMA;
    else if (strcmp(archbuf, "gemma3") == 0) hp->arch = LLM_ARCH_GEMMA3;
    else
        return steno_fail(STENO_E_UNSUPPORTED, "%s: architecture '%s' is not supported (steno runs llama and gemma3)",
                          m->path, archbuf);
    g.arch = hp->arch == LLM_ARCH_LLAMA ? "llama" : "gemma3";
    const gguf_str *name = gguf_get_str(m->gguf, "general.name");
    if (name) {
        m->name = malloc(name->len + 1);
        if (m->name) {
            memcpy(m->name, name->ptr, name->len);
            m->name[name->len] = '\0';
        }
    }
    const gguf_str *tmpl = gguf_get_str(m->gguf, "tokenizer.chat_template");
    if (tmpl) {
        m->chat_template = malloc(tmpl->len + 1);
        if (m->chat_template) {
            memcpy(m->chat_template, tmpl->ptr, tmpl->len);
            m->chat_template[tmpl->len] = '\0';
            /* a template that does not compile does not stop the load: completions still work,
             * and a chat request gets the error with the template's line */
            if (steno_jinja_compile(m->chat_template, tmpl->len, &m->chat_jinja) != STENO_OK) steno_clear_error();
        }
    }

    TRY(get_int(&g, "embedding_length", -1, 1, 1 << 16, &hp->n_embd));
    TRY(get_int(&g, "block_count", -1, 1, 1024, &hp->n_layer));
    TRY(get_int(&g, "feed_forward_length", -1, 1, 1 << 20, &hp->n_ff));
    TRY(get_int(&g, "attention.head_count", -1, 1, 1024, &hp->n_head));
    TRY(get_int(&g, "attention.head_count_kv", hp->n_head, 1, hp->n_head, &hp->n_head_kv));
    if (hp->n_head % hp->n_head_kv != 0)
        return steno_fail(STENO_E_FORMAT, "%s: %d heads are not a multiple of %d KV heads", m->path, hp->n_head,
                          hp->n_head_kv);
    if (hp->n_embd % hp->n_head != 0 && !gguf_find(m->gguf, akey(&g, "attention.key_length")))
        return steno_fail(STENO_E_FORMAT, "%s: embedding length %d is not a multiple of %d heads", m->path,
                          hp->n_embd, hp->n_head);
    TRY(get_int(&g, "attention.key_length", hp->n_embd / hp->n_head, 2, 4096, &hp->head_dim_k));
    TRY(get_int(&g, "attention.value_length", hp->head_dim_k, 1, 4096, &hp->head_dim_v));
    TRY(get_int(&g, "rope.dimension_count", hp->head_dim_k, 2, hp->head_dim_k, &hp->n_rot));
    if (hp->n_rot % 2) return steno_fail(STENO_E_FORMAT, "%s: rope.dimension_count %d is odd", m->path, hp->n_rot);
    TRY(get_int(&g, "context_length", 4096, 1, 1 << 24, &hp->n_ctx_train));
    TRY(get_float(&g, "attention.layer_norm_rms_epsilon", 1e-5, 1, &hp->norm_eps));
    TRY(get_float(&g, "rope.freq_base", 10000.0, 0, &hp->rope_base));
    if (!(hp->rope_base > 0)) return steno_fail(STENO_E_FORMAT, "%s: rope.freq_base must be positive", m->path);
    hp->rope_freq_scale = 1.0f;
    const gguf_str *rs = gguf_get_str(m->gguf, akey(&g, "rope.scaling.type"));
    if (rs && !(rs->len == 4 && memcmp(rs->ptr, "none", 4) == 0)) {
        if (rs->len == 6 && memcmp(rs->ptr, "linear", 6) == 0) {
            float f;
            TRY(get_float(&g, "rope.scaling.factor", 1.0, 0, &f));
            if (!(f > 0)) return steno_fail(STENO_E_FORMAT, "%s: rope.scaling.factor must be positive", m->path);
            hp->rope_freq_scale = 1.0f / f;
        } else {
            return steno_fail(STENO_E_UNSUPPORTED, "%s: RoPE scaling '%.*s' is not supported", m->path,
                              (int)(rs->len > 32 ? 32 : rs->len), rs->ptr);
        }
    }
    hp->is_swa = calloc((size_t)hp->n_layer, 1);
    if (!hp->is_swa) return steno_fail(STENO_E_NOMEM, "%s: out of memory", m->path);
    hp->embd_scale = 1.0f;
    hp->kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->q_scale = 1.0f;
    if (hp->arch == LLM_ARCH_LLAMA) {
        hp->rope_neox = 0;
    } else {
        /* llama.cpp models/gemma3.cpp load_arch_hparams */
        hp->rope_neox = 1;
        TRY(get_int(&g, "attention.sliding_window", 0, 0, 1 << 24, &hp->n_swa));
        hp->rope_base_swa = hp->rope_base;
        if (hp->n_swa > 0) {
            int pattern = 6;
            const gguf_kv *pk = gguf_find(m->gguf, akey(&g, "attention.sliding_window_pattern"));
            if (pk && pk->type == GGUF_TYPE_ARRAY) {
                if (pk->n != (uint64_t)hp->n_layer || pk->arr_type == GGUF_TYPE_STRING)
                    return steno_fail(STENO_E_FORMAT, "%s: %s does not have one entry per layer", m->path, g.key);
                for (int l = 0; l < hp->n_layer; l++) hp->is_swa[l] = gguf_arr_int(pk, (uint64_t)l) != 0;
            } else {
                TRY(get_int(&g, "attention.sliding_window_pattern", 6, 0, 1 << 16, &pattern));
                for (int l = 0; l < hp->n_layer; l++) hp->is_swa[l] = pattern == 0 || (l % pattern < pattern - 1);
            }
            TRY(get_float(&g, "rope.freq_base_swa", 10000.0, 0, &hp->rope_base_swa));
        }
        hp->embd_scale = sqrtf((float)hp->n_embd);
        /* gemma_pytorch config: query_pre_attn_scalar; the 27B model (62 layers) uses n_embd/n_head */
        hp->q_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                        : 1.0f / sqrtf((float)hp->head_dim_k);
        hp->kq_scale = 1.0f;
        TRY(get_float(&g, "final_logit_softcapping", 0.0, 0, &hp->logit_softcap));
    }

    /* tensors */
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return steno_fail(STENO_E_FORMAT, "%s: tensor 'token_embd.weight' is missing", m->path);
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return steno_fail(STENO_E_FORMAT, "%s: token_embd.weight has %lld rows", m->path, (long long)te->ne[1]);
    hp->n_vocab = (int)te->ne[1];
    int nv;
    TRY(get_int(&g, "vocab_size", hp->n_vocab, hp->n_vocab, hp->n_vocab, &nv));
    TRY(get_mat(&g, "token_embd.weight", hp->n_embd, hp->n_vocab, 1, &m->tok_embd));
    TRY(get_mat(&g, "output.weight", hp->n_embd, hp->n_vocab, 0, &m->output));
    if (!m->output.data) m->output = m->tok_embd;
    TRY(get_vec(&g, "output_norm.weight", hp->n_embd, 1, &m->output_norm));
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return steno_fail(STENO_E_NOMEM, "%s: out of memory", m->path);
    const int64_t nq = (int64_t)hp->n_head * hp->head_dim_k, nk = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  nvv = (int64_t)hp->n_head_kv * hp->head_dim_v, no = (int64_t)hp->n_head * hp->head_dim_v;
    char nm[96];
    for (int l = 0; l < hp->n_layer; l++) {
        llm_layer *L = &m->layers[l];
#define NM(s) (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), nm)
        TRY(get_vec(&g, NM("attn_norm.weight"), hp->n_embd, 1, &L->attn_norm));
        TRY(get_mat(&g, NM("attn_q.weight"), hp->n_embd, nq, 1, &L->wq));
        TRY(get_mat(&g, NM("attn_k.weight"), hp->n_embd, nk, 1, &L->wk));
        TRY(get_mat(&g, NM("attn_v.weight"), hp->n_embd, nvv, 1, &L->wv));
        TRY(get_mat(&g, NM("attn_output.weight"), no, hp->n_embd, 1, &L->wo));
        TRY(get_vec(&g, NM("ffn_norm.weight"), hp->n_embd, 1, &L->ffn_norm));
        TRY(get_mat(&g, NM("ffn_gate.weight"), hp->n_embd, hp->n_ff, 1, &L->ffn_gate));
        TRY(get_mat(&g, NM("ffn_up.weight"), hp->n_embd, hp->n_ff, 1, &L->ffn_up));
        TRY(get_mat(&g, NM("ffn_down.weight"), hp->n_ff, hp->n_embd, 1, &L->ffn_down));
        if (hp->arch == LLM_ARCH_GEMMA3) {
            TRY(get_vec(&g, NM("attn_q_norm.weight"), hp->head_dim_k, 1, &L->q_norm));
            TRY(get_vec(&g, NM("attn_k_norm.weight"), hp->head_dim_k, 1, &L->k_norm));
            TRY(get_vec(&g, NM("post_attention_norm.weight"), hp->n_embd, 1, &L->post_attn_norm));
            TRY(get_vec(&g, NM("post_ffw_norm.weight"), hp->n_embd, 1, &L->post_ffn_norm));
        }
#undef NM
    }
    return steno_vocab_from_gguf(m->gguf, hp->n_vocab, &m->vocab);
}

/* ---- llama2.c ------------------------------------------------------------------------------ */

static steno_mat f32_mat(const float *p, int n_in, int n_out) {
    steno_mat w = {STENO_T_F32, n_in, n_out, (size_t)n_in * 4, p, NULL};
    return w;
}

static steno_status load_llama2c(steno_llm *m, const steno_llm_load_params *lp) {
    TRY(llama2c_open(m->path, &m->l2c));
    const llama2c_config *c = llama2c_get_config(m->l2c);
    const llama2c_weights *w = llama2c_get_weights(m->l2c);
    llm_hparams *hp = &m->hp;
    hp->arch = LLM_ARCH_LLAMA;
    hp->llama2c = 1;
    hp->n_vocab = c->vocab_size;
    hp->n_ctx_train = c->seq_len;
    hp->n_embd = c->dim;
    hp->n_layer = c->n_layers;
    hp->n_head = c->n_heads;
    hp->n_head_kv = c->n_kv_heads;
    hp->head_dim_k = hp->head_dim_v = c->dim / c->n_heads;
    hp->n_ff = c->hidden_dim;
    hp->norm_eps = 1e-5f; /* run.c rmsnorm() */
    hp->n_rot = hp->head_dim_k;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->embd_scale = 1.0f;
    hp->q_scale = 1.0f;
    hp->kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->is_swa = calloc((size_t)hp->n_layer, 1);
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!hp->is_swa || !m->layers) return steno_fail(STENO_E_NOMEM, "%s: out of memory", m->path);
    const int dim = c->dim, hid = c->hidden_dim, kv_dim = c->n_kv_heads * (c->dim / c->n_heads);
    m->tok_embd = f32_mat(w->token_embedding, dim, c->vocab_size);
    m->output = f32_mat(w->wcls, dim, c->vocab_size);
    m->output_norm = w->rms_final;
    for (int l = 0; l < hp->n_layer; l++) {
        llm_layer *L = &m->layers[l];
        L->attn_norm = w->rms_att + (size_t)l * dim;
        L->ffn_norm = w->rms_ffn + (size_t)l * dim;
        L->wq = f32_mat(w->wq + (size_t)l * dim * dim, dim, dim);
        L->wk = f32_mat(w->wk + (size_t)l * kv_dim * dim, dim, kv_dim);
        L->wv = f32_mat(w->wv + (size_t)l * kv_dim * dim, dim, kv_dim);
        L->wo = f32_mat(w->wo + (size_t)l * dim * dim, dim, dim);
        L->ffn_gate = f32_mat(w->w1 + (size_t)l * hid * dim, dim, hid);
        L->ffn_down = f32_mat(w->w2 + (size_t)l * dim * hid, hid, dim);
        L->ffn_up = f32_mat(w->w3 + (size_t)l * hid * dim, dim, hid);
    }
    m->weight_bytes = 0;
    {
        struct stat st;
        if (stat(m->path, &st) == 0) m->weight_bytes = (size_t)st.st_size;
    }
    /* tokenizer: --tokenizer, else tokenizer.bin or tok<vocab>.bin beside the model */
    char tp[4096];
    if (lp && lp->tokenizer_path) {
        snprintf(tp, sizeof tp, "%s", lp->tokenizer_path);
    } else {
        const char *slash = strrchr(m->path, '/');
        int dl = slash ? (int)(slash - m->path + 1) : 0;
        snprintf(tp, sizeof tp, "%.*stokenizer.bin", dl, m->path);
        if (!is_file(tp)) {
            char alt[4096];
            snprintf(alt, sizeof alt, "%.*stok%d.bin", dl, m->path, c->vocab_size);
            if (!is_file(alt))
                return steno_fail(STENO_E_IO, "%s: no tokenizer beside the model (tried %s and %s; use --tokenizer)",
                                  m->path, tp, alt);
            snprintf(tp, sizeof tp, "%s", alt);
        }
    }
    llama2c_tokenizer *tok;
    TRY(llama2c_tokenizer_load(tp, c->vocab_size, &tok));
    steno_status st = steno_vocab_from_llama2c(tok, tp, &m->vocab);
    llama2c_tokenizer_free(tok);
    return st;
}

steno_status steno_llm_load(const char *path, const steno_llm_load_params *params, steno_llm **out) {
    *out = NULL;
    char resolved[4096];
    TRY(steno_llm_resolve(path, resolved, sizeof resolved));
    steno_llm *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(resolved))) {
        free(m);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", resolved);
    }
    /* GGUF files start with "GGUF" (and a .gguf name means GGUF whatever it starts with); anything
     * else is tried as a llama2.c checkpoint. */
    char magic[4] = {0};
    FILE *f = fopen(resolved, "rb");
    if (!f) {
        int e = errno;
        steno_llm_free(m);
        return steno_fail(STENO_E_IO, "%s: %s", resolved, strerror(e));
    }
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    steno_status st;
    size_t pl = strlen(resolved);
    int gguf_name = pl > 5 && strcmp(resolved + pl - 5, ".gguf") == 0;
    if ((got == 4 && memcmp(magic, "GGUF", 4) == 0) || gguf_name) {
        st = gguf_open(resolved, &m->gguf);
        if (st == STENO_OK) st = load_gguf(m);
    } else {
        st = load_llama2c(m, params);
    }
    if (st != STENO_OK) {
        steno_llm_free(m);
        return st;
    }
    if (!m->name) {
        const char *b = strrchr(resolved, '/');
        m->name = strdup(b ? b + 1 : resolved);
    }
    *out = m;
    return STENO_OK;
}

void steno_llm_get_info(const steno_llm *m, steno_llm_info *info) {
    const llm_hparams *hp = &m->hp;
    info->arch = hp->arch == LLM_ARCH_GEMMA3 ? "gemma3" : "llama";
    info->name = m->name ? m->name : "";
    info->format = hp->llama2c ? "llama2c" : "gguf";
    info->n_vocab = hp->n_vocab;
    info->n_ctx_train = hp->n_ctx_train;
    info->n_embd = hp->n_embd;
    info->n_layer = hp->n_layer;
    info->n_head = hp->n_head;
    info->n_head_kv = hp->n_head_kv;
    info->head_dim = hp->head_dim_k;
    info->n_ff = hp->n_ff;
    info->sliding_window = hp->n_swa;
    info->bos = m->vocab->bos;
    info->eos = m->vocab->eos;
    info->eot = m->vocab->eot;
    info->weight_bytes = m->weight_bytes;
}

steno_status steno_llm_tokenize(const steno_llm *m, const char *text, size_t len, int add_special, int parse_special,
                                int **tokens, int *n_tokens) {
    return steno_vocab_tokenize(m->vocab, text, len, add_special, parse_special, tokens, n_tokens);
}

int steno_llm_token_piece(const steno_llm *m, int token, int prev, int special, char *buf, int cap) {
    return steno_vocab_piece(m->vocab, token, prev, special, buf, cap);
}

int steno_llm_is_eog(const steno_llm *m, int token) { return steno_vocab_is_eog(m->vocab, token); }
