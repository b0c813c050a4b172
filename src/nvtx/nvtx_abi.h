/* nvtx_abi.h: strobe's own declarations of the few NVTX v3 types and numbers its tool interface
 * needs (the injection interface, as NVTX's nvtxDetail/nvtxTypes.h and nvToolsExt.h lay it out),
 * so that the library builds without the NVTX or CUDA headers. The numbers are NVTX's ABI: they
 * never change once published. */
#ifndef STROBE_NVTX_ABI_H
#define STROBE_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/* Export table ids given to the injection's get-export-table function. */
#define NVABI_ETID_CALLBACKS 1u

/* Callback modules, and the slots of each that strobe fills. */
#define NVABI_MODULE_CORE 1
#define NVABI_MODULE_CORE2 5

enum {
    NVABI_CORE_MarkEx = 1,
    NVABI_CORE_MarkA = 2,
    NVABI_CORE_MarkW = 3,
    NVABI_CORE_RangeStartEx = 4,
    NVABI_CORE_RangeStartA = 5,
    NVABI_CORE_RangeStartW = 6,
    NVABI_CORE_RangeEnd = 7,
    NVABI_CORE_RangePushEx = 8,
    NVABI_CORE_RangePushA = 9,
    NVABI_CORE_RangePushW = 10,
    NVABI_CORE_RangePop = 11,
    NVABI_CORE_NameCategoryA = 12,
    NVABI_CORE_NameCategoryW = 13,
    NVABI_CORE_NameOsThreadA = 14,
    NVABI_CORE_NameOsThreadW = 15
};

enum {
    NVABI_CORE2_DomainMarkEx = 1,
    NVABI_CORE2_DomainRangeStartEx = 2,
    NVABI_CORE2_DomainRangeEnd = 3,
    NVABI_CORE2_DomainRangePushEx = 4,
    NVABI_CORE2_DomainRangePop = 5,
    NVABI_CORE2_DomainNameCategoryA = 8,
    NVABI_CORE2_DomainNameCategoryW = 9,
    NVABI_CORE2_DomainRegisterStringA = 10,
    NVABI_CORE2_DomainRegisterStringW = 11,
    NVABI_CORE2_DomainCreateA = 12,
    NVABI_CORE2_DomainCreateW = 13,
    NVABI_CORE2_DomainDestroy = 14,
    NVABI_CORE2_Initialize = 15
};

/* A slot of a module's table: the address of the function pointer NVTX calls through. */
typedef void (*nvabi_fn)(void);
typedef nvabi_fn **nvabi_table;

/* The callbacks export table (NvtxExportTableCallbacks). */
typedef struct nvabi_callbacks {
    size_t struct_size;
    int (*get_module_table)(int module, nvabi_table *out_table, unsigned *out_size);
} nvabi_callbacks;

typedef const void *(*nvabi_get_export_table)(uint32_t id);

/* Event attributes (nvtxEventAttributes_v2): 48 bytes on LP64. */
enum { NVABI_COLOR_ARGB = 1 };
enum { NVABI_MESSAGE_ASCII = 1, NVABI_MESSAGE_UNICODE = 2, NVABI_MESSAGE_REGISTERED = 3 };
typedef struct nvabi_attr {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type; /* 1 u64, 2 i64, 3 double, 4 u32, 5 i32, 6 float */
    int32_t reserved0;
    uint64_t payload; /* a union: the 32-bit types in its first 4 bytes */
    int32_t message_type;
    const void *message; /* char *, wchar_t * or a registered string handle */
} nvabi_attr;

/* The size of the attributes up to and including the message. */
#define NVABI_ATTR_MIN_SIZE (offsetof(nvabi_attr, message) + sizeof(void *))

#endif /* STROBE_NVTX_ABI_H */
