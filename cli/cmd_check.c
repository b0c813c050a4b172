/* cmd_check.c: `strobe check TRACE`: what is wrong with a trace, by kind of problem, with a count
 * and the first examples of each; exit 1 when anything is found.
 *
 * Contents: the usage text, the problem table and its report, nesting (partial overlaps and
 * children that outlive their parents), B/E pairing, flow matching, and the command itself.
 *
 * What is a problem. Only what breaks a consumer or an analysis: events the reader flagged (no ph,
 * name or ts, a string ts, a null element ...), X events with a negative or missing dur, X events
 * on one thread that cross instead of nesting, unpaired B/E events, flows with a start and no end
 * or the reverse, and phases the Trace Event Format does not define. Unsorted events, string tids,
 * a missing cat and an unterminated event array are legal in the format, so they are not
 * reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "strobe/error.h"
#include "model/model.h"
#include "reader/trace_reader.h"

const char cmd_check_usage[] =
    "NAME\n"
    "    strobe check - list what is wrong with a trace\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe check [--examples N] [-f text|json] [-q] TRACE\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (Kineto-format Chrome trace JSON, .json or .json.gz, written by strobe or by\n"
    "    the PyTorch profiler, either schema, or a .pftrace; \"-\" is standard input) and\n"
    "    reports, for each kind of problem found, how many events have it and the first\n"
    "    examples (name, ts as written in the file, pid and tid, and the event's index in the\n"
    "    traceEvents array):\n"
    "\n"
    "      bad_event             an element a viewer cannot use: not an object (null), no ph,\n"
    "                            name, ts, pid or tid, a ts or dur that is not a number or is\n"
    "                            out of range, a repeated member ...; grouped by reason\n"
    "      negative_dur          an X event with a negative dur\n"
    "      x_without_dur         an X event with no dur\n"
    "      end_out_of_range      an X event whose end (ts + dur) is beyond the int64 ns range\n"
    "      partial_overlap       an X event that starts inside another X event of the same\n"
    "                            thread and ends after it, lying mostly after it (siblings that\n"
    "                            cross)\n"
    "      child_outlives_parent the same, but lying mostly inside it (a child that ends late,\n"
    "                            as from timestamps rounded through doubles)\n"
    "      b_without_e           a B event that no E event closes on its thread\n"
    "      e_without_b           an E event with no open B event on its thread\n"
    "      be_name_mismatch      an E event whose name differs from the B event it closes\n"
    "      flow_without_end      a flow start (ph s) with no end (ph f) of the same id and cat\n"
    "      flow_without_start    a flow end (ph f) with no start (ph s) of the same id and cat\n"
    "      flow_without_id       a flow event with no usable id\n"
    "      unknown_phase         a ph the Trace Event Format does not define\n"
    "      step_overlap          a ProfilerStep#N range that starts before the process's\n"
    "                            previous step ended (steps follow one another, as\n"
    "                            torch.profiler's step() makes them)\n"
    "      unclean_stop          a process that did not stop cleanly: strobe's instants\n"
    "                            \"[strobe] process ended by SIGSEGV\" (SIGBUS, SIGABRT,\n"
    "                            SIGFPE, SIGILL, SIGSYS: a crash, recorded up to it) and\n"
    "                            \"[strobe] process cut short\" (its part ended without its\n"
    "                            session's end: SIGKILL, or a stop that did not finish; the\n"
    "                            events it held were lost). A process ended by SIGTERM, SIGINT,\n"
    "                            SIGPIPE ... stopped its session first and is not reported\n"
    "      bad_metadata_event    a malformed ph M event (counted only)\n"
    "\n"
    "    Unsorted events, string pids and tids, a missing cat and an unterminated traceEvents\n"
    "    array are legal in the format and are not reported. Traces written by strobe come out\n"
    "    clean; traces written by PyTorch usually have some partial overlaps.\n"
    "\n"
    "    With --format json the report is one JSON object: file, events, metadata_events,\n"
    "    problems (the total), and findings: per kind, its count, its examples (index, name,\n"
    "    ts_us and dur_us as written, pid, tid, and what the text adds: reason, cat and flow\n"
    "    id, the other event) and how many more; bad_event also has reasons, with counts.\n"
    "\n"
    "    Text from the trace (names, string ids, reasons that quote it) is printed with\n"
    "    control characters escaped (\\n, \\e, \\x01 ...); JSON escapes them by its own rules.\n"
    "\n"
    "OPTIONS\n"
    "    --examples N   show at most N examples of each kind (default 5; 0 shows counts only)\n"
    "    -f, --format F text (default) or json\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  the trace is clean\n"
    "    1  problems were found (listed on stdout)\n"
    "    2  bad input or usage: the file cannot be read or is not a trace (one line on stderr\n"
    "       names the file and the problem, with the byte offset of a JSON syntax error)\n";

/* ---- problems ------------------------------------------------------------------------------ */

