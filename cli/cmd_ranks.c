/* cmd_ranks.c: `strobe ranks`, the profiler steps of each rank as HTA lists them
 * (extract_iteration_info in hta/analyzers/straggler.py), and HTA's potential stragglers
 * (get_potential_stragglers in hta/analyzers/straggler_analysis.py, with its default
 * find_stragglers_with_late_start_comm_kernels).
 *
 * HTA's definitions, over a rank's rows after the restriction (see hta.h), so that the last step
 * is left out when the traces name two or more:
 *   - steps: the rows whose name starts with "ProfilerStep", in row order; iter, the N of
 *     "ProfilerStep #N" (spaces allowed around '#'), -1 when none; ts as HTA aligns it (less the
 *     earliest row of all ranks, before the restriction), dur, and end = ts + dur.
 *   - profiler steps (get_profiler_steps): the distinct iters of that table but -1, sorted; the
 *     selection (profiler_steps, --steps) keeps those of the given ones; none is an error.
 *   - the rows of all ranks whose iteration (cli_hta_iteration, HTA's add_iteration) is selected:
 *     t_min, their smallest ts; mean_iter_time = (their largest ts + dur - t_min) / the number of
 *     distinct iterations among them; min_duration = mean_iter_time * 0.01.
 *   - long communication kernels: those rows with stream > 0, iteration > 0, dur >= min_duration
 *     and a name starting with "ncclKernel"; of each (rank, stream, iteration, name) the last
 *     (HTA's groupby().last(); here the latest by ts, the rows being in time order), with
 *     normalized_start_time = (ts - t_min) / mean_iter_time and duration = dur / mean_iter_time.
 *   - the metric kernel: the (stream, name) whose mean over iterations of the sample standard
 *     deviation (ddof 1) of duration across ranks is largest (idxmax: NaNs skipped, the first of
 *     equal ones in (stream, name) order; HTA orders names by symbol id, here by the name).
 *   - per iteration of its rows (one per rank), a rank is a straggler when its
 *     normalized_start_time is at least the num_candidates-th largest (-k, default 2; at least 1).
 *     is_straggler: with one iteration 1 or 0, with more the number of iterations it is one in.
 *   - the result: the ranks by is_straggler, largest first (equal ones in rank order, as pandas'
 *     sort_values keeps them), the first num_candidates; ranks with 0 can be among them.
 * Where HTA raises an error (no profiler step, no long communication kernel, no kernel that two
 * ranks share, an iteration with fewer ranks than candidates), no rank is listed and standard
 * error says why.
 *
 * --collectives (collectives() below) matches each collective across ranks instead, from the
 * args torch's record_param_comms, strobe record --mpi and the NCCL plugin give its CPU-side
 * event (md_comm): its process group, and its sequence number in that group ("Seq", or where the
 * recorder gives none, its place among the rank's collectives of that group in time order: MPI
 * and NCCL need every rank of a group to call its collectives in one order). The last rank to
 * arrive (latest start) made the others wait; HTA's potential stragglers are printed beside.
 * Arrivals are on rank 0's clock where strobe record measured the rank's ("strobe_clock_sync",
 * applied as strobe merge applies it); HTA's stragglers take the times as they are, as HTA does. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "merge.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

const char cmd_ranks_usage[] =
    "NAME\n"
    "    strobe ranks - each rank's profiler steps and step times, and HTA's potential\n"
    "    stragglers\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe ranks [OPTIONS] TRACE...\n"
    "    strobe ranks [-k K] [--steps N,...] [-f table|csv|json] [-j N] [-q] TRACE...\n"
    "    strobe ranks --collectives [-k K] [--steps N,...] [-f F] [-j N] [-q] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's iteration table (extract_iteration_info) and straggler\n"
    "    detection (get_potential_stragglers), with its definitions. TRACE is a trace, or a\n"
    "    folder of rank traces, read as strobe breakdown reads them (ranks, HTA's times in\n"
    "    microseconds, its profiler-step restriction, which leaves out the last step).\n"
    "    Under mpirun (or srun) the processes share the files and rank 0 writes the output.\n"
    "\n"
    "    Steps: one row per ProfilerStep event: rank, iter (its number), ts (from the earliest\n"
    "    event of all ranks), dur (the step time) and end.\n"
    "\n"
    "    Potential stragglers: over the selected profiler steps (all by default), the\n"
    "    communication kernels (ncclKernel...) of at least 1% of the mean step time; of them,\n"
    "    per rank, stream, step and name the last; of those, the stream and name whose\n"
    "    duration varies most across ranks (mean over steps of the standard deviation). In\n"
    "    each step, a rank whose kernel starts no earlier than the K-th latest is a straggler;\n"
    "    the ranks are listed by how many steps they were one in (is_straggler), most first,\n"
    "    the first K (ties in rank order, as HTA lists them; 0 can be among them). Where HTA\n"
    "    raises an error (no profiler step, no such kernel, none that two ranks share, a step\n"
    "    with fewer ranks than K) no rank is listed and standard error says why.\n"
    "\n"
    "    Stragglers per collective (--collectives): each collective (an event whose args have\n"
    "    \"Collective name\", as torch's record_param_comms, strobe record --mpi and the NCCL\n"
    "    plugin write them; sends, receives and the NCCL plugin's :task events left out) is\n"
    "    matched across ranks by its process group (\"Process Group Name\", \"pg\", \"Process\n"
    "    Group ID\" or \"Process Group Ranks\") and sequence number (\"Seq\"; without it, its\n"
    "    place among the rank's collectives of that group in time order). A collective on two\n"
    "    ranks or more is a row: pg, seq, collective, ranks, last_rank (the rank that started\n"
    "    it last; the lowest of equal ones), last_start (from the earliest event of all ranks),\n"
    "    wait_sum and wait_max (the sum and largest of last_start minus each rank's start: the\n"
    "    wait it caused), in microseconds. Per rank: collectives, last (how often it was\n"
    "    last), caused_wait and max_caused_wait (the waits of the collectives it was last in),\n"
    "    and waited (its own waits for the last rank). Where strobe record measured a rank's\n"
    "    clock against rank 0's (strobe_clock_sync), its times are put on rank 0's clock first,\n"
    "    as strobe merge does. HTA's potential stragglers follow.\n"
    "\n"
    "OPTIONS\n"
    "    -k, --candidates K  how many stragglers to list (HTA's num_candidates; default 2)\n"
    "    --steps N,...  the profiler steps to look at (HTA's profiler_steps; default all);\n"
    "                   naming none of the trace's is an error\n"
    "    -f, --format F table (default), csv (the two tables, a blank line between) or json:\n"
    "                   {\"steps\": [rows keyed by rank, iter, ts, dur, end],\n"
    "                   \"stragglers\": [rows keyed by rank, is_straggler]}; with --collectives\n"
    "                   {\"collectives\": [...], \"by_rank\": [...], \"stragglers\": [...]}\n"
    "    --collectives  stragglers per collective instead of the steps (see above)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit, --steps\n"
    "    names no profiler step) or usage.\n";

const struct option cmd_ranks_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"candidates", required_argument, NULL, 'k'},
    {"steps", required_argument, NULL, 'S'},
    {"collectives", no_argument, NULL, CLI_LONG_ONLY + 1},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* A long communication kernel. */
