/* convert.c — any Whisper format to any other (convert.h). */
#include "whisper/convert/convert.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/mel.h"
#include "core/error.h"
#include "core/file.h"
#include "core/fp16.h"
#include "formats/wtab/wtab_readers.h"
#include "whisper/convert/convert_internal.h"
#include "whisper/model/tokenizer_config.h"

/* Tensor names are < 100 characters and paths < 4096: the snprintf bounds below are never reached,
 * and a truncated name would only fail the lookup that follows. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif


ovar *cv_add_var(conv *c, const char *name, wt_dtype dt, int rank, const int64_t *dims) {
    if (c->st != STENO_OK) return NULL;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 512;
        void *q = realloc(c->v, (size_t)cap * sizeof *c->v);
        if (!q) {
            c->st = steno_fail(STENO_E_NOMEM, "out of memory");
            return NULL;
        }
        c->v = q;
        c->cap = cap;
    }
    ovar *o = &c->v[c->n++];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->dtype = dt;
    o->rank = rank;
    for (int i = 0; i < rank; i++) o->dims[i] = dims[i];
    o->ct2_dtype = -1;
    return o;
}

int64_t cv_elems(const ovar *o) {
    int64_t n = 1;
    for (int i = 0; i < o->rank; i++) n *= o->dims[i];
    return n;
}

/* The output type of t in a format that types each tensor (ct2, hf, mlx): its own float type,
 * except that float32 data whose every value is exact in the model's float type (the float32
 * biases of a ggml file made from a float16 model) goes back to that type, and quantized data
 * becomes the model's float type. Never loses a bit of an unquantized tensor. */
wt_dtype cv_float_of(const conv *c, const wt_tensor *t) {
    if (!t) return c->fdt;
    if (c->fdt == WT_F32) return WT_F32; /* --f32, or a float32 model */
    if (t->dtype == WT_F16 || t->dtype == WT_BF16) return t->dtype;
    if (t->dtype != WT_F32) return c->fdt; /* int8 / ggml blocks: dequantized */
    const float *v = t->data;
    for (int64_t i = 0; i < t->n_elems; i++) {
        float x;
        memcpy(&x, &v[i], 4);
        uint32_t bits;
        memcpy(&bits, &x, 4);
        if (c->fdt == WT_F16) {
            const float back = steno_fp16_to_f32(wt_f32_to_f16(x));
            if (memcmp(&back, &x, 4) != 0) return WT_F32;
        } else if (bits & 0xFFFFu) {
            return WT_F32;
        }
    }
    return c->fdt;
}

/* One type for rows stacked from several tensors: theirs when they agree, else float32. */
wt_dtype cv_float_of_parts(const conv *c, const wt_tensor *const *p, int n) {
    wt_dtype d = WT_N_DTYPES;
    for (int k = 0; k < n; k++) {
        if (!p[k]) continue;
        const wt_dtype e = cv_float_of(c, p[k]);
        if (d == WT_N_DTYPES) d = e;
        else if (d != e) return WT_F32;
    }
    return d == WT_N_DTYPES ? c->fdt : d;
}

/* The tensor as is (same name and shape), in the output float type. */
ovar *cv_add_same(conv *c, const wt_tensor *t, const char *name, wt_dtype dt) {
    ovar *o = cv_add_var(c, name, dt, t->rank, t->dims);
    if (!o) return NULL;
    o->part[0] = t;
    o->n_parts = 1;
    o->part_elems = t->n_elems;
    return o;
}

size_t cv_var_bytes(const ovar *o) {
    if (o->ct2_dtype >= 0) return o->ct2_dtype == 1 ? 1 : o->ct2_dtype == 2 ? 2 : 4;
    return wt_dtype_bytes(o->dtype, cv_elems(o));
}

