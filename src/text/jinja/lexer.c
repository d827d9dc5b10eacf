/* lexer.c — jinja2's lexer (jinja2/lexer.py, 3.1) for the default delimiters, with
 * trim_blocks=True and lstrip_blocks=True as transformers compiles chat templates:
 *   - the source's \r\n and \r become \n, and one trailing newline is dropped
 *     (keep_trailing_newline=False);
 *   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}", "-#}" all after it;
 *   - lstrip_blocks: spaces and tabs between a line's start and "{%" or "{#" are dropped unless
 *     the tag opens with "+"; the line start counts when the previous token ended a line;
 *   - trim_blocks: one newline right after "%}" or "#}" is dropped unless the tag closes with "+%}";
 *   - {% raw %}...{% endraw %} is data.
 * Inside tags: whitespace, floats, integers (with _ separators), names, strings with Python's
 * escapes, operators (longest first), as jinja2's tag rules in that order. */
#include <stdlib.h>
#include <string.h>

#include "text/jinja/lexer.h"

typedef struct {
    jarena *a;
    const char *s;
    size_t n, pos;
    int line;
    jtok *t;
    size_t nt, cap;
} lx;

static size_t skip_ws(const char *s, size_t n, size_t q);
static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_name0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (unsigned char)c >= 0x80; }
static int is_name(char c) { return is_name0(c) || is_digit(c); }

static jtok *push(lx *L, int type, int line) {
    if (L->nt == L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 64;
        jtok *p = ja_alloc(L->a, nc * sizeof *p);
        if (L->nt) memcpy(p, L->t, L->nt * sizeof *p);
        L->t = p;
        L->cap = nc;
    }
    jtok *t = &L->t[L->nt++];
    t->type = type;
    t->line = line;
    return t;
}

static int count_nl(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += s[i] == '\n';
    return c;
}

static void emit_text(lx *L, const char *s, size_t n, int line) {
    if (n == 0) return;
    jtok *t = push(L, JT_TEXT, line);
    t->s = s;
    t->n = n;
}

/* Python's \ escapes of a string literal into a fresh buffer. */
static void unescape(lx *L, jtok *t, const char *s, size_t n) {
    char *o = ja_alloc(L->a, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            o[k++] = s[i];
            continue;
        }
        char c = s[++i];
        unsigned long cp = 0;
        int hex = 0;
        switch (c) {
        case 'n': o[k++] = '\n'; continue;
        case 't': o[k++] = '\t'; continue;
        case 'r': o[k++] = '\r'; continue;
        case '\\': o[k++] = '\\'; continue;
        case '\'': o[k++] = '\''; continue;
        case '"': o[k++] = '"'; continue;
        case 'a': o[k++] = '\a'; continue;
        case 'b': o[k++] = '\b'; continue;
        case 'f': o[k++] = '\f'; continue;
        case 'v': o[k++] = '\v'; continue;
        case '\n': continue;
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        default:
            if (c >= '0' && c <= '7') {
                int d = 0;
                while (d < 3 && i < n && s[i] >= '0' && s[i] <= '7') cp = cp * 8 + (unsigned long)(s[i++] - '0'), d++;
                i--;
                hex = -1;
                break;
            }
            o[k++] = '\\';
            o[k++] = c;
            continue;
        }
        if (hex > 0) {
            for (int d = 0; d < hex; d++) {
                char h = i + 1 < n ? s[i + 1] : 0;
                int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (v < 0) jfail_at(L->a->f, STENO_E_FORMAT, t->line, "truncated \\%c escape in a string", c);
                cp = cp * 16 + (unsigned long)v;
                i++;
            }
        }
        if (cp > 0x10FFFF) jfail_at(L->a->f, STENO_E_FORMAT, t->line, "illegal Unicode character in a string");
        if (cp < 0x80) o[k++] = (char)cp;
        else if (cp < 0x800) {
            o[k++] = (char)(0xC0 | (cp >> 6));
            o[k++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            o[k++] = (char)(0xE0 | (cp >> 12));
            o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            o[k++] = (char)(0x80 | (cp & 0x3F));
        } else {
            o[k++] = (char)(0xF0 | (cp >> 18));
            o[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            o[k++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    t->s = o;
    t->n = k;
}

static const char *OPS2[] = {"//", "**", "==", "!=", "<=", ">="};
static const char OPS1[] = "+-/*%~[](){}<>=.:|,;";

/* Number at p: returns its length, the type through *type (0 when none). */
static size_t lex_number(const char *s, size_t n, size_t p, int *type) {
    size_t i = p;
    *type = 0;
    if (i >= n || !is_digit(s[i])) return 0;
    while (i < n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1])))) i++;
    size_t int_end = i;
    int is_float = 0;
    if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1]) && !(p > 0 && s[p - 1] == '.')) {
        i++;
        while (i < n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1])))) i++;
        is_float = 1;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E') && !(p > 0 && s[p - 1] == '.')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < n && is_digit(s[j])) {
            while (j < n && (is_digit(s[j]) || (s[j] == '_' && j + 1 < n && is_digit(s[j + 1])))) j++;
            i = j;
            is_float = 1;
        }
    }
    if (!is_float) i = int_end;
    *type = is_float ? JT_FLOAT : JT_INT;
    return i - p;
}