enum {
    P_BAD_EVENT,
    P_NEGATIVE_DUR,
    P_X_WITHOUT_DUR,
    P_END_OUT_OF_RANGE,
    P_PARTIAL_OVERLAP,
    P_CHILD_OUTLIVES_PARENT,
    P_B_WITHOUT_E,
    P_E_WITHOUT_B,
    P_BE_NAME_MISMATCH,
    P_FLOW_WITHOUT_END,
    P_FLOW_WITHOUT_START,
    P_FLOW_WITHOUT_ID,
    P_UNKNOWN_PHASE,
    P_STEP_OVERLAP,
    P_UNCLEAN_STOP,
    P_COUNT
};

static const char *const problem_names[P_COUNT] = {
    "bad_event",        "negative_dur",          "x_without_dur",      "end_out_of_range",
    "partial_overlap",  "child_outlives_parent", "b_without_e",        "e_without_b",
    "be_name_mismatch", "flow_without_end",      "flow_without_start", "flow_without_id",
    "unknown_phase",    "step_overlap",          "unclean_stop"};

/* One example: the event, and for a nesting problem or a name mismatch the other event. */
typedef struct example {
    uint32_t ev, other;
} example;

typedef struct problem {
    uint64_t count;
    example *ex; /* the first `limit` examples */
    size_t nex;
} problem;

typedef struct checker {
    const md_model *m;
    size_t limit;
    problem p[P_COUNT];
    /* bad_event counts by the reader's reason (string ids), in order of first sight. */
    uint32_t *reasons;
    uint64_t *reason_counts;
    size_t nreasons, reason_cap;
    int oom;
} checker;

static void add(checker *c, int kind, uint32_t ev, uint32_t other) {
    problem *p = &c->p[kind];
    p->count++;
    if (p->nex >= c->limit) return;
    if (p->ex == NULL) {
        p->ex = malloc(c->limit * sizeof *p->ex);
        if (p->ex == NULL) {
            c->oom = 1;
            return;
        }
    }
    p->ex[p->nex].ev = ev;
    p->ex[p->nex].other = other;
    p->nex++;
}

static void add_reason(checker *c, uint32_t why) {
    for (size_t i = 0; i < c->nreasons; i++) {
        if (c->reasons[i] == why) {
            c->reason_counts[i]++;
            return;
        }
    }
    if (c->nreasons == c->reason_cap) {
        size_t cap = c->reason_cap ? c->reason_cap * 2 : 8;
        uint32_t *r = realloc(c->reasons, cap * sizeof *r);
        if (r != NULL) c->reasons = r;
        uint64_t *n = realloc(c->reason_counts, cap * sizeof *n);
        if (n != NULL) c->reason_counts = n;
        if (r == NULL || n == NULL) {
            c->oom = 1;
            return;
        }
        c->reason_cap = cap;
    }
    c->reasons[c->nreasons] = why;
    c->reason_counts[c->nreasons++] = 1;
}

/* ---- per-event checks ---------------------------------------------------------------------- */

/* Every phase the Trace Event Format defines. Phases strobe's analysis ignores (async, object,
 * sample, mark ...) are legal, so they are not problems. */
