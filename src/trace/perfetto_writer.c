/* perfetto_writer.c: Perfetto's native protobuf format (.pftrace, .perfetto-trace).
 *
 * The same content as the JSON writer, on Perfetto's tracks:
 *   - the CPU process (a process track, sorted by its pid as in the JSON) and its threads (thread
 *     tracks, sorted by tid), and the "Spans" track under the process with the session's span;
 *   - one track per device ("GPU N") with a child track per stream; their uuids carry Kineto's
 *     (pid, tid) = (device index, stream), see STROBE__PFT_KINETO_UUID, so that the decoder
 *     converts back to Kineto's JSON;
 *   - ranges as begin/end slices with the JSON writer's args as debug annotations, instants, and
 *     counters on counter tracks (one per thread and name, under the thread's track);
 *   - the JSON writer's "ac2g" flows (the same plan: strobe__json_plan_flows) as terminating flow
 *     ids on the device work and flow ids on the launch. A terminating id closes its flow, so the
 *     device events of one launch (a CUDA graph's kernels) each have their own, and the launch
 *     lists them all, its correlation id first; the decoder maps them back to Kineto's one "s"
 *     and an "f" per device event, all with the correlation id.
 * The trace's metadata (trace_id, the "strobe" object with stats and warnings, user metadata,
 * deviceProperties, baseTimeNanoseconds, traceName) goes on the session slice as debug
 * annotations: Perfetto shows them in the slice's "Arguments" panel when it is selected. The
 * session slice is written at end, when all of it is known (a stream's stats come last).
 *
 * Written through the event-level calls (writer.h): a slice's begin goes out at slice_begin, so
 * that a streamed file cut by a kill holds the slices open at the cut. Each thread, stream and
 * lane is a packet sequence of its own; sequence 1 holds the descriptors and the session.
 *
 * Times are written as the JSON writer's ts: ns relative to baseTimeNanoseconds. The trace
 * processor then shows the same timestamps for both files, to the nanosecond. Unlike the JSON
 * writer, ends are written as recorded: integer nanoseconds need no 1 ns display margin
 * (display_ends in writer.c), so a range that ends exactly when its parent ends is 1 ns
 * longer here than in the JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_profile.h"
#include "json_writer.h"
#include "kineto.h"
#include "strobe/error.h"
#include "util/pftrace_enc.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "writer.h"

/* Packets are handed to the sink in batches of about this many bytes (unless streaming). */
#define FLUSH_BYTES (256 * 1024)

/* Track uuids: threads and lanes get small numbers in order of declaration, counter tracks a
 * marker byte and an index; process and device tracks STROBE__PFT_KINETO_PROC_UUID, streams and
 * "Spans" STROBE__PFT_KINETO_UUID. */
#define COUNTER_UUID(i) ((UINT64_C(0x43) << 56) | (uint64_t)(i))

typedef struct ptrack {
    uint64_t uuid;
    uint32_t enc; /* its sequence: 0 the main one (descriptors, session), else encs[enc] */
} ptrack;

typedef struct pw {
    strobe__writer base;
    /* [0]: sequence 1; [k]: the sequence of a thread, stream or lane, NULL after pf_flush_state
     * until the sequence's next packet (revive()). */
    strobe__pft **encs;
    size_t enc_count, enc_cap;
    uint64_t *enc_track; /* each sequence's default track (0: none) */
    size_t enc_track_cap;
    uint64_t *enc_clock; /* a freed sequence's clock, which its next encoder carries on */
    size_t enc_clock_cap;
    /* Streaming: the sequence whose packets may be held in its encoder (see use()). */
    uint32_t held;
    ptrack *tracks;
    size_t tracks_cap;
    uint64_t next_uuid;
    strobe__strtab counters; /* "track id:name" -> counter track index */
    strobe__pool pool;
    strobe__pft_arg *args;
    size_t args_cap;
    uint64_t *fb_ids; /* a slice's flow ids with its fwdbwd flow's */
    size_t fb_cap;
    char *name; /* a NUL-terminated copy of a name given with its length */
    size_t name_cap;
    int session; /* a session slice was given: written at end with the metadata */
    uint32_t session_track;
    int64_t session_start, session_end;
} pw;

