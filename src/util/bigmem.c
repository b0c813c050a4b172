/* bigmem.c: see bigmem.h. */
#include "bigmem.h"

#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static size_t round_page(size_t bytes) {
    return (bytes + 4095u) & ~(size_t)4095u;
}

void *strobe__big_map(size_t bytes, int noreserve) {
    bytes = round_page(bytes ? bytes : 1);
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0);
    if (bytes < HUGE_PAGE) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* Over-map by one huge page and trim both ends, leaving an aligned mapping of `bytes`. */
    char *raw = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uintptr_t aligned = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    size_t head = aligned - (uintptr_t)raw;
    if (head) munmap(raw, head);
    size_t tail = HUGE_PAGE - head;
    if (tail) munmap((char *)aligned + bytes, tail);
#ifdef MADV_HUGEPAGE
    (void)madvise((void *)aligned, bytes, MADV_HUGEPAGE);
#endif
    return (void *)aligned;
}

void strobe__big_populate(void *p, size_t bytes) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels reject it with EINVAL */
#endif
    if (p != NULL && bytes) (void)madvise(p, round_page(bytes), MADV_POPULATE_WRITE);
}

void strobe__big_unmap(void *p, size_t bytes) {
    if (p != NULL) munmap(p, round_page(bytes ? bytes : 1));
}
