/* torch_api.h: the table through which the torch observer (src/torch, C++ built against torch)
 * records into one copy of the core: libstrobe.so's (strobe record --torch, found with dlsym) or
 * the Python extension's (strobe.profiler, which compiles its own copy in and hands the table's
 * address over). The observer calls nothing of the core but through this table, so that it
 * records into whichever copy runs the session. */
#ifndef STROBE_CORE_TORCH_API_H
#define STROBE_CORE_TORCH_API_H

#include <stddef.h>
#include <stdint.h>

#include "strobe/export.h"
#include "strobe/instrument.h"
#include "strobe/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table's layout version; a later version only adds fields at the end (size tells). */
#define STROBE__TORCH_API_VERSION 2u

typedef struct strobe__torch_api {
    uint32_t version;  /* STROBE__TORCH_API_VERSION of the copy that filled it */
    uint32_t size;     /* sizeof(strobe__torch_api) of that copy */
    const int *active; /* that copy's strobe__active (read relaxed: the gate) */
    void (*begin_site)(const strobe_site *site);
    void (*begin_name)(const char *name, int scope);
    void (*end)(void);
    void (*range_inputs)(const strobe_input *inputs, int n);
    void (*range_flops)(int64_t flops);
    void (*range_arg)(const char *key, const char *json);
    void (*memory)(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                   int64_t total_reserved);
    /* Version 2: begins an op's range named by `site` (or, when NULL, a copy of `name` of record
     * scope `scope`) with torch's ids in one record, cheaper than range_arg: ids[0] the sequence
     * number (negative: none), ids[1] the forward thread id, ids[2] the record function id,
     * ids[3] the calling thread's RecordFunction thread id (which links forward ops to their
     * backward ones in saved traces). The range ends with end(). */
    void (*begin_op)(const strobe_site *site, const char *name, int scope, const int64_t ids[4]);
} strobe__torch_api;

/* The calling copy's table (static; valid for the life of the process). Exported from
 * libstrobe.so under this name, so that the observer finds it with dlsym(RTLD_DEFAULT, ...). */
STROBE_API const strobe__torch_api *strobe__torch_api_get(void);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* STROBE_CORE_TORCH_API_H */
