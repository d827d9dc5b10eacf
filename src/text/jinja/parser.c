/* parser.c — statements of a chat template into a tree (jinja2/parser.py: subparse and the
 * parse_<tag> methods): if/elif/else, for (targets, loop filter, else), set (targets, namespace
 * attributes, blocks), macro, call, filter blocks, with, break/continue (jinja2.ext.loopcontrols)
 * and generation (transformers' AssistantTracker: its body renders as is). Other tags (extends,
 * include, import, block, do) are errors naming the tag. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text/jinja/parser.h"

const jtok *jp_cur(jparser *P) { return &P->t[P->i]; }
const jtok *jp_peek(jparser *P, int k) { return P->i + (size_t)k < P->n ? &P->t[P->i + (size_t)k] : &P->t[P->n - 1]; }
const jtok *jp_next(jparser *P) {
    const jtok *t = &P->t[P->i];
    if (P->i + 1 < P->n) P->i++;
    return t;
}
int jp_is_op(const jtok *t, const char *op) {
    return t->type == JT_OP && t->n == strlen(op) && memcmp(t->s, op, t->n) == 0;
}
int jp_is_name(const jtok *t, const char *name) {
    return t->type == JT_NAME && t->n == strlen(name) && memcmp(t->s, name, t->n) == 0;
}

_Noreturn void jp_fail(jparser *P, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(P->a->f, STENO_E_FORMAT, jp_cur(P)->line, "%s", msg);
}

static const char *tok_desc(const jtok *t, char *buf, size_t cap) {
    switch (t->type) {
    case JT_EOF: return "end of template";
    case JT_VAR_END: return "end of print statement";
    case JT_BLOCK_END: return "end of statement block";
    case JT_VAR_BEGIN: return "begin of print statement";
    case JT_BLOCK_BEGIN: return "begin of statement block";
    case JT_NAME:
    case JT_OP: snprintf(buf, cap, "'%.*s'", (int)t->n, t->s); return buf;
    case JT_STRING: return "string";
    default: return "number";
    }
}

void jp_expect_op(jparser *P, const char *op) {
    char b[64];
    if (!jp_is_op(jp_cur(P), op)) jp_fail(P, "expected '%s', got %s", op, tok_desc(jp_cur(P), b, sizeof b));
    jp_next(P);
}

const char *jp_expect_name(jparser *P) {
    char b[64];
    const jtok *t = jp_cur(P);
    if (t->type != JT_NAME) jp_fail(P, "expected a name, got %s", tok_desc(t, b, sizeof b));
    jp_next(P);
    return ja_strndup(P->a, t->s, t->n);
}

jnode *jp_node(jparser *P, int type, int line) {
    jnode *n = ja_alloc(P->a, sizeof *n);
    n->type = type;
    n->line = line;
    return n;
}

static void expect_block_end(jparser *P) {
    char b[64];
    if (jp_cur(P)->type != JT_BLOCK_END)
        jp_fail(P, "expected end of statement block, got %s", tok_desc(jp_cur(P), b, sizeof b));
    jp_next(P);
}

static int in_set(const jtok *t, const char *const *set) {
    for (; set && *set; set++)
        if (jp_is_name(t, *set)) return 1;
    return 0;
}

static jnode *statement(jparser *P);

/* Statements until a {% tag %} whose name is in end (left as the current token, its {% consumed);
 * end NULL: until the end of the template. */
