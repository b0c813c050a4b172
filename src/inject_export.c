/* inject_export.c: the entry points that device and annotation libraries look up by name in the
 * library their environment names. Compiled into libstrobe.so only (not into the static library),
 * so that a shared object linking strobe_static (libstrobe_record.so) can export wrappers of its
 * own under these names without a clash.
 *
 * - InitializeInjection: CUDA's driver opens the library named by CUDA_INJECTION64_PATH at the
 *   process's first cuInit and calls it; 1 means go on (core/device.h, strobe__cuda_inject).
 * - InitializeInjectionNvtx2: the NVTX headers compiled into a program open the library named by
 *   NVTX_INJECTION64_PATH at its first NVTX call and call it with their nvtxGetExportTable
 *   (NVTX's NvtxInitializeInjectionNvtxFunc_t); nonzero means the tool attached, 0 makes NVTX
 *   turn every call into a no-op (nvtx/nvtx.h).
 * - ncclProfiler_v5 .. ncclProfiler_v2: NCCL opens the library named by NCCL_PROFILER_PLUGIN at a
 *   communicator's init and takes the newest of these tables it knows (nccl/nccl.h), so that
 *   NCCL_PROFILER_PLUGIN=/path/to/libstrobe.so records NCCL's events into the session of a
 *   program that links libstrobe (or into one of the plugin's own). */
#include "core/device.h"
#include "nccl/nccl.h"
#include "nvtx/nvtx.h"
#include "strobe/export.h"

STROBE_API int InitializeInjection(void);
STROBE_API int InitializeInjectionNvtx2(void *get_export_table);

int InitializeInjection(void) {
    return strobe__cuda_inject();
}

int InitializeInjectionNvtx2(void *get_export_table) {
    return strobe__nvtx_inject(get_export_table) > 0;
}

STROBE__NCCL_DEFINE_EXPORTS(STROBE_API)
