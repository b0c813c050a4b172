/* strobe/backend.h: events reported by backends that time their own work (delegates, accelerator
 * runtimes), and mapping their clocks onto strobe's. The module (edge) profiler that such events
 * usually go to is strobe/edge.h, which this header includes (it held both before).
 *
 * These are the seed's edge-profiler calls recordBackendEvent and recordBackendMemoryEvent, and
 * the RECORD_BACKEND_*_TO_EDGE_PROFILER macros. Cold-path calls return 0 or a negative STROBE_E*
 * code; the record calls never fail (what cannot be recorded is counted). With
 * -DSTROBE_ENABLED=0 the macros expand to nothing.
 *
 * Contents: clock, backend events, clock maps, macros. */
#ifndef STROBE_BACKEND_H
#define STROBE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "edge.h"
#include "export.h"
#include "op.h"
#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Now on the clock of session times (epoch nanoseconds, the clock of strobe_event.start_ns), also
 * without a session. Backends that can read the host clock report their times with it. */
STROBE_API int64_t strobe_clock_now_ns(void);

/* Records an event a backend timed itself, [start_us, end_us] in microseconds on strobe's clock
 * (strobe_clock_now_ns() / 1000, or mapped with a strobe_clock_map), when a session records.
 * It goes on the backend's own track ("Backend: NAME") with args "Backend" and "Debug handle"
 * (and "Module Hierarchy" when an edge profiler knows the handle). Names are copied. Any thread.
 * An end before the start gives a zero-length event, counted in stats.reversed_backend_events;
 * times outside the session or overlapping an earlier event without nesting are moved, counted in
 * stats.clipped_backend_events. */
STROBE_API void strobe_record_backend_event(int64_t start_us, int64_t end_us, int64_t debug_handle,
                                            const char *event_name, const char *backend_name);
/* The same with nanosecond times. */
STROBE_API void strobe_record_backend_event_ns(int64_t start_ns, int64_t end_ns,
                                               int64_t debug_handle, const char *event_name,
                                               const char *backend_name);
/* A backend's memory event (alloc_size negative for a free), when the session profiles memory:
 * the same "[memory]" event and counters as strobe_record_alloc(). `device` is a
 * STROBE_DEVICE(type, index). */
STROBE_API void strobe_record_backend_memory_event(const void *ptr, int64_t alloc_size,
                                                   int64_t total_allocated, int64_t total_reserved,
                                                   int32_t device);

/* A linear map from a backend's clock (ticks of any unit) to strobe's clock (ns), fitted by least
 * squares over the sample pairs given (the seed's adjust_vulkan_timestamps problem: a device's
 * timestamps on another clock). Take a pair by reading both clocks back to back, at least twice
 * and some time apart for the rate; with one pair, the rate is `ns_per_tick` as initialized. */
typedef struct strobe_clock_map {
    double ns_per_tick; /* the fitted (or initial) rate */
    double offset_ns;   /* strobe_ns = offset_ns + ticks * ns_per_tick */
    /* Internal sums of the fit. */
    double n_, sx_, sy_, sxx_, sxy_;
    int64_t x0_, y0_;
} strobe_clock_map;

/* Starts a map with a nominal rate (1.0 for a nanosecond clock, 1000.0 for microseconds). */
STROBE_API void strobe_clock_map_init(strobe_clock_map *m, double nominal_ns_per_tick);
/* Adds a sample pair: the backend's clock and strobe's (strobe_clock_now_ns()) read together.
 * @return 0 or STROBE_EINVAL (NULL map). */
STROBE_API int strobe_clock_map_add(strobe_clock_map *m, int64_t backend_ticks, int64_t strobe_ns);
/* Maps a backend timestamp to strobe's clock (ns). Without any pair: ticks * nominal rate. */
STROBE_API int64_t strobe_clock_map_apply(const strobe_clock_map *m, int64_t backend_ticks);

#ifdef __cplusplus
}
#endif

/* The seed's macros: record to the current edge profiler, and do nothing when none runs or strobe
 * is compiled out. */
#if STROBE_ENABLED
#define STROBE_RECORD_BACKEND_EVENT_TO_EDGE_PROFILER(start_us, end_us, debug_handle, event_name,   \
                                                     backend_name)                                 \
    do {                                                                                           \
        if (STROBE__UNLIKELY(strobe_is_active()) && strobe_current_edge_profiler() != NULL)        \
            strobe_record_backend_event((start_us), (end_us), (debug_handle), (event_name),        \
                                        (backend_name));                                           \
    } while (0)
#define STROBE_RECORD_BACKEND_MEMORY_EVENT_TO_EDGE_PROFILER(ptr, alloc_size, total_allocated,      \
                                                            total_reserved, device)                \
    do {                                                                                           \
        if (STROBE__UNLIKELY(strobe_is_active()) && strobe_current_edge_profiler() != NULL)        \
            strobe_record_backend_memory_event((ptr), (alloc_size), (total_allocated),             \
                                               (total_reserved), (device));                        \
    } while (0)
#else
#define STROBE_RECORD_BACKEND_EVENT_TO_EDGE_PROFILER(start_us, end_us, debug_handle, event_name,   \
                                                     backend_name)                                 \
    ((void)0)
#define STROBE_RECORD_BACKEND_MEMORY_EVENT_TO_EDGE_PROFILER(ptr, alloc_size, total_allocated,      \
                                                            total_reserved, device)                \
    ((void)0)
#endif

#endif /* STROBE_BACKEND_H */
