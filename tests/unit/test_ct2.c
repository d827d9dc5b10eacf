/* test_ct2.c — the CTranslate2 model.bin reader and the config.json parser.
 *
 * 1. The real tiny.en model.bin (float16): spec, variable count, shapes, alias, known values
 *    (taken once with Python's struct module from the file).
 * 2. A synthetic model.bin written here (every dtype, scalars, an alias) and corrupt variants of
 *    it: missing, empty, directory, truncated at every length, bad version/rank/dtype/n_bytes,
 *    huge counts, trailing bytes, dangling alias → a non-OK status and a message naming the path.
 * 3. A fuzz-ish loop: a few thousand random mutations of the synthetic file; must never crash
 *    (ASan+UBSan in CI).
 * 4. config.json: the real one, not-JSON (with line), wrong types, missing keys.
 * The model directory: $STENO_MODEL_DIR, else $XDG_CACHE_HOME/steno/models/tiny.en, else
 * $HOME/.cache/steno/models/tiny.en. A missing model is a failure, not a skip.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fp16.h"
#include "formats/ct2.h"
#include "formats/whisper_config.h"
#include "steno.h"

#include "test_util.h"
#include "rng.h"

static const char *g_model_dir; /* test_model_dir() */
static char g_tmp[256];

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    if (n && fwrite(data, 1, n, f) != n) {
        perror(path);
        exit(2);
    }
    fclose(f);
}

/* ------------------------------------------------------------------------------------------- */
/* A byte buffer for building synthetic model.bin files                                          */

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
static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
static void put_u32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void put_str(buf *b, const char *s) {
    put_u16(b, (uint16_t)(strlen(s) + 1));
    put(b, s, strlen(s) + 1);
}

/* Offsets of interesting fields in the synthetic file, for targeted corruption. */
typedef struct {
    size_t n_vars_off;   /* u32 n_variables */
    size_t rank_off;     /* u8 rank of variable "w" */
    size_t dim0_off;     /* u32 dims[0] of "w" */
    size_t dtype_off;    /* u8 dtype of "w" */
    size_t nbytes_off;   /* u32 n_bytes of "w" */
    size_t name_len_off; /* u16 name length of "w" */
    size_t n_alias_off;  /* u32 n_aliases */
    size_t alias_tgt_off;/* str target of the alias */
} synth_layout;

#define SYN_W_ROWS 64
#define SYN_W_COLS 128

/* Version-6 model: scalars (int8, int16, int32), fp16 matrix "w" (64x128, 16 KiB),
 * f32 vector, bf16 vector, alias "proj" → "w". */
static buf make_synth(synth_layout *L) {
    buf b = {0};
    put_u32(&b, 6);
    put_str(&b, "WhisperSpec");
    put_u32(&b, 3);
    L->n_vars_off = b.n;
    put_u32(&b, 6);
    /* a: int8 scalar 3 */
    put_str(&b, "a/activation");
    put_u8(&b, 0);
    put_u8(&b, CT2_I8);
    put_u32(&b, 1);
    put_u8(&b, 3);
    /* b: int16 scalar -1 */
    put_str(&b, "b/layer");
    put_u8(&b, 0);
    put_u8(&b, CT2_I16);
    put_u32(&b, 2);
    put_u16(&b, 0xffff);
    /* c: int32 scalar 123456 */
    put_str(&b, "c/count");
    put_u8(&b, 0);
    put_u8(&b, CT2_I32);
    put_u32(&b, 4);
    put_u32(&b, 123456);
    /* f: f32 [3] = 1.5, -2, 0.25 */
    put_str(&b, "f/vec");
    put_u8(&b, 1);
    put_u32(&b, 3);
    put_u8(&b, CT2_F32);
    put_u32(&b, 12);
    float fv[3] = {1.5f, -2.0f, 0.25f};
    put(&b, fv, 12);
    /* g: bf16 [2] = 1.0 (0x3f80), -3.0 (0xc040) */
    put_str(&b, "g/bf");
    put_u8(&b, 1);
    put_u32(&b, 2);
    put_u8(&b, CT2_BF16);
    put_u32(&b, 4);
    put_u16(&b, 0x3f80);
    put_u16(&b, 0xc040);
    /* w: fp16 [64,128], element i = half bits (0x3c00 + (i % 1024)) → 1 + (i%1024)/1024 */
    L->name_len_off = b.n;
    put_str(&b, "w/weight");
    L->rank_off = b.n;
    put_u8(&b, 2);
    L->dim0_off = b.n;
    put_u32(&b, SYN_W_ROWS);
    put_u32(&b, SYN_W_COLS);
    L->dtype_off = b.n;
    put_u8(&b, CT2_F16);
    L->nbytes_off = b.n;
    put_u32(&b, SYN_W_ROWS * SYN_W_COLS * 2);
    for (int i = 0; i < SYN_W_ROWS * SYN_W_COLS; i++) put_u16(&b, (uint16_t)(0x3c00 + (i % 1024)));
    L->n_alias_off = b.n;
    put_u32(&b, 1);
    put_str(&b, "proj/weight");
    L->alias_tgt_off = b.n;
    put_str(&b, "w/weight");
    return b;
}

