/* session.c: strobe_start() and strobe_stop() (stage 3 of DESIGN.md), metadata, fork handling.
 *
 * Start reserves the session's buffer arena (one mapping, handed out in chunks), takes the clock
 * anchor and opens the gate (strobe__gen, strobe__active). Stop closes the gate, waits for every
 * writer to leave the hot path (membarrier + the threads' busy flags, see hotpath.c), converts
 * records into a result (collect.c), and releases the arena.
 *
 * After fork() the child has no session: instrumentation records nothing there, strobe_stop()
 * returns STROBE_EFORK, and strobe_start() may begin a new session of the child's own. */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "chunks.h"
#include "details.h"
#include "dist.h"
#include "hooks.h"
#include "util/json_check.h"
#include "record.h"
#include "sample.h"
#include "strobe/op.h"
#include "trace/result_internal.h"
#include "device.h"
#include "state.h"
#include "stream.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/session.h"
#include "strobe/version.h"
#include "unwind.h"
#include "util/struct_in.h"

#define DEFAULT_BUFFER_BYTES ((size_t)512 << 20)
#define DEFAULT_CHUNK_BYTES ((size_t)64 << 10)
#define DEFAULT_PREFAULT_BYTES ((size_t)32 << 20)
#define QUIESCE_TIMEOUT_NS 2000000000LL

/* Serializes start, stop and metadata. Taken before the registry lock, never after. */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;
static int have_membarrier;
static uint32_t last_gen;
int64_t strobe__epoch_offset_ns;
const struct strobe__device_backend *strobe__ext_backend;

const char *strobe_version(void) {
    return STROBE_VERSION_STRING;
}

/* The defaults of every field, in the library's own layout. */
static void config_defaults(strobe_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->struct_size = sizeof *cfg;
    cfg->activities = STROBE_ACTIVITY_CPU;
    cfg->scopes = STROBE_SCOPES_ALL;
    cfg->thread_mode = STROBE_THREADS_ALL;
    cfg->buffer_bytes = DEFAULT_BUFFER_BYTES;
    cfg->chunk_bytes = DEFAULT_CHUNK_BYTES;
    cfg->prefault_bytes = DEFAULT_PREFAULT_BYTES;
    cfg->stack_depth = 16;
    cfg->cuda_buffer_bytes = (size_t)64 << 20;
}

void strobe__config_defaults(strobe_config *cfg, size_t size) {
    strobe_config d;
    config_defaults(&d);
    strobe__struct_defaults(cfg, size, &d, sizeof d);
}

int strobe__config_in(strobe_config *dst, const strobe_config *src) {
    config_defaults(dst);
    return strobe__struct_in(dst, sizeof *dst, src, STROBE_CONFIG_MIN_SIZE);
}

int strobe_is_running(void) {
    pthread_mutex_lock(&session_lock);
    int on = strobe__current != NULL && strobe__current->pid == getpid();
    pthread_mutex_unlock(&session_lock);
    return on;
}

/* ---- fork ------------------------------------------------------------------------------ */

static void fork_prepare(void) {
    pthread_mutex_lock(&session_lock);
    pthread_mutex_lock(&strobe__registry_lock);
}

static void fork_parent(void) {
    pthread_mutex_unlock(&strobe__registry_lock);
    pthread_mutex_unlock(&session_lock);
}

static void fork_child(void) {
    /* The child has one thread and a copy of the parent's session, which it must not record
     * into nor report as its own: close the gate; the copy is dropped at the next start. */
    __atomic_fetch_and(&strobe__active, STROBE__ACTIVE_MARKERS, __ATOMIC_SEQ_CST);
    __atomic_store_n(&strobe__gen, 0, __ATOMIC_SEQ_CST);
    if (strobe__current) strobe__current->recording = 0;
    strobe__registry_after_fork_child();
    pthread_mutex_unlock(&strobe__registry_lock);
    pthread_mutex_unlock(&session_lock);
}

