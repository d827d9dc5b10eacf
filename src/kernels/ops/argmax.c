/* argmax.c — see argmax.h. The scalar loop is the definition; the AVX2 version finds the same
 * index in two passes: the maximum over the non-NaN elements (vmaxps returns its second operand
 * when the first is NaN, so max(x, acc) skips NaNs), then the first element equal to it. */
#include "kernels/ops/argmax.h"

#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"

static int argmax_scalar(const float *x, int n) {
    int c = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[c]) c = i;
    return c;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("avx2"))) static int argmax_avx2(const float *x, int n) {
    if (x[0] != x[0] || n < 16) return argmax_scalar(x, n); /* a NaN first element is never replaced */
    __m256 m = _mm256_set1_ps(x[0]);
    int i = 0;
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float mx = _mm_cvtss_f32(m4);
    for (int k = i; k < n; k++)
        if (x[k] > mx) mx = x[k];
    /* the scalar loop ends on the first element equal to the maximum (any later one is not >) */
    const __m256 mv = _mm256_set1_ps(mx);
    for (i = 0; i + 8 <= n; i += 8) {
        const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
        if (mask) return i + __builtin_ctz((unsigned)mask);
    }
    for (; i < n; i++)
        if (x[i] == mx) return i;
    return 0;
}
#endif

int steno_argmax_f32(const float *x, int n) {
#if defined(__x86_64__) || defined(__i386__)
    static int avx2 = -1; /* benign race: every thread computes the same answer */
    if (avx2 < 0) {
        const char *e = getenv("STENO_NO_AVX2");
        avx2 = !(e && *e && strcmp(e, "0") != 0) && steno_cpu_has_avx2_fma_f16c();
    }
    if (avx2) return argmax_avx2(x, n);
#endif
    return argmax_scalar(x, n);
}
