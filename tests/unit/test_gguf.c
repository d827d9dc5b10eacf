/* test_gguf.c — the GGUF and llama2.c readers on synthetic files, valid and broken.
 *
 * 1. A tiny Llama GGUF written here (f32/f16/q8_0/q4_0/q4_1 tensors, an SPM vocabulary with byte
 *    tokens) loads through steno_llm_load and evaluates tokens; its metadata and tensors read back.
 * 2. Broken variants: every truncation length, bad magic, unsupported versions, absurd tensor and
 *    metadata counts, absurd offsets and dimensions, too many dimensions, an unknown and an
 *    unimplemented tensor type, misaligned offsets, a bad alignment, duplicate keys and names,
 *    missing tensors and wrong shapes at model level → a non-OK status and one message naming the
 *    file and the reason; never a crash (the ASan+UBSan build runs this too).
 * 3. A few thousand random mutations of the valid file: open must fail cleanly or give tensors
 *    whose data lies inside the file (each is converted to float to prove it under ASan).
 * 4. llama2.c: a synthetic checkpoint and tokenizer, truncated, with bad headers, with trailing
 *    bytes, cut short at every length, and the versioned "ak42" format.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fp16.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "kernels/quant/quant.h"
#include "steno_llm.h"

#include "test_util.h"
#include "rng.h"

/* ------------------------------------------------------------------------------------------- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) exit(2);
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
static void kv_bool(buf *b, const char *k, int v) {
    str(b, k);
    u32(b, GGUF_TYPE_BOOL);
    uint8_t x = (uint8_t)v;
    put(b, &x, 1);
}

/* The tiny model: n_embd 32, 1 layer, 2 heads (1 KV head), n_ff 64, vocab 259 + 13 letters. */
#define E 32
#define FF 64
#define NH 2
#define NKV 1
#define HD (E / NH)

typedef struct {
    const char *name;
    int n_dims;
    uint64_t ne[4];
    int type;
} tdef;

static int g_nvocab;

static size_t tsize(const tdef *t) {
    uint64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    const steno_type_traits *tr = steno_type_get(t->type);
    return (size_t)(n / (uint64_t)tr->block_size * tr->type_size);
}

static uint32_t g_seed = 12345;
static uint32_t rnd(void) { return rng_lcg_nr(&g_seed) >> 8; }
static float frand(void) { return (float)rnd() / (float)(1u << 24) * 2.0f - 1.0f; }

