/* wtab_st.c — Hugging Face transformers and mlx-community Whisper directories as weight tables
 * (wtab_readers.h), both through an mmap'd safetensors reader (the format: u64 little-endian header
 * length, a JSON header {name: {dtype, shape, data_offsets [begin, end)}} relative to the byte
 * after the header; every range checked against the file and against dtype × shape).
 *
 * HF names (transformers models/whisper/convert_openai_to_hf.py WHISPER_MAPPING, read backwards):
 *   model.{en,de}coder.layers.N.self_attn.{q,k,v,out}_proj → {en,de}coder.blocks.N.attn.{query,key,value,out}
 *   ...self_attn_layer_norm → attn_ln; encoder_attn.* → cross_attn.*; encoder_attn_layer_norm →
 *   cross_attn_ln; fc1 → mlp.0; fc2 → mlp.2; final_layer_norm → mlp_ln;
 *   model.encoder.layer_norm → encoder.ln_post; model.decoder.layer_norm → decoder.ln;
 *   embed_positions → positional_embedding; model.decoder.embed_tokens → decoder.token_embedding;
 *   proj_out (tied to the token embedding) is not read.
 * MLX names (mlx-examples whisper/convert.py: torch_to_mlx) are openai's with mlp.0/mlp.2 named
 * mlp1/mlp2; conv weights are [out][3][in] and are transposed into owned [out][in][3] copies; the
 * encoder's sinusoidal positional embedding is not stored (MLX computes it) and is computed here,
 * in the weights' float type as mlx-whisper does. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/file.h"
#include "formats/wtab/wtab_readers.h"

typedef int (*name_map)(const char *in, char *out, size_t cap);

static int st_dtype(const char *s, wt_dtype *d) {
    if (strcmp(s, "F32") == 0) *d = WT_F32;
    else if (strcmp(s, "F16") == 0) *d = WT_F16;
    else if (strcmp(s, "BF16") == 0) *d = WT_BF16;
    else return 0;
    return 1;
}

/* Maps one safetensors file and adds its tensors under map(name); names map() rejects (returns 0)
 * are skipped, and so are non-float tensors (e.g. MLX's alignment heads). */
static steno_status add_safetensors(wtab *w, const char *path, name_map map) {
    const uint8_t *p;
    size_t len;
    steno_status st = wtab_map_file(w, path, &p, &len);
    if (st != STENO_OK) return st;
    uint64_t hlen = 0;
    if (len >= 8)
        for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i];
    if (len < 10 || hlen > len - 8 || hlen < 2)
        return steno_fail(STENO_E_FORMAT, "%s: not a safetensors file (bad header length)", path);
    cJSON *h = cJSON_ParseWithLength((const char *)p + 8, (size_t)hlen);
    if (!cJSON_IsObject(h)) {
        cJSON_Delete(h);
        return steno_fail(STENO_E_FORMAT, "%s: not a safetensors file (header is not a JSON object)", path);
    }
    const uint8_t *data = p + 8 + hlen;
    const size_t dlen = len - 8 - (size_t)hlen;
    const cJSON *t;
    cJSON_ArrayForEach(t, h) {
        if (strcmp(t->string, "__metadata__") == 0) continue;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor %s: malformed header entry", path, t->string);
            break;
        }
        const double b = cJSON_GetArrayItem(of, 0)->valuedouble, e = cJSON_GetArrayItem(of, 1)->valuedouble;
        if (!(b >= 0 && e >= b && e <= (double)dlen)) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor %s: data offsets outside the file", path, t->string);
            break;
        }
        char name[256];
        wt_dtype d;
        if (!map(t->string, name, sizeof name) || !st_dtype(dt->valuestring, &d)) continue;
        int64_t dims[4];
        const int rank = cJSON_GetArraySize(sh);
        if (rank < 1 || rank > 4) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor %s: rank %d", path, t->string, rank);
            break;
        }
        for (int i = 0; i < rank; i++) {
            const double v = cJSON_GetArrayItem(sh, i)->valuedouble;
            dims[i] = v >= 1 && v <= (double)(1 << 30) ? (int64_t)v : 0;
        }
        const size_t nb = (size_t)(e - b);
        if ((st = wtab_add(w, name, d, rank, dims, data + (size_t)b, nb)) != STENO_OK) break;
        if (w->t[w->n - 1].n_bytes != nb) {
            st = steno_fail(STENO_E_FORMAT, "%s: tensor %s: %zu bytes for a shape of %zu", path, t->string, nb,
                            w->t[w->n - 1].n_bytes);
            break;
        }
    }
    cJSON_Delete(h);
    return st;
}

