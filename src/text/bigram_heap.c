/* bigram_heap.c — binary max-heap of candidate merges (see bigram_heap.h). */
#include "text/bigram_heap.h"

#include <stdlib.h>

static int before(const text_bigram *x, const text_bigram *y) {
    return x->key > y->key || (x->key == y->key && x->left < y->left);
}

static void swap(text_bigram *a, int i, int j) {
    const text_bigram t = a[i];
    a[i] = a[j];
    a[j] = t;
}

int text_bigram_push(text_bigram_heap *h, text_bigram b) {
    if (h->n == h->cap) {
        const int nc = h->cap ? h->cap * 2 : 64;
        text_bigram *p = realloc(h->a, (size_t)nc * sizeof *p);
        if (!p) return -1;
        h->a = p;
        h->cap = nc;
    }
    int i = h->n++;
    h->a[i] = b;
    while (i > 0 && before(&h->a[i], &h->a[(i - 1) / 2])) {
        swap(h->a, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 0;
}

text_bigram text_bigram_pop(text_bigram_heap *h) {
    const text_bigram top = h->a[0];
    h->a[0] = h->a[--h->n];
    for (int i = 0;;) {
        const int l = 2 * i + 1, r = l + 1;
        int m = i;
        if (l < h->n && before(&h->a[l], &h->a[m])) m = l;
        if (r < h->n && before(&h->a[r], &h->a[m])) m = r;
        if (m == i) break;
        swap(h->a, i, m);
        i = m;
    }
    return top;
}

void text_bigram_heap_free(text_bigram_heap *h) {
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
