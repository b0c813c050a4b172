/* series.h: HTA's time series of a rank (TraceCounters in hta/analyzers/trace_counters.py), for
 * `strobe queue --series`, `strobe memory-bw` and `strobe overlay`. The definitions are HTA's; the
 * code is ours. Times are HTA's (hta.h: whole microseconds of the trace, rounded as HTA rounds).
 *
 * Queue length (_get_queue_length_time_series_for_rank):
 *   - the launches: rows cli_hta_is_launch() names whose correlation had a GPUKernelFilter row
 *     before the restriction (HTA's index_correlation > 0); each is joined with the rank's
 *     kernels (its rows with a stream, each copy the restriction made) of its correlation, and
 *     counts +1 on each one's stream at the launch's ts, with that kernel's pid and tid (a launch
 *     joined with none counts nowhere);
 *   - a kernel counts -1 on its stream at its ts only when some launch has its correlation (HTA's
 *     semi-join): a kernel whose launch is missing counts nowhere, so that no queue length is ever
 *     below 0. Those kernels are counted (cli_hta_queue.unlaunched);
 *   - per stream, increasing, in ts order (launches before kernels at one ts, each in HTA's row
 *     order: a stable sort of HTA's concatenation; pandas' default sort is not stable, so HTA's
 *     own order of equal times is not defined), the running sum after each point.
 *
 * Memory bandwidth (_get_memory_bw_time_series_for_rank):
 *   - the rank's rows with a stream whose kernel type (cli_hta_kernel_type) is MEMORY; each one's
 *     kind is HTA's get_memory_kernel_type of its name: "Memset" for a name starting so, "Memcpy
 *     Unknown" for one not starting with "Memcpy", else its first 11 characters ("Memcpy HtoD");
 *   - its value is its "memory bandwidth (GB/s)" arg (0 when absent, HTA's default); it adds the
 *     value at its ts and takes it off at ts + dur (a dur of 0 counts as 1 us, as HTA rounds it);
 *   - per kind, in name order, in ts order (starts before ends at one ts, each in row order), the
 *     running sum; a sum below 0 (rounding) is shown as 0 (the sum itself goes on unchanged). */
#ifndef STROBE_CLI_SERIES_H
#define STROBE_CLI_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "hta.h"

/* A point of a stream's queue length. */
typedef struct cli_hta_qpoint {
    int64_t ts, pid, tid, stream;
    int64_t len;  /* the queue length from ts on */
    uint64_t seq; /* place in HTA's concatenation, for the sort */
} cli_hta_qpoint;

typedef struct cli_hta_queue {
    cli_hta_qpoint *p; /* sorted by stream, then time */
    size_t n;
    uint64_t unlaunched; /* kernels (rows with a stream, copies counted) whose launch is missing */
} cli_hta_queue;

/* Rank r's queue length series (s: its set, for the restriction). @return 0 or STROBE_ENOMEM;
 * cli_hta_queue_free() in every case. */
int cli_hta_queue_series(const cli_hta_set *s, const cli_hta_rank *r, cli_hta_queue *q);
void cli_hta_queue_free(cli_hta_queue *q);

/* The "memory bandwidth (GB/s)" args of a trace: (file index, value), sorted by index. */
typedef struct cli_hta_bw_arg {
    uint64_t index;
    double gbps;
} cli_hta_bw_arg;

/* Reads them from the file at `path` (the rank's trace, read a second time: the model keeps no
 * such arg). @return 0, STROBE_ENOMEM, or another negative STROBE_E* with a message on stderr
 * ("strobe CMD: PATH: ..."). */
int cli_hta_bw_args(const char *cmd, const char *path, cli_hta_bw_arg **out, size_t *n);

#define CLI_HTA_BW_KIND_MAX 16 /* "Memcpy Unknown" and its NUL */

/* A point of a kind's memory bandwidth. */
typedef struct cli_hta_bwpoint {
    int64_t ts, pid;
    size_t kind;  /* index into cli_hta_bw.kinds */
    double gbps;  /* the bandwidth from ts on: the running sum, 0 where it is below 0 */
    uint64_t seq; /* for the sort */
} cli_hta_bwpoint;

typedef struct cli_hta_bw {
    cli_hta_bwpoint *p; /* sorted by kind (kinds in name order), then time */
    size_t n;
    char (*kinds)[CLI_HTA_BW_KIND_MAX];
    size_t nkinds;
} cli_hta_bw;

/* Rank r's memory bandwidth series, from the args a[0..na) (cli_hta_bw_args of its file). @return 0
 * or STROBE_ENOMEM; cli_hta_bw_free() in every case. */
int cli_hta_bw_series(const cli_hta_set *s, const cli_hta_rank *r, const cli_hta_bw_arg *a,
                      size_t na, cli_hta_bw *b);
void cli_hta_bw_free(cli_hta_bw *b);

/* pandas' describe() of v[0..n) (n > 0; sorted here): count, mean, std (n - 1; NaN for one value),
 * min, 25%, 50%, 75% (linear), max, in that order into out[8]. */
void cli_hta_describe(double *v, size_t n, double out[8]);

#endif
