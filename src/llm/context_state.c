/* context_state.c — a context's KV caches and position as bytes, and back (see steno_llm.h).
 * Layout: ctx_hdr, then per layer a uint64 length and that layer's steno_kv_snapshot. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "kernels/quant/quant.h"
#include "llm/model.h"

#define STATE_MAGIC 0x534c5453u /* "STLS" */

typedef struct {
    uint32_t magic, version;
    int32_t n_layer, n_past;
} ctx_hdr;

size_t steno_llm_state_save(const steno_llm_ctx *c, void *buf, size_t cap) {
    const int L = c->m->hp.n_layer;
    size_t size = sizeof(ctx_hdr);
    for (int l = 0; l < L; l++) size += sizeof(uint64_t) + steno_kv_snapshot(c->kv[l], NULL);
    if (!buf) return size;
    if (cap < size) return 0;
    uint8_t *o = buf;
    const ctx_hdr h = {STATE_MAGIC, 1, L, c->n_past};
    memcpy(o, &h, sizeof h);
    o += sizeof h;
    for (int l = 0; l < L; l++) {
        const uint64_t n = steno_kv_snapshot(c->kv[l], o + sizeof n);
        memcpy(o, &n, sizeof n);
        o += sizeof n + n;
    }
    return size;
}

steno_status steno_llm_state_load(steno_llm_ctx *c, const void *buf, size_t n) {
    const int L = c->m->hp.n_layer;
    const uint8_t *p = buf, *end = p + n;
    ctx_hdr h;
    steno_status st = STENO_OK;
    if (n < sizeof h) st = steno_fail(STENO_E_FORMAT, "LLM state: %zu bytes, shorter than its header", n);
    else {
        memcpy(&h, p, sizeof h);
        p += sizeof h;
        if (h.magic != STATE_MAGIC || h.version != 1) st = steno_fail(STENO_E_FORMAT, "LLM state: not a steno state");
        else if (h.n_layer != L)
            st = steno_fail(STENO_E_FORMAT, "LLM state: %d layers, the model has %d", h.n_layer, L);
    }
    for (int l = 0; l < L && st == STENO_OK; l++) {
        uint64_t ln;
        if ((size_t)(end - p) < sizeof ln) {
            st = steno_fail(STENO_E_FORMAT, "LLM state: truncated at layer %d", l);
            break;
        }
        memcpy(&ln, p, sizeof ln);
        p += sizeof ln;
        if (ln > (uint64_t)(end - p)) {
            st = steno_fail(STENO_E_FORMAT, "LLM state: truncated at layer %d", l);
            break;
        }
        st = steno_kv_restore(c->kv[l], p, (size_t)ln);
        if (st != STENO_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", steno_errmsg());
            st = steno_fail(st, "LLM state, layer %d: %s", l, why);
            break;
        }
        if (steno_kv_offset(c->kv[l]) != h.n_past)
            st = steno_fail(STENO_E_FORMAT, "LLM state: layer %d holds %d tokens, the state %d", l,
                            steno_kv_offset(c->kv[l]), h.n_past);
        p += ln;
    }
    if (st == STENO_OK && p != end) st = steno_fail(STENO_E_FORMAT, "LLM state: %zu trailing bytes", (size_t)(end - p));
    if (st != STENO_OK) {
        steno_llm_reset(c);
        return st;
    }
    c->n_past = h.n_past;
    return STENO_OK;
}

int steno_llm_state_config(const steno_llm_ctx *c, char *buf, size_t cap) {
    const llm_hparams *hp = &c->m->hp;
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "steno-kv-1 layers=%d", hp->n_layer);
    /* runs of layers with equal params, e.g. "0-4:rotating(512,0,32) 5:plain ..." */
    for (int l = 0; l < hp->n_layer && n < (int)sizeof tmp;) {
        const steno_kv_params *p = &c->kv[l]->p;
        int e = l + 1;
        while (e < hp->n_layer && memcmp(&c->kv[e]->p, p, sizeof *p) == 0) e++;
        char win[64] = "";
        if (p->kind == STENO_KV_ROTATING) snprintf(win, sizeof win, "(%d,%d,%d)", p->max_size, p->keep, p->reserve);
        char q[96] = "";
        if (p->quant != STENO_KV_Q_NONE)
            snprintf(q, sizeof q, " %s k%d v%d g%d start%d sink%d rot%d center%d",
                     p->quant == STENO_KV_Q_AFFINE ? "affine" : "turbo", p->k_bits, p->v_bits, p->group,
                     p->quant_start, p->sink, p->rotate, p->center);
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, " %d-%d:%s%s %s h%d d%d/%d%s", l, e - 1,
                      p->kind == STENO_KV_ROTATING ? "rotating" : "plain", win, p->dtype == STENO_T_F16 ? "f16" : "f32",
                      p->n_kv_heads, p->head_dim_k, p->head_dim_v, q);
        l = e;
    }
    return snprintf(buf, cap, "%s", tmp);
}

size_t steno_llm_kv_bytes_at(const steno_llm_ctx *c, int n_tokens, int max_update) {
    size_t b = 0;
    for (int l = 0; l < c->m->hp.n_layer; l++) b += steno_kv_bytes_at(&c->kv[l]->p, n_tokens, max_update);
    return b;
}

steno_status steno_llm_release(steno_llm_ctx *c) {
    steno_status st = STENO_OK;
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        const steno_status s = steno_kv_release(c->kv[l]);
        if (s != STENO_OK) st = s;
    }
    c->n_past = 0;
    return st;
}

int steno_llm_min_rollback(const steno_llm_ctx *c) {
    int m = 0;
    for (int l = 0; l < c->m->hp.n_layer; l++) {
        const int k = steno_kv_min_offset(c->kv[l]);
        if (k > m) m = k;
    }
    return m;
}
