/* test_flops.c: the FLOP helpers and strobe_flops_from_inputs, on values worked out by hand in
 * the comments: each formula, torch's conv output size, invalid parameters (0 from a helper, -1
 * from from_inputs where the shapes do not fit), and saturation at INT64_MAX. */
#include <stdint.h>

#include "check.h"
#include "strobe/op.h"

static strobe_input tensor(const int64_t *dims, int ndims) {
    strobe_input in = {.kind = STROBE_INPUT_TENSOR, .dtype = "float", .dims = dims, .ndims = ndims};
    return in;
}
static strobe_input scalar(int64_t v) {
    strobe_input in = {.kind = STROBE_INPUT_INT, .int_value = v};
    return in;
}
static strobe_input flag(int v) {
    strobe_input in = {.kind = STROBE_INPUT_BOOL, .int_value = v};
    return in;
}
static strobe_input none(void) {
    strobe_input in = {.kind = STROBE_INPUT_NONE};
    return in;
}

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_helpers(void) {
    CHECK_EQ(strobe_flops_matmul(2, 3, 4), 48); /* 2*2*3*4 */
    CHECK_EQ(strobe_flops_matmul(0, 5, 5), 0);
    CHECK_EQ(strobe_flops_matmul(-1, 3, 4), 0); /* negative sizes give 0 */
    CHECK_EQ(strobe_flops_matmul(2, 3, -4), 0);
    CHECK_EQ(strobe_flops_bmm(2, 3, 4, 5), 240); /* 2*2*3*4*5 */
    CHECK_EQ(strobe_flops_bmm(-2, 3, 4, 5), 0);
    CHECK_EQ(strobe_flops_elementwise(10), 10);
    CHECK_EQ(strobe_flops_elementwise(0), 0);
    CHECK_EQ(strobe_flops_elementwise(-5), 0);

    /* Saturation: 2 * 2^20 * 2^20 * 2^21 = 2^62 fits; twice that, 2^63, does not. */
    CHECK_EQ(strobe_flops_matmul(1 << 20, 1 << 20, 1 << 21), INT64_C(4611686018427387904));
    CHECK_EQ(strobe_flops_matmul(1 << 20, 1 << 20, 1 << 22), INT64_MAX);
    CHECK_EQ(strobe_flops_matmul(INT64_MAX, 1, 1), INT64_MAX); /* 2 * INT64_MAX */
    CHECK_EQ(strobe_flops_matmul(INT64_MAX, INT64_MAX, 0), 0); /* exact: 0 */
    CHECK_EQ(strobe_flops_bmm(INT64_C(1) << 32, 1 << 16, 1 << 16, 1), INT64_MAX); /* 2^65 */
}

static void test_conv2d(void) {
    /* 3x3, stride 1, padding 1 keeps 32x32: (32 + 2 - 2 - 1)/1 + 1 = 32.
     * 2 * n1 * co16 * 32 * 32 * ci3 * 3 * 3 = 2 * 16 * 1024 * 27 = 884736. */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1), 884736);
    /* Stride 2, no padding: floor((32 - 2 - 1)/2) + 1 = 14 + 1 = 15. 2*16*15*15*27 = 194400. */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 2, 0, 1, 1), 194400);
    /* Dilation 2, no padding: (32 - 2*2 - 1)/1 + 1 = 28. 2*16*28*28*27 = 677376. */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, 0, 2, 1), 677376);
    /* Groups 4: 8/4 = 2 input channels per output. 2 * n2 * co8 * 10 * 10 * 2 * 9 = 57600. */
    CHECK_EQ(strobe_flops_conv2d(2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 4), 57600);
    /* A 1x3 kernel on 5x7: h_out 5, w_out (7 - 2 - 1) + 1 = 5. 2 * 5 * 5 * 1 * 3 = 150. */
    CHECK_EQ(strobe_flops_conv2d(1, 1, 5, 7, 1, 1, 3, 1, 0, 1, 1), 150);
    /* A kernel exactly the input's size: one output. 2 * 4 * 4 * 3 * 3... c_in 1: 2*4*9 = 72. */
    CHECK_EQ(strobe_flops_conv2d(1, 1, 3, 3, 4, 3, 3, 1, 0, 1, 1), 72);

    /* Invalid parameters give 0. */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 0, 1, 1, 1), 0);  /* stride 0 */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 0), 0);  /* groups 0 */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 2), 0);  /* 3 % 2 != 0 */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, 1, 0, 1), 0);  /* dilation 0 */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 32, 32, 16, 3, 3, 1, -1, 1, 1), 0); /* padding -1 */
    CHECK_EQ(strobe_flops_conv2d(1, 3, 2, 2, 16, 5, 5, 1, 0, 1, 1), 0);    /* (2-4-1) < 0 */
    CHECK_EQ(strobe_flops_conv2d(-1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1), 0); /* n < 0 */

    /* Saturation: a huge batch, and a huge input (its padded size saturates first). */
    CHECK_EQ(strobe_flops_conv2d(INT64_MAX / 2, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1), INT64_MAX);
    CHECK_EQ(strobe_flops_conv2d(1, 1, INT64_MAX, 1, 1, 1, 1, 1, 1, 1, 1), INT64_MAX);
    /* A huge dilation reaches past any input: no output. */
    CHECK_EQ(strobe_flops_conv2d(1, 1, 8, 8, 1, 3, 3, 1, 0, INT64_MAX, 1), 0);
}

