/* hta.h: traces as HolisticTraceAnalysis (HTA, facebookresearch/HolisticTraceAnalysis) sees
 * them, for the commands that give HTA's numbers (breakdown, overlap, kernels --by-type, launches,
 * idle, queue, ranks, annotations). The definitions are HTA's; the code is ours.
 *
 * What HTA keeps of a trace (hta/common/trace_parser.py, trace.py, trace_filter.py):
 *   - rows: the events with a "dur" and a "cat" (X events; [memory] instants too, with dur 0),
 *     less those of cat "Trace". Each row has "stream" and "correlation" from its args (-1 when
 *     absent; a stream that int() cannot read is -1).
 *   - times, in the trace's microseconds: when the file's ts are decimals, ts is rounded up and
 *     ts + dur down (round_down_time_stamps), both on doubles as Python reads them; so a row's
 *     duration is end - ts, an integer, that can be negative for an event under a microsecond.
 *     Integer traces are unchanged by this rounding, so it is applied to every trace.
 *   - GPU kernels (GPUKernelFilter): rows with stream >= 0 and correlation >= 0, and the rows
 *     named "Event Sync" or "Context Sync"; every other row is a CPU row.
 *   - the profiler-step restriction (_filter_irrelevant_gpu_kernels, include_last_profiler_step
 *     False): when the traces, all ranks together, name two or more profiler steps
 *     (^ProfilerStep#N), each rank keeps the CPU rows that start before its last profiler step
 *     starts (when it has no step: before its first CPU row) and, of the kernels, those whose
 *     correlation equals a kept CPU row's, once per such row (an inner merge on "correlation").
 *     With fewer than two steps everything is kept (hta/common/trace.py at 05dc179d; the
 *     TraceCollection versions restrict then too, with the last step included).
 *   - HTA's MTIA branch of that restriction (filter_mtia_kernels_for_one_rank, taken when the
 *     first rank's top-level "device_type" is "MTIA", with two or more steps): each rank keeps the
 *     CPU events (cat: cpu_op..., user_annotation, ..._runtime) within its profiler steps' span
 *     (first step's ts to the last step's end: the last step included), the kernels (cat:
 *     kernel..., gpu_mem..., mtia_ccp_events) with one of their correlations, once each, and the
 *     memory kernels (Memcpy, Memset, dma... names) that start within a step; such a memory
 *     kernel without a stream takes its tid as its stream (cli_hta_stream), and without an
 *     iteration its step's (_fix_mtia_memory_kernels). Every other row is dropped; rows are in
 *     file order. build_rank_mtia in hta.c has the details.
 *   - the analyses then take the rows with stream != -1 as "GPU kernels" (so copies, memsets,
 *     cuda_sync events and any CPU row with a stream count as well).
 *   - HTA's definitions by name, one table in hta.c (its comment cites each pattern; re.match:
 *     anchored at the start, "." not past a newline), used by every command here:
 *       kernel type, in get_kernel_type's order (hta/utils/utils.py), with the patterns of
 *       hta/common/types.py at f4d0062c: COMMUNICATION when the name starts with nccl, hip or
 *       hccl or holds ncclKernel (CommunicateKernelGroupingPattern), else MEMORY when it starts
 *       with Memcpy, hipMemcpy, Memset, hipMemset or dma (MemoryKernelGroupingPattern: MTIA's
 *       dma* kernels), else COMPUTATION;
 *       launch (cuda_kernel_launch_stats, the queue lengths): a name that
 *       KERNEL_LAUNCH_CATEGORY_PATTERN takes (cuda...LaunchKernel, cuLaunchKernel...,
 *       runFunction..., MTIA's launch) or one of the other names of
 *       TraceSymbolTable.get_runtime_launch_events_query (hta/common/trace_symbol_table.py):
 *       cudaMemcpyAsync, cudaMemsetAsync, hipLaunchKernel, hipExtModuleLaunchKernel,
 *       hipMemcpyAsync, hipMemsetAsync, hipMemcpyWithStream.
 *     HTA's category patterns (KERNEL_CATEGORY_PATTERN, DEVICE_RUNTIME_CATEGORY_PATTERN) are
 *     not needed: GPU rows are GPUKernelFilter's (stream and correlation), whatever the cat.
 *   - merge_kernel_intervals: rows sorted by ts; a row starts a new interval when its ts is after
 *     every earlier row's end; an interval runs from its first ts to its largest end.
 *
 * A rank is a trace's distributedInfo.rank; one trace without it is rank 0. */
