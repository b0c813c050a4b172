/* symstrip_dso.c: a library that the build strips of its symbol table (test_symbolize_stripped):
 * symstrip_probe() calls a static function, in no table once stripped, which takes two return
 * addresses inside itself, at two different calls. */
#include <stdint.h>

#if defined(__clang__)
#define SYMSTRIP_NOINLINE __attribute__((noinline))
#else
#define SYMSTRIP_NOINLINE __attribute__((noinline, noclone))
#endif

/* The address this call returns to: a place inside its caller. */
SYMSTRIP_NOINLINE uint64_t symstrip_return_address(void) {
    uint64_t a = (uint64_t)(uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return a;
}

SYMSTRIP_NOINLINE static void symstrip_hidden(uint64_t *out) {
    out[0] = symstrip_return_address();
    __asm__ volatile("" ::: "memory");
    out[1] = symstrip_return_address();
    __asm__ volatile("" ::: "memory");
}

void symstrip_probe(uint64_t *out) {
    symstrip_hidden(out);
    __asm__ volatile("" ::: "memory");
}
