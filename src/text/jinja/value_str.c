/* value_str.c — values as text the way Python writes them: str() and repr() (lists and dicts print
 * as their repr, with single-quoted strings), float repr (the shortest digits that round-trip,
 * exponent outside [1e-4, 1e16)), and json.dumps with ensure_ascii=False (transformers' tojson). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/value.h"

void jb_put(jbuf *b, const char *s, size_t n) {
    if (n == 0) return;
    if (b->limit && b->n + n > b->limit)
        jfail_at(b->a->f, STENO_E_FORMAT, 0, "the output would exceed %zu bytes", b->limit);
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        if (nc < 256) nc = 256;
        char *p = ja_alloc(b->a, nc);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}
void jb_puts(jbuf *b, const char *s) { jb_put(b, s, strlen(s)); }
void jb_putc(jbuf *b, char c) { jb_put(b, &c, 1); }

void jv_format_float(double x, char *out, size_t cap, int json) {
    if (isnan(x)) {
        snprintf(out, cap, "%s", json ? "NaN" : "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(out, cap, "%s%s", x < 0 ? "-" : "", json ? "Infinity" : "inf");
        return;
    }
    if (x == 0) {
        snprintf(out, cap, "%s", signbit(x) ? "-0.0" : "0.0");
        return;
    }
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
        if (strtod(tmp, NULL) == x) break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = tmp[0] == '-';
    const char *c = tmp + neg;
    for (; *c && *c != 'e'; c++)
        if (*c != '.') digits[nd++] = *c;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int e = atoi(c + 1);
    char *o = out;
    size_t left = cap;
#define OUT(...)                                                                                                       \
    do {                                                                                                               \
        int w_ = snprintf(o, left, __VA_ARGS__);                                                                       \
        if (w_ > 0 && (size_t)w_ < left) {                                                                             \
            o += w_;                                                                                                   \
            left -= (size_t)w_;                                                                                        \
        }                                                                                                              \
    } while (0)
    if (neg) OUT("-");
    if (e < -4 || e >= 16) {
        OUT("%c", digits[0]);
        if (nd > 1) OUT(".%s", digits + 1);
        OUT("e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (e < 0) {
        OUT("0.");
        for (int i = 0; i < -e - 1; i++) OUT("0");
        OUT("%s", digits);
    } else if (e >= nd - 1) {
        OUT("%s", digits);
        for (int i = 0; i < e - (nd - 1); i++) OUT("0");
        OUT(".0");
    } else {
        OUT("%.*s.%s", e + 1, digits, digits + e + 1);
    }
#undef OUT
}

static void write_repr_str(jbuf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jb_putc(b, q);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        if (c == (unsigned char)q || c == '\\') {
            hex[0] = '\\';
            hex[1] = (char)c;
            hex[2] = 0;
            esc = hex;
        } else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(hex, sizeof hex, "\\x%02x", c);
            esc = hex;
        }
        if (esc) {
            jb_put(b, s + start, i - start);
            jb_puts(b, esc);
            start = i + 1;
        }
    }
    jb_put(b, s + start, n - start);
    jb_putc(b, q);
}

static void write_any(jbuf *b, const jv *v, int repr, int depth) {
    char tmp[64];
    if (depth > 200) jfail_at(b->a->f, STENO_E_FORMAT, 0, "value nested too deeply to print");
    switch (v->kind) {
    case JV_UNDEF:
        if (repr) jb_puts(b, "Undefined");
        break;
    case JV_NONE: jb_puts(b, "None"); break;
    case JV_BOOL: jb_puts(b, v->u.i ? "True" : "False"); break;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%" PRId64, v->u.i);
        jb_puts(b, tmp);
        break;
    case JV_FLOAT:
        jv_format_float(v->u.f, tmp, sizeof tmp, 0);
        jb_puts(b, tmp);
        break;
    case JV_STR:
        if (repr) write_repr_str(b, v->u.s.p, v->u.s.n);
        else jb_put(b, v->u.s.p, v->u.s.n);
        break;
    case JV_LIST:
        if (v->gen) {
            jb_puts(b, "<generator object>");
            break;
        }
        jb_putc(b, v->tuple ? '(' : '[');
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i) jb_puts(b, ", ");
            write_any(b, v->u.list.v[i], 1, depth + 1);
        }
        if (v->tuple && v->u.list.n == 1) jb_putc(b, ',');
        jb_putc(b, v->tuple ? ')' : ']');
        break;
    case JV_DICT:
        jb_puts(b, v->ns ? "<Namespace {" : "{");
        for (size_t i = 0; i < v->u.dict.keys.n; i++) {
            if (i) jb_puts(b, ", ");
            write_any(b, v->u.dict.keys.v[i], 1, depth + 1);
            jb_puts(b, ": ");
            write_any(b, v->u.dict.vals.v[i], 1, depth + 1);
        }
        jb_puts(b, v->ns ? "}>" : "}");
        break;
    case JV_LOOP: jb_puts(b, "<LoopContext>"); break;
    default:
        jb_puts(b, "<function ");
        jb_puts(b, v->u.fn.name ? v->u.fn.name : "?");
        jb_putc(b, '>');
        break;
    }
}

void jv_write_str(jbuf *b, const jv *v) { write_any(b, v, 0, 0); }
void jv_write_repr(jbuf *b, const jv *v) { write_any(b, v, 1, 0); }

jv *jv_to_str(jarena *a, const jv *v) {
    if (v->kind == JV_STR) return (jv *)v;
    jbuf b = {.a = a};
    jv_write_str(&b, v);
    return jv_strref(a, b.p ? b.p : "", b.n);
}

static void json_str(jbuf *b, const char *s, size_t n) {
    jb_putc(b, '"');
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
        }
        if (esc) {
            jb_put(b, s + start, i - start);
            jb_puts(b, esc);
            start = i + 1;
        }
    }
    jb_put(b, s + start, n - start);
    jb_putc(b, '"');
}

static void json_nl(jbuf *b, const char *indent, int level) {
    jb_putc(b, '\n');
    for (int i = 0; i < level; i++) jb_puts(b, indent);
}

static int key_cmp(const void *x, const void *y) {
    const jv *a = *(jv *const *)x, *b = *(jv *const *)y;
    int c = 0;
    jv_cmp(a, b, &c);
    return c;
}

void jv_write_json(jbuf *b, const jv *v, const char *indent, const char *item_sep, const char *key_sep,
                   int sort_keys, int depth, int line) {
    char tmp[64];
    if (depth > 200) jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: value nested too deeply");
    const char *isep = item_sep ? item_sep : (indent ? "," : ", "), *ksep = key_sep ? key_sep : ": ";
    switch (v->kind) {
    case JV_NONE: jb_puts(b, "null"); break;
    case JV_BOOL: jb_puts(b, v->u.i ? "true" : "false"); break;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%" PRId64, v->u.i);
        jb_puts(b, tmp);
        break;
    case JV_FLOAT:
        jv_format_float(v->u.f, tmp, sizeof tmp, 1);
        jb_puts(b, tmp);
        break;
    case JV_STR: json_str(b, v->u.s.p, v->u.s.n); break;
    case JV_LIST:
        if (v->gen) jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: Object of type generator is not JSON serializable");
        if (v->u.list.n == 0) {
            jb_puts(b, "[]");
            break;
        }
        jb_putc(b, '[');
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i) jb_puts(b, isep);
            if (indent) json_nl(b, indent, depth + 1);
            jv_write_json(b, v->u.list.v[i], indent, item_sep, key_sep, sort_keys, depth + 1, line);
        }
        if (indent) json_nl(b, indent, depth);
        jb_putc(b, ']');
        break;
    case JV_DICT: {
        size_t n = v->u.dict.keys.n;
        if (v->ns) jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: Object of type Namespace is not JSON serializable");
        if (n == 0) {
            jb_puts(b, "{}");
            break;
        }
        jv **keys = v->u.dict.keys.v;
        if (sort_keys) {
            keys = ja_alloc(b->a, n * sizeof(jv *));
            memcpy(keys, v->u.dict.keys.v, n * sizeof(jv *));
            for (size_t i = 0; i < n; i++)
                if (keys[i]->kind != JV_STR)
                    jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: sort_keys needs string keys");
            qsort(keys, n, sizeof(jv *), key_cmp);
        }
        jb_putc(b, '{');
        for (size_t i = 0; i < n; i++) {
            const jv *k = keys[i];
            if (i) jb_puts(b, isep);
            if (indent) json_nl(b, indent, depth + 1);
            if (k->kind == JV_STR) json_str(b, k->u.s.p, k->u.s.n);
            else if (k->kind == JV_INT || k->kind == JV_FLOAT || k->kind == JV_BOOL || k->kind == JV_NONE) {
                jbuf t = {.a = b->a};
                jv_write_json(&t, k, NULL, NULL, NULL, 0, depth + 1, line);
                jb_putc(b, '"');
                jb_put(b, t.p, t.n);
                jb_putc(b, '"');
            } else
                jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: keys must be str, int, float, bool or None");
            jb_puts(b, ksep);
            jv_write_json(b, sort_keys ? jv_dict_getv(v, k) : v->u.dict.vals.v[i], indent, item_sep, key_sep,
                          sort_keys, depth + 1, line);
        }
        if (indent) json_nl(b, indent, depth);
        jb_putc(b, '}');
        break;
    }
    default:
        jfail_at(b->a->f, STENO_E_FORMAT, line, "tojson: Object of type %s is not JSON serializable",
                 jv_type_name(v));
    }
}
