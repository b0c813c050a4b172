/* cmd_stacks.c: `strobe stacks`, folded stacks (Brendan Gregg's format) for flamegraph.pl and
 * speedscope, weighted by self CPU or self device time.
 *
 * Contents: usage, frames of an event, aggregation of equal stacks, the command.
 *
 * Each operator (and runtime call) is one sample of its self time. Its frames, root first, are:
 * the Python frames of its "Call stack" (the trace lists them innermost first) followed by its
 * own name; an event without a "Call stack" takes the frames of its enclosing operator and adds
 * its own name, so that a trace without stacks gives the nesting of operators. Equal stacks are
 * summed in nanoseconds and printed rounded to the nearest microsecond; a stack whose weight
 * rounds to 0 is left out. Unlike torch's export_stacks, the operator's name is the leaf frame,
 * so that a flame graph shows which operator the time went to.
 *
 * With --samples, the CPU samples strobe records (config.cpu_sample_hz: instants of category
 * "cpu_sample" with their native "Call stack") are folded instead: one line per distinct stack,
 * weighted by its number of samples. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "link.h"
#include "model.h"
#include "strobe/error.h"
#include "util/strtab.h"

const char cmd_stacks_usage[] =
    "NAME\n"
    "    strobe stacks - folded stacks for flamegraph.pl and speedscope\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe stacks [OPTIONS] TRACE\n"
    "    strobe stacks TRACE [--metric self_cpu|self_cuda] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints one line per distinct stack: frames from the root to the leaf joined by ';',\n"
    "    a space, and the weight in microseconds (rounded to the nearest; lines whose weight is\n"
    "    0 are left out). Lines are sorted by stack.\n"
    "\n"
    "    Each operator, user annotation and runtime call contributes its self time. Its frames\n"
    "    are the Python frames of its \"Call stack\" argument, root first, then its own name;\n"
    "    without a \"Call stack\", the frames of the operator enclosing it on its thread, then\n"
    "    its own name (so a trace without stacks gives the nesting of operators). Within a\n"
    "    frame, ';' and control characters (newlines, escapes, DEL, C1 controls) are replaced\n"
    "    by '_', so that each stack stays one line. TRACE \"-\" is standard input.\n"
    "    Malformed events are skipped; standard error says how many, and `strobe check TRACE`\n"
    "    lists them.\n"
    "\n"
    "    Example: strobe stacks t.json.gz | flamegraph.pl > t.svg\n"
    "\n"
    "    With --samples, the CPU samples of the trace (events of category cpu_sample, which\n"
    "    strobe writes when a session samples: `strobe record --sample`) are folded instead:\n"
    "    each sample's native \"Call stack\", root first, and the number of samples with that\n"
    "    stack. A trace without such events is refused (exit 2); in a .pftrace, samples are\n"
    "    Perfetto's CPU samples, which this command does not read: save the trace as JSON.\n"
    "\n"
    "OPTIONS\n"
    "    --metric M     self_cpu (default): self CPU time, as `strobe summary` computes it;\n"
    "                   self_cuda: the device time (kernels, copies, memsets) launched directly\n"
    "                   inside each operator\n"
    "    --samples      fold the CPU samples (cpu_sample events), weighted by their count\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read) or bad usage.\n";

/* A growable byte buffer; put() keeps room for one more byte and the NUL, for a separator. */
typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static int put(buf *b, const char *s, size_t n) {
    if (b->len + n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 2 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) return STROBE_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        /* A C1 control (U+0080..U+009F, two bytes in UTF-8) becomes one '_'. */
        if (c == 0xc2 && k + 1 < n && (unsigned char)s[k + 1] >= 0x80 &&
            (unsigned char)s[k + 1] < 0xa0) {
            k++;
            c = 0;
        }
        b->p[b->len++] = c == ';' || c < 0x20 || c == 0x7f ? '_' : (char)c;
    }
    b->p[b->len] = '\0';
    return 0;
}

