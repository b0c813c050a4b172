/* fake_libcuda.c: a stand-in libcuda.so.1 for test_cuda_fake: the few driver calls the CUDA
 * backend makes, answering for one device (FAKE_CUDA_DEVICES sets how many, FAKE_CUDA_INIT a
 * cuInit result), and the context calls of the range profiler. Declared without cuda.h, whose
 * macros rename some of these. As the real driver does, the first cuInit of the process opens
 * the library named by CUDA_INJECTION64_PATH and calls its InitializeInjection (FAKE_CUDA_INJECTED
 * counts the calls, for test_cuda_inject). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static int injected;
EXPORT int fake_cuda_injections(void);
EXPORT int fake_cuda_injections(void) {
    return injected;
}

EXPORT int cuInit(unsigned flags);
EXPORT int cuInit(unsigned flags) {
    (void)flags;
    const char *tool = getenv("CUDA_INJECTION64_PATH");
    static int tried;
    if (tool && *tool && !tried) {
        tried = 1;
        void *h = dlopen(tool, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init && init() == 1) injected++;
    }
    return env_int("FAKE_CUDA_INIT", 0);
}
EXPORT int cuDeviceGetCount(int *n);
EXPORT int cuDeviceGetCount(int *n) {
    *n = env_int("FAKE_CUDA_DEVICES", 1);
    return 0;
}
EXPORT int cuDeviceGet(int *dev, int ordinal);
EXPORT int cuDeviceGet(int *dev, int ordinal) {
    *dev = ordinal;
    return 0;
}
/* Each attribute answers 1000 + its number, so that the test can tell them apart. */
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev);
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = 1000 + attr;
    return 0;
}
EXPORT int cuDeviceGetName(char *name, int len, int dev);
EXPORT int cuDeviceGetName(char *name, int len, int dev) {
    snprintf(name, (size_t)len, "Fake GPU %d", dev);
    return 0;
}
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev);
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
    (void)dev;
    *bytes = (size_t)80 << 30;
    return 0;
}
EXPORT int cuGetErrorName(int rc, const char **s);
EXPORT int cuGetErrorName(int rc, const char **s) {
    *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
    return 0;
}

/* Contexts, for the range profiler: no context is current, and device 0's primary context is a
 * fixed value the stand-in CUPTI knows (compared, never read). */
#define FAKE_CTX ((void *)(uintptr_t)0x1000c0)
static int primary_refs, pushed;
EXPORT int fake_cuda_primary_refs(void);
EXPORT int fake_cuda_primary_refs(void) {
    return primary_refs;
}
EXPORT int cuCtxGetCurrent(void **ctx);
EXPORT int cuCtxGetCurrent(void **ctx) {
    *ctx = pushed ? FAKE_CTX : NULL;
    return 0;
}
EXPORT int cuCtxGetDevice(int *dev);
EXPORT int cuCtxGetDevice(int *dev) {
    *dev = 0;
    return pushed ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev);
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    if (dev != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    primary_refs++;
    *ctx = FAKE_CTX;
    return 0;
}
EXPORT int cuDevicePrimaryCtxRelease_v2(int dev);
EXPORT int cuDevicePrimaryCtxRelease_v2(int dev) {
    if (dev != 0 || primary_refs == 0) return 1;
    primary_refs--;
    return 0;
}
EXPORT int cuCtxPushCurrent_v2(void *ctx);
EXPORT int cuCtxPushCurrent_v2(void *ctx) {
    if (ctx != FAKE_CTX) return 1;
    pushed++;
    return 0;
}
EXPORT int cuCtxPopCurrent_v2(void **ctx);
EXPORT int cuCtxPopCurrent_v2(void **ctx) {
    if (pushed == 0) return 1;
    pushed--;
    *ctx = FAKE_CTX;
    return 0;
}
/* The calls of the CUDA profiler API and the synchronizations, in order, for test_markers:
 * fake_cuda_log() reads "cuProfilerStart;cuCtxSynchronize;...", fake_cuda_log_reset() empties it,
 * and the counters count each (FAKE_CUDA_PROFILER sets cuProfilerStart's result). */
static char call_log[8192];
static int ctx_syncs, stream_syncs;
static void log_call(const char *name) {
    size_t n = strlen(call_log), k = strlen(name);
    if (n + k + 2 < sizeof call_log) {
        memcpy(call_log + n, name, k);
        call_log[n + k] = ';';
        call_log[n + k + 1] = '\0';
    }
}
EXPORT const char *fake_cuda_log(void);
EXPORT const char *fake_cuda_log(void) {
    return call_log;
}
EXPORT void fake_cuda_log_reset(void);
EXPORT void fake_cuda_log_reset(void) {
    call_log[0] = '\0';
    ctx_syncs = stream_syncs = 0;
}
EXPORT int fake_cuda_ctx_syncs(void);
EXPORT int fake_cuda_ctx_syncs(void) {
    return ctx_syncs;
}
EXPORT int fake_cuda_stream_syncs(void);
EXPORT int fake_cuda_stream_syncs(void) {
    return stream_syncs;
}
EXPORT int cuCtxSynchronize(void);
EXPORT int cuCtxSynchronize(void) {
    ctx_syncs++;
    log_call("cuCtxSynchronize");
    return pushed ? 0 : 201;
}
EXPORT int cuStreamSynchronize(void *stream);
EXPORT int cuStreamSynchronize(void *stream) {
    (void)stream;
    stream_syncs++;
    log_call("cuStreamSynchronize");
    return 0;
}
/* The stand-in CUPTI's driver-API callback (fake_libcupti.c sets it when its subscriber enables
 * the CUDA profiler API's callbacks): called at each call's entry (0) and exit (1). */
static void (*cupti_call)(const char *name, int exit_site);
EXPORT void fake_cuda_set_cupti(void (*fn)(const char *, int));
EXPORT void fake_cuda_set_cupti(void (*fn)(const char *, int)) {
    cupti_call = fn;
}
EXPORT int cuProfilerStart(void);
EXPORT int cuProfilerStart(void) {
    if (cupti_call) cupti_call("cuProfilerStart", 0);
    log_call("cuProfilerStart");
    int rc = env_int("FAKE_CUDA_PROFILER", 0);
    if (cupti_call) cupti_call("cuProfilerStart", 1);
    return rc;
}
EXPORT int cuProfilerStop(void);
EXPORT int cuProfilerStop(void) {
    if (cupti_call) cupti_call("cuProfilerStop", 0);
    log_call("cuProfilerStop");
    if (cupti_call) cupti_call("cuProfilerStop", 1);
    return 0;
}
