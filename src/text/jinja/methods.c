/* methods.c — the methods templates call on values, as Python's str, dict and list have them
 * (strip/split/startswith/replace/format/..., items/keys/values/get, index/count). Under
 * jinja2's ImmutableSandboxedEnvironment the mutating ones (list.append, dict.update, ...) are
 * "unsafe": reading them gives an Undefined that prints as "" and fails when called, as here.
 * Letter case (upper, lower, title, capitalize, islower, ...) is ASCII's; whitespace is Python's
 * str.isspace set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/eval.h"

static const char *const STR_METHODS[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith",
                                          "upper", "lower", "title", "capitalize", "swapcase", "replace", "find",
                                          "rfind", "index", "rindex", "count", "format", "join", "splitlines",
                                          "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
                                          "isnumeric", "isdecimal", "ljust", "rjust", "center", "zfill",
                                          "removeprefix", "removesuffix", "partition", "rpartition", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "copy", NULL};
static const char *const DICT_UNSAFE[] = {"pop", "popitem", "setdefault", "update", "clear", NULL};
static const char *const LIST_METHODS[] = {"index", "count", "copy", NULL};
static const char *const LIST_UNSAFE[] = {"append", "pop", "insert", "extend", "remove", "sort", "reverse", "clear",
                                          NULL};

static int in_list(const char *const *l, const char *name) {
    for (; *l; l++)
        if (!strcmp(*l, name)) return 1;
    return 0;
}

jv *je_method_get(jinterp *I, jv *obj, const char *name) {
    const char *const *safe = NULL, *const *unsafe = NULL;
    if (obj->kind == JV_STR) safe = STR_METHODS;
    else if (obj->kind == JV_DICT && !obj->ns) safe = DICT_METHODS, unsafe = DICT_UNSAFE;
    else if (obj->kind == JV_LIST && !obj->tuple) safe = LIST_METHODS, unsafe = LIST_UNSAFE;
    else if (obj->kind == JV_LIST) safe = LIST_METHODS; /* a tuple's index and count */
    if (safe && in_list(safe, name)) return jv_func(&I->a, JF_METHOD, name, obj, NULL, NULL);
    if (unsafe && in_list(unsafe, name)) {
        char msg[128];
        snprintf(msg, sizeof msg, "!access to attribute '%s' of '%s' object is unsafe.", name, jv_type_name(obj));
        return jv_undef(&I->a, ja_strndup(&I->a, msg, strlen(msg)));
    }
    return NULL;
}

/* Does code point c occur in chars (a str), or is it whitespace when chars is NULL? */
static int strip_hit(unsigned c, const jv *chars) {
    if (!chars) return ju_space(c);
    for (size_t i = 0; i < chars->u.s.n;) {
        size_t l;
        if (ju_cp(chars->u.s.p, chars->u.s.n, i, &l) == c) return 1;
        i += l;
    }
    return 0;
}

