/* cpu.h — which SIMD kernels this CPU can run, asked once through CPUID (x86 only).
 * One implementation for every dispatcher (vec.c, quant.c): __builtin_cpu_supports("f16c") is
 * unknown to clang 14, and two hand-written copies of the CPUID walk would drift apart. */
#ifndef STENO_CORE_CPU_H
#define STENO_CORE_CPU_H

/** 1 when the CPU has AVX2, FMA and F16C and the OS saves the YMM registers (CPUID leaves 1
 *  and 7, XGETBV), else 0; always 0 off x86. The answer is what __builtin_cpu_supports gives for
 *  the three features, for GCC and every clang. */
int steno_cpu_has_avx2_fma_f16c(void);

/** 1 when steno_cpu_has_avx2_fma_f16c() and the CPU has AVX-VNNI (VEX vpdpbusd on ymm: CPUID leaf 7
 *  subleaf 1, EAX bit 4), else 0. */
int steno_cpu_has_avxvnni(void);

/** 1 when steno_cpu_has_avx2_fma_f16c(), the CPU has AVX512F, AVX512BW, AVX512VL and AVX512_VNNI
 *  (CPUID leaf 7: EBX bits 16, 30, 31, ECX bit 11) and the OS saves the opmask and ZMM state
 *  (XCR0 bits 5-7), else 0. */
int steno_cpu_has_avx512vnni(void);

/** 1 when steno_cpu_has_avx2_fma_f16c(), the CPU has AVX512F, AVX512DQ, AVX512CD, AVX512BW and
 *  AVX512VL (Skylake-SP's set: CPUID leaf 7 EBX bits 16, 17, 28, 30, 31) and the OS saves the
 *  opmask and ZMM state, else 0. */
int steno_cpu_has_avx512_skx(void);

/** 1 when CPUID leaf 0 names the vendor "AuthenticAMD", else 0 (always 0 off x86). For kernels
 *  whose best instruction mix differs between vendors while the bits do not (vec_panel_avx512.c). */
int steno_cpu_is_amd(void);

/** 0 when the environment variable STENO_NO_AVX512 is set to anything but "" or "0", else 1: the
 *  switch that keeps the 256-bit kernels on an AVX-512 CPU (the two give the same bits; tests
 *  compare them). Read on every call, so a test may change it between calls; thread-safe as long
 *  as nothing calls setenv concurrently. */
int steno_cpu_avx512_allowed(void);

#endif
