/* fake_libcupti.c: a stand-in CUPTI for test_cuda_fake, so that the backend's loading, buffers,
 * callbacks, clock and correlation run without a GPU. It keeps the records the test expects and
 * hands them over on cuptiActivityFlushAll through the client's buffer callbacks, the way CUPTI
 * does. Knobs (environment): FAKE_CUPTI_BUSY=1 (another subscriber), FAKE_CUPTI_DROPPED=N (records
 * CUPTI says it dropped), FAKE_CUPTI_NO_TSCB=1 (no timestamp callback: CUPTI's own clock, 1 s
 * behind CLOCK_REALTIME), FAKE_CUPTI_BUFFERS=N (buffers requested at flush). Built a second time
 * with FAKE_NO_TIMESTAMP (no cuptiGetTimestamp) for the missing-symbol case.
 *
 * The range profiler (cuda_metrics) is at the end: its calls check the order CUPTI requires, are
 * logged for the test (fake_cupti_calls), and give canned values. Knobs: FAKE_CUPTI_EXTRA_KERNELS=N
 * (more kernels on the profiled context), FAKE_CUPTI_OTHER_CTX=1 (a kernel on another context),
 * FAKE_CUPTI_RANGE_SKEW=N (N more ranges than kernels), FAKE_CUPTI_PROFILER_UNSUPPORTED=1 (an old
 * architecture), FAKE_CUPTI_PROFILER_PRIVILEGES=1 (counters for administrators only),
 * FAKE_CUPTI_REPLAY_UNTIMED=1 (the kernels the range profiler replays come with start = end = 0,
 * as CUPTI 2025.3 writes them under kernel replay on an H100; =2: and the second extra kernel's
 * launch record is lost). Built a third time with
 * FAKE_NO_RANGE_PROFILER (a CUPTI older than 12.6). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cupti.h>
#ifndef FAKE_NO_RANGE_PROFILER
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "devices/cuda/cupti_host_api.h"
#endif

#define EXPORT __attribute__((visibility("default")))

static CUpti_BuffersCallbackRequestFunc req_fn;
static CUpti_BuffersCallbackCompleteFunc done_fn;
static CUpti_TimestampCallbackFunc ts_fn;
static int subscribed, enabled[64]; /* enabled at some point of the session */
static uint64_t ext_stack[16];
static int ext_n;
static uint64_t pushed[16];
static int pushed_n;
static uint64_t t_api_start;
static int profiling; /* the range profiler was started: fill() adds the extra kernels */

static int env_int(const char *name) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : 0;
}

static uint64_t realtime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* CUPTI's clock: the client's callback, else CLOCK_REALTIME less one second (so that a client
 * that forgot to calibrate is caught). */
static uint64_t now(void) {
    return ts_fn ? ts_fn() : realtime() - 1000000000u;
}

/* For end-to-end tests: the runtime call and the work the next flush reports happen from now on
 * (the launch at +1000 ns, its kernel at +1500 ns, on the flushing thread). */
EXPORT void fake_cupti_mark_launch(void) {
    t_api_start = now();
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
    *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS"
                                                             : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}
/* The subscriber's callback and the driver-API callbacks it enabled (cuptiEnableCallback): the
 * stand-in libcuda.so.1 calls fake_cupti_driver_call at each of its CUDA profiler API calls,
 * which calls the subscriber back as CUPTI does, at the call's entry and exit. */
static CUpti_CallbackFunc sub_fn;
static void *sub_data;
static int cb_on[2]; /* cuProfilerStart, cuProfilerStop */

