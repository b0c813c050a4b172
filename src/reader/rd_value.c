/* rd_value.c: numbers and values of the trace reader (see trace_reader.h).
 *
 * Contents:
 *   1. Exact decimal parsing (strobe_rd_us_to_ns and the reader's integer helpers).
 *   6. Lookups over raw JSON text (args), and the values they give.
 * (Sections 2-5, the reader itself, are in trace_reader.c.)
 */
#include "trace_reader.h"

#include <stdlib.h>
#include <string.h>

#include "json_pull.h"
#include "reader_util.h"

/* ---- 1. Exact decimal parsing ------------------------------------------------------------- */

/* Significant digits kept: an int64 has 19, and rounding needs the one after those. The rest only
 * matter as "zero or not". */
#define SIG_KEEP 24

/* Parses the JSON number text t[0..n) as an integer count of units of 10^-scale, exactly, with no
 * floating point: the digits and the decimal exponent are kept apart and combined in integers.
 * Digits below the unit are rounded half away from zero, and *inexact (may be NULL) says whether
 * any were nonzero. @return 0, STROBE_EFORMAT or STROBE_ERANGE. */
int strobe__rd_decimal_scaled(const char *t, size_t n, int scale, int64_t *out, int *inexact) {
    {
        /* The common case first: -?(0|[1-9][0-9]*)(\.[0-9]+)? with no more fraction digits than
         * the scale keeps and at most 19 digits in the result, which needs no rounding and cannot
         * wrap. Anything else (and any text not of that form) takes the general path below. */
        size_t j = n && t[0] == '-';
        size_t int_from = j;
        uint64_t v = 0;
        while (j < n && t[j] >= '0' && t[j] <= '9')
            v = v * 10 + (uint64_t)(t[j++] - '0');
        size_t nint = j - int_from, nfrac = 0;
        if (j < n && t[j] == '.') {
            size_t frac_from = ++j;
            while (j < n && t[j] >= '0' && t[j] <= '9')
                v = v * 10 + (uint64_t)(t[j++] - '0');
            nfrac = j - frac_from;
        }
        if (j == n && nint > 0 && (nint == 1 || t[int_from] != '0') &&
            (j == int_from + nint || nfrac > 0) && scale >= 0 && nfrac <= (size_t)scale &&
            nint + (size_t)scale <= 19) {
            for (size_t k = nfrac; k < (size_t)scale; k++)
                v *= 10;
            if (v > (uint64_t)INT64_MAX) goto general;
            if (inexact) *inexact = 0;
            *out = t[0] == '-' ? -(int64_t)v : (int64_t)v;
            return 0;
        }
    }
general:;
    char sig[SIG_KEEP];
    long long nsig = 0, frac = 0, exp = 0;
    int sticky = 0; /* a nonzero digit beyond SIG_KEEP */
    size_t i = 0;
    int neg = 0;
    if (inexact) *inexact = 0;
    if (i < n && t[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= n || t[i] < '0' || t[i] > '9') return STROBE_EFORMAT;
    int in_frac = 0;
    if (t[i] == '0') {
        i++;
        if (i < n && t[i] >= '0' && t[i] <= '9') return STROBE_EFORMAT; /* "01" is not JSON */
    }
    for (;;) {
        while (i < n && t[i] >= '0' && t[i] <= '9') {
            int d = t[i++] - '0';
            if (in_frac) frac++;
            if (nsig == 0 && d == 0) continue; /* a leading zero is no significant digit */
            if (nsig < SIG_KEEP)
                sig[nsig] = (char)d;
            else if (d)
                sticky = 1;
            nsig++;
        }
        if (!in_frac && i < n && t[i] == '.') {
            i++;
            if (i >= n || t[i] < '0' || t[i] > '9') return STROBE_EFORMAT;
            in_frac = 1;
            continue;
        }
        break;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
        if (i >= n || t[i] < '0' || t[i] > '9') return STROBE_EFORMAT;
        while (i < n && t[i] >= '0' && t[i] <= '9') {
            if (exp < 100000000) exp = exp * 10 + (t[i] - '0'); /* beyond: clearly out of range */
            i++;
        }
        if (eneg) exp = -exp;
    }
    if (i != n) return STROBE_EFORMAT;
    if (nsig == 0) {
        *out = 0;
        return 0;
    }
    /* value = D * 10^e10, where D is the integer made of the significant digits. */
    long long e10 = exp - frac + scale;
    long long keep = nsig + e10; /* digits of D left of the unit */
    if (keep > 19) return STROBE_ERANGE;
    uint64_t acc = 0;
    long long have = keep < nsig ? keep : nsig;
    for (long long k = 0; k < have; k++)
        acc = acc * 10 + (uint64_t)sig[k];
    for (long long k = have; k < keep; k++)
        acc *= 10; /* trailing zeros from the exponent */
    /* 19 digits can exceed INT64_MAX; acc itself cannot wrap (at most 10^19 - 1 < 2^64). */
    if (acc > (uint64_t)INT64_MAX) return STROBE_ERANGE;
    if (keep < nsig) {
        int round_digit = keep >= 0 ? sig[keep] : 0;
        int rest = sticky;
        for (long long k = keep >= 0 ? keep : 0; k < nsig && k < SIG_KEEP; k++)
            rest |= sig[k] != 0;
        if (inexact) *inexact = rest;
        if (round_digit >= 5) {
            if (acc == (uint64_t)INT64_MAX) return STROBE_ERANGE;
            acc++;
        }
    }
    *out = neg ? -(int64_t)acc : (int64_t)acc;
    return 0;
}

int strobe_rd_us_to_ns(const char *text, size_t len, int64_t *ns) {
    if (!text || !ns) return STROBE_EINVAL;
    return strobe__rd_decimal_scaled(text, len, 3, ns, NULL);
}

/* An exact integer: a number whose value has no fraction. */
int strobe__rd_exact_int(const char *t, size_t n, int64_t *out) {
    int inexact;
    int rc = strobe__rd_decimal_scaled(t, n, 0, out, &inexact);
    if (rc == 0 && inexact) return STROBE_EFORMAT;
    return rc;
}

/* A string that spells an integer in plain decimal ("25738", "-1"). */
int strobe__rd_digits_int(const char *s, size_t n, int64_t *out) {
    size_t i = n && s[0] == '-';
    if (i == n) return 0;
    for (size_t k = i; k < n; k++)
        if (s[k] < '0' || s[k] > '9') return 0;
    return strobe__rd_exact_int(s, n, out) == 0;
}

strobe_rd_type strobe__rd_type_of(int tok) {
    switch (tok) {
    case STROBE_JP_NULL:
        return STROBE_RD_T_NULL;
    case STROBE_JP_FALSE:
        return STROBE_RD_T_FALSE;
    case STROBE_JP_TRUE:
        return STROBE_RD_T_TRUE;
    case STROBE_JP_NUMBER:
        return STROBE_RD_T_NUMBER;
    case STROBE_JP_STRING:
        return STROBE_RD_T_STRING;
    case STROBE_JP_ARR_BEGIN:
        return STROBE_RD_T_ARRAY;
    case STROBE_JP_OBJ_BEGIN:
        return STROBE_RD_T_OBJECT;
    default:
        return STROBE_RD_T_NONE;
    }
}

/* ---- 6. Lookups over raw JSON text -------------------------------------------------------- */

int strobe_rd_obj_get(const char *text, size_t len, const char *key, strobe_rd_value *out) {
    if (!text || !key || !out) return STROBE_EINVAL;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, len);
    jp.skip = 1; /* values are returned raw; keys are still decoded to compare them */
    size_t klen = strlen(key);
    int rc = STROBE_EFORMAT;
    if (strobe_jp_next(&jp) == STROBE_JP_OBJ_BEGIN) {
        for (;;) {
            int tok = strobe_jp_next(&jp);
            if (tok == STROBE_JP_OBJ_END) {
                rc = 0;
                break;
            }
            if (tok != STROBE_JP_KEY) break;
            int match = jp.str_len == klen && memcmp(jp.str, key, klen) == 0;
            tok = strobe_jp_next(&jp);
            if (tok <= STROBE_JP_EOF) break;
            int64_t start = jp.tok_off;
            if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN) {
                int end = strobe_jp_skip_container(&jp);
                if (end <= STROBE_JP_EOF) break;
            }
            if (match) {
                out->type = strobe__rd_type_of(tok);
                out->raw = text + start;
                out->len = (size_t)(strobe_jp_offset(&jp) - start);
                rc = 1;
                break;
            }
        }
    }
    strobe_jp_free(&jp);
    if (rc != 1) memset(out, 0, sizeof *out);
    return rc;
}

