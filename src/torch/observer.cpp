/* observer.cpp: the torch observer (see observer.h), a thin adapter between torch's
 * RecordFunction callbacks and strobe's hot path, which it reaches only through a
 * strobe__torch_api table (core/torch_api.h).
 *
 * The arg names and formats are torch's own: torch/csrc/profiler/util.cpp (input shapes and
 * types, FLOP formulas), torch/csrc/autograd/profiler_kineto.cpp ("Sequence number", "Fwd
 * thread id", "Call stack") and c10/core/Allocator.h (memory reports).
 *
 * Rules of the per-op path (on_enter, on_exit): no allocation once a thread's caches are warm,
 * no lock, no exception out of a callback.
 *
 * Contents: 1. state and warnings, 2. interned sites, 3. inputs and FLOPs, 4. the Python stack,
 * 5. memory reports, 6. the callbacks, 7. the C entry points. */
#include "torch/observer.h"

#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/jit/frontend/tracer.h>

#include <atomic>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>

#include "strobe/error.h"
#include "strobe/result.h"

namespace {

/* ---- 1. state and warnings ------------------------------------------------------------------ */

/* The table records go through and the flags of strobe_torch_observer_on(); read relaxed on the
 * per-op path. */
std::atomic<const strobe__torch_api *> g_api{nullptr};
std::atomic<unsigned> g_flags{0};
/* Whether the table has begin_op (version 2 and up); else the ids go through range_arg. */
std::atomic<bool> g_begin_op{false};

std::mutex g_lock; /* guards everything below */
bool g_registered = false;
at::CallbackHandle g_handle = 0;
bool g_floor_registered = false;
at::CallbackHandle g_floor_handle = 0;
std::mutex g_warn_lock; /* guards the two below: taken on the per-op path, never with g_lock */
std::deque<std::string> g_warnings; /* not yet returned by strobe_torch_observer_warning() */
std::string g_warning_out;          /* the last one returned (valid until the next call) */
/* Set once any thread has pushed the memory reporter: until then, ops outside a session skip
 * looking for one to take off. */
std::atomic<bool> g_any_pushed{false};
/* Ops that could not be recorded because a thread's nesting ran past kMaxDepth. */
std::atomic<uint64_t> g_too_deep{0};

void warn_once(const char *msg) {
    static std::vector<std::string> said;
    std::lock_guard<std::mutex> g(g_warn_lock);
    for (const auto &s : said)
        if (s == msg) return;
    said.emplace_back(msg);
    g_warnings.emplace_back(msg);
}

inline bool recording(const strobe__torch_api *api) {
    return (__atomic_load_n(api->active, __ATOMIC_RELAXED) & STROBE__ACTIVE_RECORDING) != 0;
}

/* ---- 2. interned sites -------------------------------------------------------------------- */

/* A FUNCTION-scope op named by the dispatcher's schema has a name that lives as long as the
 * operator's registration: its pointer is a stable key. Each such name gets one strobe_site,
 * never freed (sites must outlive the sessions that recorded them). A per-thread table keyed by
 * the pointer (open addressing, a few probes, never evicting: two hot ops that shared a slot of
 * a direct-mapped cache would take the global map's lock on every call) sits in front of the
 * global map. */
constexpr size_t kCacheSlots = 1024;
constexpr size_t kCacheProbes = 8;
static_assert(kCacheSlots == 1024, "function_site() hashes to 10 bits");
constexpr int kMaxDepth = 512;

struct op_site;
struct cache_slot {
    const char *key;
    const op_site *site;
};

/* Per-thread state; trivially constructible, so that its thread_local costs no guard. */
struct thread_state {
    cache_slot cache[kCacheSlots];
    /* The keys (op_key) of this thread's recorded ops still open, innermost last: an exit ends a
     * range only when it is the op that began it (torch calls exit for every op, recorded or
     * not). */
    uint64_t open[kMaxDepth];
    int depth;
    /* 1 once this thread has been warned about torch.profiler's memory reporter. */
    int mem_blocked;
    /* 1 while this thread's debug-info stack holds the reporter (pushed by ensure_reporter). */
    int mem_pushed;
};
thread_local thread_state t_state;

struct op_site;
const op_site *intern_site(const char *name);
const char *site_name(const op_site *s);

/* The site of a FUNCTION-scope op whose name comes from its schema, or NULL (the name may be a
 * temporary: copy it). */
const op_site *function_site(thread_state &ts, const at::RecordFunction &fn, const char *name) {
    /* Fibonacci hashing: names are aligned, so their low bits carry nothing. */
    uint64_t h =
        (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(name)) * UINT64_C(0x9E3779B97F4A7C15)) >>
        54;
    cache_slot *free_slot = nullptr;
    for (size_t i = 0; i < kCacheProbes; i++) {
        cache_slot &c = ts.cache[(h + i) & (kCacheSlots - 1)];
        if (c.key == name) {
            /* The address alone is not enough: a name torch gives from a schema can still be
             * freed and its address reused by another op's (seen with torch 1.13: garbage names
             * in streamed traces), so a hit must also have the same text; else the slot is
             * taken over. */
            if (std::strcmp(site_name(c.site), name) == 0) return c.site;
            free_slot = &c;
            break;
        }
        if (c.key == nullptr) {
            free_slot = &c;
            break;
        }
    }
    /* A miss: only a name that belongs to a registered operator's schema is stable. */
    if (!fn.operator_name().has_value()) return nullptr;
    const op_site *s = intern_site(name);
    if (s == nullptr) return nullptr; /* out of memory: the name is copied per call instead */
    if (free_slot != nullptr) {
        free_slot->key = name;
        free_slot->site = s;
    }
    return s;
}

