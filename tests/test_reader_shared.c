/* test_reader_shared.c: the trace reader on real PyTorch traces and on malformed samples.
 *
 * Usage: test_reader_shared SHARED_DIR (CMake passes STROBE_SHARED_DIR). Exits 77 (skipped) with
 * a message when SHARED_DIR/traces is absent, as in a user's clone.
 *
 * Contents:
 *   1. Our side: read a file fully and describe it as text lines (status, events by ph, exact
 *      sums of ts and dur in ns, string tids, base time, top-level keys).
 *   2. The other side: the same description computed by Python's json module (with Decimal, so
 *      that sums are exact), run through popen; skipped with a message when python3 is absent.
 *   3. The malformed samples: which are errors and which are accepted with bad events, checked
 *      against the reader's documented rules.
 *   4. Throughput and bounded memory on the largest trace. */
#include <dirent.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "trace_reader.h"

/* ---- 1. Our side -------------------------------------------------------------------------- */

typedef struct ph_count {
    char ph[32];
    uint64_t n;
} ph_count;

typedef struct summary {
    int rc;
    char err[800];
    char first_bad[200];
    uint64_t events, bad;
    char text[16384]; /* the description, comparable with Python's */
} summary;

static int cmp_ph(const void *a, const void *b) {
    return strcmp(((const ph_count *)a)->ph, ((const ph_count *)b)->ph);
}

