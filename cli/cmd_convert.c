/* cmd_convert.c: `strobe convert IN OUT`: Kineto JSON (strobe's or PyTorch's) to Perfetto
 * protobuf, and a Perfetto trace written by strobe back to Kineto JSON.
 *
 * Contents: the usage text; Perfetto to JSON (the reader's decoder does the work); JSON to
 * Perfetto: collecting the events, tracks for each (pid, tid), and writing them through the
 * library's event-level writer (strobe/writer.h), the same Perfetto writer that saves and streams.
 *
 * JSON to Perfetto. Perfetto's slices are begin/end pairs that must nest on their track, and a
 * JSON trace lists complete events in any order. So every event is collected first (the trace
 * fits in memory as its own JSON did), sorted per track by start (longer first on ties), and
 * written with a stack of open slices per lane. A slice that starts inside another and ends after
 * it (real PyTorch traces have a few) goes whole on the first lane of its thread where it nests:
 * an extra track whose parent is the thread's track, which Perfetto shows with the thread and
 * strobe's reader reads back as the thread's, so that every command gives the numbers the JSON
 * gives. The count is reported on stderr.
 * Flows ("s", "f") are bound as Perfetto's JSON importer binds them: to the innermost slice of
 * their thread that encloses their time ("f" without "bp": "e", to the next slice that starts).
 * Several ends of one flow (Kineto's CUDA graph launch: an "f" on each kernel) each get an id of
 * their own, all listed on the start, as a terminating flow id closes its flow in Perfetto.
 * The top-level members (trace_id, baseTimeNanoseconds ...) go on strobe's session slice (flagged
 * STROBE_WRITER_SESSION), where the Perfetto writer puts a result's; a trace without one
 * (PyTorch's) keeps its times relative to its base and loses its top-level members. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "common.h"
#include "merge.h"
#include "reader/json_pull.h"
#include "reader/pftrace_dec.h"
#include "strobe/error.h"
#include "reader/trace_reader.h"
#include "strobe/writer.h"
#include "util/pftrace_enc.h"
#include "util/strpool.h"
#include "util/strtab.h"

const char cmd_convert_usage[] =
    "NAME\n"
    "    strobe convert - convert a trace between Kineto JSON and Perfetto protobuf\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe convert [-q] IN OUT\n"
    "    strobe convert [-q] IN -o OUT\n"
    "\n"
    "DESCRIPTION\n"
    "    The format of OUT is chosen by its name: \".pftrace\" or \".perfetto-trace\" writes\n"
    "    Perfetto's protobuf trace format (TrackEvent), anything else Kineto-format JSON;\n"
    "    either is gzip-compressed when OUT ends in \".gz\" (.pftrace.gz, .json.gz).\n"
    "\n"
    "    OUT is written to a temporary file in its folder and renamed when complete: a\n"
    "    conversion that fails leaves an existing OUT as it was, and no partial file. An OUT\n"
    "    that is a device or a pipe (/dev/null) is written in place, not replaced.\n"
    "    JSON to Perfetto: IN is a Kineto-format trace (.json or .json.gz; \"-\" is standard\n"
    "    input) written by strobe or by the PyTorch profiler. Complete events (X, and B/E\n"
    "    pairs) become slices, instants stay instants, counters (C) become counter tracks,\n"
    "    flows (s/f) become flows, process and thread names (M) name the tracks, and args\n"
    "    become debug annotations. A slice that starts inside another and ends after it is\n"
    "    kept whole on an extra track of its thread, named \"THREAD (overlaps, lane N)\":\n"
    "    Perfetto shows it with the thread, and strobe reads it back as the thread's (the\n"
    "    count is on stderr).\n"
    "\n"
    "    Perfetto to JSON: IN is a Perfetto trace (.pftrace, .perfetto-trace, or recognized by\n"
    "    its bytes) written by strobe, or another TrackEvent trace. The JSON is what strobe's\n"
    "    JSON writer writes for the same result, with the true end of ranges that end in the\n"
    "    very nanosecond their parent ends (the JSON writer shortens those by 1 ns).\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output OUT   the output (instead of the second operand)\n"
    "    -q, --quiet        no progress line on standard error\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 converted; 2 bad usage, unreadable or malformed input, or an output error.\n";

/* Reads a whole file, gunzipping when it is gzip. NULL with errno-ish message on failure. */
static unsigned char *read_all(const char *path, size_t *len, const char **why) {
    errno = 0;
    int fd0 = strcmp(path, "-") == 0 ? dup(0) : -1;
    gzFile g = fd0 >= 0 ? gzdopen(fd0, "rb") : gzopen(path, "rb");
    if (!g) {
        if (fd0 >= 0) close(fd0);
        *why = errno ? strerror(errno) : "cannot open";
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    unsigned char *p = malloc(cap);
    for (;;) {
        if (!p) {
            *why = "out of memory";
            gzclose(g);
            return NULL;
        }
        int got = gzread(g, p + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n));
        if (got < 0) {
            *why = "read error (or corrupt gzip data)";
            free(p);
            gzclose(g);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n == cap) {
            unsigned char *q = realloc(p, cap * 2);
            if (!q) free(p);
            p = q;
            cap *= 2;
        }
    }
    gzclose(g);
    *len = n;
    return p;
}

/* ---- output: through a temporary file ------------------------------------------------------ */

/* The output is written to a temporary file in OUT's folder and renamed over OUT once complete,
 * as strobe_result_save() does: a failed conversion leaves an existing OUT as it was and no
 * partial file. The temporary name is short whatever OUT's length, so that it stays within
 * NAME_MAX. OUT ending in ".gz" is gzip-compressed (.json.gz, .pftrace.gz). */
typedef struct out_file {
    const char *path;
    char tmp[4200]; /* "" when OUT is written in place (a device or a pipe) */
    int fd;
    FILE *f;   /* plain output */
    gzFile gz; /* ".gz" output */
    int err;   /* errno of the first failure, or -1 for a zlib one */
} out_file;

static int out_streams(out_file *o);

