/* vad_cmd.c — `steno vad [options] FILE...`: speech spans of audio files by Silero VAD v6, as
 * faster-whisper 1.2.1's get_speech_timestamps gives them (include/steno.h, docs/VAD.md). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "steno.h"

typedef struct {
    steno_vad_options vo;
    const char *model, *output_format, *dump;
    bool probs;
    steno_opt_list files;
} vad_opts;

#define AT(field) STENO_OPT_AT(vad_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "-m|--model", "PATH", AT(model), .def = "the model cache's " STENO_VAD_MODEL_FILE,
     .help = "the converted weights (scripts/fetch_vad.sh)"},
    {STENO_OPT_DOUBLE, "--threshold", "P", AT(vo.threshold), STENO_OPT_RANGE(0, 1), .def = "0.5",
     .help = "speech when the probability is >= P"},
    {STENO_OPT_DOUBLE, "--neg-threshold", "P", AT(vo.neg_threshold), .flags = STENO_OPT_NONE_OK, STENO_OPT_RANGE(0, 1),
     .none_value = -1, .def = "None: max(threshold - 0.15, 0.01)", .help = "silence below P"},
    {STENO_OPT_INT, "--min-speech-duration-ms", "MS", AT(vo.min_speech_duration_ms), STENO_OPT_RANGE(0, 1000000000),
     .def = "0", .help = "drop spans not longer than MS"},
    {STENO_OPT_DOUBLE, "--max-speech-duration-s", "S", AT(vo.max_speech_duration_s), .flags = STENO_OPT_NONE_OK,
     STENO_OPT_ABOVE(0), .none_value = INFINITY, .def = "None: no limit", .help = "split spans longer than S"},
    {STENO_OPT_INT, "--min-silence-duration-ms", "MS", AT(vo.min_silence_duration_ms),
     STENO_OPT_RANGE(0, 1000000000), .def = "2000", .help = "silence that ends a span"},
    {STENO_OPT_INT, "--speech-pad-ms", "MS", AT(vo.speech_pad_ms), STENO_OPT_RANGE(0, 1000000000), .def = "400",
     .help = "padding on each side of a span"},
    {STENO_OPT_CHOICE, "--output-format", NULL, AT(output_format), .flags = STENO_OPT_AS_STRING, .choices = "tsv|json",
     .def = "tsv", .help = "tsv: file, start and end in seconds, start and end in samples; json: an object per file"},
    {STENO_OPT_FLAG, "--probs", .at = AT(probs),
     .help = "print the per-frame (512-sample) speech probabilities instead of the spans"},
    {STENO_OPT_INT, "--threads", "N", AT(vo.n_threads), STENO_OPT_RANGE(1, 256), .def = "all CPUs",
     .help = "threads for the network"},
    {STENO_OPT_STRING, "--dump-samples", "PATH", AT(dump),
     .help = "also write the decoded samples (float32, 16 kHz mono; one FILE) for tools/vad_fixtures.py"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
static const steno_opt FILES = {STENO_OPT_LIST, .metavar = "FILE", .at = AT(files)};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .positional = &FILES, .err_prefix = "steno vad: ",
    .verb = "vad", .underscores = true, .usage = steno_vad_usage, .help_col = 32,
};

void steno_vad_usage(FILE *f) {
    fputs("usage: steno vad [options] FILE...\n"
          "\n"
          "Prints the speech spans of each audio file (Silero VAD v6; faster-whisper 1.2.1's\n"
          "get_speech_timestamps, same defaults).\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

static void print_tsv(FILE *out, const char *file, const steno_speech_span *spans, int n, const float *probs,
                      size_t n_probs) {
    for (size_t i = 0; probs && i < n_probs; i++)
        fprintf(out, "%s\t%zu\t%.3f\t%.6f\n", file, i, i * 512.0 / STENO_SAMPLE_RATE, probs[i]);
    for (int i = 0; !probs && i < n; i++)
        fprintf(out, "%s\t%.4f\t%.4f\t%lld\t%lld\n", file, (double)spans[i].start / STENO_SAMPLE_RATE,
                (double)spans[i].end / STENO_SAMPLE_RATE, (long long)spans[i].start, (long long)spans[i].end);
}

static int print_json(FILE *out, const char *file, size_t n_samples, const steno_speech_span *spans, int n,
                      const float *probs, size_t n_probs) {
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddNumberToObject(o, "n_samples", (double)n_samples);
    for (size_t i = 0; probs && i < n_probs; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(probs[i]));
    for (int i = 0; !probs && i < n; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "start", (double)spans[i].start / STENO_SAMPLE_RATE);
        cJSON_AddNumberToObject(s, "end", (double)spans[i].end / STENO_SAMPLE_RATE);
        cJSON_AddNumberToObject(s, "start_sample", (double)spans[i].start);
        cJSON_AddNumberToObject(s, "end_sample", (double)spans[i].end);
        cJSON_AddItemToArray(arr, s);
    }
    cJSON_AddItemToObject(o, probs ? "probs" : "spans", arr);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return 0;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 1;
}

static int dump_samples(const char *path, const float *samples, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(samples, sizeof(float), n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "steno: %s: cannot write samples (%s)\n", path, strerror(errno));
    return ok;
}

int steno_cmd_vad(int argc, char **argv) {
    vad_opts a = {.vo = steno_vad_default_options(), .output_format = "tsv"};
    const int parsed = steno_opts_parse(&SPEC, &a, argc, argv);
    if (parsed >= 0) {
        steno_opt_list_free(&a.files);
        return parsed;
    }
    steno_vad_options o = a.vo;
    const char *model = a.model, *dump = a.dump;
    const int json = strcmp(a.output_format, "json") == 0, want_probs = a.probs;
    if (a.files.n == 0 || (dump && a.files.n != 1)) {
        fprintf(stderr, "steno vad: %s (see 'steno vad --help')\n",
                a.files.n == 0 ? "no input file" : "--dump-samples takes exactly one FILE");
        steno_opt_list_free(&a.files);
        return 2;
    }
    char path[4200];
    steno_cli_vad_path(model, NULL, path, sizeof path);
    steno_vad *vad = NULL;
    if (steno_vad_load(path, &vad) != STENO_OK) {
        fprintf(stderr, "steno: %s%s\n", steno_errmsg(), model ? "" : " (run scripts/fetch_vad.sh)");
        steno_opt_list_free(&a.files);
        return 1;
    }
    int status = 0;
    for (int i = 0; i < a.files.n && status == 0; i++) {
        const char *file = a.files.items[i];
        float *samples = NULL, *probs = NULL;
        size_t n = 0, n_probs = 0;
        steno_speech_span *spans = NULL;
        int n_spans = 0;
        if (steno_audio_load(file, &samples, &n) != STENO_OK ||
            steno_vad_probs(vad, samples, n, o.n_threads, &probs, &n_probs) != STENO_OK ||
            steno_vad_spans_from_probs(probs, n_probs, n, &o, &spans, &n_spans) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            status = 1;
        } else if (dump && !dump_samples(dump, samples, n)) {
            status = 1;
        } else if (json) {
            if (!print_json(stdout, file, n, spans, n_spans, want_probs ? probs : NULL, n_probs)) status = 1;
        } else {
            print_tsv(stdout, file, spans, n_spans, want_probs ? probs : NULL, n_probs);
        }
        free(samples);
        free(probs);
        free(spans);
    }
    steno_vad_free(vad);
    steno_opt_list_free(&a.files);
    return status;
}
