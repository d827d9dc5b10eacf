/* draft_weights.h — the quant drafter's weights (whisper/decoder/spec/fast_verify.h): a whisper_fast's float16 or
 * float32 decoder matrices and tied embedding re-quantized to ggml blocks (kernels/quant/wq.h) and kept
 * only as their x8 copy (kernels/gemm/matmul_x8.h; wq_mat.x, q_row 0) where the type has one (q8_0, q4_0),
 * so every drafter linear runs the x8 integer kernels (linear_quant.h). Built once per (model's fast weights,
 * block type) on first use and shared read-only by every drafter over them: a CLI run over many
 * files, or a server's requests, quantize once (base: ~0.3 s and 48 MB of q8_0 copies each time
 * before). Private to src/whisper. */
#ifndef STENO_WHISPER_DRAFT_WEIGHTS_H
#define STENO_WHISPER_DRAFT_WEIGHTS_H

#include "kernels/quant/wq.h"
#include "kernels/gemm/matmul_x8.h"
#include "whisper/fast_internal.h"

typedef struct whisper_draft_weights {
    const void *key; /* the weights' identity: the owner's fast_layer array (shares copy it) */
    int type;
    unsigned char *qdata; /* every matrix's x8 copy, or its wq blocks for a type without one */
    wq_mat *mats;         /* [6·L + 1]: per layer qkv, out, cross_q, cross_out, fc1, fc2; then the embedding */
    fast_layer *qdec;     /* [L] pointers into mats */
    size_t bytes;         /* of qdata */
    struct whisper_draft_weights *next;
} whisper_draft_weights;

/** The weights of type (q8_0, q4_0, or any wq type) for f's decoder, built on the first call for
 *  f's weights (f: float16 or float32) and kept until whisper_draft_weights_release of their owner.
 *  Thread-safe (a process-wide mutex; a first build holds it). Errors: STENO_E_INVALID_ARG (a type
 *  that does not divide the width), STENO_E_NOMEM. */
steno_status whisper_draft_weights_get(const whisper_fast *f, int type, const whisper_draft_weights **out);

/** Frees every entry built for f's weights; whisper_fast_free of the owner calls it, after every
 *  drafter over them is gone. */
void whisper_draft_weights_release(const whisper_fast *f);

#endif
