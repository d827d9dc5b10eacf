/* http_internal.h — what server/http.c shares with the files beside it that answer over MHD
 * (server/sse.c, server/body.c, server/auth.c, server/limits.c). */
#ifndef STENO_SERVER_HTTP_INTERNAL_H
#define STENO_SERVER_HTTP_INTERNAL_H

#include <microhttpd.h>

#include "server/http.h"

/** Queues resp (destroyed here; NULL: MHD_NO) with status, content_type when non-NULL, the CORS
 *  header and, for 405, Allow; records the status on r. Returns the MHD result. */
int http_queue_response(http_req *r, int status, struct MHD_Response *resp, const char *content_type);

/** MHD's PostProcessor callback (cls: the http_req): appends a chunk to the current form field or
 *  starts the next one (at most 256). MHD_NO on out of memory or too many fields (server/body.c). */
enum MHD_Result http_post_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                               const char *content_type, const char *transfer_encoding, const char *data,
                               uint64_t off, size_t size);

/** Non-zero when no --api-key is set or the request carries it as a Bearer token (server/auth.c). */
int http_authorized(server_ctx *S, struct MHD_Connection *c);

/** Appends n bytes of a non-form body to r->body (kept NUL-terminated). 0 on out of memory
 *  (server/body.c). */
int http_body_append(http_req *r, const char *data, size_t n);

/** The checks of the request's declared body before it is read: more than one Content-Length is a
 *  400, a length over --max-body a 413 (server/limits.c). Returns -1 when the request may go on,
 *  else the MHD result of the error answer it queued. */
int http_check_declared_body(server_ctx *S, struct MHD_Connection *c, http_req *r);

#endif
