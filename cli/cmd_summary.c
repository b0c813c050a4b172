/* cmd_summary.c: `strobe summary`, the per-operator table of torch's key_averages().table(),
 * from any Kineto-format trace.
 *
 * Contents:
 *   usage        the man page
 *   grouping     the row of each event: by name, name and shapes, name and stack frames, or
 *                name and module
 *   building     self and total CPU time, device time through the correlation chain
 *                (model/oplink.h), memory, FLOPs, perf counters
 *   sorting      the --sort keys
 *   output       torch's table (util/table.h), CSV and JSON */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "heap_print.h"
#include "model/heap.h"
#include "model/oplink.h"
#include "model/model.h"
#include "rows.h"
#include "strobe/error.h"
#include "tb.h"
#include "util/table.h"
#include "util/u64map.h"

const char cmd_summary_usage[] =
    "NAME\n"
    "    strobe summary - per-operator table, like torch's key_averages().table()\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe summary [OPTIONS] TRACE\n"
    "    strobe summary TRACE [-s KEY] [-n N] [--group-by name|shape|stack[:N]|module]\n"
    "                         [-f table|csv|json] [--name-width N] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads a Kineto-format trace (.json or .json.gz, from strobe or PyTorch, either schema,\n"
    "    or torch's legacy profiler; or a .pftrace; \"-\" is standard input) and prints one row\n"
    "    per name, as torch's key_averages() does: CPU operators, user annotations, the CPU\n"
    "    side of the device runtime (cudaLaunchKernel ...), and the device work: kernels,\n"
    "    copies, memsets, device syncs and GPU annotations, each a row of its own with no CPU\n"
    "    time (a kernel never shares a row with an operator of its name). Python functions and\n"
    "    the utility ops torch leaves out (aten::is_leaf ...) are not rows; ProfilerStep#N is\n"
    "    counted as ProfilerStep*. The device columns are named after the trace's device, as\n"
    "    torch names them: CUDA (ROCm too), XPU, MTIA, HPU or PRIVATEUSEONE, told by the\n"
    "    categories (xpu_runtime, mtia_ccp_events, hpu_op, privateuse1_runtime ...).\n"
    "\n"
    "    Self CPU is an event's duration less that of its children, as torch computes it: the\n"
    "    rows on its thread that it contains whole (one that ends after the range it starts in\n"
    "    is a child of the range around both); a row whose sum would be negative (siblings that\n"
    "    overlap) shows 0. As torch does, an event that is the only child of one of its name is\n"
    "    merged into it (no call of its own). CPU total is the whole duration. A device\n"
    "    row's Self and total device time are its duration; the footer's device total adds the\n"
    "    device rows but GPU annotations. An operator's device time is that of the kernels,\n"
    "    copies and memsets linked to an operator through the correlation chain (device event\n"
    "    -> runtime call with the same \"correlation\" -> the operator enclosing that call;\n"
    "    else the operator with the same \"External id\"): self counts the work launched\n"
    "    directly inside it, total also the work of its children. Memory columns add the\n"
    "    [memory] events' bytes (frees are negative) directly inside (Self) and anywhere\n"
    "    inside an operator. Columns with no data are left out, as torch does. A trace with\n"
    "    no rows (strobe record of a program with no annotations) gets a line on standard\n"
    "    error after the table: the options of strobe record that would have recorded\n"
    "    something (--sample, --heap, --torch; NVTX and strobe's ranges), or, for a trace of\n"
    "    CPU samples, the commands that show them (strobe stacks --samples, strobe\n"
    "    flamegraph --metric samples).\n"
    "\n"
    "    A trace of strobe record --heap holds the program's allocation sites: the table (or,\n"
    "    with no operators, instead of it) is followed by their totals and the largest sites\n"
    "    by peak live bytes and by bytes allocated (-n of each, default 10), with calls,\n"
    "    temporary allocations, bytes leaked at exit and the first frames of each call stack,\n"
    "    as heaptrack's summary shows them. Its CPU [memory] events are a sample (one every\n"
    "    N bytes on average): in the memory columns each counts as the bytes it stands for,\n"
    "    its bytes divided by its chance to be sampled, 1 - exp(-bytes / N).\n"
    "\n"
    "    Perf counters: when the trace names them in its top-level \"strobe_perf_events\"\n"
    "    (strobe's perf_events option), each event adds a column of its name (task-clock,\n"
    "    page-faults ...) with the sum of the rows' per-range deltas (inclusive of nested\n"
    "    ranges), and a Self column (less the rows directly nested in it, as Self CPU).\n"
    "\n"
    "OPTIONS\n"
    "    -s, --sort KEY cpu_time_total (default), self_cpu_time_total, cuda_time_total,\n"
    "                   self_cuda_time_total, cpu_memory_usage, self_cpu_memory_usage,\n"
    "                   cuda_memory_usage, self_cuda_memory_usage, flops, count, name,\n"
    "                   perf:EVENT, self_perf:EVENT (a perf counter of the trace's\n"
    "                   \"strobe_perf_events\"; another name is a usage error)\n"
    "                   (as in torch, \"device\", \"xpu\" or \"privateuse1\" may stand for\n"
    "                   \"cuda\": self_device_time_total, xpu_memory_usage ...)\n"
    "    -n, --limit N  print the first N rows only (0: all, the default)\n"
    "    --group-by G   name (default); shape: name and \"Input Dims\", adds Input Shapes;\n"
    "                   stack[:N]: name and the first N (default 5) frames of \"Call stack\",\n"
    "                   adds Source Location; module: name and \"Module Hierarchy\" (events\n"
    "                   without one form a group with an empty module), adds Module Hierarchy\n"
    "    -f, --format F table (default); csv or json: the same columns with raw numbers\n"
    "                   (times in microseconds, memory in bytes, FLOPs and counters unscaled)\n"
    "    --name-width N the name column's widest (default 55, as torch's\n"
    "                   max_name_column_width): a longer name is cut to N - 3 characters\n"
    "                   and \"...\"; csv and json keep whole names\n"
    "    --tensor-cores the TensorBoard profiler plugin's operator view instead, with its\n"
    "                   Tensor Core columns: per operator name (ProfilerStep#N, Optimizer.*,\n"
    "                   enumerate(DataLoader)#...__next__ and DataParallel.forward left out),\n"
    "                   Calls, Device Self and Total Duration (us), Host Self and Total\n"
    "                   Duration (us); Tensor Cores Eligible (the name is on the plugin's list\n"
    "                   of eligible operators, aten::conv2d, aten::mm, AddmmBackward ..., or it\n"
    "                   or an operator below it launched a Tensor Core kernel, one whose name\n"
    "                   shows Tensor Cores: h884, s1688, xmma_gemm ...); Tensor Cores Self (%)\n"
    "                   and Total (%), the share of Tensor Core kernels in its self and total\n"
    "                   device time. Sorted by device self time (host self without device\n"
    "                   work); -n and -f apply\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "    Names and other text from the trace are printed with control characters escaped\n"
    "    (\\n, \\e ...) in the table; csv and json quote them by their own rules.\n"
    "\n"
    "    Malformed events (the reader's bad events) are skipped; standard error says how many,\n"
    "    and `strobe check TRACE` lists them.\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read) or bad usage.\n";

