/* device.h: the seam between the session and the device backends (CUDA through CUPTI, in
 * src/devices/). The core knows backends only through this table, filled in src/backends.c, so that
 * the dependencies point one way (backends -> core). */
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

/* The backends this build has, NULL-terminated (src/backends.c). */
extern const strobe__device_backend *const strobe__device_backends[];

#endif
