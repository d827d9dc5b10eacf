#include "core/bigmem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_BYTES ((size_t)2 << 20)
#define SPLIT_BYTES ((size_t)16 << 20) /* from here the zeroing runs on two threads */

typedef struct zero_half {
    unsigned char *p;
    size_t n;
} zero_half;

static void *zero_task(void *arg) {
    zero_half *z = arg;
    memset(z->p, 0, z->n);
    return NULL;
}

/* The zeroing is the block's first touch, so it takes the page faults: the kernel clears each page
 * (and on a VM the host may back it first: 0.3-0.4 GB/s on the development VM for memory it had
 * reclaimed). Two threads fault two halves at once; the contents are zeros either way. */
static void zero(unsigned char *p, size_t size) {
    if (size >= SPLIT_BYTES) {
        const size_t half = (size / 2) & ~(HUGE_BYTES - 1);
        zero_half z = {p + half, size - half};
        pthread_t t;
        if (pthread_create(&t, NULL, zero_task, &z) == 0) {
            memset(p, 0, half);
            pthread_join(t, NULL);
            return;
        }
    }
    memset(p, 0, size);
}

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
    zero(p, size);
    return p;
}

void steno_bigmem_free(void *p) { free(p); }
