/* routes_stream.c — GET /v1/stream: live transcription over a WebSocket (docs/SERVER.md
 * "Streaming"). The handshake is checked and answered here (101, Sec-WebSocket-Accept), then
 * MHD hands over the socket (MHD_create_response_for_upgrade) and a session thread speaks the
 * protocol: binary frames of raw PCM in, JSON text frames out, one per commit of steno_stream
 * (LocalAgreement-2, docs/STREAMING.md), {"type":"done"} after the client's {"type":"finish"}.
 * The framing is server/ws.c. The server's limits hold: the API key (checked before any route),
 * max connections (MHD), sessions at once (--parallel, then 429), an idle deadline (--body-timeout:
 * no frame for that long closes with 1008), --max-audio-seconds per session (1009), the
 * shutdown (1001, the transcription aborted); a client that leaves cancels its transcription at
 * the next window and the session is counted with status 499. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "server/http.h"
#include "server/metrics.h"
#include "server/serve_internal.h"
#include "server/ws.h"

#define WS_MAX_MESSAGE (1u << 20) /* a binary frame of PCM: 1 MiB (32 s of s16le) at most */

typedef struct ws_session {
    server_ctx *S;
    MHD_socket sock;
    struct MHD_UpgradeResponseHandle *urh;
    int f32;
    int catch_up; /* 1: all audio that arrived in one push; 0: one push per binary message */
    steno_stream_options so;
    char lang[16];
    char *extra;
    size_t extra_n;
    double t0, audio_seconds;
    char path[600];
    atomic_int claimed; /* set by whichever of on_upgrade and abandon comes first: it owns s */
} ws_session;

static atomic_int g_sessions;
static pthread_mutex_t g_vad_mu = PTHREAD_MUTEX_INITIALIZER;
static steno_vad *g_vad; /* loaded at the first session; immutable, shared (steno.h) */
static int g_vad_failed;
static char g_vad_err[512];

/* ------------------------------------------------------------------------------------- sending */

static int send_all(MHD_socket fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (poll(&pf, 1, 5000) <= 0) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

static int send_frame(MHD_socket fd, int op, const void *data, size_t n) {
    uint8_t h[10];
    const size_t hn = ws_frame_header(h, op, n);
    return send_all(fd, h, hn) == 0 && send_all(fd, data, n) == 0 ? 0 : -1;
}

static int send_json(MHD_socket fd, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return -1;
    const int rc = send_frame(fd, WS_TEXT, s, strlen(s));
    free(s);
    return rc;
}

static int send_close(MHD_socket fd, int code, const char *reason) {
    uint8_t p[125];
    size_t n = strlen(reason);
    if (n > 123) n = 123;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    memcpy(p + 2, reason, n);
    return send_frame(fd, WS_CLOSE, p, n + 2);
}

static int send_commits(MHD_socket fd, const steno_stream_commit *c, int n) {
    for (int i = 0; i < n; i++) {
        const char *t = c[i].text;
        while (*t == ' ') t++;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "commit");
        cJSON_AddNumberToObject(o, "start", c[i].start);
        cJSON_AddNumberToObject(o, "end", c[i].end);
        cJSON_AddStringToObject(o, "text", t);
        if (send_json(fd, o) != 0) return -1;
    }
    return 0;
}

static int send_error(MHD_socket fd, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "error");
    cJSON_AddStringToObject(o, "message", msg);
    return send_json(fd, o);
}

/* --------------------------------------------------------------------------------- the session */