#ifndef STROBE_CLI_HTA_H
#define STROBE_CLI_HTA_H

#include <stddef.h>
#include <stdint.h>
#include <getopt.h>
#include <stdio.h>

#include "model/model.h"
#include "model/wire.h"

enum { CLI_HTA_COMPUTATION = 0, CLI_HTA_COMMUNICATION = 1, CLI_HTA_MEMORY = 2 };

/* A row HTA keeps, with HTA's times (microseconds, integers). */
typedef struct cli_hta_row {
    int64_t ts, end;
    uint32_t ev;   /* the model's event */
    uint32_t mult; /* copies of it HTA's merge makes (1 for CPU rows) */
} cli_hta_row;

/* A row whose stream or iteration HTA's MTIA branch sets (_fix_mtia_memory_kernels). */
typedef struct cli_hta_fix {
    uint32_t ev;
    uint8_t has_stream, has_iter;
    int64_t stream, iter;
} cli_hta_fix;

typedef struct cli_hta_rank {
    md_model m;
    int64_t rank;
    cli_hta_row *rows; /* kept rows with stream != -1 ("GPU kernels"), sorted by ts */
    size_t count;
    uint64_t
        *cpu_bits; /* the kept rows with stream -1: bit i (word i / 64) of event i set; read
                      them with cli_hta_cpu_next (a bit per event, not a row per CPU operator) */
    size_t cpu_count;
    int64_t min_ts;   /* the earliest row's ts, before the restriction (INT64_MAX: no row) */
    cli_hta_fix *fix; /* the MTIA branch's memory kernels, by event (NULL: none) */
    size_t nfix;
    /* With a command that reduces ranks (cli_hta_command.reduce): what it kept of this rank
     * (malloc'd), the model then stripped (md_strip) and the rows freed. */
    uint8_t *red;
    size_t red_len;
} cli_hta_rank;

typedef struct cli_hta_set {
    cli_hta_rank *ranks; /* sorted by rank */
    size_t count;
    int restricted; /* the profiler-step restriction applied */
    int mtia;       /* ... by HTA's MTIA branch (rows then in file order, not kernels first) */
    int64_t min_ts; /* the earliest row of all ranks (HTA's _align_all_ranks makes it 0) */
} cli_hta_set;

/* Loads the traces named by paths[0..n) (a folder stands for its .json and .json.gz files), one
 * rank each, and applies HTA's restriction. Refuses (one line on stderr, naming the files) a
 * folder without traces, traces without a rank, two traces of one rank, and traces of different
 * jobs (distributedInfo.world_size differs); says how many malformed events each file had.
 * @return 0, or CLI_BAD_INPUT after the message; cli_hta_free() in every case. */
int cli_hta_load(cli_hta_set *s, const char *cmd, char **paths, size_t n, int quiet);
/* cli_hta_load() that marks no cli_hta_rank.cpu_bits rows when no_cpu_rows (cpu_bits NULL,
 * cpu_count 0). */
int cli_hta_load_rows(cli_hta_set *s, const char *cmd, char **paths, size_t n, int quiet,
                      int no_cpu_rows);
void cli_hta_free(cli_hta_set *s);

/* The rank's first kept CPU row (stream -1) at or after event *i, in file order: sets *i to its
 * event and *w to the row (mult 1). @return 1, or 0 when there is none. Walks them all as
 *   for (size_t i = 0; cli_hta_cpu_next(r, &i, &w); i++) ... */
int cli_hta_cpu_next(const cli_hta_rank *r, size_t *i, cli_hta_row *w);
/* Event i's row, kept or not: HTA's times (as in rows and cli_hta_cpu_next), mult 1. */
void cli_hta_row_at(const cli_hta_rank *r, uint32_t i, cli_hta_row *w);

