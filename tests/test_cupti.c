/* test_cupti.c: the CUDA backend's pure half (src/devices/cuda/cupti_convert.c), on CUPTI activity
 * records built by hand: every kind, field by field, the noisy-call filter, the window test, and
 * kernels without timestamps with the spans of the launches they take.
 * Needs the CUPTI headers only; no driver, no GPU. */
#include <cupti.h>

#include "check.h"
#include "devices/cuda/cupti_convert.h"
#include "strobe/session.h"

/* The tests' name hooks: a fixed kernel name, and "rt:<cbid>" / "drv:<cbid>" for API calls. */
static const char *test_kernel_name(void *ctx, const char *mangled) {
    (void)ctx;
    return strcmp(mangled, "_Z6squarePfi") == 0 ? "square(float*, int)" : NULL;
}
static char api_buf[64];
static const char *test_api_name(void *ctx, int driver, uint32_t cbid) {
    (void)ctx;
    snprintf(api_buf, sizeof api_buf, "%s:%u", driver ? "drv" : "rt", cbid);
    return api_buf;
}
static const strobe__cupti_names names = {test_kernel_name, test_api_name, NULL};

static int convert(const void *rec, uint32_t flags, int64_t offset, strobe__gpu_act *a,
                   strobe__gpu_extcorr *e, strobe__gpu_device *d) {
    return strobe__cupti_convert((const CUpti_Activity *)rec, flags, offset, &names, a, e, d);
}

static void test_kernel(void) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000;
    k.end = 3500;
    k.queued = 900;
    k.deviceId = 1;
    k.contextId = 7;
    k.streamId = 13;
    k.gridX = 64, k.gridY = 2, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 4;
    k.registersPerThread = 32;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 4096;
    k.correlationId = 42;
    k.graphId = 5;
    k.name = "_Z6squarePfi";
    strobe__gpu_act a;
    strobe__gpu_extcorr e;
    strobe__gpu_device d;
    CHECK_EQ(convert(&k, 0, 100, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_KERNEL);
    CHECK_STR(a.name, "square(float*, int)");
    CHECK_EQ(a.start_ns, 1100);
    CHECK_EQ(a.end_ns, 3600);
    CHECK_EQ(a.queued_ns, 1000);
    CHECK_EQ(a.correlation, 42);
    CHECK_EQ(a.device, 1);
    CHECK_EQ(a.context, 7);
    CHECK_EQ(a.stream, 13);
    CHECK_EQ(a.grid[0], 64);
    CHECK_EQ(a.grid[1], 2);
    CHECK_EQ(a.grid[2], 1);
    CHECK_EQ(a.block[0], 256);
    CHECK_EQ(a.block[1], 1);
    CHECK_EQ(a.block[2], 4);
    CHECK_EQ(a.registers_per_thread, 32);
    CHECK_EQ(a.static_shared, 1024);
    CHECK_EQ(a.dynamic_shared, 4096);
    CHECK_EQ(a.graph_id, 5);
    CHECK_EQ(a.bytes, 0);
    CHECK_EQ(a.tid, 0);

    /* A name the hook does not know stays mangled; an unknown queue time is -1; a record that
     * ends before it starts ends at its start. */
    k.name = "_Z5otherv";
    k.queued = CUPTI_TIMESTAMP_UNKNOWN;
    k.end = 10;
    k.graphId = 0;
    CHECK_EQ(convert(&k, 0, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_STR(a.name, "_Z5otherv");
    CHECK_EQ(a.queued_ns, -1);
    CHECK_EQ(a.end_ns, a.start_ns);
    CHECK_EQ(a.graph_id, 0);
    /* Without hooks, the record's own name. */
    CHECK_EQ(strobe__cupti_convert((const CUpti_Activity *)&k, 0, 0, NULL, &a, &e, &d),
             STROBE__CUPTI_ACT);
    CHECK_STR(a.name, "_Z5otherv");
}

static void test_memcpy(void) {
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1 << 20;
    m.start = 5000;
    m.end = 6000;
    m.deviceId = 0;
    m.contextId = 1;
    m.streamId = 7;
    m.correlationId = 99;
    m.graphId = 3;
    strobe__gpu_act a;
    strobe__gpu_extcorr e;
    strobe__gpu_device d;
    CHECK_EQ(convert(&m, 0, -50, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_MEMCPY);
    CHECK(a.name == NULL);
    CHECK_EQ(a.start_ns, 4950);
    CHECK_EQ(a.end_ns, 5950);
    CHECK_EQ(a.queued_ns, -1);
    CHECK_EQ(a.bytes, 1 << 20);
    CHECK_EQ(a.copy_kind, STROBE__COPY_HTOD);
    CHECK_EQ(a.src_kind, STROBE__MEM_PAGEABLE);
    CHECK_EQ(a.dst_kind, STROBE__MEM_DEVICE);
    CHECK_EQ(a.device, 0);
    CHECK_EQ(a.context, 1);
    CHECK_EQ(a.stream, 7);
    CHECK_EQ(a.correlation, 99);
    CHECK_EQ(a.graph_id, 3);
    /* Every direction and memory kind maps to strobe's value of the same name. */
    const struct {
        int cupti, strobe;
    } copies[] = {{CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, STROBE__COPY_DTOH},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, STROBE__COPY_HTOA},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, STROBE__COPY_ATOH},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, STROBE__COPY_ATOA},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, STROBE__COPY_ATOD},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, STROBE__COPY_DTOA},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, STROBE__COPY_DTOD},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, STROBE__COPY_HTOH},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, STROBE__COPY_PTOP},
                  {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, STROBE__COPY_UNKNOWN},
                  {200, STROBE__COPY_UNKNOWN}};
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        m.copyKind = (uint8_t)copies[i].cupti;
        convert(&m, 0, 0, &a, &e, &d);
        CHECK_EQ(a.copy_kind, copies[i].strobe);
    }
    const struct {
        int cupti, strobe;
    } mems[] = {{CUPTI_ACTIVITY_MEMORY_KIND_PINNED, STROBE__MEM_PINNED},
                {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, STROBE__MEM_ARRAY},
                {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, STROBE__MEM_MANAGED},
                {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, STROBE__MEM_DEVICE_STATIC},
                {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, STROBE__MEM_MANAGED_STATIC},
                {99, STROBE__MEM_UNKNOWN}};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) {
        m.srcKind = m.dstKind = (uint8_t)mems[i].cupti;
        convert(&m, 0, 0, &a, &e, &d);
        CHECK_EQ(a.src_kind, mems[i].strobe);
        CHECK_EQ(a.dst_kind, mems[i].strobe);
    }
}

