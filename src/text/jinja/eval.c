/* eval.c — statements: output, if, for (jinja2's LoopContext, loop filters, else, break/continue),
 * set (names, unpacking, namespace attributes, blocks), macros and {% call %} with caller, filter
 * blocks, with. Scopes follow jinja2's compiled code: a for loop's body gets a fresh scope each
 * iteration (a set inside it is gone at the next one), if blocks share the enclosing scope,
 * macros see the scope they were defined in as it is when they are called. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text/jinja/eval.h"

_Noreturn void je_fail(jinterp *I, int line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(I->f, STENO_E_FORMAT, line, "%s", msg);
}

_Noreturn void je_unsupported(jinterp *I, int line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(I->f, STENO_E_UNSUPPORTED, line, "%s", msg);
}

_Noreturn void je_undefined(jinterp *I, int line, const jv *u) {
    const char *name = u->kind == JV_UNDEF ? u->u.uname : NULL;
    if (name && name[0] == '!') je_fail(I, line, "%s", name + 1); /* a message, not a name */
    if (name) je_fail(I, line, "'%s' is undefined", name);
    je_fail(I, line, "undefined value");
}

void je_check_poison(jinterp *I, const jv *v) {
    if (v->kind != JV_LIST || !v->poison) return;
    snprintf(I->f->msg, sizeof I->f->msg, "%s", v->poison);
    I->f->st = STENO_E_FORMAT;
    longjmp(I->f->jb, 1);
}

void je_tick(jinterp *I, int line) {
    if (++I->iters > I->o.max_iterations)
        je_fail(I, line, "more than %lld loop iterations and calls", (long long)I->o.max_iterations);
}

jv *jarg(const jargs *a, int i, const char *name) {
    if (i >= 0 && i < a->npos) return a->pos[i];
    if (name)
        for (int k = 0; k < a->nkw; k++)
            if (strcmp(a->kn[k], name) == 0) return a->kv[k];
    return NULL;
}

static jframe *frame_new(jinterp *I, jframe *parent) {
    jframe *f = ja_alloc(&I->a, sizeof *f);
    f->parent = parent;
    f->vars = jv_dict(&I->a);
    return f;
}

static void frame_set(jinterp *I, jframe *F, const char *name, jv *v) { jv_dict_setc(&I->a, F->vars, name, v); }

jv *je_lookup(jinterp *I, jframe *F, const char *name) {
    size_t n = strlen(name);
    for (; F; F = F->parent) {
        jv *v = jv_dict_get(F->vars, name, n);
        if (v) return v;
    }
    jv *v = jv_dict_get(I->ctx, name, n);
    if (v) return v;
    v = je_global(I, name);
    return v ? v : jv_undef(&I->a, name);
}

/* Renders body into a fresh buffer and returns its text. */
static jv *capture(jinterp *I, const jnode *body, jframe *F) {
    jbuf *saved = I->out, b = {.a = &I->a, .limit = I->o.max_output};
    I->out = &b;
    int ctl = 0;
    je_body(I, body, F, &ctl);
    I->out = saved;
    return jv_strref(&I->a, b.p ? b.p : "", b.n);
}

/* Applies a filter chain whose innermost subject is JN_CAPTURE to text. */
static jv *filter_chain(jinterp *I, const jnode *n, jv *text, jframe *F) {
    if (n->type == JN_CAPTURE) return text;
    jv *subj = filter_chain(I, n->a, text, F);
    jargs a = {.npos = n->nkids, .nkw = n->nnames, .kn = n->names};
    a.pos = ja_alloc(&I->a, (size_t)(n->nkids + n->nnames + 1) * sizeof(jv *));
    a.kv = a.pos + n->nkids;
    for (int i = 0; i < n->nkids; i++) a.pos[i] = je_expr(I, n->kids[i], F);
    for (int i = 0; i < n->nnames; i++) a.kv[i] = je_expr(I, n->defs[i], F);
    return je_filter(I, n->name, subj, &a, n->line);
}

static void assign(jinterp *I, const jnode *n, jframe *F, jv *v) {
    if (!n->neg) {
        frame_set(I, F, n->names[0], v);
        return;
    }
    jv *items = je_iter(I, v, n->line);
    if ((int)items->u.list.n != n->nnames)
        je_fail(I, n->line, "%s values to unpack (expected %d, got %zu)",
                (int)items->u.list.n > n->nnames ? "too many" : "not enough", n->nnames, items->u.list.n);
    for (int i = 0; i < n->nnames; i++) frame_set(I, F, n->names[i], items->u.list.v[i]);
}

static void run_for(jinterp *I, const jnode *n, jframe *F) {
    jv *seq = je_iter(I, je_expr(I, n->a, F), n->line);
    if (n->b) { /* the loop filter runs before the loop: loop.length counts what it keeps */
        jv *kept = jv_list(&I->a, seq->u.list.n);
        for (size_t i = 0; i < seq->u.list.n; i++) {
            je_tick(I, n->line);
            jframe *T = frame_new(I, F);
            assign(I, n, T, seq->u.list.v[i]);
            if (jv_truthy(je_expr(I, n->b, T))) jv_append(&I->a, kept, seq->u.list.v[i]);
        }
        seq = kept;
    }
    if (seq->u.list.n == 0) {
        if (n->c) {
            int ctl = 0;
            je_body(I, n->c, F, &ctl);
        }
        return;
    }
    jloop *L = ja_alloc(&I->a, sizeof *L);
    L->items = &seq->u.list;
    jv *loopv = ja_alloc(&I->a, sizeof *loopv);
    loopv->kind = JV_LOOP;
    loopv->u.loop = L;
    for (size_t i = 0; i < seq->u.list.n; i++) {
        je_tick(I, n->line);
        L->i = i;
        jframe *T = frame_new(I, F);
        frame_set(I, T, "loop", loopv);
        assign(I, n, T, seq->u.list.v[i]);
        int ctl = 0;
        je_body(I, n->body, T, &ctl);
        if (ctl == 1) break;
    }
}