typedef enum sort_key {
    S_CPU_TOTAL,
    S_SELF_CPU,
    S_DEV_TOTAL,
    S_SELF_DEV,
    S_CPU_MEM,
    S_SELF_CPU_MEM,
    S_DEV_MEM,
    S_SELF_DEV_MEM,
    S_FLOPS,
    S_COUNT,
    S_NAME,
    S_PERF,     /* perf:EVENT */
    S_SELF_PERF /* self_perf:EVENT */
} sort_key;

static const struct {
    const char *name;
    sort_key key;
} sort_names[] = {
    {"cpu_time_total", S_CPU_TOTAL},
    {"self_cpu_time_total", S_SELF_CPU},
    {"cuda_time_total", S_DEV_TOTAL},
    {"device_time_total", S_DEV_TOTAL},
    {"self_cuda_time_total", S_SELF_DEV},
    {"self_device_time_total", S_SELF_DEV},
    {"cpu_memory_usage", S_CPU_MEM},
    {"self_cpu_memory_usage", S_SELF_CPU_MEM},
    {"cuda_memory_usage", S_DEV_MEM},
    {"device_memory_usage", S_DEV_MEM},
    {"self_cuda_memory_usage", S_SELF_DEV_MEM},
    {"self_device_memory_usage", S_SELF_DEV_MEM},
    {"flops", S_FLOPS},
    {"count", S_COUNT},
    {"name", S_NAME},
};

/* What a row holds, part of its key as in torch's key_averages() (which groups by name, device
 * type and is_user_annotation): a kernel never shares a row with an operator of its name. */
typedef enum row_class {
    R_CPU = 0, /* operators and the CPU side of the device runtime */
    R_CPU_UA,  /* user annotations (record_function) */
    R_DEV,     /* device work: kernels, copies, memsets, device syncs */
    R_DEV_UA,  /* gpu_user_annotation: device time, left out of the device total as torch does */
    R_NONE
} row_class;

/* The row class of an event kind. */
static int row_class_of(int kind) {
    if (kind == MD_USER_ANNOTATION) return R_CPU_UA;
    if (kind == MD_GPU_USER_ANNOTATION) return R_DEV_UA;
    if (md_is_device_work(kind) || kind == MD_SYNC) return R_DEV;
    return md_is_row(kind) ? R_CPU : R_NONE;
}

/* A sort key as torch reads it: "cuda", "xpu" and "privateuse1" stand for "device"
 * (self_xpu_time_total is self_device_time_total), written into buf (a longer key is left as it
 * is, and matches nothing). */
static void device_sort_key(const char *v, char *buf, size_t n) {
    static const char *const devs[] = {"privateuse1", "cuda", "xpu"};
    snprintf(buf, n, "%s", v);
    if (strlen(v) >= n) return;
    for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++) {
        char *p = strstr(buf, devs[d]);
        if (p == NULL) continue;
        size_t len = strlen(devs[d]);
        char rest[64];
        snprintf(rest, sizeof rest, "%s", p + len);
        snprintf(p, n - (size_t)(p - buf), "device%s", rest);
        return;
    }
}

typedef struct row {
    uint32_t name, aux; /* aux: shapes, stack key or module string id (0: none) */
    uint8_t cls;        /* row_class */
    uint32_t id;        /* creation order: the row's perf values are at summary.perf[id * 2 * np] */
    uint64_t calls;
    int64_t self_ns, total_ns, self_dev, total_dev;
    int64_t cpu_mem, self_cpu_mem, dev_mem, self_dev_mem;
    double flops;
} row;

typedef struct summary {
    md_model *m; /* the trace: &model for the command, the caller's for cli_summary_json */
    md_model model;
    strobe__pool pool;
    strobe__strtab aux; /* stack keys */
    row *rows;
    size_t count, cap;
    uint32_t *slots; /* (name, aux) -> row + 1 */
    size_t slot_cap;
    int group; /* 0 name, 1 shape, 2 stack, 3 module */
    int stack_n;
    size_t name_width; /* --name-width: the name column's widest */
    int has_dev, has_mem, has_dev_mem, has_flops;
    int64_t self_total, self_dev_total;
    const char *dev_name; /* the device's name in the columns: md_device_name() */
    uint32_t step_name;   /* the string id of "ProfilerStep*" */
    size_t np;            /* perf counters: m.perf_count */
    int64_t *perf;        /* per row id, 2 * np values: self, then total, of each counter */
} summary;

/* a + b and a - b held at the int64 limits (model.h): durations, bytes and perf values come from
 * the trace, and their sums over many events can exceed int64. */
#define sat_add md_add_sat
#define sat_sub md_sub_sat

/* ---- grouping ----------------------------------------------------------------------------- */

static size_t slot_of(const summary *s, uint32_t name, uint32_t aux, int cls) {
    uint64_t x = ((uint64_t)name << 32 | aux) * 0x9e3779b97f4a7c15ull + (uint64_t)cls;
    size_t i = (size_t)(x ^ (x >> 31)) & (s->slot_cap - 1);
    for (uint32_t r; (r = s->slots[i]) != 0; i = (i + 1) & (s->slot_cap - 1))
        if (s->rows[r - 1].name == name && s->rows[r - 1].aux == aux && s->rows[r - 1].cls == cls)
            break;
    return i;
}

static int64_t row_for(summary *s, uint32_t name, uint32_t aux, int cls) {
    if ((s->count + 1) * 2 > s->slot_cap) {
        size_t cap = s->slot_cap ? s->slot_cap * 2 : 1024;
        uint32_t *old = s->slots;
        size_t old_cap = s->slot_cap;
        s->slots = calloc(cap, sizeof *s->slots);
        if (s->slots == NULL) {
            s->slots = old;
            return STROBE_ENOMEM;
        }
        s->slot_cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i])
                s->slots[slot_of(s, s->rows[old[i] - 1].name, s->rows[old[i] - 1].aux,
                                 s->rows[old[i] - 1].cls)] = old[i];
        free(old);
    }
    size_t i = slot_of(s, name, aux, cls);
    if (s->slots[i]) return s->slots[i] - 1;
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        if (s->np) {
            int64_t *p = realloc(s->perf, cap * 2 * s->np * sizeof *p);
            if (p == NULL) return STROBE_ENOMEM;
            memset(p + s->cap * 2 * s->np, 0, (cap - s->cap) * 2 * s->np * sizeof *p);
            s->perf = p;
        }
        row *r = realloc(s->rows, cap * sizeof *r);
        if (r == NULL) return STROBE_ENOMEM;
        s->rows = r;
        s->cap = cap;
    }
    row *r = &s->rows[s->count];
    memset(r, 0, sizeof *r);
    r->name = name;
    r->aux = aux;
    r->cls = (uint8_t)cls;
    r->id = (uint32_t)s->count;
    s->slots[i] = (uint32_t)++s->count;
    return (int64_t)s->count - 1;
}

