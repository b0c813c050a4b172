/* test_unwind.c: DWARF unwinding of CPU samples (config.cpu_sample_call_graph, core/unwind.c).
 *
 * This program and the library it opens (unwind_dso.c) are built with -fomit-frame-pointer: the
 * kernel's frame-pointer walk cannot get past the sampled function there. Each has a known chain
 * a -> b -> c -> hot (unw_* here, dso_* in the library, which is opened with dlopen after the
 * session started, so that its module is found by reading the module list again). Sampled at
 * 1 kHz with the call graph given as argument:
 * - dwarf: at least 90% of the samples whose leaf is a hot function have its c, b and a in that
 *   order after it, in both chains; "strobe_cpu_sampling" says "dwarf" and counts at least one
 *   module list refresh; no sample is lost;
 * - dwarf, deeper than the stack copy: a recursion of 40 frames of 600 bytes (unwind_deep.c,
 *   built with frame pointers) has all its frames in at least 90% of its hot samples, the walk
 *   completed from the kernel's frame-pointer chain ("unwind_fp_completed" nonzero);
 * - fp: fewer than half of them do (the same check fails without DWARF: this test can fail).
 * The DWARF trace goes to out/unwind/dwarf.json for the independent checkers.
 * Skips (77) where perf_event_open is refused, or (dwarf) where DWARF unwinding is not built in
 * or libdw.so.1 is missing, after checking that a session asking for it then samples with frame
 * pointers, with a warning and the reason in "strobe_cpu_sampling". */
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* Under a sanitizer the frames' sizes differ: see the deep walk's check. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define UNWIND_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define UNWIND_TEST_SANITIZED 1
#endif
#endif
#ifndef UNWIND_TEST_SANITIZED
#define UNWIND_TEST_SANITIZED 0
#endif
#include "core/unwind.h"
#include "strobe/strobe.h"

#define SPIN_MS 400
#define DEEP 40

/* unwind_deep.c, built with frame pointers. */
void deep_frame(int depth, int ms);

static volatile double sink;
static volatile int depth;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static void unw_hot(int ms) {
    long long end = cpu_ns() + (long long)ms * 1000000;
    double x = 1.0;
    while (cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

__attribute__((noinline)) static void unw_c(int ms) {
    unw_hot(ms);
    depth = 3;
}

__attribute__((noinline)) static void unw_b(int ms) {
    unw_c(ms);
    depth = 2;
}

__attribute__((noinline)) static void unw_a(int ms) {
    unw_b(ms);
    depth = 1;
}

static int perf_allowed(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 1000000;
    a.exclude_kernel = 1;
    a.disabled = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) return 0;
    close((int)fd);
    return 1;
}

/* Whether `stack` ("f;g;h", innermost first) has c, b and a in that order. */
static int has_chain(const char *stack, const char *c, const char *b, const char *a) {
    const char *p = stack ? strstr(stack, c) : NULL;
    p = p ? strstr(p, b) : NULL;
    return p && strstr(p, a) != NULL;
}

/* The share, in percent, of the samples whose leaf is `hot` that have the whole chain. */
static long chain_share(const strobe_result *r, const char *prefix) {
    char hot[32], c[32], b[32], a[32];
    snprintf(hot, sizeof hot, "%s_hot", prefix);
    snprintf(c, sizeof c, "%s_c", prefix);
    snprintf(b, sizeof b, "%s_b", prefix);
    snprintf(a, sizeof a, "%s_a", prefix);
    const strobe_event *ev = strobe_result_events(r);
    long leaf = 0, whole = 0;
    const char *example = NULL;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "cpu_sample") != 0) continue;
        if (strncmp(ev[i].name, hot, strlen(hot)) != 0) continue;
        leaf++;
        const char *stack = strobe_event_arg(r, i, "Call stack");
        if (has_chain(stack, c, b, a))
            whole++;
        else if (example == NULL)
            example = stack;
    }
    fprintf(stderr, "%s: %ld samples in %s, %ld with the whole chain%s%s\n", prefix, leaf, hot,
            whole, example ? "; one without: " : "", example ? example : "");
    CHECK_INT(leaf, >=, 50);
    return leaf ? whole * 100 / leaf : 0;
}

/* The share, in percent, of the samples in deep_hot that have all DEEP frames of deep_frame. */
static long deep_share(const strobe_result *r) {
    const strobe_event *ev = strobe_result_events(r);
    long leaf = 0, whole = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "cpu_sample") != 0) continue;
        if (strncmp(ev[i].name, "deep_hot", 8) != 0) continue;
        leaf++;
        const char *p = strobe_event_arg(r, i, "Call stack");
        int n = 0;
        while (p && (p = strstr(p, "deep_frame")) != NULL) {
            n++;
            p += 10;
        }
        whole += n >= DEEP;
    }
    fprintf(stderr, "deep: %ld samples in deep_hot, %ld with all %d frames\n", leaf, whole, DEEP);
    CHECK_INT(leaf, >=, 50);
    return leaf ? whole * 100 / leaf : 0;
}

