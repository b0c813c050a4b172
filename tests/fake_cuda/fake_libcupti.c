/* fake_libcupti.c: a stand-in CUPTI for test_cuda_fake, so that the backend's loading, buffers,
 * callbacks, clock and correlation run without a GPU. It keeps the records the test expects and
 * hands them over on cuptiActivityFlushAll through the client's buffer callbacks, the way CUPTI
 * does. Knobs (environment): FAKE_CUPTI_BUSY=1 (another subscriber), FAKE_CUPTI_DROPPED=N (records
 * CUPTI says it dropped), FAKE_CUPTI_NO_TSCB=1 (no timestamp callback: CUPTI's own clock, 1 s
 * behind CLOCK_REALTIME), FAKE_CUPTI_BUFFERS=N (buffers requested at flush). Built a second time
 * with FAKE_NO_TIMESTAMP (no cuptiGetTimestamp) for the missing-symbol case. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cupti.h>

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
EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u) {
    (void)f, (void)u;
    if (env_int("FAKE_CUPTI_BUSY")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscribed = 1;
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
 * from before the window. */
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
