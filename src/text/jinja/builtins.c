/* builtins.c — jinja2's tests (jinja2/tests.py: defined, none, string, mapping, sameas, ...) and
 * the globals a chat template can call: jinja2's range (at most 100 000 items, as the sandbox's
 * MAX_RANGE), namespace and dict, and transformers' raise_exception and strftime_now. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "text/jinja/eval.h"

static const char *const TESTS[] = {"defined", "undefined", "none", "boolean", "false", "true", "integer", "float",
                                    "number", "string", "mapping", "iterable", "sequence", "callable", "even", "odd",
                                    "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "gt",
                                    "greaterthan", ">", "le", "<=", "ge", ">=", "in", "sameas", "lower", "upper",
                                    "escaped", "filter", "test", NULL};

int je_has_test(const char *name) {
    for (const char *const *t = TESTS; *t; t++)
        if (!strcmp(*t, name)) return 1;
    return 0;
}

static jv *arg1(jinterp *I, const char *test, const jargs *a, int line) {
    jv *v = jarg(a, 0, NULL);
    if (!v && a->nkw) v = a->kv[0];
    if (!v) je_fail(I, line, "test '%s' needs an argument", test);
    return v;
}

static int cmp_test(jinterp *I, const char *op, jv *x, jv *y, int line) {
    int c;
    if (x->kind == JV_UNDEF) je_undefined(I, line, x);
    if (y->kind == JV_UNDEF) je_undefined(I, line, y);
    if (!jv_cmp(x, y, &c))
        je_fail(I, line, "'%s' not supported between instances of '%s' and '%s'", op, jv_type_name(x), jv_type_name(y));
    if (op[0] == '<') return op[1] ? c <= 0 : c < 0;
    return op[1] ? c >= 0 : c > 0;
}

static int64_t need_int(jinterp *I, jv *v, const char *what, int line) {
    if (v->kind == JV_UNDEF) je_undefined(I, line, v);
    if (v->kind != JV_INT && v->kind != JV_BOOL) je_fail(I, line, "%s: expected an integer, got '%s'", what, jv_type_name(v));
    return v->u.i;
}

int je_test(jinterp *I, const char *t, jv *v, const jargs *a, int line) {
    int k = v->kind;
    if (!strcmp(t, "defined")) return k != JV_UNDEF;
    if (!strcmp(t, "undefined")) return k == JV_UNDEF;
    if (!strcmp(t, "none")) return k == JV_NONE;
    if (!strcmp(t, "boolean")) return k == JV_BOOL;
    if (!strcmp(t, "false")) return k == JV_BOOL && !v->u.i;
    if (!strcmp(t, "true")) return k == JV_BOOL && v->u.i;
    if (!strcmp(t, "integer")) return k == JV_INT;
    if (!strcmp(t, "float")) return k == JV_FLOAT;
    if (!strcmp(t, "number")) return k == JV_INT || k == JV_FLOAT || k == JV_BOOL;
    if (!strcmp(t, "string")) return k == JV_STR;
    if (!strcmp(t, "mapping")) return k == JV_DICT && !v->ns;
    if (!strcmp(t, "iterable")) return k == JV_STR || k == JV_LIST || (k == JV_DICT && !v->ns) || k == JV_UNDEF || k == JV_LOOP;
    if (!strcmp(t, "sequence")) return k == JV_STR || k == JV_LIST || (k == JV_DICT && !v->ns) || k == JV_UNDEF;
    if (!strcmp(t, "callable")) return k == JV_FUNC || k == JV_UNDEF;
    if (!strcmp(t, "escaped")) return 0;
    if (!strcmp(t, "even") || !strcmp(t, "odd") || !strcmp(t, "divisibleby")) { /* value % n, as Python */
        jv *d = t[0] == 'd' ? arg1(I, t, a, line) : NULL;
        if (v->kind == JV_UNDEF) je_undefined(I, line, v);
        if (!jv_is_num(v) || (d && !jv_is_num(d)))
            je_fail(I, line, "unsupported operand type(s) for %%: '%s' and '%s'", jv_type_name(v), d ? jv_type_name(d) : "int");
        if (v->kind != JV_FLOAT && (!d || d->kind != JV_FLOAT)) {
            int64_t m = d ? d->u.i : 2;
            if (m == 0) je_fail(I, line, "integer modulo by zero");
            int64_t r = m == -1 ? 0 : v->u.i % m;
            if (r != 0 && ((r < 0) != (m < 0))) r += m;
            return t[0] == 'o' ? r == 1 : r == 0;
        }
        double x = jv_num(v), m = d ? jv_num(d) : 2.0;
        if (m == 0) je_fail(I, line, "float modulo");
        double r = fmod(x, m);
        if (r != 0 && ((r < 0) != (m < 0))) r += m;
        return t[0] == 'o' ? r == 1.0 : r == 0.0;
    }
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "==")) return jv_eq(v, arg1(I, t, a, line));
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !jv_eq(v, arg1(I, t, a, line));
    if (!strcmp(t, "lt") || !strcmp(t, "lessthan") || !strcmp(t, "<")) return cmp_test(I, "<", v, arg1(I, t, a, line), line);
    if (!strcmp(t, "le") || !strcmp(t, "<=")) return cmp_test(I, "<=", v, arg1(I, t, a, line), line);
    if (!strcmp(t, "gt") || !strcmp(t, "greaterthan") || !strcmp(t, ">")) return cmp_test(I, ">", v, arg1(I, t, a, line), line);
    if (!strcmp(t, "ge") || !strcmp(t, ">=")) return cmp_test(I, ">=", v, arg1(I, t, a, line), line);
    if (!strcmp(t, "in")) {
        jv *seq = arg1(I, t, a, line);
        if (seq->kind == JV_STR) {
            if (v->kind != JV_STR) je_fail(I, line, "'in <string>' requires string as left operand");
            return v->u.s.n == 0 || memmem(seq->u.s.p, seq->u.s.n, v->u.s.p, v->u.s.n) != NULL;
        }
        if (seq->kind == JV_DICT) return jv_dict_getv(seq, v) != NULL;
        jv *items = je_iter(I, seq, line);
        for (size_t i = 0; i < items->u.list.n; i++)
            if (jv_eq(items->u.list.v[i], v)) return 1;
        return 0;
    }
    if (!strcmp(t, "sameas")) {
        jv *o = arg1(I, t, a, line);
        if (v->kind == JV_NONE || v->kind == JV_BOOL) return o->kind == v->kind && o->u.i == v->u.i;
        return o == v;
    }
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) {
        if (k != JV_STR) v = jv_to_str(&I->a, v);
        jargs none = {0};
        return jv_truthy(je_method_call(I, v, t[0] == 'l' ? "islower" : "isupper", &none, line));
    }
    if (!strcmp(t, "filter") || !strcmp(t, "test")) {
        if (k != JV_STR) return 0;
        char *name = ja_strndup(&I->a, v->u.s.p, v->u.s.n);
        if (t[0] == 't') return je_has_test(name);
        static const char *const F[] = {"abs", "attr", "batch", "capitalize", "center", "count", "d", "default",
                                        "dictsort", "e", "escape", "first", "float", "indent", "int", "items",
                                        "join", "last", "length", "list", "lower", "map", "max", "min", "reject",
                                        "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr",
                                        "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper",
                                        "wordcount", NULL};
        for (const char *const *f = F; *f; f++)
            if (!strcmp(*f, name)) return 1;
        return 0;
    }
    je_unsupported(I, line, "unknown test '%s'", t);
}

