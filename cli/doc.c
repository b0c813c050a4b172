/* doc.c: the list of subcommands, the top-level usage text, and what is made from the texts and
 * option tables at build time: the man pages (troff) and the bash completion script. A man page
 * is its command's --help text with troff markup around it, so the two cannot drift.
 *
 * Contents: the command list, the top-level usage, troff output, bash completion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "strobe/strobe.h"

/* ---- the command list ---------------------------------------------------------------------- */

const cli_command cli_commands[] = {
    {"summary", cmd_summary, cmd_summary_usage, cmd_summary_options,
     "per-operator table, like key_averages().table()"},
    {"kernels", cmd_kernels, cmd_kernels_usage, cmd_kernels_options,
     "per-kernel table; busy and idle time per stream"},
    {"stacks", cmd_stacks, cmd_stacks_usage, cmd_stacks_options,
     "folded stacks for flamegraph.pl and speedscope"},
    {"flamegraph", cmd_flamegraph, cmd_flamegraph_usage, cmd_flamegraph_options,
     "a flame graph (or a differential one) as a self-contained SVG"},
    {"check", cmd_check, cmd_check_usage, cmd_check_options,
     "what is wrong with a trace (exit 1 when anything)"},
    {"info", cmd_info, cmd_info_usage, cmd_info_options,
     "schema, time span, processes, threads, counts, metadata"},
    {"trigger", cmd_trigger, cmd_trigger_usage, cmd_trigger_options,
     "start a trace in a running process (on-demand)"},
    {"ps", cmd_ps, cmd_ps_usage, cmd_ps_options,
     "this user's processes that can be traced on demand"},
    {"memory-profile", cmd_memory_profile, cmd_memory_profile_usage, cmd_memory_profile_options,
     "record a running process's allocations for a while"},
    {"convert", cmd_convert, cmd_convert_usage, cmd_convert_options,
     "convert a trace: Kineto JSON <-> Perfetto protobuf (.pftrace)"},
    {"merge", cmd_merge, cmd_merge_usage, cmd_merge_options,
     "the rank traces of one job as one trace, clocks aligned"},
    {"diff", cmd_diff, cmd_diff_usage, cmd_diff_options,
     "operators and kernels of two traces compared (HTA's trace diff)"},
    {"steps", cmd_steps, cmd_steps_usage, cmd_steps_options,
     "step time breakdown per ProfilerStep (TensorBoard plugin)"},
    {"breakdown", cmd_breakdown, cmd_breakdown_usage, cmd_breakdown_options,
     "HTA's temporal breakdown per rank (idle, compute, other)"},
    {"overlap", cmd_overlap, cmd_overlap_usage, cmd_overlap_options,
     "HTA's communication/computation overlap per rank"},
    {"launches", cmd_launches, cmd_launches_usage, cmd_launches_options,
     "HTA's kernel launch statistics per rank"},
    {"idle", cmd_idle, cmd_idle_usage, cmd_idle_options,
     "HTA's idle time breakdown per rank and stream"},
    {"queue", cmd_queue, cmd_queue_usage, cmd_queue_options,
     "HTA's queue length statistics per rank and stream"},
    {"ranks", cmd_ranks, cmd_ranks_usage, cmd_ranks_options,
     "each rank's profiler steps and times, and HTA's potential stragglers"},
    {"annotations", cmd_annotations, cmd_annotations_usage, cmd_annotations_options,
     "HTA's GPU (or CPU) user-annotation breakdown per rank"},
    {"record", cmd_record, cmd_record_usage, cmd_record_options,
     "run a program and record a trace of it, with no change to it"},
    {"report", cmd_report, cmd_report_usage, cmd_report_options,
     "one self-contained HTML report: tables, charts, ranks compared"},
    {"critical-path", cmd_critical_path, cmd_critical_path_usage, cmd_critical_path_options,
     "HTA's critical path analysis of a rank, and the trace with it overlaid"},
    {"counters", cmd_counters, cmd_counters_usage, cmd_counters_options,
     "HTA's CUPTI counter analysis: each kernel's counters and operators"},
    {"memory-bw", cmd_memory_bw, cmd_memory_bw_usage, cmd_memory_bw_options,
     "HTA's memory copy bandwidth per rank and kind of copy"},
    {"overlay", cmd_overlay, cmd_overlay_usage, cmd_overlay_options,
     "a copy of a trace with HTA's queue length and bandwidth counters"},
    {"export", cmd_export, cmd_export_usage, cmd_export_options,
     "a trace's stacks as a pprof profile (go tool pprof, Pyroscope)"},
    {"open", cmd_open, cmd_open_usage, cmd_open_options,
     "serve a trace to the Perfetto UI (ui.perfetto.dev) and open it there"},
};
const size_t cli_command_count = sizeof cli_commands / sizeof cli_commands[0];

