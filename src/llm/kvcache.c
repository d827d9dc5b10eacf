/* kvcache.c — plain and rotating KV caches; see kvcache.h. */
#include "llm/kvcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/quant.h"
#include "kernels/quant/act.h"

static size_t elem_size(int dtype) { return dtype == STENO_T_F16 ? 2 : 4; }

/* Writes one float row into dst as dtype. */
static void put_row(int dtype, uint8_t *dst, const float *src, int n) {
    if (dtype == STENO_T_F16) {
        if (((uintptr_t)dst & 1) == 0) {
            steno_f32_to_f16_row(src, (uint16_t *)(void *)dst, n); /* F16C when available, same bits */
            return;
        }
        for (int i = 0; i < n; i++) {
            uint16_t h = steno_f32_to_f16(src[i]);
            memcpy(dst + 2 * (size_t)i, &h, 2);
        }
    } else {
        memcpy(dst, src, (size_t)n * 4);
    }
}

/* Row sizes of the current storage. */
static size_t row_bytes(const steno_kv_cache *c, int is_v) {
    const steno_kv_params *p = &c->p;
    if (c->quantized) return (size_t)p->n_kv_heads * steno_kvq_head_bytes(is_v ? &c->vf : &c->kf);
    return (size_t)p->n_kv_heads * (size_t)(is_v ? p->head_dim_v : p->head_dim_k) * elem_size(p->dtype);
}

/* Stores one row of n_kv_heads × head_dim floats in the cache's current format. Quantized rows are
 * encoded from the dtype-rounded values, so that converting a stored dtype row later gives the same
 * bytes as quantizing on arrival (exact rollback across the conversion point). */
static void store_row(const steno_kv_cache *c, int is_v, uint8_t *dst, const float *src, int pos) {
    const steno_kv_params *p = &c->p;
    const int hd = is_v ? p->head_dim_v : p->head_dim_k;
    if (!c->quantized) {
        put_row(p->dtype, dst, src, p->n_kv_heads * hd);
        return;
    }
    const steno_kvq_fmt *f = is_v ? &c->vf : &c->kf;
    const size_t hb = steno_kvq_head_bytes(f);
    float tmp[STENO_KVQ_MAX_DIM];
    for (int h = 0; h < p->n_kv_heads; h++) {
        const float *x = src + (size_t)h * hd;
        for (int i = 0; i < hd; i++) tmp[i] = p->dtype == STENO_T_F16 ? steno_round_f16(x[i]) : x[i];
        if (!is_v && c->center_set && pos >= p->sink) {
            float cen[STENO_KVQ_MAX_DIM];
            const float *ch = c->k_center + (size_t)h * hd;
            for (int i = 0; i < hd; i++) cen[i] = tmp[i] - ch[i];
            steno_kvq_encode(f, cen, dst + (size_t)h * hb);
        } else {
            steno_kvq_encode(f, tmp, dst + (size_t)h * hb);
        }
        if (pos < p->sink) { /* the attention sink's float copy, in the domain attention decodes to */
            float *sk = (is_v ? c->sink_v : c->sink_k) + ((size_t)pos * p->n_kv_heads + h) * hd;
            memcpy(sk, tmp, (size_t)hd * sizeof(float));
            if (f->kind == STENO_KVQ_TQV || f->rotate) steno_tq_rotate(sk, hd);
        }
    }
}

/* Key centering (see kvcache.h): the first time quantized keys at positions >= sink are about
 * to be stored, their mean (dtype-rounded, summed in double) becomes the cache's key center, kept
 * until reset. Used as: center_acc_new, center_acc_add per row, center_acc_finish. */
typedef struct {
    double *sum;
    int n, want;
} center_acc;

static int center_wanted(const steno_kv_cache *c) { return c->k_center && !c->center_set && c->quantized; }

static void center_acc_new(const steno_kv_cache *c, center_acc *a) {
    a->n = 0;
    a->want = center_wanted(c);
    a->sum = a->want ? calloc((size_t)c->p.n_kv_heads * c->p.head_dim_k, sizeof(double)) : NULL;
}
static void center_acc_add(const steno_kv_cache *c, center_acc *a, const float *row, int pos) {
    if (!a->sum || pos < c->p.sink) return;
    const int nel = c->p.n_kv_heads * c->p.head_dim_k;
    for (int e = 0; e < nel; e++) a->sum[e] += c->p.dtype == STENO_T_F16 ? steno_round_f16(row[e]) : row[e];
    a->n++;
}
/* Out of memory for the sum fixes a zero center (rows stay uncentered, attention adds q·0: correct,
 * only less accurate); a center may never be set after rows were stored without it. */
