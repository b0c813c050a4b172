/* mpi_hook.c: the PMPI interposer of `strobe record --mpi` (built into libstrobe_record_mpi.so
 * beside src/preload/record_hook.c, only where mpi.h was found).
 *
 * Each MPI function below is the program's: the library comes first in LD_PRELOAD, so its
 * MPI_Send is the one the program calls, and it calls MPI's own through the profiling names
 * (PMPI_Send), as the MPI standard's profiling interface provides. While a session records, each
 * call is a range named after the function (record scope FUNCTION: "cpu_op", as torch's c10d
 * operators are) with args:
 *   collectives      Kineto's record_param_comms args: "Collective name" (torch's names:
 *                    "allreduce", "broadcast", "all_to_all", ...), "In msg nelems",
 *                    "Out msg nelems" (elements this rank sends and receives, as the call's counts
 *                    say), "Group size", "dtype" (torch's names: "Float", "Double", "Int",
 *                    "Long", "Byte", "Char", ...; other MPI types by their MPI name), "Process
 *                    Group Ranks" (the communicator's ranks in MPI_COMM_WORLD, "[0, 1, 2]"), and
 *                    "Root" for rooted ones
 *   point-to-point   the same, with "Collective name" "send" or "recv" (the count as both "In msg
 *                    nelems" and "Out msg nelems", as torch gives them; a blocking receive's is
 *                    the count received), and "bytes", "peer" (the rank in the call's
 *                    communicator: for a blocking receive, the sender the status names) and "tag"
 *                    (a blocking receive's: the status's)
 *   nonblocking      "request": a number for the request, per process; the wait or test that
 *                    completes it lists it in "completes" ([numbers]), so that each operation is
 *                    linked to its completion; MPI_Start numbers each start of a persistent
 *                    request ("requests" for MPI_Startall's)
 *   probes           "peer" and "tag" (a probe that found a message: the message's)
 * Nothing is recorded while no session records: the wrappers then cost a load and a branch.
 *
 * Clock alignment (strobe/dist.h, the trace metadata "strobe_clock_sync"): MPI_Init's wrapper,
 * after MPI's own init, makes a private communicator (MPI_Comm_dup of MPI_COMM_WORLD: strobe never
 * sends on the program's communicators), sets the rank (strobe_set_rank, backend "mpi"), and
 * measures each rank's clock against rank 0's by ping-pong: SYNC_ROUNDS round trips, the one with
 * the shortest round trip kept, the offset taken from its midpoint. MPI_Finalize's wrapper measures
 * again before MPI's own finalize, and the two measurements give the drift. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"
#include "trace/kineto.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- Args ----------------------------------------------------------------------------------- */

static int recording(void) {
    return strobe_is_active();
}

#define BEGIN(name) STROBE_RANGE_BEGIN_SCOPE(name, STROBE_RECORD_SCOPE_FUNCTION)
#define END() strobe_range_end()

static void arg_int(const char *key, long long v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    strobe_range_arg(key, b);
}

/* `s` is one of the names below, or an MPI type's name: quoted with only JSON-safe bytes kept. */
static void arg_str(const char *key, const char *s) {
    char b[160];
    size_t o = 0;
    b[o++] = '"';
    for (; *s && o < sizeof b - 2; s++)
        if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\') b[o++] = *s;
    b[o++] = '"';
    b[o] = '\0';
    strobe_range_arg(key, b);
}

/* The type's name as torch writes dtypes, else its MPI name. */
static void arg_dtype(MPI_Datatype dt) {
    const char *n = NULL;
    if (dt == MPI_DATATYPE_NULL) return; /* a barrier's */
    if (dt == MPI_FLOAT)
        n = "Float";
    else if (dt == MPI_DOUBLE)
        n = "Double";
    else if (dt == MPI_INT || dt == MPI_INT32_T)
        n = "Int";
    else if (dt == MPI_LONG || dt == MPI_LONG_LONG || dt == MPI_INT64_T)
        n = "Long";
    else if (dt == MPI_SHORT || dt == MPI_INT16_T)
        n = "Short";
    else if (dt == MPI_BYTE || dt == MPI_UNSIGNED_CHAR || dt == MPI_UINT8_T)
        n = "Byte";
    else if (dt == MPI_CHAR || dt == MPI_SIGNED_CHAR || dt == MPI_INT8_T)
        n = "Char";
    else if (dt == MPI_C_BOOL)
        n = "Bool";
    if (n) {
        arg_str("dtype", n);
        return;
    }
    char name[MPI_MAX_OBJECT_NAME + 1];
    int len = 0;
    if (PMPI_Type_get_name(dt, name, &len) != MPI_SUCCESS || len <= 0) {
        arg_str("dtype", "unknown");
        return;
    }
    name[len < MPI_MAX_OBJECT_NAME ? len : MPI_MAX_OBJECT_NAME] = '\0';
    arg_str("dtype", name);
}

