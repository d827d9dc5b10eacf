/* bigram_heap.h — the priority queue of candidate merges shared by the LLM tokenizers' merge
 * loops (bpe_gguf.c: lowest merge rank first; spm.c: highest piece score first), after
 * llama.cpp's llm_tokenizer_bpe/llm_tokenizer_spm. Ties go to the leftmost pair, which is what
 * makes both tokenizers deterministic and equal to the references. */
#ifndef STENO_TEXT_BIGRAM_HEAP_H
#define STENO_TEXT_BIGRAM_HEAP_H

/** A candidate merge of symbols left and right, whose merged length in bytes is size (a stale
 *  entry is recognized by a size that no longer matches). key: larger merges first (BPE uses
 *  −rank, SentencePiece the piece score; both are exact in a double). */
typedef struct text_bigram {
    int left, right, size;
    double key;
} text_bigram;

typedef struct text_bigram_heap {
    text_bigram *a;
    int n, cap;
} text_bigram_heap;

/** Adds b; 0 on success, -1 when out of memory (the heap is unchanged). */
int text_bigram_push(text_bigram_heap *h, text_bigram b);
/** Removes and returns the entry with the largest key (leftmost on ties); h->n must be > 0. */
text_bigram text_bigram_pop(text_bigram_heap *h);
void text_bigram_heap_free(text_bigram_heap *h);

/** Length of the UTF-8 sequence that starts with byte c (1 for continuation/invalid bytes). */
static inline int text_utf8_len(unsigned char c) {
    static const int lookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

#endif