/* Event ev's stream as HTA has it after loading: the MTIA branch's (cli_hta_fix), else the file's.
 */
int64_t cli_hta_stream(const cli_hta_rank *r, uint32_t ev);

/* A row HTA keeps of the file (before the restriction), and a row of its GPUKernelFilter. */
int cli_hta_is_row(const md_model *m, const md_event *e);
int cli_hta_is_gpu_row(const md_model *m, const md_event *e);

/* HTA's add_iteration (hta/common/trace.py), over the rank's rows before the restriction:
 *   - the steps are the rows whose name starts with "ProfilerStep", in file order, numbered by
 *     "ProfilerStep\s*#\s*(\d+)" (HTA asserts that a step has a number; here it is -1);
 *   - a row with stream < 0, or stream 0 and cat "cpu_op", is in the iteration of the last step
 *     (in file order) with step.ts <= ts < step.ts + step.dur, else in -1;
 *   - a row with stream > 0 is in the iteration of the row its index_correlation names: for a GPU
 *     row (cli_hta_is_gpu_row), the CPU row with its correlation (!= -1; the last in file
 *     order when there are several, as pandas' assignment keeps), else -1. Rows with stream 0
 *     otherwise have none (HTA's NaN), and so here do CPU rows with stream > 0 (in HTA none when
 *     they have a GPU partner, whose iteration is not set yet, else -1: no analysis here looks at
 *     them). (HTA's index_correlation > 0 test also leaves out the file's first row as a
 *     partner; that row, whose index is 0, is taken here like any other.) */
#define CLI_HTA_NO_ITER INT64_MIN
typedef struct cli_hta_corr_row {
    int64_t corr;
    size_t ev;
} cli_hta_corr_row;
/* What an event's iteration is computed from (cli_hta_iters_init: one pass over the rank), so that
 * no value per event is kept: the steps (ts, end, number) and the CPU rows with a correlation. */
typedef struct cli_hta_iters {
    const cli_hta_rank *r;
    int64_t *steps;
    size_t nsteps;
    cli_hta_corr_row *cr;
    size_t ncorr;
    int sorted; /* the steps start in file order and do not overlap */
} cli_hta_iters;
/* @return 0 or STROBE_ENOMEM; cli_hta_iters_free() in every case. */
int cli_hta_iters_init(cli_hta_iters *it, const cli_hta_rank *r);
void cli_hta_iters_free(cli_hta_iters *it);
/* Model event ev's iteration: its number, -1, or CLI_HTA_NO_ITER when none or no row. */
int64_t cli_hta_iteration(const cli_hta_iters *it, uint32_t ev);

/* The N of "ProfilerStep\s*#\s*(\d+)" at the start of name, or -1. */
int64_t cli_hta_step_number(const char *name);

/* A launch as HTA's launch statistics and queue lengths take it (see the definitions above):
 * CUDA's, ROCm's (hip...) and MTIA's (runFunction...) kernel launches, copies and memsets. */
int cli_hta_is_launch(const char *name);

/* Sorts v[0..n) in increasing order; the index of x in the sorted v[0..n) (the first one), or
 * -1. */
void cli_hta_sort_i64(int64_t *v, size_t n);
long cli_hta_find_i64(const int64_t *v, size_t n, int64_t x);

/* HTA's kernel type of a name (see the definitions above): CLI_HTA_COMMUNICATION, CLI_HTA_MEMORY or
 * CLI_HTA_COMPUTATION. */
int cli_hta_kernel_type(const char *name);
/* "COMPUTATION", "COMMUNICATION", "MEMORY". */
const char *cli_hta_type_name(int type);

/* merge_kernel_intervals over rows[0..n) sorted by ts, keeping those for which keep(row) is true
 * (all when keep is NULL): writes the merged [ts, end) pairs to out (room for 2n) and returns
 * their number. */