static int out_open(out_file *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->path = path;
    o->fd = -1;
    /* A device or a pipe (/dev/null, /dev/full) is written in place (o->tmp stays ""): a rename
     * would replace it with a regular file. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        o->fd = open(path, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0) {
            fprintf(stderr, "strobe convert: %s: %s\n", cli_esc(path), strerror(errno));
            return -1;
        }
        return out_streams(o);
    }
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(o->tmp, sizeof o->tmp, "%.*s.strobe-convert.XXXXXX", dir, path) >=
        (int)sizeof o->tmp) {
        fprintf(stderr, "strobe convert: %s: the path is too long\n", cli_esc(path));
        return -1;
    }
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        fprintf(stderr, "strobe convert: %s: cannot create a file in its folder: %s\n",
                cli_esc(path), strerror(errno));
        return -1;
    }
    /* mkstemp makes the file private; the output gets the mode a new file would. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(o->fd, 0666 & ~mask) != 0) o->err = errno;
    return out_streams(o);
}

/* The stdio or zlib stream over o->fd (a failure kept in o->err for out_commit). @return 0. */
static int out_streams(out_file *o) {
    if (cli_ends_with(o->path, ".gz")) {
        int fd2 = dup(o->fd);
        o->gz = fd2 >= 0 ? gzdopen(fd2, "wb1") : NULL;
        if (o->gz == NULL) {
            if (fd2 >= 0) close(fd2);
            o->err = errno ? errno : ENOMEM;
        }
    } else {
        int fd2 = dup(o->fd);
        o->f = fd2 >= 0 ? fdopen(fd2, "wb") : NULL;
        if (o->f == NULL) {
            if (fd2 >= 0) close(fd2);
            o->err = errno;
        }
    }
    return 0;
}

/* @return 0, or STROBE_EIO (the cause kept for out_commit's message). */
static int out_write(out_file *o, const void *data, size_t len) {
    const char *p = data;
    while (o->err == 0 && len > 0) {
        size_t chunk = len > (1u << 30) ? 1u << 30 : len;
        errno = 0;
        if (o->gz ? gzwrite(o->gz, p, (unsigned)chunk) != (int)chunk
                  : fwrite(p, 1, chunk, o->f) != chunk)
            o->err = errno ? errno : -1;
        p += chunk;
        len -= chunk;
    }
    return o->err ? STROBE_EIO : 0;
}

/* Finishes the output: with ok, flushes, syncs and renames it over OUT; otherwise (or when any
 * of that fails) removes the temporary file. @return 0, or -1 after a message. */
static int out_commit(out_file *o, int ok) {
    errno = 0;
    if (o->gz && gzclose(o->gz) != Z_OK && o->err == 0) o->err = errno ? errno : -1;
    if (o->f && fclose(o->f) != 0 && o->err == 0) o->err = errno;
    if (ok && o->err == 0 && fsync(o->fd) != 0 && errno != EINVAL) o->err = errno;
    if (o->fd >= 0) close(o->fd);
    if (ok && o->err == 0 && o->tmp[0] && rename(o->tmp, o->path) != 0) o->err = errno;
    if (ok && o->err == 0) return 0;
    if (o->tmp[0]) unlink(o->tmp);
    if (ok)
        fprintf(stderr, "strobe convert: %s: cannot write: %s\n", cli_esc(o->path),
                o->err > 0 ? strerror(o->err) : "compression failed");
    return -1;
}

static int pf_to_json(const char *in, const char *out, int quiet) {
    size_t len = 0;
    const char *why = NULL;
    cli_progress *p = cli_progress_start("convert", in, quiet);
    unsigned char *data = read_all(in, &len, &why);
    cli_progress_stop(p);
    if (!data) {
        fprintf(stderr, "strobe convert: %s: %s\n", cli_esc(in), why);
        return CLI_BAD_INPUT;
    }
    if (!strobe_rd_pf_sniff(data, len, 1)) {
        fprintf(stderr, "strobe convert: %s and %s are both JSON: nothing to convert\n",
                strcmp(in, "-") == 0 ? "standard input" : cli_esc(in), cli_esc(out));
        free(data);
        return CLI_BAD_INPUT;
    }
    char err[300], *json = NULL;
    size_t jlen = 0;
    int64_t cut = -1;
    int rc = strobe_rd_pf_to_json(data, len, &json, &jlen, err, sizeof err, &cut);
    free(data);
    if (rc) {
        fprintf(stderr, "strobe convert: %s: not a readable Perfetto trace: %s\n", cli_esc(in),
                cli_esc(err));
        return CLI_BAD_INPUT;
    }
    /* Converted all the same, as the other commands read it; but the cut packet is lost. */
    if (cut >= 0)
        fprintf(stderr,
                "strobe convert: warning: %s: Perfetto trace cut inside a packet at byte %lld: "
                "converted up to the last whole packet\n",
                cli_esc(in), (long long)cut);
    out_file o;
    if (out_open(&o, out) != 0) {
        free(json);
        return CLI_BAD_INPUT;
    }
    out_write(&o, json, jlen);
    free(json);
    return out_commit(&o, 1) ? CLI_BAD_INPUT : CLI_OK;
}

/* ---- JSON to Perfetto ------------------------------------------------------------------------ */

typedef struct item {
    uint32_t track;
    char ph; /* 'X', 'i', 'C' */
    int64_t ts, dur;
    uint32_t name, cat; /* ids in the string table */
    size_t args_off;    /* raw args object text in the arena; SIZE_MAX: none */
    size_t args_len;
    uint64_t flow_out, flow_in; /* 0: none */
    size_t extra_first;         /* more outgoing flow ids: conv.extra[extra_first, + extra_n) */
    size_t extra_n;
    uint64_t order;
    double value;
} item;

typedef struct ctrack {
    int64_t pid, tid;
    int tid_is_num;
    uint64_t uuid;
    int is_device_proc;
    int on_device; /* a thread of a device process: a stream */
    uint32_t name; /* UINT32_MAX: none */
    int has_sort;
    int64_t sort;
    size_t *open; /* B events waiting for E: item indexes */
    size_t nopen, capopen;
} ctrack;

typedef struct conv {
    strobe__pool pool;
    strobe__strtab strs;
    item *items;
    size_t n, cap;
    ctrack *tracks;
    size_t ntracks, captracks;
    uint32_t *track_slots; /* (pid, tid) -> index in tracks, open addressing; UINT32_MAX: free */
    size_t track_slot_cap;
    char *arena;
    size_t alen, acap;
    struct {
        uint64_t id;
        char ph;
        int bp_e;
        uint32_t track;
        int64_t ts;
        long item; /* the slice it is bound to, -1: none */
    } * flows;
    size_t nflows, capflows;
    uint64_t *extra; /* outgoing flow ids beyond an item's first (fan_out_flows) */
    size_t nextra, capextra;
    char **meta_keys, **meta_vals; /* the other top-level members, as JSON text */
    size_t nmeta;
    char *trace_id, *trace_name; /* the top-level members the writer takes as strings */
    int has_base;
    int64_t base;        /* baseTimeNanoseconds */
    size_t out_of_range; /* events left out: a time at or beyond +-2^62 ns (time_ok) */
    size_t wide_ids;     /* tracks whose pid or tid does not fit the Perfetto ids (track_of) */
    int oom;
} conv;

static uint32_t intern(conv *c, const char *s, size_t len) {
    int64_t id = strobe__strtab_intern(&c->strs, s ? s : "", s ? len : 0);
    if (id < 0) {
        c->oom = 1;
        return 0;
    }
    return (uint32_t)id;
}

static const char *str(conv *c, uint32_t id) {
    return strobe__strtab_str(&c->strs, id);
}

static void *grow_array(void *p, size_t *cap, size_t need, size_t size, int *oom) {
    if (need <= *cap) return p;
    size_t n = *cap ? *cap * 2 : 256;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n * size);
    if (!q) {
        *oom = 1;
        return p;
    }
    *cap = n;
    return q;
}

