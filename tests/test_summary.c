/* test_summary.c: the per-operator summary table (src/analysis/summary.c).
 *
 * Results are built by hand from (name, start, end, parent, thread, kind) tuples, so every
 * expected number below is worked out in a comment from the tuples. Times are in ns, offset by an
 * epoch-sized base so that the arithmetic runs on realistic magnitudes.
 *
 * Contents: the result builder, nesting and siblings, sort orders, recursion, two threads, deep
 * nesting, unfinished ranges, ignored kinds, name ownership and grouping, many names, printing
 * (exact lines: table, limit, empty result, time and percentage formats, long and UTF-8 names),
 * and argument checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace/result_internal.h"
#include "strobe/strobe.h"

/* ---- Building results ----------------------------------------------------------------------- */

#define BASE_NS INT64_C(1700000000000000000)

typedef struct spec {
    const char *name;
    int64_t start, end; /* ns from BASE_NS; end is ignored for instants and counters */
    int parent;         /* index of the parent in the same array, -1 for a root */
    int thread;         /* thread number; specs must be grouped by thread */
    int kind;           /* strobe_event_kind */
} spec;

#define RANGE(name, start, end, parent, thread)                                                    \
    { (name), (start), (end), (parent), (thread), STROBE_EVENT_RANGE }

/* Builds a result whose events are the specs in order, with the tree links, depths and thread
 * table that the core would produce: children linked in order through first_child and
 * next_sibling, roots of a thread linked as siblings, counters outside the tree. */
static strobe_result *build(const spec *sp, size_t n) {
    strobe_result *r = strobe__result_alloc();
    REQUIRE(r != NULL);
    REQUIRE(strobe__result_alloc_events(r, n) == 0);
    size_t nthreads = 0;
    for (size_t i = 0; i < n; i++) {
        REQUIRE(i == 0 || sp[i].thread >= sp[i - 1].thread);
        if ((size_t)sp[i].thread + 1 > nthreads) nthreads = (size_t)sp[i].thread + 1;
    }
    r->threads = calloc(nthreads ? nthreads : 1, sizeof *r->threads);
    REQUIRE(r->threads != NULL);
    r->thread_count = nthreads;
    for (size_t t = 0; t < nthreads; t++) {
        r->threads[t].tid = 100 + (int64_t)t;
        r->threads[t].name = "";
    }

    uint32_t *last_child = malloc((n ? n : 1) * sizeof *last_child);
    REQUIRE(last_child != NULL);
    uint32_t last_root = STROBE_NO_EVENT;
    int64_t end_max = 0;
    for (size_t i = 0; i < n; i++) {
        strobe_event *e = &r->events[i];
        int t = sp[i].thread;
        strobe_thread_info *ti = &r->threads[t];
        if (ti->event_count == 0) {
            ti->first_event = i;
            last_root = STROBE_NO_EVENT;
        }
        ti->event_count++;
        e->name = sp[i].name;
        e->kind = (uint8_t)sp[i].kind;
        e->start_ns = BASE_NS + sp[i].start;
        e->end_ns = sp[i].kind == STROBE_EVENT_RANGE ? BASE_NS + sp[i].end : e->start_ns;
        e->category = sp[i].kind == STROBE_EVENT_RANGE ? "cpu_op" : "cpu_instant_event";
        e->tid = ti->tid;
        e->thread_index = (uint32_t)t;
        e->device_type = STROBE_DEVICE_CPU;
        e->device_index = -1;
        e->parent = e->first_child = e->next_sibling = STROBE_NO_EVENT;
        last_child[i] = STROBE_NO_EVENT;
        if (e->end_ns - BASE_NS > end_max) end_max = e->end_ns - BASE_NS;
        if (sp[i].kind == STROBE_EVENT_COUNTER) continue;
        if (sp[i].parent < 0) {
            e->depth = 0;
            if (last_root != STROBE_NO_EVENT) r->events[last_root].next_sibling = (uint32_t)i;
            last_root = (uint32_t)i;
            continue;
        }
        size_t p = (size_t)sp[i].parent;
        REQUIRE(p < i && sp[p].thread == t && sp[p].kind != STROBE_EVENT_COUNTER);
        strobe_event *pe = &r->events[p];
        e->parent = (uint32_t)p;
        e->depth = pe->depth + 1;
        if (pe->first_child == STROBE_NO_EVENT)
            pe->first_child = (uint32_t)i;
        else
            r->events[last_child[p]].next_sibling = (uint32_t)i;
        last_child[p] = (uint32_t)i;
    }
    free(last_child);
    r->trace_start_ns = BASE_NS;
    r->trace_end_ns = BASE_NS + end_max;
    return r;
}

