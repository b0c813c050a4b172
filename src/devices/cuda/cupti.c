/* cupti.c: the CUDA backend (strobe__cuda_backend), through CUPTI's activity API.
 *
 * Nothing of CUDA is linked: the driver (libcuda.so.1) and CUPTI are opened with dlopen at start,
 * so that one build runs on machines with and without CUDA. A build made without the CUPTI
 * headers (STROBE_HAVE_CUPTI_HEADERS unset) keeps only the config checks and says so.
 *
 * Contents:
 *   config checks (both builds)
 *   loading: the driver, CUPTI, their symbols
 *   buffers: a fixed set allocated at start, handed to CUPTI from a free list
 *   names: demangled kernel names and API names, interned for the batch
 *   clock: CUPTI stamps with strobe's clock (callback), else a calibrated offset
 *   start
 *   stop; in it, kernels without timestamps (range profiler, kernel replay) take their launch's
 *     span
 *   release / correlation push and pop
 * Metrics (cuda_metrics, the range profiler) live in cupti_metrics.c; start, stop and release
 * call into it.
 *
 * Threads: start, stop and release run under the session lock. CUPTI calls the buffer callbacks
 * on its own thread, hence buf_lock. push/pop run on the application's threads while tracing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "cupti_metrics.h"
#include "strobe/error.h"
#include "strobe/session.h"

/* ---- config checks ------------------------------------------------------------------------
 * The same in every build, and before anything is loaded: a bad config is reported as such on
 * machines with and without a GPU. Whether the metrics themselves can be collected is known only
 * once CUPTI and the device are (cupti_metrics.c). */
static int check_config(const strobe_config *cfg, char *why, size_t why_size) {
    if (cfg->cuda_metrics != NULL) {
        char buf[1024];
        const char *names[STROBE__CUPTI_MAX_METRICS];
        int n =
            strobe__cupti_metrics_parse(cfg->cuda_metrics, buf, sizeof buf, names, why, why_size);
        if (n < 0) return n;
        if (cfg->cuda_flags & STROBE_CUDA_METRICS_PER_RANGE) {
            /* CUPTI's user ranges would have to be pushed and popped at strobe's own range begin
             * and end, from the hot path, which has no hook for a device backend yet. */
            snprintf(why, why_size,
                     "cuda_metrics per range (STROBE_CUDA_METRICS_PER_RANGE) is not supported: "
                     "strobe's ranges do not drive CUPTI's user ranges yet; leave the flag out to "
                     "get the metrics per kernel");
            return STROBE_ENOTSUP;
        }
    } else if (cfg->cuda_flags & STROBE_CUDA_METRICS_PER_RANGE) {
        snprintf(why, why_size, "STROBE_CUDA_METRICS_PER_RANGE is set but cuda_metrics is NULL");
        return STROBE_EINVAL;
    }
    if (cfg->cuda_buffer_bytes < ((size_t)1 << 20)) {
        snprintf(why, why_size, "cuda_buffer_bytes is %zu; it must be at least 1 MiB",
                 cfg->cuda_buffer_bytes);
        return STROBE_EINVAL;
    }
    return 0;
}

#if !STROBE_HAVE_CUPTI_HEADERS

static int start(const strobe_config *cfg, char *why, size_t why_size) {
    int rc = check_config(cfg, why, why_size);
    if (rc) return rc;
    snprintf(why, why_size, "this build of strobe was made without the CUPTI headers");
    return 1;
}
static int stop(int64_t lo, int64_t hi, strobe__gpu_batch *out,
                int (*add_warning)(void *, const char *), void *ctx) {
    (void)lo, (void)hi, (void)add_warning, (void)ctx;
    memset(out, 0, sizeof *out);
    return 0;
}
static void release(void) {}

const strobe__device_backend strobe__cuda_backend = {
    STROBE_ACTIVITY_CUDA, "CUDA", start, stop, release, NULL, NULL};

int strobe__cuda_inject(void) {
    (void)strobe__session_add_device(STROBE_ACTIVITY_CUDA);
    return 1;
}

int strobe__cuda_watch_profiler(void (*fn)(int start), char *why, size_t why_size) {
    (void)fn;
    snprintf(why, why_size, "this build of strobe was made without the CUPTI headers");
    return 1;
}

#else /* STROBE_HAVE_CUPTI_HEADERS */

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cupti.h>

#include "util/log.h"
#include "cupti_convert.h"
#include "strobe/backend.h"
#include "util/strpool.h"
#include "util/strtab.h"

/* ---- loading ------------------------------------------------------------------------------- */

/* The driver calls used, declared here so that cuda.h's _v2 renames do not matter. */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_errname_fn)(int, const char **);

static struct cuda_lib {
    void *cuda, *cupti;   /* kept open for the process: neither may be unloaded safely */
    char cupti_path[512]; /* the file that was loaded */
    cu_errname_fn cuGetErrorName;
    cu_attr_fn cuDeviceGetAttribute;
    cu_get_fn cuDeviceGet;
    cu_name_fn cuDeviceGetName;
    cu_mem_fn cuDeviceTotalMem;
    /* CUPTI: required */
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*GetTimestamp)(uint64_t *);
    CUptiResult (*ActivityPushExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*ActivityPopExternalCorrelationId)(CUpti_ExternalCorrelationKind, uint64_t *);
    /* CUPTI: optional (older libraries lack some) */
    CUptiResult (*Subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
    CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    CUptiResult (*Finalize)(void);
    CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                  CUpti_CallbackId);
    /* libstdc++'s demangler, where the process has one */
    char *(*cxa_demangle)(const char *, char *, size_t *, int *);
    int demangle_looked;
} L;

static const char *cu_err(int rc) {
    const char *s = NULL;
    if (L.cuGetErrorName == NULL || L.cuGetErrorName(rc, &s) != 0 || s == NULL) return "CUresult";
    return s;
}

static const char *cupti_err(CUptiResult rc) {
    const char *s = NULL;
    if (L.GetResultString == NULL || L.GetResultString(rc, &s) != CUPTI_SUCCESS || s == NULL)
        return "CUPTI error";
    return s;
}

static const char *cupti_err_int(int rc) {
    return cupti_err((CUptiResult)rc);
}