/* An id from the reader: the number, or a stable number made from a string ("Spans"). */
static int64_t id_num(const strobe_rd_id *id, int *is_num) {
    *is_num = id->has_num;
    if (id->has_num) return id->num;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; id->str.s && i < id->str.len; i++)
        h = (h ^ (unsigned char)id->str.s[i]) * 1099511628211ull;
    /* In 24 bits (what a STROBE__PFT_KINETO_UUID holds of a pid) and above Linux's pid range. */
    return (int64_t)(h % 0x3FFFFFu) + 0xC00000;
}

static size_t track_hash(int64_t pid, int64_t tid) {
    uint64_t x = (uint64_t)pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)tid;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(x ^ (x >> 29));
}

static uint64_t track_hash_at(const void *arr, size_t k) {
    const ctrack *t = &((const conv *)arr)->tracks[k];
    return track_hash(t->pid, t->tid);
}

/* Doubles the track index. @return 0, or -1 (c->oom set). */
static int track_rehash(conv *c) {
    if (md_rehash(&c->track_slots, &c->track_slot_cap, c->ntracks, track_hash_at, c) == 0) return 0;
    c->oom = 1;
    return -1;
}

/* The track of (pid, tid), added on first sight; a hash lookup, as a trace may hold as many
 * threads as events. */
static uint32_t track_of(conv *c, int64_t pid, int64_t tid, int tid_is_num) {
    if ((c->ntracks + 1) * 2 > c->track_slot_cap && track_rehash(c)) return 0;
    size_t i = track_hash(pid, tid) & (c->track_slot_cap - 1);
    for (uint32_t k; (k = c->track_slots[i]) != UINT32_MAX; i = (i + 1) & (c->track_slot_cap - 1))
        if (c->tracks[k].pid == pid && c->tracks[k].tid == tid) return k;
    c->tracks = grow_array(c->tracks, &c->captracks, c->ntracks + 1, sizeof *c->tracks, &c->oom);
    if (c->oom) return 0;
    ctrack *t = &c->tracks[c->ntracks];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    t->tid_is_num = tid_is_num;
    t->name = UINT32_MAX;
    /* Perfetto's descriptors hold 32-bit ids, and the uuids of Kineto tracks 24 bits of pid: a
     * wider id is cut and may land on another id's track, so it is counted and reported. */
    if (pid < 0 || pid > 0xFFFFFF || (tid != INT64_MIN && (tid < INT32_MIN || tid > INT32_MAX)))
        c->wide_ids++;
    c->track_slots[i] = (uint32_t)c->ntracks;
    return (uint32_t)c->ntracks++;
}

static item *new_item(conv *c) {
    c->items = grow_array(c->items, &c->cap, c->n + 1, sizeof *c->items, &c->oom);
    if (c->oom) return NULL;
    item *it = &c->items[c->n];
    memset(it, 0, sizeof *it);
    it->order = c->n++;
    it->args_off = SIZE_MAX;
    return it;
}

static void keep_args(conv *c, item *it, const strobe_rd_event *e) {
    if (!e->args || e->args_len <= 2) return;
    c->arena = grow_array(c->arena, &c->acap, c->alen + e->args_len, 1, &c->oom);
    if (c->oom) return;
    memcpy(c->arena + c->alen, e->args, e->args_len);
    it->args_off = c->alen;
    it->args_len = e->args_len;
    c->alen += e->args_len;
}

static uint64_t flow_key(const strobe_rd_event *e) {
    int is_num;
    uint64_t h = (uint64_t)id_num(&e->id, &is_num);
    /* Flow ids are scoped by category in the JSON format. The id comes back as the JSON's "id":
     * in 53 bits, an integer that every JSON reader holds exactly (readers that parse numbers as
     * doubles, or as int64, which a 64-bit hash above INT64_MAX is not). */
    for (size_t i = 0; e->cat.s && i < e->cat.len; i++)
        h = (h ^ (unsigned char)e->cat.s[i]) * 1099511628211ull;
    h = (h ^ (h >> 53)) & ((UINT64_C(1) << 53) - 1);
    return h ? h : 1;
}

/* Whether the event's start and end lie within +-2^62 ns, so that every difference of two times
 * (durations, the E that closes a B, nesting) fits in int64. Metadata events have no time. */
static int time_ok(const strobe_rd_event *e) {
    const int64_t lim = (int64_t)1 << 62;
    if (e->ph.s && strcmp(e->ph.s, "M") == 0) return 1;
    int64_t end;
    if (e->ts_ns >= lim || e->ts_ns <= -lim) return 0;
    return !e->has_dur || (!__builtin_add_overflow(e->ts_ns, e->dur_ns, &end) && end < lim);
}

