/* cmd_steps.c: `strobe steps TRACE`, the step time breakdown of the TensorBoard profiler plugin's
 * overview page (torch_tb_profiler: event_parser.py, overall_parser.py, range_utils.py).
 *
 * The plugin's definitions, as this file uses them (times are those of the trace):
 *   - Roles of X events: Kernel (kernel; a kernel whose "External id" is that of a
 *     communication operator is Communication), Memcpy, Memset, Runtime (the runtime's and
 *     driver's calls: the plugin's category table knows "Runtime" only; strobe takes cuda_runtime
 *     and cuda_driver too), DataLoader (an operator or annotation named
 *     "enumerate(DataLoader)#...__next__" or "enumerate(DataPipe)#..."), Communication
 *     (operators named nccl:/gloo: broadcast, reduce, all_reduce, all_gather, reduce_scatter),
 *     CPU Exec (the other operators, user and gpu user annotations, and category "Python"
 *     events; python_function events have no role). Each role's ranges are merged.
 *   - Steps: the CPU's ProfilerStep#N ranges, in time order (gpu_user_annotation copies of them
 *     are not steps here). Without any, one step "0" from the first start to the last end of
 *     the CPU operators. When device work is found: each runtime call that lies wholly inside
 *     a step's range (a two-way walk over the steps and the calls sorted by start) gives its
 *     device work (same correlation id) to that step; a step then ends at the later of its CPU
 *     end and its device work's last end, and starts no earlier than the previous step's end
 *     (the first step: than the latest end of unclaimed device work ending before the first
 *     step's first device work). Trailing steps that claim no device work are dropped, and the
 *     last step too when it claims under 80% of the device work of the step before it (the
 *     profiler may have missed its kernels).
 *   - Breakdown: within the steps' union, each role takes the time it covers that the roles
 *     before it did not, in the order Kernel, Memcpy, Memset, Communication, Runtime,
 *     DataLoader, CPU Exec; Other is what is left; each step gets its part of each. Total is
 *     the step's (adjusted) length.
 *
 * With --overview, the rest of the plugin's overview: the average step, the GPU Summary (tb.h)
 * and the Performance Recommendation.
 *
 * Contents: usage, ranges, roles, steps, output, the overview. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "model/model.h"
#include "rows.h"
#include "model/step.h"
#include "strobe/error.h"
#include "tb.h"
#include "util/table.h"

const char cmd_steps_usage[] =
    "NAME\n"
    "    strobe steps - step time breakdown (the TensorBoard profiler plugin's overview)\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe steps [OPTIONS] TRACE\n"
    "    strobe steps TRACE [-f table|csv|json] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (\"-\" is standard input) and prints one row per ProfilerStep#N, as the\n"
    "    TensorBoard profiler plugin's overview page: the time (us) of the step spent in\n"
    "    Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec and Other, and\n"
    "    Total, the step's length. Each moment of a step counts once, for the first of these\n"
    "    that is busy then (kernels first, CPU operators last); Other is what none covers.\n"
    "    As the plugin does, a step that launched device work ends when its last kernel, copy\n"
    "    or memset ends (and the next step starts no earlier), and trailing steps whose device\n"
    "    work the profiler may have missed are left out. A trace without ProfilerStep ranges\n"
    "    is one step, 0, from its first CPU operator to its last. Malformed events are\n"
    "    skipped; standard error says how many.\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of row objects); times in\n"
    "                   microseconds\n"
    "    --overview     the plugin's whole overview: the steps, the Average Step Time of\n"
    "                   each part (us, and its share of the step), the GPU Summary and the\n"
    "                   Performance Recommendation (table or json: an object with \"steps\",\n"
    "                   \"average\", \"gpus\" and \"recommendations\"). Per device (a\n"
    "                   kernel's \"device\" arg): its name, memory (GB) and compute\n"
    "                   capability from deviceProperties; GPU Utilization, the share of the\n"
    "                   span from the first step's start to the last step's end in which a\n"
    "                   kernel runs; Est. SM Efficiency, over that span, the sum of the\n"
    "                   running kernels' \"blocks per SM\" capped at 100%; Est. Achieved\n"
    "                   Occupancy, the kernels' \"est. achieved occupancy %\" weighted by\n"
    "                   their time in the span; Kernel Time using Tensor Cores, the share of\n"
    "                   kernel time in kernels whose names show Tensor Cores (the plugin's\n"
    "                   list: h884, s1688, xmma_gemm ...). The recommendations are the\n"
    "                   plugin's, with its thresholds: DataLoader over 5% of the step time,\n"
    "                   communication over 10%, a GPU under 50% utilization, no Tensor Core\n"
    "                   kernel while Tensor Core eligible operators launch kernels (compute\n"
    "                   capability 7 or more), DataParallel on several GPUs, DDP without NCCL,\n"
    "                   a GPU's peak \"Total Allocated\" over 90% of its memory\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read) or bad usage.\n";

/* ---- ranges: sorted, disjoint [s, e) lists ------------------------------------------------- */

