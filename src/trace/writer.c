/* writer.c: what drives any writer (writer.h): opening, the track table, and the walk that writes a
 * result through the event-level calls (saving, and the stream's device activity at stop).
 *
 * The walk goes through the events in the result's order (each thread's by start, parents first),
 * beginning each slice with its end known, and ends the slices of a thread innermost first before
 * the next event of that thread that is not inside them: a format with one record per slice
 * writes it at the begin, in the result's order; one with begin and end records gets them nested.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "kineto.h"
#include "strobe/error.h"
#include "util/u64map.h"
#include "writer.h"

strobe__writer *strobe__writer_open(const strobe__writer_ops *ops, strobe__sink *out, int flags) {
    strobe__writer *w = calloc(1, ops->size);
    if (w == NULL) return NULL;
    w->ops = ops;
    w->out = out;
    w->flags = flags;
    return w;
}

void strobe__writer_free(strobe__writer *w) {
    if (w == NULL) return;
    if (w->ops->release) w->ops->release(w);
    free(w->tracks);
    free(w);
}

int64_t strobe__writer_track(strobe__writer *w, const strobe__wr_track *t) {
    if (w->track_count == w->track_cap) {
        size_t cap = w->track_cap ? 2 * w->track_cap : 16;
        strobe__wr_track *a = realloc(w->tracks, cap * sizeof *a);
        if (a == NULL) return STROBE_ENOMEM;
        w->tracks = a;
        w->track_cap = cap;
    }
    uint32_t id = (uint32_t)w->track_count;
    w->tracks[id] = *t;
    w->tracks[id].name = NULL; /* not kept: the caller's */
    w->tracks[id].label = NULL;
    w->track_count++;
    int rc = w->ops->track(w, id, t);
    return rc ? rc : (int64_t)id;
}

int64_t strobe__writer_find_thread(const strobe__writer *w, int64_t pid, int64_t tid) {
    for (size_t i = 0; i < w->track_count; i++) {
        const strobe__wr_track *t = &w->tracks[i];
        if (t->kind == STROBE__WR_THREAD && t->pid == pid && t->tid == tid) return (int64_t)i;
    }
    return -1;
}

/* ---- The result walk ------------------------------------------------------------------------ */

/* The end each range is shown with (strobe__wr_event.shown_end).
 *
 * Viewers compute with doubles: Chrome DevTools and speedscope take ts relative to the first event
 * and add dur to it, and the sum lands an ulp either side of the same instant computed another
 * way (0.07 + 0.01 != 0.08). A range that ends in the very nanosecond its parent ends, or its next
 * sibling begins (the clock did not advance between the two reads), then looks mis-nested. Such a
 * range is shown ending 1 ns earlier (never before its start), which no rounding can undo; the
 * result itself keeps the times as read. Ranges come after their parents, so one pass does. */
static int64_t *display_ends(const strobe_result *r) {
    int64_t *end = malloc((r->event_count ? r->event_count : 1) * sizeof *end);
    if (end == NULL) return NULL;
    for (size_t i = 0; i < r->event_count; i++) {
        const strobe_event *e = &r->events[i];
        int64_t d = e->end_ns;
        if (e->kind == STROBE_EVENT_RANGE) {
            if (e->next_sibling != STROBE_NO_EVENT && e->next_sibling < r->event_count) {
                const strobe_event *nx = &r->events[e->next_sibling];
                if (nx->kind == STROBE_EVENT_RANGE && d >= nx->start_ns) d = nx->start_ns - 1;
            }
            if (e->parent != STROBE_NO_EVENT && e->parent < i && d >= end[e->parent])
                d = end[e->parent] - 1;
            if (d < e->start_ns) d = e->start_ns;
        }
        end[i] = d;
    }
    return end;
}

/* A track's open slices (result event indexes), innermost last. */
typedef struct open_stack {
    uint32_t *v;
    size_t n, cap;
} open_stack;

typedef struct walk {
    strobe__writer *w;
    const strobe_result *r;
    strobe__u64map tracks; /* track_key() -> track id + 1 */
    open_stack *open;      /* per track id */
    size_t open_cap;
    uint64_t last_key;
    int64_t last_track;
    strobe__wr_arg *args;
    size_t args_cap;
    uint64_t *flows;
    size_t flows_cap;
} walk;

