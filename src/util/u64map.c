/* u64map.c: the id map (see u64map.h). */
#include "u64map.h"

#include <stdlib.h>

#include "strobe/error.h"

static size_t slot_of(const strobe__u64map *m, uint64_t stored) {
    uint64_t x = stored * UINT64_C(0x9e3779b97f4a7c15);
    size_t i = (size_t)(x ^ (x >> 29)) & (m->cap - 1);
    while (m->keys[i] != 0 && m->keys[i] != stored)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow_to(strobe__u64map *m, size_t cap) {
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint64_t *vals = malloc(cap * sizeof *vals);
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return STROBE_ENOMEM;
    }
    strobe__u64map old = *m;
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++) {
        if (old.keys[i] == 0) continue;
        size_t s = slot_of(m, old.keys[i]);
        m->keys[s] = old.keys[i];
        m->vals[s] = old.vals[i];
    }
    free(old.keys);
    free(old.vals);
    return 0;
}

int strobe__u64map_reserve(strobe__u64map *m, size_t n) {
    if (n > SIZE_MAX / 4) return STROBE_ENOMEM;
    size_t cap = m->cap ? m->cap : 16;
    while (cap < n * 2 + 2)
        cap *= 2;
    return cap == m->cap ? 0 : grow_to(m, cap);
}

uint64_t *strobe__u64map_put(strobe__u64map *m, uint64_t key, int *inserted) {
    if (inserted) *inserted = 0;
    if (key > STROBE__U64MAP_KEY_MAX) return NULL;
    if ((m->count + 1) * 2 > m->cap && strobe__u64map_reserve(m, m->count + 1)) return NULL;
    size_t i = slot_of(m, key + 1);
    if (m->keys[i] == 0) {
        m->keys[i] = key + 1;
        m->vals[i] = 0;
        m->count++;
        if (inserted) *inserted = 1;
    }
    return &m->vals[i];
}

uint64_t *strobe__u64map_get(const strobe__u64map *m, uint64_t key) {
    if (m->cap == 0 || key > STROBE__U64MAP_KEY_MAX) return NULL;
    size_t i = slot_of(m, key + 1);
    return m->keys[i] ? &m->vals[i] : NULL;
}

void strobe__u64map_free(strobe__u64map *m) {
    free(m->keys);
    free(m->vals);
    *m = (strobe__u64map){0};
}