/* Writes o's data to f. */
void cv_put_var(conv *c, FILE *f, const char *path, const ovar *o) {
    if (c->st != STENO_OK) return;
    if (o->ct2_dtype >= 0) {
        if (fwrite(o->scalar, 1, cv_var_bytes(o), f) != cv_var_bytes(o)) goto io;
        return;
    }
    for (int k = 0; k < o->n_parts; k++) {
        const wt_tensor *t = o->part[k];
        if (t && t->dtype == o->dtype && !o->conv_t) { /* bytes as they are */
            if (fwrite(t->data, 1, t->n_bytes, f) != t->n_bytes) goto io;
            continue;
        }
        if (t && wt_dtype_is_block(o->dtype)) {
            c->st = steno_fail(STENO_E_UNSUPPORTED, "%s: cannot re-quantize %s", path, o->name);
            return;
        }
        const int64_t n = o->part_elems;
        float *buf = malloc((size_t)n * sizeof *buf);
        uint8_t *out = malloc((size_t)n * 4);
        if (!buf || !out) {
            free(buf);
            free(out);
            c->st = steno_fail(STENO_E_NOMEM, "out of memory");
            return;
        }
        if (t) wt_to_f32(t, 0, n, buf);
        else memset(buf, 0, (size_t)n * sizeof *buf);
        if (o->conv_t) { /* [O][I][3] → [O][3][I] */
            const int64_t O = t->dims[0], I = t->dims[1];
            float *tr = malloc((size_t)n * sizeof *tr);
            if (!tr) {
                free(buf);
                free(out);
                c->st = steno_fail(STENO_E_NOMEM, "out of memory");
                return;
            }
            for (int64_t a = 0; a < O; a++)
                for (int64_t i = 0; i < I; i++)
                    for (int64_t k2 = 0; k2 < 3; k2++) tr[(a * 3 + k2) * I + i] = buf[(a * I + i) * 3 + k2];
            free(buf);
            buf = tr;
        }
        size_t nb;
        if (o->dtype == WT_F32) {
            memcpy(out, buf, (size_t)n * 4);
            nb = (size_t)n * 4;
        } else if (o->dtype == WT_F16) {
            for (int64_t i = 0; i < n; i++) {
                const uint16_t h = wt_f32_to_f16(buf[i]);
                memcpy(out + i * 2, &h, 2);
            }
            nb = (size_t)n * 2;
        } else { /* bfloat16, round to nearest even */
            for (int64_t i = 0; i < n; i++) {
                uint32_t x;
                memcpy(&x, &buf[i], 4);
                const uint16_t h = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
                memcpy(out + i * 2, &h, 2);
            }
            nb = (size_t)n * 2;
        }
        const size_t wr = fwrite(out, 1, nb, f);
        free(buf);
        free(out);
        if (wr != nb) goto io;
    }
    return;
io:
    c->st = steno_fail(STENO_E_IO, "%s: write failed: %s", path, strerror(errno));
}

/* ---- name maps ---------------------------------------------------------------------------- */

static void rewrite(const char *in, char *out, size_t cap, const char *const (*rules)[2], size_t n) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", in);
    for (size_t r = 0; r < n; r++) {
        char *hit = strstr(buf, rules[r][0]);
        if (!hit) continue;
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(hit - buf), buf, rules[r][1], hit + strlen(rules[r][0]));
        snprintf(buf, sizeof buf, "%s", tmp);
    }
    snprintf(out, cap, "%s", buf);
}

static void hf_name(const char *in, char *out, size_t cap) {
    static const char *const rules[][2] = {
        {".attn_ln.", ".self_attn_layer_norm."}, {".cross_attn_ln.", ".encoder_attn_layer_norm."},
        {".mlp_ln.", ".final_layer_norm."},     {".attn.", ".self_attn."},
        {".cross_attn.", ".encoder_attn."},     {".query.", ".q_proj."},
        {".key.", ".k_proj."},                  {".value.", ".v_proj."},
        {".out.", ".out_proj."},                {".mlp.0.", ".fc1."},
        {".mlp.2.", ".fc2."},                   {".blocks.", ".layers."},
        {"encoder.ln_post.", "encoder.layer_norm."}, {"decoder.ln.", "decoder.layer_norm."},
        {".positional_embedding", ".embed_positions.weight"}, {".token_embedding.", ".embed_tokens."},
    };
    char tmp[512];
    rewrite(in, tmp, sizeof tmp, rules, sizeof rules / sizeof rules[0]);
    snprintf(out, cap, "model.%s", tmp);
}

