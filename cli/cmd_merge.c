/* cmd_merge.c: `strobe merge DIR|FILES... -o OUT`: the rank traces of one job as one trace, each
 * rank a process (or several) of its own, on rank 0's clock.
 *
 * Contents: the usage text; the inputs (folders listed); each rank's metadata, read before any
 * event is merged (distributedInfo, strobe_job, strobe_clock_sync: the keys src/trace/kineto.h
 * defines, STROBE_KINETO_KEY_DISTRIBUTED_INFO, _JOB and _CLOCK_SYNC, spelled out here as cli/ does
 * not include src/trace); the checks that the traces are one job; the merge itself (cli_merge_ex
 * in merge.c, which reads and aligns the ranks on -j threads, or across the processes of an MPI
 * launch, and writes them in rank order from one writer, so that memory holds about 2 x jobs
 * ranks' events however many ranks there are); and what is said about it.
 *
 * Clocks. A rank's strobe_clock_sync says that its time t is t + O + (t - T) * D / 1e9 on rank
 * 0's clock; every time of the rank is mapped so before it is written. A rank without it is merged
 * as it is, with a warning (its clock is taken to be rank 0's). The merged trace's "strobe_merge"
 * member lists, per rank, its file, host, the offset and drift applied and their uncertainty. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "merge.h"
#include "mpi.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

const char cmd_merge_usage[] =
    "NAME\n"
    "    strobe merge - the rank traces of one job as one trace, clocks aligned\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe merge [-q] [-j N] [--overlap=lanes|cut] DIR|TRACE... -o OUT\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads the per-rank traces of one job (a folder's .json, .json.gz, .pftrace and\n"
    "    .pftrace.gz files, or the files named) and writes one trace of the whole job: each\n"
    "    rank's processes and devices as processes of their own, named \"rank R (HOST): NAME\"\n"
    "    (HOST from the trace's strobe_job) and sorted by rank, their pids renumbered so that\n"
    "    ranks never collide (rank R's become (R + 1) * 1000, +1 ...; a process's own pid is\n"
    "    its label \"pid N\"). Threads, GPU streams, flows (made unique per rank), args and\n"
    "    counters are kept.\n"
    "\n"
    "    Each rank's times are put on rank 0's clock with the offset and drift the rank\n"
    "    measured (its strobe_clock_sync: t + offset_ns + (t - t_ref_ns) * drift_ppb / 1e9).\n"
    "    A rank that has none is merged unshifted, with a warning. The output's\n"
    "    \"distributedInfo\" gives the job's world_size; its \"strobe_merge\" gives, per rank,\n"
    "    the file, host, the offset and drift applied and their uncertainty.\n"
    "\n"
    "    The format of OUT is chosen by its name, as strobe convert chooses it: \".pftrace\"\n"
    "    writes Perfetto's format, anything else Kineto JSON; \".gz\" compresses. The ranks\n"
    "    are read on -j threads, at most 2 x N of them ahead of the one writer, which writes\n"
    "    them in rank order: memory holds about 2 x N ranks' events, not the job's, and the\n"
    "    output is the same bytes for every N. With -j 1 a progress line shows the rank being\n"
    "    read (on a terminal); with more, none is shown. Under mpirun (or srun) process p of P\n"
    "    reads ranks p, p + P ... and sends them to rank 0, which writes the output alone.\n"
    "\n"
    "    Refused (exit 2, naming the files): traces of different jobs (strobe_job's id or\n"
    "    distributedInfo's world_size differ), two traces of one rank, a rank outside\n"
    "    0..world_size-1, traces some of which have a rank and some not, an unreadable file,\n"
    "    a folder without traces. Traces without any rank are merged in the order given, as\n"
    "    ranks 0, 1 ... A rank missing from 0..world_size-1, or a trace cut short (a rank\n"
    "    killed mid-run), is merged all the same and said on standard error.\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output OUT   the merged trace (required)\n"
    "    --overlap POLICY   a slice that overlaps its parent without nesting ends with its\n"
    "                       parent (cut, the default) or goes on a lane of its own under\n"
    "                       its thread (lanes, as strobe convert does)\n"
    "    -q, --quiet        only problems on standard error\n" CLI_JOBS_USAGE
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 merged (also with ranks missing or short); 2 bad usage, inputs that are not one\n"
    "    job, unreadable input, or an output error.\n";

const struct option cmd_merge_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"overlap", required_argument, NULL, 'O'},
    CLI_OPTION_QUIET,
    CLI_OPTION_JOBS,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* Where the command's own messages go: stderr, but in a process other than rank 0 under an MPI
 * launcher, where every process finds the same problems before the split and rank 0 alone says
 * them (and what merging says comes to rank 0 with the ranks read). */
