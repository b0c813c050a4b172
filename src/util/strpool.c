/* strpool.c: see strpool.h. Blocks grow geometrically up to 1 MiB; a large request gets a block
 * of its own. */
#include "strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strobe__pool_block {
    strobe__pool_block *next;
    size_t size;
    /* data follows, 16-aligned */
};

#define POOL_HDR ((sizeof(strobe__pool_block) + 15u) & ~(size_t)15u)

void *strobe__pool_alloc(strobe__pool *p, size_t size) {
    size = (size + 7u) & ~(size_t)7u;
    if (size == 0) size = 8;
    if (p->pos == NULL || (size_t)(p->end - p->pos) < size) {
        size_t want = p->head ? p->head->size * 2 : 4096;
        if (want > (1u << 20)) want = 1u << 20;
        if (want < size) want = size;
        strobe__pool_block *b = malloc(POOL_HDR + want);
        if (b == NULL) return NULL;
        b->size = want;
        b->next = p->head;
        p->head = b;
        p->pos = (char *)b + POOL_HDR;
        p->end = p->pos + want;
    }
    void *out = p->pos;
    p->pos += size;
    return out;
}

char *strobe__pool_strndup(strobe__pool *p, const char *s, size_t len) {
    char *out = strobe__pool_alloc(p, len + 1);
    if (out == NULL) return NULL;
    if (len) memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

char *strobe__pool_strdup(strobe__pool *p, const char *s) {
    return strobe__pool_strndup(p, s, strlen(s));
}

void strobe__pool_release(strobe__pool *p) {
    strobe__pool_block *b = p->head;
    while (b) {
        strobe__pool_block *next = b->next;
        free(b);
        b = next;
    }
    p->head = NULL;
    p->pos = p->end = NULL;
}
