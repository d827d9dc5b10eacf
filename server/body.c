/* body.c — a request body as it arrives: a JSON body collected whole, a form body's fields as
 * MHD's PostProcessor hands them over (multipart/form-data and urlencoded), each field's bytes
 * collected whole, repeated names kept apart. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "server/http.h"
#include "server/http_internal.h"

enum MHD_Result http_post_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                      const char *content_type, const char *transfer_encoding, const char *data,
                                      uint64_t off, size_t size) {
    http_req *r = cls;
    form_field *f = r->n_fields ? &r->fields[r->n_fields - 1] : NULL;
    /* MHD calls once per chunk (the first may be empty); a new part starts at offset 0 with
     * another name, or with the same name once the previous part has data (repeated fields) */
    if (!f || strcmp(f->name, key ? key : "") != 0 || (off == 0 && f->len > 0)) {
        if (r->n_fields == 256) return MHD_NO;
        if (r->n_fields == r->cap_fields) {
            const int cap = r->cap_fields ? 2 * r->cap_fields : 8;
            form_field *nf = realloc(r->fields, sizeof *nf * (size_t)cap);
            if (!nf) return MHD_NO;
            r->fields = nf;
            r->cap_fields = cap;
        }
        f = &r->fields[r->n_fields++];
        memset(f, 0, sizeof *f);
        f->name = strdup(key ? key : "");
        f->filename = filename ? strdup(filename) : NULL;
        f->data = malloc(1);
        if (!f->name || !f->data) return MHD_NO;
        f->data[0] = '\0';
        f->cap = 1;
    }
    if (size) {
        if (f->len + size + 1 > f->cap) {
            size_t cap = f->cap;
            while (cap < f->len + size + 1) cap *= 2;
            char *d = realloc(f->data, cap);
            if (!d) return MHD_NO;
            f->data = d;
            f->cap = cap;
        }
        memcpy(f->data + f->len, data, size);
        f->len += size;
        f->data[f->len] = '\0';
    }
    return MHD_YES;
}

int http_body_append(http_req *r, const char *data, size_t n) {
    if (r->body_len + n + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + n + 1) cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b) return 0;
        r->body = b;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return 1;
}