static void test_memset(void) {
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = 0xab;
    m.bytes = 4096;
    m.start = 10;
    m.end = 20;
    m.deviceId = 2;
    m.contextId = 3;
    m.streamId = 4;
    m.correlationId = 5;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.graphId = 6;
    strobe__gpu_act a;
    strobe__gpu_extcorr e;
    strobe__gpu_device d;
    CHECK_EQ(convert(&m, 0, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_MEMSET);
    CHECK(a.name == NULL);
    CHECK_EQ(a.start_ns, 10);
    CHECK_EQ(a.end_ns, 20);
    CHECK_EQ(a.memset_value, 0xab);
    CHECK_EQ(a.bytes, 4096);
    CHECK_EQ(a.dst_kind, STROBE__MEM_DEVICE);
    CHECK_EQ(a.device, 2);
    CHECK_EQ(a.context, 3);
    CHECK_EQ(a.stream, 4);
    CHECK_EQ(a.correlation, 5);
    CHECK_EQ(a.graph_id, 6);
}

static void test_api(void) {
    CUpti_ActivityAPI r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    r.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    r.start = 100;
    r.end = 150;
    r.processId = 1234;
    r.threadId = 1240;
    r.correlationId = 42;
    strobe__gpu_act a;
    strobe__gpu_extcorr e;
    strobe__gpu_device d;
    CHECK_EQ(convert(&r, 0, 7, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_RUNTIME);
    char want[32];
    snprintf(want, sizeof want, "rt:%u", (unsigned)CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
    CHECK_STR(a.name, want);
    CHECK_EQ(a.start_ns, 107);
    CHECK_EQ(a.end_ns, 157);
    CHECK_EQ(a.pid, 1234);
    CHECK_EQ(a.tid, 1240);
    CHECK_EQ(a.correlation, 42);
    CHECK_EQ(a.cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);

    /* The noisy runtime calls are left out, unless ALL_API. */
    r.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
    CHECK_EQ(convert(&r, 0, 0, &a, &e, &d), STROBE__CUPTI_FILTERED);
    CHECK_EQ(convert(&r, STROBE_CUDA_ALL_API, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.cbid, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020);
    static const uint32_t noisy[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020};
    for (size_t i = 0; i < sizeof noisy / sizeof noisy[0]; i++)
        CHECK_EQ(strobe__cupti_api_filtered(0, noisy[i]), 1);
    CHECK_EQ(strobe__cupti_api_filtered(0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020), 0);
    CHECK_EQ(strobe__cupti_api_filtered(0, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020), 0);
    CHECK_EQ(strobe__cupti_api_filtered(0, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020),
             0);

    /* Driver calls: only kernel launches are kept by default (as Kineto does). */
    r.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    CHECK_EQ(convert(&r, 0, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_DRIVER);
    snprintf(want, sizeof want, "drv:%u", (unsigned)CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    CHECK_STR(a.name, want);
    CHECK_EQ(a.cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    CHECK_EQ(strobe__cupti_api_filtered(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx), 0);
    CHECK_EQ(strobe__cupti_api_filtered(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz), 0);
    r.cbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;
    CHECK_EQ(convert(&r, 0, 0, &a, &e, &d), STROBE__CUPTI_FILTERED);
    CHECK_EQ(convert(&r, STROBE_CUDA_ALL_API, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_DRIVER);
}

static void test_sync_and_overhead(void) {
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = 300;
    s.end = 900;
    s.correlationId = 77;
    s.contextId = 1;
    s.streamId = 7;
    strobe__gpu_act a;
    strobe__gpu_extcorr e;
    strobe__gpu_device d;
    CHECK_EQ(convert(&s, 0, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_SYNC);
    CHECK_STR(a.name, "Stream Sync");
    CHECK_EQ(a.start_ns, 300);
    CHECK_EQ(a.end_ns, 900);
    CHECK_EQ(a.correlation, 77);
    CHECK_EQ(a.context, 1);
    CHECK_EQ(a.stream, 7);
    CHECK_EQ(a.tid, 0); /* filled in by the backend from the API call */
    CHECK_STR(strobe__cupti_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE),
              "Event Sync");
    CHECK_STR(strobe__cupti_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT),
              "Stream Wait Event");
    CHECK_STR(strobe__cupti_sync_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE),
              "Context Sync");
    CHECK_STR(strobe__cupti_sync_name(12345), "Unknown Sync");

    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = 1234;
    o.objectId.pt.threadId = 1250;
    o.start = 40;
    o.end = 60;
    o.correlationId = 0;
    CHECK_EQ(convert(&o, 0, 1000, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_EQ(a.kind, STROBE__GPU_OVERHEAD);
    CHECK_STR(a.name, "Buffer Flush");
    CHECK_EQ(a.start_ns, 1040);
    CHECK_EQ(a.end_ns, 1060);
    CHECK_EQ(a.pid, 1234);
    CHECK_EQ(a.tid, 1250);
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_STREAM;
    o.objectId.dcs.deviceId = 1;
    o.objectId.dcs.contextId = 2;
    o.objectId.dcs.streamId = 3;
    CHECK_EQ(convert(&o, 0, 0, &a, &e, &d), STROBE__CUPTI_ACT);
    CHECK_STR(a.name, "Resource");
    CHECK_EQ(a.device, 1);
    CHECK_EQ(a.context, 2);
    CHECK_EQ(a.stream, 3);
    CHECK_EQ(a.tid, 0);
    CHECK_STR(strobe__cupti_overhead_name(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER),
              "Driver Compiler");
    CHECK_STR(strobe__cupti_overhead_name(CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION),
              "Instrumentation");
    CHECK_STR(strobe__cupti_overhead_name(CUPTI_ACTIVITY_OVERHEAD_UNKNOWN), "Unknown");
}

static void test_extcorr_and_device(void) {
    CUpti_ActivityExternalCorrelation x;
    memset(&x, 0, sizeof x);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    x.externalId = 0x123456789ull;
    x.correlationId = 42;
    strobe__gpu_act a;
    strobe__gpu_extcorr e = {0, 0};
    strobe__gpu_device d;
    CHECK_EQ(convert(&x, 0, 0, &a, &e, &d), STROBE__CUPTI_EXT);
    CHECK_EQ(e.correlation, 42);
    CHECK_EQ(e.external, 0x123456789ll);
    /* Another layer's kind is not strobe's. */
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
    CHECK_EQ(convert(&x, 0, 0, &a, &e, &d), STROBE__CUPTI_NONE);

    CUpti_ActivityDevice5 v;
    memset(&v, 0, sizeof v);
    v.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    v.id = 1;
    v.name = "NVIDIA H100 80GB HBM3";
    v.globalMemorySize = 85520809984ull;
    v.computeCapabilityMajor = 9;
    v.computeCapabilityMinor = 0;
    v.maxThreadsPerBlock = 1024;
    v.maxWarpsPerMultiprocessor = 64;
    v.numThreadsPerWarp = 32;
    v.maxRegistersPerBlock = 65536;
    v.maxRegistersPerMultiprocessor = 65536;
    v.maxSharedMemoryPerBlock = 49152;
    v.maxSharedMemoryPerMultiprocessor = 233472;
    v.numMultiprocessors = 132;
    v.maxBlocksPerMultiprocessor = 32;
    memset(&d, 0x5a, sizeof d);
    CHECK_EQ(convert(&v, 0, 0, &a, &e, &d), STROBE__CUPTI_DEVICE);
    CHECK_EQ(d.id, 1);
    CHECK_STR(d.name, "NVIDIA H100 80GB HBM3");
    CHECK_EQ(d.total_global_mem, 85520809984ll);
    CHECK_EQ(d.compute_major, 9);
    CHECK_EQ(d.compute_minor, 0);
    CHECK_EQ(d.max_threads_per_block, 1024);
    CHECK_EQ(d.max_threads_per_sm, 2048);
    CHECK_EQ(d.regs_per_block, 65536);
    CHECK_EQ(d.regs_per_sm, 65536);
    CHECK_EQ(d.warp_size, 32);
    CHECK_EQ(d.shared_mem_per_block, 49152);
    CHECK_EQ(d.shared_mem_per_block_optin, 49152);
    CHECK_EQ(d.shared_mem_per_sm, 233472);
    CHECK_EQ(d.num_sms, 132);
    CHECK_EQ(d.max_blocks_per_sm, 32);
    /* A NULL name gives an empty one, and a long one is cut, NUL-terminated. */
    v.name = NULL;
    convert(&v, 0, 0, &a, &e, &d);
    CHECK_STR(d.name, "");
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    v.name = longname;
    convert(&v, 0, 0, &a, &e, &d);
    CHECK_EQ(strlen(d.name), sizeof d.name - 1);

    /* Kinds strobe does not use. */
    CUpti_Activity other = {CUPTI_ACTIVITY_KIND_NAME};
    CHECK_EQ(convert(&other, 0, 0, &a, &e, &d), STROBE__CUPTI_NONE);
}

static void test_window(void) {
    strobe__gpu_act a;
    memset(&a, 0, sizeof a);
    a.start_ns = 100;
    a.end_ns = 200;
    CHECK_EQ(strobe__cupti_outside(&a, 100, 200), 0);
    CHECK_EQ(strobe__cupti_outside(&a, 50, 250), 0);
    CHECK_EQ(strobe__cupti_outside(&a, 101, 250), 1);
    CHECK_EQ(strobe__cupti_outside(&a, 50, 199), 1);
}

/* Kernels CUPTI wrote without timestamps (kernel replay), and the spans of API calls that the
 * backend gives them. */
static void test_untimed(void) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = 45;
    CHECK_EQ(strobe__cupti_kernel_untimed((const CUpti_Activity *)(const void *)&k), 1);
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    CHECK_EQ(strobe__cupti_kernel_untimed((const CUpti_Activity *)(const void *)&k), 1);
    k.end = 5; /* a kernel at CUPTI's time 0 that lasted: timed */
    CHECK_EQ(strobe__cupti_kernel_untimed((const CUpti_Activity *)(const void *)&k), 0);
    k.start = 3;
    CHECK_EQ(strobe__cupti_kernel_untimed((const CUpti_Activity *)(const void *)&k), 0);

    CUpti_ActivityAPI api;
    memset(&api, 0, sizeof api);
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020; /* filtered, and still a span */
    api.start = 1000;
    api.end = 3000;
    api.correlationId = 45;
    uint32_t corr = 0;
    int64_t start = 0, end = 0;
    CHECK_EQ(
        strobe__cupti_api_span((const CUpti_Activity *)(const void *)&api, 7, &corr, &start, &end),
        1);
    CHECK_EQ(corr, 45);
    CHECK_EQ(start, 1007);
    CHECK_EQ(end, 3007);
    api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    api.end = 500; /* before its start: ends at its start, as converted records do */
    CHECK_EQ(
        strobe__cupti_api_span((const CUpti_Activity *)(const void *)&api, 0, &corr, &start, &end),
        1);
    CHECK_EQ(start, 1000);
    CHECK_EQ(end, 1000);
    /* A kernel record is not an API call, and an API call is not an untimed kernel. */
    CHECK_EQ(
        strobe__cupti_api_span((const CUpti_Activity *)(const void *)&k, 0, &corr, &start, &end),
        0);
    api.start = api.end = 0;
    CHECK_EQ(strobe__cupti_kernel_untimed((const CUpti_Activity *)(const void *)&api), 0);
}

int main(void) {
    test_kernel();
    test_memcpy();
    test_memset();
    test_api();
    test_sync_and_overhead();
    test_extcorr_and_device();
    test_window();
    test_untimed();
    return check_result();
}
