/* fuzz_stop_text.c — libFuzzer target for the stop-string matcher of the server's text streams
 * (src/text/stop_text.c). Input: bytes split at 0xFF; the first (data[0] % 4) parts after the
 * first byte are stop strings, the rest are the generated pieces pushed one by one.
 *
 * Invariants: the released bytes are a prefix of the generated text; they never contain a stop
 * string; before the flush they never split a UTF-8 sequence the text continues (cuts_sequence); at most (longest stop − 1 + 3)
 * bytes are held back; a match is reported exactly when a stop string occurs in the generated
 * text, and the release then ends right before its earliest occurrence; after the flush without
 * a match, the released bytes are the whole text.
 * Run: scripts/fuzz.sh stop_text 10 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/stop_text.h"

static size_t earliest(const char *text, size_t len, char **stops, int n) {
    size_t best = (size_t)-1;
    for (int i = 0; i < n; i++) {
        const size_t sl = strlen(stops[i]);
        if (!sl || sl > len) continue;
        for (size_t p = 0; p + sl <= len && p < best; p++)
            if (memcmp(text + p, stops[i], sl) == 0) {
                best = p;
                break;
            }
    }
    return best;
}

/* 1 when a release ending at cut splits a UTF-8 sequence that may still be valid: the bytes
 * before cut are an incomplete sequence (lead C2..F4 and too few continuation bytes) and the text
 * continues it (the next byte is a continuation byte) or may still (cut is the end so far). */
static int cuts_sequence(const char *t, size_t cut, size_t len) {
    for (size_t b = 1; b <= 3 && b <= cut; b++) {
        const unsigned char c = (unsigned char)t[cut - b];
        if ((c & 0xC0) == 0x80) continue;
        const size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
        if (need <= b) return 0;
        return cut == len || ((unsigned char)t[cut] & 0xC0) == 0x80;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int n_stops = data[0] % 4;
    char *stops[3] = {0};
    char *text = malloc(size + 1), *released = malloc(size + 1);
    if (!text || !released) abort();
    size_t tl = 0, rl = 0, maxstop = 0;
    steno_stop_text st;
    int k = 0, matched = 0;
    size_t i = 1;
    while (k < n_stops) { /* the stop strings (NUL-free: stop strings are C strings) */
        size_t j = i;
        while (j < size && data[j] != 0xFF) j++;
        stops[k] = calloc(j - i + 1, 1);
        if (!stops[k]) abort();
        for (size_t q = i; q < j; q++) stops[k][q - i] = data[q] ? (char)data[q] : 'x';
        if (strlen(stops[k]) > maxstop) maxstop = strlen(stops[k]);
        k++;
        i = j < size ? j + 1 : j;
    }
    steno_stop_text_init(&st, (const char *const *)stops, n_stops);
    while (i < size && !matched) {
        size_t j = i;
        while (j < size && data[j] != 0xFF) j++;
        if (j > i) memcpy(text + tl, data + i, j - i);
        tl += j - i;
        size_t from, n;
        const int hit = steno_stop_text_push(&st, (const char *)data + i, j - i, &from, &n);
        if (hit < 0) abort();
        if (from != rl || (n && memcmp(st.buf + from, text + from, n) != 0)) abort(); /* released: a prefix */
        if (n) memcpy(released + rl, st.buf + from, n);
        rl += n;
        const size_t first = earliest(text, tl, stops, n_stops);
        if (hit) {
            if (first != rl) abort(); /* cut right before the earliest stop string */
            matched = 1;
        } else {
            if (first != (size_t)-1) abort(); /* a stop string occurred and was missed */
            if (tl - rl > (maxstop ? maxstop - 1 : 0) + 3) abort();
            if (cuts_sequence(text, rl, tl)) abort(); /* never a character split at the release */
        }
        if (earliest(released, rl, stops, n_stops) != (size_t)-1) abort(); /* never a stop string */
        i = j < size ? j + 1 : j;
    }
    if (!matched) {
        size_t from, n;
        steno_stop_text_flush(&st, &from, &n);
        if (n) memcpy(released + rl, st.buf + from, n);
        rl += n;
        if (rl != tl || memcmp(released, text, tl) != 0) abort();
    }
    steno_stop_text_free(&st);
    for (int q = 0; q < n_stops; q++) free(stops[q]);
    free(text);
    free(released);
    return 0;
}
