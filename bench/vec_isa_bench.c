/* vec_isa_bench.c — the Whisper kernels' AVX2 and AVX-512 tables side by side, one thread
 * (the git history of docs/PERFORMANCE.md: "AVX-512 Whisper kernels, and subnormal float16 weights"):
 *   gemv N R NX REPS FRAC   float16 GEMV over R rows of N, NX inputs (vec_gemv_rows' kernel), a
 *                           fraction FRAC of the weight halves subnormal: GMAC/s
 *   panel N R NX REPS       the AVX-512 float16 GEMV of NX inputs from the row kernel and from the
 *                           panel (vec_panel_avx512.c): GMAC/s each, and whether every bit agrees
 *   xattn NQ REPS           the decoder's float16 cross-attention (vec_attention_f16) of NQ queries
 *                           over 1500 keys, head_dim 64 (NQ = 5: one window's beams): µs per call,
 *                           and whether the two tables' outputs agree bit for bit
 *   attn LDK LDV REPS       one encoder head (1500 × 1500, head_dim 64) with key stride LDK and
 *                           value row stride LDV (floats): ms per head
 * Each table twice, interleaved. Needs a CPU with AVX-512 for the second table.
 *
 *   cc -O2 -Iinclude -Isrc bench/vec_isa_bench.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lcurl -lm -lpthread -o /tmp/vec_isa_bench
 *   /tmp/vec_isa_bench gemv 384 51864 20 2 0.004; /tmp/vec_isa_bench attn 1504 1536 10
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cpu.h"
#include "kernels/gemv/vec.h"
#include "kernels/gemv/vec_impl.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float frand(void) { return (float)rand() / (float)RAND_MAX - 0.5f; }

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "gemv") && strcmp(argv[1], "attn") && strcmp(argv[1], "panel") && strcmp(argv[1], "xattn"))) {
        fprintf(stderr, "usage: vec_isa_bench gemv N R NX REPS FRAC | panel N R NX REPS | xattn NQ REPS | attn LDK LDV REPS\n");
        return 2;
    }
    if (!steno_cpu_has_avx512_skx()) {
        fprintf(stderr, "vec_isa_bench: this CPU has no AVX512F/BW/DQ/VL\n");
        return 1;
    }
    const vec_kernels *tab[2] = {&vec_avx2, &vec_avx512};
    const char *name[2] = {"avx2", "avx512"};
    if (!strcmp(argv[1], "gemv") && argc >= 7) {
        const int n = atoi(argv[2]), nx = atoi(argv[4]), reps = atoi(argv[5]);
        const size_t R = (size_t)atol(argv[3]);
        const double frac = atof(argv[6]);
        uint16_t *W = malloc(R * n * 2);
        float *X = malloc((size_t)nx * n * 4), *Y = malloc((size_t)nx * R * 4);
        for (size_t i = 0; i < R * n; i++) /* normal halves around 1, or subnormal ones */
            W[i] = (uint16_t)((double)rand() / RAND_MAX < frac ? 0x0123 ^ (i & 0x7f) : 0x3c00 ^ (i & 0x3ff));
        for (size_t i = 0; i < (size_t)nx * n; i++) X[i] = frand();
        const int block = 8192 / (n * 2) > 0 ? 8192 / (n * 2) : 1;
        float **yr = malloc(sizeof *yr * (size_t)nx);
        for (int i = 0; i < nx; i++) yr[i] = Y + (size_t)i * R;
        for (int round = 0; round < 2; round++)
            for (int k = 0; k < 2; k++) {
                const double t0 = now();
                for (int r = 0; r < reps; r++) tab[k]->gemv_f16_batch(W, NULL, X, n, nx, n, 0, (int)R, yr, block);
                const double dt = (now() - t0) / reps;
                printf("%-6s gemv n %d rows %zu inputs %d subnormal %.4f: %.2f ms, %.1f GMAC/s\n", name[k], n, R, nx,
                       frac, dt * 1e3, (double)R * n * nx / dt / 1e9);
            }
        return 0;
    }
    if (!strcmp(argv[1], "panel") && argc >= 6) {
        const int n = atoi(argv[2]), nx = atoi(argv[4]), reps = atoi(argv[5]);
        const size_t R = (size_t)atol(argv[3]);
        uint16_t *W = malloc(R * n * 2), *P = malloc(R * n * 2);
        float *X = malloc((size_t)nx * n * 4), *Y0 = malloc((size_t)nx * R * 4), *Y1 = malloc((size_t)nx * R * 4);
        for (size_t i = 0; i < R * n; i++) W[i] = (uint16_t)(0x3000 ^ (rand() & 0x8fff));
        for (size_t i = 0; i < (size_t)nx * n; i++) X[i] = frand();
        vec_f16_panel_pack(W, (int)R, n, P);
        const int block = 8192 / (n * 2) > 0 ? 8192 / (n * 2) : 1;
        float **y0 = malloc(sizeof *y0 * (size_t)nx), **y1 = malloc(sizeof *y1 * (size_t)nx);
        for (int i = 0; i < nx; i++) y0[i] = Y0 + (size_t)i * R, y1[i] = Y1 + (size_t)i * R;
        for (int round = 0; round < 2; round++)
            for (int k = 0; k < 2; k++) {
                const double t0 = now();
                for (int r = 0; r < reps; r++)
                    if (k) vec_avx512_gemv_f16_panel(W, P, NULL, X, n, nx, n, 0, (int)R, y1);
                    else vec_avx512_gemv_f16_batch(W, NULL, X, n, nx, n, 0, (int)R, y0, block);
                const double dt = (now() - t0) / reps;
                printf("%-6s n %d rows %zu inputs %d: %.2f ms, %.1f GMAC/s\n", k ? "panel" : "rows", n, R, nx,
                       dt * 1e3, (double)R * n * nx / dt / 1e9);
            }
        printf("bits %s\n", memcmp(Y0, Y1, (size_t)nx * R * 4) ? "DIFFER" : "equal");
        return 0;
    }
    if (!strcmp(argv[1], "xattn") && argc >= 4) {
        const int nq = atoi(argv[2]), reps = atoi(argv[3]), nk = 1500, dh = 64, ldk = vec_attention_ldk(nk);
        if (nq < 1 || nq > 64) {
            fprintf(stderr, "vec_isa_bench: NQ must be 1..64\n");
            return 2;
        }
        float *Q = malloc((size_t)nq * dh * 4), *Kt = calloc((size_t)dh * ldk, 4), *Vf = malloc((size_t)nk * dh * 4);
        float *O[2] = {malloc((size_t)nq * dh * 4), malloc((size_t)nq * dh * 4)};
        uint16_t *Kb = malloc((size_t)(ldk / 16) * dh * 16 * 2), *V = malloc((size_t)nk * dh * 2);
        for (int i = 0; i < nq * dh; i++) Q[i] = frand() * 0.3f;
        for (int d = 0; d < dh; d++)
            for (int j = 0; j < nk; j++) Kt[(size_t)d * ldk + j] = frand();
        for (size_t i = 0; i < (size_t)nk * dh; i++) Vf[i] = frand();
        vec_pack_keys_f16(Kt, ldk, dh, nk, Kb);
        vec_f32_to_f16_lanes(Vf, V, (size_t)nk * dh);
        for (int round = 0; round < 2; round++)
            for (int k = 0; k < 2; k++) {
                const double t0 = now();
                for (int r = 0; r < reps; r++) tab[k]->attention_f16(Q, dh, Kb, V, dh, nk, dh, nq, O[k], dh);
                const double dt = (now() - t0) / reps;
                printf("%-6s cross-attention f16 nq %d nk %d: %.1f us per call\n", name[k], nq, nk, dt * 1e6);
            }
        printf("bits %s\n", memcmp(O[0], O[1], (size_t)nq * dh * 4) ? "DIFFER" : "equal");
        return 0;
    }
    if (!strcmp(argv[1], "attn") && argc >= 5) {
        const int nq = 1500, nk = 1500, dh = 64, ldk = atoi(argv[2]), ldv = atoi(argv[3]), reps = atoi(argv[4]);
        if (ldk < 1504 || ldv < dh) {
            fprintf(stderr, "vec_isa_bench: LDK must be >= 1504, LDV >= 64\n");
            return 2;
        }
        float *Q = malloc((size_t)nq * dh * 4), *Kt = malloc((size_t)dh * ldk * 4), *V = malloc((size_t)nk * ldv * 4),
              *O = malloc((size_t)nq * dh * 4);
        for (int i = 0; i < nq * dh; i++) Q[i] = frand() * 0.3f;
        for (size_t i = 0; i < (size_t)dh * ldk; i++) Kt[i] = frand();
        for (size_t i = 0; i < (size_t)nk * ldv; i++) V[i] = frand();
        for (int round = 0; round < 2; round++)
            for (int k = 0; k < 2; k++) {
                const double t0 = now();
                for (int r = 0; r < reps; r++) tab[k]->attention(Q, dh, Kt, ldk, V, ldv, nk, dh, nq, 0, 0, O, dh);
                const double dt = (now() - t0) / reps;
                printf("%-6s attention ldk %d ldv %d: %.2f ms per head, %.1f GFLOP/s\n", name[k], ldk, ldv, dt * 1e3,
                       4.0 * nq * nk * dh / dt / 1e9);
            }
        return 0;
    }
    fprintf(stderr, "usage: vec_isa_bench gemv N R NX REPS FRAC | panel N R NX REPS | xattn NQ REPS | attn LDK LDV REPS\n");
    return 2;
}
