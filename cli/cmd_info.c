/* cmd_info.c: `strobe info TRACE`: what a trace holds, before opening a viewer: schema, time span,
 * base time, processes, threads, devices, event counts by phase and by category, metadata keys.
 *
 * Contents: the usage text, small counting helpers, the deviceProperties scan, and the report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "strobe/error.h"
#include "model/model.h"
#include "reader/trace_reader.h"
#include "util/err.h"

const char cmd_info_usage[] =
    "NAME\n"
    "    strobe info - what a trace holds\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe info [-f text|json] [-q] TRACE\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (Kineto-format Chrome trace JSON, .json or .json.gz, written by strobe or by\n"
    "    the PyTorch profiler, either schema, or a .pftrace; \"-\" is standard input) and\n"
    "    prints:\n"
    "\n"
    "      schema version   schemaVersion, or \"none\"\n"
    "      time span        first ts and last end (ts + dur) over all events with a time, as\n"
    "                       written in the file (us), and the duration between them\n"
    "      base time        baseTimeNanoseconds, or \"none\" (2021 traces use absolute ts)\n"
    "      events           events read (ph M metadata events apart), of which bad\n"
    "      unterminated     whether the traceEvents array was left open (legal), or a\n"
    "                       Perfetto trace cut inside a packet (read up to the cut)\n"
    "      processes        pid and process_name of each process\n"
    "      threads          pid, tid, number of events and thread_name of each thread\n"
    "      devices          each pid that holds GPU work (kernels, copies, memsets, GPU\n"
    "                       annotations) with its streams and events, and each entry of\n"
    "                       deviceProperties (id, name, memory, compute capability, SMs)\n"
    "      by phase         event counts by ph (M included)\n"
    "      by category      event counts by cat (M excluded; \"\" for none)\n"
    "      metadata keys    the top-level keys other than traceEvents, in file order\n"
    "\n"
    "    Bad events are counted and otherwise left out; `strobe check` lists them.\n"
    "\n"
    "    With --format json, the same facts as one JSON object: file, schema_version,\n"
    "    time_span (first_ts_us, last_end_us, duration_us), base_time_ns (null when none),\n"
    "    events, metadata_events, bad_events, unterminated (and cut_at_byte for a cut\n"
    "    Perfetto trace), processes, threads, devices,\n"
    "    device_properties (as the file has it), by_phase, by_category, metadata_keys.\n"
    "\n"
    "    Text from the trace (names, string ids, keys) is printed with control characters\n"
    "    escaped (\\n, \\e, \\x01 ...); JSON escapes them by its own rules.\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F   text (default) or json\n"
    "    -q, --quiet      no progress line on standard error\n"
    "    -h, --help       show this text\n"
    "    -V, --version    show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  success\n"
    "    2  bad input or usage: the file cannot be read or is not a trace (one line on stderr\n"
    "       names the file and the problem, with the byte offset of a JSON syntax error)\n";

/* ---- counting ------------------------------------------------------------------------------ */

/* A map from a key (a 64-bit value and its kind: an md_id_kind, or 0 for plain numbers) to a
 * count, kept in order of first sight, with a hash index: a crafted trace can hold as many
 * distinct categories or devices as events. */
typedef struct tally {
    int64_t *keys;
    uint8_t *kinds;
    uint64_t *counts;
    size_t n, cap;
    uint32_t *slots; /* indexes into keys, MD_NONE: free (md_rehash) */
    size_t slot_cap;
} tally;

static size_t tally_hash(int64_t key, uint8_t kind) {
    uint64_t x = ((uint64_t)key + kind) * 0x9e3779b97f4a7c15ull;
    return (size_t)(x ^ (x >> 29) ^ ((uint64_t)kind << 17));
}

static uint64_t tally_hash_at(const void *arr, size_t k) {
    const tally *t = arr;
    return tally_hash(t->keys[k], t->kinds[k]);
}

static int tally_rehash(tally *t) {
    return md_rehash(&t->slots, &t->slot_cap, t->n, tally_hash_at, t);
}

