/* options.c — the table-driven option parser and help writer of the verbs (cli/options.h). */
#include "options.h"

#include "steno.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HELP_WIDTH 100

void steno_opt_list_free(steno_opt_list *l) {
    free(l->items);
    l->items = NULL;
    l->n = l->cap = 0;
}

bool steno_opts_parse_bool(const char *s, bool *out) {
    if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes")) { *out = true; return true; }
    if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no")) { *out = false; return true; }
    return false;
}

bool steno_opts_parse_nonempty(const char *v, void *dst, steno_opt_error *err) {
    if (!*v) {
        snprintf(err->msg, sizeof err->msg, "the value is empty");
        return false;
    }
    if (dst) *(const char **)dst = v;
    return true;
}

/* One error line: the spec's prefix, the message (a value's line breaks as spaces, so that it
 * stays one line), and where the help is. Returns 2. */
__attribute__((format(printf, 2, 3))) static int fail(const steno_opts_spec *spec, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    fputs(spec->err_prefix ? spec->err_prefix : "steno: ", stderr);
    fputs(msg, stderr);
    if (spec->verb) fprintf(stderr, " (see 'steno %s --help')", spec->verb);
    fputc('\n', stderr);
    return 2;
}

/* The k-th '|'-separated piece of s (its start and length), or false past the last. */
static bool piece(const char *s, int k, const char **start, size_t *len) {
    if (!s) return false;
    for (int i = 0; i < k; i++) {
        s = strchr(s, '|');
        if (!s) return false;
        s++;
    }
    *start = s;
    *len = strcspn(s, "|");
    return true;
}

static bool has_value(steno_opt_type t) {
    return t != STENO_OPT_SECTION && t != STENO_OPT_FLAG && t != STENO_OPT_HELP && t != STENO_OPT_VERSION &&
           t != STENO_OPT_UNSUPPORTED;
}

static bool is_numeric(steno_opt_type t) {
    return t == STENO_OPT_INT || t == STENO_OPT_DOUBLE || t == STENO_OPT_FLOAT;
}

/* Whether row o has the spelling name[0..len). */
static bool spelled_as(const steno_opt *o, const char *name, size_t len, const char **spelled) {
    const char *s;
    size_t n;
    for (int k = 0; piece(o->names, k, &s, &n); k++) {
        if (n == len && memcmp(s, name, n) == 0) {
            *spelled = s;
            return true;
        }
    }
    return false;
}

static const steno_opt *find_in(const steno_opts_spec *spec, const char *name, size_t len, const char **spelled) {
    for (size_t r = 0; r < spec->n_opts; r++)
        if (spec->opts[r].type != STENO_OPT_SECTION && spelled_as(&spec->opts[r], name, len, spelled))
            return &spec->opts[r];
    return NULL;
}

/* The row whose spelling is a (a long name up to '=', with '_' as '-' when the spec says so),
 * from spec's rows, else the shared ones (*shared set); *spelled: the row's spelling (errors
 * name it so), *inline_v: the value after '=' or NULL. */
static const steno_opt *find(const steno_opts_spec *spec, const char *a, const char **spelled, size_t *spelled_len,
                             const char **inline_v, bool *shared) {
    char name[128];
    size_t len = strlen(a);
    *inline_v = NULL;
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    if (eq) len = (size_t)(eq - a);
    if (len >= sizeof name) return NULL;
    memcpy(name, a, len);
    name[len] = '\0';
    if (spec->underscores && a[1] == '-')
        for (char *c = name + 2; *c; c++)
            if (*c == '_') *c = '-';
    *shared = false;
    const steno_opt *o = find_in(spec, name, len, spelled);
    if (!o && spec->shared && (o = find_in(spec->shared, name, len, spelled))) *shared = true;
    if (o) {
        *spelled_len = len;
        if (eq) *inline_v = eq + 1;
    }
    return o;
}

static void fmt_num(char *buf, size_t n, double v) {
    if (v == floor(v) && fabs(v) < 1e18) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%g", v);
}

/* The range as the help and the errors write it: "0..256", ">= 1", "> 0", "<= 1"; "" if none. */
static void range_text(const steno_opt *o, char *buf, size_t n) {
    char lo[32], hi[32];
    fmt_num(lo, sizeof lo, o->min);
    fmt_num(hi, sizeof hi, o->max);
    if (o->has_min && o->has_max && !o->min_excl) snprintf(buf, n, "%s..%s", lo, hi);
    else if (o->has_min) snprintf(buf, n, "%s %s", o->min_excl ? ">" : ">=", lo);
    else if (o->has_max) snprintf(buf, n, "<= %s", hi);
    else buf[0] = '\0';
}

