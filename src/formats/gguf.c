/* gguf.c — GGUF reader; see gguf.h. Follows llama.cpp ggml/src/gguf.cpp (gguf_init_from_file_impl)
 * for the layout and its checks, with every read bounds-checked against the mapping. */
#include "formats/gguf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/file.h"
#include "kernels/quant/quant.h"

#define GGUF_DEFAULT_ALIGNMENT 32

struct gguf_file {
    char *name;
    const uint8_t *base;
    size_t size;
    int mapped; /* 1: base is our mmap */
    uint32_t version;
    size_t alignment;
    uint64_t data_offset;
    int n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    int *kv_sorted;     /* indices sorted by key */
    int *tensor_sorted; /* indices sorted by name */
};

typedef struct {
    const uint8_t *p;
    size_t size, pos;
    const char *name;
    steno_status st;
} cursor;

static int need(cursor *c, uint64_t n, const char *what) {
    if (c->st != STENO_OK) return 0;
    if (n > c->size - c->pos) {
        c->st = steno_fail(STENO_E_FORMAT, "%s: truncated GGUF file (%s at byte %zu needs %llu bytes, %zu left)",
                           c->name, what, c->pos, (unsigned long long)n, c->size - c->pos);
        return 0;
    }
    return 1;
}

static uint32_t rd_u32(cursor *c, const char *what) {
    uint32_t v = 0;
    if (need(c, 4, what)) {
        memcpy(&v, c->p + c->pos, 4);
        c->pos += 4;
    }
    return v;
}

static uint64_t rd_u64(cursor *c, const char *what) {
    uint64_t v = 0;
    if (need(c, 8, what)) {
        memcpy(&v, c->p + c->pos, 8);
        c->pos += 8;
    }
    return v;
}

static gguf_str rd_str(cursor *c, const char *what) {
    gguf_str s = {NULL, 0};
    uint64_t n = rd_u64(c, what);
    if (!need(c, n, what)) return s;
    s.ptr = (const char *)c->p + c->pos;
    s.len = n;
    c->pos += n;
    return s;
}

static size_t scalar_size(int t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

const char *gguf_type_name(int t) {
    static const char *n[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
                              "array", "u64", "i64", "f64"};
    return t >= 0 && t < GGUF_TYPE_COUNT ? n[t] : "invalid";
}

/* Widens the scalar at p of type t into kv. */
static void widen(gguf_kv *kv, int t, const uint8_t *p) {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
    uint64_t u64; int64_t i64; double f64;
    kv->i64 = 0; kv->u64 = 0; kv->f64 = 0;
    switch (t) {
    case GGUF_TYPE_UINT8: memcpy(&u8, p, 1); kv->u64 = u8; kv->i64 = u8; kv->f64 = u8; break;
    case GGUF_TYPE_BOOL: memcpy(&u8, p, 1); kv->u64 = u8 != 0; kv->i64 = u8 != 0; kv->f64 = u8 != 0; break;
    case GGUF_TYPE_INT8: memcpy(&i8, p, 1); kv->i64 = i8; kv->u64 = (uint64_t)i8; kv->f64 = i8; break;
    case GGUF_TYPE_UINT16: memcpy(&u16, p, 2); kv->u64 = u16; kv->i64 = u16; kv->f64 = u16; break;
    case GGUF_TYPE_INT16: memcpy(&i16, p, 2); kv->i64 = i16; kv->u64 = (uint64_t)i16; kv->f64 = i16; break;
    case GGUF_TYPE_UINT32: memcpy(&u32, p, 4); kv->u64 = u32; kv->i64 = u32; kv->f64 = u32; break;
    case GGUF_TYPE_INT32: memcpy(&i32, p, 4); kv->i64 = i32; kv->u64 = (uint64_t)i32; kv->f64 = i32; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); kv->f64 = f32; break;
    case GGUF_TYPE_UINT64: memcpy(&u64, p, 8); kv->u64 = u64; kv->i64 = (int64_t)u64; kv->f64 = (double)u64; break;
    case GGUF_TYPE_INT64: memcpy(&i64, p, 8); kv->i64 = i64; kv->u64 = (uint64_t)i64; kv->f64 = (double)i64; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); kv->f64 = f64; break;
    default: break;
    }
}

static char *dup_str(gguf_str s) {
    char *r = malloc(s.len + 1);
    if (!r) return NULL;
    memcpy(r, s.ptr, s.len);
    r[s.len] = '\0';
    return r;
}

static _Thread_local const gguf_file *t_sort_file;

static int cmp_kv(const void *a, const void *b) {
    const gguf_file *f = t_sort_file;
    return strcmp(f->kv[*(const int *)a].key, f->kv[*(const int *)b].key);
}

