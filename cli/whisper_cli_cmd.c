/* whisper_cli_cmd.c — `steno whisper-cli` (also the binary run as `whisper-cli`): whisper.cpp's
 * examples/cli/cli.cpp command line over steno's engine. Same flags, defaults, stdout lines
 * ("[00:00:00.000 --> 00:00:11.000]   text") and output files (<input>.txt, .srt, .vtt, .csv,
 * .json, .lrc; -of names the base). The file layouts are the library's whisper.cpp writers
 * (src/whisper/writers_wcpp.c). A whisper.cpp flag steno has no feature for is a usage error
 * ("not supported"), never silently ignored; README.md "For whisper.cpp users" has the table.
 */
#include "commands.h"
#include "steno.h"

#include <errno.h>
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
    bool no_prints, print_progress, no_timestamps, suppress_nst;
    const char *language, *prompt, *model;
    const char *fname_inp[MAX_FILES];
    int n_inp;
    const char *fname_out[MAX_FILES];
    int n_out;
} wparams;

static int default_threads(void) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    if (nc < 1) nc = 1;
    return nc < 4 ? (int)nc : 4;
}

static void usage(FILE *f, const wparams *p) {
    fprintf(f,
            "usage: steno whisper-cli [options] file0 file1 ...\n"
            "       (or the steno binary run under the name whisper-cli)\n"
            "\n"
            "whisper.cpp's whisper-cli on steno's engine: the same flags, defaults, output lines and\n"
            "output files. -m takes a CTranslate2 model directory or a model name (default tiny.en);\n"
            "flags steno has no feature for are refused with \"not supported\" (README.md, \"For\n"
            "whisper.cpp users\").\n"
            "\n"
            "options:\n");
    fprintf(f, "  -h,        --help              [default] show this help message and exit\n");
    fprintf(f, "  -t N,      --threads N         [%-7d] number of threads to use during computation\n", p->n_threads);
    fprintf(f, "  -p N,      --processors N      [%-7d] number of processors (only 1)\n", p->n_processors);
    fprintf(f, "  -ot N,     --offset-t N        [%-7d] time offset in milliseconds\n", p->offset_t_ms);
    fprintf(f, "  -on N,     --offset-n N        [%-7d] segment index offset\n", p->offset_n);
    fprintf(f, "  -d  N,     --duration N        [%-7d] duration of audio to process in milliseconds\n", p->duration_ms);
    fprintf(f, "  -mc N,     --max-context N     [%-7d] maximum number of text context tokens to store\n", p->max_context);
    fprintf(f, "  -ml N,     --max-len N         [%-7d] maximum segment length in characters\n", p->max_len);
    fprintf(f, "  -sow,      --split-on-word     [%-7s] split on word rather than on token\n", p->split_on_word ? "true" : "false");
    fprintf(f, "  -bo N,     --best-of N         [%-7d] number of best candidates to keep\n", p->best_of);
    fprintf(f, "  -bs N,     --beam-size N       [%-7d] beam size for beam search\n", p->beam_size);
    fprintf(f, "  -ac N,     --audio-ctx N       [%-7d] audio context size (0 - all)\n", p->audio_ctx);
    fprintf(f, "  -wt N,     --word-thold N      [%-7.2f] word timestamp probability threshold (accepted, unused)\n", p->word_thold);
    fprintf(f, "  -et N,     --entropy-thold N   [%-7.2f] entropy threshold for decoder fail (compression ratio)\n", p->entropy_thold);
    fprintf(f, "  -lpt N,    --logprob-thold N   [%-7.2f] log probability threshold for decoder fail\n", p->logprob_thold);
    fprintf(f, "  -nth N,    --no-speech-thold N [%-7.2f] no speech threshold\n", p->no_speech_thold);
    fprintf(f, "  -tp,       --temperature N     [%-7.2f] The sampling temperature, between 0 and 1\n", p->temperature);
    fprintf(f, "  -tpi,      --temperature-inc N [%-7.2f] The increment of temperature, between 0 and 1\n", p->temperature_inc);
    fprintf(f, "  -tr,       --translate         [%-7s] translate from source language to english\n", p->translate ? "true" : "false");
    fprintf(f, "  -nf,       --no-fallback       [%-7s] do not use temperature fallback while decoding\n", p->no_fallback ? "true" : "false");
    fprintf(f, "  -otxt,     --output-txt        [%-7s] output result in a text file\n", p->output_txt ? "true" : "false");
    fprintf(f, "  -ovtt,     --output-vtt        [%-7s] output result in a vtt file\n", p->output_vtt ? "true" : "false");
    fprintf(f, "  -osrt,     --output-srt        [%-7s] output result in a srt file\n", p->output_srt ? "true" : "false");
    fprintf(f, "  -olrc,     --output-lrc        [%-7s] output result in a lrc file\n", p->output_lrc ? "true" : "false");
    fprintf(f, "  -ocsv,     --output-csv        [%-7s] output result in a CSV file\n", p->output_csv ? "true" : "false");
    fprintf(f, "  -oj,       --output-json       [%-7s] output result in a JSON file\n", p->output_jsn ? "true" : "false");
    fprintf(f, "  -ojf,      --output-json-full  [%-7s] include more information in the JSON file\n", p->output_jsn_full ? "true" : "false");
    fprintf(f, "  -of FNAME, --output-file FNAME [%-7s] output file path (without file extension)\n", "");
    fprintf(f, "  -np,       --no-prints         [%-7s] do not print anything other than the results\n", p->no_prints ? "true" : "false");
    fprintf(f, "  -pp,       --print-progress    [%-7s] print progress\n", p->print_progress ? "true" : "false");
    fprintf(f, "  -nt,       --no-timestamps     [%-7s] do not print timestamps\n", p->no_timestamps ? "true" : "false");
    fprintf(f, "  -l LANG,   --language LANG     [%-7s] spoken language ('auto' for auto-detect)\n", p->language);
    fprintf(f, "  -dl,       --detect-language   [%-7s] exit after automatically detecting language\n", p->detect_language ? "true" : "false");
    fprintf(f, "             --prompt PROMPT     [%-7s] initial prompt (max n_text_ctx/2 tokens)\n", p->prompt ? p->prompt : "");
    fprintf(f, "  -m FNAME,  --model FNAME       [%-7s] model: CTranslate2 directory or name\n", p->model);
    fprintf(f, "  -f FNAME,  --file FNAME        [%-7s] input audio file path\n", "");
    fprintf(f, "  -ng,       --no-gpu            [%-7s] disable GPU (steno runs on the CPU)\n", "true");
    fprintf(f, "  -fa,       --flash-attn        [%-7s] flash attention (steno's attention is fused)\n", "true");
    fprintf(f, "  -sns,      --suppress-nst      [%-7s] suppress non-speech tokens\n", p->suppress_nst ? "true" : "false");
    fprintf(f, "\nnot supported: -debug -di -tdrz -owts -fp -ps -pc -oved -dtw -ls --suppress-regex\n"
               "--grammar --grammar-rule --grammar-penalty --vad and the -v* VAD options\n");
}

