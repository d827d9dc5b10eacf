/* model_path.c — where `--model NAME|DIR` points, shared by the verbs that load a model. */
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void steno_cli_models_root(const char *model_dir, char *out, size_t size) {
    const char *env = getenv("STENO_MODELS_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (model_dir && *model_dir) snprintf(out, size, "%s", model_dir);
    else if (env && *env) snprintf(out, size, "%s", env);
    else if (xdg && *xdg) snprintf(out, size, "%s/steno/models", xdg);
    else snprintf(out, size, "%s/.cache/steno/models", home && *home ? home : ".");
}

int steno_cli_model_path(const char *model, const char *model_dir, char *out, size_t size) {
    return steno_cli_option_model_path(NULL, model, model_dir, out, size);
}

int steno_cli_option_model_path(const char *option, const char *model, const char *model_dir, char *out, size_t size) {
    char root[4096], probe[8300];
    steno_cli_models_root(model_dir, root, sizeof root);
    snprintf(out, size, "%s/%s", root, model);
    snprintf(probe, sizeof probe, "%s/model.bin", out);
    /* a path, or a file given where a model directory belongs (the library then names its format) */
    if (strchr(model, '/') || (!is_file(probe) && (is_dir(model) || is_file(model)))) {
        snprintf(out, size, "%s", model);
        return 0;
    }
    if (!is_dir(out)) {
        fprintf(stderr, "steno: %s%smodel %s not found in %s; run 'steno pull %s' (or scripts/fetch_model.sh)\n",
                option ? option : "", option ? ": " : "", model, root, model);
        return 1;
    }
    return 0;
}

void steno_cli_vad_path(const char *model, const char *model_dir, char *out, size_t size) {
    if (model) {
        snprintf(out, size, "%s", model);
        return;
    }
    char root[4096];
    steno_cli_models_root(model_dir, root, sizeof root);
    snprintf(out, size, "%s/%s", root, STENO_VAD_MODEL_FILE);
}