static int client_gone(MHD_socket fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int should_abort(void *user) {
    ws_session *s = user;
    return s->S->stopping || client_gone(s->sock);
}

/* PCM bytes → float samples; a sample split across frames waits in carry. */
typedef struct pcm_in {
    uint8_t carry[4];
    size_t carry_n;
    float *v;
    size_t n, cap;
} pcm_in;

static int pcm_append(pcm_in *p, const uint8_t *b, size_t len, int f32) {
    const size_t w = f32 ? 4 : 2;
    const size_t add = (p->carry_n + len) / w;
    if (p->n + add > p->cap) {
        size_t cap = p->cap ? p->cap : 16000;
        while (cap < p->n + add) cap *= 2;
        float *v = realloc(p->v, sizeof(float) * cap);
        if (!v) return -1;
        p->v = v;
        p->cap = cap;
    }
    for (size_t i = 0; i < len; i++) {
        p->carry[p->carry_n++] = b[i];
        if (p->carry_n < w) continue;
        float x;
        if (f32) memcpy(&x, p->carry, 4); /* little-endian hosts (x86-64, aarch64) */
        else x = (float)(int16_t)(p->carry[0] | p->carry[1] << 8) / 32768.0f;
        if (x != x || x > 1e6f || x < -1e6f) x = 0; /* NaN/huge f32: silence, not poison */
        p->v[p->n++] = x;
        p->carry_n = 0;
    }
    return 0;
}

typedef enum { END_NONE = 0, END_DONE, END_GONE, END_PROTOCOL, END_ERROR, END_SHUTDOWN, END_IDLE, END_TOO_LONG } end_kind;

static const int END_STATUS[] = {0, 200, 499, 400, 500, 503, 408, 413};

/* Pushes the samples waiting in pcm and sends the commits; returns END_NONE or why to end. */
static int push_pcm(ws_session *s, steno_stream *st, pcm_in *pcm);

static void *session_main(void *arg) {
    ws_session *s = arg;
    server_ctx *S = s->S;
    const MHD_socket fd = s->sock;
    ws_reader rd = {.max_message = WS_MAX_MESSAGE};
    pcm_in pcm = {0};
    steno_stream *st = NULL;
    end_kind end = END_NONE;
    const char *why = "";
    int finishing = 0;

    pthread_mutex_lock(&g_vad_mu);
    if (!g_vad && !g_vad_failed && S->o.vad_path && steno_vad_load(S->o.vad_path, &g_vad) != STENO_OK) {
        g_vad_failed = 1;
        snprintf(g_vad_err, sizeof g_vad_err, "%s", steno_errmsg());
    }
    const steno_vad *vad = g_vad;
    pthread_mutex_unlock(&g_vad_mu);
    s->so.should_abort = should_abort;
    s->so.user = s;
    s->so.language = s->lang[0] ? s->lang : NULL;
    s->so.n_threads = S->o.n_threads;
    if (!vad && S->o.vad_path) {
        send_error(fd, g_vad_err);
        end = END_ERROR;
        why = "no VAD";
    } else if (steno_stream_new(sched_whisper(S->sched), vad, &s->so, &st) != STENO_OK) {
        send_error(fd, steno_errmsg());
        end = END_ERROR;
        why = "stream";
    }
    if (!end && s->extra_n && ws_reader_feed(&rd, s->extra, s->extra_n) != 0) end = END_ERROR;
    double last_input = sched_now();
    uint8_t buf[65536];
    while (!end) {
        if (S->stopping) {
            end = END_SHUTDOWN;
            break;
        }
        int got_bytes = 0;
        /* everything that arrived, then one push: a session behind the client catches up */
        for (;;) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            const int pr = poll(&pf, 1, got_bytes || rd.in_n ? 0 : 100);
            if (pr <= 0) break;
            const ssize_t k = recv(fd, buf, sizeof buf, 0);
            if (k == 0) {
                end = END_GONE;
                break;
            }
            if (k < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                end = END_GONE;
                break;
            }
            if (ws_reader_feed(&rd, buf, (size_t)k) != 0) {
                end = END_ERROR;
                break;
            }
            got_bytes = 1;
            if (rd.in_n > 4 * WS_MAX_MESSAGE) break;
        }
        if (got_bytes) last_input = sched_now();
        ws_event ev;
        int code = 0, r;
        while (!end && (r = ws_reader_next(&rd, &ev, &code)) != 0) {
            if (r < 0) {
                send_close(fd, code, code == WS_CLOSE_TOO_BIG ? "frame too large" : "protocol error");
                end = END_PROTOCOL;
                why = "protocol error";
                break;
            }
            if (ev.opcode == WS_BINARY) {
                if (finishing) {
                    send_close(fd, WS_CLOSE_PROTOCOL, "audio after finish");
                    end = END_PROTOCOL;
                } else if (pcm_append(&pcm, ev.data, ev.len, s->f32) != 0) {
                    end = END_ERROR;
                } else if (!s->catch_up) {
                    end = push_pcm(s, st, &pcm);
                }
            } else if (ev.opcode == WS_TEXT) {
                cJSON *j = cJSON_ParseWithLength((const char *)ev.data, ev.len);
                const cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "type") : NULL;
                if (cJSON_IsString(t) && strcmp(t->valuestring, "finish") == 0) {
                    finishing = 1;
                } else {
                    send_error(fd, "a text message must be {\"type\":\"finish\"}; audio goes in binary messages");
                    send_close(fd, WS_CLOSE_UNSUPPORTED, "unknown message");
                    end = END_PROTOCOL;
                }
                cJSON_Delete(j);
            } else if (ev.opcode == WS_PING) {
                if (send_frame(fd, WS_PONG, ev.data, ev.len) != 0) end = END_GONE;
            } else if (ev.opcode == WS_CLOSE) {
                send_close(fd, WS_CLOSE_NORMAL, "");
                end = END_GONE; /* closed before finish: the transcription is cancelled */
            }
        }
        if (end) break;
        if ((end = push_pcm(s, st, &pcm)) != END_NONE) break;
        if (finishing && rd.in_n == 0) {
            const steno_stream_commit *c = NULL;
            int nc = 0;
            const steno_status fs = steno_stream_finish(st, &c, &nc);
            if (fs == STENO_E_ABORTED) {
                end = S->stopping ? END_SHUTDOWN : END_GONE;
            } else if (fs != STENO_OK) {
                send_error(fd, steno_errmsg());
                end = END_ERROR;
            } else if (send_commits(fd, c, nc) != 0) {
                end = END_GONE;
            } else {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "type", "done");
                cJSON_AddNumberToObject(o, "duration", steno_stream_duration(st));
                send_json(fd, o);
                send_close(fd, WS_CLOSE_NORMAL, "done");
                end = END_DONE;
                /* the client's close frame, briefly, so that it sees a clean close */
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                if (poll(&pf, 1, 1000) > 0) (void)!recv(fd, buf, sizeof buf, 0);
            }
            break;
        }
        if (sched_now() - last_input > S->o.body_timeout) {
            send_close(fd, WS_CLOSE_POLICY, "idle: no data for --body-timeout seconds");
            end = END_IDLE;
        }
    }
    if (end == END_SHUTDOWN) send_close(fd, WS_CLOSE_GOING_AWAY, "server shutting down");
    const int status = END_STATUS[end];
    const double secs = sched_now() - s->t0;
    metrics_request_done(S->metrics, ROUTE_STREAM, status, secs, s->audio_seconds, 0, 0);
    if (!S->o.quiet)
        fprintf(stderr, "WS %s %d %.1fs audio %.1fms%s%s\n", s->path, status, s->audio_seconds, secs * 1000.0,
                why[0] ? " " : "", why);
    steno_stream_free(st);
    ws_reader_free(&rd);
    free(pcm.v);
    free(s->extra);
    MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
    free(s);
    atomic_fetch_sub(&g_sessions, 1);
    serve_request_end(S);
    return NULL;
}

