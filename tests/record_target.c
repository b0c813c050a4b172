/* record_target.c: a program that knows nothing of strobe, run under `strobe record` by
 * tests/test_record.sh. Each mode prints what the test checks the trace against, one fact a line
 * ("pid 123 main", "thread 124 worker-a", ...), on standard output.
 *
 *   threads            two threads that name themselves worker-a and worker-b and allocate
 *   fork               allocates 77777 bytes, forks a child (no exec) that allocates and frees
 *                      55555 bytes and exits, waits for it, frees the 77777 bytes
 *   forkexec PROG ...  forks a child that runs PROG ... (execv), waits for it
 *   spawn PROG ...     runs PROG ... with posix_spawn, waits for it
 *   exit N             exits with status N
 *   term               kills itself with SIGTERM
 *   marker FILE        creates FILE
 *   spin MS            burns MS milliseconds of CPU time in spin_hot (for --sample)
 *   cuda LIB           calls cuInit (the stand-in libcuda.so.1, which calls the tool named by
 *                      CUDA_INJECTION64_PATH as the driver does), loads the stand-in CUPTI LIB
 *                      (tests/fake_cuda) and has it report a kernel launch, as a CUDA
 *                      program's launch would be traced
 *   cudafork LIB       the same in a forked child and then in the parent */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void *worker(void *arg) {
    const char *name = arg;
    pthread_setname_np(pthread_self(), name);
    printf("thread %ld %s\n", (long)gettid(), name);
    fflush(stdout);
    for (int i = 0; i < 100; i++) {
        void *volatile p = malloc(1000 + (size_t)i);
        free(p);
    }
    return NULL;
}

/* The stand-in CUPTI reports a launch and its kernel when told (what the first strobe session
 * loaded is the same library, so the call reaches it). */
static int fake_launch(const char *lib) {
    /* As a CUDA program does first: the driver's cuInit, which calls the tool named by
     * CUDA_INJECTION64_PATH (the stand-in libcuda.so.1 does, as the driver does). */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    int (*cu_init)(unsigned) = cuda ? (int (*)(unsigned))dlsym(cuda, "cuInit") : NULL;
    if (cu_init == NULL || cu_init(0) != 0) return 1;
    void *h = dlopen(lib, RTLD_NOW);
    void (*mark)(void) = h ? (void (*)(void))dlsym(h, "fake_cupti_mark_launch") : NULL;
    if (mark == NULL) return 1;
    mark();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    return 0;
}

/* Burns CPU time for `ms` milliseconds in this one function, the hot spot sampling must find
 * (built with frame pointers). @return nonzero. */
__attribute__((noinline)) static int spin_hot(long ms) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile uint64_t x = 1;
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    return (int)(x & 1u) | 1; /* uses x, so that the loop stays; always nonzero */
}

static int wait_child(pid_t c) {
    int st = 0;
    if (waitpid(c, &st, 0) != c) return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *mode = argv[1];
    printf("pid %ld main\n", (long)getpid());
    fflush(stdout);
    if (strcmp(mode, "threads") == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, worker, "worker-a");
        pthread_join(a, NULL);
        pthread_create(&b, NULL, worker, "worker-b");
        pthread_join(b, NULL);
        return 0;
    }
    if (strcmp(mode, "fork") == 0) {
        void *volatile big = malloc(77777);
        pid_t c = fork();
        if (c == 0) {
            printf("child %ld\n", (long)getpid());
            fflush(stdout);
            void *volatile p = malloc(55555);
            free(p);
            exit(0);
        }
        int rc = wait_child(c);
        free(big); /* after the child's allocations: the test checks the order across processes */
        return rc;
    }
    if (strcmp(mode, "forkexec") == 0 && argc > 2) {
        pid_t c = fork();
        if (c == 0) {
            execv(argv[2], argv + 2);
            _exit(127);
        }
        printf("child %ld\n", (long)c);
        fflush(stdout);
        return wait_child(c);
    }
    if (strcmp(mode, "spawn") == 0 && argc > 2) {
        pid_t c;
        if (posix_spawn(&c, argv[2], NULL, NULL, argv + 2, environ) != 0) return 1;
        printf("child %ld\n", (long)c);
        fflush(stdout);
        return wait_child(c);
    }
    if (strcmp(mode, "exit") == 0 && argc > 2) return atoi(argv[2]);
    if (strcmp(mode, "term") == 0) {
        raise(SIGTERM);
        return 0;
    }
    if (strcmp(mode, "cuda") == 0 && argc > 2) return fake_launch(argv[2]);
    if (strcmp(mode, "cudafork") == 0 && argc > 2) {
        pid_t c = fork();
        if (c == 0) {
            printf("child %ld\n", (long)getpid());
            fflush(stdout);
            exit(fake_launch(argv[2]));
        }
        int rc = wait_child(c);
        return rc ? rc : fake_launch(argv[2]);
    }
    if (strcmp(mode, "spin") == 0 && argc > 2) return spin_hot(atol(argv[2])) ? 0 : 3;
    if (strcmp(mode, "marker") == 0 && argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (f) fclose(f);
        return 0;
    }
    return 2;
}
