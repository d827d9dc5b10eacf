/* model.c — loading LLMs from GGUF (llama, gemma3) and llama2.c checkpoints into llm/model.h's
 * structs; model-level public API (steno_llm.h). The configuration is read from the file's metadata
 * (GGUF keys as llama.cpp's llama-model.cpp load_hparams; llama2.c header) and every tensor's shape is
 * checked against it before use. */
#include "llm/model.h"
#include "llm/arch.h"
#include "llm/loader.h"

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
    {"qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"},
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
    return steno_fail(STENO_E_IO, "%s: no such file, and not a known model name (smollm2, gemma3, qwen2.5-coder-0.5b)", model);
}

/* ------------------------------------------------------------------------------------------- */

void steno_llm_free(steno_llm *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    free(m->hp.is_swa);
    free(m->hp.no_rope);
    steno_vocab_free(m->vocab);
    gguf_close(m->gguf);
    llama2c_close(m->l2c);
    free(m->path);
    free(m->name);
    free(m->chat_template);
    free(m->arch_name);
    steno_jinja_template_free(m->chat_jinja);
    llm_fast_free(m);
    free(m);
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        steno_status st_ = (x);                                                                    \
        if (st_ != STENO_OK) return st_;                                                           \
    } while (0)

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
    hp->arch = llm_arch_find("llama");
    hp->arch_name = "llama";
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
    hp->rope_mscale = 1.0f;
    hp->embd_scale = 1.0f;
    hp->logit_scale = 1.0f;
    hp->res_scale = 1.0f;
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
        if (st == STENO_OK) st = llm_load_gguf(m);
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
    info->arch = hp->arch_name;
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