static void center_acc_finish(steno_kv_cache *c, center_acc *a) {
    if (a->want && !a->sum) {
        memset(c->k_center, 0, (size_t)c->p.n_kv_heads * c->p.head_dim_k * sizeof(float));
        c->center_set = 1;
    } else if (a->sum && a->n > 0) {
        const int nel = c->p.n_kv_heads * c->p.head_dim_k;
        for (int e = 0; e < nel; e++) c->k_center[e] = (float)(a->sum[e] / a->n);
        c->center_set = 1;
    }
    free(a->sum);
    a->sum = NULL;
}

/* The key center from the T new rows at positions pos0.. (a no-op once set or unquantized). */
static void center_from_update(steno_kv_cache *c, const float *k, int T, int pos0) {
    if (!center_wanted(c)) return;
    center_acc a;
    center_acc_new(c, &a);
    const int nel = c->p.n_kv_heads * c->p.head_dim_k;
    for (int t = 0; t < T; t++) center_acc_add(c, &a, k + (size_t)t * nel, pos0 + t);
    center_acc_finish(c, &a);
}

/* Reads a dtype row back as floats. */
static void load_row(int dtype, const uint8_t *src, float *dst, int n) {
    if (dtype == STENO_T_F16) {
        for (int i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * (size_t)i, 2);
            dst[i] = steno_fp16_to_f32(h);
        }
    } else {
        memcpy(dst, src, (size_t)n * 4);
    }
}

/* The conversion (mlx-lm to_quantized): re-encodes the rows of the slots with valid[s] != 0 (all
 * slots < n_valid when valid is NULL) from dtype to the quantized formats, replacing *k and *v. */
static steno_status convert_rows(steno_kv_cache *c, uint8_t **k, uint8_t **v, int n_slots, const int32_t *pos,
                                 int n_valid) {
    const steno_kv_params *p = &c->p;
    const size_t okrb = row_bytes(c, 0), ovrb = row_bytes(c, 1);
    c->quantized = 1;
    const size_t krb = row_bytes(c, 0), vrb = row_bytes(c, 1);
    uint8_t *nk = calloc(n_slots > 0 ? (size_t)n_slots : 1, krb), *nv = calloc(n_slots > 0 ? (size_t)n_slots : 1, vrb);
    const int nk_el = p->n_kv_heads * p->head_dim_k, nv_el = p->n_kv_heads * p->head_dim_v;
    float *tmp = malloc((size_t)(nk_el > nv_el ? nk_el : nv_el) * sizeof(float));
    if (!nk || !nv || !tmp) {
        free(nk);
        free(nv);
        free(tmp);
        c->quantized = 0;
        return steno_fail(STENO_E_NOMEM, "KV cache: out of memory quantizing %d slots", n_slots);
    }
    if (center_wanted(c)) {
        center_acc a;
        center_acc_new(c, &a);
        for (int s = 0; s < n_slots; s++) {
            if (pos ? pos[s] < 0 : s >= n_valid) continue;
            load_row(p->dtype, *k + (size_t)s * okrb, tmp, nk_el);
            center_acc_add(c, &a, tmp, pos ? pos[s] : s);
        }
        center_acc_finish(c, &a);
    }
    for (int s = 0; s < n_slots; s++) {
        if (pos ? pos[s] < 0 : s >= n_valid) continue;
        load_row(p->dtype, *k + (size_t)s * okrb, tmp, nk_el);
        const int ps = pos ? pos[s] : s;
        store_row(c, 0, nk + (size_t)s * krb, tmp, ps);
        load_row(p->dtype, *v + (size_t)s * ovrb, tmp, nv_el);
        store_row(c, 1, nv + (size_t)s * vrb, tmp, ps);
    }
    free(tmp);
    free(*k);
    free(*v);
    *k = nk;
    *v = nv;
    return STENO_OK;
}

static int wants_conversion(const steno_kv_cache *c, int offset) {
    return c->p.quant != STENO_KV_Q_NONE && !c->quantized && offset >= c->p.quant_start;
}

/* Bytes of the attention sinks' float rows (0 when there are none). */
static size_t sink_bytes(const steno_kv_cache *c) {
    if (!c->sink_k) return 0;
    return (size_t)c->p.sink * c->p.n_kv_heads * (size_t)(c->p.head_dim_k + c->p.head_dim_v) * sizeof(float);
}