static long long type_size(MPI_Datatype dt) {
    int s = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &s) != MPI_SUCCESS) return 0;
    return s;
}

static int comm_size(MPI_Comm comm) {
    int n = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &n) != MPI_SUCCESS) return 0;
    return n;
}

static int comm_rank(MPI_Comm comm) {
    int r = -1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &r) != MPI_SUCCESS) return -1;
    return r;
}

/* The largest group whose ranks are listed, and the room its list takes. */
#define GROUP_MAX 256
#define GROUP_JSON (GROUP_MAX * 12 + 8)

/* The ranks' lists of the last communicators seen (computing one takes group calls and an
 * allocation): `gen` of an entry is group_gen when it is valid; MPI_Comm_free and
 * MPI_Comm_disconnect empty the cache, since MPI may give a freed communicator's handle to the
 * next one. Under group_lock. */
#define GROUP_CACHE 8
static pthread_mutex_t group_lock = PTHREAD_MUTEX_INITIALIZER;
static struct group_entry {
    MPI_Comm comm;
    unsigned gen;
    char json[GROUP_JSON];
} group_cache[GROUP_CACHE];
static unsigned group_gen = 1, group_next;

/* The communicator's ranks in MPI_COMM_WORLD as "\"[0, 1, ...]\"" into b (local queries: group
 * calls send nothing). @return 0, or -1 (no list: too large, or a call failed). */
static int group_list(MPI_Comm comm, int n, char *b) {
    MPI_Group g, world;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS) return -1;
    if (PMPI_Comm_group(MPI_COMM_WORLD, &world) != MPI_SUCCESS) {
        PMPI_Group_free(&g);
        return -1;
    }
    int in[GROUP_MAX], out[GROUP_MAX];
    for (int i = 0; i < n; i++)
        in[i] = i;
    int rc = PMPI_Group_translate_ranks(g, n, in, world, out) == MPI_SUCCESS ? 0 : -1;
    if (rc == 0) {
        size_t o = 0;
        b[o++] = '"';
        b[o++] = '[';
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(b + o, GROUP_JSON - o, "%s%d", i ? ", " : "", out[i]);
        b[o++] = ']';
        b[o++] = '"';
        b[o] = '\0';
    }
    PMPI_Group_free(&world);
    PMPI_Group_free(&g);
    return rc;
}

/* "Group size" and "Process Group Ranks". Groups too large for the list give the size alone. */
static void arg_group(MPI_Comm comm) {
    int n = comm_size(comm);
    arg_int("Group size", n);
    if (n <= 0 || n > GROUP_MAX) return;
    char b[GROUP_JSON];
    int found = 0;
    pthread_mutex_lock(&group_lock);
    for (int i = 0; i < GROUP_CACHE && !found; i++)
        if (group_cache[i].gen == group_gen && group_cache[i].comm == comm) {
            memcpy(b, group_cache[i].json, strlen(group_cache[i].json) + 1);
            found = 1;
        }
    unsigned gen = group_gen;
    pthread_mutex_unlock(&group_lock);
    if (!found) {
        if (group_list(comm, n, b) != 0) return;
        pthread_mutex_lock(&group_lock);
        if (gen == group_gen) {
            struct group_entry *e = &group_cache[group_next++ % GROUP_CACHE];
            e->comm = comm;
            e->gen = gen;
            memcpy(e->json, b, strlen(b) + 1);
        }
        pthread_mutex_unlock(&group_lock);
    }
    strobe_range_arg("Process Group Ranks", b);
}

static void group_forget(void) {
    pthread_mutex_lock(&group_lock);
    group_gen++;
    pthread_mutex_unlock(&group_lock);
}

EXPORT int MPI_Comm_free(MPI_Comm *comm) {
    group_forget();
    return PMPI_Comm_free(comm);
}

EXPORT int MPI_Comm_disconnect(MPI_Comm *comm) {
    group_forget();
    return PMPI_Comm_disconnect(comm);
}

/* A collective's args. */
static void coll_args(const char *coll, long long in_n, long long out_n, MPI_Datatype dt,
                      MPI_Comm comm, int root) {
    arg_str("Collective name", coll);
    arg_int("In msg nelems", in_n);
    arg_int("Out msg nelems", out_n);
    arg_group(comm);
    arg_dtype(dt);
    if (root >= 0) arg_int("Root", root);
}

/* A point-to-point operation's args; `recv`: the peer and tag come from the status when it has
 * them. */
static void p2p_args(int recv, long long count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm) {
    arg_str("Collective name", recv ? "recv" : "send");
    arg_int("In msg nelems", count); /* torch gives a send's or receive's count as both */
    arg_int("Out msg nelems", count);
    arg_group(comm);
    arg_dtype(dt);
    arg_int("bytes", count * type_size(dt));
    arg_int("peer", peer);
    arg_int("tag", tag);
}