int strobe_scope(at::RecordScope scope) {
    switch (scope) {
    case at::RecordScope::FUNCTION:
        return STROBE_RECORD_SCOPE_FUNCTION;
    case at::RecordScope::BACKWARD_FUNCTION:
        return STROBE_RECORD_SCOPE_BACKWARD_FUNCTION;
    case at::RecordScope::TORCHSCRIPT_FUNCTION:
        return STROBE_RECORD_SCOPE_TORCHSCRIPT_FUNCTION;
    case at::RecordScope::USER_SCOPE:
        return STROBE_RECORD_SCOPE_USER_SCOPE;
    default:
        return STROBE_RECORD_SCOPE_USER_SCOPE;
    }
}

/* ---- 3. inputs and FLOPs --------------------------------------------------------------------- */

/* Each value's name as torch writes it in "Input type" (a tensor's dtype: "float", "c10::Half",
 * ...), copied once: TypeMeta's names are views that need not end with a NUL. */
constexpr int kNumTypes = static_cast<int>(c10::ScalarType::NumOptions);
char g_dtype_names[kNumTypes][48];

void fill_dtype_names() {
    for (int i = 0; i < kNumTypes; i++) {
        try {
            auto name = c10::scalarTypeToTypeMeta(static_cast<c10::ScalarType>(i)).name();
            size_t n = std::min(name.size(), sizeof g_dtype_names[i] - 1);
            memcpy(g_dtype_names[i], name.data(), n);
            g_dtype_names[i][n] = '\0';
        } catch (...) {
            g_dtype_names[i][0] = '\0';
        }
    }
}

/* What torch's formulas count (torch/csrc/profiler/util.cpp, computeFlops): these ops only. */
enum flop_kind {
    FLOP_NONE = 0,
    FLOP_MM,
    FLOP_ADDMM,
    FLOP_BMM,
    FLOP_BADDBMM,
    FLOP_CONV2D,
    FLOP_MUL,
    FLOP_ADD
};

