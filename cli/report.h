/* report.h: the HTML report (`strobe report`, cmd_report.c): its escaping writer, its fixed parts
 * (report_page.c), and its flame graph section. */
#ifndef STROBE_CLI_REPORT_H
#define STROBE_CLI_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "model/model.h"

/* Writes s as HTML text (element content or a quoted attribute value): & < > " ' as entities,
 * control characters and bytes that are not UTF-8 as U+FFFD. Names from a trace are untrusted:
 * nothing in them can open a tag or end an attribute. */
void cli_report_html_text(FILE *out, const char *s);

/* Writes json[0..n) (JSON text) for the inside of a <script> element: every '<' as \u003c, which
 * means the same in a JSON string (the only place JSON has one), so that "</script>" or "<!--"
 * in a name cannot end or change the element. */
void cli_report_script_json(FILE *out, const char *json, size_t n);

/* The flame graph section's content for the trace m. */
void cli_report_flame(FILE *out, const md_model *m);

/* Where in cli_report_page_body the flame graph goes (cli_report_flame()'s output), in its place in
 * the navigation order. */
#define CLI_REPORT_FLAME_MARK "<!--flame-->"
/* Where cli_report_tb_body goes in cli_report_page_body (after the step time breakdown). */
#define CLI_REPORT_TB_MARK "<!--tb-->"

/* The page's style sheet, its sections (the error catcher's script first), and its script. */
extern const char cli_report_page_css[];
extern const char cli_report_page_body[];
extern const char cli_report_page_script[];

/* The TensorBoard plugin's section (report_tb.c): its place on the page, and its own script. */
extern const char cli_report_tb_body[];
extern const char cli_report_tb_script[];

#endif
