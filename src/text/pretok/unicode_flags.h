/* unicode_flags.h — llama.cpp's codepoint classes (unicode.h unicode_cpt_flags), which its
 * byte-level BPE pre-tokenizers use instead of a regex engine's own Unicode tables. The bits are
 * llama.cpp's, so "any flag set" tests (flags.as_uint() there) carry over unchanged. */
#ifndef STENO_TEXT_UNICODE_FLAGS_H
#define STENO_TEXT_UNICODE_FLAGS_H

#include <stdint.h>

enum {
    TEXT_U_UNDEFINED = 0x0001,
    TEXT_U_NUMBER = 0x0002,      /* \p{N} */
    TEXT_U_LETTER = 0x0004,      /* \p{L} */
    TEXT_U_SEPARATOR = 0x0008,   /* \p{Z} */
    TEXT_U_ACCENT_MARK = 0x0010, /* \p{M} */
    TEXT_U_PUNCTUATION = 0x0020, /* \p{P} */
    TEXT_U_SYMBOL = 0x0040,      /* \p{S} */
    TEXT_U_CONTROL = 0x0080,     /* \p{C} */
    TEXT_U_CATEGORIES = 0x00FF,
    TEXT_U_WHITESPACE = 0x0100   /* \s as llama.cpp's unicode_set_whitespace */
};

/** The flags of codepoint cp (TEXT_U_UNDEFINED past U+10FFFF). */
uint16_t text_cpt_flags(uint32_t cp);

/* The generated table (unicode_flags_table.c). */
extern const int text_uflags_n;
extern const uint32_t text_uflags_end;
extern const uint32_t text_uflags_start[];
extern const uint16_t text_uflags_val[];

#endif
