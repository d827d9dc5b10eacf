/* whisper_cli_cmd.c — `steno whisper-cli` (also the binary run as `whisper-cli`): whisper.cpp's
 * examples/cli/cli.cpp command line over steno's engine. Same flags, defaults, stdout lines
 * ("[00:00:00.000 --> 00:00:11.000]   text") and output files (<input>.txt, .srt, .vtt, .csv,
 * .json, .lrc; -of names the base). The file layouts are the library's whisper.cpp writers
 * (src/whisper/output/writers_wcpp.c). A whisper.cpp flag steno has no feature for is a usage error
 * ("not supported"), never silently ignored; README.md "For whisper.cpp users" has the table.
 */
#include "commands.h"
#include "options.h"
#include "steno.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILES 256

typedef struct {
    int n_threads, n_processors, offset_t_ms, offset_n, duration_ms, max_context, max_len;
    int best_of, beam_size, audio_ctx;
    float word_thold, entropy_thold, logprob_thold, no_speech_thold, temperature, temperature_inc;
    bool translate, detect_language, split_on_word, no_fallback;
    bool output_txt, output_vtt, output_srt, output_csv, output_jsn, output_jsn_full, output_lrc;
    bool no_prints, print_progress, no_timestamps, suppress_nst, carry_initial_prompt;
    bool vad; /* --vad: the speech spans of steno's Silero VAD (steno_transcribe_vad) */
    const char *vad_model;
    float vad_threshold, vad_max_speech_s;
    int vad_min_speech_ms, vad_min_silence_ms, vad_speech_pad_ms;
    const char *language, *prompt, *model;
    const char *fname_inp[MAX_FILES];
    int n_inp;
    const char *fname_out[MAX_FILES];
    int n_out;
    steno_opt_list inp, out; /* -f and positional, -of: while parsing */
} wparams;

static int default_threads(void) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    if (nc < 1) nc = 1;
    return nc < 4 ? (int)nc : 4;
}

#define ERR_PREFIX "steno: whisper-cli: "

/* whisper.cpp's defaults (cli.cpp whisper_params) */
static wparams default_params(void) {
    return (wparams){
        .n_threads = default_threads(), .n_processors = 1, .max_context = -1, .best_of = 5, .beam_size = 5,
        .word_thold = 0.01f, .entropy_thold = 2.40f, .logprob_thold = -1.00f, .no_speech_thold = 0.6f,
        .temperature = 0.0f, .temperature_inc = 0.2f, .language = "en", .model = "tiny.en",
        /* whisper.h whisper_vad_default_params */
        .vad_threshold = 0.5f, .vad_min_speech_ms = 250, .vad_min_silence_ms = 100, .vad_max_speech_s = FLT_MAX,
        .vad_speech_pad_ms = 30,
    };
}

