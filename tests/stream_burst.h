/* stream_burst.h: the streaming tests' burst: ranges recorded faster than the streamer drains
 * them, into a buffer of two 4 KiB chunks, so that records are dropped (and must be counted).
 * test_stream.c (test_drops) and test_stream_accounting.c (test_stats) record it. Include after
 * check.h. */
#ifndef STROBE_TEST_STREAM_BURST_H
#define STROBE_TEST_STREAM_BURST_H

#include "strobe/strobe.h"

/* The name of the burst's ranges. */
#define STREAM_BURST_NAME "burst"

/* Streams `pairs` ranges named STREAM_BURST_NAME to `path` (chunk_bytes 4096, buffer_bytes
 * 8192) and stops. @return the session's result (the test stops on any failure). */
static strobe_result *stream_burst(const char *path, int pairs) {
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.chunk_bytes = 4096;
    cfg.buffer_bytes = 8192;
    cfg.stream_path = path;
    REQUIRE(strobe_start(&cfg) == 0);
    STROBE_SITE_DEFINE(s, STREAM_BURST_NAME, STROBE_RECORD_SCOPE_FUNCTION);
    for (int i = 0; i < pairs; i++) {
        strobe_range_begin_site(&s);
        strobe_range_end();
    }
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    return r;
}

#endif
