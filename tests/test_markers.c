/* test_markers.c: markers and captures (strobe/markers.h), one role per run (argv[1]):
 *
 *   nvtx      NVTX_INJECTION64_PATH names markers_tool (a counting NVTX tool): every push, pop,
 *             start, end and mark strobe makes, by name, in each mode, with and without a session
 *             (whose events must not change), none after stop, none for ranges begun before start,
 *             several threads, and the bad strings.
 *   nodomain  the same tool without domains (MARKERS_TOOL_NO_DOMAINS=1): the default domain.
 *   notool    no NVTX_INJECTION64_PATH (or one that cannot load): start succeeds, the gate stays
 *             closed (nothing to reach costs nothing).
 *   self      NVTX_INJECTION64_PATH names libstrobe.so, which this program links: strobe is its
 *             own NVTX tool, and markers must not feed it (no loop, each range once).
 *   env       STROBE_MARKERS set by the test's environment: markers on from the library's load.
 *   cuda      the stand-in libcuda.so.1: wait_until_completed's synchronizations, captures
 *             (cuProfilerStart/Stop order, the drain, nesting, no CUDA, a capture's trace).
 *   ftrace    trace_marker, read back from the kernel's trace buffer (mounts tracefs as root;
 *             skips where it cannot be written).
 * Each prints what it checked; exit 1 on a failure (both values printed), 77 when skipped. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strobe/strobe.h"

static int failures;

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ != vb_) {                                                                          \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a,    \
                    va_, #b, vb_);                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- The workload: every kind of range the instrumentation sees ------------------------------ */

/* Per repetition: mk_scope (USER_SCOPE, scoped), mk_op (operator, scoped), mk_dyn_<i%2> twice
 * (a run-time name: strobe_range_begin, USER_SCOPE; STROBE_SCOPE_NAME, an operator) and mk_raw
 * (STROBE_RANGE_BEGIN/END, USER_SCOPE). 5 ranges, 2 of them operators. */
#define RANGES_PER_REP 5
#define OPS_PER_REP 2
static void workload(int reps) {
    for (int i = 0; i < reps; i++) {
        STROBE_SCOPE("mk_scope");
        { STROBE_OP("mk_op"); }
        char name[32];
        snprintf(name, sizeof name, "mk_dyn_%d", i % 2);
        strobe_range_begin(name);
        strobe_range_end();
        {
            STROBE_SCOPE_NAME(name, STROBE_RECORD_SCOPE_FUNCTION);
            name[0] = 'X'; /* the caller's buffer changes before the end: event mode keeps a copy */
        }
        STROBE_RANGE_BEGIN("mk_raw");
        STROBE_RANGE_END();
    }
}

/* ---- The counting tool ---------------------------------------------------------------------- */

static long (*mt_count)(const char *kind, const char *name, int domain);
static void (*mt_reset)(void);
static long (*mt_underflows)(void);
static long (*mt_bad_attrs)(void);
static const char *(*mt_domain)(void);

static int load_tool(void) {
    const char *path = getenv("NVTX_INJECTION64_PATH");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    if (h == NULL) {
        fprintf(stderr, "cannot load the test tool %s\n", path ? path : "(unset)");
        return -1;
    }
    *(void **)&mt_count = dlsym(h, "mt_count");
    *(void **)&mt_reset = dlsym(h, "mt_reset");
    *(void **)&mt_underflows = dlsym(h, "mt_underflows");
    *(void **)&mt_bad_attrs = dlsym(h, "mt_bad_attrs");
    *(void **)&mt_domain = dlsym(h, "mt_domain");
    return mt_count && mt_reset && mt_underflows && mt_bad_attrs && mt_domain ? 0 : -1;
}

/* What `reps` repetitions of the workload must have made, in mode `interval`/`event`, in domain
 * `dom` (1: strobe's, 0: the default one); `times` workloads. */
