/* model.c: loading a trace into md_model (see model.h).
 *
 * Contents: classification by ph/cat, the thread table, argument extraction, perf counter
 * values, the streaming load, and the per-thread sort and nesting pass. */
#include "model.h"

#include <math.h>
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
    A_DEVICE,
    A_BPS,
    A_OCC,
    A_REGS,
    A_SMEM,
    A_GRID,
    A_BLOCK,
    A_DEVID,
    A_TOTAL_ALLOC,
    A_COLL,
    A_PG_NAME,
    A_PG,
    A_PG_ID,
    A_PG_RANKS,
    A_SEQ,
    A_N
};
static const char *const arg_keys[A_N] = {[A_EXT] = "External id",
                                          [A_EXT2] = "external id",
                                          [A_CORR] = "correlation",
                                          [A_STREAM] = "stream",
                                          [A_BYTES] = "Bytes",
                                          [A_DEVTYPE] = "Device Type",
                                          [A_FLOPS] = "flops",
                                          [A_DIMS] = "Input Dims",
                                          [A_STACK] = "Call stack",
                                          [A_MODULE] = "Module Hierarchy",
                                          [A_DEVICE] = "device",
                                          [A_BPS] = "blocks per SM",
                                          [A_OCC] = "est. achieved occupancy %",
                                          [A_REGS] = "registers per thread",
                                          [A_SMEM] = "shared memory",
                                          [A_GRID] = "grid",
                                          [A_BLOCK] = "block",
                                          [A_DEVID] = "Device Id",
                                          [A_TOTAL_ALLOC] = "Total Allocated",
                                          [A_COLL] = "Collective name",
                                          [A_PG_NAME] = "Process Group Name",
                                          [A_PG] = "pg",
                                          [A_PG_ID] = "Process Group ID",
                                          [A_PG_RANKS] = "Process Group Ranks",
                                          [A_SEQ] = "Seq"};

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

/* ---- packed storage ------------------------------------------------------------------------ */

/* Grows *arr (of elements of `size` bytes) to `cap` elements. Large blocks are mmapped by the
 * allocator, which moves them by remapping: growing does not copy nor touch the spare room. */
static int grow(void *arr, size_t cap, size_t size) {
    void *p = realloc(*(void **)arr, cap * size);
    if (p == NULL) return STROBE_ENOMEM;
    *(void **)arr = p;
    return 0;
}

static int reserve_event(md_model *m) {
    if (m->count < m->cap) return 0;
    size_t cap = m->cap ? m->cap * 2 : 1024;
    if (cap > UINT32_MAX) return STROBE_ENOMEM; /* handles are uint32_t, MD_NONE excluded */
    if (grow(&m->ev_ts, cap, sizeof *m->ev_ts) || grow(&m->ev_dur, cap, sizeof *m->ev_dur) ||
        grow(&m->ev_name, cap, sizeof *m->ev_name) ||
        grow(&m->ev_thread, cap, sizeof *m->ev_thread) ||
        grow(&m->ev_cls, cap, sizeof *m->ev_cls) || grow(&m->ev_flags, cap, sizeof *m->ev_flags) ||
        grow(&m->cold_bits, cap / 64, sizeof *m->cold_bits))
        return STROBE_ENOMEM;
    memset(m->cold_bits + m->cap / 64, 0, (cap - m->cap) / 64 * sizeof *m->cold_bits);
    m->cap = cap;
    return 0;
}

/* Cold fields (bits of a record's tag), each present only when not its default. */
enum {
    C_EXT = 1 << 0,     /* ext_id, default -1 */
    C_CORR = 1 << 1,    /* corr, -1 */
    C_STREAM = 1 << 2,  /* stream, -1 */
    C_FLOW = 1 << 3,    /* flow_kind (a byte) and flow_id */
    C_BYTES = 1 << 4,   /* bytes, 0 */
    C_MEMDEV = 1 << 5,  /* mem_device (a byte), -1 */
    C_FLOPS = 1 << 6,   /* flops (8 bytes), 0 */
    C_SHAPES = 1 << 7,  /* shapes, 0 */
    C_STACK = 1 << 8,   /* stack, 0 */
    C_MODULE = 1 << 9,  /* module, 0 */
    C_DUR = 1 << 10,    /* dur that does not fit ev_dur */
    C_THREAD = 1 << 11, /* thread that does not fit ev_thread */
    C_CLASS = 1 << 12   /* cat, ph (a byte), kind (a byte), past the class table */
};

