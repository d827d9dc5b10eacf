/* fuzz_whisper_mlx.c — libFuzzer target for wtab_read_mlx() (mlx-community Whisper folders:
 * config.json with ModelDimensions and weights.safetensors or weights.npz, the zip/.npy reader).
 *
 * The input is split (fuzz_util.h: fuzz_split) into config.json and the rest; the rest's first
 * byte picks weights.safetensors (even) or weights.npz (odd) for the remaining bytes.
 *   scripts/fuzz.sh whisper_mlx 10 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/wtab/wtab_readers.h"
#include "fuzz_util.h"

static float g_scratch[1 << 16];

static void touch(const wtab *w) {
    volatile float sink = 0;
    for (int i = 0; i < w->n; i++) {
        const wt_tensor *t = &w->t[i];
        if (wtab_find(w, t->name) != t) abort();
        for (int64_t off = 0; off < t->n_elems; off += 1 << 16) {
            const int64_t n = t->n_elems - off < (1 << 16) ? t->n_elems - off : (1 << 16);
            wt_to_f32(t, off, n, g_scratch);
            sink += g_scratch[0];
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = fuzz_tmpdir();
    fuzz_file cfg, st, npz;
    fuzz_file_init(&cfg, dir, "config.json");
    fuzz_file_init(&st, dir, "weights.safetensors");
    fuzz_file_init(&npz, dir, "weights.npz");
    unlink(st.path);
    unlink(npz.path);
    const uint8_t *a, *b;
    size_t na, nb;
    fuzz_split(data, size, &a, &na, &b, &nb);
    fuzz_file_write(&cfg, a, na);
    fuzz_file_write(nb && (b[0] & 1) ? &npz : &st, nb ? b + 1 : b, nb ? nb - 1 : 0);
    wtab *w = NULL;
    if (wtab_read_mlx(dir, &w) != STENO_OK) {
        if (w) abort();
        return 0;
    }
    touch(w);
    wtab_free(w);
    return 0;
}