/* Opens the driver and checks that it sees a device. @return 0, or 1 with why. */
/* Set while the driver calls strobe from cuInit (strobe__cuda_inject): the driver is initializing
 * itself, so neither cuInit nor the device queries are called; the devices come from CUPTI's
 * device records (asking the driver at stop is no safer: at exit it may be gone). */
static int injecting;
/* Set on the thread in start(): its cuInit may call strobe__cuda_inject back. */
static __thread int starting;

static int load_driver(char *why, size_t why_size) {
    if (L.cuda == NULL) {
        L.cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (L.cuda == NULL) {
            snprintf(why, why_size, "no CUDA driver (libcuda.so.1 not found)");
            return 1;
        }
    }
    cu_init_fn init = (cu_init_fn)dlsym(L.cuda, "cuInit");
    cu_count_fn count = (cu_count_fn)dlsym(L.cuda, "cuDeviceGetCount");
    L.cuGetErrorName = (cu_errname_fn)dlsym(L.cuda, "cuGetErrorName");
    L.cuDeviceGet = (cu_get_fn)dlsym(L.cuda, "cuDeviceGet");
    L.cuDeviceGetAttribute = (cu_attr_fn)dlsym(L.cuda, "cuDeviceGetAttribute");
    L.cuDeviceGetName = (cu_name_fn)dlsym(L.cuda, "cuDeviceGetName");
    L.cuDeviceTotalMem = (cu_mem_fn)dlsym(L.cuda, "cuDeviceTotalMem_v2");
    if (init == NULL || count == NULL) {
        snprintf(why, why_size, "the CUDA driver lacks %s", init ? "cuDeviceGetCount" : "cuInit");
        return 1;
    }
    if (injecting) return 0;
    int rc = init(0);
    if (rc != 0) {
        snprintf(why, why_size, "the CUDA driver did not initialize (cuInit: %s, %d)", cu_err(rc),
                 rc);
        return 1;
    }
    int n = 0;
    rc = count(&n);
    if (rc != 0) {
        snprintf(why, why_size, "the CUDA driver cannot count devices (cuDeviceGetCount: %s, %d)",
                 cu_err(rc), rc);
        return 1;
    }
    if (n <= 0) {
        snprintf(why, why_size, "the CUDA driver sees no device (cuDeviceGetCount: 0)");
        return 1;
    }
    return 0;
}

static void *try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) snprintf(L.cupti_path, sizeof L.cupti_path, "%s", path);
    return h;
}

/* $STROBE_CUPTI_PATH: a file, or a folder holding libcupti.so*. */
static void *open_env_path(const char *p) {
    void *h = try_open(p);
    if (h) return h;
    static const char *const names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                        "libcupti.so.11", NULL};
    char buf[512];
    for (int i = 0; h == NULL && names[i]; i++) {
        snprintf(buf, sizeof buf, "%s/%s", p, names[i]);
        h = try_open(buf);
    }
    return h;
}

/* Opens CUPTI. @return 0, or 1 with why. */
static int load_cupti(char *why, size_t why_size) {
    if (L.cupti) return 0;
    const char *env = getenv("STROBE_CUPTI_PATH");
    if (env && *env) L.cupti = open_env_path(env);
    static const char *const names[] = {"libcupti.so",
                                        "libcupti.so.13",
                                        "libcupti.so.12",
                                        "libcupti.so.11",
                                        "/usr/local/cuda/lib64/libcupti.so",
                                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                                        NULL};
    for (int i = 0; L.cupti == NULL && names[i]; i++)
        L.cupti = try_open(names[i]);
    const char *home = getenv("CUDA_HOME");
    char buf[512];
    if (L.cupti == NULL && home && *home) {
        snprintf(buf, sizeof buf, "%s/lib64/libcupti.so", home);
        L.cupti = try_open(buf);
        if (L.cupti == NULL) {
            snprintf(buf, sizeof buf, "%s/extras/CUPTI/lib64/libcupti.so", home);
            L.cupti = try_open(buf);
        }
    }
    if (L.cupti == NULL) {
        snprintf(why, why_size,
                 "CUPTI not found (looked in %s%s, the loader path, /usr/local/cuda%s; set "
                 "STROBE_CUPTI_PATH to libcupti.so or its folder)",
                 env && *env ? "STROBE_CUPTI_PATH=" : "", env && *env ? env : "",
                 home && *home ? ", $CUDA_HOME" : "");
        return 1;
    }
    return 0;
}

