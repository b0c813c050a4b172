/* emit.c: CSV and JSON output helpers (see emit.h). */
#include "emit.h"

#include <string.h>

size_t cli_utf8_seq(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0) return 0;
    if (p[0] < 0x80) return 1;
    size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
    if (len == 0 || p[0] > 0xf4 || (p[0] & 0xfe) == 0xc0 || len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xc0) != 0x80) return 0;
    if (len == 3 && p[0] == 0xe0 && p[1] < 0xa0) return 0;  /* overlong */
    if (len == 3 && p[0] == 0xed && p[1] >= 0xa0) return 0; /* surrogate */
    if (len == 4 && p[0] == 0xf0 && p[1] < 0x90) return 0;  /* overlong */
    if (len == 4 && p[0] == 0xf4 && p[1] >= 0x90) return 0; /* beyond U+10FFFF */
    return len;
}

int cli_parse_format(const char *s) {
    if (strcmp(s, "table") == 0) return CLI_TABLE;
    if (strcmp(s, "csv") == 0) return CLI_CSV;
    if (strcmp(s, "json") == 0) return CLI_JSON;
    return CLI_FORMAT_UNKNOWN;
}

void cli_csv_str(FILE *out, const char *s) {
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void cli_json_str(FILE *out, const char *s) {
    fputc('"', out);
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = cli_utf8_seq(s + i, n - i);
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else if (len == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
            fprintf(out, "\\u%04x", (unsigned char)s[i + 1]); /* a C1 control */
        else if (len == 0)
            fputs("\\ufffd", out); /* not UTF-8: JSON text must be */
        else
            fwrite(s + i, 1, len, out);
        i += len ? len : 1;
    }
    fputc('"', out);
}

void cli_put_us(FILE *out, long long ns) {
    /* Integer arithmetic, so that 1.005 us prints as 1.005 and not 1.004999. */
    unsigned long long a = ns < 0 ? 0ull - (unsigned long long)ns : (unsigned long long)ns;
    fprintf(out, "%s%llu.%03llu", ns < 0 ? "-" : "", a / 1000, a % 1000);
}
