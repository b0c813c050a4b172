/* schedule.c: schedules and the trace-file handler (strobe/schedule.h), a driver beside the core:
 * it drives sessions through the public API and hooks into the core's strobe_step() through
 * core/hooks.h (the step counter itself is the core's: core/step.c). */
#include "strobe/schedule.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strobe/backend.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "core/hooks.h"
#include "util/log.h"
#include "strobe/result.h"
#include "util/err.h"
#include "util/struct_in.h"

/* ---- actions ------------------------------------------------------------------------------- */

/* Takes in a caller's schedule (util/struct_in.h): fields it lacks are 0. */
static int schedule_in(strobe_schedule *dst, const strobe_schedule *src) {
    memset(dst, 0, sizeof *dst);
    return strobe__struct_in(dst, sizeof *dst, src, STROBE_SCHEDULE_MIN_SIZE);
}

/* The action of `step` under a schedule in the library's own layout. */
static strobe_step_action action_of(const strobe_schedule *s, uint64_t step) {
    if (s->active == 0 || step < s->skip_first) return STROBE_STEP_NONE;
    uint64_t k = step - s->skip_first;
    uint64_t cycle = (uint64_t)s->wait + s->warmup + s->active;
    if (s->repeat > 0 && k / cycle >= s->repeat) return STROBE_STEP_NONE;
    uint64_t m = k % cycle;
    if (m < s->wait) return STROBE_STEP_NONE;
    if (m < (uint64_t)s->wait + s->warmup) return STROBE_STEP_WARMUP;
    return m == cycle - 1 ? STROBE_STEP_RECORD_AND_SAVE : STROBE_STEP_RECORD;
}

strobe_step_action strobe_schedule_action(const strobe_schedule *s, uint64_t step) {
    strobe_schedule full;
    if (schedule_in(&full, s) != 0) return STROBE_STEP_NONE;
    return action_of(&full, step);
}

/* ---- the scheduled profiler ----------------------------------------------------------------- */

/* One installed schedule. Its strings are copies (cfg points into them). */
typedef struct sched_state {
    strobe_config cfg;
    char *strings[6];
    strobe_schedule sched;
    strobe_trace_ready_fn on_ready;
    void *ctx;
    uint64_t first_step;    /* strobe_step_count() when installed: the schedule's step 0 */
    strobe_step_action cur; /* action of the current step */
    int session;            /* 0 none, 1 prepared, 2 recording */
    uint64_t ready, failures;
    int last_error; /* the last failure's code */
} sched_state;

static pthread_mutex_t sched_lock = PTHREAD_MUTEX_INITIALIZER;
static sched_state *sched;      /* under sched_lock */
static uint64_t ready_total;    /* under sched_lock: kept after the schedule ends */
static uint64_t failures_total; /* under sched_lock */

static char *dup_or_null(const char *s, int *oom) {
    if (s == NULL) return NULL;
    char *d = strdup(s);
    if (d == NULL) *oom = 1;
    return d;
}

static void free_state(sched_state *st) {
    if (st == NULL) return;
    for (size_t i = 0; i < sizeof st->strings / sizeof st->strings[0]; i++)
        free(st->strings[i]);
    free(st);
}

/* A result ready to hand over, taken out of the lock. */
typedef struct pending {
    strobe_result *result;
    strobe_trace_ready_fn fn;
    void *ctx;
} pending;

static void fail(sched_state *st, const char *what, int rc) {
    st->failures++;
    st->last_error = rc;
    failures_total++;
    strobe__log(STROBE_LOG_ERROR, "schedule: %s failed: %s", what, strobe_strerror(rc));
}

static void stop_cycle(sched_state *st, int hand_over, pending *out) {
    if (st->session == 0) return;
    /* strobe_stop() ends the open ProfilerStep range. */
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    st->session = 0;
    if (rc != 0) {
        fail(st, "strobe_stop", rc);
        return;
    }
    if (!hand_over) {
        strobe_result_free(r);
        return;
    }
    st->ready++;
    ready_total++;
    out->result = r;
    out->fn = st->on_ready;
    out->ctx = st->ctx;
}

