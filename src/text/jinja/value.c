/* value.c — the arena, value constructors, containers, truthiness and Python's == and <
 * (see value.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/value.h"

jv jv_undefined_c = {.kind = JV_UNDEF}, jv_none_c = {.kind = JV_NONE}, jv_true_c = {.kind = JV_BOOL, .u.i = 1},
   jv_false_c = {.kind = JV_BOOL, .u.i = 0};

_Noreturn void jfail_at(jfail *f, steno_status st, int line, const char *fmt, ...) {
    int off = 0;
    if (line > 0) off = snprintf(f->msg, sizeof f->msg, "chat template line %d: ", line);
    else off = snprintf(f->msg, sizeof f->msg, "chat template: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg + off, sizeof f->msg - (size_t)off, fmt, ap);
    va_end(ap);
    for (char *c = f->msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' '; /* one line */
    f->st = st;
    longjmp(f->jb, 1);
}

struct jchunk {
    jchunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *ja_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    jchunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 - sizeof(jchunk) ? n : 65536 - sizeof(jchunk);
        if (a->limit && a->total + cap > a->limit)
            jfail_at(a->f, STENO_E_FORMAT, 0, "the render needs more than %zu MiB", a->limit >> 20);
        c = malloc(sizeof(jchunk) + cap);
        if (!c) jfail_at(a->f, STENO_E_NOMEM, 0, "out of memory");
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += cap;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void ja_free(jarena *a) {
    for (jchunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL;
    a->total = 0;
}

char *ja_strndup(jarena *a, const char *s, size_t n) {
    char *p = ja_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    return p;
}

static jv *mk(jarena *a, int kind) {
    jv *v = ja_alloc(a, sizeof *v);
    v->kind = (uint8_t)kind;
    return v;
}

jv *jv_undef(jarena *a, const char *name) {
    jv *v = mk(a, JV_UNDEF);
    v->u.uname = name;
    return v;
}
jv *jv_int(jarena *a, int64_t i) {
    jv *v = mk(a, JV_INT);
    v->u.i = i;
    return v;
}
jv *jv_float(jarena *a, double f) {
    jv *v = mk(a, JV_FLOAT);
    v->u.f = f;
    return v;
}
jv *jv_str(jarena *a, const char *s, size_t n) {
    jv *v = mk(a, JV_STR);
    v->u.s.p = ja_strndup(a, s, n);
    v->u.s.n = n;
    return v;
}
jv *jv_strref(jarena *a, const char *s, size_t n) {
    jv *v = mk(a, JV_STR);
    v->u.s.p = s;
    v->u.s.n = n;
    return v;
}
jv *jv_cstr(jarena *a, const char *s) { return jv_strref(a, s, strlen(s)); }
jv *jv_list(jarena *a, size_t cap) {
    jv *v = mk(a, JV_LIST);
    if (cap) {
        v->u.list.v = ja_alloc(a, cap * sizeof(jv *));
        v->u.list.cap = cap;
    }
    return v;
}
jv *jv_dict(jarena *a) { return mk(a, JV_DICT); }
jv *jv_func(jarena *a, int fk, const char *name, jv *self, const void *node, void *frame) {
    jv *v = mk(a, JV_FUNC);
    v->u.fn.fk = fk;
    v->u.fn.name = name;
    v->u.fn.self = self;
    v->u.fn.node = node;
    v->u.fn.frame = frame;
    return v;
}

void jvec_push(jarena *a, jvec *v, jv *x) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 4;
        jv **p = ja_alloc(a, nc * sizeof(jv *));
        if (v->n) memcpy(p, v->v, v->n * sizeof(jv *));
        v->v = p;
        v->cap = nc;
    }
    v->v[v->n++] = x;
}

void jv_append(jarena *a, jv *list, jv *x) { jvec_push(a, &list->u.list, x); }

jv *jv_dict_get(const jv *d, const char *key, size_t n) {
    for (size_t i = 0; i < d->u.dict.keys.n; i++) {
        const jv *k = d->u.dict.keys.v[i];
        if (k->kind == JV_STR && k->u.s.n == n && memcmp(k->u.s.p, key, n) == 0) return d->u.dict.vals.v[i];
    }
    return NULL;
}

jv *jv_dict_getv(const jv *d, const jv *key) {
    for (size_t i = 0; i < d->u.dict.keys.n; i++)
        if (jv_eq(d->u.dict.keys.v[i], key)) return d->u.dict.vals.v[i];
    return NULL;
}

void jv_dict_set(jarena *a, jv *d, jv *key, jv *val) {
    for (size_t i = 0; i < d->u.dict.keys.n; i++)
        if (jv_eq(d->u.dict.keys.v[i], key)) {
            d->u.dict.vals.v[i] = val;
            return;
        }
    jvec_push(a, &d->u.dict.keys, key);
    jvec_push(a, &d->u.dict.vals, val);
}

void jv_dict_setc(jarena *a, jv *d, const char *key, jv *val) { jv_dict_set(a, d, jv_cstr(a, key), val); }

