/* matmul_x8.c — x8 repacking, the scalar reference kernels and steno_matmul_x (matmul_x8.h). */
#include "kernels/gemm/matmul_x8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/blocks.h"

static size_t block_bytes(int type) {
    switch (type) {
    case STENO_T_Q4_0: return 128 + 16;
    case STENO_T_Q5_0: return 128 + 32 + 16;
    case STENO_T_Q4_1: return 128 + 32;
    case STENO_T_Q8_0: return 256 + 16;
    case STENO_T_Q4_K: return XM_Q4K_SUPER / 8; /* per 32-element sub-block: 148 */
    case STENO_T_Q6_K: return XM_Q6K_SUPER / 8; /* 210 */
    default: return 0;
    }
}

static int is_k(int type) { return type == STENO_T_Q4_K || type == STENO_T_Q6_K; }

int steno_xmat_supported(const steno_mat *W) {
    return W && W->data && block_bytes(W->type) && W->n_in % (is_k(W->type) ? 256 : 32) == 0 && W->n_in > 0 &&
           W->n_out > 0;
}

int steno_xmat_act_type(int type) {
    return type == STENO_T_Q4_1 || type == STENO_T_Q4_K ? STENO_T_Q8_1 : STENO_T_Q8_0;
}

/* the 6-bit scale and min of sub-block j (0..7) of a q4_K super-block (ggml's get_scale_min_k4) */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

/* element e (0..31) of sub-block j (0..7) of a q4_K super-block as its unsigned nibble: sub-blocks
 * 2i and 2i + 1 share qs[32i..32i+31], low and high nibbles */
static inline uint8_t nib_k(const block_q4_K *x, int j, int e) {
    const uint8_t v = x->qs[32 * (j / 2) + e];
    return j % 2 ? v >> 4 : v & 15;
}

/* q4_K: per super-block group, the header (8 d, then 8 dmin, fp16), then per sub-block the nibbles
 * as q4_1's and the 8 rows' 6-bit scales and mins as bytes */
static void pack_q4_K(const steno_mat *W, uint8_t *d) {
    const int64_t ns = W->n_in / 256, ng = (W->n_out + 7) / 8;
    for (int64_t g = 0; g < ng; g++)
        for (int64_t s = 0; s < ns; s++) {
            uint8_t *base = d + ((size_t)g * ns + s) * XM_Q4K_SUPER;
            for (int r = 0; r < 8 && g * 8 + r < W->n_out; r++) {
                const block_q4_K *x = (const block_q4_K *)((const uint8_t *)W->data + (size_t)(g * 8 + r) * W->row_bytes) + s;
                memcpy(base + 2 * r, &x->d, 2);
                memcpy(base + 16 + 2 * r, &x->dmin, 2);
                for (int j = 0; j < 8; j++) {
                    uint8_t *o = base + 32 + 144 * j;
                    scale_min_k4(j, x->scales, o + 128 + r, o + 136 + r);
                    for (int i = 0; i < 4; i++)
                        for (int e = 0; e < 4; e++)
                            o[32 * i + 4 * r + e] = (uint8_t)(nib_k(x, j, 4 * i + e) | nib_k(x, j, 4 * (i + 4) + e) << 4);
                }
            }
        }
}

void steno_xmat_free(steno_xmat *x) {
    if (x->owned) free(x->data);
    memset(x, 0, sizeof *x);
}

