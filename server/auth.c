/* auth.c — the API key check (--api-key): "Authorization: Bearer <key>", compared in constant time. */
#include <microhttpd.h>
#include <string.h>
#include <strings.h>

#include "server/http_internal.h"
#include "server/serve_internal.h"

int http_authorized(server_ctx *S, struct MHD_Connection *c) {
    if (!S->o.api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
    h += 7;
    while (*h == ' ') h++;
    /* constant-time comparison of equal-length keys */
    const size_t n = strlen(S->o.api_key);
    if (strlen(h) != n) return 0;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(h[i] ^ S->o.api_key[i]);
    return diff == 0;
}