#define AT(field) STENO_OPT_AT(wparams, field)
#define INT_OPT(names, field, text, ...) {STENO_OPT_INT, names, "N", AT(field), .help = text, __VA_ARGS__}
#define FLT_OPT(names, field, text, ...) {STENO_OPT_FLOAT, names, "N", AT(field), .help = text, __VA_ARGS__}
#define FLAG_OPT(names, field, text) {STENO_OPT_FLAG, names, .at = AT(field), .help = text}
/* Flags of whisper-cli that steno has no feature for, with the reason. */
#define NOT_SUPPORTED(names, why) {STENO_OPT_UNSUPPORTED, names, .help = why}
static const steno_opt OPTIONS[] = {
    {STENO_OPT_HELP, "-h|--help", .def = "default", .help = "show this help message and exit"},
    {STENO_OPT_VERSION, "-V|--version", .def = "false", .help = "print the version and exit"},
    INT_OPT("-t|--threads", n_threads, "number of threads to use during computation", STENO_OPT_MIN(1)),
    INT_OPT("-p|--processors", n_processors, "number of processors (only 1)"),
    INT_OPT("-ot|--offset-t", offset_t_ms, "time offset in milliseconds", STENO_OPT_MIN(0)),
    INT_OPT("-on|--offset-n", offset_n, "segment index offset"),
    INT_OPT("-d|--duration", duration_ms, "duration of audio to process in milliseconds", STENO_OPT_MIN(0)),
    INT_OPT("-mc|--max-context", max_context, "maximum number of text context tokens to store"),
    INT_OPT("-ml|--max-len", max_len, "maximum segment length in characters", STENO_OPT_MIN(0)),
    FLAG_OPT("-sow|--split-on-word", split_on_word, "split on word rather than on token"),
    INT_OPT("-bo|--best-of", best_of, "number of best candidates to keep", .has_max = true, .max = 64),
    INT_OPT("-bs|--beam-size", beam_size, "beam size for beam search", .has_max = true, .max = 64),
    INT_OPT("-ac|--audio-ctx", audio_ctx, "audio context size (0 - all)"),
    FLT_OPT("-wt|--word-thold", word_thold, "word timestamp probability threshold (accepted, unused)"),
    FLT_OPT("-et|--entropy-thold", entropy_thold, "entropy threshold for decoder fail (compression ratio)"),
    FLT_OPT("-lpt|--logprob-thold", logprob_thold, "log probability threshold for decoder fail"),
    FLT_OPT("-nth|--no-speech-thold", no_speech_thold, "no speech threshold"),
    FLT_OPT("-tp|--temperature", temperature, "The sampling temperature, between 0 and 1", STENO_OPT_RANGE(0, 1)),
    FLT_OPT("-tpi|--temperature-inc", temperature_inc, "The increment of temperature, between 0 and 1",
            STENO_OPT_MIN(0)),
    FLAG_OPT("-tr|--translate", translate, "translate from source language to english"),
    FLAG_OPT("-nf|--no-fallback", no_fallback, "do not use temperature fallback while decoding"),
    FLAG_OPT("-otxt|--output-txt", output_txt, "output result in a text file"),
    FLAG_OPT("-ovtt|--output-vtt", output_vtt, "output result in a vtt file"),
    FLAG_OPT("-osrt|--output-srt", output_srt, "output result in a srt file"),
    FLAG_OPT("-olrc|--output-lrc", output_lrc, "output result in a lrc file"),
    FLAG_OPT("-ocsv|--output-csv", output_csv, "output result in a CSV file"),
    FLAG_OPT("-oj|--output-json", output_jsn, "output result in a JSON file"),
    FLAG_OPT("-ojf|--output-json-full", output_jsn_full, "include more information in the JSON file"),
    {STENO_OPT_LIST, "-of|--output-file", "FNAME", AT(out), .max_items = MAX_FILES, .items = "-of names",
     .def = "", .help = "output file path (without file extension)"},
    FLAG_OPT("-np|--no-prints", no_prints, "do not print anything other than the results"),
    FLAG_OPT("-pp|--print-progress", print_progress, "print progress"),
    FLAG_OPT("-nt|--no-timestamps", no_timestamps, "do not print timestamps"),
    {STENO_OPT_STRING, "-l|--language", "LANG", AT(language), .help = "spoken language ('auto' for auto-detect)"},
    FLAG_OPT("-dl|--detect-language", detect_language, "exit after automatically detecting language"),
    {STENO_OPT_STRING, "--prompt", "PROMPT", AT(prompt), .help = "initial prompt (max n_text_ctx/2 tokens)"},
    {STENO_OPT_STRING, "-m|--model", "FNAME", AT(model), .help = "model: a name, a ggml file, or a CTranslate2, Hugging Face or MLX directory"},
    {STENO_OPT_LIST, "-f|--file", "FNAME", AT(inp), .max_items = MAX_FILES, .items = "input files", .def = "",
     .help = "input audio file path"},
    {STENO_OPT_FLAG, "-ng|--no-gpu", .def = "true", .help = "disable GPU (steno runs on the CPU)"},
    {STENO_OPT_FLAG, "-fa|--flash-attn", .def = "true", .help = "flash attention (steno's attention is fused)"},
    {STENO_OPT_FLAG, "-nfa|--no-flash-attn", .def = "false",
     .help = "disable flash attention (accepted; steno's attention is always fused)"},
    {STENO_OPT_INT, "-dev|--device", "N", .def = "0", .help = "GPU device to use (accepted; steno runs on the CPU)"},
    FLAG_OPT("--carry-initial-prompt", carry_initial_prompt, "always prepend the initial prompt"),
    FLAG_OPT("-sns|--suppress-nst", suppress_nst, "suppress non-speech tokens"),
    NOT_SUPPORTED("-debug|--debug-mode", "no mel dump"),
    NOT_SUPPORTED("-di|--diarize", "no stereo diarization"),
    NOT_SUPPORTED("-tdrz|--tinydiarize", "no tinydiarize models"),
    NOT_SUPPORTED("-owts|--output-words", "no karaoke script writer"),
    NOT_SUPPORTED("-fp|--font-path", "no karaoke script writer"),
    NOT_SUPPORTED("-ps|--print-special", "special tokens are not kept in segment text"),
    NOT_SUPPORTED("-pc|--print-colors", "no per-token probabilities"),
    NOT_SUPPORTED("--print-confidence", "no per-token probabilities"),
    NOT_SUPPORTED("-oved|--ov-e-device", "no OpenVINO encoder"),
    NOT_SUPPORTED("-dtw|--dtw", "no per-token DTW timestamps; word timestamps come with -ml"),
    NOT_SUPPORTED("-ls|--log-score", "no per-token probabilities"),
    NOT_SUPPORTED("--suppress-regex", "no token regex suppression"),
    NOT_SUPPORTED("--grammar", "no GBNF grammar sampling"),
    NOT_SUPPORTED("--grammar-rule", "no GBNF grammar sampling"),
    NOT_SUPPORTED("--grammar-penalty", "no GBNF grammar sampling"),
    FLAG_OPT("--vad", vad, "enable Voice Activity Detection (steno's Silero VAD v6; spans joined and times "
                           "mapped back as faster-whisper's vad_filter)"),
    {STENO_OPT_STRING, "-vm|--vad-model", "FNAME", AT(vad_model), .def = STENO_VAD_MODEL_FILE " in the model cache",
     .help = "VAD weights: steno's safetensors conversion (scripts/fetch_vad.sh), not a ggml file"},
    FLT_OPT("-vt|--vad-threshold", vad_threshold, "VAD threshold for speech recognition", STENO_OPT_RANGE(0, 1)),
    INT_OPT("-vspd|--vad-min-speech-duration-ms", vad_min_speech_ms, "VAD min speech duration (0.0-1.0)",
            STENO_OPT_MIN(0)),
    INT_OPT("-vsd|--vad-min-silence-duration-ms", vad_min_silence_ms, "VAD min silence duration (to split segments)",
            STENO_OPT_MIN(0)),
    FLT_OPT("-vmsd|--vad-max-speech-duration-s", vad_max_speech_s, "VAD max speech duration (auto-split longer)",
            .def = "FLT_MAX",
            STENO_OPT_ABOVE(0)),
    INT_OPT("-vp|--vad-speech-pad-ms", vad_speech_pad_ms, "VAD speech padding (extend segments)", STENO_OPT_MIN(0)),
    NOT_SUPPORTED("-vo|--vad-samples-overlap", "steno joins the speech spans without overlap, as faster-whisper"),
};
/* the input files: positional arguments go to -f's list, in argv order */
static const steno_opt FILES = {STENO_OPT_LIST, .at = AT(inp), .max_items = MAX_FILES, .items = "input files"};
#undef NO_VAD
#undef NOT_SUPPORTED
#undef FLAG_OPT
#undef FLT_OPT
#undef INT_OPT
#undef AT

