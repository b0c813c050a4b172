/* summary.c: the per-operator table of torch's key_averages().table(), built from a result.
 *
 * Contents:
 *   name table   operator name to row, through the core's string table (strtab.h), fronted by
 *                a small cache keyed by the name's address
 *   sorting      the four sort keys, ties broken by name
 *   building     one sequential pass over the events (strobe_summary_create)
 *   printing     torch's _build_table, CPU columns only (formatting shared: util/table.h)
 *
 * A result can hold ten million events (a gigabyte of strobe_event), so building the table reads
 * the event array once, front to back, and does O(1) work per event. */
#include "strobe/summary.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/result_internal.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "util/table.h"
#include "strobe/error.h"

struct strobe_summary {
    strobe_summary_row *rows; /* malloc'ed, sorted by the key given to create */
    size_t count;
    int64_t self_total_ns;
    strobe__pool pool; /* owns every row name */
};

/* ---- Name table ----------------------------------------------------------------------------- */

/* Names reach the summary either as pointers to static call-site strings or as strings interned
 * by the core, so most events of one operator share a single address. A direct-mapped cache from
 * address to row answers those without hashing the string; a miss (a name seen at a new address)
 * falls back to the string hash table and refreshes the cache entry. The cache stays small and
 * fixed, so a result whose every event has its own copy of the name costs no extra memory. */
#define PTR_CACHE_SLOTS 1024u

typedef struct ptr_cache_entry {
    const char *ptr;
    uint32_t row;
} ptr_cache_entry;

typedef struct name_table {
    strobe__strtab names;     /* name -> row: a row's index is its name's id */
    strobe_summary_row *rows; /* per id; handed to the summary when built */
    size_t row_count, row_cap;
    ptr_cache_entry cache[PTR_CACHE_SLOTS];
} name_table;

static size_t ptr_cache_index(const char *p) {
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 54) & (PTR_CACHE_SLOTS - 1u);
}

static int table_init(name_table *t, strobe__pool *pool) {
    memset(t, 0, sizeof *t);
    strobe__strtab_init(&t->names, pool);
    return 0;
}

/* Frees the table's own arrays. The rows are handed to the summary, or freed by the caller. */
static void table_release(name_table *t) {
    strobe__strtab_release(&t->names);
}

/* Finds the row of `name`, adding an empty one the first time the name is seen. */
static int table_lookup(name_table *t, const char *name, uint32_t *row_out) {
    ptr_cache_entry *c = &t->cache[ptr_cache_index(name)];
    if (c->ptr == name) {
        *row_out = c->row;
        return 0;
    }
    int64_t id = strobe__strtab_intern(&t->names, name, strlen(name));
    if (id < 0) return (int)id;
    if ((size_t)id == t->row_count) { /* a new name: a new, empty row */
        if (t->row_count == t->row_cap) {
            size_t cap = t->row_cap ? t->row_cap * 2 : 64;
            strobe_summary_row *rows = realloc(t->rows, cap * sizeof *rows);
            if (rows == NULL) return STROBE_ENOMEM;
            t->rows = rows;
            t->row_cap = cap;
        }
        strobe_summary_row *rw = &t->rows[t->row_count++];
        memset(rw, 0, sizeof *rw);
        rw->name = strobe__strtab_str(&t->names, (uint32_t)id);
    }
    c->ptr = name;
    c->row = (uint32_t)id;
    *row_out = (uint32_t)id;
    return 0;
}

/* ---- Sorting -------------------------------------------------------------------------------- */

/* Equal keys fall back to the name, so that the order never depends on the events' order. */
static int compare_name(const void *a, const void *b) {
    const strobe_summary_row *x = a, *y = b;
    return strcmp(x->name, y->name);
}

#define DESCENDING(field)                                                                          \
    do {                                                                                           \
        const strobe_summary_row *x = a, *y = b;                                                   \
        if (x->field != y->field) return x->field > y->field ? -1 : 1;                             \
        return strcmp(x->name, y->name);                                                           \
    } while (0)

static int compare_cpu_total(const void *a, const void *b) {
    DESCENDING(total_ns);
}
static int compare_self_cpu(const void *a, const void *b) {
    DESCENDING(self_ns);
}
static int compare_calls(const void *a, const void *b) {
    DESCENDING(calls);
}

