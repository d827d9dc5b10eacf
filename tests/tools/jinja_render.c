/* jinja_render.c — test-only: renders a chat template with steno's Jinja interpreter for
 * tests/py/test_chat_templates.py, which compares the output with Python's jinja2.
 *   jinja_render TEMPLATE_FILE CONTEXT_JSON_FILE [NOW_UNIX_SECONDS]
 *     prints the rendering to stdout (exit 0), or "error: <message>" to stderr (exit 1);
 *   jinja_render --batch TEMPLATE_FILE NOW CONTEXT_JSON_FILE...
 *     compiles the template once and renders it with each context, printing for each
 *     "ok <bytes>\n<rendering>\n" or "error <message>\n" (exit 0; a compile error is an
 *     error line for every context).
 * Exit 2 on usage or unreadable input. NOW fixes strftime_now's time (as UTC wall-clock time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    size_t r;
    while (p && (r = fread(p + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (cap - len < 2) {
            char *q = realloc(p, cap *= 2);
            if (!q) {
                free(p);
                p = NULL;
            } else p = q;
        }
    }
    fclose(f);
    if (p) p[len] = '\0';
    *n = len;
    return p;
}

static int batch(int argc, char **argv) {
    size_t tn;
    char *tmpl = slurp(argv[2], &tn);
    if (!tmpl) return 2;
    steno_jinja_opts o;
    steno_jinja_default_opts(&o);
    o.now = strtoll(argv[3], NULL, 10);
    steno_jinja_template *t = NULL;
    steno_status cst = steno_jinja_compile(tmpl, tn, &t);
    char cerr[512];
    snprintf(cerr, sizeof cerr, "%s", cst == STENO_OK ? "" : steno_errmsg());
    for (int i = 4; i < argc; i++) {
        size_t cn;
        char *ctx = slurp(argv[i], &cn), *out = NULL;
        cJSON *j = ctx ? cJSON_Parse(ctx) : NULL;
        free(ctx);
        if (!j) return 2;
        if (cst != STENO_OK) printf("error %s\n", cerr);
        else if (steno_jinja_render_compiled(t, j, &o, &out) == STENO_OK) {
            printf("ok %zu\n", strlen(out));
            fwrite(out, 1, strlen(out), stdout);
            putchar('\n');
        } else printf("error %s\n", steno_errmsg());
        free(out);
        cJSON_Delete(j);
    }
    steno_jinja_template_free(t);
    free(tmpl);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "--batch") == 0) return batch(argc, argv);
    if (argc < 3) {
        fprintf(stderr, "usage: jinja_render TEMPLATE_FILE CONTEXT_JSON_FILE [NOW]\n");
        return 2;
    }
    size_t tn, cn;
    char *tmpl = slurp(argv[1], &tn), *ctx = slurp(argv[2], &cn);
    if (!tmpl || !ctx) {
        fprintf(stderr, "jinja_render: cannot read input\n");
        return 2;
    }
    cJSON *j = cJSON_Parse(ctx);
    if (!j) {
        fprintf(stderr, "jinja_render: context is not JSON\n");
        return 2;
    }
    steno_jinja_opts o;
    steno_jinja_default_opts(&o);
    if (argc > 3) o.now = strtoll(argv[3], NULL, 10);
    char *out = NULL, err[512];
    steno_status st = steno_jinja_render(tmpl, tn, j, &o, &out, err, sizeof err);
    int rc = 0;
    if (st == STENO_OK) fwrite(out, 1, strlen(out), stdout);
    else {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    }
    free(out);
    cJSON_Delete(j);
    free(tmpl);
    free(ctx);
    return rc;
}
