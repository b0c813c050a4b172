/* gpu.h: device activity as a backend hands it to the core, and the pure translation of that
 * activity into result events (gpu.c).
 *
 * A device backend (src/devices/cuda/cupti.c for CUDA) translates its own records (CUPTI activity
 * records) into strobe__gpu_act values, with every time already on strobe's clock (epoch ns, the
 * clock of strobe_event.start_ns). strobe__gpu_merge() then adds them to a result whose CPU events
 * are built: device work on one track per (device, stream), runtime and driver calls on the CPU
 * thread that made them, nested in the range that made them, "External id" taken from that
 * range, "correlation" on both sides, gpu_user_annotation spans, deviceProperties. Nothing here
 * needs CUDA: tests build the records themselves. */
#ifndef STROBE_GPU_H
#define STROBE_GPU_H

#include <stddef.h>
#include <stdint.h>

struct strobe_result;

typedef enum strobe__gpu_kind {
    STROBE__GPU_KERNEL = 0,   /* cat "kernel", on (device, stream) */
    STROBE__GPU_MEMCPY = 1,   /* cat "gpu_memcpy", on (device, stream) */
    STROBE__GPU_MEMSET = 2,   /* cat "gpu_memset", on (device, stream) */
    STROBE__GPU_RUNTIME = 3,  /* cat "cuda_runtime", on the CPU thread tid */
    STROBE__GPU_DRIVER = 4,   /* cat "cuda_driver", on the CPU thread tid */
    STROBE__GPU_SYNC = 5,     /* cat "cuda_sync", on the CPU thread tid (stream/event waits) */
    STROBE__GPU_OVERHEAD = 6, /* cat "overhead", on the CPU thread tid ("CUPTI overhead" ...) */
} strobe__gpu_kind;

/* Copy directions (the seed's names: "Memcpy HtoD (Pageable -> Device)"). */
typedef enum strobe__gpu_copy {
    STROBE__COPY_UNKNOWN = 0,
    STROBE__COPY_HTOD = 1,
    STROBE__COPY_DTOH = 2,
    STROBE__COPY_HTOA = 3,
    STROBE__COPY_ATOH = 4,
    STROBE__COPY_ATOA = 5,
    STROBE__COPY_ATOD = 6,
    STROBE__COPY_DTOA = 7,
    STROBE__COPY_DTOD = 8,
    STROBE__COPY_HTOH = 9,
    STROBE__COPY_PTOP = 10,
} strobe__gpu_copy;

/* Memory kinds of a copy's ends and of a memset's target. */
typedef enum strobe__gpu_mem {
    STROBE__MEM_UNKNOWN = 0,
    STROBE__MEM_PAGEABLE = 1,
    STROBE__MEM_PINNED = 2,
    STROBE__MEM_DEVICE = 3,
    STROBE__MEM_ARRAY = 4,
    STROBE__MEM_MANAGED = 5,
    STROBE__MEM_DEVICE_STATIC = 6,
    STROBE__MEM_MANAGED_STATIC = 7,
} strobe__gpu_mem;

/* One device activity record. Strings are owned by the batch (see strobe__gpu_batch). */
typedef struct strobe__gpu_act {
    uint8_t kind;         /* strobe__gpu_kind */
    int64_t start_ns;     /* strobe's clock */
    int64_t end_ns;       /* >= start_ns */
    int64_t queued_ns;    /* kernels: when queued, -1 unknown */
    uint32_t correlation; /* the backend's correlation id: a launch and its work share it */
    const char *name;     /* kernel name (demangled), API name, or NULL (memcpy/memset/sync:
                             the merge names them as the seed does) */
    /* device work */
    uint32_t device, context, stream;
    int32_t grid[3], block[3];
    int32_t registers_per_thread;
    int32_t static_shared, dynamic_shared; /* bytes */
    uint64_t graph_id;                     /* kernel launched by a CUDA graph: its id, else 0 */
    uint64_t bytes;                        /* memcpy and memset */
    uint8_t copy_kind;                     /* strobe__gpu_copy */
    uint8_t src_kind, dst_kind;            /* strobe__gpu_mem (memset: dst_kind) */
    uint32_t memset_value;
    /* host side: runtime, driver, sync and overhead records */
    int64_t pid, tid; /* OS ids of the calling thread */
    uint32_t cbid;    /* the API's callback id, 0 unknown */
} strobe__gpu_act;