typedef struct kern {
    int64_t rank, stream, iter, ts, dur;
    const char *name;
    size_t seq; /* its place in the rank's rows */
    double nst; /* normalized_start_time */
} kern;

static int by_group(const void *a, const void *b) { /* rank, stream, iteration, name, seq */
    const kern *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_metric(const void *a, const void *b) { /* stream, name, iteration, rank */
    const kern *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_double_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

typedef struct count {
    int64_t rank, n;
} count;

static int by_count(const void *a, const void *b) { /* n descending, then rank */
    const count *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* ---- what one rank gives (reduce) ------------------------------------------------------------
 * Both analyses need of a rank only: its ProfilerStep rows; per iteration, the earliest start and
 * the latest end of its rows; its long-kernel candidates (ncclKernel rows on a stream, in an
 * iteration above 0); its collectives' arrivals (on rank 0's clock, numbered in their group); and
 * its first event on rank 0's clock. rank_reduce writes them into one flat buffer (rr_head, then
 * each array, then the strings, NUL-terminated, that the arrays name by offset), so that a folder
 * of ranks is reduced rank by rank as it is read, and under MPI the buffers travel to rank 0.
 * The analysis reads the same buffers whether the ranks were reduced as read (run_reduced) or
 * after loading them whole (run, the report's): one code path. */
typedef struct rr_head {
    int64_t first, has_first; /* the rank's first event on rank 0's clock */
    uint64_t nsteps, next, nkern, narr, nstr;
} rr_head;
typedef struct rr_step {
    int64_t iter, ts, end; /* iter: the step's number, -1 when none */
} rr_step;
typedef struct rr_ext {
    int64_t iter, ts, end; /* the iteration's rows: the smallest ts, the largest end */
} rr_ext;
typedef struct rr_kern {
    int64_t stream, iter, ts, dur;
    uint64_t seq, name; /* the row's place in the rank's rows; the name's offset */
} rr_kern;
typedef struct rr_arr {
    int64_t seq, ts;
    uint64_t pg, coll; /* offsets */
    uint32_t ev;
    int32_t seq_given;
} rr_arr;

/* A rank's buffer read back (pointers into it). */
typedef struct rr_view {
    const rr_head *h;
    const rr_step *steps;
    const rr_ext *ext;
    const rr_kern *kern;
    const rr_arr *arr;
    const char *str;
    int64_t rank;
} rr_view;

/* One rank's arrival at a collective: its CPU-side event. */
typedef struct arrival {
    const char *pg, *coll;
    int64_t seq;  /* "Seq", or (seq_given 0) the place among the rank's calls of the group */
    int64_t rank; /* distributedInfo.rank */
    size_t at;    /* index of the rank in the set */
    int64_t ts;   /* ns */
    uint32_t ev;
    int seq_given;
} arrival;

static int by_rank_pg_time(const void *a, const void *b) { /* rank, pg, ts, event */
    const arrival *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    int c = strcmp(x->pg, y->pg);
    if (c) return c;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int by_pg_seq_rank(const void *a, const void *b) { /* pg, seq, rank, ts, event */
    const arrival *x = a, *y = b;
    int c = strcmp(x->pg, y->pg);
    if (c) return c;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

/* A call that is not a collective of its whole group: point-to-point operations. */
static int is_p2p(const char *coll) {
    static const char *const p2p[] = {"send", "recv", "sendrecv", "isend", "irecv"};
    for (size_t k = 0; k < sizeof p2p / sizeof *p2p; k++)
        if (strcmp(coll, p2p[k]) == 0) return 1;
    return 0;
}

/* The rank's clock against rank 0's, as strobe record measured it ("strobe_clock_sync") and
 * strobe merge applies it (cmd_merge.c's rules: no drift without t_ref_ns, nor one of 10% or
 * more); none (times as they are) without it. */
static void rank_clock(const md_model *m, cli_merge_input *in) {
    memset(in, 0, sizeof *in);
    if (m->clock_sync == 0) return;
    const char *j = md_str(m, m->clock_sync);
    size_t len = strlen(j);
    strobe_rd_value v;
    in->has_clock = strobe_rd_obj_get(j, len, "offset_ns", &v) == 1 &&
                    strobe_rd_value_int(&v, &in->offset_ns) == 0;
    if (strobe_rd_obj_get(j, len, "t_ref_ns", &v) != 1 || strobe_rd_value_int(&v, &in->t_ref_ns))
        in->t_ref_ns = 0;
    if (strobe_rd_obj_get(j, len, "drift_ppb", &v) != 1 ||
        strobe_rd_value_double(&v, &in->drift_ppb) != 0 || in->t_ref_ns == 0 ||
        !(in->drift_ppb > -1e8 && in->drift_ppb < 1e8))
        in->drift_ppb = 0;
}

/* The rank's collectives into v (room for its comm_count), with their sequence numbers and on
 * rank 0's clock, sorted by group and time. @return their number. */
static size_t rank_arrivals(const cli_hta_rank *rk, arrival *v) {
    const md_model *m = &rk->m;
    cli_merge_input clock;
    rank_clock(m, &clock);
    size_t k = 0;
    for (size_t i = 0; i < m->comm_count; i++) {
        const md_comm *c = &m->comms[i];
        const char *name = md_str(m, md_name_of(m, c->ev)), *coll = md_str(m, c->coll);
        size_t len = strlen(name);
        /* The NCCL plugin's v5 task events repeat their API call's; device events (torch's
         * NCCL kernels can carry the args too) do not say when the rank arrived. */
        if (!(m->ev_flags[c->ev] & MD_F_TIME) || md_is_device_work(md_kind_of(m, c->ev)) ||
            (len >= 5 && strcmp(name + len - 5, ":task") == 0) || is_p2p(coll))
            continue;
        arrival *x = &v[k++];
        *x = (arrival){.pg = md_str(m, c->pg), .coll = coll, .seq = c->seq};
        x->rank = rk->rank;
        x->ts = cli_merge_align(&clock, md_ts(m, c->ev));
        x->ev = c->ev;
        x->seq_given = c->seq >= 0;
    }
    /* Sequence numbers where the recorder gave none: the place in time order in the group. */
    qsort(v, k, sizeof *v, by_rank_pg_time);
    int64_t next = 0;
    for (size_t i = 0; i < k; i++) {
        if (i == 0 || strcmp(v[i].pg, v[i - 1].pg) != 0) next = 0;
        if (!v[i].seq_given) v[i].seq = next++;
    }
    return k;
}

/* Widens iteration it's extent in (*v)[0..*n), sorted by iteration, by [ts, end], adding the
 * iteration when it is new (at the end, where a profiler's steps come in order). *last is the
 * extent found the time before: a rank's rows come an iteration at a time. @return 0 or
 * STROBE_ENOMEM. */
static int ext_add(rr_ext **v, size_t *n, size_t *cap, size_t *last, int64_t it, int64_t ts,
                   int64_t end) {
    size_t at = *last;
    if (at >= *n || (*v)[at].iter != it) {
        size_t lo = 0, hi = *n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((*v)[mid].iter < it)
                lo = mid + 1;
            else
                hi = mid;
        }
        at = lo;
    }
    if (at == *n || (*v)[at].iter != it) {
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 16;
            rr_ext *g = realloc(*v, c * sizeof *g);
            if (g == NULL) return STROBE_ENOMEM;
            *v = g;
            *cap = c;
        }
        memmove(*v + at + 1, *v + at, (*n - at) * sizeof **v);
        (*v)[at] = (rr_ext){it, ts, end};
        (*n)++;
    }
    rr_ext *x = &(*v)[at];
    if (ts < x->ts) x->ts = ts;
    if (end > x->end) x->end = end;
    *last = at;
    return 0;
}

/* Appends s with its NUL to the strings at *at; @return its offset. */
static uint64_t put_str(char *str, size_t *at, const char *s) {
    size_t n = strlen(s) + 1, off = *at;
    memcpy(str + off, s, n);
    *at += n;
    return off;
}

/* cli_hta_command.reduce: rank rk's part (see above). */
static int rank_reduce(const cli_hta_rank *rk, uint8_t **out, size_t *len) {
    const md_model *m = &rk->m;
    cli_hta_iters its;
    size_t nsteps = 0, next = 0, cap_ext = 0, last_ext = 0, nkern = 0, narr = 0, nstr = 0;
    /* The arrays counted first, each of its size: a rank has millions of rows, few of them
     * steps or NCCL kernels. */
    size_t max_steps = 0, max_kern = 0;
    cli_hta_row cw;
    for (size_t i = 0; cli_hta_cpu_next(rk, &i, &cw); i++)
        max_steps += strncmp(md_str(m, md_name_of(m, cw.ev)), "ProfilerStep", 12) == 0;
    for (size_t i = 0; i < rk->count; i++)
        max_kern += strncmp(md_str(m, md_name_of(m, rk->rows[i].ev)), "ncclKernel", 10) == 0;
    rr_step *steps = malloc((max_steps ? max_steps : 1) * sizeof *steps);
    rr_ext *ext = NULL;
    rr_kern *kr = malloc((max_kern ? max_kern : 1) * sizeof *kr);
    const char **kname = malloc((max_kern ? max_kern : 1) * sizeof *kname);
    arrival *arr = malloc((m->comm_count ? m->comm_count : 1) * sizeof *arr);
    uint8_t *b = NULL;
    int rc = cli_hta_iters_init(&its, rk);
    if (steps == NULL || kr == NULL || kname == NULL || arr == NULL) rc = STROBE_ENOMEM;
    for (size_t i = 0; rc == 0 && cli_hta_cpu_next(rk, &i, &cw); i++) {
        const char *name = md_str(m, md_name_of(m, cw.ev));
        if (strncmp(name, "ProfilerStep", 12) == 0)
            steps[nsteps++] = (rr_step){cli_hta_step_number(name), cw.ts, cw.end};
    }
    /* The iterations' extents: every row's (GPU rows, then CPU rows), merged per iteration. */
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        for (size_t i = 0, j = 0; rc == 0 && (pass ? cli_hta_cpu_next(rk, &j, &cw) : i < rk->count);
             i++, j++) {
            const cli_hta_row *w = pass ? &cw : &rk->rows[i];
            int64_t it = cli_hta_iteration(&its, w->ev);
            if (it != CLI_HTA_NO_ITER)
                rc = ext_add(&ext, &next, &cap_ext, &last_ext, it, w->ts, w->end);
        }
    }
    for (size_t i = 0; rc == 0 && i < rk->count; i++) {
        const cli_hta_row *w = &rk->rows[i];
        const md_event e = md_at(m, w->ev);
        int64_t it = cli_hta_iteration(&its, w->ev);
        const char *name = md_str(m, e.name);
        if (e.stream <= 0 || it == CLI_HTA_NO_ITER || it <= 0 ||
            strncmp(name, "ncclKernel", 10) != 0)
            continue;
        kname[nkern] = name;
        kr[nkern++] = (rr_kern){e.stream, it, w->ts, w->end - w->ts, i, 0};
        nstr += strlen(name) + 1;
    }
    if (rc == 0) narr = rank_arrivals(rk, arr);
    for (size_t i = 0; i < narr; i++)
        nstr += strlen(arr[i].pg) + strlen(arr[i].coll) + 2;
    rr_head h = {0, 0, nsteps, next, nkern, narr, nstr};
    cli_merge_input clock;
    if (rc == 0) rank_clock(m, &clock);
    if (rc == 0 && m->min_ts <= m->max_ts) {
        h.first = cli_merge_align(&clock, m->min_ts);
        h.has_first = 1;
    }
    size_t total = sizeof h + nsteps * sizeof *steps + next * sizeof *ext + nkern * sizeof *kr +
                   narr * sizeof(rr_arr) + nstr;
    if (rc == 0 && (b = malloc(total ? total : 1)) == NULL) rc = STROBE_ENOMEM;
    if (rc == 0) {
        size_t at = 0, sat = 0;
        char *str = (char *)b + total - nstr;
        memcpy(b, &h, sizeof h);
        at += sizeof h;
        memcpy(b + at, steps, nsteps * sizeof *steps);
        at += nsteps * sizeof *steps;
        if (next) memcpy(b + at, ext, next * sizeof *ext); /* ext is NULL without iterations */
        at += next * sizeof *ext;
        for (size_t i = 0; i < nkern; i++)
            kr[i].name = put_str(str, &sat, kname[i]);
        memcpy(b + at, kr, nkern * sizeof *kr);
        at += nkern * sizeof *kr;
        for (size_t i = 0; i < narr; i++) {
            rr_arr x = {arr[i].seq, arr[i].ts, 0, 0, arr[i].ev, arr[i].seq_given};
            x.pg = put_str(str, &sat, arr[i].pg);
            x.coll = put_str(str, &sat, arr[i].coll);
            memcpy(b + at, &x, sizeof x);
            at += sizeof x;
        }
        *out = b;
        *len = total;
    }
    cli_hta_iters_free(&its);
    free(steps);
    free(ext);
    free(kr);
    free(kname);
    free(arr);
    return rc;
}

/* Rank buffer b[0..len) as a view. @return 0, or STROBE_EINVAL when rank_reduce did not write
 * it (a buffer from another process is checked before it is read). */
static int rr_read(const uint8_t *b, size_t len, int64_t rank, rr_view *v) {
    rr_head h;
    if (b == NULL || len < sizeof h) return STROBE_EINVAL;
    memcpy(&h, b, sizeof h);
    const uint64_t lim = (uint64_t)len;
    if (h.nsteps > lim || h.next > lim || h.nkern > lim || h.narr > lim || h.nstr > lim ||
        sizeof h + h.nsteps * sizeof(rr_step) + h.next * sizeof(rr_ext) +
                h.nkern * sizeof(rr_kern) + h.narr * sizeof(rr_arr) + h.nstr !=
            lim)
        return STROBE_EINVAL;
    v->h = (const rr_head *)(const void *)b;
    v->steps = (const rr_step *)(const void *)(b + sizeof h);
    v->ext = (const rr_ext *)(const void *)(v->steps + h.nsteps);
    v->kern = (const rr_kern *)(const void *)(v->ext + h.next);
    v->arr = (const rr_arr *)(const void *)(v->kern + h.nkern);
    v->str = (const char *)(v->arr + h.narr);
    v->rank = rank;
    if (h.nstr && v->str[h.nstr - 1] != '\0') return STROBE_EINVAL;
    for (size_t i = 0; i < h.nkern; i++)
        if (v->kern[i].name >= h.nstr) return STROBE_EINVAL;
    for (size_t i = 0; i < h.narr; i++)
        if (v->arr[i].pg >= h.nstr || v->arr[i].coll >= h.nstr) return STROBE_EINVAL;
    return 0;
}

/* ---- the analyses, over the ranks' views --------------------------------------------------- */

/* The available profiler steps (sorted, distinct, without -1) into *out. */
static int profiler_steps(const rr_view *rv, size_t nr, int64_t **out, size_t *n) {
    size_t total = 0, k = 0;
    for (size_t r = 0; r < nr; r++)
        total += rv[r].h->nsteps;
    int64_t *v = malloc((total ? total : 1) * sizeof *v);
    if (v == NULL) return STROBE_ENOMEM;
    for (size_t r = 0; r < nr; r++)
        for (size_t i = 0; i < rv[r].h->nsteps; i++)
            if (rv[r].steps[i].iter != -1) v[k++] = rv[r].steps[i].iter;
    cli_hta_sort_i64(v, k);
    size_t d = 0;
    for (size_t i = 0; i < k; i++)
        if (d == 0 || v[d - 1] != v[i]) v[d++] = v[i];
    *out = v;
    *n = d;
    return 0;
}

typedef struct strag_args {
    int64_t *want; /* --steps, or NULL (owned) */
    size_t nwant;
    long k; /* num_candidates */
} strag_args;

/* HTA's potential stragglers into t (rank, is_straggler). @return 0, STROBE_ENOMEM, or
 * CLI_HTA_REPORTED after a message (--steps names no profiler step). *why is set when HTA would
 * raise an error. */
static int stragglers(const rr_view *rv, size_t nr, const strag_args *a, cli_hta_table *t,
                      const char **why) {
    int64_t *avail = NULL, *sel = NULL;
    size_t navail = 0, nsel = 0, nk = 0, nlast = 0;
    kern *ks = NULL;
    uint8_t *seen = NULL;
    count *counts = NULL;
    double *vals = NULL;
    int rc = profiler_steps(rv, nr, &avail, &navail);
    if (rc) goto done;
    long k = a->k < 1 ? 1 : a->k;
    sel = malloc((a->want ? a->nwant : navail) * sizeof *sel + 1);
    if (sel == NULL) {
        rc = STROBE_ENOMEM;
        goto done;
    }
    if (a->want) {
        for (size_t i = 0; i < a->nwant; i++)
            if (cli_hta_find_i64(avail, navail, a->want[i]) >= 0) sel[nsel++] = a->want[i];
        cli_hta_sort_i64(sel, nsel);
        size_t d = 0;
        for (size_t i = 0; i < nsel; i++)
            if (d == 0 || sel[d - 1] != sel[i]) sel[d++] = sel[i];
        nsel = d;
        if (nsel == 0) {
            fprintf(stderr, "strobe ranks: --steps names none of the profiler steps (");
            for (size_t i = 0; i < navail; i++)
                fprintf(stderr, "%s%" PRId64, i ? ", " : "", avail[i]);
            fprintf(stderr, "%s)\n", navail ? "" : "none");
            rc = CLI_HTA_REPORTED;
            goto done;
        }
    } else {
        memcpy(sel, avail, navail * sizeof *sel);
        nsel = navail;
    }
    if (nsel == 0) {
        *why = "the traces have no profiler step (ProfilerStep#N) before their last";
        goto done;
    }
    /* The selected rows: t_min, their last end, their iterations. */
    seen = calloc(nsel, 1);
    if (seen == NULL) {
        rc = STROBE_ENOMEM;
        goto done;
    }
    int64_t t_min = INT64_MAX, t_max = INT64_MIN;
    size_t nkrows = 0;
    for (size_t r = 0; r < nr; r++) {
        for (size_t i = 0; i < rv[r].h->next; i++) {
            const rr_ext *x = &rv[r].ext[i];
            long at = cli_hta_find_i64(sel, nsel, x->iter);
            if (at < 0) continue;
            seen[at] = 1;
            if (x->ts < t_min) t_min = x->ts;
            if (x->end > t_max) t_max = x->end;
        }
        nkrows += rv[r].h->nkern;
    }
    size_t niters = 0;
    for (size_t i = 0; i < nsel; i++)
        niters += seen[i];
    if (niters == 0) {
        *why = "no row is in the selected profiler steps";
        goto done;
    }
    double mean_iter = (double)(t_max - t_min) / (double)niters, min_dur = mean_iter * 0.01;
    ks = malloc((nkrows ? nkrows : 1) * sizeof *ks);
    if (ks == NULL) {
        rc = STROBE_ENOMEM;
        goto done;
    }
    for (size_t r = 0; r < nr; r++) {
        for (size_t i = 0; i < rv[r].h->nkern; i++) {
            const rr_kern *x = &rv[r].kern[i];
            if (cli_hta_find_i64(sel, nsel, x->iter) < 0 || !((double)x->dur >= min_dur)) continue;
            ks[nk++] = (kern){rv[r].rank, x->stream,           x->iter, x->ts,
                              x->dur,     rv[r].str + x->name, x->seq,  0};
        }
    }
    if (nk == 0) {
        *why = "no communication kernel (ncclKernel) of at least 1% of the mean iteration time";
        goto done;
    }
    /* The last of each (rank, stream, iteration, name). */
    qsort(ks, nk, sizeof *ks, by_group);
    for (size_t i = 0; i < nk; i++) {
        if (i + 1 < nk && ks[i].rank == ks[i + 1].rank && ks[i].stream == ks[i + 1].stream &&
            ks[i].iter == ks[i + 1].iter && strcmp(ks[i].name, ks[i + 1].name) == 0)
            continue;
        ks[nlast] = ks[i];
        ks[nlast].nst = (double)(ks[i].ts - t_min) / mean_iter;
        nlast++;
    }
    /* The (stream, name) of the largest mean standard deviation of duration across ranks. */
    qsort(ks, nlast, sizeof *ks, by_metric);
    size_t best = SIZE_MAX, best_end = 0;
    double best_v = 0;
    for (size_t i = 0; i < nlast;) {
        size_t j = i;
        double sum = 0;
        size_t nstd = 0;
        while (j < nlast && ks[j].stream == ks[i].stream && strcmp(ks[j].name, ks[i].name) == 0) {
            size_t g = j;
            double m = 0, ss = 0;
            while (g < nlast && ks[g].stream == ks[j].stream && ks[g].iter == ks[j].iter &&
                   strcmp(ks[g].name, ks[j].name) == 0)
                m += (double)ks[g++].dur / mean_iter;
            if (g - j >= 2) {
                m /= (double)(g - j);
                for (size_t q = j; q < g; q++) {
                    double d = (double)ks[q].dur / mean_iter - m;
                    ss += d * d;
                }
                sum += sqrt(ss / (double)(g - j - 1));
                nstd++;
            }
            j = g;
        }
        if (nstd) {
            double v = sum / (double)nstd;
            if (best == SIZE_MAX || v > best_v) {
                best = i;
                best_end = j;
                best_v = v;
            }
        }
        i = j;
    }
    if (best == SIZE_MAX) {
        *why = "no long communication kernel runs on two ranks or more in one profiler step";
        goto done;
    }
    /* Per iteration, the ranks whose kernel starts no earlier than the k-th latest. */
    vals = malloc((best_end - best) * sizeof *vals);
    counts = malloc((best_end - best) * sizeof *counts);
    if (vals == NULL || counts == NULL) {
        rc = STROBE_ENOMEM;
        goto done;
    }
    size_t ncounts = 0;
    for (size_t i = best; i < best_end; i++) {
        size_t c = 0;
        while (c < ncounts && counts[c].rank != ks[i].rank)
            c++;
        if (c == ncounts) counts[ncounts++] = (count){ks[i].rank, 0};
    }
    for (size_t i = best; i < best_end;) {
        size_t j = i, n = 0;
        while (j < best_end && ks[j].iter == ks[i].iter)
            vals[n++] = ks[j++].nst;
        if (n < (size_t)k) {
            *why = "a profiler step has fewer ranks with the metric kernel than candidates";
            goto done;
        }
        qsort(vals, n, sizeof *vals, by_double_desc);
        double threshold = vals[k - 1];
        for (size_t q = i; q < j; q++) {
            if (!(ks[q].nst >= threshold)) continue;
            for (size_t c = 0; c < ncounts; c++)
                if (counts[c].rank == ks[q].rank) counts[c].n++;
        }
        i = j;
    }
    qsort(counts, ncounts, sizeof *counts, by_count);
    for (size_t c = 0; rc == 0 && c < ncounts && c < (size_t)k; c++) {
        rc = CLI_HTA_ROW(t, CLI_HTA_INT(counts[c].rank), CLI_HTA_INT(counts[c].n));
    }
done:
    free(avail);
    free(sel);
    free(seen);
    free(ks);
    free(vals);
    free(counts);
    return rc;
}

/* The ranks' views: of their buffers (reduced), or of buffers made here from their models (the
 * report's whole ranks: bufs, freed by the caller). @return 0, STROBE_ENOMEM or STROBE_EINVAL. */
static int views(const cli_hta_set *s, int reduced, rr_view *v, uint8_t **bufs) {
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        size_t len = r->red_len;
        if (!reduced) rc = rank_reduce(r, &bufs[k], &len);
        if (rc == 0) rc = rr_read(reduced ? r->red : bufs[k], len, r->rank, &v[k]);
    }
    return rc;
}