static void check_counts(int reps, int interval, int event, int dom, const char *what) {
    fprintf(stderr, "  %s\n", what);
    long per = interval ? reps : 0, per_ev = event ? reps : 0;
    CHECK_EQ(mt_count("push", "mk_scope", dom), per);
    CHECK_EQ(mt_count("push", "mk_op", dom), per);
    CHECK_EQ(mt_count("push", "mk_raw", dom), per);
    CHECK_EQ(mt_count("push", "mk_dyn_0", dom), interval ? 2 * ((reps + 1) / 2) : 0);
    CHECK_EQ(mt_count("push", "mk_dyn_1", dom), interval ? 2 * (reps / 2) : 0);
    CHECK_EQ(mt_count("push", NULL, -1), per * RANGES_PER_REP);
    CHECK_EQ(mt_count("pop", NULL, dom), per * RANGES_PER_REP);
    CHECK_EQ(mt_count("pop", NULL, -1), per * RANGES_PER_REP);
    CHECK_EQ(mt_count("mark", "mk_scope", dom), per_ev);
    CHECK_EQ(mt_count("mark", "mk_op", dom), per_ev);
    CHECK_EQ(mt_count("mark", "mk_raw", dom), per_ev);
    CHECK_EQ(mt_count("mark", "mk_dyn_0", dom), event ? 2 * ((reps + 1) / 2) : 0);
    CHECK_EQ(mt_count("mark", "mk_dyn_1", dom), event ? 2 * (reps / 2) : 0);
    CHECK_EQ(mt_count("mark", NULL, -1), per_ev * RANGES_PER_REP);
    CHECK_EQ(mt_count("start", NULL, -1), 0);
    CHECK_EQ(mt_count("end", NULL, -1), 0);
    CHECK_EQ(mt_underflows(), 0);
    CHECK_EQ(mt_bad_attrs(), 0);
}

/* A session's events as sorted "category/name/depth" lines, to compare two sessions. */
static char *session_summary(strobe_result *r, size_t *count) {
    size_t n = strobe_result_event_count(r);
    const strobe_event *ev = strobe_result_events(r);
    char **lines = calloc(n + 1, sizeof *lines);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s/%s/%u\n", ev[i].category, ev[i].name, ev[i].depth);
        lines[i] = strdup(buf);
        total += strlen(buf);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(lines[i], lines[j]) > 0) {
                char *t = lines[i];
                lines[i] = lines[j];
                lines[j] = t;
            }
    char *out = calloc(1, total);
    for (size_t i = 0; i < n; i++) {
        strcat(out, lines[i]);
        free(lines[i]);
    }
    free(lines);
    *count = n;
    return out;
}

static char *session_run(int reps, size_t *count) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    CHECK_EQ(strobe_start(&cfg), 0);
    workload(reps);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    if (r == NULL) return strdup("");
    char *s = session_summary(r, count);
    strobe_result_free(r);
    return s;
}

static void *thread_main(void *arg) {
    workload(*(int *)arg);
    return NULL;
}