static int tally_add_kind(tally *t, int64_t key, uint8_t kind, uint64_t by) {
    if ((t->n + 1) * 2 > t->slot_cap) STROBE_FORWARD_IF_ERR(tally_rehash(t));
    size_t i = tally_hash(key, kind) & (t->slot_cap - 1);
    for (uint32_t k; (k = t->slots[i]) != UINT32_MAX; i = (i + 1) & (t->slot_cap - 1)) {
        if (t->keys[k] == key && t->kinds[k] == kind) {
            t->counts[k] += by;
            return 0;
        }
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        int64_t *k = realloc(t->keys, cap * sizeof *k);
        if (k != NULL) t->keys = k;
        uint8_t *d = realloc(t->kinds, cap * sizeof *d);
        if (d != NULL) t->kinds = d;
        uint64_t *c = realloc(t->counts, cap * sizeof *c);
        if (c != NULL) t->counts = c;
        STROBE_RETURN_IF(k == NULL || d == NULL || c == NULL, STROBE_ENOMEM);
        t->cap = cap;
    }
    t->keys[t->n] = key;
    t->kinds[t->n] = kind;
    t->counts[t->n] = by;
    t->slots[i] = (uint32_t)t->n++;
    return 0;
}

static int tally_add(tally *t, int64_t key, uint64_t by) {
    return tally_add_kind(t, key, 0, by);
}

static void tally_free(tally *t) {
    free(t->slots);
    free(t->kinds);
    free(t->keys);
    free(t->counts);
}

/* ---- printing helpers ---------------------------------------------------------------------- */

static void print_us(int64_t ns) {
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    printf("%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
           (unsigned long long)(a % 1000));
}

/* Prints a string value of obj[key] decoded, or a number as written; nothing when absent. */
static void print_member(const char *obj, size_t len, const char *label, const char *key) {
    strobe_rd_value v;
    if (strobe_rd_obj_get(obj, len, key, &v) != 1) return;
    if (v.type == STROBE_RD_T_STRING) {
        char buf[256];
        if (strobe_rd_value_str(&v, buf, sizeof buf, NULL) < 0) return;
        printf(" %s \"%s\"", label, cli_esc(buf));
    } else if (v.type == STROBE_RD_T_NUMBER) {
        printf(" %s %s", label, cli_esc_n(v.raw, v.len));
    }
}

/* The deviceProperties array, one line per object in it. The text was checked as JSON by the
 * reader, so a scan for the objects at depth one (skipping strings) is enough. */
static void print_device_properties(const char *s, size_t len) {
    int depth = 0;
    size_t start = 0, n = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
        } else if (ch == '[' || ch == '{') {
            if (ch == '{' && depth == 1) start = i;
            depth++;
        } else if (ch == ']' || ch == '}') {
            depth--;
            if (ch == '}' && depth == 1) {
                const char *obj = s + start;
                size_t olen = i + 1 - start;
                printf("  deviceProperties[%zu]:", n++);
                print_member(obj, olen, "id", "id");
                print_member(obj, olen, "name", "name");
                print_member(obj, olen, "totalGlobalMem", "totalGlobalMem");
                print_member(obj, olen, "computeMajor", "computeMajor");
                print_member(obj, olen, "computeMinor", "computeMinor");
                print_member(obj, olen, "numSms", "numSms");
                putchar('\n');
            }
        }
    }
    if (n == 0) printf("  deviceProperties: present, no objects\n");
}

/* ---- the report ---------------------------------------------------------------------------- */

/* What the report counts beyond the model: devices, phases and categories. */
typedef struct facts {
    tally dev_events, dev_streams, cats, phases;
} facts;

static void facts_free(facts *f) {
    tally_free(&f->dev_events);
    tally_free(&f->dev_streams);
    tally_free(&f->cats);
    tally_free(&f->phases);
}

/* @return 0, or STROBE_ENOMEM when a tally could not grow. */
static int count_facts(const md_model *m, facts *f) {
    /* Devices: GPU events carry the device index as pid and the stream as tid. */
    for (size_t i = 0; i < m->thread_count; i++) {
        const md_thread *t = &m->threads[i];
        uint64_t gpu = 0;
        for (size_t k = 0; k < t->count; k++) {
            int kind = md_kind_of(m, t->order[k]);
            gpu += md_is_device_work(kind) || kind == MD_GPU_USER_ANNOTATION;
        }
        if (gpu == 0) continue;
        STROBE_FORWARD_IF_ERR(tally_add_kind(&f->dev_events, t->pid, t->pid_kind, gpu));
        STROBE_FORWARD_IF_ERR(tally_add_kind(&f->dev_streams, t->pid, t->pid_kind, 1));
    }
    if (m->metadata_events) STROBE_FORWARD_IF_ERR(tally_add(&f->phases, 'M', m->metadata_events));
    for (size_t i = 0; i < m->count; i++) {
        STROBE_FORWARD_IF_ERR(tally_add(&f->phases, (unsigned char)md_at(m, i).ph, 1));
        STROBE_FORWARD_IF_ERR(tally_add(&f->cats, md_cat_of(m, i), 1));
    }
    return 0;
}

