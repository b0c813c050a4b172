/* strobe/strobe.h: the umbrella header. Includes the whole public API:
 *   instrument.h  hot-path instrumentation (ranges, scopes, instants, counters, correlation ids)
 *   session.h     config, start/stop, per-thread mode, metadata, log sink
 *   result.h      events, threads, stats, event tree, saving traces
 *   summary.h     the per-operator summary table
 *   error.h       error codes and strobe_strerror()
 *   op.h          operator details: inputs, FLOPs, module scopes, memory events
 *   backend.h     backend events, backend clock maps, the module (edge) profiler */
#ifndef STROBE_STROBE_H
#define STROBE_STROBE_H

#include "error.h"
#include "instrument.h"
#include "session.h"
#include "result.h"
#include "summary.h"
#include "op.h"
#include "backend.h"
#include "schedule.h"
#include "ondemand.h"

#endif /* STROBE_STROBE_H */
