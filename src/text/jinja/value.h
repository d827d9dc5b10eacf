/* value.h — the values a chat template computes with: Python's objects as jinja2 sees them (None,
 * bool, int, float, str, list/tuple, dict, jinja2's Undefined, callables), allocated from one arena
 * per render so that an error anywhere unwinds (longjmp) without leaks, and freed all at once.
 *
 * Internal to src/text/jinja/. Values made while parsing (constants) live in the template's arena
 * and are never mutated; lists, dicts and namespaces are always made fresh during a render, so a
 * compiled template is shared read-only by concurrent renders.
 */
#ifndef STENO_TEXT_JINJA_VALUE_H
#define STENO_TEXT_JINJA_VALUE_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "steno.h"

/* Where an error goes: the status and one line, then a longjmp back to the entry point. */
typedef struct jfail {
    jmp_buf jb;
    steno_status st;
    char msg[320];
} jfail;

/** Records "chat template line N: ..." (no line when line <= 0) and longjmps to f->jb. */
_Noreturn void jfail_at(jfail *f, steno_status st, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A bump allocator of chunks; over limit bytes (or on malloc failure) it fails through f. */
typedef struct jchunk jchunk;
typedef struct jarena {
    jchunk *head;
    size_t total, limit;
    jfail *f;
} jarena;

void *ja_alloc(jarena *a, size_t n); /* zeroed, 16-byte aligned */
void ja_free(jarena *a);             /* every chunk; the arena is reusable afterwards */
char *ja_strndup(jarena *a, const char *s, size_t n);

typedef enum { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC, JV_LOOP } jv_kind;

/* Callables: globals (range, namespace, ...), bound methods of str/dict/list, macros, the
 * caller of a {% call %} block, loop.cycle. */
typedef enum { JF_GLOBAL, JF_METHOD, JF_MACRO, JF_CALLER, JF_CYCLE, JF_UNSAFE } jf_kind;

typedef struct jv jv;
typedef struct {
    jv **v;
    size_t n, cap;
} jvec;

typedef struct jloop {
    jvec *items;
    size_t i;
} jloop;

struct jv {
    uint8_t kind;
    uint8_t tuple; /* JV_LIST: a tuple (prints with parentheses) */
    uint8_t ns;    /* JV_DICT: a namespace() (attributes assignable with set) */
    uint8_t safe;  /* JV_STR: markupsafe's Markup (from |safe, |e): str + Markup escapes the str */
    uint8_t gen;   /* JV_LIST: a generator (map, select, ... give one): always true, no len(),
                    * not JSON serializable, no [i] — as jinja2's filters behave */
    const char *poison; /* JV_LIST gen: the error its filter met, raised only when it is consumed
                         * (a jinja2 generator fails lazily); NULL when none */
    union {
        int64_t i; /* JV_BOOL (0/1) and JV_INT */
        double f;
        struct {
            const char *p;
            size_t n;
        } s;
        jvec list;
        struct {
            jvec keys, vals;
        } dict;
        struct {
            int fk;
            const char *name;
            jv *self;
            const void *node;
            void *frame;
        } fn;
        jloop *loop;
        const char *uname; /* JV_UNDEF: the missing name, for messages (may be NULL) */
    } u;
};

extern jv jv_undefined_c, jv_none_c, jv_true_c, jv_false_c;
#define JV_UNDEFINED (&jv_undefined_c)
#define JV_NONE_V (&jv_none_c)
#define JV_TRUE (&jv_true_c)
#define JV_FALSE (&jv_false_c)
#define JV_BOOLV(b) ((b) ? JV_TRUE : JV_FALSE)

jv *jv_undef(jarena *a, const char *name);
jv *jv_int(jarena *a, int64_t i);
jv *jv_float(jarena *a, double f);
jv *jv_str(jarena *a, const char *s, size_t n); /* copies */
jv *jv_strref(jarena *a, const char *s, size_t n); /* borrows s (which must outlive the render) */
jv *jv_cstr(jarena *a, const char *s);
jv *jv_list(jarena *a, size_t cap);
jv *jv_dict(jarena *a);
jv *jv_func(jarena *a, int fk, const char *name, jv *self, const void *node, void *frame);

void jvec_push(jarena *a, jvec *v, jv *x);
void jv_append(jarena *a, jv *list, jv *x);
jv *jv_dict_get(const jv *d, const char *key, size_t n); /* NULL when absent */
jv *jv_dict_getv(const jv *d, const jv *key);             /* NULL when absent (keys compared ==) */
void jv_dict_set(jarena *a, jv *d, jv *key, jv *val);
void jv_dict_setc(jarena *a, jv *d, const char *key, jv *val);

int jv_truthy(const jv *v);
int jv_is_num(const jv *v); /* bool, int or float */
double jv_num(const jv *v);
int jv_eq(const jv *a, const jv *b); /* Python ==, deep */
/* Python <: returns -1/0/1 through *cmp; 0 when the types cannot be ordered. */
int jv_cmp(const jv *a, const jv *b, int *cmp);
const char *jv_type_name(const jv *v); /* Python's type name: 'str', 'int', 'dict', ... */

/* Text: str(), repr(), json.dumps() — into a growing arena buffer. */
typedef struct jbuf {
    char *p;
    size_t n, cap, limit; /* limit: 0 = none; more fails through the arena's jfail */
    jarena *a;
} jbuf;
void jb_put(jbuf *b, const char *s, size_t n);
void jb_puts(jbuf *b, const char *s);
void jb_putc(jbuf *b, char c);
void jv_write_str(jbuf *b, const jv *v);  /* str(v) */
void jv_write_repr(jbuf *b, const jv *v); /* repr(v) */
jv *jv_to_str(jarena *a, const jv *v);    /* str(v) as a JV_STR (v itself when already one) */
void jv_format_float(double x, char *out, size_t cap, int json); /* Python repr (json: NaN/Infinity) */
/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys); indent NULL or a str of spaces
 * (an int indent is turned into spaces by the caller); item_sep/key_sep NULL for the defaults. */
void jv_write_json(jbuf *b, const jv *v, const char *indent, const char *item_sep, const char *key_sep,
                   int sort_keys, int depth, int line);

/* UTF-8 code points: count, and the byte offset of code point i (i <= count). */
size_t ju_len(const char *s, size_t n);
size_t ju_off(const char *s, size_t n, size_t i);
/* The code point at s[i] (i < n) and, through *len, its byte length (1 for a malformed byte). */
unsigned ju_cp(const char *s, size_t n, size_t i, size_t *len);
/* Python's str.isspace() (and re's \s) for one code point. */
int ju_space(unsigned c);
/* Letter case (ucase.c): the scripts covered are listed there; ß upper-cases to "SS" in the
 * callers. ju_put writes cp as UTF-8 into o (4 bytes room) and returns its length. */
unsigned ju_lower(unsigned c);
unsigned ju_upper(unsigned c);
int ju_cased(unsigned c);
size_t ju_put(char *o, unsigned cp);
/* Byte length of s[n] without its trailing whitespace (Python's rstrip()). */
size_t ju_rstrip_len(const char *s, size_t n);

#endif