static strobe_summary *summarize(const strobe_result *r, strobe_sort_key key) {
    strobe_summary *s = NULL;
    int err = strobe_summary_create(r, key, &s);
    CHECK_EQ(err, 0);
    REQUIRE(s != NULL);
    return s;
}

/* The row named `name`, or NULL. */
static const strobe_summary_row *find_row(const strobe_summary *s, const char *name) {
    const strobe_summary_row *rows = strobe_summary_rows(s);
    for (size_t i = 0; i < strobe_summary_row_count(s); i++)
        if (strcmp(rows[i].name, name) == 0) return &rows[i];
    return NULL;
}

#define CHECK_ROW(s, nm, calls_, self_, total_)                                                    \
    do {                                                                                           \
        const strobe_summary_row *row_ = find_row((s), (nm));                                      \
        CHECK(row_ != NULL);                                                                       \
        if (row_) {                                                                                \
            CHECK_EQ(row_->calls, (calls_));                                                       \
            CHECK_EQ(row_->self_ns, (self_));                                                      \
            CHECK_EQ(row_->total_ns, (total_));                                                    \
        }                                                                                          \
    } while (0)

/* The table as printed, in a malloc'ed string. */
static char *print_table(const strobe_summary *s, size_t limit) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f != NULL);
    CHECK_EQ(strobe_summary_print(s, f, limit), 0);
    REQUIRE(fclose(f) == 0);
    return buf;
}

/* Checks the row order against a list of names. */
static void check_order(const strobe_summary *s, const char *const *names, size_t n) {
    CHECK_EQ(strobe_summary_row_count(s), n);
    const strobe_summary_row *rows = strobe_summary_rows(s);
    for (size_t i = 0; i < n && i < strobe_summary_row_count(s); i++)
        CHECK_STR(rows[i].name, names[i]);
}

/* ---- Nesting, siblings, sort orders --------------------------------------------------------- */

/* One thread:
 *   forward     [0, 100000)          100 us
 *     aten::mm    [10000, 40000)      30 us
 *       aten::fill_ [15000, 20000)     5 us
 *     aten::add   [40000, 50000)      10 us
 *     aten::mm    [60000, 90000)      30 us
 * forward: 1 call, total 100000, self 100000 - (30000 + 10000 + 30000) = 30000.
 * aten::mm: 2 calls, total 60000, self 60000 - 5000 = 55000 (avg 30000).
 * aten::add: 1 call, total = self = 10000. aten::fill_: 1 call, total = self = 5000.
 * Self CPU time total: 30000 + 55000 + 10000 + 5000 = 100000, the root's duration. */
static const spec nested[] = {
    RANGE("forward", 0, 100000, -1, 0),       RANGE("aten::mm", 10000, 40000, 0, 0),
    RANGE("aten::fill_", 15000, 20000, 1, 0), RANGE("aten::add", 40000, 50000, 0, 0),
    RANGE("aten::mm", 60000, 90000, 0, 0),
};

/* The table of `nested` sorted by CPU total. Name width: "aten::fill_" is 11 characters, + 4 =
 * 15. Percentages are of 100000 ns: forward self 30.00%, total 100.00%; aten::mm self 55.00%,
 * total 60.00%. Every line, as in torch, ends with the two spaces that follow each column. */
#define SEP15                                                                                      \
    "---------------  ------------  ------------  ------------  ------------  ------------  "      \
    "------------  \n"