static void process_init(void) {
    strobe__clock_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    have_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* ---- helpers --------------------------------------------------------------------------- */

static int add_warning(strobe__session *s, const char *msg) {
    strobe__log(STROBE_LOG_WARN, "%s", msg);
    return strobe__result_add_warning(s->result, msg);
}

static void make_trace_id(char out[33]) {
    unsigned char b[16];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        uint64_t x = strobe__mono_ns() ^ ((uint64_t)getpid() << 32);
        for (int i = 0; i < 16; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[i] = (unsigned char)x;
        }
    }
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void session_free(strobe__session *s, int unmap_arena) {
    if (s == NULL) return;
    free(s->steps);
    strobe__sampler_free(s->sampler);
    strobe__stream_free(s);
    if (unmap_arena) strobe__arena_unmap(s);
    strobe_result_free(s->result);
    free(s);
}

static int check_config(const strobe_config *cfg) {
    if (cfg->chunk_bytes < 4096 || cfg->chunk_bytes > ((size_t)16 << 20) || cfg->chunk_bytes % 8)
        return STROBE_EINVAL;
    if (cfg->buffer_bytes < cfg->chunk_bytes) return STROBE_EINVAL;
    if (cfg->thread_mode != STROBE_THREADS_ALL && cfg->thread_mode != STROBE_THREADS_OPT_IN)
        return STROBE_EINVAL;
    if (cfg->activities & ~(uint32_t)0x3f) return STROBE_EINVAL;
    if (!(cfg->activities & STROBE_ACTIVITY_CPU)) return STROBE_ENOTSUP;
    if (cfg->with_stack && (cfg->stack_depth < 1 || cfg->stack_depth > (int)STROBE__MAX_STACK)) {
        strobe__log(STROBE_LOG_ERROR, "stack_depth %d is out of range (1 .. %u)", cfg->stack_depth,
                    STROBE__MAX_STACK);
        return STROBE_EINVAL;
    }
    if (cfg->cpu_sample_hz > STROBE_CPU_SAMPLE_HZ_MAX) {
        strobe__log(STROBE_LOG_ERROR, "cpu_sample_hz %u is out of range (0 .. %u)",
                    cfg->cpu_sample_hz, STROBE_CPU_SAMPLE_HZ_MAX);
        return STROBE_EINVAL;
    }
    if (cfg->cpu_sample_call_graph > STROBE_CALL_GRAPH_DWARF ||
        cfg->cpu_sample_stack_bytes > STROBE_CPU_SAMPLE_STACK_MAX) {
        strobe__log(STROBE_LOG_ERROR,
                    "cpu_sample_call_graph %u or cpu_sample_stack_bytes %u is out of range "
                    "(0 .. %u, 0 .. %u)",
                    cfg->cpu_sample_call_graph, cfg->cpu_sample_stack_bytes,
                    STROBE_CALL_GRAPH_DWARF, STROBE_CPU_SAMPLE_STACK_MAX);
        return STROBE_EINVAL;
    }
    return strobe__stream_check_config(cfg);
}

/* The stack copy per sample for config.cpu_sample_call_graph: 0 for frame pointers. The default
 * asks for DWARF, which falls back to frame pointers quietly where it is not built in; only an
 * explicit STROBE_CALL_GRAPH_DWARF warns (sampling_note). */
static uint32_t sample_stack_bytes(const strobe_config *cfg) {
    if (cfg->cpu_sample_call_graph == STROBE_CALL_GRAPH_FP) return 0;
    char why[200];
    if (cfg->cpu_sample_call_graph == STROBE_CALL_GRAPH_DEFAULT &&
        !strobe__unwind_available(why, sizeof why))
        return 0;
    return cfg->cpu_sample_stack_bytes ? cfg->cpu_sample_stack_bytes
                                       : STROBE_CPU_SAMPLE_STACK_DEFAULT;
}

int strobe_cpu_sample_dwarf_available(char *why, size_t why_size) {
    char local[200];
    if (why == NULL || why_size == 0) {
        why = local;
        why_size = sizeof local;
    }
    return strobe__unwind_available(why, why_size);
}

/* A warning where DWARF unwinding was asked for and frame pointers were used instead. */
static int sampling_note(strobe__session *s) {
    const char *note = strobe__sampler_note(s->sampler);
    if (note[0] == '\0') return 0;
    char msg[300];
    snprintf(msg, sizeof msg, "CPU samples use frame pointers, not DWARF: %s", note);
    return add_warning(s, msg);
}

/* Opens the CPU sampler (config.cpu_sample_hz). A process that may not sample goes on without,
 * with a warning. @return 0, or STROBE_ENOMEM / STROBE_ESYS. */
static int setup_sampling(strobe__session *s) {
    if (s->cfg.cpu_sample_hz == 0) return 0;
    char why[200] = "";
    unsigned flags = s->cfg.no_python_frames ? 0 : STROBE__SAMPLE_PYTHON;
    int rc = strobe__sampler_start_ex(&s->sampler, s->cfg.cpu_sample_hz, 0, 0, flags,
                                      sample_stack_bytes(&s->cfg), why, sizeof why);
    if (rc < 0) return rc;
    if (rc == 0) return sampling_note(s);
    char msg[300];
    snprintf(msg, sizeof msg, "CPU sampling requested but not done: %s", why);
    return add_warning(s, msg);
}

/* Puts the sampler's counts in the trace ("strobe_cpu_sampling"), and a warning where samples
 * were lost. */
static int finish_sampling(strobe__session *s, strobe_result *r) {
    if (s->sampler == NULL) return 0;
    char json[2048];
    strobe__sampler_json(s->sampler, json, sizeof json);
    int rc = strobe__result_set_meta(r, "strobe_cpu_sampling", json);
    uint64_t lost = strobe__sampler_lost(s->sampler);
    if (rc == 0 && lost) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "%llu CPU samples were lost (the kernel's ring buffers were full, or the memory "
                 "cap was reached)",
                 (unsigned long long)lost);
        rc = strobe__result_add_warning(r, msg);
    }
    uint64_t unsampled = strobe__sampler_unsampled(s->sampler);
    if (rc == 0 && unsampled) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "%llu threads were not sampled: out of file descriptors for their perf events",
                 (unsigned long long)unsampled);
        rc = strobe__result_add_warning(r, msg);
    }
    return rc;
}