static void mlx_name(const char *in, char *out, size_t cap) {
    static const char *const rules[][2] = {{".mlp.0.", ".mlp1."}, {".mlp.2.", ".mlp2."}};
    rewrite(in, out, cap, rules, 2);
}

static int is_pos(const char *name) { return strstr(name, "positional_embedding") != NULL; }

/* ---- safetensors ------------------------------------------------------------------------------ */

static const char *st_dtype(wt_dtype d) { return d == WT_F32 ? "F32" : d == WT_F16 ? "F16" : "BF16"; }

static void write_safetensors(conv *c, const char *path) {
    if (c->st != STENO_OK) return;
    cJSON *h = cJSON_CreateObject();
    size_t off = 0;
    for (int i = 0; i < c->n && h; i++) {
        const ovar *o = &c->v[i];
        cJSON *e = cJSON_AddObjectToObject(h, o->name);
        cJSON_AddStringToObject(e, "dtype", st_dtype(o->dtype));
        cJSON *s = cJSON_AddArrayToObject(e, "shape");
        for (int k = 0; k < o->rank; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)o->dims[k]));
        cJSON *of = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        off += cv_var_bytes(o);
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
    }
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    char *js = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (!js) {
        c->st = steno_fail(STENO_E_NOMEM, "out of memory");
        return;
    }
    size_t hl = strlen(js);
    const size_t pad = (8 - (8 + hl) % 8) % 8; /* data 8-byte aligned, padded with spaces */
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(js);
        c->st = steno_fail(STENO_E_IO, "%s: cannot create: %s", path, strerror(errno));
        return;
    }
    uint64_t n = hl + pad;
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(n >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(js, 1, hl, f) == hl;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    free(js);
    if (!ok) c->st = steno_fail(STENO_E_IO, "%s: write failed: %s", path, strerror(errno));
    for (int i = 0; i < c->n; i++) cv_put_var(c, f, path, &c->v[i]);
    if (fclose(f) != 0 && c->st == STENO_OK) c->st = steno_fail(STENO_E_IO, "%s: write failed: %s", path, strerror(errno));
}

/* ---- JSON side files ---------------------------------------------------------------------------- */

void cv_write_json(conv *c, const char *path, cJSON *j) {
    if (!j) {
        if (c->st == STENO_OK) c->st = steno_fail(STENO_E_NOMEM, "out of memory");
        return;
    }
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    if (c->st != STENO_OK || !s) {
        free(s);
        if (c->st == STENO_OK) c->st = steno_fail(STENO_E_NOMEM, "out of memory");
        return;
    }
    FILE *f = fopen(path, "wb");
    const size_t n = strlen(s);
    if (!f || fwrite(s, 1, n, f) != n || fputc('\n', f) == EOF || fclose(f) != 0)
        c->st = steno_fail(STENO_E_IO, "%s: cannot write: %s", path, strerror(errno));
    free(s);
}

cJSON *cv_int_array(const int *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

cJSON *cv_pairs_array(const int (*v)[2], int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cv_int_array(v[i], 2));
    return a;
}

static int tid(const conv *c, const char *s) { return steno_tokenizer_token_id(c->tok, s); }

/* tokenizer.json made from the tokenizer (BPE vocab, merges in priority order, every token from
 * <|endoftext|> on as an added token, timestamps included, so the file alone gives the whole
 * vocabulary; ByteLevel pre-tokenizer and decoder). */
