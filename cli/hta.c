/* hta.c: traces as HolisticTraceAnalysis sees them (the definitions are in hta.h).
 *
 * Contents: loading (folders, ranks, jobs), HTA's times, the profiler-step restriction (and HTA's
 * MTIA branch of it), HTA's definitions (kernel types, launches), interval merging, output helpers
 * (tables, typed cells), per-rank commands (their rows recorded rank by rank), the commands'
 * frame (cli_hta_main). */
#include "hta.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "mpi.h"
#include "model/wire.h"
#include "util/table.h"
#include "strobe/error.h"

/* ---- loading ------------------------------------------------------------------------------- */

typedef struct path_list {
    char **v;
    size_t n, cap;
} path_list;

static int push_path(path_list *l, const char *p) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) return STROBE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = strdup(p);
    return l->v[l->n++] ? 0 : STROBE_ENOMEM;
}

static int json_name(const char *name) {
    return cli_ends_with(name, ".json") || cli_ends_with(name, ".json.gz");
}

/* A folder's .json and .json.gz files, in name order. @return 0, STROBE_ENOMEM, or -1 after a
 * message when `say` (unreadable, or no trace in it). */
static int list_folder(path_list *l, const char *cmd, const char *dir, int say) {
    char **paths;
    size_t n;
    int rc = cli_folder_files(dir, json_name, NULL, &paths, &n);
    if (rc == -1) {
        if (say) fprintf(stderr, "strobe %s: %s: %s\n", cmd, cli_esc(dir), strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = push_path(l, paths[i]);
    cli_free_paths(paths, n);
    if (rc) return rc;
    if (n == 0) {
        if (say)
            fprintf(stderr, "strobe %s: %s: no trace (.json or .json.gz file) in this folder\n",
                    cmd, cli_esc(dir));
        return -1;
    }
    return 0;
}

static const char *shown(const char *path) {
    return strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path);
}

/* ---- HTA's times --------------------------------------------------------------------------- */

/* The double Python reads for ns / 1000 written in decimal (correctly rounded but for a
 * double-rounding tie, which long double's 64-bit mantissa makes rare). */
static double us_double(int64_t ns) {
    return (double)((long double)ns / 1000.0L);
}

/* A row HTA keeps (see hta.h), or not. */
int cli_hta_is_row(const md_model *m, const md_event *e) {
    if (e->bad || !e->has_time) return 0;
    const char *cat = md_str(m, e->cat);
    if (cat[0] == '\0' || strcmp(cat, "Trace") == 0) return 0;
    if (e->ph == 'X') return e->dur_state == MD_DUR_OK;
    return e->kind == MD_MEMORY && e->ph == 'i' && strcmp(cat, "cpu_instant_event") == 0;
}

int cli_hta_is_gpu_row(const md_model *m, const md_event *e) {
    if (e->stream >= 0 && e->corr >= 0) return 1;
    const char *n = md_str(m, e->name);
    return strcmp(n, "Event Sync") == 0 || strcmp(n, "Context Sync") == 0;
}

/* ^ProfilerStep#[0-9] */
static int is_step(const char *n) {
    return strncmp(n, "ProfilerStep#", 13) == 0 && n[13] >= '0' && n[13] <= '9';
}

static int by_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int by_row_ts(const void *a, const void *b) {
    const cli_hta_row *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

/* Row w of event i: HTA's times, in whole microseconds from the trace's base. */
static void rank_row(const md_model *m, const md_event *e, uint32_t i, cli_hta_row *w) {
    int64_t base = m->has_base ? m->base_time_ns : 0;
    double ts = us_double(md_sub_sat(e->ts, base)), dur = us_double(e->dur);
    w->ts = (int64_t)ceil(ts);
    w->end = (int64_t)floor(ts + dur);
    w->ev = i;
    w->mult = 1;
}

int cli_hta_cpu_next(const cli_hta_rank *r, size_t *i, cli_hta_row *w) {
    const md_model *m = &r->m;
    size_t k = *i;
    if (r->cpu_bits == NULL || k >= m->count) return 0;
    uint64_t word = r->cpu_bits[k / 64] >> (k % 64);
    while (word == 0) {
        k = (k / 64 + 1) * 64;
        if (k >= m->count) return 0;
        word = r->cpu_bits[k / 64];
    }
    k += (size_t)__builtin_ctzll(word);
    if (k >= m->count) return 0;
    cli_hta_row_at(r, (uint32_t)k, w);
    *i = k;
    return 1;
}

void cli_hta_row_at(const cli_hta_rank *r, uint32_t i, cli_hta_row *w) {
    md_event e;
    e.ts = md_ts(&r->m, i);
    e.dur = md_dur(&r->m, i);
    rank_row(&r->m, &e, i, w);
}

/* Fills r->rows: HTA's times for every row, then the restriction (when `restrict`), then the rows
 * with a stream (and r->cpu_bits, the others). Passes over the model rather than a copy of every
 * row: a first one for the counts and the restriction's limit, one for the kept CPU rows'
 * correlations (only when there are GPU rows for them to count), and one that fills the rows (of
 * their exact size) and the CPU rows' bits. */
static int build_rank(cli_hta_rank *r, int restrict_steps, int no_cpu_rows) {
    const md_model *m = &r->m;
    size_t n_stream = 0, n_other = 0, ncpu = 0, ngpu = 0, nc = 0;
    int64_t last_step = INT64_MIN, first_cpu = INT64_MAX;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        cli_hta_row w;
        rank_row(m, e, (uint32_t)i, &w);
        if (e->stream != -1)
            n_stream++;
        else
            n_other++;
        if (w.ts < r->min_ts) r->min_ts = w.ts;
        if (cli_hta_is_gpu_row(m, e)) {
            ngpu++;
            continue;
        }
        ncpu++;
        if (w.ts < first_cpu) first_cpu = w.ts;
        if (is_step(md_str(m, e->name)) && w.ts > last_step) last_step = w.ts;
    }
    int restrict_rows = restrict_steps && ncpu;
    int64_t limit = last_step != INT64_MIN ? last_step : first_cpu;
    int64_t *corrs = NULL;
    if (restrict_rows && ngpu) {
        /* The kept CPU rows' correlations, sorted: a kernel is kept once per equal one. */
        corrs = malloc(ncpu * sizeof *corrs);
        if (corrs == NULL) return STROBE_ENOMEM;
        for (size_t i = 0; i < m->count; i++) {
            const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
            if (!cli_hta_is_row(m, e) || cli_hta_is_gpu_row(m, e)) continue;
            cli_hta_row w;
            rank_row(m, e, (uint32_t)i, &w);
            if (w.ts < limit) corrs[nc++] = e->corr;
        }
        qsort(corrs, nc, sizeof *corrs, by_i64);
    }
    cli_hta_row *all = malloc((n_stream ? n_stream : 1) * sizeof *all);
    uint64_t *cpu = no_cpu_rows ? NULL : calloc(m->count / 64 + 1, sizeof *cpu);
    if (all == NULL || (cpu == NULL && !no_cpu_rows)) {
        free(corrs);
        free(all);
        free(cpu);
        return STROBE_ENOMEM;
    }
    size_t kept = 0, ncpu_kept = 0;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        cli_hta_row w;
        rank_row(m, e, (uint32_t)i, &w);
        if (restrict_rows && !cli_hta_is_gpu_row(m, e)) {
            w.mult = w.ts < limit;
        } else if (restrict_rows) {
            size_t lo = 0, hi = nc;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (corrs[mid] < e->corr)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            size_t c = 0;
            while (lo + c < nc && corrs[lo + c] == e->corr)
                c++;
            w.mult = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
        }
        if (!w.mult) continue;
        if (e->stream != -1)
            all[kept++] = w;
        else if (cpu) {
            cpu[i / 64] |= (uint64_t)1 << (i % 64);
            ncpu_kept++;
        }
    }
    qsort(all, kept, sizeof *all, by_row_ts);
    free(corrs);
    r->rows = all;
    r->count = kept;
    r->cpu_bits = cpu;
    r->cpu_count = ncpu_kept;
    return 0;
}

/* ---- HTA's MTIA branch ------------------------------------------------------------------- */

static int is_memory_name(const char *name);
static int is_cpu_cat(const char *cat);
static int is_kernel_cat(const char *cat);

