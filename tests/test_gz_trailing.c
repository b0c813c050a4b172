/* test_gz_trailing.c: gzip'd inputs with data after their last gzip member. gzip reads them and
 * warns "trailing garbage ignored"; strobe's reader reads them alike and says so
 * (strobe_rd_info.gz_trailing_*, and one warning line from the CLI), while concatenated members
 * are read as one stream without a word. The inputs are generated here: a JSON trace large enough
 * that its members span several of the reader's buffers, and a Perfetto trace of a session.
 *
 *   test_gz_trailing STROBE_CLI
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "strobe/strobe.h"
#include "trace_reader.h"

static const char *cli;
static char outdir[1024];

typedef struct buf {
    unsigned char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL) abort();
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Appends data[0..n) to out as one gzip member. */
static void gzip_member(buf *out, const unsigned char *data, size_t n) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    unsigned char chunk[65536];
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)n;
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = deflate(&z, Z_FINISH);
        put(out, chunk, sizeof chunk - z.avail_out);
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END) abort();
    deflateEnd(&z);
}

/* Writes `pieces` members of data (split at uneven points), then `tail` bytes of `extra`. */
static void write_gz(const char *path, const buf *data, int pieces, const void *extra, size_t tail,
                     size_t *gz_len) {
    buf out = {0};
    size_t at = 0;
    for (int i = 0; i < pieces; i++) {
        size_t end = i == pieces - 1 ? data->len : data->len / (size_t)pieces * (i + 1) + 37;
        gzip_member(&out, data->p + at, end - at);
        at = end;
    }
    *gz_len = out.len;
    if (tail) put(&out, extra, tail);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ(fwrite(out.p, 1, out.len, f), out.len);
        fclose(f);
    }
    free(out.p);
}

typedef struct got {
    int ok;
    long events;
    strobe_rd_info info;
} got;

static got read_all(const char *path) {
    got g;
    memset(&g, 0, sizeof g);
    strobe_rd *rd;
    if (strobe_rd_open(&rd, path, NULL) != 0) {
        fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
        strobe_rd_close(rd);
        return g;
    }
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0)
        if (rc == STROBE_RD_EVENT) g.events++;
    if (rc < 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    g.ok = rc == 0;
    g.info = *strobe_rd_get_info(rd);
    strobe_rd_close(rd);
    return g;
}

/* Runs `strobe info` on path (or on standard input from it, with `stdin_path`) and returns its
 * standard error in err. @return the exit code. */
