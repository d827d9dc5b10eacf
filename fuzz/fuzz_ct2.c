/* fuzz_ct2.c — libFuzzer target for ct2_open() (CTranslate2 model.bin reader).
 *
 * Built by CMake with -DSTENO_FUZZ=ON (fuzz/CMakeLists.txt); seeds come from
 * scripts/fuzz_seeds.py (or FUZZ_CT2_SEED_DIR=dir, which writes a valid model there at start-up):
 *
 *   CC=clang cmake -S . -B build-fuzz -DSTENO_FUZZ=ON && cmake --build build-fuzz --target fuzz_ct2
 *   scripts/fuzz.sh ct2 10          # 10 minutes
 *
 * Each input is written to an in-memory file (memfd; a temp file where memfd_create is missing)
 * and opened by path, as the library does with a real model. When the open succeeds, every
 * variable is converted to float32 and looked up by name, so any out-of-bounds pointer handed
 * out by the index shows up under ASan.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/ct2.h"

static int g_fd = -1;
static char g_path[64];

static void put(uint8_t **p, const void *d, size_t n) {
    memcpy(*p, d, n);
    *p += n;
}
static void put_u8(uint8_t **p, uint8_t v) { put(p, &v, 1); }
static void put_u16(uint8_t **p, uint16_t v) { put(p, &v, 2); } /* x86/arm little-endian */
static void put_u32(uint8_t **p, uint32_t v) { put(p, &v, 4); }
static void put_str(uint8_t **p, const char *s) {
    put_u16(p, (uint16_t)(strlen(s) + 1));
    put(p, s, strlen(s) + 1);
}

/* A small valid version-6 model: an int16 scalar, an f32 vector, an fp16 matrix, an alias. */
static size_t make_seed(uint8_t *buf) {
    uint8_t *p = buf;
    put_u32(&p, 6);
    put_str(&p, "WhisperSpec");
    put_u32(&p, 3);
    put_u32(&p, 3);
    put_str(&p, "decoder/num_heads");
    put_u8(&p, 0);
    put_u8(&p, CT2_I16);
    put_u32(&p, 2);
    put_u16(&p, 6);
    put_str(&p, "encoder/layer_norm/gamma");
    put_u8(&p, 1);
    put_u32(&p, 4);
    put_u8(&p, CT2_F32);
    put_u32(&p, 16);
    for (int i = 0; i < 4; i++) {
        float f = (float)i;
        put(&p, &f, 4);
    }
    put_str(&p, "decoder/embeddings/weight");
    put_u8(&p, 2);
    put_u32(&p, 8);
    put_u32(&p, 16);
    put_u8(&p, CT2_F16);
    put_u32(&p, 8 * 16 * 2);
    for (int i = 0; i < 8 * 16; i++) put_u16(&p, (uint16_t)(0x3c00 + i));
    put_u32(&p, 1);
    put_str(&p, "decoder/projection/weight");
    put_str(&p, "decoder/embeddings/weight");
    return (size_t)(p - buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
#ifdef MFD_CLOEXEC
    g_fd = memfd_create("fuzz_ct2", MFD_CLOEXEC);
    if (g_fd >= 0) snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
#endif
    if (g_fd < 0) {
        snprintf(g_path, sizeof g_path, "/tmp/fuzz_ct2_XXXXXX");
        g_fd = mkstemp(g_path);
        if (g_fd < 0) {
            perror("mkstemp");
            abort();
        }
    }
    const char *seed_dir = getenv("FUZZ_CT2_SEED_DIR");
    if (seed_dir && *seed_dir) {
        static uint8_t seed[8192];
        size_t n = make_seed(seed);
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/seed_v6.bin", seed_dir);
        FILE *f = fopen(sp, "wb");
        if (f) {
            fwrite(seed, 1, n, f);
            fclose(f);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ftruncate(g_fd, 0) != 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(g_fd, data + off, size - off, (off_t)off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
    ct2_model *m = NULL;
    if (ct2_open(g_path, &m) != STENO_OK) {
        if (m) abort(); /* *out must stay NULL on failure */
        return 0;
    }
    static float scratch[1 << 16];
    volatile float sink = 0;
    for (int i = 0; i < ct2_n_vars(m); i++) {
        const ct2_var *v = ct2_var_at(m, i);
        if (!v || v->rank < 0 || v->rank > 8 || v->n_elems < 0) abort();
        if (v->n_elems <= (int64_t)(sizeof scratch / sizeof *scratch)) {
            ct2_to_f32(v, scratch);
            for (int64_t j = 0; j < v->n_elems; j++) sink += scratch[j];
        }
        if (ct2_find(m, v->name) == NULL) abort(); /* every indexed name must be findable */
        int ok;
        (void)ct2_scalar_int(m, v->name, &ok);
    }
    (void)ct2_find(m, "decoder/projection/weight");
    (void)ct2_spec_name(m);
    (void)sink;
    ct2_close(m);
    return 0;
}