flop_kind flop_kind_of(const char *name) {
    static const struct {
        const char *name;
        flop_kind kind;
    } table[] = {{"aten::mm", FLOP_MM},         {"aten::addmm", FLOP_ADDMM},
                 {"aten::bmm", FLOP_BMM},       {"aten::baddbmm", FLOP_BADDBMM},
                 {"aten::conv2d", FLOP_CONV2D}, {"aten::mul", FLOP_MUL},
                 {"aten::add", FLOP_ADD}};
    for (const auto &t : table)
        if (strcmp(name, t.name) == 0) return t.kind;
    return FLOP_NONE;
}

/* An interned op: its site (first member: the core sees a strobe_site) and what torch counts of
 * it. */
struct op_site {
    strobe_site site;
    flop_kind flops;
};

const char *site_name(const op_site *s) {
    return s->site.name;
}

/* The site of an op name, keyed by its text; the site owns a copy of the name, since the
 * trace is written after the op (a streamed part long after), when torch's string may be gone. */
const op_site *intern_site(const char *name) {
    static auto *m = new std::unordered_map<std::string, const op_site *>();
    std::lock_guard<std::mutex> g(g_lock);
    auto it = m->find(name);
    if (it != m->end()) return it->second;
    char *copy = strdup(name);
    if (copy == nullptr) return nullptr;
    auto *s = new op_site{{copy, "torch", 0, STROBE_RECORD_SCOPE_FUNCTION}, flop_kind_of(copy)};
    m->emplace(copy, s);
    return s;
}

bool tensor_sizes(const c10::IValue &v, c10::IntArrayRef &out) {
    if (!v.isTensor()) return false;
    const at::Tensor &t = v.toTensor();
    if (!t.defined()) return false;
    out = t.sizes();
    return true;
}

int64_t numel_of(c10::IntArrayRef s) {
    int64_t n = 1;
    for (int64_t d : s)
        n *= d;
    return n;
}

/* An int list input (stride, padding, dilation), or empty. */
std::vector<int64_t> int_list(const c10::IValue &v) {
    if (v.isIntList()) return v.toIntVector();
    if (v.isInt()) return {v.toInt()};
    return {};
}

/* torch's FLOPs of one op from its inputs, or -1 when torch counts none (a shape that does not
 * fit the formula included). */
int64_t torch_flops(flop_kind kind, c10::ArrayRef<const c10::IValue> in) {
    c10::IntArrayRef a, b;
    switch (kind) {
    case FLOP_MM:
        if (in.size() < 2 || !tensor_sizes(in[0], a) || !tensor_sizes(in[1], b)) return -1;
        if (a.size() != 2 || b.size() != 2) return -1;
        return 2 * a[0] * a[1] * b[1];
    case FLOP_ADDMM:
        if (in.size() < 3 || !tensor_sizes(in[1], a) || !tensor_sizes(in[2], b)) return -1;
        if (a.size() != 2 || b.size() != 2) return -1;
        return 2 * a[0] * a[1] * b[1];
    case FLOP_BMM:
        if (in.size() < 2 || !tensor_sizes(in[0], a) || !tensor_sizes(in[1], b)) return -1;
        if (a.size() != 3 || b.size() != 3) return -1;
        return 2 * a[0] * a[1] * a[2] * b[2];
    case FLOP_BADDBMM:
        if (in.size() < 3 || !tensor_sizes(in[1], a) || !tensor_sizes(in[2], b)) return -1;
        if (a.size() != 3 || b.size() != 3) return -1;
        return 2 * a[0] * a[1] * a[2] * b[2];
    case FLOP_CONV2D: {
        /* input, weight, bias, stride, padding, dilation, groups. */
        if (in.size() < 7 || !tensor_sizes(in[0], a) || !tensor_sizes(in[1], b)) return -1;
        if (a.size() != 4 || b.size() != 4 || !in[6].isInt()) return -1;
        std::vector<int64_t> stride = int_list(in[3]), pad = int_list(in[4]), dil = int_list(in[5]);
        if (stride.size() != 2 || pad.size() != 2 || dil.size() != 2) return -1;
        int64_t groups = in[6].toInt();
        if (groups <= 0 || stride[0] <= 0 || stride[1] <= 0) return -1;
        int64_t oh = (a[2] + 2 * pad[0] - dil[0] * (b[2] - 1) - 1) / stride[0] + 1;
        int64_t ow = (a[3] + 2 * pad[1] - dil[1] * (b[3] - 1) - 1) / stride[1] + 1;
        return 2 * a[0] * oh * ow * b[2] * b[3] * a[1] * b[0] / groups;
    }
    case FLOP_MUL:
    case FLOP_ADD:
        /* One per element of the first input. */
        if (in.empty() || !tensor_sizes(in[0], a)) return -1;
        return numel_of(a);
    default:
        return -1;
    }
}