static long long sum(const int *counts, int n) {
    long long s = 0;
    if (counts == NULL) return 0;
    for (int i = 0; i < n; i++)
        s += counts[i];
    return s;
}

/* ---- Requests: numbers for nonblocking operations, and their completion ---------------------- */

/* Open addressing over the request handles (MPI reuses a handle once its request completes:
 * entries go at completion). Key 0: empty; TOMB: removed. A handle may stand for several live
 * requests: Open MPI gives the same completed request to every send that finished at once, so
 * entries of one key are kept side by side and taken oldest first. */
#define TOMB ((uintptr_t)1)
static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static struct req_slot {
    uintptr_t key;
    uint64_t id;
} * req_tab;
static size_t req_cap, req_used; /* used: live entries and tombstones */
static int req_live;             /* atomic: live entries (0: nothing to look up, no lock) */
static uint64_t req_next = 1;

static uintptr_t req_key(MPI_Request r) {
    uintptr_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k + 2; /* never 0 or TOMB */
}

static size_t req_hash(uintptr_t k) {
    return (size_t)((k * UINT64_C(0x9e3779b97f4a7c15)) >> 20);
}

static void req_put_locked(uintptr_t k, uint64_t id);

/* Rehashes the table (dropping the tombstones), twice as large unless the live entries fill
 * under a quarter of it: a long run of requests made and completed keeps a table of its size. */
static int req_grow_locked(void) {
    size_t live = (size_t)__atomic_load_n(&req_live, __ATOMIC_RELAXED);
    size_t cap = req_cap == 0 ? 256 : live * 4 < req_cap ? req_cap : req_cap * 2;
    struct req_slot *old = req_tab;
    size_t ocap = req_cap;
    req_tab = calloc(cap, sizeof *req_tab);
    if (req_tab == NULL) {
        req_tab = old;
        return -1;
    }
    req_cap = cap;
    req_used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key > TOMB) req_put_locked(old[i].key, old[i].id);
    free(old);
    return 0;
}

static void req_put_locked(uintptr_t k, uint64_t id) {
    for (size_t i = req_hash(k) & (req_cap - 1);; i = (i + 1) & (req_cap - 1)) {
        if (req_tab[i].key <= TOMB) {
            if (req_tab[i].key == 0) req_used++;
            req_tab[i].key = k;
            req_tab[i].id = id;
            return;
        }
    }
}

/* Numbers request `r` (just made or started). @return its number, 0 for none (a null request,
 * or no memory for the table). */
