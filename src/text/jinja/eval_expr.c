/* eval_expr.c — expressions with Python's semantics as jinja2 evaluates them: arithmetic on
 * int/float/str/list (int stays int, / always gives float, // and % floor like Python), ~,
 * comparisons (mixed types that Python cannot order are an error), and/or returning an operand,
 * `in`, conditional expressions (a missing else gives Undefined), attribute and item access
 * (jinja2's Environment.getattr/getitem: attribute first for .name, item first for [key], a
 * miss gives Undefined), Python slices, calls. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "text/jinja/eval.h"

static jv *undef_msg(jinterp *I, const char *fmt, const char *a, const char *b) {
    char msg[200];
    snprintf(msg, sizeof msg, fmt, a, b);
    size_t n = strlen(msg);
    char *m = ja_alloc(&I->a, n + 2);
    m[0] = '!'; /* je_undefined prints a message, not a name */
    memcpy(m + 1, msg, n);
    return jv_undef(&I->a, m);
}

static _Noreturn void type_error(jinterp *I, int line, const char *op, const jv *a, const jv *b) {
    if (a->kind == JV_UNDEF) je_undefined(I, line, a);
    if (b && b->kind == JV_UNDEF) je_undefined(I, line, b);
    if (b)
        je_fail(I, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, jv_type_name(a), jv_type_name(b));
    je_fail(I, line, "bad operand type for unary %s: '%s'", op, jv_type_name(a));
}

static int is_int(const jv *v) { return v->kind == JV_INT || v->kind == JV_BOOL; }

static jv *repeat(jinterp *I, const jv *seq, int64_t times, int line) {
    if (times < 0 || (seq->kind == JV_STR ? seq->u.s.n : seq->u.list.n) == 0) times = 0; /* [] * 10**17: no loop */
    size_t unit = seq->kind == JV_STR ? seq->u.s.n : seq->u.list.n * sizeof(jv *);
    if (unit && (uint64_t)times > I->o.max_memory / unit) je_fail(I, line, "repetition too large");
    if (seq->kind == JV_STR) {
        char *p = ja_alloc(&I->a, unit * (size_t)times + 1);
        for (int64_t i = 0; i < times; i++) memcpy(p + unit * (size_t)i, seq->u.s.p, unit);
        return jv_strref(&I->a, p, unit * (size_t)times);
    }
    jv *l = jv_list(&I->a, seq->u.list.n * (size_t)times);
    l->tuple = seq->tuple;
    for (int64_t i = 0; i < times; i++)
        for (size_t k = 0; k < seq->u.list.n; k++) jv_append(&I->a, l, seq->u.list.v[k]);
    return l;
}

/* Python's str % args for %s %r %d %i %f %x %% with an optional width and precision. */
static jv *percent_format(jinterp *I, jv *fmt, jv *args, int line) {
    jv *one[1] = {args};
    jv **av = one;
    size_t an = 1, ai = 0;
    if (args->kind == JV_LIST && args->tuple) av = args->u.list.v, an = args->u.list.n;
    jbuf b = {.a = &I->a, .limit = I->o.max_output};
    const char *p = fmt->u.s.p, *e = p + fmt->u.s.n;
    while (p < e) {
        if (*p != '%') {
            jb_putc(&b, *p++);
            continue;
        }
        p++;
        int left = 0, width = 0, prec = -1;
        while (p < e && (*p == '-' || *p == ' ' || *p == '+' || *p == '0')) left |= *p++ == '-';
        while (p < e && *p >= '0' && *p <= '9' && width < 10000) width = width * 10 + (*p++ - '0');
        if (p < e && *p == '.') {
            prec = 0;
            for (p++; p < e && *p >= '0' && *p <= '9' && prec < 100; p++) prec = prec * 10 + (*p - '0');
        }
        if (p >= e) je_fail(I, line, "incomplete format");
        char c = *p++;
        if (c == '%') {
            jb_putc(&b, '%');
            continue;
        }
        if (ai >= an) je_fail(I, line, "not enough arguments for format string");
        jv *v = av[ai++];
        jbuf t = {.a = &I->a};
        char tmp[420];
        if (c == 's' || c == 'r') {
            if (c == 's') jv_write_str(&t, v);
            else jv_write_repr(&t, v);
            if (prec >= 0 && (size_t)prec < t.n) t.n = ju_off(t.p, t.n, (size_t)prec);
        } else if (c == 'd' || c == 'i' || c == 'f' || c == 'F' || c == 'x' || c == 'X') {
            if (!jv_is_num(v)) je_fail(I, line, "%%%c format: a real number is required, not %s", c, jv_type_name(v));
            if (c == 'f' || c == 'F') snprintf(tmp, sizeof tmp, "%.*f", prec < 0 ? 6 : prec, jv_num(v));
            else {
                int64_t iv = v->kind == JV_FLOAT ? (int64_t)v->u.f : v->u.i;
                snprintf(tmp, sizeof tmp, c == 'x' ? "%" PRIx64 : c == 'X' ? "%" PRIX64 : "%" PRId64, iv);
            }
            jb_puts(&t, tmp);
        } else je_unsupported(I, line, "format character '%c' is not supported", c);
        size_t len = t.n ? ju_len(t.p, t.n) : 0;
        if (!left)
            for (size_t k = len; k < (size_t)width; k++) jb_putc(&b, ' ');
        jb_put(&b, t.p ? t.p : "", t.n);
        if (left)
            for (size_t k = len; k < (size_t)width; k++) jb_putc(&b, ' ');
    }
    if (ai < an && args->kind != JV_DICT) je_fail(I, line, "not all arguments converted during string formatting");
    return jv_strref(&I->a, b.p ? b.p : "", b.n);
}