static FILE *cm_err;

/* ---- the inputs ------------------------------------------------------------------------------ */

/* What a rank's trace says about itself. */
typedef struct rank_file {
    char *path;
    int has_rank;
    int64_t rank, world, local_rank;
    char backend[32];
    char *job, *host; /* NULL: not given */
    int64_t pid;
    int has_clock;
    int64_t offset_ns, t_ref_ns, uncertainty_ns, rtt_ns, samples;
    double drift_ppb;
    int has_base, has_first;
    int64_t base_ns, first_ns; /* first_ns: the first event's time */
    char prefix[400];
} rank_file;

/* The most ranks one merge takes (see check_job). */
#define MAX_RANKS 8192

typedef struct file_list {
    rank_file *v;
    size_t n, cap;
} file_list;

/* A trace's name in a folder (hidden files left out). */
static int is_trace_name(const char *name) {
    static const char *const exts[] = {".json",       ".json.gz",        ".pftrace",
                                       ".pftrace.gz", ".perfetto-trace", ".perfetto-trace.gz"};
    if (name[0] == '.') return 0;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (cli_ends_with(name, exts[i])) return 1;
    return 0;
}

static int push_file(file_list *l, const char *path) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        rank_file *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) return STROBE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    rank_file *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (f->path == NULL) return STROBE_ENOMEM;
    f->local_rank = -1;
    l->n++;
    return 0;
}

/* A folder's traces, in name order, but `skip` (the output, when it is there from an earlier
 * merge). @return 0, or CLI_BAD_INPUT after a message. */
