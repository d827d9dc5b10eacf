/* alignment.h — word-level timestamps from the cross-attention of the alignment heads
 * (openai-whisper whisper/timing.py: find_alignment, merge_punctuations, add_word_timestamps;
 * faster-whisper 1.2.1 transcribe.py: the same functions on CTranslate2's WhisperModel.align,
 * which steno follows where the two differ, see docs/WHISPER.md).
 *
 * Per 30-s window: one extra decoder forward over [SOT sequence, <|notimestamps|>, text tokens,
 * <|endoftext|>] reusing the window's cross-attention K/V, capturing the pre-softmax
 * cross-attention scores q·k/√d_head of the alignment heads (config.json alignment_heads;
 * without them every head of the last half of the decoder layers) over the first num_frames/2
 * audio positions; softmax over those positions; each (head, frame) column normalized over the
 * tokens (mean/population std, no epsilon); median filter of width 7 along the frames (reflect
 * padding); mean over heads; DTW on the negated matrix rows of the text tokens and eot; the
 * path's jumps give each token's start frame (20 ms); tokens grouped into words. */
#ifndef STENO_WHISPER_ALIGNMENT_H
#define STENO_WHISPER_ALIGNMENT_H

#include "steno.h"
#include "whisper/decoder/attention_capture.h"

struct whisper_decode_ctx;

/** A segment of the current window, as transcribe.c cuts it at timestamp pairs. */
typedef struct whisper_wt_segment {
    const int *tokens; /* text and timestamp tokens of the segment (borrowed) */
    int n_tokens;
    double start, end; /* in: from the timestamp tokens; out: adjusted to the words */
    steno_word *words; /* out: malloc'd array (word strings malloc'd), NULL when none */
    int n_words;
} whisper_wt_segment;

/** faster-whisper's add_word_timestamps for the segments of one window whose cross-attention K/V
 *  are loaded in dc's decoder (right after whisper_decode_with_fallback). seek: the window's first
 *  mel frame; num_frames: its content frames (segment_size); prepend/append: the punctuation sets
 *  (NULL → openai's defaults); last_speech_timestamp: end of the previous speech (seconds).
 *  Leaves dc's decoder reset (its self-attention cache is overwritten).
 *  Errors: STENO_E_NOMEM; forward errors of the decoder. */
steno_status whisper_add_word_timestamps(struct whisper_decode_ctx *dc, whisper_wt_segment *segs, int n_segs,
                                         int seek, int num_frames, const char *prepend, const char *append,
                                         double last_speech_timestamp);

/** Frees the words of segs[0..n) and clears them. */
void whisper_wt_segments_clear(whisper_wt_segment *segs, int n);

/** transcribe.py is_segment_anomaly: the anomaly score (probability < 0.15, duration < 0.133 s or
 *  > 2 s) of the first 8 non-punctuation words is >= 3 or at least their count. 0 for no words. */
int whisper_segment_is_anomaly(const whisper_wt_segment *s);

/** openai's default punctuation sets (transcribe.py). */
#define WHISPER_PREPEND_PUNCTUATIONS "\"'\xe2\x80\x9c\xc2\xbf([{-"
#define WHISPER_APPEND_PUNCTUATIONS "\"'.\xe3\x80\x82,\xef\xbc\x8c!\xef\xbc\x81?\xef\xbc\x9f:\xef\xbc\x9a\xe2\x80\x9d)]}\xe3\x80\x81"

#endif