/* An external correlation record: the backend correlation id `correlation` ran while `external`
 * was pushed on its thread (strobe_push_correlation_id, forwarded to the backend). */
typedef struct strobe__gpu_extcorr {
    uint32_t correlation;
    uint64_t external;
} strobe__gpu_extcorr;

/* What deviceProperties says of one GPU (Kineto's keys). */
typedef struct strobe__gpu_device {
    int32_t id;
    char name[256];
    uint64_t total_global_mem;
    int32_t compute_major, compute_minor;
    int32_t max_threads_per_block, max_threads_per_sm;
    int32_t regs_per_block, regs_per_sm;
    int32_t warp_size;
    int32_t shared_mem_per_block, shared_mem_per_block_optin, shared_mem_per_sm;
    int32_t num_sms;
    int32_t max_blocks_per_sm; /* for occupancy; 0 unknown */
} strobe__gpu_device;

/* An extra arg a backend gives one device record (CUPTI range-profiler metrics on a kernel):
 * the event made from acts[act] gets `key` = `json` (one JSON value). Strings are owned by the
 * batch; the merge copies them. */
typedef struct strobe__gpu_arg {
    size_t act;
    const char *key;
    const char *json;
} strobe__gpu_arg;

/* Everything a backend collected in one session. */
typedef struct strobe__gpu_batch {
    const strobe__gpu_act *acts;
    size_t act_count;
    const strobe__gpu_extcorr *ext;
    size_t ext_count;
    const strobe__gpu_device *devices;
    size_t device_count;
    uint64_t dropped_records;    /* the backend lost them (buffers full, cap reached) */
    uint64_t outside_window;     /* records that started before start or ended after stop: left
                                    out, counted */
    const char *clock_method;    /* "callback" (the backend stamps with strobe's clock) or
                                    "calibrated" */
    int64_t clock_offset_ns;     /* what was added to the backend's times (0 with "callback") */
    const strobe__gpu_arg *args; /* extra args of device records, in act order; may be NULL */
    size_t arg_count;
} strobe__gpu_batch;

/* Adds the batch to `r`, whose CPU events and threads are complete (strobe__collect ran).
 *
 * - Kernels, copies and memsets become ranges with device_type CUDA, device_index = device, tid =
 *   stream, on one result thread per (device, stream) named "stream N", with Kineto's args
 *   (kernels: "queued", "device", "context", "stream", "correlation", "registers per thread",
 *   "shared memory", "blocks per SM", "warps per SM", "grid", "block",
 *   "est. achieved occupancy %"; copies: "device", "context", "stream", "correlation", "bytes",
 *   "memory bandwidth (GB/s)"; memsets likewise).
 * - Runtime, driver, sync and overhead records become ranges on the CPU thread that made them,
 *   inserted as leaves under the innermost CPU range that contains them (the result's tree stays
 *   well formed); a call with device work gets "correlation", and "External id" = the correlation
 *   id of the enclosing range chain (the innermost with one), else the external correlation
 *   record's id, else a fresh id given to its innermost enclosing range.
 * - A device event whose launch is known starts no earlier than the launch call's start (moved
 *   and counted otherwise); it gets the launch's "External id".
 * - User annotations (scope USER_SCOPE ranges) that contain launches get a gpu_user_annotation
 *   span on each stream they launched on, covering that work.
 * - Records outside [trace_start, trace_end] are left out and counted.
 * @return 0 or STROBE_ENOMEM (the result is then unchanged, or complete). */
int strobe__gpu_merge(struct strobe_result *r, const strobe__gpu_batch *b);

/* The theoretical occupancy (0..1) of a kernel on `dev`: resident warps per SM, as limited by
 * the block size, registers, shared memory and blocks per SM, over the SM's maximum. Also its
 * blocks per SM (grid blocks / SMs) and warps per SM. 0 when unknown. */
double strobe__gpu_occupancy(const strobe__gpu_device *dev, const strobe__gpu_act *k);

/* The seed's name of a copy: "Memcpy HtoD (Pageable -> Device)"; of a memset: "Memset
 * (Device)". Writes into buf (NUL-terminated). */
void strobe__gpu_copy_name(const strobe__gpu_act *a, char *buf, size_t size);

#endif
