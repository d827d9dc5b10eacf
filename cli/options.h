/* options.h — the verbs' option tables. A verb describes each option once, as a row (spellings,
 * value type, range, default, help line, destination); steno_opts_parse reads argv against the
 * table and steno_opts_help writes the verb's option help from the same rows, so the help and the
 * parser's errors cannot disagree. Verb-specific checks across options stay in the verbs. */
#ifndef STENO_CLI_OPTIONS_H
#define STENO_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    STENO_OPT_SECTION,     /* not an option: .help is a heading line of the help */
    STENO_OPT_FLAG,        /* no value: sets a bool to true (no destination: accepted, ignored) */
    STENO_OPT_BOOL,        /* True|False, also true/false, yes/no, 1/0 in any case: a bool */
    STENO_OPT_INT,         /* a decimal int within the row's range */
    STENO_OPT_U64,         /* a decimal unsigned long long (no sign), within the row's range if any */
    STENO_OPT_SIZE,        /* the same, stored as a size_t */
    STENO_OPT_DOUBLE,      /* a finite number within the row's range: a double */
    STENO_OPT_FLOAT,       /* the same, stored as a float */
    STENO_OPT_STRING,      /* the argv string itself (const char *) */
    STENO_OPT_CHOICE,      /* one of .choices ("a|b|c"): stores .values[k] (or k) as an int */
    STENO_OPT_LIST,        /* repeatable string: appended to a steno_opt_list */
    STENO_OPT_CUSTOM,      /* a value checked and stored by .parse */
    STENO_OPT_HELP,        /* prints the verb's help (the spec's usage) to stdout; exit 0 */
    STENO_OPT_VERSION,     /* prints "steno VERSION"; exit 0 */
    STENO_OPT_UNSUPPORTED, /* refused with "not supported: NAME (.help)", exit 2 */
} steno_opt_type;

/* row flags */
#define STENO_OPT_NONE_OK 1u /* the value "None" is accepted and stores .none_value */
#define STENO_OPT_NOCASE 2u  /* choices match in any case */
#define STENO_OPT_AS_STRING 4u /* a choice stores the argv string (const char *), not an int */

/* A repeatable option's values (and a verb's positional arguments), in argv order; the strings
 * are argv's. The parser grows items; the verb frees it with steno_opt_list_free. */
typedef struct steno_opt_list {
    const char **items;
    int n, cap;
} steno_opt_list;

/** Frees l's items (not the strings, argv's) and empties it. */
void steno_opt_list_free(steno_opt_list *l);

/* The reason a .parse callback refuses a value goes here: one line, without the option's name. */
typedef struct steno_opt_error {
    char msg[256];
} steno_opt_error;

typedef struct steno_opt {
    steno_opt_type type;
    const char *names;   /* spellings, '|'-separated, in the order the help shows them: "-o|--output-dir" */
    const char *metavar; /* the value's name in the help; NULL: .choices, True|False, or none */
    size_t at;           /* STENO_OPT_AT(struct, field): where the value goes; 0: nowhere */
    unsigned flags;
    bool has_min, has_max, min_excl; /* numeric range (set with STENO_OPT_RANGE / _MIN / _ABOVE) */
    double min, max;
    double none_value;   /* stored for "None" (STENO_OPT_NONE_OK) */
    const char *choices; /* STENO_OPT_CHOICE: "fast|faithful" */
    const int *values;   /* STENO_OPT_CHOICE: the int stored for each choice; NULL: its index */
    int max_items;       /* STENO_OPT_LIST: most values (0: no limit) */
    const char *items;   /* STENO_OPT_LIST: what the values are, for "too many ITEMS (at most N)" */
    /* STENO_OPT_CUSTOM: checks v and stores it at dst (NULL when the row has no .at); false
     * refuses it, with err->msg as the reason, or "expected .expect, got 'v'" when msg is empty */
    bool (*parse)(const char *v, void *dst, steno_opt_error *err);
    const char *expect;  /* a custom value's form; the help shows it too unless the metavar lists choices */
    const char *def;     /* the default as the help shows it; NULL: none shown */
    const char *help;    /* one line (wrapped to the help's width); the reason of an unsupported row */
    /* STENO_OPT_AT(struct, bool field) in the same struct as .at, set true once the option is read:
     * a verb can refuse an option that does not apply, even when its value equals the default */
    size_t given;
} steno_opt;

#define STENO_OPT_AT(T, field) (offsetof(T, field) + 1)
#define STENO_OPT_RANGE(lo, hi) .has_min = true, .has_max = true, .min = (lo), .max = (hi)
#define STENO_OPT_MIN(lo) .has_min = true, .min = (lo)
#define STENO_OPT_ABOVE(lo) .has_min = true, .min_excl = true, .min = (lo)

typedef enum {
    STENO_OPTS_GNU,  /* "  -o, --output-dir DIR    help (range; default: X)" */
    STENO_OPTS_WCPP, /* whisper.cpp's "  -t N,      --threads N         [4      ] help" */
} steno_opts_style;

typedef struct steno_opts_spec {
    const steno_opt *opts;
    size_t n_opts;
    /* where positional arguments go (a STENO_OPT_LIST row, possibly one of opts, such as
     * whisper-cli's -f); NULL: a positional argument is a usage error */
    const steno_opt *positional;
    const char *err_prefix;       /* each error line starts with it: "steno: " */
    const char *verb;             /* errors end with " (see 'steno VERB --help')" */
    bool underscores;             /* --name_with_underscores reads as --name-with-underscores */
    void (*usage)(FILE *f);       /* STENO_OPT_HELP prints it */
    steno_opts_style style;
    int help_col;                 /* column of the help text (GNU style) */
    bool align_long;              /* GNU style: a row without a short name is indented as if it had one */
    /* rows several verbs share (the LLM verbs' model and sampling options), read into their own
     * struct; a row of opts with the same first spelling replaces the shared one */
    const struct steno_opts_spec *shared;
} steno_opts_spec;

/** Parses argv[1..argc-1] into the struct at base (the rows' STENO_OPT_AT offsets), in argv order;
 *  "--" ends the options, "-" is positional, "--name=value" is accepted for long names. Returns
 *  -1 to go on; 0 after printing the help or version; 2 after one error line on stderr naming the
 *  option and the reason (unknown option, missing value, invalid value, unsupported option).
 *  Lists it fills (the positional one too) are the caller's to free, also after an error. */
int steno_opts_parse(const steno_opts_spec *spec, void *base, int argc, char **argv);

/** steno_opts_parse with spec->shared's rows read into shared_base. */
int steno_opts_parse_shared(const steno_opts_spec *spec, void *base, void *shared_base, int argc, char **argv);

/** Writes the option help of spec's rows, then of spec->shared's that no row of spec replaces, to
 *  f: each row's spellings, value, help line, range and default (WCPP style: the default column,
 *  from defaults when .def is NULL, else blank). */
void steno_opts_help(FILE *f, const steno_opts_spec *spec, const void *defaults);

/** Writes "not supported: NAME NAME ..." (the first spelling of each unsupported row) to f,
 *  wrapped at width columns; nothing when there is none. */
void steno_opts_help_unsupported(FILE *f, const steno_opts_spec *spec, int width);

/** A STENO_OPT_CUSTOM .parse for a string that must not be empty (a path, a key): stores v as a
 *  const char * at dst; "" is refused with "the value is empty". */
bool steno_opts_parse_nonempty(const char *v, void *dst, steno_opt_error *err);

/** openai-whisper's str2bool, also accepting 1/0, yes/no and any case. */
bool steno_opts_parse_bool(const char *s, bool *out);

#endif