static void fill_view_quant(const steno_kv_cache *c, steno_kv_view *view) {
    view->kq = c->quantized ? &c->kf : NULL;
    view->vq = c->quantized ? &c->vf : NULL;
    view->n_sink = c->quantized && c->sink_k ? c->p.sink : 0;
    view->sink_k = view->n_sink ? c->sink_k : NULL;
    view->sink_v = view->n_sink ? c->sink_v : NULL;
    view->k_center = c->quantized && c->center_set ? c->k_center : NULL;
}

void steno_kv_make_mask(const steno_kv_view *view, int q0, int T, float *mask) {
    for (int t = 0; t < T; t++)
        for (int s = 0; s < view->n_slots; s++)
            mask[(size_t)t * view->n_slots + s] = steno_kv_visible(view, view->pos[s], q0 + t) ? 0.0f : -INFINITY;
}

/* ------------------------------------------------------------------------------------------- */
/* plain                                                                                          */

typedef struct {
    steno_kv_cache base;
    int offset, cap;
    size_t krb, vrb;
    uint8_t *k, *v;
    int32_t *pos;
} plain_cache;

static int plain_offset(const steno_kv_cache *c) { return ((const plain_cache *)c)->offset; }

static steno_status plain_update(steno_kv_cache *c, const float *k, const float *v, int T, steno_kv_view *view) {
    plain_cache *pc = (plain_cache *)c;
    const steno_kv_params *p = &c->p;
    if (T < 0) return steno_fail(STENO_E_INVALID_ARG, "KV cache: negative token count");
    if (p->max_tokens > 0 && pc->offset + T > p->max_tokens)
        return steno_fail(STENO_E_INVALID_ARG, "KV cache full: %d + %d tokens exceed the context of %d", pc->offset, T,
                          p->max_tokens);
    if (wants_conversion(c, pc->offset)) {
        steno_status st = convert_rows(c, &pc->k, &pc->v, pc->cap, NULL, pc->offset);
        if (st != STENO_OK) return st;
        pc->krb = row_bytes(c, 0);
        pc->vrb = row_bytes(c, 1);
    }
    if (pc->offset + T > pc->cap) {
        int step = p->step > 0 ? p->step : 256;
        int ncap = (pc->offset + T + step - 1) / step * step;
        if (p->max_tokens > 0 && ncap > p->max_tokens) ncap = p->max_tokens;
        uint8_t *nk = realloc(pc->k, (size_t)ncap * pc->krb);
        if (!nk) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory growing to %d tokens", ncap);
        pc->k = nk;
        uint8_t *nv = realloc(pc->v, (size_t)ncap * pc->vrb);
        if (!nv) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory growing to %d tokens", ncap);
        pc->v = nv;
        int32_t *np = realloc(pc->pos, (size_t)ncap * sizeof(int32_t));
        if (!np) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory growing to %d tokens", ncap);
        pc->pos = np;
        for (int s = pc->cap; s < ncap; s++) pc->pos[s] = s;
        pc->cap = ncap;
    }
    center_from_update(c, k, T, pc->offset);
    int nk = p->n_kv_heads * p->head_dim_k, nv = p->n_kv_heads * p->head_dim_v;
    for (int t = 0; t < T; t++) {
        int s = pc->offset + t;
        store_row(c, 0, pc->k + (size_t)s * pc->krb, k + (size_t)t * nk, s);
        store_row(c, 1, pc->v + (size_t)s * pc->vrb, v + (size_t)t * nv, s);
    }
    pc->offset += T;
    if (view) {
        view->dtype = p->dtype;
        view->n_slots = pc->offset;
        view->pos = pc->pos;
        view->order = NULL; /* identity */
        view->n_order = pc->offset;
        view->k = pc->k;
        view->v = pc->v;
        view->k_row_bytes = pc->krb;
        view->v_row_bytes = pc->vrb;
        view->window = 0;
        view->keep = 0;
        fill_view_quant(c, view);
    }
    return STENO_OK;
}

static int plain_can_trim(const steno_kv_cache *c, int n) { return n >= 0 && n <= ((const plain_cache *)c)->offset; }

static steno_status plain_trim(steno_kv_cache *c, int n) {
    plain_cache *pc = (plain_cache *)c;
    if (!plain_can_trim(c, n))
        return steno_fail(STENO_E_INVALID_ARG, "KV cache: cannot roll back %d tokens, only %d are cached", n, pc->offset);
    pc->offset -= n;
    return STENO_OK;
}

