/* test_merge.c: cli_merge (cli/merge.c), the merge of per-process traces that `strobe record`
 * (and later `strobe merge`) uses, on traces written by hand so that every expected value is
 * known: absolute times across inputs with different bases, names by pid (the input with events
 * wins over a later one without), args, flows made distinct per input and bound to their
 * slices, a slice that does not nest (ended with its parent, counted), instants and counters, a
 * stream cut short (its events kept, a session span made up to the given end), an input cut
 * inside an event (what came before kept), and the same inputs to .pftrace, read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "merge.h"
#include "reader/trace_reader.h"

#define A_BASE 1000000000000LL
#define B_BASE (A_BASE + 1000000LL)
#define B_END (B_BASE + 5000000LL)

static const char input_a[] =
    "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1000000000000, \"traceEvents\": [\n"
    "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 100, \"tid\": 0, \"args\": "
    "{\"name\": \"a\"}},\n"
    "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 100, \"tid\": 101, \"args\": "
    "{\"name\": \"main\"}},\n"
    "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 0, \"tid\": 0, \"args\": "
    "{\"name\": \"GPU 0\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"inner\", \"pid\": 100, \"tid\": 101, \"ts\": "
    "20.000, \"dur\": 10.000},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"outer\", \"pid\": 100, \"tid\": 101, \"ts\": "
    "10.000, \"dur\": 100.000, \"args\": {\"k\": \"v\", \"n\": 7, \"dims\": [[2, 3]]}},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"straddle\", \"pid\": 100, \"tid\": 101, "
    "\"ts\": 90.000, \"dur\": 50.000},\n"
    "{\"ph\": \"s\", \"id\": 1, \"pid\": 100, \"tid\": 101, \"ts\": 20.000, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\"},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 7, \"ts\": "
    "50.000, "
    "\"dur\": 5.000},\n"
    "{\"ph\": \"f\", \"id\": 1, \"pid\": 0, \"tid\": 7, \"ts\": 50.000, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"strobe session\", \"pid\": 100, \"tid\": 0, "
    "\"ts\": 1.000, \"dur\": 200.000}\n"
    "]}\n";

/* A stream cut short: no session span, "complete": false. */
static const char input_b[] =
    "{\"baseTimeNanoseconds\": 1000001000000, \"traceEvents\": [\n"
    "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 200, \"tid\": 0, \"args\": "
    "{\"name\": \"b\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launch\", \"pid\": 200, \"tid\": 201, "
    "\"ts\": 5.000, \"dur\": 2.000},\n"
    "{\"ph\": \"s\", \"id\": 1, \"pid\": 200, \"tid\": 201, \"ts\": 5.000, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\"},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 7, \"ts\": "
    "10.000, "
    "\"dur\": 1.000},\n"
    "{\"ph\": \"f\", \"id\": 1, \"pid\": 0, \"tid\": 7, \"ts\": 10.000, \"cat\": \"ac2g\", "
    "\"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"mark\", \"pid\": "
    "200, \"tid\": 201, \"ts\": 6.000, \"args\": {\"x\": 1}},\n"
    "{\"ph\": \"C\", \"cat\": \"cpu_counter\", \"name\": \"mem\", \"pid\": 200, \"tid\": 201, "
    "\"ts\": 6.000, \"args\": {\"mem\": 42}}\n"
    "], \"strobe_stream\": {\"complete\": true, \"dropped_events\": 5, \"lost_events\": 2}}\n";

/* The same pid, later, without events: its name does not win. */
static const char input_c[] =
    "{\"baseTimeNanoseconds\": 1000002000000, \"traceEvents\": [\n"
    "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 200, \"tid\": 0, \"args\": "
    "{\"name\": \"c\"}}\n"
    "]}\n";

/* Cut inside its second event. */
static const char input_d[] =
    "{\"baseTimeNanoseconds\": 1000000000000, \"traceEvents\": [\n"
    "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 300, \"tid\": 0, \"args\": "
    "{\"name\": \"d\"}},\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"before-cut\", \"pid\": 300, \"tid\": 301, "
    "\"ts\": 1.000, \"dur\": 1.000},\n"
    "{\"ph\": \"X\", \"na";

/* torch's fwdbwd flows next to a launch's ac2g flow, both with id 1, as one process writes them
 * (the stream counts its fwdbwd ids from 1): `P` is its pid, its threads P + 1 and P + 2. */
