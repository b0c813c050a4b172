/* flops.c: FLOP counts of the common operators, as torch's with_flops computes them (a multiply
 * and an add count as two FLOPs; element-wise ops as one per element).
 *
 * Contents: saturating arithmetic, the helpers (matmul, bmm, conv2d, elementwise), and
 * strobe_flops_from_inputs, which reads the sizes out of an operator's recorded inputs.
 *
 * Every count saturates at INT64_MAX rather than wrapping: a count that big is meaningless, but a
 * wrapped (negative or small) one would silently corrupt a summary's totals. */
#include <stdint.h>
#include <string.h>

#include "strobe/op.h"

/* ---- Saturating arithmetic (non-negative operands) -------------------------------------- */

static int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* The product of n non-negative factors, saturated. A zero factor gives 0 even after an earlier
 * saturation, which is the exact answer. */
static int64_t sat_product(const int64_t *f, int n) {
    int64_t r = 1;
    for (int i = 0; i < n; i++)
        r = sat_mul(r, f[i]);
    return r;
}

/* ---- Helpers ----------------------------------------------------------------------------- */

int64_t strobe_flops_matmul(int64_t m, int64_t k, int64_t n) {
    if (m < 0 || k < 0 || n < 0) return 0;
    const int64_t f[] = {2, m, k, n};
    return sat_product(f, 4);
}

int64_t strobe_flops_bmm(int64_t b, int64_t m, int64_t k, int64_t n) {
    if (b < 0 || m < 0 || k < 0 || n < 0) return 0;
    const int64_t f[] = {2, b, m, k, n};
    return sat_product(f, 5);
}

/* One output dimension as torch computes it: floor((in + 2*padding - dilation*(k-1) - 1) /
 * stride) + 1. @return it, or 0 or less where no output fits. Overflow is handled so that a
 * huge input saturates and a huge kernel gives no output. */
static int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t padding, int64_t dilation) {
    int64_t span, pad2, reach;
    if (__builtin_mul_overflow(padding, 2, &pad2) || __builtin_add_overflow(in, pad2, &span))
        span = INT64_MAX;
    /* reach = dilation*(k-1) + 1: how far one kernel application spans. */
    if (__builtin_mul_overflow(dilation, k - 1, &reach) || __builtin_add_overflow(reach, 1, &reach))
        return 0;
    if (span < reach) return 0;
    return (span - reach) / stride + 1;
}

int64_t strobe_flops_conv2d(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out,
                            int64_t kh, int64_t kw, int64_t stride, int64_t padding,
                            int64_t dilation, int64_t groups) {
    if (n < 0 || c_in < 0 || h < 0 || w < 0 || c_out < 0 || kh < 1 || kw < 1 || stride < 1 ||
        padding < 0 || dilation < 1 || groups < 1 || c_in % groups != 0)
        return 0;
    int64_t h_out = conv_out(h, kh, stride, padding, dilation);
    int64_t w_out = conv_out(w, kw, stride, padding, dilation);
    if (h_out <= 0 || w_out <= 0) return 0;
    const int64_t f[] = {2, n, c_out, h_out, w_out, c_in / groups, kh, kw};
    return sat_product(f, 8);
}

int64_t strobe_flops_elementwise(int64_t numel) {
    return numel < 0 ? 0 : numel;
}

/* ---- From an operator's inputs ----------------------------------------------------------- */

/* inputs[i] as a tensor of exactly `ndims` non-negative sizes. @return its dims, or NULL. */
static const int64_t *tensor_dims(const strobe_input *inputs, int n, int i, int ndims) {
    if (i >= n) return NULL;
    const strobe_input *in = &inputs[i];
    if (in->kind != STROBE_INPUT_TENSOR || in->ndims != ndims || in->dims == NULL) return NULL;
    for (int d = 0; d < ndims; d++)
        if (in->dims[d] < 0) return NULL;
    return in->dims;
}

/* inputs[i] as an INT scalar, or `dflt` where it is absent or of another kind (torch's defaults
 * stand in for omitted optional arguments). */
static int64_t int_arg(const strobe_input *inputs, int n, int i, int64_t dflt) {
    if (i >= n || inputs[i].kind != STROBE_INPUT_INT) return dflt;
    return inputs[i].int_value;
}

/* strobe_flops_from_inputs()'s documented answer (strobe/op.h) for an operator it does not count
 * or shapes that do not fit it: a lookup's "no answer", not an error code. */
#define NOT_COUNTED ((int64_t)-1)

