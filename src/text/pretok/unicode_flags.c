/* unicode_flags.c — codepoint → llama.cpp flags by binary search over the generated ranges. */
#include "text/pretok/unicode_flags.h"

uint16_t text_cpt_flags(uint32_t cp) {
    if (cp >= text_uflags_end) return TEXT_U_UNDEFINED;
    int lo = 0, hi = text_uflags_n - 1; /* last entry whose start <= cp */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (text_uflags_start[mid] <= cp) lo = mid;
        else hi = mid - 1;
    }
    return text_uflags_val[lo];
}