static void set_u32(buf *b, size_t off, uint32_t v) {
    b->p[off] = (uint8_t)v;
    b->p[off + 1] = (uint8_t)(v >> 8);
    b->p[off + 2] = (uint8_t)(v >> 16);
    b->p[off + 3] = (uint8_t)(v >> 24);
}

/* Opens bytes written to path; expects failure with path in the message. Returns status. */
static steno_status expect_bad(const char *what, const char *path, const void *data, size_t n) {
    write_bytes(path, data, n);
    ct2_model *m = (ct2_model *)1;
    steno_status st = ct2_open(path, &m);
    CHECK(st != STENO_OK, "%s: opened a corrupt file", what);
    CHECK(m == NULL, "%s: *out not NULL on failure", what);
    CHECK(strstr(steno_errmsg(), path) != NULL, "%s: message does not name the path: '%s'", what,
          steno_errmsg());
    if (st == STENO_OK && m) ct2_close(m);
    return st;
}

/* ------------------------------------------------------------------------------------------- */

static void test_real_model(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model.bin", g_model_dir);
    ct2_model *m = NULL;
    steno_status st = ct2_open(path, &m);
    CHECK(st == STENO_OK, "open real model: %s", steno_errmsg());
    if (st != STENO_OK) return;
    CHECK(strcmp(ct2_spec_name(m), "WhisperSpec") == 0, "spec '%s'", ct2_spec_name(m));
    CHECK(ct2_n_vars(m) == 148, "n_vars %d", ct2_n_vars(m));
    CHECK(ct2_var_at(m, -1) == NULL && ct2_var_at(m, 148) == NULL, "var_at bounds");
    const ct2_var *v0 = ct2_var_at(m, 0);
    CHECK(v0 && strcmp(v0->name, "decoder/activation") == 0, "var 0 name");

    const ct2_var *emb = ct2_find(m, "decoder/embeddings/weight");
    CHECK(emb && emb->rank == 2 && emb->dims[0] == 51864 && emb->dims[1] == 384 &&
              emb->dtype == CT2_F16 && emb->n_elems == 51864LL * 384,
          "embeddings shape");
    const ct2_var *proj = ct2_find(m, "decoder/projection/weight");
    CHECK(proj != NULL && proj == emb, "alias projection → embeddings");
    CHECK(ct2_find(m, "decoder/nope") == NULL, "absent name");
    CHECK(ct2_find(m, "") == NULL, "empty name");

    const ct2_var *conv = ct2_find(m, "encoder/conv1/weight");
    CHECK(conv && conv->rank == 3 && conv->dims[0] == 384 && conv->dims[1] == 80 &&
              conv->dims[2] == 3 && conv->dtype == CT2_F16,
          "conv1 shape");
    const ct2_var *pe = ct2_find(m, "encoder/position_encodings/encodings");
    CHECK(pe && pe->rank == 2 && pe->dims[0] == 1500 && pe->dims[1] == 384, "encoder pe shape");
    const ct2_var *lin = ct2_find(m, "decoder/layer_0/attention/linear_1/weight");
    CHECK(lin && lin->dims[0] == 768 && lin->dims[1] == 384, "linear_1 shape");

    if (emb) {
        /* first halves: 0x2871 0x9d6c 0xa435 0x8f18 */
        uint16_t h[4];
        memcpy(h, emb->data, 8);
        CHECK(h[0] == 0x2871 && h[1] == 0x9d6c && h[2] == 0xa435 && h[3] == 0x8f18, "emb raw");
        float *row = malloc(384 * sizeof *row);
        ct2_var first_row = *emb;
        first_row.rank = 1;
        first_row.dims[0] = 384;
        first_row.n_elems = 384;
        ct2_to_f32(&first_row, row);
        CHECK(row[0] == 0.034698486328125f && row[1] == -0.0052947998046875f &&
                  row[2] == -0.0164337158203125f && row[3] == -0.0004329681396484375f,
              "emb f32 %g %g %g %g", row[0], row[1], row[2], row[3]);
        free(row);
    }
    const ct2_var *g = ct2_find(m, "encoder/layer_norm/gamma");
    CHECK(g && g->rank == 1 && g->dims[0] == 384, "encoder ln gamma");
    if (g) {
        float x[384];
        ct2_to_f32(g, x);
        CHECK(x[0] == 1.0380859375f && x[1] == 1.076171875f && x[2] == 1.19140625f &&
                  x[7] == 1.685546875f,
              "gamma %g %g %g %g", x[0], x[1], x[2], x[7]);
    }
    if (pe) { /* last 4 halves of the last variable in the file: 15329 15332 15335 15337 */
        const uint8_t *end = (const uint8_t *)pe->data + pe->n_elems * 2;
        uint16_t h[4];
        memcpy(h, end - 8, 8);
        CHECK(h[0] == 15329 && h[1] == 15332 && h[2] == 15335 && h[3] == 15337, "pe tail");
    }

    int ok = -1;
    CHECK(ct2_scalar_int(m, "decoder/num_heads", &ok) == 6 && ok == 1, "decoder heads");
    CHECK(ct2_scalar_int(m, "encoder/num_heads", &ok) == 6 && ok == 1, "encoder heads");
    CHECK(ct2_scalar_int(m, "decoder/activation", &ok) == 3 && ok == 1, "activation");
    CHECK(ct2_scalar_int(m, "decoder/alignment_layer", &ok) == -1 && ok == 1, "alignment_layer");
    CHECK(ct2_scalar_int(m, "decoder/pre_norm", &ok) == 1 && ok == 1, "pre_norm");
    CHECK(ct2_scalar_int(m, "decoder/missing", &ok) == 0 && ok == 0, "missing scalar");
    CHECK(ct2_scalar_int(m, "encoder/layer_norm/gamma", &ok) == 0 && ok == 0, "non-scalar");
    CHECK(ct2_scalar_int(m, "decoder/num_heads", NULL) == 6, "NULL ok");

    /* every variable: data inside the mapping, consistent n_elems */
    int bad = 0;
    for (int i = 0; i < ct2_n_vars(m); i++) {
        const ct2_var *v = ct2_var_at(m, i);
        int64_t n = 1;
        for (int d = 0; d < v->rank; d++) n *= v->dims[d];
        if (n != v->n_elems || ct2_find(m, v->name) != v) bad++;
    }
    CHECK(bad == 0, "%d inconsistent variables", bad);
    ct2_close(m);

    /* the real file truncated in the header, mid-name, and mid-data (prefix copies ≤ 1 MiB) */
    FILE *f = fopen(path, "rb");
    size_t pref_n = 1 << 20;
    uint8_t *pref = malloc(pref_n);
    CHECK(f && fread(pref, 1, pref_n, f) == pref_n, "read prefix");
    if (f) fclose(f);
    const size_t cuts[] = {1, 3, 4, 10, 20, 25, 40, 50, 60, 188, 200, 4096, 65536, 1 << 20};
    char tp[512];
    snprintf(tp, sizeof tp, "%s/real_trunc.bin", g_tmp);
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char what[64];
        snprintf(what, sizeof what, "real model cut at %zu", cuts[i]);
        steno_status s = expect_bad(what, tp, pref, cuts[i]);
        CHECK(s == STENO_E_FORMAT, "%s: status %d", what, s);
        if (cuts[i] >= 188) CHECK(strstr(steno_errmsg(), "truncated") != NULL, "%s: '%s'", what, steno_errmsg());
    }
    /* garbage in place of the header: wrong binary version */
    memcpy(pref, "\x7f" "ELF", 4);
    CHECK(expect_bad("ELF magic", tp, pref, 4096) == STENO_E_FORMAT, "ELF");
    CHECK(strstr(steno_errmsg(), "version") != NULL, "version msg '%s'", steno_errmsg());
    free(pref);
    unlink(tp);
}

