/* transcribe_cmd.c — `steno transcribe [options] FILE...`.
 *
 * Follows openai-whisper's command line (whisper/transcribe.py: cli) with dashes for underscores
 * (the underscore spellings are accepted too): the same option names, defaults and output files
 * (<output-dir>/<audio basename without extension>.<ext>, written by whisper/utils.py's writers,
 * here steno_write_result). Additions: `--output-dir -` prints one format to stdout, `--progress`,
 * `FILE` "-" reads standard input.
 *
 * Exit status: 0 ok; 1 when any input failed (one line "steno: <reason>" on stderr per failure,
 * the other inputs are still transcribed); 2 usage error.
 *
 * The option table and its parsers are in transcribe_opts.c (cli/transcribe_cmd.h).
 */
#include "commands.h"
#include "options.h"
#include "steno.h"
#include "transcribe_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* utils.py's writers in its order ("all"), then whisper.cpp's -ocsv and -olrc layouts */
static const char *const FORMATS[] = {"txt", "vtt", "srt", "tsv", "json", "csv", "lrc"};
#define N_FORMATS 7
#define N_ALL_FORMATS 5


/* ---- small helpers ----------------------------------------------------------------------- */

/* Prints "steno: <message> (see 'steno transcribe --help')" and returns 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("steno: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see 'steno transcribe --help')\n", stderr);
    va_end(ap);
    return 2;
}

/* Prints "steno: [prefix: ]msg" as exactly one line (newlines in msg become spaces). */
static void report(const char *prefix, const char *msg) {
    fputs("steno: ", stderr);
    if (prefix) fprintf(stderr, "%s: ", prefix);
    if (!msg || !*msg) msg = "unknown error";
    for (const char *p = msg; *p; p++) fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
    fputc('\n', stderr);
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p. Returns 0 or -1 with errno set. */
static int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) { errno = ENAMETOOLONG; return -1; }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    if (!is_dir(path)) { errno = ENOTDIR; return -1; }
    return 0;
}

/* os.path.splitext(os.path.basename(path))[0] into out; "stdin" for "-". */
static void output_stem(const char *path, char *out, size_t size) {
    if (strcmp(path, "-") == 0) { snprintf(out, size, "stdin"); return; }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t len = strlen(base);
    if (dot) {
        /* splitext keeps leading dots: ".bashrc" has no extension. */
        for (const char *p = base; p < dot; p++)
            if (*p != '.') { len = (size_t)(dot - base); break; }
    }
    snprintf(out, size, "%.*s", (int)len, base);
}

/* utils.py format_timestamp(seconds) with the default (no hours unless > 0, "."). */
static void format_timestamp(char *buf, size_t size, double seconds) {
    if (!(seconds >= 0) || !isfinite(seconds)) seconds = 0;
    long long ms = (long long)nearbyint(seconds * 1000.0);
    long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
    ms %= 1000;
    if (h > 0) snprintf(buf, size, "%02lld:%02lld:%02lld.%03lld", h, m, s, ms);
    else snprintf(buf, size, "%02lld:%02lld.%03lld", m, s, ms);
}

/* ---- callbacks --------------------------------------------------------------------------- */