static int collect_event(conv *c, const strobe_rd_event *e) {
    char ph = e->ph.s ? e->ph.s[0] : 0;
    if (e->bad & ~(unsigned)STROBE_RD_BAD_DUP_KEY) return 0;
    if (!time_ok(e)) {
        c->out_of_range++;
        return 0;
    }
    int pn, tn;
    int64_t pid = id_num(&e->pid, &pn), tid = id_num(&e->tid, &tn);
    uint32_t tr = track_of(c, pid, tid, tn);
    if (c->oom) return STROBE_ENOMEM;
    ctrack *t = &c->tracks[tr];
    if (ph == 'M') {
        strobe_rd_value v;
        const char *nm = e->name.s ? e->name.s : "";
        if (strcmp(nm, "process_name") == 0 || strcmp(nm, "thread_name") == 0) {
            char buf[512];
            size_t len;
            if (strobe_rd_event_arg(e, "name", &v) == 1 &&
                strobe_rd_value_str(&v, buf, sizeof buf, &len) == 0) {
                uint32_t proc =
                    strcmp(nm, "process_name") == 0 ? track_of(c, pid, INT64_MIN, 1) : tr;
                if (c->oom) return STROBE_ENOMEM;
                c->tracks[proc].name = intern(c, buf, len);
                if (strncmp(buf, "GPU", 3) == 0 && proc != tr) c->tracks[proc].is_device_proc = 1;
            }
        } else if (strcmp(nm, "process_sort_index") == 0 || strcmp(nm, "thread_sort_index") == 0) {
            int64_t x;
            if (strobe_rd_event_arg(e, "sort_index", &v) == 1 && strobe_rd_value_int(&v, &x) == 0) {
                uint32_t proc = nm[0] == 'p' ? track_of(c, pid, INT64_MIN, 1) : tr;
                if (c->oom) return STROBE_ENOMEM;
                c->tracks[proc].has_sort = 1;
                c->tracks[proc].sort = x;
                if (nm[0] == 'p' && x >= 16777216) c->tracks[proc].is_device_proc = 1;
            }
        }
        return 0;
    }
    if (ph == 's' || ph == 'f' || ph == 't') {
        c->flows = grow_array(c->flows, &c->capflows, c->nflows + 1, sizeof *c->flows, &c->oom);
        if (c->oom) return STROBE_ENOMEM;
        c->flows[c->nflows].id = flow_key(e);
        c->flows[c->nflows].ph = ph;
        c->flows[c->nflows].bp_e = e->bp.s && strcmp(e->bp.s, "e") == 0;
        c->flows[c->nflows].track = tr;
        c->flows[c->nflows].ts = e->ts_ns;
        c->nflows++;
        return 0;
    }
    if (ph == 'E') {
        if (t->nopen == 0) return 0;
        item *b = &c->items[t->open[--t->nopen]];
        b->dur = e->ts_ns > b->ts ? e->ts_ns - b->ts : 0;
        return 0;
    }
    if (ph != 'X' && ph != 'B' && ph != 'i' && ph != 'I' && ph != 'C') return 0;
    if (ph == 'C') {
        /* Each member of args is one series: one counter track per (pid, name, member). */
        const char *p = e->args;
        if (!p) return 0;
        strobe_jp jp;
        strobe_jp_init_mem(&jp, e->args, e->args_len);
        int tok = strobe_jp_next(&jp);
        while (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_KEY || tok == STROBE_JP_NUMBER) {
            tok = strobe_jp_next(&jp);
            if (tok != STROBE_JP_KEY) break;
            char key[256];
            size_t kl = jp.str_len < sizeof key - 1 ? jp.str_len : sizeof key - 1;
            memcpy(key, jp.str, kl);
            key[kl] = '\0';
            tok = strobe_jp_next(&jp);
            if (tok != STROBE_JP_NUMBER) {
                if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN)
                    tok = strobe_jp_skip_container(&jp);
                continue;
            }
            item *it = new_item(c);
            if (!it) break;
            char series[600];
            size_t nl = e->name.s ? e->name.len : 0;
            if (nl == kl && memcmp(e->name.s, key, kl) == 0)
                snprintf(series, sizeof series, "%s", key);
            else
                snprintf(series, sizeof series, "%.*s %s", (int)(nl > 300 ? 300 : nl),
                         e->name.s ? e->name.s : "", key);
            it->ph = 'C';
            it->track = track_of(c, pid, INT64_MIN, 1); /* counters belong to the process */
            it->ts = e->ts_ns;
            it->name = intern(c, series, strlen(series));
            it->value = strtod(jp.num, NULL);
        }
        strobe_jp_free(&jp);
        return c->oom ? STROBE_ENOMEM : 0;
    }
    item *it = new_item(c);
    if (!it) return STROBE_ENOMEM;
    it->ph = ph == 'X' || ph == 'B' ? 'X' : 'i';
    it->track = tr;
    it->ts = e->ts_ns;
    it->dur = ph == 'X' && e->has_dur ? e->dur_ns : 0;
    it->name = intern(c, e->name.s, e->name.len);
    it->cat = intern(c, e->cat.s, e->cat.len);
    keep_args(c, it, e);
    if (ph == 'B') {
        t = &c->tracks[tr];
        t->open = grow_array(t->open, &t->capopen, t->nopen + 1, sizeof *t->open, &c->oom);
        if (!c->oom) t->open[t->nopen++] = c->n - 1;
    }
    return c->oom ? STROBE_ENOMEM : 0;
}

/* A top-level member (trace_id, deviceProperties, baseTimeNanoseconds ...), kept as JSON text
 * for the session slice. The members every JSON trace has by construction are left out. */
static int collect_meta(conv *c, const strobe_rd_meta *m) {
    const char *k = m->key.s ? m->key.s : "";
    if (strcmp(k, "schemaVersion") == 0 || strcmp(k, "displayTimeUnit") == 0 ||
        strcmp(k, "traceEvents") == 0)
        return 0;
    if (strcmp(k, "baseTimeNanoseconds") == 0) {
        c->has_base = strobe_rd_value_int(&m->value, &c->base) == 0;
        return 0;
    }
    if (strcmp(k, "trace_id") == 0 || strcmp(k, "traceName") == 0) {
        char buf[4096];
        size_t len = 0;
        if (strobe_rd_value_str(&m->value, buf, sizeof buf, &len) != 0) return 0;
        char *v = strobe__pool_strndup(&c->pool, buf, len < sizeof buf ? len : sizeof buf - 1);
        if (v == NULL) return STROBE_ENOMEM;
        if (k[1] == 'r')
            c->trace_id = v;
        else
            c->trace_name = v;
        return 0;
    }
    size_t n = c->nmeta, cap = n;
    c->meta_keys = grow_array(c->meta_keys, &cap, n + 1, sizeof *c->meta_keys, &c->oom);
    cap = n;
    c->meta_vals = grow_array(c->meta_vals, &cap, n + 1, sizeof *c->meta_vals, &c->oom);
    if (c->oom) return STROBE_ENOMEM;
    c->meta_keys[n] = strobe__pool_strndup(&c->pool, k, m->key.len);
    c->meta_vals[n] = strobe__pool_strndup(&c->pool, m->value.raw, m->value.len);
    if (!c->meta_keys[n] || !c->meta_vals[n]) return STROBE_ENOMEM;
    c->nmeta++;
    return 0;
}

