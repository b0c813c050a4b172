/* demo.c: profiles a small multi-threaded "training loop" with strobe, writes a Kineto-format
 * trace and prints torch's per-operator table.
 *
 *   usage: strobe_demo [--gz] [--all] [TRACE_PATH]     (default TRACE_PATH: demo_trace.json)
 *
 * --all turns on every operator detail: input shapes, FLOPs, module scopes ("mlp.fc1", ...),
 * memory events for the activations the model allocates, native call stacks, perf counters
 * (task-clock, page-faults, context-switches, and cycles and instructions where the machine has
 * them), and events from a pretend "delegate" backend that times the optimizer step itself.
 *
 * Three worker threads each train a two-layer perceptron on a 128x128 batch for a few steps:
 * naive float matrix multiplications, element-wise operators and reductions, named like the
 * PyTorch operators they stand for ("aten::mm", "aten::add", "aten::relu", "aten::sum", ...), in
 * user regions "forward", "backward" and "optimizer step", with backward nodes
 * ("MmBackward0", ...) in the BACKWARD_FUNCTION scope as autograd records them. Only the public
 * API is used (<strobe/strobe.h>).
 *
 * Contents: tensors and kernels, the model (forward, backward, optimizer step), the worker
 * thread, main (start, run, stop, save, summary, stats). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strobe/strobe.h>

#define N 128     /* batch size and layer width: every matrix is N x N */
#define WORKERS 3 /* worker threads */
#define STEPS 48  /* training steps per worker */
#define LR 0.001f /* learning rate */
#define DEFAULT_TRACE "demo_trace.json"

static const int64_t dims_nn[2] = {N, N}, dims_n[1] = {N};

/* Inputs of an operator on N x N float matrices (and vectors, when `vec` is set for the second). */
static void inputs2(int vec) {
    strobe_input in[2] = {
        {STROBE_INPUT_TENSOR, "float", dims_nn, 2, 0, 0.0},
        {STROBE_INPUT_TENSOR, "float", vec ? dims_n : dims_nn, vec ? 1 : 2, 0, 0.0}};
    strobe_range_inputs(in, 2);
}

/* Activations are allocated per step and reported as memory events, as an allocator would. */
static atomic_llong heap_bytes;

static void *demo_alloc(size_t bytes) {
    void *p = malloc(bytes);
    if (p != NULL) {
        long long total = atomic_fetch_add(&heap_bytes, (long long)bytes) + (long long)bytes;
        strobe_record_alloc(STROBE_DEVICE_CPU_ID, p, (int64_t)bytes, total, total);
    }
    return p;
}

static void demo_free(void *p, size_t bytes) {
    if (p == NULL) return;
    long long total = atomic_fetch_sub(&heap_bytes, (long long)bytes) - (long long)bytes;
    strobe_record_free(STROBE_DEVICE_CPU_ID, p, (int64_t)bytes, total, total);
    free(p);
}

/* ---- Tensors and kernels ---------------------------------------------------------------------
 * Every kernel is an operator: a STROBE_OP range for its whole body. A matrix is N*N floats,
 * row-major; a vector is N floats. */

typedef struct matrix {
    float v[N * N];
} matrix;

typedef struct vector {
    float v[N];
} vector;

/* A small deterministic generator, so that every run does the same arithmetic. */
static float next_uniform(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 24) - 0.5f;
}

static void uniform_(float *x, size_t n, float scale, uint32_t *state) {
    STROBE_OP("aten::uniform_");
    for (size_t i = 0; i < n; i++)
        x[i] = scale * next_uniform(state);
}

static void zero_(float *x, size_t n) {
    STROBE_OP("aten::zero_");
    memset(x, 0, n * sizeof *x);
}

/* c = op(a) * op(b), where op transposes when the flag is set. The i-k-j loop order keeps the
 * innermost loop contiguous in b and c for the common, untransposed case. */
static void mm(const matrix *a, int ta, const matrix *b, int tb, matrix *c) {
    STROBE_OP("aten::mm");
    inputs2(0); /* with_flops counts 2*N^3 from these */
    memset(c->v, 0, sizeof c->v);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < N; k++) {
            float aik = ta ? a->v[k * N + i] : a->v[i * N + k];
            float *crow = &c->v[i * N];
            if (tb) {
                for (int j = 0; j < N; j++)
                    crow[j] += aik * b->v[j * N + k];
            } else {
                const float *brow = &b->v[k * N];
                for (int j = 0; j < N; j++)
                    crow[j] += aik * brow[j];
            }
        }
    }
}

