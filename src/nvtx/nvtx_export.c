/* nvtx_export.c: the entry point NVTX looks up in the library named by NVTX_INJECTION64_PATH.
 * Compiled into libstrobe.so only (not into the static library), so that a shared object that
 * links strobe_static can export a wrapper of its own under this name without a clash. */
#include "nvtx/nvtx.h"
#include "strobe/export.h"

/* NVTX's NvtxInitializeInjectionNvtxFunc_t: takes the program's nvtxGetExportTable, returns
 * nonzero when the tool attached (0 makes NVTX turn every call into a no-op). */
STROBE_API int InitializeInjectionNvtx2(void *get_export_table);

int InitializeInjectionNvtx2(void *get_export_table) {
    return strobe__nvtx_inject(get_export_table) > 0;
}