static int cmp_items(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    /* Slices before instants at one time (an instant at a slice's start is inside it), longer
     * slices first (the parent before its child). */
    if (x->ph != y->ph) return x->ph == 'X' ? -1 : y->ph == 'X' ? 1 : x->ph < y->ph ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Binds the flows to slices (items sorted): the innermost slice of the flow's track that
 * encloses its time; for "f" without bp "e", the first slice that starts at or after it. */
static void bind_flows(conv *c) {
    for (size_t f = 0; f < c->nflows; f++) {
        size_t lo = 0, hi = c->n;
        /* The first item of the track at or after ts. */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            const item *m = &c->items[mid];
            if (m->track < c->flows[f].track ||
                (m->track == c->flows[f].track && m->ts < c->flows[f].ts))
                lo = mid + 1;
            else
                hi = mid;
        }
        long best = -1;
        int next = c->flows[f].ph != 's' && !c->flows[f].bp_e;
        if (next) {
            for (size_t k = lo; k < c->n && c->items[k].track == c->flows[f].track; k++)
                if (c->items[k].ph == 'X') {
                    best = (long)k;
                    break;
                }
        } else {
            /* The innermost enclosing slice: the latest start at or before ts that still covers
             * it (slices at exactly ts come first, the innermost last). */
            size_t k = lo;
            while (k < c->n && c->items[k].track == c->flows[f].track &&
                   c->items[k].ts == c->flows[f].ts)
                k++;
            while (k-- > 0 && c->items[k].track == c->flows[f].track) {
                const item *s = &c->items[k];
                if (s->ph == 'X' && s->ts <= c->flows[f].ts && s->ts + s->dur >= c->flows[f].ts) {
                    best = (long)k;
                    break;
                }
            }
        }
        c->flows[f].item = best;
        if (best < 0) continue;
        if (c->flows[f].ph == 's')
            c->items[best].flow_out = c->flows[f].id;
        else
            c->items[best].flow_in = c->flows[f].id;
    }
}

static const conv *fan_conv;

/* By id, then file order. */
static int by_flow_id(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t ix = fan_conv->flows[x].id, iy = fan_conv->flows[y].id;
    if (ix != iy) return ix < iy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* A flow with one start and several ends (bound flows): the second and later ends get ids of
 * their own (the id mixed with their rank), which the start lists after its id. The decoder maps
 * them back to one "s" and an "f" per end with the start's id. */
static int fan_out_flows(conv *c) {
    size_t m = 0, *ix = malloc((c->nflows ? c->nflows : 1) * sizeof *ix);
    if (!ix) return STROBE_ENOMEM;
    for (size_t f = 0; f < c->nflows; f++)
        if (c->flows[f].item >= 0) ix[m++] = f;
    fan_conv = c;
    qsort(ix, m, sizeof *ix, by_flow_id);
    size_t b;
    for (size_t a = 0; a < m && !c->oom; a = b) {
        uint64_t id = c->flows[ix[a]].id;
        for (b = a; b < m && c->flows[ix[b]].id == id; b++) {
        }
        long start = -1;
        int starts = 0;
        for (size_t k = a; k < b; k++) {
            long it = c->flows[ix[k]].item;
            if (c->flows[ix[k]].ph == 's' && c->items[it].flow_out == id && it != start)
                start = it, starts++;
        }
        if (starts != 1) continue;
        uint64_t rank = 0;
        for (size_t k = a; k < b && !c->oom; k++) {
            item *end = &c->items[c->flows[ix[k]].item];
            if (c->flows[ix[k]].ph == 's' || end->flow_in != id || rank++ == 0) continue;
            uint64_t fresh = id ^ (rank * 0x9e3779b97f4a7c15ull);
            if (fresh == 0) fresh = 1; /* 0 is "no flow" here */
            c->extra = grow_array(c->extra, &c->capextra, c->nextra + 1, sizeof *c->extra, &c->oom);
            if (c->oom) break;
            item *st = &c->items[start];
            if (st->extra_n == 0) st->extra_first = c->nextra;
            st->extra_n++;
            c->extra[c->nextra++] = fresh;
            end->flow_in = fresh;
        }
    }
    free(ix);
    return c->oom ? STROBE_ENOMEM : 0;
}

/* The args object of an item as debug annotations (cli_writer_args, merge.h). */
static int item_args(conv *c, const item *it, strobe_writer_arg **args, size_t *cap, size_t *n,
                     char **scratch, size_t *scap) {
    *n = 0;
    if (it->args_off == SIZE_MAX) return 0;
    return cli_writer_args(c->arena + it->args_off, it->args_len, args, cap, n, scratch, scap);
}

/* ---- lanes: slices that overlap without nesting -------------------------------------------- */

/* A thread's slices go on lanes, each one a Perfetto track: lane 0 is the thread's own track, and
 * a slice that would end after the innermost open slice of a lane goes on the first lane where it
 * nests, a new one when none. A lane is a stack of open slices, linked through `below`. A tree
 * over the lanes holds each lane's innermost open end (INT64_MAX: empty) as the minimum (which
 * slice ends next, so that ends are written in time order) and the maximum (the first lane whose
 * innermost open slice ends at or after E, where a slice ending at E nests) of each subtree: both
 * found in log(lanes) steps, so that many overlapping slices cost no more than a few. */
typedef struct lanes {
    size_t cap;       /* leaves: a power of two */
    size_t n;         /* lanes of the current thread */
    int64_t *mn, *mx; /* [2 * cap], leaves at cap + k */
    size_t *top;      /* [cap]: the lane's innermost open slice (item index), SIZE_MAX: none */
    uint64_t *uuid;   /* [cap]: the lane's track (the writer's id) */
    size_t *below;    /* [items]: the open slice under each one on its lane */
} lanes;

static void lanes_set(lanes *l, size_t k, int64_t end) {
    size_t i = l->cap + k;
    l->mn[i] = l->mx[i] = end;
    for (i /= 2; i >= 1; i /= 2) {
        l->mn[i] = l->mn[2 * i] < l->mn[2 * i + 1] ? l->mn[2 * i] : l->mn[2 * i + 1];
        l->mx[i] = l->mx[2 * i] > l->mx[2 * i + 1] ? l->mx[2 * i] : l->mx[2 * i + 1];
    }
}

/* Doubles the lanes (from 0: makes 8). @return 0 or STROBE_ENOMEM. */
static int lanes_grow(lanes *l) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    int64_t *mn = malloc(2 * cap * sizeof *mn), *mx = malloc(2 * cap * sizeof *mx);
    size_t *top = realloc(l->top, cap * sizeof *top);
    if (top) l->top = top;
    uint64_t *uuid = top ? realloc(l->uuid, cap * sizeof *uuid) : NULL;
    if (uuid) l->uuid = uuid;
    if (!mn || !mx || !top || !uuid) {
        free(mn);
        free(mx);
        return STROBE_ENOMEM;
    }
    for (size_t k = 0; k < cap; k++) {
        mn[cap + k] = mx[cap + k] = k < l->cap ? l->mn[l->cap + k] : INT64_MAX;
        if (k >= l->cap) top[k] = SIZE_MAX, uuid[k] = 0;
    }
    for (size_t i = cap - 1; i >= 1; i--) {
        mn[i] = mn[2 * i] < mn[2 * i + 1] ? mn[2 * i] : mn[2 * i + 1];
        mx[i] = mx[2 * i] > mx[2 * i + 1] ? mx[2 * i] : mx[2 * i + 1];
    }
    free(l->mn);
    free(l->mx);
    l->mn = mn;
    l->mx = mx;
    l->cap = cap;
    return 0;
}