static int by_fix_ev(const void *a, const void *b) {
    const cli_hta_fix *x = a, *y = b;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static const cli_hta_fix *find_fix(const cli_hta_rank *r, uint32_t ev) {
    if (r->nfix == 0) return NULL;
    cli_hta_fix key = {.ev = ev};
    return bsearch(&key, r->fix, r->nfix, sizeof *r->fix, by_fix_ev);
}

int64_t cli_hta_stream(const cli_hta_rank *r, uint32_t ev) {
    const cli_hta_fix *f = find_fix(r, ev);
    if (f && f->has_stream) return f->stream;
    return md_at(&r->m, ev).stream;
}

/* A step row as _fix_mtia_memory_kernels reads it: [ts, ts + dur] and its iteration. */
typedef struct mtia_step {
    int64_t ts, end, iter;
} mtia_step;

/* HTA's MTIA branch of _filter_irrelevant_gpu_kernels (hta/common/trace.py at 05dc179d, the same
 * in trace_collection.py at 1cea8d47: its filter_mtia_kernels_for_one_rank and
 * _fix_mtia_memory_kernels, taken when Trace.get_device_type, the first rank's metadata key
 * "device_type", is "MTIA"), for one rank, in place of build_rank's restriction:
 *   - the CPU events are the rows whose cat CPU_EVENTS_CATEGORY_PATTERN takes; those of them
 *     named as profiler steps (^ProfilerStep#N) span [t_start, t_end], the earliest step's ts to
 *     the latest step end (a rank without such a step keeps none of the first two kinds below);
 *   - kept are: the CPU events with t_start <= ts and end <= t_end (so the last step is kept,
 *     unlike the other branch); the rows whose cat KERNEL_CATEGORY_PATTERN takes and whose
 *     correlation is one of those CPU events' (-1 left out); and the rows whose name
 *     MemoryKernelGroupingPattern takes and whose ts lies within a step row's [ts, ts + dur],
 *     ends included (steps of any cat). Each kept row once (a set of indices); the others are
 *     dropped, whatever their cat;
 *   - such a memory kernel with stream -1 takes its tid as its stream (HTA's astype("int32"):
 *     the tid wrapped to 32 bits; a tid that is not a number, on which HTA's astype fails, leaves
 *     it -1), and one with iteration -1 the iteration of the last step row, in file order, whose
 *     span holds it (cli_hta_fix; cli_hta_stream and cli_hta_iteration read them). */
static int build_rank_mtia(cli_hta_rank *r, int no_cpu_rows) {
    const md_model *m = &r->m;
    size_t nsteps = 0, ncpu = 0, nmem = 0, nroom = 0, nc = 0, ns = 0;
    int has_step = 0;
    int64_t t_start = INT64_MAX, t_end = INT64_MIN;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        cli_hta_row w;
        rank_row(m, e, (uint32_t)i, &w);
        if (w.ts < r->min_ts) r->min_ts = w.ts;
        const char *name = md_str(m, e->name);
        int mem = is_memory_name(name);
        nmem += mem;
        nroom += mem || e->stream != -1;
        if (is_step(name)) nsteps++;
        if (!is_cpu_cat(md_str(m, e->cat))) continue;
        ncpu++;
        if (!is_step(name)) continue;
        has_step = 1;
        if (w.ts < t_start) t_start = w.ts;
        if (w.end > t_end) t_end = w.end;
    }
    cli_hta_iters it = {0};
    mtia_step *steps = malloc((nsteps ? nsteps : 1) * sizeof *steps);
    int64_t *corrs = malloc((ncpu ? ncpu : 1) * sizeof *corrs);
    cli_hta_row *all = malloc((nroom ? nroom : 1) * sizeof *all);
    cli_hta_fix *fix = malloc((nmem ? nmem : 1) * sizeof *fix);
    uint64_t *cpu = no_cpu_rows ? NULL : calloc(m->count / 64 + 1, sizeof *cpu);
    int rc = steps && corrs && all && fix && (cpu || no_cpu_rows) ? 0 : STROBE_ENOMEM;
    if (rc == 0 && nmem) rc = cli_hta_iters_init(&it, r);
    /* The steps (iterations as HTA's add_iteration set them) and the kept CPU events'
     * correlations. */
    for (size_t i = 0; rc == 0 && i < m->count; i++) {
        const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        cli_hta_row w;
        rank_row(m, e, (uint32_t)i, &w);
        const char *name = md_str(m, e->name);
        if (is_step(name))
            steps[ns++] = (mtia_step){w.ts, w.end, nmem ? cli_hta_iteration(&it, (uint32_t)i) : -1};
        if (has_step && is_cpu_cat(md_str(m, e->cat)) && w.ts >= t_start && w.end <= t_end &&
            e->corr != -1)
            corrs[nc++] = e->corr;
    }
    if (rc == 0) qsort(corrs, nc, sizeof *corrs, by_i64);
    size_t kept = 0, ncpu_kept = 0, nfix = 0;
    for (size_t i = 0; rc == 0 && i < m->count; i++) {
        const md_event e_ev = md_at(m, (uint32_t)i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        cli_hta_row w;
        rank_row(m, e, (uint32_t)i, &w);
        const char *name = md_str(m, e->name), *cat = md_str(m, e->cat);
        int keep = has_step && is_cpu_cat(cat) && w.ts >= t_start && w.end <= t_end;
        if (!keep && e->corr != -1 && is_kernel_cat(cat))
            keep = cli_hta_find_i64(corrs, nc, e->corr) >= 0;
        int64_t stream = e->stream;
        if (is_memory_name(name)) {
            const mtia_step *in = NULL; /* the last step, in file order, that holds its ts */
            for (size_t k = 0; k < ns; k++)
                if (steps[k].ts <= w.ts && w.ts <= steps[k].end) in = &steps[k];
            if (in) {
                cli_hta_fix f = {.ev = (uint32_t)i};
                const md_thread *t = &m->threads[md_thread_of(m, (uint32_t)i)];
                if (stream == -1 && t->tid_kind == MD_ID_NUM) {
                    stream = (int32_t)(uint32_t)(uint64_t)t->tid;
                    f.has_stream = 1;
                    f.stream = stream;
                }
                if (cli_hta_iteration(&it, (uint32_t)i) == -1) {
                    f.has_iter = 1;
                    f.iter = in->iter;
                }
                if (f.has_stream || f.has_iter) fix[nfix++] = f;
                keep = 1;
            }
        }
        if (!keep) continue;
        if (stream != -1)
            all[kept++] = w;
        else if (cpu) {
            cpu[i / 64] |= (uint64_t)1 << (i % 64);
            ncpu_kept++;
        }
    }
    cli_hta_iters_free(&it);
    free(steps);
    free(corrs);
    if (rc) {
        free(all);
        free(fix);
        free(cpu);
        return rc;
    }
    qsort(all, kept, sizeof *all, by_row_ts);
    r->rows = all;
    r->count = kept;
    r->cpu_bits = cpu;
    r->cpu_count = ncpu_kept;
    r->fix = nfix ? fix : NULL;
    r->nfix = nfix;
    if (nfix == 0) free(fix);
    return 0;
}

/* ---- iterations ------------------------------------------------------------------------ */

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int64_t cli_hta_step_number(const char *name) {
    if (strncmp(name, "ProfilerStep", 12) != 0) return -1;
    const char *p = name + 12;
    while (is_space(*p))
        p++;
    if (*p++ != '#') return -1;
    while (is_space(*p))
        p++;
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        n = n > (INT64_MAX - 9) / 10 ? INT64_MAX : n * 10 + (*p - '0');
    return n;
}

typedef cli_hta_corr_row corr_row;

static int by_corr(const void *a, const void *b) {
    const corr_row *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

/* HTA's [ts, end) of a row (see hta.h). */
static void row_times(const md_model *m, const md_event *e, int64_t *ts, int64_t *end) {
    int64_t base = m->has_base ? m->base_time_ns : 0;
    double t = us_double(md_sub_sat(e->ts, base)), d = us_double(e->dur);
    *ts = (int64_t)ceil(t);
    *end = (int64_t)floor(t + d);
}

int cli_hta_iters_init(cli_hta_iters *it, const cli_hta_rank *r) {
    const md_model *m = &r->m;
    size_t n = m->count ? m->count : 1;
    memset(it, 0, sizeof *it);
    it->r = r;
    /* Room for every event; only the steps' and the correlated CPU rows' entries are written. */
    it->steps = malloc(3 * n * sizeof *it->steps);
    it->cr = malloc(n * sizeof *it->cr);
    if (it->steps == NULL || it->cr == NULL) {
        cli_hta_iters_free(it);
        return STROBE_ENOMEM;
    }
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        const char *name = md_str(m, e->name);
        if (strncmp(name, "ProfilerStep", 12) == 0) {
            int64_t *st = &it->steps[3 * it->nsteps++];
            row_times(m, e, &st[0], &st[1]);
            st[2] = cli_hta_step_number(name);
        }
        if (e->corr != -1 && !cli_hta_is_gpu_row(m, e))
            it->cr[it->ncorr++] = (corr_row){e->corr, i};
    }
    qsort(it->cr, it->ncorr, sizeof *it->cr, by_corr);
    /* Steps in file order that start one after another and do not overlap (a profiler's, as a
     * rule) hold a time in one step at most, found by a binary search (cpu_iteration). */
    it->sorted = 1;
    for (size_t k = 1; k < it->nsteps && it->sorted; k++)
        it->sorted = it->steps[3 * (k - 1)] < it->steps[3 * k] &&
                     it->steps[3 * (k - 1) + 1] <= it->steps[3 * k];
    return 0;
}

void cli_hta_iters_free(cli_hta_iters *it) {
    free(it->steps);
    free(it->cr);
    memset(it, 0, sizeof *it);
}

/* The iteration of a CPU row by its time: the last step, in file order, that holds its ts. */
static int64_t cpu_iteration(const cli_hta_iters *it, const md_event *e) {
    int64_t ts, end, v = -1;
    row_times(&it->r->m, e, &ts, &end);
    if (it->sorted) {
        size_t lo = 0, hi = it->nsteps;
        while (lo < hi) { /* the first step that starts after ts */
            size_t mid = lo + (hi - lo) / 2;
            if (it->steps[3 * mid] <= ts)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo && ts < it->steps[3 * (lo - 1) + 1] ? it->steps[3 * (lo - 1) + 2] : -1;
    }
    for (size_t k = 0; k < it->nsteps; k++)
        if (it->steps[3 * k] <= ts && ts < it->steps[3 * k + 1]) v = it->steps[3 * k + 2];
    return v;
}

/* A row that takes its iteration by its time (see hta.h). */
static int is_timed_row(const md_model *m, const md_event *e) {
    return e->stream < 0 || (e->stream == 0 && strcmp(md_str(m, e->cat), "cpu_op") == 0);
}

int64_t cli_hta_iteration(const cli_hta_iters *it, uint32_t ev) {
    const md_model *m = &it->r->m;
    const cli_hta_fix *f = find_fix(it->r, ev);
    if (f && f->has_iter) return f->iter;
    const md_event e_ev = md_at(m, ev), *e = &e_ev;
    if (!cli_hta_is_row(m, e)) return CLI_HTA_NO_ITER;
    if (is_timed_row(m, e)) return cpu_iteration(it, e);
    /* The rows with a stream, by their CPU row's. */
    if (e->stream <= 0 || !cli_hta_is_gpu_row(m, e)) return CLI_HTA_NO_ITER; /* none (NaN) */
    if (e->corr == -1) return -1;
    size_t lo = 0, hi = it->ncorr;
    while (lo < hi) { /* the first entry past e->corr */
        size_t mid = lo + (hi - lo) / 2;
        if (it->cr[mid].corr <= e->corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || it->cr[lo - 1].corr != e->corr) return -1;
    const md_event c_ev = md_at(m, it->cr[lo - 1].ev), *c = &c_ev;
    /* The partner's iteration as it is then: set when it is a CPU row by its time. */
    if (c->stream < 0 || c->stream == 0)
        return is_timed_row(m, c) ? cpu_iteration(it, c) : CLI_HTA_NO_ITER;
    return CLI_HTA_NO_ITER;
}

static int by_rank(const void *a, const void *b) {
    const cli_hta_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The loading on threads (cli_parallel): trace i into ranks[i].m, md_load's result in rc[i]
 * (LOAD_PENDING: not read, after a failure). */
#define LOAD_PENDING 1
typedef struct load_job {
    cli_hta_rank *ranks;
    char **paths;
    int *rc;
} load_job;

static int load_one(void *arg, size_t i) {
    load_job *j = arg;
    j->rc[i] = md_load(&j->ranks[i].m, j->paths[i]);
    return j->rc[i];
}

/* Rank i's rows (build_rank or build_rank_mtia), its result in rc[i]; min_ts set first. */
typedef struct build_job {
    cli_hta_set *s;
    int no_cpu_rows;
    int *rc;
} build_job;

static int build_one(void *arg, size_t i) {
    build_job *j = arg;
    cli_hta_rank *r = &j->s->ranks[i];
    j->rc[i] = j->s->mtia ? build_rank_mtia(r, j->no_cpu_rows)
                          : build_rank(r, j->s->restricted, j->no_cpu_rows);
    return j->rc[i];
}

/* ---- reduced ranks --------------------------------------------------------------------------
 * With a command that reduces ranks (cli_hta_command.reduce, or per_rank: rows_reduce below, its
 * run over the rank alone), the thread that reads a rank also builds its rows and reduces it,
 * then strips its model (md_strip): what loading decides over all
 * ranks together (the restriction, HTA's MTIA branch) is not known yet, so the rank is reduced as
 * restricted and, when the rank alone does not settle it (fewer than two step names of its own),
 * as not restricted too. Both travel in one envelope (cli_hta_rank.red until the choice is made):
 *   red_env, the rank's first step name (step_len bytes), the restricted reduction (len_r), the
 *   other (len_u; has_u), each padded to 8 bytes.
 * Where the decision takes HTA's MTIA branch (rank 0's device_type "MTIA", restricted), whose rows
 * differ, the traces are read again as a command without reduce reads them (FALLBACK). */
typedef struct red_env {
    int32_t multi;    /* the rank has two step names or more: restricted whatever the others */
    int32_t mtia;     /* its device_type is "MTIA" */
    int32_t build_rc; /* building or reducing failed (STROBE_ENOMEM), or 0 */
    int32_t has_u;
    int64_t rank, min_ts; /* cli_hta_rank's, as the reading thread set them */
    uint64_t step_len, len_r, len_u;
} red_env;

#define RED_FALLBACK 3
#define RED_PAD(n) (((n) + 7u) & ~(size_t)7u)

static int rows_reduce(const cli_hta_command *c, void *ctx, const cli_hta_rank *r, int restricted,
                       uint8_t **out, size_t *len);

/* The rank's first step name among its rows (ProfilerStep#N, in file order; NULL: none), with
 * *multi set when it has another: what the restriction is decided from, all ranks together. */
static const char *first_step(const md_model *m, int *multi) {
    const char *first = NULL;
    *multi = 0;
    for (size_t i = 0; i < m->count && !*multi; i++) {
        const char *name = md_str(m, md_name_of(m, i));
        const md_event e = md_at(m, i);
        if (!cli_hta_is_row(m, &e) || !is_step(name)) continue;
        if (first == NULL)
            first = name;
        else if (strcmp(first, name) != 0)
            *multi = 1;
    }
    return first;
}

typedef struct reduce_job {
    const cli_hta_command *c;
    void *ctx; /* the command's state, for a per_rank command's run */
    cli_hta_rank *ranks;
    char **paths;
    size_t n; /* all the files (a lone trace without a rank is rank 0) */
    int no_cpu_rows, progress, quiet;
    const char *cmd;
    int *rc;
} reduce_job;

static void free_rows(cli_hta_rank *r) {
    free(r->rows);
    free(r->cpu_bits);
    free(r->fix);
    r->rows = NULL;
    r->cpu_bits = NULL;
    r->fix = NULL;
    r->count = r->cpu_count = r->nfix = 0;
}

/* Rank i read, reduced (restricted, and unrestricted unless it restricts alone) and stripped:
 * cli_hta_rank.red holds the envelope. md_load's result in rc[i]; a failure to build or reduce
 * goes in the envelope (it is said after the checks, as loading says it). */
static int reduce_one(void *arg, size_t i) {
    reduce_job *j = arg;
    cli_hta_rank *r = &j->ranks[i];
    cli_progress *p = j->progress ? cli_progress_start(j->cmd, j->paths[i], j->quiet) : NULL;
    j->rc[i] = md_load(&r->m, j->paths[i]);
    cli_progress_stop(p);
    if (j->rc[i]) return j->rc[i];
    const md_model *m = &r->m;
    red_env env = {0};
    int multi;
    const char *first = first_step(m, &multi);
    env.multi = multi;
    env.mtia = m->device_type && strcmp(md_str(m, m->device_type), "MTIA") == 0;
    env.step_len = first ? strlen(first) : 0;
    r->rank = m->rank;
    if (r->rank < 0 && j->n == 1) r->rank = 0;
    r->min_ts = INT64_MAX;
    uint8_t *part[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    int rc = 0;
    for (int u = 0; rc == 0 && u < (env.multi ? 1 : 2); u++) {
        r->min_ts = INT64_MAX;
        rc = build_rank(r, !u, j->no_cpu_rows);
        if (rc == 0)
            rc = j->c->per_rank ? rows_reduce(j->c, j->ctx, r, !u, &part[u], &len[u])
                                : j->c->reduce(r, &part[u], &len[u]);
        free_rows(r);
    }
    env.build_rc = rc;
    env.has_u = part[1] != NULL;
    env.rank = r->rank;
    env.min_ts = r->min_ts;
    env.len_r = rc ? 0 : len[0];
    env.len_u = rc ? 0 : len[1];
    size_t total = sizeof env + RED_PAD(env.step_len) + RED_PAD(env.len_r) + RED_PAD(env.len_u);
    uint8_t *b = calloc(1, total);
    if (b == NULL) {
        env.build_rc = STROBE_ENOMEM;
        env.step_len = env.len_r = env.len_u = 0;
        env.has_u = 0;
        total = sizeof env;
        b = calloc(1, total);
    }
    if (b) {
        size_t at = sizeof env;
        if (env.step_len) memcpy(b + at, first, env.step_len);
        at += RED_PAD(env.step_len);
        if (env.len_r) memcpy(b + at, part[0], env.len_r);
        at += RED_PAD(env.len_r);
        if (env.len_u) memcpy(b + at, part[1], env.len_u);
        memcpy(b, &env, sizeof env);
    }
    free(part[0]);
    free(part[1]);
    r->red = b;
    r->red_len = b ? total : 0;
    md_strip(&r->m);
    return 0;
}

/* Rank r's envelope, checked (it may come from another process). @return NULL when malformed. */
static const red_env *envelope(const cli_hta_rank *r) {
    static const red_env none = {.build_rc = STROBE_ENOMEM};
    if (r->red == NULL) return &none; /* no memory for it */
    if (r->red_len < sizeof(red_env)) return NULL;
    const red_env *e = (const red_env *)(const void *)r->red;
    if (e->step_len > r->red_len || e->len_r > r->red_len || e->len_u > r->red_len ||
        sizeof *e + RED_PAD(e->step_len) + RED_PAD(e->len_r) + RED_PAD(e->len_u) != r->red_len)
        return NULL;
    return e;
}

/* Whether the reduced ranks, all read, take the restriction, and HTA's MTIA branch with it (as
 * cli_hta_load_rows decides from the models): ranks[low] is the lowest rank. */
static void red_decide(const cli_hta_rank *ranks, size_t n, size_t low, int *restricted,
                       int *mtia) {
    const char *step = NULL;
    size_t step_len = 0;
    *restricted = *mtia = 0;
    for (size_t k = 0; k < n && !*restricted; k++) {
        const red_env *e = envelope(&ranks[k]);
        if (e == NULL || e->step_len == 0) {
            if (e && e->multi) *restricted = 1;
            continue;
        }
        const char *name = (const char *)(ranks[k].red + sizeof *e);
        if (e->multi)
            *restricted = 1;
        else if (step == NULL)
            step = name, step_len = e->step_len;
        else if (step_len != e->step_len || memcmp(step, name, step_len) != 0)
            *restricted = 1;
    }
    const red_env *e0 = low < n ? envelope(&ranks[low]) : NULL;
    *mtia = *restricted && e0 && e0->mtia;
}

/* Replaces rank r's envelope by the reduction chosen. @return 0, the envelope's build_rc, or
 * STROBE_EINVAL for a malformed envelope. */
static int red_choose(cli_hta_rank *r, int restricted) {
    const red_env *e = envelope(r);
    if (e == NULL) return STROBE_EINVAL;
    if (e->build_rc) return e->build_rc;
    if (!restricted && !e->has_u) return STROBE_EINVAL; /* it restricts alone: cannot be */
    size_t at = sizeof *e + RED_PAD(e->step_len) + (restricted ? 0 : RED_PAD(e->len_r));
    size_t len = restricted ? e->len_r : e->len_u;
    r->min_ts = e->min_ts;
    memmove(r->red, r->red + at, len);
    r->red_len = len;
    return 0;
}

/* ---- under MPI ----------------------------------------------------------------------------
 * Each file of a process's share is two messages to rank 0, in file order: md_load's result (an
 * int32), then, unless the file was not read (LOAD_PENDING), the model (md_pack) or, when it could
 * not be read, md_load's message. Rank 0 then sends each process the exit status (an int32). */

static int mpi_send_int(int32_t v) {
    return cli_mpi_send(0, &v, sizeof v);
}

/* The list of files a process was given (FNV-1a over the paths, each with its NUL): every process
 * must split the same list, which a program that runs strobe under a launcher with arguments of
 * its own rank would not give. */
static uint64_t list_hash(char **paths, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t k = 0; k < n; k++)
        for (const char *p = paths[k];; p++) {
            h = (h ^ (uint8_t)*p) * 0x100000001b3u;
            if (*p == '\0') break;
        }
    return h;
}

/* A process other than rank 0: its share to rank 0, then it ends with the status rank 0 sends. */
static void mpi_serve(cli_hta_rank *ranks, char **paths, size_t n, size_t lo, size_t hi,
                      const int *load_rc, int reduced) {
    uint64_t h = list_hash(paths, n);
    int bad = cli_mpi_send(0, &h, sizeof h) != 0;
    for (size_t k = lo; k < hi && !bad && reduced; k++) {
        /* A reduced rank: its stripped model (no pointers: sent as it is) and its envelope. */
        md_model *m = &ranks[k].m;
        int32_t rc = load_rc[k];
        bad = mpi_send_int(rc) != 0;
        if (!bad && rc == 0) bad = cli_mpi_send(0, m, sizeof *m) != 0;
        if (!bad && rc == 0) bad = cli_mpi_send(0, ranks[k].red, ranks[k].red_len) != 0;
        if (!bad && rc != 0 && rc != LOAD_PENDING)
            bad = cli_mpi_send(0, m->err, strlen(m->err) + 1) != 0;
        free(ranks[k].red);
        ranks[k].red = NULL;
        md_free(m);
    }
    for (size_t k = lo; k < hi && !bad && !reduced; k++) {
        md_model *m = &ranks[k].m;
        int32_t rc = load_rc[k];
        uint8_t *buf = NULL;
        size_t len = 0;
        if (rc == 0 && md_pack(m, &buf, &len) != 0) {
            rc = STROBE_ENOMEM;
            snprintf(m->err, sizeof m->err, "%.960s: %s", paths[k], strobe_strerror(rc));
        }
        bad = mpi_send_int(rc) != 0;
        if (!bad && rc == 0) bad = cli_mpi_send(0, buf, len) != 0;
        if (!bad && rc != 0 && rc != LOAD_PENDING)
            bad = cli_mpi_send(0, m->err, strlen(m->err) + 1) != 0;
        free(buf);
        md_free(m);
    }
    uint8_t *v = NULL;
    uint64_t vlen = 0;
    int32_t status = CLI_BAD_INPUT;
    if (bad || cli_mpi_recv(0, &v, &vlen) != 0) {
        cli_mpi_abort(CLI_BAD_INPUT);
        exit(CLI_BAD_INPUT);
    }
    if (vlen == sizeof status) memcpy(&status, v, sizeof status);
    free(v);
    cli_mpi_finish();
    exit(status);
}

/* Process p's share of the n files: a run of them in name order, [*lo, *hi). Standard input,
 * which the launcher gives rank 0 alone, makes all of them rank 0's. */
static void mpi_share(char **paths, size_t n, int p, int size, size_t *lo, size_t *hi) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(paths[k], "-") == 0) {
            *lo = p == 0 ? 0 : n;
            *hi = n;
            return;
        }
    *lo = n * (size_t)p / (size_t)size;
    *hi = n * (size_t)(p + 1) / (size_t)size;
}

/* Rank 0: the other processes' shares into ranks[] and load_rc[], as if read here. */
static void mpi_gather(cli_hta_rank *ranks, char **paths, size_t n, int size, int *load_rc,
                       int reduced) {
    uint64_t h = list_hash(paths, n);
    for (int p = 1; p < size; p++) {
        size_t lo, hi;
        mpi_share(paths, n, p, size, &lo, &hi);
        uint8_t *hb = NULL;
        uint64_t hlen = 0;
        int same = cli_mpi_recv(p, &hb, &hlen) == 0 && hlen == sizeof h && memcmp(hb, &h, 8) == 0;
        free(hb);
        if (!same) {
            fprintf(stderr,
                    "strobe: MPI: process %d was given other traces than rank 0 (each process of "
                    "the launch must be given the same ones)\n",
                    p);
            cli_mpi_abort(CLI_BAD_INPUT);
            exit(CLI_BAD_INPUT);
        }
        for (size_t k = lo; k < hi; k++) {
            md_model *m = &ranks[k].m;
            uint8_t *buf = NULL;
            uint64_t len = 0;
            int32_t rc = 0;
            if (cli_mpi_recv(p, &buf, &len) != 0 || len != sizeof rc) {
                fprintf(stderr, "strobe: MPI: no answer from process %d\n", p);
                cli_mpi_abort(CLI_BAD_INPUT);
                exit(CLI_BAD_INPUT);
            }
            memcpy(&rc, buf, sizeof rc);
            free(buf);
            load_rc[k] = rc;
            if (rc == LOAD_PENDING) continue;
            if (cli_mpi_recv(p, &buf, &len) != 0) {
                fprintf(stderr, "strobe: MPI: %s: not received from process %d\n",
                        cli_esc(paths[k]), p);
                cli_mpi_abort(CLI_BAD_INPUT);
                exit(CLI_BAD_INPUT);
            }
            if (rc == 0 && reduced) {
                /* The stripped model, then the envelope (checked where it is used). */
                int whole = len == sizeof *m;
                if (whole) memcpy(m, buf, sizeof *m);
                free(buf);
                buf = NULL;
                if (!whole || cli_mpi_recv(p, &ranks[k].red, &len) != 0) {
                    fprintf(stderr, "strobe: MPI: %s: not received from process %d\n",
                            cli_esc(paths[k]), p);
                    cli_mpi_abort(CLI_BAD_INPUT);
                    exit(CLI_BAD_INPUT);
                }
                ranks[k].red_len = (size_t)len;
            } else if (rc == 0) {
                load_rc[k] = md_unpack(m, buf, (size_t)len);
                if (load_rc[k])
                    snprintf(m->err, sizeof m->err, "%.960s: %s", paths[k],
                             strobe_strerror(load_rc[k]));
            } else {
                memset(m, 0, sizeof *m);
                snprintf(m->err, sizeof m->err, "%.*s", (int)(len ? len - 1 : 0),
                         (const char *)buf);
            }
            free(buf);
        }
    }
}

/* Rank 0: the exit status to every other process, and MPI ended. */
static void mpi_verdict(int size, int32_t status) {
    for (int p = 1; p < size; p++)
        if (cli_mpi_send(p, &status, sizeof status) != 0) {
            cli_mpi_abort(CLI_BAD_INPUT);
            exit(CLI_BAD_INPUT);
        }
    cli_mpi_finish();
}

/* cli_hta_load_rows, and with red (a command with reduce) each rank reduced (see "reduced
 * ranks"): then RED_FALLBACK, with nothing said and s freed, where the traces take HTA's MTIA
 * branch. no_mpi: read every file here even under a launcher (the fallback's second reading, on
 * rank 0 alone). */
static int load_set(cli_hta_set *s, const char *cmd, char **paths, size_t n, int quiet,
                    int no_cpu_rows, const cli_hta_command *red, void *ctx, int no_mpi) {
    memset(s, 0, sizeof *s);
    path_list l = {0};
    int rc = 0;
    /* Under an MPI launcher, what fails before the split (listing a folder, memory, starting
     * MPI) fails every process alike: rank 0 alone says it, as after the split, and the others
     * end silently with a non-zero status. */
    int say = no_mpi || cli_mpi_launched_size() <= 1 || cli_mpi_launched_rank() == 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        struct stat st;
        if (strcmp(paths[k], "-") != 0 && stat(paths[k], &st) == 0 && S_ISDIR(st.st_mode))
            rc = list_folder(&l, cmd, paths[k], say);
        else
            rc = push_path(&l, paths[k]);
    }
    if (rc == 0) {
        s->ranks = calloc(l.n ? l.n : 1, sizeof *s->ranks);
        if (s->ranks == NULL) rc = STROBE_ENOMEM;
    }
    /* The traces are read on cli_jobs threads (md_load keeps no state outside its model), and
     * what loading says is said here, in file order, as one thread would say it: the first
     * trace that cannot be read ends the command, naming it. */
    /* Under an MPI launcher each process reads its share (a run of files in name order); the
     * others hand theirs to rank 0 (as md_pack buffers) and end, and rank 0 goes on as if it had
     * read them all. */
    /* With red, each rank is reduced on the thread that reads it, on one thread too (with the
     * progress line -q turns off). */
    int jobs = cli_jobs_for(l.n), mpi_rank = 0, mpi_size = 1;
    if (rc == 0 && !no_mpi && cli_mpi_launched_size() > 1 &&
        cli_mpi_start(cmd, &mpi_rank, &mpi_size) != 0)
        rc = -1;
    size_t lo = 0, hi = l.n;
    if (mpi_size > 1) mpi_share(l.v, l.n, mpi_rank, mpi_size, &lo, &hi);
    int *load_rc = NULL;
    if (rc == 0 && (jobs > 1 || mpi_size > 1 || red)) {
        load_rc = calloc(l.n ? l.n : 1, sizeof *load_rc);
        if (load_rc == NULL) rc = STROBE_ENOMEM;
        for (size_t k = 0; k < l.n && load_rc; k++)
            load_rc[k] = LOAD_PENDING;
        int jl = cli_jobs_for(hi - lo);
        load_job lj = {s->ranks + lo, l.v + lo, load_rc + lo};
        reduce_job rj = {
            red,   ctx, s->ranks + lo, l.v + lo, l.n, no_cpu_rows, jl == 1 && mpi_size == 1,
            quiet, cmd, load_rc + lo};
        if (rc == 0 && red) cli_parallel(hi - lo, jl, reduce_one, &rj);
        if (rc == 0 && !red) cli_parallel(hi - lo, jl, load_one, &lj);
        if (rc == 0 && mpi_rank != 0)
            mpi_serve(s->ranks, l.v, l.n, lo, hi, load_rc, red != NULL); /* no return */
        if (rc == 0 && mpi_size > 1) mpi_gather(s->ranks, l.v, l.n, mpi_size, load_rc, red != NULL);
    }
    /* HTA's MTIA branch, which reduced ranks cannot take: told before anything is said, from
     * ranks that all read well and have a rank (where one does not, that is said as usual). */
    if (rc == 0 && red && load_rc) {
        int all = 1;
        size_t low = SIZE_MAX;
        for (size_t k = 0; k < l.n && all; k++) {
            const red_env *e = load_rc[k] == 0 ? envelope(&s->ranks[k]) : NULL;
            all = e != NULL && e->rank >= 0;
            if (all && (low == SIZE_MAX || e->rank < envelope(&s->ranks[low])->rank)) low = k;
        }
        int restricted = 0, mtia = 0;
        if (all && l.n) red_decide(s->ranks, l.n, low, &restricted, &mtia);
        if (all && mtia) {
            if (mpi_size > 1) mpi_verdict(mpi_size, 0); /* the others are done */
            for (size_t k = 0; k < l.n; k++) {
                md_free(&s->ranks[k].m);
                free(s->ranks[k].red);
            }
            free(s->ranks);
            s->ranks = NULL;
            free(load_rc);
            for (size_t k = 0; k < l.n; k++)
                free(l.v[k]);
            free(l.v);
            return RED_FALLBACK;
        }
    }
    for (size_t k = 0; rc == 0 && k < l.n; k++) {
        cli_hta_rank *r = &s->ranks[k];
        int loaded = load_rc ? cli_load_said(&r->m, cmd, l.v[k], load_rc[k])
                             : cli_load(&r->m, cmd, l.v[k], quiet);
        if (loaded != CLI_OK) {
            rc = -1;
            break;
        }
        s->count++;
        r->min_ts = INT64_MAX;
        cli_say_skipped(cmd, l.v[k], &r->m);
        r->rank = r->m.rank;
        if (r->rank < 0 && l.n == 1) r->rank = 0;
        if (red && envelope(r) == NULL) {
            fprintf(stderr, "strobe %s: %s: malformed reduction received\n", cmd, shown(l.v[k]));
            rc = -1;
        }
        if (r->rank < 0) {
            fprintf(stderr,
                    "strobe %s: %s: no rank (distributedInfo.rank) in this trace, which is one of "
                    "%zu: each must name its rank\n",
                    cmd, shown(l.v[k]), l.n);
            rc = -1;
        }
    }
    /* Ranks and jobs: every pair is told apart by rank, and all have one world size. */
    if (rc == 0) qsort(s->ranks, s->count, sizeof *s->ranks, by_rank);
    for (size_t k = 1; rc == 0 && k < s->count; k++) {
        const md_model *a = &s->ranks[k - 1].m, *b = &s->ranks[k].m;
        if (s->ranks[k - 1].rank == s->ranks[k].rank) {
            fprintf(stderr, "strobe %s: %s and %s: both are rank %" PRId64 "\n", cmd,
                    shown(a->path), shown(b->path), s->ranks[k].rank);
            rc = -1;
        }
    }
    for (size_t k = 1; rc == 0 && k < s->count; k++) {
        const md_model *a = &s->ranks[0].m, *b = &s->ranks[k].m;
        if (a->world_size != b->world_size) {
            fprintf(stderr,
                    "strobe %s: %s and %s: traces of different jobs (world_size %" PRId64
                    " and %" PRId64 ")\n",
                    cmd, shown(a->path), shown(b->path), a->world_size, b->world_size);
            rc = -1;
        }
    }
    /* Two or more profiler steps, all ranks together, restrict every rank. */
    const char *step = NULL;
    if (rc == 0 && red) {
        int mtia;
        red_decide(s->ranks, s->count, 0, &s->restricted, &mtia); /* sorted by rank */
        for (size_t k = 0; rc == 0 && k < s->count; k++)
            rc = red_choose(&s->ranks[k], s->restricted);
    }
    for (size_t k = 0; rc == 0 && !red && k < s->count && !s->restricted; k++) {
        int multi;
        const char *first = first_step(&s->ranks[k].m, &multi);
        if (multi)
            s->restricted = 1;
        else if (first && step == NULL)
            step = first;
        else if (first && strcmp(step, first) != 0)
            s->restricted = 1;
    }
    /* HTA's branch by the first rank's device_type (Trace.get_device_type). */
    if (rc == 0 && s->restricted && s->count && s->ranks[0].m.device_type &&
        strcmp(md_str(&s->ranks[0].m, s->ranks[0].m.device_type), "MTIA") == 0)
        s->mtia = 1;
    s->min_ts = INT64_MAX;
    for (size_t k = 0; rc == 0 && red && k < s->count; k++)
        if (s->ranks[k].min_ts < s->min_ts) s->min_ts = s->ranks[k].min_ts;
    if (rc == 0 && s->count && !red) {
        /* Each rank's rows on the threads too; the results are taken in rank order. */
        int *build_rc = calloc(s->count, sizeof *build_rc);
        if (build_rc == NULL) rc = STROBE_ENOMEM;
        build_job bj = {s, no_cpu_rows, build_rc};
        if (rc == 0) cli_parallel(s->count, cli_jobs_for(s->count), build_one, &bj);
        for (size_t k = 0; rc == 0 && k < s->count; k++) {
            rc = build_rc[k];
            if (rc == 0 && s->ranks[k].min_ts < s->min_ts) s->min_ts = s->ranks[k].min_ts;
        }
        free(build_rc);
    }
    if (s->min_ts == INT64_MAX) s->min_ts = 0;
    /* A trace the threads read that was not looked at above (after one that failed). */
    for (size_t k = s->count; load_rc && k < l.n; k++) {
        if (load_rc[k] != LOAD_PENDING) md_free(&s->ranks[k].m);
        free(s->ranks[k].red);
    }
    free(load_rc);
    for (size_t k = 0; k < l.n; k++)
        free(l.v[k]);
    free(l.v);
    if (rc != 0 && rc != -1 && say) fprintf(stderr, "strobe %s: %s\n", cmd, strobe_strerror(rc));
    if (mpi_size > 1) mpi_verdict(mpi_size, rc ? CLI_BAD_INPUT : 0);
    if (rc) {
        cli_hta_free(s);
        return CLI_BAD_INPUT;
    }
    return 0;
}

int cli_hta_load(cli_hta_set *s, const char *cmd, char **paths, size_t n, int quiet) {
    return load_set(s, cmd, paths, n, quiet, 0, NULL, NULL, 0);
}

int cli_hta_load_rows(cli_hta_set *s, const char *cmd, char **paths, size_t n, int quiet,
                      int no_cpu_rows) {
    return load_set(s, cmd, paths, n, quiet, no_cpu_rows, NULL, NULL, 0);
}

void cli_hta_free(cli_hta_set *s) {
    for (size_t k = 0; k < s->count; k++) {
        md_free(&s->ranks[k].m);
        free_rows(&s->ranks[k]);
        free(s->ranks[k].red);
    }
    free(s->ranks);
    memset(s, 0, sizeof *s);
}

/* ---- HTA's definitions ----------------------------------------------------------------------
 * The one table of the names HTA classifies by pattern, which every HTA command uses through
 * cli_hta_kernel_type() and cli_hta_is_launch(). HTA's patterns are Python re patterns applied with
 * re.match (anchored at the start only, "." stopping at a newline); each is written here, as HTA
 * writes it, beside its alternatives, of three shapes, which is all these patterns need:
 *   DEF_PREFIX  "^x"      the name starts with x
 *   DEF_AFTER   "a.*b"    the name starts with a, and b follows in the name's first line
 *   DEF_PLUS    "a.+b"    as DEF_AFTER, with at least one character between a and b
 *   DEF_EQ      a name of HTA's list, whole
 * Sources (facebookresearch/HolisticTraceAnalysis):
 *   hta/common/types.py at f4d0062c (the commit the shared traces come from):
 *     CommunicateKernelGroupingPattern  (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
 *     MemoryKernelGroupingPattern       (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
 *     KERNEL_LAUNCH_CATEGORY_PATTERN    (cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction)
 *   hta/common/trace_symbol_table.py, TraceSymbolTable.get_runtime_launch_events_query (the
 *   version with the MTIA and ROCm names; not stored at f4d0062c): the launches by name (its
 *   cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel and "runFunction -
 *   job_prep_and_submit_for_execution" are taken by the pattern already).
 * HTA tests COMMUNICATION first (get_kernel_type), so (^hip) takes a device row named hipMemcpy...
 * before MemoryKernelGroupingPattern's (hip)? can: that is HTA's result, and kept. */

enum { DEF_END, DEF_PREFIX, DEF_AFTER, DEF_PLUS, DEF_EQ };
typedef struct def_alt {
    int op;
    const char *a, *b;
} def_alt;

static const def_alt def_communication[] = {
    {DEF_PREFIX, "nccl", NULL},    /* (^nccl.*) */
    {DEF_PREFIX, "hip", NULL},     /* (^hip) */
    {DEF_PREFIX, "hccl", NULL},    /* (^hccl) */
    {DEF_AFTER, "", "ncclKernel"}, /* (.*ncclKernel.*) */
    {DEF_END, NULL, NULL},
};
static const def_alt def_memory[] = {
    {DEF_PREFIX, "Memcpy", NULL}, {DEF_PREFIX, "hipMemcpy", NULL}, /* (^(hip)?Memcpy) */
    {DEF_PREFIX, "Memset", NULL}, {DEF_PREFIX, "hipMemset", NULL}, /* (^(hip)?Memset) */
    {DEF_PREFIX, "dma", NULL},                                     /* (^dma) */
    {DEF_END, NULL, NULL},
};
static const def_alt def_launch[] = {
    /* KERNEL_LAUNCH_CATEGORY_PATTERN */
    {DEF_AFTER, "cuda", "LaunchKernel"}, /* (cuda.*LaunchKernel) */
    {DEF_PREFIX, "cuLaunchKernel", NULL},
    {DEF_PREFIX, "runFunction", NULL},
    /* get_runtime_launch_events_query's names that the pattern does not take */
    {DEF_EQ, "cudaMemcpyAsync", NULL},
    {DEF_EQ, "cudaMemsetAsync", NULL},
    {DEF_EQ, "hipLaunchKernel", NULL},
    {DEF_EQ, "hipExtModuleLaunchKernel", NULL},
    {DEF_EQ, "hipMemcpyAsync", NULL},
    {DEF_EQ, "hipMemsetAsync", NULL},
    {DEF_EQ, "hipMemcpyWithStream", NULL},
    {DEF_END, NULL, NULL},
};

/* The categories of HTA's MTIA branch (_filter_irrelevant_gpu_kernels, see build_rank), of
 * hta/common/types.py at f4d0062c, which TraceSymbolTable.get_symbol_ids applies with pandas'
 * str.match (re.match):
 *   CPU_EVENTS_CATEGORY_PATTERN  (^cpu_op)|(^user_annotation$)|(^(.+)_runtime)
 *   KERNEL_CATEGORY_PATTERN      (kernel)|(gpu_mem.+)|(mtia_ccp_events)
 * ("$" also takes a final newline.) */
static const def_alt def_cpu_cat[] = {
    {DEF_PREFIX, "cpu_op", NULL}, /* (^cpu_op) */
    {DEF_EQ, "user_annotation", NULL},
    {DEF_EQ, "user_annotation\n", NULL}, /* (^user_annotation$) */
    {DEF_PLUS, "", "_runtime"},          /* (^(.+)_runtime) */
    {DEF_END, NULL, NULL},
};
static const def_alt def_kernel_cat[] = {
    {DEF_PREFIX, "kernel", NULL},          /* (kernel) */
    {DEF_PLUS, "gpu_mem", ""},             /* (gpu_mem.+) */
    {DEF_PREFIX, "mtia_ccp_events", NULL}, /* (mtia_ccp_events) */
    {DEF_END, NULL, NULL},
};

/* Does one of the alternatives d[] take name (as re.match would)? */
static int def_match(const def_alt *d, const char *name) {
    for (; d->op != DEF_END; d++) {
        size_t n = strlen(d->a);
        if (d->op == DEF_EQ) {
            if (strcmp(name, d->a) == 0) return 1;
        } else if (strncmp(name, d->a, n) == 0) {
            if (d->op == DEF_PREFIX) return 1;
            const char *from = name + n;
            if (d->op == DEF_PLUS) { /* one character, not a newline, first */
                if (*from == '\0' || *from == '\n') continue;
                from++;
            }
            const char *hit = strstr(from, d->b);
            if (hit && memchr(name + n, '\n', (size_t)(hit - (name + n))) == NULL) return 1;
        }
    }
    return 0;
}

static int is_memory_name(const char *name) {
    return def_match(def_memory, name);
}
static int is_cpu_cat(const char *cat) {
    return def_match(def_cpu_cat, cat);
}
static int is_kernel_cat(const char *cat) {
    return def_match(def_kernel_cat, cat);
}

int cli_hta_kernel_type(const char *name) {
    /* HTA's get_kernel_type order: communication, then memory, then computation. */
    if (def_match(def_communication, name)) return CLI_HTA_COMMUNICATION;
    if (def_match(def_memory, name)) return CLI_HTA_MEMORY;
    return CLI_HTA_COMPUTATION;
}

int cli_hta_is_launch(const char *name) {
    return def_match(def_launch, name);
}

/* ---- merging, output ----------------------------------------------------------------------- */

void cli_hta_sort_i64(int64_t *v, size_t n) {
    qsort(v, n, sizeof *v, by_i64);
}

long cli_hta_find_i64(const int64_t *v, size_t n, int64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x ? (long)lo : -1;
}

const char *cli_hta_type_name(int type) {
    return type == CLI_HTA_COMMUNICATION ? "COMMUNICATION"
           : type == CLI_HTA_MEMORY      ? "MEMORY"
                                         : "COMPUTATION";
}

size_t cli_hta_merge(const cli_hta_rank *r,
                     int (*keep)(const cli_hta_rank *, const cli_hta_row *, void *), void *arg,
                     int64_t *out) {
    size_t k = 0;
    int64_t cummax = 0; /* the largest end of the rows so far */
    int seen = 0;
    for (size_t i = 0; i < r->count; i++) {
        const cli_hta_row *w = &r->rows[i];
        if (keep && !keep(r, w, arg)) continue;
        if (!seen || w->ts > cummax) {
            out[2 * k] = w->ts;
            out[2 * k + 1] = w->end;
            k++;
        } else if (w->end > out[2 * k - 1]) {
            out[2 * k - 1] = w->end;
        }
        if (!seen || w->end > cummax) cummax = w->end;
        seen = 1;
    }
    return k;
}

/* ---- per-rank commands ----------------------------------------------------------------------
 * A per_rank command's run over one rank alone gives that rank's rows of the whole run, and its
 * messages, but for the times, which are relative to the set's min_ts (known when every rank is
 * read). rows_reduce runs it, on the thread that read the rank, into recording tables: each row
 * becomes its typed cells (CLI_HTA_TS ones with the rank's raw time), and what the run writes to
 * cli_hta_err() is kept. The reduction, in one buffer (it may travel under MPI):
 *   rows_head; the messages (msg_len bytes, padded to 8); the rows, each its table's index (a
 *   uint32) then its cells, each a kind byte and an int64, a double, or a uint32 length and text.
 * rows_replay then writes each rank's messages to stderr and adds its rows to the real tables,
 * rank after rank, stopping after a rank whose run failed, as the run over the set would. */
typedef struct rows_head {
    int32_t status; /* the run's result over the rank (0, CLI_HTA_REPORTED, a STROBE_E* code) */
    uint32_t pad;
    uint64_t msg_len;
} rows_head;

static _Thread_local FILE *rows_err;

FILE *cli_hta_err(void) {
    return rows_err ? rows_err : stderr;
}

static int rec_row(md_wbuf *r, uint32_t index, size_t n, const cli_hta_cell *cells) {
    md_put(r, &index, sizeof index);
    for (size_t c = 0; c < n; c++) {
        const cli_hta_cell *v = &cells[c];
        uint8_t kind = (uint8_t)v->kind;
        md_put(r, &kind, 1);
        if (v->kind == CLI_HTA_CELL_TEXT) {
            const char *text = v->s ? v->s : "";
            size_t len = strlen(text) + 1; /* with its NUL, read in place */
            if (len > UINT32_MAX) return STROBE_EINVAL;
            uint32_t l32 = (uint32_t)len;
            md_put(r, &l32, sizeof l32);
            md_put(r, text, len);
        } else if (v->kind == CLI_HTA_CELL_INT || v->kind == CLI_HTA_CELL_TS) {
            md_put(r, &v->i, sizeof v->i);
        } else {
            md_put(r, &v->d, sizeof v->d);
        }
    }
    return r->oom ? STROBE_ENOMEM : 0;
}

static int rows_reduce(const cli_hta_command *c, void *ctx, const cli_hta_rank *r, int restricted,
                       uint8_t **out, size_t *len) {
    md_wbuf rec = {0};
    cli_hta_table t[CLI_HTA_MAX_TABLES] = {{0}};
    size_t n = c->ntables < CLI_HTA_MAX_TABLES ? c->ntables : CLI_HTA_MAX_TABLES;
    for (size_t k = 0; k < n; k++) {
        const cli_hta_columns *h = &c->tables[k];
        t[k] = (cli_hta_table){h->cols, h->text, h->ncols, NULL, 0, 0, h->heads};
        t[k].rec = &rec;
        t[k].rec_index = (uint32_t)k;
    }
    char *msg = NULL;
    size_t msg_len = 0;
    FILE *err = open_memstream(&msg, &msg_len);
    if (err == NULL) return STROBE_ENOMEM;
    /* The rank alone, with the reduction's restriction; HTA's MTIA branch is never reduced. */
    cli_hta_set one = {(cli_hta_rank *)r, 1, restricted, 0, 0};
    rows_err = err;
    int status = c->run(&one, ctx, t);
    rows_err = NULL;
    int rc = fclose(err) == 0 && msg ? 0 : STROBE_ENOMEM;
    rows_head head = {status, 0, msg_len};
    size_t total = sizeof head + RED_PAD(msg_len) + rec.len;
    uint8_t *b = rc == 0 ? calloc(1, total) : NULL;
    if (b) {
        memcpy(b, &head, sizeof head);
        if (msg_len) memcpy(b + sizeof head, msg, msg_len);
        if (rec.len) memcpy(b + sizeof head + RED_PAD(msg_len), rec.p, rec.len);
    }
    free(msg);
    free(rec.p);
    if (b == NULL) return STROBE_ENOMEM;
    *out = b;
    *len = total;
    return 0;
}

/* The next n bytes of b into p. @return 0, or -1 past the end. */
static int rec_get(md_rbuf *b, void *p, size_t n) {
    const uint8_t *s = md_take(b, n);
    if (s == NULL) return -1;
    memcpy(p, s, n);
    return 0;
}

/* Rank r's recorded rows into t[0..nt), its messages to stderr. @return the run's status, or
 * STROBE_EINVAL for a malformed reduction (it may come from another process). */
static int replay_rank(const cli_hta_rank *r, cli_hta_table *t, size_t nt) {
    rows_head head;
    md_rbuf b = {r->red, r->red_len, 0, 0};
    const uint8_t *msg = NULL;
    if (rec_get(&b, &head, sizeof head) || head.msg_len > b.len ||
        (msg = md_take(&b, RED_PAD(head.msg_len))) == NULL)
        return STROBE_EINVAL;
    fwrite(msg, 1, head.msg_len, stderr);
    int rc = 0;
    while (rc == 0 && b.at < b.len) {
        uint32_t index;
        cli_hta_cell cells[CLI_HTA_MAX_COLS];
        if (rec_get(&b, &index, sizeof index) || index >= nt || t[index].ncols > CLI_HTA_MAX_COLS)
            return STROBE_EINVAL;
        for (size_t c = 0; c < t[index].ncols; c++) {
            uint8_t kind;
            cli_hta_cell *v = &cells[c];
            memset(v, 0, sizeof *v);
            if (rec_get(&b, &kind, 1)) return STROBE_EINVAL;
            v->kind = kind;
            if (kind == CLI_HTA_CELL_TEXT) {
                uint32_t l32;
                const uint8_t *text = NULL;
                /* The text with its NUL, read where it lies. */
                if (rec_get(&b, &l32, sizeof l32) || l32 == 0 ||
                    (text = md_take(&b, l32)) == NULL || text[l32 - 1] != '\0')
                    return STROBE_EINVAL;
                v->s = (const char *)text;
            } else if (kind == CLI_HTA_CELL_INT || kind == CLI_HTA_CELL_TS) {
                if (rec_get(&b, &v->i, sizeof v->i)) return STROBE_EINVAL;
            } else if (kind == CLI_HTA_CELL_PCT || kind == CLI_HTA_CELL_NUM) {
                if (rec_get(&b, &v->d, sizeof v->d)) return STROBE_EINVAL;
            } else {
                return STROBE_EINVAL;
            }
        }
        rc = cli_hta_table_row(&t[index], t[index].ncols, cells);
    }
    return rc ? rc : head.status;
}

/* Each rank's reduction is freed once its rows are in the tables: the peak is then about the
 * larger of the reductions and the tables (a job's queue --series has hundreds of MB of each), not
 * both. */
static int rows_replay(cli_hta_set *s, cli_hta_table *t, size_t nt) {
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        rc = replay_rank(&s->ranks[k], t, nt);
        free(s->ranks[k].red);
        s->ranks[k].red = NULL;
        s->ranks[k].red_len = 0;
    }
    return rc;
}