static void append(summary *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(summary *s, const char *fmt, ...) {
    size_t n = strlen(s->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->text + n, sizeof s->text - n, fmt, ap);
    va_end(ap);
}

static void describe(const char *path, summary *s) {
    memset(s, 0, sizeof *s);
    strobe_rd *r;
    s->rc = strobe_rd_open(&r, path, NULL);
    ph_count phs[64];
    size_t nph = 0;
    uint64_t tsn = 0, sumts = 0, durn = 0, sumdur = 0, strtid = 0;
    char keys[4096] = "";
    if (s->rc == 0) {
        strobe_rd_item it;
        int rc;
        while ((rc = strobe_rd_next(r, &it)) > 0) {
            if (it.kind == STROBE_RD_META) {
                size_t n = strlen(keys);
                snprintf(keys + n, sizeof keys - n, "key %.*s\n", (int)it.meta->key.len,
                         it.meta->key.s);
                continue;
            }
            const strobe_rd_event *e = it.event;
            if (e->bad && !s->first_bad[0])
                snprintf(s->first_bad, sizeof s->first_bad, "%s", e->bad_reason);
            const char *ph = (e->bad & STROBE_RD_BAD_NOT_OBJECT) ? "<nonobj>"
                             : e->ph.s                           ? e->ph.s
                                                                 : "<none>";
            size_t k = 0;
            while (k < nph && strcmp(phs[k].ph, ph) != 0)
                k++;
            if (k == nph && nph < 64) {
                snprintf(phs[nph].ph, sizeof phs[nph].ph, "%s", ph);
                phs[nph++].n = 0;
            }
            if (k < nph) phs[k].n++;
            /* Sums modulo 2^64: exact integers, comparable with Python's. */
            if (e->has_ts) {
                tsn++;
                sumts += (uint64_t)e->ts_ns;
            }
            if (e->has_dur) {
                durn++;
                sumdur += (uint64_t)e->dur_ns;
            }
            strtid += e->tid.kind == STROBE_RD_ID_STRING;
        }
        s->rc = rc;
    }
    const strobe_rd_info *info = r ? strobe_rd_get_info(r) : NULL;
    snprintf(s->err, sizeof s->err, "%s", r ? strobe_rd_errmsg(r) : "out of memory");
    if (s->rc < 0) {
        append(s, "status error\n");
    } else {
        s->events = info->events;
        s->bad = info->bad_events;
        append(s, "status ok\nunterminated %d\nevents %llu\n", info->unterminated,
               (unsigned long long)info->events);
        qsort(phs, nph, sizeof phs[0], cmp_ph);
        for (size_t k = 0; k < nph; k++)
            append(s, "ph %s %llu\n", phs[k].ph, (unsigned long long)phs[k].n);
        append(s, "tsn %llu\nsumts %llu\ndurn %llu\nsumdur %llu\nstrtid %llu\n",
               (unsigned long long)tsn, (unsigned long long)sumts, (unsigned long long)durn,
               (unsigned long long)sumdur, (unsigned long long)strtid);
        if (info->has_base_time)
            append(s, "base %lld\n", (long long)info->base_time_ns);
        else
            append(s, "base none\n");
        append(s, "%s", keys);
    }
    strobe_rd_close(r);
}

/* ---- 2. The other side: Python ------------------------------------------------------------ */

static const char PY[] =
    "import sys, json, gzip\n"
    "from decimal import Decimal, ROUND_HALF_UP\n"
    "LIM = 2**63 - 1\n"
    "def ns(v):\n"
    "    # microseconds -> integer ns, rounded half away from zero; None when unusable\n"
    "    if isinstance(v, bool) or not isinstance(v, (int, Decimal)): return None\n"
    "    d = Decimal(v)\n"
    "    if not d.is_finite() or abs(d) >= Decimal(10) ** 17: return None\n"
    "    q = int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))\n"
    "    return q if abs(q) <= LIM else None\n"
    "def load(text):\n"
    "    try:\n"
    "        return json.loads(text, parse_float=Decimal), 0\n"
    "    except ValueError:\n"
    "        pass\n"
    "    # The Trace Event Format lets a writer leave the event array unterminated.\n"
    "    s = text.rstrip()\n"
    "    if s.endswith(','): s = s[:-1]\n"
    "    for tail in (']', ']}'):\n"
    "        try:\n"
    "            return json.loads(s + tail, parse_float=Decimal), 1\n"
    "        except ValueError:\n"
    "            pass\n"
    "    return None, 0\n"
    "for path in sys.argv[1:]:\n"
    "    raw = open(path, 'rb').read()\n"
    "    if raw[:2] == b'\\x1f\\x8b': raw = gzip.decompress(raw)\n"
    "    j, unterminated = load(raw.decode('utf-8', 'surrogateescape'))\n"
    "    print('file', path)\n"
    "    if isinstance(j, list): evs, keys = j, []\n"
    "    elif isinstance(j, dict) and isinstance(j.get('traceEvents'), list):\n"
    "        evs, keys = j['traceEvents'], [k for k in j if k != 'traceEvents']\n"
    "    else:\n"
    "        print('status error'); print('end'); continue\n"
    "    print('status ok'); print('unterminated', unterminated); print('events', len(evs))\n"
    "    phs = {}\n"
    "    tsn = sumts = durn = sumdur = strtid = 0\n"
    "    for e in evs:\n"
    "        if not isinstance(e, dict): p = '<nonobj>'\n"
    "        else: p = e.get('ph') if isinstance(e.get('ph'), str) else '<none>'\n"
    "        phs[p] = phs.get(p, 0) + 1\n"
    "        if not isinstance(e, dict): continue\n"
    "        t, d = ns(e.get('ts')), ns(e.get('dur'))\n"
    "        if t is not None: tsn += 1; sumts += t\n"
    "        if d is not None: durn += 1; sumdur += d\n"
    "        strtid += isinstance(e.get('tid'), str)\n"
    "    for p in sorted(phs): print('ph', p, phs[p])\n"
    "    print('tsn', tsn); print('sumts', sumts % 2**64)\n"
    "    print('durn', durn); print('sumdur', sumdur % 2**64); print('strtid', strtid)\n"
    "    b = j.get('baseTimeNanoseconds') if isinstance(j, dict) else None\n"
    "    print('base', b if isinstance(b, int) and not isinstance(b, bool) else 'none')\n"
    "    for k in keys: print('key', k)\n"
    "    print('end')\n";

/* Runs the script over paths; fills py[i] with the description of paths[i]. Returns 0 when
 * python3 is not usable. */
static int python_describe(const char *out_dir, char **paths, int n, char (*py)[16384]) {
    char script[600];
    snprintf(script, sizeof script, "%s/reader_count.py", out_dir);
    FILE *f = fopen(script, "w");
    if (!f) return 0;
    fputs(PY, f);
    fclose(f);
    size_t cap = 1000;
    for (int i = 0; i < n; i++)
        cap += strlen(paths[i]) + 3;
    char *cmd = malloc(cap);
    REQUIRE(cmd != NULL);
    size_t len = (size_t)snprintf(cmd, cap, "python3 '%s'", script);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(cmd + len, cap - len, " '%s'", paths[i]);
    snprintf(cmd + len, cap - len, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) return 0;
    char line[4096];
    int cur = -1, files = 0;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "file ", 5) == 0) {
            line[strcspn(line, "\n")] = '\0';
            cur = -1;
            for (int i = 0; i < n; i++)
                if (strcmp(paths[i], line + 5) == 0) cur = i;
            if (cur >= 0) {
                py[cur][0] = '\0';
                files++;
            }
            continue;
        }
        if (cur < 0 || strcmp(line, "end\n") == 0) continue;
        size_t used = strlen(py[cur]);
        snprintf(py[cur] + used, sizeof py[cur] - used, "%s", line);
    }
    int st = pclose(p);
    return st == 0 && files == n;
}

