/* cupti_metrics.c: CUPTI range-profiler metrics per kernel (see cupti_metrics.h).
 *
 * Contents:
 *   the metric list (both builds)
 *   loading: the profiler's symbols, looked up in the libcupti the backend opened
 *   start: device checks, config image, counter data image, enable, set config, start
 *   stop: decode, evaluate every range, tear down
 *   matching ranges to kernel records, and the args
 *
 * Threads: everything runs under the session lock (the backend's start, stop and release). */
#include "cupti_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"

/* ---- the metric list ------------------------------------------------------------------------ */

int strobe__cupti_metrics_parse(const char *list, char *buf, size_t buf_size, const char **names,
                                char *why, size_t why_size) {
    size_t len = strlen(list);
    if (len + 1 > buf_size) {
        snprintf(why, why_size, "cuda_metrics is %zu bytes long; at most %zu", len, buf_size - 1);
        return STROBE_EINVAL;
    }
    memcpy(buf, list, len + 1);
    int n = 0;
    char *p = buf;
    for (;;) {
        char *end = strchr(p, ',');
        if (end) *end = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        size_t l = strlen(p);
        while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
            p[--l] = '\0';
        if (l == 0) {
            snprintf(why, why_size, "cuda_metrics (\"%.100s\") has an empty metric name", list);
            return STROBE_EINVAL;
        }
        if (n == STROBE__CUPTI_MAX_METRICS) {
            snprintf(why, why_size, "cuda_metrics names more than %d metrics",
                     STROBE__CUPTI_MAX_METRICS);
            return STROBE_EINVAL;
        }
        names[n++] = p;
        if (end == NULL) break;
        p = end + 1;
    }
    return n;
}

#if STROBE_HAVE_CUPTI_HEADERS && defined(__has_include)
#if __has_include(<cupti_range_profiler.h>)
#define STROBE__HAVE_RANGE_PROFILER 1
#endif
#endif

#if STROBE__HAVE_RANGE_PROFILER

#include <dlfcn.h>

#include <cupti.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "util/log.h"
#include "strobe/backend.h"

#include "cupti_host_api.h"

#define SIZE_UP_TO STROBE__SIZE_UP_TO

/* ---- loading -------------------------------------------------------------------------------- */

typedef CUptiResult (*params_fn)(void *);
typedef int (*cu_ctx_get_fn)(CUcontext *);
typedef int (*cu_ctx_dev_fn)(int *);
typedef int (*cu_retain_fn)(CUcontext *, int);
typedef int (*cu_release_fn)(int);
typedef int (*cu_ctx_push_fn)(CUcontext);
typedef int (*cu_void_fn)(void);
typedef int (*cu_attr_fn)(int *, int, int);

/* The profiler's calls all take one params struct, so one pointer type serves them all. */
static struct {
    int loaded;
    params_fn ProfilerInitialize, ProfilerDeInitialize, DeviceGetChipName, GetCounterAvailability,
        HostInitialize, HostDeinitialize, HostConfigAddMetrics, HostGetConfigImageSize,
        HostGetConfigImage, HostEvaluateToGpuValues, Enable, Disable, GetCounterDataSize,
        CounterDataImageInitialize, SetConfig, Start, Stop, DecodeData, GetCounterDataInfo;
    /* optional */
    params_fn DeviceSupported, HostGetNumOfPasses;
    CUptiResult (*GetContextId)(CUcontext, uint32_t *);
    /* driver */
    cu_ctx_get_fn cuCtxGetCurrent;
    cu_ctx_dev_fn cuCtxGetDevice;
    cu_retain_fn cuDevicePrimaryCtxRetain;
    cu_release_fn cuDevicePrimaryCtxRelease;
    cu_ctx_push_fn cuCtxPushCurrent;
    cu_ctx_get_fn cuCtxPopCurrent;
    cu_void_fn cuCtxSynchronize;
    cu_attr_fn cuDeviceGetAttribute;
} P;

/* Looks up the range profiler in the loaded CUPTI. @return 0, or STROBE_ENOTSUP with why naming
 * the first call missing (a CUPTI older than 12.6). */
