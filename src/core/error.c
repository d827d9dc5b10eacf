#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char g_msg[1024];
static _Thread_local char g_warn[1024];

void steno_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_warn, sizeof g_warn, fmt, ap);
    va_end(ap);
}

void steno_clear_warning(void) { g_warn[0] = '\0'; }

const char *steno_warnmsg(void) { return g_warn; }

steno_status steno_fail(steno_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return st;
}

void steno_clear_error(void) { g_msg[0] = '\0'; }

const char *steno_errmsg(void) { return g_msg; }
