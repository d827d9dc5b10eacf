/* stream_cmd.c — `steno stream [options] INPUT`: live transcription (steno_stream_*, LocalAgreement-2
 * of whisper_streaming; docs/STREAMING.md). INPUT is "-" (standard input: raw PCM with --format,
 * or any container FFmpeg probes), a file that may still be growing, or a URL FFmpeg opens. A
 * reader thread decodes the input as it arrives (src/audio: audio_stream_open_live) so that the
 * transcription, which is slower than the input's arrival at times, catches up with all the
 * audio that came meanwhile instead of falling behind (--catch-up). */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/stream.h"
#include "commands.h"
#include "options.h"
#include "steno.h"

#define READ_CHUNK 512 /* samples the reader hands over at a time (32 ms) */
/* audio read ahead of the transcription at most (10 min, 38 MB): past it the reader waits, so a
 * source far faster than real time (a pipe from /dev/zero, a fast network) cannot fill memory */
#define FEED_MAX ((size_t)600 * STENO_SAMPLE_RATE)

typedef struct {
    const char *model, *model_dir, *vad_model, *format, *language, *catch_up;
    int rate, follow_ms, threads;
    bool plain, no_vad;
    steno_stream_options so;
    steno_opt_list inputs;
} stream_opts;

#define AT(field) STENO_OPT_AT(stream_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "-m|--model", "NAME|DIR|FILE", AT(model), .def = "tiny.en",
     .help = "a model name looked up in --model-dir, a model directory (CTranslate2, Hugging Face or MLX) or a "
             "whisper.cpp ggml file"},
    {STENO_OPT_STRING, "--model-dir", "DIR", AT(model_dir), .def = "$STENO_MODELS_DIR or ~/.cache/steno/models",
     .help = "where named models are"},
    {STENO_OPT_CHOICE, "--format", NULL, AT(format), .flags = STENO_OPT_AS_STRING, .choices = "auto|s16le|f32le",
     .def = "auto", .help = "the input: any container FFmpeg recognizes, or raw mono PCM (16-bit or float, little-endian)"},
    {STENO_OPT_INT, "--rate", "HZ", AT(rate), STENO_OPT_RANGE(STENO_AUDIO_MIN_RATE, STENO_AUDIO_MAX_RATE),
     .def = "16000", .help = "the sample rate of raw PCM input"},
    {STENO_OPT_INT, "--step-ms", "MS", AT(so.step_ms), STENO_OPT_RANGE(100, 30000), .def = "1000",
     .help = "a new hypothesis once this much new audio arrived"},
    {STENO_OPT_INT, "--length-ms", "MS", AT(so.length_ms), STENO_OPT_RANGE(1000, 30000), .def = "15000",
     .help = "cut the buffer at a committed segment end once it is longer (at 30 s it is committed whole)"},
    {STENO_OPT_INT, "--keep-ms", "MS", AT(so.keep_ms), STENO_OPT_RANGE(0, 5000), .def = "200",
     .help = "audio kept before the start of speech"},
    {STENO_OPT_INT, "--vad-silence-ms", "MS", AT(so.vad_silence_ms), STENO_OPT_RANGE(100, 10000), .def = "600",
     .help = "a pause this long ends an utterance: its text is committed"},
    {STENO_OPT_DOUBLE, "--vad-threshold", "P", AT(so.vad_threshold), STENO_OPT_RANGE(0, 1), .def = "0.5",
     .help = "a 32-ms frame is speech when its probability is >= P"},
    {STENO_OPT_FLAG, "--no-vad", .at = AT(no_vad), .help = "transcribe every step, silence too"},
    {STENO_OPT_STRING, "--vad-model", "PATH", AT(vad_model),
     .def = STENO_VAD_MODEL_FILE " in --model-dir (scripts/fetch_vad.sh)", .help = "the VAD's weights"},
    {STENO_OPT_STRING, "--language", "LANG", AT(language), .def = "auto",
     .help = "the spoken language; auto: detected on the first speech (multilingual models)"},
    {STENO_OPT_INT, "--beam-size", "N", AT(so.beam_size), STENO_OPT_RANGE(0, 64), .def = "0 = greedy",
     .help = "beam search width"},
    {STENO_OPT_INT, "-t|--threads", "N", AT(threads), STENO_OPT_RANGE(0, 256), .def = "0 = all cores",
     .help = "threads for the model"},
    {STENO_OPT_INT, "--follow-ms", "MS", AT(follow_ms), STENO_OPT_RANGE(0, 86400000), .def = "2000",
     .help = "a file input ends when it has not grown for MS (0: at its end)"},
    {STENO_OPT_CHOICE, "--catch-up", NULL, AT(catch_up), .flags = STENO_OPT_AS_STRING, .choices = "auto|yes|no",
     .def = "auto",
     .help = "yes: each hypothesis takes all audio that arrived; no: exactly --step-ms of it (reproducible); "
             "auto: no for a regular file or redirected file on stdin, else yes"},
    {STENO_OPT_FLAG, "--plain", .at = AT(plain), .help = "print the committed text alone, without times"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
static const steno_opt INPUTS = {STENO_OPT_LIST, .metavar = "INPUT", .at = AT(inputs)};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .positional = &INPUTS,
    .err_prefix = "steno stream: ", .verb = "stream", .underscores = true, .usage = steno_stream_usage,
    .help_col = 32,
};