/* Fills one tensor's bytes with small random values valid for its type. */
static void fill(uint8_t *d, const tdef *t, int is_norm) {
    size_t n = tsize(t);
    if (t->type == STENO_T_F32) {
        for (size_t i = 0; i < n / 4; i++) {
            float v = is_norm ? 1.0f + 0.1f * frand() : 0.2f * frand();
            memcpy(d + 4 * i, &v, 4);
        }
        return;
    }
    if (t->type == STENO_T_F16) {
        for (size_t i = 0; i < n / 2; i++) {
            uint16_t h = steno_f32_to_f16(0.2f * frand());
            memcpy(d + 2 * i, &h, 2);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) d[i] = (uint8_t)rnd();
    /* set every block's scale(s) to a small half */
    const steno_type_traits *tr = steno_type_get(t->type);
    for (size_t off = 0; off < n; off += tr->type_size) {
        uint16_t h = steno_f32_to_f16(0.01f);
        memcpy(d + off, &h, 2);
        if (t->type == STENO_T_Q4_1) memcpy(d + off + 2, &h, 2);
    }
}

/* Options to break the file in specific ways. */
typedef struct {
    int skip_tensor;       /* index of a tensor to leave out, -1 none */
    int bad_shape_tensor;  /* index whose ne[1] is off by one, -1 none */
    uint32_t version;
    const char *magic;
    int dup_key;
    uint32_t alignment;    /* 0: default */
} build_opts;

static const build_opts DEFAULT_OPTS = {-1, -1, 3, "GGUF", 0, 0};

static buf build_gguf(const build_opts *o) {
    static char names[16][64];
    tdef t[16];
    int nt = 0;
    g_nvocab = 3 + 256 + 13;
#define T(nm, nd, a, b_, ty)                                                                        \
    do {                                                                                           \
        snprintf(names[nt], sizeof names[nt], "%s", nm);                                           \
        t[nt] = (tdef){names[nt], nd, {a, b_, 1, 1}, ty};                                          \
        nt++;                                                                                      \
    } while (0)
    T("token_embd.weight", 2, E, (uint64_t)g_nvocab, STENO_T_Q8_0);
    T("output_norm.weight", 1, E, 1, STENO_T_F32);
    T("blk.0.attn_norm.weight", 1, E, 1, STENO_T_F32);
    T("blk.0.attn_q.weight", 2, E, E, STENO_T_Q4_0);
    T("blk.0.attn_k.weight", 2, E, NKV * HD, STENO_T_F16);
    T("blk.0.attn_v.weight", 2, E, NKV * HD, STENO_T_F32);
    T("blk.0.attn_output.weight", 2, E, E, STENO_T_Q4_1);
    T("blk.0.ffn_norm.weight", 1, E, 1, STENO_T_F32);
    T("blk.0.ffn_gate.weight", 2, E, FF, STENO_T_Q8_0);
    T("blk.0.ffn_up.weight", 2, E, FF, STENO_T_Q4_0);
    T("blk.0.ffn_down.weight", 2, FF, E, STENO_T_Q8_0);
#undef T
    if (o->bad_shape_tensor >= 0) t[o->bad_shape_tensor].ne[1] += 1;
    int n_out = nt - (o->skip_tensor >= 0 ? 1 : 0);
    uint32_t align = o->alignment ? o->alignment : 32;

    buf b = {0};
    put(&b, o->magic, 4);
    u32(&b, o->version);
    u64(&b, (uint64_t)n_out);
    int n_kv = 17 + (o->dup_key ? 1 : 0) + (o->alignment ? 1 : 0);
    u64(&b, (uint64_t)n_kv);
    kv_str(&b, "general.architecture", "llama");
    kv_str(&b, "general.name", "tiny test llama");
    kv_u32(&b, "llama.context_length", 128);
    kv_u32(&b, "llama.embedding_length", E);
    kv_u32(&b, "llama.block_count", 1);
    kv_u32(&b, "llama.feed_forward_length", FF);
    kv_u32(&b, "llama.attention.head_count", NH);
    kv_u32(&b, "llama.attention.head_count_kv", NKV);
    kv_f32(&b, "llama.rope.freq_base", 10000.0f);
    kv_f32(&b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_str(&b, "tokenizer.ggml.model", "llama");
    /* tokens */
    str(&b, "tokenizer.ggml.tokens");
    u32(&b, GGUF_TYPE_ARRAY);
    u32(&b, GGUF_TYPE_STRING);
    u64(&b, (uint64_t)g_nvocab);
    str(&b, "<unk>");
    str(&b, "<s>");
    str(&b, "</s>");
    for (int i = 0; i < 256; i++) {
        char h[8];
        snprintf(h, sizeof h, "<0x%02X>", i);
        str(&b, h);
    }
    const char *letters[13] = {"\xe2\x96\x81", "a", "b", "c", "d", "e", "\xe2\x96\x81" "a", "ab", "abc",
                               "\xe2\x96\x81" "ab", "cd", "de", "\xe2\x96\x81" "abc"};
    for (int i = 0; i < 13; i++) str(&b, letters[i]);
    str(&b, "tokenizer.ggml.scores");
    u32(&b, GGUF_TYPE_ARRAY);
    u32(&b, GGUF_TYPE_FLOAT32);
    u64(&b, (uint64_t)g_nvocab);
    for (int i = 0; i < g_nvocab; i++) f32(&b, i < 259 ? 0.0f : -(float)(i - 259));
    str(&b, "tokenizer.ggml.token_type");
    u32(&b, GGUF_TYPE_ARRAY);
    u32(&b, GGUF_TYPE_INT32);
    u64(&b, (uint64_t)g_nvocab);
    for (int i = 0; i < g_nvocab; i++) {
        int32_t ty = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
        put(&b, &ty, 4);
    }
    kv_u32(&b, "tokenizer.ggml.bos_token_id", 1);
    kv_u32(&b, "tokenizer.ggml.eos_token_id", 2);
    kv_bool(&b, "tokenizer.ggml.add_bos_token", 1);
    if (o->dup_key) kv_u32(&b, "llama.block_count", 1);
    if (o->alignment) kv_u32(&b, "general.alignment", o->alignment);

    size_t off = 0;
    size_t offs[16];
    for (int i = 0; i < nt; i++) {
        offs[i] = off;
        off += (tsize(&t[i]) + align - 1) / align * align;
        if (i == o->skip_tensor) continue;
        str(&b, t[i].name);
        u32(&b, (uint32_t)t[i].n_dims);
        for (int d = 0; d < t[i].n_dims; d++) u64(&b, t[i].ne[d]);
        u32(&b, (uint32_t)t[i].type);
        u64(&b, offs[i]);
    }
    while (b.n % align) put(&b, "", 1);
    size_t data0 = b.n;
    uint8_t *zeros = calloc(off + 1, 1);
    put(&b, zeros, off);
    free(zeros);
    for (int i = 0; i < nt; i++) fill(b.p + data0 + offs[i], &t[i], strstr(t[i].name, "norm") != NULL);
    return b;
}

static char g_tmp[256];

static void write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n)) {
        perror(path);
        exit(2);
    }
    fclose(f);
}

