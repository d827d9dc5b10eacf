/* Kernels of the fast path against plain reference loops: GEMV over f16 and f32 weights (and
 * their bit-identity), fused attention (streaming softmax) against explicit softmax attention,
 * causal bounds, GELU against erf, LayerNorm, f32→f16 rounding, and the thread pool. Runs the
 * SIMD kernels when the CPU has them and the scalar ones with STENO_NO_SIMD=1 (both are run:
 * the test re-executes itself once with the scalar kernels). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/fp16.h"
#include "core/threadpool.h"
#include "kernels/vec.h"
#include "test_util.h"

static uint64_t g_rng = 88172645463325252ull;
static float frand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 11) * 0x1.0p-53) * 2.0f - 1.0f;
}

static void ref_attention(const float *q, const float *K, const float *V, int nk, int dh, int limit, float *out) {
    double s[2048], mx = -INFINITY, sum = 0;
    for (int j = 0; j < limit; j++) {
        double a = 0;
        for (int d = 0; d < dh; d++) a += (double)q[d] * K[(size_t)j * dh + d];
        s[j] = a;
        mx = a > mx ? a : mx;
    }
    for (int j = 0; j < limit; j++) sum += (s[j] = exp(s[j] - mx));
    for (int d = 0; d < dh; d++) {
        double o = 0;
        for (int j = 0; j < limit; j++) o += s[j] * V[(size_t)j * dh + d];
        out[d] = (float)(o / sum);
    }
    (void)nk;
}

static void count_task(void *ctx, int t, int n) {
    int *hits = ctx;
    (void)n;
    __atomic_fetch_add(&hits[t], 1, __ATOMIC_RELAXED);
}

int main(int argc, char **argv) {
    const int simd = vec_init();
    printf("kernels: %s\n", simd ? "AVX2+FMA+F16C" : "scalar");

    /* GEMV: f16 weights vs the same values in f32 → identical; vs double reference → close */
    enum { R = 203, N = 388 };
    static float W32[R * N], x[N], y16[R], y32[R], b[R];
    static uint16_t W16[R * N];
    for (int i = 0; i < R * N; i++) W32[i] = frand();
    vec_f32_to_f16(W32, W16, R * N);
    for (int i = 0; i < R * N; i++) W32[i] = steno_fp16_to_f32(W16[i]);
    for (int i = 0; i < N; i++) x[i] = frand();
    for (int i = 0; i < R; i++) b[i] = frand();
    vec_gemv(VEC_F16, W16, b, x, N, 0, R, y16);
    vec_gemv(VEC_F32, W32, b, x, N, 0, 100, y32);
    vec_gemv(VEC_F32, W32, b, x, N, 100, R, y32);
    double max_err = 0;
    for (int r = 0; r < R; r++) {
        double ref = b[r];
        for (int k = 0; k < N; k++) ref += (double)W32[r * N + k] * x[k];
        max_err = fmax(max_err, fabs(ref - y32[r]));
        CHECK(memcmp(&y16[r], &y32[r], 4) == 0, "gemv row %d: f16 %.9g != f32 %.9g", r, y16[r], y32[r]);
    }
    CHECK(max_err < 1e-4, "gemv max error %.3g", max_err);
    printf("gemv max abs error vs float64: %.3g\n", max_err);

    /* f32 → f16 round trip of representative values */
    const float vals[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-8f, 6.1e-5f, 3.14159265f, 70000.0f};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint16_t h;
        vec_f32_to_f16(&vals[i], &h, 1);
        const float back = steno_fp16_to_f32(h);
        const float tol = fabsf(vals[i]) * 1e-3f + 6e-8f;
        if (vals[i] > 65504.0f) CHECK(isinf(back), "f16(%g) should overflow to inf", vals[i]);
        else CHECK(fabsf(back - vals[i]) <= tol, "f16 round trip of %g gave %g", vals[i], back);
    }

    /* Fused attention vs explicit softmax, non-causal and causal, dh 64 and an odd dh */
    const int dhs[] = {64, 24, 20};
    for (int di = 0; di < 3; di++) {
        const int dh = dhs[di], nk = 300, nq = 37;
        float *q = malloc(sizeof(float) * nq * dh), *K = malloc(sizeof(float) * nk * dh);
        float *V = malloc(sizeof(float) * nk * dh), *o = malloc(sizeof(float) * nq * dh), ref[128];
        const int ldk = vec_attention_ldk(nk);
        float *Kt = calloc((size_t)dh * ldk, sizeof(float));
        for (int i = 0; i < nq * dh; i++) q[i] = frand() * 0.5f;
        for (int i = 0; i < nk * dh; i++) K[i] = frand() * 3.0f, V[i] = frand();
        for (int j = 0; j < nk; j++)
            for (int d = 0; d < dh; d++) Kt[(size_t)d * ldk + j] = K[(size_t)j * dh + d];
        for (int causal = 0; causal < 2; causal++) {
            const int pos0 = 200;
            vec_attention(q, dh, Kt, ldk, V, dh, nk, dh, nq, causal, pos0, o, dh);
            double err = 0;
            for (int i = 0; i < nq; i++) {
                const int limit = causal ? (pos0 + i + 1 < nk ? pos0 + i + 1 : nk) : nk;
                ref_attention(q + i * dh, K, V, nk, dh, limit, ref);
                for (int d = 0; d < dh; d++) err = fmax(err, fabs(ref[d] - o[i * dh + d]));
            }
            CHECK(err < 2e-5, "attention dh=%d causal=%d max error %.3g", dh, causal, err);
            printf("attention dh=%d causal=%d max abs error %.3g\n", dh, causal, err);
        }
        free(q), free(K), free(Kt), free(V), free(o);
    }

    /* GELU vs erf */
    static float g[4099];
    double gerr = 0;
    for (int i = 0; i < 4099; i++) g[i] = (i - 2049) / 256.0f;
    vec_gelu(g, 4099);
    for (int i = 0; i < 4099; i++) {
        const double v = (i - 2049) / 256.0;
        gerr = fmax(gerr, fabs(g[i] - 0.5 * v * (1 + erf(v / sqrt(2.0)))));
    }
    CHECK(gerr < 5e-6, "gelu max error %.3g", gerr);
    printf("gelu max abs error %.3g\n", gerr);

    /* LayerNorm */
    float ln_x[384], ln_y[384], gam[384], bet[384];
    for (int i = 0; i < 384; i++) ln_x[i] = frand() * 10 + 3, gam[i] = frand(), bet[i] = frand();
    vec_layernorm(ln_x, gam, bet, 384, ln_y);
    double mean = 0, var = 0, lerr = 0;
    for (int i = 0; i < 384; i++) mean += ln_x[i];
    mean /= 384;
    for (int i = 0; i < 384; i++) var += (ln_x[i] - mean) * (ln_x[i] - mean);
    var /= 384;
    for (int i = 0; i < 384; i++)
        lerr = fmax(lerr, fabs(ln_y[i] - ((ln_x[i] - mean) / sqrt(var + 1e-5) * gam[i] + bet[i])));
    CHECK(lerr < 1e-5, "layernorm max error %.3g", lerr);

    /* Thread pool: every task exactly once, for several pool sizes and job sizes */
    for (int th = 1; th <= 4; th++) {
        steno_pool *p;
        CHECK(steno_pool_create(th, &p) == STENO_OK, "pool create");
        for (int rep = 0; rep < 3000; rep++) { /* many short jobs back to back: the race between a late worker and the next job */
            int hits[64] = {0};
            const int n = 1 + rep % 64;
            steno_pool_run(p, count_task, hits, n);
            int ok = 1;
            for (int i = 0; i < 64; i++) ok &= hits[i] == (i < n);
            CHECK(ok, "pool %d threads: job of %d tasks not run exactly once each", th, n);
        }
        steno_pool_free(p);
    }

    int rc = test_summary(simd ? "test_kernels (simd)" : "test_kernels (scalar)");
    if (simd && argc < 2) { /* run the scalar kernels too */
        setenv("STENO_NO_SIMD", "1", 1);
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "scalar", (char *)NULL);
        perror("exec");
        return 1;
    }
    return rc;
}
