/* blas_core.c — steno_blas_core_request (see blas_core.h). */
#include "core/blas_core.h"

#include <stdlib.h>
#include <strings.h>

#include "core/cpu.h"

char *openblas_get_corename(void); /* OpenBLAS's own; cblas.h of some versions lacks it */

const char *steno_blas_core_name(void) {
    const char *n = openblas_get_corename();
    return n ? n : "unknown";
}

const char *steno_blas_core_request(void) {
    if (getenv("OPENBLAS_CORETYPE") || getenv("STENO_NO_AVX2")) return NULL;
    /* the cores OpenBLAS's x86-64 DYNAMIC_ARCH list holds below Haswell (Intel's; an AMD CPU it
     * does not know gets Prescott too) */
    static const char *const sse_only[] = {"prescott", "core2", "penryn", "dunnington", "nehalem",
                                           "sandybridge", "atom", "katmai", "coppermine", "northwood", "banias"};
    const char *have = steno_blas_core_name();
    int old = 0;
    for (size_t i = 0; i < sizeof sse_only / sizeof *sse_only; i++)
        if (strcasecmp(have, sse_only[i]) == 0) old = 1;
    if (!old) return NULL;
    if (steno_cpu_has_avx512_skx()) return "SkylakeX";
    if (steno_cpu_has_avx2_fma_f16c()) return "Haswell";
    return NULL;
}
