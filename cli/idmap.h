/* idmap.h: numbers for a trace's string pids and tids, for the writers that copy a trace's events
 * as they are (strobe critical-path -o, strobe kernels --sequences -o).
 *
 * Kineto writes some ids as strings: a GPU stream's tid ("stream 7"), the pid "Spans" of its
 * profiler span, a thread's tid in decimal ("25738"). Viewers want numbers (speedscope fails on a
 * string id), so such a copy writes each string id as a number: a decimal string as its value
 * (which the reader and the model take it for); any other string as a number made from its hash,
 * in [0xC00000, 0xFFFFFF] as strobe convert makes it (above Linux's pid range, in 24 bits), moved
 * on past the numbers the trace uses and those other strings took. The copy then gets a
 * process_name or thread_name metadata event for each such id that its events used and did not
 * name, which gives the id its string back, so that a viewer still shows "stream 7". One map
 * serves a whole copy, the writer's own events included, so that the flows of a copy bind to the
 * events they point at. Not thread-safe. */
#ifndef STROBE_CLI_IDMAP_H
#define STROBE_CLI_IDMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "reader/trace_reader.h"
#include "util/u64map.h"

/* A zeroed struct is an empty map; cli_idmap_free() frees it. */
typedef struct cli_idmap {
    struct cli_idmap_str *strs; /* the strings mapped, in order of first use */
    size_t nstrs, capstrs;
    struct cli_idmap_thread *threads; /* the threads with a mapped string tid */
    size_t nthreads, capthreads;
    strobe__u64map str_index;    /* the string's hash -> index in strs + 1 */
    strobe__u64map thread_index; /* (pid, tid) hashed -> index in threads + 1 */
    strobe__u64map used;         /* the numbers taken: the trace's own, and the strings' */
} cli_idmap;

/* Takes the numeric pids and tids of the model's threads and processes (the trace's events), so
 * that no string is mapped onto one. @return 0 or STROBE_ENOMEM. */
int cli_idmap_reserve(cli_idmap *m, const md_model *md);

/* The number of the pid string s[0..len) in *out; a string that is not decimal marks the process
 * as one to name. @return 0 or STROBE_ENOMEM. */
int cli_idmap_pid(cli_idmap *m, const char *s, size_t len, int64_t *out);

/* The number of the tid string s[0..len) in *out; a string that is not decimal marks the thread
 * (pid: its process's number, as written) as one to name. @return 0 or STROBE_ENOMEM. */
int cli_idmap_tid(cli_idmap *m, int64_t pid, const char *s, size_t len, int64_t *out);

/* 1 when event e has a string pid or tid, which cli_idmap_put_event() rewrites; 0 otherwise. */
int cli_idmap_wants(const strobe_rd_event *e);

/* Writes text[0..len), event e as the caller writes it (one JSON object, which may differ from
 * e->raw in other members), to out with each string "pid" and "tid" value replaced by its
 * number. A thread_name or process_name event of a mapped id marks it named. @return 0,
 * STROBE_ENOMEM, or STROBE_EFORMAT when text is not one JSON object. */
int cli_idmap_put_event(cli_idmap *m, FILE *out, const strobe_rd_event *e, const char *text,
                        size_t len);

/* Writes a process_name event for each mapped process and a thread_name event for each mapped
 * thread that no event named (an empty string names nothing), each after ",\n" (after "\n" when
 * nev is 0). @return nev plus the number of events written. */
size_t cli_idmap_put_names(const cli_idmap *m, FILE *out, size_t nev);

/* Frees the map; the struct is an empty map again. */
void cli_idmap_free(cli_idmap *m);

#endif