/* What a value of o must be, after "expected ": "an integer in 0..256", "fast or faithful". */
static void expected(const steno_opt *o, char *buf, size_t n) {
    char range[80];
    range_text(o, range, sizeof range);
    const char *what = o->type == STENO_OPT_DOUBLE || o->type == STENO_OPT_FLOAT ? "a number" : "an integer";
    switch (o->type) {
    case STENO_OPT_BOOL: snprintf(buf, n, "True or False"); return;
    case STENO_OPT_U64:
    case STENO_OPT_SIZE:
        if (!*range) snprintf(buf, n, "an integer >= 0");
        else break;
        return;
    case STENO_OPT_CHOICE: {
        size_t at = 0;
        const char *s;
        size_t len;
        int count = 0;
        while (piece(o->choices, count, &s, &len)) count++;
        buf[0] = '\0';
        for (int k = 0; k < count && at < n; k++) {
            piece(o->choices, k, &s, &len);
            at += (size_t)snprintf(buf + at, n - at, "%s%.*s", k == 0 ? "" : k == count - 1 ? " or " : ", ",
                                   (int)len, s);
        }
        return;
    }
    case STENO_OPT_CUSTOM: snprintf(buf, n, "%s", o->expect ? o->expect : "a valid value"); return;
    default: break;
    }
    if (!*range) snprintf(buf, n, "%s%s", what, o->flags & STENO_OPT_NONE_OK ? " or None" : "");
    else
        snprintf(buf, n, "%s %s%s%s", what, o->has_min && o->has_max && !o->min_excl ? "in " : "", range,
                 o->flags & STENO_OPT_NONE_OK ? " or None" : "");
}

static bool in_range(const steno_opt *o, double v) {
    if (o->has_min && (o->min_excl ? !(v > o->min) : !(v >= o->min))) return false;
    if (o->has_max && !(v <= o->max)) return false;
    return true;
}

static bool list_add(steno_opt_list *l, const char *v) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        const char **items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return true;
}

/* Stores v for row o at dst (NULL: checked only). Returns 0, or 2 after the error line. */
static int store(const steno_opts_spec *spec, const steno_opt *o, const char *name, void *dst, const char *v) {
    char why[320];
    if ((o->flags & STENO_OPT_NONE_OK) && strcmp(v, "None") == 0 && is_numeric(o->type)) {
        if (!dst) return 0;
        if (o->type == STENO_OPT_INT) *(int *)dst = (int)o->none_value;
        else if (o->type == STENO_OPT_DOUBLE) *(double *)dst = o->none_value;
        else *(float *)dst = (float)o->none_value;
        return 0;
    }
    char *end;
    errno = 0;
    switch (o->type) {
    case STENO_OPT_BOOL: {
        bool b;
        if (!steno_opts_parse_bool(v, &b)) break;
        if (dst) *(bool *)dst = b;
        return 0;
    }
    case STENO_OPT_INT: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno == ERANGE || x < INT_MIN || x > INT_MAX || !in_range(o, (double)x)) break;
        if (dst) *(int *)dst = (int)x;
        return 0;
    }
    case STENO_OPT_U64:
    case STENO_OPT_SIZE: {
        unsigned long long x = strtoull(v, &end, 10);
        if (!*v || *end || errno || v[0] == '-' || v[0] == '+' || v[0] == ' ' || !in_range(o, (double)x)) break;
        if (o->type == STENO_OPT_SIZE && x > SIZE_MAX) break;
        if (dst && o->type == STENO_OPT_U64) *(unsigned long long *)dst = x;
        else if (dst) *(size_t *)dst = (size_t)x;
        return 0;
    }
    case STENO_OPT_DOUBLE:
    case STENO_OPT_FLOAT: {
        double x = strtod(v, &end);
        if (end == v || *end || errno == ERANGE || !isfinite(x) || !in_range(o, x)) break;
        if (dst && o->type == STENO_OPT_DOUBLE) *(double *)dst = x;
        else if (dst) *(float *)dst = (float)x;
        return 0;
    }
    case STENO_OPT_STRING:
        if (dst) *(const char **)dst = v;
        return 0;
    case STENO_OPT_CHOICE: {
        const char *s;
        size_t len;
        for (int k = 0; piece(o->choices, k, &s, &len); k++) {
            const bool same = strlen(v) == len && ((o->flags & STENO_OPT_NOCASE) ? strncasecmp(v, s, len) == 0
                                                                                 : strncmp(v, s, len) == 0);
            if (!same) continue;
            if (dst && (o->flags & STENO_OPT_AS_STRING)) *(const char **)dst = v;
            else if (dst) *(int *)dst = o->values ? o->values[k] : k;
            return 0;
        }
        break;
    }
    case STENO_OPT_LIST: {
        steno_opt_list *l = dst;
        if (!l) return 0;
        if (o->max_items && l->n >= o->max_items)
            return fail(spec, "too many %s (at most %d)", o->items ? o->items : "values", o->max_items);
        if (!list_add(l, v)) return fail(spec, "out of memory");
        return 0;
    }
    case STENO_OPT_CUSTOM: {
        steno_opt_error err = {{0}};
        if (o->parse(v, dst, &err)) return 0;
        if (err.msg[0]) return fail(spec, "%s: %s", name, err.msg);
        break;
    }
    default: break;
    }
    expected(o, why, sizeof why);
    return fail(spec, "%s: expected %s, got '%s'", name, why, v);
}

