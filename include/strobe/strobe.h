/* strobe/strobe.h: the umbrella header. Includes the whole public API:
 *   version.h     STROBE_VERSION_MAJOR/MINOR/PATCH and STROBE_VERSION_STRING of these headers
 *   error.h       error codes, strobe_strerror() and the error names
 *   instrument.h  hot-path instrumentation (ranges, scopes, instants, counters, correlation ids)
 *   op.h          operator details: inputs, FLOPs, module scopes, memory events
 *   session.h     config, start/stop, flight recorder dumps, per-thread mode, metadata, log sink,
 *                 strobe_version()
 *   result.h      events, threads, stats, event tree, saving traces
 *   summary.h     the per-operator summary table
 *   backend.h     backend events, backend clock maps (includes edge.h)
 *   edge.h        the module (edge) profiler
 *   schedule.h    iteration steps, schedules and the trace-file handler
 *   ondemand.h    the on-demand endpoint (traces started from outside) and its client interface
 *   writer.h      writing a trace event by event, in any of strobe's formats
 *   markers.h     strobe's ranges for NVTX and ftrace tools; CUDA profiler API captures
 *   dist.h        the process's rank in a parallel job (distributedInfo in its traces)
 * export.h (the STROBE_API visibility macro) comes with each of them. */
#ifndef STROBE_STROBE_H
#define STROBE_STROBE_H

#include "version.h"
#include "error.h"
#include "instrument.h"
#include "session.h"
#include "result.h"
#include "summary.h"
#include "op.h"
#include "backend.h"
#include "edge.h"
#include "schedule.h"
#include "ondemand.h"
#include "writer.h"
#include "markers.h"
#include "dist.h"

#endif /* STROBE_STROBE_H */
