/* heap_print.h: strobe record --heap's allocation sites as the CLI shows them (heap_print.c), over
 * what model/heap.h reads. */
#ifndef STROBE_CLI_HEAP_PRINT_H
#define STROBE_CLI_HEAP_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "model/heap.h"

/* Prints heaptrack's summary of h to `out`: the totals, then the `top` largest sites by peak
 * live bytes and by bytes allocated, each with its first `depth` frames. */
void cli_heap_print(FILE *out, md_heap *h, size_t top, size_t depth);

/* Writes the totals and the `top` largest sites by peak live bytes of `json` (as for
 * md_heap_read()) as one JSON object for strobe report: "sites" rows with the columns "Peak live
 * bytes", "Bytes allocated", "Calls", "Temporary", "Leaked at exit" and "Call stack" (frames
 * joined by " <- "). @return 0, 1 (no sites in the trace: nothing written), STROBE_EINVAL or
 * STROBE_ENOMEM. */
int cli_heap_json(FILE *out, const char *json, size_t top);

#endif
