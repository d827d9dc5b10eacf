/* attention_bench.c — single-thread throughput of the fast path's fused attention kernel
 * (kernels/gemv/vec.h vec_attention) on the encoder's shape: nq = nk = 1500 positions, head_dim 64,
 * not causal (one head of Whisper's encoder self-attention), and on the decoder's cross-attention
 * shape (nq = 1 query, nk = 1500). Prints the median of R runs in ms and GFLOP/s, counting
 * 4·nq·nk·dh flops (Q·Kᵀ and P·V; the softmax is not counted).
 *
 *   cc -O2 -march=native -Iinclude -Isrc bench/attention_bench.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lm -lpthread -o /tmp/attention_bench && /tmp/attention_bench 15 [encoder|decoder]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/gemv/vec.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(const char *name, int nq, int nk, int dh, int reps) {
    const int ldk = vec_attention_ldk(nk);
    float *q = malloc(sizeof(float) * nq * dh), *Kt = calloc((size_t)dh * ldk, sizeof(float));
    float *V = malloc(sizeof(float) * nk * dh), *o = malloc(sizeof(float) * nq * dh);
    unsigned s = 1;
    for (int i = 0; i < nq * dh; i++) q[i] = ((s = s * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    for (int i = 0; i < dh * ldk; i++) Kt[i] = ((s = s * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    for (int i = 0; i < nk * dh; i++) V[i] = ((s = s * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    double t[64];
    const int inner = nq == 1 ? 1000 : 1;
    for (int r = 0; r < reps; r++) {
        const double a = now();
        for (int i = 0; i < inner; i++) vec_attention(q, dh, Kt, ldk, V, dh, nk, dh, nq, 0, 0, o, dh);
        t[r] = (now() - a) / inner;
    }
    qsort(t, reps, sizeof *t, cmp);
    const double med = t[reps / 2];
    printf("%-28s nq %5d nk %5d dh %3d: median %.3f ms, %.1f GFLOP/s (min %.3f ms)\n", name, nq, nk, dh, med * 1e3,
           4.0 * nq * nk * dh / med * 1e-9, t[0] * 1e3);
    free(q), free(Kt), free(V), free(o);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    printf("kernels: %s\n", vec_init() ? "avx2" : "scalar");
    const char *only = argc > 2 ? argv[2] : "";
    if (only[0] != 'd') run("encoder self-attention", 1500, 1500, 64, reps);
    if (only[0] != 'e') run("decoder cross-attention", 1, 1500, 64, reps);
    return 0;
}