static uint64_t req_number(MPI_Request r) {
    if (r == MPI_REQUEST_NULL) return 0;
    pthread_mutex_lock(&req_lock);
    uint64_t id = req_next++;
    if ((req_used + 1) * 2 > req_cap && req_grow_locked() != 0) id = 0;
    if (id) {
        req_put_locked(req_key(r), id);
        __atomic_add_fetch(&req_live, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&req_lock);
    return id;
}

/* Numbers request `r` (just made by a nonblocking call) and gives it to the open range. */
static void req_new(MPI_Request r) {
    uint64_t id = req_number(r);
    if (id) arg_int("request", (long long)id);
}

/* Removes request `r` (completed or freed): the oldest entry of its handle. @return its number,
 * 0 when it had none. */
static uint64_t req_take(MPI_Request r) {
    if (r == MPI_REQUEST_NULL || __atomic_load_n(&req_live, __ATOMIC_RELAXED) == 0) return 0;
    uintptr_t k = req_key(r);
    uint64_t id = 0;
    size_t at = 0;
    pthread_mutex_lock(&req_lock);
    for (size_t i = req_cap ? req_hash(k) & (req_cap - 1) : 0, n = 0; req_cap && n < req_cap;
         i = (i + 1) & (req_cap - 1), n++) {
        if (req_tab[i].key == 0) break;
        if (req_tab[i].key == k && (id == 0 || req_tab[i].id < id)) {
            id = req_tab[i].id;
            at = i;
        }
    }
    if (id) {
        req_tab[at].key = TOMB;
        __atomic_sub_fetch(&req_live, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&req_lock);
    return id;
}

/* "completes": the numbers of the requests handles[idx[i]] (idx NULL: all n), taken out. */
static void completes(const MPI_Request *handles, const int *idx, int n) {
    char b[4096];
    size_t o = 0;
    int any = 0;
    b[o++] = '[';
    for (int i = 0; i < n; i++) {
        uint64_t id = req_take(handles[idx ? idx[i] : i]);
        if (id == 0 || o > sizeof b - 32) continue;
        o += (size_t)snprintf(b + o, sizeof b - o, "%s%llu", any ? ", " : "",
                              (unsigned long long)id);
        any = 1;
    }
    b[o++] = ']';
    b[o] = '\0';
    if (any) strobe_range_arg("completes", b);
}

/* The requests handles[idx[i]] (idx NULL: all n) a wait or test finished: listed in the range's
 * "completes" when it is recorded (on), else only taken out of the table. */
static void finished(const MPI_Request *handles, int on, const int *idx, int n) {
    if (on) {
        completes(handles, idx, n);
        return;
    }
    for (int i = 0; i < n; i++)
        (void)req_take(handles[idx ? idx[i] : i]);
}

/* A copy of `n` request handles before a wait or test overwrites them (MPI_REQUEST_NULL). */
typedef struct req_copy {
    MPI_Request small[64];
    MPI_Request *v;
} req_copy;

static const MPI_Request *copy_reqs(req_copy *c, const MPI_Request *reqs, int n) {
    c->v = n <= 64 ? c->small : malloc((size_t)n * sizeof *c->v);
    if (c->v == NULL || n <= 0) return NULL;
    memcpy(c->v, reqs, (size_t)n * sizeof *c->v);
    return c->v;
}

static void free_reqs(req_copy *c) {
    if (c->v != c->small) free(c->v);
}

/* ---- Clock alignment ----------------------------------------------------------------------- */

#define SYNC_ROUNDS 40
#define SYNC_WARMUP 4

static MPI_Comm priv = MPI_COMM_NULL; /* the private communicator */
static int my_rank, world;

typedef struct sync_m {
    int64_t t;      /* this rank's time of the measurement (the best round trip's midpoint) */
    int64_t offset; /* rank 0's clock minus this rank's */
    int64_t rtt;    /* the shortest round trip */
    int samples;
} sync_m;

static sync_m first_m, last_m;
static int have_first;

/* One measurement: rank 0 answers each other rank in turn; every rank but 0 gets its own. */
static int measure(sync_m *m) {
    memset(m, 0, sizeof *m);
    if (my_rank == 0) {
        for (int r = 1; r < world; r++) {
            for (int i = 0; i < SYNC_WARMUP + SYNC_ROUNDS; i++) {
                char ping;
                if (PMPI_Recv(&ping, 1, MPI_CHAR, r, 1, priv, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    return -1;
                int64_t now = strobe_clock_now_ns();
                if (PMPI_Send(&now, 1, MPI_INT64_T, r, 2, priv) != MPI_SUCCESS) return -1;
            }
        }
        m->t = strobe_clock_now_ns();
        m->samples = SYNC_ROUNDS;
        return 0;
    }
    m->rtt = INT64_MAX;
    for (int i = 0; i < SYNC_WARMUP + SYNC_ROUNDS; i++) {
        char ping = 0;
        int64_t ref = 0;
        int64_t t1 = strobe_clock_now_ns();
        if (PMPI_Send(&ping, 1, MPI_CHAR, 0, 1, priv) != MPI_SUCCESS ||
            PMPI_Recv(&ref, 1, MPI_INT64_T, 0, 2, priv, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        int64_t t2 = strobe_clock_now_ns();
        if (i < SYNC_WARMUP || t2 - t1 >= m->rtt) continue;
        m->rtt = t2 - t1;
        m->t = t1 + (t2 - t1) / 2;
        m->offset = ref - m->t;
    }
    m->samples = SYNC_ROUNDS;
    return 0;
}

/* Writes strobe_clock_sync from the measurements made (docs/GUIDE.md, "Jobs on many ranks"): offset
 * and t_ref from the first, the drift from the two. */
static void write_sync(void) {
    if (!have_first) return;
    sync_m a = first_m;
    double drift_ppb = 0;
    int64_t rtt = a.rtt, unc = a.rtt / 2;
    int samples = a.samples;
    if (last_m.samples && last_m.t != a.t) {
        /* A change of offset within the two measurements' uncertainty is no measured drift (on
         * one machine there is none): 0, rather than noise that grows with the distance to
         * t_ref. */
        int64_t change = last_m.offset - a.offset;
        int64_t size = change < 0 ? -change : change;
        if (size > a.rtt / 2 + last_m.rtt / 2)
            drift_ppb = (double)change * 1e9 / (double)(last_m.t - a.t);
        if (last_m.rtt < rtt) rtt = last_m.rtt;
        if (last_m.rtt / 2 > unc) unc = last_m.rtt / 2;
        samples += last_m.samples;
    }
    if (my_rank == 0) {
        a.offset = 0;
        drift_ppb = 0;
        rtt = unc = 0;
    }
    char b[512];
    snprintf(b, sizeof b,
             "{\"method\": \"mpi-pingpong\", \"reference_rank\": 0, \"offset_ns\": %lld, "
             "\"drift_ppb\": %.3f, \"t_ref_ns\": %lld, \"uncertainty_ns\": %lld, "
             "\"round_trip_ns\": %lld, \"samples\": %d}",
             (long long)a.offset, drift_ppb, (long long)a.t, (long long)unc, (long long)rtt,
             samples);
    (void)strobe_add_metadata_json(STROBE_KINETO_KEY_CLOCK_SYNC, b);
}

static void say(const char *what) {
    fprintf(stderr, "strobe record: MPI: %s\n", what);
}

/* After MPI's init: the private communicator, the rank, the first measurement. */
static void after_init(void) {
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &priv) != MPI_SUCCESS) {
        priv = MPI_COMM_NULL;
        say("cannot make a communicator of strobe's own: the clocks are not aligned");
        return;
    }
    PMPI_Comm_set_name(priv, "strobe");
    my_rank = comm_rank(priv);
    world = comm_size(priv);
    int local = -1;
    MPI_Comm node;
    if (PMPI_Comm_split_type(priv, MPI_COMM_TYPE_SHARED, my_rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        local = comm_rank(node);
        PMPI_Comm_free(&node);
    }
    if (my_rank >= 0 && world > 0) strobe_set_rank(my_rank, local, world, "mpi");
    if (measure(&first_m) == 0) {
        have_first = 1;
        write_sync();
    } else {
        say("the clock measurement failed: the clocks are not aligned");
    }
}

/* Before MPI's finalize: the second measurement, the drift; the communicator goes. */
static void before_finalize(void) {
    if (priv == MPI_COMM_NULL) return;
    if (have_first && measure(&last_m) == 0) write_sync();
    PMPI_Comm_free(&priv);
    priv = MPI_COMM_NULL;
}

/* ---- Init and finalize --------------------------------------------------------------------- */

EXPORT int MPI_Init(int *argc, char ***argv) {
    BEGIN("MPI_Init");
    int rc = PMPI_Init(argc, argv);
    END();
    if (rc == MPI_SUCCESS) after_init();
    return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    BEGIN("MPI_Init_thread");
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    END();
    if (rc == MPI_SUCCESS) after_init();
    return rc;
}

EXPORT int MPI_Finalize(void) {
    before_finalize();
    BEGIN("MPI_Finalize");
    int rc = PMPI_Finalize();
    END();
    return rc;
}

/* ---- Point-to-point ------------------------------------------------------------------------ */

#define SEND_LIKE(fn, label)                                                                       \
    EXPORT int fn(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) { \
        if (!recording()) return P##fn(buf, count, dt, dest, tag, comm);                           \
        BEGIN(label);                                                                              \
        int rc = P##fn(buf, count, dt, dest, tag, comm);                                           \
        p2p_args(0, count, dt, dest, tag, comm);                                                   \
        END();                                                                                     \
        return rc;                                                                                 \
    }
SEND_LIKE(MPI_Send, "MPI_Send")
SEND_LIKE(MPI_Ssend, "MPI_Ssend")
SEND_LIKE(MPI_Bsend, "MPI_Bsend")
SEND_LIKE(MPI_Rsend, "MPI_Rsend")

#define ISEND_LIKE(fn, label)                                                                      \
    EXPORT int fn(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,   \
                  MPI_Request *req) {                                                              \
        if (!recording()) return P##fn(buf, count, dt, dest, tag, comm, req);                      \
        BEGIN(label);                                                                              \
        int rc = P##fn(buf, count, dt, dest, tag, comm, req);                                      \
        p2p_args(0, count, dt, dest, tag, comm);                                                   \
        if (rc == MPI_SUCCESS) req_new(*req);                                                      \
        END();                                                                                     \
        return rc;                                                                                 \
    }
ISEND_LIKE(MPI_Isend, "MPI_Isend")
ISEND_LIKE(MPI_Issend, "MPI_Issend")
ISEND_LIKE(MPI_Ibsend, "MPI_Ibsend")
ISEND_LIKE(MPI_Irsend, "MPI_Irsend")

EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                    MPI_Status *status) {
    if (!recording()) return PMPI_Recv(buf, count, dt, source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    BEGIN("MPI_Recv");
    int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
    int got = count;
    if (rc == MPI_SUCCESS) {
        if (source != MPI_PROC_NULL) {
            source = st->MPI_SOURCE;
            tag = st->MPI_TAG;
        }
        if (PMPI_Get_count(st, dt, &got) != MPI_SUCCESS || got == MPI_UNDEFINED) got = count;
    }
    p2p_args(1, got, dt, source, tag, comm);
    END();
    return rc;
}

EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                     MPI_Request *req) {
    if (!recording()) return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    BEGIN("MPI_Irecv");
    int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    p2p_args(1, count, dt, source, tag, comm);
    if (rc == MPI_SUCCESS) req_new(*req);
    END();
    return rc;
}

EXPORT int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                        void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                        MPI_Comm comm, MPI_Status *status) {
    if (!recording())
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                             comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    BEGIN("MPI_Sendrecv");
    int rc =
        PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) source = st->MPI_SOURCE;
    arg_str("Collective name", "sendrecv");
    arg_int("In msg nelems", scount);
    arg_int("Out msg nelems", rcount);
    arg_group(comm);
    arg_dtype(stype);
    arg_int("bytes", scount * type_size(stype));
    arg_int("peer", dest);
    arg_int("tag", stag);
    arg_int("recv bytes", rcount * type_size(rtype));
    arg_int("recv peer", source);
    arg_int("recv tag", rtag);
    END();
    return rc;
}

EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    if (!recording()) return PMPI_Probe(source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    BEGIN("MPI_Probe");
    int rc = PMPI_Probe(source, tag, comm, st);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
        source = st->MPI_SOURCE;
        tag = st->MPI_TAG;
    }
    arg_int("peer", source);
    arg_int("tag", tag);
    END();
    return rc;
}

EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    if (!recording()) return PMPI_Iprobe(source, tag, comm, flag, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    BEGIN("MPI_Iprobe");
    int rc = PMPI_Iprobe(source, tag, comm, flag, st);
    if (rc == MPI_SUCCESS && *flag && source != MPI_PROC_NULL) {
        source = st->MPI_SOURCE;
        tag = st->MPI_TAG;
    }
    arg_int("peer", source);
    arg_int("tag", tag);
    END();
    return rc;
}

/* Persistent requests: each start is an operation of its own, numbered like a nonblocking call
 * (the handle stays the same from start to start; its completion takes the oldest number). */
EXPORT int MPI_Start(MPI_Request *req) {
    if (!recording()) return PMPI_Start(req);
    BEGIN("MPI_Start");
    int rc = PMPI_Start(req);
    if (rc == MPI_SUCCESS) req_new(*req);
    END();
    return rc;
}

EXPORT int MPI_Startall(int n, MPI_Request reqs[]) {
    if (!recording()) return PMPI_Startall(n, reqs);
    BEGIN("MPI_Startall");
    int rc = PMPI_Startall(n, reqs);
    if (rc == MPI_SUCCESS) {
        char b[4096];
        size_t o = 0;
        int any = 0;
        b[o++] = '[';
        for (int i = 0; i < n; i++) {
            uint64_t id = req_number(reqs[i]);
            if (id == 0 || o > sizeof b - 32) continue;
            o += (size_t)snprintf(b + o, sizeof b - o, "%s%llu", any ? ", " : "",
                                  (unsigned long long)id);
            any = 1;
        }
        b[o++] = ']';
        b[o] = '\0';
        if (any) strobe_range_arg("requests", b);
    }
    END();
    return rc;
}

/* ---- Waits and tests ------------------------------------------------------------------------ */

EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    MPI_Request r = *req;
    int on = recording();
    if (on) BEGIN("MPI_Wait");
    int rc = PMPI_Wait(req, status);
    if (rc == MPI_SUCCESS) finished(&r, on, NULL, 1);
    if (on) END();
    return rc;
}

EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Waitall");
    int rc = PMPI_Waitall(n, reqs, statuses);
    if (h && rc == MPI_SUCCESS) {
        finished(h, on, NULL, n);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Waitany");
    int rc = PMPI_Waitany(n, reqs, index, status);
    if (h && rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < n) {
        finished(h, on, index, 1);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                        MPI_Status statuses[]) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Waitsome");
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    if (h && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0) {
        finished(h, on, indices, *outcount);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    MPI_Request r = *req;
    int on = recording();
    if (on) BEGIN("MPI_Test");
    int rc = PMPI_Test(req, flag, status);
    if (rc == MPI_SUCCESS && *flag) finished(&r, on, NULL, 1);
    if (on) END();
    return rc;
}

EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Testall");
    int rc = PMPI_Testall(n, reqs, flag, statuses);
    if (h && rc == MPI_SUCCESS && *flag) {
        finished(h, on, NULL, n);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Testany");
    int rc = PMPI_Testany(n, reqs, index, flag, status);
    if (h && rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n) {
        finished(h, on, index, 1);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                        MPI_Status statuses[]) {
    req_copy c;
    const MPI_Request *h = copy_reqs(&c, reqs, n);
    int on = recording();
    if (on) BEGIN("MPI_Testsome");
    int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
    if (h && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0) {
        finished(h, on, indices, *outcount);
    }
    if (on) END();
    free_reqs(&c);
    return rc;
}

EXPORT int MPI_Request_free(MPI_Request *req) {
    MPI_Request r = *req;
    int rc = PMPI_Request_free(req);
    if (rc == MPI_SUCCESS) req_take(r);
    return rc;
}

/* ---- Collectives ---------------------------------------------------------------------------- */

/* A blocking collective and its nonblocking form: `call` is the MPI call's argument list, `args`
 * the statement that records the args (run after the call, the range still open). */
#define COLL(fn, label, params, call, args)                                                        \
    EXPORT int fn params {                                                                         \
        if (!recording()) return P##fn call;                                                       \
        BEGIN(label);                                                                              \
        int rc = P##fn call;                                                                       \
        args;                                                                                      \
        END();                                                                                     \
        return rc;                                                                                 \
    }
#define ICOLL(fn, label, params, call, args)                                                       \
    EXPORT int fn params {                                                                         \
        if (!recording()) return P##fn call;                                                       \
        BEGIN(label);                                                                              \
        int rc = P##fn call;                                                                       \
        args;                                                                                      \
        if (rc == MPI_SUCCESS) req_new(*req);                                                      \
        END();                                                                                     \
        return rc;                                                                                 \
    }

/* Whether this rank is the root of a rooted collective (intracommunicators). */
#define IS_ROOT(root, comm) (comm_rank(comm) == (root))

COLL(MPI_Barrier, "MPI_Barrier", (MPI_Comm comm), (comm),
     coll_args("barrier", 0, 0, MPI_DATATYPE_NULL, comm, -1))
ICOLL(MPI_Ibarrier, "MPI_Ibarrier", (MPI_Comm comm, MPI_Request *req), (comm, req),
      coll_args("barrier", 0, 0, MPI_DATATYPE_NULL, comm, -1))

COLL(MPI_Bcast, "MPI_Bcast", (void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm),
     (buf, count, dt, root, comm), coll_args("broadcast", count, count, dt, comm, root))
ICOLL(MPI_Ibcast, "MPI_Ibcast",
      (void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req),
      (buf, count, dt, root, comm, req), coll_args("broadcast", count, count, dt, comm, root))

COLL(MPI_Reduce, "MPI_Reduce",
     (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm),
     (sbuf, rbuf, count, dt, op, root, comm),
     coll_args("reduce", count, IS_ROOT(root, comm) ? count : 0, dt, comm, root))
ICOLL(MPI_Ireduce, "MPI_Ireduce",
      (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, count, dt, op, root, comm, req),
      coll_args("reduce", count, IS_ROOT(root, comm) ? count : 0, dt, comm, root))

COLL(MPI_Allreduce, "MPI_Allreduce",
     (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, count, dt, op, comm), coll_args("allreduce", count, count, dt, comm, -1))
ICOLL(MPI_Iallreduce, "MPI_Iallreduce",
      (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, count, dt, op, comm, req), coll_args("allreduce", count, count, dt, comm, -1))

COLL(MPI_Scan, "MPI_Scan",
     (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, count, dt, op, comm), coll_args("scan", count, count, dt, comm, -1))
COLL(MPI_Exscan, "MPI_Exscan",
     (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, count, dt, op, comm), coll_args("exscan", count, count, dt, comm, -1))
ICOLL(MPI_Iscan, "MPI_Iscan",
      (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, count, dt, op, comm, req), coll_args("scan", count, count, dt, comm, -1))
ICOLL(MPI_Iexscan, "MPI_Iexscan",
      (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, count, dt, op, comm, req), coll_args("exscan", count, count, dt, comm, -1))

/* In place (MPI_IN_PLACE): the send count and type are not used; the receive side's are. */
#define SENDN(sbuf, scount, rcount) ((sbuf) == MPI_IN_PLACE ? (long long)(rcount) : (scount))
#define SENDT(sbuf, stype, rtype) ((sbuf) == MPI_IN_PLACE ? (rtype) : (stype))

COLL(MPI_Allgather, "MPI_Allgather",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
      MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcount, rtype, comm),
     coll_args("allgather", SENDN(sbuf, scount, rcount), (long long)rcount *comm_size(comm),
               SENDT(sbuf, stype, rtype), comm, -1))
ICOLL(MPI_Iallgather, "MPI_Iallgather",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
       MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
      coll_args("allgather", SENDN(sbuf, scount, rcount), (long long)rcount *comm_size(comm),
                SENDT(sbuf, stype, rtype), comm, -1))

COLL(MPI_Allgatherv, "MPI_Allgatherv",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
      const int displs[], MPI_Datatype rtype, MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm),
     coll_args("allgatherv",
               sbuf == MPI_IN_PLACE ? (comm_rank(comm) >= 0 ? rcounts[comm_rank(comm)] : 0)
                                    : scount,
               sum(rcounts, comm_size(comm)), SENDT(sbuf, stype, rtype), comm, -1))
