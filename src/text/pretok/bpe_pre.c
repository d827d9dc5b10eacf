/* bpe_pre.c — byte-level BPE pre-tokenization as llama.cpp's unicode_regex_split (src/unicode.cpp
 * at commit 0c1e57098) does it, quirks included, so that token ids match llama.cpp's:
 *   - Text is handled as codepoints classified by llama.cpp's own tables (unicode_flags.c), not by
 *     a regex engine's Unicode data.
 *   - The GPT-2, Llama 3, Qwen2 and Qwen3.5 expressions, "[^\n]+|[\n]+", Kimi K2's "\p{Han}+"
 *     and the AFMoE / Tiny Aya digit groupings are not regexes there but hand-written splitters, picked by comparing the expression text; they differ from a
 *     regex engine in corner cases (e.g. the punctuation branch of the Llama 3 one tests the
 *     flags of the first codepoint, not of the one after an optional space), so they are ported
 *     here line by line.
 *   - Any other expression goes to std::regex (ECMAScript). If it names \p{..} categories, each
 *     codepoint >= 128 is first collapsed to one byte for its category (0xD1 number, 0xD2 letter,
 *     0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0x0B whitespace, 0xD0 other) and each \p{..} in
 *     the expression becomes that byte plus the category's ASCII members; so \p{Lu} matches every
 *     letter, and a lookahead sees categories, not characters. Otherwise it runs on the codepoints
 *     with non-ASCII whitespace replaced by 0x0B (std::wregex's \s is ASCII only). PCRE2 (no
 *     Unicode properties, $ only at the end) plays std::regex here, with regex_iterator's
 *     handling of empty matches: they split the text too.
 * Each expression sees one word of the previous split at a time; lookaheads end at its edge. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "text/pretok/bpe_pre.h"
#include "text/pretok/bpe_pre_internal.h"
#include "text/pretok/unicode_flags.h"

enum { EX_GPT2, EX_L3, EX_NEWLINES, EX_KIMI, EX_DIGITS3, EX_REGEX };

typedef struct {
    int kind;
    int digits;      /* EX_L3: numbers in runs of at most 3 (Llama 3) or 1 (Qwen2) */
    int marks;       /* EX_L3: \p{M} counts as a letter (Qwen3.5) */
    int collapsed;   /* EX_REGEX: runs on the collapsed text */
    pcre2_code *re;  /* EX_REGEX */
} pre_expr;

struct text_bpe_pre {
    pre_expr ex[7];
    int n;
};

/* The expressions llama.cpp's unicode_regex_split_custom recognises. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_L3_CI "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_CONTR "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_L3 RE_CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2 RE_CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN35 RE_CONTR "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* unicode_regex_split's k_ucat_enum / k_ucat_cpt / k_ucat_map. */
static const struct {
    const char *name;
    unsigned char byte;
    const char *ascii;
} UCAT[] = {
    {"\\p{N}", 0xD1, "0-9"},
    {"\\p{L}", 0xD2, "A-Za-z"},
    {"\\p{P}", 0xD3, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", 0xD4, ""},
    {"\\p{S}", 0xD5, "\\$\\+<->^`\\|\\~"},
    {"\\p{Lu}", 0xD2, "A-Za-z"},
    {"\\p{Ll}", 0xD2, "A-Za-z"},
    {"\\p{Lt}", 0xD2, "A-Za-z"},
    {"\\p{Lm}", 0xD2, "A-Za-z"},
    {"\\p{Lo}", 0xD2, "A-Za-z"},
};
#define N_UCAT (sizeof UCAT / sizeof UCAT[0])

static int uses_categories(const char *e) {
    for (size_t k = 0; k < N_UCAT; k++)
        if (strstr(e, UCAT[k].name)) return 1;
    return 0;
}

/* The expression with each known \p{..} replaced by its collapsed class (llama.cpp's loop,
 * including its tracking of whether it is inside [...]). */
static char *collapse_expr(const char *e) {
    size_t n = strlen(e);
    char *o = malloc(n * 8 + 1);
    if (!o) return NULL;
    size_t w = 0;
    int inside = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i] == '[' && (i == 0 || e[i - 1] != '\\')) {
            o[w++] = '[';
            inside = 1;
            continue;
        }
        if (inside && e[i] == ']' && e[i - 1] != '\\') {
            o[w++] = ']';
            inside = 0;
            continue;
        }
        if (e[i] == '\\' && i + 3 < n && e[i + 1] == 'p' && e[i + 2] == '{') {
            const char *cb = strchr(e + i + 3, '}');
            if (cb && (size_t)(cb - e) <= i + 10) {
                size_t pl = (size_t)(cb - e) - i + 1;
                for (size_t k = 0; k < N_UCAT; k++) {
                    if (strlen(UCAT[k].name) != pl || memcmp(UCAT[k].name, e + i, pl) != 0) continue;
                    if (!inside) o[w++] = '[';
                    o[w++] = (char)UCAT[k].byte;
                    size_t al = strlen(UCAT[k].ascii);
                    memcpy(o + w, UCAT[k].ascii, al);
                    w += al;
                    if (!inside) o[w++] = ']';
                    i += pl - 1;
                    goto next;
                }
            }
        }
        o[w++] = e[i];
    next:;
    }
    o[w] = '\0';
    return o;
}