void cv_write_tokenizer_json(conv *c, const char *dir) {
    if (c->st != STENO_OK) return;
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/tokenizer.json", dir);
    const int n = steno_tokenizer_n_vocab(c->tok), eot = tid(c, "<|endoftext|>");
    cJSON *j = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    cJSON *merges = cJSON_CreateArray(), *added = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "version", "1.0"); /* the fields HF tokenizers' deserializer requires */
    cJSON_AddNullToObject(j, "truncation");
    cJSON_AddNullToObject(j, "padding");
    cJSON_AddNullToObject(j, "normalizer");
    cJSON_AddNullToObject(j, "post_processor");
    for (int i = 0; i < n; i++) {
        const char *s = steno_tokenizer_token_str(c->tok, i);
        if (i >= eot) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", i);
            cJSON_AddStringToObject(a, "content", s);
            cJSON_AddBoolToObject(a, "single_word", 0);
            cJSON_AddBoolToObject(a, "lstrip", 0);
            cJSON_AddBoolToObject(a, "rstrip", 0);
            cJSON_AddBoolToObject(a, "normalized", 0);
            cJSON_AddBoolToObject(a, "special", 1);
            cJSON_AddItemToArray(added, a);
        } else if (*s && steno_tokenizer_token_id(c->tok, s) == i) { /* a string's first id only */
            cJSON_AddNumberToObject(vocab, s, i);
        }
    }
    int (*pairs)[2] = NULL, np = 0;
    if ((c->st = steno_tokenizer_merges(c->tok, &pairs, &np)) != STENO_OK) {
        cJSON_Delete(j);
        cJSON_Delete(model);
        cJSON_Delete(vocab);
        cJSON_Delete(merges);
        cJSON_Delete(added);
        return;
    }
    for (int i = 0; i < np; i++) {
        char m[1024];
        snprintf(m, sizeof m, "%s %s", steno_tokenizer_token_str(c->tok, pairs[i][0]),
                 steno_tokenizer_token_str(c->tok, pairs[i][1]));
        cJSON_AddItemToArray(merges, cJSON_CreateString(m));
    }
    free(pairs);
    cJSON_AddItemToObject(j, "added_tokens", added);
    cJSON *pre = cJSON_AddObjectToObject(j, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddBoolToObject(pre, "add_prefix_space", 0);
    cJSON_AddBoolToObject(pre, "trim_offsets", 1);
    cJSON_AddBoolToObject(pre, "use_regex", 1);
    cJSON *dec = cJSON_AddObjectToObject(j, "decoder");
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    cJSON_AddBoolToObject(dec, "add_prefix_space", 1);
    cJSON_AddBoolToObject(dec, "trim_offsets", 1);
    cJSON_AddBoolToObject(dec, "use_regex", 1);
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
    cJSON_AddStringToObject(model, "end_of_word_suffix", "");
    cJSON_AddBoolToObject(model, "fuse_unk", 0);
    cJSON_AddBoolToObject(model, "byte_fallback", 0);
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", merges);
    cJSON_AddItemToObject(j, "model", model);
    cv_write_json(c, dst, j);
}

/* ---- per format ------------------------------------------------------------------------------- */

const wt_tensor *cv_need(conv *c, const char *name) {
    const wt_tensor *t = wtab_find(c->w, name);
    if (!t && c->st == STENO_OK) c->st = steno_fail(STENO_E_FORMAT, "%s: missing tensor %s", c->src, name);
    return t;
}

/* The openai tensors in openai order, through a name map, each in the output float type. */
static void plan_openai(conv *c, void (*map)(const char *, char *, size_t), int skip_enc_pos, int conv_t) {
    for (int i = 0; i < c->w->n && c->st == STENO_OK; i++) {
        const wt_tensor *t = &c->w->t[i];
        if (skip_enc_pos && strcmp(t->name, "encoder.positional_embedding") == 0) continue;
        char name[256];
        map(t->name, name, sizeof name);
        ovar *o = cv_add_same(c, t, name, cv_float_of(c, t));
        if (o && conv_t && t->rank == 3) {
            o->conv_t = 1;
            o->dims[1] = 3;
            o->dims[2] = t->dims[1];
        }
    }
}