/* The most values of an int list that an input keeps (strobe/op.h: 32 dims). */
constexpr size_t kMaxListValues = 32;

/* fn.inputs() as strobe_inputs, as torch writes them: a tensor's sizes and dtype name; scalars
 * with their value and type "Scalar"; int lists with their values (copied into `ints`, room for
 * `nints`), other lists by their kind ("ScalarList", "TensorList", ...), all with no dims;
 * undefined tensors, None and other values with no dims and type "". The dims point into the
 * tensors, which outlive the call. */
int map_inputs(c10::ArrayRef<const c10::IValue> in, strobe_input *out, int64_t *ints,
               size_t nints) {
    int n = 0;
    size_t used = 0;
    for (const c10::IValue &v : in) {
        if (n == STROBE_MAX_INPUTS) break;
        /* Only the fields that range_inputs reads for the input's kind are set (dims and ndims
         * for tensors and int lists, a value for scalars, the dtype always), rather than
         * clearing all 48 bytes per input. */
        strobe_input &x = out[n++];
        x.kind = STROBE_INPUT_NONE;
        x.dtype = nullptr;
        x.dims = nullptr;
        x.ndims = 0;
        if (v.isTensor()) {
            const at::Tensor &t = v.toTensor();
            if (!t.defined()) continue;
            x.kind = STROBE_INPUT_TENSOR;
            x.dims = t.sizes().data();
            x.ndims = static_cast<int>(t.dim());
            int st = static_cast<int>(t.scalar_type());
            x.dtype = st >= 0 && st < kNumTypes ? g_dtype_names[st] : "";
        } else if (v.isInt()) {
            x.kind = STROBE_INPUT_INT;
            x.int_value = v.toInt();
            x.dtype = "Scalar";
        } else if (v.isDouble()) {
            x.kind = STROBE_INPUT_DOUBLE;
            x.double_value = v.toDouble();
            x.dtype = "Scalar";
        } else if (v.isBool()) {
            x.kind = STROBE_INPUT_BOOL;
            x.int_value = v.toBool() ? 1 : 0;
            x.dtype = "Scalar";
        } else if (v.isTensorList()) {
            x.dtype = "TensorList";
        } else if (v.isIntList()) {
            /* The values, as "Concrete Inputs" "[2, 2]" (a list longer than the room left is
             * recorded without them). */
            x.dtype = "ScalarList";
            c10::ArrayRef<c10::IValue> items = v.toListRef();
            if (items.size() <= kMaxListValues && used + items.size() <= nints) {
                x.kind = STROBE_INPUT_INT_LIST;
                x.dims = ints + used;
                x.ndims = static_cast<int>(items.size());
                for (const c10::IValue &i : items)
                    ints[used++] = i.toInt();
            }
        } else if (v.isDoubleList() || v.isBoolList()) {
            x.dtype = "ScalarList";
        } else if (v.isList()) {
            x.dtype = "GenericList";
        }
    }
    return n;
}

/* ---- 4. the Python stack ----------------------------------------------------------------------
 */

