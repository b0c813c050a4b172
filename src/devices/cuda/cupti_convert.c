/* cupti_convert.c: one CUPTI activity record -> strobe's device activity (see cupti_convert.h).
 *
 * Contents: record layouts (static checks), the noisy-call filter, names of sync and overhead
 * kinds, the conversion, kernels without timestamps and the spans of their launches, the window
 * test. */
#if STROBE_HAVE_CUPTI_HEADERS

#include "cupti_convert.h"
#include "strobe/session.h"

#include <stddef.h>
#include <string.h>

/* ---- record layouts -----------------------------------------------------------------------
 * A CUPTI library fills each kind's record in the newest version it knows. The structs below
 * are the CUDA 13 ones; a CUDA 12 CUPTI writes the previous versions, which differ only by fields
 * appended at the end. These checks make sure that every field read here sits at the same offset
 * in both, so that one build reads records of either library. */
#define STROBE__SAME_OFFSET(a, b, f)                                                               \
    _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f " moved since " #b)
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, registersPerThread);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, deviceId);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, gridX);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, blockZ);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, dynamicSharedMemory);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, queued);
STROBE__SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, graphId);
STROBE__SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, bytes);
STROBE__SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
STROBE__SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, correlationId);
STROBE__SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, graphId);
STROBE__SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, memoryKind);
STROBE__SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, correlationId);
STROBE__SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, graphId);
STROBE__SAME_OFFSET(CUpti_ActivityDevice5, CUpti_ActivityDevice4, name);
STROBE__SAME_OFFSET(CUpti_ActivityDevice5, CUpti_ActivityDevice4, id);
STROBE__SAME_OFFSET(CUpti_ActivityOverhead3, CUpti_ActivityOverhead2, correlationId);
STROBE__SAME_OFFSET(CUpti_ActivitySynchronization2, CUpti_ActivitySynchronization, streamId);
STROBE__SAME_OFFSET(CUpti_ActivitySynchronization2, CUpti_ActivitySynchronization, correlationId);
#undef STROBE__SAME_OFFSET

/* ---- the noisy-call filter ----------------------------------------------------------------- */

int strobe__cupti_api_filtered(int driver, uint32_t cbid) {
    if (driver) {
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
            return 0;
        default:
            return 1;
        }
    }
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
        return 1;
    default:
        return 0;
    }
}

/* ---- names ------------------------------------------------------------------------------- */

const char *strobe__cupti_sync_name(uint32_t type) {
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
        return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
        return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
        return "Context Sync";
    default:
        return "Unknown Sync";
    }
}

const char *strobe__cupti_overhead_name(uint32_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
        return "Runtime Triggered Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
        return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
        return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
        return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
        return "UVM Activity Init";
    default:
        return "Unknown";
    }
}

/* ---- conversion -------------------------------------------------------------------------- */

/* CUPTI's copy and memory kinds have strobe's values (gpu.h copies them); anything newer is
 * unknown. */
static uint8_t copy_kind(uint32_t k) {
    return k <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? (uint8_t)k : STROBE__COPY_UNKNOWN;
}
static uint8_t mem_kind(uint32_t k) {
    return k <= CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC ? (uint8_t)k : STROBE__MEM_UNKNOWN;
}

static void set_times(strobe__gpu_act *a, uint64_t start, uint64_t end, int64_t offset_ns) {
    a->start_ns = (int64_t)start + offset_ns;
    a->end_ns = end < start ? a->start_ns : (int64_t)end + offset_ns;
}

