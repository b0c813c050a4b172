/* pprof.c: pprof's profile format (see pprof.h).
 *
 * Contents: protobuf encoding, frames (locations, functions, mappings), the profile, gzip.
 *
 * Field numbers are those of github.com/google/pprof's proto/profile.proto: Profile (sample_type
 * 1, sample 2, mapping 3, location 4, function 5, string_table 6, time_nanos 9, duration_nanos
 * 10, period_type 11, period 12, comment 13, default_sample_type 14), ValueType (type 1, unit
 * 2), Sample (location_id 1, value 2, both packed), Mapping (id 1, filename 5, has_functions 7,
 * has_filenames 8, has_line_numbers 9), Location (id 1, mapping_id 2, line 4), Line (function_id
 * 1, line 2), Function (id 1, name 2, system_name 3, filename 4). */
#include "pprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "strobe/error.h"

/* ---- protobuf encoding --------------------------------------------------------------------- */

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static int pb_reserve(cli_pb *b, size_t more) {
    if (b->oom) return -1;
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (q == NULL) {
        b->oom = 1;
        return -1;
    }
    b->p = q;
    b->cap = cap;
    return 0;
}

static void pb_varint(cli_pb *b, uint64_t v) {
    if (pb_reserve(b, 10)) return;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        b->p[b->n++] = (uint8_t)(byte | (v ? 0x80 : 0));
    } while (v);
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

/* A varint field; 0, proto3's default, is left out. Negative int64 values take ten bytes, as
 * protobuf writes them. */
static void pb_uint(cli_pb *b, uint32_t field, uint64_t v) {
    if (v == 0) return;
    pb_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
    pb_varint(b, v);
}

/* A length-delimited field (a string or a message), written even when empty: the string table's
 * first entry is "". */
