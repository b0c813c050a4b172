/* details.h: turning the operator-detail records (record.h: SHAPES, MEM, EXT backend payloads)
 * into the args Kineto's traces use, at stop. Used by collect.c. */
#ifndef STROBE_DETAILS_H
#define STROBE_DETAILS_H

#include <stddef.h>
#include <stdint.h>

#include "strobe/op.h"

/* A growable text buffer (malloc'ed; `s` is NUL-terminated while len > 0). */
typedef struct strobe__buf {
    char *s;
    size_t len, cap;
} strobe__buf;

/* Grows a dynamic array (*a) of `size`-byte items to hold `need` items, doubling its capacity
 * (*cap). @return 0 or STROBE_ENOMEM (the array unchanged). */
int strobe__grow(void **a, size_t *cap, size_t need, size_t size);

/* @return 0 or STROBE_ENOMEM. */
int strobe__buf_put(strobe__buf *b, const char *s, size_t len);
/* Appends s as a JSON string (quoted, escaped). */
int strobe__buf_put_json_string(strobe__buf *b, const char *s, size_t len);
void strobe__buf_free(strobe__buf *b);

/* Decodes a SHAPES payload of `count` inputs (`bytes` long) into in[0..count) (dims and dtype
 * point into the payload and into dims_store, which must hold STROBE__MAX_DIMS * count values)
 * and formats the three args: dims ("[[2, 3], []]"), types ("[\"float\", \"Scalar\"]") and
 * concrete ("[\"\", \"1\"]"). Each buffer is reset first. A payload that does not parse (it
 * cannot, unless memory was overwritten) gives STROBE_EFORMAT. @return 0, STROBE_EFORMAT or
 * STROBE_ENOMEM. */
int strobe__format_inputs(const uint64_t *payload, size_t bytes, uint32_t count, strobe_input *in,
                          int64_t *dims_store, char (*dtype_store)[65], strobe__buf *dims,
                          strobe__buf *types, strobe__buf *concrete);

/* Torch's c10::DeviceType number of a strobe_device_type ("Device Type" of memory events). */
int strobe__c10_device_type(int strobe_type);
/* "cpu", "cuda", ... for a strobe_device_type. */
const char *strobe__device_name(int strobe_type);

#endif
