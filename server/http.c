/* http.c — one HTTP request's life under libmicrohttpd: routing, the order of the checks made
 * before the body is read (authentication: server/auth.c; the declared length: server/limits.c),
 * the body as it arrives (server/body.c) counted against --max-body, dispatch to a handler, and the
 * responses (buffers, OpenAI error bodies; SSE streams are in server/sse.c). See http.h. */
#include "server/http.h"

#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server/metrics.h"
#include "server/http_internal.h"
#include "server/serve_internal.h"

/* ------------------------------------------------------------------------------------ routing */

typedef struct route_def {
    const char *method, *path;
    route_id id;
    int body; /* 0 none, 1 form (multipart/urlencoded), 2 JSON */
} route_def;

static const route_def g_routes[] = {
    {"POST", "/v1/audio/transcriptions", ROUTE_TRANSCRIPTIONS, 1},
    {"POST", "/v1/audio/translations", ROUTE_TRANSLATIONS, 1},
    {"POST", "/inference", ROUTE_INFERENCE, 1},
    {"POST", "/v1/chat/completions", ROUTE_CHAT, 2},
    {"POST", "/v1/completions", ROUTE_COMPLETIONS, 2},
    {"GET", "/v1/models", ROUTE_MODELS, 0},
    {"GET", "/health", ROUTE_HEALTH, 0},
    {"GET", "/metrics", ROUTE_METRICS, 0},
    {"GET", "/", ROUTE_PAGE, 0},
    {"GET", "/index.html", ROUTE_PAGE, 0},
    {"GET", "/v1/stream", ROUTE_STREAM, 0},
};

const char *route_name(route_id id) {
    static const char *const names[ROUTE_COUNT] = {
        "other", "/v1/audio/transcriptions", "/v1/audio/translations", "/inference", "/v1/chat/completions",
        "/v1/completions", "/v1/models", "/health", "/metrics", "/", "/v1/stream"};
    return id >= 0 && id < ROUTE_COUNT ? names[id] : "other";
}

/* ------------------------------------------------------------------------------ request helpers */

const form_field *http_field(const http_req *r, const char *name) {
    for (int i = 0; i < r->n_fields; i++)
        if (strcmp(r->fields[i].name, name) == 0) return &r->fields[i];
    return NULL;
}

int http_fields(const http_req *r, const char *name, const form_field **out, int cap) {
    const size_t nl = strlen(name);
    int n = 0;
    for (int i = 0; i < r->n_fields && n < cap; i++) {
        const char *f = r->fields[i].name;
        if (strcmp(f, name) == 0 || (strncmp(f, name, nl) == 0 && strcmp(f + nl, "[]") == 0)) out[n++] = &r->fields[i];
    }
    return n;
}

