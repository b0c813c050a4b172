/* cmd_critical_path.c: `strobe critical-path`, HTA's critical path analysis of one rank
 * (CriticalPathAnalysis.critical_path_analysis, CPGraph.get_critical_path_breakdown and
 * summary, and overlay_critical_path_analysis, in hta/analyzers/critical_path_analysis.py).
 * The graph and its path are built by critpath.c (whose header states HTA's definitions); this
 * file prints them and writes the overlaid trace.
 *
 * The overlaid trace (-o), as HTA writes it: the trace's events, each event on the path with
 * args.critical = 1; with HTA's only_show_critical_events (the default here, as in
 * TraceAnalysis), the complete events that are not on the path are left out but for
 * user_annotation and python_function ones; then a flow (ph s / ph f, bp e, name
 * "critical_path", cat the edge's type, args weight and critical) for each edge of the path of
 * the types HTA shows by default: dependencies, kernel launch delays and sync dependencies.
 * A flow point at an event's start is at its ts; at its end, at ts + dur, less min(1 us, dur) on
 * a GPU event (HTA's rule, so that the arrow stays inside the kernel). HTA writes int(ts) in its
 * microseconds; strobe writes the exact time, in the file's units, so that the point lies on the
 * event it belongs to. String pids and tids (Kineto's "stream 7", "Spans") are written as numbers,
 * the flows' too, and named by process_name and thread_name events at the end of the array
 * (idmap.h), as viewers want numbers. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli.h"
#include "common.h"
#include "critpath.h"
#include "emit.h"
#include "hta.h"
#include "idmap.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"
#include "util/err.h"

const char cmd_critical_path_usage[] =
    "NAME\n"
    "    strobe critical-path - HTA's critical path analysis of a rank\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe critical-path [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's critical_path_analysis(), with its definitions, so that it\n"
    "    gives HTA's path. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction); one rank is analysed (--rank).\n"
    "\n"
    "    The window is an instance of an annotation: the events whose name holds NAME, in file\n"
    "    order, numbered from 0. The graph has a start and an end node for each CPU operator,\n"
    "    runtime call and GPU kernel in the window, and edges for operator and kernel spans,\n"
    "    nesting on a CPU thread, kernel launch delays, delays between kernels on a stream, and\n"
    "    synchronizations (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,\n"
    "    cudaStreamWaitEvent). The critical path is the graph's longest path; each of its edges\n"
    "    is bound by cpu_bound, data_loading, gpu_compute_bound, gpu_communication_bound,\n"
    "    gpu_kernel_kernel_overhead, gpu_kernel_launch_overhead, or nothing (dependencies).\n"
    "\n"
    "    Where HTA leaves a choice open: nodes of one time are ordered starts first, then by\n"
    "    event (HTA's sort is not stable); the path's edges are listed in path order (HTA keeps\n"
    "    a set); an annotation matches event names only (HTA also tries categories); a kernel\n"
    "    whose runtime call has no node gets no launch edge (HTA stops); negative weights count\n"
    "    as 0 on the path (HTA's default) and are shown as they are.\n"
    "\n"
    "OPTIONS\n"
    "    --annotation NAME  the window's annotation (default ProfilerStep; \"\" for the whole\n"
    "                       trace)\n"
    "    --instance N[:M]   its instance, or instances N to M (default 0)\n"
    "    --rank R           the rank to analyse (default: the first)\n"
    "    --data-load-events PATTERN[,PATTERN...]\n"
    "                       HTA's data_load_events: an event whose name holds a PATTERN (as\n"
    "                       plain text) gets nodes too, and a CPU edge whose event's shortened\n"
    "                       name (no <...> or (...), its last word) a PATTERN (a POSIX extended\n"
    "                       regular expression) is found in is bound by data_loading, not\n"
    "                       cpu_bound; may be given several times\n"
    "    --zero-weight-launch-edges\n"
    "                       add a 0-weight launch edge to every kernel that has no launch delay\n"
    "                       edge (HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1)\n"
    "    -o, --output OUT.json\n"
    "                       write the trace with the critical path overlaid, as HTA's\n"
    "                       overlay_critical_path_analysis() writes it (gzip'd when OUT ends\n"
    "                       in .gz); with only critical events kept, the trace's own flows\n"
    "                       that would point at a left-out event are left out too\n"
    "    --all-events       in OUT, keep the events that are not on the path (HTA's\n"
    "                       only_show_critical_events=False)\n"
    "    --show-all-edges   in OUT, with --all-events, a flow for every edge of the graph but\n"
    "                       the 0-weight launch edges, each with args.critical (HTA's\n"
    "                       show_all_edges); without it, only the path's dependency, launch\n"
    "                       delay and sync edges\n"
    "    -f, --format F table (default); csv (the tables one after another) or json\n"
    "                   ({\"summary\": [...], \"path\": [...], \"graph\": [...]}): summary\n"
    "                   rows bound_by, duration (us), percent (HTA's summary()); path rows\n"
    "                   (get_critical_path_breakdown(), in path order) ts, duration, type,\n"
    "                   event_idx, name, cat, pid, tid, stream, bound_by; graph: length,\n"
    "                   path_nodes, path_edges, critical_events, graph_nodes, graph_edges,\n"
    "                   window_start, window_end (us)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, no such annotation or instance, an\n"
    "    invalid graph) or usage.\n";

enum {
    OPT_ANNOTATION = CLI_LONG_ONLY + 1,
    OPT_INSTANCE,
    OPT_RANK,
    OPT_ZERO,
    OPT_ALL_EVENTS,
    OPT_ALL_EDGES,
    OPT_DATA_LOAD
};

const struct option cmd_critical_path_options[] = {
    {"annotation", required_argument, NULL, OPT_ANNOTATION},
    {"instance", required_argument, NULL, OPT_INSTANCE},
    {"rank", required_argument, NULL, OPT_RANK},
    {"zero-weight-launch-edges", no_argument, NULL, OPT_ZERO},
    {"data-load-events", required_argument, NULL, OPT_DATA_LOAD},
    {"output", required_argument, NULL, 'o'},
    {"all-events", no_argument, NULL, OPT_ALL_EVENTS},
    {"show-all-edges", no_argument, NULL, OPT_ALL_EDGES},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct ctx {
    cli_cp_opts o;
    int64_t rank;
    int has_rank;
    const char *out;
    int all_events, all_edges;
    /* --data-load-events: the patterns (pointing into the copies of the option values in
     * texts), compiled */
    const char **dl;
    regex_t *dl_re;
    size_t ndl, dl_cap;
    char **texts;
    size_t ntexts;
} ctx;