static int known_phase(char ph) {
    return ph != '?' && strchr("BEXiIsCtfMbenNODPpSTFRc()Vv", ph) != NULL;
}

static void check_events(checker *c) {
    const md_model *m = c->m;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        uint32_t id = (uint32_t)i;
        if (e->dur_state == MD_DUR_NEGATIVE)
            add(c, P_NEGATIVE_DUR, id, MD_NONE);
        else if (e->dur_state == MD_DUR_MISSING)
            add(c, P_X_WITHOUT_DUR, id, MD_NONE);
        else if (e->dur_state == MD_DUR_INVALID && !e->bad)
            add(c, P_END_OUT_OF_RANGE, id, MD_NONE); /* ts + dur beyond int64 ns: see model.c */
        else if (e->bad) {
            add(c, P_BAD_EVENT, id, MD_NONE);
            add_reason(c, e->bad_why);
        }
        /* A bad event without a ph is reported as bad, not again as of an unknown phase. */
        if (e->kind == MD_UNKNOWN_PHASE &&
            !(e->bad_bits & (STROBE_RD_BAD_PH | STROBE_RD_BAD_NOT_OBJECT)) && !known_phase(e->ph))
            add(c, P_UNKNOWN_PHASE, id, MD_NONE);
    }
}

/* Whether SIG`abbrev` (after "SIG") is a crash; a kill (SIGTERM, SIGINT, SIGPIPE ...) ends a
 * process on purpose, and its session stopped with everything it recorded. */
static int crash_signal(const char *abbrev) {
    static const char *const crashes[] = {"SEGV", "BUS", "ABRT", "FPE", "ILL", "SYS", NULL};
    for (size_t k = 0; crashes[k]; k++)
        if (strcmp(abbrev, crashes[k]) == 0) return 1;
    return 0;
}

/* strobe's marks of a process that did not stop cleanly (record_hook.c's signal handler, and
 * merge.c's cut-short session). */
static void check_unclean(checker *c) {
    const md_model *m = c->m;
    static const char pre[] = "[strobe] process ";
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (e->ph != 'i' && e->ph != 'I') continue;
        const char *name = md_str(m, e->name);
        if (strncmp(name, pre, sizeof pre - 1) != 0) continue;
        name += sizeof pre - 1;
        if (strncmp(name, "cut short", 9) == 0 ||
            (strncmp(name, "ended by SIG", 12) == 0 && crash_signal(name + 12)))
            add(c, P_UNCLEAN_STOP, (uint32_t)i, MD_NONE);
    }
}

/* X events that start inside their parent (the innermost X event enclosing their start, which
 * the model found) but end after it. Which of the two problems it is depends on where most of
 * the event lies: mostly inside, it is a child that ends late; mostly after, it is a sibling that
 * starts before its neighbour ends. Both break a viewer's tree all the same. */
static void check_nesting(checker *c) {
    const md_model *m = c->m;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (e->ph != 'X' || !e->has_time || e->parent == MD_NONE) continue;
        const md_event p_ev = md_at(m, e->parent), *p = &p_ev;
        int64_t end = e->ts + e->dur, pend = p->ts + p->dur;
        if (end <= pend) continue;
        int64_t inside = pend - e->ts, after = end - pend;
        add(c, inside > after ? P_CHILD_OUTLIVES_PARENT : P_PARTIAL_OVERLAP, (uint32_t)i,
            e->parent);
    }
}

/* ProfilerStep#N ranges of one process follow one another: one that starts before the previous
 * ended was paired with the wrong end (a step closed by a user's scope) or spans other steps. */
