/* merge.c: several traces into one (merge.h).
 *
 * Contents: collecting (tracks, events, args kept as raw text); binding flows to slices; writing
 * (tracks, then each track's events in time order with a stack of open slices per lane);
 * collecting on threads and under MPI (a job's ranks, written by one writer); the options convert
 * and merge share.
 *
 * The inputs are merged a group at a time: a group is a run of inputs that share process ids (the
 * parts of one program), or one input whose processes are its own (a rank of a job). Every event
 * of a group is collected first (a group fits in memory as its JSON did), then sorted per track
 * by start, longer slices first, and written as slice begins and ends, as Perfetto's format needs
 * them; then the group is freed and the next one read. A slice that starts inside another and
 * ends after it does not nest: by cli_merge_options.overlap it is ended with the slice around it
 * (cut), or kept whole on an extra track of its thread (lanes), and counted either way.
 *
 * strobe convert (JSON to Perfetto) is a merge of one input through here, with `whole` set. What
 * still differs between the two commands, on purpose:
 *   - the default policy for slices that do not nest: convert keeps them whole on lanes (every
 *     command then reads the numbers the JSON gives), merge and record cut them (their inputs are
 *     strobe's, whose slices nest, and a cut keeps one track per thread);
 *   - top-level members: convert carries every one (it is one trace, rewritten), merge only those
 *     that describe the whole (trace_id, deviceProperties, strobe_heap, a rank's metadata);
 *   - flow ids: convert scopes an id by its category in 53 bits (flow_key), as JSON's importers
 *     read it; merge keeps each input's ids apart with a salt per input, and torch's fwdbwd bit;
 *   - counters: convert puts them on their process (the JSON format's scope for "C"), merge on
 *     the event's (pid, tid), as merged traces always had them (not unified yet: it would move
 *     every merged counter);
 *   - tracks: convert declares every (pid, tid) its input names or uses (also one that has only
 *     metadata), each thread named "thread N" or "stream N" when it has no name; merge declares
 *     those that carry events, and names them only in JSON (where the importer needs a name);
 *   - a stream written by a process that was killed (strobe_stream "complete": false) gets a
 *     session span in a merge; convert rewrites the trace as it is;
 *   - an input that ends in an error: merge keeps what came before (a part cut short), convert
 *     fails (a JSON file given to convert is expected whole).
 * Both take B/E pairs, fan out a flow with several ends (one id per end), keep counter categories.
 *
 * A rank's times are mapped onto the reference rank's clock as they are read (cli_merge_align), and
 * its pids onto numbers of its own (own_pid), so that nothing later needs to know about ranks. */
#include "merge.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "model/wire.h"
#include "mpi.h"
#include "reader/json_pull.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"
#include "strobe/writer.h"
#include "util/pftrace_enc.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "util/u64map.h"

#define NO_STR UINT32_MAX
#define PROCESS_TID INT64_MIN

typedef struct mtrack {
    int64_t pid, tid; /* tid PROCESS_TID: the process itself */
    int64_t orig_pid; /* the pid in its input (own_pids inputs remap it) */
    uint32_t name, label;
    int64_t name_rank; /* which input named it: (has events, input index), highest wins */
    int64_t sort;
    int has_sort, device, used;
    int64_t wid;            /* the writer's track id once declared, else -1 */
    uint8_t named_by_input; /* a process_name/thread_name event of an input named it */
    uint8_t named_by_id;    /* named by its string id (name_by_id) */
    uint8_t str_tid;        /* its tid is a string's number (id_num): not an OS thread */
    size_t *open;           /* B events waiting for their E: item indexes */
    size_t nopen, capopen;
} mtrack;

typedef struct mitem {
    uint32_t track;
    char ph;     /* 'X', 'i' or 'C' */
    int session; /* strobe's session span of the first input */
    int64_t ts, dur;
    uint32_t name, cat;
    size_t args_off, args_len; /* args_off SIZE_MAX: none */
    double value;
    uint64_t flow_out, flow_in; /* slices: the flows bound to them (0: none) */
    size_t extra_first;         /* several outgoing flow ids: extra[extra_first, + extra_n + 1) */
    size_t extra_n;
    int64_t shown; /* a slice's end as JSON shows it (shown_end) */
    size_t order;
} mitem;

/* A flow event ("s", "t", "f"), bound to a slice of its track by bind_flows. */
typedef struct mflow {
    uint64_t id;
    uint32_t track;
    char ph;
    int bp_e;
    int64_t ts;
    size_t seq;  /* its place in the input */
    size_t item; /* the slice it is bound to; SIZE_MAX: none */
} mflow;

typedef struct merger {
    const char *cmd;
    const cli_merge_options *opt;
    strobe__pool pool;
    strobe__strtab strs;
    mtrack *tracks;
    size_t ntracks, captracks;
    strobe__u64map track_map; /* (pid, tid) key -> index + 1 */
    mitem *items;
    size_t nitems, capitems;
    mflow *flows;
    size_t nflows, capflows;
    uint64_t *extra; /* the outgoing flow ids of slices that have several (fan_out_flows) */
    size_t nextra, capextra;
    /* With whole: the input's top-level members (keys and JSON text, in the pool), and its
     * traceName (malloc'd). */
    struct {
        const char *k, *v;
    } * meta;
    size_t nmeta, capmeta;
    char *trace_name;
    char *arena;
    size_t narena, caparena;
    int64_t base;
    int has_base;
    char *trace_id, *device_props; /* malloc'd: they outlive a group */
    /* The rank's metadata of the inputs that are one program's processes (not own_pids; malloc'd):
     * the first value of each of carried_keys, and whether their distributedInfo values differ. */
    char *carried[3];
    int ranks_differ;
    /* The elements of every input's "strobe_heap" array (strobe record --heap: one object per
     * process), joined by commas (malloc'd; NULL: none): the output's array holds them all. */
    char *heap;
    size_t heap_len;
    /* The input being read, and its own pids (own_pids): pids[k] becomes pid_base + k. */
    const cli_merge_input *cur;
    int64_t pids[CLI_MERGE_MAX_PIDS];
    size_t npids;
    int too_many;
    int json; /* the output is JSON (shown_end) */
    /* Names and labels an input gives (tracks and strings), applied when the input is read and
     * its rank known. */
    struct pending_name {
        uint32_t track, name;
        int label;
    } * pending;
    size_t npending, cappending;
    int oom;
    int fatal; /* with whole: the input could not be read to its end (said) */
    uint64_t skipped, out_of_range, wide_ids;
    uint64_t dropped; /* the inputs' "dropped_events" and "lost_events" (strobe_stream) */
    int session_taken;
    int input_has_session; /* the input being read has strobe's session span */
    /* Where collecting says its problems: stderr, or a worker's buffer (collect_group), which the
     * writer prints in input order. */
    FILE *err;
} merger;

static void *grow(void *p, size_t *cap, size_t need, size_t size, int *oom) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (q == NULL) {
        *oom = 1;
        return p;
    }
    *cap = c;
    return q;
}

static uint32_t intern(merger *m, const char *s, size_t len) {
    if (s == NULL) return NO_STR;
    int64_t id = strobe__strtab_intern(&m->strs, s, len);
    if (id < 0) {
        m->oom = 1;
        return NO_STR;
    }
    return (uint32_t)id;
}

static const char *str(const merger *m, uint32_t id) {
    return id == NO_STR ? NULL : strobe__strtab_str(&m->strs, id);
}

/* ---- collecting ------------------------------------------------------------------------------ */

int64_t cli_merge_align(const cli_merge_input *in, int64_t t) {
    if (!in->has_clock) return t;
    /* In doubles, which cannot overflow: an epoch time in ns rounds to 256 ns, an error that
     * the drift (parts per billion: below 10^6 for any real clock) scales to under 1 ns. */
    double d = ((double)t - (double)in->t_ref_ns) * in->drift_ppb / 1e9;
    if (!(d > -1e18 && d < 1e18)) return t;
    int64_t r;
    if (__builtin_add_overflow(t, in->offset_ns, &r)) return t;
    int64_t out;
    return __builtin_add_overflow(r, (int64_t)(d < 0 ? d - 0.5 : d + 0.5), &out) ? t : out;
}

/* The output's pid of the input's `pid`: itself, or for an own_pids input its number there
 * (m->too_many set, and -1, past CLI_MERGE_MAX_PIDS). */
static int64_t own_pid(merger *m, int64_t pid) {
    if (!m->cur->own_pids) return pid;
    for (size_t k = 0; k < m->npids; k++)
        if (m->pids[k] == pid) return m->cur->pid_base + (int64_t)k;
    if (m->npids == CLI_MERGE_MAX_PIDS) {
        m->too_many = 1;
        return -1;
    }
    m->pids[m->npids] = pid;
    return m->cur->pid_base + (int64_t)m->npids++;
}

static uint64_t track_key(int64_t pid, int64_t tid) {
    uint64_t t = tid == PROCESS_TID ? 0xffffffffu : (uint32_t)tid;
    uint64_t k = ((uint64_t)(uint32_t)pid << 32) | t;
    /* Not masked (which would make tids 2n and 2n + 1 one key, found by a scan each time): the
     * one key the map refuses becomes its neighbour, and the scan tells them apart. */
    return k > STROBE__U64MAP_KEY_MAX ? STROBE__U64MAP_KEY_MAX : k;
}

/* The index of track (pid, tid), made when new; UINT32_MAX when out of memory. */
static uint32_t track_of(merger *m, int64_t pid, int64_t tid) {
    int inserted = 0;
    uint64_t *slot = strobe__u64map_put(&m->track_map, track_key(pid, tid), &inserted);
    if (slot == NULL) {
        m->oom = 1;
        return UINT32_MAX;
    }
    if (!inserted && m->tracks[*slot - 1].pid == pid && m->tracks[*slot - 1].tid == tid)
        return (uint32_t)(*slot - 1);
    if (!inserted) {
        /* Ids beyond 32 bits that share a key: found by a scan. */
        for (size_t i = 0; i < m->ntracks; i++)
            if (m->tracks[i].pid == pid && m->tracks[i].tid == tid) return (uint32_t)i;
    }
    m->tracks = grow(m->tracks, &m->captracks, m->ntracks + 1, sizeof *m->tracks, &m->oom);
    if (m->oom) return UINT32_MAX;
    mtrack *t = &m->tracks[m->ntracks];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->orig_pid = m->cur && m->cur->own_pids && (uint64_t)(pid - m->cur->pid_base) < m->npids
                      ? m->pids[pid - m->cur->pid_base]
                      : pid;
    t->tid = tid;
    t->name = t->label = NO_STR;
    t->name_rank = -1;
    t->wid = -1;
    /* Perfetto's descriptors hold 32-bit ids, and the uuids of Kineto tracks 24 bits of pid: a
     * wider id is cut and may land on another id's track, so each thread is counted (convert
     * reports them). */
    if (tid != PROCESS_TID && (pid < 0 || pid > 0xFFFFFF || tid < INT32_MIN || tid > INT32_MAX))
        m->wide_ids++;
    if (inserted) *slot = m->ntracks + 1;
    return (uint32_t)m->ntracks++;
}

static mitem *new_item(merger *m) {
    m->items = grow(m->items, &m->capitems, m->nitems + 1, sizeof *m->items, &m->oom);
    if (m->oom) return NULL;
    mitem *it = &m->items[m->nitems];
    memset(it, 0, sizeof *it);
    it->args_off = SIZE_MAX;
    it->name = it->cat = NO_STR;
    it->order = m->nitems++;
    return it;
}