int strobe_rd_obj_get_keys(const char *text, size_t len, const char *const *keys, size_t n,
                           strobe_rd_value *out) {
    if (!keys || (n && !out)) return STROBE_EINVAL;
    size_t klen[64];
    if (n > sizeof klen / sizeof klen[0]) return STROBE_EINVAL;
    for (size_t k = 0; k < n; k++) {
        memset(&out[k], 0, sizeof out[k]);
        klen[k] = strlen(keys[k]);
    }
    if (!text || n == 0) return 0;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, text, len);
    jp.skip = 1; /* as strobe_rd_obj_get: values raw, keys decoded */
    size_t found = 0;
    if (strobe_jp_next(&jp) == STROBE_JP_OBJ_BEGIN) {
        while (found < n) {
            int tok = strobe_jp_next(&jp);
            if (tok != STROBE_JP_KEY) break;
            size_t match = n;
            for (size_t k = 0; k < n; k++) {
                if (!out[k].raw && jp.str_len == klen[k] && memcmp(jp.str, keys[k], klen[k]) == 0) {
                    match = k;
                    break;
                }
            }
            tok = strobe_jp_next(&jp);
            if (tok <= STROBE_JP_EOF) break;
            int64_t start = jp.tok_off;
            if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN) {
                int end = strobe_jp_skip_container(&jp);
                if (end <= STROBE_JP_EOF) break;
            }
            if (match < n) {
                out[match].type = strobe__rd_type_of(tok);
                out[match].raw = text + start;
                out[match].len = (size_t)(strobe_jp_offset(&jp) - start);
                found++;
            }
        }
    }
    strobe_jp_free(&jp);
    return (int)found;
}