static int cmp_tensor(const void *a, const void *b) {
    const gguf_file *f = t_sort_file;
    return strcmp(f->tensors[*(const int *)a].name, f->tensors[*(const int *)b].name);
}

static steno_status parse(gguf_file *f) {
    cursor c = {f->base, f->size, 0, f->name, STENO_OK};
    if (f->size < 4 || memcmp(f->base, "GGUF", 4) != 0) {
        if (f->size == 0) return steno_fail(STENO_E_FORMAT, "%s: empty file, not a GGUF model", f->name);
        return steno_fail(STENO_E_FORMAT, "%s: not a GGUF file (bad magic)", f->name);
    }
    c.pos = 4;
    f->version = rd_u32(&c, "version");
    if (c.st) return c.st;
    if (f->version == 1 || f->version > 3 || f->version == 0) {
        if ((f->version & 0xffff) == 0 && f->version != 0)
            return steno_fail(STENO_E_UNSUPPORTED, "%s: big-endian GGUF files are not supported", f->name);
        return steno_fail(f->version == 1 ? STENO_E_UNSUPPORTED : STENO_E_FORMAT,
                          "%s: unsupported GGUF version %u (steno reads versions 2 and 3)", f->name,
                          f->version);
    }
    uint64_t n_tensors = rd_u64(&c, "tensor count");
    uint64_t n_kv = rd_u64(&c, "metadata count");
    if (c.st) return c.st;
    /* A key/value pair takes at least 8 (key length) + 4 (type) + 1 bytes, a tensor info at least
     * 8 + 4 + 8 + 4 + 8 bytes: larger counts cannot fit in the file. */
    size_t left = f->size - c.pos;
    if (n_kv > left / 13 || n_kv > INT32_MAX)
        return steno_fail(STENO_E_FORMAT, "%s: metadata count %llu is impossible for a %zu-byte file",
                          f->name, (unsigned long long)n_kv, f->size);
    if (n_tensors > left / 32 || n_tensors > INT32_MAX)
        return steno_fail(STENO_E_FORMAT, "%s: tensor count %llu is impossible for a %zu-byte file",
                          f->name, (unsigned long long)n_tensors, f->size);

    f->kv = calloc(n_kv ? n_kv : 1, sizeof *f->kv);
    f->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *f->tensors);
    f->kv_sorted = malloc((n_kv ? n_kv : 1) * sizeof(int));
    f->tensor_sorted = malloc((n_tensors ? n_tensors : 1) * sizeof(int));
    if (!f->kv || !f->tensors || !f->kv_sorted || !f->tensor_sorted)
        return steno_fail(STENO_E_NOMEM, "%s: out of memory reading the GGUF index", f->name);

    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        gguf_str key = rd_str(&c, "metadata key");
        if (c.st) return c.st;
        if (key.len == 0) return steno_fail(STENO_E_FORMAT, "%s: metadata key %llu is empty", f->name, (unsigned long long)i);
        if (memchr(key.ptr, '\0', key.len))
            return steno_fail(STENO_E_FORMAT, "%s: metadata key %llu contains a NUL byte", f->name, (unsigned long long)i);
        if (!(kv->key = dup_str(key))) return steno_fail(STENO_E_NOMEM, "%s: out of memory", f->name);
        f->n_kv = (int)i + 1;
        kv->type = (int)rd_u32(&c, "metadata type");
        if (c.st) return c.st;
        if (kv->type < 0 || kv->type >= GGUF_TYPE_COUNT)
            return steno_fail(STENO_E_FORMAT, "%s: metadata '%s' has invalid type %d", f->name, kv->key, kv->type);
        if (kv->type == GGUF_TYPE_STRING) {
            kv->str = rd_str(&c, kv->key);
        } else if (kv->type == GGUF_TYPE_ARRAY) {
            kv->arr_type = (int)rd_u32(&c, kv->key);
            kv->n = rd_u64(&c, kv->key);
            if (c.st) return c.st;
            if (kv->arr_type == GGUF_TYPE_STRING) {
                if (kv->n > (f->size - c.pos) / 8)
                    return steno_fail(STENO_E_FORMAT, "%s: array '%s' claims %llu strings, more than the file holds",
                                      f->name, kv->key, (unsigned long long)kv->n);
                kv->strs = malloc((kv->n ? kv->n : 1) * sizeof(gguf_str));
                if (!kv->strs) return steno_fail(STENO_E_NOMEM, "%s: out of memory", f->name);
                for (uint64_t j = 0; j < kv->n; j++) {
                    kv->strs[j] = rd_str(&c, kv->key);
                    if (c.st) return c.st;
                }
            } else {
                size_t es = scalar_size(kv->arr_type);
                if (es == 0)
                    return steno_fail(STENO_E_FORMAT, "%s: array '%s' has invalid element type %d",
                                      f->name, kv->key, kv->arr_type);
                if (kv->n > (f->size - c.pos) / es)
                    return steno_fail(STENO_E_FORMAT, "%s: array '%s' claims %llu elements, more than the file holds",
                                      f->name, kv->key, (unsigned long long)kv->n);
                kv->data = c.p + c.pos;
                c.pos += kv->n * es;
            }
        } else {
            size_t es = scalar_size(kv->type);
            if (need(&c, es, kv->key)) {
                widen(kv, kv->type, c.p + c.pos);
                c.pos += es;
            }
        }
        if (c.st) return c.st;
        if (strcmp(kv->key, "general.alignment") == 0) {
            if (kv->type != GGUF_TYPE_UINT32)
                return steno_fail(STENO_E_FORMAT, "%s: general.alignment has type %s, expected u32",
                                  f->name, gguf_type_name(kv->type));
            /* The GGUF spec (ggml docs/gguf.md) requires a multiple of 8; a smaller one would leave the
             * fp16 fields of quantized blocks misaligned. */
            if (kv->u64 < 8 || (kv->u64 & (kv->u64 - 1)) != 0 || kv->u64 > (1u << 20))
                return steno_fail(STENO_E_FORMAT,
                                  "%s: general.alignment %llu is not a power of two in [8, 1 MiB]",
                                  f->name, (unsigned long long)kv->u64);
            f->alignment = (size_t)kv->u64;
        }
    }
    for (int i = 0; i < f->n_kv; i++) f->kv_sorted[i] = i;
    t_sort_file = f;
    qsort(f->kv_sorted, (size_t)f->n_kv, sizeof(int), cmp_kv);
    for (int i = 1; i < f->n_kv; i++)
        if (strcmp(f->kv[f->kv_sorted[i]].key, f->kv[f->kv_sorted[i - 1]].key) == 0)
            return steno_fail(STENO_E_FORMAT, "%s: duplicate metadata key '%s'", f->name, f->kv[f->kv_sorted[i]].key);

    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        gguf_str name = rd_str(&c, "tensor name");
        if (c.st) return c.st;
        if (name.len == 0 || memchr(name.ptr, '\0', name.len))
            return steno_fail(STENO_E_FORMAT, "%s: tensor %llu has an empty or invalid name", f->name, (unsigned long long)i);
        if (!(t->name = dup_str(name))) return steno_fail(STENO_E_NOMEM, "%s: out of memory", f->name);
        f->n_tensors = (int)i + 1;
        uint32_t nd = rd_u32(&c, t->name);
        if (c.st) return c.st;
        if (nd < 1 || nd > 4)
            return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has %u dimensions (1..4 allowed)", f->name, t->name, nd);
        t->n_dims = (int)nd;
        for (int d = 0; d < 4; d++) t->ne[d] = 1;
        uint64_t nelem = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne = rd_u64(&c, t->name);
            if (c.st) return c.st;
            if (ne == 0 || ne > (uint64_t)INT64_MAX / nelem)
                return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' has an invalid dimension %u (%llu)",
                                  f->name, t->name, d, (unsigned long long)ne);
            t->ne[d] = (int64_t)ne;
            nelem *= ne;
        }
        t->type = (int)rd_u32(&c, t->name);
        uint64_t off = rd_u64(&c, t->name);
        if (c.st) return c.st;
        const steno_type_traits *tr = steno_type_get(t->type);
        if (!tr || !tr->to_float)
            return steno_fail(STENO_E_UNSUPPORTED, "%s: tensor '%s' has type %s, which steno does not support",
                              f->name, t->name, steno_type_name(t->type));
        if (t->ne[0] % tr->block_size != 0)
            return steno_fail(STENO_E_FORMAT, "%s: tensor '%s': row length %lld is not a multiple of the %s block size %d",
                              f->name, t->name, (long long)t->ne[0], tr->name, tr->block_size);
        uint64_t nblocks = nelem / (uint64_t)tr->block_size;
        if (nblocks > UINT64_MAX / tr->type_size)
            return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' is impossibly large", f->name, t->name);
        t->size = nblocks * tr->type_size;
        if (off % f->alignment != 0)
            return steno_fail(STENO_E_FORMAT, "%s: tensor '%s' offset %llu is not a multiple of the alignment %zu",
                              f->name, t->name, (unsigned long long)off, f->alignment);
        t->offset = off; /* relative for now */
    }
    for (int i = 0; i < f->n_tensors; i++) f->tensor_sorted[i] = i;
    t_sort_file = f;
    qsort(f->tensor_sorted, (size_t)f->n_tensors, sizeof(int), cmp_tensor);
    for (int i = 1; i < f->n_tensors; i++)
        if (strcmp(f->tensors[f->tensor_sorted[i]].name, f->tensors[f->tensor_sorted[i - 1]].name) == 0)
            return steno_fail(STENO_E_FORMAT, "%s: duplicate tensor name '%s'", f->name,
                              f->tensors[f->tensor_sorted[i]].name);

    uint64_t data = ((uint64_t)c.pos + f->alignment - 1) / f->alignment * f->alignment;
    f->data_offset = data;
    if (f->n_tensors > 0 && data > f->size)
        return steno_fail(STENO_E_FORMAT, "%s: truncated GGUF file (the tensor data section at byte %llu is past the end, %zu bytes)",
                          f->name, (unsigned long long)data, f->size);
    for (int i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t avail = f->size - data;
        if (t->offset > avail || t->size > avail - t->offset)
            return steno_fail(STENO_E_FORMAT,
                              "%s: tensor '%s' (%llu bytes at data offset %llu) extends past the end of the file "
                              "(%zu bytes): truncated or corrupt",
                              f->name, t->name, (unsigned long long)t->size, (unsigned long long)t->offset, f->size);
        t->offset += data;
        t->data = f->base + t->offset;
    }
    return STENO_OK;
}

