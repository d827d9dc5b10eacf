/* serve_cmd.c — `steno serve`: parses the options, resolves the model names, and runs the server
 * (server/server.h). Every limit has a flag; docs/SERVER.md lists them with their defaults. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "server/server.h"
#include "steno_llm.h"

static void serve_usage(FILE *f) {
    fputs("usage: steno serve [options]\n"
          "\n"
          "An OpenAI-compatible HTTP server: POST /v1/audio/transcriptions, /v1/audio/translations,\n"
          "/inference (whisper.cpp), /v1/chat/completions, /v1/completions; GET /v1/models, /health,\n"
          "/metrics, and a web page at /. Stops gracefully on SIGINT/SIGTERM. See docs/SERVER.md.\n"
          "\n"
          "models (with neither, the default Whisper model tiny.en is served):\n"
          "  --whisper-model NAME|DIR  a Whisper model: a name in the model cache (tiny.en, base) or a\n"
          "                            CTranslate2 directory\n"
          "  --llm-model NAME|FILE     an LLM: a known name (smollm2, gemma3), a .gguf or llama2.c file\n"
          "  --model-dir DIR           where named models live (default: $STENO_MODELS_DIR, else\n"
          "                            ~/.cache/steno/models)\n"
          "  --path fast|faithful      Whisper implementation (fast)\n"
          "  --weights f16|f32         Whisper fast-path decoder weights (f16)\n"
          "\n"
          "serving:\n"
          "  --host ADDR               address to bind (127.0.0.1; 0.0.0.0 or :: for every interface)\n"
          "  --port N                  TCP port (8080; 0 = any free port, printed)\n"
          "  --parallel N              requests computed at once (1): transcriptions each on its own\n"
          "                            slot, generations as rows of one continuously batched pass\n"
          "  -t, --threads N           threads per slot (default: CPUs / parallel); the batched\n"
          "                            generation pass uses threads x parallel, at most the CPUs\n"
          "  --prefill-chunk N         prompt tokens fed per batched pass, so a long prompt delays\n"
          "                            the running streams by one chunk at a time (64)\n"
          "  -c, --ctx-size N          LLM context per slot in tokens (default: min(4096, the model's))\n"
          "  --kv-budget N             KV-cache bytes of all generation rows together (suffix K, M, G;\n"
          "                            default and 0: no cap): a request waits until the running ones leave\n"
          "                            room for its prompt + max_tokens, or gets a 400 if it never fits\n"
          "  --draft-kind none|ngram   speculative decoding of generations (prompt lookup); the text\n"
          "                            is the same either way (default none)\n"
          "  --num-draft-tokens N|adaptive  draft tokens per row and pass, 1..32 (default adaptive)\n"
          "  --ngram-min N, --ngram-max N  n-gram lengths the lookup tries (default 1, 4)\n"
          "  --prompt-cache-bytes N    RAM for saved prompt states, reused by later requests that share\n"
          "                            a prefix (256M; suffix K, M or G; 0 = no prompt cache)\n"
          "  --prompt-cache-dir DIR    keep them as files in DIR too, reloaded at the next start\n"
          "  --api-key KEY             require 'Authorization: Bearer KEY' on every endpoint but /health\n"
          "                            and the page at / (or set STENO_API_KEY)\n"
          "\n"
          "limits (each rejection is an OpenAI-style JSON error):\n"
          "  --max-body BYTES          largest request body, then 413 (26214400 = 25 MB)\n"
          "  --max-audio-seconds S     longest audio, then 413 (7200)\n"
          "  --max-tokens N            most tokens generated per request (4096)\n"
          "  --max-queue N             requests waiting for a slot, then 429 with Retry-After (64)\n"
          "  --max-connections N       open connections (256)\n"
          "  --header-timeout S        seconds to send the request line and headers (15); also how long\n"
          "                            an idle keep-alive connection stays open (0 = no limit)\n"
          "  --body-timeout S          seconds to send the whole body (120; 0 = no limit)\n"
          "  --request-timeout S       seconds a request may wait and run, then 504 (600; 0 = none)\n"
          "  --shutdown-timeout S      seconds in-flight requests get after SIGTERM (30)\n"
          "\n"
          "  --port-file FILE          write the bound port to FILE once listening\n"
          "  -q, --quiet               no per-request log lines\n"
          "  -h, --help                this help\n",
          f);
}

/* "268435456", "256M", "1G": bytes (K/M/G are powers of 1024), at most 1 TiB. */
static int parse_bytes(const char *s, size_t *out) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return -1; /* no sign, no space */
    const unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno) return -1;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (*end || v > (1ull << 40) / mul) return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_seconds(const char *s, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e7) return -1;
    *out = v;
    return 0;
}

