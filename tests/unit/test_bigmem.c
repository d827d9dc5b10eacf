/* test_bigmem.c — core/bigmem.h: blocks are zeroed, aligned (64 bytes; 2 MiB from 2 MiB up), fully
 * writable, and freed; 0 bytes and an overflowing size give NULL. Whether the kernel backed a block
 * with huge pages depends on its THP mode and free memory (a speed matter, never a result): the
 * test prints what /proc/self/smaps says and asserts nothing about it. */
#include <stdint.h>
#include <string.h>

#include "core/bigmem.h"
#include "test_util.h"

/* AnonHugePages (kB) of the mapping holding p, or -1 when unknown */
static long huge_kb(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb;
}

int main(void) {
    static const size_t sizes[] = {1, 63, 4095, 65536, (size_t)2 << 20, ((size_t)2 << 20) + 1, (size_t)9 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const size_t n = sizes[i];
        unsigned char *p = steno_bigmem_alloc(n);
        CHECK(p != NULL, "%zu bytes: NULL", n);
        if (!p) continue;
        CHECK((uintptr_t)p % 64 == 0, "%zu bytes: not 64-byte aligned", n);
        if (n >= ((size_t)2 << 20)) CHECK((uintptr_t)p % ((size_t)2 << 20) == 0, "%zu bytes: not 2 MiB aligned", n);
        size_t nonzero = 0;
        for (size_t k = 0; k < n; k++) nonzero += p[k] != 0;
        CHECK(nonzero == 0, "%zu bytes: %zu not zeroed", n, nonzero);
        memset(p, 0xa5, n);
        CHECK(p[0] == 0xa5 && p[n - 1] == 0xa5, "%zu bytes: not writable", n);
        if (n >= ((size_t)9 << 20)) printf("9 MiB block: AnonHugePages %ld kB (0 or -1: ordinary pages)\n", huge_kb(p));
        steno_bigmem_free(p);
    }
    CHECK(steno_bigmem_alloc(0) == NULL, "0 bytes: not NULL");
    CHECK(steno_bigmem_alloc((size_t)-1) == NULL, "SIZE_MAX bytes: not NULL");
    CHECK(steno_bigmem_alloc((size_t)-1 - 100) == NULL, "SIZE_MAX - 100 bytes: not NULL");
    steno_bigmem_free(NULL);
    return test_summary("test_bigmem");
}
