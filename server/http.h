/* http.h — what the endpoint handlers (routes_*.c) see of an HTTP request, and the response
 * helpers they answer with. The HTTP machinery itself (libmicrohttpd's daemon, body collection,
 * multipart parsing through MHD's PostProcessor, limits, auth, logging) lives in http.c.
 *
 * A handler runs on the connection's own thread (MHD thread-per-connection) once the whole body
 * has arrived; it may block while a scheduler job runs (http_wait_job watches the client socket
 * and cancels the job when the client leaves), and answers with exactly one http_send_* call. */
#ifndef STENO_SERVER_HTTP_H
#define STENO_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/sched.h"
#include "server/api_error.h"
#include "server/server.h"

struct MHD_Connection;
struct server_metrics;

/** The server's shared state, read by every handler. */
typedef struct server_ctx {
    server_opts o;
    steno_sched *sched;           /* NULL while the models load */
    struct server_metrics *metrics;
    volatile int ready;           /* models loaded */
    volatile int stopping;        /* SIGINT/SIGTERM received */
    char whisper_id[128], llm_id[128]; /* model names reported and accepted ("" when none) */
    long started;                 /* time(NULL) at start-up: /v1/models "created" */
} server_ctx;

/** One part of a multipart/form-data (or urlencoded) body. */
typedef struct form_field {
    char *name;
    char *filename;   /* NULL when the part is not a file */
    char *data;       /* NUL-terminated, len bytes (files may hold NULs) */
    size_t len, cap;
} form_field;

typedef enum route_id {
    ROUTE_NONE = 0,
    ROUTE_TRANSCRIPTIONS,
    ROUTE_TRANSLATIONS,
    ROUTE_INFERENCE,
    ROUTE_CHAT,
    ROUTE_COMPLETIONS,
    ROUTE_MODELS,
    ROUTE_HEALTH,
    ROUTE_METRICS,
    ROUTE_PAGE,
    ROUTE_STREAM,
    ROUTE_COUNT
} route_id;

typedef struct http_req {
    server_ctx *srv;
    struct MHD_Connection *conn;
    route_id route;
    char method[16];
    char path[512];
    double t0;                   /* monotonic seconds at the first byte of the body */
    int fd;                      /* the client socket (disconnect detection) */
    /* body */
    char *body;                  /* JSON requests: the raw body, NUL-terminated */
    size_t body_len, body_cap, body_seen;
    struct MHD_PostProcessor *pp;
    form_field *fields;
    int n_fields, cap_fields;
    int form_broken;             /* the PostProcessor rejected the body */
    /* an error found before or while the body arrived, answered once it is in: a client that
     * sends its body without waiting (no Expect: 100-continue) reads the 4xx instead of a broken
     * pipe; defer is set while such a client's body is still coming */
    int defer;
    int err_status;
    char err_msg[512];
    const char *err_type, *err_param, *err_code;
    /* the answer */
    int status;
    char allow[40];              /* the methods of the path, for a 405's Allow header */
    uint64_t bytes_out;
    int streaming;
    /* an upgrade (101) whose socket MHD never handed over (the client left before the 101 went
     * out): http_request_completed calls abandon(abandon_arg) to release what was set up */
    void (*abandon)(void *arg);
    void *abandon_arg;
    /* counted once per request in the metrics */
    double audio_seconds;
    int prompt_tokens, completion_tokens;
} http_req;

/* ------------------------------------------------------------------------------ request helpers */

/** The form field named name (the first one), or NULL. */
const form_field *http_field(const http_req *r, const char *name);
/** All values of a repeated field (name or name[]): up to cap into out; returns the count. */
int http_fields(const http_req *r, const char *name, const form_field **out, int cap);
/** Header value or NULL. */
const char *http_header(const http_req *r, const char *name);
/** Non-zero when the client has closed its end of the connection. */
int http_client_gone(const http_req *r);

/** Waits for job to finish while watching the client; cancels the job if the client leaves.
 *  Returns 0 when the job finished, -1 when the client left (the job is cancelled, not waited
 *  for). */
int http_wait_job(http_req *r, sched_job *job);

/* ------------------------------------------------------------------------------------ responses */

/** Answers status with body (copied) of content_type. Returns the MHD result to return. */
int http_send(http_req *r, int status, const char *content_type, const char *body, size_t len);
/** Answers status with json (printed unformatted, then deleted). */
int http_send_json(http_req *r, int status, cJSON *json);
/** OpenAI's error body {"error":{"message","type","param","code"}}; param/code may be NULL. */
int http_send_error(http_req *r, int status, const char *type, const char *param, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/** A failed job's answer: 504 when its deadline passed (what: "transcription"), 400 for an
 *  invalid or unsupported request, 503 when cancelled, else 500; the JSON form for streams. */
int http_send_job_error(http_req *r, const sched_outcome *o, const char *what);
cJSON *http_job_error_json(const sched_outcome *o, const char *what, double timeout);
/** Sends e (a request parser's verdict). */
int http_send_api_error(http_req *r, const api_error *e);
/** A 4xx/5xx for a scheduler status (SCHED_E_FULL → 429 with Retry-After, shutting down → 503,
 *  invalid → 400, unsupported → 404 when the model is missing). */
int http_send_sched_error(http_req *r, steno_status st, const char *msg);

/** Server-Sent Events: next(user, buf, cap) fills buf with the next bytes of the stream (blocking
 *  as long as it needs); returns the count, 0 for "nothing yet, call again", -1 at the end of the
 *  stream, -2 on error (the connection is closed). done(user) runs once when the response ends
 *  (finished, failed or the client left) and frees user. */
typedef long (*http_stream_next)(void *user, char *buf, size_t cap);
int http_send_stream(http_req *r, const char *content_type, http_stream_next next, void (*done)(void *user),
                     void *user);

/** Bytes of an event stream waiting to be handed to MHD (the stream's next() drains them). */
typedef struct sse_out {
    char *buf;
    size_t len, off;
} sse_out;
/** Appends "data: <json>\n\n" (json deleted) or raw text; -1 when out of memory. */
int sse_out_json(sse_out *o, cJSON *json);
int sse_out_raw(sse_out *o, const char *text);
/** Copies up to cap pending bytes into buf; returns the count (0: nothing pending). */
long sse_out_take(sse_out *o, char *buf, size_t cap);
void sse_out_free(sse_out *o);

/* ------------------------------------------------------------------------------------- handlers */

int route_audio(http_req *r);       /* transcriptions, translations, /inference (routes_audio.c) */
int route_chat(http_req *r);        /* chat completions (routes_text.c) */
int route_completions(http_req *r); /* completions (routes_text.c) */
int route_models(http_req *r);      /* routes_ops.c */
int route_health(http_req *r);
int route_metrics(http_req *r);
int route_page(http_req *r);
int route_stream(http_req *r);      /* GET /v1/stream, a WebSocket (routes_stream.c) */

#endif
