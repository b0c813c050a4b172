/* test_begin_args: ranges whose args are given per call and copied into the record
 * (core/hooks.h's strobe__begin_site_args, which the NCCL plugin uses), collected at stop (args
 * read with strobe_event_arg after the session's buffers are gone: keys and values must have been
 * copied) and streamed to a JSON file (read back with strobe's reader), and in a session that
 * keeps only FUNCTION ranges (a filtered begin's args vanish with it). */
#include <string.h>

#include "check.h"
#include "core/hooks.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"

static strobe__site_args with_args = {
    {"argsite", __FILE__, __LINE__, STROBE_RECORD_SCOPE_FUNCTION | STROBE__SITE_HAS_ARGS},
    "domain\0\"d\"\0"};
static const strobe_site func = {"func", __FILE__, __LINE__, STROBE_RECORD_SCOPE_FUNCTION};
static const strobe_site user = {"user", __FILE__, __LINE__, STROBE_RECORD_SCOPE_USER_SCOPE};

/* Expected, in order:
 *   "argsite" {domain "d", k1 "v", n 42}
 *   "func"    {a "x"}                       (the pair cut short, "b" without a value, is left out)
 *   "func"    {}                            (a list over STROBE__ARGS_MAX_BYTES: none)
 *   "user"    {u [1,2]}                     (gone when only FUNCTION ranges are kept)
 *   "func"    {a0 0 .. a15 15}              (16 args at most; a16.. left out) */
static char big[STROBE__ARGS_MAX_BYTES + 16];
static void calls(void) {
    static const char l1[] = "k1\0\"v\"\0n\0"
                             "42";
    strobe__begin_site_args(&with_args.site, l1, sizeof l1);
    strobe__end();
    static const char l2[] = "a\0\"x\"\0b";
    strobe__begin_site_args(&func, l2, sizeof l2);
    strobe__end();
    memset(big, 'k', sizeof big);
    big[1] = '\0';
    big[sizeof big - 1] = '\0';
    strobe__begin_site_args(&func, big, sizeof big);
    strobe__end();
    static const char l4[] = "u\0[1,2]";
    strobe__begin_site_args(&user, l4, sizeof l4);
    {
        char many[512];
        size_t o = 0;
        for (int i = 0; i < 20; i++)
            o += (size_t)snprintf(many + o, sizeof many - o, "a%d%c%d%c", i, 0, i, 0);
        strobe__begin_site_args(&func, many, o);
        strobe__end();
    }
    strobe__end();
}

static void check_collected(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    calls();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r), k = 0, idx[5];
    const char *names[] = {"argsite", "func", "func", "user", "func"};
    for (size_t i = 0; i < n && k < 5; i++)
        if (ev[i].kind == STROBE_EVENT_RANGE && strcmp(ev[i].name, names[k]) == 0) idx[k++] = i;
    REQUIRE(k == 5);
    CHECK_STR(strobe_event_arg(r, idx[0], "domain"), "\"d\"");
    CHECK_STR(strobe_event_arg(r, idx[0], "k1"), "\"v\"");
    CHECK_STR(strobe_event_arg(r, idx[0], "n"), "42");
    CHECK_STR(strobe_event_arg(r, idx[1], "a"), "\"x\"");
    CHECK(strobe_event_arg(r, idx[1], "b") == NULL);
    CHECK(ev[idx[2]].args == NULL);
    CHECK_STR(strobe_event_arg(r, idx[3], "u"), "[1,2]");
    CHECK_EQ(ev[idx[4]].parent, idx[3]);
    int count = 0;
    for (const strobe_arg *a = ev[idx[4]].args; a; a = a->next)
        count += a->key[0] == 'a';
    CHECK_EQ(count, 16);
    CHECK_STR(strobe_event_arg(r, idx[4], "a15"), "15");
    CHECK(strobe_event_arg(r, idx[4], "a16") == NULL);
    strobe_result_free(r);
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
    int argsite = 0, users = 0, cut = 0;
    strobe_rd_item it;
    while (strobe_rd_next(rd, &it) > 0) {
        if (it.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        const char *a = e->args ? e->args : "";
        size_t al = e->args ? e->args_len : 0;
        if (e->name.len == 7 && memcmp(e->name.s, "argsite", 7) == 0)
            argsite += memmem(a, al, "\"k1\"", 4) && memmem(a, al, "\"n\"", 3) &&
                       memmem(a, al, "42", 2) && memmem(a, al, "\"domain\"", 8);
        if (e->name.len == 4 && memcmp(e->name.s, "user", 4) == 0) users++;
        if (memmem(a, al, "\"b\"", 3)) cut++;
    }
    strobe_rd_close(rd);
    CHECK_EQ(argsite, 1);
    CHECK_EQ(users, filtered ? 0 : 1);
    CHECK_EQ(cut, 0);
}

int main(void) {
    check_collected();
    check_streamed(STROBE_TEST_OUT_DIR "/begin_args_stream.json", 0);
    check_streamed(STROBE_TEST_OUT_DIR "/begin_args_filtered.json", 1);
    return check_result();
}
