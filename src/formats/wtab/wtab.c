/* wtab.c — the Whisper weight table (wtab.h). */
#include "formats/wtab/wtab.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/file.h"
#include "core/fp16.h"
#include "formats/ct2.h"

static const struct { const char *name; int block; size_t bytes; } k_types[WT_N_DTYPES] = {
    [WT_F32] = {"f32", 1, 4},    [WT_F16] = {"f16", 1, 2},     [WT_BF16] = {"bf16", 1, 2},
    [WT_I8] = {"int8", 1, 1},    [WT_Q4_0] = {"q4_0", 32, 18}, [WT_Q4_1] = {"q4_1", 32, 20},
    [WT_Q5_0] = {"q5_0", 32, 22}, [WT_Q5_1] = {"q5_1", 32, 24}, [WT_Q8_0] = {"q8_0", 32, 34},
};

size_t wt_dtype_bytes(wt_dtype d, int64_t n) {
    if ((unsigned)d >= WT_N_DTYPES || n < 0) return 0;
    return (size_t)(n / k_types[d].block) * k_types[d].bytes;
}
const char *wt_dtype_name(wt_dtype d) { return (unsigned)d < WT_N_DTYPES ? k_types[d].name : "?"; }
int wt_dtype_is_block(wt_dtype d) { return (unsigned)d < WT_N_DTYPES && k_types[d].block > 1; }

wtab *wtab_new(const char *format, const char *path) {
    wtab *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->format = format;
    if (!(w->path = strdup(path ? path : ""))) {
        free(w);
        return NULL;
    }
    return w;
}

void wtab_free(wtab *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->t[i].name);
    free(w->t);
    for (int i = w->n_res - 1; i >= 0; i--) {
        if (w->res[i].kind == 1) munmap(w->res[i].p, w->res[i].len);
        else if (w->res[i].kind == 2) ct2_close(w->res[i].p);
        else free(w->res[i].p);
    }
    free(w->res);
    free(w->tok);
    free(w->tok_len);
    free(w->path);
    free(w);
}

static int push_res(wtab *w, void *p, size_t len, int kind) {
    if (w->n_res == w->cap_res) {
        int cap = w->cap_res ? 2 * w->cap_res : 8;
        void *q = realloc(w->res, (size_t)cap * sizeof *w->res);
        if (!q) return -1;
        w->res = q;
        w->cap_res = cap;
    }
    w->res[w->n_res].p = p;
    w->res[w->n_res].len = len;
    w->res[w->n_res].kind = kind;
    w->n_res++;
    return 0;
}

int wtab_own(wtab *w, void *p, int kind) {
    if (push_res(w, p, 0, kind) == 0) return 0;
    if (kind == 2) ct2_close(p);
    else free(p);
    return -1;
}

steno_status wtab_map_file(wtab *w, const char *path, const uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    static const steno_map_words words = {
        .open = "cannot open: ", .not_regular = "not a regular file", .empty = "empty file"};
    steno_mapped_file mf;
    steno_status s = steno_map_file(path, &words, &mf);
    if (s != STENO_OK) return s;
    void *p = (void *)mf.data;
    if (push_res(w, p, mf.size, 1) != 0) {
        steno_unmap_file(&mf);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    *data = p;
    *len = mf.size;
    return STENO_OK;
}

const wt_tensor *wtab_find(const wtab *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0) return &w->t[i];
    return NULL;
}

steno_status wtab_add(wtab *w, const char *name, wt_dtype dtype, int rank, const int64_t *dims,
                      const void *data, size_t avail) {
    if ((unsigned)dtype >= WT_N_DTYPES || rank < 1 || rank > 4)
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s: unsupported type or rank", w->path, name);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0 || dims[i] > ((int64_t)1 << 40) / n)
            return steno_fail(STENO_E_FORMAT, "%s: tensor %s: bad shape", w->path, name);
        n *= dims[i];
    }
    if (wt_dtype_is_block(dtype) && dims[rank - 1] % 32 != 0)
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s: %s rows of %lld are not whole blocks of 32", w->path, name,
                          wt_dtype_name(dtype), (long long)dims[rank - 1]);
    const size_t nb = wt_dtype_bytes(dtype, n);
    if (nb > avail || !data)
        return steno_fail(STENO_E_FORMAT, "%s: tensor %s: %zu bytes of data needed, %zu in the file", w->path, name,
                          nb, avail);
    if (wtab_find(w, name)) return steno_fail(STENO_E_FORMAT, "%s: tensor %s appears twice", w->path, name);
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 256;
        void *q = realloc(w->t, (size_t)cap * sizeof *w->t);
        if (!q) return steno_fail(STENO_E_NOMEM, "%s: out of memory", w->path);
        w->t = q;
        w->cap = cap;
    }
    wt_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return steno_fail(STENO_E_NOMEM, "%s: out of memory", w->path);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    t->n_elems = n;
    t->n_bytes = nb;
    t->data = data;
    w->n++;
    return STENO_OK;
}

