/* cupti_convert.h: the pure half of the CUDA backend. One CUPTI activity record becomes a
 * strobe__gpu_act, a strobe__gpu_extcorr or a strobe__gpu_device, with nothing loaded and nothing
 * global, so that tests can feed it records they build themselves (tests/test_cupti.c).
 *
 * Only for builds with the CUPTI headers (STROBE_HAVE_CUPTI_HEADERS): it reads CUPTI's record
 * structs, which no public header ever sees. */
#ifndef STROBE_CUPTI_CONVERT_H
#define STROBE_CUPTI_CONVERT_H

#include <stdint.h>

#include <cupti.h>

#include "core/gpu.h"

/* How a record's names are found. The backend interns and demangles; tests pass their own. */
typedef struct strobe__cupti_names {
    /* The name to keep for a kernel whose record says `mangled` (a string CUPTI owns). NULL
     * function, or NULL returned: the record's own pointer is kept. */
    const char *(*kernel)(void *ctx, const char *mangled);
    /* The name of a runtime (driver = 0) or driver (driver = 1) API call. NULL: no name. */
    const char *(*api)(void *ctx, int driver, uint32_t cbid);
    void *ctx;
} strobe__cupti_names;

/* What strobe__cupti_convert made of a record. */
typedef enum strobe__cupti_out {
    STROBE__CUPTI_NONE = 0,     /* a kind strobe does not use (left out, not counted) */
    STROBE__CUPTI_ACT = 1,      /* *act is filled */
    STROBE__CUPTI_EXT = 2,      /* *ext is filled */
    STROBE__CUPTI_DEVICE = 3,   /* *dev is filled */
    STROBE__CUPTI_FILTERED = 4, /* a noisy API call left out (see strobe__cupti_api_filtered) */
} strobe__cupti_out;

/* Converts one record. Times are CUPTI's plus `offset_ns` (0 when CUPTI stamps with strobe's
 * clock through the timestamp callback). `cuda_flags` are strobe_config.cuda_flags (ALL_API keeps
 * the noisy calls). A record whose end precedes its start ends at its start. Host-side records
 * without a thread (synchronization) get pid = tid = 0: the caller fills them in from the API call
 * with the same correlation id. @return a strobe__cupti_out. */
int strobe__cupti_convert(const CUpti_Activity *rec, uint32_t cuda_flags, int64_t offset_ns,
                          const strobe__cupti_names *names, strobe__gpu_act *act,
                          strobe__gpu_extcorr *ext, strobe__gpu_device *dev);

/* 1 when an API call is one of those Kineto leaves out by default: the runtime's cudaGetDevice,
 * cudaSetDevice, cudaGetLastError, cudaEventCreate, cudaEventCreateWithFlags and
 * cudaEventDestroy; and every driver call but the kernel launches (Kineto keeps cuLaunchKernel and
 * cuLaunchKernelEx, for Triton). 0 otherwise. */
int strobe__cupti_api_filtered(int driver, uint32_t cbid);

/* 1 when `rec` is a kernel record without timestamps (raw start = end = 0): CUPTI writes the
 * kernels the range profiler replays so (CUPTI 2025.3 with CUDA 13.0, kernel replay; correlation
 * id and context are right). 0 otherwise. */
int strobe__cupti_kernel_untimed(const CUpti_Activity *rec);

/* 1 when `rec` is a runtime or driver API call (filtered or not): *correlation, and its span on
 * strobe's clock (CUPTI's times plus offset_ns) in *start_ns and *end_ns. 0 otherwise. */
int strobe__cupti_api_span(const CUpti_Activity *rec, int64_t offset_ns, uint32_t *correlation,
                           int64_t *start_ns, int64_t *end_ns);

/* 1 when `a` started before lo or ended after hi (strobe's clock): it is left out and counted. */
int strobe__cupti_outside(const strobe__gpu_act *a, int64_t lo, int64_t hi);

/* Kineto's name of a synchronization type ("Stream Sync") and of an overhead kind ("Buffer
 * Flush"); static strings. */
const char *strobe__cupti_sync_name(uint32_t type);
const char *strobe__cupti_overhead_name(uint32_t kind);

#endif
