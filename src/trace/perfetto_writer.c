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
 * annotations: Perfetto shows them in the slice's "Arguments" panel when it is selected.
 *
 * Times are written as the JSON writer's ts: ns relative to baseTimeNanoseconds. The trace
 * processor then shows the same timestamps for both files, to the nanosecond. Unlike the JSON
 * writer, ends are written as recorded: integer nanoseconds need no 1 ns display margin
 * (display_ends in json_writer.c), so a range that ends exactly when its parent ends is 1 ns
 * longer here than in the JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "strobe/error.h"
#include "util/pftrace_enc.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "writer.h"

/* Packets are handed to the sink in batches of about this many bytes. */
#define FLUSH_BYTES (256 * 1024)

/* Track uuids: CPU threads get small numbers (index + 1), counter tracks a marker byte and an
 * index; process and device tracks STROBE__PFT_KINETO_PROC_UUID, streams and "Spans"
 * STROBE__PFT_KINETO_UUID. */
#define THREAD_UUID(i) ((uint64_t)(i) + 1)
#define COUNTER_UUID(i) ((UINT64_C(0x43) << 56) | (uint64_t)(i))

typedef struct pw {
    const strobe_result *r;
    strobe__sink *s;
    strobe__pft *enc;
    int64_t base;
    uint64_t *thread_track;  /* per thread index */
    strobe__strtab counters; /* "thread index:name" -> counter track index */
    strobe__pool pool;
    strobe__pft_arg *args;
    size_t args_cap;
    uint64_t *flows; /* a launch's outgoing flow ids */
    size_t flows_cap;
} pw;

static int flush_enc(pw *w, strobe__pft *enc, int force) {
    size_t len;
    const uint8_t *d = strobe__pft_data(enc, &len);
    if (len == 0 || (!force && len < FLUSH_BYTES)) return 0;
    int rc = strobe__sink_write(w->s, d, len);
    strobe__pft_reset_data(enc);
    return rc ? rc : w->s->err;
}

static int32_t clamp32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)v;
}

static int write_tracks(pw *w) {
    const strobe_result *r = w->r;
    char name[64];
    strobe__json_process_name(r, name, sizeof name);
    uint64_t proc = STROBE__PFT_KINETO_PROC_UUID(r->pid);
    int rc = strobe__pft_process(w->enc, proc, clamp32(r->pid), name, clamp32(r->pid));
    if (rc == 0)
        rc = strobe__pft_track(w->enc, STROBE__PFT_KINETO_UUID(r->pid, 0), proc, "Spans", 0);
    for (size_t i = 0; rc == 0 && i < r->thread_count; i++) {
        const strobe_thread_info *t = &r->threads[i];
        char fallback[40];
        const char *tname = t->name;
        if (t->device_type == STROBE_DEVICE_CPU) {
            if (tname == NULL || tname[0] == '\0') {
                snprintf(fallback, sizeof fallback, "thread %lld", (long long)t->tid);
                tname = fallback;
            }
            w->thread_track[i] = THREAD_UUID(i);
            rc = strobe__pft_thread(w->enc, THREAD_UUID(i), clamp32(r->pid), clamp32(t->tid), tname,
                                    clamp32(t->tid));
            continue;
        }
        /* A device's track comes with its first stream, as in the JSON writer. */
        uint64_t dev = STROBE__PFT_KINETO_PROC_UUID(t->device_index);
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = r->threads[k].device_type == t->device_type &&
                   r->threads[k].device_index == t->device_index;
        if (!seen) {
            snprintf(name, sizeof name, "GPU %d", (int)t->device_index);
            rc = strobe__pft_track(w->enc, dev, 0, name, 16777216 + t->device_index);
            if (rc) break;
        }
        if (tname == NULL || tname[0] == '\0') {
            snprintf(fallback, sizeof fallback, "stream %lld", (long long)t->tid);
            tname = fallback;
        }
        w->thread_track[i] = STROBE__PFT_KINETO_UUID(t->device_index, t->tid);
        rc = strobe__pft_track(w->enc, w->thread_track[i], dev, tname, clamp32(t->tid));
    }
    return rc;
}

