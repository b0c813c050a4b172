/* gz_tail.c: data after the last member of a gzip'd input (gz_tail.h).
 *
 * The walk follows zlib's gzread() (gz_look in its gzread.c): after a member ends, another starts
 * where the next two bytes are gzip's magic (0x1f 0x8b); anything else is trailing data, dropped.
 * The walk decompresses into a scratch buffer and keeps nothing. */
#include "gz_tail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strobe/error.h"

/* pread() of up to n bytes at off, retried on EINTR. @return the bytes read, or -1. */
static ssize_t read_at(int fd, unsigned char *buf, size_t n, int64_t off) {
    for (;;) {
        ssize_t r = pread(fd, buf, n, (off_t)off);
        if (r >= 0 || errno != EINTR) return r;
    }
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the `bytes` bytes at off are all zero. */
static int all_zero(int fd, int64_t off, int64_t bytes, unsigned char *buf, size_t cap) {
    while (bytes > 0) {
        size_t want = bytes < (int64_t)cap ? (size_t)bytes : cap;
        ssize_t r = read_at(fd, buf, want, off);
        if (r <= 0) return 0;
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] != 0) return 0;
        off += r;
        bytes -= r;
    }
    return 1;
}

#define IN_BYTES (256 * 1024)
#define OUT_BYTES (256 * 1024)

/* Walks the members from the start of the file. @return 0 with *end the offset after the last
 * one, or a negative error. */
static int members_end(int fd, int64_t size, unsigned char *in, unsigned char *out, int64_t *end) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return STROBE_ENOMEM;
    int64_t next = 0; /* file offset of the byte after those in `in` */
    int rc = 0;
    for (;;) {
        int zr = Z_OK;
        while (zr != Z_STREAM_END) {
            if (z.avail_in == 0) {
                ssize_t r = read_at(fd, in, IN_BYTES, next);
                if (r < 0) {
                    rc = STROBE_EIO;
                    goto done;
                }
                if (r == 0) {
                    rc = STROBE_EFORMAT; /* cut inside a member: gzread() would have failed */
                    goto done;
                }
                next += r;
                z.next_in = in;
                z.avail_in = (uInt)r;
            }
            z.next_out = out;
            z.avail_out = OUT_BYTES;
            zr = inflate(&z, Z_NO_FLUSH);
            if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
                rc = zr == Z_MEM_ERROR ? STROBE_ENOMEM : STROBE_EFORMAT;
                goto done;
            }
        }
        int64_t at = next - (int64_t)z.avail_in; /* where this member ended */
        unsigned char magic[2];
        if (size - at < 2 || read_at(fd, magic, 2, at) != 2 || magic[0] != 0x1f ||
            magic[1] != 0x8b) {
            *end = at;
            goto done;
        }
        if (inflateReset(&z) != Z_OK) {
            rc = STROBE_EFORMAT;
            goto done;
        }
    }
done:
    inflateEnd(&z);
    return rc;
}

int strobe_rd_gz_tail(int fd, const strobe_rd_gzsum *sum, strobe_rd_gz_trailing *out) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return STROBE_EIO;
    int64_t size = (int64_t)st.st_size;
    /* The common case: one member (or the last of several whose data the sum covers) whose
     * trailer ends the file. */
    unsigned char tail[8];
    if (size >= 8 && read_at(fd, tail, 8, size - 8) == 8 && le32(tail) == sum->crc &&
        le32(tail + 4) == (uint32_t)sum->len)
        return 0;
    unsigned char *in = malloc(IN_BYTES), *scratch = malloc(OUT_BYTES);
    int rc = in && scratch ? 0 : STROBE_ENOMEM;
    int64_t end = size;
    if (rc == 0) rc = members_end(fd, size, in, scratch, &end);
    if (rc == 0 && end < size) {
        out->offset = end;
        out->bytes = size - end;
        out->zeros = all_zero(fd, end, size - end, scratch, OUT_BYTES);
    }
    free(in);
    free(scratch);
    return rc;
}