/* Opens the buffer via a file (as users do) and expects failure with all substrings in the message. */
static void expect_fail_file(const void *d, size_t n, const char *what, const char *sub1, const char *sub2) {
    write_file(g_tmp, d, n);
    steno_llm *m = NULL;
    steno_status st = steno_llm_load(g_tmp, NULL, &m);
    CHECK(st != STENO_OK, "%s: load succeeded", what);
    if (st == STENO_OK) {
        steno_llm_free(m);
        return;
    }
    const char *msg = steno_errmsg();
    CHECK(strstr(msg, g_tmp) != NULL, "%s: message does not name the file: %s", what, msg);
    CHECK(strchr(msg, '\n') == NULL, "%s: message is not one line: %s", what, msg);
    if (sub1) CHECK(strstr(msg, sub1) != NULL, "%s: message lacks '%s': %s", what, sub1, msg);
    if (sub2) CHECK(strstr(msg, sub2) != NULL, "%s: message lacks '%s': %s", what, sub2, msg);
}

/* Offsets of fields in the valid file, found by scanning for the tensor-info region. */
static size_t find(const buf *b, const char *needle) {
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= b->n; i++)
        if (memcmp(b->p + i, needle, nl) == 0) return i;
    return (size_t)-1;
}

static void test_valid(void) {
    buf b = build_gguf(&DEFAULT_OPTS);
    gguf_file *f;
    CHECK(gguf_open_buffer(b.p, b.n, "tiny.gguf", &f) == STENO_OK, "%s", steno_errmsg());
    if (f) {
        CHECK(gguf_version(f) == 3, "version");
        CHECK(gguf_n_tensors(f) == 11, "n_tensors %d", gguf_n_tensors(f));
        int64_t v;
        CHECK(gguf_get_int(f, "llama.embedding_length", &v) && v == E, "embedding_length");
        const gguf_tensor *t = gguf_find_tensor(f, "blk.0.attn_k.weight");
        CHECK(t && t->type == STENO_T_F16 && t->ne[0] == E && t->ne[1] == HD, "attn_k");
        CHECK(gguf_find_tensor(f, "nope") == NULL, "missing tensor found");
        const gguf_str *s = gguf_get_str(f, "general.name");
        CHECK(s && s->len == 15 && memcmp(s->ptr, "tiny test llama", 15) == 0, "general.name");
        gguf_close(f);
    }
    write_file(g_tmp, b.p, b.n);
    steno_llm *m;
    CHECK(steno_llm_load(g_tmp, NULL, &m) == STENO_OK, "%s", steno_errmsg());
    if (m) {
        steno_llm_info info;
        steno_llm_get_info(m, &info);
        CHECK(info.n_vocab == g_nvocab && info.n_layer == 1 && info.n_head == NH && info.n_head_kv == NKV,
              "info");
        int *tok, n;
        CHECK(steno_llm_tokenize(m, "abc ab", 6, 1, 0, &tok, &n) == STENO_OK, "%s", steno_errmsg());
        /* BOS, "▁abc", "▁ab" */
        CHECK(n == 3 && tok[0] == 1 && tok[1] == 271 && tok[2] == 268, "tokens n=%d [%d %d %d]", n, n > 0 ? tok[0] : -1,
              n > 1 ? tok[1] : -1, n > 2 ? tok[2] : -1);
        steno_llm_ctx *c;
        CHECK(steno_llm_ctx_new(m, NULL, &c) == STENO_OK, "%s", steno_errmsg());
        float *lg = malloc((size_t)info.n_vocab * sizeof(float));
        CHECK(steno_llm_eval(c, tok, n, lg, 0) == STENO_OK, "%s", steno_errmsg());
        int finite = 1;
        for (int i = 0; i < info.n_vocab; i++) finite &= isfinite(lg[i]);
        CHECK(finite, "non-finite logits");
        int bad = 999999;
        CHECK(steno_llm_eval(c, &bad, 1, lg, 0) == STENO_E_INVALID_ARG, "out-of-range token accepted");
        free(lg);
        free(tok);
        steno_llm_ctx_free(c);
        steno_llm_free(m);
    }
    free(b.p);
}

