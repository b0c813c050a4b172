/* endpoint.c: the on-demand control endpoint (strobe/ondemand.h).
 *
 * Contents: the default client (strobe's own session); the job state machine (a duration trace
 * runs on the endpoint's thread, an iteration trace starts and stops on the thread that calls
 * strobe_step()); the connection loop (poll over the listening socket, a wake pipe and at most
 * MAX_CONNS requesters, each with a deadline); the dynolog client (dynolog.c: its datagram socket
 * sits in the same poll, its polls are one more deadline, and a gputrace config starts the same
 * jobs as a trigger); start, stop, and the STROBE_ONDEMAND=1 (or dynolog) constructor.
 *
 * Threads. One mutex (od.lock) guards the job. The endpoint's thread owns the sockets; a stepping
 * thread only changes the job under the lock and wakes the endpoint through the pipe, so a slow or
 * hostile requester can never hold up the program's own threads. Results are written on the
 * endpoint's thread, never on a stepping thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "od_internal.h"
#include "core/hooks.h"
#include "util/log.h"
#include "core/ownthread.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/ondemand.h"
#include "strobe/schedule.h"
#include "util/od_proto.h"
#include "util/struct_in.h"

#define MAX_CONNS 16
/* A requester has this long to send its whole request line. */
#define REQUEST_DEADLINE_MS 2000
/* An iteration trace that has not finished after this long (no steps, or slow ones) is ended. */
#define DEFAULT_ITER_TIMEOUT_MS (300LL * 1000)

/* ---- the default client: strobe's own session ------------------------------------------------ */

static strobe_result *mem_result; /* the memory profile between stop and export */

static int def_prepare(void *ctx, const strobe_config *cfg) {
    (void)ctx;
    return strobe_prepare(cfg);
}
static int def_start(void *ctx) {
    (void)ctx;
    return strobe_start_prepared();
}
static int def_stop(void *ctx, strobe_result **out) {
    (void)ctx;
    return strobe_stop(out);
}
static int def_mem_start(void *ctx) {
    (void)ctx;
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.profile_memory = 1;
    cfg.trace_name = "strobe memory profile";
    return strobe_start(&cfg);
}
static int def_mem_stop(void *ctx) {
    (void)ctx;
    strobe_result_free(mem_result);
    mem_result = NULL;
    return strobe_stop(&mem_result);
}
static int def_mem_export(void *ctx, const char *path) {
    (void)ctx;
    if (mem_result == NULL) return STROBE_ENOSESSION;
    int rc = strobe_result_save(mem_result, path);
    strobe_result_free(mem_result);
    mem_result = NULL;
    return rc;
}

static const strobe_client_interface default_client = {
    NULL, def_prepare, def_start, def_stop, def_mem_start, def_mem_stop, def_mem_export};

/* ---- state ----------------------------------------------------------------------------------- */

typedef enum job_state {
    JOB_IDLE = 0,
    JOB_ARMED,     /* iteration trace prepared, waiting for its first step */
    JOB_ITER,      /* iteration trace recording */
    JOB_DURATION,  /* duration trace recording */
    JOB_MEMORY,    /* memory profile recording */
    JOB_FINISHING, /* stopped; the endpoint is to write the result */
    JOB_WRITING,   /* the endpoint writes the result */
} job_state;

static const char *state_names[] = {"idle",   "armed",   "tracing", "tracing",
                                    "memory", "writing", "writing"};

typedef struct conn {
    int fd;
    size_t len;
    int64_t deadline_ms;
    char buf[STROBE__OD_MAX_LINE];
} conn;

static struct {
    pthread_mutex_t lock;
    int started;
    pthread_t thread;
    int listen_fd, wake[2];
    int stopping;
    char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char *output_dirs;
    strobe_client_interface client;
    void *client_ctx;
    int client_set, client_inited;
    /* The job, under lock. */
    job_state state;
    int memory;                            /* the job is a memory profile */
    int cuda;                              /* the job records CUDA activities */
    int waiter;                            /* the requester waiting for the job's end; -1 none */
    char output[STROBE__OD_MAX_PATH];      /* the requested path, %p and the like unexpanded */
    char output_name[STROBE__OD_MAX_PATH]; /* it expanded: the file's name, for replies */
    int64_t deadline_ms; /* duration: when to stop; iteration: the timeout; 0 none */
    uint64_t start_at, end_at, iterations;
    strobe_result *result; /* a stopped trace, for the endpoint to write */
    int job_rc;            /* a failure while stopping or starting (0 none) */
    char job_msg[256];     /* what to tell the requester besides the path */
    conn *conns[MAX_CONNS];
    /* The dynolog client (dynolog.c), the endpoint thread's alone once started. */
    int dyno_fd;         /* -1: off */
    char dyno_name[128]; /* our abstract name */
    char dyno_daemon[STROBE__DYNO_MAX_NAME + 1];
    int64_t dyno_interval_ms;   /* between polls */
    int64_t dyno_next_ms;       /* the next poll */
    int dyno_registered;        /* the daemon answered "ctxt" */
    int dyno_absent;            /* the last send found no daemon (said once at INFO) */
    unsigned long dyno_dropped; /* malformed or foreign datagrams dropped */
} od = {.lock = PTHREAD_MUTEX_INITIALIZER,
        .listen_fd = -1,
        .wake = {-1, -1},
        .waiter = -1,
        .dyno_fd = -1};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake_endpoint(void) {
    if (od.wake[1] >= 0) {
        char c = 1;
        ssize_t w = write(od.wake[1], &c, 1);
        (void)w; /* a full pipe already holds a wake-up */
    }
}

