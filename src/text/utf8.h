/* utf8.h — UTF-8 helpers for text built from byte-level BPE tokens. */
#ifndef STENO_TEXT_UTF8_H
#define STENO_TEXT_UTF8_H

#include <stddef.h>

/** Returns a malloc'd copy of bytes [n] where every invalid UTF-8 sequence is replaced by U+FFFD,
 *  like Python's bytes.decode("utf-8", errors="replace") (one U+FFFD per maximal invalid
 *  subpart). NULL on allocation failure. */
char *steno_utf8_sanitize(const char *bytes, size_t n);

/** The byte offset of the first invalid UTF-8 sequence in bytes[n] (Unicode 3.9 well-formedness: no
 *  overlongs, surrogates or code points past U+10FFFF), or n when all of it is valid. */
size_t steno_utf8_invalid_at(const char *bytes, size_t n);

/** Pointer to the first non-whitespace byte of s and, through *len, the length without trailing
 *  whitespace (Python's str.strip() for ASCII whitespace). */
const char *steno_strip(const char *s, size_t *len);

#endif