void text_bpe_pre_free(text_bpe_pre *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->ex[i].re);
    free(p);
}

static int compile_expr(pre_expr *x, const char *e) {
    if (strcmp(e, RE_GPT2) == 0) { x->kind = EX_GPT2; return 0; }
    if (strcmp(e, RE_L3) == 0 || strcmp(e, RE_L3_CI) == 0) { x->kind = EX_L3; x->digits = 3; return 0; }
    if (strcmp(e, RE_QWEN2) == 0) { x->kind = EX_L3; x->digits = 1; return 0; }
    if (strcmp(e, RE_QWEN35) == 0) { x->kind = EX_L3; x->digits = 1; x->marks = 1; return 0; }
    if (strcmp(e, "[^\\n]+|[\\n]+") == 0) { x->kind = EX_NEWLINES; return 0; }
    if (strcmp(e, "\\p{Han}+") == 0) { x->kind = EX_KIMI; return 0; }
    if (strcmp(e, "\\p{AFMoE_digits}") == 0 || strcmp(e, "\\d{1,3}(?=(?:\\d{3})*\\b)") == 0) {
        x->kind = EX_DIGITS3;
        return 0;
    }
    x->kind = EX_REGEX;
    x->collapsed = uses_categories(e);
    char *ce = x->collapsed ? collapse_expr(e) : NULL;
    if (x->collapsed && !ce) return -1;
    int err;
    PCRE2_SIZE eoff;
    uint32_t opts = PCRE2_DOLLAR_ENDONLY | (x->collapsed ? 0 : PCRE2_UTF);
    x->re = pcre2_compile((PCRE2_SPTR)(ce ? ce : e), PCRE2_ZERO_TERMINATED, opts, &err, &eoff, NULL);
    free(ce);
    if (!x->re) return -1;
    pcre2_jit_compile(x->re, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
    return 0;
}

text_bpe_pre *text_bpe_pre_new(const char *name, text_bpe_pre_opts *opts, const char **why) {
    *why = NULL;
    const text_bpe_pre_def *d = NULL;
    for (int k = 0; k < text_bpe_pre_n_defs && !d; k++)
        for (int j = 0; text_bpe_pre_defs[k].names[j]; j++)
            if (strcmp(text_bpe_pre_defs[k].names[j], name) == 0) {
                d = &text_bpe_pre_defs[k];
                break;
            }
    if (!d) return NULL;
    if (d->excluded) {
        *why = d->excluded;
        return NULL;
    }
    text_bpe_pre *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    for (int i = 0; d->exprs[i]; i++) {
        if (compile_expr(&p->ex[p->n], d->exprs[i]) != 0) {
            text_bpe_pre_free(p);
            *why = "its expression does not compile";
            return NULL;
        }
        p->n++;
    }
    opts->ignore_merges = d->ignore_merges;
    opts->add_bos = d->add_bos;
    opts->raw = d->raw;
    return p;
}

/* ------------------------------------------------------------------------------------------- */
/* Splitting: words are runs of codepoints, kept as lengths in order (llama.cpp's offsets).      */

typedef struct {
    size_t *v;
    size_t n, cap;
} lens;

static int lens_push(lens *l, size_t x) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        size_t *a = realloc(l->v, nc * sizeof *a);
        if (!a) return -1;
        l->v = a;
        l->cap = nc;
    }
    l->v[l->n++] = x;
    return 0;
}

typedef struct {
    const uint32_t *cp;
    size_t ini, end; /* the word being split */
    size_t prev_end;
    lens *out;
    int err;
} walk;

