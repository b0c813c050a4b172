/* nccl.c: strobe as an NCCL profiler plugin (nccl.h, nccl_profiler_abi.h).
 *
 * What NCCL's events become:
 * - Events that begin and end on the thread that made them, nested there — the API calls (v5:
 *   group, collective and p2p API calls, kernel launches), the group of a launch and its
 *   collective and p2p tasks — are ranges on that thread ("cpu_op"), in the running session,
 *   named "nccl:all_reduce", "nccl:send", "nccl:group", ... Collectives and point-to-point calls
 *   carry torch's record_param_comms args ("Collective name", "In msg nelems", "Out msg nelems",
 *   "Group size", "dtype", "Process Group Name", "Rank", and "Seq", "Root", "Dst Rank" /
 *   "Src Rank" where NCCL gives them) plus "Comm hash", "Algorithm", "Protocol", "Channels".
 *   With v5 the API call is "nccl:all_reduce" and its task, enqueued at the group's launch,
 *   "nccl:all_reduce:task". NCCL stops a launch's tasks in the order it started them; a task
 *   stopped while one started after it is still open ends with that one (tasks of one launch
 *   nest in start order), so that the thread's ranges always nest.
 * - Events of NCCL's proxy thread and of the kernel's channels (proxy ops, proxy steps, proxy
 *   control, kernel channels, network plugin events) overlap without nesting and may end on
 *   another thread: each is recorded when it stops as a backend event with its start and stop
 *   times, on a track of its own: "NCCL proxy ch<C> send|recv" (ops), the same with
 *   " step slot <S>" (steps, S = step % 8: NCCL keeps at most 8 in flight per channel; each
 *   step's states are its children there: "send GPU wait", "send peer wait", "send network
 *   wait", "recv network wait", "recv flush wait", "recv GPU wait"),
 *   "NCCL kernel ch<C>", "NCCL proxy ctrl", "NCCL net". The "Debug handle" of an op or kernel
 *   channel is its collective's sequence number (-1: unknown).
 * A task stays alive (reference counted) until the proxy ops started under it stop, so that an op
 * knows its collective; parents are looked up among the live handles, never dereferenced blindly
 * (a handle from another process — PXN — is not among them).
 *
 * Sessions: events are recorded into the session that runs in the process (one the program
 * started, or `strobe record`'s). When none runs at the first communicator's init (and the
 * library is not `strobe record`'s: strobe__nccl_allow_own_session), the plugin starts one and,
 * when the last communicator is finalized (or at exit), stops it and writes it to
 * $STROBE_NCCL_OUTPUT (default
 * "strobe_nccl_%p.json"; %p: pid, %r: rank, %%: '%'). The rank and size of the largest communicator
 * become the trace's "distributedInfo" (backend "nccl", with "pg_count" and "pg_config": one entry
 * per communicator), and "strobe_nccl" counts what the plugin saw and what it could not use.
 *
 * Contents: 1. live handles, 2. names and args, 3. communicators and sessions, 4. events,
 * 5. the version entry points. */
#include "nccl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/hooks.h"
#include "strobe/backend.h"
#include "strobe/error.h"
#include "strobe/result.h"
#include "strobe/session.h"
#include "trace/kineto.h"

#define NAME_MAX_ 96
#define ARGS_CAP 1024
#define THREAD_DEPTH 4096 /* open ranges per thread at most */
#define MAX_COMMS 64
#define STEP_STATES 6

/* The event kinds that are ranges on their thread. */
#define THREAD_TYPES                                                                               \
    (NCCL_EV_GROUP | NCCL_EV_COLL | NCCL_EV_P2P | NCCL_EV_GROUP_API | NCCL_EV_COLL_API |           \
     NCCL_EV_P2P_API | NCCL_EV_KERNEL_LAUNCH)
#define ASYNC_TYPES                                                                                \
    (NCCL_EV_PROXY_OP | NCCL_EV_PROXY_STEP | NCCL_EV_PROXY_CTRL | NCCL_EV_KERNEL_CH |              \
     NCCL_EV_NET_PLUGIN)

typedef struct nc_ctx {
    uint64_t comm_hash;
    char comm_name[64];
    int rank, n_ranks, n_nodes; /* -1: not given (v2, v3) */
    int version;
    int live;
} nc_ctx;

typedef struct nc_ev {
    uint64_t type;
    nc_ctx *ctx;
    struct nc_ev *parent; /* holds a reference while set */
    int refs;             /* the handle (until stopped), a thread's stack, each live child */
    int stopped;
    int retired; /* tasks: 1 kept in the ring for their proxy ops, 2 pushed out (ev_release) */
    int64_t start_ns;
    int64_t tid;  /* thread ranges: the thread whose stack holds it; 0: none */
    int on_stack; /* a range was begun on tid's thread */
    char func[32];
    int64_t seq; /* collective's sequence number; -1: unknown */
    /* async events */
    int channel, is_send, peer, step, state;
    /* Proxy steps: the states they went through and when (the last STEP_STATES kept). */
    int n_states;
    int st_state[STEP_STATES];
    int64_t st_ns[STEP_STATES];
} nc_ev;