/* The first lane where a slice ending at `end` nests (an unused lane when no lane in use fits);
 * open slices that end before the slice starts must have been closed. SIZE_MAX: out of memory. */
static size_t lanes_fit(lanes *l, int64_t end) {
    if (l->mx[1] < end) {
        size_t k = l->cap;
        return lanes_grow(l) ? SIZE_MAX : k;
    }
    size_t i = 1;
    while (i < l->cap)
        i = l->mx[2 * i] >= end ? 2 * i : 2 * i + 1;
    return i - l->cap;
}

/* The lane whose innermost open slice ends first (l->mn[1] is that end). */
static size_t lanes_next_end(const lanes *l) {
    size_t i = 1;
    while (i < l->cap)
        i = l->mn[2 * i] <= l->mn[2 * i + 1] ? 2 * i : 2 * i + 1;
    return i - l->cap;
}

/* A track's name in the .pftrace: its own, or "thread N" / "stream N". */
static const char *track_label(conv *c, const ctrack *t, int device, char *buf, size_t size) {
    if (t->name != UINT32_MAX) return str(c, t->name);
    snprintf(buf, size, device ? "stream %" PRId64 : "thread %" PRId64, t->tid);
    return buf;
}

/* The writer's event of item i (times made absolute with `base`). */
static strobe_writer_event item_event(conv *c, size_t i, uint32_t track, int64_t base,
                                      size_t session) {
    const item *it = &c->items[i];
    const char *cat = str(c, it->cat);
    strobe_writer_event e = {.track = track,
                             .flags = i == session ? STROBE_WRITER_SESSION : 0,
                             .cat = cat[0] ? cat : NULL,
                             .name = str(c, it->name),
                             .ts = it->ts + base,
                             .end = it->ts + it->dur + base,
                             .value = it->value};
    return e;
}

/* Declares a track. @return its id or a negative error. */
static int64_t add_track(strobe_writer *w, strobe_track_kind kind, int64_t pid, int64_t tid,
                         const char *name, const ctrack *t, uint32_t parent) {
    strobe_writer_track wt = {.kind = kind,
                              .pid = pid,
                              .tid = tid,
                              .name = name,
                              .sort_index = t && t->has_sort ? t->sort : INT64_MIN,
                              .parent = parent};
    return strobe_writer_add_track(w, &wt);
}

/* The tracks written between two calls of strobe_writer_flush_interned() in write_pf(): a trace
 * of fewer is written as before, and one of many threads (100,000 with one event each took 1.7 GB,
 * an encoder of some 17 KB per thread) holds the encoders of this many at most. Each call visits
 * every sequence, so not after each track. */
#define CONV_FLUSH_TRACKS 256

/* Writes the collected trace through the writer (times relative to `base`, which the writer
 * subtracts again); counts the slices written on extra lanes and the lanes made. */
