/* The float16 GEMV from a panel (kernels/gemv/vec.h vec_gemv_f16_panel_to, vec_panel_avx512.c) against
 * the row kernel (vec_gemv_rows_to), bit for bit: row counts with and without a partial last
 * block, row ranges that start and end inside blocks (a thread's share), 1..40, 64, 65 and 70
 * inputs (below VEC_PANEL_MIN_INPUTS the row kernel runs; the groups of up to 12 and their equal
 * split; the chunking at 64), widths that take a panel (multiples of 32 up to 4096) and two that do
 * not (388, 4128: the row kernel serves), biases on and off, subnormal halves, an input with a NaN
 * and one with ±inf. Also: the same outputs when the rows are split in two calls at any point.
 * Both instruction mixes of the panel kernel (STENO_PANEL_EMBEDDED=0 and 1: register and embedded
 * broadcasts) on every case, whatever this CPU's default.
 * On a CPU without AVX-512 no panel is made (vec_f16_panel_halves = 0): the fallback is checked
 * and the test says so. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemv/vec.h"
#include "rng.h"
#include "test_util.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { return (float)rng_unit53(rng_xorshift64(&g_rng)) * 2.0f - 1.0f; }

enum { NXMAX = 70 };

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* every case with the panel kernel's instruction mix `mix` (STENO_PANEL_EMBEDDED); returns the
 * number of panels made */
static int check_panels(int mix) {
    setenv("STENO_PANEL_EMBEDDED", mix ? "1" : "0", 1);
    const int ns[] = {32, 384, 512, 1536, 4096, 388, 4128};
    const int Rs[] = {32, 100, 259};
    int panels = 0;
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++)
        for (size_t rc = 0; rc < sizeof Rs / sizeof Rs[0]; rc++) {
            const int n = ns[c], R = Rs[rc];
            if ((size_t)n * R > 300000 && R != 32) continue; /* the widest only at 32 rows: time */
            uint16_t *W = malloc((size_t)R * n * 2);
            const size_t ph = vec_f16_panel_halves(R, n);
            uint16_t *P = ph ? malloc(ph * 2) : NULL;
            float *b = malloc((size_t)R * 4), *X = malloc((size_t)NXMAX * n * 4);
            float *Ya = malloc((size_t)NXMAX * R * 4), *Yb = malloc((size_t)NXMAX * R * 4);
            for (size_t i = 0; i < (size_t)R * n; i++) {
                float v = frand();
                if (i % 89 == 0) v *= 1e-6f; /* subnormal halves */
                vec_f32_to_f16(&v, &W[i], 1);
            }
            for (int r = 0; r < R; r++) b[r] = frand();
            for (size_t i = 0; i < (size_t)NXMAX * n; i++) X[i] = frand() * 3.0f;
            X[(size_t)9 * n + 3] = NAN;
            X[(size_t)21 * n + 1] = INFINITY;
            X[(size_t)21 * n + 2] = -INFINITY;
            if (P) {
                vec_f16_panel_pack(W, R, n, P);
                panels++;
            }
            const int nxs[] = {1, 2, 5, 7, 8, 9, 10, 11, 12, 13, 16, 20, 23, 24, 25, 36, 40, 64, 65, 70};
            int ok = 1, split_ok = 1;
            for (size_t q = 0; q < sizeof nxs / sizeof nxs[0]; q++) {
                const int nx = nxs[q];
                for (int bias = 0; bias < 2; bias++) {
                    const float *bb = bias ? b : NULL;
                    float *ya[NXMAX], *yb[NXMAX];
                    for (int i = 0; i < nx; i++) ya[i] = Ya + (size_t)i * R, yb[i] = Yb + (size_t)i * R;
                    /* the whole range, then a range starting and ending inside blocks */
                    const int ranges[2][2] = {{0, R}, {R > 40 ? 5 : 1, R > 40 ? R - 7 : R - 1}};
                    for (int k = 0; k < 2; k++) {
                        memset(Ya, 0x7f, (size_t)NXMAX * R * 4);
                        memset(Yb, 0x7f, (size_t)NXMAX * R * 4);
                        vec_gemv_rows_to(VEC_F16, W, bb, X, n, nx, n, ranges[k][0], ranges[k][1], ya);
                        vec_gemv_f16_panel_to(W, P, bb, X, n, nx, n, ranges[k][0], ranges[k][1], yb);
                        if (!same_bits(Ya, Yb, (size_t)nx * R)) ok = 0;
                    }
                    /* two calls split at a row inside a block give the same outputs */
                    if (nx == 40 || nx == 9) {
                        const int mid = R / 2 + 3;
                        memset(Yb, 0x7f, (size_t)NXMAX * R * 4);
                        vec_gemv_f16_panel_to(W, P, bb, X, n, nx, n, 0, mid, yb);
                        vec_gemv_f16_panel_to(W, P, bb, X, n, nx, n, mid, R, yb);
                        memset(Ya, 0x7f, (size_t)NXMAX * R * 4);
                        vec_gemv_rows_to(VEC_F16, W, bb, X, n, nx, n, 0, R, ya);
                        if (!same_bits(Ya, Yb, (size_t)nx * R)) split_ok = 0;
                    }
                }
            }
            CHECK(ok, "n %d rows %d (%s broadcasts): panel outputs differ from the row kernel's", n, R,
                  mix ? "embedded" : "register");
            CHECK(split_ok, "n %d rows %d (%s broadcasts): a split call differs", n, R, mix ? "embedded" : "register");
            free(W);
            free(P);
            free(b);
            free(X);
            free(Ya);
            free(Yb);
        }
    unsetenv("STENO_PANEL_EMBEDDED");
    return panels;
}

int main(void) {
    vec_init();
    int panels = check_panels(0);
    check_panels(1);
    if (!panels) printf("test_vec_panel: this CPU's kernels take no panel (%s): only the fallback was checked\n",
                        vec_isa_name());
    else printf("test_vec_panel: %d panels checked, each with register and embedded broadcasts (%s)\n", panels,
                vec_isa_name());
    return test_summary("test_vec_panel");
}
