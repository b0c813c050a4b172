/* strobe/session.h: configuring, starting and stopping a profiling session.
 *
 * One session per process at a time: strobe_start() ... strobe_stop(). Cold path: every call
 * returns 0 or a negative STROBE_E* code (see error.h) and is thread-safe unless noted. The library
 * never prints on its own: diagnostics go to the log sink set with strobe_set_log_fn(). */
#ifndef STROBE_SESSION_H
#define STROBE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strobe_result strobe_result;

/* Activities a session can trace (bit mask). CPU is always traced. CUDA is traced through CUPTI,
 * loaded at start (see strobe_config's cuda_* fields); where it cannot be (no driver, CUPTI or
 * device), the session goes on with the CPU and a warning in the result and the trace says why.
 * XPU, HPU, MTIA and PrivateUse1 have no backend in this build: asking for one profiles the CPU,
 * with such a warning. A config without CPU is rejected with STROBE_ENOTSUP. */
typedef enum strobe_activity {
    STROBE_ACTIVITY_CPU = 1u << 0,
    STROBE_ACTIVITY_CUDA = 1u << 1,
    STROBE_ACTIVITY_XPU = 1u << 2,
    STROBE_ACTIVITY_HPU = 1u << 3,
    STROBE_ACTIVITY_MTIA = 1u << 4,
    STROBE_ACTIVITY_PRIVATEUSE1 = 1u << 5
} strobe_activity;

/* Which threads record. ALL: every thread of the process (global mode). OPT_IN: only the thread
 * that called strobe_start() and threads that call strobe_enable_in_child_thread() (the seed's
 * per-thread mode). */
typedef enum strobe_thread_mode {
    STROBE_THREADS_ALL = 0,
    STROBE_THREADS_OPT_IN = 1
} strobe_thread_mode;

/* All record scopes: the default of strobe_config.scopes. */
#define STROBE_SCOPES_ALL 0xffu
/* The bit of one record scope in strobe_config.scopes. */
#define STROBE_SCOPE_BIT(scope) (1u << (scope))

/* Called by strobe_stop() after the result is built and before it is handed back. It may enrich
 * events (strobe_event_set_arg(), strobe_event_set_name()). Runs on the thread calling stop. */
typedef void (*strobe_postprocess_fn)(strobe_result *result, void *ctx);

/* A session's configuration. Fill it with strobe_config_init() first, then change what you need.
 * Later versions add fields at the end only (README, "ABI and versions"): the library reads
 * struct_size bytes of it, and gives the fields a program compiled against older headers does not
 * have their defaults. */