int steno_cmd_serve(int argc, char **argv) {
    server_opts o = server_default_opts();
    const char *whisper = NULL, *llm = NULL, *model_dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            serve_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        if (a[0] != '-') {
            fprintf(stderr, "steno serve: unexpected argument '%s' (see steno serve --help)\n", a);
            return 2;
        }
        static const char *const valued[] = {
            "--host", "--port", "--whisper-model", "--llm-model", "--model-dir", "--parallel", "-t", "--threads", "-c",
            "--ctx-size", "--api-key", "--max-body", "--max-audio-seconds", "--max-tokens", "--max-queue",
            "--max-connections", "--header-timeout", "--body-timeout", "--request-timeout", "--shutdown-timeout",
            "--port-file", "--path", "--weights", "--prefill-chunk", "--prompt-cache-bytes", "--prompt-cache-dir", "--kv-budget", "--draft-kind", "--num-draft-tokens", "--ngram-min",
            "--ngram-max", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++) known |= strcmp(a, valued[k]) == 0;
        if (!known) {
            fprintf(stderr, "steno serve: unknown option %s (see steno serve --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "steno serve: %s needs a value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        long n = 0;
        double d = 0;
#define NUM(lo, hi, dst)                                                                    \
    do {                                                                                    \
        if (parse_long(v, lo, hi, &n) != 0) {                                               \
            fprintf(stderr, "steno serve: %s: expected an integer from %ld to %ld, got '%s'\n", a, (long)(lo), \
                    (long)(hi), v);                                                         \
            return 2;                                                                       \
        }                                                                                   \
        dst = n;                                                                            \
    } while (0)
#define SECS(dst)                                                                                 \
    do {                                                                                          \
        if (parse_seconds(v, &d) != 0) {                                                          \
            fprintf(stderr, "steno serve: %s: expected seconds >= 0, got '%s'\n", a, v);           \
            return 2;                                                                             \
        }                                                                                         \
        dst = d;                                                                                  \
    } while (0)
        if (!strcmp(a, "--api-key") && !*v) {
            fprintf(stderr, "steno serve: --api-key: the key is empty\n");
            return 2;
        }
        if (!strcmp(a, "--host")) o.host = v;
        else if (!strcmp(a, "--port")) NUM(0, 65535, o.port);
        else if (!strcmp(a, "--whisper-model")) whisper = v;
        else if (!strcmp(a, "--llm-model")) llm = v;
        else if (!strcmp(a, "--model-dir")) model_dir = v;
        else if (!strcmp(a, "--parallel")) NUM(1, 256, o.n_parallel);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) NUM(0, 256, o.n_threads);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) NUM(16, 1 << 20, o.n_ctx);
        else if (!strcmp(a, "--api-key")) o.api_key = v;
        else if (!strcmp(a, "--max-body")) NUM(1024, 1L << 32, o.max_body_bytes);
        else if (!strcmp(a, "--max-audio-seconds")) SECS(o.max_audio_seconds);
        else if (!strcmp(a, "--max-tokens")) NUM(1, 1 << 20, o.max_tokens);
        else if (!strcmp(a, "--max-queue")) NUM(0, 1 << 20, o.max_queue);
        else if (!strcmp(a, "--prefill-chunk")) NUM(1, 3840, o.prefill_chunk);
        else if (!strcmp(a, "--prompt-cache-bytes") || !strcmp(a, "--kv-budget")) {
            if (parse_bytes(v, a[2] == 'p' ? &o.prompt_cache_bytes : &o.kv_budget_bytes) != 0) {
                fprintf(stderr, "steno serve: %s: expected bytes up to 1T (a number, optionally with K, M or G: powers of 1024), got '%s'\n", a, v);
                return 2;
            }
        } else if (!strcmp(a, "--draft-kind")) {
            if (!strcmp(v, "none")) o.spec.kind = STENO_DRAFT_NONE;
            else if (!strcmp(v, "ngram")) o.spec.kind = STENO_DRAFT_NGRAM;
            else {
                fprintf(stderr, "steno serve: --draft-kind: expected none or ngram, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--num-draft-tokens") && !strcmp(v, "adaptive")) {
            o.spec.adaptive = 1;
            o.spec.n_draft = 8;
        } else if (!strcmp(a, "--num-draft-tokens")) {
            NUM(1, 32, o.spec.n_draft);
            o.spec.adaptive = 0;
        } else if (!strcmp(a, "--ngram-min")) NUM(1, 64, o.spec.ngram_min);
        else if (!strcmp(a, "--ngram-max")) NUM(1, 64, o.spec.ngram_max);
        else if (!strcmp(a, "--prompt-cache-dir")) {
            if (!*v) {
                fprintf(stderr, "steno serve: --prompt-cache-dir: the directory is empty\n");
                return 2;
            }
            o.prompt_cache_dir = v;
        }
        else if (!strcmp(a, "--max-connections")) NUM(1, 65536, o.max_connections);
        else if (!strcmp(a, "--header-timeout")) SECS(o.header_timeout);
        else if (!strcmp(a, "--body-timeout")) SECS(o.body_timeout);
        else if (!strcmp(a, "--request-timeout")) SECS(o.request_timeout);
        else if (!strcmp(a, "--shutdown-timeout")) SECS(o.shutdown_timeout);
        else if (!strcmp(a, "--port-file")) o.port_file = v;
        else if (!strcmp(a, "--path")) {
            if (!strcmp(v, "fast")) o.whisper_opts.path = STENO_PATH_FAST;
            else if (!strcmp(v, "faithful")) o.whisper_opts.path = STENO_PATH_FAITHFUL;
            else {
                fprintf(stderr, "steno serve: --path: expected fast or faithful, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--weights")) {
            if (!strcmp(v, "f16")) o.whisper_opts.weights = STENO_WEIGHTS_F16;
            else if (!strcmp(v, "f32")) o.whisper_opts.weights = STENO_WEIGHTS_F32;
            else {
                fprintf(stderr, "steno serve: --weights: expected f16 or f32, got '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "steno serve: unknown option %s (see steno serve --help)\n", a);
            return 2;
        }
#undef NUM
#undef SECS
    }
    if (o.spec.ngram_max < o.spec.ngram_min) {
        fprintf(stderr, "steno serve: --ngram-min %d is above --ngram-max %d (default 4: raise it too)\n",
                o.spec.ngram_min, o.spec.ngram_max);
        return 2;
    }
    if (!o.api_key) {
        const char *env = getenv("STENO_API_KEY");
        if (env && *env) o.api_key = env;
    }
    if (!whisper && !llm) whisper = "tiny.en";
    static char wpath[4096], lpath[4096];
    if (whisper) {
        if (steno_cli_model_path(whisper, model_dir, wpath, sizeof wpath) != 0) return 1;
        o.whisper_path = wpath;
        const char *slash = strrchr(whisper, '/');
        o.whisper_id = slash && slash[1] ? slash + 1 : whisper;
    }
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
