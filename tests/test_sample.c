/* test_sample.c: CPU sampling (config.cpu_sample_hz, core/sample.c).
 *
 * A CPU-bound program of three threads, built with frame pointers, each spinning in a hot
 * function of its own: one created before the session starts, the main thread (inside a range),
 * and one created after start that never calls strobe. With sampling at 1 kHz:
 * - every thread has samples, on its own track (the late thread's too, named as the kernel
 *   names it);
 * - each thread's samples are dominated by its hot function (at least half name it as the leaf,
 *   and all but a few have it in the "Call stack");
 * - each thread's count is plausible for its CPU time (CLOCK_THREAD_CPUTIME_ID) and the rate:
 *   between 40% and 130% of CPU seconds x 1000;
 * - the main thread's samples taken inside its range are children of the range;
 * - the metadata "strobe_cpu_sampling" names the event and counts lost samples (a number);
 * - losses are counted: a sampler with one-page rings read only at stop keeps a few samples and
 *   counts the rest as lost (kept + lost plausible for the CPU time, lost most of it);
 * - fork: a child process of a sampled program is not in its trace, and a child that starts a
 *   session of its own (dropping its copy of the parent's) leaves the parent sampling;
 * - a prepared session samples only once its window opens (strobe_start_prepared);
 * - out of file descriptors (RLIMIT_NOFILE lowered, in a child), the threads that cannot be
 *   sampled are counted and warned about, and the others are sampled;
 * - where perf_event_open is refused (a seccomp filter, in a child), the session starts, records,
 *   and its result has one warning about sampling and no samples;
 * - a rate above the maximum fails start with STROBE_EINVAL; a session without sampling has no
 *   samples and no such metadata.
 * The traces (JSON and Perfetto, saved and streamed) go to out/sample/ for test_sample.sh, which
 * runs the independent checkers and `strobe stacks --samples` on them.
 * Skips (77) where perf_event_open is refused. */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/sample.h"
#include "strobe/strobe.h"

#define HZ 1000
#define SPIN_MS 300

/* Keeps the spin loops' results alive; per thread, so that the threads do not race on it. */
static __thread volatile double sink;
static int go_pre; /* atomic */

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins for `ms` of the calling thread's CPU time. noinline: each is a frame of its own. */
#define HOT(name)                                                                                  \
    __attribute__((noinline)) static void name(int ms) {                                           \
        int64_t end = thread_cpu_ns() + (int64_t)ms * 1000000;                                     \
        double x = 1.0;                                                                            \
        while (thread_cpu_ns() < end)                                                              \
            for (int i = 0; i < 20000; i++)                                                        \
                x = x * 1.0000001 + 1e-9;                                                          \
        sink = x;                                                                                  \
    }
HOT(hot_pre)
HOT(hot_main)
HOT(hot_post)

typedef struct worker {
    int64_t tid;
    int64_t cpu_ns;
} worker;