#define FWDBWD_INPUT(P)                                                                            \
    "{\"baseTimeNanoseconds\": 1000000000000, \"traceEvents\": [\n"                                \
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"fwd\", \"pid\": " #P ", \"tid\": " #P        \
    "1, \"ts\": 10.000, \"dur\": 10.000},\n"                                                       \
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launch\", \"pid\": " #P                \
    ", \"tid\": " #P "1, \"ts\": 25.000, \"dur\": 2.000},\n"                                       \
    "{\"ph\": \"s\", \"id\": 1, \"pid\": " #P ", \"tid\": " #P                                     \
    "1, \"ts\": 25.000, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"                                 \
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kernel\", \"pid\": " #P ", \"tid\": " #P     \
    "2, \"ts\": 30.000, \"dur\": 5.000},\n"                                                        \
    "{\"ph\": \"f\", \"id\": 1, \"pid\": " #P ", \"tid\": " #P                                     \
    "2, \"ts\": 30.000, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n"                  \
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bwd\", \"pid\": " #P ", \"tid\": " #P        \
    "1, \"ts\": 40.000, \"dur\": 10.000},\n"                                                       \
    "{\"ph\": \"s\", \"id\": 1, \"pid\": " #P ", \"tid\": " #P                                     \
    "1, \"ts\": 10.000, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"},\n"                             \
    "{\"ph\": \"f\", \"id\": 1, \"pid\": " #P ", \"tid\": " #P                                     \
    "1, \"ts\": 40.000, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"}\n"               \
    "]}\n"

static void write_file(const char *path, const char *text, const char *patch_from,
                       const char *patch_to) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    const char *at = patch_from ? strstr(text, patch_from) : NULL;
    if (at) {
        fwrite(text, 1, (size_t)(at - text), f);
        fputs(patch_to, f);
        fputs(at + strlen(patch_from), f);
    } else {
        fputs(text, f);
    }
    fclose(f);
}

typedef struct seen {
    int64_t outer_ts, outer_dur, inner_ts, straddle_dur, launch_ts, k1_ts, k2_ts, b_session_dur;
    int outer_args, mark_args, counter_ok, b_session_stopped, before_cut;
    uint64_t flow_s[4], flow_f[4];
    int64_t flow_s_ts[4], flow_f_ts[4];
    int ns, nf;
    char pname[4][16]; /* pids 100, 200, 300, 0 */
} seen;

static int pid_slot(int64_t pid) {
    return pid == 100 ? 0 : pid == 200 ? 1 : pid == 300 ? 2 : pid == 0 ? 3 : -1;
}

static void read_back(const char *path, seen *s) {
    memset(s, 0, sizeof *s);
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.prescan_base = 1;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, &opt);
    CHECK_EQ(rc, 0);
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        rc = 0;
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        const char *name = e->name.s ? e->name.s : "";
        char ph = e->ph.s ? e->ph.s[0] : '?';
        strobe_rd_value v;
        int64_t x;
        if (ph == 'M' && strcmp(name, "process_name") == 0 && pid_slot(e->pid.num) >= 0 &&
            strobe_rd_event_arg(e, "name", &v) == 1)
            strobe_rd_value_str(&v, s->pname[pid_slot(e->pid.num)], 16, NULL);
        if (ph == 'X' && strcmp(name, "outer") == 0) {
            s->outer_ts = e->abs_ts_ns;
            s->outer_dur = e->dur_ns;
            char buf[8];
            s->outer_args = strobe_rd_event_arg(e, "k", &v) == 1 &&
                            strobe_rd_value_str(&v, buf, sizeof buf, NULL) == 0 &&
                            strcmp(buf, "v") == 0 && strobe_rd_event_arg(e, "n", &v) == 1 &&
                            strobe_rd_value_int(&v, &x) == 0 && x == 7 &&
                            strobe_rd_event_arg(e, "dims", &v) == 1 && v.type == STROBE_RD_T_ARRAY;
        }
        if (ph == 'X' && strcmp(name, "inner") == 0) s->inner_ts = e->abs_ts_ns;
        if (ph == 'X' && strcmp(name, "straddle") == 0) s->straddle_dur = e->dur_ns;
        if (ph == 'X' && strcmp(name, "launch") == 0) s->launch_ts = e->abs_ts_ns;
        if (ph == 'X' && strcmp(name, "k1") == 0) s->k1_ts = e->abs_ts_ns;
        if (ph == 'X' && strcmp(name, "k2") == 0) s->k2_ts = e->abs_ts_ns;
        if (ph == 'X' && strcmp(name, "before-cut") == 0) s->before_cut++;
        if (ph == 'X' && strcmp(name, "strobe session") == 0 && e->pid.num == 200) {
            s->b_session_dur = e->dur_ns;
            s->b_session_stopped =
                strobe_rd_event_arg(e, "stopped", &v) == 1 && v.type == STROBE_RD_T_FALSE;
        }
        if (ph == 'i' && strcmp(name, "mark") == 0)
            s->mark_args = strobe_rd_event_arg(e, "x", &v) == 1 &&
                           strobe_rd_value_int(&v, &x) == 0 && x == 1 && e->pid.num == 200;
        if (ph == 'C' && strstr(name, "mem") && strobe_rd_event_arg(e, "mem", &v) == 1)
            s->counter_ok = strobe_rd_value_int(&v, &x) == 0 && x == 42;
        if (ph == 's' && s->ns < 4)
            s->flow_s_ts[s->ns] = e->abs_ts_ns, s->flow_s[s->ns++] = e->id.num;
        if (ph == 'f' && s->nf < 4)
            s->flow_f_ts[s->nf] = e->abs_ts_ns, s->flow_f[s->nf++] = e->id.num;
    }
    CHECK_EQ(rc, 0);
    strobe_rd_close(rd);
}

