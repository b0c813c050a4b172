/* record_hook.c: libstrobe_record.so, what `strobe record` preloads into the program it runs (and
 * into every program that one starts): a streaming session from the library's constructor to its
 * destructor, in a part file of its own, which `strobe record` merges when the program is done.
 *
 * Contents: the settings (environment); the session (part files, start and stop, the timer of
 * --delay and --duration); threads (strobe's own, names); fork; the constructor and destructor.
 *
 * The settings come from variables that `strobe record` sets (cli/cmd_record.c):
 *   STROBE_RECORD_DIR         the parts folder (absolute); without it the library does nothing
 *   STROBE_RECORD_ACTIVITIES  "cpu" or "cpu,cuda" (CUDA from the program's first cuInit, through
 *                             CUDA_INJECTION64_PATH naming this library)
 *   STROBE_RECORD_DELAY_MS    record from this long after the process starts (default 0)
 *   STROBE_RECORD_DURATION_MS and for this long (default: to the end)
 *   STROBE_RECORD_HEAP        the malloc interposer (malloc_hook.c, built in): "all", an event
 *                             per call; BYTES (a number): allocations summed per call site, and
 *                             events of allocations sampled one every BYTES on average
 *   STROBE_RECORD_HEAP_STACKS "1": with HEAP, an event per call with its call stack, and the
 *                             sites summed; the sites' largest go to the trace ("strobe_heap")
 *                             and to PARTS/<part>.heap when the session stops (heap_hook.h)
 *   STROBE_RECORD_SAMPLE_HZ   CPU sampling at this rate (config.cpu_sample_hz), 0 or unset: none
 *   STROBE_RECORD_NO_PYTHON_FRAMES "1": samples without Python frames (config.no_python_frames)
 *   STROBE_RECORD_CALL_GRAPH  "fp" or "dwarf,SIZE" (config.cpu_sample_call_graph and
 *                             cpu_sample_stack_bytes; --call-graph); unset: the default
 *   STROBE_RECORD_CAPTURE_NVTX NAME: record only inside the NVTX ranges named NAME, a session
 *                             (and a part file) per range, instead of from start to exit
 *   STROBE_RECORD_CAPTURE_CUDA "1": the same between each cuProfilerStart and cuProfilerStop of
 *                             the program (with cuda: seen through CUPTI's callbacks from the
 *                             first cuInit on, core/device.h strobe__cuda_watch_profiler)
 *   STROBE_RECORD_WATCH_PID   `strobe record`'s pid: when it dies, the session stops (the
 *                             watch thread, below)
 *   STROBE_RECORD_TORCH_FLAGS --torch's words (shapes, memory, stack; the import hook reads them
 *                             too): shapes and memory turn on the session's record_shapes and
 *                             profile_memory, which keep what the torch observer records
 *   STROBE_RECORD_MAX_BYTES   the part file's cap in bytes (config.stream_max_bytes;
 * --max-part-size) STROBE_RECORD_NO_FOLLOW   "1": this process only: the variables, and the
 * LD_PRELOAD entry STROBE_RECORD_PRELOAD names, leave the environment at start, so that the
 * programs it runs are not recorded Programs started with fork+exec or posix_spawn inherit them and
 * load the library again. A child forked without exec starts a session of its own at the fork (CPU
 * only: CUDA does not survive a fork), into its own part file; the copy of the parent's session
 * that it inherits is the core's to drop (session.c, fork handling), and is never written by the
 * child.
 *
 * Part files: PARTS/<pid>.json, or PARTS/<pid>.<n>.json when the pid has one already (a forked
 * child that then runs exec: the image before exec and the one after), with PARTS/<same>.name
 * beside it holding the program's name (argv[0]'s base name). Each is a streamed trace: complete
 * after every append, so that a process that is killed leaves what it had written.
 *
 * PyTorch (strobe record --torch): the import hook gets this copy's torch table through
 * strobe__record_torch_api_get(); a process that loaded torch leaves PARTS/<part>.torch (below).
 *
 * Errors print one line prefixed "strobe record:" and never stop the program. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/device.h"
#include "core/ownthread.h"
#include "core/torch_api.h"
#include "heap_hook.h"
#include "nccl/nccl.h"
#include "nvtx/nvtx.h"
#include "strobe/strobe.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- The settings ----------------------------------------------------------------------- */

typedef struct settings {
    char dir[4096];
    uint32_t activities; /* at start: the CPU; CUDA joins at the program's cuInit (cuda_wanted) */
    int cuda_wanted;
    long long delay_ms, duration_ms; /* duration_ms < 0: to the end */
    int heap, heap_stacks;
    long long heap_rate;  /* --heap=BYTES: the sampling rate; 0: an event per call (--heap=all) */
    uint32_t sample_hz;   /* CPU sampling (--sample), 0: none */
    int no_python_frames; /* --no-python-frames */
    uint32_t call_graph, stack_bytes; /* --call-graph: STROBE_CALL_GRAPH_*, and dwarf's SIZE */
    char capture[1024];               /* --capture-range nvtx:NAME: NAME, "" for none */
    int capture_cuda;                 /* --capture-range cuda-profiler-api */
    unsigned long long max_bytes;     /* the part's cap (config.stream_max_bytes), 0: none */
    int torch_shapes, torch_memory;   /* --record-shapes, --profile-memory (the torch observer's) */
} settings;

