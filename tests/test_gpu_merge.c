/* test_gpu_merge.c: strobe__gpu_merge on a real session's result, with a batch of device records
 * built by hand (no GPU needed): placement of runtime calls in the recorded tree, "External id"
 * and "correlation" links, device tracks, moved and left-out records, gpu_user_annotation spans,
 * occupancy and copy names, and the saved JSON (flows, deviceProperties, GPU track metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "core/gpu.h"
#include "result_check.h"
#include "trace/result_internal.h"
#include "strobe/backend.h"
#include "strobe/strobe.h"

#define OUT_DIR STROBE_TEST_OUT_DIR "/gpu"

/* Spins ~us microseconds on strobe's clock, so that ranges have room for calls inside them. */
static void spin_us(int64_t us) {
    int64_t end = strobe_clock_now_ns() + us * 1000;
    while (strobe_clock_now_ns() < end) {
    }
}

typedef struct span {
    int64_t s, e;
} span;

/* A range whose inner times [s, e] (taken after its begin and before its end) are returned. */
static span timed_range(const char *name, int scope, int64_t us) {
    strobe_range_begin_scope(name, scope);
    span t;
    t.s = strobe_clock_now_ns();
    spin_us(us);
    t.e = strobe_clock_now_ns();
    strobe_range_end();
    return t;
}

static const strobe__gpu_device dev0 = {
    .id = 0,
    .name = "Test GPU 0",
    .total_global_mem = 42949672960ull,
    .compute_major = 8,
    .compute_minor = 0,
    .max_threads_per_block = 1024,
    .max_threads_per_sm = 2048,
    .regs_per_block = 65536,
    .regs_per_sm = 65536,
    .warp_size = 32,
    .shared_mem_per_block = 49152,
    .shared_mem_per_block_optin = 166912,
    .shared_mem_per_sm = 167936,
    .num_sms = 108,
    .max_blocks_per_sm = 32,
};

/* The event of category `cat` whose "correlation" arg is `corr`, or -1. */
static long find_corr(const strobe_result *r, const char *cat, unsigned corr) {
    const strobe_event *ev = strobe_result_events(r);
    char want[24];
    snprintf(want, sizeof want, "%u", corr);
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        const char *c = strobe_event_arg(r, i, "correlation");
        if (strcmp(ev[i].category, cat) == 0 && c && strcmp(c, want) == 0) return (long)i;
    }
    return -1;
}

static size_t count_cat(const strobe_result *r, const char *cat) {
    size_t n = 0;
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        n += strcmp(ev[i].category, cat) == 0;
    return n;
}