static jv *strip(jinterp *I, jv *s, jv *chars, int left, int right) {
    const char *p = s->u.s.p;
    size_t b = 0, e = s->u.s.n, l;
    if (left)
        while (b < e && strip_hit(ju_cp(p, e, b, &l), chars)) b += l;
    if (right)
        while (e > b) {
            size_t k = e - 1;
            while (k > b && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
            if (!strip_hit(ju_cp(p, e, k, &l), chars)) break;
            e = k;
        }
    return jv_strref(&I->a, p + b, e - b);
}

static int alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Python's str.upper/lower/swapcase/capitalize/title over code points ('u', 'l', 's', 'c', 't'). */
static jv *recase(jinterp *I, jv *s, char mode) {
    jbuf b = {.a = &I->a};
    int prev_cased = 0, first = 1;
    for (size_t i = 0, l; i < s->u.s.n; i += l) {
        unsigned c = ju_cp(s->u.s.p, s->u.s.n, i, &l), o;
        int to_up;
        switch (mode) {
        case 'u': to_up = 1; break;
        case 'l': to_up = 0; break;
        case 's': to_up = ju_lower(c) != c ? 0 : 1; break;
        case 'c': to_up = first; break;
        default: to_up = !prev_cased; break; /* title: a letter after a cased letter is lowered */
        }
        if (mode == 's' && ju_lower(c) == c && ju_upper(c) == c) to_up = -1;
        prev_cased = ju_cased(c);
        first = 0;
        char enc[8];
        if (to_up == 1 && c == 0xDF) { /* ß */
            jb_puts(&b, mode == 'u' || mode == 's' ? "SS" : "Ss");
            continue;
        }
        o = to_up < 0 ? c : to_up ? ju_upper(c) : ju_lower(c);
        if (o == c) jb_put(&b, s->u.s.p + i, l); /* malformed bytes stay as they are */
        else jb_put(&b, enc, ju_put(enc, o));
    }
    return jv_strref(&I->a, b.p ? b.p : "", b.n);
}

static jv *need_str(jinterp *I, jv *v, const char *what, int line) {
    if (!v || v->kind != JV_STR) je_fail(I, line, "%s: expected a string argument", what);
    return v;
}

static char *reversed(jarena *a, const char *s, size_t n) {
    char *r = ja_alloc(a, n + 1);
    for (size_t i = 0; i < n; i++) r[i] = s[n - 1 - i];
    return r;
}

/* The first (or last) occurrence of nd in h: glibc's memmem is linear (two-way), so a hostile
 * template cannot make a search cost |h| x |nd|; the last one is the first in the reversed bytes. */
static const char *find(jarena *a, const char *h, size_t hn, const char *nd, size_t nn, int last) {
    if (nn > hn) return NULL;
    if (!last) return memmem(h, hn, nd, nn);
    const char *rh = reversed(a, h, hn), *r = memmem(rh, hn, reversed(a, nd, nn), nn);
    return r ? h + (hn - (size_t)(r - rh) - nn) : NULL;
}

static jv *split(jinterp *I, jv *s, jv *sep, int64_t maxsplit, int from_right, int line) {
    jv *out = jv_list(&I->a, 0);
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    if (sep && sep->kind != JV_NONE) {
        need_str(I, sep, "split", line);
        if (sep->u.s.n == 0) je_fail(I, line, "empty separator");
        if (!from_right) {
            size_t b = 0;
            const char *f;
            while (maxsplit != 0 && (f = find(&I->a, p + b, n - b, sep->u.s.p, sep->u.s.n, 0))) {
                jv_append(&I->a, out, jv_strref(&I->a, p + b, (size_t)(f - (p + b))));
                b = (size_t)(f - p) + sep->u.s.n;
                maxsplit--;
            }
            jv_append(&I->a, out, jv_strref(&I->a, p + b, n - b));
            return out;
        }
        /* from the right: split the reversed bytes from the left, then reverse back (linear) */
        const char *rp = reversed(&I->a, p, n), *rs = reversed(&I->a, sep->u.s.p, sep->u.s.n), *f;
        jv *rev = jv_list(&I->a, 0);
        size_t b = 0;
        while (maxsplit != 0 && (f = memmem(rp + b, n - b, rs, sep->u.s.n))) {
            size_t at = (size_t)(f - rp); /* [b, at) reversed is a part */
            jv_append(&I->a, rev, jv_strref(&I->a, p + (n - at), at - b));
            b = at + sep->u.s.n;
            maxsplit--;
        }
        jv_append(&I->a, rev, jv_strref(&I->a, p, n - b));
        for (size_t i = rev->u.list.n; i-- > 0;) jv_append(&I->a, out, rev->u.list.v[i]);
        return out;
    }
    /* runs of whitespace; no empty strings */
    jv *parts = jv_list(&I->a, 0);
    size_t i = 0, l;
    if (!from_right) {
        while (i < n) {
            while (i < n && ju_space(ju_cp(p, n, i, &l))) i += l;
            if (i >= n) break;
            if (maxsplit == 0) { /* the rest as it is, trailing whitespace included */
                jv_append(&I->a, parts, jv_strref(&I->a, p + i, n - i));
                break;
            }
            size_t b = i;
            while (i < n && !ju_space(ju_cp(p, n, i, &l))) i += l;
            jv_append(&I->a, parts, jv_strref(&I->a, p + b, i - b));
            maxsplit--;
        }
        return parts;
    }
    jv *all = split(I, s, NULL, -1, 0, line);
    size_t cnt = all->u.list.n;
    if (maxsplit < 0 || (size_t)maxsplit >= cnt) return all;
    /* the first cnt - maxsplit words stay as in the source, leading whitespace included */
    jv *last_kept = all->u.list.v[cnt - (size_t)maxsplit - 1];
    size_t end = (size_t)(last_kept->u.s.p - p) + last_kept->u.s.n;
    jv_append(&I->a, parts, jv_strref(&I->a, p, end));
    for (size_t k = cnt - (size_t)maxsplit; k < cnt; k++) jv_append(&I->a, parts, all->u.list.v[k]);
    return parts;
}

static jv *format(jinterp *I, jv *s, const jargs *a, int line) {
    jbuf b = {.a = &I->a};
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    int auto_i = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') {
            jb_putc(&b, '{');
            i++;
        } else if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') {
            jb_putc(&b, '}');
            i++;
        } else if (p[i] == '{') {
            size_t e = i + 1;
            while (e < n && p[e] != '}') e++;
            if (e >= n) je_fail(I, line, "format: single '{' encountered in format string");
            const char *f = p + i + 1;
            size_t fl = e - i - 1;
            if (memchr(f, ':', fl) || memchr(f, '!', fl) || memchr(f, '.', fl) || memchr(f, '[', fl))
                je_unsupported(I, line, "format: format specs are not supported");
            jv *v;
            if (fl == 0) v = jarg(a, auto_i++, NULL);
            else if (f[0] >= '0' && f[0] <= '9') v = jarg(a, (int)strtol(f, NULL, 10), NULL);
            else v = jarg(a, -1, ja_strndup(&I->a, f, fl));
            if (!v) je_fail(I, line, "format: replacement field {%.*s} has no argument", (int)fl, f);
            jv_write_str(&b, v);
            i = e;
        } else if (p[i] == '}') je_fail(I, line, "format: single '}' encountered in format string");
        else jb_putc(&b, p[i]);
    }
    return jv_strref(&I->a, b.p ? b.p : "", b.n);
}