static settings set;
static int active;           /* the settings were read and a session is to run in this process */
static int cuda_initialized; /* atomic: the driver called InitializeInjection (its first cuInit) */

static int proc_stat(pid_t pid, unsigned long long *start, char *st);
static pid_t watch_pid; /* `strobe record`'s pid (STROBE_RECORD_WATCH_PID), 0: none */
static unsigned long long watch_start; /* its start time, against a reused pid */

static void say(const char *msg, const char *detail) {
    char line[600];
    int n = snprintf(line, sizeof line, "strobe record: %s (pid %ld): %s%s%s\n",
                     program_invocation_short_name, (long)getpid(), msg, detail ? ": " : "",
                     detail ? detail : "");
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) return;
}

static long long env_ms(const char *name, long long def) {
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end != '\0' || x < 0) return def;
    return x;
}

/* Removes the entry `lib` from LD_PRELOAD (entries are separated by ':' or spaces), and the
 * variable itself when nothing is left. */
static void strip_preload(const char *lib) {
    const char *cur = getenv("LD_PRELOAD");
    if (cur == NULL || lib == NULL || lib[0] == '\0') return;
    size_t n = strlen(cur), ln = strlen(lib);
    char *out = malloc(n + 1);
    if (out == NULL) return;
    size_t o = 0;
    for (const char *p = cur; *p;) {
        size_t len = strcspn(p, ": ");
        if (len > 0 && !(len == ln && memcmp(p, lib, ln) == 0)) {
            if (o) out[o++] = ':';
            memcpy(out + o, p, len);
            o += len;
        }
        p += len;
        if (*p) p++;
    }
    out[o] = '\0';
    if (o)
        setenv("LD_PRELOAD", out, 1);
    else
        unsetenv("LD_PRELOAD");
    free(out);
}

