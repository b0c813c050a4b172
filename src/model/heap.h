/* heap.h: the allocation sites that `strobe record --heap` writes into a trace ("strobe_heap":
 * one object per process, with its totals and its largest sites, each with its call stack), read
 * back and summed over the processes, for strobe summary, report and flamegraph. */
#ifndef STROBE_MODEL_HEAP_H
#define STROBE_MODEL_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* One call site: its stack (symbolized frames, innermost first) and its sums. */
typedef struct md_heap_site {
    char **frames;
    size_t nframes;
    uint64_t calls, temporary;
    int64_t bytes, peak, leaked;
} md_heap_site;

/* The sites of every process of a trace. Sites with the same stack in several processes are one
 * site: their sums add up, their peaks too (an upper bound: the processes' peaks need not
 * coincide). The totals count every allocation, those of sites the trace leaves out too. */
typedef struct md_heap {
    size_t processes;
    int64_t sample_rate; /* the processes' largest; 0: every allocation was an event */
    uint64_t calls, temporary, missed_calls, unmapped_blocks;
    int64_t bytes, leaked, peak, missed_bytes; /* peak: the processes' peaks added */
    uint64_t site_count;                       /* sites the processes counted */
    md_heap_site *sites;                       /* those the trace holds */
    size_t n;
} md_heap;

/* Reads `json` (the elements of "strobe_heap" arrays joined by commas, as md_model.heap_json
 * holds them) into *h. @return 0, 1 when it holds no process, STROBE_EINVAL (not such an array)
 * or STROBE_ENOMEM. */
int md_heap_read(const char *json, md_heap *h);

/* The sampling rate of the [memory] events of `json` (as for md_heap_read(): the largest of its
 * processes'), 0 when every allocation is an event or there is none. */
int64_t md_heap_rate(const char *json);

/* An allocation's or free's bytes `b` weighed as one sampled at `rate`: b when |b| >= rate or
 * rate <= 0, else b / (1 - exp(-|b| / rate)), the inverse of its chance to be sampled. */
int64_t md_heap_weigh(int64_t b, int64_t rate);

/* Frees what md_heap_read() made; accepts a zeroed one. */
void md_heap_free(md_heap *h);

/* Sorts h's sites by peak live bytes (by_peak) or by bytes allocated, largest first. */
void md_heap_sort(md_heap *h, int by_peak);

#endif
