/* nccl_driver.c: plays NCCL for strobe's profiler plugin (src/nccl), as NCCL does: dlopen the
 * library, dlsym the versioned table (ncclProfiler_v5 or _v4), init a communicator, then start,
 * update and stop events in the order NCCL's core makes them for a group holding an AllReduce
 * and a Send/Recv pair — API calls on this thread, the group's launch with its tasks, and the
 * proxy thread's ops, steps, control and kernel-channel events on a thread of its own started
 * after the tasks stopped — then a few bad calls (an unknown event type, stops and states for
 * handles that are not events), and finalize, which writes the trace ($STROBE_NCCL_OUTPUT).
 *
 * It writes what it did to LOG (one JSON object: per event its name, thread and the times
 * around its start and stop calls, CLOCK_REALTIME ns) for check_nccl_trace.py. The descriptors'
 * layouts are checked against the offsets of NCCL's declarations (x86-64 / LP64), worked out by
 * hand from their field order, so that strobe's own declarations cannot drift unnoticed.
 *
 * Usage: nccl_driver LIBRARY v5|v4 LOG
 *        nccl_driver LIBRARY bench N   (the plugin's cost per event; see bench()) */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl/nccl_profiler_abi.h"

/* NCCL's layouts (profiler_v4.h / profiler_v5.h field order, LP64 alignment). */
_Static_assert(offsetof(nccl_abi_descr_v5, parent) == 8, "v5 parentObj");
_Static_assert(offsetof(nccl_abi_descr_v5, rank) == 16, "v5 rank");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.seq) == 24, "v5 coll.seqNumber");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.count) == 56, "v5 coll.count");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.datatype) == 72, "v5 coll.datatype");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.n_channels) == 80, "v5 coll.nChannels");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.algo) == 88, "v5 coll.algo");
_Static_assert(offsetof(nccl_abi_descr_v5, coll.parent_group) == 104, "v5 coll.parentGroup");
_Static_assert(offsetof(nccl_abi_descr_v5, p2p.peer) == 56, "v5 p2p.peer");
_Static_assert(offsetof(nccl_abi_descr_v5, coll_api.root) == 48, "v5 collApi.root");
_Static_assert(offsetof(nccl_abi_descr_v5, group_api.group_depth) == 28, "v5 groupApi.groupDepth");
_Static_assert(offsetof(nccl_abi_descr_v5, proxy_op.channel_id) == 28, "v5 proxyOp.channelId");
_Static_assert(offsetof(nccl_abi_descr_v5, proxy_op.is_send) == 44, "v5 proxyOp.isSend");
_Static_assert(offsetof(nccl_abi_descr_v5, kernel_ch.gpu_timer) == 32, "v5 kernelCh.pTimer");
_Static_assert(offsetof(nccl_abi_descr_v4, coll.proto) == 96, "v4 coll.proto");
_Static_assert(offsetof(nccl_abi_descr_v4, p2p.n_channels) == 60, "v4 p2p.nChannels");
_Static_assert(offsetof(nccl_abi_descr_v3, coll.seq) == 40, "v3 coll.seqNumber");
_Static_assert(offsetof(nccl_abi_descr_v3, coll.proto) == 112, "v3 coll.proto");
_Static_assert(offsetof(nccl_abi_descr_v2, coll.proto) == 120, "v2 coll.proto");
_Static_assert(offsetof(nccl_abi_profiler_v5, finalize) == 40, "table");

static const nccl_abi_profiler_v5 *p5;
static const nccl_abi_profiler_v4 *p4;
static void *ctx;
static FILE *log_out;
static int first = 1;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static void pause_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* One event as the driver made it. */
typedef struct dev {
    const char *name;
    void *h;
    int64_t t0, t1, t2, t3, tid;
} dev;

static void start(dev *e, const char *name, uint64_t type, void *parent, nccl_abi_descr_v5 *d5) {
    e->name = name;
    e->tid = (int64_t)syscall(SYS_gettid);
    d5->type = type;
    d5->parent = parent;
    d5->rank = 1;
    e->t0 = now();
    if (p5) {
        p5->start_event(ctx, &e->h, d5);
    } else {
        /* v4: the same union members sit at the same offsets (checked above) but the type is
         * one byte. */
        nccl_abi_descr_v4 d4;
        memset(&d4, 0, sizeof d4);
        memcpy((char *)&d4 + 8, (char *)d5 + 8, sizeof d4 - 8);
        d4.type = (uint8_t)type;
        p4->start_event(ctx, &e->h, &d4);
    }
    e->t1 = now();
}