static int grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < n)
        c *= 2;
    void *a = realloc(*p, c * size);
    if (a == NULL) return STROBE_ENOMEM;
    memset((char *)a + *cap * size, 0, (c - *cap) * size);
    *p = a;
    *cap = c;
    return 0;
}

/* Events go on the track of their (pid, tid) as Kineto writes them: the process's pid and the
 * thread's tid, or the device's index and the stream. A device's own track has the tid bits all
 * set. */
#define DEVICE_TRACK_TID UINT64_C(0xFFFFFFFF)
static uint64_t track_key(int device, int64_t pid, uint64_t tid) {
    return ((uint64_t)(device != 0) << 62) | (((uint64_t)pid & 0x3FFFFFFF) << 32) |
           (tid & 0xFFFFFFFF);
}

/* Declares a track and notes it under `key`. @return its id or a negative error. */
static int64_t declare(walk *k, uint64_t key, const strobe__wr_track *t) {
    int64_t id = strobe__writer_track(k->w, t);
    if (id < 0) return id;
    uint64_t *v = strobe__u64map_put(&k->tracks, key, NULL);
    if (v == NULL) return STROBE_ENOMEM;
    *v = (uint64_t)id + 1;
    return id;
}

static int64_t declare_device(walk *k, int64_t index) {
    uint64_t key = track_key(1, index, DEVICE_TRACK_TID);
    uint64_t *v = strobe__u64map_get(&k->tracks, key);
    if (v) return (int64_t)*v - 1;
    char name[64];
    snprintf(name, sizeof name, STROBE_KINETO_DEVICE_PROCESS_FMT, (int)index);
    strobe__wr_track d = {.kind = STROBE__WR_DEVICE,
                          .pid = index,
                          .name = name,
                          .label = name,
                          .sort_index = STROBE_KINETO_DEVICE_SORT_INDEX_BASE + index};
    return declare(k, key, &d);
}

/* A CPU thread's track: `name` (NULL or empty: "thread <tid>"); in a trace whose threads the
 * caller declared, theirs. */
static int64_t declare_thread(walk *k, int64_t tid, const char *name) {
    uint64_t key = track_key(0, k->r->pid, (uint64_t)tid);
    int64_t id = strobe__writer_find_thread(k->w, k->r->pid, tid);
    if (id >= 0) {
        uint64_t *v = strobe__u64map_put(&k->tracks, key, NULL);
        if (v == NULL) return STROBE_ENOMEM;
        *v = (uint64_t)id + 1;
        return id;
    }
    char fallback[40];
    if (name == NULL || name[0] == '\0') {
        snprintf(fallback, sizeof fallback, STROBE_KINETO_THREAD_FMT, (long long)tid);
        name = fallback;
    }
    strobe__wr_track th = {
        .kind = STROBE__WR_THREAD, .pid = k->r->pid, .tid = tid, .name = name, .sort_index = tid};
    return declare(k, key, &th);
}

static int64_t declare_stream(walk *k, int64_t index, int64_t stream, const char *name) {
    int64_t dev = declare_device(k, index);
    if (dev < 0) return dev;
    char fallback[40];
    if (name == NULL || name[0] == '\0') {
        snprintf(fallback, sizeof fallback, STROBE_KINETO_STREAM_THREAD_FMT, (long long)stream);
        name = fallback;
    }
    strobe__wr_track s = {.kind = STROBE__WR_STREAM,
                          .pid = index,
                          .tid = stream,
                          .name = name,
                          .sort_index = stream,
                          .parent = (uint32_t)dev};
    return declare(k, track_key(1, index, (uint64_t)stream), &s);
}