/* Tokens of one tag from L->pos to its end ("}}" or "%}"); returns 1 when the end swallowed a
 * trailing newline (line_starting for the next text). */
static int lex_tag(lx *L, int block) {
    const char *s = L->s;
    size_t n = L->n;
    int start_line = L->line;
    char stack[256]; /* open brackets: no end of tag inside them (jinja2's balancing stack) */
    int depth = 0;
    for (;;) {
        size_t p = L->pos;
        if (p >= n) jfail_at(L->a->f, STENO_E_FORMAT, start_line, "unexpected end of template inside a tag");
        /* the end of the tag first, as jinja2's rule order has it */
        char e = block ? '%' : '}';
        if (depth) {
            /* inside brackets: operators only, below */
        } else if (s[p] == '-' && p + 2 < n && s[p + 1] == e && s[p + 2] == '}') {
            push(L, block ? JT_BLOCK_END : JT_VAR_END, L->line);
            size_t q = p + 3;
            q = skip_ws(s, n, q);
            L->line += count_nl(s + p, q - p);
            L->pos = q;
            return q > p + 3 && s[q - 1] == '\n';
        }
        if (!depth && block && s[p] == '+' && p + 2 < n && s[p + 1] == '%' && s[p + 2] == '}') {
            push(L, JT_BLOCK_END, L->line);
            L->pos = p + 3;
            return 0;
        }
        if (!depth && s[p] == e && p + 1 < n && s[p + 1] == '}') {
            push(L, block ? JT_BLOCK_END : JT_VAR_END, L->line);
            L->pos = p + 2;
            if (block && L->pos < n && s[L->pos] == '\n') {
                L->pos++;
                L->line++;
                return 1;
            }
            return 0;
        }
        if (is_ws(s[p])) {
            L->line += s[p] == '\n';
            L->pos++;
            continue;
        }
        size_t cl;
        if ((unsigned char)s[p] >= 0x80 && ju_space(ju_cp(s, n, p, &cl))) {
            L->pos += cl;
            continue;
        }
        int nt;
        size_t len = lex_number(s, n, p, &nt);
        if (len) {
            jtok *t = push(L, nt, L->line);
            char buf[64];
            size_t k = 0;
            for (size_t i = p; i < p + len && k < sizeof buf - 1; i++)
                if (s[i] != '_') buf[k++] = s[i];
            buf[k] = 0;
            if (nt == JT_INT) t->i = strtoll(buf, NULL, 10);
            else t->f = strtod(buf, NULL);
            L->pos += len;
            continue;
        }
        if (is_name0(s[p])) {
            size_t q = p;
            while (q < n && is_name(s[q])) q++;
            jtok *t = push(L, JT_NAME, L->line);
            t->s = s + p;
            t->n = q - p;
            L->pos = q;
            continue;
        }
        if (s[p] == '\'' || s[p] == '"') {
            size_t q = p + 1;
            while (q < n && s[q] != s[p]) q += s[q] == '\\' ? 2 : 1;
            if (q >= n) jfail_at(L->a->f, STENO_E_FORMAT, L->line, "unterminated string");
            jtok *t = push(L, JT_STRING, L->line);
            unescape(L, t, s + p + 1, q - p - 1);
            L->line += count_nl(s + p, q - p);
            L->pos = q + 1;
            continue;
        }
        int done = 0;
        for (size_t k = 0; k < sizeof OPS2 / sizeof OPS2[0]; k++)
            if (p + 1 < n && s[p] == OPS2[k][0] && s[p + 1] == OPS2[k][1]) {
                jtok *t = push(L, JT_OP, L->line);
                t->s = OPS2[k];
                t->n = 2;
                L->pos += 2;
                done = 1;
                break;
            }
        if (done) continue;
        const char *o = strchr(OPS1, s[p]);
        if (o && s[p]) {
            if (*o == '(' || *o == '[' || *o == '{') {
                if (depth == (int)sizeof stack) jfail_at(L->a->f, STENO_E_FORMAT, L->line, "brackets nested too deeply");
                stack[depth++] = *o == '(' ? ')' : *o == '[' ? ']' : '}';
            } else if (*o == ')' || *o == ']' || *o == '}') {
                if (!depth) jfail_at(L->a->f, STENO_E_FORMAT, L->line, "unexpected '%c'", *o);
                if (stack[depth - 1] != *o)
                    jfail_at(L->a->f, STENO_E_FORMAT, L->line, "unexpected '%c', expected '%c'", *o, stack[depth - 1]);
                depth--;
            }
            jtok *t = push(L, JT_OP, L->line);
            t->s = o;
            t->n = 1;
            L->pos++;
            continue;
        }
        jfail_at(L->a->f, STENO_E_FORMAT, L->line, "unexpected char '%c'", s[p]);
    }
}