static int all_chars(const jv *s, int (*pred)(char)) {
    if (s->u.s.n == 0) return 0;
    for (size_t i = 0; i < s->u.s.n; i++)
        if (!pred(s->u.s.p[i])) return 0;
    return 1;
}
static int p_digit(char c) { return c >= '0' && c <= '9'; }
static int p_alpha(char c) { return alpha(c); }
static int p_alnum(char c) { return alpha(c) || p_digit(c); }

static jv *pad(jinterp *I, jv *s, const jargs *a, int how, int line) {
    jv *w = jarg(a, 0, "width"), *fill = jarg(a, 1, "fillchar");
    if (!w || (w->kind != JV_INT && w->kind != JV_BOOL)) je_fail(I, line, "expected an integer width");
    const char *fc = fill && fill->kind == JV_STR ? fill->u.s.p : " ";
    size_t fcl = fill && fill->kind == JV_STR ? fill->u.s.n : 1;
    size_t len = ju_len(s->u.s.p, s->u.s.n);
    if (w->u.i <= (int64_t)len) return s;
    if (w->u.i > (int64_t)I->o.max_output) je_fail(I, line, "width too large");
    size_t total = (size_t)w->u.i - len, left = how == 'l' ? 0 : how == 'r' ? total : total / 2 + (total & (size_t)w->u.i & 1);
    jbuf b = {.a = &I->a};
    for (size_t i = 0; i < left; i++) jb_put(&b, fc, fcl);
    jb_put(&b, s->u.s.p, s->u.s.n);
    for (size_t i = left; i < total; i++) jb_put(&b, fc, fcl);
    return jv_strref(&I->a, b.p, b.n);
}

