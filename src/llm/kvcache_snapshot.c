/* kvcache_snapshot.c — a KV cache's whole state as bytes, and back (see kvcache.h).
 *
 * Layout (host byte order; a snapshot lives in RAM or in a file the prompt cache checksums):
 *   header        snap_hdr below
 *   key center    n_center float32 (the cache's k_center; 0 floats without centering)
 *   sinks         n_sink float32: sink_k then sink_v (0 without attention sinks)
 *   positions     n_rows int32, the absolute position of each held row
 *   keys          n_rows rows of krb bytes, in the storage format `quantized` names
 *   values        n_rows rows of vrb bytes
 * The rows are copied as stored — never decoded and re-encoded — so a restored cache holds the
 * same bytes as its source (llama.cpp's llama_state_seq_get_data likewise copies the cells). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/quant.h"
#include "llm/kvcache.h"

#define SNAP_MAGIC 0x3153564bu /* "KVS1" */

typedef struct {
    uint32_t magic, kind;
    int32_t offset, quantized, center_set, n_rows, ring, pad;
    uint64_t krb, vrb, n_center, n_sink;
} snap_hdr;

/* Bytes of one key (is_v = 0) or value row in the dtype or the quantized format. */
static size_t rows_bytes(const steno_kv_cache *c, int is_v, int quantized) {
    const steno_kv_params *p = &c->p;
    if (quantized) return (size_t)p->n_kv_heads * steno_kvq_head_bytes(is_v ? &c->vf : &c->kf);
    return (size_t)p->n_kv_heads * (size_t)(is_v ? p->head_dim_v : p->head_dim_k) * (p->dtype == STENO_T_F16 ? 2 : 4);
}

static size_t center_floats(const steno_kv_cache *c) {
    return c->k_center ? (size_t)c->p.n_kv_heads * c->p.head_dim_k : 0;
}
static size_t sink_floats(const steno_kv_cache *c) {
    return c->sink_k ? (size_t)c->p.sink * c->p.n_kv_heads * (size_t)(c->p.head_dim_k + c->p.head_dim_v) : 0;
}

size_t steno_kv_snapshot(const steno_kv_cache *c, uint8_t *dst) {
    steno_kv_state st;
    c->ops->state(c, &st);
    int n_rows = 0;
    for (int s = 0; s < st.n_slots; s++) n_rows += st.pos[s] >= 0;
    const size_t nc = center_floats(c), ns = sink_floats(c);
    const size_t size = sizeof(snap_hdr) + (nc + ns) * sizeof(float) +
                        (size_t)n_rows * (sizeof(int32_t) + st.k_row_bytes + st.v_row_bytes);
    if (!dst) return size;
    snap_hdr h;
    memset(&h, 0, sizeof h);
    h.magic = SNAP_MAGIC;
    h.kind = (uint32_t)c->p.kind;
    h.offset = st.offset;
    h.quantized = c->quantized;
    h.center_set = c->center_set;
    h.n_rows = n_rows;
    h.ring = c->p.kind == STENO_KV_ROTATING ? st.n_slots - c->p.keep : 0;
    h.krb = st.k_row_bytes;
    h.vrb = st.v_row_bytes;
    h.n_center = nc;
    h.n_sink = ns;
    uint8_t *o = dst;
    memcpy(o, &h, sizeof h);
    o += sizeof h;
    if (nc) memcpy(o, c->k_center, nc * sizeof(float));
    o += nc * sizeof(float);
    if (ns) {
        const size_t nsk = (size_t)c->p.sink * c->p.n_kv_heads * c->p.head_dim_k;
        memcpy(o, c->sink_k, nsk * sizeof(float));
        memcpy(o + nsk * sizeof(float), c->sink_v, (ns - nsk) * sizeof(float));
    }
    o += ns * sizeof(float);
    uint8_t *op = o, *ok = o + (size_t)n_rows * sizeof(int32_t), *ov = ok + (size_t)n_rows * st.k_row_bytes;
    for (int s = 0, i = 0; s < st.n_slots; s++) {
        if (st.pos[s] < 0) continue;
        memcpy(op + (size_t)i * sizeof(int32_t), &st.pos[s], sizeof(int32_t));
        memcpy(ok + (size_t)i * st.k_row_bytes, st.k + (size_t)s * st.k_row_bytes, st.k_row_bytes);
        memcpy(ov + (size_t)i * st.v_row_bytes, st.v + (size_t)s * st.v_row_bytes, st.v_row_bytes);
        i++;
    }
    return size;
}

/* Checks h against c's params; NULL when it fits, else the reason. */
static const char *check_header(const steno_kv_cache *c, const snap_hdr *h, size_t n) {
    const steno_kv_params *p = &c->p;
    if (h->magic != SNAP_MAGIC) return "not a KV cache snapshot";
    if (h->kind != (uint32_t)p->kind) return "the cache kind differs";
    if (h->quantized != 0 && h->quantized != 1) return "bad quantization flag";
    if (h->quantized && p->quant == STENO_KV_Q_NONE) return "quantized rows for an unquantized cache";
    if (h->center_set != 0 && h->center_set != 1) return "bad key-center flag";
    if (h->center_set && !c->k_center) return "a key center for a cache without centering";
    if (h->krb != rows_bytes(c, 0, h->quantized) || h->vrb != rows_bytes(c, 1, h->quantized)) return "row sizes differ";
    if (h->n_center != center_floats(c) || h->n_sink != sink_floats(c)) return "key center or sink sizes differ";
    if (h->offset < 0 || h->n_rows < 0 || h->n_rows > h->offset) return "bad offset or row count";
    if (p->kind == STENO_KV_PLAIN) {
        if (h->n_rows != h->offset || h->ring != 0) return "a plain cache holds every position";
        if (p->max_tokens > 0 && h->offset > p->max_tokens) return "more tokens than the context holds";
    } else {
        /* the ring a cache of these params can reach: window + reserve + one n_batch chunk */
        const int base = p->max_size - p->keep + p->reserve;
        if (h->ring < base || h->ring > base + 4096 || h->n_rows > p->keep + h->ring) return "bad ring size";
    }
    const size_t want = sizeof *h + (size_t)(h->n_center + h->n_sink) * sizeof(float) +
                        (size_t)h->n_rows * (sizeof(int32_t) + h->krb + h->vrb);
    if (want != n) return "size differs from its header";
    return NULL;
}

