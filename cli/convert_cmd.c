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
#include "options.h"
#include "steno.h"

#include <stdio.h>
#include <string.h>

#include "whisper/ggml_export.h"
#include "whisper/model.h"

#define DEFAULT_MODEL "tiny.en"

typedef struct {
    const char *to, *model, *model_dir, *output;
    bool f32;
} convert_opts;

static void convert_usage(FILE *f);

#define AT(field) STENO_OPT_AT(convert_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_CHOICE, "--to", NULL, AT(to), .flags = STENO_OPT_AS_STRING, .choices = "ggml",
     .help = "output format; only \"ggml\" (whisper.cpp) for now"},
    {STENO_OPT_STRING, "--model", "NAME|DIR", AT(model), .def = DEFAULT_MODEL,
     .help = "a model name looked up in --model-dir, or a CTranslate2 model directory"},
    {STENO_OPT_STRING, "--model-dir|--model_dir", "DIR", AT(model_dir),
     .def = "$STENO_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models", .help = "where named models live"},
    {STENO_OPT_STRING, "-o|--output", "FILE", AT(output), .help = "the file to write (replaced atomically on success)"},
    {STENO_OPT_FLAG, "--f32", .at = AT(f32), .help = "write every tensor as float32 (ggml ftype 0) instead of float16"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno convert: ",
    .verb = "convert", .usage = convert_usage, .help_col = 25,
};

static void convert_usage(FILE *f) {
    fputs("usage: steno convert --to ggml [--model NAME|DIR] [--model-dir DIR] -o OUT.bin [--f32]\n"
          "\n"
          "Writes a CTranslate2 Whisper model as a whisper.cpp ggml model file (the format of\n"
          "whisper.cpp's models/convert-pt-to-ggml.py: float16 weights; float32 biases, norms and\n"
          "positional embeddings; openai-whisper tensor names; Slaney mel filters; the BPE vocabulary).\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
    fputs("\n"
          "example:\n"
          "  steno convert --to ggml --model tiny.en -o ggml-tiny.en.bin\n"
          "  whisper-cli -m ggml-tiny.en.bin -f jfk.wav\n",
          f);
}

int steno_cmd_convert(int argc, char **argv) {
    convert_opts o = {.model = DEFAULT_MODEL};
    const int parsed = steno_opts_parse(&SPEC, &o, argc, argv);
    if (parsed >= 0) return parsed;
    const char *to = o.to, *model = o.model, *model_dir = o.model_dir, *output = o.output;
    const int use_f16 = !o.f32;
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