/* element j (0..31) of a q4_0/q4_1 block as its unsigned nibble */
static inline uint8_t nib(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

/* the unsigned 6-bit code (w + 32) of element i (0..255) of a q6_K super-block (ggml's layout:
 * per 128 elements, 64 bytes of nibbles and 32 of 2-bit pairs, quarters of 32 elements) */
static inline int code6(const block_q6_K *x, int i) {
    const int n = i / 128, q = (i % 128) / 32, l = i % 32;
    const uint8_t lo = x->ql[64 * n + l + 32 * (q & 1)], hi = x->qh[32 * n + l];
    return (q < 2 ? lo & 15 : lo >> 4) | ((hi >> (2 * q)) & 3) << 4;
}

/* q6_K: per super-block group the 8 rows' fp16 d, then per 32-element sub-block the low nibbles as
 * q4_0's (128 bytes), the high bit pairs (64 bytes: byte 4r + e of the first 32 holds chunk k's
 * pair of row r, element e at bits 2k..2k+1 for k < 4, of the second for k >= 4), then the int8
 * scales of the two 16-element halves (8 rows of the first half, 8 of the second) */
static void pack_q6_K(const steno_mat *W, uint8_t *d) {
    const int64_t ns = W->n_in / 256, ng = (W->n_out + 7) / 8;
    for (int64_t g = 0; g < ng; g++)
        for (int64_t s = 0; s < ns; s++) {
            uint8_t *base = d + ((size_t)g * ns + s) * XM_Q6K_SUPER;
            for (int r = 0; r < 8 && g * 8 + r < W->n_out; r++) {
                const block_q6_K *x = (const block_q6_K *)((const uint8_t *)W->data + (size_t)(g * 8 + r) * W->row_bytes) + s;
                memcpy(base + 2 * r, &x->d, 2);
                for (int j = 0; j < 8; j++) {
                    uint8_t *o = base + 16 + 208 * j;
                    for (int k = 0; k < 8; k++)
                        for (int e = 0; e < 4; e++) {
                            const int u = code6(x, 32 * j + 4 * k + e);
                            o[32 * (k & 3) + 4 * r + e] |= (uint8_t)((u & 15) << (k < 4 ? 0 : 4));
                            o[128 + 32 * (k / 4) + 4 * r + e] |= (uint8_t)((u >> 4) << (2 * (k & 3)));
                        }
                    o[192 + r] = (uint8_t)x->scales[2 * j];
                    o[200 + r] = (uint8_t)x->scales[2 * j + 1];
                }
            }
        }
}

size_t steno_xmat_bytes(const steno_mat *W) {
    if (!steno_xmat_supported(W)) return 0;
    return (size_t)((W->n_out + 7) / 8) * (size_t)(W->n_in / 32) * block_bytes(W->type);
}

int steno_xmat_pack(const steno_mat *W, steno_xmat *out) {
    memset(out, 0, sizeof *out);
    const size_t bytes = steno_xmat_bytes(W);
    if (!bytes) return -1;
    uint8_t *d = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!d) return -1;
    steno_xmat_pack_into(W, out, d);
    out->owned = 1;
    return 0;
}

int steno_xmat_pack_into(const steno_mat *W, steno_xmat *out, uint8_t *d) {
    memset(out, 0, sizeof *out);
    if (!steno_xmat_supported(W)) return -1;
    const int64_t nb = W->n_in / 32, ng = (W->n_out + 7) / 8;
    const size_t bb = block_bytes(W->type);
    const size_t bytes = (size_t)ng * (size_t)nb * bb;
    memset(d, 0, bytes); /* padding rows: zero codes, zero scales */
    if (W->type == STENO_T_Q4_K) pack_q4_K(W, d);
    else if (W->type == STENO_T_Q6_K) pack_q6_K(W, d);
    for (int64_t g = 0; !is_k(W->type) && g < ng; g++) /* the 32-element block types */
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = d + ((size_t)g * nb + b) * bb;
            for (int r = 0; r < 8 && g * 8 + r < W->n_out; r++) {
                const uint8_t *row = (const uint8_t *)W->data + (size_t)(g * 8 + r) * W->row_bytes;
                uint16_t h[2];
                if (W->type == STENO_T_Q8_0) {
                    const block_q8_0 *x = (const block_q8_0 *)row + b;
                    for (int k = 0; k < 8; k++) memcpy(o + 32 * k + 4 * r, x->qs + 4 * k, 4);
                    memcpy(o + 256 + 2 * r, &x->d, 2);
                } else {
                    const uint8_t *qs;
                    if (W->type == STENO_T_Q5_0) {
                        const block_q5_0 *x = (const block_q5_0 *)row + b;
                        qs = x->qs;
                        memcpy(h, &x->d, 2);
                        uint32_t qh;
                        memcpy(&qh, x->qh, 4);
                        /* the high bits: bit k of byte 4r + e is element 4k + e's */
                        for (int k = 0; k < 8; k++)
                            for (int e = 0; e < 4; e++) o[128 + 4 * r + e] |= (uint8_t)(((qh >> (4 * k + e)) & 1) << k);
                        memcpy(o + 160 + 2 * r, &h[0], 2);
                    } else if (W->type == STENO_T_Q4_0) {
                        const block_q4_0 *x = (const block_q4_0 *)row + b;
                        qs = x->qs;
                        memcpy(h, &x->d, 2);
                    } else {
                        const block_q4_1 *x = (const block_q4_1 *)row + b;
                        qs = x->qs;
                        memcpy(h, &x->d, 4);
                        memcpy(o + 144 + 2 * r, &h[1], 2);
                    }
                    if (W->type != STENO_T_Q5_0) memcpy(o + 128 + 2 * r, &h[0], 2);
                    /* 32-byte vector i (0..3): low nibbles = chunk i, high nibbles = chunk i + 4 */
                    for (int i = 0; i < 4; i++)
                        for (int e = 0; e < 4; e++)
                            o[32 * i + 4 * r + e] = (uint8_t)(nib(qs, 4 * i + e) | nib(qs, 4 * (i + 4) + e) << 4);
                }
            }
        }
    out->type = W->type;
    out->n_in = W->n_in;
    out->n_out = W->n_out;
    out->n_groups = ng;
    out->block_bytes = bb;
    out->data = d;
    return 0;
}

