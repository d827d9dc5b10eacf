/* system_info.c — steno_system_info(): which CPU kernels this process runs, for a log line.
 * Follows whisper.cpp's whisper_print_system_info(), but returns the text instead of printing it.
 * Lives in kernels/ because it names both the kernel sets chosen at run time (gemv's ISA, the AMX
 * encoder path) and OpenBLAS's core (core/blas_core.h, a layer below). */
#include <pthread.h>
#include <stdio.h>

#include "core/blas_core.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "kernels/gemv/vec.h"
#include "steno.h"

static char g_info[160];
static pthread_once_t g_info_once = PTHREAD_ONCE_INIT;

static void system_info_init(void) {
    snprintf(g_info, sizeof g_info, "Whisper kernels %s%s; OpenBLAS kernels %s", vec_isa_name(),
             gemm_amx_available() ? ", AMX-BF16 encoder" : "", steno_blas_core_name());
}

const char *steno_system_info(void) {
    pthread_once(&g_info_once, system_info_init);
    return g_info;
}