static void driver_call(const char *name, int exit_site) {
    CUpti_CallbackId cbid = strcmp(name, "cuProfilerStart") == 0
                                ? CUPTI_DRIVER_TRACE_CBID_cuProfilerStart
                                : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    if (!subscribed || sub_fn == NULL || !cb_on[cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop])
        return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = exit_site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    d.functionName = name;
    sub_fn(sub_data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s,
                                       CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
    if (s != (CUpti_SubscriberHandle)&subscribed || !subscribed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (d != CUPTI_CB_DOMAIN_DRIVER_API || (cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStart &&
                                            cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStop))
        return CUPTI_ERROR_NOT_SUPPORTED;
    cb_on[cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop] = enable != 0;
    /* The stand-in driver learns where to report its calls (it is loaded: the client opened it
     * before CUPTI). */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void (*set)(void (*)(const char *, int)) =
        cuda ? (void (*)(void (*)(const char *, int)))dlsym(cuda, "fake_cuda_set_cupti") : NULL;
    if (set) set(driver_call);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u) {
    if (env_int("FAKE_CUPTI_BUSY")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscribed = 1;
    sub_fn = f;
    sub_data = u;
    cb_on[0] = cb_on[1] = 0;
    memset(enabled, 0, sizeof enabled);
    *s = (CUpti_SubscriberHandle)&subscribed;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
    if (s != (CUpti_SubscriberHandle)&subscribed || !subscribed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    subscribed = 0;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
    if (!subscribed) return CUPTI_ERROR_NOT_INITIALIZED;
    enabled[k & 63] = 1;
    if (k == CUPTI_ACTIVITY_KIND_RUNTIME) t_api_start = now();
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
    (void)k;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                  CUpti_BuffersCallbackCompleteFunc d) {
    req_fn = r;
    done_fn = d;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
    if (env_int("FAKE_CUPTI_NO_TSCB")) return CUPTI_ERROR_NOT_SUPPORTED;
    ts_fn = f;
    return CUPTI_SUCCESS;
}
#ifndef FAKE_NO_TIMESTAMP
EXPORT CUptiResult cuptiGetTimestamp(uint64_t *t) {
    *t = now();
    return CUPTI_SUCCESS;
}
#endif
EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType t) {
    (void)t;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char **n) {
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        *n = "cudaLaunchKernel_v7000";
    else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        *n = "cuLaunchKernel";
    else
        *n = "cudaSomething";
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n) {
    (void)c, (void)s;
    *n = (size_t)env_int("FAKE_CUPTI_DROPPED");
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                          uint64_t id) {
    if (k != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_n == 16)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ext_stack[ext_n++] = id;
    if (pushed_n < 16) pushed[pushed_n++] = id;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                         uint64_t *last) {
    if (k != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_n == 0) return CUPTI_ERROR_QUEUE_EMPTY;
    *last = ext_stack[--ext_n];
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiFinalize(void) {
    profiling = 0;
    req_fn = NULL;
    done_fn = NULL;
    ts_fn = NULL;
    return CUPTI_SUCCESS;
}

/* Records are laid end to end, each padded to 8 bytes; the size comes from the kind. */
static size_t rec_size(CUpti_ActivityKind k) {
    size_t s;
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        s = sizeof(CUpti_ActivityKernel10);
        break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        s = sizeof(CUpti_ActivityAPI);
        break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        s = sizeof(CUpti_ActivitySynchronization2);
        break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        s = sizeof(CUpti_ActivityExternalCorrelation);
        break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
        s = sizeof(CUpti_ActivityDevice5);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        s = sizeof(CUpti_ActivityMemcpy6);
        break;
    default:
        s = sizeof(CUpti_Activity);
        break;
    }
    return (s + 7) & ~(size_t)7;
}
EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
    uint8_t *p = *rec ? (uint8_t *)*rec + rec_size((*rec)->kind) : buf;
    if (p >= buf + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)(void *)p;
    return CUPTI_SUCCESS;
}

static uint8_t *put(uint8_t *p, const void *rec, CUpti_ActivityKind k) {
    memcpy(p, rec, sizeof(CUpti_Activity) > rec_size(k) ? sizeof(CUpti_Activity) : rec_size(k));
    return p + rec_size(k);
}

/* The session's records: a launch (runtime and driver), its kernel, a filtered runtime call, a
 * synchronization, a copy, the external correlation of each pushed id, a device, and a kernel
 * from before the window. Under the range profiler, the extra kernels and their launches (each
 * launch after its kernel, as CUPTI writes them) and the kernel on another context. */
static size_t fill(uint8_t *buf) {
    uint8_t *p = buf;
    uint64_t t0 = t_api_start + 1000;
    uint32_t pid = (uint32_t)getpid(), tid = (uint32_t)syscall(SYS_gettid);
    CUpti_ActivityAPI api = {CUPTI_ACTIVITY_KIND_RUNTIME,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                             t0,
                             t0 + 100,
                             pid,
                             tid,
                             1,
                             0};
    p = put(p, &api, api.kind);
    if (enabled[CUPTI_ACTIVITY_KIND_DRIVER]) {
        CUpti_ActivityAPI drv = {CUPTI_ACTIVITY_KIND_DRIVER,
                                 CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                 t0 + 10,
                                 t0 + 90,
                                 pid,
                                 tid,
                                 1,
                                 0};
        p = put(p, &drv, drv.kind);
        drv.cbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;
        p = put(p, &drv, drv.kind);
    }
    CUpti_ActivityAPI noisy = {CUPTI_ACTIVITY_KIND_RUNTIME,
                               CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                               t0 + 200,
                               t0 + 210,
                               pid,
                               tid,
                               2,
                               0};
    p = put(p, &noisy, noisy.kind);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = t0 + 500;
    k.end = t0 + 1500;
    k.correlationId = 1;
    k.streamId = 7;
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = 128, k.blockY = k.blockZ = 1;
    k.name = "_Z6squarePfi";
    k.graphId = 9;
    k.contextId = 1;
    /* Kernel replay without timestamps: the profiled context's kernels (context 1) lose theirs;
     * the correlation id and the context stay right. */
    int untimed = profiling ? env_int("FAKE_CUPTI_REPLAY_UNTIMED") : 0;
    if (untimed) k.start = k.end = k.queued = 0;
    /* Extra kernels on the same context, written before it in the buffer (the backend orders
     * them by start, or by correlation id when they have no timestamps), and one on another
     * context. */
    int extra = profiling ? env_int("FAKE_CUPTI_EXTRA_KERNELS") : 0;
    for (int i = extra; i >= 1; i--) {
        CUpti_ActivityKernel10 x = k;
        static const char *const names[] = {"kernel_a", "kernel_b", "kernel_c", "kernel_d"};
        x.name = names[(i - 1) % 4];
        x.start = t0 + 2100 + (uint64_t)i * 100;
        x.end = x.start + 50;
        x.correlationId = 200 + (uint32_t)i;
        x.graphId = 0;
        if (untimed) x.start = x.end = 0;
        p = put(p, &x, x.kind);
        CUpti_ActivityAPI launch = api;
        launch.start = t0 + 2000 + (uint64_t)i * 100;
        launch.end = launch.start + 60;
        launch.correlationId = x.correlationId;
        if (untimed != 2 || i != 2) p = put(p, &launch, launch.kind);
    }
    if (profiling && env_int("FAKE_CUPTI_OTHER_CTX")) {
        CUpti_ActivityKernel10 x = k;
        x.name = "kernel_other_ctx";
        x.contextId = 2;
        x.start = t0 + 600;
        x.end = t0 + 700;
        x.correlationId = 300;
        x.graphId = 0;
        p = put(p, &x, x.kind);
    }
    p = put(p, &k, k.kind);
    if (enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]) {
        CUpti_ActivitySynchronization2 s;
        memset(&s, 0, sizeof s);
        s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
        s.start = t0 + 300;
        s.end = t0 + 1600;
        s.correlationId = 1;
        s.streamId = 7;
        p = put(p, &s, s.kind);
    }
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.bytes = 4096;
    m.start = t0 + 1700;
    m.end = t0 + 2000;
    m.correlationId = 3;
    m.streamId = 7;
    p = put(p, &m, m.kind);
    for (int i = 0; i < pushed_n; i++) {
        CUpti_ActivityExternalCorrelation x = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                               CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, pushed[i],
                                               (uint32_t)(100 + i), 0};
        p = put(p, &x, x.kind);
    }
    pushed_n = 0;
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 3; /* one the driver did not list */
    d.name = "CUPTI-only GPU";
    d.numMultiprocessors = 4;
    p = put(p, &d, d.kind);
    k.start = 1;
    k.end = 2;
    k.correlationId = 4;
    p = put(p, &k, k.kind);
    return (size_t)(p - buf);
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    if (req_fn == NULL || done_fn == NULL) return CUPTI_SUCCESS;
    int n = env_int("FAKE_CUPTI_BUFFERS");
    if (n < 1) n = 1;
    uint8_t *first = NULL;
    size_t first_size = 0;
    for (int i = 0; i < n; i++) {
        uint8_t *b = NULL;
        size_t size = 0, max = 0;
        req_fn(&b, &size, &max);
        if (b == NULL) continue;
        if (first == NULL) {
            first = b;
            first_size = size;
        } else {
            done_fn(NULL, 0, b, size, 0); /* an unused buffer goes back empty */
        }
    }
    if (first) done_fn(NULL, 0, first, first_size, fill(first));
    return CUPTI_SUCCESS;
}

