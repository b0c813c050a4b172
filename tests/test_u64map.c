/* test_u64map.c: the id map (util/u64map.h) against a plain array of what it should hold. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "strobe/error.h"
#include "util/u64map.h"

/* A key spread over the whole range, with collisions in the low bits. */
static uint64_t key_of(uint64_t i) {
    return (i * UINT64_C(0x100000001)) ^ (i << 40);
}

int main(void) {
    enum { N = 50000 };
    strobe__u64map m = {0};
    CHECK(strobe__u64map_get(&m, 7) == NULL); /* a zeroed map is empty */

    /* Inserting grows the map from empty; every key keeps its value through the growths. */
    for (uint64_t i = 0; i < N; i++) {
        int fresh = -1;
        uint64_t *v = strobe__u64map_put(&m, key_of(i), &fresh);
        CHECK(v != NULL);
        if (v == NULL) break;
        CHECK_EQ(fresh, 1);
        CHECK_EQ(*v, 0);
        *v = i * 3 + 1;
    }
    CHECK_EQ(m.count, N);
    CHECK(m.cap >= 2 * m.count);
    for (uint64_t i = 0; i < N; i++) {
        const uint64_t *v = strobe__u64map_get(&m, key_of(i));
        CHECK(v != NULL && *v == i * 3 + 1);
    }
    /* Keys never inserted are absent, 0 and the largest allowed key included. */
    CHECK(strobe__u64map_get(&m, key_of(N)) == NULL);
    CHECK(strobe__u64map_get(&m, STROBE__U64MAP_KEY_MAX) == NULL);
    CHECK(key_of(0) == 0 && strobe__u64map_get(&m, 0) != NULL);

    /* A second put finds the key: not fresh, the value kept. */
    int fresh = -1;
    uint64_t *v = strobe__u64map_put(&m, key_of(123), &fresh);
    CHECK(v != NULL && fresh == 0 && *v == 123 * 3 + 1);
    CHECK_EQ(m.count, N);

    /* The edges of the key range: the largest key works, UINT64_MAX is refused. */
    v = strobe__u64map_put(&m, STROBE__U64MAP_KEY_MAX, &fresh);
    CHECK(v != NULL && fresh == 1);
    if (v) *v = 99;
    v = strobe__u64map_get(&m, STROBE__U64MAP_KEY_MAX);
    CHECK(v != NULL && *v == 99);
    CHECK(strobe__u64map_put(&m, UINT64_MAX, &fresh) == NULL && fresh == 0);
    CHECK(strobe__u64map_get(&m, UINT64_MAX) == NULL);

    strobe__u64map_free(&m);
    CHECK(m.keys == NULL && m.cap == 0 && m.count == 0);
    CHECK(strobe__u64map_get(&m, key_of(1)) == NULL);

    /* reserve: room for n keys without growing; an absurd size is ENOMEM, not a wrap. */
    CHECK_EQ(strobe__u64map_reserve(&m, 1000), 0);
    size_t cap = m.cap;
    CHECK(cap >= 2002);
    for (uint64_t i = 0; i < 1000; i++)
        CHECK(strobe__u64map_put(&m, i, NULL) != NULL);
    CHECK_EQ(m.cap, cap);
    CHECK_EQ(strobe__u64map_reserve(&m, SIZE_MAX / 2), STROBE_ENOMEM);
    CHECK(strobe__u64map_get(&m, 999) != NULL); /* unharmed */
    strobe__u64map_free(&m);
    return check_result();
}
