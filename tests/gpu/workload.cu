/* workload.cu: a CUDA program instrumented with strobe, for scripts/gpu-check.sh.
 *
 *   gpu-workload trace TRACE MANIFEST   launches a known mix of device work under a strobe
 *                                       session, saves the trace to TRACE and writes what it
 *                                       launched (JSON) to MANIFEST for check_gpu_trace.py
 *   gpu-workload overhead [N]           N (default 20000) empty kernels timed unprofiled and
 *                                       profiled in the same process; prints the overhead
 *
 * Contents: kernels, the manifest, checked CUDA calls, the traced workload (main thread, worker
 * thread, graph), the overhead mode, main.
 *
 * Every kernel is extern "C" so that its name in the trace is the plain name whether or not the
 * tracer demangles. Each kernel is launched once before the session starts: lazy module loading
 * then happens outside the window, and the window holds only the work the manifest lists. Every
 * CUDA call that makes device work runs inside an operator range, so that every device event has
 * an "External id" to link to. */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strobe/strobe.h"

/* ---- Kernels ------------------------------------------------------------------------------ */

extern "C" __global__ void strobe_k_fill(float *p, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

extern "C" __global__ void strobe_k_axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

/* A naive n x n matrix product (the "aten::mm" of this workload). */
extern "C" __global__ void strobe_k_mm(float *c, const float *a, const float *b, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float s = 0.0f;
        for (int k = 0; k < n; k++)
            s += a[row * n + k] * b[k * n + col];
        c[row * n + col] = s;
    }
}

/* Launched only inside the CUDA graph. */
extern "C" __global__ void strobe_k_graph_scale(float *p, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= a;
}