/* ---- the scalar reference (also the kernels of CPUs without VNNI) ---- */

/* the weight code of row r, element j of a block group (q8_0: signed; q4: the unsigned nibble) */
static inline int code(int type, const uint8_t *o, int r, int j) {
    const int k = j / 4, e = j % 4;
    if (type == STENO_T_Q8_0) return (int8_t)o[32 * k + 4 * r + e];
    const uint8_t v = o[32 * (k & 3) + 4 * r + e];
    const int u = k < 4 ? v & 15 : v >> 4;
    return type == STENO_T_Q5_0 ? u | ((o[128 + 4 * r + e] >> k) & 1) << 4 : u;
}

int steno_xmat_dequant_rows(const steno_xmat *x, int64_t r0, int64_t r1, float *out) {
    const int type = x->type;
    if (is_k(type)) return -1;
    const int64_t nb = x->n_in / 32;
    const int so = type == STENO_T_Q8_0 ? 256 : type == STENO_T_Q5_0 ? 160 : 128; /* the scales' offset */
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *g = x->data + (size_t)(r / 8) * (size_t)nb * x->block_bytes;
        const int rr = (int)(r % 8);
        float *o = out + (size_t)(r - r0) * (size_t)x->n_in;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = g + (size_t)b * x->block_bytes;
            uint16_t hd, hm = 0;
            memcpy(&hd, blk + so + 2 * rr, 2);
            if (type == STENO_T_Q4_1) memcpy(&hm, blk + 144 + 2 * rr, 2);
            const float d = steno_fp16_to_f32(hd), m = steno_fp16_to_f32(hm);
            /* ggml-quants.c dequantize_row_*: the same expressions, so the same floats */
            for (int j = 0; j < 32; j++) {
                const int c = code(type, blk, rr, j);
                o[b * 32 + j] = type == STENO_T_Q4_1   ? (float)c * d + m
                                : type == STENO_T_Q4_0 ? (float)(c - 8) * d
                                : type == STENO_T_Q5_0 ? (float)(c - 16) * d
                                                       : (float)c * d;
            }
        }
    }
    return 0;
}

static void scalar_kernel(int type, int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc,
                          float *out) {
    const size_t bb = block_bytes(type);
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 8; r++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                const uint8_t *o = g + (size_t)b * bb;
                const int8_t *y = ya + ((size_t)b * nc + c) * 32;
                int32_t isum = 0;
                for (int j = 0; j < 32; j++) isum += code(type, o, r, j) * y[j];
                /* q4_0 / q5_0: the codes are w + 8 / w + 16, and ye holds −8·Σy / −16·Σy; q8_0's codes
                 * are signed already */
                if (type == STENO_T_Q4_0 || type == STENO_T_Q5_0) isum += ((const int32_t *)ye)[(size_t)b * nc + c];
                uint16_t hd;
                memcpy(&hd, o + (type == STENO_T_Q8_0 ? 256 : type == STENO_T_Q5_0 ? 160 : 128) + 2 * r, 2);
                const float d = steno_fp16_to_f32(hd) * yd[(size_t)b * nc + c];
                acc = fmaf(d, (float)isum, acc);
                if (type == STENO_T_Q4_1) {
                    uint16_t hm;
                    memcpy(&hm, o + 144 + 2 * r, 2);
                    acc = fmaf(steno_fp16_to_f32(hm), ((const float *)ye)[(size_t)b * nc + c], acc);
                }
            }
            out[c * 8 + r] = acc;
        }
}

