#include "core/bigmem.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_BYTES ((size_t)2 << 20)

void *steno_bigmem_alloc(size_t bytes) {
    if (bytes == 0) return NULL;
    const size_t align = bytes >= HUGE_BYTES ? HUGE_BYTES : 64;
    if (bytes > (size_t)-1 - align) return NULL;
    const size_t size = (bytes + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, size);
    if (!p) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* before the first touch, so the faults below map huge pages; a refusal (THP "never", an
     * older kernel) leaves ordinary pages */
    if (align == HUGE_BYTES) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    memset(p, 0, size);
    return p;
}

void steno_bigmem_free(void *p) { free(p); }
