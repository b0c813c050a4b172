// test_cuda_host_layout.cpp: strobe's C copies of CUPTI's profiler host structs
// (src/devices/cuda/cupti_host_api.h) have the layout of NVIDIA's own (cupti_profiler_host.h, a
// header only C++ can read). Checked at compile time; the program only reports success.
#include <cstddef>
#include <cstdio>

#include <cupti_profiler_host.h>

extern "C" {
#include "devices/cuda/cupti_host_api.h"
}

#define SAME(ours, theirs, field)                                                                  \
    static_assert(offsetof(ours, field) == offsetof(theirs, field), #ours "." #field);             \
    static_assert(sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->field), #ours "." #field)

SAME(strobe__host_init_params, CUpti_Profiler_Host_Initialize_Params, profilerType);
SAME(strobe__host_init_params, CUpti_Profiler_Host_Initialize_Params, pChipName);
SAME(strobe__host_init_params, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
SAME(strobe__host_init_params, CUpti_Profiler_Host_Initialize_Params, pHostObject);
SAME(strobe__host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
SAME(strobe__host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject);
SAME(strobe__host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
SAME(strobe__host_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
SAME(strobe__host_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params,
     configImageSize);
SAME(strobe__host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
SAME(strobe__host_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
SAME(strobe__host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize);
SAME(strobe__host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
SAME(strobe__host_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
     pCounterDataImage);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
     counterDataImageSize);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
SAME(strobe__host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
static_assert((int)STROBE__PROFILER_TYPE_RANGE == (int)CUPTI_PROFILER_TYPE_RANGE_PROFILER,
              "profiler type");
static_assert(sizeof(CUpti_ProfilerType) == sizeof(int), "CUpti_ProfilerType is an int");

int main() {
    std::printf("the host API structs match cupti_profiler_host.h\n");
    return 0;
}
