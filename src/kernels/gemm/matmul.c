/* matmul.c — see matmul.h. */
#include "kernels/gemm/matmul.h"

#include <stdlib.h>

#include "kernels/quant/quant.h"
#include "kernels/gemv/dot_rows.h"

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
    /* several matrices of one type and width over the same activations (steno_matmul_n): their
     * rows are numbered one after another, matrix m's from off[m] */
    int nm;
    const steno_mat *const *Wm;
    float *const *Ym;
    const int64_t *ldym;
    long off[STENO_MATMUL_MAX_N + 1];
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

static void mm_worker_range(const mm_job *j, long lo, long hi);

static void mm_worker(void *arg, int ith, int nth) {
    const mm_job *j = arg;
    long lo, hi;
    steno_split(j->off[j->nm], ith, nth, &lo, &hi);
    for (int m = 0; m < j->nm && lo < hi; m++) {
        const long a = lo > j->off[m] ? lo : j->off[m], b = hi < j->off[m + 1] ? hi : j->off[m + 1];
        if (a >= b) continue;
        mm_job one = *j;
        one.W = j->Wm[m];
        one.Y = j->Ym[m];
        one.ldy = j->ldym[m];
        mm_worker_range(&one, a - j->off[m], b - j->off[m]);
    }
}

static void mm_worker_range(const mm_job *j, long lo, long hi) {
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

/* Quantizing the activation rows (and packing them for the rows kernels): task i is group i of the
 * rows kernels' grouping, or row i without them. */
typedef struct {
    const steno_type_traits *tx;
    const float *X;
    int64_t n;
    uint8_t *xq;
    size_t xq_row;
    const steno_rows_kernels *rows;
    int act_type;
    uint8_t *yp;
    size_t yp_row;
    int T;
} mm_prep;

static void mm_prep_task(void *arg, int i, int n_tasks) {
    (void)n_tasks;
    const mm_prep *p = arg;
    if (!p->rows) {
        p->tx->from_float(p->X + (int64_t)i * p->n, p->xq + (size_t)i * p->xq_row, p->n);
        return;
    }
    const int m = p->rows->max_rows;
    int t = 0;
    for (int g = 0; g < i; g++) t += group_rows(p->T, m, g);
    const int nr = group_rows(p->T, m, i);
    for (int k = t; k < t + nr; k++) p->tx->from_float(p->X + (int64_t)k * p->n, p->xq + (size_t)k * p->xq_row, p->n);
    steno_rows_pack(p->act_type, p->rows, p->xq + (size_t)t * p->xq_row, p->xq_row, p->n, nr, p->yp + (size_t)t * p->yp_row);
}

int steno_matmul_n(steno_pool *pool, steno_work *work, int nm, const steno_mat *const *Wm, const float *X, int T,
                   float *const *Ym, const int64_t *ldym) {
    if (nm < 1 || nm > STENO_MATMUL_MAX_N) return -1;
    const steno_mat *W = Wm[0];
    for (int m = 1; m < nm; m++)
        if (Wm[m]->type != W->type || Wm[m]->n_in != W->n_in) return -1;
    const steno_type_traits *tw = steno_type_get(W->type);
    if (!tw || !tw->vec_dot) return -1;
    const steno_type_traits *tx = steno_type_get(tw->vec_dot_type);
    if (!tx || !tx->from_float) return -1;
    size_t xq_row = steno_row_size(tw->vec_dot_type, W->n_in);
    if (xq_row == 0) return -1;
    const steno_rows_kernels *rows = steno_rows_get(W->type);
    const size_t yp_row = rows ? steno_rows_pack_row_bytes(tw->vec_dot_type, rows, W->n_in) : 0;
    if (!yp_row) rows = NULL;
    const size_t xq_bytes = (xq_row * (size_t)T + 63) & ~(size_t)63;
    uint8_t *xq = steno_work_get(work, xq_bytes + yp_row * (size_t)T + 64);
    if (!xq) return -1;
    /* the packed copy (64-byte aligned; each group's part is a multiple of 64 bytes) */
    uint8_t *yp = (uint8_t *)(((uintptr_t)xq + xq_bytes + 63) & ~(uintptr_t)63);
    mm_prep p = {tx, X, W->n_in, xq, xq_row, rows, tw->vec_dot_type, yp, yp_row, T};
    /* Converting a prompt's activation rows is worth the workers (9 % of a 430-token prompt on one
     * thread); a decode step's few rows are not. Each row's bytes are the same either way. */
    const int tasks = rows ? n_groups(T, rows->max_rows) : T;
    if (T >= 8 && steno_pool_threads(pool) > 1) steno_pool_run(pool, mm_prep_task, &p, tasks);
    else
        for (int i = 0; i < tasks; i++) mm_prep_task(&p, i, tasks);
    mm_job j = {W, xq, xq_row, T, Ym[0], ldym[0], tw->vec_dot, tw->vec_dot4, rows, yp, yp_row, nm, Wm, Ym, ldym, {0}};
    for (int m = 0; m < nm; m++) j.off[m + 1] = j.off[m] + (long)Wm[m]->n_out;
    /* Tiny products are not worth waking the workers. */
    if ((int64_t)T * j.off[nm] * W->n_in < 32768) mm_worker(&j, 0, 1);
    else steno_pool_run(pool, mm_worker, &j, steno_n_tasks(pool));
    return 0;
}

int steno_matmul(steno_pool *pool, steno_work *work, const steno_mat *W, const float *X, int T,
                 float *Y, int64_t ldy) {
    return steno_matmul_n(pool, work, 1, &W, X, T, &Y, &ldy);
}

void steno_mat_row_f32(const steno_mat *W, int64_t r, float *dst) {
    const steno_type_traits *t = steno_type_get(W->type);
    t->to_float((const uint8_t *)W->data + (size_t)r * W->row_bytes, dst, W->n_in);
}
