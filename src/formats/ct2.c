/* ct2.c — mmap'd reader for CTranslate2's model.bin (see ct2.h for the layout).
 *
 * The whole file is mapped read-only; the index (ct2_var array + a sorted name table) is built by a
 * single bounds-checked pass. Nothing is allocated from a count read in the file before that count
 * has been checked against the bytes that remain, so a corrupt header can never cause a huge
 * allocation or a read past the end of the mapping.
 */
#include "formats/ct2.h"
#include "kernels/gemv/vec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/fp16.h"

#define CT2_MIN_VERSION 3
#define CT2_MAX_VERSION 6
#define CT2_MAX_RANK 8

typedef struct ct2_alias {
    const char *alias;
    const char *target;
} ct2_alias;

struct ct2_model {
    const uint8_t *map;
    size_t size;
    uint32_t version;
    uint32_t spec_revision;
    const char *spec_name;
    ct2_var *vars;
    int n_vars;
    int *sorted;          /* indices into vars, sorted by name */
    ct2_alias *aliases;   /* sorted by alias */
    int n_aliases;
};

/* ------------------------------------------------------------------------------------------- */
/* Bounds-checked cursor                                                                         */

typedef struct {
    const uint8_t *p;
    size_t size;
    size_t off;
} cursor;

static int cur_need(const cursor *c, size_t n) { return n <= c->size - c->off; }

static int rd_u8(cursor *c, uint8_t *v) {
    if (!cur_need(c, 1)) return 0;
    *v = c->p[c->off++];
    return 1;
}

static int rd_u16(cursor *c, uint16_t *v) {
    if (!cur_need(c, 2)) return 0;
    const uint8_t *q = c->p + c->off;
    *v = (uint16_t)(q[0] | (q[1] << 8));
    c->off += 2;
    return 1;
}

static int rd_u32(cursor *c, uint32_t *v) {
    if (!cur_need(c, 4)) return 0;
    const uint8_t *q = c->p + c->off;
    *v = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) | ((uint32_t)q[3] << 24);
    c->off += 4;
    return 1;
}

/* str = u16 length (including the trailing NUL) + bytes. 1 ok, 0 truncated, -1 malformed. */
static int rd_str(cursor *c, const char **s) {
    uint16_t n;
    if (!rd_u16(c, &n)) return 0;
    if (!cur_need(c, n)) return 0;
    if (n == 0 || c->p[c->off + n - 1] != '\0') return -1;
    if (memchr(c->p + c->off, '\0', n) != c->p + c->off + n - 1) return -1; /* embedded NUL */
    *s = (const char *)(c->p + c->off);
    c->off += n;
    return 1;
}