#undef DESCENDING

/* ---- Building ------------------------------------------------------------------------------- */

/* The table has CPU columns only: device work (kernels, copies, device annotations) takes no
 * CPU time, and torch shows it in device columns that this table does not have. */
static int is_cpu_range(const strobe_event *e) {
    return e->kind == STROBE_EVENT_RANGE && e->device_type == STROBE_DEVICE_CPU;
}

/* An event's row name: torch's key_averages() counts every "ProfilerStep#N" as one
 * "ProfilerStep*" row (profiler_util.py's _rewrite_name with its wildcard). */
static const char *event_name(const strobe_event *e) {
    if (e->name == NULL) return "";
    return strncmp(e->name, "ProfilerStep#", 13) == 0 ? "ProfilerStep*" : e->name;
}

/* The part of e's time inside p's. */
static int64_t part_inside(const strobe_event *e, const strobe_event *p) {
    int64_t lo = e->start_ns > p->start_ns ? e->start_ns : p->start_ns;
    int64_t hi = e->end_ns < p->end_ns ? e->end_ns : p->end_ns;
    return hi > lo ? hi - lo : 0;
}

/* The rows of the ranges currently open at each depth of the thread being scanned. Events come
 * sorted by start with parents before children, so an event's parent is almost always the last
 * range seen one level up: remembering it saves a hash lookup per event. Deeper levels, or an
 * order the stack does not predict, fall back to looking the parent's name up. */
#define DEPTH_STACK 256u

int strobe_summary_create(const strobe_result *r, strobe_sort_key sort, strobe_summary **out) {
    if (out) *out = NULL;
    if (r == NULL || out == NULL) return STROBE_EINVAL;
    int (*compare)(const void *, const void *);
    switch (sort) {
    case STROBE_SORT_CPU_TOTAL:
        compare = compare_cpu_total;
        break;
    case STROBE_SORT_SELF_CPU:
        compare = compare_self_cpu;
        break;
    case STROBE_SORT_CALLS:
        compare = compare_calls;
        break;
    case STROBE_SORT_NAME:
        compare = compare_name;
        break;
    default:
        return STROBE_EINVAL;
    }
    if (r->event_count > 0 && r->events == NULL) return STROBE_EINVAL;

    strobe_summary *s = calloc(1, sizeof *s);
    if (s == NULL) return STROBE_ENOMEM;
    name_table t;
    int err = table_init(&t, &s->pool);
    if (err) goto fail;

    uint32_t stack_event[DEPTH_STACK], stack_row[DEPTH_STACK];
    for (size_t d = 0; d < DEPTH_STACK; d++) {
        stack_event[d] = STROBE_NO_EVENT;
        stack_row[d] = 0;
    }

    const strobe_event *ev = r->events;
    const size_t n = r->event_count;
    for (size_t i = 0; i < n; i++) {
        const strobe_event *e = &ev[i];
        if (!is_cpu_range(e)) continue;
        uint32_t row;
        err = table_lookup(&t, event_name(e), &row);
        if (err) goto fail;
        int64_t dur = strobe_event_dur_ns(e);
        strobe_summary_row *rw = &t.rows[row];
        rw->calls++;
        rw->total_ns += dur;
        rw->self_ns += dur;

        /* A range's self time is its duration less its direct children's: charge this range's
         * duration against its parent's row rather than walking each parent's child list, so the
         * event array is read once, in order. A child that overlaps its parent without nesting
         * in it (a backend event's times come from elsewhere) counts only for its part inside,
         * so that no self time is negative. */
        uint32_t p = e->parent;
        if (p != STROBE_NO_EVENT && (size_t)p < n) {
            uint32_t d = e->depth;
            int64_t inside = part_inside(e, &ev[p]);
            if (d >= 1 && d - 1 < DEPTH_STACK && stack_event[d - 1] == p) {
                t.rows[stack_row[d - 1]].self_ns -= inside;
            } else if (is_cpu_range(&ev[p])) {
                uint32_t prow;
                err = table_lookup(&t, event_name(&ev[p]), &prow);
                if (err) goto fail;
                t.rows[prow].self_ns -= inside;
            }
        }
        if (e->depth < DEPTH_STACK) {
            stack_event[e->depth] = (uint32_t)i;
            stack_row[e->depth] = row;
        }
    }

    s->rows = t.rows;
    s->count = t.row_count;
    t.rows = NULL;
    table_release(&t);
    for (size_t k = 0; k < s->count; k++)
        s->self_total_ns += s->rows[k].self_ns;
    if (s->count > 1) qsort(s->rows, s->count, sizeof *s->rows, compare);
    *out = s;
    return 0;

fail:
    free(t.rows);
    table_release(&t);
    strobe__pool_release(&s->pool);
    free(s);
    return err;
}