/* Where DWARF unwinding is not available, a session that asks for it samples with frame
 * pointers, with a warning and the reason in "strobe_cpu_sampling". */
static void check_fallback(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = 1000;
    cfg.cpu_sample_call_graph = STROBE_CALL_GRAPH_DWARF;
    CHECK_EQ(strobe_start(&cfg), 0);
    unw_a(50);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    REQUIRE(r != NULL);
    int warned = 0;
    for (size_t i = 0; i < strobe_result_warning_count(r); i++)
        warned += strstr(strobe_result_warning(r, i), "not DWARF") != NULL;
    CHECK_EQ(warned, 1);
    int said = 0;
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, "strobe_cpu_sampling") == 0)
            said = strstr(v, "\"dwarf_unavailable\"") != NULL;
    }
    CHECK(said);
    strobe_result_free(r);
}

int main(int argc, char **argv) {
    int dwarf = argc > 1 && strcmp(argv[1], "dwarf") == 0;
    if (!perf_allowed()) {
        fprintf(stderr, "SKIP: perf_event_open refused\n");
        return 77;
    }
    char why[200];
    if (dwarf && !strobe__unwind_available(why, sizeof why)) {
        /* Asked for anyway: the session samples with frame pointers and says why. */
        check_fallback();
        fprintf(stderr, "SKIP: %s\n", why);
        return check__failures ? 1 : 77;
    }
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = 1000;
    cfg.cpu_sample_call_graph = dwarf ? STROBE_CALL_GRAPH_DWARF : STROBE_CALL_GRAPH_FP;
    CHECK_EQ(strobe_start(&cfg), 0);
    unw_a(SPIN_MS);
    void *h = dlopen(UNWIND_DSO_PATH, RTLD_NOW);
    CHECK(h != NULL);
    void (*dso_a)(int) = NULL;
    if (h) *(void **)&dso_a = dlsym(h, "dso_a");
    CHECK(dso_a != NULL);
    if (dso_a) dso_a(SPIN_MS);
    deep_frame(DEEP, SPIN_MS);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    REQUIRE(r != NULL);

    long here = chain_share(r, "unw"), there = chain_share(r, "dso");
    const char *meta = NULL;
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, "strobe_cpu_sampling") == 0)
            meta = v;
    }
    CHECK(meta != NULL);
    if (meta) fprintf(stderr, "strobe_cpu_sampling: %s\n", meta);
    if (dwarf) {
        CHECK_INT(here, >=, 90);
        CHECK_INT(there, >=, 90);
        /* Deeper than the copy: the frame-pointer chain completes the walks. */
        CHECK_INT(deep_share(r), >=, 90);
        /* Walks that stopped early were completed from the frame-pointer chain. Under TSan the
         * 8 KiB copy holds the whole recursion, so a walk stops early only where the chain has no
         * frame pointers either (a sanitizer runtime's frame): there it may stay uncompleted. */
        long long incomplete = -1, completed = -1;
        const char *pi = meta ? strstr(meta, "\"unwind_incomplete\": ") : NULL;
        const char *pc = meta ? strstr(meta, "\"unwind_fp_completed\": ") : NULL;
        if (pi) incomplete = strtoll(pi + strlen("\"unwind_incomplete\": "), NULL, 10);
        if (pc) completed = strtoll(pc + strlen("\"unwind_fp_completed\": "), NULL, 10);
        CHECK(incomplete >= 0 && completed >= 0);
        CHECK_INT(completed, <=, incomplete);
#if !UNWIND_TEST_SANITIZED
        CHECK_INT(incomplete, >, 0);
        CHECK_INT(completed, >, 0);
#endif
        CHECK(meta && strstr(meta, "\"callchain\": \"dwarf") != NULL);
        CHECK(meta && strstr(meta, "\"module_refreshes\": 0") == NULL);
        CHECK(meta && strstr(meta, "\"lost\": 0,") != NULL);
        mkdir(STROBE_TEST_OUT_DIR, 0755);
        mkdir(STROBE_TEST_OUT_DIR "/unwind", 0755);
        CHECK_EQ(strobe_result_save(r, STROBE_TEST_OUT_DIR "/unwind/dwarf.json"), 0);
    } else {
        CHECK_INT(here, <, 50);
        CHECK_INT(there, <, 50);
        CHECK(meta && strstr(meta, "frame pointers") != NULL);
    }
    strobe_result_free(r);
    if (h) dlclose(h);
    return check_result();
}