/* Python's str() of a list of lists: "[[1, 2], []]", from the raw JSON of "Input Dims". */
static int64_t shapes_key(summary *s, const char *json) {
    size_t n = strlen(json);
    char *buf = malloc(2 * n + 1);
    if (buf == NULL) return STROBE_ENOMEM;
    size_t k = 0;
    for (const char *p = json; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') continue;
        buf[k++] = *p;
        if (*p == ',') buf[k++] = ' ';
    }
    int64_t id = strobe__strtab_intern(&s->aux, buf, k);
    free(buf);
    return id;
}

/* The first N frames of "Call stack" (innermost first, as torch's evt.stack), kept joined by
 * ';' as they are in the trace. */
static int64_t stack_key(summary *s, const char *stack) {
    const char *p = stack;
    for (int k = 0; k < s->stack_n && *p; k++) {
        const char *semi = strchr(p, ';');
        if (semi == NULL) {
            p += strlen(p);
            break;
        }
        p = k + 1 < s->stack_n ? semi + 1 : semi;
    }
    return strobe__strtab_intern(&s->aux, stack, (size_t)(p - stack));
}

/* ---- building ----------------------------------------------------------------------------- */

/* The name of event e's row: torch groups every "ProfilerStep#N" as "ProfilerStep*"
 * (_rewrite_name with its wildcard). */
static uint32_t row_name(const summary *s, const md_event *e) {
    return strncmp(md_str(s->m, e->name), "ProfilerStep#", 13) == 0 ? s->step_name : e->name;
}

/* The row of event e (handle i), made if new: *row gets its index, or MD_NONE when e is no row. A
 * malformed event is skipped (the command says how many, and `check` lists them). @return 0 or
 * STROBE_ENOMEM. */
static int row_of_event(summary *s, const md_event *e, uint32_t *out) {
    md_model *m = s->m;
    *out = MD_NONE;
    int cls = row_class_of(e->kind);
    if (cls == R_NONE || !e->has_time || e->bad || md_left_out(md_str(m, e->name))) return 0;
    int64_t aux = 0;
    if (s->group == 1 && e->shapes) aux = shapes_key(s, md_str(m, e->shapes));
    if (s->group == 2 && e->stack) aux = stack_key(s, md_str(m, e->stack));
    if (s->group == 3 && e->module) {
        const char *mod = md_str(m, e->module);
        aux = strobe__strtab_intern(&s->aux, mod, strlen(mod));
    }
    int64_t r = aux < 0 ? aux : row_for(s, row_name(s, e), (uint32_t)aux, cls);
    if (r < 0) return (int)r;
    *out = (uint32_t)r;
    return 0;
}

/* An open event of torch's CPU tree on one thread (md_cpu_tree's nesting, see model/oplink.h). */
typedef struct open_ev {
    uint32_t i, first; /* the event; its first child */
    uint8_t nchild;    /* its children, held at 2 */
    uint8_t merged;    /* the only child of one of its name (see model/oplink.h) */
    uint32_t row;      /* its row (not merged) */
    int64_t end, self; /* its end; its self time so far (not merged) */
} open_ev;

typedef struct tree_walk {
    open_ev *stack;
    size_t depth, cap;
} tree_walk;

/* Pops what event e (at ts .. end) neither starts inside nor ends within, calling done on each
 * popped entry, and pushes e. @return the new entry, or NULL (out of memory). */
static open_ev *tree_push(tree_walk *w, uint32_t i, int64_t ts, int64_t end,
                          void (*done)(summary *, const open_ev *), summary *s) {
    while (w->depth) {
        const open_ev *top = &w->stack[w->depth - 1];
        if (ts < top->end && end <= top->end) break;
        done(s, top);
        w->depth--;
    }
    if (w->depth == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        open_ev *p = realloc(w->stack, cap * sizeof *p);
        if (p == NULL) return NULL;
        w->stack = p;
        w->cap = cap;
    }
    open_ev *o = &w->stack[w->depth++];
    memset(o, 0, sizeof *o);
    o->i = i;
    o->end = end;
    o->first = MD_NONE;
    return o;
}

static uint8_t *merged_bits; /* build(): 1 bit per event, set for merged events */

static int is_merged(uint32_t i) {
    return merged_bits[i >> 3] >> (i & 7) & 1;
}

/* Pass 1's pop: an only child of the popped event's name is merged into it. */
static void mark_merged(summary *s, const open_ev *o) {
    if (o->nchild == 1 && md_name_of(s->m, o->first) == md_name_of(s->m, o->i))
        merged_bits[o->first >> 3] |= (uint8_t)(1u << (o->first & 7));
}

/* Pass 2's pop: an event's self time is complete. */
static void add_self(summary *s, const open_ev *o) {
    if (!o->merged) s->rows[o->row].self_ns = sat_add(s->rows[o->row].self_ns, o->self);
}

/* Builds the rows thread by thread, with a stack of open events (no array per event but a bit):
 * pass 1 marks the merged events (torch's _remove_dup_nodes: an event that is the only child of
 * one of its name; md_cpu_tree's top-down merging comes to this, as a merged event's parent ends
 * with the child count of its only child), pass 2 adds calls, times and perf values, and a pass
 * in file order adds device work, FLOPs (doubles: summed in file order) and memory. The events
 * that own device work or memory and are merged have their parent kept in a map. */
