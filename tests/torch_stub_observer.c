/* torch_stub_observer.c: a stand-in for the torch observer (src/torch/observer.h), so that the
 * import hook of `strobe record --torch` (src/torch/pyhook/sitecustomize.py) is tested where torch
 * is not installed (test_record_torch_hook.sh, with the fake torch package of tests/torch_fake).
 * strobe_torch_observer_on() keeps the table it is given and records one range,
 * "strobe_stub_observer flags=N", through it; stub_op(NAME) records a range NAME, as an operator
 * would, into whichever session the table's copy runs in this process (a forked child's own). */
#include <stdio.h>

#include "core/torch_api.h"
#include "strobe/op.h"

static const strobe__torch_api *table;

static void range(const char *name) {
    if (table == NULL || table->begin_name == NULL || table->end == NULL) return;
    table->begin_name(name, STROBE_RECORD_SCOPE_FUNCTION);
    table->end();
}

STROBE_API int strobe_torch_observer_on(const strobe__torch_api *api, unsigned flags);
STROBE_API int strobe_torch_observer_on(const strobe__torch_api *api, unsigned flags) {
    if (api == NULL) return -1;
    table = api;
    char name[64];
    snprintf(name, sizeof name, "strobe_stub_observer flags=%u", flags);
    range(name);
    return 0;
}

STROBE_API void stub_op(const char *name);
STROBE_API void stub_op(const char *name) {
    range(name);
}