static void write_hf(conv *c, const char *dir) {
    char p[4096];
    plan_openai(c, hf_name, 0, 0);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_safetensors(c, p);
    const whisper_dims *d = &c->w->dims;
    const int eot = tid(c, "<|endoftext|>"), sot = tid(c, "<|startoftranscript|>");
    cJSON *j = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(j, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("WhisperForConditionalGeneration"));
    cJSON_AddStringToObject(j, "model_type", "whisper");
    cJSON_AddStringToObject(j, "activation_function", "gelu");
    cJSON_AddNumberToObject(j, "d_model", d->n_audio_state);
    cJSON_AddNumberToObject(j, "encoder_layers", d->n_audio_layer);
    cJSON_AddNumberToObject(j, "encoder_attention_heads", d->n_audio_head);
    cJSON_AddNumberToObject(j, "encoder_ffn_dim", 4 * d->n_audio_state);
    cJSON_AddNumberToObject(j, "decoder_layers", d->n_text_layer);
    cJSON_AddNumberToObject(j, "decoder_attention_heads", d->n_text_head);
    cJSON_AddNumberToObject(j, "decoder_ffn_dim", 4 * d->n_text_state);
    cJSON_AddNumberToObject(j, "num_hidden_layers", d->n_audio_layer);
    cJSON_AddNumberToObject(j, "num_mel_bins", d->n_mels);
    cJSON_AddNumberToObject(j, "max_source_positions", d->n_audio_ctx);
    cJSON_AddNumberToObject(j, "max_target_positions", d->n_text_ctx);
    cJSON_AddNumberToObject(j, "vocab_size", d->n_vocab);
    cJSON_AddNumberToObject(j, "bos_token_id", eot);
    cJSON_AddNumberToObject(j, "eos_token_id", eot);
    cJSON_AddNumberToObject(j, "pad_token_id", eot);
    cJSON_AddNumberToObject(j, "decoder_start_token_id", sot);
    cJSON_AddBoolToObject(j, "scale_embedding", 0);
    cJSON_AddBoolToObject(j, "tie_word_embeddings", 1);
    cJSON_AddBoolToObject(j, "use_cache", 1);
    cJSON_AddStringToObject(j, "torch_dtype", c->fdt == WT_F32 ? "float32" : c->fdt == WT_F16 ? "float16" : "bfloat16");
    cJSON_AddItemToObject(j, "begin_suppress_tokens", cv_int_array(c->cfg->suppress_ids_begin, c->cfg->n_suppress_ids_begin));
    cJSON_AddItemToObject(j, "suppress_tokens", cv_int_array(c->cfg->suppress_ids, c->cfg->n_suppress_ids));
    snprintf(p, sizeof p, "%s/config.json", dir);
    cv_write_json(c, p, j);
    j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "alignment_heads", cv_pairs_array((const int(*)[2])c->cfg->alignment_heads, c->cfg->n_alignment_heads));
    cJSON_AddItemToObject(j, "begin_suppress_tokens", cv_int_array(c->cfg->suppress_ids_begin, c->cfg->n_suppress_ids_begin));
    cJSON_AddItemToObject(j, "suppress_tokens", cv_int_array(c->cfg->suppress_ids, c->cfg->n_suppress_ids));
    cJSON_AddNumberToObject(j, "bos_token_id", eot);
    cJSON_AddNumberToObject(j, "eos_token_id", eot);
    cJSON_AddNumberToObject(j, "pad_token_id", eot);
    cJSON_AddNumberToObject(j, "decoder_start_token_id", sot);
    cJSON_AddNumberToObject(j, "max_length", d->n_text_ctx);
    cJSON_AddNumberToObject(j, "no_timestamps_token_id", tid(c, "<|notimestamps|>"));
    cJSON_AddNumberToObject(j, "prev_sot_token_id", tid(c, "<|startofprev|>"));
    cJSON_AddBoolToObject(j, "is_multilingual", d->n_vocab >= 51865);
    cJSON *l2i = cJSON_AddObjectToObject(j, "lang_to_id");
    for (int i = 0; i < c->cfg->n_lang_ids; i++)
        cJSON_AddNumberToObject(l2i, steno_tokenizer_token_str(c->tok, c->cfg->lang_ids[i]), c->cfg->lang_ids[i]);
    cJSON *t2i = cJSON_AddObjectToObject(j, "task_to_id");
    cJSON_AddNumberToObject(t2i, "transcribe", tid(c, "<|transcribe|>"));
    cJSON_AddNumberToObject(t2i, "translate", tid(c, "<|translate|>"));
    snprintf(p, sizeof p, "%s/generation_config.json", dir);
    cv_write_json(c, p, j);
    cv_write_tokenizer_json(c, dir);
}

