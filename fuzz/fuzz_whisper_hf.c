/* fuzz_whisper_hf.c — libFuzzer target for wtab_read_hf() (Hugging Face transformers Whisper
 * folders: config.json, model.safetensors, or model.safetensors.index.json and its shard).
 *
 * The input is split (fuzz_util.h: fuzz_split) into config.json and the rest; the rest's first
 * byte picks the layout: even → model.safetensors = the rest; odd → split again into
 * model.safetensors.index.json and the shard model-00001-of-00001.safetensors. The files are
 * written in a private directory (stale ones removed first) and read as a model folder.
 *   scripts/fuzz.sh whisper_hf 10 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/wtab/wtab_readers.h"
#include "fuzz_util.h"

static float g_scratch[1 << 16];

static void fuzz_touch_table(const wtab *w) {
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
    fuzz_file cfg, st, idx, shard;
    fuzz_file_init(&cfg, dir, "config.json");
    fuzz_file_init(&st, dir, "model.safetensors");
    fuzz_file_init(&idx, dir, "model.safetensors.index.json");
    fuzz_file_init(&shard, dir, "model-00001-of-00001.safetensors");
    unlink(st.path);
    unlink(idx.path);
    unlink(shard.path);
    const uint8_t *a, *b;
    size_t na, nb;
    fuzz_split(data, size, &a, &na, &b, &nb);
    fuzz_file_write(&cfg, a, na);
    if (nb == 0 || (b[0] & 1) == 0) {
        fuzz_file_write(&st, nb ? b + 1 : b, nb ? nb - 1 : 0);
    } else {
        const uint8_t *c, *d;
        size_t nc, nd;
        fuzz_split(b + 1, nb - 1, &c, &nc, &d, &nd);
        fuzz_file_write(&idx, c, nc);
        fuzz_file_write(&shard, d, nd);
    }
    wtab *w = NULL;
    if (wtab_read_hf(dir, &w) != STENO_OK) {
        if (w) abort();
        return 0;
    }
    fuzz_touch_table(w);
    wtab_free(w);
    return 0;
}