typedef struct strobe_config {
    /* sizeof(strobe_config) in the headers the program was compiled with: set by
     * strobe_config_init(), not by hand. Every call that takes a config refuses one below
     * STROBE_CONFIG_MIN_SIZE, 0 included, with STROBE_EINVAL. */
    size_t struct_size;
    uint32_t activities;            /* strobe_activity bits; default CPU */
    uint32_t scopes;                /* STROBE_SCOPE_BIT()s to keep; default STROBE_SCOPES_ALL */
    strobe_thread_mode thread_mode; /* default STROBE_THREADS_ALL */
    size_t buffer_bytes;    /* cap on record buffer memory; default 512 MiB. Reaching it drops and
                               counts records, never blocks. */
    size_t chunk_bytes;     /* per-thread chunk size, 4 KiB .. 16 MiB; default 64 KiB */
    size_t prefault_bytes;  /* buffer bytes faulted in at start, so that the first records take
                               no page faults; default 32 MiB (capped by buffer_bytes); 0: none */
    const char *trace_id;   /* copied; NULL: a random 128-bit hex id is generated */
    const char *trace_name; /* "traceName" in the trace; copied; NULL: none */
    strobe_postprocess_fn postprocess; /* NULL: none */
    void *postprocess_ctx;
    /* Operator details (op.h), each off by default and free when off. */
    int record_shapes;  /* keep ranges' inputs: "Input Dims", "Input type", "Concrete Inputs" */
    int profile_memory; /* keep memory events: "[memory]" instants and allocation counters */
    int with_stack;     /* capture the native call stack at every range begin: "Call stack" */
    int with_flops;     /* keep ranges' FLOP counts (given, or computed from inputs): "flops" */
    int with_modules;   /* keep module scopes: "Module Hierarchy" */
    int stack_depth;    /* frames kept per stack, 1 .. 64; default 16 */
    /* perf events counted per range, comma-separated (copied): "cycles", "instructions",
     * "cache-references", "cache-misses", "branches", "branch-misses", "bus-cycles",
     * "ref-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "task-clock",
     * "cpu-clock", "page-faults", "minor-faults", "major-faults", "context-switches",
     * "cpu-migrations", "alignment-faults", "emulation-faults"; at most 8. Each range gets
     * its deltas as args named like the event. An unknown name fails start with STROBE_EINVAL;
     * an event this machine cannot count is skipped with a warning in the result. NULL: none. */
    const char *perf_events;
    /* CUDA (activities & STROBE_ACTIVITY_CUDA), traced through CUPTI loaded at start. */
    size_t cuda_buffer_bytes; /* cap on CUPTI activity buffers, all allocated at start so that no
                                 buffer is requested while the window is open; default 64 MiB,
                                 at least 1 MiB. Records that do not fit are dropped and counted
                                 (stats.cuda_dropped_records). */
    uint32_t cuda_flags;      /* STROBE_CUDA_* bits; default 0 */
    /* Experimental (the seed's CUPTI range-profiler metrics): comma-separated metric names
     * ("sm__cycles_elapsed.avg,smsp__inst_executed.sum", at most 32), measured per kernel and
     * added to each kernel event as args named after the metrics. Part of CUDA tracing: where
     * CUDA cannot be traced at all (no driver, CUPTI or device), the session goes on with the CPU
     * and a warning, as without metrics. Where CUDA is traced but the metrics cannot be
     * collected (a CUPTI before 12.6, a device before Turing, counters restricted to
     * administrators), start fails with STROBE_ENOTSUP; a name CUPTI does not know, or an empty
     * one, fails it with STROBE_EINVAL; the log says which and why. The range profiler
     * serializes and replays kernels of the context it measures (the calling thread's, else
     * device 0's primary context): expect kernels to run slower. Where CUPTI then records a
     * kernel without timestamps (CUPTI 2025.3 with CUDA 13.0 does), its event spans its launch
     * call (which waited for every replay) and has the arg "timestamps": "launch (kernel
     * replay)": not the kernel's own duration. Per range
     * (STROBE_CUDA_METRICS_PER_RANGE) is not supported yet (STROBE_ENOTSUP). NULL: none. */
    const char *cuda_metrics;
    /* Streaming (see docs/GUIDE.md, "Streaming and the flight recorder"): the file strobe writes
     * while the session runs (copied). A background thread turns every full chunk into events and
     * appends them, so memory stays within buffer_bytes whatever the duration; the hot path never
     * waits for it, and drops and counts records when the disk falls behind. The file is a
     * complete JSON trace after every append (complete events, written when each range ends), so
     * a process that dies leaves a trace that opens. Paths ending in .pftrace or .perfetto-trace
     * get Perfetto's protobuf format instead (slice begins and ends as whole packets, so a cut
     * file imports up to its last packet); any other path is JSON.
     * Operator details (shapes, flops, stacks, perf counters, modules) are written with their
     * range when it ends, and backend events on their backends' tracks, as in a saved trace.
     * Device activity (CUDA) is not streamed while the session runs: strobe_stop() merges it
     * into the result and appends it to the file before closing it. strobe_stop() then returns
     * a result with no CPU events: its threads, device events, stats (drops, repairs), warnings
     * and metadata, with the stream's counts under the metadata key "strobe_stream": events and
     * bytes written, drops, write errors, and what was left out and counted (unknown detail
     * records, counter samples that are not finite numbers, backend events that fit no lane).
     * NULL: no streaming (default). */
    const char *stream_path;
    /* Flight recorder: keep only the most recent chunks, at most ring_bytes of them (0: half of
     * buffer_bytes) and, when ring_ms is nonzero, none that closed more than ring_ms ago. The
     * window is written out by strobe_flight_dump() or flight_signal, and strobe_stop() returns
     * it as the result. On when ring_bytes or ring_ms is nonzero; not with stream_path
     * (STROBE_EINVAL). ring_bytes may not exceed buffer_bytes (STROBE_EINVAL). Defaults 0. */
    size_t ring_bytes;
    uint32_t ring_ms;
    /* A signal (e.g. SIGUSR2) that dumps the flight recorder's window to flight_path; the handler
     * only sets a flag and wakes the background thread (a futex). The previous handler is restored
     * at stop. 0: none (default). Only with the flight recorder (else STROBE_EINVAL). */
    int flight_signal;
    /* Where a flight_signal dump goes (copied; replaced by each dump, through a temporary file
     * and rename). NULL: "strobe_flight_<pid>.json" in the working directory. */
    const char *flight_path;
    /* CPU sampling: every thread of the process (those that exist at start, and those created
     * later, which need not call strobe) is sampled this many times per second of its CPU time,
     * with its user-space call stack (see cpu_sample_call_graph: DWARF unwinding where built in,
     * else frame pointers, walked by the kernel), through perf_event_open (the software
     * cpu-clock event, task-clock where it is missing). Each sample becomes an instant of
     * category "cpu_sample" on its thread, named after the sampled function, with its "Call
     * stack" (symbolized at stop), inside the ranges open then; Perfetto traces carry them as
     * Perfetto's CPU samples. The trace's metadata "strobe_cpu_sampling" gives the event, the
     * rate and the samples kept and lost. Where perf_event_open is refused (seccomp,
     * perf_event_paranoid 3), the session goes on without samples, with a warning. With
     * stream_path, samples are appended at stop (like device activity); with the flight recorder,
     * dumps have none and the result at stop has all. 0: off (default);
     * 1 .. STROBE_CPU_SAMPLE_HZ_MAX, else STROBE_EINVAL; STROBE_CPU_SAMPLE_HZ_DEFAULT (1000) is a
     * good rate. */
    uint32_t cpu_sample_hz;
    /* A cap on the size of the stream_path file, in bytes (a guard against a runaway program
     * filling the disk, e.g. one whose `strobe record` was killed). When an append of events would
     * take the file past the cap, that append keeps only the events that fit, and every later
     * event is left out and counted: "strobe_stream" then says "capped": true, with the events
     * left out in "capped_events" (also counted in "lost_events"). The file's footer (the stats
     * and metadata) is still written after the last event, and may take the file past the cap by
     * its own size, so that the file stays a whole trace. Only with stream_path (else
     * STROBE_EINVAL); 0: no cap (default). */
    uint64_t stream_max_bytes;
    /* With cpu_sample_hz, in a process that runs CPython 3.11 or 3.12 (found at start), each
     * sample's stack also has the Python frames of its thread, named as torch names them
     * ("file.py(line): function"), in place of the interpreter's _PyEval_EvalFrameDefault frames
     * that run them (Python frames no native frame shows come below the native ones). Each
     * sample then sends its thread a SIGTRAP, which strobe handles (a program's own SIGTRAP
     * handler keeps getting the others); "strobe_cpu_sampling" says how many samples got
     * Python frames, under "python_frames". Nonzero: no Python frames. Default 0 (on). */
    int no_python_frames;
    /* How CPU samples' call stacks are taken (with cpu_sample_hz), as perf's --call-graph:
     * STROBE_CALL_GRAPH_FP: the kernel walks frame pointers (cheap; code built without them, as
     * most distribution libraries are, gives short stacks and unknown frames).
     * STROBE_CALL_GRAPH_DWARF: each sample also copies cpu_sample_stack_bytes of the thread's
     * stack and its registers, and strobe's sampling thread walks them with the modules' call
     * frame information (elfutils' libdw, opened at run time), keeping only the addresses; where
     * a walk stops early (a stack deeper than the copy), the frame-pointer chain completes it
     * where the two agree. Where DWARF unwinding is not built in or libdw.so.1 is missing,
     * frame pointers are used, with a warning. STROBE_CALL_GRAPH_DEFAULT (0, default): DWARF
     * where it is built in, else frame pointers. Other values: STROBE_EINVAL. */
    uint32_t cpu_sample_call_graph;
    /* DWARF mode's stack copy per sample, in bytes (rounded up to 8): 0 (default) is
     * STROBE_CPU_SAMPLE_STACK_DEFAULT (8192, perf's default); at most STROBE_CPU_SAMPLE_STACK_MAX
     * (else STROBE_EINVAL). */
    uint32_t cpu_sample_stack_bytes;
} strobe_config;

