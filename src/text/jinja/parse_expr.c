/* parse_expr.c — jinja2's expression grammar (jinja2/parser.py, parse_condexpr down to
 * parse_primary), precedence lowest first:
 *   a if c else b | or | and | not | comparisons (== != < <= > >= in, not in) | + - | ~ |
 *   * / // % | ** | unary - + | primary with postfix (.attr, [sub], [a:b:c], (call)),
 *   then filters (|f(args)) and tests (is [not] t(args)) on the unary. */
#include <string.h>

#include "text/jinja/parser.h"

static jnode *parse_or(jparser *P);
static jnode *parse_unary(jparser *P, int with_filter);
static jnode *parse_postfix(jparser *P, jnode *n);

static jnode *enter(jparser *P) {
    if (++P->depth > 200) jp_fail(P, "expression nested too deeply");
    return NULL;
}

jnode *jp_expression(jparser *P, int with_condexpr) {
    enter(P);
    jnode *e = parse_or(P);
    if (with_condexpr) {
        while (jp_is_name(jp_cur(P), "if")) {
            int line = jp_next(P)->line;
            jnode *c = jp_node(P, JN_COND, line);
            c->b = e;
            c->a = parse_or(P);
            if (jp_is_name(jp_cur(P), "else")) {
                jp_next(P);
                c->c = jp_expression(P, 1);
            }
            e = c;
        }
    }
    P->depth--;
    return e;
}

static jnode *binary(jparser *P, int type, jnode *a, jnode *b, const char *op, int line) {
    jnode *n = jp_node(P, type, line);
    n->a = a;
    n->b = b;
    n->op = op;
    return n;
}

static jnode *parse_not(jparser *P);
static jnode *parse_and(jparser *P) {
    jnode *l = parse_not(P);
    while (jp_is_name(jp_cur(P), "and")) {
        int line = jp_next(P)->line;
        l = binary(P, JN_AND, l, parse_not(P), NULL, line);
    }
    return l;
}

static jnode *parse_or(jparser *P) {
    jnode *l = parse_and(P);
    while (jp_is_name(jp_cur(P), "or")) {
        int line = jp_next(P)->line;
        l = binary(P, JN_OR, l, parse_and(P), NULL, line);
    }
    return l;
}

