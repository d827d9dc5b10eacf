/* prompt_cache_disk.c — the prompt cache's files (see prompt_cache.h): one safetensors file per
 * entry (https://huggingface.co/docs/safetensors: an 8-byte little-endian header length, a JSON
 * header padded with spaces to 8 bytes, then the tensors' bytes), SHA-256 by OpenSSL. */
#include "sched/prompt_cache_impl.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_NAME "steno-prompt-cache"
#define MAX_HEADER (64u << 20) /* the token list dominates: 64 MiB is ~6 M tokens */

static void hex(const unsigned char *md, unsigned n, char *out) {
    for (unsigned i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void sha256_hex(const void *data, size_t n, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!EVP_Digest(data, n, md, &len, EVP_sha256(), NULL)) len = 0;
    hex(md, len, out);
    out[2 * len] = '\0';
}

int pc_disk_init(prompt_cache *pc) {
    if (mkdir(pc->dir, 0755) != 0 && errno != EEXIST) {
        pc_log(pc, "prompt cache: --prompt-cache-dir %s: %s", pc->dir, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (stat(pc->dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        pc_log(pc, "prompt cache: --prompt-cache-dir %s: not a directory", pc->dir);
        return -1;
    }
    char probe[4200]; /* writable for real (root passes access(); /proc does not take files) */
    snprintf(probe, sizeof probe, "%s/.steno-probe-%ld", pc->dir, (long)getpid());
    const int fd = open(probe, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) {
        pc_log(pc, "prompt cache: --prompt-cache-dir %s: cannot write there (%s)", pc->dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    FILE *f = pc->p.model_path ? fopen(pc->p.model_path, "rb") : NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *buf = malloc(1 << 20);
    int ok = f && md && buf && EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    size_t got;
    while (ok && (got = fread(buf, 1, 1 << 20, f)) > 0) ok = EVP_DigestUpdate(md, buf, got);
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (ok && !ferror(f)) ok = EVP_DigestFinal_ex(md, out, &len) && len == 32;
    else ok = 0;
    if (ok) hex(out, 32, pc->model_sha256);
    else pc_log(pc, "prompt cache: cannot hash the model %s", pc->p.model_path ? pc->p.model_path : "(none)");
    free(buf);
    EVP_MD_CTX_free(md);
    if (f) fclose(f);
    return ok ? 0 : -1;
}

/* The file name of an entry: a digest of what makes it unique. */
static void entry_key(const prompt_cache *pc, const pc_entry *e, char out[65]) {
    const size_t nc = strlen(pc->config), nt = sizeof(int) * (size_t)e->n;
    char *b = malloc(64 + nc + nt);
    if (!b) {
        snprintf(out, 65, "%p", (const void *)e);
        return;
    }
    memcpy(b, pc->model_sha256, 64);
    memcpy(b + 64, pc->config, nc);
    memcpy(b + 64 + nc, e->tokens, nt);
    sha256_hex(b, 64 + nc + nt, out);
    free(b);
}

static char *token_list(const int *t, int n) {
    char *s = malloc((size_t)n * 12 + 1);
    if (!s) return NULL;
    size_t o = 0;
    s[0] = '\0';
    for (int i = 0; i < n; i++) o += (size_t)snprintf(s + o, 13, i ? ",%d" : "%d", t[i]);
    return s;
}

static cJSON *tensor(const char *dtype, double count, double from, double to) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "dtype", dtype);
    cJSON *shape = cJSON_AddArrayToObject(t, "shape"), *off = cJSON_AddArrayToObject(t, "data_offsets");
    cJSON_AddItemToArray(shape, cJSON_CreateNumber(count));
    cJSON_AddItemToArray(off, cJSON_CreateNumber(from));
    cJSON_AddItemToArray(off, cJSON_CreateNumber(to));
    return t;
}

int pc_disk_write(prompt_cache *pc, pc_entry *e) {
    char key[65], state_sha[65], num[32], path[4200], tmp[4210];
    entry_key(pc, e, key);
    snprintf(e->file, sizeof e->file, "%.32s.safetensors", key);
    sha256_hex(e->state, e->state_bytes, state_sha);
    const double nt = 4.0 * e->n, ns = (double)e->state_bytes;
    cJSON *h = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(h, "__metadata__");
    char *toks = token_list(e->tokens, e->n);
    cJSON_AddStringToObject(meta, "format", FORMAT_NAME);
    cJSON_AddStringToObject(meta, "version", "1");
    cJSON_AddStringToObject(meta, "model_sha256", pc->model_sha256);
    cJSON_AddStringToObject(meta, "cache_config", pc->config);
    snprintf(num, sizeof num, "%d", e->n);
    cJSON_AddStringToObject(meta, "n_tokens", num);
    snprintf(num, sizeof num, "%d", e->min_pos);
    cJSON_AddStringToObject(meta, "min_pos", num);
    cJSON_AddStringToObject(meta, "tokens", toks ? toks : "");
    cJSON_AddStringToObject(meta, "state_sha256", state_sha);
    cJSON_AddItemToObject(h, "tokens", tensor("I32", e->n, 0, nt));
    cJSON_AddItemToObject(h, "state", tensor("U8", ns, nt, nt + ns));
    char *js = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    free(toks);
    int ok = js != NULL;
    snprintf(path, sizeof path, "%s/%s", pc->dir, e->file);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    if (f) {
        size_t hl = strlen(js);
        const size_t padded = (hl + 7) / 8 * 8;
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
        ok = fwrite(len8, 1, 8, f) == 8 && fwrite(js, 1, hl, f) == hl;
        for (; ok && hl < padded; hl++) ok = fputc(' ', f) != EOF;
        ok = ok && fwrite(e->tokens, sizeof(int), (size_t)e->n, f) == (size_t)e->n &&
             fwrite(e->state, 1, e->state_bytes, f) == e->state_bytes;
        ok = (fclose(f) == 0) && ok;
        ok = ok && rename(tmp, path) == 0;
        if (!ok) unlink(tmp);
    }
    free(js);
    if (!f || !ok) {
        pc_log(pc, "prompt cache: cannot write %s: %s", path, strerror(errno));
        e->file[0] = '\0';
        return -1;
    }
    return 0;
}

void pc_disk_remove(prompt_cache *pc, const pc_entry *e) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", pc->dir, e->file);
    if (unlink(path) != 0 && errno != ENOENT) pc_log(pc, "prompt cache: cannot delete %s: %s", path, strerror(errno));
}

static const char *meta_str(const cJSON *meta, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One tensor's entry: dtype, one dimension of `count`, offsets [from, to). 0 when it matches. */
static int check_tensor(const cJSON *h, const char *name, const char *dtype, double count, double from, double to) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(t, "shape"),
                *of = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    if (!cJSON_IsString(dt) || strcmp(dt->valuestring, dtype) != 0) return -1;
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 1 || cJSON_GetArrayItem(sh, 0)->valuedouble != count) return -1;
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || cJSON_GetArrayItem(of, 0)->valuedouble != from ||
        cJSON_GetArrayItem(of, 1)->valuedouble != to)
        return -1;
    return 0;
}

/* Reads and verifies one file into an entry; NULL with *why set when it is not usable. */
static pc_entry *read_entry(const prompt_cache *pc, const char *path, const char **why) {
    FILE *f = fopen(path, "rb");
    if (!f) return *why = strerror(errno), NULL;
    pc_entry *e = NULL;
    unsigned char *buf = NULL;
    cJSON *h = NULL;
    struct stat sb;
    *why = "cannot be read";
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < 8) {
        *why = "too short for a safetensors file";
        goto out;
    }
    if ((size_t)sb.st_size > pc->p.budget_bytes + MAX_HEADER) {
        *why = "larger than the cache's whole budget";
        goto out;
    }
    const size_t size = (size_t)sb.st_size;
    if (!(buf = malloc(size)) || fread(buf, 1, size, f) != size) goto out;
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)buf[i] << (8 * i);
    if (hl > MAX_HEADER || hl > size - 8) {
        /* either not safetensors at all or cut short: its first 8 bytes name a longer header */
        *why = size > 8 && buf[8] == '{' ? "truncated (the header runs past the end)" : "not a steno prompt-cache file";
        goto out;
    }
    h = cJSON_ParseWithLength((const char *)buf + 8, (size_t)hl);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
    const char *fmt = meta_str(meta, "format"), *ver = meta_str(meta, "version"),
               *model = meta_str(meta, "model_sha256"), *cfg = meta_str(meta, "cache_config"),
               *nts = meta_str(meta, "n_tokens"), *mps = meta_str(meta, "min_pos"), *toks = meta_str(meta, "tokens"),
               *ssha = meta_str(meta, "state_sha256");
    if (!h || !fmt || strcmp(fmt, FORMAT_NAME) != 0 || !ver || strcmp(ver, "1") != 0) {
        *why = "not a steno prompt-cache file";
        goto out;
    }
    if (!model || strcmp(model, pc->model_sha256) != 0) {
        *why = "made with another model (its model_sha256 differs)";
        goto out;
    }
    if (!cfg || strcmp(cfg, pc->config) != 0) {
        *why = "made with another KV-cache configuration";
        goto out;
    }
    char *end;
    const long n = nts ? strtol(nts, &end, 10) : -1, mp = mps ? strtol(mps, &end, 10) : -1;
    const size_t data = 8 + (size_t)hl;
    if (n < 1 || n > (long)((size - data) / 4) || mp < 0 || mp > n || !toks || !ssha) {
        *why = "bad token count or metadata";
        goto out;
    }
    const double nt = 4.0 * (double)n, ns = (double)(size - data) - nt;
    if (check_tensor(h, "tokens", "I32", (double)n, 0, nt) || check_tensor(h, "state", "U8", ns, nt, nt + ns)) {
        *why = "truncated, or its tensors do not match the header";
        goto out;
    }
    if (!(e = calloc(1, sizeof *e)) || !(e->tokens = malloc(sizeof(int) * (size_t)n)) ||
        !(e->state = malloc((size_t)ns > 0 ? (size_t)ns : 1))) {
        *why = "out of memory";
        goto out;
    }
    memcpy(e->tokens, buf + data, 4 * (size_t)n);
    const char *s = toks;
    for (long i = 0; i < n; i++) { /* the header's token list equals the tensor */
        long v = strtol(s, &end, 10);
        if (end == s || v != e->tokens[i] || (i + 1 < n ? *end != ',' : *end != '\0')) {
            *why = "its token ids disagree with its header";
            goto out;
        }
        s = end + 1;
    }
    e->n = (int)n;
    e->min_pos = (int)mp;
    e->state_bytes = (size_t)ns;
    memcpy(e->state, buf + data + 4 * (size_t)n, e->state_bytes);
    char got[65];
    sha256_hex(e->state, e->state_bytes, got);
    if (strcmp(got, ssha) != 0) {
        *why = "its state does not verify (SHA-256 mismatch)";
        goto out;
    }
    *why = NULL;
