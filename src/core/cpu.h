/* cpu.h — which SIMD kernels this CPU can run, asked once through CPUID (x86 only).
 * One implementation for every dispatcher (vec.c, quant.c): __builtin_cpu_supports("f16c") is
 * unknown to clang 14, and two hand-written copies of the CPUID walk would drift apart. */
#ifndef STENO_CORE_CPU_H
#define STENO_CORE_CPU_H

/** 1 when the CPU has AVX2, FMA and F16C and the OS saves the YMM registers (CPUID leaves 1
 *  and 7, XGETBV), else 0; always 0 off x86. The answer is what __builtin_cpu_supports gives for
 *  the three features, for GCC and every clang. */
int steno_cpu_has_avx2_fma_f16c(void);

#endif