typedef struct rng {
    int64_t s, e;
} rng;

typedef struct rlist {
    rng *r;
    size_t n, cap;
} rlist;

static int push(rlist *l, int64_t s, int64_t e) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        rng *r = realloc(l->r, cap * sizeof *r);
        if (r == NULL) return STROBE_ENOMEM;
        l->r = r;
        l->cap = cap;
    }
    l->r[l->n++] = (rng){s, e};
    return 0;
}

static int by_start(const void *a, const void *b) {
    const rng *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* Sorts and merges in place: a range that starts at or before the current end joins it. */
static void merge(rlist *l) {
    if (l->n == 0) return;
    qsort(l->r, l->n, sizeof *l->r, by_start);
    size_t k = 0;
    for (size_t i = 1; i < l->n; i++) {
        if (l->r[i].s <= l->r[k].e) {
            if (l->r[i].e > l->r[k].e) l->r[k].e = l->r[i].e;
        } else {
            l->r[++k] = l->r[i];
        }
    }
    l->n = k + 1;
}

/* out = a ∩ b, and a = a \ b (a, b merged). */
static int take(rlist *a, const rlist *b, rlist *out) {
    rlist rest = {0};
    size_t j = 0;
    int err = 0;
    for (size_t i = 0; i < a->n && !err; i++) {
        int64_t s = a->r[i].s, e = a->r[i].e;
        while (j < b->n && b->r[j].e <= s)
            j++;
        for (size_t k = j; k < b->n && b->r[k].s < e && !err; k++) {
            int64_t is = b->r[k].s > s ? b->r[k].s : s, ie = b->r[k].e < e ? b->r[k].e : e;
            if (is > s) err = push(&rest, s, is);
            if (!err && ie > is) err = push(out, is, ie);
            s = ie;
        }
        if (!err && e > s) err = push(&rest, s, e);
    }
    free(a->r);
    *a = rest;
    return err;
}

/* The length of l within [s, e). */
static int64_t within(const rlist *l, int64_t s, int64_t e) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->r[mid].e <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t sum = 0;
    for (size_t k = lo; k < l->n && l->r[k].s < e; k++) {
        int64_t is = l->r[k].s > s ? l->r[k].s : s, ie = l->r[k].e < e ? l->r[k].e : e;
        if (ie > is) sum += ie - is;
    }
    return sum;
}

/* ---- roles --------------------------------------------------------------------------------- */

enum { R_KERNEL, R_MEMCPY, R_MEMSET, R_COMM, R_RUNTIME, R_DATALOADER, R_CPU, R_OTHER, R_COUNT };
static const char *const role_names[R_COUNT] = {
    "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"};

static int is_comm_name(const char *n) {
    static const char *const ops[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                      "reduce_scatter"};
    if (strncmp(n, "nccl:", 5) != 0 && strncmp(n, "gloo:", 5) != 0) return 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(n + 5, ops[k]) == 0) return 1;
    return 0;
}

static int is_dataloader_name(const char *n) {
    size_t len = strlen(n);
    if (strncmp(n, "enumerate(DataPipe)#", 20) == 0) return 1;
    return strncmp(n, "enumerate(DataLoader)#", 22) == 0 && len >= 9 &&
           strcmp(n + len - 9, ".__next__") == 0;
}

/* The plugin's CPU-side types: Operator, user annotations (both kinds), and category Python. */
static int is_cpu_kind(const md_model *m, int kind, uint32_t cat) {
    return kind == MD_CPU_OP || kind == MD_USER_ANNOTATION || kind == MD_GPU_USER_ANNOTATION ||
           (kind == MD_OTHER && strcasecmp(md_str(m, cat), "python") == 0);
}

static int is_cpu_type(const md_model *m, const md_event *e) {
    return is_cpu_kind(m, e->kind, e->cat);
}

/* The role of a timed, well-formed X event of kind `kind` on the CPU side (runtime calls and
 * CPU-type events, as analyse() gives them), or -1 (steps, device work, the rest). */
static int cpu_role(const md_model *m, int kind, uint32_t cat, const char *name) {
    int64_t n;
    if (kind == MD_RUNTIME || kind == MD_DRIVER) return R_RUNTIME;
    if (!is_cpu_kind(m, kind, cat)) return -1;
    if ((kind == MD_CPU_OP || kind == MD_USER_ANNOTATION || kind == MD_GPU_USER_ANNOTATION) &&
        md_step_number(name, &n))
        return -1; /* a step, or the device's copy of one */
    if (kind != MD_OTHER && is_dataloader_name(name)) return R_DATALOADER;
    return is_comm_name(name) ? R_COMM : R_CPU;
}

