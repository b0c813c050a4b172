/* test_input_lists.c: STROBE_INPUT_INT_LIST (strobe/op.h) through the public API: an int list
 * input gives "Input Dims" [], "Input type" "ScalarList" and "Concrete Inputs" "[2, 2]", as
 * torch 2.x writes a conv's stride; a list longer than 32 values is cut and counted. */
#include "check.h"
#include "result_check.h"
#include "strobe/strobe.h"

int main(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 8u << 20;
    c.prefault_bytes = 0;
    c.record_shapes = 1;
    start_or_die(&c);
    static const int64_t x[] = {1, 3, 8, 8}, stride[] = {2, 2}, empty_dims[1] = {0};
    int64_t many[40];
    for (int i = 0; i < 40; i++)
        many[i] = i;
    {
        STROBE_OP("aten::convolution");
        strobe_input in[4] = {{STROBE_INPUT_TENSOR, "float", x, 4, 0, 0.0},
                              {STROBE_INPUT_INT_LIST, NULL, stride, 2, 0, 0.0},
                              {STROBE_INPUT_INT_LIST, NULL, empty_dims, 0, 0, 0.0},
                              {STROBE_INPUT_INT_LIST, "IntList", many, 40, 0, 0.0}};
        strobe_range_inputs(in, 4);
    }
    strobe_result *r = stop_or_die();
    CHECK_EQ(check_wellformed(r), 0);
    long i = find_named(r, "aten::convolution");
    REQUIRE(i >= 0);
    CHECK_STR(strobe_event_arg(r, (size_t)i, "Input Dims"), "[[1, 3, 8, 8], [], [], []]");
    CHECK_STR(strobe_event_arg(r, (size_t)i, "Input type"),
              "[\"float\", \"ScalarList\", \"ScalarList\", \"IntList\"]");
    const char *concrete = strobe_event_arg(r, (size_t)i, "Concrete Inputs");
    CHECK(concrete != NULL && strncmp(concrete, "[\"\", \"[2, 2]\", \"[]\", \"[0, 1, 2,", 29) == 0);
    CHECK(concrete != NULL && strstr(concrete, ", 31]\"]") != NULL);
    CHECK_EQ(strobe_result_stats(r)->truncated_details, 1);
    strobe_result_free(r);
    return check_result();
}