/* Keeps the config's perf events that this machine can count, with a warning for each one it
 * cannot, and records their names in the trace ("strobe_perf_events", which `strobe summary`
 * reads to find the per-range args). @return 0, STROBE_EINVAL (an unknown name) or ENOMEM. */
static int setup_perf(strobe__session *s) {
    strobe__perf_set want;
    char err[256];
    if (strobe__perf_parse(s->cfg.perf_events, &want, err, sizeof err) != 0) {
        strobe__log(STROBE_LOG_ERROR, "perf_events: %s", err);
        return STROBE_EINVAL;
    }
    s->perf.n = 0;
    char names[STROBE__PERF_MAX * 40 + 8] = "[";
    for (int i = 0; i < want.n; i++) {
        int rc = strobe__perf_probe(&want.ev[i]);
        if (rc != 0) {
            int e = errno;
            char msg[256];
            snprintf(msg, sizeof msg,
                     "perf event \"%s\" is not counted: this machine cannot open it (%s%s)",
                     want.ev[i].name, strerror(e),
                     e == EACCES || e == EPERM ? "; see /proc/sys/kernel/perf_event_paranoid" : "");
            rc = add_warning(s, msg);
            if (rc) return rc;
            continue;
        }
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s\"%s\"", s->perf.n ? ", " : "",
                 want.ev[i].name);
        s->perf.ev[s->perf.n++] = want.ev[i];
    }
    if (s->perf.n == 0) return 0;
    strcat(names, "]");
    return strobe__result_set_meta(s->result, "strobe_perf_events", names);
}

/* ---- device backends ------------------------------------------------------------------- */

static int stop_backends(strobe__session *s, strobe_result *r);

static const strobe__device_backend *find_backend(uint32_t activity) {
    for (size_t i = 0; strobe__device_backends[i] != NULL; i++)
        if (strobe__device_backends[i]->activity == activity) return strobe__device_backends[i];
    return NULL;
}

/* Starts the backends of the config's device activities. A device that cannot be traced leaves
 * a warning; a backend that must fail the start fails it (those started are stopped again).
 * @return 0, a negative STROBE_E* code, or ENOMEM. */
