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

/* ---- The client side (src/markers: strobe calling the tool that NVTX_INJECTION64_PATH names) ---
 * A client hands the tool an export table; through NVABI_ETID_CALLBACKS the tool asks for each
 * module's table of slots (the addresses of the client's function pointers; slot 0 and the last
 * entry are NULL) and writes its functions into the slots it implements. */
#define NVABI_ETID_VERSIONINFO 3u
#define NVABI_VERSION 3u
/* The version export table (NvtxExportTableVersionInfo). */
typedef struct nvabi_version_info {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*set_injection_version)(uint32_t version);
} nvabi_version_info;

/* The other modules, and the number of slots (functions) of each module's table. */
#define NVABI_MODULE_CUDA 2
#define NVABI_MODULE_OPENCL 3
#define NVABI_MODULE_CUDART 4
#define NVABI_MODULE_SYNC 6
#define NVABI_MODULE_COUNT 7
#define NVABI_SLOTS_CORE 15
#define NVABI_SLOTS_CUDA 8
#define NVABI_SLOTS_OPENCL 14
#define NVABI_SLOTS_CUDART 6
#define NVABI_SLOTS_CORE2 15
#define NVABI_SLOTS_SYNC 6

/* An ASCII message's attributes version (NVTX_VERSION) and the client functions strobe calls. */
#define NVABI_ATTR_VERSION 3
typedef void *nvabi_domain;
typedef int (*nvabi_push_a_fn)(const char *message);
typedef int (*nvabi_pop_fn)(void);
typedef void (*nvabi_mark_a_fn)(const char *message);
typedef nvabi_domain (*nvabi_domain_create_a_fn)(const char *name);
typedef int (*nvabi_domain_push_fn)(nvabi_domain domain, const nvabi_attr *attr);
typedef int (*nvabi_domain_pop_fn)(nvabi_domain domain);
typedef void (*nvabi_domain_mark_fn)(nvabi_domain domain, const nvabi_attr *attr);

#endif /* STROBE_NVTX_ABI_H */
