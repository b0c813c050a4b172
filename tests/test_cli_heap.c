/* test_cli_heap.c: model/heap.h, strobe record --heap's allocation sites read back from a trace:
 * two processes whose sites share a stack are one site (sums and peaks added), the totals add up,
 * the order by peak and by bytes, the weight of a sampled [memory] event (and the summary's
 * memory columns weighed by it), and bad JSON refused.
 *
 * The trace: process 1 has sites A (main <- a) and B; process 2 has A again; one operator
 * "op" holds two [memory] events of 500 and 2000 bytes sampled at a rate of 1000. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/heap.h"
#include "model/model.h"
#include "rows.h"
#include "strobe/error.h"

static const char trace[] =
    "{\"strobe_heap\": ["
    "{\"pid\":1,\"mode\":\"sampled\",\"sample_rate\":1000,\"calls\":12,\"bytes\":7000,"
    "\"temporary\":3,\"leaked\":100,\"peak\":5000,\"site_count\":3,\"missed_calls\":1,"
    "\"missed_bytes\":10,\"unmapped_blocks\":0,\"sites\":["
    "{\"calls\":5,\"bytes\":4000,\"peak\":300,\"leaked\":100,\"temporary\":2,"
    "\"stack\":[\"a (x.c:1)\",\"main (x.c:9)\"]},"
    "{\"calls\":6,\"bytes\":2990,\"peak\":2990,\"leaked\":0,\"temporary\":1,"
    "\"stack\":[\"b \\\"q\\\" (x.c:2)\"]}]},"
    "{\"pid\":2,\"mode\":\"sampled\",\"sample_rate\":500,\"calls\":2,\"bytes\":20,"
    "\"temporary\":0,\"leaked\":20,\"peak\":20,\"site_count\":1,\"missed_calls\":0,"
    "\"missed_bytes\":0,\"unmapped_blocks\":0,\"sites\":["
    "{\"calls\":2,\"bytes\":20,\"peak\":20,\"leaked\":20,\"temporary\":0,"
    "\"stack\":[\"a (x.c:1)\",\"main (x.c:9)\"]}]}],"
    "\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":0,\"dur\":100,\"pid\":1,\"tid\":1},"
    "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"ts\":10,"
    "\"pid\":1,\"tid\":1,\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":1,\"Bytes\":500,"
    "\"Total Allocated\":500,\"Total Reserved\":500}},"
    "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"ts\":20,"
    "\"pid\":1,\"tid\":1,\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":2,\"Bytes\":2000,"
    "\"Total Allocated\":2500,\"Total Reserved\":2500}}]}";

int main(void) {
    md_model m;
    REQUIRE(md_load_mem(&m, trace, sizeof trace - 1, "heap.json") == 0);
    REQUIRE(m.heap_json != NULL);

    md_heap h;
    CHECK_EQ(md_heap_read(m.heap_json, &h), 0);
    CHECK_EQ(h.processes, 2);
    CHECK_EQ(h.sample_rate, 1000);
    CHECK_EQ(h.calls, 14);
    CHECK_EQ(h.bytes, 7020);
    CHECK_EQ(h.peak, 5020);
    CHECK_EQ(h.leaked, 120);
    CHECK_EQ(h.temporary, 3);
    CHECK_EQ(h.missed_calls, 1);
    CHECK_EQ(h.site_count, 4);
    CHECK_EQ(h.n, 2);
    /* By peak: B (2990) before A (300 + 20); by bytes: A (4020) first. */
    md_heap_sort(&h, 1);
    CHECK_STR(h.sites[0].frames[0], "b \"q\" (x.c:2)");
    CHECK_EQ(h.sites[1].calls, 7);
    CHECK_EQ(h.sites[1].bytes, 4020);
    CHECK_EQ(h.sites[1].peak, 320);
    CHECK_EQ(h.sites[1].nframes, 2);
    CHECK_STR(h.sites[1].frames[1], "main (x.c:9)");
    md_heap_sort(&h, 0);
    CHECK_STR(h.sites[0].frames[0], "a (x.c:1)");
    md_heap_free(&h);

    /* The weights: below the rate, bytes / (1 - exp(-bytes / rate)), frees too; at or above it,
     * the bytes. */
    CHECK_EQ(md_heap_rate(m.heap_json), 1000);
    CHECK_EQ(md_heap_weigh(500, 1000), llround(500 / (1 - exp(-0.5))));
    CHECK_EQ(md_heap_weigh(-500, 1000), -llround(500 / (1 - exp(-0.5))));
    CHECK_EQ(md_heap_weigh(2000, 1000), 2000);
    CHECK_EQ(md_heap_weigh(500, 0), 500);

    /* The summary's memory columns weigh the sampled events: 1271 + 2000 bytes in "op". */
    char *text = NULL;
    size_t len = 0, rows = 0;
    FILE *out = open_memstream(&text, &len);
    REQUIRE(out != NULL);
    CHECK_EQ(cli_summary_json(out, &m, 0, &rows), 0);
    fclose(out);
    CHECK(strstr(text, "3271") != NULL);
    if (strstr(text, "3271") == NULL) printf("summary: %s\n", text);
    free(text);

    /* Bad JSON: refused, nothing kept. */
    CHECK_EQ(md_heap_read("{\"sites\": [{\"stack\": [1}]}", &h), STROBE_EINVAL);
    CHECK_EQ(h.n, 0);
    CHECK_EQ(md_heap_read("[1]", &h), STROBE_EINVAL);
    CHECK_EQ(md_heap_read(NULL, &h), 1);
    md_free(&m);
    return check_result();
}