static int start_backends(strobe__session *s) {
    for (size_t i = 0; strobe__device_backends[i] != NULL; i++) {
        const strobe__device_backend *b = strobe__device_backends[i];
        if (!(s->cfg.activities & b->activity)) continue;
        char why[256] = "";
        int rc = b->start(&s->cfg, why, sizeof why);
        if (rc == 0) {
            s->dev[s->dev_count++] = b;
            if (b->push_external) __atomic_store_n(&strobe__ext_backend, b, __ATOMIC_RELEASE);
            continue;
        }
        if (rc > 0) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "%s activity requested but not traced: %s; only CPU activity "
                     "is recorded",
                     b->name, why[0] ? why : "the backend could not start");
            /* add_warning() logs it too: one line per condition. */
            rc = add_warning(s, msg);
            if (rc == 0) continue;
        } else {
            strobe__log(STROBE_LOG_ERROR, "%s: %s", b->name, why[0] ? why : strobe_strerror(rc));
        }
        stop_backends(s, NULL);
        return rc;
    }
    return 0;
}

int strobe__session_add_device(uint32_t activity) {
    const strobe__device_backend *b = find_backend(activity);
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    int rc = 0;
    if (s == NULL || s->pid != getpid() || b == NULL) goto out;
    for (int i = 0; i < s->dev_count; i++)
        if (s->dev[i] == b) goto out;
    if (s->dev_count == (int)(sizeof s->dev / sizeof s->dev[0])) goto out;
    char why[256] = "";
    rc = b->start(&s->cfg, why, sizeof why);
    if (rc == 0) {
        s->dev[s->dev_count++] = b;
        s->cfg.activities |= activity;
        if (b->push_external) __atomic_store_n(&strobe__ext_backend, b, __ATOMIC_RELEASE);
        strobe__log(STROBE_LOG_INFO, "%s: traced from its initialization on", b->name);
        goto out;
    }
    /* Started late, the device cannot fail the session: whatever kept it from being traced
     * (another profiler owning CUPTI included) is a warning, and the CPU goes on. */
    char msg[400];
    snprintf(msg, sizeof msg, "%s activity not traced: %s; only CPU activity is recorded", b->name,
             why[0] ? why : strobe_strerror(rc));
    rc = add_warning(s, msg);
    if (rc == 0) rc = 1;
out:
    pthread_mutex_unlock(&session_lock);
    return rc;
}

static int result_warning(void *ctx, const char *line) {
    return strobe__result_add_warning((strobe_result *)ctx, line);
}

/* Stops the session's backends. With a result, what they recorded is merged into it. */
static int stop_backends(strobe__session *s, strobe_result *r) {
    __atomic_store_n(&strobe__ext_backend, NULL, __ATOMIC_RELEASE);
    int rc = 0;
    for (int i = 0; i < s->dev_count; i++) {
        const strobe__device_backend *b = s->dev[i];
        strobe__gpu_batch batch;
        memset(&batch, 0, sizeof batch);
        int64_t lo = r ? r->trace_start_ns : 0, hi = r ? r->trace_end_ns : 0;
        int brc = b->stop(lo, hi, &batch, r ? result_warning : NULL, r);
        if (brc == 0 && r != NULL && rc == 0) rc = strobe__gpu_merge(r, &batch);
        if (brc != 0 && rc == 0) rc = brc;
        b->release();
    }
    s->dev_count = 0;
    return rc;
}

/* ---- start ----------------------------------------------------------------------------- */

/* Opens the recording window of a made session: threads attach from now on. Under the session
 * lock. */
static void open_window(strobe__session *s) {
    int was_busy = strobe__registry_lock_cold();
    s->recording = 1;
    strobe__registry_unlock_cold(was_busy);
    s->window_open = 1;
    s->start = strobe__clock_anchor_now();
    __atomic_store_n(&strobe__epoch_offset_ns, s->start.real_ns - s->start.mono_ns,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&strobe__gen, s->gen, __ATOMIC_SEQ_CST);
    __atomic_fetch_or(&strobe__active, STROBE__ACTIVE_RECORDING | s->features, __ATOMIC_SEQ_CST);
    strobe__sampler_enable(s->sampler);
}

static int stop_session(strobe_result **out, uint32_t only_gen);