static const char *const GLOBALS[] = {"range", "namespace", "dict", "raise_exception", "strftime_now", NULL};

jv *je_global(jinterp *I, const char *name) {
    for (const char *const *g = GLOBALS; *g; g++)
        if (!strcmp(*g, name)) return jv_func(&I->a, JF_GLOBAL, *g, NULL, NULL, NULL);
    return NULL;
}

jv *je_call_global(jinterp *I, const char *name, const jargs *a, int line) {
    jarena *A = &I->a;
    if (!strcmp(name, "range")) {
        if (a->npos < 1 || a->npos > 3 || a->nkw) je_fail(I, line, "range expected 1 to 3 integer arguments");
        int64_t start = 0, stop, step = 1;
        if (a->npos == 1) stop = need_int(I, a->pos[0], "range", line);
        else {
            start = need_int(I, a->pos[0], "range", line);
            stop = need_int(I, a->pos[1], "range", line);
            if (a->npos == 3) step = need_int(I, a->pos[2], "range", line);
        }
        if (step == 0) je_fail(I, line, "range() arg 3 must not be zero");
        int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
        if (n > 100000) je_fail(I, line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        jv *l = jv_list(A, (size_t)n);
        for (int64_t i = 0; i < n; i++) jv_append(A, l, jv_int(A, start + i * step));
        return l;
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        jv *d = jv_dict(A);
        d->ns = name[0] == 'n';
        for (int i = 0; i < a->npos; i++) {
            jv *m = a->pos[i];
            if (m->kind != JV_DICT) je_fail(I, line, "%s: positional arguments must be mappings", name);
            for (size_t k = 0; k < m->u.dict.keys.n; k++) jv_dict_set(A, d, m->u.dict.keys.v[k], m->u.dict.vals.v[k]);
        }
        for (int i = 0; i < a->nkw; i++) jv_dict_setc(A, d, a->kn[i], a->kv[i]);
        return d;
    }
    if (!strcmp(name, "raise_exception")) {
        jv *m = jarg(a, 0, "message");
        jbuf b = {.a = A};
        if (m) jv_write_str(&b, m);
        je_fail(I, line, "raise_exception: %s", b.p ? b.p : "");
    }
    if (!strcmp(name, "strftime_now")) {
        jv *f = jarg(a, 0, "format");
        if (!f || f->kind != JV_STR) je_fail(I, line, "strftime_now: expected a format string");
        struct tm tm;
        time_t now = I->o.now >= 0 ? (time_t)I->o.now : time(NULL);
        if (I->o.now >= 0) gmtime_r(&now, &tm);
        else localtime_r(&now, &tm);
        char *fmt = ja_strndup(A, f->u.s.p, f->u.s.n), out[512];
        size_t n = strftime(out, sizeof out, fmt, &tm);
        if (n == 0 && f->u.s.n) je_fail(I, line, "strftime_now: format too long or empty result");
        return jv_str(A, out, n);
    }
    je_fail(I, line, "'%s' is not callable", name);
}