/* strobe_config.cpu_sample_call_graph. */
#define STROBE_CALL_GRAPH_DEFAULT 0u
#define STROBE_CALL_GRAPH_FP 1u
#define STROBE_CALL_GRAPH_DWARF 2u
/* strobe_config.cpu_sample_stack_bytes: the default, and the largest the kernel takes. */
#define STROBE_CPU_SAMPLE_STACK_DEFAULT 8192u
#define STROBE_CPU_SAMPLE_STACK_MAX 65528u

/* Whether CPU samples can be unwound with DWARF in this process (STROBE_CALL_GRAPH_DWARF): 1, or
 * 0 with the reason, one line, in why (not built in, libdw.so.1 missing, an architecture
 * without support). Thread-safe. */
STROBE_API int strobe_cpu_sample_dwarf_available(char *why, size_t why_size);

/* strobe_config.cuda_flags. */
#define STROBE_CUDA_SYNC 0x1u              /* record synchronization (cuda_sync events) */
#define STROBE_CUDA_ALL_API 0x2u           /* keep the noisy runtime calls Kineto leaves out */
#define STROBE_CUDA_NO_DRIVER_API 0x4u     /* leave out driver API calls */
#define STROBE_CUDA_METRICS_PER_RANGE 0x8u /* cuda_metrics per range: not supported yet */