/* ---- 3. Malformed samples: what the reader's rules say about each ----------------------- */

typedef struct expectation {
    const char *file;
    int error;    /* 1: a fatal error (EFORMAT) */
    uint64_t bad; /* bad events when accepted */
    const char *why;
} expectation;

static const expectation EXPECT[] = {
    {"not_json.json", 1, 0, "not JSON at byte 0"},
    {"no_traceEvents.json", 1, 0, "an object without traceEvents is not a trace"},
    {"empty.json", 0, 0, "an empty event array is a valid, empty trace"},
    {"unterminated_array.json", 0, 0, "the format allows an unclosed event array"},
    {"missing_ph.json", 0, 1, "missing ph"},
    {"missing_name.json", 0, 1, "missing name (ph X)"},
    {"missing_cat.json", 0, 0, "cat is optional"},
    {"nan_like.json", 0, 1, "ts 1e400 is beyond int64 ns"},
    {"negative_dur.json", 0, 1, "negative dur"},
    {"null_event.json", 0, 1, "a null element is a bad event, not a broken file"},
    {"string_ts.json", 0, 1, "string ts (and dur) is not a number: not guessed"},
    {"string_tid.json", 0, 0, "string tids are legal (2021 schema)"},
    {"x_no_dur.json", 0, 1, "X without dur"},
    {"be_no_name_on_E.json", 0, 0, "E events need no name"},
    {"b_without_e.json", 0, 0, "pairing B/E is the analysis' job"},
    {"e_without_b.json", 0, 0, "pairing B/E is the analysis' job"},
    {"be_mismatch.json", 0, 0, "pairing B/E is the analysis' job"},
    {"be_interleaved_threads.json", 0, 0, "pairing B/E is the analysis' job"},
    {"misnested_X.json", 0, 0, "nesting is the analysis' job"},
    {"unsorted.json", 0, 0, "order is the analysis' job"},
    {"flow_inside_slice.json", 0, 0, "well-formed flows"},
    {"flow_same_cat.json", 0, 0, "well-formed flows"},
};

static const expectation *expectation_for(const char *name) {
    for (size_t i = 0; i < sizeof EXPECT / sizeof EXPECT[0]; i++)
        if (strcmp(EXPECT[i].file, name) == 0) return &EXPECT[i];
    return NULL;
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Lists the .json and .json.gz files of dir into paths (sorted); returns their number. */
static int list_traces(const char *dir, char **paths, int max) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < max) {
        if (!has_suffix(de->d_name, ".json") && !has_suffix(de->d_name, ".json.gz")) continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        paths[n] = malloc(len);
        REQUIRE(paths[n] != NULL);
        snprintf(paths[n], len, "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(paths[i], paths[j]) > 0) {
                char *t = paths[i];
                paths[i] = paths[j];
                paths[j] = t;
            }
    return n;
}

