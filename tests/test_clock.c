/* test_clock.c: the raw clock's conversion to ns (core/clock.h).
 *
 * strobe__clock_to_ns() multiplies in fixed point. Its result must be the exact product of the
 * delta and the double rate, truncated toward zero (computed here from the double's mantissa and
 * exponent in 128 bits), and within 1 ns of the float formula it replaced where that formula is
 * itself exact to 1 ns; rates the fixed point cannot hold convert as 1 ns per tick. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/clock.h"

/* delta * rate, exact, truncated toward zero. */
static int64_t exact(int64_t delta, double rate) {
    int e = 0;
    double f = frexp(rate, &e); /* rate = f * 2^e, f in [0.5, 1) */
    int64_t m = (int64_t)ldexp(f, 53);
    e -= 53; /* rate = m * 2^e exactly */
    __int128 p = (__int128)(delta < 0 ? -delta : delta) * m;
    p = e >= 0 ? p << e : p >> -e;
    return delta < 0 ? -(int64_t)p : (int64_t)p;
}

static uint64_t rng = 88172645463325252u;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void) {
    const double rates[] = {1.0 / 2.1,   1.0 / 2.45, 1.0 / 3.0,   1.0 / 3.6986, 0.3125,
                            0.123456789, 0.999999,   1.0,         1.0000001,    2.5,
                            7.5,         41.666666,  1.0 / 4.2e3, 1e-9};
    const int64_t anchor_real = INT64_C(1764000000000000000);
    const uint64_t anchor_raw = UINT64_C(5000000000000);
    long checked = 0;
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        strobe__clock_conv c;
        c.anchor.raw = anchor_raw;
        c.anchor.mono_ns = 0;
        c.anchor.real_ns = anchor_real;
        strobe__clock_set_rate(&c, rates[i]);
        CHECK(c.ns_per_tick == rates[i]);
        if (rates[i] == 1.0)
            CHECK(c.shift == 0);
        else
            CHECK(c.shift > 0 && c.mult >= (UINT64_C(1) << 62));
        for (int k = 0; k < 20000; k++) {
            /* Deltas of every size: 0, a few ticks, up to 2^52 ticks (weeks at 3 GHz), both
             * signs (an anchor may follow a record by a few ticks). */
            int64_t delta = (int64_t)(next() >> (11 + next() % 52));
            if (k % 7 == 0) delta = -(delta % 100000);
            if (k == 0) delta = 0;
            uint64_t raw = anchor_raw + (uint64_t)delta;
            int64_t got = strobe__clock_to_ns(&c, raw) - anchor_real;
            int64_t want = exact(delta, rates[i]);
            if (got != want) {
                fprintf(stderr, "rate %.17g delta %lld: got %lld, exact %lld\n", rates[i],
                        (long long)delta, (long long)got, (long long)want);
                return 1;
            }
            if (fabs((double)delta * rates[i]) < 0x1p52) {
                int64_t old = (int64_t)((double)delta * rates[i]);
                CHECK(llabs(got - old) <= 1);
            }
            checked++;
        }
    }
    /* Rates the fixed point cannot hold: 1 ns per tick, never a wild value. */
    const double bad[] = {0.0, -1.0, NAN, INFINITY, 1e19, 1e-30};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strobe__clock_conv c = {{100, 0, 1000}, 0, 0, 0};
        strobe__clock_set_rate(&c, bad[i]);
        CHECK(c.shift == 0 && c.mult == 1);
        CHECK(strobe__clock_to_ns(&c, 150) == 1050);
        CHECK(strobe__clock_to_ns(&c, 40) == 940);
    }
    printf("test_clock: %ld conversions exact\n", checked);
    return check_result();
}