/* The track of event e, declared on first use where the result's threads did not list it. */
static int64_t event_track(walk *k, const strobe_event *e) {
    int device = e->device_type != STROBE_DEVICE_CPU;
    uint64_t key = track_key(device, device ? e->device_index : k->r->pid, (uint64_t)e->tid);
    if (key == k->last_key && k->last_track >= 0) return k->last_track;
    uint64_t *v = strobe__u64map_get(&k->tracks, key);
    int64_t id;
    if (v) {
        id = (int64_t)*v - 1;
    } else {
        const char *name = NULL;
        for (size_t i = 0; i < k->r->thread_count && name == NULL; i++) {
            const strobe_thread_info *t = &k->r->threads[i];
            if (t->tid == e->tid && (t->device_type != STROBE_DEVICE_CPU) == device &&
                (!device || t->device_index == e->device_index))
                name = t->name ? t->name : "";
        }
        id = device ? declare_stream(k, e->device_index, e->tid, name)
                    : declare_thread(k, e->tid, name);
    }
    if (id >= 0 && grow((void **)&k->open, &k->open_cap, (size_t)id + 1, sizeof *k->open))
        id = STROBE_ENOMEM;
    k->last_key = key;
    k->last_track = id;
    return id;
}

/* Kineto's args of a range or instant, in the JSON writer's order: "External id", "User External
 * id", "Ev Idx", the strobe flags, then the event's own (JSON text). */
static int event_args(walk *k, const strobe_event *e, size_t index, size_t *count) {
    size_t n = 5;
    for (const strobe_arg *a = e->args; a; a = a->next)
        n++;
    if (grow((void **)&k->args, &k->args_cap, n, sizeof *k->args)) return STROBE_ENOMEM;
    strobe__wr_arg *a = k->args;
    size_t m = 0;
    if (e->correlation_id)
        a[m++] = (strobe__wr_arg){.name = STROBE_KINETO_ARG_EXTERNAL_ID,
                                  .type = STROBE__PFT_UINT,
                                  .u = e->correlation_id};
    if (e->user_correlation_id)
        a[m++] = (strobe__wr_arg){
            .name = "User External id", .type = STROBE__PFT_UINT, .u = e->user_correlation_id};
    a[m++] =
        (strobe__wr_arg){.name = STROBE_KINETO_ARG_EV_IDX, .type = STROBE__PFT_UINT, .u = index};
    if (e->flags & STROBE_EVENT_UNFINISHED)
        a[m++] = (strobe__wr_arg){.name = "strobe_unfinished", .type = STROBE__PFT_INT, .i = 1};
    if (e->flags & STROBE_EVENT_TRUNCATED)
        a[m++] = (strobe__wr_arg){.name = "strobe_truncated", .type = STROBE__PFT_INT, .i = 1};
    for (const strobe_arg *x = e->args; x; x = x->next) {
        if (x->key == NULL || x->json == NULL) continue;
        a[m++] = (strobe__wr_arg){
            .name = x->key, .type = STROBE__PFT_JSON, .s = x->json, .slen = (size_t)-1};
    }
    *count = m;
    return 0;
}

/* The flows event i starts or finishes (strobe__json_plan_flows): Kineto's (one id, a phase),
 * and Perfetto's: on a launch, the flow ids of all its device events, the earliest's (its
 * correlation id) first; on a device event, its own. */
static int event_flows(walk *k, const strobe__flow_plan *fp, size_t i, strobe__wr_event *ev) {
    if (fp->ph == NULL || fp->ph[i] == STROBE__FLOW_NONE) return 0;
    ev->flow_ph = fp->ph[i];
    ev->flow_id = fp->id[i];
    if (fp->ph[i] == STROBE__FLOW_FINISH) {
        ev->flow_in = &fp->pf_id[i];
        ev->nflow_in = 1;
        return 0;
    }
    size_t n = 0;
    for (uint32_t x = fp->next[i]; x != STROBE__FLOW_NO_NEXT; x = fp->next[x]) {
        if (grow((void **)&k->flows, &k->flows_cap, n + 1, sizeof *k->flows)) return STROBE_ENOMEM;
        k->flows[n++] = fp->pf_id[x];
    }
    ev->flow_out = k->flows;
    ev->nflow_out = n;
    return 0;
}

/* Declares the result's tracks: with `whole`, the process, its threads and the session's track
 * ("Spans", with the session's span); then the devices (processes "GPU N", sorted after the CPU
 * process, whose sort index is its pid, below 2^22, as Kineto does), each with its streams
 * (threads "stream S", sorted by stream). */
