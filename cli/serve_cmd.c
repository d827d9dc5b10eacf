/* serve_cmd.c — `steno serve`: parses the options, resolves the model names, and runs the server
 * (server/server.h). Every limit has a flag; docs/SERVER.md lists them with their defaults. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "llm_cli.h"
#include "options.h"
#include "server/server.h"
#include "steno_llm.h"

/* "268435456", "256M", "1G": bytes (K/M/G are powers of 1024), at most 1 TiB. */
static bool parse_bytes(const char *s, void *dst, steno_opt_error *err) {
    (void)err;
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return false; /* no sign, no space */
    const unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno) return false;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (*end || v > (1ull << 40) / mul) return false;
    *(size_t *)dst = (size_t)(v * mul);
    return true;
}

static bool parse_num_draft(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    return steno_llm_cli_num_draft(v, (steno_spec_params *)((char *)dst - offsetof(steno_spec_params, n_draft)), 32);
}

typedef struct {
    server_opts o;
    const char *whisper, *llm, *model_dir;
    bool quiet;
    /* given on the command line (steno_opt.given): options refused where they cannot apply */
    bool draft_kind_given, num_draft_given, ngram_min_given, ngram_max_given, whisper_batch_given;
} serve_args;

static void serve_usage(FILE *f);

_Static_assert(sizeof(steno_path) == sizeof(int) && sizeof(steno_weights) == sizeof(int) &&
               sizeof(steno_draft_kind) == sizeof(int), "choices are stored as int");

