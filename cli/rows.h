/* rows.h: the commands' results as data for other outputs (the HTML report, cmd_report.c): each
 * function runs a command's analysis over a trace already loaded and writes the JSON that the
 * command prints with -f json, to `out` (an open_memstream buffer, say). The commands print
 * through the same functions, so the report's numbers are theirs. */
#ifndef STROBE_CLI_ROWS_H
#define STROBE_CLI_ROWS_H

#include <stddef.h>
#include <stdio.h>

#include "hta.h"
#include "model/model.h"

/* `strobe summary -f json` (grouped by name, sorted by CPU total), its first `limit` rows (0: all);
 * *rows gets the number of rows there are. m gains a string ("ProfilerStep*"). @return 0 or
 * STROBE_ENOMEM. */
int cli_summary_json(FILE *out, md_model *m, size_t limit, size_t *rows);

/* `strobe kernels -f json -n limit` (0: all). @return 0 or STROBE_ENOMEM. */
int cli_kernels_json(FILE *out, const md_model *m, size_t limit);

/* `strobe kernels --tb-view -f json -n limit` (0: all). @return 0 or STROBE_ENOMEM. */
int cli_kernels_tb_json(FILE *out, const md_model *m, size_t limit);

/* `strobe kernels --by-type -f json` over traces loaded by cli_hta_load. @return 0 or
 * STROBE_ENOMEM. */
int cli_kernels_by_type_json(FILE *out, const cli_hta_set *s);

/* `strobe steps -f json`. @return 0 or STROBE_ENOMEM. */
int cli_steps_json(FILE *out, const md_model *m);
/* strobe steps --overview -f json: the steps, averages, GPU Summary and recommendations. */
int cli_steps_overview_json(FILE *out, const md_model *m);

#endif