static void scalar_q4_0(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc, float *o) {
    scalar_kernel(STENO_T_Q4_0, nb, g, ya, yd, ye, nc, o);
}
static void scalar_q4_1(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc, float *o) {
    scalar_kernel(STENO_T_Q4_1, nb, g, ya, yd, ye, nc, o);
}
static void scalar_q8_0(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc, float *o) {
    scalar_kernel(STENO_T_Q8_0, nb, g, ya, yd, ye, nc, o);
}
static void scalar_q5_0(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc, float *o) {
    scalar_kernel(STENO_T_Q5_0, nb, g, ya, yd, ye, nc, o);
}
/* q4_K: sub-block b is q4_1-like with the float scale d·sc and min dmin·m (both exact products) */
static void scalar_q4_K(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc,
                        float *out) {
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 8; r++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                const uint8_t *base = g + (size_t)(b / 8) * XM_Q4K_SUPER, *o = base + 32 + 144 * (b % 8);
                const int8_t *y = ya + ((size_t)b * nc + c) * 32;
                int32_t isum = 0;
                for (int j = 0; j < 32; j++) isum += code(STENO_T_Q4_1, o, r, j) * y[j];
                uint16_t hd, hm;
                memcpy(&hd, base + 2 * r, 2);
                memcpy(&hm, base + 16 + 2 * r, 2);
                const float dsc = steno_fp16_to_f32(hd) * (float)o[128 + r];
                const float msc = steno_fp16_to_f32(hm) * (float)o[136 + r];
                acc = fmaf(dsc * yd[(size_t)b * nc + c], (float)isum, acc);
                acc = fmaf(-msc, ((const float *)ye)[(size_t)b * nc + c], acc);
            }
            out[c * 8 + r] = acc;
        }
}
/* q6_K: per half h of a sub-block the exact isum_h = Σ (u − 32)·y (ye: −32·Σy of the half), then
 * one int32 sum sc_0·isum_0 + sc_1·isum_1 (|.| <= 2^24, so exact in float too: the SIMD kernels
 * sum it in float) and one fma with d·dy */
static void scalar_q6_K(int nb, const uint8_t *g, const int8_t *ya, const float *yd, const void *ye, int nc,
                        float *out) {
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 8; r++) {
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                const uint8_t *base = g + (size_t)(b / 8) * XM_Q6K_SUPER, *o = base + 16 + 208 * (b % 8);
                const size_t at = (size_t)b * nc + c;
                const int8_t *y = ya + at * 32;
                int32_t isum[2] = {((const int32_t *)ye)[2 * at], ((const int32_t *)ye)[2 * at + 1]};
                for (int j = 0; j < 32; j++) {
                    const int k = j / 4, e = j % 4;
                    const int u = (k < 4 ? o[32 * k + 4 * r + e] & 15 : o[32 * (k - 4) + 4 * r + e] >> 4) |
                                  ((o[128 + 32 * (k / 4) + 4 * r + e] >> (2 * (k & 3))) & 3) << 4;
                    isum[j / 16] += u * y[j];
                }
                const int32_t tot = (int8_t)o[192 + r] * isum[0] + (int8_t)o[200 + r] * isum[1];
                uint16_t hd;
                memcpy(&hd, base + 2 * r, 2);
                acc = fmaf(steno_fp16_to_f32(hd) * yd[at], (float)tot, acc);
            }
            out[c * 8 + r] = acc;
        }
}
static const steno_xmat_kernels k_scalar = {scalar_q4_0, scalar_q4_1, scalar_q8_0, scalar_q5_0, scalar_q4_K, scalar_q6_K,
                                            STENO_XMAT_MAX_COLS, {0}};

