/* pftrace_dec.h: converts a Perfetto protobuf trace (as strobe writes it, and other TrackEvent
 * traces) into Kineto-format Chrome trace JSON in memory, which the trace reader then reads.
 *
 * What is understood: TracePacket sequences with interned event names, categories, debug
 * annotation names and string values; incremental state; sequence-scoped incremental clocks
 * (ClockSnapshot is_incremental) and TracePacketDefaults; track descriptors (process, thread,
 * counter and plain tracks); TrackEvent slices (begin/end), instants, counters, flows and debug
 * annotations. Unknown fields and packets are skipped. Tracks with STROBE__PFT_KINETO_UUID uuids
 * (strobe's device and stream tracks) get back their Kineto pid and tid; the slice named
 * "strobe session" (category "Trace") gives back the trace's top-level metadata. A slice that
 * starts several flows (strobe's CUDA graph launch: one id per kernel) becomes one "s" with its
 * first id, and the ends of all of them "f" with that id, as Kineto writes a graph launch.
 *
 * Malformed input (a truncated varint, a length past the end, a wrong wire type, a field number
 * 0, a group) is an error with a message naming the byte offset; never a crash. Memory use is
 * proportional to the input's size. Reentrant. */
#ifndef STROBE_READER_PFTRACE_DEC_H
#define STROBE_READER_PFTRACE_DEC_H

#include <stddef.h>
#include <stdint.h>

/* Returns 1 when `data` (the first bytes of a file, decompressed) look like a Perfetto trace
 * rather than JSON: a Trace.packet tag (0x0a) first, and either no '{' or '[' after blank lines
 * or packets whose payloads read as protobuf. `complete`: data is the whole input (else a packet
 * that runs past its end is taken as plausible). */
int strobe_rd_pf_sniff(const void *data, size_t len, int complete);

/* Decodes the trace data[0..len) into JSON text: *json gets a malloc'ed, NUL-terminated buffer of
 * *json_len bytes, owned by the caller. On error, `err` (of `errsz` bytes) gets a message "byte
 * N: reason". With `cut` not NULL, input cut short inside a packet is read up to its last whole
 * packet and *cut gets the offset where the incomplete one starts (-1: the input is whole); with
 * `cut` NULL, or no whole packet, that is an error. @return 0, STROBE_EFORMAT or STROBE_ENOMEM. */
int strobe_rd_pf_to_json(const void *data, size_t len, char **json, size_t *json_len, char *err,
                         size_t errsz, int64_t *cut);

#endif /* STROBE_READER_PFTRACE_DEC_H */
