/* mk_nvtx.c: strobe as an NVTX client, the way NVTX's header-only client code reaches a tool
 * (nvtxDetail/nvtxInit.h): load the library that NVTX_INJECTION64_PATH names, call its
 * InitializeInjectionNvtx2 with an export table of strobe's own, through which the tool writes its
 * functions into strobe's callback tables (one table of slots per module), then call those
 * functions. Slots the tool leaves empty stay NULL and are never called. The numbers and layouts
 * are NVTX's ABI, declared in nvtx/nvtx_abi.h (no NVTX header).
 *
 * The tool is attached once per process and never unloaded (NVTX's clients do the same): markers
 * started again reuse it. When the variable names the object strobe itself lives in (strobe is the
 * process's NVTX tool, src/nvtx), nothing is attached: strobe's own tool would record each marker
 * back into the session, beside the range it marks. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "markers_int.h"
#include "nvtx/nvtx_abi.h"
#include "strobe/markers.h"

/* Each module's function pointers (the tool writes them) and the table of their addresses that
 * the tool is given (slot 0 and the last entry NULL, as NVTX lays them out). */
#define MAX_SLOTS 16
static nvabi_fn fns[NVABI_MODULE_COUNT][MAX_SLOTS];
static nvabi_fn *tables[NVABI_MODULE_COUNT][MAX_SLOTS + 2];
static const unsigned slot_count[NVABI_MODULE_COUNT] = {
    0,
    NVABI_SLOTS_CORE,
    NVABI_SLOTS_CUDA,
    NVABI_SLOTS_OPENCL,
    NVABI_SLOTS_CUDART,
    NVABI_SLOTS_CORE2,
    NVABI_SLOTS_SYNC,
};

static int get_module_table(int module, nvabi_table *out_table, unsigned *out_size) {
    if (module <= 0 || module >= NVABI_MODULE_COUNT) return 0;
    /* The size counts the entries but the last, as NVTX's clients report it. */
    if (out_size) *out_size = slot_count[module] + 1;
    if (out_table) *out_table = tables[module];
    return 1;
}

static void set_injection_version(uint32_t version) {
    (void)version;
}

static const nvabi_callbacks callbacks = {sizeof(nvabi_callbacks), get_module_table};
static const nvabi_version_info version_info = {sizeof(nvabi_version_info), NVABI_VERSION, 0,
                                                set_injection_version};

static const void *get_export_table(uint32_t id) {
    if (id == NVABI_ETID_CALLBACKS) return &callbacks;
    if (id == NVABI_ETID_VERSIONINFO) return &version_info;
    return NULL;
}

/* What markers call, read from the slots once the tool has filled them. */
static struct {
    nvabi_domain domain; /* "strobe", when the tool has domains */
    nvabi_domain_push_fn dpush;
    nvabi_domain_pop_fn dpop;
    nvabi_domain_mark_fn dmark;
    nvabi_push_a_fn push;
    nvabi_pop_fn pop;
    nvabi_mark_a_fn mark;
} tool;

static int attached;
static pthread_once_t attach_once = PTHREAD_ONCE_INIT;

/* A slot's function as the type it has (function pointers convert through memcpy, not a cast
 * between unrelated types). */
#define SLOT(var, module, id) memcpy(&(var), &fns[(module)][(id)], sizeof(var))

