/* model.c: loading a trace into md_model (see model.h).
 *
 * Contents: classification by ph/cat, the thread table, argument extraction, perf counter
 * values, the streaming load, and the per-thread sort and nesting pass. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/json_pull.h"
#include "strobe/error.h"
#include "reader/trace_reader.h"

static const char *const kind_names[MD_KIND_COUNT] = {
    "other",     "cpu_op",     "user_annotation", "python_function", "gpu_user_annotation",
    "kernel",    "gpu_memcpy", "gpu_memset",      "cuda_runtime",    "cuda_driver",
    "cuda_sync", "instant",    "memory",          "counter",         "flow_start",
    "flow_step", "flow_end",   "unknown_phase"};

const char *md_kind_name(int kind) {
    return kind >= 0 && kind < MD_KIND_COUNT ? kind_names[kind] : "?";
}

static int cat_is(const strobe_rd_str *cat, const char *a, const char *b) {
    return cat->s && (strcmp(cat->s, a) == 0 || (b && strcmp(cat->s, b) == 0));
}

/* The string id (pid) spelled s, exactly. */
static int id_is(const strobe_rd_id *id, const char *s) {
    return id->kind == STROBE_RD_ID_STRING && id->str.s && id->str.len == strlen(s) &&
           memcmp(id->str.s, s, id->str.len) == 0;
}

/* The kind of an X event. Besides CUDA's categories, Kineto writes those of the other devices:
 * XPU (xpu_runtime, xpu_driver), MTIA (mtia_runtime on the host, mtia_ccp_events on the
 * device), HPU (hpu_op, which torch takes for device work) and PrivateUse1 (privateuse1_runtime,
 * privateuse1_driver; its device work is written as kernel, gpu_memcpy ...). torch's legacy
 * profiler writes no "cat" at all: its operators are in the process "CPU functions" and its
 * kernels in "CUDA functions". */
static int classify_x(const strobe_rd_event *e) {
    const strobe_rd_str *c = &e->cat;
    if (c->s == NULL) {
        if (id_is(&e->pid, "CPU functions")) return MD_CPU_OP;
        if (id_is(&e->pid, "CUDA functions")) return MD_KERNEL;
        return MD_OTHER;
    }
    if (cat_is(c, "cpu_op", "Operator")) return MD_CPU_OP;
    if (cat_is(c, "user_annotation", NULL)) return MD_USER_ANNOTATION;
    if (cat_is(c, "python_function", NULL)) return MD_PYTHON;
    if (cat_is(c, "gpu_user_annotation", NULL)) return MD_GPU_USER_ANNOTATION;
    if (cat_is(c, "kernel", "Kernel") || cat_is(c, "mtia_ccp_events", "hpu_op")) return MD_KERNEL;
    if (cat_is(c, "gpu_memcpy", "Memcpy")) return MD_MEMCPY;
    if (cat_is(c, "gpu_memset", "Memset")) return MD_MEMSET;
    if (cat_is(c, "cuda_runtime", "Runtime") || cat_is(c, "xpu_runtime", "mtia_runtime") ||
        cat_is(c, "privateuse1_runtime", NULL))
        return MD_RUNTIME;
    if (cat_is(c, "cuda_driver", "xpu_driver") || cat_is(c, "privateuse1_driver", NULL))
        return MD_DRIVER;
    if (cat_is(c, "cuda_sync", NULL)) return MD_SYNC;
    return MD_OTHER;
}

/* The device family a category names (MD_DEV_CUDA for CUDA's and for the shared ones). */
static int device_of(const strobe_rd_str *c) {
    if (c->s == NULL) return MD_DEV_CUDA;
    if (strncmp(c->s, "xpu_", 4) == 0) return MD_DEV_XPU;
    if (strncmp(c->s, "mtia_", 5) == 0) return MD_DEV_MTIA;
    if (strcmp(c->s, "hpu_op") == 0) return MD_DEV_HPU;
    if (strncmp(c->s, "privateuse1_", 12) == 0) return MD_DEV_PRIVATEUSE1;
    return MD_DEV_CUDA;
}

const char *md_device_name(const md_model *m) {
    static const char *const names[] = {"CUDA", "XPU", "MTIA", "HPU", "PRIVATEUSEONE"};
    return m->device < sizeof names / sizeof names[0] ? names[m->device] : "CUDA";
}

