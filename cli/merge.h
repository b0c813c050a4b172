/* merge.h: several traces written into one, each process a process of its own: the parts that
 * `strobe record` collects from the processes of one program (and, later, `strobe merge`).
 *
 * Every input is read with the trace reader (Kineto JSON or Perfetto, plain or gzip) and its
 * events are placed on one timeline by their absolute times (baseTimeNanoseconds + ts). strobe's
 * times are CLOCK_MONOTONIC (read directly, or TSC ticks fitted to it between the process's first
 * anchor and the stop: src/core/clock.c) plus the offset to CLOCK_REALTIME measured at each
 * session's start, and the machine's monotonic clock is one for all its processes: traces of
 * processes of one machine line up to within the anchors' measurement (tens of ns), unless the
 * wall clock was stepped between two sessions' starts or the clock's frequency correction changed
 * during a run. Traces from several machines line up only as well as their clocks agree.
 * The output is written through the public event-level writer (strobe/writer.h), in the format
 * its name says. */
#ifndef STROBE_CLI_MERGE_H
#define STROBE_CLI_MERGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_merge_input {
    const char *path;
    /* The name of process `pid` of this input; NULL: the trace's own process_name. */
    const char *process_name;
    int64_t pid;
    /* When the input's process ended (ns, the traces' clock), if known: the end of the session
     * span made for a trace cut short (see cli_merge); 0: unknown. */
    int64_t end_ns;
} cli_merge_input;

typedef struct cli_merge_stats {
    size_t processes;       /* process tracks written (devices not counted) */
    size_t threads;         /* thread tracks written */
    uint64_t events;        /* slices, instants and counter samples written */
    size_t empty;           /* inputs without events, left out */
    size_t cut;             /* inputs that ended in an error: the events before it are kept */
    uint64_t clipped;       /* slices that ended after the slice around them: ended with it */
    uint64_t skipped;       /* events of kinds not merged (B/E pairs, async, ...) */
    uint64_t device_events; /* events on device (GPU) tracks */
} cli_merge_stats;

/* Merges inputs[0..n) into `out` (the format by its suffix, see strobe/writer.h). Processes with
 * one pid in several inputs (a forked child that ran exec) are one process, named after the last
 * such input that has events. An input without events adds nothing, except the first, whose
 * process is always written; its session span (strobe's "strobe session") carries the trace's
 * metadata. Flow ids are made distinct per input. Device tracks keep their Kineto ids (device
 * index, stream): processes that used one device share its tracks. `trace_name` may be NULL.
 * Problems are said on stderr, one line each, prefixed "strobe CMD:".
 * @return 0, or -1 when the output could not be written (or no input could be read). */
int cli_merge(const char *cmd, const cli_merge_input *inputs, size_t n, const char *out,
              const char *trace_name, cli_merge_stats *stats);

#endif
