/* dynolog.c: the on-demand endpoint's client side of dynolog's IPC protocol, the one libkineto
 * speaks, so that `dyno gputrace --pids PID` traces a process that uses strobe (od_internal.h).
 *
 * Contents: the wire format; enabling (environment); the socket; sending "ctxt" and "req";
 * receiving and checking a datagram; reading a libkineto on-demand config into a trigger.
 *
 * What this file relies on, learned from the public sources (our own code, no copy):
 *   - pytorch/kineto libkineto/ipcfabric/Endpoint.h (the same file as dynolog's
 *     dynolog/src/ipcfabric/Endpoint.h): connectionless AF_UNIX SOCK_DGRAM sockets with abstract
 *     names. An address is sun_path[0] = '\0', the name, then one more '\0' that is part of the
 *     address: its length is sizeof(sa_family_t) + strlen(name) + 2. Sends are MSG_DONTWAIT;
 *     ECONNREFUSED means the peer is not there (yet).
 *   - libkineto/ipcfabric/FabricManager.h (dynolog's likewise): a message is one datagram, a
 *     Metadata header { size_t size; char type[32]; } followed by `size` bytes of payload. The
 *     receiver peeks the header, then reads header and payload; it replies to the sender's name.
 *   - libkineto/ipcfabric/Utils.h (dynolog/src/ipcfabric/Utils.h): the payloads
 *     LibkinetoContext { int32_t gpu; pid_t pid; int64_t jobid; } (type "ctxt") and
 *     LibkinetoRequest { int type; int n; int64_t jobid; int32_t pids[n]; } (type "req").
 *   - libkineto/src/IpcFabricConfigClient.cpp: the daemon's name is "dynolog"; the client's own
 *     is "dynoconfigclient" followed by a random UUID v4; jobid is $SLURM_JOB_ID (0 when unset);
 *     pids are the process and its ancestors, the process first. IpcFabricConfigClient.h: the
 *     request's type is a bit set, EVENTS = 1, ACTIVITIES = 2.
 *   - dynolog/src/tracing/IPCMonitor.cpp: the daemon answers "ctxt" with a "ctxt" message whose
 *     payload is an int32 (the count of processes registered on that GPU), and "req" with a
 *     "req" message whose payload is the config text, without a NUL (empty: nothing to do).
 *     dynolog/src/LibkinetoConfigManager.cpp: a config is handed out once, to the first poll that
 *     asks for its kind (ACTIVITIES), and a process that stops polling is forgotten after 60 s.
 *   - libkineto/src/DaemonConfigLoader.cpp and ConfigLoader.cpp: libkineto polls every
 *     ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS (5 s by default) with EVENTS set while no event
 *     profiler runs and ACTIVITIES set while no trace runs; a trace in progress therefore shows
 *     to the daemon as polls without ACTIVITIES, and the end of the trace as their return. That
 *     is all the "report" libkineto makes: it sends no completion message; it logs where the
 *     trace went.
 *   - libkineto/src/Config.cpp: the keys (ACTIVITIES_LOG_FILE, ACTIVITIES_DURATION_MSECS,
 *     ACTIVITIES_DURATION_SECS, ACTIVITIES_ITERATIONS, PROFILE_START_ITERATION,
 *     PROFILE_START_ITERATION_ROUNDUP, PROFILE_START_TIME, ACTIVITY_TYPES,
 *     PROFILE_REPORT_INPUT_SHAPES, PROFILE_PROFILE_MEMORY, PROFILE_WITH_STACK, PROFILE_WITH_FLOPS,
 *     PROFILE_WITH_MODULES, REQUEST_TRACE_ID); KINETO_USE_DAEMON in the environment turns the
 *     daemon client on; the trace goes to ACTIVITIES_LOG_FILE with "_PID" put before its first
 *     ".pt.trace.json", else before its first ".json" (what `dyno gputrace` prints as the file).
 *   - facebookincubator/dynolog cli/src/commands/gputrace.rs: the config `dyno gputrace` sends:
 *     ACTIVITIES_LOG_FILE, then PROFILE_START_TIME and ACTIVITIES_DURATION_MSECS, or
 *     PROFILE_START_ITERATION=0, PROFILE_START_ITERATION_ROUNDUP and ACTIVITIES_ITERATIONS, then
 *     the five PROFILE_* options as true/false.
 *
 * Trust. An abstract socket has no file permissions: any process in the network namespace can
 * send to ours. Every datagram is checked: its sender's credentials (SO_PASSCRED) must be this
 * user or root (dynolog usually runs as root), its address must be the daemon's name, and its
 * size must match its header; anything else is counted, logged and dropped. The output path then
 * goes through the same checks as `strobe trigger`'s (outpath.c). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "od_internal.h"
#include "strobe/error.h"
#include "strobe/session.h"

/* The header of every message (FabricManager.h's Metadata). */
#define DYNO_TYPE_SIZE 32
typedef struct dyno_meta {
    size_t size;
    char type[DYNO_TYPE_SIZE];
} dyno_meta;

