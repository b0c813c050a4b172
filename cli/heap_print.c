/* heap_print.c: strobe record --heap's allocation sites as the CLI shows them (heap_print.h): the
 * table `strobe summary` prints and the JSON of the HTML report, over the sites model/heap.h
 * reads.
 *
 * Contents: the table; for the report. */
#include "heap_print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "emit.h"
#include "strobe/error.h"

/* ---- the table ------------------------------------------------------------------------------ */

static void print_sites(FILE *out, md_heap *h, int peak, size_t top, size_t depth) {
    md_heap_sort(h, peak);
    fprintf(out, "\nTop call sites by %s:\n", peak ? "peak live bytes" : "bytes allocated");
    fprintf(out, "  %14s %14s %10s %10s %14s  %s\n", "peak live", "bytes", "calls", "temporary",
            "leaked", "call stack (innermost first)");
    for (size_t i = 0; i < h->n && i < top; i++) {
        const md_heap_site *s = &h->sites[i];
        fprintf(out,
                "  %14" PRId64 " %14" PRId64 " %10" PRIu64 " %10" PRIu64 " %14" PRId64 "  %s\n",
                s->peak, s->bytes, s->calls, s->temporary, s->leaked,
                s->nframes ? cli_esc(s->frames[0]) : "??");
        for (size_t f = 1; f < s->nframes && f < depth; f++)
            fprintf(out, "  %68s  <- %s\n", "", cli_esc(s->frames[f]));
    }
    if (h->n > top) fprintf(out, "  (%zu more sites in the trace)\n", h->n - top);
}

void cli_heap_print(FILE *out, md_heap *h, size_t top, size_t depth) {
    fprintf(out,
            "Heap (strobe record --heap): %zu process%s, %" PRIu64 " allocation calls, %" PRId64
            " bytes allocated, %" PRIu64 " temporary allocations, %" PRId64
            " bytes peak live, %" PRId64 " bytes leaked at exit; %" PRIu64 " call sites",
            h->processes, h->processes == 1 ? "" : "es", h->calls, h->bytes, h->temporary, h->peak,
            h->leaked, h->site_count);
    if ((uint64_t)h->n < h->site_count) fprintf(out, " (the trace holds the %zu largest)", h->n);
    fputc('\n', out);
    if (h->sample_rate)
        fprintf(out,
                "  [memory] events: allocations sampled one every %" PRId64
                " bytes on average, and their frees\n",
                h->sample_rate);
    if (h->missed_calls)
        fprintf(out,
                "  %" PRIu64 " allocations (%" PRId64
                " bytes) had no site (no stack, or too many sites)\n",
                h->missed_calls, h->missed_bytes);
    if (h->unmapped_blocks)
        fprintf(out,
                "  %" PRIu64 " blocks were not mapped to their site (the map was full): their "
                "frees were not counted, their sites' peak and leaked bytes are too high\n",
                h->unmapped_blocks);
    print_sites(out, h, 1, top, depth);
    print_sites(out, h, 0, top, depth);
}

/* ---- for the report ------------------------------------------------------------------------- */

/* The site's frames joined by " <- " (malloc'd), or NULL. */
static char *joined_stack(const md_heap_site *s) {
    size_t n = 1;
    for (size_t f = 0; f < s->nframes; f++)
        n += strlen(s->frames[f]) + 4;
    char *out = malloc(n), *p = out;
    if (out == NULL) return NULL;
    for (size_t f = 0; f < s->nframes; f++) {
        if (f) {
            memcpy(p, " <- ", 4);
            p += 4;
        }
        size_t len = strlen(s->frames[f]);
        memcpy(p, s->frames[f], len);
        p += len;
    }
    *p = '\0';
    return out;
}

int cli_heap_json(FILE *out, const char *json, size_t top) {
    md_heap h;
    int rc = md_heap_read(json, &h);
    if (rc == 1) return 1;
    if (rc != 0) return rc;
    md_heap_sort(&h, 1);
    fprintf(out,
            "{\"processes\": %zu, \"sample_rate\": %" PRId64 ", \"calls\": %" PRIu64
            ", \"bytes\": %" PRId64 ", \"temporary\": %" PRIu64 ", \"peak\": %" PRId64
            ", \"leaked\": %" PRId64 ", \"site_count\": %" PRIu64 ", \"missed_calls\": %" PRIu64
            ", \"sites\": [",
            h.processes, h.sample_rate, h.calls, h.bytes, h.temporary, h.peak, h.leaked,
            h.site_count, h.missed_calls);
    for (size_t i = 0; i < h.n && i < top; i++) {
        const md_heap_site *s = &h.sites[i];
        fprintf(out,
                "%s\n{\"Peak live bytes\": %" PRId64 ", \"Bytes allocated\": %" PRId64
                ", \"Calls\": %" PRIu64 ", \"Temporary\": %" PRIu64 ", \"Leaked at exit\": %" PRId64
                ", \"Call stack\": ",
                i ? "," : "", s->peak, s->bytes, s->calls, s->temporary, s->leaked);
        char *stack = joined_stack(s);
        if (stack == NULL) {
            md_heap_free(&h);
            return STROBE_ENOMEM;
        }
        cli_json_str(out, stack); /* escaped as every JSON string of the CLI's */
        free(stack);
        fputs("}", out);
    }
    fputs("]}", out);
    md_heap_free(&h);
    return 0;
}