static void write_mlx(conv *c, const char *dir) {
    char p[4096];
    plan_openai(c, mlx_name, 1, 1);
    snprintf(p, sizeof p, "%s/weights.safetensors", dir);
    write_safetensors(c, p);
    const whisper_dims *d = &c->w->dims;
    cJSON *j = cJSON_CreateObject();
    const struct { const char *k; int v; } f[] = {
        {"n_mels", d->n_mels},           {"n_audio_ctx", d->n_audio_ctx},   {"n_audio_state", d->n_audio_state},
        {"n_audio_head", d->n_audio_head}, {"n_audio_layer", d->n_audio_layer}, {"n_vocab", d->n_vocab},
        {"n_text_ctx", d->n_text_ctx},   {"n_text_state", d->n_text_state}, {"n_text_head", d->n_text_head},
        {"n_text_layer", d->n_text_layer}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) cJSON_AddNumberToObject(j, f[i].k, f[i].v);
    cJSON_AddStringToObject(j, "model_type", "whisper");
    snprintf(p, sizeof p, "%s/config.json", dir);
    cv_write_json(c, p, j);
    cv_write_tokenizer_json(c, dir);
}

/* The table's tensors in openai-whisper's state_dict order (a module's own parameters and
 * buffers before its children's: encoder.positional_embedding, conv1, conv2, blocks, ln_post;
 * decoder.positional_embedding, token_embedding, blocks, ln), the order convert-pt-to-ggml.py
 * writes; tensors outside that list follow in table order. malloc'd, c->w->n entries. */
static const wt_tensor **openai_order(conv *c) {
    const wtab *w = c->w;
    const wt_tensor **o = malloc((size_t)w->n * sizeof *o);
    char *used = calloc((size_t)w->n, 1);
    if (!o || !used) {
        free(o);
        free(used);
        c->st = steno_fail(STENO_E_NOMEM, "out of memory");
        return NULL;
    }
    int k = 0;
    static const char *const sub[] = {"attn.query.weight", "attn.query.bias", "attn.key.weight", "attn.key.bias",
                                      "attn.value.weight", "attn.value.bias", "attn.out.weight", "attn.out.bias",
                                      "attn_ln.weight", "attn_ln.bias", "cross_attn.query.weight",
                                      "cross_attn.query.bias", "cross_attn.key.weight", "cross_attn.key.bias",
                                      "cross_attn.value.weight", "cross_attn.value.bias", "cross_attn.out.weight",
                                      "cross_attn.out.bias", "cross_attn_ln.weight", "cross_attn_ln.bias",
                                      "mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias", "mlp_ln.weight",
                                      "mlp_ln.bias"};
#define TAKE(nm)                                                                                                   \
    do {                                                                                                           \
        const wt_tensor *t_ = wtab_find(w, nm);                                                                    \
        if (t_ && !used[t_ - w->t]) used[t_ - w->t] = 1, o[k++] = t_;                                              \
    } while (0)
    char name[256];
    TAKE("encoder.positional_embedding");
    TAKE("encoder.conv1.weight");
    TAKE("encoder.conv1.bias");
    TAKE("encoder.conv2.weight");
    TAKE("encoder.conv2.bias");
    for (int i = 0; i < w->dims.n_audio_layer; i++)
        for (size_t j = 0; j < sizeof sub / sizeof sub[0]; j++) {
            snprintf(name, sizeof name, "encoder.blocks.%d.%s", i, sub[j]);
            TAKE(name);
        }
    TAKE("encoder.ln_post.weight");
    TAKE("encoder.ln_post.bias");
    TAKE("decoder.positional_embedding");
    TAKE("decoder.token_embedding.weight");
    for (int i = 0; i < w->dims.n_text_layer; i++)
        for (size_t j = 0; j < sizeof sub / sizeof sub[0]; j++) {
            snprintf(name, sizeof name, "decoder.blocks.%d.%s", i, sub[j]);
            TAKE(name);
        }
    TAKE("decoder.ln.weight");
    TAKE("decoder.ln.bias");
#undef TAKE
    for (int i = 0; i < w->n; i++)
        if (!used[i]) o[k++] = &w->t[i];
    free(used);
    return o;
}

