/* sse.c — responses streamed as they are produced: the callback response under Server-Sent Events
 * (http_send_stream) and the sse_out buffer the streaming routes fill (server/http.h). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "server/http.h"
#include "server/http_internal.h"

/* SSE through a callback response: MHD calls reader() on the connection's thread, which may block
 * in next(); the response is chunked (no length). */
typedef struct stream_ctx {
    http_req *r;
    http_stream_next next;
    void (*done)(void *);
    void *user;
} stream_ctx;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    stream_ctx *s = cls;
    for (;;) {
        const long n = s->next(s->user, buf, max);
        if (n > 0) {
            s->r->bytes_out += (uint64_t)n;
            return n;
        }
        if (n == -1) return MHD_CONTENT_READER_END_OF_STREAM;
        if (n < -1) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (http_client_gone(s->r)) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void stream_free(void *cls) {
    stream_ctx *s = cls;
    if (s->done) s->done(s->user);
    free(s);
}

int http_send_stream(http_req *r, const char *content_type, http_stream_next next, void (*done)(void *user),
                     void *user) {
    stream_ctx *s = malloc(sizeof *s);
    if (!s) {
        done(user);
        return http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
    }
    *s = (stream_ctx){r, next, done, user};
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    r->streaming = 1;
    return http_queue_response(r, 200, resp, content_type);
}

int sse_out_raw(sse_out *o, const char *text) {
    const size_t n = strlen(text);
    if (o->off == o->len) o->off = o->len = 0;
    char *b = realloc(o->buf, o->len + n + 1);
    if (!b) return -1;
    memcpy(b + o->len, text, n + 1);
    o->buf = b;
    o->len += n;
    return 0;
}

int sse_out_json(sse_out *o, cJSON *json) {
    char *js = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!js) return -1;
    const int rc = sse_out_raw(o, "data: ") || sse_out_raw(o, js) || sse_out_raw(o, "\n\n") ? -1 : 0;
    free(js);
    return rc;
}

long sse_out_take(sse_out *o, char *buf, size_t cap) {
    size_t n = o->len - o->off;
    if (n == 0) return 0;
    if (n > cap) n = cap;
    memcpy(buf, o->buf + o->off, n);
    o->off += n;
    return (long)n;
}

void sse_out_free(sse_out *o) {
    free(o->buf);
    memset(o, 0, sizeof *o);
}