/* The steps and HTA's stragglers. */
static int steps(const cli_hta_set *s, const rr_view *v, const strag_args *a, cli_hta_table *t) {
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        for (size_t i = 0; rc == 0 && i < v[k].h->nsteps; i++) {
            const rr_step *w = &v[k].steps[i];
            rc = CLI_HTA_ROW(&t[0], CLI_HTA_INT(v[k].rank), CLI_HTA_INT(w->iter),
                             CLI_HTA_INT(w->ts - s->min_ts), CLI_HTA_INT(w->end - w->ts),
                             CLI_HTA_INT(w->end - s->min_ts));
        }
    const char *why = NULL;
    if (rc == 0) rc = stragglers(v, s->count, a, &t[1], &why);
    if (rc == 0 && why) fprintf(stderr, "strobe ranks: no potential stragglers: %s\n", why);
    return rc;
}

/* ---- stragglers per collective (--collectives) ----------------------------------------------- */

/* The collectives of every rank into *out (malloc'd), sorted by group, sequence and rank. */
static int arrivals(const rr_view *rv, size_t nr, arrival **out, size_t *n) {
    size_t total = 0, k = 0;
    for (size_t r = 0; r < nr; r++)
        total += rv[r].h->narr;
    arrival *v = malloc((total ? total : 1) * sizeof *v);
    if (v == NULL) return STROBE_ENOMEM;
    for (size_t r = 0; r < nr; r++)
        for (size_t i = 0; i < rv[r].h->narr; i++) {
            const rr_arr *x = &rv[r].arr[i];
            v[k++] = (arrival){
                rv[r].str + x->pg, rv[r].str + x->coll, x->seq, rv[r].rank, r, x->ts, x->ev,
                x->seq_given};
        }
    qsort(v, k, sizeof *v, by_pg_seq_rank);
    *out = v;
    *n = k;
    return 0;
}