static int classify(const strobe_rd_event *e) {
    char ph = e->ph.s && e->ph.len == 1 ? e->ph.s[0] : '?';
    switch (ph) {
    case 'X':
        return classify_x(e);
    case 'i':
    case 'I':
        return e->name.s && strcmp(e->name.s, "[memory]") == 0 ? MD_MEMORY : MD_INSTANT;
    case 'C':
        return MD_COUNTER;
    case 's':
        return MD_FLOW_START;
    case 't':
        return MD_FLOW_STEP;
    case 'f':
        return MD_FLOW_END;
    default:
        return MD_UNKNOWN_PHASE;
    }
}

static int64_t intern(md_model *m, const char *s, size_t len) {
    return strobe__strtab_intern(&m->strings, s ? s : "", s ? len : 0);
}

/* ---- threads and processes ---------------------------------------------------------------- */

/* A pid or tid as the model keeps it: *kind gets MD_ID_NUM and the number, or MD_ID_STR and the
 * string's id for a string that is not a decimal number. Absent or unusable ids (the event is
 * bad) are MD_ID_NONE, with the value -1. */
static int64_t id_key(md_model *m, const strobe_rd_id *id, uint8_t *kind, uint32_t *str_out,
                      int *err) {
    *str_out = 0;
    *kind = MD_ID_NUM;
    if (id->has_num) return id->num;
    if (id->kind == STROBE_RD_ID_STRING) {
        int64_t s = intern(m, id->str.s, id->str.len);
        if (s < 0) {
            *err = (int)s;
            return 0;
        }
        *str_out = (uint32_t)s;
        *kind = MD_ID_STR;
        return s;
    }
    *kind = MD_ID_NONE;
    return -1;
}

static uint64_t mix(int64_t a, int64_t b, unsigned kinds) {
    uint64_t x = ((uint64_t)a + kinds) * 0x9e3779b97f4a7c15ull ^ (uint64_t)b;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x + kinds * 0x632be59bd9b4e019ull;
}

static uint64_t thread_hash(const md_thread *t) {
    return mix(t->pid, t->tid, (unsigned)t->pid_kind << 2 | t->tid_kind);
}

static uint64_t proc_hash(const md_process *p) {
    return mix(p->pid, 0, p->pid_kind);
}

int md_rehash(uint32_t **slots, size_t *slot_cap, size_t n, uint64_t (*hash)(const void *, size_t),
              const void *arr) {
    size_t cap = *slot_cap ? *slot_cap * 2 : 64;
    uint32_t *s = malloc(cap * sizeof *s);
    if (s == NULL) return STROBE_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        s[i] = MD_NONE;
    for (size_t k = 0; k < n; k++) {
        size_t i = hash(arr, k) & (cap - 1);
        while (s[i] != MD_NONE)
            i = (i + 1) & (cap - 1);
        s[i] = (uint32_t)k;
    }
    free(*slots);
    *slots = s;
    *slot_cap = cap;
    return 0;
}

static uint64_t thread_hash_at(const void *arr, size_t k) {
    return thread_hash(&((const md_thread *)arr)[k]);
}

static uint64_t proc_hash_at(const void *arr, size_t k) {
    return proc_hash(&((const md_process *)arr)[k]);
}

/* The thread with t's ids, added (a copy of t) on first sight. @return its index, or a negative
 * error. */
static int64_t thread_of(md_model *m, const md_thread *key) {
    if ((m->thread_count + 1) * 2 > m->thread_slot_cap &&
        md_rehash(&m->thread_slots, &m->thread_slot_cap, m->thread_count, thread_hash_at,
                  m->threads))
        return STROBE_ENOMEM;
    size_t i = thread_hash(key) & (m->thread_slot_cap - 1);
    for (uint32_t t; (t = m->thread_slots[i]) != MD_NONE; i = (i + 1) & (m->thread_slot_cap - 1)) {
        const md_thread *x = &m->threads[t];
        if (x->pid == key->pid && x->tid == key->tid && x->pid_kind == key->pid_kind &&
            x->tid_kind == key->tid_kind)
            return t;
    }
    if (m->thread_count == m->thread_cap) {
        size_t cap = m->thread_cap ? m->thread_cap * 2 : 16;
        md_thread *th = realloc(m->threads, cap * sizeof *th);
        if (th == NULL) return STROBE_ENOMEM;
        m->threads = th;
        m->thread_cap = cap;
    }
    m->threads[m->thread_count] = *key;
    m->thread_slots[i] = (uint32_t)m->thread_count;
    return (int64_t)m->thread_count++;
}