static void usage(FILE *f);

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .positional = &FILES,
    .err_prefix = ERR_PREFIX, .verb = "whisper-cli", .usage = usage, .style = STENO_OPTS_WCPP,
};

static void usage(FILE *f) {
    const wparams p = default_params();
    fputs("usage: steno whisper-cli [options] file0 file1 ...\n"
          "       (or the steno binary run under the name whisper-cli)\n"
          "\n"
          "whisper.cpp's whisper-cli on steno's engine: the same flags, defaults, output lines and\n"
          "output files. -m takes a ggml file, a model directory (CTranslate2, Hugging Face, MLX)\n"
          "or a model name (default tiny.en);\n"
          "flags steno has no feature for are refused with \"not supported\" (README.md, \"For\n"
          "whisper.cpp users\").\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, &p);
    fputc('\n', f);
    steno_opts_help_unsupported(f, &SPEC, 100);
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, wparams *p) {
    int rc = steno_opts_parse(&SPEC, p, argc, argv);
    for (int k = 0; k < p->inp.n; k++) p->fname_inp[k] = p->inp.items[k];
    for (int k = 0; k < p->out.n; k++) p->fname_out[k] = p->out.items[k];
    p->n_inp = p->inp.n;
    p->n_out = p->out.n;
    steno_opt_list_free(&p->inp);
    steno_opt_list_free(&p->out);
    if (p->output_jsn_full) p->output_jsn = true;
    return rc;
}

/* Checks of values whisper-cli takes but steno can only partly honour. Returns 0 or 2. */
static int check(const wparams *p) {
    if (p->n_processors != 1) {
        fprintf(stderr, ERR_PREFIX "not supported: -p %d (steno runs one processor; use -t)\n", p->n_processors);
        return 2;
    }
    if (p->max_context > 0 && p->max_context < 224) {
        fprintf(stderr,
                ERR_PREFIX "not supported: -mc %d (steno keeps 0 or up to 223 previous-text tokens: use -mc 0 or "
                           "-mc -1)\n",
                p->max_context);
        return 2;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------ */

static void to_timestamp(char *buf, size_t size, double seconds) {
    long long t = seconds > 0 && isfinite(seconds) ? llround(seconds * 100.0) : 0; /* 10-ms ticks */
    long long msec = t * 10;
    long long hr = msec / 3600000;
    msec -= hr * 3600000;
    long long min = msec / 60000;
    msec -= min * 60000;
    long long sec = msec / 1000;
    msec -= sec * 1000;
    snprintf(buf, size, "%02d:%02d:%02d.%03d", (int)hr, (int)min, (int)sec, (int)msec);
}

typedef struct {
    const wparams *p;
    int n_printed; /* segments printed for the current file */
    int progress_prev;
} run_state;

/* cli.cpp whisper_print_segment_callback */
static void print_segment(run_state *rs, const steno_segment *seg) {
    if (rs->n_printed++ == 0) printf("\n");
    if (!rs->p->no_timestamps) {
        char a[32], b[32];
        to_timestamp(a, sizeof a, seg->start);
        to_timestamp(b, sizeof b, seg->end);
        printf("[%s --> %s]  ", a, b);
    }
    printf("%s", seg->text ? seg->text : "");
    if (!rs->p->no_timestamps) printf("\n");
    fflush(stdout);
}

static int on_segment(void *user, const steno_segment *seg) {
    print_segment(user, seg);
    return 0;
}

/* cli.cpp whisper_print_progress_callback (progress_step 5) */
static void on_progress(void *user, double fraction) {
    run_state *rs = user;
    int progress = (int)floor(fraction * 100.0 + 1e-9);
    if (progress >= rs->progress_prev + 5) {
        rs->progress_prev += 5;
        fprintf(stderr, "whisper_print_progress_callback: progress = %3d%%\n", progress);
    }
}

/* whisper.cpp's -ml N (whisper_wrap_segment) over steno's word timestamps: a segment is cut
 * before the word that would make it longer than max_len bytes (its first word always stays).
 * steno's pieces are words, so cuts fall on word boundaries with or without -sow. The new
 * segments (texts malloc'd) go to *out; the caller frees them with free_split. */
static int split_segments(const steno_result *r, int max_len, steno_segment **out, int *n_out) {
    int cap = 0;
    for (int i = 0; i < r->n_segments; i++) cap += r->segments[i].n_words > 0 ? r->segments[i].n_words : 1;
    steno_segment *segs = calloc(cap > 0 ? (size_t)cap : 1, sizeof *segs);
    if (!segs) return -1;
    int n = 0;
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        if (s->n_words == 0) {
            segs[n] = *s;
            segs[n].text = strdup(s->text ? s->text : "");
            segs[n].tokens = NULL;
            segs[n].n_tokens = 0;
            segs[n].words = NULL;
            segs[n].n_words = 0;
            segs[n].id = n;
            if (!segs[n].text) goto oom;
            n++;
            continue;
        }
        int k = 0;
        double start = s->start;
        while (k < s->n_words) {
            size_t acc = 0;
            int e = k;
            while (e < s->n_words) {
                size_t cur = strlen(s->words[e].word ? s->words[e].word : "");
                if (e > k && acc + cur > (size_t)max_len) break;
                acc += cur;
                e++;
            }
            char *text = malloc(acc + 1);
            if (!text) goto oom;
            text[0] = 0;
            for (int w = k; w < e; w++) strcat(text, s->words[w].word ? s->words[w].word : "");
            steno_segment *d = &segs[n];
            memset(d, 0, sizeof *d);
            d->id = n;
            d->seek = s->seek;
            d->start = start;
            d->end = e == s->n_words ? s->end : s->words[e - 1].end;
            if (d->end < d->start) d->end = d->start;
            d->text = text;
            d->temperature = s->temperature;
            d->avg_logprob = s->avg_logprob;
            d->compression_ratio = s->compression_ratio;
            d->no_speech_prob = s->no_speech_prob;
            start = d->end;
            n++;
            k = e;
        }
    }
    *out = segs;
    *n_out = n;
    return 0;
oom:
    for (int i = 0; i < n; i++) free(segs[i].text);
    free(segs);
    return -1;
}

static void free_split(steno_segment *segs, int n) {
    for (int i = 0; i < n; i++) free(segs[i].text);
    free(segs);
}

static bool write_file(const steno_result *r, const char *base, const char *ext, const char *format,
                       const char *writer_name, const steno_wcpp_info *info) {
    size_t n = strlen(base) + strlen(ext) + 1;
    char *path = malloc(n);
    if (!path) return false;
    snprintf(path, n, "%s%s", base, ext);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, ERR_PREFIX "%s: %s\n", path, strerror(errno));
        free(path);
        return false;
    }
    fprintf(stderr, "%s: saving output to '%s'\n", writer_name, path);
    steno_status st = steno_write_result_wcpp(r, format, info, f);
    if (fclose(f) != 0 && st == STENO_OK) {
        fprintf(stderr, ERR_PREFIX "%s: %s\n", path, strerror(errno));
        free(path);
        return false;
    }
    if (st != STENO_OK) {
        fprintf(stderr, ERR_PREFIX "%s: %s\n", path, steno_errmsg());
        free(path);
        return false;
    }
    free(path);
    return true;
}