static const md_model *step_model;
static int by_process_then_ts(const void *a, const void *b) {
    const md_event x_ev = md_at(step_model, *(const uint32_t *)a), *x = &x_ev;
    const md_event y_ev = md_at(step_model, *(const uint32_t *)b), *y = &y_ev;
    const md_thread *tx = &step_model->threads[x->thread], *ty = &step_model->threads[y->thread];
    if (tx->pid_kind != ty->pid_kind) return tx->pid_kind < ty->pid_kind ? -1 : 1;
    if (tx->pid != ty->pid) return tx->pid < ty->pid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void check_steps(checker *c) {
    const md_model *m = c->m;
    size_t n = 0;
    uint32_t *ix = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < m->count; i++) {
            const md_event e_ev = md_at(m, i), *e = &e_ev;
            if (e->ph != 'X' || !e->has_time || e->dur_state != MD_DUR_OK || e->bad) continue;
            const char *name = md_str(m, e->name);
            if (strncmp(name, "ProfilerStep#", 13) != 0) continue;
            if (pass) ix[n] = (uint32_t)i;
            n++;
        }
        if (pass == 0) {
            if (n < 2) return;
            ix = malloc(n * sizeof *ix);
            if (ix == NULL) {
                c->oom = 1;
                return;
            }
            n = 0;
        }
    }
    step_model = m;
    qsort(ix, n, sizeof *ix, by_process_then_ts);
    /* Against the step of the process that ends last so far: a step spanning several others
     * shows in each of them. */
    uint32_t last = ix[0];
    for (size_t k = 1; k < n; k++) {
        const md_event prev_ev = md_at(m, last), *prev = &prev_ev, e_ev = md_at(m, ix[k]),
                       *e = &e_ev;
        const md_thread *tp = &m->threads[prev->thread], *te = &m->threads[e->thread];
        if (tp->pid_kind != te->pid_kind || tp->pid != te->pid) {
            last = ix[k];
            continue;
        }
        int64_t prev_end = md_add_sat(prev->ts, prev->dur);
        if (e->ts < prev_end) add(c, P_STEP_OVERLAP, ix[k], last);
        if (md_add_sat(e->ts, e->dur) > prev_end) last = ix[k];
    }
    free(ix);
}

/* B/E pairs, per thread in time order (the model's order), as a viewer pairs them: an E closes
 * the innermost open B of its thread. */
static void check_begin_end(checker *c) {
    const md_model *m = c->m;
    uint32_t *stack = NULL;
    size_t cap = 0;
    for (size_t t = 0; t < m->thread_count && !c->oom; t++) {
        const md_thread *th = &m->threads[t];
        size_t depth = 0;
        for (size_t k = 0; k < th->count; k++) {
            uint32_t id = th->order[k];
            const md_event e_ev = md_at(m, id), *e = &e_ev;
            if (!e->has_time || (e->ph != 'B' && e->ph != 'E')) continue;
            if (e->ph == 'B') {
                if (depth == cap) {
                    size_t ncap = cap ? cap * 2 : 64;
                    uint32_t *s = realloc(stack, ncap * sizeof *s);
                    if (s == NULL) {
                        c->oom = 1;
                        break;
                    }
                    stack = s;
                    cap = ncap;
                }
                stack[depth++] = id;
            } else if (depth == 0) {
                add(c, P_E_WITHOUT_B, id, MD_NONE);
            } else {
                uint32_t b = stack[--depth];
                /* An E may leave out its name (the format allows it); only a different one is
                 * wrong. */
                if (e->name != 0 && e->name != md_name_of(m, b)) add(c, P_BE_NAME_MISMATCH, id, b);
            }
        }
        while (depth)
            add(c, P_B_WITHOUT_E, stack[--depth], MD_NONE);
    }
    free(stack);
}

static const md_model *flow_model;

