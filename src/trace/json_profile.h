/* json_profile.h: CPU samples in JSON as Chrome writes CPU profiles into its traces, for the JSON
 * writer (json_writer.c).
 *
 * A thread's samples become one profile: a "Profile" event ("ph": "P", an "id" of its own, its
 * args.data.startTime) and "ProfileChunk" events with the same id, each holding
 * args.data.cpuProfile {nodes: the call tree's nodes first used in the chunk, each {id, parent,
 * callFrame {functionName, url, scriptId, lineNumber, columnNumber}}, samples: each sample's leaf
 * node, lines: each sample's line (0: unknown)} and args.data.timeDeltas (microseconds since the
 * previous sample; the first since startTime). Chrome DevTools' performance panel shows them as
 * the thread's JavaScript-style profile (flame chart, bottom-up), Perfetto's JSON importer as CPU
 * samples with callstacks (cpu_profile_stack_sample). src/reader reads them back as the
 * "cpu_sample" instants they came from.
 *
 * A frame of a sample's "Call stack" ("name (file)" or "name (file:line)") is a node whose
 * functionName is the name, url the file and lineNumber the line less one (Chrome counts from 0;
 * -1 where there is none); a frame without " (" is all functionName. Samples are kept until the
 * writer's end, where the profiles are written (a sample has no end to wait for, and a profile's
 * nodes are shared by its samples). */
#ifndef STROBE_TRACE_JSON_PROFILE_H
#define STROBE_TRACE_JSON_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "writer.h"

/* The category Chrome gives its profile events. */
#define STROBE_JSON_PROFILE_CAT "disabled-by-default-v8.cpu_profiler"

typedef struct strobe__json_profiles strobe__json_profiles;

/* A sample's Python frame as one frame per function, as its native frames are (their line is cut
 * when they are symbolized: core/collect.c), for every writer of samples (this file's profiles,
 * the Perfetto writer's PerfSample frames). Where t[0..n) is a Python frame as torch names it,
 * "file(LINE): function" (core/pyframes.c writes them so), writes "function (file)" to `out` (n + 1
 * bytes suffice), sets *line to LINE and returns the length written; else returns 0. */
size_t strobe__py_frame_by_function(const char *t, size_t n, char *out, uint32_t *line);

/* Adds sample e (a "cpu_sample" instant: its track, time, "Call stack" and "Line" args) to the
 * profile of its track; *pp is allocated on first use. @return 0 or STROBE_ENOMEM. */
int strobe__json_profiles_add(strobe__json_profiles **pp, const strobe__wr_event *e);

/* Writes every profile's events to w's sink, each line starting with ",\n  " but the very first
 * of the event array (*first set: none; cleared after). @return 0 or the sink's error. */
int strobe__json_profiles_write(strobe__json_profiles *p, strobe__writer *w, int *first);

/* Frees everything. Accepts NULL. */
void strobe__json_profiles_free(strobe__json_profiles *p);

#endif /* STROBE_TRACE_JSON_PROFILE_H */
