/* markers_int.h: what the markers' files share (markers.c: the API and the per-thread stack;
 * mk_nvtx.c: strobe as an NVTX client; mk_ftrace.c: trace_marker; mk_cuda.c: the CUDA driver
 * calls and captures). */
#ifndef STROBE_MARKERS_INT_H
#define STROBE_MARKERS_INT_H

#include <stddef.h>

/* ---- mk_nvtx.c: the NVTX tool that NVTX_INJECTION64_PATH names ---------------------------- */

/* Attaches to the tool once per process (later calls return the first answer): 1 when a tool
 * took strobe's callback tables and markers reach it, 0 when there is none to reach (no variable,
 * a library that cannot be loaded or refuses, or strobe itself; said in the log). */
int strobe__mk_nvtx_attach(void);
/* Push/pop and mark, in the domain "strobe" when the tool has domains, else the default one.
 * Only after strobe__mk_nvtx_attach() returned 1. */
void strobe__mk_nvtx_push(const char *name);
void strobe__mk_nvtx_pop(void);
void strobe__mk_nvtx_mark(const char *name);

/* ---- mk_ftrace.c: the kernel's trace_marker ----------------------------------------------- */

/* Opens trace_marker (kept open for the process's life, so that a thread still in a marker call
 * while markers stop never writes to a reused descriptor). @return 0 or STROBE_ENOTSUP (logged). */
int strobe__mk_ftrace_open(void);
/* Writes "B|pid|name", "E|pid" or "I|pid|name" (atrace's format, which Perfetto and trace-cmd
 * read). `len` is strlen(name). Write errors (tracing off) are ignored. */
void strobe__mk_ftrace_begin(const char *name, size_t len);
void strobe__mk_ftrace_end(void);
void strobe__mk_ftrace_instant(const char *name, size_t len);

/* ---- mk_cuda.c: the driver the program loaded ---------------------------------------------- */

/* Waits for the calling thread's context (cuCtxSynchronize) when libcuda.so.1 is loaded;
 * otherwise nothing (CUDA loaded later is found: looked for again now and then). */
void strobe__mk_cuda_sync(void);

#endif /* STROBE_MARKERS_INT_H */
