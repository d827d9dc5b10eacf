/* convert_ct2.c — the CTranslate2 writer of the converter: WhisperSpec's variables (fused Q/K/V
 * and cross K/V rows, the key's absent bias as zeros), its scalars, model.bin's layout (as
 * formats/ct2.c reads it) and config.json. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "whisper/convert/convert_internal.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* CTranslate2: prefix → (openai parts); fused rows, the key's absent bias as zeros. */
static void ct2_linear(conv *c, const char *cp, const char *const *op, int n) {
    char name[300], on[300];
    const wt_tensor *w[3] = {0}, *b[3] = {0};
    int any_b = 0;
    for (int k = 0; k < n; k++) {
        snprintf(on, sizeof on, "%s.weight", op[k]);
        w[k] = cv_need(c, on);
        snprintf(on, sizeof on, "%s.bias", op[k]);
        b[k] = wtab_find(c->w, on);
        any_b |= b[k] != NULL;
    }
    if (c->st != STENO_OK) return;
    const int64_t dw[2] = {n * w[0]->dims[0], w[0]->dims[1]};
    snprintf(name, sizeof name, "%s/weight", cp);
    ovar *o = cv_add_var(c, name, cv_float_of_parts(c, w, n), 2, dw);
    if (!o) return;
    for (int k = 0; k < n; k++) o->part[k] = w[k];
    o->n_parts = n;
    o->part_elems = w[0]->n_elems;
    if (!any_b) return;
    const int64_t db[1] = {n * w[0]->dims[0]};
    snprintf(name, sizeof name, "%s/bias", cp);
    o = cv_add_var(c, name, cv_float_of_parts(c, b, n), 1, db);
    if (!o) return;
    for (int k = 0; k < n; k++) o->part[k] = b[k];
    o->n_parts = n;
    o->part_elems = w[0]->dims[0];
}

static void ct2_one(conv *c, const char *cn, const char *on) {
    const wt_tensor *t = cv_need(c, on);
    if (t) cv_add_same(c, t, cn, cv_float_of(c, t));
}

static void ct2_ln(conv *c, const char *cp, const char *op) {
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/gamma", cp);
    snprintf(b, sizeof b, "%s.weight", op);
    ct2_one(c, a, b);
    snprintf(a, sizeof a, "%s/beta", cp);
    snprintf(b, sizeof b, "%s.bias", op);
    ct2_one(c, a, b);
}

static void ct2_scalar(conv *c, const char *name, int ct2_dtype, int value) {
    ovar *o = cv_add_var(c, name, WT_F32, 0, NULL);
    if (!o) return;
    o->ct2_dtype = ct2_dtype;
    if (ct2_dtype == 1) o->scalar[0] = (uint8_t)(int8_t)value;
    else {
        const int16_t v = (int16_t)value;
        memcpy(o->scalar, &v, 2);
    }
}

static void ct2_block(conv *c, const char *side, int i) {
    char cp[128], op[128], a[300], b[300], q[300], k[300], v[300];
    snprintf(cp, sizeof cp, "%s/layer_%d", side, i);
    snprintf(op, sizeof op, "%s.blocks.%d", side, i);
    snprintf(a, sizeof a, "%s/self_attention/layer_norm", cp);
    snprintf(b, sizeof b, "%s.attn_ln", op);
    ct2_ln(c, a, b);
    snprintf(q, sizeof q, "%s.attn.query", op);
    snprintf(k, sizeof k, "%s.attn.key", op);
    snprintf(v, sizeof v, "%s.attn.value", op);
    const char *qkv[3] = {q, k, v}, *one[1] = {b};
    snprintf(a, sizeof a, "%s/self_attention/linear_0", cp);
    ct2_linear(c, a, qkv, 3);
    snprintf(a, sizeof a, "%s/self_attention/linear_1", cp);
    snprintf(b, sizeof b, "%s.attn.out", op);
    ct2_linear(c, a, one, 1);
    if (strcmp(side, "decoder") == 0) {
        snprintf(a, sizeof a, "%s/attention/layer_norm", cp);
        snprintf(b, sizeof b, "%s.cross_attn_ln", op);
        ct2_ln(c, a, b);
        snprintf(a, sizeof a, "%s/attention/linear_0", cp);
        snprintf(b, sizeof b, "%s.cross_attn.query", op);
        ct2_linear(c, a, one, 1);
        snprintf(k, sizeof k, "%s.cross_attn.key", op);
        snprintf(v, sizeof v, "%s.cross_attn.value", op);
        const char *kv[2] = {k, v};
        snprintf(a, sizeof a, "%s/attention/linear_1", cp);
        ct2_linear(c, a, kv, 2);
        snprintf(a, sizeof a, "%s/attention/linear_2", cp);
        snprintf(b, sizeof b, "%s.cross_attn.out", op);
        ct2_linear(c, a, one, 1);
    }
    snprintf(a, sizeof a, "%s/ffn/layer_norm", cp);
    snprintf(b, sizeof b, "%s.mlp_ln", op);
    ct2_ln(c, a, b);
    snprintf(a, sizeof a, "%s/ffn/linear_0", cp);
    snprintf(b, sizeof b, "%s.mlp.0", op);
    ct2_linear(c, a, one, 1);
    snprintf(a, sizeof a, "%s/ffn/linear_1", cp);
    snprintf(b, sizeof b, "%s.mlp.2", op);
    ct2_linear(c, a, one, 1);
}

static int cmp_ovar(const void *a, const void *b) { return strcmp(((const ovar *)a)->name, ((const ovar *)b)->name); }

