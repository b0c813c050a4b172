/* bare_cupti.c: the floor for strobe's CUDA tracing cost: a CUPTI client that does nothing but
 * what tracing needs (the activity kinds strobe enables, buffers handed back unread), injected
 * through CUDA_INJECTION64_PATH as strobe record injects strobe. tests/gpu/zero_code.sh times
 * empty kernel launches with it, with strobe, and with neither. */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_BYTES (8u << 20)

static void CUPTIAPI give(uint8_t **buf, size_t *size, size_t *max_records) {
    *buf = aligned_alloc(8, BUF_BYTES);
    *size = *buf ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI take(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
    (void)ctx, (void)stream, (void)size, (void)valid;
    free(buf);
}

static void flush(void) {
    cuptiActivityFlushAll(1);
}

__attribute__((visibility("default"))) int InitializeInjection(void);
__attribute__((visibility("default"))) int InitializeInjection(void) {
    static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER,
                                               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMSET,
                                               CUPTI_ACTIVITY_KIND_OVERHEAD};
    if (cuptiActivityRegisterCallbacks(give, take) != CUPTI_SUCCESS) {
        fprintf(stderr, "bare_cupti: cuptiActivityRegisterCallbacks failed\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS)
            fprintf(stderr, "bare_cupti: activity kind %d not enabled\n", (int)kinds[i]);
    atexit(flush);
    return 1;
}
