/* u64map.h: a map from 64-bit keys to 64-bit values, by open addressing (linear probing, at most
 * half full, doubling as it fills). The one hash table for ids (correlation ids, External ids,
 * event indexes) wherever the library or the CLI needs one. Not thread-safe. */
#ifndef STROBE_UTIL_U64MAP_H
#define STROBE_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

/* A zeroed struct is an empty map. */
typedef struct strobe__u64map {
    uint64_t *keys; /* key + 1; 0 marks a free slot */
    uint64_t *vals;
    size_t cap; /* a power of two, or 0 before the first insert */
    size_t count;
} strobe__u64map;

/* The largest key a map takes (UINT64_MAX is reserved). */
#define STROBE__U64MAP_KEY_MAX (UINT64_MAX - 1)

/* Makes room for `n` keys without growing. @return 0 or STROBE_ENOMEM. */
int strobe__u64map_reserve(strobe__u64map *m, size_t n);

/* The value of `key`, inserted (its value 0, *inserted = 1) when it was not there. NULL when the
 * map could not grow (ENOMEM) or the key is UINT64_MAX. The pointer is valid until the next
 * insert. `inserted` may be NULL. */
uint64_t *strobe__u64map_put(strobe__u64map *m, uint64_t key, int *inserted);

/* The value of `key`, or NULL when it is not in the map. */
uint64_t *strobe__u64map_get(const strobe__u64map *m, uint64_t key);

/* Frees the map's arrays; the struct is an empty map again. */
void strobe__u64map_free(strobe__u64map *m);

#endif /* STROBE_UTIL_U64MAP_H */
