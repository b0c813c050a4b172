/* trace_reader.c: the Kineto trace reader on top of the JSON tokenizer (see trace_reader.h).
 *
 * Contents (exact decimal parsing and the lookups over raw JSON text are in rd_value.c):
 *   2. The reader object: open, close, errors.
 *   3. Top-level members (metadata) and the base-time look-ahead.
 *   4. Events, and those of a Perfetto trace from the fields its decoder gives.
 *   5. strobe_rd_next(): the top-level state machine.
 */
#include "trace_reader.h"
#include "profile_rd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_pull.h"
#include "pftrace_dec.h"
#include "reader_util.h"

/* ---- 2. The reader object ----------------------------------------------------------------- */

enum { M_START, M_TOP, M_EVENTS, M_DONE };
enum { ABS_UNKNOWN, ABS_BASE, ABS_TS };

struct strobe_rd {
    strobe_jp jp;
    strobe_rd_pfs *pfs; /* a Perfetto trace's decoder, the tokenizer's source; NULL for JSON */
    strobe_jp ejp;      /* a tokenizer over one element of a Perfetto trace, when it is read as
                           JSON (pf_event_text) */
    strobe_jp *tj;      /* the tokenizer that events are read with: &jp, or &ejp */
    gzFile gz;
    char *name; /* path, or a name for memory input, used in messages */
    int fd;     /* standard input's temporary file, for the look-ahead; -1: none */
    const void *mem;
    size_t mem_len;
    int is_mem;
    strobe_rd_options opt;
    int mode, seen_events, abs_mode;
    int gz_checked; /* check_gz_tail() ran since the last (re)start */
    int err;
    int64_t err_off;
    char errmsg[640];
    strobe_rd_info info;
    char *display_time_unit, *trace_name, *device_properties; /* owned copies behind info */
    strobe_rd_event ev;
    strobe_rd_meta meta;
    strobe_rd_value arg_values[STROBE_RD_ARG_KEYS]; /* options.arg_keys of the current event */
    int64_t arg_start[STROBE_RD_ARG_KEYS], arg_end[STROBE_RD_ARG_KEYS]; /* stream offsets */
    size_t arg_klen[STROBE_RD_ARG_KEYS];
    strobe__rd_prof *prof; /* CPU profiles' samples waiting to be handed out (profile_rd.h) */
    char *arena;           /* decoded strings of the current item */
    size_t arena_len, arena_cap;
};

void strobe_rd_options_init(strobe_rd_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->max_depth = 512;
    opt->max_string = (size_t)64 << 20;
    opt->max_value = (size_t)256 << 20;
}

/* Copies src into dst (cap bytes, NUL-terminated, truncated to fit) with control characters
 * escaped ("\n", "\t", "\r", "\e", others and DEL as "\xNN", as the CLI's cli_esc() writes
 * them): a message quotes keys and names from the file, and must stay one line that cannot drive
 * a terminal. */
static void escape_ctl(char *dst, size_t cap, const char *src) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && n + 1 < cap; p++) {
        char esc[5];
        size_t len;
        if (*p >= 0x20 && *p != 0x7f) {
            esc[0] = (char)*p;
            len = 1;
        } else if (*p == '\n' || *p == '\t' || *p == '\r' || *p == 0x1b) {
            esc[0] = '\\';
            esc[1] = *p == '\n' ? 'n' : *p == '\t' ? 't' : *p == '\r' ? 'r' : 'e';
            len = 2;
        } else {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned)*p);
            len = 4;
        }
        if (n + len >= cap) break;
        memcpy(dst + n, esc, len);
        n += len;
    }
    dst[n] = '\0';
}

static int fail(strobe_rd *r, int err, int64_t off, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail(strobe_rd *r, int err, int64_t off, const char *fmt, ...) {
    if (r->err) return r->err;
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    r->err = err;
    r->err_off = off;
    char raw[sizeof r->errmsg];
    if (off >= 0)
        snprintf(raw, sizeof raw, "%s: byte %lld: %s", r->name, (long long)off, why);
    else
        snprintf(raw, sizeof raw, "%s: %s", r->name, why);
    escape_ctl(r->errmsg, sizeof r->errmsg, raw);
    r->mode = M_DONE;
    return err;
}

/* Takes over the Perfetto decoder's error (err: its code): "Perfetto trace: byte N: reason",
 * with N, the offset in the decompressed protobuf input, as the error's offset too. */
static int fail_pf(strobe_rd *r, int err) {
    fail(r, err, -1, "Perfetto trace: %s", strobe_rd_pfs_errmsg(r->pfs));
    r->err_off = strobe_rd_pfs_error_offset(r->pfs);
    return err;
}

/* Takes over the error of the tokenizer in use. */
static int fail_jp(strobe_rd *r) {
    strobe_jp *jp = r->tj;
    int err = jp->err ? jp->err : STROBE_EFORMAT;
    if (r->pfs && strobe_rd_pfs_errmsg(r->pfs)[0]) return fail_pf(r, err);
    return fail(r, err, jp->err_off, "%s", jp->err ? jp->err_msg : "tokenizer error");
}

static strobe_rd *rd_new(const char *name, const strobe_rd_options *opt) {
    strobe_rd *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->name = strdup(name);
    if (!r->name) {
        free(r);
        return NULL;
    }
    if (opt)
        r->opt = *opt;
    else
        strobe_rd_options_init(&r->opt);
    if (!r->opt.arg_keys || r->opt.arg_key_count > STROBE_RD_ARG_KEYS) r->opt.arg_key_count = 0;
    for (size_t k = 0; k < r->opt.arg_key_count; k++)
        r->arg_klen[k] = strlen(r->opt.arg_keys[k]);
    r->err_off = -1;
    r->fd = -1;
    r->tj = &r->jp;
    return r;
}

static void apply_limits(strobe_jp *jp, const strobe_rd_options *opt) {
    jp->max_depth = opt->max_depth ? opt->max_depth : 512;
    if (jp->max_depth > STROBE_JP_DEPTH_CAP) jp->max_depth = STROBE_JP_DEPTH_CAP;
    if (opt->max_string) jp->max_string = opt->max_string;
    if (opt->max_value) jp->max_capture = opt->max_value;
}

/* The first bytes of the input, for telling formats apart by content. */
#define HEAD_BYTES 4096

/* The tokenizer's source for a Perfetto trace: the decoder's JSON text around the event array,
 * whose elements the reader takes from the decoder directly (pf_event). The tokenizer's offsets
 * are set to the piece's place in the whole text, so that they count those elements too. The cut
 * of a cut trace is known once the text ended. */
static long pf_source(void *ctx, const void **text) {
    strobe_rd *r = ctx;
    int64_t off = 0;
    long n = strobe_rd_pfs_read(r->pfs, text, &off);
    if (n > 0) r->jp.base_off = off; /* the tokenizer moved past its last piece already */
    if (n == 0 && strobe_rd_pfs_cut(r->pfs) >= 0) {
        r->info.pf_cut = 1;
        r->info.pf_cut_offset = strobe_rd_pfs_cut(r->pfs);
    }
    return n;
}

/* Reads r->pfs (just made, or NULL: out of memory) through the tokenizer, as a trace in JSON,
 * and decodes up to its first text, so that an input that is no trace fails at once.
 * @return 0, or a negative error with the reader failed. */
static int open_pftrace(strobe_rd *r) {
    if (!r->pfs || strobe_jp_init_src(&r->jp, pf_source, r))
        return fail(r, STROBE_ENOMEM, -1, "out of memory");
    apply_limits(&r->jp, &r->opt);
    strobe_rd_pfs_set_direct(r->pfs);
    r->info.perfetto = 1;
    int rc = strobe_rd_pfs_prime(r->pfs);
    return rc ? fail_pf(r, rc) : 0;
}

/* zlib's input buffer for the file at path (or, path NULL, the descriptor fd): a larger one
 * halves the read calls, and 256 KiB is where the gain flattens; a smaller file gets one of about
 * its size, as many small files are read (tests, fuzzers) and a large buffer costs a mapping. */
static unsigned gz_buffer_size(const char *path, int fd) {
    struct stat st;
    int ok = path ? stat(path, &st) == 0 : fd >= 0 && fstat(fd, &st) == 0;
    if (!ok || !S_ISREG(st.st_mode) || st.st_size >= 256 * 1024) return 256 * 1024;
    return st.st_size < 8192 ? 8192 : (unsigned)st.st_size + 1;
}

/* Standard input cannot be read twice (the format sniff, the base-time look-ahead), so it is
 * copied into a temporary file, unlinked at once, and read from there as a file would be (zlib
 * tells gzip from plain data by content). @return an open descriptor at offset 0, or -1 with
 * errno set. */
static int fd_to_temp(int src) {
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/strobe-stdin-XXXXXX", dir && dir[0] ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path);
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(src, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) goto fail;
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) goto fail;
            off += w;
        }
    }
    if (lseek(fd, 0, SEEK_SET) == 0) return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

