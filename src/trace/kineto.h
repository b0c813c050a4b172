/* kineto.h: Kineto's trace vocabulary, named once.
 *
 * The names PyTorch's profiler (Kineto) writes into a Chrome-trace JSON, and that its consumers
 * (TensorBoard's plugin, HTA, Perfetto's importer, strobe's own reader) look for: event
 * categories, metadata events, the args of CPU ranges, device work and memory events, and how
 * devices, streams and threads are named and sorted. Whoever decodes records into events or
 * writes a trace spells these names through this header, so that a name is changed (or looked
 * up) in one place. Macros only (string literals and initializer lists), so that including it
 * costs nothing and every use folds to the same literal: outputs stay byte for byte the same.
 *
 * Contents: 1. top-level keys, 2. categories, 3. phases, 4. metadata events, 5. args of CPU
 * ranges, 6. args of device work, 7. memory events, 8. device and stream naming, 9. sort indexes,
 * 10. device types. */
#ifndef STROBE_TRACE_KINETO_H
#define STROBE_TRACE_KINETO_H

#include <stdint.h>

/* ---- 1. Top-level keys of the trace object, in the order Kineto writes them ---------------- */
#define STROBE_KINETO_KEY_SCHEMA_VERSION "schemaVersion"
#define STROBE_KINETO_KEY_DEVICE_PROPERTIES "deviceProperties"
#define STROBE_KINETO_KEY_DISTRIBUTED_INFO "distributedInfo"
#define STROBE_KINETO_KEY_CLOCK_SYNC "strobe_clock_sync"
#define STROBE_KINETO_KEY_JOB "strobe_job"
#define STROBE_KINETO_KEY_TRACE_ID "trace_id"
#define STROBE_KINETO_KEY_DISPLAY_TIME_UNIT "displayTimeUnit"
#define STROBE_KINETO_KEY_BASE_TIME_NS "baseTimeNanoseconds"
#define STROBE_KINETO_KEY_TRACE_EVENTS "traceEvents"
#define STROBE_KINETO_KEY_TRACE_NAME "traceName"

/* ---- 2. Event categories ("cat") --------------------------------------------------------------
 */
/* CPU side: operators (record scope FUNCTION and the like), user regions, instants (memory
 * events), Python functions, and the profiler's own overhead. */
#define STROBE_KINETO_CAT_CPU_OP "cpu_op"
#define STROBE_KINETO_CAT_USER_ANNOTATION "user_annotation"
#define STROBE_KINETO_CAT_CPU_INSTANT_EVENT "cpu_instant_event"
#define STROBE_KINETO_CAT_PYTHON_FUNCTION "python_function"
#define STROBE_KINETO_CAT_OVERHEAD "overhead"
/* strobe's CPU samples (config.cpu_sample_hz): in a result, instants named after the sampled
 * function, with the "Call stack"; not a Kineto category (torch has no sampler). JSON files hold
 * them as Chrome's CPU profile events instead (json_profile.h), which the reader turns back into
 * such instants. */
#define STROBE_KINETO_CAT_CPU_SAMPLE "cpu_sample"
/* Host calls into the CUDA runtime and driver, and waits on streams or events. */
#define STROBE_KINETO_CAT_CUDA_RUNTIME "cuda_runtime"
#define STROBE_KINETO_CAT_CUDA_DRIVER "cuda_driver"
#define STROBE_KINETO_CAT_CUDA_SYNC "cuda_sync"
/* Device side: work on a (device, stream), and a user range's span over the work it launched. */
#define STROBE_KINETO_CAT_KERNEL "kernel"
#define STROBE_KINETO_CAT_GPU_MEMCPY "gpu_memcpy"
#define STROBE_KINETO_CAT_GPU_MEMSET "gpu_memset"
#define STROBE_KINETO_CAT_GPU_USER_ANNOTATION "gpu_user_annotation"
/* The flow from a launch to the device work it made ("s" on the launch, "f" on the work). */
#define STROBE_KINETO_CAT_FLOW "ac2g"
/* Flows from a forward op to its backward op (cat and name), torch's profiler_kineto.cpp. */
#define STROBE_KINETO_CAT_FWDBWD "fwdbwd"
/* What traces written in 2021 use instead (schema before "cpu_op"); readers accept both. */
#define STROBE_KINETO_LEGACY_CAT_OPERATOR "Operator"
#define STROBE_KINETO_LEGACY_CAT_RUNTIME "Runtime"
#define STROBE_KINETO_LEGACY_CAT_KERNEL "Kernel"
#define STROBE_KINETO_LEGACY_CAT_MEMCPY "Memcpy"
#define STROBE_KINETO_LEGACY_CAT_MEMSET "Memset"
#define STROBE_KINETO_LEGACY_CAT_FLOW "async"

