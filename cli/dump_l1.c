/* dump_l1.c — `steno dump-l1`: raw encoder output and teacher-forced decoder logits of the first
 * 30-s window, for the L1 parity tests against CTranslate2 (tests/py/test_l1.py). Not a user
 * command: it exposes model internals as raw little-endian float32 files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "commands.h"
#include "whisper/forward.h"

static int write_f32(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof(float), n, f) != n) {
        fprintf(stderr, "steno: %s: cannot write\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

static void print_usage(FILE *f) {
    fprintf(f, "usage: steno dump-l1 --model DIR --audio FILE [--tokens ID,ID,...] "
               "[--encoder-out E.f32] [--logits-out L.f32] [--seek FRAMES]\n");
}

static int usage(void) {
    print_usage(stderr);
    return 2;
}

int steno_cmd_dump_l1(int argc, char **argv) {
    const char *model_dir = NULL, *audio = NULL, *tokens_arg = NULL, *enc_out = NULL, *log_out = NULL;
    int seek = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) return usage();
        if (!strcmp(a, "--model")) model_dir = argv[++i];
        else if (!strcmp(a, "--audio")) audio = argv[++i];
        else if (!strcmp(a, "--tokens")) tokens_arg = argv[++i];
        else if (!strcmp(a, "--encoder-out")) enc_out = argv[++i];
        else if (!strcmp(a, "--logits-out")) log_out = argv[++i];
        else if (!strcmp(a, "--seek")) seek = atoi(argv[++i]);
        else return usage();
    }
    if (!model_dir || !audio || seek < 0) return usage();

    int *tokens = NULL, n_tokens = 0, rc = 1;
    if (tokens_arg) {
        tokens = malloc(sizeof(int) * (strlen(tokens_arg) / 2 + 2));
        if (!tokens) return 1;
        for (char *s = (char *)tokens_arg; *s;) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s) {
                free(tokens);
                return usage();
            }
            tokens[n_tokens++] = (int)v;
            s = *end == ',' ? end + 1 : end;
        }
    }
    whisper_model *m = NULL;
    float *samples = NULL, *window = NULL, *xa = NULL, *logits = NULL;
    size_t n = 0;
    steno_mel mel = {0};
    whisper_decoder dec = {0};
    if (whisper_model_load(model_dir, &m) != STENO_OK || steno_audio_load(audio, &samples, &n) != STENO_OK ||
        steno_log_mel(samples, n, STENO_CHUNK_SAMPLES, m->n_mels, &mel) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        goto done;
    }
    const int W = 2 * m->n_audio_ctx, content = mel.n_frames - W;
    if (seek > content) seek = content;
    const int size = content - seek < W ? content - seek : W;
    window = calloc((size_t)m->n_mels * W, sizeof(float));
    xa = malloc(sizeof(float) * (size_t)m->n_audio_ctx * m->n_audio_state);
    if (!window || !xa) goto done;
    for (int c = 0; c < m->n_mels; c++)
        memcpy(window + (size_t)c * W, mel.data + (size_t)c * mel.n_frames + seek, sizeof(float) * (size_t)size);
    if (whisper_encode(m, window, xa) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        goto done;
    }
    if (enc_out && write_f32(enc_out, xa, (size_t)m->n_audio_ctx * m->n_audio_state)) goto done;
    if (n_tokens > 0 && log_out) {
        logits = malloc(sizeof(float) * (size_t)n_tokens * m->n_vocab);
        if (!logits || whisper_decoder_init(&dec, m) != STENO_OK) goto done;
        whisper_decoder_set_audio(&dec, xa);
        if (whisper_decoder_forward(&dec, tokens, n_tokens, logits, 1) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            goto done;
        }
        if (write_f32(log_out, logits, (size_t)n_tokens * m->n_vocab)) goto done;
    }
    rc = 0;
done:
    if (dec.m) whisper_decoder_free(&dec);
    whisper_model_free(m);
    steno_mel_free(&mel);
    free(samples);
    free(window);
    free(xa);
    free(logits);
    free(tokens);
    return rc;
}