static void put_str16(conv *c, FILE *f, const char *path, const char *s) {
    const uint16_t n = (uint16_t)(strlen(s) + 1);
    if (fwrite(&n, 2, 1, f) != 1 || fwrite(s, 1, n, f) != n)
        c->st = steno_fail(STENO_E_IO, "%s: write failed: %s", path, strerror(errno));
}

void cv_write_ct2(conv *c, const char *dir) {
    char p[4096];
    const whisper_dims *d = &c->w->dims;
    /* CTranslate2 WhisperSpec's scalars as its converter writes them (tiny.en's model.bin) */
    ct2_scalar(c, "decoder/activation", 1, 3);
    ct2_scalar(c, "decoder/alibi", 1, 0);
    ct2_scalar(c, "decoder/alignment_heads", 2, 1);
    ct2_scalar(c, "decoder/alignment_layer", 2, -1);
    ct2_scalar(c, "decoder/num_heads", 2, d->n_text_head);
    ct2_scalar(c, "decoder/pre_norm", 1, 1);
    ct2_scalar(c, "decoder/scale_embeddings", 1, 0);
    ct2_scalar(c, "decoder/start_from_zero_embedding", 1, 0);
    ct2_scalar(c, "encoder/num_heads", 2, d->n_audio_head);
    ct2_one(c, "encoder/conv1/weight", "encoder.conv1.weight");
    ct2_one(c, "encoder/conv1/bias", "encoder.conv1.bias");
    ct2_one(c, "encoder/conv2/weight", "encoder.conv2.weight");
    ct2_one(c, "encoder/conv2/bias", "encoder.conv2.bias");
    ct2_one(c, "encoder/position_encodings/encodings", "encoder.positional_embedding");
    for (int i = 0; i < d->n_audio_layer; i++) ct2_block(c, "encoder", i);
    ct2_ln(c, "encoder/layer_norm", "encoder.ln_post");
    ct2_one(c, "decoder/embeddings/weight", "decoder.token_embedding.weight");
    ct2_one(c, "decoder/position_encodings/encodings", "decoder.positional_embedding");
    for (int i = 0; i < d->n_text_layer; i++) ct2_block(c, "decoder", i);
    ct2_ln(c, "decoder/layer_norm", "decoder.ln");
    if (c->st != STENO_OK) return;
    qsort(c->v, (size_t)c->n, sizeof *c->v, cmp_ovar);
    snprintf(p, sizeof p, "%s/model.bin", dir);
    FILE *f = fopen(p, "wb");
    if (!f) {
        c->st = steno_fail(STENO_E_IO, "%s: cannot create: %s", p, strerror(errno));
        return;
    }
    const uint32_t ver = 6, rev = 3, nv = (uint32_t)c->n;
    fwrite(&ver, 4, 1, f);
    put_str16(c, f, p, "WhisperSpec");
    fwrite(&rev, 4, 1, f);
    fwrite(&nv, 4, 1, f);
    for (int i = 0; i < c->n && c->st == STENO_OK; i++) {
        const ovar *o = &c->v[i];
        put_str16(c, f, p, o->name);
        const uint8_t rank = (uint8_t)o->rank;
        fwrite(&rank, 1, 1, f);
        for (int k = 0; k < o->rank; k++) {
            const uint32_t dd = (uint32_t)o->dims[k];
            fwrite(&dd, 4, 1, f);
        }
        const uint8_t dt = o->ct2_dtype >= 0 ? (uint8_t)o->ct2_dtype
                           : o->dtype == WT_F32 ? 0 : o->dtype == WT_F16 ? 4 : 5;
        fwrite(&dt, 1, 1, f);
        const uint32_t nb = (uint32_t)cv_var_bytes(o);
        fwrite(&nb, 4, 1, f);
        cv_put_var(c, f, p, o);
    }
    const uint32_t na = 1;
    fwrite(&na, 4, 1, f);
    put_str16(c, f, p, "decoder/projection/weight");
    put_str16(c, f, p, "decoder/embeddings/weight");
    if ((ferror(f) | fclose(f)) && c->st == STENO_OK) c->st = steno_fail(STENO_E_IO, "%s: write failed", p);
    /* config.json, vocabulary.txt, tokenizer.json */
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "alignment_heads", cv_pairs_array((const int(*)[2])c->cfg->alignment_heads, c->cfg->n_alignment_heads));
    cJSON_AddItemToObject(j, "lang_ids", cv_int_array(c->cfg->lang_ids, c->cfg->n_lang_ids));
    cJSON_AddItemToObject(j, "suppress_ids", cv_int_array(c->cfg->suppress_ids, c->cfg->n_suppress_ids));
    cJSON_AddItemToObject(j, "suppress_ids_begin", cv_int_array(c->cfg->suppress_ids_begin, c->cfg->n_suppress_ids_begin));
    snprintf(p, sizeof p, "%s/config.json", dir);
    cv_write_json(c, p, j);
    if (c->st != STENO_OK) return;
    snprintf(p, sizeof p, "%s/vocabulary.txt", dir);
    f = fopen(p, "wb");
    if (!f) {
        c->st = steno_fail(STENO_E_IO, "%s: cannot create: %s", p, strerror(errno));
        return;
    }
    for (int i = 0; i < steno_tokenizer_n_vocab(c->tok); i++) fprintf(f, "%s\n", steno_tokenizer_token_str(c->tok, i));
    if ((ferror(f) | fclose(f)) && c->st == STENO_OK) c->st = steno_fail(STENO_E_IO, "%s: write failed", p);
    cv_write_tokenizer_json(c, dir);
}

