/* test_dist: the rank in a parallel job (strobe/dist.h), range args (strobe_range_arg) and the
 * clock skew knob (STROBE_CLOCK_SKEW_NS), without MPI.
 *
 * Rank: each launcher's variables, alone and together (the documented order decides), malformed
 * ones (skipped), then strobe_set_rank() over them, also while a session runs; each checked in the
 * metadata of a result and, once, of a streamed trace read back. The expected values are the ones
 * the test sets. Skew: the test runs itself with STROBE_CLOCK_SKEW_NS=+5 s; the child's event
 * times and strobe_clock_now_ns() must lie 5 s after the parent's realtime clock around it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "reader/trace_reader.h"
#include "strobe/strobe.h"

static const char *const all_vars[] = {"RANK",
                                       "WORLD_SIZE",
                                       "LOCAL_RANK",
                                       "OMPI_COMM_WORLD_RANK",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "PMI_RANK",
                                       "PMI_SIZE",
                                       "MPI_LOCALRANKID",
                                       "SLURM_PROCID",
                                       "SLURM_NTASKS",
                                       "SLURM_LOCALID",
                                       "SLURM_JOB_ID",
                                       "PMIX_NAMESPACE",
                                       "OMPI_MCA_orte_ess_jobid",
                                       "OMPI_MCA_ess_base_jobid",
                                       "TORCHELASTIC_RUN_ID"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
}

/* The metadata value of `key` in a result, copied into out ("" when absent). */
static void meta(const strobe_result *r, const char *key, char *out, size_t cap) {
    out[0] = '\0';
    for (size_t i = 0; i < strobe_result_metadata_count(r); i++) {
        const char *k, *v;
        if (strobe_result_metadata(r, i, &k, &v) == 0 && strcmp(k, key) == 0)
            snprintf(out, cap, "%s", v);
    }
}

/* A session with nothing in it: its distributedInfo and strobe_job. */
static void session_meta(char *di, char *job, size_t cap) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    meta(r, "distributedInfo", di, cap);
    meta(r, "strobe_job", job, cap);
    strobe_result_free(r);
}

static void check_env(void) {
    char di[512], job[512], want[512], host[256];
    REQUIRE(gethostname(host, sizeof host) == 0);
    host[sizeof host - 1] = '\0';

    clear_env();
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "");
    CHECK_STR(job, "");
    int rank = -9;
    CHECK_EQ(strobe_get_rank(&rank, NULL, NULL), 0);
    CHECK_EQ(rank, -9);

    /* Slurm alone, with the job id. */
    setenv("SLURM_PROCID", "7", 1);
    setenv("SLURM_NTASKS", "16", 1);
    setenv("SLURM_LOCALID", "3", 1);
    setenv("SLURM_JOB_ID", "12345", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"unknown\", \"rank\": 7, \"world_size\": 16, \"local_rank\": 3}");
    snprintf(want, sizeof want, "{\"id\": \"12345\", \"host\": \"%s\", \"pid\": %ld}", host,
             (long)getpid());
    CHECK_STR(job, want);

    /* PMI comes before Slurm; without MPI_LOCALRANKID the local rank is left out. */
    setenv("PMI_RANK", "5", 1);
    setenv("PMI_SIZE", "6", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 5, \"world_size\": 6}");
    setenv("MPI_LOCALRANKID", "1", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 5, \"world_size\": 6, \"local_rank\": 1}");

    /* Open MPI before PMI; its job id before... Slurm's id stays first. */
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 2, \"world_size\": 4, \"local_rank\": 0}");
    unsetenv("SLURM_JOB_ID");
    setenv("OMPI_MCA_ess_base_jobid", "99\"x", 1); /* escaped in JSON */
    session_meta(di, job, sizeof di);
    snprintf(want, sizeof want, "{\"id\": \"99\\\"x\", \"host\": \"%s\", \"pid\": %ld}", host,
             (long)getpid());
    CHECK_STR(job, want);

    /* torchrun first; a malformed or out-of-range one is skipped for the next. */
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_RANK", "1", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"unknown\", \"rank\": 3, \"world_size\": 8, \"local_rank\": 1}");
    setenv("RANK", "8", 1); /* rank >= world size */
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 2, \"world_size\": 4, \"local_rank\": 0}");
    setenv("RANK", "3x", 1);
    setenv("OMPI_COMM_WORLD_RANK", "-1", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 5, \"world_size\": 6, \"local_rank\": 1}");
    /* A rank without a world size (or a malformed one) is kept, world_size left out. */
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "", 1);
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"mpi\", \"rank\": 2, \"local_rank\": 0}");
    int ws0 = -9;
    CHECK_EQ(strobe_get_rank(NULL, NULL, &ws0), 1);
    CHECK_EQ(ws0, 0);
    unsetenv("OMPI_COMM_WORLD_RANK");
    int lr = -9, ws = -9;
    CHECK_EQ(strobe_get_rank(&rank, &lr, &ws), 1);
    CHECK_EQ(rank, 5);
    CHECK_EQ(lr, 1);
    CHECK_EQ(ws, 6);
}