/* Writes one reply line; a requester that does not read loses it (never blocks the endpoint). */
static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...) {
    if (fd < 0) return;
    char line[STROBE__OD_MAX_LINE];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
}

/* An encoded copy of s, for a reply's value. */
static const char *enc(const char *s, char *buf, size_t cap) {
    if (strobe__od_encode(s, strlen(s), buf, cap) < 0) snprintf(buf, cap, "(too%%20long)");
    return buf;
}

/* ---- steps (iteration mode) ------------------------------------------------------------------ */

static void note_started(void);

/* The ProfilerStep#N ranges are the core's: strobe_step() records one in any recording session
 * after this hook has started or stopped it, and strobe_stop() ends the last. */

/* Stops the job's session (under lock) and hands the result to the endpoint. */
static void stop_job(const char *why) {
    strobe_result *r = NULL;
    int rc = od.client.stop(od.client_ctx, &r);
    od.result = rc == 0 ? r : NULL;
    od.job_rc = rc;
    if (why) snprintf(od.job_msg, sizeof od.job_msg, "%s", why);
    od.state = JOB_FINISHING;
    __atomic_store_n(&strobe__step_hook, NULL, __ATOMIC_RELEASE);
    wake_endpoint();
}

void strobe__od_on_step(uint64_t n) {
    pthread_mutex_lock(&od.lock);
    if (od.state == JOB_ARMED && n >= od.start_at) {
        int rc = od.client.start(od.client_ctx);
        if (rc != 0) {
            stop_job(NULL);
            strobe_result_free(od.result);
            od.result = NULL;
            od.job_rc = rc;
            snprintf(od.job_msg, sizeof od.job_msg, "the session could not start: %s",
                     strobe_strerror(rc));
        } else {
            od.state = JOB_ITER;
            od.end_at = n + od.iterations;
            note_started();
        }
    } else if (od.state == JOB_ITER) {
        if (n >= od.end_at) stop_job(NULL);
    }
    pthread_mutex_unlock(&od.lock);
}

/* ---- requests -------------------------------------------------------------------------------- */

static void config_for(const strobe__od_request *rq, strobe_config *cfg) {
    strobe_config_init(cfg);
    cfg->activities = STROBE_ACTIVITY_CPU | (rq->activities & STROBE_ACTIVITY_CUDA);
    cfg->record_shapes = (rq->flags & STROBE__OD_RECORD_SHAPES) != 0;
    cfg->profile_memory = (rq->flags & STROBE__OD_PROFILE_MEMORY) != 0;
    cfg->with_stack = (rq->flags & STROBE__OD_WITH_STACK) != 0;
    cfg->with_flops = (rq->flags & STROBE__OD_WITH_FLOPS) != 0;
    cfg->with_modules = (rq->flags & STROBE__OD_WITH_MODULES) != 0;
    cfg->trace_name = "strobe on-demand trace";
}

