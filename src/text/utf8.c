#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid; *maximal receives the length
 * of the maximal invalid subpart when invalid (>= 1), per Unicode 3.9 / Python's decoder. */
static int utf8_seq(const unsigned char *s, size_t n, int *maximal) {
    unsigned c = s[0];
    *maximal = 1;
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return 0;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) { *maximal = i; return 0; }
        unsigned b = s[i];
        unsigned l = (i == 1) ? lo : 0x80, h = (i == 1) ? hi : 0xBF;
        if (b < l || b > h) { *maximal = i; return 0; }
    }
    return len;
}

size_t steno_utf8_invalid_at(const char *bytes, size_t n) {
    const unsigned char *s = (const unsigned char *)bytes;
    for (size_t i = 0; i < n;) {
        int maximal, l = utf8_seq(s + i, n - i, &maximal);
        if (!l) return i;
        i += (size_t)l;
    }
    return n;
}

char *steno_utf8_sanitize(const char *bytes, size_t n) {
    char *out = malloc(n * 3 + 1);
    if (!out) return NULL;
    const unsigned char *s = (const unsigned char *)bytes;
    size_t i = 0, o = 0;
    while (i < n) {
        int maximal;
        int len = utf8_seq(s + i, n - i, &maximal);
        if (len) {
            memcpy(out + o, s + i, (size_t)len);
            o += (size_t)len;
            i += (size_t)len;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += (size_t)maximal;
        }
    }
    out[o] = '\0';
    return out;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

const char *steno_strip(const char *s, size_t *len) {
    size_t n = strlen(s);
    while (n && is_space((unsigned char)*s)) { s++; n--; }
    while (n && is_space((unsigned char)s[n - 1])) n--;
    *len = n;
    return s;
}
