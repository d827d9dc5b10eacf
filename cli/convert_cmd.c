/* convert_cmd.c — `steno convert --to ggml --model NAME|DIR -o OUT.bin`.
 *
 *   int steno_cmd_convert(int argc, char **argv);   (declared in cli/commands.h)
 *
 * Loads a CTranslate2 Whisper model directory with the faithful path's loader (whisper_model_load)
 * and writes it as a whisper.cpp ggml model file (src/whisper/ggml_export.h: float16 weights,
 * float32 biases, norms and positional embeddings, as whisper.cpp's convert-pt-to-ggml.py
 * writes), so that whisper.cpp runs exactly the weights steno runs (bench/run_bench.py).
 *
 * Exit status: 0 ok; 1 runtime error (one line "steno: <reason>" on stderr); 2 usage error.
 */
#include "commands.h"
#include "steno.h"

#include <stdio.h>
#include <string.h>

#include "whisper/ggml_export.h"
#include "whisper/model.h"

#define DEFAULT_MODEL "tiny.en"

static void convert_usage(FILE *f) {
    fputs("usage: steno convert --to ggml [--model NAME|DIR] [--model-dir DIR] -o OUT.bin [--f32]\n"
          "\n"
          "Writes a CTranslate2 Whisper model as a whisper.cpp ggml model file (the format of\n"
          "whisper.cpp's models/convert-pt-to-ggml.py: float16 weights; float32 biases, norms and\n"
          "positional embeddings; openai-whisper tensor names; Slaney mel filters; the BPE vocabulary).\n"
          "\n"
          "options:\n"
          "  --to FORMAT            output format; only \"ggml\" (whisper.cpp) for now\n"
          "  --model NAME|DIR       a model name looked up in --model-dir, or a CTranslate2 model\n"
          "                         directory (default: " DEFAULT_MODEL ")\n"
          "  --model-dir DIR        where named models live (default: $STENO_MODELS_DIR, else\n"
          "                         ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models)\n"
          "  -o, --output FILE      the file to write (replaced atomically on success)\n"
          "  --f32                  write every tensor as float32 (ggml ftype 0) instead of float16\n"
          "  -h, --help             show this help\n"
          "\n"
          "example:\n"
          "  steno convert --to ggml --model tiny.en -o ggml-tiny.en.bin\n"
          "  whisper-cli -m ggml-tiny.en.bin -f jfk.wav\n",
          f);
}

/* "--name=value" or "--name value"; returns the value or NULL (and reports) when missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *arg, const char *eq) {
    if (eq) return eq + 1;
    if (*i + 1 >= argc) {
        fprintf(stderr, "steno convert: %s needs a value (see 'steno convert --help')\n", arg);
        return NULL;
    }
    return argv[++*i];
}

int steno_cmd_convert(int argc, char **argv) {
    const char *to = NULL, *model = DEFAULT_MODEL, *model_dir = NULL, *output = NULL;
    int use_f16 = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            convert_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("steno %s\n", STENO_VERSION);
            return 0;
        }
        if (!strcmp(a, "--f32")) {
            use_f16 = 0;
            continue;
        }
        if (!strcmp(a, "-o")) {
            if (!(output = opt_value(argc, argv, &i, a, NULL))) return 2;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "steno convert: unexpected argument '%s' (see 'steno convert --help')\n", a);
            return 2;
        }
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        const char *v;
#define IS(name) (n == strlen(name) && !strncmp(a, name, n))
        if (IS("--to")) {
            if (!(v = opt_value(argc, argv, &i, a, eq))) return 2;
            to = v;
        } else if (IS("--model")) {
            if (!(v = opt_value(argc, argv, &i, a, eq))) return 2;
            model = v;
        } else if (IS("--model-dir") || IS("--model_dir")) {
            if (!(v = opt_value(argc, argv, &i, a, eq))) return 2;
            model_dir = v;
        } else if (IS("--output")) {
            if (!(v = opt_value(argc, argv, &i, a, eq))) return 2;
            output = v;
        } else {
            fprintf(stderr, "steno convert: unknown option '%.*s' (see 'steno convert --help')\n",
                    (int)n, a);
            return 2;
        }
#undef IS
    }
    if (!to) {
        fputs("steno convert: --to is required (only \"ggml\" for now)\n", stderr);
        return 2;
    }
    if (strcmp(to, "ggml") != 0) {
        fprintf(stderr, "steno convert: --to %s: unsupported format (only \"ggml\")\n", to);
        return 2;
    }
    if (!output || !*output) {
        fputs("steno convert: -o OUT.bin is required\n", stderr);
        return 2;
    }

    char path[8192];
    if (steno_cli_model_path(model, model_dir, path, sizeof path) != 0) return 1;

    whisper_model *m = NULL;
    if (whisper_model_load(path, &m) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        return 1;
    }
    steno_status st = whisper_write_ggml_ex(m, output, use_f16);
    whisper_model_free(m);
    if (st != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        return 1;
    }
    return 0;
}