static size_t count_str(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static void test_occupancy_and_names(void) {
    strobe__gpu_act k;
    memset(&k, 0, sizeof k);
    k.kind = STROBE__GPU_KERNEL;
    /* 256 threads = 8 warps a block; 64 registers -> 2048 a warp, 16384 a block: 4 blocks by
     * registers (warps allow 8, shared memory 167936 / 16384 = 10): 32 of 64 warps. */
    k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
    k.registers_per_thread = 64;
    k.static_shared = 16384;
    CHECK(strobe__gpu_occupancy(&dev0, &k) == 0.5);
    /* 128 threads, 48 KiB of shared memory: 3 blocks by shared memory, 12 of 64 warps. */
    k.block[0] = 128;
    k.registers_per_thread = 0;
    k.static_shared = 0;
    k.dynamic_shared = 49152;
    CHECK(strobe__gpu_occupancy(&dev0, &k) == 0.1875);
    /* Over the opt-in limit: cannot run. No block size: unknown. */
    k.dynamic_shared = 200000;
    CHECK(strobe__gpu_occupancy(&dev0, &k) == 0);
    k.dynamic_shared = 0;
    k.block[0] = 0;
    CHECK(strobe__gpu_occupancy(&dev0, &k) == 0);
    CHECK(strobe__gpu_occupancy(NULL, &k) == 0);

    char buf[128];
    strobe__gpu_act c;
    memset(&c, 0, sizeof c);
    c.kind = STROBE__GPU_MEMCPY;
    c.copy_kind = STROBE__COPY_HTOD;
    c.src_kind = STROBE__MEM_PAGEABLE;
    c.dst_kind = STROBE__MEM_DEVICE;
    strobe__gpu_copy_name(&c, buf, sizeof buf);
    CHECK_STR(buf, "Memcpy HtoD (Pageable -> Device)");
    c.copy_kind = STROBE__COPY_DTOH;
    c.src_kind = STROBE__MEM_DEVICE;
    c.dst_kind = STROBE__MEM_PINNED;
    strobe__gpu_copy_name(&c, buf, sizeof buf);
    CHECK_STR(buf, "Memcpy DtoH (Device -> Pinned)");
    c.kind = STROBE__GPU_MEMSET;
    c.dst_kind = STROBE__MEM_DEVICE;
    strobe__gpu_copy_name(&c, buf, sizeof buf);
    CHECK_STR(buf, "Memset (Device)");
}

static strobe__gpu_act host(uint8_t kind, const char *name, int64_t tid, int64_t s, int64_t e,
                            unsigned corr) {
    strobe__gpu_act a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.name = name;
    a.tid = tid;
    a.start_ns = s;
    a.end_ns = e;
    a.correlation = corr;
    a.cbid = kind == STROBE__GPU_RUNTIME ? 211 : 0;
    a.queued_ns = -1;
    return a;
}

static strobe__gpu_act work(uint8_t kind, const char *name, unsigned dev, unsigned stream,
                            int64_t s, int64_t e, unsigned corr) {
    strobe__gpu_act a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.name = name;
    a.device = dev;
    a.context = 1;
    a.stream = stream;
    a.start_ns = s;
    a.end_ns = e;
    a.correlation = corr;
    a.queued_ns = -1;
    a.grid[0] = 4, a.grid[1] = 106, a.grid[2] = 1;
    a.block[0] = 128, a.block[1] = 1, a.block[2] = 1;
    a.registers_per_thread = 30;
    return a;
}

static void test_merge(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = 4u << 20;
    cfg.prefault_bytes = 0;
    start_or_die(&cfg);
    strobe_range_begin_scope("step", STROBE_RECORD_SCOPE_USER_SCOPE);
    spin_us(50);
    strobe_push_correlation_id(41);
    span mm = timed_range("aten::mm", STROBE_RECORD_SCOPE_FUNCTION, 400);
    strobe_pop_correlation_id();
    spin_us(100);
    span add = timed_range("aten::add", STROBE_RECORD_SCOPE_FUNCTION, 400);
    strobe_range_begin_scope("inner", STROBE_RECORD_SCOPE_USER_SCOPE);
    span relu = timed_range("aten::relu", STROBE_RECORD_SCOPE_FUNCTION, 400);
    strobe_range_end();
    spin_us(50);
    strobe_range_end();
    span other = timed_range("other", STROBE_RECORD_SCOPE_FUNCTION, 400);
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);

    long imm = find_named(r, "aten::mm"), iadd = find_named(r, "aten::add");
    long irelu = find_named(r, "aten::relu"), iother = find_named(r, "other");
    long istep = find_named(r, "step"), iinner = find_named(r, "inner");
    CHECK(imm >= 0 && iadd >= 0 && irelu >= 0 && iother >= 0 && istep >= 0 && iinner >= 0);
    if (imm < 0 || iadd < 0 || irelu < 0 || iother < 0 || istep < 0 || iinner < 0) {
        strobe_result_free(r);
        return;
    }
    const strobe_event *ev = strobe_result_events(r);
    int64_t tid = ev[imm].tid;
    size_t cpu_events = strobe_result_event_count(r);
    /* An eighth of each range (400 us when the machine is idle, longer when the thread was
     * preempted: each range has its own). */
    int64_t qm = (mm.e - mm.s) / 8, qa = (add.e - add.s) / 8, qr = (relu.e - relu.s) / 8;
    int64_t qo = (other.e - other.s) / 8;

    strobe__gpu_act acts[32];
    size_t n = 0;
    /* aten::mm (External id 41): a launch with a driver call inside it; its kernel appears to
     * start 5 us before the launch (bad clocks): moved. */
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaLaunchKernel", tid, mm.s + qm, mm.s + 3 * qm, 1001);
    acts[n++] =
        host(STROBE__GPU_DRIVER, "cuLaunchKernel", tid, mm.s + qm + 10, mm.s + 2 * qm, 1002);
    acts[n++] =
        work(STROBE__GPU_KERNEL, "gemm_kernel", 0, 7, mm.s + qm - 5000, mm.s + qm + 15000, 1001);
    /* A call that starts in aten::mm and ends after it: a leaf of step, cut at mm's end. */
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaFree", tid, mm.e - 1000, mm.e + 40000, 1010);
    /* aten::add has no External id: it gets a fresh one. A copy of 1 MB in 10 us: 100 GB/s. */
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaMemcpyAsync", tid, add.s + qa, add.s + 2 * qa, 1003);
    strobe__gpu_act cp =
        work(STROBE__GPU_MEMCPY, NULL, 0, 7, add.s + 3 * qa, add.s + 3 * qa + 10000, 1003);
    cp.bytes = 1000000;
    cp.copy_kind = STROBE__COPY_HTOD;
    cp.src_kind = STROBE__MEM_PAGEABLE;
    cp.dst_kind = STROBE__MEM_DEVICE;
    acts[n++] = cp;
    /* aten::relu, in the nested annotation: a kernel on stream 9, a memset on device 1. */
    acts[n++] =
        host(STROBE__GPU_RUNTIME, "cudaLaunchKernel", tid, relu.s + qr, relu.s + 2 * qr, 1004);
    acts[n++] =
        work(STROBE__GPU_KERNEL, "relu_kernel", 0, 9, relu.s + 3 * qr, relu.s + 4 * qr, 1004);
    acts[n++] =
        host(STROBE__GPU_RUNTIME, "cudaMemsetAsync", tid, relu.s + 5 * qr, relu.s + 6 * qr, 1005);
    strobe__gpu_act ms =
        work(STROBE__GPU_MEMSET, NULL, 1, 7, relu.s + 6 * qr, relu.s + 7 * qr, 1005);
    ms.bytes = 4096;
    ms.dst_kind = STROBE__MEM_DEVICE;
    acts[n++] = ms;
    /* "other": no id around it, but an external correlation record (500); two overlapping
     * kernels on device 1 stream 3 (cannot happen, but must stay well formed); a sync. */
    acts[n++] =
        host(STROBE__GPU_RUNTIME, "cudaLaunchKernel", tid, other.s + qo, other.s + 2 * qo, 1006);
    acts[n++] = work(STROBE__GPU_KERNEL, "k_a", 1, 3, other.s + 2 * qo, other.s + 4 * qo, 1006);
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaLaunchKernel", tid, other.s + 2 * qo + 100,
                     other.s + 3 * qo, 1007);
    acts[n++] = work(STROBE__GPU_KERNEL, "k_b", 1, 3, other.s + 3 * qo, other.s + 5 * qo, 1007);
    acts[n++] = host(STROBE__GPU_SYNC, NULL, tid, other.s + 5 * qo, other.s + 6 * qo, 0);
    /* A thread that recorded nothing on the CPU. */
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaMalloc", 999999, other.s, other.s + 1000, 1008);
    /* Outside the window: left out and counted. */
    acts[n++] = host(STROBE__GPU_RUNTIME, "cudaEarly", tid, r->trace_start_ns - 5000,
                     r->trace_start_ns - 1000, 1020);
    acts[n++] =
        work(STROBE__GPU_KERNEL, "late", 0, 7, r->trace_end_ns + 10, r->trace_end_ns + 20, 1021);

    strobe__gpu_extcorr ext[] = {{1006, 500}};
    strobe__gpu_device devs[2] = {dev0, dev0};
    devs[1].id = 1;
    snprintf(devs[1].name, sizeof devs[1].name, "Test GPU 1");
    strobe__gpu_batch b;
    memset(&b, 0, sizeof b);
    b.acts = acts;
    b.act_count = n;
    b.ext = ext;
    b.ext_count = 1;
    b.devices = devs;
    b.device_count = 2;
    b.dropped_records = 3;
    b.outside_window = 2;
    b.clock_method = "callback";
    CHECK_EQ(strobe__gpu_merge(r, &b), 0);
    CHECK_EQ(check_wellformed(r), 0);
    ev = strobe_result_events(r);

    CHECK_EQ(strobe_result_event_count(r), cpu_events + 10 + 6 + 5);
    CHECK_EQ(count_cat(r, "cuda_runtime"), 8);
    CHECK_EQ(count_cat(r, "cuda_driver"), 1);
    CHECK_EQ(count_cat(r, "cuda_sync"), 1);
    CHECK_EQ(count_cat(r, "kernel"), 4);
    CHECK_EQ(count_cat(r, "gpu_memcpy"), 1);
    CHECK_EQ(count_cat(r, "gpu_memset"), 1);
    /* step on (0,7), (0,9), (1,7); inner on (0,9), (1,7). */
    CHECK_EQ(count_cat(r, "gpu_user_annotation"), 5);
    const strobe_stats *st = strobe_result_stats(r);
    CHECK_EQ(st->cuda_outside_window, 4);
    CHECK_EQ(st->cuda_dropped_records, 3);
    CHECK_EQ(st->cuda_moved_events, 1);
    CHECK(st->clipped_backend_events >= 2); /* cudaFree's start, k_b's end */

    /* Placement: the launch under aten::mm, the driver call under the launch. */
    imm = find_named(r, "aten::mm");
    iadd = find_named(r, "aten::add");
    istep = find_named(r, "step");
    long l1 = find_corr(r, "cuda_runtime", 1001), d1 = find_corr(r, "cuda_driver", 1002);
    long k1 = find_corr(r, "kernel", 1001);
    CHECK(l1 >= 0 && d1 >= 0 && k1 >= 0);
    if (l1 >= 0 && d1 >= 0 && k1 >= 0) {
        CHECK_EQ(ev[l1].parent, imm);
        CHECK_EQ(ev[l1].depth, ev[imm].depth + 1);
        CHECK_EQ(ev[d1].parent, l1);
        CHECK_EQ(ev[d1].depth, ev[l1].depth + 1);
        CHECK_EQ(ev[imm].correlation_id, 41);
        CHECK_EQ(ev[l1].correlation_id, 41);
        CHECK_EQ(ev[k1].correlation_id, 41);
        CHECK_EQ(ev[k1].start_ns, ev[l1].start_ns); /* moved */
        CHECK_EQ(ev[k1].end_ns - ev[k1].start_ns, 20000);
        CHECK_EQ(ev[k1].device_type, STROBE_DEVICE_CUDA);
        CHECK_EQ(ev[k1].device_index, 0);
        CHECK_EQ(ev[k1].tid, 7);
        CHECK_STR(ev[k1].name, "gemm_kernel");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "grid"), "[4, 106, 1]");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "block"), "[128, 1, 1]");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "stream"), "7");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "registers per thread"), "30");
        /* 424 blocks over 108 SMs; 4 warps a block; theoretical 100 %, achieved at most
         * 15.7 / 64 warps: 24 %. */
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "blocks per SM"), "3.925926");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "warps per SM"), "15.703704");
        CHECK_STR(strobe_event_arg(r, (size_t)k1, "est. achieved occupancy %"), "24");
        CHECK_STR(strobe_event_arg(r, (size_t)l1, "cbid"), "211");
        CHECK(strobe_event_arg(r, (size_t)k1, "queued") != NULL);
    }
    long lf = find_corr(r, "cuda_runtime", 1010);
    CHECK(lf >= 0);
    if (lf >= 0) {
        CHECK_EQ(ev[lf].parent, istep);
        CHECK_EQ(ev[lf].start_ns, ev[imm].end_ns);
        CHECK_EQ(ev[lf].correlation_id, 0); /* no device work, no id around it */
    }
    /* The fresh id: above 41 and 500, on aten::add, its launch and its copy. */
    long l2 = find_corr(r, "cuda_runtime", 1003), m1 = find_corr(r, "gpu_memcpy", 1003);
    CHECK(l2 >= 0 && m1 >= 0);
    if (l2 >= 0 && m1 >= 0) {
        CHECK_EQ(ev[iadd].correlation_id, 501);
        CHECK_EQ(ev[l2].correlation_id, 501);
        CHECK_EQ(ev[m1].correlation_id, 501);
        CHECK_EQ(ev[l2].parent, iadd);
        CHECK_STR(ev[m1].name, "Memcpy HtoD (Pageable -> Device)");
        CHECK_STR(strobe_event_arg(r, (size_t)m1, "bytes"), "1000000");
        CHECK_STR(strobe_event_arg(r, (size_t)m1, "memory bandwidth (GB/s)"), "100.000000");
    }
    long m2 = find_corr(r, "gpu_memset", 1005);
    CHECK(m2 >= 0);
    if (m2 >= 0) {
        CHECK_STR(ev[m2].name, "Memset (Device)");
        CHECK_EQ(ev[m2].device_index, 1);
    }
    /* The external correlation record gives "other"'s launch and kernel their id. */
    long l5 = find_corr(r, "cuda_runtime", 1006), k3 = find_corr(r, "kernel", 1006);
    CHECK(l5 >= 0 && k3 >= 0);
    if (l5 >= 0 && k3 >= 0) {
        CHECK_EQ(ev[l5].correlation_id, 500);
        CHECK_EQ(ev[k3].correlation_id, 500);
        CHECK_EQ(ev[l5].parent, find_named(r, "other"));
    }
    /* Annotation spans: (0,9) and (1,7) hold step > inner > work. */
    int per_track = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].category, "gpu_user_annotation") != 0) continue;
        CHECK_EQ(ev[i].device_type, STROBE_DEVICE_CUDA);
        if (ev[i].device_index == 0 && ev[i].tid == 7) {
            CHECK_STR(ev[i].name, "step");
            CHECK_EQ(ev[i].start_ns, ev[l1 >= 0 ? k1 : 0].start_ns);
            CHECK_EQ(ev[i].end_ns, ev[m1 >= 0 ? m1 : 0].end_ns);
            per_track++;
        }
        if (strcmp(ev[i].name, "inner") == 0) {
            CHECK(ev[i].parent != STROBE_NO_EVENT);
            if (ev[i].parent != STROBE_NO_EVENT) CHECK_STR(ev[ev[i].parent].name, "step");
            CHECK(ev[i].first_child != STROBE_NO_EVENT);
        }
    }
    CHECK_EQ(per_track, 1);
    /* Threads: one per (device, stream), named "stream N"; the unknown tid got a CPU thread. */
    const strobe_thread_info *th = strobe_result_threads(r);
    int streams = 0, new_cpu = 0;
    for (size_t t = 0; t < strobe_result_thread_count(r); t++) {
        if (th[t].device_type == STROBE_DEVICE_CUDA) {
            char want[32];
            snprintf(want, sizeof want, "stream %lld", (long long)th[t].tid);
            CHECK_STR(th[t].name, want);
            streams++;
        }
        if (th[t].tid == 999999) new_cpu++;
    }
    CHECK_EQ(streams, 4); /* (0,7) (0,9) (1,3) (1,7) */
    CHECK_EQ(new_cpu, 1);

    mkdir(OUT_DIR, 0755);
    CHECK_EQ(strobe_result_save(r, OUT_DIR "/merged.json"), 0);
    strobe_result_free(r);

    char *json = read_all(OUT_DIR "/merged.json");
    CHECK(json != NULL);
    if (json == NULL) return;
    CHECK_EQ(count_str(json, "\"ph\": \"s\""), 6);
    CHECK_EQ(count_str(json, "\"ph\": \"f\""), 6);
    CHECK_EQ(count_str(json, "\"cat\": \"ac2g\""), 12);
    CHECK(strstr(json, "{\"ph\": \"s\", \"id\": 1001, ") != NULL);
    CHECK(strstr(json, "{\"ph\": \"f\", \"id\": 1001, \"pid\": 0, \"tid\": 7, ") != NULL);
    CHECK(strstr(json, "{\"ph\": \"f\", \"id\": 1005, \"pid\": 1, \"tid\": 7, ") != NULL);
    CHECK(strstr(json, "\"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": "
                       "\"Test GPU 0\", \"totalGlobalMem\": 42949672960") != NULL);
    CHECK(strstr(json, "\"numSms\": 108") != NULL);
    CHECK(strstr(json, "\"strobe_gpu_clock\": {\"method\": \"callback\", \"offset_ns\": 0}") !=
          NULL);
    CHECK(strstr(json, "\"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 1, \"tid\": 0, "
                       "\"args\": {\"name\": \"GPU 1\"}") != NULL);
    CHECK(strstr(json, "\"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": 0, \"tid\": 9, "
                       "\"args\": {\"name\": \"stream 9\"}") != NULL);
    CHECK(strstr(json, "\"cuda_outside_window\": 4") != NULL);
    free(json);
}