/* Is there "{%[-+]? raw [-]?%}" at p? Returns the length of the opener through *len. */
static int raw_open(const char *s, size_t n, size_t p, size_t *len) {
    size_t q = p + 2;
    if (q < n && (s[q] == '-' || s[q] == '+')) q++;
    q = skip_ws(s, n, q);
    if (q + 3 > n || memcmp(s + q, "raw", 3) != 0) return 0;
    q += 3;
    q = skip_ws(s, n, q);
    if (q + 1 < n && s[q] == '%' && s[q + 1] == '}') {
        *len = q + 2 - p;
        return 1;
    }
    if (q + 2 < n && s[q] == '-' && s[q + 1] == '%' && s[q + 2] == '}') {
        q += 3;
        q = skip_ws(s, n, q);
        *len = q - p;
        return 1;
    }
    return 0;
}

static size_t rstrip_len(const char *s, size_t n) { return ju_rstrip_len(s, n); }

/* The first position at or after q that is not whitespace (\s*, Unicode's included). */
static size_t skip_ws(const char *s, size_t n, size_t q) {
    size_t l;
    while (q < n && ju_space(ju_cp(s, n, q, &l))) q += l;
    return q;
}

/* Is s[b..e) all whitespace (Python's \s, Unicode's included) and not empty? */
static int all_space(const char *s, size_t b, size_t e) {
    if (b >= e) return 0;
    for (size_t i = b, l; i < e; i += l)
        if (!ju_space(ju_cp(s, e, i, &l))) return 0;
    return 1;
}