/* Looks up CUPTI's functions. @return 0, or 1 with why naming the first one missing. */
static int load_symbols(char *why, size_t why_size) {
    static const struct {
        const char *name;
        size_t offset;
        int required;
    } syms[] = {
#define S(field, req)                                                                              \
    { "cupti" #field, offsetof(struct cuda_lib, field), req }
        S(Subscribe, 1),
        S(Unsubscribe, 1),
        S(ActivityEnable, 1),
        S(ActivityDisable, 1),
        S(ActivityRegisterCallbacks, 1),
        S(ActivityFlushAll, 1),
        S(ActivityGetNextRecord, 1),
        S(ActivityGetNumDroppedRecords, 1),
        S(GetTimestamp, 1),
        S(ActivityPushExternalCorrelationId, 1),
        S(ActivityPopExternalCorrelationId, 1),
        S(Subscribe_v2, 0),
        S(ActivityRegisterTimestampCallback, 0),
        S(SetThreadIdType, 0),
        S(GetCallbackName, 0),
        S(GetResultString, 0),
        S(Finalize, 0),
        S(EnableCallback, 0),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(L.cupti, syms[i].name);
        if (p == NULL && syms[i].required) {
            snprintf(why, why_size, "%.200s lacks %s (too old a CUPTI?)", L.cupti_path,
                     syms[i].name);
            return 1;
        }
        memcpy((char *)&L + syms[i].offset, &p, sizeof p);
    }
    return 0;
}

/* ---- state of one session ---------------------------------------------------------------- */

typedef struct done_buf {
    uint8_t *buf;
    size_t valid;
} done_buf;

static struct {
    int active;
    uint32_t flags; /* strobe_config.cuda_flags */
    CUpti_SubscriberHandle subscriber;
    CUpti_ActivityKind enabled[16];
    int enabled_n;
    /* buffers: one allocation cut into nbuf buffers of buf_size bytes */
    pthread_mutex_t buf_lock;
    uint8_t *arena;
    size_t buf_size, nbuf, total_bytes;
    int oom; /* a name could not be kept */
    uint8_t **free_list;
    size_t free_n;
    done_buf *done;
    size_t done_n;
    uint64_t denied;  /* buffer requests refused: none left */
    uint64_t dropped; /* records CUPTI says it dropped */
    uint64_t foreign; /* completed buffers that were not ours (never expected) */
    /* clock */
    int callback_clock;
    int64_t offset_start;
    /* devices seen by the driver at start */
    strobe__gpu_device *devices;
    size_t device_n;
    /* warnings found at start, reported at stop */
    char warn[4][200];
    int warn_n;
    /* what stop() returned, freed by release() */
    strobe__pool pool;
    strobe__strtab names;
    const char **demangled; /* per name id: the kept name */
    size_t demangled_cap;
    strobe__gpu_act *acts;
    strobe__gpu_extcorr *ext;
    strobe__gpu_device *out_devices;
    strobe__gpu_arg *out_args;
} S = {.buf_lock = PTHREAD_MUTEX_INITIALIZER};

static void start_warning(const char *fmt, const char *a, const char *b) {
    if (S.warn_n < (int)(sizeof S.warn / sizeof S.warn[0]))
        snprintf(S.warn[S.warn_n++], sizeof S.warn[0], fmt, a, b);
}

/* ---- buffers ------------------------------------------------------------------------------ */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    pthread_mutex_lock(&S.buf_lock);
    if (S.free_n > 0) {
        *buffer = S.free_list[--S.free_n];
        *size = S.buf_size;
    } else {
        /* None left: CUPTI drops the records and counts them. */
        *buffer = NULL;
        *size = 0;
        S.denied++;
    }
    pthread_mutex_unlock(&S.buf_lock);
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)size;
    size_t dropped = 0;
    if (L.ActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
    pthread_mutex_lock(&S.buf_lock);
    S.dropped += dropped;
    if (buffer == NULL) {
        /* nothing to keep */
    } else if (S.arena == NULL || buffer < S.arena || buffer >= S.arena + S.nbuf * S.buf_size) {
        S.foreign++;
    } else if (valid > 0 && S.done_n < S.nbuf) {
        S.done[S.done_n].buf = buffer;
        S.done[S.done_n].valid = valid;
        S.done_n++;
    } else if (S.free_n < S.nbuf) {
        S.free_list[S.free_n++] = buffer;
    }
    pthread_mutex_unlock(&S.buf_lock);
}

/* Buffers of 1/8 of the total, between 1 and 8 MiB: a few of them, so that a stream or a context
 * that holds one does not starve the others. */
static int alloc_buffers(size_t total) {
    size_t sz = total / 8;
    if (sz < ((size_t)1 << 20)) sz = (size_t)1 << 20;
    if (sz > ((size_t)8 << 20)) sz = (size_t)8 << 20;
    sz &= ~(size_t)7;
    size_t n = total / sz;
    void *arena = NULL;
    if (posix_memalign(&arena, 4096, n * sz) != 0) return STROBE_ENOMEM;
    S.arena = arena;
    S.free_list = malloc(n * sizeof *S.free_list);
    S.done = malloc(n * sizeof *S.done);
    if (S.free_list == NULL || S.done == NULL) return STROBE_ENOMEM;
    S.buf_size = sz;
    S.nbuf = n;
    S.total_bytes = n * sz;
    /* Handed out from the front of the arena first. */
    for (size_t i = 0; i < n; i++)
        S.free_list[i] = S.arena + (n - 1 - i) * sz;
    S.free_n = n;
    S.done_n = 0;
    S.denied = S.dropped = S.foreign = 0;
    return 0;
}

static void free_buffers(void) {
    pthread_mutex_lock(&S.buf_lock);
    free(S.arena);
    free(S.free_list);
    free(S.done);
    S.arena = NULL;
    S.free_list = NULL;
    S.done = NULL;
    S.nbuf = S.free_n = S.done_n = 0;
    pthread_mutex_unlock(&S.buf_lock);
}

/* ---- names -------------------------------------------------------------------------------- */

static void find_demangler(void) {
    if (L.demangle_looked) return;
    L.demangle_looked = 1;
    void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (p == NULL) {
        /* Kept open: libstdc++ cannot be unloaded safely either. */
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (h) p = dlsym(h, "__cxa_demangle");
    }
    memcpy(&L.cxa_demangle, &p, sizeof p);
}

/* Interns s; @return its id, or STROBE_ENOMEM. */
static int64_t intern(const char *s) {
    int64_t id = strobe__strtab_intern(&S.names, s, strlen(s));
    if (id < 0) return id;
    if ((size_t)id >= S.demangled_cap) {
        size_t cap = S.demangled_cap ? S.demangled_cap * 2 : 256;
        while (cap <= (size_t)id)
            cap *= 2;
        const char **d = realloc(S.demangled, cap * sizeof *d);
        if (d == NULL) return STROBE_ENOMEM;
        memset(d + S.demangled_cap, 0, (cap - S.demangled_cap) * sizeof *d);
        S.demangled = d;
        S.demangled_cap = cap;
    }
    return id;
}

static const char *kernel_name(void *ctx, const char *mangled) {
    (void)ctx;
    int64_t id = intern(mangled);
    if (id < 0) {
        S.oom = 1;
        return NULL;
    }
    if (S.demangled[id]) return S.demangled[id];
    const char *kept = strobe__strtab_str(&S.names, (uint32_t)id);
    if (L.cxa_demangle && mangled[0] == '_' && mangled[1] == 'Z') {
        int status = -1;
        char *d = L.cxa_demangle(mangled, NULL, NULL, &status);
        if (d && status == 0) {
            const char *copy = strobe__pool_strdup(&S.pool, d);
            if (copy) kept = copy;
        }
        free(d);
    }
    S.demangled[id] = kept;
    return kept;
}

/* CUPTI's name of an API call, without the version suffix older libraries give runtime names
 * ("cudaMemcpy_v3020" -> "cudaMemcpy"; "cuMemAlloc_v2" is the function's real name and stays). */