float steno_xmat_dot_ref(int type, int n, const void *w_row, const void *y_row) {
    float acc = 0.0f;
    if (type == STENO_T_Q4_K) {
        for (int b = 0; b < n / 32; b++) {
            const block_q4_K *x = (const block_q4_K *)w_row + b / 8;
            const block_q8_1 *yb = (const block_q8_1 *)y_row + b;
            uint8_t sc, m;
            scale_min_k4(b % 8, x->scales, &sc, &m);
            int32_t isum = 0;
            for (int j = 0; j < 32; j++) isum += nib_k(x, b % 8, j) * yb->qs[j];
            const float dsc = steno_fp16_to_f32(x->d) * (float)sc, msc = steno_fp16_to_f32(x->dmin) * (float)m;
            acc = fmaf(dsc * steno_fp16_to_f32(yb->d), (float)isum, acc);
            acc = fmaf(-msc, steno_fp16_to_f32(yb->s), acc);
        }
        return acc;
    }
    if (type == STENO_T_Q6_K) {
        for (int b = 0; b < n / 32; b++) {
            const block_q6_K *x = (const block_q6_K *)w_row + b / 8;
            const block_q8_0 *yb = (const block_q8_0 *)y_row + b;
            int32_t isum[2] = {0, 0};
            for (int j = 0; j < 32; j++) isum[j / 16] += (code6(x, 32 * (b % 8) + j) - 32) * yb->qs[j];
            const int32_t tot = x->scales[2 * (b % 8)] * isum[0] + x->scales[2 * (b % 8) + 1] * isum[1];
            acc = fmaf(steno_fp16_to_f32(x->d) * steno_fp16_to_f32(yb->d), (float)tot, acc);
        }
        return acc;
    }
    for (int b = 0; b < n / 32; b++) {
        int32_t isum = 0;
        float dy, dw, s = 0, m = 0;
        const int8_t *y;
        if (type == STENO_T_Q4_1) {
            const block_q8_1 *yb = (const block_q8_1 *)y_row + b;
            const block_q4_1 *x = (const block_q4_1 *)w_row + b;
            y = yb->qs;
            dy = steno_fp16_to_f32(yb->d);
            s = steno_fp16_to_f32(yb->s);
            dw = steno_fp16_to_f32(x->d);
            m = steno_fp16_to_f32(x->m);
            for (int j = 0; j < 32; j++) isum += nib(x->qs, j) * y[j];
        } else {
            const block_q8_0 *yb = (const block_q8_0 *)y_row + b;
            y = yb->qs;
            dy = steno_fp16_to_f32(yb->d);
            if (type == STENO_T_Q4_0) {
                const block_q4_0 *x = (const block_q4_0 *)w_row + b;
                dw = steno_fp16_to_f32(x->d);
                for (int j = 0; j < 32; j++) isum += (nib(x->qs, j) - 8) * y[j];
            } else if (type == STENO_T_Q5_0) {
                const block_q5_0 *x = (const block_q5_0 *)w_row + b;
                uint32_t qh;
                memcpy(&qh, x->qh, 4);
                dw = steno_fp16_to_f32(x->d);
                for (int j = 0; j < 32; j++) isum += ((nib(x->qs, j) | ((qh >> j) & 1) << 4) - 16) * y[j];
            } else {
                const block_q8_0 *x = (const block_q8_0 *)w_row + b;
                dw = steno_fp16_to_f32(x->d);
                for (int j = 0; j < 32; j++) isum += x->qs[j] * y[j];
            }
        }
        acc = fmaf(dw * dy, (float)isum, acc);
        if (type == STENO_T_Q4_1) acc = fmaf(m, s, acc);
    }
    return acc;
}

/* ---- dispatch ---- */

static int g_isa = -1; /* 0 scalar, 1 avxvnni, 2 avx512vnni, 3 avx2; benign race (same value) */

/* 0 scalar, 1 avxvnni, 2 avx512vnni, 3 avx2: the set called name when this CPU and build have it,
 * else -1 */
static int isa_by_name(const char *name) {
    if (strcmp(name, "scalar") == 0) return 0;
    if (strcmp(name, "avxvnni") == 0) return steno_cpu_has_avxvnni() && steno_xmat_kernels_avxvnni() ? 1 : -1;
    if (strcmp(name, "avx512vnni") == 0)
        return steno_cpu_has_avx512vnni() && steno_xmat_kernels_avx512vnni() ? 2 : -1;
    if (strcmp(name, "avx2") == 0) return steno_cpu_has_avx2_fma_f16c() && steno_xmat_kernels_avx2() ? 3 : -1;
    return -1;
}