static void test_broken(void) {
    buf b = build_gguf(&DEFAULT_OPTS);
    /* every truncation of the header and index, and some of the data */
    size_t data_start = find(&b, "blk.0.ffn_down.weight") + 64;
    for (size_t n = 0; n < b.n; n += (n < data_start + 256 ? 1 : 97)) {
        gguf_file *f;
        steno_status st = gguf_open_buffer(b.p, n, "cut.gguf", &f);
        CHECK(st != STENO_OK, "truncated to %zu bytes accepted", n);
        if (st == STENO_OK) gguf_close(f);
        else CHECK(strstr(steno_errmsg(), "cut.gguf") != NULL, "message: %s", steno_errmsg());
    }
    expect_fail_file(b.p, b.n / 2, "truncated", "truncated", NULL);
    expect_fail_file(b.p, 0, "empty", "empty", NULL);
    expect_fail_file(b.p, 3, "3 bytes", NULL, NULL);

    buf c = {0};
    put(&c, b.p, b.n);
    memcpy(c.p, "GGUX", 4);
    expect_fail_file(c.p, c.n, "bad magic", "magic", NULL);
    memcpy(c.p, "GGUF", 4);
    uint32_t v = 1;
    memcpy(c.p + 4, &v, 4);
    expect_fail_file(c.p, c.n, "version 1", "version 1", NULL);
    v = 7;
    memcpy(c.p + 4, &v, 4);
    expect_fail_file(c.p, c.n, "version 7", "version 7", NULL);
    v = 3;
    memcpy(c.p + 4, &v, 4);
    uint64_t big = 1ull << 40;
    memcpy(c.p + 8, &big, 8);
    expect_fail_file(c.p, c.n, "absurd tensor count", "tensor count", NULL);
    memcpy(c.p + 8, b.p + 8, 8);
    memcpy(c.p + 16, &big, 8);
    expect_fail_file(c.p, c.n, "absurd metadata count", "metadata count", NULL);
    memcpy(c.p + 16, b.p + 16, 8);

    /* tensor info of blk.0.ffn_down.weight: name, n_dims, ne0, ne1, type, offset */
    size_t ti = find(&b, "blk.0.ffn_down.weight") + strlen("blk.0.ffn_down.weight");
    size_t p_nd = ti, p_ne0 = ti + 4, p_ne1 = ti + 12, p_type = ti + 20, p_off = ti + 24;
    uint64_t huge = 1ull << 50;
    memcpy(c.p + p_off, &huge, 8);
    expect_fail_file(c.p, c.n, "absurd offset", "blk.0.ffn_down.weight", "past the end");
    uint64_t mis = 8;
    memcpy(c.p + p_off, &mis, 8);
    expect_fail_file(c.p, c.n, "misaligned offset", "alignment", NULL);
    memcpy(c.p + p_off, b.p + p_off, 8);
    memcpy(c.p + p_ne1, &huge, 8);
    expect_fail_file(c.p, c.n, "absurd dims", "blk.0.ffn_down.weight", NULL);
    uint64_t maxd = UINT64_MAX;
    memcpy(c.p + p_ne1, &maxd, 8);
    expect_fail_file(c.p, c.n, "dims overflow", "dimension", NULL);
    uint64_t zero = 0;
    memcpy(c.p + p_ne1, &zero, 8);
    expect_fail_file(c.p, c.n, "zero dim", "dimension", NULL);
    memcpy(c.p + p_ne1, b.p + p_ne1, 8);
    uint64_t odd = 33;
    memcpy(c.p + p_ne0, &odd, 8);
    expect_fail_file(c.p, c.n, "row not a multiple of the block", "block size", NULL);
    memcpy(c.p + p_ne0, b.p + p_ne0, 8);
    uint32_t nd = 5;
    memcpy(c.p + p_nd, &nd, 4);
    expect_fail_file(c.p, c.n, "5 dims", "dimensions", NULL);
    memcpy(c.p + p_nd, b.p + p_nd, 4);
    uint32_t ty = 99;
    memcpy(c.p + p_type, &ty, 4);
    expect_fail_file(c.p, c.n, "unknown type", "type 99", NULL);
    ty = 13; /* q5_K: a real ggml type steno does not implement */
    memcpy(c.p + p_type, &ty, 4);
    expect_fail_file(c.p, c.n, "unimplemented type", "q5_K", "not support");
    memcpy(c.p + p_type, b.p + p_type, 4);
    /* a string length larger than the file */
    size_t key = find(&b, "general.name") - 8;
    memcpy(c.p + key, &huge, 8);
    expect_fail_file(c.p, c.n, "absurd string length", "truncated", NULL);
    memcpy(c.p + key, b.p + key, 8);
    /* an invalid metadata type */
    uint32_t badt = 77;
    memcpy(c.p + key + 8 + strlen("general.name"), &badt, 4);
    expect_fail_file(c.p, c.n, "bad value type", "invalid type", NULL);
    free(c.p);

    build_opts o = DEFAULT_OPTS;
    o.dup_key = 1;
    buf d = build_gguf(&o);
    expect_fail_file(d.p, d.n, "duplicate key", "duplicate", NULL);
    free(d.p);
    o = DEFAULT_OPTS;
    o.alignment = 24;
    d = build_gguf(&o);
    expect_fail_file(d.p, d.n, "alignment 24", "alignment", NULL);
    free(d.p);
    for (int a = 1; a <= 4; a *= 2) { /* powers of two below the spec's minimum of 8 */
        o = DEFAULT_OPTS;
        o.alignment = a;
        d = build_gguf(&o);
        expect_fail_file(d.p, d.n, "alignment below 8", "alignment", NULL);
        free(d.p);
    }
    o = DEFAULT_OPTS;
    o.alignment = 64;
    d = build_gguf(&o);
    write_file(g_tmp, d.p, d.n);
    steno_llm *m;
    CHECK(steno_llm_load(g_tmp, NULL, &m) == STENO_OK, "alignment 64: %s", steno_errmsg());
    steno_llm_free(m);
    free(d.p);
    o = DEFAULT_OPTS;
    o.skip_tensor = 5;
    d = build_gguf(&o);
    expect_fail_file(d.p, d.n, "missing tensor", "blk.0.attn_v.weight", "missing");
    free(d.p);
    o = DEFAULT_OPTS;
    o.bad_shape_tensor = 3;
    d = build_gguf(&o);
    expect_fail_file(d.p, d.n, "wrong shape", "blk.0.attn_q.weight", "shape");
    free(d.p);
    free(b.p);
}