int strobe_rd_event_arg(const strobe_rd_event *ev, const char *key, strobe_rd_value *out) {
    if (!ev || !out) return STROBE_EINVAL;
    if (!ev->args) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    return strobe_rd_obj_get(ev->args, ev->args_len, key, out);
}

int strobe_rd_value_int(const strobe_rd_value *v, int64_t *out) {
    if (!v || !out) return STROBE_EINVAL;
    if (v->type != STROBE_RD_T_NUMBER || !v->raw) return STROBE_EFORMAT;
    return strobe__rd_exact_int(v->raw, v->len, out);
}

int strobe_rd_value_double(const strobe_rd_value *v, double *out) {
    if (!v || !out) return STROBE_EINVAL;
    if (v->type != STROBE_RD_T_NUMBER || !v->raw || v->len == 0 || v->len > STROBE_JP_NUM_MAX)
        return STROBE_EFORMAT;
    int64_t dummy;
    if (strobe__rd_decimal_scaled(v->raw, v->len, 0, &dummy, NULL) == STROBE_EFORMAT)
        return STROBE_EFORMAT;
    char buf[STROBE_JP_NUM_MAX + 1];
    memcpy(buf, v->raw, v->len);
    buf[v->len] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return *end == '\0' ? 0 : STROBE_EFORMAT;
}

int strobe_rd_value_str(const strobe_rd_value *v, char *buf, size_t cap, size_t *len) {
    if (!v || (!buf && cap)) return STROBE_EINVAL;
    if (v->type != STROBE_RD_T_STRING || !v->raw) return STROBE_EFORMAT;
    strobe_jp jp;
    strobe_jp_init_mem(&jp, v->raw, v->len);
    int rc = STROBE_EFORMAT;
    if (strobe_jp_next(&jp) == STROBE_JP_STRING && strobe_jp_next(&jp) == STROBE_JP_EOF) {
        if (len) *len = jp.str_len;
        rc = 0;
        if (cap) {
            size_t n = jp.str_len < cap ? jp.str_len : cap - 1;
            memcpy(buf, jp.str, n);
            buf[n] = '\0';
            if (n < jp.str_len) rc = STROBE_ERANGE;
        } else if (jp.str_len) {
            rc = STROBE_ERANGE;
        }
    }
    strobe_jp_free(&jp);
    return rc;
}
