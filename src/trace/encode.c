/* encode.c: a result encoded into memory through a memory sink (see encode.h). */
#include "encode.h"

#include <stdlib.h>

#include "json_writer.h"
#include "sink.h"
#include "strobe/error.h"
#include "writer.h"

int strobe__result_encode(const struct strobe_result *r, int perfetto, char **out, size_t *len) {
    strobe__sink ms;
    *out = NULL;
    *len = 0;
    int rc = strobe__sink_open_memory(&ms);
    if (rc) return rc;
    rc = perfetto ? strobe__perfetto_writer.write(r, &ms) : strobe__json_write_events(r, &ms);
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