/* [m, k] x [k, n] from inputs a and b. @return FLOPs, or NOT_COUNTED. */
static int64_t mm_from(const strobe_input *inputs, int n, int a, int b) {
    const int64_t *x = tensor_dims(inputs, n, a, 2), *y = tensor_dims(inputs, n, b, 2);
    if (x == NULL || y == NULL || x[1] != y[0]) return NOT_COUNTED;
    return strobe_flops_matmul(x[0], x[1], y[1]);
}

/* [b, m, k] x [b, k, n] from inputs a and b. @return FLOPs, or NOT_COUNTED. */
static int64_t bmm_from(const strobe_input *inputs, int n, int a, int b) {
    const int64_t *x = tensor_dims(inputs, n, a, 3), *y = tensor_dims(inputs, n, b, 3);
    if (x == NULL || y == NULL || x[0] != y[0] || x[2] != y[1]) return NOT_COUNTED;
    return strobe_flops_bmm(x[0], x[1], x[2], y[2]);
}

/* input [n, c, h, w], weight [c_out, c/groups, kh, kw], then INT scalars: stride, padding and
 * dilation at 3, 4 and 5 (one value for both dimensions), groups at groups_at. */
static int64_t conv_from(const strobe_input *inputs, int n, int groups_at) {
    const int64_t *x = tensor_dims(inputs, n, 0, 4), *wt = tensor_dims(inputs, n, 1, 4);
    if (x == NULL || wt == NULL) return NOT_COUNTED;
    int64_t groups = int_arg(inputs, n, groups_at, 1);
    /* The weight's input channels times groups must be the input's channels. */
    int64_t c;
    if (groups < 1 || __builtin_mul_overflow(wt[1], groups, &c) || c != x[1]) return NOT_COUNTED;
    return strobe_flops_conv2d(x[0], x[1], x[2], x[3], wt[0], wt[2], wt[3],
                               int_arg(inputs, n, 3, 1), int_arg(inputs, n, 4, 0),
                               int_arg(inputs, n, 5, 1), groups);
}

/* The FLOPs of an element-wise operation on the largest tensor input, or NOT_COUNTED with none. */
static int64_t largest_numel(const strobe_input *inputs, int n) {
    int64_t best = -1;
    for (int i = 0; i < n; i++) {
        const strobe_input *in = &inputs[i];
        if (in->kind != STROBE_INPUT_TENSOR || in->ndims < 0 || (in->ndims > 0 && !in->dims))
            continue;
        int64_t numel = 1;
        for (int d = 0; d < in->ndims && numel >= 0; d++)
            numel = in->dims[d] < 0 ? -1 : sat_mul(numel, in->dims[d]);
        if (numel > best) best = numel;
    }
    return best < 0 ? NOT_COUNTED : strobe_flops_elementwise(best);
}

int64_t strobe_flops_from_inputs(const char *op, const strobe_input *inputs, int n) {
    if (op == NULL || n < 0 || (inputs == NULL && n > 0)) return NOT_COUNTED;
    if (strncmp(op, "aten::", 6) == 0) op += 6;
    if (strcmp(op, "mm") == 0) return mm_from(inputs, n, 0, 1);
    if (strcmp(op, "addmm") == 0) return mm_from(inputs, n, 1, 2);
    if (strcmp(op, "bmm") == 0) return bmm_from(inputs, n, 0, 1);
    if (strcmp(op, "baddbmm") == 0) return bmm_from(inputs, n, 1, 2);
    if (strcmp(op, "matmul") == 0) {
        /* 2-D x 2-D is mm and 3-D x 3-D with equal batches is bmm. Vector and broadcast
         * cases are not counted. */
        if (n >= 2 && inputs[0].kind == STROBE_INPUT_TENSOR && inputs[0].ndims == 3)
            return bmm_from(inputs, n, 0, 1);
        return mm_from(inputs, n, 0, 1);
    }
    if (strcmp(op, "conv2d") == 0) return conv_from(inputs, n, 6);
    if (strcmp(op, "convolution") == 0) {
        /* (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
         * a transposed convolution follows another formula, so it is not counted. */
        if (n > 6 && inputs[6].kind == STROBE_INPUT_BOOL && inputs[6].int_value != 0)
            return NOT_COUNTED;
        return conv_from(inputs, n, 8);
    }
    if (strcmp(op, "add") == 0 || strcmp(op, "add_") == 0 || strcmp(op, "mul") == 0 ||
        strcmp(op, "mul_") == 0)
        return largest_numel(inputs, n);
    return NOT_COUNTED;
}
