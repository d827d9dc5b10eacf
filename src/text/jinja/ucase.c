/* ucase.c — letter case of the scripts chat templates meet (Python's str.upper/lower/title use
 * the whole Unicode database; this table covers ASCII, Latin-1, Latin Extended-A, Greek,
 * Cyrillic, Armenian and fullwidth Latin; other code points have no case here). */
#include "text/jinja/value.h"

/* [first, last, delta] ranges upper → lower where every code point maps (step 1), and pair
 * ranges where upper and lower alternate (step 2, upper first or, with odd 1, lower first). */
typedef struct {
    unsigned lo, hi;
    int delta, step;
} crange;

static const crange TO_LOWER[] = {
    {0x41, 0x5A, 32, 1},      {0xC0, 0xD6, 32, 1},      {0xD8, 0xDE, 32, 1},      {0x100, 0x12F, 1, 2},
    {0x132, 0x137, 1, 2},     {0x139, 0x148, 1, 2},     {0x14A, 0x177, 1, 2},     {0x179, 0x17E, 1, 2},
    {0x386, 0x386, 38, 1},    {0x388, 0x38A, 37, 1},    {0x38C, 0x38C, 64, 1},    {0x38E, 0x38F, 63, 1},
    {0x391, 0x3A1, 32, 1},    {0x3A3, 0x3AB, 32, 1},    {0x400, 0x40F, 80, 1},    {0x410, 0x42F, 32, 1},
    {0x460, 0x481, 1, 2},     {0x48A, 0x4BF, 1, 2},     {0x4D0, 0x52F, 1, 2},     {0x531, 0x556, 48, 1},
    {0xFF21, 0xFF3A, 32, 1},
};

unsigned ju_lower(unsigned c) {
    if (c == 0x178) return 0xFF;
    for (size_t i = 0; i < sizeof TO_LOWER / sizeof TO_LOWER[0]; i++) {
        const crange *r = &TO_LOWER[i];
        if (c < r->lo || c > r->hi) continue;
        if (r->step == 2 && ((c - r->lo) & 1)) return c; /* already the lower of its pair */
        return c + (unsigned)r->delta;
    }
    return c;
}

unsigned ju_upper(unsigned c) {
    if (c == 0xFF) return 0x178;
    if (c == 0x3C2) return 0x3A3; /* final sigma */
    if (c == 0xB5) return 0x39C;  /* micro sign */
    for (size_t i = 0; i < sizeof TO_LOWER / sizeof TO_LOWER[0]; i++) {
        const crange *r = &TO_LOWER[i];
        unsigned lo = r->lo + (unsigned)r->delta, hi = r->hi + (unsigned)r->delta;
        if (c < lo || c > hi) continue;
        if (r->step == 2 && ((c - lo) & 1)) return c;
        if (r->step == 1 && c - (unsigned)r->delta == 0xD7) return c; /* ÷ has no case */
        return c - (unsigned)r->delta;
    }
    return c;
}

int ju_cased(unsigned c) { return c == 0xDF || c == 0x3C2 || ju_lower(c) != c || ju_upper(c) != c; }

size_t ju_put(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