static int set_process_name(md_model *m, int64_t pid, uint8_t kind, uint32_t name) {
    md_process key = {.pid = pid, .pid_kind = kind, .name = name};
    if ((m->proc_count + 1) * 2 > m->proc_slot_cap &&
        md_rehash(&m->proc_slots, &m->proc_slot_cap, m->proc_count, proc_hash_at, m->procs))
        return STROBE_ENOMEM;
    size_t i = proc_hash(&key) & (m->proc_slot_cap - 1);
    for (uint32_t p; (p = m->proc_slots[i]) != MD_NONE; i = (i + 1) & (m->proc_slot_cap - 1)) {
        if (m->procs[p].pid == pid && m->procs[p].pid_kind == kind) {
            m->procs[p].name = name;
            return 0;
        }
    }
    if (m->proc_count == m->proc_cap) {
        size_t cap = m->proc_cap ? m->proc_cap * 2 : 8;
        md_process *p = realloc(m->procs, cap * sizeof *p);
        if (p == NULL) return STROBE_ENOMEM;
        m->procs = p;
        m->proc_cap = cap;
    }
    m->procs[m->proc_count] = key;
    m->proc_slots[i] = (uint32_t)m->proc_count++;
    return 0;
}

/* ---- arguments ----------------------------------------------------------------------------- */

/* The args an event is read for, looked up in one pass over its args (strobe_rd_obj_get_keys):
 * once per key, it was the largest cost of loading a trace. */
enum {
    A_EXT,
    A_EXT2,
    A_CORR,
    A_STREAM,
    A_BYTES,
    A_DEVTYPE,
    A_FLOPS,
    A_DIMS,
    A_STACK,
    A_MODULE,
    A_N
};
static const char *const arg_keys[A_N] = {
    [A_EXT] = "External id",  [A_EXT2] = "external id",
    [A_CORR] = "correlation", [A_STREAM] = "stream",
    [A_BYTES] = "Bytes",      [A_DEVTYPE] = "Device Type",
    [A_FLOPS] = "flops",      [A_DIMS] = "Input Dims",
    [A_STACK] = "Call stack", [A_MODULE] = "Module Hierarchy"};

static int64_t arg_int(const strobe_rd_value *a, int key, int alt, int64_t dflt) {
    int64_t out;
    if (a[key].raw && strobe_rd_value_int(&a[key], &out) == 0) return out;
    if (alt >= 0 && a[alt].raw && strobe_rd_value_int(&a[alt], &out) == 0) return out;
    return dflt;
}

/* The "stream" arg as HTA reads it (int() of the value): a number, or a string of decimal digits;
 * -1 otherwise ("0x7f..." pointers in ROCm's runtime events). */
static int64_t arg_stream(const strobe_rd_value *v) {
    int64_t out = -1;
    if (!v->raw) return -1;
    if (v->type != STROBE_RD_T_STRING) return strobe_rd_value_int(v, &out) == 0 ? out : -1;
    char buf[24];
    size_t len = 0;
    if (strobe_rd_value_str(v, buf, sizeof buf, &len) != 0 || len == 0 || len > 18) return -1;
    out = 0;
    for (size_t k = 0; k < len; k++) {
        if (buf[k] < '0' || buf[k] > '9') return -1;
        out = out * 10 + (buf[k] - '0');
    }
    return out;
}

/* A string argument decoded, or a non-string value's raw JSON text, interned. 0 when absent. */
static int64_t arg_text(md_model *m, const strobe_rd_value *v, int decode) {
    if (!v->raw) return 0;
    if (decode && v->type == STROBE_RD_T_STRING) {
        size_t cap = v->len + 1, len = 0;
        char stack[256];
        char *buf = cap <= sizeof stack ? stack : malloc(cap);
        if (buf == NULL) return STROBE_ENOMEM;
        int rc = strobe_rd_value_str(v, buf, cap, &len);
        int64_t id = rc == 0 ? intern(m, buf, len) : 0;
        if (buf != stack) free(buf);
        return id;
    }
    return intern(m, v->raw, v->len);
}

/* ---- perf counters ------------------------------------------------------------------------- */

/* Adds a counter name; the scan for repeats is short, as there are at most MD_PERF_MAX names. A
 * name past the limit is counted, not interned, so that a long list costs no memory. */
static int add_perf_name(md_model *m, const char *name, size_t len) {
    if (m->perf_count == MD_PERF_MAX) {
        for (size_t k = 0; k < m->perf_count; k++) {
            const char *have = md_str(m, m->perf_names[k]);
            if (strlen(have) == len && memcmp(have, name, len) == 0) return 0;
        }
        m->perf_dropped++;
        return 0;
    }
    int64_t id = intern(m, name, len);
    if (id < 0) return (int)id;
    for (size_t k = 0; k < m->perf_count; k++)
        if (m->perf_names[k] == (uint32_t)id) return 0;
    uint32_t *names = realloc(m->perf_names, (m->perf_count + 1) * sizeof *names);
    if (names == NULL) return STROBE_ENOMEM;
    m->perf_names = names;
    m->perf_names[m->perf_count++] = (uint32_t)id;
    return 0;
}