static int32_t clamp32(int64_t v) {
    if (v == INT64_MIN) return STROBE__PFT_NO_SORT; /* a sort index of none */
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)v;
}

static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < n)
        c *= 2;
    void *a = realloc(*p, c * size);
    if (a == NULL) return STROBE_ENOMEM;
    *p = a;
    *cap = c;
    return 0;
}

static int flush_one(pw *p, strobe__pft *enc, size_t at_least) {
    size_t len;
    if (enc == NULL) return 0; /* a sequence freed by pf_flush_state holds nothing */
    const uint8_t *d = strobe__pft_data(enc, &len);
    if (len == 0 || len < at_least) return 0;
    int rc = strobe__sink_write(p->base.out, d, len);
    strobe__pft_reset_data(enc);
    return rc ? rc : p->base.out->err;
}

/* Hands the packets of sequence `k` to the sink, the descriptors (sequence 1) first, so that a
 * track is declared before the events on it, in batches (see flush). */
static int flush_batch(pw *p, uint32_t k, int force) {
    size_t min = force ? 1 : FLUSH_BYTES;
    size_t len = 0;
    if (k && p->encs[k]) (void)strobe__pft_data(p->encs[k], &len);
    int rc = flush_one(p, p->encs[0], k && len >= min ? 1 : min);
    if (rc == 0 && k) rc = flush_one(p, p->encs[k], min);
    return rc;
}

/* flush_batch(), but for a stream's events, which use() hands over. Inline: it is called after
 * every event. */
static inline int flush(pw *p, uint32_t k, int force) {
    if (!force && (p->base.flags & STROBE__WR_STREAMING)) return 0;
    return flush_batch(p, k, force);
}

/* Streaming: the packets of the sequence written last stay in its encoder (held, ops.held),
 * and go to the sink in one piece when a call writes to another sequence (before that one's
 * packets), at sync, or at end: one copy per run of events on one thread instead of one per
 * event, and the bytes reach the sink in the order they were written. Call before writing to
 * sequence `k`. @return 0 or the sink's error. */
static int revive(pw *p, uint32_t k);
static int use(pw *p, uint32_t k) {
    if (p->encs[k] == NULL && revive(p, k)) return STROBE_ENOMEM;
    if (!(p->base.flags & STROBE__WR_STREAMING) || p->held == k) return 0;
    int rc = flush_one(p, p->encs[p->held], 1);
    p->held = k;
    return rc;
}

/* A new sequence with `uuid` as its default track. @return its index or -1 (ENOMEM). */
static int64_t new_sequence(pw *p, uint64_t uuid) {
    if (grow((void **)&p->encs, &p->enc_cap, p->enc_count + 1, sizeof *p->encs) ||
        grow((void **)&p->enc_track, &p->enc_track_cap, p->enc_count + 1, sizeof *p->enc_track) ||
        grow((void **)&p->enc_clock, &p->enc_clock_cap, p->enc_count + 1, sizeof *p->enc_clock))
        return -1;
    strobe__pft *e = strobe__pft_new((uint32_t)(p->enc_count + 1));
    if (e == NULL) return -1;
    if (uuid) strobe__pft_set_default_track(e, uuid);
    p->encs[p->enc_count] = e;
    p->enc_track[p->enc_count] = uuid;
    p->enc_clock[p->enc_count] = 0;
    return (int64_t)p->enc_count++;
}

/* A new encoder for sequence `k`, freed by pf_flush_state: the same id and default track, its
 * clock where the freed one's was; its first packet starts the sequence over. @return 0 or
 * STROBE_ENOMEM. */
static int revive(pw *p, uint32_t k) {
    strobe__pft *e = strobe__pft_new(k + 1);
    if (e == NULL) return STROBE_ENOMEM;
    if (p->enc_track[k]) strobe__pft_set_default_track(e, p->enc_track[k]);
    strobe__pft_set_clock(e, p->enc_clock[k]);
    p->encs[k] = e;
    return 0;
}

