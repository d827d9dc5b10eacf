/* vad_cmd.c — `steno vad [options] FILE...`: speech spans of audio files by Silero VAD v6, as
 * faster-whisper 1.2.1's get_speech_timestamps gives them (include/steno.h, docs/VAD.md). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "steno.h"

void steno_vad_usage(FILE *f) {
    fputs("usage: steno vad [options] FILE...\n"
          "\n"
          "Prints the speech spans of each audio file (Silero VAD v6; faster-whisper 1.2.1's\n"
          "get_speech_timestamps, same defaults). tsv: file, start and end in seconds, start and\n"
          "end in samples at 16 kHz; json: one object per file per line.\n"
          "\n"
          "options:\n"
          "  --model PATH                  the converted weights (default: the model cache's\n"
          "                                " STENO_VAD_MODEL_FILE "; scripts/fetch_vad.sh)\n"
          "  --threshold P                 speech when probability >= P (0.5)\n"
          "  --neg-threshold P             silence below P (default: max(threshold - 0.15, 0.01))\n"
          "  --min-speech-duration-ms MS   drop spans not longer than MS (0)\n"
          "  --max-speech-duration-s S     split spans longer than S (inf)\n"
          "  --min-silence-duration-ms MS  silence that ends a span (2000)\n"
          "  --speech-pad-ms MS            padding on each side of a span (400)\n"
          "  --output-format tsv|json      (tsv)\n"
          "  --probs                       print the per-frame (512-sample) speech probabilities\n"
          "                                instead of the spans\n"
          "  --threads N                   threads for the network (default: all CPUs)\n"
          "  --dump-samples PATH           also write the decoded samples (float32, 16 kHz mono;\n"
          "                                one FILE) for tools/vad_fixtures.py\n"
          "  -h, --help                    show this help\n",
          f);
}

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "steno vad: %s '%s' (see 'steno vad --help')\n", msg, arg);
    return 2;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return *s && !*end && errno == 0 && !isnan(*out);
}

static int parse_int(const char *s, int *out) {
    double d;
    if (!parse_double(s, &d) || d != floor(d) || d < 0 || d > 1e9) return 0;
    *out = (int)d;
    return 1;
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
    enum { O_MODEL = 256, O_THR, O_NEG, O_MINSP, O_MAXSP, O_MINSIL, O_PAD, O_FMT, O_PROBS, O_THREADS, O_DUMP };
    static const struct option longopts[] = {
        {"model", required_argument, 0, O_MODEL}, {"threshold", required_argument, 0, O_THR},
        {"neg-threshold", required_argument, 0, O_NEG}, {"min-speech-duration-ms", required_argument, 0, O_MINSP},
        {"max-speech-duration-s", required_argument, 0, O_MAXSP},
        {"min-silence-duration-ms", required_argument, 0, O_MINSIL}, {"speech-pad-ms", required_argument, 0, O_PAD},
        {"output-format", required_argument, 0, O_FMT}, {"probs", no_argument, 0, O_PROBS},
        {"threads", required_argument, 0, O_THREADS}, {"dump-samples", required_argument, 0, O_DUMP},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    steno_vad_options o = steno_vad_default_options();
    const char *model = NULL, *dump = NULL;
    int json = 0, want_probs = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int ok = 1;
        switch (c) {
        case O_MODEL: model = optarg; break;
        case O_THR: ok = parse_double(optarg, &o.threshold) && o.threshold >= 0 && o.threshold <= 1; break;
        case O_NEG: ok = parse_double(optarg, &o.neg_threshold) && o.neg_threshold >= 0 && o.neg_threshold <= 1; break;
        case O_MINSP: ok = parse_int(optarg, &o.min_speech_duration_ms); break;
        case O_MAXSP: ok = parse_double(optarg, &o.max_speech_duration_s) && o.max_speech_duration_s > 0; break;
        case O_MINSIL: ok = parse_int(optarg, &o.min_silence_duration_ms); break;
        case O_PAD: ok = parse_int(optarg, &o.speech_pad_ms); break;
        case O_FMT:
            ok = strcmp(optarg, "tsv") == 0 || strcmp(optarg, "json") == 0;
            json = strcmp(optarg, "json") == 0;
            break;
        case O_PROBS: want_probs = 1; break;
        case O_THREADS: ok = parse_int(optarg, &o.n_threads) && o.n_threads >= 1; break;
        case O_DUMP: dump = optarg; break;
        case 'h': steno_vad_usage(stdout); return 0;
        default: return usage_error("unknown or incomplete option", argv[optind - 1]);
        }
        if (!ok) return usage_error("bad value", optarg);
    }
    if (optind >= argc) {
        fprintf(stderr, "steno vad: no input file (see 'steno vad --help')\n");
        return 2;
    }
    if (dump && argc - optind != 1) {
        fprintf(stderr, "steno vad: --dump-samples takes exactly one FILE\n");
        return 2;
    }
    char path[4200];
    if (model) {
        snprintf(path, sizeof path, "%s", model);
    } else {
        char root[4096];
        steno_cli_models_root(NULL, root, sizeof root);
        snprintf(path, sizeof path, "%s/%s", root, STENO_VAD_MODEL_FILE);
    }
    steno_vad *vad = NULL;
    if (steno_vad_load(path, &vad) != STENO_OK) {
        fprintf(stderr, "steno: %s%s\n", steno_errmsg(), model ? "" : " (run scripts/fetch_vad.sh)");
        return 1;
    }
    int status = 0;
    for (int i = optind; i < argc && status == 0; i++) {
        float *samples = NULL, *probs = NULL;
        size_t n = 0, n_probs = 0;
        steno_speech_span *spans = NULL;
        int n_spans = 0;
        if (steno_audio_load(argv[i], &samples, &n) != STENO_OK ||
            steno_vad_probs(vad, samples, n, o.n_threads, &probs, &n_probs) != STENO_OK ||
            steno_vad_spans_from_probs(probs, n_probs, n, &o, &spans, &n_spans) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            status = 1;
        } else if (dump && !dump_samples(dump, samples, n)) {
            status = 1;
        } else if (json) {
            if (!print_json(stdout, argv[i], n, spans, n_spans, want_probs ? probs : NULL, n_probs)) status = 1;
        } else {
            print_tsv(stdout, argv[i], spans, n_spans, want_probs ? probs : NULL, n_probs);
        }
        free(samples);
        free(probs);
        free(spans);
    }
    steno_vad_free(vad);
    return status;
}