/* ---- 1. live handles: a set of pointers (open addressing, tombstones), under `lock` -------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *set_slots;
static size_t set_cap, set_used, set_count; /* used: live + tombstones */
#define TOMB ((uintptr_t)1)

static size_t set_hash(uintptr_t p) {
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17);
}

static int set_has(const void *p) {
    if (set_cap == 0 || p == NULL) return 0;
    for (size_t i = set_hash((uintptr_t)p) & (set_cap - 1);; i = (i + 1) & (set_cap - 1)) {
        if (set_slots[i] == 0) return 0;
        if (set_slots[i] == (uintptr_t)p) return 1;
    }
}

static int set_add(const void *p) {
    if ((set_used + 1) * 2 > set_cap) {
        size_t cap = set_cap ? set_cap : 64;
        while ((set_count + 1) * 4 > cap)
            cap *= 2;
        uintptr_t *n = calloc(cap, sizeof *n);
        if (n == NULL) return -1;
        for (size_t k = 0; k < set_cap; k++) {
            uintptr_t v = set_slots[k];
            if (v == 0 || v == TOMB) continue;
            size_t i = set_hash(v) & (cap - 1);
            while (n[i])
                i = (i + 1) & (cap - 1);
            n[i] = v;
        }
        free(set_slots);
        set_slots = n;
        set_cap = cap;
        set_used = set_count;
    }
    size_t i = set_hash((uintptr_t)p) & (set_cap - 1);
    while (set_slots[i] != 0 && set_slots[i] != TOMB)
        i = (i + 1) & (set_cap - 1);
    if (set_slots[i] == 0) set_used++;
    set_slots[i] = (uintptr_t)p;
    set_count++;
    return 0;
}

static void set_del(const void *p) {
    if (set_cap == 0) return;
    for (size_t i = set_hash((uintptr_t)p) & (set_cap - 1);; i = (i + 1) & (set_cap - 1)) {
        if (set_slots[i] == 0) return;
        if (set_slots[i] == (uintptr_t)p) {
            set_slots[i] = TOMB;
            set_count--;
            return;
        }
    }
}

/* What the plugin saw and could not use (under lock). */
static struct { uint64_t events, unknown_types, unknown_handles, not_recorded, states; } stats;

/* Tasks (collectives, p2p) whose last reference went are kept a while: NCCL's proxy thread
 * starts their proxy ops after it stopped them, and an op names its collective. */
#define RETIRED 1024
static struct nc_ev *retired[RETIRED];
static size_t retired_next;

static void ev_free(nc_ev *e);

/* Under lock: drops a reference; frees the event (and drops its parent's) at the last. */
static void ev_release(nc_ev *e) {
    if (e == NULL || --e->refs > 0) return;
    if (!(e->type & (NCCL_EV_COLL | NCCL_EV_P2P)) || e->retired == 2) {
        ev_free(e);
    } else if (e->retired == 0) {
        /* Kept in the ring until RETIRED later tasks push it out (its children's references
         * come and go meanwhile). */
        e->retired = 1;
        nc_ev *old = retired[retired_next];
        retired[retired_next] = e;
        retired_next = (retired_next + 1) % RETIRED;
        if (old) {
            old->retired = 2; /* out of the ring: freed at its last reference */
            if (old->refs == 0) ev_free(old);
        }
    }
}

static void ev_free(nc_ev *e) {
    nc_ev *p = e->parent;
    set_del(e);
    free(e);
    ev_release(p);
}

/* ---- 2. names and args ----------------------------------------------------------------- */

/* Interned sites, one per range name (never freed: records point at them). */
typedef struct nc_site {
    strobe_site site;
    struct nc_site *next;
    char name[];
} nc_site;
static nc_site *sites;

/* Under lock. */
static const strobe_site *site_of(const char *name) {
    for (nc_site *s = sites; s; s = s->next)
        if (strcmp(s->name, name) == 0) return &s->site;
    size_t n = strlen(name);
    nc_site *s = calloc(1, sizeof *s + n + 1);
    if (s == NULL) return NULL;
    memcpy(s->name, name, n + 1);
    s->site.name = s->name;
    s->site.file = "nccl";
    s->site.scope = STROBE_RECORD_SCOPE_FUNCTION;
    s->next = sites;
    sites = s;
    return &s->site;
}

/* "AllReduce" -> "all_reduce". */
static void snake(char *out, size_t cap, const char *func) {
    size_t o = 0;
    for (size_t i = 0; func[i] && o + 2 < cap; i++) {
        char c = func[i];
        if (c >= 'A' && c <= 'Z') {
            if (i > 0) out[o++] = '_';
            c = (char)(c - 'A' + 'a');
        }
        out[o++] = c;
    }
    out[o] = '\0';
}