/* ---- 3. Phases ("ph") ------------------------------------------------------------------------ */
#define STROBE_KINETO_PH_COMPLETE "X"
#define STROBE_KINETO_PH_INSTANT "i"
#define STROBE_KINETO_PH_COUNTER "C"
#define STROBE_KINETO_PH_METADATA "M"
#define STROBE_KINETO_PH_FLOW_START "s"
#define STROBE_KINETO_PH_FLOW_FINISH "f"

/* ---- 4. Metadata events ("ph":"M"), and the one arg each carries ------------------------------
 */
#define STROBE_KINETO_META_PROCESS_NAME "process_name"
#define STROBE_KINETO_META_PROCESS_LABELS "process_labels"
#define STROBE_KINETO_META_PROCESS_SORT_INDEX "process_sort_index"
#define STROBE_KINETO_META_THREAD_NAME "thread_name"
#define STROBE_KINETO_META_THREAD_SORT_INDEX "thread_sort_index"
#define STROBE_KINETO_META_ARG_NAME "name"             /* of process_name and thread_name */
#define STROBE_KINETO_META_ARG_LABELS "labels"         /* of process_labels */
#define STROBE_KINETO_META_ARG_SORT_INDEX "sort_index" /* of the two sort indexes */

/* ---- 5. Args of CPU ranges --------------------------------------------------------------------
 */
#define STROBE_KINETO_ARG_EXTERNAL_ID "External id"
#define STROBE_KINETO_ARG_RECORD_FUNCTION_ID "Record function id"
#define STROBE_KINETO_ARG_SEQUENCE_NUMBER "Sequence number"
#define STROBE_KINETO_ARG_FWD_THREAD_ID "Fwd thread id"
#define STROBE_KINETO_ARG_INPUT_DIMS "Input Dims"
#define STROBE_KINETO_ARG_INPUT_TYPE "Input type"
#define STROBE_KINETO_ARG_CONCRETE_INPUTS "Concrete Inputs"
#define STROBE_KINETO_ARG_CALL_STACK "Call stack"
/* A CPU sample's own line: "file:line" of the instruction it interrupted (its "Call stack" names
 * functions, one frame each, without lines). */
#define STROBE_KINETO_ARG_SAMPLE_LINE "Line"
#define STROBE_KINETO_ARG_MODULE_HIERARCHY "Module Hierarchy"
#define STROBE_KINETO_ARG_BACKEND "Backend"
#define STROBE_KINETO_ARG_EV_IDX "Ev Idx"

