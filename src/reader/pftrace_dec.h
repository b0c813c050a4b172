/* pftrace_dec.h: a streaming decoder of Perfetto protobuf traces (as strobe writes them, and other
 * TrackEvent traces) into Kineto-format Chrome trace JSON text. The trace reader reads the text
 * around the event array as it reads a JSON file, and takes the elements with their fields
 * (direct mode), so that it need not read their text again; strobe convert takes the text.
 *
 * What is understood: TracePacket sequences with interned event names, categories, debug
 * annotation names and string values; incremental state; sequence-scoped incremental clocks
 * (ClockSnapshot is_incremental) and TracePacketDefaults; track descriptors (process, thread,
 * counter and plain tracks); TrackEvent slices (begin/end), instants, counters, flows and debug
 * annotations. Unknown fields and packets are skipped. Tracks with strobe's Kineto uuids (its
 * device and stream tracks, pftrace_wire.h) get back their Kineto pid and tid; the slice named
 * "strobe session" (category "Trace") gives back the trace's top-level metadata. A slice that
 * starts several flows (strobe's CUDA graph launch: one id per kernel) becomes one "s" with its
 * first id, and the ends of all of them "f" with that id, as Kineto writes a graph launch.
 *
 * How. Packets are read one at a time, from a gzFile or from memory, through a buffer the size of
 * the largest packet. The JSON text comes out as it is decoded: the top-level members (from the
 * session slice) and "traceEvents", then an element per track descriptor (thread and process
 * names, sort indices), instant, counter and flow at once, and a complete event ("X") per slice
 * when its end is read; slices still open at the end of the input close there, at the trace's
 * last time. So the elements come in the order of the ends, not of the starts (each carries the
 * index of its begin), and a track's metadata comes with its descriptor. What is kept between
 * packets: each sequence's interned strings (dropped when its incremental state is cleared), the
 * track descriptors, the slices open on each track (their names, annotations and flows), and the
 * ids of fanned-out flows.
 *
 * Malformed input (a truncated varint, a length past the end, a wrong wire type, a field number
 * 0, a group) is an error with a message "byte N: reason", N the offset in the decompressed
 * input; never a crash. An input cut inside a packet can be read up to its last whole packet.
 * Separate decoders are independent; one is used by one thread at a time. */
#ifndef STROBE_READER_PFTRACE_DEC_H
#define STROBE_READER_PFTRACE_DEC_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "gz_tail.h"

/* Returns 1 when `data` (the first bytes of a file, decompressed) look like a Perfetto trace
 * rather than JSON: a Trace.packet tag (0x0a) first, and either no '{' or '[' after blank lines
 * or packets whose payloads read as protobuf. `complete`: data is the whole input (else a packet
 * that runs past its end is taken as plausible). */
int strobe_rd_pf_sniff(const void *data, size_t len, int complete);

typedef struct strobe_rd_pfs strobe_rd_pfs;

/* A decoder over gz (borrowed: it must stay open until strobe_rd_pfs_close(), which does not
 * close it) or over data[0..len) (which must outlive the decoder). A packet larger than
 * max_packet bytes (0: 256 MiB) is an error. With allow_cut, input that ends inside a Trace field
 * is read up to the last whole one (see strobe_rd_pfs_cut()); without, or when no field was
 * whole, that is an error. @return the decoder, or NULL when out of memory. */
strobe_rd_pfs *strobe_rd_pfs_open_gz(gzFile gz, size_t max_packet, int allow_cut);
strobe_rd_pfs *strobe_rd_pfs_open_mem(const void *data, size_t len, size_t max_packet,
                                      int allow_cut);

/* Frees the decoder (not its gzFile). Accepts NULL. */
void strobe_rd_pfs_close(strobe_rd_pfs *s);

/* Direct mode, for the trace reader: the elements of traceEvents are handed out one at a time
 * with their fields (strobe_rd_pfs_next_elem()), and strobe_rd_pfs_read() hands out only the text
 * around them (the top level before the event array, and after it). Call right after opening. */
void strobe_rd_pfs_set_direct(strobe_rd_pfs *s);