/* Takes the names of "strobe_perf_events", a JSON array of strings. Whatever else it holds (and
 * a value that is not an array) is ignored, as are repeats and names that are empty or hold a
 * NUL, which no event arg could be looked up by. */
static int perf_names(md_model *m, const strobe_rd_value *v) {
    if (v->type != STROBE_RD_T_ARRAY) return 0;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, v->raw, v->len);
    int rc = 0, tok = strobe_jp_next(&jp); /* the '[' */
    while (rc == 0 && (tok = strobe_jp_next(&jp)) > 0 && tok != STROBE_JP_ARR_END) {
        if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN) {
            if (strobe_jp_skip_container(&jp) <= 0) break;
        } else if (tok == STROBE_JP_STRING && jp.str_len > 0 && strlen(jp.str) == jp.str_len) {
            rc = add_perf_name(m, jp.str, jp.str_len);
        }
    }
    strobe_jp_free(&jp);
    return rc;
}

/* Room for the perf values of events up to m->cap, zeroed. */
static int perf_reserve(md_model *m) {
    if (m->perf_count == 0 || m->perf_cap >= m->cap) return 0;
    int64_t *p = realloc(m->perf, m->cap * m->perf_count * sizeof *p);
    if (p == NULL) return STROBE_ENOMEM;
    memset(p + m->perf_cap * m->perf_count, 0, (m->cap - m->perf_cap) * m->perf_count * sizeof *p);
    m->perf = p;
    m->perf_cap = m->cap;
    return 0;
}

/* Checks an event's absolute time against the model's limits and widens the trace's span. */
static int place_time(md_model *m, md_event *x) {
    if (x->has_time && (x->ts >= MD_TIME_LIMIT || x->ts <= -MD_TIME_LIMIT)) {
        /* A start at or beyond +-2^62 ns (see MD_TIME_LIMIT) cannot be placed on the timeline: the
         * event is bad, as a ts beyond int64 ns is, and its time unknown. */
        x->has_time = 0;
        x->ts = 0;
        x->dur = 0;
        if (!x->bad) m->bad_events++;
        x->bad = 1;
        x->bad_bits |= STROBE_RD_BAD_TS;
        if (!x->bad_why) {
            static const char why[] = "ts beyond +-2^62 ns";
            int64_t w = intern(m, why, sizeof why - 1);
            if (w < 0) return STROBE_ENOMEM;
            x->bad_why = (uint32_t)w;
        }
    }
    int64_t end;
    if (x->has_time && (__builtin_add_overflow(x->ts, x->dur, &end) || end >= MD_TIME_LIMIT)) {
        /* An end beyond the limit: the duration is treated as out of range (`check` reports it
         * as end_out_of_range), so that no later difference or sum of times overflows. */
        x->dur = 0;
        x->dur_state = MD_DUR_INVALID;
        end = x->ts;
    }
    if (x->has_time) {
        if (x->ts < m->min_ts) m->min_ts = x->ts;
        if (end > m->max_ts) m->max_ts = end;
    }
    return 0;
}

/* Event i's perf values from its args; those absent or not integers stay 0. */
static void perf_values(md_model *m, size_t i, const strobe_rd_event *e) {
    if (m->perf_count == 0 || e->args == NULL || !e->ph.s || strcmp(e->ph.s, "X") != 0) return;
    for (size_t k = 0; k < m->perf_count; k++) {
        strobe_rd_value v;
        int64_t n;
        if (strobe_rd_event_arg(e, md_str(m, m->perf_names[k]), &v) == 1 &&
            strobe_rd_value_int(&v, &n) == 0)
            m->perf[i * m->perf_count + k] = n;
    }
}

/* ---- loading ------------------------------------------------------------------------------- */

