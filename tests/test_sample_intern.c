/* test_sample_intern.c: the sampler keeps each distinct stack once (core/sample.c,
 * intern_stack). A thread spinning in one function a few frames deep is sampled at 1 kHz for
 * 300 ms of CPU time, with frame pointers and (where built in) DWARF: its samples repeat a few
 * stacks, so they must point at a few frame arrays (distinct offsets at most a quarter of the
 * samples; before interning, every sample had its own), the frames kept must be no more than
 * the distinct stacks' own, and samples that share an offset have the same frame count.
 * And a kernel that refuses the stack copies (EINVAL; forced with a size past what it takes, 65536
 * bytes) leaves a sampler that samples with frame pointers and says why (strobe__sampler_note).
 * Skips (77) where perf_event_open is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/sample.h"
#include "core/unwind.h"
#include "strobe/strobe.h"
#include "util/u64map.h"

static volatile double sink;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static void spin(int ms) {
    long long end = cpu_ns() + (long long)ms * 1000000;
    double x = 1.0;
    while (cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

__attribute__((noinline)) static void outer(int ms) {
    spin(ms);
    sink += 1.0;
}

/* One sampler run; @return 0, or 77 when sampling is refused. */
static int run(uint32_t stack_bytes) {
    char why[200] = "";
    strobe__sampler *sp = NULL;
    int rc = strobe__sampler_start_dwarf(&sp, 1000, stack_bytes, 0, 0, why, sizeof why);
    if (rc == 1) {
        fprintf(stderr, "SKIP: %s\n", why);
        return 77;
    }
    CHECK_EQ(rc, 0);
    REQUIRE(sp != NULL);
    strobe__sampler_enable(sp);
    outer(300);
    strobe__sampler_stop(sp);
    size_t n = 0;
    const strobe__sample *s = strobe__sampler_samples(sp, &n);
    strobe__u64map offs = {0};
    size_t distinct = 0, frames = 0;
    for (size_t i = 0; i < n; i++) {
        int inserted = 0;
        uint64_t *v = strobe__u64map_put(&offs, s[i].off, &inserted);
        REQUIRE(v != NULL);
        if (inserted) {
            distinct++;
            frames += s[i].n;
            *v = s[i].n;
        } else {
            CHECK_EQ(*v, s[i].n);
        }
    }
    /* The frames kept: the furthest any sample reaches into pcs. */
    size_t end = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].off + s[i].n > end) end = (size_t)(s[i].off + s[i].n);
    fprintf(stderr, "stack bytes %u: %zu samples, %zu distinct stacks, %zu frames kept\n",
            stack_bytes, n, distinct, end);
    CHECK_INT(n, >=, 100);
    CHECK_INT(distinct * 4, <=, n);
    CHECK_INT(end, <=, frames);
    strobe__u64map_free(&offs);
    strobe__sampler_free(sp);
    return 0;
}

/* Stack copies the kernel refuses: frame pointers, with a note. */
static void refused(void) {
    char why[200] = "";
    strobe__sampler *sp = NULL;
    CHECK_EQ(strobe__sampler_start_dwarf(&sp, 1000, 65536, 0, 0, why, sizeof why), 0);
    REQUIRE(sp != NULL);
    fprintf(stderr, "65536-byte stacks: note \"%s\"\n", strobe__sampler_note(sp));
    CHECK(strstr(strobe__sampler_note(sp), "refused user stack copies") != NULL);
    strobe__sampler_enable(sp);
    outer(100);
    strobe__sampler_stop(sp);
    size_t n = 0;
    (void)strobe__sampler_samples(sp, &n);
    CHECK_INT(n, >=, 30);
    char json[1024];
    strobe__sampler_json(sp, json, sizeof json);
    CHECK(strstr(json, "\"callchain\": \"frame pointers") != NULL);
    strobe__sampler_free(sp);
}

int main(void) {
    if (run(0) == 77) return 77;
    char why[200];
    if (strobe__unwind_available(why, sizeof why)) {
        run(8192);
        refused();
    } else
        fprintf(stderr, "DWARF not checked: %s\n", why);
    return check_result();
}