/* Makes a session; with `record`, it records at once, else it waits for strobe_start_prepared()
 * (threads do not attach to it until then). */
static int begin_session(const strobe_config *user_cfg, int record) {
    /* From here on the library's own full-size copy: never the caller's struct past its size. */
    strobe_config full;
    int rc = strobe__config_in(&full, user_cfg);
    if (rc) return rc;
    const strobe_config *cfg = &full;
    rc = check_config(cfg);
    if (rc) return rc;
    pthread_once(&process_once, process_init);
    strobe__tstate *me = strobe__tstate_get();
    if (me == NULL) return STROBE_ENOMEM;

    pthread_mutex_lock(&session_lock);
    if (strobe__current != NULL) {
        if (strobe__current->pid == getpid()) {
            pthread_mutex_unlock(&session_lock);
            return STROBE_EBUSY;
        }
        /* A session inherited through fork(): drop the child's copy. */
        int was_busy = strobe__registry_lock_cold();
        strobe__session *old = strobe__current;
        strobe__current = NULL;
        strobe__registry_sweep();
        strobe__registry_unlock_cold(was_busy);
        session_free(old, 1);
    }

    strobe__session *s = calloc(1, sizeof *s);
    if (s == NULL) {
        pthread_mutex_unlock(&session_lock);
        return STROBE_ENOMEM;
    }
    s->pid = getpid();
    s->cfg = *cfg;
    s->chunk_bytes = cfg->chunk_bytes;
    s->arena_bytes = (cfg->buffer_bytes / cfg->chunk_bytes) * cfg->chunk_bytes;
    char id[33];
    make_trace_id(id);
    strobe_result *r = s->result = strobe__result_alloc();
    rc = r ? 0 : STROBE_ENOMEM;
    if (rc == 0) {
        r->trace_id = strobe__pool_strdup(&r->pool, cfg->trace_id ? cfg->trace_id : id);
        r->trace_name = cfg->trace_name ? strobe__pool_strdup(&r->pool, cfg->trace_name) : NULL;
        if (r->trace_id == NULL || (cfg->trace_name && r->trace_name == NULL)) rc = STROBE_ENOMEM;
    }
    /* The rank in a parallel job (strobe/dist.h): distributedInfo and strobe_job. */
    if (rc == 0) rc = strobe__dist_meta(r);

    /* Devices without a backend in this build are not traced: the CPU is, with a warning. */
    static const struct {
        uint32_t bit;
        const char *name;
    } devices[] = {{STROBE_ACTIVITY_CUDA, "CUDA"},
                   {STROBE_ACTIVITY_XPU, "XPU"},
                   {STROBE_ACTIVITY_HPU, "HPU"},
                   {STROBE_ACTIVITY_MTIA, "MTIA"},
                   {STROBE_ACTIVITY_PRIVATEUSE1, "PrivateUse1"}};
    for (size_t i = 0; rc == 0 && i < sizeof devices / sizeof devices[0]; i++) {
        if ((cfg->activities & devices[i].bit) && find_backend(devices[i].bit) == NULL) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%s activity requested but not traced: this build of strobe has no %s "
                     "backend; only CPU activity is recorded",
                     devices[i].name, devices[i].name);
            rc = add_warning(s, msg);
        }
    }

    if (rc == 0) rc = setup_perf(s);
    if (rc == 0) rc = setup_sampling(s);
    if (rc == 0) {
        s->features = ((cfg->record_shapes || cfg->with_flops) ? STROBE__ACTIVE_SHAPES : 0) |
                      (cfg->with_flops ? STROBE__ACTIVE_FLOPS : 0) |
                      (cfg->with_modules ? STROBE__ACTIVE_MODULES : 0) |
                      (cfg->profile_memory ? STROBE__ACTIVE_MEMORY : 0);
        rc = strobe__arena_map(s, cfg->prefault_bytes);
    }
    if (rc) {
        session_free(s, 1);
        pthread_mutex_unlock(&session_lock);
        return rc;
    }

    rc = start_backends(s);
    if (rc) {
        session_free(s, 1);
        pthread_mutex_unlock(&session_lock);
        return rc;
    }
    /* The stream's header carries the session's start, which opening the window sets: a
     * prepared session starts streaming when it opens (open_window). */
    if (record) {
        s->start = strobe__clock_anchor_now();
        rc = strobe__stream_start(s);
    }
    if (rc) {
        (void)stop_backends(s, NULL);
        session_free(s, 1);
        pthread_mutex_unlock(&session_lock);
        return rc;
    }

    if (++last_gen >= STROBE__TOKEN_MARKED || last_gen == 0) last_gen = 1;
    s->gen = last_gen;
    int was_busy = strobe__registry_lock_cold();
    strobe__registry_sweep();
    strobe__current = s;
    s->starter = me;
    strobe__registry_unlock_cold(was_busy);
    if (record) {
        open_window(s);
        rc = strobe__stream_run(s);
    }
    /* Logged under the lock: once it is released, another thread may stop the session and free
     * it (and its result). */
    if (rc == 0)
        strobe__log(STROBE_LOG_INFO, "session %s %s (clock %s, buffer cap %zu bytes)", r->trace_id,
                    record ? "started" : "prepared",
                    strobe__clock_is_tsc ? "tsc" : "clock_monotonic", s->arena_bytes);
    uint32_t gen = s->gen;
    pthread_mutex_unlock(&session_lock);
    if (rc) {
        /* This session only: another thread may have stopped it, and started one of its own,
         * since the lock was released. */
        strobe_result *dummy = NULL;
        (void)stop_session(&dummy, gen);
        strobe_result_free(dummy);
        return rc;
    }
    return 0;
}

