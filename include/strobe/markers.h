/* strobe/markers.h: strobe's ranges for other tools (markers), and capture ranges for the CUDA
 * profiler API: what torch.mps.profiler does with the platform's signposts and Metal capture,
 * done on Linux with NVTX (Nsight Systems, Nsight Compute), the kernel's trace_marker (ftrace:
 * Perfetto system traces, trace-cmd) and cuProfilerStart/Stop.
 *
 * Markers: while started, every range strobe's instrumentation sees (STROBE_SCOPE, STROBE_OP,
 * strobe_range_begin*, run-time names, ...) also goes to the chosen sinks, with or without a
 * session (a running session records as well, unchanged). When neither markers nor a session are
 * on, the instrumentation costs what it always costs: one relaxed load and a predicted branch.
 *
 * Capture: strobe_capture_begin() / strobe_capture_end() start and stop the CUDA profiler API
 * around a region, so that `nsys profile --capture-range=cudaProfilerApi` or
 * `ncu --profile-from-start off` capture exactly it, and optionally record a strobe session over
 * the same region. STROBE_CAPTURE("path") does both for a scope.
 *
 * Contents: markers (start, stop), capture (enabled, is_capturing, begin, end), scope macro. */
#ifndef STROBE_MARKERS_H
#define STROBE_MARKERS_H

#include "export.h"
#include "instrument.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts markers. `mode`, as torch.mps.profiler spells it (spaces and case ignored): "interval"
 * (a begin and an end per range: NVTX push/pop in the domain "strobe", trace_marker "B|pid|name"
 * and "E|pid"), "event" (one mark when a range ends: NVTX mark, trace_marker "I|pid|name") or
 * "interval,event" (both). `sinks`: "nvtx", "ftrace" or "nvtx,ftrace" (NULL: "nvtx").
 *
 * nvtx reaches the NVTX tool that NVTX_INJECTION64_PATH names (Nsight Systems sets it), as NVTX's
 * own headers do; with no tool it does nothing and costs nothing. Where the variable names strobe
 * itself (strobe is the process's NVTX tool), the nvtx sink stays silent, so that a session does
 * not record each range twice. ftrace writes to tracefs's trace_marker (/sys/kernel/tracing, else
 * /sys/kernel/debug/tracing).
 *
 * `wait_until_completed` nonzero: after each operator range (every record scope but USER_SCOPE)
 * the thread waits for its CUDA context's queued work (cuCtxSynchronize, through the libcuda.so.1
 * the program loaded; nothing when CUDA is not loaded) before the range ends, so that each
 * operator's device work stands alone on the timeline. This distorts timing on purpose: do not
 * read durations from such a run.
 *
 * The environment variable STROBE_MARKERS=MODE[:SINKS] (e.g. "interval,event:nvtx,ftrace") starts
 * markers when the library loads, and STROBE_MARKERS_WAIT=1 adds wait_until_completed, for
 * programs that are not changed (errors go to the log).
 *
 * Thread-safe (cold path). A thread that is inside a marked range's begin or end while another
 * stops markers may still finish that one call; calls made after strobe_markers_stop() returns
 * reach no sink. @return 0, STROBE_EINVAL (a bad mode or sink string), STROBE_EBUSY (markers are
 * already started: stop them first), STROBE_ENOTSUP (a sink cannot be opened: no writable
 * trace_marker; the reason is in the log) or STROBE_ENOMEM. */
STROBE_API int strobe_markers_start(const char *mode, const char *sinks, int wait_until_completed);

/* Stops markers. @return 0, or STROBE_ENOSESSION when markers are not started. */
STROBE_API int strobe_markers_stop(void);

/* Returns 1 while markers are started, else 0. */
STROBE_API int strobe_markers_active(void);

/* Returns 1 when the environment asks for captures (STROBE_CAPTURE_ENABLED=1, as
 * MTL_CAPTURE_ENABLED=1 does for Metal), else 0: a program can test it before it asks for one.
 * strobe_capture_begin() does not require it. */
STROBE_API int strobe_capture_enabled(void);

/* Returns 1 between a successful strobe_capture_begin() and its strobe_capture_end(), else 0. */
STROBE_API int strobe_is_capturing(void);

/* Begins a capture: with `path`, starts a strobe session (CPU and CUDA) that strobe_capture_end()
 * saves to `path` (the format follows the suffix, as strobe_result_save()); then calls
 * cuProfilerStart() of the libcuda.so.1 the program loaded. One capture at a time, per process.
 * @return 0, STROBE_EBUSY (a capture is running: captures do not nest; or, with a path, a session
 * already runs), STROBE_ENOTSUP (CUDA is not loaded in this process: nothing to capture),
 * STROBE_EIO (cuProfilerStart failed; the CUDA error is in the log) or what strobe_start()
 * returns. */
STROBE_API int strobe_capture_begin(const char *path);

/* Ends the capture: waits for the calling thread's CUDA context to drain its queued work
 * (cuCtxSynchronize), calls cuProfilerStop(), then, when begun with a path, stops the session and
 * saves its trace. @return 0, STROBE_ENOSESSION (no capture is running), STROBE_EIO
 * (cuProfilerStop failed) or what strobe_stop() / strobe_result_save() return (the capture is
 * over either way). */
STROBE_API int strobe_capture_end(void);

/* Internal: the cleanup half of STROBE_CAPTURE in C. */
static inline void strobe__capture_cleanup(int *rc) {
    if (*rc == 0) (void)strobe_capture_end();
}

#ifdef __cplusplus
} /* extern "C" */

/* A capture for the lifetime of an object (C++): begun by the constructor, ended by the
 * destructor when it began. status() is strobe_capture_begin()'s result. */
class strobe_capture_guard {
  public:
    explicit strobe_capture_guard(const char *path) : rc_(strobe_capture_begin(path)) {}
    ~strobe_capture_guard() {
        if (rc_ == 0) (void)strobe_capture_end();
    }
    int status() const { return rc_; }
    strobe_capture_guard(const strobe_capture_guard &) = delete;
    strobe_capture_guard &operator=(const strobe_capture_guard &) = delete;

  private:
    int rc_;
};
#endif

#if STROBE_ENABLED
/* A capture that ends with the enclosing block (C++, or C with GCC or Clang); compiled out with
 * STROBE_ENABLED=0. `path` may be NULL (the CUDA profiler API only). */
#ifdef __cplusplus
#define STROBE_CAPTURE(path) strobe_capture_guard STROBE__CAT(strobe__capture_, STROBE__ID())(path)
#elif defined(__GNUC__) || defined(__clang__)
#define STROBE_CAPTURE(path)                                                                       \
    int STROBE__CAT(strobe__capture_, STROBE__ID())                                                \
        __attribute__((cleanup(strobe__capture_cleanup), unused)) = strobe_capture_begin(path)
#endif
#else
#define STROBE_CAPTURE(path) ((void)0)
#endif

#endif /* STROBE_MARKERS_H */
