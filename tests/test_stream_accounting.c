/* test_stream_accounting.c: a stream's file accounts for every event (stream.c).
 *
 * - stats: a stream that drops records (a buffer of two chunks) carries in its file the same
 *   "strobe" object (version, clock, stats, warnings) and "strobe_stream" object (events, lost,
 *   dropped, write error) as the result saved after it, in JSON and in Perfetto's format;
 * - full disk: a stream whose writes fail part way (RLIMIT_FSIZE with SIGXFSZ ignored, so that
 *   write() fails with EFBIG, in a child process; and a 1 MiB tmpfs when the test runs as root and
 *   may mount one) counts every event that did not reach the file: the ranges in the file plus
 *   those counted lost plus those counted dropped are the ranges recorded, the file holds exactly
 *   the events the stream says it wrote, and strobe's reader reads the file to its end. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"
#include "stream_burst.h"

static char out_dir[512];

static const char *meta_value(const strobe_result *r, const char *key) {
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, key) == 0) return v;
    }
    return NULL;
}

/* The number after "\"key\": " in a JSON text; -1 when absent. */
static long long json_number(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = json ? strstr(json, pat) : NULL;
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* What a trace file holds: the ranges named `name`, and the raw text of two metadata values. */
typedef struct file_facts {
    long long ranges;
    int read_to_end;
    char *strobe_obj, *stream_obj;
} file_facts;

static void facts_free(file_facts *f) {
    free(f->strobe_obj);
    free(f->stream_obj);
}

static int read_facts(const char *path, const char *name, file_facts *f) {
    memset(f, 0, sizeof *f);
    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    if (strobe_rd_open(&rd, path, &opt) != 0) {
        fprintf(stderr, "cannot open %s: %s\n", path, rd ? strobe_rd_errmsg(rd) : "?");
        strobe_rd_close(rd);
        return -1;
    }
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (it.kind == STROBE_RD_META) {
            const strobe_rd_meta *m = it.meta;
            char **slot = NULL;
            if (m->key.s && strcmp(m->key.s, "strobe") == 0) slot = &f->strobe_obj;
            if (m->key.s && strcmp(m->key.s, "strobe_stream") == 0) slot = &f->stream_obj;
            if (slot) {
                free(*slot);
                *slot = strndup(m->value.raw, m->value.len);
            }
            continue;
        }
        const strobe_rd_event *e = it.event;
        if (!e->bad && e->ph.len == 1 && e->ph.s[0] == 'X' && e->name.s &&
            strcmp(e->name.s, name) == 0)
            f->ranges++;
    }
    if (rc != 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    f->read_to_end = rc == 0;
    strobe_rd_close(rd);
    return 0;
}

/* ---- stats ------------------------------------------------------------------------------------
 */

/* A burst into a buffer of two chunks drops records; the stream's file must carry the counts. */
static void test_stats(const char *file, const char *saved_file) {
    enum { PAIRS = 300000 };
    char path[600], saved[600];
    snprintf(path, sizeof path, "%s/%s", out_dir, file);
    snprintf(saved, sizeof saved, "%s/%s", out_dir, saved_file);
    strobe_result *r = stream_burst(path, PAIRS);
    uint64_t dropped = strobe_result_stats(r)->dropped_events;
    CHECK_INT(dropped, >, 0);
    REQUIRE(strobe_result_save(r, saved) == 0);
    strobe_result_free(r);

    file_facts got, want;
    REQUIRE(read_facts(path, STREAM_BURST_NAME, &got) == 0);
    REQUIRE(read_facts(saved, STREAM_BURST_NAME, &want) == 0);
    CHECK(got.read_to_end);
    CHECK_EQ(got.ranges + (long long)dropped, PAIRS);
    /* The saved result holds the stream's counts as metadata; the file must hold the same. */
    CHECK(want.strobe_obj != NULL && want.stream_obj != NULL);
    CHECK_STR(got.strobe_obj, want.strobe_obj);
    CHECK_STR(got.stream_obj, want.stream_obj);
    CHECK_EQ(json_number(got.strobe_obj, "dropped_events"), (long long)dropped);
    CHECK_EQ(json_number(got.stream_obj, "dropped_events"), (long long)dropped);
    CHECK_EQ(json_number(got.stream_obj, "lost_events"), 0);
    facts_free(&got);
    facts_free(&want);
}

/* ---- full disk --------------------------------------------------------------------------------
 */

enum { FULL_PAIRS = 200000 };

/* Streams FULL_PAIRS ranges to `path`, whose writes fail part way, and checks the accounting.
 * Runs in a child process (the file size limit is the process's). @return the child's status. */
static int stream_to_full(const char *path, long long fsize_limit) {
    if (fsize_limit > 0) {
        struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
        REQUIRE(setrlimit(RLIMIT_FSIZE, &rl) == 0);
        signal(SIGXFSZ, SIG_IGN);
    }
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.buffer_bytes = (size_t)64 << 20;
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, "full", STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < FULL_PAIRS; i++) {
        strobe_range_begin_site(&s);
        strobe_range_end();
    }
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    if (fsize_limit > 0) {
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
        (void)setrlimit(RLIMIT_FSIZE, &rl); /* raising a soft limit back may fail: not needed */
    }
    uint64_t dropped = strobe_result_stats(r)->dropped_events;
    const char *sm = meta_value(r, "strobe_stream");
    long long events = json_number(sm, "events"), lost = json_number(sm, "lost_events");
    fprintf(stderr,
            "%s: %d ranges recorded, %lld in the file by the stream's count, %lld lost, "
            "%llu dropped\n",
            path, FULL_PAIRS, events, lost, (unsigned long long)dropped);
    CHECK(sm != NULL && strstr(sm, "\"write_error\": true") != NULL);
    CHECK_INT(lost, >, 0);
    strobe_result_free(r);

    file_facts got;
    REQUIRE(read_facts(path, "full", &got) == 0);
    CHECK(got.read_to_end);
    fprintf(stderr, "%s: %lld ranges read back\n", path, got.ranges);
    CHECK_EQ(got.ranges, events);
    CHECK_EQ(got.ranges + lost + (long long)dropped, FULL_PAIRS);
    facts_free(&got);
    return check_result();
}