int strobe_start(const strobe_config *cfg) {
    return begin_session(cfg, 1);
}

int strobe_prepare(const strobe_config *cfg) {
    return begin_session(cfg, 0);
}

int strobe_start_prepared(void) {
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    int rc = 0;
    if (s == NULL || s->pid != getpid())
        rc = STROBE_ENOSESSION;
    else if (s->window_open)
        rc = STROBE_EBUSY;
    if (rc == 0) {
        s->start = strobe__clock_anchor_now();
        rc = strobe__stream_start(s);
    }
    int run_failed = 0;
    uint32_t gen = 0;
    if (rc == 0) {
        open_window(s);
        rc = strobe__stream_run(s);
        run_failed = rc != 0;
        gen = s->gen;
    }
    pthread_mutex_unlock(&session_lock);
    if (run_failed) {
        /* The window opened but the background thread did not start: nothing would drain the
         * chunks, so the session ends here (this session only: another thread may have
         * stopped it, and started one of its own, since the lock was released). */
        strobe_result *dummy = NULL;
        (void)stop_session(&dummy, gen);
        strobe_result_free(dummy);
    }
    return rc;
}

/* ---- stop ------------------------------------------------------------------------------ */

/* Waits until no thread of the session is inside the hot path. @return 1 when every thread left
 * it, 0 when one stayed busy past the timeout (its records up to now are still collected). */
static int quiesce(strobe__session *s) {
    if (have_membarrier) {
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    } else {
        /* Without membarrier, a writer that read the old generation just before the gate closed
         * is given a grace period to finish: it runs a few dozen instructions. */
        static int fence_word;
        __atomic_exchange_n(&fence_word, 1, __ATOMIC_SEQ_CST); /* a full barrier */
        struct timespec grace = {0, 20000000};
        nanosleep(&grace, NULL);
    }
    int all = 1;
    int64_t deadline = (int64_t)strobe__mono_ns() + QUIESCE_TIMEOUT_NS;
    for (strobe__tstate *t = s->threads; t; t = t->sess_next) {
        if (t == strobe__tls) continue; /* the caller is not in the hot path */
        /* 2: the thread is in a cold-path call, writing no record (strobe__registry_lock_cold). */
        while (__atomic_load_n(&t->busy, __ATOMIC_ACQUIRE) == 1) {
            if ((int64_t)strobe__mono_ns() > deadline) {
                all = 0;
                break;
            }
            sched_yield();
        }
    }
    return all;
}

/* strobe_stop() of the session of generation `only_gen`, or of any session when it is 0: a session
 * of another generation is left running (STROBE_ENOSESSION). */