static int pf_begin(strobe__writer *w, const strobe__wr_info *in) {
    pw *p = (pw *)w;
    w->base_ns = in->base_ns;
    p->next_uuid = 1;
    strobe__strtab_init(&p->counters, &p->pool);
    return new_sequence(p, 0) < 0 ? STROBE_ENOMEM : 0;
}

static int pf_track(strobe__writer *w, uint32_t id, const strobe__wr_track *t) {
    pw *p = (pw *)w;
    if (p->enc_count == 0) return STROBE_EINVAL; /* begin comes first */
    if (grow((void **)&p->tracks, &p->tracks_cap, (size_t)id + 1, sizeof *p->tracks))
        return STROBE_ENOMEM;
    ptrack *pt = &p->tracks[id];
    pt->enc = 0;
    strobe__pft *m = p->encs[0];
    int rc = use(p, 0);
    if (rc) return rc;
    uint64_t parent =
        t->kind == STROBE__WR_STREAM || t->kind == STROBE__WR_LANE ? p->tracks[t->parent].uuid : 0;
    switch (t->kind) {
    case STROBE__WR_PROCESS:
        pt->uuid = STROBE__PFT_KINETO_PROC_UUID(t->pid);
        rc = strobe__pft_process(m, pt->uuid, clamp32(t->pid), t->name, clamp32(t->sort_index));
        break;
    case STROBE__WR_DEVICE:
        pt->uuid = STROBE__PFT_KINETO_PROC_UUID(t->pid);
        rc = strobe__pft_track(m, pt->uuid, 0, t->name, clamp32(t->sort_index));
        break;
    case STROBE__WR_THREAD:
        if (t->tid == 0) {
            /* Kineto's "Spans" track: no thread, a track under the process that carries its
             * (pid, 0) in its uuid for the decoder. */
            pt->uuid = STROBE__PFT_KINETO_UUID(t->pid, 0);
            rc = strobe__pft_track(m, pt->uuid, STROBE__PFT_KINETO_PROC_UUID(t->pid), t->name,
                                   clamp32(t->sort_index));
            break;
        }
        pt->uuid = p->next_uuid++;
        rc = strobe__pft_thread(m, pt->uuid, clamp32(t->pid), clamp32(t->tid), t->name,
                                clamp32(t->sort_index));
        break;
    case STROBE__WR_STREAM:
        pt->uuid = STROBE__PFT_KINETO_UUID(t->pid, t->tid);
        rc = strobe__pft_track(m, pt->uuid, parent, t->name, clamp32(t->sort_index));
        break;
    default: /* a lane: a track under its thread's */
        pt->uuid = p->next_uuid++;
        rc = strobe__pft_track(m, pt->uuid, parent, t->name, clamp32(t->sort_index));
        break;
    }
    if (rc) return rc;
    if (t->kind != STROBE__WR_PROCESS && t->kind != STROBE__WR_DEVICE &&
        !(t->kind == STROBE__WR_THREAD && t->tid == 0)) {
        /* Each thread, stream and lane is a sequence of its own with its track as default: its
         * events leave the track out, and its times never go back, so every one is a small
         * delta. */
        int64_t k = new_sequence(p, pt->uuid);
        if (k < 0) return STROBE_ENOMEM;
        pt->enc = (uint32_t)k;
    }
    return flush(p, 0, 0);
}

/* e's name, NUL-terminated (the encoder takes C strings): copied where the byte after its length
 * is not a NUL. NULL when out of memory. */
static const char *cname(pw *p, const strobe__wr_event *e) {
    if (e->name == NULL) return "";
    if (e->name_len == (size_t)-1 || e->name[e->name_len] == '\0') return e->name;
    if (grow((void **)&p->name, &p->name_cap, e->name_len + 1, 1)) return NULL;
    memcpy(p->name, e->name, e->name_len);
    p->name[e->name_len] = '\0';
    return p->name;
}