/* x[i][j] += bias[j] (broadcast over the batch). */
static void add_bias(matrix *x, const vector *bias) {
    STROBE_OP("aten::add");
    inputs2(1);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            x->v[i * N + j] += bias->v[j];
}

/* torch's linear: a matrix product and a broadcast add, recorded as one operator with two
 * children, as aten::linear shows in a torch trace. */
static void linear(const char *module, const matrix *x, const matrix *w, const vector *b,
                   matrix *y) {
    strobe_module_push(module);
    STROBE_OP("aten::linear");
    mm(x, 0, w, 0, y);
    add_bias(y, b);
    strobe_module_pop();
}

static void relu(const matrix *x, matrix *y) {
    STROBE_OP("aten::relu");
    for (int i = 0; i < N * N; i++)
        y->v[i] = x->v[i] > 0.0f ? x->v[i] : 0.0f;
}

static void mul_scalar(const matrix *x, float s, matrix *y) {
    STROBE_OP("aten::mul");
    for (int i = 0; i < N * N; i++)
        y->v[i] = x->v[i] * s;
}

static void mul(const matrix *x, const matrix *z, matrix *y) {
    STROBE_OP("aten::mul");
    inputs2(0);
    for (int i = 0; i < N * N; i++)
        y->v[i] = x->v[i] * z->v[i];
}

static double sum(const matrix *x) {
    STROBE_OP("aten::sum");
    double s = 0.0;
    for (int i = 0; i < N * N; i++)
        s += x->v[i];
    return s;
}

/* Column sums: the gradient of a broadcast bias. */
static void sum_dim0(const matrix *x, vector *y) {
    STROBE_OP("aten::sum");
    memset(y->v, 0, sizeof y->v);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            y->v[j] += x->v[i * N + j];
}

/* The gradient of relu: dy where the forward input was positive, else 0. */
static void threshold_backward(const matrix *dy, const matrix *x, matrix *dx) {
    STROBE_OP("aten::threshold_backward");
    for (int i = 0; i < N * N; i++)
        dx->v[i] = x->v[i] > 0.0f ? dy->v[i] : 0.0f;
}

/* w += alpha * g, as torch's SGD does with aten::add_(grad, alpha=-lr). */
static void add_(float *w, const float *g, float alpha, size_t n) {
    STROBE_OP("aten::add_");
    for (size_t i = 0; i < n; i++)
        w[i] += alpha * g[i];
}

/* ---- The model -------------------------------------------------------------------------------
 * y = relu(x W1 + b1) W2 + b2, loss = mean(y * y) (pulls the outputs to zero: any loss does for
 * a profile). */

typedef struct model {
    matrix x, w1, w2;       /* input batch and weights */
    vector b1, b2;          /* biases */
    matrix h_pre, h, y, yy; /* activations */
    matrix dy, dh, dh_pre;  /* activation gradients */
    matrix dw1, dw2;        /* weight gradients */
    vector db1, db2;        /* bias gradients */
    matrix *saved;          /* forward's squared outputs, kept for backward (heap) */
    double loss;
} model;

static void init_model(model *m, uint32_t seed) {
    STROBE_SCOPE("init");
    uniform_(m->x.v, N * N, 2.0f, &seed);
    uniform_(m->w1.v, N * N, 0.2f, &seed);
    uniform_(m->w2.v, N * N, 0.2f, &seed);
    zero_(m->b1.v, N);
    zero_(m->b2.v, N);
}

static void forward(model *m) {
    STROBE_SCOPE("forward");
    strobe_module_push("mlp");
    linear("fc1", &m->x, &m->w1, &m->b1, &m->h_pre);
    relu(&m->h_pre, &m->h);
    linear("fc2", &m->h, &m->w2, &m->b2, &m->y);
    /* The squared outputs go to the heap and stay there until backward is done with the step, as
     * saved activations do: forward shows the allocation, backward the free. */
    matrix *yy = demo_alloc(sizeof *yy);
    m->saved = yy;
    if (yy == NULL) yy = &m->yy;
    mul(&m->y, &m->y, yy);
    m->loss = sum(yy) / (N * N);
    strobe_module_pop();
}