static void run_child(const char *path, long long fsize_limit) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        check__failures = 0; /* the parent's, not the child's */
        _exit(stream_to_full(path, fsize_limit));
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the child failed (status %d)\n", path, status);
        check__failures++;
    }
}

static void test_fsize_limit(const char *file) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", out_dir, file);
    run_child(path, 256 << 10);
    unlink(path);
}

/* A real full disk: a 1 MiB tmpfs, mounted when the test may (root, and mounts allowed). */
static void test_tmpfs(void) {
    if (geteuid() != 0) {
        fprintf(stderr, "tmpfs full-disk test skipped: not root (the RLIMIT_FSIZE test ran)\n");
        return;
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/full_tmpfs_XXXXXX", out_dir);
    REQUIRE(mkdtemp(dir) != NULL);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=1m tmpfs '%s' 2>/dev/null", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "tmpfs full-disk test skipped: cannot mount a tmpfs here\n");
        rmdir(dir);
        return;
    }
    const char *files[] = {"full.json", "full.pftrace"};
    for (int i = 0; i < 2; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        run_child(path, 0);
        unlink(path);
    }
    snprintf(cmd, sizeof cmd, "umount '%s'", dir);
    CHECK(system(cmd) == 0);
    rmdir(dir);
}

int main(void) {
    snprintf(out_dir, sizeof out_dir, "%s", STROBE_TEST_OUT_DIR);
    mkdir(out_dir, 0755);
    test_stats("stream_stats.json", "stream_stats_saved.json");
    test_stats("stream_stats.pftrace", "stream_stats_saved.pftrace");
    test_fsize_limit("stream_full.json");
    test_fsize_limit("stream_full.pftrace");
    test_tmpfs();
    return check_result();
}