static steno_status finish_open(gguf_file *f, gguf_file **out) {
    steno_status st = parse(f);
    if (st != STENO_OK) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return STENO_OK;
}

steno_status gguf_open(const char *path, gguf_file **out) {
    *out = NULL;
    static const steno_map_words words = {
        .open = "", .stat = "", .dir = "is a directory, not a GGUF file"};
    steno_mapped_file mf;
    steno_status s = steno_map_file(path, &words, &mf);
    if (s != STENO_OK) return s;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(path))) {
        free(f);
        steno_unmap_file(&mf);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    f->base = mf.data;
    f->size = mf.size;
    f->mapped = mf.mapped;
    return finish_open(f, out);
}

steno_status gguf_open_buffer(const void *data, size_t size, const char *name, gguf_file **out) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(name ? name : "<memory>"))) {
        free(f);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", name ? name : "<memory>");
    }
    f->base = size ? data : (const uint8_t *)"";
    f->size = size;
    return finish_open(f, out);
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->kv)
        for (int i = 0; i < f->n_kv; i++) {
            free((char *)f->kv[i].key);
            free(f->kv[i].strs);
        }
    if (f->tensors)
        for (int i = 0; i < f->n_tensors; i++) free((char *)f->tensors[i].name);
    free(f->kv);
    free(f->tensors);
    free(f->kv_sorted);
    free(f->tensor_sorted);
    if (f->mapped) munmap((void *)f->base, f->size);
    free(f->name);
    free(f);
}