static void keep_args(merger *m, mitem *it, const strobe_rd_event *e) {
    if (e->args == NULL || e->args_len <= 2) return;
    m->arena = grow(m->arena, &m->caparena, m->narena + e->args_len, 1, &m->oom);
    if (m->oom) return;
    memcpy(m->arena + m->narena, e->args, e->args_len);
    it->args_off = m->narena;
    it->args_len = e->args_len;
    m->narena += e->args_len;
}

/* An id from the reader: the number; a string that is not one ("stream 7", Kineto's "Spans") a
 * stable number made from it, as strobe convert and cli_idmap make it (FNV-1a, in 24 bits above
 * Linux's pid range), so that two string ids stay two tracks; 0 when absent. */
static int64_t id_num(const strobe_rd_id *id) {
    if (id->has_num) return id->num;
    if (id->kind != STROBE_RD_ID_STRING || id->str.s == NULL) return 0;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < id->str.len; i++)
        h = (h ^ (unsigned char)id->str.s[i]) * 1099511628211ull;
    return (int64_t)(h % 0x3FFFFFu) + 0xC00000;
}

/* A name given by the input being read, applied by apply_names(). */
static void name_track(merger *m, uint32_t tr, const char *s, size_t len, int label) {
    m->pending = grow(m->pending, &m->cappending, m->npending + 1, sizeof *m->pending, &m->oom);
    uint32_t id = intern(m, s, len);
    if (m->oom) return;
    m->pending[m->npending++] = (struct pending_name){.track = tr, .name = id, .label = label};
}

/* A string id's text names its track ("stream 7"), unless the input names the track itself. */
static void name_by_id(merger *m, uint32_t tr, const strobe_rd_id *id) {
    mtrack *t = &m->tracks[tr];
    if (id->has_num || id->kind != STROBE_RD_ID_STRING || id->str.s == NULL || id->str.len == 0 ||
        t->named_by_input || t->named_by_id)
        return;
    t->named_by_id = 1;
    name_track(m, tr, id->str.s, id->str.len, 0);
}

/* Applies the names of the input just read: an input outranks the ones before it, and any input
 * with events outranks every one without. */
static void apply_names(merger *m, int64_t rank) {
    for (size_t i = 0; i < m->npending; i++) {
        mtrack *t = &m->tracks[m->pending[i].track];
        if (m->pending[i].label) {
            t->label = m->pending[i].name;
        } else if (rank >= t->name_rank) {
            t->name = m->pending[i].name;
            t->name_rank = rank;
        }
    }
    m->npending = 0;
}

/* A flow's id with whole (strobe convert): flow ids are scoped by category in the JSON format,
 * and the id comes back as the JSON's "id", in 53 bits: an integer that every JSON reader holds
 * exactly (readers that parse numbers as doubles, or as int64, which a 64-bit hash above
 * INT64_MAX is not). */
static uint64_t flow_key(const strobe_rd_event *e) {
    uint64_t h = (uint64_t)id_num(&e->id);
    if (!e->id.has_num && (e->id.kind != STROBE_RD_ID_STRING || e->id.str.s == NULL))
        h = (uint64_t)(1469598103934665603ull % 0x3FFFFFu) + 0xC00000;
    for (size_t i = 0; e->cat.s && i < e->cat.len; i++)
        h = (h ^ (unsigned char)e->cat.s[i]) * 1099511628211ull;
    h = (h ^ (h >> 53)) & ((UINT64_C(1) << 53) - 1);
    return h ? h : 1;
}

/* Whether the event's start and end lie within +-2^62 ns, so that every difference of two times
 * (durations, the E that closes a B, nesting) fits in int64. */
static int time_ok(const strobe_rd_event *e) {
    const int64_t lim = (int64_t)1 << 62;
    int64_t end;
    if (e->ts_ns >= lim || e->ts_ns <= -lim) return 0;
    return !e->has_dur || (!__builtin_add_overflow(e->ts_ns, e->dur_ns, &end) && end < lim);
}

/* A metadata event ("M"): names, labels and sort indexes of tracks. */
static void collect_names(merger *m, const strobe_rd_event *e, int64_t pid, int64_t tid,
                          const char *pname, int named) {
    const char *nm = e->name.s ? e->name.s : "";
    strobe_rd_value v;
    char buf[512];
    size_t len;
    int64_t x;
    int proc = strncmp(nm, "process_", 8) == 0;
    uint32_t tr = track_of(m, pid, proc ? PROCESS_TID : tid);
    if (tr == UINT32_MAX) return;
    if ((strcmp(nm, "process_name") == 0 || strcmp(nm, "thread_name") == 0) &&
        strobe_rd_event_arg(e, "name", &v) == 1 &&
        strobe_rd_value_str(&v, buf, sizeof buf, &len) == 0) {
        if (proc && named)
            name_track(m, tr, pname, strlen(pname), 0);
        else
            name_track(m, tr, buf, len, 0);
        m->tracks[tr].named_by_input = 1;
        if (proc && strncmp(buf, "GPU", 3) == 0) m->tracks[tr].device = 1;
    } else if (strcmp(nm, "process_labels") == 0 && strobe_rd_event_arg(e, "labels", &v) == 1 &&
               strobe_rd_value_str(&v, buf, sizeof buf, &len) == 0) {
        name_track(m, tr, buf, len, 1);
    } else if ((strcmp(nm, "process_sort_index") == 0 || strcmp(nm, "thread_sort_index") == 0) &&
               strobe_rd_event_arg(e, "sort_index", &v) == 1 && strobe_rd_value_int(&v, &x) == 0) {
        m->tracks[tr].sort = x;
        m->tracks[tr].has_sort = 1;
        if (proc && x >= 16777216) m->tracks[tr].device = 1;
    }
}

/* A counter event: each numeric member of args is one series ("NAME MEMBER", or MEMBER when it
 * is the event's name), on track tr. */
static void collect_counter(merger *m, const strobe_rd_event *e, uint32_t tr) {
    if (e->args == NULL || tr == UINT32_MAX) return;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, e->args, e->args_len);
    int tok = strobe_jp_next(&jp);
    while (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_NUMBER || tok > STROBE_JP_EOF) {
        tok = strobe_jp_next(&jp);
        if (tok != STROBE_JP_KEY) break;
        char key[256];
        size_t kl = jp.str_len < sizeof key - 1 ? jp.str_len : sizeof key - 1;
        memcpy(key, jp.str, kl);
        key[kl] = '\0';
        tok = strobe_jp_next(&jp);
        if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN)
            tok = strobe_jp_skip_container(&jp);
        if (tok != STROBE_JP_NUMBER) continue;
        mitem *it = new_item(m);
        if (it == NULL) break;
        char series[600];
        size_t nl = e->name.s ? e->name.len : 0;
        if (nl == kl && memcmp(e->name.s, key, kl) == 0)
            snprintf(series, sizeof series, "%s", key);
        else
            snprintf(series, sizeof series, "%.*s %s", (int)(nl > 300 ? 300 : nl),
                     e->name.s ? e->name.s : "", key);
        it->ph = 'C';
        it->track = tr;
        it->ts = cli_merge_align(m->cur, e->abs_ts_ns);
        it->name = intern(m, series, strlen(series));
        it->cat = e->cat.s ? intern(m, e->cat.s, e->cat.len) : NO_STR;
        it->value = strtod(jp.num, NULL);
    }
    strobe_jp_free(&jp);
}

/* One event of input `in` (rank: its naming rank; flow_salt: mixed into its flow ids). */
static void collect_event(merger *m, const strobe_rd_event *e, size_t in, uint64_t flow_salt,
                          const char *pname, int64_t pname_pid, size_t *events) {
    if ((e->bad & ~(unsigned)STROBE_RD_BAD_DUP_KEY) || e->ph.s == NULL || e->ph.len != 1) {
        m->skipped++;
        return;
    }
    char ph = e->ph.s[0];
    if (ph != 'M' && !time_ok(e)) {
        m->out_of_range++;
        return;
    }
    int64_t pid = id_num(&e->pid), tid = id_num(&e->tid);
    int named = pname && pid == pname_pid;
    if ((pid = own_pid(m, pid)) < 0) return;
    /* A whole trace declares each (pid, tid) it names, as strobe convert always has. */
    uint32_t tr = m->opt->whole ? track_of(m, pid, tid) : 0;
    if (tr == UINT32_MAX) return;
    if (ph == 'M') {
        collect_names(m, e, pid, tid, pname, named);
        return;
    }
    if (!e->has_abs || strchr("XBEiICsft", ph) == NULL) {
        m->skipped++;
        return;
    }
    if ((tr = track_of(m, pid, tid)) == UINT32_MAX) return;
    m->tracks[tr].str_tid = !e->tid.has_num;
    name_by_id(m, tr, &e->tid);
    if (!e->pid.has_num) {
        uint32_t ptr = track_of(m, pid, PROCESS_TID);
        if (ptr == UINT32_MAX) return;
        name_by_id(m, ptr, &e->pid);
    }
    (*events)++;
    int64_t ts = cli_merge_align(m->cur, e->abs_ts_ns);
    if (ph == 'C') {
        collect_counter(m, e, m->opt->whole ? track_of(m, pid, PROCESS_TID) : tr);
        return;
    }
    if (ph == 'E') {
        /* It ends the last B of its track that is still open. */
        mtrack *t = &m->tracks[tr];
        if (t->nopen == 0) return;
        mitem *b = &m->items[t->open[--t->nopen]];
        b->dur = ts > b->ts ? ts - b->ts : 0;
        return;
    }
    if (ph == 's' || ph == 'f' || ph == 't') {
        m->flows = grow(m->flows, &m->capflows, m->nflows + 1, sizeof *m->flows, &m->oom);
        if (m->oom) return;
        mflow *f = &m->flows[m->nflows];
        *f = (mflow){.track = tr, .ph = ph, .ts = ts, .seq = m->nflows, .item = SIZE_MAX};
        f->bp_e = e->bp.s && strcmp(e->bp.s, "e") == 0;
        if (m->opt->whole) {
            f->id = flow_key(e);
        } else {
            f->id = (uint64_t)id_num(&e->id) ^ flow_salt;
            /* torch's fwdbwd flows count their ids from 1, as launches' correlation ids may: the
             * writer's bit keeps them apart and keeps their category (torch's name, from
             * profiler_kineto.cpp, as src/trace/kineto.h spells it). */
            if (e->cat.s && e->cat.len == 6 && memcmp(e->cat.s, "fwdbwd", 6) == 0)
                f->id |= STROBE_WRITER_FLOW_FWDBWD;
        }
        m->nflows++;
        return;
    }
    mitem *it = new_item(m);
    if (it == NULL) return;
    it->ph = ph == 'X' || ph == 'B' ? 'X' : 'i';
    it->track = tr;
    it->ts = ts;
    it->dur = ph == 'X' && e->has_dur ? e->dur_ns : 0;
    if (it->dur > 0 && m->cur->has_clock) {
        /* The end goes through the clock too (the drift stretches a slice). */
        int64_t end = cli_merge_align(m->cur, e->abs_ts_ns + it->dur) - it->ts;
        it->dur = end > 0 ? end : 0;
    }
    it->name = intern(m, e->name.s ? e->name.s : "", e->name.s ? e->name.len : 0);
    it->cat = e->cat.s ? intern(m, e->cat.s, e->cat.len) : NO_STR;
    if (ph == 'X' && e->cat.s && strcmp(e->cat.s, "Trace") == 0 && e->name.s &&
        strcmp(e->name.s, "strobe session") == 0) {
        m->input_has_session = 1;
        if (in == 0 && !m->session_taken) it->session = 1, m->session_taken = 1;
    }
    keep_args(m, it, e);
    if (ph == 'B') {
        mtrack *t = &m->tracks[tr];
        t->open = grow(t->open, &t->capopen, t->nopen + 1, sizeof *t->open, &m->oom);
        if (!m->oom) t->open[t->nopen++] = m->nitems - 1;
    }
}