#define AT(field) STENO_OPT_AT(serve_args, field)
#define BYTES_EXPECT "bytes up to 1T (a number, optionally with K, M or G: powers of 1024)"
#define SECONDS(name, field, text) {STENO_OPT_DOUBLE, name, "S", AT(field), STENO_OPT_RANGE(0, 1e7), .help = text}
static const steno_opt OPTIONS[] = {
    {STENO_OPT_SECTION, .help = "models (with neither, the default Whisper model tiny.en is served):"},
    {STENO_OPT_STRING, "--whisper-model", "NAME|DIR", AT(whisper),
     .help = "a Whisper model: a name in the model cache (tiny.en, base) or a CTranslate2 directory"},
    {STENO_OPT_STRING, "--llm-model", "NAME|FILE", AT(llm),
     .help = "an LLM: a known name (smollm2, gemma3, qwen2.5-coder-0.5b), a .gguf or llama2.c file"},
    {STENO_OPT_STRING, "--model-dir", "DIR", AT(model_dir), .def = "$STENO_MODELS_DIR, else ~/.cache/steno/models",
     .help = "where named models live"},
    {STENO_OPT_CHOICE, "--path", NULL, AT(o.whisper_opts.path), .choices = "fast|faithful",
     .values = (const int[]){STENO_PATH_FAST, STENO_PATH_FAITHFUL}, .def = "fast",
     .help = "Whisper implementation"},
    {STENO_OPT_CHOICE, "--weights", NULL, AT(o.whisper_opts.weights), .choices = "f16|f32|q8_0|q5_0|q5_1|q4_0|q4_1|mlx-q4g32|mlx-q4g64|mlx-q8g32|mlx-q8g64",
     .values = (const int[]){STENO_WEIGHTS_F16, STENO_WEIGHTS_F32, STENO_WEIGHTS_Q8_0, STENO_WEIGHTS_Q5_0,
                             STENO_WEIGHTS_Q5_1, STENO_WEIGHTS_Q4_0, STENO_WEIGHTS_Q4_1, STENO_WEIGHTS_MLX_Q4_G32,
                             STENO_WEIGHTS_MLX_Q4_G64, STENO_WEIGHTS_MLX_Q8_G32, STENO_WEIGHTS_MLX_Q8_G64},
     .def = "f16",
     .help = "Whisper fast-path weights (quantized types: Lab, see steno transcribe --help)"},
    {STENO_OPT_SECTION, .help = "\nserving:"},
    {STENO_OPT_STRING, "--host", "ADDR", AT(o.host), .def = "127.0.0.1",
     .help = "address to bind (0.0.0.0 or :: for every interface)"},
    {STENO_OPT_INT, "--port", "N", AT(o.port), STENO_OPT_RANGE(0, 65535), .def = "8080; 0 = any free port, printed",
     .help = "TCP port"},
    {STENO_OPT_INT, "--parallel", "N", AT(o.n_parallel), STENO_OPT_RANGE(1, 256), .def = "1",
     .help = "requests computed at once: transcriptions each on its own slot, generations as rows of one "
             "continuously batched pass"},
    {STENO_OPT_CHOICE, "--whisper-batch", NULL, AT(o.whisper_batch), .choices = "on|off",
     .values = (const int[]){1, 0}, .def = "on", .given = AT(whisper_batch_given),
     .help = "with --parallel > 1 and --path fast: concurrent transcriptions' decoder steps run as rows of one batched step on "
             "threads x parallel threads (the text is the same either way)"},
    {STENO_OPT_INT, "-t|--threads", "N", AT(o.n_threads), STENO_OPT_RANGE(0, 256), .def = "0: CPUs / parallel",
     .help = "threads per slot; the batched generation pass uses threads x parallel, at most the CPUs"},
    {STENO_OPT_CHOICE, "--compute", NULL, AT(o.llm_compute), .choices = "ggml|fast",
     .values = (const int[]){STENO_LLM_COMPUTE_GGML, STENO_LLM_COMPUTE_FAST}, .def = "ggml",
     .help = "LLM arithmetic: llama.cpp's, or the fast path (Lab: repacked q4_0/q4_1/q8_0/q4_K/q5_0/q6_K weights; docs/LLM.md)"},
    {STENO_OPT_INT, "--prefill-chunk", "N", AT(o.prefill_chunk), STENO_OPT_RANGE(1, 3840), .def = "64",
     .help = "prompt tokens fed per batched pass, so a long prompt delays the running streams by one chunk at a "
             "time"},
    {STENO_OPT_INT, "-c|--ctx-size", "N", AT(o.n_ctx), STENO_OPT_RANGE(16, 1 << 20),
     .def = "min(4096, the model's)", .help = "LLM context per slot in tokens"},
    {STENO_OPT_CUSTOM, "--kv-budget", "BYTES", AT(o.kv_budget_bytes), .parse = parse_bytes, .expect = BYTES_EXPECT,
     .def = "0: no cap",
     .help = "KV-cache bytes of all generation rows together: a request waits until the running ones leave room "
             "for its prompt + max_tokens, or gets a 400 if it never fits"},
    {STENO_OPT_CHOICE, "--draft-kind", NULL, AT(o.spec.kind), .choices = "none|ngram",
     .values = (const int[]){STENO_DRAFT_NONE, STENO_DRAFT_NGRAM}, .def = "none", .given = AT(draft_kind_given),
     .help = "speculative decoding of generations (prompt lookup); the text is the same either way"},
    {STENO_OPT_CUSTOM, "--num-draft-tokens", "N|adaptive", AT(o.spec.n_draft), .parse = parse_num_draft,
     .expect = "1..32 or adaptive", .def = "adaptive", .given = AT(num_draft_given),
     .help = "draft tokens per row and pass (--draft-kind ngram)"},
    {STENO_OPT_INT, "--ngram-min", "N", AT(o.spec.ngram_min), STENO_OPT_RANGE(1, 64), .def = "2",
     .given = AT(ngram_min_given), .help = "shortest n-gram the lookup tries (--draft-kind ngram)"},
    {STENO_OPT_INT, "--ngram-max", "N", AT(o.spec.ngram_max), STENO_OPT_RANGE(1, 64), .def = "4",
     .given = AT(ngram_max_given), .help = "longest n-gram the lookup tries (--draft-kind ngram)"},
    {STENO_OPT_CUSTOM, "--prompt-cache-bytes", "BYTES", AT(o.prompt_cache_bytes), .parse = parse_bytes,
     .expect = BYTES_EXPECT, .def = "256M; 0 = no prompt cache",
     .help = "RAM for saved prompt states, reused by later requests that share a prefix"},
    {STENO_OPT_CUSTOM, "--prompt-cache-dir", "DIR", AT(o.prompt_cache_dir), .parse = steno_opts_parse_nonempty,
     .help = "keep them as files in DIR too, reloaded at the next start"},
    {STENO_OPT_CUSTOM, "--api-key", "KEY", AT(o.api_key), .parse = steno_opts_parse_nonempty, .def = "$STENO_API_KEY",
     .help = "require 'Authorization: Bearer KEY' on every endpoint but /health and the page at /"},
    {STENO_OPT_SECTION, .help = "\nlimits (each rejection is an OpenAI-style JSON error):"},
    {STENO_OPT_SIZE, "--max-body", "N", AT(o.max_body_bytes), STENO_OPT_RANGE(1024, 4294967296.0),
     .def = "26214400 = 25 MB", .help = "largest request body in bytes, then 413"},
    SECONDS("--max-audio-seconds", o.max_audio_seconds, "longest audio, then 413 (default: 7200)"),
    {STENO_OPT_INT, "--max-tokens", "N", AT(o.max_tokens), STENO_OPT_RANGE(1, 1 << 20), .def = "4096",
     .help = "most tokens generated per request"},
    {STENO_OPT_INT, "--max-queue", "N", AT(o.max_queue), STENO_OPT_RANGE(0, 1 << 20), .def = "64",
     .help = "requests waiting for a slot, then 429 with Retry-After"},
    {STENO_OPT_INT, "--max-connections", "N", AT(o.max_connections), STENO_OPT_RANGE(1, 65536), .def = "256",
     .help = "open connections"},
    SECONDS("--header-timeout", o.header_timeout,
            "seconds to send the request line and headers (default: 15); also how long an idle keep-alive "
            "connection stays open (0 = no limit)"),
    SECONDS("--body-timeout", o.body_timeout, "seconds to send the whole body (default: 120; 0 = no limit)"),
    SECONDS("--request-timeout", o.request_timeout,
            "seconds a request may wait and run, then 504 (default: 600; 0 = none)"),
    SECONDS("--shutdown-timeout", o.shutdown_timeout, "seconds in-flight requests get after SIGTERM (default: 30)"),
    {STENO_OPT_SECTION, .help = ""},
    {STENO_OPT_STRING, "--port-file", "FILE", AT(o.port_file), .help = "write the bound port to FILE once listening"},
    {STENO_OPT_FLAG, "-q|--quiet", .at = AT(quiet), .help = "no per-request log lines"},
    {STENO_OPT_HELP, "-h|--help", .help = "this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef SECONDS
#undef BYTES_EXPECT
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno serve: ", .verb = "serve",
    .usage = serve_usage, .help_col = 28,
};

static void serve_usage(FILE *f) {
    fputs("usage: steno serve [options]\n"
          "\n"
          "An OpenAI-compatible HTTP server: POST /v1/audio/transcriptions, /v1/audio/translations,\n"
          "/inference (whisper.cpp), /v1/chat/completions, /v1/completions; GET /v1/models, /health,\n"
          "/metrics, and a web page at /. Stops gracefully on SIGINT/SIGTERM. See docs/SERVER.md.\n"
          "\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

int steno_cmd_serve(int argc, char **argv) {
    serve_args args = {.o = server_default_opts()};
    const int parsed = steno_opts_parse(&SPEC, &args, argc, argv);
    if (parsed >= 0) return parsed;
    server_opts o = args.o;
    const char *whisper = args.whisper, *llm = args.llm, *model_dir = args.model_dir;
    o.quiet = args.quiet;
    /* an option that cannot apply would be silently ignored: refused instead */
    const char *drafting = args.num_draft_given   ? "--num-draft-tokens"
                           : args.ngram_min_given ? "--ngram-min"
                           : args.ngram_max_given ? "--ngram-max"
                                                  : NULL;
    if (drafting && o.spec.kind != STENO_DRAFT_NGRAM) {
        fprintf(stderr, "steno serve: %s is for --draft-kind ngram, %s\n", drafting,
                args.draft_kind_given ? "not none" : "which is not given (speculation is off by default)");
        return 2;
    }
    if (args.whisper_batch_given && o.whisper_batch) {
        const char *why = o.n_parallel < 2                                ? "needs --parallel 2 or more (one slot has no "
                                                                            "concurrent transcriptions to batch)"
                          : o.whisper_opts.path == STENO_PATH_FAITHFUL ? "needs --path fast (the faithful path "
                                                                            "decodes each transcription alone)"
                          : llm && !whisper                            ? "needs a Whisper model (only --llm-model is "
                                                                            "served)"
                                                                       : NULL;
        if (why) {
            fprintf(stderr, "steno serve: --whisper-batch on %s\n", why);
            return 2;
        }
    }
    /* --ngram-max 1 alone asks for one-token matches: the default minimum (2) follows it down */
    if (!args.ngram_min_given && o.spec.ngram_max < o.spec.ngram_min) o.spec.ngram_min = o.spec.ngram_max;
    if (o.spec.ngram_max < o.spec.ngram_min) {
        fprintf(stderr, "steno serve: --ngram-min %d is above --ngram-max %d%s\n", o.spec.ngram_min, o.spec.ngram_max,
                args.ngram_max_given ? "" : " (the default: raise it too)");
        return 2;
    }
    if (!o.api_key) {
        const char *env = getenv("STENO_API_KEY");
        if (env && *env) o.api_key = env;
    }
    if (!whisper && !llm) whisper = "tiny.en";
    if (whisper && o.whisper_opts.path == STENO_PATH_FAITHFUL && o.whisper_opts.weights != STENO_WEIGHTS_F16 &&
        o.whisper_opts.weights != STENO_WEIGHTS_F32) {
        fprintf(stderr, "steno serve: --weights: quantized weights run on the fast path only (--path fast; faithful computes in float32)\n");
        return 2;
    }
    static char wpath[4096], lpath[4096];
    if (whisper) {
        if (steno_cli_model_path(whisper, model_dir, wpath, sizeof wpath) != 0) return 1;
        o.whisper_path = wpath;
        const char *slash = strrchr(whisper, '/');
        o.whisper_id = slash && slash[1] ? slash + 1 : whisper;
    }
    static char vpath[4200];
    steno_cli_vad_path(NULL, model_dir, vpath, sizeof vpath);
    o.vad_path = vpath;
    if (llm) {
        if (steno_llm_resolve(llm, lpath, sizeof lpath) != STENO_OK) {
            fprintf(stderr, "steno serve: %s\n", steno_errmsg());
            return 1;
        }
        o.llm_path = lpath;
        const char *slash = strrchr(llm, '/');
        o.llm_id = slash && slash[1] ? slash + 1 : llm;
    }
    return steno_server_run(&o);
}
