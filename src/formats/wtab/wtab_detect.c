/* wtab_detect.c — format detection, the shared dimension checks, and the sinusoids of the
 * encoder's positional embedding (wtab_readers.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "formats/sniff.h"
#include "formats/wtab/wtab_readers.h"

static int is_file(const char *dir, const char *name) {
    char p[4096];
    struct stat s;
    if (name) snprintf(p, sizeof p, "%s/%s", dir, name);
    else snprintf(p, sizeof p, "%s", dir);
    return stat(p, &s) == 0 && S_ISREG(s.st_mode);
}

const char *wtab_detect(const char *path) {
    const char *fmt = NULL;
    return wtab_detect_st(path, &fmt) == STENO_OK ? fmt : NULL;
}

steno_status wtab_detect_st(const char *path, const char **fmt) {
    struct stat s;
    *fmt = NULL;
    if (stat(path, &s) != 0) return steno_fail(STENO_E_IO, "%s: no such file or directory", path);
    if (S_ISREG(s.st_mode)) {
        FILE *f = fopen(path, "rb");
        unsigned char b[4] = {0};
        const size_t n = f ? fread(b, 1, 4, f) : 0;
        if (f) fclose(f);
        if (n == 4 && memcmp(b, "lmgg", 4) == 0) return *fmt = "ggml", STENO_OK;
        const char *what = steno_sniff_model_file(path);
        return steno_fail(STENO_E_FORMAT, "%s: %s, not a Whisper model steno reads (a ggml file or a model directory)", path,
                   what ? what : "an unknown file");
    }
    if (is_file(path, "model.bin")) return *fmt = "ct2", STENO_OK;
    if (is_file(path, "model.safetensors.index.json")) return *fmt = "hf", STENO_OK;
    if (is_file(path, "weights.safetensors") || is_file(path, "weights.npz")) return *fmt = "mlx", STENO_OK;
    if (is_file(path, "model.safetensors")) {
        /* both HF and newer mlx-whisper use this name: HF's config.json says d_model */
        char p[4096];
        snprintf(p, sizeof p, "%s/config.json", path);
        FILE *f = fopen(p, "rb");
        char buf[8192] = {0};
        const size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = '\0';
        *fmt = strstr(buf, "\"n_audio_state\"") ? "mlx" : "hf";
        return STENO_OK;
    }
    return steno_fail(STENO_E_FORMAT,
               "%s: no Whisper model here (looked for model.bin, model.safetensors[.index.json], "
               "weights.safetensors, weights.npz)",
               path);
}

steno_status wtab_open(const char *path, wtab **out) {
    *out = NULL;
    const char *fmt;
    steno_status st0 = wtab_detect_st(path, &fmt);
    if (st0 != STENO_OK) return st0;
    if (strcmp(fmt, "ggml") == 0) return wtab_read_ggml(path, out);
    if (strcmp(fmt, "hf") == 0) return wtab_read_hf(path, out);
    if (strcmp(fmt, "mlx") == 0) return wtab_read_mlx(path, out);
    char p[4096];
    snprintf(p, sizeof p, "%s/model.bin", path);
    steno_status st = wtab_read_ct2(p, out);
    if (st == STENO_OK) { /* the table names the directory, as for the other formats */
        free((*out)->path);
        (*out)->path = strdup(path);
        if (!(*out)->path) {
            wtab_free(*out);
            *out = NULL;
            return steno_fail(STENO_E_NOMEM, "out of memory");
        }
    }
    return st;
}

static int dim(const wtab *w, const char *name, int rank, int axis) {
    const wt_tensor *t = wtab_find(w, name);
    if (!t || t->rank != rank || t->dims[axis] > (1 << 24)) return 0;
    return (int)t->dims[axis];
}

static int count_blocks(const wtab *w, const char *side) {
    char name[128];
    int n = 0;
    for (;;) {
        snprintf(name, sizeof name, "%s.blocks.%d.mlp.0.weight", side, n);
        if (!wtab_find(w, name) || n > 4096) return n;
        n++;
    }
}

steno_status wtab_dims_from_shapes(wtab *w) {
    whisper_dims *d = &w->dims;
    const struct { int *f; int v; const char *what; } got[] = {
        {&d->n_audio_state, dim(w, "encoder.conv1.weight", 3, 0), "n_audio_state (encoder.conv1.weight)"},
        {&d->n_mels, dim(w, "encoder.conv1.weight", 3, 1), "n_mels (encoder.conv1.weight)"},
        {&d->n_audio_ctx, dim(w, "encoder.positional_embedding", 2, 0), "n_audio_ctx (encoder.positional_embedding)"},
        {&d->n_vocab, dim(w, "decoder.token_embedding.weight", 2, 0), "n_vocab (decoder.token_embedding.weight)"},
        {&d->n_text_state, dim(w, "decoder.token_embedding.weight", 2, 1),
         "n_text_state (decoder.token_embedding.weight)"},
        {&d->n_text_ctx, dim(w, "decoder.positional_embedding", 2, 0), "n_text_ctx (decoder.positional_embedding)"},
        {&d->n_audio_layer, count_blocks(w, "encoder"), "n_audio_layer (encoder.blocks)"},
        {&d->n_text_layer, count_blocks(w, "decoder"), "n_text_layer (decoder.blocks)"},
    };
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
        if (got[i].v <= 0)
            return steno_fail(STENO_E_FORMAT, "%s: cannot read %s", w->path, got[i].what);
        if (*got[i].f == 0) *got[i].f = got[i].v;
        else if (*got[i].f != got[i].v)
            return steno_fail(STENO_E_FORMAT, "%s: the header says %s = %d, the tensors %d", w->path, got[i].what,
                              *got[i].f, got[i].v);
    }
    if (d->n_audio_head <= 0 || d->n_text_head <= 0 || d->n_audio_state % d->n_audio_head ||
        d->n_text_state % d->n_text_head || d->n_audio_state != d->n_text_state)
        return steno_fail(STENO_E_FORMAT, "%s: inconsistent widths and heads (%d/%d, %d/%d)", w->path,
                          d->n_audio_state, d->n_audio_head, d->n_text_state, d->n_text_head);
    w->have_dims = 1;
    return STENO_OK;
}

void wtab_sinusoids(int length, int channels, float *dst) {
    /* openai-whisper whisper/model.py: sinusoids — [sin(t·inv) | cos(t·inv)], inv_i =
     * exp(-i·ln(10000)/(channels/2 - 1)). Evaluated in float64 and rounded once: this reproduces
     * the float16 encodings of CTranslate2's and Hugging Face's tiny.en/base files bit for bit
     * (checked on all 1500 × 384 values), where float32 arithmetic differs in 1.4% of them. */
    const int half = channels / 2;
    const double inc = log(10000.0) / (double)(half - 1);
    for (int t = 0; t < length; t++)
        for (int i = 0; i < half; i++) {
            const double x = (double)t * exp(-inc * (double)i);
            dst[(size_t)t * channels + i] = (float)sin(x);
            dst[(size_t)t * channels + half + i] = (float)cos(x);
        }
}