size_t cli_hta_merge(const cli_hta_rank *r,
                     int (*keep)(const cli_hta_rank *, const cli_hta_row *, void *), void *arg,
                     int64_t *out);

/* A result table: named columns, rows of cells as text, printed as a table, CSV, or JSON (an
 * array of row objects keyed by the column names; a cell of a column whose text[] is 0 is a
 * number, and null when empty). */
#define CLI_HTA_MAX_COLS 64 /* columns printed at most */
typedef struct cli_hta_table {
    const char *const *cols;
    const uint8_t *text;
    size_t ncols;
    /* Cell i (row i / ncols) is the NUL-terminated text at text_buf.p + cells[i]: one buffer for
     * all the cells, not an allocation each (a job's steps table has millions). */
    size_t *cells;
    size_t n, cap;
    /* The table format's header of each column, where the command gives them (its unit in the
     * name: "mean (GB/s)"); NULL: HTA's names, with the unit of HTA's times (us). */
    const char *const *heads;
    md_wbuf text_buf;
    /* What a CLI_HTA_TS cell is printed relative to: the set's min_ts (run_emit sets it). */
    int64_t t0;
    /* Recording (cli_hta_command.per_rank's reduction): non-NULL, cli_hta_table_row appends the
     * row's typed cells to it, tagged with rec_index (the table's place in the command's), instead
     * of text to the table; the reduction's rows are printed later, when t0 is known. */
    md_wbuf *rec;
    uint32_t rec_index;
} cli_hta_table;

/* Adds a row of t->ncols cells (copied). @return 0 or STROBE_ENOMEM. */
int cli_hta_table_add(cli_hta_table *t, const char *const *cells);
/* Prints the table in format (CLI_TABLE, CLI_CSV, CLI_JSON). */
void cli_hta_table_print(const cli_hta_table *t, int format, FILE *out);
void cli_hta_table_free(cli_hta_table *t);

/* A typed cell of a row, written as the commands print it: an integer; text; HTA's round(x, 2)
 * (CLI_HTA_PCT); a double as %.15g (CLI_HTA_NUM); a time of HTA's (a cli_hta_row's ts or end),
 * printed as the integer x - t0, the set's min_ts (CLI_HTA_TS: what HTA's _align_all_ranks
 * makes it; a rank reduced alone does not know min_ts yet). A double that is not finite is an
 * empty cell (HTA's NaN: null in JSON). */
enum { CLI_HTA_CELL_INT, CLI_HTA_CELL_TEXT, CLI_HTA_CELL_PCT, CLI_HTA_CELL_NUM, CLI_HTA_CELL_TS };
typedef struct cli_hta_cell {
    int kind;
    int64_t i;
    double d;
    const char *s;
} cli_hta_cell;
#define CLI_HTA_INT(x) ((cli_hta_cell){CLI_HTA_CELL_INT, (int64_t)(x), 0.0, NULL})
#define CLI_HTA_TEXT(x) ((cli_hta_cell){CLI_HTA_CELL_TEXT, 0, 0.0, (x)})
#define CLI_HTA_PCT(x) ((cli_hta_cell){CLI_HTA_CELL_PCT, 0, (double)(x), NULL})
#define CLI_HTA_NUM(x) ((cli_hta_cell){CLI_HTA_CELL_NUM, 0, (double)(x), NULL})
#define CLI_HTA_TS(x) ((cli_hta_cell){CLI_HTA_CELL_TS, (int64_t)(x), 0.0, NULL})
/* Adds a row of n typed cells. @return 0, STROBE_EINVAL when n is not t->ncols, or
 * STROBE_ENOMEM. */
int cli_hta_table_row(cli_hta_table *t, size_t n, const cli_hta_cell *cells);
#define CLI_HTA_ROW(t, ...)                                                                        \
    cli_hta_table_row((t), sizeof((const cli_hta_cell[]){__VA_ARGS__}) / sizeof(cli_hta_cell),     \
                      (const cli_hta_cell[]){__VA_ARGS__})

/* Prints tables t[0..n) in format: one as cli_hta_table_print does; several one after another with
 * a blank line between them, or in JSON as one object whose keys[k] holds t[k]'s array. */