static const steno_xmat_kernels *kernels(void) {
    if (g_isa < 0) {
        const char *want = getenv("STENO_XMAT_ISA");
        int isa = want && *want ? isa_by_name(want) : -1;
        static const char *const best[] = {"avx512vnni", "avxvnni", "avx2"};
        for (int k = 0; isa < 0 && k < 3; k++) isa = isa_by_name(best[k]);
        g_isa = isa < 0 ? 0 : isa;
    }
    return g_isa == 2   ? steno_xmat_kernels_avx512vnni()
           : g_isa == 1 ? steno_xmat_kernels_avxvnni()
           : g_isa == 3 ? steno_xmat_kernels_avx2()
                        : &k_scalar;
}

int steno_xmat_set_isa(const char *name) {
    const int isa = isa_by_name(name);
    if (isa < 0) return -1;
    g_isa = isa;
    return 0;
}

const char *steno_xmat_isa(void) {
    kernels();
    return g_isa == 2 ? "avx512vnni" : g_isa == 1 ? "avxvnni" : g_isa == 3 ? "avx2" : "scalar";
}

/* ---- the product ---- */

typedef struct {
    steno_xmat_fn fn;
    steno_xmat_fn2 fn2; /* two groups at once, or NULL */
    int T, max_cols;
    const uint8_t *ya;  /* per column group: codes, then d, then the offsets / sums */
    const size_t *goff; /* byte offset of column group i's packed data; group i starts at row cols0[i] */
    const int *cols0;
    int ngroups;
    /* nm matrices over the same activations; matrix m's work units are numbered from off[m]: its
     * row groups, or with fn2 its pairs of row groups (an odd count's last unit one group), so that
     * no task's range ends on a lone group the one-group kernel would run at half the rows */
    int nm, unit;
    const steno_xmat *const *W;
    float *const *Y;
    const int64_t *ldy;
    long off[STENO_MATMUL_MAX_N + 1];
} xm_job;

static void xm_range(const xm_job *j, const steno_xmat *W, float *Y, int64_t ldy, long lo, long hi) {
    const int64_t nb = W->n_in / 32;
    const size_t gbytes = (size_t)nb * W->block_bytes;
    float out[STENO_XMAT_MAX_COLS * 16];
    lo *= j->unit;
    hi = hi * j->unit < W->n_groups ? hi * j->unit : W->n_groups;
    /* tiles of 4 column groups (up to 32 activation rows, ~23 KB of packed activations at n_in 576)
     * stay in L1/L2 while the thread's weight groups pass over them */
    for (int i0 = 0; i0 < j->ngroups; i0 += 4) {
        const int i1 = i0 + 4 < j->ngroups ? i0 + 4 : j->ngroups;
        for (long g = lo; g < hi;) {
            const uint8_t *wg = W->data + (size_t)g * gbytes;
            const int pair = j->fn2 && g + 1 < hi;
            for (int i = i0; i < i1; i++) {
                const int c0 = j->cols0[i], nc = j->cols0[i + 1] - c0;
                const int8_t *ya = (const int8_t *)(j->ya + j->goff[i]);
                const float *yd = (const float *)(ya + (size_t)nb * nc * 32);
                const void *ye = yd + (size_t)nb * nc;
                if (pair) { /* groups g and g + 1: rows 8g .. 8g + 15, stored in place when all 16 exist */
                    const int rows = W->n_out - g * 8 < 16 ? (int)(W->n_out - g * 8) : 16;
                    if (rows == 16) {
                        j->fn2((int)nb, wg, gbytes, ya, yd, ye, nc, Y + (int64_t)c0 * ldy + g * 8, ldy);
                        continue;
                    }
                    j->fn2((int)nb, wg, gbytes, ya, yd, ye, nc, out, 16);
                    for (int c = 0; c < nc; c++)
                        memcpy(Y + (int64_t)(c0 + c) * ldy + g * 8, out + c * 16, sizeof(float) * (size_t)rows);
                } else {
                    const int rows = W->n_out - g * 8 < 8 ? (int)(W->n_out - g * 8) : 8;
                    j->fn((int)nb, wg, ya, yd, ye, nc, out);
                    for (int c = 0; c < nc; c++)
                        memcpy(Y + (int64_t)(c0 + c) * ldy + g * 8, out + c * 8, sizeof(float) * (size_t)rows);
                }
            }
            g += pair ? 2 : 1;
        }
    }
}