static void *pre_main(void *arg) {
    worker *w = arg;
    prctl(PR_SET_NAME, "pre_worker", 0, 0, 0);
    __atomic_store_n(&w->tid, (int64_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    while (!__atomic_load_n(&go_pre, __ATOMIC_ACQUIRE))
        usleep(1000);
    int64_t t0 = thread_cpu_ns();
    hot_pre(SPIN_MS);
    w->cpu_ns = thread_cpu_ns() - t0;
    return NULL;
}

static void *post_main(void *arg) {
    worker *w = arg;
    prctl(PR_SET_NAME, "late_worker", 0, 0, 0);
    w->tid = (int64_t)syscall(SYS_gettid);
    int64_t t0 = thread_cpu_ns();
    hot_post(SPIN_MS);
    w->cpu_ns = thread_cpu_ns() - t0;
    return NULL;
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

static int starts_with(const char *s, const char *prefix) {
    return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Checks one thread's samples in r: count against its CPU time, its hot function dominant. */
static void check_thread(const strobe_result *r, int64_t tid, int64_t cpu_ns, const char *hot,
                         const char *name) {
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    long samples = 0, leaf_hot = 0, stack_hot = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].tid != tid || strcmp(ev[i].category, "cpu_sample") != 0) continue;
        CHECK_EQ(ev[i].kind, STROBE_EVENT_INSTANT);
        samples++;
        leaf_hot += starts_with(ev[i].name, hot);
        const char *stack = strobe_event_arg(r, i, "Call stack");
        CHECK(stack != NULL);
        stack_hot += stack != NULL && strstr(stack, hot) != NULL;
    }
    long expect = (long)(cpu_ns * HZ / 1000000000);
    fprintf(stderr,
            "%s: tid %lld, %ld samples (%ld with %s as leaf, %ld in the stack), cpu %.0f ms\n",
            name, (long long)tid, samples, leaf_hot, hot, stack_hot, (double)cpu_ns / 1e6);
    CHECK_INT(samples, >=, expect * 4 / 10);
    CHECK_INT(samples, <=, expect * 13 / 10 + 5);
    CHECK_INT(leaf_hot * 2, >=, samples);
    CHECK_INT(stack_hot * 10, >=, samples * 9);
    /* The thread has its track, named as the kernel names it. */
    const strobe_thread_info *th = strobe_result_threads(r);
    int found = 0;
    for (size_t i = 0; i < strobe_result_thread_count(r); i++)
        if (th[i].tid == tid) {
            found = 1;
            CHECK_STR(th[i].name, name);
        }
    CHECK(found);
}

/* One session: the three threads, sampled. stream: the path to stream to (NULL: none); save: the
 * paths to save the result to (NULL-terminated). */
static void run(const char *stream, const char *const *save) {
    worker pre = {0}, post = {0};
    __atomic_store_n(&go_pre, 0, __ATOMIC_RELEASE);
    pthread_t tp, tq;
    CHECK_EQ(pthread_create(&tp, NULL, pre_main, &pre), 0);
    while (__atomic_load_n(&pre.tid, __ATOMIC_ACQUIRE) == 0)
        usleep(1000);

    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = HZ;
    cfg.stream_path = stream;
    CHECK_EQ(strobe_start(&cfg), 0);
    __atomic_store_n(&go_pre, 1, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_create(&tq, NULL, post_main, &post), 0);
    int64_t t0 = thread_cpu_ns();
    strobe_set_thread_name("main");
    strobe_range_begin("main_work");
    hot_main(SPIN_MS);
    strobe_range_end();
    int64_t main_cpu = thread_cpu_ns() - t0;
    pthread_join(tp, NULL);
    pthread_join(tq, NULL);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    if (r == NULL) return;

    check_thread(r, pre.tid, pre.cpu_ns, "hot_pre", "pre_worker");
    check_thread(r, post.tid, post.cpu_ns, "hot_post", "late_worker");
    check_thread(r, (int64_t)syscall(SYS_gettid), main_cpu, "hot_main", "main");

    /* hot_main's samples are inside main_work (in memory; a stream writes ranges apart). */
    const strobe_event *ev = strobe_result_events(r);
    size_t inside = 0, main_samples = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "cpu_sample") != 0 || !starts_with(ev[i].name, "hot_main"))
            continue;
        main_samples++;
        inside +=
            ev[i].parent != STROBE_NO_EVENT && strcmp(ev[ev[i].parent].name, "main_work") == 0;
    }
    if (stream == NULL) CHECK_EQ(inside, main_samples);

    /* The sampler's counts, lost ones included. */
    const char *meta = NULL;
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, "strobe_cpu_sampling") == 0)
            meta = v;
    }
    CHECK(meta != NULL);
    if (meta) {
        CHECK(strstr(meta, "\"event\": \"cpu-clock\"") != NULL);
        CHECK(strstr(meta, "\"lost\": ") != NULL);
        CHECK(strstr(meta, "\"frequency_hz\": 1000") != NULL);
    }
    for (size_t k = 0; save && save[k]; k++)
        CHECK_EQ(strobe_result_save_as(r, save[k], STROBE_FORMAT_AUTO), 0);
    strobe_result_free(r);
}

static void *spin_main(void *arg) {
    worker *w = arg;
    w->tid = (int64_t)syscall(SYS_gettid);
    int64_t t0 = thread_cpu_ns();
    hot_post(SPIN_MS);
    w->cpu_ns = thread_cpu_ns() - t0;
    return NULL;
}

/* Losses: rings of one page, no drain thread (read at stop), 10 kHz on two spinning threads: the
 * rings hold a few dozen samples, the thousands of others are lost, and counted. */
