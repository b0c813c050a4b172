/* decode.c: the one record decoder (see decode.h).
 *
 * Contents: 1. the record sizes (which records start events), 2. per-thread state, 3. operator
 * details (shapes, FLOPs, perf counters, stacks, modules, backend events), 4. the walk. */
#include "decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "strobe/error.h"
#include "strobe/op.h"
#include "strobe/result.h"
#include "trace/kineto.h"

/* ---- 1. record sizes ----------------------------------------------------------------------- */

/* See state.h. */
size_t strobe__rec_size_any(const char *p, size_t avail, int *starts_event) {
    int starts_dummy;
    if (starts_event == NULL) starts_event = &starts_dummy;
    uint64_t w[2] = {0, 0};
    memcpy(w, p, avail >= 16 ? 16 : 8);
    size_t size = 0;
    *starts_event = 1;
    switch (STROBE__REC_KIND(w[0])) {
    case STROBE__REC_END:
        *starts_event = 0;
        size = 8;
        break;
    case STROBE__REC_TRUNC: /* becomes the "buffer full" marker */
        size = 8;
        break;
    case STROBE__REC_CORR:
        *starts_event = 0;
        size = 24;
        break;
    case STROBE__REC_BEGIN_SITE:
    case STROBE__REC_INSTANT_SITE:
        size = 16;
        break;
    case STROBE__REC_COUNTER_SITE:
        size = 24;
        break;
    case STROBE__REC_BEGIN_NAME:
    case STROBE__REC_INSTANT_NAME:
    case STROBE__REC_COUNTER_NAME: {
        if (avail < 16 || (uint32_t)w[1] > STROBE__MAX_NAME) return 0;
        size_t head = STROBE__REC_KIND(w[0]) == STROBE__REC_COUNTER_NAME ? 24 : 16;
        size = head + STROBE__NAME_PAD((uint32_t)w[1]);
        break;
    }
    case STROBE__REC_SHAPES:
        if (avail < 16 || w[1] % 8 || w[1] > avail) return 0;
        *starts_event = 0;
        size = 16 + (size_t)w[1];
        break;
    case STROBE__REC_FLOPS:
        *starts_event = 0;
        size = 16;
        break;
    case STROBE__REC_STACK:
    case STROBE__REC_PERF:
        *starts_event = 0;
        size = 8 + 8 * (size_t)(STROBE__REC_TS(w[0]) & 0xff);
        break;
    case STROBE__REC_MEM: /* a [memory] instant and two counter samples */
        *starts_event = 3;
        size = 48;
        break;
    case STROBE__REC_EXT:
        if (avail < 16) return 0;
        *starts_event = (w[1] & 0xff) == STROBE__EXT_BACKEND;
        size = 16 + (size_t)((w[1] >> 8) & 0xffffff);
        break;
    default:
        return 0;
    }
    return size <= avail ? size : 0;
}

/* ---- 2. per-thread state ------------------------------------------------------------------- */

void strobe__dec_thread_init(strobe__dec_thread *t) {
    memset(t, 0, sizeof *t);
    t->prev = INT64_MIN;
}

void strobe__dec_thread_free(strobe__dec_thread *t) {
    strobe__buf_free(&t->mods);
    strobe__buf_free(&t->mod_json);
    free(t->mod_off);
    free(t->perf);
    free(t->perf_have);
    strobe__dec_thread_init(t);
}

void strobe__decoder_free(strobe__decoder *d) {
    strobe__buf_free(&d->dims);
    strobe__buf_free(&d->types);
    strobe__buf_free(&d->concrete);
    strobe__buf_free(&d->text);
}

int64_t strobe__dec_time(const strobe__decoder *d, strobe__dec_thread *t, uint64_t raw) {
    int64_t ts = strobe__clock_to_ns(d->conv, raw);
    if (t->prev != INT64_MIN && ts <= t->prev) ts = d->strict ? t->prev + 1 : t->prev;
    t->prev = ts;
    return ts;
}

