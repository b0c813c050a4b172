/* heap_hook.h: the malloc interposer (malloc_hook.c) built into libstrobe_record.so
 * (STROBE_MALLOC_EMBEDDED): there it has no session of its own; record_hook.c runs the session
 * and says when allocations are recorded. */
#ifndef STROBE_PRELOAD_HEAP_HOOK_H
#define STROBE_PRELOAD_HEAP_HOOK_H

#include <stdint.h>

/* Records allocations (on != 0) as strobe memory events, or stops counting them (0). Until the
 * first call they are counted, so that a later start knows the total. */
void strobe__heap_set_tracing(int on);

/* Marks the calling thread as inside strobe (on != 0): its allocations go to the allocator
 * unrecorded. @return the previous mark. */
int strobe__heap_quiet(int on);

/* Finds the real allocator now (the constructor's first step, as in libstrobe_malloc.so). */
void strobe__heap_resolve(void);

/* Allocation sites from now on: `mode` 1 (--heap-stacks): every allocation and free is an event,
 * with its call stack, and summed per call site; 2 (--heap): summed per call site, the events
 * only of allocations sampled one every `rate` bytes on average (rate <= 0: the last rate) and of
 * their frees, with counters of the allocated and reserved bytes; 0: no sites (--heap=all: an
 * event per call, with no stack). @return 0, or -1 (out of memory: no sites are kept). */
int strobe__heap_sites(int mode, int64_t rate);

/* In a forked child (its fork handler, first): the sites start afresh, unlocked, not counted
 * until strobe__heap_sites(). */
void strobe__heap_sites_forked(void);

/* Ends the sites counted since strobe__heap_sites() and forgets them: adds the trace's
 * "strobe_heap" metadata (the session must still run: this process's totals and its largest
 * sites, with their symbolized stacks), and writes the largest, at most `top`, to `path` (one
 * line each, by bytes allocated: "BYTES\tCOUNT\tPEAK\tLEAF\tCALLER", the leaf and caller
 * symbolized; then "missed\tN", the allocations no site took). No sites: nothing is written.
 * @return 0, or -1 or a negative STROBE_E* code. */
int strobe__heap_sites_report(const char *path, int top);

#endif
