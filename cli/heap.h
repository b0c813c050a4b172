/* heap.h: the allocation sites that `strobe record --heap` writes into a trace ("strobe_heap":
 * one object per process, with its totals and its largest sites, each with its call stack), read
 * back and summed over the processes, for strobe summary, report and flamegraph. */
#ifndef STROBE_CLI_HEAP_H
#define STROBE_CLI_HEAP_H

#include <stdint.h>
#include <stdio.h>

/* One call site: its stack (symbolized frames, innermost first) and its sums. */
typedef struct cli_heap_site {
    char **frames;
    size_t nframes;
    uint64_t calls, temporary;
    int64_t bytes, peak, leaked;
} cli_heap_site;

/* The sites of every process of a trace. Sites with the same stack in several processes are one
 * site: their sums add up, their peaks too (an upper bound: the processes' peaks need not
 * coincide). The totals count every allocation, those of sites the trace leaves out too. */
typedef struct cli_heap {
    size_t processes;
    int64_t sample_rate; /* the processes' largest; 0: every allocation was an event */
    uint64_t calls, temporary, missed_calls, unmapped_blocks;
    int64_t bytes, leaked, peak, missed_bytes; /* peak: the processes' peaks added */
    uint64_t site_count;                       /* sites the processes counted */
    cli_heap_site *sites;                      /* those the trace holds */
    size_t n;
} cli_heap;

/* Reads `json` (the elements of "strobe_heap" arrays joined by commas, as md_model.heap_json
 * holds them) into *h. @return 0, 1 when it holds no process, STROBE_EINVAL (not such an array)
 * or STROBE_ENOMEM. */
int cli_heap_read(const char *json, cli_heap *h);

/* The sampling rate of the [memory] events of `json` (as for cli_heap_read(): the largest of its
 * processes'), 0 when every allocation is an event or there is none. */
int64_t cli_heap_rate(const char *json);

/* An allocation's or free's bytes `b` weighed as one sampled at `rate`: b when |b| >= rate or
 * rate <= 0, else b / (1 - exp(-|b| / rate)), the inverse of its chance to be sampled. */
int64_t cli_heap_weigh(int64_t b, int64_t rate);

/* Frees what cli_heap_read() made; accepts a zeroed one. */
void cli_heap_free(cli_heap *h);

/* Sorts h's sites by peak live bytes (by_peak) or by bytes allocated, largest first. */
void cli_heap_sort(cli_heap *h, int by_peak);

/* Prints heaptrack's summary of h to `out`: the totals, then the `top` largest sites by peak
 * live bytes and by bytes allocated, each with its first `depth` frames. */
void cli_heap_print(FILE *out, cli_heap *h, size_t top, size_t depth);

/* Writes the totals and the `top` largest sites by peak live bytes of `json` (as for
 * cli_heap_read()) as one JSON object for strobe report: "sites" rows with the columns "Peak live
 * bytes", "Bytes allocated", "Calls", "Temporary", "Leaked at exit" and "Call stack" (frames
 * joined by " <- "). @return 0, 1 (no sites in the trace: nothing written), STROBE_EINVAL or
 * STROBE_ENOMEM. */
int cli_heap_json(FILE *out, const char *json, size_t top);

#endif
