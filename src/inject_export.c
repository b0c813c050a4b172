/* inject_export.c: the entry points device libraries look up by name in the library their
 * environment names, exported from libstrobe.so only (a library that links libstrobe statically,
 * such as libstrobe_record.so, exports its own, without a clash).
 *
 * - InitializeInjection: CUDA's driver opens the library named by CUDA_INJECTION64_PATH at the
 *   process's first cuInit and calls it (CUDA's injection interface; 1 means go on). */
#include "core/device.h"

#define STROBE_INJECT_EXPORT __attribute__((visibility("default")))

STROBE_INJECT_EXPORT int InitializeInjection(void);
STROBE_INJECT_EXPORT int InitializeInjection(void) {
    return strobe__cuda_inject();
}
