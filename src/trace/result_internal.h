/* result_internal.h: the layout of strobe_result, shared by the core (which builds it), the
 * writers and the analysis code (which read it). Not installed. */
#ifndef STROBE_RESULT_INTERNAL_H
#define STROBE_RESULT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "strobe/result.h"
#include "util/strpool.h"

typedef struct strobe__meta {
    const char *key;  /* in the result's pool */
    const char *json; /* one valid JSON value, in the result's pool */
} strobe__meta;

struct strobe_result {
    int64_t trace_start_ns; /* epoch ns: the session's start; also "baseTimeNanoseconds" */
    int64_t trace_end_ns;   /* epoch ns: the session's stop */
    int64_t pid;
    strobe_event *events; /* from strobe__result_alloc_events() */
    size_t event_count;
    size_t events_map_bytes;
    strobe_thread_info *threads; /* malloc'ed */
    size_t thread_count;
    strobe_stats stats;
    const char *trace_id;   /* never NULL */
    const char *trace_name; /* NULL: none */
    strobe__meta *meta;     /* user metadata, insertion order, keys unique */
    size_t meta_count;
    const char **warnings;
    size_t warning_count;
    const char *clock_source; /* "tsc" or "clock_monotonic" */
    double clock_ns_per_tick; /* the calibration used (1.0 for clock_monotonic) */
    int saved;
    const char *device_props; /* "deviceProperties": a JSON array (in the pool), NULL: [] */
    /* Per thread (index), torch's RecordFunction id of the thread where the torch observer
     * recorded ops on it, 0 elsewhere (malloc'ed, torch_tid_count entries; NULL: none). It links
     * forward ops to their backward ones ("fwdbwd" flows, strobe__fwdbwd_plan()). */
    uint64_t *torch_tids;
    size_t torch_tid_count;
    strobe__pool pool; /* owns every string and arg of the result */
};

/* Allocates an empty result (zeroed, pool ready, pid = getpid(), trace_id = ""). NULL on ENOMEM. */
strobe_result *strobe__result_alloc(void);
/* Allocates r->events for `count` zeroed events (mapped memory) and sets r->event_count.
 * @return 0 or STROBE_ENOMEM. */
int strobe__result_alloc_events(strobe_result *r, size_t count);
/* The same, faulted in at once (populate) or left for the caller to fault in as it goes. */
int strobe__result_map_events(strobe_result *r, size_t count, int populate);
/* Appends a warning (copied). @return 0 or STROBE_ENOMEM. */
int strobe__result_add_warning(strobe_result *r, const char *msg);
/* Returns 1 for a top-level key strobe writes itself, which user metadata may not use: 2 for the
 * keys the writers make from the result's fields ("schemaVersion", "traceEvents", ...), 1 for
 * those strobe stores as metadata entries ("strobe_perf_events", "strobe_stream", ...); 0 for a
 * user's key. */
int strobe__meta_key_reserved(const char *key);
/* Appends or replaces a metadata entry (both copied; json must be valid). @return 0 or ENOMEM. */
int strobe__result_set_meta(strobe_result *r, const char *key, const char *json);

/* Adds an arg to event `index` without checking the JSON (the caller made it). `key` must live as
 * long as the result (a literal, or in its pool); `json` is copied into the pool when `copy`. An
 * existing key keeps its value unless `replace`. @return 0 or STROBE_ENOMEM. */
int strobe__event_put_arg(strobe_result *r, size_t index, const char *key, const char *json,
                          int copy, int replace);
/* The same for an event not (yet) in r->events, whose args still live in r's pool. */
int strobe__event_add_arg(strobe_result *r, strobe_event *e, const char *key, const char *json,
                          int copy, int replace);

/* Sets thread `index`'s torch thread id (see torch_tids). @return 0 or STROBE_ENOMEM. */
int strobe__result_set_torch_tid(strobe_result *r, size_t index, uint64_t torch_tid);

#endif /* STROBE_RESULT_INTERNAL_H */