static const char *api_name(void *ctx, int driver, uint32_t cbid) {
    (void)ctx;
    const char *n = NULL;
    if (L.GetCallbackName == NULL ||
        L.GetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                          &n) != CUPTI_SUCCESS ||
        n == NULL)
        return driver ? "cuda driver call" : "cuda runtime call";
    size_t len = strlen(n);
    const char *v = strrchr(n, '_');
    if (v && v[1] == 'v' && strlen(v + 2) >= 4 && strspn(v + 2, "0123456789") == strlen(v + 2))
        len = (size_t)(v - n);
    int64_t id = strobe__strtab_intern(&S.names, n, len);
    if (id < 0) {
        S.oom = 1;
        return NULL;
    }
    return strobe__strtab_str(&S.names, (uint32_t)id);
}

/* ---- clock ---------------------------------------------------------------------------------- */

static uint64_t CUPTIAPI timestamp_callback(void) {
    return (uint64_t)strobe_clock_now_ns();
}

/* strobe's clock minus CUPTI's, from the tightest of several paired reads. */
static int64_t calibrate(void) {
    int64_t best_gap = INT64_MAX, best = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t c = 0;
        int64_t t0 = strobe_clock_now_ns();
        if (L.GetTimestamp(&c) != CUPTI_SUCCESS) continue;
        int64_t t1 = strobe_clock_now_ns();
        if (t1 - t0 < best_gap) {
            best_gap = t1 - t0;
            best = t0 + (t1 - t0) / 2 - (int64_t)c;
        }
    }
    return best;
}

/* ---- devices ----------------------------------------------------------------------------------
 */

/* What the driver says of each device (CUPTI's device records lack the opt-in shared memory). */
static void query_devices(void) {
    cu_count_fn count = (cu_count_fn)dlsym(L.cuda, "cuDeviceGetCount");
    int n = 0;
    if (count == NULL || count(&n) != 0 || n <= 0 || L.cuDeviceGet == NULL ||
        L.cuDeviceGetAttribute == NULL)
        return;
    S.devices = calloc((size_t)n, sizeof *S.devices);
    if (S.devices == NULL) return;
    for (int i = 0; i < n; i++) {
        int dev = 0;
        if (L.cuDeviceGet(&dev, i) != 0) continue;
        strobe__gpu_device *d = &S.devices[S.device_n++];
        d->id = i;
        if (L.cuDeviceGetName) L.cuDeviceGetName(d->name, (int)sizeof d->name - 1, dev);
        size_t mem = 0;
        if (L.cuDeviceTotalMem && L.cuDeviceTotalMem(&mem, dev) == 0) d->total_global_mem = mem;
        static const struct {
            int attr;
            size_t offset;
        } attrs[] = {
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
             offsetof(strobe__gpu_device, compute_major)},
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
             offsetof(strobe__gpu_device, compute_minor)},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
             offsetof(strobe__gpu_device, max_threads_per_block)},
            {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
             offsetof(strobe__gpu_device, max_threads_per_sm)},
            {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
             offsetof(strobe__gpu_device, regs_per_block)},
            {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
             offsetof(strobe__gpu_device, regs_per_sm)},
            {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(strobe__gpu_device, warp_size)},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
             offsetof(strobe__gpu_device, shared_mem_per_block)},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
             offsetof(strobe__gpu_device, shared_mem_per_block_optin)},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
             offsetof(strobe__gpu_device, shared_mem_per_sm)},
            {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(strobe__gpu_device, num_sms)},
            {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
             offsetof(strobe__gpu_device, max_blocks_per_sm)},
        };
        for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
            int v = 0;
            if (L.cuDeviceGetAttribute(&v, attrs[a].attr, dev) == 0)
                memcpy((char *)d + attrs[a].offset, &v, sizeof v);
        }
    }
}

/* ---- start ------------------------------------------------------------------------------------
 */

static void teardown(void);

/* Undoes a start that failed half way. */
static int start_failed(int rc) {
    teardown();
    free_buffers();
    return rc;
}

/* strobe__cuda_watch_profiler: the function told of cuProfilerStart/Stop (atomic; NULL: none)
 * and the subscriber kept for the process while it is set. */
static void (*watch_fn)(int start);
static CUpti_SubscriberHandle watch_sub;

/* The subscriber's callback: only the CUDA profiler API's calls are enabled, and only while
 * watched (strobe__cuda_watch_profiler). */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)userdata;
    void (*fn)(int) = __atomic_load_n(&watch_fn, __ATOMIC_ACQUIRE);
    const CUpti_CallbackData *cd = data;
    if (fn == NULL || domain != CUPTI_CB_DOMAIN_DRIVER_API || cd == NULL) return;
    /* The window opens once the start returned and closes before the stop runs, as nsys's
     * --capture-range=cudaProfilerApi does. */
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && cd->callbackSite == CUPTI_API_EXIT)
        fn(1);
    else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop && cd->callbackSite == CUPTI_API_ENTER)
        fn(0);
}

/* The message for CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. */
static int busy(char *why, size_t why_size, const char *who) {
    snprintf(why, why_size,
             "another CUPTI client%s%s%s (Nsight Systems, Nsight Compute, compute-sanitizer, "
             "cuda-gdb, another profiler ...) is attached to this process",
             who && *who ? " (" : "", who && *who ? who : "", who && *who ? ")" : "");
    return STROBE_EBUSY;
}

static int enable(CUpti_ActivityKind kind, const char *name, int required, char *why,
                  size_t why_size) {
    CUptiResult rc = L.ActivityEnable(kind);
    if (rc == CUPTI_SUCCESS) {
        S.enabled[S.enabled_n++] = kind;
        return 0;
    }
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return busy(why, why_size, NULL);
    if (required) {
        snprintf(why, why_size, "CUPTI cannot record %s (cuptiActivityEnable: %s)", name,
                 cupti_err(rc));
        return 1;
    }
    start_warning("CUDA: CUPTI cannot record %s (%s); those records are missing", name,
                  cupti_err(rc));
    return 0;
}

static int start_backend(const strobe_config *cfg, char *why, size_t why_size);

static int start(const strobe_config *cfg, char *why, size_t why_size) {
    starting = 1;
    int rc = start_backend(cfg, why, why_size);
    starting = 0;
    return rc;
}