/* Moves the session from the previous step's action to `next` (torch.profiler's transitions). */
static void transition(sched_state *st, strobe_step_action next, uint64_t step, pending *out) {
    strobe_step_action prev = st->cur;
    int was_recording = prev == STROBE_STEP_RECORD || prev == STROBE_STEP_RECORD_AND_SAVE;
    int recording = next == STROBE_STEP_RECORD || next == STROBE_STEP_RECORD_AND_SAVE;
    /* A cycle ends after its last active step, or when the schedule moves off recording
     * (a recording step followed by none or a warm-up: the cycle was cut short). */
    if (prev == STROBE_STEP_RECORD_AND_SAVE || (was_recording && !recording)) {
        if (prev != STROBE_STEP_RECORD_AND_SAVE)
            strobe__log(STROBE_LOG_WARN, "schedule: a recording cycle ended early at step %llu",
                        (unsigned long long)step);
        stop_cycle(st, 1, out);
    }
    if (prev == STROBE_STEP_WARMUP && next == STROBE_STEP_NONE) stop_cycle(st, 0, out);
    if ((next == STROBE_STEP_WARMUP || recording) && st->session == 0) {
        int rc = strobe_prepare(&st->cfg);
        if (rc == 0)
            st->session = 1;
        else
            fail(st, "strobe_prepare", rc);
    }
    if (recording && st->session == 1) {
        int rc = strobe_start_prepared();
        if (rc == 0)
            st->session = 2;
        else
            fail(st, "strobe_start_prepared", rc);
    }
    /* The ProfilerStep range of a recording step is opened by the caller once this returns
     * (strobe__session_step: strobe_step() for its step, strobe_schedule_begin() for step 0). */
    st->cur = next;
}

static void hand_over(pending *p) {
    if (p->result == NULL) return;
    p->fn(p->result, p->ctx);
    strobe_result_free(p->result);
    p->result = NULL;
}

/* strobe__schedule_step_hook while a schedule is installed: strobe_step() calls it, for step n,
 * in place of strobe__session_step(n). */
static void on_step(uint64_t n) {
    pending p = {NULL, NULL, NULL};
    uint64_t number = n;
    pthread_mutex_lock(&sched_lock);
    sched_state *st = sched;
    if (st != NULL && n >= st->first_step) {
        uint64_t k = n - st->first_step;
        transition(st, action_of(&st->sched, k), k, &p);
        number = k; /* a schedule numbers its steps from its own step 0 */
    }
    pthread_mutex_unlock(&sched_lock);
    /* After the transitions, which may have stopped a session (ending its open ProfilerStep
     * range) or started one: the step's range goes into whatever session records now. */
    strobe__session_step(number);
    /* Outside the lock: the callback may save, call strobe_step() or end the schedule. */
    hand_over(&p);
}

