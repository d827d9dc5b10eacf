/* silero_internal.h — the Silero VAD's weights and shapes, shared by silero.c (the network frame
 * by frame, and the LSTM) and silero_batch.c (the encoder over many frames at once); not public. */
#ifndef STENO_VAD_SILERO_INTERNAL_H
#define STENO_VAD_SILERO_INTERNAL_H

#include "formats/safetensors.h"
#include "vad/silero.h"

#define N_FFT_BINS 129 /* 256-point real STFT */
#define STFT_KERNEL 256
#define STFT_HOP 128
#define PAD 128
#define N_STFT_FRAMES 4 /* (576 + 2*128 - 256) / 128 + 1 = 5, less the first */
#define N_GATES SILERO_N_GATES

typedef struct conv3 {
    const float *w; /* [out][in][3] */
    const float *b; /* [out] */
    int in, out, stride;
} conv3;

/* A weight matrix [rows][n] as silero_batch.c reads it: blocks of 16 rows, each [n][16] (rows past
 * the last padded with zeros). */
typedef struct silero_panel {
    float *p;
    int rows, n;
} silero_panel;

struct steno_vad {
    steno_safetensors *st;
    const float *basis; /* [258][256]: rows 0..128 the real parts, 129..257 the imaginary */
    conv3 conv[4];
    const float *w_ih, *w_hh, *b_ih, *b_hh; /* [4H][H], [4H][H], [4H], [4H]; gates i, f, g, o */
    const float *dec_w, *dec_b;             /* [128], [1] */
    /* silero_batch.c: the basis, the convolutions and W_ih as panels; batched = 0 where the CPU
     * lacks AVX-512 (the frame-by-frame encoder then runs) */
    silero_panel pb, pc[4], pih;
    int batched;
};

/** silero_batch.c: builds vad's panels (batched = 1) where the CPU has AVX-512; returns 0, or -1
 *  when out of memory (nothing built, the frame-by-frame encoder serves). */
int silero_batch_init(steno_vad *vad);
void silero_batch_free(steno_vad *vad);
/** xg[f][N_GATES] = W_ih e_f + b_ih for frames f of x [n][SILERO_INPUT], e_f the encoder's output:
 *  bit-identical to silero.c's encode_frame (the same products, sums and finish, per output).
 *  Returns 0, or -1 when its scratch (~290 KiB, heap) cannot be had (nothing written). */
int silero_encode_frames(const steno_vad *vad, const float *x, size_t n, float *xg);

#endif