/* dl_iterate_phdr callback: stops at a loaded object whose file name starts "libcupti". */
static int is_cupti(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libcupti", 8) == 0) {
        snprintf((char *)found, 256, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

static int start_backend(const strobe_config *cfg, char *why, size_t why_size) {
    int rc = check_config(cfg, why, why_size);
    if (rc) return rc;
    /* Started from the program's cuInit (strobe record): a program that loaded CUPTI before it
     * (torch's profiler, Nsight's, its own) keeps CUPTI for itself; strobe records the rest. */
    char own[256] = "";
    if (injecting && L.cupti == NULL && dl_iterate_phdr(is_cupti, own)) {
        snprintf(why, why_size,
                 "the program loads CUPTI itself (%s): it keeps it, strobe records the rest", own);
        return 1;
    }
    if (S.active) {
        snprintf(why, why_size, "the CUDA backend is already tracing");
        return STROBE_EBUSY;
    }
    if ((rc = load_driver(why, why_size)) != 0) return rc;
    if ((rc = load_cupti(why, why_size)) != 0) return rc;
    if ((rc = load_symbols(why, why_size)) != 0) return rc;
    find_demangler();

    S.flags = cfg->cuda_flags;
    S.warn_n = 0;
    S.enabled_n = 0;
    S.subscriber = NULL;
    /* Subscribing first makes CUPTI say whether another tool owns it; the watch's subscriber,
     * kept for the process, is already strobe's. */
    CUptiResult cr;
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    if (watch_sub) {
        S.subscriber = watch_sub;
        cr = CUPTI_SUCCESS;
    } else if (L.Subscribe_v2) {
        CUpti_SubscriberParams p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        p.subscriberName = "strobe";
        p.oldSubscriberName = old;
        p.oldSubscriberSize = sizeof old - 1;
        cr = L.Subscribe_v2(&S.subscriber, on_callback, NULL, &p);
    } else {
        cr = L.Subscribe(&S.subscriber, on_callback, NULL);
    }
    if (cr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        S.subscriber = NULL;
        return busy(why, why_size, old);
    }
    if (cr != CUPTI_SUCCESS) {
        S.subscriber = NULL;
        snprintf(why, why_size, "CUPTI (%.200s) did not start (cuptiSubscribe: %s)", L.cupti_path,
                 cupti_err(cr));
        return 1;
    }
    /* OS thread ids, the ones the CPU events carry. */
    if (L.SetThreadIdType) L.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);

    /* Every buffer exists before the first record, so that none is allocated in the window. */
    rc = alloc_buffers(cfg->cuda_buffer_bytes);
    if (rc) {
        snprintf(why, why_size, "cannot allocate %zu bytes of CUPTI buffers",
                 cfg->cuda_buffer_bytes);
        return start_failed(rc);
    }
    cr = L.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (cr != CUPTI_SUCCESS) {
        snprintf(why, why_size, "CUPTI refused the buffer callbacks (%s)", cupti_err(cr));
        return start_failed(1);
    }

    /* Clock: CUPTI stamps records with strobe's clock where it can; registered before any kind
     * is enabled, as CUPTI asks. */
    S.callback_clock = L.ActivityRegisterTimestampCallback &&
                       L.ActivityRegisterTimestampCallback(timestamp_callback) == CUPTI_SUCCESS;
    if (!S.callback_clock) S.offset_start = calibrate();

    const struct {
        CUpti_ActivityKind kind;
        const char *name;
        int required, wanted;
    } kinds[] = {
        {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "external correlation", 1, 1},
        {CUPTI_ACTIVITY_KIND_DEVICE, "device properties", 0, 1},
        {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API calls", 1, 1},
        {CUPTI_ACTIVITY_KIND_DRIVER, "driver API calls", 0,
         !(cfg->cuda_flags & STROBE_CUDA_NO_DRIVER_API)},
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels", 1, 1},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "memory copies", 1, 1},
        {CUPTI_ACTIVITY_KIND_MEMSET, "memsets", 1, 1},
        {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization", 0,
         (cfg->cuda_flags & STROBE_CUDA_SYNC) != 0},
        {CUPTI_ACTIVITY_KIND_OVERHEAD, "CUPTI overhead", 0, 1},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (!kinds[i].wanted) continue;
        rc = enable(kinds[i].kind, kinds[i].name, kinds[i].required, why, why_size);
        if (rc) return start_failed(rc);
    }
    if (!injecting) query_devices();
    /* Last, so that the kernels of the window are the ones it measures. CUDA is traceable here:
     * metrics that cannot be collected fail the start (the user asked for them). */
    if (cfg->cuda_metrics) {
        static strobe__cupti_metrics_env env;
        env = (strobe__cupti_metrics_env){L.cupti, L.cuda, L.cupti_path, cupti_err_int, cu_err};
        rc = strobe__cupti_metrics_start(&env, cfg->cuda_metrics, why, why_size);
        if (rc) {
            strobe__cupti_metrics_release();
            free(S.devices);
            S.devices = NULL;
            S.device_n = 0;
            return start_failed(rc);
        }
    }
    S.active = 1;
    strobe__log(STROBE_LOG_INFO, "CUDA: tracing through %s (clock: %s)", L.cupti_path,
                S.callback_clock ? "callback" : "calibrated");
    return 0;
}

/* Disables what start enabled, flushes CUPTI's buffers back and unsubscribes. Disabled before
 * the flush, so that no record is made after it into a buffer about to be freed; the flush
 * returns when every buffer is back. */
static void teardown(void) {
    for (int i = S.enabled_n - 1; i >= 0; i--)
        L.ActivityDisable(S.enabled[i]);
    if (S.enabled_n) L.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    S.enabled_n = 0;
    if (S.subscriber && S.subscriber != watch_sub) L.Unsubscribe(S.subscriber);
    S.subscriber = NULL;
}

/* Detaches CUPTI, so that the process runs without its instrumentation until the next session
 * (as Kineto does by default). STROBE_CUPTI_FINALIZE=0 keeps it attached. Only after the records
 * are read: kernel names point into CUPTI's memory. */
static void finalize(void) {
    const char *env = getenv("STROBE_CUPTI_FINALIZE");
    if (watch_sub) return; /* the watch's subscriber stays for the next window */
    if (L.Finalize && (env == NULL || strcmp(env, "0") != 0)) L.Finalize();
}

/* ---- stop -------------------------------------------------------------------------------------
 */

/* Maps correlation ids to the API call that made them: synchronization records name no thread,
 * the call that waited does. Open addressing over a power-of-two table. */
typedef struct corr_map {
    uint32_t *keys; /* correlation + 1; 0 empty */
    size_t *idx;
    size_t mask;
} corr_map;

static int corr_init(corr_map *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->idx = malloc(cap * sizeof *m->idx);
    m->mask = cap - 1;
    return m->keys && m->idx ? 0 : STROBE_ENOMEM;
}
static void corr_put(corr_map *m, uint32_t c, size_t i) {
    size_t h = (c * 2654435761u) & m->mask;
    while (m->keys[h] && m->keys[h] != c + 1)
        h = (h + 1) & m->mask;
    m->keys[h] = c + 1;
    m->idx[h] = i;
}
static int corr_get(const corr_map *m, uint32_t c, size_t *i) {
    size_t h = (c * 2654435761u) & m->mask;
    while (m->keys[h]) {
        if (m->keys[h] == c + 1) {
            *i = m->idx[h];
            return 1;
        }
        h = (h + 1) & m->mask;
    }
    return 0;
}

/* Fills in the thread of synchronization records (from their API call) and their device (from
 * device work in the same context). */
static int fill_sync(strobe__gpu_act *acts, size_t n) {
    size_t nsync = 0;
    for (size_t i = 0; i < n; i++)
        nsync += acts[i].kind == STROBE__GPU_SYNC || acts[i].kind == STROBE__GPU_OVERHEAD;
    if (nsync == 0) return 0;
    corr_map m;
    if (corr_init(&m, n) != 0) {
        free(m.keys);
        free(m.idx);
        return STROBE_ENOMEM;
    }
    uint32_t ctx_dev[64][2];
    int nctx = 0;
    for (size_t i = 0; i < n; i++) {
        const strobe__gpu_act *a = &acts[i];
        if (a->kind == STROBE__GPU_RUNTIME || a->kind == STROBE__GPU_DRIVER)
            corr_put(&m, a->correlation, i);
        if (a->kind <= STROBE__GPU_MEMSET && nctx < 64) {
            int k = 0;
            while (k < nctx && ctx_dev[k][0] != a->context)
                k++;
            if (k == nctx) ctx_dev[nctx][0] = a->context, ctx_dev[nctx++][1] = a->device;
        }
    }
    int64_t pid = getpid();
    for (size_t i = 0; i < n; i++) {
        strobe__gpu_act *a = &acts[i];
        if (a->kind != STROBE__GPU_SYNC && a->kind != STROBE__GPU_OVERHEAD) continue;
        if (a->tid == 0) {
            size_t j;
            /* Without a calling thread, the process's main thread (its tid is the pid). */
            if (a->correlation && corr_get(&m, a->correlation, &j))
                a->pid = acts[j].pid, a->tid = acts[j].tid;
            else
                a->pid = pid, a->tid = pid;
        }
        if (a->pid == 0) a->pid = pid;
        for (int k = 0; k < nctx; k++)
            if (ctx_dev[k][0] == a->context) a->device = ctx_dev[k][1];
    }
    free(m.keys);
    free(m.idx);
    return 0;
}

/* ---- kernels without timestamps ---------------------------------------------------------------
 * Under the range profiler's kernel replay, CUPTI (2025.3 with CUDA 13.0) writes the replayed
 * kernels with start = end = 0. The launch call returns only once every pass has run, so its span
 * holds the kernel's (and the replays'): the kernel takes it, with an arg that says so, since it
 * is not the kernel's own duration. */

#define UNTIMED_KEY "timestamps"
#define UNTIMED_JSON "\"launch (kernel replay)\""

/* The span of an API call; the runtime and driver calls of one launch share a correlation id and
 * nest, so the widest is kept. */
typedef struct launch_span {
    int64_t start, end;
} launch_span;

/* The spans of the batch's API calls by correlation id, from a first pass over the buffers: CUPTI
 * writes a kernel before its launch call. @return 0 or STROBE_ENOMEM; m and *spans are the
 * caller's to free either way. */
static int collect_launches(int64_t offset, size_t ndone, corr_map *m, launch_span **spans) {
    size_t n = 0;
    uint32_t corr;
    int64_t start, end;
    for (size_t b = 0; b < ndone; b++) {
        CUpti_Activity *rec = NULL;
        while (L.ActivityGetNextRecord(S.done[b].buf, S.done[b].valid, &rec) == CUPTI_SUCCESS)
            n += (size_t)strobe__cupti_api_span(rec, offset, &corr, &start, &end);
    }
    *spans = malloc((n ? n : 1) * sizeof **spans);
    if (corr_init(m, n) != 0 || *spans == NULL) return STROBE_ENOMEM;
    size_t k = 0;
    for (size_t b = 0; b < ndone; b++) {
        CUpti_Activity *rec = NULL;
        while (L.ActivityGetNextRecord(S.done[b].buf, S.done[b].valid, &rec) == CUPTI_SUCCESS) {
            if (!strobe__cupti_api_span(rec, offset, &corr, &start, &end)) continue;
            size_t i;
            if (corr_get(m, corr, &i)) {
                if (start < (*spans)[i].start) (*spans)[i].start = start;
                if (end > (*spans)[i].end) (*spans)[i].end = end;
            } else if (k < n) {
                (*spans)[k] = (launch_span){start, end};
                corr_put(m, corr, k++);
            }
        }
    }
    return 0;
}

/* Gives a kernel without timestamps its launch's span. @return 1, or 0 when no launch call of
 * its correlation id is in the batch (it keeps its meaningless times: outside the window). */
static int at_launch(strobe__gpu_act *a, const corr_map *m, const launch_span *spans) {
    size_t i;
    if (!corr_get(m, a->correlation, &i)) return 0;
    a->start_ns = spans[i].start;
    a->end_ns = spans[i].end;
    a->queued_ns = -1;
    return 1;
}

static int stop(int64_t lo, int64_t hi, strobe__gpu_batch *out,
                int (*add_warning)(void *, const char *), void *ctx) {
    memset(out, 0, sizeof *out);
    if (!S.active) return 0;
    S.active = 0;
    int64_t offset = 0;
    if (!S.callback_clock) offset = (S.offset_start + calibrate()) / 2;
    /* Before the activity buffers come back: stopping the range profiler waits for the kernels
     * it replays. */
    strobe__cupti_metrics_stop();
    teardown();
    S.oom = 0;

    strobe__pool_release(&S.pool);
    strobe__strtab_init(&S.names, &S.pool);
    size_t cap = 0;
    size_t nact = 0, next = 0, ndev = 0, capext = 0, capdev = 0;
    uint64_t outside = 0, filtered = 0, no_launch = 0;
    int rc = 0;
    pthread_mutex_lock(&S.buf_lock);
    size_t ndone = S.done_n;
    pthread_mutex_unlock(&S.buf_lock);
    strobe__cupti_names names = {kernel_name, api_name, NULL};
    /* Only the range profiler's replay loses kernel timestamps: the launch spans are looked up
     * then, and the kernels given one are listed (act indices, ascending) for their marker. */
    int replay = strobe__cupti_metrics_active();
    corr_map launches = {NULL, NULL, 0};
    launch_span *spans = NULL;
    size_t *marked = NULL, nmarked = 0, capmarked = 0;
    if (replay) rc = collect_launches(offset, ndone, &launches, &spans);
    for (size_t b = 0; rc == 0 && b < ndone; b++) {
        CUpti_Activity *rec = NULL;
        while (rc == 0 &&
               L.ActivityGetNextRecord(S.done[b].buf, S.done[b].valid, &rec) == CUPTI_SUCCESS) {
            if (nact == cap) {
                cap = cap ? cap * 2 : 1024;
                strobe__gpu_act *p = realloc(S.acts, cap * sizeof *p);
                if (p == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                S.acts = p;
            }
            if (next == capext) {
                capext = capext ? capext * 2 : 256;
                strobe__gpu_extcorr *p = realloc(S.ext, capext * sizeof *p);
                if (p == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                S.ext = p;
            }
            strobe__gpu_device dev;
            int k = strobe__cupti_convert(rec, S.flags, offset, &names, &S.acts[nact], &S.ext[next],
                                          &dev);
            if (k == STROBE__CUPTI_ACT) {
                strobe__gpu_act *a = &S.acts[nact];
                int is_kernel = a->kind == STROBE__GPU_KERNEL;
                if (is_kernel && a->name == NULL) a->name = "(unnamed kernel)";
                int untimed = is_kernel && replay && strobe__cupti_kernel_untimed(rec);
                int placed = untimed && at_launch(a, &launches, spans);
                no_launch += untimed && !placed;
                int out_of_window = strobe__cupti_outside(a, lo, hi);
                if (is_kernel)
                    rc =
                        strobe__cupti_metrics_note_kernel(a->context, a->correlation, a->start_ns,
                                                          untimed, out_of_window ? SIZE_MAX : nact);
                if (rc == 0 && placed && !out_of_window) {
                    if (nmarked == capmarked) {
                        capmarked = capmarked ? capmarked * 2 : 64;
                        size_t *p = realloc(marked, capmarked * sizeof *p);
                        if (p == NULL) {
                            rc = STROBE_ENOMEM;
                            break;
                        }
                        marked = p;
                    }
                    marked[nmarked++] = nact;
                }
                if (out_of_window)
                    outside++;
                else
                    nact++;
            } else if (k == STROBE__CUPTI_EXT) {
                next++;
            } else if (k == STROBE__CUPTI_FILTERED) {
                filtered++;
            } else if (k == STROBE__CUPTI_DEVICE) {
                size_t j = 0;
                while (j < S.device_n && S.devices[j].id != dev.id)
                    j++;
                if (j < S.device_n) continue; /* the driver's figures stand */
                if (ndev == capdev) {
                    capdev = capdev ? capdev * 2 : 8;
                    strobe__gpu_device *p = realloc(S.out_devices, capdev * sizeof *p);
                    if (p == NULL) {
                        rc = STROBE_ENOMEM;
                        break;
                    }
                    S.out_devices = p;
                }
                S.out_devices[ndev++] = dev;
            }
        }
    }
    /* The driver's devices first, then any only CUPTI reported. */
    if (rc == 0 && S.device_n) {
        strobe__gpu_device *p = realloc(S.out_devices, (ndev + S.device_n) * sizeof *p);
        if (p == NULL) {
            rc = STROBE_ENOMEM;
        } else {
            memmove(p + S.device_n, p, ndev * sizeof *p);
            memcpy(p, S.devices, S.device_n * sizeof *p);
            S.out_devices = p;
            ndev += S.device_n;
        }
    }
    if (rc == 0 && S.oom) rc = STROBE_ENOMEM;
    if (rc == 0) rc = fill_sync(S.acts, nact);
    if (rc == 0) rc = strobe__cupti_metrics_match();
    uint64_t denied = S.denied, dropped = S.dropped, foreign = S.foreign;
    free_buffers();
    finalize();
    free(S.devices);
    S.devices = NULL;
    S.device_n = 0;
    free(launches.keys);
    free(launches.idx);
    free(spans);
    if (rc != 0) {
        free(marked);
        return rc;
    }

    out->acts = S.acts;
    out->act_count = nact;
    out->ext = S.ext;
    out->ext_count = next;
    out->devices = S.out_devices;
    out->device_count = ndev;
    /* A refused buffer loses at least one record; CUPTI's own count covers the rest. */
    out->dropped_records = dropped > denied ? dropped : denied;
    out->outside_window = outside;
    out->clock_method = S.callback_clock ? "callback" : "calibrated";
    out->clock_offset_ns = S.callback_clock ? 0 : offset;
    size_t nargs = 0;
    const strobe__cupti_metric_arg *margs = strobe__cupti_metrics_args(&nargs);
    /* The metric values, as args of the kernels they measured, and the marker of the kernels
     * timed by their launch; merged in act order (a kernel's metrics before its marker). */
    if (nargs + nmarked) {
        S.out_args = malloc((nargs + nmarked) * sizeof *S.out_args);
        if (S.out_args == NULL) {
            free(marked);
            return STROBE_ENOMEM;
        }
        size_t i = 0, j = 0, o = 0;
        while (i < nargs || j < nmarked) {
            if (j == nmarked || (i < nargs && margs[i].act <= marked[j])) {
                S.out_args[o++] = (strobe__gpu_arg){margs[i].act, margs[i].key, margs[i].json};
                i++;
            } else {
                S.out_args[o++] = (strobe__gpu_arg){marked[j++], UNTIMED_KEY, UNTIMED_JSON};
            }
        }
        out->args = S.out_args;
        out->arg_count = o;
    }
    free(marked);
    strobe__log(STROBE_LOG_DEBUG,
                "CUDA: %zu records kept, %llu outside the window, %llu noisy calls left out, %zu "
                "external correlations, %zu kernels timed by their launch (kernel replay)",
                nact, (unsigned long long)outside, (unsigned long long)filtered, next, nmarked);

    if (add_warning) {
        for (int i = 0; rc == 0 && i < S.warn_n; i++)
            rc = add_warning(ctx, S.warn[i]);
        if (rc == 0) rc = strobe__cupti_metrics_warnings(add_warning, ctx);
        char msg[300];
        if (rc == 0 && no_launch) {
            snprintf(msg, sizeof msg,
                     "CUDA: %llu kernel%s came without timestamps (range profiler, kernel "
                     "replay) and without the launch call to take them from; left out",
                     (unsigned long long)no_launch, no_launch == 1 ? "" : "s");
            rc = add_warning(ctx, msg);
        }
        /* Blame the buffers only where a request was refused: CUPTI also counts records it
         * dropped for reasons of its own (cuptiActivityGetNumDroppedRecords). */
        if (rc == 0 && denied) {
            snprintf(msg, sizeof msg,
                     "CUDA: %llu CUPTI records dropped (%llu buffer requests refused: "
                     "cuda_buffer_bytes = %zu MiB was full)",
                     (unsigned long long)out->dropped_records, (unsigned long long)denied,
                     (S.total_bytes >> 20));
            rc = add_warning(ctx, msg);
        } else if (rc == 0 && dropped) {
            snprintf(msg, sizeof msg,
                     "CUDA: %llu CUPTI records dropped (CUPTI reported them dropped; every buffer "
                     "request was granted, cuda_buffer_bytes = %zu MiB)",
                     (unsigned long long)out->dropped_records, (S.total_bytes >> 20));
            rc = add_warning(ctx, msg);
        }
        if (rc == 0 && foreign) {
            snprintf(msg, sizeof msg,
                     "CUDA: CUPTI returned %llu buffers strobe did not give it; left unread",
                     (unsigned long long)foreign);
            rc = add_warning(ctx, msg);
        }
    }
    return rc;
}

static void release(void) {
    strobe__cupti_metrics_release();
    free(S.out_args);
    S.out_args = NULL;
    free(S.acts);
    free(S.ext);
    free(S.out_devices);
    free(S.demangled);
    S.acts = NULL;
    S.ext = NULL;
    S.out_devices = NULL;
    S.demangled = NULL;
    S.demangled_cap = 0;
    strobe__strtab_release(&S.names);
    memset(&S.names, 0, sizeof S.names);
    strobe__pool_release(&S.pool);
}

/* ---- correlation -------------------------------------------------------------------------- */

static void push_external(uint64_t id) {
    L.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

static void pop_external(void) {
    uint64_t last = 0;
    L.ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

const strobe__device_backend strobe__cuda_backend = {
    STROBE_ACTIVITY_CUDA, "CUDA", start, stop, release, push_external, pop_external};

int strobe__cuda_inject(void) {
    /* A session starting CUDA holds the session lock on this thread, in its own cuInit. */
    if (starting) return 1;
    injecting = 1;
    (void)strobe__session_add_device(STROBE_ACTIVITY_CUDA);
    injecting = 0;
    return 1;
}

int strobe__cuda_watch_profiler(void (*fn)(int start), char *why, size_t why_size) {
    if (watch_sub) {
        __atomic_store_n(&watch_fn, fn, __ATOMIC_RELEASE);
        return 0;
    }
    /* From the driver's cuInit: the driver is not called back (as in strobe__cuda_inject). */
    int was = injecting;
    injecting = 1;
    char own[256] = "";
    int rc = 1;
    if (L.cupti == NULL && dl_iterate_phdr(is_cupti, own)) {
        snprintf(why, why_size,
                 "the program loads CUPTI itself (%s): it keeps it, and its CUDA profiler API "
                 "calls cannot be watched",
                 own);
        goto done;
    }
    if (load_driver(why, why_size) != 0 || load_cupti(why, why_size) != 0 ||
        load_symbols(why, why_size) != 0)
        goto done;
    if (L.EnableCallback == NULL) {
        snprintf(why, why_size, "%.200s lacks cuptiEnableCallback (too old a CUPTI?)",
                 L.cupti_path);
        goto done;
    }
    CUpti_SubscriberHandle sub = NULL;
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    CUptiResult cr;
    if (L.Subscribe_v2) {
        CUpti_SubscriberParams p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        p.subscriberName = "strobe";
        p.oldSubscriberName = old;
        p.oldSubscriberSize = sizeof old - 1;
        cr = L.Subscribe_v2(&sub, on_callback, NULL, &p);
    } else {
        cr = L.Subscribe(&sub, on_callback, NULL);
    }
    if (cr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        busy(why, why_size, old);
        goto done;
    }
    if (cr != CUPTI_SUCCESS) {
        snprintf(why, why_size, "CUPTI (%.200s) did not start (cuptiSubscribe: %s)", L.cupti_path,
                 cupti_err(cr));
        goto done;
    }
    static const CUpti_CallbackId cbids[] = {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
                                             CUPTI_DRIVER_TRACE_CBID_cuProfilerStop};
    for (size_t i = 0; i < 2; i++) {
        cr = L.EnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbids[i]);
        if (cr != CUPTI_SUCCESS) {
            snprintf(why, why_size, "CUPTI cannot call back at the CUDA profiler API (%s)",
                     cupti_err(cr));
            L.Unsubscribe(sub);
            goto done;
        }
    }
    __atomic_store_n(&watch_fn, fn, __ATOMIC_RELEASE);
    watch_sub = sub;
    rc = 0;
done:
    injecting = was;
    return rc;
}

#endif /* STROBE_HAVE_CUPTI_HEADERS */