static void test_mutations(void) {
    buf b = build_gguf(&DEFAULT_OPTS);
    uint8_t *m = malloc(b.n);
    float *row = malloc(1 << 20);
    int opened = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(m, b.p, b.n);
        int flips = 1 + (int)(rnd() % 8);
        size_t hdr = find(&b, "blk.0.ffn_down.weight") + 64;
        for (int k = 0; k < flips; k++) {
            size_t pos = rnd() % hdr;
            switch (rnd() % 3) {
            case 0: m[pos] ^= (uint8_t)(1u << (rnd() % 8)); break;
            case 1: m[pos] = (uint8_t)rnd(); break;
            default: m[pos] = 0xff; break;
            }
        }
        size_t n = rnd() % 4 == 0 ? rnd() % b.n : b.n;
        gguf_file *f;
        if (gguf_open_buffer(m, n, "mut.gguf", &f) != STENO_OK) continue;
        opened++;
        for (int i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            CHECK((const uint8_t *)t->data >= m && (const uint8_t *)t->data + t->size <= m + n, "tensor outside");
            if (t->ne[0] <= (1 << 18)) steno_type_get(t->type)->to_float(t->data, row, t->ne[0]);
        }
        gguf_close(f);
    }
    printf("mutations: 3000 tried, %d opened cleanly, none crashed\n", opened);
    free(row);
    free(m);
    free(b.p);
}