/* ---- the overlaid trace --------------------------------------------------------------------- */

static int by_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A thread's pid and tid as the overlay writes them: numbers, string ids through the copy's map. */
static int thread_ids(cli_idmap *ids, const md_model *m, const md_thread *th, int64_t *pid,
                      int64_t *tid) {
    *pid = th->pid;
    *tid = th->tid;
    if (th->pid_kind == MD_ID_STR) {
        const char *s = md_str(m, th->pid_str);
        STROBE_FORWARD_IF_ERR(cli_idmap_pid(ids, s, strlen(s), pid));
    }
    if (th->tid_kind == MD_ID_STR) {
        const char *s = md_str(m, th->tid_str);
        STROBE_FORWARD_IF_ERR(cli_idmap_tid(ids, *pid, s, strlen(s), tid));
    }
    return 0;
}

/* One flow point of edge e at node n (HTA's get_flow_event), after *nev events (counted).
 * @return 0 or STROBE_ENOMEM. */
static int put_flow(FILE *f, const cli_cp_graph *g, cli_idmap *ids, const cli_cp_edge *e,
                    uint32_t n, size_t id, int start, size_t *nev, int critical) {
    const md_model *m = &g->r->m;
    const cli_cp_row *w = &g->rows[g->nodes[n].row];
    md_event ev = md_at(m, w->ev);
    int64_t t = ev.ts, pid, tid;
    if (!g->nodes[n].is_start) {
        t += ev.dur;
        /* HTA's rule keeps a GPU event's arrow inside it (1 us); a CPU event's is kept inside
         * it by 1 ns, so that the point binds to the event it belongs to. */
        int64_t in = w->stream != -1 ? 1000 : 1;
        t -= ev.dur < in ? ev.dur : in;
    }
    if (m->has_base) t -= m->base_time_ns;
    STROBE_FORWARD_IF_ERR(thread_ids(ids, m, &m->threads[ev.thread], &pid, &tid));
    fprintf(f, "%s\n{\"ph\":\"%s\",\"id\":%zu,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":",
            (*nev)++ ? "," : "", start ? "s" : "f", id, pid, tid);
    cli_put_us(f, t);
    fprintf(f,
            ",\"cat\":\"%s\",\"name\":\"critical_path\",%s\"args\":{\"weight\":%" PRId64
            ",\"critical\":%s}}",
            cli_cp_edge_type_name(e->type), start ? "" : "\"bp\":\"e\",", e->weight,
            critical ? "true" : "false");
    return 0;
}