void put_json_escaped(std::string &out, const std::string &s) {
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
            out += esc;
        } else {
            out += c;
        }
    }
}

/* "Call stack": the op's Python frames from torch's own walk (torch::jit::tracer), each
 * "file(line): function" (torch/csrc/profiler/util.cpp), joined by ";", as one JSON string. */
void record_stack(const strobe__torch_api *api) {
    std::vector<torch::jit::StackEntry> cs = torch::jit::tracer::pythonCallstack();
    std::string json = "\"";
    bool first = true;
    for (const auto &e : cs) {
        const auto &src = e.range.source();
        if (!src || !src->filename()) continue;
        size_t line = src->starting_line_no() + src->lineno_for_offset(e.range.start());
        if (!first) json += ';';
        first = false;
        put_json_escaped(json, *src->filename());
        json += '(' + std::to_string(line) + "): ";
        put_json_escaped(json, e.filename);
    }
    if (first) return; /* no Python frame (an op from C++): torch writes none either */
    json += '"';
    if (json.size() > 4000) return; /* the core keeps JSON values up to 4096 bytes */
    api->range_arg("Call stack", json.c_str());
}

/* ---- 5. memory reports ---------------------------------------------------------------------- */

/* torch's allocators report each allocation and free to the MemoryReportingInfoBase that
 * ThreadLocalDebugInfo holds as PROFILER_STATE on the allocating thread (c10/core/Allocator.h),
 * asking memoryProfilingEnabled() first. One instance, never freed: threads keep it on their
 * debug-info stacks. */
struct mem_reporter final : public c10::MemoryReportingInfoBase {
    /* torch changed the totals from int64_t (1.13) to size_t (2.x): both are declared, and
     * whichever is the base's overrides it, whatever the version. */
    virtual void reportMemoryUsage(void *ptr, int64_t alloc_size, int64_t total_allocated,
                                   int64_t total_reserved, c10::Device device) {
        report(ptr, alloc_size, total_allocated, total_reserved, device);
    }
    virtual void reportMemoryUsage(void *ptr, int64_t alloc_size, size_t total_allocated,
                                   size_t total_reserved, c10::Device device) {
        report(ptr, alloc_size, static_cast<int64_t>(total_allocated),
               static_cast<int64_t>(total_reserved), device);
    }
    void report(void *ptr, int64_t alloc_size, int64_t total_allocated, int64_t total_reserved,
                c10::Device device) {
        const strobe__torch_api *api = g_api.load(std::memory_order_relaxed);
        if (api == nullptr || !on()) return;
        int32_t dev;
        if (device.type() == c10::DeviceType::CPU) {
            dev = STROBE_DEVICE_CPU_ID;
        } else if (device.type() == c10::DeviceType::CUDA) {
            dev = STROBE_DEVICE(STROBE_DEVICE_CUDA, device.index());
        } else {
            warn_once("torch reported memory of a device strobe does not name: not recorded");
            return;
        }
        api->memory(dev, ptr, alloc_size, total_allocated, total_reserved);
    }
    bool memoryProfilingEnabled() const override { return on(); }

    static bool on() {
        const strobe__torch_api *api = g_api.load(std::memory_order_relaxed);
        if (api == nullptr || !(g_flags.load(std::memory_order_relaxed) & STROBE_TORCH_MEMORY))
            return false;
        int a = __atomic_load_n(api->active, __ATOMIC_RELAXED);
        return (a & STROBE__ACTIVE_RECORDING) && (a & STROBE__ACTIVE_MEMORY);
    }
};

std::shared_ptr<mem_reporter> &reporter() {
    static auto *r = new std::shared_ptr<mem_reporter>(std::make_shared<mem_reporter>());
    return *r;
}

/* Makes the calling thread report its memory to strobe: pushes the reporter unless it is on
 * top already. Never on top of torch.profiler's own state, whose disable pops PROFILER_STATE
 * and takes it for its own type: that thread's memory stays torch.profiler's, with a warning. */