static int push_pcm(ws_session *s, steno_stream *st, pcm_in *pcm) {
    if (pcm->n == 0) return END_NONE;
    s->audio_seconds += (double)pcm->n / STENO_SAMPLE_RATE;
    if (s->audio_seconds > s->S->o.max_audio_seconds) {
        send_close(s->sock, WS_CLOSE_TOO_BIG, "longer than --max-audio-seconds");
        return END_TOO_LONG;
    }
    const steno_stream_commit *c = NULL;
    int nc = 0;
    const steno_status ps = steno_stream_push(st, pcm->v, pcm->n, &c, &nc);
    pcm->n = 0;
    if (ps == STENO_E_ABORTED) return s->S->stopping ? END_SHUTDOWN : END_GONE;
    if (ps != STENO_OK) {
        send_error(s->sock, steno_errmsg());
        return END_ERROR;
    }
    return send_commits(s->sock, c, nc) != 0 ? END_GONE : END_NONE;
}

static void on_upgrade(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
    ws_session *s = cls;
    if (atomic_exchange(&s->claimed, 1)) { /* abandoned already (cannot happen after a sent 101) */
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    s->sock = sock;
    s->urh = urh;
    if (extra_in_size) {
        s->extra = malloc(extra_in_size);
        if (s->extra) {
            memcpy(s->extra, extra_in, extra_in_size);
            s->extra_n = extra_in_size;
        }
    }
    serve_request_begin(s->S); /* the shutdown waits for the session */
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, session_main, s) != 0) {
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        atomic_fetch_sub(&g_sessions, 1);
        serve_request_end(s->S);
        free(s->extra);
        free(s);
    }
    pthread_attr_destroy(&attr);
}

/* The 101 never reached the client: no session will run. */
static void abandon(void *arg) {
    ws_session *s = arg;
    if (atomic_exchange(&s->claimed, 1)) return;
    atomic_fetch_sub(&g_sessions, 1);
    free(s);
}

/* ------------------------------------------------------------------------------- the handshake */