/* "ctxt" (Utils.h's LibkinetoContext). */
typedef struct dyno_ctxt {
    int32_t gpu;
    int32_t pid; /* pid_t on Linux */
    int64_t jobid;
} dyno_ctxt;

/* "req" (Utils.h's LibkinetoRequest), with room for the pids. */
#define DYNO_MAX_PIDS 32
typedef struct dyno_req {
    int32_t type;
    int32_t n;
    int64_t jobid;
    int32_t pids[DYNO_MAX_PIDS];
} dyno_req;

_Static_assert(sizeof(dyno_meta) == sizeof(size_t) + DYNO_TYPE_SIZE, "Metadata layout");
_Static_assert(sizeof(dyno_ctxt) == 16, "LibkinetoContext layout");
_Static_assert(offsetof(dyno_req, pids) == 16, "LibkinetoRequest layout");

/* ---- enabling -------------------------------------------------------------------------------- */

int strobe__dyno_enabled(void) {
    /* STROBE_DYNOLOG decides when set: 1 on, 0 off (e.g. to leave a process's libkineto alone to
     * answer the daemon). Unset, libkineto's own switch decides: KINETO_USE_DAEMON set (libkineto
     * only checks that it is set) and not "0". */
    const char *s = getenv("STROBE_DYNOLOG");
    if (s && s[0]) return strcmp(s, "0") != 0;
    const char *k = getenv("KINETO_USE_DAEMON");
    return k != NULL && strcmp(k, "0") != 0;
}

int64_t strobe__dyno_interval_ms(void) {
    const char *s = getenv("STROBE_DYNOLOG_POLL_MS");
    if (s && s[0]) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (*end == '\0' && v >= 10 && v <= 3600LL * 1000) return v;
    }
    return 5000; /* libkineto's ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS default */
}

const char *strobe__dyno_daemon_name(void) {
    const char *s = getenv("STROBE_DYNOLOG_NAME");
    if (s && s[0] && strlen(s) <= STROBE__DYNO_MAX_NAME) return s;
    return "dynolog";
}

/* ---- the socket ------------------------------------------------------------------------------ */

/* Fills an abstract address for `name` as Endpoint.h does. @return its length. */
static socklen_t set_addr(struct sockaddr_un *sa, const char *name) {
    size_t n = strlen(name);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, n); /* sun_path[0] and sun_path[n + 1] stay '\0' */
    return (socklen_t)(sizeof(sa_family_t) + n + 2);
}

/* 16 random bytes, from the kernel when it can, else from the clock and the pid. */
static void random_bytes(unsigned char *b, size_t n) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, b, n) : -1;
    if (fd >= 0) close(fd);
    if (got == (ssize_t)n) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
}

/* The parent of `pid` from /proc/PID/stat, or 0. */
static int32_t parent_of(int32_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it. */
    char *p = strrchr(buf, ')');
    long ppid = 0;
    if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1) return 0;
    return (int32_t)ppid;
}

/* This process and its ancestors, this one first, as libkineto sends them in every poll (`dyno
 * gputrace --pids` may name a launcher's pid). Taken once when the socket opens, as libkineto
 * takes them once; a forked child opens its own. */
static int32_t chain[DYNO_MAX_PIDS];
static int32_t chain_n;

int strobe__dyno_open(char *name, size_t cap, char *err, size_t errcap) {
    chain_n = 0;
    for (int32_t p = (int32_t)getpid(); p > 0 && chain_n < DYNO_MAX_PIDS; p = parent_of(p)) {
        chain[chain_n++] = p;
        if (p == 1) break;
    }
    /* "dynoconfigclient" and a UUID v4, as libkineto names its end. */
    unsigned char u[16];
    random_bytes(u, sizeof u);
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    char uuid[40];
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) uuid[o++] = '-';
        o += snprintf(uuid + o, sizeof uuid - (size_t)o, "%02x", u[i]);
    }
    if (snprintf(name, cap, "dynoconfigclient%s", uuid) >= (int)cap) {
        strobe__od_errf(err, errcap, "the client's name does not fit");
        return STROBE_ERANGE;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        strobe__od_errf(err, errcap, "socket: %s", strerror(errno));
        return STROBE_ESYS;
    }
    int one = 1;
    struct sockaddr_un sa;
    socklen_t len = set_addr(&sa, name);
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, len) != 0) {
        strobe__od_errf(err, errcap, "cannot bind @%s: %s", name, strerror(errno));
        close(fd);
        return STROBE_ESYS;
    }
    return fd;
}