static int load(const strobe__cupti_metrics_env *env, char *why, size_t why_size) {
    static const struct {
        const char *name;
        size_t offset;
        int required;
    } syms[] = {
#define S(field, name, req) {name, offsetof(__typeof__(P), field), req}
        S(ProfilerInitialize, "cuptiProfilerInitialize", 1),
        S(ProfilerDeInitialize, "cuptiProfilerDeInitialize", 1),
        S(DeviceGetChipName, "cuptiDeviceGetChipName", 1),
        S(GetCounterAvailability, "cuptiProfilerGetCounterAvailability", 1),
        S(HostInitialize, "cuptiProfilerHostInitialize", 1),
        S(HostDeinitialize, "cuptiProfilerHostDeinitialize", 1),
        S(HostConfigAddMetrics, "cuptiProfilerHostConfigAddMetrics", 1),
        S(HostGetConfigImageSize, "cuptiProfilerHostGetConfigImageSize", 1),
        S(HostGetConfigImage, "cuptiProfilerHostGetConfigImage", 1),
        S(HostEvaluateToGpuValues, "cuptiProfilerHostEvaluateToGpuValues", 1),
        S(Enable, "cuptiRangeProfilerEnable", 1),
        S(Disable, "cuptiRangeProfilerDisable", 1),
        S(GetCounterDataSize, "cuptiRangeProfilerGetCounterDataSize", 1),
        S(CounterDataImageInitialize, "cuptiRangeProfilerCounterDataImageInitialize", 1),
        S(SetConfig, "cuptiRangeProfilerSetConfig", 1),
        S(Start, "cuptiRangeProfilerStart", 1),
        S(Stop, "cuptiRangeProfilerStop", 1),
        S(DecodeData, "cuptiRangeProfilerDecodeData", 1),
        S(GetCounterDataInfo, "cuptiRangeProfilerGetCounterDataInfo", 1),
        S(DeviceSupported, "cuptiProfilerDeviceSupported", 0),
        S(HostGetNumOfPasses, "cuptiProfilerHostGetNumOfPasses", 0),
        S(GetContextId, "cuptiGetContextId", 0),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(env->cupti, syms[i].name);
        if (p == NULL && syms[i].required) {
            snprintf(why, why_size,
                     "cuda_metrics: %.200s lacks %s: the CUPTI range profiler needs CUPTI 12.6 or "
                     "later",
                     env->cupti_path, syms[i].name);
            return STROBE_ENOTSUP;
        }
        memcpy((char *)&P + syms[i].offset, &p, sizeof p);
    }
    static const struct {
        const char *name, *alt;
        size_t offset;
    } drv[] = {
#define D(field, name, alt) {name, alt, offsetof(__typeof__(P), field)}
        D(cuCtxGetCurrent, "cuCtxGetCurrent", NULL),
        D(cuCtxGetDevice, "cuCtxGetDevice", NULL),
        D(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
        D(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
        D(cuCtxPushCurrent, "cuCtxPushCurrent_v2", "cuCtxPushCurrent"),
        D(cuCtxPopCurrent, "cuCtxPopCurrent_v2", "cuCtxPopCurrent"),
        D(cuCtxSynchronize, "cuCtxSynchronize", NULL),
        D(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL),
#undef D
    };
    for (size_t i = 0; i < sizeof drv / sizeof drv[0]; i++) {
        void *p = dlsym(env->cuda, drv[i].name);
        if (p == NULL && drv[i].alt) p = dlsym(env->cuda, drv[i].alt);
        memcpy((char *)&P + drv[i].offset, &p, sizeof p);
    }
    if (P.cuCtxGetCurrent == NULL || P.cuDevicePrimaryCtxRetain == NULL ||
        P.cuDevicePrimaryCtxRelease == NULL) {
        snprintf(
            why, why_size,
            "cuda_metrics: the CUDA driver lacks cuCtxGetCurrent or the primary context calls");
        return STROBE_ENOTSUP;
    }
    P.loaded = 1;
    return 0;
}

/* ---- state of one session ----------------------------------------------------------------- */

typedef struct noted_kernel {
    int64_t start_ns;
    size_t act;
    size_t order; /* record order, for a stable sort */
    uint32_t correlation;
    int untimed; /* CUPTI wrote it without timestamps */
} noted_kernel;

static struct {
    int active;
    const strobe__cupti_metrics_env *env;
    char list[1024];
    const char *names[STROBE__CUPTI_MAX_METRICS];
    int n;
    /* what start set up, undone in reverse */
    int profiler_init;
    strobe__host_object *host;
    CUpti_RangeProfiler_Object *rp;
    int retained_dev; /* device whose primary context we retained, or -1 */
    CUcontext ctx;
    uint32_t ctx_id;
    int have_ctx_id;
    int started;
    uint8_t *config;
    size_t config_size;
    uint8_t *counter_data;
    size_t counter_data_size;
    uint8_t *avail;
    int64_t t_start; /* strobe's clock when the profiler started */
    size_t passes;
    /* what stop read */
    size_t nranges, dropped;
    double *values; /* nranges x n */
    /* records noted by the backend */
    noted_kernel *kernels;
    size_t nkernels, cap_kernels;
    /* the args */
    strobe__cupti_metric_arg *args;
    size_t nargs;
    char *json; /* nargs x 32 bytes */
    char warn[4][300];
    int warn_n;
} M = {.retained_dev = -1};

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...) {
    if (M.warn_n >= (int)(sizeof M.warn / sizeof M.warn[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(M.warn[M.warn_n++], sizeof M.warn[0], fmt, ap);
    va_end(ap);
}

static const char *cupti_err(CUptiResult rc) {
    return M.env && M.env->cupti_err ? M.env->cupti_err((int)rc) : "CUPTI error";
}

/* Undoes what start set up, in reverse. The values read at stop stay for matching. */
static void teardown(void) {
    if (M.rp) {
        if (M.started) {
            CUpti_RangeProfiler_Stop_Params p = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
            p.pRangeProfilerObject = M.rp;
            P.Stop(&p);
        }
        CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        p.pRangeProfilerObject = M.rp;
        P.Disable(&p);
    }
    M.started = 0;
    M.rp = NULL;
    if (M.host) {
        strobe__host_deinit_params p = {SIZE_UP_TO(strobe__host_deinit_params, pHostObject)};
        p.pHostObject = M.host;
        P.HostDeinitialize(&p);
    }
    M.host = NULL;
    if (M.profiler_init) {
        CUpti_Profiler_DeInitialize_Params p = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
        P.ProfilerDeInitialize(&p);
    }
    M.profiler_init = 0;
    if (M.retained_dev >= 0) P.cuDevicePrimaryCtxRelease(M.retained_dev);
    M.retained_dev = -1;
    M.ctx = NULL;
    free(M.config);
    free(M.counter_data);
    free(M.avail);
    M.config = M.counter_data = M.avail = NULL;
}

/* ---- start ------------------------------------------------------------------------------------
 */

/* Why the profiler does not support device `dev`, or NULL when it does (or cannot say). */
static const char *unsupported(int dev, char *buf, size_t size) {
    if (P.DeviceSupported == NULL) return NULL;
    CUpti_Profiler_DeviceSupported_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    p.cuDevice = dev;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    if (P.DeviceSupported(&p) != CUPTI_SUCCESS) return NULL;
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return NULL;
    int major = 0, minor = 0;
    if (P.cuDeviceGetAttribute) {
        P.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        P.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    }
    if (p.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size,
                 "device %d (compute capability %d.%d) is not supported by the CUPTI range "
                 "profiler (it needs Turing, 7.5, or later)",
                 dev, major, minor);
    else if (p.vGpu == CUPTI_PROFILER_CONFIGURATION_DISABLED)
        snprintf(buf, size, "device %d is a vGPU on which profiling is not enabled", dev);
    else if (p.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size, "device %d is a vGPU the CUPTI profiler does not support", dev);
    else if (p.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size, "device %d is in SLI mode, which the CUPTI profiler does not support",
                 dev);
    else if (p.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size, "device %d runs in confidential compute mode (no profiling)", dev);
    else if (p.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size, "device %d is a mining processor (CMP): no profiling", dev);
    else if (p.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        snprintf(buf, size, "device %d: the CUPTI profiler is not supported under this WSL", dev);
    else
        snprintf(buf, size, "the CUPTI profiler does not support device %d", dev);
    return buf;
}

/* The message of a failed profiler call, with the usual causes spelled out. */
static int failed(const char *call, CUptiResult rc, char *why, size_t why_size) {
    if (rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
        rc == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
        snprintf(why, why_size,
                 "cuda_metrics: %s: %s: the driver lets only administrators read GPU performance "
                 "counters (NVreg_RestrictProfilingToAdminUsers=1; see "
                 "https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
                 call, cupti_err(rc));
        return STROBE_ENOTSUP;
    }
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(why, why_size,
                 "cuda_metrics: %s: another profiler (Nsight Compute, ...) holds the GPU's "
                 "performance counters",
                 call);
        return STROBE_EBUSY;
    }
    if (rc == CUPTI_ERROR_OUT_OF_MEMORY) {
        snprintf(why, why_size, "cuda_metrics: %s: out of memory", call);
        return STROBE_ENOMEM;
    }
    snprintf(why, why_size, "cuda_metrics: the CUPTI range profiler cannot start (%s: %s, %d)",
             call, cupti_err(rc), (int)rc);
    return STROBE_ENOTSUP;
}

/* The context to profile: the calling thread's, else device 0's primary context (the one the
 * runtime API uses), retained until release. */
static int pick_context(int *dev, char *why, size_t why_size) {
    CUcontext ctx = NULL;
    if (P.cuCtxGetCurrent(&ctx) == 0 && ctx != NULL) {
        *dev = 0;
        if (P.cuCtxGetDevice) P.cuCtxGetDevice(dev);
        M.ctx = ctx;
        return 0;
    }
    int rc = P.cuDevicePrimaryCtxRetain(&ctx, 0);
    if (rc != 0 || ctx == NULL) {
        snprintf(why, why_size,
                 "cuda_metrics: cannot get device 0's primary context (cuDevicePrimaryCtxRetain: "
                 "%s, %d)",
                 M.env->cu_err ? M.env->cu_err(rc) : "CUresult", rc);
        return STROBE_ENOTSUP;
    }
    M.retained_dev = 0;
    *dev = 0;
    M.ctx = ctx;
    return 0;
}

/* Builds the config image, one metric at a time so that a name CUPTI rejects is named. */
static int build_config(int dev, char *why, size_t why_size) {
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = (size_t)dev;
    CUptiResult cr = P.DeviceGetChipName(&cn);
    if (cr != CUPTI_SUCCESS || cn.pChipName == NULL)
        return failed("cuptiDeviceGetChipName", cr, why, why_size);

    CUpti_Profiler_GetCounterAvailability_Params ca = {
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = M.ctx;
    cr = P.GetCounterAvailability(&ca);
    if (cr != CUPTI_SUCCESS)
        return failed("cuptiProfilerGetCounterAvailability", cr, why, why_size);
    if (ca.counterAvailabilityImageSize) {
        M.avail = malloc(ca.counterAvailabilityImageSize);
        if (M.avail == NULL) return STROBE_ENOMEM;
        ca.pCounterAvailabilityImage = M.avail;
        cr = P.GetCounterAvailability(&ca);
        if (cr != CUPTI_SUCCESS)
            return failed("cuptiProfilerGetCounterAvailability", cr, why, why_size);
    }

    strobe__host_init_params hi = {SIZE_UP_TO(strobe__host_init_params, pHostObject)};
    hi.profilerType = STROBE__PROFILER_TYPE_RANGE;
    hi.pChipName = cn.pChipName;
    hi.pCounterAvailabilityImage = M.avail;
    cr = P.HostInitialize(&hi);
    if (cr != CUPTI_SUCCESS || hi.pHostObject == NULL) {
        if (cr == CUPTI_SUCCESS) cr = CUPTI_ERROR_UNKNOWN;
        int rc = failed("cuptiProfilerHostInitialize", cr, why, why_size);
        if (rc == STROBE_ENOTSUP)
            snprintf(why, why_size,
                     "cuda_metrics: this CUPTI cannot compute metrics for chip %.40s "
                     "(cuptiProfilerHostInitialize: %s)",
                     cn.pChipName, cupti_err(cr));
        return rc;
    }
    M.host = hi.pHostObject;

    for (int i = 0; i < M.n; i++) {
        strobe__host_add_metrics_params am = {
            SIZE_UP_TO(strobe__host_add_metrics_params, numMetrics)};
        am.pHostObject = M.host;
        am.ppMetricNames = &M.names[i];
        am.numMetrics = 1;
        cr = P.HostConfigAddMetrics(&am);
        if (cr == CUPTI_ERROR_INVALID_METRIC_NAME || cr == CUPTI_ERROR_INVALID_PARAMETER) {
            snprintf(why, why_size,
                     "cuda_metrics: unknown metric \"%.100s\" for chip %.40s (CUPTI: %s); names "
                     "look like sm__cycles_elapsed.avg (ncu --query-metrics lists them)",
                     M.names[i], cn.pChipName, cupti_err(cr));
            return STROBE_EINVAL;
        }
        if (cr != CUPTI_SUCCESS)
            return failed("cuptiProfilerHostConfigAddMetrics", cr, why, why_size);
    }

    strobe__host_image_size_params is = {
        SIZE_UP_TO(strobe__host_image_size_params, configImageSize)};
    is.pHostObject = M.host;
    cr = P.HostGetConfigImageSize(&is);
    if (cr != CUPTI_SUCCESS || is.configImageSize == 0) {
        if (cr == CUPTI_SUCCESS) cr = CUPTI_ERROR_UNKNOWN;
        return failed("cuptiProfilerHostGetConfigImageSize", cr, why, why_size);
    }
    M.config = malloc(is.configImageSize);
    if (M.config == NULL) return STROBE_ENOMEM;
    M.config_size = is.configImageSize;
    strobe__host_image_params im = {SIZE_UP_TO(strobe__host_image_params, pConfigImage)};
    im.pHostObject = M.host;
    im.configImageSize = M.config_size;
    im.pConfigImage = M.config;
    cr = P.HostGetConfigImage(&im);
    if (cr != CUPTI_SUCCESS) return failed("cuptiProfilerHostGetConfigImage", cr, why, why_size);

    M.passes = 1;
    if (P.HostGetNumOfPasses) {
        strobe__host_passes_params np = {SIZE_UP_TO(strobe__host_passes_params, numOfPasses)};
        np.configImageSize = M.config_size;
        np.pConfigImage = M.config;
        if (P.HostGetNumOfPasses(&np) == CUPTI_SUCCESS && np.numOfPasses > 0)
            M.passes = np.numOfPasses;
    }
    return 0;
}

/* Enables the profiler on the context, makes the counter data image and sets the config. */
static int enable(char *why, size_t why_size) {
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = M.ctx;
    CUptiResult cr = P.Enable(&en);
    if (cr != CUPTI_SUCCESS || en.pRangeProfilerObject == NULL) {
        if (cr == CUPTI_SUCCESS) cr = CUPTI_ERROR_UNKNOWN;
        return failed("cuptiRangeProfilerEnable", cr, why, why_size);
    }
    M.rp = en.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params cs = {
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    cs.pRangeProfilerObject = M.rp;
    cs.pMetricNames = M.names;
    cs.numMetrics = (size_t)M.n;
    cs.maxNumOfRanges = STROBE__CUPTI_MAX_RANGES;
    cs.maxNumRangeTreeNodes = STROBE__CUPTI_MAX_RANGES;
    cr = P.GetCounterDataSize(&cs);
    if (cr != CUPTI_SUCCESS || cs.counterDataSize == 0) {
        if (cr == CUPTI_SUCCESS) cr = CUPTI_ERROR_UNKNOWN;
        return failed("cuptiRangeProfilerGetCounterDataSize", cr, why, why_size);
    }
    M.counter_data = malloc(cs.counterDataSize);
    if (M.counter_data == NULL) return STROBE_ENOMEM;
    M.counter_data_size = cs.counterDataSize;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = M.rp;
    ci.counterDataSize = M.counter_data_size;
    ci.pCounterData = M.counter_data;
    cr = P.CounterDataImageInitialize(&ci);
    if (cr != CUPTI_SUCCESS)
        return failed("cuptiRangeProfilerCounterDataImageInitialize", cr, why, why_size);

    /* Auto ranges (one per kernel) with kernel replay: CUPTI replays each kernel as many passes
     * as the metrics need, so any metric set works without the application's help. The price:
     * the activity records of the replayed kernels may lose their timestamps (CUPTI 2025.3 with
     * CUDA 13.0 on an H100 writes start = end = 0). The backend then gives each its launch call's
     * span (the launch returns once every pass ran) and marks it so, and the matching goes by
     * correlation id. */
    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = M.rp;
    sc.configSize = M.config_size;
    sc.pConfig = M.config;
    sc.counterDataImageSize = M.counter_data_size;
    sc.pCounterDataImage = M.counter_data;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = STROBE__CUPTI_MAX_RANGES;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    cr = P.SetConfig(&sc);
    if (cr != CUPTI_SUCCESS) return failed("cuptiRangeProfilerSetConfig", cr, why, why_size);
    return 0;
}

/* Waits for the context's queued work, so that every kernel that starts after the profiler does
 * was launched under it: the matching at stop counts on that. */
static void drain_context(void) {
    if (P.cuCtxSynchronize == NULL || P.cuCtxPushCurrent == NULL || P.cuCtxPopCurrent == NULL)
        return;
    if (P.cuCtxPushCurrent(M.ctx) != 0) return;
    P.cuCtxSynchronize();
    CUcontext popped = NULL;
    P.cuCtxPopCurrent(&popped);
}

int strobe__cupti_metrics_start(const strobe__cupti_metrics_env *env, const char *list, char *why,
                                size_t why_size) {
    strobe__cupti_metrics_release();
    M.env = env;
    int n = strobe__cupti_metrics_parse(list, M.list, sizeof M.list, M.names, why, why_size);
    if (n < 0) return n;
    M.n = n;
    int rc = P.loaded ? 0 : load(env, why, why_size);
    if (rc) return rc;

    CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult cr = P.ProfilerInitialize(&pi);
    if (cr != CUPTI_SUCCESS) {
        rc = failed("cuptiProfilerInitialize", cr, why, why_size);
        goto fail;
    }
    M.profiler_init = 1;
    int dev = 0;
    if ((rc = pick_context(&dev, why, why_size)) != 0) goto fail;
    char buf[200];
    const char *no = unsupported(dev, buf, sizeof buf);
    if (no) {
        snprintf(why, why_size, "cuda_metrics: %s", no);
        rc = STROBE_ENOTSUP;
        goto fail;
    }
    M.have_ctx_id = P.GetContextId && P.GetContextId(M.ctx, &M.ctx_id) == CUPTI_SUCCESS;
    if ((rc = build_config(dev, why, why_size)) != 0) goto fail;
    if ((rc = enable(why, why_size)) != 0) goto fail;

    drain_context();
    M.t_start = strobe_clock_now_ns();
    CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = M.rp;
    cr = P.Start(&st);
    if (cr != CUPTI_SUCCESS) {
        rc = failed("cuptiRangeProfilerStart", cr, why, why_size);
        goto fail;
    }
    M.started = 1;
    M.active = 1;
    strobe__log(STROBE_LOG_INFO,
                "CUDA: %d metrics per kernel on device %d through the range profiler (%zu "
                "pass%s per kernel)",
                M.n, dev, M.passes, M.passes == 1 ? "" : "es");
    return 0;
fail:
    if (rc == STROBE_ENOMEM && why[0] == '\0')
        snprintf(why, why_size, "cuda_metrics: out of memory");
    teardown();
    return rc;
}

int strobe__cupti_metrics_active(void) {
    return M.active;
}

/* ---- stop ----------------------------------------------------------------------------------- */

void strobe__cupti_metrics_stop(void) {
    if (!M.active || M.rp == NULL) return;
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = M.rp;
    CUptiResult cr = P.Stop(&sp);
    M.started = 0;
    if (cr != CUPTI_SUCCESS) {
        warn("CUDA: cuda_metrics: the range profiler did not stop (%s); no metrics", cupti_err(cr));
        teardown();
        return;
    }
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = M.rp;
    cr = P.DecodeData(&dd);
    if (cr != CUPTI_SUCCESS) {
        warn("CUDA: cuda_metrics: the counter data could not be decoded (%s); no metrics",
             cupti_err(cr));
        teardown();
        return;
    }
    M.dropped = dd.numOfRangeDropped;
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = M.counter_data;
    gi.counterDataImageSize = M.counter_data_size;
    cr = P.GetCounterDataInfo(&gi);
    size_t n = cr == CUPTI_SUCCESS ? gi.numTotalRanges : 0;
    if (n > STROBE__CUPTI_MAX_RANGES) n = STROBE__CUPTI_MAX_RANGES;
    M.values = n ? calloc(n * (size_t)M.n, sizeof *M.values) : NULL;
    if (n && M.values == NULL) {
        warn("CUDA: cuda_metrics: out of memory reading %zu ranges; no metrics", n);
        n = 0;
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        strobe__host_evaluate_params ev = {SIZE_UP_TO(strobe__host_evaluate_params, pMetricValues)};
        ev.pHostObject = M.host;
        ev.pCounterDataImage = M.counter_data;
        ev.counterDataImageSize = M.counter_data_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = M.names;
        ev.numMetrics = (size_t)M.n;
        ev.pMetricValues = &M.values[i * (size_t)M.n];
        if (P.HostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) {
            /* NaN marks a range without values: its kernel gets no args. */
            for (int j = 0; j < M.n; j++)
                M.values[i * (size_t)M.n + (size_t)j] = __builtin_nan("");
            bad++;
        }
    }
    M.nranges = n;
    if (bad) warn("CUDA: cuda_metrics: %zu of %zu ranges could not be evaluated", bad, n);
    if (M.dropped)
        warn("CUDA: cuda_metrics: %zu kernels beyond the first %d were not measured (the counter "
             "data holds that many ranges)",
             M.dropped, STROBE__CUPTI_MAX_RANGES);
    teardown();
}

/* ---- matching ------------------------------------------------------------------------------- */

int strobe__cupti_metrics_note_kernel(uint32_t context, uint32_t correlation, int64_t start_ns,
                                      int untimed, size_t act) {
    if (!M.active) return 0;
    if (M.have_ctx_id && context != M.ctx_id) return 0;
    if (M.nkernels == M.cap_kernels) {
        size_t cap = M.cap_kernels ? M.cap_kernels * 2 : 256;
        noted_kernel *k = realloc(M.kernels, cap * sizeof *k);
        if (k == NULL) return STROBE_ENOMEM;
        M.kernels = k;
        M.cap_kernels = cap;
    }
    M.kernels[M.nkernels] = (noted_kernel){start_ns, act, M.nkernels, correlation, untimed != 0};
    M.nkernels++;
    return 0;
}

static int cmp_kernel(const void *a, const void *b) {
    const noted_kernel *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Launch order: CUPTI numbers API calls as they are made. */
static int cmp_correlation(const void *a, const void *b) {
    const noted_kernel *x = a, *y = b;
    if (x->correlation != y->correlation) return x->correlation < y->correlation ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* A JSON number whatever the locale; null where CUPTI gave no finite value. */
static void format_value(double v, char *out, size_t size) {
    if (!(v == v) || v > 1e300 || v < -1e300) {
        snprintf(out, size, "null");
        return;
    }
    if (v == (double)(int64_t)v && v < 9007199254740992.0 && v > -9007199254740992.0)
        snprintf(out, size, "%lld", (long long)v);
    else
        snprintf(out, size, "%.9g", v);
    for (char *p = out; *p; p++)
        if (*p == ',') *p = '.';
}

/* Args in act order (the merge walks the acts once); a kernel's metrics in the order named (the
 * keys point into one copy of the list, in order). */
static int cmp_arg(const void *a, const void *b) {
    const strobe__cupti_metric_arg *x = a, *y = b;
    if (x->act != y->act) return x->act < y->act ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

int strobe__cupti_metrics_match(void) {
    if (!M.active) return 0;
    /* Kernels that started before the profiler ran before it (start drained the context). Those
     * without timestamps were replayed by it, so they ran under it; start times cannot order
     * them, but their correlation ids give the launch order, which is the ranges' order (kernel
     * replay serializes the context's kernels). */
    size_t keep = 0, untimed = 0;
    for (size_t i = 0; i < M.nkernels; i++) {
        if (M.kernels[i].untimed || M.kernels[i].start_ns >= M.t_start) {
            untimed += M.kernels[i].untimed != 0;
            M.kernels[keep++] = M.kernels[i];
        }
    }
    M.nkernels = keep;
    if (M.nkernels > 1)
        qsort(M.kernels, M.nkernels, sizeof *M.kernels, untimed ? cmp_correlation : cmp_kernel);
    if (M.nranges == 0) {
        if (M.nkernels)
            warn("CUDA: cuda_metrics: the range profiler measured no kernel (%zu ran)", M.nkernels);
        return 0;
    }
    if (M.nranges + M.dropped != M.nkernels) {
        warn("CUDA: cuda_metrics: %zu kernel ranges measured for %zu kernel records on the "
             "profiled context (records dropped, or kernels launched as the session started); "
             "the metrics are left out rather than put on the wrong kernels",
             M.nranges + M.dropped, M.nkernels);
        return 0;
    }
    size_t cap = M.nranges * (size_t)M.n;
    M.args = malloc(cap * sizeof *M.args);
    M.json = malloc(cap * 32);
    if (M.args == NULL || M.json == NULL) return STROBE_ENOMEM;
    M.nargs = 0;
    for (size_t i = 0; i < M.nranges; i++) {
        if (M.kernels[i].act == SIZE_MAX) continue; /* outside the window: not in the batch */
        for (int j = 0; j < M.n; j++) {
            double v = M.values[i * (size_t)M.n + (size_t)j];
            if (!(v == v)) continue;
            char *json = M.json + M.nargs * 32;
            format_value(v, json, 32);
            M.args[M.nargs++] = (strobe__cupti_metric_arg){M.kernels[i].act, M.names[j], json};
        }
    }
    if (M.nargs > 1) qsort(M.args, M.nargs, sizeof *M.args, cmp_arg);
    return 0;
}

const strobe__cupti_metric_arg *strobe__cupti_metrics_args(size_t *count) {
    *count = M.nargs;
    return M.args;
}

int strobe__cupti_metrics_warnings(int (*add_warning)(void *, const char *), void *ctx) {
    int rc = 0;
    for (int i = 0; rc == 0 && add_warning && i < M.warn_n; i++)
        rc = add_warning(ctx, M.warn[i]);
    return rc;
}

void strobe__cupti_metrics_release(void) {
    teardown();
    free(M.values);
    free(M.kernels);
    free(M.args);
    free(M.json);
    M.values = NULL;
    M.kernels = NULL;
    M.args = NULL;
    M.json = NULL;
    M.nranges = M.dropped = M.nkernels = M.cap_kernels = M.nargs = 0;
    M.warn_n = 0;
    M.active = 0;
    M.have_ctx_id = 0;
}

#else /* no range profiler in the headers */

int strobe__cupti_metrics_start(const strobe__cupti_metrics_env *env, const char *list, char *why,
                                size_t why_size) {
    (void)env, (void)list;
    snprintf(why, why_size,
             "cuda_metrics: this build of strobe was made with CUPTI headers older than 12.6 "
             "(no cupti_range_profiler.h), so it cannot drive the range profiler");
    return STROBE_ENOTSUP;
}
int strobe__cupti_metrics_active(void) {
    return 0;
}
void strobe__cupti_metrics_stop(void) {}
int strobe__cupti_metrics_note_kernel(uint32_t context, uint32_t correlation, int64_t start_ns,
                                      int untimed, size_t act) {
    (void)context, (void)correlation, (void)start_ns, (void)untimed, (void)act;
    return 0;
}
int strobe__cupti_metrics_match(void) {
    return 0;
}
const strobe__cupti_metric_arg *strobe__cupti_metrics_args(size_t *count) {
    *count = 0;
    return NULL;
}
int strobe__cupti_metrics_warnings(int (*add_warning)(void *, const char *), void *ctx) {
    (void)add_warning, (void)ctx;
    return 0;
}
void strobe__cupti_metrics_release(void) {}

#endif