int strobe_rd_open(strobe_rd **out, const char *path, const strobe_rd_options *opt) {
    *out = NULL;
    if (!path) return STROBE_EINVAL;
    int is_stdin = strcmp(path, "-") == 0;
    strobe_rd *r = rd_new(is_stdin ? "<stdin>" : path, opt);
    if (!r) return STROBE_ENOMEM;
    *out = r;
    strobe_jp_init_mem(&r->jp, NULL, 0); /* so that close works whatever fails below */
    errno = 0;
    /* A pipe (standard input, a FIFO, a process substitution) can be read only once, but the
     * format is told from its first bytes and the look-ahead and rewind read it again: it is
     * copied into an unlinked temporary file first. */
    struct stat st;
    int is_pipe =
        is_stdin || (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
    if (is_pipe) {
        int src = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
        int fd = src >= 0 ? fd_to_temp(src) : -1;
        int e = errno;
        if (src >= 0 && !is_stdin) close(src);
        errno = e;
        if (fd < 0 && is_stdin)
            return fail(r, STROBE_EIO, -1, "cannot read standard input: %s", strerror(errno));
        if (fd < 0) return fail(r, STROBE_EIO, -1, "cannot read: %s", strerror(errno));
        /* A second descriptor, which zlib does not close, for the look-ahead to open the file
         * again by. */
        r->fd = dup(fd);
        r->gz = r->fd >= 0 ? gzdopen(fd, "rb") : NULL;
        if (!r->gz) {
            close(fd);
            return fail(r, STROBE_EIO, -1, "cannot read: %s",
                        errno ? strerror(errno) : "out of memory in zlib");
        }
    } else {
        r->gz = gzopen(path, "rb");
        if (!r->gz)
            return fail(r, STROBE_EIO, -1, "cannot open: %s",
                        errno ? strerror(errno) : "out of memory in zlib");
    }
    gzbuffer(r->gz, gz_buffer_size(is_pipe ? NULL : path, r->fd));
    /* The format is told by content, whatever the name: JSON, or a Perfetto trace (either one
     * gzip'd, which zlib undoes). */
    unsigned char head[HEAD_BYTES];
    int n = gzread(r->gz, head, sizeof head);
    /* A read error (a folder, damaged gzip) is left for the JSON tokenizer to report, at the
     * first strobe_rd_next(), as for any input. */
    if (n > 0 && strobe_rd_pf_sniff(head, (size_t)n, (size_t)n < sizeof head)) {
        if (gzrewind(r->gz) != 0) return fail(r, STROBE_EIO, -1, "cannot rewind the input");
        /* Read as it is decoded, a packet at a time (pftrace_dec.h). */
        r->pfs = strobe_rd_pfs_open_gz(r->gz, r->opt.max_value, 1);
        return open_pftrace(r);
    }
    gzrewind(r->gz);
    if (strobe_jp_init_gz(&r->jp, r->gz)) {
        strobe_rd_close(r);
        *out = NULL;
        return STROBE_ENOMEM;
    }
    apply_limits(&r->jp, &r->opt);
    return 0;
}

int strobe_rd_is_perfetto(const char *path) {
    if (!path) return STROBE_EINVAL;
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz) return STROBE_EIO;
    unsigned char head[HEAD_BYTES];
    int n = gzread(gz, head, sizeof head);
    gzclose(gz);
    if (n < 0) return STROBE_EIO;
    return n > 0 && strobe_rd_pf_sniff(head, (size_t)n, (size_t)n < sizeof head);
}