static size_t dtype_size(int dt) {
    switch (dt) {
    case CT2_F32: return 4;
    case CT2_I8: return 1;
    case CT2_I16: return 2;
    case CT2_I32: return 4;
    case CT2_F16: return 2;
    case CT2_BF16: return 2;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Sorting / lookup                                                                              */

static void sort_indices(const ct2_var *vars, int *idx, int *tmp, int n) {
    /* bottom-up merge sort by name: stable, no global state */
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n;
            int hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = strcmp(vars[idx[i]].name, vars[idx[j]].name) <= 0 ? idx[i++] : idx[j++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

static int cmp_alias(const void *a, const void *b) {
    return strcmp(((const ct2_alias *)a)->alias, ((const ct2_alias *)b)->alias);
}

static const ct2_var *find_direct(const ct2_model *m, const char *name) {
    int lo = 0, hi = m->n_vars - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const ct2_var *v = &m->vars[m->sorted[mid]];
        int c = strcmp(name, v->name);
        if (c == 0) return v;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

static const char *find_alias(const ct2_model *m, const char *name) {
    if (m->n_aliases == 0) return NULL;
    ct2_alias key = {name, NULL};
    const ct2_alias *a = bsearch(&key, m->aliases, (size_t)m->n_aliases, sizeof key, cmp_alias);
    return a ? a->target : NULL;
}

/* ------------------------------------------------------------------------------------------- */

static void free_index(ct2_model *m) {
    free(m->vars);
    free(m->sorted);
    free(m->aliases);
    m->vars = NULL;
    m->sorted = NULL;
    m->aliases = NULL;
}

/* Parses the mapping; on failure records a message naming path and returns the status. */
static steno_status parse(ct2_model *m, const char *path) {
    cursor c = {m->map, m->size, 0};
    uint32_t version = 0, n_vars = 0, n_aliases = 0;
    int r;

#define TRUNC(what)                                                                                \
    steno_fail(STENO_E_FORMAT, "%s: truncated model file (%s at byte %zu, file is %zu bytes)",  \
               path, what, c.off, m->size)

    if (!rd_u32(&c, &version)) return TRUNC("binary version");
    if (version < CT2_MIN_VERSION || version > CT2_MAX_VERSION)
        return steno_fail(STENO_E_FORMAT,
                          "%s: not a CTranslate2 model or unsupported binary version %u "
                          "(supported: %d..%d)",
                          path, version, CT2_MIN_VERSION, CT2_MAX_VERSION);
    m->version = version;

    r = rd_str(&c, &m->spec_name);
    if (r == 0) return TRUNC("spec name");
    if (r < 0) return steno_fail(STENO_E_FORMAT, "%s: corrupt spec name at byte %zu", path, c.off);
    if (version >= 2 && !rd_u32(&c, &m->spec_revision)) return TRUNC("spec revision");

    if (!rd_u32(&c, &n_vars)) return TRUNC("variable count");
    /* each variable needs at least: u16 name length + 1 name byte + u8 rank + u8 dtype/item size
     * + u32 n_bytes */
    const size_t min_var = 2 + 1 + 1 + 1 + 4;
    if (n_vars > (m->size - c.off) / min_var || n_vars > (uint32_t)(INT32_MAX / 2))
        return steno_fail(STENO_E_FORMAT,
                          "%s: truncated or corrupt header: %u variables cannot fit in the "
                          "remaining %zu bytes",
                          path, n_vars, m->size - c.off);

    if (n_vars > 0) {
        m->vars = calloc(n_vars, sizeof *m->vars);
        m->sorted = malloc(n_vars * sizeof *m->sorted);
        if (!m->vars || !m->sorted)
            return steno_fail(STENO_E_NOMEM, "%s: out of memory indexing %u variables", path, n_vars);
    }

    for (uint32_t i = 0; i < n_vars; i++) {
        ct2_var *v = &m->vars[i];
        uint8_t rank, dt;
        uint32_t nb;
        r = rd_str(&c, &v->name);
        if (r == 0) return TRUNC("variable name");
        if (r < 0)
            return steno_fail(STENO_E_FORMAT, "%s: corrupt name of variable %u at byte %zu", path,
                              i, c.off);
        if (!rd_u8(&c, &rank)) return TRUNC("variable rank");
        if (rank > CT2_MAX_RANK)
            return steno_fail(STENO_E_FORMAT, "%s: variable '%s' has rank %u (max %d)", path,
                              v->name, rank, CT2_MAX_RANK);
        v->rank = rank;
        uint64_t n_elems = 1;
        int too_big = 0;
        for (int d = 0; d < rank; d++) {
            uint32_t dim;
            if (!rd_u32(&c, &dim)) return TRUNC("variable dims");
            v->dims[d] = dim;
            if (__builtin_mul_overflow(n_elems, (uint64_t)dim, &n_elems)) too_big = 1;
        }
        if (too_big || n_elems > (uint64_t)INT64_MAX / 8)
            return steno_fail(STENO_E_FORMAT, "%s: variable '%s' has an impossible shape", path,
                              v->name);
        v->n_elems = (int64_t)n_elems;
        size_t esz;
        if (version >= 4) {
            if (!rd_u8(&c, &dt)) return TRUNC("variable dtype");
            esz = dtype_size(dt);
            if (!esz)
                return steno_fail(STENO_E_FORMAT, "%s: variable '%s' has unknown dtype %u", path,
                                  v->name, dt);
            if (!rd_u32(&c, &nb)) return TRUNC("variable byte count");
        } else {
            /* binary versions < 4: u8 item size, u32 element count */
            uint8_t item;
            uint32_t count;
            if (!rd_u8(&c, &item)) return TRUNC("variable item size");
            if (item == 4) dt = CT2_F32;
            else if (item == 2) dt = CT2_I16;
            else if (item == 1) dt = CT2_I8;
            else
                return steno_fail(STENO_E_FORMAT, "%s: variable '%s' has unknown item size %u",
                                  path, v->name, item);
            esz = item;
            if (!rd_u32(&c, &count)) return TRUNC("variable element count");
            if ((uint64_t)count * item > UINT32_MAX)
                return steno_fail(STENO_E_FORMAT, "%s: variable '%s' is too large", path, v->name);
            nb = (uint32_t)(count * item);
        }
        v->dtype = (ct2_dtype)dt;
        if (n_elems * esz != nb)
            return steno_fail(STENO_E_FORMAT,
                              "%s: variable '%s': %u bytes of data do not match its shape "
                              "(%llu elements of %zu bytes)",
                              path, v->name, nb, (unsigned long long)n_elems, esz);
        if (!cur_need(&c, nb)) return TRUNC("variable data");
        v->data = c.p + c.off;
        c.off += nb;
    }
    m->n_vars = (int)n_vars;

    if (version >= 3) {
        if (!rd_u32(&c, &n_aliases)) return TRUNC("alias count");
        if (n_aliases > (m->size - c.off) / 6) /* two strs of at least 3 bytes each */
            return steno_fail(STENO_E_FORMAT,
                              "%s: truncated or corrupt alias table: %u aliases cannot fit in "
                              "the remaining %zu bytes",
                              path, n_aliases, m->size - c.off);
        if (n_aliases > 0) {
            m->aliases = calloc(n_aliases, sizeof *m->aliases);
            if (!m->aliases) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
        }
        for (uint32_t i = 0; i < n_aliases; i++) {
            r = rd_str(&c, &m->aliases[i].alias);
            if (r == 0) return TRUNC("alias name");
            if (r > 0) r = rd_str(&c, &m->aliases[i].target);
            if (r == 0) return TRUNC("alias target");
            if (r < 0)
                return steno_fail(STENO_E_FORMAT, "%s: corrupt alias %u at byte %zu", path, i,
                                  c.off);
        }
        m->n_aliases = (int)n_aliases;
    }
    if (c.off != m->size)
        return steno_fail(STENO_E_FORMAT, "%s: %zu unexpected trailing bytes after the model",
                          path, m->size - c.off);
#undef TRUNC

    /* name index */
    if (m->n_vars > 0) {
        int *tmp = malloc((size_t)m->n_vars * sizeof *tmp);
        if (!tmp) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
        for (int i = 0; i < m->n_vars; i++) m->sorted[i] = i;
        sort_indices(m->vars, m->sorted, tmp, m->n_vars);
        free(tmp);
        for (int i = 1; i < m->n_vars; i++)
            if (strcmp(m->vars[m->sorted[i - 1]].name, m->vars[m->sorted[i]].name) == 0)
                return steno_fail(STENO_E_FORMAT, "%s: duplicate variable '%s'", path,
                                  m->vars[m->sorted[i]].name);
    }
    if (m->n_aliases > 1) qsort(m->aliases, (size_t)m->n_aliases, sizeof *m->aliases, cmp_alias);
    for (int i = 0; i < m->n_aliases; i++)
        if (!find_direct(m, m->aliases[i].target))
            return steno_fail(STENO_E_FORMAT, "%s: alias '%s' names a missing variable '%s'", path,
                              m->aliases[i].alias, m->aliases[i].target);
    return STENO_OK;
}

static const steno_map_words CT2_MAP_WORDS = {
    .open = "cannot open: ",
    .stat = "cannot stat: ",
    .dir = "is a directory",
    .not_regular = "not a regular file",
    .empty = "empty file (not a CTranslate2 model)",
    .too_large = "file too large",
    .map_names_size = 1,
};

steno_status ct2_open(const char *path, ct2_model **out) {
    if (out) *out = NULL;
    if (!path || !out) return steno_fail(STENO_E_INVALID_ARG, "ct2_open: NULL argument");

    /* stat and map before allocating: the file's own errors come first */
    steno_mapped_file mf;
    steno_status s = steno_map_file(path, &CT2_MAP_WORDS, &mf);
    if (s != STENO_OK) return s;
    ct2_model *m = calloc(1, sizeof *m);
    if (!m) {
        steno_unmap_file(&mf);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    m->size = mf.size;
    m->map = mf.data;

    s = parse(m, path);
    if (s != STENO_OK) {
        ct2_close(m);
        return s;
    }
    *out = m;
    return STENO_OK;
}

void ct2_close(ct2_model *m) {
    if (!m) return;
    free_index(m);
    if (m->map) munmap((void *)m->map, m->size);
    free(m);
}

const char *ct2_spec_name(const ct2_model *m) { return m ? m->spec_name : NULL; }

int ct2_n_vars(const ct2_model *m) { return m ? m->n_vars : 0; }

const ct2_var *ct2_var_at(const ct2_model *m, int i) {
    if (!m || i < 0 || i >= m->n_vars) return NULL;
    return &m->vars[i];
}

const ct2_var *ct2_find(const ct2_model *m, const char *name) {
    if (!m || !name) return NULL;
    const ct2_var *v = find_direct(m, name);
    if (v) return v;
    /* aliases point at real variables (checked at open); follow at most a few hops anyway */
    const char *t = name;
    for (int hop = 0; hop < 4; hop++) {
        t = find_alias(m, t);
        if (!t) return NULL;
        v = find_direct(m, t);
        if (v) return v;
    }
    return NULL;
}

void ct2_to_f32(const ct2_var *v, float *dst) {
    if (!v || !dst) return;
    const uint8_t *s = v->data;
    int64_t n = v->n_elems;
    switch (v->dtype) {
    case CT2_F32:
        memcpy(dst, s, (size_t)n * 4);
        break;
    case CT2_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = steno_fp16_to_f32(h);
        }
        break;
    case CT2_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = steno_bf16_to_f32(h);
        }
        break;
    case CT2_I8:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)(int8_t)s[i];
        break;
    case CT2_I16:
        for (int64_t i = 0; i < n; i++) {
            int16_t x;
            memcpy(&x, s + 2 * i, 2);
            dst[i] = (float)x;
        }
        break;
    case CT2_I32:
        for (int64_t i = 0; i < n; i++) {
            int32_t x;
            memcpy(&x, s + 4 * i, 4);
            dst[i] = (float)x;
        }
        break;
    }
}

void ct2_to_f16(const ct2_var *v, uint16_t *dst) {
    if (v->dtype == CT2_F16) {
        memcpy(dst, v->data, (size_t)v->n_elems * 2);
        return;
    }
    float *tmp = malloc(sizeof(float) * (size_t)(v->n_elems ? v->n_elems : 1));
    if (!tmp) { /* convert element by element without a buffer */
        for (int64_t i = 0; i < v->n_elems; i++) {
            ct2_var one = *v;
            float f;
            one.n_elems = 1;
            one.data = (const uint8_t *)v->data + i * (int64_t)dtype_size(v->dtype);
            ct2_to_f32(&one, &f);
            vec_f32_to_f16(&f, dst + i, 1);
        }
        return;
    }
    ct2_to_f32(v, tmp);
    vec_f32_to_f16(tmp, dst, (size_t)v->n_elems);
    free(tmp);
}

void ct2_release(const ct2_model *m, const ct2_var *v) {
    const long page = sysconf(_SC_PAGESIZE);
    if (!m || !v || page <= 0) return;
    uintptr_t a = (uintptr_t)v->data, b = a + (uintptr_t)v->n_elems * dtype_size(v->dtype);
    a = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    b &= ~((uintptr_t)page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

int64_t ct2_scalar_int(const ct2_model *m, const char *name, int *ok) {
    const ct2_var *v = ct2_find(m, name);
    int good = v && v->n_elems == 1;
    int64_t r = 0;
    if (good) {
        switch (v->dtype) {
        case CT2_I8: r = *(const int8_t *)v->data; break;
        case CT2_I16: {
            int16_t x;
            memcpy(&x, v->data, 2);
            r = x;
            break;
        }
        case CT2_I32: {
            int32_t x;
            memcpy(&x, v->data, 4);
            r = x;
            break;
        }
        default: good = 0; break;
        }
    }
    if (ok) *ok = good;
    return good ? r : 0;
}