static void convert_kernel(const CUpti_ActivityKernel10 *k, int64_t offset_ns,
                           const strobe__cupti_names *names, strobe__gpu_act *a) {
    a->kind = STROBE__GPU_KERNEL;
    set_times(a, k->start, k->end, offset_ns);
    a->queued_ns =
        k->queued == (uint64_t)CUPTI_TIMESTAMP_UNKNOWN ? -1 : (int64_t)k->queued + offset_ns;
    a->correlation = k->correlationId;
    const char *name = NULL;
    if (names && names->kernel && k->name) name = names->kernel(names->ctx, k->name);
    a->name = name ? name : k->name;
    a->device = k->deviceId;
    a->context = k->contextId;
    a->stream = k->streamId;
    a->grid[0] = k->gridX, a->grid[1] = k->gridY, a->grid[2] = k->gridZ;
    a->block[0] = k->blockX, a->block[1] = k->blockY, a->block[2] = k->blockZ;
    a->registers_per_thread = k->registersPerThread;
    a->static_shared = k->staticSharedMemory;
    a->dynamic_shared = k->dynamicSharedMemory;
    a->graph_id = k->graphId;
}

static void convert_memcpy(const CUpti_ActivityMemcpy6 *m, int64_t offset_ns, strobe__gpu_act *a) {
    a->kind = STROBE__GPU_MEMCPY;
    set_times(a, m->start, m->end, offset_ns);
    a->correlation = m->correlationId;
    a->device = m->deviceId;
    a->context = m->contextId;
    a->stream = m->streamId;
    a->graph_id = m->graphId;
    a->bytes = m->bytes;
    a->copy_kind = copy_kind(m->copyKind);
    a->src_kind = mem_kind(m->srcKind);
    a->dst_kind = mem_kind(m->dstKind);
}

static void convert_memset(const CUpti_ActivityMemset4 *m, int64_t offset_ns, strobe__gpu_act *a) {
    a->kind = STROBE__GPU_MEMSET;
    set_times(a, m->start, m->end, offset_ns);
    a->correlation = m->correlationId;
    a->device = m->deviceId;
    a->context = m->contextId;
    a->stream = m->streamId;
    a->graph_id = m->graphId;
    a->bytes = m->bytes;
    a->dst_kind = mem_kind(m->memoryKind);
    a->memset_value = m->value;
}

