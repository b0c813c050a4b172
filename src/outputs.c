/* outputs.c: the writers the core writes through (see src/core/output.h). */
#include "core/output.h"

#include <stdlib.h>

#include "strobe/error.h"
#include "strobe/result.h"
#include "trace/json_writer.h"
#include "trace/sink.h"
#include "trace/writer.h"

static int save(struct strobe_result *r, const char *path) {
    return strobe_result_save(r, path);
}

static int encode(const struct strobe_result *r, int perfetto, char **out, size_t *len) {
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

const strobe__output_ops strobe__outputs = {.save = save, .encode = encode};
