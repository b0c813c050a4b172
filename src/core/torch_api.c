/* torch_api.c: the table through which the torch observer records into this copy of the core
 * (see torch_api.h). One static table per copy: libstrobe.so's is found by name, the Python
 * extension's is handed over by address (_strobe._torch_api()). */
#include "torch_api.h"

#include "hooks.h"
#include "strobe/instrument.h"
#include "strobe/op.h"

static const strobe__torch_api torch_api = {
    STROBE__TORCH_API_VERSION, (uint32_t)sizeof(strobe__torch_api),
    &strobe__active,           strobe__begin_site,
    strobe__begin_name,        strobe__end,
    strobe__range_inputs,      strobe__range_flops,
    strobe__range_arg,         strobe__memory,
    strobe__begin_torch_op,
};

const strobe__torch_api *strobe__torch_api_get(void) {
    return &torch_api;
}