static jv *str_method(jinterp *I, jv *s, const char *m, const jargs *a, int line) {
    jarena *A = &I->a;
    jv *x = jarg(a, 0, NULL);
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
        jv *chars = jarg(a, 0, "chars");
        if (chars && chars->kind == JV_NONE) chars = NULL;
        if (chars) need_str(I, chars, m, line);
        return strip(I, s, chars, m[0] != 'r', m[0] != 'l');
    }
    if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
        jv *ms = jarg(a, 1, "maxsplit");
        return split(I, s, jarg(a, 0, "sep"), ms && ms->kind == JV_INT ? ms->u.i : -1, m[0] == 'r', line);
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        if (!x) je_fail(I, line, "%s takes at least 1 argument", m);
        jv one = *x;
        jv *cands[1] = {&one};
        jv **list = cands;
        size_t nc = 1;
        if (x->kind == JV_LIST && x->tuple) list = x->u.list.v, nc = x->u.list.n;
        for (size_t i = 0; i < nc; i++) {
            jv *c = need_str(I, list[i], m, line);
            if (c->u.s.n > s->u.s.n) continue;
            const char *at = m[0] == 's' ? s->u.s.p : s->u.s.p + s->u.s.n - c->u.s.n;
            if (memcmp(at, c->u.s.p, c->u.s.n) == 0) return JV_TRUE;
        }
        return JV_FALSE;
    }
    if (!strcmp(m, "upper")) return recase(I, s, 'u');
    if (!strcmp(m, "lower")) return recase(I, s, 'l');
    if (!strcmp(m, "swapcase")) return recase(I, s, 's');
    if (!strcmp(m, "capitalize")) return recase(I, s, 'c');
    if (!strcmp(m, "title")) return recase(I, s, 't');
    if (!strcmp(m, "replace")) {
        jv *old = need_str(I, jarg(a, 0, "old"), m, line), *new = need_str(I, jarg(a, 1, "new"), m, line);
        jv *cnt = jarg(a, 2, "count");
        int64_t left = cnt && cnt->kind == JV_INT ? cnt->u.i : -1;
        jbuf b = {.a = A};
        size_t i = 0;
        if (old->u.s.n == 0) { /* Python inserts new between characters */
            jv *chars = je_iter(I, s, line);
            for (size_t k = 0; k <= chars->u.list.n; k++) {
                if (left != 0) {
                    jb_put(&b, new->u.s.p, new->u.s.n);
                    left--;
                }
                if (k < chars->u.list.n) jb_put(&b, chars->u.list.v[k]->u.s.p, chars->u.list.v[k]->u.s.n);
            }
            return jv_strref(A, b.p ? b.p : "", b.n);
        }
        const char *f;
        while (left != 0 && (f = find(A, s->u.s.p + i, s->u.s.n - i, old->u.s.p, old->u.s.n, 0))) {
            jb_put(&b, s->u.s.p + i, (size_t)(f - s->u.s.p) - i);
            jb_put(&b, new->u.s.p, new->u.s.n);
            i = (size_t)(f - s->u.s.p) + old->u.s.n;
            left--;
        }
        jb_put(&b, s->u.s.p + i, s->u.s.n - i);
        return jv_strref(A, b.p ? b.p : "", b.n);
    }
    if (!strcmp(m, "find") || !strcmp(m, "rfind") || !strcmp(m, "index") || !strcmp(m, "rindex")) {
        jv *sub = need_str(I, x, m, line);
        const char *f = find(A, s->u.s.p, s->u.s.n, sub->u.s.p, sub->u.s.n, m[0] == 'r');
        if (!f && m[m[0] == 'r'] == 'i') je_fail(I, line, "substring not found");
        return jv_int(A, f ? (int64_t)ju_len(s->u.s.p, (size_t)(f - s->u.s.p)) : -1);
    }
    if (!strcmp(m, "count")) {
        jv *sub = need_str(I, x, m, line);
        if (sub->u.s.n == 0) return jv_int(A, (int64_t)ju_len(s->u.s.p, s->u.s.n) + 1);
        int64_t c = 0;
        const char *f;
        for (size_t i = 0; (f = find(A, s->u.s.p + i, s->u.s.n - i, sub->u.s.p, sub->u.s.n, 0)); c++)
            i = (size_t)(f - s->u.s.p) + sub->u.s.n;
        return jv_int(A, c);
    }
    if (!strcmp(m, "format")) return format(I, s, a, line);
    if (!strcmp(m, "join")) {
        if (!x) je_fail(I, line, "join takes exactly one argument");
        jv *items = je_iter(I, x, line);
        jbuf b = {.a = A};
        for (size_t i = 0; i < items->u.list.n; i++) {
            jv *it = items->u.list.v[i];
            if (it->kind != JV_STR) je_fail(I, line, "sequence item %zu: expected str instance, %s found", i, jv_type_name(it));
            if (i) jb_put(&b, s->u.s.p, s->u.s.n);
            jb_put(&b, it->u.s.p, it->u.s.n);
        }
        return jv_strref(A, b.p ? b.p : "", b.n);
    }
    if (!strcmp(m, "splitlines")) {
        jv *keep = jarg(a, 0, "keepends");
        int k = keep && jv_truthy(keep);
        jv *out = jv_list(A, 0);
        const char *p = s->u.s.p;
        size_t n = s->u.s.n, b = 0, i = 0, l;
        while (i < n) {
            unsigned c = ju_cp(p, n, i, &l);
            int brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                      c == 0x2028 || c == 0x2029;
            if (!brk) {
                i += l;
                continue;
            }
            size_t e = i + l;
            if (c == '\r' && e < n && p[e] == '\n') e++;
            jv_append(A, out, jv_strref(A, p + b, (k ? e : i) - b));
            b = i = e;
        }
        if (b < n) jv_append(A, out, jv_strref(A, p + b, n - b));
        return out;
    }
    if (!strcmp(m, "isdigit") || !strcmp(m, "isnumeric") || !strcmp(m, "isdecimal")) return JV_BOOLV(all_chars(s, p_digit));
    if (!strcmp(m, "isalpha")) return JV_BOOLV(all_chars(s, p_alpha));
    if (!strcmp(m, "isalnum")) return JV_BOOLV(all_chars(s, p_alnum));
    if (!strcmp(m, "isspace")) {
        size_t l;
        if (s->u.s.n == 0) return JV_FALSE;
        for (size_t i = 0; i < s->u.s.n; i += l)
            if (!ju_space(ju_cp(s->u.s.p, s->u.s.n, i, &l))) return JV_FALSE;
        return JV_TRUE;
    }
    if (!strcmp(m, "islower") || !strcmp(m, "isupper")) {
        int cased = 0;
        for (size_t i = 0, l; i < s->u.s.n; i += l) {
            unsigned c = ju_cp(s->u.s.p, s->u.s.n, i, &l);
            if (!ju_cased(c)) continue;
            cased = 1;
            if (m[2] == 'l' ? ju_lower(c) != c : ju_upper(c) != c && c != 0xDF) return JV_FALSE;
            if (m[2] == 'u' && c == 0xDF) return JV_FALSE;
        }
        return JV_BOOLV(cased);
    }
    if (!strcmp(m, "ljust")) return pad(I, s, a, 'l', line);
    if (!strcmp(m, "rjust")) return pad(I, s, a, 'r', line);
    if (!strcmp(m, "center")) return pad(I, s, a, 'c', line);
    if (!strcmp(m, "zfill")) {
        jargs z = {.pos = (jv *[]){x, jv_cstr(A, "0")}, .npos = 2};
        if (!x) je_fail(I, line, "zfill takes exactly one argument");
        return pad(I, s, &z, 'r', line);
    }
    if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
        jv *f = need_str(I, x, m, line);
        if (f->u.s.n > s->u.s.n) return s;
        if (m[6] == 'p') return memcmp(s->u.s.p, f->u.s.p, f->u.s.n) ? s : jv_strref(A, s->u.s.p + f->u.s.n, s->u.s.n - f->u.s.n);
        return memcmp(s->u.s.p + s->u.s.n - f->u.s.n, f->u.s.p, f->u.s.n) ? s : jv_strref(A, s->u.s.p, s->u.s.n - f->u.s.n);
    }
    if (!strcmp(m, "partition") || !strcmp(m, "rpartition")) {
        jv *sep = need_str(I, x, m, line);
        if (sep->u.s.n == 0) je_fail(I, line, "empty separator");
        const char *f = find(A, s->u.s.p, s->u.s.n, sep->u.s.p, sep->u.s.n, m[0] == 'r');
        jv *t = jv_list(A, 3), *e = jv_strref(A, "", 0);
        t->tuple = 1;
        if (!f) {
            jv_append(A, t, m[0] == 'r' ? e : s);
            jv_append(A, t, e);
            jv_append(A, t, m[0] == 'r' ? s : e);
            return t;
        }
        size_t at = (size_t)(f - s->u.s.p);
        jv_append(A, t, jv_strref(A, s->u.s.p, at));
        jv_append(A, t, sep);
        jv_append(A, t, jv_strref(A, f + sep->u.s.n, s->u.s.n - at - sep->u.s.n));
        return t;
    }
    je_unsupported(I, line, "str.%s is not supported", m);
}

