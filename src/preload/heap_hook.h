/* heap_hook.h: the malloc interposer (malloc_hook.c) built into libstrobe_record.so
 * (STROBE_MALLOC_EMBEDDED): there it has no session of its own; record_hook.c runs the session
 * and says when allocations are recorded. */
#ifndef STROBE_PRELOAD_HEAP_HOOK_H
#define STROBE_PRELOAD_HEAP_HOOK_H

/* Records allocations (on != 0) as strobe memory events, or stops counting them (0). Until the
 * first call they are counted, so that a later start knows the total. */
void strobe__heap_set_tracing(int on);

/* Marks the calling thread as inside strobe (on != 0): its allocations go to the allocator
 * unrecorded. @return the previous mark. */
int strobe__heap_quiet(int on);

/* Finds the real allocator now (the constructor's first step, as in libstrobe_malloc.so). */
void strobe__heap_resolve(void);

/* --heap-stacks: takes each recorded allocation's call stack and sums allocations per call site
 * (on != 0) from now on, or no longer (0). @return 0, or -1 (out of memory: no sites are kept). */
int strobe__heap_stacks(int on);

/* In a forked child (its fork handler, first): the sites start afresh, unlocked, not counted
 * until strobe__heap_stacks(1). */
void strobe__heap_stacks_forked(void);

/* Writes the largest allocation sites counted since strobe__heap_stacks(1), at most `top`, to
 * `path` (one line each, by bytes allocated: "BYTES\tCOUNT\tPEAK\tLEAF\tCALLER", the leaf and
 * caller symbolized; then "missed\tN", the allocations no site took), stops counting and forgets
 * them. Nothing to write: nothing is written. @return 0 or -1. */
int strobe__heap_stacks_report(const char *path, int top);

#endif
