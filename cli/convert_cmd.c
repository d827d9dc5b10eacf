/* convert_cmd.c — `steno convert --to ct2|ggml|hf|mlx --model NAME|DIR|FILE -o OUT`.
 *
 *   int steno_cmd_convert(int argc, char **argv);   (declared in cli/commands.h)
 *
 * Reads a Whisper model in any format steno reads (the format detected from the files) and writes
 * it in another (src/whisper/convert/convert.h): CTranslate2, whisper.cpp ggml, Hugging Face transformers
 * or MLX, keeping every float tensor's bytes (so whisper.cpp, transformers, mlx-whisper or
 * faster-whisper run exactly the weights steno runs).
 *
 * Exit status: 0 ok; 1 runtime error (one line "steno: <reason>" on stderr); 2 usage error.
 */
#include "commands.h"
#include "options.h"
#include "steno.h"

#include <stdio.h>
#include <string.h>


#define DEFAULT_MODEL "tiny.en"

typedef struct {
    const char *to, *model, *model_dir, *output;
    bool f32;
} convert_opts;

static void convert_usage(FILE *f);

#define AT(field) STENO_OPT_AT(convert_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_CHOICE, "--to", NULL, AT(to), .flags = STENO_OPT_AS_STRING, .choices = "ct2|ggml|hf|mlx",
     .help = "output format: ct2 (CTranslate2/faster-whisper), ggml (whisper.cpp), hf (transformers), mlx"},
    {STENO_OPT_STRING, "-m|--model", "NAME|DIR", AT(model), .def = DEFAULT_MODEL,
     .help = "a model name looked up in --model-dir, a model directory (ct2, hf, mlx) or a ggml file"},
    {STENO_OPT_STRING, "--model-dir|--model_dir", "DIR", AT(model_dir),
     .def = "$STENO_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models", .help = "where named models live"},
    {STENO_OPT_STRING, "-o|--output", "FILE", AT(output), .help = "the ggml file or model directory to write (appears only when complete)"},
    {STENO_OPT_FLAG, "--f32", .at = AT(f32), .help = "write every float tensor as float32 instead of the model's own float type"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno convert: ",
    .verb = "convert", .usage = convert_usage, .help_col = 25,
};

static void convert_usage(FILE *f) {
    fputs("usage: steno convert --to ct2|ggml|hf|mlx [--model NAME|DIR|FILE] [--model-dir DIR] -o OUT [--f32]\n"
          "\n"
          "Writes a Whisper model in another format. The input is any format steno reads (a\n"
          "CTranslate2, Hugging Face transformers or mlx-community directory, or a whisper.cpp ggml\n"
          "file), detected from its files. Float weights keep their exact values and type; ggml\n"
          "holds biases and positional embeddings in float32 as whisper.cpp expects. OUT is a file\n"
          "for ggml, a new directory for the others.\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
    fputs("\n"
          "examples:\n"
          "  steno convert --to ggml --model tiny.en -o ggml-tiny.en.bin\n"
          "  whisper-cli -m ggml-tiny.en.bin -f jfk.wav\n"
          "  steno convert --to hf --model ggml-base.bin -o whisper-base-hf\n",
          f);
}

int steno_cmd_convert(int argc, char **argv) {
    convert_opts o = {.model = DEFAULT_MODEL};
    const int parsed = steno_opts_parse(&SPEC, &o, argc, argv);
    if (parsed >= 0) return parsed;
    const char *to = o.to, *model = o.model, *model_dir = o.model_dir, *output = o.output;
    if (!to) {
        fputs("steno convert: --to is required (ct2, ggml, hf or mlx)\n", stderr);
        return 2;
    }
    if (!output || !*output) {
        fputs("steno convert: -o OUT is required\n", stderr);
        return 2;
    }
    if (strcmp(output, "-") == 0) {
        fputs("steno convert: -o -: standard output is not supported (a model is a file or a folder; give a path)\n", stderr);
        return 2;
    }

    char path[8192];
    if (steno_cli_model_path(model, model_dir, path, sizeof path) != 0) return 1;

    if (steno_whisper_convert(path, to, output, o.f32) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        return 1;
    }
    return 0;
}