/* ggml: convert-pt-to-ggml.py's layout (ggml_export.h); quantized tensors copied as they are. */
static void write_ggml(conv *c, const char *path) {
    const whisper_dims *d = &c->w->dims;
    const wt_tensor *emb = cv_need(c, "decoder.token_embedding.weight");
    if (!emb) return;
    const wt_dtype mat = wt_dtype_is_block(emb->dtype) ? emb->dtype : c->fdt == WT_F16 ? WT_F16 : WT_F32;
    int ftype = mat == WT_F32 ? 0 : mat == WT_F16 ? 1 : c->w->ggml_ftype;
    const wt_tensor **order = openai_order(c);
    if (!order) return;
    for (int i = 0; i < c->w->n; i++) {
        const wt_tensor *t = order[i];
        wt_dtype dt = WT_F32;
        if (t->rank >= 2 && !is_pos(t->name)) {
            dt = wt_dtype_is_block(t->dtype) ? t->dtype : mat == WT_F32 ? WT_F32 : WT_F16;
        }
        cv_add_same(c, t, t->name, dt);
    }
    free(order);
    float *filters = malloc((size_t)d->n_mels * 201 * sizeof *filters);
    if (!filters) {
        c->st = steno_fail(STENO_E_NOMEM, "out of memory");
        return;
    }
    if (c->w->mel_filters) memcpy(filters, c->w->mel_filters, (size_t)d->n_mels * 201 * sizeof *filters);
    else if (c->st == STENO_OK) c->st = steno_mel_filters(d->n_mels, filters);
    FILE *f = c->st == STENO_OK ? fopen(path, "wb") : NULL;
    if (!f) {
        free(filters);
        if (c->st == STENO_OK) c->st = steno_fail(STENO_E_IO, "%s: cannot create: %s", path, strerror(errno));
        return;
    }
    const int32_t hp[12] = {0x67676d6c,       d->n_vocab,     d->n_audio_ctx,   d->n_audio_state,
                            d->n_audio_head,  d->n_audio_layer, d->n_text_ctx, d->n_text_state,
                            d->n_text_head,   d->n_text_layer, d->n_mels,      ftype};
    fwrite(hp, 4, 12, f);
    const int32_t mh[2] = {d->n_mels, 201};
    fwrite(mh, 4, 2, f);
    fwrite(filters, sizeof *filters, (size_t)d->n_mels * 201, f);
    free(filters);
    const int32_t n_base = tid(c, "<|endoftext|>");
    fwrite(&n_base, 4, 1, f);
    for (int i = 0; i < n_base; i++) {
        size_t len = 0;
        const char *b = steno_tokenizer_token_bytes(c->tok, i, &len);
        const int32_t l = (int32_t)len;
        fwrite(&l, 4, 1, f);
        fwrite(b, 1, len, f);
    }
    for (int i = 0; i < c->n && c->st == STENO_OK; i++) {
        const ovar *o = &c->v[i];
        const int conv_b = strstr(o->name, "conv") && o->rank == 1;
        const int32_t nd = conv_b ? 2 : o->rank, nl = (int32_t)strlen(o->name);
        const int32_t tt = o->dtype == WT_F32 ? 0 : o->dtype == WT_F16 ? 1 : o->dtype == WT_Q4_0 ? 2
                         : o->dtype == WT_Q4_1 ? 3 : o->dtype == WT_Q5_0 ? 6 : o->dtype == WT_Q5_1 ? 7 : 8;
        fwrite(&nd, 4, 1, f);
        fwrite(&nl, 4, 1, f);
        fwrite(&tt, 4, 1, f);
        if (conv_b) { /* [n_state][1]: ne = {1, n_state} */
            const int32_t ne[2] = {1, (int32_t)o->dims[0]};
            fwrite(ne, 4, 2, f);
        } else {
            for (int k = o->rank - 1; k >= 0; k--) {
                const int32_t ne = (int32_t)o->dims[k];
                fwrite(&ne, 4, 1, f);
            }
        }
        fwrite(o->name, 1, (size_t)nl, f);
        cv_put_var(c, f, path, o);
    }
    if ((ferror(f) | fclose(f)) && c->st == STENO_OK) c->st = steno_fail(STENO_E_IO, "%s: write failed", path);
}