static jnode *subparse(jparser *P, const char *const *end) {
    jnode *body = jp_node(P, JN_BODY, jp_cur(P)->line);
    jnode **kids = NULL;
    int n = 0, cap = 0;
    if (++P->depth > 200) jp_fail(P, "blocks nested too deeply");
    for (;;) {
        const jtok *t = jp_cur(P);
        jnode *s = NULL;
        if (t->type == JT_EOF) {
            if (end) jp_fail(P, "unexpected end of template, expected '%s'", end[0]);
            break;
        } else if (t->type == JT_TEXT) {
            jp_next(P);
            s = jp_node(P, JN_TEXT, t->line);
            s->val = jv_strref(P->a, t->s, t->n);
        } else if (t->type == JT_VAR_BEGIN) {
            jp_next(P);
            s = jp_node(P, JN_EMIT, t->line);
            s->a = jp_tuple(P, 0, 1, NULL, 0);
            char b[64];
            if (jp_cur(P)->type != JT_VAR_END)
                jp_fail(P, "expected end of print statement, got %s", tok_desc(jp_cur(P), b, sizeof b));
            jp_next(P);
        } else if (t->type == JT_BLOCK_BEGIN) {
            jp_next(P);
            if (end && in_set(jp_cur(P), end)) break;
            s = statement(P);
        } else jp_fail(P, "unexpected token");
        if (n == cap) {
            int nc = cap ? cap * 2 : 8;
            jnode **k = ja_alloc(P->a, (size_t)nc * sizeof(jnode *));
            if (n) memcpy(k, kids, (size_t)n * sizeof(jnode *));
            kids = k;
            cap = nc;
        }
        kids[n++] = s;
    }
    P->depth--;
    body->kids = kids;
    body->nkids = n;
    return body;
}

/* The body up to {% endNAME %}, which is consumed with its %}. */
static jnode *body_until(jparser *P, const char *endname) {
    const char *end[] = {endname, NULL};
    jnode *b = subparse(P, end);
    jp_next(P);
    expect_block_end(P);
    return b;
}

static void names_push(jparser *P, jnode *n, const char *name, jnode *def) {
    const char **nn = ja_alloc(P->a, (size_t)(n->nnames + 1) * sizeof(char *));
    jnode **nd = ja_alloc(P->a, (size_t)(n->nnames + 1) * sizeof(jnode *));
    if (n->nnames) {
        memcpy(nn, n->names, (size_t)n->nnames * sizeof(char *));
        memcpy(nd, n->defs, (size_t)n->nnames * sizeof(jnode *));
    }
    nn[n->nnames] = name;
    nd[n->nnames] = def;
    n->names = nn;
    n->defs = nd;
    n->nnames++;
}

/* Assignment targets: a name or names separated by commas, optionally in parentheses. */
static void targets(jparser *P, jnode *n) {
    int paren = jp_is_op(jp_cur(P), "(");
    if (paren) jp_next(P);
    do {
        if (n->nnames) jp_next(P);
        if (paren && jp_is_op(jp_cur(P), ")")) break;
        names_push(P, n, jp_expect_name(P), NULL);
    } while (jp_is_op(jp_cur(P), ","));
    if (paren) jp_expect_op(P, ")");
    if (n->nnames > 1 || paren) n->neg = 1; /* unpacking (a tuple target) */
}

/* (a, b=default, ...) of a macro or a call block */
static void signature(jparser *P, jnode *n) {
    jp_expect_op(P, "(");
    while (!jp_is_op(jp_cur(P), ")")) {
        if (n->nnames) jp_expect_op(P, ",");
        const char *name = jp_expect_name(P);
        jnode *def = NULL;
        if (jp_is_op(jp_cur(P), "=")) {
            jp_next(P);
            def = jp_expression(P, 1);
        }
        names_push(P, n, name, def);
    }
    jp_next(P);
}

/* Does the tree under n read the variable name? (jinja2 lets a macro take extra positional or
 * keyword arguments only when its body reads varargs or kwargs.) */
static int reads_name(const jnode *n, const char *name, int depth) {
    if (!n || depth > 400) return 0;
    if (n->type == JN_NAME && strcmp(n->name, name) == 0) return 1;
    if (reads_name(n->a, name, depth + 1) || reads_name(n->b, name, depth + 1) || reads_name(n->c, name, depth + 1) ||
        reads_name(n->body, name, depth + 1))
        return 1;
    for (int i = 0; i < n->nkids; i++)
        if (reads_name(n->kids[i], name, depth + 1)) return 1;
    for (int i = 0; n->defs && i < n->nnames; i++)
        if (reads_name(n->defs[i], name, depth + 1)) return 1;
    return 0;
}

