/* record_robust_target.c: the programs of test_record_robust.sh, each ending in a way that skips
 * an ordinary exit: `record_robust_target MODE N [SECONDS]` makes N allocations of 100 bytes
 * (each freed) on the main thread, then, by MODE:
 *   pexit    N more on a detached thread while main calls pthread_exit()
 *   segv     a write through a null pointer (SIGSEGV)
 *   abort    abort() (SIGABRT)
 *   term     kill(getpid(), SIGTERM)
 *   exec     execl("/bin/true")
 *   execfail execl() of a missing file, then N more allocations and a return of 0
 *   spin     allocations, one every 200 us, for SECONDS seconds, then a return of 0
 *   fds      dup2() of /dev/null over every descriptor from 3 to 1023, then N more */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void allocs(long n) {
    for (long i = 0; i < n; i++) {
        void *volatile p = malloc(100);
        free(p);
    }
}

static void *worker(void *arg) {
    allocs((long)(intptr_t)arg);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: record_robust_target MODE N [SECONDS]\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    allocs(n);
    if (strcmp(mode, "pexit") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)n) != 0) return 1;
        pthread_detach(t);
        pthread_exit(NULL);
    } else if (strcmp(mode, "segv") == 0) {
        /* An address the compiler cannot see is null. */
        volatile int *p = (volatile int *)(uintptr_t)strtoul(argv[2] + strlen(argv[2]), NULL, 10);
        *p = 1;
    } else if (strcmp(mode, "abort") == 0) {
        abort();
    } else if (strcmp(mode, "term") == 0) {
        kill(getpid(), SIGTERM);
    } else if (strcmp(mode, "exec") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        return 1;
    } else if (strcmp(mode, "execfail") == 0) {
        execl("/nonexistent/strobe-test", "x", (char *)NULL);
        allocs(n);
    } else if (strcmp(mode, "spin") == 0) {
        time_t end = time(NULL) + (argc > 3 ? atol(argv[3]) : 1);
        while (time(NULL) < end) {
            allocs(1);
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
    } else if (strcmp(mode, "fds") == 0) {
        int fd = open("/dev/null", O_RDWR);
        for (int i = 3; i < 1024; i++)
            if (i != fd) dup2(fd, i);
        allocs(n);
    } else {
        fprintf(stderr, "record_robust_target: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