static int add_event(md_model *m, const strobe_rd_event *e) {
    if (m->count == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        md_event *ev = realloc(m->events, cap * sizeof *ev);
        if (ev == NULL) return STROBE_ENOMEM;
        m->events = ev;
        m->cap = cap;
    }
    int err = 0;
    md_thread key = {0};
    key.pid = id_key(m, &e->pid, &key.pid_kind, &key.pid_str, &err);
    key.tid = id_key(m, &e->tid, &key.tid_kind, &key.tid_str, &err);
    if (err) return err;
    int64_t th = thread_of(m, &key);
    int64_t name = intern(m, e->name.s, e->name.len);
    int64_t cat = intern(m, e->cat.s, e->cat.len);
    if (th < 0 || name < 0 || cat < 0) return STROBE_ENOMEM;
    md_event *x = &m->events[m->count];
    memset(x, 0, sizeof *x);
    x->kind = (uint8_t)classify(e);
    /* The first category of another device than CUDA names the trace's device. */
    if (m->device == MD_DEV_CUDA && x->kind != MD_OTHER) m->device = (uint8_t)device_of(&e->cat);
    /* A phase longer than one letter is unknown; '?' keeps it from passing for its first letter
     * (an "XY" event must not nest like an X). */
    x->ph = e->ph.s && e->ph.len == 1 ? e->ph.s[0] : '?';
    x->bad = e->bad != 0;
    x->bad_bits = (uint16_t)e->bad;
    if (e->bad) {
        int64_t why = e->bad_reason ? intern(m, e->bad_reason, strlen(e->bad_reason)) : 0;
        if (why < 0) return STROBE_ENOMEM;
        x->bad_why = (uint32_t)why;
    }
    if (x->ph == 'X' && (e->bad & STROBE_RD_BAD_DUR)) {
        /* The reader says only that dur is unusable; `check` reports why, so tell apart a dur
         * that is absent, negative, or not a number in range. */
        strobe_rd_value v;
        if (e->has_dur && e->dur_ns < 0)
            x->dur_state = MD_DUR_NEGATIVE;
        else if (strobe_rd_obj_get(e->raw, e->raw_len, "dur", &v) != 1)
            x->dur_state = MD_DUR_MISSING;
        else
            x->dur_state = MD_DUR_INVALID;
    }
    x->has_time = e->has_ts && !(e->bad & STROBE_RD_BAD_TS);
    x->ts = !x->has_time ? 0 : e->has_abs ? e->abs_ts_ns : e->ts_ns;
    x->dur = x->ph == 'X' && e->has_dur && !(e->bad & STROBE_RD_BAD_DUR) ? e->dur_ns : 0;
    x->name = (uint32_t)name;
    x->cat = (uint32_t)cat;
    x->thread = (uint32_t)th;
    x->parent = MD_NONE;
    x->index = (uint32_t)e->index;
    strobe_rd_value own[A_N];
    const strobe_rd_value *a = e->arg_values;
    if (a == NULL) {
        strobe_rd_obj_get_keys(e->args, e->args_len, arg_keys, A_N, own);
        a = own;
    }
    x->ext_id = arg_int(a, A_EXT, A_EXT2, -1);
    x->corr = arg_int(a, A_CORR, -1, -1);
    x->stream = arg_stream(&a[A_STREAM]);
    if (x->kind == MD_FLOW_START || x->kind == MD_FLOW_STEP || x->kind == MD_FLOW_END) {
        /* Flows match by id; a string id that is not a decimal number ("0x1f") is kept as its
         * string, as thread ids are. */
        if (e->id.has_num) {
            x->flow_id = e->id.num;
            x->flow_kind = MD_ID_NUM;
        } else if (e->id.kind == STROBE_RD_ID_STRING) {
            int64_t sid = intern(m, e->id.str.s, e->id.str.len);
            if (sid < 0) return STROBE_ENOMEM;
            x->flow_id = sid;
            x->flow_kind = MD_ID_STR;
        }
    }
    x->mem_device = -1;
    if (x->kind == MD_MEMORY) {
        x->bytes = arg_int(a, A_BYTES, -1, 0);
        int64_t dt = arg_int(a, A_DEVTYPE, -1, -1);
        x->mem_device = (int8_t)(dt < -1 ? -1 : dt > 127 ? 127 : dt);
    }
    if (e->args) {
        if (a[A_FLOPS].raw) strobe_rd_value_double(&a[A_FLOPS], &x->flops);
        int64_t shapes = arg_text(m, &a[A_DIMS], 0);
        int64_t stack = arg_text(m, &a[A_STACK], 1);
        int64_t module = arg_text(m, &a[A_MODULE], 1);
        if (shapes < 0 || stack < 0 || module < 0) return STROBE_ENOMEM;
        x->shapes = (uint32_t)shapes;
        x->stack = (uint32_t)stack;
        x->module = (uint32_t)module;
    }
    if (perf_reserve(m)) return STROBE_ENOMEM;
    perf_values(m, m->count, e);
    /* Read before the trace said whether it has a base time (baseTimeNanoseconds after
     * traceEvents, as torch writes it): placed once the whole file is read (place_pending). */
    x->pending = x->has_time && !e->has_abs;
    if (!x->pending) {
        int rc = place_time(m, x);
        if (rc) return rc;
    }
    m->count++;
    return 0;
}

