/* dist.c: the process's rank in a parallel job (strobe/dist.h) and the trace metadata made from
 * it: Kineto's "distributedInfo" and strobe's "strobe_job". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist.h"
#include "strobe/dist.h"
#include "strobe/error.h"
#include "strobe/session.h"
#include "trace/kineto.h"
#include "trace/result_internal.h"
#include "util/json_fmt.h"

typedef struct rank_info {
    int rank, local_rank, world_size;
    char backend[32];
} rank_info;

/* What strobe_set_rank() gave, under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int api_set;
static rank_info api;

/* A non-negative decimal integer from the environment. @return 1 with *out, else 0. */
static int env_int(const char *name, int *out) {
    const char *v = getenv(name);
    if (v == NULL || v[0] < '0' || v[0] > '9') return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > 0x7fffffffL) return 0;
    *out = (int)x;
    return 1;
}

/* The launchers' variables, in the order strobe/dist.h gives. @return 1 when one is set. */
static int from_env(rank_info *ri) {
    static const struct {
        const char *rank, *size, *local, *backend;
    } launchers[] = {
        {"RANK", "WORLD_SIZE", "LOCAL_RANK", "unknown"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpi"},
        {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "mpi"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "unknown"},
    };
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        int r, w, l;
        if (!env_int(launchers[i].rank, &r)) continue;
        if (!env_int(launchers[i].size, &w) || w < 1) w = 0; /* unknown: left out */
        if (w && r >= w) continue;
        ri->rank = r;
        ri->world_size = w;
        ri->local_rank = env_int(launchers[i].local, &l) ? l : -1;
        snprintf(ri->backend, sizeof ri->backend, "%s", launchers[i].backend);
        return 1;
    }
    return 0;
}

static int current(rank_info *ri) {
    pthread_mutex_lock(&lock);
    int have = api_set;
    if (have) *ri = api;
    pthread_mutex_unlock(&lock);
    return have || from_env(ri);
}

int strobe_get_rank(int *rank, int *local_rank, int *world_size) {
    rank_info ri;
    if (!current(&ri)) return 0;
    if (rank) *rank = ri.rank;
    if (local_rank) *local_rank = ri.local_rank;
    if (world_size) *world_size = ri.world_size;
    return 1;
}

/* The two metadata values, written into `di` and `job`. @return 1, or 0 when no rank is known. */
static int make_meta(char *di, size_t di_cap, char *job, size_t job_cap) {
    rank_info ri;
    if (!current(&ri)) return 0;
    int n = snprintf(di, di_cap, "{\"backend\": \"%s\", \"rank\": %d", ri.backend, ri.rank);
    if (ri.world_size > 0 && n > 0 && (size_t)n < di_cap)
        n += snprintf(di + n, di_cap - (size_t)n, ", \"world_size\": %d", ri.world_size);
    if (ri.local_rank >= 0 && n > 0 && (size_t)n < di_cap)
        n += snprintf(di + n, di_cap - (size_t)n, ", \"local_rank\": %d", ri.local_rank);
    if (n > 0 && (size_t)n + 2 <= di_cap) memcpy(di + n, "}", 2);

    static const char *const ids[] = {"SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid",
                                      "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID"};
    const char *id = NULL;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && id == NULL; i++) {
        const char *v = getenv(ids[i]);
        if (v && v[0]) id = v;
    }
    char host[256];
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    /* Each string escaped takes at most 6 bytes per input byte (\u00XX), plus its quotes. */
    size_t idlen = id ? strnlen(id, 256) : 0, hlen = strlen(host);
    if (job_cap < 64 + 6 * (idlen + hlen)) return 0;
    char *p = job;
    memcpy(p, "{", 1);
    p++;
    if (id) {
        memcpy(p, "\"id\": ", 6);
        p = strobe__json_put_string(p + 6, id, idlen);
        memcpy(p, ", ", 2);
        p += 2;
    }
    memcpy(p, "\"host\": ", 8);
    p = strobe__json_put_string(p + 8, host, hlen);
    snprintf(p, job_cap - (size_t)(p - job), ", \"pid\": %ld}", (long)getpid());
    return 1;
}

int strobe__dist_meta(strobe_result *r) {
    char di[256], job[4096];
    if (!make_meta(di, sizeof di, job, sizeof job)) return 0;
    int rc = strobe__result_set_meta(r, STROBE_KINETO_KEY_DISTRIBUTED_INFO, di);
    return rc ? rc : strobe__result_set_meta(r, STROBE_KINETO_KEY_JOB, job);
}

static int backend_ok(const char *b) {
    size_t n = strlen(b);
    if (n == 0 || n > 31) return 0;
    for (const char *c = b; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == ':'))
            return 0;
    return 1;
}

int strobe_set_rank(int rank, int local_rank, int world_size, const char *backend) {
    if (backend == NULL) backend = "unknown";
    if (rank < 0 || world_size < 1 || rank >= world_size || local_rank < -1 || !backend_ok(backend))
        return STROBE_EINVAL;
    pthread_mutex_lock(&lock);
    api.rank = rank;
    api.local_rank = local_rank;
    api.world_size = world_size;
    snprintf(api.backend, sizeof api.backend, "%s", backend);
    api_set = 1;
    pthread_mutex_unlock(&lock);
    /* The running session's trace gets the new values (no session: nothing to do). */
    char di[256], job[4096];
    if (make_meta(di, sizeof di, job, sizeof job)) {
        (void)strobe_add_metadata_json(STROBE_KINETO_KEY_DISTRIBUTED_INFO, di);
        (void)strobe_add_metadata_json(STROBE_KINETO_KEY_JOB, job);
    }
    return 0;
}