/* ---- driver ----------------------------------------------------------------------------------- */

static int rm_tree(const char *dir) {
    static const char *const names[] = {"model.bin", "config.json", "vocabulary.txt", "tokenizer.json",
                                        "model.safetensors", "generation_config.json", "weights.safetensors"};
    char p[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    return rmdir(dir);
}

steno_status steno_whisper_convert(const char *src, const char *format, const char *out, int f32) {
    if (!src || !format || !out || !*out) return steno_fail(STENO_E_INVALID_ARG, "convert: missing argument");
    const int to_ggml = strcmp(format, "ggml") == 0;
    if (!to_ggml && strcmp(format, "ct2") != 0 && strcmp(format, "hf") != 0 && strcmp(format, "mlx") != 0)
        return steno_fail(STENO_E_INVALID_ARG, "convert: unknown format %s (ct2, ggml, hf, mlx)", format);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return steno_fail(STENO_E_UNSUPPORTED, "%s: model files are little-endian; this host is not", out);
#endif
    /* an existing OUT is refused before any work: rename(2) would silently replace a file (or an
     * empty folder), and "OUT/" would put OUT/.tmp inside a folder */
    struct stat ob;
    if (lstat(out, &ob) == 0)
        return steno_fail(STENO_E_INVALID_ARG, "%s: already exists (steno convert does not overwrite; remove it first)",
                          out);
    wtab *w = NULL;
    steno_status st = wtab_open(src, &w);
    if (st != STENO_OK) return st;
    whisper_config cfg;
    steno_tokenizer *tok = NULL;
    if ((st = whisper_side_load(w, src, &cfg, &tok)) != STENO_OK) {
        wtab_free(w);
        return st;
    }
    conv c = {.w = w, .tok = tok, .cfg = &cfg, .src = src};
    const wt_tensor *emb = wtab_find(w, "decoder.token_embedding.weight");
    c.fdt = f32 || !emb ? WT_F32 : (emb->dtype == WT_F32 || emb->dtype == WT_BF16) ? emb->dtype : WT_F16;
    if (to_ggml && c.fdt == WT_BF16) c.fdt = WT_F32;
    if (to_ggml && f32 && emb && wt_dtype_is_block(emb->dtype))
        st = steno_fail(STENO_E_UNSUPPORTED, "%s: --f32 of a quantized ggml file: convert to ct2/hf/mlx first", src);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    if (st == STENO_OK && !to_ggml && mkdir(tmp, 0755) != 0)
        st = steno_fail(STENO_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (st == STENO_OK) {
        if (to_ggml) write_ggml(&c, tmp);
        else if (strcmp(format, "hf") == 0) write_hf(&c, tmp);
        else if (strcmp(format, "mlx") == 0) write_mlx(&c, tmp);
        else cv_write_ct2(&c, tmp);
        st = c.st;
        if (st == STENO_OK && rename(tmp, out) != 0)
            st = steno_fail(STENO_E_IO, "%s: cannot rename %s over it: %s", out, tmp, strerror(errno));
        if (st != STENO_OK) {
            if (to_ggml) unlink(tmp);
            else rm_tree(tmp);
        }
    }
    free(c.v);
    steno_tokenizer_free(tok);
    whisper_config_free(&cfg);
    wtab_free(w);
    return st;
}
