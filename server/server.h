/* server.h — `steno serve`: an OpenAI-compatible HTTP server over the scheduler (docs/SERVER.md).
 *
 * One process loads each model once (src/sched) and answers many clients: speech endpoints
 * (/v1/audio/transcriptions, /v1/audio/translations, whisper.cpp's /inference), text endpoints
 * (/v1/chat/completions, /v1/completions), operations (/health, /v1/models, /metrics) and a web
 * page at /. HTTP comes from libmicrohttpd (thread per connection), JSON from cJSON. */
#ifndef STENO_SERVER_SERVER_H
#define STENO_SERVER_SERVER_H

#include <stddef.h>

#include "steno.h"
#include "steno_llm.h"

typedef struct server_opts {
    const char *host;            /* "127.0.0.1" */
    int port;                    /* 8080; 0: any free port (printed) */
    const char *whisper_path;    /* resolved model directory, or NULL */
    const char *whisper_id;      /* its name in the API */
    steno_whisper_options whisper_opts;
    const char *llm_path;        /* resolved model file, or NULL */
    const char *llm_id;
    int n_threads;               /* per slot; <= 0: CPUs / parallel */
    int n_parallel;              /* requests run at once (1) */
    int whisper_batch;           /* 1 (default): concurrent transcriptions' decoder steps batched
                                    (sched_params.whisper_batch); 0: each slot steps alone */
    int max_queue;               /* requests waiting for a slot (64), then 429 */
    int prefill_chunk;           /* prompt tokens per batched generation pass (64) */
    int llm_compute;             /* steno_llm_compute of the generations (GGML) */
    size_t kv_budget_bytes;      /* KV-cache bytes of all generation rows (0: no cap) */
    steno_spec_params spec;      /* speculative decoding of generations (kind NONE: off) */
    size_t prompt_cache_bytes;   /* RAM for saved prompt states (256 MiB; 0: none) */
    const char *prompt_cache_dir;/* where they persist across restarts (NULL: nowhere) */
    int n_ctx;                   /* LLM context per slot (0: min(4096, the model's)) */
    size_t max_body_bytes;       /* 26 214 400 (25 MB, OpenAI's), then 413 */
    double max_audio_seconds;    /* 7200 */
    int max_tokens;              /* generated tokens per request at most (4096) */
    double header_timeout;       /* seconds to receive the request line and headers (15) */
    double body_timeout;         /* seconds to receive the whole body (120) */
    double request_timeout;      /* seconds a job may wait and run (600; 0: none) */
    double shutdown_timeout;     /* seconds in-flight requests get after SIGTERM (30) */
    int max_connections;         /* open connections at most (256) */
    const char *api_key;         /* NULL: no authentication */
    const char *vad_path;        /* Silero VAD weights for /v1/stream (NULL: no VAD; loaded at the first stream) */
    int quiet;                   /* no per-request log lines */
    const char *port_file;       /* write the bound port here once listening (tests) */
} server_opts;

server_opts server_default_opts(void);

/** Runs the server until SIGINT/SIGTERM; returns the process exit status (0 after a graceful
 *  shutdown, 1 when the port cannot be bound or a model cannot be loaded). */
int steno_server_run(const server_opts *o);

#endif
