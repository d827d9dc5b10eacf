/* parser.h — the parser's state and helpers shared by parser.c (statements) and parse_expr.c
 * (expressions), after jinja2/parser.py. Internal to src/text/jinja/. */
#ifndef STENO_TEXT_JINJA_PARSER_H
#define STENO_TEXT_JINJA_PARSER_H

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

typedef struct {
    jarena *a;
    const jtok *t;
    size_t n, i;
    int depth;     /* nesting, bounded: a hostile template cannot overflow the stack */
    int loop_depth;
} jparser;

const jtok *jp_cur(jparser *P);
const jtok *jp_peek(jparser *P, int k);
const jtok *jp_next(jparser *P); /* returns the token it consumed */
int jp_is_op(const jtok *t, const char *op);
int jp_is_name(const jtok *t, const char *name);
_Noreturn void jp_fail(jparser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jp_expect_op(jparser *P, const char *op);
const char *jp_expect_name(jparser *P); /* a NUL-terminated copy */
jnode *jp_node(jparser *P, int type, int line);

/* Expressions (parse_expr.c). end_rules: NULL-terminated names that also end a tuple. */
jnode *jp_expression(jparser *P, int with_condexpr);
jnode *jp_tuple(jparser *P, int simplified, int with_condexpr, const char *const *end_rules, int explicit_parens);
jnode *jp_primary(jparser *P);
jnode *jp_filter(jparser *P, jnode *subject, int start_inline);

#endif