static void stop(dev *e) {
    e->t2 = now();
    if (p5) {
        p5->stop_event(e->h);
    } else {
        p4->stop_event(e->h);
    }
    e->t3 = now();
    pthread_mutex_lock(&log_lock);
    fprintf(log_out,
            "%s{\"name\":\"%s\",\"tid\":%lld,\"t0\":%lld,\"t1\":%lld,\"t2\":%lld,\"t3\":%lld}",
            first ? "" : ",\n", e->name, (long long)e->tid, (long long)e->t0, (long long)e->t1,
            (long long)e->t2, (long long)e->t3);
    first = 0;
    pthread_mutex_unlock(&log_lock);
}

static void state(void *h, int st, size_t trans) {
    nccl_abi_state_args_v4 a;
    memset(&a, 0, sizeof a);
    a.proxy_step.trans_size = trans;
    if (p5) {
        p5->record_event_state(h, st, &a);
    } else {
        p4->record_event_state(h, st, &a);
    }
}

static void *coll_task; /* the AllReduce task's handle: the proxy ops' parent */

/* NCCL's proxy progress thread: one op of the AllReduce (send to peer 2 on channel 0) with two
 * steps, the kernel's channel 0, and a proxy control event. */
static void *proxy_thread(void *arg) {
    (void)arg;
    nccl_abi_descr_v5 d;
    dev ctrl, op, st[2], kch;
    memset(&d, 0, sizeof d);
    start(&ctrl, "proxy sleep", NCCL_EV_PROXY_CTRL, NULL, &d);
    state(ctrl.h, NCCL_ST_PROXY_CTRL_SLEEP, 0);
    pause_ms(2);
    stop(&ctrl);
    memset(&d, 0, sizeof d);
    d.kernel_ch.channel_id = 0;
    d.kernel_ch.gpu_timer = 1000;
    start(&kch, "AllReduce kernel", NCCL_EV_KERNEL_CH, coll_task, &d);
    memset(&d, 0, sizeof d);
    d.proxy_op.pid = getpid();
    d.proxy_op.channel_id = 0;
    d.proxy_op.peer = 2;
    d.proxy_op.n_steps = 2;
    d.proxy_op.chunk_size = 4096;
    d.proxy_op.is_send = 1;
    start(&op, "AllReduce send to 2", NCCL_EV_PROXY_OP, coll_task, &d);
    for (int s = 0; s < 2; s++) {
        memset(&d, 0, sizeof d);
        d.proxy_step.step = s;
        start(&st[s], s ? "send step 1" : "send step 0", NCCL_EV_PROXY_STEP, op.h, &d);
        state(st[s].h, NCCL_ST_PROXY_STEP_SEND_GPU_WAIT, 0);
        pause_ms(2);
    }
    /* Steps overlap (both in flight), each on its slot's track. */
    for (int s = 0; s < 2; s++) {
        state(st[s].h, NCCL_ST_PROXY_STEP_SEND_WAIT, 2048);
        pause_ms(2);
        stop(&st[s]);
    }
    state(op.h, NCCL_ST_PROXY_OP_IN_PROGRESS, 0);
    stop(&op);
    nccl_abi_state_args_v4 a;
    memset(&a, 0, sizeof a);
    a.kernel_ch.gpu_timer = 5000;
    if (p5) {
        p5->record_event_state(kch.h, NCCL_ST_KERNEL_CH_STOP, &a);
    } else {
        p4->record_event_state(kch.h, NCCL_ST_KERNEL_CH_STOP, &a);
    }
    pause_ms(1);
    stop(&kch);
    return NULL;
}

static void nccl_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                     ...) {
    (void)level, (void)flags, (void)file, (void)line;
    fprintf(stderr, "nccl_driver: plugin logged: %s\n", fmt);
}

/* bench: the cost of the plugin per event pair, in the session it starts: N collective API
 * calls (a range with record_param_comms args) and N proxy steps (a backend event), against the
 * floor of two clock reads. Prints ns per pair. */