/* Appends the frames of event i (see the file comment), root first, each followed by ';'. */
static int frames(const md_model *m, uint32_t i, buf *b) {
    /* The chain of operators up to the first that has a "Call stack" (or the root). */
    uint32_t chain[512];
    size_t n = 0;
    uint32_t e = i;
    while (e != MD_NONE && n < sizeof chain / sizeof chain[0]) {
        chain[n++] = e;
        if (m->events[e].stack) break;
        e = cl_op_parent(m, e);
    }
    const md_event *top = &m->events[chain[n - 1]];
    if (top->stack) {
        /* Kineto writes the Python frames innermost first: emit them in reverse. */
        const char *s = md_str(m, top->stack);
        size_t end = strlen(s);
        while (end > 0) {
            size_t start = end;
            while (start > 0 && s[start - 1] != ';')
                start--;
            if (end > start && (put(b, s + start, end - start) || put(b, "", 0)))
                return STROBE_ENOMEM;
            if (end > start) b->p[b->len++] = ';';
            end = start ? start - 1 : 0;
        }
    }
    for (size_t k = n; k-- > 0;) {
        const char *name = md_str(m, m->events[chain[k]].name);
        if (put(b, name, strlen(name))) return STROBE_ENOMEM;
        if (k) {
            if (put(b, "", 0)) return STROBE_ENOMEM;
            b->p[b->len++] = ';';
        }
    }
    b->p[b->len] = '\0';
    return 0;
}

static const char *const *g_keys;

static int by_key(const void *a, const void *b) {
    return strcmp(g_keys[*(const uint32_t *)a], g_keys[*(const uint32_t *)b]);
}

static int run(const md_model *m, int cuda) {
    strobe__pool pool = {0};
    strobe__strtab tab;
    strobe__strtab_init(&tab, &pool);
    int64_t *weight = NULL, *self = calloc(m->count ? m->count : 1, sizeof *self);
    uint32_t *owner = malloc((m->count ? m->count : 1) * sizeof *owner);
    uint32_t *order = NULL;
    buf b = {0};
    size_t wcap = 0;
    int err = self && owner ? 0 : STROBE_ENOMEM;
    if (!err && cuda) err = cl_link(m, owner);
    /* Per event: the metric. */
    uint8_t *merged = malloc(m->count ? m->count : 1);
    if (merged == NULL) err = STROBE_ENOMEM;
    /* owner: the tree's parents, for self_cpu */
    if (!err && !cuda) err = cl_cpu_tree(m, owner, self, merged);
    for (size_t i = 0; !err && cuda && i < m->count; i++) {
        const md_event *e = &m->events[i];
        if (md_is_device_work(e->kind) && owner[i] != MD_NONE)
            self[owner[i]] = md_add_sat(self[owner[i]], e->dur);
    }
    for (size_t i = 0; !err && i < m->count; i++) {
        if (self[i] == 0 || !cl_is_row(m->events[i].kind)) continue;
        b.len = 0;
        err = frames(m, (uint32_t)i, &b);
        int64_t id = err ? 0 : strobe__strtab_intern(&tab, b.p, b.len);
        if (id < 0) err = (int)id;
        if (err) break;
        if ((size_t)id >= wcap) {
            size_t cap = wcap ? wcap * 2 : 1024;
            int64_t *w = realloc(weight, cap * sizeof *w);
            if (w == NULL) {
                err = STROBE_ENOMEM;
                break;
            }
            memset(w + wcap, 0, (cap - wcap) * sizeof *w);
            weight = w;
            wcap = cap;
        }
        weight[id] = md_add_sat(weight[id], self[i]);
    }
    if (!err && tab.count) {
        order = malloc(tab.count * sizeof *order);
        if (order == NULL) err = STROBE_ENOMEM;
    }
    if (!err && tab.count) {
        for (size_t k = 0; k < tab.count; k++)
            order[k] = (uint32_t)k;
        g_keys = tab.strs;
        qsort(order, tab.count, sizeof *order, by_key);
        for (size_t k = 0; k < tab.count; k++) {
            int64_t us = md_add_sat(weight[order[k]], 500) / 1000;
            if (us > 0) printf("%s %" PRId64 "\n", tab.strs[order[k]], us);
        }
    }
    free(b.p);
    free(order);
    free(weight);
    free(self);
    free(owner);
    free(merged);
    strobe__strtab_release(&tab);
    strobe__pool_release(&pool);
    return err;
}

/* --samples: one line per distinct sample stack (its "Call stack", innermost first in the trace,
 * printed root first) and its count, sorted by stack. @return 0, 1 when the trace has no
 * samples, or STROBE_ENOMEM. */
