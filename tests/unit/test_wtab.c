/* test_wtab.c — the weight table's typed views (formats/wtab/wtab.h):
 *   - ggml block types q4_0, q4_1, q5_0, q5_1, q8_0: random blocks dequantized by wt_to_f32 equal
 *     an independent reading of whisper.cpp's block layouts (ggml-common.h block_q4_0 ...: a
 *     float16 scale d, for _1 types a float16 min m, for q5 types 32 high bits qh, then the
 *     nibbles/bytes; weight j < 16 from the low nibble of qs[j], j >= 16 from the high nibble of
 *     qs[j - 16]; q5 high bit j from qh bit j), element by element and at block-aligned offsets;
 *   - CTranslate2 int8 views: q / scale per row;
 *   - wtab_add refuses a view larger than its data, a block type whose rows are not whole blocks,
 *     a duplicate name, and a non-positive dimension, each with a message naming the tensor;
 *   - wt_to_f16 copies float16 bit-exactly and rounds float32 to nearest even. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fp16.h"
#include "formats/wtab/wtab.h"
#include "test_util.h"
#include "rng.h"

static uint32_t g_rng = 12345;
static uint8_t rnd8(void) { return (uint8_t)(rng_lcg_nr(&g_rng) >> 24); }

/* A float16 scale in [2^-8, 2^-6), positive. */
static void put_scale(uint8_t *p) {
    const uint16_t h = (uint16_t)((7u << 10) | (rnd8() << 2) | (rnd8() & 3));
    memcpy(p, &h, 2);
}

static float ref_weight(wt_dtype d, const uint8_t *b, int j) {
    uint16_t hd, hm = 0;
    memcpy(&hd, b, 2);
    const float s = steno_fp16_to_f32(hd);
    const int lo = j < 16;
    const int idx = lo ? j : j - 16;
    switch (d) {
    case WT_Q4_0: {
        const int q = lo ? (b[2 + idx] & 15) : (b[2 + idx] >> 4);
        return (float)(q - 8) * s;
    }
    case WT_Q4_1: {
        memcpy(&hm, b + 2, 2);
        const int q = lo ? (b[4 + idx] & 15) : (b[4 + idx] >> 4);
        return (float)q * s + steno_fp16_to_f32(hm);
    }
    case WT_Q5_0: {
        uint32_t qh;
        memcpy(&qh, b + 2, 4);
        const int q = (lo ? (b[6 + idx] & 15) : (b[6 + idx] >> 4)) | (int)(((qh >> j) & 1) << 4);
        return (float)(q - 16) * s;
    }
    case WT_Q5_1: {
        memcpy(&hm, b + 2, 2);
        uint32_t qh;
        memcpy(&qh, b + 4, 4);
        const int q = (lo ? (b[8 + idx] & 15) : (b[8 + idx] >> 4)) | (int)(((qh >> j) & 1) << 4);
        return (float)q * s + steno_fp16_to_f32(hm);
    }
    case WT_Q8_0:
        return (float)(int8_t)b[2 + j] * s;
    default:
        return NAN;
    }
}

