/* merge.h: several traces written into one, each process a process of its own: the parts that
 * `strobe record` collects from the processes of one program, a job's ranks (`strobe merge`),
 * and one JSON trace rewritten whole as Perfetto (`strobe convert`, cli_merge_options.whole).
 *
 * Every input is read with the trace reader (Kineto JSON or Perfetto, plain or gzip) and its
 * events are placed on one timeline by their absolute times (baseTimeNanoseconds + ts). strobe's
 * times are CLOCK_MONOTONIC (read directly, or TSC ticks fitted to it between the process's first
 * anchor and the stop: src/core/clock.c) plus the offset to CLOCK_REALTIME measured at each
 * session's start, and the machine's monotonic clock is one for all its processes: traces of
 * processes of one machine line up to within the anchors' measurement (tens of ns), unless the
 * wall clock was stepped between two sessions' starts or the clock's frequency correction changed
 * during a run. Traces from several machines line up only as well as their clocks agree, unless
 * the caller maps each input's times onto one clock (cli_merge_input.has_clock: `strobe merge`,
 * with the offsets each rank measured to rank 0).
 * The output is written through the public event-level writer (strobe/writer.h), in the format
 * its name says.
 *
 * Memory. The inputs that share process ids (the parts of one program) are held in memory
 * together, as their events must be sorted per track before they are written. An input whose
 * processes are its own (own_pids: a rank of a job) is read, written and freed before the next
 * one is read: a job's merge holds one rank at a time, however many ranks there are, or with
 * cli_merge_options.jobs workers, at most 2 x jobs ranks read ahead of the one being written. */
#ifndef STROBE_CLI_MERGE_H
#define STROBE_CLI_MERGE_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "strobe/writer.h"

typedef struct cli_merge_input {
    const char *path;
    /* The name of process `pid` of this input; NULL: the trace's own process_name. */
    const char *process_name;
    int64_t pid;
    /* When the input's process ended (ns, the traces' clock), if known: the end of the session
     * span made for a trace cut short (see cli_merge); 0: unknown. */
    int64_t end_ns;
    /* A rank of a job (strobe merge). With own_pids, the input's processes are apart from every
     * other input's: its pids become pid_base, pid_base + 1 ... in the order they are first seen
     * (at most CLI_MERGE_MAX_PIDS), each process is named "PREFIX: its own name" (PREFIX alone
     * when it has none; its own pid becomes its label "pid N" when it has no label) and sorted
     * by sort_base + its number (devices after the processes: + CLI_MERGE_MAX_PIDS), and the
     * input is written out before the next input is read. */
    int own_pids;
    int64_t pid_base, sort_base;
    const char *prefix;
    /* With has_clock, a time t of this input becomes t + offset_ns + (t - t_ref_ns) * drift_ppb /
     * 1e9 (the contract's strobe_clock_sync; rounded to the ns). */
    int has_clock;
    int64_t offset_ns, t_ref_ns;
    double drift_ppb;
} cli_merge_input;

/* The most process ids one own_pids input may hold. */
#define CLI_MERGE_MAX_PIDS 1000

/* What happened to an input (cli_merge_options.state). */
enum {
    CLI_MERGE_READ = 0,  /* read to its end */
    CLI_MERGE_SHORT = 1, /* cut short (a writer killed mid-run): what came before is merged */
    CLI_MERGE_FAILED = 2 /* nothing of it could be read */
};

