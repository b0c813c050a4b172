/* strobe/edge.h: the module (edge) profiler: a session bound to one model run that writes its
 * trace when the run ends, and resolves the debug handles of backend events (strobe/backend.h)
 * to module paths.
 *
 * These are the seed's edge-profiler calls (the profiler's begin and end, getCurrentEdgeProfiler).
 * Cold-path calls return 0 or a negative STROBE_E* code. */
#ifndef STROBE_EDGE_H
#define STROBE_EDGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "export.h"
#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strobe_edge_profiler strobe_edge_profiler;

/* How to profile one module run. Fill with strobe_edge_config_init(). Later versions add fields at
 * the end only, 0 meaning their default (README, "ABI and versions"). */
typedef struct strobe_edge_config {
    size_t struct_size;      /* sizeof(strobe_edge_config) in the program's headers; set by init */
    const char *name;        /* the run's name: a root range and the trace's name; copied */
    const char *output_path; /* the trace written at end (.json or .json.gz); copied */
    int record_shapes, profile_memory, with_stack, with_flops, with_modules; /* as strobe_config */
    const char *perf_events;                                                 /* as strobe_config */
    size_t buffer_bytes; /* 0: the default of strobe_config */
} strobe_edge_config;

/* The smallest struct_size taken: the first layout, through buffer_bytes. */
#define STROBE_EDGE_CONFIG_MIN_SIZE                                                                \
    (offsetof(strobe_edge_config, buffer_bytes) + sizeof(((strobe_edge_config *)0)->buffer_bytes))

/* Zeroes *cfg (every field's default) and sets struct_size. */
static inline void strobe_edge_config_init(strobe_edge_config *cfg) {
    if (cfg == NULL) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->struct_size = sizeof *cfg;
}

/* Begins profiling a module run on the calling thread: starts a session with the config's flags
 * and opens a range named cfg->name (and, with with_modules, the module scope cfg->name).
 * @return 0 and *out, STROBE_EINVAL (NULL cfg, name or path, struct_size below
 * STROBE_EDGE_CONFIG_MIN_SIZE), STROBE_ENOTSUP (a config from newer headers sets a field this
 * library lacks), STROBE_EBUSY (a session already runs), or strobe_start()'s errors. */
STROBE_API int strobe_edge_profiler_begin(const strobe_edge_config *cfg,
                                          strobe_edge_profiler **out);
/* Registers debug handle -> module path pairs (copied; a handle given twice keeps the last path):
 * backend events with these handles get their path as "Module Hierarchy". Call between begin and
 * end, from any thread. @return 0, STROBE_EINVAL or STROBE_ENOMEM. */
STROBE_API int strobe_edge_profiler_register_handles(strobe_edge_profiler *p,
                                                     const int64_t *handles,
                                                     const char *const *module_paths, size_t n);
/* Ends the run: closes the root range, stops the session, resolves debug handles, writes the trace
 * to the output path and frees the profiler (on the thread that began it). When `out` is not
 * NULL, the result is handed over too (free it with strobe_result_free()), also when the trace
 * could not be written: *out is NULL only when stop gave no result. @return 0, or the first error
 * of stop, handle resolution or save (the profiler is freed in any case). */
STROBE_API int strobe_edge_profiler_end(strobe_edge_profiler *p, strobe_result **out);

/* The edge profiler whose run is in progress, or NULL (getCurrentEdgeProfiler). */
STROBE_API strobe_edge_profiler *strobe_current_edge_profiler(void);

#ifdef __cplusplus
}
#endif

#endif /* STROBE_EDGE_H */