static void check_api(const char *stream_path) {
    CHECK_EQ(strobe_set_rank(-1, 0, 2, "mpi"), STROBE_EINVAL);
    CHECK_EQ(strobe_set_rank(2, 0, 2, "mpi"), STROBE_EINVAL);
    CHECK_EQ(strobe_set_rank(0, -2, 2, "mpi"), STROBE_EINVAL);
    CHECK_EQ(strobe_set_rank(0, 0, 0, "mpi"), STROBE_EINVAL);
    CHECK_EQ(strobe_set_rank(0, 0, 2, "bad name"), STROBE_EINVAL);
    CHECK_EQ(strobe_set_rank(0, 0, 2, ""), STROBE_EINVAL);

    /* The environment says rank 5 of 6 (check_env's last state); the API wins, also over a
     * session that runs: its streamed trace has the API's values. */
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.stream_path = stream_path;
    REQUIRE(strobe_start(&cfg) == 0);
    CHECK_EQ(strobe_set_rank(1, -1, 2, "nccl"), 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    char di[512];
    meta(r, "distributedInfo", di, sizeof di);
    CHECK_STR(di, "{\"backend\": \"nccl\", \"rank\": 1, \"world_size\": 2}");
    strobe_result_free(r);

    strobe_rd *rd = NULL;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    REQUIRE(strobe_rd_open(&rd, stream_path, &opt) == 0);
    strobe_rd_item it;
    int found = 0;
    while (strobe_rd_next(rd, &it) > 0) {
        if (it.kind != STROBE_RD_META || it.meta->key.s == NULL ||
            strcmp(it.meta->key.s, "distributedInfo") != 0)
            continue;
        int64_t v = -1;
        strobe_rd_value f;
        REQUIRE(strobe_rd_obj_get(it.meta->value.raw, it.meta->value.len, "rank", &f) == 1);
        REQUIRE(strobe_rd_value_int(&f, &v) == 0);
        CHECK_EQ(v, 1);
        REQUIRE(strobe_rd_obj_get(it.meta->value.raw, it.meta->value.len, "world_size", &f) == 1);
        REQUIRE(strobe_rd_value_int(&f, &v) == 0);
        CHECK_EQ(v, 2);
        found++;
    }
    CHECK_EQ(found, 1);
    strobe_rd_close(rd);

    /* Without a session the API's values are kept for the next one. */
    CHECK_EQ(strobe_set_rank(0, 0, 3, NULL), 0);
    char job[512];
    session_meta(di, job, sizeof di);
    CHECK_STR(di, "{\"backend\": \"unknown\", \"rank\": 0, \"world_size\": 3, \"local_rank\": 0}");
}

static void check_range_args(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    strobe_range_arg("orphan", "1"); /* no open range */
    STROBE_RANGE_BEGIN("outer");
    strobe_range_begin("inner");
    strobe_range_arg("n", "42");
    strobe_range_arg("s", "\"x\"");
    strobe_range_arg("n", "43"); /* the last value is kept */
    strobe_range_arg("bad", "{");
    strobe_range_arg("", "1");
    strobe_range_end();
    strobe_range_arg("list", "[1, 2]");
    STROBE_RANGE_END();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t outer = SIZE_MAX, inner = SIZE_MAX;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].name, "outer") == 0) outer = i;
        if (strcmp(ev[i].name, "inner") == 0) inner = i;
    }
    REQUIRE(outer != SIZE_MAX && inner != SIZE_MAX);
    CHECK_STR(strobe_event_arg(r, inner, "n"), "43");
    CHECK_STR(strobe_event_arg(r, inner, "s"), "\"x\"");
    CHECK(strobe_event_arg(r, inner, "bad") == NULL);
    CHECK(strobe_event_arg(r, inner, "list") == NULL);
    CHECK_STR(strobe_event_arg(r, outer, "list"), "[1, 2]");
    CHECK(strobe_event_arg(r, outer, "n") == NULL);
    CHECK_EQ(strobe_result_stats(r)->truncated_details, 2);
    strobe_result_free(r);
}

/* The child: prints its first event's start and strobe_clock_now_ns() after it. */
static int skew_child(void) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    if (strobe_start(&cfg) != 0) return 1;
    STROBE_RANGE_BEGIN("skewed");
    STROBE_RANGE_END();
    strobe_result *r = NULL;
    if (strobe_stop(&r) != 0) return 1;
    const strobe_event *ev = strobe_result_events(r);
    int64_t start = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, "skewed") == 0) start = ev[i].start_ns;
    printf("%lld %lld\n", (long long)start, (long long)strobe_clock_now_ns());
    strobe_result_free(r);
    return 0;
}

static int64_t real_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void check_skew(void) {
    const int64_t skew = 5000000000LL;
    char cmd[4200], self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    self[n] = '\0';
    snprintf(cmd, sizeof cmd, "STROBE_CLOCK_SKEW_NS=%lld '%s' --skew-child", (long long)skew, self);
    int64_t before = real_now();
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    long long start = 0, now = 0;
    CHECK_EQ(fscanf(p, "%lld %lld", &start, &now), 2);
    CHECK_EQ(pclose(p), 0);
    int64_t after = real_now();
    CHECK_INT(start, >=, before + skew);
    CHECK_INT(start, <=, after + skew);
    CHECK_INT(now, >=, start);
    CHECK_INT(now, <=, after + skew);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--skew-child") == 0) return skew_child();
    check_env();
    check_api(STROBE_TEST_OUT_DIR "/test_dist_stream.json");
    check_range_args();
    check_skew();
    return check_result();
}