static void command_line(char *out, size_t cap) {
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0') out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

static void handle_status(int fd) {
    char cmd[512], ecmd[1600];
    command_line(cmd, sizeof cmd);
    pthread_mutex_lock(&od.lock);
    const char *st = state_names[od.state];
    pthread_mutex_unlock(&od.lock);
    reply(fd, "ok pid=%ld state=%s steps=%llu proto=%d cmd=%s", (long)getpid(), st,
          (unsigned long long)strobe_step_count(), STROBE__OD_PROTO, enc(cmd, ecmd, sizeof ecmd));
}

/* Starts a trace or a memory profile for the requester on fd (-1: a dynolog request, which
 * nobody waits on). first_step above 0: an iteration trace starts at that step, or at the next one
 * when it has passed (dynolog's PROFILE_START_ITERATION); else at the next multiple of the
 * round-up. @return 1 when fd now waits for the job's end (kept open), 0 when it was answered and
 * may be closed; why (NULL: not wanted) gets the reason of a refusal. */
static int start_job(int fd, const strobe__od_request *rq, int64_t first_step, char *why,
                     size_t whycap) {
    char err[512], e1[1600], name[STROBE__OD_MAX_PATH];
    int dirfd;
    char save_path[STROBE__OD_MAX_PATH + 64];
    if (why && whycap) why[0] = '\0';
    if (strobe__od_check_output(rq->output, od.output_dirs, &dirfd, save_path, sizeof save_path,
                                name, sizeof name, err, sizeof err) != 0) {
        reply(fd, "error code=path msg=%s", enc(err, e1, sizeof e1));
        if (why) snprintf(why, whycap, "%s", err);
        return 0;
    }
    close(dirfd); /* checked again, and pinned, when the trace is written */

    pthread_mutex_lock(&od.lock);
    if (od.state != JOB_IDLE) {
        pthread_mutex_unlock(&od.lock);
        reply(fd, "error code=busy msg=%s",
              enc("an on-demand trace already runs in this process", e1, sizeof e1));
        if (why) snprintf(why, whycap, "an on-demand trace already runs in this process");
        return 0;
    }
    if (od.client_set == 0 && strobe__schedule_installed()) {
        pthread_mutex_unlock(&od.lock);
        reply(fd, "error code=busy msg=%s",
              enc("the program runs a schedule of its own", e1, sizeof e1));
        if (why) snprintf(why, whycap, "the program runs a schedule of its own");
        return 0;
    }
    if (!od.client_inited && od.client.init) od.client.init(od.client_ctx);
    od.client_inited = 1;
    int rc;
    const char *mode;
    int64_t t = now_ms();
    od.job_rc = 0;
    od.job_msg[0] = '\0';
    od.result = NULL;
    od.memory = rq->verb == STROBE__OD_MEMORY;
    od.cuda = !od.memory && (rq->activities & STROBE_ACTIVITY_CUDA) != 0;
    if (od.memory) {
        rc = od.client.start_memory_profile(od.client_ctx);
        mode = "memory";
        if (rc == 0) {
            od.state = JOB_MEMORY;
            od.deadline_ms = now_ms() + rq->duration_ms;
        }
    } else {
        strobe_config cfg;
        config_for(rq, &cfg);
        rc = od.client.prepare(od.client_ctx, &cfg);
        if (rq->duration_ms) {
            mode = "duration";
            if (rc == 0) {
                rc = od.client.start(od.client_ctx);
                if (rc == 0) {
                    /* The duration counts from the start, however long starting took. */
                    od.state = JOB_DURATION;
                    od.deadline_ms = now_ms() + rq->duration_ms;
                    note_started();
                } else {
                    strobe_result *r = NULL;
                    if (od.client.stop(od.client_ctx, &r) == 0) strobe_result_free(r);
                }
            }
        } else {
            mode = "iterations";
            if (rc == 0) {
                uint64_t cur = strobe_step_count();
                uint64_t ru = (uint64_t)rq->roundup;
                if (first_step > 0)
                    od.start_at = (uint64_t)first_step > cur ? (uint64_t)first_step : cur + 1;
                else
                    od.start_at = (cur / ru + 1) * ru;
                od.iterations = (uint64_t)rq->iterations;
                od.state = JOB_ARMED;
                od.deadline_ms = t + (rq->timeout_ms ? rq->timeout_ms : DEFAULT_ITER_TIMEOUT_MS);
                __atomic_store_n(&strobe__step_hook, strobe__od_on_step, __ATOMIC_RELEASE);
            }
        }
    }
    if (rc != 0) {
        pthread_mutex_unlock(&od.lock);
        snprintf(err, sizeof err, "the profiler could not start: %s%s", strobe_strerror(rc),
                 rc == STROBE_EBUSY ? " (the program records a session of its own)" : "");
        reply(fd, "error code=%s msg=%s", rc == STROBE_EBUSY ? "busy" : "failed",
              enc(err, e1, sizeof e1));
        if (why) snprintf(why, whycap, "%s", err);
        return 0;
    }
    snprintf(od.output, sizeof od.output, "%s", rq->output);
    snprintf(od.output_name, sizeof od.output_name, "%s", name);
    od.waiter = fd;
    uint64_t start_at = od.start_at;
    pthread_mutex_unlock(&od.lock);
    if (rq->iterations)
        reply(fd, "ok pid=%ld mode=%s start_step=%llu steps=%lld output=%s", (long)getpid(), mode,
              (unsigned long long)start_at, (long long)rq->iterations, enc(name, e1, sizeof e1));
    else
        reply(fd, "ok pid=%ld mode=%s duration_ms=%lld output=%s", (long)getpid(), mode,
              (long long)rq->duration_ms, enc(name, e1, sizeof e1));
    return 1;
}

/* Writes the program's flight recorder window (its own session, started with ring_bytes or
 * ring_ms) to the requested path, on this thread; recording goes on meanwhile. */
static void handle_dump(int fd, const strobe__od_request *rq) {
    char err[512], e1[1600], e2[STROBE__OD_MAX_PATH * 3 + 1], name[STROBE__OD_MAX_PATH];
    int dirfd;
    char save_path[STROBE__OD_MAX_PATH + 64];
    if (strobe__od_check_output(rq->output, od.output_dirs, &dirfd, save_path, sizeof save_path,
                                name, sizeof name, err, sizeof err) != 0) {
        reply(fd, "error code=path msg=%s", enc(err, e1, sizeof e1));
        return;
    }
    int rc = strobe_flight_dump(save_path);
    close(dirfd);
    if (rc == 0) {
        reply(fd, "done path=%s", enc(name, e2, sizeof e2));
    } else {
        snprintf(err, sizeof err, "%s",
                 rc == STROBE_ENOSESSION
                     ? "no flight recorder runs in this process (a session with ring_bytes or "
                       "ring_ms)"
                     : strobe_strerror(rc));
        reply(fd, "failed msg=%s", enc(err, e1, sizeof e1));
    }
}

static void handle_line(conn *c) {
    strobe__od_request rq;
    char err[256], e1[800];
    int fd = c->fd;
    if (strobe__od_parse_request(c->buf, c->len, &rq, err, sizeof err) != 0) {
        reply(fd, "error code=request msg=%s", enc(err, e1, sizeof e1));
    } else if (rq.verb == STROBE__OD_STATUS) {
        handle_status(fd);
    } else if (rq.verb == STROBE__OD_DUMP) {
        handle_dump(fd, &rq);
    } else if (start_job(fd, &rq, 0, NULL, 0)) {
        c->fd = -1; /* now the waiter */
        return;
    }
    close(fd);
    c->fd = -1;
}

/* ---- finishing a job ------------------------------------------------------------------------- */

/* Ends what the deadline ends (under lock). */
static void on_deadline(void) {
    if (od.state == JOB_DURATION) {
        stop_job(NULL);
    } else if (od.state == JOB_ITER) {
        /* strobe_stop() ends the open ProfilerStep range. */
        stop_job("the timeout ended the trace before all its steps were recorded");
    } else if (od.state == JOB_ARMED) {
        stop_job(NULL);
        strobe_result_free(od.result);
        od.result = NULL;
        od.job_rc = STROBE_ENOSESSION; /* reported with job_msg */
        snprintf(od.job_msg, sizeof od.job_msg,
                 "step %llu was not reached before the timeout (does the program call "
                 "strobe_step()?)",
                 (unsigned long long)od.start_at);
    } else if (od.state == JOB_MEMORY) {
        od.job_rc = od.client.stop_memory_profile(od.client_ctx);
        od.state = JOB_FINISHING;
    }
}

/* Writes the finished job's output (endpoint thread, lock not held while writing). */
static void finish_job(void) {
    pthread_mutex_lock(&od.lock);
    if (od.state != JOB_FINISHING) {
        pthread_mutex_unlock(&od.lock);
        return;
    }
    strobe_result *r = od.result;
    od.result = NULL;
    od.state = JOB_WRITING;
    int rc = od.job_rc, memory = od.memory, waiter = od.waiter;
    char msg[700], output[STROBE__OD_MAX_PATH], name[STROBE__OD_MAX_PATH];
    snprintf(msg, sizeof msg, "%s", od.job_msg);
    snprintf(output, sizeof output, "%s", od.output);
    snprintf(name, sizeof name, "%s", od.output_name);
    pthread_mutex_unlock(&od.lock);

    char err[600], e1[2000], e2[STROBE__OD_MAX_PATH * 3 + 1];
    size_t events = 0;
    if (rc == 0 && (r != NULL || memory)) {
        int dirfd = -1;
        char save_path[STROBE__OD_MAX_PATH + 64];
        if (strobe__od_check_output(output, od.output_dirs, &dirfd, save_path, sizeof save_path,
                                    name, sizeof name, err, sizeof err) != 0) {
            rc = STROBE_EINVAL;
            snprintf(msg, sizeof msg, "%s", err);
        } else {
            int sys_errno = 0;
            if (memory) {
                rc = od.client.export_memory_profile(od.client_ctx, save_path);
            } else {
                events = strobe_result_event_count(r);
                rc = strobe_result_save(r, save_path);
                /* The system's reason (ENOSPC ...), which a save leaves in errno (result.h). */
                if (rc == STROBE_ESYS || rc == STROBE_EIO) sys_errno = errno;
            }
            if (rc != 0)
                snprintf(msg, sizeof msg, "cannot write the trace: %s",
                         sys_errno ? strerror(sys_errno) : strobe_strerror(rc));
            close(dirfd);
        }
    } else if (rc != 0 && msg[0] == '\0') {
        snprintf(msg, sizeof msg, "the profiler failed: %s", strobe_strerror(rc));
    }
    strobe_result_free(r);
    if (rc == 0) {
        if (msg[0])
            reply(waiter, "done path=%s events=%zu note=%s", enc(name, e2, sizeof e2), events,
                  enc(msg, e1, sizeof e1));
        else
            reply(waiter, "done path=%s events=%zu", enc(name, e2, sizeof e2), events);
        strobe__log(STROBE_LOG_INFO, "on-demand: trace written to %s", name);
    } else {
        reply(waiter, "failed msg=%s", enc(msg, e1, sizeof e1));
        strobe__log(STROBE_LOG_WARN, "on-demand: no trace written: %s", msg);
    }
    pthread_mutex_lock(&od.lock);
    if (od.waiter >= 0) close(od.waiter);
    od.waiter = -1;
    od.state = JOB_IDLE;
    pthread_mutex_unlock(&od.lock);
}

/* ---- dynolog (dynolog.c) --------------------------------------------------------------------- */

/* Polls the daemon, as libkineto's config thread does every interval: a registration ("ctxt")
 * until the daemon has answered one, then a "req" whose kind says whether a trace may start
 * (ACTIVITIES is left out while a job runs; that is how the daemon sees a trace in progress and,
 * when the bit returns, its end). A daemon that is not there costs one failed send per interval,
 * said once. Endpoint thread. */
static void dyno_tick(int64_t now) {
    od.dyno_next_ms = now + od.dyno_interval_ms;
    pthread_mutex_lock(&od.lock);
    int idle = od.state == JOB_IDLE;
    pthread_mutex_unlock(&od.lock);
    int rc = 0;
    if (!od.dyno_registered) rc = strobe__dyno_send_ctxt(od.dyno_fd, od.dyno_daemon, 0);
    if (rc == 0)
        rc = strobe__dyno_send_req(od.dyno_fd, od.dyno_daemon,
                                   STROBE__DYNO_EVENTS | (idle ? STROBE__DYNO_ACTIVITIES : 0));
    if (rc != 0) {
        int e = errno;
        if (!od.dyno_absent)
            strobe__log(e == ECONNREFUSED || e == ENOENT ? STROBE_LOG_INFO : STROBE_LOG_WARN,
                        "on-demand: no dynolog daemon at @%s (%s); asking again every %lld ms",
                        od.dyno_daemon, strerror(e), (long long)od.dyno_interval_ms);
        od.dyno_absent = 1;
        od.dyno_registered = 0; /* a daemon that comes back has forgotten us */
    } else if (od.dyno_absent) {
        od.dyno_absent = 0;
        strobe__log(STROBE_LOG_INFO, "on-demand: dynolog daemon @%s reached", od.dyno_daemon);
    }
}

/* Takes a config the daemon handed out: a gputrace request starts a job, as a trigger would,
 * except that nobody waits on it; where the trace went is logged, as libkineto does. */
static void dyno_config(const char *text, size_t len) {
    strobe__od_request rq;
    int64_t first_step;
    char err[600], note[200];
    int rc =
        strobe__dyno_parse_config(text, len, &rq, &first_step, note, sizeof note, err, sizeof err);
    if (rc < 0) {
        od.dyno_dropped++;
        strobe__log(STROBE_LOG_WARN, "on-demand: dynolog config dropped (%lu so far): %s",
                    od.dyno_dropped, err);
        return;
    }
    if (rc == 0) return; /* nothing asked of the activity profiler */
    if (start_job(-1, &rq, first_step, err, sizeof err) == 0) {
        strobe__log(STROBE_LOG_WARN, "on-demand: dynolog trace to %s not started: %s", rq.output,
                    err);
        return;
    }
    if (rq.iterations)
        strobe__log(STROBE_LOG_INFO, "on-demand: dynolog trace of %lld steps to %s",
                    (long long)rq.iterations, rq.output);
    else
        strobe__log(STROBE_LOG_INFO, "on-demand: dynolog trace of %lld ms to %s",
                    (long long)rq.duration_ms, rq.output);
    if (note[0]) strobe__log(STROBE_LOG_WARN, "on-demand: dynolog: %s", note);
}

/* Reads what the daemon sent (a bounded number of datagrams per wake-up, so that a flood cannot
 * keep the thread from its own socket). Endpoint thread. */
static void dyno_read(void) {
    static char payload[65536];
    for (int i = 0; i < 64; i++) {
        int kind = 0;
        size_t len = 0;
        char err[300];
        int rc = strobe__dyno_recv(od.dyno_fd, od.dyno_daemon, &kind, payload, sizeof payload, &len,
                                   err, sizeof err);
        if (rc == 0) return;
        if (rc < 0) {
            od.dyno_dropped++;
            strobe__log(STROBE_LOG_WARN, "on-demand: dynolog message dropped (%lu so far): %s",
                        od.dyno_dropped, err);
            if (rc == STROBE_ESYS) return;
            continue;
        }
        if (kind == STROBE__DYNO_CTXT) {
            if (!od.dyno_registered)
                strobe__log(STROBE_LOG_INFO, "on-demand: registered with dynolog @%s as @%s",
                            od.dyno_daemon, od.dyno_name);
            od.dyno_registered = 1;
        } else {
            dyno_config(payload, len);
        }
    }
}

/* Opens the dynolog client when the environment asks for it (under lock, at start). A failure
 * leaves the endpoint serving its own socket, with a warning. */
static void dyno_open(void) {
    od.dyno_fd = -1;
    if (!strobe__dyno_enabled()) return;
    char err[300];
    snprintf(od.dyno_daemon, sizeof od.dyno_daemon, "%s", strobe__dyno_daemon_name());
    int fd = strobe__dyno_open(od.dyno_name, sizeof od.dyno_name, err, sizeof err);
    if (fd < 0) {
        strobe__log(STROBE_LOG_WARN, "on-demand: no dynolog client: %s", err);
        return;
    }
    od.dyno_fd = fd;
    od.dyno_interval_ms = strobe__dyno_interval_ms();
    od.dyno_next_ms = now_ms(); /* register at once */
    od.dyno_registered = 0;
    od.dyno_absent = 0;
    strobe__log(STROBE_LOG_INFO, "on-demand: dynolog client @%s polls @%s every %lld ms",
                od.dyno_name, od.dyno_daemon, (long long)od.dyno_interval_ms);
}

/* ---- the connection loop --------------------------------------------------------------------- */

static void accept_one(void) {
    int fd = accept4(od.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    char e1[400];
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
        reply(fd, "error code=refused msg=%s", enc("peer credentials unavailable", e1, sizeof e1));
        close(fd);
        return;
    }
    if (cred.uid != geteuid()) {
        char m[160];
        snprintf(m, sizeof m, "uid %lu may not control a process of uid %lu",
                 (unsigned long)cred.uid, (unsigned long)geteuid());
        reply(fd, "error code=refused msg=%s", enc(m, e1, sizeof e1));
        strobe__log(STROBE_LOG_WARN, "on-demand: refused pid %ld: %s", (long)cred.pid, m);
        close(fd);
        return;
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (od.conns[i] == NULL) {
            od.conns[i] = malloc(sizeof(conn));
            if (od.conns[i] == NULL) break;
            od.conns[i]->fd = fd;
            od.conns[i]->len = 0;
            od.conns[i]->deadline_ms = now_ms() + REQUEST_DEADLINE_MS;
            return;
        }
    }
    reply(fd, "error code=busy msg=%s", enc("too many requests at once", e1, sizeof e1));
    close(fd);
}

static void drop_conn(int i) {
    if (od.conns[i]->fd >= 0) close(od.conns[i]->fd);
    free(od.conns[i]);
    od.conns[i] = NULL;
}

/* Reads what a requester sent; a whole line is handled at once. */
static void read_conn(int i) {
    conn *c = od.conns[i];
    char e1[200];
    for (;;) {
        ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) {
            drop_conn(i); /* gone before a whole request */
            return;
        }
        char *nl = memchr(c->buf + c->len, '\n', (size_t)n);
        c->len += (size_t)n;
        if (nl != NULL) {
            c->len = (size_t)(nl - c->buf);
            handle_line(c);
            drop_conn(i);
            return;
        }
        if (c->len == sizeof c->buf) {
            reply(c->fd, "error code=request msg=%s",
                  enc("request too long (no newline within 4096 bytes)", e1, sizeof e1));
            drop_conn(i);
            return;
        }
    }
}