#define HEAD15                                                                                     \
    "           Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg  "      \
    "  # of Calls  \n"
#define ROW_FORWARD                                                                                \
    "        forward        30.00%      30.000us       100.00%     100.000us     100.000us  "      \
    "           1  \n"
#define ROW_MM                                                                                     \
    "       aten::mm        55.00%      55.000us        60.00%      60.000us      30.000us  "      \
    "           2  \n"
#define ROW_ADD                                                                                    \
    "      aten::add        10.00%      10.000us        10.00%      10.000us      10.000us  "      \
    "           1  \n"
#define ROW_FILL                                                                                   \
    "    aten::fill_         5.00%       5.000us         5.00%       5.000us       5.000us  "      \
    "           1  \n"

static void test_nesting_and_sort(void) {
    strobe_result *r = build(nested, sizeof nested / sizeof nested[0]);

    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_ROW(s, "forward", 1, 30000, 100000);
    CHECK_ROW(s, "aten::mm", 2, 55000, 60000);
    CHECK_ROW(s, "aten::add", 1, 10000, 10000);
    CHECK_ROW(s, "aten::fill_", 1, 5000, 5000);
    CHECK_EQ(strobe_summary_self_total_ns(s), 100000);
    /* CPU total, descending: 100000, 60000, 10000, 5000. */
    static const char *const by_total[] = {"forward", "aten::mm", "aten::add", "aten::fill_"};
    check_order(s, by_total, 4);

    char *text = print_table(s, 0);
    CHECK_STR(text, SEP15 HEAD15 SEP15 ROW_FORWARD ROW_MM ROW_ADD ROW_FILL SEP15
              "Self CPU time total: 100.000us\n");
    free(text);

    /* A limit shows the first rows only; the name column is still sized over every row (as
     * torch sizes it over every event) and the footer still sums every row. */
    text = print_table(s, 2);
    CHECK_STR(text, SEP15 HEAD15 SEP15 ROW_FORWARD ROW_MM SEP15 "Self CPU time total: 100.000us\n");
    free(text);
    /* A limit above the row count shows them all. */
    text = print_table(s, 99);
    CHECK_STR(text, SEP15 HEAD15 SEP15 ROW_FORWARD ROW_MM ROW_ADD ROW_FILL SEP15
              "Self CPU time total: 100.000us\n");
    free(text);
    strobe_summary_free(s);

    /* Self CPU, descending: 55000, 30000, 10000, 5000. */
    s = summarize(r, STROBE_SORT_SELF_CPU);
    static const char *const by_self[] = {"aten::mm", "forward", "aten::add", "aten::fill_"};
    check_order(s, by_self, 4);
    strobe_summary_free(s);

    /* Calls, descending: aten::mm (2), then three rows of 1 call in name order. */
    s = summarize(r, STROBE_SORT_CALLS);
    static const char *const by_calls[] = {"aten::mm", "aten::add", "aten::fill_", "forward"};
    check_order(s, by_calls, 4);
    strobe_summary_free(s);

    /* Name, ascending (bytewise: "aten::..." sorts before "forward"). */
    s = summarize(r, STROBE_SORT_NAME);
    static const char *const by_name[] = {"aten::add", "aten::fill_", "aten::mm", "forward"};
    check_order(s, by_name, 4);
    strobe_summary_free(s);

    strobe_result_free(r);
}

/* Equal keys are ordered by name whatever the events' order: three roots of 10 us each, given
 * in the order c, a, b, sort as a, b, c under every descending key. */
static void test_ties(void) {
    static const spec sp[] = {
        RANGE("c", 0, 10000, -1, 0),
        RANGE("a", 20000, 30000, -1, 0),
        RANGE("b", 40000, 50000, -1, 0),
    };
    strobe_result *r = build(sp, 3);
    static const char *const abc[] = {"a", "b", "c"};
    for (int key = STROBE_SORT_CPU_TOTAL; key <= STROBE_SORT_NAME; key++) {
        strobe_summary *s = summarize(r, (strobe_sort_key)key);
        check_order(s, abc, 3);
        strobe_summary_free(s);
    }
    strobe_result_free(r);
}