/* The args as annotations: JSON text becomes the most specific type that reads back as it. */
static int pargs(pw *p, const strobe__wr_arg *a, size_t n) {
    if (n == 0) return 0; /* the encoder reads none */
    if (grow((void **)&p->args, &p->args_cap, n ? n : 1, sizeof *p->args)) return STROBE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        p->args[i] = a[i];
        if (a[i].type == STROBE__PFT_JSON && a[i].s && a[i].slen == (size_t)-1)
            strobe__pft_arg_json(&p->args[i], a[i].s);
    }
    return 0;
}

static int pf_slice_begin(strobe__writer *w, const strobe__wr_event *e) {
    pw *p = (pw *)w;
    if (e->flags & STROBE__WR_SESSION) {
        /* Written at end, with the trace's metadata as its args. */
        p->session = 1;
        p->session_track = e->track;
        p->session_start = e->ts;
        p->session_end = e->end;
        return 0;
    }
    const ptrack *t = &p->tracks[e->track];
    const char *name = cname(p, e);
    int rc = name ? pargs(p, e->args, e->nargs) : STROBE_ENOMEM;
    if (rc == 0) rc = use(p, t->enc);
    const uint64_t *out = e->flow_out, *in = e->flow_in;
    size_t nout = e->nflow_out, nin = e->nflow_in;
    if (rc == 0 && e->fb_ph != STROBE__FLOW_NONE) {
        /* A fwdbwd flow joins the slice's others, with an id no ac2g flow uses (those are
         * correlation ids, and ids made below 2^62). */
        const uint64_t *have = e->fb_ph == STROBE__FLOW_START ? out : in;
        size_t n = e->fb_ph == STROBE__FLOW_START ? nout : nin;
        rc = grow((void **)&p->fb_ids, &p->fb_cap, n + 1, sizeof *p->fb_ids);
        if (rc == 0) {
            if (n) memcpy(p->fb_ids, have, n * sizeof *have);
            p->fb_ids[n] = e->fb_id | UINT64_C(1) << 62;
            if (e->fb_ph == STROBE__FLOW_START) {
                out = p->fb_ids;
                nout = n + 1;
            } else {
                in = p->fb_ids;
                nin = n + 1;
            }
        }
    }
    if (rc == 0)
        rc = strobe__pft_begin(p->encs[t->enc], t->uuid, e->ts - p->base.base_ns, e->cat, name,
                               p->args, e->nargs, out, nout, in, nin);
    return rc ? rc : flush(p, t->enc, 0);
}

/* The args given at the end (streamed operator details) go on the end, whose annotations the
 * trace processor adds to the slice's. */
static int pf_slice_end(strobe__writer *w, const strobe__wr_event *e, const strobe__wr_arg *args,
                        size_t nargs) {
    pw *p = (pw *)w;
    if (e->flags & STROBE__WR_SESSION) return 0;
    const ptrack *t = &p->tracks[e->track];
    int rc = pargs(p, args, nargs);
    if (rc == 0) rc = use(p, t->enc);
    if (rc == 0)
        rc = nargs ? strobe__pft_end_args(p->encs[t->enc], t->uuid, e->end - p->base.base_ns,
                                          p->args, nargs)
                   : strobe__pft_end(p->encs[t->enc], t->uuid, e->end - p->base.base_ns);
    return rc ? rc : flush(p, t->enc, 0);
}

static int pf_instant(strobe__writer *w, const strobe__wr_event *e) {
    pw *p = (pw *)w;
    const ptrack *t = &p->tracks[e->track];
    const char *name = cname(p, e);
    int rc = name ? pargs(p, e->args, e->nargs) : STROBE_ENOMEM;
    if (rc == 0) rc = use(p, t->enc);
    if (rc == 0)
        rc = strobe__pft_instant(p->encs[t->enc], t->uuid, e->ts - p->base.base_ns, e->cat, name,
                                 p->args, e->nargs);
    return rc ? rc : flush(p, t->enc, 0);
}

/* A CPU sample as a PerfSample packet on its thread's sequence, its frames split out of the
 * "Call stack" arg (JSON string text: escapes are undone), a Python frame as "function (file)"
 * as in JSON's profiles (strobe__py_frame_by_function), so that both formats fold alike. */
