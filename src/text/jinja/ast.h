/* ast.h — a compiled chat template: the tree the parser builds (parser.c, parse_expr.c) and the
 * evaluator walks (eval.c, eval_expr.c). One node type for every construct; the fields each type
 * uses are listed beside it. Internal to src/text/jinja/. */
#ifndef STENO_TEXT_JINJA_AST_H
#define STENO_TEXT_JINJA_AST_H

#include "text/jinja/value.h"

typedef enum {
    /* statements */
    JN_BODY,    /* kids: the statements */
    JN_TEXT,    /* val: the data */
    JN_EMIT,    /* a: the expression printed */
    JN_IF,      /* a: test, body, b: else (JN_IF for elif, JN_BODY, or NULL) */
    JN_FOR,     /* names/nnames: targets, a: iterable, b: filter (or NULL), body, c: else body */
    JN_SET,     /* names/nnames: targets, a: value */
    JN_SETATTR, /* name: the namespace, attr: its attribute, a: value */
    JN_SETBLOCK,/* names[0]: target, body, a: filter chain over JN_CAPTURE (or NULL) */
    JN_MACRO,   /* name, names/nnames: parameters, defs: their defaults (NULL entries), body,
                 * neg: 1 when the body reads varargs, 2 kwargs (extra arguments allowed) */
    JN_CALLBLOCK, /* a: the call, names/defs: caller's parameters, body, neg as JN_MACRO's */
    JN_FILTERBLOCK, /* a: filter chain over JN_CAPTURE, body */
    JN_WITH,    /* names/defs: assignments, body */
    JN_BREAK,
    JN_CONTINUE,
    /* expressions */
    JN_CONST,   /* val */
    JN_CAPTURE, /* the body of a filter/set block (stands for the rendered text) */
    JN_NAME,    /* name */
    JN_LIST,    /* kids */
    JN_TUPLE,   /* kids */
    JN_DICT,    /* kids: keys, defs: values (nkids each) */
    JN_BINOP,   /* op: + - * / // % ** ~, a, b */
    JN_NOT,     /* a */
    JN_NEG,     /* a */
    JN_POS,     /* a */
    JN_AND,     /* a, b */
    JN_OR,      /* a, b */
    JN_COMPARE, /* a, kids: operands, ops: "==", "!=", "<", "<=", ">", ">=", "in", "notin" */
    JN_COND,    /* a: test, b: true value, c: false value (NULL: undefined) */
    JN_GETATTR, /* a, name */
    JN_GETITEM, /* a, b */
    JN_SLICE,   /* a, kids[3]: start, stop, step (NULL entries) */
    JN_CALL,    /* a: callee, kids: positional, names/defs/nnames: keywords */
    JN_FILTER,  /* a: subject, name, kids: positional, names/defs/nnames: keywords */
    JN_TEST     /* a: subject, name, neg, kids: positional, names/defs/nnames: keywords */
} jn_type;

typedef struct jnode jnode;
struct jnode {
    int type, line;
    const char *name, *attr, *op;
    int neg;
    jv *val;
    jnode *a, *b, *c;
    jnode *body; /* JN_BODY of a statement with one */
    jnode **kids;
    int nkids;
    const char **names; /* targets, parameters or keyword names */
    jnode **defs;       /* defaults, keyword values, dict values */
    int nnames;
    const char **ops;   /* JN_COMPARE */
};

/* A compiled template (jinja.h's steno_jinja_template): its arena holds the source's tokens,
 * every node and every constant. */
struct steno_jinja_template {
    jarena arena;
    jfail fail;
    jnode *root;
};

/** Parses tokens into a JN_BODY in arena a; errors fail through a->f. */
jnode *jparse(jarena *a, const void *toks, size_t ntoks);

#endif
