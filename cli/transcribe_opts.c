/* transcribe_opts.c — `steno transcribe`'s options: the table (openai-whisper's names, defaults
 * and help, whisper/transcribe.py: cli), the value parsers it uses, and the usage text. */
#include "commands.h"
#include "options.h"
#include "steno.h"
#include "transcribe_cmd.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < -1000000 || v > 1000000) return false;
    *out = (int)v;
    return true;
}

/* Splits a comma-separated list into *items (malloc'd, *n of them; "" gives none) with parse
 * applied to each item after trimming blanks. Returns false (and frees) on a malformed item. */
static bool parse_list(const char *s, size_t size, bool (*parse)(const char *, void *), void **items, int *n) {
    *items = NULL;
    *n = 0;
    size_t len = strlen(s);
    int cap = 1;
    for (const char *c = s; *c; c++) cap += *c == ',';
    char *buf = malloc(len + 1);
    unsigned char *out = malloc(size * (size_t)cap);
    if (!buf || !out) { free(buf); free(out); return false; }
    const char *c = s;
    bool ok = true;
    bool blank = true;
    for (const char *d = s; *d; d++) blank &= isspace((unsigned char)*d) != 0;
    if (!blank) {
        for (;;) {
            size_t k = strcspn(c, ",");
            const char *a = c, *b = c + k;
            while (a < b && isspace((unsigned char)*a)) a++;
            while (b > a && isspace((unsigned char)b[-1])) b--;
            memcpy(buf, a, (size_t)(b - a));
            buf[b - a] = '\0';
            if (!parse(buf, out + size * (size_t)*n)) { ok = false; break; }
            (*n)++;
            if (!c[k]) break;
            c += k + 1;
        }
    }
    free(buf);
    if (!ok) { free(out); *n = 0; return false; }
    *items = out;
    return true;
}

static bool parse_seconds_item(const char *s, void *out) {
    double v;
    if (!parse_double(s, &v) || v < 0 || v > 1e7) return false;
    *(double *)out = v;
    return true;
}

static bool parse_token_item(const char *s, void *out) {
    int v;
    if (!parse_int(s, &v) || v < -1) return false;
    *(int *)out = v;
    return true;
}

/* --num-draft-tokens N|adaptive: adaptive is 0. */
static bool parse_num_draft(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    if (strcmp(v, "adaptive") == 0) {
        *(int *)dst = 0;
        return true;
    }
    char *end;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > 32) return false;
    *(int *)dst = (int)n;
    return true;
}

/* --verbose True|False; -1 (not given) means True, or False with -o -. */
static bool parse_verbose(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    bool b;
    if (!steno_opts_parse_bool(v, &b)) return false;
    *(int *)dst = b;
    return true;
}

static bool parse_clip_timestamps(const char *v, void *dst, steno_opt_error *err) {
    transcribe_opts *o = (transcribe_opts *)((char *)dst - offsetof(transcribe_opts, clip_timestamps));
    free(o->clip_timestamps);
    o->clip_timestamps = NULL;
    if (!parse_list(v, sizeof(double), parse_seconds_item, (void **)&o->clip_timestamps, &o->n_clip_timestamps))
        return false;
    for (int k = 1; k < o->n_clip_timestamps; k += 2) {
        const double start = o->clip_timestamps[k - 1], end = o->clip_timestamps[k];
        if (end < start) {
            snprintf(err->msg, sizeof err->msg, "clip %d ends at %g s, before its start %g s", k / 2 + 1, end, start);
            return false;
        }
    }
    return true;
}

static bool parse_suppress_tokens(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    transcribe_opts *o = (transcribe_opts *)((char *)dst - offsetof(transcribe_opts, suppress_tokens));
    free(o->suppress_tokens);
    o->suppress_tokens = NULL;
    o->has_suppress_tokens = true;
    return parse_list(v, sizeof(int), parse_token_item, (void **)&o->suppress_tokens, &o->n_suppress_tokens);
}