static bool write_outputs(const wparams *p, const steno_result *r, const char *base, const steno_wcpp_info *info) {
    bool ok = true;
    if (p->output_txt) ok &= write_file(r, base, ".txt", "wcpp-txt", "output_txt", info);
    if (p->output_vtt) ok &= write_file(r, base, ".vtt", "wcpp-vtt", "output_vtt", info);
    if (p->output_srt) ok &= write_file(r, base, ".srt", "wcpp-srt", "output_srt", info);
    if (p->output_csv) ok &= write_file(r, base, ".csv", "csv", "output_csv", info);
    if (p->output_jsn)
        ok &= write_file(r, base, ".json", p->output_jsn_full ? "wcpp-json-full" : "wcpp-json", "output_json", info);
    if (p->output_lrc) ok &= write_file(r, base, ".lrc", "lrc", "output_lrc", info);
    return ok;
}

/* ---- the command ------------------------------------------------------------------------- */

/* whisper.cpp users pass their ggml file (models/ggml-base.en.bin, ggml-large-v3-turbo-q5_0.bin).
 * An existing one loads (the library reads ggml files); a missing one gets the model name to give
 * instead, and whether it is installed. Returns 1 after printing that, 0 otherwise. */
static int ggml_model_hint(const char *model) {
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    const size_t len = strlen(base);
    if (strncmp(base, "ggml-", 5) != 0 || len < 10 || strcmp(base + len - 4, ".bin") != 0) return 0;
    FILE *f = fopen(model, "rb");
    if (f) {
        fclose(f);
        return 0;
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(len - 9 < sizeof name - 1 ? len - 9 : sizeof name - 1), base + 5);
    char *q = strstr(name, "-q"); /* a quantized file: ggml-base.en-q5_1.bin */
    if (q && (q[2] == '4' || q[2] == '5' || q[2] == '8') && q[3] == '_') *q = '\0';
    char root[4096], probe[4400];
    steno_cli_models_root(NULL, root, sizeof root);
    snprintf(probe, sizeof probe, "%s/%s/model.bin", root, name);
    FILE *installed = fopen(probe, "rb");
    if (installed) fclose(installed);
    if (installed)
        fprintf(stderr, ERR_PREFIX "%s: no such file; give -m %s (installed)\n", model, name);
    else
        fprintf(stderr, ERR_PREFIX "%s: no such file; run 'steno pull %s', then give -m %s\n", model, name, name);
    return 1;
}

