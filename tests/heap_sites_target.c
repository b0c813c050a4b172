/* heap_sites_target: allocations from known call sites, for `strobe record --heap-stacks`
 * (test_record_heap.sh). Built with frame pointers and without inlining the sites, so that each
 * allocation's leaf function and caller are these functions. No strobe.
 *
 * Prints, per site, "site LEAF CALLER BYTES COUNT PEAK": the bytes the allocator gave
 * (malloc_usable_size, the size the heap events carry), the number of allocations and the most
 * bytes of the site live at once, worked out here as the program runs; then, per allocation in
 * the order made, "block ADDR BYTES FRAMES" (FRAMES: the functions its call stack begins with,
 * innermost first, joined by ';'), for the [memory] events' "Call stack". */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG 10
#define SMALL 1000

/* Each allocation's address and size, kept without allocating. */
static unsigned long long big_addr[BIG], small_addr[SMALL];
static long long big_size[BIG], small_size[SMALL];

/* Keeps BIG blocks of 100000 bytes live at once, then frees them: the peak is all of them. */
__attribute__((noinline)) static void alloc_big(void **keep, long long *bytes) {
    for (int i = 0; i < BIG; i++) {
        keep[i] = malloc(100000);
        big_addr[i] = (unsigned long long)(uintptr_t)keep[i];
        big_size[i] = (long long)malloc_usable_size(keep[i]);
        *bytes += big_size[i];
    }
}

/* One block of 64 bytes at a time: the peak is one block. */
__attribute__((noinline)) static void *alloc_small(void) {
    return malloc(64);
}

__attribute__((noinline)) static long long helper(long long *one) {
    long long bytes = 0;
    for (int i = 0; i < SMALL; i++) {
        char *p = alloc_small();
        p[0] = (char)i;
        *one = (long long)malloc_usable_size(p);
        small_addr[i] = (unsigned long long)(uintptr_t)p;
        small_size[i] = *one;
        bytes += *one;
        free(p);
    }
    return bytes;
}

int main(void) {
    void *keep[BIG];
    long long big = 0, one = 0;
    alloc_big(keep, &big);
    for (int i = 0; i < BIG; i++)
        free(keep[i]);
    long long small = helper(&one);
    printf("site alloc_big main %lld %d %lld\n", big, BIG, big);
    printf("site alloc_small helper %lld %d %lld\n", small, SMALL, one);
    for (int i = 0; i < BIG; i++)
        printf("block %llu %lld alloc_big;main\n", big_addr[i], big_size[i]);
    for (int i = 0; i < SMALL; i++)
        printf("block %llu %lld alloc_small;helper;main\n", small_addr[i], small_size[i]);
    return 0;
}