/* faster-whisper's --compute_type, mapped to the weight storage steno has (-1: default, auto) */
static bool parse_compute_type(const char *v, void *dst, steno_opt_error *err) {
    if (!strcmp(v, "default") || !strcmp(v, "auto")) *(int *)dst = -1;
    else if (!strcmp(v, "float16")) *(int *)dst = STENO_WEIGHTS_F16;
    else if (!strcmp(v, "float32")) *(int *)dst = STENO_WEIGHTS_F32;
    else {
        snprintf(err->msg, sizeof err->msg, "steno keeps Whisper weights as float16 (default, auto, float16) or "
                 "float32; '%.60s' is not available (quantized weights: --weights q8_0, q5_0, q5_1, q4_0, q4_1 "
                 "or mlx-q4g32 ... mlx-q8g64)", v);
        return false;
    }
    return true;
}

static bool parse_device(const char *v, void *dst, steno_opt_error *err) {
    (void)dst;
    if (strcasecmp(v, "cpu") == 0 || strcasecmp(v, "auto") == 0) return true;
    snprintf(err->msg, sizeof err->msg, "steno runs on the CPU (cpu or auto), got '%.60s'", v);
    return false;
}

static bool parse_output_name(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    if (!*v || strchr(v, '/')) return false;
    *(const char **)dst = v;
    return true;
}

_Static_assert(sizeof(steno_path) == sizeof(int) && sizeof(steno_weights) == sizeof(int) &&
               sizeof(steno_task) == sizeof(int), "choices are stored as int");

#define AT(field) STENO_OPT_AT(transcribe_opts, field)
#define BOOL_OPT(name, field, def_, text) \
    {STENO_OPT_BOOL, name, .at = AT(field), .def = def_, .help = text}