static jv *binop(jinterp *I, const char *op, jv *a, jv *b, int line) {
    jarena *A = &I->a;
    if (op[0] == '~') {
        jbuf s = {.a = A};
        jv_write_str(&s, a);
        jv_write_str(&s, b);
        return jv_strref(A, s.p ? s.p : "", s.n);
    }
    int nums = jv_is_num(a) && jv_is_num(b), ints = is_int(a) && is_int(b);
    int64_t r;
    switch (op[0]) {
    case '+':
        if (ints) {
            if (__builtin_add_overflow(a->u.i, b->u.i, &r)) je_fail(I, line, "integer overflow");
            return jv_int(A, r);
        }
        if (nums) return jv_float(A, jv_num(a) + jv_num(b));
        if (a->kind == JV_STR && b->kind == JV_STR && a->safe != b->safe) { /* Markup escapes the str */
            jargs none = {0};
            jv *esc = je_filter(I, "escape", a->safe ? b : a, &none, line), *r;
            r = binop(I, op, a->safe ? a : esc, a->safe ? esc : b, line);
            r->safe = 1;
            return r;
        }
        if (a->kind == JV_STR && b->kind == JV_STR) {
            char *p = ja_alloc(A, a->u.s.n + b->u.s.n + 1);
            memcpy(p, a->u.s.p, a->u.s.n);
            memcpy(p + a->u.s.n, b->u.s.p, b->u.s.n);
            jv *r = jv_strref(A, p, a->u.s.n + b->u.s.n);
            r->safe = a->safe; /* Markup + Markup stays Markup */
            return r;
        }
        if (a->kind == JV_LIST && b->kind == JV_LIST && a->tuple == b->tuple && !a->gen && !b->gen) {
            jv *l = jv_list(A, a->u.list.n + b->u.list.n);
            l->tuple = a->tuple;
            for (size_t i = 0; i < a->u.list.n; i++) jv_append(A, l, a->u.list.v[i]);
            for (size_t i = 0; i < b->u.list.n; i++) jv_append(A, l, b->u.list.v[i]);
            return l;
        }
        if (a->kind == JV_STR || a->kind == JV_LIST) {
            if (b->kind == JV_UNDEF) je_undefined(I, line, b);
            je_fail(I, line, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b),
                    jv_type_name(a));
        }
        type_error(I, line, "+", a, b);
    case '-':
        if (ints) {
            if (__builtin_sub_overflow(a->u.i, b->u.i, &r)) je_fail(I, line, "integer overflow");
            return jv_int(A, r);
        }
        if (nums) return jv_float(A, jv_num(a) - jv_num(b));
        type_error(I, line, "-", a, b);
    case '*':
        if (op[1] == '*') {
            if (ints && b->u.i >= 0) {
                int64_t x = 1, base = a->u.i; /* by squaring: 0 ** 10**15 must not loop */
                for (int64_t e = b->u.i; e > 0;) {
                    if ((e & 1) && __builtin_mul_overflow(x, base, &x)) je_fail(I, line, "integer overflow");
                    e >>= 1;
                    if (e && __builtin_mul_overflow(base, base, &base)) je_fail(I, line, "integer overflow");
                }
                return jv_int(A, x);
            }
            if (nums) {
                if (jv_num(a) == 0 && jv_num(b) < 0) je_fail(I, line, "0.0 cannot be raised to a negative power");
                return jv_float(A, pow(jv_num(a), jv_num(b)));
            }
            type_error(I, line, "** or pow()", a, b);
        }
        if (ints) {
            if (__builtin_mul_overflow(a->u.i, b->u.i, &r)) je_fail(I, line, "integer overflow");
            return jv_int(A, r);
        }
        if (nums) return jv_float(A, jv_num(a) * jv_num(b));
        if ((a->kind == JV_STR || a->kind == JV_LIST) && is_int(b)) return repeat(I, a, b->u.i, line);
        if ((b->kind == JV_STR || b->kind == JV_LIST) && is_int(a)) return repeat(I, b, a->u.i, line);
        type_error(I, line, "*", a, b);
    case '/':
        if (!nums) type_error(I, line, op, a, b);
        if (jv_num(b) == 0) je_fail(I, line, "division by zero");
        if (op[1] == '/') {
            if (ints) {
                if (b->u.i == -1 && a->u.i == INT64_MIN) je_fail(I, line, "integer overflow");
                int64_t q = a->u.i / b->u.i;
                if ((a->u.i % b->u.i != 0) && ((a->u.i < 0) != (b->u.i < 0))) q--;
                return jv_int(A, q);
            }
            return jv_float(A, floor(jv_num(a) / jv_num(b)));
        }
        return jv_float(A, jv_num(a) / jv_num(b));
    case '%':
        if (a->kind == JV_STR) return percent_format(I, a, b, line);
        if (!nums) type_error(I, line, "%", a, b);
        if (jv_num(b) == 0) je_fail(I, line, "modulo by zero");
        if (ints) {
            if (b->u.i == -1) return jv_int(A, 0);
            int64_t m = a->u.i % b->u.i;
            if (m != 0 && ((m < 0) != (b->u.i < 0))) m += b->u.i;
            return jv_int(A, m);
        } else {
            double x = jv_num(a), y = jv_num(b), m = fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            return jv_float(A, m);
        }
    }
    je_fail(I, line, "internal: operator %s", op);
}