void ensure_reporter(thread_state &ts) {
    c10::DebugInfoBase *cur = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
    if (cur == reporter().get()) return;
    if (cur != nullptr) {
        if (!ts.mem_blocked) {
            ts.mem_blocked = 1;
            warn_once("torch.profiler holds torch's memory reports on this thread: strobe records "
                      "no memory events there");
        }
        return;
    }
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter());
    ts.mem_pushed = 1;
    g_any_pushed.store(true, std::memory_order_relaxed);
}

/* Takes the reporter off the calling thread once strobe no longer records its memory: while it
 * is there, torch takes the thread's profiler for enabled ("Profiler is already enabled on this
 * thread" when torch.profiler starts). Only when it is the topmost PROFILER_STATE; _pop()
 * refuses (throws) when another kind is on top, and then it stays until the next try. */
void drop_reporter(thread_state &ts) {
    if (!ts.mem_pushed) return;
    c10::DebugInfoBase *cur = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
    if (cur != reporter().get()) {
        ts.mem_pushed = 0; /* a guard restored an older stack: it is gone already */
        return;
    }
    try {
        std::shared_ptr<c10::DebugInfoBase> top =
            c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
        if (top.get() != reporter().get()) /* never: get() found it topmost */
            c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, top);
        else
            ts.mem_pushed = 0;
    } catch (...) {
    }
}

/* ---- 6. the callbacks -------------------------------------------------------------------------
 */

/* What marks an op on its thread's open stack: the RecordFunction's address, the same object at
 * enter and exit (its handle would need needsIds, which costs every op a global atomic even with
 * no session, and which torch's own profiler does not ask for either). */
inline uint64_t op_key(const at::RecordFunction &fn) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&fn));
}

/* With a version 1 table: torch's ids as range args (what begin_op records in one go). */
void record_ids(const strobe__torch_api *api, const at::RecordFunction &fn) {
    /* profiler_kineto.cpp: "Record function id" on every op (RecordFunction's handle: 0 unless
     * a callback asks torch for ids, as its ExecutionTraceObserver does; torch writes the same);
     * "Sequence number" and "Fwd thread id" on those with a sequence number (ops that autograd
     * records, and backward nodes, whose Fwd thread id is RecordFunction's number of the forward
     * thread, 0 on forward ops). */
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, static_cast<uint64_t>(fn.handle()));
    api->range_arg("Record function id", num);
    if (fn.seqNr() >= 0) {
        snprintf(num, sizeof num, "%" PRId64, fn.seqNr());
        api->range_arg("Sequence number", num);
        snprintf(num, sizeof num, "%" PRIu64, fn.forwardThreadId());
        api->range_arg("Fwd thread id", num);
    }
}

/* The details of a recorded op beside its range, as the flags ask. */
void record_details(const strobe__torch_api *api, const at::RecordFunction &fn, const op_site *site,
                    unsigned flags) {
    if ((flags & (STROBE_TORCH_SHAPES | STROBE_TORCH_FLOPS)) && fn.needsInputs()) {
        c10::ArrayRef<const c10::IValue> in = fn.inputs();
        if (flags & STROBE_TORCH_FLOPS) {
            /* First, so that a count the core would compute from the inputs for an op torch
             * does not count is not made (-1: none). */
            int64_t f =
                site != nullptr && site->flops != FLOP_NONE ? torch_flops(site->flops, in) : -1;
            api->range_flops(f);
        }
        if (flags & STROBE_TORCH_SHAPES) {
            strobe_input inputs[STROBE_MAX_INPUTS];
            int64_t ints[128];
            int n = map_inputs(in, inputs, ints, sizeof ints / sizeof ints[0]);
            if (n > 0) api->range_inputs(inputs, n);
        }
    }
    if ((flags & STROBE_TORCH_STACK) && fn.scope() != at::RecordScope::BACKWARD_FUNCTION)
        record_stack(api);
}

