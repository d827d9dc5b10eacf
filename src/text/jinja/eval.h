/* eval.h — the evaluator's state and the calls between its files: statements (eval.c),
 * expressions (eval_expr.c), filters (filters.c), tests and globals (builtins.c), methods of str,
 * dict and list (methods.c). Internal to src/text/jinja/. */
#ifndef STENO_TEXT_JINJA_EVAL_H
#define STENO_TEXT_JINJA_EVAL_H

#include "text/jinja/ast.h"
#include "text/jinja/jinja.h"

typedef struct jframe {
    struct jframe *parent;
    jv *vars; /* JV_DICT */
} jframe;

typedef struct {
    jarena a;
    jfail *f;
    steno_jinja_opts o;
    jbuf *out;
    jv *ctx; /* the context's variables (JV_DICT) */
    int depth;
    int64_t iters;
} jinterp;

/* Arguments of a call, filter, test or method. */
typedef struct {
    jv **pos;
    int npos;
    const char **kn;
    jv **kv;
    int nkw;
} jargs;

/** The argument at position i or named name (NULL when given neither way). */
jv *jarg(const jargs *a, int i, const char *name);

_Noreturn void je_fail(jinterp *I, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
_Noreturn void je_unsupported(jinterp *I, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** jinja2's UndefinedError for an undefined value used where it may not be. */
_Noreturn void je_undefined(jinterp *I, int line, const jv *u);
/** Raises the error a lazy generator kept (jv.poison) when something consumes it. */
void je_check_poison(jinterp *I, const jv *v);
void je_tick(jinterp *I, int line); /* one loop iteration or call against max_iterations */

jv *je_expr(jinterp *I, const jnode *n, jframe *F);
jv *je_lookup(jinterp *I, jframe *F, const char *name);
void je_body(jinterp *I, const jnode *body, jframe *F, int *ctl);
jv *je_call(jinterp *I, jv *fn, const jargs *args, int line);
jv *je_getattr(jinterp *I, jv *obj, const char *name, int line);
jv *je_getitem(jinterp *I, jv *obj, jv *key, int line);
/** The items a for loop over v visits (a list; dict: keys; str: characters; undefined: none). */
jv *je_iter(jinterp *I, jv *v, int line);
jv *je_render_macro(jinterp *I, jv *fn, const jargs *args, int line);

jv *je_filter(jinterp *I, const char *name, jv *subj, const jargs *args, int line);
int je_test(jinterp *I, const char *name, jv *subj, const jargs *args, int line);
int je_has_test(const char *name);
jv *je_global(jinterp *I, const char *name); /* NULL when no such global */
jv *je_call_global(jinterp *I, const char *name, const jargs *args, int line);
/** A method of a str, dict or list (bound, JF_METHOD), or NULL when obj has no such attribute. */
jv *je_method_get(jinterp *I, jv *obj, const char *name);
jv *je_method_call(jinterp *I, jv *self, const char *name, const jargs *args, int line);

#endif