/* torch's "Collective name" of an NCCL function. */
static const char *coll_name(const char *func, char *buf, size_t cap) {
    static const char *const map[][2] = {
        {"AllReduce", "allreduce"}, {"AllGather", "allgather"}, {"ReduceScatter", "reduce_scatter"},
        {"Broadcast", "broadcast"}, {"Reduce", "reduce"},       {"Send", "send"},
        {"Recv", "recv"},           {"AllToAll", "all_to_all"}, {"AlltoAll", "all_to_all"},
        {"Gather", "gather"},       {"Scatter", "scatter"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(func, map[i][0]) == 0) return map[i][1];
    size_t o = 0;
    for (; func[o] && o + 1 < cap; o++)
        buf[o] = (char)(func[o] >= 'A' && func[o] <= 'Z' ? func[o] - 'A' + 'a' : func[o]);
    buf[o] = '\0';
    return buf;
}

/* torch's dtype name (c10::ScalarType) of an NCCL datatype name; unknown ones as they are. */
static const char *dtype_name(const char *dt) {
    static const char *const map[][2] = {{"ncclInt8", "Char"},
                                         {"ncclUint8", "Byte"},
                                         {"ncclInt32", "Int"},
                                         {"ncclUint32", "UInt32"},
                                         {"ncclInt64", "Long"},
                                         {"ncclUint64", "UInt64"},
                                         {"ncclFloat16", "Half"},
                                         {"ncclFloat32", "Float"},
                                         {"ncclFloat64", "Double"},
                                         {"ncclBfloat16", "BFloat16"},
                                         {"ncclFloat8e4m3", "Float8_e4m3fn"},
                                         {"ncclFloat8e5m2", "Float8_e5m2"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(dt, map[i][0]) == 0) return map[i][1];
    return dt;
}

/* An args list: pairs "key\0json\0" (core/hooks.h's strobe__begin_site_args). */
typedef struct nc_args {
    char b[ARGS_CAP];
    size_t len;
} nc_args;

static void arg_raw(nc_args *a, const char *key, const char *json) {
    size_t kl = strlen(key), jl = strlen(json);
    if (a->len + kl + jl + 2 > sizeof a->b) return;
    memcpy(a->b + a->len, key, kl + 1);
    memcpy(a->b + a->len + kl + 1, json, jl + 1);
    a->len += kl + jl + 2;
}
static void arg_i64(nc_args *a, const char *key, int64_t v) {
    /* By hand: snprintf was most of an event's cost. */
    char j[24], *p = j + sizeof j - 1;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    *p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    arg_raw(a, key, p);
}

/* out = a b c, cut to cap - 1 bytes. */
static void cat3(char *out, size_t cap, const char *a, const char *b, const char *c) {
    size_t o = 0;
    for (const char *const *p = (const char *const[]){a, b, c, NULL}; *p; p++)
        for (const char *q = *p; *q && o + 1 < cap; q++)
            out[o++] = *q;
    out[o] = '\0';
}

/* "0x" and 16 hex digits. */
static void hex64(char out[19], uint64_t v) {
    out[0] = '0';
    out[1] = 'x';
    for (int i = 0; i < 16; i++)
        out[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xf];
    out[18] = '\0';
}
static void arg_str(nc_args *a, const char *key, const char *s) {
    char j[200];
    size_t o = 0;
    j[o++] = '"';
    for (size_t i = 0; s[i] && o + 8 < sizeof j; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            j[o++] = '\\';
            j[o++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            o += (size_t)snprintf(j + o, sizeof j - o, "\\u%04x", c < 0x20 ? c : 0xfffd);
        } else {
            j[o++] = (char)c;
        }
    }
    j[o++] = '"';
    j[o] = '\0';
    arg_raw(a, key, j);
}

/* The fields of any version's coll / p2p / API descriptor that strobe uses. */
typedef struct nc_desc {
    uint64_t type;
    void *parent;
    int rank;
    const char *func, *datatype, *algo, *proto, *comm_name;
    uint64_t comm_hash;
    int has_comm;
    int64_t seq; /* -1: none */
    size_t count;
    int root, peer; /* -1: none */
    int n_channels; /* -1: none */
    const nccl_abi_proxy_op *proxy_op;
    int step, channel;
} nc_desc;

/* The Kineto args of a collective or p2p event. */
static void comm_args(nc_args *a, const nc_ctx *c, const nc_desc *d) {
    char buf[32];
    const char *func = d->func ? d->func : "Unknown";
    arg_str(a, "Collective name", coll_name(func, buf, sizeof buf));
    int n = c->n_ranks;
    int64_t cnt = (int64_t)d->count, in = cnt, out = cnt;
    if (n > 0) {
        if (!strcmp(func, "AllGather") || !strcmp(func, "Gather")) out = cnt * n;
        if (!strcmp(func, "ReduceScatter") || !strcmp(func, "Scatter")) in = cnt * n;
        if (!strcmp(func, "AllToAll") || !strcmp(func, "AlltoAll")) in = out = cnt * n;
    }
    arg_i64(a, "In msg nelems", in);
    arg_i64(a, "Out msg nelems", out);
    if (n > 0) arg_i64(a, "Group size", n);
    if (d->datatype) arg_str(a, "dtype", dtype_name(d->datatype));
    const char *pg = d->has_comm ? d->comm_name : c->comm_name;
    uint64_t hash = d->has_comm ? d->comm_hash : c->comm_hash;
    char hex[24];
    hex64(hex, hash);
    arg_str(a, "Process Group Name", pg && *pg ? pg : hex);
    arg_i64(a, "Rank", d->rank);
    if (d->seq >= 0) arg_i64(a, "Seq", d->seq);
    if (d->root >= 0 && d->type != NCCL_EV_P2P) arg_i64(a, "Root", d->root);
    if (d->peer >= 0) arg_i64(a, !strcmp(func, "Recv") ? "Src Rank" : "Dst Rank", d->peer);
    arg_str(a, "Comm hash", hex);
    if (d->algo) arg_str(a, "Algorithm", d->algo);
    if (d->proto) arg_str(a, "Protocol", d->proto);
    if (d->n_channels >= 0) arg_i64(a, "Channels", d->n_channels);
}

/* ---- 3. communicators and sessions --------------------------------------------------------- */

static nc_ctx *comms[MAX_COMMS];
static int n_comms;       /* live communicators */
static int own_session;   /* the plugin started the running session */
static int allow_own = 1; /* strobe__nccl_allow_own_session() */
static nccl_logger_fn logger;

static int64_t my_tid(void) {
    static __thread int64_t tid;
    if (tid == 0) tid = (int64_t)syscall(SYS_gettid);
    return tid;
}

/* Under lock: whether `c` is a live communicator's context. */
static int ctx_live(const nc_ctx *c) {
    for (int i = 0; c && i < MAX_COMMS; i++)
        if (comms[i] == c) return 1;
    return 0;
}

/* The communicator whose rank the trace carries: the largest (the world, usually). */
static const nc_ctx *main_comm(void) {
    const nc_ctx *m = NULL;
    for (int i = 0; i < MAX_COMMS; i++)
        if (comms[i] && comms[i]->n_ranks > 0 && (m == NULL || comms[i]->n_ranks > m->n_ranks))
            m = comms[i];
    return m;
}

/* Under lock: the trace's distributedInfo and strobe_nccl, when a session runs. */
static void put_metadata(void) {
    if (!strobe_is_running()) return;
    char j[4096];
    size_t o = 0;
    const nc_ctx *m = main_comm();
    if (m) {
        o += (size_t)snprintf(j + o, sizeof j - o,
                              "{\"backend\":\"nccl\",\"rank\":%d,\"world_size\":%d", m->rank,
                              m->n_ranks);
        int k = 0;
        for (int i = 0; i < MAX_COMMS; i++)
            k += comms[i] && comms[i]->n_ranks > 0;
        o += (size_t)snprintf(j + o, sizeof j - o, ",\"pg_count\":%d,\"pg_config\":[", k);
        int first = 1;
        for (int i = 0; i < MAX_COMMS && o + 256 < sizeof j; i++) {
            const nc_ctx *c = comms[i];
            if (c == NULL || c->n_ranks <= 0) continue;
            nc_args a = {.len = 0};
            char hex[24];
            snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)c->comm_hash);
            arg_str(&a, "n", c->comm_name[0] ? c->comm_name : hex);
            o += (size_t)snprintf(
                j + o, sizeof j - o,
                "%s{\"pg_name\":%s,\"pg_desc\":\"nccl comm %s\",\"backend_config\":"
                "\"cuda:nccl\",\"pg_size\":%d,\"rank\":%d}",
                first ? "" : ",", a.b + 2, hex, c->n_ranks, c->rank);
            first = 0;
        }
        o += (size_t)snprintf(j + o, sizeof j - o, "]");
        /* NCCL gives no local rank: the launcher's, where it set one. */
        static const char *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                            "MPI_LOCALRANKID", "SLURM_LOCALID"};
        for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
            const char *v = getenv(local[i]);
            if (v && *v && strspn(v, "0123456789") == strlen(v) && strlen(v) < 10) {
                o += (size_t)snprintf(j + o, sizeof j - o, ",\"local_rank\":%s", v);
                break;
            }
        }
        o += (size_t)snprintf(j + o, sizeof j - o, "}");
        if (o < sizeof j) (void)strobe_add_metadata_json(STROBE_KINETO_KEY_DISTRIBUTED_INFO, j);
    }
    snprintf(j, sizeof j,
             "{\"events\":%llu,\"unknown_event_types\":%llu,\"unknown_handles\":%llu,"
             "\"not_recorded\":%llu,\"states\":%llu}",
             (unsigned long long)stats.events, (unsigned long long)stats.unknown_types,
             (unsigned long long)stats.unknown_handles, (unsigned long long)stats.not_recorded,
             (unsigned long long)stats.states);
    (void)strobe_add_metadata_json("strobe_nccl", j);
}