#define ERR_PREFIX "steno: whisper-cli: "

/* Flags of whisper-cli that steno has no feature for, with the reason. */
static const char *unsupported_reason(const char *a) {
    static const struct { const char *s, *l, *why; } t[] = {
        {"-debug", "--debug-mode", "no mel dump"},
        {"-di", "--diarize", "no stereo diarization"},
        {"-tdrz", "--tinydiarize", "no tinydiarize models"},
        {"-owts", "--output-words", "no karaoke script writer"},
        {"-fp", "--font-path", "no karaoke script writer"},
        {"-ps", "--print-special", "special tokens are not kept in segment text"},
        {"-pc", "--print-colors", "no per-token probabilities"},
        {"-oved", "--ov-e-device", "no OpenVINO encoder"},
        {"-dtw", "--dtw", "no per-token DTW timestamps; word timestamps come with -ml"},
        {"-ls", "--log-score", "no per-token probabilities"},
        {NULL, "--suppress-regex", "no token regex suppression"},
        {NULL, "--grammar", "no GBNF grammar sampling"},
        {NULL, "--grammar-rule", "no GBNF grammar sampling"},
        {NULL, "--grammar-penalty", "no GBNF grammar sampling"},
        {NULL, "--vad", "steno has no voice activity detection yet"},
        {"-vm", "--vad-model", "steno has no voice activity detection yet"},
        {"-vt", "--vad-threshold", "steno has no voice activity detection yet"},
        {"-vspd", "--vad-min-speech-duration-ms", "steno has no voice activity detection yet"},
        {"-vsd", "--vad-min-silence-duration-ms", "steno has no voice activity detection yet"},
        {"-vmsd", "--vad-max-speech-duration-s", "steno has no voice activity detection yet"},
        {"-vp", "--vad-speech-pad-ms", "steno has no voice activity detection yet"},
        {"-vo", "--vad-samples-overlap", "steno has no voice activity detection yet"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if ((t[i].s && strcmp(a, t[i].s) == 0) || strcmp(a, t[i].l) == 0) return t[i].why;
    return NULL;
}

static bool parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < -2147483647L || v > 2147483647L) return false;
    *out = (int)v;
    return true;
}

