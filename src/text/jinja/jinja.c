/* jinja.c — the interpreter's entry points (jinja.h): compile (lexer.c, parser.c) into a template
 * that owns its arena, render (eval.c) with a per-render arena holding every value, the context's
 * JSON turned into values (a JSON number without a fraction or exponent that fits in int64 is an
 * int, like Python's json.loads; cJSON keeps no source text, so an integral float such as 1.0
 * becomes int 1). Errors unwind to here by longjmp from the place that knows the line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/jinja/eval.h"
#include "text/jinja/lexer.h"

void steno_jinja_default_opts(steno_jinja_opts *o) {
    o->max_output = (size_t)8 << 20;
    o->max_memory = (size_t)256 << 20;
    o->max_iterations = 10000000;
    o->max_depth = 64;
    o->now = -1;
}

steno_status steno_jinja_compile(const char *tmpl, size_t len, steno_jinja_template **out) {
    *out = NULL;
    steno_jinja_template *t = calloc(1, sizeof *t);
    if (!t) return steno_fail(STENO_E_NOMEM, "chat template: out of memory");
    t->arena.f = &t->fail;
    t->arena.limit = (size_t)64 << 20 > len * 64 ? (size_t)64 << 20 : len * 64;
    if (setjmp(t->fail.jb)) {
        steno_status st = steno_fail(t->fail.st, "%s", t->fail.msg);
        ja_free(&t->arena);
        free(t);
        return st;
    }
    jtok *toks;
    size_t n;
    jlex(&t->arena, tmpl ? tmpl : "", tmpl ? len : 0, &toks, &n);
    t->root = jparse(&t->arena, toks, n);
    *out = t;
    return STENO_OK;
}

void steno_jinja_template_free(steno_jinja_template *t) {
    if (!t) return;
    ja_free(&t->arena);
    free(t);
}

static jv *from_json(jinterp *I, const cJSON *j, int depth) {
    jarena *A = &I->a;
    if (depth > 1000) jfail_at(I->f, STENO_E_FORMAT, 0, "context nested too deeply");
    if (cJSON_IsNull(j)) return JV_NONE_V;
    if (cJSON_IsTrue(j)) return JV_TRUE;
    if (cJSON_IsFalse(j)) return JV_FALSE;
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0) return jv_int(A, (int64_t)d);
        return jv_float(A, d);
    }
    if (cJSON_IsString(j)) return jv_cstr(A, j->valuestring ? j->valuestring : "");
    if (cJSON_IsArray(j)) {
        jv *l = jv_list(A, (size_t)cJSON_GetArraySize(j));
        for (const cJSON *c = j->child; c; c = c->next) jv_append(A, l, from_json(I, c, depth + 1));
        return l;
    }
    if (cJSON_IsObject(j)) {
        jv *d = jv_dict(A);
        /* appended without a search for duplicates (a large object would cost n^2 compares);
         * a duplicated key keeps its first value where json.loads keeps the last */
        for (const cJSON *c = j->child; c; c = c->next) {
            jvec_push(A, &d->u.dict.keys, jv_cstr(A, c->string ? c->string : ""));
            jvec_push(A, &d->u.dict.vals, from_json(I, c, depth + 1));
        }
        return d;
    }
    return JV_NONE_V;
}

steno_status steno_jinja_render_compiled(const steno_jinja_template *t, const cJSON *context,
                                         const steno_jinja_opts *opts, char **out) {
    *out = NULL;
    jfail f;
    jinterp I = {0};
    if (opts) I.o = *opts;
    else steno_jinja_default_opts(&I.o);
    I.f = &f;
    I.a.f = &f;
    I.a.limit = I.o.max_memory;
    if (setjmp(f.jb)) {
        steno_status st = steno_fail(f.st, "%s", f.msg);
        ja_free(&I.a);
        return st;
    }
    I.ctx = context && cJSON_IsObject(context) ? from_json(&I, context, 0) : jv_dict(&I.a);
    jbuf b = {.a = &I.a, .limit = I.o.max_output};
    I.out = &b;
    jframe *root = ja_alloc(&I.a, sizeof *root);
    root->vars = jv_dict(&I.a);
    int ctl = 0;
    je_body(&I, t->root, root, &ctl);
    char *s = malloc(b.n + 1);
    if (!s) {
        ja_free(&I.a);
        return steno_fail(STENO_E_NOMEM, "chat template: out of memory");
    }
    if (b.n) memcpy(s, b.p, b.n);
    s[b.n] = '\0';
    ja_free(&I.a);
    *out = s;
    return STENO_OK;
}

steno_status steno_jinja_render(const char *tmpl, size_t len, const cJSON *context, const steno_jinja_opts *opts,
                                char **out, char *err, size_t errlen) {
    steno_jinja_template *t;
    steno_status st = steno_jinja_compile(tmpl, len, &t);
    if (st == STENO_OK) {
        st = steno_jinja_render_compiled(t, context, opts, out);
        steno_jinja_template_free(t);
    } else *out = NULL;
    if (st != STENO_OK && err && errlen) {
        const char *m = steno_errmsg();
        size_t n = strlen(m);
        if (n >= errlen) n = errlen - 1;
        memcpy(err, m, n);
        err[n] = '\0';
    }
    return st;
}
