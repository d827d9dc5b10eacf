/* error.h — thread-local error messages behind steno_errmsg().
 * Every failing library function calls steno_fail() once, at the place that knows the input and the
 * reason, and returns its status; callers above it pass the status up without overwriting the
 * message. */
#ifndef STENO_CORE_ERROR_H
#define STENO_CORE_ERROR_H

#include "steno.h"

/** Records "fmt..." as the calling thread's last error and returns st (for `return steno_fail(...)`). */
steno_status steno_fail(steno_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Clears the calling thread's last error. */
void steno_clear_error(void);

/** Records "fmt..." as the calling thread's warning (steno_warnmsg): the call succeeds, with a
 *  caveat the caller should show (a truncated file decoded up to its damage). */
void steno_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void steno_clear_warning(void);

#endif