static jnode *parse_if(jparser *P, int line) {
    static const char *const end[] = {"elif", "else", "endif", NULL};
    jnode *n = jp_node(P, JN_IF, line);
    n->a = jp_tuple(P, 0, 1, NULL, 0);
    expect_block_end(P);
    n->body = subparse(P, end);
    const jtok *t = jp_next(P);
    if (jp_is_name(t, "elif")) n->b = parse_if(P, t->line);
    else if (jp_is_name(t, "else")) {
        expect_block_end(P);
        n->b = body_until(P, "endif");
    } else expect_block_end(P);
    return n;
}

static jnode *statement(jparser *P) {
    const jtok *t = jp_cur(P);
    char b[64];
    if (t->type != JT_NAME) jp_fail(P, "tag name expected, got %s", tok_desc(t, b, sizeof b));
    int line = t->line;
    jp_next(P);
    jnode *n;
    if (jp_is_name(t, "if")) {
        return parse_if(P, line);
    }
    if (jp_is_name(t, "for")) {
        static const char *const rec[] = {"recursive", NULL},
                                 *const body_end[] = {"endfor", "else", NULL};
        n = jp_node(P, JN_FOR, line);
        targets(P, n);
        if (!jp_is_name(jp_cur(P), "in")) jp_fail(P, "expected 'in' in the for loop");
        jp_next(P);
        n->a = jp_tuple(P, 0, 0, rec, 0);
        if (jp_is_name(jp_cur(P), "if")) {
            jp_next(P);
            n->b = jp_expression(P, 1);
        }
        if (jp_is_name(jp_cur(P), "recursive")) jp_fail(P, "recursive for loops are not supported");
        expect_block_end(P);
        P->loop_depth++;
        n->body = subparse(P, body_end);
        P->loop_depth--;
        if (jp_is_name(jp_next(P), "else")) {
            expect_block_end(P);
            n->c = body_until(P, "endfor");
        } else expect_block_end(P);
        return n;
    }
    if (jp_is_name(t, "set")) {
        if (jp_cur(P)->type == JT_NAME && jp_is_op(jp_peek(P, 1), ".")) {
            n = jp_node(P, JN_SETATTR, line);
            n->name = jp_expect_name(P);
            jp_next(P);
            n->attr = jp_expect_name(P);
            jp_expect_op(P, "=");
            n->a = jp_tuple(P, 0, 1, NULL, 0);
            expect_block_end(P);
            return n;
        }
        n = jp_node(P, JN_SET, line);
        targets(P, n);
        if (jp_is_op(jp_cur(P), "=")) {
            jp_next(P);
            n->a = jp_tuple(P, 0, 1, NULL, 0);
            expect_block_end(P);
            return n;
        }
        n->type = JN_SETBLOCK;
        if (n->nnames != 1) jp_fail(P, "a block set takes one name");
        if (jp_is_op(jp_cur(P), "|")) n->a = jp_filter(P, jp_node(P, JN_CAPTURE, line), 0);
        expect_block_end(P);
        n->body = body_until(P, "endset");
        return n;
    }
    if (jp_is_name(t, "macro") || jp_is_name(t, "call")) {
        int macro = jp_is_name(t, "macro");
        n = jp_node(P, macro ? JN_MACRO : JN_CALLBLOCK, line);
        if (macro) {
            n->name = jp_expect_name(P);
            signature(P, n);
        } else {
            if (jp_is_op(jp_cur(P), "(")) signature(P, n);
            n->a = jp_expression(P, 1);
            if (n->a->type != JN_CALL) jp_fail(P, "expected call");
        }
        expect_block_end(P);
        int saved = P->loop_depth;
        P->loop_depth = 0;
        n->body = body_until(P, macro ? "endmacro" : "endcall");
        P->loop_depth = saved;
        n->neg = reads_name(n->body, "varargs", 0) | reads_name(n->body, "kwargs", 0) << 1;
        return n;
    }
    if (jp_is_name(t, "filter")) {
        n = jp_node(P, JN_FILTERBLOCK, line);
        n->a = jp_filter(P, jp_node(P, JN_CAPTURE, line), 1);
        expect_block_end(P);
        n->body = body_until(P, "endfilter");
        return n;
    }
    if (jp_is_name(t, "with")) {
        n = jp_node(P, JN_WITH, line);
        while (jp_cur(P)->type != JT_BLOCK_END) {
            if (n->nnames) jp_expect_op(P, ",");
            const char *name = jp_expect_name(P);
            jp_expect_op(P, "=");
            names_push(P, n, name, jp_expression(P, 1));
        }
        expect_block_end(P);
        n->body = body_until(P, "endwith");
        return n;
    }
    if (jp_is_name(t, "generation")) {
        expect_block_end(P);
        return body_until(P, "endgeneration");
    }
    if (jp_is_name(t, "break") || jp_is_name(t, "continue")) {
        if (P->loop_depth == 0) jp_fail(P, "'%.*s' outside of a for loop", (int)t->n, t->s);
        n = jp_node(P, jp_is_name(t, "break") ? JN_BREAK : JN_CONTINUE, line);
        expect_block_end(P);
        return n;
    }
    jp_fail(P, "Encountered unknown tag '%.*s'", (int)t->n, t->s);
}

