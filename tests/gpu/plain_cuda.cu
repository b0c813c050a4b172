// plain_cuda.cu: a CUDA program that knows nothing of strobe (no strobe header, no strobe
// library; nvcc links cudart statically by default), for the zero-code GPU check
// (tests/gpu/zero_code.sh): NVTX ranges around a memset, two copies and three kernels, or, with
// "overhead N", N empty kernel launches timed on the host (the cost per launch of whatever tool
// is attached).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

__global__ void empty_kernel() {}

static double now_s() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "plain_cuda: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "overhead") == 0) {
        long n = atol(argv[2]);
        if (check(cudaFree(0), "cudaFree")) return 1;
        for (int i = 0; i < 1000; i++)
            empty_kernel<<<1, 1>>>();
        if (check(cudaDeviceSynchronize(), "warm-up")) return 1;
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            empty_kernel<<<1, 1>>>();
        double t1 = now_s();
        if (check(cudaDeviceSynchronize(), "sync")) return 1;
        printf("launch_us %.4f\n", (t1 - t0) / (double)n * 1e6);
        return 0;
    }
    const int n = 1 << 20;
    float *h = (float *)calloc(n, sizeof *h), *d = nullptr;
    nvtxRangePushA("setup");
    if (check(cudaMalloc(&d, n * sizeof *d), "cudaMalloc")) return 1;
    if (check(cudaMemset(d, 0, n * sizeof *d), "cudaMemset")) return 1;
    if (check(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice), "H2D")) return 1;
    nvtxRangePop();
    for (int s = 0; s < 3; s++) {
        nvtxRangePushA("step");
        scale<<<(n + 255) / 256, 256>>>(d, 2.0f, n);
        if (check(cudaDeviceSynchronize(), "step")) return 1;
        nvtxRangePop();
    }
    if (check(cudaMemcpy(h, d, n * sizeof *d, cudaMemcpyDeviceToHost), "D2H")) return 1;
    cudaFree(d);
    free(h);
    printf("ok\n");
    return 0;
}
