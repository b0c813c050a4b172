/* stress_util.h: what the adversarial stress tests (test_stress_*.c) share: a watchdog that turns
 * a deadlock into a failure with a message, the set of codes a cold-path call may return, and a
 * trace saved, read back and checked to be one valid JSON value, with its "strobe" loss counters
 * read from the file. */
#ifndef STROBE_TEST_STRESS_UTIL_H
#define STROBE_TEST_STRESS_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "result_check.h"
#include "util/json_check.h"

/* Seconds the whole test may take before the watchdog calls it a deadlock. Generous: the TSan
 * build on a loaded machine is many times slower than a plain one. */
#define STRESS_WATCHDOG_S 120

static const char *stress__phase = "start";

static void *stress__watchdog_body(void *arg) {
    (void)arg;
    /* nanosleep is not restarted after a signal handler ran: sleep until the deadline. */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += STRESS_WATCHDOG_S;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0) {
    }
    fprintf(stderr, "watchdog: the test did not finish in %d s (deadlock?) in phase: %s\n",
            STRESS_WATCHDOG_S, __atomic_load_n(&stress__phase, __ATOMIC_RELAXED));
    _exit(3);
    return NULL;
}

/* Starts the watchdog: a detached thread that ends the process with status 3 and a message when
 * the test runs past STRESS_WATCHDOG_S (a thread, not alarm(), so that tests may use SIGALRM).
 * It blocks every signal, so that process-directed signals go to the test's own threads. */
static inline void stress_watchdog(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    if (pthread_create(&th, NULL, stress__watchdog_body, NULL) == 0) pthread_detach(th);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Names the phase the watchdog reports (a string literal). */
static inline void stress_phase(const char *phase) {
    __atomic_store_n(&stress__phase, phase, __ATOMIC_RELAXED);
}

/* Returns 1 when rc is 0 or one of the negative codes strobe/error.h defines. */
static inline int stress_known_code(int rc) {
    return rc == 0 || (rc < 0 && strcmp(strobe_err_name(rc), "STROBE_UNKNOWN") != 0);
}

/* Reads a whole file into a NUL-terminated buffer (free() it). NULL on error. */
static inline char *stress_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, 65536, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* Saves `r` as JSON to `path` and checks that the file is one valid JSON value. Returns the file's
 * text (free() it) or NULL after printing why. */
static inline char *stress_save_json(strobe_result *r, const char *path) {
    int rc = strobe_result_save(r, path);
    if (rc != 0) {
        fprintf(stderr, "save %s: %s\n", path, strobe_strerror(rc));
        return NULL;
    }
    size_t n = 0;
    char *text = stress_read_file(path, &n);
    if (text == NULL) {
        fprintf(stderr, "read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (!strobe__json_valid(text, n)) {
        fprintf(stderr, "%s: not valid JSON (%zu bytes)\n", path, n);
        free(text);
        return NULL;
    }
    return text;
}

/* Finds `"key": NUMBER` in the trace's "strobe" stats object (the first occurrence after
 * "\"stats\": {") and returns the number, or -1 when absent. The writer prints the object on one
 * line with these exact separators (json_writer.c). */
static inline long long stress_trace_stat(const char *text, const char *key) {
    const char *stats = strstr(text, "\"strobe\": {");
    if (stats) stats = strstr(stats, "\"stats\": {");
    if (stats == NULL) return -1;
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(stats, pat);
    const char *end = strchr(stats, '}');
    if (p == NULL || end == NULL || p > end) return -1;
    return strtoll(p + strlen(pat), NULL, 10);
}

/* Makes STROBE_TEST_OUT_DIR/sub and writes the path of `name` in it to buf[0..size). Returns
 * buf. */
static inline char *stress_out_path(char *buf, size_t size, const char *sub, const char *name) {
    snprintf(buf, size, "%s/%s", STROBE_TEST_OUT_DIR, sub);
    mkdir(buf, 0755);
    snprintf(buf, size, "%s/%s/%s", STROBE_TEST_OUT_DIR, sub, name);
    return buf;
}

#endif