/* The first op of a thread after strobe stopped recording its memory. */
__attribute__((noinline)) void after_memory() {
    try {
        drop_reporter(t_state);
    } catch (...) {
    }
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction &fn) {
    const strobe__torch_api *api = g_api.load(std::memory_order_relaxed);
    if (api == nullptr || !recording(api)) {
        if (__builtin_expect(g_any_pushed.load(std::memory_order_relaxed), 0) && t_state.mem_pushed)
            after_memory();
        return nullptr;
    }
    thread_state &ts = t_state;
    if (ts.depth >= kMaxDepth) {
        g_too_deep.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    try {
        unsigned flags = g_flags.load(std::memory_order_relaxed);
        if (flags & STROBE_TORCH_MEMORY) {
            if (mem_reporter::on())
                ensure_reporter(ts);
            else if (ts.mem_pushed)
                drop_reporter(ts);
        }
        const char *name = fn.name();
        if (name == nullptr) name = "(null)";
        at::RecordScope scope = fn.scope();
        const op_site *site = nullptr;
        if (scope == at::RecordScope::FUNCTION) site = function_site(ts, fn, name);
        if (g_begin_op.load(std::memory_order_relaxed)) {
            /* One record with torch's ids (a version 2 table). */
            int64_t ids[4] = {fn.seqNr(), static_cast<int64_t>(fn.forwardThreadId()),
                              static_cast<int64_t>(fn.handle()),
                              static_cast<int64_t>(fn.threadId())};
            api->begin_op(site ? &site->site : nullptr, name, strobe_scope(scope), ids);
            ts.open[ts.depth++] = op_key(fn);
        } else {
            if (site != nullptr)
                api->begin_site(&site->site);
            else
                api->begin_name(name, strobe_scope(scope));
            ts.open[ts.depth++] = op_key(fn);
            record_ids(api, fn);
        }
        if (flags & (STROBE_TORCH_SHAPES | STROBE_TORCH_FLOPS | STROBE_TORCH_STACK))
            record_details(api, fn, site, flags);
    } catch (...) {
        /* Nothing leaves a callback into torch. */
    }
    return nullptr;
}

/* An exit that is not the innermost open op's: an op above it began here and ended on another
 * thread (an async RecordFunction ends where its future completes), or never. Those ranges end
 * now, so that this thread's ranges keep nesting; an exit of an op not open here is ignored. */
__attribute__((noinline)) void exit_out_of_order(thread_state &ts, uint64_t key) {
    int k = ts.depth - 1;
    while (k >= 0 && ts.open[k] != key)
        k--;
    if (k < 0) return;
    const strobe__torch_api *api = g_api.load(std::memory_order_relaxed);
    for (; ts.depth > k; ts.depth--)
        if (api != nullptr) api->end();
}

void on_exit(const at::RecordFunction &fn, at::ObserverContext *) {
    thread_state &ts = t_state;
    if (ts.depth == 0) return;
    if (__builtin_expect(ts.open[ts.depth - 1] != op_key(fn), 0)) {
        exit_out_of_order(ts, op_key(fn));
        return;
    }
    ts.depth--;
    const strobe__torch_api *api = g_api.load(std::memory_order_relaxed);
    if (api != nullptr) api->end();
}

/* The floor: callbacks that do nothing, as cheap as torch allows. */
std::unique_ptr<at::ObserverContext> floor_enter(const at::RecordFunction &) {
    return nullptr;
}
void floor_exit(const at::RecordFunction &, at::ObserverContext *) {}

const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> &observed_scopes() {
    static const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> s{
        at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE,
        at::RecordScope::TORCHSCRIPT_FUNCTION};
    return s;
}

/* The table of the copy of strobe in the process: libstrobe.so's, else that of the preload
 * library of `strobe record` (libstrobe_record.so keeps its core's symbols local, so it exports
 * the table under a name of its own). */
const strobe__torch_api *find_libstrobe_api() {
    using get_fn = const strobe__torch_api *(*)();
    for (const char *name : {"strobe__torch_api_get", "strobe__record_torch_api_get"}) {
        void *sym = dlsym(RTLD_DEFAULT, name);
        if (sym != nullptr) return reinterpret_cast<get_fn>(sym)();
    }
    return nullptr;
}

} // namespace

