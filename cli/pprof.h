/* pprof.h: a writer of pprof's profile format (github.com/google/pprof, proto/profile.proto), the
 * gzip'd protobuf that `go tool pprof`, Pyroscope, Parca and Grafana read, for `strobe export`.
 *
 * A profile is built in memory: its sample types, then its samples, each a stack of frames (leaf
 * first) and one value per sample type. A frame is one of strobe's frame names, and the writer
 * turns each distinct name into one location, with its function, file, line and mapping:
 *   - "file.py(12): fn", a Python frame of a "Call stack": function fn of file.py, line 12;
 *   - "fn (file)" or "fn (file:line)", a native frame of a CPU sample or an allocation site:
 *     function fn, of source file `file` (at that line), or of the mapping (module) `file`
 *     where that is a shared object or a program (no '.' in its last component, no line);
 *   - anything else (an operator, a range, a runtime call): a function of that name, no file.
 * A function's system_name is "fn (file)" (or "fn (module)") where the frame names a file or a
 * module: as that differs from its name, pprof shows the name as it is (it would otherwise take a
 * name with '<' or "::" for C++ and cut its template parameters: Python's "<module>" would show
 * empty). Other frames' system_name is their name.
 * Frames without a module of their own share mapping 1, named by the caller. Not thread-safe. */
#ifndef STROBE_CLI_PPROF_H
#define STROBE_CLI_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/strpool.h"
#include "util/strtab.h"
#include "util/u64map.h"

/* The most sample types a profile has here (heap profiles have three). */
#define CLI_PPROF_MAX_TYPES 4

/* A growing protobuf message. */
typedef struct cli_pb {
    uint8_t *p;
    size_t n, cap;
    int oom;
} cli_pb;

typedef struct cli_pprof_loc {
    uint64_t function, mapping;
    int64_t line;
} cli_pprof_loc;

typedef struct cli_pprof_fn {
    int64_t name, system_name, file;
} cli_pprof_fn;

typedef struct cli_pprof {
    strobe__pool pool;
    strobe__strtab strs;    /* the profile's string table; "" is 0 */
    strobe__strtab frames;  /* frame names: location id - 1 */
    strobe__strtab modules; /* modules named by frames: mapping id - 2 */
    cli_pprof_loc *locs;    /* per frame id */
    size_t loc_cap;
    strobe__u64map fn_ids; /* (name << 32 | file) -> function id */
    cli_pprof_fn *fns;     /* per function id - 1 */
    size_t nfn, fn_cap;
    cli_pb samples;    /* the encoded Sample messages, each with its field key */
    cli_pb msg, sub;   /* scratch for a message being encoded, and for one inside it */
    uint64_t *scratch; /* values of a packed field being encoded */
    size_t scratch_cap;
    int64_t types[CLI_PPROF_MAX_TYPES][2]; /* type, unit string ids */
    size_t ntypes;
    int64_t period_type[2], period, default_type, time_nanos, duration_nanos;
    int64_t comments[4];
    size_t ncomments;
    int64_t main_mapping; /* mapping 1's file name */
    int has_files, has_lines;
    int err; /* STROBE_ENOMEM once anything failed; every later call does nothing */
} cli_pprof;

/* Starts an empty profile whose mapping 1 (the frames with no module of their own) is named
 * `main_mapping`. @return 0 or STROBE_ENOMEM (cli_pprof_free() in either case). */
int cli_pprof_init(cli_pprof *p, const char *main_mapping);
void cli_pprof_free(cli_pprof *p);

/* Adds a sample type (e.g. "cpu", "nanoseconds"); each sample then has one more value. */
void cli_pprof_sample_type(cli_pprof *p, const char *type, const char *unit);
/* Sets the period's type, unit and value (the events between two samples). */
void cli_pprof_period(cli_pprof *p, const char *type, const char *unit, int64_t period);
/* Makes sample type `type` (already added) the one pprof shows unless told otherwise. */
void cli_pprof_default_type(cli_pprof *p, const char *type);
/* Sets when the profile's collection started (ns since the Unix epoch; 0: unknown) and how long
 * it lasted (ns; 0: unknown). */
void cli_pprof_times(cli_pprof *p, int64_t time_nanos, int64_t duration_nanos);
/* Adds a line of free text to the profile (pprof -comments shows them); at most four. */
void cli_pprof_comment(cli_pprof *p, const char *text);

/* The location id of frame name s[0..n), made with its function and mapping when new. @return it
 * (1, 2 ...), or 0 when out of memory. */
uint64_t cli_pprof_frame(cli_pprof *p, const char *s, size_t n);

/* Adds a sample: its locations, leaf first, and one value per sample type. */
void cli_pprof_sample(cli_pprof *p, const uint64_t *locs, size_t nlocs, const int64_t *values);

/* Encodes the profile and writes it gzip'd to `out`. @return 0, STROBE_ENOMEM, or STROBE_EIO
 * with *err_no set (errno of the failed write). */
int cli_pprof_write(cli_pprof *p, FILE *out, int *err_no);

#endif