static int put_tracks(walk *k, int whole) {
    const strobe_result *r = k->r;
    strobe__writer *w = k->w;
    int64_t id;
    if (whole) {
        char name[64];
        strobe__json_process_name(r, name, sizeof name);
        strobe__wr_track p = {.kind = STROBE__WR_PROCESS,
                              .pid = r->pid,
                              .name = name,
                              .label = STROBE_KINETO_CPU_PROCESS_LABEL,
                              .sort_index = r->pid};
        id = strobe__writer_track(w, &p);
        if (id < 0) return (int)id;
        for (size_t i = 0; i < r->thread_count; i++) {
            const strobe_thread_info *t = &r->threads[i];
            if (t->device_type != STROBE_DEVICE_CPU) continue;
            id = declare_thread(k, t->tid, t->name);
            if (id < 0) return (int)id;
        }
        /* The whole session as one span on its own track (tid 0, named "Spans"), as Kineto
         * writes its "PyTorch Profiler (N)" span: viewers show the true extent of the profile,
         * and a session that recorded nothing still has a well-defined time range. */
        strobe__wr_track sp = {
            .kind = STROBE__WR_THREAD, .pid = r->pid, .tid = 0, .name = "Spans", .sort_index = 0};
        id = strobe__writer_track(w, &sp);
        if (id < 0) return (int)id;
        strobe__wr_event ev = {.track = (uint32_t)id,
                               .flags = STROBE__WR_COMPLETE | STROBE__WR_SESSION,
                               .cat = "Trace",
                               .name = "strobe session",
                               .name_len = (size_t)-1,
                               .ts = r->trace_start_ns,
                               .end = r->trace_end_ns > r->trace_start_ns ? r->trace_end_ns
                                                                          : r->trace_start_ns};
        int rc = w->ops->slice_begin(w, &ev);
        if (rc == 0) rc = w->ops->slice_end(w, &ev, NULL, 0);
        if (rc) return rc;
    }
    for (size_t i = 0; i < r->thread_count; i++) {
        const strobe_thread_info *t = &r->threads[i];
        if (t->device_type == STROBE_DEVICE_CPU) continue;
        if (strobe__u64map_get(&k->tracks, track_key(1, t->device_index, DEVICE_TRACK_TID)))
            continue;
        for (size_t x = i; x < r->thread_count; x++) {
            const strobe_thread_info *u = &r->threads[x];
            if (u->device_type != t->device_type || u->device_index != t->device_index) continue;
            id = declare_stream(k, u->device_index, u->tid, u->name);
            if (id < 0) return (int)id;
        }
    }
    return 0;
}

/* The event of result event i, for slice_end (range): its begin's. */
static void end_of(const strobe_result *r, uint32_t i, int64_t track, strobe__wr_event *ev) {
    const strobe_event *e = &r->events[i];
    memset(ev, 0, sizeof *ev);
    ev->track = (uint32_t)track;
    ev->flags = STROBE__WR_COMPLETE;
    ev->cat = e->category && e->category[0] ? e->category : STROBE_KINETO_CAT_CPU_OP;
    ev->name = e->name ? e->name : "";
    ev->name_len = (size_t)-1;
    ev->ts = e->start_ns;
    ev->end = e->end_ns;
}

/* Ends the open slices of track `t` that event i (NULL: every one) is not inside, innermost
 * first. */
static int end_open(walk *k, int64_t t, const strobe_event *e) {
    open_stack *o = &k->open[t];
    const strobe_result *r = k->r;
    int rc = 0;
    while (rc == 0 && o->n > 0 &&
           (e == NULL ||
            (o->v[o->n - 1] != e->parent && r->events[o->v[o->n - 1]].end_ns <= e->start_ns))) {
        strobe__wr_event ev;
        end_of(r, o->v[--o->n], t, &ev);
        rc = k->w->ops->slice_end(k->w, &ev, NULL, 0);
    }
    return rc;
}