static int build(summary *s) {
    md_model *m = s->m;
    int err = 0;
    s->np = m->perf_count;
    size_t n = m->count ? m->count : 1;
    /* zeroed: md_link() sets 1 + the owner where there is one, so that a trace without device
     * work or memory events never touches its pages */
    uint32_t *owner = calloc(n, sizeof *owner);
    merged_bits = calloc((n + 7) / 8, 1);
    tree_walk w = {0};
    strobe__u64map up_of = {0}; /* merged event -> its parent that is not merged */
    if (owner == NULL || merged_bits == NULL) {
        free(owner);
        free(merged_bits);
        merged_bits = NULL;
        return STROBE_ENOMEM;
    }
    int64_t step = strobe__strtab_intern(&m->strings, "ProfilerStep*", 13);
    if (step < 0 || strobe__strtab_intern(&s->aux, "", 0) != 0) err = STROBE_ENOMEM;
    s->step_name = step < 0 ? 0 : (uint32_t)step;
    s->dev_name = md_device_name(m);
    if (!err) err = md_link(m, owner);
    for (int pass = 1; pass <= 2 && !err; pass++) {
        for (size_t t = 0; t < m->thread_count && !err; t++) {
            const md_thread *th = &m->threads[t];
            w.depth = 0;
            for (size_t k = 0; k < th->count && !err; k++) {
                uint32_t i = th->order[k];
                const md_event e_ev = md_at(m, i), *e = &e_ev;
                if (!md_in_cpu_tree(m, e)) continue;
                open_ev *o = tree_push(&w, i, e->ts, md_add_sat(e->ts, e->dur),
                                       pass == 1 ? mark_merged : add_self, s);
                if (o == NULL) {
                    err = STROBE_ENOMEM;
                    break;
                }
                open_ev *p = w.depth > 1 ? o - 1 : NULL;
                if (pass == 1) {
                    if (p && p->nchild++ == 0) p->first = i;
                    if (p && p->nchild > 2) p->nchild = 2;
                    continue;
                }
                while (p && p->merged)
                    p = p == w.stack ? NULL : p - 1;
                if (is_merged(i)) {
                    o->merged = 1;
                    uint64_t *v = strobe__u64map_put(&up_of, i, NULL);
                    if (v == NULL) err = STROBE_ENOMEM;
                    if (v) *v = p ? p->i : MD_NONE;
                    continue;
                }
                if ((err = row_of_event(s, e, &o->row)) != 0) break;
                row *r = &s->rows[o->row];
                r->calls++;
                r->total_ns = sat_add(r->total_ns, e->dur);
                o->self = sat_add(0, e->dur);
                if (p) p->self = sat_sub(p->self, e->dur);
                /* Perf deltas include the nested ranges, as durations do: their self values are
                 * less the children's of torch's tree, as self CPU is. */
                const int64_t *v = s->np ? &m->perf[(size_t)i * s->np] : NULL;
                int64_t *mine = s->np ? &s->perf[r->id * 2 * s->np] : NULL;
                int64_t *up = s->np && p ? &s->perf[s->rows[p->row].id * 2 * s->np] : NULL;
                for (size_t k2 = 0; k2 < s->np; k2++) {
                    mine[2 * k2] = sat_add(mine[2 * k2], v[k2]);
                    mine[2 * k2 + 1] = sat_add(mine[2 * k2 + 1], v[k2]);
                    if (up) up[2 * k2] = sat_sub(up[2 * k2], v[k2]);
                }
            }
            while (w.depth) {
                if (pass == 1)
                    mark_merged(s, &w.stack[w.depth - 1]);
                else
                    add_self(s, &w.stack[w.depth - 1]);
                w.depth--;
            }
        }
    }
    free(w.stack);
    /* strobe record --heap samples the CPU [memory] events by bytes: each counts as the bytes it
     * stands for (model/heap.h). */
    int64_t heap_rate = md_heap_rate(m->heap_json);
    for (size_t i = 0; i < m->count && !err; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        int cls = row_class_of(e->kind);
        uint32_t ri = MD_NONE;
        if (cls >= R_DEV) {
            /* Device work is a row of its own, as torch lists it: no CPU time, its duration as
             * both its self and total device time. */
            if ((err = row_of_event(s, e, &ri)) != 0) break;
            if (ri != MD_NONE) {
                row *r = &s->rows[ri];
                r->calls++;
                r->self_dev = sat_add(r->self_dev, e->dur);
                r->total_dev = sat_add(r->total_dev, e->dur);
                if (r->cls == R_DEV) s->self_dev_total = sat_add(s->self_dev_total, e->dur);
            }
        } else if (cls != R_NONE && e->flops != 0 && !is_merged((uint32_t)i)) {
            /* A merged event (the only child of one of its name) is no call of its own. */
            if ((err = row_of_event(s, e, &ri)) != 0) break;
            if (ri != MD_NONE) s->rows[ri].flops += e->flops;
        }
        uint32_t o = owner[i] - 1; /* MD_NONE where 0 (md_link) */
        if (o == MD_NONE || e->bad) continue;
        /* What a merged event owns is its parent's, as torch lifts its kernels up. */
        if (is_merged(o)) {
            const uint64_t *v = strobe__u64map_get(&up_of, o);
            o = v ? (uint32_t)*v : MD_NONE;
        }
        uint32_t ro = MD_NONE;
        if (o != MD_NONE) {
            const md_event oe = md_at(m, o);
            if ((err = row_of_event(s, &oe, &ro)) != 0) break;
        }
        if (ro == MD_NONE) continue;
        if (md_is_device_work(e->kind)) {
            s->rows[ro].self_dev = sat_add(s->rows[ro].self_dev, e->dur);
            /* Merged events are not counted twice: their parent is on the way up too. */
            for (uint32_t a = o; a != MD_NONE && !err; a = md_op_parent(m, a)) {
                const md_event ae = md_at(m, a);
                uint32_t ra;
                if (is_merged(a) || (err = row_of_event(s, &ae, &ra)) != 0 || ra == MD_NONE)
                    continue;
                s->rows[ra].total_dev = sat_add(s->rows[ra].total_dev, e->dur);
            }
        } else if (e->kind == MD_MEMORY) {
            int dev = e->mem_device > 0;
            int64_t bytes = dev ? e->bytes : md_heap_weigh(e->bytes, heap_rate);
            row *r = &s->rows[ro];
            if (dev)
                r->self_dev_mem = sat_add(r->self_dev_mem, bytes);
            else
                r->self_cpu_mem = sat_add(r->self_cpu_mem, bytes);
            for (uint32_t a = o; a != MD_NONE && !err; a = md_op_parent(m, a)) {
                const md_event ae = md_at(m, a);
                uint32_t ra;
                if (is_merged(a) || (err = row_of_event(s, &ae, &ra)) != 0 || ra == MD_NONE)
                    continue;
                if (dev)
                    s->rows[ra].dev_mem = sat_add(s->rows[ra].dev_mem, bytes);
                else
                    s->rows[ra].cpu_mem = sat_add(s->rows[ra].cpu_mem, bytes);
            }
            s->has_mem = 1;
            if (dev) s->has_dev_mem = 1;
        }
    }
    free(owner);
    free(merged_bits);
    merged_bits = NULL;
    strobe__u64map_free(&up_of);
    /* A row whose every event was merged into a parent (of another class) has no call: not a
     * row. The row ids (perf values) stay. */
    size_t kept = 0;
    for (size_t k = 0; k < s->count; k++)
        if (s->rows[k].calls) s->rows[kept++] = s->rows[k];
    s->count = kept;
    for (size_t k = 0; k < s->count; k++) {
        /* torch's sum of its events' self times, which is negative only where siblings overlap
         * more than their parent lasts: no time can be below zero, so such a row shows 0. */
        if (s->rows[k].self_ns < 0) s->rows[k].self_ns = 0;
        s->self_total = sat_add(s->self_total, s->rows[k].self_ns);
        /* torch shows the device columns when a row has device time of its own. */
        if (s->rows[k].self_dev > 0) s->has_dev = 1;
        if (s->rows[k].flops > 0) s->has_flops = 1;
    }
    return err;
}