static void test_matmuls_from_inputs(void) {
    const int64_t a23[] = {2, 3}, b34[] = {3, 4}, b54[] = {5, 4}, bias4[] = {4}, v3[] = {3};
    const int64_t a234[] = {2, 3, 4}, b245[] = {2, 4, 5}, b345[] = {3, 4, 5}, b255[] = {2, 5, 5};
    const int64_t bias235[] = {2, 3, 5}, neg23[] = {-2, 3};
    const int64_t big[] = {INT64_C(1) << 32, INT64_C(1) << 32};

    strobe_input mm[] = {tensor(a23, 2), tensor(b34, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", mm, 2), 48); /* 2*2*3*4 */
    CHECK_EQ(strobe_flops_from_inputs("mm", mm, 2), 48);       /* prefix optional */
    CHECK_EQ(strobe_flops_from_inputs("aten::matmul", mm, 2), 48);
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", mm, 1), -1); /* one input */
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", NULL, 0), -1);
    strobe_input bad_inner[] = {tensor(a23, 2), tensor(b54, 2)}; /* 3 != 5 */
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", bad_inner, 2), -1);
    strobe_input negative[] = {tensor(neg23, 2), tensor(b34, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", negative, 2), -1);
    strobe_input not_tensor[] = {scalar(2), tensor(b34, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", not_tensor, 2), -1);
    strobe_input mm3d[] = {tensor(a234, 3), tensor(b245, 3)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", mm3d, 2), -1); /* mm is 2-D only */
    /* 2 * 2^32 * 2^32 * 2^32 = 2^97: saturated. */
    strobe_input huge[] = {tensor(big, 2), tensor(big, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mm", huge, 2), INT64_MAX);

    /* addmm: (bias, a, b). */
    strobe_input addmm[] = {tensor(bias4, 1), tensor(a23, 2), tensor(b34, 2), scalar(1), scalar(1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::addmm", addmm, N(addmm)), 48);
    CHECK_EQ(strobe_flops_from_inputs("aten::addmm", mm, 2), -1); /* no third input */

    /* bmm and matmul 3-D: 2*2*3*4*5 = 240. */
    strobe_input bmm[] = {tensor(a234, 3), tensor(b245, 3)};
    CHECK_EQ(strobe_flops_from_inputs("aten::bmm", bmm, 2), 240);
    CHECK_EQ(strobe_flops_from_inputs("aten::matmul", bmm, 2), 240);
    strobe_input bmm_batch[] = {tensor(a234, 3), tensor(b345, 3)}; /* batch 2 vs 3 */
    CHECK_EQ(strobe_flops_from_inputs("aten::bmm", bmm_batch, 2), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::matmul", bmm_batch, 2), -1);
    strobe_input bmm_inner[] = {tensor(a234, 3), tensor(b255, 3)}; /* 4 vs 5 */
    CHECK_EQ(strobe_flops_from_inputs("aten::bmm", bmm_inner, 2), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::bmm", mm, 2), -1); /* 2-D */
    strobe_input baddbmm[] = {tensor(bias235, 3), tensor(a234, 3), tensor(b245, 3)};
    CHECK_EQ(strobe_flops_from_inputs("aten::baddbmm", baddbmm, 3), 240);

    /* matmul with a vector is not counted. */
    strobe_input vec[] = {tensor(v3, 1), tensor(v3, 1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::matmul", vec, 2), -1);
    strobe_input mat_vec[] = {tensor(a23, 2), tensor(v3, 1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::matmul", mat_vec, 2), -1);
}

static void test_convs_from_inputs(void) {
    const int64_t x[] = {1, 3, 32, 32}, w[] = {16, 3, 3, 3};
    const int64_t xg[] = {2, 8, 10, 10}, wg[] = {8, 2, 3, 3}, wg_bad[] = {8, 3, 3, 3};
    const int64_t bias[] = {16}, w3d[] = {16, 3, 3};

    /* Defaults (stride 1, padding 0, dilation 1, groups 1): 30x30 out.
     * 2 * 16 * 30 * 30 * 27 = 777600. */
    strobe_input bare[] = {tensor(x, 4), tensor(w, 4)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", bare, 2), 777600);
    /* Stride 1, padding 1: 884736 (as in test_conv2d). */
    strobe_input pad1[] = {tensor(x, 4), tensor(w, 4), tensor(bias, 1), scalar(1),
                           scalar(1),    scalar(1),    scalar(1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", pad1, N(pad1)), 884736);
    /* Stride 2, padding 0, the bias absent: 194400. */
    strobe_input s2[] = {tensor(x, 4), tensor(w, 4), none(), scalar(2), scalar(0)};
    CHECK_EQ(strobe_flops_from_inputs("conv2d", s2, N(s2)), 194400);
    /* Groups 4 at index 6: 57600. */
    strobe_input grouped[] = {tensor(xg, 4), tensor(wg, 4), none(),   scalar(1),
                              scalar(1),     scalar(1),     scalar(4)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", grouped, N(grouped)), 57600);
    /* Weight [8, 3, ...] with 4 groups wants 12 input channels, not 8. */
    strobe_input mismatched[] = {tensor(xg, 4), tensor(wg_bad, 4), none(),   scalar(1),
                                 scalar(1),     scalar(1),         scalar(4)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", mismatched, N(mismatched)), -1);
    /* Without the groups, the same weight does not fit the input's 8 channels either. */
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", grouped, 2), -1);
    /* Stride 0 is an invalid parameter: the helper's 0. */
    strobe_input s0[] = {tensor(x, 4), tensor(w, 4), none(), scalar(0)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", s0, N(s0)), 0);
    strobe_input w_not_4d[] = {tensor(x, 4), tensor(w3d, 3)};
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", w_not_4d, 2), -1);

    /* aten::convolution: (input, weight, bias, stride, padding, dilation, transposed,
     * output_padding, groups). Groups come from index 8, not 6. */
    strobe_input conv[] = {tensor(x, 4), tensor(w, 4), tensor(bias, 1), scalar(1), scalar(1),
                           scalar(1),    flag(0),      scalar(0),       scalar(1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::convolution", conv, N(conv)), 884736);
    strobe_input conv_g[] = {tensor(xg, 4), tensor(wg, 4), none(),    scalar(1), scalar(1),
                             scalar(1),     flag(0),       scalar(0), scalar(4)};
    CHECK_EQ(strobe_flops_from_inputs("aten::convolution", conv_g, N(conv_g)), 57600);
    /* Read as conv2d, index 6 is a bool, not an INT: groups stay 1 and the weight misfits. */
    CHECK_EQ(strobe_flops_from_inputs("aten::conv2d", conv_g, N(conv_g)), -1);
    /* A transposed convolution follows another formula: not counted. */
    strobe_input conv_t[] = {tensor(x, 4), tensor(w, 4), none(),    scalar(1), scalar(1),
                             scalar(1),    flag(1),      scalar(0), scalar(1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::convolution", conv_t, N(conv_t)), -1);
}

static void test_elementwise_from_inputs(void) {
    const int64_t a23[] = {2, 3}, b3[] = {3}, a45[] = {4, 5}, v7[] = {7}, empty[] = {0, 5};
    const int64_t big[] = {INT64_C(1) << 32, INT64_C(1) << 32};

    /* The larger tensor's elements: [2, 3] + [3] broadcast = 6. */
    strobe_input add[] = {tensor(a23, 2), tensor(b3, 1), scalar(1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::add", add, N(add)), 6);
    /* In place with a scalar: 4*5 = 20. */
    strobe_input add_[] = {tensor(a45, 2), scalar(2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::add_", add_, 2), 20);
    /* A 0-dim tensor has one element; [7] has 7. */
    strobe_input mul[] = {tensor(NULL, 0), tensor(v7, 1)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mul", mul, 2), 7);
    CHECK_EQ(strobe_flops_from_inputs("mul_", mul, 2), 7);
    strobe_input zero[] = {tensor(empty, 2), tensor(empty, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mul", zero, 2), 0);
    /* 2^64 elements: saturated. */
    strobe_input huge[] = {tensor(big, 2), scalar(3)};
    CHECK_EQ(strobe_flops_from_inputs("aten::mul", huge, 2), INT64_MAX);
    /* No tensor at all. */
    strobe_input scalars[] = {scalar(1), scalar(2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::add", scalars, 2), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::add", NULL, 0), -1);
}

static void test_unknown(void) {
    const int64_t a23[] = {2, 3};
    strobe_input in[] = {tensor(a23, 2)};
    CHECK_EQ(strobe_flops_from_inputs("aten::relu", in, 1), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::", in, 1), -1);
    CHECK_EQ(strobe_flops_from_inputs("", in, 1), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::mmm", in, 1), -1);
    CHECK_EQ(strobe_flops_from_inputs("other::mm", in, 1), -1); /* only aten:: is stripped */
    CHECK_EQ(strobe_flops_from_inputs(NULL, in, 1), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::add", NULL, 3), -1);
    CHECK_EQ(strobe_flops_from_inputs("aten::add", in, -1), -1);
}

int main(void) {
    test_helpers();
    test_conv2d();
    test_matmuls_from_inputs();
    test_convs_from_inputs();
    test_elementwise_from_inputs();
    test_unknown();
    return check_result();
}