static const char *arg(const http_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static int has_token(const char *h, const char *token) {
    const size_t n = strlen(token);
    for (const char *p = h; p && *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (strncasecmp(p, token, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ' || p[n] == '\t')) return 1;
        p = strchr(p, ',');
    }
    return 0;
}

static int int_arg(http_req *r, const char *name, int lo, int hi, int *out) {
    const char *v = arg(r, name);
    if (!v) return 0;
    char *e;
    errno = 0;
    const long x = strtol(v, &e, 10);
    if (!*v || *e || errno || x < lo || x > hi) return -1;
    *out = (int)x;
    return 0;
}

int route_stream(http_req *r) {
    server_ctx *S = r->srv;
    if (!sched_whisper(S->sched))
        return http_send_error(r, 404, NULL, "model", "model_not_found",
                               "no speech model is loaded (start steno serve with --whisper-model)");
    const char *up = http_header(r, "Upgrade"), *conn = http_header(r, "Connection");
    const char *ver = http_header(r, "Sec-WebSocket-Version"), *key = http_header(r, "Sec-WebSocket-Key");
    if (!up || !has_token(up, "websocket"))
        return http_send_error(r, 426, NULL, NULL, "upgrade_required",
                               "/v1/stream is a WebSocket endpoint (send Upgrade: websocket)");
    if (!conn || !has_token(conn, "upgrade"))
        return http_send_error(r, 400, NULL, NULL, "invalid_handshake", "Connection: Upgrade is missing");
    if (!ver || strcmp(ver, "13") != 0)
        return http_send_error(r, 426, NULL, NULL, "unsupported_version",
                               "Sec-WebSocket-Version must be 13 (got %s)", ver ? ver : "none");
    char accept[29];
    if (!key || ws_accept_key(key, accept) != 0)
        return http_send_error(r, 400, NULL, NULL, "invalid_handshake",
                               "Sec-WebSocket-Key must be the base64 of 16 bytes");
    ws_session s = {.S = S, .so = steno_stream_default_options(), .t0 = sched_now()};
    int rate = STENO_SAMPLE_RATE;
    const char *fmt = arg(r, "format");
    if (int_arg(r, "rate", 1, 1000000, &rate) != 0 || rate != STENO_SAMPLE_RATE)
        return http_send_error(r, 400, NULL, "rate", "invalid_rate", "rate must be 16000 (the only rate accepted)");
    if (fmt && strcmp(fmt, "s16le") != 0 && strcmp(fmt, "f32le") != 0)
        return http_send_error(r, 400, NULL, "format", "invalid_format", "format must be s16le or f32le");
    s.f32 = fmt && strcmp(fmt, "f32le") == 0;
    s.catch_up = 1;
    if (int_arg(r, "catch_up", 0, 1, &s.catch_up) != 0)
        return http_send_error(r, 400, NULL, "catch_up", "invalid_parameter", "catch_up must be 0 or 1");
    if (int_arg(r, "step_ms", 100, 30000, &s.so.step_ms) != 0 ||
        int_arg(r, "length_ms", 1000, 30000, &s.so.length_ms) != 0 ||
        int_arg(r, "keep_ms", 0, 5000, &s.so.keep_ms) != 0 ||
        int_arg(r, "vad_silence_ms", 100, 10000, &s.so.vad_silence_ms) != 0)
        return http_send_error(r, 400, NULL, NULL, "invalid_parameter",
                               "step_ms (100..30000), length_ms (1000..30000), keep_ms (0..5000) and "
                               "vad_silence_ms (100..10000) are integers in their ranges");
    const char *lang = arg(r, "language");
    if (lang) {
        const char *code = steno_language_code(lang);
        if (!code || !steno_whisper_has_language(sched_whisper(S->sched), code))
            return http_send_error(r, 400, NULL, "language", "invalid_language", "unknown language '%s'", lang);
        snprintf(s.lang, sizeof s.lang, "%s", code);
    }
    const int limit = S->o.n_parallel > 0 ? S->o.n_parallel : 1;
    if (atomic_fetch_add(&g_sessions, 1) >= limit) {
        atomic_fetch_sub(&g_sessions, 1);
        return http_send_error(r, 429, NULL, NULL, "too_many_streams",
                               "%d stream(s) already running (--parallel); retry later", limit);
    }
    snprintf(s.path, sizeof s.path, "%s", r->path);
    ws_session *heap = malloc(sizeof *heap);
    struct MHD_Response *resp = heap ? MHD_create_response_for_upgrade(on_upgrade, heap) : NULL;
    if (!resp) {
        free(heap);
        atomic_fetch_sub(&g_sessions, 1);
        return http_send_error(r, 500, NULL, NULL, "internal_error", "out of memory");
    }
    *heap = s;
    atomic_init(&heap->claimed, 0);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
    MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
    r->status = 101;
    const enum MHD_Result ok = MHD_queue_response(r->conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
    MHD_destroy_response(resp);
    if (ok != MHD_YES) {
        r->status = 0;
        atomic_fetch_sub(&g_sessions, 1);
        free(heap);
        return ok;
    }
    r->abandon = abandon;
    r->abandon_arg = heap;
    return ok;
}
