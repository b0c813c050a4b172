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

/* Writes model m (loaded by md_load, or failed: then its scalars and err only) into a malloc'd
 * buffer *out of *len bytes. @return 0 or STROBE_ENOMEM. */
int md_pack(const md_model *m, uint8_t **out, size_t *len);

/* Rebuilds into *m the model md_pack wrote to buf[0..len). @return 0, STROBE_ENOMEM, or
 * STROBE_EINVAL for a buffer md_pack did not write; md_free(m) in every case. */
int md_unpack(md_model *m, const uint8_t *buf, size_t len);

#endif
