/* test_cli_flame.c: cli/flame.h as another output calls it (the HTML report embeds the SVG): the
 * defaults of a zeroed cli_flame_opts, an embedded graph with its own id (styles and background
 * scoped by it, no XML declaration), the options it refuses with STROBE_EINVAL and a message, the
 * diff of two models, a write error (STROBE_EIO), and the metric names.
 *
 * The traces (times in us, thread 1/1):
 *   one: outer (user_annotation) [0, 100) holding aten::mm [10, 40): self CPU outer 70, mm 30.
 *   two: the same with aten::mm [10, 70): outer 40, mm 60. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flame.h"
#include "model/model.h"
#include "strobe/error.h"

static const char one[] =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"outer\",\"ts\":0,\"dur\":100,"
    "\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":10,\"dur\":30,\"pid\":1,"
    "\"tid\":1}]}";
static const char two[] =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"outer\",\"ts\":0,\"dur\":100,"
    "\"pid\":1,\"tid\":1},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":10,\"dur\":60,\"pid\":1,"
    "\"tid\":1}]}";

/* Runs the writer into memory: its return code, and the text in *text (freed by the caller). */
static int render(const md_model *base, const md_model *test, const cli_flame_opts *o, char **text,
                  char *err, size_t errlen) {
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    REQUIRE(f != NULL);
    int rc = base ? cli_flame_svg_diff(f, base, test, o, err, errlen)
                  : cli_flame_svg(f, test, o, err, errlen);
    fclose(f);
    return rc;
}

static int has(const char *text, const char *s) {
    if (strstr(text, s)) return 1;
    fprintf(stderr, "  missing: %s\n", s);
    return 0;
}

int main(void) {
    md_model a, b;
    REQUIRE(md_load_mem(&a, one, sizeof one - 1, "one.json") == 0);
    REQUIRE(md_load_mem(&b, two, sizeof two - 1, "two.json") == 0);
    char err[256], *text = NULL;

    /* Defaults: a standalone document, self CPU time by stack, 1200 px. */
    cli_flame_opts o = {0};
    CHECK_EQ(render(NULL, &a, &o, &text, err, sizeof err), 0);
    CHECK(strncmp(text, "<?xml", 5) == 0);
    CHECK(has(text, "id=\"strobe-flame\" width=\"1200\""));
    CHECK(has(text, "<title>all (100.000 \xc2\xb5s, 100.00%)</title>"));
    CHECK(has(text, "data-o=\"0\" data-v=\"100000\" data-d=\"1\"><title>outer (100.000"));
    CHECK(has(text, "data-o=\"0\" data-v=\"30000\" data-d=\"2\"><title>aten::mm (30.000"));
    /* aten::mm: 30% of the 1180 px between the margins. */
    CHECK(has(text, "<rect x=\"10.00\" width=\"354.00\""));
    CHECK(has(text, "<svg") && has(text, "</svg>\n"));
    free(text);
    /* A NULL opts is the zeroed one. */
    CHECK_EQ(render(NULL, &a, NULL, &text, err, sizeof err), 0);
    CHECK(has(text, "id=\"strobe-flame\" width=\"1200\""));
    free(text);

    /* Embedded in a page beside other graphs: no XML declaration, everything scoped by the id. */
    o = (cli_flame_opts){.embed = 1, .id = "g2", .width = 600, .title = "T&", .source = "s<"};
    CHECK_EQ(render(NULL, &a, &o, &text, err, sizeof err), 0);
    CHECK(strncmp(text, "<svg", 4) == 0);
    CHECK(has(text, "id=\"g2\" width=\"600\""));
    CHECK(has(text, "#g2 text {"));
    CHECK(has(text, "<linearGradient id=\"g2-bg\""));
    CHECK(has(text, "fill=\"url(#g2-bg)\""));
    CHECK(has(text, "var ID = 'g2'"));
    CHECK(has(text, ">T&amp;</text>"));
    CHECK(has(text, ">s&lt;: self CPU time, total 100.000 \xc2\xb5s</text>"));
    CHECK(strstr(text, "strobe-flame") == NULL);
    free(text);

    /* Refused options: STROBE_EINVAL, a message, and nothing written. */
    const cli_flame_opts bad[] = {
        {.id = "a b"},
        {.id = "x\"y"},
        {.id = ""},
        {.width = 99},
        {.width = 100001},
        {.metric = -1},
        {.metric = CLI_FLAME_METRIC_COUNT},
        {.group_by = 2},
        {.min_width = -1},
        {.min_width = NAN},
        {.min_width = 1001},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        err[0] = '\0';
        CHECK_EQ(render(NULL, &a, &bad[k], &text, err, sizeof err), STROBE_EINVAL);
        CHECK(err[0] != '\0');
        CHECK_EQ(strlen(text), 0);
        free(text);
    }
    /* Without room for a message. */
    CHECK_EQ(render(NULL, &a, &bad[0], &text, NULL, 0), STROBE_EINVAL);
    free(text);

    /* The diff: TEST's values, BASE's beside them, red where grown, blue where shrunk. */
    CHECK_EQ(render(&a, &b, NULL, &text, err, sizeof err), 0);
    CHECK(has(text, "data-o=\"0\" data-v=\"60000\" data-d=\"2\" data-b=\"30000\"><title>aten::mm "
                    "(60.000 \xc2\xb5s, 60.00%; base 30.000 \xc2\xb5s, +30.000 \xc2\xb5s, "
                    "+100.00%)</title>"));
    CHECK(has(text, "fill=\"rgb(255,0,0)\"/><text")); /* +100%: full red */
    CHECK(has(text, "data-b=\"100000\"><title>outer (100.000 \xc2\xb5s, 100.00%; base 100.000 "
                    "\xc2\xb5s, +0.000 \xc2\xb5s, +0.00%)"));
    free(text);
    CHECK_EQ(render(&b, &a, NULL, &text, err, sizeof err), 0);
    CHECK(has(text, "-30.000 \xc2\xb5s, -50.00%)"));
    CHECK(has(text, "fill=\"rgb(110,110,237)\"/><text")); /* -50%: half way to blue */
    free(text);

    /* A write error: STROBE_EIO and a message with the system's reason. */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        err[0] = '\0';
        CHECK_EQ(cli_flame_svg(full, &a, NULL, err, sizeof err), STROBE_EIO);
        CHECK_STR(err, "writing the SVG: No space left on device");
        fclose(full);
    }

    /* Metric names, both ways. */
    for (int k = 0; k < CLI_FLAME_METRIC_COUNT; k++)
        CHECK_EQ(cli_flame_metric_parse(cli_flame_metric_name(k)), k);
    CHECK_EQ(cli_flame_metric_parse("self_cuda"), -1);
    CHECK_STR(cli_flame_metric_name(1), "self_device");

    md_free(&a);
    md_free(&b);
    return check_result();
}
