/* idmap.c: numbers for a trace's string pids and tids (see idmap.h).
 *
 * Contents: the numbers taken, the strings, the threads, the events' rewrite, the names. */
#include "idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "reader/json_pull.h"
#include "reader/reader_util.h"
#include "util/err.h"

/* The range of the numbers made from strings: strobe convert's (cmd_convert.c, id_num). */
#define IDMAP_LO 0xC00000
#define IDMAP_SPAN 0x3FFFFF

typedef struct cli_idmap_str {
    char *s;
    size_t len;
    int64_t num;
    uint8_t is_pid; /* used as a pid: a process to name */
    uint8_t named;  /* as a pid, by a process_name event */
} cli_idmap_str;

typedef struct cli_idmap_thread {
    int64_t pid, tid;
    size_t str; /* index in strs */
    uint8_t named;
} cli_idmap_thread;

static void *grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return p;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n * size);
    if (q != NULL) *cap = n;
    return q;
}

/* A key of the u64maps from a hash (UINT64_MAX is not a key), and the next one to try where a
 * key's entry belongs to another string or thread. */
static uint64_t key_of(uint64_t h) {
    return h & STROBE__U64MAP_KEY_MAX;
}

static uint64_t next_key(uint64_t k) {
    return key_of(k * 0x9e3779b97f4a7c15ull + 1);
}

/* ---- the numbers taken ---------------------------------------------------------------------- */

/* Negative numbers need no entry: a string's number is never negative. */
static int take(cli_idmap *m, int64_t num) {
    if (num < 0) return 0;
    return strobe__u64map_put(&m->used, (uint64_t)num, NULL) ? 0 : STROBE_ENOMEM;
}

int cli_idmap_reserve(cli_idmap *m, const md_model *md) {
    for (size_t i = 0; i < md->thread_count; i++) {
        const md_thread *t = &md->threads[i];
        if (t->pid_kind == MD_ID_NUM) STROBE_FORWARD_IF_ERR(take(m, t->pid));
        if (t->tid_kind == MD_ID_NUM) STROBE_FORWARD_IF_ERR(take(m, t->tid));
    }
    for (size_t i = 0; i < md->proc_count; i++)
        if (md->procs[i].pid_kind == MD_ID_NUM) STROBE_FORWARD_IF_ERR(take(m, md->procs[i].pid));
    return 0;
}

/* ---- the strings ---------------------------------------------------------------------------- */

/* The index of string s[0..len) in m->strs, added with its number when new. @return the index, or
 * STROBE_ENOMEM. */
static long str_of(cli_idmap *m, const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a, as strobe convert hashes an id */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    uint64_t k = key_of(h);
    for (;;) {
        int inserted;
        uint64_t *slot = strobe__u64map_put(&m->str_index, k, &inserted);
        STROBE_RETURN_IF(slot == NULL, STROBE_ENOMEM);
        if (!inserted && *slot != 0) {
            const cli_idmap_str *e = &m->strs[*slot - 1];
            if (e->len == len && memcmp(e->s, s, len) == 0) return (long)(*slot - 1);
            k = next_key(k);
            continue;
        }
        cli_idmap_str *v = grow(m->strs, &m->capstrs, m->nstrs + 1, sizeof *v);
        char *copy = malloc(len + 1);
        if (v != NULL) m->strs = v;
        if (v == NULL || copy == NULL) {
            free(copy);
            *slot = 0; /* the key stays, naming no entry (taken as new next time) */
            return STROBE_ENOMEM;
        }
        memcpy(copy, s, len);
        copy[len] = '\0';
        /* The first number of the range from the hash that nothing took; past the range only
         * when all of it is taken. */
        int64_t num = IDMAP_LO + (int64_t)(h % IDMAP_SPAN), tries = 0;
        while (strobe__u64map_get(&m->used, (uint64_t)num) != NULL) {
            if (++tries > IDMAP_SPAN) {
                num = IDMAP_LO + IDMAP_SPAN + (int64_t)m->nstrs;
                break;
            }
            num = num + 1 < IDMAP_LO + IDMAP_SPAN ? num + 1 : IDMAP_LO;
        }
        if (take(m, num) != 0) {
            free(copy);
            *slot = 0;
            return STROBE_ENOMEM;
        }
        m->strs[m->nstrs] = (cli_idmap_str){.s = copy, .len = len, .num = num};
        *slot = ++m->nstrs;
        return (long)(m->nstrs - 1);
    }
}

