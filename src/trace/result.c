/* result.c: a result's accessors, post-processing edits and lifetime. Building a result from
 * records is session.c's job; writing it out is the writers'. */
#include "result_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kineto.h"
#include "util/bigmem.h"
#include "util/json_check.h"
#include "strobe/error.h"

strobe_result *strobe__result_alloc(void) {
    strobe_result *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->pid = (int64_t)getpid();
    r->trace_id = "";
    r->clock_source = "clock_monotonic";
    r->clock_ns_per_tick = 1.0;
    return r;
}

int strobe__result_add_warning(strobe_result *r, const char *msg) {
    const char **w = realloc((void *)r->warnings, (r->warning_count + 1) * sizeof *w);
    if (w == NULL) return STROBE_ENOMEM;
    r->warnings = w;
    const char *copy = strobe__pool_strdup(&r->pool, msg);
    if (copy == NULL) return STROBE_ENOMEM;
    w[r->warning_count++] = copy;
    return 0;
}

/* Every top-level key of a strobe trace that is not the user's: the one table of reserved keys. */
static const struct {
    const char *key;
    int kind; /* 2: the writers make it from the result's fields; 1: a metadata entry of strobe's */
} reserved_keys[] = {
    /* Kineto's header and footer (json_writer.c). */
    {STROBE_KINETO_KEY_SCHEMA_VERSION, 2},
    {STROBE_KINETO_KEY_DEVICE_PROPERTIES, 2},
    {STROBE_KINETO_KEY_TRACE_ID, 2},
    {STROBE_KINETO_KEY_DISPLAY_TIME_UNIT, 2},
    {STROBE_KINETO_KEY_BASE_TIME_NS, 2},
    {STROBE_KINETO_KEY_TRACE_EVENTS, 2},
    {STROBE_KINETO_KEY_TRACE_NAME, 2},
    /* strobe's own: stats and warnings (json_writer.c), perf event names (session.c, read by
     * `strobe summary`), the stream's counts (stream.c), the GPU clock fit (gpu.c). */
    {"strobe", 2},
    {"strobe_perf_events", 1},
    {"strobe_stream", 1},
    {"strobe_gpu_clock", 1},
    {"strobe_cpu_sampling", 1}, /* the CPU sampler's event, rate and counts (session.c) */
};

int strobe__meta_key_reserved(const char *key) {
    for (size_t i = 0; i < sizeof reserved_keys / sizeof reserved_keys[0]; i++)
        if (strcmp(key, reserved_keys[i].key) == 0) return reserved_keys[i].kind;
    return 0;
}

int strobe__result_set_meta(strobe_result *r, const char *key, const char *json) {
    const char *v = strobe__pool_strdup(&r->pool, json);
    if (v == NULL) return STROBE_ENOMEM;
    for (size_t i = 0; i < r->meta_count; i++) {
        if (strcmp(r->meta[i].key, key) == 0) {
            r->meta[i].json = v;
            return 0;
        }
    }
    strobe__meta *m = realloc(r->meta, (r->meta_count + 1) * sizeof *m);
    if (m == NULL) return STROBE_ENOMEM;
    r->meta = m;
    const char *k = strobe__pool_strdup(&r->pool, key);
    if (k == NULL) return STROBE_ENOMEM;
    m[r->meta_count].key = k;
    m[r->meta_count].json = v;
    r->meta_count++;
    return 0;
}

int64_t strobe_result_trace_start_ns(const strobe_result *r) {
    return r->trace_start_ns;
}
int64_t strobe_result_trace_end_ns(const strobe_result *r) {
    return r->trace_end_ns;
}
size_t strobe_result_event_count(const strobe_result *r) {
    return r->event_count;
}
const strobe_event *strobe_result_events(const strobe_result *r) {
    return r->events;
}
size_t strobe_result_thread_count(const strobe_result *r) {
    return r->thread_count;
}
const strobe_thread_info *strobe_result_threads(const strobe_result *r) {
    return r->threads;
}
const strobe_stats *strobe_result_stats(const strobe_result *r) {
    return &r->stats;
}
const char *strobe_result_trace_id(const strobe_result *r) {
    return r->trace_id;
}
int64_t strobe_result_pid(const strobe_result *r) {
    return r->pid;
}
size_t strobe_result_warning_count(const strobe_result *r) {
    return r->warning_count;
}

const char *strobe_result_warning(const strobe_result *r, size_t i) {
    return i < r->warning_count ? r->warnings[i] : NULL;
}

size_t strobe_result_metadata_count(const strobe_result *r) {
    return r->meta_count;
}

