/* Kernels of the fast path against plain reference loops: GEMV over f16 and f32 weights (and
 * their bit-identity), fused attention (streaming softmax) against explicit softmax attention,
 * causal bounds, GELU against erf, LayerNorm, f32→f16 rounding, and the thread pool. Runs the
 * SIMD kernels when the CPU has them and the scalar ones with STENO_NO_SIMD=1 (all are run: the
 * test re-executes itself with STENO_NO_AVX512=1 on an AVX-512 CPU, then with the scalar kernels). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/fp16.h"
#include "core/threadpool.h"
#include "kernels/gemv/vec.h"
#include "test_util.h"
#include "rng.h"

static uint64_t g_rng = 88172645463325252ull;
static float frand(void) { return (float)rng_unit53(rng_xorshift64(&g_rng)) * 2.0f - 1.0f; }

static void ref_attention(const float *q, const float *K, const float *V, int nk, int dh, int limit, float *out) {
    double s[4096], mx = -INFINITY, sum = 0;
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
    printf("kernels: %s\n", vec_isa_name());

    /* GEMV: f16 weights vs the same values in f32 → identical; vs double reference → close.
     * Cases: a row length off the 32-column step (tail loops), the scaled-integer f16 form (384),
     * inputs too large for that form (|x| >= 2^15: the vcvtph2ps form), and subnormal halves. */
    enum { R = 203, NMAX = 388 };
    static float W32[R * NMAX], x[NMAX], y16[R], y32[R], b[R];
    static uint16_t W16[R * NMAX];
    const struct { int n; float xscale, wscale; } gcase[] = {{388, 1, 1}, {384, 1, 1}, {384, 40000, 1}, {384, 1, 1e-5f}};
    for (size_t c = 0; c < sizeof gcase / sizeof gcase[0]; c++) {
        const int N = gcase[c].n;
        for (int i = 0; i < R * N; i++) W32[i] = frand() * gcase[c].wscale;
        vec_f32_to_f16(W32, W16, R * N);
        int subnormal = 0;
        for (int i = 0; i < R * N; i++) {
            W32[i] = steno_fp16_to_f32(W16[i]);
            subnormal += (W16[i] & 0x7c00) == 0 && (W16[i] & 0x3ff) != 0;
        }
        for (int i = 0; i < N; i++) x[i] = frand() * gcase[c].xscale;
        for (int i = 0; i < R; i++) b[i] = frand();
        vec_gemv(VEC_F16, W16, b, x, N, 0, R, y16);
        vec_gemv(VEC_F32, W32, b, x, N, 0, 100, y32);
        vec_gemv(VEC_F32, W32, b, x, N, 100, R, y32);
        double max_err = 0;
        for (int r = 0; r < R; r++) {
            double ref = b[r];
            for (int k = 0; k < N; k++) ref += (double)W32[r * N + k] * x[k];
            max_err = fmax(max_err, fabs(ref - y32[r]) / (gcase[c].xscale * gcase[c].wscale > 1 ? gcase[c].xscale : 1));
            CHECK(memcmp(&y16[r], &y32[r], 4) == 0, "gemv n %d case %zu row %d: f16 %.9g != f32 %.9g", N, c, r,
                  y16[r], y32[r]);
        }
        CHECK(max_err < 1e-4, "gemv n %d case %zu: max error %.3g", N, c, max_err);
        printf("gemv n %d, |x| <= %g, |w| <= %g (%d subnormal halves): f16 == f32 bit for bit, max abs error vs float64 %.3g\n",
               N, gcase[c].xscale, gcase[c].wscale, subnormal, max_err);
        if (gcase[c].wscale < 1) CHECK(subnormal > 1000, "case %zu: only %d subnormal halves", c, subnormal);
    }

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

    /* Cross-attention over float16 keys and values in lane order: the conversion against
     * vec_f32_to_f16 plus vec_lane_slot, the kernel against explicit softmax over the rounded
     * values, a query too large for the scaled form (scalar fallback), and one query at a time
     * giving the same bits as all at once */
    const struct { int dh, nk; float qscale; } fcase[] = {{64, 1500, 0.5f}, {32, 300, 0.5f}, {64, 77, 40000.0f}};
    for (size_t c = 0; c < sizeof fcase / sizeof fcase[0]; c++) {
        const int dh = fcase[c].dh, nk = fcase[c].nk, nq = 5, ldk = vec_attention_ldk(nk);
        float *q = malloc(sizeof(float) * nq * dh), *K = malloc(sizeof(float) * nk * dh);
        float *V = malloc(sizeof(float) * nk * dh), *o = malloc(sizeof(float) * nq * dh), ref[128], o1[256];
        float *Kt = calloc((size_t)dh * ldk, sizeof(float));
        uint16_t *Kt16 = malloc(sizeof(uint16_t) * dh * ldk), *V16 = malloc(sizeof(uint16_t) * nk * dh);
        for (int i = 0; i < nq * dh; i++) q[i] = frand() * (i % dh == 0 ? fcase[c].qscale : 0.5f);
        for (int i = 0; i < nk * dh; i++) K[i] = frand() * 3.0f, V[i] = frand();
        for (int j = 0; j < nk; j++)
            for (int d = 0; d < dh; d++) Kt[(size_t)d * ldk + j] = K[(size_t)j * dh + d];
        vec_pack_keys_f16(Kt, ldk, dh, nk, Kt16);
        vec_f32_to_f16_lanes(V, V16, (size_t)nk * dh);
        int lanes_ok = 1;
        for (int d = 0; d < dh; d++)
            for (int j = 0; j < ldk; j++) {
                uint16_t h;
                vec_f32_to_f16(&Kt[(size_t)d * ldk + j], &h, 1);
                lanes_ok &= Kt16[((size_t)(j >> 4) * dh + d) * 16 + vec_lane_slot(j & 15)] == h;
            }
        for (int i = 0; i < nk * dh; i++) {
            uint16_t h;
            vec_f32_to_f16(&V[i], &h, 1);
            lanes_ok &= V16[vec_lane_slot(i)] == h;
        }
        CHECK(lanes_ok, "vec_pack_keys_f16 / vec_f32_to_f16_lanes: a half is not where vec_lane_slot puts it");
        for (int i = 0; i < nk * dh; i++) { /* the reference sees the rounded values */
            uint16_t h;
            vec_f32_to_f16(&K[i], &h, 1);
            K[i] = steno_fp16_to_f32(h);
            vec_f32_to_f16(&V[i], &h, 1);
            V[i] = steno_fp16_to_f32(h);
        }
        vec_attention_f16(q, dh, Kt16, V16, dh, nk, dh, nq, o, dh);
        double err = 0;
        int same = 1;
        for (int i = 0; i < nq; i++) {
            ref_attention(q + i * dh, K, V, nk, dh, nk, ref);
            for (int d = 0; d < dh; d++) err = fmax(err, fabs(ref[d] - o[i * dh + d]));
            vec_attention_f16(q + i * dh, dh, Kt16, V16, dh, nk, dh, 1, o1, dh);
            same &= memcmp(o1, o + i * dh, sizeof(float) * dh) == 0;
        }
        CHECK(err < 2e-5, "f16 attention dh=%d nk=%d max error %.3g", dh, nk, err);
        CHECK(same, "f16 attention dh=%d nk=%d: one query at a time differs from all at once", dh, nk);
        printf("f16 attention dh=%d nk=%d |q| <= %g: max abs error %.3g vs explicit softmax over the halves\n", dh, nk,
               fcase[c].qscale, err);
        free(q), free(K), free(Kt), free(V), free(o), free(Kt16), free(V16);
    }

    /* Logit screen: |exact f16 GEMV − screened value| <= the bound, on rows with outliers and
     * inputs with outlier blocks; vec_gemv_f16_rows bit-identical to vec_gemv */
    {
        enum { SR = 300, SN = 384 };
        static uint16_t w16[SR * SN];
        static float wf[SR * SN], xs_[SN], exact[SR], z[SR], hi[SR], y2[SR], allow[SR], sbv[SN / 32];
        static int8_t q[SR * SN], qx[SN];
        static uint8_t ax[SN];
        static float ss[SR], sg[SR], scc[SR];
        for (int i = 0; i < SR * SN; i++) wf[i] = frand() * 0.05f * (i % 97 == 0 ? 20.0f : 1.0f);
        vec_f32_to_f16(wf, w16, SR * SN);
        for (int r = 0; r < SR; r++) vec_screen_build_row(w16 + r * SN, SN, q + r * SN, &ss[r], &sg[r], &scc[r]);
        const vec_screen_rows rowsq = {q, ss, sg, scc};
        int ok = 1, rows_ok = 1, best_ok = 1;
        double worst = 0, mean_b = 0;
        for (int trial = 0; trial < 20; trial++) {
            for (int k = 0; k < SN; k++) xs_[k] = frand() * (k / 32 == trial % 12 ? 30.0f : 2.0f);
            vec_gemv(VEC_F16, w16, NULL, xs_, SN, 0, SR, exact);
            vec_screen_x sx = {qx, ax, sbv, 0, 0};
            vec_screen_prepare(xs_, SN, &sx);
            for (int r = 0; r < SR; r++) allow[r] = r % 3 ? 0.0f : -INFINITY;
            const float best_lo = vec_screen_i8(&rowsq, &sx, SN, 0, SR, allow, z, hi);
            float best_exact = -INFINITY;
            for (int r = 0; r < SR; r++) {
                const double b = hi[r] - z[r];
                ok &= fabs((double)exact[r] - z[r]) <= b;
                worst = fmax(worst, fabs((double)exact[r] - z[r]) / b);
                mean_b += b / (20.0 * SR);
                if (allow[r] == 0.0f) best_exact = fmaxf(best_exact, exact[r]);
            }
            best_ok &= best_lo <= best_exact;
            int list[SR], cnt = 0;
            for (int r = 0; r < SR; r += 1 + trial % 3) list[cnt++] = r;
            vec_gemv_f16_rows(w16, xs_, SN, list, cnt, y2);
            for (int i = 0; i < cnt; i++) rows_ok &= memcmp(&y2[list[i]], &exact[list[i]], sizeof(float)) == 0;
        }
        CHECK(ok, "screen: an exact value outside its bound");
        CHECK(best_ok, "screen: the best lower bound exceeds the best allowed exact value");
        CHECK(rows_ok, "vec_gemv_f16_rows differs from vec_gemv");
        printf("logit screen: 20 inputs x %d rows, every exact value within its bound (mean bound %.3g, largest "
               "|error|/bound %.2f); listed rows bit-identical to vec_gemv\n", SR, mean_b, worst);
    }

    /* GELU vs erf, x in [-8, 8] by 1/256, then [-40, 40] by 1/64 (past the −80 clamp of
     * exp(−x²/2) at |x| > 12.65: from there GELU is exactly x, or −0 below zero) */
    static float g[4099], g2[5121];
    double gerr = 0;
    for (int i = 0; i < 4099; i++) g[i] = (i - 2049) / 256.0f;
    vec_gelu(g, 4099);
    for (int i = 0; i < 4099; i++) {
        const double v = (i - 2049) / 256.0;
        gerr = fmax(gerr, fabs(g[i] - 0.5 * v * (1 + erf(v / sqrt(2.0)))));
    }
    CHECK(gerr < 5e-6, "gelu max error %.3g", gerr);
    for (int i = 0; i < 5121; i++) g2[i] = (i - 2560) / 64.0f;
    vec_gelu(g2, 5121);
    int tails = 1;
    for (int i = 0; i < 5121; i++) {
        const double v = (i - 2560) / 64.0;
        gerr = fmax(gerr, fabs(g2[i] - 0.5 * v * (1 + erf(v / sqrt(2.0)))));
        if (v >= 13.0) tails &= g2[i] == (float)v;
        if (v <= -13.0) tails &= g2[i] == 0.0f && signbit(g2[i]);
    }
    CHECK(gerr < 5e-6, "gelu max error %.3g over [-40, 40]", gerr);
    CHECK(tails, "gelu: not exactly x above 13, -0 below -13");
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

    char name[64];
    snprintf(name, sizeof name, "test_kernels (%s)", vec_isa_name());
    int rc = test_summary(name);
    if (rc == 0 && simd && argc < 2 && strcmp(vec_isa_name(), "avx512") == 0) { /* the AVX2 kernels too */
        setenv("STENO_NO_AVX512", "1", 1);
        fflush(stdout);
        execl("/proc/self/exe", argv[0], (char *)NULL);
        perror("exec");
        return 1;
    }
    if (rc == 0 && simd && argc < 2) { /* then the scalar kernels */
        setenv("STENO_NO_SIMD", "1", 1);
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "scalar", (char *)NULL);
        perror("exec");
        return 1;
    }
    return rc;
}