extern "C" __global__ void strobe_k_graph_add(float *y, const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

/* The overhead mode's kernel. */
extern "C" __global__ void strobe_k_empty(void) {}

/* ---- The manifest: what the traced window launched ---------------------------------------- */

struct manifest {
    std::mutex mu;
    std::map<std::string, long> kernels;   /* direct launches, per kernel name */
    std::map<std::string, long> copies;    /* per direction: HtoD, DtoH, DtoD */
    std::map<std::string, long> memsets;   /* per API: cudaMemset, cudaMemsetAsync */
    std::map<std::string, long> per_graph; /* kernels per graph launch, per name */
    long graph_launches = 0;
    long long stream_ids[2] = {0, 0};

    void kernel(const char *name) {
        std::lock_guard<std::mutex> g(mu);
        kernels[name]++;
    }
    void copy(const char *dir) {
        std::lock_guard<std::mutex> g(mu);
        copies[dir]++;
    }
    void memset(const char *api) {
        std::lock_guard<std::mutex> g(mu);
        memsets[api]++;
    }
};

static void put_map(FILE *f, const char *key, const std::map<std::string, long> &m, bool last) {
    long total = 0;
    fprintf(f, "  \"%s\": {", key);
    const char *sep = "";
    for (const auto &kv : m) {
        fprintf(f, "%s\"%s\": %ld", sep, kv.first.c_str(), kv.second);
        total += kv.second;
        sep = ", ";
    }
    fprintf(f, "},\n  \"%s_total\": %ld%s\n", key, total, last ? "" : ",");
}

static int write_manifest(manifest &m, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    long per_graph_total = 0;
    for (const auto &kv : m.per_graph)
        per_graph_total += kv.second;
    /* Total kernels per name in the trace: direct launches plus graph launches' kernels. */
    std::map<std::string, long> all = m.kernels;
    for (const auto &kv : m.per_graph)
        all[kv.first] += kv.second * m.graph_launches;
    fprintf(f, "{\n  \"graph_launches\": %ld,\n  \"kernels_per_graph\": %ld,\n", m.graph_launches,
            per_graph_total);
    fprintf(f, "  \"streams\": [%lld, %lld],\n  \"host_threads\": 2,\n", m.stream_ids[0],
            m.stream_ids[1]);
    put_map(f, "graph_kernels", m.per_graph, false);
    put_map(f, "direct_kernels", m.kernels, false);
    put_map(f, "kernels", all, false);
    put_map(f, "memcpys", m.copies, false);
    put_map(f, "memsets", m.memsets, true);
    fprintf(f, "}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- Checked CUDA calls ------------------------------------------------------------------- */

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gpu-workload: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CK_LAUNCH() CK(cudaGetLastError())

static const int N = 1 << 18; /* floats per vector: 1 MiB */
static const int MM = 64;     /* matrix side */
static const int BLOCK = 256;
static const int GRID = (N + BLOCK - 1) / BLOCK;

static void launch_fill(manifest &m, cudaStream_t s, float *p, float v) {
    strobe_k_fill<<<GRID, BLOCK, 0, s>>>(p, v, N);
    CK_LAUNCH();
    m.kernel("strobe_k_fill");
}

static void launch_axpy(manifest &m, cudaStream_t s, float *y, const float *x, float a) {
    strobe_k_axpy<<<GRID, BLOCK, 0, s>>>(y, x, a, N);
    CK_LAUNCH();
    m.kernel("strobe_k_axpy");
}

static void launch_mm(manifest &m, cudaStream_t s, float *c, const float *a, const float *b) {
    dim3 block(16, 16), grid((MM + 15) / 16, (MM + 15) / 16);
    strobe_k_mm<<<grid, block, 0, s>>>(c, a, b, MM);
    CK_LAUNCH();
    m.kernel("strobe_k_mm");
}

/* ---- The traced workload ------------------------------------------------------------------ */

struct buffers {
    float *d_x, *d_y, *d_z, *d_a, *d_b, *d_c, *d_w; /* device */
    float *h_page, *h_pin, *h_pin2;                 /* pageable, pinned, pinned */
};

static const int STEPS = 3;
static const int GRAPH_LAUNCHES = 4;
static const int WORKER_ITERS = 5;

/* The second host thread: its own stream, its own ranges. */
static void worker(manifest &m, cudaStream_t s2, buffers *b) {
    strobe_set_thread_name("gpu-check worker");
    for (int i = 0; i < WORKER_ITERS; i++) {
        STROBE_SCOPE("worker_step");
        {
            STROBE_OP("aten::add_");
            launch_axpy(m, s2, b->d_w, b->d_z, 0.5f);
        }
        {
            STROBE_OP("aten::fill_");
            launch_fill(m, s2, b->d_z, (float)i);
        }
    }
    {
        STROBE_OP("aten::copy_");
        CK(cudaMemcpyAsync(b->h_pin2, b->d_w, N * sizeof(float), cudaMemcpyDeviceToHost, s2));
        m.copy("DtoH");
    }
    {
        STROBE_OP("sync");
        CK(cudaStreamSynchronize(s2));
    }
}

/* Captures the graph on s1: scale, add, scale (three kernels per launch). Capture runs inside
 * the window on purpose: its launch calls make no device work and must not be mistaken for
 * kernels. */
static cudaGraphExec_t capture_graph(manifest &m, cudaStream_t s1, buffers *b) {
    STROBE_OP("graph_capture");
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
    strobe_k_graph_scale<<<GRID, BLOCK, 0, s1>>>(b->d_x, 1.0001f, N);
    strobe_k_graph_add<<<GRID, BLOCK, 0, s1>>>(b->d_y, b->d_x, N);
    strobe_k_graph_scale<<<GRID, BLOCK, 0, s1>>>(b->d_y, 0.9999f, N);
    CK(cudaStreamEndCapture(s1, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphDestroy(graph));
    m.per_graph["strobe_k_graph_scale"] = 2;
    m.per_graph["strobe_k_graph_add"] = 1;
    return exec;
}

static void warm_up(cudaStream_t s, buffers *b) {
    dim3 block(16, 16), grid((MM + 15) / 16, (MM + 15) / 16);
    strobe_k_fill<<<GRID, BLOCK, 0, s>>>(b->d_x, 1.0f, N);
    strobe_k_axpy<<<GRID, BLOCK, 0, s>>>(b->d_y, b->d_x, 1.0f, N);
    strobe_k_mm<<<grid, block, 0, s>>>(b->d_c, b->d_a, b->d_b, MM);
    strobe_k_graph_scale<<<GRID, BLOCK, 0, s>>>(b->d_x, 1.0f, N);
    strobe_k_graph_add<<<GRID, BLOCK, 0, s>>>(b->d_y, b->d_x, N);
    strobe_k_empty<<<1, 1, 0, s>>>();
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
}

static int save_result(strobe_result *res, const char *trace_path) {
    size_t nw = strobe_result_warning_count(res);
    for (size_t i = 0; i < nw; i++)
        printf("gpu-workload: trace warning: %s\n", strobe_result_warning(res, i));
    const strobe_stats *st = strobe_result_stats(res);
    printf("gpu-workload: %zu events; cuda_dropped_records %llu, cuda_outside_window %llu, "
           "cuda_moved_events %llu\n",
           strobe_result_event_count(res), (unsigned long long)st->cuda_dropped_records,
           (unsigned long long)st->cuda_outside_window, (unsigned long long)st->cuda_moved_events);
    int rc = strobe_result_save(res, trace_path);
    if (rc != 0) {
        fprintf(stderr, "gpu-workload: strobe_result_save(%s): %s\n", trace_path,
                strobe_strerror(rc));
        return 1;
    }
    printf("gpu-workload: trace saved to %s\n", trace_path);
    return 0;
}

static int run_trace(const char *trace_path, const char *manifest_path) {
    manifest m;
    buffers b;
    size_t bytes = N * sizeof(float), mbytes = MM * MM * sizeof(float);
    cudaStream_t s1, s2;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    unsigned long long id1 = 0, id2 = 0;
    CK(cudaStreamGetId(s1, &id1));
    CK(cudaStreamGetId(s2, &id2));
    m.stream_ids[0] = (long long)id1;
    m.stream_ids[1] = (long long)id2;
    CK(cudaMalloc(&b.d_x, bytes));
    CK(cudaMalloc(&b.d_y, bytes));
    CK(cudaMalloc(&b.d_z, bytes));
    CK(cudaMalloc(&b.d_w, bytes));
    CK(cudaMalloc(&b.d_a, mbytes));
    CK(cudaMalloc(&b.d_b, mbytes));
    CK(cudaMalloc(&b.d_c, mbytes));
    b.h_page = (float *)malloc(bytes);
    if (!b.h_page) return 1;
    for (int i = 0; i < N; i++)
        b.h_page[i] = 1.0f;
    CK(cudaMallocHost(&b.h_pin, bytes));
    CK(cudaMallocHost(&b.h_pin2, bytes));
    memset(b.h_pin, 0, bytes);
    warm_up(s1, &b);
    warm_up(s2, &b);
    CK(cudaDeviceSynchronize());

    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    cfg.cuda_flags = STROBE_CUDA_SYNC;
    cfg.trace_name = "strobe gpu-check";
    /* gpu-check.sh's streaming pass: the session is streamed to this file (the saved result then
     * holds the device activity only). */
    const char *stream_path = getenv("STROBE_GPU_STREAM");
    if (stream_path && stream_path[0]) cfg.stream_path = stream_path;
    int rc = strobe_start(&cfg);
    if (rc != 0) {
        fprintf(stderr, "gpu-workload: strobe_start: %s\n", strobe_strerror(rc));
        return 1;
    }
    strobe_set_thread_name("gpu-check main");

    /* Inputs: pageable and pinned host-to-device copies, memsets. */
    {
        STROBE_SCOPE("load_inputs");
        {
            STROBE_OP("aten::copy_");
            CK(cudaMemcpy(b.d_x, b.h_page, bytes, cudaMemcpyHostToDevice)); /* pageable */
            m.copy("HtoD");
        }
        {
            STROBE_OP("aten::copy_");
            CK(cudaMemcpyAsync(b.d_y, b.h_pin, bytes, cudaMemcpyHostToDevice, s1)); /* pinned */
            m.copy("HtoD");
        }
        {
            STROBE_OP("aten::zero_");
            CK(cudaMemset(b.d_z, 0, bytes));
            m.memset("cudaMemset");
            CK(cudaMemsetAsync(b.d_w, 0, bytes, s1));
            m.memset("cudaMemsetAsync");
        }
        {
            STROBE_OP("aten::fill_");
            launch_fill(m, s1, b.d_a, 0.5f);
            CK(cudaMemsetAsync(b.d_b, 0, mbytes, s1));
            m.memset("cudaMemsetAsync");
        }
        {
            STROBE_OP("sync");
            CK(cudaStreamSynchronize(s1));
        }
    }

    /* The second host thread runs on s2 while the main thread steps on s1. */
    std::thread t(worker, std::ref(m), s2, &b);

    /* Steps: step > forward > aten::mm / aten::add_ nest three deep. */
    for (int step = 0; step < STEPS; step++) {
        STROBE_SCOPE("step");
        {
            STROBE_OP("forward");
            {
                STROBE_OP("aten::mm");
                launch_mm(m, s1, b.d_c, b.d_a, b.d_b);
            }
            {
                STROBE_OP("aten::add_");
                launch_axpy(m, s1, b.d_y, b.d_x, 0.25f);
            }
        }
        {
            STROBE_OP("backward");
            STROBE_OP("aten::mm");
            launch_mm(m, s1, b.d_c, b.d_b, b.d_a);
            launch_mm(m, s1, b.d_c, b.d_a, b.d_a);
        }
        {
            STROBE_OP("aten::copy_");
            CK(cudaMemcpyAsync(b.d_x, b.d_y, bytes, cudaMemcpyDeviceToDevice, s1));
            m.copy("DtoD");
        }
    }

    /* The CUDA graph: captured once, launched GRAPH_LAUNCHES times. */
    cudaGraphExec_t exec = capture_graph(m, s1, &b);
    for (int i = 0; i < GRAPH_LAUNCHES; i++) {
        STROBE_OP("graph_replay");
        CK(cudaGraphLaunch(exec, s1));
        m.graph_launches++;
    }

    /* Outputs: pinned and pageable device-to-host copies. */
    {
        STROBE_SCOPE("read_outputs");
        {
            STROBE_OP("aten::copy_");
            CK(cudaMemcpyAsync(b.h_pin, b.d_y, bytes, cudaMemcpyDeviceToHost, s1)); /* pinned */
            m.copy("DtoH");
        }
        {
            STROBE_OP("aten::copy_");
            CK(cudaMemcpy(b.h_page, b.d_c, mbytes, cudaMemcpyDeviceToHost)); /* pageable */
            m.copy("DtoH");
        }
    }
    t.join();
    {
        STROBE_OP("sync");
        CK(cudaDeviceSynchronize());
    }

    strobe_result *res = NULL;
    rc = strobe_stop(&res);
    if (rc != 0) {
        fprintf(stderr, "gpu-workload: strobe_stop: %s\n", strobe_strerror(rc));
        return 1;
    }
    int failed = save_result(res, trace_path);
    strobe_result_free(res);
    if (write_manifest(m, manifest_path) != 0)
        failed = 1;
    else
        printf("gpu-workload: manifest written to %s\n", manifest_path);

    CK(cudaGraphExecDestroy(exec));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    cudaFree(b.d_x), cudaFree(b.d_y), cudaFree(b.d_z), cudaFree(b.d_w);
    cudaFree(b.d_a), cudaFree(b.d_b), cudaFree(b.d_c);
    cudaFreeHost(b.h_pin), cudaFreeHost(b.h_pin2);
    free(b.h_page);
    return failed;
}

/* ---- The overhead mode -------------------------------------------------------------------- */

static double now_ms(void) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* n empty kernels back to back, then one synchronize: the launch path's cost dominates. */
static double launch_loop(cudaStream_t s, long n) {
    double t0 = now_ms();
    for (long i = 0; i < n; i++)
        strobe_k_empty<<<1, 1, 0, s>>>();
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    return now_ms() - t0;
}

static int run_overhead(long n, const char *trace_path) {
    cudaStream_t s;
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    strobe_k_empty<<<1, 1, 0, s>>>();
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    launch_loop(s, n); /* warm-up: driver queues and caches */

    /* Best of three each way, interleaved, so that clock boosts and noise hit both sides. */
    double base = 1e300, prof = 1e300, stop_ms = 0, start_ms = 0;
    size_t events = 0;
    strobe_result *keep = NULL;
    for (int rep = 0; rep < 3; rep++) {
        double t = launch_loop(s, n);
        if (t < base) base = t;

        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
        double t0 = now_ms();
        int rc = strobe_start(&cfg);
        if (rc != 0) {
            fprintf(stderr, "gpu-workload: strobe_start: %s\n", strobe_strerror(rc));
            return 1;
        }
        start_ms = now_ms() - t0;
        t = launch_loop(s, n);
        if (t < prof) prof = t;
        strobe_result *res = NULL;
        t0 = now_ms();
        rc = strobe_stop(&res);
        stop_ms = now_ms() - t0;
        if (rc != 0) {
            fprintf(stderr, "gpu-workload: strobe_stop: %s\n", strobe_strerror(rc));
            return 1;
        }
        events = strobe_result_event_count(res);
        if (rep == 2)
            keep = res;
        else
            strobe_result_free(res);
    }
    size_t kernels = 0;
    const strobe_event *ev = strobe_result_events(keep);
    for (size_t i = 0; i < events; i++)
        if (ev[i].category && strcmp(ev[i].category, "kernel") == 0) kernels++;
    for (size_t i = 0; i < strobe_result_warning_count(keep); i++)
        printf("overhead: trace warning: %s\n", strobe_result_warning(keep, i));
    printf("overhead: %ld empty kernels, best of 3 runs each\n", n);
    printf("overhead: unprofiled %.3f ms (%.3f us/launch)\n", base, base * 1e3 / n);
    printf("overhead: profiled   %.3f ms (%.3f us/launch)\n", prof, prof * 1e3 / n);
    printf("overhead: overhead   %.1f %% (%+.3f us/launch)\n", (prof - base) / base * 100.0,
           (prof - base) * 1e3 / n);
    printf("overhead: last profiled run: strobe_start %.3f ms, strobe_stop %.3f ms, %zu events, "
           "%zu kernels (expected %ld)\n",
           start_ms, stop_ms, events, kernels, n);
    int failed = 0;
    if (trace_path) failed = save_result(keep, trace_path);
    strobe_result_free(keep);
    CK(cudaStreamDestroy(s));
    return failed;
}

/* ---- metrics ------------------------------------------------------------------------------ */

static char metrics_error[512];
static void metrics_log(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_ERROR) snprintf(metrics_error, sizeof metrics_error, "%s", msg);
}

/* cuda_metrics per kernel: an unknown name is refused (EINVAL, named); then a session with the
 * given metrics around a few kernels, each of which must carry every metric as a numeric arg.
 * @return 0, 1 (a check failed) or 78 (the range profiler is not available here: the reason is
 * printed). */
static int run_metrics(const char *trace_path, const char *metrics) {
    strobe_set_log_fn(metrics_log, NULL);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *d_x = NULL, *d_y = NULL;
    CK(cudaMalloc(&d_x, N * sizeof(float)));
    CK(cudaMalloc(&d_y, N * sizeof(float)));
    CK(cudaDeviceSynchronize());
    int failed = 0;

    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    cfg.cuda_metrics = "sm__cycles_elapsed.avg,strobe__no_such_metric.sum";
    int rc = strobe_start(&cfg);
    if (rc == STROBE_ENOTSUP) {
        printf("metrics: not available here: %s\n", metrics_error);
        return 78;
    }
    if (rc != STROBE_EINVAL || !strstr(metrics_error, "strobe__no_such_metric.sum")) {
        fprintf(stderr, "metrics: an unknown metric gave %s (%s); want EINVAL naming it\n",
                strobe_strerror(rc), metrics_error);
        if (rc == 0) {
            strobe_result *r = NULL;
            strobe_stop(&r);
            strobe_result_free(r);
        }
        failed = 1;
    } else {
        printf("metrics: unknown metric refused: %s\n", metrics_error);
    }

    cfg.cuda_metrics = metrics;
    rc = strobe_start(&cfg);
    if (rc == STROBE_ENOTSUP) {
        printf("metrics: not available here: %s\n", metrics_error);
        return 78;
    }
    if (rc != 0) {
        fprintf(stderr, "metrics: strobe_start: %s: %s\n", strobe_strerror(rc), metrics_error);
        return 1;
    }
    const int launches = 6;
    {
        STROBE_SCOPE("metrics_kernels");
        for (int i = 0; i < launches; i++) {
            if (i % 2 == 0)
                strobe_k_fill<<<GRID, BLOCK, 0, s>>>(d_x, (float)i, N);
            else
                strobe_k_axpy<<<GRID, BLOCK, 0, s>>>(d_y, d_x, 2.0f, N);
        }
        CK(cudaStreamSynchronize(s));
    }
    strobe_result *res = NULL;
    rc = strobe_stop(&res);
    if (rc != 0) {
        fprintf(stderr, "metrics: strobe_stop: %s\n", strobe_strerror(rc));
        return 1;
    }
    for (size_t i = 0; i < strobe_result_warning_count(res); i++)
        printf("metrics: trace warning: %s\n", strobe_result_warning(res, i));
    /* The names, one by one, from the comma-separated list. */
    std::string list(metrics);
    std::vector<std::string> names;
    for (size_t p = 0; p <= list.size();) {
        size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        names.push_back(list.substr(p, q - p));
        p = q + 1;
    }
    const strobe_event *ev = strobe_result_events(res);
    int kernels = 0, complete = 0, at_launch = 0;
    for (size_t i = 0; i < strobe_result_event_count(res); i++) {
        if (!ev[i].category || strcmp(ev[i].category, "kernel") != 0) continue;
        kernels++;
        /* Where CUPTI lost the replayed kernel's timestamps, strobe gives it its launch's span. */
        const char *ts = strobe_event_arg(res, i, "timestamps");
        if (ts) {
            if (at_launch == 0)
                printf("metrics: %s: timestamps = %s (%.3f us)\n", ev[i].name, ts,
                       (double)(ev[i].end_ns - ev[i].start_ns) / 1e3);
            at_launch++;
        }
        int all = 1;
        for (const std::string &m : names) {
            const char *v = strobe_event_arg(res, i, m.c_str());
            char *end = NULL;
            if (v == NULL || (strtod(v, &end), end == v || *end != '\0')) {
                all = 0;
                fprintf(stderr, "metrics: kernel %s lacks a numeric \"%s\" (%s)\n", ev[i].name,
                        m.c_str(), v ? v : "absent");
            } else if (complete == 0) {
                printf("metrics: %s: %s = %s\n", ev[i].name, m.c_str(), v);
            }
        }
        complete += all;
    }
    printf("metrics: %d of %d kernels carry all %zu metrics (%d launched)\n", complete, kernels,
           names.size(), launches);
    if (at_launch)
        printf("metrics: %d of %d kernels span their launch call (CUPTI gave no timestamps)\n",
               at_launch, kernels);
    if (kernels != launches || complete != kernels) failed = 1;
    if (save_result(res, trace_path)) failed = 1;
    strobe_result_free(res);
    CK(cudaFree(d_x));
    CK(cudaFree(d_y));
    CK(cudaStreamDestroy(s));
    strobe_set_log_fn(NULL, NULL);
    return failed;
}

/* ---- main --------------------------------------------------------------------------------- */

static int usage(void) {
    fprintf(stderr, "usage: gpu-workload trace TRACE MANIFEST\n"
                    "       gpu-workload overhead [N [TRACE]]\n"
                    "       gpu-workload metrics TRACE METRIC[,METRIC...]\n");
    return 2;
}

int main(int argc, char **argv) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        fprintf(stderr, "gpu-workload: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
        return 77;
    }
    if (argc == 4 && strcmp(argv[1], "trace") == 0) return run_trace(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "metrics") == 0) return run_metrics(argv[2], argv[3]);
    if (argc >= 2 && argc <= 4 && strcmp(argv[1], "overhead") == 0) {
        long n = argc >= 3 ? strtol(argv[2], NULL, 10) : 20000;
        if (n <= 0) return usage();
        return run_overhead(n, argc == 4 ? argv[3] : NULL);
    }
    return usage();
}