/* Per rank, over the collectives it took part in. */
typedef struct rank_wait {
    int64_t collectives, last, caused, caused_max, waited;
} rank_wait;

/* Fills t[0] (the collectives) and t[1] (per rank). @return 0 or STROBE_ENOMEM; *none is set when
 * no collective ran on two ranks or more. */
static int collective_waits(const rr_view *rv, size_t nr, cli_hta_table *t, int *none) {
    arrival *v = NULL;
    size_t n = 0;
    rank_wait *w = calloc(nr ? nr : 1, sizeof *w);
    int rc = w ? arrivals(rv, nr, &v, &n) : STROBE_ENOMEM;
    int64_t t0 = INT64_MAX;
    for (size_t r = 0; r < nr; r++)
        if (rv[r].h->has_first && rv[r].h->first < t0) t0 = rv[r].h->first;
    *none = 1;
    for (size_t i = 0, j; rc == 0 && i < n; i = j) {
        /* One collective: its (pg, seq); each rank's first arrival (the earliest). */
        size_t ranks = 0, last = i;
        int64_t first = v[i].ts;
        for (j = i; j < n && v[j].seq == v[i].seq && strcmp(v[j].pg, v[i].pg) == 0; j++) {
            if (j > i && v[j].at == v[j - 1].at) continue;
            ranks++;
            if (v[j].ts > v[last].ts) last = j;
            if (v[j].ts < first) first = v[j].ts;
        }
        if (ranks < 2) continue;
        *none = 0;
        int64_t sum = 0, end = v[last].ts;
        for (size_t q = i; q < j; q++) {
            if (q > i && v[q].at == v[q - 1].at) continue;
            sum += end - v[q].ts;
            w[v[q].at].collectives++;
            w[v[q].at].waited += end - v[q].ts;
        }
        rank_wait *lw = &w[v[last].at];
        lw->last++;
        lw->caused += sum;
        if (end - first > lw->caused_max) lw->caused_max = end - first;
        rc = CLI_HTA_ROW(&t[0], CLI_HTA_TEXT(v[i].pg), CLI_HTA_INT(v[i].seq),
                         CLI_HTA_TEXT(v[i].coll), CLI_HTA_INT(ranks), CLI_HTA_INT(v[last].rank),
                         CLI_HTA_NUM((double)(end - t0) / 1e3), CLI_HTA_NUM((double)sum / 1e3),
                         CLI_HTA_NUM((double)(end - first) / 1e3));
    }
    for (size_t r = 0; rc == 0 && !*none && r < nr; r++)
        rc = CLI_HTA_ROW(&t[1], CLI_HTA_INT(rv[r].rank), CLI_HTA_INT(w[r].collectives),
                         CLI_HTA_INT(w[r].last), CLI_HTA_NUM((double)w[r].caused / 1e3),
                         CLI_HTA_NUM((double)w[r].caused_max / 1e3),
                         CLI_HTA_NUM((double)w[r].waited / 1e3));
    free(v);
    free(w);
    return rc;
}