/* A "strobe session" span (cat "Trace") from start to end on process pid's track, which is
 * named "Spans" when it has no name. @return the item, or NULL (out of memory). */
static mitem *session_item(merger *m, int64_t pid, int64_t start, int64_t end) {
    uint32_t tr = track_of(m, pid, 0);
    mitem *it = tr == UINT32_MAX ? NULL : new_item(m);
    if (it == NULL) return NULL;
    it->ph = 'X';
    it->track = tr;
    it->ts = start;
    it->dur = end - start;
    it->name = intern(m, "strobe session", 14);
    it->cat = intern(m, "Trace", 5);
    if (m->tracks[tr].name == NO_STR) m->tracks[tr].name = intern(m, "Spans", 5);
    return it;
}

/* A streamed trace whose process never stopped its session (it was killed, or ran exec) has no
 * session span: one is made from the session's start (a stream's base is 1 us before it) to when
 * the caller says the process ended, else to its last event or the file's last write, whichever
 * is later, with the arg "stopped": false, so that the process shows for the time it ran even
 * when it recorded nothing. */
static void add_cut_session(merger *m, const cli_merge_input *in, int64_t pid, size_t first,
                            int64_t base) {
    if (base == INT64_MIN) return;
    if (pid <= 0) {
        for (size_t i = first; i < m->nitems && pid <= 0; i++)
            if (!m->tracks[m->items[i].track].device) pid = m->tracks[m->items[i].track].pid;
    }
    if (pid <= 0) return;
    int64_t start = cli_merge_align(in, base + 1000), end = start;
    for (size_t i = first; i < m->nitems; i++)
        if (m->items[i].ts + m->items[i].dur > end) end = m->items[i].ts + m->items[i].dur;
    struct stat st;
    int64_t in_end = in->end_ns ? cli_merge_align(in, in->end_ns) : 0;
    if (in_end > end && in_end - start < (int64_t)86400 * 1000000000) {
        end = in_end;
    } else if (stat(in->path, &st) == 0) {
        int64_t mt =
            cli_merge_align(in, (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
        if (mt > end && mt - start < (int64_t)86400 * 1000000000) end = mt;
    }
    mitem *it = session_item(m, pid, start, end);
    if (it == NULL) return;
    static const char args[] = "{\"stopped\": false}";
    m->arena = grow(m->arena, &m->caparena, m->narena + sizeof args, 1, &m->oom);
    if (m->oom) return;
    memcpy(m->arena + m->narena, args, sizeof args - 1);
    it->args_off = m->narena;
    it->args_len = sizeof args - 1;
    m->narena += sizeof args - 1;
    /* And an instant at its end, which `strobe check` reports (unclean_stop). */
    uint32_t tr = it->track;
    mitem *mark = new_item(m);
    if (mark == NULL) return;
    static const char cut_name[] =
        "[strobe] process cut short: it ended before its session stopped";
    mark->ph = 'i';
    mark->track = tr;
    mark->ts = end;
    mark->dur = 0;
    mark->name = intern(m, cut_name, sizeof cut_name - 1);
    mark->cat = intern(m, "Trace", 5);
    mark->args_off = SIZE_MAX;
}

/* A session span for the first input when it has none (a PyTorch trace), over its events, on its
 * first process: Perfetto's format has no top-level members, and the writer puts the trace's
 * metadata (a job's distributedInfo and strobe_merge) on that span, without which it is lost. */
static void add_session_span(merger *m) {
    int64_t pid = -1, start = INT64_MAX, end = INT64_MIN;
    for (size_t i = 0; i < m->ntracks && pid < 0; i++)
        if (m->tracks[i].tid == PROCESS_TID && !m->tracks[i].device) pid = m->tracks[i].pid;
    for (size_t i = 0; i < m->nitems; i++) {
        if (pid < 0 && !m->tracks[m->items[i].track].device) pid = m->tracks[m->items[i].track].pid;
        if (m->items[i].ts < start) start = m->items[i].ts;
        if (m->items[i].ts + m->items[i].dur > end) end = m->items[i].ts + m->items[i].dur;
    }
    if (pid < 0 || start > end) return;
    mitem *it = session_item(m, pid, start, end);
    if (it == NULL) return;
    it->session = 1;
    m->session_taken = 1;
}

/* The rank's metadata (src/trace/kineto.h: distributedInfo, strobe_job, strobe_clock_sync), kept
 * from the first input that has each: the processes `strobe record` merges are one rank's. When
 * they are of several ranks (distributedInfo differs: strobe record ran mpirun), the rank's
 * distributedInfo and clock offset describe none of the whole: both are left out. A job's merge
 * (own_pids inputs) writes its own. */
static const char *const carried_keys[3] = {"distributedInfo", "strobe_job", "strobe_clock_sync"};

/* A top-level member of a whole trace (trace_id, deviceProperties, ...), kept as JSON text for
 * the output's session slice; trace_id and traceName go to the writer as strings. The members
 * every JSON trace has by construction are left out. */
static void collect_whole_meta(merger *m, const strobe_rd_meta *mt) {
    const char *k = mt->key.s ? mt->key.s : "";
    if (strcmp(k, "schemaVersion") == 0 || strcmp(k, "displayTimeUnit") == 0 ||
        strcmp(k, "traceEvents") == 0 || strcmp(k, "baseTimeNanoseconds") == 0)
        return;
    if (strcmp(k, "trace_id") == 0 || strcmp(k, "traceName") == 0) {
        char buf[4096], **dst = k[1] == 'r' ? &m->trace_id : &m->trace_name;
        size_t len = 0;
        if (strobe_rd_value_str(&mt->value, buf, sizeof buf, &len) != 0) return;
        free(*dst);
        if ((*dst = strndup(buf, len < sizeof buf ? len : sizeof buf - 1)) == NULL) m->oom = 1;
        return;
    }
    m->meta = grow(m->meta, &m->capmeta, m->nmeta + 1, sizeof *m->meta, &m->oom);
    if (m->oom) return;
    m->meta[m->nmeta].k = strobe__pool_strndup(&m->pool, k, mt->key.len);
    m->meta[m->nmeta].v = strobe__pool_strndup(&m->pool, mt->value.raw, mt->value.len);
    if (!m->meta[m->nmeta].k || !m->meta[m->nmeta++].v) m->oom = 1;
}

/* Reads one input; *state gets its CLI_MERGE_*. @return 0, or -1 when nothing of it could be
 * read. */
/* Appends text[0..len) (elements of a "strobe_heap" array) to m's heap, after a comma when it
 * has some; out of memory, sets oom on `who` (the merger whose step failed). */
static void heap_append(merger *m, merger *who, const char *text, size_t len) {
    char *h = realloc(m->heap, m->heap_len + len + 2);
    if (h == NULL) {
        who->oom = 1;
        return;
    }
    if (m->heap_len) h[m->heap_len++] = ',';
    memcpy(h + m->heap_len, text, len);
    m->heap_len += len;
    h[m->heap_len] = '\0';
    m->heap = h;
}

static int collect_input(merger *m, const cli_merge_input *in, size_t index, size_t *cut,
                         size_t *empty, int *state) {
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.prescan_base = 1;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, in->path, &opt);
    size_t events = 0, first_item = m->nitems;
    uint64_t salt = (uint64_t)index << 40;
    int cut_stream = 0, short_in = 0;
    int64_t cpu_pid = in->pid;
    m->input_has_session = 0;
    m->cur = in;
    m->npids = 0;
    strobe_rd_item item;
    while (rc == 0 && !m->oom && (rc = strobe_rd_next(rd, &item)) > 0) {
        rc = 0;
        if (item.kind == STROBE_RD_EVENT)
            collect_event(m, item.event, index, salt, in->process_name, in->pid, &events);
        if (item.kind == STROBE_RD_META && m->opt->whole) {
            collect_whole_meta(m, item.meta);
        } else if (item.kind == STROBE_RD_META && item.meta->key.s) {
            const strobe_rd_meta *mt = item.meta;
            if (strcmp(mt->key.s, "trace_id") == 0 && m->trace_id == NULL) {
                char buf[256];
                if (strobe_rd_value_str(&mt->value, buf, sizeof buf, NULL) == 0 &&
                    (m->trace_id = strdup(buf)) == NULL)
                    m->oom = 1;
            } else if (strcmp(mt->key.s, "strobe_stream") == 0 &&
                       mt->value.type == STROBE_RD_T_OBJECT) {
                strobe_rd_value c;
                if (strobe_rd_obj_get(mt->value.raw, mt->value.len, "complete", &c) == 1 &&
                    c.type == STROBE_RD_T_FALSE)
                    cut_stream = 1;
                /* Events a streaming session counted and did not write: dropped (its buffer
                 * was full: the writer fell behind) or lost; the caller says how many. */
                static const char *const gone[] = {"dropped_events", "lost_events"};
                for (size_t g = 0; g < 2; g++) {
                    int64_t v = 0;
                    if (strobe_rd_obj_get(mt->value.raw, mt->value.len, gone[g], &c) == 1 &&
                        strobe_rd_value_int(&c, &v) == 0 && v > 0)
                        m->dropped += (uint64_t)v;
                }
                /* A part that reached its size cap (strobe record --max-part-size) says how
                 * many events it left out. */
                if (strobe_rd_obj_get(mt->value.raw, mt->value.len, "capped", &c) == 1 &&
                    c.type == STROBE_RD_T_TRUE) {
                    strobe_rd_value n;
                    int64_t lost = 0;
                    if (strobe_rd_obj_get(mt->value.raw, mt->value.len, "capped_events", &n) == 1)
                        (void)strobe_rd_value_int(&n, &lost);
                    fprintf(m->err, "strobe %s: warning: ", m->cmd);
                    cli_put_esc(m->err, in->path);
                    fputs(" (", m->err);
                    cli_put_esc(m->err, in->process_name ? in->process_name : "?");
                    fprintf(m->err,
                            "): the part reached its size cap; %" PRId64
                            " events were not written\n",
                            lost);
                }
            } else if (strcmp(mt->key.s, "strobe_heap") == 0 &&
                       mt->value.type == STROBE_RD_T_ARRAY && mt->value.len > 2) {
                heap_append(m, m, mt->value.raw + 1, mt->value.len - 2); /* less the brackets */
            } else if (strcmp(mt->key.s, "deviceProperties") == 0 && m->device_props == NULL &&
                       mt->value.type == STROBE_RD_T_ARRAY && mt->value.len > 2) {
                m->device_props = strndup(mt->value.raw, mt->value.len);
                if (m->device_props == NULL) m->oom = 1;
            }
            for (size_t k = 0; k < 3 && !in->own_pids; k++) {
                if (strcmp(mt->key.s, carried_keys[k]) != 0 || mt->value.type != STROBE_RD_T_OBJECT)
                    continue;
                if (m->carried[k] == NULL) {
                    if ((m->carried[k] = strndup(mt->value.raw, mt->value.len)) == NULL) m->oom = 1;
                } else if (k == 0 && (strlen(m->carried[0]) != mt->value.len ||
                                      memcmp(m->carried[0], mt->value.raw, mt->value.len) != 0)) {
                    m->ranks_differ = 1;
                }
            }
        }
    }
    /* A file that could not be read at all counts as not read; one that ends in an error (a
     * process killed inside an append) keeps what came before, as a stream cut short. */
    int failed = rc < 0 && events == 0;
    if (rc < 0) cut_stream = 1;
    if (rc < 0 && rc != STROBE_ENOMEM) {
        const char *why =
            rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd) : strobe_strerror(rc);
        fprintf(m->err, "strobe %s: ", m->cmd);
        cli_put_esc(m->err, why);
        fprintf(m->err, "%s\n", events && !m->opt->whole ? " (the events before it are kept)" : "");
        (*cut)++;
        m->fatal = m->opt->whole;
    }
    if (rc == STROBE_ENOMEM) m->oom = 1;
    int64_t info_base = INT64_MIN;
    if (rd) {
        const strobe_rd_info *info = strobe_rd_get_info(rd);
        if (info->has_base_time) info_base = info->base_time_ns;
        int64_t b = cli_merge_align(in, info->base_time_ns);
        if (info->has_base_time && (!m->has_base || b < m->base)) {
            m->base = b;
            m->has_base = 1;
        }
        /* An event array never closed, or a Perfetto trace cut inside a packet: the reader
         * accepts both (a writer killed mid-run), and the input is short all the same. */
        if (info->unterminated || info->pf_cut) short_in = 1;
    }
    *state = failed ? CLI_MERGE_FAILED : short_in || cut_stream ? CLI_MERGE_SHORT : CLI_MERGE_READ;
    strobe_rd_close(rd);
    if (cut_stream && !m->input_has_session && m->has_base && !m->opt->whole)
        add_cut_session(m, in, cpu_pid, first_item, info_base);
    if (events == 0 && !(cut_stream && !m->input_has_session)) (*empty)++;
    apply_names(m, (int64_t)index + (events ? (int64_t)1 << 40 : 0));
    return failed ? -1 : 0;
}