/* ---- Recursion, threads, depth -------------------------------------------------------------- */

/*   f [0, 100)
 *     f [10, 60)
 *       g [20, 40)
 * f: 2 calls; total counts both levels, 100 + 50 = 150 (as torch does); self (100 - 50) +
 * (50 - 20) = 80. g: 1 call, total = self = 20. Self total 100, so f's CPU total is 150.00%. */
static void test_recursion(void) {
    static const spec sp[] = {
        RANGE("f", 0, 100, -1, 0),
        RANGE("f", 10, 60, 0, 0),
        RANGE("g", 20, 40, 1, 0),
    };
    strobe_result *r = build(sp, 3);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_EQ(strobe_summary_row_count(s), 2);
    CHECK_ROW(s, "f", 2, 80, 150);
    CHECK_ROW(s, "g", 1, 20, 20);
    CHECK_EQ(strobe_summary_self_total_ns(s), 100);
    char *text = print_table(s, 0);
    /* Name width 1 + 4 = 5. f: self 80/100 = 80.00%, 0.080us; total 150/100 = 150.00%,
     * 0.150us; avg 150/2 = 75 ns = 0.075us. */
    CHECK_STR(text, "-----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    " Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg  "
                    "  # of Calls  \n"
                    "-----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    "    f        80.00%       0.080us       150.00%       0.150us       0.075us  "
                    "           2  \n"
                    "    g        20.00%       0.020us        20.00%       0.020us       0.020us  "
                    "           1  \n"
                    "-----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    "Self CPU time total: 0.100us\n");
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* A child that ends after its parent (a backend event's times come from elsewhere): step
 * [0, 100) with mm [10, 95) and allgather [95, 200) as children. allgather counts for its part
 * inside, 5: step's self is 100 - 85 - 5 = 10, never 100 - 85 - 105 < 0. Self total 10 + 85 +
 * 105 = 200. */
static void test_overlapping_child(void) {
    static const spec sp[] = {
        RANGE("step", 0, 100, -1, 0),
        RANGE("mm", 10, 95, 0, 0),
        RANGE("allgather", 95, 200, 0, 0),
    };
    strobe_result *r = build(sp, 3);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_ROW(s, "step", 1, 10, 100);
    CHECK_ROW(s, "mm", 1, 85, 85);
    CHECK_ROW(s, "allgather", 1, 105, 105);
    CHECK_EQ(strobe_summary_self_total_ns(s), 200);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* Thread 0: step [0, 1000) with aten::mm [100, 600) inside. Thread 1: aten::mm [50, 350) and
 * aten::relu [400, 500), both roots. A child on one thread never reduces a range on another:
 * step: 1 call, total 1000, self 1000 - 500 = 500. aten::mm: 2 calls, total = self = 500 + 300
 * = 800. aten::relu: total = self = 100. Self total 1400. */
static void test_two_threads(void) {
    static const spec sp[] = {
        RANGE("step", 0, 1000, -1, 0),
        RANGE("aten::mm", 100, 600, 0, 0),
        RANGE("aten::mm", 50, 350, -1, 1),
        RANGE("aten::relu", 400, 500, -1, 1),
    };
    strobe_result *r = build(sp, 4);
    strobe_summary *s = summarize(r, STROBE_SORT_SELF_CPU);
    CHECK_ROW(s, "step", 1, 500, 1000);
    CHECK_ROW(s, "aten::mm", 2, 800, 800);
    CHECK_ROW(s, "aten::relu", 1, 100, 100);
    CHECK_EQ(strobe_summary_self_total_ns(s), 1400);
    static const char *const by_self[] = {"aten::mm", "step", "aten::relu"};
    check_order(s, by_self, 3);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* A chain of 300 nested ranges, deeper than the summary's per-depth cache (256), alternating
 * names a (even k) and b (odd k): range k is [10k, 10000 - 10k), so its duration is 10000 - 20k
 * and every range but the innermost has self 20. The innermost (k = 299, b) has self
 * 10000 - 5980 = 4020.
 *   a: 150 calls, self 150 * 20 = 3000, total sum over even k of (10000 - 20k)
 *      = 1500000 - 20 * (0 + 2 + ... + 298) = 1500000 - 20 * 22350 = 1053000.
 *   b: 150 calls, self 149 * 20 + 4020 = 7000, total 1500000 - 20 * (1 + 3 + ... + 299)
 *      = 1500000 - 20 * 22500 = 1050000.
 * Self total 10000, the root's duration. */
static void test_deep_nesting(void) {
    enum { DEPTH = 300 };
    spec sp[DEPTH];
    for (int k = 0; k < DEPTH; k++) {
        spec one = RANGE(k % 2 ? "b" : "a", 10 * k, 10000 - 10 * k, k - 1, 0);
        sp[k] = one;
    }
    strobe_result *r = build(sp, DEPTH);
    CHECK_EQ(r->events[DEPTH - 1].depth, DEPTH - 1);
    strobe_summary *s = summarize(r, STROBE_SORT_NAME);
    CHECK_ROW(s, "a", 150, 3000, 1053000);
    CHECK_ROW(s, "b", 150, 7000, 1050000);
    CHECK_EQ(strobe_summary_self_total_ns(s), 10000);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* ---- What is counted and what is not -------------------------------------------------------- */

/* A range still open at stop is closed at stop time by the core and flagged; the summary counts
 * it like any other range. train [0, 500) unfinished, with aten::add [100, 200) inside: train
 * self 400, total 500. */
static void test_unfinished(void) {
    static const spec sp[] = {
        RANGE("train", 0, 500, -1, 0),
        RANGE("aten::add", 100, 200, 0, 0),
    };
    strobe_result *r = build(sp, 2);
    r->events[0].flags = STROBE_EVENT_UNFINISHED;
    r->stats.unfinished_ranges = 1;
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_ROW(s, "train", 1, 400, 500);
    CHECK_ROW(s, "aten::add", 1, 100, 100);
    CHECK_EQ(strobe_summary_self_total_ns(s), 500);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* Instants (inside the tree) and counters (outside it) are not rows and take nothing from their
 * parent; device ranges (a kernel on a stream) take no CPU time and are not rows either. op
 * [0, 100) with an instant at 50 inside, a counter at 60, and a CUDA range [10, 90) on a second
 * "thread" (the stream): one row, op, self = total = 100. */
static void test_ignored_kinds(void) {
    static const spec sp[] = {
        RANGE("op", 0, 100, -1, 0),
        {"mark", 50, 50, 0, 0, STROBE_EVENT_INSTANT},
        {"memory", 60, 60, -1, 0, STROBE_EVENT_COUNTER},
        RANGE("kernel", 10, 90, -1, 1),
    };
    strobe_result *r = build(sp, 4);
    r->events[3].device_type = STROBE_DEVICE_CUDA;
    r->events[3].device_index = 0;
    r->events[3].category = "kernel";
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_EQ(strobe_summary_row_count(s), 1);
    CHECK_ROW(s, "op", 1, 100, 100);
    CHECK_EQ(strobe_summary_self_total_ns(s), 100);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* Names are grouped by content, not by address, and the summary keeps its own copies: two
 * ranges whose names are separate heap strings with equal text make one row, and the row's name
 * stays valid after the result and the strings are freed. */
static void test_names_owned_and_grouped(void) {
    char *n1 = strdup("aten::mm"), *n2 = strdup("aten::mm"), *n3 = strdup("aten::sum");
    REQUIRE(n1 && n2 && n3);
    spec sp[] = {
        RANGE(n1, 0, 10, -1, 0), RANGE(n2, 20, 50, -1, 0), RANGE(n3, 60, 70, -1, 0),
        RANGE(NULL, 80, 90, -1, 0), /* a NULL name counts as "" */
    };
    strobe_result *r = build(sp, 4);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    strobe_result_free(r);
    free(n1);
    free(n2);
    free(n3);
    CHECK_EQ(strobe_summary_row_count(s), 3);
    CHECK_ROW(s, "aten::mm", 2, 40, 40);
    CHECK_ROW(s, "aten::sum", 1, 10, 10);
    CHECK_ROW(s, "", 1, 10, 10);
    strobe_summary_free(s);
}

/* Steps: torch's key_averages() counts every "ProfilerStep#N" as one "ProfilerStep*" row; a name
 * that only begins like one ("ProfilerStep" without '#') keeps its own row. */
static void test_steps_grouped(void) {
    spec sp[] = {
        RANGE("ProfilerStep#1", 0, 100, -1, 0),   RANGE("aten::mm", 10, 40, 0, 0),
        RANGE("ProfilerStep#2", 100, 250, -1, 0), RANGE("aten::mm", 110, 140, 2, 0),
        RANGE("ProfilerStep", 300, 310, -1, 0),
    };
    strobe_result *r = build(sp, 5);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    strobe_result_free(r);
    CHECK_EQ(strobe_summary_row_count(s), 3);
    CHECK_ROW(s, "ProfilerStep*", 2, 190, 250);
    CHECK_ROW(s, "aten::mm", 2, 60, 60);
    CHECK_ROW(s, "ProfilerStep", 1, 10, 10);
    strobe_summary_free(s);
}

/* Enough names to make the name table grow several times, and enough events per name to
 * exercise the address cache: 5000 names op0..op4999, name i called (i % 3) + 1 times for 1 us
 * each, as separate roots. Every row must come out with its own count, and the rows sorted by
 * name must be strictly increasing. */
static void test_many_names(void) {
    enum { NAMES = 5000 };
    static char names[NAMES][16];
    size_t n = 0;
    for (int i = 0; i < NAMES; i++)
        n += (size_t)(i % 3) + 1;
    spec *sp = calloc(n, sizeof *sp);
    REQUIRE(sp != NULL);
    size_t k = 0;
    for (int i = 0; i < NAMES; i++) {
        snprintf(names[i], sizeof names[i], "op%d", i);
        for (int c = 0; c <= i % 3; c++, k++) {
            spec one = RANGE(names[i], (int64_t)k * 2000, (int64_t)k * 2000 + 1000, -1, 0);
            sp[k] = one;
        }
    }
    strobe_result *r = build(sp, n);
    strobe_summary *s = summarize(r, STROBE_SORT_NAME);
    CHECK_EQ(strobe_summary_row_count(s), NAMES);
    CHECK_ROW(s, "op0", 1, 1000, 1000);
    CHECK_ROW(s, "op1", 2, 2000, 2000);
    CHECK_ROW(s, "op2", 3, 3000, 3000);
    CHECK_ROW(s, "op4999", 2, 2000, 2000); /* 4999 % 3 == 1 */
    const strobe_summary_row *rows = strobe_summary_rows(s);
    for (size_t i = 1; i < strobe_summary_row_count(s); i++)
        CHECK(strcmp(rows[i - 1].name, rows[i].name) < 0);
    CHECK_EQ(strobe_summary_self_total_ns(s), (int64_t)n * 1000);
    strobe_summary_free(s);
    strobe_result_free(r);
    free(sp);
}

/* ---- Printing ------------------------------------------------------------------------------- */

/* An empty result prints the frame and a zero total (torch prints nothing at all; a frame is
 * more useful than an empty string). The name column is "Name" plus nothing: 0 + 4 = 4. */
static void test_empty(void) {
    strobe_result *r = build(NULL, 0);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_EQ(strobe_summary_row_count(s), 0);
    CHECK_EQ(strobe_summary_self_total_ns(s), 0);
    char *text = print_table(s, 0);
    CHECK_STR(text, "----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    "Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg  "
                    "  # of Calls  \n"
                    "----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    "----  ------------  ------------  ------------  ------------  ------------  "
                    "------------  \n"
                    "Self CPU time total: 0.000us\n");
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* Time formats, one root per unit boundary:
 *   us   500 ns         -> "0.500us"
 *   ms   999999 ns      -> "999.999us" (just under 1 ms)
 *   mss  1000000 ns     -> "1.000ms"
 *   s    1500000000 ns  -> "1.500s"
 * and avg3: three calls of 333 ns, 333 ns and 334 ns: total 1000 ns = "1.000us", avg 1000 / 3
 * = 0.3333 -> "0.333us". Self total 1500000000 + 1000000 + 999999 + 500 + 1000 = 1502001499 ns
 * -> "1.502s". Shares of it: s 99.867% -> "99.87%"; mss 1000000 / 1502001499 = 0.0666% ->
 * "0.07%"; ms 0.0666% -> "0.07%"; avg3 0.0000666% -> "0.00%"; us "0.00%". */
static void test_time_formats(void) {
    static const spec sp[] = {
        RANGE("us", 0, 500, -1, 0),
        RANGE("ms", 1000, 1000999, -1, 0),
        RANGE("mss", 2000000, 3000000, -1, 0),
        RANGE("s", 4000000, 1504000000, -1, 0),
        RANGE("avg3", 1505000000, 1505000333, -1, 0),
        RANGE("avg3", 1505001000, 1505001333, -1, 0),
        RANGE("avg3", 1505002000, 1505002334, -1, 0),
    };
    strobe_result *r = build(sp, sizeof sp / sizeof sp[0]);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_EQ(strobe_summary_self_total_ns(s), INT64_C(1502001499));
    char *text = print_table(s, 0);
    /* Name width: "avg3" is 4 characters, + 4 = 8. Sorted by total: s, mss, ms, avg3, us. */
#define SEP8                                                                                       \
    "--------  ------------  ------------  ------------  ------------  ------------  "             \
    "------------  \n"
    CHECK_STR(text, SEP8
              "    Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg  "
              "  # of Calls  \n" SEP8
              "       s        99.87%        1.500s        99.87%        1.500s        1.500s  "
              "           1  \n"
              "     mss         0.07%       1.000ms         0.07%       1.000ms       1.000ms  "
              "           1  \n"
              "      ms         0.07%     999.999us         0.07%     999.999us     999.999us  "
              "           1  \n"
              "    avg3         0.00%       1.000us         0.00%       1.000us       0.333us  "
              "           3  \n"
              "      us         0.00%       0.500us         0.00%       0.500us       0.500us  "
              "           1  \n" SEP8 "Self CPU time total: 1.502s\n");
#undef SEP8
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* A zero self total makes every share "NaN", as torch's _format_time_share prints it: one
 * zero-length range. */
static void test_zero_total(void) {
    static const spec sp[] = {RANGE("nothing", 10, 10, -1, 0)};
    strobe_result *r = build(sp, 1);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    char *text = print_table(s, 0);
    /* Name width 7 + 4 = 11. */
    CHECK(strstr(text, "\n    nothing  "
                       "         NaN  "
                       "     0.000us  "
                       "         NaN  "
                       "     0.000us  "
                       "     0.000us  "
                       "           1  \n") != NULL);
    CHECK(strstr(text, "Self CPU time total: 0.000us\n") != NULL);
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* Long names: torch caps the name column at 55 and cuts names of 52 characters or more to 52
 * plus "..." (so a name of exactly 52 gets "..." too). A 51-character name is shown whole,
 * right-aligned in 55. Widths count characters, not bytes: "é" is two bytes but one column. */
static void test_long_and_utf8_names(void) {
    char n51[52], n52[53], n60[61];
    memset(n51, 'x', 51);
    n51[51] = '\0';
    memset(n52, 'y', 52);
    n52[52] = '\0';
    memset(n60, 'z', 60);
    n60[60] = '\0';
    const spec sp[] = {
        RANGE(n60, 0, 300, -1, 0),
        RANGE(n52, 400, 600, -1, 0),
        RANGE(n51, 700, 800, -1, 0),
    };
    strobe_result *r = build(sp, 3);
    strobe_summary *s = summarize(r, STROBE_SORT_CPU_TOTAL);
    char *text = print_table(s, 0);
    char expect[256];
    /* The n60 row: 52 z's and "...", 55 characters, no padding. */
    snprintf(expect, sizeof expect, "\n%.52s...  ", n60);
    CHECK(strstr(text, expect) != NULL);
    snprintf(expect, sizeof expect, "\n%s...  ", n52);
    CHECK(strstr(text, expect) != NULL);
    snprintf(expect, sizeof expect, "\n    %s  ", n51);
    CHECK(strstr(text, expect) != NULL);
    /* Every line of the table proper is 55 + 2 + 6 * 14 = 141 characters and a newline. */
    const char *line = text;
    for (int i = 0; i < 7; i++) {
        const char *nl = strchr(line, '\n');
        REQUIRE(nl != NULL);
        CHECK_EQ(nl - line, 141);
        line = nl + 1;
    }
    CHECK(strncmp(line, "Self CPU time total: ", 21) == 0);
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);

    /* "opé" is 3 characters: the column is 7 wide and the name gets 4 spaces of padding. A cut
     * never splits a character: 60 "é" are cut to 52 of them (104 bytes) and "...". */
    char accents[121];
    for (int i = 0; i < 60; i++)
        memcpy(accents + 2 * i, "\xc3\xa9", 2);
    accents[120] = '\0';
    const spec sp2[] = {RANGE("op\xc3\xa9", 0, 1000, -1, 0)};
    r = build(sp2, 1);
    s = summarize(r, STROBE_SORT_CPU_TOTAL);
    text = print_table(s, 0);
    CHECK(strstr(text, "\n    op\xc3\xa9       100.00%       1.000us") != NULL);
    CHECK(strstr(text, "\n-------  ---") != NULL);
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);

    const spec sp3[] = {RANGE(accents, 0, 1000, -1, 0)};
    r = build(sp3, 1);
    s = summarize(r, STROBE_SORT_CPU_TOTAL);
    text = print_table(s, 0);
    snprintf(expect, sizeof expect, "\n%.104s...  ", accents);
    CHECK(strstr(text, expect) != NULL);
    free(text);
    strobe_summary_free(s);
    strobe_result_free(r);
}

/* ---- Arguments ------------------------------------------------------------------------------ */

static void test_arguments(void) {
    strobe_result *r = build(nested, sizeof nested / sizeof nested[0]);
    /* A failed create sets *out to NULL: start from a pointer that is not NULL. */
    static char not_null;
    strobe_summary *s = (strobe_summary *)(void *)&not_null;
    CHECK_EQ(strobe_summary_create(NULL, STROBE_SORT_CPU_TOTAL, &s), STROBE_EINVAL);
    CHECK(s == NULL);
    CHECK_EQ(strobe_summary_create(r, STROBE_SORT_CPU_TOTAL, NULL), STROBE_EINVAL);
    CHECK_EQ(strobe_summary_create(r, (strobe_sort_key)99, &s), STROBE_EINVAL);
    CHECK(s == NULL);
    s = summarize(r, STROBE_SORT_CPU_TOTAL);
    CHECK_EQ(strobe_summary_print(NULL, stdout, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_summary_print(s, NULL, 0), STROBE_EINVAL);
    /* A stream that cannot be written reports STROBE_EIO. */
    FILE *ro = fopen("/dev/null", "r");
    REQUIRE(ro != NULL);
    CHECK_EQ(strobe_summary_print(s, ro, 0), STROBE_EIO);
    fclose(ro);
    CHECK_EQ(strobe_summary_row_count(NULL), 0);
    CHECK(strobe_summary_rows(NULL) == NULL);
    CHECK_EQ(strobe_summary_self_total_ns(NULL), 0);
    strobe_summary_free(s);
    strobe_summary_free(NULL);
    strobe_result_free(r);
}

int main(void) {
    test_nesting_and_sort();
    test_ties();
    test_recursion();
    test_overlapping_child();
    test_two_threads();
    test_deep_nesting();
    test_unfinished();
    test_ignored_kinds();
    test_names_owned_and_grouped();
    test_steps_grouped();
    test_many_names();
    test_empty();
    test_time_formats();
    test_zero_total();
    test_long_and_utf8_names();
    test_arguments();
    return check_result();
}