/* A CUDA graph launched once: one cudaGraphLaunch, one correlation id, three kernels (two on
 * stream 7, one on stream 9, listed latest first). Kineto's flows: one "s" on the launch, one "f"
 * on every kernel, all with the correlation id. Saved as JSON and .pftrace (validate_traces
 * checks both; test_perfetto counts the .pftrace's flows). */
static void test_graph_launch(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = 4u << 20;
    cfg.prefault_bytes = 0;
    start_or_die(&cfg);
    span g = timed_range("replay", STROBE_RECORD_SCOPE_USER_SCOPE, 400);
    strobe_result *r = stop_or_die();
    long ig = find_named(r, "replay");
    CHECK(ig >= 0);
    if (ig < 0) {
        strobe_result_free(r);
        return;
    }
    int64_t tid = strobe_result_events(r)[ig].tid, q = (g.e - g.s) / 8;
    strobe__gpu_act acts[4];
    acts[0] = host(STROBE__GPU_RUNTIME, "cudaGraphLaunch", tid, g.s + q, g.s + 2 * q, 3001);
    acts[0].cbid = 311;
    acts[1] = work(STROBE__GPU_KERNEL, "graph_k3", 0, 7, g.s + 6 * q, g.s + 7 * q, 3001);
    acts[2] = work(STROBE__GPU_KERNEL, "graph_k1", 0, 7, g.s + 3 * q, g.s + 4 * q, 3001);
    acts[3] = work(STROBE__GPU_KERNEL, "graph_k2", 0, 9, g.s + 4 * q, g.s + 5 * q, 3001);
    for (size_t i = 1; i < 4; i++)
        acts[i].graph_id = 5;
    strobe__gpu_batch b;
    memset(&b, 0, sizeof b);
    b.acts = acts;
    b.act_count = 4;
    b.devices = &dev0;
    b.device_count = 1;
    b.clock_method = "callback";
    CHECK_EQ(strobe__gpu_merge(r, &b), 0);
    CHECK_EQ(check_wellformed(r), 0);
    CHECK_EQ(count_cat(r, "kernel"), 3);
    CHECK(find_corr(r, "cuda_runtime", 3001) >= 0);

    mkdir(OUT_DIR, 0755);
    CHECK_EQ(strobe_result_save(r, OUT_DIR "/graph.json"), 0);
    r->saved = 0; /* the writers are pure: the same result once more, as Perfetto protobuf */
    CHECK_EQ(strobe_result_save(r, OUT_DIR "/graph.pftrace"), 0);
    strobe_result_free(r);

    char *json = read_all(OUT_DIR "/graph.json");
    CHECK(json != NULL);
    if (json == NULL) return;
    CHECK_EQ(count_str(json, "\"ph\": \"s\""), 1);
    CHECK_EQ(count_str(json, "\"ph\": \"s\", \"id\": 3001, "), 1);
    CHECK_EQ(count_str(json, "\"ph\": \"f\""), 3);
    CHECK_EQ(count_str(json, "{\"ph\": \"f\", \"id\": 3001, \"pid\": 0, \"tid\": 7, "), 2);
    CHECK_EQ(count_str(json, "{\"ph\": \"f\", \"id\": 3001, \"pid\": 0, \"tid\": 9, "), 1);
    CHECK_EQ(count_str(json, "\"bp\": \"e\""), 3);
    CHECK_EQ(count_str(json, "\"graph id\": 5"), 3);
    free(json);
}