/* Sends one message without waiting. @return 0, or STROBE_ESYS with errno kept (ECONNREFUSED and
 * ENOENT: no daemon; EAGAIN: its queue is full). */
static int send_msg(int fd, const char *daemon, const char *type, const void *payload,
                    size_t size) {
    dyno_meta m;
    memset(&m, 0, sizeof m);
    m.size = size;
    snprintf(m.type, sizeof m.type, "%s", type);
    struct iovec iov[2] = {{&m, sizeof m}, {(void *)payload, size}};
    struct sockaddr_un sa;
    struct msghdr mh = {0};
    mh.msg_name = &sa;
    mh.msg_namelen = set_addr(&sa, daemon);
    mh.msg_iov = iov;
    mh.msg_iovlen = 2;
    return sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? STROBE_ESYS : 0;
}

static int64_t job_id(void) {
    const char *id = getenv("SLURM_JOB_ID");
    return id ? strtoll(id, NULL, 10) : 0;
}

int strobe__dyno_send_ctxt(int fd, const char *daemon, int32_t gpu) {
    dyno_ctxt c = {gpu, (int32_t)getpid(), job_id()};
    return send_msg(fd, daemon, "ctxt", &c, sizeof c);
}

int strobe__dyno_send_req(int fd, const char *daemon, int32_t type) {
    dyno_req r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.jobid = job_id();
    r.n = chain_n;
    memcpy(r.pids, chain, sizeof(int32_t) * (size_t)chain_n);
    return send_msg(fd, daemon, "req", &r, offsetof(dyno_req, pids) + sizeof(int32_t) * r.n);
}

/* ---- receiving ------------------------------------------------------------------------------- */

int strobe__dyno_recv(int fd, const char *daemon, int *kind, char *payload, size_t cap, size_t *len,
                      char *err, size_t errcap) {
    dyno_meta m;
    struct iovec iov[2] = {{&m, sizeof m}, {payload, cap}};
    struct sockaddr_un sa;
    union {
        char buf[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {0};
    mh.msg_name = &sa;
    mh.msg_namelen = sizeof sa;
    mh.msg_iov = iov;
    mh.msg_iovlen = 2;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    memset(&sa, 0, sizeof sa);
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
        strobe__od_errf(err, errcap, "recvmsg: %s", strerror(errno));
        return STROBE_ESYS;
    }
    /* Descriptors passed to us (SCM_RIGHTS) are closed at once: the protocol passes none. */
    const struct ucred *cred = NULL;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct ucred)))
            cred = (const struct ucred *)CMSG_DATA(c);
        else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
                close(((int *)CMSG_DATA(c))[k]);
    }
    if (cred == NULL || (cred->uid != geteuid() && cred->uid != 0)) {
        strobe__od_errf(err, errcap, "a message from uid %ld (pid %ld), neither this user nor root",
                        cred ? (long)cred->uid : -1L, cred ? (long)cred->pid : -1L);
        return STROBE_EINVAL;
    }
    size_t dn = strlen(daemon);
    size_t alen = mh.msg_namelen > offsetof(struct sockaddr_un, sun_path)
                      ? mh.msg_namelen - offsetof(struct sockaddr_un, sun_path)
                      : 0;
    /* The daemon's address is '\0', its name, and maybe the trailing '\0' Endpoint.h adds. */
    if (alen < dn + 1 || alen > dn + 2 || sa.sun_path[0] != '\0' ||
        memcmp(sa.sun_path + 1, daemon, dn) != 0 || (alen == dn + 2 && sa.sun_path[dn + 1])) {
        strobe__od_errf(err, errcap, "a message from pid %ld, not from the daemon @%s",
                        (long)cred->pid, daemon);
        return STROBE_EINVAL;
    }
    if ((size_t)n < sizeof m) {
        strobe__od_errf(err, errcap, "a message of %zd bytes, shorter than its header (%zu)", n,
                        sizeof m);
        return STROBE_EFORMAT;
    }
    if ((mh.msg_flags & MSG_TRUNC) || m.size != (size_t)n - sizeof m) {
        strobe__od_errf(err, errcap, "a message whose header says %zu bytes but that carries %zd",
                        m.size, n - (ssize_t)sizeof m);
        return STROBE_EFORMAT;
    }
    if (memchr(m.type, '\0', sizeof m.type) == NULL) m.type[sizeof m.type - 1] = '\0';
    if (strcmp(m.type, "ctxt") == 0 && m.size == sizeof(int32_t)) {
        *kind = STROBE__DYNO_CTXT;
    } else if (strcmp(m.type, "req") == 0) {
        *kind = STROBE__DYNO_REQ;
    } else {
        char shown[DYNO_TYPE_SIZE * 4 + 1];
        size_t o = 0;
        for (size_t i = 0; m.type[i] && i < sizeof m.type; i++)
            o += (size_t)snprintf(shown + o, sizeof shown - o,
                                  m.type[i] >= 0x20 && m.type[i] < 0x7f ? "%c" : "\\x%02x",
                                  (unsigned char)m.type[i]);
        shown[o] = '\0';
        strobe__od_errf(err, errcap, "a message of unknown type \"%s\" (%zu bytes)", shown, m.size);
        return STROBE_EFORMAT;
    }
    *len = m.size;
    return 1;
}