static int rewrite(const char *in, char *out, size_t cap, const char *const (*rules)[2], size_t n_rules) {
    char buf[512];
    if (strlen(in) >= sizeof buf) return 0;
    strcpy(buf, in);
    for (size_t r = 0; r < n_rules; r++) {
        char *hit = strstr(buf, rules[r][0]);
        if (!hit) continue;
        char tmp[512];
        const size_t pre = (size_t)(hit - buf), fl = strlen(rules[r][0]);
        if (snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)pre, buf, rules[r][1], hit + fl) >= (int)sizeof tmp) return 0;
        strcpy(buf, tmp);
    }
    if (strlen(buf) >= cap) return 0;
    strcpy(out, buf);
    return 1;
}

static int hf_map(const char *in, char *out, size_t cap) {
    static const char *const rules[][2] = {
        {".self_attn_layer_norm.", ".attn_ln."}, {".encoder_attn_layer_norm.", ".cross_attn_ln."},
        {".final_layer_norm.", ".mlp_ln."},     {".self_attn.", ".attn."},
        {".encoder_attn.", ".cross_attn."},     {".q_proj.", ".query."},
        {".k_proj.", ".key."},                  {".v_proj.", ".value."},
        {".out_proj.", ".out."},                {".fc1.", ".mlp.0."},
        {".fc2.", ".mlp.2."},                   {".layers.", ".blocks."},
        {"encoder.layer_norm.", "encoder.ln_post."}, {"decoder.layer_norm.", "decoder.ln."},
        {".embed_positions.weight", ".positional_embedding"}, {".embed_tokens.", ".token_embedding."},
    };
    if (strncmp(in, "model.", 6) == 0) in += 6;
    if (strncmp(in, "encoder.", 8) != 0 && strncmp(in, "decoder.", 8) != 0) return 0; /* proj_out */
    return rewrite(in, out, cap, rules, sizeof rules / sizeof rules[0]);
}

static int mlx_map(const char *in, char *out, size_t cap) {
    static const char *const rules[][2] = {{".mlp1.", ".mlp.0."}, {".mlp2.", ".mlp.2."}};
    if (strncmp(in, "encoder.", 8) != 0 && strncmp(in, "decoder.", 8) != 0) return 0;
    return rewrite(in, out, cap, rules, sizeof rules / sizeof rules[0]);
}

static int is_file(const char *p) {
    struct stat s;
    return stat(p, &s) == 0 && S_ISREG(s.st_mode);
}

static steno_status read_json(const char *path, cJSON **out) {
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    steno_status st = steno_read_file(path, 64u << 20, &buf, &len);
    if (st != STENO_OK) return st;
    *out = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return steno_fail(STENO_E_FORMAT, "%s: not a JSON object", path);
    }
    return STENO_OK;
}

static int json_int(const cJSON *o, const char *k, int *dst) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (1 << 24)) return 0;
    *dst = (int)v->valuedouble;
    return 1;
}

