/* record_combo_target.c: a threaded NVTX program that forks, for test_record_combo.sh (strobe
 * record's options in pairs). No strobe: NVTX only, as a CUDA program would use it.
 *
 * The process pushes an NVTX range "combo" around all its work; in it, three threads each run
 * 300 ranges "work" that allocate a block, mark "m", burn a little CPU time (for --sample's
 * samples to land inside ranges) and free the block (malloc/free inside ranges).
 * Then it forks a child that does the same (its own threads, its own "combo" range) and exits
 * 0; the parent waits for it. With FAKE_CUPTI, the parent then calls cuInit on the stand-in
 * libcuda.so.1 (tests/fake_cuda) and has the stand-in CUPTI report a kernel launch, inside a
 * "combo" range, as test_record.sh's record_target does.
 *
 * Usage: record_combo_target STATUS [FAKE_CUPTI]. Prints "pid PID" and "child PID"; exits with
 * STATUS (1 when the child failed or the stand-in CUDA could not be loaded). */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *worker(void *arg) {
    size_t base = (size_t)(long)arg;
    for (int i = 0; i < 300; i++) {
        nvtxRangePushA("work");
        char *volatile p = malloc(base + (size_t)i);
        if (p) p[0] = (char)i;
        nvtxMarkA("m");
        for (volatile int k = 0; k < 100000; k++) {
        }
        free(p);
        nvtxRangePop();
    }
    return NULL;
}

/* Three threads, each 300 ranges with an allocation, inside one "combo" range. */
static void work(void) {
    nvtxRangePushA("combo");
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)(1000 + 1000 * i));
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    nvtxRangePop();
}

/* The stand-in CUDA: cuInit (which calls the tool named by CUDA_INJECTION64_PATH, as the driver
 * does), then one launch reported by the stand-in CUPTI `lib`. @return 0 or 1. */
static int fake_launch(const char *lib) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    int (*cu_init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
    if (cu_init == NULL || cu_init(0) != 0) return 1;
    void *h = dlopen(lib, RTLD_NOW);
    void (*mark)(void) = h ? (void (*)(void))dlsym(h, "fake_cupti_mark_launch") : NULL;
    if (mark == NULL) return 1;
    nvtxRangePushA("combo");
    mark();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    nvtxRangePop();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int status = atoi(argv[1]);
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    work();
    pid_t c = fork();
    if (c == 0) {
        printf("child %ld\n", (long)getpid());
        fflush(stdout);
        work();
        exit(0);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    if (argc > 2 && fake_launch(argv[2]) != 0) return 1;
    return status;
}
