/* stack.c: the calling thread's stack bounds and the frame-pointer walk that captures a native
 * call stack on the hot path (with_stack). Symbolization, the cold half, is in symbolize.c.
 *
 * Contents: stack bounds, frame-pointer capture. */
#include "stack.h"

#include <pthread.h>

#include "util/err.h"

/* ---- Stack bounds ----------------------------------------------------------------------- */

int strobe__stack_bounds(uintptr_t *lo, uintptr_t *hi) {
    STROBE_RETURN_IF(lo == NULL || hi == NULL, STROBE_EINVAL);
    /* glibc answers for the main thread too: it reads the stack's mapping from /proc/self/maps
     * and sizes it by RLIMIT_STACK. The walk only ever moves up from the current frame, so the
     * not-yet-grown part below it is never read. */
    pthread_attr_t attr;
    STROBE_RETURN_IF(pthread_getattr_np(pthread_self(), &attr) != 0, STROBE_ESYS);
    void *addr = NULL;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    (void)pthread_attr_destroy(&attr);
    STROBE_RETURN_IF(rc != 0 || addr == NULL || size == 0, STROBE_ESYS);
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
    return 0;
}

/* ---- Frame-pointer capture -------------------------------------------------------------- */

/* On x86_64 and aarch64 alike, a frame pointer points at a two-word frame record: the caller's
 * frame pointer, then the return address into the caller. Each record is checked before it is
 * read: aligned, wholly inside [lo, hi), and above the previous one (the stack grows down, so a
 * caller's record lies higher). A frame built without frame pointers therefore ends the walk or
 * yields one bogus return address (which symbolizes as "??"), and never makes it read outside
 * the thread's stack. Nothing here allocates, locks or calls out, so it is async-signal-safe.
 *
 * noinline: the first record read must be this function's own, whose return address is the
 * caller's; inlined, the walk would start one frame too high. AddressSanitizer is kept out
 * because the walk deliberately reads its callers' frames. */
__attribute__((noinline, no_sanitize_address)) int
strobe__stack_capture(uintptr_t lo, uintptr_t hi, int skip, uint64_t *pcs, int max) {
    if (pcs == NULL || max <= 0 || lo >= hi || hi - lo < 16) return 0;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int n = 0;
    while (n < max) {
        if ((fp & 7u) != 0 || fp < lo || fp > hi - 16) break;
        const uintptr_t *record = (const uintptr_t *)fp;
        uintptr_t next = record[0], ret = record[1];
        /* A zero return address marks the outermost frame (the ABI's end of the chain). */
        if (ret == 0) break;
        if (skip > 0) {
            skip--;
        } else {
            pcs[n++] = (uint64_t)ret;
        }
        if (next <= fp) break;
        fp = next;
    }
    return n;
}