/* ---- the range profiler ---------------------------------------------------------------------- */
#ifndef FAKE_NO_RANGE_PROFILER

static char calls[8192];
static int live; /* objects made and not yet destroyed (initialize, host, range profiler) */

/* The calls made since the last reset, one name per line. */
EXPORT const char *fake_cupti_calls(void) {
    return calls;
}
EXPORT void fake_cupti_reset_calls(void) {
    calls[0] = '\0';
}
EXPORT int fake_cupti_live(void) {
    return live;
}
static void logc(const char *name) {
    size_t n = strlen(calls);
    if (n + strlen(name) + 2 < sizeof calls) {
        strcpy(calls + n, name);
        strcat(calls, "\n");
    }
}

static struct host {
    int alive;
    char metrics[16][128];
    int n;
} host_obj;
static struct rp {
    int alive, configured, started, stopped, decoded;
    uint8_t *counter_data;
    size_t counter_data_size;
} rp_obj;
static int profiler_init;
/* The context the stand-in driver hands out (fake_libcuda.c), compared, never read. */
#define FAKE_CTX ((CUcontext)(void *)(uintptr_t)0x1000c0)

static int known_metric(const char *name) {
    return name && strstr(name, "__") != NULL;
}

/* How many ranges the session measured: one per kernel on the profiled context. */
static size_t ranges(void) {
    return 1 + (size_t)env_int("FAKE_CUPTI_EXTRA_KERNELS") +
           (size_t)env_int("FAKE_CUPTI_RANGE_SKEW");
}