int steno_opts_parse(const steno_opts_spec *spec, void *base, int argc, char **argv) {
    return steno_opts_parse_shared(spec, base, NULL, argc, argv);
}

int steno_opts_parse_shared(const steno_opts_spec *spec, void *base, void *shared_base, int argc, char **argv) {
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || strcmp(a, "-") == 0) {
            const steno_opt *p = spec->positional;
            if (!p) return fail(spec, "unexpected argument '%s'", a);
            int r = store(spec, p, a, p->at ? (char *)base + p->at - 1 : NULL, a);
            if (r) return r;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = true;
            continue;
        }
        const char *spelled, *inline_v;
        size_t len;
        bool shared;
        const steno_opt *o = find(spec, a, &spelled, &len, &inline_v, &shared);
        if (!o) return fail(spec, "unknown option '%s'", a);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, spelled);
        if (o->type == STENO_OPT_UNSUPPORTED) return fail(spec, "not supported: %s (%s)", a, o->help);
        if (!has_value(o->type) && inline_v) return fail(spec, "option %s takes no value", name);
        char *at = shared ? shared_base : base;
        void *dst = o->at && at ? at + o->at - 1 : NULL;
        switch (o->type) {
        case STENO_OPT_HELP:
            if (spec->usage) spec->usage(stdout);
            return 0;
        case STENO_OPT_VERSION:
            printf("steno %s\n", STENO_VERSION);
            return 0;
        case STENO_OPT_FLAG:
            if (dst) *(bool *)dst = true;
            if (o->given && at) *(bool *)(at + o->given - 1) = true;
            continue;
        default: break;
        }
        const char *v = inline_v;
        if (!v) {
            if (i + 1 >= argc) return fail(spec, "option %s needs a value", name);
            v = argv[++i];
        }
        int r = store(spec, o, name, dst, v);
        if (r) return r;
        if (o->given && at) *(bool *)(at + o->given - 1) = true;
    }
    return -1;
}

/* ---- help -------------------------------------------------------------------------------- */

/* Writes text from column `at` (the cursor's), wrapped at HELP_WIDTH with continuation lines
 * indented to col; '\n' in text forces a break. Ends the line. */
static void wrapped(FILE *f, const char *text, int at, int col) {
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " \n");
        if (at > col && at + 1 + (int)word > HELP_WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, word, f);
        at += (int)word;
        p += word;
        if (*p == '\n') {
            fprintf(f, "\n%*s", col, "");
            at = col;
            p++;
        }
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

/* The value's name in the help: the row's metavar, its choices, True|False, or "" for a flag. */
static const char *value_name(const steno_opt *o) {
    if (o->metavar) return o->metavar;
    if (o->type == STENO_OPT_CHOICE) return o->choices;
    if (o->type == STENO_OPT_BOOL) return "True|False";
    return has_value(o->type) && o->type != STENO_OPT_UNSUPPORTED ? "V" : "";
}

/* The help line of a row: its text, then "(RANGE; default: X)" from the same row. */
static void help_text(const steno_opt *o, const char *def, char *buf, size_t n) {
    char range[80] = "";
    if (is_numeric(o->type) || o->type == STENO_OPT_U64 || o->type == STENO_OPT_SIZE) {
        range_text(o, range, sizeof range);
        if (!*range && (o->flags & STENO_OPT_NONE_OK))
            snprintf(range, sizeof range, "%s", o->type == STENO_OPT_INT ? "an integer" : "a number");
        if (o->flags & STENO_OPT_NONE_OK) strncat(range, " or None", sizeof range - strlen(range) - 1);
    } else if (o->type == STENO_OPT_CUSTOM && o->expect && !strchr(value_name(o), '|')) {
        snprintf(range, sizeof range, "%s", o->expect);
    }
    int at = snprintf(buf, n, "%s", o->help ? o->help : "");
    if (*range || def) {
        snprintf(buf + at, n - (size_t)at, "%s(%s%s%s%s)", at ? " " : "", range, *range && def ? "; " : "",
                 def ? "default: " : "", def ? def : "");
    }
}

