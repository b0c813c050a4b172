/* nccl.h: strobe as an NCCL profiler plugin (see nccl.c for what becomes what in the trace).
 *
 * The functions below fill the tables NCCL looks up by name (ncclProfiler_v5 .. ncclProfiler_v2,
 * nccl_profiler_abi.h). They are defined in the library; the tables themselves are defined where
 * they are exported, by STROBE__NCCL_DEFINE_EXPORTS: in libstrobe.so (src/inject_export.c) and in
 * libstrobe_record.so (src/preload/record_hook.c), so that a library linking strobe_static does
 * not export them unasked.
 *
 * Contract: any thread may call any of them at any time, with or without a session running;
 * they never fail NCCL (every call returns 0 but an init that cannot allocate), never print, and
 * count what they cannot use (unknown event types, handles that are not live events). */
#ifndef STROBE_NCCL_H
#define STROBE_NCCL_H

#include "nccl_profiler_abi.h"

nccl_result strobe__nccl_init_v5(void **context, uint64_t comm_id, int *activation_mask,
                                 const char *comm_name, int n_nodes, int n_ranks, int rank,
                                 nccl_logger_fn log);
nccl_result strobe__nccl_init_v4(void **context, int *activation_mask, const char *comm_name,
                                 uint64_t comm_hash, int n_nodes, int n_ranks, int rank,
                                 nccl_logger_fn log);
nccl_result strobe__nccl_init_v3(void **context, int *activation_mask);
nccl_result strobe__nccl_init_v2(void **context, int *activation_mask);
nccl_result strobe__nccl_start_v5(void *context, void **handle, nccl_abi_descr_v5 *descr);
nccl_result strobe__nccl_start_v4(void *context, void **handle, nccl_abi_descr_v4 *descr);
nccl_result strobe__nccl_start_v3(void *context, void **handle, nccl_abi_descr_v3 *descr);
nccl_result strobe__nccl_start_v2(void *context, void **handle, nccl_abi_descr_v2 *descr);
nccl_result strobe__nccl_stop(void *handle);
nccl_result strobe__nccl_state_v4(void *handle, int state, nccl_abi_state_args_v4 *args);
nccl_result strobe__nccl_state_v3(void *handle, int state, nccl_abi_state_args_v3 *args);
nccl_result strobe__nccl_finalize(void *context);

/* Whether the plugin may start a session of its own when none runs at a communicator's init
 * (default 1). `strobe record`'s library sets 0: its session (which may start later, with
 * --delay) is the only one, and a process it does not record gets no trace from the plugin. */
void strobe__nccl_allow_own_session(int allow);

/* The plugin's name in NCCL's log. */
#define STROBE__NCCL_NAME "strobe"

/* Defines the exported tables, each declared with `EXPORT` (a visibility attribute). */
#define STROBE__NCCL_DEFINE_EXPORTS(EXPORT)                                                        \
    EXPORT const nccl_abi_profiler_v5 ncclProfiler_v5;                                             \
    const nccl_abi_profiler_v5 ncclProfiler_v5 = {STROBE__NCCL_NAME,     strobe__nccl_init_v5,     \
                                                  strobe__nccl_start_v5, strobe__nccl_stop,        \
                                                  strobe__nccl_state_v4, strobe__nccl_finalize};   \
    EXPORT const nccl_abi_profiler_v4 ncclProfiler_v4;                                             \
    const nccl_abi_profiler_v4 ncclProfiler_v4 = {STROBE__NCCL_NAME,     strobe__nccl_init_v4,     \
                                                  strobe__nccl_start_v4, strobe__nccl_stop,        \
                                                  strobe__nccl_state_v4, strobe__nccl_finalize};   \
    EXPORT const nccl_abi_profiler_v3 ncclProfiler_v3;                                             \
    const nccl_abi_profiler_v3 ncclProfiler_v3 = {STROBE__NCCL_NAME,     strobe__nccl_init_v3,     \
                                                  strobe__nccl_start_v3, strobe__nccl_stop,        \
                                                  strobe__nccl_state_v3, strobe__nccl_finalize};   \
    EXPORT const nccl_abi_profiler_v2 ncclProfiler_v2;                                             \
    const nccl_abi_profiler_v2 ncclProfiler_v2 = {STROBE__NCCL_NAME,     strobe__nccl_init_v2,     \
                                                  strobe__nccl_start_v2, strobe__nccl_stop,        \
                                                  strobe__nccl_state_v3, strobe__nccl_finalize};

#endif /* STROBE_NCCL_H */