static float h2f(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return steno_fp16_to_f32(h);
}

/* One block of 32 weights of a ggml quantized type (whisper.cpp ggml/src/ggml-quants.c:
 * dequantize_row_q4_0 ... dequantize_row_q8_0). */
static void dequant_block(wt_dtype d, const uint8_t *b, float *y) {
    switch (d) {
    case WT_Q4_0: {
        const float s = h2f(b);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((b[2 + j] & 0x0F) - 8) * s;
            y[j + 16] = (float)((b[2 + j] >> 4) - 8) * s;
        }
        break;
    }
    case WT_Q4_1: {
        const float s = h2f(b), m = h2f(b + 2);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(b[4 + j] & 0x0F) * s + m;
            y[j + 16] = (float)(b[4 + j] >> 4) * s + m;
        }
        break;
    }
    case WT_Q5_0: {
        const float s = h2f(b);
        uint32_t qh;
        memcpy(&qh, b + 2, 4);
        for (int j = 0; j < 16; j++) {
            const int xh0 = (int)(((qh >> j) << 4) & 0x10), xh1 = (int)((qh >> (j + 12)) & 0x10);
            y[j] = (float)(((b[6 + j] & 0x0F) | xh0) - 16) * s;
            y[j + 16] = (float)(((b[6 + j] >> 4) | xh1) - 16) * s;
        }
        break;
    }
    case WT_Q5_1: {
        const float s = h2f(b), m = h2f(b + 2);
        uint32_t qh;
        memcpy(&qh, b + 4, 4);
        for (int j = 0; j < 16; j++) {
            const int xh0 = (int)(((qh >> j) << 4) & 0x10), xh1 = (int)((qh >> (j + 12)) & 0x10);
            y[j] = (float)((b[8 + j] & 0x0F) | xh0) * s + m;
            y[j + 16] = (float)((b[8 + j] >> 4) | xh1) * s + m;
        }
        break;
    }
    case WT_Q8_0: {
        const float s = h2f(b);
        for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * s;
        break;
    }
    default:
        break;
    }
}

void wt_to_f32(const wt_tensor *t, int64_t off, int64_t n, float *dst) {
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case WT_F32:
        memcpy(dst, p + off * 4, (size_t)n * 4);
        return;
    case WT_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = h2f(p + (off + i) * 2);
        return;
    case WT_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + (off + i) * 2, 2);
            dst[i] = steno_bf16_to_f32(h);
        }
        return;
    case WT_I8: {
        const int64_t row = t->n_elems / t->dims[0];
        for (int64_t i = 0; i < n; i++) {
            const int64_t r = (off + i) / row;
            float s = 1.0f;
            if (t->scale) {
                if (t->scale_dtype == WT_F16) s = h2f((const uint8_t *)t->scale + r * 2);
                else memcpy(&s, (const uint8_t *)t->scale + r * 4, 4);
            }
            dst[i] = (float)(int8_t)p[off + i] / s;
        }
        return;
    }
    default: { /* block types: off and n are whole blocks */
        const size_t bb = wt_dtype_bytes(t->dtype, 32);
        for (int64_t i = 0; i < n; i += 32) dequant_block(t->dtype, p + (size_t)((off + i) / 32) * bb, dst + i);
        return;
    }
    }
}

uint16_t wt_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) {
        if (absx < 0x33000000u) return (uint16_t)sign;
        const uint32_t e = absx >> 23;
        const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((absx >> 13) - ((127u - 15u) << 10));
    const uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

void wt_to_f16(const wt_tensor *t, int64_t off, int64_t n, uint16_t *dst) {
    if (t->dtype == WT_F16) {
        memcpy(dst, (const uint8_t *)t->data + off * 2, (size_t)n * 2);
        return;
    }
    float buf[1024]; /* 1024 is a whole number of blocks: block offsets stay aligned */
    for (int64_t i = 0; i < n; i += 1024) {
        const int64_t k = n - i < 1024 ? n - i : 1024;
        wt_to_f32(t, off + i, k, buf);
        for (int64_t j = 0; j < k; j++) dst[i + j] = wt_f32_to_f16(buf[j]);
    }
}