const char *gguf_name(const gguf_file *f) { return f->name; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
size_t gguf_alignment(const gguf_file *f) { return f->alignment; }
uint64_t gguf_file_size(const gguf_file *f) { return f->size; }
int gguf_n_kv(const gguf_file *f) { return f->n_kv; }
const gguf_kv *gguf_kv_at(const gguf_file *f, int i) { return i >= 0 && i < f->n_kv ? &f->kv[i] : NULL; }
int gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }
const gguf_tensor *gguf_tensor_at(const gguf_file *f, int i) {
    return i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    int lo = 0, hi = f->n_kv - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const gguf_kv *kv = &f->kv[f->kv_sorted[mid]];
        int c = strcmp(kv->key, key);
        if (c == 0) return kv;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    int lo = 0, hi = f->n_tensors - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const gguf_tensor *t = &f->tensors[f->tensor_sorted[mid]];
        int c = strcmp(t->name, name);
        if (c == 0) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

int gguf_get_int(const gguf_file *f, const char *key, int64_t *v) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    switch (kv->type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16:
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64: case GGUF_TYPE_BOOL:
        *v = kv->i64;
        return 1;
    case GGUF_TYPE_UINT64:
        if (kv->u64 > (uint64_t)INT64_MAX) return 0;
        *v = kv->i64;
        return 1;
    default: return 0;
    }
}

int gguf_get_float(const gguf_file *f, const char *key, double *v) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type == GGUF_TYPE_STRING || kv->type == GGUF_TYPE_ARRAY) return 0;
    *v = kv->f64;
    return 1;
}

const gguf_str *gguf_get_str(const gguf_file *f, const char *key) {
    const gguf_kv *kv = gguf_find(f, key);
    return kv && kv->type == GGUF_TYPE_STRING ? &kv->str : NULL;
}

double gguf_arr_float(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp;
    size_t es = scalar_size(kv->arr_type);
    if (!kv->data || i >= kv->n || !es) return 0;
    widen(&tmp, kv->arr_type, kv->data + i * es);
    return tmp.f64;
}

int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp;
    size_t es = scalar_size(kv->arr_type);
    if (!kv->data || i >= kv->n || !es) return 0;
    widen(&tmp, kv->arr_type, kv->data + i * es);
    return tmp.i64;
}