static int list_folder(file_list *l, const char *dir, const struct stat *skip) {
    char **paths;
    size_t n;
    int rc = cli_folder_files(dir, is_trace_name, skip, &paths, &n);
    if (rc == -1) {
        fprintf(cm_err, "strobe merge: %s: %s\n", cli_esc(dir), strerror(errno));
        return CLI_BAD_INPUT;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = push_file(l, paths[i]);
    cli_free_paths(paths, n);
    if (rc) {
        fprintf(cm_err, "strobe merge: out of memory\n");
        return CLI_BAD_INPUT;
    }
    if (n == 0) {
        fprintf(cm_err,
                "strobe merge: %s: no trace (.json, .json.gz, .pftrace or .pftrace.gz file) in "
                "this folder\n",
                cli_esc(dir));
        return CLI_BAD_INPUT;
    }
    return 0;
}

/* ---- each rank's metadata -------------------------------------------------------------------- */

static int get_int(const strobe_rd_value *obj, const char *key, int64_t *out) {
    strobe_rd_value v;
    return strobe_rd_obj_get(obj->raw, obj->len, key, &v) == 1 && strobe_rd_value_int(&v, out) == 0;
}

static char *get_str(const strobe_rd_value *obj, const char *key) {
    strobe_rd_value v;
    char buf[256];
    if (strobe_rd_obj_get(obj->raw, obj->len, key, &v) != 1) return NULL;
    /* A job id may be a number (Open MPI's is). */
    if (v.type == STROBE_RD_T_NUMBER && v.len < sizeof buf) {
        memcpy(buf, v.raw, v.len);
        buf[v.len] = '\0';
        return strdup(buf);
    }
    if (strobe_rd_value_str(&v, buf, sizeof buf, NULL) != 0) return NULL;
    return strdup(buf);
}

/* What member `mt` says about the rank. @return whether it was one of the three looked for. */
static int take_meta(rank_file *f, const strobe_rd_meta *mt) {
    const strobe_rd_value *v = &mt->value;
    if (mt->key.s == NULL || v->type != STROBE_RD_T_OBJECT) return 0;
    if (strcmp(mt->key.s, "distributedInfo") == 0) {
        f->has_rank = get_int(v, "rank", &f->rank) && f->rank >= 0;
        if (!get_int(v, "world_size", &f->world)) f->world = -1;
        if (!get_int(v, "local_rank", &f->local_rank)) f->local_rank = -1;
        char *b = get_str(v, "backend");
        snprintf(f->backend, sizeof f->backend, "%s", b ? b : "");
        free(b);
        return 1;
    }
    if (strcmp(mt->key.s, "strobe_job") == 0) {
        free(f->job);
        free(f->host);
        f->job = get_str(v, "id");
        f->host = get_str(v, "host");
        if (!get_int(v, "pid", &f->pid)) f->pid = 0;
        return 1;
    }
    if (strcmp(mt->key.s, "strobe_clock_sync") == 0) {
        strobe_rd_value d;
        f->has_clock = get_int(v, "offset_ns", &f->offset_ns);
        if (!get_int(v, "t_ref_ns", &f->t_ref_ns)) f->t_ref_ns = 0;
        f->drift_ppb = 0;
        /* A drift without its reference time cannot be applied, nor one of 10% or more. */
        if (strobe_rd_obj_get(v->raw, v->len, "drift_ppb", &d) == 1 &&
            (strobe_rd_value_double(&d, &f->drift_ppb) != 0 || f->t_ref_ns == 0 ||
             !(f->drift_ppb > -1e8 && f->drift_ppb < 1e8)))
            f->drift_ppb = 0;
        if (!get_int(v, "uncertainty_ns", &f->uncertainty_ns)) f->uncertainty_ns = -1;
        if (!get_int(v, "round_trip_ns", &f->rtt_ns)) f->rtt_ns = -1;
        if (!get_int(v, "samples", &f->samples)) f->samples = -1;
        return 1;
    }
    return 0;
}

/* Reads the rank's metadata: the members before its first event, and when any of the three is
 * not among them, the rest of the file for them (a stream writes its members at its end).
 * @return 0, or CLI_BAD_INPUT after a message (nothing of it can be read). */
static int read_meta(rank_file *f) {
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.prescan_base = 1;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, f->path, &opt);
    int found = 0, events = 0;
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        rc = 0;
        if (it.kind == STROBE_RD_META) found += take_meta(f, it.meta);
        if (it.kind == STROBE_RD_EVENT) {
            events++;
            if (events == 1) {
                const strobe_rd_info *info = strobe_rd_get_info(rd);
                f->has_base = info->has_base_time;
                f->base_ns = info->base_time_ns;
            }
            if (!f->has_first && it.event->has_abs && !it.event->bad) {
                f->has_first = 1;
                f->first_ns = it.event->abs_ts_ns;
            }
            if (found >= 3 && f->has_first) break;
        }
    }
    if (rc < 0 && events == 0 && found == 0) {
        fprintf(
            cm_err, "strobe merge: %s\n",
            cli_esc(rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd) : strobe_strerror(rc)));
        strobe_rd_close(rd);
        return CLI_BAD_INPUT;
    }
    if (events == 0 && rd) {
        const strobe_rd_info *info = strobe_rd_get_info(rd);
        f->has_base = info->has_base_time;
        f->base_ns = info->base_time_ns;
    }
    strobe_rd_close(rd);
    return 0;
}

/* ---- the job's checks ------------------------------------------------------------------------ */