/* ---- tables -------------------------------------------------------------------------------- */

int cli_hta_table_add(cli_hta_table *t, const char *const *cells) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        size_t *v = realloc(t->cells, cap * t->ncols * sizeof *v);
        if (v == NULL) return STROBE_ENOMEM;
        t->cells = v;
        t->cap = cap;
    }
    for (size_t c = 0; c < t->ncols; c++) {
        const char *v = cells[c] ? cells[c] : "";
        t->cells[t->n * t->ncols + c] = t->text_buf.len;
        md_put(&t->text_buf, v, strlen(v) + 1);
    }
    if (t->text_buf.oom) return STROBE_ENOMEM;
    t->n++;
    return 0;
}

/* Cell i's text. */
static const char *cell(const cli_hta_table *t, size_t i) {
    return (const char *)t->text_buf.p + t->cells[i];
}

/* The table format's header of column `col`: HTA's name with the unit of its values. HTA's times
 * are the trace's microseconds, but its names say no unit (idle_time) or, for the kernels of
 * get_gpu_kernel_breakdown, "(ns)" (renamed "(us)" in HTA's later releases): a reader of the
 * table then sees "(us)". CSV and JSON keep HTA's names, which scripts look up. */
static const char *table_head(const char *col) {
    static const char *const heads[][2] = {
        {"idle_time", "idle_time (us)"},
        {"compute_time", "compute_time (us)"},
        {"non_compute_time", "non_compute_time (us)"},
        {"kernel_time", "kernel_time (us)"},
        {"sum", "sum (us)"},
        {"sum (ns)", "sum (us)"},
        {"max (ns)", "max (us)"},
        {"min (ns)", "min (us)"},
        {"mean (ns)", "mean (us)"},
        {"stddev", "stddev (us)"},
        {"cpu_duration", "cpu_duration (us)"},
        {"gpu_duration", "gpu_duration (us)"},
        {"launch_delay", "launch_delay (us)"},
        {"duration_at_max_queue_length", "duration_at_max_queue_length (us)"},
        {"ts", "ts (us)"},
        {"dur", "dur (us)"},
        {"end", "end (us)"},
    };
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++)
        if (strcmp(col, heads[k][0]) == 0) return heads[k][1];
    return col;
}

