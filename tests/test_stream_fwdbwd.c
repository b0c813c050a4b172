/* test_stream_fwdbwd.c: torch's "fwdbwd" flows in streamed traces, JSON and .pftrace
 * (stream_out.c).
 *
 * Ops are recorded as the torch observer records them, through the core's table (torch_api.h,
 * begin_op), without torch: forward ops with a sequence number on a thread that torch numbers 1,
 * then backward ops that name them ("Fwd thread id" 1). The streamed file must link each backward
 * op to the forward op of its number that started last, with a "s" on the forward op and an "f"
 * with "bp": "e" on the backward op, cat and name "fwdbwd", ids from 1, as saved traces do
 * (json_writer.c, strobe__fwdbwd_plan_make). A forward op with no backward op and a backward op
 * with no forward op get none. A .pftrace's flows are ids on the slices (a start on every
 * numbered forward op's begin, as it is written before its backward op exists), read back as
 * "s" and "f" events without their category. The files are kept in out/stream/ for the
 * validators. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "core/torch_api.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"

static void sleep_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

/* One op as the observer records it: ids {sequence number, fwd thread id, record function id,
 * the calling thread's torch id}. */
static void op(const strobe__torch_api *api, const char *name, int64_t seq, int64_t fwd_tid) {
    static int64_t rfid;
    const int64_t ids[4] = {seq, fwd_tid, ++rfid, 1};
    api->begin_op(NULL, name,
                  fwd_tid ? STROBE_RECORD_SCOPE_BACKWARD_FUNCTION : STROBE_RECORD_SCOPE_FUNCTION,
                  ids);
    sleep_us(50);
    api->end();
    sleep_us(50);
}

typedef struct flow {
    char ph;
    uint64_t id;
    int64_t ts;
} flow;

typedef struct seen {
    int64_t ts[8]; /* the ops' starts, by index in `names` */
    flow flows[16];
    int n, other_cat, bad_bp;
} seen;

static const char *const names[] = {"fwd_a", "fwd_b", "fwd_c",    "fwd_d",
                                    "bwd_b", "bwd_d", "bwd_none", "wrapper"};

/* Reads the ops' starts and the flows (JSON: with their category checked; a .pftrace's flows
 * are ids only). */
static int read_trace(const char *path, seen *w, int json) {
    memset(w, 0, sizeof *w);
    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    if (strobe_rd_open(&rd, path, &opt) != 0) {
        fprintf(stderr, "cannot open %s\n", path);
        strobe_rd_close(rd);
        return -1;
    }
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind != STROBE_RD_EVENT || it.event->ph.len != 1) continue;
        const strobe_rd_event *e = it.event;
        char ph = e->ph.s[0];
        if (ph == 'X') {
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (e->name.len == strlen(names[i]) &&
                    memcmp(e->name.s, names[i], e->name.len) == 0)
                    w->ts[i] = e->ts_ns;
            continue;
        }
        if (ph != 's' && ph != 'f') continue;
        if (json && (e->cat.s == NULL || e->cat.len != 6 || memcmp(e->cat.s, "fwdbwd", 6) != 0 ||
                     e->name.s == NULL || e->name.len != 6 || memcmp(e->name.s, "fwdbwd", 6) != 0))
            w->other_cat++;
        if (json && ph == 'f' && (e->bp.s == NULL || e->bp.len != 1 || e->bp.s[0] != 'e'))
            w->bad_bp++;
        if (w->n < 16) w->flows[w->n++] = (flow){ph, (uint64_t)e->id.num, e->ts_ns};
    }
    strobe_rd_close(rd);
    return rc;
}

/* The start of the flow that finishes at `to`: the time of the "s" with the id of the "f" there;
 * 0: none. */
static int64_t flow_from(const seen *w, int64_t to) {
    for (int i = 0; i < w->n; i++) {
        if (w->flows[i].ph != 'f' || w->flows[i].ts != to) continue;
        for (int j = 0; j < w->n; j++)
            if (w->flows[j].ph == 's' && w->flows[j].id == w->flows[i].id) return w->flows[j].ts;
    }
    return 0;
}

static int count_ph(const seen *w, char ph) {
    int n = 0;
    for (int i = 0; i < w->n; i++)
        n += w->flows[i].ph == ph;
    return n;
}

/* Streams the ops to `file` in out/stream/ and checks the flows read back. */
static void test_format(const char *file) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/stream", STROBE_TEST_OUT_DIR);
    mkdir(STROBE_TEST_OUT_DIR, 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    const strobe__torch_api *api = strobe__torch_api_get();
    REQUIRE(api != NULL && api->size >= sizeof *api && api->begin_op != NULL);

    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    /* Forward: two ops numbered 5 (the later one is linked), 6 with no backward op, and 7
     * inside a wrapper op without a number. */
    op(api, "fwd_a", 5, 0);
    op(api, "fwd_b", 5, 0);
    op(api, "fwd_c", 6, 0);
    const int64_t none[4] = {-1, 0, 100, 1};
    api->begin_op(NULL, "wrapper", STROBE_RECORD_SCOPE_FUNCTION, none);
    op(api, "fwd_d", 7, 0);
    api->end();
    /* Backward: ops of 5 and 7 (linked in that order), and of 9 (no forward op). */
    op(api, "bwd_b", 5, 1);
    op(api, "bwd_d", 7, 1);
    op(api, "bwd_none", 9, 1);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const char *sm = NULL;
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *key, *json;
        if (strobe_result_metadata(r, i, &key, &json) == 0 && strcmp(key, "strobe_stream") == 0)
            sm = json;
    }
    CHECK(sm != NULL && strstr(sm, "\"fwdbwd_flows\": 2, \"fwdbwd_evicted\": 0") != NULL);
    if (sm) fprintf(stderr, "%s: strobe_stream: %s\n", file, sm);
    strobe_result_free(r);

    seen w;
    int json = strstr(file, ".json") != NULL;
    REQUIRE(read_trace(path, &w, json) == 0);
    CHECK_EQ(w.other_cat, 0);
    CHECK_EQ(w.bad_bp, 0);
    /* JSON: a start per linked forward op. Perfetto: one on every numbered forward op's begin
     * (written before anyone knows whether a backward op comes), which links nothing alone. */
    CHECK_EQ(count_ph(&w, 's'), json ? 2 : 4);
    CHECK_EQ(count_ph(&w, 'f'), 2);
    /* fwd_b (not fwd_a) -> bwd_b, fwd_d -> bwd_d, each at its op's start. */
    CHECK(w.ts[1] != 0 && w.ts[4] != 0 && w.ts[3] != 0 && w.ts[5] != 0);
    CHECK_EQ(flow_from(&w, w.ts[4]), w.ts[1]);
    CHECK_EQ(flow_from(&w, w.ts[5]), w.ts[3]);
    if (json) {
        /* Ids from 1, in the order the backward ops end. */
        for (int i = 0; i < w.n; i++)
            if (w.flows[i].ph == 'f')
                CHECK_EQ(w.flows[i].id, (uint64_t)(w.flows[i].ts == w.ts[4] ? 1 : 2));
    }
}

int main(void) {
    test_format("fwdbwd.json");
    test_format("fwdbwd.pftrace");
    return check_result();
}