static size_t put_uv(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t put_sv(uint8_t *p, int64_t v) {
    return put_uv(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); /* zigzag */
}

static uint64_t get_uv(const uint8_t **p) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

static int64_t get_sv(const uint8_t **p) {
    uint64_t u = get_uv(p);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* The class of (cat, ph, kind) in the table, added on first sight; MD_CLASS_MAX when full. */
static uint8_t class_id(md_model *m, uint32_t cat, char ph, uint8_t kind) {
    for (size_t k = 0; k < m->class_count; k++) {
        const md_class *c = &m->classes[k];
        if (c->cat == cat && c->ph == ph && c->kind == kind) return (uint8_t)k;
    }
    if (m->class_count == MD_CLASS_MAX) return MD_CLASS_MAX;
    m->classes[m->class_count] = (md_class){cat, ph, kind};
    return (uint8_t)m->class_count++;
}

/* Appends a cold record for event i (events come in order, so records stay sorted). */
static int add_cold(md_model *m, uint32_t i, const uint8_t *rec, size_t len) {
    if (m->cold_count == m->cold_cap) {
        size_t cap = m->cold_cap ? m->cold_cap * 2 : 1024;
        if (grow(&m->cold_off, cap, sizeof *m->cold_off)) return STROBE_ENOMEM;
        m->cold_cap = cap;
    }
    if (m->cold_len + len > m->cold_buf_cap) {
        size_t cap = m->cold_buf_cap ? m->cold_buf_cap * 2 : 4096;
        while (cap < m->cold_len + len)
            cap *= 2;
        if (cap > UINT32_MAX || grow(&m->cold_buf, cap, 1)) return STROBE_ENOMEM;
        m->cold_buf_cap = cap;
    }
    m->cold_off[m->cold_count++] = (uint32_t)m->cold_len;
    memcpy(m->cold_buf + m->cold_len, rec, len);
    m->cold_len += len;
    m->cold_bits[i / 64] |= (uint64_t)1 << (i % 64);
    m->ev_flags[i] |= MD_F_COLD;
    return 0;
}

/* The first entry of the bad table (sorted by event) at or after event i. */
static size_t bad_lower(const md_model *m, uint32_t i) {
    size_t lo = 0, hi = m->bad_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->bads[mid].ev < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds or updates the bad-table entry of event i. Entries are added in event order while
 * loading; place_pending may add out of order (it sorts them after). */
static int set_bad(md_model *m, uint32_t i, uint16_t bits, uint32_t why) {
    if (m->ev_flags[i] & MD_F_BAD) {
        size_t lo = bad_lower(m, i);
        for (size_t k = lo; k < m->bad_count; k++)
            if (m->bads[k].ev == i) {
                m->bads[k].bits = bits;
                m->bads[k].why = why;
                return 0;
            }
        for (size_t k = 0; k < m->bad_count; k++) /* an out-of-order entry */
            if (m->bads[k].ev == i) {
                m->bads[k].bits = bits;
                m->bads[k].why = why;
                return 0;
            }
    }
    if (m->bad_count == m->bad_cap) {
        size_t cap = m->bad_cap ? m->bad_cap * 2 : 64;
        if (grow(&m->bads, cap, sizeof *m->bads)) return STROBE_ENOMEM;
        m->bad_cap = cap;
    }
    m->bads[m->bad_count++] = (md_bad){i, bits, why};
    m->ev_flags[i] |= MD_F_BAD;
    return 0;
}

/* Stores x as event m->count (room reserved). */
static int store_event(md_model *m, const md_event *x) {
    uint32_t i = (uint32_t)m->count;
    uint8_t rec[160];
    size_t n = 0;
    unsigned tag = 0;
    uint8_t *p = rec + 2; /* the tag goes first, two varint bytes at most */
    if (x->ext_id != -1) tag |= C_EXT, p += put_sv(p, x->ext_id);
    if (x->corr != -1) tag |= C_CORR, p += put_sv(p, x->corr);
    if (x->stream != -1) tag |= C_STREAM, p += put_sv(p, x->stream);
    if (x->flow_kind != MD_ID_NONE) tag |= C_FLOW, *p++ = x->flow_kind, p += put_sv(p, x->flow_id);
    if (x->bytes != 0) tag |= C_BYTES, p += put_sv(p, x->bytes);
    if (x->mem_device != -1) tag |= C_MEMDEV, *p++ = (uint8_t)x->mem_device;
    if (x->flops != 0) tag |= C_FLOPS, memcpy(p, &x->flops, 8), p += 8;
    if (x->shapes) tag |= C_SHAPES, p += put_uv(p, x->shapes);
    if (x->stack) tag |= C_STACK, p += put_uv(p, x->stack);
    if (x->module) tag |= C_MODULE, p += put_uv(p, x->module);
    if (x->dur < 0 || x->dur >= UINT32_MAX) tag |= C_DUR, p += put_sv(p, x->dur);
    if (x->thread >= 0xff) tag |= C_THREAD, p += put_uv(p, x->thread);
    uint8_t cls = class_id(m, x->cat, x->ph, x->kind);
    if (cls == MD_CLASS_MAX)
        tag |= C_CLASS, p += put_uv(p, x->cat), *p++ = (uint8_t)x->ph, *p++ = x->kind;
    m->ev_ts[i] = x->ts;
    m->ev_dur[i] = tag & C_DUR ? UINT32_MAX : (uint32_t)x->dur;
    m->ev_name[i] = x->name;
    m->ev_thread[i] = tag & C_THREAD ? 0xff : (uint8_t)x->thread;
    m->ev_cls[i] = cls;
    m->ev_flags[i] = (uint8_t)((x->has_time ? MD_F_TIME : 0) | (x->pending ? MD_F_PENDING : 0) |
                               x->dur_state << MD_F_DUR_SHIFT);
    /* The file index, as runs of a constant i - index. */
    uint32_t delta = x->index - i;
    if (m->index_run_count == 0 || m->index_runs[m->index_run_count - 1][1] != delta) {
        if (m->index_run_count == m->index_run_cap) {
            size_t cap = m->index_run_cap ? m->index_run_cap * 2 : 16;
            if (grow(&m->index_runs, cap, sizeof *m->index_runs)) return STROBE_ENOMEM;
            m->index_run_cap = cap;
        }
        m->index_runs[m->index_run_count][0] = i;
        m->index_runs[m->index_run_count++][1] = delta;
    }
    if (tag) {
        size_t t = put_uv(rec, tag);
        n = (size_t)(p - (rec + 2));
        memmove(rec + t, rec + 2, n);
        int rc = add_cold(m, i, rec, t + n);
        if (rc) return rc;
    }
    if (x->bad) {
        int rc = set_bad(m, i, x->bad_bits, x->bad_why);
        if (rc) return rc;
    }
    return 0;
}

/* The cold record of event i (which has one). Before the load ends (no ranks yet), found by
 * counting bits. */
static const uint8_t *cold_of(const md_model *m, uint32_t i) {
    size_t w = i / 64;
    uint64_t below = m->cold_bits[w] & (((uint64_t)1 << (i % 64)) - 1);
    size_t r;
    if (m->cold_rank) {
        r = m->cold_rank[w];
    } else {
        r = 0;
        for (size_t k = 0; k < w; k++)
            r += (size_t)__builtin_popcountll(m->cold_bits[k]);
    }
    r += (size_t)__builtin_popcountll(below);
    return m->cold_buf + m->cold_off[r];
}

/* Decodes a cold record into e (whose cold fields hold their defaults). */
static void decode_cold(const uint8_t *p, md_event *e) {
    unsigned tag = (unsigned)get_uv(&p);
    if (tag & C_EXT) e->ext_id = get_sv(&p);
    if (tag & C_CORR) e->corr = get_sv(&p);
    if (tag & C_STREAM) e->stream = get_sv(&p);
    if (tag & C_FLOW) e->flow_kind = *p++, e->flow_id = get_sv(&p);
    if (tag & C_BYTES) e->bytes = get_sv(&p);
    if (tag & C_MEMDEV) e->mem_device = (int8_t)*p++;
    if (tag & C_FLOPS) memcpy(&e->flops, p, 8), p += 8;
    if (tag & C_SHAPES) e->shapes = (uint32_t)get_uv(&p);
    if (tag & C_STACK) e->stack = (uint32_t)get_uv(&p);
    if (tag & C_MODULE) e->module = (uint32_t)get_uv(&p);
    if (tag & C_DUR) e->dur = get_sv(&p);
    if (tag & C_THREAD) e->thread = (uint32_t)get_uv(&p);
    if (tag & C_CLASS) e->cat = (uint32_t)get_uv(&p), e->ph = (char)*p++, e->kind = *p++;
}

static const md_bad *bad_of(const md_model *m, uint32_t i) {
    size_t lo = bad_lower(m, i);
    return lo < m->bad_count && m->bads[lo].ev == i ? &m->bads[lo] : NULL;
}

/* Event i's position in the file's event array (from the runs of i - index). */
static uint32_t file_index(const md_model *m, uint32_t i) {
    size_t lo = 0, hi = m->index_run_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->index_runs[mid][0] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return i + (m->index_run_count ? m->index_runs[lo][1] : 0);
}

void md_get(const md_model *m, uint32_t i, md_event *e) {
    uint8_t f = m->ev_flags[i];
    e->ts = m->ev_ts[i];
    e->dur = m->ev_dur[i];
    e->ext_id = e->corr = e->stream = -1;
    e->flow_id = e->bytes = 0;
    e->flops = 0;
    e->name = m->ev_name[i];
    e->shapes = e->stack = e->module = 0;
    e->thread = m->ev_thread[i];
    e->parent = m->parents_done ? md_parent(m, i) : MD_NONE;
    e->index = file_index(m, i);
    if (m->ev_cls[i] != MD_CLASS_MAX) {
        const md_class *c = &m->classes[m->ev_cls[i]];
        e->cat = c->cat;
        e->ph = c->ph;
        e->kind = c->kind;
    }
    e->has_time = (f & MD_F_TIME) != 0;
    e->mem_device = -1;
    e->dur_state = (uint8_t)(f >> MD_F_DUR_SHIFT & 3);
    e->flow_kind = MD_ID_NONE;
    e->pending = (f & MD_F_PENDING) != 0;
    e->bad = (f & MD_F_BAD) != 0;
    e->bad_bits = 0;
    e->bad_why = 0;
    if (f & MD_F_COLD) decode_cold(cold_of(m, i), e);
    if (m->ev_dur[i] != UINT32_MAX) e->dur = m->ev_dur[i]; /* the cold one was dropped */
    if (f & MD_F_BAD) {
        const md_bad *b = bad_of(m, i);
        if (b) e->bad_bits = b->bits, e->bad_why = b->why;
    }
}

int64_t md_dur_cold(const md_model *m, uint32_t i) {
    md_event e;
    md_get(m, i, &e);
    return e.dur;
}

uint32_t md_parent_far(const md_model *m, uint32_t i) {
    size_t lo = 0, hi = m->far_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->far_parents[mid][0] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->far_count && m->far_parents[lo][0] == i ? m->far_parents[lo][1] : MD_NONE;
}

uint32_t md_thread_cold(const md_model *m, uint32_t i) {
    md_event e;
    md_get(m, i, &e);
    return e.thread;
}

void md_class_cold(const md_model *m, uint32_t i, md_class *out) {
    md_event e;
    md_get(m, i, &e);
    *out = (md_class){e.cat, e.ph, e.kind};
}

/* A device's [memory] event with "Total Allocated" `total`: the device's peak (md_model). */
static void mem_peak(md_model *m, int64_t type, int64_t id, int64_t total) {
    size_t k = 0;
    while (k < m->mem_peak_count && (m->mem_peaks[k].type != type || m->mem_peaks[k].id != id))
        k++;
    if (k == m->mem_peak_count) {
        if (k == MD_MEM_PEAKS_MAX) return;
        m->mem_peaks[k] = (struct md_mem_peak){type, id, total};
        m->mem_peak_count++;
    }
    if (total > m->mem_peaks[k].peak) m->mem_peaks[k].peak = total;
}

/* The kernel about to be stored as event m->count: its launch figures (md_kargs). */
static int add_kargs(md_model *m, const strobe_rd_value *a) {
    if (m->kargs_count == m->kargs_cap) {
        size_t cap = m->kargs_cap ? 2 * m->kargs_cap : 256;
        md_kargs *k = realloc(m->kargs, cap * sizeof *k);
        if (k == NULL) return STROBE_ENOMEM;
        m->kargs = k;
        m->kargs_cap = cap;
    }
    md_kargs *k = &m->kargs[m->kargs_count];
    int64_t dev = arg_int(a, A_DEVICE, -1, -1);
    k->ev = (uint32_t)m->count;
    k->device = dev < 0 || dev > INT32_MAX ? -1 : (int32_t)dev;
    k->blocks_per_sm = k->occupancy = NAN;
    if (a[A_BPS].raw) strobe_rd_value_double(&a[A_BPS], &k->blocks_per_sm);
    if (a[A_OCC].raw) strobe_rd_value_double(&a[A_OCC], &k->occupancy);
    k->regs = arg_int(a, A_REGS, -1, -1);
    k->smem = arg_int(a, A_SMEM, -1, -1);
    int64_t grid = arg_text(m, &a[A_GRID], 0), block = arg_text(m, &a[A_BLOCK], 0);
    if (grid < 0 || block < 0) return STROBE_ENOMEM;
    k->grid = (uint32_t)grid;
    k->block = (uint32_t)block;
    m->kargs_count++;
    return 0;
}

/* The call about to be stored as event m->count, when its args name a collective (md_comm). */
static int add_comm(md_model *m, const strobe_rd_value *a) {
    if (!a[A_COLL].raw || a[A_COLL].type != STROBE_RD_T_STRING) return 0;
    if (m->comm_count == m->comm_cap) {
        size_t cap = m->comm_cap ? 2 * m->comm_cap : 256;
        md_comm *c = realloc(m->comms, cap * sizeof *c);
        if (c == NULL) return STROBE_ENOMEM;
        m->comms = c;
        m->comm_cap = cap;
    }
    md_comm *c = &m->comms[m->comm_count];
    int64_t coll = arg_text(m, &a[A_COLL], 1), pg = 0;
    /* The group's name where the recorder gives one, else its id or its list of ranks: torch's
     * older traces have only "Process Group ID", strobe record --mpi only the ranks. */
    static const int pg_keys[] = {A_PG_NAME, A_PG, A_PG_ID, A_PG_RANKS};
    for (size_t k = 0; k < sizeof pg_keys / sizeof *pg_keys && pg == 0; k++)
        pg = arg_text(m, &a[pg_keys[k]], 1);
    if (coll < 0 || pg < 0) return STROBE_ENOMEM;
    c->ev = (uint32_t)m->count;
    c->coll = (uint32_t)coll;
    c->pg = (uint32_t)pg;
    c->seq = arg_int(a, A_SEQ, -1, -1);
    m->comm_count++;
    return 0;
}

static int add_event(md_model *m, const strobe_rd_event *e) {
    if (reserve_event(m)) return STROBE_ENOMEM;
    int err = 0;
    md_thread key = {0};
    key.pid = id_key(m, &e->pid, &key.pid_kind, &key.pid_str, &err);
    key.tid = id_key(m, &e->tid, &key.tid_kind, &key.tid_str, &err);
    if (err) return err;
    int64_t th = thread_of(m, &key);
    int64_t name = intern(m, e->name.s, e->name.len);
    int64_t cat = intern(m, e->cat.s, e->cat.len);
    if (th < 0 || name < 0 || cat < 0) return STROBE_ENOMEM;
    md_event xbuf, *x = &xbuf;
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
        int64_t total = arg_int(a, A_TOTAL_ALLOC, -1, -1), id = arg_int(a, A_DEVID, -1, -1);
        if (dt > 0 && total >= 0) mem_peak(m, dt, id, total);
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
    if (x->kind == MD_KERNEL && e->args && add_kargs(m, a) != 0) return STROBE_ENOMEM;
    if (e->args && add_comm(m, a) != 0) return STROBE_ENOMEM;
    if (perf_reserve(m)) return STROBE_ENOMEM;
    perf_values(m, m->count, e);
    /* Read before the trace said whether it has a base time (baseTimeNanoseconds after
     * traceEvents, as torch writes it): placed once the whole file is read (place_pending). */
    x->pending = x->has_time && !e->has_abs;
    if (!x->pending) {
        int rc = place_time(m, x);
        if (rc) return rc;
    }
    int rc = store_event(m, x);
    if (rc) return rc;
    m->count++;
    return 0;
}

/* Adds the base time that came after the events (ts plus base out of int64: a bad ts, as the
 * reader marks it when the base comes first) and places the events read before it, so that the
 * model is what one pass with the base known from the start would give. */
static int by_ev(const void *a, const void *b) {
    const md_bad *x = a, *y = b;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int place_pending(md_model *m) {
    size_t bads_before = m->bad_count;
    for (size_t i = 0; i < m->count; i++) {
        if (!(m->ev_flags[i] & MD_F_PENDING)) continue;
        m->ev_flags[i] &= (uint8_t)~MD_F_PENDING;
        md_event xbuf, *x = &xbuf;
        md_get(m, (uint32_t)i, x);
        int was_bad = x->bad;
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
        } else {
            int rc = place_time(m, x);
            if (rc) return rc;
        }
        m->ev_ts[i] = x->ts;
        if (x->dur == 0) m->ev_dur[i] = 0;
        m->ev_flags[i] = (uint8_t)((m->ev_flags[i] & (MD_F_BAD | MD_F_COLD)) |
                                   (x->has_time ? MD_F_TIME : 0) | x->dur_state << MD_F_DUR_SHIFT);
        if (x->bad && (!was_bad || x->bad_bits != 0)) {
            int rc = set_bad(m, (uint32_t)i, x->bad_bits, x->bad_why);
            if (rc) return rc;
        }
    }
    if (m->bad_count != bads_before) qsort(m->bads, m->bad_count, sizeof *m->bads, by_ev);
    return 0;
}

/* The ranks of the cold records (see md_model.cold_rank), once every event is in. */
static int rank_cold(md_model *m) {
    size_t words = (m->count + 63) / 64;
    m->cold_rank = malloc((words ? words : 1) * sizeof *m->cold_rank);
    if (m->cold_rank == NULL) return STROBE_ENOMEM;
    uint32_t r = 0;
    for (size_t w = 0; w < words; w++) {
        m->cold_rank[w] = r;
        r += (uint32_t)__builtin_popcountll(m->cold_bits[w]);
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
 * starts with), then file order: a total order, so any sort gives the same result. The sort is a
 * merge sort of runs (events are mostly in order already) over the thread's handles, with a
 * buffer of as many handles: no copy of the keys, so that sorting adds 4 bytes per event of the
 * largest thread to the peak rather than the events' size. */
static inline int before(const md_model *m, uint32_t x, uint32_t y) {
    int64_t tx = m->ev_ts[x], ty = m->ev_ts[y];
    if (tx != ty) return tx < ty;
    int64_t dx = md_dur(m, x), dy = md_dur(m, y);
    if (dx != dy) return dx > dy;
    /* Handles are in the order events were read, which is the file's for JSON; a Perfetto trace
     * read through its JSON gives slices in an order of their own, so the file index decides. */
    uint32_t ix = file_index(m, x), iy = file_index(m, y);
    return ix != iy ? ix < iy : x < y;
}

/* Sorts k[0..n) using tmp[0..n). */
static void sort_handles(const md_model *m, uint32_t *k, uint32_t *tmp, size_t n) {
    size_t sorted = 1;
    while (sorted < n && !before(m, k[sorted], k[sorted - 1]))
        sorted++;
    if (sorted == n) return;
    /* Runs of 16 by insertion, then merges of doubling width back and forth. */
    for (size_t lo = 0; lo < n; lo += 16) {
        size_t hi = lo + 16 < n ? lo + 16 : n;
        for (size_t a = lo + 1; a < hi; a++) {
            uint32_t v = k[a];
            size_t b = a;
            while (b > lo && before(m, v, k[b - 1])) {
                k[b] = k[b - 1];
                b--;
            }
            k[b] = v;
        }
    }
    uint32_t *src = k, *dst = tmp;
    for (size_t w = 16; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            if (mid == hi || !before(m, src[mid], src[mid - 1])) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);
                continue;
            }
            while (a < mid && b < hi)
                dst[o++] = before(m, src[b], src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != k) memcpy(k, src, n * sizeof *k);
}

static int by_pair(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Event i's parent p, into the parent columns. */
static void set_parent(md_model *m, uint32_t i, uint32_t p) {
    if (m->ev_parent) {
        m->ev_parent[i] = p;
        return;
    }
    int64_t d = (int64_t)i - p;
    if (p == MD_NONE) {
        m->ev_pdelta[i] = 0;
    } else if (d > INT16_MIN && d <= INT16_MAX) {
        m->ev_pdelta[i] = (int16_t)d;
    } else {
        m->ev_pdelta[i] = INT16_MIN;
        m->far_parents[m->far_count][0] = i;
        m->far_parents[m->far_count++][1] = p;
    }
}

/* The nesting walk over each thread's sorted events: with far NULL, sets the parents; else counts
 * into *far the parents that a 16-bit delta cannot hold. */
static int walk(md_model *m, uint32_t **stackp, size_t *capp, size_t *far) {
    uint32_t *stack = *stackp;
    size_t cap = *capp;
    for (size_t t = 0; t < m->thread_count; t++) {
        md_thread *th = &m->threads[t];
        size_t depth = 0;
        int64_t top_end = 0;
        for (size_t k = 0; k < th->count; k++) {
            uint32_t i = th->order[k];
            if (!(m->ev_flags[i] & MD_F_TIME)) {
                if (!far) set_parent(m, i, MD_NONE);
                continue;
            }
            md_class c = md_class_of(m, i);
            if (c.kind == MD_COUNTER || c.kind == MD_FLOW_START || c.kind == MD_FLOW_STEP ||
                c.kind == MD_FLOW_END) {
                if (!far) set_parent(m, i, MD_NONE);
                continue;
            }
            int64_t ts = m->ev_ts[i];
            while (depth && ts >= top_end) {
                depth--;
                if (depth) top_end = m->ev_ts[stack[depth - 1]] + md_dur(m, stack[depth - 1]);
            }
            uint32_t p = depth ? stack[depth - 1] : MD_NONE;
            if (!far) {
                set_parent(m, i, p);
            } else if (p != MD_NONE) {
                int64_t d = (int64_t)i - p;
                if (d <= INT16_MIN || d > INT16_MAX) (*far)++;
            }
            if (c.ph == 'X') {
                if (depth == cap) {
                    cap = cap ? cap * 2 : 64;
                    uint32_t *s = realloc(stack, cap * sizeof *s);
                    if (s == NULL) {
                        *stackp = stack;
                        *capp = cap / 2;
                        return STROBE_ENOMEM;
                    }
                    stack = s;
                }
                stack[depth++] = i;
                top_end = ts + md_dur(m, i);
            }
        }
    }
    *stackp = stack;
    *capp = cap;
    return 0;
}

/* Sorts each thread's events and sets each event's parent: the innermost X event that contains
 * it. An event that starts inside a range but ends after it (a partial overlap, which `check`
 * reports) is given that range as parent all the same. */
static int nest(md_model *m) {
    for (size_t t = 0; t < m->thread_count; t++)
        m->threads[t].count = 0;
    for (size_t i = 0; i < m->count; i++)
        m->threads[md_thread_of(m, (uint32_t)i)].count++;
    size_t most = 1;
    for (size_t t = 0; t < m->thread_count; t++) {
        m->threads[t].order =
            malloc((m->threads[t].count ? m->threads[t].count : 1) * sizeof(uint32_t));
        if (m->threads[t].order == NULL) return STROBE_ENOMEM;
        if (m->threads[t].count > most) most = m->threads[t].count;
        m->threads[t].count = 0;
    }
    for (size_t i = 0; i < m->count; i++) {
        md_thread *t = &m->threads[md_thread_of(m, (uint32_t)i)];
        t->order[t->count++] = (uint32_t)i;
    }
    uint32_t *tmp = NULL;
    for (size_t t = 0; t < m->thread_count; t++) {
        md_thread *th = &m->threads[t];
        for (size_t k = 1; k < th->count; k++) {
            if (before(m, th->order[k], th->order[k - 1])) {
                if (tmp == NULL && (tmp = malloc(most * sizeof *tmp)) == NULL) return STROBE_ENOMEM;
                sort_handles(m, th->order, tmp, th->count);
                break;
            }
        }
    }
    free(tmp);
    /* Parents, in 16-bit deltas where few are far (a pass to count them, then one to store). */
    size_t far = 0;
    uint32_t *stack = NULL;
    size_t cap = 0;
    int rc = walk(m, &stack, &cap, &far);
    if (rc == 0 && far * 8 > m->count * 2) {
        m->ev_parent = malloc((m->count ? m->count : 1) * sizeof *m->ev_parent);
        if (m->ev_parent == NULL) rc = STROBE_ENOMEM;
    } else if (rc == 0) {
        m->ev_pdelta = calloc(m->count ? m->count : 1, sizeof *m->ev_pdelta);
        m->far_parents = malloc((far ? far : 1) * sizeof *m->far_parents);
        if (m->ev_pdelta == NULL || m->far_parents == NULL) rc = STROBE_ENOMEM;
    }
    if (rc == 0) rc = walk(m, &stack, &cap, NULL);
    free(stack);
    if (rc == 0 && m->far_count > 1)
        qsort(m->far_parents, m->far_count, sizeof *m->far_parents, by_pair);
    m->parents_done = rc == 0;
    return rc;
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

/* A top-level "device_type": its decoded string, or 0 (see md_model.device_type). */
static int device_type(md_model *m, const strobe_rd_value *v) {
    char buf[256];
    size_t len;
    m->device_type = 0;
    if (v->type != STROBE_RD_T_STRING || strobe_rd_value_str(v, buf, sizeof buf, &len) != 0 ||
        memchr(buf, '\0', len) != NULL)
        return 0;
    int64_t id = intern(m, buf, len);
    if (id < 0) return (int)id;
    m->device_type = (uint32_t)id;
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
            if (strcmp(md_str(m, (uint32_t)key), "strobe_clock_sync") == 0) {
                int64_t id = intern(m, it.meta->value.raw, it.meta->value.len);
                if (id < 0) {
                    rc = (int)id;
                    break;
                }
                m->clock_sync = (uint32_t)id;
            }
            if (strcmp(md_str(m, (uint32_t)key), "device_type") == 0) {
                rc = device_type(m, &it.meta->value);
                if (rc) break;
            }
            if (it.meta->value.type == STROBE_RD_T_ARRAY && it.meta->value.len > 2 &&
                strcmp(md_str(m, (uint32_t)key), "strobe_heap") == 0) {
                size_t add = it.meta->value.len - 2; /* less the brackets */
                char *h = realloc(m->heap_json, m->heap_len + add + 2);
                if (h == NULL) {
                    rc = STROBE_ENOMEM;
                    break;
                }
                if (m->heap_len) h[m->heap_len++] = ',';
                memcpy(h + m->heap_len, it.meta->value.raw + 1, add);
                m->heap_len += add;
                h[m->heap_len] = '\0';
                m->heap_json = h;
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
        m->gz_trailing_bytes = info->gz_trailing_bytes;
        m->gz_trailing_offset = info->gz_trailing_offset;
        m->gz_trailing_zeros = info->gz_trailing_zeros;
        if (info->device_properties) {
            int64_t dp = intern(m, info->device_properties, info->device_properties_len);
            if (dp < 0) rc = (int)dp;
            m->device_props = dp < 0 ? 0 : (uint32_t)dp;
        }
        if (rc == 0) rc = rank_cold(m);
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
    free(m->ev_ts);
    free(m->ev_dur);
    free(m->ev_name);
    free(m->ev_parent);
    free(m->ev_pdelta);
    free(m->far_parents);
    free(m->ev_thread);
    free(m->ev_cls);
    free(m->ev_flags);
    free(m->cold_bits);
    free(m->cold_rank);
    free(m->cold_off);
    free(m->cold_buf);
    free(m->bads);
    free(m->index_runs);
    free(m->procs);
    free(m->meta_keys);
    free(m->heap_json);
    free(m->perf_names);
    free(m->perf);
    free(m->kargs);
    free(m->comms);
    free(m->thread_slots);
    free(m->proc_slots);
    strobe__strtab_release(&m->strings);
    strobe__pool_release(&m->pool);
    memset(m, 0, sizeof *m);
}

void md_strip(md_model *m) {
    /* The scalars md_strip keeps (model.h), taken before md_free clears the model. */
    int64_t rank = m->rank, world_size = m->world_size, min_ts = m->min_ts, max_ts = m->max_ts;
    int64_t base = m->base_time_ns, gz_bytes = m->gz_trailing_bytes;
    int64_t gz_offset = m->gz_trailing_offset, cut_offset = m->pf_cut_offset;
    uint64_t bad = m->bad_events, bad_meta = m->bad_metadata_events, perf = m->perf_dropped;
    int has_base = m->has_base, gz_zeros = m->gz_trailing_zeros, cut = m->pf_cut;
    int unterminated = m->unterminated, perfetto = m->perfetto;
    char path[sizeof m->path], err[sizeof m->err];
    memcpy(path, m->path, sizeof path);
    memcpy(err, m->err, sizeof err);
    md_free(m);
    memcpy(m->path, path, sizeof path);
    memcpy(m->err, err, sizeof err);
    m->rank = rank;
    m->world_size = world_size;
    m->min_ts = min_ts;
    m->max_ts = max_ts;
    m->base_time_ns = base;
    m->has_base = has_base;
    m->gz_trailing_bytes = gz_bytes;
    m->gz_trailing_offset = gz_offset;
    m->gz_trailing_zeros = gz_zeros;
    m->pf_cut = cut;
    m->pf_cut_offset = cut_offset;
    m->bad_events = bad;
    m->bad_metadata_events = bad_meta;
    m->perf_dropped = perf;
    m->unterminated = unterminated;
    m->perfetto = perfetto;
}