static void pb_bytes(cli_pb *b, uint32_t field, const void *s, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | WIRE_LEN);
    pb_varint(b, n);
    if (n == 0 || pb_reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* A packed repeated varint field. */
static void pb_packed(cli_pb *b, uint32_t field, const uint64_t *v, size_t n) {
    if (n == 0) return;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += varint_len(v[i]);
    pb_varint(b, (uint64_t)field << 3 | WIRE_LEN);
    pb_varint(b, len);
    for (size_t i = 0; i < n; i++)
        pb_varint(b, v[i]);
}

/* Puts the message in `m` as field `field` of `b`, and empties m for the next one. */
static void pb_message(cli_pb *b, uint32_t field, cli_pb *m) {
    if (m->oom) b->oom = 1;
    pb_bytes(b, field, m->p, m->n);
    m->n = 0;
}

/* ---- frames -------------------------------------------------------------------------------- */

static int64_t str_id(cli_pprof *p, const char *s, size_t n) {
    if (p->err) return 0;
    int64_t id = strobe__strtab_intern(&p->strs, s, n);
    if (id < 0) {
        p->err = STROBE_ENOMEM;
        return 0;
    }
    return id;
}

/* The id of function (name, file), made when new (with system_name). @return it, or 0 when out of
 * memory. */
static uint64_t function_id(cli_pprof *p, int64_t name, int64_t system_name, int64_t file) {
    int fresh;
    uint64_t *v = strobe__u64map_put(&p->fn_ids, (uint64_t)name << 32 | (uint64_t)file, &fresh);
    if (v == NULL) return 0;
    if (!fresh) return *v;
    if (p->nfn == p->fn_cap) {
        size_t cap = p->fn_cap ? p->fn_cap * 2 : 256;
        cli_pprof_fn *q = realloc(p->fns, cap * sizeof *q);
        if (q == NULL) return 0;
        p->fns = q;
        p->fn_cap = cap;
    }
    p->fns[p->nfn] = (cli_pprof_fn){name, system_name, file};
    *v = ++p->nfn;
    return *v;
}

/* 1 when the file of a native frame, s[0..n), is a module (a shared object, or a program: no '.'
 * in its last component) rather than a source file. */
static int is_module(const char *s, size_t n) {
    size_t base = n;
    while (base > 0 && s[base - 1] != '/')
        base--;
    int dot = 0;
    for (size_t k = base; k < n; k++) {
        if (s[k] != '.') continue;
        dot = 1;
        if (k + 3 <= n && memcmp(s + k, ".so", 3) == 0 && (k + 3 == n || s[k + 3] == '.')) return 1;
    }
    return !dot;
}

/* Splits frame s[0..n) into function, file, line and module (see pprof.h): lengths 0 where it
 * has none. */
typedef struct frame_parts {
    const char *fn, *file, *module;
    size_t fn_n, file_n, module_n;
    int64_t line;
} frame_parts;

static frame_parts parse_frame(const char *s, size_t n) {
    frame_parts f = {s, "", "", n, 0, 0, 0};
    /* Python: "file.py(12): fn" */
    const char *colon = NULL;
    for (size_t k = 0; k + 2 < n; k++)
        if (s[k] == ')' && s[k + 1] == ':' && s[k + 2] == ' ') {
            colon = s + k;
            break;
        }
    if (colon != NULL) {
        const char *d = colon;
        int64_t line = 0, mul = 1;
        while (d > s && d[-1] >= '0' && d[-1] <= '9' && mul <= 1000000000) {
            line += (d[-1] - '0') * mul;
            mul *= 10;
            d--;
        }
        if (d < colon && d > s + 1 && d[-1] == '(') {
            f.file = s;
            f.file_n = (size_t)(d - 1 - s);
            f.line = line;
            f.fn = colon + 3;
            f.fn_n = n - (size_t)(colon + 3 - s);
            return f;
        }
    }
    /* Native: "fn (file)", the last " (" whose ')' ends the frame. */
    if (n >= 4 && s[n - 1] == ')') {
        for (size_t k = n - 2; k-- > 1;) {
            if (s[k] != '(' || s[k - 1] != ' ') continue;
            const char *in = s + k + 1;
            size_t in_n = n - 2 - k;
            if (in_n == 0) break;
            f.fn_n = k - 1;
            /* "file:line", as allocation sites name their frames */
            size_t d = in_n;
            while (d > 0 && in[d - 1] >= '0' && in[d - 1] <= '9')
                d--;
            if (d > 1 && d < in_n && in_n - d <= 9 && in[d - 1] == ':') {
                for (size_t j = d; j < in_n; j++)
                    f.line = f.line * 10 + (in[j] - '0');
                in_n = d - 1;
            }
            if (f.line == 0 && is_module(in, in_n)) {
                f.module = in;
                f.module_n = in_n;
            } else {
                f.file = in;
                f.file_n = in_n;
            }
            return f;
        }
    }
    return f;
}

uint64_t cli_pprof_frame(cli_pprof *p, const char *s, size_t n) {
    if (p->err) return 0;
    size_t before = p->frames.count;
    int64_t id = strobe__strtab_intern(&p->frames, s, n);
    if (id < 0) goto oom;
    if (p->frames.count == before) return (uint64_t)id + 1;
    if ((size_t)id >= p->loc_cap) {
        size_t cap = p->loc_cap ? p->loc_cap * 2 : 1024;
        cli_pprof_loc *q = realloc(p->locs, cap * sizeof *q);
        if (q == NULL) goto oom;
        p->locs = q;
        p->loc_cap = cap;
    }
    frame_parts f = parse_frame(s, n);
    int64_t name = str_id(p, f.fn, f.fn_n), file = str_id(p, f.file, f.file_n);
    int64_t system_name = name;
    if (f.file_n) {
        /* "fn (file)": the function whatever the line, and not its name alone (see pprof.h) */
        size_t len = f.fn_n + f.file_n + 3;
        char *full = malloc(len + 1);
        if (full == NULL) goto oom;
        snprintf(full, len + 1, "%.*s (%.*s)", (int)f.fn_n, f.fn, (int)f.file_n, f.file);
        system_name = str_id(p, full, len);
        free(full);
    } else if (f.fn_n != n) {
        system_name = str_id(p, s, n);
    }
    uint64_t mapping = 1;
    if (f.module_n) {
        int64_t mod = strobe__strtab_intern(&p->modules, f.module, f.module_n);
        if (mod < 0) goto oom;
        mapping = (uint64_t)mod + 2;
    }
    uint64_t fn = p->err ? 0 : function_id(p, name, system_name, file);
    if (fn == 0) goto oom;
    if (f.file_n) p->has_files = 1;
    if (f.line) p->has_lines = 1;
    p->locs[id] = (cli_pprof_loc){fn, mapping, f.line};
    return (uint64_t)id + 1;
oom:
    p->err = STROBE_ENOMEM;
    return 0;
}

/* ---- the profile --------------------------------------------------------------------------- */

int cli_pprof_init(cli_pprof *p, const char *main_mapping) {
    memset(p, 0, sizeof *p);
    strobe__strtab_init(&p->strs, &p->pool);
    strobe__strtab_init(&p->frames, &p->pool);
    strobe__strtab_init(&p->modules, &p->pool);
    str_id(p, "", 0);
    p->main_mapping = str_id(p, main_mapping, strlen(main_mapping));
    return p->err;
}

void cli_pprof_free(cli_pprof *p) {
    strobe__strtab_release(&p->strs);
    strobe__strtab_release(&p->frames);
    strobe__strtab_release(&p->modules);
    strobe__pool_release(&p->pool);
    strobe__u64map_free(&p->fn_ids);
    free(p->locs);
    free(p->fns);
    free(p->samples.p);
    free(p->msg.p);
    free(p->sub.p);
    free(p->scratch);
    memset(p, 0, sizeof *p);
}

void cli_pprof_sample_type(cli_pprof *p, const char *type, const char *unit) {
    if (p->ntypes == CLI_PPROF_MAX_TYPES) return;
    p->types[p->ntypes][0] = str_id(p, type, strlen(type));
    p->types[p->ntypes][1] = str_id(p, unit, strlen(unit));
    p->ntypes++;
}

void cli_pprof_period(cli_pprof *p, const char *type, const char *unit, int64_t period) {
    p->period_type[0] = str_id(p, type, strlen(type));
    p->period_type[1] = str_id(p, unit, strlen(unit));
    p->period = period;
}

void cli_pprof_default_type(cli_pprof *p, const char *type) {
    p->default_type = str_id(p, type, strlen(type));
}

void cli_pprof_times(cli_pprof *p, int64_t time_nanos, int64_t duration_nanos) {
    p->time_nanos = time_nanos;
    p->duration_nanos = duration_nanos;
}

void cli_pprof_comment(cli_pprof *p, const char *text) {
    if (p->ncomments < sizeof p->comments / sizeof p->comments[0])
        p->comments[p->ncomments++] = str_id(p, text, strlen(text));
}

/* p->scratch holding at least n values. */
static uint64_t *scratch(cli_pprof *p, size_t n) {
    if (n <= p->scratch_cap) return p->scratch;
    size_t cap = p->scratch_cap ? p->scratch_cap : 64;
    while (cap < n)
        cap *= 2;
    uint64_t *q = realloc(p->scratch, cap * sizeof *q);
    if (q == NULL) {
        p->err = STROBE_ENOMEM;
        return NULL;
    }
    p->scratch = q;
    p->scratch_cap = cap;
    return q;
}

void cli_pprof_sample(cli_pprof *p, const uint64_t *locs, size_t nlocs, const int64_t *values) {
    uint64_t *v = scratch(p, p->ntypes);
    if (p->err || v == NULL) return;
    for (size_t k = 0; k < p->ntypes; k++)
        v[k] = (uint64_t)values[k];
    pb_packed(&p->msg, 1, locs, nlocs);
    pb_packed(&p->msg, 2, v, p->ntypes);
    pb_message(&p->samples, 2, &p->msg);
}

static void value_type(cli_pb *b, uint32_t field, cli_pb *m, const int64_t tu[2]) {
    pb_uint(m, 1, (uint64_t)tu[0]);
    pb_uint(m, 2, (uint64_t)tu[1]);
    pb_message(b, field, m);
}

/* Encodes everything but the samples (already encoded) into `b`. */
static void encode_rest(cli_pprof *p, cli_pb *b) {
    cli_pb *m = &p->msg, *sub = &p->sub;
    for (size_t k = 0; k < p->ntypes; k++)
        value_type(b, 1, m, p->types[k]);
    /* Mapping 1, then one per module. Their addresses are unknown (0): the locations carry
     * their functions, so pprof has nothing to symbolize. */
    for (size_t k = 0; k < p->modules.count + 1; k++) {
        int64_t file =
            k == 0 ? p->main_mapping : str_id(p, p->modules.strs[k - 1], p->modules.lens[k - 1]);
        pb_uint(m, 1, k + 1);
        pb_uint(m, 5, (uint64_t)file);
        pb_uint(m, 7, 1);
        pb_uint(m, 8, (uint64_t)p->has_files);
        pb_uint(m, 9, (uint64_t)p->has_lines);
        pb_message(b, 3, m);
    }
    for (size_t k = 0; k < p->frames.count; k++) {
        const cli_pprof_loc *l = &p->locs[k];
        pb_uint(m, 1, k + 1);
        pb_uint(m, 2, l->mapping);
        pb_uint(sub, 1, l->function);
        pb_uint(sub, 2, (uint64_t)l->line);
        pb_message(m, 4, sub);
        pb_message(b, 4, m);
    }
    for (size_t k = 0; k < p->nfn; k++) {
        pb_uint(m, 1, k + 1);
        pb_uint(m, 2, (uint64_t)p->fns[k].name);
        pb_uint(m, 3, (uint64_t)p->fns[k].system_name);
        pb_uint(m, 4, (uint64_t)p->fns[k].file);
        pb_message(b, 5, m);
    }
    pb_uint(b, 9, (uint64_t)p->time_nanos);
    pb_uint(b, 10, (uint64_t)p->duration_nanos);
    if (p->period_type[0] || p->period_type[1]) value_type(b, 11, m, p->period_type);
    pb_uint(b, 12, (uint64_t)p->period);
    for (size_t k = 0; k < p->ncomments; k++)
        pb_uint(b, 13, (uint64_t)p->comments[k]);
    pb_uint(b, 14, (uint64_t)p->default_type);
    /* The string table last: the mappings above may add to it. */
    for (size_t k = 0; k < p->strs.count; k++)
        pb_bytes(b, 6, p->strs.strs[k], p->strs.lens[k]);
}

/* ---- gzip ---------------------------------------------------------------------------------- */

/* Deflates `n` bytes (flush: the last) through z into `out`. @return 0, STROBE_ENOMEM or
 * STROBE_EIO (*err_no set). */
static int gz_put(z_stream *z, const uint8_t *s, size_t n, int flush, FILE *out, int *err_no) {
    unsigned char buf[1 << 16];
    z->next_in = (Bytef *)(uintptr_t)s;
    z->avail_in = (uInt)n;
    int zr;
    do {
        z->next_out = buf;
        z->avail_out = sizeof buf;
        zr = deflate(z, flush ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_ERROR) return STROBE_ENOMEM;
        size_t have = sizeof buf - z->avail_out;
        if (have && fwrite(buf, 1, have, out) != have) {
            *err_no = errno ? errno : EIO;
            return STROBE_EIO;
        }
    } while (z->avail_out == 0 || (flush && zr != Z_STREAM_END));
    return 0;
}

int cli_pprof_write(cli_pprof *p, FILE *out, int *err_no) {
    cli_pb rest = {0};
    encode_rest(p, &rest);
    if (p->err || rest.oom || p->samples.oom || p->msg.oom || p->sub.oom) {
        free(rest.p);
        return STROBE_ENOMEM;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 15 + 16: a gzip header and trailer, as pprof expects of a .pb.gz */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        free(rest.p);
        return STROBE_ENOMEM;
    }
    errno = 0;
    /* Fed in pieces below 4 GiB, as zlib counts its input in an unsigned int. */
    int err = 0;
    for (size_t at = 0; !err && at < p->samples.n;) {
        size_t n = p->samples.n - at < (1u << 30) ? p->samples.n - at : 1u << 30;
        err = gz_put(&z, p->samples.p + at, n, 0, out, err_no);
        at += n;
    }
    for (size_t at = 0; !err;) {
        size_t n = rest.n - at < (1u << 30) ? rest.n - at : 1u << 30;
        int last = at + n == rest.n;
        err = gz_put(&z, rest.p + at, n, last, out, err_no);
        at += n;
        if (last) break;
    }
    deflateEnd(&z);
    free(rest.p);
    return err;
}