void cli_hta_table_print(const cli_hta_table *t, int format, FILE *out) {
    size_t nc = t->ncols < CLI_HTA_MAX_COLS ? t->ncols : CLI_HTA_MAX_COLS;
    if (format == CLI_TABLE) {
        size_t w[CLI_HTA_MAX_COLS] = {0};
        for (size_t c = 0; c < nc; c++) {
            w[c] = strobe__utf8_len(t->heads ? t->heads[c] : table_head(t->cols[c])) + 2;
            for (size_t r = 0; r < t->n; r++) {
                size_t len = strobe__utf8_len(cli_esc(cell(t, r * nc + c))) + 2;
                if (len > w[c]) w[c] = len;
            }
            if (t->text[c] && w[c] > 62) w[c] = 62;
        }
        strobe__table_separator(out, w, nc);
        for (size_t c = 0; c < nc; c++)
            strobe__table_cell(out, t->heads ? t->heads[c] : table_head(t->cols[c]), w[c],
                               t->text[c], 0);
        fputc('\n', out);
        strobe__table_separator(out, w, nc);
        for (size_t r = 0; r < t->n; r++) {
            for (size_t c = 0; c < nc; c++)
                strobe__table_cell(out, cli_esc(cell(t, r * nc + c)), w[c], t->text[c],
                                   t->text[c] ? 59 : 0);
            fputc('\n', out);
        }
        strobe__table_separator(out, w, nc);
    } else if (format == CLI_CSV) {
        for (size_t c = 0; c < nc; c++) {
            if (c) fputc(',', out);
            cli_csv_str(out, t->cols[c]);
        }
        fputc('\n', out);
        for (size_t r = 0; r < t->n; r++) {
            for (size_t c = 0; c < nc; c++) {
                if (c) fputc(',', out);
                cli_csv_str(out, cell(t, r * nc + c));
            }
            fputc('\n', out);
        }
    } else {
        fputc('[', out);
        for (size_t r = 0; r < t->n; r++) {
            fputs(r ? ",\n {" : "\n {", out);
            for (size_t c = 0; c < nc; c++) {
                const char *v = cell(t, r * nc + c);
                if (c) fputs(", ", out);
                cli_json_str(out, t->cols[c]);
                fputs(": ", out);
                if (t->text[c])
                    cli_json_str(out, v);
                else
                    fputs(v[0] ? v : "null", out);
            }
            fputc('}', out);
        }
        fputs(t->n ? "\n]\n" : "]\n", out);
    }
}