static int write_pf(conv *c, strobe_writer *w, int64_t base, size_t *on_lanes, size_t *lanes_made) {
    int rc = 0;
    size_t declared = 0;
    /* Tracks: processes first (CPU ones as processes, GPU ones as devices "GPU N"), then
     * threads (CPU threads as threads; streams, tid 0 and named tids as tracks that carry their
     * (pid, tid) for the reader). A ctrack's uuid holds its writer track id + 1. */
    for (size_t i = 0; rc == 0 && i < c->ntracks; i++) {
        ctrack *t = &c->tracks[i];
        if (t->tid != INT64_MIN) continue;
        const char *name = t->name != UINT32_MAX ? str(c, t->name) : NULL;
        int64_t id = add_track(w, t->is_device_proc ? STROBE_TRACK_DEVICE : STROBE_TRACK_PROCESS,
                               t->pid, 0, name, t, 0);
        if (id < 0) return (int)id;
        t->uuid = (uint64_t)id + 1;
    }
    for (size_t i = 0; rc == 0 && i < c->ntracks; i++) {
        ctrack *t = &c->tracks[i];
        if (t->tid == INT64_MIN) continue;
        uint32_t proc = track_of(c, t->pid, INT64_MIN, 1);
        if (c->oom) return STROBE_ENOMEM;
        t = &c->tracks[i];
        ctrack *p = &c->tracks[proc];
        if (p->uuid == 0) {
            int64_t id = add_track(w, STROBE_TRACK_PROCESS, p->pid, 0, NULL, NULL, 0);
            if (id < 0) return (int)id;
            p->uuid = (uint64_t)id + 1;
        }
        char fallback[40];
        t->on_device = p->is_device_proc;
        const char *name = track_label(c, t, t->on_device, fallback, sizeof fallback);
        int plain =
            p->is_device_proc || t->tid == 0 || !t->tid_is_num || t->tid < 0 || t->tid > INT32_MAX;
        int64_t id = add_track(w, plain ? STROBE_TRACK_STREAM : STROBE_TRACK_THREAD, t->pid, t->tid,
                               name, t, (uint32_t)(p->uuid - 1));
        if (id < 0) return (int)id;
        t->uuid = (uint64_t)id + 1;
        /* Each thread's track is a sequence with an encoder of its own, made here: every so many,
         * the writer frees them again until their events come (as below). */
        if (++declared % CONV_FLUSH_TRACKS == 0 && (rc = strobe_writer_flush_interned(w)) != 0)
            return rc;
    }
    if (c->n) qsort(c->items, c->n, sizeof *c->items, cmp_items);
    bind_flows(c);
    rc = fan_out_flows(c);
    lanes ln = {0};
    ln.below = malloc((c->n ? c->n : 1) * sizeof *ln.below);
    uint64_t *outs = NULL; /* a slice's outgoing flow ids, when it has more than one */
    size_t couts = 0;
    strobe_writer_arg *args = NULL;
    size_t acap = 0, nargs = 0, scap = 0;
    char *scratch = NULL;
    if (!ln.below || lanes_grow(&ln)) rc = STROBE_ENOMEM;
    size_t session = SIZE_MAX; /* strobe's session slice, which carries the trace's metadata */
    size_t tracks_written = 0;
    for (size_t i = 0; rc == 0 && i <= c->n; i++) {
        item *it = i < c->n ? &c->items[i] : NULL;
        int new_track = !it || (i > 0 && c->items[i - 1].track != it->track);
        /* Close what ends before this item starts, or everything at a track's end, in time
         * order over the lanes (an instant at a slice's end stays inside it). */
        while (rc == 0 && ln.mn[1] != INT64_MAX) {
            int64_t end = ln.mn[1];
            if (!new_track && (it->ph == 'C' || end > it->ts || (it->ph == 'i' && end == it->ts)))
                break;
            size_t k = lanes_next_end(&ln), top = ln.top[k];
            strobe_writer_event e = item_event(c, top, (uint32_t)ln.uuid[k], base, session);
            rc = strobe_writer_slice_end(w, &e, NULL, 0);
            ln.top[k] = ln.below[top];
            top = ln.top[k];
            lanes_set(&ln, k, top == SIZE_MAX ? INT64_MAX : c->items[top].ts + c->items[top].dur);
        }
        if (!it || rc) continue;
        uint32_t track = (uint32_t)(c->tracks[it->track].uuid - 1);
        if (i == 0 || new_track) {
            ln.n = 1;
            ln.uuid[0] = track;
            /* The tracks before this one, all closed, get no more events: every so many, the
             * writer forgets their state (Perfetto's encoder per sequence, with its buffers and
             * interned names), so that memory does not grow with the threads. */
            if (++tracks_written % CONV_FLUSH_TRACKS == 0) rc = strobe_writer_flush_interned(w);
            if (rc) break;
        }
        if (it->ph == 'C') {
            strobe_writer_event e = item_event(c, i, track, base, SIZE_MAX);
            rc = strobe_writer_counter(w, &e);
            if (rc > 0) rc = 0; /* not finite: JSON has none */
            continue;
        }
        size_t lane = 0;
        if (it->ph == 'X' && (lane = lanes_fit(&ln, it->ts + it->dur)) == SIZE_MAX) {
            rc = STROBE_ENOMEM;
            break;
        }
        if (lane >= ln.n) {
            /* A new lane: a track under the thread's (or stream's) own, which Perfetto shows
             * under the thread and strobe's reader reads back as the thread's. */
            ctrack *t = &c->tracks[it->track];
            char buf[40], name[600];
            const char *label = track_label(c, t, t->on_device, buf, sizeof buf);
            /* label: at most 511 bytes (collect_event), so never cut inside a character */
            snprintf(name, sizeof name, "%s (overlaps, lane %zu)", label, lane + 1);
            strobe_writer_track wt = {.kind = STROBE_TRACK_LANE,
                                      .pid = t->pid,
                                      .tid = t->tid,
                                      .name = name,
                                      .sort_index = (int64_t)lane,
                                      .parent = track};
            int64_t id = strobe_writer_add_track(w, &wt);
            if (id < 0) {
                rc = (int)id;
                break;
            }
            ln.uuid[lane] = (uint64_t)id;
            ln.n = lane + 1;
            (*lanes_made)++;
        }
        rc = item_args(c, it, &args, &acap, &nargs, &scratch, &scap);
        if (rc) break;
        if (session == SIZE_MAX && it->ph == 'X' && strcmp(str(c, it->cat), "Trace") == 0 &&
            strcmp(str(c, it->name), "strobe session") == 0)
            session = i;
        strobe_writer_event e = item_event(c, i, (uint32_t)ln.uuid[lane], base, session);
        e.args = args;
        e.nargs = nargs;
        if (it->ph == 'X') {
            e.flow_out = &it->flow_out;
            e.nflow_out = it->flow_out != 0;
            e.flow_in = &it->flow_in;
            e.nflow_in = it->flow_in != 0;
            if (it->extra_n) {
                int oom = 0;
                outs = grow_array(outs, &couts, it->extra_n + 1, sizeof *outs, &oom);
                if (oom) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                outs[0] = it->flow_out;
                memcpy(outs + 1, c->extra + it->extra_first, it->extra_n * sizeof *outs);
                e.flow_out = outs;
                e.nflow_out = it->extra_n + 1;
            }
            rc = strobe_writer_slice_begin(w, &e);
            ln.below[i] = ln.top[lane];
            ln.top[lane] = i;
            lanes_set(&ln, lane, it->ts + it->dur);
            *on_lanes += lane > 0;
        } else {
            rc = strobe_writer_instant(w, &e);
        }
    }
    free(ln.below);
    free(ln.mn);
    free(ln.mx);
    free(ln.top);
    free(ln.uuid);
    free(outs);
    free(args);
    free(scratch);
    return rc;
}

