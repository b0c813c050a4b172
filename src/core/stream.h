/* stream.h: streaming output and the flight recorder (stage 2 and 3 of DESIGN.md for sessions
 * that do not keep every chunk until stop).
 *
 * Both hand a thread's full chunk to a background thread at the moment the thread takes a new one
 * (strobe__chunk_refill, the hot path's slow path, in chunks.c), through a lock-free queue, and
 * take the new chunk from a pool of recycled ones before the arena's bump allocator. Streaming
 * turns the queued chunks into events and appends them to a file; the flight recorder keeps the
 * newest ones in a ring and recycles the oldest. Neither ever makes a recording thread wait: when
 * no chunk is free, records are dropped and counted, and recording resumes on the next record that
 * finds a free chunk. */
#ifndef STROBE_STREAM_H
#define STROBE_STREAM_H

#include <stdint.h>

#include "state.h"

struct strobe_result;

/* Checks the streaming and flight-recorder fields of a config. @return 0, STROBE_EINVAL or
 * STROBE_ENOTSUP. */
int strobe__stream_check_config(const strobe_config *cfg);

/* Creates the session's stream or flight recorder when its config asks for one (s->stream stays
 * NULL otherwise): opens the output file and its format's writer, installs the signal handler.
 * Called by start before threads may attach. @return 0, STROBE_EIO (the file cannot be
 * written), STROBE_ENOMEM or STROBE_ESYS. */
int strobe__stream_start(strobe__session *s);

/* Writes the stream's header and starts the background thread, once the window is open (s->start
 * is final then). @return 0, the output's error or STROBE_ESYS. Does nothing for a session without
 * a stream. */
int strobe__stream_run(strobe__session *s);

/* Finishes at stop, after quiescence: stops the background thread, then (streaming) writes every
 * remaining record and closes the ranges still open at `stop_ns` (strobe__stream_complete ends
 * the file), or (flight
 * recorder) links the kept chunks back into their threads' chunk lists so that strobe__collect
 * builds the result from the window. In streaming mode the threads' chunk lists are emptied: the
 * result gets no CPU events; the file stays open for strobe__stream_complete.
 * @return 0 or the first error (STROBE_EIO, STROBE_ENOMEM). */
int strobe__stream_finish(strobe__session *s, const strobe__clock_conv *conv, int64_t stop_ns);

/* Completes a stream file after the device backends merged their activity into `r` (NULL: the
 * result could not be made): appends r's events through the stream's writer as a saved result's
 * are written (device tracks, events and flows), the session's span, then the footer with the
 * stream's counts, stats, warnings and metadata (in Perfetto on the session slice), and closes the
 * file. Does nothing for a flight recorder or a session without a stream. @return 0 or
 * STROBE_EIO, STROBE_ENOMEM. */
int strobe__stream_complete(strobe__session *s, struct strobe_result *r);

/* Adds the stream's counts to a collected result (after strobe__stream_finish and collect). */
void strobe__stream_add_stats(strobe__session *s, struct strobe_result *r);

/* Frees the stream (after strobe__stream_finish). Accepts a session without one. */
void strobe__stream_free(strobe__session *s);

/* Writes the flight recorder's window to `path` (strobe_flight_dump's contract). The caller keeps
 * the session alive (session lock held). @return 0, STROBE_ENOSESSION, STROBE_ENOMEM or
 * STROBE_EIO. */
int strobe__flight_dump(strobe__session *s, const char *path);

#endif
