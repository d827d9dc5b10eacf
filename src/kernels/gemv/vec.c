#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "kernels/prefetch.h"
#include "kernels/gemv/vec_impl.h"

/* ---------------- scalar kernels (the portable reference) ---------------- */

static void gemv_f32_scalar(const float *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) {
        const float *w = W + (size_t)r * n;
        float acc[8] = {0};
        int k = 0;
        for (; k + 8 <= n; k += 8)
            for (int i = 0; i < 8; i++) acc[i] += w[k + i] * x[k + i];
        float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; k < n; k++) s += w[k] * x[k];
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

static void gemv_f16_scalar(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * n;
        float acc[8] = {0};
        int k = 0;
        for (; k + 8 <= n; k += 8)
            for (int i = 0; i < 8; i++) acc[i] += steno_fp16_to_f32(w[k + i]) * x[k + i];
        float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; k < n; k++) s += steno_fp16_to_f32(w[k]) * x[k];
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

static void layernorm_scalar(const float *x, const float *gamma, const float *beta, int n, float *y) {
    float mean = 0.0f, var = 0.0f;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    const float inv = 1.0f / sqrtf(var + 1e-5f);
    for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

static void gelu_scalar(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

#define ATT_BLOCK 64

static void attention_scalar(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv,
                             int nk, int dh, int nq, int causal, int q_pos0, float *out, int out_stride) {
    float s[ATT_BLOCK];
    for (int i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * q_stride;
        float *o = out + (size_t)i * out_stride;
        const int limit = causal ? (q_pos0 + i + 1 < nk ? q_pos0 + i + 1 : nk) : nk;
        float m = -INFINITY, l = 0.0f;
        for (int d = 0; d < dh; d++) o[d] = 0.0f;
        for (int j0 = 0; j0 < limit; j0 += ATT_BLOCK) {
            const int jn = limit - j0 < ATT_BLOCK ? limit - j0 : ATT_BLOCK;
            float bm = -INFINITY;
            for (int j = 0; j < jn; j++) {
                float acc = 0.0f;
                for (int d = 0; d < dh; d++) acc += qi[d] * Kt[(size_t)d * ldk + j0 + j];
                s[j] = acc;
                bm = acc > bm ? acc : bm;
            }
            if (bm > m) { /* a new running maximum rescales what was summed so far, once per block */
                const float scale = expf(m - bm);
                for (int d = 0; d < dh; d++) o[d] *= scale;
                l *= scale;
                m = bm;
            }
            for (int j = 0; j < jn; j++) {
                const float p = expf(s[j] - m);
                const float *v = V + (size_t)(j0 + j) * ldv;
                l += p;
                for (int d = 0; d < dh; d++) o[d] += p * v[d];
            }
        }
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int d = 0; d < dh; d++) o[d] *= inv;
    }
}

static void f32_to_f16_lanes_scalar(const float *src, uint16_t *dst, size_t n) {
    for (size_t g = 0; g < n; g += 16)
        for (int i = 0; i < 16; i++) {
            const float v = src[g + i] > 65504.0f ? 65504.0f : src[g + i] < -65504.0f ? -65504.0f : src[g + i];
            vec_f32_to_f16(&v, dst + g + vec_lane_slot(i), 1);
        }
}

/* Scores computed twice (maximum, then weights): no buffer, so any nk. */
static void attention_f16_scalar(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv,
                                 int nk, int dh, int nq, float *out, int out_stride) {
    for (int i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * q_stride;
        float *o = out + (size_t)i * out_stride;
        float m = -INFINITY, l = 0.0f;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1)
                for (int d = 0; d < dh; d++) o[d] = 0.0f;
            for (int j = 0; j < nk; j++) {
                const uint16_t *kb = Kb + (size_t)(j >> 4) * dh * 16 + vec_lane_slot(j & 15);
                float acc = 0.0f;
                for (int d = 0; d < dh; d++) acc += qi[d] * steno_fp16_to_f32(kb[(size_t)d * 16]);
                if (pass == 0) {
                    m = acc > m ? acc : m;
                    continue;
                }
                const float p = expf(acc - m);
                const uint16_t *v = V + (size_t)j * ldv;
                l += p;
                for (int d = 0; d < dh; d++) o[d] += p * steno_fp16_to_f32(v[vec_lane_slot(d)]);
            }
        }
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int d = 0; d < dh; d++) o[d] *= inv;
    }
}

static double sum_exp_scalar(const float *x, int n, float m) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - m);
    return s;
}

static void f16_to_f32_scalar(const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = steno_fp16_to_f32(src[i]);
}

static void gemv_f16_rows_scalar(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y) {
    for (int i = 0; i < count; i++) gemv_f16_scalar(W, NULL, x, n, rows[i], rows[i] + 1, y);
}