/* --collectives: the waits per collective and per rank, and HTA's potential stragglers. With
 * ctx NULL (the report), the defaults, and nothing said on stderr. */
static int collectives(const cli_hta_set *s, const rr_view *v, void *ctx, cli_hta_table *t) {
    static const strag_args defaults = {NULL, 0, 2};
    const strag_args *a = ctx ? ctx : &defaults;
    int none = 1;
    int rc = collective_waits(v, s->count, t, &none);
    if (rc == 0 && none && ctx)
        fprintf(stderr, "strobe ranks: no collective ran on two ranks or more (no event with a "
                        "\"Collective name\" arg that two ranks share)\n");
    const char *why = NULL;
    if (rc == 0) rc = stragglers(v, s->count, a, &t[2], &why);
    if (rc == 0 && why && ctx) fprintf(stderr, "strobe ranks: no potential stragglers: %s\n", why);
    return rc;
}

/* The analysis (collectives or the steps) over the set, reduced or whole. */
static int analyse(const cli_hta_set *s, void *ctx, cli_hta_table *t, int reduced, int coll) {
    static const strag_args defaults = {NULL, 0, 2}; /* the report's (hta.h): no options */
    size_t n = s->count ? s->count : 1;
    rr_view *v = calloc(n, sizeof *v);
    uint8_t **bufs = reduced ? NULL : calloc(n, sizeof *bufs);
    int rc = v == NULL || (!reduced && bufs == NULL) ? STROBE_ENOMEM : views(s, reduced, v, bufs);
    if (rc == 0 && coll) rc = collectives(s, v, ctx, t);
    if (rc == 0 && !coll) rc = steps(s, v, ctx ? ctx : &defaults, t);
    for (size_t k = 0; bufs && k < s->count; k++)
        free(bufs[k]);
    free(bufs);
    free(v);
    return rc;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    return analyse(s, ctx, t, 0, 0);
}
static int run_reduced(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    return analyse(s, ctx, t, 1, 0);
}
static int run_collectives(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    return analyse(s, ctx, t, 0, 1);
}
static int run_collectives_reduced(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    return analyse(s, ctx, t, 1, 1);
}