static void xm_worker(void *arg, int ith, int nth) {
    const xm_job *j = arg;
    long lo, hi;
    steno_split(j->off[j->nm], ith, nth, &lo, &hi);
    for (int m = 0; m < j->nm && lo < hi; m++) {
        const long a = lo > j->off[m] ? lo : j->off[m], b = hi < j->off[m + 1] ? hi : j->off[m + 1];
        if (a < b) xm_range(j, j->W[m], j->Y[m], j->ldy[m], a - j->off[m], b - j->off[m]);
    }
}

/* quantizing and packing the activations: one task per column (row of X), which writes only its
 * own slots (block b of column c of group i at b·nc + c), so the columns of one group run on
 * different threads with the same bytes */
typedef struct {
    const steno_type_traits *ta;
    int act, wtype;
    const float *X;
    int64_t n;
    uint8_t *xq;
    size_t xq_row;
    uint8_t *ya;
    const size_t *goff;
    const int *cols0;
    const steno_xmat_pre *pre;
} xm_prep;

static void xm_prep_task(void *arg, int col, int n_tasks) {
    (void)n_tasks;
    const xm_prep *p = arg;
    const int64_t n = p->n, nb = n / 32;
    int i = 0;
    while (col >= p->cols0[i + 1]) i++;
    const int c0 = p->cols0[i], nc = p->cols0[i + 1] - c0, c = col - c0;
    int8_t *codes = (int8_t *)(p->ya + p->goff[i]);
    float *yd = (float *)(codes + (size_t)nb * nc * 32);
    uint8_t *ye = (uint8_t *)(yd + (size_t)nb * nc);
    const int K = p->wtype == STENO_T_Q4_0 ? 8 : p->wtype == STENO_T_Q5_0 ? 16 : 128;
    uint8_t *row = p->xq + (size_t)col * p->xq_row;
    if (p->pre) p->pre->fn(p->pre->ctx, col);
    p->ta->from_float(p->X + (int64_t)col * n, row, n);
    for (int64_t b = 0; b < nb; b++) {
        const size_t at = (size_t)b * nc + c;
        if (p->act == STENO_T_Q8_1) {
            const block_q8_1 *y = (const block_q8_1 *)row + b;
            memcpy(codes + at * 32, y->qs, 32);
            yd[at] = steno_fp16_to_f32(y->d);
            const float s = steno_fp16_to_f32(y->s);
            memcpy(ye + at * 4, &s, 4);
        } else {
            const block_q8_0 *y = (const block_q8_0 *)row + b;
            memcpy(codes + at * 32, y->qs, 32);
            yd[at] = steno_fp16_to_f32(y->d);
            if (p->wtype == STENO_T_Q6_K) { /* −32·Σy of each 16-element half */
                int32_t off[2] = {0, 0};
                for (int q = 0; q < 32; q++) off[q / 16] -= 32 * y->qs[q];
                memcpy(ye + at * 8, off, 8);
                continue;
            }
            int32_t sum = 0;
            for (int q = 0; q < 32; q++) sum += y->qs[q];
            const int32_t off = -K * sum;
            memcpy(ye + at * 4, &off, 4);
        }
    }
}

size_t steno_matmul_x_work_bytes(int type, int64_t n_in, int T) {
    const int m = kernels()->max_cols, ngroups = (T + m - 1) / m;
    const size_t per_col = (size_t)(n_in / 32) * (32 + 4 + (type == STENO_T_Q6_K ? 8 : 4));
    const size_t xq_bytes = (steno_row_size(steno_xmat_act_type(type), n_in) * (size_t)T + 63) & ~(size_t)63;
    const size_t meta = (sizeof(size_t) + sizeof(int)) * (size_t)(ngroups + 1);
    return xq_bytes + per_col * (size_t)T + meta + 128;
}

int steno_matmul_x_n(steno_pool *pool, steno_work *work, int nm, const steno_xmat *const *Wm, const float *X, int T,
                     float *const *Ym, const int64_t *ldym) {
    return steno_matmul_x_pre(pool, work, NULL, nm, Wm, X, T, Ym, ldym);
}