int steno_cmd_whisper_cli(int argc, char **argv) {
    wparams p = default_params();

    int rc = parse(argc, argv, &p);
    if (rc >= 0) return rc;
    if ((rc = check(&p)) != 0) return rc;
    if (p.n_inp == 0) {
        fprintf(stderr, ERR_PREFIX "no input files specified (see 'steno whisper-cli --help')\n");
        return 2;
    }
    char lang[32];
    snprintf(lang, sizeof lang, "%s", p.language);
    for (char *c = lang; *c; c++) *c = (char)((*c >= 'A' && *c <= 'Z') ? *c - 'A' + 'a' : *c);
    if (p.detect_language) snprintf(lang, sizeof lang, "auto");
    if (strcmp(lang, "auto") != 0 && !steno_language_code(lang)) { /* whisper-cli checks before loading */
        fprintf(stderr, ERR_PREFIX "unknown language '%s'\n", p.language);
        return 2;
    }

    /* whisper.cpp's temperature ladder: temperature, + temperature_inc ... up to 1.0 (-nf: one) */
    double temps[64];
    int n_temps = 0;
    temps[n_temps++] = p.temperature;
    if (!p.no_fallback && p.temperature_inc > 0)
        for (double t = p.temperature + p.temperature_inc; t <= 1.0 + 1e-6 && n_temps < 64; t += p.temperature_inc)
            temps[n_temps++] = t;

    /* the model: a path as given (a whisper.cpp ggml file loads; a file of another kind gets the
     * loader's error naming its format), else a name under the steno models folder */
    char model_path[8192];
    if (ggml_model_hint(p.model)) return 1;
    if (steno_cli_model_path(p.model, NULL, model_path, sizeof model_path) != 0) return 1;
    steno_whisper_options lo = steno_whisper_default_options();
    lo.n_threads = p.n_threads;
    lo.audio_ctx = p.audio_ctx;
    steno_whisper *w = NULL;
    if (steno_whisper_load_ex(model_path, &lo, &w) != STENO_OK) {
        fprintf(stderr, ERR_PREFIX "%s\n", steno_errmsg());
        return 1;
    }
    const bool multilingual = steno_whisper_is_multilingual(w);
    bool translate = p.translate;
    if (!multilingual && (strcmp(lang, "en") != 0 || translate) && !p.detect_language) {
        /* whisper-cli's behaviour */
        fprintf(stderr, "steno: whisper-cli: WARNING: model is not multilingual, ignoring language and translation "
                        "options\n");
        snprintf(lang, sizeof lang, "en");
        translate = false;
    }
    if (strcmp(lang, "auto") != 0 && !steno_whisper_has_language(w, lang)) {
        fprintf(stderr, ERR_PREFIX "unknown language '%s'\n", lang);
        steno_whisper_free(w);
        return 2;
    }

    steno_vad *vad = NULL;
    steno_vad_options vo = steno_vad_default_options();
    if (p.vad) {
        vo.threshold = p.vad_threshold;
        vo.min_speech_duration_ms = p.vad_min_speech_ms;
        vo.min_silence_duration_ms = p.vad_min_silence_ms;
        vo.max_speech_duration_s = p.vad_max_speech_s >= FLT_MAX ? INFINITY : p.vad_max_speech_s;
        vo.speech_pad_ms = p.vad_speech_pad_ms;
        vo.n_threads = p.n_threads;
        char vpath[8192];
        steno_cli_vad_path(p.vad_model, NULL, vpath, sizeof vpath);
        if (steno_vad_load(vpath, &vad) != STENO_OK) {
            fprintf(stderr, ERR_PREFIX "--vad: %s%s\n", steno_errmsg(), p.vad_model ? "" : " (run scripts/fetch_vad.sh)");
            steno_whisper_free(w);
            return 1;
        }
    }
    int suppress_none = 0; /* whisper.cpp suppresses non-speech tokens only with -sns */
    rc = 0;
    for (int k = 0; k < p.n_inp; k++) {
        const char *input = p.fname_inp[k];
        const char *base = k < p.n_out && p.fname_out[k][0] ? p.fname_out[k] : input;
        steno_audio *audio = NULL; /* opened, not loaded: memory flat in the input's length */
        float *samples = NULL;     /* --vad reads every sample */
        size_t n_samples = 0;
        if ((p.vad ? steno_audio_load(input, &samples, &n_samples) : steno_audio_open(input, &audio)) != STENO_OK) {
            const char *msg = steno_errmsg();
            if (strstr(msg, strcmp(input, "-") == 0 ? "stdin" : input)) fprintf(stderr, ERR_PREFIX "%s\n", msg);
            else fprintf(stderr, ERR_PREFIX "%s: %s\n", input, msg);
            rc = 1;
            continue;
        }
        if (audio) n_samples = steno_audio_n_samples(audio);
        if (!p.no_prints)
            fprintf(stderr, "\nmain: processing '%s' (%zu samples, %.1f sec), %d threads, %d processors, %d beams + "
                            "best of %d, lang = %s, task = %s, timestamps = %d ...\n\n",
                    input, n_samples, (double)n_samples / STENO_SAMPLE_RATE, p.n_threads, p.n_processors,
                    p.beam_size, p.best_of, lang, translate ? "translate" : "transcribe", p.no_timestamps ? 0 : 1);
        if (p.detect_language) {
            if (!multilingual) {
                fprintf(stderr, "whisper_full_with_state: auto-detected language: en (p = 1.000000)\n");
            } else {
                steno_language_prob lp[1];
                int n_lp = 0;
                if ((audio ? steno_detect_language_audio(w, audio, lp, 1, &n_lp)
                           : steno_detect_language(w, samples, n_samples, lp, 1, &n_lp)) != STENO_OK ||
                    n_lp < 1) {
                    fprintf(stderr, ERR_PREFIX "%s\n", steno_errmsg());
                    rc = 1;
                } else {
                    fprintf(stderr, "whisper_full_with_state: auto-detected language: %s (p = %f)\n", lp[0].code,
                            lp[0].probability);
                }
            }
            steno_audio_close(audio);
            free(samples);
            continue;
        }
        steno_transcribe_params tp = steno_transcribe_default_params();
        tp.language = strcmp(lang, "auto") == 0 ? NULL : lang;
        tp.task = translate ? STENO_TASK_TRANSLATE : STENO_TASK_TRANSCRIBE;
        tp.temperatures = temps;
        tp.n_temperatures = n_temps;
        tp.compression_ratio_threshold = p.entropy_thold;
        tp.logprob_threshold = p.logprob_thold;
        tp.no_speech_threshold = p.no_speech_thold;
        tp.condition_on_previous_text = p.max_context != 0;
        tp.initial_prompt = p.prompt && p.prompt[0] ? p.prompt : NULL;
        tp.carry_initial_prompt = p.carry_initial_prompt;
        tp.beam_size = p.beam_size > 1 ? p.beam_size : 0;
        tp.best_of = p.best_of > 1 ? p.best_of : 1;
        tp.without_timestamps = p.no_timestamps;
        if (!p.suppress_nst) {
            tp.suppress_tokens = &suppress_none; /* non-NULL, empty */
            tp.n_suppress_tokens = 0;
        }
        double clip[2];
        if (p.offset_t_ms > 0 || p.duration_ms > 0) {
            clip[0] = p.offset_t_ms / 1000.0;
            clip[1] = (p.offset_t_ms + p.duration_ms) / 1000.0;
            tp.clip_timestamps = clip;
            tp.n_clip_timestamps = p.duration_ms > 0 ? 2 : 1;
        }
        tp.word_timestamps = p.max_len > 0;
        run_state rs = {&p, 0, 0};
        tp.on_segment = p.max_len > 0 ? NULL : on_segment;
        tp.on_progress = p.print_progress ? on_progress : NULL;
        tp.user = &rs;
        steno_result *res = NULL;
        steno_status st = audio ? steno_transcribe_audio(w, audio, &tp, &res)
                                : steno_transcribe_vad(w, NULL, vad, &vo, samples, n_samples, &tp, &res);
        steno_audio_close(audio);
        free(samples);
        if (st != STENO_OK) {
            fprintf(stderr, ERR_PREFIX "%s: %s\n", input, steno_errmsg());
            rc = 1;
            continue;
        }
        if (!tp.language && !p.no_prints) /* whisper.cpp logs the detection */
            fprintf(stderr, "whisper_full_with_state: auto-detected language: %s (p = %f)\n", res->language,
                    res->language_probability);
        steno_result view = *res;
        steno_segment *split = NULL;
        int n_split = 0;
        if (p.max_len > 0) {
            if (split_segments(res, p.max_len, &split, &n_split) != 0) {
                fprintf(stderr, ERR_PREFIX "out of memory\n");
                steno_result_free(res);
                steno_whisper_free(w);
                steno_vad_free(vad);
                return 1;
            }
            view.segments = split;
            view.n_segments = n_split;
            view.word_timestamps = 0;
            for (int i = 0; i < n_split; i++) print_segment(&rs, &split[i]);
        }
        printf("\n");
        fflush(stdout);
        steno_wcpp_info info = {w, p.model, p.detect_language ? "auto" : lang, translate, p.offset_n};
        if (!write_outputs(&p, &view, base, &info)) rc = 1;
        if (split) free_split(split, n_split);
        steno_result_free(res);
    }
    steno_whisper_free(w);
    steno_vad_free(vad);
    return rc;
}