/* Writes the event's text with "critical": 1 added to its args. */
static void put_critical(FILE *f, const strobe_rd_event *ev) {
    const char *raw = ev->raw, *end = raw + ev->raw_len;
    if (ev->args && ev->args >= raw && ev->args + ev->args_len <= end && ev->args_len >= 2) {
        size_t open = (size_t)(ev->args - raw) + 1;
        fwrite(raw, 1, open, f);
        fputs("\"critical\":1", f);
        const char *p = ev->args + 1;
        while (p < ev->args + ev->args_len - 1 &&
               (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
            p++;
        if (*p != '}') fputc(',', f);
        fwrite(ev->args + 1, 1, (size_t)(end - (ev->args + 1)), f);
        return;
    }
    /* No args object: one is added before the closing brace. */
    const char *close = end;
    while (close > raw && close[-1] != '}')
        close--;
    if (close == raw) {
        fwrite(raw, 1, ev->raw_len, f);
        return;
    }
    fwrite(raw, 1, (size_t)(close - 1 - raw), f);
    fputs(",\"args\":{\"critical\":1}}", f);
}

/* The flows of the path's edges of HTA's default types (DEFAULT_EDGE_TYPES_IN_VIZ), after *nev
 * events (counted). @return 0 or STROBE_ENOMEM. */
static int put_flows(FILE *f, const cli_cp_graph *g, cli_idmap *ids, size_t *nev, int all_edges) {
    size_t id = 0;
    int rc = 0;
    if (all_edges) {
        /* HTA's show_all_edges: every edge, but the 0-weight launch edges, critical or not. */
        uint8_t *on = calloc(g->nedges + 1, 1);
        for (size_t i = 0; on && i + 1 < g->npath; i++)
            on[g->path_edges[i]] = 1;
        for (size_t k = 0; k < g->nedges && rc == 0; k++) {
            const cli_cp_edge *e = &g->edges[k];
            if (e->type == CLI_CP_KERNEL_LAUNCH_DELAY && e->weight == 0) continue;
            rc = put_flow(f, g, ids, e, e->u, id, 1, nev, on && on[k]);
            if (rc == 0) rc = put_flow(f, g, ids, e, e->v, id, 0, nev, on && on[k]);
            id++;
        }
        free(on);
        return rc;
    }
    for (size_t i = 0; i + 1 < g->npath && rc == 0; i++) {
        const cli_cp_edge *e = &g->edges[g->path_edges[i]];
        if (e->type != CLI_CP_DEPENDENCY && e->type != CLI_CP_KERNEL_LAUNCH_DELAY &&
            e->type != CLI_CP_SYNC_DEPENDENCY)
            continue;
        rc = put_flow(f, g, ids, e, e->u, id, 1, nev, 1);
        if (rc == 0) rc = put_flow(f, g, ids, e, e->v, id, 0, nev, 1);
        id++;
    }
    return rc;
}

/* Ends the event array: the path's flows, the names of the ids the map made, the bracket.
 * @return 0 or STROBE_ENOMEM. */
static int end_events(FILE *f, const cli_cp_graph *g, const ctx *c, cli_idmap *ids, size_t nev) {
    int rc = put_flows(f, g, ids, &nev, c->all_events && c->all_edges);
    if (rc == 0) cli_idmap_put_names(ids, f, nev);
    fputs("\n]", f);
    return rc;
}

/* Writes event ev, marked critical or as it is, its string ids as numbers of the map.
 * @return 0, STROBE_ENOMEM or STROBE_EFORMAT. */
static int put_event(FILE *f, cli_idmap *ids, const strobe_rd_event *ev, int is_crit) {
    if (!cli_idmap_wants(ev)) {
        if (is_crit)
            put_critical(f, ev);
        else
            fwrite(ev->raw, 1, ev->raw_len, f);
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    STROBE_RETURN_IF(mf == NULL, STROBE_ENOMEM);
    if (is_crit)
        put_critical(mf, ev);
    else
        fwrite(ev->raw, 1, ev->raw_len, mf);
    int rc = fclose(mf) == 0 ? cli_idmap_put_event(ids, f, ev, buf, len) : STROBE_ENOMEM;
    free(buf);
    return rc;
}

/* ---- the trace's own flows, when only critical events are kept ----------------------------- */

typedef struct kept_x {
    uint32_t thread;
    int64_t ts, end;
} kept_x;

typedef struct flow_pt {
    uint32_t cat;
    uint8_t kind;
    int64_t id;
    int64_t idx; /* file index */
    uint32_t ev; /* the model's event */
    uint8_t ph;  /* MD_FLOW_START, _STEP, _END */
    uint8_t bound;
} flow_pt;

static int by_kept(const void *a, const void *b) {
    const kept_x *x = a, *y = b;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int by_flow_pt(const void *a, const void *b) {
    const flow_pt *x = a, *y = b;
    if (x->cat != y->cat) return x->cat < y->cat ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int is_kept_cat(const char *cat) {
    return strcmp(cat, "user_annotation") == 0 || strcmp(cat, "python_function") == 0;
}

/* Leaving out the events that are not on the path would leave the trace's flows (ac2g launch
 * arrows ...) pointing at nothing, which viewers report: a flow is kept only when each of its
 * points lies in a complete event that is kept, on its thread, and it has a start and an end.
 * The file indexes of the flow events to leave out go to *drop (sorted). */
static int dropped_flows(const cli_cp_graph *g, const int64_t *crit, size_t nc, int64_t **drop,
                         size_t *ndrop) {
    const md_model *m = &g->r->m;
    kept_x *kx = malloc((m->count + 1) * sizeof *kx);
    flow_pt *fp = malloc((m->count + 1) * sizeof *fp);
    *drop = malloc((m->count + 1) * sizeof **drop);
    *ndrop = 0;
    if (kx == NULL || fp == NULL || *drop == NULL) {
        free(kx);
        free(fp);
        return STROBE_ENOMEM;
    }
    size_t nk = 0, nf = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        md_event e = md_at(m, i);
        if (e.ph == 'X' && e.has_time) {
            int64_t x = (int64_t)e.index;
            if (is_kept_cat(md_str(m, e.cat)) || bsearch(&x, crit, nc, sizeof *crit, by_i64))
                kx[nk++] = (kept_x){e.thread, e.ts, e.ts + e.dur};
        } else if (e.kind == MD_FLOW_START || e.kind == MD_FLOW_STEP || e.kind == MD_FLOW_END) {
            fp[nf++] = (flow_pt){e.cat, e.flow_kind, e.flow_id, (int64_t)e.index, i, e.kind, 0};
        }
    }
    cli_qsort(kx, nk, sizeof *kx, by_kept);
    for (size_t k = 0; k < nf; k++) {
        flow_pt *f = &fp[k];
        md_event e = md_at(m, f->ev);
        if (!e.has_time || e.flow_kind == MD_ID_NONE) continue;
        /* Whether a kept complete event of its thread holds its time. */
        size_t a = 0, b = nk;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (kx[mid].thread < e.thread)
                a = mid + 1;
            else
                b = mid;
        }
        for (; a < nk && kx[a].thread == e.thread && kx[a].ts <= e.ts && !f->bound; a++)
            f->bound = e.ts < kx[a].end || (e.ts == kx[a].ts && kx[a].end == kx[a].ts);
    }
    cli_qsort(fp, nf, sizeof *fp, by_flow_pt);
    for (size_t a = 0, b; a < nf; a = b) {
        int ok = fp[a].kind != MD_ID_NONE, starts = 0, ends = 0;
        for (b = a;
             b < nf && fp[b].cat == fp[a].cat && fp[b].kind == fp[a].kind && fp[b].id == fp[a].id;
             b++) {
            ok &= fp[b].bound;
            starts += fp[b].ph == MD_FLOW_START;
            ends += fp[b].ph == MD_FLOW_END;
        }
        if (ok && starts && ends) continue;
        for (size_t k = a; k < b; k++)
            (*drop)[(*ndrop)++] = fp[k].idx;
    }
    cli_qsort(*drop, *ndrop, sizeof **drop, by_i64);
    free(kx);
    free(fp);
    return 0;
}

/* A .gz output is written through zlib, as a FILE so that the writers above serve both. */
static ssize_t gz_write(void *cookie, const char *buf, size_t n) {
    int w = gzwrite((gzFile)cookie, buf, (unsigned)n);
    return w > 0 ? w : n == 0 ? 0 : -1;
}

static int gz_close(void *cookie) {
    return gzclose((gzFile)cookie) == Z_OK ? 0 : -1;
}

/* OUT for writing: refused (errno EEXIST) when it is the trace being read. */
static FILE *open_out(const char *out, const char *in) {
    struct stat a, b;
    if (stat(out, &a) == 0 && stat(in, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        errno = EEXIST;
        return NULL;
    }
    if (!cli_ends_with(out, ".gz")) return fopen(out, "w");
    gzFile gz = gzopen(out, "wb");
    if (gz == NULL) return NULL;
    FILE *f = fopencookie(gz, "w", (cookie_io_functions_t){NULL, gz_write, NULL, gz_close});
    if (f == NULL) gzclose(gz);
    return f;
}

static int overlay(const cli_cp_graph *g, const ctx *c) {
    const md_model *m = &g->r->m;
    int64_t *crit = malloc((g->npath + 1) * sizeof *crit);
    if (crit == NULL) return STROBE_ENOMEM;
    size_t nc = 0;
    for (size_t i = 0; i < g->npath; i++)
        crit[nc++] = g->rows[g->nodes[g->path[i]].row].idx;
    cli_qsort(crit, nc, sizeof *crit, by_i64);
    int64_t *drop = NULL;
    size_t ndrop = 0;
    if (!c->all_events && dropped_flows(g, crit, nc, &drop, &ndrop)) {
        free(crit);
        free(drop);
        return STROBE_ENOMEM;
    }
    FILE *f = open_out(c->out, m->path);
    if (f == NULL) {
        fprintf(stderr, "strobe critical-path: %s: %s\n", cli_esc(c->out),
                errno == EEXIST ? "is the trace being read: write the overlay elsewhere"
                                : strerror(errno));
        free(crit);
        free(drop);
        return CLI_HTA_REPORTED;
    }
    /* String ids become numbers, named by metadata events (idmap.h). */
    cli_idmap ids = {0};
    int wrc = cli_idmap_reserve(&ids, m); /* the writer's error, not the reader's */
    strobe_rd *rd = NULL;
    int rc = wrc ? wrc : strobe_rd_open(&rd, m->path, NULL);
    strobe_rd_item it;
    int in_events = 0, members = 0;
    size_t nev = 0;
    fputs("{", f);
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        if (rc == STROBE_RD_META) {
            rc = 0;
            if (in_events == 1) {
                in_events = 2;
                if ((rc = wrc = end_events(f, g, c, &ids, nev)) != 0) break;
            }
            if (strcmp(it.meta->key.s, "traceEvents") == 0) continue;
            fputs(members++ ? ",\n" : "\n", f);
            cli_json_str(f, it.meta->key.s);
            fputc(':', f);
            fwrite(it.meta->value.raw, 1, it.meta->value.len, f);
            continue;
        }
        rc = 0;
        const strobe_rd_event *ev = it.event;
        if (in_events == 0) {
            fputs(members++ ? ",\n\"traceEvents\":[" : "\n\"traceEvents\":[", f);
            in_events = 1;
        } else if (in_events == 2) {
            continue; /* a second event array is not read by strobe either */
        }
        int64_t x = (int64_t)ev->index;
        int is_crit = bsearch(&x, crit, nc, sizeof *crit, by_i64) != NULL;
        if (!c->all_events && !is_crit && ev->ph.s && strcmp(ev->ph.s, "X") == 0 &&
            !(ev->cat.s && (strcmp(ev->cat.s, "user_annotation") == 0 ||
                            strcmp(ev->cat.s, "python_function") == 0)))
            continue;
        if (ndrop && bsearch(&x, drop, ndrop, sizeof *drop, by_i64)) continue;
        fputs(nev++ ? ",\n" : "\n", f);
        if ((rc = wrc = put_event(f, &ids, ev, is_crit)) != 0) break;
    }
    if (rc == 0) {
        if (in_events == 0) fputs(members++ ? ",\n\"traceEvents\":[" : "\n\"traceEvents\":[", f);
        if (in_events != 2) rc = wrc = end_events(f, g, c, &ids, nev);
        fputs("\n}\n", f);
    }
    if (rc < 0 && rc != STROBE_ENOMEM)
        fprintf(stderr, "strobe critical-path: %s\n",
                wrc  ? "an event that is not a JSON object"
                : rd ? strobe_rd_errmsg(rd)
                     : "cannot read the trace");
    strobe_rd_close(rd);
    cli_idmap_free(&ids);
    free(crit);
    free(drop);
    if (fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "strobe critical-path: %s: %s\n", cli_esc(c->out), strerror(errno));
        return CLI_HTA_REPORTED;
    }
    return rc == STROBE_ENOMEM ? rc : rc < 0 ? CLI_HTA_REPORTED : 0;
}

/* ---- the tables ----------------------------------------------------------------------------- */

static int by_bound(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int tables(const cli_cp_graph *g, cli_hta_table *t) {
    const md_model *m = &g->r->m;
    int rc = 0;
    size_t ne = g->npath - 1;
    const char **bounds = malloc((ne + 1) * sizeof *bounds);
    if (bounds == NULL) return STROBE_ENOMEM;
    int64_t total = 0;
    for (size_t i = 0; rc == 0 && i < ne; i++) {
        const cli_cp_edge *e = &g->edges[g->path_edges[i]];
        bounds[i] = cli_cp_bound_by(g, e);
        total += e->weight;
        cli_hta_cell name = CLI_HTA_TEXT(""), cat = CLI_HTA_TEXT(""), idx = CLI_HTA_NUM(NAN),
                     pid = CLI_HTA_NUM(NAN), tid = CLI_HTA_NUM(NAN), stream = CLI_HTA_NUM(NAN);
        if (e->attr != CLI_CP_NONE) {
            const cli_cp_row *w = &g->rows[e->attr];
            const md_thread *th = &m->threads[md_thread_of(m, w->ev)];
            name = CLI_HTA_TEXT(md_str(m, w->name));
            cat = CLI_HTA_TEXT(md_str(m, w->cat));
            idx = CLI_HTA_INT(w->idx);
            pid = th->pid_kind == MD_ID_NUM ? CLI_HTA_INT(th->pid) : CLI_HTA_NUM(NAN);
            tid = th->tid_kind == MD_ID_NUM ? CLI_HTA_INT(th->tid) : CLI_HTA_NUM(NAN);
            stream = CLI_HTA_INT(w->stream);
        }
        rc = CLI_HTA_ROW(&t[1], CLI_HTA_INT(g->nodes[e->u].ts), CLI_HTA_INT(e->weight),
                         CLI_HTA_TEXT(cli_cp_edge_type_name(e->type)), idx, name, cat, pid, tid,
                         stream, CLI_HTA_TEXT(bounds[i]));
    }
    /* summary(): per bound_by, in its sorted order, the share of the path's duration. */
    const char **sorted = malloc((ne + 1) * sizeof *sorted);
    if (rc == 0 && sorted == NULL) rc = STROBE_ENOMEM;
    if (rc == 0) {
        memcpy(sorted, bounds, ne * sizeof *sorted);
        cli_qsort(sorted, ne, sizeof *sorted, by_bound);
        for (size_t a = 0, b; rc == 0 && a < ne; a = b) {
            for (b = a; b < ne && strcmp(sorted[b], sorted[a]) == 0; b++)
                ;
            int64_t sum = 0;
            for (size_t i = 0; i < ne; i++)
                if (strcmp(bounds[i], sorted[a]) == 0) sum += g->edges[g->path_edges[i]].weight;
            rc = CLI_HTA_ROW(&t[0], CLI_HTA_TEXT(sorted[a]), CLI_HTA_INT(sum),
                             CLI_HTA_NUM(total ? (double)sum / (double)total * 100.0 : NAN));
        }
    }
    size_t events = 0;
    for (size_t i = 0; i < g->npath; i++) {
        uint32_t row = g->nodes[g->path[i]].row;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = g->nodes[g->path[j]].row == row;
        events += !seen;
    }
    if (rc == 0)
        rc = CLI_HTA_ROW(&t[2], CLI_HTA_INT(g->length), CLI_HTA_INT(g->npath), CLI_HTA_INT(ne),
                         CLI_HTA_INT(events), CLI_HTA_INT(g->graph_nodes), CLI_HTA_INT(g->nedges),
                         CLI_HTA_INT(g->win_lo), CLI_HTA_INT(g->win_hi));
    free(bounds);
    free(sorted);
    return rc;
}

static int run(const cli_hta_set *s, void *vc, cli_hta_table *t) {
    ctx *c = vc;
    const cli_hta_rank *r = NULL;
    for (size_t k = 0; k < s->count && r == NULL; k++)
        if (!c->has_rank || s->ranks[k].rank == c->rank) r = &s->ranks[k];
    if (r == NULL) {
        fprintf(stderr, "strobe critical-path: no rank %" PRId64 " in the traces\n", c->rank);
        return CLI_HTA_REPORTED;
    }
    if (strcmp(r->m.path, "-") == 0) {
        fprintf(stderr, "strobe critical-path: the trace must be a file (it is read twice), not "
                        "standard input\n");
        return CLI_HTA_REPORTED;
    }
    cli_cp_graph g;
    c->o.t0 = s->min_ts == INT64_MAX ? 0 : s->min_ts;
    int rc = cli_cp_analyze(&g, r, &c->o);
    if (rc == CLI_HTA_REPORTED)
        fprintf(stderr, "strobe critical-path: %s: %s\n", cli_esc(r->m.path), g.err);
    if (rc == 0) rc = tables(&g, t);
    if (rc == 0 && c->out) rc = overlay(&g, c);
    cli_cp_free(&g);
    return rc;
}

/* Adds --data-load-events' comma-separated patterns. @return 0, or CLI_BAD_INPUT after a
 * message. */
static int data_load_option(ctx *c, const char *arg) {
    char **t = realloc(c->texts, (c->ntexts + 1) * sizeof *t);
    if (t == NULL) return cli_usage_error("critical-path", "out of memory", NULL);
    c->texts = t;
    char *copy = strdup(arg);
    if (copy == NULL) return cli_usage_error("critical-path", "out of memory", NULL);
    c->texts[c->ntexts++] = copy;
    for (char *p = copy, *next; p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = '\0';
        if (*p == '\0')
            return cli_usage_error("critical-path", "--data-load-events needs patterns", arg);
        if (c->ndl == c->dl_cap) {
            size_t cap = c->dl_cap ? 2 * c->dl_cap : 4;
            const char **d = realloc(c->dl, cap * sizeof *d);
            if (d) c->dl = d;
            regex_t *r = d ? realloc(c->dl_re, cap * sizeof *r) : NULL;
            if (r == NULL) return cli_usage_error("critical-path", "out of memory", NULL);
            c->dl_re = r;
            c->dl_cap = cap;
        }
        int rc = regcomp(&c->dl_re[c->ndl], p, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[128], msg[192];
            regerror(rc, &c->dl_re[c->ndl], why, sizeof why);
            snprintf(msg, sizeof msg, "bad --data-load-events pattern (%s)", why);
            return cli_usage_error("critical-path", msg, p);
        }
        c->dl[c->ndl++] = p;
    }
    c->o.data_load = c->dl;
    c->o.data_load_re = c->dl_re;
    c->o.ndata_load = c->ndl;
    return 0;
}

static int option(void *vc, int o, const char *arg) {
    ctx *c = vc;
    unsigned long long v;
    switch (o) {
    case OPT_ANNOTATION:
        c->o.annotation = arg;
        return 0;
    case OPT_INSTANCE: {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", arg);
        char *colon = strchr(buf, ':');
        if (colon) *colon = '\0';
        if (cli_parse_count("critical-path", "--instance", buf, LONG_MAX, &v)) return CLI_BAD_INPUT;
        c->o.inst_lo = c->o.inst_hi = (long)v;
        if (colon) {
            if (cli_parse_count("critical-path", "--instance", colon + 1, LONG_MAX, &v))
                return CLI_BAD_INPUT;
            c->o.inst_hi = (long)v;
            if (c->o.inst_hi < c->o.inst_lo)
                return cli_usage_error("critical-path", "--instance N:M needs N <= M", arg);
        }
        return 0;
    }
    case OPT_RANK:
        if (cli_parse_count("critical-path", "--rank", arg, INT64_MAX, &v)) return CLI_BAD_INPUT;
        c->rank = (int64_t)v;
        c->has_rank = 1;
        return 0;
    case OPT_ZERO:
        c->o.zero_weight_launch = 1;
        return 0;
    case 'o':
        c->out = arg;
        return 0;
    case OPT_ALL_EVENTS:
        c->all_events = 1;
        return 0;
    case OPT_ALL_EDGES:
        c->all_edges = 1;
        return 0;
    case OPT_DATA_LOAD:
        return data_load_option(c, arg);
    default:
        return CLI_HTA_UNKNOWN_OPTION;
    }
}

static const char *const scols[] = {"bound_by", "duration", "percent"};
static const uint8_t stext[] = {1, 0, 0};
static const char *const pcols[] = {"ts",  "duration", "type", "event_idx", "name",
                                    "cat", "pid",      "tid",  "stream",    "bound_by"};
static const uint8_t ptext[] = {0, 0, 1, 0, 1, 1, 0, 0, 0, 1};
static const char *const gcols[] = {"length",      "path_nodes",  "path_edges",   "critical_events",
                                    "graph_nodes", "graph_edges", "window_start", "window_end"};
static const uint8_t gtext[8] = {0};

const cli_hta_command hta_cmd_critical_path = {
    "critical-path",
    cmd_critical_path_usage,
    cmd_critical_path_options,
    ":o:f:j:qhV",
    option,
    run,
    {{"summary", scols, stext, 3}, {"path", pcols, ptext, 10}, {"graph", gcols, gtext, 8}},
    3};

int cmd_critical_path(int argc, char **argv) {
    ctx c = {
        {"ProfilerStep", 0, 0, 0, 0, NULL, NULL, 0}, 0, 0, NULL, 0, 0, NULL, NULL, 0, 0, NULL, 0};
    int rc = cli_hta_main(&hta_cmd_critical_path, &c, argc, argv);
    for (size_t k = 0; k < c.ndl; k++)
        regfree(&c.dl_re[k]);
    for (size_t k = 0; k < c.ntexts; k++)
        free(c.texts[k]);
    free(c.dl);
    free(c.dl_re);
    free(c.texts);
    return rc;
}
