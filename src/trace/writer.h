/* writer.h: the interface every trace output format implements.
 *
 * Each format is one writer: a small table of function pointers (like uftrace's dump ops), so that
 * adding a format (Perfetto protobuf, streaming output) adds a writer and a line in the table in
 * save.c, and touches no other writer. Writers read a finished result and format it into a sink;
 * opening, compressing, and atomically replacing the file is save.c's job, the same for all. */
#ifndef STROBE_WRITERS_WRITER_H
#define STROBE_WRITERS_WRITER_H

#include "result_internal.h"
#include "sink.h"

typedef struct strobe__writer_ops {
    /* A short name for logs and tests: "json". */
    const char *name;
    /* Returns 1 when this writer produces the format that `path` asks for, judging by its suffix.
     * A trailing ".gz" asks for compression, which save.c applies to any format. */
    int (*accepts_path)(const char *path);
    /* Writes the whole result to `out`. @return 0 or the sink's error (STROBE_EIO,
     * STROBE_ENOMEM). The writer does not close the sink. */
    int (*write)(const strobe_result *r, strobe__sink *out);
} strobe__writer_ops;

/* Chrome trace JSON in Kineto's schema (json_writer.c). Accepts every path: it is the default. */
extern const strobe__writer_ops strobe__json_writer;

/* Perfetto's protobuf trace format (perfetto_writer.c): paths ending in ".pftrace" or
 * ".perfetto-trace", optionally followed by ".gz". */
extern const strobe__writer_ops strobe__perfetto_writer;

/* Returns the writer for `path`: the first in the table whose accepts_path() says yes. Never
 * NULL (the JSON writer takes any path). */
const strobe__writer_ops *strobe__writer_for_path(const char *path);

#endif /* STROBE_WRITERS_WRITER_H */
