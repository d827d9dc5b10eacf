/* test_stop_text.c — the stop-string matcher of the server's text streams (text/stop_text.h):
 * hold-back of partial stop strings and split characters, the earliest of several stop strings,
 * and the finds of fuzz/fuzz_stop_text.c (a NUL byte before a stop string; bytes that can never
 * be valid UTF-8 are released, not held). */
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "text/stop_text.h"

/* Pushes pieces (NULL-terminated list of {bytes, len}); returns the released text (static) and
 * whether a stop matched. */
typedef struct piece {
    const char *b;
    size_t n;
} piece;

static const char *run(const char *const *stops, int n_stops, const piece *pieces, int *matched, int flush,
                       size_t *held_max) {
    static char out[4096];
    size_t ol = 0;
    steno_stop_text t;
    steno_stop_text_init(&t, stops, n_stops);
    *matched = 0;
    if (held_max) *held_max = 0;
    for (const piece *p = pieces; p->b; p++) {
        size_t from, n;
        const int hit = steno_stop_text_push(&t, p->b, p->n, &from, &n);
        if (n) memcpy(out + ol, t.buf + from, n);
        ol += n;
        if (held_max && t.len - t.released > *held_max) *held_max = t.len - t.released;
        if (hit) {
            *matched = 1;
            break;
        }
    }
    if (!*matched && flush) {
        size_t from, n;
        steno_stop_text_flush(&t, &from, &n);
        if (n) memcpy(out + ol, t.buf + from, n);
        ol += n;
    }
    out[ol] = '\0';
    steno_stop_text_free(&t);
    return out;
}

#define P(s) {s, sizeof(s) - 1}

int main(void) {
    int m;
    size_t held;
    const char *paris[] = {"Paris"};
    const piece a[] = {P("The capital"), P(" is Pa"), P("ri"), P("s."), P(" More"), {NULL, 0}};
    CHECK(strcmp(run(paris, 1, a, &m, 1, &held), "The capital is ") == 0 && m, "stop across three pieces");
    CHECK(held >= 4, "\"Pari\" was held back (held at most %zu)", held);
    const piece b[] = {P("The capital"), P(" is Pa"), P("ri."), {NULL, 0}};
    CHECK(strcmp(run(paris, 1, b, &m, 1, NULL), "The capital is Pari.") == 0 && !m,
          "a partial stop string that does not complete is released at the flush");
    CHECK(strcmp(run(paris, 1, b, &m, 0, NULL), "The capital is Pari.") == 0, "... and as soon as it cannot complete");
    const char *two[] = {"\n\n", "END"};
    const piece c[] = {P("one END two"), P("\n\nthree"), {NULL, 0}};
    CHECK(strcmp(run(two, 2, c, &m, 1, NULL), "one ") == 0 && m, "the earliest of two stop strings");
    /* a character split over two pieces is not released half */
    const piece d[] = {{"caf\xc3", 4}, {"\xa9!", 2}, {NULL, 0}};
    steno_stop_text t;
    steno_stop_text_init(&t, NULL, 0);
    size_t from, n;
    steno_stop_text_push(&t, d[0].b, d[0].n, &from, &n);
    CHECK(n == 3, "the lead byte of a split character is held (%zu released)", n);
    steno_stop_text_push(&t, d[1].b, d[1].n, &from, &n);
    CHECK(n == 3 && memcmp(t.buf + from, "\xc3\xa9!", 3) == 0, "then released whole");
    steno_stop_text_free(&t);
    /* fuzz find: bytes that can never be valid UTF-8 (F5..FF) are released, not held */
    steno_stop_text_init(&t, NULL, 0);
    steno_stop_text_push(&t, "ab\xf6\xf6", 4, &from, &n);
    CHECK(n == 4, "invalid lead bytes are not held (%zu of 4 released)", n);
    steno_stop_text_free(&t);
    /* fuzz find: a NUL byte in a piece does not hide a stop string after it */
    const char *cafe[] = {"caf\xc3\xa9"};
    const piece e[] = {{"un\0\0caf\xc3\xa9 au lait", 15}, {NULL, 0}};
    run(cafe, 1, e, &m, 1, NULL);
    CHECK(m, "a stop string after a NUL byte is found");
    printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}