/* strobe_config.cpu_sample_hz: the rate to use when none is given (`strobe record --sample`), and
 * the largest accepted. */
#define STROBE_CPU_SAMPLE_HZ_DEFAULT 1000u
#define STROBE_CPU_SAMPLE_HZ_MAX 10000u

/* The smallest struct_size a config may have: the layout through postprocess_ctx, whose fields
 * every strobe_config has. Fields past it that a program does not have take their defaults. */
#define STROBE_CONFIG_MIN_SIZE                                                                     \
    (offsetof(strobe_config, postprocess_ctx) + sizeof(((strobe_config *)0)->postprocess_ctx))

/* Called by strobe_config_init(), not directly: writes the library's defaults into the first `size`
 * bytes of *cfg and sets cfg->struct_size to `size`; never writes past `size`. Bytes past the
 * library's own layout (a program built against newer headers) are left as they are. */
STROBE_API void strobe__config_defaults(strobe_config *cfg, size_t size);

/* Fills *cfg with the defaults above and sets struct_size. Inline, so that struct_size is the size
 * the program was compiled with: zeroes the whole struct (fields the running library does not know
 * stay 0, "not asked for"), then takes the library's defaults for the rest. */
static inline void strobe_config_init(strobe_config *cfg) {
    if (cfg == NULL) return;
    memset(cfg, 0, sizeof *cfg);
    strobe__config_defaults(cfg, sizeof *cfg);
}

/* Starts the session. @return 0, STROBE_EINVAL (bad config, struct_size below
 * STROBE_CONFIG_MIN_SIZE), STROBE_EBUSY (a session already runs), STROBE_ENOTSUP (no CPU activity,
 * or a config from newer headers that sets a field this library does not have), STROBE_EIO
 * (stream_path cannot be written), STROBE_ENOMEM or STROBE_ESYS. The calling thread is enabled in
 * both thread modes. */
STROBE_API int strobe_start(const strobe_config *cfg);

/* Makes a session without recording yet: everything strobe_start() does that costs time (buffer
 * reservation and prefault, perf and device setup) happens now, and strobe_start_prepared()
 * then opens the window at once (a schedule's warm-up). strobe_stop() ends a prepared session
 * too (its result is empty). @return as strobe_start(). */
