/* step.c: see step.h. */
#include "step.h"

#include <string.h>

int md_step_number(const char *name, int64_t *n) {
    static const char prefix[] = "ProfilerStep";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
    const char *p = name + sizeof prefix - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#') return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9') return 0;
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (INT64_MAX - 9) / 10) return 0;
        v = v * 10 + (*p - '0');
    }
    *n = v;
    return 1;
}

int md_is_step(const md_model *m, const md_event *e, int64_t *n) {
    if (e->kind != MD_CPU_OP && e->kind != MD_USER_ANNOTATION) return 0;
    if (e->ph != 'X' || !e->has_time || e->bad) return 0;
    return md_step_number(md_str(m, e->name), n);
}
