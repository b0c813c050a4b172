/* gz_tail.h: data after the last member of a gzip'd input.
 *
 * zlib's gzread(), like gzip, reads concatenated gzip members as one stream and silently drops
 * what follows the last member when it does not start another one (gzip says "trailing garbage
 * ignored"). The reader sums what it decompressed (strobe_rd_gzsum) and, at the end of the input,
 * asks strobe_rd_gz_tail() whether anything was dropped: when the file ends with the trailer of a
 * member that holds all the data read (its CRC-32 and length match), nothing was, and the check
 * costs one 8-byte read; otherwise the members are walked once to find where the gzip data ends. */
#ifndef STROBE_READER_GZ_TAIL_H
#define STROBE_READER_GZ_TAIL_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* What was decompressed from a gzip'd input, and whether its end was reached. */
typedef struct strobe_rd_gzsum {
    uint32_t crc; /* CRC-32 of the decompressed bytes */
    uint64_t len; /* their count */
    int eof;      /* gzread() reported the end of the input */
} strobe_rd_gzsum;

/* Adds n decompressed bytes at p to the sum. */
static inline void strobe_rd_gzsum_add(strobe_rd_gzsum *s, const void *p, size_t n) {
    s->crc = (uint32_t)crc32(s->crc, (const Bytef *)p, (uInt)n);
    s->len += n;
}

/* Data after the last gzip member. */
typedef struct strobe_rd_gz_trailing {
    int64_t offset; /* where it starts in the file */
    int64_t bytes;  /* how many bytes; 0: none */
    int zeros;      /* all of them are zero bytes (padding) */
} strobe_rd_gz_trailing;

/* Looks for data after the last gzip member of the gzip file open at fd (read with pread(), so
 * that the descriptor's offset is left alone), whose decompressed data read to its end is summed
 * in sum. @return 0 with *out filled (bytes 0 when there is none), or a negative STROBE_E* code
 * when the file cannot be read or walked (then nothing is known). */
int strobe_rd_gz_tail(int fd, const strobe_rd_gzsum *sum, strobe_rd_gz_trailing *out);

#endif