int strobe_rd_rewind(strobe_rd *r) {
    if (!r) return STROBE_EINVAL;
    if (r->err == STROBE_ENOMEM || (!r->is_mem && !r->gz)) return r->err ? r->err : STROBE_EIO;
    strobe_jp_free(&r->jp);
    int perfetto = r->info.perfetto, cut = r->info.pf_cut;
    int64_t cut_at = r->info.pf_cut_offset;
    free(r->display_time_unit);
    free(r->trace_name);
    free(r->device_properties);
    r->display_time_unit = r->trace_name = r->device_properties = NULL;
    strobe__rd_prof_free(r->prof);
    r->prof = NULL;
    memset(&r->info, 0, sizeof r->info);
    r->info.perfetto = perfetto;
    r->info.pf_cut = cut;
    r->info.pf_cut_offset = cut_at;
    r->mode = M_START;
    r->gz_checked = 0;
    r->seen_events = 0;
    r->abs_mode = ABS_UNKNOWN;
    r->err = 0;
    r->err_off = -1;
    r->errmsg[0] = '\0';
    if (r->pfs) {
        strobe_jp_init_mem(&r->jp, NULL, 0);
        int rc = strobe_rd_pfs_rewind(r->pfs);
        if (rc) return fail_pf(r, rc);
        if (strobe_jp_init_src(&r->jp, pf_source, r))
            return fail(r, STROBE_ENOMEM, -1, "out of memory");
    } else if (r->is_mem) {
        strobe_jp_init_mem(&r->jp, r->mem, r->mem_len);
        strobe_jp_set_chunk(&r->jp, r->opt.mem_chunk);
    } else {
        strobe_jp_init_mem(&r->jp, NULL, 0);
        if (gzrewind(r->gz) != 0) return fail(r, STROBE_EIO, -1, "cannot rewind the input");
        if (strobe_jp_init_gz(&r->jp, r->gz)) return fail(r, STROBE_ENOMEM, -1, "out of memory");
    }
    apply_limits(&r->jp, &r->opt);
    return 0;
}

int strobe_rd_open_mem(strobe_rd **out, const void *data, size_t len, const char *name,
                       const strobe_rd_options *opt) {
    *out = NULL;
    strobe_rd *r = rd_new(name ? name : "<memory>", opt);
    if (!r) return STROBE_ENOMEM;
    *out = r;
    size_t n = data ? len : 0;
    /* Told by content, as strobe_rd_open() does: a Perfetto trace is decoded here. */
    if (n > 0 && strobe_rd_pf_sniff(data, n, 1)) {
        strobe_jp_init_mem(&r->jp, NULL, 0);
        r->is_mem = 1;
        r->mem = data;
        r->mem_len = n;
        r->pfs = strobe_rd_pfs_open_mem(data, n, r->opt.max_value, 1);
        /* A trace that cannot be decoded fails the first strobe_rd_next(), which says why. */
        if (open_pftrace(r) == STROBE_ENOMEM) {
            strobe_rd_close(r);
            *out = NULL;
            return STROBE_ENOMEM;
        }
        return 0;
    }
    r->is_mem = 1;
    r->mem = data;
    r->mem_len = n;
    strobe_jp_init_mem(&r->jp, data, r->mem_len);
    strobe_jp_set_chunk(&r->jp, r->opt.mem_chunk);
    apply_limits(&r->jp, &r->opt);
    return 0;
}

void strobe_rd_close(strobe_rd *r) {
    if (!r) return;
    strobe_jp_free(&r->jp);
    strobe_jp_free(&r->ejp);
    strobe_rd_pfs_close(r->pfs);
    if (r->gz) gzclose(r->gz);
    if (r->fd >= 0) close(r->fd);
    free(r->name);
    free(r->display_time_unit);
    free(r->trace_name);
    free(r->device_properties);
    free(r->arena);
    strobe__rd_prof_free(r->prof);
    free(r);
}

const strobe_rd_info *strobe_rd_get_info(const strobe_rd *r) {
    return &r->info;
}

const char *strobe_rd_errmsg(const strobe_rd *r) {
    return r && r->err ? r->errmsg : "";
}

int64_t strobe_rd_error_offset(const strobe_rd *r) {
    return r && r->err ? r->err_off : -1;
}

/* The arena holds the decoded strings of one item; offsets are kept while it may still move. */
static size_t arena_put(strobe_rd *r, const char *s, size_t n) {
    if (n + 1 > r->arena_cap - r->arena_len) {
        size_t cap = r->arena_cap ? r->arena_cap : 1024;
        while (cap - r->arena_len < n + 1) {
            if (cap > SIZE_MAX / 2) return SIZE_MAX;
            cap *= 2;
        }
        char *p = realloc(r->arena, cap);
        if (!p) return SIZE_MAX;
        r->arena = p;
        r->arena_cap = cap;
    }
    size_t off = r->arena_len;
    memcpy(r->arena + off, s, n);
    r->arena[off + n] = '\0';
    r->arena_len += n + 1;
    return off;
}

static int key_is(const strobe_jp *jp, const char *key) {
    size_t n = strlen(key);
    return jp->str_len == n && memcmp(jp->str, key, n) == 0;
}

/* ---- 3. Top-level members ------------------------------------------------------------------ */

