/* cupti_metrics.h: CUPTI range-profiler metrics per kernel (strobe_config.cuda_metrics), for the
 * CUDA backend (cupti.c). Only for builds with the CUPTI headers.
 *
 * The range profiler runs in auto range mode with kernel replay: CUPTI serializes the kernels of
 * one context and gives each launch a range, numbered in launch order. At stop the ranges are
 * decoded and evaluated, and range i is matched to the i-th kernel that the activity records show
 * on that context: by start time, or by correlation id (launch order) where CUPTI wrote the
 * replayed kernels without timestamps (CUPTI 2025.3 with CUDA 13.0 does; the backend then gives
 * them their launch call's span). A mismatch in counts (records dropped, kernels from before the
 * start) leaves the values out with a warning rather than putting them on the wrong kernels.
 *
 * The host half of the API (cupti_profiler_host.h) includes <string>, a C++ header, so its
 * parameter structs are declared again here, field for field; CUPTI checks each struct's
 * structSize, which keeps the copies honest across versions. */
#ifndef STROBE_CUPTI_METRICS_H
#define STROBE_CUPTI_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* At most this many metric names in cuda_metrics. */
#define STROBE__CUPTI_MAX_METRICS 32
/* The counter data image holds this many ranges (kernels); later ones are dropped and counted. */
#define STROBE__CUPTI_MAX_RANGES 4096

/* What the metrics module needs from the backend: the opened libraries and its error names. */
typedef struct strobe__cupti_metrics_env {
    void *cupti;            /* dlopen handle of libcupti */
    void *cuda;             /* dlopen handle of libcuda.so.1 */
    const char *cupti_path; /* for messages */
    const char *(*cupti_err)(int rc);
    const char *(*cu_err)(int rc);
} strobe__cupti_metrics_env;

/* One metric value for one device record: act indexes the batch's acts, key is the metric's
 * name, json its value (a JSON number). Strings live until strobe__cupti_metrics_release(). */
typedef struct strobe__cupti_metric_arg {
    size_t act;
    const char *key;
    const char *json;
} strobe__cupti_metric_arg;

/* Splits a comma-separated list into names (spaces around names ignored). @return the count
 * (1..STROBE__CUPTI_MAX_METRICS), or STROBE_EINVAL with why (empty list or name, too many, a name
 * too long). `names` receives pointers into `buf`, a copy of the list of `buf_size` bytes. */
int strobe__cupti_metrics_parse(const char *list, char *buf, size_t buf_size, const char **names,
                                char *why, size_t why_size);

/* Sets the range profiler up for the metrics in `list` on the current context of the calling
 * thread (else device 0's primary context, retained until release) and starts it. @return 0;
 * STROBE_EINVAL (a metric name CUPTI rejects, named in why); STROBE_ENOTSUP (the loaded CUPTI lacks
 * the range profiler, or the device or its configuration is not supported: why says which);
 * STROBE_EBUSY (another profiler holds the counters); STROBE_ENOMEM. Nothing is left set up on
 * failure. */
int strobe__cupti_metrics_start(const strobe__cupti_metrics_env *env, const char *list, char *why,
                                size_t why_size);

/* 1 while a session collects metrics (between start and release). */
int strobe__cupti_metrics_active(void);

/* Stops the range profiler and reads every range's values, then tears the profiler down. Before
 * the activity buffers are flushed. Problems become warnings (see _warnings). */
void strobe__cupti_metrics_stop(void);

/* Notes one kernel record of the batch, in record order: its context, correlation id, start
 * (strobe's clock), whether CUPTI gave it no timestamps (`untimed`: start_ns is then its launch's,
 * or meaningless), and its index in the batch's acts (SIZE_MAX when it was left out of the batch).
 * @return 0 or STROBE_ENOMEM. */
int strobe__cupti_metrics_note_kernel(uint32_t context, uint32_t correlation, int64_t start_ns,
                                      int untimed, size_t act);

/* Matches ranges to the noted kernels and makes the args. @return 0 or STROBE_ENOMEM. */
int strobe__cupti_metrics_match(void);

/* The args made by _match (valid until release). */
const strobe__cupti_metric_arg *strobe__cupti_metrics_args(size_t *count);

/* Passes the session's metric warnings to add_warning. @return 0 or what add_warning returned. */
int strobe__cupti_metrics_warnings(int (*add_warning)(void *, const char *), void *ctx);

/* Frees everything of the session (also after a failed start); accepts no session. */
void strobe__cupti_metrics_release(void);

#endif
