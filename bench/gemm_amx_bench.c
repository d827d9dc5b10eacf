/* gemm_amx_bench.c — the AMX-BF16 kernels (kernels/gemm/gemm_amx_bf16x3.h, attention_amx.h) against what the
 * fast path runs without them, one thread, interleaved, best of REPS:
 *   gemm T K N REPS   y [T][N] = x [T][K] Wᵀ with W float16: the fast path's per-chunk float32
 *                     widening + OpenBLAS sgemm against gemm_amx_split + pack + gemm_amx_mul (ms,
 *                     and the AMX part alone), and the largest difference between the two
 *   attn T REPS       one encoder head (T × T, head_dim 64): vec_attention's whole-row path against
 *                     pack + att_amx_rows over all query blocks (ms per head)
 *
 *   cc -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/gemm_amx_bench.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lcurl -lm -lpthread -o /tmp/gemm_amx_bench
 *   OPENBLAS_NUM_THREADS=1 /tmp/gemm_amx_bench gemm 1500 384 256 5; /tmp/gemm_amx_bench attn 1500 5
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/attention/attention_amx.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "kernels/gemv/vec.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) exit(2);
    memset(p, 0, bytes);
    return p;
}

static float frand(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

static int bench_gemm(int T, int K, int N, int reps) {
    float *x = xalloc(4 * (size_t)T * K), *w = xalloc(4 * (size_t)N * K);
    float *y0 = xalloc(4 * (size_t)T * N), *y1 = xalloc(4 * (size_t)T * N);
    uint16_t *W = xalloc(2 * (size_t)N * K);
    for (size_t i = 0; i < (size_t)T * K; i++) x[i] = frand();
    for (size_t i = 0; i < (size_t)N * K; i++) vec_f32_to_f16(&(float){frand() * 0.1f}, &W[i], 1);
    const int Tp = gemm_amx_rows(T);
    uint16_t *xh = xalloc(2 * (size_t)Tp * K), *xl = xalloc(2 * (size_t)Tp * K);
    uint16_t *bh = xalloc(2 * gemm_amx_b_halves(K, N)), *bl = xalloc(2 * gemm_amx_b_halves(K, N));
    double best_s = 1e9, best_a = 1e9, best_m = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        vec_f16_to_f32(W, w, (size_t)N * K);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, K, 1.0f, x, K, w, K, 0.0f, y0, N);
        double t1 = now();
        gemm_amx_split(x, K, K, 0, T, xh, xl);
        gemm_amx_pack_f16(W, K, 0, N, bh, bl);
        double t2 = now();
        gemm_amx_mul(xh, xl, T, K, bh, bl, N, NULL, y1, N);
        double t3 = now();
        if (t1 - t0 < best_s) best_s = t1 - t0;
        if (t3 - t1 < best_a) best_a = t3 - t1;
        if (t3 - t2 < best_m) best_m = t3 - t2;
    }
    double md = 0.0;
    for (size_t i = 0; i < (size_t)T * N; i++) md = fmax(md, fabs((double)y0[i] - y1[i]));
    const double gmac = (double)T * N * K * 1e-9;
    printf("gemm T=%d K=%d N=%d: sgemm %.3f ms (%.0f GMAC/s), amx %.3f ms (%.0f GMAC/s; the product alone %.3f ms), "
           "max |difference| %.3g\n",
           T, K, N, best_s * 1e3, gmac / best_s, best_a * 1e3, gmac / best_a, best_m * 1e3, md);
    return 0;
}

static int bench_attn(int T, int reps) {
    const int dh = 64, ldk = vec_attention_ldk(T), Tp = gemm_amx_rows(T);
    float *q = xalloc(4 * (size_t)Tp * dh), *kt = xalloc(4 * (size_t)dh * ldk), *v = xalloc(4 * (size_t)T * dh);
    float *o0 = xalloc(4 * (size_t)T * dh), *o1 = xalloc(4 * (size_t)Tp * dh);
    for (size_t i = 0; i < (size_t)T * dh; i++) q[i] = frand() * 0.5f, v[i] = frand();
    for (int d = 0; d < dh; d++)
        for (int j = 0; j < T; j++) kt[(size_t)d * ldk + j] = frand() * 0.5f;
    const size_t hh = att_amx_head_halves(T, dh);
    uint16_t *qh = xalloc(2 * (size_t)Tp * dh), *ql = xalloc(2 * (size_t)Tp * dh);
    uint16_t *kh = xalloc(2 * hh), *kl = xalloc(2 * hh), *vh = xalloc(2 * hh), *vl = xalloc(2 * hh);
    void *scratch = xalloc(att_amx_scratch_bytes(T));
    double best_f = 1e9, best_a = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        vec_attention(q, dh, kt, ldk, v, dh, T, dh, T, 0, 0, o0, dh);
        double t1 = now();
        gemm_amx_split(q, dh, dh, 0, T, qh, ql);
        att_amx_pack_head(kt, ldk, v, dh, T, dh, kh, kl, vh, vl);
        for (int q0 = 0; q0 < T; q0 += 32)
            att_amx_rows(qh + (size_t)q0 * dh, ql + (size_t)q0 * dh, dh, T - q0 < 32 ? T - q0 : 32, T, dh, kh, kl, vh,
                         vl, scratch, o1 + (size_t)q0 * dh, dh);
        double t2 = now();
        if (t1 - t0 < best_f) best_f = t1 - t0;
        if (t2 - t1 < best_a) best_a = t2 - t1;
    }
    double md = 0.0;
    for (size_t i = 0; i < (size_t)T * dh; i++) md = fmax(md, fabs((double)o0[i] - o1[i]));
    printf("attn T=%d dh=%d: float32 rows %.3f ms, amx %.3f ms per head, max |difference| %.3g\n", T, dh,
           best_f * 1e3, best_a * 1e3, md);
    return 0;
}

int main(int argc, char **argv) {
    vec_init();
    if (!gemm_amx_available()) {
        fprintf(stderr, "gemm_amx_bench: no AMX-BF16 tiles on this CPU or kernel\n");
        return 1;
    }
    if (argc == 6 && !strcmp(argv[1], "gemm")) return bench_gemm(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (argc == 4 && !strcmp(argv[1], "attn")) return bench_attn(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: gemm_amx_bench gemm T K N REPS | attn T REPS\n");
    return 2;
}