static void report(const md_model *m, const facts *f) {
    printf("file:           %s\n", cli_esc(m->path));
    if (m->has_schema)
        printf("schema version: %lld\n", (long long)m->schema_version);
    else
        printf("schema version: none\n");
    int64_t base = m->has_base ? m->base_time_ns : 0;
    if (m->min_ts <= m->max_ts) {
        printf("time span:      first ts ");
        print_us(md_sub_sat(m->min_ts, base));
        printf(" us, last end ");
        print_us(md_sub_sat(m->max_ts, base));
        printf(" us, duration ");
        print_us(md_sub_sat(m->max_ts, m->min_ts));
        printf(" us\n");
    } else {
        printf("time span:      none (no event has a time)\n");
    }
    if (m->has_base)
        printf("base time:      %lld ns\n", (long long)m->base_time_ns);
    else
        printf("base time:      none\n");
    printf("events:         %zu (%llu metadata events; %llu bad)\n", m->count,
           (unsigned long long)m->metadata_events, (unsigned long long)m->bad_events);
    if (m->pf_cut)
        printf("unterminated:   yes (Perfetto trace cut inside a packet at byte %lld)\n",
               (long long)m->pf_cut_offset);
    else
        printf("unterminated:   %s\n", m->unterminated ? "yes" : "no");

    printf("processes (%zu):\n", m->proc_count);
    for (size_t i = 0; i < m->proc_count; i++) {
        printf("  pid ");
        cli_print_id(m, m->procs[i].pid, m->procs[i].pid_kind, 0);
        printf(" \"%s\"\n", cli_esc(md_str(m, m->procs[i].name)));
    }

    printf("threads (%zu):\n", m->thread_count);
    for (size_t i = 0; i < m->thread_count; i++) {
        const md_thread *t = &m->threads[i];
        printf("  pid ");
        cli_print_id(m, t->pid, t->pid_kind, 0);
        printf(" tid ");
        cli_print_id(m, t->tid, t->tid_kind, 0);
        printf(" events %zu", t->count);
        if (t->name) printf(" \"%s\"", cli_esc(md_str(m, t->name)));
        putchar('\n');
    }

    printf("devices (%zu):\n", f->dev_events.n);
    for (size_t i = 0; i < f->dev_events.n; i++) {
        printf("  pid ");
        cli_print_id(m, f->dev_events.keys[i], f->dev_events.kinds[i], 0);
        printf(" streams %llu gpu events %llu\n", (unsigned long long)f->dev_streams.counts[i],
               (unsigned long long)f->dev_events.counts[i]);
    }
    if (m->device_props) {
        const char *dp = md_str(m, m->device_props);
        print_device_properties(dp, strlen(dp));
    }

    printf("by phase:\n");
    for (size_t i = 0; i < f->phases.n; i++) {
        char ph[2] = {(char)f->phases.keys[i], '\0'};
        printf("  %s %llu\n", cli_esc(ph), (unsigned long long)f->phases.counts[i]);
    }
    printf("by category:\n");
    for (size_t i = 0; i < f->cats.n; i++)
        printf("  \"%s\" %llu\n", cli_esc(md_str(m, (uint32_t)f->cats.keys[i])),
               (unsigned long long)f->cats.counts[i]);
    printf("metadata keys (%zu):", m->meta_count);
    for (size_t i = 0; i < m->meta_count; i++)
        printf("%s %s", i ? "," : "", cli_esc(md_str(m, m->meta_keys[i])));
    putchar('\n');
}