/* A thread's next CPU-side role range at or after order[*k] (see cpu_role_ranges), with its
 * event, role and [s, e). @return 1, or 0 at the thread's end. */
typedef struct head {
    int64_t s, e;
    uint32_t ev, t;
    int role;
    size_t k;
} head;

static int next_range(const md_model *m, head *h) {
    const md_thread *th = &m->threads[h->t];
    for (; h->k < th->count; h->k++) {
        uint32_t i = th->order[h->k];
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        md_class c = md_class_of(m, i);
        if (c.ph != 'X') continue;
        int role = cpu_role(m, c.kind, c.cat, md_str(m, md_name_of(m, i)));
        if (role < 0) continue;
        int64_t s = md_ts(m, i), e = s + md_dur(m, i);
        if (e < s) continue;
        *h = (head){s, e, i, h->t, role, h->k + 1};
        return 1;
    }
    return 0;
}

/* Restores the min-heap (by s) h[0..n) from position at downwards. */
static void sift_down(head *h, size_t n, size_t at) {
    for (;;) {
        size_t l = 2 * at + 1, r = l + 1, min = at;
        if (l < n && h[l].s < h[min].s) min = l;
        if (r < n && h[r].s < h[min].s) min = r;
        if (min == at) return;
        head tmp = h[at];
        h[at] = h[min];
        h[min] = tmp;
        at = min;
    }
}

/* Pushes the CPU-side role ranges (runtime calls and CPU-type events) to roles[], merged as they
 * come, and marks in done (a bit per event) the events so taken: the threads' events, each
 * thread's sorted by start, are walked together by start (a heap of the threads' next ranges),
 * and a range that starts by the end of its role's open range joins it. The roles' union, all that
 * the breakdown reads of them, is the same as with one range per event, and the lists hold a range
 * per stretch in which some thread is busy in that role, not one per operator. */