/* ---- binding flows --------------------------------------------------------------------------- */

static int cmp_items(const void *a, const void *b) {
    const mitem *x = a, *y = b;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    /* Slices before instants and counters at one time (an instant at a slice's start is inside
     * it), longer slices first (the parent before its child). */
    if (x->ph != y->ph) return x->ph == 'X' ? -1 : y->ph == 'X' ? 1 : x->ph < y->ph ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The first of items[from..) (sorted) of `track` at or after `t`, or the first of a later track. */
static size_t first_at(const merger *m, size_t from, uint32_t track, int64_t t) {
    size_t lo = from, hi = m->nitems;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const mitem *x = &m->items[mid];
        if (x->track < track || (x->track == track && x->ts < t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Binds the flows to slices (items sorted) as Perfetto's JSON importer binds them: to the
 * innermost slice of the flow's track that encloses its time; "f" and "t" without bp "e", to the
 * first slice that starts at or after it. */
static void bind_flows(merger *m) {
    for (size_t f = 0; f < m->nflows; f++) {
        mflow *fl = &m->flows[f];
        size_t best = SIZE_MAX, k = first_at(m, 0, fl->track, fl->ts);
        if (fl->ph != 's' && !fl->bp_e) {
            for (; k < m->nitems && m->items[k].track == fl->track && best == SIZE_MAX; k++)
                if (m->items[k].ph == 'X') best = k;
        } else {
            /* The innermost enclosing slice: the latest start at or before ts that still covers
             * it (slices at exactly ts come first, the innermost last). */
            while (k < m->nitems && m->items[k].track == fl->track && m->items[k].ts == fl->ts)
                k++;
            while (k-- > 0 && m->items[k].track == fl->track && best == SIZE_MAX) {
                const mitem *s = &m->items[k];
                if (s->ph == 'X' && s->ts <= fl->ts && s->ts + s->dur >= fl->ts) best = k;
            }
        }
        fl->item = best;
        if (best != SIZE_MAX)
            *(fl->ph == 's' ? &m->items[best].flow_out : &m->items[best].flow_in) = fl->id;
    }
}

/* By id, then input order. */
static int cmp_flows(const void *a, const void *b) {
    const mflow *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A flow with one start and several ends (Kineto's CUDA graph launch: an "f" on each kernel):
 * the second and later ends get ids of their own (the id mixed with their rank), which the start
 * lists after its id, as a terminating flow id closes its flow in Perfetto. The reader maps them
 * back to one "s" and an "f" per end with the start's id. */
static void fan_out_flows(merger *m) {
    cli_qsort(m->flows, m->nflows, sizeof *m->flows, cmp_flows);
    size_t b;
    for (size_t a = 0; a < m->nflows && !m->oom; a = b) {
        uint64_t id = m->flows[a].id;
        size_t start = SIZE_MAX, starts = 0;
        for (b = a; b < m->nflows && m->flows[b].id == id; b++) {
            size_t it = m->flows[b].item;
            if (it != SIZE_MAX && m->flows[b].ph == 's' && m->items[it].flow_out == id &&
                it != start)
                start = it, starts++;
        }
        if (starts != 1) continue;
        uint64_t rank = 0;
        for (size_t k = a; k < b && !m->oom; k++) {
            if (m->flows[k].item == SIZE_MAX) continue;
            mitem *end = &m->items[m->flows[k].item];
            if (m->flows[k].ph == 's' || end->flow_in != id || rank++ == 0) continue;
            uint64_t fresh = id ^ (rank * 0x9e3779b97f4a7c15ull);
            if (fresh == 0) fresh = 1; /* 0 is "no flow" here */
            m->extra = grow(m->extra, &m->capextra, m->nextra + 2, sizeof *m->extra, &m->oom);
            if (m->oom) break;
            mitem *st = &m->items[start];
            if (st->extra_n++ == 0) st->extra_first = m->nextra, m->extra[m->nextra++] = id;
            m->extra[m->nextra++] = fresh;
            end->flow_in = fresh;
        }
    }
}

/* ---- writing --------------------------------------------------------------------------------- */

int cli_writer_args(const char *text, size_t len, strobe_writer_arg **args, size_t *cap, size_t *n,
                    char **scratch, size_t *scap) {
    *n = 0;
    int oom = 0;
    size_t used = 0, count = 0;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, len);
    /* Keys and values go into *scratch, which may move while it grows: each arg holds their
     * offsets until the end, then the pointers. */
    int tok = strobe_jp_next(&jp) == STROBE_JP_OBJ_BEGIN ? strobe_jp_next(&jp) : STROBE_JP_EOF;
    for (; !oom && tok == STROBE_JP_KEY; tok = strobe_jp_next(&jp)) {
        size_t k = used;
        *scratch = grow(*scratch, scap, used + jp.str_len + 1, 1, &oom);
        if (oom) break;
        memcpy(*scratch + used, jp.str, jp.str_len);
        (*scratch)[used + jp.str_len] = '\0';
        used += jp.str_len + 1;
        strobe_jp_capture_begin(&jp, 0);
        tok = strobe_jp_next(&jp);
        if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN)
            tok = strobe_jp_skip_container(&jp);
        if (tok <= STROBE_JP_EOF) break;
        const char *t = NULL;
        size_t tl = 0;
        int64_t off;
        int type = STROBE_ARG_JSON, captured = strobe_jp_capture_end(&jp, &t, &tl, &off) == 0;
        if (tok == STROBE_JP_STRING) {
            type = STROBE_ARG_STRING;
            t = jp.str;
            tl = jp.str_len;
        } else if (!captured) {
            break;
        } else if (tok == STROBE_JP_NUMBER) {
            /* An integer that fits int64 (fewer than 19 digits, no leading zero) stays one. */
            int integer = tl > 0 && tl < 19 && !(tl > 1 && t[t[0] == '-'] == '0');
            for (size_t i = t[0] == '-'; integer && i < tl; i++)
                integer = t[i] >= '0' && t[i] <= '9';
            if (integer) type = STROBE_ARG_INT;
        }
        *scratch = grow(*scratch, scap, used + tl + 1, 1, &oom);
        *args = grow(*args, cap, count + 1, sizeof **args, &oom);
        if (oom) break;
        memcpy(*scratch + used, t, tl);
        (*scratch)[used + tl] = '\0';
        (*args)[count++] = (strobe_writer_arg){.key = (const char *)(uintptr_t)k,
                                               .type = type,
                                               .s = (const char *)(uintptr_t)used,
                                               .len = tl};
        used += tl + 1;
    }
    strobe_jp_free(&jp);
    *args = grow(*args, cap, 1, sizeof **args, &oom);
    for (size_t i = 0; !oom && i < count; i++) {
        strobe_writer_arg *a = &(*args)[i];
        a->key = *scratch + (uintptr_t)a->key;
        a->s = *scratch + (uintptr_t)a->s;
        if (a->type == STROBE_ARG_INT) {
            a->i = strtoll(a->s, NULL, 10);
            a->s = NULL;
            a->len = (size_t)-1;
        }
    }
    if (!oom) *n = count;
    return oom ? STROBE_ENOMEM : 0;
}

static strobe_writer_event item_event(const merger *m, const mitem *it) {
    const char *cat = str(m, it->cat);
    strobe_writer_event e = {.track = (uint32_t)m->tracks[it->track].wid,
                             .flags = it->session ? STROBE_WRITER_SESSION : 0,
                             .cat = cat && cat[0] ? cat : NULL,
                             .name = str(m, it->name),
                             .ts = it->ts,
                             .end = it->ts + it->dur,
                             .value = it->value};
    return e;
}

/* The tracks declared, and the tracks whose events are written, between two calls of
 * strobe_writer_flush_interned(): the Perfetto writer keeps an encoder per thread's sequence,
 * some 17 KB once written to (100,000 threads with one event each took 1.7 GB), and forgets them
 * at each call; each call visits every sequence, so not after each track. */
#define MERGE_FLUSH_TRACKS 256

/* A thread's name with whole: its own, or "thread N" / "stream N". */
static const char *track_label(const merger *m, const mtrack *t, char *buf, size_t size) {
    if (t->name != NO_STR) return str(m, t->name);
    snprintf(buf, size, t->device ? "stream %" PRId64 : "thread %" PRId64, t->tid);
    return buf;
}

/* Declares track i (a process, or a thread whose process is declared). */
static int declare_track(merger *m, strobe_writer *w, size_t i, cli_merge_stats *st) {
    mtrack *t = &m->tracks[i];
    int proc = t->tid == PROCESS_TID;
    strobe_writer_track wt = {.pid = t->pid,
                              .tid = 0,
                              .name = str(m, t->name),
                              .label = str(m, t->label),
                              .sort_index = t->has_sort ? t->sort : INT64_MIN};
    char name[1100], label[40], fallback[48];
    if (proc && m->cur && m->cur->own_pids) {
        /* A rank's process: "PREFIX: its name", ordered by rank (cli_merge_input). */
        const char *pre = m->cur->prefix ? m->cur->prefix : "";
        if (wt.name && wt.name[0])
            snprintf(name, sizeof name, "%.500s: %s", pre, wt.name);
        else
            snprintf(name, sizeof name, "%.500s", pre);
        wt.name = name;
        if (wt.label == NULL && !t->device) {
            snprintf(label, sizeof label, "pid %" PRId64, t->orig_pid);
            wt.label = label;
        }
        wt.sort_index =
            m->cur->sort_base + (t->device ? CLI_MERGE_MAX_PIDS : 0) + (t->pid - m->cur->pid_base);
    }
    if (proc) {
        wt.kind = t->device ? STROBE_TRACK_DEVICE : STROBE_TRACK_PROCESS;
        if (!t->device) st->processes++;
    } else {
        const mtrack *p = &m->tracks[track_of(m, t->pid, PROCESS_TID)];
        t = &m->tracks[i];
        wt.tid = t->tid;
        wt.parent = (uint32_t)p->wid;
        t->device = p->device; /* a device's streams count as device events */
        int plain = p->device || t->tid <= 0 || t->tid > INT32_MAX || t->str_tid;
        wt.kind = plain ? STROBE_TRACK_STREAM : STROBE_TRACK_THREAD;
        if (!plain) st->threads++;
        /* A negative tid (PyTorch writes some) in a thread_name or thread_sort_index
         * event is an error to Perfetto's JSON importer: in JSON, such a thread is
         * declared as a lane, which writes no metadata event (its name is lost). */
        if (m->json && t->tid < 0) wt.kind = STROBE_TRACK_LANE;
        if (m->opt->whole) wt.name = track_label(m, t, fallback, sizeof fallback);
    }
    /* Nor an empty name, which Perfetto's importer refuses in a metadata event. */
    if (m->json && (wt.name == NULL || wt.name[0] == '\0')) {
        if (proc)
            snprintf(fallback, sizeof fallback, "pid %" PRId64, wt.pid);
        else
            snprintf(fallback, sizeof fallback, "%s %" PRId64,
                     wt.kind == STROBE_TRACK_THREAD ? "thread" : "stream", wt.tid);
        wt.name = fallback;
    }
    /* JSON has no "none" for a sort index (the writer would write INT64_MIN, which
     * Perfetto's importer refuses): Kineto's default, the id. */
    if (m->json && wt.sort_index == INT64_MIN) wt.sort_index = proc ? wt.pid : wt.tid;
    int64_t id = strobe_writer_add_track(w, &wt);
    if (id < 0) return (int)id;
    m->tracks[i].wid = id;
    return 0;
}

/* Declares the tracks that events use (with whole, every track), their processes, and the first
 * input's process: the processes first, then the threads, each thread's process before it when
 * it was not declared. */
static int write_tracks(merger *m, strobe_writer *w, uint32_t root, cli_merge_stats *st) {
    for (size_t i = 0; i < m->nitems; i++)
        m->tracks[m->items[i].track].used = 1;
    if (root != UINT32_MAX) m->tracks[root].used = 1;
    size_t n = m->ntracks, declared = 0;
    int rc = 0;
    /* A merge declares every process before the threads; a whole trace, those it names. */
    for (size_t i = 0; i < n && !m->opt->whole; i++) {
        if (!m->tracks[i].used || m->tracks[i].tid == PROCESS_TID) continue;
        uint32_t p = track_of(m, m->tracks[i].pid, PROCESS_TID);
        if (p == UINT32_MAX) return STROBE_ENOMEM;
        m->tracks[p].used = 1;
    }
    for (size_t i = 0; rc == 0 && i < m->ntracks; i++)
        if ((m->tracks[i].used || m->opt->whole) && m->tracks[i].tid == PROCESS_TID)
            rc = declare_track(m, w, i, st);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if ((!m->tracks[i].used && !m->opt->whole) || m->tracks[i].tid == PROCESS_TID) continue;
        uint32_t p = track_of(m, m->tracks[i].pid, PROCESS_TID);
        if (p == UINT32_MAX) return STROBE_ENOMEM;
        if (m->tracks[p].wid < 0) rc = declare_track(m, w, p, st);
        if (rc == 0) rc = declare_track(m, w, i, st);
        if (rc == 0 && ++declared % MERGE_FLUSH_TRACKS == 0) rc = strobe_writer_flush_interned(w);
    }
    return rc;
}

/* Whether a slice of `track` starts at `t`, among items[from..): they are sorted. */
static int slice_starts_at(const merger *m, size_t from, uint32_t track, int64_t t) {
    size_t lo = first_at(m, from, track, t);
    /* At one time slices come first (cmp_items). */
    return lo < m->nitems && m->items[lo].track == track && m->items[lo].ts == t &&
           m->items[lo].ph == 'X';
}

/* The end JSON shows for slice i, whose parent (SIZE_MAX: none) shows its end at parent_shown.
 * Viewers compute with doubles, and a slice that ends in the very ns its parent ends or its next
 * sibling begins can look mis-nested after their rounding: it is shown ending 1 ns earlier
 * (never before its start), as the result walk shows a result's (src/trace/writer.c). Parents
 * come before their children, so the parent's shown end is known. */
static int64_t shown_end(const merger *m, size_t i, size_t parent) {
    const mitem *it = &m->items[i];
    int64_t end = it->ts + it->dur, shown = end;
    if (it->dur > 0 && slice_starts_at(m, i + 1, it->track, end)) shown = end - 1;
    if (parent != SIZE_MAX && shown >= m->items[parent].shown) shown = m->items[parent].shown - 1;
    return shown < it->ts ? it->ts : shown;
}

/* ---- lanes: slices that overlap without nesting -------------------------------------------- */

/* A thread's slices go on lanes, each one a track: lane 0 is the thread's own track, and with
 * CLI_MERGE_LANES a slice that would end after the innermost open slice of a lane goes on the
 * first lane where it nests, a new one when none. A lane is a stack of open slices, linked
 * through `below`. A tree over the lanes holds each lane's innermost open end (INT64_MAX: empty)
 * as the minimum (which slice ends next, so that ends are written in time order) and the maximum
 * (the first lane whose innermost open slice ends at or after E, where a slice ending at E nests)
 * of each subtree: both found in log(lanes) steps, so that many overlapping slices cost no more
 * than a few. */
typedef struct lanes {
    size_t cap;       /* leaves: a power of two */
    size_t n;         /* lanes of the current thread */
    int64_t *mn, *mx; /* [2 * cap], leaves at cap + k */
    size_t *top;      /* [cap]: the lane's innermost open slice (item index), SIZE_MAX: none */
    uint32_t *wid;    /* [cap]: the lane's track (the writer's id) */
    size_t *below;    /* [items]: the open slice under each one on its lane */
} lanes;

/* Node i of the tree from its two children. */
static void lanes_node(lanes *l, size_t i) {
    l->mn[i] = l->mn[2 * i] < l->mn[2 * i + 1] ? l->mn[2 * i] : l->mn[2 * i + 1];
    l->mx[i] = l->mx[2 * i] > l->mx[2 * i + 1] ? l->mx[2 * i] : l->mx[2 * i + 1];
}

static void lanes_set(lanes *l, size_t k, int64_t end) {
    size_t i = l->cap + k;
    l->mn[i] = l->mx[i] = end;
    for (i /= 2; i >= 1; i /= 2)
        lanes_node(l, i);
}

/* Doubles the lanes (from 0: makes 8). @return 0 or STROBE_ENOMEM. */
static int lanes_grow(lanes *l) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    int64_t *mn = malloc(2 * cap * sizeof *mn), *mx = malloc(2 * cap * sizeof *mx);
    size_t *top = realloc(l->top, cap * sizeof *top);
    if (top) l->top = top;
    uint32_t *wid = top ? realloc(l->wid, cap * sizeof *wid) : NULL;
    if (wid) l->wid = wid;
    if (!mn || !mx || !top || !wid) {
        free(mn);
        free(mx);
        return STROBE_ENOMEM;
    }
    for (size_t k = 0; k < cap; k++) {
        mn[cap + k] = mx[cap + k] = k < l->cap ? l->mn[l->cap + k] : INT64_MAX;
        if (k >= l->cap) top[k] = SIZE_MAX, wid[k] = 0;
    }
    free(l->mn);
    free(l->mx);
    l->mn = mn;
    l->mx = mx;
    l->cap = cap;
    for (size_t i = cap - 1; i >= 1; i--)
        lanes_node(l, i);
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

/* Declares lane k of item it's track: a track under the thread's (or stream's) own, which
 * Perfetto shows under the thread and strobe's reader reads back as the thread's. */
static int add_lane(merger *m, strobe_writer *w, lanes *ln, size_t k, const mitem *it) {
    const mtrack *t = &m->tracks[it->track];
    char buf[48], name[600];
    /* A name is at most 511 bytes (collect_names), so never cut inside a character. */
    snprintf(name, sizeof name, "%s (overlaps, lane %zu)", track_label(m, t, buf, sizeof buf),
             k + 1);
    strobe_writer_track wt = {.kind = STROBE_TRACK_LANE,
                              .pid = t->pid,
                              .tid = t->tid,
                              .name = name,
                              .sort_index = (int64_t)k,
                              .parent = ln->wid[0]};
    if (m->json) {
        /* JSON has no track under a thread: the lane is a stream of the process, its tid made
         * from the thread's and the lane's (in 30 bits above Linux's pid range). */
        wt.kind = STROBE_TRACK_STREAM;
        wt.tid =
            0x40000000 + (int64_t)(((uint64_t)t->tid * 0x9e3779b97f4a7c15ull + k) % 0x3FFFFFFF);
        wt.parent = (uint32_t)m->tracks[track_of(m, t->pid, PROCESS_TID)].wid;
    }
    int64_t id = strobe_writer_add_track(w, &wt);
    if (id < 0) return (int)id;
    ln->wid[k] = (uint32_t)id;
    ln->n = k + 1;
    return 0;
}

/* The event of item i, its args (for the JSON writer, which writes a slice at its end, from the
 * event it is given then) and flows. */
static int full_event(merger *m, size_t i, strobe_writer_event *e, strobe_writer_arg **args,
                      size_t *acap, char **scratch, size_t *scap) {
    mitem *it = &m->items[i];
    size_t nargs = 0;
    int rc = it->args_off == SIZE_MAX ? 0
                                      : cli_writer_args(m->arena + it->args_off, it->args_len, args,
                                                        acap, &nargs, scratch, scap);
    *e = item_event(m, it);
    e->args = *args;
    e->nargs = nargs;
    /* Its outgoing flow, or its id and the fanned-out ones (fan_out_flows). */
    e->flow_out = it->extra_n ? m->extra + it->extra_first : &it->flow_out;
    e->nflow_out = it->extra_n ? it->extra_n + 1 : it->flow_out != 0;
    e->flow_in = &it->flow_in;
    e->nflow_in = it->flow_in != 0;
    return rc;
}

/* Writes the items, sorted, with the lanes' stacks of open slices. */
static int write_events(merger *m, strobe_writer *w, cli_merge_stats *st) {
    strobe_writer_arg *args = NULL;
    size_t acap = 0, scap = 0, tracks_written = 0;
    char *scratch = NULL;
    lanes ln = {0};
    ln.below = malloc((m->nitems ? m->nitems : 1) * sizeof *ln.below);
    int rc = ln.below == NULL || lanes_grow(&ln) ? STROBE_ENOMEM : 0;
    strobe_writer_event e;
    for (size_t i = 0; rc == 0 && i <= m->nitems; i++) {
        mitem *it = i < m->nitems ? &m->items[i] : NULL;
        int new_track = it == NULL || (i > 0 && it->track != m->items[i - 1].track);
        /* Close what ends before this item, or everything at a track's end, in time order over
         * the lanes (an instant at a slice's end is inside it). */
        while (rc == 0 && ln.mn[1] != INT64_MAX) {
            int64_t end = ln.mn[1];
            if (!new_track && (end > it->ts || (it->ph != 'X' && end == it->ts))) break;
            size_t k = lanes_next_end(&ln), top = ln.top[k];
            rc = full_event(m, top, &e, &args, &acap, &scratch, &scap);
            e.track = ln.wid[k];
            if (m->json) e.end = m->items[top].shown;
            if (rc == 0) rc = strobe_writer_slice_end(w, &e, NULL, 0);
            ln.top[k] = ln.below[top];
            top = ln.top[k];
            lanes_set(&ln, k, top == SIZE_MAX ? INT64_MAX : m->items[top].ts + m->items[top].dur);
        }
        if (it == NULL || rc) break;
        if (i == 0 || new_track) {
            ln.n = 1;
            ln.wid[0] = (uint32_t)m->tracks[it->track].wid;
            /* The tracks before this one, all closed, get no more events: the writer forgets
             * their state every so many. */
            if (++tracks_written % MERGE_FLUSH_TRACKS == 0) rc = strobe_writer_flush_interned(w);
            if (rc) break;
        }
        if (m->tracks[it->track].device) st->device_events++;
        st->events++;
        if (it->ph == 'C') {
            e = item_event(m, it);
            rc = strobe_writer_counter(w, &e);
            if (rc > 0) rc = 0; /* not finite: JSON has none */
            continue;
        }
        size_t lane = 0, parent = ln.top[0];
        if (it->ph == 'X' && m->opt->overlap == CLI_MERGE_LANES) {
            if ((lane = lanes_fit(&ln, it->ts + it->dur)) == SIZE_MAX) {
                rc = STROBE_ENOMEM;
                break;
            }
            if (lane >= ln.n && (rc = add_lane(m, w, &ln, lane, it)) == 0) st->lanes++;
            parent = ln.top[lane];
            st->on_lanes += lane > 0;
        } else if (it->ph == 'X' && parent != SIZE_MAX &&
                   it->ts + it->dur > m->items[parent].ts + m->items[parent].dur) {
            it->dur = m->items[parent].ts + m->items[parent].dur - it->ts;
            st->clipped++;
        }
        if (rc == 0) rc = full_event(m, i, &e, &args, &acap, &scratch, &scap);
        if (rc) break;
        e.track = ln.wid[lane];
        if (it->ph == 'i') {
            rc = strobe_writer_instant(w, &e);
            continue;
        }
        it->shown = shown_end(m, i, parent);
        rc = strobe_writer_slice_begin(w, &e);
        ln.below[i] = ln.top[lane];
        ln.top[lane] = i;
        lanes_set(&ln, lane, it->ts + it->dur);
    }
    free(ln.below);
    free(ln.mn);
    free(ln.mx);
    free(ln.top);
    free(ln.wid);
    free(args);
    free(scratch);
    return rc;
}

/* Frees what one group held, for the next. */
static void release_group(merger *m) {
    for (size_t i = 0; i < m->ntracks; i++)
        free(m->tracks[i].open);
    free(m->tracks);
    free(m->flows);
    free(m->extra);
    free(m->meta);
    m->flows = NULL;
    m->extra = NULL;
    m->meta = NULL;
    m->nflows = m->capflows = m->nextra = m->capextra = m->nmeta = m->capmeta = 0;
    free(m->items);
    free(m->arena);
    free(m->pending);
    strobe__u64map_free(&m->track_map);
    strobe__strtab_release(&m->strs);
    strobe__pool_release(&m->pool);
    m->tracks = NULL;
    m->items = NULL;
    m->arena = NULL;
    m->pending = NULL;
    m->ntracks = m->captracks = m->nitems = m->capitems = 0;
    m->narena = m->caparena = m->npending = m->cappending = 0;
    memset(&m->track_map, 0, sizeof m->track_map);
    memset(&m->pool, 0, sizeof m->pool);
    strobe__strtab_init(&m->strs, &m->pool);
}

/* Opens the output once the first group is read: its base time, trace id and metadata are known
 * then (the JSON writer writes its header at the first event, so metadata is set here). */
static int open_output(merger *m, const char *out, const cli_merge_options *opt,
                       strobe_writer **w) {
    strobe_writer_options wo;
    strobe_writer_options_init(&wo);
    wo.base_ns = opt->has_base ? opt->base_ns : m->has_base ? m->base : 0;
    wo.trace_id = m->trace_id;
    wo.trace_name = opt->trace_name ? opt->trace_name : m->trace_name;
    int rc = strobe_writer_open(w, out, &wo);
    /* A whole trace's members; one the writer refuses (not valid JSON) is left out. */
    for (size_t i = 0; rc == 0 && i < m->nmeta; i++)
        if (strobe_writer_set_meta(*w, m->meta[i].k, m->meta[i].v) == STROBE_ENOMEM)
            rc = STROBE_ENOMEM;
    for (size_t i = 0; rc == 0 && i < opt->nmeta; i++)
        rc = strobe_writer_set_meta(*w, opt->meta_keys[i], opt->meta_values[i]);
    if (rc == 0 && m->device_props)
        rc = strobe_writer_set_meta(*w, "deviceProperties", m->device_props);
    if (rc == 0 && m->heap) {
        char *v = malloc(m->heap_len + 3);
        if (v == NULL) return STROBE_ENOMEM;
        snprintf(v, m->heap_len + 3, "[%s]", m->heap);
        rc = strobe_writer_set_meta(*w, "strobe_heap", v);
        free(v);
    }
    for (size_t k = 0; k < 3 && rc == 0; k++)
        if (m->carried[k] && !(m->ranks_differ && k != 1))
            rc = strobe_writer_set_meta(*w, carried_keys[k], m->carried[k]);
    if (rc == 0 && m->ranks_differ)
        fprintf(stderr,
                "strobe %s: note: the processes are of several ranks: their distributedInfo is "
                "left out (record each rank on its own: mpirun ... strobe record ...)\n",
                m->cmd);
    return rc;
}

/* Sorts the group collected and binds its flows: nothing here touches the writer, so that a
 * worker does it (collect_group). */
static void prepare_group(merger *m) {
    cli_qsort(m->items, m->nitems, sizeof *m->items, cmp_items);
    bind_flows(m);
    /* JSON gives a flow several ends as they are; Perfetto needs an id per end. */
    if (!m->json) fan_out_flows(m);
}

/* Writes the group prepared; `root`: whether its first process is written even without
 * events. */
static int write_prepared(merger *m, strobe_writer *w, int root, cli_merge_stats *st) {
    if (m->oom) return STROBE_ENOMEM;
    uint32_t first = UINT32_MAX;
    for (size_t i = 0; root && i < m->ntracks && first == UINT32_MAX; i++)
        if (m->tracks[i].tid == PROCESS_TID && !m->tracks[i].device) first = (uint32_t)i;
    int rc = write_tracks(m, w, first, st);
    return rc ? rc : write_events(m, w, st);
}

/* Sorts, binds and writes the group collected (write_prepared's `root`). */
static int write_group(merger *m, strobe_writer *w, int root, cli_merge_stats *st) {
    prepare_group(m);
    return write_prepared(m, w, root, st);
}

/* ---- collecting on threads, and under MPI ---------------------------------------------------
 * A job's ranks (own_pids inputs, each its own group) are collected apart from the writer: a
 * worker reads one rank into a merger of its own and sorts and binds it (collect_group), and the
 * main thread takes the groups in input order (take_group): it prints what collecting said, adds
 * the group's share of the state that outlives a group (the base time, trace id, device
 * properties, heap, counts) to its own merger as the one-merger loop would have left it, and
 * writes the group through the one writer. Workers run at most `window` groups ahead of the
 * writer, so that memory holds about 2 x jobs ranks, not the job.
 *
 * Under MPI, process p collects inputs p, p + P, p + 2P ... (every P-th: rank 0 writes in input
 * order, and with runs of inputs each process but the one being written would wait with its
 * window full) and sends each group, packed (pack_group), to rank 0, which writes them all in
 * order. The packed group is the merger's arrays as they are in memory: the processes run one
 * strobe binary (the sizes of its records are in the list's hash that rank 0 checks). */

/* A group collected apart: its merger, and what collect_input gave besides. */
typedef struct group {
    merger m;
    char *err; /* what collecting said (err_len bytes), printed by the writer */
    size_t err_len;
    size_t cut, empty;
    int state, read; /* read: collect_input returned 0 */
} group;

/* The group of an input that found no memory for its own (never freed). */
static group no_memory = {.m = {.oom = 1}};

static void group_init(group *g, const char *cmd, const cli_merge_options *opt, int json) {
    g->m.cmd = cmd;
    g->m.opt = opt;
    g->m.json = json;
    g->m.err = stderr;
    strobe__strtab_init(&g->m.strs, &g->m.pool);
    g->state = CLI_MERGE_READ;
}

static void free_group(group *g) {
    if (g == NULL || g == &no_memory) return;
    release_group(&g->m);
    strobe__strtab_release(&g->m.strs);
    strobe__pool_release(&g->m.pool);
    free(g->m.trace_id);
    free(g->m.device_props);
    free(g->m.heap);
    free(g->err);
    free(g);
}

/* Reads input k of inputs[] into a group of its own, sorted and bound as write_group would. */
static group *collect_group(const char *cmd, const cli_merge_options *opt, int json,
                            const cli_merge_input *inputs, size_t k) {
    group *g = calloc(1, sizeof *g);
    if (g == NULL) return &no_memory;
    group_init(g, cmd, opt, json);
    FILE *err = open_memstream(&g->err, &g->err_len);
    if (err == NULL) {
        g->m.oom = 1;
        return g;
    }
    g->m.err = err;
    g->read = collect_input(&g->m, &inputs[k], k, &g->cut, &g->empty, &g->state) == 0;
    /* What the loop in cli_merge_ex does before it writes the first group. */
    if (k == 0 && opt->nmeta && !g->m.session_taken && !json && !g->m.oom && !g->m.too_many)
        add_session_span(&g->m);
    if (g->read && !g->m.oom && !g->m.too_many) prepare_group(&g->m);
    if (fclose(err) != 0) g->m.oom = 1;
    g->m.err = stderr;
    return g;
}

/* The writer's side of a merge done apart. */
typedef struct merge_run {
    merger m; /* the state that outlives a group */
    const cli_merge_input *inputs;
    const char *out;
    strobe_writer *w;
    cli_merge_stats st;
    size_t read;
    int open_errno, open_failed;
} merge_run;

/* The one-merger loop's step for input i, collected apart as g. @return 0 or the error that
 * ends the merge. */
static int take_group(merge_run *r, group *g, size_t i) {
    merger *m = &r->m, *gm = &g->m;
    const cli_merge_options *opt = m->opt;
    if (g == &no_memory) {
        m->oom = 1;
        return STROBE_ENOMEM;
    }
    if (g->err_len) fwrite(g->err, 1, g->err_len, stderr);
    r->st.cut += g->cut;
    r->st.empty += g->empty;
    if (opt->state) opt->state[i] = g->state;
    r->read += (size_t)g->read;
    /* What collect_input adds to the merger across groups: the earliest base, the first trace id
     * and device properties, every heap. */
    if (gm->has_base && (!m->has_base || gm->base < m->base)) {
        m->base = gm->base;
        m->has_base = 1;
    }
    if (m->trace_id == NULL) m->trace_id = gm->trace_id, gm->trace_id = NULL;
    if (m->device_props == NULL) m->device_props = gm->device_props, gm->device_props = NULL;
    if (gm->heap) heap_append(m, gm, gm->heap, gm->heap_len);
    m->session_taken |= gm->session_taken;
    int rc = 0;
    if (gm->too_many) {
        fprintf(stderr, "strobe %s: %s: more than %d processes in one input\n", m->cmd,
                cli_esc(r->inputs[i].path), CLI_MERGE_MAX_PIDS);
        m->too_many = 1;
        rc = STROBE_EINVAL;
    } else if (gm->oom) {
        rc = STROBE_ENOMEM;
    }
    if (rc == 0 && r->w == NULL && r->read > 0 && (rc = open_output(m, r->out, opt, &r->w)) != 0) {
        r->open_errno = errno;
        r->open_failed = r->w == NULL;
    }
    if (rc == 0 && g->read) rc = write_prepared(gm, r->w, 1, &r->st);
    if (rc == 0 && g->read) rc = strobe_writer_flush_interned(r->w);
    if (rc == 0 && gm->oom) rc = STROBE_ENOMEM;
    /* Counted while collecting and writing. */
    m->skipped += gm->skipped;
    m->out_of_range += gm->out_of_range;
    m->wide_ids += gm->wide_ids;
    m->dropped += gm->dropped;
    if (gm->oom) m->oom = 1;
    return rc;
}

/* The workers of one process: they collect inputs first, first + step ... (count of them), the
 * j-th into slot[j], at most `window` ahead of the groups taken. */
typedef struct collectors {
    pthread_mutex_t lock;
    pthread_cond_t ready, room;
    const char *cmd;
    const cli_merge_options *opt;
    int json;
    const cli_merge_input *inputs;
    size_t first, step, count, window;
    group **slot;
    size_t next, taken;
    int stop;
    pthread_t *threads;
    int nthreads;
} collectors;

static void *collector(void *arg) {
    collectors *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->stop && c->next < c->count && c->next >= c->taken + c->window)
            pthread_cond_wait(&c->room, &c->lock);
        if (c->stop || c->next >= c->count) break;
        size_t j = c->next++;
        pthread_mutex_unlock(&c->lock);
        group *g = collect_group(c->cmd, c->opt, c->json, c->inputs, c->first + c->step * j);
        pthread_mutex_lock(&c->lock);
        c->slot[j] = g;
        pthread_cond_broadcast(&c->ready);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Starts `jobs` workers; with none started (no memory for them), the caller's thread collects
 * each group when it is wanted (next_group). */
static void collectors_start(collectors *c, int jobs) {
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->ready, NULL);
    pthread_cond_init(&c->room, NULL);
    c->window = 2 * (size_t)jobs;
    c->slot = calloc(c->count ? c->count : 1, sizeof *c->slot);
    c->threads = malloc((size_t)jobs * sizeof *c->threads);
    for (; c->slot && c->threads && c->nthreads < jobs; c->nthreads++)
        if (pthread_create(&c->threads[c->nthreads], NULL, collector, c) != 0) break;
}

/* The j-th group, once collected; the caller frees it and then calls group_taken(). */
static group *next_group(collectors *c, size_t j) {
    if (c->nthreads == 0)
        return collect_group(c->cmd, c->opt, c->json, c->inputs, c->first + c->step * j);
    pthread_mutex_lock(&c->lock);
    while (c->slot[j] == NULL)
        pthread_cond_wait(&c->ready, &c->lock);
    group *g = c->slot[j];
    c->slot[j] = NULL;
    pthread_mutex_unlock(&c->lock);
    return g;
}

static void group_taken(collectors *c) {
    if (c->nthreads == 0) return;
    pthread_mutex_lock(&c->lock);
    c->taken++;
    pthread_cond_broadcast(&c->room);
    pthread_mutex_unlock(&c->lock);
}

/* Stops the workers (those collecting finish their group) and frees what was not taken. */
static void collectors_stop(collectors *c) {
    if (c->nthreads > 0) {
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_cond_broadcast(&c->room);
        pthread_mutex_unlock(&c->lock);
        for (int k = 0; k < c->nthreads; k++)
            pthread_join(c->threads[k], NULL);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->ready);
    pthread_cond_destroy(&c->room);
    for (size_t j = 0; c->slot && j < c->count; j++)
        free_group(c->slot[j]);
    free(c->slot);
    free(c->threads);
}

/* ---- a group packed for rank 0 ---- */

/* A string that may be NULL: its length + 1 (0: NULL), then its bytes. */
static void put_str(md_wbuf *b, const char *s, size_t len) {
    md_put_u64(b, s ? len + 1 : 0);
    if (s) md_put(b, s, len);
}

/* n records of `size` bytes, malloc'd (NULL when none or bad). */
static void *take_array(md_rbuf *b, size_t n, size_t size) {
    if (n == 0) return NULL;
    if (n > (b->len - b->at) / size) {
        b->bad = 1;
        return NULL;
    }
    void *d = malloc(n * size);
    if (d == NULL) {
        b->bad = 1;
        return NULL;
    }
    memcpy(d, md_take(b, n * size), n * size);
    return d;
}

/* A put_str string, malloc'd and NUL-terminated (*len without the NUL). */
static char *take_str(md_rbuf *b, size_t *len) {
    uint64_t l = md_take_u64(b);
    if (l == 0 || b->bad) return NULL;
    if (l - 1 > b->len - b->at) {
        b->bad = 1;
        return NULL;
    }
    char *s = malloc(l);
    if (s == NULL) {
        b->bad = 1;
        return NULL;
    }
    memcpy(s, md_take(b, l - 1), l - 1);
    s[l - 1] = '\0';
    if (len) *len = l - 1;
    return s;
}

/* The group as bytes: what collecting said and counted, and the merger's arrays (the flows are
 * bound to the items by then, and not needed). @return 0 or STROBE_ENOMEM. */
static int pack_group(const group *g, uint8_t **out, size_t *len) {
    const merger *m = &g->m;
    md_wbuf b = {0};
    const uint64_t head[] = {(uint64_t)g->state,
                             (uint64_t)g->read,
                             g->cut,
                             g->empty,
                             (uint64_t)m->too_many,
                             (uint64_t)m->oom,
                             (uint64_t)m->session_taken,
                             (uint64_t)m->has_base,
                             (uint64_t)m->base,
                             m->skipped,
                             m->out_of_range,
                             m->wide_ids,
                             m->dropped,
                             m->npids};
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++)
        md_put_u64(&b, head[k]);
    md_put(&b, m->pids, m->npids * sizeof *m->pids);
    put_str(&b, g->err, g->err_len);
    put_str(&b, m->trace_id, m->trace_id ? strlen(m->trace_id) : 0);
    put_str(&b, m->device_props, m->device_props ? strlen(m->device_props) : 0);
    put_str(&b, m->heap, m->heap_len);
    md_put_u64(&b, m->strs.count);
    for (size_t k = 0; k < m->strs.count; k++)
        put_str(&b, m->strs.strs[k], m->strs.lens[k]);
    md_put_u64(&b, m->ntracks);
    for (size_t k = 0; k < m->ntracks; k++) {
        mtrack t = m->tracks[k];
        t.open = NULL;
        t.nopen = t.capopen = 0;
        md_put(&b, &t, sizeof t);
    }
    md_put_u64(&b, m->nitems);
    md_put(&b, m->items, m->nitems * sizeof *m->items);
    md_put_u64(&b, m->nextra);
    md_put(&b, m->extra, m->nextra * sizeof *m->extra);
    md_put_u64(&b, m->narena);
    md_put(&b, m->arena, m->narena);
    if (b.oom) {
        free(b.p);
        return STROBE_ENOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

/* The group pack_group made of input `in`. @return it, &no_memory, or NULL when the bytes are
 * not a group. */
static group *unpack_group(const uint8_t *buf, size_t len, const char *cmd,
                           const cli_merge_options *opt, int json, const cli_merge_input *in) {
    group *g = calloc(1, sizeof *g);
    if (g == NULL) return &no_memory;
    group_init(g, cmd, opt, json);
    merger *m = &g->m;
    m->cur = in;
    md_rbuf b = {.p = buf, .len = len};
    g->state = (int)md_take_u64(&b);
    g->read = (int)md_take_u64(&b);
    g->cut = md_take_u64(&b);
    g->empty = md_take_u64(&b);
    m->too_many = (int)md_take_u64(&b);
    m->oom = (int)md_take_u64(&b);
    m->session_taken = (int)md_take_u64(&b);
    m->has_base = (int)md_take_u64(&b);
    m->base = (int64_t)md_take_u64(&b);
    m->skipped = md_take_u64(&b);
    m->out_of_range = md_take_u64(&b);
    m->wide_ids = md_take_u64(&b);
    m->dropped = md_take_u64(&b);
    m->npids = md_take_u64(&b);
    if (m->npids > CLI_MERGE_MAX_PIDS) b.bad = 1;
    const uint8_t *pids = md_take(&b, m->npids * sizeof *m->pids);
    if (pids) memcpy(m->pids, pids, m->npids * sizeof *m->pids);
    g->err = take_str(&b, &g->err_len);
    m->trace_id = take_str(&b, NULL);
    m->device_props = take_str(&b, NULL);
    m->heap = take_str(&b, &m->heap_len);
    uint64_t nstrs = md_take_u64(&b);
    for (uint64_t k = 0; k < nstrs && !b.bad; k++) {
        size_t l = 0;
        char *s = take_str(&b, &l);
        if (s == NULL || intern(m, s, l) != k) b.bad = 1;
        free(s);
    }
    m->ntracks = m->captracks = md_take_u64(&b);
    m->tracks = take_array(&b, m->ntracks, sizeof *m->tracks);
    for (size_t k = 0; k < m->ntracks && !b.bad; k++) {
        int inserted = 0;
        uint64_t *slot = strobe__u64map_put(
            &m->track_map, track_key(m->tracks[k].pid, m->tracks[k].tid), &inserted);
        if (slot == NULL)
            b.bad = 1;
        else if (inserted)
            *slot = k + 1;
    }
    m->nitems = m->capitems = md_take_u64(&b);
    m->items = take_array(&b, m->nitems, sizeof *m->items);
    m->nextra = m->capextra = md_take_u64(&b);
    m->extra = take_array(&b, m->nextra, sizeof *m->extra);
    m->narena = m->caparena = md_take_u64(&b);
    m->arena = take_array(&b, m->narena, 1);
    /* Every index within what came: the bytes are another process's, read as records. */
    size_t nstr = m->strs.count;
#define BAD_STR(id) ((id) != NO_STR && (id) >= nstr)
    for (size_t k = 0; k < m->ntracks && !b.bad; k++)
        if (BAD_STR(m->tracks[k].name) || BAD_STR(m->tracks[k].label)) b.bad = 1;
    for (size_t k = 0; k < m->nitems && !b.bad; k++) {
        const mitem *it = &m->items[k];
        if (it->track >= m->ntracks || BAD_STR(it->name) || BAD_STR(it->cat) ||
            (it->args_off != SIZE_MAX &&
             (it->args_off > m->narena || it->args_len > m->narena - it->args_off)) ||
            (it->extra_n &&
             (it->extra_first > m->nextra || it->extra_n >= m->nextra - it->extra_first)))
            b.bad = 1;
    }
#undef BAD_STR
    if (b.bad || b.at != b.len) {
        if (m->tracks == NULL) m->ntracks = m->captracks = 0;
        if (m->items == NULL) m->nitems = m->capitems = 0;
        if (m->extra == NULL) m->nextra = m->capextra = 0;
        free_group(g);
        return NULL;
    }
    return g;
}

/* ---- the merge apart ---- */

/* The inputs every process must be given alike (FNV-1a over their paths, each with its NUL), and
 * the sizes of the records pack_group sends as they are. */
static uint64_t inputs_hash(const cli_merge_input *in, size_t n) {
    const uint64_t sizes[] = {sizeof(mtrack), sizeof(mitem), sizeof(merger), n};
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t k = 0; k < sizeof sizes; k++)
        h = (h ^ ((const uint8_t *)sizes)[k]) * 0x100000001b3u;
    for (size_t k = 0; k < n; k++)
        for (const char *p = in[k].path;; p++) {
            h = (h ^ (uint8_t)*p) * 0x100000001b3u;
            if (*p == '\0') break;
        }
    return h;
}

/* Ends every process after an MPI failure that rank 0 said. */
static void mpi_fail(void) {
    cli_mpi_abort(2);
    exit(2);
}

/* A process other than rank 0: its groups, packed, to rank 0 in order (an empty message for one
 * it found no memory to pack). @return the status rank 0 sends at the end (0 or -1). */
static int serve(merge_run *r, collectors *c, size_t n) {
    uint64_t h = inputs_hash(r->inputs, n);
    if (cli_mpi_send(0, &h, sizeof h) != 0) mpi_fail();
    for (size_t j = 0; j < c->count; j++) {
        group *g = next_group(c, j);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (g == &no_memory || pack_group(g, &buf, &len) != 0) len = 0;
        free_group(g);
        group_taken(c);
        int bad = cli_mpi_send(0, buf, len) != 0;
        free(buf);
        if (bad) mpi_fail();
    }
    uint8_t *v = NULL;
    uint64_t vlen = 0;
    int32_t status = -1;
    if (cli_mpi_recv(0, &v, &vlen) != 0) mpi_fail();
    if (vlen == sizeof status) memcpy(&status, v, sizeof status);
    free(v);
    return status;
}

/* Rank 0: input i's group, from process `from`. */
static group *receive_group(merge_run *r, int from, size_t i) {
    uint8_t *buf = NULL;
    uint64_t len = 0;
    if (cli_mpi_recv(from, &buf, &len) != 0) {
        fprintf(stderr, "strobe %s: MPI: %s: not received from process %d\n", r->m.cmd,
                cli_esc(r->inputs[i].path), from);
        mpi_fail();
    }
    group *g = len == 0
                   ? &no_memory
                   : unpack_group(buf, (size_t)len, r->m.cmd, r->m.opt, r->m.json, &r->inputs[i]);
    free(buf);
    if (g == NULL) {
        fprintf(stderr, "strobe %s: MPI: %s: process %d sent what is not a rank's events\n",
                r->m.cmd, cli_esc(r->inputs[i].path), from);
        mpi_fail();
    }
    return g;
}

/* The merge of n own_pids inputs collected on `jobs` threads, under MPI by every process.
 * @return 0 or the error that ended it; *served: this process is not rank 0, and the result is
 * rank 0's verdict. */
static int merge_apart(merge_run *r, size_t n, int jobs, int *served) {
    const cli_merge_options *opt = r->m.opt;
    size_t size = opt->mpi_size > 1 ? (size_t)opt->mpi_size : 1;
    size_t me = size > 1 ? (size_t)opt->mpi_rank : 0;
    collectors c = {.cmd = r->m.cmd,
                    .opt = opt,
                    .json = r->m.json,
                    .inputs = r->inputs,
                    .first = me,
                    .step = size,
                    .count = n > me ? (n - me + size - 1) / size : 0};
    *served = me != 0;
#ifdef __GLIBC__
    /* A group's arrays are allocated on one thread and freed on another, in sizes that differ
     * from rank to rank: with glibc's threshold moving up to them, they come from the threads'
     * heaps, which do not shrink, and the peak grew with the ranks (8 ranks of 2 MB at -j 2:
     * 16 MB, 96 ranks: 22 MB). Mapped apart, each is given back when freed (14 MB for both). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    if (me == 0 && size > 1) {
        uint64_t h = inputs_hash(r->inputs, n);
        for (size_t p = 1; p < size; p++) {
            uint8_t *hb = NULL;
            uint64_t hlen = 0;
            int same = cli_mpi_recv((int)p, &hb, &hlen) == 0 && hlen == sizeof h &&
                       memcmp(hb, &h, sizeof h) == 0;
            free(hb);
            if (!same) {
                fprintf(stderr,
                        "strobe %s: MPI: process %zu was given other traces than rank 0 (each "
                        "process of the launch must be given the same ones)\n",
                        r->m.cmd, p);
                mpi_fail();
            }
        }
    }
    collectors_start(&c, jobs);
    int rc = 0;
    if (me != 0) {
        rc = serve(r, &c, n);
    } else {
        size_t i = 0;
        for (; rc == 0 && i < n; i++) {
            size_t from = i % size;
            group *g = from == 0 ? next_group(&c, i / size) : receive_group(r, (int)from, i);
            rc = take_group(r, g, i);
            free_group(g);
            if (from == 0) group_taken(&c);
        }
        /* The others send every group of theirs: those not written are received and dropped. */
        for (; size > 1 && i < n; i++) {
            uint8_t *buf = NULL;
            uint64_t len = 0;
            if (i % size && cli_mpi_recv((int)(i % size), &buf, &len) != 0) mpi_fail();
            free(buf);
        }
    }
    collectors_stop(&c);
    return rc;
}

/* Rank 0: the merge's status (0 or -1) to every other process. */
static void mpi_verdict(int size, int32_t status) {
    for (int p = 1; p < size; p++)
        if (cli_mpi_send(p, &status, sizeof status) != 0) mpi_fail();
}

int cli_merge_ex(const char *cmd, const cli_merge_input *inputs, size_t n, const char *out,
                 const cli_merge_options *opt, cli_merge_stats *stats) {
    cli_merge_options defaults = {0};
    if (opt == NULL) opt = &defaults;
    merge_run r = {.m = {.cmd = cmd, .opt = opt, .json = !strobe__pftrace_path(out), .err = stderr},
                   .inputs = inputs,
                   .out = out};
    merger *m = &r.m;
    strobe__strtab_init(&m->strs, &m->pool);
    int rc = 0, served = 0;
    /* A job's ranks on threads, or under MPI: the same bytes, with a writer fed in input order. */
    int apart = (opt->jobs > 1 || opt->mpi_size > 1) && !opt->whole && n > 0;
    for (size_t k = 0; apart && k < n; k++)
        apart = inputs[k].own_pids;
    if (apart) rc = merge_apart(&r, n, opt->jobs > 1 ? opt->jobs : 1, &served);
    for (size_t i = 0; !apart && rc == 0 && i < n;) {
        /* The group: an own_pids input alone, or the run of inputs up to the next one. */
        size_t end = i + 1;
        if (!inputs[i].own_pids)
            while (end < n && !inputs[end].own_pids)
                end++;
        size_t group_read = 0;
        for (size_t k = i; k < end && !m->oom && !m->too_many; k++) {
            int state = CLI_MERGE_READ;
            cli_progress *p = cli_progress_start(cmd, inputs[k].path, !opt->progress);
            if (collect_input(m, &inputs[k], k, &r.st.cut, &r.st.empty, &state) == 0) group_read++;
            cli_progress_stop(p);
            if (opt->state) opt->state[k] = state;
        }
        r.read += group_read;
        if (m->fatal) {
            rc = STROBE_EINVAL;
        } else if (opt->whole && m->nitems == 0 && m->ntracks == 0) {
            fprintf(stderr, "strobe %s: %s: no events\n", cmd, cli_esc(inputs[i].path));
            rc = STROBE_EINVAL;
            m->fatal = 1;
        } else if (m->too_many) {
            fprintf(stderr, "strobe %s: %s: more than %d processes in one input\n", cmd,
                    cli_esc(inputs[i].path), CLI_MERGE_MAX_PIDS);
            rc = STROBE_EINVAL;
        } else if (m->oom) {
            rc = STROBE_ENOMEM;
        }
        /* The first group read opens the output. */
        if (rc == 0 && i == 0 && opt->nmeta && !m->session_taken && strobe__pftrace_path(out))
            add_session_span(m);
        if (rc == 0 && r.w == NULL && r.read > 0 && (rc = open_output(m, out, opt, &r.w)) != 0) {
            r.open_errno = errno; /* why the file could not be made (ENOENT, EROFS ...) */
            r.open_failed = r.w == NULL;
        }
        if (rc == 0 && group_read > 0)
            rc = write_group(m, r.w, i == 0 || inputs[i].own_pids, &r.st);
        /* The group's tracks get no more events: the writer forgets their state (Perfetto's
         * interned names and buffers), so that memory does not grow with the ranks. */
        if (rc == 0 && group_read > 0) rc = strobe_writer_flush_interned(r.w);
        if (rc == 0 && m->oom) rc = STROBE_ENOMEM;
        release_group(m);
        m->cur = NULL;
        i = end;
    }
    cli_merge_stats st = r.st;
    st.skipped = m->skipped;
    st.out_of_range = m->out_of_range;
    st.wide_ids = m->wide_ids;
    st.dropped = m->dropped;
    if (rc == 0 && r.read == 0 && !served) {
        fprintf(stderr, "strobe %s: no input could be read\n", cmd);
        rc = STROBE_EINVAL;
    }
    int sys_errno = r.open_errno; /* the writer leaves the system's reason in errno */
    if (r.w != NULL) {
        errno = 0;
        if (rc == 0)
            rc = strobe_writer_close(r.w);
        else
            strobe_writer_abort(r.w);
        sys_errno = errno;
    }
    if (rc < 0 && r.read > 0 && !m->too_many && !m->fatal) {
        fprintf(stderr, "strobe %s: %s: %s: %s\n", cmd, cli_esc(out),
                r.open_failed ? "cannot create a file in its folder" : "cannot write",
                cli_out_reason(rc, sys_errno));
    }
    if (apart && !served && opt->mpi_size > 1) mpi_verdict(opt->mpi_size, rc ? -1 : 0);
    release_group(m);
    strobe__strtab_release(&m->strs);
    strobe__pool_release(&m->pool);
    free(m->trace_id);
    free(m->trace_name);
    free(m->device_props);
    free(m->heap);
    for (size_t k = 0; k < 3; k++)
        free(m->carried[k]);
    if (stats) *stats = st;
    return rc ? -1 : 0;
}

int cli_merge(const char *cmd, const cli_merge_input *inputs, size_t n, const char *out,
              const char *trace_name, cli_merge_stats *stats) {
    cli_merge_options opt = {.trace_name = trace_name};
    return cli_merge_ex(cmd, inputs, n, out, &opt, stats);
}

int cli_merge_getopt(const char *cmd, const char *usage, const struct option *longopts, int argc,
                     char **argv, cli_merge_args *a) {
    /* -j where the command takes it (strobe merge). */
    const char *shortopts = ":o:qhV";
    for (const struct option *o = longopts; o->name; o++)
        if (strcmp(o->name, "jobs") == 0) shortopts = ":o:qhVj:";
    for (int c; (c = cli_getopt(argc, argv, shortopts, longopts, &a->first)) != -1;) {
        switch (c) {
        case 'j': {
            int code = cli_parse_jobs(cmd, optarg);
            if (code) return code;
            break;
        }
        case 'h':
            return cli_help(usage);
        case 'V':
            return cli_version();
        case 'q':
            a->quiet = 1;
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'O':
            if (strcmp(optarg, "lanes") != 0 && strcmp(optarg, "cut") != 0)
                return cli_usage_error(cmd, "--overlap takes lanes or cut", optarg);
            a->overlap = optarg[0] == 'l' ? CLI_MERGE_LANES : CLI_MERGE_CUT;
            break;
        default:
            return cli_option_error(cmd, c, argv, longopts);
        }
    }
    return -1;
}