static uint32_t w_cpt(const walk *w, size_t pos) { return pos >= w->ini && pos < w->end ? w->cp[pos] : 0xFFFFFFFFu; }
static uint16_t w_flags(const walk *w, size_t pos) { return pos >= w->ini && pos < w->end ? text_cpt_flags(w->cp[pos]) : 0; }

static size_t w_add(walk *w, size_t end) {
    size_t len = end - w->prev_end;
    if (len > 0 && lens_push(w->out, len) != 0) w->err = 1;
    w->prev_end = end;
    return len;
}

static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Contractions ('s 't 're 've 'm 'll 'd; case-insensitive in the Llama 3 family). Returns the
 * length matched at pos, 0 if none. llama.cpp lowercases with its Unicode table; only ASCII maps
 * onto these letters, so ASCII lowering gives the same answer. */
static size_t contraction(const walk *w, size_t pos, int ci) {
    if (w->cp[pos] != '\'' || pos + 1 >= w->end) return 0;
    uint32_t a = w_cpt(w, pos + 1);
    if (ci) a = ascii_lower(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= w->end) return 0;
    uint32_t b = w_cpt(w, pos + 2);
    if (ci) b = ascii_lower(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

#define NOT_SLN(f) (!((f) & (TEXT_U_WHITESPACE | TEXT_U_LETTER | TEXT_U_NUMBER)))

/* unicode_regex_split_custom_gpt2. */
static void split_gpt2(walk *w) {
    for (size_t pos = w->ini; pos < w->end && !w->err;) {
        uint32_t cpt = w_cpt(w, pos);
        uint16_t flags = w_flags(w, pos);
        size_t c = contraction(w, pos, 0);
        if (c) {
            pos += w_add(w, pos + c);
            continue;
        }
        uint16_t f2 = cpt == ' ' ? w_flags(w, pos + 1) : flags;
        if (f2 & TEXT_U_LETTER) { /* <space>?\p{L}+ */
            pos += cpt == ' ';
            while (f2 & TEXT_U_LETTER) f2 = w_flags(w, ++pos);
            w_add(w, pos);
            continue;
        }
        if (f2 & TEXT_U_NUMBER) { /* <space>?\p{N}+ */
            pos += cpt == ' ';
            while (f2 & TEXT_U_NUMBER) f2 = w_flags(w, ++pos);
            w_add(w, pos);
            continue;
        }
        if (NOT_SLN(f2) && f2) { /* <space>?[^\s\p{L}\p{N}]+ */
            pos += cpt == ' ';
            while (NOT_SLN(f2) && f2) f2 = w_flags(w, ++pos);
            w_add(w, pos);
            continue;
        }
        size_t nws = 0;
        while (w_flags(w, pos + nws) & TEXT_U_WHITESPACE) nws++;
        if (nws > 1 && w_cpt(w, pos + nws) != 0xFFFFFFFFu) { /* \s+(?!\S): all but the last */
            pos += nws - 1;
            w_add(w, pos);
            continue;
        }
        if (nws > 0) {
            pos += nws;
            w_add(w, pos);
            continue;
        }
        w_add(w, ++pos); /* no match: one codepoint */
    }
}

/* unicode_regex_split_custom_llama3 (digits 3), _qwen2 (digits 1) and _qwen35 (marks). */
static void split_l3(walk *w, int digits, int marks) {
    const uint16_t letter = TEXT_U_LETTER | (marks ? TEXT_U_ACCENT_MARK : 0);
    for (size_t pos = w->ini; pos < w->end && !w->err;) {
        uint32_t cpt = w_cpt(w, pos);
        uint16_t flags = w_flags(w, pos);
        size_t c = contraction(w, pos, 1);
        if (c) {
            pos += w_add(w, pos + c);
            continue;
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(cpt == '\r' || cpt == '\n' || (flags & TEXT_U_NUMBER))) {
            if ((flags & letter) || (w_flags(w, pos + 1) & letter)) {
                pos++;
                while (w_flags(w, pos) & letter) pos++;
                w_add(w, pos);
                continue;
            }
        }
        if (flags & TEXT_U_NUMBER) { /* \p{N}{1,3} or \p{N} */
            if (digits == 1) {
                pos++;
            } else {
                size_t ini = pos;
                while (w_flags(w, pos) & TEXT_U_NUMBER)
                    if (++pos - ini >= (size_t)digits) {
                        w_add(w, pos);
                        ini = pos;
                    }
            }
            w_add(w, pos);
            continue;
        }
        /* <space>?[^\s\p{L}\p{N}]+[\r\n]* — note: the entry test looks at `flags` (the first
         * codepoint), as llama.cpp does */
        const uint16_t stop = TEXT_U_WHITESPACE | letter | TEXT_U_NUMBER;
        uint16_t f2 = cpt == ' ' ? w_flags(w, pos + 1) : flags;
        if (!(f2 & stop) && flags) {
            pos += cpt == ' ';
            while (!(f2 & stop) && f2) f2 = w_flags(w, ++pos);
            uint32_t c2 = w_cpt(w, pos);
            while (c2 == '\r' || c2 == '\n') c2 = w_cpt(w, ++pos);
            w_add(w, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (w_flags(w, pos + nws) & TEXT_U_WHITESPACE) {
            uint32_t c2 = w_cpt(w, pos + nws);
            if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) { /* \s*[\r\n]+ */
            pos = last_rn;
            w_add(w, pos);
            continue;
        }
        if (nws > 1 && w_cpt(w, pos + nws) != 0xFFFFFFFFu) { /* \s+(?!\S) */
            pos += nws - 1;
            w_add(w, pos);
            continue;
        }
        if (nws > 0) { /* \s+ */
            pos += nws;
            w_add(w, pos);
            continue;
        }
        w_add(w, ++pos);
    }
}

/* unicode_regex_split_custom_newlines: runs of '\n' and runs of anything else. */
static void split_newlines(walk *w) {
    for (size_t pos = w->ini; pos < w->end && !w->err;) {
        int nl = w->cp[pos] == '\n';
        while (pos < w->end && (w->cp[pos] == '\n') == nl) pos++;
        w_add(w, pos);
    }
}

/* llama.cpp's unicode_cpt_is_han. */
static int is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* A letter that is not Han (Kimi K2's [\p{L}&&[^\p{Han}]]). */
static int kimi_letter(const walk *w, size_t pos) { return (w_flags(w, pos) & TEXT_U_LETTER) && !is_han(w_cpt(w, pos)); }

/* unicode_regex_split_custom_kimi_k2: Han runs, then the Llama 3 shape with Han left out of the
 * letters and the contractions attached after a word. */
static void split_kimi(walk *w) {
    for (size_t pos = w->ini; pos < w->end && !w->err;) {
        uint32_t cpt = w_cpt(w, pos);
        uint16_t flags = w_flags(w, pos);
        if (is_han(cpt)) {
            while (is_han(w_cpt(w, pos))) pos++;
            w_add(w, pos);
            continue;
        }
        const int lead_ok = !(cpt == '\r' || cpt == '\n' || (flags & (TEXT_U_LETTER | TEXT_U_NUMBER)));
        if (((flags & TEXT_U_LETTER) && !is_han(cpt)) || (lead_ok && kimi_letter(w, pos + 1))) {
            int lead = 0, letters = 0;
            if (lead_ok) {
                lead = 1;
                pos++;
            }
            while (kimi_letter(w, pos)) {
                letters = 1;
                pos++;
            }
            if (letters || (!lead && kimi_letter(w, pos))) {
                if (!letters) pos++;
                while (kimi_letter(w, pos)) pos++;
                if (w_cpt(w, pos) == '\'' && pos + 1 < w->end) {
                    uint32_t a = ascii_lower(w_cpt(w, pos + 1));
                    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
                        pos += 2;
                    } else if (pos + 2 < w->end) {
                        uint32_t b = ascii_lower(w_cpt(w, pos + 2));
                        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) pos += 3;
                    }
                }
                w_add(w, pos);
                continue;
            } else if (lead) {
                pos--;
            }
        }
        if (flags & TEXT_U_NUMBER) { /* \p{N}{1,3} */
            size_t ini = pos;
            while (w_flags(w, pos) & TEXT_U_NUMBER)
                if (++pos - ini >= 3) {
                    w_add(w, pos);
                    ini = pos;
                }
            w_add(w, pos);
            continue;
        }
        uint16_t f2 = cpt == ' ' ? w_flags(w, pos + 1) : flags; /* ?[^\s\p{L}\p{N}]+[\r\n]* */
        if (NOT_SLN(f2) && f2) {
            pos += cpt == ' ';
            while (NOT_SLN(f2) && f2) f2 = w_flags(w, ++pos);
            uint32_t c2 = w_cpt(w, pos);
            while (c2 == '\r' || c2 == '\n') c2 = w_cpt(w, ++pos);
            w_add(w, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (w_flags(w, pos + nws) & TEXT_U_WHITESPACE) {
            uint32_t c2 = w_cpt(w, pos + nws);
            if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) pos = last_rn;
        else if (nws > 1 && w_cpt(w, pos + nws) != 0xFFFFFFFFu) pos += nws - 1;
        else if (nws > 0) pos += nws;
        else pos++;
        w_add(w, pos);
    }
}

/* unicode_regex_split_custom_afmoe (AFMoE's \p{AFMoE_digits}; llama.cpp also uses it for Tiny
 * Aya's \d{1,3}(?=(?:\d{3})*\b)): a run of n digits becomes n % 3 leading digits, then groups
 * of 3. Its quirk is kept: the text before a digit run is not cut off, so it joins the first
 * group ("abc1234" → "abc1", "234"). */
static void split_digits3(walk *w) {
    for (size_t pos = w->ini; pos < w->end && !w->err;) {
        if (!(w_flags(w, pos) & TEXT_U_NUMBER)) {
            pos++;
            continue;
        }
        size_t first = pos, n = 0;
        while (pos < w->end && (w_flags(w, pos) & TEXT_U_NUMBER)) {
            n++;
            pos++;
        }
        size_t cur = first, rem = n % 3;
        if (rem > 0) {
            w_add(w, cur + rem);
            cur += rem;
        }
        for (; cur < first + n; cur += 3) w_add(w, cur + 3);
    }
    if (w->prev_end < w->end) w_add(w, w->end);
}

/* A subject for PCRE2: bytes, and for the codepoint path the byte offset of each codepoint
 * (c2b, ncp + 1 entries) and the codepoint at each byte offset (b2c). NULL maps: one byte per
 * codepoint (the collapsed text). */
typedef struct {
    unsigned char *s;
    size_t *c2b, *b2c;
} subject;

static size_t c2b(const subject *s, size_t i) { return s->c2b ? s->c2b[i] : i; }
static size_t b2c(const subject *s, size_t b) { return s->b2c ? s->b2c[b] : b; }

/* One word through std::regex_iterator as unicode_regex_split_stl drives it: matches and the
 * gaps between them become words; an empty match splits without a word of its own, and after
 * it the search first wants a non-empty match right there, else moves one character on. */
static void split_regex(walk *w, pcre2_code *re, pcre2_match_data *md, const subject *sj, int utf) {
    size_t b0 = c2b(sj, w->ini), n = c2b(sj, w->end) - b0;
    PCRE2_SPTR s = (PCRE2_SPTR)sj->s + b0;
    size_t pos = 0, last = 0;
    int prev_empty = 0;
    while (!w->err) {
        int m;
        if (prev_empty) {
            if (pos >= n) break;
            m = pcre2_match(re, s, n, pos, PCRE2_ANCHORED | PCRE2_NOTEMPTY_ATSTART | PCRE2_NO_UTF_CHECK, md, NULL);
            if (m < 0) {
                pos++;
                if (utf)
                    while (pos < n && (s[pos] & 0xC0) == 0x80) pos++;
                prev_empty = 0;
                m = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            }
        } else {
            m = pcre2_match(re, s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        }
        if (m < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (ms > last) w_add(w, b2c(sj, b0 + ms));
        w_add(w, b2c(sj, b0 + me));
        last = pos = me;
        prev_empty = me == ms;
    }
    if (last < n) w_add(w, w->end);
}

/* Decodes valid UTF-8 (checked by the caller) into codepoints and their byte offsets. */
static size_t decode(const char *text, size_t len, uint32_t *cp, size_t *off) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        int l = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + (size_t)l > len) l = (int)(len - i);
        uint32_t v = l == 1 ? c : l == 2 ? c & 0x1Fu : l == 3 ? c & 0x0Fu : c & 0x07u;
        for (int k = 1; k < l; k++) v = (v << 6) | ((unsigned char)text[i + (size_t)k] & 0x3Fu);
        off[n] = i;
        cp[n++] = v;
        i += (size_t)l;
    }
    off[n] = len;
    return n;
}

static int encode_utf8(uint32_t c, unsigned char *o) {
    if (c < 0x80) { o[0] = (unsigned char)c; return 1; }
    if (c < 0x800) { o[0] = (unsigned char)(0xC0 | (c >> 6)); o[1] = (unsigned char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* The collapsed text: ASCII as is, other codepoints as their category's byte. */
static unsigned char *collapse_text(const uint32_t *cp, size_t n) {
    unsigned char *t = malloc(n ? n : 1);
    if (!t) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (cp[i] < 128) { t[i] = (unsigned char)cp[i]; continue; }
        uint16_t f = text_cpt_flags(cp[i]);
        uint16_t cat = f & TEXT_U_CATEGORIES;
        t[i] = f & TEXT_U_WHITESPACE ? 0x0B
             : cat == TEXT_U_NUMBER ? 0xD1 : cat == TEXT_U_LETTER ? 0xD2 : cat == TEXT_U_PUNCTUATION ? 0xD3
             : cat == TEXT_U_ACCENT_MARK ? 0xD4 : cat == TEXT_U_SYMBOL ? 0xD5 : 0xD0;
    }
    return t;
}

/* The codepoint text for std::wregex: non-ASCII whitespace as 0x0B, with offset maps. */
static int wide_text(const uint32_t *cp, size_t n, subject *sj) {
    sj->s = malloc(n * 4 + 1);
    sj->c2b = malloc((n + 1) * sizeof(size_t));
    sj->b2c = malloc((n * 4 + 1) * sizeof(size_t));
    if (!sj->s || !sj->c2b || !sj->b2c) return -1;
    size_t b = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = cp[i] > 0x7F && (text_cpt_flags(cp[i]) & TEXT_U_WHITESPACE) ? 0x0B : cp[i];
        sj->c2b[i] = b;
        int l = encode_utf8(c, sj->s + b);
        for (int k = 0; k < l; k++) sj->b2c[b + (size_t)k] = i;
        b += (size_t)l;
    }
    sj->c2b[n] = b;
    sj->b2c[b] = n;
    return 0;
}

int text_bpe_pre_split(const text_bpe_pre *p, const char *text, size_t len, size_t **off, size_t **wlen, int *nw) {
    *off = *wlen = NULL;
    *nw = 0;
    int rc = -1;
    uint32_t *cp = malloc((len + 1) * sizeof *cp);
    size_t *coff = malloc((len + 1) * sizeof *coff);
    lens a = {0}, b = {0};
    subject col = {0}, wide = {0};
    pcre2_match_data *md = NULL;
    if (!cp || !coff) goto done;
    size_t ncp = decode(text, len, cp, coff);
    if (ncp == 0) { rc = 0; goto done; }
    if (lens_push(&a, ncp) != 0) goto done;
    for (int e = 0; e < p->n; e++) {
        const pre_expr *x = &p->ex[e];
        subject *sj = NULL;
        if (x->kind == EX_REGEX) {
            if (x->collapsed && !col.s && !(col.s = collapse_text(cp, ncp))) goto done;
            if (!x->collapsed && !wide.s && wide_text(cp, ncp, &wide) != 0) goto done;
            sj = x->collapsed ? &col : &wide;
            pcre2_match_data_free(md);
            if (!(md = pcre2_match_data_create_from_pattern(x->re, NULL))) goto done;
        }
        b.n = 0;
        walk w = {.cp = cp, .out = &b};
        size_t start = 0;
        for (size_t i = 0; i < a.n && !w.err; i++) {
            w.ini = w.prev_end = start;
            w.end = start + a.v[i];
            start = w.end;
            if (w.end == w.ini) continue;
            switch (x->kind) {
            case EX_GPT2: split_gpt2(&w); break;
            case EX_L3: split_l3(&w, x->digits, x->marks); break;
            case EX_NEWLINES: split_newlines(&w); break;
            case EX_KIMI: split_kimi(&w); break;
            case EX_DIGITS3: split_digits3(&w); break;
            default: split_regex(&w, x->re, md, sj, !x->collapsed); break;
            }
        }
        if (w.err) goto done;
        lens t = a;
        a = b;
        b = t;
    }
    *off = malloc(a.n * sizeof(size_t));
    *wlen = malloc(a.n * sizeof(size_t));
    if (!*off || !*wlen) {
        free(*off);
        free(*wlen);
        *off = *wlen = NULL;
        goto done;
    }
    size_t start = 0;
    int k = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (a.v[i] == 0) continue;
        (*off)[k] = coff[start];
        (*wlen)[k] = coff[start + a.v[i]] - coff[start];
        start += a.v[i];
        k++;
    }
    *nw = k;
    rc = 0;
done:
    pcre2_match_data_free(md);
    free(col.s);
    free(wide.s);
    free(wide.c2b);
    free(wide.b2c);
    free(a.v);
    free(b.v);
    free(cp);
    free(coff);
    return rc;
}