static jnode *parse_compare(jparser *P);
static jnode *parse_not(jparser *P) {
    if (jp_is_name(jp_cur(P), "not")) {
        enter(P);
        int line = jp_next(P)->line;
        jnode *n = jp_node(P, JN_NOT, line);
        n->a = parse_not(P);
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static const char *op_of(const jtok *t, const char *const *set) {
    if (t->type != JT_OP) return NULL;
    for (; *set; set++)
        if (jp_is_op(t, *set)) return *set;
    return NULL;
}

static jnode *parse_math1(jparser *P);
static jnode *parse_compare(jparser *P) {
    int line = jp_cur(P)->line;
    jnode *e = parse_math1(P);
    jnode *ops[64];
    const char *names[64];
    int n = 0;
    for (;;) {
        const jtok *t = jp_cur(P);
        const char *op = NULL;
        static const char *const cmps[] = {"==", "!=", "<", "<=", ">", ">=", NULL};
        if ((op = op_of(t, cmps))) {
            jp_next(P);
        } else if (jp_is_name(t, "in")) {
            op = "in";
            jp_next(P);
        } else if (jp_is_name(t, "not") && jp_is_name(jp_peek(P, 1), "in")) {
            op = "notin";
            jp_next(P);
            jp_next(P);
        } else break;
        if (n == 64) jp_fail(P, "too many chained comparisons");
        names[n] = op;
        ops[n++] = parse_math1(P);
    }
    if (n == 0) return e;
    jnode *c = jp_node(P, JN_COMPARE, line);
    c->a = e;
    c->nkids = n;
    c->kids = ja_alloc(P->a, (size_t)n * sizeof(jnode *));
    c->ops = ja_alloc(P->a, (size_t)n * sizeof(char *));
    memcpy(c->kids, ops, (size_t)n * sizeof(jnode *));
    memcpy(c->ops, names, (size_t)n * sizeof(char *));
    return c;
}


static jnode *parse_concat(jparser *P);
static jnode *parse_math1(jparser *P) {
    static const char *const ops[] = {"+", "-", NULL};
    jnode *l = parse_concat(P);
    const char *op;
    while ((op = op_of(jp_cur(P), ops))) {
        int line = jp_next(P)->line;
        l = binary(P, JN_BINOP, l, parse_concat(P), op, line);
    }
    return l;
}

static jnode *parse_math2(jparser *P);
static jnode *parse_concat(jparser *P) {
    jnode *l = parse_math2(P);
    while (jp_is_op(jp_cur(P), "~")) {
        int line = jp_next(P)->line;
        l = binary(P, JN_BINOP, l, parse_math2(P), "~", line);
    }
    return l;
}

static jnode *parse_pow(jparser *P);
static jnode *parse_math2(jparser *P) {
    static const char *const ops[] = {"*", "/", "//", "%", NULL};
    jnode *l = parse_pow(P);
    const char *op;
    while ((op = op_of(jp_cur(P), ops))) {
        int line = jp_next(P)->line;
        l = binary(P, JN_BINOP, l, parse_pow(P), op, line);
    }
    return l;
}

static jnode *parse_pow(jparser *P) {
    jnode *l = parse_unary(P, 1);
    while (jp_is_op(jp_cur(P), "**")) {
        int line = jp_next(P)->line;
        l = binary(P, JN_BINOP, l, parse_unary(P, 1), "**", line);
    }
    return l;
}

/* (args, k=v): into n->kids and n->names/defs */
static void parse_call_args(jparser *P, jnode *n) {
    jp_expect_op(P, "(");
    jnode *pos[256], *kv[256];
    const char *kn[256];
    int np = 0, nk = 0;
    while (!jp_is_op(jp_cur(P), ")")) {
        if (np + nk) jp_expect_op(P, ",");
        if (jp_is_op(jp_cur(P), ")")) break;
        if (jp_is_op(jp_cur(P), "*") || jp_is_op(jp_cur(P), "**")) jp_fail(P, "*args and **kwargs are not supported");
        if (np + nk >= 256) jp_fail(P, "too many arguments");
        if (jp_cur(P)->type == JT_NAME && jp_is_op(jp_peek(P, 1), "=")) {
            kn[nk] = jp_expect_name(P);
            jp_next(P);
            kv[nk++] = jp_expression(P, 1);
        } else {
            if (nk) jp_fail(P, "positional argument after a keyword argument");
            pos[np++] = jp_expression(P, 1);
        }
    }
    jp_next(P);
    n->nkids = np;
    n->kids = ja_alloc(P->a, (size_t)(np + 1) * sizeof(jnode *));
    memcpy(n->kids, pos, (size_t)np * sizeof(jnode *));
    n->nnames = nk;
    n->names = ja_alloc(P->a, (size_t)(nk + 1) * sizeof(char *));
    n->defs = ja_alloc(P->a, (size_t)(nk + 1) * sizeof(jnode *));
    memcpy(n->names, kn, (size_t)nk * sizeof(char *));
    memcpy(n->defs, kv, (size_t)nk * sizeof(jnode *));
}

static const char *dotted_name(jparser *P) {
    const char *name = jp_expect_name(P);
    while (jp_is_op(jp_cur(P), ".") && jp_peek(P, 1)->type == JT_NAME) {
        jp_next(P);
        const char *more = jp_expect_name(P);
        size_t a = strlen(name), b = strlen(more);
        char *c = ja_alloc(P->a, a + b + 2);
        memcpy(c, name, a);
        c[a] = '.';
        memcpy(c + a + 1, more, b);
        name = c;
    }
    return name;
}

jnode *jp_filter(jparser *P, jnode *subject, int start_inline) {
    while (jp_is_op(jp_cur(P), "|") || start_inline) {
        if (!start_inline) jp_next(P);
        start_inline = 0;
        jnode *f = jp_node(P, JN_FILTER, jp_cur(P)->line);
        f->a = subject;
        f->name = dotted_name(P);
        if (jp_is_op(jp_cur(P), "(")) parse_call_args(P, f);
        subject = f;
    }
    return subject;
}

static jnode *parse_test(jparser *P, jnode *subject) {
    jnode *t = jp_node(P, JN_TEST, jp_next(P)->line);
    t->a = subject;
    if (jp_is_name(jp_cur(P), "not")) {
        jp_next(P);
        t->neg = 1;
    }
    t->name = dotted_name(P);
    const jtok *c = jp_cur(P);
    if (jp_is_op(c, "(")) parse_call_args(P, t);
    else if ((c->type == JT_NAME || c->type == JT_STRING || c->type == JT_INT || c->type == JT_FLOAT ||
              jp_is_op(c, "(") || jp_is_op(c, "[") || jp_is_op(c, "{")) &&
             !jp_is_name(c, "else") && !jp_is_name(c, "or") && !jp_is_name(c, "and")) {
        if (jp_is_name(c, "is")) jp_fail(P, "You cannot chain multiple tests with is");
        jnode *arg = parse_postfix(P, jp_primary(P));
        t->nkids = 1;
        t->kids = ja_alloc(P->a, sizeof(jnode *));
        t->kids[0] = arg;
    }
    return t;
}

static jnode *parse_subscript(jparser *P, jnode *subject) {
    const jtok *t = jp_next(P);
    if (jp_is_op(t, ".")) {
        const jtok *k = jp_next(P);
        if (k->type == JT_NAME) {
            jnode *n = jp_node(P, JN_GETATTR, t->line);
            n->a = subject;
            n->name = ja_strndup(P->a, k->s, k->n);
            return n;
        }
        if (k->type == JT_INT) {
            jnode *n = jp_node(P, JN_GETITEM, t->line), *c = jp_node(P, JN_CONST, t->line);
            c->val = jv_int(P->a, k->i);
            n->a = subject;
            n->b = c;
            return n;
        }
        jp_fail(P, "expected name or number");
    }
    /* [ ... ] */
    jnode *parts[3] = {NULL, NULL, NULL};
    int colons = 0;
    jnode *idx = NULL;
    if (!jp_is_op(jp_cur(P), ":")) idx = jp_expression(P, 1);
    if (jp_is_op(jp_cur(P), ":")) {
        parts[0] = idx;
        while (jp_is_op(jp_cur(P), ":") && colons < 2) {
            jp_next(P);
            colons++;
            if (!jp_is_op(jp_cur(P), "]") && !jp_is_op(jp_cur(P), ":")) parts[colons] = jp_expression(P, 1);
        }
        jp_expect_op(P, "]");
        jnode *n = jp_node(P, JN_SLICE, t->line);
        n->a = subject;
        n->nkids = 3;
        n->kids = ja_alloc(P->a, 3 * sizeof(jnode *));
        memcpy(n->kids, parts, sizeof parts);
        return n;
    }
    if (jp_is_op(jp_cur(P), ",")) { /* x[a, b]: a tuple key */
        jnode *tup = jp_node(P, JN_TUPLE, t->line);
        jnode *items[64];
        int k = 0;
        items[k++] = idx;
        while (jp_is_op(jp_cur(P), ",") && k < 64) {
            jp_next(P);
            if (jp_is_op(jp_cur(P), "]")) break;
            items[k++] = jp_expression(P, 1);
        }
        tup->nkids = k;
        tup->kids = ja_alloc(P->a, (size_t)k * sizeof(jnode *));
        memcpy(tup->kids, items, (size_t)k * sizeof(jnode *));
        idx = tup;
    }
    jp_expect_op(P, "]");
    jnode *n = jp_node(P, JN_GETITEM, t->line);
    n->a = subject;
    n->b = idx;
    return n;
}

static jnode *parse_postfix(jparser *P, jnode *n) {
    for (;;) {
        const jtok *t = jp_cur(P);
        if (jp_is_op(t, ".") || jp_is_op(t, "[")) n = parse_subscript(P, n);
        else if (jp_is_op(t, "(")) {
            jnode *c = jp_node(P, JN_CALL, t->line);
            c->a = n;
            parse_call_args(P, c);
            n = c;
        } else return n;
    }
}

static jnode *parse_unary(jparser *P, int with_filter) {
    enter(P);
    const jtok *t = jp_cur(P);
    jnode *n;
    if (jp_is_op(t, "-") || jp_is_op(t, "+")) {
        jp_next(P);
        n = jp_node(P, jp_is_op(t, "-") ? JN_NEG : JN_POS, t->line);
        n->a = parse_unary(P, 0);
    } else n = jp_primary(P);
    n = parse_postfix(P, n);
    if (with_filter) {
        for (;;) {
            const jtok *c = jp_cur(P);
            if (jp_is_op(c, "|")) n = jp_filter(P, n, 0);
            else if (jp_is_name(c, "is")) n = parse_test(P, n);
            else if (jp_is_op(c, "(")) {
                jnode *call = jp_node(P, JN_CALL, c->line);
                call->a = n;
                parse_call_args(P, call);
                n = call;
            } else break;
        }
    }
    P->depth--;
    return n;
}

static jnode *konst(jparser *P, jv *v, int line) {
    jnode *n = jp_node(P, JN_CONST, line);
    n->val = v;
    return n;
}

jnode *jp_primary(jparser *P) {
    const jtok *t = jp_cur(P);
    enter(P);
    jnode *n;
    if (t->type == JT_NAME) {
        jp_next(P);
        if ((t->n == 4 && (!memcmp(t->s, "true", 4) || !memcmp(t->s, "True", 4)))) n = konst(P, JV_TRUE, t->line);
        else if (t->n == 5 && (!memcmp(t->s, "false", 5) || !memcmp(t->s, "False", 5))) n = konst(P, JV_FALSE, t->line);
        else if (t->n == 4 && (!memcmp(t->s, "none", 4) || !memcmp(t->s, "None", 4))) n = konst(P, JV_NONE_V, t->line);
        else {
            n = jp_node(P, JN_NAME, t->line);
            n->name = ja_strndup(P->a, t->s, t->n);
        }
    } else if (t->type == JT_STRING) {
        jbuf b = {.a = P->a};
        while (jp_cur(P)->type == JT_STRING) {
            const jtok *s = jp_next(P);
            jb_put(&b, s->s, s->n);
        }
        n = konst(P, jv_strref(P->a, b.p ? b.p : "", b.n), t->line);
    } else if (t->type == JT_INT) {
        jp_next(P);
        n = konst(P, jv_int(P->a, t->i), t->line);
    } else if (t->type == JT_FLOAT) {
        jp_next(P);
        n = konst(P, jv_float(P->a, t->f), t->line);
    } else if (jp_is_op(t, "(")) {
        jp_next(P);
        n = jp_tuple(P, 0, 1, NULL, 1);
        jp_expect_op(P, ")");
    } else if (jp_is_op(t, "[") || jp_is_op(t, "{")) {
        int dict = jp_is_op(t, "{");
        const char *close = dict ? "}" : "]";
        jp_next(P);
        n = jp_node(P, dict ? JN_DICT : JN_LIST, t->line);
        jnode **keys = NULL, **vals = NULL;
        int k = 0, cap = 0;
        while (!jp_is_op(jp_cur(P), close)) {
            if (k) jp_expect_op(P, ",");
            if (jp_is_op(jp_cur(P), close)) break;
            if (k == cap) {
                int nc = cap ? cap * 2 : 8;
                jnode **nk = ja_alloc(P->a, (size_t)nc * sizeof(jnode *)), **nv = ja_alloc(P->a, (size_t)nc * sizeof(jnode *));
                if (k) {
                    memcpy(nk, keys, (size_t)k * sizeof(jnode *));
                    memcpy(nv, vals, (size_t)k * sizeof(jnode *));
                }
                keys = nk;
                vals = nv;
                cap = nc;
            }
            keys[k] = jp_expression(P, 1);
            if (dict) {
                jp_expect_op(P, ":");
                vals[k] = jp_expression(P, 1);
            }
            k++;
        }
        jp_next(P);
        n->kids = keys;
        n->defs = vals;
        n->nkids = k;
    } else if (t->type == JT_EOF) jp_fail(P, "unexpected end of template");
    else jp_fail(P, "unexpected '%.*s'", (int)(t->n ? t->n : 1), t->s ? t->s : "?");
    P->depth--;
    return n;
}

static int tuple_end(jparser *P, const char *const *end_rules) {
    const jtok *t = jp_cur(P);
    if (t->type == JT_VAR_END || t->type == JT_BLOCK_END || jp_is_op(t, ")") || t->type == JT_EOF) return 1;
    if (end_rules)
        for (; *end_rules; end_rules++)
            if (jp_is_name(t, *end_rules)) return 1;
    return 0;
}

jnode *jp_tuple(jparser *P, int simplified, int with_condexpr, const char *const *end_rules, int explicit_parens) {
    int line = jp_cur(P)->line;
    jnode *items[256];
    int n = 0, is_tuple = 0;
    for (;;) {
        if (n) jp_expect_op(P, ",");
        if (tuple_end(P, end_rules)) break;
        if (n == 256) jp_fail(P, "tuple too long");
        items[n++] = simplified ? jp_primary(P) : jp_expression(P, with_condexpr);
        if (jp_is_op(jp_cur(P), ",")) is_tuple = 1;
        else break;
    }
    if (!is_tuple) {
        if (n) return items[0];
        if (!explicit_parens) jp_fail(P, "Expected an expression, got '%s'", jp_cur(P)->type == JT_EOF ? "end of template" : "end of statement block");
    }
    jnode *t = jp_node(P, JN_TUPLE, line);
    t->nkids = n;
    t->kids = ja_alloc(P->a, (size_t)(n + 1) * sizeof(jnode *));
    memcpy(t->kids, items, (size_t)n * sizeof(jnode *));
    return t;
}