static void forget_settings(void) {
    /* NVTX_INJECTION64_PATH and CUDA_INJECTION64_PATH stay: NVTX and the driver read them later,
     * at this process's first NVTX call and cuInit. Programs it runs inherit them and may load
     * this library as a tool, which then does nothing (no settings: not active). */
    strip_preload(getenv("STROBE_RECORD_PRELOAD"));
    static const char *const vars[] = {"STROBE_RECORD_DIR",
                                       "STROBE_RECORD_ACTIVITIES",
                                       "STROBE_RECORD_DELAY_MS",
                                       "STROBE_RECORD_DURATION_MS",
                                       "STROBE_RECORD_HEAP",
                                       "STROBE_RECORD_NO_FOLLOW",
                                       "STROBE_RECORD_PRELOAD",
                                       "STROBE_RECORD_SAMPLE_HZ",
                                       "STROBE_RECORD_CAPTURE_NVTX",
                                       "STROBE_RECORD_CAPTURE_CUDA",
                                       "STROBE_RECORD_HEAP_STACKS",
                                       "STROBE_RECORD_WATCH_PID",
                                       "STROBE_RECORD_MAX_BYTES",
                                       "STROBE_RECORD_CALL_GRAPH",
                                       "STROBE_RECORD_NO_PYTHON_FRAMES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* STROBE_RECORD_CALL_GRAPH ("fp" or "dwarf,SIZE", checked by `strobe record`) into set; anything
 * else leaves the default. */
static void read_call_graph(void) {
    const char *v = getenv("STROBE_RECORD_CALL_GRAPH");
    if (v == NULL) return;
    if (strcmp(v, "fp") == 0) {
        set.call_graph = STROBE_CALL_GRAPH_FP;
    } else if (strncmp(v, "dwarf,", 6) == 0) {
        char *end;
        errno = 0;
        unsigned long bytes = strtoul(v + 6, &end, 10);
        if (errno || *end != '\0' || bytes > STROBE_CPU_SAMPLE_STACK_MAX) return;
        set.call_graph = STROBE_CALL_GRAPH_DWARF;
        set.stack_bytes = (uint32_t)bytes;
    }
}

/* Reads the settings. @return 1 when this process records. */
static int read_settings(void) {
    const char *dir = getenv("STROBE_RECORD_DIR");
    if (dir == NULL || dir[0] == '\0') return 0;
    if (strlen(dir) >= sizeof set.dir - 64) {
        say("STROBE_RECORD_DIR is too long; not recording", NULL);
        return 0;
    }
    snprintf(set.dir, sizeof set.dir, "%s", dir);
    const char *acts = getenv("STROBE_RECORD_ACTIVITIES");
    set.activities = STROBE_ACTIVITY_CPU;
    set.cuda_wanted = acts && strstr(acts, "cuda") != NULL;
    /* CUDA joins at the program's first cuInit when the driver will call this library for it;
     * where it will not (another tool holds CUDA's injection), the session starts CUDA itself,
     * as a program using strobe would. */
    const char *inj = getenv("CUDA_INJECTION64_PATH"), *self = getenv("STROBE_RECORD_PRELOAD");
    const char *nf = getenv("STROBE_RECORD_NO_FOLLOW");
    int no_follow = nf && strcmp(nf, "1") == 0;
    if (set.cuda_wanted && (inj == NULL || self == NULL || strcmp(inj, self) != 0)) {
        set.activities |= STROBE_ACTIVITY_CUDA;
        if (getenv("STROBE_RECORD_CAPTURE_CUDA") && !no_follow)
            say("CUDA_INJECTION64_PATH names another tool: cuProfilerStart/Stop cannot be "
                "watched; nothing is recorded",
                inj);
    }
    set.delay_ms = env_ms("STROBE_RECORD_DELAY_MS", 0);
    set.duration_ms = env_ms("STROBE_RECORD_DURATION_MS", -1);
    const char *heap = getenv("STROBE_RECORD_HEAP");
    set.heap = heap && heap[0] != '\0';
    set.heap_rate = set.heap && strcmp(heap, "all") != 0 ? env_ms("STROBE_RECORD_HEAP", 0) : 0;
    const char *hs = getenv("STROBE_RECORD_HEAP_STACKS");
    set.heap_stacks = set.heap && hs && strcmp(hs, "1") == 0;
    const char *cap = getenv("STROBE_RECORD_CAPTURE_NVTX");
    snprintf(set.capture, sizeof set.capture, "%s", cap ? cap : "");
    const char *capc = getenv("STROBE_RECORD_CAPTURE_CUDA");
    set.capture_cuda = capc && strcmp(capc, "1") == 0;
    long long wp = env_ms("STROBE_RECORD_WATCH_PID", 0);
    char wst;
    if (wp > 0 && wp < INT32_MAX && proc_stat((pid_t)wp, &watch_start, &wst) == 0)
        watch_pid = (pid_t)wp;
    long long max_bytes = env_ms("STROBE_RECORD_MAX_BYTES", 0);
    set.max_bytes = max_bytes > 0 ? (unsigned long long)max_bytes : 0;
    const char *tf = getenv("STROBE_RECORD_TORCH_FLAGS");
    set.torch_shapes = tf && strstr(tf, "shapes") != NULL;
    set.torch_memory = tf && strstr(tf, "memory") != NULL;
    long long hz = env_ms("STROBE_RECORD_SAMPLE_HZ", 0);
    set.sample_hz = hz > 0 && hz <= STROBE_CPU_SAMPLE_HZ_MAX ? (uint32_t)hz : 0;
    set.no_python_frames = env_ms("STROBE_RECORD_NO_PYTHON_FRAMES", 0) != 0;
    read_call_graph();
    if (no_follow) forget_settings();
    return 1;
}

/* ---- The session ------------------------------------------------------------------------ */

/* The session's state, under `lock`: WAIT (the delay runs), ON, DONE (stopped, or never to
 * start: the process is exiting). */
enum { ST_WAIT = 0, ST_ON = 1, ST_DONE = 2 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state;
static pid_t session_pid;
static char part_path[4300];

static void log_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_ERROR) say("strobe", msg);
}

/* Takes a part file name that no other process holds (O_EXCL), and writes the program's name
 * beside it. @return 0 or -1. */
static int reserve_part(void) {
    long pid = (long)getpid();
    for (int n = 0; n < 1000; n++) {
        char base[4200];
        if (n == 0)
            snprintf(base, sizeof base, "%s/%ld", set.dir, pid);
        else
            snprintf(base, sizeof base, "%s/%ld.%d", set.dir, pid, n);
        snprintf(part_path, sizeof part_path, "%s.json", base);
        int fd = open(part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return -1;
        close(fd);
        char name_path[4210];
        snprintf(name_path, sizeof name_path, "%s.name", base);
        fd = open(name_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            const char *prog = program_invocation_short_name;
            size_t len = strlen(prog);
            if (write(fd, prog, len) != (ssize_t)len) {
                /* the merge then names the process after its command (comm) */
            }
            close(fd);
        }
        return 0;
    }
    return -1;
}

/* Starts this process's session (lock held). */
static void start_locked(void) {
    if (state != ST_WAIT) return;
    int quiet = strobe__heap_quiet(1);
    if (reserve_part() != 0) {
        char what[4300];
        snprintf(what, sizeof what, "%s: %s", set.dir, strerror(errno));
        say("cannot create a part file; not recording", what);
        state = ST_DONE;
        strobe__heap_quiet(quiet);
        return;
    }
    strobe_set_log_fn(log_sink, NULL);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.activities = set.activities;
    /* The program initialized CUDA before this session started (during --delay): the session
     * starts CUDA itself; otherwise CUDA joins at the program's cuInit (InitializeInjection). */
    if (set.cuda_wanted && __atomic_load_n(&cuda_initialized, __ATOMIC_ACQUIRE))
        cfg.activities |= STROBE_ACTIVITY_CUDA;
    cfg.thread_mode = STROBE_THREADS_ALL;
    cfg.stream_path = part_path;
    cfg.stream_max_bytes = set.max_bytes;
    cfg.profile_memory = set.heap || set.torch_memory;
    cfg.record_shapes = set.torch_shapes;
    cfg.cpu_sample_hz = set.sample_hz;
    cfg.no_python_frames = set.no_python_frames;
    cfg.cpu_sample_call_graph = set.call_graph;
    cfg.cpu_sample_stack_bytes = set.stack_bytes;
    cfg.trace_name = program_invocation_short_name;
    /* Many short processes (a shell script's) each start a session: fault in little up front. */
    cfg.prefault_bytes = (size_t)1 << 20;
    int rc = strobe_start(&cfg);
    if (rc != 0) {
        say("cannot start a session; not recording", strobe_strerror(rc));
        unlink(part_path);
        state = ST_DONE;
    } else {
        session_pid = getpid();
        state = ST_ON;
        if (set.heap) strobe__heap_set_tracing(1);
        int sites = set.heap_stacks ? 1 : set.heap_rate > 0 ? 2 : 0;
        if (sites && strobe__heap_sites(sites, set.heap_rate) != 0)
            say("--heap: out of memory; no allocation sites", NULL);
    }
    strobe__heap_quiet(quiet);
}

/* ---- PyTorch ---------------------------------------------------------------------------- */

/* strobe record --torch: the import hook (src/torch/pyhook/sitecustomize.py) asks this library
 * for its copy's table and hands it to the torch observer, which then records torch's operators
 * into this process's session. torch_observed: it did (atomic; a forked child inherits it with
 * the callback its parent registered). */
static int torch_observed;

EXPORT const strobe__torch_api *strobe__record_torch_api_get(void);
EXPORT const strobe__torch_api *strobe__record_torch_api_get(void) {
    if (!active) return NULL; /* not recorded here (--no-follow's children): no observer */
    __atomic_store_n(&torch_observed, 1, __ATOMIC_RELEASE);
    return strobe__torch_api_get();
}

static int crash_sig; /* atomic: the first ending signal, 0: none (see Signals, below) */

static int is_libtorch(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    return base && strncmp(base, "libtorch_cpu.so", 15) == 0;
}

/* When the process has loaded torch (libtorch_cpu), PARTS/<part>.torch says whether the observer
 * recorded its operators ("observed") or not ("unobserved"), so that `strobe record` can suggest
 * --torch, once for the run (cmd_record.c). Not from a signal handler: dl_iterate_phdr takes the
 * loader's lock. */
static void note_torch(void) {
    if (__atomic_load_n(&crash_sig, __ATOMIC_ACQUIRE) || !dl_iterate_phdr(is_libtorch, NULL))
        return;
    char path[sizeof part_path + 8];
    size_t len = strlen(part_path);
    if (len <= 5) return;
    snprintf(path, sizeof path, "%.*s.torch", (int)(len - 5), part_path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const char *what =
        __atomic_load_n(&torch_observed, __ATOMIC_ACQUIRE) ? "observed\n" : "unobserved\n";
    if (write(fd, what, strlen(what)) < 0) {
        /* the note is a hint: without it, strobe record says nothing about torch */
    }
    close(fd);
}

/* Stops the session (lock held); `final`: nothing starts after it. */
static void stop_locked(int final) {
    if (state == ST_ON && session_pid == getpid()) {
        note_torch();
        strobe__heap_set_tracing(0);
        int quiet = strobe__heap_quiet(1);
        if (set.heap_stacks || set.heap_rate > 0) {
            /* The allocation sites: into the trace ("strobe_heap", while the session still
             * runs), and the largest beside the part (PARTS/<part>.heap). */
            char heap_path[sizeof part_path];
            size_t len = strlen(part_path);
            if (len > 5) {
                snprintf(heap_path, sizeof heap_path, "%.*s.heap", (int)(len - 5), part_path);
                if (strobe__heap_sites_report(heap_path, 50) != 0)
                    say("--heap: cannot write the allocation sites", heap_path);
            }
        }
        strobe_result *r = NULL;
        int rc = strobe_stop(&r);
        if (rc != 0) {
            say("cannot stop the session", strobe_strerror(rc));
        } else {
            strobe_result_free(r);
        }
        strobe__heap_quiet(quiet);
    }
    if (final || state == ST_ON) state = ST_DONE;
}

static void sleep_ms(long long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The timer of --delay and --duration, on a thread of its own (with every signal blocked, so
 * that the program's signals go to its own threads). */
static void *timer_main(void *arg) {
    strobe__own_thread_ready(arg);            /* start_own_thread's word: not used after this */
    strobe__own_thread_enter("strobe_timer"); /* left out of the CPU samples */
    strobe__heap_quiet(1);
    if (set.delay_ms > 0) sleep_ms(set.delay_ms);
    pthread_mutex_lock(&lock);
    start_locked();
    pthread_mutex_unlock(&lock);
    if (set.duration_ms >= 0) {
        sleep_ms(set.duration_ms);
        pthread_mutex_lock(&lock);
        stop_locked(1);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* Starts the session now, or the timer that starts and stops it. */
/* --capture-range nvtx:NAME: a session per captured range, started at its push and stopped
 * after its pop (src/nvtx calls these on the thread that pushed it). */
static void capture_on(void) {
    pthread_mutex_lock(&lock);
    if (state == ST_WAIT) start_locked();
    pthread_mutex_unlock(&lock);
}

static void capture_off(void) {
    pthread_mutex_lock(&lock);
    if (state == ST_ON) {
        stop_locked(0);
        state = ST_WAIT; /* the next range of that name is captured too */
    }
    pthread_mutex_unlock(&lock);
}

/* --capture-range cuda-profiler-api: the CUDA backend's callback, on the thread that called
 * cuProfilerStart (after it) or cuProfilerStop (before it). */
static void capture_cuda(int start) {
    int quiet = strobe__heap_quiet(1);
    if (start)
        capture_on();
    else
        capture_off();
    strobe__heap_quiet(quiet);
}

/* Starts one of this library's threads (the timer, the watch): detached, quiet (its
 * allocations are not the program's), with every signal blocked, so that the program's signals
 * go to its own threads. `fail` is said, with the system's reason, if it cannot start. */
static void start_own_thread(void *(*fn)(void *), const char *fail) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int quiet = strobe__heap_quiet(1);
    /* fn signals `ready` first thing: what a sanitizer's runtime does in a new thread before it
     * runs fn (ASan allocates) is then over before the program goes on and may fork. */
    uint32_t ready = 0;
    int rc = pthread_create(&t, &attr, fn, &ready);
    if (rc != 0) say(fail, strerror(rc));
    if (rc == 0) strobe__own_thread_wait(&ready, 2000);
    strobe__heap_quiet(quiet);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void begin(void) {
    /* The windows open at the program's cuProfilerStart calls, watched from its first cuInit
     * (InitializeInjection). */
    if (set.capture_cuda) return;
    if (set.capture[0]) {
        static int armed; /* once: a forked child keeps its parent's (src/nvtx's state is copied) */
        if (!armed++) strobe__nvtx_set_capture(set.capture, capture_on, capture_off);
        return;
    }
    if (set.delay_ms == 0) {
        pthread_mutex_lock(&lock);
        start_locked();
        pthread_mutex_unlock(&lock);
        if (set.duration_ms < 0) return;
    }
    if (set.delay_ms == 0 && state != ST_ON) return;
    start_own_thread(timer_main, "cannot start the --delay/--duration timer");
}

/* ---- Threads ------------------------------------------------------------------------------ */

/* Threads that strobe starts while it works for this library (the stream's writer) are marked
 * quiet for their whole life, so that their allocations are not recorded as the program's. */
typedef struct quiet_start {
    void *(*fn)(void *);
    void *arg;
    uint32_t taken; /* the thread has copied fn and arg: the starter frees the block */
} quiet_start;

/* The block is freed by the starter, not here: an allocation in a thread that has just started
 * may be under way when the program forks (see strobe__own_thread_wait). */
static void *quiet_main(void *p) {
    quiet_start *qs = p;
    void *(*fn)(void *) = qs->fn;
    void *arg = qs->arg;
    strobe__heap_quiet(1);
    strobe__own_thread_ready(&qs->taken);
    return fn(arg);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* The program's threads alive, main included (atomic). A process ends when its last thread does,
 * with exit(0) (glibc's start_thread); strobe's own threads would keep alive a program whose main
 * thread called pthread_exit(), so the program's last thread calls exit(0) itself, as glibc would
 * have without them. Each program thread carries `prog_key`, whose destructor runs however the
 * thread ends (return, pthread_exit, cancellation). */
static int prog_threads = 1;
static pthread_key_t prog_key;
static int prog_key_ok;

static void prog_thread_gone(void *v) {
    (void)v;
    if (__atomic_sub_fetch(&prog_threads, 1, __ATOMIC_ACQ_REL) == 0) exit(0);
}

static void *prog_main(void *p) {
    quiet_start q = *(quiet_start *)p;
    int quiet = strobe__heap_quiet(1);
    free(p);
    pthread_setspecific(prog_key, (void *)1);
    strobe__heap_quiet(quiet);
    return q.fn(q.arg);
}

/* A program thread (called quiet): counted from before it starts. */
static int prog_create(create_fn r, pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                       void *arg) {
    if (!active || !prog_key_ok) return r(t, attr, fn, arg);
    quiet_start *q = malloc(sizeof *q);
    if (q == NULL) return EAGAIN;
    q->fn = fn;
    q->arg = arg;
    __atomic_add_fetch(&prog_threads, 1, __ATOMIC_ACQ_REL);
    int rc = r(t, attr, prog_main, q);
    if (rc != 0) {
        __atomic_sub_fetch(&prog_threads, 1, __ATOMIC_ACQ_REL);
        free(q);
    }
    return rc;
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
    static create_fn real;
    create_fn r = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (r == NULL) {
        r = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (r == NULL) return EAGAIN;
        __atomic_store_n(&real, r, __ATOMIC_RELEASE);
    }
    int quiet = strobe__heap_quiet(1);
    if (!quiet) {
        int rc = prog_create(r, t, attr, fn, arg);
        strobe__heap_quiet(0);
        return rc;
    }
    quiet_start *q = malloc(sizeof *q);
    if (q == NULL) return EAGAIN;
    q->fn = fn;
    q->arg = arg;
    q->taken = 0;
    int rc = r(t, attr, quiet_main, q);
    if (rc == 0) strobe__own_thread_wait(&q->taken, 2000);
    /* Not taken in 2 s (a thread not yet scheduled): the block stays, for it to read later. */
    if (rc != 0 || __atomic_load_n(&q->taken, __ATOMIC_ACQUIRE)) free(q);
    return rc;
}

typedef int (*setname_fn)(pthread_t, const char *);

/* A thread that names itself is named so in the trace (strobe reads a thread's name from the
 * system when it first records, which may come before the program names it). */
EXPORT int pthread_setname_np(pthread_t t, const char *name) {
    static setname_fn real;
    setname_fn r = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (r == NULL) {
        r = (setname_fn)dlsym(RTLD_NEXT, "pthread_setname_np");
        if (r == NULL) return ENOSYS;
        __atomic_store_n(&real, r, __ATOMIC_RELEASE);
    }
    int rc = r(t, name);
    if (rc == 0 && active && pthread_equal(t, pthread_self())) {
        int quiet = strobe__heap_quiet(1);
        strobe_set_thread_name(name);
        strobe__heap_quiet(quiet);
    }
    return rc;
}

/* ---- _exit -------------------------------------------------------------------------------- */

/* Programs that end with _exit() (shells do, and children that fail to exec) skip the
 * destructor: the session stops here first, so that what the threads hold is written. Only in
 * the process that owns the session: a vfork() child shares its parent's memory and runs no fork
 * handler, so its pid differs from session_pid and it passes straight through. */
typedef void (*exit_fn)(int);

/* Stops the session for good when this process owns it (exec uses it too). @return whether it was
 * recording. */
static int stop_before_exit(void) {
    if (!active || session_pid != getpid()) return 0;
    pthread_mutex_lock(&lock);
    int was_on = state == ST_ON;
    stop_locked(1);
    pthread_mutex_unlock(&lock);
    return was_on;
}

/* Found by the constructor: a vfork() child that calls _exit must not enter the loader. */
static exit_fn real_exit;

EXPORT void _exit(int status) {
    (void)stop_before_exit();
    exit_fn r = __atomic_load_n(&real_exit, __ATOMIC_ACQUIRE);
    if (r) r(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _Exit(int status) {
    _exit(status);
}

/* ---- exec --------------------------------------------------------------------------------- */

/* exec replaces the image without running its destructor: the session stops first, so that its
 * part is complete; the new image, given LD_PRELOAD again, records into a part of its own
 * (PARTS/<pid>.<n>.json). If exec fails the program goes on, recorded again in a new part. Each
 * of glibc's exec functions calls the system's directly, so each is wrapped. */
static void exec_failed(int was_on) {
    if (!was_on) return;
    int e = errno;
    pthread_mutex_lock(&lock);
    state = ST_WAIT;
    start_locked();
    pthread_mutex_unlock(&lock);
    errno = e;
}

static void *next_fn(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) errno = ENOSYS;
    return f;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* execve and execvpe, which differ only in how the file is found. */
static int exec_ve(const char *name, const char *file, char *const argv[], char *const envp[]) {
    execve_fn f = (execve_fn)next_fn(name);
    if (f == NULL) return -1;
    int on = stop_before_exit();
    int rc = f(file, argv, envp);
    exec_failed(on);
    return rc;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    return exec_ve("execve", path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    return exec_ve("execvpe", file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    fexecve_fn f = (fexecve_fn)next_fn("fexecve");
    if (f == NULL) return -1;
    int on = stop_before_exit();
    int rc = f(fd, argv, envp);
    exec_failed(on);
    return rc;
}

static int exec_v(const char *name, const char *path, char *const argv[]) {
    execv_fn f = (execv_fn)next_fn(name);
    if (f == NULL) return -1;
    int on = stop_before_exit();
    int rc = f(path, argv);
    exec_failed(on);
    return rc;
}

EXPORT int execv(const char *path, char *const argv[]) {
    return exec_v("execv", path, argv);
}

EXPORT int execvp(const char *file, char *const argv[]) {
    return exec_v("execvp", file, argv);
}

/* execl, execlp, execle: the arguments gathered into an array (on the stack, as glibc does),
 * then the vector form. `with_env`: a char *const envp[] follows the terminating NULL. */
#define EXEC_L(kind, path, arg0)                                                                   \
    do {                                                                                           \
        va_list ap;                                                                                \
        size_t n = 1;                                                                              \
        va_start(ap, arg0);                                                                        \
        while (va_arg(ap, const char *) != NULL)                                                   \
            n++;                                                                                   \
        va_end(ap);                                                                                \
        if (n > 1u << 20) {                                                                        \
            errno = E2BIG;                                                                         \
            return -1;                                                                             \
        }                                                                                          \
        char **v = __builtin_alloca((n + 1) * sizeof *v);                                          \
        va_start(ap, arg0);                                                                        \
        v[0] = (char *)arg0;                                                                       \
        for (size_t i = 1; i <= n; i++)                                                            \
            v[i] = va_arg(ap, char *);                                                             \
        char *const *envp = kind == 2 ? va_arg(ap, char *const *) : NULL;                          \
        va_end(ap);                                                                                \
        if (kind == 2) return execve(path, v, envp);                                               \
        return kind == 1 ? execvp(path, v) : execv(path, v);                                       \
    } while (0)

EXPORT int execl(const char *path, const char *arg0, ...) {
    EXEC_L(0, path, arg0);
}

EXPORT int execlp(const char *file, const char *arg0, ...) {
    EXEC_L(1, file, arg0);
}

EXPORT int execle(const char *path, const char *arg0, ...) {
    EXEC_L(2, path, arg0);
}

/* ---- Signals that end the process, and the watch thread ------------------------------------ */

/* A signal whose default action ends the process (a crash: SIGSEGV, SIGBUS, SIGABRT ...; or a
 * kill: SIGTERM, SIGINT, SIGHUP ...) would lose what the threads hold in their chunks. Where the
 * program leaves such a signal at its default, strobe's handler stops the session first (an
 * instant "[strobe] process ended by SIG..." marks it in the trace), then restores the default
 * and raises the signal again, so that the process ends as it would have (its status, its core
 * dump). A program that sets its own handler replaces strobe's.
 *
 * Stopping is not async-signal-safe: a crash inside the allocator or inside strobe could block
 * it. The watch thread bounds it: 3 s after a signal it ends the process with the signal's
 * default action whether or not the stop finished. The handler runs with SA_NODEFER, so that a
 * second fault inside the stop goes to the handler again, which then takes the default at once.
 * The same thread watches `strobe record`: if it dies (SIGKILL), the session stops and its part
 * is closed, and the program goes on unrecorded, instead of appending to a part nobody merges. */
static const int end_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE,  SIGILL,  SIGSYS, SIGTERM,
                                  SIGINT,  SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ};
static long crash_tid; /* the thread handling it */
static int crash_done; /* atomic: its handler stopped the session (or gave up) */
static int watch_word; /* futex the watch thread sleeps on */

static void futex_wake(int *w) {
    __atomic_add_fetch(w, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void default_and_raise(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void on_end_signal(int sig) {
    int e = errno;
    long self = (long)syscall(SYS_gettid);
    int first = 0;
    if (__atomic_compare_exchange_n(&crash_sig, &first, sig, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&crash_tid, self, __ATOMIC_RELEASE);
        futex_wake(&watch_word);
        if (session_pid == getpid()) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            if (pthread_mutex_timedlock(&lock, &until) == 0) {
                if (state == ST_ON) {
                    char what[64];
                    snprintf(what, sizeof what, "[strobe] process ended by SIG%s",
                             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
                    strobe__instant_name(what);
                }
                stop_locked(1);
                pthread_mutex_unlock(&lock);
            }
        }
        __atomic_store_n(&crash_done, 1, __ATOMIC_RELEASE);
    } else if (__atomic_load_n(&crash_tid, __ATOMIC_ACQUIRE) != self) {
        /* Another thread stops the session: this one waits for it (the watch thread bounds the
         * wait), then ends the process as the signal would. */
        for (int i = 0; i < 400 && !__atomic_load_n(&crash_done, __ATOMIC_ACQUIRE); i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    errno = e;
    default_and_raise(sig);
}

static void install_end_handlers(void) {
    for (size_t i = 0; i < sizeof end_signals / sizeof end_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(end_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_end_signal;
        sa.sa_flags = SA_NODEFER | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(end_signals[i], &sa, NULL);
    }
}

/* The start time (field 22) and state of process `pid`. @return 0, or -1: no such process. */
static int proc_stat(pid_t pid, unsigned long long *start, char *st) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ') return -1;
    *st = p[2];
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    if (p == NULL) return -1;
    *start = strtoull(p, NULL, 10);
    return 0;
}

static int watched_gone(void) {
    if (watch_pid <= 0 || getppid() == watch_pid) return 0;
    unsigned long long start;
    char st;
    if (proc_stat(watch_pid, &start, &st) != 0) return 1;
    return st == 'Z' || st == 'X' || start != watch_start;
}

static void *watch_main(void *arg) {
    strobe__own_thread_ready(arg);            /* start_own_thread's word: not used after this */
    strobe__own_thread_enter("strobe_watch"); /* left out of the CPU samples */
    strobe__heap_quiet(1);
    for (;;) {
        int seen = __atomic_load_n(&watch_word, __ATOMIC_ACQUIRE);
        int sig = __atomic_load_n(&crash_sig, __ATOMIC_ACQUIRE);
        if (sig) {
            for (int i = 0; i < 300 && !__atomic_load_n(&crash_done, __ATOMIC_ACQUIRE); i++) {
                struct timespec ts = {0, 10 * 1000000L};
                nanosleep(&ts, NULL);
            }
            if (!__atomic_load_n(&crash_done, __ATOMIC_ACQUIRE)) {
                /* The stop is stuck: the signal's default action, now. */
                struct sigaction sa;
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = SIG_DFL;
                sigaction(sig, &sa, NULL);
                syscall(SYS_tgkill, getpid(), __atomic_load_n(&crash_tid, __ATOMIC_ACQUIRE), sig);
            }
            return NULL;
        }
        if (watched_gone()) {
            pthread_mutex_lock(&lock);
            int on = state == ST_ON;
            stop_locked(1);
            pthread_mutex_unlock(&lock);
            if (on)
                say("strobe record is gone: recording stopped; this process's part stays",
                    part_path);
            return NULL;
        }
        struct timespec ts = {0, 200 * 1000000L};
        syscall(SYS_futex, &watch_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
}

/* Starts the watch thread of this process (once per process: a forked child starts its own). */
static void start_watch(void) {
    static pid_t started_in;
    if (started_in == getpid()) return;
    started_in = getpid();
    __atomic_store_n(&crash_sig, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&crash_done, 0, __ATOMIC_RELEASE);
    start_own_thread(watch_main,
                     "cannot start the watch thread: a crash or the end of strobe record may lose "
                     "events");
}

/* ---- fork --------------------------------------------------------------------------------- */

/* In a child forked without exec: a session of its own, into a part file of its own, timed from
 * now. Registered after the first strobe_start() when there is no delay, so that the core's own
 * child handler (which closes the gate of the inherited session) has run before this one starts
 * the next; with a delay this one only starts the timer. */
static void fork_child(void) {
    pthread_mutex_init(&lock, NULL);
    state = ST_WAIT;
    /* The forking thread is the child's only one. */
    __atomic_store_n(&prog_threads, 1, __ATOMIC_RELEASE);
    if (set.heap_stacks || set.heap_rate > 0) strobe__heap_sites_forked();
    /* CUDA does not carry over into a forked child (its driver state is the parent's, and the
     * core's CUDA backend counts as tracing there): the child records its CPU side. */
    set.activities &= ~(uint32_t)STROBE_ACTIVITY_CUDA;
    set.cuda_wanted = 0;
    /* Heap recording stays on: until the child's session starts, the core's closed gate keeps
     * its allocations out, while they are still counted for the totals. */
    begin();
    start_watch();
}

/* --no-follow: a forked child records nothing, not even the NVTX ranges that --capture-range
 * would start a session for (the capture's state is copied from the parent). */
static void fork_child_unfollowed(void) {
    pthread_mutex_init(&lock, NULL);
    state = ST_DONE;
    __atomic_store_n(&prog_threads, 1, __ATOMIC_RELEASE);
}

/* ---- NVTX and CUDA ------------------------------------------------------------------------ */

/* The entry points NVTX and CUDA's driver look up by name in the library their environment names
 * (src/inject_export.c exports the same from libstrobe.so): this library's own copy of strobe,
 * the one holding the session, receives the program's NVTX calls and traces CUDA from the
 * program's first cuInit, so that a process that never uses CUDA never loads it. */
EXPORT int InitializeInjectionNvtx2(void *get_export_table);
EXPORT int InitializeInjectionNvtx2(void *get_export_table) {
    if (!active) return 0; /* not recorded (--no-follow's children): NVTX turns into no-ops */
    return strobe__nvtx_inject(get_export_table) > 0;
}

/* NCCL's profiler plugin tables (nccl/nccl.h): `strobe record` names this library in
 * NCCL_PROFILER_PLUGIN, so that NCCL's events reach the session this copy of strobe holds. */
STROBE__NCCL_DEFINE_EXPORTS(EXPORT)

static void stop_at_exit(void);

/* dl_iterate_phdr callback: stops at a loaded libstrobe.so (the program's own copy of strobe;
 * this library's copy is built in, under other names). */
static int is_libstrobe(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libstrobe.so", 12) == 0) {
        snprintf((char *)found, 256, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

EXPORT int InitializeInjection(void);
EXPORT int InitializeInjection(void) {
    if (!active || !set.cuda_wanted) return 1;
    /* A program linked with libstrobe.so runs sessions of its own, whose CUDA needs CUPTI, which
     * takes one client per process: the program keeps it, as a program that loads CUPTI itself
     * does, and this copy records the rest (its NVTX ranges, threads, heap, samples). */
    char own[256] = "";
    if (dl_iterate_phdr(is_libstrobe, own)) {
        say("the program uses strobe itself: its own sessions keep CUDA (CUPTI takes one "
            "client); strobe record records the rest",
            own);
        return 1;
    }
    __atomic_store_n(&cuda_initialized, 1, __ATOMIC_RELEASE);
    int rc = 1;
    if (set.capture_cuda) {
        /* Sessions start and stop at the program's cuProfilerStart/Stop from now on. */
        char why[512];
        int quiet = strobe__heap_quiet(1);
        if (strobe__cuda_watch_profiler(capture_cuda, why, sizeof why) != 0)
            say("cannot watch cuProfilerStart/Stop; nothing is recorded", why);
        strobe__heap_quiet(quiet);
    } else {
        rc = strobe__cuda_inject();
    }
    /* The session must stop, and CUPTI hand over its records, while CUDA and CUPTI are still up:
     * an exit handler registered now, after CUPTI registered its own while it started, runs
     * before CUPTI's and the CUDA runtime's (atexit runs in reverse order; CUPTI's own handler
     * tears it down, after which cuptiActivityDisable crashes), and long before this library's
     * destructor. */
    atexit(stop_at_exit);
    return rc;
}

/* ---- The constructor and destructor -------------------------------------------------------- */

__attribute__((constructor)) static void strobe_record_start(void) {
    strobe__heap_resolve();
    __atomic_store_n(&real_exit, (exit_fn)dlsym(RTLD_NEXT, "_exit"), __ATOMIC_RELEASE);
    int quiet = strobe__heap_quiet(1);
    /* NCCL's events go to the record session only, never to one the plugin would start. */
    strobe__nccl_allow_own_session(0);
    active = read_settings();
    if (!active) {
        strobe__heap_set_tracing(0);
        strobe__heap_quiet(quiet);
        return;
    }
    if (!set.heap) strobe__heap_set_tracing(0);
    if (pthread_key_create(&prog_key, prog_thread_gone) == 0) {
        prog_key_ok = 1;
        pthread_setspecific(prog_key, (void *)1);
    }
    install_end_handlers();
    start_watch();
    /* NVTX ranges and CUDA reach the session started here through the entry points below, which
     * `strobe record` names this library for (NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH). */
    begin();
    int follow = getenv("STROBE_RECORD_DIR") != NULL; /* removed by read_settings: --no-follow */
    pthread_atfork(NULL, NULL, follow ? fork_child : fork_child_unfollowed);
    strobe__heap_quiet(quiet);
}

__attribute__((destructor)) static void strobe_record_stop(void) {
    if (!active) return;
    pthread_mutex_lock(&lock);
    stop_locked(1);
    pthread_mutex_unlock(&lock);
}

static void stop_at_exit(void) {
    strobe_record_stop();
}