/* Two processes' fwdbwd and ac2g flows, all with id 1, merged into JSON: each keeps its category,
 * its ends (fwd -> bwd, launch -> kernel) and an id no other flow has. */
static void test_fwdbwd(const char *dir) {
    char pe[64], pf[64], out[64];
    snprintf(pe, sizeof pe, "%s/e.json", dir);
    snprintf(pf, sizeof pf, "%s/f.json", dir);
    snprintf(out, sizeof out, "%s/fwdbwd.json", dir);
    write_file(pe, FWDBWD_INPUT(400), NULL, NULL);
    write_file(pf, FWDBWD_INPUT(500), NULL, NULL);
    cli_merge_input in[2] = {{.path = pe, .pid = 400}, {.path = pf, .pid = 500}};
    CHECK_EQ(cli_merge("test", in, 2, out, "merged", NULL), 0);
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, out, &opt);
    CHECK_EQ(rc, 0);
    /* Flows by (category, pid, ph): their ids and times. */
    uint64_t id[2][2][2] = {{{0}}};
    int64_t ts[2][2][2] = {{{0}}};
    int count = 0;
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        rc = 0;
        if (it.kind != STROBE_RD_EVENT || it.event->ph.s == NULL) continue;
        const strobe_rd_event *e = it.event;
        char ph = e->ph.s[0];
        if (ph != 's' && ph != 'f') continue;
        count++;
        int fb = e->cat.s && e->cat.len == 6 && memcmp(e->cat.s, "fwdbwd", 6) == 0;
        int ac = e->cat.s && e->cat.len == 4 && memcmp(e->cat.s, "ac2g", 4) == 0;
        CHECK(fb || ac);
        int p = e->pid.num == 500;
        id[fb][p][ph == 'f'] = e->id.num;
        ts[fb][p][ph == 'f'] = e->ts_ns;
    }
    CHECK_EQ(rc, 0);
    strobe_rd_close(rd);
    CHECK_EQ(count, 8);
    for (int p = 0; p < 2; p++) {
        CHECK_EQ(id[1][p][0], id[1][p][1]);
        CHECK_EQ(ts[1][p][0], 10000);
        CHECK_EQ(ts[1][p][1], 40000);
        CHECK_EQ(id[0][p][0], id[0][p][1]);
        CHECK_EQ(ts[0][p][0], 25000);
        CHECK_EQ(ts[0][p][1], 30000);
    }
    /* The fwdbwd ids differ between the processes, as the ac2g ids do. */
    CHECK(id[1][0][0] != id[1][1][0]);
    CHECK(id[0][0][0] != id[0][1][0]);
    unlink(pe);
    unlink(pf);
    unlink(out);
}