ICOLL(MPI_Iallgatherv, "MPI_Iallgatherv",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
       const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req),
      coll_args("allgatherv",
                sbuf == MPI_IN_PLACE ? (comm_rank(comm) >= 0 ? rcounts[comm_rank(comm)] : 0)
                                     : scount,
                sum(rcounts, comm_size(comm)), SENDT(sbuf, stype, rtype), comm, -1))

COLL(MPI_Gather, "MPI_Gather",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
      int root, MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
     coll_args("gather", SENDN(sbuf, scount, rcount),
               IS_ROOT(root, comm) ? (long long)rcount *comm_size(comm) : 0,
               SENDT(sbuf, stype, rtype), comm, root))
ICOLL(MPI_Igather, "MPI_Igather",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
       int root, MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req),
      coll_args("gather", SENDN(sbuf, scount, rcount),
                IS_ROOT(root, comm) ? (long long)rcount *comm_size(comm) : 0,
                SENDT(sbuf, stype, rtype), comm, root))

COLL(MPI_Gatherv, "MPI_Gatherv",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
      const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm),
     coll_args("gatherv", sbuf == MPI_IN_PLACE ? 0 : scount,
               IS_ROOT(root, comm) ? sum(rcounts, comm_size(comm)) : 0, stype, comm, root))