/* ---- 7. the C entry points ------------------------------------------------------------------ */

extern "C" {

int strobe_torch_observer_on(const strobe__torch_api *api, unsigned flags) {
    if (api == nullptr) api = find_libstrobe_api();
    if (api == nullptr) return STROBE_ENOTSUP;
    /* A table of any version: fields past its size are not used. */
    if (api->version < 1 || api->size < offsetof(strobe__torch_api, begin_op))
        return STROBE_ENOTSUP;
    bool begin_op = api->version >= 2 &&
                    api->size >= offsetof(strobe__torch_api, begin_op) + sizeof api->begin_op &&
                    api->begin_op != nullptr;
    try {
        std::lock_guard<std::mutex> g(g_lock);
        static bool names_filled = false;
        if (!names_filled) {
            fill_dtype_names();
            names_filled = true;
        }
        g_begin_op.store(begin_op);
        g_api.store(api, std::memory_order_release);
        unsigned old = g_flags.exchange(flags);
        bool inputs = (flags & (STROBE_TORCH_SHAPES | STROBE_TORCH_FLOPS)) != 0;
        bool old_inputs = (old & (STROBE_TORCH_SHAPES | STROBE_TORCH_FLOPS)) != 0;
        if (g_registered && inputs != old_inputs) {
            at::removeCallback(g_handle);
            g_registered = false;
        }
        if (!g_registered) {
            g_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                                 .needsInputs(inputs)
                                                 .scopes(observed_scopes()));
            g_registered = true;
        }
    } catch (...) {
        return STROBE_EINVAL;
    }
    /* The calling thread reports its memory from now on when a session records it; other
     * threads from their first op. */
    try {
        if ((flags & STROBE_TORCH_MEMORY) && mem_reporter::on()) ensure_reporter(t_state);
    } catch (...) {
    }
    return 0;
}

int strobe_torch_observer_off(void) {
    try {
        std::lock_guard<std::mutex> g(g_lock);
        if (g_registered) at::removeCallback(g_handle);
        g_registered = false;
        g_flags.store(0);
        drop_reporter(t_state);
        uint64_t deep = g_too_deep.exchange(0);
        if (deep) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%" PRIu64 " torch ops nested deeper than %d were not recorded", deep,
                     kMaxDepth);
            std::lock_guard<std::mutex> w(g_warn_lock);
            g_warnings.emplace_back(msg);
        }
    } catch (...) {
        return STROBE_EINVAL;
    }
    return 0;
}

const char *strobe_torch_observer_warning(void) {
    std::lock_guard<std::mutex> g(g_warn_lock);
    if (g_warnings.empty()) return nullptr;
    g_warning_out = g_warnings.front();
    g_warnings.pop_front();
    return g_warning_out.c_str();
}

int strobe_torch_observer_floor(int mode) {
    if (mode < 0 || mode > 2) return STROBE_EINVAL;
    try {
        std::lock_guard<std::mutex> g(g_lock);
        if (g_floor_registered) at::removeCallback(g_floor_handle);
        g_floor_registered = false;
        if (mode > 0) {
            g_floor_handle =
                at::addGlobalCallback(at::RecordFunctionCallback(floor_enter, floor_exit)
                                          .needsInputs(mode == 2)
                                          .scopes(observed_scopes()));
            g_floor_registered = true;
        }
    } catch (...) {
        return STROBE_EINVAL;
    }
    return 0;
}

} // extern "C"
