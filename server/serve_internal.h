/* serve_internal.h — what http.c and serve.c share: the MHD callbacks, the in-flight count and
 * the connection watch (the header/body deadlines that MHD's idle timeout cannot express). */
#ifndef STENO_SERVER_SERVE_INTERNAL_H
#define STENO_SERVER_SERVE_INTERNAL_H

#include <microhttpd.h>

#include "server/http.h"

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload_data, size_t *upload_size, void **con_cls);
void http_request_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
cJSON *http_error_json(int status, const char *type, const char *param, const char *code, const char *msg);
const char *route_name(route_id id);

/* requests in flight (graceful shutdown waits for 0) */
void serve_request_begin(server_ctx *S);
void serve_request_end(server_ctx *S);
int serve_in_flight(void);

/* the connection watch: a connection is cut (shutdown(2)) when its request line and headers take
 * longer than header_timeout, or its body longer than body_timeout; while a request is processed
 * no deadline applies; once answered, an idle keep-alive connection has header_timeout again */
void serve_connection_body(struct MHD_Connection *c);
void serve_connection_busy(struct MHD_Connection *c);
void serve_connection_idle(struct MHD_Connection *c);

#endif