static void *endpoint_main(void *arg) {
    (void)arg;
    strobe__own_thread_enter(NULL); /* left out of the CPU samples; named by its starter */
    /* The endpoint's thread takes no signals meant for the program. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        struct pollfd pf[MAX_CONNS + 4];
        int idx[MAX_CONNS + 4];
        int n = 0;
        pf[n] = (struct pollfd){od.wake[0], POLLIN, 0};
        idx[n++] = -1;
        pf[n] = (struct pollfd){od.listen_fd, POLLIN, 0};
        idx[n++] = -2;
        pthread_mutex_lock(&od.lock);
        int stopping = od.stopping;
        int waiter = od.waiter;
        job_state st = od.state;
        int64_t deadline =
            st == JOB_ARMED || st == JOB_ITER || st == JOB_DURATION || st == JOB_MEMORY
                ? od.deadline_ms
                : 0;
        pthread_mutex_unlock(&od.lock);
        if (stopping) break;
        if (st == JOB_FINISHING) {
            finish_job();
            continue;
        }
        if (waiter >= 0) {
            pf[n] = (struct pollfd){waiter, POLLIN, 0};
            idx[n++] = -3;
        }
        int64_t t = now_ms();
        if (od.dyno_fd >= 0) {
            if (od.dyno_next_ms <= t) dyno_tick(t);
            pf[n] = (struct pollfd){od.dyno_fd, POLLIN, 0};
            idx[n++] = -4;
            if (deadline == 0 || od.dyno_next_ms < deadline) deadline = od.dyno_next_ms;
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            if (od.conns[i] == NULL) continue;
            if (od.conns[i]->deadline_ms < deadline || deadline == 0)
                deadline = od.conns[i]->deadline_ms;
            pf[n] = (struct pollfd){od.conns[i]->fd, POLLIN, 0};
            idx[n++] = i;
        }
        int timeout = -1; /* idle: sleep until something happens */
        if (deadline)
            timeout = deadline <= t ? 0 : (int)(deadline - t > 60000 ? 60000 : deadline - t);
        int rc = poll(pf, (nfds_t)n, timeout);
        if (rc < 0 && errno != EINTR) break;
        t = now_ms();
        for (int k = 0; rc > 0 && k < n; k++) {
            if (pf[k].revents == 0) continue;
            if (idx[k] == -1) {
                char buf[64];
                while (read(od.wake[0], buf, sizeof buf) > 0) {
                }
            } else if (idx[k] == -2) {
                accept_one();
            } else if (idx[k] == -4) {
                dyno_read();
            } else if (idx[k] == -3) {
                /* The waiting requester sent more, or left: either way it stops waiting. The job
                 * goes on and its trace is still written. */
                char buf[64];
                ssize_t r = read(waiter, buf, sizeof buf);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
                    (pf[k].revents & (POLLHUP | POLLERR))) {
                    pthread_mutex_lock(&od.lock);
                    if (od.waiter == waiter) {
                        close(waiter);
                        od.waiter = -1;
                    }
                    pthread_mutex_unlock(&od.lock);
                    strobe__log(STROBE_LOG_INFO,
                                "on-demand: the requester left; the trace will still be written");
                }
            } else if (od.conns[idx[k]] != NULL) {
                read_conn(idx[k]);
            }
        }
        /* Requesters too slow to send a line, and jobs whose time is up. */
        for (int i = 0; i < MAX_CONNS; i++) {
            if (od.conns[i] != NULL && od.conns[i]->deadline_ms <= t) {
                char e1[200];
                reply(od.conns[i]->fd, "error code=timeout msg=%s",
                      enc("no whole request line within 2000 ms", e1, sizeof e1));
                drop_conn(i);
            }
        }
        pthread_mutex_lock(&od.lock);
        if (od.state != JOB_IDLE && od.state != JOB_FINISHING && od.deadline_ms <= t) on_deadline();
        pthread_mutex_unlock(&od.lock);
    }
    return NULL;
}