/* ------------------------------------------------------------------------------------------- */
/* llama2.c                                                                                      */

static buf build_llama2c(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int seq) {
    buf b = {0};
    int32_t h[7] = {dim, hidden, layers, heads, kv_heads, vocab, seq};
    put(&b, h, sizeof h);
    int hs = dim / heads, kvd = kv_heads * hs;
    size_t n = (size_t)vocab * dim + (size_t)layers * (2 * dim + 2 * dim * dim + 2 * kvd * dim + 3 * hidden * dim) +
               dim + (size_t)seq * hs;
    for (size_t i = 0; i < n; i++) f32(&b, 0.1f * frand());
    return b;
}

static buf build_tok(int vocab) {
    buf b = {0};
    int32_t maxlen = 8;
    put(&b, &maxlen, 4);
    for (int i = 0; i < vocab; i++) {
        char s[16];
        int l = snprintf(s, sizeof s, "t%d", i);
        f32(&b, (float)-i);
        int32_t len = l;
        put(&b, &len, 4);
        put(&b, s, (size_t)l);
    }
    return b;
}

static void test_llama2c(void) {
    buf ck = build_llama2c(16, 32, 2, 4, 2, 20, 8);
    llama2c_file *f;
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) == STENO_OK, "%s", steno_errmsg());
    if (f) {
        const llama2c_config *c = llama2c_get_config(f);
        CHECK(c->dim == 16 && c->n_layers == 2 && c->vocab_size == 20 && c->shared_classifier, "config");
        llama2c_close(f);
    }
    for (size_t n = 0; n < ck.n; n += (n < 64 ? 1 : 61)) {
        steno_status st = llama2c_open_buffer(ck.p, n, "ck.bin", &f);
        CHECK(st != STENO_OK, "checkpoint cut to %zu accepted", n);
        if (st == STENO_OK) llama2c_close(f);
        else CHECK(strstr(steno_errmsg(), "ck.bin") != NULL, "message %s", steno_errmsg());
    }
    /* trailing bytes, bad headers, versioned format */
    put(&ck, "xxxx", 4);
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) != STENO_OK, "trailing bytes accepted");
    ck.n -= 4;
    int32_t bad[7];
    memcpy(bad, ck.p, sizeof bad);
    int32_t save = bad[3];
    bad[3] = 3; /* 16 % 3 != 0 */
    memcpy(ck.p, bad, sizeof bad);
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) != STENO_OK && strstr(steno_errmsg(), "n_heads"),
          "bad n_heads: %s", steno_errmsg());
    bad[3] = save;
    bad[0] = -5;
    memcpy(ck.p, bad, sizeof bad);
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) != STENO_OK && strstr(steno_errmsg(), "dim"),
          "negative dim: %s", steno_errmsg());
    bad[0] = 0x7fffffff;
    memcpy(ck.p, bad, sizeof bad);
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) != STENO_OK, "huge dim accepted");
    memcpy(ck.p, "24ka", 4); /* export.py version >= 1: uint32 0x616b3432 ("ak42") little-endian */
    CHECK(llama2c_open_buffer(ck.p, ck.n, "ck.bin", &f) == STENO_E_UNSUPPORTED && strstr(steno_errmsg(), "ak42"),
          "versioned: %s", steno_errmsg());

    buf tk = build_tok(20);
    llama2c_tokenizer *t;
    CHECK(llama2c_tokenizer_load_buffer(tk.p, tk.n, "tok.bin", 20, &t) == STENO_OK, "%s", steno_errmsg());
    if (t) {
        CHECK(t->n == 20 && strcmp(t->pieces[13], "t13") == 0 && t->scores[13] == -13.0f, "tokenizer content");
        llama2c_tokenizer_free(t);
    }
    for (size_t n = 0; n < tk.n; n++) {
        steno_status st = llama2c_tokenizer_load_buffer(tk.p, n, "tok.bin", 20, &t);
        CHECK(st != STENO_OK, "tokenizer cut to %zu accepted", n);
        if (st == STENO_OK) llama2c_tokenizer_free(t);
        else CHECK(strstr(steno_errmsg(), "tok.bin") && (n < 4 || strstr(steno_errmsg(), "truncated")),
                   "cut to %zu: %s", n, steno_errmsg());
    }
    CHECK(llama2c_tokenizer_load_buffer(tk.p, tk.n, "tok.bin", 21, &t) != STENO_OK, "too few tokens accepted");
    CHECK(llama2c_tokenizer_load_buffer(tk.p, tk.n, "tok.bin", 19, &t) != STENO_OK && strstr(steno_errmsg(), "trailing"),
          "too many tokens: %s", steno_errmsg());
    int32_t neg = -3;
    memcpy(tk.p + 4 + 4, &neg, 4);
    CHECK(llama2c_tokenizer_load_buffer(tk.p, tk.n, "tok.bin", 20, &t) != STENO_OK && strstr(steno_errmsg(), "length"),
          "negative length: %s", steno_errmsg());

    /* through the public API: a checkpoint with a tokenizer cut short beside it */
    char dir[] = "/tmp/steno_l2c_XXXXXX";
    if (mkdtemp(dir)) {
        char pm[512], pt[512];
        snprintf(pm, sizeof pm, "%s/model.bin", dir);
        snprintf(pt, sizeof pt, "%s/tokenizer.bin", dir);
        buf ck2 = build_llama2c(16, 32, 2, 4, 2, 20, 8);
        buf tk2 = build_tok(20);
        write_file(pm, ck2.p, ck2.n);
        write_file(pt, tk2.p, tk2.n - 5);
        steno_llm *m;
        CHECK(steno_llm_load(pm, NULL, &m) != STENO_OK && strstr(steno_errmsg(), pt) &&
                  strstr(steno_errmsg(), "truncated"),
              "short tokenizer: %s", steno_errmsg());
        write_file(pt, tk2.p, tk2.n);
        CHECK(steno_llm_load(pm, NULL, &m) == STENO_OK, "%s", steno_errmsg());
        if (m) steno_llm_free(m);
        unlink(pt);
        CHECK(steno_llm_load(pm, NULL, &m) != STENO_OK && strstr(steno_errmsg(), "tokenizer"),
              "missing tokenizer: %s", steno_errmsg());
        write_file(pm, ck2.p, ck2.n - 100);
        CHECK(steno_llm_load(pm, NULL, &m) != STENO_OK && strstr(steno_errmsg(), "bytes"),
              "truncated checkpoint: %s", steno_errmsg());
        unlink(pm);
        rmdir(dir);
        free(ck2.p);
        free(tk2.p);
    }
    free(ck.p);
    free(tk.p);
}

static void test_resolve(void) {
    char buf_[512];
    steno_llm *m;
    CHECK(steno_llm_load("/nonexistent/x.gguf", NULL, &m) == STENO_E_IO && strstr(steno_errmsg(), "/nonexistent/x.gguf"),
          "missing file: %s", steno_errmsg());
    CHECK(steno_llm_resolve("no-such-model-name", buf_, sizeof buf_) == STENO_E_IO &&
              strstr(steno_errmsg(), "not a known model"),
          "unknown name: %s", steno_errmsg());
    setenv("STENO_MODELS_DIR", "/nonexistent-models", 1);
    CHECK(steno_llm_resolve("gemma3", buf_, sizeof buf_) == STENO_E_IO && strstr(steno_errmsg(), "fetch_llm_models.sh"),
          "absent known model: %s", steno_errmsg());
    unsetenv("STENO_MODELS_DIR");
    CHECK(steno_llm_load("/tmp", NULL, &m) != STENO_OK, "directory accepted");
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/steno_test_gguf_%d.gguf", (int)getpid());
    test_valid();
    test_broken();
    test_mutations();
    test_llama2c();
    test_resolve();
    unlink(g_tmp);
    if (g_failures) {
        fprintf(stderr, "%d check(s) failed\n", g_failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