void cli_hta_table_free(cli_hta_table *t) {
    free(t->cells);
    free(t->text_buf.p);
    t->cells = NULL;
    t->n = t->cap = 0;
    memset(&t->text_buf, 0, sizeof t->text_buf);
}

int cli_hta_table_row(cli_hta_table *t, size_t n, const cli_hta_cell *cells) {
    if (n != t->ncols || n > CLI_HTA_MAX_COLS) return STROBE_EINVAL;
    if (t->rec) return rec_row(t->rec, t->rec_index, n, cells);
    char b[CLI_HTA_MAX_COLS][40];
    const char *text[CLI_HTA_MAX_COLS];
    for (size_t c = 0; c < n; c++) {
        const cli_hta_cell *v = &cells[c];
        text[c] = b[c];
        if (v->kind == CLI_HTA_CELL_TEXT)
            text[c] = v->s;
        else if (v->kind == CLI_HTA_CELL_INT)
            snprintf(b[c], sizeof b[c], "%" PRId64, v->i);
        else if (v->kind == CLI_HTA_CELL_TS)
            snprintf(b[c], sizeof b[c], "%" PRId64, v->i - t->t0);
        else if (!isfinite(v->d))
            b[c][0] = '\0';
        else if (v->kind == CLI_HTA_CELL_PCT)
            snprintf(b[c], sizeof b[c], "%.2f", v->d);
        else
            snprintf(b[c], sizeof b[c], "%.15g", v->d);
    }
    return cli_hta_table_add(t, text);
}

