/* stop_text.c — see stop_text.h. */
#include "text/stop_text.h"

#include <stdlib.h>
#include <string.h>

void steno_stop_text_init(steno_stop_text *t, const char *const *stops, int n_stops) {
    memset(t, 0, sizeof *t);
    t->stops = stops;
    t->n_stops = n_stops;
}

void steno_stop_text_free(steno_stop_text *t) {
    free(t->buf);
    memset(t, 0, sizeof *t);
}

/* Bytes at the end of buf[0..len) that start a UTF-8 sequence the next bytes may still complete:
 * a lead byte C2..F4 followed by fewer continuation bytes than it needs. Bytes that can never be
 * valid (C0, C1, F5..FF, stray continuations) are not held: they are released and become U+FFFD. */
static size_t incomplete_tail(const char *buf, size_t len) {
    for (size_t k = 1; k <= 3 && k <= len; k++) {
        const unsigned char c = (unsigned char)buf[len - k];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: look further back */
        const size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
        return need > k ? k : 0;
    }
    return 0;
}

int steno_stop_text_push(steno_stop_text *t, const char *bytes, size_t n, size_t *from, size_t *n_out) {
    *from = t->released;
    *n_out = 0;
    if (t->matched) return 1;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) return -1;
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, bytes, n);
    t->len += n;
    t->buf[t->len] = '\0';
    /* No stop string can begin before `released` (it would have been held back), so the search
     * starts there; the earliest match over all stop strings wins. */
    size_t cut = t->len;
    for (int i = 0; i < t->n_stops; i++) {
        const char *s = t->stops[i];
        if (!s || !*s) continue;
        /* memmem, not strstr: a generated piece may hold a NUL byte (byte-level tokens) */
        const char *hit = memmem(t->buf + t->released, t->len - t->released, s, strlen(s));
        if (hit && (size_t)(hit - t->buf) < cut) cut = (size_t)(hit - t->buf);
    }
    if (cut < t->len) {
        t->matched = 1;
        t->len = cut;
        t->buf[cut] = '\0';
        *n_out = cut - t->released;
        t->released = cut;
        return 1;
    }
    /* hold back the longest tail that is a proper prefix of a stop string */
    size_t hold = 0;
    for (int i = 0; i < t->n_stops; i++) {
        const char *s = t->stops[i];
        if (!s || !*s) continue;
        const size_t sl = strlen(s);
        for (size_t k = sl - 1 < t->len - t->released ? sl - 1 : t->len - t->released; k > hold; k--)
            if (memcmp(t->buf + t->len - k, s, k) == 0) {
                hold = k;
                break;
            }
    }
    size_t end = t->len - hold;
    end -= incomplete_tail(t->buf, end);
    if (end < t->released) end = t->released;
    *n_out = end - t->released;
    t->released = end;
    return 0;
}

void steno_stop_text_flush(steno_stop_text *t, size_t *from, size_t *n_out) {
    *from = t->released;
    *n_out = t->len - t->released;
    t->released = t->len;
}
