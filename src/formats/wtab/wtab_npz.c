/* wtab_npz.c — NumPy .npz archives (np.savez, as mlx-examples whisper/convert.py writes
 * weights.npz) as weight-table views (wtab_readers.h: wtab_add_npz).
 *
 * An .npz is a zip of stored (method 0) members "<name>.npy" (numpy lib/npyio.py: savez; zip64
 * sizes forced). The members are found through the central directory (PKWARE APPNOTE 4.3.12,
 * 4.3.16, zip64 4.3.14/4.3.15/4.5.3); each .npy is "\x93NUMPY", version, a header length (u16 for
 * 1.x, u32 for 2.x/3.x) and a Python-dict header {'descr': '<f4', 'fortran_order': False,
 * 'shape': (..), } (numpy lib/format.py). Every offset and size is checked against the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/wtab/wtab_readers.h"

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Parses an .npy member at p (n bytes) into dtype/shape/data. */
static steno_status parse_npy(const char *path, const char *member, const uint8_t *p, uint64_t n, wt_dtype *dt,
                              int *rank, int64_t dims[4], const uint8_t **data, uint64_t *dlen) {
    if (n < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
        return steno_fail(STENO_E_FORMAT, "%s: %s: not an .npy array", path, member);
    const int major = p[6];
    const uint64_t hl = major == 1 ? le(p + 8, 2) : le(p + 8, 4), ho = major == 1 ? 10 : 12;
    if (major < 1 || major > 3 || ho + hl > n || hl > 65536)
        return steno_fail(STENO_E_FORMAT, "%s: %s: bad .npy header", path, member);
    char h[65537];
    memcpy(h, p + ho, hl);
    h[hl] = '\0';
    const char *d = strstr(h, "'descr':"), *f = strstr(h, "'fortran_order':"), *s = strstr(h, "'shape':");
    if (!d || !f || !s) return steno_fail(STENO_E_FORMAT, "%s: %s: .npy header lacks descr/fortran_order/shape", path, member);
    d += 8;
    while (*d == ' ') d++;
    if (strncmp(d, "'<f4'", 5) == 0) *dt = WT_F32;
    else if (strncmp(d, "'<f2'", 5) == 0) *dt = WT_F16;
    else return steno_fail(STENO_E_FORMAT, "%s: %s: dtype %.8s is not little-endian float32/float16", path, member, d);
    f += 16;
    while (*f == ' ') f++;
    if (strncmp(f, "False", 5) != 0) return steno_fail(STENO_E_FORMAT, "%s: %s: Fortran-order array", path, member);
    s += 8;
    while (*s == ' ') s++;
    if (*s++ != '(') return steno_fail(STENO_E_FORMAT, "%s: %s: bad shape", path, member);
    *rank = 0;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *e;
        const long long v = strtoll(s, &e, 10);
        if (e == s || v < 1 || v > (1LL << 30) || *rank == 4)
            return steno_fail(STENO_E_FORMAT, "%s: %s: bad shape", path, member);
        dims[(*rank)++] = v;
        s = e;
    }
    if (*rank == 0) return steno_fail(STENO_E_FORMAT, "%s: %s: a scalar, not a weight", path, member);
    *data = p + ho + hl;
    *dlen = n - ho - hl;
    return STENO_OK;
}