static int json_to_pf(const char *in, const char *out, int quiet) {
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.prescan_base = 1;
    strobe_rd *rd = NULL;
    cli_progress *progress = cli_progress_start("convert", in, quiet);
    int rc = strobe_rd_open(&rd, in, &opt);
    conv c = {0};
    strobe__strtab_init(&c.strs, &c.pool);
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        rc = 0;
        if (it.kind == STROBE_RD_EVENT) rc = collect_event(&c, it.event);
        if (it.kind == STROBE_RD_META) rc = collect_meta(&c, it.meta);
    }
    cli_progress_stop(progress);
    int code = CLI_OK;
    if (rc < 0) {
        if (rc == STROBE_ENOMEM)
            fprintf(stderr, "strobe convert: %s: out of memory\n", cli_esc(in));
        else
            fprintf(stderr, "strobe convert: %s\n",
                    cli_esc(rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd)
                                                          : strobe_strerror(rc)));
        code = CLI_BAD_INPUT;
    } else if (c.n == 0 && c.ntracks == 0) {
        fprintf(stderr, "strobe convert: %s: no events\n", cli_esc(in));
        code = CLI_BAD_INPUT;
    }
    strobe_rd_close(rd);
    if (code == CLI_OK && c.out_of_range)
        fprintf(stderr,
                "strobe convert: %s: %zu event(s) with a time at or beyond +-2^62 ns: left out\n",
                cli_esc(in), c.out_of_range);
    if (code == CLI_OK && c.wide_ids)
        fprintf(stderr,
                "strobe convert: %s: warning: %zu track(s) with a pid outside 0..16777215 or a "
                "tid outside 32 bits: their ids are cut in Perfetto's format and may merge with "
                "other tracks\n",
                cli_esc(in), c.wide_ids);
    if (code == CLI_OK) {
        /* Times go to the writer absolute (ts + baseTimeNanoseconds), which it writes relative to
         * the base again; a trace without a base (PyTorch's) keeps its times as they are. */
        int64_t base =
            c.has_base && c.base > -((int64_t)1 << 61) && c.base < ((int64_t)1 << 61) ? c.base : 0;
        strobe_writer_options wo;
        strobe_writer_options_init(&wo);
        wo.format = STROBE_FORMAT_PERFETTO;
        wo.base_ns = base;
        wo.trace_id = c.trace_id;
        wo.trace_name = c.trace_name;
        strobe_writer *w = NULL;
        rc = strobe_writer_open(&w, out, &wo);
        if (rc) {
            int e = errno; /* the system's reason: ENOENT, EACCES, EROFS ... */
            fprintf(stderr, "strobe convert: %s: cannot create a file in its folder: %s\n",
                    cli_esc(out), cli_out_reason(rc, e));
            code = CLI_BAD_INPUT;
        }
        /* The other top-level members ride on strobe's session slice, as the writer puts a
         * result's; one the writer refuses (not valid JSON) is left out. */
        for (size_t m = 0; code == CLI_OK && m < c.nmeta; m++)
            if (strobe_writer_set_meta(w, c.meta_keys[m], c.meta_vals[m]) == STROBE_ENOMEM)
                rc = STROBE_ENOMEM;
        size_t on_lanes = 0, lanes_made = 0;
        if (code == CLI_OK && rc == 0) rc = write_pf(&c, w, base, &on_lanes, &lanes_made);
        if (code == CLI_OK && rc) {
            errno = 0;
            strobe_writer_abort(w); /* leaves the reason of a failed write in errno */
            int e = errno;
            fprintf(stderr, "strobe convert: %s: %s\n", cli_esc(out), cli_out_reason(rc, e));
            code = CLI_BAD_INPUT;
        } else if (code == CLI_OK && (rc = strobe_writer_close(w)) != 0) {
            int e = errno;
            fprintf(stderr, "strobe convert: %s: cannot write: %s\n", cli_esc(out),
                    cli_out_reason(rc, e));
            code = CLI_BAD_INPUT;
        } else if (code == CLI_OK && on_lanes) {
            fprintf(stderr,
                    "strobe convert: %s: %zu slice(s) overlap a slice without nesting in it: "
                    "kept whole on %zu extra track(s) of their thread\n",
                    cli_esc(in), on_lanes, lanes_made);
        }
    }
    for (size_t i = 0; i < c.ntracks; i++)
        free(c.tracks[i].open);
    free(c.tracks);
    free(c.track_slots);
    free(c.items);
    free(c.arena);
    free(c.flows);
    free(c.extra);
    free(c.meta_keys);
    free(c.meta_vals);
    strobe__strtab_release(&c.strs);
    strobe__pool_release(&c.pool);
    return code;
}

const struct option cmd_convert_options[] = {
    {"output", required_argument, NULL, 'o'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":o:qhV", cmd_convert_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_convert_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'o':
            out = optarg;
            break;
        default:
            return cli_option_error("convert", c, argv, cmd_convert_options);
        }
    }
    if (first < argc) in = argv[first++];
    if (first < argc && out == NULL) out = argv[first++];
    if (first < argc) return cli_usage_error("convert", "one input and one output", argv[first]);
    if (!in || !out) return cli_usage_error("convert", "IN and OUT are required", NULL);
    if (out[0] == '\0') return cli_usage_error("convert", "OUT is empty", NULL);
    /* Is IN a Perfetto trace? By its content, whatever its name, as every reader of traces
     * tells. Standard input and other pipes cannot be read twice: Perfetto when the output is JSON
     * (the Perfetto path then checks), and read by the JSON path otherwise, whose reader decodes a
     * Perfetto trace too. */
    struct stat in_st;
    int in_pipe = strcmp(in, "-") == 0 ||
                  (stat(in, &in_st) == 0 && !S_ISREG(in_st.st_mode) && !S_ISDIR(in_st.st_mode));
    int in_pf = in_pipe ? !strobe__pftrace_path(out) : strobe_rd_is_perfetto(in) == 1;
    if (strobe__pftrace_path(out)) {
        if (in_pf) {
            fprintf(stderr, "strobe convert: %s is already a Perfetto trace\n", cli_esc(in));
            return CLI_BAD_INPUT;
        }
        return json_to_pf(in, out, quiet);
    }
    if (!in_pf) {
        fprintf(stderr, "strobe convert: %s and %s are both JSON: nothing to convert\n",
                cli_esc(in), cli_esc(out));
        return CLI_BAD_INPUT;
    }
    return pf_to_json(in, out, quiet);
}
