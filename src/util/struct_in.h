/* struct_in.h: taking in a caller's versioned public struct (strobe_config and the other config
 * structs, whose first member is `size_t struct_size`; see README, "ABI and versions").
 *
 * A program compiled against older headers passes a shorter struct, one compiled against newer
 * headers a longer one. The library reads exactly the caller's struct_size bytes, never more, and
 * works on a full-size copy of its own: fields the caller does not have keep the library's
 * defaults, and fields the library does not know must be zero (unset). */
#ifndef STROBE_UTIL_STRUCT_IN_H
#define STROBE_UTIL_STRUCT_IN_H

#include <stddef.h>

/* The largest struct_size taken in: a larger one is a program that never initialized the struct,
 * and reading that far could leave the caller's object. */
#define STROBE__STRUCT_SIZE_MAX ((size_t)4096)

/* Copies the caller's struct `src` into `dst` (`dst_size` bytes, the library's own layout, filled
 * with defaults beforehand): its first min(struct_size, dst_size) bytes come from `src`; then
 * dst's struct_size is dst_size. @return 0, STROBE_EINVAL (src NULL, or struct_size below
 * `min_size` (0 included) or above STROBE__STRUCT_SIZE_MAX; dst is left as it was) or
 * STROBE_ENOTSUP (a longer struct with a nonzero byte past dst_size: a field this library does not
 * have was set). */
int strobe__struct_in(void *dst, size_t dst_size, const void *src, size_t min_size);

/* Fills the first `size` bytes of `dst` from `defaults` (`defaults_size` bytes, the library's own
 * layout) and sets dst's struct_size to `size`: the body of a public init function, which must not
 * write past the caller's struct_size. Bytes past defaults_size are left alone. Does nothing when
 * dst is NULL or size cannot hold struct_size. */
void strobe__struct_defaults(void *dst, size_t size, const void *defaults, size_t defaults_size);

#endif /* STROBE_UTIL_STRUCT_IN_H */