void cli_hta_emit(FILE *out, int format, const cli_hta_table *t, const char *const *keys, size_t n);

/* ---- the commands' frame ---------------------------------------------------------------------
 * Every HTA command is one cli_hta_command run by cli_hta_main: options (-f, -q, -h, -V here, the
 * command's own through its option callback), the traces loaded by cli_hta_load, the command's run
 * filling its tables, those printed by cli_hta_emit, and the exit status. */
#define CLI_HTA_MAX_TABLES 4
/* The end of the OPTIONS every HTA command's usage text has, and its EXIT STATUS heading. */
#define CLI_HTA_USAGE_STD_OPTIONS                                                                  \
    "    -q, --quiet    no progress line on standard error\n"                                      \
    "    -h, --help     show this text\n"                                                          \
    "    -V, --version  show strobe's version\n"                                                   \
    "\n"                                                                                           \
    "EXIT STATUS\n"
#define CLI_HTA_UNKNOWN_OPTION (-1)
#define CLI_HTA_REPORTED 1 /* a run's bad input, said on stderr (never a STROBE_E* code) */
typedef struct cli_hta_columns {
    const char *key; /* the table's key in the JSON object when a command prints several */
    const char *const *cols;
    const uint8_t *text; /* per column: 1 text, 0 a number (see cli_hta_table) */
    size_t ncols;
    const char *const *heads; /* the table format's headers, or NULL (see cli_hta_table) */
} cli_hta_columns;

typedef struct cli_hta_command {
    const char *name; /* "breakdown" */
    const char *usage;
    const struct option *options;
    const char *shortopts; /* getopt's, with ":f:qhV" in it */
    /* An option other than -f, -q, -h, -V, with its value (NULL: the command has none).
     * @return 0 when taken, CLI_HTA_UNKNOWN_OPTION, or an exit status (after a message). */
    int (*option)(void *ctx, int c, const char *arg);
    /* Fills tables[0..ntables) (set up from the columns below) from the loaded traces.
     * @return 0, a negative STROBE_E* code, or CLI_HTA_REPORTED after a message on stderr (bad
     * input: nothing is printed, exit 2). */
    int (*run)(const cli_hta_set *s, void *ctx, cli_hta_table *tables);
    cli_hta_columns tables[CLI_HTA_MAX_TABLES];
    size_t ntables;
    /* Optional (NULL: none), for a command whose analysis needs of each rank a small part of it
     * (strobe ranks: its steps, long NCCL kernels and collectives). reduce writes that part of
     * rank r (its rows built) into one flat malloc'd buffer, and run_reduced runs the analysis
     * over the set's buffers (cli_hta_rank.red), giving what run gives. cli_hta_main then reduces
     * each rank on the thread that read it and strips its model at once: memory holds the ranks
     * being read (one per worker) and the buffers, not every rank's model, and under MPI the
     * buffers travel to rank 0 instead of the models. @return 0 or a negative STROBE_E* code. */
    int (*reduce)(const cli_hta_rank *r, uint8_t **out, size_t *len);
    int (*run_reduced)(const cli_hta_set *s, void *ctx, cli_hta_table *tables);
    /* 1 for a command whose run computes each rank's rows from that rank alone: one loop over
     * s->ranks in order that stops at the first failure, s->count, s->min_ts and the other ranks
     * unread, its times as CLI_HTA_TS cells, its messages to cli_hta_err(), ctx only read (the
     * threads share it). cli_hta_main then reduces each rank as reduce would, with no code of
     * the command's: run over the rank alone (the set's restriction being the reduction's) into
     * recording tables, its messages kept; and prints the ranks' rows and messages, in rank
     * order, as run over the whole set would. 0: reduce and run_reduced, or whole models.
     * Per rank: breakdown, overlap, idle, queue, memory-bw, launches (and their variants).
     * Whole models still: annotations (rows sorted by name across the ranks, its "no such event"
     * is said once for all), counters (its columns are every rank's counter names),
     * critical-path (one rank, its times from every rank's min_ts, read again from its file),
     * report (it runs several commands over one loading); kernels --by-type (means and
     * deviations over ranks) and --sequences (one symbol table for all) load on their own. */
    int per_rank;
} cli_hta_command;

