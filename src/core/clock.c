/* clock.c: choosing the raw clock and calibrating it (see clock.h). */
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if STROBE__HAVE_TSC
#include <cpuid.h>
#endif

int strobe__clock_is_tsc;
int64_t strobe__clock_skew_ns;

/* The process's first anchor: the long baseline for measuring the tick rate. */
static strobe__clock_anchor first_anchor;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static int64_t real_ns_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int tsc_is_invariant(void) {
#if STROBE__HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u;
#else
    return 0;
#endif
}

/* STROBE_CLOCK_SKEW_NS: a signed decimal count of ns, at most a day either way. */
static int64_t read_skew(void) {
    const char *v = getenv("STROBE_CLOCK_SKEW_NS");
    if (v == NULL || v[0] == '\0') return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end != '\0' || x > 86400000000000LL || x < -86400000000000LL) return 0;
    return (int64_t)x;
}

static void clock_init_once(void) {
    strobe__clock_skew_ns = read_skew();
    const char *force = getenv("STROBE_CLOCK");
    int want_tsc = !(force && strcmp(force, "monotonic") == 0);
    strobe__clock_is_tsc = want_tsc && tsc_is_invariant();
    first_anchor = strobe__clock_anchor_now();
}

void strobe__clock_init(void) {
    pthread_once(&clock_once, clock_init_once);
}

strobe__clock_anchor strobe__clock_anchor_now(void) {
    /* The raw clock is read before and after the system clocks; the try with the smallest gap
     * brackets them most tightly, and its midpoint is the anchor. */
    strobe__clock_anchor best = {0, 0, 0};
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t r0 = strobe__now_raw();
        int64_t mono = (int64_t)strobe__mono_ns();
        int64_t real = real_ns_now() + strobe__clock_skew_ns;
        uint64_t r1 = strobe__now_raw();
        if (r1 - r0 < best_gap) {
            best_gap = r1 - r0;
            best.raw = r0 + (r1 - r0) / 2;
            best.mono_ns = mono;
            best.real_ns = real;
        }
    }
    if (!strobe__clock_is_tsc) best.raw = (uint64_t)best.mono_ns;
    return best;
}

/* See clock.h. mult lies in [2^62, 2^63), so that the product of a delta under 2^63 ticks fits
 * 128 bits; a double's 53-bit mantissa fits mult exactly. */
void strobe__clock_set_rate(strobe__clock_conv *c, double ns_per_tick) {
    const double lo = 4611686018427387904.0; /* 2^62 */
    double m = ns_per_tick;
    c->ns_per_tick = ns_per_tick;
    unsigned shift = 0;
    c->mult = 1;
    c->shift = 0;
    if (!(m > 0) || m > 1e18 || m == 1.0) return;
    while (m < lo && shift < 123) { /* doubling is exact */
        m *= 2;
        shift++;
    }
    if (m < lo || shift == 0) return;
    c->mult = (uint64_t)m;
    c->shift = shift;
}

strobe__clock_conv strobe__clock_calibrate(strobe__clock_anchor start, strobe__clock_anchor stop) {
    strobe__clock_conv c;
    c.anchor = start;
    if (!strobe__clock_is_tsc) {
        strobe__clock_set_rate(&c, 1.0);
        return c;
    }
    /* The rate is measured over the longest baseline available: from the process's first anchor
     * to this stop. The events converted lie between the session's start and this stop, inside
     * the baseline, so a rate off by the anchors' jitter over the baseline moves none of them by
     * more than about that jitter (tens of ns), however short the baseline: a baseline under 1 ms
     * is extended to 1 ms only so that the rate strobe reports is not far off. (It was 20 ms, a
     * busy wait at every stop and stream batch of a short process: 20 ms per process of a shell
     * script under strobe record.) */
    strobe__clock_anchor from = first_anchor;
    if (stop.mono_ns - from.mono_ns < 1000000) {
        while ((int64_t)strobe__mono_ns() - from.mono_ns < 1000000) {
        }
        stop = strobe__clock_anchor_now();
    }
    strobe__clock_set_rate(&c,
                           (double)(stop.mono_ns - from.mono_ns) / (double)(stop.raw - from.raw));
    return c;
}
