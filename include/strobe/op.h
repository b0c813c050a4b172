/* strobe/op.h: operator details on the hot path: input shapes, FLOPs, module scopes and memory
 * events. Each kind of detail is recorded only when the running session's config asks for it
 * (record_shapes, with_flops, with_modules, profile_memory); otherwise every call here costs one
 * relaxed load and a predicted branch, and with -DSTROBE_ENABLED=0 nothing at all.
 *
 * Like instrument.h, this header depends on nothing but <stdint.h> and strobe's export macro, so it
 * compiles in C, C++ and CUDA sources. Calls never fail: what cannot be recorded is counted.
 *
 * Contents: inputs (shapes, dtypes, scalars), FLOPs and the FLOP helpers, args of a range, module
 * scopes, memory events. */
#ifndef STROBE_OP_H
#define STROBE_OP_H

#include <stdint.h>
#include "export.h"
#include "instrument.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Inputs ------------------------------------------------------------------------------ */

/* What an operator input is. */
typedef enum strobe_input_kind {
    STROBE_INPUT_TENSOR = 0, /* dims + dtype: "Input Dims" [d0, d1, ...], "Input type" dtype */
    STROBE_INPUT_INT = 1,    /* a scalar: "Concrete Inputs" "42", "Input type" "Scalar" */
    STROBE_INPUT_DOUBLE = 2, /* a scalar: "Concrete Inputs" "0.5", "Input type" "Scalar" */
    STROBE_INPUT_BOOL = 3,   /* a scalar: "Concrete Inputs" "True", "Input type" "Bool" */
    STROBE_INPUT_NONE = 4    /* an absent optional input: type "", dims [] */
} strobe_input_kind;

/* One input of an operator. Everything is copied when recorded. */
typedef struct strobe_input {
    int kind;            /* strobe_input_kind */
    const char *dtype;   /* tensors: "float", "c10::Half", ...; scalars: NULL for the default
                            type name above, or a name of your own */
    const int64_t *dims; /* tensors: ndims sizes (NULL when ndims is 0) */
    int ndims;           /* at most 32 are kept (more are cut and counted) */
    int64_t int_value;   /* STROBE_INPUT_INT, STROBE_INPUT_BOOL (0 / 1) */
    double double_value; /* STROBE_INPUT_DOUBLE */
} strobe_input;

/* Most inputs kept per range; more are cut and counted (stats.truncated_details). */
#define STROBE_MAX_INPUTS 64

/* ---- FLOP helpers (pure functions, callable any time) ------------------------------------ */

/* [m, k] x [k, n]: 2*m*k*n. Negative sizes give 0. */
STROBE_API int64_t strobe_flops_matmul(int64_t m, int64_t k, int64_t n);
/* batched [b, m, k] x [b, k, n]: 2*b*m*k*n. */
STROBE_API int64_t strobe_flops_bmm(int64_t b, int64_t m, int64_t k, int64_t n);
/* 2-D convolution of an [n, c_in, h, w] input with a [c_out, c_in/groups, kh, kw] weight: 2 *
 * (output elements) * (c_in/groups) * kh * kw, the output size following stride, padding and
 * dilation as torch computes it. 0 for invalid parameters. */
STROBE_API int64_t strobe_flops_conv2d(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out,
                                       int64_t kh, int64_t kw, int64_t stride, int64_t padding,
                                       int64_t dilation, int64_t groups);
/* Element-wise add or multiply of tensors of `numel` elements: one FLOP per element. */
STROBE_API int64_t strobe_flops_elementwise(int64_t numel);
/* FLOPs of operator `op` from its inputs, as torch's with_flops computes them: "aten::mm",
 * "aten::matmul", "aten::addmm" (inputs: bias, a, b), "aten::bmm", "aten::baddbmm",
 * "aten::conv2d" / "aten::convolution" (input, weight, [bias, stride, padding, dilation,
 * groups] as INT scalars), "aten::add" / "aten::add_" / "aten::mul" / "aten::mul_" (the larger
 * tensor's elements). The "aten::" prefix is optional. @return the count, or -1 when the
 * operator is unknown or the shapes do not fit it. */
STROBE_API int64_t strobe_flops_from_inputs(const char *op, const strobe_input *inputs, int n);

#if STROBE_ENABLED

/* Internal: bits of strobe__active while a session records (bit 0: recording). */
#define STROBE__ACTIVE_SHAPES 0x2  /* record_shapes or with_flops */
#define STROBE__ACTIVE_FLOPS 0x4   /* with_flops */
#define STROBE__ACTIVE_MODULES 0x8 /* with_modules */
#define STROBE__ACTIVE_MEMORY 0x10 /* profile_memory */

