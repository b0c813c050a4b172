/* ownthread.c: the registry of strobe's own threads (see ownthread.h). */
#include "ownthread.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The ids, 0 where none was put; `next` counts registrations, its low bits pick the slot. */
static int64_t own_tids[STROBE__OWN_THREADS];
static uint32_t own_next;

void strobe__own_thread_enter(const char *name) {
    if (name != NULL) (void)prctl(PR_SET_NAME, name, 0, 0, 0);
    int64_t tid = (int64_t)syscall(SYS_gettid);
    uint32_t k = __atomic_fetch_add(&own_next, 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&own_tids[k % STROBE__OWN_THREADS], tid, __ATOMIC_RELEASE);
}

int strobe__own_thread_is(int64_t tid) {
    if (tid <= 0) return 0;
    for (uint32_t i = 0; i < STROBE__OWN_THREADS; i++)
        if (__atomic_load_n(&own_tids[i], __ATOMIC_ACQUIRE) == tid) return 1;
    return 0;
}

void strobe__own_thread_ready(uint32_t *word) {
    __atomic_store_n(word, 1u, __ATOMIC_RELEASE);
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void strobe__own_thread_wait(uint32_t *word, int ms) {
    for (int waited = 0; waited < ms && __atomic_load_n(word, __ATOMIC_ACQUIRE) == 0;
         waited += 10) {
        struct timespec ts = {0, 10 * 1000000L};
        (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0u, &ts, NULL, 0);
    }
}

/* One mutex per kind of thread (a rwlock shared by all would do, but a child cannot release
 * one: glibc's keys its writer on the parent thread's id, and ThreadSanitizer misses a
 * re-initialization in a fork handler). A fork takes them all, in order; a child releases them
 * from its one thread, the forking one. */
static pthread_mutex_t work_gates[STROBE__GATES] = {PTHREAD_MUTEX_INITIALIZER,
                                                    PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t work_gate_once = PTHREAD_ONCE_INIT;

static void gate_fork_prepare(void) {
    for (int g = 0; g < STROBE__GATES; g++)
        (void)pthread_mutex_lock(&work_gates[g]);
}

static void gate_fork_after(void) {
    for (int g = STROBE__GATES - 1; g >= 0; g--)
        (void)pthread_mutex_unlock(&work_gates[g]);
}

static void gate_install(void) {
    (void)pthread_atfork(gate_fork_prepare, gate_fork_after, gate_fork_after);
}

int strobe__own_work_try(int gate) {
    (void)pthread_once(&work_gate_once, gate_install);
    return pthread_mutex_trylock(&work_gates[gate]) == 0;
}

void strobe__own_work_done(int gate) {
    (void)pthread_mutex_unlock(&work_gates[gate]);
}