/* Reads config keys into dims: keys[i] names dims field i (in whisper_dims order). */
static steno_status dims_from_json(wtab *w, const char *path, const char *const keys[10]) {
    cJSON *c = NULL;
    steno_status st = read_json(path, &c);
    if (st != STENO_OK) return st;
    int *f[10] = {&w->dims.n_mels,  &w->dims.n_audio_ctx, &w->dims.n_audio_state, &w->dims.n_audio_head,
                  &w->dims.n_audio_layer, &w->dims.n_vocab, &w->dims.n_text_ctx, &w->dims.n_text_state,
                  &w->dims.n_text_head, &w->dims.n_text_layer};
    for (int i = 0; i < 10; i++)
        if (!json_int(c, keys[i], f[i])) {
            st = steno_fail(STENO_E_FORMAT, "%s: missing or bad \"%s\"", path, keys[i]);
            break;
        }
    cJSON_Delete(c);
    return st;
}

steno_status wtab_read_hf(const char *dir, wtab **out) {
    *out = NULL;
    wtab *w = wtab_new("hf", dir);
    if (!w) return steno_fail(STENO_E_NOMEM, "%s: out of memory", dir);
    char path[4096];
    steno_status st;
    static const char *const keys[10] = {"num_mel_bins", "max_source_positions", "d_model",
                                         "encoder_attention_heads", "encoder_layers", "vocab_size",
                                         "max_target_positions", "d_model", "decoder_attention_heads",
                                         "decoder_layers"};
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = dims_from_json(w, path, keys)) != STENO_OK) goto fail;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (is_file(path)) {
        if ((st = add_safetensors(w, path, hf_map)) != STENO_OK) goto fail;
    } else { /* shards: the distinct files of the index's weight_map, in first-seen order */
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        cJSON *idx = NULL;
        if ((st = read_json(path, &idx)) != STENO_OK) goto fail;
        const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map"), *e;
        if (!cJSON_IsObject(wm)) {
            cJSON_Delete(idx);
            st = steno_fail(STENO_E_FORMAT, "%s: no \"weight_map\" object", path);
            goto fail;
        }
        const char *seen[256];
        int n_seen = 0;
        cJSON_ArrayForEach(e, wm) {
            if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || e->valuestring[0] == '.') {
                st = steno_fail(STENO_E_FORMAT, "%s: weight_map entry %s: not a file name in the directory", path,
                                e->string);
                break;
            }
            int dup = 0;
            for (int i = 0; i < n_seen && !dup; i++) dup = strcmp(seen[i], e->valuestring) == 0;
            if (dup) continue;
            if (n_seen == 256) {
                st = steno_fail(STENO_E_FORMAT, "%s: more than 256 shards", path);
                break;
            }
            seen[n_seen++] = e->valuestring;
            char shard[4096];
            snprintf(shard, sizeof shard, "%s/%s", dir, e->valuestring);
            if ((st = add_safetensors(w, shard, hf_map)) != STENO_OK) break;
        }
        if (st == STENO_OK) /* every tensor the index lists must be in the shards */
            cJSON_ArrayForEach(e, wm) {
                char name[256];
                if (hf_map(e->string, name, sizeof name) && !wtab_find(w, name)) {
                    st = steno_fail(STENO_E_FORMAT, "%s: %s is not in %s", path, e->string, e->valuestring);
                    break;
                }
            }
        cJSON_Delete(idx);
        if (st != STENO_OK) goto fail;
    }
    if ((st = wtab_dims_from_shapes(w)) != STENO_OK) goto fail;
    *out = w;
    return STENO_OK;
fail:
    wtab_free(w);
    return st;
}