typedef struct cli_merge_options {
    const char *trace_name; /* NULL: none */
    /* The output's base time (baseTimeNanoseconds); without has_base, the earliest base of the
     * first inputs written (those read before the output is opened). */
    int has_base;
    int64_t base_ns;
    /* Top-level metadata set on the output: keys and JSON values, nmeta of each. */
    const char *const *meta_keys;
    const char *const *meta_values;
    size_t nmeta;
    /* When not NULL: one CLI_MERGE_* per input, set by cli_merge_ex. */
    int *state;
    /* Show a progress line on a terminal while each input is read (cli_progress_start). */
    int progress;
    /* What becomes of a slice that starts inside another and ends after it: CLI_MERGE_CUT, it is
     * ended with the slice around it (counted in clipped); CLI_MERGE_LANES, it is kept whole on
     * an extra track of its thread, "THREAD (overlaps, lane N)" (counted in on_lanes). */
    int overlap;
    /* One trace rewritten whole (strobe convert): every top-level member of the input rides on
     * the output (not only those a merge carries), every track it names is declared, and an
     * input that ends in an error, or holds nothing, is an error (merge.c lists the rest). */
    int whole;
    /* Inputs that are all own_pids (a job's ranks), without whole: collected on `jobs` threads
     * (above 1) while the caller's thread writes them in input order, at most 2 x jobs ahead
     * of it, with no progress line; the output is the same bytes as with one. Under MPI
     * (mpi_size above 1, started by the caller: cli_mpi_start), process mpi_rank collects
     * inputs mpi_rank, + mpi_size ... and sends them to rank 0, which writes them all (the
     * others write nothing, say nothing, and return rank 0's result). */
    int jobs;
    int mpi_rank, mpi_size;
} cli_merge_options;

enum { CLI_MERGE_CUT = 0, CLI_MERGE_LANES = 1 };

typedef struct cli_merge_stats {
    size_t processes;       /* process tracks written (devices not counted) */
    size_t threads;         /* thread tracks written */
    uint64_t events;        /* slices, instants and counter samples written */
    size_t empty;           /* inputs without events, left out */
    size_t cut;             /* inputs that ended in an error: the events before it are kept */
    uint64_t clipped;       /* slices that ended after the slice around them: ended with it */
    uint64_t skipped;       /* events of kinds not merged (async, ...) */
    uint64_t device_events; /* events on device (GPU) tracks */
    uint64_t dropped;       /* events the inputs' sessions counted as dropped or lost, not written
                               ("dropped_events", "lost_events" of their strobe_stream) */
    uint64_t on_lanes;      /* slices kept whole on extra lanes (CLI_MERGE_LANES) */
    uint64_t lanes;         /* the extra lanes made for them */
    uint64_t out_of_range;  /* events left out: a time at or beyond +-2^62 ns */
    uint64_t wide_ids;      /* tracks whose pid is outside 0..16777215 or tid outside 32 bits */
} cli_merge_stats;

/* The options strobe convert and strobe merge share: -o OUT, --overlap=lanes|cut (long only,
 * 'O' in their option tables), -q, -h, -V. */
typedef struct cli_merge_args {
    const char *out; /* NULL: not given */
    int quiet, overlap;
    int first; /* the first operand in argv */
} cli_merge_args;

/* Parses argv into *a (overlap keeps its value unless given). @return -1 when parsed, else the
 * exit code to return (--help, --version, or a usage error said). */
int cli_merge_getopt(const char *cmd, const char *usage, const struct option *longopts, int argc,
                     char **argv, cli_merge_args *a);

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

/* cli_merge with options (opt may be NULL: cli_merge's defaults). */
int cli_merge_ex(const char *cmd, const cli_merge_input *inputs, size_t n, const char *out,
                 const cli_merge_options *opt, cli_merge_stats *stats);

/* Time t of input `in` on the output's clock: t + offset_ns + (t - t_ref_ns) * drift_ppb / 1e9,
 * rounded to the ns (t itself without has_clock, or where that would overflow). */
int64_t cli_merge_align(const cli_merge_input *in, int64_t t);

/* The JSON args object text[0..len) as the writer's args (*args, *n), their keys and values
 * copied into *scratch (*args, *scratch and their capacities *cap, *scap grow as needed, and are
 * the caller's to free): strings and integers keep their type, any other value goes as its JSON
 * text. `strobe merge`, `strobe record` and `strobe convert` pass a trace's args on with it.
 * @return 0 or STROBE_ENOMEM. */
int cli_writer_args(const char *text, size_t len, strobe_writer_arg **args, size_t *cap, size_t *n,
                    char **scratch, size_t *scap);

#endif
