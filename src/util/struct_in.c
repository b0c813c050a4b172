/* struct_in.c: see struct_in.h. */
#include "struct_in.h"

#include <string.h>

#include "strobe/error.h"

int strobe__struct_in(void *dst, size_t dst_size, const void *src, size_t min_size) {
    if (src == NULL) return STROBE_EINVAL;
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n < min_size || n < sizeof n || n > STROBE__STRUCT_SIZE_MAX) return STROBE_EINVAL;
    /* A newer program's struct: what lies past our layout are fields we do not have. Left zero
     * (their init's memset), they ask for nothing; set, they ask for something we cannot do. */
    for (size_t i = dst_size; i < n; i++)
        if (((const unsigned char *)src)[i] != 0) return STROBE_ENOTSUP;
    memcpy(dst, src, n < dst_size ? n : dst_size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return 0;
}

void strobe__struct_defaults(void *dst, size_t size, const void *defaults, size_t defaults_size) {
    if (dst == NULL || size < sizeof size) return;
    memcpy(dst, defaults, size < defaults_size ? size : defaults_size);
    memcpy(dst, &size, sizeof size);
}