jv *je_method_call(jinterp *I, jv *self, const char *m, const jargs *a, int line) {
    jarena *A = &I->a;
    if (self->kind == JV_STR) return str_method(I, self, m, a, line);
    if (self->kind == JV_DICT) {
        if (!strcmp(m, "get")) {
            jv *k = jarg(a, 0, NULL), *d = jarg(a, 1, NULL);
            if (!k) je_fail(I, line, "get expected at least 1 argument, got 0");
            jv *v = jv_dict_getv(self, k);
            return v ? v : d ? d : JV_NONE_V;
        }
        if (!strcmp(m, "copy")) {
            jv *d = jv_dict(A);
            for (size_t i = 0; i < self->u.dict.keys.n; i++) jv_dict_set(A, d, self->u.dict.keys.v[i], self->u.dict.vals.v[i]);
            return d;
        }
        jv *l = jv_list(A, self->u.dict.keys.n);
        for (size_t i = 0; i < self->u.dict.keys.n; i++) {
            if (m[0] == 'k') jv_append(A, l, self->u.dict.keys.v[i]);
            else if (m[0] == 'v') jv_append(A, l, self->u.dict.vals.v[i]);
            else {
                jv *t = jv_list(A, 2);
                t->tuple = 1;
                jv_append(A, t, self->u.dict.keys.v[i]);
                jv_append(A, t, self->u.dict.vals.v[i]);
                jv_append(A, l, t);
            }
        }
        return l;
    }
    if (self->kind == JV_LIST) {
        jv *x = jarg(a, 0, NULL);
        if (!strcmp(m, "copy")) {
            jv *l = jv_list(A, self->u.list.n);
            for (size_t i = 0; i < self->u.list.n; i++) jv_append(A, l, self->u.list.v[i]);
            return l;
        }
        if (!x) je_fail(I, line, "%s takes exactly one argument (0 given)", m);
        int64_t c = 0;
        for (size_t i = 0; i < self->u.list.n; i++)
            if (jv_eq(self->u.list.v[i], x)) {
                if (m[0] == 'i') return jv_int(A, (int64_t)i);
                c++;
            }
        if (m[0] == 'i') je_fail(I, line, "%s.index(x): x not in %s", jv_type_name(self), jv_type_name(self));
        return jv_int(A, c);
    }
    je_fail(I, line, "'%s' object has no method '%s'", jv_type_name(self), m);
}
