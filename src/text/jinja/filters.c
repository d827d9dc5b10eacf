/* filters.c — jinja2's filters (jinja2/filters.py) that chat templates use, with their argument
 * names and defaults, and transformers' tojson (json.dumps(x, ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False), its positional order). A filter this file does not know is
 * STENO_E_UNSUPPORTED naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/eval.h"

static jv *str_of(jinterp *I, jv *v) { return jv_to_str(&I->a, v); }

static jv *call_method(jinterp *I, jv *s, const char *m, jv *a0, jv *a1, jv *a2, int line) {
    jv *pos[3] = {a0, a1, a2};
    jargs a = {.pos = pos, .npos = a2 ? 3 : a1 ? 2 : a0 ? 1 : 0};
    return je_method_call(I, s, m, &a, line);
}

static int opt_bool(jv *v, int def) { return v ? jv_truthy(v) : def; }

/* jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem (digits as integers). */
static jv *attr_get(jinterp *I, jv *item, jv *attr, int line) {
    if (attr->kind == JV_INT) return je_getitem(I, item, attr, line);
    jv *s = str_of(I, attr);
    const char *p = s->u.s.p, *e = p + s->u.s.n;
    while (p <= e) {
        const char *d = memchr(p, '.', (size_t)(e - p));
        if (!d) d = e;
        int digits = d > p;
        for (const char *c = p; c < d; c++) digits &= *c >= '0' && *c <= '9';
        jv *key = digits ? jv_int(&I->a, strtoll(p, NULL, 10)) : jv_strref(&I->a, p, (size_t)(d - p));
        item = je_getitem(I, item, key, line);
        p = d + 1;
    }
    return item;
}

static jv *lower_if_str(jinterp *I, jv *v, int case_sensitive, int line) {
    return !case_sensitive && v->kind == JV_STR ? call_method(I, v, "lower", NULL, NULL, NULL, line) : v;
}

/* a stable merge sort of keys[i] with their items (no qsort: Python's sort is stable and stops at
 * the first pair it cannot order) */
typedef struct {
    jinterp *I;
    int line;
} sort_ctx;

