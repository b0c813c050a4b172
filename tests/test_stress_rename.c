/* test_stress_rename.c: threads rename themselves (strobe_set_thread_name) while strobe_stop()
 * collects their names (issue 29's adversarial plan).
 *
 * Four threads record and rename themselves in a loop, alternating a short and a long name, while
 * the main thread starts and stops sessions. Every thread name in every result must be one of the
 * names given: a name read while it was being rewritten ("xong name ..." from "x" written over
 * "long name ...") is a torn read.
 *
 * KNOWN TO FAIL under TSan (and, rarely, in any build) until the collector reads each thread's
 * name under the registry lock: strobe_set_thread_name() writes the name under that lock, and
 * strobe__collect() (src/core/collect.c, `ti->name = strobe__pool_strdup(&r->pool, t->name)`)
 * copies it without the lock. Handed off to the owner of collect.c (issue 29). */
#include <pthread.h>
#include <stdatomic.h>

#include "stress_util.h"

#define RENAMERS 4
#define CYCLES 300

static const char *const short_name = "x";
static const char *const long_name = "long name of a thread that renames itself";
static atomic_int renaming = 1;

static void *renamer_body(void *arg) {
    (void)arg;
    unsigned i = 0;
    strobe_set_thread_name(short_name);
    while (atomic_load_explicit(&renaming, memory_order_relaxed)) {
        STROBE_SCOPE("renamer");
        strobe_set_thread_name(++i % 2 ? long_name : short_name);
    }
    return NULL;
}

int main(void) {
    stress_watchdog();
    strobe_set_thread_name("main");
    pthread_t th[RENAMERS];
    for (int i = 0; i < RENAMERS; i++)
        REQUIRE(pthread_create(&th[i], NULL, renamer_body, NULL) == 0);
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 4 << 20;
    c.chunk_bytes = 16 << 10;
    c.prefault_bytes = 0;
    size_t torn = 0, named = 0;
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        start_or_die(&c);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        strobe_result *r = stop_or_die();
        CHECK_EQ(check_wellformed(r), 0);
        const strobe_thread_info *ti = strobe_result_threads(r);
        for (size_t t = 0; t < strobe_result_thread_count(r); t++) {
            const char *n = ti[t].name;
            if (strcmp(n, "main") == 0 || n[0] == '\0') continue;
            named++;
            if (strcmp(n, short_name) != 0 && strcmp(n, long_name) != 0) {
                if (torn++ < 5) fprintf(stderr, "cycle %d: torn thread name \"%s\"\n", cycle, n);
            }
        }
        strobe_result_free(r);
    }
    atomic_store(&renaming, 0);
    for (int i = 0; i < RENAMERS; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(torn, 0);
    CHECK_INT(named, >=, 1);
    printf("rename: %d sessions, %zu thread names read, %zu torn\n", CYCLES, named, torn);
    return check_result();
}
