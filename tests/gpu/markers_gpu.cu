// markers_gpu.cu: markers and captures (strobe/markers.h) on a real GPU, for
// tests/gpu/markers_gpu.sh. Checks, against the real driver:
//   - wait_until_completed: an operator range that launches a ~20 ms kernel lasts at least the
//     kernel (the end waits for the device); without it the range ends at once (the launch is
//     asynchronous);
//   - a capture: cuProfilerStart/Stop succeed, STROBE_CAPTURE's scope saves a trace holding the
//     kernels launched inside it.
// Usage: markers_gpu OUT_DIR. Exit 0 when every check holds, 1 otherwise (values printed).
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "strobe/strobe.h"

__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int failures;

// The longest of `n` operator ranges, each launching one kernel of about `ms` milliseconds.
static double op_ms(long long cycles, int n) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        {
            STROBE_OP("gpu_op");
            spin<<<1, 1>>>(cycles);
        }
        double t = now_ms() - t0;
        if (t > worst) worst = t;
        cudaDeviceSynchronize();
    }
    return worst;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (cudaFree(0) != cudaSuccess) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    long long cycles = (long long)clock_khz * 20; // about 20 ms
    spin<<<1, 1>>>(1000);
    cudaDeviceSynchronize();

    int rc = strobe_markers_start("interval", "nvtx", 1);
    double waited = op_ms(cycles, 3);
    strobe_markers_stop();
    rc |= strobe_markers_start("interval", "nvtx", 0);
    double free_ms = op_ms(cycles, 3);
    strobe_markers_stop();
    printf("operator range with a 20 ms kernel: %.2f ms with wait_until_completed, %.2f ms "
           "without (markers_start rc %d)\n",
           waited, free_ms, rc);
    if (rc != 0 || waited < 15.0 || free_ms > 10.0) {
        printf("FAIL: wait_until_completed\n");
        failures++;
    }

    char path[1024];
    snprintf(path, sizeof path, "%s/capture.json", argv[1]);
    // Markers around the capture: under nsys, its NVTX rows show the captured operators.
    rc = strobe_markers_start("interval", "nvtx", 0);
    if (rc != 0) {
        printf("FAIL: markers_start %d\n", rc);
        failures++;
    }
    {
        STROBE_CAPTURE(path);
        if (!strobe_is_capturing()) {
            printf("FAIL: STROBE_CAPTURE did not begin a capture\n");
            failures++;
        }
        for (int i = 0; i < 4; i++) {
            STROBE_OP("captured_op");
            spin<<<1, 1>>>(cycles / 20);
        }
    }
    strobe_markers_stop();
    rc = strobe_capture_begin(NULL);
    int rc2 = rc == 0 ? strobe_capture_end() : -100;
    printf("capture without a path: begin %d, end %d\n", rc, rc2);
    if (rc != 0 || rc2 != 0) failures++;
    FILE *f = fopen(path, "r");
    static char text[64 << 20];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    int kernels = 0, ops = 0;
    for (char *p = text; (p = strstr(p, "spin(")) != NULL; p++)
        kernels++;
    for (char *p = text; (p = strstr(p, "\"captured_op\"")) != NULL; p++)
        ops++;
    printf("capture trace %s: %zu bytes, %d captured_op ranges, %d mentions of the kernel\n", path,
           n, ops, kernels);
    if (ops != 4 || kernels < 4) {
        printf("FAIL: capture trace\n");
        failures++;
    }
    printf(failures ? "markers_gpu: FAILED\n" : "markers_gpu: ok\n");
    return failures ? 1 : 0;
}