static size_t plain_bpt(const steno_kv_cache *c) { return ((const plain_cache *)c)->krb + ((const plain_cache *)c)->vrb; }
static size_t plain_nbytes(const steno_kv_cache *c) {
    const plain_cache *pc = (const plain_cache *)c;
    return (size_t)pc->cap * (pc->krb + pc->vrb) + sink_bytes(c);
}
static void plain_state(const steno_kv_cache *c, steno_kv_state *st) {
    const plain_cache *pc = (const plain_cache *)c;
    st->offset = pc->offset;
    st->n_slots = pc->offset;
    st->pos = pc->pos;
    st->k = pc->k;
    st->v = pc->v;
    st->k_row_bytes = pc->krb;
    st->v_row_bytes = pc->vrb;
}
static void plain_reset(steno_kv_cache *c) {
    plain_cache *pc = (plain_cache *)c;
    pc->offset = 0;
    c->center_set = 0;
    if (c->quantized) { /* back to dtype rows: the storage is re-allocated at the next update */
        c->quantized = 0;
        free(pc->k);
        free(pc->v);
        free(pc->pos);
        pc->k = pc->v = NULL;
        pc->pos = NULL;
        pc->cap = 0;
        pc->krb = row_bytes(c, 0);
        pc->vrb = row_bytes(c, 1);
    }
}
static void plain_destroy(steno_kv_cache *c) {
    plain_cache *pc = (plain_cache *)c;
    free(pc->k);
    free(pc->v);
    free(pc->pos);
    free(pc);
}


/* Storage for n rows of the current format (see steno_kv_ops.load). */
static steno_status alloc_rows(steno_kv_cache *c, int n, uint8_t **k, uint8_t **v, int32_t **pos, int32_t **order) {
    const size_t m = n > 0 ? (size_t)n : 1;
    *k = malloc(m * row_bytes(c, 0));
    *v = malloc(m * row_bytes(c, 1));
    *pos = malloc(m * sizeof(int32_t));
    if (order) *order = malloc(m * sizeof(int32_t));
    if (*k && *v && *pos && (!order || *order)) return STENO_OK;
    free(*k);
    free(*v);
    free(*pos);
    if (order) free(*order);
    return steno_fail(STENO_E_NOMEM, "KV cache: out of memory restoring %d slots", n);
}

static steno_status plain_load(steno_kv_cache *c, int offset, int quantized, int n_rows, int ring, const int32_t *pos,
                               const uint8_t *k, const uint8_t *v) {
    plain_cache *pc = (plain_cache *)c;
    (void)ring;
    (void)pos; /* slot = position: the caller checked pos[i] == i and n_rows == offset */
    plain_reset(c);
    const int step = c->p.step > 0 ? c->p.step : 256;
    int cap = (offset + step - 1) / step * step;
    if (c->p.max_tokens > 0 && cap > c->p.max_tokens) cap = c->p.max_tokens;
    c->quantized = quantized;
    uint8_t *nk, *nv;
    int32_t *np;
    steno_status st = alloc_rows(c, cap, &nk, &nv, &np, NULL);
    if (st != STENO_OK) {
        c->quantized = 0;
        return st;
    }
    free(pc->k);
    free(pc->v);
    free(pc->pos);
    pc->k = nk;
    pc->v = nv;
    pc->pos = np;
    pc->cap = cap;
    pc->krb = row_bytes(c, 0);
    pc->vrb = row_bytes(c, 1);
    for (int s = 0; s < cap; s++) np[s] = s;
    if (n_rows) {
        memcpy(nk, k, (size_t)n_rows * pc->krb);
        memcpy(nv, v, (size_t)n_rows * pc->vrb);
    }
    pc->offset = offset;
    return STENO_OK;
}

static const steno_kv_ops PLAIN_OPS = {"plain", plain_offset, plain_update, plain_can_trim, plain_trim, plain_bpt,
                                       plain_nbytes, plain_state, plain_reset, plain_destroy, plain_load};

/* ------------------------------------------------------------------------------------------- */
/* rotating                                                                                       */

typedef struct {
    steno_kv_cache base;
    int offset;
    int ring;     /* R: slots for positions >= keep */
    int cap;      /* keep + ring */
    size_t krb, vrb;
    uint8_t *k, *v;
    int32_t *pos;   /* [cap] */
    int32_t *order; /* [cap] */
    int n_order;
} rot_cache;

