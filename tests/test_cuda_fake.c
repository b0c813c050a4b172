/* test_cuda_fake.c: the CUDA backend end to end (loading, subscription, buffers, clock, record
 * walk, correlation pushes, warnings, a second session) against stand-ins for the driver and
 * CUPTI (tests/fake_cuda/), so that it runs without a GPU. Called through the backend table, so
 * that the batch itself is checked, before the core merges it.
 * argv: the fake libcupti.so, the fake one without cuptiGetTimestamp. The fake libcuda.so.1 is
 * found through LD_LIBRARY_PATH (set by CTest). */
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "check.h"
#include "core/device.h"
#include "strobe/backend.h"
#include "strobe/error.h"

extern const strobe__device_backend strobe__cuda_backend;
static const strobe__device_backend *B = &strobe__cuda_backend;

static char warnings[8][400];
static int nwarn;
static int add_warning(void *ctx, const char *line) {
    (void)ctx;
    if (nwarn < 8) snprintf(warnings[nwarn++], sizeof warnings[0], "%s", line);
    return 0;
}

static const strobe__gpu_act *find(const strobe__gpu_batch *b, int kind, const char *name) {
    for (size_t i = 0; i < b->act_count; i++)
        if (b->acts[i].kind == kind &&
            (name == NULL || (b->acts[i].name && strcmp(b->acts[i].name, name) == 0)))
            return &b->acts[i];
    return NULL;
}

/* Starts, pushes two correlation ids, stops; checks the batch. */
static void session(const strobe_config *c, int calibrated) {
    char why[256] = "";
    int64_t lo = strobe_clock_now_ns();
    int rc = B->start(c, why, sizeof why);
    CHECK_EQ(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "start: %s\n", why);
        return;
    }
    B->push_external(11);
    B->pop_external();
    B->push_external(12);
    B->pop_external();
    usleep(20000);
    int64_t hi = strobe_clock_now_ns();
    strobe__gpu_batch b;
    nwarn = 0;
    CHECK_EQ(B->stop(lo, hi, &b, add_warning, NULL), 0);
    CHECK_STR(b.clock_method, calibrated ? "calibrated" : "callback");
    if (calibrated) {
        /* The fake CUPTI clock runs 1 s behind. */
        CHECK_INT(b.clock_offset_ns, >, 999000000);
        CHECK_INT(b.clock_offset_ns, <, 1001000000);
    } else {
        CHECK_EQ(b.clock_offset_ns, 0);
    }
    const strobe__gpu_act *k = find(&b, STROBE__GPU_KERNEL, NULL);
    REQUIRE(k != NULL);
    CHECK_STR(k->name, "square(float*, int)"); /* demangled */
    CHECK_EQ(k->graph_id, 9);
    CHECK_EQ(k->stream, 7);
    CHECK_EQ(k->block[0], 128);
    CHECK_INT(k->start_ns, >=, lo);
    CHECK_INT(k->end_ns, <=, hi);
    const strobe__gpu_act *rt = find(&b, STROBE__GPU_RUNTIME, NULL);
    REQUIRE(rt != NULL);
    CHECK_STR(rt->name, "cudaLaunchKernel"); /* version suffix cut */
    CHECK_EQ(rt->pid, getpid());
    CHECK_EQ(rt->tid, syscall(SYS_gettid));
    CHECK_EQ(rt->correlation, k->correlation);
    CHECK_INT(rt->start_ns, <, k->start_ns);
    CHECK(find(&b, STROBE__GPU_RUNTIME, "cudaSomething") == NULL); /* cudaGetDevice: filtered */
    const strobe__gpu_act *m = find(&b, STROBE__GPU_MEMCPY, NULL);
    REQUIRE(m != NULL);
    CHECK_EQ(m->copy_kind, STROBE__COPY_DTOH);
    CHECK_EQ(m->bytes, 4096);
    size_t want = 3; /* runtime, kernel, memcpy */
    if (!(c->cuda_flags & STROBE_CUDA_NO_DRIVER_API)) {
        const strobe__gpu_act *d = find(&b, STROBE__GPU_DRIVER, NULL);
        REQUIRE(d != NULL);
        CHECK_STR(d->name, "cuLaunchKernel");
        want++; /* cuCtxGetCurrent: filtered */
    } else {
        CHECK(find(&b, STROBE__GPU_DRIVER, NULL) == NULL);
    }
    if (c->cuda_flags & STROBE_CUDA_SYNC) {
        const strobe__gpu_act *s = find(&b, STROBE__GPU_SYNC, NULL);
        REQUIRE(s != NULL);
        CHECK_STR(s->name, "Stream Sync");
        CHECK_EQ(s->tid, rt->tid); /* from the call with the same correlation */
        CHECK_EQ(s->pid, rt->pid);
        want++;
    } else {
        CHECK(find(&b, STROBE__GPU_SYNC, NULL) == NULL);
    }
    CHECK_EQ(b.act_count, want);
    CHECK_EQ(b.outside_window, 1); /* the kernel at t = 1 ns */
    REQUIRE(b.ext_count == 2);
    CHECK_EQ(b.ext[0].external, 11);
    CHECK_EQ(b.ext[1].external, 12);
    CHECK_EQ(b.ext[0].correlation, 100);
    /* The driver's device, then the one only CUPTI reported. */
    REQUIRE(b.device_count == 2);
    CHECK_EQ(b.devices[0].id, 0);
    CHECK_STR(b.devices[0].name, "Fake GPU 0");
    CHECK_EQ(b.devices[0].total_global_mem, (uint64_t)80 << 30);
    CHECK_EQ(b.devices[0].num_sms, 1000 + 16);                    /* MULTIPROCESSOR_COUNT */
    CHECK_EQ(b.devices[0].shared_mem_per_block_optin, 1000 + 97); /* ..._OPTIN */
    CHECK_EQ(b.devices[1].id, 3);
    CHECK_STR(b.devices[1].name, "CUPTI-only GPU");
    B->release();
}

