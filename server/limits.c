/* limits.c — the limits a request's headers are held to before its body is read: one
 * Content-Length at most (RFC 9112 6.3), and no more than --max-body bytes declared. The bytes
 * that do arrive are counted against the same limit as they come (server/http.c). */
#include <microhttpd.h>
#include <stdlib.h>
#include <strings.h>

#include "server/http.h"
#include "server/http_internal.h"
#include "server/serve_internal.h"

static enum MHD_Result count_content_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) ++*(int *)cls;
    return MHD_YES;
}

int http_check_declared_body(server_ctx *S, struct MHD_Connection *c, http_req *r) {
    int n_cl = 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_content_length, &n_cl);
    if (n_cl > 1) /* RFC 9112 6.3: differing lengths are a framing error, a smuggling risk behind proxies */
        return http_send_error(r, 400, NULL, NULL, "invalid_request", "more than one Content-Length header");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > S->o.max_body_bytes)
        return http_send_error(r, 413, NULL, NULL, "request_too_large",
                               "the request body (%s bytes) is larger than the limit of %zu bytes (--max-body)", cl,
                               S->o.max_body_bytes);
    return -1;
}
