/* models_cmd.c — `steno models`: the models installed in the model cache (what `--model NAME`
 * can name), with their format, weight type, size on disk and path.
 *
 *   int steno_cmd_models(int argc, char **argv);   (declared in cli/commands.h)
 *
 * The format is read from each model's own files (CTranslate2 model.bin header, GGUF, llama2.c);
 * the weight type is the dtype holding most of the weight bytes. Only headers are read (the
 * readers mmap), so listing a cache of large models stays instant.
 *
 * Exit status: 0 ok; 1 the cache cannot be read; 2 usage error.
 */
#include "commands.h"
#include "options.h"
#include "steno.h"

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "formats/ct2.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "kernels/quant/quant.h"

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

typedef struct {
    char format[64], dtype[32];
} model_kind;

static const char *ct2_dtype_name(ct2_dtype t) {
    static const char *const names[] = {"float32", "int8", "int16", "int32", "float16", "bfloat16"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static int ct2_dtype_bytes(ct2_dtype t) {
    return t == CT2_I8 ? 1 : t == CT2_I16 || t == CT2_F16 || t == CT2_BF16 ? 2 : 4;
}

static int kind_ct2(const char *path, model_kind *k) {
    ct2_model *m = NULL;
    if (ct2_open(path, &m) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    const char *spec = ct2_spec_name(m);
    if (spec && strstr(spec, "Whisper")) snprintf(k->format, sizeof k->format, "CTranslate2 Whisper");
    else snprintf(k->format, sizeof k->format, "CTranslate2 %s", spec ? spec : "model");
    int64_t bytes[6] = {0};
    for (int i = 0; i < ct2_n_vars(m); i++) {
        const ct2_var *v = ct2_var_at(m, i);
        if (v->rank >= 2 && (unsigned)v->dtype < 6) bytes[v->dtype] += v->n_elems * ct2_dtype_bytes(v->dtype);
    }
    int best = 0;
    for (int t = 1; t < 6; t++)
        if (bytes[t] > bytes[best]) best = t;
    snprintf(k->dtype, sizeof k->dtype, "%s", ct2_dtype_name((ct2_dtype)best));
    ct2_close(m);
    return 1;
}

static int kind_gguf(const char *path, model_kind *k) {
    gguf_file *g = NULL;
    if (gguf_open(path, &g) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    /* llama.cpp's name for the mix when the file records it (general.file_type, LLAMA_FTYPE_*) */
    static const char *const ftypes[] = {
        [0] = "F32",     [1] = "F16",     [2] = "Q4_0",    [3] = "Q4_1",    [7] = "Q8_0",
        [8] = "Q5_0",    [9] = "Q5_1",    [10] = "Q2_K",   [11] = "Q3_K_S", [12] = "Q3_K_M",
        [13] = "Q3_K_L", [14] = "Q4_K_S", [15] = "Q4_K_M", [16] = "Q5_K_S", [17] = "Q5_K_M",
        [18] = "Q6_K",   [32] = "BF16"};
    int64_t ft = -1;
    snprintf(k->format, sizeof k->format, "GGUF LLM");
    if (gguf_get_int(g, "general.file_type", &ft) && ft >= 0 &&
        ft < (int64_t)(sizeof ftypes / sizeof ftypes[0]) && ftypes[ft]) {
        snprintf(k->dtype, sizeof k->dtype, "%s", ftypes[ft]);
        gguf_close(g);
        return 1;
    }
    /* else the tensor type with the most bytes, leaving out the token embedding, which files
     * often keep wider than the rest (a Q4_K_M gemma-3-270m is q8_0 there, q4_K elsewhere) */
    uint64_t bytes[64] = {0};
    int best = -1;
    for (int i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (t->type < 0 || t->type >= 64 || !strcmp(t->name, "token_embd.weight")) continue;
        bytes[t->type] += t->size;
        if (best < 0 || bytes[t->type] > bytes[best]) best = t->type;
    }
    snprintf(k->dtype, sizeof k->dtype, "%s", best >= 0 ? steno_type_name(best) : "-");
    gguf_close(g);
    return 1;
}

static int kind_llama2c(const char *path, model_kind *k) {
    llama2c_file *f = NULL;
    if (llama2c_open(path, &f) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    llama2c_close(f);
    snprintf(k->format, sizeof k->format, "llama2.c");
    snprintf(k->dtype, sizeof k->dtype, "float32");
    return 1;
}

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A file by itself (a .gguf or llama2.c .bin placed in the cache) or a model directory. */
static void classify(const char *path, int is_dir, model_kind *k) {
    snprintf(k->format, sizeof k->format, "unknown");
    snprintf(k->dtype, sizeof k->dtype, "-");
    if (!is_dir) {
        if (!kind_gguf(path, k)) kind_llama2c(path, k);
        return;
    }
    char p[8600];
    snprintf(p, sizeof p, "%s/model.bin", path);
    if (kind_ct2(p, k)) return;
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (has_suffix(e->d_name, ".gguf")) found = kind_gguf(p, k);
        else if (has_suffix(e->d_name, ".bin")) found = kind_llama2c(p, k);
        else if (!strcmp(e->d_name, strrchr(STENO_VAD_MODEL_FILE, '/') + 1)) {
            /* scripts/fetch_vad.sh's conversion (tools/convert_silero_vad.py): float32 tensors */
            snprintf(k->format, sizeof k->format, "Silero VAD");
            snprintf(k->dtype, sizeof k->dtype, "float32");
            found = 1;
        }
    }
    closedir(d);
}

static int64_t tree_bytes;

static int add_size(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    if (type == FTW_F) tree_bytes += (int64_t)st->st_blocks * 512;
    return 0;
}

/* Bytes the tree takes on disk (allocated blocks, as du counts them). */
static int64_t disk_usage(const char *path) {
    tree_bytes = 0;
    nftw(path, add_size, 16, FTW_PHYS);
    return tree_bytes;
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
            model_kind k;
            char shown_name[300], size[32];
            snprintf(shown_name, sizeof shown_name, "%s", name);
            if (S_ISDIR(st.st_mode) && has_suffix(name, ".partial")) {
                shown_name[strlen(name) - 8] = '\0';
                snprintf(k.format, sizeof k.format, "partial download");
                snprintf(k.dtype, sizeof k.dtype, "-");
            } else classify(path, S_ISDIR(st.st_mode), &k);
            human(S_ISDIR(st.st_mode) ? disk_usage(path) : (int64_t)st.st_blocks * 512, size,
                  sizeof size);
            if (!shown++)
                printf("%-20s  %-20s  %-8s  %9s  %s\n", "NAME", "FORMAT", "WEIGHTS", "SIZE", "PATH");
            printf("%-20s  %-20s  %-8s  %9s  %s\n", shown_name, k.format, k.dtype, size, path);
        }
        free(names[i]);
    }
    free(names);
    if (!shown) printf("no models installed in %s (steno pull NAME downloads one)\n", root);
    return 0;
}