/* ---- the top-level usage ------------------------------------------------------------------- */

void cli_main_usage(FILE *out) {
    fputs(
        "NAME\n"
        "    strobe - answers questions about PyTorch-profiler (Kineto) and Perfetto traces\n"
        "\n"
        "SYNOPSIS\n"
        "    strobe COMMAND [OPTIONS] TRACE\n"
        "    strobe help [COMMAND] | strobe --help | strobe --version\n"
        "\n"
        "DESCRIPTION\n"
        "    Reads Kineto-format Chrome traces (.json or .json.gz) written by strobe or by the\n"
        "    PyTorch profiler, either schema, and Perfetto traces (.pftrace) written by strobe,\n"
        "    and answers questions about them. TRACE \"-\" reads standard input.\n"
        "\n"
        "    Options follow GNU conventions in every command: --opt value or --opt=value, short\n"
        "    forms for the common ones (-o, -n, -s, -f, -q, -h, -V), options before or after the\n"
        "    trace, and \"--\" ends the options. Text from a trace that could act on a terminal\n"
        "    (control characters, escape sequences) is printed escaped (\\n, \\e, \\x01 ...).\n"
        "    Reading a large trace shows a progress line on standard error when it is a\n"
        "    terminal; --quiet (-q) leaves it out.\n"
        "\n"
        "COMMANDS\n",
        out);
    for (size_t i = 0; i < cli_command_count; i++)
        fprintf(out, "    %-16s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fputs("\n"
          "    strobe help COMMAND, strobe COMMAND --help and man strobe-COMMAND show a\n"
          "    command's manual.\n"
          "\n"
          "OPTIONS\n"
          "    -h, --help       show this text\n"
          "    -V, --version    show strobe's version\n"
          "\n"
          "EXIT STATUS\n"
          "    0  success\n"
          "    1  findings (check), or a process that did not trace (trigger, memory-profile)\n"
          "    2  bad input or usage: one line on standard error names the file and the problem\n",
          out);
}

/* ---- troff --------------------------------------------------------------------------------- */

/* One line of text for troff: backslashes and dashes escaped, a leading '.' or '\'' protected. */
static void troff_line(FILE *out, const char *s, size_t len) {
    if (len && (s[0] == '.' || s[0] == '\'')) fputs("\\&", out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            fputs("\\e", out);
        else if (s[i] == '-')
            fputs("\\-", out);
        else
            fputc(s[i], out);
    }
    fputc('\n', out);
}

/* The usage text as a man page: a line at the left margin is a section heading; NAME's line is
 * filled (so that whatis and apropos read it); every other section is kept as written, line for
 * line (no fill), less the text's four spaces of indent, which the man macros add back. */
static void write_troff(FILE *out, const char *title, const char *source, const char *text) {
    fprintf(out,
            ".\\\" Generated from `%s --help` by strobe's build; do not edit.\n"
            ".TH \"%s\" 1 \"\" \"strobe %s\" \"strobe manual\"\n"
            ".nh\n"
            ".ad l\n",
            source, title, strobe_version());
    int nofill = 0, name = 0;
    size_t blanks = 0; /* blank lines held back: none is written before a heading */
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        size_t skip = 0;
        while (skip < len && skip < 4 && line[skip] == ' ')
            skip++;
        if (len > 0 && line[0] != ' ') {
            if (nofill) fputs(".fi\n", out);
            fputs(".SH ", out);
            troff_line(out, line, len);
            name = len == 4 && memcmp(line, "NAME", 4) == 0;
            nofill = !name;
            if (nofill) fputs(".nf\n", out);
            blanks = 0;
        } else if (len == skip) {
            blanks++;
        } else {
            /* In NAME, a blank line would start a paragraph: there are none to keep. */
            for (; blanks > 0 && !name; blanks--)
                fputc('\n', out);
            blanks = 0;
            troff_line(out, line + skip, len - skip);
        }
        line += len + (nl != NULL);
    }
    if (nofill) fputs(".fi\n", out);
}

