/* backend.c: backend events and backend clock maps (strobe/backend.h). The module (edge) profiler
 * (strobe/edge.h) is a driver beside the core: src/drivers/edge.c.
 *
 * Contents: clock, backend events, clock maps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/result_internal.h"
#include "state.h"
#include "strobe/backend.h"
#include "strobe/error.h"
#include "strobe/result.h"
#include "strobe/session.h"
#include "util/struct_in.h"

/* ---- clock --------------------------------------------------------------------------------- */

int64_t strobe_clock_now_ns(void) {
    int64_t off = __atomic_load_n(&strobe__epoch_offset_ns, __ATOMIC_RELAXED);
    if (off != 0) return (int64_t)strobe__mono_ns() + off;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    strobe__clock_init(); /* the skew knob (clock.h) */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + strobe__clock_skew_ns;
}

/* ---- backend events ------------------------------------------------------------------------ */

void strobe_record_backend_event_ns(int64_t start_ns, int64_t end_ns, int64_t debug_handle,
                                    const char *event_name, const char *backend_name) {
    if (!strobe_is_active()) return;
    strobe__backend_record(start_ns, end_ns, debug_handle, event_name, backend_name);
}

void strobe_record_backend_event(int64_t start_us, int64_t end_us, int64_t debug_handle,
                                 const char *event_name, const char *backend_name) {
    strobe_record_backend_event_ns(start_us * 1000, end_us * 1000, debug_handle, event_name,
                                   backend_name);
}

void strobe_record_backend_memory_event(const void *ptr, int64_t alloc_size,
                                        int64_t total_allocated, int64_t total_reserved,
                                        int32_t device) {
    strobe_record_alloc(device, ptr, alloc_size, total_allocated, total_reserved);
}

/* ---- clock maps ---------------------------------------------------------------------------- */

void strobe_clock_map_init(strobe_clock_map *m, double nominal_ns_per_tick) {
    if (m == NULL) return;
    memset(m, 0, sizeof *m);
    m->ns_per_tick =
        nominal_ns_per_tick > 0 && isfinite(nominal_ns_per_tick) ? nominal_ns_per_tick : 1.0;
}

int strobe_clock_map_add(strobe_clock_map *m, int64_t backend_ticks, int64_t strobe_ns) {
    if (m == NULL) return STROBE_EINVAL;
    /* Sums are taken relative to the first pair, so doubles keep nanosecond precision. */
    if (m->n_ == 0) {
        m->x0_ = backend_ticks;
        m->y0_ = strobe_ns;
    }
    double x = (double)(backend_ticks - m->x0_), y = (double)(strobe_ns - m->y0_);
    m->n_ += 1;
    m->sx_ += x;
    m->sy_ += y;
    m->sxx_ += x * x;
    m->sxy_ += x * y;
    double den = m->n_ * m->sxx_ - m->sx_ * m->sx_;
    if (m->n_ >= 2 && den > 0) {
        double rate = (m->n_ * m->sxy_ - m->sx_ * m->sy_) / den;
        if (rate > 0 && isfinite(rate)) m->ns_per_tick = rate;
    }
    /* offset in the shifted frame: mean(y) - rate * mean(x). */
    m->offset_ns = (m->sy_ - m->ns_per_tick * m->sx_) / m->n_;
    return 0;
}

/* Rounds to the nearest integer, halves away from zero (llround without libm), saturating. */
static int64_t round_ns(double v) {
    if (!(v == v)) return 0;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return v >= 0 ? (int64_t)(v + 0.5) : -(int64_t)(-v + 0.5);
}

int64_t strobe_clock_map_apply(const strobe_clock_map *m, int64_t backend_ticks) {
    if (m == NULL) return 0;
    if (m->n_ == 0) return round_ns((double)backend_ticks * m->ns_per_tick);
    double x = (double)(backend_ticks - m->x0_);
    return m->y0_ + round_ns(m->offset_ns + x * m->ns_per_tick);
}
