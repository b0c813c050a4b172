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
 *
 * Operator details (op.h) follow the record they belong to, or stand alone:
 *   SHAPES      16+n   word0 (no time, low bits: input count), payload bytes n, payload: per
 *                      input one word (kind | ndims << 8 | dtype length << 16), then kind-specific
 *                      words (dims, or the scalar), then the dtype bytes padded to 8
 *   FLOPS         16   word0 (no time), the count: applies to the innermost open range
 *   STACK       8+8n   word0 (no time, low bits: n), n return addresses: follows a begin (or a
 *                      MEM record that says so)
 *   PERF        8+8n   word0 (no time, low bits: n | end flag << 8), n counter values: follows a
 *                      begin (the values at begin) or precedes an end (the values at end)
 *   MEM           48   word0, address, bytes (negative: free), total allocated, total reserved,
 *                      device (strobe_device_type << 16 | index, in the low 32 bits; bit 32,
 *                      STROBE__MEM_STACK: a STACK record follows, in the same reserve, that is
 *                      this memory event's call stack rather than a range's; bits 33..63: a
 *                      sampled event's weight, STROBE__MEM_WEIGHT_SHIFT)
 *   EXT        16+n    word0, subkind | payload bytes << 8, payload: module push (name bytes),
 *                      module pop (none), backend event (start ns, end ns, debug handle, name
 *                      length | backend length << 32, the two names' bytes padded to 8), payload
 *                      (a value type, the value's bits: applies to the next begin or instant,
 *                      written with it and with its time), args (pairs "key\0json\0", copied:
 *                      apply to the next begin, written with it and with its time);
 *                      arg (key bytes, a NUL, one JSON value's bytes: an arg of the
 *                      innermost open range, strobe_range_arg());
 *                      torch (4 words: sequence number, forward thread id, record function
 *                      id, the thread's own RecordFunction thread id: torch's ids of the op
 *                      that the begin written with it in the same reserve starts)
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
    STROBE__REC_TRUNC = 9,
    STROBE__REC_SHAPES = 10,
    STROBE__REC_FLOPS = 11,
    STROBE__REC_STACK = 12,
    STROBE__REC_PERF = 13,
    STROBE__REC_MEM = 14,
    STROBE__REC_EXT = 15
};

/* Subkinds of STROBE__REC_EXT. */
enum {
    STROBE__EXT_MODULE_PUSH = 1,
    STROBE__EXT_MODULE_POP = 2,
    STROBE__EXT_BACKEND = 3,
    STROBE__EXT_PAYLOAD = 4,
    STROBE__EXT_ARGS = 5,
    STROBE__EXT_ARG = 6,
    STROBE__EXT_TORCH = 7
};

/* In a MEM record's device word: the STACK record right after it belongs to this memory event
 * (the allocating call stack of `strobe record --heap-stacks`). */
#define STROBE__MEM_STACK (UINT64_C(1) << 32)

/* In a MEM record's device word, from this bit up: the bytes a sampled allocation or free stands
 * for (`strobe record --heap`'s sampling by bytes) as the bit pattern of a positive IEEE single
 * (its 31 low bits: the sign is 0); 0: the event is no sample. */
#define STROBE__MEM_WEIGHT_SHIFT 33

/* Longest key and JSON value of an EXT arg record; longer ones are not recorded (counted in
 * stats.truncated_details). */
#define STROBE__MAX_ARG_KEY 128u
#define STROBE__MAX_ARG_JSON 4096u

/* Input words of a SHAPES record. */
#define STROBE__MAX_DIMS 32u
#define STROBE__MAX_DTYPE 64u
#define STROBE__MAX_STACK 64u

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