static inline int rot_slot(const rot_cache *rc, int p) {
    int keep = rc->base.p.keep;
    return p < keep ? p : keep + (p - keep) % rc->ring;
}

static void rot_rebuild_order(rot_cache *rc) {
    int keep = rc->base.p.keep, n = 0;
    for (int p = 0; p < keep && p < rc->offset; p++)
        if (rc->pos[p] == p) rc->order[n++] = p;
    int lo = rc->offset - rc->ring;
    if (lo < keep) lo = keep;
    for (int p = lo; p < rc->offset; p++) {
        int s = rot_slot(rc, p);
        if (rc->pos[s] == p) rc->order[n++] = s;
    }
    rc->n_order = n;
}

/* Replaces the ring's storage by nk/nv/np/no (ownership taken), laid out for `ring` slots. */
static void rot_adopt(rot_cache *rc, uint8_t *nk, uint8_t *nv, int32_t *np, int32_t *no, int ring) {
    free(rc->k);
    free(rc->v);
    free(rc->pos);
    free(rc->order);
    rc->k = nk;
    rc->v = nv;
    rc->pos = np;
    rc->order = no;
    rc->ring = ring;
    rc->cap = rc->base.p.keep + ring;
}

/* Grows the ring to at least `ring` slots, moving every retained token to its new slot. */
static steno_status rot_grow(rot_cache *rc, int ring) {
    const steno_kv_params *p = &rc->base.p;
    int cap = p->keep + ring;
    uint8_t *nk = malloc((size_t)cap * rc->krb), *nv = malloc((size_t)cap * rc->vrb);
    int32_t *np = malloc((size_t)cap * sizeof(int32_t)), *no = malloc((size_t)cap * sizeof(int32_t));
    if (!nk || !nv || !np || !no) {
        free(nk);
        free(nv);
        free(np);
        free(no);
        return steno_fail(STENO_E_NOMEM, "rotating KV cache: out of memory growing to %d slots", cap);
    }
    for (int s = 0; s < cap; s++) np[s] = -1;
    for (int s = 0; s < rc->cap; s++) {
        int pp = rc->pos[s];
        if (pp < 0) continue;
        int ns = pp < p->keep ? pp : p->keep + (pp - p->keep) % ring;
        memcpy(nk + (size_t)ns * rc->krb, rc->k + (size_t)s * rc->krb, rc->krb);
        memcpy(nv + (size_t)ns * rc->vrb, rc->v + (size_t)s * rc->vrb, rc->vrb);
        np[ns] = pp;
    }
    rot_adopt(rc, nk, nv, np, no, ring);
    rot_rebuild_order(rc);
    return STENO_OK;
}

static int rot_offset(const steno_kv_cache *c) { return ((const rot_cache *)c)->offset; }

static steno_status rot_update(steno_kv_cache *c, const float *k, const float *v, int T, steno_kv_view *view) {
    rot_cache *rc = (rot_cache *)c;
    const steno_kv_params *p = &c->p;
    if (T < 0) return steno_fail(STENO_E_INVALID_ARG, "KV cache: negative token count");
    /* Every query of this update must find its whole window still in the ring, and `reserve`
     * tokens of history must survive for rollback. */
    if (wants_conversion(c, rc->offset)) {
        steno_status st = convert_rows(c, &rc->k, &rc->v, rc->cap, rc->pos, 0);
        if (st != STENO_OK) return st;
        rc->krb = row_bytes(c, 0);
        rc->vrb = row_bytes(c, 1);
    }
    int need = (p->max_size - p->keep) + p->reserve + (T > 0 ? T - 1 : 0);
    if (need > rc->ring) {
        steno_status st = rot_grow(rc, need);
        if (st != STENO_OK) return st;
    }
    center_from_update(c, k, T, rc->offset);
    int nk = p->n_kv_heads * p->head_dim_k, nv = p->n_kv_heads * p->head_dim_v;
    for (int t = 0; t < T; t++) {
        int pp = rc->offset + t;
        int s = rot_slot(rc, pp);
        store_row(c, 0, rc->k + (size_t)s * rc->krb, k + (size_t)t * nk, pp);
        store_row(c, 1, rc->v + (size_t)s * rc->vrb, v + (size_t)t * nv, pp);
        rc->pos[s] = pp;
    }
    rc->offset += T;
    rot_rebuild_order(rc);
    if (view) {
        view->dtype = p->dtype;
        view->n_slots = rc->cap;
        view->pos = rc->pos;
        view->order = rc->order;
        view->n_order = rc->n_order;
        view->k = rc->k;
        view->v = rc->v;
        view->k_row_bytes = rc->krb;
        view->v_row_bytes = rc->vrb;
        view->window = p->max_size;
        view->keep = p->keep;
        fill_view_quant(c, view);
    }
    return STENO_OK;
}

