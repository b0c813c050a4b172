/* heap_agg_target: allocations from known call sites, for `strobe record --heap`'s sums per site
 * and its sampled events (test_record_heap_sites.sh). Built with frame pointers, the sites not
 * inlined, so that each allocation's leaf function is one of these. No strobe.
 *
 * Prints, per site, "site LEAF CALLS BYTES PEAK LEAKED TEMPORARY", worked out here as the program
 * runs with the allocator's sizes (malloc_usable_size, the size strobe counts): the calls, the
 * bytes allocated, the most bytes of the site live at once, the bytes still live at exit, and the
 * temporary allocations (freed right after, with no other allocation or free in between). Then
 * "big SIZE" for each block of at least 1 MiB that it allocated (each must be a sampled event
 * under --heap=1M or less). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#define LEAKS 5
#define TEMPS 100
#define KEEPS 20
#define BIGS 3
#define SMALLS 300000

static void *kept[KEEPS];
static void *leaked[LEAKS];

/* LEAKS blocks of 1000 bytes, never freed. */
__attribute__((noinline)) static void *site_leak(void) {
    return malloc(1000);
}

/* One block of 200 bytes, freed at once by the caller: a temporary allocation each time. */
__attribute__((noinline)) static void *site_temp(void) {
    return malloc(200);
}

/* KEEPS zeroed blocks of 10 x 100 bytes live at once. */
__attribute__((noinline)) static void *site_keep(void) {
    return calloc(10, 100);
}

/* BIGS blocks of 2 MiB, one at a time. */
__attribute__((noinline)) static void *site_big(void) {
    return malloc(2u << 20);
}

/* SMALLS blocks of 16 .. 415 bytes, each freed at once. */
__attribute__((noinline)) static void *site_small(size_t n) {
    return malloc(n);
}

static void report(const char *leaf, long long calls, long long bytes, long long peak,
                   long long leak, long long temporary) {
    printf("site %s %lld %lld %lld %lld %lld\n", leaf, calls, bytes, peak, leak, temporary);
}

int main(void) {
    long long bytes = 0, peak = 0, live = 0;
    for (int i = 0; i < LEAKS; i++) {
        leaked[i] = site_leak();
        bytes += (long long)malloc_usable_size(leaked[i]);
    }
    report("site_leak", LEAKS, bytes, bytes, bytes, 0);

    bytes = peak = 0;
    for (int i = 0; i < TEMPS; i++) {
        char *p = site_temp();
        p[0] = (char)i;
        long long n = (long long)malloc_usable_size(p);
        bytes += n;
        peak = n;
        free(p);
    }
    report("site_temp", TEMPS, bytes, peak, 0, TEMPS);

    bytes = live = peak = 0;
    for (int i = 0; i < KEEPS; i++) {
        kept[i] = site_keep();
        bytes += (long long)malloc_usable_size(kept[i]);
    }
    peak = bytes;
    /* Freed oldest first: the last one is freed after other frees, so none is temporary. */
    for (int i = 0; i < KEEPS; i++)
        free(kept[i]);
    report("site_keep", KEEPS, bytes, peak, 0, 0);

    long long big_sizes[BIGS];
    bytes = peak = 0;
    for (int i = 0; i < BIGS; i++) {
        char *p = site_big();
        p[0] = 1;
        big_sizes[i] = (long long)malloc_usable_size(p);
        bytes += big_sizes[i];
        if (big_sizes[i] > peak) peak = big_sizes[i];
        free(p);
    }
    report("site_big", BIGS, bytes, peak, 0, BIGS);

    bytes = peak = 0;
    for (int i = 0; i < SMALLS; i++) {
        char *p = site_small(16 + ((size_t)i * 7919u) % 400u);
        p[0] = 1;
        long long n = (long long)malloc_usable_size(p);
        bytes += n;
        if (n > peak) peak = n;
        free(p);
    }
    report("site_small", SMALLS, bytes, peak, 0, SMALLS);
    for (int i = 0; i < BIGS; i++)
        printf("big %lld\n", big_sizes[i]);
    return 0;
}