static bool parse_float(const char *s, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return false;
    *out = (float)v;
    return true;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, wparams *p) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-") == 0 || a[0] != '-') {
            if (p->n_inp == MAX_FILES) {
                fprintf(stderr, ERR_PREFIX "too many input files (at most %d)\n", MAX_FILES);
                return 2;
            }
            p->fname_inp[p->n_inp++] = a;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, p);
            return 0;
        }
        const char *why = unsupported_reason(a);
        if (why) {
            fprintf(stderr, ERR_PREFIX "not supported: %s (%s)\n", a, why);
            return 2;
        }
#define IS(s, l) (!strcmp(a, s) || !strcmp(a, l))
#define NEXT()                                                                    \
    (i + 1 < argc ? argv[++i]                                                     \
                  : (fprintf(stderr, ERR_PREFIX "argument %s requires value\n", a), \
                     (const char *)NULL))
#define INT(field)                                                                            \
    do {                                                                                      \
        const char *v = NEXT();                                                               \
        if (!v) return 2;                                                                     \
        if (!parse_int(v, &p->field)) {                                                       \
            fprintf(stderr, ERR_PREFIX "%s: expected an integer, got '%s'\n", a, v);          \
            return 2;                                                                         \
        }                                                                                     \
    } while (0)
#define FLT(field)                                                                            \
    do {                                                                                      \
        const char *v = NEXT();                                                               \
        if (!v) return 2;                                                                     \
        if (!parse_float(v, &p->field)) {                                                     \
            fprintf(stderr, ERR_PREFIX "%s: expected a number, got '%s'\n", a, v);            \
            return 2;                                                                         \
        }                                                                                     \
    } while (0)
#define STR(field)                  \
    do {                            \
        const char *v = NEXT();     \
        if (!v) return 2;           \
        p->field = v;               \
    } while (0)
        if (IS("-t", "--threads")) INT(n_threads);
        else if (IS("-p", "--processors")) INT(n_processors);
        else if (IS("-ot", "--offset-t")) INT(offset_t_ms);
        else if (IS("-on", "--offset-n")) INT(offset_n);
        else if (IS("-d", "--duration")) INT(duration_ms);
        else if (IS("-mc", "--max-context")) INT(max_context);
        else if (IS("-ml", "--max-len")) INT(max_len);
        else if (IS("-bo", "--best-of")) INT(best_of);
        else if (IS("-bs", "--beam-size")) INT(beam_size);
        else if (IS("-ac", "--audio-ctx")) INT(audio_ctx);
        else if (IS("-wt", "--word-thold")) FLT(word_thold);
        else if (IS("-et", "--entropy-thold")) FLT(entropy_thold);
        else if (IS("-lpt", "--logprob-thold")) FLT(logprob_thold);
        else if (IS("-nth", "--no-speech-thold")) FLT(no_speech_thold);
        else if (IS("-tp", "--temperature")) FLT(temperature);
        else if (IS("-tpi", "--temperature-inc")) FLT(temperature_inc);
        else if (IS("-tr", "--translate")) p->translate = true;
        else if (IS("-sow", "--split-on-word")) p->split_on_word = true;
        else if (IS("-nf", "--no-fallback")) p->no_fallback = true;
        else if (IS("-otxt", "--output-txt")) p->output_txt = true;
        else if (IS("-ovtt", "--output-vtt")) p->output_vtt = true;
        else if (IS("-osrt", "--output-srt")) p->output_srt = true;
        else if (IS("-olrc", "--output-lrc")) p->output_lrc = true;
        else if (IS("-ocsv", "--output-csv")) p->output_csv = true;
        else if (IS("-oj", "--output-json")) p->output_jsn = true;
        else if (IS("-ojf", "--output-json-full")) p->output_jsn_full = p->output_jsn = true;
        else if (IS("-of", "--output-file")) {
            const char *v = NEXT();
            if (!v) return 2;
            if (p->n_out == MAX_FILES) {
                fprintf(stderr, ERR_PREFIX "too many -of names (at most %d)\n", MAX_FILES);
                return 2;
            }
            p->fname_out[p->n_out++] = v;
        } else if (IS("-np", "--no-prints")) p->no_prints = true;
        else if (IS("-pp", "--print-progress")) p->print_progress = true;
        else if (IS("-nt", "--no-timestamps")) p->no_timestamps = true;
        else if (IS("-l", "--language")) STR(language);
        else if (IS("-dl", "--detect-language")) p->detect_language = true;
        else if (!strcmp(a, "--prompt")) STR(prompt);
        else if (IS("-m", "--model")) STR(model);
        else if (IS("-f", "--file")) {
            const char *v = NEXT();
            if (!v) return 2;
            if (p->n_inp == MAX_FILES) {
                fprintf(stderr, ERR_PREFIX "too many input files (at most %d)\n", MAX_FILES);
                return 2;
            }
            p->fname_inp[p->n_inp++] = v;
        } else if (IS("-ng", "--no-gpu")) { /* steno runs on the CPU */
        } else if (IS("-fa", "--flash-attn")) { /* steno's attention is always fused */
        } else if (IS("-sns", "--suppress-nst")) p->suppress_nst = true;
        else {
            fprintf(stderr, ERR_PREFIX "unknown argument: %s (see 'steno whisper-cli --help')\n", a);
            return 2;
        }
