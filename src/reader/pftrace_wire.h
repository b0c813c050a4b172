/* pftrace_wire.h: the facts about Perfetto's protobuf trace format that the reader's decoder
 * (pftrace_dec.c) needs: wire types, the field numbers of the messages it reads (from Perfetto's
 * public .proto files), and the uuid layout strobe's writer gives Kineto's device tracks.
 *
 * The reader keeps its own copy of these rather than including the writer's encoder
 * (src/util/pftrace_enc.h): the layers read and write the same format, but neither depends on the
 * other's code. The uuid marks must stay equal to the encoder's STROBE__PFT_KINETO_* (test_perfetto
 * round-trips device tracks through both). */
#ifndef STROBE_READER_PFTRACE_WIRE_H
#define STROBE_READER_PFTRACE_WIRE_H

#include <stdint.h>

/* Wire types. */
enum { PFW_VARINT = 0, PFW_I64 = 1, PFW_LEN = 2, PFW_SGROUP = 3, PFW_EGROUP = 4, PFW_I32 = 5 };

/* Trace */
#define PFW_TRACE_PACKET 1

/* TracePacket */
#define PFW_PACKET_CLOCK_SNAPSHOT 6
#define PFW_PACKET_TIMESTAMP 8
#define PFW_PACKET_SEQUENCE_ID 10 /* trusted_packet_sequence_id */
#define PFW_PACKET_TRACK_EVENT 11
#define PFW_PACKET_INTERNED_DATA 12
#define PFW_PACKET_SEQUENCE_FLAGS 13
#define PFW_PACKET_STATE_CLEARED 41 /* incremental_state_cleared */
#define PFW_PACKET_TIMESTAMP_CLOCK 58
#define PFW_PACKET_DEFAULTS 59
#define PFW_PACKET_TRACK_DESCRIPTOR 60
#define PFW_SEQ_INCREMENTAL_STATE_CLEARED 1 /* SequenceFlags bit */

/* TracePacketDefaults, TrackEventDefaults */
#define PFW_DEFAULTS_CLOCK 58
#define PFW_DEFAULTS_TRACK_EVENT 11
#define PFW_TE_DEFAULTS_TRACK 11

/* ClockSnapshot, ClockSnapshot.Clock */
#define PFW_SNAPSHOT_CLOCK 1
#define PFW_CLOCK_ID 1
#define PFW_CLOCK_TIMESTAMP 2
#define PFW_CLOCK_INCREMENTAL 3
#define PFW_BUILTIN_BOOTTIME 6

/* InternedData: its tables, and the iid and string of an entry in each. */
#define PFW_INTERNED_CATEGORIES 1
#define PFW_INTERNED_NAMES 2
#define PFW_INTERNED_ANN_NAMES 3
#define PFW_INTERNED_STRINGS 29
#define PFW_INTERNED_IID 1
#define PFW_INTERNED_STR 2
/* CPU samples: TracePacket.perf_sample (PerfSample: pid 2, tid 3, callstack_iid 4) and the
 * interned tables it uses (InternedData: function_names 5, frames 6, callstacks 7; Frame: iid 1,
 * function_name_id 2; Callstack: iid 1, frame_ids 2). */
#define PFW_PACKET_PERF_SAMPLE 66
#define PFW_PS_PID 2
#define PFW_PS_TID 3
#define PFW_PS_CALLSTACK_IID 4
#define PFW_INTERNED_FUNCTION_NAMES 5
#define PFW_INTERNED_FRAMES 6
#define PFW_INTERNED_CALLSTACKS 7
#define PFW_FRAME_FUNCTION_NAME_ID 2
#define PFW_CALLSTACK_FRAME_IDS 2

/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define PFW_TD_UUID 1
#define PFW_TD_NAME 2
#define PFW_TD_PROCESS 3
#define PFW_TD_THREAD 4
#define PFW_TD_PARENT 5
#define PFW_TD_COUNTER 8
#define PFW_TD_STATIC_NAME 10
#define PFW_TD_SIBLING_RANK 12
#define PFW_PROC_PID 1
#define PFW_PROC_NAME 6
#define PFW_THREAD_PID 1
#define PFW_THREAD_TID 2
#define PFW_THREAD_NAME 5

/* TrackEvent */
#define PFW_TE_CATEGORY_IIDS 3
#define PFW_TE_DEBUG_ANNOTATIONS 4
#define PFW_TE_TYPE 9
#define PFW_TE_NAME_IID 10
#define PFW_TE_TRACK 11
#define PFW_TE_CATEGORIES 22
#define PFW_TE_NAME 23
#define PFW_TE_COUNTER_VALUE 30
#define PFW_TE_FLOW_IDS_OLD 36
#define PFW_TE_TERM_FLOW_IDS_OLD 42
#define PFW_TE_DOUBLE_COUNTER 44
#define PFW_TE_FLOW_IDS 47
#define PFW_TE_TERM_FLOW_IDS 48
enum { PFW_TYPE_BEGIN = 1, PFW_TYPE_END = 2, PFW_TYPE_INSTANT = 3, PFW_TYPE_COUNTER = 4 };

/* DebugAnnotation */
#define PFW_ANN_NAME_IID 1
#define PFW_ANN_BOOL 2
#define PFW_ANN_UINT 3
#define PFW_ANN_INT 4
#define PFW_ANN_DOUBLE 5
#define PFW_ANN_STRING 6
#define PFW_ANN_POINTER 7
#define PFW_ANN_LEGACY_JSON 9
#define PFW_ANN_NAME 10
#define PFW_ANN_STRING_IID 17

/* strobe's uuids for Kineto's device tracks: mark << 56 | (pid & 0xFFFFFF) << 32 | (uint32)tid,
 * and for their processes mark << 56 | (pid & 0xFFFFFF). */
#define PFW_KINETO_MARK UINT64_C(0x5A)
#define PFW_KINETO_PROC_MARK UINT64_C(0x5B)

#endif /* STROBE_READER_PFTRACE_WIRE_H */