/* "N[,N...]" into *out. @return the count, or -1 when malformed. */
static long parse_steps(const char *arg, int64_t **out) {
    size_t n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    int64_t *v = malloc(n * sizeof *v);
    if (v == NULL) return -1;
    const char *p = arg;
    for (size_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9') break;
        long long x = strtoll(p, &end, 10);
        if (errno || (*end != ',' && *end != '\0')) break;
        v[i] = x;
        p = end + (*end == ',');
        if (i + 1 == n) {
            if (*end != '\0') break;
            *out = v;
            return (long)n;
        }
    }
    free(v);
    return -1;
}

static int option(void *ctx, int c, const char *arg) {
    strag_args *a = ctx;
    if (c == 'k') {
        char *end;
        errno = 0;
        long v = strtol(arg, &end, 10);
        if (errno || end == arg || *end)
            return cli_usage_error("ranks", "--candidates needs a number", arg);
        a->k = v < 1 ? 1 : v > 1000000 ? 1000000 : v;
    } else if (c == 'S') {
        free(a->want);
        a->want = NULL;
        long n = parse_steps(arg, &a->want);
        if (n < 0)
            return cli_usage_error("ranks", "--steps needs numbers separated by commas", arg);
        a->nwant = (size_t)n;
    } else if (c != CLI_LONG_ONLY + 1) { /* --collectives: cmd_ranks picks the command */
        return CLI_HTA_UNKNOWN_OPTION;
    }
    return 0;
}

