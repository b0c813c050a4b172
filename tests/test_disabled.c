/* test_disabled.c: with STROBE_ENABLED=0 every macro and inline call compiles to nothing. This
 * program is linked WITHOUT libstrobe: a single reference to the library would fail the link. */
#define STROBE_ENABLED 0
#include <stdio.h>

#include "use_all_macros.h"

int main(void) {
    int got = use_all_macros(4);
    if (got != 0 + 1 + 2 + 3) {
        fprintf(stderr, "use_all_macros returned %d, expected 6\n", got);
        return 1;
    }
    return 0;
}