const char *strobe__dec_module_path(strobe__dec_thread *t, size_t *len) {
    if (t->mod_depth == 0) return NULL;
    if (t->mod_json.len == 0 &&
        strobe__buf_put_json_string(&t->mod_json, t->mods.s, t->mods.len) != 0) {
        t->mod_json.len = 0;
        return NULL;
    }
    *len = t->mod_json.len;
    return t->mod_json.s;
}

/* ---- 3. operator details ------------------------------------------------------------------- */

static int arg_i64(strobe__decoder *d, const char *key, int64_t v, int replace) {
    char num[32];
    int n = snprintf(num, sizeof num, "%lld", (long long)v);
    return d->ops->arg(d->ctx, key, num, (size_t)n, replace);
}

static int on_shapes(strobe__decoder *d, strobe__dec_thread *t, const char *top, size_t depth,
                     const uint64_t *w) {
    const strobe_config *cfg = &d->s->cfg;
    uint32_t count = (uint32_t)(STROBE__REC_TS(w[0]) & 0xff);
    if (count > STROBE_MAX_INPUTS) return 0;
    int rc = strobe__format_inputs(w + 2, (size_t)w[1], count, d->inputs, d->dims_store,
                                   d->dtype_store, &d->dims, &d->types, &d->concrete);
    if (rc == STROBE_EFORMAT) return 0; /* unreadable: skipped like any unreadable record */
    if (rc) return rc;
    if (cfg->record_shapes) {
        rc = d->ops->arg(d->ctx, STROBE_KINETO_ARG_INPUT_DIMS, d->dims.s, d->dims.len, 1);
        if (rc == 0)
            rc = d->ops->arg(d->ctx, STROBE_KINETO_ARG_INPUT_TYPE, d->types.s, d->types.len, 1);
        if (rc == 0)
            rc = d->ops->arg(d->ctx, STROBE_KINETO_ARG_CONCRETE_INPUTS, d->concrete.s,
                             d->concrete.len, 1);
    }
    if (rc == 0 && cfg->with_flops && t->noflops_depth != depth) {
        /* Computed FLOPs never replace a count the program gave, nor a range that was said to
         * have none. */
        int64_t f = strobe_flops_from_inputs(top, d->inputs, (int)count);
        if (f >= 0) rc = arg_i64(d, "flops", f, 0);
    }
    return rc;
}

/* Counters are read at a range's begin and at its end; the end gives the deltas as args. */
static int on_perf(strobe__decoder *d, strobe__dec_thread *t, size_t depth, const uint64_t *w) {
    uint32_t n = (uint32_t)(STROBE__REC_TS(w[0]) & 0xff);
    int at_end = (int)((STROBE__REC_TS(w[0]) >> 8) & 1u);
    const strobe__perf_set *set = &d->s->perf;
    if (n > STROBE__PERF_MAX || n > (uint32_t)set->n || depth == 0) return 0;
    size_t slot = depth - 1;
    if (!at_end) {
        if (strobe__grow((void **)&t->perf_have, &t->perf_cap, slot + 1, 1)) return STROBE_ENOMEM;
        uint64_t *p = realloc(t->perf, t->perf_cap * STROBE__PERF_MAX * sizeof *p);
        if (p == NULL) return STROBE_ENOMEM;
        t->perf = p;
        memcpy(t->perf + slot * STROBE__PERF_MAX, w + 1, 8u * n);
        t->perf_have[slot] = 1;
        return 0;
    }
    if (slot >= t->perf_cap || !t->perf_have[slot]) return 0;
    t->perf_have[slot] = 0;
    const uint64_t *begin = t->perf + slot * STROBE__PERF_MAX;
    for (uint32_t i = 0; i < n; i++) {
        /* A failed read gives zeros: never report a negative count. */
        uint64_t delta = w[1 + i] >= begin[i] ? w[1 + i] - begin[i] : 0;
        int rc = arg_i64(d, set->ev[i].name, (int64_t)delta, 1);
        if (rc) return rc;
    }
    return 0;
}