/* ---- start and stop -------------------------------------------------------------------------- */

int strobe_ondemand_set_client(const strobe_client_interface *client, void *ctx) {
    if (client &&
        (!client->prepare || !client->start || !client->stop || !client->start_memory_profile ||
         !client->stop_memory_profile || !client->export_memory_profile))
        return STROBE_EINVAL;
    pthread_mutex_lock(&od.lock);
    if (od.state != JOB_IDLE) {
        pthread_mutex_unlock(&od.lock);
        return STROBE_EBUSY;
    }
    od.client = client ? *client : default_client;
    od.client_ctx = client ? ctx : NULL;
    od.client_set = client != NULL;
    od.client_inited = 0;
    pthread_mutex_unlock(&od.lock);
    return 0;
}

static void close_fds(void) {
    int *fds[] = {&od.listen_fd, &od.wake[0], &od.wake[1], &od.dyno_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0) close(*fds[i]);
        *fds[i] = -1;
    }
}

/* A child made by fork() has no endpoint thread: it serves nothing and leaves the parent's socket
 * alone (the socket file is the parent's). */
static void fork_child(void) {
    pthread_mutex_init(&od.lock, NULL);
    if (!od.started) return;
    od.started = 0;
    close_fds();
    if (od.waiter >= 0) close(od.waiter);
    od.waiter = -1;
    for (int i = 0; i < MAX_CONNS; i++)
        if (od.conns[i]) drop_conn(i);
    od.state = JOB_IDLE;
    od.result = NULL;
    __atomic_store_n(&strobe__step_hook, NULL, __ATOMIC_RELEASE);
}