/* The same facts as one JSON object; times in microseconds as the text report gives them. */
static void report_json(const md_model *m, const facts *f) {
    FILE *out = stdout;
    printf("{\"file\": ");
    cli_json_str(out, m->path);
    printf(",\n \"schema_version\": ");
    if (m->has_schema)
        printf("%lld", (long long)m->schema_version);
    else
        printf("null");
    int64_t base = m->has_base ? m->base_time_ns : 0;
    printf(",\n \"time_span\": ");
    if (m->min_ts <= m->max_ts) {
        printf("{\"first_ts_us\": ");
        print_us(md_sub_sat(m->min_ts, base));
        printf(", \"last_end_us\": ");
        print_us(md_sub_sat(m->max_ts, base));
        printf(", \"duration_us\": ");
        print_us(md_sub_sat(m->max_ts, m->min_ts));
        printf("}");
    } else {
        printf("null");
    }
    printf(",\n \"base_time_ns\": ");
    if (m->has_base)
        printf("%lld", (long long)m->base_time_ns);
    else
        printf("null");
    printf(",\n \"events\": %zu, \"metadata_events\": %llu, \"bad_events\": %llu", m->count,
           (unsigned long long)m->metadata_events, (unsigned long long)m->bad_events);
    printf(",\n \"unterminated\": %s", m->unterminated || m->pf_cut ? "true" : "false");
    if (m->pf_cut) printf(", \"cut_at_byte\": %lld", (long long)m->pf_cut_offset);
    printf(",\n \"processes\": [");
    for (size_t i = 0; i < m->proc_count; i++) {
        printf("%s\n  {\"pid\": ", i ? "," : "");
        cli_print_id(m, m->procs[i].pid, m->procs[i].pid_kind, 1);
        printf(", \"name\": ");
        cli_json_str(out, md_str(m, m->procs[i].name));
        putchar('}');
    }
    printf("],\n \"threads\": [");
    for (size_t i = 0; i < m->thread_count; i++) {
        const md_thread *t = &m->threads[i];
        printf("%s\n  {\"pid\": ", i ? "," : "");
        cli_print_id(m, t->pid, t->pid_kind, 1);
        printf(", \"tid\": ");
        cli_print_id(m, t->tid, t->tid_kind, 1);
        printf(", \"events\": %zu, \"name\": ", t->count);
        if (t->name)
            cli_json_str(out, md_str(m, t->name));
        else
            printf("null");
        putchar('}');
    }
    printf("],\n \"devices\": [");
    for (size_t i = 0; i < f->dev_events.n; i++) {
        printf("%s\n  {\"pid\": ", i ? "," : "");
        cli_print_id(m, f->dev_events.keys[i], f->dev_events.kinds[i], 1);
        printf(", \"streams\": %llu, \"gpu_events\": %llu}",
               (unsigned long long)f->dev_streams.counts[i],
               (unsigned long long)f->dev_events.counts[i]);
    }
    /* deviceProperties as the file has it: the reader checked it is JSON. */
    printf("],\n \"device_properties\": %s", m->device_props ? md_str(m, m->device_props) : "null");
    printf(",\n \"by_phase\": {");
    for (size_t i = 0; i < f->phases.n; i++) {
        printf("%s", i ? ", " : "");
        cli_json_str(out, (char[]){(char)f->phases.keys[i], '\0'});
        printf(": %llu", (unsigned long long)f->phases.counts[i]);
    }
    printf("},\n \"by_category\": {");
    for (size_t i = 0; i < f->cats.n; i++) {
        printf("%s", i ? ", " : "");
        cli_json_str(out, md_str(m, (uint32_t)f->cats.keys[i]));
        printf(": %llu", (unsigned long long)f->cats.counts[i]);
    }
    printf("},\n \"metadata_keys\": [");
    for (size_t i = 0; i < m->meta_count; i++) {
        printf("%s", i ? ", " : "");
        cli_json_str(out, md_str(m, m->meta_keys[i]));
    }
    printf("]}\n");
}

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("info", msg, arg);
}

const struct option cmd_info_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int json = 0, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_info_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_info_usage);
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
        default:
            return cli_option_error("info", c, argv, cmd_info_options);
        }
    }
    if (cli_trace_operand("info", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model m;
    if (cli_load(&m, "info", path, quiet) != 0) return CLI_BAD_INPUT;
    facts f;
    memset(&f, 0, sizeof f);
    int work = count_facts(&m, &f);
    if (work == 0 && json)
        report_json(&m, &f);
    else if (work == 0)
        report(&m, &f);
    int rc = cli_finish("info", path, work, CLI_OK);
    facts_free(&f);
    md_free(&m);
    return rc;
}