int strobe_schedule_begin(const strobe_config *cfg, const strobe_schedule *s,
                          strobe_trace_ready_fn on_ready, void *ctx) {
    STROBE_RETURN_IF(on_ready == NULL, STROBE_EINVAL);
    sched_state *st = calloc(1, sizeof *st);
    STROBE_RETURN_IF(st == NULL, STROBE_ENOMEM);
    /* Both are taken in as far as the caller has them (README, "ABI and versions"). */
    int rc;
    STROBE_TRY_GOTO(schedule_in(&st->sched, s), fail);
    STROBE_FAIL_IF(st->sched.active == 0, STROBE_EINVAL, fail);
    if (cfg)
        STROBE_TRY_GOTO(strobe__config_in(&st->cfg, cfg), fail);
    else
        strobe_config_init(&st->cfg);
    int oom = 0;
    st->cfg.trace_id = st->strings[0] = dup_or_null(st->cfg.trace_id, &oom);
    st->cfg.trace_name = st->strings[1] = dup_or_null(st->cfg.trace_name, &oom);
    st->cfg.perf_events = st->strings[2] = dup_or_null(st->cfg.perf_events, &oom);
    st->cfg.cuda_metrics = st->strings[3] = dup_or_null(st->cfg.cuda_metrics, &oom);
    st->cfg.stream_path = st->strings[4] = dup_or_null(st->cfg.stream_path, &oom);
    st->cfg.flight_path = st->strings[5] = dup_or_null(st->cfg.flight_path, &oom);
    /* Each cycle's trace gets an id of its own. */
    st->cfg.trace_id = NULL;
    STROBE_FAIL_IF(oom, STROBE_ENOMEM, fail);
    st->on_ready = on_ready;
    st->ctx = ctx;
    st->cur = STROBE_STEP_NONE;

    pthread_mutex_lock(&sched_lock);
    if (sched != NULL || strobe_is_running()) {
        pthread_mutex_unlock(&sched_lock);
        rc = STROBE_EBUSY;
        goto fail;
    }
    st->first_step = strobe_step_count();
    pending p = {NULL, NULL, NULL};
    transition(st, action_of(&st->sched, 0), 0, &p);
    if (st->failures) {
        /* Step 0 had to start and could not: nothing is installed. */
        rc = st->last_error;
        if (st->session) {
            strobe_result *r = NULL;
            if (strobe_stop(&r) == 0) strobe_result_free(r);
        }
        free_state(st);
    } else {
        sched = st;
        __atomic_store_n(&strobe__schedule_step_hook, on_step, __ATOMIC_RELEASE);
        if (st->session == 2) strobe__session_step(0);
    }
    pthread_mutex_unlock(&sched_lock);
    return rc;
fail:
    free_state(st);
    return rc;
}

int strobe_schedule_end(void) {
    pending p = {NULL, NULL, NULL};
    pthread_mutex_lock(&sched_lock);
    sched_state *st = sched;
    if (st == NULL) {
        pthread_mutex_unlock(&sched_lock);
        return STROBE_ENOSESSION;
    }
    __atomic_store_n(&strobe__schedule_step_hook, NULL, __ATOMIC_RELEASE);
    int recording = st->cur == STROBE_STEP_RECORD || st->cur == STROBE_STEP_RECORD_AND_SAVE;
    stop_cycle(st, recording, &p);
    sched = NULL;
    pthread_mutex_unlock(&sched_lock);
    hand_over(&p);
    free_state(st);
    return 0;
}

void strobe_schedule_counts(uint64_t *traces_ready, uint64_t *failures) {
    pthread_mutex_lock(&sched_lock);
    if (traces_ready) *traces_ready = ready_total;
    if (failures) *failures = failures_total;
    pthread_mutex_unlock(&sched_lock);
}

/* ---- the trace-file handler ----------------------------------------------------------------- */

struct strobe_trace_dir_handler {
    char dir[4096];
    char worker[256];
    int gzip;
    pthread_mutex_t lock; /* guards what follows */
    uint64_t written, failed;
    long long last_ns;    /* the nanoseconds of the last name given out */
    char last_path[4400]; /* the file written last ("" none) */
};

int strobe_trace_dir_handler_create(strobe_trace_dir_handler **out, const char *dir,
                                    const char *worker, int gzip) {
    STROBE_RETURN_IF(out == NULL, STROBE_EINVAL);
    *out = NULL;
    STROBE_RETURN_IF(dir == NULL || dir[0] == '\0', STROBE_EINVAL);
    strobe_trace_dir_handler *h = calloc(1, sizeof *h);
    STROBE_RETURN_IF(h == NULL, STROBE_ENOMEM);
    int rc;
    STROBE_FAIL_IF(strlen(dir) >= sizeof h->dir, STROBE_EINVAL, fail);
    strcpy(h->dir, dir);
    if (worker != NULL) {
        STROBE_FAIL_IF(worker[0] == '\0' || strlen(worker) >= sizeof h->worker ||
                           strchr(worker, '/'),
                       STROBE_EINVAL, fail);
        strcpy(h->worker, worker);
    } else {
        char host[HOST_NAME_MAX + 1] = "";
        if (gethostname(host, sizeof host) != 0 || host[0] == '\0') strcpy(host, "localhost");
        host[sizeof host - 1] = '\0';
        for (char *c = host; *c; c++)
            if (*c == '/') *c = '_';
        snprintf(h->worker, sizeof h->worker, "%.200s_%ld", host, (long)getpid());
    }
    h->gzip = gzip != 0;
    STROBE_FAIL_IF(pthread_mutex_init(&h->lock, NULL) != 0, STROBE_ENOMEM, fail);
    *out = h;
    return 0;
fail:
    free(h);
    return rc;
}

