/* api_writer.c: the public event-level writer (strobe/writer.h) over the trace layer's writers
 * (writer.h) and a save's file (save.c: a temporary file renamed at the end). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kineto.h"
#include "strobe/error.h"
#include "strobe/writer.h"
#include "util/json_check.h"
#include "writer.h"

/* The public arg is the encoder's, field for field, so that args pass through uncopied. */
_Static_assert(sizeof(strobe_writer_arg) == sizeof(strobe__wr_arg), "arg layout");
_Static_assert(offsetof(strobe_writer_arg, key) == offsetof(strobe__wr_arg, name), "arg.key");
_Static_assert(offsetof(strobe_writer_arg, type) == offsetof(strobe__wr_arg, type), "arg.type");
_Static_assert(offsetof(strobe_writer_arg, i) == offsetof(strobe__wr_arg, i), "arg.i");
_Static_assert(offsetof(strobe_writer_arg, u) == offsetof(strobe__wr_arg, u), "arg.u");
_Static_assert(offsetof(strobe_writer_arg, d) == offsetof(strobe__wr_arg, d), "arg.d");
_Static_assert(offsetof(strobe_writer_arg, s) == offsetof(strobe__wr_arg, s), "arg.s");
_Static_assert(offsetof(strobe_writer_arg, len) == offsetof(strobe__wr_arg, slen), "arg.len");
_Static_assert((int)STROBE_ARG_INT == STROBE__PFT_INT && (int)STROBE_ARG_UINT == STROBE__PFT_UINT &&
                   (int)STROBE_ARG_DOUBLE == STROBE__PFT_DOUBLE &&
                   (int)STROBE_ARG_BOOL == STROBE__PFT_BOOL &&
                   (int)STROBE_ARG_STRING == STROBE__PFT_STRING &&
                   (int)STROBE_ARG_JSON == STROBE__PFT_JSON,
               "arg types");
_Static_assert(STROBE_WRITER_SESSION == STROBE__WR_SESSION, "session flag");
_Static_assert((int)STROBE_TRACK_PROCESS == STROBE__WR_PROCESS &&
                   (int)STROBE_TRACK_THREAD == STROBE__WR_THREAD &&
                   (int)STROBE_TRACK_DEVICE == STROBE__WR_DEVICE &&
                   (int)STROBE_TRACK_STREAM == STROBE__WR_STREAM &&
                   (int)STROBE_TRACK_LANE == STROBE__WR_LANE,
               "track kinds");

struct strobe_writer {
    char *path, *tmp;
    strobe__sink sink;
    strobe__writer *w;
    int err; /* the first error: the file is removed at close */
    strobe__pool pool;
    strobe__meta *meta;
    size_t meta_count, meta_cap;
    const char *strobe_json, *device_props;
    char *trace_id, *trace_name;
};

int strobe_writer_open(strobe_writer **out, const char *path, const strobe_writer_options *opt) {
    if (out == NULL) return STROBE_EINVAL;
    *out = NULL;
    strobe_writer_options def;
    strobe_writer_options_init(&def);
    if (opt == NULL) opt = &def;
    if (path == NULL || path[0] == '\0' || opt->struct_size < sizeof(strobe_writer_options))
        return STROBE_EINVAL;
    const strobe__writer_ops *ops = strobe__writer_for_format(path, opt->format);
    if (ops == NULL) return STROBE_EINVAL;
    strobe_writer *x = calloc(1, sizeof *x);
    if (x == NULL) return STROBE_ENOMEM;
    x->path = strdup(path);
    x->trace_id = strdup(opt->trace_id ? opt->trace_id : "");
    x->trace_name = opt->trace_name ? strdup(opt->trace_name) : NULL;
    if (x->path == NULL || x->trace_id == NULL || (opt->trace_name && x->trace_name == NULL)) {
        free(x->path);
        free(x->trace_id);
        free(x->trace_name);
        free(x);
        return STROBE_ENOMEM;
    }
    int rc = strobe__file_open(path, &x->tmp, &x->sink);
    if (rc == 0) {
        x->w = strobe__writer_open(ops, &x->sink, 0);
        if (x->w == NULL) rc = STROBE_ENOMEM;
    }
    if (rc == 0) {
        strobe__wr_info info = {.base_ns = opt->base_ns, .trace_id = x->trace_id};
        rc = x->w->ops->begin(x->w, &info);
    }
    if (rc) {
        int e = errno; /* the system's reason, which the cleanup must not replace */
        strobe_writer_abort(x);
        errno = e;
        return rc;
    }
    *out = x;
    return 0;
}