/* Frees the table (not its model). */
static void summary_free(summary *s) {
    free(s->perf);
    free(s->rows);
    free(s->slots);
    strobe__strtab_release(&s->aux);
    strobe__pool_release(&s->pool);
    free(s);
}

/* ---- sorting ------------------------------------------------------------------------------ */

static const summary *sort_s;
static sort_key sort_by;
static size_t sort_perf; /* S_PERF, S_SELF_PERF: the counter */

static int64_t key_of(const row *r) {
    switch (sort_by) {
    case S_CPU_TOTAL:
        return r->total_ns;
    case S_SELF_CPU:
        return r->self_ns;
    case S_DEV_TOTAL:
        return r->total_dev;
    case S_SELF_DEV:
        return r->self_dev;
    case S_CPU_MEM:
        return r->cpu_mem;
    case S_SELF_CPU_MEM:
        return r->self_cpu_mem;
    case S_DEV_MEM:
        return r->dev_mem;
    case S_SELF_DEV_MEM:
        return r->self_dev_mem;
    case S_COUNT:
        return (int64_t)r->calls;
    case S_PERF:
    case S_SELF_PERF:
        return sort_s->perf[(r->id * sort_s->np + sort_perf) * 2 + (sort_by == S_PERF)];
    default:
        return 0;
    }
}

/* Descending by the key (FLOPs compare as doubles), ascending by name for ties and for "name",
 * then by the grouping string, so that the order never depends on the file's order. */
static int compare_rows(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (sort_by == S_FLOPS && x->flops != y->flops) return x->flops > y->flops ? -1 : 1;
    if (sort_by != S_FLOPS && sort_by != S_NAME) {
        int64_t kx = key_of(x), ky = key_of(y);
        if (kx != ky) return kx > ky ? -1 : 1;
    }
    int c = strcmp(md_str(sort_s->m, x->name), md_str(sort_s->m, y->name));
    if (c) return c;
    c = strcmp(strobe__strtab_str(&sort_s->aux, x->aux), strobe__strtab_str(&sort_s->aux, y->aux));
    return c ? c : (x->cls > y->cls) - (x->cls < y->cls);
}

/* Sorts the table's rows by `key` (`perf`: the counter of S_PERF and S_SELF_PERF). */
static void sort_rows(summary *s, sort_key key, size_t perf) {
    sort_s = s;
    sort_by = key;
    sort_perf = perf;
    if (s->count > 1) qsort(s->rows, s->count, sizeof *s->rows, compare_rows);
}

/* ---- output ------------------------------------------------------------------------------- */

typedef enum col {
    C_NAME,
    C_SELF_PCT,
    C_SELF,
    C_TOTAL_PCT,
    C_TOTAL,
    C_AVG,
    C_SELF_DEV,
    C_SELF_DEV_PCT,
    C_DEV_TOTAL,
    C_DEV_AVG,
    C_CPU_MEM,
    C_SELF_CPU_MEM,
    C_DEV_MEM,
    C_SELF_DEV_MEM,
    C_CALLS,
    C_SHAPES,
    C_MODULE,
    C_SOURCE,
    C_FLOPS,
    C_NCOLS
} col;

/* Columns past C_NCOLS are the perf counters': C_NCOLS + 2 k is counter k's Self column,
 * C_NCOLS + 2 k + 1 its total. A column is therefore an int, not a col. */
#define PERF_COL(c) ((size_t)((c)-C_NCOLS) / 2)
#define PERF_TOTAL(c) (((c)-C_NCOLS) % 2)

static const char *const col_names[C_NCOLS] = {
    "Name",         "Self CPU %",       "Self CPU",        "CPU total %",   "CPU total",
    "CPU time avg", "Self CUDA",        "Self CUDA %",     "CUDA total",    "CUDA time avg",
    "CPU Mem",      "Self CPU Mem",     "CUDA Mem",        "Self CUDA Mem", "# of Calls",
    "Input Shapes", "Module Hierarchy", "Source Location", "Total FLOPs"};

/* The header of column c; the device columns' (named after the trace's device, as torch names
 * them: "Self CUDA", "XPU total", "Self MTIA Mem" ...) and the perf columns' ("Self task-clock",
 * "task-clock") are written into buf. */
static const char *col_name(const summary *s, int c, char *buf, size_t n) {
    if (c < C_NCOLS && strstr(col_names[c], "CUDA")) {
        const char *cuda = strstr(col_names[c], "CUDA");
        snprintf(buf, n, "%.*s%s%s", (int)(cuda - col_names[c]), col_names[c], s->dev_name,
                 cuda + 4);
        return buf;
    }
    if (c < C_NCOLS) return col_names[c];
    snprintf(buf, n, "%s%s", PERF_TOTAL(c) ? "" : "Self ",
             md_str(s->m, s->m->perf_names[PERF_COL(c)]));
    return buf;
}

/* Column c's perf value of row r. */
static int64_t perf_of(const summary *s, const row *r, int c) {
    return s->perf[(r->id * s->np + PERF_COL(c)) * 2 + (size_t)PERF_TOTAL(c)];
}

/* The columns shown, in torch's order, then the perf counters': those with no data are left
 * out. cols has room for C_NCOLS + 2 np. */
static size_t pick_columns(const summary *s, int *cols) {
    size_t n = 0;
    for (int c = 0; c < C_NCOLS; c++) {
        if (c >= C_SELF_DEV && c <= C_DEV_AVG && !s->has_dev) continue;
        if ((c == C_CPU_MEM || c == C_SELF_CPU_MEM) && !s->has_mem) continue;
        if ((c == C_DEV_MEM || c == C_SELF_DEV_MEM) && !s->has_dev_mem) continue;
        if (c == C_SHAPES && s->group != 1) continue;
        if (c == C_SOURCE && s->group != 2) continue;
        if (c == C_MODULE && s->group != 3) continue;
        if (c == C_FLOPS && !s->has_flops) continue;
        cols[n++] = c;
    }
    for (size_t k = 0; k < 2 * s->np; k++)
        cols[n++] = C_NCOLS + (int)k;
    return n;
}

/* torch's _auto_scale_flops on the smallest non-zero FLOPs: the scale and the header's prefix. */
static double flops_scale(const summary *s, const char **header) {
    static const char *const names[] = {"Total FLOPs",  "Total KFLOPs", "Total MFLOPs",
                                        "Total GFLOPs", "Total TFLOPs", "Total PFLOPs"};
    double lo = 0;
    for (size_t k = 0; k < s->count; k++)
        if (s->rows[k].flops > 0 && (lo == 0 || s->rows[k].flops < lo)) lo = s->rows[k].flops;
    double l = lo > 0 ? log10(lo) / 3.0 : 0;
    if (l < 0) l = 0;
    if (l > 5) l = 5;
    int e = (int)floor(l);
    *header = names[e];
    return pow(10.0, -3.0 * e);
}