static int on_ext(strobe__decoder *d, strobe__dec_thread *t, const uint64_t *w) {
    unsigned sub = (unsigned)(w[1] & 0xff);
    size_t len = (size_t)(w[1] >> 32);
    const char *bytes = (const char *)(w + 2);
    if (sub == STROBE__EXT_MODULE_PUSH) {
        if (strobe__grow((void **)&t->mod_off, &t->mod_cap, t->mod_depth + 1, sizeof *t->mod_off))
            return STROBE_ENOMEM;
        t->mod_off[t->mod_depth++] = (uint32_t)t->mods.len;
        t->mod_json.len = 0;
        int rc = t->mods.len ? strobe__buf_put(&t->mods, ".", 1) : 0;
        return rc ? rc : strobe__buf_put(&t->mods, bytes, len);
    }
    if (sub == STROBE__EXT_MODULE_POP) {
        if (t->mod_depth == 0) {
            d->unmatched_module_pops++;
        } else {
            t->mods.len = t->mod_off[--t->mod_depth];
            t->mod_json.len = 0;
        }
        return 0;
    }
    if (sub == STROBE__EXT_ARGS) {
        t->pend_args = len ? bytes : NULL;
        t->pend_args_len = len;
        return 0;
    }
    if (sub == STROBE__EXT_ARG) {
        /* An arg of the innermost open range (strobe_range_arg()): "key\0json". */
        const char *nul = memchr(bytes, '\0', len);
        size_t depth = 0;
        if (nul == NULL || nul == bytes || (size_t)(nul - bytes) + 1 >= len) return 0;
        if (d->ops->top(d->ctx, &depth) == NULL) {
            d->orphan_details++;
            return 0;
        }
        size_t jl = len - (size_t)(nul - bytes) - 1;
        char json[STROBE__MAX_ARG_JSON + 1];
        if (jl > STROBE__MAX_ARG_JSON) return 0;
        memcpy(json, nul + 1, jl);
        json[jl] = '\0';
        return d->ops->arg(d->ctx, bytes, json, jl, 1 | STROBE__DEC_ARG_KEY_TRANSIENT);
    }
    if (sub == STROBE__EXT_TORCH) {
        if (len == 32) {
            t->pend_torch = 1;
            memcpy(t->torch_ids, w + 2, sizeof t->torch_ids);
            t->torch_tid = w[5];
        }
        return 0;
    }
    if (sub == STROBE__EXT_PAYLOAD) {
        if (len == 16) {
            t->pend_ptype = (int)(uint32_t)w[2];
            t->pend_pbits = w[3];
        }
        return 0;
    }
    if (sub != STROBE__EXT_BACKEND || len < 32) return 0;
    size_t nl = (size_t)(uint32_t)w[5], bl = (size_t)(w[5] >> 32);
    if (32 + nl + bl > len) return 0;
    strobe__dec_backend b = {(int64_t)w[2],
                             (int64_t)w[3],
                             (int64_t)w[4],
                             (const char *)(w + 6),
                             (const char *)(w + 6) + nl,
                             nl,
                             bl};
    return d->ops->backend(d->ctx, &b);
}

static int on_memory(strobe__decoder *d, const uint64_t *w, int64_t ts, const uint64_t *pcs,
                     uint32_t npcs) {
    strobe__dec_memory m;
    m.pcs = pcs;
    m.npcs = npcs;
    int32_t dev = (int32_t)(uint32_t)w[5];
    int type = (int)((uint32_t)dev >> 16);
    m.ts = ts;
    m.index = (int)(int16_t)(dev & 0xffff);
    m.c10_type = strobe__c10_device_type(type);
    m.addr = w[1];
    m.bytes = (int64_t)w[2];
    m.total_allocated = (int64_t)w[3];
    m.total_reserved = (int64_t)w[4];
    uint32_t wbits = (uint32_t)(w[5] >> STROBE__MEM_WEIGHT_SHIFT);
    float wf;
    memcpy(&wf, &wbits, sizeof wf);
    m.weight = wbits ? (double)wf : 0;
    for (int k = 0; k < 2; k++) {
        if (type == STROBE_DEVICE_CPU) {
            snprintf(m.counter[k], sizeof m.counter[k], "%s bytes (cpu)",
                     k ? "reserved" : "allocated");
        } else {
            snprintf(m.counter[k], sizeof m.counter[k], "%s bytes (%s:%d)",
                     k ? "reserved" : "allocated", strobe__device_name(type), m.index);
        }
    }
    return d->ops->memory(d->ctx, &m);
}