void cli_hta_emit(FILE *out, int format, const cli_hta_table *t, const char *const *keys,
                  size_t n) {
    int object = n > 1 && format == CLI_JSON;
    if (object) fputc('{', out);
    for (size_t k = 0; k < n; k++) {
        if (k) fputs(object ? ", " : "\n", out);
        if (object) {
            cli_json_str(out, keys[k]);
            fputs(": ", out);
        }
        cli_hta_table_print(&t[k], format, out);
    }
    if (object) fputs("}\n", out);
}

/* ---- the commands' frame ------------------------------------------------------------------- */

/* Runs command c over the loaded traces s, or over their reductions when reduced is s (then
 * c->run_reduced, or for a per_rank command its rows replayed, which frees the reductions), and
 * prints its tables in format. @return as c->run. */
static int run_emit(FILE *out, int format, const cli_hta_command *c, const cli_hta_set *s,
                    void *ctx, cli_hta_set *reduced) {
    cli_hta_table t[CLI_HTA_MAX_TABLES] = {{0}};
    const char *keys[CLI_HTA_MAX_TABLES] = {0};
    size_t n = c->ntables < CLI_HTA_MAX_TABLES ? c->ntables : CLI_HTA_MAX_TABLES;
    for (size_t k = 0; k < n; k++) {
        const cli_hta_columns *h = &c->tables[k];
        t[k] = (cli_hta_table){h->cols, h->text, h->ncols, NULL, 0, 0, h->heads};
        t[k].t0 = s->min_ts;
        keys[k] = h->key;
    }
    int work = !reduced      ? c->run(s, ctx, t)
               : c->per_rank ? rows_replay(reduced, t, n)
                             : c->run_reduced(s, ctx, t);
    if (work == 0) cli_hta_emit(out, format, t, keys, n);
    for (size_t k = 0; k < n; k++)
        cli_hta_table_free(&t[k]);
    return work;
}