STROBE_API void strobe__range_inputs(const strobe_input *inputs, int n);
STROBE_API void strobe__range_flops(int64_t flops);
STROBE_API void strobe__range_arg(const char *key, const char *json);
STROBE_API void strobe__module_push(const char *name);
STROBE_API void strobe__module_pop(void);
STROBE_API void strobe__memory(int32_t device, const void *ptr, int64_t bytes,
                               int64_t total_allocated, int64_t total_reserved);

/* Attaches inputs to the calling thread's innermost open range ("Input Dims", "Input type",
 * "Concrete Inputs"), when the session records shapes. With with_flops, a range whose FLOPs
 * were not set gets them from its name and these inputs (strobe_flops_from_inputs()). */
static inline void strobe_range_inputs(const strobe_input *inputs, int n) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_SHAPES)) strobe__range_inputs(inputs, n);
}

/* Sets the FLOP count of the calling thread's innermost open range ("flops"), when the session
 * counts FLOPs. A negative count says the range has none: it gets no "flops", and none is
 * computed from the inputs given after it. */
static inline void strobe_range_flops(int64_t flops) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_FLOPS)) strobe__range_flops(flops);
}

/* Attaches an arg to the calling thread's innermost open range, whatever the session's config:
 * `key` (1 to 128 bytes) and `json`, one JSON value as text (a number "42", a string "\"x\"", an
 * array or object; at most 4096 bytes), both copied. A key given twice keeps the last value. An
 * invalid or too long one is not recorded and is counted (stats.truncated_details); with no open
 * range it is counted as an orphan detail. */
static inline void strobe_range_arg(const char *key, const char *json) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_RECORDING)) strobe__range_arg(key, json);
}

/* Module scopes, per thread (as a model runtime walks its module tree): ranges that begin
 * inside get "Module Hierarchy", the pushed names joined by '.', when the session records
 * modules. The name is copied. A pop with nothing pushed is counted, never fatal. */
static inline void strobe_module_push(const char *name) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_MODULES)) strobe__module_push(name);
}
static inline void strobe_module_pop(void) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_MODULES)) strobe__module_pop();
}

/* A device for memory events: its strobe_device_type (result.h) and index (-1 for the CPU). */
#define STROBE_DEVICE(type, index)                                                                 \
    ((int32_t)(((uint32_t)(type) << 16) | ((uint32_t)(index)&0xffffu)))
#define STROBE_DEVICE_CPU_ID STROBE_DEVICE(0, -1)

/* Memory events for a user allocator, when the session profiles memory: an allocation or a free
 * of `bytes` at `ptr`, and the allocator's totals after it. Saved as "[memory]" instants
 * ("Bytes" negative on free) and as counter tracks of allocated and reserved bytes per device. */
static inline void strobe_record_alloc(int32_t device, const void *ptr, int64_t bytes,
                                       int64_t total_allocated, int64_t total_reserved) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_MEMORY))
        strobe__memory(device, ptr, bytes, total_allocated, total_reserved);
}
static inline void strobe_record_free(int32_t device, const void *ptr, int64_t bytes,
                                      int64_t total_allocated, int64_t total_reserved) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE() & STROBE__ACTIVE_MEMORY))
        strobe__memory(device, ptr, -bytes, total_allocated, total_reserved);
}

#else /* !STROBE_ENABLED */

#define STROBE_DEVICE(type, index)                                                                 \
    ((int32_t)(((uint32_t)(type) << 16) | ((uint32_t)(index)&0xffffu)))
#define STROBE_DEVICE_CPU_ID STROBE_DEVICE(0, -1)
static inline void strobe_range_inputs(const strobe_input *inputs, int n) {
    (void)inputs;
    (void)n;
}
static inline void strobe_range_flops(int64_t flops) {
    (void)flops;
}
static inline void strobe_range_arg(const char *key, const char *json) {
    (void)key;
    (void)json;
}
static inline void strobe_module_push(const char *name) {
    (void)name;
}
static inline void strobe_module_pop(void) {}
static inline void strobe_record_alloc(int32_t device, const void *ptr, int64_t bytes,
                                       int64_t total_allocated, int64_t total_reserved) {
    (void)device;
    (void)ptr;
    (void)bytes;
    (void)total_allocated;
    (void)total_reserved;
}
static inline void strobe_record_free(int32_t device, const void *ptr, int64_t bytes,
                                      int64_t total_allocated, int64_t total_reserved) {
    (void)device;
    (void)ptr;
    (void)bytes;
    (void)total_allocated;
    (void)total_reserved;
}

#endif /* STROBE_ENABLED */

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* STROBE_OP_H */
