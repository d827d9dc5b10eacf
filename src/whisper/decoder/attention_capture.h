/* attention_capture.h — the cross-attention scores a decoder forward records for word timestamps
 * (output/alignment.h uses them; openai-whisper timing.py find_alignment's QK hooks): both
 * forward passes (decoder.c, fast_decoder.c) call whisper_xattn_capture_layer per layer. */
#ifndef STENO_WHISPER_ATTENTION_CAPTURE_H
#define STENO_WHISPER_ATTENTION_CAPTURE_H

/** Which cross-attention scores a decoder forward records (set on a decoder, NULL otherwise).
 *  scores [n_heads][T][n_frames] float32: for head i = heads[i] = (layer, head), row t, column a:
 *  q_t·k_a/√d_head before the softmax, for the T tokens of the forward and the first n_frames
 *  audio positions. Owned by whoever sets it. */
typedef struct whisper_xattn_capture {
    const int (*heads)[2];
    int n_heads;
    int T_max;    /* rows scores can hold */
    int n_frames; /* columns recorded */
    float *scores;
} whisper_xattn_capture;

/** Records layer's captured heads from the cross-attention queries and keys of one forward of T
 *  tokens: q [T][ldq] (head h at columns h·d_head…), multiplied by alpha (1/√d_head, or 1 when q
 *  is pre-scaled). Keys either row-major k [A][ldk] (k_transposed 0) or transposed k [D][ldk]
 *  (k_transposed 1, the fast path's layout). Does nothing when c is NULL or T > c->T_max. */
void whisper_xattn_capture_layer(const whisper_xattn_capture *c, int layer, int T, const float *q, int ldq,
                                 float alpha, const float *k, int ldk, int k_transposed, int d_head);

#endif