static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "-m|--model", "NAME|DIR|FILE", AT(model), .def = DEFAULT_MODEL,
     .help = "a model name looked up in --model-dir, a model directory (CTranslate2, Hugging Face or MLX) or a "
             "whisper.cpp ggml file; the format is detected from the files"},
    {STENO_OPT_STRING, "--model-dir", "DIR", AT(model_dir),
     .def = "$STENO_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models",
     .help = "where named models live; fetch tiny.en with scripts/fetch_model.sh"},
    {STENO_OPT_STRING, "-o|--output-dir", "DIR", AT(output_dir), .def = ".",
     .help = "write <DIR>/<FILE's name without extension>.<format> (created if missing; stdin is named \"stdin\"); "
             "\"-\" prints the transcript to standard output instead"},
    {STENO_OPT_CHOICE, "-f|--output-format", NULL, AT(output_format), .flags = STENO_OPT_AS_STRING,
     .choices = "txt|vtt|srt|tsv|json|csv|lrc|all", .def = "all, txt with -o -, where all is refused",
     .help = "txt, vtt, srt, tsv, json, all (those five), or whisper.cpp's csv, lrc"},
    {STENO_OPT_CUSTOM, "--verbose", "True|False", AT(verbose), .parse = parse_verbose, .expect = "True or False",
     .def = "True, False with -o -, where the lines go to standard error",
     .help = "print each segment as \"[00:00.000 --> 00:05.000] text\" to standard output as it is decoded"},
    {STENO_OPT_FLAG, "--progress", .at = AT(progress), .def = "on a terminal, for inputs over a minute",
     .help = "show a progress bar on standard error: position, speed (x real time), ETA"},
    {STENO_OPT_STRING, "--language", "LANG", AT(language), .def = "auto",
     .help = "the spoken language (code or name), or auto: a multilingual model detects it on the first 30 s and "
             "prints \"Detected language: <Name> with probability <p>\" to stderr; English-only (.en) models "
             "accept only en (and auto)"},
    {STENO_OPT_CHOICE, "--task", NULL, AT(task), .choices = "transcribe|translate",
     .values = (const int[]){STENO_TASK_TRANSCRIBE, STENO_TASK_TRANSLATE}, .def = "transcribe",
     .help = "translate: English text from speech in another language (multilingual models only)"},
    {STENO_OPT_FLAG, "--detect-language", .at = AT(detect_language),
     .help = "print each FILE's 5 most probable languages (TSV: file, code, name, probability) and stop "
             "(multilingual models only)"},
    {STENO_OPT_DOUBLE, "--temperature", "T", AT(temperature), STENO_OPT_MIN(0), .def = "0",
     .help = "sampling temperature"},
    {STENO_OPT_DOUBLE, "--temperature-increment-on-fallback", "INC", AT(increment), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_ABOVE(0), .none_value = NAN, .def = "0.2",
     .help = "retry ladder T, T+INC, ... <= 1.0 when decoding fails the thresholds below; None: no fallback"},
    {STENO_OPT_DOUBLE, "--compression-ratio-threshold", "X", AT(compression_ratio_threshold),
     .flags = STENO_OPT_NONE_OK, .none_value = NAN, .def = "2.4",
     .help = "fail a window whose gzip ratio is above X"},
    {STENO_OPT_DOUBLE, "--logprob-threshold", "X", AT(logprob_threshold), .flags = STENO_OPT_NONE_OK,
     .none_value = NAN, .def = "-1.0", .help = "fail a window whose mean log-probability is below X"},
    {STENO_OPT_DOUBLE, "--no-speech-threshold", "X", AT(no_speech_threshold), .flags = STENO_OPT_NONE_OK,
     .none_value = NAN, .def = "0.6",
     .help = "treat a window as silent when its no-speech probability is above X and the log-probability check "
             "failed"},
    BOOL_OPT("--condition-on-previous-text", condition_on_previous_text, "True",
             "prompt each window with the previous text"),
    {STENO_OPT_STRING, "--initial-prompt", "TEXT", AT(initial_prompt), .help = "prompt for the first window"},
    BOOL_OPT("--word-timestamps", word_timestamps, "False",
             "word-level timestamps: \"words\" in JSON, subtitles built from words"),
    {STENO_OPT_STRING, "--prepend-punctuations", "CHARS", AT(prepend_punctuations), .def = "\"'\u201c\u00bf([{-",
     .help = "merged into the next word"},
    {STENO_OPT_STRING, "--append-punctuations", "CHARS", AT(append_punctuations),
     .def = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001", .help = "merged into the previous word"},
    BOOL_OPT("--highlight-words", highlight_words, "False",
             "underline each word as it is spoken (srt, vtt; needs --word-timestamps True)"),
    {STENO_OPT_INT, "--max-line-width", "N", AT(writer.max_line_width), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_RANGE(1, 1000000), .none_value = 0,
     .help = "characters per subtitle line (srt, vtt; needs --word-timestamps True)"},
    {STENO_OPT_INT, "--max-line-count", "N", AT(writer.max_line_count), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_RANGE(1, 1000000), .none_value = 0,
     .help = "lines per subtitle (srt, vtt; needs --word-timestamps True and --max-line-width)"},
    {STENO_OPT_INT, "--max-words-per-line", "N", AT(writer.max_words_per_line), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_RANGE(1, 1000000), .none_value = 0,
     .help = "words per subtitle line (srt, vtt; needs --word-timestamps True; not with --max-line-width)"},
    {STENO_OPT_DOUBLE, "--hallucination-silence-threshold", "T", AT(hallucination_silence_threshold),
     .flags = STENO_OPT_NONE_OK, STENO_OPT_MIN(0), .none_value = -1, .def = "None",
     .help = "skip silences longer than T s before a possible hallucination (needs --word-timestamps True)"},
    BOOL_OPT("--carry-initial-prompt", carry_initial_prompt, "False",
             "start the prompt of every window with the initial prompt (openai-whisper's rule)"),
    {STENO_OPT_STRING, "--prefix", "TEXT", AT(prefix),
     .help = "text that the first window's transcript starts with (forced after the SOT sequence, "
             "faster-whisper's prefix)"},
    {STENO_OPT_STRING, "--hotwords", "TEXT", AT(hotwords),
     .help = "hint phrases put in the prompt of every window that has no prefix (faster-whisper's hotwords)"},
    {STENO_OPT_CUSTOM, "--clip-timestamps", "LIST", AT(clip_timestamps), .parse = parse_clip_timestamps,
     .expect = "start,end,... in seconds (numbers >= 0)", .def = "0",
     .help = "transcribe only these clips; the last end defaults to the end of the audio"},
    {STENO_OPT_CUSTOM, "--suppress-tokens", "LIST", AT(suppress_tokens), .parse = parse_suppress_tokens,
     .expect = "comma-separated token ids (-1 or >= 0)", .def = "-1",
     .help = "token ids never to sample; -1 is the model's non-speech set, \"\" none"},
    BOOL_OPT("--suppress-blank", suppress_blank, "True", "no blank or end-of-text as the first sampled token"),
    BOOL_OPT("--without-timestamps", without_timestamps, "False", "sample text only: one segment per window"),
    {STENO_OPT_INT, "--beam-size", "N", AT(beam_size), STENO_OPT_RANGE(1, 64),
     .def = "greedy; openai-whisper's CLI uses 5, faster-whisper too",
     .help = "beam search with N beams at temperature 0"},
    {STENO_OPT_DOUBLE, "--patience", "P", AT(patience), .flags = STENO_OPT_NONE_OK, STENO_OPT_ABOVE(0),
     .none_value = 1.0, .def = "1.0", .help = "beam search stops after round(N*P) finished hypotheses"},
    {STENO_OPT_DOUBLE, "--length-penalty", "A", AT(length_penalty), .flags = STENO_OPT_NONE_OK, STENO_OPT_MIN(0),
     .none_value = 1.0, .def = "1.0",
     .help = "rank hypotheses by sum logprob / length^A (faster-whisper's meaning; 0: raw sum); None = 1.0"},
    {STENO_OPT_INT, "--best-of", "N", AT(best_of), STENO_OPT_RANGE(1, 64), .def = "1",
     .help = "at temperature > 0, draw N samples and keep the best"},
    {STENO_OPT_U64, "--seed", "S", AT(seed), .def = "0", .help = "seed of the sampler at temperature > 0"},
    {STENO_OPT_INT, "-t|--threads", "N", AT(threads), STENO_OPT_RANGE(0, 256), .def = "0 = all cores",
     .help = "CPU threads"},
    {STENO_OPT_CHOICE, "--path", NULL, AT(load.path), .choices = "fast|faithful",
     .values = (const int[]){STENO_PATH_FAST, STENO_PATH_FAITHFUL}, .def = "fast",
     .help = "model math: fast (fused attention, planned decoder step, gated token-exact against faithful) or "
             "faithful (an op-for-op float32 port of openai-whisper's model.py)"},
    {STENO_OPT_CHOICE, "--weights", NULL, AT(load.weights), .choices = "f16|f32|q8_0|q5_0|q5_1|q4_0|q4_1|mlx-q4g32|mlx-q4g64|mlx-q8g32|mlx-q8g64",
     .values = (const int[]){STENO_WEIGHTS_F16, STENO_WEIGHTS_F32, STENO_WEIGHTS_Q8_0, STENO_WEIGHTS_Q5_0,
                             STENO_WEIGHTS_Q5_1, STENO_WEIGHTS_Q4_0, STENO_WEIGHTS_Q4_1, STENO_WEIGHTS_MLX_Q4_G32,
                             STENO_WEIGHTS_MLX_Q4_G64, STENO_WEIGHTS_MLX_Q8_G32, STENO_WEIGHTS_MLX_Q8_G64},
     .def = "f16", .given = AT(weights_given),
     .help = "fast path weights (f16: float16 encoder and decoder weights and cross-attention K/V, greedy logits "
             "screened by "
             "an int8 copy with the chosen token exact; f32: the token-exact gate; Lab, gated by WER "
             "(docs/WHISPER.md): q8_0 q5_0 q5_1 q4_0 q4_1, whisper.cpp's block formats, and mlx-q4g32 mlx-q4g64 "
             "mlx-q8g32 mlx-q8g64, MLX affine 4/8-bit in groups of 32/64, quantized at load time, encoder and "
             "decoder)"},
    {STENO_OPT_CUSTOM, "--compute-type", "default|auto|float16|float32", AT(compute_weights), .parse = parse_compute_type,
     .expect = "default, auto, float16 or float32", .given = AT(compute_type_given),
     .help = "faster-whisper's spelling of --weights: default, auto or float16 (f16), float32 (f32); quantized "
             "types are not available"},
    {STENO_OPT_CUSTOM, "--device", "cpu|auto", .parse = parse_device, .expect = "cpu or auto",
     .help = "accepted (steno runs on the CPU); any other device is an error"},
    {STENO_OPT_BOOL, "--fp16", .help = "accepted for openai-whisper's command lines; steno's precision is "
                                       "--weights' (the encoder computes in float32 either way)"},
    {STENO_OPT_CUSTOM, "--output-name", "NAME", AT(output_name), .parse = parse_output_name,
     .expect = "a file name without '/'", .help = "stem of the output files instead of the input's (one input)"},
    {STENO_OPT_INT, "--audio-ctx", "N", AT(load.audio_ctx), STENO_OPT_RANGE(0, 1500),
     .help = "Lab: encode only the first N of 1500 positions (N/50 s of each window; Whisper's n_audio_ctx); "
             "faster, less accurate (docs/PERFORMANCE.md)"},
    BOOL_OPT("--vad|--vad-filter", vad, "False",
             "voice activity detection first (Silero VAD v6, as faster-whisper's vad_filter): only the speech is "
             "transcribed, times stay the input's; not with --clip-timestamps (which then win, as in "
             "faster-whisper); holds the input's samples in memory"),
    {STENO_OPT_STRING, "--vad-model", "PATH", AT(vad_model),
     .def = STENO_VAD_MODEL_FILE " in --model-dir (scripts/fetch_vad.sh)", .help = "the VAD's weights"},
    {STENO_OPT_DOUBLE, "--vad-threshold", "P", AT(vad_opts.threshold), STENO_OPT_RANGE(0, 1), .def = "0.5",
     .help = "a 32-ms frame with speech probability >= P is speech"},
    {STENO_OPT_DOUBLE, "--vad-neg-threshold", "P", AT(vad_opts.neg_threshold), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_RANGE(0, 1), .none_value = -1, .def = "None: max(threshold - 0.15, 0.01)",
     .help = "speech ends below P"},
    {STENO_OPT_INT, "--vad-min-speech-duration-ms", "MS", AT(vad_opts.min_speech_duration_ms),
     STENO_OPT_RANGE(0, 86400000), .def = "0", .help = "speech spans not longer than MS are dropped"},
    {STENO_OPT_DOUBLE, "--vad-max-speech-duration-s", "S", AT(vad_opts.max_speech_duration_s),
     .flags = STENO_OPT_NONE_OK, STENO_OPT_ABOVE(0), .none_value = INFINITY, .def = "None: no limit",
     .help = "longer spans are split at a silence (or cut)"},
    {STENO_OPT_INT, "--vad-min-silence-duration-ms", "MS", AT(vad_opts.min_silence_duration_ms),
     STENO_OPT_RANGE(0, 86400000), .def = "2000", .help = "a silence this long ends a speech span"},
    {STENO_OPT_INT, "--vad-speech-pad-ms", "MS", AT(vad_opts.speech_pad_ms), STENO_OPT_RANGE(0, 86400000),
     .def = "400", .help = "padding kept on each side of a speech span"},
    {STENO_OPT_INT, "--batch-size", "N", AT(batch_size), STENO_OPT_RANGE(1, STENO_MAX_BATCH_SIZE),
     .def = "None: sequential",
     .help = "batched mode, as faster-whisper's BatchedInferencePipeline: VAD chunks of <= 30 s (min silence 160 "
             "ms unless a --vad-* option is given), N windows decoded together, no previous text, no "
             "sampling (a --temperature is reported, not used); --beam-size defaults to 5 and "
             "--without-timestamps to True there; not with "
             "--word-timestamps or --clip-timestamps; the fast path"},
    {STENO_OPT_SECTION, .help = "speculative decoding of greedy windows (the tokens are plain decoding's; not with "
                                "--beam-size or --batch-size, which already read each weight once for several "
                                "rows; sampled fallbacks decode plainly, since verifying a sampled token would "
                                "change the seed's draws; the decoder's counters go to stderr):"},
    {STENO_OPT_CHOICE, "--draft-kind", NULL, AT(draft_kind), .choices = "none|ngram|quant|layers|model",
     .values = (const int[]){STENO_WDRAFT_NONE, STENO_WDRAFT_NGRAM, STENO_WDRAFT_QUANT, STENO_WDRAFT_LAYERS,
                             STENO_WDRAFT_MODEL},
     .def = "none",
     .help = "ngram: prompt lookup in the previous windows' text; quant: the model's decoder re-quantized "
             "(--draft-weights); layers: its first --draft-layers decoder layers; model: --draft-model"},
    {STENO_OPT_CUSTOM, "--num-draft-tokens", "N|adaptive", AT(num_draft), .parse = parse_num_draft,
     .expect = "1..32 or adaptive",
     .def = "adaptive: up to 8, lengthened while drafts hold, 0 while they fail or while drafted rounds are slower "
            "than plain steps",
     .help = "most drafted tokens per round"},
    {STENO_OPT_INT, "--draft-layers", "K", AT(draft_layers), STENO_OPT_RANGE(1, 1024),
     .def = "half of the decoder layers", .help = "decoder layers that draft (fewer than the model has; implies --draft-kind layers)"},
    {STENO_OPT_CHOICE, "--draft-weights", NULL, AT(draft_weights), .choices = "q8_0|q4_0",
     .values = (const int[]){STENO_WEIGHTS_Q8_0, STENO_WEIGHTS_Q4_0}, .def = "q8_0",
     .help = "blocks of the quant drafter's copy of the decoder (the model's weights must be f16 or f32)"},
    {STENO_OPT_CUSTOM, "--draft-model", "NAME|DIR", AT(draft_model), .parse = steno_opts_parse_nonempty,
     .expect = "a model name or directory",
     .help = "a Whisper model with the same vocabulary that drafts (implies --draft-kind model)"},
    {STENO_OPT_INT, "--ngram-min", "N", AT(ngram_min), STENO_OPT_RANGE(1, 64), .def = "2",
     .help = "shortest n-gram the ngram drafter tries (longest first)"},
    {STENO_OPT_INT, "--ngram-max", "N", AT(ngram_max), STENO_OPT_RANGE(1, 64), .def = "4",
     .help = "longest n-gram the ngram drafter tries"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
static const steno_opt FILES = {STENO_OPT_LIST, .metavar = "FILE", .at = AT(files)};
#undef BOOL_OPT
#undef AT

const steno_opts_spec steno_transcribe_spec = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .positional = &FILES,
    .err_prefix = "steno: ", .verb = "transcribe", .underscores = true, .usage = steno_transcribe_usage,
    .help_col = 26,
};

void steno_transcribe_usage(FILE *f) {
    fputs("usage: steno transcribe [options] FILE...\n"
          "\n"
          "Transcribes speech in each FILE (any format FFmpeg decodes; \"-\" reads standard input)\n"
          "with a Whisper model, like openai-whisper's `whisper` command. The model is loaded once.\n"
          "\n"
          "options (openai-whisper's names; --name_with_underscores is accepted too; True|False\n"
          "values also read true/false, yes/no and 1/0, in any case; None turns a threshold off):\n",
          f);
    steno_opts_help(f, &steno_transcribe_spec, NULL);
    fputs("\n"
          "exit status: 0 ok (also with nothing said: an empty transcript, though Whisper can invent\n"
          "text in silence or noise; --vad keeps those out); 1 when a file or the model could\n"
          "not be processed (one line per failure on stderr; the other files are still done);\n"
          "2 usage error.\n"
          "\n"
          "examples:\n"
          "  steno transcribe talk.mp3                    # talk.txt .vtt .srt .tsv .json in .\n"
          "  steno transcribe -f srt -o subs a.wav b.flac # subs/a.srt, subs/b.srt\n"
          "  steno transcribe -f vtt -o - talk.wav        # WebVTT on standard output\n"
          "  cat talk.wav | steno transcribe -o - -       # text on standard output\n",
          f);
}