static int stop_session(strobe_result **out, uint32_t only_gen) {
    if (out == NULL) return STROBE_EINVAL;
    *out = NULL;
    /* The calling thread gets its state now, not from a signal handler's first record (which
     * would allocate there); the registry lock below marks it busy (strobe__registry_lock_cold). */
    (void)strobe__tstate_get();
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    if (s == NULL) {
        pthread_mutex_unlock(&session_lock);
        return STROBE_ENOSESSION;
    }
    if (s->pid != getpid()) {
        pthread_mutex_unlock(&session_lock);
        return STROBE_EFORK;
    }
    if (only_gen != 0 && s->gen != only_gen) {
        pthread_mutex_unlock(&session_lock);
        return STROBE_ENOSESSION;
    }

    /* A prepared session that never recorded gives an empty result over an empty window. */
    if (!s->window_open) s->start = strobe__clock_anchor_now();
    int was_busy = strobe__registry_lock_cold();
    s->recording = 0;
    __atomic_fetch_and(&strobe__active, STROBE__ACTIVE_MARKERS, __ATOMIC_SEQ_CST);
    __atomic_store_n(&strobe__gen, 0, __ATOMIC_SEQ_CST);
    strobe__registry_unlock_cold(was_busy);
    int quiet = quiesce(s);
    strobe__sampler_stop(s->sampler);
    /* No thread reads its counters after quiescence: close them, and say where they failed.
     * Under the registry lock, which a thread holds when it next attaches and resets these; its
     * slow bits are its own to write (a stale SLOW_PERF is harmless: no session, no records). */
    int perf_failed = 0;
    char perf_why[128] = "";
    was_busy = strobe__registry_lock_cold();
    for (strobe__tstate *t = s->threads; t; t = t->sess_next) {
        if (t->perf_failed && !perf_failed++)
            snprintf(perf_why, sizeof perf_why, "%s", strerror(t->perf_failed));
        strobe__perf_close(t->perf_fds, t->perf_n);
        t->perf_n = 0;
    }
    strobe__registry_unlock_cold(was_busy);

    strobe__clock_anchor stop = strobe__clock_anchor_now();
    strobe__clock_conv conv = strobe__clock_calibrate(s->start, stop);
    int64_t stop_ns = strobe__clock_to_ns(&conv, stop.raw);
    /* Streaming writes the last records and completes its file; the flight recorder hands its
     * window to collect. Either way the background thread has ended when this returns. */
    int src = strobe__stream_finish(s, &conv, stop_ns);

    /* The result already holds the trace id, metadata and warnings; the events go in now. */
    strobe_result *r = s->result;
    s->result = NULL;
    r->trace_start_ns = s->start.real_ns;
    r->trace_end_ns = stop_ns;
    r->clock_source = strobe__clock_is_tsc ? "tsc" : "clock_monotonic";
    r->clock_ns_per_tick = conv.ns_per_tick;
    s->arena_releasable = quiet && s->stream == NULL;
    int rc = strobe__collect(s, &conv, stop_ns, r);
    /* The gate is closed: handlers count no more drops for this session. */
    r->stats.signal_dropped +=
        __atomic_exchange_n(&strobe__cold_signal_dropped, 0, __ATOMIC_RELAXED);
    if (rc == 0) rc = finish_sampling(s, r);
    strobe__stream_add_stats(s, r);
    if (rc == 0 && src != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "streaming failed (%s): the stream file is incomplete",
                 strobe_strerror(src));
        rc = strobe__result_add_warning(r, msg);
    }
    /* Device work after the CPU events: linking needs the ranges that launched it. */
    int drc = stop_backends(s, rc == 0 ? r : NULL);
    if (rc == 0) rc = drc;
    /* Warnings before the stream's closing text, which carries them. */
    if (rc == 0 && perf_failed) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "perf counters could not be opened on %d thread(s) (%s): their ranges have no "
                 "counter args",
                 perf_failed, perf_why);
        rc = strobe__result_add_warning(r, msg);
    }
    if (rc == 0 && !quiet)
        rc = strobe__result_add_warning(
            r, "a thread stayed inside a strobe call for 2 s at stop: its last record may be "
               "missing, and the buffer was not released");
    /* A stream gets the device work too, then its closing text. */
    int crc = strobe__stream_complete(s, rc == 0 ? r : NULL);
    if (rc == 0 && crc != 0) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "streaming failed at stop (%s): the stream file lacks the device activity or its "
                 "closing text",
                 strobe_strerror(crc));
        rc = strobe__result_add_warning(r, msg);
    }

    strobe_postprocess_fn post = s->cfg.postprocess;
    void *post_ctx = s->cfg.postprocess_ctx;
    was_busy = strobe__registry_lock_cold();
    strobe__current = NULL;
    strobe__registry_sweep();
    strobe__registry_unlock_cold(was_busy);
    /* A thread that never left the hot path may still write into the arena: keep it mapped. */
    session_free(s, quiet);
    pthread_mutex_unlock(&session_lock);

    if (rc != 0) {
        strobe_result_free(r);
        return rc;
    }
    /* The callback runs without locks held, so it may call any strobe function. */
    if (post) post(r, post_ctx);
    *out = r;
    return 0;
}