static int pf_sample(strobe__writer *w, const strobe__wr_event *e) {
    pw *p = (pw *)w;
    const strobe__wr_arg *a = NULL;
    for (size_t i = 0; i < e->nargs && a == NULL; i++)
        if ((e->args[i].type == STROBE__PFT_JSON || e->args[i].type == STROBE__PFT_STRING) &&
            e->args[i].s && e->args[i].name &&
            strcmp(e->args[i].name, STROBE_KINETO_ARG_CALL_STACK) == 0)
            a = &e->args[i];
    size_t len = a == NULL ? 0 : a->slen == (size_t)-1 ? strlen(a->s) : a->slen;
    int is_json = a && a->type == STROBE__PFT_JSON;
    if (len == 0 || (is_json && a->s[0] != '"'))
        return pf_instant(w, e); /* no stack: a plain instant */
    if (grow((void **)&p->name, &p->name_cap, len + 1, 1)) return STROBE_ENOMEM;
    /* The frames into p->name (JSON text unescaped), then cut at each ';'. */
    char *out = p->name;
    size_t n = 0;
    if (!is_json) {
        memcpy(out, a->s, len);
        n = len;
    }
    const char *json = is_json ? a->s : "\"\"";
    const char *json_end = is_json ? a->s + len : json + 2;
    for (const char *c = json + 1; c < json_end && *c && *c != '"'; c++) {
        if (*c != '\\') {
            out[n++] = *c;
            continue;
        }
        c++;
        if (c >= json_end || *c == '\0') break;
        if (*c == 'u') {
            /* \uXXXX: a code point below 0x80 as itself, else '?' (frame names are ASCII but for
             * rare demangled or path bytes, which the JSON writer leaves unescaped). */
            unsigned v = 0;
            int k = 0;
            for (; k < 4 && c + 1 < json_end && c[1]; k++, c++)
                v = v * 16 + (unsigned)(c[1] <= '9' ? c[1] - '0' : (c[1] | 32) - 'a' + 10);
            out[n++] = v < 0x80 ? (char)v : '?';
            continue;
        }
        out[n++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c == 'r' ? '\r' : *c;
    }
    if (n == 0) return pf_instant(w, e);
    size_t nf = 1;
    for (size_t i = 0; i < n; i++)
        nf += out[i] == ';';
    const char **frames = malloc(nf * sizeof *frames);
    size_t *lens = malloc(nf * sizeof *lens);
    char *py = malloc(n + 1); /* the Python frames, one per function (json_profile.h) */
    int rc = frames && lens && py ? 0 : STROBE_ENOMEM;
    size_t k = 0, start = 0, py_n = 0;
    for (size_t i = 0; rc == 0 && i <= n; i++) {
        if (i < n && out[i] != ';') continue;
        uint32_t line;
        size_t pn = strobe__py_frame_by_function(out + start, i - start, py + py_n, &line);
        frames[k] = pn > 0 ? py + py_n : out + start;
        lens[k++] = pn > 0 ? pn : i - start;
        py_n += pn;
        start = i + 1;
    }
    const ptrack *t = &p->tracks[e->track];
    const strobe__wr_track *wt = &w->tracks[e->track];
    if (rc == 0) rc = use(p, t->enc);
    if (rc == 0)
        rc = strobe__pft_perf_sample(p->encs[t->enc], e->ts - p->base.base_ns, clamp32(wt->pid),
                                     clamp32(wt->tid), frames, lens, k);
    free(frames);
    free(lens);
    free(py);
    return rc ? rc : flush(p, t->enc, 0);
}

/* A sample on the counter track of e's track and name (one per track and name, declared on first
 * use, under the track), in the track's sequence. */
static int pf_counter(strobe__writer *w, const strobe__wr_event *e) {
    pw *p = (pw *)w;
    if (!isfinite(e->value)) return 1;
    const ptrack *t = &p->tracks[e->track];
    const char *name = cname(p, e);
    if (name == NULL) return STROBE_ENOMEM;
    size_t n = strlen(name);
    char *key = malloc(n + 16);
    if (key == NULL) return STROBE_ENOMEM;
    int kl = snprintf(key, n + 16, "%u:%s", (unsigned)e->track, name);
    size_t before = p->counters.count;
    int64_t id = strobe__strtab_intern(&p->counters, key, (size_t)kl);
    free(key);
    if (id < 0) return STROBE_ENOMEM;
    int rc = 0;
    if ((size_t)id >= before) {
        rc = use(p, 0);
        if (rc == 0) rc = strobe__pft_counter_track(p->encs[0], COUNTER_UUID(id), t->uuid, name);
    }
    if (rc == 0) rc = use(p, t->enc);
    if (rc == 0)
        rc = strobe__pft_counter(p->encs[t->enc], COUNTER_UUID(id), e->ts - p->base.base_ns,
                                 e->value);
    return rc ? rc : flush(p, t->enc, 0);
}

/* The session slice on "Spans", carrying the trace's metadata (trace_id, the "strobe" object,
 * user metadata, deviceProperties, baseTimeNanoseconds, traceName), then every sequence's
 * packets. */
static int pf_end(strobe__writer *w, const strobe__wr_info *in) {
    pw *p = (pw *)w;
    int rc = use(p, 0);
    if (rc == 0 && p->session) {
        char *strobe_obj = NULL;
        size_t slen = 0;
        if (in->stats) {
            strobe__sink ms;
            rc = strobe__sink_open_memory(&ms);
            if (rc) return rc;
            strobe__json_write_strobe_object(in->stats, &ms, in->skipped_counters);
            strobe_obj = strobe__sink_take_memory(&ms, &slen);
            if (strobe_obj == NULL) return STROBE_ENOMEM;
        }
        size_t n = 6 + in->meta_count;
        rc = grow((void **)&p->args, &p->args_cap, n, sizeof *p->args);
        if (rc == 0) {
            strobe__pft_arg *a = p->args;
            size_t k = 0;
            memset(a, 0, n * sizeof *a);
            a[k] = (strobe__pft_arg){.name = STROBE_KINETO_KEY_DEVICE_PROPERTIES,
                                     .type = STROBE__PFT_JSON};
            a[k].s = in->device_props ? in->device_props : "[]";
            a[k++].slen = (size_t)-1;
            a[k] =
                (strobe__pft_arg){.name = STROBE_KINETO_KEY_TRACE_ID, .type = STROBE__PFT_STRING};
            a[k].s = in->trace_id ? in->trace_id : "";
            a[k++].slen = (size_t)-1;
            if (strobe_obj || in->strobe_json) {
                a[k] = (strobe__pft_arg){.name = "strobe", .type = STROBE__PFT_JSON};
                a[k].s = strobe_obj ? strobe_obj : in->strobe_json;
                a[k++].slen = strobe_obj ? slen : (size_t)-1;
            }
            for (size_t i = 0; i < in->meta_count; i++) {
                const strobe__meta *m = &in->meta[i];
                if (m->key == NULL || m->json == NULL || strobe__meta_key_reserved(m->key) == 2)
                    continue;
                a[k].name = m->key;
                strobe__pft_arg_json(&a[k++], m->json);
            }
            a[k] =
                (strobe__pft_arg){.name = STROBE_KINETO_KEY_BASE_TIME_NS, .type = STROBE__PFT_INT};
            a[k++].i = p->base.base_ns;
            if (in->trace_name) {
                a[k] = (strobe__pft_arg){.name = STROBE_KINETO_KEY_TRACE_NAME,
                                         .type = STROBE__PFT_STRING};
                a[k].s = in->trace_name;
                a[k++].slen = (size_t)-1;
            }
            uint64_t uuid = p->tracks[p->session_track].uuid;
            rc = strobe__pft_begin(p->encs[0], uuid, p->session_start - p->base.base_ns, "Trace",
                                   "strobe session", a, k, NULL, 0, NULL, 0);
            if (rc == 0) rc = strobe__pft_end(p->encs[0], uuid, p->session_end - p->base.base_ns);
        }
        free(strobe_obj);
    }
    for (size_t k = 0; rc == 0 && k < p->enc_count; k++)
        rc = flush(p, (uint32_t)k, 1);
    return rc ? rc : w->out->err;
}

static void pf_release(strobe__writer *w) {
    pw *p = (pw *)w;
    for (size_t k = 0; k < p->enc_count; k++)
        strobe__pft_free(p->encs[k]);
    free(p->encs);
    free(p->enc_track);
    free(p->enc_clock);
    free(p->tracks);
    free(p->args);
    free(p->fb_ids);
    free(p->name);
    if (p->next_uuid) {
        strobe__strtab_release(&p->counters);
        strobe__pool_release(&p->pool);
    }
}

/* Streaming: the bytes held (see use()). */
static size_t pf_held(strobe__writer *w) {
    pw *p = (pw *)w;
    size_t len = 0;
    if (p->enc_count && p->encs[p->held]) (void)strobe__pft_data(p->encs[p->held], &len);
    return len;
}

static int pf_sync(strobe__writer *w) {
    pw *p = (pw *)w;
    return p->enc_count ? flush_one(p, p->encs[p->held], 1) : 0;
}

/* Drops the held packets. Their interned strings and clock would be missing from the file: the
 * sequence starts over in a new encoder (same id and default track), whose first packet clears
 * the incremental state. */
static void pf_discard(strobe__writer *w) {
    pw *p = (pw *)w;
    if (p->enc_count == 0 || pf_held(w) == 0) return;
    strobe__pft *e = strobe__pft_new(p->held + 1);
    if (e == NULL) {
        strobe__pft_reset_data(p->encs[p->held]);
        return;
    }
    if (p->enc_track[p->held]) strobe__pft_set_default_track(e, p->enc_track[p->held]);
    strobe__pft_free(p->encs[p->held]);
    p->encs[p->held] = e;
}

/* Drops what the sequences keep to make later packets smaller: every encoder's interning
 * tables (strobe__pft_clear_state), and where the encoders hold more than FLUSH_BYTES in all, the
 * encoders of the threads, streams and lanes themselves, after every sequence's packets are
 * written out (the descriptors first). A sequence written to again gets a new encoder (use(),
 * revive()) whose first packet starts the sequence over, its names interned again and its clock
 * carried on. Below the bound the packets stay where they are: a small trace's session slice,
 * written at end with the metadata, then still goes out first, where a reader finds the base
 * time before the events (the decoder's header; a late one is written after them). */
static int pf_flush_state(strobe__writer *w) {
    pw *p = (pw *)w;
    size_t held = 0;
    for (size_t k = 0; k < p->enc_count; k++) {
        if (p->encs[k] == NULL) continue;
        strobe__pft_clear_state(p->encs[k]);
        held += strobe__pft_memory(p->encs[k]);
    }
    if (held <= FLUSH_BYTES) return 0;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < p->enc_count; k++)
        rc = flush_one(p, p->encs[k], 1);
    if (rc) return rc;
    for (size_t k = 1; k < p->enc_count; k++) {
        if (p->encs[k] == NULL) continue;
        p->enc_clock[k] = strobe__pft_clock(p->encs[k]);
        strobe__pft_free(p->encs[k]);
        p->encs[k] = NULL;
    }
    return 0;
}

/* ".pftrace" and ".perfetto-trace", also with ".gz": the trace processor reads gzip'd traces. */
static int perfetto_accepts_path(const char *path) {
    return strobe__pftrace_path(path);
}

const strobe__writer_ops strobe__perfetto_writer = {
    .name = "perfetto",
    .accepts_path = perfetto_accepts_path,
    .open_begins = 1,
    .size = sizeof(pw),
    .begin = pf_begin,
    .track = pf_track,
    .slice_begin = pf_slice_begin,
    .slice_end = pf_slice_end,
    .instant = pf_instant,
    .sample = pf_sample,
    .counter = pf_counter,
    .end = pf_end,
    .release = pf_release,
    .held = pf_held,
    .sync = pf_sync,
    .discard = pf_discard,
    .flush_state = pf_flush_state,
};