static int run_samples(const md_model *m) {
    strobe__pool pool = {0};
    strobe__strtab tab;
    strobe__strtab_init(&tab, &pool);
    uint64_t *count = NULL;
    uint32_t *order = NULL;
    size_t ccap = 0, total = 0;
    buf b = {0};
    int err = 0;
    uint32_t cat = 0;
    for (size_t i = 0; i < m->count && cat == 0; i++)
        if (strcmp(md_str(m, m->events[i].cat), "cpu_sample") == 0) cat = m->events[i].cat;
    for (size_t i = 0; !err && cat && i < m->count; i++) {
        const md_event *e = &m->events[i];
        if (e->cat != cat || e->ph != 'i' || e->stack == 0) continue;
        b.len = 0;
        const char *s = md_str(m, e->stack);
        size_t end = strlen(s);
        while (!err && end > 0) {
            size_t start = end;
            while (start > 0 && s[start - 1] != ';')
                start--;
            if (b.len) b.p[b.len++] = ';';
            err = put(&b, s + start, end - start);
            end = start ? start - 1 : 0;
        }
        int64_t id = err || b.len == 0 ? -1 : strobe__strtab_intern(&tab, b.p, b.len);
        if (err || id < 0) {
            if (b.len) err = STROBE_ENOMEM;
            continue;
        }
        if ((size_t)id >= ccap) {
            size_t cap = ccap ? ccap * 2 : 1024;
            uint64_t *c = realloc(count, cap * sizeof *c);
            if (c == NULL) {
                err = STROBE_ENOMEM;
                break;
            }
            memset(c + ccap, 0, (cap - ccap) * sizeof *c);
            count = c;
            ccap = cap;
        }
        count[id]++;
        total++;
    }
    if (!err && tab.count) {
        order = malloc(tab.count * sizeof *order);
        if (order == NULL) err = STROBE_ENOMEM;
    }
    if (!err && tab.count) {
        /* The same output as the time-weighted stacks: sorted by stack. */
        for (size_t k = 0; k < tab.count; k++)
            order[k] = (uint32_t)k;
        g_keys = tab.strs;
        qsort(order, tab.count, sizeof *order, by_key);
        for (size_t k = 0; k < tab.count; k++)
            printf("%s %" PRIu64 "\n", tab.strs[order[k]], count[order[k]]);
    }
    free(b.p);
    free(order);
    free(count);
    strobe__strtab_release(&tab);
    strobe__pool_release(&pool);
    return err ? err : total == 0;
}

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("stacks", msg, arg);
}

const struct option cmd_stacks_options[] = {
    {"metric", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"samples", no_argument, NULL, CLI_LONG_ONLY + 2},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_stacks(int argc, char **argv) {
    const char *path = NULL;
    int cuda = 0, quiet = 0, first = 0, samples = 0;
    for (int c; (c = cli_getopt(argc, argv, ":qhV", cmd_stacks_options, &first)) != -1;) {
        const char *v = optarg;
        switch (c) {
        case 'h':
            return cli_help(cmd_stacks_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case CLI_LONG_ONLY + 1:
            if (strcmp(v, "self_cpu") == 0 || strcmp(v, "self_cpu_time_total") == 0)
                cuda = 0;
            else if (strcmp(v, "self_cuda") == 0 || strcmp(v, "self_cuda_time_total") == 0 ||
                     strcmp(v, "self_device") == 0)
                cuda = 1;
            else
                return usage_error("unknown --metric", v);
            break;
        case CLI_LONG_ONLY + 2:
            samples = 1;
            break;
        default:
            return cli_option_error("stacks", c, argv, cmd_stacks_options);
        }
    }
    if (cli_trace_operand("stacks", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "stacks", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("stacks", path, m);
        if (samples) {
            int src = run_samples(m);
            if (src == 1) {
                fprintf(stderr,
                        "strobe stacks: %s: no CPU samples (events of category cpu_sample) in the "
                        "trace\n",
                        path);
                rc = CLI_BAD_INPUT;
            } else {
                rc = cli_finish("stacks", path, src, CLI_OK);
            }
        } else {
            rc = cli_finish("stacks", path, run(m, cuda) != 0 ? STROBE_ENOMEM : 0, CLI_OK);
        }
        md_free(m);
    }
    free(m);
    return rc;
}