static void test_sessions(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.activities |= STROBE_ACTIVITY_CUDA;
    session(&c, 0);
    CHECK_EQ(nwarn, 0);
    /* Again in the same process, with sync and without driver calls. */
    c.cuda_flags = STROBE_CUDA_SYNC | STROBE_CUDA_NO_DRIVER_API;
    session(&c, 0);
    /* CUPTI without the timestamp callback: calibrated. */
    setenv("FAKE_CUPTI_NO_TSCB", "1", 1);
    c.cuda_flags = 0;
    session(&c, 1);
    unsetenv("FAKE_CUPTI_NO_TSCB");
}

static void test_drops(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.cuda_buffer_bytes = (size_t)1 << 20; /* one buffer */
    setenv("FAKE_CUPTI_BUFFERS", "3", 1);  /* two requests refused */
    char why[256] = "";
    CHECK_EQ(B->start(&c, why, sizeof why), 0);
    strobe__gpu_batch b;
    nwarn = 0;
    CHECK_EQ(B->stop(0, INT64_MAX, &b, add_warning, NULL), 0);
    CHECK_EQ(b.dropped_records, 2);
    REQUIRE(nwarn == 1);
    printf("warning: %s\n", warnings[0]);
    CHECK(strstr(warnings[0], "2 buffer requests refused") != NULL);
    B->release();
    setenv("FAKE_CUPTI_DROPPED", "5", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), 0);
    CHECK_EQ(B->stop(0, INT64_MAX, &b, NULL, NULL), 0);
    /* CUPTI's count (asked at each completed buffer: one here) covers the refusals. */
    CHECK_EQ(b.dropped_records, 5);
    B->release();
    /* Records CUPTI says it dropped while every buffer request was granted: the warning does not
     * blame cuda_buffer_bytes (the H100 run: "1 CUPTI records dropped (0 buffer requests
     * refused: cuda_buffer_bytes = 64 MiB was full)"). */
    unsetenv("FAKE_CUPTI_BUFFERS");
    setenv("FAKE_CUPTI_DROPPED", "1", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), 0);
    nwarn = 0;
    CHECK_EQ(B->stop(0, INT64_MAX, &b, add_warning, NULL), 0);
    CHECK_EQ(b.dropped_records, 1);
    REQUIRE(nwarn == 1);
    printf("warning: %s\n", warnings[0]);
    CHECK(strstr(warnings[0], "1 CUPTI records dropped") != NULL);
    CHECK(strstr(warnings[0], "CUPTI reported them dropped") != NULL);
    CHECK(strstr(warnings[0], "refused") == NULL);
    CHECK(strstr(warnings[0], "was full") == NULL);
    B->release();
    unsetenv("FAKE_CUPTI_DROPPED");
}

static void test_refusals(void) {
    strobe_config c;
    strobe_config_init(&c);
    char why[256] = "";
    setenv("FAKE_CUPTI_BUSY", "1", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), STROBE_EBUSY);
    printf("busy: %s\n", why);
    CHECK(strstr(why, "another CUPTI client") != NULL);
    unsetenv("FAKE_CUPTI_BUSY");

    setenv("FAKE_CUDA_DEVICES", "0", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), 1);
    printf("no device: %s\n", why);
    CHECK(strstr(why, "cuDeviceGetCount: 0") != NULL);
    unsetenv("FAKE_CUDA_DEVICES");
    setenv("FAKE_CUDA_INIT", "100", 1);
    CHECK_EQ(B->start(&c, why, sizeof why), 1);
    printf("cuInit fails: %s\n", why);
    CHECK(strstr(why, "CUDA_ERROR_NO_DEVICE") != NULL);
    unsetenv("FAKE_CUDA_INIT");

    /* After the refusals, a session works. */
    CHECK_EQ(B->start(&c, why, sizeof why), 0);
    strobe__gpu_batch b;
    CHECK_EQ(B->stop(0, INT64_MAX, &b, NULL, NULL), 0);
    CHECK_INT(b.act_count, >, 0);
    B->release();
}

/* CUPTI stays loaded for the process once opened, so the other library is tried in a child. */
static void test_missing_symbol(const char *nosym_lib) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STROBE_CUPTI_PATH", nosym_lib, 1);
        strobe_config c;
        strobe_config_init(&c);
        char why[256] = "";
        int rc = B->start(&c, why, sizeof why);
        printf("missing symbol: %s\n", why);
        fflush(stdout);
        _exit(rc == 1 && strstr(why, "cuptiGetTimestamp") != NULL ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    REQUIRE(argc == 3);
    /* The missing-symbol case first, in a child, before this process loads the full fake. */
    test_missing_symbol(argv[2]);
    setenv("STROBE_CUPTI_PATH", argv[1], 1);
    test_sessions();
    test_drops();
    test_refusals();
    return check_result();
}