/* First position the next query (at q) needs that is not in the kept prefix, or q if none. */
static int rot_needed_from(const rot_cache *rc, int q) {
    const steno_kv_params *p = &rc->base.p;
    int lo = q - (p->max_size - p->keep) + 1;
    return lo < p->keep ? p->keep : lo;
}

static int rot_can_trim(const steno_kv_cache *c, int n) {
    const rot_cache *rc = (const rot_cache *)c;
    if (n < 0 || n > rc->offset) return 0;
    int q = rc->offset - n;
    for (int pp = 0; pp < c->p.keep && pp < q; pp++)
        if (rc->pos[pp] != pp) return 0;
    for (int pp = rot_needed_from(rc, q); pp < q; pp++)
        if (rc->pos[rot_slot(rc, pp)] != pp) return 0;
    return 1;
}

static steno_status rot_trim(steno_kv_cache *c, int n) {
    rot_cache *rc = (rot_cache *)c;
    if (n < 0 || n > rc->offset)
        return steno_fail(STENO_E_INVALID_ARG, "KV cache: cannot roll back %d tokens, only %d were processed", n,
                          rc->offset);
    if (!rot_can_trim(c, n)) {
        int q = rc->offset - n, lost = 0;
        for (int pp = rot_needed_from(rc, q); pp < q; pp++)
            if (rc->pos[rot_slot(rc, pp)] != pp) lost++;
        return steno_fail(STENO_E_INVALID_ARG,
                          "rotating KV cache (window %d, keep %d, reserve %d): cannot roll back %d tokens: "
                          "%d positions of the window at %d were already overwritten; the ring retains only "
                          "%d tokens of rollback history (raise the reserve)",
                          c->p.max_size, c->p.keep, c->p.reserve, n, lost, q, rc->ring - (c->p.max_size - c->p.keep) + 1);
    }
    int q = rc->offset - n;
    for (int pp = q; pp < rc->offset; pp++) {
        int s = rot_slot(rc, pp);
        if (rc->pos[s] == pp) rc->pos[s] = -1;
    }
    rc->offset = q;
    rot_rebuild_order(rc);
    return STENO_OK;
}

static size_t rot_bpt(const steno_kv_cache *c) { return ((const rot_cache *)c)->krb + ((const rot_cache *)c)->vrb; }
static size_t rot_nbytes(const steno_kv_cache *c) {
    const rot_cache *rc = (const rot_cache *)c;
    return (size_t)rc->cap * (rc->krb + rc->vrb) + sink_bytes(c);
}
static void rot_state(const steno_kv_cache *c, steno_kv_state *st) {
    const rot_cache *rc = (const rot_cache *)c;
    st->offset = rc->offset;
    st->n_slots = rc->cap;
    st->pos = rc->pos;
    st->k = rc->k;
    st->v = rc->v;
    st->k_row_bytes = rc->krb;
    st->v_row_bytes = rc->vrb;
}
static void rot_reset(steno_kv_cache *c) {
    rot_cache *rc = (rot_cache *)c;
    rc->offset = 0;
    c->center_set = 0;
    for (int s = 0; s < rc->cap; s++) rc->pos[s] = -1;
    rc->n_order = 0;
    if (c->quantized) {
        /* back to dtype rows: every slot is empty, so the rows can be re-allocated at their size */
        size_t krb = (size_t)c->p.n_kv_heads * (size_t)c->p.head_dim_k * elem_size(c->p.dtype);
        size_t vrb = (size_t)c->p.n_kv_heads * (size_t)c->p.head_dim_v * elem_size(c->p.dtype);
        uint8_t *nk = malloc((size_t)rc->cap * krb), *nv = malloc((size_t)rc->cap * vrb);
        if (!nk || !nv) { /* keep the quantized rows (still a valid, empty cache) */
            free(nk);
            free(nv);
            return;
        }
        free(rc->k);
        free(rc->v);
        rc->k = nk;
        rc->v = nv;
        c->quantized = 0;
        rc->krb = krb;
        rc->vrb = vrb;
    }
}
static void rot_destroy(steno_kv_cache *c) {
    rot_cache *rc = (rot_cache *)c;
    free(rc->k);
    free(rc->v);
    free(rc->pos);
    free(rc->order);
    free(rc);
}


