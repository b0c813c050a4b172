/* strtab.c: see strtab.h. Open addressing with linear probing over word-at-a-time hashes. */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"

/* Eight bytes at a time (names in traces run to hundreds of bytes), each word mixed in by a
 * multiply and a rotate, the tail likewise, then a finalizer that spreads the high bits into the
 * low bits the table uses. */
static uint64_t hash_bytes(const char *s, size_t len) {
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h = 0xcbf29ce484222325ull ^ (len * k);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, s + i, len - i);
        h = (h ^ w) * k;
        h ^= h >> 31;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

void strobe__strtab_init(strobe__strtab *t, strobe__pool *pool) {
    memset(t, 0, sizeof *t);
    t->pool = pool;
}

static int grow_slots(strobe__strtab *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return STROBE_ENOMEM;
    for (size_t id = 0; id < t->count; id++) {
        size_t i = (size_t)t->hashes[id] & (cap - 1);
        while (slots[i] != 0)
            i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

static int grow_ids(strobe__strtab *t) {
    size_t cap = t->id_cap ? t->id_cap * 2 : 64;
    const char **strs = realloc((void *)t->strs, cap * sizeof *strs);
    if (strs == NULL) return STROBE_ENOMEM;
    t->strs = strs;
    size_t *lens = realloc(t->lens, cap * sizeof *lens);
    if (lens == NULL) return STROBE_ENOMEM;
    t->lens = lens;
    uint64_t *hashes = realloc(t->hashes, cap * sizeof *hashes);
    if (hashes == NULL) return STROBE_ENOMEM;
    t->hashes = hashes;
    t->id_cap = cap;
    return 0;
}

int64_t strobe__strtab_intern(strobe__strtab *t, const char *s, size_t len) {
    if ((t->count + 1) * 2 > t->cap && grow_slots(t)) return STROBE_ENOMEM;
    uint64_t h = hash_bytes(s, len);
    size_t i = (size_t)h & (t->cap - 1);
    for (uint32_t slot; (slot = t->slots[i]) != 0; i = (i + 1) & (t->cap - 1)) {
        uint32_t id = slot - 1;
        if (t->hashes[id] == h && t->lens[id] == len && memcmp(t->strs[id], s, len) == 0) return id;
    }
    if (t->count >= UINT32_MAX - 1u) return STROBE_ENOMEM;
    if (t->count == t->id_cap && grow_ids(t)) return STROBE_ENOMEM;
    const char *copy = strobe__pool_strndup(t->pool, s, len);
    if (copy == NULL) return STROBE_ENOMEM;
    size_t id = t->count++;
    t->strs[id] = copy;
    t->lens[id] = len;
    t->hashes[id] = h;
    t->slots[i] = (uint32_t)(id + 1);
    return (int64_t)id;
}

void strobe__strtab_release(strobe__strtab *t) {
    free(t->slots);
    free((void *)t->strs);
    free(t->lens);
    free(t->hashes);
    t->slots = NULL;
    t->strs = NULL;
    t->lens = NULL;
    t->hashes = NULL;
    t->count = t->cap = t->id_cap = 0;
}
