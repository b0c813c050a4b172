/* profile_rd.h: CPU profiles in a JSON trace ("Profile" and "ProfileChunk" events, "ph": "P", as
 * Chrome writes them and strobe's JSON writer writes its CPU samples: src/trace/json_profile.h),
 * read back as the samples they hold: one "cpu_sample" instant per sample, on the chunk's pid and
 * tid at its time, named after its leaf function, with its "Call stack" (frames innermost first,
 * joined by ';', each "functionName (url:line)", "functionName (url)" or "functionName") and,
 * where the chunk gives the sample's line, its "Line" ("url:line").
 *
 * The reader (trace_reader.c) feeds each "P" event to strobe__rd_prof_feed and hands out the
 * samples it made, as JSON text that it reads like any element of the file, before the next
 * element. A profile's nodes and time carry over from chunk to chunk (by pid and id). */
#ifndef STROBE_READER_PROFILE_RD_H
#define STROBE_READER_PROFILE_RD_H

#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

typedef struct strobe__rd_prof strobe__rd_prof;

/* Takes event ev when it is a "Profile" or "ProfileChunk" event (*pp allocated on first use):
 * a chunk's samples become pending. @return 1 when ev was one (malformed parts are skipped), 0
 * when it is some other event, STROBE_ENOMEM. */
int strobe__rd_prof_feed(strobe__rd_prof **pp, const strobe_rd_event *ev);

/* The next pending sample as the JSON text of an event (valid until the next call), with the
 * index and offset of the chunk it came from. @return 1, or 0 when none is pending. */
int strobe__rd_prof_next(strobe__rd_prof *p, const char **text, size_t *len, uint64_t *index,
                         int64_t *offset);

/* Frees everything. Accepts NULL. */
void strobe__rd_prof_free(strobe__rd_prof *p);

#endif /* STROBE_READER_PROFILE_RD_H */