/* Reads the value of a top-level member whose key was just returned, and fills r->meta. */
static int read_meta(strobe_rd *r, strobe_rd_item *item) {
    strobe_jp *jp = &r->jp;
    r->arena_len = 0;
    size_t koff = arena_put(r, jp->str, jp->str_len);
    if (koff == SIZE_MAX) return fail(r, STROBE_ENOMEM, -1, "out of memory");
    size_t klen = jp->str_len;
    strobe_jp_capture_begin(jp, 0);
    int tok = strobe_jp_next(jp);
    if (tok == STROBE_JP_ERROR) return fail_jp(r);
    if (tok == STROBE_JP_EOF)
        return fail(r, STROBE_EFORMAT, strobe_jp_offset(jp),
                    "unexpected end of input: member \"%.60s\" has no value", r->arena + koff);
    const char *key = r->arena + koff;
    /* Keep the decoded string of a string value before anything else uses the tokenizer. */
    char *sval = NULL;
    if (tok == STROBE_JP_STRING &&
        (strcmp(key, "traceName") == 0 || strcmp(key, "displayTimeUnit") == 0)) {
        sval = strobe__rd_dup_n(jp->str, jp->str_len);
        if (!sval) return fail(r, STROBE_ENOMEM, -1, "out of memory");
    }
    if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN) {
        int end = strobe_jp_skip_container(jp);
        if (end == STROBE_JP_ERROR || end == STROBE_JP_EOF) {
            free(sval);
            if (end == STROBE_JP_ERROR) return fail_jp(r);
            return fail(r, STROBE_EFORMAT, strobe_jp_offset(jp),
                        "unexpected end of input inside the value of \"%.60s\"", key);
        }
    }
    const char *raw;
    size_t raw_len;
    int64_t off;
    if (strobe_jp_capture_end(jp, &raw, &raw_len, &off)) {
        free(sval);
        return fail_jp(r);
    }
    strobe_rd_type type = strobe__rd_type_of(tok);
    if (strcmp(key, "schemaVersion") == 0) {
        int64_t v;
        r->info.has_schema_version =
            type == STROBE_RD_T_NUMBER && strobe__rd_exact_int(raw, raw_len, &v) == 0;
        r->info.schema_version = r->info.has_schema_version ? v : 0;
    } else if (strcmp(key, "baseTimeNanoseconds") == 0) {
        /* Every absolute time depends on it, so an unusable one is an error, not a guess. */
        int64_t v;
        if (type != STROBE_RD_T_NUMBER || strobe__rd_exact_int(raw, raw_len, &v) != 0)
            return fail(r, STROBE_EFORMAT, off, "baseTimeNanoseconds is not an integer");
        r->info.has_base_time = 1;
        r->info.base_time_ns = v;
    } else if (sval && strcmp(key, "traceName") == 0) {
        free(r->trace_name);
        r->trace_name = sval;
        r->info.trace_name.s = sval;
        r->info.trace_name.len = jp->str_len;
        sval = NULL;
    } else if (sval) {
        free(r->display_time_unit);
        r->display_time_unit = sval;
        r->info.display_time_unit.s = sval;
        r->info.display_time_unit.len = jp->str_len;
        sval = NULL;
    } else if (strcmp(key, "deviceProperties") == 0) {
        char *p = strobe__rd_dup_n(raw, raw_len);
        if (!p) return fail(r, STROBE_ENOMEM, -1, "out of memory");
        free(r->device_properties);
        r->device_properties = p;
        r->info.device_properties = p;
        r->info.device_properties_len = raw_len;
    }
    free(sval);
    r->meta.key.s = r->arena + koff;
    r->meta.key.len = klen;
    r->meta.value.type = type;
    r->meta.value.raw = raw;
    r->meta.value.len = raw_len;
    r->meta.offset = off;
    r->info.metas++;
    item->kind = STROBE_RD_META;
    item->meta = &r->meta;
    return STROBE_RD_META;
}

/* Looks ahead for a top-level baseTimeNanoseconds in a second pass over the input, skipping
 * values without decoding them. Any problem just ends the look-ahead: the main pass reports it. */
static void prescan_base(strobe_rd *r) {
    strobe_jp pj;
    gzFile g = NULL;
    if (r->is_mem) {
        strobe_jp_init_mem(&pj, r->mem, r->mem_len);
        strobe_jp_set_chunk(&pj, r->opt.mem_chunk);
    } else {
        if (r->fd >= 0) {
            /* Standard input's unlinked temporary file, opened again through /proc so that this
             * pass has a file offset of its own. */
            char self[64];
            snprintf(self, sizeof self, "/proc/self/fd/%d", r->fd);
            g = gzopen(self, "rb");
        } else {
            g = gzopen(r->name, "rb");
        }
        if (!g) return;
        gzbuffer(g, gz_buffer_size(r->fd >= 0 ? NULL : r->name, r->fd));
        if (strobe_jp_init_gz(&pj, g)) {
            strobe_jp_free(&pj);
            gzclose(g);
            return;
        }
    }
    apply_limits(&pj, &r->opt);
    pj.skip = 1;
    if (strobe_jp_next(&pj) == STROBE_JP_OBJ_BEGIN) {
        for (;;) {
            int tok = strobe_jp_next(&pj);
            if (tok == STROBE_JP_OBJ_END) {
                r->abs_mode = ABS_TS; /* the whole object was read: there is no base time */
                break;
            }
            if (tok != STROBE_JP_KEY) break;
            int is_base = key_is(&pj, "baseTimeNanoseconds");
            tok = strobe_jp_next(&pj);
            int64_t v;
            if (is_base) {
                if (tok == STROBE_JP_NUMBER && strobe__rd_exact_int(pj.num, pj.num_len, &v) == 0) {
                    r->info.has_base_time = 1;
                    r->info.base_time_ns = v;
                    r->abs_mode = ABS_BASE;
                }
                break;
            }
            if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN)
                tok = strobe_jp_skip_unchecked(&pj);
            if (tok <= STROBE_JP_EOF) break;
        }
    }
    strobe_jp_free(&pj);
    if (g) gzclose(g);
}

/* ---- 4. Events ---------------------------------------------------------------------------- */

enum { F_PH, F_NAME, F_CAT, F_BP, F_S, F_PID, F_TID, F_ID, F_TS, F_DUR, F_ARGS, F_NFIELDS };
#define F_NSTR (F_ID + 1) /* fields with a decoded string: ph .. id */

static int field_of(const strobe_jp *jp) {
    const char *k = jp->str;
    switch (jp->str_len) {
    case 1:
        return k[0] == 's' ? F_S : -1;
    case 2:
        if (memcmp(k, "ph", 2) == 0) return F_PH;
        if (memcmp(k, "ts", 2) == 0) return F_TS;
        if (memcmp(k, "id", 2) == 0) return F_ID;
        if (memcmp(k, "bp", 2) == 0) return F_BP;
        return -1;
    case 3:
        if (memcmp(k, "pid", 3) == 0) return F_PID;
        if (memcmp(k, "tid", 3) == 0) return F_TID;
        if (memcmp(k, "cat", 3) == 0) return F_CAT;
        if (memcmp(k, "dur", 3) == 0) return F_DUR;
        return -1;
    case 4:
        if (memcmp(k, "name", 4) == 0) return F_NAME;
        if (memcmp(k, "args", 4) == 0) return F_ARGS;
        return -1;
    default:
        return -1;
    }
}

static void mark(strobe_rd_event *ev, unsigned bit, const char *why) {
    if (!ev->bad_reason) ev->bad_reason = why;
    ev->bad |= bit;
}