void strobe_trace_dir_handler_destroy(strobe_trace_dir_handler *h) {
    if (h == NULL) return;
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void strobe_trace_dir_handler_counts(strobe_trace_dir_handler *h, uint64_t *written,
                                     uint64_t *failed) {
    uint64_t w = 0, f = 0;
    if (h != NULL) {
        pthread_mutex_lock(&h->lock);
        w = h->written;
        f = h->failed;
        pthread_mutex_unlock(&h->lock);
    }
    if (written) *written = w;
    if (failed) *failed = f;
}

int strobe_trace_dir_handler_last_path(strobe_trace_dir_handler *h, char *buf, size_t cap) {
    if (h == NULL || buf == NULL || cap == 0) return STROBE_EINVAL;
    pthread_mutex_lock(&h->lock);
    size_t n = strlen(h->last_path);
    int rc = n < cap ? 0 : STROBE_ERANGE;
    if (rc == 0)
        memcpy(buf, h->last_path, n + 1);
    else
        buf[0] = '\0';
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* mkdir -p: every missing folder of `path`. @return 0, or STROBE_ESYS with errno set. */
static int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return STROBE_ESYS;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        STROBE_RETURN_IF(mkdir(buf, 0777) != 0 && errno != EEXIST, STROBE_ESYS);
        buf[i] = c;
    }
    struct stat sb;
    STROBE_RETURN_IF(stat(path, &sb) != 0, STROBE_ESYS);
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return STROBE_ESYS;
    }
    return 0;
}

/* Counts a failure (under the handler's lock). */
static void handler_failed(strobe_trace_dir_handler *h) {
    pthread_mutex_lock(&h->lock);
    h->failed++;
    pthread_mutex_unlock(&h->lock);
}

void strobe_trace_dir_handler_fn(strobe_result *result, void *ctx) {
    strobe_trace_dir_handler *h = ctx;
    if (h == NULL || result == NULL) return;
    /* dir, worker and gzip never change after create: read without the lock. */
    if (make_dirs(h->dir) != 0) {
        strobe__log(STROBE_LOG_ERROR, "trace handler: cannot create %s: %s", h->dir,
                    strerror(errno));
        handler_failed(h);
        return;
    }
    /* Names are taken under the lock, their nanoseconds strictly increasing: two threads in the
     * same nanosecond must not write (and rename over) the same file. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    pthread_mutex_lock(&h->lock);
    if (ns <= h->last_ns) ns = h->last_ns + 1;
    h->last_ns = ns;
    pthread_mutex_unlock(&h->lock);
    char path[sizeof h->last_path];
    int w = snprintf(path, sizeof path, "%s/%s.%lld.pt.trace.json%s", h->dir, h->worker, ns,
                     h->gzip ? ".gz" : "");
    if (w < 0 || (size_t)w >= sizeof path) {
        strobe__log(STROBE_LOG_ERROR, "trace handler: path too long under %s", h->dir);
        handler_failed(h);
        return;
    }
    /* The save runs without the lock, so that handlers on several threads write in parallel. */
    int rc = strobe_result_save(result, path);
    if (rc != 0) {
        strobe__log(STROBE_LOG_ERROR, "trace handler: cannot save %s: %s", path,
                    strobe_strerror(rc));
        handler_failed(h);
        return;
    }
    pthread_mutex_lock(&h->lock);
    h->written++;
    memcpy(h->last_path, path, (size_t)w + 1);
    pthread_mutex_unlock(&h->lock);
}
