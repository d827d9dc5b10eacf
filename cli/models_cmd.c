/* models_cmd.c — `steno models`: the models installed in the model cache (what `--model NAME`
 * can name), with their format, weight type, size on disk and path.
 *
 *   int steno_cmd_models(int argc, char **argv);   (declared in cli/commands.h)
 *
 * Each entry is described by steno_model_describe (src/formats/describe.c): the format read from
 * the model's own files (CTranslate2 model.bin header, GGUF, llama2.c), the weight type holding
 * most of the weight bytes, the size on disk. Only headers are read, so listing stays instant.
 *
 * Exit status: 0 ok; 1 the cache cannot be read; 2 usage error.
 */
#include "commands.h"
#include "options.h"
#include "steno.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


typedef struct {
    const char *model_dir;
} models_opts;

static void models_usage(FILE *f);

static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "--model-dir", "DIR", STENO_OPT_AT(models_opts, model_dir),
     .def = "$STENO_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models", .help = "the model cache"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno models: ",
    .verb = "models", .usage = models_usage, .help_col = 25,
};

static void models_usage(FILE *f) {
    fputs("usage: steno models [--model-dir DIR]\n"
          "\n"
          "Lists the models in the model cache: name (what --model takes), format (CTranslate2\n"
          "Whisper, GGUF LLM, llama2.c), weight type, size on disk and path. A download that\n"
          "'steno pull' has not finished is listed as a partial download.\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void human(int64_t bytes, char *out, size_t size) {
    if (bytes >= 1000000000) snprintf(out, size, "%.2f GB", (double)bytes / 1e9);
    else if (bytes >= 1000000) snprintf(out, size, "%.1f MB", (double)bytes / 1e6);
    else snprintf(out, size, "%.1f kB", (double)bytes / 1e3);
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

int steno_cmd_models(int argc, char **argv) {
    models_opts o = {0};
    const int parsed = steno_opts_parse(&SPEC, &o, argc, argv);
    if (parsed >= 0) return parsed;
    const char *model_dir = o.model_dir;
    char root[4096];
    steno_cli_models_root(model_dir, root, sizeof root);
    struct dirent **names = NULL;
    int n = scandir(root, &names, NULL, by_name);
    if (n < 0) {
        struct stat st;
        if (stat(root, &st) != 0) {
            printf("no models installed in %s (steno pull NAME downloads one)\n", root);
            return 0;
        }
        perror(root);
        return 1;
    }
    int shown = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", root, name);
        struct stat st;
        /* hidden entries are pull's locks and replaced copies awaiting deletion */
        if (name[0] != '.' && stat(path, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
            steno_model_info k;
            char shown_name[300], size[32];
            snprintf(shown_name, sizeof shown_name, "%s", name);
            if (S_ISDIR(st.st_mode) && has_suffix(name, ".partial")) shown_name[strlen(name) - 8] = '\0';
            steno_model_describe(path, &k); /* on failure k says "unknown", "-", 0 bytes */
            human(k.disk_bytes, size, sizeof size);
            if (!shown++)
                printf("%-20s  %-20s  %-8s  %9s  %s\n", "NAME", "FORMAT", "WEIGHTS", "SIZE", "PATH");
            printf("%-20s  %-20s  %-8s  %9s  %s\n", shown_name, k.format, k.weights, size, path);
        }
        free(names[i]);
    }
    free(names);
    if (!shown) printf("no models installed in %s (steno pull NAME downloads one)\n", root);
    return 0;
}