/* jinja2's own filters and tests (jinja2/filters.py, tests.py; tojson is transformers'): jinja2
 * refuses any other name when it compiles the template, except inside an if block or a
 * conditional expression, where it fails only if reached (codegen's soft frames). */
static const char *const JINJA2_FILTERS[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace",
    "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title",
    "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr", NULL};
static const char *const JINJA2_TESTS[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter", "float",
    "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none",
    "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=",
    ">", ">=", NULL};

static void check_names(jarena *a, const jnode *n, int soft, int depth) {
    if (!n || depth > 1000) return;
    if (!soft && (n->type == JN_FILTER || n->type == JN_TEST)) {
        int known = 0;
        for (const char *const *k = n->type == JN_FILTER ? JINJA2_FILTERS : JINJA2_TESTS; *k && !known; k++)
            known = strcmp(*k, n->name) == 0;
        if (!known)
            jfail_at(a->f, STENO_E_UNSUPPORTED, n->line, "unknown %s '%s'", n->type == JN_FILTER ? "filter" : "test",
                     n->name);
    }
    int inner = n->type == JN_IF || n->type == JN_COND ? 1 : soft; /* soft below if and a-if-c-else-b */
    int own = n->type == JN_FOR || n->type == JN_MACRO || n->type == JN_CALLBLOCK || n->type == JN_FILTERBLOCK ||
              n->type == JN_WITH || n->type == JN_SETBLOCK;
    /* a new frame (loop, macro, call, filter and set blocks, with) is not soft again */
    int a_soft = n->type == JN_FILTERBLOCK || n->type == JN_SETBLOCK ? 0 : inner;
    check_names(a, n->a, a_soft, depth + 1);
    check_names(a, n->b, own ? 0 : inner, depth + 1);
    check_names(a, n->c, own ? 0 : inner, depth + 1);
    check_names(a, n->body, own ? 0 : inner, depth + 1);
    for (int i = 0; i < n->nkids; i++) check_names(a, n->kids[i], own ? 0 : inner, depth + 1);
    for (int i = 0; n->defs && i < n->nnames; i++)
        check_names(a, n->defs[i], n->type == JN_MACRO || n->type == JN_CALLBLOCK ? 0 : inner, depth + 1);
}

jnode *jparse(jarena *a, const void *toks, size_t ntoks) {
    jparser P = {.a = a, .t = toks, .n = ntoks};
    jnode *root = subparse(&P, NULL);
    check_names(a, root, 0, 0);
    return root;
}