/* The next piece of the JSON text, decoding packets as needed: *text points to it, valid until
 * the next call on the decoder, and *off (may be NULL) gets its offset in the whole text (which,
 * in direct mode, also counts the elements handed out apart). @return its length (> 0), 0 at the
 * end of the text, or a negative error (STROBE_EFORMAT, STROBE_EIO, STROBE_ENOMEM; see
 * strobe_rd_pfs_errmsg()); an error is sticky. In direct mode, the text stops before the first
 * element not yet handed out: it is read up to the event array's "[", then the elements, then
 * the rest. */
long strobe_rd_pfs_read(strobe_rd_pfs *s, const void **text, int64_t *off);

/* One element of traceEvents as the decoder wrote it: its JSON text, and the fields that text
 * holds, so that the reader need not read the text again. Offsets (_off) are into text; a
 * length of SIZE_MAX is an absent field. */
typedef struct strobe_rd_pf_elem {
    uint64_t index;   /* in the order of the begins: a slice's complete event has the index of its
                         begin, its flows the next ones, so that sorting by index gives the order the
                         writer wrote the slices in, parents before their children, as a JSON file
                         has it. The indices of all elements are 0, 1, 2 ... in some order. */
    int64_t offset;   /* offset of its first byte in the whole JSON text */
    const char *text; /* "{...}", valid until the next call on the decoder */
    size_t len;
    char ph;        /* 'X', 'i', 'C', 'M', 's' or 'f' */
    int plain;      /* the fields below say all the text says: name and cat are written as they
                       are (no escapes), id fits an int64, ts is above INT64_MIN. Else the text
                       is to be read as JSON. */
    unsigned depth; /* nesting depth of the text: 1 for an object of scalars */
    int64_t pid, tid, ts_ns, dur_ns; /* dur_ns: of 'X' */
    uint64_t id;                     /* of 's' and 'f' */
    size_t name_off, name_len, cat_off, cat_len, args_off, args_len;
    const char *bp, *scope; /* "e" on 'f', "t" on 'i', else NULL */
} strobe_rd_pf_elem;

/* Direct mode: the next element of traceEvents, decoding packets as needed; *e is valid until
 * the next call on the decoder. @return 1, 0 when the event array ended (its "]" and the rest
 * are read with strobe_rd_pfs_read()), or a negative error as strobe_rd_pfs_read(). */
int strobe_rd_pfs_next_elem(strobe_rd_pfs *s, const strobe_rd_pf_elem **e);

/* Decodes until the first text is ready, so that an input that is no trace at all fails here.
 * @return 0 or a negative error, as strobe_rd_pfs_read(). */
int strobe_rd_pfs_prime(strobe_rd_pfs *s);

/* Starts again from the beginning of the input (gzrewind). @return 0 or STROBE_EIO. */
int strobe_rd_pfs_rewind(strobe_rd_pfs *s);

/* The last error as "byte N: reason" (or a reason alone, for a read error or out of memory), ""
 * when there is none; its offset, -1 when none applies. */
const char *strobe_rd_pfs_errmsg(const strobe_rd_pfs *s);
int64_t strobe_rd_pfs_error_offset(const strobe_rd_pfs *s);

/* What gzread() gave of a gzFile input since the last (re)start (gz_tail.h). */
const strobe_rd_gzsum *strobe_rd_pfs_gz_sum(const strobe_rd_pfs *s);

/* Where the incomplete field that ends a cut input starts (known once the text was read to its
 * end), or -1 when the input was whole. */
int64_t strobe_rd_pfs_cut(const strobe_rd_pfs *s);

/* Decodes the trace data[0..len) into JSON text at once: *json gets a malloc'ed, NUL-terminated
 * buffer of *json_len bytes, owned by the caller. On error, `err` (of `errsz` bytes) gets a
 * message "byte N: reason". With `cut` not NULL, input cut short inside a packet is read up to
 * its last whole packet and *cut gets the offset where the incomplete one starts (-1: the input
 * is whole); with `cut` NULL, or no whole packet, that is an error.
 * @return 0, STROBE_EFORMAT or STROBE_ENOMEM. */
int strobe_rd_pf_to_json(const void *data, size_t len, char **json, size_t *json_len, char *err,
                         size_t errsz, int64_t *cut);

#endif /* STROBE_READER_PFTRACE_DEC_H */