EXPORT CUptiResult cuptiGetContextId(CUcontext c, uint32_t *id) {
    *id = c == FAKE_CTX ? 1 : 99;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p) {
    logc("cuptiProfilerInitialize");
    if (p->structSize != CUpti_Profiler_Initialize_Params_STRUCT_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!profiler_init) live++;
    profiler_init = 1;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p) {
    (void)p;
    logc("cuptiProfilerDeInitialize");
    if (profiler_init) live--;
    profiler_init = 0;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p) {
    logc("cuptiProfilerDeviceSupported");
    int old = env_int("FAKE_CUPTI_PROFILER_UNSUPPORTED");
    p->architecture =
        old ? CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED : CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->sli = p->vGpu = p->confidentialCompute = p->cmp = p->wsl =
        CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->isSupported = p->architecture;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p) {
    logc("cuptiDeviceGetChipName");
    if (!profiler_init) return CUPTI_ERROR_NOT_INITIALIZED;
    p->pChipName = "GA100";
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p) {
    logc("cuptiProfilerGetCounterAvailability");
    if (p->ctx != FAKE_CTX) return CUPTI_ERROR_INVALID_CONTEXT;
    if (p->pCounterAvailabilityImage == NULL) {
        p->counterAvailabilityImageSize = 64;
    } else {
        if (p->counterAvailabilityImageSize < 64) return CUPTI_ERROR_INVALID_PARAMETER;
        memset(p->pCounterAvailabilityImage, 0xA5, 64);
    }
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerHostInitialize(strobe__host_init_params *p) {
    logc("cuptiProfilerHostInitialize");
    if (p->structSize != STROBE__SIZE_UP_TO(strobe__host_init_params, pHostObject) ||
        host_obj.alive || p->pChipName == NULL || strcmp(p->pChipName, "GA100") != 0 ||
        p->pCounterAvailabilityImage == NULL || p->pCounterAvailabilityImage[63] != 0xA5 ||
        p->profilerType != STROBE__PROFILER_TYPE_RANGE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memset(&host_obj, 0, sizeof host_obj);
    host_obj.alive = 1;
    live++;
    p->pHostObject = (strobe__host_object *)(void *)&host_obj;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerHostDeinitialize(strobe__host_deinit_params *p) {
    logc("cuptiProfilerHostDeinitialize");
    if (p->pHostObject != (strobe__host_object *)(void *)&host_obj || !host_obj.alive)
        return CUPTI_ERROR_INVALID_PARAMETER;
    host_obj.alive = 0;
    live--;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerHostConfigAddMetrics(strobe__host_add_metrics_params *p) {
    logc("cuptiProfilerHostConfigAddMetrics");
    if (!host_obj.alive) return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numMetrics; i++) {
        if (!known_metric(p->ppMetricNames[i])) return CUPTI_ERROR_INVALID_METRIC_NAME;
        if (host_obj.n < 16)
            snprintf(host_obj.metrics[host_obj.n++], sizeof host_obj.metrics[0], "%s",
                     p->ppMetricNames[i]);
    }
    return CUPTI_SUCCESS;
}
/* The config image: "CFG" and the metric names, comma-separated. */
EXPORT CUptiResult cuptiProfilerHostGetConfigImageSize(strobe__host_image_size_params *p) {
    logc("cuptiProfilerHostGetConfigImageSize");
    if (!host_obj.alive || host_obj.n == 0) return CUPTI_ERROR_INVALID_OPERATION;
    p->configImageSize = 4 + 129 * (size_t)host_obj.n;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerHostGetConfigImage(strobe__host_image_params *p) {
    logc("cuptiProfilerHostGetConfigImage");
    if (!host_obj.alive || p->configImageSize < 4 + 129 * (size_t)host_obj.n)
        return CUPTI_ERROR_INVALID_PARAMETER;
    char *c = (char *)p->pConfigImage;
    strcpy(c, "CFG");
    for (int i = 0; i < host_obj.n; i++) {
        strcat(c, i ? "," : ":");
        strcat(c, host_obj.metrics[i]);
    }
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiProfilerHostGetNumOfPasses(strobe__host_passes_params *p) {
    logc("cuptiProfilerHostGetNumOfPasses");
    p->numOfPasses = 2;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p) {
    logc("cuptiRangeProfilerEnable");
    if (env_int("FAKE_CUPTI_PROFILER_PRIVILEGES")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    if (p->ctx != FAKE_CTX || rp_obj.alive || !profiler_init) return CUPTI_ERROR_INVALID_PARAMETER;
    memset(&rp_obj, 0, sizeof rp_obj);
    rp_obj.alive = 1;
    live++;
    p->pRangeProfilerObject = (CUpti_RangeProfiler_Object *)(void *)&rp_obj;
    return CUPTI_SUCCESS;
}
#define RP(p) ((struct rp *)(void *)(p)->pRangeProfilerObject)
EXPORT CUptiResult cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p) {
    logc("cuptiRangeProfilerDisable");
    if (RP(p) != &rp_obj || !rp_obj.alive) return CUPTI_ERROR_INVALID_PARAMETER;
    rp_obj.alive = 0;
    live--;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
    logc("cuptiRangeProfilerGetCounterDataSize");
    if (RP(p) != &rp_obj || p->numMetrics == 0 || p->maxNumOfRanges == 0 ||
        p->maxNumRangeTreeNodes < p->maxNumOfRanges)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numMetrics; i++)
        if (!known_metric(p->pMetricNames[i])) return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->counterDataSize = 64 + p->maxNumOfRanges * p->numMetrics * 8;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
    logc("cuptiRangeProfilerCounterDataImageInitialize");
    if (RP(p) != &rp_obj || p->counterDataSize < 64 || p->pCounterData == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memset(p->pCounterData, 0, p->counterDataSize); /* the whole image is written (ASan) */
    strcpy((char *)p->pCounterData, "CDI");
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p) {
    logc("cuptiRangeProfilerSetConfig");
    if (RP(p) != &rp_obj || p->pConfig == NULL ||
        strncmp((const char *)p->pConfig, "CFG", 3) != 0 || p->pCounterDataImage == NULL ||
        strcmp((const char *)p->pCounterDataImage, "CDI") != 0 || p->range != CUPTI_AutoRange ||
        p->replayMode != CUPTI_KernelReplay || p->numNestingLevels != 1 || p->maxRangesPerPass == 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    rp_obj.configured = 1;
    rp_obj.counter_data = p->pCounterDataImage;
    rp_obj.counter_data_size = p->counterDataImageSize;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p) {
    logc("cuptiRangeProfilerStart");
    if (RP(p) != &rp_obj || !rp_obj.configured) return CUPTI_ERROR_INVALID_OPERATION;
    rp_obj.started = 1;
    rp_obj.stopped = rp_obj.decoded = 0;
    /* The kernels the next flush reports are launched from now on. */
    t_api_start = now();
    profiling = 1;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p) {
    logc("cuptiRangeProfilerStop");
    if (RP(p) != &rp_obj || !rp_obj.started) return CUPTI_ERROR_INVALID_OPERATION;
    rp_obj.started = 0;
    rp_obj.stopped = 1;
    p->isAllPassSubmitted = 1;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p) {
    logc("cuptiRangeProfilerDecodeData");
    if (RP(p) != &rp_obj || !rp_obj.stopped) return CUPTI_ERROR_INVALID_OPERATION;
    strcpy((char *)rp_obj.counter_data, "DECODED");
    rp_obj.decoded = 1;
    p->numOfRangeDropped = 0;
    return CUPTI_SUCCESS;
}
EXPORT CUptiResult
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
    logc("cuptiRangeProfilerGetCounterDataInfo");
    if (p->pCounterDataImage == NULL || strcmp((const char *)p->pCounterDataImage, "DECODED") != 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->numTotalRanges = ranges();
    return CUPTI_SUCCESS;
}
/* Range r, metric j: 1000 * (r + 1) + j, plus 0.25 for an average. */
EXPORT CUptiResult cuptiProfilerHostEvaluateToGpuValues(strobe__host_evaluate_params *p) {
    logc("cuptiProfilerHostEvaluateToGpuValues");
    if (p->pHostObject != (strobe__host_object *)(void *)&host_obj || !host_obj.alive ||
        p->pCounterDataImage == NULL ||
        strcmp((const char *)p->pCounterDataImage, "DECODED") != 0 || p->rangeIndex >= ranges())
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t j = 0; j < p->numMetrics; j++) {
        const char *m = p->ppMetricNames[j];
        if (!known_metric(m)) return CUPTI_ERROR_INVALID_METRIC_NAME;
        size_t l = strlen(m);
        p->pMetricValues[j] = 1000.0 * (double)(p->rangeIndex + 1) + (double)j +
                              (l > 4 && strcmp(m + l - 4, ".avg") == 0 ? 0.25 : 0);
    }
    return CUPTI_SUCCESS;
}
#endif /* FAKE_NO_RANGE_PROFILER */