/* Adds the base time that came after the events (ts plus base out of int64: a bad ts, as the
 * reader marks it when the base comes first) and places the events read before it, so that the
 * model is what one pass with the base known from the start would give. */
static int place_pending(md_model *m) {
    for (size_t i = 0; i < m->count; i++) {
        md_event *x = &m->events[i];
        if (!x->pending) continue;
        x->pending = 0;
        if (m->has_base && __builtin_add_overflow(x->ts, m->base_time_ns, &x->ts)) {
            x->has_time = 0; /* as the reader leaves it: no time, the dur kept */
            x->ts = 0;
            if (!x->bad) m->bad_events++;
            x->bad = 1;
            x->bad_bits |= STROBE_RD_BAD_TS;
            if (!x->bad_why) {
                static const char why[] = "ts plus baseTimeNanoseconds is out of range";
                int64_t w = intern(m, why, sizeof why - 1);
                if (w < 0) return STROBE_ENOMEM;
                x->bad_why = (uint32_t)w;
            }
            continue;
        }
        int rc = place_time(m, x);
        if (rc) return rc;
    }
    return 0;
}

/* Thread and process names from "M" events; the events themselves are not kept. */
static int metadata_event(md_model *m, const strobe_rd_event *e) {
    m->metadata_events++;
    if (e->bad) m->bad_metadata_events++;
    if (!e->name.s) return 0;
    int thread_name = strcmp(e->name.s, "thread_name") == 0;
    int process_name = strcmp(e->name.s, "process_name") == 0;
    if (!thread_name && !process_name) return 0;
    static const char *const name_key[1] = {"name"};
    strobe_rd_value v;
    strobe_rd_obj_get_keys(e->args, e->args_len, name_key, 1, &v);
    int64_t name = arg_text(m, &v, 1);
    if (name <= 0) return name < 0 ? (int)name : 0;
    int err = 0;
    md_thread key = {0};
    key.pid = id_key(m, &e->pid, &key.pid_kind, &key.pid_str, &err);
    if (err) return err;
    if (process_name) return set_process_name(m, key.pid, key.pid_kind, (uint32_t)name);
    key.tid = id_key(m, &e->tid, &key.tid_kind, &key.tid_str, &err);
    if (err) return err;
    int64_t th = thread_of(m, &key);
    if (th < 0) return (int)th;
    m->threads[th].name = (uint32_t)name;
    return 0;
}

/* A thread's events are sorted by start, then longer first (a parent before the children it
 * starts with), then file order: a total order, so any sort gives the same result. The keys are
 * copied out of the events so that comparing them reads no scattered memory, and the sort is a
 * merge sort of runs (events are mostly in order already), its comparison inlined: qsort through
 * the events was a tenth of loading. */
typedef struct sort_key {
    int64_t ts, dur;
    uint32_t i, index;
} sort_key;

static inline int key_before(const sort_key *x, const sort_key *y) {
    if (x->ts != y->ts) return x->ts < y->ts;
    if (x->dur != y->dur) return x->dur > y->dur;
    return x->index < y->index;
}

/* Sorts k[0..n) using tmp[0..n). */
static void sort_keys(sort_key *k, sort_key *tmp, size_t n) {
    size_t sorted = 1;
    while (sorted < n && !key_before(&k[sorted], &k[sorted - 1]))
        sorted++;
    if (sorted == n) return;
    /* Runs of 16 by insertion, then merges of doubling width back and forth. */
    for (size_t lo = 0; lo < n; lo += 16) {
        size_t hi = lo + 16 < n ? lo + 16 : n;
        for (size_t a = lo + 1; a < hi; a++) {
            sort_key v = k[a];
            size_t b = a;
            while (b > lo && key_before(&v, &k[b - 1])) {
                k[b] = k[b - 1];
                b--;
            }
            k[b] = v;
        }
    }
    sort_key *src = k, *dst = tmp;
    for (size_t w = 16; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            if (mid == hi || !key_before(&src[mid], &src[mid - 1])) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
                continue;
            }
            while (a < mid && b < hi)
                dst[o++] = key_before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        sort_key *t = src;
        src = dst;
        dst = t;
    }
    if (src != k) memcpy(k, src, n * sizeof *k);
}