const char *http_header(const http_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

int http_client_gone(const http_req *r) {
    if (r->fd < 0) return 0;
    struct pollfd p = {.fd = r->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int http_wait_job(http_req *r, sched_job *job) {
    int done = 0, have = 0;
    while (!done) {
        have = sched_job_wait(job, have, 100, &done);
        if (!done && http_client_gone(r)) {
            sched_job_cancel(job);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ responses */

int http_queue_response(http_req *r, int status, struct MHD_Response *resp, const char *content_type) {
    if (!resp) return MHD_NO;
    if (content_type) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    /* browser apps on other origins may call the API (as llama-server and whisper-server allow);
     * the API key, when set, still guards it */
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    if (status == 405 && r->allow[0]) MHD_add_response_header(resp, "Allow", r->allow);
    r->status = status;
    const enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ok;
}

int http_send(http_req *r, int status, const char *content_type, const char *body, size_t len) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    r->bytes_out = len;
    return http_queue_response(r, status, resp, content_type);
}

int http_send_json(http_req *r, int status, cJSON *json) {
    char *s = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!s) return http_send(r, 500, "application/json", "{\"error\":{\"message\":\"out of memory\"}}", 37);
    const int rc = http_send(r, status, "application/json", s, strlen(s));
    free(s);
    return rc;
}

static const char *default_type(int status) {
    if (status == 401) return "authentication_error";
    if (status == 404) return "not_found_error";
    if (status == 413) return "invalid_request_error";
    if (status == 429) return "rate_limit_error";
    if (status >= 500) return "server_error";
    return "invalid_request_error";
}

cJSON *http_error_json(int status, const char *type, const char *param, const char *code, const char *msg) {
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", type ? type : default_type(status));
    if (param) cJSON_AddStringToObject(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    if (code) cJSON_AddStringToObject(e, "code", code);
    else cJSON_AddNullToObject(e, "code");
    return root;
}

int http_send_error(http_req *r, int status, const char *type, const char *param, const char *code, const char *fmt,
                    ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    api_error_one_line(msg);
    if (r->defer) { /* answered once the body is in (the strings given here are literals) */
        if (!r->err_status) {
            r->err_status = status;
            r->err_type = type;
            r->err_param = param;
            r->err_code = code;
            snprintf(r->err_msg, sizeof r->err_msg, "%.511s", msg);
        }
        return MHD_YES;
    }
    cJSON *j = http_error_json(status, type, param, code, msg);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    r->bytes_out = strlen(s);
    if (resp && status == 429) MHD_add_response_header(resp, "Retry-After", "1");
    if (resp && status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (resp && status == 426) { /* RFC 7231 6.5.15 (the protocol to switch to), RFC 6455 4.4 (the version) */
        MHD_add_response_header(resp, "Upgrade", "websocket");
        MHD_add_response_header(resp, "Sec-WebSocket-Version", "13");
    }
    return http_queue_response(r, status, resp, "application/json");
}

static int job_error_status(const sched_outcome *o) {
    if (o->deadline_passed) return 504;
    if (o->status == STENO_E_INVALID_ARG || o->status == STENO_E_UNSUPPORTED) return 400;
    return o->cancelled ? 503 : 500;
}

static void job_error_message(const sched_outcome *o, const char *what, double timeout, char *msg, size_t cap) {
    if (o->deadline_passed) snprintf(msg, cap, "the %s did not finish within %g s (--request-timeout)", what, timeout);
    else snprintf(msg, cap, "%s", o->errmsg[0] ? o->errmsg : "failed");
}

cJSON *http_job_error_json(const sched_outcome *o, const char *what, double timeout) {
    char msg[600];
    job_error_message(o, what, timeout, msg, sizeof msg);
    return http_error_json(job_error_status(o), NULL, NULL, o->deadline_passed ? "deadline_exceeded" : NULL, msg);
}

int http_send_job_error(http_req *r, const sched_outcome *o, const char *what) {
    char msg[600];
    job_error_message(o, what, r->srv->o.request_timeout, msg, sizeof msg);
    return http_send_error(r, job_error_status(o), NULL, NULL, o->deadline_passed ? "deadline_exceeded" : NULL, "%s",
                           msg);
}

int http_send_api_error(http_req *r, const api_error *e) {
    return http_send_error(r, e->status, NULL, e->param, e->code, "%s", e->message);
}

int http_send_sched_error(http_req *r, steno_status st, const char *msg) {
    if (st == SCHED_E_FULL) return http_send_error(r, 429, NULL, NULL, "queue_full", "server busy: %s", msg);
    if (st == SCHED_E_TOO_BIG) return http_send_error(r, 400, NULL, "max_tokens", "kv_budget_exceeded", "%s", msg);
    if (st == STENO_E_UNSUPPORTED && r->srv->stopping)
        return http_send_error(r, 503, NULL, NULL, "shutting_down", "%s", msg);
    if (st == STENO_E_UNSUPPORTED) return http_send_error(r, 404, NULL, "model", "model_not_found", "%s", msg);
    if (st == STENO_E_INVALID_ARG) return http_send_error(r, 400, NULL, NULL, NULL, "%s", msg);
    if (st == STENO_E_NOMEM) return http_send_error(r, 503, NULL, NULL, "out_of_memory", "%s", msg);
    return http_send_error(r, 500, NULL, NULL, NULL, "%s", msg);
}

/* ----------------------------------------------------------------------------------------- body */

static void req_set_error(http_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void req_set_error(http_req *r, int status, const char *code, const char *fmt, ...) {
    if (r->err_status) return;
    r->err_status = status;
    r->err_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof r->err_msg, fmt, ap);
    va_end(ap);
}

static void req_free(http_req *r) {
    if (r->pp) MHD_destroy_post_processor(r->pp);
    for (int i = 0; i < r->n_fields; i++) {
        free(r->fields[i].name);
        free(r->fields[i].filename);
        free(r->fields[i].data);
    }
    free(r->fields);
    free(r->body);
    free(r);
}

/* A client's bytes as they may appear in the log: anything outside printable ASCII (a newline
 * that would forge a log line, a terminal escape) is written as %XX, as in a URL. */
static const char *log_safe(const char *s, char *out, size_t cap) {
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c > 0x20 && c < 0x7f) out[o++] = (char)c;
        else o += (size_t)snprintf(out + o, cap - o, "%%%02X", c);
    }
    out[o] = '\0';
    return out;
}

/* Called by MHD when the response is over (sent, failed or the client left): the log line and
 * the metrics. */
void http_request_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    server_ctx *S = cls;
    http_req *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    const double ms = (sched_now() - r->t0) * 1000.0;
    const int status = r->status ? r->status : 499; /* nginx's "client closed request" */
    /* a stream cut short keeps its 200 in the log, with the bytes actually sent */
    metrics_request_done(S->metrics, r->route, status, ms / 1000.0, r->audio_seconds, r->prompt_tokens,
                         r->completion_tokens);
    char m[64], p[1600];
    if (!S->o.quiet)
        fprintf(stderr, "%s %s %d %llu %.1fms%s\n", log_safe(r->method, m, sizeof m), log_safe(r->path, p, sizeof p),
                status, (unsigned long long)r->bytes_out, ms,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    if (status == 101 && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && r->abandon) r->abandon(r->abandon_arg);
    /* an upgraded connection (101, /v1/stream) belongs to its session now: no header deadline */
    if (status == 101) serve_connection_busy(c);
    else serve_connection_idle(c);
    serve_request_end(S);
    req_free(r);
}

static int dispatch(http_req *r) {
    server_ctx *S = r->srv;
    if (r->err_status)
        return http_send_error(r, r->err_status, r->err_type, r->err_param, r->err_code, "%s", r->err_msg);
    if (r->route != ROUTE_HEALTH && r->route != ROUTE_PAGE && r->route != ROUTE_METRICS && !S->ready)
        return http_send_error(r, 503, NULL, NULL, "loading", "the models are still loading; retry shortly");
    switch (r->route) {
    case ROUTE_TRANSCRIPTIONS:
    case ROUTE_TRANSLATIONS:
    case ROUTE_INFERENCE: return route_audio(r);
    case ROUTE_CHAT: return route_chat(r);
    case ROUTE_COMPLETIONS: return route_completions(r);
    case ROUTE_MODELS: return route_models(r);
    case ROUTE_HEALTH: return route_health(r);
    case ROUTE_METRICS: return route_metrics(r);
    case ROUTE_PAGE: return route_page(r);
    case ROUTE_STREAM: return route_stream(r);
    default: return http_send_error(r, 404, NULL, NULL, "not_found", "no such endpoint: %s %s", r->method, r->path);
    }
}

/* First call: the headers are in. Decides the route and everything that can be refused before
 * the body is read (auth, method, declared length, content type). */
static int request_begin(server_ctx *S, struct MHD_Connection *c, const char *url, const char *method,
                         http_req *r) {
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->path, sizeof r->path, "%s", url);
    const route_def *def = NULL;
    int path_known = 0;
    for (size_t i = 0; i < sizeof g_routes / sizeof g_routes[0]; i++) {
        if (strcmp(url, g_routes[i].path) != 0) continue;
        path_known = 1;
        if (strcmp(method, g_routes[i].method) == 0) def = &g_routes[i];
    }
    if (!def && strcmp(method, "HEAD") == 0)
        for (size_t i = 0; i < sizeof g_routes / sizeof g_routes[0] && !def; i++)
            if (strcmp(url, g_routes[i].path) == 0 && strcmp(g_routes[i].method, "GET") == 0) def = &g_routes[i];
    if (def) r->route = def->id;
    if (!def && path_known && strcmp(method, "OPTIONS") == 0) { /* a CORS preflight */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (resp) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "86400");
        }
        return http_queue_response(r, 204, resp, NULL);
    }
    for (size_t i = 0; i < sizeof g_routes / sizeof g_routes[0]; i++)
        if (strcmp(url, g_routes[i].path) == 0) {
            snprintf(r->allow, sizeof r->allow, "%s, OPTIONS%s", g_routes[i].method,
                     strcmp(g_routes[i].method, "GET") == 0 ? ", HEAD" : "");
            break;
        }
    /* the page holds no secret and asks for the key itself; a browser cannot send one to open it */
    if (def && def->id != ROUTE_HEALTH && def->id != ROUTE_PAGE && !http_authorized(S, c))
        return http_send_error(r, 401, NULL, NULL, "invalid_api_key",
                               "missing or wrong API key (send Authorization: Bearer KEY)");
    if (!def && path_known)
        return http_send_error(r, 405, NULL, NULL, "method_not_allowed", "%s is not allowed on %s", method, url);
    if (!def) return http_send_error(r, 404, NULL, NULL, "not_found", "no such endpoint: %s %s", method, url);
    const int refused = http_check_declared_body(S, c, r);
    if (refused >= 0) return refused;
    if (def->body == 1) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!ct || (strncasecmp(ct, "multipart/form-data", 19) != 0 &&
                    strncasecmp(ct, "application/x-www-form-urlencoded", 33) != 0))
            return http_send_error(r, 400, NULL, "file", "invalid_content_type",
                                   "%s needs a multipart/form-data body (got %s)", url, ct ? ct : "no Content-Type");
        r->pp = MHD_create_post_processor(c, 65536, http_post_iter, r);
        if (!r->pp)
            return http_send_error(r, 400, NULL, "file", "invalid_multipart",
                                   "malformed multipart/form-data: no boundary in the Content-Type");
    }
    return MHD_YES;
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    server_ctx *S = cls;
    http_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->srv = S;
        r->conn = c;
        r->t0 = sched_now();
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->fd = ci ? ci->connect_fd : -1;
        *con_cls = r;
        serve_request_begin(S);
        serve_connection_body(c);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const int has_body = (cl && strtoull(cl, NULL, 10) > 0) ||
                             MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        r->defer = has_body && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
        const int rc = request_begin(S, c, url, method, r);
        return rc == MHD_YES ? MHD_YES : (r->status ? MHD_YES : MHD_NO);
    }
    if (r->status) { /* already answered (refused before the body): drop what still comes */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        const size_t n = *upload_size;
        *upload_size = 0;
        r->body_seen += n;
        if (r->body_seen > S->o.max_body_bytes)
            req_set_error(r, 413, "request_too_large", "the request body is larger than the limit of %zu bytes",
                          S->o.max_body_bytes);
        /* a refused body is read and dropped so the client can read the answer, up to a bound */
        if (r->err_status) return r->body_seen / 4 > S->o.max_body_bytes ? MHD_NO : MHD_YES;
        if (r->pp) {
            if (!r->form_broken && MHD_post_process(r->pp, upload_data, n) != MHD_YES) {
                r->form_broken = 1;
                req_set_error(r, 400, "invalid_multipart", "malformed multipart/form-data body");
            }
        } else if (!http_body_append(r, upload_data, n)) {
            return MHD_NO;
        }
        return MHD_YES;
    }
    /* the whole request is in */
    r->defer = 0;
    serve_connection_busy(c);
    if (r->pp) { /* a body that ends before its closing boundary is malformed too */
        if (MHD_destroy_post_processor(r->pp) != MHD_YES)
            req_set_error(r, 400, "invalid_multipart", "malformed multipart/form-data body (truncated)");
        r->pp = NULL;
    }
    if (!r->body) r->body = calloc(1, 1);
    if (!r->body) return MHD_NO;
    return dispatch(r) == MHD_YES ? MHD_YES : MHD_NO;
}
