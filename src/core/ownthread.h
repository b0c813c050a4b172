/* ownthread.h: the threads strobe starts in a program (the sampler's drain thread, the stream
 * writer, the on-demand endpoint, strobe record's timers), so that what strobe records of the
 * program leaves them out: the CPU sampler samples every thread of the process, strobe's too,
 * and their samples say nothing about the program.
 *
 * Each such thread registers itself first thing. A registered id stays registered for the rest
 * of the process (a thread's samples are placed at stop, after the thread may have ended), in a
 * ring of the last STROBE__OWN_THREADS ids. Thread-safe, lock-free. */
#ifndef STROBE_CORE_OWNTHREAD_H
#define STROBE_CORE_OWNTHREAD_H

#include <stdint.h>

/* Ids kept; older ones are forgotten (a program that starts and stops sessions this many times). */
#define STROBE__OWN_THREADS 64u

/* Registers the calling thread as strobe's own, and names it `name` (at most 15 bytes; NULL: keeps
 * its name) so that top, perf and an allocation counter can tell it from the program's threads,
 * whose name it inherits otherwise. Named with prctl, not pthread_setname_np, which strobe record
 * interposes to record the program's thread names (and would take this thread for one of them). */
void strobe__own_thread_enter(const char *name);

/* Whether thread `tid` (the kernel's id) registered itself as strobe's own. @return 1 or 0. */
int strobe__own_thread_is(int64_t tid);

/* The start handshake. A thread that strobe starts allocates as it starts (its name, its poll
 * set; the interposed pthread_create's hand-over block), and an allocator that does not lock
 * itself around fork() (ASan's before LLVM 15) hands a child forked at that moment its lock held,
 * with no thread to release it: the child's first allocation hangs. So the starter does not
 * return to the program before the thread has set itself up: the thread calls
 * strobe__own_thread_ready(&word) when done (at the earliest first thing in its function, which a
 * sanitizer's runtime calls after its own setup of the thread, ASan's allocating), and the starter
 * strobe__own_thread_wait(&word) right after pthread_create (at most `ms` milliseconds; 0: a word
 * that was 0). */
void strobe__own_thread_ready(uint32_t *word);
void strobe__own_thread_wait(uint32_t *word, int ms);

/* The fork gate. A thread of strobe's does its work (what allocates: the drain thread's pass, the
 * stream writer's batch) inside strobe__own_work_try(gate) ... strobe__own_work_done(gate), and a
 * fork() waits for the work under way to end before it copies the process (pthread_atfork,
 * installed by the first try: after the session's own handlers, so that it runs before them), so
 * that no child inherits a lock of the allocator (or of libdw) held by a thread it does not have.
 * The try never waits: it fails while a fork is under way or another thread of the same kind is
 * at work (the work is then left for the thread's next round), since a fork's later handlers take
 * locks that a thread stopping a session may hold while it waits for this thread to end.
 * @return 1 when the work may go on (then call strobe__own_work_done), 0 when not. */
enum { STROBE__GATE_DRAIN, STROBE__GATE_STREAM, STROBE__GATES };
int strobe__own_work_try(int gate);
void strobe__own_work_done(int gate);

#endif /* STROBE_CORE_OWNTHREAD_H */