static int by_rank(const void *a, const void *b) {
    const rank_file *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Refuses inputs that are not one job. @return 0, or CLI_BAD_INPUT after the message. */
static int check_job(file_list *l, int64_t *world) {
    size_t with = 0;
    for (size_t i = 0; i < l->n; i++)
        with += l->v[i].has_rank;
    if (with > 0 && with < l->n) {
        for (size_t i = 0; i < l->n; i++)
            if (!l->v[i].has_rank) {
                fprintf(cm_err,
                        "strobe merge: %s has no rank (distributedInfo.rank) and other traces "
                        "have: not one job's traces\n",
                        cli_esc(l->v[i].path));
                return CLI_BAD_INPUT;
            }
    }
    if (with == 0) {
        /* Traces without ranks (one job's all the same, say the operands): their order. */
        for (size_t i = 0; i < l->n; i++) {
            l->v[i].rank = (int64_t)i;
            l->v[i].world = (int64_t)l->n;
        }
        fprintf(cm_err,
                "strobe merge: warning: no trace has a rank (distributedInfo): merged as "
                "ranks 0..%zu in the order given\n",
                l->n - 1);
    }
    *world = -1;
    const rank_file *wf = NULL, *jf = NULL;
    for (size_t i = 0; i < l->n; i++) {
        const rank_file *f = &l->v[i];
        if (f->world > 0) {
            if (wf && f->world != *world) {
                fprintf(cm_err,
                        "strobe merge: %s (world_size %" PRId64 ") and %s (world_size %" PRId64
                        ") are not of one job\n",
                        cli_esc(wf->path), *world, cli_esc(f->path), f->world);
                return CLI_BAD_INPUT;
            }
            wf = f;
            *world = f->world;
        }
        if (f->job) {
            if (jf && strcmp(jf->job, f->job) != 0) {
                fprintf(cm_err, "strobe merge: %s (job %s) ", cli_esc(jf->path), cli_esc(jf->job));
                fprintf(cm_err, "and %s (job %s) are not of one job\n", cli_esc(f->path),
                        cli_esc(f->job));
                return CLI_BAD_INPUT;
            }
            jf = f;
        }
    }
    qsort(l->v, l->n, sizeof *l->v, by_rank);
    for (size_t i = 0; i < l->n; i++) {
        const rank_file *f = &l->v[i];
        if (i > 0 && f->rank == l->v[i - 1].rank) {
            fprintf(cm_err, "strobe merge: %s and %s are both rank %" PRId64 "\n",
                    cli_esc(l->v[i - 1].path), cli_esc(f->path), f->rank);
            return CLI_BAD_INPUT;
        }
        if (*world > 0 && f->rank >= *world) {
            fprintf(cm_err,
                    "strobe merge: %s: rank %" PRId64 " is outside the job's 0..%" PRId64 "\n",
                    cli_esc(f->path), f->rank, *world - 1);
            return CLI_BAD_INPUT;
        }
        /* The renumbered pids must stay below 2^24, what Perfetto's Kineto tracks hold, and flow
         * ids (the rank's index above bit 40, merge.c) below 2^53, what JSON readers hold. */
        if (f->rank >= MAX_RANKS) {
            fprintf(cm_err,
                    "strobe merge: %s: rank %" PRId64 " is beyond the %d ranks merge takes\n",
                    cli_esc(f->path), f->rank, MAX_RANKS);
            return CLI_BAD_INPUT;
        }
    }
    if (*world <= 0) *world = l->v[l->n - 1].rank + 1;
    return 0;
}

/* Says which ranks of 0..world-1 have no trace (the first few, and how many). */
static void say_missing(const file_list *l, int64_t world) {
    size_t j = 0, shown = 0;
    int64_t missing = world - (int64_t)l->n;
    if (missing <= 0) return;
    fprintf(cm_err,
            "strobe merge: warning: %" PRId64 " of %" PRId64 " ranks have no trace:", missing,
            world);
    for (int64_t r = 0; r < world && shown < 20; r++) {
        while (j < l->n && l->v[j].rank < r)
            j++;
        if (j < l->n && l->v[j].rank == r) continue;
        fprintf(cm_err, " %" PRId64, r);
        shown++;
    }
    fprintf(cm_err, "%s (merged without them)\n", missing > 20 ? " ..." : "");
}

/* ---- the merged trace's metadata ------------------------------------------------------------- */

/* "distributedInfo" (Kineto's key: rank 0's backend, the job's world_size) and "strobe_merge"
 * (per rank: file, host, what was applied to its clock). *dist and *merge are malloc'd. */
static int make_meta(const file_list *l, int64_t world, char **dist, size_t *dlen, char **merge,
                     size_t *mlen) {
    FILE *o = open_memstream(dist, dlen);
    if (o == NULL) return STROBE_ENOMEM;
    fputs("{\"backend\": ", o);
    cli_json_str(o, l->v[0].backend[0] ? l->v[0].backend : "unknown");
    fprintf(o, ", \"world_size\": %" PRId64 "}", world);
    if (fclose(o) != 0) return STROBE_ENOMEM;
    o = open_memstream(merge, mlen);
    if (o == NULL) return STROBE_ENOMEM;
    fputs("{\"job\": ", o);
    const char *job = NULL;
    for (size_t i = 0; i < l->n && !job; i++)
        job = l->v[i].job;
    if (job)
        cli_json_str(o, job);
    else
        fputs("null", o);
    fprintf(o, ", \"world_size\": %" PRId64 ", \"reference_rank\": 0, \"ranks\": [", world);
    for (size_t i = 0; i < l->n; i++) {
        const rank_file *f = &l->v[i];
        fprintf(o, "%s{\"rank\": %" PRId64 ", \"file\": ", i ? ", " : "", f->rank);
        cli_json_str(o, f->path);
        fputs(", \"host\": ", o);
        if (f->host)
            cli_json_str(o, f->host);
        else
            fputs("null", o);
        fprintf(o,
                ", \"pid_base\": %" PRId64 ", \"aligned\": %s, \"offset_ns\": %" PRId64
                ", \"drift_ppb\": %.17g, \"t_ref_ns\": %" PRId64,
                (f->rank + 1) * CLI_MERGE_MAX_PIDS, f->has_clock ? "true" : "false",
                f->has_clock ? f->offset_ns : 0, f->has_clock ? f->drift_ppb : 0.0,
                f->has_clock ? f->t_ref_ns : 0);
        if (f->has_clock && f->uncertainty_ns >= 0)
            fprintf(o, ", \"uncertainty_ns\": %" PRId64, f->uncertainty_ns);
        else
            fputs(", \"uncertainty_ns\": null", o);
        fputs("}", o);
    }
    fputs("]}", o);
    return fclose(o) != 0 ? STROBE_ENOMEM : 0;
}

/* ---- the command ----------------------------------------------------------------------------- */

static void free_files(file_list *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].path);
        free(l->v[i].job);
        free(l->v[i].host);
    }
    free(l->v);
}

