/* record.h: the layout of the records the hot path writes into per-thread chunks.
 *
 * Every record starts with one 64-bit word: the record kind in the top 4 bits and a raw timestamp
 * (TSC ticks or CLOCK_MONOTONIC ns, both counted from boot, so below 2^60 for decades) in the low
 * 60 bits. Kinds with a payload append 64-bit words; names copied at run time follow as bytes,
 * padded to 8. A begin+end pair through a static call site takes 16 + 8 = 24 bytes.
 *
 *   END            8   word0
 *   BEGIN_SITE    16   word0, site pointer (its scope is in the site)
 *   BEGIN_NAME  16+n   word0, len | scope << 32, name bytes
 *   INSTANT_SITE  16   word0, site pointer
 *   INSTANT_NAME 16+n  word0, len, name bytes
 *   COUNTER_SITE  24   word0, site pointer, value (double bits)
 *   COUNTER_NAME 24+n  word0, len, value, name bytes
 *   CORR          24   word0 (no time), external id, user id: applies to the next begin/instant
 *   TRUNC          8   word0: the thread's buffer filled at this time; nothing follows
 */
#ifndef STROBE_RECORD_H
#define STROBE_RECORD_H

#include <stdint.h>

enum {
    STROBE__REC_END = 1,
    STROBE__REC_BEGIN_SITE = 2,
    STROBE__REC_BEGIN_NAME = 3,
    STROBE__REC_INSTANT_SITE = 4,
    STROBE__REC_INSTANT_NAME = 5,
    STROBE__REC_COUNTER_SITE = 6,
    STROBE__REC_COUNTER_NAME = 7,
    STROBE__REC_CORR = 8,
    STROBE__REC_TRUNC = 9
};

#define STROBE__REC_KIND_SHIFT 60
#define STROBE__REC_TS_MASK ((UINT64_C(1) << STROBE__REC_KIND_SHIFT) - 1)
#define STROBE__REC_WORD(kind, ts)                                                                 \
    (((uint64_t)(kind) << STROBE__REC_KIND_SHIFT) | ((ts)&STROBE__REC_TS_MASK))
#define STROBE__REC_KIND(word) ((unsigned)((word) >> STROBE__REC_KIND_SHIFT))
#define STROBE__REC_TS(word) ((word)&STROBE__REC_TS_MASK)

/* Longest name kept; longer names are cut and counted (stats.truncated_names). */
#define STROBE__MAX_NAME 1024u

/* Bytes a copied name occupies after its header words. */
#define STROBE__NAME_PAD(len) (((len) + 7u) & ~(uint32_t)7u)

#endif
