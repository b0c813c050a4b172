/* strobe/summary.h: the per-operator table that torch's key_averages().table() prints, from a
 * result (CPU columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
 * # of Calls).
 *
 * Ranges are grouped by name. A range's self time is its duration less the durations of its
 * direct children on the same thread; CPU total counts each range's whole duration (a recursive
 * operator counts each level, as torch does). Instants and counters are not in the table. */
#ifndef STROBE_SUMMARY_H
#define STROBE_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "export.h"
#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strobe_sort_key {
    STROBE_SORT_CPU_TOTAL = 0, /* descending */
    STROBE_SORT_SELF_CPU = 1,  /* descending */
    STROBE_SORT_CALLS = 2,     /* descending */
    STROBE_SORT_NAME = 3       /* ascending */
} strobe_sort_key;

/* One row: one operator name. */
typedef struct strobe_summary_row {
    const char *name; /* owned by the summary */
    uint64_t calls;
    int64_t self_ns;
    int64_t total_ns;
} strobe_summary_row;

typedef struct strobe_summary strobe_summary;

/* Builds the table from a result. The summary does not refer to the result after this returns.
 * @return 0, STROBE_EINVAL or STROBE_ENOMEM; on success *out is freed with strobe_summary_free().
 */
STROBE_API int strobe_summary_create(const strobe_result *r, strobe_sort_key sort,
                                     strobe_summary **out);
STROBE_API size_t strobe_summary_row_count(const strobe_summary *s);
STROBE_API const strobe_summary_row *strobe_summary_rows(const strobe_summary *s);
/* Sum of every row's self time ("Self CPU time total"). */
STROBE_API int64_t strobe_summary_self_total_ns(const strobe_summary *s);
/* Prints the table like torch: a dashed header, one row per name (at most `limit` rows; 0: all),
 * and the footer "Self CPU time total: ...". @return 0, STROBE_EINVAL or STROBE_EIO. */
STROBE_API int strobe_summary_print(const strobe_summary *s, FILE *out, size_t limit);
/* Frees a summary. Accepts NULL. */
STROBE_API void strobe_summary_free(strobe_summary *s);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_SUMMARY_H */