int steno_matmul_x_pre(steno_pool *pool, steno_work *work, const steno_xmat_pre *pre, int nm,
                       const steno_xmat *const *Wm, const float *X, int T, float *const *Ym, const int64_t *ldym) {
    if (nm < 1 || nm > STENO_MATMUL_MAX_N) return -1;
    const steno_xmat *W = Wm[0];
    for (int q = 1; q < nm; q++)
        if (Wm[q]->type != W->type || Wm[q]->n_in != W->n_in) return -1;
    const steno_xmat_kernels *k = kernels();
    const steno_xmat_fn fn = W->type == STENO_T_Q4_0   ? k->q4_0
                             : W->type == STENO_T_Q4_1 ? k->q4_1
                             : W->type == STENO_T_Q5_0 ? k->q5_0
                             : W->type == STENO_T_Q4_K ? k->q4_K
                             : W->type == STENO_T_Q6_K ? k->q6_K
                                                       : k->q8_0;
    const int act = steno_xmat_act_type(W->type);
    const steno_type_traits *ta = steno_type_get(act);
    const int64_t n = W->n_in, nb = n / 32;
    const size_t xq_row = steno_row_size(act, n);
    /* column groups of at most max_cols, balanced (T = 9: 5 + 4) */
    const int m = k->max_cols, ngroups = (T + m - 1) / m;
    const size_t per_col = (size_t)nb * (32 + 4 + (W->type == STENO_T_Q6_K ? 8 : 4));
    const size_t xq_bytes = (xq_row * (size_t)T + 63) & ~(size_t)63;
    uint8_t *buf = steno_work_get(work, steno_matmul_x_work_bytes(W->type, n, T));
    if (!buf) return -1;
    uint8_t *xq = buf, *ya = buf + xq_bytes;
    size_t *goff = (size_t *)(((uintptr_t)(ya + per_col * (size_t)T) + 63) & ~(uintptr_t)63);
    int *cols0 = (int *)(goff + ngroups + 1);
    for (int i = 0, c0 = 0; i < ngroups; i++) {
        const int nc = T / ngroups + (i < T % ngroups);
        cols0[i] = c0;
        goff[i] = per_col * (size_t)c0;
        c0 += nc;
        cols0[i + 1] = c0;
    }
    xm_prep p = {ta, act, W->type, X, n, xq, xq_row, ya, goff, cols0, pre};
    /* Rows of a batched step or a prompt are worth the workers (on the caller alone, 8 rows' prep
     * and the forward's per-row steps in pre left the other core idle for ~5 % of an 8-row SmolLM2
     * step); each column's bytes are the same either way */
    if (T >= 4 && steno_pool_threads(pool) > 1) steno_pool_run(pool, xm_prep_task, &p, T);
    else
        for (int c = 0; c < T; c++) xm_prep_task(&p, c, T);
    const int ti = W->type == STENO_T_Q4_0   ? 0
                   : W->type == STENO_T_Q4_1 ? 1
                   : W->type == STENO_T_Q8_0 ? 2
                   : W->type == STENO_T_Q5_0 ? 3
                   : W->type == STENO_T_Q4_K ? 4
                                             : 5;
    /* STENO_NO_AVX512 (read per call: tests compare the two, the same bits) keeps the ymm kernels */
    const steno_xmat_fn2 fn2 = steno_cpu_avx512_allowed() ? k->x16[ti] : NULL;
    xm_job j = {fn, fn2, T, m, ya, goff, cols0, ngroups, nm, fn2 ? 2 : 1, Wm, Ym, ldym, {0}};
    for (int q = 0; q < nm; q++) j.off[q + 1] = j.off[q] + (long)(Wm[q]->n_groups + j.unit - 1) / j.unit;
    if ((int64_t)T * j.off[nm] * j.unit * 8 * W->n_in < 32768) xm_worker(&j, 0, 1);
    else steno_pool_run(pool, xm_worker, &j, steno_n_tasks(pool));
    return 0;
}

int steno_matmul_x(steno_pool *pool, steno_work *work, const steno_xmat *W, const float *X, int T, float *Y,
                   int64_t ldy) {
    return steno_matmul_x_n(pool, work, 1, &W, X, T, &Y, &ldy);
}
