/* describe.c — steno_model_describe (steno.h): a model file or directory's format, weight type,
 * architecture and size on disk, from its own headers (CTranslate2 model.bin, GGUF, llama2.c).
 * The weight type is the dtype holding most of the weight bytes. Only headers are read (the
 * readers mmap), so describing a large model stays instant. */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "formats/ct2.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "kernels/quant/quant.h"
#include "steno.h"

/* scripts/fetch_vad.sh's file (STENO_VAD_MODEL_FILE in cli/commands.h is silero_vad/ + this) */
#define VAD_FILE "silero_vad_v6.safetensors"

static const char *ct2_dtype_name(ct2_dtype t) {
    static const char *const names[] = {"float32", "int8", "int16", "int32", "float16", "bfloat16"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static int ct2_dtype_bytes(ct2_dtype t) {
    return t == CT2_I8 ? 1 : t == CT2_I16 || t == CT2_F16 || t == CT2_BF16 ? 2 : 4;
}

static int kind_ct2(const char *path, steno_model_info *k) {
    ct2_model *m = NULL;
    if (ct2_open(path, &m) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    const char *spec = ct2_spec_name(m);
    if (spec && strstr(spec, "Whisper")) {
        snprintf(k->format, sizeof k->format, "CTranslate2 Whisper");
        snprintf(k->arch, sizeof k->arch, "whisper");
    } else snprintf(k->format, sizeof k->format, "CTranslate2 %s", spec ? spec : "model");
    int64_t bytes[6] = {0};
    for (int i = 0; i < ct2_n_vars(m); i++) {
        const ct2_var *v = ct2_var_at(m, i);
        if (v->rank >= 2 && (unsigned)v->dtype < 6) bytes[v->dtype] += v->n_elems * ct2_dtype_bytes(v->dtype);
    }
    int best = 0;
    for (int t = 1; t < 6; t++)
        if (bytes[t] > bytes[best]) best = t;
    snprintf(k->weights, sizeof k->weights, "%s", ct2_dtype_name((ct2_dtype)best));
    ct2_close(m);
    return 1;
}

static int kind_gguf(const char *path, steno_model_info *k) {
    gguf_file *g = NULL;
    if (gguf_open(path, &g) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    const gguf_str *arch = gguf_get_str(g, "general.architecture");
    if (arch) snprintf(k->arch, sizeof k->arch, "%.*s", (int)(arch->len < 31 ? arch->len : 31), arch->ptr);
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
        snprintf(k->weights, sizeof k->weights, "%s", ftypes[ft]);
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
    snprintf(k->weights, sizeof k->weights, "%s", best >= 0 ? steno_type_name(best) : "-");
    gguf_close(g);
    return 1;
}

static int kind_llama2c(const char *path, steno_model_info *k) {
    llama2c_file *f = NULL;
    if (llama2c_open(path, &f) != STENO_OK) {
        steno_clear_error();
        return 0;
    }
    llama2c_close(f);
    snprintf(k->format, sizeof k->format, "llama2.c");
    snprintf(k->weights, sizeof k->weights, "float32");
    snprintf(k->arch, sizeof k->arch, "llama");
    return 1;
}

static int has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A file by itself (a .gguf or llama2.c .bin) or a model directory. */
static void classify(const char *path, int is_dir, steno_model_info *k) {
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
        else if (!strcmp(e->d_name, VAD_FILE)) {
            /* scripts/fetch_vad.sh's conversion (tools/convert_silero_vad.py): float32 tensors */
            snprintf(k->format, sizeof k->format, "Silero VAD");
            snprintf(k->weights, sizeof k->weights, "float32");
            snprintf(k->arch, sizeof k->arch, "silero_vad");
            found = 1;
        }
    }
    closedir(d);
}

/* nftw's callback has no user pointer; thread-local keeps concurrent calls apart */
static _Thread_local int64_t tree_bytes;

static int add_size(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)path;
    (void)ftw;
    if (type == FTW_F) tree_bytes += (int64_t)st->st_blocks * 512;
    return 0;
}

/* Bytes the tree takes on disk (allocated blocks, as du counts them). */
static int64_t disk_usage(const char *path) {
    tree_bytes = 0;
    nftw(path, add_size, 16, FTW_PHYS);
    return tree_bytes;
}

steno_status steno_model_describe(const char *path, steno_model_info *info) {
    if (!info) return steno_fail(STENO_E_INVALID_ARG, "steno_model_describe: info is NULL");
    memset(info, 0, sizeof *info);
    snprintf(info->format, sizeof info->format, "unknown");
    snprintf(info->weights, sizeof info->weights, "-");
    if (!path) return steno_fail(STENO_E_INVALID_ARG, "steno_model_describe: path is NULL");
    struct stat st;
    if (stat(path, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
        return steno_fail(STENO_E_IO, "%s: not a model file or directory", path);
    const int is_dir = S_ISDIR(st.st_mode);
    if (is_dir && has_suffix(path, ".partial")) snprintf(info->format, sizeof info->format, "partial download");
    else classify(path, is_dir, info);
    info->disk_bytes = is_dir ? disk_usage(path) : (int64_t)st.st_blocks * 512;
    return STENO_OK;
}