static void check_losses(void) {
    strobe__sampler *sp = NULL;
    char why[200] = "";
    CHECK_EQ(strobe__sampler_start(&sp, 10000, 1, -1, why, sizeof why), 0);
    if (sp == NULL) return;
    strobe__sampler_enable(sp);
    worker a = {0}, b = {0};
    pthread_t ta, tb;
    CHECK_EQ(pthread_create(&ta, NULL, spin_main, &a), 0);
    CHECK_EQ(pthread_create(&tb, NULL, spin_main, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    strobe__sampler_stop(sp);
    size_t kept = 0;
    (void)strobe__sampler_samples(sp, &kept);
    uint64_t lost = strobe__sampler_lost(sp);
    long expect = (long)((a.cpu_ns + b.cpu_ns) * 10000 / 1000000000);
    fprintf(stderr, "losses: %zu kept, %llu lost, %ld expected\n", kept, (unsigned long long)lost,
            expect);
    CHECK_INT(lost, >, kept);
    CHECK_INT((long)(kept + lost), >=, expect * 4 / 10);
    CHECK_INT((long)(kept + lost), <=, expect * 13 / 10 + 50);
    char json[400];
    strobe__sampler_json(sp, json, sizeof json);
    char want[64];
    snprintf(want, sizeof want, "\"lost\": %llu", (unsigned long long)lost);
    CHECK(strstr(json, want) != NULL);
    strobe__sampler_free(sp);
}

/* fork() during a sampled session: the child spins (its samples must not land in the parent's
 * trace), then starts and stops a session of its own, which drops its copy of the parent's; the
 * parent then spins, and must still be sampled. */
static void check_fork(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = HZ;
    CHECK_EQ(strobe_start(&cfg), 0);
    pid_t child = fork();
    if (child == 0) {
        hot_post(150);
        strobe_config c2;
        strobe_config_init(&c2);
        int rc = strobe_start(&c2);
        strobe_result *r2 = NULL;
        if (rc == 0) rc = strobe_stop(&r2);
        strobe_result_free(r2);
        _exit(rc == 0 ? 0 : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t after = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    hot_main(200);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    if (r == NULL) return;
    const strobe_event *ev = strobe_result_events(r);
    long later = 0, childs = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "cpu_sample") != 0) continue;
        later += ev[i].start_ns > after && starts_with(ev[i].name, "hot_main");
        childs += ev[i].tid == child || starts_with(ev[i].name, "hot_post");
    }
    fprintf(stderr, "fork: %ld parent samples after the child's exit, %ld of the child\n", later,
            childs);
    CHECK_INT(later, >=, 60);
    CHECK_EQ(childs, 0);
    strobe_result_free(r);
}

/* strobe_prepare() opens the events disabled: nothing is sampled before strobe_start_prepared(). */
static void check_prepared(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.cpu_sample_hz = HZ;
    CHECK_EQ(strobe_prepare(&cfg), 0);
    hot_post(100);
    CHECK_EQ(strobe_start_prepared(), 0);
    int64_t t0 = thread_cpu_ns();
    hot_main(200);
    int64_t cpu = thread_cpu_ns() - t0;
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    if (r == NULL) return;
    const strobe_event *ev = strobe_result_events(r);
    long mains = 0, before = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "cpu_sample") != 0) continue;
        mains += starts_with(ev[i].name, "hot_main");
        before += starts_with(ev[i].name, "hot_post");
    }
    fprintf(stderr, "prepared: %ld samples in the window, %ld before it\n", mains, before);
    CHECK_INT(mains, >=, cpu * HZ / 1000000000 * 4 / 10);
    CHECK_EQ(before, 0);
    strobe_result_free(r);
}

static int park_go; /* atomic */
static void *park_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&park_go, __ATOMIC_ACQUIRE))
        usleep(1000);
    return NULL;
}

