/* fuzz_gguf.c — libFuzzer target for the GGUF reader and the LLM loader behind it.
 *
 * Each input is parsed twice: by gguf_open_buffer() (every metadata value and array element is
 * read back, every tensor's first row converted to float — an out-of-range pointer shows up under
 * ASan), and, written to an in-memory file, by steno_llm_load() — hyper-parameters, tensor shapes,
 * the tokenizer (SPM or byte-level BPE) — after which a short text is tokenized and detokenized,
 * the chat template applied, and, when the model is small, two tokens are evaluated.
 *
 * Built by CMake with -DSTENO_FUZZ=ON (fuzz/CMakeLists.txt); seeds come from
 * scripts/fuzz_seeds.py (or FUZZ_GGUF_SEED_DIR=dir, which writes two valid models there):
 *
 *   CC=clang cmake -S . -B build-fuzz -DSTENO_FUZZ=ON && cmake --build build-fuzz --target fuzz_gguf
 *   scripts/fuzz.sh gguf 10          # 10 minutes
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "kernels/quant/quant.h"
#include "steno_llm.h"

static int g_fd = -1;
static char g_path[64];

/* ------------------------------------------------------------------------------------------- */
/* Seeds: a tiny Llama with an SPM vocabulary and one with a byte-level BPE vocabulary.          */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void f32(buf *b, float v) { put(b, &v, 4); }
static void str(buf *b, const char *s) {
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(buf *b, const char *k, const char *v) {
    str(b, k);
    u32(b, GGUF_TYPE_STRING);
    str(b, v);
}
static void kv_u32(buf *b, const char *k, uint32_t v) {
    str(b, k);
    u32(b, GGUF_TYPE_UINT32);
    u32(b, v);
}
static void kv_f32(buf *b, const char *k, float v) {
    str(b, k);
    u32(b, GGUF_TYPE_FLOAT32);
    f32(b, v);
}

static size_t seed_model(buf *b, int bpe) {
    enum { E = 32, FF = 64, V = 300 };
    const char *names[] = {"token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight",
                           "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
                           "blk.0.attn_output.weight", "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight",
                           "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"};
    const uint64_t ne[][2] = {{E, V}, {E, 1}, {E, 1}, {E, E}, {E, 16}, {E, 16}, {E, E}, {E, 1}, {E, FF}, {E, FF}, {FF, E}};
    const int types[] = {STENO_T_Q8_0, STENO_T_F32, STENO_T_F32, STENO_T_Q4_0, STENO_T_F16, STENO_T_Q4_1,
                         STENO_T_Q8_0, STENO_T_F32, STENO_T_Q5_0, STENO_T_Q4_0, STENO_T_F32};
    const int nt = 11;
    put(b, "GGUF", 4);
    u32(b, 3);
    u64(b, nt);
    u64(b, bpe ? 15 : 14);
    kv_str(b, "general.architecture", "llama");
    kv_u32(b, "llama.context_length", 64);
    kv_u32(b, "llama.embedding_length", E);
    kv_u32(b, "llama.block_count", 1);
    kv_u32(b, "llama.feed_forward_length", FF);
    kv_u32(b, "llama.attention.head_count", 2);
    kv_u32(b, "llama.attention.head_count_kv", 1);
    kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_str(b, "tokenizer.ggml.model", bpe ? "gpt2" : "llama");
    kv_str(b, "tokenizer.chat_template", bpe ? "<|im_start|>" : "<start_of_turn>");
    str(b, "tokenizer.ggml.tokens");
    u32(b, GGUF_TYPE_ARRAY);
    u32(b, GGUF_TYPE_STRING);
    u64(b, V);
    char t[16];
    for (int i = 0; i < V; i++) {
        if (bpe) {
            /* byte-level chars: printable ASCII as is, a few U+01xx, then merges' results */
            if (i < 94) snprintf(t, sizeof t, "%c", 33 + i);
            else if (i < 256) snprintf(t, sizeof t, "\xc4%c", (char)(0x80 + (i - 94) % 64));
            else if (i == 256) snprintf(t, sizeof t, "<|im_start|>");
            else snprintf(t, sizeof t, "%c%c", 'a' + (i % 26), 'a' + ((i / 26) % 26));
        } else {
            if (i == 0) snprintf(t, sizeof t, "<unk>");
            else if (i == 1) snprintf(t, sizeof t, "<s>");
            else if (i == 2) snprintf(t, sizeof t, "</s>");
            else if (i < 259) snprintf(t, sizeof t, "<0x%02X>", i - 3);
            else snprintf(t, sizeof t, "\xe2\x96\x81%c", 'a' + (i % 26));
        }
        str(b, t);
    }
    str(b, "tokenizer.ggml.token_type");
    u32(b, GGUF_TYPE_ARRAY);
    u32(b, GGUF_TYPE_INT32);
    u64(b, V);
    for (int i = 0; i < V; i++) {
        int32_t ty = bpe ? (i == 256 ? 3 : 1) : (i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
        put(b, &ty, 4);
    }
    if (bpe) {
        str(b, "tokenizer.ggml.merges");
        u32(b, GGUF_TYPE_ARRAY);
        u32(b, GGUF_TYPE_STRING);
        u64(b, 3);
        str(b, "a b");
        str(b, "c d");
        str(b, "ab cd");
        kv_str(b, "tokenizer.ggml.pre", "smollm");
    } else {
        str(b, "tokenizer.ggml.scores");
        u32(b, GGUF_TYPE_ARRAY);
        u32(b, GGUF_TYPE_FLOAT32);
        u64(b, V);
        for (int i = 0; i < V; i++) f32(b, (float)-i);
    }
    kv_u32(b, "tokenizer.ggml.bos_token_id", 1);
    size_t off = 0, offs[11];
    for (int i = 0; i < nt; i++) {
        const steno_type_traits *tr = steno_type_get(types[i]);
        size_t sz = (size_t)(ne[i][0] * ne[i][1] / (uint64_t)tr->block_size) * tr->type_size;
        offs[i] = off;
        off += (sz + 31) / 32 * 32;
        str(b, names[i]);
        int nd = ne[i][1] == 1 ? 1 : 2;
        u32(b, (uint32_t)nd);
        for (int d = 0; d < nd; d++) u64(b, ne[i][d]);
        u32(b, (uint32_t)types[i]);
        u64(b, offs[i]);
    }
    while (b->n % 32) put(b, "", 1);
    size_t d0 = b->n;
    uint8_t *z = calloc(off, 1);
    put(b, z, off);
    free(z);
    /* small deterministic values; scales of quantized blocks to 0.01 */
    uint32_t s = 1;
    for (size_t i = d0; i < b->n; i++) {
        s = s * 1664525u + 1013904223u;
        b->p[i] = (uint8_t)(s >> 24);
    }
    for (int i = 0; i < nt; i++) {
        const steno_type_traits *tr = steno_type_get(types[i]);
        size_t sz = (size_t)(ne[i][0] * ne[i][1] / (uint64_t)tr->block_size) * tr->type_size;
        uint8_t *p = b->p + d0 + offs[i];
        if (types[i] == STENO_T_F32) {
            for (size_t k = 0; k < sz / 4; k++) {
                float v = 0.5f + (float)(k % 7) * 0.1f;
                memcpy(p + 4 * k, &v, 4);
            }
        } else if (types[i] == STENO_T_F16) {
            for (size_t k = 0; k < sz / 2; k++) {
                uint16_t h = steno_f32_to_f16(0.01f * (float)(k % 13));
                memcpy(p + 2 * k, &h, 2);
            }
        } else {
            uint16_t h = steno_f32_to_f16(0.01f);
            for (size_t k = 0; k < sz; k += tr->type_size) {
                memcpy(p + k, &h, 2);
                if (types[i] == STENO_T_Q4_1) memcpy(p + k + 2, &h, 2);
            }
        }
    }
    return b->n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
#ifdef MFD_CLOEXEC
    g_fd = memfd_create("fuzz_gguf", MFD_CLOEXEC);
    if (g_fd >= 0) snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
#endif
    if (g_fd < 0) {
        snprintf(g_path, sizeof g_path, "/tmp/fuzz_gguf_XXXXXX");
        g_fd = mkstemp(g_path);
        if (g_fd < 0) {
            perror("mkstemp");
            abort();
        }
    }
    const char *seed_dir = getenv("FUZZ_GGUF_SEED_DIR");
    if (seed_dir && *seed_dir) {
        for (int bpe = 0; bpe < 2; bpe++) {
            buf b = {0};
            seed_model(&b, bpe);
            char sp[4096];
            snprintf(sp, sizeof sp, "%s/seed_llama_%s.gguf", seed_dir, bpe ? "bpe" : "spm");
            FILE *f = fopen(sp, "wb");
            if (f) {
                fwrite(b.p, 1, b.n, f);
                fclose(f);
            }
            free(b.p);
        }
    }
    return 0;
}

static void exercise_index(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    if (gguf_open_buffer(data, size, "fuzz.gguf", &f) != STENO_OK) {
        if (f) abort();
        return;
    }
    volatile double sink = 0;
    for (int i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (gguf_find(f, kv->key) == NULL) abort();
        if (kv->type == GGUF_TYPE_ARRAY) {
            for (uint64_t j = 0; j < kv->n && j < 4096; j++) {
                if (kv->strs) sink += kv->strs[j].len ? (unsigned char)kv->strs[j].ptr[kv->strs[j].len - 1] : 0;
                else sink += gguf_arr_float(kv, j);
            }
        } else if (kv->type == GGUF_TYPE_STRING && kv->str.len) {
            sink += (unsigned char)kv->str.ptr[kv->str.len - 1];
        }
    }
    static float row[1 << 16];
    for (int i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (gguf_find_tensor(f, t->name) != t) abort();
        if ((const uint8_t *)t->data < data || (const uint8_t *)t->data + t->size > data + size) abort();
        if (t->ne[0] <= (int64_t)(sizeof row / sizeof *row)) {
            steno_type_get(t->type)->to_float(t->data, row, t->ne[0]);
            sink += row[0];
        }
    }
    (void)sink;
    gguf_close(f);
}

static void exercise_model(const uint8_t *data, size_t size) {
    if (ftruncate(g_fd, 0) != 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(g_fd, data + off, size - off, (off_t)off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
    steno_llm *m = NULL;
    if (steno_llm_load(g_path, NULL, &m) != STENO_OK) {
        if (m) abort();
        return;
    }
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const char *text = "Hello, world! 123 abcd <s><|im_start|> caf\xc3\xa9 \xe2\x82\xac\n\n  x";
    int *toks = NULL, n = 0;
    if (steno_llm_tokenize(m, text, strlen(text), 1, 1, &toks, &n) == STENO_OK) {
        char piece[64];
        int prev = -1;
        for (int i = 0; i < n; i++) {
            if (toks[i] < 0 || toks[i] >= info.n_vocab) abort();
            (void)steno_llm_token_piece(m, toks[i], prev, 1, piece, (int)sizeof piece);
            prev = toks[i];
        }
    }
    steno_chat_msg msgs[2] = {{"system", "be brief"}, {"user", "hi"}};
    char *chat = NULL;
    if (steno_llm_chat_format(m, msgs, 2, 1, &chat) == STENO_OK) free(chat);
    /* a forward pass when the model is small enough to be quick */
    if (toks && n > 0 && info.n_embd <= 256 && info.n_ff <= 1024 && info.n_layer <= 4 && info.n_vocab <= 4096 &&
        info.head_dim <= 256 && info.n_head <= 16) {
        steno_llm_ctx_params cp = steno_llm_ctx_default_params();
        cp.n_threads = 1;
        cp.n_ctx = 16;
        cp.max_kv_size = (toks[0] & 1) ? 4 : 0;
        cp.compute = (toks[0] & 2) ? STENO_LLM_COMPUTE_F32 : STENO_LLM_COMPUTE_GGML;
        cp.kv_quant = (toks[0] & 4) ? STENO_KV_QUANT_Q8 : STENO_KV_QUANT_PLAIN; /* refused for odd head_dims */
        cp.kv_sink = 2;
        cp.kv_rotate = (toks[0] & 8) ? 0 : -1;
        cp.kv_center = (toks[0] & 16) ? 0 : 1;
        steno_llm_ctx *c = NULL;
        if (steno_llm_ctx_new(m, &cp, &c) == STENO_OK) {
            float *lg = malloc((size_t)info.n_vocab * sizeof(float));
            if (lg) {
                int k = n < 6 ? n : 6;
                (void)steno_llm_eval(c, toks, k, lg, 0);
                (void)steno_llm_rollback(c, 1);
            }
            free(lg);
            steno_llm_ctx_free(c);
        }
    }
    free(toks);
    steno_llm_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    exercise_index(data, size);
    exercise_model(data, size);
    return 0;
}