static const unsigned field_bad[F_NFIELDS] = {
    [F_PH] = STROBE_RD_BAD_PH,    [F_NAME] = STROBE_RD_BAD_NAME, [F_CAT] = STROBE_RD_BAD_CAT,
    [F_BP] = STROBE_RD_BAD_FIELD, [F_S] = STROBE_RD_BAD_FIELD,   [F_PID] = STROBE_RD_BAD_PID,
    [F_TID] = STROBE_RD_BAD_TID,  [F_ID] = STROBE_RD_BAD_ID,     [F_TS] = STROBE_RD_BAD_TS,
    [F_DUR] = STROBE_RD_BAD_DUR,  [F_ARGS] = STROBE_RD_BAD_ARGS};
static const char *const field_why[F_NFIELDS] = {[F_PH] = "ph is not a string",
                                                 [F_NAME] = "name is not a string",
                                                 [F_CAT] = "cat is not a string",
                                                 [F_BP] = "bp is not a string",
                                                 [F_S] = "s is not a string",
                                                 [F_PID] = "pid is neither an integer nor a string",
                                                 [F_TID] = "tid is neither an integer nor a string",
                                                 [F_ID] = "id is neither an integer nor a string",
                                                 [F_TS] = "ts is not a number",
                                                 [F_DUR] = "dur is not a number",
                                                 [F_ARGS] = "args is not an object"};

static int eof_in_event(strobe_rd *r, int64_t start) {
    return fail(r, STROBE_EFORMAT, strobe_jp_offset(r->tj),
                "unexpected end of input inside the event that starts at byte %lld",
                (long long)start);
}

static int event_done(strobe_rd *r, strobe_rd_item *item);

/* Reads the args object whose '{' was just returned, as strobe_jp_skip_container() would, and
 * notes where the values of options.arg_keys are (the first of each key, as strobe_rd_obj_get()
 * finds it). @return the tokenizer's last token: OBJ_END, EOF or ERROR. */
static int scan_args(strobe_rd *r, strobe_jp *jp) {
    size_t n = r->opt.arg_key_count;
    for (size_t k = 0; k < n; k++)
        r->arg_start[k] = -1;
    int saved = jp->skip;
    jp->skip = 1;
    int tok;
    size_t found = 0;
    while ((tok = strobe_jp_next(jp)) == STROBE_JP_KEY) {
        size_t match = n;
        if (found < n) {
            for (size_t k = 0; k < n; k++) {
                if (r->arg_start[k] < 0 && jp->str_len == r->arg_klen[k] &&
                    memcmp(jp->str, r->opt.arg_keys[k], jp->str_len) == 0) {
                    match = k;
                    break;
                }
            }
        }
        tok = strobe_jp_next(jp);
        if (tok <= STROBE_JP_EOF) break;
        int64_t start = jp->tok_off;
        strobe_rd_type type = strobe__rd_type_of(tok);
        if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN) {
            tok = strobe_jp_skip_container(jp);
            if (tok <= STROBE_JP_EOF) break;
        }
        if (match < n) {
            r->arg_start[match] = start;
            r->arg_end[match] = strobe_jp_offset(jp);
            r->arg_values[match].type = type;
            found++;
        }
    }
    jp->skip = saved;
    return tok;
}