static int contains(jinterp *I, jv *item, jv *c, int line) {
    switch (c->kind) {
    case JV_STR:
        if (item->kind == JV_UNDEF) je_undefined(I, line, item);
        if (item->kind != JV_STR) je_fail(I, line, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        if (item->u.s.n == 0) return 1;
        return memmem(c->u.s.p, c->u.s.n, item->u.s.p, item->u.s.n) != NULL; /* linear (two-way) */
    case JV_LIST:
        je_check_poison(I, c);
        for (size_t i = 0; i < c->u.list.n; i++)
            if (jv_eq(c->u.list.v[i], item)) return 1;
        return 0;
    case JV_DICT:
        if ((item->kind == JV_LIST && !item->tuple && !item->gen) || (item->kind == JV_DICT && !item->ns))
            je_fail(I, line, "unhashable type: '%s'", jv_type_name(item));
        return jv_dict_getv(c, item) != NULL;
    case JV_UNDEF: return 0;
    default: je_fail(I, line, "argument of type '%s' is not iterable", jv_type_name(c));
    }
}

static int compare(jinterp *I, const char *op, jv *a, jv *b, int line) {
    if (!strcmp(op, "==")) return jv_eq(a, b);
    if (!strcmp(op, "!=")) return !jv_eq(a, b);
    if (!strcmp(op, "in")) return contains(I, a, b, line);
    if (!strcmp(op, "notin")) return !contains(I, a, b, line);
    int c;
    if (a->kind == JV_UNDEF) je_undefined(I, line, a);
    if (b->kind == JV_UNDEF) je_undefined(I, line, b);
    if (!jv_cmp(a, b, &c))
        je_fail(I, line, "'%s' not supported between instances of '%s' and '%s'", op, jv_type_name(a), jv_type_name(b));
    if (op[0] == '<') return op[1] ? c <= 0 : c < 0;
    return op[1] ? c >= 0 : c > 0;
}

jv *je_iter(jinterp *I, jv *v, int line) {
    je_check_poison(I, v);
    switch (v->kind) {
    case JV_LIST: return v;
    case JV_UNDEF: return jv_list(&I->a, 0);
    case JV_DICT: {
        jv *l = jv_list(&I->a, v->u.dict.keys.n);
        if (v->ns) je_fail(I, line, "'Namespace' object is not iterable");
        for (size_t i = 0; i < v->u.dict.keys.n; i++) jv_append(&I->a, l, v->u.dict.keys.v[i]);
        return l;
    }
    case JV_STR: {
        jv *l = jv_list(&I->a, v->u.s.n);
        for (size_t i = 0; i < v->u.s.n;) {
            size_t j = i + 1;
            while (j < v->u.s.n && ((unsigned char)v->u.s.p[j] & 0xC0) == 0x80) j++;
            jv_append(&I->a, l, jv_strref(&I->a, v->u.s.p + i, j - i));
            i = j;
        }
        return l;
    }
    default: je_fail(I, line, "'%s' object is not iterable", jv_type_name(v));
    }
}

static jv *loop_attr(jinterp *I, jv *lv, const char *name) {
    jloop *L = lv->u.loop;
    int64_t i = (int64_t)L->i, n = (int64_t)L->items->n;
    jarena *A = &I->a;
    if (!strcmp(name, "index")) return jv_int(A, i + 1);
    if (!strcmp(name, "index0")) return jv_int(A, i);
    if (!strcmp(name, "first")) return JV_BOOLV(i == 0);
    if (!strcmp(name, "last")) return JV_BOOLV(i == n - 1);
    if (!strcmp(name, "length")) return jv_int(A, n);
    if (!strcmp(name, "revindex")) return jv_int(A, n - i);
    if (!strcmp(name, "revindex0")) return jv_int(A, n - i - 1);
    if (!strcmp(name, "depth")) return jv_int(A, 1);
    if (!strcmp(name, "depth0")) return jv_int(A, 0);
    if (!strcmp(name, "previtem")) return i > 0 ? L->items->v[i - 1] : jv_undef(A, "there is no previous item");
    if (!strcmp(name, "nextitem")) return i + 1 < n ? L->items->v[i + 1] : jv_undef(A, "there is no next item");
    if (!strcmp(name, "cycle")) return jv_func(A, JF_CYCLE, "cycle", lv, NULL, NULL);
    return undef_msg(I, "'LoopContext' object has no attribute '%s'%s", name, "");
}

jv *je_getattr(jinterp *I, jv *obj, const char *name, int line) {
    if (obj->kind == JV_UNDEF) je_undefined(I, line, obj);
    if (obj->kind == JV_LOOP) return loop_attr(I, obj, name);
    if (name[0] == '_') return undef_msg(I, "access to attribute '%s' of '%s' object is unsafe.", name, jv_type_name(obj));
    if (obj->kind == JV_DICT && obj->ns) {
        jv *v = jv_dict_get(obj, name, strlen(name));
        return v ? v : undef_msg(I, "'%s' has no attribute '%s'", "Namespace", name);
    }
    jv *m = je_method_get(I, obj, name);
    if (m) return m;
    if (obj->kind == JV_DICT) {
        jv *v = jv_dict_get(obj, name, strlen(name));
        if (v) return v;
    }
    return undef_msg(I, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
}

static int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + (int64_t)n : i; }

jv *je_getitem(jinterp *I, jv *obj, jv *key, int line) {
    if (obj->kind == JV_UNDEF) je_undefined(I, line, obj);
    if (obj->kind == JV_DICT && !obj->ns) {
        jv *v = jv_dict_getv(obj, key);
        if (v) return v;
    } else if ((obj->kind == JV_LIST || obj->kind == JV_STR) && is_int(key) && !obj->gen) {
        size_t n = obj->kind == JV_LIST ? obj->u.list.n : ju_len(obj->u.s.p, obj->u.s.n);
        int64_t i = norm_index(key->u.i, n);
        if (i >= 0 && i < (int64_t)n) {
            if (obj->kind == JV_LIST) return obj->u.list.v[i];
            size_t b = ju_off(obj->u.s.p, obj->u.s.n, (size_t)i), e = ju_off(obj->u.s.p, obj->u.s.n, (size_t)i + 1);
            return jv_strref(&I->a, obj->u.s.p + b, e - b);
        }
        return undef_msg(I, "%s index out of range%s", jv_type_name(obj), "");
    }
    if (key->kind == JV_STR) {
        char *name = ja_strndup(&I->a, key->u.s.p, key->u.s.n);
        if (obj->kind == JV_LOOP || (obj->kind == JV_DICT && obj->ns)) return je_getattr(I, obj, name, line);
        if (name[0] != '_') {
            jv *m = je_method_get(I, obj, name);
            if (m) return m;
        }
        return undef_msg(I, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
    }
    return undef_msg(I, "'%s object' has no item%s", jv_type_name(obj), "");
}

/* Python's slice.indices and the slice itself, on a list/tuple or a str's code points. */
static jv *slice(jinterp *I, jv *obj, jv *start, jv *stop, jv *step, int line) {
    if (obj->kind == JV_UNDEF) je_undefined(I, line, obj);
    jv *parts[3] = {start, stop, step};
    for (int k = 0; k < 3; k++)
        if (parts[k] && parts[k]->kind != JV_NONE && !is_int(parts[k]))
            je_fail(I, line, "slice indices must be integers or None");
    /* jinja2 compiles a slice to Python's own obj[a:b:c], not to getitem: no Undefined on a miss */
    if (obj->kind != JV_LIST && obj->kind != JV_STR) je_fail(I, line, "'%s' object is not subscriptable", jv_type_name(obj));
    if (obj->gen) je_fail(I, line, "'generator' object is not subscriptable");
    int64_t n = obj->kind == JV_LIST ? (int64_t)obj->u.list.n : (int64_t)ju_len(obj->u.s.p, obj->u.s.n);
    int64_t st = step && step->kind != JV_NONE ? step->u.i : 1;
    if (st == 0) je_fail(I, line, "slice step cannot be zero");
    int64_t lo, hi;
    if (!start || start->kind == JV_NONE) lo = st < 0 ? n - 1 : 0;
    else {
        lo = start->u.i < 0 ? start->u.i + n : start->u.i;
        if (lo < 0) lo = st < 0 ? -1 : 0;
        if (lo >= n) lo = st < 0 ? n - 1 : n;
    }
    if (!stop || stop->kind == JV_NONE) hi = st < 0 ? -1 : n;
    else {
        hi = stop->u.i < 0 ? stop->u.i + n : stop->u.i;
        if (hi < 0) hi = st < 0 ? -1 : 0;
        if (hi >= n) hi = st < 0 ? n - 1 : n;
    }
    if (obj->kind == JV_LIST) {
        jv *l = jv_list(&I->a, 0);
        l->tuple = obj->tuple;
        for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) jv_append(&I->a, l, obj->u.list.v[i]);
        return l;
    }
    jv *chars = je_iter(I, obj, line);
    jbuf b = {.a = &I->a};
    for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
        jv *c = chars->u.list.v[i];
        jb_put(&b, c->u.s.p, c->u.s.n);
    }
    return jv_strref(&I->a, b.p ? b.p : "", b.n);
}