static void attach(void) {
    for (int m = 1; m < NVABI_MODULE_COUNT; m++) {
        tables[m][0] = NULL;
        for (unsigned i = 1; i <= slot_count[m]; i++)
            tables[m][i] = &fns[m][i];
        tables[m][slot_count[m] + 1] = NULL;
    }
    const char *path = getenv("NVTX_INJECTION64_PATH");
    if (path == NULL || path[0] == '\0') {
        strobe__log(STROBE_LOG_DEBUG, "markers: no NVTX tool (NVTX_INJECTION64_PATH unset)");
        return;
    }
    void *h = dlopen(path, RTLD_LAZY);
    if (h == NULL) {
        const char *e = dlerror();
        strobe__log(STROBE_LOG_WARN, "markers: NVTX tool %s cannot be loaded (%s): nvtx is silent",
                    path, e ? e : "?");
        return;
    }
    void *sym = dlsym(h, "InitializeInjectionNvtx2");
    if (sym == NULL) {
        strobe__log(STROBE_LOG_WARN,
                    "markers: %s has no InitializeInjectionNvtx2: not an NVTX tool; nvtx is silent",
                    path);
        dlclose(h);
        return;
    }
    Dl_info tool_info, self_info;
    if (dladdr(sym, &tool_info) && dladdr((void *)&strobe_markers_start, &self_info) &&
        tool_info.dli_fbase == self_info.dli_fbase) {
        strobe__log(STROBE_LOG_INFO,
                    "markers: NVTX_INJECTION64_PATH names strobe itself (strobe is this process's "
                    "NVTX tool): the nvtx sink stays silent, so that no range is recorded twice");
        dlclose(h);
        return;
    }
    int (*init)(nvabi_get_export_table);
    memcpy(&init, &sym, sizeof init);
    if (!init(get_export_table)) {
        strobe__log(STROBE_LOG_WARN, "markers: NVTX tool %s refused to attach: nvtx is silent",
                    path);
        dlclose(h);
        return;
    }
    /* Kept loaded: the tool's functions are now in the tables. */
    nvabi_domain_create_a_fn create = NULL;
    SLOT(create, NVABI_MODULE_CORE2, NVABI_CORE2_DomainCreateA);
    SLOT(tool.dpush, NVABI_MODULE_CORE2, NVABI_CORE2_DomainRangePushEx);
    SLOT(tool.dpop, NVABI_MODULE_CORE2, NVABI_CORE2_DomainRangePop);
    SLOT(tool.dmark, NVABI_MODULE_CORE2, NVABI_CORE2_DomainMarkEx);
    SLOT(tool.push, NVABI_MODULE_CORE, NVABI_CORE_RangePushA);
    SLOT(tool.pop, NVABI_MODULE_CORE, NVABI_CORE_RangePop);
    SLOT(tool.mark, NVABI_MODULE_CORE, NVABI_CORE_MarkA);
    if (create && tool.dpush && tool.dpop && tool.dmark) tool.domain = create("strobe");
    if (tool.domain == NULL && !(tool.push && tool.pop && tool.mark)) {
        strobe__log(STROBE_LOG_WARN,
                    "markers: NVTX tool %s fills neither the domain nor the default push, pop and "
                    "mark: nvtx is silent",
                    path);
        return;
    }
    attached = 1;
    strobe__log(STROBE_LOG_INFO, "markers: NVTX tool %s attached (%s)", path,
                tool.domain ? "domain \"strobe\"" : "default domain");
}

int strobe__mk_nvtx_attach(void) {
    pthread_once(&attach_once, attach);
    return attached;
}

static inline void ascii_attr(nvabi_attr *a, const char *name) {
    memset(a, 0, sizeof *a);
    a->version = NVABI_ATTR_VERSION;
    a->size = (uint16_t)sizeof *a;
    a->message_type = NVABI_MESSAGE_ASCII;
    a->message = name;
}

void strobe__mk_nvtx_push(const char *name) {
    if (tool.domain) {
        nvabi_attr a;
        ascii_attr(&a, name);
        (void)tool.dpush(tool.domain, &a);
    } else {
        (void)tool.push(name);
    }
}

void strobe__mk_nvtx_pop(void) {
    if (tool.domain) {
        (void)tool.dpop(tool.domain);
    } else {
        (void)tool.pop();
    }
}

void strobe__mk_nvtx_mark(const char *name) {
    if (tool.domain) {
        nvabi_attr a;
        ascii_attr(&a, name);
        tool.dmark(tool.domain, &a);
    } else {
        tool.mark(name);
    }
}