jv *je_render_macro(jinterp *I, jv *fn, const jargs *args, int line) {
    const jnode *m = fn->u.fn.node;
    if (++I->depth > I->o.max_depth) je_fail(I, line, "macros nested deeper than %d calls", I->o.max_depth);
    je_tick(I, line);
    jframe *T = frame_new(I, fn->u.fn.frame);
    if (args->npos > m->nnames && !(m->neg & 1))
        je_fail(I, line, "macro '%s' takes not more than %d argument(s)", m->name ? m->name : "caller", m->nnames);
    for (int i = 0; i < m->nnames; i++) {
        jv *v = jarg(args, i, m->names[i]);
        if (!v) v = m->defs[i] ? je_expr(I, m->defs[i], T) : jv_undef(&I->a, m->names[i]);
        frame_set(I, T, m->names[i], v);
    }
    jv *kw = jv_dict(&I->a);
    for (int k = 0; k < args->nkw; k++) {
        int known = 0;
        for (int i = 0; i < m->nnames; i++) known |= strcmp(m->names[i], args->kn[k]) == 0;
        if (strcmp(args->kn[k], "caller") == 0) frame_set(I, T, "caller", args->kv[k]);
        else if (!known && !(m->neg & 2))
            je_fail(I, line, "macro '%s' takes no keyword argument '%s'", m->name ? m->name : "caller", args->kn[k]);
        else if (!known) jv_dict_setc(&I->a, kw, args->kn[k], args->kv[k]);
    }
    jv *varargs = jv_list(&I->a, 0);
    varargs->tuple = 1;
    for (int i = m->nnames; i < args->npos; i++) jv_append(&I->a, varargs, args->pos[i]);
    frame_set(I, T, "varargs", varargs);
    frame_set(I, T, "kwargs", kw);
    jv *text = capture(I, m->body, T);
    I->depth--;
    return text;
}

static void run_stmt(jinterp *I, const jnode *n, jframe *F, int *ctl) {
    switch (n->type) {
    case JN_TEXT: jb_put(I->out, n->val->u.s.p, n->val->u.s.n); return;
    case JN_EMIT: jv_write_str(I->out, je_expr(I, n->a, F)); return;
    case JN_BODY: je_body(I, n, F, ctl); return;
    case JN_IF:
        for (; n && n->type == JN_IF; n = n->b)
            if (jv_truthy(je_expr(I, n->a, F))) {
                je_body(I, n->body, F, ctl);
                return;
            }
        if (n) je_body(I, n, F, ctl);
        return;
    case JN_FOR: run_for(I, n, F); return;
    case JN_SET: assign(I, n, F, je_expr(I, n->a, F)); return;
    case JN_SETATTR: {
        jv *ns = je_lookup(I, F, n->name);
        if (ns->kind != JV_DICT || !ns->ns) je_fail(I, n->line, "cannot assign attribute on non-namespace object");
        jv_dict_setc(&I->a, ns, n->attr, je_expr(I, n->a, F));
        return;
    }
    case JN_SETBLOCK: {
        jv *text = capture(I, n->body, F);
        frame_set(I, F, n->names[0], n->a ? filter_chain(I, n->a, text, F) : text);
        return;
    }
    case JN_MACRO: frame_set(I, F, n->name, jv_func(&I->a, JF_MACRO, n->name, NULL, n, F)); return;
    case JN_CALLBLOCK: {
        const jnode *c = n->a;
        jv *callee = je_expr(I, c->a, F);
        jargs a = {.npos = c->nkids, .nkw = c->nnames + 1};
        a.pos = ja_alloc(&I->a, (size_t)(c->nkids + 1) * sizeof(jv *));
        a.kv = ja_alloc(&I->a, (size_t)(c->nnames + 1) * sizeof(jv *));
        a.kn = ja_alloc(&I->a, (size_t)(c->nnames + 1) * sizeof(char *));
        for (int i = 0; i < c->nkids; i++) a.pos[i] = je_expr(I, c->kids[i], F);
        for (int i = 0; i < c->nnames; i++) {
            a.kn[i] = c->names[i];
            a.kv[i] = je_expr(I, c->defs[i], F);
        }
        a.kn[c->nnames] = "caller";
        a.kv[c->nnames] = jv_func(&I->a, JF_CALLER, "caller", NULL, n, F);
        jv_write_str(I->out, je_call(I, callee, &a, n->line));
        return;
    }
    case JN_FILTERBLOCK: jv_write_str(I->out, filter_chain(I, n->a, capture(I, n->body, F), F)); return;
    case JN_WITH: {
        jframe *T = frame_new(I, F);
        for (int i = 0; i < n->nnames; i++) frame_set(I, T, n->names[i], je_expr(I, n->defs[i], F));
        je_body(I, n->body, T, ctl);
        return;
    }
    case JN_BREAK: *ctl = 1; return;
    case JN_CONTINUE: *ctl = 2; return;
    default: je_fail(I, n->line, "internal: statement %d", n->type);
    }
}

void je_body(jinterp *I, const jnode *body, jframe *F, int *ctl) {
    for (int i = 0; i < body->nkids && !*ctl; i++) run_stmt(I, body->kids[i], F, ctl);
}