static int role_nvtx(int domains) {
    if (load_tool() != 0) return 1;
    int dom = domains ? 1 : 0;
    fprintf(stderr, "bad strings\n");
    CHECK_EQ(strobe_markers_start("intervals", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start("interval,", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start("", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start(NULL, NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start("interval", "nvtx,perfetto", 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start("interval", "", 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_start("interval:event", NULL, 0), STROBE_EINVAL);
    CHECK_EQ(strobe_markers_active(), 0);
    CHECK_EQ(strobe_markers_stop(), STROBE_ENOSESSION);

    static const struct {
        const char *mode;
        int interval, event;
    } modes[] = {{"interval", 1, 0}, {"Event", 0, 1}, {" interval , EVENT ", 1, 1}};
    for (int m = 0; m < 3; m++) {
        fprintf(stderr, "mode \"%s\", no session\n", modes[m].mode);
        mt_reset();
        CHECK_EQ(strobe_markers_start(modes[m].mode, m == 2 ? "NVTX" : NULL, 0), 0);
        CHECK_EQ(strobe_markers_active(), 1);
        CHECK_EQ(strobe_is_active(), 0); /* markers are no session */
        workload(7);
        check_counts(7, modes[m].interval, modes[m].event, dom, "counts");
        CHECK_EQ(strobe_markers_start("interval", NULL, 0), STROBE_EBUSY);
        CHECK_EQ(strobe_markers_stop(), 0);
        workload(3);
        check_counts(7, modes[m].interval, modes[m].event, dom, "none after stop");
    }
    if (domains) CHECK_EQ(strcmp(mt_domain(), "strobe"), 0);

    fprintf(stderr, "with a session: the same counts, and the session's events unchanged\n");
    size_t n_plain = 0, n_marked = 0;
    char *plain = session_run(6, &n_plain);
    for (int m = 0; m < 3; m++) {
        mt_reset();
        CHECK_EQ(strobe_markers_start(modes[m].mode, "nvtx", 0), 0);
        char *marked = session_run(6, &n_marked);
        CHECK_EQ(strobe_markers_stop(), 0);
        check_counts(6, modes[m].interval, modes[m].event, dom, modes[m].mode);
        CHECK_EQ(n_marked, n_plain);
        CHECK_EQ(n_plain, 6 * RANGES_PER_REP);
        if (strcmp(plain, marked) != 0) {
            fprintf(stderr, "session events differ with markers:\n%s---\n%s", plain, marked);
            failures++;
        }
        free(marked);
    }
    free(plain);
    /* A session, then markers starting and stopping inside it: the session sees every range. */
    {
        strobe_config cfg;
        strobe_config_init(&cfg);
        mt_reset();
        CHECK_EQ(strobe_start(&cfg), 0);
        workload(2);
        CHECK_EQ(strobe_markers_start("interval", NULL, 0), 0);
        workload(2);
        CHECK_EQ(strobe_markers_stop(), 0);
        workload(2);
        strobe_result *r = NULL;
        CHECK_EQ(strobe_stop(&r), 0);
        CHECK_EQ(strobe_result_event_count(r), 6 * RANGES_PER_REP);
        strobe_result_free(r);
        check_counts(2, 1, 0, dom, "markers inside a session");
    }

    fprintf(stderr, "a session keeping only USER_SCOPE: markers still see every range\n");
    {
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.scopes = STROBE_SCOPE_BIT(STROBE_RECORD_SCOPE_USER_SCOPE);
        mt_reset();
        CHECK_EQ(strobe_markers_start("interval,event", NULL, 0), 0);
        CHECK_EQ(strobe_start(&cfg), 0);
        workload(4);
        strobe_result *r = NULL;
        CHECK_EQ(strobe_stop(&r), 0);
        CHECK_EQ(strobe_markers_stop(), 0);
        check_counts(4, 1, 1, dom, "every scope marked");
        /* mk_scope, mk_dyn (strobe_range_begin) and mk_raw are USER_SCOPE; the operators are not
         * kept. */
        CHECK_EQ(strobe_result_event_count(r), 4 * (RANGES_PER_REP - OPS_PER_REP));
        size_t n = strobe_result_event_count(r);
        const strobe_event *ev = strobe_result_events(r);
        for (size_t i = 0; i < n; i++)
            CHECK_EQ(strcmp(ev[i].name, "mk_op") != 0, 1);
        strobe_result_free(r);
    }

    fprintf(stderr, "ranges begun before start, or ended after stop\n");
    mt_reset();
    {
        STROBE_SCOPE("mk_before_scoped");
        strobe_range_begin("mk_before");
        CHECK_EQ(strobe_markers_start("interval,event", NULL, 0), 0);
        strobe_range_end();
    }
    CHECK_EQ(mt_count("pop", NULL, -1), 0);
    CHECK_EQ(mt_count("mark", NULL, -1), 0);
    {
        STROBE_SCOPE("mk_after");
        CHECK_EQ(strobe_markers_stop(), 0);
    }
    CHECK_EQ(mt_count("push", "mk_after", dom), 1);
    CHECK_EQ(mt_count("pop", NULL, -1), 0);
    CHECK_EQ(mt_count("mark", NULL, -1), 0);
    /* A restart forgets the ranges of the previous start. */
    mt_reset();
    CHECK_EQ(strobe_markers_start("interval", NULL, 0), 0);
    strobe_range_begin("mk_restart");
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(strobe_markers_start("interval", NULL, 0), 0);
    strobe_range_end();
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(mt_count("push", "mk_restart", dom), 1);
    CHECK_EQ(mt_count("pop", NULL, -1), 0);

    fprintf(stderr, "threads\n");
    mt_reset();
    CHECK_EQ(strobe_markers_start("interval,event", NULL, 0), 0);
    pthread_t th[3];
    int reps = 4;
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, thread_main, &reps);
    workload(4);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(strobe_markers_stop(), 0);
    check_counts(16, 1, 1, dom, "4 threads x 4 repetitions");

    fprintf(stderr,
            "deep nesting: past the markers' stack, ranges are not marked but stay paired\n");
    mt_reset();
    CHECK_EQ(strobe_markers_start("interval", NULL, 0), 0);
    for (int i = 0; i < 300; i++)
        strobe_range_begin("mk_deep");
    for (int i = 0; i < 300; i++)
        strobe_range_end();
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(mt_count("push", "mk_deep", dom), 256);
    CHECK_EQ(mt_count("pop", NULL, -1), 256);
    CHECK_EQ(mt_underflows(), 0);
    return failures ? 1 : 0;
}

static int role_notool(void) {
    fprintf(stderr, "no tool (NVTX_INJECTION64_PATH=%s)\n",
            getenv("NVTX_INJECTION64_PATH") ? getenv("NVTX_INJECTION64_PATH") : "unset");
    CHECK_EQ(strobe_markers_start("interval,event", "nvtx", 0), 0);
    CHECK_EQ(strobe_markers_active(), 1);
    /* Nothing to reach: the instrumentation's gate stays closed. */
    CHECK_EQ(strobe__active & STROBE__ACTIVE_MARKERS, 0);
    workload(3);
    CHECK_EQ(strobe_markers_stop(), 0);
    /* wait_until_completed opens it (it has work to do even with no tool). */
    CHECK_EQ(strobe_markers_start("interval", "nvtx", 1), 0);
    CHECK_EQ(strobe__active & STROBE__ACTIVE_MARKERS, STROBE__ACTIVE_MARKERS);
    workload(3); /* no CUDA loaded: nothing to wait for */
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(strobe__active, 0);
    return failures ? 1 : 0;
}

static int role_self(void) {
    fprintf(stderr, "strobe as its own NVTX tool (NVTX_INJECTION64_PATH=%s)\n",
            getenv("NVTX_INJECTION64_PATH"));
    CHECK_EQ(strobe_markers_start("interval,event", "nvtx", 0), 0);
    CHECK_EQ(strobe__active & STROBE__ACTIVE_MARKERS, 0); /* the nvtx sink stays silent */
    size_t n = 0;
    char *s = session_run(5, &n);
    CHECK_EQ(n, 5 * RANGES_PER_REP);
    free(s);
    CHECK_EQ(strobe_markers_stop(), 0);
    return failures ? 1 : 0;
}

static int role_env(void) {
    fprintf(stderr, "STROBE_MARKERS=%s\n", getenv("STROBE_MARKERS"));
    if (load_tool() != 0) return 1;
    CHECK_EQ(strobe_markers_active(), 1);
    mt_reset();
    workload(5);
    check_counts(5, 1, 1, 1, "markers from the environment");
    CHECK_EQ(strobe_markers_stop(), 0);
    return failures ? 1 : 0;
}

static int role_envbad(void) {
    fprintf(stderr, "STROBE_MARKERS=%s (bad): nothing started, no crash\n",
            getenv("STROBE_MARKERS"));
    CHECK_EQ(strobe_markers_active(), 0);
    workload(2);
    return failures ? 1 : 0;
}

/* ---- CUDA: wait_until_completed and captures against the stand-in driver ------------------- */

static const char *(*fake_log)(void);
static void (*fake_log_reset)(void);
static int (*fake_ctx_syncs)(void);

static void check_log(const char *want) {
    if (strcmp(fake_log(), want) != 0) {
        fprintf(stderr, "driver calls: \"%s\", expected \"%s\"\n", fake_log(), want);
        failures++;
    }
}

static int role_cuda(const char *out_dir) {
    fprintf(stderr, "capture enabled from the environment\n");
    unsetenv("STROBE_CAPTURE_ENABLED");
    CHECK_EQ(strobe_capture_enabled(), 0);
    setenv("STROBE_CAPTURE_ENABLED", "1", 1);
    CHECK_EQ(strobe_capture_enabled(), 1);
    setenv("STROBE_CAPTURE_ENABLED", "0", 1);
    CHECK_EQ(strobe_capture_enabled(), 0);

    fprintf(stderr, "no CUDA loaded: captures refused, waits do nothing\n");
    CHECK_EQ(strobe_capture_begin(NULL), STROBE_ENOTSUP);
    CHECK_EQ(strobe_capture_begin("x.json"), STROBE_ENOTSUP);
    CHECK_EQ(strobe_is_capturing(), 0);
    CHECK_EQ(strobe_is_running(), 0);
    CHECK_EQ(strobe_capture_end(), STROBE_ENOSESSION);
    CHECK_EQ(strobe_markers_start("interval", "nvtx", 1), 0);
    /* 128 repetitions, 256 operator ends: the wait looks for CUDA at the first and at the 257th
     * of this thread's operators without it (so the next one, after the load, finds it). */
    workload(128);
    CHECK_EQ(strobe_markers_stop(), 0);

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cuda == NULL) {
        fprintf(stderr, "cannot load the stand-in libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    *(void **)&fake_log = dlsym(cuda, "fake_cuda_log");
    *(void **)&fake_log_reset = dlsym(cuda, "fake_cuda_log_reset");
    *(void **)&fake_ctx_syncs = dlsym(cuda, "fake_cuda_ctx_syncs");
    if (!fake_log || !fake_log_reset || !fake_ctx_syncs) {
        fprintf(stderr, "the libcuda.so.1 found is not the stand-in\n");
        return 1;
    }
    CHECK_EQ(fake_ctx_syncs(), 0);

    fprintf(stderr, "wait_until_completed: one synchronization per operator range\n");
    fake_log_reset();
    CHECK_EQ(strobe_markers_start("interval,event", "nvtx", 1), 0);
    workload(10);
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(fake_ctx_syncs(), 10 * OPS_PER_REP);
    workload(10);
    CHECK_EQ(fake_ctx_syncs(), 10 * OPS_PER_REP);
    fake_log_reset();
    CHECK_EQ(strobe_markers_start("interval", "nvtx", 0), 0); /* no wait asked */
    workload(3);
    CHECK_EQ(strobe_markers_stop(), 0);
    CHECK_EQ(fake_ctx_syncs(), 0);

    fprintf(stderr, "capture: start, drain, stop, in order; no nesting\n");
    fake_log_reset();
    CHECK_EQ(strobe_capture_begin(NULL), 0);
    CHECK_EQ(strobe_is_capturing(), 1);
    check_log("cuProfilerStart;");
    CHECK_EQ(strobe_capture_begin(NULL), STROBE_EBUSY);
    workload(2);
    CHECK_EQ(strobe_capture_end(), 0);
    CHECK_EQ(strobe_is_capturing(), 0);
    check_log("cuProfilerStart;cuCtxSynchronize;cuProfilerStop;");
    CHECK_EQ(strobe_capture_end(), STROBE_ENOSESSION);

    fprintf(stderr, "capture in a scope (STROBE_CAPTURE)\n");
    fake_log_reset();
    {
        STROBE_CAPTURE(NULL);
        CHECK_EQ(strobe_is_capturing(), 1);
        check_log("cuProfilerStart;");
    }
    CHECK_EQ(strobe_is_capturing(), 0);
    check_log("cuProfilerStart;cuCtxSynchronize;cuProfilerStop;");

    fprintf(stderr, "capture with a path: a session over the region, saved at the end\n");
    char path[512];
    snprintf(path, sizeof path, "%s/capture.json", out_dir);
    unlink(path);
    fake_log_reset();
    CHECK_EQ(strobe_capture_begin(path), 0);
    CHECK_EQ(strobe_is_running(), 1);
    workload(3);
    CHECK_EQ(strobe_capture_end(), 0);
    CHECK_EQ(strobe_is_running(), 0);
    check_log("cuProfilerStart;cuCtxSynchronize;cuProfilerStop;");
    FILE *f = fopen(path, "r");
    CHECK_EQ(f != NULL, 1);
    if (f) {
        static char text[1 << 20];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        CHECK_EQ(strstr(text, "\"traceEvents\"") != NULL, 1);
        CHECK_EQ(strstr(text, "\"mk_op\"") != NULL, 1);
        CHECK_EQ(strstr(text, "\"mk_dyn_1\"") != NULL, 1);
    }
    /* A session already running: a capture with a path cannot have its own. */
    strobe_config cfg;
    strobe_config_init(&cfg);
    CHECK_EQ(strobe_start(&cfg), 0);
    fake_log_reset();
    CHECK_EQ(strobe_capture_begin(path), STROBE_EBUSY);
    CHECK_EQ(strobe_is_capturing(), 0);
    check_log("");
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    strobe_result_free(r);
    CHECK_EQ(strobe_capture_begin(""), STROBE_EINVAL);

    fprintf(stderr, "cuProfilerStart failing: refused, nothing left running\n");
    setenv("FAKE_CUDA_PROFILER", "999", 1);
    fake_log_reset();
    CHECK_EQ(strobe_capture_begin(path), STROBE_EIO);
    CHECK_EQ(strobe_is_capturing(), 0);
    CHECK_EQ(strobe_is_running(), 0);
    check_log("cuProfilerStart;");
    unsetenv("FAKE_CUDA_PROFILER");
    return failures ? 1 : 0;
}

/* ---- ftrace ---------------------------------------------------------------------------------- */

static const char *tracefs(void) {
    static const char *const dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
    for (int i = 0; i < 2; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/trace_marker", dirs[i]);
        if (access(p, W_OK) == 0) return dirs[i];
    }
    return NULL;
}

static int write_file(const char *path, const char *text, int flags) {
    int fd = open(path, O_WRONLY | flags);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Lines of the trace buffer holding `needle`. */
static int count_lines(const char *text, const char *needle) {
    int n = 0;
    size_t k = strlen(needle);
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += k) {
        const char *q = p + k;
        if (*q == '\n' || *q == '\0' || *q == ' ') n++;
    }
    return n;
}

static int role_ftrace(void) {
    const char *dir = tracefs();
    if (dir == NULL && geteuid() == 0) {
        mkdir("/sys/kernel/tracing", 0755);
        if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0)
            fprintf(stderr, "mount tracefs: %s\n", strerror(errno));
        dir = tracefs();
    }
    if (dir == NULL) {
        /* The refusal is checked even where the test cannot go on. */
        CHECK_EQ(strobe_markers_start("interval", "ftrace", 0), STROBE_ENOTSUP);
        CHECK_EQ(strobe_markers_active(), 0);
        if (failures) return 1;
        printf("SKIP: no writable trace_marker (tracefs not mounted and not mountable here); "
               "checked only that markers refuse ftrace with STROBE_ENOTSUP\n");
        return 77;
    }
    char p[256], on[256];
    snprintf(on, sizeof on, "%s/tracing_on", dir);
    snprintf(p, sizeof p, "%s/trace", dir);
    if (write_file(on, "1", 0) != 0 || write_file(p, "", O_TRUNC) != 0) {
        printf("SKIP: %s is writable but tracing cannot be switched on or cleared\n", dir);
        return 77;
    }
    fprintf(stderr, "ftrace through %s\n", dir);
    CHECK_EQ(strobe_markers_start("interval,event", "ftrace", 0), 0);
    workload(4);
    CHECK_EQ(strobe_markers_stop(), 0);
    workload(2); /* after stop: nothing */
    int fd = open(p, O_RDONLY);
    static char text[1 << 22];
    size_t n = 0;
    if (fd >= 0) {
        ssize_t k;
        while (n + 1 < sizeof text && (k = read(fd, text + n, sizeof text - 1 - n)) > 0)
            n += (size_t)k;
        close(fd);
    }
    text[n] = '\0';
    char b[64];
    long pid = (long)getpid();
    const char *names[] = {"mk_scope", "mk_op", "mk_raw"};
    for (int i = 0; i < 3; i++) {
        snprintf(b, sizeof b, "B|%ld|%s", pid, names[i]);
        CHECK_EQ(count_lines(text, b), 4);
        snprintf(b, sizeof b, "I|%ld|%s", pid, names[i]);
        CHECK_EQ(count_lines(text, b), 4);
    }
    snprintf(b, sizeof b, "B|%ld|mk_dyn_0", pid);
    CHECK_EQ(count_lines(text, b), 4);
    snprintf(b, sizeof b, "I|%ld|mk_dyn_1", pid);
    CHECK_EQ(count_lines(text, b), 4);
    snprintf(b, sizeof b, "E|%ld", pid);
    CHECK_EQ(count_lines(text, b), 4 * RANGES_PER_REP);
    if (failures) fprintf(stderr, "trace buffer:\n%.4000s\n", text);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (getenv("MARKERS_TEST_LOG")) strobe_set_log_fn(strobe_log_stderr, (void *)(intptr_t)0);
    const char *role = argc > 1 ? argv[1] : "";
    int rc;
    if (strcmp(role, "nvtx") == 0) {
        rc = role_nvtx(1);
    } else if (strcmp(role, "nodomain") == 0) {
        rc = role_nvtx(0);
    } else if (strcmp(role, "notool") == 0) {
        rc = role_notool();
    } else if (strcmp(role, "self") == 0) {
        rc = role_self();
    } else if (strcmp(role, "env") == 0) {
        rc = role_env();
    } else if (strcmp(role, "envbad") == 0) {
        rc = role_envbad();
    } else if (strcmp(role, "cuda") == 0 && argc > 2) {
        mkdir(argv[2], 0755);
        rc = role_cuda(argv[2]);
    } else if (strcmp(role, "ftrace") == 0) {
        rc = role_ftrace();
    } else {
        fprintf(stderr,
                "usage: test_markers nvtx|nodomain|notool|self|env|envbad|ftrace|cuda DIR\n");
        return 2;
    }
    if (rc == 0) fprintf(stderr, "test_markers %s: ok\n", role);
    return rc;
}
