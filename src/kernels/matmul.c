/* matmul.c — see matmul.h. */
#include "kernels/matmul.h"

#include <stdlib.h>

#include "kernels/quant.h"
#include "kernels/quant_rows.h"

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
    const steno_rows_kernels *rows; /* NULL: dot4/dot per (row, t) */
    const uint8_t *yp;   /* the groups of activation rows packed for the rows kernels */
    size_t yp_row;       /* packed bytes per row: group starting at row t is at yp + t·yp_row */
} mm_job;

#define ROW_TILE 16

/* Groups of activation rows for the rows kernels of at most m rows each (m = max_rows: with 8,
 * T = 1..8 is one group, 9..16 two of balanced sizes, ...); group g has group_rows() rows. */
static inline int n_groups(int T, int m) { return (T + m - 1) / m; }
static inline int group_rows(int T, int m, int g) { return T / n_groups(T, m) + (g < T % n_groups(T, m)); }

/* The rows kernels: every weight row is read once per group of up to STENO_ROWS_MAX activation
 * rows. Each output is still one kernel column whose arithmetic is the single-row kernel's, so Y
 * does not depend on T, the grouping or the thread count. */
static void mm_worker_rows(const mm_job *j, long lo, long hi) {
    const int n = (int)j->W->n_in;
    const uint8_t *w = j->W->data;
    const int m = j->rows->max_rows, groups = n_groups(j->T, m);
    for (long r0 = lo; r0 < hi; r0 += ROW_TILE) {
        long r1 = r0 + ROW_TILE < hi ? r0 + ROW_TILE : hi;
        for (int g = 0, t = 0; g < groups; g++) {
            const int nr = group_rows(j->T, m, g);
            const steno_dot_rows_fn fn = j->rows->fn[nr];
            const uint8_t *yp = j->yp + (size_t)t * j->yp_row;
            float *y = j->Y + (int64_t)t * j->ldy;
            float o[STENO_ROWS_MAX];
            for (long r = r0; r < r1; r++) {
                fn(n, w + (size_t)r * j->W->row_bytes, yp, o);
                for (int c = 0; c < nr; c++) y[c * j->ldy + r] = o[c];
            }
            t += nr;
        }
    }
}

static void mm_worker(void *arg, int ith, int nth) {
    const mm_job *j = arg;
    long lo, hi;
    steno_split((long)j->W->n_out, ith, nth, &lo, &hi);
    if (j->rows) {
        mm_worker_rows(j, lo, hi);
        return;
    }
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
    const steno_rows_kernels *rows = steno_rows_get(W->type);
    const size_t yp_row = rows ? steno_rows_pack_row_bytes(tw->vec_dot_type, rows->bias, W->n_in) : 0;
    if (!yp_row) rows = NULL;
    const size_t xq_bytes = (xq_row * (size_t)T + 63) & ~(size_t)63;
    uint8_t *xq = steno_work_get(work, xq_bytes + yp_row * (size_t)T + 64);
    if (!xq) return -1;
    for (int t = 0; t < T; t++) tx->from_float(X + (int64_t)t * W->n_in, xq + (size_t)t * xq_row, W->n_in);
    /* the packed copy (64-byte aligned; each group's part is a multiple of 64 bytes) */
    uint8_t *yp = (uint8_t *)(((uintptr_t)xq + xq_bytes + 63) & ~(uintptr_t)63);
    if (rows)
        for (int g = 0, t = 0, m = rows->max_rows; g < n_groups(T, m); t += group_rows(T, m, g), g++)
            steno_rows_pack(tw->vec_dot_type, rows->bias, xq + (size_t)t * xq_row, xq_row, W->n_in, group_rows(T, m, g),
                            yp + (size_t)t * yp_row);
    mm_job j = {W, xq, xq_row, T, Y, ldy, tw->vec_dot, tw->vec_dot4, rows, yp, yp_row};
    /* Tiny products are not worth waking the workers. */
    if ((int64_t)T * W->n_out * W->n_in < 32768) mm_worker(&j, 0, 1);
    else steno_pool_run(pool, mm_worker, &j, steno_n_tasks(pool));
    return 0;
}

void steno_mat_row_f32(const steno_mat *W, int64_t r, float *dst) {
    const steno_type_traits *t = steno_type_get(W->type);
    t->to_float((const uint8_t *)W->data + (size_t)r * W->row_bytes, dst, W->n_in);
}