STROBE_API int strobe_prepare(const strobe_config *cfg);
/* Opens the window of the prepared session. @return 0, STROBE_ENOSESSION (none prepared) or
 * STROBE_EBUSY (already recording). */
STROBE_API int strobe_start_prepared(void);

/* Stops the session: quiesces writers, collects every thread's records (also from threads that
 * exited), closes ranges still open (flagged unfinished), and builds the result. On success
 * *out owns the result: free it with strobe_result_free(). @return 0, STROBE_EINVAL (out is NULL),
 * STROBE_ENOSESSION, STROBE_EFORK (called in a child after fork()), or STROBE_ENOMEM. */
STROBE_API int strobe_stop(strobe_result **out);

/* Writes the flight recorder's current window (the chunks it keeps, then each thread's current
 * chunk as far as the thread has written it: the newest records too) to `path`, as
 * strobe_result_save() would write a result: the format follows the suffix. Recording goes on
 * meanwhile; ranges whose begin fell out of the window are left out (counted in
 * stats.unmatched_ends), ranges still open end at the dump, flagged unfinished. Thread-safe; not
 * async-signal-safe (use flight_signal from a signal). @return 0, STROBE_ENOSESSION (no session, or
 * it has no flight recorder), STROBE_EINVAL (path NULL), STROBE_ENOMEM or STROBE_EIO. */
STROBE_API int strobe_flight_dump(const char *path);

/* Returns 1 while a session runs in this process (started and not stopped), else 0. */
STROBE_API int strobe_is_running(void);

/* Adds a top-level metadata entry to the session's trace. `json_value` must be one valid JSON
 * value (it is checked and copied); a key given twice keeps the last value. @return 0,
 * STROBE_ENOSESSION, STROBE_EINVAL (NULL or empty key, or a key strobe writes itself: Kineto's
 * schemaVersion, deviceProperties, traceEvents, ..., and "strobe", "strobe_perf_events",
 * "strobe_stream", "strobe_gpu_clock", "strobe_cpu_sampling") or STROBE_EJSON. */
STROBE_API int strobe_add_metadata_json(const char *key, const char *json_value);

/* Per-thread mode (STROBE_THREADS_OPT_IN): enables / disables recording on the calling thread for
 * the running session (the seed's enableProfilerInChildThread / disableProfilerInChildThread).
 * @return 0 or STROBE_ENOSESSION. In global mode enabling is a no-op and disabling stops the
 * calling thread from recording for the rest of the session. */
STROBE_API int strobe_enable_in_child_thread(void);
STROBE_API int strobe_disable_in_child_thread(void);

/* Returns 1 when a session runs and the thread that started it records
 * (isProfilerEnabledInMainThread), else 0. */
STROBE_API int strobe_is_enabled_in_main_thread(void);

typedef enum strobe_log_level {
    STROBE_LOG_DEBUG = 0,
    STROBE_LOG_INFO = 1,
    STROBE_LOG_WARN = 2,
    STROBE_LOG_ERROR = 3
} strobe_log_level;

/* A log sink. `msg` is one line without a newline, valid only during the call. */
typedef void (*strobe_log_fn)(strobe_log_level level, const char *msg, void *ctx);

/* Replaces the log sink (NULL: discard, the default). Safe while other threads log (the on-demand
 * endpoint's thread logs at any time): each message goes to the old sink or the new one, though a
 * message logged during the change may reach the new function with the old ctx. The sink may be
 * called with strobe's internal locks held: it must not call strobe functions. */
STROBE_API void strobe_set_log_fn(strobe_log_fn fn, void *ctx);

/* A ready sink that prints "strobe: LEVEL: msg" to stderr for levels >= (intptr_t)ctx. */
STROBE_API void strobe_log_stderr(strobe_log_level level, const char *msg, void *ctx);

/* Returns the version of the running library, "MAJOR.MINOR.PATCH": the STROBE_VERSION_STRING
 * (version.h) it was built with, which may differ from the headers a program was compiled
 * against. */
STROBE_API const char *strobe_version(void);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_SESSION_H */
