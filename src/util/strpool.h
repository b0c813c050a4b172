/* strpool.h: a bump allocator for strings and small objects that live as long as their owner
 * (a result, a session). Freed all at once. Not thread-safe. */
#ifndef STROBE_STRPOOL_H
#define STROBE_STRPOOL_H

#include <stddef.h>

typedef struct strobe__pool_block strobe__pool_block;
typedef struct strobe__pool {
    strobe__pool_block *head;
    char *pos, *end;
} strobe__pool;

/* Returns `size` bytes aligned to 8, or NULL when out of memory. */
void *strobe__pool_alloc(strobe__pool *p, size_t size);
/* Copies `len` bytes of `s` and a terminating NUL. NULL when out of memory. */
char *strobe__pool_strndup(strobe__pool *p, const char *s, size_t len);
/* Copies a NUL-terminated string. NULL when out of memory. */
char *strobe__pool_strdup(strobe__pool *p, const char *s);
/* Frees every block; the pool is empty and reusable afterwards. */
void strobe__pool_release(strobe__pool *p);

#endif /* STROBE_STRPOOL_H */