static int merge_job(file_list *l, const char *out, int quiet, int overlap) {
    for (size_t i = 0; i < l->n; i++)
        if (read_meta(&l->v[i]) != 0) return CLI_BAD_INPUT;
    int64_t world;
    if (check_job(l, &world) != 0) return CLI_BAD_INPUT;
    say_missing(l, world);
    cli_merge_input *in = calloc(l->n, sizeof *in);
    int *state = calloc(l->n, sizeof *state);
    char *dist = NULL, *meta = NULL;
    size_t dlen = 0, mlen = 0;
    int rc = in && state ? make_meta(l, world, &dist, &dlen, &meta, &mlen) : STROBE_ENOMEM;
    if (rc) {
        fprintf(cm_err, "strobe merge: out of memory\n");
        free(in);
        free(state);
        free(dist);
        free(meta);
        return CLI_BAD_INPUT;
    }
    int has_base = 0, opt_base_set = 0;
    int64_t base = 0;
    for (size_t i = 0; i < l->n; i++) {
        rank_file *f = &l->v[i];
        if (f->host)
            snprintf(f->prefix, sizeof f->prefix, "rank %" PRId64 " (%.300s)", f->rank, f->host);
        else
            snprintf(f->prefix, sizeof f->prefix, "rank %" PRId64, f->rank);
        in[i] = (cli_merge_input){.path = f->path,
                                  .own_pids = 1,
                                  .pid_base = (f->rank + 1) * CLI_MERGE_MAX_PIDS,
                                  .sort_base = f->rank * 2 * CLI_MERGE_MAX_PIDS,
                                  .prefix = f->prefix,
                                  .has_clock = f->has_clock && f->rank != 0,
                                  .offset_ns = f->offset_ns,
                                  .t_ref_ns = f->t_ref_ns,
                                  .drift_ppb = f->drift_ppb};
        if (!f->has_clock && f->rank != 0)
            fprintf(cm_err,
                    "strobe merge: warning: rank %" PRId64 " (%s) has no strobe_clock_sync: "
                    "merged unshifted (offset 0)\n",
                    f->rank, cli_esc(f->path));
        /* The output's base: the earliest rank's, on rank 0's clock. */
        if (f->has_base) {
            int64_t b = cli_merge_align(&in[i], f->base_ns);
            if (!has_base || b < base) base = b;
            has_base = 1;
        }
    }
    /* Traces without a base time (older PyTorch ones: absolute microseconds) get one, so that
     * the output's times are small numbers, which viewers read as doubles without losing their
     * nanoseconds: 10 s before the earliest first event (traces are roughly in time order). */
    for (size_t i = 0; !has_base && i < l->n; i++)
        if (l->v[i].has_first) {
            int64_t b = cli_merge_align(&in[i], l->v[i].first_ns) - (int64_t)10000000000;
            if (!opt_base_set || b < base) base = b;
            opt_base_set = 1;
        }
    if (opt_base_set) has_base = 1;
    const char *keys[] = {"distributedInfo", "strobe_merge"};
    const char *vals[] = {dist, meta};
    cli_merge_options opt = {.trace_name = NULL,
                             .has_base = has_base,
                             .base_ns = base,
                             .meta_keys = keys,
                             .meta_values = vals,
                             .nmeta = 2,
                             .state = state,
                             .progress = !quiet,
                             .overlap = overlap};
    /* Under an MPI launcher every process has made the same checks; the ranks are split now. */
    int mpi_rank = 0, mpi_size = 1;
    if (cli_mpi_launched_size() > 1 && cli_mpi_start("merge", &mpi_rank, &mpi_size) != 0) {
        free(in);
        free(state);
        free(dist);
        free(meta);
        return CLI_BAD_INPUT;
    }
    size_t share = mpi_size > 1 ? (l->n + (size_t)mpi_size - 1) / (size_t)mpi_size : l->n;
    opt.jobs = cli_jobs_for(share);
    opt.mpi_rank = mpi_rank;
    opt.mpi_size = mpi_size;
    cli_merge_stats st;
    rc = cli_merge_ex("merge", in, l->n, out, &opt, &st);
    if (mpi_size > 1) cli_mpi_finish();
    if (mpi_rank != 0) {
        /* Rank 0 says what became of the merge. */
        free(in);
        free(state);
        free(dist);
        free(meta);
        return rc == 0 ? CLI_OK : CLI_BAD_INPUT;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (state[i] == CLI_MERGE_SHORT)
            fprintf(cm_err,
                    "strobe merge: warning: rank %" PRId64 " (%s) is short (its trace was cut, "
                    "as when the rank was killed mid-run): merged up to where it ends\n",
                    l->v[i].rank, cli_esc(l->v[i].path));
        else if (state[i] == CLI_MERGE_FAILED && rc == 0)
            fprintf(cm_err,
                    "strobe merge: warning: rank %" PRId64 " (%s) could not be read: "
                    "left out\n",
                    l->v[i].rank, cli_esc(l->v[i].path));
    }
    if (rc == 0 && !quiet)
        fprintf(cm_err, "strobe merge: wrote %s: %zu rank%s, %zu process%s, %llu event%s\n",
                cli_esc(out), l->n, l->n == 1 ? "" : "s", st.processes,
                st.processes == 1 ? "" : "es", (unsigned long long)st.events,
                st.events == 1 ? "" : "s");
    if (rc == 0 && st.clipped)
        fprintf(cm_err,
                "strobe merge: %llu slice(s) ended after the slice around them: ended "
                "with it\n",
                (unsigned long long)st.clipped);
    if (rc == 0 && st.on_lanes)
        fprintf(cm_err,
                "strobe merge: %llu slice(s) overlap a slice without nesting in it: kept whole "
                "on %llu extra track(s) of their thread\n",
                (unsigned long long)st.on_lanes, (unsigned long long)st.lanes);
    free(in);
    free(state);
    free(dist);
    free(meta);
    return rc == 0 ? CLI_OK : CLI_BAD_INPUT;
}