static int put_events(walk *k, uint64_t *written) {
    const strobe_result *r = k->r;
    strobe__writer *w = k->w;
    int64_t *shown = display_ends(r);
    strobe__flow_plan fp = {0};
    strobe__fwdbwd_plan fb = {0};
    size_t next_fb = 0; /* the next mark of fb (by event) */
    int rc = shown ? 0 : STROBE_ENOMEM;
    if (rc == 0) rc = strobe__json_plan_flows(r, &fp);
    if (rc == 0) rc = strobe__fwdbwd_plan_make(r, &fb);
    strobe__wr_event ev;
    for (size_t i = 0; rc == 0 && i < r->event_count; i++) {
        const strobe_event *e = &r->events[i];
        int64_t track = event_track(k, e);
        if (track < 0) {
            rc = (int)track;
            break;
        }
        if (e->kind == STROBE_EVENT_COUNTER) {
            memset(&ev, 0, sizeof ev);
            ev.track = (uint32_t)track;
            ev.cat = e->category && e->category[0] ? e->category : STROBE_KINETO_CAT_CPU_OP;
            ev.name = e->name ? e->name : "";
            ev.name_len = (size_t)-1;
            ev.ts = e->start_ns;
            ev.value = e->value;
            rc = w->ops->counter(w, &ev);
            if (rc == 0) (*written)++;
            if (rc == 1) rc = 0;
            continue;
        }
        rc = end_open(k, track, e);
        if (rc) break;
        size_t nargs;
        end_of(r, (uint32_t)i, track, &ev);
        rc = event_args(k, e, i, &nargs);
        if (rc == 0) rc = event_flows(k, &fp, i, &ev);
        if (rc) break;
        while (next_fb < fb.n && fb.marks[next_fb].event < i)
            next_fb++;
        if (next_fb < fb.n && fb.marks[next_fb].event == i) {
            ev.fb_ph = (int)fb.marks[next_fb].ph;
            ev.fb_id = fb.marks[next_fb].id;
        }
        ev.args = k->args;
        ev.nargs = nargs;
        if (e->kind == STROBE_EVENT_RANGE) {
            open_stack *o = &k->open[track];
            ev.shown_end = shown[i];
            rc = grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v);
            if (rc == 0) rc = w->ops->slice_begin(w, &ev);
            if (rc == 0) o->v[o->n++] = (uint32_t)i;
        } else if (w->ops->sample && e->category &&
                   strcmp(e->category, STROBE_KINETO_CAT_CPU_SAMPLE) == 0) {
            ev.flags = 0;
            rc = w->ops->sample(w, &ev);
        } else {
            ev.flags = 0;
            rc = w->ops->instant(w, &ev);
        }
        if (rc == 0) (*written)++;
    }
    for (size_t t = 0; rc == 0 && t < k->open_cap; t++)
        rc = end_open(k, (int64_t)t, NULL);
    strobe__flow_plan_free(&fp);
    free(fb.marks);
    free(shown);
    return rc;
}

int strobe__writer_put_result(strobe__writer *w, const strobe_result *r, int what,
                              uint64_t *events) {
    uint64_t written = 0;
    walk k = {.w = w, .r = r, .last_track = -1};
    int whole = what == STROBE__PUT_WHOLE;
    /* JSON has no NaN or infinity, and a made-up value would mislead: such counter samples are
     * left out (by every format) and counted in the header, which comes first, hence this pass. */
    uint64_t skipped = 0;
    for (size_t i = 0; i < r->event_count; i++)
        skipped += r->events[i].kind == STROBE_EVENT_COUNTER && !isfinite(r->events[i].value);
    strobe__wr_info info = {
        .base_ns = r->trace_start_ns - 1000,
        .trace_id = r->trace_id ? r->trace_id : "",
        .device_props = r->device_props,
        .stats = r,
        .skipped_counters = skipped,
        .meta = r->meta,
        .meta_count = r->meta_count,
        .trace_name = r->trace_name,
    };
    int rc = 0;
    if (whole) rc = w->ops->begin(w, &info);
    if (rc == 0) rc = put_tracks(&k, whole);
    if (rc == 0) rc = put_events(&k, &written);
    if (rc == 0 && whole) rc = w->ops->end(w, &info);
    for (size_t t = 0; t < k.open_cap; t++)
        free(k.open[t].v);
    free(k.open);
    strobe__u64map_free(&k.tracks);
    free(k.args);
    free(k.flows);
    if (events) *events = written;
    return rc ? rc : w->out->err;
}
