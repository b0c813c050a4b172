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
        if ((m->ev_flags[e] & MD_F_COLD) && md_at(m, e).stack) break; /* stack is a cold field */
        e = cl_op_parent(m, e);
    }
    const md_event top_ev = md_at(m, chain[n - 1]), *top = &top_ev;
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
        const char *name = md_str(m, md_name_of(m, chain[k]));
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

/* Folded stacks being summed: each distinct stack once (interned), with its weight. */
typedef struct folded {
    strobe__pool pool;
    strobe__strtab tab;
    int64_t *weight; /* by the stack's string id */
    size_t cap;
} folded;

static void folded_init(folded *f) {
    memset(f, 0, sizeof *f);
    strobe__strtab_init(&f->tab, &f->pool);
}

/* Adds `w` to the stack stack[0..len). @return 0 or STROBE_ENOMEM. */
static int folded_add(folded *f, const char *stack, size_t len, int64_t w) {
    int64_t id = strobe__strtab_intern(&f->tab, stack, len);
    if (id < 0) return (int)id;
    if ((size_t)id >= f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        int64_t *nw = realloc(f->weight, cap * sizeof *nw);
        if (nw == NULL) return STROBE_ENOMEM;
        memset(nw + f->cap, 0, (cap - f->cap) * sizeof *nw);
        f->weight = nw;
        f->cap = cap;
    }
    f->weight[id] = md_add_sat(f->weight[id], w);
    return 0;
}

static void folded_free(folded *f) {
    free(f->weight);
    strobe__strtab_release(&f->tab);
    strobe__pool_release(&f->pool);
}

/* Prints "stack weight" lines sorted by stack, the weight divided by `unit` (rounded; a line
 * whose weight rounds to 0 is left out) when unit > 1, then frees `f`. @return 0 or
 * STROBE_ENOMEM. */
static int folded_print_free(folded *f, int64_t unit) {
    int err = 0;
    uint32_t *order = f->tab.count ? malloc(f->tab.count * sizeof *order) : NULL;
    if (f->tab.count && order == NULL) err = STROBE_ENOMEM;
    if (!err && f->tab.count) {
        for (size_t k = 0; k < f->tab.count; k++)
            order[k] = (uint32_t)k;
        g_keys = f->tab.strs;
        qsort(order, f->tab.count, sizeof *order, by_key);
        for (size_t k = 0; k < f->tab.count; k++) {
            int64_t w = f->weight[order[k]];
            if (unit > 1) w = md_add_sat(w, unit / 2) / unit;
            if (w > 0) printf("%s %" PRId64 "\n", f->tab.strs[order[k]], w);
        }
    }
    free(order);
    folded_free(f);
    return err;
}

static int run(const md_model *m, int cuda) {
    folded f;
    folded_init(&f);
    int64_t *self = calloc(m->count ? m->count : 1, sizeof *self);
    uint32_t *owner = calloc(m->count ? m->count : 1, sizeof *owner);
    buf b = {0};
    int err = self && owner ? 0 : STROBE_ENOMEM;
    if (!err && cuda) err = cl_link(m, owner);
    /* Per event: the metric. */
    uint8_t *merged = malloc(m->count ? m->count : 1);
    if (merged == NULL) err = STROBE_ENOMEM;
    /* owner: the tree's parents, for self_cpu */
    if (!err && !cuda) err = cl_cpu_tree(m, owner, self, merged);
    for (size_t i = 0; !err && cuda && i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        uint32_t o = owner[i] - 1; /* MD_NONE where 0 (cl_link) */
        if (md_is_device_work(e->kind) && o != MD_NONE) self[o] = md_add_sat(self[o], e->dur);
    }
    for (size_t i = 0; !err && i < m->count; i++) {
        if (self[i] == 0 || !cl_is_row(md_kind_of(m, i))) continue;
        b.len = 0;
        err = frames(m, (uint32_t)i, &b);
        if (!err) err = folded_add(&f, b.p, b.len, self[i]);
    }
    free(b.p);
    free(self);
    free(owner);
    free(merged);
    if (err) {
        folded_free(&f);
        return err;
    }
    return folded_print_free(&f, 1000); /* weights in ns, lines in us */
}

/* --samples: one line per distinct sample stack (its "Call stack", innermost first in the trace,
 * printed root first) and its count, sorted by stack. @return 0, 1 when the trace has no
 * samples, or STROBE_ENOMEM. */
static int run_samples(const md_model *m) {
    folded f;
    folded_init(&f);
    size_t total = 0;
    buf b = {0};
    int err = 0;
    uint32_t cat = 0;
    for (size_t i = 0; i < m->count && cat == 0; i++)
        if (strcmp(md_str(m, md_cat_of(m, i)), "cpu_sample") == 0) cat = md_cat_of(m, i);
    for (size_t i = 0; !err && cat && i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
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
        if (err || b.len == 0) continue;
        err = folded_add(&f, b.p, b.len, 1);
        total++;
    }
    free(b.p);
    if (err) {
        folded_free(&f);
        return err;
    }
    /* The same output as the time-weighted stacks, sorted by stack, with counts. */
    err = folded_print_free(&f, 1);
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