static void test_blocks(void) {
    const wt_dtype types[] = {WT_Q4_0, WT_Q4_1, WT_Q5_0, WT_Q5_1, WT_Q8_0};
    const size_t bytes[] = {18, 20, 22, 24, 34};
    for (size_t k = 0; k < 5; k++) {
        wtab *w = wtab_new("ggml", "test");
        const int rows = 3, cols = 64; /* 2 blocks a row */
        const size_t nb = (size_t)rows * (cols / 32) * bytes[k];
        uint8_t *buf = malloc(nb);
        for (size_t i = 0; i < nb; i++) buf[i] = rnd8();
        for (size_t blk = 0; blk < nb / bytes[k]; blk++) {
            put_scale(buf + blk * bytes[k]);
            if (types[k] == WT_Q4_1 || types[k] == WT_Q5_1) put_scale(buf + blk * bytes[k] + 2);
        }
        const int64_t dims[2] = {rows, cols};
        CHECK(wt_dtype_bytes(types[k], rows * cols) == nb, "%s: %zu bytes", wt_dtype_name(types[k]), nb);
        CHECK(wtab_add(w, "m", types[k], 2, dims, buf, nb) == STENO_OK, "%s: add: %s", wt_dtype_name(types[k]),
              steno_errmsg());
        CHECK(wtab_add(w, "short", types[k], 2, dims, buf, nb - 1) != STENO_OK &&
                  strstr(steno_errmsg(), "short"),
              "%s: a view past its data was accepted", wt_dtype_name(types[k]));
        const int64_t bad[2] = {2, 48};
        CHECK(wtab_add(w, "rows48", types[k], 2, bad, buf, nb) != STENO_OK && strstr(steno_errmsg(), "blocks of 32"),
              "%s: rows of 48 accepted", wt_dtype_name(types[k]));
        const wt_tensor *t = wtab_find(w, "m");
        float all[192], part[64];
        if (t) {
            wt_to_f32(t, 0, rows * cols, all);
            wt_to_f32(t, 64, 64, part); /* row 1 alone */
        }
        int bad_n = 0;
        for (int i = 0; t && i < rows * cols; i++) {
            const float r = ref_weight(types[k], buf + (size_t)(i / 32) * bytes[k], i % 32);
            if (memcmp(&r, &all[i], 4) != 0) bad_n++;
            if (i >= 64 && i < 128 && memcmp(&r, &part[i - 64], 4) != 0) bad_n++;
        }
        CHECK(t && bad_n == 0, "%s: %d weights differ from the reference layout", wt_dtype_name(types[k]), bad_n);
        wtab_free(w);
        free(buf);
    }
}

static void test_int8_and_f16(void) {
    wtab *w = wtab_new("ct2", "test");
    int8_t q[6] = {127, -127, 0, 64, -1, 3};
    float scale[2] = {127.0f / 0.5f, 127.0f / 2.0f};
    const int64_t dims[2] = {2, 3};
    CHECK(wtab_add(w, "i8", WT_I8, 2, dims, q, sizeof q) == STENO_OK, "int8 add");
    wt_tensor *t = (wt_tensor *)wtab_find(w, "i8");
    float out[6];
    if (t) {
        t->scale = scale;
        t->scale_dtype = WT_F32;
        wt_to_f32(t, 0, 6, out);
        for (int i = 0; i < 6; i++)
            CHECK(out[i] == (float)q[i] / scale[i / 3], "int8[%d] = %g, want %g", i, out[i], (float)q[i] / scale[i / 3]);
    }
    const float f[4] = {1.0f, 1.0f + 1.0f / 2048.0f, 65504.0f, -0.0f}; /* a tie rounds to even: 1.0 */
    const int64_t d1[1] = {4};
    CHECK(wtab_add(w, "f32", WT_F32, 1, d1, f, sizeof f) == STENO_OK, "f32 add");
    CHECK(wtab_add(w, "f32", WT_F32, 1, d1, f, sizeof f) != STENO_OK && strstr(steno_errmsg(), "twice"),
          "duplicate accepted");
    const int64_t d0[1] = {0};
    CHECK(wtab_add(w, "zero", WT_F32, 1, d0, f, sizeof f) != STENO_OK, "zero dimension accepted");
    uint16_t h[4];
    const wt_tensor *tf = wtab_find(w, "f32");
    if (tf) wt_to_f16(tf, 0, 4, h);
    CHECK(tf && h[0] == 0x3c00 && h[1] == 0x3c00 && h[2] == 0x7bff && h[3] == 0x8000, "f32 -> f16: %04x %04x %04x %04x",
          h[0], h[1], h[2], h[3]);
    wtab_free(w);
}

int main(void) {
    test_blocks();
    test_int8_and_f16();
    printf("test_wtab: %d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