static int bench(long n) {
    int mask = 0;
    if (p5->init(&ctx, 1, &mask, "bench", 1, 2, 0, NULL) != 0) return 1;
    nccl_abi_descr_v5 d;
    memset(&d, 0, sizeof d);
    int64_t t0 = now();
    for (long i = 0; i < n; i++)
        (void)now(), (void)now();
    int64_t t1 = now();
    for (long i = 0; i < n; i++) {
        void *h = NULL;
        d.type = NCCL_EV_COLL_API;
        d.coll_api.func = "AllReduce";
        d.coll_api.count = 1024;
        d.coll_api.datatype = "ncclFloat32";
        d.coll_api.root = -1;
        p5->start_event(ctx, &h, &d);
        p5->stop_event(h);
    }
    int64_t t2 = now();
    for (long i = 0; i < n; i++) {
        void *h = NULL;
        memset(&d, 0, sizeof d);
        d.type = NCCL_EV_PROXY_STEP;
        d.proxy_step.step = (int)i;
        p5->start_event(ctx, &h, &d);
        p5->record_event_state(h, NCCL_ST_PROXY_STEP_SEND_WAIT, NULL);
        p5->stop_event(h);
    }
    int64_t t3 = now();
    printf("floor (2 clock reads) %.1f ns, coll API start+stop %.1f ns, proxy step "
           "start+state+stop %.1f ns (n=%ld)\n",
           (double)(t1 - t0) / n, (double)(t2 - t1) / n, (double)(t3 - t2) / n, n);
    return p5->finalize(ctx);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[2], "bench") == 0) {
        void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        p5 = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
        return p5 ? bench(atol(argv[3])) : 1;
    }
    if (argc != 4 || (strcmp(argv[2], "v5") && strcmp(argv[2], "v4"))) {
        fprintf(stderr, "usage: nccl_driver LIBRARY v5|v4 LOG | nccl_driver LIBRARY bench N\n");
        return 2;
    }
    int v5 = strcmp(argv[2], "v5") == 0;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "nccl_driver: %s\n", dlerror());
        return 1;
    }
    p5 = v5 ? dlsym(lib, "ncclProfiler_v5") : NULL;
    p4 = v5 ? NULL : dlsym(lib, "ncclProfiler_v4");
    if ((v5 && !p5) || (!v5 && !p4) || !dlsym(lib, "ncclProfiler_v3") ||
        !dlsym(lib, "ncclProfiler_v2")) {
        fprintf(stderr, "nccl_driver: a profiler table is missing\n");
        return 1;
    }
    log_out = fopen(argv[3], "w");
    if (log_out == NULL) return 1;
    fprintf(log_out, "{\"pid\":%ld,\"version\":%d,\"events\":[\n", (long)getpid(), v5 ? 5 : 4);
    int mask = 0;
    int rc = v5 ? p5->init(&ctx, 0x1234abcd5678ef00ull, &mask, "world", 1, 4, 1, nccl_log)
                : p4->init(&ctx, &mask, "world", 0x1234abcd5678ef00ull, 1, 4, 1, nccl_log);
    int want = NCCL_EV_COLL | NCCL_EV_P2P | NCCL_EV_PROXY_OP | NCCL_EV_PROXY_STEP |
               (v5 ? NCCL_EV_COLL_API | NCCL_EV_GROUP_API : 0);
    if (rc != 0 || ctx == NULL || (mask & want) != want) {
        fprintf(stderr, "nccl_driver: init returned %d, mask 0x%x\n", rc, mask);
        return 1;
    }
    nccl_abi_descr_v5 d;
    dev gapi = {0}, capi = {0}, sapi = {0}, rapi = {0}, grp = {0}, coll = {0}, send = {0},
        recv = {0}, kl = {0};
    if (v5) {
        /* ncclGroupStart; ncclAllReduce; ncclSend; ncclRecv; ncclGroupEnd ... */
        memset(&d, 0, sizeof d);
        d.group_api.group_depth = 1;
        start(&gapi, "nccl:group_api", NCCL_EV_GROUP_API, NULL, &d);
        p5->record_event_state(gapi.h, NCCL_ST_GROUP_START_API_STOP, NULL);
        memset(&d, 0, sizeof d);
        d.coll_api.func = "AllReduce";
        d.coll_api.count = 1024;
        d.coll_api.datatype = "ncclFloat32";
        d.coll_api.root = -1;
        start(&capi, "nccl:all_reduce", NCCL_EV_COLL_API, gapi.h, &d);
        pause_ms(3);
        stop(&capi);
        memset(&d, 0, sizeof d);
        d.p2p_api.func = "Send";
        d.p2p_api.count = 256;
        d.p2p_api.datatype = "ncclFloat16";
        start(&sapi, "nccl:send", NCCL_EV_P2P_API, gapi.h, &d);
        pause_ms(2);
        stop(&sapi);
        d.p2p_api.func = "Recv";
        start(&rapi, "nccl:recv", NCCL_EV_P2P_API, gapi.h, &d);
        pause_ms(2);
        stop(&rapi);
        p5->record_event_state(gapi.h, NCCL_ST_GROUP_END_API_START, NULL);
    }
    /* ... the launch: the plan's kernel launch, then (NCCL's hostStreamPlanTask) the group
     * event and its tasks, which stop in the order they started. */
    if (v5) {
        memset(&d, 0, sizeof d);
        d.kernel_launch.stream = (void *)0x5000;
        start(&kl, "nccl:kernel_launch", NCCL_EV_KERNEL_LAUNCH, gapi.h, &d);
        pause_ms(2);
        stop(&kl);
    }
    const char *sfx = v5 ? ":task" : "";
    char cname[64], sname[64], rname[64];
    snprintf(cname, sizeof cname, "nccl:all_reduce%s", sfx);
    snprintf(sname, sizeof sname, "nccl:send%s", sfx);
    snprintf(rname, sizeof rname, "nccl:recv%s", sfx);
    memset(&d, 0, sizeof d);
    start(&grp, "nccl:group", NCCL_EV_GROUP, NULL, &d);
    memset(&d, 0, sizeof d);
    d.coll.seq = 7;
    d.coll.func = "AllReduce";
    d.coll.count = 1024;
    d.coll.root = -1;
    d.coll.datatype = "ncclFloat32";
    d.coll.n_channels = 2;
    d.coll.n_warps = 8;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.parent_group = grp.h;
    start(&coll, cname, NCCL_EV_COLL, v5 ? capi.h : grp.h, &d);
    coll_task = coll.h;
    pause_ms(2);
    memset(&d, 0, sizeof d);
    d.p2p.func = "Send";
    d.p2p.count = 256;
    d.p2p.datatype = "ncclFloat16";
    d.p2p.peer = 2;
    d.p2p.n_channels = 1;
    start(&send, sname, NCCL_EV_P2P, v5 ? sapi.h : grp.h, &d);
    pause_ms(2);
    d.p2p.func = "Recv";
    d.p2p.peer = 0;
    start(&recv, rname, NCCL_EV_P2P, v5 ? rapi.h : grp.h, &d);
    pause_ms(2);
    stop(&coll);
    stop(&send);
    stop(&recv);
    stop(&grp);
    if (v5) stop(&gapi);
    /* The proxy thread works on the AllReduce after its task stopped, as NCCL's does. */
    pthread_t th;
    if (pthread_create(&th, NULL, proxy_thread, NULL) != 0) return 1;
    pthread_join(th, NULL);

    /* Bad calls: counted and ignored. */
    int local = 0;
    void *h = (void *)0x1;
    memset(&d, 0, sizeof d);
    d.type = (uint64_t)1 << 40;
    if (v5) {
        p5->start_event(ctx, &h, &d); /* an unknown type: no handle */
        p5->stop_event((void *)0x1234);
        p5->stop_event(&local);
        p5->stop_event(coll.h); /* stopped already */
        p5->record_event_state(&local, NCCL_ST_PROXY_CTRL_IDLE, NULL);
    } else {
        nccl_abi_descr_v4 d4;
        memset(&d4, 0, sizeof d4);
        d4.type = 0; /* no type */
        p4->start_event(ctx, &h, &d4);
        p4->stop_event((void *)0x1234);
        p4->stop_event(&local);
        p4->stop_event(coll.h);
        p4->record_event_state(&local, NCCL_ST_PROXY_CTRL_IDLE, NULL);
    }
    if (h != NULL) {
        fprintf(stderr, "nccl_driver: an unknown event type got a handle\n");
        return 1;
    }
    fprintf(log_out, "\n]}\n");
    fclose(log_out);
    /* NCCL_DRIVER_NO_FINALIZE=1: exit without finalize, as programs that never destroy their
     * communicators do. */
    const char *nf = getenv("NCCL_DRIVER_NO_FINALIZE");
    if (nf && strcmp(nf, "1") == 0) return 0;
    rc = v5 ? p5->finalize(ctx) : p4->finalize(ctx);
    if (rc != 0) {
        fprintf(stderr, "nccl_driver: finalize returned %d\n", rc);
        return 1;
    }
    return 0;
}