ICOLL(MPI_Igatherv, "MPI_Igatherv",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
       const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req),
      coll_args("gatherv", sbuf == MPI_IN_PLACE ? 0 : scount,
                IS_ROOT(root, comm) ? sum(rcounts, comm_size(comm)) : 0, stype, comm, root))

COLL(MPI_Scatter, "MPI_Scatter",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
      int root, MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
     coll_args("scatter", IS_ROOT(root, comm) ? (long long)scount *comm_size(comm) : 0,
               rbuf == MPI_IN_PLACE ? 0 : rcount, IS_ROOT(root, comm) ? stype : rtype, comm, root))
ICOLL(MPI_Iscatter, "MPI_Iscatter",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
       int root, MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req),
      coll_args("scatter", IS_ROOT(root, comm) ? (long long)scount *comm_size(comm) : 0,
                rbuf == MPI_IN_PLACE ? 0 : rcount, IS_ROOT(root, comm) ? stype : rtype, comm, root))

COLL(MPI_Scatterv, "MPI_Scatterv",
     (const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf,
      int rcount, MPI_Datatype rtype, int root, MPI_Comm comm),
     (sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
     coll_args("scatterv", IS_ROOT(root, comm) ? sum(scounts, comm_size(comm)) : 0,
               rbuf == MPI_IN_PLACE ? 0 : rcount, IS_ROOT(root, comm) ? stype : rtype, comm, root))
ICOLL(MPI_Iscatterv, "MPI_Iscatterv",
      (const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf,
       int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req),
      (sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req),
      coll_args("scatterv", IS_ROOT(root, comm) ? sum(scounts, comm_size(comm)) : 0,
                rbuf == MPI_IN_PLACE ? 0 : rcount, IS_ROOT(root, comm) ? stype : rtype, comm, root))

COLL(MPI_Alltoall, "MPI_Alltoall",
     (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
      MPI_Comm comm),
     (sbuf, scount, stype, rbuf, rcount, rtype, comm),
     coll_args("all_to_all", SENDN(sbuf, scount, rcount) * comm_size(comm),
               (long long)rcount *comm_size(comm), SENDT(sbuf, stype, rtype), comm, -1))
ICOLL(MPI_Ialltoall, "MPI_Ialltoall",
      (const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
       MPI_Comm comm, MPI_Request *req),
      (sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
      coll_args("all_to_all", SENDN(sbuf, scount, rcount) * comm_size(comm),
                (long long)rcount *comm_size(comm), SENDT(sbuf, stype, rtype), comm, -1))

COLL(MPI_Alltoallv, "MPI_Alltoallv",
     (const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
      const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm),
     (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm),
     coll_args("all_to_allv", sum(sbuf == MPI_IN_PLACE ? rcounts : scounts, comm_size(comm)),
               sum(rcounts, comm_size(comm)), SENDT(sbuf, stype, rtype), comm, -1))
ICOLL(MPI_Ialltoallv, "MPI_Ialltoallv",
      (const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
       const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req),
      coll_args("all_to_allv", sum(sbuf == MPI_IN_PLACE ? rcounts : scounts, comm_size(comm)),
                sum(rcounts, comm_size(comm)), SENDT(sbuf, stype, rtype), comm, -1))

COLL(MPI_Reduce_scatter, "MPI_Reduce_scatter",
     (const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, rcounts, dt, op, comm),
     coll_args("reduce_scatter", sum(rcounts, comm_size(comm)),
               comm_rank(comm) >= 0 ? rcounts[comm_rank(comm)] : 0, dt, comm, -1))
ICOLL(MPI_Ireduce_scatter, "MPI_Ireduce_scatter",
      (const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, rcounts, dt, op, comm, req),
      coll_args("reduce_scatter", sum(rcounts, comm_size(comm)),
                comm_rank(comm) >= 0 ? rcounts[comm_rank(comm)] : 0, dt, comm, -1))

COLL(MPI_Reduce_scatter_block, "MPI_Reduce_scatter_block",
     (const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, rcount, dt, op, comm),
     coll_args("reduce_scatter_block", (long long)rcount *comm_size(comm), rcount, dt, comm, -1))
ICOLL(MPI_Ireduce_scatter_block, "MPI_Ireduce_scatter_block",
      (const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
       MPI_Request *req),
      (sbuf, rbuf, rcount, dt, op, comm, req),
      coll_args("reduce_scatter_block", (long long)rcount *comm_size(comm), rcount, dt, comm, -1))