typedef struct run_state {
    FILE *verbose_to;     /* NULL: not verbose */
    bool progress_tty;
    bool progress_shown;  /* a progress line is on the terminal */
    int last_percent;
    const char *input;
    double duration;      /* seconds of the input's audio */
    double t0;            /* monotonic clock when its transcription started */
} run_state;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "1:02:03" or "2:03" */
static void format_clock(char *buf, size_t n, double s) {
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void clear_progress(run_state *rs) {
    if (!rs->progress_shown) return;
    fputs(rs->progress_tty ? "\r\033[K" : "\n", stderr);
    rs->progress_shown = false;
}

/* whisper/transcribe.py prints "[start --> end] text" (text unstripped) per segment. */
static int on_segment(void *user, const steno_segment *seg) {
    run_state *rs = user;
    if (!rs->verbose_to) return 0;
    char a[128], b[128];
    format_timestamp(a, sizeof a, seg->start);
    format_timestamp(b, sizeof b, seg->end);
    if (rs->verbose_to == stderr || rs->progress_tty) clear_progress(rs);
    fprintf(rs->verbose_to, "[%s --> %s] %s\n", a, b, seg->text ? seg->text : "");
    fflush(rs->verbose_to);
    return 0;
}

/* whisper.cpp's -pp and faster-whisper users' tqdm bars: a bar, the audio position, the speed in
 * multiples of real time and the time left ("talk.mp3  42% [########------------]  0:50/2:00
 * 6.1x  ETA 0:11"); one line redrawn on a terminal, a line per percent otherwise. */
static void on_progress(void *user, double fraction) {
    run_state *rs = user;
    int pct = (int)floor(fraction * 100.0 + 1e-9);
    if (pct < 0) pct = 0;
    if (pct > 100) pct = 100;
    if (pct == rs->last_percent) return;
    rs->last_percent = pct;
    enum { WIDTH = 20 };
    char bar[WIDTH + 1], pos[32], total[32], eta[32];
    const int fill = pct * WIDTH / 100;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '-';
    bar[WIDTH] = '\0';
    const double at = fraction * rs->duration, elapsed = now_seconds() - rs->t0;
    const double speed = elapsed > 0.05 && at > 0 ? at / elapsed : 0;
    format_clock(pos, sizeof pos, at);
    format_clock(total, sizeof total, rs->duration);
    if (speed > 0) format_clock(eta, sizeof eta, (rs->duration - at) / speed);
    else snprintf(eta, sizeof eta, "?");
    char line[512];
    if (speed > 0)
        snprintf(line, sizeof line, "%s %3d%% [%s] %s/%s %.1fx ETA %s", rs->input, pct, bar, pos, total, speed, eta);
    else
        snprintf(line, sizeof line, "%s %3d%% [%s] %s/%s", rs->input, pct, bar, pos, total);
    if (rs->progress_tty) fprintf(stderr, "\r\033[K%s", line);
    else fprintf(stderr, "%s\n", line);
    rs->progress_shown = rs->progress_tty;
    fflush(stderr);
}

/* Writes r to <dir>/<stem>.<fmt> for each format, or to stdout. Returns false after reporting. */
static bool write_outputs(const steno_result *r, const transcribe_opts *o, const char *input) {
    if (strcmp(o->output_dir, "-") == 0) {
        if (steno_write_result_ex(r, o->output_format, &o->writer, stdout) != STENO_OK) {
            report("standard output", steno_errmsg());
            return false;
        }
        return true;
    }
    char stem[1024], path[8192];
    if (o->output_name) snprintf(stem, sizeof stem, "%s", o->output_name);
    else output_stem(input, stem, sizeof stem);
    bool ok = true;
    for (int i = 0; i < N_FORMATS; i++) {
        const bool all = strcmp(o->output_format, "all") == 0;
        if (all ? i >= N_ALL_FORMATS : strcmp(o->output_format, FORMATS[i]) != 0) continue;
        snprintf(path, sizeof path, "%s/%s.%s", o->output_dir, stem, FORMATS[i]);
        FILE *f = fopen(path, "w");
        if (!f) {
            report(path, strerror(errno));
            ok = false;
            continue;
        }
        steno_status st = steno_write_result_ex(r, FORMATS[i], &o->writer, f);
        int close_err = fclose(f);
        if (st != STENO_OK || close_err != 0) {
            report(path, st != STENO_OK ? steno_errmsg() : strerror(errno));
            ok = false;
        }
    }
    return ok;
}

/* The name of a language code, title-cased as openai-whisper prints it ("Haitian Creole"). */
static void language_name(const char *code, char *out, size_t n) {
    const char *name = steno_language_name(code);
    if (!name) name = code;
    const size_t len = strnlen(name, n - 1);
    memcpy(out, name, len);
    out[len] = '\0';
    for (char *c = out; *c; c++)
        if (c == out || c[-1] == ' ') *c = (char)toupper((unsigned char)*c);
}

/* --detect-language: prints the 5 most probable languages of samples as TSV lines. */
static steno_status print_languages(steno_whisper *w, const char *input, steno_audio *audio, const float *samples,
                                    size_t n) {
    steno_language_prob top[5];
    int n_top = 0;
    steno_status st = audio ? steno_detect_language_audio(w, audio, top, 5, &n_top)
                            : steno_detect_language(w, samples, n, top, 5, &n_top);
    for (int i = 0; st == STENO_OK && i < n_top; i++) {
        char name[64];
        language_name(top[i].code, name, sizeof name);
        printf("%s\t%s\t%s\t%.4f\n", input, top[i].code, name, top[i].probability);
    }
    return st;
}

/* Loads the model and runs the checks of the options against it (vocabulary, languages).
 * Returns 0 with *out set, 1 when the model cannot be used, 2 for a usage error; may set *lang. */
static int load_model(const transcribe_opts *o, const char *model_path, const char **lang, steno_whisper **out) {
    steno_whisper *w = NULL;
    if (steno_whisper_load_ex(model_path, &o->load, &w) != STENO_OK) {
        report(NULL, steno_errmsg());
        return 1;
    }
    for (int k = 0; k < o->n_suppress_tokens; k++) {
        if (o->suppress_tokens[k] >= steno_whisper_n_vocab(w)) {
            fprintf(stderr, "steno: --suppress-tokens: token id %d is outside the vocabulary of "
                            "model %s (0..%d)\n", o->suppress_tokens[k], o->model,
                    steno_whisper_n_vocab(w) - 1);
            steno_whisper_free(w);
            return 2;
        }
    }
    const bool multilingual = steno_whisper_is_multilingual(w);
    if (!multilingual) { /* options that need a multilingual model are usage errors here */
        const char *need = *lang && strcmp(*lang, "en") != 0 ? "--language"
                           : o->task == STENO_TASK_TRANSLATE ? "--task translate"
                           : o->detect_language              ? "--detect-language"
                                                            : NULL;
        if (need) {
            if (!strcmp(need, "--language"))
                fprintf(stderr, "steno: --language %s: model %s is English-only (use --language en)\n",
                        o->language, o->model);
            else
                fprintf(stderr, "steno: %s needs a multilingual model; %s is English-only\n", need, o->model);
            steno_whisper_free(w);
            return 2;
        }
        *lang = "en"; /* auto on an English-only model */
    } else if (*lang && !steno_whisper_has_language(w, *lang)) { /* e.g. yue on a model before large-v3 */
        fprintf(stderr, "steno: --language %s: not a language of model %s\n", o->language, o->model);
        steno_whisper_free(w);
        return 2;
    }

    *out = w;
    return 0;
}

/* After the model: --draft-layers within its decoder, and --draft-model loaded with the same options
 * and checked for the same vocabulary. Returns 0, 2 (a usage error) or 1, the error printed. */
static int load_draft(const transcribe_opts *o, const steno_whisper *w, steno_whisper **out) {
    *out = NULL;
    const int L = steno_whisper_n_text_layers(w);
    if (o->draft_layers && o->draft_layers >= L) {
        fprintf(stderr,
                "steno: --draft-layers %d: model %s has %d decoder layers (1..%d draft) "
                "(see 'steno transcribe --help')\n",
                o->draft_layers, o->model, L, L - 1);
        return 2;
    }
    if (!o->draft_model) return 0;
    char path[8192];
    if (steno_cli_option_model_path("--draft-model", o->draft_model, o->model_dir, path, sizeof path) != 0) return 1;
    steno_whisper *d = NULL;
    if (steno_whisper_load_ex(path, &o->load, &d) != STENO_OK) {
        fprintf(stderr, "steno: --draft-model: %s\n", steno_errmsg());
        return 1;
    }
    if (steno_whisper_n_vocab(d) != steno_whisper_n_vocab(w) ||
        steno_whisper_is_multilingual(d) != steno_whisper_is_multilingual(w)) {
        fprintf(stderr, "steno: --draft-model %s: another vocabulary (%d tokens, %s) than model %s's (%d, %s)\n",
                o->draft_model, steno_whisper_n_vocab(d), steno_whisper_is_multilingual(d) ? "multilingual" : "English-only",
                o->model, steno_whisper_n_vocab(w), steno_whisper_is_multilingual(w) ? "multilingual" : "English-only");
        steno_whisper_free(d);
        return 2;
    }
    *out = d;
    return 0;
}

/* --vad's network: --vad-model, else the model cache's. Returns 0, or 1 with the error printed. */
static int load_vad(const transcribe_opts *o, steno_vad **out) {
    char path[8192];
    steno_cli_vad_path(o->vad_model, o->model_dir, path, sizeof path);
    if (steno_vad_load(path, out) != STENO_OK) {
        fprintf(stderr, "steno: --vad: %s%s\n", steno_errmsg(), o->vad_model ? "" : " (run scripts/fetch_vad.sh)");
        return 1;
    }
    return 0;
}

int steno_cmd_transcribe(int argc, char **argv) {
    transcribe_opts o = {
        .model = DEFAULT_MODEL, .output_dir = ".", .output_format = NULL, .verbose = -1,
        .temperature = 0.0, .increment = 0.2, .compression_ratio_threshold = 2.4,
        .logprob_threshold = -1.0, .no_speech_threshold = 0.6,
        .condition_on_previous_text = true, .suppress_blank = true, .threads = 0,
        .load = steno_whisper_default_options(), .writer = steno_writer_default_options(),
        .hallucination_silence_threshold = -1,
        .beam_size = 0, .best_of = 1, .patience = 1.0, .length_penalty = 1.0, .seed = 0,
        .vad_opts = steno_vad_default_options(),
        .draft_kind = -1, .num_draft = -1, .compute_weights = -1,
    };
#define FREE_ALL() (steno_opt_list_free(&o.files), free(o.clip_timestamps), free(o.suppress_tokens))
#define FAIL_USAGE(...) \
    do { FREE_ALL(); return usage_error(__VA_ARGS__); } while (0)
    const int parsed = steno_opts_parse(&steno_transcribe_spec, &o, argc, argv);
    if (parsed >= 0) {
        FREE_ALL();
        return parsed;
    }
    const char **files = o.files.items;
    const int n_files = o.files.n;
    /* None (NAN) turns a threshold off */
    o.no_increment = isnan(o.increment);
    o.no_compression = isnan(o.compression_ratio_threshold);
    o.no_logprob = isnan(o.logprob_threshold);
    o.no_no_speech = isnan(o.no_speech_threshold);
    o.writer.highlight_words = o.highlight_words;

    /* Validate everything before loading the model. */
    if (n_files == 0) FAIL_USAGE("transcribe: no input files");
    if (o.output_name && n_files > 1) FAIL_USAGE("--output-name: names the outputs of one input, not %d", n_files);
    bool to_stdout = strcmp(o.output_dir, "-") == 0;
    if (!o.output_format) o.output_format = to_stdout ? "txt" : "all";
    if (to_stdout && strcmp(o.output_format, "all") == 0)
        FAIL_USAGE("--output-format all cannot be written to standard output (-o -)");
    int n_stdin = 0;
    for (int k = 0; k < n_files; k++) n_stdin += strcmp(files[k], "-") == 0;
    if (n_stdin > 1) FAIL_USAGE("standard input (-) can be read only once");
    const char *lang = NULL;
    if (o.language && strcasecmp(o.language, "auto") != 0 && !(lang = steno_language_code(o.language)))
        FAIL_USAGE("--language: unknown language '%s'", o.language);

    /* The temperature ladder: numpy.arange(temperature, 1.0 + 1e-6, increment). */
    double temps[MAX_TEMPERATURES];
    int n_temps = 0;
    if (o.no_increment) {
        temps[n_temps++] = o.temperature;
    } else {
        double n = ceil((1.0 + 1e-6 - o.temperature) / o.increment);
        if (n > MAX_TEMPERATURES)
            FAIL_USAGE("--temperature-increment-on-fallback: more than 64 temperatures");
        for (int k = 0; k < (int)n; k++) temps[n_temps++] = o.temperature + k * o.increment;
        if (n_temps == 0) temps[n_temps++] = o.temperature;
    }
    if (o.load.path == STENO_PATH_FAITHFUL && o.load.audio_ctx)
        FAIL_USAGE("--audio-ctx needs --path fast");
    if (o.compute_weights >= 0 && o.weights_given && o.compute_weights != (int)o.load.weights)
        FAIL_USAGE("--weights and --compute-type choose different weights: give one of them");
    if (o.compute_weights >= 0) o.load.weights = (steno_weights)o.compute_weights;
    if (o.load.path == STENO_PATH_FAITHFUL && o.load.weights != STENO_WEIGHTS_F16 && o.load.weights != STENO_WEIGHTS_F32)
        FAIL_USAGE("--weights: quantized weights run on the fast path only (--path fast; faithful computes in float32)");
    if (o.load.path == STENO_PATH_FAITHFUL && o.load.weights == STENO_WEIGHTS_F16 &&
        (o.weights_given || o.compute_weights == STENO_WEIGHTS_F16))
        FAIL_USAGE("--path faithful computes in float32: float16 weights are for --path fast");
    /* openai-whisper's cli(): the subtitle word options require word timestamps */
    if (!o.word_timestamps) {
        if (o.writer.highlight_words) FAIL_USAGE("--highlight-words requires --word-timestamps True");
        if (o.writer.max_line_count) FAIL_USAGE("--max-line-count requires --word-timestamps True");
        if (o.writer.max_line_width) FAIL_USAGE("--max-line-width requires --word-timestamps True");
        if (o.writer.max_words_per_line) FAIL_USAGE("--max-words-per-line requires --word-timestamps True");
        if (o.hallucination_silence_threshold >= 0)
            FAIL_USAGE("--hallucination-silence-threshold requires --word-timestamps True");
    }
    if (o.batch_size) {
        if (o.word_timestamps) FAIL_USAGE("--batch-size: not with --word-timestamps True (not available yet)");
        if (o.n_clip_timestamps > 0) FAIL_USAGE("--batch-size: not with --clip-timestamps");
        if (o.load.path == STENO_PATH_FAITHFUL) FAIL_USAGE("--batch-size needs --path fast");
        if (o.detect_language) FAIL_USAGE("--batch-size: not with --detect-language");
        /* batched mode decodes the VAD's speech chunks: an explicit --vad False is refused, not ignored */
        bool vad_given = false;
        for (int k = 1; k < argc; k++) {
            const size_t n = strcspn(argv[k], "=");
            vad_given |= (n == 5 && strncmp(argv[k], "--vad", 5) == 0) ||
                         (n == 12 && (strncmp(argv[k], "--vad-filter", 12) == 0 || strncmp(argv[k], "--vad_filter", 12) == 0));
        }
        if (vad_given && !o.vad) FAIL_USAGE("--batch-size: not with --vad False (batched mode transcribes the VAD's speech chunks)");
        /* faster-whisper's batched defaults: beam_size 5 (given: 1..64), without_timestamps True */
        if (o.beam_size == 0) o.beam_size = 5;
        bool wt_given = false;
        for (int k = 1; k < argc; k++)
            wt_given |= strncmp(argv[k], "--without-timestamps", 20) == 0 || strncmp(argv[k], "--without_timestamps", 20) == 0;
        if (!wt_given) o.without_timestamps = true;
        /* VadOptions(max_speech_duration_s=30, min_silence_duration_ms=160) unless options are given */
        steno_vad_options d = steno_vad_default_options();
        const steno_vad_options *v = &o.vad_opts;
        if (v->threshold == d.threshold && v->neg_threshold == d.neg_threshold &&
            v->min_speech_duration_ms == d.min_speech_duration_ms && v->max_speech_duration_s == d.max_speech_duration_s &&
            v->min_silence_duration_ms == d.min_silence_duration_ms && v->speech_pad_ms == d.speech_pad_ms)
            o.vad_opts.min_silence_duration_ms = 160;
        o.vad = true;
    }
    /* after the batched default beam size (5) is known */
    if (o.beam_size >= 2 && !(o.beam_size * o.patience >= 0.5 && o.beam_size * o.patience < 4096.5))
        FAIL_USAGE("--patience: %g x --beam-size %d must round to 1..4096 finished hypotheses", o.patience,
                   o.beam_size);
    /* speculative decoding: --draft-model and --draft-layers name their drafter; any other
     * speculative option without its drafter would be silently ignored, so it is refused */
    static const char *const kind_names[] = {"none", "ngram", "quant", "layers", "model"};
    if (o.draft_kind < 0 && o.draft_model) o.draft_kind = STENO_WDRAFT_MODEL;
    if (o.draft_kind < 0 && o.draft_layers) o.draft_kind = STENO_WDRAFT_LAYERS;
    const bool speculate = o.draft_kind > STENO_WDRAFT_NONE;
    if (o.draft_layers && o.draft_kind != STENO_WDRAFT_LAYERS)
        FAIL_USAGE("--draft-layers is for --draft-kind layers, not %s", kind_names[o.draft_kind]);
    if (o.draft_model && o.draft_kind != STENO_WDRAFT_MODEL)
        FAIL_USAGE("--draft-model is for --draft-kind model, not %s", kind_names[o.draft_kind]);
    if (o.draft_kind == STENO_WDRAFT_MODEL && !o.draft_model) FAIL_USAGE("--draft-kind model needs --draft-model NAME|DIR");
    if (o.draft_weights && o.draft_kind != STENO_WDRAFT_QUANT)
        FAIL_USAGE("--draft-weights is for --draft-kind quant, not %s", o.draft_kind < 0 ? "none" : kind_names[o.draft_kind]);
    if ((o.ngram_min || o.ngram_max) && o.draft_kind != STENO_WDRAFT_NGRAM)
        FAIL_USAGE("--ngram-%s is for --draft-kind ngram, not %s", o.ngram_min ? "min" : "max",
                   o.draft_kind < 0 ? "none" : kind_names[o.draft_kind]);
    if (o.ngram_min && o.ngram_min > (o.ngram_max ? o.ngram_max : 4))
        FAIL_USAGE("--ngram-min %d is above --ngram-max %d%s", o.ngram_min, o.ngram_max ? o.ngram_max : 4,
                   o.ngram_max ? "" : " (the default: raise it too)");
    if (o.num_draft >= 0 && !speculate) FAIL_USAGE("--num-draft-tokens needs a drafter: --draft-kind ngram|quant|layers|model");
    if (speculate && o.batch_size)
        FAIL_USAGE("--draft-kind: not with --batch-size (a batched step already reads each weight once for several windows)");
    if (speculate && o.beam_size >= 2)
        FAIL_USAGE("--draft-kind: not with --beam-size %d (beam search reads each weight once for all its beams; "
                   "speculation decodes greedy windows)", o.beam_size);
    if (speculate && o.load.path == STENO_PATH_FAITHFUL) FAIL_USAGE("--draft-kind needs --path fast");
    if (o.draft_kind == STENO_WDRAFT_QUANT && o.load.weights != STENO_WEIGHTS_F16 && o.load.weights != STENO_WEIGHTS_F32)
        FAIL_USAGE("--draft-kind quant drafts for f16 or f32 weights, not a quantized --weights");
    if (speculate && o.temperature > 0) /* beam search is refused above; sampling just never drafts */
        fprintf(stderr,
                "steno: warning: --draft-kind %s is unused: every attempt samples (--temperature %g > 0), and "
                "speculation verifies the temperature-0 (greedy) attempts only\n",
                kind_names[o.draft_kind], o.temperature);
    if (o.vad && o.n_clip_timestamps > 0)
        fprintf(stderr, "steno: warning: --vad is not applied with --clip-timestamps (as in faster-whisper)\n");
    if (o.writer.max_line_count && !o.writer.max_line_width)
        fprintf(stderr, "steno: warning: --max-line-count has no effect without --max-line-width\n");
    if (o.writer.max_words_per_line && o.writer.max_line_width)
        fprintf(stderr, "steno: warning: --max-words-per-line has no effect with --max-line-width\n");
#undef FAIL_USAGE

    int rc = 0;
    if (!to_stdout && make_dirs(o.output_dir) != 0) {
        report(o.output_dir, strerror(errno));
        FREE_ALL();
        return 1;
    }

    /* Load the model once. */
    char model_path[8192], draft_path[8192]; /* the draft's is resolved here too, to fail fast */
    if (steno_cli_model_path(o.model, o.model_dir, model_path, sizeof model_path) != 0 ||
        (o.draft_model &&
         steno_cli_option_model_path("--draft-model", o.draft_model, o.model_dir, draft_path, sizeof draft_path) != 0)) {
        FREE_ALL();
        return 1;
    }
    /* The model is loaded when the first file has decoded: a batch of unreadable or hostile files
     * then fails fast and small (a bad upload costs no model load), and the model-dependent usage
     * checks still come before any transcription. */
    steno_whisper *w = NULL;
    steno_vad *vad = NULL; /* --vad: loaded with the model */
    steno_whisper *draft = NULL; /* --draft-model: loaded with the model */
    o.load.n_threads = o.threads;
    o.vad_opts.n_threads = o.threads;
    run_state rs = {0};
    if (o.verbose == 1 || (o.verbose == -1 && !to_stdout)) rs.verbose_to = to_stdout ? stderr : stdout;
    rs.progress_tty = isatty(STDERR_FILENO);

    for (int k = 0; k < n_files; k++) {
        const char *input = files[k];
        /* opened, not loaded: memory stays flat in the input's length (steno_audio_open); the VAD
         * reads every sample, so --vad loads them */
        steno_audio *audio = NULL;
        float *samples = NULL;
        size_t n_samples = 0;
        if ((o.vad ? steno_audio_load(input, &samples, &n_samples) : steno_audio_open(input, &audio)) != STENO_OK) {
            /* the library's message already names the input ("stdin" for "-") */
            const int named = strstr(steno_errmsg(), strcmp(input, "-") == 0 ? "stdin" : input) != NULL;
            report(named ? NULL : input, steno_errmsg());
            rc = 1;
            continue;
        }
        if (*steno_warnmsg()) fprintf(stderr, "steno: warning: %s\n", steno_warnmsg());
        if (!w) {
            int r = load_model(&o, model_path, &lang, &w);
            if (r == 0 && speculate && (r = load_draft(&o, w, &draft)) != 0) steno_whisper_free(w);
            if (r == 0 && o.vad && (r = load_vad(&o, &vad)) != 0) {
                steno_whisper_free(w);
                steno_whisper_free(draft);
            }
            if (r != 0) {
                steno_audio_close(audio);
                free(samples);
                FREE_ALL();
                return r;
            }
        }
        if (audio) n_samples = steno_audio_n_samples(audio);
        if (o.detect_language) {
            if (print_languages(w, strcmp(input, "-") == 0 ? "stdin" : input, audio, samples, n_samples) != STENO_OK) {
                report(NULL, steno_errmsg());
                rc = 1;
            }
            steno_audio_close(audio);
            free(samples);
            continue;
        }
        steno_transcribe_params p = steno_transcribe_default_params();
        p.language = lang; /* NULL: detected */
        p.task = o.task;
        p.temperatures = temps;
        p.n_temperatures = n_temps;
        p.compression_ratio_threshold = o.no_compression ? 0.0 : o.compression_ratio_threshold;
        p.logprob_threshold = o.no_logprob ? -INFINITY : o.logprob_threshold;
        p.no_speech_threshold = o.no_no_speech ? -1.0 : o.no_speech_threshold;
        p.condition_on_previous_text = o.condition_on_previous_text;
        p.initial_prompt = o.initial_prompt;
        p.word_timestamps = o.word_timestamps;
        p.prepend_punctuations = o.prepend_punctuations;
        p.append_punctuations = o.append_punctuations;
        p.hallucination_silence_threshold = o.hallucination_silence_threshold;
        p.carry_initial_prompt = o.carry_initial_prompt;
        p.prefix = o.prefix;
        p.hotwords = o.hotwords;
        p.clip_timestamps = o.clip_timestamps;
        p.n_clip_timestamps = o.n_clip_timestamps;
        p.suppress_blank = o.suppress_blank;
        p.without_timestamps = o.without_timestamps;
        if (o.has_suppress_tokens) {
            p.suppress_tokens = o.suppress_tokens; /* non-NULL even when empty ("") */
            p.n_suppress_tokens = o.n_suppress_tokens;
        }
        p.beam_size = o.beam_size;
        p.best_of = o.best_of;
        p.patience = o.patience;
        p.length_penalty = o.length_penalty;
        p.seed = o.seed;
        steno_decode_stats ds = {0};
        if (o.draft_kind >= 0) { /* given (none too: the decoder's speed without a drafter) */
            p.draft_kind = (steno_whisper_draft)o.draft_kind;
            p.num_draft_tokens = o.num_draft > 0 ? o.num_draft : 0;
            p.draft_layers = o.draft_layers;
            p.draft_weights = (steno_weights)o.draft_weights;
            p.draft_model = draft;
            p.ngram_min = o.ngram_min;
            p.ngram_max = o.ngram_max;
            p.decode_stats = &ds;
        }
        p.verbose = 0; /* segments are printed here, to stdout, as openai-whisper does */
        p.on_segment = on_segment;
        rs.duration = (double)n_samples / STENO_SAMPLE_RATE;
        /* asked for, or on a terminal for inputs over a minute (shorter ones finish at once) */
        p.on_progress = o.progress || (rs.progress_tty && rs.duration > 60.0) ? on_progress : NULL;
        p.user = &rs;
        rs.t0 = now_seconds();
        rs.input = strcmp(input, "-") == 0 ? "stdin" : input;
        rs.last_percent = -1;
        rs.progress_shown = false;

        steno_result *res = NULL;
        steno_status st =
            audio        ? steno_transcribe_audio(w, audio, &p, &res)
            : o.batch_size ? steno_transcribe_batched(w, NULL, vad, &o.vad_opts, samples, n_samples, o.batch_size, &p, &res)
                           : steno_transcribe_vad(w, NULL, vad, &o.vad_opts, samples, n_samples, &p, &res);
        steno_audio_close(audio);
        free(samples);
        clear_progress(&rs);
        if (st != STENO_OK) {
            report(strstr(steno_errmsg(), input) ? NULL : rs.input, steno_errmsg());
            rc = 1;
            continue;
        }
        if (*steno_warnmsg()) fprintf(stderr, "steno: warning: %s: %s\n", rs.input, steno_warnmsg());
        if (p.decode_stats) {
            fprintf(stderr, "steno: %s: decoder: %ld tokens in %.3f s (%.1f tokens/s), %.3f s of CPU", rs.input,
                    ds.tokens, ds.decode_seconds, ds.decode_seconds > 0 ? ds.tokens / ds.decode_seconds : 0.0,
                    ds.decode_cpu_seconds);
            if (speculate)
                fprintf(stderr, "; speculation (%s): %ld of %ld drafted tokens accepted (%.1f %%) in %ld rounds; %ld "
                                "target passes",
                        kind_names[o.draft_kind], ds.accepted, ds.drafted,
                        ds.drafted ? 100.0 * (double)ds.accepted / (double)ds.drafted : 0.0, ds.rounds, ds.target_calls);
            if (speculate) {
                /* in-run accounting: the rounds against what plain steps of this run would have
                 * taken for their tokens (filters and the prompt, alike in both, left out) */
                fprintf(stderr, "; drafting and verify passes %.3f s for %ld tokens", ds.round_seconds, ds.round_tokens);
                const double step = ds.plain_steps > 0 ? ds.plain_step_seconds / (double)ds.plain_steps : 0.0;
                if (ds.plain_steps > 0)
                    fprintf(stderr, ", plain steps %.2f ms each: %.3fx of plain steps in-run", 1e3 * step,
                            (ds.plain_step_seconds + (double)ds.round_tokens * step) /
                                (ds.plain_step_seconds + ds.round_seconds));
                else
                    fputs(", no plain steps", stderr);
            }
            fputc('\n', stderr);
        }
        if (!lang) {
            char name[64];
            language_name(res->language, name, sizeof name);
            fprintf(stderr, "Detected language: %s with probability %.2f\n", name, res->language_probability);
        }
        if (!write_outputs(res, &o, input)) rc = 1;
        steno_result_free(res);
    }
    if (fflush(stdout) != 0) {
        report("standard output", strerror(errno));
        rc = 1;
    }
    steno_whisper_free(w);
    steno_whisper_free(draft);
    steno_vad_free(vad);
    FREE_ALL();
    return rc;
#undef FREE_ALL
}