/* ---- reading a config ------------------------------------------------------------------------ */

/* A decimal in [0, max]. @return 0 or -1. */
static int num(const char *v, int64_t max, int64_t *out) {
    if (v[0] == '\0' || strspn(v, "0123456789") != strlen(v) || strlen(v) > 18) return -1;
    long long x = strtoll(v, NULL, 10);
    if (x > max) return -1;
    *out = x;
    return 0;
}

/* libkineto's toBool: "true" or "1" (any case for the word), else false. */
static int is_true(const char *v) {
    return strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0;
}

/* The activity types that need the CUDA backend (libkineto's ActivityType names). */
static int gpu_activity(const char *t) {
    static const char *const gpu[] = {
        "kernel",      "gpu_memcpy",          "gpu_memset", "concurrent_kernel", "cuda_runtime",
        "cuda_driver", "gpu_user_annotation", "cuda_sync",  "gpu_pm_counter"};
    for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++)
        if (strcasecmp(t, gpu[i]) == 0) return 1;
    return 0;
}

/* The file libkineto writes for ACTIVITIES_LOG_FILE: "_PID" before the first ".pt.trace.json",
 * else before the first ".json"; the name unchanged when it has neither. @return 0, or -1 when it
 * does not fit. */
static int with_pid(const char *path, char *out, size_t cap) {
    const char *at = strstr(path, ".pt.trace.json");
    if (at == NULL) at = strstr(path, ".json");
    int w = at ? snprintf(out, cap, "%.*s_%ld%s", (int)(at - path), path, (long)getpid(), at)
               : snprintf(out, cap, "%s", path);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

int strobe__dyno_parse_config(const char *text, size_t len, strobe__od_request *rq,
                              int64_t *start_step, char *note, size_t notecap, char *err,
                              size_t errcap) {
    memset(rq, 0, sizeof *rq);
    rq->verb = STROBE__OD_TRIGGER;
    rq->roundup = 1;
    rq->activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA; /* libkineto: every type */
    *start_step = -1;
    if (note && notecap) note[0] = '\0';
    int activity_keys = 0, have_file = 0;
    int64_t start_time = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + 1;
        char buf[STROBE__OD_MAX_PATH + 64];
        /* Trim spaces, tabs and a '\r' at both ends, as libkineto's parser does. */
        while (ll && (line[0] == ' ' || line[0] == '\t'))
            line++, ll--;
        while (ll && (line[ll - 1] == ' ' || line[ll - 1] == '\t' || line[ll - 1] == '\r'))
            ll--;
        if (ll == 0 || line[0] == '#') continue;
        if (ll >= sizeof buf || memchr(line, '\0', ll) != NULL) {
            strobe__od_errf(err, errcap, "a config line of %zu bytes, too long or with a NUL byte",
                            ll);
            return STROBE_EFORMAT;
        }
        memcpy(buf, line, ll);
        buf[ll] = '\0';
        char *eq = strchr(buf, '=');
        if (eq == NULL) {
            strobe__od_errf(err, errcap, "a config line without '=': %.80s", buf);
            return STROBE_EFORMAT;
        }
        *eq = '\0';
        char *key = buf, *v = eq + 1;
        for (char *e = eq; e > key && (e[-1] == ' ' || e[-1] == '\t');)
            *--e = '\0';
        while (*v == ' ' || *v == '\t')
            v++;
        int64_t x = 0;
        int bad = 0;
        if (strcmp(key, "ACTIVITIES_LOG_FILE") == 0) {
            if (with_pid(v, rq->output, sizeof rq->output) != 0) {
                strobe__od_errf(err, errcap, "ACTIVITIES_LOG_FILE is too long");
                return STROBE_ERANGE;
            }
            have_file = activity_keys = 1;
        } else if (strcmp(key, "ACTIVITIES_DURATION_MSECS") == 0) {
            bad = num(v, STROBE__OD_MAX_DURATION_MS, &x) != 0;
            rq->duration_ms = x;
            activity_keys = 1;
        } else if (strcmp(key, "ACTIVITIES_DURATION_SECS") == 0) {
            bad = num(v, STROBE__OD_MAX_DURATION_MS / 1000, &x) != 0;
            rq->duration_ms = x * 1000;
            activity_keys = 1;
        } else if (strcmp(key, "ACTIVITIES_ITERATIONS") == 0) {
            bad = num(v, STROBE__OD_MAX_ITERATIONS, &x) != 0;
            rq->iterations = x;
            activity_keys = 1;
        } else if (strcmp(key, "PROFILE_START_ITERATION") == 0) {
            /* -1 is libkineto's "not set". */
            if (strcmp(v, "-1") != 0) bad = num(v, INT32_MAX, start_step) != 0;
        } else if (strcmp(key, "PROFILE_START_ITERATION_ROUNDUP") == 0) {
            if (strcmp(v, "-1") != 0) {
                bad = num(v, STROBE__OD_MAX_ITERATIONS, &x) != 0;
                rq->roundup = x > 0 ? x : 1;
            }
        } else if (strcmp(key, "PROFILE_START_TIME") == 0) {
            bad = num(v, INT64_MAX / 2, &start_time) != 0;
        } else if (strcmp(key, "ACTIVITY_TYPES") == 0) {
            rq->activities = STROBE_ACTIVITY_CPU;
            char *save = NULL;
            for (char *t = strtok_r(v, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
                if (gpu_activity(t)) rq->activities |= STROBE_ACTIVITY_CUDA;
        } else if (strcmp(key, "PROFILE_REPORT_INPUT_SHAPES") == 0 ||
                   strcmp(key, "CLIENT_INTERFACE_ENABLE_OP_INPUTS_COLLECTION") == 0) {
            rq->flags |= is_true(v) ? STROBE__OD_RECORD_SHAPES : 0;
        } else if (strcmp(key, "PROFILE_PROFILE_MEMORY") == 0) {
            rq->flags |= is_true(v) ? STROBE__OD_PROFILE_MEMORY : 0;
        } else if (strcmp(key, "PROFILE_WITH_STACK") == 0 ||
                   strcmp(key, "PYTHON_STACK_TRACE") == 0) {
            rq->flags |= is_true(v) ? STROBE__OD_WITH_STACK : 0;
        } else if (strcmp(key, "PROFILE_WITH_FLOPS") == 0) {
            rq->flags |= is_true(v) ? STROBE__OD_WITH_FLOPS : 0;
        } else if (strcmp(key, "PROFILE_WITH_MODULES") == 0) {
            rq->flags |= is_true(v) ? STROBE__OD_WITH_MODULES : 0;
        }
        /* Other keys (REQUEST_TRACE_ID, the event profiler's, logging levels) change nothing
         * here: libkineto, too, goes on past keys a config does not use. */
        if (bad) {
            strobe__od_errf(err, errcap, "%s=%.40s is not a number in range", key, v);
            return STROBE_EFORMAT;
        }
    }
    if (!activity_keys) return 0; /* an empty answer, or an event profiler's config */
    if (!have_file) {
        /* libkineto's default, /tmp/libkineto_activities_PID.json. */
        snprintf(rq->output, sizeof rq->output, "/tmp/libkineto_activities_%ld.json",
                 (long)getpid());
    }
    if (rq->iterations > 0) {
        rq->duration_ms = 0; /* libkineto: iterations win over a duration */
    } else if (rq->duration_ms == 0) {
        rq->duration_ms = 500; /* libkineto's default trace duration */
    }
    if (start_time > 0 && note && notecap)
        strobe__od_errf(note, notecap, "PROFILE_START_TIME is not supported: the trace starts now");
    return 1;
}