/* In a child: six threads at start, and descriptors for about two threads' events. */
static void check_fd_limit(void) {
    pid_t child = fork();
    if (child == 0) {
        pthread_t t[6];
        for (int i = 0; i < 6; i++)
            if (pthread_create(&t[i], NULL, park_main, NULL) != 0) _exit(2);
        int open_fds = 0;
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL) {
            fprintf(stderr, "fd limit: /proc/self/fd: %s; not checked\n", strerror(errno));
            _exit(77);
        }
        while (readdir(d))
            open_fds++;
        closedir(d);
        long ncpu = sysconf(_SC_NPROCESSORS_CONF);
        /* The rings (one per CPU), the /proc/self/task directory, two more threads' events.
         * The hard limit too: under a higher one, strobe's descriptors go past the soft limit
         * (core/ownfd.h), out of the program's budget. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "fd limit: getrlimit(RLIMIT_NOFILE): %s; not checked\n",
                    strerror(errno));
            _exit(77);
        }
        rl.rlim_cur = rl.rlim_max = (rlim_t)(open_fds + ncpu + 1 + 2 * ncpu);
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "fd limit: setrlimit(RLIMIT_NOFILE): %s; not checked\n",
                    strerror(errno));
            _exit(77);
        }
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.cpu_sample_hz = HZ;
        if (strobe_start(&cfg) != 0) _exit(3);
        hot_main(100);
        __atomic_store_n(&park_go, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < 6; i++)
            pthread_join(t[i], NULL);
        strobe_result *r = NULL;
        if (strobe_stop(&r) != 0) _exit(4);
        int warned = 0, samples = 0;
        for (size_t i = 0; i < strobe_result_warning_count(r); i++) {
            const char *w = strobe_result_warning(r, i);
            warned += strstr(w, "not sampled") != NULL;
            fprintf(stderr, "fd limit: warning: %s\n", w);
        }
        for (size_t i = 0; i < strobe_result_event_count(r); i++)
            samples += starts_with(strobe_result_events(r)[i].name, "hot_main");
        strobe_result_free(r);
        fprintf(stderr, "fd limit: %d samples of the main thread\n", samples);
        _exit(warned == 1 && samples >= 30 ? 0 : 5);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return;
    CHECK_EQ(WEXITSTATUS(status), 0);
}

/* In a child: perf_event_open fails with EACCES (seccomp), as under perf_event_paranoid 3. */
static void check_refused(void) {
    pid_t child = fork();
    if (child == 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            _exit(77);
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.cpu_sample_hz = HZ;
        if (strobe_start(&cfg) != 0) _exit(2);
        strobe_range_begin("work");
        hot_main(50);
        strobe_range_end();
        strobe_result *r = NULL;
        if (strobe_stop(&r) != 0) _exit(3);
        int warned = 0, samples = 0, ranges = 0;
        for (size_t i = 0; i < strobe_result_warning_count(r); i++) {
            const char *w = strobe_result_warning(r, i);
            warned += strstr(w, "CPU sampling") != NULL && strstr(w, "perf_event_open") != NULL;
            fprintf(stderr, "refused: warning: %s\n", w);
        }
        for (size_t i = 0; i < strobe_result_event_count(r); i++) {
            samples += strcmp(strobe_result_events(r)[i].category, "cpu_sample") == 0;
            ranges += strcmp(strobe_result_events(r)[i].name, "work") == 0;
        }
        strobe_result_free(r);
        _exit(warned == 1 && samples == 0 && ranges == 1 ? 0 : 4);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        fprintf(stderr, "refused: seccomp unavailable, not checked\n");
        return;
    }
    CHECK_EQ(WEXITSTATUS(status), 0);
}

int main(void) {
    if (!perf_allowed()) {
        printf("SKIP: perf_event_open (cpu-clock, user only) is refused here\n");
        return 77;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/sample", STROBE_TEST_OUT_DIR);
    mkdir(dir, 0755);
    char json[600], pf[600], sj[600], sp[600], tmp[600];
    snprintf(json, sizeof json, "%s/saved.json", dir);
    snprintf(pf, sizeof pf, "%s/saved.pftrace", dir);
    snprintf(sj, sizeof sj, "%s/streamed.json", dir);
    snprintf(sp, sizeof sp, "%s/streamed.pftrace", dir);
    snprintf(tmp, sizeof tmp, "%s/unused.json", dir);

    /* A result is saved once: one session per saved format. */
    const char *const save_json[] = {json, NULL}, *const save_pf[] = {pf, NULL};
    run(NULL, save_json);
    run(NULL, save_pf);
    run(sj, NULL);
    run(sp, NULL);
    check_losses();
    check_fork();
    check_prepared();
    check_refused();
    check_fd_limit();

    /* Bounds, and a session without sampling is unchanged. */
    strobe_config cfg;
    strobe_config_init(&cfg);
    CHECK_EQ(cfg.cpu_sample_hz, 0);
    cfg.cpu_sample_hz = 10001;
    CHECK_EQ(strobe_start(&cfg), STROBE_EINVAL);
    cfg.cpu_sample_hz = 0;
    CHECK_EQ(strobe_start(&cfg), 0);
    hot_main(20);
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    for (size_t i = 0; r && i < strobe_result_event_count(r); i++)
        CHECK(strcmp(strobe_result_events(r)[i].category, "cpu_sample") != 0);
    for (size_t i = 0; r && i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0) CHECK(strcmp(k, "strobe_cpu_sampling") != 0);
    }
    strobe_result_free(r);
    return check_result();
}