jv *je_call(jinterp *I, jv *fn, const jargs *args, int line) {
    if (fn->kind == JV_UNDEF) je_undefined(I, line, fn);
    if (fn->kind != JV_FUNC) je_fail(I, line, "'%s' object is not callable", jv_type_name(fn));
    switch (fn->u.fn.fk) {
    case JF_GLOBAL: return je_call_global(I, fn->u.fn.name, args, line);
    case JF_METHOD: return je_method_call(I, fn->u.fn.self, fn->u.fn.name, args, line);
    case JF_MACRO:
    case JF_CALLER: return je_render_macro(I, fn, args, line);
    case JF_CYCLE: {
        if (args->npos == 0) je_fail(I, line, "no items for cycling given");
        return args->pos[fn->u.fn.self->u.loop->i % (size_t)args->npos];
    }
    default: je_fail(I, line, "'%s' is not callable", fn->u.fn.name);
    }
}

static jargs eval_args(jinterp *I, const jnode *n, jframe *F) {
    jargs a = {.npos = n->nkids, .nkw = n->nnames, .kn = n->names};
    a.pos = ja_alloc(&I->a, (size_t)(n->nkids + n->nnames + 1) * sizeof(jv *));
    a.kv = a.pos + n->nkids;
    for (int i = 0; i < n->nkids; i++) a.pos[i] = je_expr(I, n->kids[i], F);
    for (int i = 0; i < n->nnames; i++) a.kv[i] = je_expr(I, n->defs[i], F);
    return a;
}