/* By cat, then id, then file order: the events of one flow end up next to each other. */
static int by_flow(const void *a, const void *b) {
    const md_event xe = md_at(flow_model, *(const uint32_t *)a), *x = &xe;
    const md_event ye = md_at(flow_model, *(const uint32_t *)b), *y = &ye;
    if (x->cat != y->cat) return x->cat < y->cat ? -1 : 1;
    if (x->flow_kind != y->flow_kind) return x->flow_kind < y->flow_kind ? -1 : 1;
    if (x->flow_id != y->flow_id) return x->flow_id < y->flow_id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Flows match by (id, cat), as Perfetto and DevTools bind them. A flow with starts and ends is
 * matched; a flow with only one of the two is reported, every event of it. */
static void check_flows(checker *c) {
    const md_model *m = c->m;
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (e->kind != MD_FLOW_START && e->kind != MD_FLOW_END) continue;
        if (e->flow_kind == MD_ID_NONE)
            add(c, P_FLOW_WITHOUT_ID, (uint32_t)i, MD_NONE);
        else
            n++;
    }
    if (n == 0) return;
    uint32_t *f = malloc(n * sizeof *f);
    if (f == NULL) {
        c->oom = 1;
        return;
    }
    n = 0;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if ((e->kind == MD_FLOW_START || e->kind == MD_FLOW_END) && e->flow_kind != MD_ID_NONE)
            f[n++] = (uint32_t)i;
    }
    flow_model = m;
    qsort(f, n, sizeof *f, by_flow);
    for (size_t i = 0, j; i < n; i = j) {
        const md_event first_ev = md_at(m, f[i]), *first = &first_ev;
        size_t starts = 0, ends = 0;
        for (j = i; j < n && md_cat_of(m, f[j]) == first->cat &&
                    md_at(m, f[j]).flow_kind == first->flow_kind &&
                    md_at(m, f[j]).flow_id == first->flow_id;
             j++) {
            if (md_kind_of(m, f[j]) == MD_FLOW_START)
                starts++;
            else
                ends++;
        }
        if (starts && ends) continue;
        for (size_t k = i; k < j; k++)
            add(c, starts ? P_FLOW_WITHOUT_END : P_FLOW_WITHOUT_START, f[k], MD_NONE);
    }
    free(f);
}

/* ---- report -------------------------------------------------------------------------------- */

/* A time in µs with three decimals, from integer ns, as the file writes it. */
static void print_us(int64_t ns) {
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    printf("%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
           (unsigned long long)(a % 1000));
}

/* ts as written in the file: relative to the base time when the trace has one. */
static int64_t file_ts(const md_model *m, const md_event *e) {
    return m->has_base ? md_sub_sat(e->ts, m->base_time_ns) : e->ts;
}

static void print_thread(const md_model *m, const md_event *e) {
    const md_thread *t = &m->threads[e->thread];
    printf("pid ");
    cli_print_id(m, t->pid, t->pid_kind, 0);
    printf(" tid ");
    cli_print_id(m, t->tid, t->tid_kind, 0);
}

static void print_event(const md_model *m, const md_event *e) {
    printf("#%u \"%s\"", e->index, cli_esc(md_str(m, e->name)));
    if (e->has_time) {
        printf(" ts ");
        print_us(file_ts(m, e));
        printf(" us");
        if (e->ph == 'X' && e->dur_state == MD_DUR_OK) {
            printf(" dur ");
            print_us(e->dur);
            printf(" us");
        }
    }
    printf(", ");
    print_thread(m, e);
}

static void print_example(const checker *c, int kind, const example *x) {
    const md_model *m = c->m;
    const md_event e_ev = md_at(m, x->ev), *e = &e_ev;
    printf("    ");
    print_event(m, e);
    if (kind == P_BAD_EVENT && e->bad_why) printf(": %s", cli_esc(md_str(m, e->bad_why)));
    if (kind == P_FLOW_WITHOUT_END || kind == P_FLOW_WITHOUT_START) {
        printf(", cat \"%s\", id ", cli_esc(md_str(m, e->cat)));
        cli_print_id(m, e->flow_id, e->flow_kind, 0);
    }
    if (x->other != MD_NONE) {
        const md_event o_ev = md_at(m, x->other), *o = &o_ev;
        if (kind == P_BE_NAME_MISMATCH) {
            printf(": closes \"%s\" (#%u)", cli_esc(md_str(m, o->name)), o->index);
        } else if (kind == P_STEP_OVERLAP) {
            printf(": starts before \"%s\" (#%u) ends at ", cli_esc(md_str(m, o->name)), o->index);
            print_us(md_add_sat(file_ts(m, o), o->dur));
            printf(" us");
        } else {
            printf(": starts inside \"%s\" (#%u, ends ", cli_esc(md_str(m, o->name)), o->index);
            print_us(md_add_sat(file_ts(m, o), o->dur));
            printf(" us) and ends ");
            print_us(e->ts + e->dur - (o->ts + o->dur));
            printf(" us after it");
        }
    }
    if (kind == P_UNKNOWN_PHASE) printf(": unknown ph");
    putchar('\n');
}