static int grow_args(pw *w, size_t n) {
    if (n <= w->args_cap) return 0;
    size_t cap = w->args_cap ? w->args_cap * 2 : 16;
    while (cap < n)
        cap *= 2;
    strobe__pft_arg *a = realloc(w->args, cap * sizeof *a);
    if (a == NULL) return STROBE_ENOMEM;
    w->args = a;
    w->args_cap = cap;
    return 0;
}

/* The JSON writer's args of a range or instant, in its order. */
static int event_args(pw *w, const strobe_event *e, size_t index, size_t *count) {
    size_t n = 5;
    for (const strobe_arg *a = e->args; a; a = a->next)
        n++;
    if (grow_args(w, n)) return STROBE_ENOMEM;
    strobe__pft_arg *a = w->args;
    size_t k = 0;
    memset(a, 0, n * sizeof *a);
    if (e->correlation_id) {
        a[k].name = "External id";
        a[k].type = STROBE__PFT_UINT;
        a[k++].u = e->correlation_id;
    }
    if (e->user_correlation_id) {
        a[k].name = "User External id";
        a[k].type = STROBE__PFT_UINT;
        a[k++].u = e->user_correlation_id;
    }
    a[k].name = "Ev Idx";
    a[k].type = STROBE__PFT_UINT;
    a[k++].u = index;
    if (e->flags & STROBE_EVENT_UNFINISHED) {
        a[k].name = "strobe_unfinished";
        a[k].type = STROBE__PFT_INT;
        a[k++].i = 1;
    }
    if (e->flags & STROBE_EVENT_TRUNCATED) {
        a[k].name = "strobe_truncated";
        a[k].type = STROBE__PFT_INT;
        a[k++].i = 1;
    }
    for (const strobe_arg *x = e->args; x; x = x->next) {
        if (x->key == NULL || x->json == NULL) continue;
        a[k].name = x->key;
        strobe__pft_arg_json(&a[k++], x->json);
    }
    *count = k;
    return 0;
}

/* The counter track of `e` (one per thread and name), declared on first use. */
static int counter_track(pw *w, const strobe_event *e, uint64_t *uuid) {
    const char *name = e->name ? e->name : "";
    size_t n = strlen(name);
    char *key = malloc(n + 16);
    if (key == NULL) return STROBE_ENOMEM;
    int kl = snprintf(key, n + 16, "%u:%s", (unsigned)e->thread_index, name);
    size_t before = w->counters.count;
    int64_t id = strobe__strtab_intern(&w->counters, key, (size_t)kl);
    free(key);
    if (id < 0) return STROBE_ENOMEM;
    *uuid = COUNTER_UUID(id);
    if ((size_t)id < before) return 0;
    uint64_t parent = e->thread_index < w->r->thread_count ? w->thread_track[e->thread_index] : 0;
    return strobe__pft_counter_track(w->enc, *uuid, parent, name);
}

