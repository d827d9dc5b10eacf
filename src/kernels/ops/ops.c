/* ops.c — see ops.h. */
#include "kernels/ops/ops.h"

#include <math.h>

#include "core/cpu.h"
#include "kernels/ops/ggml_simd.h"
#include "kernels/quant/quant.h"

void steno_rmsnorm_ggml(float *y, const float *x, const float *w, int n, float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

void steno_rmsnorm_ggml_rows(float *y, const float *x, const float *w, int rows, int n, float eps) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *x0 = x + (size_t)r * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (int i = 0; i < n; i++) {
            s0 += (double)(x0[i] * x0[i]);
            s1 += (double)(x1[i] * x1[i]);
            s2 += (double)(x2[i] * x2[i]);
            s3 += (double)(x3[i] * x3[i]);
        }
        const double s[4] = {s0, s1, s2, s3};
        for (int q = 0; q < 4; q++) {
            const float mean = (float)(s[q] / n);
            const float scale = 1.0f / sqrtf(mean + eps);
            const float *xq = x + (size_t)(r + q) * n;
            float *yq = y + (size_t)(r + q) * n;
            for (int i = 0; i < n; i++) yq[i] = (xq[i] * scale) * w[i];
        }
    }
    for (; r < rows; r++) steno_rmsnorm_ggml(y + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

void steno_rmsnorm_llama2c(float *o, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss /= n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < n; j++) o[j] = w[j] * (ss * x[j]);
}

/* cos/sin of the n_rot/2 angles at pos, as ggml's rope_cache_init computes them (rope_yarn without
 * extrapolation mixing); ff: the frequency divisors (rope_freqs), or NULL; mscale: the magnitude
 * factor (1: none; x · 1.0f is exact, so the bits are those of no factor) */
static int rope_table(float *cs, int n_rot, int pos, float base, float freq_scale, const float *ff, float mscale) {
    const int nr = n_rot < 2048 ? n_rot : 2048;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int i0 = 0; i0 < nr; i0 += 2) {
        const float th = freq_scale * (ff ? theta / ff[i0 / 2] : theta);
        cs[i0] = cosf(th) * mscale;
        cs[i0 + 1] = sinf(th) * mscale;
        theta *= theta_scale;
    }
    return nr;
}

__attribute__((always_inline)) static inline void rope_body(float *x, int n_heads, int head_dim, int nr,
                                                             const float *cs, int neox) {
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i0 = 0; i0 < nr; i0 += 2) {
            const float c = cs[i0], s = cs[i0 + 1];
            const int a = neox ? i0 / 2 : i0;
            const int b = neox ? i0 / 2 + nr / 2 : i0 + 1;
            const float x0 = v[a], x1 = v[b];
            /* rotate_pairs as llama.cpp's build compiles it (FMA contraction), bit for bit */
            v[a] = fmaf(x0, c, -(x1 * s));
            v[b] = fmaf(x0, s, x1 * c);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* the same loop where fmaf is one vfmadd instruction instead of a call into libm (3 % of a
 * SmolLM2 prompt evaluation went to the calls); fmaf is exactly rounded either way */
__attribute__((target("fma"))) static void rope_apply_fma(float *x, int n_heads, int head_dim, int nr,
                                                         const float *cs, int neox) {
    rope_body(x, n_heads, head_dim, nr, cs, neox);
}
#endif

static void rope_apply(float *x, int n_heads, int head_dim, int nr, const float *cs, int neox) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (steno_cpu_has_avx2_fma_f16c()) {
        rope_apply_fma(x, n_heads, head_dim, nr, cs, neox);
        return;
    }
#endif
    rope_body(x, n_heads, head_dim, nr, cs, neox);
}

void steno_rope_ggml(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                     int neox) {
    float cs[2048];
    const int nr = rope_table(cs, n_rot, pos, base, freq_scale, NULL, 1.0f);
    rope_apply(x, n_heads, head_dim, nr, cs, neox);
}

void steno_rope_ggml_qk(float *q, int n_head, float *k, int n_head_kv, int head_dim, int n_rot, int pos, float base,
                        float freq_scale, int neox) {
    steno_rope_ggml_qk_ff(q, n_head, k, n_head_kv, head_dim, n_rot, pos, base, freq_scale, NULL, 1.0f, neox);
}

void steno_rope_ggml_qk_ff(float *q, int n_head, float *k, int n_head_kv, int head_dim, int n_rot, int pos, float base,
                           float freq_scale, const float *freq_factors, float mscale, int neox) {
    float cs[2048];
    const int nr = rope_table(cs, n_rot, pos, base, freq_scale, freq_factors, mscale);
    rope_apply(q, n_head, head_dim, nr, cs, neox);
    rope_apply(k, n_head_kv, head_dim, nr, cs, neox);
}

void steno_rope_llama2c(float *x, int dim, int head_size, int pos) {
    for (int i = 0; i < dim; i += 2) {
        int head_dim = i % head_size;
        float freq = 1.0f / powf(10000.0f, head_dim / (float)head_size);
        float val = pos * freq;
        float fcr = cosf(val), fci = sinf(val);
        float v0 = x[i], v1 = x[i + 1];
        x[i] = v0 * fcr - v1 * fci;
        x[i + 1] = v0 * fci + v1 * fcr;
    }
}

void steno_swiglu(float *h, const float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) {
        float v = g[i];
        v *= (1.0f / (1.0f + expf(-v)));
        h[i] = v * u[i];
    }
}

void steno_geglu(float *h, const float *g, const float *u, int n) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int i = 0; i < n; i++) {
        const float x = g[i];
        h[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * u[i];
    }
}

void steno_geglu_ggml(float *h, const float *g, const float *u, int n) {
    if (steno_ggml_exact_available()) {
        steno_ggml_geglu(h, g, u, n); /* F16C table index, same bits */
        return;
    }
    for (int i = 0; i < n; i++) h[i] = steno_gelu_ggml(g[i]) * u[i];
}
