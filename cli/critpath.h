/* critpath.h: HTA's critical path analysis of one rank (CriticalPathAnalysis and CPGraph in
 * hta/analyzers/critical_path_analysis.py): the graph of CPU operators, runtime calls and GPU
 * kernels, its longest path, and what bounds each of the path's edges. The definitions are HTA's;
 * the code is ours (cmd_critical_path.c prints it and writes the overlaid trace).
 *
 * What is built, over the rank's rows as hta.h describes them (HTA's times in whole us):
 *   - the window: the rows whose name holds the annotation, in file order; instances lo..hi of
 *     them (positions, from 0) span [min ts, max end]. An empty annotation spans the whole rank.
 *   - the clipped rows: CPU rows (stream -1) with dur > 0 starting in the window, and rows with a
 *     stream whose CPU partner (the CPU row whose index_correlation names them) has dur > 0 and
 *     starts in the window, or which are "Stream Wait Event".
 *   - nodes: a start and an end per clipped row of cat cpu_op, cuda_runtime or cuda_driver, or
 *     with a stream and index_correlation >= 0; sorted by time (ties: starts first, then rows in
 *     file order, a choice: HTA's pandas sort is not stable).
 *   - edges (CPEdgeType): per CPU thread, its call stack walked depth first (operator spans,
 *     nested calls, a dependency between consecutive top-level operators); per kernel, its span,
 *     then a launch delay from its runtime call when the stream's queue was empty, else a
 *     kernel-kernel delay from the previous kernel on its stream; sync dependencies from
 *     kernels to cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize calls
 *     and, through cudaEventRecord and cudaStreamWaitEvent, between kernels of two streams.
 *   - the path: networkx's dag_longest_path, with its tie rules (topological generations,
 *     predecessors in the order their edges were added), negative weights counted as 0.
 *
 * data_load_events (critical_path_analysis's argument in HTA's later releases, not in the one the
 * rest follows; read from a copy of hta/analyzers/critical_path_analysis.py whose CPGraph takes
 * it, with TraceSymbolTable.find_matches and get_events_mask of hta/common/trace_symbol_table.py):
 *   - nodes (_create_event_nodes' data_loading_events_mask): a clipped row whose name holds one
 *     of the patterns also gets a start and an end node. find_matches escapes the patterns
 *     (re.escape) before its re.search, so here a pattern is found as plain text in the full
 *     name, whatever its regex characters;
 *   - bound_by: an operator edge attributed to a CPU row (stream < 0) is "data_loading", not
 *     "cpu_bound", when a pattern, as a regular expression (re.search, not escaped), is found in
 *     the row's s_name: its name as cli_hta_shorten_name shortens it. Here the patterns are POSIX
 *     extended regular expressions (Python's \d, \w, lazy quantifiers... are not).
 * The two readings of one pattern differ: "DataLoader)" finds
 * "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" as text, but its s_name
 * "enumerate#_SingleProcessDataLoaderIter.__next__" does not hold it. (HTA's later releases also
 * sort nodes and build runtime-call edges otherwise; only data_load_events is taken from them.)
 */
#ifndef STROBE_CLI_CRITPATH_H
#define STROBE_CLI_CRITPATH_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "hta.h"

/* CPEdgeType, in HTA's order. */
enum {
    CLI_CP_OPERATOR_KERNEL = 0,
    CLI_CP_DEPENDENCY,
    CLI_CP_KERNEL_LAUNCH_DELAY,
    CLI_CP_KERNEL_KERNEL_DELAY,
    CLI_CP_SYNC_DEPENDENCY,
    CLI_CP_EDGE_TYPES
};

/* The type's value as HTA writes it ("critical_path_operator" ...). */
const char *cli_cp_edge_type_name(int type);

#define CLI_CP_NONE UINT32_MAX

/* A row of the rank (see hta.h), with what the analysis reads of it. */
typedef struct cli_cp_row {
    uint32_t ev;     /* the model's event */
    int64_t idx;     /* HTA's index: the event's position in the file's traceEvents */
    int64_t ts, dur; /* HTA's times, us */
    int64_t stream;  /* -1 when none */
    int64_t corr;    /* correlation, -1 when none */
    int64_t ic;      /* HTA's index_correlation: the partner's idx, 0 or -1 */
    int64_t wait_stream, wait_corr; /* wait_on_stream, wait_on_cuda_event_record_corr_id (-1) */
    uint32_t name, cat;             /* string ids */
    uint8_t gpu;                    /* a GPUKernelFilter row */
    uint8_t clip;                   /* in the clipped rows */
    uint8_t data_load;              /* a clipped CPU row bound_by calls data_loading */
} cli_cp_row;

typedef struct cli_cp_node {
    uint32_t row;
    int64_t ts;
    uint8_t is_start, blocking;
} cli_cp_node;

typedef struct cli_cp_edge {
    uint32_t u, v; /* nodes */
    int type;
    int64_t weight; /* as HTA's CPEdge.weight (may be negative) */
    uint32_t attr;  /* the row the edge is attributed to, CLI_CP_NONE */
} cli_cp_edge;

typedef struct cli_cp_opts {
    const char *annotation; /* "" for the whole rank */
    long inst_lo, inst_hi;
    int zero_weight_launch; /* HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1 */
    int64_t t0;             /* HTA's time 0 (_align_all_ranks: the earliest row of all ranks), us */
    /* data_load_events (see the top): the patterns as text, and compiled (REG_EXTENDED |
     * REG_NOSUB) for bound_by; ndata_load 0: none. Owned by the caller. */
    const char *const *data_load;
    const regex_t *data_load_re;
    size_t ndata_load;
} cli_cp_opts;

typedef struct cli_cp_graph {
    const cli_hta_rank *r;
    cli_cp_row *rows; /* the rank's rows, by idx */
    size_t nrows;
    cli_cp_node *nodes;
    size_t nnodes;
    uint32_t *start_of, *end_of; /* per row: its nodes, CLI_CP_NONE */
    cli_cp_edge *edges;          /* in the order they were added */
    size_t nedges, edge_cap;
    uint64_t *slots; /* (u, v) -> edge + 1, open addressing */
    size_t slot_cap;
    uint32_t *path; /* nodes of the critical path */
    size_t npath;
    uint32_t *path_edges; /* its npath - 1 edges */
    int64_t length;       /* the path's length (negative weights as 0), us */
    int64_t win_lo, win_hi;
    const cli_cp_opts *o; /* the options, while cli_cp_analyze runs */
    size_t graph_nodes;   /* nodes with an edge (networkx's graph) */
    size_t clipped;       /* clipped rows */
    char err[512];        /* why the analysis failed (CLI_HTA_REPORTED) */
} cli_cp_graph;

/* Builds the graph of rank r and finds its critical path. @return 0, STROBE_ENOMEM, or
 * CLI_HTA_REPORTED with g->err set (no annotation, no instance, an invalid graph). cli_cp_free() in
 * every case. */
int cli_cp_analyze(cli_cp_graph *g, const cli_hta_rank *r, const cli_cp_opts *o);
void cli_cp_free(cli_cp_graph *g);

/* HTA's bound_by of path edge e: "cpu_bound", "data_loading" (see data_load_events above),
 * "gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_kernel_overhead",
 * "gpu_kernel_launch_overhead" or "" (dependencies). */
const char *cli_cp_bound_by(const cli_cp_graph *g, const cli_cp_edge *e);

/* The row of file index idx, or CLI_CP_NONE. */
uint32_t cli_cp_row_of(const cli_cp_graph *g, int64_t idx);

#endif
