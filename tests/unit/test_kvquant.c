/* test_kvquant.c — the quantized KV-cache codecs (kernels/quant/kvquant.h) and attention over them.
 *
 *  1. Walsh–Hadamard: orthonormal (H/√n equals the Sylvester matrix (-1)^popcount(i&j)/√n applied to
 *     every basis vector, norms preserved), its own inverse, and the TurboQuant rotation round trip
 *     within 1e-6 for n = 32..1024.
 *  2. Lloyd-Max codebooks: the quantization MSE of the unit Gaussian, integrated numerically
 *     (Simpson, 2^20 intervals on [-12, 12]), matches Max's values 0.3634, 0.1175, 0.03455, 0.009497
 *     for 1–4 bits within 1%; every centroid is the conditional mean of its cell (within 1e-4).
 *  3. Bit packing: pack/unpack round trip for every width 1..8 and lengths 1..300, and MLX's word
 *     layout for 4 and 8 bits (element j of a uint32 at bits j·bits).
 *  4. Affine groups: |x − decode(encode(x))| ≤ one step (max−min)/(2^bits−1) (MLX's zero snapping can
 *     clip the far edge by up to a step) + the f16 rounding of scale and bias,
 *     for 4/8 bits and groups 32/64/head_dim; TQV: relative MSE of Gaussian vectors close to the
 *     codebook's (rotation makes coordinates ~N(0,1)).
 *  5. Attention over quantized caches (affine q8/q4, TurboQuant 2/3/4 bits; plain and rotating
 *     layouts, GQA, several queries per update, ggml and llama2c numerics) equals attention over a
 *     float32 cache holding the decoded rows within 2e-5, and is bit-identical for 1 and 3 threads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "kernels/attention/attention.h"
#include "kernels/quant/kvquant.h"
#include "kernels/gemm/matmul.h"
#include "kernels/quant/quant.h"
#include "llm/kvcache.h"
#include "test_util.h"
#include "rng.h"

static uint64_t g_rng = 0x1234567u;
static double urand(void) { /* in (0, 1): log() needs no 0 */
    return ((double)(rng_xorshift64(&g_rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static float gauss(void) { return (float)(sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand())); }

static void test_wht(void) {
    for (int n = 32; n <= 1024; n *= 2) {
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        /* basis vectors: column j of H/√n */
        double maxd = 0;
        for (int j = 0; j < n; j += (n / 32)) {
            memset(x, 0, n * sizeof(float));
            x[j] = 1.0f;
            steno_wht(x, n);
            for (int i = 0; i < n; i++) {
                double want = (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) / sqrt((double)n);
                maxd = fmax(maxd, fabs(x[i] - want));
            }
        }
        CHECK(maxd < 1e-7, "WHT n=%d differs from Sylvester's H/sqrt(n) by %g", n, maxd);
        /* round trips and norms */
        double e1 = 0, e2 = 0, en = 0;
        for (int r = 0; r < 20; r++) {
            double n0 = 0, n1 = 0;
            for (int i = 0; i < n; i++) {
                x[i] = y[i] = gauss();
                n0 += (double)x[i] * x[i];
            }
            steno_wht(x, n);
            for (int i = 0; i < n; i++) n1 += (double)x[i] * x[i];
            en = fmax(en, fabs(n1 - n0) / n0);
            steno_wht(x, n);
            for (int i = 0; i < n; i++) e1 = fmax(e1, fabs(x[i] - y[i]));
            steno_tq_rotate(x, n);
            steno_tq_unrotate(x, n);
            for (int i = 0; i < n; i++) e2 = fmax(e2, fabs(x[i] - y[i]));
        }
        CHECK(e1 <= 1e-6, "WHT n=%d: round trip error %g", n, e1);
        CHECK(e2 <= 1e-6, "TurboQuant rotation n=%d: round trip error %g", n, e2);
        CHECK(en <= 1e-6, "WHT n=%d: relative norm change %g", n, en);
        free(x);
        free(y);
    }
    int plus = 0;
    for (int i = 0; i < 1024; i++) plus += steno_tq_sign(i) > 0;
    CHECK(plus > 412 && plus < 612, "random signs are not balanced: %d of 1024 positive", plus);
    printf("wht: orthonormal, round trip within 1e-6 for n = 32..1024\n");
}

static double npdf(double x) { return exp(-0.5 * x * x) / sqrt(2 * M_PI); }

static void test_codebook(void) {
    static const double max_mse[5] = {0, 0.3634, 0.1175, 0.03455, 0.009497};
    for (int bits = 1; bits <= 4; bits++) {
        const float *cb = steno_lloyd_max_codebook(bits);
        const int K = 1 << bits;
        for (int k = 1; k < K; k++) CHECK(cb[k] > cb[k - 1], "codebook %d not increasing", bits);
        /* Simpson's rule for E[(X - Q(X))^2] and each cell's mass and first moment */
        const int N = 1 << 20;
        const double a = -12, b = 12, h = (b - a) / N;
        double mse = 0, mass[16] = {0}, mom[16] = {0};
        for (int i = 0; i <= N; i++) {
            const double x = a + i * h, w = (i == 0 || i == N) ? 1 : (i & 1) ? 4 : 2;
            const int c = steno_lloyd_max_index(bits, (float)x);
            const double e = x - cb[c], f = w * npdf(x);
            mse += f * e * e;
            mass[c] += f;
            mom[c] += f * x;
        }
        mse *= h / 3;
        const double rel = fabs(mse - max_mse[bits]) / max_mse[bits];
        CHECK(rel < 0.01, "%d-bit codebook: MSE %.6f vs Max's %.6f (%.2f%%)", bits, mse, max_mse[bits], 100 * rel);
        double worst = 0;
        for (int k = 0; k < K; k++) worst = fmax(worst, fabs(mom[k] / mass[k] - cb[k]));
        CHECK(worst < 1e-4, "%d-bit codebook: a centroid is %g from its cell's mean", bits, worst);
        printf("lloyd-max %d bit%s: MSE %.6f (Max 1960: %.6f), centroid condition within %.1e\n", bits,
               bits > 1 ? "s" : "", mse, max_mse[bits], worst);
    }
    CHECK(steno_lloyd_max_codebook(0) == NULL && steno_lloyd_max_codebook(5) == NULL, "codebook bounds");
}

static void test_pack(void) {
    uint8_t codes[300], back[300];
    uint32_t words[300];
    int bad = 0;
    for (int bits = 1; bits <= 8; bits++)
        for (int n = 1; n <= 300; n += (n < 40 ? 1 : 13)) {
            for (int i = 0; i < n; i++) codes[i] = (uint8_t)(urand() * (1 << bits));
            const int nw = (n * bits + 31) / 32;
            memset(words, 0xAB, sizeof words);
            steno_pack_bits(codes, n, bits, words);
            CHECK(words[nw] == 0xABABABABu, "pack wrote past %d words (bits %d, n %d)", nw, bits, n);
            steno_unpack_bits(words, n, bits, back);
            if (memcmp(codes, back, (size_t)n)) bad++;
        }
    CHECK(bad == 0, "%d pack/unpack round trips failed", bad);
    /* MLX's layout: element j of a word at bits j*bits */
    for (int i = 0; i < 8; i++) codes[i] = (uint8_t)(i + 1);
    steno_pack_bits(codes, 8, 4, words);
    CHECK(words[0] == 0x87654321u, "4-bit packing %08x, want 87654321", words[0]);
    steno_pack_bits(codes, 4, 8, words);
    CHECK(words[0] == 0x04030201u, "8-bit packing %08x, want 04030201", words[0]);
    printf("pack: round trips for bits 1..8, MLX word layout\n");
}

static void test_codecs(void) {
    const int D = 128;
    float x[128], y[128];
    static const int groups[3] = {32, 64, 128};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int gi = 0; gi < 3; gi++) {
            steno_kvq_fmt f = {STENO_KVQ_AFFINE, bits, groups[gi], D, 0};
            CHECK(steno_kvq_check(&f, NULL) == 0, "format rejected");
            uint8_t buf[1024];
            CHECK(steno_kvq_head_bytes(&f) == (size_t)D * bits / 8 + 4 * (D / groups[gi]), "head bytes");
            double worst = 0;
            for (int r = 0; r < 50; r++) {
                const float off = (float)(urand() * 4 - 2), sc = (float)(0.1 + urand() * 10);
                for (int i = 0; i < D; i++) x[i] = off + sc * gauss();
                if (r == 0) x[5] = 0.0f;
                steno_kvq_encode(&f, x, buf);
                steno_kvq_decode(&f, buf, y, 0);
                for (int g = 0; g < D / f.group; g++) {
                    float mx = -INFINITY, mn = INFINITY;
                    for (int j = 0; j < f.group; j++) {
                        mx = fmaxf(mx, x[g * f.group + j]);
                        mn = fminf(mn, x[g * f.group + j]);
                    }
                    /* MLX snaps the bias so that 0 is representable (scale = edge / round(edge / scale)),
                     * which can shorten the range by up to one step at the far edge, where values are
                     * clipped: error <= 1 step; plus f16 rounding of the bias (|edge|·2^-11) and of the
                     * scale (·2^-11·nbins) */
                    const double step = (mx - mn) / ((1 << bits) - 1);
                    const double tol = step + fmax(fabs(mx), fabs(mn)) / 2048.0 + step * ((1 << bits) - 1) / 2048.0 +
                                       1e-6;
                    for (int j = 0; j < f.group; j++)
                        worst = fmax(worst, fabs(x[g * f.group + j] - y[g * f.group + j]) / tol);
                }
            }
            CHECK(worst <= 1.0, "affine %d bits group %d: error %.3f of the bound", bits, f.group, worst);
        }
    /* rotated affine (kvquant.h, rotate = 1): the codes are those of the rotated vector, decode(…, 1)
     * stays in the rotated domain, decode(…, 0) un-rotates; with outlier channels the rotation must
     * cut the error (it spreads an outlier over the whole head instead of stretching one group) */
    for (int bits = 4; bits <= 8; bits += 4) {
        steno_kvq_fmt plain = {STENO_KVQ_AFFINE, bits, 32, D, 0}, rot = plain;
        rot.rotate = 1;
        CHECK(steno_kvq_check(&rot, NULL) == 0, "rotated format rejected");
        steno_kvq_fmt odd = {STENO_KVQ_AFFINE, bits, 32, 96, 1};
        CHECK(steno_kvq_check(&odd, NULL) != 0, "rotated affine with head_dim 96 accepted");
        uint8_t b1[1024], b2[1024];
        double e_plain = 0, e_rot = 0;
        for (int r = 0; r < 100; r++) {
            for (int i = 0; i < D; i++) x[i] = gauss() * (1 + (i % 19 == 3) * 20) + 0.5f;
            float xr[128];
            memcpy(xr, x, sizeof xr);
            steno_tq_rotate(xr, D);
            steno_kvq_encode(&rot, x, b1);
            steno_kvq_encode(&plain, xr, b2);
            CHECK(memcmp(b1, b2, steno_kvq_head_bytes(&rot)) == 0, "rotated codes are not the codes of R·x");
            steno_kvq_decode(&rot, b1, y, 0);
            for (int i = 0; i < D; i++) e_rot += (double)(x[i] - y[i]) * (x[i] - y[i]);
            steno_kvq_encode(&plain, x, b2);
            steno_kvq_decode(&plain, b2, y, 0);
            for (int i = 0; i < D; i++) e_plain += (double)(x[i] - y[i]) * (x[i] - y[i]);
        }
        CHECK(e_rot < 0.5 * e_plain, "%d bits: rotation did not cut the error of outlier channels (%g vs %g)", bits,
              e_rot, e_plain);
        printf("affine %d bits, outlier channels: squared error rotated / plain = %.3f\n", bits, e_rot / e_plain);
    }
    for (int bits = 2; bits <= 4; bits++) {
        const int d = 256;
        steno_kvq_fmt f = {STENO_KVQ_TQV, bits, 0, d, 0};
        CHECK(steno_kvq_check(&f, NULL) == 0, "TQV format rejected");
        uint8_t buf[1024];
        float a[256], b[256];
        double err = 0, nrm = 0;
        for (int r = 0; r < 200; r++) {
            for (int i = 0; i < d; i++) a[i] = gauss() * (1 + (i % 7 == 0) * 5); /* non-isotropic input */
            steno_kvq_encode(&f, a, buf);
            steno_kvq_decode(&f, buf, b, 0);
            for (int i = 0; i < d; i++) {
                err += (double)(a[i] - b[i]) * (a[i] - b[i]);
                nrm += (double)a[i] * a[i];
            }
            /* rotated decode = rotation of the un-rotated decode */
            float c[256];
            steno_kvq_decode(&f, buf, c, 1);
            steno_tq_unrotate(c, d);
            double dd = 0;
            for (int i = 0; i < d; i++) dd = fmax(dd, fabs(c[i] - b[i]));
            if (r == 0) CHECK(dd < 1e-5, "TQV rotated decode differs by %g", dd);
        }
        static const double cbm[5] = {0, 0.3634, 0.1175, 0.03455, 0.009497};
        const double rel = err / nrm;
        CHECK(rel > 0.8 * cbm[bits] && rel < 1.25 * cbm[bits], "TQV %d bits: relative MSE %.5f vs codebook %.5f",
              bits, rel, cbm[bits]);
        printf("turboquant values %d bits: relative MSE %.5f (codebook %.5f)\n", bits, rel, cbm[bits]);
    }
    steno_kvq_fmt bad = {STENO_KVQ_TQV, 3, 0, 96, 0};
    const char *why = NULL;
    CHECK(steno_kvq_check(&bad, &why) != 0 && why && strstr(why, "power-of-two"), "non-power-of-two TQV accepted");
    bad = (steno_kvq_fmt){STENO_KVQ_AFFINE, 3, 32, 64, 0};
    CHECK(steno_kvq_check(&bad, &why) != 0, "3-bit affine accepted");
}

/* Attention over a quantized cache vs over an f32 cache holding the decoded rows — and, for the
 * first `sink` positions (attention sinks), the f16-rounded rows themselves. */
/* tr: 1 = keys (and affine values) rotated and keys centered (steno's default), 0 = mlx-lm's codes */
static void attention_case(int quant, int kbits, int vbits, int group, int layout, int llama2c, int sink, int tr,
                           steno_pool *p1, steno_pool *p3) {
    const int NKV = 2, NH = 6, HD = 64, STEPS = layout ? 30 : 70;
    steno_kv_params kp = {layout, STENO_T_F16, NKV, HD, HD, 12, 2, 3, 8, 0, quant, kbits, vbits, group, 0, sink, tr, tr};
    float sink_k[8 * 2 * 64], sink_v[8 * 2 * 64]; /* originals of positions < sink (<= 8) */
    steno_kv_cache *c;
    CHECK(steno_kv_new(&kp, &c) == STENO_OK, "%s", steno_errmsg());
    const int rowk = NKV * HD;
    float *k = malloc(16 * rowk * sizeof(float)), *v = malloc(16 * rowk * sizeof(float));
    float *q = malloc(16 * NH * HD * sizeof(float)), *o1 = malloc(16 * NH * HD * sizeof(float)),
          *o3 = malloc(16 * NH * HD * sizeof(float)), *oref = malloc(16 * NH * HD * sizeof(float));
    float *deck = NULL, *decv = NULL;
    steno_work w1 = {0}, w3 = {0}, wr = {0};
    steno_attn_params ap = {NH, NKV, HD, HD, 1.0f / 8.0f, 8.0f, llama2c, 0, 0.0f};
    double worst = 0;
    int q0 = 0, same_threads = 1;
    for (int step = 0; step < STEPS; step++) {
        const int T = 1 + (step * 5) % 13;
        for (int i = 0; i < T * rowk; i++) {
            k[i] = gauss() * (1 + 3 * (i % 17 == 0)) + (i % 5 == 0 ? 2.0f : 0.0f); /* outliers, a mean */
            v[i] = gauss();
        }
        for (int i = 0; i < T * NH * HD; i++) q[i] = gauss();
        for (int t = 0; t < T && q0 + t < sink; t++)
            for (int i = 0; i < rowk; i++) {
                sink_k[(q0 + t) * rowk + i] = steno_round_f16(k[t * rowk + i]);
                sink_v[(q0 + t) * rowk + i] = steno_round_f16(v[t * rowk + i]);
            }
        steno_kv_view vw;
        CHECK(steno_kv_update_and_fetch(c, k, v, T, &vw) == STENO_OK, "%s", steno_errmsg());
        CHECK(vw.kq && vw.vq, "quantized view lacks formats");
        CHECK((vw.kq->rotate != 0) == (tr != 0) && (vw.k_center != NULL) == (tr && q0 + T > sink),
              "rotation %d / key center %p do not follow the parameters", vw.kq->rotate, (const void *)vw.k_center);
        /* float32 view of the decoded rows */
        deck = realloc(deck, (size_t)vw.n_slots * rowk * sizeof(float));
        decv = realloc(decv, (size_t)vw.n_slots * rowk * sizeof(float));
        for (int s = 0; s < vw.n_slots; s++)
            for (int h = 0; h < NKV; h++) {
                if (vw.pos[s] < 0) continue;
                if (vw.pos[s] < sink) {
                    memcpy(deck + (size_t)s * rowk + h * HD, sink_k + vw.pos[s] * rowk + h * HD, HD * sizeof(float));
                    memcpy(decv + (size_t)s * rowk + h * HD, sink_v + vw.pos[s] * rowk + h * HD, HD * sizeof(float));
                    continue;
                }
                steno_kvq_decode(vw.kq, vw.k + (size_t)s * vw.k_row_bytes + h * steno_kvq_head_bytes(vw.kq),
                                 deck + (size_t)s * rowk + h * HD, 0);
                if (vw.k_center)
                    for (int i = 0; i < HD; i++) deck[(size_t)s * rowk + h * HD + i] += vw.k_center[h * HD + i];
                steno_kvq_decode(vw.vq, vw.v + (size_t)s * vw.v_row_bytes + h * steno_kvq_head_bytes(vw.vq),
                                 decv + (size_t)s * rowk + h * HD, 0);
            }
        steno_kv_view rv = vw;
        rv.kq = rv.vq = NULL;
        rv.dtype = STENO_T_F32;
        rv.k = (const uint8_t *)deck;
        rv.v = (const uint8_t *)decv;
        rv.k_row_bytes = rv.v_row_bytes = (size_t)rowk * 4;
        CHECK(steno_attention(p1, &w1, &ap, q, T, q0, &vw, o1) == 0, "attention failed");
        CHECK(steno_attention(p3, &w3, &ap, q, T, q0, &vw, o3) == 0, "attention failed");
        CHECK(steno_attention(p1, &wr, &ap, q, T, q0, &rv, oref) == 0, "reference attention failed");
        for (int i = 0; i < T * NH * HD; i++) {
            worst = fmax(worst, fabs(o1[i] - oref[i]));
            if (o1[i] != o3[i]) same_threads = 0;
        }
        q0 += T;
    }
    CHECK(worst < 2e-5, "%s k%d v%d g%d %s %s sink %d tr %d: quantized vs dequantized attention differ by %g",
          quant == STENO_KV_Q_AFFINE ? "affine" : "turbo", kbits, vbits, group, layout ? "rotating" : "plain",
          llama2c ? "llama2c" : "ggml", sink, tr, worst);
    CHECK(same_threads, "1 and 3 threads differ");
    printf("attention %s k%d v%d g%d %s %s sink %d rotate+center %d: max |quantized - dequantized| %.2e, "
           "threads identical\n",
           quant == STENO_KV_Q_AFFINE ? "affine" : "turbo", kbits, vbits, group, layout ? "rotating" : "plain",
           llama2c ? "llama2c" : "ggml", sink, tr, worst);
    steno_work_free(&w1);
    steno_work_free(&w3);
    steno_work_free(&wr);
    free(deck);
    free(decv);
    free(k);
    free(v);
    free(q);
    free(o1);
    free(o3);
    free(oref);
    steno_kv_free(c);
}

int main(void) {
    test_wht();
    test_codebook();
    test_pack();
    test_codecs();
    steno_pool *p1, *p3;
    CHECK(steno_pool_create(1, &p1) == STENO_OK && steno_pool_create(3, &p3) == STENO_OK, "pool");
    for (int layout = 0; layout < 2; layout++) {
        attention_case(STENO_KV_Q_AFFINE, 8, 8, 64, layout, 0, 0, 0, p1, p3);
        attention_case(STENO_KV_Q_AFFINE, 4, 4, 32, layout, 0, 0, 0, p1, p3);
        attention_case(STENO_KV_Q_TURBO, 8, 4, 0, layout, 0, 0, 0, p1, p3);
        attention_case(STENO_KV_Q_TURBO, 8, 3, 0, layout, 1, 0, 0, p1, p3);
        attention_case(STENO_KV_Q_TURBO, 4, 2, 0, layout, 0, 0, 0, p1, p3);
        /* attention sinks: the first positions read from their float rows (the rotating layout
         * keeps 2 of them, the others leave the window) */
        attention_case(STENO_KV_Q_AFFINE, 4, 4, 32, layout, 0, 3, 0, p1, p3);
        attention_case(STENO_KV_Q_TURBO, 8, 3, 0, layout, 0, 5, 0, p1, p3);
        /* steno's defaults: rotated keys and affine values, centered keys (with and without sinks) */
        attention_case(STENO_KV_Q_AFFINE, 8, 8, 32, layout, 0, 4, 1, p1, p3);
        attention_case(STENO_KV_Q_AFFINE, 4, 4, 64, layout, 1, 0, 1, p1, p3);
        attention_case(STENO_KV_Q_TURBO, 8, 4, 0, layout, 0, 3, 1, p1, p3);
    }
    steno_pool_free(p1);
    steno_pool_free(p3);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
