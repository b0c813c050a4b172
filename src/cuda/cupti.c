/* cupti.c: PLACEHOLDER being replaced (CUDA backend through CUPTI). */
#include <stdio.h>

#include "core/device.h"

static int start(const strobe_config *cfg, char *why, size_t n) {
    (void)cfg;
    snprintf(why, n, "not implemented");
    return 1;
}
static int stop(int64_t a, int64_t b, strobe__gpu_batch *out, int (*w)(void *, const char *),
                void *ctx) {
    (void)a, (void)b, (void)out, (void)w, (void)ctx;
    return 0;
}
static void release(void) {}

const strobe__device_backend strobe__cuda_backend = {
    STROBE_ACTIVITY_CUDA, "CUDA", start, stop, release, NULL, NULL};