/* ---- 4. Throughput and bounded memory ----------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void measure(const char *path) {
    /* The heap in use, sampled while reading, must stay far below the decoded size: the reader
     * streams. Sanitizers replace malloc (mallinfo2 then reports nothing), so this runs only
     * where the numbers mean something. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) &&          \
    !defined(STROBE_UNDER_SANITIZER)
    size_t heap0 = mallinfo2().uordblks, peak = 0;
#define SAMPLE_HEAP() (peak = mallinfo2().uordblks > peak ? mallinfo2().uordblks : peak)
#else
    size_t heap0 = 0, peak = 0;
#define SAMPLE_HEAP() ((void)0)
#endif
    double best = 1e9;
    int64_t bytes = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        strobe_rd *r;
        REQUIRE(strobe_rd_open(&r, path, NULL) == 0);
        strobe_rd_item it;
        uint64_t k = 0;
        int rc;
        while ((rc = strobe_rd_next(r, &it)) > 0)
            if ((++k & 1023) == 0) SAMPLE_HEAP();
        CHECK_EQ(rc, 0);
        bytes = strobe_rd_get_info(r)->bytes;
        strobe_rd_close(r);
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("throughput: %s: %.1f MB decoded in %.3f s = %.0f MB/s\n", path, (double)bytes / 1e6,
           best, (double)bytes / 1e6 / best);
    if (peak) {
        size_t extra = peak > heap0 ? peak - heap0 : 0;
        printf("heap in use while reading: %zu KiB above the start (decoded size %lld KiB)\n",
               extra / 1024, (long long)bytes / 1024);
        CHECK(extra < (size_t)4 << 20);
    }
}

int main(int argc, char **argv) {
    const char *shared = argc > 1 ? argv[1] : NULL;
    char traces_dir[1024], bad_dir[1024];
    struct stat st;
    if (!shared) {
        printf("usage: test_reader_shared SHARED_DIR\n");
        return 77;
    }
    snprintf(traces_dir, sizeof traces_dir, "%s/traces", shared);
    snprintf(bad_dir, sizeof bad_dir, "%s/validators/samples/bad", shared);
    if (stat(traces_dir, &st) != 0) {
        printf("skipped: no shared traces at %s (set STROBE_SHARED_DIR)\n", traces_dir);
        return 77;
    }
    char *paths[256];
    int ntr = list_traces(traces_dir, paths, 128);
    int nbad = stat(bad_dir, &st) == 0 ? list_traces(bad_dir, paths + ntr, 128) : 0;
    int n = ntr + nbad;
    CHECK(ntr > 0);
    summary *ours = calloc((size_t)n, sizeof *ours);
    char(*py)[16384] = calloc((size_t)n, sizeof *py);
    REQUIRE(ours && py);

    for (int i = 0; i < n; i++)
        describe(paths[i], &ours[i]);

    /* The real traces: read fully, no error, no bad event (PyTorch wrote them). */
    for (int i = 0; i < ntr; i++) {
        const summary *s = &ours[i];
        printf("trace %-40s %s events %llu bad %llu %s\n", strrchr(paths[i], '/') + 1,
               s->rc ? "ERROR" : "ok", (unsigned long long)s->events, (unsigned long long)s->bad,
               s->rc ? s->err : s->first_bad);
        CHECK_EQ(s->rc, 0);
        CHECK_EQ(s->bad, 0);
        CHECK(s->events > 0);
    }
    /* The malformed samples, against the documented rules. */
    for (int i = ntr; i < n; i++) {
        const summary *s = &ours[i];
        const char *name = strrchr(paths[i], '/') + 1;
        const expectation *x = expectation_for(name);
        printf("sample %-30s %-8s events %llu bad %llu  %s\n", name, s->rc ? "error" : "accepted",
               (unsigned long long)s->events, (unsigned long long)s->bad,
               s->rc ? s->err : s->first_bad);
        if (!x) {
            printf("  (new sample: no expectation recorded; read without crashing)\n");
            continue;
        }
        CHECK_EQ(s->rc != 0, x->error);
        if (x->error) CHECK_EQ(s->rc, STROBE_EFORMAT);
        if (!x->error) CHECK_EQ(s->bad, x->bad);
    }

    /* Everything against Python's json module. */
    if (python_describe(STROBE_TEST_OUT_DIR, paths, n, py)) {
        for (int i = 0; i < n; i++) {
            if (strcmp(ours[i].text, py[i]) != 0) {
                printf("%s: reader and python disagree\n--- reader\n%s--- python\n%s", paths[i],
                       ours[i].text, py[i]);
                CHECK(0);
            }
        }
        printf("python cross-check: %d files agree\n", n);
    } else {
        printf("python3 not usable: cross-check skipped\n");
    }

    /* Throughput on the largest trace. */
    const char *largest = NULL;
    off_t size = -1;
    for (int i = 0; i < ntr; i++)
        if (stat(paths[i], &st) == 0 && st.st_size > size) {
            size = st.st_size;
            largest = paths[i];
        }
    if (largest) measure(largest);

    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(ours);
    free(py);
    return check_result();
}
