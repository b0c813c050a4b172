/* encode.c: a result encoded into memory through a memory sink (see encode.h). */
#include "encode.h"

#include <stdlib.h>

#include "sink.h"
#include "strobe/error.h"
#include "writer.h"

int strobe__result_encode(const struct strobe_result *r, int perfetto, char **out, size_t *len) {
    strobe__sink ms;
    *out = NULL;
    *len = 0;
    int rc = strobe__sink_open_memory(&ms);
    if (rc) return rc;
    strobe__writer *w =
        strobe__writer_open(perfetto ? &strobe__perfetto_writer : &strobe__json_writer, &ms, 0);
    /* The JSON writer writes elements after those of a trace that has its header, with times
     * relative to the base the whole result would have. */
    if (w) w->base_ns = r->trace_start_ns - 1000;
    rc =
        w ? strobe__writer_put_result(w, r, perfetto ? STROBE__PUT_WHOLE : STROBE__PUT_EVENTS, NULL)
          : STROBE_ENOMEM;
    strobe__writer_free(w);
    char *text = strobe__sink_take_memory(&ms, len);
    if (rc == 0 && text == NULL) rc = STROBE_ENOMEM;
    if (rc) {
        free(text);
        *len = 0;
        return rc;
    }
    *out = text;
    return 0;
}