static int report(const checker *c) {
    const md_model *m = c->m;
    uint64_t total = m->bad_metadata_events;
    int kinds = m->bad_metadata_events ? 1 : 0;
    for (int k = 0; k < P_COUNT; k++) {
        total += c->p[k].count;
        kinds += c->p[k].count != 0;
    }
    if (total == 0) {
        printf("%s: no problems found (%zu events, %llu metadata events)\n", cli_esc(m->path),
               m->count, (unsigned long long)m->metadata_events);
        return CLI_OK;
    }
    printf("%s: %llu problem%s of %d kind%s (%zu events, %llu metadata events)\n", cli_esc(m->path),
           (unsigned long long)total, total == 1 ? "" : "s", kinds, kinds == 1 ? "" : "s", m->count,
           (unsigned long long)m->metadata_events);
    for (int k = 0; k < P_COUNT; k++) {
        const problem *p = &c->p[k];
        if (p->count == 0) continue;
        printf("%s: %llu\n", problem_names[k], (unsigned long long)p->count);
        if (k == P_BAD_EVENT)
            for (size_t r = 0; r < c->nreasons; r++)
                printf("  %llu: %s\n", (unsigned long long)c->reason_counts[r],
                       c->reasons[r] ? cli_esc(md_str(m, c->reasons[r])) : "bad event");
        for (size_t i = 0; i < p->nex; i++)
            print_example(c, k, &p->ex[i]);
        if (p->count > p->nex && p->nex)
            printf("    ... and %llu more\n", (unsigned long long)(p->count - p->nex));
    }
    if (m->bad_metadata_events)
        printf("bad_metadata_event: %llu\n", (unsigned long long)m->bad_metadata_events);
    return CLI_FINDINGS;
}

/* ---- JSON report --------------------------------------------------------------------------- */

static void json_event(const md_model *m, const md_event *e) {
    printf("{\"index\": %u, \"name\": ", e->index);
    cli_json_str(stdout, md_str(m, e->name));
    printf(", \"ts_us\": ");
    if (e->has_time)
        print_us(file_ts(m, e));
    else
        printf("null");
    if (e->has_time && e->ph == 'X' && e->dur_state == MD_DUR_OK) {
        printf(", \"dur_us\": ");
        print_us(e->dur);
    }
    const md_thread *t = &m->threads[e->thread];
    printf(", \"pid\": ");
    cli_print_id(m, t->pid, t->pid_kind, 1);
    printf(", \"tid\": ");
    cli_print_id(m, t->tid, t->tid_kind, 1);
}

static void json_example(const checker *c, int kind, const example *x) {
    const md_model *m = c->m;
    const md_event e_ev = md_at(m, x->ev), *e = &e_ev;
    json_event(m, e);
    if (kind == P_BAD_EVENT && e->bad_why) {
        printf(", \"reason\": ");
        cli_json_str(stdout, md_str(m, e->bad_why));
    }
    if (kind == P_FLOW_WITHOUT_END || kind == P_FLOW_WITHOUT_START) {
        printf(", \"cat\": ");
        cli_json_str(stdout, md_str(m, e->cat));
        printf(", \"flow_id\": ");
        cli_print_id(m, e->flow_id, e->flow_kind, 1);
    }
    if (x->other != MD_NONE) {
        const md_event o_ev = md_at(m, x->other), *o = &o_ev;
        printf(", \"%s\": ", kind == P_BE_NAME_MISMATCH ? "closes"
                             : kind == P_STEP_OVERLAP   ? "overlaps"
                                                        : "starts_inside");
        json_event(m, o);
        putchar('}');
        if (kind != P_BE_NAME_MISMATCH && kind != P_STEP_OVERLAP) {
            printf(", \"ends_after_us\": ");
            print_us(e->ts + e->dur - (o->ts + o->dur));
        }
    }
    putchar('}');
}

