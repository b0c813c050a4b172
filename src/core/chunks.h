/* chunks.h: the session's buffer arena and the chunks it is handed out in (chunks.c). Start maps
 * one arena per session; a recording thread takes one chunk at a time from it (the hot path's slow
 * path, strobe__chunk_refill). A streaming or flight-recorder session (stream.h) recycles chunks:
 * a thread's full chunk is queued for the background thread, which returns it to a pool that the
 * refill takes from before the arena's bump allocator. Nothing here ever makes a recording thread
 * wait: when no chunk is free, records are dropped and counted. */
#ifndef STROBE_CORE_CHUNKS_H
#define STROBE_CORE_CHUNKS_H

#include <stddef.h>

#include "state.h"

/* Maps s->arena (s->arena_bytes) and faults in its first `prefault_bytes`. @return 0 or
 * STROBE_ENOMEM. */
int strobe__arena_map(strobe__session *s, size_t prefault_bytes);
/* Unmaps s->arena. */
void strobe__arena_unmap(strobe__session *s);

/* Takes a new chunk for t (the current one is full): from the arena, or for a streaming or
 * flight-recorder session from the pool of recycled chunks first, queueing the full one for the
 * background thread. Writes a TRUNC record and marks the thread full when no chunk is left,
 * counting the lost record as a dropped event when `counts`; with a streaming session, a later
 * call with the thread full resumes recording when a chunk is free. Lock-free; async-signal-safe.
 * @return 1 when a chunk with `need` free bytes is current. */
int strobe__chunk_refill(strobe__tstate *t, size_t need, int counts);

/* Ends t's recording for want of buffer: writes the TRUNC record (when t has a chunk) into the
 * reserve kept for it and sends t's records to the slow path, which drops and counts them. */
void strobe__mark_full(strobe__tstate *t);

struct strobe__stream;
/* Returns a chunk to a streaming session's free pool (the background thread or stop only). */
void strobe__chunk_pool_push(struct strobe__stream *st, strobe__chunk *c);
/* Takes every chunk queued by the recording threads, oldest first. */
strobe__chunk *strobe__chunk_queue_take(struct strobe__stream *st);

#endif /* STROBE_CORE_CHUNKS_H */