static float dot_i8_blocks_scalar(const int8_t *w, const int8_t *qx, const uint8_t *ax, const float *sb, int n) {
    (void)ax;
    float s = 0.0f;
    for (int b = 0; b < n / VEC_SCREEN_BLOCK; b++) {
        int32_t d = 0;
        for (int k = b * VEC_SCREEN_BLOCK; k < (b + 1) * VEC_SCREEN_BLOCK; k++) d += (int32_t)w[k] * qx[k];
        s += sb[b] * (float)d;
    }
    return s;
}

static void screen_build_row_scalar(const uint16_t *w16, int n, int8_t *q, float *s, float *g, float *c);

const vec_kernels vec_scalar = {
    .gemv_f32 = gemv_f32_scalar,
    .gemv_f16 = gemv_f16_scalar,
    .layernorm = layernorm_scalar,
    .gelu = gelu_scalar,
    .attention = attention_scalar,
    .f32_to_f16_lanes = f32_to_f16_lanes_scalar,
    .attention_f16 = attention_f16_scalar,
    .sum_exp = sum_exp_scalar,
    .gemv_f16_rows = gemv_f16_rows_scalar,
    .dot_i8_blocks = dot_i8_blocks_scalar,
    .screen_build_row = screen_build_row_scalar,
    .f16_to_f32 = f16_to_f32_scalar,
};

/* ---------------- dispatch ---------------- */

static const vec_kernels *g_k = &vec_scalar;
static atomic_int g_init = 0;

int vec_init(void) {
    if (atomic_load(&g_init)) return g_k != &vec_scalar;
#if defined(__x86_64__) && defined(__GNUC__)
    const char *no = getenv("STENO_NO_SIMD");
    if (!(no && *no && strcmp(no, "0") != 0) && steno_cpu_has_avx2_fma_f16c()) {
        g_k = &vec_avx2;
        if (steno_cpu_avx512_allowed() && steno_cpu_has_avx512_skx()) g_k = &vec_avx512;
    }
#endif
    atomic_store(&g_init, 1);
    return g_k != &vec_scalar;
}

const char *vec_isa_name(void) {
    vec_init();
    return g_k == &vec_scalar ? "scalar" : g_k == &vec_avx2 ? "avx2" : "avx512";
}

void vec_gemv(vec_dtype dt, const void *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    if (dt == VEC_F16) g_k->gemv_f16((const uint16_t *)W, b, x, n, r0, r1, y);
    else g_k->gemv_f32((const float *)W, b, x, n, r0, r1, y);
}

void vec_gemv_rows_to(vec_dtype dt, const void *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                      int r1, float *const *Y) {
    const size_t row_bytes = (size_t)n * (dt == VEC_F16 ? 2 : 4);
    int block = (int)(8192 / (row_bytes ? row_bytes : 1)); /* ~8 KiB of weights: stays in L1 across inputs */
    if (block < 1) block = 1;
    if (dt == VEC_F16 && g_k->gemv_f16_batch) {
        g_k->gemv_f16_batch((const uint16_t *)W, b, X, ldx, nx, n, r0, r1, Y, block);
        return;
    }
    for (int a = r0; a < r1; a += block) {
        const int e = a + block < r1 ? a + block : r1;
        for (int i = 0; i < nx; i++) vec_gemv(dt, W, b, X + (size_t)i * ldx, n, a, e, Y[i]);
    }
}

size_t vec_f16_panel_halves(int rows, int n) {
    vec_init();
    if (!g_k->gemv_f16_panel || n <= 0 || n % 32 || n > 4096 || rows < 32) return 0;
    return (size_t)(rows / 32) * 32 * (size_t)n;
}

void vec_f16_panel_pack(const uint16_t *W, int rows, int n, uint16_t *P) {
    const int nc = n / 32;
    for (int r0 = 0; r0 + 32 <= rows; r0 += 32)
        for (int q = 0; q < 32; q++) {
            /* partial q = 4j + t: lane l = j (t < 2) or j + 8, A columns (l & 3) + 8(l >> 2), B +4 */
            const int j = q >> 2, t = q & 3, l = j + ((t >> 1) << 3);
            const int col = (l & 3) + 8 * (l >> 2) + ((t & 1) << 2);
            uint16_t *o = P + (size_t)r0 * n + (size_t)q * nc * 32;
            for (int c = 0; c < nc; c++)
                for (int rr = 0; rr < 32; rr++) o[32 * c + rr] = W[(size_t)(r0 + rr) * n + 32 * c + col];
        }
}

