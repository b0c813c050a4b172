/* bigmem.h: large anonymous mappings (the buffer arena, a result's event array) on 2 MiB
 * boundaries with transparent huge pages requested: on virtual machines a 4 KiB page fault costs
 * microseconds, and a 10-million-event result touches a gigabyte. */
#ifndef STROBE_BIGMEM_H
#define STROBE_BIGMEM_H

#include <stddef.h>

/* Maps `bytes` (rounded up to 4 KiB) of zeroed memory; `noreserve` skips swap accounting for a
 * reservation that may stay mostly untouched. NULL on failure. */
void *strobe__big_map(size_t bytes, int noreserve);
/* Faults in `bytes` of a mapping from strobe__big_map() in one call, where the kernel can
 * (MADV_POPULATE_WRITE, Linux 5.14); a no-op elsewhere, where pages fault in on first use. */
void strobe__big_populate(void *p, size_t bytes);
/* Unmaps memory from strobe__big_map() (same `bytes`). Accepts NULL. */
void strobe__big_unmap(void *p, size_t bytes);

#endif
