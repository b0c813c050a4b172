/* details.c: formatting operator details as Kineto's args (see details.h). Runs at stop only. */
#include "details.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "strobe/error.h"
#include "strobe/result.h"
#include "trace/kineto.h"
#include "util/err.h"

int strobe__grow(void **a, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*a, n * size);
    if (p == NULL) return STROBE_ENOMEM;
    *a = p;
    *cap = n;
    return 0;
}

int strobe__buf_put(strobe__buf *b, const char *s, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *n = realloc(b->s, cap);
        if (n == NULL) return STROBE_ENOMEM;
        b->s = n;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, len);
    b->len += len;
    b->s[b->len] = '\0';
    return 0;
}

static int put_str(strobe__buf *b, const char *s) {
    return strobe__buf_put(b, s, strlen(s));
}

int strobe__buf_put_json_string(strobe__buf *b, const char *s, size_t len) {
    int rc = strobe__buf_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        rc = strobe__buf_put(b, s + run, i - run);
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, esc[2] = '\0';
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", c);
        }
        if (rc == 0) rc = put_str(b, esc);
        run = i + 1;
    }
    if (rc == 0) rc = strobe__buf_put(b, s + run, len - run);
    if (rc == 0) rc = strobe__buf_put(b, "\"", 1);
    return rc;
}

void strobe__buf_free(strobe__buf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

/* The shortest decimal that reads back as the same double, as Python prints scalars. */
static void fmt_double(char *out, size_t n, double v) {
    if (!isfinite(v)) {
        snprintf(out, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
    /* Python writes a float with an integral value as "2.0", not "2". */
    if (strpbrk(out, ".eEn") == NULL && strlen(out) + 2 < n) strcat(out, ".0");
}

int strobe__format_inputs(const uint64_t *payload, size_t bytes, uint32_t count, strobe_input *in,
                          int64_t *dims_store, char (*dtype_store)[65], strobe__buf *dims,
                          strobe__buf *types, strobe__buf *concrete) {
    const uint64_t *w = payload, *end = payload + bytes / 8;
    dims->len = types->len = concrete->len = 0;
    int rc = put_str(dims, "[");
    if (rc == 0) rc = put_str(types, "[");
    if (rc == 0) rc = put_str(concrete, "[");
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        STROBE_RETURN_IF(w >= end, STROBE_EFORMAT);
        uint64_t h = *w++;
        int kind = (int)(h & 0xff);
        uint32_t nd = (uint32_t)((h >> 8) & 0xff), dl = (uint32_t)((h >> 16) & 0xffff);
        STROBE_RETURN_IF(nd > STROBE__MAX_DIMS || dl > STROBE__MAX_DTYPE ||
                             kind > STROBE_INPUT_INT_LIST,
                         STROBE_EFORMAT);
        strobe_input *x = &in[i];
        memset(x, 0, sizeof *x);
        x->kind = kind;
        int64_t *d = dims_store + (size_t)i * STROBE__MAX_DIMS;
        if (kind == STROBE_INPUT_TENSOR || kind == STROBE_INPUT_INT_LIST) {
            STROBE_RETURN_IF((size_t)(end - w) < nd, STROBE_EFORMAT);
            memcpy(d, w, 8u * nd);
            w += nd;
            x->dims = d;
            x->ndims = (int)nd;
        } else if (kind != STROBE_INPUT_NONE) {
            STROBE_RETURN_IF(w >= end, STROBE_EFORMAT);
            if (kind == STROBE_INPUT_DOUBLE) {
                memcpy(&x->double_value, w, 8);
            } else {
                memcpy(&x->int_value, w, 8);
            }
            w++;
        }
        if (dl) {
            STROBE_RETURN_IF((size_t)(end - w) * 8 < STROBE__NAME_PAD(dl), STROBE_EFORMAT);
            memcpy(dtype_store[i], w, dl);
            dtype_store[i][dl] = '\0';
            w += STROBE__NAME_PAD(dl) / 8;
            x->dtype = dtype_store[i];
        }

        const char *sep = i ? ", " : "";
        rc = put_str(dims, sep);
        if (rc == 0) rc = put_str(types, sep);
        if (rc == 0) rc = put_str(concrete, sep);
        if (rc) break;
        /* Input Dims: a tensor's sizes; [] for everything else. */
        rc = put_str(dims, "[");
        for (uint32_t k = 0; kind == STROBE_INPUT_TENSOR && k < (uint32_t)x->ndims && rc == 0;
             k++) {
            char num[32];
            snprintf(num, sizeof num, "%s%" PRId64, k ? ", " : "", d[k]);
            rc = put_str(dims, num);
        }
        if (rc == 0) rc = put_str(dims, "]");
        /* Input type: the dtype, else the default name of a scalar kind. */
        const char *type = x->dtype;
        if (type == NULL) {
            type = kind == STROBE_INPUT_TENSOR     ? ""
                   : kind == STROBE_INPUT_BOOL     ? "Bool"
                   : kind == STROBE_INPUT_NONE     ? ""
                   : kind == STROBE_INPUT_INT_LIST ? "ScalarList"
                                                   : "Scalar";
        }
        if (rc == 0) rc = strobe__buf_put_json_string(types, type, strlen(type));
        /* Concrete Inputs: the value of a scalar or an int list ("[2, 2]", as torch writes it);
         * "" for tensors and absent inputs. */
        char val[40] = "";
        if (rc) break;
        if (kind == STROBE_INPUT_INT_LIST) {
            rc = put_str(concrete, "\"[");
            for (uint32_t k = 0; k < (uint32_t)x->ndims && rc == 0; k++) {
                char num[32];
                snprintf(num, sizeof num, "%s%" PRId64, k ? ", " : "", d[k]);
                rc = put_str(concrete, num);
            }
            if (rc == 0) rc = put_str(concrete, "]\"");
            continue;
        }
        if (kind == STROBE_INPUT_INT) {
            snprintf(val, sizeof val, "%" PRId64, x->int_value);
        } else if (kind == STROBE_INPUT_BOOL) {
            snprintf(val, sizeof val, "%s", x->int_value ? "True" : "False");
        } else if (kind == STROBE_INPUT_DOUBLE) {
            fmt_double(val, sizeof val, x->double_value);
        }
        if (rc == 0) rc = strobe__buf_put_json_string(concrete, val, strlen(val));
    }
    if (rc == 0) rc = put_str(dims, "]");
    if (rc == 0) rc = put_str(types, "]");
    if (rc == 0) rc = put_str(concrete, "]");
    return rc;
}

int strobe__c10_device_type(int t) {
    switch (t) {
    case STROBE_DEVICE_CPU:
        return STROBE_KINETO_C10_DEVICE_CPU;
    case STROBE_DEVICE_CUDA:
        return STROBE_KINETO_C10_DEVICE_CUDA;
    case STROBE_DEVICE_XPU:
        return STROBE_KINETO_C10_DEVICE_XPU;
    case STROBE_DEVICE_HPU:
        return STROBE_KINETO_C10_DEVICE_HPU;
    case STROBE_DEVICE_MTIA:
        return STROBE_KINETO_C10_DEVICE_MTIA;
    case STROBE_DEVICE_PRIVATEUSE1:
        return STROBE_KINETO_C10_DEVICE_PRIVATEUSE1;
    default:
        return t;
    }
}

const char *strobe__device_name(int t) {
    static const char *const names[] = STROBE_KINETO_DEVICE_TYPE_NAMES;
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "device";
}