void vec_gemv_f16_panel_to(const uint16_t *W, const uint16_t *P, const float *b, const float *X, int ldx, int nx,
                           int n, int r0, int r1, float *const *Y) {
    vec_init();
    if (P && g_k->gemv_f16_panel && nx >= VEC_PANEL_MIN_INPUTS) g_k->gemv_f16_panel(W, P, b, X, ldx, nx, n, r0, r1, Y);
    else vec_gemv_rows_to(VEC_F16, W, b, X, ldx, nx, n, r0, r1, Y);
}

void vec_gemv_rows(vec_dtype dt, const void *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                   int r1, float *Y, int ldy) {
    float *yp[64];
    for (int i0 = 0; i0 < nx; i0 += 64) { /* each output is the same dot product in any chunk */
        const int in = nx - i0 < 64 ? nx - i0 : 64;
        for (int i = 0; i < in; i++) yp[i] = Y + (size_t)(i0 + i) * ldy;
        vec_gemv_rows_to(dt, W, b, X + (size_t)i0 * ldx, ldx, in, n, r0, r1, yp);
    }
}

void vec_layernorm(const float *x, const float *gamma, const float *beta, int n, float *y) {
    g_k->layernorm(x, gamma, beta, n, y);
}

void vec_gelu(float *x, size_t n) { g_k->gelu(x, n); }

void vec_add(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void vec_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk, int dh,
                   int nq, int causal, int q_pos0, float *out, int out_stride) {
    g_k->attention(q, q_stride, Kt, ldk, V, ldv, nk, dh, nq, causal, q_pos0, out, out_stride);
}

void vec_f32_to_f16_lanes(const float *src, uint16_t *dst, size_t n) { g_k->f32_to_f16_lanes(src, dst, n); }

void vec_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk, int dh,
                       int nq, float *out, int out_stride) {
    g_k->attention_f16(q, q_stride, Kb, V, ldv, nk, dh, nq, out, out_stride);
}

void vec_pack_keys_f16(const float *Kt, int ldk, int dh, int nk, uint16_t *Kb) {
    for (int j0 = 0; j0 < nk; j0 += 16)
        for (int d = 0; d < dh; d++)
            g_k->f32_to_f16_lanes(Kt + (size_t)d * ldk + j0, Kb + ((size_t)(j0 >> 4) * dh + d) * 16, 16);
}

double vec_sum_exp(const float *x, int n, float m) { return g_k->sum_exp(x, n, m); }

void vec_f16_to_f32(const uint16_t *src, float *dst, size_t n) { g_k->f16_to_f32(src, dst, n); }

void vec_gemv_f16_rows(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y) {
    g_k->gemv_f16_rows(W, x, n, rows, count, y);
}

void vec_gemv_f16_rows_multi(const uint16_t *W, const float *X, int ldx, int nx, int n, const int *rows,
                             const uint16_t *need, int count, float *const *Y) {
    if (g_k->gemv_f16_rows_multi) {
        g_k->gemv_f16_rows_multi(W, X, ldx, nx, n, rows, need, count, Y);
        return;
    }
    if (!need) {
        for (int i = 0; i < nx; i++) g_k->gemv_f16_rows(W, X + (size_t)i * ldx, n, rows, count, Y[i]);
        return;
    }
    for (int k = 0; k < count; k++)
        for (int i = 0; i < nx; i++)
            if (need[k] >> i & 1) g_k->gemv_f16_rows(W, X + (size_t)i * ldx, n, rows + k, 1, Y[i]);
}

/* round to nearest (ties away from zero), clamped to the int8 codes (NaN: 0): |w·inv − q| <= 1/2
 * up to the float rounding of w·inv, which the bound's 3e-5·‖x‖‖w‖ term covers */
static inline int screen_code(float v) {
    if (!(v >= -127.0f)) return v == v ? -127 : 0;
    if (v > 127.0f) return 127;
    return (int)(v + (v >= 0.0f ? 0.5f : -0.5f));
}

static void screen_build_row_scalar(const uint16_t *w16, int n, int8_t *q, float *s, float *g, float *c) {
    float buf[256];
    float mx = 0.0f;
    for (int k0 = 0; k0 < n; k0 += 256) { /* the row's maximum, widened 256 halves at a time */
        const int kn = n - k0 < 256 ? n - k0 : 256;
        vec_f16_to_f32(w16 + k0, buf, (size_t)kn);
        for (int k = 0; k < kn; k++) {
            const float a = buf[k] < 0.0f ? -buf[k] : buf[k];
            mx = a > mx ? a : mx;
        }
    }
    const float sc = mx > 0.0f ? mx / 127.0f : 0.0f, inv = mx > 0.0f ? 127.0f / mx : 0.0f;
    double g2 = 0.0, e2 = 0.0, w2 = 0.0;
    for (int b = 0; b < n; b += VEC_SCREEN_BLOCK) {
        const int bn = n - b < VEC_SCREEN_BLOCK ? n - b : VEC_SCREEN_BLOCK;
        vec_f16_to_f32(w16 + b, buf, (size_t)bn);
        int l1 = 0;
        for (int k = 0; k < bn; k++) {
            const int v = screen_code(buf[k] * inv);
            q[b + k] = (int8_t)v;
            l1 += v < 0 ? -v : v;
            const double d = (double)buf[k] - (double)sc * (double)v;
            e2 += d * d;
            w2 += (double)buf[k] * buf[k];
        }
        g2 += (double)l1 * l1;
    }
    /* rounded up so the float bounds stay bounds */
    *s = sc;
    *g = (float)(sc * sqrt(g2)) * (1.0f + 1e-6f);
    *c = (float)sqrt(e2) * (1.0f + 1e-6f) + 3e-5f * (float)sqrt(w2);
}

