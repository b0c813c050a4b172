/* mk_cuda.c: the CUDA driver calls of markers and captures, made through the libcuda.so.1 the
 * program loaded (dlopen with RTLD_NOLOAD: strobe never loads CUDA itself): cuCtxSynchronize for
 * wait_until_completed and to drain a capture, cuProfilerStart/cuProfilerStop around a capture.
 *
 * Contents: finding the driver, the wait, captures (strobe/markers.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "markers_int.h"
#include "strobe/error.h"
#include "strobe/markers.h"
#include "strobe/result.h"
#include "strobe/session.h"
#include "util/err.h"

typedef int (*cu_void_fn)(void);

/* The driver's function `name`, when the program has loaded libcuda.so.1; NULL otherwise. The
 * handle taken here keeps the library loaded while strobe holds its functions. */
static cu_void_fn cuda_fn(const char *name) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) return NULL;
    void *p = dlsym(h, name);
    if (p == NULL) {
        dlclose(h);
        return NULL;
    }
    cu_void_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

/* ---- wait_until_completed -------------------------------------------------------------------- */

static cu_void_fn ctx_sync; /* atomic: found once */
static __thread uint32_t sync_misses;

void strobe__mk_cuda_sync(void) {
    cu_void_fn f = __atomic_load_n(&ctx_sync, __ATOMIC_ACQUIRE);
    if (__builtin_expect(f == NULL, 0)) {
        /* CUDA may be loaded later (frameworks load it at their first device call): look again
         * on this thread's 1st, 257th, ... operator without it, not on every one (dlopen locks). */
        if ((sync_misses++ & 255u) != 0) return;
        f = cuda_fn("cuCtxSynchronize");
        if (f == NULL) return;
        __atomic_store_n(&ctx_sync, f, __ATOMIC_RELEASE);
    }
    /* No context on this thread is no error worth a word: nothing was queued by it. */
    (void)f();
}

/* ---- Captures -------------------------------------------------------------------------------- */

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static int capturing;
static char *cap_path; /* the session's trace, NULL: none */
static cu_void_fn cap_stop, cap_sync;

int strobe_capture_enabled(void) {
    const char *v = getenv("STROBE_CAPTURE_ENABLED");
    return v != NULL && strcmp(v, "1") == 0;
}

int strobe_is_capturing(void) {
    return __atomic_load_n(&capturing, __ATOMIC_ACQUIRE);
}

int strobe_capture_begin(const char *path) {
    STROBE_RETURN_IF(path != NULL && path[0] == '\0', STROBE_EINVAL);
    pthread_mutex_lock(&cap_lock);
    int rc = 0;
    char *dup = NULL;
    int session = 0;
    if (capturing) {
        strobe__log(STROBE_LOG_ERROR, "capture: a capture is already running (captures do not "
                                      "nest: end it with strobe_capture_end() first)");
        STROBE_FAIL_IF(1, STROBE_EBUSY, fail);
    }
    cu_void_fn start = cuda_fn("cuProfilerStart");
    cap_stop = cuda_fn("cuProfilerStop");
    cap_sync = cuda_fn("cuCtxSynchronize");
    if (start == NULL || cap_stop == NULL || cap_sync == NULL) {
        strobe__log(STROBE_LOG_ERROR,
                    "capture: CUDA is not loaded in this process (no "
                    "libcuda.so.1 with cuProfilerStart/Stop): nothing to capture");
        STROBE_FAIL_IF(1, STROBE_ENOTSUP, fail);
    }
    if (path != NULL) {
        dup = strdup(path);
        STROBE_FAIL_IF(dup == NULL, STROBE_ENOMEM, fail);
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
        rc = strobe_start(&cfg);
        if (rc == STROBE_EBUSY) {
            /* Another CUPTI client owns CUDA's activity: the Nsight tool the capture is for
             * (ncu, nsys). It gets its region; strobe's session records the CPU side. */
            strobe__log(STROBE_LOG_WARN,
                        "capture: another profiler owns CUPTI; the session for %s records the "
                        "CPU only",
                        path);
            cfg.activities = STROBE_ACTIVITY_CPU;
            rc = strobe_start(&cfg);
        }
        if (rc != 0) {
            strobe__log(STROBE_LOG_ERROR, "capture: the session for %s cannot start: %s", path,
                        strobe_strerror(rc));
            goto fail;
        }
        session = 1;
    }
    int cu = start();
    if (cu != 0) {
        strobe__log(STROBE_LOG_ERROR,
                    "capture: cuProfilerStart failed (CUDA error %d; is a context current on "
                    "this thread?)",
                    cu);
        STROBE_FAIL_IF(1, STROBE_EIO, fail);
    }
    cap_path = dup;
    __atomic_store_n(&capturing, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cap_lock);
    return 0;
fail:
    if (session) {
        strobe_result *r = NULL;
        if (strobe_stop(&r) == 0) strobe_result_free(r);
    }
    free(dup);
    pthread_mutex_unlock(&cap_lock);
    return rc;
}

int strobe_capture_end(void) {
    pthread_mutex_lock(&cap_lock);
    int rc = 0;
    if (!capturing) {
        strobe__log(STROBE_LOG_ERROR, "capture: no capture is running");
        STROBE_FAIL_IF(1, STROBE_ENOSESSION, fail);
    }
    __atomic_store_n(&capturing, 0, __ATOMIC_RELEASE);
    /* The device's queued work belongs to the region: drain it before the profiler stops. */
    int cu = cap_sync();
    if (cu != 0) strobe__log(STROBE_LOG_DEBUG, "capture: cuCtxSynchronize: CUDA error %d", cu);
    cu = cap_stop();
    if (cu != 0) {
        strobe__log(STROBE_LOG_ERROR, "capture: cuProfilerStop failed (CUDA error %d)", cu);
        rc = STROBE_EIO;
    }
    if (cap_path != NULL) {
        strobe_result *r = NULL;
        int e = strobe_stop(&r);
        if (e == 0) {
            e = strobe_result_save(r, cap_path);
            strobe_result_free(r);
        }
        if (e != 0) {
            strobe__log(STROBE_LOG_ERROR, "capture: the trace %s: %s", cap_path,
                        strobe_strerror(e));
            if (rc == 0) rc = e;
        }
        free(cap_path);
        cap_path = NULL;
    }
fail:
    pthread_mutex_unlock(&cap_lock);
    return rc;
}