int strobe_stop(strobe_result **out) {
    return stop_session(out, 0);
}

void strobe__markers_gate(int on) {
    if (on) {
        __atomic_fetch_or(&strobe__active, STROBE__ACTIVE_MARKERS, __ATOMIC_SEQ_CST);
    } else {
        __atomic_fetch_and(&strobe__active, ~STROBE__ACTIVE_MARKERS, __ATOMIC_SEQ_CST);
    }
}

/* ---- steps ----------------------------------------------------------------------------- */

/* A step boundary now: the open step ends, and step `number` begins unless `begin` is 0. */
static void session_step_mark(uint64_t number, int begin) {
    /* The common case, no session: one relaxed load. */
    if (!strobe_is_active()) return;
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    /* strobe__active is cleared under this lock when a session stops recording. */
    if (s != NULL && s->pid == getpid() && s->window_open &&
        (__atomic_load_n(&strobe__active, __ATOMIC_RELAXED) & STROBE__ACTIVE_RECORDING)) {
        uint64_t now = strobe__now_raw();
        if (s->step_open) {
            if (strobe__grow((void **)&s->steps, &s->step_cap, s->step_count + 1,
                             sizeof *s->steps) == 0)
                s->steps[s->step_count++] = (struct strobe__step_range){
                    s->step_open_number, s->step_open_raw, now, s->step_open_tid};
            else
                s->steps_lost++;
            s->step_open = 0;
        }
        if (begin) {
            s->step_open = 1;
            s->step_open_number = number;
            s->step_open_raw = now;
            /* The collector puts the range on this thread's track where it nests there. The
             * thread may not have recorded in this session yet (a step that starts an on-demand
             * trace): its id comes from the kernel, not from its recording state. */
            s->step_open_tid = (int64_t)syscall(SYS_gettid);
        }
    }
    pthread_mutex_unlock(&session_lock);
}

void strobe__session_step(uint64_t number) {
    session_step_mark(number, 1);
}

void strobe__session_step_end(void) {
    session_step_mark(0, 0);
}

/* ---- flight recorder ------------------------------------------------------------------- */

/* Under the session lock, so that the session (and its ring) outlive the dump. */
int strobe_flight_dump(const char *path) {
    if (path == NULL || path[0] == '\0') return STROBE_EINVAL;
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    int rc = s == NULL || s->pid != getpid() || !s->window_open ? STROBE_ENOSESSION
                                                                : strobe__flight_dump(s, path);
    pthread_mutex_unlock(&session_lock);
    return rc;
}

/* ---- metadata -------------------------------------------------------------------------- */

int strobe_add_metadata_json(const char *key, const char *json_value) {
    if (key == NULL || key[0] == '\0' || json_value == NULL) return STROBE_EINVAL;
    if (strobe__meta_key_reserved(key)) return STROBE_EINVAL;
    if (!strobe__json_valid(json_value, strlen(json_value))) return STROBE_EJSON;
    pthread_mutex_lock(&session_lock);
    strobe__session *s = strobe__current;
    int rc = 0;
    if (s == NULL || s->pid != getpid()) {
        rc = STROBE_ENOSESSION;
    } else {
        rc = strobe__result_set_meta(s->result, key, json_value);
    }
    pthread_mutex_unlock(&session_lock);
    return rc;
}