void vec_screen_build_row(const uint16_t *w16, int n, int8_t *q, float *s, float *g, float *c) {
    g_k->screen_build_row(w16, n, q, s, g, c);
}

void vec_screen_prepare(const float *x, int n, vec_screen_x *sx) {
    double h2 = 0.0, n2 = 0.0;
    for (int b = 0; b < n; b += VEC_SCREEN_BLOCK) {
        float mx = 0.0f;
        for (int k = b; k < b + VEC_SCREEN_BLOCK; k++) {
            const float a = fabsf(x[k]);
            mx = a > mx ? a : mx;
            n2 += (double)x[k] * x[k];
        }
        /* a block too small for 127/mx to be finite keeps codes 0: its error is x itself, |x| <= mx */
        const int tiny = mx < 1e-30f;
        const float sc = tiny ? 0.0f : mx / 127.0f, inv = tiny ? 0.0f : 127.0f / mx;
        sx->sb[b / VEC_SCREEN_BLOCK] = sc;
        h2 += tiny ? (double)mx * mx : 0.25 * (double)sc * sc;
        for (int k = b; k < b + VEC_SCREEN_BLOCK; k++) {
            const int v = screen_code(x[k] * inv);
            sx->qx[k] = (int8_t)v;
            sx->ax[k] = (uint8_t)(v < 0 ? -v : v);
        }
    }
    sx->h = (float)sqrt(h2) * (1.0f + 1e-5f); /* the rounding of x·inv and sc: the c term's 3e-5 covers it */
    sx->norm = (float)sqrt(n2) * (1.0f + 1e-6f);
}

void vec_screen_i8_multi(const vec_screen_rows *w, const vec_screen_x *xs, int nx, int n, int r0, int r1,
                         const float *allow, float *z, float *hi, size_t ld, float *best) {
    for (int i = 0; i < nx; i++) best[i] = -INFINITY;
    const int pf = vec_pf_rows((size_t)n);
    for (int r = r0; r < r1; r++) {
        if (r + pf < r1) vec_prefetch_bytes(w->q + (size_t)(r + pf) * n, (size_t)n);
        const int allowed = !allow || allow[r] == 0.0f;
        for (int i = 0; i < nx; i++) {
            const vec_screen_x *x = xs + i;
            const float zr = w->s[r] * g_k->dot_i8_blocks(w->q + (size_t)r * n, x->qx, x->ax, x->sb, n);
            const float b = x->h * w->g[r] + x->norm * w->c[r] + 1e-6f * fabsf(zr);
            z[(size_t)i * ld + r] = zr;
            hi[(size_t)i * ld + r] = zr + b;
            if (allowed && zr - b > best[i]) best[i] = zr - b;
        }
    }
}

float vec_screen_i8(const vec_screen_rows *w, const vec_screen_x *x, int n, int r0, int r1, const float *allow,
                    float *z, float *hi) {
    float best;
    vec_screen_i8_multi(w, x, 1, n, r0, r1, allow, z, hi, 0, &best);
    return best;
}

void vec_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &src[i], 4);
        const uint32_t sign = (x >> 16) & 0x8000u;
        uint32_t absx = x & 0x7fffffffu;
        uint16_t h;
        if (absx >= 0x7f800000u) { /* inf / nan */
            h = (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
        } else if (absx >= 0x477ff000u) { /* rounds to >= 65520: overflow */
            h = (uint16_t)(sign | 0x7c00u);
        } else if (absx < 0x38800000u) { /* subnormal half (or zero) */
            float f;
            memcpy(&f, &absx, 4);
            h = (uint16_t)(sign | (uint16_t)lrintf(f * 16777216.0f)); /* 2^24: units of the smallest subnormal */
        } else {
            uint32_t mant = absx & 0x7fffffu, exp = (absx >> 23) - 127 + 15;
            uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
            uint32_t v = (exp << 10) | hm;
            if (rem > 0x1000u || (rem == 0x1000u && (hm & 1u))) v++;
            h = (uint16_t)(sign | v);
        }
        dst[i] = h;
    }
}