static int key_lt(sort_ctx *c, jv *a, jv *b) {
    int r;
    if (a->kind == JV_UNDEF || b->kind == JV_UNDEF) je_undefined(c->I, c->line, a->kind == JV_UNDEF ? a : b);
    if (!jv_cmp(a, b, &r))
        je_fail(c->I, c->line, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
    return r < 0;
}

static void msort(sort_ctx *c, jv **keys, jv **items, jv **tk, jv **ti, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    msort(c, keys, items, tk, ti, h);
    msort(c, keys + h, items + h, tk, ti, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (key_lt(c, keys[j], keys[i])) tk[k] = keys[j], ti[k++] = items[j++];
        else tk[k] = keys[i], ti[k++] = items[i++];
    }
    while (i < h) tk[k] = keys[i], ti[k++] = items[i++];
    while (j < n) tk[k] = keys[j], ti[k++] = items[j++];
    memcpy(keys, tk, n * sizeof(jv *));
    memcpy(items, ti, n * sizeof(jv *));
}

static jv *sorted(jinterp *I, jv *items, jv **keys, int reverse, int line) {
    size_t n = items->u.list.n;
    jv **it = ja_alloc(&I->a, (n + 1) * sizeof(jv *)), **tk = ja_alloc(&I->a, (n + 1) * sizeof(jv *)),
       **ti = ja_alloc(&I->a, (n + 1) * sizeof(jv *));
    memcpy(it, items->u.list.v, n * sizeof(jv *));
    sort_ctx c = {I, line};
    if (reverse) { /* Python: reverse=True keeps equal items in their order: sort reversed, reverse back */
        for (size_t i = 0; i < n / 2; i++) {
            jv *t = it[i];
            it[i] = it[n - 1 - i], it[n - 1 - i] = t;
            t = keys[i], keys[i] = keys[n - 1 - i], keys[n - 1 - i] = t;
        }
    }
    msort(&c, keys, it, tk, ti, n);
    jv *out = jv_list(&I->a, n);
    for (size_t i = 0; i < n; i++) jv_append(&I->a, out, it[reverse ? n - 1 - i : i]);
    return out;
}

static jv *select_items(jinterp *I, jv *seq, const jargs *a, int attr, int keep, int line) {
    jv *out = jv_list(&I->a, 0);
    out->gen = 1;
    if (!jv_truthy(seq)) return out; /* jinja2: `if value:` before iterating */
    jv *items = je_iter(I, seq, line);
    int first = attr ? 1 : 0;
    jv *attrname = attr ? jarg(a, 0, NULL) : NULL;
    if (attr && !attrname) je_fail(I, line, "selectattr/rejectattr need an attribute");
    jv *test = jarg(a, first, NULL);
    const char *tname = test ? ja_strndup(&I->a, str_of(I, test)->u.s.p, str_of(I, test)->u.s.n) : NULL;
    jargs rest = {.pos = a->pos + (a->npos > first + 1 ? first + 1 : a->npos), .npos = a->npos > first + 1 ? a->npos - first - 1 : 0,
                  .kn = a->kn, .kv = a->kv, .nkw = a->nkw};
    for (size_t i = 0; i < items->u.list.n; i++) {
        jv *it = items->u.list.v[i], *v = attr ? attr_get(I, it, attrname, line) : it;
        int r = tname ? je_test(I, tname, v, &rest, line) : jv_truthy(v);
        if (r == keep) jv_append(&I->a, out, it);
    }
    return out;
}

static jv *tojson(jinterp *I, jv *v, const jargs *a, int line) {
    jv *ea = jarg(a, 0, "ensure_ascii"), *ind = jarg(a, 1, "indent"), *sep = jarg(a, 2, "separators"),
       *sk = jarg(a, 3, "sort_keys");
    const char *indent = NULL, *isep = NULL, *ksep = NULL;
    if (ind && ind->kind != JV_NONE) {
        if (ind->kind == JV_STR) indent = ja_strndup(&I->a, ind->u.s.p, ind->u.s.n);
        else if (ind->kind == JV_INT) {
            int64_t w = ind->u.i < 0 ? 0 : ind->u.i > 1000 ? 1000 : ind->u.i;
            char *sp = ja_alloc(&I->a, (size_t)w + 1);
            memset(sp, ' ', (size_t)w);
            indent = sp;
        } else je_fail(I, line, "tojson: indent must be an int or a str");
    }
    if (sep && sep->kind != JV_NONE) {
        if (sep->kind != JV_LIST || sep->u.list.n != 2 || sep->u.list.v[0]->kind != JV_STR || sep->u.list.v[1]->kind != JV_STR)
            je_fail(I, line, "tojson: separators must be a pair of strings");
        isep = ja_strndup(&I->a, sep->u.list.v[0]->u.s.p, sep->u.list.v[0]->u.s.n);
        ksep = ja_strndup(&I->a, sep->u.list.v[1]->u.s.p, sep->u.list.v[1]->u.s.n);
    }
    jbuf b = {.a = &I->a, .limit = I->o.max_output};
    jv_write_json(&b, v, indent, isep, ksep, opt_bool(sk, 0), 0, line);
    if (!opt_bool(ea, 0)) return jv_strref(&I->a, b.p ? b.p : "", b.n);
    jbuf o = {.a = &I->a, .limit = I->o.max_output}; /* ensure_ascii: \uXXXX (surrogate pairs) */
    for (size_t i = 0; i < b.n;) {
        unsigned char c = (unsigned char)b.p[i];
        if (c < 0x80) {
            jb_putc(&o, (char)c);
            i++;
            continue;
        }
        int k = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        unsigned cp = k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (int j = 1; j < k && i + (size_t)j < b.n; j++) cp = (cp << 6) | ((unsigned char)b.p[i + (size_t)j] & 0x3F);
        char hex[16];
        if (cp >= 0x10000) {
            cp -= 0x10000;
            snprintf(hex, sizeof hex, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else snprintf(hex, sizeof hex, "\\u%04x", cp);
        jb_puts(&o, hex);
        i += (size_t)k;
    }
    return jv_strref(&I->a, o.p ? o.p : "", o.n);
}

static jv *indent(jinterp *I, jv *s, const jargs *a, int line) {
    jv *w = jarg(a, 0, "width"), *first = jarg(a, 1, "first"), *blank = jarg(a, 2, "blank");
    jbuf ind = {.a = &I->a};
    if (w && w->kind == JV_STR) jb_put(&ind, w->u.s.p, w->u.s.n);
    else {
        int64_t n = w ? (w->kind == JV_INT ? w->u.i : -1) : 4;
        if (n < 0 || n > 1000) je_fail(I, line, "indent: bad width");
        for (int64_t i = 0; i < n; i++) jb_putc(&ind, ' ');
    }
    jbuf src = {.a = &I->a};
    jb_put(&src, s->u.s.p, s->u.s.n);
    jb_putc(&src, '\n'); /* jinja2 appends a newline before splitlines() */
    jv *lines = call_method(I, jv_strref(&I->a, src.p, src.n), "splitlines", NULL, NULL, NULL, line);
    jbuf o = {.a = &I->a, .limit = I->o.max_output};
    if (opt_bool(first, 0)) jb_put(&o, ind.p, ind.n);
    for (size_t i = 0; i < lines->u.list.n; i++) {
        jv *l = lines->u.list.v[i];
        if (i) {
            jb_putc(&o, '\n');
            if (opt_bool(blank, 0) || l->u.s.n) jb_put(&o, ind.p, ind.n);
        }
        jb_put(&o, l->u.s.p, l->u.s.n);
    }
    return jv_strref(&I->a, o.p ? o.p : "", o.n);
}

static jv *to_number(jinterp *I, jv *v, jv *def, int want_float, int line) {
    if (v->kind == JV_UNDEF) je_undefined(I, line, v); /* int(Undefined) raises, no default */
    if (v->kind == JV_INT || v->kind == JV_BOOL) return want_float ? jv_float(&I->a, (double)v->u.i) : jv_int(&I->a, v->u.i);
    if (v->kind == JV_FLOAT) return want_float ? v : jv_int(&I->a, (int64_t)v->u.f);
    if (v->kind == JV_STR) {
        char *s = ja_strndup(&I->a, v->u.s.p, v->u.s.n), *e;
        size_t k = 0;
        for (size_t i = 0; s[i]; i++)
            if (s[i] != '_') s[k++] = s[i];
        s[k] = 0;
        if (!want_float) {
            long long i = strtoll(s, &e, 10);
            while (*e == ' ' || *e == '\t' || *e == '\n') e++;
            if (e != s && !*e) return jv_int(&I->a, i);
        }
        double f = strtod(s, &e);
        while (*e == ' ' || *e == '\t' || *e == '\n') e++;
        if (e != s && !*e && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
            return want_float ? jv_float(&I->a, f) : jv_int(&I->a, (int64_t)f);
    }
    return def;
}

static jv *filter_now(jinterp *I, const char *f, jv *v, const jargs *a, int line);

/* jinja2's map, select, reject, selectattr, rejectattr, unique and items are generators: their
 * result is always true and has no length, and an error inside them is raised only when the
 * result is consumed. Here they run at once; an error is kept in the result (jv.poison) and
 * raised by whatever iterates it (je_iter). Limits (memory, output, iterations) are not deferred. */
static int is_generator_filter(const char *f) {
    static const char *const G[] = {"map", "select", "reject", "selectattr", "rejectattr", "unique", "items", NULL};
    for (const char *const *g = G; *g; g++)
        if (!strcmp(*g, f)) return 1;
    return 0;
}

jv *je_filter(jinterp *I, const char *f, jv *v, const jargs *a, int line) {
    if (!is_generator_filter(f)) return filter_now(I, f, v, a, line);
    jmp_buf saved;
    memcpy(saved, I->f->jb, sizeof saved);
    size_t mem_before = I->a.total;
    jv *volatile out = NULL;
    if (setjmp(I->f->jb) == 0) out = filter_now(I, f, v, a, line);
    memcpy(I->f->jb, saved, sizeof saved);
    if (!out) {
        int limit = I->f->st == STENO_E_NOMEM || I->iters > I->o.max_iterations ||
                    (I->a.limit && I->a.total + 65536 > I->a.limit && I->a.total > mem_before);
        if (limit) longjmp(I->f->jb, 1);
        jv *g = jv_list(&I->a, 0);
        g->gen = 1;
        g->poison = ja_strndup(&I->a, I->f->msg, strlen(I->f->msg));
        return g;
    }
    if (out->kind == JV_LIST && out->gen == 0) { /* a fresh list: mark it a generator */
        jv *g = jv_list(&I->a, 0);
        *g = *out;
        g->gen = 1;
        out = g;
    }
    return out;
}

static jv *filter_now(jinterp *I, const char *f, jv *v, const jargs *a, int line) {
    jarena *A = &I->a;
    jv *x0 = jarg(a, 0, NULL);
    if (!strcmp(f, "safe")) {
        jv *s = str_of(I, v);
        if (s->safe) return s;
        s = jv_strref(A, s->u.s.p, s->u.s.n);
        s->safe = 1;
        return s;
    }
    if (!strcmp(f, "string")) return str_of(I, v);
    if (!strcmp(f, "trim")) return call_method(I, str_of(I, v), "strip", jarg(a, 0, "chars"), NULL, NULL, line);
    if (!strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "capitalize"))
        return call_method(I, str_of(I, v), f, NULL, NULL, NULL, line);
    if (!strcmp(f, "title")) { /* jinja2: words start after -, whitespace, ( { [ <; word[0].upper() + rest.lower() */
        jv *s = str_of(I, v);
        jbuf b = {.a = A};
        size_t w = 0;
        for (size_t i = 0; i <= s->u.s.n; i++) {
            char c = i < s->u.s.n ? s->u.s.p[i] : ' ';
            int sep = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                      c == '(' || c == '{' || c == '[' || c == '<';
            if (!sep) continue;
            if (i > w) {
                size_t l;
                ju_cp(s->u.s.p, s->u.s.n, w, &l);
                jv *head = call_method(I, jv_strref(A, s->u.s.p + w, l), "upper", NULL, NULL, NULL, line);
                jv *rest = call_method(I, jv_strref(A, s->u.s.p + w + l, i - w - l), "lower", NULL, NULL, NULL, line);
                jb_put(&b, head->u.s.p, head->u.s.n);
                jb_put(&b, rest->u.s.p, rest->u.s.n);
            }
            if (i < s->u.s.n) jb_putc(&b, c);
            w = i + 1;
        }
        return jv_strref(A, b.p ? b.p : "", b.n);
    }
    if (!strcmp(f, "replace"))
        return call_method(I, str_of(I, v), "replace", jarg(a, 0, "old"), jarg(a, 1, "new"), jarg(a, 2, "count"), line);
    if (!strcmp(f, "length") || !strcmp(f, "count")) {
        switch (v->kind) {
        case JV_UNDEF: return jv_int(A, 0);
        case JV_STR: return jv_int(A, (int64_t)ju_len(v->u.s.p, v->u.s.n));
        case JV_LIST:
            if (v->gen) je_fail(I, line, "object of type 'generator' has no len()");
            return jv_int(A, (int64_t)v->u.list.n);
        case JV_DICT: if (!v->ns) return jv_int(A, (int64_t)v->u.dict.keys.n); /* fall through */
        default: je_fail(I, line, "object of type '%s' has no len()", jv_type_name(v));
        }
    }
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        jv *def = jarg(a, 0, "default_value"), *boolean = jarg(a, 1, "boolean");
        if (v->kind == JV_UNDEF || (opt_bool(boolean, 0) && !jv_truthy(v))) return def ? def : jv_strref(A, "", 0);
        return v;
    }
    if (!strcmp(f, "join")) {
        jv *d = jarg(a, 0, "d"), *attr = jarg(a, 1, "attribute");
        jv *items = je_iter(I, v, line);
        jbuf b = {.a = A, .limit = I->o.max_output};
        for (size_t i = 0; i < items->u.list.n; i++) {
            if (i && d) jv_write_str(&b, d);
            jv_write_str(&b, attr ? attr_get(I, items->u.list.v[i], attr, line) : items->u.list.v[i]);
        }
        return jv_strref(A, b.p ? b.p : "", b.n);
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        jv *items = je_iter(I, v, line);
        if (f[0] == 'l' && v->gen) je_fail(I, line, "'generator' object is not reversible");
        if (items->u.list.n == 0) return jv_undef(A, "!No first item, sequence was empty.");
        return items->u.list.v[f[0] == 'f' ? 0 : items->u.list.n - 1];
    }
    if (!strcmp(f, "list")) {
        jv *items = je_iter(I, v, line), *l = jv_list(A, items->u.list.n);
        for (size_t i = 0; i < items->u.list.n; i++) jv_append(A, l, items->u.list.v[i]);
        return l;
    }
    if (!strcmp(f, "items")) {
        if (v->kind == JV_UNDEF) return jv_list(A, 0);
        if (v->kind != JV_DICT || v->ns) je_fail(I, line, "Can only get item pairs from a mapping.");
        return je_method_call(I, v, "items", a, line);
    }
    if (!strcmp(f, "dictsort")) {
        if (v->kind != JV_DICT || v->ns) je_fail(I, line, "dictsort: expected a mapping");
        jv *cs = jarg(a, 0, "case_sensitive"), *by = jarg(a, 1, "by"), *rev = jarg(a, 2, "reverse");
        int by_value = by && by->kind == JV_STR && by->u.s.n == 5 && !memcmp(by->u.s.p, "value", 5);
        jargs none = {0};
        jv *items = je_method_call(I, v, "items", &none, line);
        jv **keys = ja_alloc(A, (items->u.list.n + 1) * sizeof(jv *));
        for (size_t i = 0; i < items->u.list.n; i++)
            keys[i] = lower_if_str(I, items->u.list.v[i]->u.list.v[by_value], opt_bool(cs, 0), line);
        return sorted(I, items, keys, opt_bool(rev, 0), line);
    }
    if (!strcmp(f, "sort")) {
        jv *rev = jarg(a, 0, "reverse"), *cs = jarg(a, 1, "case_sensitive"), *attr = jarg(a, 2, "attribute");
        jv *items = je_iter(I, v, line);
        jv **keys = ja_alloc(A, (items->u.list.n + 1) * sizeof(jv *));
        for (size_t i = 0; i < items->u.list.n; i++)
            keys[i] = lower_if_str(I, attr ? attr_get(I, items->u.list.v[i], attr, line) : items->u.list.v[i],
                                   opt_bool(cs, 0), line);
        return sorted(I, items, keys, opt_bool(rev, 0), line);
    }
    if (!strcmp(f, "reverse")) {
        if (v->kind == JV_STR) {
            jv *chars = je_iter(I, v, line);
            jbuf b = {.a = A};
            for (size_t i = chars->u.list.n; i-- > 0;) jb_put(&b, chars->u.list.v[i]->u.s.p, chars->u.list.v[i]->u.s.n);
            return jv_strref(A, b.p ? b.p : "", b.n);
        }
        jv *items = je_iter(I, v, line), *l = jv_list(A, items->u.list.n);
        for (size_t i = items->u.list.n; i-- > 0;) jv_append(A, l, items->u.list.v[i]);
        l->gen = !v->gen; /* reversed() of a sequence is an iterator; of a generator, list() reversed */
        return l;
    }
    if (!strcmp(f, "unique")) {
        jv *cs = jarg(a, 0, "case_sensitive"), *attr = jarg(a, 1, "attribute");
        jv *items = je_iter(I, v, line), *out = jv_list(A, 0), *seen = jv_list(A, 0);
        for (size_t i = 0; i < items->u.list.n; i++) {
            jv *it = items->u.list.v[i];
            jv *k = lower_if_str(I, attr ? attr_get(I, it, attr, line) : it, opt_bool(cs, 0), line);
            int dup = 0;
            for (size_t j = 0; j < seen->u.list.n && !dup; j++) {
                je_tick(I, line); /* quadratic: bounded like a loop */
                dup = jv_eq(seen->u.list.v[j], k);
            }
            if (!dup) {
                jv_append(A, seen, k);
                jv_append(A, out, it);
            }
        }
        return out;
    }
    if (!strcmp(f, "map")) {
        jv *out = jv_list(A, 0);
        out->gen = 1;
        if (!jv_truthy(v)) return out; /* jinja2: `if value:` before iterating */
        jv *items = je_iter(I, v, line);
        jv *attr = jarg(a, -1, "attribute"), *def = jarg(a, -1, "default");
        if (!attr && !x0) je_fail(I, line, "map: expected a filter name or attribute=");
        const char *fname = attr ? NULL : ja_strndup(A, str_of(I, x0)->u.s.p, str_of(I, x0)->u.s.n);
        jargs rest = {.pos = a->pos + (a->npos > 0), .npos = a->npos > 0 ? a->npos - 1 : 0, .kn = a->kn, .kv = a->kv, .nkw = a->nkw};
        for (size_t i = 0; i < items->u.list.n; i++) {
            jv *it = items->u.list.v[i], *r;
            if (attr) {
                r = attr_get(I, it, attr, line);
                if (r->kind == JV_UNDEF && def) r = def;
            } else r = je_filter(I, fname, it, &rest, line);
            jv_append(A, out, r);
        }
        return out;
    }
    if (!strcmp(f, "select")) return select_items(I, v, a, 0, 1, line);
    if (!strcmp(f, "reject")) return select_items(I, v, a, 0, 0, line);
    if (!strcmp(f, "selectattr")) return select_items(I, v, a, 1, 1, line);
    if (!strcmp(f, "rejectattr")) return select_items(I, v, a, 1, 0, line);
    if (!strcmp(f, "attr")) {
        if (!x0 || x0->kind != JV_STR) je_fail(I, line, "attr: expected a name");
        return je_getattr(I, v, ja_strndup(A, x0->u.s.p, x0->u.s.n), line);
    }
    if (!strcmp(f, "tojson")) return tojson(I, v, a, line);
    if (!strcmp(f, "int")) {
        jv *def = jarg(a, 0, "default");
        return to_number(I, v, def ? def : jv_int(A, 0), 0, line);
    }
    if (!strcmp(f, "float")) {
        jv *def = jarg(a, 0, "default");
        return to_number(I, v, def ? def : jv_float(A, 0.0), 1, line);
    }
    if (!strcmp(f, "abs")) {
        if (v->kind == JV_FLOAT) return jv_float(A, fabs(v->u.f));
        if (v->kind == JV_INT || v->kind == JV_BOOL) return jv_int(A, v->u.i < 0 ? -v->u.i : v->u.i);
        je_fail(I, line, "bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (!strcmp(f, "round")) {
        jv *prec = jarg(a, 0, "precision"), *method = jarg(a, 1, "method");
        int64_t p = prec && prec->kind == JV_INT ? prec->u.i : 0;
        const char *m = method && method->kind == JV_STR ? method->u.s.p : "common";
        if (!jv_is_num(v)) je_fail(I, line, "round: expected a number");
        if (p < -15 || p > 15) je_unsupported(I, line, "round: precision out of range");
        double scale = pow(10.0, (double)p), x = jv_num(v);
        if (!strncmp(m, "common", 6)) {
            if (v->kind != JV_FLOAT && p >= 0) return v->kind == JV_BOOL ? jv_int(A, v->u.i) : v;
            if (p >= 0) { /* Python rounds the exact binary value: glibc's %.*f does the same */
                char buf[400];
                snprintf(buf, sizeof buf, "%.*f", (int)p, x);
                return jv_float(A, strtod(buf, NULL));
            }
            return jv_float(A, nearbyint(x * scale) / scale); /* half to even, as round() */
        }
        if (!strncmp(m, "floor", 5)) return jv_float(A, floor(x * scale) / scale);
        if (!strncmp(m, "ceil", 4)) return jv_float(A, ceil(x * scale) / scale);
        je_fail(I, line, "method must be common, ceil or floor");
    }
    if (!strcmp(f, "indent")) { /* jinja2 appends "\n" to the value itself: a str only */
        if (v->kind != JV_STR) je_fail(I, line, "%s: expected a string, got '%s'", f, jv_type_name(v));
    }
    if (!strcmp(f, "indent")) return indent(I, v, a, line);
    if (!strcmp(f, "center")) {
        jv *w = jarg(a, 0, "width");
        return call_method(I, str_of(I, v), "center", w ? w : jv_int(A, 80), NULL, NULL, line);
    }
    if (!strcmp(f, "wordcount")) {
        jv *s = str_of(I, v);
        int64_t n = 0;
        int in = 0;
        for (size_t i = 0; i < s->u.s.n; i++) {
            unsigned char c = (unsigned char)s->u.s.p[i];
            int w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
            n += w && !in;
            in = w;
        }
        return jv_int(A, n);
    }
    if (!strcmp(f, "e") || !strcmp(f, "escape") || !strcmp(f, "forceescape")) {
        jv *s = str_of(I, v);
        if (s->safe && f[0] != 'f') return s;
        jbuf b = {.a = A};
        for (size_t i = 0; i < s->u.s.n; i++) {
            char c = s->u.s.p[i];
            if (c == '&') jb_puts(&b, "&amp;");
            else if (c == '<') jb_puts(&b, "&lt;");
            else if (c == '>') jb_puts(&b, "&gt;");
            else if (c == '"') jb_puts(&b, "&#34;");
            else if (c == '\'') jb_puts(&b, "&#39;");
            else jb_putc(&b, c);
        }
        jv *r = jv_strref(A, b.p ? b.p : "", b.n);
        r->safe = 1;
        return r;
    }
    if (!strcmp(f, "batch")) {
        jv *cnt = jarg(a, 0, "linecount"), *fill = jarg(a, 1, "fill_with");
        if (!cnt || cnt->kind != JV_INT || cnt->u.i <= 0) je_fail(I, line, "batch: expected a positive count");
        jv *items = je_iter(I, v, line), *out = jv_list(A, 0), *cur = NULL;
        for (size_t i = 0; i < items->u.list.n; i++) {
            if (!cur || (int64_t)cur->u.list.n == cnt->u.i) {
                cur = jv_list(A, 0);
                jv_append(A, out, cur);
            }
            jv_append(A, cur, items->u.list.v[i]);
        }
        if (cur && fill && fill->kind != JV_NONE)
            while ((int64_t)cur->u.list.n < cnt->u.i) jv_append(A, cur, fill);
        return out;
    }
    if (!strcmp(f, "sum")) {
        jv *attr = jarg(a, 0, "attribute"), *start = jarg(a, 1, "start");
        jv *items = je_iter(I, v, line), *acc = start ? start : jv_int(A, 0);
        for (size_t i = 0; i < items->u.list.n; i++) {
            jv *it = attr ? attr_get(I, items->u.list.v[i], attr, line) : items->u.list.v[i];
            if (!jv_is_num(acc) || !jv_is_num(it)) je_fail(I, line, "sum: unsupported operand types");
            acc = acc->kind == JV_FLOAT || it->kind == JV_FLOAT ? jv_float(A, jv_num(acc) + jv_num(it))
                                                                : jv_int(A, acc->u.i + it->u.i);
        }
        return acc;
    }
    if (!strcmp(f, "min") || !strcmp(f, "max")) {
        jv *cs = jarg(a, 0, "case_sensitive"), *attr = jarg(a, 1, "attribute");
        jv *items = je_iter(I, v, line), *best = NULL, *bk = NULL;
        for (size_t i = 0; i < items->u.list.n; i++) {
            jv *it = items->u.list.v[i];
            jv *k = lower_if_str(I, attr ? attr_get(I, it, attr, line) : it, opt_bool(cs, 0), line);
            int c;
            if (best && !jv_cmp(k, bk, &c)) je_fail(I, line, "%s: values cannot be compared", f);
            if (!best || (f[1] == 'i' ? c < 0 : c > 0)) best = it, bk = k;
        }
        return best ? best : jv_undef(A, "!No aggregated item, sequence was empty.");
    }
    je_unsupported(I, line, "unknown filter '%s'", f);
}
