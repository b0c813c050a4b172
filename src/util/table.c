/* table.c: torch's table formatting (see table.h). */
#include "table.h"

#include <string.h>

void strobe__fmt_time_us(char *buf, size_t size, double us) {
    /* torch holds times as float microseconds and formats them with "%.3f"; doing the same on a
     * double gives the same digits. */
    if (us >= 1000.0 * 1000.0)
        snprintf(buf, size, "%.3fs", us / (1000.0 * 1000.0));
    else if (us >= 1000.0)
        snprintf(buf, size, "%.3fms", us / 1000.0);
    else
        snprintf(buf, size, "%.3fus", us);
}

void strobe__fmt_time_ns(char *buf, size_t size, int64_t ns) {
    strobe__fmt_time_us(buf, size, (double)ns / 1000.0);
}

void strobe__fmt_share(char *buf, size_t size, int64_t part, int64_t total) {
    if (total == 0)
        snprintf(buf, size, "NaN");
    else
        snprintf(buf, size, "%.2f%%", (double)part * 100.0 / (double)total);
}

void strobe__fmt_memory(char *buf, size_t size, int64_t bytes) {
    const double kb = 1024.0, mb = kb * 1024.0, gb = mb * 1024.0;
    double a = bytes < 0 ? -(double)bytes : (double)bytes;
    if (a >= gb)
        snprintf(buf, size, "%.2f Gb", (double)bytes / gb);
    else if (a >= mb)
        snprintf(buf, size, "%.2f Mb", (double)bytes / mb);
    else if (a >= kb)
        snprintf(buf, size, "%.2f Kb", (double)bytes / kb);
    else
        snprintf(buf, size, "%lld b", (long long)bytes);
}

size_t strobe__utf8_len(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0u) != 0x80u) n++;
    return n;
}

size_t strobe__utf8_prefix_bytes(const char *s, size_t cps) {
    const unsigned char *p = (const unsigned char *)s;
    size_t seen = 0;
    while (*p) {
        if ((*p & 0xC0u) != 0x80u) {
            if (seen == cps) break;
            seen++;
        }
        p++;
    }
    return (size_t)(p - (const unsigned char *)s);
}

static void put_chars(FILE *out, int c, size_t n) {
    while (n--)
        fputc(c, out);
}

void strobe__table_separator(FILE *out, const size_t *widths, size_t n) {
    for (size_t i = 0; i < n; i++) {
        put_chars(out, '-', widths[i]);
        fputs(STROBE__TABLE_SPACING, out);
    }
    fputc('\n', out);
}

void strobe__table_cell(FILE *out, const char *s, size_t width, int left, size_t cut) {
    size_t cps = strobe__utf8_len(s);
    size_t bytes = strlen(s);
    const char *tail = "";
    if (cut > 0 && cps >= cut) {
        bytes = strobe__utf8_prefix_bytes(s, cut);
        cps = cut + 3;
        tail = "...";
    }
    if (!left && cps < width) put_chars(out, ' ', width - cps);
    fwrite(s, 1, bytes, out);
    fputs(tail, out);
    if (left && cps < width) put_chars(out, ' ', width - cps);
    fputs(STROBE__TABLE_SPACING, out);
}

void strobe__table_blank(FILE *out, size_t width) {
    put_chars(out, ' ', width);
    fputs(STROBE__TABLE_SPACING, out);
}
