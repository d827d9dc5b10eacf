/* test_blas_core.c — core/blas_core.h: the OpenBLAS kernel set steno asks for. On this machine,
 * with OPENBLAS_CORETYPE unset: if OpenBLAS chose an SSE-only core on a CPU with AVX2, the request
 * names SkylakeX (CPU with Skylake-SP's AVX-512) or Haswell; if it chose any other core, nothing is
 * requested. A set OPENBLAS_CORETYPE or STENO_NO_AVX2 always gives no request (the user's choice). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/blas_core.h"
#include "core/cpu.h"
#include "test_util.h"

int main(void) {
    const int user_set = getenv("OPENBLAS_CORETYPE") != NULL;
    unsetenv("STENO_NO_AVX2");
    const char *name = steno_blas_core_name();
    const char *req = steno_blas_core_request();
    const char *sse[] = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom"};
    int sse_only = 0;
    for (size_t i = 0; i < sizeof sse / sizeof *sse; i++) sse_only |= strcasecmp(name, sse[i]) == 0;
    printf("OpenBLAS kernels %s%s; AVX2 %d, AVX-512 (SKX) %d; request %s\n", name,
           user_set ? " (OPENBLAS_CORETYPE set)" : "", steno_cpu_has_avx2_fma_f16c(), steno_cpu_has_avx512_skx(),
           req ? req : "none");
    if (user_set || !sse_only || !steno_cpu_has_avx2_fma_f16c()) {
        CHECK(req == NULL, "request %s although OpenBLAS runs %s", req ? req : "", name);
    } else {
        const char *want = steno_cpu_has_avx512_skx() ? "SkylakeX" : "Haswell";
        CHECK(req && strcmp(req, want) == 0, "request %s, want %s (OpenBLAS runs %s)", req ? req : "none", want, name);
    }
    CHECK(!steno_cpu_has_avx512_skx() || steno_cpu_has_avx2_fma_f16c(), "AVX-512 without AVX2");
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    CHECK(steno_blas_core_request() == NULL, "a request although OPENBLAS_CORETYPE is set");
    unsetenv("OPENBLAS_CORETYPE");
    setenv("STENO_NO_AVX2", "1", 1);
    CHECK(steno_blas_core_request() == NULL, "a request although STENO_NO_AVX2 is set");
    return test_summary("test_blas_core");
}
