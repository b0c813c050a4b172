/* ownthread.c: the registry of strobe's own threads (see ownthread.h). */
#include "ownthread.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The ids, 0 where none was put; `next` counts registrations, its low bits pick the slot. */
static int64_t own_tids[STROBE__OWN_THREADS];
static uint32_t own_next;

void strobe__own_thread_enter(void) {
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

/* Readers: strobe's threads at work; the writer: a fork. Writers first, so that a fork does not
 * wait for a stream of work (glibc's default lets new readers in while a writer waits). */
static pthread_rwlock_t work_gate;
static pthread_once_t work_gate_once = PTHREAD_ONCE_INIT;

static void gate_init(void) {
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
#if defined(__GLIBC__)
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&work_gate, &a);
    pthread_rwlockattr_destroy(&a);
}

static void gate_fork_prepare(void) {
    (void)pthread_rwlock_wrlock(&work_gate);
}

static void gate_fork_parent(void) {
    (void)pthread_rwlock_unlock(&work_gate);
}

/* The child's one thread has a new id, which glibc's rwlock would not take for its writer's: the
 * gate starts anew instead (no thread of strobe's is at work in the child). */
static void gate_fork_child(void) {
    gate_init();
}

static void gate_install(void) {
    gate_init();
    (void)pthread_atfork(gate_fork_prepare, gate_fork_parent, gate_fork_child);
}

int strobe__own_work_try(void) {
    (void)pthread_once(&work_gate_once, gate_install);
    return pthread_rwlock_tryrdlock(&work_gate) == 0;
}

void strobe__own_work_done(void) {
    (void)pthread_rwlock_unlock(&work_gate);
}