static void convert_device(const CUpti_ActivityDevice5 *d, strobe__gpu_device *dev) {
    memset(dev, 0, sizeof *dev);
    dev->id = (int32_t)d->id;
    if (d->name) {
        strncpy(dev->name, d->name, sizeof dev->name - 1);
        dev->name[sizeof dev->name - 1] = '\0';
    }
    dev->total_global_mem = d->globalMemorySize;
    dev->compute_major = (int32_t)d->computeCapabilityMajor;
    dev->compute_minor = (int32_t)d->computeCapabilityMinor;
    dev->max_threads_per_block = (int32_t)d->maxThreadsPerBlock;
    dev->max_threads_per_sm = (int32_t)(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
    dev->regs_per_block = (int32_t)d->maxRegistersPerBlock;
    dev->regs_per_sm = (int32_t)d->maxRegistersPerMultiprocessor;
    dev->warp_size = (int32_t)d->numThreadsPerWarp;
    dev->shared_mem_per_block = (int32_t)d->maxSharedMemoryPerBlock;
    /* The record does not say how much a block may opt in to: the driver's attribute fills it
     * where the backend has it, else the per-block figure stands. */
    dev->shared_mem_per_block_optin = (int32_t)d->maxSharedMemoryPerBlock;
    dev->shared_mem_per_sm = (int32_t)d->maxSharedMemoryPerMultiprocessor;
    dev->num_sms = (int32_t)d->numMultiprocessors;
    dev->max_blocks_per_sm = (int32_t)d->maxBlocksPerMultiprocessor;
}

int strobe__cupti_convert(const CUpti_Activity *rec, uint32_t cuda_flags, int64_t offset_ns,
                          const strobe__cupti_names *names, strobe__gpu_act *act,
                          strobe__gpu_extcorr *ext, strobe__gpu_device *dev) {
    memset(act, 0, sizeof *act);
    act->queued_ns = -1;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        convert_kernel((const CUpti_ActivityKernel10 *)(const void *)rec, offset_ns, names, act);
        return STROBE__CUPTI_ACT;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        convert_memcpy((const CUpti_ActivityMemcpy6 *)(const void *)rec, offset_ns, act);
        return STROBE__CUPTI_ACT;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        convert_memset((const CUpti_ActivityMemset4 *)(const void *)rec, offset_ns, act);
        return STROBE__CUPTI_ACT;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)(const void *)rec;
        int driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        if (!(cuda_flags & STROBE_CUDA_ALL_API) && strobe__cupti_api_filtered(driver, api->cbid))
            return STROBE__CUPTI_FILTERED;
        act->kind = driver ? STROBE__GPU_DRIVER : STROBE__GPU_RUNTIME;
        set_times(act, api->start, api->end, offset_ns);
        act->correlation = api->correlationId;
        act->name = names && names->api ? names->api(names->ctx, driver, api->cbid) : NULL;
        act->pid = api->processId;
        act->tid = api->threadId;
        act->cbid = api->cbid;
        return STROBE__CUPTI_ACT;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s =
            (const CUpti_ActivitySynchronization2 *)(const void *)rec;
        act->kind = STROBE__GPU_SYNC;
        set_times(act, s->start, s->end, offset_ns);
        act->correlation = s->correlationId;
        act->name = strobe__cupti_sync_name(s->type);
        act->context = s->contextId;
        act->stream = s->streamId;
        return STROBE__CUPTI_ACT;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)(const void *)rec;
        act->kind = STROBE__GPU_OVERHEAD;
        set_times(act, o->start, o->end, offset_ns);
        act->correlation = o->correlationId;
        act->name = strobe__cupti_overhead_name(o->overheadKind);
        switch (o->objectKind) {
        case CUPTI_ACTIVITY_OBJECT_PROCESS:
        case CUPTI_ACTIVITY_OBJECT_THREAD:
            act->pid = o->objectId.pt.processId;
            act->tid = o->objectId.pt.threadId;
            break;
        case CUPTI_ACTIVITY_OBJECT_DEVICE:
        case CUPTI_ACTIVITY_OBJECT_CONTEXT:
        case CUPTI_ACTIVITY_OBJECT_STREAM:
            act->device = o->objectId.dcs.deviceId;
            act->context = o->objectId.dcs.contextId;
            act->stream = o->objectId.dcs.streamId;
            break;
        default:
            break;
        }
        return STROBE__CUPTI_ACT;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e =
            (const CUpti_ActivityExternalCorrelation *)(const void *)rec;
        /* strobe pushes its ids as CUSTOM0; other kinds belong to other layers. */
        if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return STROBE__CUPTI_NONE;
        ext->correlation = e->correlationId;
        ext->external = e->externalId;
        return STROBE__CUPTI_EXT;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
        convert_device((const CUpti_ActivityDevice5 *)(const void *)rec, dev);
        return STROBE__CUPTI_DEVICE;
    default:
        return STROBE__CUPTI_NONE;
    }
}

int strobe__cupti_kernel_untimed(const CUpti_Activity *rec) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_KERNEL &&
        rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return 0;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)rec;
    return k->start == 0 && k->end == 0;
}

int strobe__cupti_api_span(const CUpti_Activity *rec, int64_t offset_ns, uint32_t *correlation,
                           int64_t *start_ns, int64_t *end_ns) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_RUNTIME && rec->kind != CUPTI_ACTIVITY_KIND_DRIVER)
        return 0;
    const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)(const void *)rec;
    strobe__gpu_act a;
    set_times(&a, api->start, api->end, offset_ns);
    *correlation = api->correlationId;
    *start_ns = a.start_ns;
    *end_ns = a.end_ns;
    return 1;
}

int strobe__cupti_outside(const strobe__gpu_act *a, int64_t lo, int64_t hi) {
    return a->start_ns < lo || a->end_ns > hi;
}

#else
/* Without the CUPTI headers there is nothing to convert (ISO C wants a declaration here). */
typedef int strobe__cupti_convert_unused;
#endif