/* The session slice on "Spans", carrying the trace's metadata. Its end is written last. */
static int write_session_begin(pw *w, uint64_t skipped) {
    const strobe_result *r = w->r;
    strobe__sink ms;
    int rc = strobe__sink_open_memory(&ms);
    if (rc) return rc;
    strobe__json_write_strobe_object(r, &ms, skipped);
    size_t slen = 0;
    char *strobe_obj = strobe__sink_take_memory(&ms, &slen);
    if (strobe_obj == NULL) return STROBE_ENOMEM;

    size_t n = 6 + r->meta_count;
    rc = grow_args(w, n);
    if (rc == 0) {
        strobe__pft_arg *a = w->args;
        size_t k = 0;
        memset(a, 0, n * sizeof *a);
        a[k] = (strobe__pft_arg){.name = "deviceProperties", .type = STROBE__PFT_JSON};
        a[k].s = r->device_props ? r->device_props : "[]";
        a[k++].slen = (size_t)-1;
        a[k] = (strobe__pft_arg){.name = "trace_id", .type = STROBE__PFT_STRING};
        a[k].s = r->trace_id ? r->trace_id : "";
        a[k++].slen = (size_t)-1;
        a[k] = (strobe__pft_arg){.name = "strobe", .type = STROBE__PFT_JSON};
        a[k].s = strobe_obj;
        a[k++].slen = slen;
        for (size_t i = 0; i < r->meta_count; i++) {
            const strobe__meta *m = &r->meta[i];
            if (m->key == NULL || m->json == NULL || strobe__meta_key_reserved(m->key) == 2)
                continue;
            a[k].name = m->key;
            strobe__pft_arg_json(&a[k++], m->json);
        }
        a[k] = (strobe__pft_arg){.name = "baseTimeNanoseconds", .type = STROBE__PFT_INT};
        a[k++].i = w->base;
        if (r->trace_name) {
            a[k] = (strobe__pft_arg){.name = "traceName", .type = STROBE__PFT_STRING};
            a[k].s = r->trace_name;
            a[k++].slen = (size_t)-1;
        }
        rc = strobe__pft_begin(w->enc, STROBE__PFT_KINETO_UUID(r->pid, 0),
                               r->trace_start_ns - w->base, "Trace", "strobe session", a, k, NULL,
                               0, NULL, 0);
    }
    free(strobe_obj);
    return rc;
}

/* The flows event i starts or finishes (strobe__json_plan_flows): on a launch, the flow ids of all
 * its device events, the earliest's (its correlation id) first; on a device event, its own. */
static int event_flows(pw *w, const strobe__flow_plan *fp, size_t i, const uint64_t **out,
                       size_t *nout, const uint64_t **in, size_t *nin) {
    *out = *in = NULL;
    *nout = *nin = 0;
    if (fp->ph == NULL || fp->ph[i] == STROBE__FLOW_NONE) return 0;
    if (fp->ph[i] == STROBE__FLOW_FINISH) {
        *in = &fp->pf_id[i];
        *nin = 1;
        return 0;
    }
    size_t n = 0;
    for (uint32_t k = fp->next[i]; k != STROBE__FLOW_NO_NEXT; k = fp->next[k]) {
        if (n == w->flows_cap) {
            size_t cap = w->flows_cap ? 2 * w->flows_cap : 16;
            uint64_t *f = realloc(w->flows, cap * sizeof *f);
            if (f == NULL) return STROBE_ENOMEM;
            w->flows = f;
            w->flows_cap = cap;
        }
        w->flows[n++] = fp->pf_id[k];
    }
    *out = w->flows;
    *nout = n;
    return 0;
}

/* One thread's events, in the result's order (by start, parents first), as begin/end pairs: a
 * stack holds the open ranges, and each event first ends those that are not its ancestors.
 *
 * Each thread is its own packet sequence, with the thread's track as the sequence's default: its
 * events leave the track out, and its timestamps never go back (a thread's events are written in
 * time order), so every one is a small delta. The strings it uses are interned again per thread,
 * a small cost next to the events. */