static int sort_thread(const md_model *m, md_thread *th, sort_key **buf, size_t *cap) {
    size_t n = th->count;
    if (n < 2) return 0;
    if (2 * n > *cap) {
        sort_key *b = realloc(*buf, 2 * n * sizeof *b);
        if (b == NULL) return STROBE_ENOMEM;
        *buf = b;
        *cap = 2 * n;
    }
    sort_key *k = *buf;
    for (size_t j = 0; j < n; j++) {
        const md_event *e = &m->events[th->order[j]];
        k[j] = (sort_key){e->ts, e->dur, th->order[j], e->index};
    }
    sort_keys(k, k + n, n);
    for (size_t j = 0; j < n; j++)
        th->order[j] = k[j].i;
    return 0;
}

/* Sorts each thread's events and sets each event's parent: the innermost X event that contains
 * it. An event that starts inside a range but ends after it (a partial overlap, which `check`
 * reports) is given that range as parent all the same. */
static int nest(md_model *m) {
    for (size_t t = 0; t < m->thread_count; t++)
        m->threads[t].count = 0;
    for (size_t i = 0; i < m->count; i++)
        m->threads[m->events[i].thread].count++;
    for (size_t t = 0; t < m->thread_count; t++) {
        m->threads[t].order =
            malloc((m->threads[t].count ? m->threads[t].count : 1) * sizeof(uint32_t));
        if (m->threads[t].order == NULL) return STROBE_ENOMEM;
        m->threads[t].count = 0;
    }
    for (size_t i = 0; i < m->count; i++) {
        md_thread *t = &m->threads[m->events[i].thread];
        t->order[t->count++] = (uint32_t)i;
    }
    uint32_t *stack = NULL;
    size_t cap = 0;
    sort_key *keys = NULL;
    size_t keys_cap = 0;
    for (size_t t = 0; t < m->thread_count; t++) {
        md_thread *th = &m->threads[t];
        if (sort_thread(m, th, &keys, &keys_cap)) {
            free(keys);
            return STROBE_ENOMEM;
        }
        size_t depth = 0;
        for (size_t k = 0; k < th->count; k++) {
            md_event *e = &m->events[th->order[k]];
            if (!e->has_time || e->kind == MD_COUNTER || e->kind == MD_FLOW_START ||
                e->kind == MD_FLOW_STEP || e->kind == MD_FLOW_END)
                continue;
            while (depth &&
                   e->ts >= m->events[stack[depth - 1]].ts + m->events[stack[depth - 1]].dur)
                depth--;
            e->parent = depth ? stack[depth - 1] : MD_NONE;
            if (e->ph == 'X') {
                if (depth == cap) {
                    cap = cap ? cap * 2 : 64;
                    uint32_t *s = realloc(stack, cap * sizeof *s);
                    if (s == NULL) {
                        free(stack);
                        free(keys);
                        return STROBE_ENOMEM;
                    }
                    stack = s;
                }
                stack[depth++] = th->order[k];
            }
        }
    }
    free(stack);
    free(keys);
    return 0;
}

static void load_options(strobe_rd_options *opt) {
    strobe_rd_options_init(opt);
    opt->arg_keys = arg_keys;
    opt->arg_key_count = A_N;
}

/* Opens the trace: the file m->path, or data[0..len) when data is not NULL. */
static int open_reader(md_model *m, strobe_rd **rd, const void *data, size_t len) {
    strobe_rd_options opt;
    load_options(&opt);
    return data ? strobe_rd_open_mem(rd, data, len, m->path, &opt)
                : strobe_rd_open(rd, m->path, &opt);
}

/* "strobe_perf_events" came after events: a second pass reads their perf values, from the start
 * of the same reader (standard input cannot be opened again). The events are the same in the same
 * order (every element but the M events is kept), so the k-th one read is m->events[k]. */
static int perf_second_pass(md_model *m, strobe_rd *rd) {
    int rc = strobe_rd_rewind(rd);
    strobe_rd_item it;
    size_t k = 0;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        rc = 0;
        if (it.kind != STROBE_RD_EVENT || (it.event->ph.s && strcmp(it.event->ph.s, "M") == 0))
            continue;
        if (k >= m->count) break;
        perf_values(m, k++, it.event);
    }
    return rc;
}

/* distributedInfo: its text, and its rank and world_size when they are integers. */
static int dist_info(md_model *m, const strobe_rd_value *v) {
    int64_t id = intern(m, v->raw, v->len);
    if (id < 0) return (int)id;
    m->dist_info = (uint32_t)id;
    strobe_rd_value f;
    if (strobe_rd_obj_get(v->raw, v->len, "rank", &f) != 1 || strobe_rd_value_int(&f, &m->rank))
        m->rank = -1;
    if (strobe_rd_obj_get(v->raw, v->len, "world_size", &f) != 1 ||
        strobe_rd_value_int(&f, &m->world_size))
        m->world_size = -1;
    return 0;
}