/* Reads the event object whose '{' was just returned (the capture began before it). */
static int read_event(strobe_rd *r, strobe_rd_item *item, int64_t start) {
    strobe_jp *jp = r->tj;
    strobe_rd_event *ev = &r->ev;
    memset(ev, 0, sizeof *ev);
    ev->index = r->info.events;
    ev->offset = start;
    r->arena_len = 0;
    size_t soff[F_NSTR], slen[F_NSTR] = {0}; /* arena offsets (SIZE_MAX: absent) and lengths */
    for (int i = 0; i < F_NSTR; i++)
        soff[i] = SIZE_MAX;
    strobe_rd_id *ids[F_NSTR] = {[F_PID] = &ev->pid, [F_TID] = &ev->tid, [F_ID] = &ev->id};
    unsigned seen = 0;
    int64_t args_start = -1, args_end = -1;
    for (;;) {
        int tok = strobe_jp_next(jp);
        if (tok == STROBE_JP_OBJ_END) break;
        if (tok == STROBE_JP_ERROR) return fail_jp(r);
        if (tok == STROBE_JP_EOF) return eof_in_event(r, start);
        int f = field_of(jp); /* tok is a key: the tokenizer allows nothing else here */
        if (f >= 0) {
            if (seen & (1u << f)) mark(ev, STROBE_RD_BAD_DUP_KEY, "a member is repeated");
            seen |= 1u << f;
        }
        int vt = strobe_jp_next(jp);
        if (vt == STROBE_JP_ERROR) return fail_jp(r);
        if (vt == STROBE_JP_EOF) return eof_in_event(r, start);
        int usable = 1;
        switch (f) {
        case F_PH:
        case F_NAME:
        case F_CAT:
        case F_BP:
        case F_S:
            soff[f] = SIZE_MAX;
            if (vt == STROBE_JP_STRING) {
                soff[f] = arena_put(r, jp->str, jp->str_len);
                slen[f] = jp->str_len;
                if (soff[f] == SIZE_MAX) return fail(r, STROBE_ENOMEM, -1, "out of memory");
            } else {
                usable = 0;
            }
            break;
        case F_PID:
        case F_TID:
        case F_ID: {
            strobe_rd_id *id = ids[f];
            memset(id, 0, sizeof *id);
            soff[f] = SIZE_MAX;
            if (vt == STROBE_JP_STRING) {
                id->kind = STROBE_RD_ID_STRING;
                id->has_num = strobe__rd_digits_int(jp->str, jp->str_len, &id->num);
                if (!id->has_num) id->num = 0;
                soff[f] = arena_put(r, jp->str, jp->str_len);
                slen[f] = jp->str_len;
                if (soff[f] == SIZE_MAX) return fail(r, STROBE_ENOMEM, -1, "out of memory");
            } else if (vt == STROBE_JP_NUMBER &&
                       strobe__rd_exact_int(jp->num, jp->num_len, &id->num) == 0) {
                id->kind = STROBE_RD_ID_INT;
                id->has_num = 1;
            } else {
                id->kind = STROBE_RD_ID_OTHER;
                id->num = 0;
                usable = 0;
            }
            break;
        }
        case F_TS:
        case F_DUR: {
            int64_t *dst = f == F_TS ? &ev->ts_ns : &ev->dur_ns;
            int *has = f == F_TS ? &ev->has_ts : &ev->has_dur;
            *has = 0;
            *dst = 0;
            if (vt != STROBE_JP_NUMBER) {
                usable = 0;
                break;
            }
            if (strobe__rd_decimal_scaled(jp->num, jp->num_len, 3, dst, NULL) != 0) {
                *dst = 0;
                mark(ev, f == F_TS ? STROBE_RD_BAD_TS : STROBE_RD_BAD_DUR,
                     f == F_TS ? "ts is out of range" : "dur is out of range");
                break;
            }
            *has = 1;
            break;
        }
        case F_ARGS:
            args_start = args_end = -1;
            if (vt == STROBE_JP_OBJ_BEGIN) {
                args_start = jp->tok_off;
                int end = r->opt.arg_key_count ? scan_args(r, jp) : strobe_jp_skip_container(jp);
                if (end == STROBE_JP_ERROR) return fail_jp(r);
                if (end == STROBE_JP_EOF) return eof_in_event(r, start);
                args_end = strobe_jp_offset(jp);
                vt = STROBE_JP_OBJ_END; /* consumed */
            } else {
                usable = 0;
            }
            break;
        default:
            break;
        }
        if (!usable) mark(ev, field_bad[f], field_why[f]);
        if (vt == STROBE_JP_OBJ_BEGIN || vt == STROBE_JP_ARR_BEGIN) {
            int end = strobe_jp_skip_container(jp);
            if (end == STROBE_JP_ERROR) return fail_jp(r);
            if (end == STROBE_JP_EOF) return eof_in_event(r, start);
        }
    }
    int64_t raw_off;
    if (strobe_jp_capture_end(jp, &ev->raw, &ev->raw_len, &raw_off)) return fail_jp(r);
    if (args_start >= 0) {
        ev->args = ev->raw + (args_start - raw_off);
        ev->args_len = (size_t)(args_end - args_start);
    }
    if (r->opt.arg_key_count) {
        for (size_t k = 0; k < r->opt.arg_key_count; k++) {
            strobe_rd_value *v = &r->arg_values[k];
            if (args_start < 0 || r->arg_start[k] < 0) {
                memset(v, 0, sizeof *v);
                continue;
            }
            v->raw = ev->raw + (r->arg_start[k] - raw_off);
            v->len = (size_t)(r->arg_end[k] - r->arg_start[k]);
        }
        ev->arg_values = r->arg_values;
    }
    strobe_rd_str *strs[F_NSTR] = {
        [F_PH] = &ev->ph, [F_NAME] = &ev->name,   [F_CAT] = &ev->cat,     [F_BP] = &ev->bp,
        [F_S] = &ev->s,   [F_PID] = &ev->pid.str, [F_TID] = &ev->tid.str, [F_ID] = &ev->id.str};
    for (int i = 0; i < F_NSTR; i++) {
        if (soff[i] == SIZE_MAX) continue;
        strs[i]->s = r->arena + soff[i];
        strs[i]->len = slen[i];
    }

    /* Fields a viewer needs, by phase (Trace Event Format): ph always; name except on "E"; ts
     * except on metadata; dur on complete events; pid and tid always. */
    int is_e = ev->ph.s && strcmp(ev->ph.s, "E") == 0;
    int is_m = ev->ph.s && strcmp(ev->ph.s, "M") == 0;
    int is_x = ev->ph.s && strcmp(ev->ph.s, "X") == 0;
    if (!(seen & (1u << F_PH)))
        mark(ev, STROBE_RD_BAD_PH, "missing ph");
    else if (ev->ph.s && ev->ph.len == 0)
        mark(ev, STROBE_RD_BAD_PH, "empty ph");
    if (!(seen & (1u << F_NAME)) && !is_e) mark(ev, STROBE_RD_BAD_NAME, "missing name");
    if (!(seen & (1u << F_TS)) && !is_m) mark(ev, STROBE_RD_BAD_TS, "missing ts");
    if (is_x && !(seen & (1u << F_DUR))) mark(ev, STROBE_RD_BAD_DUR, "complete event without dur");
    if (ev->has_dur && ev->dur_ns < 0) mark(ev, STROBE_RD_BAD_DUR, "negative dur");
    if (!(seen & (1u << F_PID))) mark(ev, STROBE_RD_BAD_PID, "missing pid");
    if (!(seen & (1u << F_TID)) && !is_m) mark(ev, STROBE_RD_BAD_TID, "missing tid");
    return event_done(r, item);
}

/* The absolute time of the event just read, and its count. @return STROBE_RD_EVENT. */
static int event_done(strobe_rd *r, strobe_rd_item *item) {
    strobe_rd_event *ev = &r->ev;
    if (ev->has_ts && r->abs_mode == ABS_TS) {
        ev->has_abs = 1;
        ev->abs_ts_ns = ev->ts_ns;
    } else if (ev->has_ts && r->abs_mode == ABS_BASE) {
        int64_t base = r->info.base_time_ns;
        if ((ev->ts_ns > 0 && base > INT64_MAX - ev->ts_ns) ||
            (ev->ts_ns < 0 && base < INT64_MIN - ev->ts_ns)) {
            mark(ev, STROBE_RD_BAD_TS, "ts plus baseTimeNanoseconds is out of range");
        } else {
            ev->has_abs = 1;
            ev->abs_ts_ns = base + ev->ts_ns;
        }
    }
    if (ev->bad) r->info.bad_events++;
    r->info.events++;
    item->kind = STROBE_RD_EVENT;
    item->event = ev;
    return STROBE_RD_EVENT;
}

/* An element of traceEvents that is not an object: returned as a bad event with its raw text. */
static int read_non_object(strobe_rd *r, strobe_rd_item *item, int tok) {
    strobe_jp *jp = &r->jp;
    strobe_rd_event *ev = &r->ev;
    memset(ev, 0, sizeof *ev);
    ev->index = r->info.events;
    ev->offset = jp->tok_off;
    if (tok == STROBE_JP_ARR_BEGIN) {
        int end = strobe_jp_skip_container(jp);
        if (end == STROBE_JP_ERROR) return fail_jp(r);
        if (end == STROBE_JP_EOF) return eof_in_event(r, ev->offset);
    }
    int64_t off;
    if (strobe_jp_capture_end(jp, &ev->raw, &ev->raw_len, &off)) return fail_jp(r);
    mark(ev, STROBE_RD_BAD_NOT_OBJECT, "the event is not an object");
    r->info.bad_events++;
    r->info.events++;
    item->kind = STROBE_RD_EVENT;
    item->event = ev;
    return STROBE_RD_EVENT;
}