static int write_thread(pw *w, size_t ti, const strobe__flow_plan *fp, uint32_t *stack) {
    const strobe_result *r = w->r;
    const strobe_thread_info *t = &r->threads[ti];
    uint64_t track = w->thread_track[ti];
    if (t->event_count == 0) return 0;
    strobe__pft *main_enc = w->enc;
    /* Sequence 1 holds the descriptors and the session slice; threads get 2, 3, ... */
    w->enc = strobe__pft_new((uint32_t)(ti + 2));
    if (w->enc == NULL) {
        w->enc = main_enc;
        return STROBE_ENOMEM;
    }
    strobe__pft_set_default_track(w->enc, track);
    size_t depth = 0;
    int rc = 0;
    for (size_t i = t->first_event; rc == 0 && i < t->first_event + t->event_count; i++) {
        const strobe_event *e = &r->events[i];
        if (e->kind == STROBE_EVENT_COUNTER) {
            if (!isfinite(e->value)) continue; /* skipped as in the JSON writer */
            uint64_t ct;
            rc = counter_track(w, e, &ct);
            if (rc == 0) rc = strobe__pft_counter(w->enc, ct, e->start_ns - w->base, e->value);
            continue;
        }
        while (rc == 0 && depth > 0 && stack[depth - 1] != e->parent &&
               r->events[stack[depth - 1]].end_ns <= e->start_ns)
            rc = strobe__pft_end(w->enc, track, r->events[stack[--depth]].end_ns - w->base);
        if (rc) break;
        const char *cat = e->category && e->category[0] ? e->category : "cpu_op";
        size_t nargs;
        rc = event_args(w, e, i, &nargs);
        if (rc) break;
        const uint64_t *out, *in;
        size_t nout, nin;
        rc = event_flows(w, fp, i, &out, &nout, &in, &nin);
        if (rc) break;
        if (e->kind == STROBE_EVENT_RANGE) {
            rc = strobe__pft_begin(w->enc, track, e->start_ns - w->base, cat, e->name, w->args,
                                   nargs, out, nout, in, nin);
            stack[depth++] = (uint32_t)i;
        } else {
            rc = strobe__pft_instant(w->enc, track, e->start_ns - w->base, cat, e->name, w->args,
                                     nargs);
        }
        if (rc == 0) rc = flush_enc(w, w->enc, 0);
    }
    while (rc == 0 && depth > 0)
        rc = strobe__pft_end(w->enc, track, r->events[stack[--depth]].end_ns - w->base);
    if (rc == 0) rc = flush_enc(w, w->enc, 1);
    strobe__pft_free(w->enc);
    w->enc = main_enc;
    return rc;
}

static int perfetto_write(const strobe_result *r, strobe__sink *s) {
    pw w = {.r = r, .s = s, .base = r->trace_start_ns - 1000};
    uint64_t skipped = 0;
    size_t max_events = 0;
    for (size_t i = 0; i < r->event_count; i++)
        skipped += r->events[i].kind == STROBE_EVENT_COUNTER && !isfinite(r->events[i].value);
    for (size_t i = 0; i < r->thread_count; i++)
        if (r->threads[i].event_count > max_events) max_events = r->threads[i].event_count;
    strobe__flow_plan fp = {0};
    w.enc = strobe__pft_new(1);
    w.thread_track = calloc(r->thread_count ? r->thread_count : 1, sizeof *w.thread_track);
    uint32_t *stack = malloc((max_events ? max_events : 1) * sizeof *stack);
    strobe__strtab_init(&w.counters, &w.pool);
    int rc = w.enc && w.thread_track && stack ? 0 : STROBE_ENOMEM;
    if (rc == 0) rc = strobe__json_plan_flows(r, &fp);
    if (rc == 0) rc = write_tracks(&w);
    if (rc == 0) rc = write_session_begin(&w, skipped);
    /* The descriptors come before the threads' events that use them. */
    if (rc == 0) rc = flush_enc(&w, w.enc, 1);
    for (size_t i = 0; rc == 0 && i < r->thread_count; i++)
        rc = write_thread(&w, i, &fp, stack);
    if (rc == 0) {
        int64_t end = r->trace_end_ns > r->trace_start_ns ? r->trace_end_ns : r->trace_start_ns;
        rc = strobe__pft_end(w.enc, STROBE__PFT_KINETO_UUID(r->pid, 0), end - w.base);
    }
    if (rc == 0) rc = flush_enc(&w, w.enc, 1);
    strobe__flow_plan_free(&fp);
    free(stack);
    free(w.flows);
    free(w.thread_track);
    free(w.args);
    strobe__strtab_release(&w.counters);
    strobe__pool_release(&w.pool);
    strobe__pft_free(w.enc);
    return rc ? rc : s->err;
}

/* ".pftrace" and ".perfetto-trace", also with ".gz": the trace processor reads gzip'd traces. */
static int perfetto_accepts_path(const char *path) {
    return strobe__pftrace_path(path);
}

const strobe__writer_ops strobe__perfetto_writer = {
    .name = "perfetto",
    .accepts_path = perfetto_accepts_path,
    .write = perfetto_write,
};
