/* backends.c: the device backends this build links (see src/core/device.h). */
#include "core/device.h"

extern const strobe__device_backend strobe__cuda_backend;

const strobe__device_backend *const strobe__device_backends[] = {&strobe__cuda_backend, NULL};