int jv_truthy(const jv *v) {
    switch (v->kind) {
    case JV_UNDEF:
    case JV_NONE: return 0;
    case JV_BOOL:
    case JV_INT: return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0.0;
    case JV_STR: return v->u.s.n != 0;
    case JV_LIST: return v->gen || v->u.list.n != 0;
    case JV_DICT: return v->ns || v->u.dict.keys.n != 0;
    default: return 1;
    }
}

int jv_is_num(const jv *v) { return v->kind == JV_BOOL || v->kind == JV_INT || v->kind == JV_FLOAT; }
double jv_num(const jv *v) { return v->kind == JV_FLOAT ? v->u.f : (double)v->u.i; }

/* Deeper than this, values compare unequal: a template can nest lists 100 000 deep, and Python
 * would stop with a RecursionError near 1000 anyway. */
#define JV_EQ_DEPTH 1000

static int eq_d(const jv *a, const jv *b, int depth);
int jv_eq(const jv *a, const jv *b) { return eq_d(a, b, 0); }

static int eq_d(const jv *a, const jv *b, int depth) {
    if (a == b) return 1;
    if (depth > JV_EQ_DEPTH) return 0;
    if (jv_is_num(a) && jv_is_num(b)) {
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT) return a->u.i == b->u.i;
        return jv_num(a) == jv_num(b);
    }
    if (a->kind != b->kind || a->gen || b->gen) return 0;
    switch (a->kind) {
    case JV_UNDEF:
    case JV_NONE: return 1;
    case JV_STR: return a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
    case JV_LIST:
        if (a->tuple != b->tuple || a->u.list.n != b->u.list.n) return 0;
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!eq_d(a->u.list.v[i], b->u.list.v[i], depth + 1)) return 0;
        return 1;
    case JV_DICT:
        if (a->ns || b->ns || a->u.dict.keys.n != b->u.dict.keys.n) return 0;
        for (size_t i = 0; i < a->u.dict.keys.n; i++) {
            jv *o = jv_dict_getv(b, a->u.dict.keys.v[i]);
            if (!o || !eq_d(a->u.dict.vals.v[i], o, depth + 1)) return 0;
        }
        return 1;
    case JV_FUNC:
        return a->u.fn.fk == b->u.fn.fk && a->u.fn.node == b->u.fn.node && a->u.fn.self == b->u.fn.self &&
               a->u.fn.name == b->u.fn.name;
    default: return 0;
    }
}

static int cmp_d(const jv *a, const jv *b, int *cmp, int depth);
int jv_cmp(const jv *a, const jv *b, int *cmp) { return cmp_d(a, b, cmp, 0); }

static int cmp_d(const jv *a, const jv *b, int *cmp, int depth) {
    if (depth > JV_EQ_DEPTH) return 0;
    if (jv_is_num(a) && jv_is_num(b)) {
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT) *cmp = (a->u.i > b->u.i) - (a->u.i < b->u.i);
        else {
            double x = jv_num(a), y = jv_num(b);
            *cmp = (x > y) - (x < y);
        }
        return 1;
    }
    if (a->kind == JV_STR && b->kind == JV_STR) {
        /* UTF-8 byte order is code point order */
        size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
        int c = n ? memcmp(a->u.s.p, b->u.s.p, n) : 0;
        if (c == 0) c = (a->u.s.n > b->u.s.n) - (a->u.s.n < b->u.s.n);
        *cmp = (c > 0) - (c < 0);
        return 1;
    }
    if (a->kind == JV_LIST && b->kind == JV_LIST && a->tuple == b->tuple) {
        size_t n = a->u.list.n < b->u.list.n ? a->u.list.n : b->u.list.n;
        for (size_t i = 0; i < n; i++) {
            if (jv_eq(a->u.list.v[i], b->u.list.v[i])) continue;
            return cmp_d(a->u.list.v[i], b->u.list.v[i], cmp, depth + 1);
        }
        *cmp = (a->u.list.n > b->u.list.n) - (a->u.list.n < b->u.list.n);
        return 1;
    }
    return 0;
}

const char *jv_type_name(const jv *v) {
    switch (v->kind) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v->gen ? "generator" : v->tuple ? "tuple" : "list";
    case JV_DICT: return v->ns ? "Namespace" : "dict";
    case JV_LOOP: return "LoopContext";
    default: return "function";
    }
}

size_t ju_len(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

unsigned ju_cp(const char *s, size_t n, size_t i, size_t *len) {
    unsigned char c = (unsigned char)s[i];
    int k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + (size_t)k > n) k = 1;
    unsigned v = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
    for (int j = 1; j < k; j++) v = (v << 6) | ((unsigned char)s[i + (size_t)j] & 0x3F);
    *len = (size_t)k;
    return v;
}

int ju_space(unsigned c) {
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t ju_rstrip_len(const char *s, size_t n) {
    while (n > 0) {
        size_t k = n - 1, l;
        while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        if (!ju_space(ju_cp(s, n, k, &l))) break;
        n = k;
    }
    return n;
}

size_t ju_off(const char *s, size_t n, size_t i) {
    size_t c = 0;
    for (size_t b = 0; b < n; b++)
        if (((unsigned char)s[b] & 0xC0) != 0x80) {
            if (c == i) return b;
            c++;
        }
    return n;
}
