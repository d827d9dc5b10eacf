/* api_error.h — an error answer decided away from HTTP (a request parser's verdict): the status
 * and OpenAI's error fields, sent by http_send_api_error. */
#ifndef STENO_SERVER_API_ERROR_H
#define STENO_SERVER_API_ERROR_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

typedef struct api_error {
    int status;        /* 400, 404, ... */
    const char *param; /* a literal, or NULL */
    const char *code;  /* a literal, or NULL */
    char message[512]; /* one line */
} api_error;

/** Makes msg one line: control characters (a client's newlines quoted in a message) become spaces. */
static inline void api_error_one_line(char *msg) {
    for (; *msg; msg++)
        if ((unsigned char)*msg < 0x20 || *msg == 0x7f) *msg = ' ';
}

/** A number as an error message writes it (a limit, a value): an integer in full (100000000, not
 *  %g's 1e+08), anything else with %g. Returns buf. */
static inline const char *api_num_text(double v, char *buf, size_t n) {
    if (v == floor(v) && fabs(v) < 1e19) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%g", v);
    return buf;
}

static inline void api_error_set(api_error *e, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline void api_error_set(api_error *e, int status, const char *param, const char *code, const char *fmt, ...) {
    e->status = status;
    e->param = param;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    api_error_one_line(e->message);
}

#endif
