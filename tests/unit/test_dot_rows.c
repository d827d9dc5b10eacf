/* test_dot_rows.c — the rows kernels (kernels/gemv/dot_rows.h) and steno_matmul's use of them are
 * BIT-IDENTICAL (memcmp) to the single-row dot kernels, for every weight type that has them.
 *
 * 1. Kernel level: for q4_0, q4_1, q5_0, q8_0, q4_K, q6_K; random weight blocks (fixed seeds;
 *    scales include 0, subnormals, ±65504) and activations both quantized from random floats and
 *    raw random bytes (q8 codes -128..127, random scales); nr = 1..max_rows (8, or 12 for AVX-512) columns; every instruction set
 *    this build and CPU support (AVX2, AVX-VNNI, AVX512-VNNI): out[c] == the AVX2 single-row
 *    kernel's vec_dot(x, y_c). Unsupported sets print "skipped: <isa> (<why>)".
 * 2. steno_matmul with T = 1..16, 23 and 40 activation rows (prompt evaluation's groups), 1 and 2 threads, under each supported set and
 *    with the rows kernels off: Y[t] == the traits' vec_dot per (row, t).
 * 3. The same matmul check in a child process with STENO_NO_AVX2=1 (the scalar kernels).
 * 4. q8_0/q8_1 quantization emits the code -128 only in blocks whose scale is 0 (the VNNI
 *    offset form of q4_0/q5_0/q8_0 relies on it; raw activations for those kernels avoid -128).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/threadpool.h"
#include "kernels/gemm/matmul.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"
#include "test_util.h"
#include "rng.h"

static uint64_t g_s = 0x2545F4914F6CDD1Dull;
static uint32_t rnd32(void) { return (uint32_t)(rng_xorshift64(&g_s) >> 16); }
static float frand(void) { return rng_f24_pm1(rnd32()); }

/* A half: mostly ordinary scales, sometimes an extreme one (never inf/NaN). */
static uint16_t rnd_half(void) {
    static const uint16_t extreme[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00};
    uint32_t r = rnd32();
    if (r % 8 == 0) return extreme[(r >> 3) % 8];
    return (uint16_t)(0x1000 + (r >> 8) % 0x2000); /* about 2^-12 .. 2^-4 */
}

static void put_half(uint8_t *p, uint16_t h) { memcpy(p, &h, 2); }

/* Random weight bytes of n elements of type t with scale fields from rnd_half. */
static void random_weights(int t, uint8_t *w, int n) {
    const steno_type_traits *tr = steno_type_get(t);
    const size_t nb = (size_t)(n / tr->block_size), bs = tr->type_size;
    for (size_t i = 0; i < nb * bs; i++) w[i] = (uint8_t)rnd32();
    for (size_t b = 0; b < nb; b++) {
        uint8_t *p = w + b * bs;
        if (t == STENO_T_Q6_K) put_half(p + 208, rnd_half());
        else {
            put_half(p, rnd_half());
            if (t == STENO_T_Q4_1 || t == STENO_T_Q4_K) put_half(p + 2, rnd_half());
        }
    }
}

/* An activation row in vec_dot_type at: quantized from floats (raw = 0; some rows scaled up or
 * small, and some 32-blocks so tiny (amax < 127/FLT_MAX) that q8_0/q8_1 quantization emits -128
 * with a zero scale), or raw random bytes with valid-looking scales (raw = 1; no code -128 when
 * no128, the precondition of the VNNI offset form). */
