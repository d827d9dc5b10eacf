/* stage_bench.c — the fast path's two halves on one 30-s window, and the machine's read bandwidth
 * in the same process: the numbers the fast-path issue asks for next to the end-to-end bench.
 *
 *   encoder   whisper_fast_encode on the first window of FILE: ms per window (median of R) and
 *             GFLOP/s, counting 2·M·N·K for every GEMM (both convolutions as im2col GEMMs, Q/K/V,
 *             output, MLP) and 4·T²·d per head for attention (Q·Kᵀ and P·V);
 *   cross K/V whisper_fast_decoder_set_audio: the window's K/V for every decoder layer;
 *   step      100 greedy single-token steps after the SOT token (text tokens only), exact logits
 *             and with the logit screen (fast.h whisper_fast_decoder_set_screen): ms/token
 *             (median of R runs of 100) and the bytes a step must read — every decoder weight
 *             matrix once (float16), the cross-attention K/V (float16), the logits' weights
 *             (float16 for exact logits; int8 codes and scales plus the rows recomputed exactly
 *             when screened, counted over the last run: every run decodes the same tokens) —
 *             divided by the time: the bandwidth the step reaches;
 *   bandwidth 2 threads (or THREADS) summing a 512 MiB buffer, best of 5: the read bandwidth the
 *             step is bound by.
 *
 *   cc -O2 -march=native -Iinclude -Isrc bench/stage_bench.c build/libsteno.a \
 *      $(pkg-config --libs openblas libavformat libavcodec libswresample libavutil libcjson libpcre2-8 zlib) \
 *      -lm -lpthread -o /tmp/stage_bench && /tmp/stage_bench ~/.cache/steno/models/tiny.en ../shared/audio/jfk.wav 5 2
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "steno.h"
#include "audio/mel.h"
#include "core/blas_core.h"
#include "core/error.h"
#include "whisper/fast.h"
#include "whisper/model/model.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

typedef struct bw_job {
    const double *p;
    size_t n;
    double sum;
} bw_job;

typedef double v4d __attribute__((vector_size(32)));

/* sums with 4 independent vector accumulators, so the adds never limit the reads */
static void *bw_read(void *arg) {
    bw_job *j = arg;
    v4d a = {0}, b = {0}, c = {0}, e = {0};
    for (size_t i = 0; i + 16 <= j->n; i += 16) {
        v4d x, y, z, w;
        memcpy(&x, j->p + i, 32), memcpy(&y, j->p + i + 4, 32), memcpy(&z, j->p + i + 8, 32), memcpy(&w, j->p + i + 12, 32);
        a += x, b += y, c += z, e += w;
    }
    a += b + c + e;
    j->sum = a[0] + a[1] + a[2] + a[3];
    return NULL;
}

