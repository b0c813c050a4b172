/* stack.h: capturing native call stacks cheaply on the hot path (with_stack) and symbolizing them
 * once, at stop.
 *
 * Capture walks frame pointers within the calling thread's stack bounds: it never reads outside
 * [lo, hi) of the thread's stack, so a frame built without frame pointers ends the walk (or gives
 * a bogus return address, which symbolizes as "??"), never a crash. */
#ifndef STROBE_STACK_H
#define STROBE_STACK_H

#include <stddef.h>
#include <stdint.h>

/* The calling thread's stack bounds (pthread_getattr_np). @return 0, STROBE_EINVAL (NULL
 * argument) or STROBE_ESYS. */
int strobe__stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* Writes at most `max` return addresses of the caller's callers into pcs, innermost first,
 * skipping the first `skip` frames (strobe's own). Async-signal-safe, no allocation. Must be
 * compiled with frame pointers. @return the number written. */
int strobe__stack_capture(uintptr_t lo, uintptr_t hi, int skip, uint64_t *pcs, int max);

/* Symbolizes a set of distinct addresses (at stop). For each pcs[i], out[i] gets a string owned
 * by the symbolizer: "function (file:line)" where debug info gives a line, "function" where only
 * a symbol is known, "module+0xOFFSET" otherwise ("??" for an address in no module); inlined
 * levels come first, joined by ';', strobe's own left out. C++ names are demangled when the
 * process has libstdc++ loaded (__cxa_demangle, found with dlsym), else left mangled. Uses the
 * ELF symbol tables of the loaded modules, and addr2line (binutils) for file:line when it is
 * installed; STROBE_SYMBOLIZE=0 in the environment skips addr2line. @return a symbolizer to free
 * with strobe__symbolizer_free, or NULL (ENOMEM). */
typedef struct strobe__symbolizer strobe__symbolizer;
strobe__symbolizer *strobe__symbolize(const uint64_t *pcs, size_t n, const char **out);
void strobe__symbolizer_free(strobe__symbolizer *s);

/* Whether a symbolized frame is strobe's own: its function is strobe__* (internal, the C++ scope
 * guard) or a strobe_* function (the inline range calls, where the compiler did not inline
 * them), not a user's namespace that begins so. The stacks leave such frames out where they come
 * before the caller's. */
int strobe__frame_is_own(const char *frame);

#endif
