/* trace_zoo.c: writes one trace for each feature of the recorder, for the independent checkers
 * (tests/validate_traces.sh) and the round-trip test. Usage: trace_zoo OUT_DIR. Prints the path of
 * each trace it writes, one per line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strobe/strobe.h"

static const char *out_dir;

static int save(strobe_result *r, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    int rc = strobe_result_save(r, path);
    strobe_result_free(r);
    if (rc) {
        fprintf(stderr, "trace_zoo: saving %s: %s\n", path, strobe_strerror(rc));
        return 1;
    }
    printf("%s\n", path);
    return 0;
}

static strobe_result *run(const strobe_config *c, void (*body)(void)) {
    if (strobe_start(c) != 0) return NULL;
    body();
    strobe_result *r = NULL;
    return strobe_stop(&r) == 0 ? r : NULL;
}

static void spin_us(int us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void nested(int depth) {
    STROBE_OP("aten::nested");
    spin_us(2);
    if (depth) nested(depth - 1);
    if (depth) nested(depth - 1);
}

static void *worker(void *arg) {
    char name[32];
    snprintf(name, sizeof name, "zoo worker %d", (int)(intptr_t)arg);
    strobe_set_thread_name(name);
    for (int i = 0; i < 20; i++) {
        STROBE_SCOPE("step");
        strobe_push_correlation_id((uint64_t)(1000 * (intptr_t)arg + i));
        nested(3);
        strobe_pop_correlation_id();
        STROBE_COUNTER("progress", i);
    }
    return NULL;
}

static void body_threads(void) {
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    strobe_add_metadata_json("zoo", "{\"feature\": \"threads\", \"list\": [1, 2.5, null, true]}");
}

static void body_names(void) {
    char all[256];
    for (int i = 0; i < 255; i++)
        all[i] = (char)(i + 1);
    all[255] = 0;
    const char *names[] = {all,
                           "quote \" backslash \\ slash /",
                           "tab\tnewline\n",
                           "\xff\xfe invalid",
                           "\xe2\x82\xac euro",
                           "\xed\xa0\x80 surrogate",
                           "\xc0\xaf overlong",
                           ""};
    strobe_set_thread_name("thread \"name\" \x01\xff");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        strobe_range_begin(names[i]);
        strobe_instant(names[i]);
        strobe_counter(names[i], (double)i);
        spin_us(1);
        strobe_range_end();
    }
}

static void body_repairs(void) {
    strobe_range_end(); /* unmatched */
    STROBE_RANGE_BEGIN("closed");
    spin_us(5);
    STROBE_RANGE_END();
    strobe_range_begin("unfinished outer");
    strobe_range_begin("unfinished inner");
    spin_us(5);
}

static void body_full(void) {
    STROBE_RANGE_BEGIN("fills the buffer");
    for (int i = 0; i < 20000; i++) {
        STROBE_OP("tiny");
    }
    STROBE_RANGE_END();
}

static void body_empty(void) {}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: trace_zoo OUT_DIR\n");
        return 2;
    }
    out_dir = argv[1];
    strobe_config c;
    strobe_config_init(&c);
    c.prefault_bytes = 0;
    c.trace_name = "strobe trace zoo";
    int bad = 0;
    strobe_result *r;
    bad |= (r = run(&c, body_threads)) ? save(r, "zoo_threads.json") : 1;
    bad |= (r = run(&c, body_threads)) ? save(r, "zoo_threads.json.gz") : 1;
    bad |= (r = run(&c, body_names)) ? save(r, "zoo_names.json") : 1;
    bad |= (r = run(&c, body_repairs)) ? save(r, "zoo_repairs.json") : 1;
    bad |= (r = run(&c, body_empty)) ? save(r, "zoo_empty.json") : 1;
    strobe_config small = c;
    small.buffer_bytes = 16384;
    small.chunk_bytes = 4096;
    bad |= (r = run(&small, body_full)) ? save(r, "zoo_buffer_full.json") : 1;
    if (bad) fprintf(stderr, "trace_zoo: a session failed\n");
    return bad ? 1 : 0;
}