steno_status wtab_add_npz(wtab *w, const char *path, int (*map)(const char *in, char *out, size_t cap)) {
    const uint8_t *p;
    size_t len;
    steno_status st = wtab_map_file(w, path, &p, &len);
    if (st != STENO_OK) return st;
    /* end of central directory: within the last 64 KiB + 22 bytes */
    size_t eocd = (size_t)-1;
    for (size_t i = len >= 22 ? len - 22 : 0; len >= 22; i--) {
        if (le(p + i, 4) == 0x06054b50u) {
            eocd = i;
            break;
        }
        if (i == 0 || len - i > 65557) break;
    }
    if (eocd == (size_t)-1) return steno_fail(STENO_E_FORMAT, "%s: not a zip archive (no end of central directory)", path);
    uint64_t n_ent = le(p + eocd + 10, 2), cd_off = le(p + eocd + 16, 4), cd_size = le(p + eocd + 12, 4);
    if ((cd_off == 0xFFFFFFFFu || n_ent == 0xFFFFu) && eocd >= 20 && le(p + eocd - 20, 4) == 0x07064b50u) {
        const uint64_t z = le(p + eocd - 12, 8);
        if (z > len || len - z < 56 || le(p + z, 4) != 0x06064b50u)
            return steno_fail(STENO_E_FORMAT, "%s: bad zip64 end of central directory", path);
        n_ent = le(p + z + 32, 8);
        cd_size = le(p + z + 40, 8);
        cd_off = le(p + z + 48, 8);
    }
    if (cd_off > len || cd_size > len - cd_off) return steno_fail(STENO_E_FORMAT, "%s: central directory outside the file", path);
    uint64_t o = cd_off;
    for (uint64_t e = 0; e < n_ent; e++) {
        if (cd_off + cd_size - o < 46 || le(p + o, 4) != 0x02014b50u)
            return steno_fail(STENO_E_FORMAT, "%s: central directory entry %llu is malformed", path, (unsigned long long)e);
        const unsigned method = (unsigned)le(p + o + 10, 2);
        uint64_t csize = le(p + o + 20, 4), usize = le(p + o + 24, 4), loff = le(p + o + 42, 4);
        const uint64_t nl = le(p + o + 28, 2), xl = le(p + o + 30, 2), cl = le(p + o + 32, 2);
        if (cd_off + cd_size - o - 46 < nl + xl + cl) return steno_fail(STENO_E_FORMAT, "%s: central directory entry %llu overruns", path, (unsigned long long)e);
        const uint8_t *x = p + o + 46 + nl, *xe = x + xl;
        while (xe - x >= 4) { /* zip64 extra: the fields that were 0xFFFFFFFF, in this order */
            const unsigned id = (unsigned)le(x, 2), sz = (unsigned)le(x + 2, 2);
            if ((size_t)(xe - x - 4) < sz) break;
            if (id == 1) {
                const uint8_t *q = x + 4, *qe = q + sz;
                if (usize == 0xFFFFFFFFu && qe - q >= 8) usize = le(q, 8), q += 8;
                if (csize == 0xFFFFFFFFu && qe - q >= 8) csize = le(q, 8), q += 8;
                if (loff == 0xFFFFFFFFu && qe - q >= 8) loff = le(q, 8);
            }
            x += 4 + sz;
        }
        char member[256];
        if (nl == 0 || nl >= sizeof member) return steno_fail(STENO_E_FORMAT, "%s: member %llu has a bad name", path, (unsigned long long)e);
        memcpy(member, p + o + 46, nl);
        member[nl] = '\0';
        o += 46 + nl + xl + cl;
        if (method != 0 || csize != usize)
            return steno_fail(STENO_E_FORMAT, "%s: %s is compressed (np.savez_compressed); steno reads stored members only", path, member);
        if (loff > len || len - loff < 30 || le(p + loff, 4) != 0x04034b50u)
            return steno_fail(STENO_E_FORMAT, "%s: %s: bad local header offset", path, member);
        const uint64_t data = loff + 30 + le(p + loff + 26, 2) + le(p + loff + 28, 2);
        if (data > len || csize > len - data) return steno_fail(STENO_E_FORMAT, "%s: %s: data outside the file", path, member);
        if (nl < 5 || strcmp(member + nl - 4, ".npy") != 0) continue;
        member[nl - 4] = '\0';
        char name[256];
        if (!map(member, name, sizeof name)) continue;
        wt_dtype dt;
        int rank;
        int64_t dims[4];
        const uint8_t *arr;
        uint64_t alen;
        if ((st = parse_npy(path, member, p + data, csize, &dt, &rank, dims, &arr, &alen)) != STENO_OK) return st;
        if ((st = wtab_add(w, name, dt, rank, dims, arr, (size_t)alen)) != STENO_OK) return st;
        if (w->t[w->n - 1].n_bytes != alen)
            return steno_fail(STENO_E_FORMAT, "%s: %s: %llu bytes for a shape of %zu", path, member, (unsigned long long)alen,
                              w->t[w->n - 1].n_bytes);
    }
    return STENO_OK;
}
