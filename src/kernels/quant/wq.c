/* wq.c — quantized weight matrices (wq.h): names, load-time quantizers, activation preparation,
 * GEMV and tile dequantization, and the choice of kernels. */
#include "kernels/quant/wq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"

static const struct { int type; const char *name; } NAMES[] = {
    {STENO_T_Q8_0, "q8_0"},          {STENO_T_Q5_0, "q5_0"},          {STENO_T_Q5_1, "q5_1"},
    {STENO_T_Q4_0, "q4_0"},          {STENO_T_Q4_1, "q4_1"},          {WQ_MLX_Q4_G32, "mlx-q4g32"},
    {WQ_MLX_Q4_G64, "mlx-q4g64"},    {WQ_MLX_Q8_G32, "mlx-q8g32"},    {WQ_MLX_Q8_G64, "mlx-q8g64"},
};

int wq_parse(const char *name) {
    for (size_t i = 0; name && i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(name, NAMES[i].name) == 0) return NAMES[i].type;
    return -1;
}

const char *wq_name(int type) {
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (NAMES[i].type == type) return NAMES[i].name;
    return "?";
}

static int is_mlx(int type) { return type >= WQ_MLX_Q4_G32 && type <= WQ_MLX_Q8_G64; }
static int mlx_bits(int type) { return type == WQ_MLX_Q8_G32 || type == WQ_MLX_Q8_G64 ? 8 : 4; }
static int mlx_g(int type) { return type == WQ_MLX_Q4_G32 || type == WQ_MLX_Q8_G32 ? 32 : 64; }

int wq_group(int type) {
    if (is_mlx(type)) return mlx_g(type);
    return wq_parse(wq_name(type)) >= 0 ? 32 : 0;
}

size_t wq_bytes(int type, int n_out, int n_in) {
    const int g = wq_group(type);
    if (!g || n_in <= 0 || n_out <= 0 || n_in % g) return 0;
    if (is_mlx(type)) return (size_t)n_out * ((size_t)n_in * mlx_bits(type) / 8 + 4 * (size_t)(n_in / g));
    return (size_t)n_out * steno_row_size(type, n_in);
}

/* ---------------------------------------------------------------- ggml quantizers */