int cli_hta_json(FILE *out, const cli_hta_command *c, const cli_hta_set *s, void *ctx) {
    return run_emit(out, CLI_JSON, c, s, ctx, NULL);
}

int cli_hta_main(const cli_hta_command *c, void *ctx, int argc, char **argv) {
    return cli_hta_main_rows(c, ctx, argc, argv, 0);
}

int cli_hta_main_rows(const cli_hta_command *c, void *ctx, int argc, char **argv, int no_cpu_rows) {
    int format = CLI_TABLE, quiet = 0, first = 0;
    for (int o; (o = cli_getopt(argc, argv, c->shortopts, c->options, &first)) != -1;) {
        if (o == 'h') return cli_help(c->usage);
        if (o == 'V') return cli_version();
        if (o == 'q') {
            quiet = 1;
        } else if (o == 'j') {
            int rc = cli_parse_jobs(c->name, optarg);
            if (rc) return rc;
        } else if (o == 'f') {
            format = cli_parse_format(optarg);
            if (format < 0) return cli_usage_error(c->name, "unknown --format", optarg);
        } else {
            int rc = c->option && o != '?' && o != ':' ? c->option(ctx, o, optarg)
                                                       : CLI_HTA_UNKNOWN_OPTION;
            if (rc == CLI_HTA_UNKNOWN_OPTION) return cli_option_error(c->name, o, argv, c->options);
            if (rc) return rc;
        }
    }
    if (first >= argc) return cli_usage_error(c->name, "give a trace or a folder", NULL);
    cli_hta_set s;
    char **paths = argv + first;
    size_t n = (size_t)(argc - first);
    const cli_hta_command *red = (c->reduce && c->run_reduced) || c->per_rank ? c : NULL;
    int rc = load_set(&s, c->name, paths, n, quiet, no_cpu_rows, red, ctx, 0);
    if (rc == RED_FALLBACK) {
        red = NULL;
        rc = load_set(&s, c->name, paths, n, quiet, no_cpu_rows, NULL, NULL, 1);
    }
    if (rc != 0) return CLI_BAD_INPUT;
    int work = run_emit(stdout, format, c, &s, ctx, red ? &s : NULL);
    cli_hta_free(&s);
    if (work == CLI_HTA_REPORTED) return CLI_BAD_INPUT;
    return cli_finish(c->name, argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}

void cli_hta_pct(char *buf, size_t n, double x, int digits) {
    if (!isfinite(x))
        buf[0] = '\0';
    else
        snprintf(buf, n, "%.*f", digits, x);
}

double cli_hta_quantile(int64_t *v, size_t n, double q) {
    qsort(v, n, sizeof *v, by_i64);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : n - 1;
    double t = pos - (double)lo, a = (double)v[lo], b = (double)v[hi];
    return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

/* Sum, max, min, mean, std (n - 1; 0 for one value) of v[0..n), n > 0. */
static void describe(const int64_t *v, size_t n, cli_hta_named *o) {
    o->sum = 0;
    o->max = o->min = v[0];
    for (size_t k = 0; k < n; k++) {
        o->sum += v[k];
        if (v[k] > o->max) o->max = v[k];
        if (v[k] < o->min) o->min = v[k];
    }
    o->mean = (double)o->sum / (double)n;
    double ss = 0;
    for (size_t k = 0; k < n; k++)
        ss += ((double)v[k] - o->mean) * ((double)v[k] - o->mean);
    o->std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
}

static int by_dur_name(const void *a, const void *b) {
    return strcmp(((const cli_hta_dur *)a)->name, ((const cli_hta_dur *)b)->name);
}

static int by_sum(const void *a, const void *b) {
    const cli_hta_named *x = a, *y = b;
    if (x->sum != y->sum) return x->sum > y->sum ? -1 : 1;
    return strcmp(x->name, y->name);
}

size_t cli_hta_name_table(cli_hta_dur *d, size_t n, int64_t *v, cli_hta_named *names) {
    size_t nn = 0;
    qsort(d, n, sizeof *d, by_dur_name);
    for (size_t i = 0, e; i < n; i = e) {
        for (e = i; e < n && strcmp(d[e].name, d[i].name) == 0; e++)
            v[e - i] = d[e].dur;
        describe(v, e - i, &names[nn]);
        names[nn++].name = d[i].name;
    }
    qsort(names, nn, sizeof *names, by_sum);
    return nn;
}

long cli_hta_name_others(cli_hta_named *names, size_t nn, int64_t *v, size_t num, double ratio,
                         int (*keep)(const void *ctx, const char *name), const void *ctx) {
    if (nn <= num) return (long)nn;
    int64_t *c = malloc(nn * sizeof *c);
    if (c == NULL) return STROBE_ENOMEM;
    int64_t cum = 0;
    for (size_t k = 0; k < nn; k++)
        c[k] = v[k] = cum += names[k].sum;
    double q = cli_hta_quantile(c, nn, ratio);
    free(c);
    size_t kept = 0, other = 0;
    for (size_t k = 0; k < nn; k++) {
        if (((double)v[k] > q || k >= num) && !(keep && keep(ctx, names[k].name))) {
            v[other++] = names[k].sum;
            continue;
        }
        cli_hta_named *o = &names[kept++];
        *o = names[k];
        o->max = o->min = o->sum;
        o->mean = (double)o->sum;
        o->std = 0;
    }
    if (other) {
        describe(v, other, &names[kept]);
        names[kept++].name = "others";
    }
    return (long)kept;
}

void cli_hta_shorten_name(const char *name, char *out) {
    size_t n = 0;
    for (const char *c = name; *c; c++) {
        if (c[0] == '-' && c[1] == '>') {
            c++;
        } else if (*c == '>' || *c == ')') {
            char open = *c == '>' ? '<' : '(';
            while (n && out[n - 1] != open)
                n--;
            if (n) n--;
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
    char *last = strrchr(out, ' ');
    if (last) memmove(out, last + 1, strlen(last + 1) + 1);
}