static void help_gnu(FILE *f, const steno_opts_spec *spec, const steno_opt *o) {
    char left[256], text[1024];
    int at = snprintf(left, sizeof left, "  %s", spec->align_long && o->names[1] == '-' ? "    " : "");
    const char *s;
    size_t len;
    for (int k = 0; piece(o->names, k, &s, &len); k++)
        at += snprintf(left + at, sizeof left - (size_t)at, "%s%.*s", k ? ", " : "", (int)len, s);
    const char *vn = value_name(o);
    if (*vn) at += snprintf(left + at, sizeof left - (size_t)at, " %s", vn);
    help_text(o, o->def, text, sizeof text);
    const int col = spec->help_col > 0 ? spec->help_col : 26;
    if (at <= col - 2) fprintf(f, "%-*s", col, left);
    else fprintf(f, "%s\n%*s", left, col, "");
    wrapped(f, text, col, col);
}

static void help_wcpp(FILE *f, const steno_opt *o, const void *defaults) {
    char shortn[64] = "", longn[64] = "", def[64] = "", text[1024];
    const char *vn = value_name(o), *s;
    size_t len;
    for (int k = 0; piece(o->names, k, &s, &len); k++) {
        char *dst = s[1] == '-' ? longn : shortn;
        if (!*dst) snprintf(dst, 64, "%.*s%s%s%s", (int)len, s, *vn ? " " : "", vn, s[1] == '-' ? "" : ",");
    }
    const void *at = defaults && o->at ? (const char *)defaults + o->at - 1 : NULL;
    if (o->def) snprintf(def, sizeof def, "%s", o->def);
    else if (at && o->type == STENO_OPT_INT) snprintf(def, sizeof def, "%d", *(const int *)at);
    else if (at && o->type == STENO_OPT_FLOAT) snprintf(def, sizeof def, "%.2f", *(const float *)at);
    else if (at && o->type == STENO_OPT_DOUBLE) snprintf(def, sizeof def, "%.2f", *(const double *)at);
    else if (at && (o->type == STENO_OPT_FLAG || o->type == STENO_OPT_BOOL))
        snprintf(def, sizeof def, "%s", *(const bool *)at ? "true" : "false");
    else if (at && o->type == STENO_OPT_STRING && *(const char *const *)at)
        snprintf(def, sizeof def, "%s", *(const char *const *)at);
    help_text(o, NULL, text, sizeof text);
    /* a long name that fills its column keeps one space before the default, as whisper-cli's */
    const int extra = (strlen(longn) >= 20 ? (int)strlen(longn) - 19 : 0) + (int)(strlen(def) > 7 ? strlen(def) - 7 : 0);
    /* past the help column, wrapped() starts with the space itself */
    fprintf(f, "  %-11s%-20s%s[%-7s]%s", shortn, longn, strlen(longn) >= 20 ? " " : "", def, extra ? "" : " ");
    wrapped(f, text, 2 + 11 + 20 + 10 + (extra ? extra - 1 : 0), 2 + 11 + 20 + 10);
}

/* Whether a row of spec has o's first spelling (and so replaces the shared row o). */
static bool replaced(const steno_opts_spec *spec, const steno_opt *o) {
    const char *s, *spelled;
    size_t len;
    return o->type != STENO_OPT_SECTION && piece(o->names, 0, &s, &len) && find_in(spec, s, len, &spelled);
}

void steno_opts_help(FILE *f, const steno_opts_spec *spec, const void *defaults) {
    const size_t n_shared = spec->shared ? spec->shared->n_opts : 0;
    for (size_t r = 0; r < spec->n_opts + n_shared; r++) {
        const bool shared = r >= spec->n_opts;
        const steno_opt *o = shared ? &spec->shared->opts[r - spec->n_opts] : &spec->opts[r];
        if (shared && replaced(spec, o)) continue;
        if (o->type == STENO_OPT_SECTION) fprintf(f, "%s\n", o->help);
        else if (o->type == STENO_OPT_UNSUPPORTED) continue;
        else if (spec->style == STENO_OPTS_WCPP) help_wcpp(f, o, shared ? NULL : defaults);
        else help_gnu(f, spec, o);
    }
}

void steno_opts_help_unsupported(FILE *f, const steno_opts_spec *spec, int width) {
    int at = -1;
    for (size_t r = 0; r < spec->n_opts; r++) {
        const steno_opt *o = &spec->opts[r];
        const char *s;
        size_t len;
        if (o->type != STENO_OPT_UNSUPPORTED || !piece(o->names, 0, &s, &len)) continue;
        if (at < 0) at = fprintf(f, "not supported:");
        if (at + 1 + (int)len > width) {
            fputc('\n', f);
            at = 0;
        } else {
            fputc(' ', f);
            at++;
        }
        at += fprintf(f, "%.*s", (int)len, s);
    }
    if (at >= 0) fputc('\n', f);
}