void jlex(jarena *a, const char *src, size_t len, jtok **out, size_t *n_out) {
    /* newlines normalized, one trailing newline dropped */
    char *s = ja_alloc(a, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else s[n++] = src[i];
    }
    if (n > 0 && s[n - 1] == '\n') n--;
    lx L = {.a = a, .s = s, .n = n, .line = 1};
    int line_starting = 1;
    while (L.pos < n) {
        size_t p = L.pos, q = p;
        while (q + 1 < n && !(s[q] == '{' && (s[q + 1] == '{' || s[q + 1] == '%' || s[q + 1] == '#'))) q++;
        if (q + 1 >= n) { /* no more tags */
            emit_text(&L, s + p, n - p, L.line);
            break;
        }
        char kind = s[q + 1], sign = q + 2 < n ? s[q + 2] : 0;
        size_t tlen = q - p;
        int text_line = L.line;
        if (sign == '-') tlen = rstrip_len(s + p, tlen);
        else if (sign != '+' && kind != '{') {
            size_t l_pos = tlen;
            while (l_pos > 0 && s[p + l_pos - 1] != '\n') l_pos--;
            if ((l_pos > 0 || line_starting) && all_space(s + p, l_pos, tlen)) tlen = l_pos;
        }
        emit_text(&L, s + p, tlen, text_line);
        L.line += count_nl(s + p, q - p);
        size_t open = 2 + (sign == '-' || sign == '+');
        size_t rawlen;
        if (kind == '#') {
            size_t c = q + open;
            while (c + 1 < n && !(s[c] == '#' && s[c + 1] == '}')) c++;
            if (c + 1 >= n) jfail_at(a->f, STENO_E_FORMAT, L.line, "missing end of comment tag");
            size_t end = c + 2;
            line_starting = 0;
            if (c > q + open && s[c - 1] == '-') {
                end = skip_ws(s, n, end);
                line_starting = end > c + 2 && s[end - 1] == '\n';
            } else if (!(c > q + open && s[c - 1] == '+') && end < n && s[end] == '\n') {
                end++;
                line_starting = 1;
            }
            L.line += count_nl(s + q, end - q);
            L.pos = end;
        } else if (kind == '%' && raw_open(s, n, q, &rawlen)) {
            size_t b = q + rawlen, c = b;
            L.line += count_nl(s + q, rawlen);
            for (;; c++) {
                if (c + 1 >= n) jfail_at(a->f, STENO_E_FORMAT, L.line, "missing end of raw directive");
                if (s[c] != '{' || s[c + 1] != '%') continue;
                size_t d = c + 2;
                int minus = d < n && s[d] == '-';
                if (d < n && (s[d] == '-' || s[d] == '+')) d++;
                d = skip_ws(s, n, d);
                if (d + 6 > n || memcmp(s + d, "endraw", 6) != 0) continue;
                d += 6;
                d = skip_ws(s, n, d);
                size_t body = c - b;
                if (minus) body = rstrip_len(s + b, body);
                emit_text(&L, s + b, body, L.line);
                line_starting = 0;
                if (d + 2 < n && s[d] == '-' && s[d + 1] == '%' && s[d + 2] == '}') {
                    d += 3;
                    size_t e0 = d;
                    d = skip_ws(s, n, d);
                    line_starting = d > e0 && s[d - 1] == '\n';
                } else if (d + 2 < n && s[d] == '+' && s[d + 1] == '%' && s[d + 2] == '}') d += 3;
                else if (d + 1 < n && s[d] == '%' && s[d + 1] == '}') {
                    d += 2;
                    if (d < n && s[d] == '\n') d++, line_starting = 1;
                } else continue;
                L.line += count_nl(s + b, d - b);
                L.pos = d;
                break;
            }
        } else {
            push(&L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, L.line);
            L.pos = q + open;
            line_starting = lex_tag(&L, kind == '%');
        }
    }
    push(&L, JT_EOF, L.line);
    *out = L.t;
    *n_out = L.nt;
}