/* GB/s of threads reading disjoint slices of a 512 MiB buffer, best of 5 passes */
static double read_bandwidth(int threads) {
    const size_t n = (512u << 20) / sizeof(double);
    double *buf = malloc(n * sizeof(double)), best = 0, sink = 0;
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = (double)(i & 1023);
    for (int r = 0; r < 5; r++) {
        pthread_t th[64];
        bw_job jobs[64];
        const double t0 = now();
        for (int t = 0; t < threads; t++) {
            jobs[t] = (bw_job){buf + n / threads * t, n / threads, 0};
            pthread_create(&th[t], NULL, bw_read, &jobs[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(th[t], NULL), sink += jobs[t].sum;
        const double gbs = n * sizeof(double) / (now() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    free(buf);
    return sink == 42 ? 0 : best; /* keeps the sums alive */
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* ms per step over 100 greedy steps after SOT; *exact_rows: mean rows recomputed (screen) */
static double steps(whisper_fast_decoder *d, const whisper_model *m, const float *allow, double *exact_rows) {
    float *logits = malloc(sizeof(float) * m->n_vocab);
    int tok = m->special.sot;
    whisper_fast_decoder_reset(d);
    whisper_fast_decoder_set_screen(d, NULL);
    whisper_fast_decoder_forward(d, &tok, 1, logits);
    whisper_fast_decoder_set_screen(d, allow);
    long rows = 0;
    const double t0 = now();
    for (int i = 0; i < 100; i++) {
        tok = argmax(logits, m->special.eot);
        whisper_fast_decoder_forward(d, &tok, 1, logits);
        rows += whisper_fast_decoder_screened_rows(d);
    }
    const double ms = (now() - t0) * 1e3 / 100;
    *exact_rows = rows / 100.0;
    free(logits);
    return ms;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: stage_bench MODEL_DIR AUDIO [REPS] [THREADS]\n");
        return 2;
    }
    const int reps = argc > 3 && atoi(argv[3]) > 0 ? (atoi(argv[3]) < 32 ? atoi(argv[3]) : 31) : 5;
    const int threads = argc > 4 && atoi(argv[4]) > 0 ? (atoi(argv[4]) < 64 ? atoi(argv[4]) : 64) : 2;
    whisper_model *m;
    float *samples = NULL;
    size_t ns = 0;
    steno_mel mel = {0};
    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *d;
    if (whisper_model_load(argv[1], &m) != STENO_OK || steno_audio_load(argv[2], &samples, &ns) != STENO_OK ||
        steno_log_mel(samples, ns, STENO_CHUNK_SAMPLES, m->n_mels, &mel) != STENO_OK ||
        steno_pool_create(threads, &pool) != STENO_OK || whisper_fast_create(m, VEC_F16, 0, pool, &f) != STENO_OK ||
        whisper_fast_decoder_create(f, &d) != STENO_OK) {
        fprintf(stderr, "stage_bench: %s\n", steno_errmsg());
        return 1;
    }
    openblas_set_num_threads(1); /* as transcribe does for the fast path: the pool runs the GEMM tasks */
    const int A = m->n_audio_ctx, Da = m->n_audio_state, C = m->n_mels, Ha = m->n_audio_head;
    float *window = calloc((size_t)C * 2 * A, sizeof(float)), *xa = malloc(sizeof(float) * A * Da);
    for (int c = 0; c < C; c++)
        memcpy(window + (size_t)c * 2 * A, mel.data + (size_t)c * mel.n_frames,
               sizeof(float) * (mel.n_frames < 2 * A ? mel.n_frames : 2 * A));

    /* encoder FLOPs: conv1 (2A × 3C → Da), conv2 (A × 3Da → Da), per layer QKV 3Da², out Da²,
     * MLP 8Da² at A rows, attention 4·A²·(Da/Ha) per head */
    const double gemm = 2.0 * (2.0 * A * 3 * C * Da + (double)A * 3 * Da * Da) +
                        m->n_audio_layer * 2.0 * A * (12.0 * Da * Da);
    const double attn = m->n_audio_layer * (double)Ha * 4.0 * A * A * (Da / Ha);
    double t[32];
    whisper_fast_encode(f, window, xa); /* warm-up */
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        whisper_fast_encode(f, window, xa);
        t[r] = now() - t0;
    }
    const double enc = median(t, reps);
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        whisper_fast_decoder_set_audio(d, xa);
        t[r] = now() - t0;
    }
    const double kv = median(t, reps);

    const int D = m->n_text_state, L = m->n_text_layer, V = m->n_vocab;
    float *allow = calloc((size_t)V, sizeof(float));
    double ex[32], sc[32], rows = 0;
    for (int r = 0; r < reps; r++) {
        ex[r] = steps(d, m, NULL, &rows);
        sc[r] = steps(d, m, allow, &rows);
    }
    const double ms_exact = median(ex, reps), ms_screen = median(sc, reps);
    const double layers = 2.0 * L * 14.0 * D * D, cross = 2.0 * L * 2.0 * A * D;
    const double b_exact = layers + cross + 2.0 * V * D;
    const double b_screen = layers + cross + (double)(m->special.eot) * (D + 3 * 4) + rows * 2.0 * D;
    const double bw = read_bandwidth(threads);

    printf("stage_bench: %s, %d threads, medians of %d\n", argv[1], threads, reps);
    printf("  encoder      %7.1f ms per 30-s window, %.1f GFLOP (%.1f GEMM + %.1f attention), %.1f GFLOP/s\n",
           enc * 1e3, (gemm + attn) * 1e-9, gemm * 1e-9, attn * 1e-9, (gemm + attn) / enc * 1e-9);
    printf("  cross K/V    %7.1f ms per window (%d layers)\n", kv * 1e3, L);
    printf("  step, exact  %7.2f ms/token, %.1f MB read per token, %.1f GB/s = %.0f %% of the read bandwidth\n",
           ms_exact, b_exact * 1e-6, b_exact / ms_exact * 1e-6, 100.0 * b_exact / ms_exact * 1e-6 / bw);
    printf("  step, screen %7.2f ms/token, %.1f MB read per token (%.0f rows exact), %.1f GB/s = %.0f %% of the "
           "read bandwidth\n",
           ms_screen, b_screen * 1e-6, rows, b_screen / ms_screen * 1e-6, 100.0 * b_screen / ms_screen * 1e-6 / bw);
    printf("  bandwidth    %7.1f GB/s reading, %d threads (best of 5, 512 MiB)\n", bw, threads);
    free(allow), free(window), free(xa), free(samples);
    steno_mel_free(&mel);
    whisper_fast_decoder_free(d);
    whisper_fast_free(f);
    steno_pool_free(pool);
    whisper_model_free(m);
    return 0;
}
