/* observer.h: the C entry points of the torch observer (libstrobe_torch.so from CMake,
 * strobe/_torch_observer*.so from the Python package): a global RecordFunction callback inside a
 * PyTorch process that records torch's operators through a strobe__torch_api table (the part
 * the seed's kineto_shim.cpp plays on torch's side). Load it after torch (it links torch's
 * libraries); ctypes does. Every call is thread-safe and returns 0 or a negative STROBE_E* code. */
#ifndef STROBE_TORCH_OBSERVER_H
#define STROBE_TORCH_OBSERVER_H

#include "core/torch_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the observer records beside each operator's range (flags of strobe_torch_observer_on). */
#define STROBE_TORCH_SHAPES 0x1u   /* record_shapes: "Input Dims", "Input type", ... */
#define STROBE_TORCH_MEMORY 0x2u   /* profile_memory: torch's memory reports, [memory] events */
#define STROBE_TORCH_STACK 0x4u    /* with_stack: each op's Python "Call stack" */
#define STROBE_TORCH_FLOPS 0x8u    /* with_flops: torch's FLOP formulas ("flops") */
#define STROBE_TORCH_MODULES 0x10u /* with_modules */

/* Registers the global callback (once; a second call changes the flags) and records each
 * operator into `api`'s copy while that copy's session records. api NULL: libstrobe.so's table,
 * found in the process with dlsym (strobe record --torch); STROBE_ENOTSUP when there is none. */
STROBE_API int strobe_torch_observer_on(const strobe__torch_api *api, unsigned flags);
/* Removes the callback; operators cost torch nothing of strobe's afterwards. */
STROBE_API int strobe_torch_observer_off(void);
/* A message about what the observer could not do (e.g. memory reports held by torch.profiler),
 * or NULL; each message is returned once. */
STROBE_API const char *strobe_torch_observer_warning(void);
/* For the benchmark: 0 removes, 1 registers a do-nothing global callback (torch's floor), 2 one
 * that also asks for inputs (needsInputs). */
STROBE_API int strobe_torch_observer_floor(int mode);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* STROBE_TORCH_OBSERVER_H */