#undef IS
#undef NEXT
#undef INT
#undef FLT
#undef STR
    }
    return -1;
}

/* Checks of values whisper-cli takes but steno can only partly honour. Returns 0 or 2. */
static int check(const wparams *p) {
    if (p->n_threads < 1) {
        fprintf(stderr, ERR_PREFIX "-t: expected at least 1 thread, got %d\n", p->n_threads);
        return 2;
    }
    if (p->n_processors != 1) {
        fprintf(stderr, ERR_PREFIX "not supported: -p %d (steno runs one processor; use -t)\n", p->n_processors);
        return 2;
    }
    if (p->offset_t_ms < 0 || p->duration_ms < 0) {
        fprintf(stderr, ERR_PREFIX "-ot/-d: expected milliseconds >= 0\n");
        return 2;
    }
    if (p->max_context > 0 && p->max_context < 224) {
        fprintf(stderr,
                ERR_PREFIX "not supported: -mc %d (steno keeps 0 or up to 223 previous-text tokens: use -mc 0 or "
                           "-mc -1)\n",
                p->max_context);
        return 2;
    }
    if (p->max_len < 0) {
        fprintf(stderr, ERR_PREFIX "-ml: expected a length >= 0, got %d\n", p->max_len);
        return 2;
    }
    if (p->beam_size > 64 || p->best_of > 64) {
        fprintf(stderr, ERR_PREFIX "-bs/-bo: at most 64\n");
        return 2;
    }
    if (p->temperature < 0 || p->temperature > 1 || p->temperature_inc < 0) {
        fprintf(stderr, ERR_PREFIX "-tp/-tpi: expected a temperature in 0..1 and an increment >= 0\n");
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

int steno_cmd_whisper_cli(int argc, char **argv) {
    wparams p = {0};
    p.n_threads = default_threads();
    p.n_processors = 1;
    p.max_context = -1;
    p.best_of = 5;
    p.beam_size = 5;
    p.word_thold = 0.01f;
    p.entropy_thold = 2.40f;
    p.logprob_thold = -1.00f;
    p.no_speech_thold = 0.6f;
    p.temperature = 0.0f;
    p.temperature_inc = 0.2f;
    p.language = "en";
    p.model = "tiny.en";

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

    /* whisper.cpp's temperature ladder: temperature, + temperature_inc ... up to 1.0 (-nf: one) */
    double temps[64];
    int n_temps = 0;
    temps[n_temps++] = p.temperature;
    if (!p.no_fallback && p.temperature_inc > 0)
        for (double t = p.temperature + p.temperature_inc; t <= 1.0 + 1e-6 && n_temps < 64; t += p.temperature_inc)
            temps[n_temps++] = t;

    /* the model: a path as given (a ggml .bin gets the loader's error naming the format), else a
     * name under the steno models folder */
    char model_path[8192];
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

    int suppress_none = 0; /* whisper.cpp suppresses non-speech tokens only with -sns */
    rc = 0;
    for (int k = 0; k < p.n_inp; k++) {
        const char *input = p.fname_inp[k];
        const char *base = k < p.n_out && p.fname_out[k][0] ? p.fname_out[k] : input;
        steno_audio *audio = NULL; /* opened, not loaded: memory flat in the input's length */
        if (steno_audio_open(input, &audio) != STENO_OK) {
            const char *msg = steno_errmsg();
            if (strstr(msg, strcmp(input, "-") == 0 ? "stdin" : input)) fprintf(stderr, ERR_PREFIX "%s\n", msg);
            else fprintf(stderr, ERR_PREFIX "%s: %s\n", input, msg);
            rc = 1;
            continue;
        }
        const size_t n_samples = steno_audio_n_samples(audio);
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
                if (steno_detect_language_audio(w, audio, lp, 1, &n_lp) != STENO_OK || n_lp < 1) {
                    fprintf(stderr, ERR_PREFIX "%s\n", steno_errmsg());
                    rc = 1;
                } else {
                    fprintf(stderr, "whisper_full_with_state: auto-detected language: %s (p = %f)\n", lp[0].code,
                            lp[0].probability);
                }
            }
            steno_audio_close(audio);
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
        steno_status st = steno_transcribe_audio(w, audio, &tp, &res);
        steno_audio_close(audio);
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
    return rc;
}