int cmd_merge(int argc, char **argv) {
    cli_merge_args a = {.overlap = CLI_MERGE_CUT};
    int code = cli_merge_getopt("merge", cmd_merge_usage, cmd_merge_options, argc, argv, &a);
    if (code >= 0) return code;
    const char *out = a.out;
    int first = a.first, quiet = a.quiet, overlap = a.overlap;
    if (first >= argc) return cli_usage_error("merge", "a folder or traces are required", NULL);
    if (out == NULL) return cli_usage_error("merge", "-o OUT is required", NULL);
    if (out[0] == '\0') return cli_usage_error("merge", "OUT is empty", NULL);
    cm_err = stderr;
    if (cli_mpi_launched_size() > 1 && cli_mpi_launched_rank() != 0) {
        FILE *null = fopen("/dev/null", "w");
        if (null) cm_err = null;
    }
    file_list l = {0};
    int rc = CLI_OK;
    struct stat out_st;
    int has_out = stat(out, &out_st) == 0;
    for (int i = first; rc == CLI_OK && i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(cm_err, "strobe merge: %s: %s\n", cli_esc(argv[i]), strerror(errno));
            rc = CLI_BAD_INPUT;
        } else if (S_ISDIR(st.st_mode)) {
            rc = list_folder(&l, argv[i], has_out ? &out_st : NULL);
        } else if (push_file(&l, argv[i]) != 0) {
            fprintf(cm_err, "strobe merge: out of memory\n");
            rc = CLI_BAD_INPUT;
        }
    }
    if (rc == CLI_OK) rc = merge_job(&l, out, quiet, overlap);
    free_files(&l);
    if (cm_err != stderr) fclose(cm_err);
    return cli_finish("merge", out, 0, rc);
}
