/* nvtx_target: a program that annotates itself with NVTX only (the CUDA toolkit's nvtx3 headers)
 * and runs a strobe session through the public API; test_nvtx.sh runs it with
 * NVTX_INJECTION64_PATH naming libstrobe.so and checks the saved trace.
 *
 *   nvtx_target TRACE [stream|optin]
 *
 * What it does, in order (test_nvtx.sh checks each):
 * 1. NVTX calls before any session ("before ..." names): nothing may be recorded;
 * 2. a session (streamed to TRACE with `stream`; per-thread mode with `optin`): named threads,
 *    nested push/pop, marks, W strings, Ex attributes (color, named category, every payload
 *    type), two domains with registered strings and categories, a reused buffer with new text,
 *    start/end ranges ended on another thread and overlapping each other, ranges on a worker
 *    thread named from the main thread;
 * 3. NVTX calls after the stop ("after ..." names): nothing recorded, nothing crashes.
 * It prints "main TID" and "worker TID" for the checker. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "strobe/strobe.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;
static uint32_t worker_tid;
static nvtxRangeId_t async_id;

static void wait_stage(int s) {
    pthread_mutex_lock(&mu);
    while (stage < s)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void set_stage(int s) {
    pthread_mutex_lock(&mu);
    stage = s;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void *worker(void *arg) {
    (void)arg;
    int optin = arg != NULL;
    worker_tid = (uint32_t)syscall(SYS_gettid);
    set_stage(1);
    wait_stage(2); /* the main thread named this one */
    if (optin) {
        /* Per-thread mode: not enabled yet, so this range is not recorded. */
        nvtxRangePushA("worker not enabled");
        nvtxRangePop();
        strobe_enable_in_child_thread();
    }
    nvtxRangePushA("worker-range");
    nvtxMarkA("worker-mark");
    nvtxRangeEnd(async_id); /* started on the main thread */
    nvtxRangePop();
    return NULL;
}

static void payload_range(const char *name, int type, uint64_t bits) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    a.payloadType = type;
    memcpy(&a.payload, &bits, sizeof bits);
    nvtxRangePushEx(&a);
    nvtxRangePop();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: nvtx_target TRACE [stream|optin]\n");
        return 2;
    }
    int stream = argc > 2 && strcmp(argv[2], "stream") == 0;
    int optin = argc > 2 && strcmp(argv[2], "optin") == 0;

    /* 1. No session. */
    nvtxRangePushA("before push");
    nvtxMarkA("before mark");
    nvtxRangeId_t before = nvtxRangeStartA("before start");
    nvtxRangeEnd(before);
    nvtxRangePop();
    nvtxDomainHandle_t alpha = nvtxDomainCreateA("alpha");
    nvtxDomainHandle_t beta = nvtxDomainCreateA("beta");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(alpha, "reg-alpha");
    nvtxNameCategoryA(7, "io");
    nvtxDomainNameCategoryA(beta, 3, "compute");

    /* 2. A session. */
    strobe_config cfg;
    strobe_config_init(&cfg);
    if (stream) cfg.stream_path = argv[1];
    if (optin) cfg.thread_mode = STROBE_THREADS_OPT_IN;
    int rc = strobe_start(&cfg);
    if (rc != 0) {
        fprintf(stderr, "strobe_start: %s\n", strobe_strerror(rc));
        return 1;
    }
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
    pthread_t th;
    pthread_create(&th, NULL, worker, optin ? (void *)1 : NULL);
    wait_stage(1);
    nvtxNameOsThreadA(worker_tid, "nvtx-worker");

    int level0 = nvtxRangePushA("outer");
    int level1 = nvtxRangePushA("inner");
    nvtxMarkA("tick");
    int pop1 = nvtxRangePop();
    int pop0 = nvtxRangePop();
    /* With the tool, NVTX returns the levels; without, NVTX_NO_PUSH_POP_TRACKING (-2). */
    int tooled = getenv("NVTX_INJECTION64_PATH") != NULL;
    if (tooled && (level0 != 0 || level1 != 1 || pop1 != 1 || pop0 != 0)) {
        fprintf(stderr, "levels: push %d %d, pop %d %d\n", level0, level1, pop1, pop0);
        return 1;
    }
    for (int i = 0; i < 3; i++) { /* the same literal again: one interned site */
        nvtxRangePushA("repeat");
        nvtxRangePop();
    }
    nvtxRangePushW(L"wide \u00e9 \u2713");
    nvtxMarkW(L"wide mark \u00fc");
    nvtxRangePop();

    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xff112233u;
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 42;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "ex-colored";
    nvtxRangePushEx(&a);
    nvtxRangePop();

    /* A category named after its first use: the name reaches that range too. */
    a.category = 9;
    a.colorType = 0;
    a.payloadType = 0;
    a.message.ascii = "late-category";
    nvtxRangePushEx(&a);
    nvtxRangePop();
    nvtxNameCategoryA(9, "late");

    double d = 2.5;
    float f = -0.25f;
    uint64_t bits;
    memcpy(&bits, &d, sizeof d);
    payload_range("p-double", NVTX_PAYLOAD_TYPE_DOUBLE, bits);
    payload_range("p-i64", NVTX_PAYLOAD_TYPE_INT64, (uint64_t)(int64_t)-9000000000ll);
    payload_range("p-u32", NVTX_PAYLOAD_TYPE_UNSIGNED_INT32, 4000000000u);
    payload_range("p-i32", NVTX_PAYLOAD_TYPE_INT32, (uint32_t)-7);
    uint32_t fb;
    memcpy(&fb, &f, sizeof f);
    payload_range("p-float", NVTX_PAYLOAD_TYPE_FLOAT, fb);

    /* Two domains: a registered string in alpha, a named category in beta nested inside it. */
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    nvtxDomainRangePushEx(alpha, &a);
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "beta-range";
    a.category = 3;
    nvtxDomainRangePushEx(beta, &a);
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "beta-mark";
    a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    a.payload.iValue = -5;
    nvtxDomainMarkEx(beta, &a);
    nvtxDomainRangePop(beta);
    nvtxDomainRangePop(alpha);

    /* A buffer the program rewrites: each range keeps its own text. */
    char buf[32];
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof buf, "dyn %d", i);
        nvtxRangePushA(buf);
        nvtxRangePop();
    }

    /* Start/end: one ended on the worker, two overlapping without nesting. */
    async_id = nvtxRangeStartA("async-op");
    nvtxRangeId_t ov1 = nvtxRangeStartA("ov1");
    usleep(2000);
    nvtxRangeId_t ov2 = nvtxRangeStartA("ov2");
    usleep(2000);
    nvtxRangeEnd(ov1);
    usleep(2000);
    nvtxRangeEnd(ov2);
    set_stage(2);
    pthread_join(th, NULL);

    strobe_result *r = NULL;
    rc = strobe_stop(&r);
    if (rc == 0 && !stream) rc = strobe_result_save(r, argv[1]);
    strobe_result_free(r);
    if (rc != 0) {
        fprintf(stderr, "stop/save: %s\n", strobe_strerror(rc));
        return 1;
    }

    /* 3. After the stop. */
    nvtxRangePushA("after push");
    nvtxMarkA("after mark");
    nvtxRangeEnd(nvtxRangeStartA("after start"));
    nvtxDomainRangePushEx(alpha, &a);
    nvtxDomainRangePop(alpha);
    nvtxRangePop();
    nvtxDomainDestroy(alpha);
    nvtxDomainDestroy(beta);
    printf("main %ld\nworker %u\n", (long)syscall(SYS_gettid), (unsigned)worker_tid);
    return 0;
}