/* Random records (overlapping each other and the recorded ranges any which way, nested and
 * not, on known and unknown threads) merged again and again into one result: it stays well
 * formed, and nothing is lost that is not counted. */
static void test_random(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = 4u << 20;
    cfg.prefault_bytes = 0;
    start_or_die(&cfg);
    for (int i = 0; i < 6; i++) {
        strobe_range_begin_scope(i % 2 ? "ann" : "op", i % 2 ? STROBE_RECORD_SCOPE_USER_SCOPE : 0);
        spin_us(20);
        timed_range("leaf", STROBE_RECORD_SCOPE_FUNCTION, 30);
        strobe_instant("mark");
        strobe_counter("ctr", i);
        timed_range("leaf2", STROBE_RECORD_SCOPE_USER_SCOPE, 30);
        strobe_range_end();
        spin_us(10);
    }
    strobe_result *r = stop_or_die();
    int64_t t0 = r->trace_start_ns, span_ns = r->trace_end_ns - r->trace_start_ns;
    int64_t tid = strobe_result_events(r)[0].tid;
    unsigned seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 8) & 0xffffff)
    strobe__gpu_act acts[64];
    uint64_t expect_events = strobe_result_event_count(r);
    for (int round = 0; round < 200; round++) {
        size_t n = 0, in_window = 0;
        for (; n < 64; n++) {
            strobe__gpu_act a;
            memset(&a, 0, sizeof a);
            a.kind = (uint8_t)(RND() % 7);
            a.start_ns = t0 + (int64_t)(RND() % (unsigned)(span_ns + 2000)) - 1000;
            a.end_ns = a.start_ns + (int64_t)(RND() % 100000);
            a.correlation = 1 + RND() % 40;
            a.tid = RND() % 4 ? tid : 777;
            a.device = RND() % 2;
            a.stream = 7 + RND() % 3;
            a.block[0] = 64;
            a.grid[0] = 1;
            a.queued_ns = -1;
            acts[n] = a;
            in_window += a.start_ns >= r->trace_start_ns && a.end_ns <= r->trace_end_ns;
        }
        strobe__gpu_batch b;
        memset(&b, 0, sizeof b);
        b.acts = acts;
        b.act_count = n;
        b.devices = &dev0;
        b.device_count = 1;
        uint64_t before = strobe_result_event_count(r);
        CHECK_EQ(strobe__gpu_merge(r, &b), 0);
        /* Every record in the window became one event, plus annotation spans. */
        CHECK(strobe_result_event_count(r) >= before + in_window);
        expect_events += in_window;
        int bad = check_wellformed(r);
        CHECK_EQ(bad, 0);
        if (bad && getenv("GPU_DUMP")) {
            const strobe_event *ev = strobe_result_events(r);
            for (size_t i = 0; i < strobe_result_event_count(r); i++)
                fprintf(stderr, "%zu %s %s k%d [%lld,%lld] p%d fc%d ns%d d%u t%u\n", i, ev[i].name,
                        ev[i].category, ev[i].kind, (long long)(ev[i].start_ns - t0),
                        (long long)(ev[i].end_ns - t0), (int)ev[i].parent, (int)ev[i].first_child,
                        (int)ev[i].next_sibling, ev[i].depth, ev[i].thread_index);
        }
        if (bad) break;
    }
#undef RND
    CHECK(strobe_result_event_count(r) >= expect_events);
    strobe_result_free(r);
}

int main(void) {
    test_occupancy_and_names();
    test_merge();
    test_graph_launch();
    test_random();
    return check_result();
}