static void random_act(int at, uint8_t *y, int n, int raw, int no128, float *tmp) {
    if (!raw) {
        const float scale = (rnd32() % 4 == 0) ? 1e4f : (rnd32() % 3 == 0 ? 1e-6f : 1.0f);
        for (int i = 0; i < n; i++) tmp[i] = frand() * scale;
        if (rnd32() % 2)
            for (int i = (int)(rnd32() % (n / 32)) * 32, j = 0; j < 32; j++) tmp[i + j] = frand() * 3e-38f;
        if (rnd32() % 2) tmp[rnd32() % n] = 0; /* a lone zero, and sometimes a dominant value */
        if (rnd32() % 3 == 0) tmp[rnd32() % n] = 1e6f;
        steno_type_get(at)->from_float(tmp, y, n);
        return;
    }
    const size_t bytes = steno_row_size(at, n);
    for (size_t i = 0; i < bytes; i++) {
        y[i] = (uint8_t)rnd32();
        if (no128 && y[i] == 0x80) y[i] = 0x81; /* scales are rewritten below */
    }
    if (at == STENO_T_Q8_K) {
        block_q8_K *b = (block_q8_K *)y;
        for (int i = 0; i < n / 256; i++) b[i].d = frand() * 1e-2f;
    } else {
        const size_t bs = steno_type_get(at)->type_size;
        for (int i = 0; i < n / 32; i++) {
            put_half(y + i * bs, rnd_half());
            if (at == STENO_T_Q8_1) put_half(y + i * bs + 2, rnd_half());
        }
    }
}

static const int k_types[] = {STENO_T_Q4_0, STENO_T_Q4_1, STENO_T_Q5_0, STENO_T_Q8_0, STENO_T_Q4_K, STENO_T_Q6_K};
#define NTYPES ((int)(sizeof k_types / sizeof k_types[0]))

#ifdef STENO_HAVE_X86
static steno_vec_dot_fn avx2_dot(int t) {
    switch (t) {
    case STENO_T_Q4_0: return steno_dot_q4_0_avx2;
    case STENO_T_Q4_1: return steno_dot_q4_1_avx2;
    case STENO_T_Q5_0: return steno_dot_q5_0_avx2;
    case STENO_T_Q8_0: return steno_dot_q8_0_avx2;
    case STENO_T_Q4_K: return steno_dot_q4_K_avx2;
    case STENO_T_Q6_K: return steno_dot_q6_K_avx2;
    default: return NULL;
    }
}
#endif

/* 1. every rows kernel of every supported isa against the AVX2 single-row kernel */
static void test_kernels(void) {
#ifdef STENO_HAVE_X86
    if (!steno_rows_isa_supported(STENO_ROWS_AVX2)) {
        printf("skipped: kernel-level checks (%s)\n", steno_rows_isa_missing(STENO_ROWS_AVX2));
        return;
    }
    enum { N = 1536, R = STENO_ROWS_MAX };
    uint8_t *w = malloc(N * 2), *ys = malloc(R * (size_t)N * 2);
    float *tmp = malloc(sizeof(float) * N);
    const steno_rows_kernels lanes = {.bias = 16}; /* q8_0 with bias lanes: the largest layout */
    uint8_t *yp = aligned_alloc(64, R * steno_rows_pack_row_bytes(STENO_T_Q8_0, &lanes, N));
    for (int isa = 0; isa < STENO_ROWS_NISA; isa++) {
        if (!steno_rows_isa_supported(isa)) {
            printf("skipped: %s (%s)\n", steno_rows_isa_name(isa), steno_rows_isa_missing(isa));
            continue;
        }
        long cols = 0;
        const int fails0 = g_failures;
        for (int k = 0; k < NTYPES; k++) {
            const int t = k_types[k], at = steno_type_get(t)->vec_dot_type;
            const steno_rows_kernels *rk = steno_rows_kernels_for(t, isa);
            CHECK(rk != NULL, "%s: no %s rows kernels", steno_type_name(t), steno_rows_isa_name(isa));
            if (!rk) continue;
            for (int rep = 0; rep < 24; rep++) {
                const int n = (rep % 3 == 0) ? 256 : (rep % 3 == 1 ? 768 : N); /* 1, 3, 6 super-blocks */
                const size_t xq_row = steno_row_size(at, n);
                random_weights(t, w, n);
                for (int c = 0; c < R; c++) random_act(at, ys + c * xq_row, n, (rep + c) % 2, rk->bias != 0 || rk->act_offset, tmp);
                for (int nr = 1; nr <= rk->max_rows; nr++) {
                    float out[STENO_ROWS_MAX], ref[STENO_ROWS_MAX];
                    steno_rows_pack(at, rk, ys, xq_row, n, nr, yp);
                    rk->fn[nr](n, w, yp, out);
                    for (int c = 0; c < nr; c++) ref[c] = avx2_dot(t)(n, w, ys + c * xq_row);
                    for (int c = 0; c < nr; c++)
                        CHECK(memcmp(&out[c], &ref[c], 4) == 0, "%s %s n=%d nr=%d col %d: %.9g != %.9g",
                              steno_rows_isa_name(isa), steno_type_name(t), n, nr, c, out[c], ref[c]);
                    cols += nr;
                }
            }
        }
        printf("%s: %ld columns %s the AVX2 single-row kernels\n", steno_rows_isa_name(isa), cols,
               g_failures == fails0 ? "bit-identical to" : "DIFFER from");
    }
    free(w);
    free(ys);
    free(tmp);
    free(yp);
#else
    printf("skipped: kernel-level checks (not x86)\n");
#endif
}

