/* emit.h: machine-readable output shared by the subcommands: CSV fields (RFC 4180 quoting) and
 * JSON strings, the --format option's values, and the UTF-8 check they and common.c's escaping
 * share. It uses nothing else of the CLI: common.c calls it, never the other way. */
#ifndef STROBE_CLI_EMIT_H
#define STROBE_CLI_EMIT_H

#include <stddef.h>
#include <stdio.h>

/* The length of the valid UTF-8 sequence (1 to 4 bytes) at s[0..n), or 0 when it is not one
 * (a stray continuation byte, an overlong form, a surrogate, a cut sequence). */
size_t cli_utf8_seq(const char *s, size_t n);

/* CLI_FORMAT_UNKNOWN: cli_parse_format()'s answer for a name it does not know (not an error code).
 */
enum { CLI_FORMAT_UNKNOWN = -1, CLI_TABLE = 0, CLI_CSV, CLI_JSON };

/* Parses a --format value: "table", "csv" or "json". @return the CL_* value, or
 * CLI_FORMAT_UNKNOWN. */
int cli_parse_format(const char *s);
/* Writes s as one CSV field, quoted when it holds a comma, quote, CR or LF. */
void cli_csv_str(FILE *out, const char *s);
/* Writes s as a JSON string, with quotes; control characters (C0, DEL, C1) are escaped, and a byte
 * that is not UTF-8 becomes U+FFFD, so that the output is valid JSON whatever the trace held. */
void cli_json_str(FILE *out, const char *s);
/* Writes a duration in ns as microseconds with three decimals, exactly (no double rounding). */
void cli_put_us(FILE *out, long long ns);

#endif
