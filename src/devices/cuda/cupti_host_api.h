/* cupti_host_api.h: the parameter structs of CUPTI's profiler host API (cupti_profiler_host.h,
 * CUDA 12.6 and later), declared again field for field under strobe's names. That header includes
 * <string> and cannot be read by a C compiler. CUPTI checks each struct's structSize, and
 * tests/test_cuda_host_layout.cpp compares these layouts with NVIDIA's header where it exists.
 * Used by cupti_metrics.c and the stand-in CUPTI of the tests. */
#ifndef STROBE_CUPTI_HOST_API_H
#define STROBE_CUPTI_HOST_API_H

#include <stddef.h>
#include <stdint.h>

/* A params struct's structSize: up to and including its last field, as CUPTI's macros say. */
#define STROBE__SIZE_UP_TO(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct strobe__host_object strobe__host_object;

enum { STROBE__PROFILER_TYPE_RANGE = 0 }; /* CUPTI_PROFILER_TYPE_RANGE_PROFILER */

typedef struct strobe__host_init_params {
    size_t structSize;
    void *pPriv;
    int profilerType; /* CUpti_ProfilerType, an enum */
    const char *pChipName;
    const uint8_t *pCounterAvailabilityImage;
    strobe__host_object *pHostObject;
} strobe__host_init_params;

typedef struct strobe__host_deinit_params {
    size_t structSize;
    void *pPriv;
    strobe__host_object *pHostObject;
} strobe__host_deinit_params;

typedef struct strobe__host_add_metrics_params {
    size_t structSize;
    void *pPriv;
    strobe__host_object *pHostObject;
    const char **ppMetricNames;
    size_t numMetrics;
} strobe__host_add_metrics_params;

typedef struct strobe__host_image_size_params {
    size_t structSize;
    void *pPriv;
    strobe__host_object *pHostObject;
    size_t configImageSize;
} strobe__host_image_size_params;

typedef struct strobe__host_image_params {
    size_t structSize;
    void *pPriv;
    strobe__host_object *pHostObject;
    size_t configImageSize;
    uint8_t *pConfigImage;
} strobe__host_image_params;

typedef struct strobe__host_passes_params {
    size_t structSize;
    void *pPriv;
    size_t configImageSize;
    uint8_t *pConfigImage;
    size_t numOfPasses;
} strobe__host_passes_params;

typedef struct strobe__host_evaluate_params {
    size_t structSize;
    void *pPriv;
    strobe__host_object *pHostObject;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char **ppMetricNames;
    size_t numMetrics;
    double *pMetricValues;
} strobe__host_evaluate_params;

#endif
