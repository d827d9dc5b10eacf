/* dot_rows.c — which rows kernels run (dot_rows.h), and the activation scales they read. */
#include "kernels/gemv/dot_rows.h"

#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "kernels/quant/blocks.h"

#ifdef STENO_HAVE_X86
#include <immintrin.h>
#endif

const char *steno_rows_isa_name(int isa) {
    static const char *names[] = {"avx2", "avxvnni", "avx512vnni"};
    return isa >= 0 && isa < STENO_ROWS_NISA ? names[isa] : "none";
}

static const steno_rows_kernels *table(int type, int isa) {
    switch (isa) {
    case STENO_ROWS_AVX2: return steno_rows_table_avx2(type);
    case STENO_ROWS_AVXVNNI: return steno_rows_table_avxvnni(type);
    case STENO_ROWS_AVX512VNNI: return steno_rows_table_avx512vnni(type);
    default: return NULL;
    }
}

const steno_rows_kernels *steno_rows_kernels_for(int type, int isa) { return table(type, isa); }

const char *steno_rows_isa_missing(int isa) {
    if (isa < 0 || isa >= STENO_ROWS_NISA) return "unknown instruction set";
    if (!table(STENO_T_Q8_0, isa)) return "this build's compiler lacks it";
    if (!steno_cpu_has_avx2_fma_f16c()) return "CPU lacks AVX2/FMA/F16C";
    if (isa == STENO_ROWS_AVXVNNI && !steno_cpu_has_avxvnni()) return "CPU lacks AVX-VNNI";
    if (isa == STENO_ROWS_AVX512VNNI && !steno_cpu_has_avx512vnni()) return "CPU lacks AVX512_VNNI/VL/BW";
    return NULL;
}

int steno_rows_isa_supported(int isa) { return steno_rows_isa_missing(isa) == NULL; }

static int env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

/* -1 not yet decided; STENO_ROWS_NISA: none (scalar kernels). Benign race: every thread computes
 * the same value. */
static int g_rows_isa = -1;

static int rows_isa(void) {
    if (g_rows_isa >= 0) return g_rows_isa;
    int isa = STENO_ROWS_NISA;
    /* The rows kernels must equal the single-row kernels quant.c dispatches to: those are AVX2 unless
     * STENO_NO_AVX2 or the CPU says otherwise (quant.c init_dispatch, same test). */
    if (!env_on("STENO_NO_AVX2") && steno_rows_isa_supported(STENO_ROWS_AVX2)) {
        isa = STENO_ROWS_AVX2;
        const char *want = getenv("STENO_ROWS_ISA");
        if (want && *want) {
            if (strcmp(want, "none") == 0) isa = STENO_ROWS_NISA; /* the single-row kernels */
            for (int k = 0; k < STENO_ROWS_NISA; k++)
                if (strcmp(want, steno_rows_isa_name(k)) == 0 && steno_rows_isa_supported(k)) isa = k;
        } else if (!env_on("STENO_NO_VNNI")) {
            if (steno_rows_isa_supported(STENO_ROWS_AVX512VNNI)) isa = STENO_ROWS_AVX512VNNI;
            else if (steno_rows_isa_supported(STENO_ROWS_AVXVNNI)) isa = STENO_ROWS_AVXVNNI;
        }
    }
    g_rows_isa = isa;
    return isa;
}

const steno_rows_kernels *steno_rows_get(int type) { return table(type, rows_isa()); }

int steno_rows_set_isa(int isa) {
    if (isa != STENO_ROWS_NISA && !steno_rows_isa_supported(isa)) return -1;
    g_rows_isa = isa;
    return 0;
}

const char *steno_rows_isa(void) { return steno_rows_isa_name(rows_isa()); }

size_t steno_rows_pack_row_bytes(int act_type, const steno_rows_kernels *rk, int64_t n) {
    const int bias = rk ? rk->bias : 0;
    size_t b;
    if (act_type == STENO_T_Q8_0) b = (size_t)(n / 32) * (32 + 4 + (bias ? 32 : 0));
    else if (act_type == STENO_T_Q8_1) b = (size_t)(n / 32) * (32 + 8);
    else if (act_type == STENO_T_Q8_K) b = (size_t)(n / 256) * sizeof(block_q8_K);
    else return 0;
    return (b + 63) & ~(size_t)63;
}

#ifdef STENO_HAVE_X86
/* F16C, the instruction the single-row kernels convert with (identical to the software conversion
 * for every half but signalling NaNs, which F16C quiets). */
__attribute__((target("f16c"))) static float h2f(uint16_t h) { return _cvtsh_ss(h); }
#else
static float h2f(uint16_t h) { return steno_fp16_to_f32(h); }
#endif

void steno_rows_pack(int act_type, const steno_rows_kernels *rk, const void *xq, size_t xq_row, int64_t n, int nr, void *dst) {
    const uint8_t *src = xq;
    uint8_t *o = dst;
    if (act_type == STENO_T_Q8_K) {
        for (int64_t i = 0; i < n / 256; i++)
            for (int c = 0; c < nr; c++, o += sizeof(block_q8_K))
                memcpy(o, src + c * xq_row + i * sizeof(block_q8_K), sizeof(block_q8_K));
        return;
    }
    const int64_t nb = n / 32;
    const int k = act_type == STENO_T_Q8_1 ? 2 : 1;
    const size_t bs = act_type == STENO_T_Q8_1 ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const int bias = act_type == STENO_T_Q8_0 && rk ? rk->bias : 0;
    const int act_offset = act_type == STENO_T_Q8_0 && rk && rk->act_offset;
    int32_t *lanes = (int32_t *)(o + (size_t)nb * nr * 32); /* only with a bias */
    float *f = (float *)(o + (size_t)nb * nr * (bias ? 64 : 32));
    for (int64_t ib = 0; ib < nb; ib++)
        for (int c = 0; c < nr; c++) {
            const uint8_t *b = src + c * xq_row + ib * bs;
            uint16_t h[2];
            memcpy(h, b, 4);
            uint8_t *q8 = o + (ib * nr + c) * 32;
            memcpy(q8, b + 2 * k, 32);
            if (act_offset)
                for (int l = 0; l < 32; l++) q8[l] ^= 0x80; /* two's complement y as the byte y + 128 */
            if (bias) {
                const int8_t *q = (const int8_t *)(b + 2);
                for (int l = 0; l < 8; l++)
                    lanes[(ib * nr + c) * 8 + l] = -bias * (q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
            }
            f[ib * k * nr + c] = h2f(h[0]);
            if (k == 2) f[ib * k * nr + nr + c] = h2f(h[1]);
        }
}