/* Reads everything from an opened reader (rd may be NULL when opening failed with rc). */
static int load_from(md_model *m, strobe_rd *rd, int rc) {
    strobe_rd_item it;
    int perf_seen = 0;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_META) {
            int64_t key = intern(m, it.meta->key.s, it.meta->key.len);
            if (key < 0) {
                rc = (int)key;
                break;
            }
            if (m->dist_info == 0 && strcmp(md_str(m, (uint32_t)key), "distributedInfo") == 0) {
                rc = dist_info(m, &it.meta->value);
                if (rc) break;
            }
            /* The first "strobe_perf_events" counts; strobe writes it before the events. */
            if (!perf_seen && strcmp(md_str(m, (uint32_t)key), "strobe_perf_events") == 0) {
                perf_seen = 1;
                rc = perf_names(m, &it.meta->value);
                if (rc == 0) rc = perf_reserve(m);
                if (rc) break;
                m->perf_late = m->count > 0 && m->perf_count > 0;
            }
            if (m->meta_count == m->meta_cap) {
                size_t cap = m->meta_cap ? m->meta_cap * 2 : 16;
                uint32_t *k = realloc(m->meta_keys, cap * sizeof *k);
                if (k == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                m->meta_keys = k;
                m->meta_cap = cap;
            }
            m->meta_keys[m->meta_count++] = (uint32_t)key;
            rc = 0;
            continue;
        }
        const strobe_rd_event *e = it.event;
        if (e->bad) m->bad_events++;
        rc = e->ph.s && strcmp(e->ph.s, "M") == 0 ? metadata_event(m, e) : add_event(m, e);
    }
    if (rc == 0) {
        const strobe_rd_info *info = strobe_rd_get_info(rd);
        m->has_base = info->has_base_time;
        m->base_time_ns = info->base_time_ns;
        m->has_schema = info->has_schema_version;
        m->schema_version = info->schema_version;
        m->unterminated = info->unterminated;
        m->perfetto = info->perfetto;
        m->pf_cut = info->pf_cut;
        m->pf_cut_offset = info->pf_cut_offset;
        if (info->device_properties) {
            int64_t dp = intern(m, info->device_properties, info->device_properties_len);
            if (dp < 0) rc = (int)dp;
            m->device_props = dp < 0 ? 0 : (uint32_t)dp;
        }
        if (rc == 0) rc = place_pending(m);
        if (rc == 0 && m->perf_late) rc = perf_second_pass(m, rd);
        if (rc == 0) rc = nest(m);
    } else if (rd && strobe_rd_errmsg(rd)[0]) {
        snprintf(m->err, sizeof m->err, "%s", strobe_rd_errmsg(rd));
    }
    if (rc != 0 && m->err[0] == '\0')
        snprintf(m->err, sizeof m->err, "%.960s: %s", m->path, strobe_strerror(rc));
    strobe_rd_close(rd);
    return rc;
}

static int init_model(md_model *m, const char *path) {
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    strobe__strtab_init(&m->strings, &m->pool);
    m->min_ts = INT64_MAX;
    m->max_ts = INT64_MIN;
    m->rank = -1;
    m->world_size = -1;
    if (intern(m, "", 0) != 0) {
        snprintf(m->err, sizeof m->err, "%s: out of memory", path);
        return STROBE_ENOMEM;
    }
    return 0;
}

int md_load(md_model *m, const char *path) {
    int rc = init_model(m, path);
    if (rc) return rc;
    strobe_rd *rd = NULL;
    rc = open_reader(m, &rd, NULL, 0);
    return load_from(m, rd, rc);
}

int md_load_mem(md_model *m, const void *data, size_t len, const char *name) {
    int rc = init_model(m, name ? name : "<memory>");
    if (rc) return rc;
    strobe_rd *rd = NULL;
    /* "" rather than NULL: open_reader() takes NULL for a file. */
    rc = open_reader(m, &rd, data ? data : "", data ? len : 0);
    return load_from(m, rd, rc);
}

void md_free(md_model *m) {
    for (size_t t = 0; t < m->thread_count; t++)
        free(m->threads[t].order);
    free(m->threads);
    free(m->events);
    free(m->procs);
    free(m->meta_keys);
    free(m->perf_names);
    free(m->perf);
    free(m->thread_slots);
    free(m->proc_slots);
    strobe__strtab_release(&m->strings);
    strobe__pool_release(&m->pool);
    memset(m, 0, sizeof *m);
}