/* ---- Accessors ------------------------------------------------------------------------------ */

size_t strobe_summary_row_count(const strobe_summary *s) {
    return s ? s->count : 0;
}

const strobe_summary_row *strobe_summary_rows(const strobe_summary *s) {
    return s ? s->rows : NULL;
}

int64_t strobe_summary_self_total_ns(const strobe_summary *s) {
    return s ? s->self_total_ns : 0;
}

void strobe_summary_free(strobe_summary *s) {
    if (s == NULL) return;
    free(s->rows);
    strobe__pool_release(&s->pool);
    free(s);
}

/* ---- Printing ------------------------------------------------------------------------------- */

/* torch's layout (src/util/table.h): numeric columns are 12 wide, and the name column is as wide
 * as the longest name plus 4, at most 55. Names of 52 characters or more are cut to 52 and get
 * "...". */
#define NCOLS 7

int strobe_summary_print(const strobe_summary *s, FILE *out, size_t limit) {
    if (s == NULL || out == NULL) return STROBE_EINVAL;

    size_t longest = 0;
    for (size_t i = 0; i < s->count; i++) {
        size_t len = strobe__utf8_len(s->rows[i].name);
        if (len > longest) longest = len;
    }
    size_t name_width = longest + 4 < STROBE__TABLE_NAME_MAX ? longest + 4 : STROBE__TABLE_NAME_MAX;
    size_t widths[NCOLS] = {name_width};
    for (int c = 1; c < NCOLS; c++)
        widths[c] = STROBE__TABLE_COL_WIDTH;

    static const char *const headers[NCOLS] = {
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"};
    strobe__table_separator(out, widths, NCOLS);
    for (int c = 0; c < NCOLS; c++)
        strobe__table_cell(out, headers[c], widths[c], 0, 0);
    fputc('\n', out);
    strobe__table_separator(out, widths, NCOLS);

    size_t shown = limit == 0 || limit > s->count ? s->count : limit;
    for (size_t i = 0; i < shown; i++) {
        const strobe_summary_row *row = &s->rows[i];
        char cell[NCOLS - 1][32];
        strobe__fmt_share(cell[0], sizeof cell[0], row->self_ns, s->self_total_ns);
        strobe__fmt_time_ns(cell[1], sizeof cell[1], row->self_ns);
        strobe__fmt_share(cell[2], sizeof cell[2], row->total_ns, s->self_total_ns);
        strobe__fmt_time_ns(cell[3], sizeof cell[3], row->total_ns);
        /* torch's "CPU time avg" divides the total in microseconds by the calls. */
        strobe__fmt_time_us(cell[4], sizeof cell[4],
                            row->calls ? (double)row->total_ns / 1000.0 / (double)row->calls : 0.0);
        snprintf(cell[5], sizeof cell[5], "%" PRIu64, row->calls);
        strobe__table_cell(out, row->name, name_width, 0, STROBE__TABLE_NAME_MAX - 3);
        for (int c = 1; c < NCOLS; c++)
            strobe__table_cell(out, cell[c - 1], widths[c], 0, 0);
        fputc('\n', out);
    }

    strobe__table_separator(out, widths, NCOLS);
    char total[32];
    strobe__fmt_time_ns(total, sizeof total, s->self_total_ns);
    fprintf(out, "Self CPU time total: %s\n", total);
    return ferror(out) ? STROBE_EIO : 0;
}