/* Python's repr() is not needed: the text cell of one row and column. */
static void cell_text(const summary *s, const row *r, int c, double fscale, char *buf, size_t n) {
    double calls = r->calls ? (double)r->calls : 1.0;
    if (c >= C_NCOLS) {
        snprintf(buf, n, "%" PRId64, perf_of(s, r, c));
        return;
    }
    switch (c) {
    case C_SELF_PCT:
        strobe__fmt_share(buf, n, r->self_ns, s->self_total);
        break;
    case C_SELF:
        strobe__fmt_time_ns(buf, n, r->self_ns);
        break;
    case C_TOTAL_PCT:
        strobe__fmt_share(buf, n, r->total_ns, s->self_total);
        break;
    case C_TOTAL:
        strobe__fmt_time_ns(buf, n, r->total_ns);
        break;
    case C_AVG:
        strobe__fmt_time_us(buf, n, (double)r->total_ns / 1000.0 / calls);
        break;
    case C_SELF_DEV:
        strobe__fmt_time_ns(buf, n, r->self_dev);
        break;
    case C_SELF_DEV_PCT:
        strobe__fmt_share(buf, n, r->self_dev, s->self_dev_total);
        break;
    case C_DEV_TOTAL:
        strobe__fmt_time_ns(buf, n, r->total_dev);
        break;
    case C_DEV_AVG:
        strobe__fmt_time_us(buf, n, (double)r->total_dev / 1000.0 / calls);
        break;
    case C_CPU_MEM:
        strobe__fmt_memory(buf, n, r->cpu_mem);
        break;
    case C_SELF_CPU_MEM:
        strobe__fmt_memory(buf, n, r->self_cpu_mem);
        break;
    case C_DEV_MEM:
        strobe__fmt_memory(buf, n, r->dev_mem);
        break;
    case C_SELF_DEV_MEM:
        strobe__fmt_memory(buf, n, r->self_dev_mem);
        break;
    case C_CALLS:
        snprintf(buf, n, "%" PRIu64, r->calls);
        break;
    case C_FLOPS:
        if (r->flops <= 0)
            snprintf(buf, n, "--");
        else
            snprintf(buf, n, "%8.3f", r->flops * fscale);
        break;
    default:
        buf[0] = '\0';
        break;
    }
}

/* The frame at position k (0: innermost) of a ';'-joined stack key, into buf. */
static int stack_frame(const char *stack, size_t k, char *buf, size_t n) {
    const char *p = stack;
    for (size_t i = 0; i < k; i++) {
        p = strchr(p, ';');
        if (p == NULL) return 0;
        p++;
    }
    if (*p == '\0') return 0;
    size_t len = strcspn(p, ";");
    if (len >= n) len = n - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return 1;
}

static int print_table(const summary *s, size_t shown) {
    size_t max = C_NCOLS + 2 * s->np;
    int *cols = malloc(max * sizeof *cols);
    size_t *widths = malloc(max * sizeof *widths);
    if (cols == NULL || widths == NULL) {
        free(cols);
        free(widths);
        return STROBE_ENOMEM;
    }
    size_t nc = pick_columns(s, cols);
    const char *fheader = "Total FLOPs";
    double fscale = s->has_flops ? flops_scale(s, &fheader) : 1.0;
    size_t longest = 0, shapes = 0, src = 0;
    for (size_t k = 0; k < s->count; k++) {
        size_t len = strobe__utf8_len(cli_esc(md_str(s->m, s->rows[k].name)));
        if (len > longest) longest = len;
        const char *aux = cli_esc(strobe__strtab_str(&s->aux, s->rows[k].aux));
        if ((s->group == 1 || s->group == 3) && strobe__utf8_len(aux) > shapes)
            shapes = strobe__utf8_len(aux);
        char frame[1024];
        for (size_t f = 0; s->group == 2 && stack_frame(aux, f, frame, sizeof frame); f++)
            if (strobe__utf8_len(frame) > src) src = strobe__utf8_len(frame);
    }
    char head[1024];
    for (size_t c = 0; c < nc; c++) {
        widths[c] = STROBE__TABLE_COL_WIDTH;
        if (cols[c] == C_NAME)
            widths[c] = longest + 4 < s->name_width ? longest + 4 : s->name_width;
        if (cols[c] == C_SHAPES) widths[c] = shapes + 4 < 80 ? shapes + 4 : 80;
        if (cols[c] == C_SOURCE) widths[c] = src + 4 < 75 ? src + 4 : 75;
        /* Module paths are cut with "..." as names are; the header fits. */
        if (cols[c] == C_MODULE)
            widths[c] = shapes + 4 < 16 ? 16 : shapes + 4 < 80 ? shapes + 4 : 80;
        if (cols[c] >= C_NCOLS) {
            /* Counters can be long (cycles), and so can their names: both fit. */
            size_t w = strobe__utf8_len(cli_esc(col_name(s, cols[c], head, sizeof head)));
            for (size_t k = 0; k < shown; k++) {
                char num[32];
                size_t len =
                    (size_t)snprintf(num, sizeof num, "%" PRId64, perf_of(s, &s->rows[k], cols[c]));
                if (len > w) w = len;
            }
            if (w > widths[c]) widths[c] = w;
        }
    }
    FILE *out = stdout;
    strobe__table_separator(out, widths, nc);
    for (size_t c = 0; c < nc; c++) {
        const char *h = cols[c] == C_FLOPS ? fheader : col_name(s, cols[c], head, sizeof head);
        strobe__table_cell(out, cli_esc(h), widths[c], cols[c] == C_SOURCE, 0);
    }
    fputc('\n', out);
    strobe__table_separator(out, widths, nc);
    for (size_t k = 0; k < shown; k++) {
        const row *r = &s->rows[k];
        const char *aux = cli_esc(strobe__strtab_str(&s->aux, r->aux));
        char buf[1024];
        for (size_t c = 0; c < nc; c++) {
            switch (cols[c]) {
            case C_NAME:
                strobe__table_cell(out, cli_esc(md_str(s->m, r->name)), widths[c], 0,
                                   s->name_width - 3);
                break;
            case C_SHAPES:
                /* torch cuts the shapes to the column's width, without "...". */
                snprintf(buf, sizeof buf, "%s", aux);
                buf[strobe__utf8_prefix_bytes(buf, widths[c])] = '\0';
                strobe__table_cell(out, buf, widths[c], 0, 0);
                break;
            case C_SOURCE:
                if (!stack_frame(aux, 0, buf, sizeof buf)) buf[0] = '\0';
                strobe__table_cell(out, buf, widths[c], 1, widths[c] - 3);
                break;
            case C_MODULE:
                strobe__table_cell(out, aux, widths[c], 0, widths[c] - 3);
                break;
            default:
                cell_text(s, r, cols[c], fscale, buf, sizeof buf);
                strobe__table_cell(out, buf, widths[c], 0, 0);
            }
        }
        fputc('\n', out);
        /* torch prints the further frames of a stack group on lines of their own. */
        for (size_t f = 1; s->group == 2 && stack_frame(aux, f, buf, sizeof buf); f++) {
            for (size_t c = 0; c < nc; c++) {
                if (cols[c] == C_SOURCE)
                    strobe__table_cell(out, buf, widths[c], 1, widths[c] - 3);
                else
                    strobe__table_blank(out, widths[c]);
            }
            fputc('\n', out);
        }
    }
    strobe__table_separator(out, widths, nc);
    char t[64];
    strobe__fmt_time_ns(t, sizeof t, s->self_total);
    printf("Self CPU time total: %s\n", t);
    if (s->has_dev) {
        strobe__fmt_time_ns(t, sizeof t, s->self_dev_total);
        printf("Self %s time total: %s\n", s->dev_name, t);
    }
    free(cols);
    free(widths);
    return 0;
}

