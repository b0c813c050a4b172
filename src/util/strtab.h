/* strtab.h: interns strings: equal bytes get one copy (in a pool) and one dense id, in the order
 * first seen. Used where millions of events share a few thousand names: the collector (copying
 * run-time names into a result) and the summary (one row per name). Not thread-safe. */
#ifndef STROBE_STRTAB_H
#define STROBE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "strpool.h"

typedef struct strobe__strtab {
    uint32_t *slots; /* id + 1; 0: empty. A power of two, kept at most half full. */
    size_t cap;
    const char **strs; /* per id: the NUL-terminated copy, in the pool */
    size_t *lens;      /* per id: length in bytes */
    uint64_t *hashes;  /* per id: the full hash, so that probing rarely compares strings */
    size_t count, id_cap;
    strobe__pool *pool;
} strobe__strtab;

/* Starts an empty table whose copies go into `pool` (which must outlive their use). */
void strobe__strtab_init(strobe__strtab *t, strobe__pool *pool);
/* Interns s[0..len) (any bytes). @return its id (0, 1, 2 ... in order first seen), or
 * STROBE_ENOMEM. */
int64_t strobe__strtab_intern(strobe__strtab *t, const char *s, size_t len);
/* The copy of string `id`. */
static inline const char *strobe__strtab_str(const strobe__strtab *t, uint32_t id) {
    return t->strs[id];
}
/* Frees the table's arrays (not the copies, which belong to the pool). */
void strobe__strtab_release(strobe__strtab *t);

#endif
