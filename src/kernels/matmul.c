/* matmul.c — see matmul.h. */
#include "kernels/matmul.h"

#include <stdlib.h>

#include "kernels/quant.h"

void steno_work_free(steno_work *w) {
    free(w->buf);
    w->buf = NULL;
    w->cap = 0;
}

void *steno_work_get(steno_work *w, size_t n) {
    if (n > w->cap) {
        void *p = realloc(w->buf, n);
        if (!p) return NULL;
        w->buf = p;
        w->cap = n;
    }
    return w->buf;
}

typedef struct {
    const steno_mat *W;
    const uint8_t *xq;   /* T converted activation rows */
    size_t xq_row;       /* bytes per converted row */
    int T;
    float *Y;
    int64_t ldy;
    steno_vec_dot_fn dot;
    steno_vec_dot4_fn dot4;
} mm_job;

#define ROW_TILE 16

static void mm_worker(void *arg, int ith, int nth) {
    const mm_job *j = arg;
    long lo, hi;
    steno_split((long)j->W->n_out, ith, nth, &lo, &hi);
    const int n = (int)j->W->n_in;
    const uint8_t *w = j->W->data;
    /* Tiles of rows × all activation rows: a tile of weights stays in cache while T varies. */
    for (long r0 = lo; r0 < hi; r0 += ROW_TILE) {
        long r1 = r0 + ROW_TILE < hi ? r0 + ROW_TILE : hi;
        int t = 0;
        if (j->dot4)
            for (; t + 4 <= j->T; t += 4) {
                const uint8_t *x = j->xq + (size_t)t * j->xq_row;
                float *y = j->Y + (int64_t)t * j->ldy;
                float o[4];
                for (long r = r0; r < r1; r++) {
                    j->dot4(n, w + (size_t)r * j->W->row_bytes, x, j->xq_row, o);
                    y[r] = o[0];
                    y[j->ldy + r] = o[1];
                    y[2 * j->ldy + r] = o[2];
                    y[3 * j->ldy + r] = o[3];
                }
            }
        for (; t < j->T; t++) {
            const uint8_t *x = j->xq + (size_t)t * j->xq_row;
            float *y = j->Y + (int64_t)t * j->ldy;
            for (long r = r0; r < r1; r++) y[r] = j->dot(n, w + (size_t)r * j->W->row_bytes, x);
        }
    }
}

int steno_matmul(steno_pool *pool, steno_work *work, const steno_mat *W, const float *X, int T,
                 float *Y, int64_t ldy) {
    const steno_type_traits *tw = steno_type_get(W->type);
    if (!tw || !tw->vec_dot) return -1;
    const steno_type_traits *tx = steno_type_get(tw->vec_dot_type);
    if (!tx || !tx->from_float) return -1;
    size_t xq_row = steno_row_size(tw->vec_dot_type, W->n_in);
    if (xq_row == 0) return -1;
    uint8_t *xq = steno_work_get(work, xq_row * (size_t)T);
    if (!xq) return -1;
    for (int t = 0; t < T; t++) tx->from_float(X + (int64_t)t * W->n_in, xq + (size_t)t * xq_row, W->n_in);
    mm_job j = {W, xq, xq_row, T, Y, ldy, tw->vec_dot, tw->vec_dot4};
    /* Tiny products are not worth waking the workers. */
    if ((int64_t)T * W->n_out * W->n_in < 32768) mm_worker(&j, 0, 1);
    else steno_pool_run(pool, mm_worker, &j, steno_n_tasks(pool));
    return 0;
}

void steno_mat_row_f32(const steno_mat *W, int64_t r, float *dst) {
    const steno_type_traits *t = steno_type_get(W->type);
    t->to_float((const uint8_t *)W->data + (size_t)r * W->row_bytes, dst, W->n_in);
}