steno_status steno_kv_restore(steno_kv_cache *c, const uint8_t *src, size_t n) {
    snap_hdr h;
    if (n < sizeof h) {
        c->ops->reset(c);
        return steno_fail(STENO_E_FORMAT, "KV cache snapshot: %zu bytes, shorter than its header", n);
    }
    memcpy(&h, src, sizeof h);
    const char *why = check_header(c, &h, n);
    if (why) {
        c->ops->reset(c);
        return steno_fail(STENO_E_FORMAT, "KV cache snapshot: %s", why);
    }
    const uint8_t *o = src + sizeof h;
    const uint8_t *fl = o;
    o += (size_t)(h.n_center + h.n_sink) * sizeof(float);
    int32_t *pos = malloc((h.n_rows > 0 ? (size_t)h.n_rows : 1) * sizeof(int32_t));
    if (!pos) {
        c->ops->reset(c);
        return steno_fail(STENO_E_NOMEM, "KV cache snapshot: out of memory");
    }
    memcpy(pos, o, (size_t)h.n_rows * sizeof(int32_t));
    const uint8_t *k = o + (size_t)h.n_rows * sizeof(int32_t), *v = k + (size_t)h.n_rows * h.krb;
    steno_status st = STENO_OK;
    if (c->p.kind == STENO_KV_PLAIN)
        for (int i = 0; i < h.n_rows && st == STENO_OK; i++)
            if (pos[i] != i) st = steno_fail(STENO_E_FORMAT, "KV cache snapshot: row %d holds position %d", i, pos[i]);
    if (st == STENO_OK) st = c->ops->load(c, h.offset, h.quantized, h.n_rows, h.ring, pos, k, v);
    free(pos);
    if (st != STENO_OK) {
        c->ops->reset(c);
        return st;
    }
    if (h.n_center) memcpy(c->k_center, fl, (size_t)h.n_center * sizeof(float));
    c->center_set = h.center_set;
    if (h.n_sink) {
        const size_t nsk = (size_t)c->p.sink * c->p.n_kv_heads * c->p.head_dim_k;
        memcpy(c->sink_k, fl + h.n_center * sizeof(float), nsk * sizeof(float));
        memcpy(c->sink_v, fl + (h.n_center + nsk) * sizeof(float), (h.n_sink - nsk) * sizeof(float));
    }
    return STENO_OK;
}

steno_status steno_kv_release(steno_kv_cache *c) {
    const int ring = c->p.kind == STENO_KV_ROTATING ? c->p.max_size - c->p.keep + c->p.reserve : 0;
    const steno_status st = c->ops->load(c, 0, 0, 0, ring, NULL, NULL, NULL);
    if (st != STENO_OK) c->ops->reset(c);
    c->center_set = 0;
    return st;
}

size_t steno_kv_bytes_at(const steno_kv_params *p, int n, int max_update) {
    steno_kv_params d = *p;
    d.quant = STENO_KV_Q_NONE;
    /* converted for sure once an update began at or past quant_start: the one that reached n did
     * if it began at n - max_update or later */
    const int mu = max_update > 1 ? max_update : 1;
    const size_t bpt = p->quant != STENO_KV_Q_NONE && n - mu >= p->quant_start ? steno_kv_quant_bytes_per_token(p)
                                                                              : steno_kv_quant_bytes_per_token(&d);
    size_t slots;
    if (p->kind == STENO_KV_ROTATING) {
        slots = (size_t)p->max_size + (size_t)p->reserve + (size_t)(max_update > 1 ? max_update - 1 : 0);
    } else {
        const size_t step = p->step > 0 ? (size_t)p->step : 256;
        slots = ((size_t)n + step - 1) / step * step;
        if (p->max_tokens > 0 && slots > (size_t)p->max_tokens) slots = (size_t)p->max_tokens;
    }
    const size_t sinks = p->quant != STENO_KV_Q_NONE && p->sink > 0
                             ? (size_t)p->sink * p->n_kv_heads * (size_t)(p->head_dim_k + p->head_dim_v) * sizeof(float)
                             : 0;
    return slots * bpt + sinks;
}

int steno_kv_min_offset(const steno_kv_cache *c) {
    const int off = steno_kv_offset(c);
    /* Rolling back to q > 0 needs q's window still held; the ring keeps a contiguous run of the
     * latest positions, so that holds for every q from some q_min up to off (trimming everything,
     * q = 0, always works but keeps nothing). */
    int lo = 0, hi = off; /* q = hi works; q = lo does not, or is 0 */
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        if (steno_kv_can_trim(c, off - mid)) hi = mid;
        else lo = mid;
    }
    return hi <= 1 ? 0 : hi;
}