int cli_idmap_pid(cli_idmap *m, const char *s, size_t len, int64_t *out) {
    if (strobe__rd_digits_int(s, len, out)) return 0;
    long k = str_of(m, s, len);
    if (k < 0) return (int)k;
    m->strs[k].is_pid = 1;
    *out = m->strs[k].num;
    return 0;
}

/* ---- the threads ---------------------------------------------------------------------------- */

/* The thread (pid, tid) of string k, added when new. @return its index, or STROBE_ENOMEM. */
static long thread_of(cli_idmap *m, int64_t pid, int64_t tid, size_t k) {
    uint64_t x = (uint64_t)pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)tid;
    x ^= x >> 31;
    for (uint64_t key = key_of(x);; key = next_key(key)) {
        int inserted;
        uint64_t *slot = strobe__u64map_put(&m->thread_index, key, &inserted);
        STROBE_RETURN_IF(slot == NULL, STROBE_ENOMEM);
        if (!inserted && *slot != 0) {
            const cli_idmap_thread *t = &m->threads[*slot - 1];
            if (t->pid == pid && t->tid == tid) return (long)(*slot - 1);
            continue;
        }
        cli_idmap_thread *v = grow(m->threads, &m->capthreads, m->nthreads + 1, sizeof *v);
        if (v == NULL) {
            *slot = 0;
            return STROBE_ENOMEM;
        }
        m->threads = v;
        m->threads[m->nthreads] = (cli_idmap_thread){.pid = pid, .tid = tid, .str = k};
        *slot = ++m->nthreads;
        return (long)(m->nthreads - 1);
    }
}

/* As cli_idmap_tid(); the thread is marked to name only when has_pid. */
static int tid_num(cli_idmap *m, int has_pid, int64_t pid, const char *s, size_t len,
                   int64_t *out) {
    if (strobe__rd_digits_int(s, len, out)) return 0;
    long k = str_of(m, s, len);
    if (k < 0) return (int)k;
    *out = m->strs[k].num;
    return has_pid && thread_of(m, pid, *out, (size_t)k) < 0 ? STROBE_ENOMEM : 0;
}

int cli_idmap_tid(cli_idmap *m, int64_t pid, const char *s, size_t len, int64_t *out) {
    return tid_num(m, 1, pid, s, len, out);
}

/* ---- the events' rewrite -------------------------------------------------------------------- */

int cli_idmap_wants(const strobe_rd_event *e) {
    return e->pid.kind == STROBE_RD_ID_STRING || e->tid.kind == STROBE_RD_ID_STRING;
}

/* The number e's pid is written as, its own or its string's, and *has_pid = 1; *has_pid = 0 when
 * it has none (a bad event, whose threads are not named). */
static int event_pid(cli_idmap *m, const strobe_rd_event *e, int *has_pid, int64_t *pid) {
    *pid = e->pid.num;
    *has_pid = e->pid.has_num || (e->pid.kind == STROBE_RD_ID_STRING && e->pid.str.s);
    if (!e->pid.has_num && *has_pid) return cli_idmap_pid(m, e->pid.str.s, e->pid.str.len, pid);
    return 0;
}

/* Marks the names that metadata event e gives a mapped process or thread. */
static void note_name(cli_idmap *m, const strobe_rd_event *e, int64_t pid) {
    if (e->ph.s == NULL || strcmp(e->ph.s, "M") != 0 || e->name.s == NULL) return;
    if (strcmp(e->name.s, "process_name") == 0 && e->pid.kind == STROBE_RD_ID_STRING) {
        for (size_t k = 0; k < m->nstrs; k++)
            if (m->strs[k].is_pid && m->strs[k].num == pid) m->strs[k].named = 1;
    } else if (strcmp(e->name.s, "thread_name") == 0 && e->tid.kind == STROBE_RD_ID_STRING &&
               !e->tid.has_num && e->tid.str.s) {
        int64_t tid;
        if (cli_idmap_tid(m, pid, e->tid.str.s, e->tid.str.len, &tid) != 0) return;
        for (size_t k = 0; k < m->nthreads; k++)
            if (m->threads[k].pid == pid && m->threads[k].tid == tid) m->threads[k].named = 1;
    }
}