int main(void) {
    char dir[] = "/tmp/strobe-test-merge-XXXXXX";
    if (mkdtemp(dir) == NULL) return 1;
    char pa[64], pb[64], pc[64], pd[64], out_json[64], out_pf[64];
    snprintf(pa, sizeof pa, "%s/a.json", dir);
    snprintf(pb, sizeof pb, "%s/b.json", dir);
    snprintf(pc, sizeof pc, "%s/c.json", dir);
    snprintf(pd, sizeof pd, "%s/d.json", dir);
    snprintf(out_json, sizeof out_json, "%s/out.json", dir);
    snprintf(out_pf, sizeof out_pf, "%s/out.pftrace", dir);
    write_file(pa, input_a, NULL, NULL);
    write_file(pb, input_b, "\"complete\": true", "\"complete\": false");
    write_file(pc, input_c, NULL, NULL);
    write_file(pd, input_d, NULL, NULL);
    cli_merge_input in[4] = {{.path = pa, .pid = 100},
                             {.path = pb, .pid = 200, .end_ns = B_END},
                             {.path = pc, .pid = 200, .process_name = "override-c"},
                             {.path = pd, .pid = 300}};
    const char *outs[2] = {out_json, out_pf};
    for (int k = 0; k < 2; k++) {
        cli_merge_stats st;
        fprintf(stderr, "(a message about %s being cut is expected)\n", pd);
        CHECK_EQ(cli_merge("test", in, 4, outs[k], "merged", &st), 0);
        CHECK_EQ(st.processes, 3);
        CHECK_EQ(st.cut, 1);
        CHECK_EQ(st.empty, 1);
        CHECK_EQ(st.clipped, 1);
        CHECK_EQ(st.device_events, 2);
        CHECK_EQ(st.dropped, 7);
        seen s;
        read_back(outs[k], &s);
        CHECK_STR(s.pname[0], "a");
        CHECK_STR(s.pname[1], "b");
        CHECK_STR(s.pname[2], "d");
        CHECK_STR(s.pname[3], "GPU 0");
        CHECK_EQ(s.outer_ts, A_BASE + 10000);
        CHECK_EQ(s.outer_dur, 100000);
        CHECK(s.outer_args);
        CHECK_EQ(s.inner_ts, A_BASE + 20000);
        /* 90 us .. the end of outer at 110 us; JSON shows it ending 1 ns before outer ends, as
         * the writers show a result's (merge.c, shown_end). */
        CHECK_EQ(s.straddle_dur, k == 0 ? 20000 - 1 : 20000);
        CHECK_EQ(s.launch_ts, B_BASE + 5000);
        CHECK_EQ(s.k1_ts, A_BASE + 50000);
        CHECK_EQ(s.k2_ts, B_BASE + 10000);
        CHECK(s.mark_args);
        CHECK(s.counter_ok);
        CHECK_EQ(s.before_cut, 1);
        CHECK(s.b_session_stopped);
        CHECK_EQ(s.b_session_dur, B_END - (B_BASE + 1000));
        /* Two flows, with distinct ids, each start on its launch and end on its kernel. */
        CHECK_EQ(s.ns, 2);
        CHECK_EQ(s.nf, 2);
        if (s.ns == 2 && s.nf == 2) {
            CHECK(s.flow_s[0] != s.flow_s[1]);
            for (int i = 0; i < 2; i++) {
                int j = s.flow_f[0] == s.flow_s[i] ? 0 : s.flow_f[1] == s.flow_s[i] ? 1 : -1;
                CHECK(j >= 0);
                if (j < 0) continue;
                int64_t from = s.flow_s_ts[i], to = s.flow_f_ts[j];
                CHECK((from == A_BASE + 20000 && to == A_BASE + 50000) ||
                      (from == B_BASE + 5000 && to == B_BASE + 10000));
            }
        }
    }
    test_fwdbwd(dir);
    /* Nothing readable: an error, and no output. */
    cli_merge_input none = {.path = "/nonexistent/strobe-merge-input.json"};
    char out_none[80];
    snprintf(out_none, sizeof out_none, "%s/none.json", dir);
    CHECK_EQ(cli_merge("test", &none, 1, out_none, NULL, NULL), -1);
    CHECK(access(out_none, F_OK) != 0);
    const char *files[] = {pa, pb, pc, pd, out_json, out_pf};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(dir);
    return check_result();
}
