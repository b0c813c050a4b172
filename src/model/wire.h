/* wire.h: a loaded model as one flat buffer and back, so that a model read in one process can be
 * handed to another (strobe's commands under mpirun: each process reads its share of the ranks,
 * rank 0 gathers the models) without reading the trace again. The buffer holds the model's
 * scalars, its strings in id order and each column at its length; it is read back by the same
 * build of strobe only (no versioning: both ends are one binary). */
#ifndef STROBE_MODEL_WIRE_H
#define STROBE_MODEL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* A growing buffer that such flat records are written into, and a reader over one; every command
 * that hands its own records between threads or processes writes them with these. md_put appends
 * n bytes (nothing once out of memory: oom is then set, and the caller checks it at the end);
 * md_take returns the next n bytes of the record, or NULL past its end (bad is then set). */
typedef struct md_wbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} md_wbuf;
void md_put(md_wbuf *b, const void *src, size_t n);
void md_put_u64(md_wbuf *b, uint64_t v);

typedef struct md_rbuf {
    const uint8_t *p;
    size_t len, at;
    int bad;
} md_rbuf;
const uint8_t *md_take(md_rbuf *r, size_t n);
uint64_t md_take_u64(md_rbuf *r);

/* Writes model m (loaded by md_load, or failed: then its scalars and err only) into a malloc'd
 * buffer *out of *len bytes. @return 0 or STROBE_ENOMEM. */
int md_pack(const md_model *m, uint8_t **out, size_t *len);

/* Rebuilds into *m the model md_pack wrote to buf[0..len). @return 0, STROBE_ENOMEM, or
 * STROBE_EINVAL for a buffer md_pack did not write; md_free(m) in every case. */
int md_unpack(md_model *m, const uint8_t *buf, size_t len);

#endif