/* The VNNI offset form's precondition (dot_rows_impl.h): q8_0/q8_1 quantization emits the code
 * -128 only in a block whose scale d is 0. Random, huge, small, subnormal, tiny-amax, infinite and
 * NaN blocks. */
static void test_no_minus128(void) {
    enum { NB = 4096 };
    float *x = malloc(sizeof(float) * 32 * NB);
    static const float scales[] = {1.0f, 1e30f, 1e-30f, 3e-38f, 1e-40f, 1e-45f, 3.4e38f};
    for (int b = 0; b < NB; b++) {
        const float sc = scales[b % 7];
        for (int j = 0; j < 32; j++) x[b * 32 + j] = frand() * sc;
        if (b % 11 == 0) x[b * 32 + rnd32() % 32] = -sc; /* the block's amax on the negative side */
        if (b % 13 == 0) x[b * 32 + rnd32() % 32] = (b % 2) ? -INFINITY : NAN;
    }
    const int acts[] = {STENO_T_Q8_0, STENO_T_Q8_1};
    for (int k = 0; k < 2; k++) {
        const steno_type_traits *ta = steno_type_get(acts[k]);
        uint8_t *q = malloc(ta->type_size * NB);
        ta->from_float(x, q, 32 * NB);
        int seen = 0, bad = 0;
        for (int b = 0; b < NB; b++) {
            const uint8_t *blk = q + b * ta->type_size;
            uint16_t d;
            memcpy(&d, blk, 2);
            const int8_t *qs = (const int8_t *)(blk + (acts[k] == STENO_T_Q8_1 ? 4 : 2));
            for (int j = 0; j < 32; j++)
                if (qs[j] == -128) {
                    seen++;
                    if ((d & 0x7fff) != 0) bad++;
                }
        }
        CHECK(bad == 0, "%s: %d codes -128 in blocks with a nonzero scale", steno_type_name(acts[k]), bad);
        printf("%s quantization: %d codes -128, all in blocks with scale 0\n", steno_type_name(acts[k]), seen);
        free(q);
    }
    free(x);
}