static void test_synthetic(void) {
    synth_layout L;
    buf b = make_synth(&L);
    char p[512];
    snprintf(p, sizeof p, "%s/model.bin", g_tmp);
    write_bytes(p, b.p, b.n);
    ct2_model *m = NULL;
    steno_status st = ct2_open(p, &m);
    CHECK(st == STENO_OK, "synthetic: %s", steno_errmsg());
    if (st == STENO_OK) {
        int ok;
        CHECK(ct2_n_vars(m) == 6, "n");
        CHECK(ct2_scalar_int(m, "a/activation", &ok) == 3 && ok, "i8");
        CHECK(ct2_scalar_int(m, "b/layer", &ok) == -1 && ok, "i16");
        CHECK(ct2_scalar_int(m, "c/count", &ok) == 123456 && ok, "i32");
        CHECK(ct2_scalar_int(m, "f/vec", &ok) == 0 && !ok, "f32 not scalar int");
        float x[SYN_W_ROWS * SYN_W_COLS];
        ct2_to_f32(ct2_find(m, "f/vec"), x);
        CHECK(x[0] == 1.5f && x[1] == -2.0f && x[2] == 0.25f, "f32");
        ct2_to_f32(ct2_find(m, "g/bf"), x);
        CHECK(x[0] == 1.0f && x[1] == -3.0f, "bf16 %g %g", x[0], x[1]);
        ct2_to_f32(ct2_find(m, "c/count"), x);
        CHECK(x[0] == 123456.0f, "i32→f32");
        ct2_to_f32(ct2_find(m, "b/layer"), x);
        CHECK(x[0] == -1.0f, "i16→f32");
        const ct2_var *w = ct2_find(m, "proj/weight");
        CHECK(w && w == ct2_find(m, "w/weight") && w->n_elems == SYN_W_ROWS * SYN_W_COLS, "alias");
        if (w) {
            ct2_to_f32(w, x);
            int bad = 0;
            for (int i = 0; i < SYN_W_ROWS * SYN_W_COLS; i++)
                if (x[i] != 1.0f + (float)(i % 1024) / 1024.0f) bad++;
            CHECK(bad == 0, "fp16 values: %d wrong", bad);
        }
        ct2_close(m);
    }
    ct2_close(NULL);

    /* fp16 special values */
    CHECK(isinf(steno_fp16_to_f32(0x7c00)) && isnan(steno_fp16_to_f32(0x7e00)) &&
              steno_fp16_to_f32(0x0001) == ldexpf(1.0f, -24) && steno_fp16_to_f32(0xc000) == -2.0f,
          "fp16 specials");

    /* missing file, directory, empty file */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/does-not-exist/model.bin", g_tmp);
    m = (ct2_model *)1;
    st = ct2_open(missing, &m);
    CHECK(st == STENO_E_IO && m == NULL, "missing: %d", st);
    CHECK(strstr(steno_errmsg(), missing) != NULL, "missing msg: %s", steno_errmsg());
    st = ct2_open(g_tmp, &m);
    CHECK(st == STENO_E_IO && m == NULL, "directory: %d", st);
    CHECK(strstr(steno_errmsg(), g_tmp) != NULL, "dir msg: %s", steno_errmsg());
    CHECK(expect_bad("empty", p, "", 0) == STENO_E_FORMAT, "empty");
    CHECK(strstr(steno_errmsg(), "empty") != NULL, "empty msg: %s", steno_errmsg());
    CHECK(ct2_open(NULL, &m) == STENO_E_INVALID_ARG, "NULL path");

    /* truncated at every length in the header region, then every 61st byte, and the last few */
    int n_ok = 0;
    for (size_t cut = 1; cut < b.n; cut = cut < 512 || cut + 8 >= b.n ? cut + 1 : cut + 61) {
        write_bytes(p, b.p, cut);
        m = NULL;
        st = ct2_open(p, &m);
        if (st == STENO_OK) {
            n_ok++;
            ct2_close(m);
        } else if (!strstr(steno_errmsg(), p)) {
            n_ok += 1000;
        }
    }
    CHECK(n_ok == 0, "truncations accepted or unnamed: %d", n_ok);

    /* targeted corruption */
    struct {
        const char *what;
        size_t off;
        int width; /* 1, 2 or 4 */
        uint32_t value;
    } cases[] = {
        {"version 0", 0, 4, 0},
        {"version 7", 0, 4, 7},
        {"version huge", 0, 4, 0xffffffffu},
        {"spec name length huge", 4, 2, 0xffff},
        {"spec name length 0", 4, 2, 0},
        {"n_variables huge", L.n_vars_off, 4, 0xffffffffu},
        {"n_variables 100000", L.n_vars_off, 4, 100000},
        {"n_variables +1", L.n_vars_off, 4, 7},
        {"n_variables -1", L.n_vars_off, 4, 5},
        {"rank 9", L.rank_off, 1, 9},
        {"rank 255", L.rank_off, 1, 255},
        {"rank 1", L.rank_off, 1, 1},
        {"rank 3", L.rank_off, 1, 3},
        {"dim0 +1", L.dim0_off, 4, SYN_W_ROWS + 1},
        {"dim0 huge", L.dim0_off, 4, 0xffffffffu},
        {"dim0 0", L.dim0_off, 4, 0},
        {"dtype 6", L.dtype_off, 1, 6},
        {"dtype 255", L.dtype_off, 1, 255},
        {"dtype f32 (n_bytes mismatch)", L.dtype_off, 1, CT2_F32},
        {"dtype int8 (n_bytes mismatch)", L.dtype_off, 1, CT2_I8},
        {"n_bytes huge", L.nbytes_off, 4, 0xffffffffu},
        {"n_bytes -2", L.nbytes_off, 4, SYN_W_ROWS * SYN_W_COLS * 2 - 2},
        {"n_bytes 0", L.nbytes_off, 4, 0},
        {"name length huge", L.name_len_off, 2, 0xffff},
        {"name length 0", L.name_len_off, 2, 0},
        {"name length -1 (no NUL)", L.name_len_off, 2, 8},
        {"n_aliases huge", L.n_alias_off, 4, 0xffffffffu},
        {"n_aliases 2", L.n_alias_off, 4, 2},
        {"n_aliases 0 (trailing bytes)", L.n_alias_off, 4, 0},
        {"alias target dangling", L.alias_tgt_off + 2, 1, 'x'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf c = make_synth(&L);
        size_t o = cases[i].off;
        if (cases[i].width == 4) set_u32(&c, o, cases[i].value);
        else if (cases[i].width == 2) {
            c.p[o] = (uint8_t)cases[i].value;
            c.p[o + 1] = (uint8_t)(cases[i].value >> 8);
        } else c.p[o] = (uint8_t)cases[i].value;
        st = expect_bad(cases[i].what, p, c.p, c.n);
        CHECK(st == STENO_E_FORMAT, "%s: status %d", cases[i].what, st);
        free(c.p);
    }
    /* trailing garbage, and an embedded NUL in a name, and a duplicate name */
    {
        buf c = make_synth(&L);
        put_u8(&c, 0);
        CHECK(expect_bad("trailing byte", p, c.p, c.n) == STENO_E_FORMAT, "trailing");
        c.n--;
        c.p[L.name_len_off + 2 + 1] = '\0';
        CHECK(expect_bad("embedded NUL", p, c.p, c.n) == STENO_E_FORMAT, "NUL in name");
        free(c.p);
        c = make_synth(&L);
        uint8_t *cc = memmem(c.p, c.n, "c/count", 8); /* same length as "b/layer" */
        CHECK(cc != NULL, "c/count in synthetic file");
        if (cc) memcpy(cc, "b/layer", 8);
        CHECK(expect_bad("duplicate", p, c.p, c.n) == STENO_E_FORMAT, "dup");
        CHECK(strstr(steno_errmsg(), "duplicate") != NULL, "dup msg '%s'", steno_errmsg());
        free(c.p);
    }
    free(b.p);
    unlink(p);
}

/* xorshift64* */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return rng_xorshift64star(&g_rng); }