static void backward(model *m) {
    STROBE_SCOPE("backward");
    {
        /* d(mean(y^2))/dy = 2y / (N*N). */
        STROBE_SCOPE_AS("MulBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        mul_scalar(&m->y, 2.0f / (N * N), &m->dy);
    }
    {
        STROBE_SCOPE_AS("AddBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        sum_dim0(&m->dy, &m->db2);
    }
    {
        /* dW2 = h^T dy, dh = dy W2^T. */
        STROBE_SCOPE_AS("MmBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        mm(&m->h, 1, &m->dy, 0, &m->dw2);
        mm(&m->dy, 0, &m->w2, 1, &m->dh);
    }
    {
        STROBE_SCOPE_AS("ReluBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        threshold_backward(&m->dh, &m->h_pre, &m->dh_pre);
    }
    {
        STROBE_SCOPE_AS("AddBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        sum_dim0(&m->dh_pre, &m->db1);
    }
    {
        /* dW1 = x^T dh_pre; the input needs no gradient. */
        STROBE_SCOPE_AS("MmBackward0", STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);
        mm(&m->x, 1, &m->dh_pre, 0, &m->dw1);
    }
    if (m->saved != NULL) demo_free(m->saved, sizeof *m->saved);
    m->saved = NULL;
}

/* The optimizer step runs on a pretend delegate that times its own work, as an accelerator
 * runtime would, and reports it as backend events (debug handles 1 and 2: one per layer). */
static void optimizer_step(model *m) {
    STROBE_SCOPE("optimizer step");
    int64_t t0 = strobe_clock_now_ns();
    add_(m->w1.v, m->dw1.v, -LR, N * N);
    add_(m->b1.v, m->db1.v, -LR, N);
    int64_t t1 = strobe_clock_now_ns();
    add_(m->w2.v, m->dw2.v, -LR, N * N);
    add_(m->b2.v, m->db2.v, -LR, N);
    int64_t t2 = strobe_clock_now_ns();
    strobe_record_backend_event_ns(t0, t1, 1, "sgd_update fc1", "demo_delegate");
    strobe_record_backend_event_ns(t1, t2, 2, "sgd_update fc2", "demo_delegate");
}

/* ---- Worker threads ------------------------------------------------------------------------- */

typedef struct worker {
    pthread_t thread;
    int index;
    model *m;
    double first_loss, last_loss;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    char name[32];
    snprintf(name, sizeof name, "worker %d", w->index);
    strobe_set_thread_name(name);

    init_model(w->m, 12345u + (uint32_t)w->index);
    for (int step = 0; step < STEPS; step++) {
        /* Ranges that begin while a correlation id is pushed record it ("External id" in the
         * trace): one id per worker and step, as a runtime would tag the work it launches. */
        strobe_push_correlation_id((uint64_t)(w->index + 1) * 1000u + (uint64_t)step);
        forward(w->m);
        backward(w->m);
        optimizer_step(w->m);
        strobe_pop_correlation_id();
        STROBE_COUNTER("loss", w->m->loss);
        if (step == 0) w->first_loss = w->m->loss;
        w->last_loss = w->m->loss;
    }
    return NULL;
}

/* ---- main ----------------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int fail(const char *what, int err) {
    fprintf(stderr, "strobe_demo: %s failed: %s (%s)\n", what, strobe_strerror(err),
            strobe_err_name(err));
    return 1;
}

static void print_stats(const strobe_result *r) {
    const strobe_stats *st = strobe_result_stats(r);
    printf("\nrecorded %zu events on %zu threads\n", strobe_result_event_count(r),
           strobe_result_thread_count(r));
    printf("dropped events: %llu, unmatched ends: %llu, unfinished ranges: %llu, truncated "
           "ranges: %llu, signal-dropped: %llu, truncated names: %llu\n",
           (unsigned long long)st->dropped_events, (unsigned long long)st->unmatched_ends,
           (unsigned long long)st->unfinished_ranges, (unsigned long long)st->truncated_ranges,
           (unsigned long long)st->signal_dropped, (unsigned long long)st->truncated_names);
    printf("buffer: %.1f KiB used of %.1f MiB\n", (double)st->buffer_bytes_used / 1024.0,
           (double)st->buffer_bytes_cap / (1024.0 * 1024.0));
    for (size_t i = 0; i < strobe_result_warning_count(r); i++)
        printf("warning: %s\n", strobe_result_warning(r, i));
}

int main(int argc, char **argv) {
    const char *path_arg = NULL;
    int gz = 0, all = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gz") == 0) {
            gz = 1;
        } else if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: %s [--gz] [--all] [TRACE_PATH]   (default %s)\n", argv[0],
                   DEFAULT_TRACE);
            return 0;
        } else if (argv[i][0] == '-' || path_arg != NULL) {
            fprintf(stderr, "usage: %s [--gz] [--all] [TRACE_PATH]\n", argv[0]);
            return 2;
        } else {
            path_arg = argv[i];
        }
    }
    if (path_arg == NULL) path_arg = DEFAULT_TRACE;
    /* --gz asks for gzip: the writer compresses when the path ends in ".gz". */
    char *path = malloc(strlen(path_arg) + 4);
    if (path == NULL) return fail("malloc", STROBE_ENOMEM);
    strcpy(path, path_arg);
    if (gz && !ends_with(path, ".gz")) strcat(path, ".gz");

    model *models = calloc(WORKERS, sizeof *models);
    worker workers[WORKERS];
    if (models == NULL) {
        free(path);
        return fail("calloc", STROBE_ENOMEM);
    }

    /* The library never prints unasked; let it report warnings on stderr. */
    strobe_set_log_fn(strobe_log_stderr, (void *)(intptr_t)STROBE_LOG_WARN);
    strobe_set_thread_name("main");

    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.trace_name = "strobe demo";
    if (all) {
        cfg.record_shapes = cfg.with_flops = cfg.with_modules = cfg.profile_memory = 1;
        cfg.with_stack = 1;
        cfg.stack_depth = 16;
        /* Events this machine cannot count are skipped, with a warning in the result. */
        cfg.perf_events = "task-clock,page-faults,context-switches,cycles,instructions";
    }
    int err = strobe_start(&cfg);
    if (err) {
        free(models);
        free(path);
        return fail("strobe_start", err);
    }
    char meta[128];
    snprintf(meta, sizeof meta, "{\"workers\": %d, \"steps\": %d, \"n\": %d}", WORKERS, STEPS, N);
    err = strobe_add_metadata_json("demo", meta);
    if (err) fail("strobe_add_metadata_json", err); /* not fatal: the trace is still useful */

    int started = 0, rc = 0;
    {
        STROBE_SCOPE("train");
        for (; started < WORKERS; started++) {
            workers[started].index = started;
            workers[started].m = &models[started];
            int perr =
                pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]);
            if (perr != 0) {
                fprintf(stderr, "strobe_demo: pthread_create failed: %s\n", strerror(perr));
                rc = 1;
                break;
            }
        }
        STROBE_SCOPE("join workers");
        for (int i = 0; i < started; i++)
            pthread_join(workers[i].thread, NULL);
    }

    strobe_result *result = NULL;
    err = strobe_stop(&result);
    if (err) {
        free(models);
        free(path);
        return fail("strobe_stop", err);
    }
    if (rc != 0) goto out;

    for (int i = 0; i < WORKERS; i++)
        printf("worker %d: loss %.6f -> %.6f after %d steps\n", i, workers[i].first_loss,
               workers[i].last_loss, STEPS);
    printf("\n");

    err = strobe_result_save(result, path);
    if (err) {
        fprintf(stderr, "strobe_demo: saving the trace to %s failed: %s\n", path,
                strobe_strerror(err));
        rc = 1;
        goto out;
    }

    strobe_summary *summary = NULL;
    err = strobe_summary_create(result, STROBE_SORT_CPU_TOTAL, &summary);
    if (err) {
        rc = fail("strobe_summary_create", err);
        goto out;
    }
    err = strobe_summary_print(summary, stdout, 0);
    strobe_summary_free(summary);
    if (err) {
        rc = fail("strobe_summary_print", err);
        goto out;
    }
    print_stats(result);

    /* The path as given and, where it is relative, whole: one line, said once. */
    char whole[4096];
    const char *shown = path[0] != '/' && realpath(path, whole) ? whole : path;
    printf("\ntrace written to %s\n", shown);
    printf("open it in https://ui.perfetto.dev (\"Open trace file\"), or in Chrome DevTools'"
           " Performance panel (\"Load profile\")\n");

out:
    strobe_result_free(result);
    free(models);
    free(path);
    return rc;
}