static int cpu_role_ranges(const md_model *m, uint64_t *done, rlist *roles) {
    head *h = malloc((m->thread_count ? m->thread_count : 1) * sizeof *h);
    if (h == NULL) return STROBE_ENOMEM;
    size_t n = 0;
    for (size_t t = 0; t < m->thread_count; t++) {
        h[n] = (head){.t = (uint32_t)t, .k = 0};
        if (next_range(m, &h[n])) n++;
    }
    for (size_t k = n / 2; k-- > 0;)
        sift_down(h, n, k);
    rng cur[R_COUNT];
    int open[R_COUNT] = {0}, err = 0;
    while (n && !err) {
        head x = h[0];
        done[x.ev / 64] |= (uint64_t)1 << (x.ev % 64);
        if (open[x.role] && x.s <= cur[x.role].e) {
            if (x.e > cur[x.role].e) cur[x.role].e = x.e;
        } else {
            if (open[x.role]) err = push(&roles[x.role], cur[x.role].s, cur[x.role].e);
            cur[x.role] = (rng){x.s, x.e};
            open[x.role] = 1;
        }
        if (!next_range(m, &h[0])) h[0] = h[--n];
        sift_down(h, n, 0);
    }
    for (int r = 0; r < R_COUNT && !err; r++)
        if (open[r]) err = push(&roles[r], cur[r].s, cur[r].e);
    free(h);
    return err;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---- steps --------------------------------------------------------------------------------- */

typedef struct step {
    int64_t s, e, n;
    int64_t dev_min, dev_max; /* its device work's span; dev_min INT64_MAX when none */
    uint64_t matched;         /* device events claimed */
} step;

static int by_step_start(const void *a, const void *b) {
    const step *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

typedef struct call {
    int64_t s, e, corr;
} call;

static int by_call_start(const void *a, const void *b) {
    const call *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

typedef struct dev {
    int64_t corr, s, e;
    uint32_t matched;
} dev;

static int by_dev_corr(const void *a, const void *b) {
    const dev *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

typedef struct result {
    step *steps;
    size_t nsteps;
    int64_t *costs; /* costs[k * R_COUNT + r]: step k's time in role r */
} result;

/* The plugin's device-side step bounds (_find_device_steps, _update_steps_duration). */
static void device_steps(step *st, size_t *nsteps, call *calls, size_t ncalls, dev *devs,
                         size_t ndevs) {
    size_t ns = *nsteps, is = 0, ic = 0;
    uint64_t matched = 0;
    for (size_t k = 0; k < ns; k++) {
        st[k].dev_min = INT64_MAX;
        st[k].dev_max = INT64_MIN;
        st[k].matched = 0;
    }
    while (is < ns && ic < ncalls) {
        const call *c = &calls[ic];
        if (c->s < st[is].s) {
            ic++;
        } else if (c->e <= st[is].e) {
            /* Its device work: the device events of its correlation id. */
            size_t lo = 0, hi = ndevs;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (devs[mid].corr < c->corr)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (size_t d = lo; d < ndevs && devs[d].corr == c->corr; d++) {
                if (devs[d].s < st[is].dev_min) st[is].dev_min = devs[d].s;
                if (devs[d].e > st[is].dev_max) st[is].dev_max = devs[d].e;
                if (!devs[d].matched) matched++;
                devs[d].matched = 1;
                st[is].matched++;
            }
            ic++;
        } else if (c->s < st[is].e) {
            ic++;
        } else {
            is++;
        }
    }
    if (matched == 0 || ns == 0) return;
    int64_t prev = st[0].s;
    if (st[0].dev_min != INT64_MAX)
        for (size_t d = 0; d < ndevs; d++)
            if (!devs[d].matched && devs[d].e < st[0].dev_min && devs[d].e > prev) prev = devs[d].e;
    for (size_t k = 0; k < ns; k++) {
        int64_t s = prev > st[k].s ? prev : st[k].s, e = st[k].e;
        if (st[k].dev_min == INT64_MAX) {
            if (e < s) e = s;
        } else {
            if (st[k].dev_max > e) e = st[k].dev_max;
            if (e < s) e = s;
        }
        st[k].s = s;
        st[k].e = e;
        prev = e;
    }
    if (ns > 1) {
        size_t i = ns;
        while (i > 0 && st[i - 1].matched == 0)
            i--;
        if (i > 0) {
            size_t keep = i;
            if (i > 1 && (double)st[i - 2].matched * 0.8 > (double)st[i - 1].matched) keep = i - 1;
            *nsteps = keep;
        }
    }
}

static int analyse(const md_model *m, result *res) {
    rlist roles[R_COUNT] = {{0}};
    int64_t *comm_ext = NULL;
    size_t ncomm = 0, ncalls = 0, ndevs = 0, ns = 0;
    call *calls = NULL;
    dev *devs = NULL;
    step *st = NULL;
    uint64_t *done = NULL;
    int err = 0;
    size_t cap = m->count ? m->count : 1;
    comm_ext = malloc(cap * sizeof *comm_ext);
    calls = malloc(cap * sizeof *calls);
    devs = malloc(cap * sizeof *devs);
    st = malloc(cap * sizeof *st);
    done = calloc(cap / 64 + 1, sizeof *done);
    memset(res, 0, sizeof *res);
    if (!comm_ext || !calls || !devs || !st || !done) {
        err = STROBE_ENOMEM;
        goto out;
    }
    int64_t cpu_min = INT64_MAX, cpu_max = INT64_MIN;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (e->ph == 'X' && e->has_time && !e->bad && is_cpu_type(m, e) && e->ext_id >= 0 &&
            is_comm_name(md_str(m, e->name)))
            comm_ext[ncomm++] = e->ext_id;
    }
    qsort(comm_ext, ncomm, sizeof *comm_ext, cmp_i64);
    err = cpu_role_ranges(m, done, roles);
    for (size_t i = 0; i < m->count && !err; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (e->ph != 'X' || !e->has_time || e->bad) continue;
        int64_t s = e->ts, t = e->ts + e->dur, n;
        const char *name = md_str(m, e->name);
        int role = -1, is_step = 0;
        if (e->kind == MD_KERNEL) {
            role = e->ext_id >= 0 && bsearch(&e->ext_id, comm_ext, ncomm, sizeof *comm_ext, cmp_i64)
                       ? R_COMM
                       : R_KERNEL;
        } else if (e->kind == MD_MEMCPY) {
            role = R_MEMCPY;
        } else if (e->kind == MD_MEMSET) {
            role = R_MEMSET;
        } else if (e->kind == MD_RUNTIME || e->kind == MD_DRIVER) {
            role = R_RUNTIME;
            if (e->corr >= 0) calls[ncalls++] = (call){s, t, e->corr};
        } else if (is_cpu_type(m, e)) {
            if (md_is_step(m, e, &n)) {
                st[ns++] = (step){.s = s, .e = t, .n = n};
                is_step = 1;
            } else if (e->kind == MD_GPU_USER_ANNOTATION && md_step_number(name, &n)) {
                continue; /* the device's copy of a step's range */
            } else if (e->kind != MD_OTHER && is_dataloader_name(name)) {
                role = R_DATALOADER;
            } else {
                role = is_comm_name(name) ? R_COMM : R_CPU;
            }
            /* The CPU's span (Operator and Python events, and steps): the step of a trace
             * without steps. */
            if (is_step || e->kind == MD_CPU_OP || e->kind == MD_OTHER) {
                if (s < cpu_min) cpu_min = s;
                if (t > cpu_max) cpu_max = t;
            }
        }
        if (md_is_device_work(e->kind)) devs[ndevs++] = (dev){e->corr, s, t, 0};
        if (role >= 0 && !(done[i / 64] >> (i % 64) & 1)) /* not pushed by cpu_role_ranges */
            err = push(&roles[role], s, t);
    }
    if (err) goto out;
    if (ns == 0 && cpu_min <= cpu_max) st[ns++] = (step){.s = cpu_min, .e = cpu_max, .n = 0};
    qsort(st, ns, sizeof *st, by_step_start);
    qsort(calls, ncalls, sizeof *calls, by_call_start);
    qsort(devs, ndevs, sizeof *devs, by_dev_corr);
    device_steps(st, &ns, calls, ncalls, devs, ndevs);
    /* The breakdown: the steps' union, taken role by role in priority order. */
    rlist slots = {0}, cover[R_COUNT] = {{0}};
    for (size_t k = 0; k < ns && !err; k++)
        err = push(&slots, st[k].s, st[k].e);
    merge(&slots);
    for (int r = 0; r < R_OTHER && !err; r++) {
        merge(&roles[r]);
        err = take(&slots, &roles[r], &cover[r]);
    }
    cover[R_OTHER] = slots;
    res->costs = err ? NULL : calloc((ns ? ns : 1) * R_COUNT, sizeof *res->costs);
    if (!err && res->costs == NULL) err = STROBE_ENOMEM;
    for (size_t k = 0; k < ns && !err; k++)
        for (int r = 0; r < R_COUNT; r++)
            res->costs[k * R_COUNT + r] = within(&cover[r], st[k].s, st[k].e);
    for (int r = 0; r < R_COUNT; r++)
        free(cover[r].r);
    if (!err) {
        res->steps = st;
        res->nsteps = ns;
        st = NULL;
    }
out:
    for (int r = 0; r < R_COUNT; r++)
        free(roles[r].r);
    free(comm_ext);
    free(calls);
    free(devs);
    free(st);
    free(done);
    return err;
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_rows(FILE *out, const result *res, int format) {
    static const char *const total = "Total";
    if (format == CLI_TABLE) {
        size_t w[R_COUNT + 2];
        w[0] = 10;
        for (int c = 1; c < R_COUNT + 2; c++)
            w[c] = 15;
        strobe__table_separator(out, w, R_COUNT + 2);
        strobe__table_cell(out, "Step", w[0], 0, 0);
        for (int r = 0; r < R_COUNT; r++)
            strobe__table_cell(out, role_names[r], w[r + 1], 0, 0);
        strobe__table_cell(out, total, w[R_COUNT + 1], 0, 0);
        fputc('\n', out);
        strobe__table_separator(out, w, R_COUNT + 2);
        char b[64];
        for (size_t k = 0; k < res->nsteps; k++) {
            snprintf(b, sizeof b, "%" PRId64, res->steps[k].n);
            strobe__table_cell(out, b, w[0], 0, 0);
            for (int r = 0; r <= R_COUNT; r++) {
                int64_t v =
                    r < R_COUNT ? res->costs[k * R_COUNT + r] : res->steps[k].e - res->steps[k].s;
                strobe__fmt_time_ns(b, sizeof b, v);
                strobe__table_cell(out, b, w[r + 1], 0, 0);
            }
            fputc('\n', out);
        }
        strobe__table_separator(out, w, R_COUNT + 2);
        return;
    }
    int json = format == CLI_JSON;
    if (json) {
        fputc('[', out);
    } else {
        fprintf(out, "step");
        for (int r = 0; r < R_COUNT; r++)
            fprintf(out, ",%s", role_names[r]);
        fprintf(out, ",%s\n", total);
    }
    for (size_t k = 0; k < res->nsteps; k++) {
        if (json)
            fprintf(out, "%s\n {\"step\": %" PRId64, k ? "," : "", res->steps[k].n);
        else
            fprintf(out, "%" PRId64, res->steps[k].n);
        for (int r = 0; r <= R_COUNT; r++) {
            int64_t v =
                r < R_COUNT ? res->costs[k * R_COUNT + r] : res->steps[k].e - res->steps[k].s;
            if (json)
                fprintf(out, ", \"%s\": ", r < R_COUNT ? role_names[r] : total);
            else
                fputc(',', out);
            cli_put_us(out, v);
        }
        fprintf(out, json ? "}" : "\n");
    }
    if (json) fprintf(out, "%s]\n", res->nsteps ? "\n" : "");
}

/* ---- the overview (--overview) ----------------------------------------------------------- */

/* The plugin's overview (run_generator.py _generate_overview; data.py analyze, _analyze_gpu_metrics
 * and _analyze_distributed_metrics; run.py get_gpu_metrics_data) from the steps and their costs:
 * the Average Step Time of each role (the mean over the steps, and its share of the mean step),
 * the GPU Summary (tb.h), and the recommendations, whose wording is the plugin's with its links
 * written out in parentheses. */
typedef struct ovw {
    double avg[R_COUNT + 1]; /* ns; avg[R_COUNT]: the step */
    cli_tb_metrics gpu;
    char *recs[8];
    size_t nrecs;
} ovw;

static int add_rec(ovw *o, const char *text) {
    if (o->nrecs == sizeof o->recs / sizeof o->recs[0]) return 0;
    char *t = strdup(text);
    if (t == NULL) return STROBE_ENOMEM;
    o->recs[o->nrecs++] = t;
    return 0;
}

static int build_overview(const md_model *m, const result *res, ovw *o) {
    memset(o, 0, sizeof *o);
    int64_t S = 0, E = 0;
    if (res->nsteps) {
        S = res->steps[0].s;
        E = res->steps[res->nsteps - 1].e;
    }
    for (size_t k = 0; k < res->nsteps; k++) {
        for (int r = 0; r < R_COUNT; r++)
            o->avg[r] += (double)res->costs[k * R_COUNT + r];
        o->avg[R_COUNT] += (double)(res->steps[k].e - res->steps[k].s);
    }
    for (int r = 0; r <= R_COUNT && res->nsteps; r++)
        o->avg[r] /= (double)res->nsteps;
    int err = cli_tb_metrics_get(m, S, E, &o->gpu);
    if (err) return err;
    char b[1024];
    double total = o->avg[R_COUNT];
    double dl = total > 0 ? o->avg[R_DATALOADER] / total : 0;
    if (dl > 0.05) {
        snprintf(
            b, sizeof b,
            "This run has high time cost on input data loading. %.1f%% of the step time is "
            "in DataLoader. You could try to set num_workers on DataLoader's construction "
            "and enable multi-processes on data loading "
            "(https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading).",
            dl * 100);
        err = add_rec(o, b);
    }
    const cli_tb_metrics *g = &o->gpu;
    if (!err && g->use_dp && g->devices_used > 1)
        err = add_rec(o, "It is recommended to use DistributedDataParallel instead of DataParallel "
                         "(https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead) to "
                         "do multi-GPU training.");
    if (!err && g->use_ddp && !g->has_nccl) {
        /* Any device of compute capability 3.5 or more (the plugin reads them all). */
        int cc35 = 0;
        for (size_t k = 0; k < g->ngpus; k++)
            if (g->gpus[k].major > 3 || (g->gpus[k].major == 3 && g->gpus[k].minor >= 5)) cc35 = 1;
        if (cc35)
            err = add_rec(o, "Nccl backend is currently the fastest and highly recommended backend "
                             "when using DDP for training.");
    }
    double comm = total > 0 ? o->avg[R_COMM] / total : 0;
    if (!err && comm > 0.1) {
        snprintf(b, sizeof b,
                 "This run has high time cost on communication. %.1f%% of the step time is in "
                 "communication. You could try Gradient Compression "
                 "(https://pytorch.org/docs/stable/ddp_comm_hooks.html) or Gradient Accumulation "
                 "(https://towardsdatascience.com/what-is-gradient-accumulation-in-deep-learning-"
                 "ec034122cfa) or increase the batch size. Note: Gradient accumulation will "
                 "increase global effective batch size, which may hurt model convergence and "
                 "accuracy. For such case, you may want to evaluate LAMB optimizer "
                 "(https://nvidia.github.io/apex/optimizers.html#apex.optimizers.FusedLAMB).",
                 comm * 100);
        err = add_rec(o, b);
    }
    /* GPUs under 50% utilization: "GPU 0 has ...", "GPU 0, 1 and 2 have ...". */
    size_t low = 0, len = 0;
    for (size_t k = 0; k < g->ngpus; k++)
        if (g->gpus[k].util < 0.5) low++;
    if (!err && low) {
        len = (size_t)snprintf(b, sizeof b, "GPU ");
        size_t seen = 0;
        for (size_t k = 0; k < g->ngpus && len < sizeof b; k++) {
            if (!(g->gpus[k].util < 0.5)) continue;
            const char *sep = seen == 0 ? "" : seen == low - 1 ? " and " : ", ";
            len += (size_t)snprintf(b + len, sizeof b - len, "%s%" PRId32, sep, g->gpus[k].id);
            seen++;
        }
        if (len < sizeof b)
            snprintf(b + len, sizeof b - len,
                     " %s low utilization. You could try to increase batch size to improve. "
                     "Note: Increasing batch size may affect the speed and stability of model "
                     "convergence.",
                     low == 1 ? "has" : "have");
        err = add_rec(o, b);
    }
    if (!err && g->major0 >= 7 && g->has_kernel && g->tc_used_ratio == 0.0 &&
        g->tc_eligible_ratio > 0.0) {
        snprintf(
            b, sizeof b,
            "Kernels with %.0f%% time are launched by Tensor Cores eligible operators. You "
            "could enable Automatic Mixed Precision (https://pytorch.org/docs/stable/amp.html) "
            "to speedup by using FP16.",
            round(g->tc_eligible_ratio * 100));
        err = add_rec(o, b);
    }
    if (!err && g->mem_dev >= 0) {
        snprintf(b, sizeof b,
                 "Device memory usage is at the limit of device memory capacity (%.1f%% of "
                 "%.1fGB on GPU%" PRId64 "). To get better value of your GPU or to use larger "
                 "batch size for training, please refer to Gradient Checkpoint "
                 "(https://pytorch.org/docs/stable/checkpoint.html) or Automatic Mixed Precision "
                 "(https://pytorch.org/docs/stable/amp.html).",
                 (double)g->mem_peak / (double)g->mem_total * 100,
                 (double)g->mem_total / 1073741824.0, g->mem_dev);
        err = add_rec(o, b);
    }
    return err;
}

static void free_overview(ovw *o) {
    cli_tb_metrics_free(&o->gpu);
    for (size_t k = 0; k < o->nrecs; k++)
        free(o->recs[k]);
}

/* A percentage as the plugin shows it, to 2 decimals ("n/a" when none). */
static void put_pct(FILE *out, double frac, int json) {
    if (isnan(frac))
        fputs(json ? "null" : "n/a", out);
    else
        fprintf(out, json ? "%.6f" : "%.2f %%", frac * 100);
}

static void print_gpu_table(FILE *out, const cli_tb_gpu *d) {
    fprintf(out, "GPU %" PRId32 ":\n", d->id);
    if (d->name[0]) fprintf(out, "  %-32s %s\n", "Name", cli_esc(d->name));
    if (d->mem >= 0) fprintf(out, "  %-32s %.2f GB\n", "Memory", (double)d->mem / 1073741824.0);
    if (d->major >= 0 && d->minor >= 0)
        fprintf(out, "  %-32s %d.%d\n", "Compute Capability", d->major, d->minor);
    fprintf(out, "  %-32s ", "GPU Utilization");
    put_pct(out, d->util, 0);
    if (!isnan(d->sm_eff)) {
        fprintf(out, "\n  %-32s ", "Est. SM Efficiency");
        put_pct(out, d->sm_eff, 0);
    }
    if (!isnan(d->occupancy))
        fprintf(out, "\n  %-32s %.2f %%", "Est. Achieved Occupancy", d->occupancy);
    if (!isnan(d->tc_ratio)) {
        fprintf(out, "\n  %-32s ", "Kernel Time using Tensor Cores");
        put_pct(out, d->tc_ratio, 0);
    }
    fputc('\n', out);
}

static void print_gpu_json(FILE *out, const cli_tb_gpu *d) {
    fprintf(out, "{\"id\": %" PRId32 ", \"name\": ", d->id);
    if (d->name[0])
        cli_json_str(out, d->name);
    else
        fputs("null", out);
    if (d->mem >= 0)
        fprintf(out, ", \"memory_bytes\": %" PRId64 ", \"memory_gb\": %.2f", d->mem,
                (double)d->mem / 1073741824.0);
    else
        fputs(", \"memory_bytes\": null, \"memory_gb\": null", out);
    if (d->major >= 0 && d->minor >= 0)
        fprintf(out, ", \"compute_capability\": \"%d.%d\"", d->major, d->minor);
    else
        fputs(", \"compute_capability\": null", out);
    fputs(", \"gpu_utilization_pct\": ", out);
    put_pct(out, d->util, 1);
    fputs(", \"est_sm_efficiency_pct\": ", out);
    put_pct(out, d->sm_eff, 1);
    fputs(", \"est_achieved_occupancy_pct\": ", out);
    if (isnan(d->occupancy))
        fputs("null", out);
    else
        fprintf(out, "%.6f", d->occupancy);
    fputs(", \"tensor_cores_pct\": ", out);
    put_pct(out, d->tc_ratio, 1);
    fprintf(out,
            ", \"kernels_with_blocks_per_sm\": %" PRIu64 ", \"kernels_with_occupancy\": %" PRIu64
            "}",
            d->bps_kernels, d->occ_kernels);
}

static int print_overview(FILE *out, const md_model *m, const result *res, int format) {
    ovw o;
    int err = build_overview(m, res, &o);
    if (err) {
        free_overview(&o);
        return err;
    }
    double total = o.avg[R_COUNT];
    if (format == CLI_JSON) {
        fputs("{\"steps\": ", out);
        print_rows(out, res, CLI_JSON);
        fputs(", \"average\": {\"Average Step Time\": ", out);
        cli_put_us(out, llround(total));
        for (int r = 0; r < R_COUNT; r++) {
            fprintf(out, ", \"%s\": {\"us\": ", role_names[r]);
            cli_put_us(out, llround(o.avg[r]));
            fprintf(out, ", \"pct\": %.6f}", total > 0 ? 100 * o.avg[r] / total : 0.0);
        }
        fputs("},\n \"gpus\": [", out);
        for (size_t k = 0; k < o.gpu.ngpus; k++) {
            fputs(k ? ",\n  " : "\n  ", out);
            print_gpu_json(out, &o.gpu.gpus[k]);
        }
        fprintf(out, "%s],\n \"tc_used_ratio\": %.6f, \"tc_eligible_ops_kernel_ratio\": %.6f,\n",
                o.gpu.ngpus ? "\n " : "", o.gpu.tc_used_ratio, o.gpu.tc_eligible_ratio);
        fputs(" \"recommendations\": [", out);
        for (size_t k = 0; k < o.nrecs; k++) {
            fputs(k ? ",\n  " : "\n  ", out);
            cli_json_str(out, o.recs[k]);
        }
        fprintf(out, "%s]}\n", o.nrecs ? "\n " : "");
    } else {
        print_rows(out, res, CLI_TABLE);
        char b[64];
        fputs("\nAverage Step Time\n", out);
        strobe__fmt_time_ns(b, sizeof b, llround(total));
        fprintf(out, "  %-32s %s\n", "Step", b);
        for (int r = 0; r < R_COUNT; r++) {
            strobe__fmt_time_ns(b, sizeof b, llround(o.avg[r]));
            fprintf(out, "  %-32s %-12s %6.2f %%\n", role_names[r], b,
                    total > 0 ? 100 * o.avg[r] / total : 0.0);
        }
        fputs("\nGPU Summary\n", out);
        if (o.gpu.ngpus == 0) fputs("  (no kernel with a \"device\" arg)\n", out);
        for (size_t k = 0; k < o.gpu.ngpus; k++)
            print_gpu_table(out, &o.gpu.gpus[k]);
        fputs("\nPerformance Recommendation\n", out);
        if (o.nrecs == 0) fputs("  N/A\n", out);
        for (size_t k = 0; k < o.nrecs; k++)
            fprintf(out, "  - %s\n", o.recs[k]);
    }
    free_overview(&o);
    return 0;
}

/* ---- the command --------------------------------------------------------------------------- */

const struct option cmd_steps_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"overview", no_argument, NULL, CLI_LONG_ONLY + 1},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_steps(int argc, char **argv) {
    const char *path = NULL;
    int format = CLI_TABLE, quiet = 0, first = 0, overview = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_steps_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_steps_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'f':
            format = cli_parse_format(optarg);
            if (format < 0) return cli_usage_error("steps", "unknown --format", optarg);
            break;
        case CLI_LONG_ONLY + 1:
            overview = 1;
            break;
        default:
            return cli_option_error("steps", c, argv, cmd_steps_options);
        }
    }
    if (overview && format == CLI_CSV)
        return cli_usage_error("steps", "--overview is table or json, not", "csv");
    if (cli_trace_operand("steps", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return cli_usage_error("steps", "out of memory", NULL);
    int rc = cli_load(m, "steps", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("steps", path, m);
        result res;
        int work = analyse(m, &res);
        if (work == 0 && overview)
            work = print_overview(stdout, m, &res, format);
        else if (work == 0)
            print_rows(stdout, &res, format);
        free(res.steps);
        free(res.costs);
        rc = cli_finish("steps", path, work, CLI_OK);
        md_free(m);
    }
    free(m);
    return rc;
}

/* ---- for the report ----------------------------------------------------------------------- */

int cli_steps_overview_json(FILE *out, const md_model *m) {
    result res;
    int work = analyse(m, &res);
    if (work == 0) work = print_overview(out, m, &res, CLI_JSON);
    free(res.steps);
    free(res.costs);
    return work;
}

int cli_steps_json(FILE *out, const md_model *m) {
    result res;
    int work = analyse(m, &res);
    if (work == 0) print_rows(out, &res, CLI_JSON);
    free(res.steps);
    free(res.costs);
    return work;
}