static void test_fuzz(int iters) {
    synth_layout L;
    buf base = make_synth(&L);
    uint8_t *work = malloc(base.n + 64);
    char p[512];
    snprintf(p, sizeof p, "%s/fuzz.bin", g_tmp);
    float *scratch = malloc((size_t)(SYN_W_ROWS * SYN_W_COLS + 64) * sizeof *scratch);
    const uint32_t interesting[] = {0, 1, 2, 7, 8, 9, 255, 256, 0x7fff, 0xffff, 0x10000,
                                    0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    /* the header region: everything up to the start of w's data */
    size_t header_end = L.nbytes_off + 4;
    int n_open = 0;
    for (int it = 0; it < iters; it++) {
        size_t n = base.n;
        memcpy(work, base.p, n);
        int kind = (int)(rnd() % 4);
        int n_mut = 1 + (int)(rnd() % 6);
        for (int k = 0; k < n_mut; k++) {
            /* 3/4 of mutations in the header region or the alias table */
            size_t off;
            uint64_t r = rnd();
            if (r % 4 == 0) off = (size_t)(rnd() % n);
            else if (r % 4 == 1) off = L.n_alias_off + (size_t)(rnd() % (n - L.n_alias_off));
            else off = (size_t)(rnd() % header_end);
            if (kind == 0) work[off] ^= (uint8_t)(1u << (rnd() % 8));
            else if (kind == 1) work[off] = (uint8_t)rnd();
            else if (kind == 2 && off + 4 <= n) {
                uint32_t v = interesting[rnd() % (sizeof interesting / sizeof *interesting)];
                memcpy(work + off, &v, 4);
            } else work[off] = (uint8_t)(rnd() % 3); /* small values: ranks, dtypes, lengths */
        }
        if (rnd() % 4 == 0) n = (size_t)(rnd() % (n + 1)); /* truncate */
        write_bytes(p, work, n);
        ct2_model *m = NULL;
        steno_status st = ct2_open(p, &m);
        if (st == STENO_OK) {
            n_open++;
            /* touch everything the API exposes */
            volatile float sink = 0;
            for (int i = 0; i < ct2_n_vars(m); i++) {
                const ct2_var *v = ct2_var_at(m, i);
                if (v->n_elems <= SYN_W_ROWS * SYN_W_COLS + 64) {
                    ct2_to_f32(v, scratch);
                    for (int64_t j = 0; j < v->n_elems; j++) sink += scratch[j];
                }
                const ct2_var *f = ct2_find(m, v->name);
                if (!f) g_failures++, fprintf(stderr, "FAIL fuzz: find(%s) after open\n", v->name);
                int ok;
                (void)ct2_scalar_int(m, v->name, &ok);
            }
            (void)ct2_find(m, "proj/weight");
            (void)sink;
            ct2_close(m);
        } else if (st != STENO_E_FORMAT || !strstr(steno_errmsg(), p)) {
            g_failures++;
            fprintf(stderr, "FAIL fuzz iter %d: status %d msg '%s'\n", it, st, steno_errmsg());
        }
    }
    printf("fuzz: %d iterations, %d mutated files still valid\n", iters, n_open);
    free(scratch);
    free(work);
    free(base.p);
    unlink(p);
}

/* ------------------------------------------------------------------------------------------- */

static steno_status load_cfg_text(const char *text, whisper_config *c, char *path, size_t cap) {
    snprintf(path, cap, "%s/config.json", g_tmp);
    write_bytes(path, text, strlen(text));
    return whisper_config_load(path, c);
}

static void test_config(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", g_model_dir);
    whisper_config c;
    steno_status st = whisper_config_load(path, &c);
    CHECK(st == STENO_OK, "real config: %s", steno_errmsg());
    if (st == STENO_OK) {
        CHECK(c.n_alignment_heads == 8 && c.alignment_heads[0][0] == 1 &&
                  c.alignment_heads[0][1] == 0 && c.alignment_heads[7][0] == 3 &&
                  c.alignment_heads[7][1] == 4,
              "alignment heads");
        CHECK(c.n_lang_ids == 98 && c.lang_ids[0] == 50259 && c.lang_ids[97] == 50356, "lang ids");
        CHECK(c.n_suppress_ids == 90 && c.suppress_ids[0] == 1 && c.suppress_ids[1] == 2,
              "suppress ids (%d)", c.n_suppress_ids);
        CHECK(c.n_suppress_ids_begin == 2 && c.suppress_ids_begin[0] == 220 &&
                  c.suppress_ids_begin[1] == 50256,
              "suppress begin");
        whisper_config_free(&c);
        CHECK(c.alignment_heads == NULL && c.n_lang_ids == 0, "free resets");
        whisper_config_free(&c); /* twice is harmless */
    }

    char p[512];
    st = load_cfg_text("{\n  \"lang_ids\": [1, 2,\n  3\n  oops\n]}", &c, p, sizeof p);
    CHECK(st == STENO_E_FORMAT, "not JSON: %d", st);
    CHECK(strstr(steno_errmsg(), p) && strstr(steno_errmsg(), "not JSON") &&
              strstr(steno_errmsg(), "line 4"),
          "not-JSON msg: '%s'", steno_errmsg());
    st = load_cfg_text("", &c, p, sizeof p);
    CHECK(st == STENO_E_FORMAT && strstr(steno_errmsg(), p), "empty: %d '%s'", st, steno_errmsg());
    st = load_cfg_text("[1, 2]", &c, p, sizeof p);
    CHECK(st == STENO_E_FORMAT && strstr(steno_errmsg(), p), "list: %d '%s'", st, steno_errmsg());

    const char *bad[] = {
        "{\"alignment_heads\": [[1, 2, 3]]}",
        "{\"alignment_heads\": [1, 2]}",
        "{\"alignment_heads\": \"x\"}",
        "{\"alignment_heads\": [[1, \"a\"]]}",
        "{\"alignment_heads\": [[1.5, 2]]}",
        "{\"alignment_heads\": [[-1, 2]]}",
        "{\"suppress_ids\": [\"a\"]}",
        "{\"suppress_ids\": [1.5]}",
        "{\"suppress_ids\": [1e300]}",
        "{\"suppress_ids\": 5}",
        "{\"suppress_ids_begin\": {\"a\": 1}}",
        "{\"lang_ids\": [null]}",
        "{\"lang_ids\": true}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&c, 0x5a, sizeof c);
        st = load_cfg_text(bad[i], &c, p, sizeof p);
        CHECK(st == STENO_E_FORMAT, "%s: %d", bad[i], st);
        CHECK(strstr(steno_errmsg(), p) != NULL, "%s: msg '%s'", bad[i], steno_errmsg());
        CHECK(c.alignment_heads == NULL && c.suppress_ids == NULL && c.lang_ids == NULL &&
                  c.suppress_ids_begin == NULL,
              "%s: arrays not cleared", bad[i]);
    }
    CHECK(strstr(steno_errmsg(), "lang_ids") != NULL, "names the key: '%s'", steno_errmsg());

    st = load_cfg_text("{\"other\": 1, \"lang_ids\": []}", &c, p, sizeof p);
    CHECK(st == STENO_OK && c.n_alignment_heads == 0 && c.n_suppress_ids == 0 && c.n_lang_ids == 0 &&
              c.alignment_heads == NULL,
          "missing keys: %d", st);
    whisper_config_free(&c);

    snprintf(p, sizeof p, "%s/nope/config.json", g_tmp);
    st = whisper_config_load(p, &c);
    CHECK(st == STENO_E_IO && strstr(steno_errmsg(), p), "missing config: %d '%s'", st,
          steno_errmsg());
    st = whisper_config_load(g_tmp, &c);
    CHECK(st == STENO_E_IO, "dir config: %d '%s'", st, steno_errmsg());
    snprintf(p, sizeof p, "%s/config.json", g_tmp);
    unlink(p);
}

int main(int argc, char **argv) {
    g_model_dir = test_model_dir();
    /* thousands of small files are written: prefer RAM-backed /dev/shm unless TMPDIR is set */
    const char *td = getenv("TMPDIR");
    if (!td || !*td) td = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_tmp, sizeof g_tmp, "%s/steno_ct2_XXXXXX", td);
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    int iters = argc > 1 ? atoi(argv[1]) : 4000;

    test_real_model();
    test_synthetic();
    test_fuzz(iters);
    test_config();

    rmdir(g_tmp);
    if (g_failures) {
        fprintf(stderr, "%d check(s) failed\n", g_failures);
        return 1;
    }
    printf("test_ct2: all checks passed\n");
    return 0;
}
