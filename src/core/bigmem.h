/* bigmem.h — large read-mostly buffers (repacked weights) backed by 2 MiB transparent huge pages
 * where the kernel offers them.
 *
 * Why: a decode step streams every weight from DRAM once. In 4 KiB pages that is a TLB miss and
 * a page walk per 4 KiB read (45 000 per token for a 178 MB output head); with 2 MiB pages the
 * walks all but vanish. Measured on the development VM (THP "madvise" mode, a 256 MiB sequential
 * read, 12 interleaved passes): 1 thread 13.7 → 15.8 GB/s, 2 threads 24.0 → 27.0 GB/s, and far
 * steadier from pass to pass (the git history of docs/PERFORMANCE.md). */
#ifndef STENO_CORE_BIGMEM_H
#define STENO_CORE_BIGMEM_H

#include <stddef.h>

/** Allocates `bytes` (> 0) of zeroed memory aligned to 64 bytes. From 2 MiB up the block is 2 MiB
 *  aligned and padded, and advised MADV_HUGEPAGE before its first touch (Linux; elsewhere, or
 *  when the kernel refuses the advice, it is plain memory: the advice changes speed, never
 *  contents). Returns NULL when out of memory. Free with steno_bigmem_free. Thread-safe. */
void *steno_bigmem_alloc(size_t bytes);

/** Frees a block of steno_bigmem_alloc; NULL is ignored. */
void steno_bigmem_free(void *p);

#endif
