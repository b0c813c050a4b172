/* json_fmt.c: the out-of-line JSON formatting primitives (json_fmt.h). */
#include "json_fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

char *strobe__json_put_ts(char *p, int64_t ns, int64_t base_ns) {
    return put_ts(p, ns, base_ns);
}

char *strobe__json_put_double(char *p, double v) {
    if (!isfinite(v)) return NULL;
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.15g", v);
    if (n <= 0 || (size_t)n >= sizeof tmp || strtod(tmp, NULL) != v)
        n = snprintf(tmp, sizeof tmp, "%.17g", v);
    if (n <= 0 || (size_t)n >= sizeof tmp) return NULL;
    /* printf follows LC_NUMERIC, and a program may have set a locale whose decimal point is a
     * comma (or several bytes). %g of a finite number prints only a sign, digits, the decimal
     * point and an exponent "e+NN": anything else is the decimal point, written as '.'. */
    char *start = p;
    int in_point = 0;
    for (int i = 0; i < n; i++) {
        char c = tmp[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e') {
            *p++ = c;
            in_point = 0;
        } else if (!in_point) {
            *p++ = '.';
            in_point = 1;
        }
    }
    if (p == start) *p++ = '0';
    return p;
}

char *strobe__json_put_string(char *p, const char *s, size_t n) {
    return put_string(p, s, n);
}
