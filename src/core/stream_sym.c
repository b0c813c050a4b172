/* stream_sym.c: the symbols of the streamed stacks' return addresses (stream_internal.h).
 *
 * Stacks are symbolized in the background thread per batch: the batch's chunks are scanned for
 * addresses not seen before, those are symbolized in one call, and each address keeps its symbol
 * for the rest of the session. */
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "stack.h"
#include "stream_internal.h"
#include "strobe/error.h"

const char *strobe__stream_syms_get(const strobe__stream_syms *y, uint64_t pc) {
    const uint64_t *v = strobe__u64map_get(&y->map, pc);
    return v ? y->names[*v - 1] : NULL;
}

static int sym_put(strobe__stream_syms *y, uint64_t pc, const char *name) {
    if (strobe__grow((void **)&y->names, &y->cap, y->count + 1, sizeof *y->names))
        return STROBE_ENOMEM;
    int inserted = 0;
    uint64_t *v = strobe__u64map_put(&y->map, pc, &inserted);
    if (v == NULL) return STROBE_ENOMEM;
    if (!inserted) return 0;
    char *copy = strdup(name);
    if (copy == NULL) return STROBE_ENOMEM;
    y->names[y->count++] = copy;
    *v = y->count;
    return 0;
}

int strobe__stream_syms_scan(strobe__stream_syms *y, const char *p, size_t used) {
    const char *end = p + used;
    while (p < end) {
        size_t size = strobe__rec_size(p, (size_t)(end - p), NULL);
        if (size == 0) break;
        const uint64_t *w = (const uint64_t *)p;
        if (STROBE__REC_KIND(w[0]) == STROBE__REC_STACK) {
            uint32_t n = (uint32_t)(STROBE__REC_TS(w[0]) & 0xff);
            for (uint32_t i = 0; i < n; i++) {
                if (strobe__u64map_get(&y->map, w[1 + i])) continue;
                if (strobe__grow((void **)&y->want, &y->want_cap, y->want_count + 1,
                                 sizeof *y->want))
                    return STROBE_ENOMEM;
                y->want[y->want_count++] = w[1 + i];
            }
        }
        p += size;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int strobe__stream_syms_resolve(strobe__stream_syms *y) {
    if (y->want_count == 0) return 0;
    qsort(y->want, y->want_count, sizeof *y->want, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < y->want_count; i++)
        if (u == 0 || y->want[u - 1] != y->want[i]) y->want[u++] = y->want[i];
    y->want_count = 0;
    const char **out = calloc(u, sizeof *out);
    if (out == NULL) return STROBE_ENOMEM;
    strobe__symbolizer *sz = strobe__symbolize(y->want, u, out);
    int rc = sz ? 0 : STROBE_ENOMEM;
    for (size_t i = 0; i < u && rc == 0; i++)
        rc = sym_put(y, y->want[i], out[i] ? out[i] : "??");
    strobe__symbolizer_free(sz);
    free(out);
    return rc;
}

void strobe__stream_syms_free(strobe__stream_syms *y) {
    for (size_t i = 0; i < y->count; i++)
        free(y->names[i]);
    free(y->names);
    free(y->want);
    strobe__u64map_free(&y->map);
    memset(y, 0, sizeof *y);
}
