/* device.h: the seam between the session and the device backends (CUDA through CUPTI, in
 * src/devices/). The core knows backends only through this table, filled in
 * src/devices/backends.c, so that the dependencies point one way (backends -> core). */
#ifndef STROBE_DEVICE_H
#define STROBE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "strobe/session.h"

typedef struct strobe__device_backend {
    uint32_t activity; /* the strobe_activity bit it traces */
    const char *name;  /* "CUDA" */
    /* Starts tracing for a session whose window opens now. @return 0 when tracing; 1 when the
     * device is not traced (no CUPTI, no driver, no device ...), with one line saying why in
     * `why` (the session goes on with the CPU); or a negative STROBE_E* code, with the reason in
     * `why`, when starting must fail (another profiler owns CUPTI: STROBE_EBUSY; a bad config
     * value: STROBE_EINVAL). Called under the session lock, before threads record. */
    int (*start)(const strobe_config *cfg, char *why, size_t why_size);
    /* Stops tracing: flushes everything, and fills *out with what was recorded in
     * [start_ns, stop_ns] (strobe's clock). The batch stays valid until release(). Warnings (one
     * line each) go through add_warning(ctx, line). @return 0 or STROBE_ENOMEM. */
    int (*stop)(int64_t start_ns, int64_t stop_ns, strobe__gpu_batch *out,
                int (*add_warning)(void *ctx, const char *line), void *ctx);
    /* Frees what stop() returned. */
    void (*release)(void);
    /* Forwards strobe_push_correlation_id / pop to the backend's external correlation (may be
     * NULL). Called on the pushing thread, only while the backend traces. */
    void (*push_external)(uint64_t id);
    void (*pop_external)(void);
} strobe__device_backend;

/* Starts tracing `activity` (a strobe_activity bit) in the running session of this process, for
 * a device whose library initializes after the session started: CUDA's driver calls the tool
 * named by CUDA_INJECTION64_PATH from cuInit (src/devices/cuda). Nothing happens when no session
 * runs (one started later starts its backends itself) or when the session traces the device
 * already. A device that cannot be traced adds a warning to the session, as at start; so does
 * another profiler owning it (the session goes on without it). @return 0 when the device is
 * traced now or nothing had to be done, 1 when it is not traced (the warning says why), or a
 * negative STROBE_E* code (STROBE_ENOMEM). Thread-safe; takes the session lock. */
int strobe__session_add_device(uint32_t activity);

/* The CUDA backend's entry for CUDA's driver, which calls the library named by
 * CUDA_INJECTION64_PATH from the process's first cuInit (src/inject_export.c exports it from
 * libstrobe.so as InitializeInjection; a preloaded library exports its own): the running
 * session starts tracing CUDA from then on (strobe__session_add_device), for a program that
 * loads CUDA late, or links cudart statically, without loading CUDA before it does. Does
 * nothing while a session is starting CUDA itself (its cuInit brought the driver here).
 * @return 1 when the driver should go on (always: a tool that fails must not stop the
 * program). */
int strobe__cuda_inject(void);

/* For `strobe record --capture-range cuda-profiler-api` (src/preload): from now on, `fn` is called
 * on the program's thread at each cuProfilerStart (1, after the driver's call returned) and
 * cuProfilerStop (0, before the driver's call), through CUPTI's driver-API callbacks, so that a
 * program linking cudart statically is caught too. Called from the driver's InitializeInjection
 * (the process's first cuInit). The CUDA backend keeps its CUPTI subscriber from then on, and
 * every session it starts tracing CUDA uses it (CUPTI takes one subscriber per process); it is
 * not finalized at a session's stop. `fn` may start and stop sessions. @return 0, or 1 with why
 * (no CUPTI, another subscriber, a build without the CUPTI headers). */
int strobe__cuda_watch_profiler(void (*fn)(int start), char *why, size_t why_size);

/* The backends this build has, NULL-terminated (src/devices/backends.c). */
extern const strobe__device_backend *const strobe__device_backends[];

#endif