int cli_write_man(FILE *out, const char *cmd) {
    if (cmd == NULL) {
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (mem == NULL) return STROBE_ENOMEM;
        cli_main_usage(mem);
        if (fclose(mem) != 0) {
            free(text);
            return STROBE_ENOMEM;
        }
        write_troff(out, "strobe", "strobe", text);
        free(text);
        return 0;
    }
    for (size_t i = 0; i < cli_command_count; i++) {
        if (strcmp(cli_commands[i].name, cmd) == 0) {
            char title[64], source[64];
            snprintf(title, sizeof title, "strobe-%s", cmd);
            snprintf(source, sizeof source, "strobe %s", cmd);
            write_troff(out, title, source, cli_commands[i].usage);
            return 0;
        }
    }
    return STROBE_EINVAL;
}

/* ---- bash completion ----------------------------------------------------------------------- */

/* Options whose values are a fixed list. */
static const struct {
    const char *cmd, *opt, *values;
} value_lists[] = {
    {"summary", "format", "table csv json"},
    {"summary", "group-by", "name shape stack module"},
    {"summary", "sort",
     "cpu_time_total self_cpu_time_total cuda_time_total self_cuda_time_total cpu_memory_usage "
     "self_cpu_memory_usage cuda_memory_usage self_cuda_memory_usage flops count name"},
    {"kernels", "format", "table csv json"},
    {"stacks", "metric", "self_cpu self_cuda"},
    {"flamegraph", "metric", "self_cpu self_device samples memory"},
    {"flamegraph", "group-by", "stack range"},
    {"check", "format", "text json"},
    {"info", "format", "text json"},
    {"trigger", "activities", "cpu cuda cpu,cuda"},
    {"record", "activities", "cpu cuda cpu,cuda"},
    {"record", "capture-range", "cuda-profiler-api nvtx:"},
    {"critical-path", "format", "table csv json"},
    {"counters", "format", "table csv json"},
    {"export", "metric", "self_cpu self_cuda samples memory"},
};

void cli_write_completion(FILE *out) {
    fputs("# bash completion for strobe. Generated by strobe's build from its option tables; do\n"
          "# not edit.\n"
          "_strobe() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    local cmds='help",
          out);
    for (size_t i = 0; i < cli_command_count; i++)
        fprintf(out, " %s", cli_commands[i].name);
    fputs("'\n"
          "    COMPREPLY=()\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        COMPREPLY=($(compgen -W \"$cmds --help --version\" -- \"$cur\"))\n"
          "        return 0\n"
          "    fi\n"
          "    local opts='' args='' values=''\n"
          "    case ${COMP_WORDS[1]} in\n"
          "    help) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\"))\n"
          "        return 0 ;;\n",
          out);
    for (size_t i = 0; i < cli_command_count; i++) {
        const cli_command *c = &cli_commands[i];
        fprintf(out, "    %s)\n        opts='", c->name);
        for (const struct option *o = c->options; o->name; o++)
            fprintf(out, "%s--%s", o == c->options ? "" : " ", o->name);
        /* The options that take a value: after one of them, complete its value. */
        fputs("'\n        args='", out);
        int first = 1;
        for (const struct option *o = c->options; o->name; o++) {
            if (o->has_arg == no_argument) continue;
            fprintf(out, "%s--%s", first ? "" : " ", o->name);
            if (o->val > 0 && o->val < 128) fprintf(out, " -%c", o->val);
            first = 0;
        }
        fputs("'\n", out);
        int any = 0;
        for (size_t k = 0; k < sizeof value_lists / sizeof value_lists[0]; k++) {
            if (strcmp(value_lists[k].cmd, c->name) != 0) continue;
            if (!any) fputs("        case $prev in\n", out);
            any = 1;
            fprintf(out, "        --%s", value_lists[k].opt);
            for (const struct option *o = c->options; o->name; o++)
                if (strcmp(o->name, value_lists[k].opt) == 0 && o->val > 0 && o->val < 128)
                    fprintf(out, "|-%c", o->val);
            fprintf(out, ") values='%s' ;;\n", value_lists[k].values);
        }
        if (any) fputs("        esac\n", out);
        fputs("        ;;\n", out);
    }
    fputs("    *) return 0 ;;\n"
          "    esac\n"
          "    if [ -n \"$values\" ]; then\n"
          "        COMPREPLY=($(compgen -W \"$values\" -- \"$cur\"))\n"
          "    elif [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    elif [[ \" $args \" != *\" $prev \"* ]] || [[ $prev == --output || $prev == -o ]]; "
          "then\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "    return 0\n"
          "}\n"
          "complete -o filenames -o bashdefault -F _strobe strobe\n",
          out);
}