/* Where a command's run writes its messages: stderr, or, while cli_hta_main reduces a rank on
 * this thread (cli_hta_command.per_rank), a buffer whose text it writes to stderr in rank order
 * afterwards. */
FILE *cli_hta_err(void);

/* Runs the command c on argv (argv[0] its name) with the command's own state ctx.
 * @return the exit status. */
int cli_hta_main(const cli_hta_command *c, void *ctx, int argc, char **argv);
/* cli_hta_main() for a command whose run reads no CPU rows (no_cpu_rows 1): those rows, one per
 * CPU operator, are then not built (see cli_hta_load_rows). */
int cli_hta_main_rows(const cli_hta_command *c, void *ctx, int argc, char **argv, int no_cpu_rows);

/* Runs command c's analysis over traces loaded by cli_hta_load, with the command's state ctx (as
 * its cmd_* function sets it up; NULL where the command takes none, and for ranks: its defaults),
 * and writes its tables as `-f json` prints them. @return 0, a negative STROBE_E* code, or
 * CLI_HTA_REPORTED (said on stderr; nothing written). */
int cli_hta_json(FILE *out, const cli_hta_command *c, const cli_hta_set *s, void *ctx);

/* The commands, for the report (cmd_report.c), which runs them over its traces. */
extern const cli_hta_command cli_hta_cmd_breakdown, cli_hta_cmd_overlap, cli_hta_cmd_idle,
    cli_hta_cmd_queue, cli_hta_cmd_ranks;
/* strobe ranks --collectives: stragglers per collective (cmd_ranks.c), for the report. */
extern const cli_hta_command cli_hta_cmd_collectives;

/* numpy's linear quantile q of v[0..n) (n > 0), which it sorts: the kernel and annotation
 * breakdowns' duration_ratio cut. */
double cli_hta_quantile(int64_t *v, size_t n, double q);

/* A duration of a named event, and the durations of one name described as HTA's kernel and
 * annotation breakdowns describe them: sum, max, min, mean, std (n - 1; 0 for one value). */
typedef struct cli_hta_dur {
    const char *name;
    int64_t dur;
} cli_hta_dur;

typedef struct cli_hta_named {
    const char *name;
    int64_t sum, max, min;
    double mean, std;
} cli_hta_named;

/* Groups d[0..n) (sorted here) by name into names[] (room for n), sorted by sum, largest first,
 * then by name; v is scratch for n values. @return the number of names. */
size_t cli_hta_name_table(cli_hta_dur *d, size_t n, int64_t *v, cli_hta_named *names);

/* HTA's "others" rule over names[0..nn) sorted by sum: when there are more than `num` names,
 * a name keeps its row (as one value: sum = max = min = mean, std 0) while the cumulated sum
 * up to it is within the `ratio` quantile of the cumulated sums and it is among the first
 * `num`, or when keep(ctx, name) says so (the allowlist); the others become one row "others"
 * described over their sums. v is scratch for nn values. @return the rows left in names, or
 * STROBE_ENOMEM. */
long cli_hta_name_others(cli_hta_named *names, size_t nn, int64_t *v, size_t num, double ratio,
                         int (*keep)(const void *ctx, const char *name), const void *ctx);

/* HTA's shorten_name (hta/utils/utils.py), which decode_symbol_id_to_symbol_name applies to the
 * s_name, s_cat and s_user_annotation columns: name with "->" removed, a '>' dropping what was
 * written since the last '<' with it and a ')' what was written since the last '(' (innermost
 * brackets first), then only the text after the last space. Written to out, which has room for
 * strlen(name) + 1. */
void cli_hta_shorten_name(const char *name, char *out);

/* HTA's round(x, digits) as text; "" (null, HTA's NaN) when x is not finite. */
void cli_hta_pct(char *buf, size_t n, double x, int digits);

#endif