static int rank_for_path(void) {
    const nc_ctx *m = main_comm();
    if (m) return m->rank;
    static const char *const env[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        const char *v = getenv(env[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

/* The output path: $STROBE_NCCL_OUTPUT or the default, %p, %r and %% expanded. */
static void output_path(char *out, size_t cap) {
    const char *pat = getenv("STROBE_NCCL_OUTPUT");
    if (pat == NULL || *pat == '\0') pat = "strobe_nccl_%p.json";
    size_t o = 0;
    for (size_t i = 0; pat[i] && o + 24 < cap; i++) {
        if (pat[i] == '%' && pat[i + 1] == 'p') {
            o += (size_t)snprintf(out + o, cap - o, "%ld", (long)getpid());
            i++;
        } else if (pat[i] == '%' && pat[i + 1] == 'r') {
            o += (size_t)snprintf(out + o, cap - o, "%d", rank_for_path());
            i++;
        } else if (pat[i] == '%' && pat[i + 1] == '%') {
            out[o++] = '%';
            i++;
        } else {
            out[o++] = pat[i];
        }
    }
    out[o] = '\0';
}

static void log_warn(const char *fmt, ...) {
    if (logger == NULL) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    logger(2 /* NCCL_LOG_WARN */, 1 /* NCCL_INIT */, __FILE__, __LINE__, "%s", msg);
}

/* Under lock: stops the plugin's own session and writes it. */
static void own_stop(void) {
    own_session = 0;
    put_metadata();
    strobe_result *r = NULL;
    char path[4096];
    output_path(path, sizeof path);
    if (strobe_stop(&r) == 0) {
        int rc = strobe_result_save(r, path);
        if (rc) log_warn("strobe: cannot write %s: %s", path, strobe_strerror(rc));
        strobe_result_free(r);
    }
}

/* Many programs never destroy their communicators: the plugin's own session is written at exit
 * then. */
static void own_at_exit(void) {
    pthread_mutex_lock(&lock);
    if (own_session) own_stop();
    pthread_mutex_unlock(&lock);
}

static nccl_result comm_init(void **context, int *mask, int version, const char *comm_name,
                             uint64_t hash, int n_nodes, int n_ranks, int rank,
                             nccl_logger_fn log) {
    if (context == NULL || mask == NULL) return NCCL_ABI_INTERNAL_ERROR;
    nc_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) return NCCL_ABI_INTERNAL_ERROR;
    c->version = version;
    c->comm_hash = hash;
    c->rank = rank;
    c->n_ranks = n_ranks;
    c->n_nodes = n_nodes;
    c->live = 1;
    if (comm_name) snprintf(c->comm_name, sizeof c->comm_name, "%s", comm_name);
    pthread_mutex_lock(&lock);
    if (log) logger = log;
    for (int i = 0; i < MAX_COMMS; i++) {
        if (comms[i] == NULL) {
            comms[i] = c;
            break;
        }
    }
    n_comms++;
    if (allow_own && !strobe_is_running()) {
        strobe_config cfg;
        strobe_config_init(&cfg);
        if (strobe_start(&cfg) == 0) {
            static int registered;
            own_session = 1;
            if (!registered) registered = atexit(own_at_exit) == 0;
        }
    }
    put_metadata();
    pthread_mutex_unlock(&lock);
    *mask = (version >= 5 ? THREAD_TYPES : (THREAD_TYPES & 0xff)) | ASYNC_TYPES;
    *context = c;
    return NCCL_ABI_SUCCESS;
}

void strobe__nccl_allow_own_session(int allow) {
    pthread_mutex_lock(&lock);
    allow_own = allow;
    pthread_mutex_unlock(&lock);
}

nccl_result strobe__nccl_finalize(void *context) {
    pthread_mutex_lock(&lock);
    int found = 0;
    for (int i = 0; i < MAX_COMMS; i++) {
        if (comms[i] != NULL && comms[i] == context) {
            put_metadata();
            comms[i] = NULL;
            found = 1;
            break;
        }
    }
    if (!found) {
        stats.unknown_handles++;
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    /* Events may still point at the context: it is kept (a few bytes per communicator). */
    ((nc_ctx *)context)->live = 0;
    if (--n_comms == 0 && own_session) own_stop();
    pthread_mutex_unlock(&lock);
    return NCCL_ABI_SUCCESS;
}

/* ---- 4. events ------------------------------------------------------------------------------ */

/* The calling thread's open ranges (events begun on it), innermost last: on the heap while any
 * is open, so that the thread-local part stays a few words (libstrobe.so's thread-locals come
 * from the static TLS block, which is small when NCCL dlopens it). */
static __thread nc_ev **tstack;
static __thread int tdepth, tcap;

/* Under lock: pushes `e` on the calling thread's stack. @return 0, or -1 (full, or no memory). */
static int tpush(nc_ev *e) {
    if (tdepth == tcap) {
        int cap = tcap ? tcap * 2 : 8;
        nc_ev **n = cap <= THREAD_DEPTH ? realloc(tstack, (size_t)cap * sizeof *n) : NULL;
        if (n == NULL) return -1;
        tstack = n;
        tcap = cap;
    }
    tstack[tdepth++] = e;
    return 0;
}

/* Under lock: ends the calling thread's innermost ranges that were stopped. */
static void drain(void) {
    while (tdepth > 0 && tstack[tdepth - 1]->stopped) {
        nc_ev *e = tstack[--tdepth];
        if (e->on_stack) strobe__end_internal();
        ev_release(e);
    }
    if (tdepth == 0 && tstack) {
        free(tstack);
        tstack = NULL;
        tcap = 0;
    }
}

static const char *type_range_name(uint64_t t) {
    switch (t) {
    case NCCL_EV_GROUP:
        return "nccl:group";
    case NCCL_EV_GROUP_API:
        return "nccl:group_api";
    case NCCL_EV_KERNEL_LAUNCH:
        return "nccl:kernel_launch";
    default:
        return NULL;
    }
}

static nccl_result start(nc_ctx *c, void **handle, const nc_desc *d) {
    if (handle == NULL) return NCCL_ABI_SUCCESS;
    *handle = NULL;
    pthread_mutex_lock(&lock);
    drain();
    if (!ctx_live(c)) {
        stats.unknown_handles++;
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    /* v2 and v3 give the communicator in the operations' descriptors only. */
    if (d->has_comm && c->rank < 0) {
        c->rank = d->rank;
        c->comm_hash = d->comm_hash;
        if (d->comm_name) snprintf(c->comm_name, sizeof c->comm_name, "%s", d->comm_name);
    }
    uint64_t t = d->type;
    if (t == 0 || (t & (t - 1)) != 0 || !(t & (THREAD_TYPES | ASYNC_TYPES))) {
        stats.unknown_types++;
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    stats.events++;
    if (!strobe_is_active()) {
        stats.not_recorded++;
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    nc_ev *e = calloc(1, sizeof *e);
    if (e == NULL || set_add(e) != 0) {
        free(e);
        stats.not_recorded++;
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    e->type = t;
    e->ctx = c;
    e->refs = 1;
    e->seq = d->seq;
    e->channel = d->channel;
    e->step = d->step;
    e->peer = -1;
    /* The parent: only a live handle of ours (a PXN op's parent is another process's). */
    nc_ev *p = (nc_ev *)d->parent;
    if (p && set_has(p) && !(d->proxy_op && d->proxy_op->pid != getpid())) {
        e->parent = p;
        p->refs++;
    }
    if (d->func) cat3(e->func, sizeof e->func, d->func, "", "");
    if (e->parent && e->func[0] == '\0') memcpy(e->func, e->parent->func, sizeof e->func);
    if (e->parent && e->seq < 0) e->seq = e->parent->seq;
    if (d->proxy_op) {
        e->channel = d->proxy_op->channel_id;
        e->is_send = d->proxy_op->is_send;
        e->peer = d->proxy_op->peer;
    } else if (e->parent && (t == NCCL_EV_PROXY_STEP || t == NCCL_EV_NET_PLUGIN)) {
        e->channel = e->parent->channel;
        e->is_send = e->parent->is_send;
        e->peer = e->parent->peer;
    }
    e->state = -1;
    if (t & THREAD_TYPES) {
        char name[NAME_MAX_];
        nc_args a = {.len = 0};
        const char *fixed = type_range_name(t);
        if (fixed) {
            cat3(name, sizeof name, fixed, "", "");
            if (t == NCCL_EV_GROUP_API && d->root >= 0) arg_i64(&a, "Group depth", d->root);
        } else {
            char sn[48];
            snake(sn, sizeof sn, d->func ? d->func : "unknown");
            /* v5's tasks: the API call is the operation, the task its enqueueing. */
            int task = c->version >= 5 && (t == NCCL_EV_COLL || t == NCCL_EV_P2P);
            cat3(name, sizeof name, "nccl:", sn, task ? ":task" : "");
            comm_args(&a, c, d);
        }
        const strobe_site *site = site_of(name);
        if (site != NULL && tpush(e) == 0) {
            strobe__begin_site_args(site, a.b, a.len);
            e->on_stack = 1;
            e->tid = my_tid();
            e->refs++;
        } else {
            stats.not_recorded++;
        }
    }
    e->start_ns = strobe_clock_now_ns();
    *handle = e;
    pthread_mutex_unlock(&lock);
    return NCCL_ABI_SUCCESS;
}

/* What a proxy step waits for in a state (NCCL's ProxyStep states), or NULL. */
static const char *step_state_name(int st) {
    switch (st) {
    case NCCL_ST_PROXY_STEP_SEND_GPU_WAIT:
        return "GPU wait";
    case NCCL_ST_PROXY_STEP_SEND_PEER_WAIT:
        return "peer wait";
    case NCCL_ST_PROXY_STEP_SEND_WAIT:
        return "network wait";
    case NCCL_ST_PROXY_STEP_RECV_WAIT:
        return "network wait";
    case NCCL_ST_PROXY_STEP_RECV_FLUSH_WAIT:
        return "flush wait";
    case NCCL_ST_PROXY_STEP_RECV_GPU_WAIT:
        return "GPU wait";
    default:
        return NULL;
    }
}

/* Under lock: an async event as a backend event on its track. */
static void record_async(nc_ev *e, int64_t end_ns) {
    char name[NAME_MAX_], track[NAME_MAX_];
    const char *func = e->func[0] ? e->func : "proxy op";
    const char *dir = e->is_send ? "send" : "recv";
    int64_t handle = e->seq;
    switch (e->type) {
    case NCCL_EV_PROXY_OP:
        snprintf(name, sizeof name, "%s %s %s %d", func, dir, e->is_send ? "to" : "from", e->peer);
        snprintf(track, sizeof track, "NCCL proxy ch%d %s", e->channel, dir);
        break;
    case NCCL_EV_PROXY_STEP:
        snprintf(name, sizeof name, "%s step %d", dir, e->step);
        snprintf(track, sizeof track, "NCCL proxy ch%d %s step slot %d", e->channel, dir,
                 e->step & 7);
        handle = e->step;
        break;
    case NCCL_EV_KERNEL_CH:
        snprintf(name, sizeof name, "%s kernel", e->func[0] ? e->func : "NCCL");
        snprintf(track, sizeof track, "NCCL kernel ch%d", e->channel);
        break;
    case NCCL_EV_PROXY_CTRL: {
        static const char *const st[] = {"idle",   "active", "sleep",
                                         "wakeup", "append", "append end"};
        int s = e->state - NCCL_ST_PROXY_CTRL_IDLE;
        snprintf(name, sizeof name, "proxy %s", s >= 0 && s < 6 ? st[s] : "ctrl");
        snprintf(track, sizeof track, "NCCL proxy ctrl");
        handle = -1;
        break;
    }
    default:
        snprintf(name, sizeof name, "net plugin event");
        snprintf(track, sizeof track, "NCCL net");
        break;
    }
    strobe_record_backend_event_ns(e->start_ns, end_ns, handle, name, track);
    /* A step's states as its children: each from its transition to the next one (or the stop),
     * on the step's track, where they nest in it. */
    for (int i = 0; e->type == NCCL_EV_PROXY_STEP && i < e->n_states; i++) {
        int64_t a = e->st_ns[i], b = i + 1 < e->n_states ? e->st_ns[i + 1] : end_ns;
        if (a < e->start_ns) a = e->start_ns;
        if (b > end_ns || b < a) b = end_ns < a ? a : end_ns;
        const char *what = step_state_name(e->st_state[i]);
        if (what == NULL) continue;
        cat3(name, sizeof name, dir, " ", what);
        strobe_record_backend_event_ns(a, b, handle, name, track);
    }
}

nccl_result strobe__nccl_stop(void *handle) {
    if (handle == NULL) return NCCL_ABI_SUCCESS;
    int64_t now = strobe_clock_now_ns();
    pthread_mutex_lock(&lock);
    nc_ev *e = handle;
    if (!set_has(e) || e->stopped) {
        stats.unknown_handles++;
        drain();
        pthread_mutex_unlock(&lock);
        return NCCL_ABI_SUCCESS;
    }
    e->stopped = 1;
    if (e->type & ASYNC_TYPES) {
        if (strobe_is_active()) record_async(e, now);
    }
    ev_release(e); /* the handle's reference: a thread stack or children may keep it */
    drain();
    pthread_mutex_unlock(&lock);
    return NCCL_ABI_SUCCESS;
}

static void state(void *handle, int st, size_t trans_size) {
    (void)trans_size;
    if (handle == NULL) return;
    pthread_mutex_lock(&lock);
    nc_ev *e = handle;
    if (!set_has(e) || e->stopped) {
        stats.unknown_handles++;
    } else {
        stats.states++;
        e->state = st;
        if (e->type == NCCL_EV_PROXY_STEP) {
            if (e->n_states == STEP_STATES) {
                memmove(e->st_state, e->st_state + 1, sizeof e->st_state - sizeof e->st_state[0]);
                memmove(e->st_ns, e->st_ns + 1, sizeof e->st_ns - sizeof e->st_ns[0]);
                e->n_states--;
            }
            e->st_state[e->n_states] = st;
            e->st_ns[e->n_states++] = strobe_clock_now_ns();
        }
    }
    pthread_mutex_unlock(&lock);
}

/* ---- 5. the version entry points ----------------------------------------------------------- */

static nc_ctx *ctx_of(void *context) {
    return (nc_ctx *)context;
}

static void desc_init(nc_desc *d, uint64_t type, void *parent, int rank) {
    memset(d, 0, sizeof *d);
    d->type = type;
    d->parent = parent;
    d->rank = rank;
    d->seq = -1;
    d->root = d->peer = d->n_channels = -1;
    d->step = d->channel = -1;
}

nccl_result strobe__nccl_init_v5(void **context, uint64_t comm_id, int *activation_mask,
                                 const char *comm_name, int n_nodes, int n_ranks, int rank,
                                 nccl_logger_fn log) {
    return comm_init(context, activation_mask, 5, comm_name, comm_id, n_nodes, n_ranks, rank, log);
}
nccl_result strobe__nccl_init_v4(void **context, int *activation_mask, const char *comm_name,
                                 uint64_t comm_hash, int n_nodes, int n_ranks, int rank,
                                 nccl_logger_fn log) {
    return comm_init(context, activation_mask, 4, comm_name, comm_hash, n_nodes, n_ranks, rank,
                     log);
}
nccl_result strobe__nccl_init_v3(void **context, int *activation_mask) {
    return comm_init(context, activation_mask, 3, NULL, 0, -1, -1, -1, NULL);
}
nccl_result strobe__nccl_init_v2(void **context, int *activation_mask) {
    return comm_init(context, activation_mask, 2, NULL, 0, -1, -1, -1, NULL);
}

/* v4 and v5 share the layouts of these events' descriptions: one body for both. */
#define START_V45(x, d)                                                                            \
    do {                                                                                           \
        switch (x->type) {                                                                         \
        case NCCL_EV_COLL:                                                                         \
            d.func = x->coll.func;                                                                 \
            d.count = x->coll.count;                                                               \
            d.datatype = x->coll.datatype;                                                         \
            d.root = x->coll.root;                                                                 \
            d.seq = (int64_t)x->coll.seq;                                                          \
            d.algo = x->coll.algo;                                                                 \
            d.proto = x->coll.proto;                                                               \
            d.n_channels = x->coll.n_channels;                                                     \
            break;                                                                                 \
        case NCCL_EV_P2P:                                                                          \
            d.func = x->p2p.func;                                                                  \
            d.count = x->p2p.count;                                                                \
            d.datatype = x->p2p.datatype;                                                          \
            d.peer = x->p2p.peer;                                                                  \
            d.n_channels = x->p2p.n_channels;                                                      \
            break;                                                                                 \
        case NCCL_EV_PROXY_OP:                                                                     \
            d.proxy_op = &x->proxy_op;                                                             \
            break;                                                                                 \
        case NCCL_EV_PROXY_STEP:                                                                   \
            d.step = x->proxy_step.step;                                                           \
            break;                                                                                 \
        case NCCL_EV_KERNEL_CH:                                                                    \
            d.channel = x->kernel_ch.channel_id;                                                   \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

nccl_result strobe__nccl_start_v5(void *context, void **handle, nccl_abi_descr_v5 *x) {
    if (x == NULL) return NCCL_ABI_SUCCESS;
    nc_desc d;
    desc_init(&d, x->type, x->parent, x->rank);
    switch (x->type) {
    case NCCL_EV_GROUP_API:
        d.root = x->group_api.group_depth;
        break;
    case NCCL_EV_COLL_API:
        d.func = x->coll_api.func;
        d.count = x->coll_api.count;
        d.datatype = x->coll_api.datatype;
        d.root = x->coll_api.root;
        break;
    case NCCL_EV_P2P_API:
        d.func = x->p2p_api.func;
        d.count = x->p2p_api.count;
        d.datatype = x->p2p_api.datatype;
        break;
    default:
        START_V45(x, d);
        break;
    }
    return start(ctx_of(context), handle, &d);
}

nccl_result strobe__nccl_start_v4(void *context, void **handle, nccl_abi_descr_v4 *x) {
    if (x == NULL) return NCCL_ABI_SUCCESS;
    nc_desc d;
    desc_init(&d, x->type, x->parent, x->rank);
    START_V45(x, d);
    return start(ctx_of(context), handle, &d);
}

/* v2 and v3 share their layouts but for v2's trafficBytes: one body for both. */
#define START_V23(x, d)                                                                            \
    do {                                                                                           \
        desc_init(&d, x->type, x->parent, x->rank);                                                \
        switch (x->type) {                                                                         \
        case NCCL_EV_COLL:                                                                         \
            d.func = x->coll.func;                                                                 \
            d.count = x->coll.count;                                                               \
            d.datatype = x->coll.datatype;                                                         \
            d.root = x->coll.root;                                                                 \
            d.seq = (int64_t)x->coll.seq;                                                          \
            d.algo = x->coll.algo;                                                                 \
            d.proto = x->coll.proto;                                                               \
            d.n_channels = x->coll.n_max_channels;                                                 \
            d.comm_name = x->coll.comm_name;                                                       \
            d.comm_hash = x->coll.comm_hash;                                                       \
            d.has_comm = 1;                                                                        \
            break;                                                                                 \
        case NCCL_EV_P2P:                                                                          \
            d.func = x->p2p.func;                                                                  \
            d.count = x->p2p.count;                                                                \
            d.datatype = x->p2p.datatype;                                                          \
            d.peer = x->p2p.peer;                                                                  \
            d.comm_name = x->p2p.comm_name;                                                        \
            d.comm_hash = x->p2p.comm_hash;                                                        \
            d.has_comm = 1;                                                                        \
            break;                                                                                 \
        case NCCL_EV_PROXY_OP:                                                                     \
            d.proxy_op = &x->proxy_op;                                                             \
            break;                                                                                 \
        case NCCL_EV_PROXY_STEP:                                                                   \
            d.step = x->proxy_step.step;                                                           \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

nccl_result strobe__nccl_start_v3(void *context, void **handle, nccl_abi_descr_v3 *x) {
    if (x == NULL) return NCCL_ABI_SUCCESS;
    nc_desc d;
    START_V23(x, d);
    if (x->type == NCCL_EV_KERNEL_CH) d.channel = x->kernel_ch.channel_id;
    return start(ctx_of(context), handle, &d);
}

nccl_result strobe__nccl_start_v2(void *context, void **handle, nccl_abi_descr_v2 *x) {
    if (x == NULL) return NCCL_ABI_SUCCESS;
    nc_desc d;
    START_V23(x, d);
    return start(ctx_of(context), handle, &d);
}

nccl_result strobe__nccl_state_v4(void *handle, int st, nccl_abi_state_args_v4 *args) {
    state(handle, st, args ? args->proxy_step.trans_size : 0);
    return NCCL_ABI_SUCCESS;
}

nccl_result strobe__nccl_state_v3(void *handle, int st, nccl_abi_state_args_v3 *args) {
    state(handle, st, args ? args->proxy_op.trans_size : 0);
    return NCCL_ABI_SUCCESS;
}