static int stop_endpoint(const char *what);

/* The program's normal exit (exit(), a return from main): a job in progress is ended and its
 * trace written, its requester told where, as strobe_ondemand_stop() does; then the socket file
 * goes with the process (a killed process leaves it, and `strobe ps` removes files whose process
 * is gone). Runs once: a second call finds the endpoint stopped. */
static void at_exit(void) {
    pthread_mutex_lock(&od.lock);
    int started = od.started;
    int own = started && pthread_equal(pthread_self(), od.thread);
    pthread_mutex_unlock(&od.lock);
    if (!started) return;
    if (own) {
        /* exit() from a client callback on the endpoint's thread: it cannot wait for itself. */
        unlink(od.sock_path);
        return;
    }
    stop_endpoint("the process exited");
}

/* Called under lock once a job's session has started. A session with CUDA activities must stop
 * while CUPTI and the CUDA runtime are still up, and their exit handlers, registered when they
 * started, run before those registered earlier (atexit runs in reverse order): so at_exit() is
 * registered again after the first such start, to run before them (the later call does nothing). */
static void note_started(void) {
    static int after_cuda;
    if (od.cuda && !after_cuda) {
        after_cuda = 1;
        atexit(at_exit);
    }
}

int strobe_ondemand_start(const strobe_ondemand_options *user_opt) {
    static int once;
    /* The library's own full-size copy (README, "ABI and versions"); NULL: the defaults. */
    strobe_ondemand_options full;
    memset(&full, 0, sizeof full);
    if (user_opt) {
        int irc = strobe__struct_in(&full, sizeof full, user_opt, STROBE_ONDEMAND_OPTIONS_MIN_SIZE);
        if (irc) return irc;
    }
    const strobe_ondemand_options *opt = &full;
    char dir[256], err[512];
    pthread_mutex_lock(&od.lock);
    if (od.started) {
        pthread_mutex_unlock(&od.lock);
        return STROBE_EBUSY;
    }
    if (!once) {
        once = 1;
        pthread_atfork(NULL, NULL, fork_child);
        atexit(at_exit);
    }
    if (!od.client_set) od.client = default_client;
    int rc = STROBE_EINVAL;
    if (opt && opt->socket_dir) {
        if (snprintf(dir, sizeof dir, "%s", opt->socket_dir) >= (int)sizeof dir) goto fail_msg;
    } else if (strobe__od_socket_dir(dir, sizeof dir) != 0) {
        snprintf(err, sizeof err, "the socket folder's path is too long");
        goto fail;
    }
    if (strobe__od_prepare_dir(dir, 1, err, sizeof err) != 0) goto fail;
    free(od.output_dirs);
    od.output_dirs = NULL;
    if (opt && opt->output_dirs && (od.output_dirs = strdup(opt->output_dirs)) == NULL) {
        rc = STROBE_ENOMEM;
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (snprintf(od.sock_path, sizeof od.sock_path, "%s/%ld.sock", dir, (long)getpid()) >=
        (int)sizeof od.sock_path) {
    fail_msg:
        snprintf(err, sizeof err, "the socket path under %s is too long", dir);
        goto fail;
    }
    rc = STROBE_ESYS;
    if (pipe2(od.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, sizeof err, "pipe: %s", strerror(errno));
        goto fail;
    }
    od.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (od.listen_fd < 0) {
        snprintf(err, sizeof err, "socket: %s", strerror(errno));
        goto fail;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, od.sock_path, strlen(od.sock_path) + 1);
    /* A file of the same name is a socket a dead process with this pid left behind. */
    unlink(od.sock_path);
    if (bind(od.listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        chmod(od.sock_path, 0600) != 0 || listen(od.listen_fd, MAX_CONNS) != 0) {
        snprintf(err, sizeof err, "cannot serve %s: %s", od.sock_path, strerror(errno));
        unlink(od.sock_path);
        goto fail;
    }
    od.stopping = 0;
    dyno_open();
    if (pthread_create(&od.thread, NULL, endpoint_main, NULL) != 0) {
        snprintf(err, sizeof err, "cannot start the endpoint's thread");
        unlink(od.sock_path);
        goto fail;
    }
    /* A name that shows in top -H and /proc/PID/task/TID/comm. */
    pthread_setname_np(od.thread, "strobe-ondemand");
    od.started = 1;
    pthread_mutex_unlock(&od.lock);
    strobe__log(STROBE_LOG_INFO, "on-demand: serving %s", od.sock_path);
    return 0;
fail:
    strobe__log(STROBE_LOG_ERROR, "on-demand: not started: %s", err);
    close_fds();
    od.sock_path[0] = '\0';
    pthread_mutex_unlock(&od.lock);
    return rc;
}

/* Stops the endpoint; a job still running is ended now and written before the thread goes, with
 * a note that says `what` ("the process exited") ended it. */
static int stop_endpoint(const char *what) {
    pthread_mutex_lock(&od.lock);
    if (!od.started) {
        pthread_mutex_unlock(&od.lock);
        return STROBE_ENOSESSION;
    }
    if (od.state == JOB_ITER || od.state == JOB_DURATION || od.state == JOB_ARMED ||
        od.state == JOB_MEMORY) {
        int armed = od.state == JOB_ARMED;
        od.deadline_ms = 0;
        on_deadline();
        if (armed) /* the trace never started: not the timeout's message */
            snprintf(od.job_msg, sizeof od.job_msg, "%s before step %llu was reached", what,
                     (unsigned long long)od.start_at);
        else if (od.job_rc == 0 && od.state == JOB_FINISHING && !od.memory)
            snprintf(od.job_msg, sizeof od.job_msg, "%s during the trace", what);
    }
    pthread_mutex_unlock(&od.lock);
    finish_job();
    pthread_mutex_lock(&od.lock);
    od.stopping = 1;
    wake_endpoint();
    pthread_t th = od.thread;
    pthread_mutex_unlock(&od.lock);
    pthread_join(th, NULL);
    pthread_mutex_lock(&od.lock);
    for (int i = 0; i < MAX_CONNS; i++)
        if (od.conns[i]) drop_conn(i);
    if (od.waiter >= 0) close(od.waiter);
    od.waiter = -1;
    unlink(od.sock_path);
    od.sock_path[0] = '\0';
    close_fds();
    od.started = 0;
    pthread_mutex_unlock(&od.lock);
    return 0;
}

int strobe_ondemand_stop(void) {
    return stop_endpoint("the endpoint was stopped");
}

int strobe_ondemand_socket_path(char *buf, size_t cap) {
    pthread_mutex_lock(&od.lock);
    int rc = 0;
    if (!od.started)
        rc = STROBE_ENOSESSION;
    else if (buf == NULL || strlen(od.sock_path) >= cap)
        rc = STROBE_EINVAL;
    else
        strcpy(buf, od.sock_path);
    pthread_mutex_unlock(&od.lock);
    return rc;
}

/* STROBE_ONDEMAND=1: serve from the moment the library is loaded. With the static library, this
 * object is linked because hotpath.c refers to strobe__od_autostart (every instrumented program
 * links hotpath.o). */
__attribute__((constructor)) static void ondemand_from_env(void) {
    const char *v = getenv("STROBE_ONDEMAND");
    /* dynolog's switch (KINETO_USE_DAEMON, or STROBE_DYNOLOG=1) starts the endpoint too, so that
     * `dyno gputrace` reaches a process started as a libkineto user would start it. */
    if ((v == NULL || strcmp(v, "1") != 0) && !strobe__dyno_enabled()) return;
    strobe_ondemand_options opt;
    strobe_ondemand_options_init(&opt);
    const char *dirs = getenv("STROBE_ONDEMAND_DIRS");
    if (dirs && dirs[0]) opt.output_dirs = dirs;
    strobe_ondemand_start(&opt);
}

/* Referenced from hotpath.c only so that a static link keeps this object and its constructor. */
int strobe__od_autostart;