void steno_stream_usage(FILE *f) {
    fputs("usage: steno stream [options] INPUT\n"
          "\n"
          "Transcribes live audio and prints the text as it settles (LocalAgreement-2 of\n"
          "whisper_streaming: a word is printed once two consecutive hypotheses agree on it).\n"
          "INPUT is - (standard input), a file that may still be growing, or a URL FFmpeg opens.\n"
          "Each line is \"[START --> END] TEXT\" (seconds from the start of the input).\n"
          "Exit 0 at the end of the input; 1 after a read or decoding error (one line on stderr,\n"
          "the text before it printed).\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

/* What the reader thread has decoded and the transcription has not taken yet. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* audio arrived or the input ended */
    pthread_cond_t space; /* the transcription took audio */
    float *q;
    size_t n, cap;
    int eof;
    steno_status st; /* the reader's error (eof set) */
    char err[512];
    audio_stream *in;
} feed;

static void *reader(void *arg) {
    feed *f = arg;
    float chunk[READ_CHUNK];
    for (;;) {
        size_t got = 0;
        steno_status st = audio_stream_read(f->in, chunk, READ_CHUNK, &got);
        pthread_mutex_lock(&f->mu);
        while (st == STENO_OK && got > 0 && f->n >= FEED_MAX) pthread_cond_wait(&f->space, &f->mu);
        if (st == STENO_OK && got > 0 && f->n + got > f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 16000;
            while (cap < f->n + got) cap *= 2;
            float *q = realloc(f->q, sizeof(float) * cap);
            if (!q) st = STENO_E_NOMEM;
            else {
                f->q = q;
                f->cap = cap;
            }
            if (!q) snprintf(f->err, sizeof f->err, "out of memory reading the input");
        } else if (st != STENO_OK) {
            snprintf(f->err, sizeof f->err, "%s", steno_errmsg());
        }
        if (st == STENO_OK && got > 0) {
            memcpy(f->q + f->n, chunk, sizeof(float) * got);
            f->n += got;
        }
        if (st != STENO_OK || got < READ_CHUNK) {
            f->st = st;
            f->eof = 1;
        }
        pthread_cond_signal(&f->cv);
        const int end = f->eof;
        pthread_mutex_unlock(&f->mu);
        if (end) return NULL;
    }
}

static int print_commits(const steno_stream_commit *c, int n, bool plain) {
    for (int i = 0; i < n; i++) {
        const char *t = c[i].text;
        while (*t == ' ') t++;
        if (plain) printf("%s\n", t);
        else printf("[%.2f --> %.2f] %s\n", c[i].start, c[i].end, t);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Feeds the reader's audio to the stream until the input ends; returns the exit status. */
static int run(steno_stream *s, feed *f, size_t step, bool catch_up, bool plain) {
    float *buf = NULL;
    size_t cap = 0;
    int status = 0;
    for (;;) {
        pthread_mutex_lock(&f->mu);
        while (!f->eof && f->n < step) pthread_cond_wait(&f->cv, &f->mu);
        size_t take = catch_up || f->n < step ? f->n : step;
        if (take > cap) {
            float *b = realloc(buf, sizeof(float) * take);
            if (!b) {
                pthread_mutex_unlock(&f->mu);
                fprintf(stderr, "steno: out of memory\n");
                status = 1;
                break;
            }
            buf = b;
            cap = take;
        }
        if (take > 0) {
            memcpy(buf, f->q, sizeof(float) * take);
            memmove(f->q, f->q + take, sizeof(float) * (f->n - take));
            f->n -= take;
            pthread_cond_signal(&f->space);
        }
        const int end = f->eof && f->n == 0;
        pthread_mutex_unlock(&f->mu);
        const steno_stream_commit *c = NULL;
        int nc = 0;
        if (take > 0 && steno_stream_push(s, buf, take, &c, &nc) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            status = 1;
            break;
        }
        if (print_commits(c, nc, plain) != 0) {
            status = 1;
            break;
        }
        if (end) break;
    }
    free(buf);
    if (status == 0) {
        const steno_stream_commit *c = NULL;
        int nc = 0;
        if (steno_stream_finish(s, &c, &nc) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            status = 1;
        } else if (print_commits(c, nc, plain) != 0) {
            status = 1;
        }
    }
    if (status == 0 && f->st != STENO_OK) {
        fprintf(stderr, "steno: %s\n", f->err);
        status = 1;
    }
    return status;
}

/* auto: a regular file (named, or redirected to stdin) is read at disk speed, so exact steps
 * make the output reproducible; a pipe, socket, terminal or URL is live. */
static bool want_catch_up(const char *mode, const char *input) {
    if (strcmp(mode, "auto") != 0) return strcmp(mode, "yes") == 0;
    if (strstr(input, "://")) return true;
    struct stat sb;
    const int ok = strcmp(input, "-") == 0 ? fstat(0, &sb) : stat(input, &sb);
    return !(ok == 0 && S_ISREG(sb.st_mode));
}

int steno_cmd_stream(int argc, char **argv) {
    stream_opts a = {.model = "tiny.en", .format = "auto", .catch_up = "auto", .rate = STENO_SAMPLE_RATE,
                     .follow_ms = 2000, .so = steno_stream_default_options()};
    const int parsed = steno_opts_parse(&SPEC, &a, argc, argv);
    if (parsed >= 0) {
        steno_opt_list_free(&a.inputs);
        return parsed;
    }
    if (a.inputs.n != 1) {
        fprintf(stderr, "steno stream: %s (see 'steno stream --help')\n",
                a.inputs.n == 0 ? "no INPUT (- for standard input)" : "one INPUT at a time");
        steno_opt_list_free(&a.inputs);
        return 2;
    }
    if (strcmp(a.format, "auto") == 0 && a.rate != STENO_SAMPLE_RATE) {
        fprintf(stderr, "steno stream: --rate is for raw input (--format s16le|f32le): a container declares its "
                        "own rate (see 'steno stream --help')\n");
        steno_opt_list_free(&a.inputs);
        return 2;
    }
    const char *input = a.inputs.items[0];
    steno_opt_list_free(&a.inputs);
    const char *lang = NULL;
    if (a.language && strcasecmp(a.language, "auto") != 0 && !(lang = steno_language_code(a.language))) {
        fprintf(stderr, "steno stream: --language: unknown language '%s' (see 'steno stream --help')\n", a.language);
        return 2;
    }
    char model_path[4200], vad_path[4200];
    if (steno_cli_model_path(a.model, a.model_dir, model_path, sizeof model_path) != 0) return 1;
    steno_whisper *w = NULL;
    steno_vad *vad = NULL;
    steno_stream *s = NULL;
    audio_stream *in = NULL;
    steno_whisper_options wo = steno_whisper_default_options();
    wo.n_threads = a.threads;
    if (steno_whisper_load_ex(model_path, &wo, &w) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        return 1;
    }
    int status = 1;
    steno_status ost = STENO_OK;
    steno_cli_vad_path(a.vad_model, a.model_dir, vad_path, sizeof vad_path);
    a.so.language = lang;
    a.so.n_threads = a.threads;
    if (!a.no_vad && steno_vad_load(vad_path, &vad) != STENO_OK) {
        fprintf(stderr, "steno: %s%s\n", steno_errmsg(), a.vad_model ? "" : " (run scripts/fetch_vad.sh)");
    } else if (steno_stream_new(w, vad, &a.so, &s) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        status = strstr(steno_errmsg(), "language") ? 2 : 1;
    } else if ((ost = audio_stream_open_live(input, strcmp(a.format, "auto") ? a.format : NULL, a.rate, a.follow_ms,
                                             &in)) != STENO_OK) {
        /* raw PCM piped in without --format is what FFmpeg's probe cannot recognize */
        const bool hint = ost == STENO_E_FORMAT && strcmp(a.format, "auto") == 0 && !strstr(input, "://");
        fprintf(stderr, "steno: %s%s\n", steno_errmsg(), hint ? " (raw PCM? give --format s16le|f32le and --rate)" : "");
    } else {
        feed f = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .space = PTHREAD_COND_INITIALIZER,
                  .in = in};
        pthread_t th;
        if (pthread_create(&th, NULL, reader, &f) != 0) {
            fprintf(stderr, "steno: cannot start the input reader\n");
        } else {
            const size_t step = (size_t)a.so.step_ms * STENO_SAMPLE_RATE / 1000;
            status = run(s, &f, step, want_catch_up(a.catch_up, input), a.plain);
            if (status != 0 && !f.eof) {
                /* the transcription failed while the input is still open: leave without it */
                fflush(stdout);
                _exit(status);
            }
            pthread_join(th, NULL);
        }
        free(f.q);
    }
    audio_stream_close(in);
    steno_stream_free(s);
    steno_vad_free(vad);
    steno_whisper_free(w);
    return status;
}
