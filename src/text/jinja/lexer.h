/* lexer.h — a chat template's source as tokens, with jinja2's lexer rules under transformers'
 * settings (trim_blocks, lstrip_blocks, keep_trailing_newline off, newlines normalized to \n).
 * Internal to src/text/jinja/. */
#ifndef STENO_TEXT_JINJA_LEXER_H
#define STENO_TEXT_JINJA_LEXER_H

#include "text/jinja/value.h"

typedef enum {
    JT_EOF,
    JT_TEXT,        /* template data between tags (s, n) */
    JT_VAR_BEGIN,   /* {{ */
    JT_VAR_END,     /* }} */
    JT_BLOCK_BEGIN, /* {% */
    JT_BLOCK_END,   /* %} */
    JT_NAME,
    JT_STRING, /* unescaped value in (s, n) */
    JT_INT,
    JT_FLOAT,
    JT_OP /* s: "+", "//", "==", ... */
} jtok_type;

typedef struct {
    int type, line;
    const char *s;
    size_t n;
    int64_t i;
    double f;
} jtok;

/** Tokenizes src[len] into an array in arena a (*out, *n_out; the last token is JT_EOF).
 *  Errors (unterminated tag, comment or string, bad character) fail through a->f with the line. */
void jlex(jarena *a, const char *src, size_t len, jtok **out, size_t *n_out);

#endif