/* MLX conv weights [out][3][in] → an owned [out][in][3] copy (same dtype, bytes moved as is). */
static steno_status untranspose_conv(wtab *w, const char *name) {
    wt_tensor *t = (wt_tensor *)wtab_find(w, name);
    if (!t) return steno_fail(STENO_E_FORMAT, "%s: missing tensor %s", w->path, name);
    if (t->rank != 3 || t->dims[1] != 3 || t->dtype == WT_I8 || wt_dtype_is_block(t->dtype))
        return steno_fail(STENO_E_FORMAT, "%s: %s is not an MLX conv weight [out][3][in]", w->path, name);
    const int64_t O = t->dims[0], K = 3, I = t->dims[2];
    const size_t es = wt_dtype_bytes(t->dtype, 1);
    uint8_t *dst = malloc(t->n_bytes);
    if (!dst || wtab_own(w, dst, 0) != 0) return steno_fail(STENO_E_NOMEM, "%s: out of memory", w->path);
    const uint8_t *src = t->data;
    for (int64_t o = 0; o < O; o++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < I; i++)
                memcpy(dst + (size_t)((o * I + i) * K + k) * es, src + (size_t)((o * K + k) * I + i) * es, es);
    t->data = dst;
    t->dims[1] = I;
    t->dims[2] = K;
    return STENO_OK;
}

steno_status wtab_read_mlx(const char *dir, wtab **out) {
    *out = NULL;
    wtab *w = wtab_new("mlx", dir);
    if (!w) return steno_fail(STENO_E_NOMEM, "%s: out of memory", dir);
    char path[4096];
    steno_status st;
    static const char *const keys[10] = {"n_mels", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
                                         "n_vocab", "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer"};
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = dims_from_json(w, path, keys)) != STENO_OK) goto fail;
    {
        cJSON *c = NULL;
        if ((st = read_json(path, &c)) != STENO_OK) goto fail;
        const int quant = cJSON_GetObjectItemCaseSensitive(c, "quantization") != NULL;
        cJSON_Delete(c);
        if (quant) {
            st = steno_fail(STENO_E_UNSUPPORTED, "%s: MLX affine-quantized weights (\"quantization\") are not read yet",
                            path);
            goto fail;
        }
    }
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    if (!is_file(path)) snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!is_file(path)) {
        snprintf(path, sizeof path, "%s/weights.npz", dir);
        st = is_file(path) ? wtab_add_npz(w, path, mlx_map)
                           : steno_fail(STENO_E_IO, "%s: no weights.safetensors or weights.npz", dir);
    } else {
        st = add_safetensors(w, path, mlx_map);
    }
    if (st != STENO_OK) goto fail;
    if ((st = untranspose_conv(w, "encoder.conv1.weight")) != STENO_OK) goto fail;
    if ((st = untranspose_conv(w, "encoder.conv2.weight")) != STENO_OK) goto fail;
    if (!wtab_find(w, "encoder.positional_embedding")) {
        const int L = w->dims.n_audio_ctx, C = w->dims.n_audio_state;
        float *pe = C % 2 == 0 ? malloc((size_t)L * (size_t)C * sizeof *pe) : NULL;
        if (!pe || wtab_own(w, pe, 0) != 0) {
            st = steno_fail(STENO_E_FORMAT, "%s: cannot make the encoder's positional embedding", dir);
            goto fail;
        }
        wtab_sinusoids(L, C, pe);
        /* mlx-whisper holds them in the model's type: sinusoids(n_ctx, n_state).astype(dtype) */
        const wt_tensor *emb = wtab_find(w, "decoder.token_embedding.weight");
        wt_dtype dt = emb && (emb->dtype == WT_F16 || emb->dtype == WT_BF16) ? emb->dtype : WT_F32;
        if (dt != WT_F32) { /* narrowed in place: each half written below the float it came from */
            uint16_t *h = (uint16_t *)(void *)pe;
            for (size_t i = 0; i < (size_t)L * (size_t)C; i++) {
                uint32_t x;
                memcpy(&x, &pe[i], 4);
                h[i] = dt == WT_F16 ? wt_f32_to_f16(pe[i]) : (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
            }
        }
        const int64_t dims[2] = {L, C};
        if ((st = wtab_add(w, "encoder.positional_embedding", dt, 2, dims, pe,
                           (size_t)L * (size_t)C * sizeof *pe)) != STENO_OK)
            goto fail;
    }
    if ((st = wtab_dims_from_shapes(w)) != STENO_OK) goto fail;
    *out = w;
    return STENO_OK;
fail:
    wtab_free(w);
    return st;
}