static steno_status rot_load(steno_kv_cache *c, int offset, int quantized, int n_rows, int ring, const int32_t *pos,
                             const uint8_t *k, const uint8_t *v) {
    rot_cache *rc = (rot_cache *)c;
    rot_reset(c);
    const int keep = c->p.keep, R = ring; /* the source's ring: the same history, the same rollback reach */
    c->quantized = quantized;
    uint8_t *nk, *nv;
    int32_t *np, *no;
    steno_status st = alloc_rows(c, keep + R, &nk, &nv, &np, &no);
    if (st != STENO_OK) {
        c->quantized = 0;
        return st;
    }
    const size_t krb = row_bytes(c, 0), vrb = row_bytes(c, 1);
    for (int s = 0; s < keep + R; s++) np[s] = -1;
    for (int i = 0; i < n_rows; i++) {
        const int pp = pos[i];
        const int s = pp < keep ? pp : keep + (pp - keep) % R;
        if (pp < 0 || pp >= offset || np[s] >= 0) {
            free(nk);
            free(nv);
            free(np);
            free(no);
            c->quantized = 0;
            return steno_fail(STENO_E_FORMAT, "rotating KV cache snapshot: position %d is out of range or held twice", pp);
        }
        memcpy(nk + (size_t)s * krb, k + (size_t)i * krb, krb);
        memcpy(nv + (size_t)s * vrb, v + (size_t)i * vrb, vrb);
        np[s] = pp;
    }
    rot_adopt(rc, nk, nv, np, no, R);
    rc->krb = krb;
    rc->vrb = vrb;
    rc->offset = offset;
    rot_rebuild_order(rc);
    return STENO_OK;
}

static const steno_kv_ops ROT_OPS = {"rotating", rot_offset, rot_update, rot_can_trim, rot_trim, rot_bpt,
                                     rot_nbytes, rot_state, rot_reset, rot_destroy, rot_load};

/* ------------------------------------------------------------------------------------------- */

/* The per-head formats of a quantized cache; STENO_E_INVALID_ARG naming the reason. */
static steno_status quant_formats(const steno_kv_params *p, steno_kvq_fmt *kf, steno_kvq_fmt *vf) {
    memset(kf, 0, sizeof *kf);
    memset(vf, 0, sizeof *vf);
    if (p->quant == STENO_KV_Q_NONE) return STENO_OK;
    if (p->quant_start < 0) return steno_fail(STENO_E_INVALID_ARG, "KV cache: negative quantization start %d", p->quant_start);
    if (p->sink < 0 || p->sink > 4096)
        return steno_fail(STENO_E_INVALID_ARG, "KV cache: attention sink of %d tokens (need 0..4096)", p->sink);
    if (p->quant == STENO_KV_Q_AFFINE) {
        *kf = (steno_kvq_fmt){STENO_KVQ_AFFINE, p->k_bits, p->group, p->head_dim_k, p->rotate};
        *vf = (steno_kvq_fmt){STENO_KVQ_AFFINE, p->v_bits, p->group, p->head_dim_v, p->rotate};
    } else if (p->quant == STENO_KV_Q_TURBO) {
        *kf = (steno_kvq_fmt){STENO_KVQ_AFFINE, p->k_bits, p->head_dim_k, p->head_dim_k, p->rotate};
        *vf = (steno_kvq_fmt){STENO_KVQ_TQV, p->v_bits, 0, p->head_dim_v, 0};
    } else {
        return steno_fail(STENO_E_INVALID_ARG, "KV cache: unknown quantization %d", p->quant);
    }
    const char *why;
    if (steno_kvq_check(kf, &why) || steno_kvq_check(vf, &why))
    {
        char grp[32] = "";
        if (p->quant == STENO_KV_Q_AFFINE) snprintf(grp, sizeof grp, ", group %d", p->group);
        return steno_fail(STENO_E_INVALID_ARG, "quantized KV cache (%s, head_dim %d/%d, %d/%d bits%s): %s",
                          p->quant == STENO_KV_Q_AFFINE ? "affine" : "TurboQuant", p->head_dim_k, p->head_dim_v,
                          p->k_bits, p->v_bits, grp, why);
    }
    return STENO_OK;
}

