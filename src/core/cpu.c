/* cpu.c — the CPUID questions of cpu.h. Each answer is computed once and kept: CPUID traps to
 * the hypervisor in a virtual machine (tens of microseconds), and some callers ask per call
 * (attention_fast.c asked once per layer and step: 2.6 % of Gemma 3's decode time on a 2-vCPU VM,
 * perf). Threads racing on the first call store the same value. */
#include "core/cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>

/* answer(probe) in a static: -1 unknown, else the probe's 0/1 */
#define STENO_CPU_CACHED(name, probe)                                                              \
    int name(void) {                                                                               \
        static _Atomic int known = -1;                                                             \
        int v = atomic_load_explicit(&known, memory_order_relaxed);                                \
        if (v < 0) atomic_store_explicit(&known, v = probe(), memory_order_relaxed);               \
        return v;                                                                                  \
    }

static int probe_avx2_fma_f16c(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(fma && osxsave && avx && f16c)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0; /* XMM and YMM state enabled by the OS */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 5) & 1; /* AVX2 */
}

STENO_CPU_CACHED(steno_cpu_has_avx2_fma_f16c, probe_avx2_fma_f16c)

static int probe_avxvnni(void) {
    unsigned a, b, c, d;
    if (!steno_cpu_has_avx2_fma_f16c()) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || a < 1) return 0; /* a: highest subleaf */
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 4) & 1;
}

STENO_CPU_CACHED(steno_cpu_has_avxvnni, probe_avxvnni)

/* CPUID leaf 7 (subleaf 0) EBX/ECX, when the CPU has AVX2/FMA/F16C and the OS saves the AVX-512
 * state (XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM); else 0 */
static int leaf7_with_zmm(unsigned *b, unsigned *c) {
    unsigned a, d;
    if (!steno_cpu_has_avx2_fma_f16c()) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6) != 0xe6) return 0;
    return __get_cpuid_count(7, 0, &a, b, c, &d);
}

static int probe_avx512vnni(void) {
    unsigned b, c;
    if (!leaf7_with_zmm(&b, &c)) return 0;
    const int f = (b >> 16) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
    return f && bw && vl && vnni;
}

STENO_CPU_CACHED(steno_cpu_has_avx512vnni, probe_avx512vnni)

static int probe_avx512_skx(void) {
    unsigned b, c;
    if (!leaf7_with_zmm(&b, &c)) return 0;
    const unsigned need = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31); /* F DQ CD BW VL */
    return (b & need) == need;
}
STENO_CPU_CACHED(steno_cpu_has_avx512_skx, probe_avx512_skx)

static int probe_amd(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = 0;
    return strcmp(v, "AuthenticAMD") == 0;
}
STENO_CPU_CACHED(steno_cpu_is_amd, probe_amd)
#else
int steno_cpu_is_amd(void) { return 0; }
int steno_cpu_has_avx2_fma_f16c(void) { return 0; }
int steno_cpu_has_avx512_skx(void) { return 0; }
int steno_cpu_has_avxvnni(void) { return 0; }
int steno_cpu_has_avx512vnni(void) { return 0; }
#endif

int steno_cpu_avx512_allowed(void) {
    const char *e = getenv("STENO_NO_AVX512");
    return !(e && *e && strcmp(e, "0") != 0);
}
