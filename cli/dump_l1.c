/* dump_l1.c — `steno dump-l1`: raw encoder output and teacher-forced decoder logits of the first
 * 30-s window, for the L1 parity tests against CTranslate2 (tests/py/test_l1.py). Not a user
 * command: it exposes model internals as raw little-endian float32 files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "commands.h"
#include "options.h"
#include "whisper/faithful.h"

static int write_f32(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof(float), n, f) != n) {
        fprintf(stderr, "steno: %s: cannot write\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

typedef struct {
    const char *model_dir, *audio, *tokens, *enc_out, *log_out;
    int seek;
} dump_opts;

static void print_usage(FILE *f);

#define AT(field) STENO_OPT_AT(dump_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "-m|--model", "DIR", AT(model_dir), .help = "CTranslate2 model directory (required)"},
    {STENO_OPT_STRING, "--audio", "FILE", AT(audio), .help = "the audio (required); its first 30-s window is used"},
    {STENO_OPT_STRING, "--tokens", "IDS", AT(tokens), .help = "ID,ID,...: the teacher-forced decoder tokens"},
    {STENO_OPT_STRING, "--encoder-out", "FILE", AT(enc_out), .help = "write the encoder output (float32) here"},
    {STENO_OPT_STRING, "--logits-out", "FILE", AT(log_out), .help = "write the tokens' logits (float32) here"},
    {STENO_OPT_INT, "--seek", "FRAMES", AT(seek), STENO_OPT_MIN(0), .def = "0",
     .help = "the window starts at this mel frame"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno dump-l1: ",
    .verb = "dump-l1", .usage = print_usage, .help_col = 24,
};

static void print_usage(FILE *f) {
    fputs("usage: steno dump-l1 --model DIR --audio FILE [--tokens ID,ID,...] [--encoder-out E.f32]\n"
          "                     [--logits-out L.f32] [--seek FRAMES]\n"
          "\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

int steno_cmd_dump_l1(int argc, char **argv) {
    dump_opts o = {0};
    const int parsed = steno_opts_parse(&SPEC, &o, argc, argv);
    if (parsed >= 0) return parsed;
    const char *model_dir = o.model_dir, *audio = o.audio, *tokens_arg = o.tokens, *enc_out = o.enc_out,
               *log_out = o.log_out;
    int seek = o.seek;
    if (!model_dir || !audio) {
        fprintf(stderr, "steno dump-l1: --model and --audio are required (see 'steno dump-l1 --help')\n");
        return 2;
    }

    int *tokens = NULL, n_tokens = 0, rc = 1;
    if (tokens_arg) {
        tokens = malloc(sizeof(int) * (strlen(tokens_arg) / 2 + 2));
        if (!tokens) return 1;
        for (char *s = (char *)tokens_arg; *s;) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s) {
                free(tokens);
                fprintf(stderr, "steno dump-l1: --tokens: expected ID,ID,..., got '%s'\n", tokens_arg);
                return 2;
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