static int report_json(const checker *c) {
    const md_model *m = c->m;
    uint64_t total = m->bad_metadata_events;
    for (int k = 0; k < P_COUNT; k++)
        total += c->p[k].count;
    printf("{\"file\": ");
    cli_json_str(stdout, m->path);
    printf(", \"events\": %zu, \"metadata_events\": %llu, \"problems\": %llu,\n \"findings\": [",
           m->count, (unsigned long long)m->metadata_events, (unsigned long long)total);
    int n = 0;
    for (int k = 0; k < P_COUNT; k++) {
        const problem *p = &c->p[k];
        if (p->count == 0) continue;
        printf("%s\n  {\"kind\": \"%s\", \"count\": %llu", n++ ? "," : "", problem_names[k],
               (unsigned long long)p->count);
        if (k == P_BAD_EVENT) {
            printf(", \"reasons\": [");
            for (size_t r = 0; r < c->nreasons; r++) {
                printf("%s{\"reason\": ", r ? ", " : "");
                cli_json_str(stdout, c->reasons[r] ? md_str(m, c->reasons[r]) : "bad event");
                printf(", \"count\": %llu}", (unsigned long long)c->reason_counts[r]);
            }
            putchar(']');
        }
        printf(",\n   \"examples\": [");
        for (size_t i = 0; i < p->nex; i++) {
            printf("%s\n    ", i ? "," : "");
            json_example(c, k, &p->ex[i]);
        }
        printf("], \"more\": %llu}", (unsigned long long)(p->count - p->nex));
    }
    if (m->bad_metadata_events)
        printf("%s\n  {\"kind\": \"bad_metadata_event\", \"count\": %llu, \"examples\": [], "
               "\"more\": %llu}",
               n ? "," : "", (unsigned long long)m->bad_metadata_events,
               (unsigned long long)m->bad_metadata_events);
    printf("]}\n");
    return total ? CLI_FINDINGS : CLI_OK;
}

/* ---- the command --------------------------------------------------------------------------- */

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("check", msg, arg);
}

const struct option cmd_check_options[] = {
    {"examples", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_check(int argc, char **argv) {
    const char *path = NULL;
    size_t limit = 5;
    int json = 0, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_check_options, &first)) != -1;) {
        unsigned long long n;
        switch (c) {
        case 'h':
            return cli_help(cmd_check_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'f':
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "json") != 0)
                return usage_error("unknown --format (text, json)", optarg);
            json = optarg[0] == 'j';
            break;
        case CLI_LONG_ONLY + 1:
            if (cli_parse_count("check", "--examples", optarg, 1000000, &n) != 0)
                return CLI_BAD_INPUT;
            limit = (size_t)n;
            break;
        default:
            return cli_option_error("check", c, argv, cmd_check_options);
        }
    }
    if (cli_trace_operand("check", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;

    md_model m;
    if (cli_load(&m, "check", path, quiet) != 0) return CLI_BAD_INPUT;
    checker c;
    memset(&c, 0, sizeof c);
    c.m = &m;
    c.limit = limit;
    check_events(&c);
    check_unclean(&c);
    check_nesting(&c);
    check_begin_end(&c);
    check_flows(&c);
    check_steps(&c);
    int found = c.oom ? CLI_OK : json ? report_json(&c) : report(&c);
    int rc = cli_finish("check", path, c.oom ? STROBE_ENOMEM : 0, found);
    for (int k = 0; k < P_COUNT; k++)
        free(c.p[k].ex);
    free(c.reasons);
    free(c.reason_counts);
    md_free(&m);
    return rc;
}