int strobe_result_metadata(const strobe_result *r, size_t i, const char **key,
                           const char **json_value) {
    if (i >= r->meta_count) return STROBE_ERANGE;
    if (key) *key = r->meta[i].key;
    if (json_value) *json_value = r->meta[i].json;
    return 0;
}

int strobe_event_set_arg(strobe_result *r, size_t index, const char *key, const char *json_value) {
    if (r == NULL || key == NULL || key[0] == '\0' || json_value == NULL) return STROBE_EINVAL;
    if (index >= r->event_count) return STROBE_ERANGE;
    if (!strobe__json_valid(json_value, strlen(json_value))) return STROBE_EJSON;
    /* Keys become JSON object keys: they must be valid as JSON strings once quoted. The writer
     * escapes them, so any bytes are fine. Args keep the order they were set in. */
    const char *k = strobe__pool_strdup(&r->pool, key);
    if (k == NULL) return STROBE_ENOMEM;
    return strobe__event_add_arg(r, &r->events[index], k, json_value, 1, 1);
}

int strobe__event_put_arg(strobe_result *r, size_t index, const char *key, const char *json,
                          int copy, int replace) {
    return strobe__event_add_arg(r, &r->events[index], key, json, copy, replace);
}

int strobe__event_add_arg(strobe_result *r, strobe_event *e, const char *key, const char *json,
                          int copy, int replace) {
    if (copy) {
        json = strobe__pool_strdup(&r->pool, json);
        if (json == NULL) return STROBE_ENOMEM;
    }
    strobe_arg *last = NULL;
    for (strobe_arg *a = (strobe_arg *)e->args; a; a = (strobe_arg *)a->next) {
        if (strcmp(a->key, key) == 0) {
            if (replace) a->json = json;
            return 0;
        }
        last = a;
    }
    strobe_arg *a = strobe__pool_alloc(&r->pool, sizeof *a);
    if (a == NULL) return STROBE_ENOMEM;
    a->key = key;
    a->json = json;
    a->next = NULL;
    if (last) {
        last->next = a;
    } else {
        e->args = a;
    }
    return 0;
}

const char *strobe_event_arg(const strobe_result *r, size_t index, const char *key) {
    if (r == NULL || key == NULL || index >= r->event_count) return NULL;
    for (const strobe_arg *a = r->events[index].args; a; a = a->next)
        if (a->key && strcmp(a->key, key) == 0) return a->json;
    return NULL;
}

int strobe_event_set_name(strobe_result *r, size_t index, const char *name) {
    if (r == NULL || name == NULL) return STROBE_EINVAL;
    if (index >= r->event_count) return STROBE_ERANGE;
    const char *copy = strobe__pool_strdup(&r->pool, name);
    if (copy == NULL) return STROBE_ENOMEM;
    r->events[index].name = copy;
    return 0;
}

/* The event array can be large (10 million events is a gigabyte): it is mapped, not malloc'ed,
 * so that freeing it returns the memory to the system at once. */
int strobe__result_alloc_events(strobe_result *r, size_t count) {
    return strobe__result_map_events(r, count, 1);
}

int strobe__result_map_events(strobe_result *r, size_t count, int populate) {
    size_t bytes = (count ? count : 1) * sizeof(strobe_event);
    void *p = strobe__big_map(bytes, 0);
    if (p == NULL) return STROBE_ENOMEM;
    if (populate) strobe__big_populate(p, bytes);
    r->events = p;
    r->events_map_bytes = bytes;
    r->event_count = count;
    return 0;
}

int strobe__result_set_torch_tid(strobe_result *r, size_t index, uint64_t torch_tid) {
    if (index >= r->torch_tid_count) {
        size_t n = index + 1 > 2 * r->torch_tid_count ? index + 1 : 2 * r->torch_tid_count;
        uint64_t *p = realloc(r->torch_tids, n * sizeof *p);
        if (p == NULL) return STROBE_ENOMEM;
        memset(p + r->torch_tid_count, 0, (n - r->torch_tid_count) * sizeof *p);
        r->torch_tids = p;
        r->torch_tid_count = n;
    }
    r->torch_tids[index] = torch_tid;
    return 0;
}

void strobe_result_free(strobe_result *r) {
    if (r == NULL) return;
    free(r->torch_tids);
    strobe__big_unmap(r->events, r->events_map_bytes);
    free(r->threads);
    free(r->meta);
    free((void *)r->warnings);
    strobe__pool_release(&r->pool);
    free(r);
}
