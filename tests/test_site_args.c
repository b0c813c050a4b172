/* test_site_args: the core's hooks for sources other than the public API (core/hooks.h), which
 * NVTX capture uses, without NVTX: sites that carry constant args, payloads given to the next
 * begin or instant, and naming a thread by its OS id.
 *
 * The same calls run in three sessions: collected at stop (args read with strobe_event_arg), and
 * streamed to a JSON file (args read back with strobe's reader); a third keeps only FUNCTION
 * ranges, so the payload of a filtered begin must vanish with it. */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/hooks.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"

/* "domain" = "d", "color" = "#010203", then the empty key that ends the list. */
static strobe__site_args with_args = {
    {"argsite", __FILE__, __LINE__, STROBE_RECORD_SCOPE_USER_SCOPE | STROBE__SITE_HAS_ARGS},
    "domain\0\"d\"\0color\0\"#010203\"\0"};
static const strobe_site plain = {"plain", __FILE__, __LINE__, STROBE_RECORD_SCOPE_USER_SCOPE};
static const strobe_site func = {"func", __FILE__, __LINE__, STROBE_RECORD_SCOPE_FUNCTION};

static uint64_t bits_of(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* The calls every session makes. Expected events, in order:
 *   range "argsite"  {domain "d", color "#010203", payload 7}
 *     instant "plain" {payload 1.5}
 *   range "plain"    {payload -3}
 *   instant "argsite" {domain, color}            (no payload)
 *   range "plain"    {}                          (no payload left over)
 *   range "func"     {payload 18446744073709551615} */
static void calls(void) {
    strobe__begin_site_payload(&with_args.site, STROBE__PAYLOAD_U64, 7);
    strobe__instant_site_payload(&plain, STROBE__PAYLOAD_DOUBLE, bits_of(1.5));
    strobe__end();
    strobe__begin_site_payload(&plain, STROBE__PAYLOAD_I32, (uint32_t)-3);
    strobe__end();
    strobe__instant_site_payload(&with_args.site, STROBE__PAYLOAD_NONE, 0);
    strobe__begin_site_payload(&plain, STROBE__PAYLOAD_NONE, 0);
    strobe__end();
    strobe__begin_site_payload(&func, STROBE__PAYLOAD_U64, UINT64_MAX);
    strobe__end();
}

static const char *arg(const strobe_result *r, size_t i, const char *key) {
    return strobe_event_arg(r, i, key);
}

static void check_collected(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    calls();
    int64_t me = (int64_t)syscall(SYS_gettid);
    CHECK_EQ(strobe__thread_name_tid(me, "named-by-tid"), 1);
    CHECK_EQ(strobe__thread_name_tid(-5, "nobody"), 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    const char *names[] = {"argsite", "plain", "plain", "argsite", "plain", "func"};
    const int kinds[] = {STROBE_EVENT_RANGE,   STROBE_EVENT_INSTANT, STROBE_EVENT_RANGE,
                         STROBE_EVENT_INSTANT, STROBE_EVENT_RANGE,   STROBE_EVENT_RANGE};
    size_t k = 0, idx[6];
    for (size_t i = 0; i < n && k < 6; i++) {
        if (ev[i].device_type != STROBE_DEVICE_CPU || ev[i].kind == STROBE_EVENT_COUNTER) continue;
        if (strcmp(ev[i].name, names[k]) != 0) continue;
        CHECK_EQ(ev[i].kind, kinds[k]);
        idx[k++] = i;
    }
    REQUIRE(k == 6);
    CHECK_STR(ev[idx[0]].category, "user_annotation");
    CHECK_EQ(ev[idx[0]].scope, STROBE_RECORD_SCOPE_USER_SCOPE);
    CHECK_STR(arg(r, idx[0], "domain"), "\"d\"");
    CHECK_STR(arg(r, idx[0], "color"), "\"#010203\"");
    CHECK_STR(arg(r, idx[0], "payload"), "7");
    CHECK_EQ(ev[idx[1]].parent, idx[0]);
    CHECK_STR(arg(r, idx[1], "payload"), "1.5");
    CHECK(arg(r, idx[1], "domain") == NULL);
    CHECK_STR(arg(r, idx[2], "payload"), "-3");
    CHECK_STR(arg(r, idx[3], "domain"), "\"d\"");
    CHECK(arg(r, idx[3], "payload") == NULL);
    CHECK(ev[idx[4]].args == NULL);
    CHECK_STR(ev[idx[5]].category, "cpu_op");
    CHECK_STR(arg(r, idx[5], "payload"), "18446744073709551615");
    const strobe_thread_info *th = strobe_result_threads(r);
    int named = 0;
    for (size_t i = 0; i < strobe_result_thread_count(r); i++)
        if (th[i].tid == me) named = th[i].name && strcmp(th[i].name, "named-by-tid") == 0;
    CHECK(named);
    strobe_result_free(r);
}

/* The args object of an event, with the spaces taken out. */
static void squeeze(const char *s, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++)
        if (s[i] != ' ' && s[i] != '\n') out[k++] = s[i];
    out[k] = '\0';
}

static void check_streamed(const char *path, int filtered) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_path = path;
    if (filtered) cfg.scopes = STROBE_SCOPE_BIT(STROBE_RECORD_SCOPE_FUNCTION);
    REQUIRE(strobe_start(&cfg) == 0);
    calls();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);

    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    REQUIRE(strobe_rd_open(&rd, path, &opt) == 0);
    const char *names[] = {"argsite", "plain", "plain", "argsite", "plain", "func"};
    const char *want[] = {"{\"domain\":\"d\",\"color\":\"#010203\",\"payload\":7}",
                          "{\"payload\":1.5}",
                          "{\"payload\":-3}",
                          "{\"domain\":\"d\",\"color\":\"#010203\"}",
                          "",
                          "{\"payload\":18446744073709551615}"};
    /* Ranges are written at their end, so the order in the file is by end: instants and inner
     * ranges first. Each expected event is matched by name and args. */
    int found[6] = {0};
    strobe_rd_item it;
    while (strobe_rd_next(rd, &it) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        if (e->ph.len != 1 || (e->ph.s[0] != 'X' && e->ph.s[0] != 'i')) continue;
        char a[256];
        squeeze(e->args ? e->args : "", e->args ? e->args_len : 0, a, sizeof a);
        for (int k = 0; k < 6; k++) {
            if (e->name.len != strlen(names[k]) || memcmp(e->name.s, names[k], e->name.len) != 0)
                continue;
            if (strcmp(a, want[k]) == 0 || (want[k][0] == '\0' && strcmp(a, "{}") == 0)) found[k]++;
        }
    }
    strobe_rd_close(rd);
    for (int k = 0; k < 6; k++) {
        /* Filtered: the USER_SCOPE ranges go, with their payloads; instants (never filtered by
         * scope) and "func" (a FUNCTION range) stay, each with its own args only. */
        int expect = !filtered || k == 1 || k == 3 || k == 5;
        if (!expect) {
            CHECK_EQ(found[k], 0);
        } else {
            if (found[k] != 1)
                fprintf(stderr, "streamed event %d (%s %s) not found once\n", k, names[k], want[k]);
            CHECK_EQ(found[k], 1);
        }
    }
}

int main(void) {
    check_collected();
    check_streamed(STROBE_TEST_OUT_DIR "/site_args_stream.json", 0);
    check_streamed(STROBE_TEST_OUT_DIR "/site_args_filtered.json", 1);
    return check_result();
}