/* Records the first error: the file will not be kept. @return rc. */
static int failed(strobe_writer *x, int rc) {
    if (rc < 0 && x->err == 0) x->err = rc;
    return rc;
}

int64_t strobe_writer_add_track(strobe_writer *x, const strobe_writer_track *t) {
    if (x == NULL || t == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    if ((unsigned)t->kind > (unsigned)STROBE_TRACK_LANE) return STROBE_EINVAL;
    if ((t->kind == STROBE_TRACK_STREAM || t->kind == STROBE_TRACK_LANE) &&
        t->parent >= x->w->track_count)
        return STROBE_EINVAL;
    strobe__wr_track wt = {.kind = (int)t->kind,
                           .pid = t->pid,
                           .tid = t->tid,
                           .name = t->name,
                           .label = t->label,
                           .sort_index = t->sort_index,
                           .parent = t->parent};
    int64_t id = strobe__writer_track(x->w, &wt);
    if (id < 0) failed(x, (int)id);
    return id;
}

/* The trace layer's event of a public one; STROBE_EINVAL for a track not declared. */
static int convert(const strobe_writer *x, const strobe_writer_event *e, int flags,
                   strobe__wr_event *out) {
    if (e == NULL || e->track >= x->w->track_count || (e->nargs && e->args == NULL) ||
        (e->nflow_out && e->flow_out == NULL) || (e->nflow_in && e->flow_in == NULL))
        return STROBE_EINVAL;
    *out = (strobe__wr_event){.track = e->track,
                              .flags = flags | (e->flags & STROBE__WR_SESSION),
                              .cat = e->cat,
                              .name = e->name ? e->name : "",
                              .name_len = (size_t)-1,
                              .ts = e->ts,
                              .end = e->end < e->ts ? e->ts : e->end,
                              .value = e->value,
                              .args = (const strobe__wr_arg *)e->args,
                              .nargs = e->nargs,
                              .flow_out = e->flow_out,
                              .flow_in = e->flow_in,
                              .nflow_out = e->nflow_out,
                              .nflow_in = e->nflow_in};
    return 0;
}

int strobe_writer_slice(strobe_writer *x, const strobe_writer_event *e) {
    if (x == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    strobe__wr_event ev;
    int rc = convert(x, e, STROBE__WR_COMPLETE, &ev);
    if (rc) return rc;
    rc = x->w->ops->slice_begin(x->w, &ev);
    if (rc == 0) rc = x->w->ops->slice_end(x->w, &ev, NULL, 0);
    return failed(x, rc);
}

int strobe_writer_slice_begin(strobe_writer *x, const strobe_writer_event *e) {
    if (x == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    strobe__wr_event ev;
    int rc = convert(x, e, 0, &ev);
    return rc ? rc : failed(x, x->w->ops->slice_begin(x->w, &ev));
}

int strobe_writer_slice_end(strobe_writer *x, const strobe_writer_event *e,
                            const strobe_writer_arg *args, size_t nargs) {
    if (x == NULL || (nargs && args == NULL)) return STROBE_EINVAL;
    if (x->err) return x->err;
    strobe__wr_event ev;
    int rc = convert(x, e, 0, &ev);
    return rc ? rc
              : failed(x, x->w->ops->slice_end(x->w, &ev, (const strobe__wr_arg *)args, nargs));
}

int strobe_writer_instant(strobe_writer *x, const strobe_writer_event *e) {
    if (x == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    strobe__wr_event ev;
    int rc = convert(x, e, 0, &ev);
    if (rc) return rc;
    /* strobe's CPU samples (a converted trace's) become the format's samples where it has them. */
    if (x->w->ops->sample && e->cat && strcmp(e->cat, STROBE_KINETO_CAT_CPU_SAMPLE) == 0)
        return failed(x, x->w->ops->sample(x->w, &ev));
    return failed(x, x->w->ops->instant(x->w, &ev));
}

int strobe_writer_counter(strobe_writer *x, const strobe_writer_event *e) {
    if (x == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    strobe__wr_event ev;
    int rc = convert(x, e, 0, &ev);
    return rc ? rc : failed(x, x->w->ops->counter(x->w, &ev));
}

int strobe_writer_set_meta(strobe_writer *x, const char *key, const char *json) {
    if (x == NULL || key == NULL || json == NULL || !strobe__json_valid(json, strlen(json)))
        return STROBE_EINVAL;
    int strobe_obj = strcmp(key, "strobe") == 0;
    int props = strcmp(key, "deviceProperties") == 0;
    if (!strobe_obj && !props && strobe__meta_key_reserved(key) == 2) return STROBE_EINVAL;
    const char *v = strobe__pool_strdup(&x->pool, json);
    if (v == NULL) return STROBE_ENOMEM;
    if (strobe_obj || props) {
        if (strobe_obj)
            x->strobe_json = v;
        else
            x->device_props = v;
        return 0;
    }
    for (size_t i = 0; i < x->meta_count; i++)
        if (strcmp(x->meta[i].key, key) == 0) {
            x->meta[i].json = v;
            return 0;
        }
    if (x->meta_count == x->meta_cap) {
        size_t cap = x->meta_cap ? 2 * x->meta_cap : 8;
        strobe__meta *m = realloc(x->meta, cap * sizeof *m);
        if (m == NULL) return STROBE_ENOMEM;
        x->meta = m;
        x->meta_cap = cap;
    }
    const char *k = strobe__pool_strdup(&x->pool, key);
    if (k == NULL) return STROBE_ENOMEM;
    x->meta[x->meta_count++] = (strobe__meta){.key = k, .json = v};
    return 0;
}

int strobe_writer_flush_interned(strobe_writer *x) {
    if (x == NULL) return STROBE_EINVAL;
    if (x->err) return x->err;
    return x->w->ops->flush_state ? failed(x, x->w->ops->flush_state(x->w)) : 0;
}

int strobe_writer_close(strobe_writer *x) {
    if (x == NULL) return 0;
    int rc = x->err;
    if (rc == 0) {
        strobe__wr_info info = {.base_ns = x->w->base_ns,
                                .trace_id = x->trace_id,
                                .device_props = x->device_props,
                                .strobe_json = x->strobe_json,
                                .meta = x->meta,
                                .meta_count = x->meta_count,
                                .trace_name = x->trace_name};
        rc = x->w->ops->end(x->w, &info);
    }
    strobe__writer_free(x->w);
    x->w = NULL;
    rc = strobe__file_finish(x->path, x->tmp, &x->sink, rc);
    x->tmp = NULL;
    int e = errno; /* the system's reason when rc is STROBE_EIO or STROBE_ESYS */
    strobe_writer_abort(x);
    errno = e;
    return rc;
}

void strobe_writer_abort(strobe_writer *x) {
    if (x == NULL) return;
    /* A caller that aborts after a failed write reports why: errno is left at its reason. */
    int e = x->sink.sys_errno ? x->sink.sys_errno : errno;
    if (x->tmp) {
        strobe__sink_close(&x->sink);
        if (x->tmp[0]) unlink(x->tmp); /* "": written in place, nothing to remove */
        free(x->tmp);
    }
    strobe__writer_free(x->w);
    free(x->meta);
    strobe__pool_release(&x->pool);
    free(x->path);
    free(x->trace_id);
    free(x->trace_name);
    free(x);
    errno = e;
}