int cli_idmap_put_event(cli_idmap *m, FILE *out, const strobe_rd_event *e, const char *text,
                        size_t len) {
    int has_pid;
    int64_t pid;
    STROBE_FORWARD_IF_ERR(event_pid(m, e, &has_pid, &pid));
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, len);
    int rc = strobe_jp_next(&jp) == STROBE_JP_OBJ_BEGIN ? 0 : STROBE_EFORMAT;
    size_t done = 0; /* text[0..done) is written */
    int t = 0;
    while (rc == 0 && (t = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
        int is_pid = jp.str_len == 3 && memcmp(jp.str, "pid", 3) == 0;
        int is_tid = jp.str_len == 3 && memcmp(jp.str, "tid", 3) == 0;
        strobe_jp_capture_begin(&jp, 0);
        t = strobe_jp_next(&jp);
        if ((t == STROBE_JP_OBJ_BEGIN || t == STROBE_JP_ARR_BEGIN) &&
            strobe_jp_skip_container(&jp) <= STROBE_JP_EOF)
            t = STROBE_JP_ERROR;
        const char *raw;
        size_t rlen;
        int64_t off;
        if (t <= STROBE_JP_EOF || strobe_jp_capture_end(&jp, &raw, &rlen, &off) != 0) {
            rc = STROBE_EFORMAT;
            break;
        }
        if (t != STROBE_JP_STRING || !(is_pid || is_tid)) continue;
        int64_t num;
        if (is_pid)
            rc = cli_idmap_pid(m, jp.str, jp.str_len, &num);
        else
            rc = tid_num(m, has_pid, pid, jp.str, jp.str_len, &num);
        if (rc != 0) break;
        /* The text up to the value, then the number in its place. */
        fwrite(text + done, 1, (size_t)off - done, out);
        fprintf(out, "%" PRId64, num);
        done = (size_t)off + rlen;
    }
    if (rc == 0 && t != STROBE_JP_OBJ_END) rc = STROBE_EFORMAT;
    strobe_jp_free(&jp);
    if (rc != 0) return rc;
    fwrite(text + done, 1, len - done, out);
    if (has_pid) note_name(m, e, pid);
    return 0;
}

/* ---- the names ------------------------------------------------------------------------------ */

static size_t put_name(FILE *out, size_t nev, const char *what, int64_t pid, int64_t tid,
                       const char *name) {
    fprintf(out, "%s{\"name\":\"%s\",\"ph\":\"M\",\"ts\":0,\"pid\":%" PRId64 ",\"tid\":%" PRId64,
            nev ? ",\n" : "\n", what, pid, tid);
    fputs(",\"args\":{\"name\":", out);
    cli_json_str(out, name);
    fputs("}}", out);
    return nev + 1;
}

size_t cli_idmap_put_names(const cli_idmap *m, FILE *out, size_t nev) {
    for (size_t k = 0; k < m->nstrs; k++) {
        const cli_idmap_str *s = &m->strs[k];
        if (s->is_pid && !s->named && s->len > 0)
            nev = put_name(out, nev, "process_name", s->num, 0, s->s);
    }
    for (size_t k = 0; k < m->nthreads; k++) {
        const cli_idmap_thread *t = &m->threads[k];
        if (!t->named && m->strs[t->str].len > 0)
            nev = put_name(out, nev, "thread_name", t->pid, t->tid, m->strs[t->str].s);
    }
    return nev;
}

void cli_idmap_free(cli_idmap *m) {
    for (size_t k = 0; k < m->nstrs; k++)
        free(m->strs[k].s);
    free(m->strs);
    free(m->threads);
    strobe__u64map_free(&m->str_index);
    strobe__u64map_free(&m->thread_index);
    strobe__u64map_free(&m->used);
    memset(m, 0, sizeof *m);
}
