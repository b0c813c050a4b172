/* edge.c: the module (edge) profiler (strobe/edge.h), a driver beside the core: it runs one session
 * per model run through the public API, and names its "Module Hierarchy" arg with the trace
 * layer's vocabulary (trace/kineto.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kineto.h"
#include "strobe/backend.h"
#include "strobe/edge.h"
#include "strobe/error.h"
#include "strobe/result.h"
#include "strobe/session.h"
#include "util/err.h"
#include "util/json_fmt.h"
#include "util/struct_in.h"
#include "util/u64map.h"

/* ---- edge profiler ------------------------------------------------------------------------- */

struct strobe_edge_profiler {
    char *name;
    char *output_path;
    int with_modules;
    pthread_mutex_t lock; /* guards the handle map */
    /* debug handle -> its module path (malloc'd), the handle's bits as the key. The one key the
     * map cannot hold, UINT64_MAX (handle -1), has its path beside it. */
    strobe__u64map paths;
    char *path_of_max;
};

static strobe_edge_profiler *current;
static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;

strobe_edge_profiler *strobe_current_edge_profiler(void) {
    return __atomic_load_n(&current, __ATOMIC_ACQUIRE);
}

static void edge_free(strobe_edge_profiler *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < p->paths.cap; i++)
        if (p->paths.keys[i] != 0) free((char *)(uintptr_t)p->paths.vals[i]);
    strobe__u64map_free(&p->paths);
    free(p->path_of_max);
    free(p->name);
    free(p->output_path);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int strobe_edge_profiler_begin(const strobe_edge_config *user_cfg, strobe_edge_profiler **out) {
    if (out) *out = NULL;
    /* The library's own full-size copy (README, "ABI and versions"): fields the caller lacks are 0,
     * their defaults. */
    strobe_edge_config full;
    memset(&full, 0, sizeof full);
    STROBE_FORWARD_IF_ERR(
        strobe__struct_in(&full, sizeof full, user_cfg, STROBE_EDGE_CONFIG_MIN_SIZE));
    const strobe_edge_config *cfg = &full;
    STROBE_RETURN_IF(out == NULL || cfg->name == NULL || cfg->output_path == NULL ||
                         cfg->output_path[0] == '\0',
                     STROBE_EINVAL);
    strobe_edge_profiler *p = calloc(1, sizeof *p);
    STROBE_RETURN_IF(p == NULL, STROBE_ENOMEM);
    pthread_mutex_init(&p->lock, NULL);
    p->name = strdup(cfg->name);
    p->output_path = strdup(cfg->output_path);
    p->with_modules = cfg->with_modules;
    int rc;
    STROBE_FAIL_IF(p->name == NULL || p->output_path == NULL, STROBE_ENOMEM, fail);
    strobe_config sc;
    strobe_config_init(&sc);
    sc.record_shapes = cfg->record_shapes;
    sc.profile_memory = cfg->profile_memory;
    sc.with_stack = cfg->with_stack;
    sc.with_flops = cfg->with_flops;
    sc.with_modules = cfg->with_modules;
    sc.perf_events = cfg->perf_events;
    sc.trace_name = cfg->name;
    if (cfg->buffer_bytes) sc.buffer_bytes = cfg->buffer_bytes;
    pthread_mutex_lock(&current_lock);
    rc = current ? STROBE_EBUSY : strobe_start(&sc);
    if (rc == 0) __atomic_store_n(&current, p, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&current_lock);
    if (rc) goto fail;
    if (p->with_modules) strobe_module_push(p->name);
    strobe_range_begin_scope(p->name, STROBE_RECORD_SCOPE_LITE_INTERPRETER);
    *out = p;
    return 0;
fail:
    edge_free(p);
    return rc;
}

int strobe_edge_profiler_register_handles(strobe_edge_profiler *p, const int64_t *handles,
                                          const char *const *module_paths, size_t n) {
    STROBE_RETURN_IF(p == NULL || (n && (handles == NULL || module_paths == NULL)), STROBE_EINVAL);
    for (size_t i = 0; i < n; i++)
        STROBE_RETURN_IF(module_paths[i] == NULL, STROBE_EINVAL);
    int rc = 0;
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *copy = strdup(module_paths[i]);
        if (copy == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        uint64_t key = (uint64_t)handles[i];
        if (key == UINT64_MAX) {
            free(p->path_of_max);
            p->path_of_max = copy;
            continue;
        }
        uint64_t *slot = strobe__u64map_put(&p->paths, key, NULL);
        if (slot == NULL) {
            free(copy);
            rc = STROBE_ENOMEM;
            break;
        }
        free((char *)(uintptr_t)*slot); /* a handle given again keeps its last path (0: new) */
        *slot = (uint64_t)(uintptr_t)copy;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* The module path registered for `handle`, or NULL. */
static const char *path_of(const strobe_edge_profiler *p, int64_t handle) {
    uint64_t key = (uint64_t)handle;
    if (key == UINT64_MAX) return p->path_of_max;
    const uint64_t *v = strobe__u64map_get(&p->paths, key);
    return v ? (const char *)(uintptr_t)*v : NULL;
}

/* Gives backend events whose debug handle is registered their module path. */
static int resolve_handles(strobe_edge_profiler *p, strobe_result *r) {
    if (p->paths.count == 0 && p->path_of_max == NULL) return 0;
    size_t n = strobe_result_event_count(r);
    for (size_t i = 0; i < n; i++) {
        const char *h = strobe_event_arg(r, i, "Debug handle");
        if (h == NULL) continue;
        const char *path = path_of(p, strtoll(h, NULL, 10));
        if (path == NULL) continue;
        /* The path becomes a JSON string: quoted, escaped, and any byte that is not UTF-8
         * replaced (module names are the program's bytes; the arg must be valid JSON). */
        size_t len = strlen(path);
        char *json = malloc(STROBE__JSON_STRING_MAX(len) + 1);
        if (json == NULL) return STROBE_ENOMEM;
        *strobe__json_put_string(json, path, len) = '\0';
        int rc = strobe_event_set_arg(r, i, STROBE_KINETO_ARG_MODULE_HIERARCHY, json);
        free(json);
        if (rc) return rc;
    }
    return 0;
}

int strobe_edge_profiler_end(strobe_edge_profiler *p, strobe_result **out) {
    if (out) *out = NULL;
    if (p == NULL) return STROBE_EINVAL;
    strobe_range_end();
    if (p->with_modules) strobe_module_pop();
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    pthread_mutex_lock(&current_lock);
    if (current == p) __atomic_store_n(&current, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&current_lock);
    if (rc == 0) rc = resolve_handles(p, r);
    if (rc == 0) rc = strobe_result_save(r, p->output_path);
    /* The run's result goes back to a caller who asked for it also when the trace could not be
     * written: the data is not lost with the file. */
    if (r != NULL && out) {
        *out = r;
    } else {
        strobe_result_free(r);
    }
    edge_free(p);
    return rc;
}