/* An element of a Perfetto trace's event array, which the decoder wrote as JSON text (e->text),
 * read as JSON, as any element of a JSON file is: for what its fields do not say plainly (a name
 * with escapes, a value out of range) and for the limits. A tokenizer over the element alone
 * starts at the element's depth in the whole text (in traceEvents, in the top-level object), so
 * that the depth limit counts as it would there, and at its offset. */
static int pf_event_text(strobe_rd *r, strobe_rd_item *item, const strobe_rd_pf_elem *e) {
    strobe_jp *jp = &r->ejp;
    strobe_jp_free(jp);
    strobe_jp_init_mem(jp, e->text, e->len);
    apply_limits(jp, &r->opt);
    jp->base_off = e->offset;
    jp->depth = 2;
    jp->stack[0] = 1; /* level 0: the top-level object; level 1: the array (bit clear) */
    r->tj = jp;
    strobe_jp_capture_begin(jp, 1);
    int tok = strobe_jp_next(jp), rc;
    if (tok == STROBE_JP_OBJ_BEGIN)
        rc = read_event(r, item, jp->tok_off);
    else if (tok == STROBE_JP_ERROR)
        rc = fail_jp(r);
    else
        rc = fail(r, STROBE_EFORMAT, e->offset, "a Perfetto element is no JSON object");
    r->tj = &r->jp;
    if (rc > 0) r->ev.index = e->index;
    return rc;
}

/* The next element of a Perfetto trace's event array, from the fields the decoder gives: what
 * read_event() would make of its text, without reading it, when those fields say all (plain)
 * and the text is within the limits; else it is read as JSON. */
static int pf_event(strobe_rd *r, strobe_rd_item *item, const strobe_rd_pf_elem *e) {
    /* Every string in the text is shorter than the text; the depth counts the top-level object
     * and the array around the element. */
    if (!e->plain || e->len > r->jp.max_capture || e->len > r->jp.max_string ||
        (size_t)e->depth + 2 > r->jp.max_depth)
        return pf_event_text(r, item, e);
    strobe_rd_event *ev = &r->ev;
    memset(ev, 0, sizeof *ev);
    ev->index = e->index;
    ev->offset = e->offset;
    r->arena_len = 0;
    size_t name = arena_put(r, e->text + e->name_off, e->name_len), cat = SIZE_MAX;
    if (e->cat_len != SIZE_MAX) cat = arena_put(r, e->text + e->cat_off, e->cat_len);
    if (name == SIZE_MAX || (e->cat_len != SIZE_MAX && cat == SIZE_MAX))
        return fail(r, STROBE_ENOMEM, -1, "out of memory");
    switch (e->ph) {
    case 'X':
        ev->ph.s = "X";
        break;
    case 'i':
        ev->ph.s = "i";
        break;
    case 'C':
        ev->ph.s = "C";
        break;
    case 'M':
        ev->ph.s = "M";
        break;
    case 's':
        ev->ph.s = "s";
        break;
    default:
        ev->ph.s = "f";
        break;
    }
    ev->ph.len = 1;
    ev->name.s = r->arena + name;
    ev->name.len = e->name_len;
    if (cat != SIZE_MAX) {
        ev->cat.s = r->arena + cat;
        ev->cat.len = e->cat_len;
    }
    if (e->bp) ev->bp = (strobe_rd_str){e->bp, strlen(e->bp)};
    if (e->scope) ev->s = (strobe_rd_str){e->scope, strlen(e->scope)};
    ev->pid = (strobe_rd_id){.kind = STROBE_RD_ID_INT, .has_num = 1, .num = e->pid};
    ev->tid = (strobe_rd_id){.kind = STROBE_RD_ID_INT, .has_num = 1, .num = e->tid};
    if (e->ph == 's' || e->ph == 'f')
        ev->id = (strobe_rd_id){.kind = STROBE_RD_ID_INT, .has_num = 1, .num = (int64_t)e->id};
    ev->has_ts = 1;
    ev->ts_ns = e->ts_ns;
    if (e->ph == 'X') {
        ev->has_dur = 1;
        ev->dur_ns = e->dur_ns;
    }
    if (e->args_len != SIZE_MAX) {
        ev->args = e->text + e->args_off;
        ev->args_len = e->args_len;
    }
    ev->raw = e->text;
    ev->raw_len = e->len;
    return event_done(r, item);
}

/* ---- 5. The top-level state machine ------------------------------------------------------- */

/* After the top-level value: only whitespace may follow. */
static int finish(strobe_rd *r) {
    int tok = strobe_jp_next(&r->jp);
    if (tok == STROBE_JP_ERROR) return fail_jp(r);
    r->mode = M_DONE;
    return STROBE_RD_END;
}

/* At the end of a gzip'd file: whether data after its last member was dropped (gz_tail.h), into
 * r->info. A file that cannot be walked says nothing: its reading succeeded already. */