/* ---- 4. the walk --------------------------------------------------------------------------- */

/* Whether a record carries a time: all but correlation ids and the details after a begin. */
static int rec_timed(unsigned kind) {
    return kind != STROBE__REC_CORR && kind != STROBE__REC_SHAPES && kind != STROBE__REC_FLOPS &&
           kind != STROBE__REC_STACK && kind != STROBE__REC_PERF && kind != STROBE__REC_EXT;
}

/* A payload as one JSON value (a string for a float that JSON cannot write). */
static size_t payload_json(char *out, size_t cap, int type, uint64_t bits) {
    double dv = 0;
    float fv = 0;
    int n = 0;
    switch (type) {
    case STROBE__PAYLOAD_U64:
        n = snprintf(out, cap, "%llu", (unsigned long long)bits);
        break;
    case STROBE__PAYLOAD_I64:
        n = snprintf(out, cap, "%lld", (long long)bits);
        break;
    case STROBE__PAYLOAD_U32:
        n = snprintf(out, cap, "%u", (unsigned)(uint32_t)bits);
        break;
    case STROBE__PAYLOAD_I32:
        n = snprintf(out, cap, "%d", (int)(int32_t)(uint32_t)bits);
        break;
    case STROBE__PAYLOAD_FLOAT: {
        uint32_t b = (uint32_t)bits;
        memcpy(&fv, &b, sizeof fv);
        dv = (double)fv;
        goto real;
    }
    case STROBE__PAYLOAD_DOUBLE:
        memcpy(&dv, &bits, sizeof dv);
    real:
        if (dv != dv || dv - dv != 0) {
            n = snprintf(out, cap, "\"%s\"", dv != dv ? "nan" : dv > 0 ? "inf" : "-inf");
        } else {
            n = snprintf(out, cap, "%.*g", type == STROBE__PAYLOAD_FLOAT ? 9 : 17, dv);
        }
        break;
    default:
        return 0;
    }
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* A begin or instant's name and scope from a site or name record, and its own args: those of a
 * site that carries args (hooks.h) and a payload given just before it. */
static void named(strobe__decoder *d, strobe__dec_thread *t, strobe__dec_event *e, const char *p,
                  const uint64_t *w, int site_record, int scope) {
    e->args = d->evargs;
    e->nargs = 0;
    if (site_record) {
        const strobe_site *site = (const strobe_site *)(uintptr_t)w[1];
        e->site = site;
        e->name = site->name ? site->name : "(null)";
        size_t c = ((uintptr_t)site >> 3) & 63u;
        if (d->len_site[c] != site) {
            d->len_site[c] = site;
            d->len_val[c] = (uint32_t)strnlen(e->name, STROBE__MAX_NAME);
        }
        e->name_len = d->len_val[c];
        e->scope = STROBE__SITE_SCOPE(site->scope);
        if (site->scope & STROBE__SITE_HAS_ARGS) {
            const char *a =
                __atomic_load_n(&((const strobe__site_args *)site)->args, __ATOMIC_ACQUIRE);
            while (a && *a && e->nargs < STROBE__DEC_MAX_ARGS - 1) {
                const char *json = a + strlen(a) + 1;
                size_t len = strlen(json);
                d->evargs[e->nargs++] = (strobe__dec_arg){a, json, len, 0};
                a = json + len + 1;
            }
        }
    } else {
        e->site = NULL;
        e->name = p + 16;
        e->name_len = (uint32_t)w[1];
        e->scope = scope;
    }
    if (t->pend_ptype) {
        size_t len =
            payload_json(d->payload_json, sizeof d->payload_json, t->pend_ptype, t->pend_pbits);
        if (len)
            d->evargs[e->nargs++] = (strobe__dec_arg){STROBE__PAYLOAD_ARG, d->payload_json, len, 1};
        t->pend_ptype = 0;
    }
    /* torch's ids (torch/csrc/autograd/profiler_kineto.cpp): the record function id of every op;
     * the sequence number and forward thread id of those autograd numbers. */
    if (t->pend_torch) {
        static const char *const keys[3] = {STROBE_KINETO_ARG_RECORD_FUNCTION_ID,
                                            STROBE_KINETO_ARG_SEQUENCE_NUMBER,
                                            STROBE_KINETO_ARG_FWD_THREAD_ID};
        int64_t v[3] = {t->torch_ids[2], t->torch_ids[0], t->torch_ids[1]};
        int k = t->torch_ids[0] >= 0 ? 3 : 1;
        for (int i = 0; i < k && e->nargs < STROBE__DEC_MAX_ARGS; i++) {
            int n = snprintf(d->torch_json[i], sizeof d->torch_json[i], "%lld", (long long)v[i]);
            d->evargs[e->nargs++] = (strobe__dec_arg){keys[i], d->torch_json[i], (size_t)n, 1};
        }
        t->pend_torch = 0;
    }
    /* Copied args (an ARGS record just before the begin, in the same reserve): pairs
     * "key\0json\0"; a pair cut short ends them. */
    size_t off = 0;
    while (t->pend_args && off < t->pend_args_len && e->nargs < STROBE__DEC_MAX_ARGS) {
        const char *key = t->pend_args + off;
        size_t kl = strnlen(key, t->pend_args_len - off);
        if (kl == 0 || off + kl + 1 >= t->pend_args_len) break;
        const char *json = key + kl + 1;
        size_t jl = strnlen(json, t->pend_args_len - off - kl - 1);
        if (jl == 0 || off + kl + 1 + jl >= t->pend_args_len) break;
        d->evargs[e->nargs++] = (strobe__dec_arg){key, json, jl, 1};
        off += kl + 1 + jl + 1;
    }
    t->pend_args = NULL;
}

int strobe__decode(strobe__decoder *d, strobe__dec_thread *t, const char *p, size_t used) {
    const strobe__dec_ops *ops = d->ops;
    const char *end = p + used;
    int rc = 0;
    while (p < end && rc == 0) {
        size_t size = strobe__rec_size(p, (size_t)(end - p), NULL);
        if (size == 0) break;
        const uint64_t *w = (const uint64_t *)p;
        unsigned kind = STROBE__REC_KIND(w[0]);
        int64_t ts = 0;
        /* Collection also takes the time of an EXT record (as its step pass does); the stream
         * never did. */
        if (rec_timed(kind) || (kind == STROBE__REC_EXT && !d->strict)) {
            ts = strobe__dec_time(d, t, STROBE__REC_TS(w[0]));
            if (ops->time) rc = ops->time(d->ctx, ts);
            if (rc) break;
        }
        strobe__dec_event e;
        switch (kind) {
        case STROBE__REC_END:
            rc = ops->end(d->ctx, ts);
            break;
        case STROBE__REC_BEGIN_SITE:
        case STROBE__REC_BEGIN_NAME: {
            named(d, t, &e, p, w, kind == STROBE__REC_BEGIN_SITE, (int)(w[1] >> 32));
            e.ts = ts;
            e.ext = t->pend_ext;
            e.user = t->pend_user;
            t->pend_ext = t->pend_user = 0;
            t->noflops_depth = 0;
            rc = ops->begin(d->ctx, &e);
            /* A new range forgets the counters read at the begin of the last one at its depth. */
            size_t depth = 0;
            if (rc == 0 && t->perf_cap && ops->top(d->ctx, &depth) && depth <= t->perf_cap &&
                depth > 0)
                t->perf_have[depth - 1] = 0;
            if (rc == 0 && d->s->cfg.with_modules && t->mod_depth) {
                size_t len = 0;
                const char *path = strobe__dec_module_path(t, &len);
                rc = path ? ops->arg(d->ctx, STROBE_KINETO_ARG_MODULE_HIERARCHY, path, len, 0)
                          : STROBE_ENOMEM;
            }
            break;
        }
        case STROBE__REC_INSTANT_SITE:
        case STROBE__REC_INSTANT_NAME:
            named(d, t, &e, p, w, kind == STROBE__REC_INSTANT_SITE, STROBE_RECORD_SCOPE_USER_SCOPE);
            e.ts = ts;
            e.ext = t->pend_ext;
            e.user = t->pend_user;
            t->pend_ext = t->pend_user = 0;
            rc = ops->instant(d->ctx, &e);
            break;
        case STROBE__REC_COUNTER_SITE:
        case STROBE__REC_COUNTER_NAME: {
            double v;
            memcpy(&v, &w[2], sizeof v);
            if (kind == STROBE__REC_COUNTER_SITE) {
                const strobe_site *site = (const strobe_site *)(uintptr_t)w[1];
                const char *name = site->name ? site->name : "(null)";
                rc = ops->counter(d->ctx, ts, site, name, strnlen(name, STROBE__MAX_NAME), v);
            } else {
                rc = ops->counter(d->ctx, ts, NULL, p + 24, (uint32_t)w[1], v);
            }
            break;
        }
        case STROBE__REC_CORR:
            t->pend_ext = w[1];
            t->pend_user = w[2];
            break;
        case STROBE__REC_TRUNC:
            rc = ops->truncated(d->ctx, ts);
            break;
        case STROBE__REC_MEM: {
            /* Its own call stack follows in the same reserve when the record says so. */
            const uint64_t *pcs = NULL;
            uint32_t npcs = 0;
            if ((w[5] & STROBE__MEM_STACK) && (size_t)(end - p) > size) {
                const char *q = p + size;
                size_t qs = strobe__rec_size(q, (size_t)(end - q), NULL);
                const uint64_t *sw = (const uint64_t *)q;
                if (qs && STROBE__REC_KIND(sw[0]) == STROBE__REC_STACK) {
                    pcs = sw + 1;
                    npcs = (uint32_t)(STROBE__REC_TS(sw[0]) & 0xff);
                    size += qs;
                }
            }
            rc = on_memory(d, w, ts, pcs, npcs);
            break;
        }
        case STROBE__REC_SHAPES:
        case STROBE__REC_FLOPS:
        case STROBE__REC_STACK:
        case STROBE__REC_PERF: {
            /* Details of the innermost open range. */
            size_t depth = 0;
            const char *top = ops->top(d->ctx, &depth);
            if (top == NULL) {
                d->orphan_details++;
            } else if (kind == STROBE__REC_SHAPES) {
                rc = on_shapes(d, t, top, depth, w);
            } else if (kind == STROBE__REC_FLOPS) {
                /* A negative count: the range has none (the torch observer says so of the ops
                 * torch does not count), and none is computed from its inputs. */
                if ((int64_t)w[1] < 0) {
                    t->noflops_depth = depth;
                } else if (d->s->cfg.with_flops) {
                    rc = arg_i64(d, "flops", (int64_t)w[1], 1);
                }
            } else if (kind == STROBE__REC_STACK) {
                uint32_t n = (uint32_t)(STROBE__REC_TS(w[0]) & 0xff);
                if (n) rc = ops->stack(d->ctx, w + 1, n);
            } else {
                rc = on_perf(d, t, depth, w);
            }
            break;
        }
        case STROBE__REC_EXT:
            rc = on_ext(d, t, w);
            break;
        default: /* strobe__rec_size() accepted no other kind */
            break;
        }
        p += size;
    }
    return rc;
}