/* ---- 6. Args of device work and of the host calls that launch it ----------------------------- */
/* Both sides: the CUPTI correlation id that links a launch to its work. */
#define STROBE_KINETO_ARG_CORRELATION "correlation"
/* Host calls: the CUPTI callback id of the API function. */
#define STROBE_KINETO_ARG_CBID "cbid"
/* Kernels, copies and sets. */
#define STROBE_KINETO_ARG_QUEUED "queued"
#define STROBE_KINETO_ARG_DEVICE "device"
#define STROBE_KINETO_ARG_CONTEXT "context"
#define STROBE_KINETO_ARG_STREAM "stream"
/* Kernels. */
#define STROBE_KINETO_ARG_REGISTERS_PER_THREAD "registers per thread"
#define STROBE_KINETO_ARG_SHARED_MEMORY "shared memory"
#define STROBE_KINETO_ARG_BLOCKS_PER_SM "blocks per SM"
#define STROBE_KINETO_ARG_WARPS_PER_SM "warps per SM"
#define STROBE_KINETO_ARG_GRID "grid"
#define STROBE_KINETO_ARG_BLOCK "block"
#define STROBE_KINETO_ARG_OCCUPANCY "est. achieved occupancy %"
#define STROBE_KINETO_ARG_GRAPH_ID "graph id"
/* Copies and sets. */
#define STROBE_KINETO_ARG_BYTES "bytes"
#define STROBE_KINETO_ARG_BANDWIDTH "memory bandwidth (GB/s)"
/* The names CUPTI's copy kinds and memory kinds get in a copy's or a set's name ("Memcpy HtoD
 * (Pageable -> Device)", "Memset (Device)"), indexed by CUPTI's enum values. */
#define STROBE_KINETO_MEMCPY_KIND_NAMES                                                            \
    { "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" }
#define STROBE_KINETO_MEMORY_KIND_NAMES                                                            \
    {                                                                                              \
        "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static",            \
            "Managed Static"                                                                       \
    }

/* ---- 7. Memory events: an instant on the allocating thread ----------------------------------- */
#define STROBE_KINETO_MEMORY_EVENT_NAME "[memory]"  /* category cpu_instant_event */
#define STROBE_KINETO_ARG_DEVICE_TYPE "Device Type" /* c10::DeviceType's number (section 10) */
#define STROBE_KINETO_ARG_DEVICE_ID "Device Id"
#define STROBE_KINETO_ARG_ADDR "Addr"
#define STROBE_KINETO_ARG_MEM_BYTES "Bytes" /* negative on a free */
#define STROBE_KINETO_ARG_TOTAL_ALLOCATED "Total Allocated"
#define STROBE_KINETO_ARG_TOTAL_RESERVED "Total Reserved"

/* ---- 8. Device and stream naming ------------------------------------------------------------- */
/* CPU events use the OS pid and tid; device work uses the device index as pid and the stream as
 * tid. A device's process is named and labelled "GPU <index>", a stream's thread "stream <id>", a
 * thread without a name "thread <tid>"; the CPU process is labelled "CPU". */
#define STROBE_KINETO_DEVICE_PROCESS_FMT "GPU %d"
#define STROBE_KINETO_STREAM_THREAD_FMT "stream %lld"
#define STROBE_KINETO_THREAD_FMT "thread %lld"
#define STROBE_KINETO_CPU_PROCESS_LABEL "CPU"

/* ---- 9. Sort indexes ------------------------------------------------------------------------- */
/* The CPU process sorts by its pid (below 2^22 on Linux) and its threads by tid; a device's
 * process sorts after it, at this base plus the device index, and its streams by stream id. */
#define STROBE_KINETO_DEVICE_SORT_INDEX_BASE INT64_C(16777216)

/* ---- 10. Device types ------------------------------------------------------------------------ */
/* torch's device names, indexed by strobe_device_type (CPU, CUDA, XPU, HPU, MTIA, PrivateUse1). */
#define STROBE_KINETO_DEVICE_TYPE_NAMES                                                            \
    { "cpu", "cuda", "xpu", "hpu", "mtia", "privateuse1" }
/* c10::DeviceType's numbers, which memory events carry as "Device Type". */
#define STROBE_KINETO_C10_DEVICE_CPU 0
#define STROBE_KINETO_C10_DEVICE_CUDA 1
#define STROBE_KINETO_C10_DEVICE_XPU 12
#define STROBE_KINETO_C10_DEVICE_HPU 15
#define STROBE_KINETO_C10_DEVICE_MTIA 19
#define STROBE_KINETO_C10_DEVICE_PRIVATEUSE1 20

#endif /* STROBE_TRACE_KINETO_H */
