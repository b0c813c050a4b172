/* unwind.h: DWARF unwinding of CPU samples from a copy of the user stack (sample.c's
 * `--call-graph dwarf`).
 *
 * perf_event_open copies, with each sample, the sampled thread's user registers and the top of
 * its user stack (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER). The drain thread hands them to
 * strobe__unwind(), which walks the stack with the modules' call frame information (.eh_frame,
 * .debug_frame) through elfutils' libdwfl, so that code built without frame pointers (Debian's
 * libc, CPython, BLAS, libtorch) still gives whole stacks. Only the program counters are kept.
 *
 * libdw is opened at run time (dlopen "libdw.so.1"), like CUPTI: the library, its static archive
 * and the preload libraries take on no link dependency, and a machine without libdw samples with
 * frame pointers, with the reason in the trace. It is compiled in only where elfutils' headers
 * were found at build time (STROBE_HAVE_LIBDW, CMake option STROBE_LIBDW).
 *
 * Not thread-safe: one unwinder per thread (the sampler's drain thread owns it). */
#ifndef STROBE_UNWIND_H
#define STROBE_UNWIND_H

#include <stddef.h>
#include <stdint.h>

typedef struct strobe__unwinder strobe__unwinder;

/* The perf_event_attr.sample_regs_user mask the unwinder needs on this architecture (0: none
 * known, DWARF unwinding is not possible here). */
uint64_t strobe__unwind_regs_mask(void);

/* Whether DWARF unwinding can be used in this process: 1, or 0 with the reason in `why` (not
 * built in, unsupported architecture, libdw.so.1 missing). Loads libdw once. */
int strobe__unwind_available(char *why, size_t why_size);

/* Makes an unwinder for this process (reads /proc/self/maps). @return 0 and *out; 1 with the
 * reason in `why` (see strobe__unwind_available); or STROBE_ENOMEM. */
int strobe__unwinder_new(strobe__unwinder **out, char *why, size_t why_size);

/* Frees it. Accepts NULL. */
void strobe__unwinder_free(strobe__unwinder *u);

/* Unwinds one sample of thread `tid` taken at `mono_ns` (CLOCK_MONOTONIC): `regs` are the user
 * registers as perf wrote them (in the order of strobe__unwind_regs_mask's bits), `stack` the
 * `stack_len` bytes copied from the stack pointer upward. Writes at most `max` program counters
 * into pcs, innermost first: the interrupted instruction, then return addresses. A program
 * counter outside every known module makes the unwinder read /proc/self/maps again (code loaded
 * with dlopen after the last read), at most once per sample. @return the number written; *complete
 * is 1 when the walk reached the stack's outermost frame, 0 when it stopped early (the stack copy
 * ended, a module without call frame information, a read that failed). */
uint32_t strobe__unwind(strobe__unwinder *u, int64_t tid, int64_t mono_ns, const uint64_t *regs,
                        size_t nregs, const char *stack, size_t stack_len, uint64_t *pcs,
                        uint32_t max, int *complete);

/* How often the module list was read again (after the first), for the trace's metadata. */
uint64_t strobe__unwind_refreshes(const strobe__unwinder *u);

#endif