out:
    if (*why && e) {
        free(e->tokens);
        free(e->state);
        free(e);
        e = NULL;
    }
    cJSON_Delete(h);
    free(buf);
    fclose(f);
    return e;
}

typedef struct {
    char name[256];
    double mtime;
    size_t size;
} dir_file;

static int newest_first(const void *a, const void *b) {
    const double x = ((const dir_file *)a)->mtime, y = ((const dir_file *)b)->mtime;
    return x < y ? 1 : x > y ? -1 : strcmp(((const dir_file *)a)->name, ((const dir_file *)b)->name);
}

void pc_disk_load(prompt_cache *pc) {
    DIR *d = opendir(pc->dir);
    if (!d) return;
    dir_file *fs = NULL;
    int nf = 0, cap = 0, seen = 0;
    struct dirent *de;
    char path[4200];
    while ((de = readdir(d))) {
        const size_t l = strlen(de->d_name);
        if (l < 13 || strcmp(de->d_name + l - 12, ".safetensors") != 0) continue;
        seen++;
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", pc->dir, de->d_name);
        if (l >= sizeof fs->name || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            pc_log(pc, "prompt cache: ignoring %s: %s", path,
                   l >= sizeof fs->name ? "name too long" : "not a regular file");
            continue;
        }
        if (nf == cap) {
            cap = cap ? 2 * cap : 16;
            dir_file *n = realloc(fs, sizeof *fs * (size_t)cap);
            if (!n) break;
            fs = n;
        }
        snprintf(fs[nf].name, sizeof fs[nf].name, "%s", de->d_name);
        fs[nf].mtime = (double)sb.st_mtim.tv_sec + 1e-9 * (double)sb.st_mtim.tv_nsec;
        fs[nf++].size = (size_t)sb.st_size;
    }
    closedir(d);
    if (nf > 1) qsort(fs, (size_t)nf, sizeof *fs, newest_first);
    /* newest first: each file is verified, then kept if it still fits the budget (a file that
     * does not is skipped, not the end: older, smaller ones may fit); the kept ones go in oldest
     * first, so that the newest is the most recently used */
    pc_entry **kept = calloc(nf > 0 ? (size_t)nf : 1, sizeof *kept);
    size_t used = 0;
    int nk = 0;
    for (int i = 0; kept && i < nf; i++) {
        const char *why;
        snprintf(path, sizeof path, "%s/%s", pc->dir, fs[i].name);
        pc_entry *e = read_entry(pc, path, &why);
        if (!e) {
            pc_log(pc, "prompt cache: ignoring %s: %s", path, why);
            continue;
        }
        if (used + pc_entry_cost(e) > pc->p.budget_bytes) {
            pc_log(pc, "prompt cache: %s not loaded: its %zu bytes do not fit the budget (--prompt-cache-bytes %zu)",
                   path, pc_entry_cost(e), pc->p.budget_bytes);
            free(e->tokens);
            free(e->state);
            free(e);
            continue;
        }
        used += pc_entry_cost(e);
        snprintf(e->file, sizeof e->file, "%s", fs[i].name);
        kept[nk++] = e;
    }
    int loaded = 0;
    for (int i = nk - 1; i >= 0; i--) loaded += pc_insert(pc, kept[i], 1);
    if (seen) pc_log(pc, "prompt cache: %d of %d file(s) in %s loaded", loaded, seen, pc->dir);
    free(kept);
    free(fs);
}