static int cli_info(const char *path, int from_stdin, char *err, size_t cap) {
    char errfile[1200], cmd[4000];
    snprintf(errfile, sizeof errfile, "%s/info.err", outdir);
    if (from_stdin)
        snprintf(cmd, sizeof cmd, "'%s' info - < '%s' > /dev/null 2> '%s'", cli, path, errfile);
    else
        snprintf(cmd, sizeof cmd, "'%s' info '%s' > /dev/null 2> '%s'", cli, path, errfile);
    int st = system(cmd);
    err[0] = '\0';
    FILE *f = fopen(errfile, "r");
    if (f) {
        size_t n = fread(err, 1, cap - 1, f);
        err[n] = '\0';
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* One input (JSON text or a Perfetto trace) in each of the shapes. */
static void check_shapes(const char *stem, const buf *data, long want_events) {
    char path[1200], err[4096], want[1400];
    size_t gz_len;
    static const unsigned char zeros[100];

    /* One member, nothing after it. */
    snprintf(path, sizeof path, "%s/%s.gz", outdir, stem);
    write_gz(path, data, 1, NULL, 0, &gz_len);
    got g = read_all(path);
    CHECK(g.ok);
    CHECK_EQ(g.events, want_events);
    CHECK_EQ(g.info.gz_trailing_bytes, 0);
    CHECK_EQ(cli_info(path, 0, err, sizeof err), 0);
    CHECK(strstr(err, "trailing") == NULL);

    /* Garbage after it: read all the same, and said. */
    snprintf(path, sizeof path, "%s/%s_garbage.gz", outdir, stem);
    write_gz(path, data, 1, "garbage!", 8, &gz_len);
    g = read_all(path);
    CHECK(g.ok);
    CHECK_EQ(g.events, want_events);
    CHECK_EQ(g.info.gz_trailing_bytes, 8);
    CHECK_EQ(g.info.gz_trailing_offset, (long long)gz_len);
    CHECK_EQ(g.info.gz_trailing_zeros, 0);
    CHECK_EQ(cli_info(path, 0, err, sizeof err), 0);
    snprintf(want, sizeof want,
             "strobe info: warning: %s: trailing garbage ignored: 8 byte(s) after the gzip data, "
             "from byte %zu\n",
             path, gz_len);
    if (strstr(err, want) == NULL || count_lines(err) != 1) {
        fprintf(stderr, "want one line \"%s\" in: %s\n", want, err);
        CHECK(0);
    }
    /* The same through standard input. */
    CHECK_EQ(cli_info(path, 1, err, sizeof err), 0);
    CHECK(strstr(err, "warning: <stdin>: trailing garbage ignored") != NULL);

    /* Three members: one stream, as gzip reads it; nothing said. */
    snprintf(path, sizeof path, "%s/%s_members.gz", outdir, stem);
    write_gz(path, data, 3, NULL, 0, &gz_len);
    g = read_all(path);
    CHECK(g.ok);
    CHECK_EQ(g.events, want_events);
    CHECK_EQ(g.info.gz_trailing_bytes, 0);
    CHECK_EQ(cli_info(path, 0, err, sizeof err), 0);
    CHECK(strstr(err, "trailing") == NULL);

    /* Three members, then zero bytes (padding). */
    snprintf(path, sizeof path, "%s/%s_members_zeros.gz", outdir, stem);
    write_gz(path, data, 3, zeros, sizeof zeros, &gz_len);
    g = read_all(path);
    CHECK(g.ok);
    CHECK_EQ(g.events, want_events);
    CHECK_EQ(g.info.gz_trailing_bytes, (long long)sizeof zeros);
    CHECK_EQ(g.info.gz_trailing_offset, (long long)gz_len);
    CHECK_EQ(g.info.gz_trailing_zeros, 1);
    CHECK_EQ(cli_info(path, 0, err, sizeof err), 0);
    CHECK(strstr(err, "trailing zero bytes ignored: 100 byte(s)") != NULL);

    /* One byte that could start a member but does not (gzip's magic is two). */
    snprintf(path, sizeof path, "%s/%s_one.gz", outdir, stem);
    write_gz(path, data, 1, "\x1f", 1, &gz_len);
    g = read_all(path);
    CHECK(g.ok);
    CHECK_EQ(g.info.gz_trailing_bytes, 1);
    CHECK_EQ(g.info.gz_trailing_offset, (long long)gz_len);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_gz_trailing STROBE_CLI\n");
        return 2;
    }
    cli = argv[1];
    snprintf(outdir, sizeof outdir, "%s/gz_trailing", STROBE_TEST_OUT_DIR);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", outdir, outdir);
    if (system(cmd) != 0) return 1;

    /* A JSON trace of 40000 events (about 4 MB): its members span many 256 KiB buffers. */
    buf json = {0};
    const char *head = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
    put(&json, head, strlen(head));
    long n = 40000;
    for (long i = 0; i < n; i++) {
        char ev[200];
        int len = snprintf(ev, sizeof ev,
                           "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%ld\", \"pid\": "
                           "1, \"tid\": %ld, \"ts\": %ld.%03ld, \"dur\": %ld}",
                           i ? ",\n" : "", i % 97, i % 7, i * 3, i % 1000, i % 13 + 1);
        put(&json, ev, (size_t)len);
    }
    put(&json, "\n]}\n", 4);
    check_shapes("trace.json", &json, n);
    free(json.p);

    /* A Perfetto trace of a session (the decoder reads it through the same gzFile). */
    strobe_config cfg;
    strobe_config_init(&cfg);
    CHECK_EQ(strobe_start(&cfg), 0);
    for (int i = 0; i < 50; i++) {
        STROBE_OP("aten::mm");
    }
    strobe_result *r = NULL;
    CHECK_EQ(strobe_stop(&r), 0);
    char pf[1200];
    snprintf(pf, sizeof pf, "%s/session.pftrace", outdir);
    CHECK_EQ(strobe_result_save(r, pf), 0);
    strobe_result_free(r);
    got plain = read_all(pf);
    CHECK(plain.ok);
    CHECK(plain.events >= 50);
    buf pb = {0};
    FILE *f = fopen(pf, "rb");
    CHECK(f != NULL);
    if (f) {
        unsigned char chunk[65536];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
            put(&pb, chunk, k);
        fclose(f);
    }
    check_shapes("session.pftrace", &pb, plain.events);
    free(pb.p);
    return check_result();
}