/* A raw value for CSV and JSON: microseconds, bytes, counts, percentages as numbers. */
static void put_raw(FILE *out, const summary *s, const row *r, int c, int json) {
    double pct_base = (double)s->self_total, dev_base = (double)s->self_dev_total;
    if (c >= C_NCOLS) {
        fprintf(out, "%" PRId64, perf_of(s, r, c));
        return;
    }
    switch (c) {
    case C_NAME:
        json ? cli_json_str(out, md_str(s->m, r->name)) : cli_csv_str(out, md_str(s->m, r->name));
        break;
    case C_SHAPES:
    case C_MODULE:
    case C_SOURCE:
        json ? cli_json_str(out, strobe__strtab_str(&s->aux, r->aux))
             : cli_csv_str(out, strobe__strtab_str(&s->aux, r->aux));
        break;
    case C_SELF_PCT:
        fprintf(out, "%.4f", pct_base ? (double)r->self_ns * 100.0 / pct_base : 0.0);
        break;
    case C_TOTAL_PCT:
        fprintf(out, "%.4f", pct_base ? (double)r->total_ns * 100.0 / pct_base : 0.0);
        break;
    case C_SELF_DEV_PCT:
        fprintf(out, "%.4f", dev_base ? (double)r->self_dev * 100.0 / dev_base : 0.0);
        break;
    case C_SELF:
        cli_put_us(out, r->self_ns);
        break;
    case C_TOTAL:
        cli_put_us(out, r->total_ns);
        break;
    case C_AVG:
        fprintf(out, "%.3f", r->calls ? (double)r->total_ns / 1000.0 / (double)r->calls : 0.0);
        break;
    case C_SELF_DEV:
        cli_put_us(out, r->self_dev);
        break;
    case C_DEV_TOTAL:
        cli_put_us(out, r->total_dev);
        break;
    case C_DEV_AVG:
        fprintf(out, "%.3f", r->calls ? (double)r->total_dev / 1000.0 / (double)r->calls : 0.0);
        break;
    case C_CPU_MEM:
        fprintf(out, "%" PRId64, r->cpu_mem);
        break;
    case C_SELF_CPU_MEM:
        fprintf(out, "%" PRId64, r->self_cpu_mem);
        break;
    case C_DEV_MEM:
        fprintf(out, "%" PRId64, r->dev_mem);
        break;
    case C_SELF_DEV_MEM:
        fprintf(out, "%" PRId64, r->self_dev_mem);
        break;
    case C_CALLS:
        fprintf(out, "%" PRIu64, r->calls);
        break;
    case C_FLOPS:
        fprintf(out, "%.17g", r->flops);
        break;
    default:
        break;
    }
}

static int print_machine(FILE *out, const summary *s, size_t shown, int json) {
    int *cols = malloc((C_NCOLS + 2 * s->np) * sizeof *cols);
    if (cols == NULL) return STROBE_ENOMEM;
    size_t nc = pick_columns(s, cols);
    char head[1024];
    if (!json) {
        for (size_t c = 0; c < nc; c++) {
            if (c) fputc(',', out);
            cli_csv_str(out, col_name(s, cols[c], head, sizeof head));
        }
        fputc('\n', out);
        for (size_t k = 0; k < shown; k++) {
            for (size_t c = 0; c < nc; c++) {
                if (c) fputc(',', out);
                put_raw(out, s, &s->rows[k], cols[c], 0);
            }
            fputc('\n', out);
        }
        free(cols);
        return 0;
    }
    fprintf(out, "{\"self_cpu_time_total_us\": ");
    cli_put_us(out, s->self_total);
    if (s->has_dev) {
        fprintf(out, ", \"self_cuda_time_total_us\": ");
        cli_put_us(out, s->self_dev_total);
        fprintf(out, ", \"device\": \"%s\"", s->dev_name);
    }
    fprintf(out, ",\n \"rows\": [");
    for (size_t k = 0; k < shown; k++) {
        fprintf(out, "%s\n  {", k ? "," : "");
        for (size_t c = 0; c < nc; c++) {
            if (c) fprintf(out, ", ");
            cli_json_str(out, col_name(s, cols[c], head, sizeof head));
            fprintf(out, ": ");
            put_raw(out, s, &s->rows[k], cols[c], 1);
        }
        fputc('}', out);
    }
    fprintf(out, "\n]}\n");
    free(cols);
    return 0;
}

/* ---- the command -------------------------------------------------------------------------- */

/* Says on stderr why the table is empty and what would fill it: `strobe record` of a program with
 * no annotations records no ranges, and a table with no rows and no word of why leaves a new user
 * with nothing to try. A trace of CPU samples is pointed at the commands that show them. */
static void say_empty(const char *path, const md_model *m) {
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path);
    uint64_t samples = 0;
    uint32_t sample_cat = UINT32_MAX, other_cat = UINT32_MAX;
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t cat = md_cat_of(m, i);
        if (cat == other_cat) continue;
        if (cat == sample_cat || strcmp(md_str(m, cat), "cpu_sample") == 0) {
            sample_cat = cat;
            samples++;
        } else {
            other_cat = cat;
        }
    }
    if (samples)
        fprintf(stderr,
                "strobe summary: %s: no operators, annotations or device work to tabulate; its "
                "%" PRIu64 " CPU sample(s) are shown by `strobe stacks --samples` and `strobe "
                "flamegraph --metric samples`\n",
                shown, samples);
    else
        fprintf(stderr,
                "strobe summary: %s: no operators, annotations or device work to tabulate; to "
                "record some, run `strobe record` with --sample (CPU call stacks), --heap "
                "(allocation sites), or --torch (PyTorch's operators), or annotate the program "
                "(strobe's ranges, or NVTX, which strobe record captures)\n",
                shown);
}

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("summary", msg, arg);
}

/* The counter that --sort perf:NAME names, known only once the trace is read. @return its index,
 * or -1 after the usage error, which lists the trace's counters. */