/* ggml-quants.c quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d). */
static void q8_0_ref(const float *x, block_q8_0 *y, int nb) {
    for (int i = 0; i < nb; i++, x += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* The signed value of largest magnitude (ggml's `max` of the q4_0/q5_0 quantizers). */
static float absmax_signed(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

/* quantize_row_q4_0_ref: d = max/−8, q = min(15, (int8)(x/d + 8.5)). */
static void q4_0_ref(const float *x, block_q4_0 *y, int nb) {
    for (int i = 0; i < nb; i++, x += 32) {
        const float d = absmax_signed(x) / -8.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[j + 16] * id + 8.5f);
            const uint8_t xi0 = (uint8_t)(a < 15 ? a : 15), xi1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
    }
}

static void minmax(const float *x, float *mn, float *mx) {
    float lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < 32; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

/* quantize_row_q4_1_ref: d = (max−min)/15, m = min, q = min(15, (int8)((x−min)/d + 0.5)). */
static void q4_1_ref(const float *x, block_q4_1 *y, int nb) {
    for (int i = 0; i < nb; i++, x += 32) {
        float mn, mx;
        minmax(x, &mn, &mx);
        const float d = (mx - mn) / 15.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        y[i].m = steno_f32_to_f16(mn);
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)((x[j] - mn) * id + 0.5f), b = (int8_t)((x[j + 16] - mn) * id + 0.5f);
            const uint8_t xi0 = (uint8_t)(a < 15 ? a : 15), xi1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
    }
}

/* quantize_row_q5_0_ref: d = max/−16, q = min(31, (int8)(x/d + 16.5)); bit 4 of q in qh. */
static void q5_0_ref(const float *x, block_q5_0 *y, int nb) {
    for (int i = 0; i < nb; i++, x += 32) {
        const float d = absmax_signed(x) / -16.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const int8_t a = (int8_t)(x[j] * id + 16.5f), b = (int8_t)(x[j + 16] * id + 16.5f);
            const uint8_t xi0 = (uint8_t)(a < 31 ? a : 31), xi1 = (uint8_t)(b < 31 ? b : 31);
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

/* quantize_row_q5_1_ref: d = (max−min)/31, m = min, q = (uint8)((x−min)/d + 0.5). */
static void q5_1_ref(const float *x, block_q5_1 *y, int nb) {
    for (int i = 0; i < nb; i++, x += 32) {
        float mn, mx;
        minmax(x, &mn, &mx);
        const float d = (mx - mn) / 31.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        y[i].m = steno_f32_to_f16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t xi0 = (uint8_t)((x[j] - mn) * id + 0.5f), xi1 = (uint8_t)((x[j + 16] - mn) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

/* ---------------------------------------------------------------- MLX quantizer */

/* mlx/ops.cpp affine_quantize, per group: the edge (the end of larger magnitude) is made exactly
 * representable, scale = edge/round(edge/scale0) with scale0 = ±max((max−min)/n_bins, 1e-7), bias =
 * edge (0 when the edge rounds to code 0); q = clip(round((w − bias)/scale), 0, n_bins). */
static void mlx_group(const float *x, int G, int bits, uint32_t *w, int first, uint16_t *s, uint16_t *bb) {
    const float n_bins = (float)((1 << bits) - 1);
    float mn = INFINITY, mx = -INFINITY;
    for (int j = 0; j < G; j++) {
        if (x[j] < mn) mn = x[j];
        if (x[j] > mx) mx = x[j];
    }
    const int neg = fabsf(mn) > fabsf(mx);
    float scale = fmaxf((mx - mn) / n_bins, 1e-7f);
    if (!neg) scale = -scale;
    const float edge = neg ? mn : mx, q0 = rintf(edge / scale);
    float bias = 0.0f;
    if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
    }
    *s = steno_f32_to_f16(scale);
    *bb = steno_f32_to_f16(bias);
    const float sc = steno_fp16_to_f32(*s), bi = steno_fp16_to_f32(*bb);
    const int per = 32 / bits;
    for (int j = 0; j < G; j++) {
        float q = sc != 0.0f ? rintf((x[j] - bi) / sc) : 0.0f;
        q = q < 0.0f ? 0.0f : q > n_bins ? n_bins : q;
        const int e = first + j;
        w[e / per] |= (uint32_t)q << (bits * (e % per));
    }
}

void wq_quantize(int type, const float *w, int n_out, int n_in, void *dst, wq_mat *out) {
    out->type = type;
    out->n_out = n_out;
    out->n_in = n_in;
    out->q = dst;
    out->scales = out->biases = NULL;
    out->x = (steno_xmat){0};
    if (is_mlx(type)) {
        const int bits = mlx_bits(type), G = mlx_g(type), ng = n_in / G;
        const size_t words = (size_t)n_in * bits / 32;
        uint32_t *q = dst;
        uint16_t *s = (uint16_t *)(q + (size_t)n_out * words), *bb = s + (size_t)n_out * ng;
        memset(q, 0, sizeof(uint32_t) * words * n_out);
        for (int r = 0; r < n_out; r++)
            for (int g = 0; g < ng; g++)
                mlx_group(w + (size_t)r * n_in + (size_t)g * G, G, bits, q + r * words, g * G, s + (size_t)r * ng + g,
                          bb + (size_t)r * ng + g);
        out->q_row = words * 4;
        out->scales = s;
        out->biases = bb;
        return;
    }
    const size_t row = steno_row_size(type, n_in);
    out->q_row = row;
    const int nb = n_in / 32;
    for (int r = 0; r < n_out; r++) {
        const float *x = w + (size_t)r * n_in;
        uint8_t *y = (uint8_t *)dst + row * r;
        switch (type) {
        case STENO_T_Q8_0: q8_0_ref(x, (block_q8_0 *)y, nb); break;
        case STENO_T_Q4_0: q4_0_ref(x, (block_q4_0 *)y, nb); break;
        case STENO_T_Q4_1: q4_1_ref(x, (block_q4_1 *)y, nb); break;
        case STENO_T_Q5_0: q5_0_ref(x, (block_q5_0 *)y, nb); break;
        case STENO_T_Q5_1: q5_1_ref(x, (block_q5_1 *)y, nb); break;
        default: break;
        }
    }
}

/* ---------------------------------------------------------------- activations */

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

/* ggml types: [packed for the rows kernels (when they run)][the vec_dot_type blocks]. */
static size_t ggml_packed_bytes(int type, int n_in) {
    const steno_rows_kernels *rk = steno_rows_get(type);
    const int at = steno_type_get(type)->vec_dot_type;
    return rk ? al64(steno_rows_pack_row_bytes(at, rk, n_in)) : 0;
}

size_t wq_act_bytes(int type, int n_in) {
    if (is_mlx(type)) return al64((size_t)n_in) + al64(8 * (size_t)(n_in / 32));
    const int at = steno_type_get(type)->vec_dot_type;
    return ggml_packed_bytes(type, n_in) + al64(steno_row_size(at, n_in));
}

void wq_act_prepare(int type, const float *x, int n_in, void *xa) {
    const int nb = n_in / 32;
    if (is_mlx(type)) {
        int8_t *q = xa;
        float *d = (float *)((uint8_t *)xa + al64((size_t)n_in)), *ds = d + nb;
        for (int i = 0; i < nb; i++) {
            block_q8_0 b;
            steno_type_get(STENO_T_Q8_0)->from_float(x + 32 * i, &b, 32);
            memcpy(q + 32 * i, b.qs, 32);
            int sum = 0;
            for (int j = 0; j < 32; j++) sum += b.qs[j];
            d[i] = steno_fp16_to_f32(b.d);
            ds[i] = d[i] * (float)sum;
        }
        return;
    }
    const steno_type_traits *t = steno_type_get(type);
    const size_t pk = ggml_packed_bytes(type, n_in);
    uint8_t *raw = (uint8_t *)xa + pk;
    steno_type_get(t->vec_dot_type)->from_float(x, raw, n_in);
    const steno_rows_kernels *rk = steno_rows_get(type);
    if (rk) steno_rows_pack(t->vec_dot_type, rk, raw, 0, n_in, 1, xa);
}

/* ---------------------------------------------------------------- MLX dispatch */

static int g_mlx_isa = -1;

const char *wq_mlx_isa_missing(int isa) {
    if (isa == 0) return NULL;
#ifdef STENO_HAVE_X86
    if (!steno_cpu_has_avx2_fma_f16c()) return "CPU lacks AVX2/FMA/F16C";
    if (isa == 1) return NULL;
    if (isa == 2) return steno_cpu_has_avx512vnni() ? NULL : "CPU lacks AVX512_VNNI/VL/BW";
    return "unknown instruction set";
#else
    return "not an x86 build";
#endif
}

static int mlx_isa(void) {
    if (g_mlx_isa >= 0) return g_mlx_isa;
    int isa = 0;
    const char *no = getenv("STENO_NO_AVX2");
    if (!(no && *no && strcmp(no, "0") != 0)) {
        const char *want = getenv("STENO_WQ_ISA");
        static const char *names[] = {"scalar", "avx2", "avx512vnni"};
        if (want && *want) {
            for (int k = 0; k < 3; k++)
                if (strcmp(want, names[k]) == 0 && !wq_mlx_isa_missing(k)) isa = k;
        } else if (!wq_mlx_isa_missing(2)) isa = 2;
        else if (!wq_mlx_isa_missing(1)) isa = 1;
    }
    g_mlx_isa = isa;
    return isa;
}

const char *wq_mlx_isa(void) {
    static const char *names[] = {"scalar", "avx2", "avx512vnni"};
    return names[mlx_isa()];
}

int wq_mlx_set_isa(int isa) {
    if (isa < 0 || isa > 2 || wq_mlx_isa_missing(isa)) return -1;
    g_mlx_isa = isa;
    return 0;
}

static wq_mlx_dot_fn mlx_dot(void) {
    switch (mlx_isa()) {
#ifdef STENO_HAVE_X86
    case 1: return wq_mlx_dot_avx2;
    case 2: return wq_mlx_dot_avx512vnni;
#endif
    default: return wq_mlx_dot_scalar;
    }
}

/* The reference: integer sums per 32-value block, then per group
 * scale·(Σ_b d_b·isum_b) + bias·(Σ_b ds_b), groups accumulated in order. Every kernel keeps
 * these float operations and their order (the compiler does not contract: -std=c17). */
float wq_mlx_dot_scalar(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                        const void *xa) {
    const int8_t *y = xa;
    const float *d = (const float *)((const uint8_t *)xa + al64((size_t)n)), *ds = d + n / 32;
    const int per = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    float acc = 0.0f;
    for (int g = 0; g < n / G; g++) {
        float sq = 0.0f, sx = 0.0f;
        for (int b = g * G / 32; b < (g + 1) * G / 32; b++) {
            int isum = 0;
            for (int j = 32 * b; j < 32 * b + 32; j++) isum += (int)((w[j / per] >> (bits * (j % per))) & mask) * y[j];
            sq += d[b] * (float)isum;
            sx += ds[b];
        }
        acc += steno_fp16_to_f32(s[g]) * sq + steno_fp16_to_f32(bb[g]) * sx;
    }
    return acc;
}

/* ---------------------------------------------------------------- GEMV and dequantization */

void wq_gemv(const wq_mat *m, const void *xa, const float *b, int r0, int r1, float *y) {
    const int n = m->n_in;
    if (is_mlx(m->type)) {
        const wq_mlx_dot_fn dot = mlx_dot();
        const int bits = mlx_bits(m->type), G = mlx_g(m->type), ng = n / G;
        for (int r = r0; r < r1; r++) {
            const float v = dot(n, bits, G, (const uint32_t *)((const uint8_t *)m->q + m->q_row * r),
                                m->scales + (size_t)r * ng, m->biases + (size_t)r * ng, xa);
            y[r - r0] = b ? b[r] + v : v;
        }
        return;
    }
    const steno_rows_kernels *rk = steno_rows_get(m->type);
    const steno_type_traits *t = steno_type_get(m->type);
    const uint8_t *raw = (const uint8_t *)xa + ggml_packed_bytes(m->type, n);
    for (int r = r0; r < r1; r++) {
        const void *wr = (const uint8_t *)m->q + m->q_row * r;
        float v;
        if (rk) rk->fn[1](n, wr, xa, &v);
        else v = t->vec_dot(n, wr, raw);
        y[r - r0] = b ? b[r] + v : v;
    }
}

void wq_dequant_rows(const wq_mat *m, int r0, int r1, float *dst) {
    const int n = m->n_in;
    if (!m->q_row && m->x.data) { /* kept only in the x8 layout (wq.h) */
        steno_xmat_dequant_rows(&m->x, r0, r1, dst);
        return;
    }
    if (!is_mlx(m->type)) {
        const steno_type_traits *t = steno_type_get(m->type);
        for (int r = r0; r < r1; r++) t->to_float((const uint8_t *)m->q + m->q_row * r, dst + (size_t)(r - r0) * n, n);
        return;
    }
    const int bits = mlx_bits(m->type), G = mlx_g(m->type), ng = n / G, per = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    for (int r = r0; r < r1; r++) {
        const uint32_t *w = (const uint32_t *)((const uint8_t *)m->q + m->q_row * r);
        float *o = dst + (size_t)(r - r0) * n;
        for (int g = 0; g < ng; g++) {
            const float s = steno_fp16_to_f32(m->scales[(size_t)r * ng + g]);
            const float bi = steno_fp16_to_f32(m->biases[(size_t)r * ng + g]);
            for (int j = g * G; j < (g + 1) * G; j++) o[j] = s * (float)((w[j / per] >> (bits * (j % per))) & mask) + bi;
        }
    }
}