static void check_gz_tail(strobe_rd *r) {
    if (r->is_mem || !r->gz || gzdirect(r->gz)) return;
    const strobe_rd_gzsum *sum = r->pfs ? strobe_rd_pfs_gz_sum(r->pfs) : &r->jp.gz_sum;
    if (!sum->eof || r->info.pf_cut) return;
    int fd = r->fd >= 0 ? r->fd : open(r->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    strobe_rd_gz_trailing t;
    if (strobe_rd_gz_tail(fd, sum, &t) == 0 && t.bytes > 0) {
        r->info.gz_trailing_bytes = t.bytes;
        r->info.gz_trailing_offset = t.offset;
        r->info.gz_trailing_zeros = t.zeros;
    }
    if (fd != r->fd) close(fd);
}

static int next_item(strobe_rd *r, strobe_rd_item *item);

/* The next sample of a CPU profile read before (profile_rd.h), read from its JSON text as an
 * element of the file. @return STROBE_RD_EVENT, 0 when none is pending, or an error. */
static int profile_sample(strobe_rd *r, strobe_rd_item *item) {
    const char *text;
    size_t len;
    uint64_t index;
    int64_t offset;
    if (!strobe__rd_prof_next(r->prof, &text, &len, &index, &offset)) return 0;
    strobe_jp *jp = &r->ejp;
    strobe_jp_free(jp);
    strobe_jp_init_mem(jp, text, len);
    apply_limits(jp, &r->opt);
    jp->base_off = offset;
    jp->depth = 2;
    jp->stack[0] = 1;
    r->tj = jp;
    strobe_jp_capture_begin(jp, 1);
    int tok = strobe_jp_next(jp), rc;
    if (tok == STROBE_JP_OBJ_BEGIN)
        rc = read_event(r, item, offset);
    else
        rc = fail(r, STROBE_EFORMAT, offset, "a CPU profile's sample is no JSON object");
    r->tj = &r->jp;
    if (rc > 0) r->ev.index = index;
    return rc;
}

int strobe_rd_next(strobe_rd *r, strobe_rd_item *item) {
    int rc;
    for (;;) {
        rc = r->prof ? profile_sample(r, item) : 0;
        if (rc != 0) return rc;
        rc = next_item(r, item);
        /* A CPU profile's events ("Profile", "ProfileChunk") are handed out as their samples. */
        if (rc != STROBE_RD_EVENT || item->event->ph.len != 1 || item->event->ph.s[0] != 'P') break;
        int took = strobe__rd_prof_feed(&r->prof, item->event);
        if (took < 0) return fail(r, took, -1, "out of memory");
        if (took == 0) break;
        /* The profile's event is not handed out (its samples are): the counts say so. */
        r->info.events--;
        if (item->event->bad) r->info.bad_events--;
    }
    if (rc == STROBE_RD_END && !r->gz_checked) {
        r->gz_checked = 1;
        check_gz_tail(r);
    }
    return rc;
}

static int next_item(strobe_rd *r, strobe_rd_item *item) {
    strobe_jp *jp = &r->jp;
    memset(item, 0, sizeof *item);
    if (r->err) return r->err;
    for (;;) {
        int tok, rc;
        switch (r->mode) {
        case M_START:
            tok = strobe_jp_next(jp);
            if (tok == STROBE_JP_OBJ_BEGIN) {
                r->mode = M_TOP;
                continue;
            }
            if (tok == STROBE_JP_ARR_BEGIN) {
                r->info.bare_array = 1;
                r->seen_events = 1;
                r->abs_mode = ABS_TS; /* a bare array has no base time */
                r->mode = M_EVENTS;
                continue;
            }
            if (tok == STROBE_JP_ERROR) return fail_jp(r);
            if (tok == STROBE_JP_EOF) return fail(r, STROBE_EFORMAT, jp->tok_off, "empty input");
            return fail(r, STROBE_EFORMAT, jp->tok_off,
                        "the top level is neither an object nor an array");
        case M_TOP:
            tok = strobe_jp_next(jp);
            if (tok == STROBE_JP_KEY) {
                if (!key_is(jp, "traceEvents")) {
                    rc = read_meta(r, item);
                    if (rc > 0) r->info.bytes = strobe_jp_offset(jp);
                    return rc;
                }
                tok = strobe_jp_next(jp);
                if (tok == STROBE_JP_ERROR) return fail_jp(r);
                if (tok != STROBE_JP_ARR_BEGIN) {
                    if (tok == STROBE_JP_EOF)
                        return fail(r, STROBE_EFORMAT, strobe_jp_offset(jp),
                                    "unexpected end of input after \"traceEvents\"");
                    return fail(r, STROBE_EFORMAT, jp->tok_off, "traceEvents is not an array");
                }
                r->seen_events = 1;
                if (r->abs_mode == ABS_UNKNOWN) {
                    if (r->info.has_base_time)
                        r->abs_mode = ABS_BASE;
                    else if (r->opt.prescan_base && !r->pfs)
                        prescan_base(r); /* a Perfetto trace's base time comes first, or never */
                }
                r->mode = M_EVENTS;
                continue;
            }
            if (tok == STROBE_JP_OBJ_END) {
                int64_t end = jp->tok_off;
                if (finish(r) < 0) return r->err;
                r->info.bytes = strobe_jp_offset(jp);
                if (!r->seen_events)
                    return fail(r, STROBE_EFORMAT, end,
                                "the top-level object has no traceEvents array");
                return STROBE_RD_END;
            }
            if (tok == STROBE_JP_ERROR) return fail_jp(r);
            return fail(r, STROBE_EFORMAT, strobe_jp_offset(jp),
                        "unexpected end of input: the top-level object is not closed");
        case M_EVENTS: {
            if (r->pfs) {
                /* The decoder hands out the elements; the tokenizer reads on at the "]". */
                const strobe_rd_pf_elem *e;
                rc = strobe_rd_pfs_next_elem(r->pfs, &e);
                if (rc < 0) return fail_pf(r, rc);
                if (rc > 0) {
                    rc = pf_event(r, item, e);
                    if (rc > 0) r->info.bytes = e->offset + (int64_t)e->len;
                    return rc;
                }
                tok = strobe_jp_next(jp);
                if (tok == STROBE_JP_ERROR) return fail_jp(r);
                if (tok != STROBE_JP_ARR_END)
                    return fail(r, STROBE_EFORMAT, jp->tok_off,
                                "the Perfetto decoder's event array is not closed");
                r->mode = M_TOP;
                continue;
            }
            strobe_jp_capture_begin(jp, 1);
            tok = strobe_jp_next(jp);
            if (tok == STROBE_JP_OBJ_BEGIN) {
                rc = read_event(r, item, jp->tok_off);
                if (rc > 0) r->info.bytes = strobe_jp_offset(jp);
                return rc;
            }
            if (tok == STROBE_JP_ERROR) return fail_jp(r);
            if (tok == STROBE_JP_ARR_END || tok == STROBE_JP_EOF) {
                const char *t;
                size_t n;
                int64_t o;
                if (strobe_jp_capture_end(jp, &t, &n, &o)) return fail_jp(r);
                if (tok == STROBE_JP_EOF) {
                    /* The input ended between two events: an unterminated array, accepted. */
                    r->info.unterminated = 1;
                    r->mode = M_DONE;
                    r->info.bytes = strobe_jp_offset(jp);
                    return STROBE_RD_END;
                }
                if (r->info.bare_array) {
                    if (finish(r) < 0) return r->err;
                    r->info.bytes = strobe_jp_offset(jp);
                    return STROBE_RD_END;
                }
                r->mode = M_TOP;
                continue;
            }
            rc = read_non_object(r, item, tok);
            if (rc > 0) r->info.bytes = strobe_jp_offset(jp);
            return rc;
        }
        default:
            return STROBE_RD_END;
        }
    }
}