static const char *const cols[] = {"rank", "iter", "ts", "dur", "end"};
static const uint8_t text[5] = {0};
static const char *const scols[] = {"rank", "is_straggler"};

const cli_hta_command cli_hta_cmd_ranks = {
    "ranks",
    cmd_ranks_usage,
    cmd_ranks_options,
    ":f:k:j:qhV",
    option,
    run,
    {{"steps", cols, text, 5}, {"stragglers", scols, text, 2}},
    2,
    rank_reduce,
    run_reduced};

static const char *const ccols[] = {"pg",        "seq",        "collective", "ranks",
                                    "last_rank", "last_start", "wait_sum",   "wait_max"};
static const uint8_t ctext[8] = {1, 0, 1, 0, 0, 0, 0, 0};
static const char *const wcols[] = {"rank",        "collectives",     "last",
                                    "caused_wait", "max_caused_wait", "waited"};
static const uint8_t wtext[6] = {0};

const cli_hta_command cli_hta_cmd_collectives = {"ranks",
                                                 cmd_ranks_usage,
                                                 cmd_ranks_options,
                                                 ":f:k:j:qhV",
                                                 option,
                                                 run_collectives,
                                                 {{"collectives", ccols, ctext, 8},
                                                  {"by_rank", wcols, wtext, 6},
                                                  {"stragglers", scols, text, 2}},
                                                 3,
                                                 rank_reduce,
                                                 run_collectives_reduced};

/* The command that argv asks for: ranks' own, or with --collectives the collectives' (parsing
 * the options as ranks does: cli_hta_main parses them again, and reports what is wrong). */
static const cli_hta_command *ranks_command(int argc, char **argv) {
    static cli_hta_command c;
    int first = 0, coll = 0;
    for (int o; (o = cli_getopt(argc, argv, cli_hta_cmd_ranks.shortopts, cli_hta_cmd_ranks.options,
                                &first)) != -1;)
        coll |= o == CLI_LONG_ONLY + 1;
    if (!coll) return &cli_hta_cmd_ranks;
    c = cli_hta_cmd_collectives;
    c.shortopts = cli_hta_cmd_ranks.shortopts; /* ranks' options, whatever they become */
    c.options = cli_hta_cmd_ranks.options;
    return &c;
}

int cmd_ranks(int argc, char **argv) {
    strag_args a = {NULL, 0, 2};
    int rc = cli_hta_main(ranks_command(argc, argv), &a, argc, argv);
    free(a.want);
    return rc;
}
