/* test_symbolize_stripped.c: an address in a function that no symbol table names (a static
 * function of a stripped library) is named by the start of its function, which the library's
 * unwind table (.eh_frame_hdr) gives: two addresses in one such function give one frame,
 * "libsymstrip_dso.so+0xSTART", START at or below both. Before, each address was its own frame
 * ("module+0xADDRESS"), so a stripped function was split into as many frames as addresses seen.
 * The library's path comes as argv[1]. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/stack.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_symbolize_stripped LIBRARY\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    union {
        void *p;
        void (*f)(uint64_t *);
    } probe;
    probe.p = dlsym(h, "symstrip_probe");
    REQUIRE(probe.p != NULL);
    uint64_t pcs[2] = {0, 0};
    probe.f(pcs);
    REQUIRE(pcs[0] != 0 && pcs[1] != 0 && pcs[0] != pcs[1]);
    Dl_info info;
    REQUIRE(dladdr((void *)(uintptr_t)pcs[0], &info) != 0);
    uint64_t base = (uint64_t)(uintptr_t)info.dli_fbase;

    const char *out[2] = {NULL, NULL};
    strobe__symbolizer *s = strobe__symbolize(pcs, 2, out);
    REQUIRE(s != NULL && out[0] != NULL && out[1] != NULL);
    printf("%s\n%s\n", out[0], out[1]);
    /* One frame for the one function. */
    CHECK_STR(out[0], out[1]);
    const char *plus = strstr(out[0], "libsymstrip_dso.so+0x");
    REQUIRE(plus != NULL);
    uint64_t start = strtoull(plus + strlen("libsymstrip_dso.so+0x"), NULL, 16);
    /* The start lies at or below both addresses (which are past the start, as return
     * addresses), within a small function's size. */
    for (int i = 0; i < 2; i++) {
        uint64_t off = pcs[i] - base;
        CHECK(start < off && off - start < 256);
    }
    strobe__symbolizer_free(s);
    dlclose(h);
    return check_result();
}
