/* gemm_rows.c — does OpenBLAS's sgemm give a row the same bits whatever the number of rows M in
 * the call? The fast path's encoder GEMMs (whisper/nn/fast_gemm.c gemm_task) cut the time steps into a
 * fixed grid of row blocks so that the answer does not matter for thread invariance; this checks
 * the property for the shapes of Whisper's encoder and prints, per shape, which row-block sizes
 * give bits different from one call over all rows (and a split over 64-column chunks), and the
 * GFLOP/s of each block size on one thread.
 *
 *   cc -O2 bench/gemm_rows.c -lopenblas -o /tmp/gemm_rows
 *   OPENBLAS_CORETYPE=SkylakeX /tmp/gemm_rows 1500 512 2048     # T N K; also Haswell, Prescott
 *
 * Measured (OpenBLAS 0.3.21, Emerald Rapids VM, T 1500 and every encoder width of tiny/base):
 * SkylakeX differs at most for calls of fewer than 8 rows (its small-matrix kernel) and runs
 * 127 GFLOP/s in 128-row calls, 139 in 192, 150 in 750; Haswell and Prescott differ for most block
 * sizes, so only a grid fixed independently of the thread count keeps their bits. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* y = x Wᵀ + b over row blocks of rb rows, the bias preloaded (beta = 1), as gemm_task does */
static void blocks(const float *x, const float *W, const float *b, float *y, int T, int N, int K, int rb) {
    for (int r0 = 0; r0 < T; r0 += rb) {
        const int r1 = r0 + rb < T ? r0 + rb : T;
        for (int r = r0; r < r1; r++) memcpy(y + (size_t)r * N, b, sizeof(float) * N);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, N, K, 1.0f, x + (size_t)r0 * K, K, W, K, 1.0f,
                    y + (size_t)r0 * N, N);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: gemm_rows T N K\n");
        return 2;
    }
    const int T = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
    if (T <= 0 || N <= 0 || K <= 0) {
        fprintf(stderr, "gemm_rows: T, N and K must be positive\n");
        return 2;
    }
    openblas_set_num_threads(1);
    float *x = malloc(sizeof(float) * T * K), *W = malloc(sizeof(float) * N * K), *b = malloc(sizeof(float) * N);
    float *y0 = malloc(sizeof(float) * T * N), *y = malloc(sizeof(float) * T * N);
    if (!x || !W || !b || !y0 || !y) return 1;
    unsigned s = 1;
    for (size_t i = 0; i < (size_t)T * K; i++) x[i] = ((s = s * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    for (size_t i = 0; i < (size_t)N * K; i++) W[i] = ((s = s * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    for (int i = 0; i < N; i++) b[i] = 0.01f * i;
    blocks(x, W, b, y0, T, N, K, T);
    const int rbs[] = {1, 2, 3, 7, 8, 16, 31, 64, 100, 128, 192, 256, 384, 750};
    for (size_t q = 0; q < sizeof rbs / sizeof *rbs; q++) {
        const int rb = rbs[q];
        double best = 1e30;
        for (int r = 0; r < 3; r++) {
            const double t0 = now();
            blocks(x, W, b, y, T, N, K, rb);
            const double t = now() - t0;
            if (t < best) best = t;
        }
        printf("T %d N %d K %d, %3d-row calls: %s, %.1f GFLOP/s\n", T, N, K, rb,
               memcmp(y, y0, sizeof(float) * T * N) ? "DIFFERENT bits" : "same bits", 2.0 * T * N * K / best / 1e9);
    }
    for (int r = 0; r < T; r++) memcpy(y + (size_t)r * N, b, sizeof(float) * N);
    for (int c0 = 0; c0 < N; c0 += 64)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N - c0 < 64 ? N - c0 : 64, K, 1.0f, x, K,
                    W + (size_t)c0 * K, K, 1.0f, y + c0, N);
    printf("T %d N %d K %d, 64-column calls: %s\n", T, N, K, memcmp(y, y0, sizeof(float) * T * N) ? "DIFFERENT bits" : "same bits");
    free(x), free(W), free(b), free(y0), free(y);
    return 0;
}