static int64_t perf_sort_index(const md_model *m, const char *name) {
    for (size_t k = 0; k < m->perf_count; k++)
        if (strcmp(md_str(m, m->perf_names[k]), name) == 0) return (int64_t)k;
    char msg[1024];
    int len = snprintf(msg, sizeof msg, "--sort: the trace has no perf counter \"%s\" (%s", name,
                       m->perf_count ? "it has" : "it has none: no \"strobe_perf_events\"");
    for (size_t k = 0; k < m->perf_count && len > 0 && (size_t)len < sizeof msg; k++)
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", k ? ", " : " ",
                        md_str(m, m->perf_names[k]));
    if (len > 0 && (size_t)len < sizeof msg - 1) snprintf(msg + len, sizeof msg - (size_t)len, ")");
    usage_error(msg, NULL);
    return -1;
}

/* --tensor-cores: the TensorBoard plugin's operator view (tb.h). */
static int tensor_cores_run(const char *path, int quiet, size_t limit, int format,
                            size_t name_width) {
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "summary", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("summary", path, m);
        int work = cli_tb_op_table(stdout, m, limit, format, name_width) != 0 ? STROBE_ENOMEM : 0;
        rc = cli_finish("summary", path, work, CLI_OK);
        md_free(m);
    }
    free(m);
    return rc;
}

const struct option cmd_summary_options[] = {
    {"sort", required_argument, NULL, 's'},
    {"limit", required_argument, NULL, 'n'},
    {"group-by", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"tensor-cores", no_argument, NULL, CLI_LONG_ONLY + 32},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_NAME_WIDTH,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_summary(int argc, char **argv) {
    const char *path = NULL, *perf_name = NULL;
    sort_key key = S_CPU_TOTAL;
    size_t limit = 0, name_width = CLI_NAME_WIDTH_DEFAULT;
    int format = CLI_TABLE, group = 0, stack_n = 5, quiet = 0, first = 0, tensor_cores = 0;
    for (int c; (c = cli_getopt(argc, argv, ":s:n:f:qhV", cmd_summary_options, &first)) != -1;) {
        const char *v = optarg;
        unsigned long long n;
        switch (c) {
        case 'h':
            return cli_help(cmd_summary_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 's': {
            size_t k = 0, count = sizeof sort_names / sizeof sort_names[0];
            char norm[64];
            device_sort_key(v, norm, sizeof norm);
            while (k < count && strcmp(sort_names[k].name, norm) != 0)
                k++;
            perf_name = NULL;
            if (k < count) {
                key = sort_names[k].key;
            } else if (strncmp(v, "perf:", 5) == 0 || strncmp(v, "self_perf:", 10) == 0) {
                key = v[0] == 'p' ? S_PERF : S_SELF_PERF;
                perf_name = strchr(v, ':') + 1;
                if (*perf_name == '\0') return usage_error("no perf counter named in --sort", v);
            } else {
                return usage_error("unknown sort key", v);
            }
            break;
        }
        case 'n':
            if (cli_parse_count("summary", "--limit", v, SIZE_MAX, &n) != 0) return CLI_BAD_INPUT;
            limit = (size_t)n;
            break;
        case CLI_LONG_ONLY + 1:
            if (strcmp(v, "name") == 0)
                group = 0;
            else if (strcmp(v, "shape") == 0)
                group = 1;
            else if (strcmp(v, "module") == 0)
                group = 3;
            else if (strncmp(v, "stack", 5) == 0 && (v[5] == '\0' || v[5] == ':')) {
                group = 2;
                if (v[5] == ':') {
                    char *end;
                    long sn = strtol(v + 6, &end, 10);
                    if (v[6] == '\0' || *end != '\0' || sn < 1 || sn > 1000)
                        return usage_error("bad --group-by stack:N", v);
                    stack_n = (int)sn;
                }
            } else {
                return usage_error("unknown --group-by", v);
            }
            break;
        case 'f':
            format = cli_parse_format(v);
            if (format < 0) return usage_error("unknown --format", v);
            break;
        case CLI_OPT_NAME_WIDTH:
            if (cli_parse_name_width("summary", v, &name_width) != 0) return CLI_BAD_INPUT;
            break;
        case CLI_LONG_ONLY + 32:
            tensor_cores = 1;
            break;
        default:
            return cli_option_error("summary", c, argv, cmd_summary_options);
        }
    }
    if (cli_trace_operand("summary", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    if (tensor_cores) return tensor_cores_run(path, quiet, limit, format, name_width);

    summary *s = calloc(1, sizeof *s);
    if (s == NULL) return usage_error("out of memory", NULL);
    s->m = &s->model;
    s->group = group;
    s->stack_n = stack_n;
    s->name_width = name_width;
    strobe__strtab_init(&s->aux, &s->pool);
    int rc = cli_load(s->m, "summary", path, quiet);
    int64_t pk = rc == CLI_OK && perf_name ? perf_sort_index(s->m, perf_name) : 0;
    if (pk < 0) {
        md_free(s->m);
        rc = CLI_BAD_INPUT;
    } else if (rc == CLI_OK) {
        cli_say_skipped("summary", path, s->m);
        int work = build(s) != 0 ? STROBE_ENOMEM : 0;
        if (work == 0) {
            sort_rows(s, key, (size_t)pk);
            size_t shown = limit == 0 || limit > s->count ? s->count : limit;
            /* strobe record --heap's allocation sites follow the table; a trace of them alone
             * (no operators) prints them instead of an empty table. */
            md_heap heap;
            int has_heap = format == CLI_TABLE && md_heap_read(s->m->heap_json, &heap) == 0;
            if (format == CLI_TABLE && !(has_heap && s->count == 0)) work = print_table(s, shown);
            if (has_heap) {
                if (s->count) fputc('\n', stdout);
                cli_heap_print(stdout, &heap, limit ? limit : 10, 6);
                md_heap_free(&heap);
            }
            if (format != CLI_TABLE) work = print_machine(stdout, s, shown, format == CLI_JSON);
            /* After the table, so that the hint is the last thing on a terminal. */
            if (work == 0 && s->count == 0 && s->m->heap_json == NULL) {
                fflush(stdout);
                say_empty(path, s->m);
            }
        }
        rc = cli_finish("summary", path, work, CLI_OK);
        md_free(s->m);
    }
    summary_free(s);
    return rc;
}

/* ---- for the report ----------------------------------------------------------------------- */

int cli_summary_json(FILE *out, md_model *m, size_t limit, size_t *rows) {
    summary *s = calloc(1, sizeof *s);
    if (s == NULL) return STROBE_ENOMEM;
    s->m = m;
    s->name_width = CLI_NAME_WIDTH_DEFAULT;
    strobe__strtab_init(&s->aux, &s->pool);
    int work = build(s) != 0 ? STROBE_ENOMEM : 0;
    if (work == 0) {
        sort_rows(s, S_CPU_TOTAL, 0);
        *rows = s->count;
        work = print_machine(out, s, limit == 0 || limit > s->count ? s->count : limit, 1);
    }
    summary_free(s);
    return work;
}