jv *je_expr(jinterp *I, const jnode *n, jframe *F) {
    jarena *A = &I->a;
    switch (n->type) {
    case JN_CONST: return n->val;
    case JN_NAME: return je_lookup(I, F, n->name);
    case JN_LIST:
    case JN_TUPLE: {
        jv *l = jv_list(A, (size_t)n->nkids);
        l->tuple = n->type == JN_TUPLE;
        for (int i = 0; i < n->nkids; i++) jv_append(A, l, je_expr(I, n->kids[i], F));
        return l;
    }
    case JN_DICT: {
        jv *d = jv_dict(A);
        for (int i = 0; i < n->nkids; i++) {
            jv *k = je_expr(I, n->kids[i], F);
            if (k->kind == JV_LIST && !k->tuple) je_fail(I, n->line, "unhashable type: 'list'");
            if (k->kind == JV_DICT) je_fail(I, n->line, "unhashable type: 'dict'");
            jv_dict_set(A, d, k, je_expr(I, n->defs[i], F));
        }
        return d;
    }
    case JN_BINOP: {
        jv *a = je_expr(I, n->a, F), *b = je_expr(I, n->b, F);
        return binop(I, n->op, a, b, n->line);
    }
    case JN_NOT: return JV_BOOLV(!jv_truthy(je_expr(I, n->a, F)));
    case JN_NEG:
    case JN_POS: {
        jv *v = je_expr(I, n->a, F);
        if (!jv_is_num(v)) type_error(I, n->line, n->type == JN_NEG ? "-" : "+", v, NULL);
        if (n->type == JN_POS) return v->kind == JV_BOOL ? jv_int(A, v->u.i) : v;
        if (v->kind == JV_FLOAT) return jv_float(A, -v->u.f);
        if (v->u.i == INT64_MIN) je_fail(I, n->line, "integer overflow");
        return jv_int(A, -v->u.i);
    }
    case JN_AND: {
        jv *a = je_expr(I, n->a, F);
        return jv_truthy(a) ? je_expr(I, n->b, F) : a;
    }
    case JN_OR: {
        jv *a = je_expr(I, n->a, F);
        return jv_truthy(a) ? a : je_expr(I, n->b, F);
    }
    case JN_COMPARE: {
        jv *l = je_expr(I, n->a, F);
        for (int i = 0; i < n->nkids; i++) {
            jv *r = je_expr(I, n->kids[i], F);
            if (!compare(I, n->ops[i], l, r, n->line)) return JV_FALSE;
            l = r;
        }
        return JV_TRUE;
    }
    case JN_COND:
        if (jv_truthy(je_expr(I, n->a, F))) return je_expr(I, n->b, F);
        return n->c ? je_expr(I, n->c, F) : jv_undef(A, NULL);
    case JN_GETATTR: return je_getattr(I, je_expr(I, n->a, F), n->name, n->line);
    case JN_GETITEM: {
        jv *o = je_expr(I, n->a, F);
        return je_getitem(I, o, je_expr(I, n->b, F), n->line);
    }
    case JN_SLICE: {
        jv *o = je_expr(I, n->a, F), *p[3];
        for (int k = 0; k < 3; k++) p[k] = n->kids[k] ? je_expr(I, n->kids[k], F) : NULL;
        return slice(I, o, p[0], p[1], p[2], n->line);
    }
    case JN_CALL: {
        jv *fn = je_expr(I, n->a, F);
        jargs a = eval_args(I, n, F);
        return je_call(I, fn, &a, n->line);
    }
    case JN_FILTER: {
        jv *subj = je_expr(I, n->a, F);
        jargs a = eval_args(I, n, F);
        return je_filter(I, n->name, subj, &a, n->line);
    }
    case JN_TEST: {
        jv *subj = je_expr(I, n->a, F);
        jargs a = eval_args(I, n, F);
        int r = je_test(I, n->name, subj, &a, n->line);
        return JV_BOOLV(n->neg ? !r : r);
    }
    default: je_fail(I, n->line, "internal: expression %d", n->type);
    }
}
