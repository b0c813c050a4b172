/* clock.h: the raw clock of the hot path and its conversion to nanoseconds.
 *
 * The hot path reads the TSC where it is invariant (constant rate, not stopped in sleep states,
 * synchronized across cores), else CLOCK_MONOTONIC through the vDSO. Raw values become epoch
 * nanoseconds at stop, with a calibration: an anchor (raw, monotonic, realtime) read at start and
 * the tick rate measured between the process's first clock reading and the stop reading.
 * STROBE_CLOCK=monotonic in the environment forces the vDSO clock.
 *
 * STROBE_CLOCK_SKEW_NS=N (a test knob, docs/GUIDE.md): N nanoseconds (signed) are added to the
 * realtime side of every anchor, and so to every time the process's traces hold and to
 * strobe_clock_now_ns(): tests skew one process's clock against the others' on one machine. */
#ifndef STROBE_CLOCK_H
#define STROBE_CLOCK_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define STROBE__HAVE_TSC 1
#else
#define STROBE__HAVE_TSC 0
#endif
#include <time.h>

/* Nonzero when the raw clock is the TSC. Set once by strobe__clock_init(). */
extern __attribute__((visibility("hidden"))) int strobe__clock_is_tsc;
/* STROBE_CLOCK_SKEW_NS, read once by strobe__clock_init() (0 when unset or malformed). */
extern __attribute__((visibility("hidden"))) int64_t strobe__clock_skew_ns;

static inline uint64_t strobe__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The hot path's timestamp. */
static inline uint64_t strobe__now_raw(void) {
#if STROBE__HAVE_TSC
    if (__builtin_expect(strobe__clock_is_tsc, 1)) return __rdtsc();
#endif
    return strobe__mono_ns();
}

/* A simultaneous reading of the raw clock and the system clocks. */
typedef struct strobe__clock_anchor {
    uint64_t raw;
    int64_t mono_ns;
    int64_t real_ns;
} strobe__clock_anchor;

/* Conversion from raw values to epoch ns: real = anchor.real_ns + (raw - anchor.raw) * ns_per_tick.
 */
typedef struct strobe__clock_conv {
    strobe__clock_anchor anchor;
    double ns_per_tick;
    /* The same rate in fixed point, ns_per_tick * 2^shift (shift 0: the rate is exactly 1): the
     * conversion multiplies integers (stop converts every record; the float conversions took a
     * third of its decoding). 63 bits of rate: finer than the double. */
    uint64_t mult;
    unsigned shift;
} strobe__clock_conv;

/* Chooses the raw clock (idempotent, thread-safe). */
void strobe__clock_init(void);
/* Reads an anchor, keeping the tightest of a few tries. */
strobe__clock_anchor strobe__clock_anchor_now(void);
/* Builds the conversion for a session that started at `start` and stops now (`stop`). */
strobe__clock_conv strobe__clock_calibrate(strobe__clock_anchor start, strobe__clock_anchor stop);

/* Sets the conversion's rate, ns_per_tick and its fixed-point form (1.0: shift 0). A rate
 * outside [2^-61, 1e18] (or not a number) converts as 1 ns per tick. */
void strobe__clock_set_rate(strobe__clock_conv *c, double ns_per_tick);

/* anchor.real_ns + (raw - anchor.raw) * ns_per_tick, the product exact and truncated toward
 * zero. */
static inline int64_t strobe__clock_to_ns(const strobe__clock_conv *c, uint64_t raw) {
    int64_t delta = (int64_t)(raw - c->anchor.raw);
    if (c->shift == 0) return c->anchor.real_ns + delta;
    /* Truncated toward zero, as a float conversion would. */
    __int128 prod = (__int128)(delta < 0 ? -delta : delta) * (__int128)c->mult;
    int64_t ns = (int64_t)(prod >> c->shift);
    return c->anchor.real_ns + (delta < 0 ? -ns : ns);
}

#endif
