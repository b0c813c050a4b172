/* table.h: the text formatting of torch's profiler tables (torch.autograd.profiler_util:
 * _format_time, _format_time_share, _format_memory, _build_table's column layout), shared by the
 * library's summary (src/analysis/summary.c) and the CLI's tables (cli/), so that both print the
 * same digits and the same layout.
 *
 * Layout rules (torch's): every column is followed by two spaces, also the last one, so lines end
 * in two spaces; separators are dashes as wide as the column. Widths count code points, as
 * Python's len() does. Not thread-safe only in the sense that FILE output is the caller's. */
#ifndef STROBE_UTIL_TABLE_H
#define STROBE_UTIL_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* torch's defaults: numeric columns are 12 wide; the name column is at most 55 wide. */
#define STROBE__TABLE_COL_WIDTH 12
#define STROBE__TABLE_NAME_MAX 55
#define STROBE__TABLE_SPACING "  "

/* torch's _format_time on a time in microseconds: "12.345us", "1.234ms", "2.000s" ("%.3f"). */
void strobe__fmt_time_us(char *buf, size_t size, double us);
/* The same, from integer nanoseconds. */
void strobe__fmt_time_ns(char *buf, size_t size, int64_t ns);
/* torch's _format_time_share: "12.34%", or "NaN" when the total is 0. */
void strobe__fmt_share(char *buf, size_t size, int64_t part, int64_t total);
/* torch's _format_memory: "12 b", "1.50 Kb", "2.00 Mb", "3.00 Gb" (powers of 1024). */
void strobe__fmt_memory(char *buf, size_t size, int64_t bytes);

/* Number of code points in a UTF-8 string. */
size_t strobe__utf8_len(const char *s);
/* Byte length of the first `cps` code points of s. */
size_t strobe__utf8_prefix_bytes(const char *s, size_t cps);

/* A dashed separator line for columns of the given widths. */
void strobe__table_separator(FILE *out, const size_t *widths, size_t n);
/* One cell: s aligned in `width` characters (right-aligned unless `left`), then the spacing.
 * A string of `cut` code points or more (cut > 0) is cut to `cut` and gets "...", as torch cuts
 * names: torch's row then takes cut + 3 characters, more than the width when the width is
 * smaller, which is what torch prints too. */
void strobe__table_cell(FILE *out, const char *s, size_t width, int left, size_t cut);
/* An empty cell of `width`. */
void strobe__table_blank(FILE *out, size_t width);

#endif /* STROBE_UTIL_TABLE_H */