/* 2./3. steno_matmul for T = 1..16 against the traits' vec_dot per (row, t) */
static void check_matmul(const char *what) {
    const int n_in = 768, n_out = 45;
    steno_pool *p2 = NULL;
    CHECK(steno_pool_create(2, &p2) == STENO_OK, "pool");
    enum { TMAX = 40 };
    float *x = malloc(sizeof(float) * n_in * TMAX), *y = malloc(sizeof(float) * n_out * TMAX),
          *ref = malloc(sizeof(float) * n_out * TMAX);
    uint8_t *xq = malloc(steno_row_size(STENO_T_Q8_K, n_in) * 2);
    for (int k = 0; k < NTYPES; k++) {
        const int t = k_types[k];
        const steno_type_traits *tr = steno_type_get(t), *ta = steno_type_get(tr->vec_dot_type);
        size_t rb = steno_row_size(t, n_in);
        uint8_t *w = malloc(rb * n_out);
        random_weights(t, w, n_in * n_out);
        steno_mat m = {t, n_in, n_out, rb, w, NULL};
        for (int i = 0; i < n_in * TMAX; i++) x[i] = frand() * (i % 97 == 0 ? 50.0f : 1.0f);
        for (int tt = 0; tt < TMAX; tt++) {
            ta->from_float(x + tt * n_in, xq, n_in);
            for (int r = 0; r < n_out; r++) ref[tt * n_out + r] = tr->vec_dot(n_in, w + r * rb, xq);
        }
        steno_work wk = {0};
        static const int Ts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 23, TMAX};
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++)
            for (int th = 1, T = Ts[ti]; th <= 2; th++) {
                memset(y, 0xff, sizeof(float) * n_out * TMAX);
                CHECK(steno_matmul(th == 2 ? p2 : NULL, &wk, &m, x, T, y, n_out) == 0, "matmul");
                CHECK(memcmp(y, ref, sizeof(float) * n_out * T) == 0, "%s %s T=%d threads=%d differs from vec_dot",
                      what, steno_type_name(t), T, th);
                /* steno_matmul_n: the rows as three matrices of 10, 21 and 14 rows, each its own Y */
                static const int cut[4] = {0, 10, 31, n_out};
                steno_mat ms[3];
                const steno_mat *mp[3];
                float *ys[3];
                int64_t ls[3];
                for (int q = 0; q < 3; q++) {
                    ms[q] = (steno_mat){t, n_in, cut[q + 1] - cut[q], rb, w + (size_t)cut[q] * rb, NULL};
                    mp[q] = &ms[q];
                    ls[q] = cut[q + 1] - cut[q] + 3;
                    ys[q] = malloc(sizeof(float) * ls[q] * T);
                }
                CHECK(steno_matmul_n(th == 2 ? p2 : NULL, &wk, 3, mp, x, T, ys, ls) == 0, "matmul_n");
                for (int q = 0; q < 3; q++) {
                    for (int tt = 0; tt < T; tt++)
                        CHECK(memcmp(ys[q] + tt * ls[q], ref + tt * n_out + cut[q], sizeof(float) * (cut[q + 1] - cut[q])) == 0,
                              "%s %s T=%d threads=%d: matmul_n part %d differs", what, steno_type_name(t), T, th, q);
                    free(ys[q]);
                }
            }
        steno_work_free(&wk);
        free(w);
    }
    steno_pool_free(p2);
    free(x);
    free(y);
    free(ref);
    free(xq);
}

static void test_matmul(void) {
    for (int isa = 0; isa < STENO_ROWS_NISA; isa++) {
        if (steno_rows_set_isa(isa) != 0) {
            printf("skipped: matmul with %s (%s)\n", steno_rows_isa_name(isa), steno_rows_isa_missing(isa));
            continue;
        }
        const int fails0 = g_failures;
        check_matmul(steno_rows_isa_name(isa));
        printf("matmul with %s rows kernels: T = 1..16, 23, 40, 1 and 2 threads, %s\n", steno_rows_isa_name(isa),
               g_failures == fails0 ? "bit-identical" : "DIFFERENT");
    }
    steno_rows_set_isa(STENO_ROWS_NISA);
    check_matmul("single-row kernels");
    printf("matmul with the single-row kernels (%s): bit-identical\n", steno_kernels_isa());
}

int main(int argc, char **argv) {
    const char *no = getenv("STENO_NO_AVX2");
    if (no && strcmp(no, "1") == 0) { /* the child of 3. */
        printf("(child, isa %s, rows %s)\n", steno_kernels_isa(), steno_rows_isa());
        CHECK(strcmp(steno_rows_isa(), "none") == 0, "STENO_NO_AVX2=1 must turn the rows kernels off");
        check_matmul("scalar");
        printf("matmul with the scalar kernels: bit-identical\n");
        return g_failures ? 1 : 0;
    }
    printf("dot kernels: %s; rows kernels by default: %s\n", steno_kernels_isa(), steno_rows_isa());
    test_no_minus128();
    test_kernels();
    test_matmul();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STENO_NO_AVX2", "1", 1);
        execl("/proc/self/exe", argv[0], (char *)NULL);
        _exit(127);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the STENO_NO_AVX2=1 run failed");
    if (g_failures) {
        fprintf(stderr, "%d of %d checks failed\n", g_failures, g_checks);
        return 1;
    }
    printf("all %d checks passed\n", g_checks);
    return 0;
}