size_t steno_kv_quant_bytes_per_token(const steno_kv_params *p) {
    steno_kvq_fmt kf, vf;
    if (p->n_kv_heads <= 0 || p->head_dim_k <= 0 || p->head_dim_v <= 0) return 0;
    if (p->quant == STENO_KV_Q_NONE)
        return (size_t)p->n_kv_heads * (size_t)(p->head_dim_k + p->head_dim_v) * elem_size(p->dtype);
    if (quant_formats(p, &kf, &vf) != STENO_OK) return 0;
    return (size_t)p->n_kv_heads * (steno_kvq_head_bytes(&kf) + steno_kvq_head_bytes(&vf));
}

int steno_kv_is_quantized(const steno_kv_cache *c) { return c->quantized; }

/* The float rows of the attention sinks (see kvcache.h); a no-op without quantization or sink. */
static steno_status alloc_sinks(steno_kv_cache *c) {
    const steno_kv_params *p = &c->p;
    if (p->quant == STENO_KV_Q_NONE || p->sink <= 0) return STENO_OK;
    c->sink_k = calloc((size_t)p->sink * p->n_kv_heads * p->head_dim_k, sizeof(float));
    c->sink_v = calloc((size_t)p->sink * p->n_kv_heads * p->head_dim_v, sizeof(float));
    if (!c->sink_k || !c->sink_v) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory for the attention sinks");
    return STENO_OK;
}

/* The key center's storage (see kvcache.h); a no-op without quantization or centering. */
static steno_status alloc_center(steno_kv_cache *c) {
    const steno_kv_params *p = &c->p;
    if (p->quant == STENO_KV_Q_NONE || !p->center) return STENO_OK;
    c->k_center = calloc((size_t)p->n_kv_heads * p->head_dim_k, sizeof(float));
    if (!c->k_center) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory for the key center");
    return STENO_OK;
}

steno_status steno_kv_new(const steno_kv_params *p, steno_kv_cache **out) {
    *out = NULL;
    if (p->n_kv_heads <= 0 || p->head_dim_k <= 0 || p->head_dim_v <= 0 ||
        (p->dtype != STENO_T_F32 && p->dtype != STENO_T_F16))
        return steno_fail(STENO_E_INVALID_ARG, "KV cache: invalid geometry or element type");
    steno_kvq_fmt kf, vf;
    steno_status qs = quant_formats(p, &kf, &vf);
    if (qs != STENO_OK) return qs;
    size_t es = elem_size(p->dtype);
    size_t krb = (size_t)p->n_kv_heads * (size_t)p->head_dim_k * es;
    size_t vrb = (size_t)p->n_kv_heads * (size_t)p->head_dim_v * es;
    if (p->kind == STENO_KV_PLAIN) {
        plain_cache *pc = calloc(1, sizeof *pc);
        if (!pc) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory");
        pc->base.ops = &PLAIN_OPS;
        pc->base.p = *p;
        pc->base.kf = kf;
        pc->base.vf = vf;
        pc->krb = krb;
        pc->vrb = vrb;
        steno_status st = alloc_sinks(&pc->base);
        if (st == STENO_OK) st = alloc_center(&pc->base);
        if (st != STENO_OK) {
            steno_kv_free(&pc->base);
            return st;
        }
        *out = &pc->base;
        return STENO_OK;
    }
    if (p->kind != STENO_KV_ROTATING) return steno_fail(STENO_E_INVALID_ARG, "KV cache: unknown kind %d", p->kind);
    if (p->max_size < 1 || p->keep < 0 || p->keep >= p->max_size || p->reserve < 0)
        return steno_fail(STENO_E_INVALID_ARG,
                          "rotating KV cache: need max_size >= 1 and 0 <= keep < max_size (got max_size %d, keep %d)",
                          p->max_size, p->keep);
    rot_cache *rc = calloc(1, sizeof *rc);
    if (!rc) return steno_fail(STENO_E_NOMEM, "KV cache: out of memory");
    rc->base.ops = &ROT_OPS;
    rc->base.p = *p;
    rc->base.kf = kf;
    rc->base.vf = vf;
    rc->krb = krb;
    rc->vrb = vrb;
    steno_status st = rot_grow(rc, p->max_size - p->keep + p->reserve);
    if (st == STENO_OK) st = alloc_sinks(&rc->base);
    if (st == STENO_OK) st = alloc_center(&rc->base);
    if (st != STENO_OK) {
        steno_kv_free(&rc->base);
        return st;
    }
    *out = &rc->base;
    return STENO_OK;
}

void steno_kv_free(steno_kv_cache *c) {
    if (!c) return;
    free(c->sink_k);
    free(c->sink_v);
    free(c->k_center);
    c->ops->destroy(c);
}
