/* test_torch_observer.cpp: the torch observer (src/torch) end to end, in C++ against torch's
 * own ops: a strobe session (libstrobe.so), the observer on through strobe__torch_api_get(),
 * ops forward and backward, a user scope, a second thread and allocations; then the names,
 * scopes, torch's args ("Sequence number", "Fwd thread id", "Record function id", "Input
 * Dims", "Input type", "flops"), the fwdbwd flows of the saved trace and the [memory] events of
 * both threads. Without a session, and with the observer off, no op is recorded. Saves
 * STROBE_TEST_OUT_DIR/torch/observer.{json,pftrace} for the trace checkers, and prints what the
 * callback costs per op (ns). */
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <time.h>

/* glog's CHECK macros (through c10) give way to the tests' own. */
#undef CHECK
#undef CHECK_EQ
#include "check.h"
#include "core/torch_api.h"
#include "result_check.h"
#include "strobe/strobe.h"
#include "torch/observer.h"

namespace {

std::string out_dir() {
    std::string d = std::string(STROBE_TEST_OUT_DIR) + "/torch";
    mkdir(d.c_str(), 0755);
    return d;
}

strobe_config base_config() {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 64u << 20;
    c.prefault_bytes = 0;
    return c;
}

/* Events named `name` in the result. */
std::vector<size_t> named(const strobe_result *r, const char *name) {
    std::vector<size_t> v;
    const strobe_event *ev = strobe_result_events(r);
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        if (strcmp(ev[i].name, name) == 0) v.push_back(i);
    return v;
}

std::string arg(const strobe_result *r, size_t i, const char *key) {
    const char *a = strobe_event_arg(r, i, key);
    return a ? a : "";
}

/* Checks event i's arg `key` against `want` ("" : none). */
#define CHECK_ARG(r, i, key, want)                                                                 \
    do {                                                                                           \
        std::string check__v = arg(r, i, key);                                                     \
        CHECK_STR(check__v.c_str(), want);                                                         \
    } while (0)

/* A Linear-like layer with a backward, ops on a second thread, a user scope, allocations. */
void workload(int64_t *other_tid) {
    at::Tensor x = at::randn({8, 32});
    at::Tensor w = at::randn({16, 32}).set_requires_grad(true);
    at::Tensor b = at::randn({16}).set_requires_grad(true);
    {
        RECORD_USER_SCOPE("my_scope");
        at::Tensor y = at::addmm(b, x, w.t());
        at::Tensor z = at::mm(x, w.t());
        at::Tensor loss = (y * z).sum();
        torch::autograd::backward({loss});
    }
    std::thread t([other_tid] {
        *other_tid = (int64_t)gettid();
        at::Tensor p = at::ones({64, 64});
        at::Tensor q = at::mm(p, p);
        (void)q;
    });
    t.join();
}

/* The workload with everything on; the trace is saved as `file` (one format per run: a result
 * is saved once). */
void test_record(const char *file) {
    strobe_config c = base_config();
    c.record_shapes = 1;
    c.with_flops = 1;
    c.profile_memory = 1;
    start_or_die(&c);
    CHECK_EQ(strobe_torch_observer_on(strobe__torch_api_get(), STROBE_TORCH_SHAPES |
                                                                   STROBE_TORCH_FLOPS |
                                                                   STROBE_TORCH_MEMORY),
             0);
    int64_t other = 0;
    workload(&other);
    strobe_result *r = stop_or_die();
    CHECK(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr);
    CHECK_EQ(strobe_torch_observer_off(), 0);
    /* Off takes strobe's memory reporter off the thread: torch.profiler refuses to start on a
     * thread whose PROFILER_STATE is taken ("Profiler is already enabled on this thread"). */
    CHECK(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr);
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);

    /* Names, categories and counts. */
    std::vector<size_t> mm = named(r, "aten::mm"), addmm = named(r, "aten::addmm");
    CHECK(mm.size() >= 2); /* forward, the other thread's, and backward's */
    REQUIRE(addmm.size() == 1);
    CHECK_STR(ev[addmm[0]].category, "cpu_op");
    std::vector<size_t> user = named(r, "my_scope");
    REQUIRE(user.size() == 1);
    CHECK_STR(ev[user[0]].category, "user_annotation");
    std::vector<size_t> bwd = named(r, "AddmmBackward0");
    REQUIRE(bwd.size() == 1);
    CHECK_EQ(ev[bwd[0]].scope, STROBE_RECORD_SCOPE_BACKWARD_FUNCTION);

    /* torch's ids: the forward addmm has a sequence number and Fwd thread id 0; its backward
     * node the same sequence number and the forward thread's number (1 and up). */
    std::string seq = arg(r, addmm[0], "Sequence number");
    CHECK(!seq.empty());
    CHECK_ARG(r, addmm[0], "Fwd thread id", "0");
    CHECK_ARG(r, bwd[0], "Sequence number", seq.c_str());
    std::string fwd = arg(r, bwd[0], "Fwd thread id");
    CHECK(!fwd.empty() && fwd != "0");
    /* RecordFunction's handle, 0 as torch writes it when no callback asks for ids. */
    CHECK_ARG(r, addmm[0], "Record function id", "0");
    CHECK_ARG(r, bwd[0], "Record function id", "0");
    /* An op autograd does not record (no sequence number) has neither arg. */
    std::vector<size_t> ones = named(r, "aten::ones");
    REQUIRE(!ones.empty());
    CHECK(arg(r, ones[0], "Sequence number").empty());

    /* Shapes and FLOPs as torch writes them. */
    CHECK_ARG(r, addmm[0], "Input Dims", "[[16], [8, 32], [32, 16], [], []]");
    CHECK_ARG(r, addmm[0], "Input type",
              "[\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"]");
    CHECK_ARG(r, addmm[0], "Concrete Inputs", "[\"\", \"\", \"\", \"1\", \"1\"]");
    CHECK_ARG(r, addmm[0], "flops", "8192"); /* 2*8*32*16 */
    CHECK_ARG(r, mm[0], "flops", "8192");
    /* Int lists as torch 2.x writes them: w.t()'s as_strided(w, size, stride, offset). */
    bool strided = false;
    for (size_t i : named(r, "aten::as_strided")) {
        if (arg(r, i, "Input Dims") != "[[16, 32], [], [], []]") continue;
        strided = true;
        CHECK_ARG(r, i, "Input type", "[\"float\", \"ScalarList\", \"ScalarList\", \"\"]");
        CHECK_ARG(r, i, "Concrete Inputs", "[\"\", \"[32, 16]\", \"[1, 32]\", \"\"]");
        break;
    }
    CHECK(strided);
    /* An op torch counts no FLOPs of has none, even where strobe's formulas would. */
    std::vector<size_t> sum = named(r, "aten::sum");
    REQUIRE(!sum.empty());
    CHECK(arg(r, sum[0], "flops").empty());

    /* Memory events on both threads. */
    std::set<int64_t> mem_tids;
    for (size_t i = 0; i < strobe_result_event_count(r); i++) {
        if (strcmp(ev[i].name, "[memory]") != 0) continue;
        mem_tids.insert(ev[i].tid);
        CHECK(!arg(r, i, "Bytes").empty());
        CHECK(!arg(r, i, "Total Allocated").empty());
    }
    CHECK(mem_tids.count((int64_t)gettid()) == 1);
    CHECK(mem_tids.count(other) == 1);

    /* Every backward node that autograd numbered (not AccumulateGrad) is linked to its forward
     * op: one "fwdbwd" flow each, from 1. */
    size_t nodes = 0;
    for (size_t i = 0; i < strobe_result_event_count(r); i++)
        nodes += ev[i].scope == STROBE_RECORD_SCOPE_BACKWARD_FUNCTION &&
                 !arg(r, i, "Sequence number").empty();
    CHECK(nodes >= 5); /* AddmmBackward0, MmBackward0, MulBackward0, SumBackward0, TBackward0 */
    std::string path = out_dir() + "/" + file;
    CHECK_EQ(strobe_result_save(r, path.c_str()), 0);
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
        std::string text;
        FILE *f = fopen(path.c_str(), "r");
        REQUIRE(f != NULL);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            text.append(buf, n);
        fclose(f);
        size_t starts = 0, finishes = 0;
        for (size_t at = 0; (at = text.find("\"cat\": \"fwdbwd\"", at)) != std::string::npos;
             at++) {
            size_t line = text.rfind('{', at);
            if (text.compare(line, 12, "{\"ph\": \"s\", ") == 0) starts++;
            if (text.compare(line, 12, "{\"ph\": \"f\", ") == 0) finishes++;
        }
        CHECK_EQ(starts, nodes);
        CHECK_EQ(finishes, nodes);
        CHECK(text.find("\"ph\": \"s\", \"id\": 1,") != std::string::npos);
    }
    strobe_result_free(r);
}

/* An op that begins on one thread and ends on another (an async RecordFunction) does not keep
 * the ranges around it open: "outer" ends at its own exit, and the op after it is no child. */
void test_async_end() {
    strobe_config c = base_config();
    start_or_die(&c);
    CHECK_EQ(strobe_torch_observer_on(strobe__torch_api_get(), 0), 0);
    std::unique_ptr<at::RecordFunction> async;
    {
        RECORD_USER_SCOPE("outer");
        async = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
        if (async->isActive()) async->before("async_op");
    }
    std::thread([&async] { async.reset(); }).join(); /* its end runs there */
    at::Tensor a = at::ones({2, 2});
    at::Tensor b = at::mm(a, a);
    strobe_result *r = stop_or_die();
    CHECK_EQ(strobe_torch_observer_off(), 0);
    CHECK_EQ(check_wellformed(r), 0);
    const strobe_event *ev = strobe_result_events(r);
    std::vector<size_t> outer = named(r, "outer"), mm = named(r, "aten::mm");
    REQUIRE(outer.size() == 1 && mm.size() == 1);
    CHECK(ev[mm[0]].parent == STROBE_NO_EVENT);
    CHECK(ev[outer[0]].end_ns <= ev[mm[0]].start_ns);
    CHECK_EQ(named(r, "async_op").size(), 1u);
    strobe_result_free(r);
}

/* With the observer off, or on with no session, nothing is recorded. */
void test_off() {
    strobe_config c = base_config();
    start_or_die(&c);
    at::Tensor a = at::ones({4, 4});
    at::Tensor b = at::mm(a, a);
    strobe_result *r = stop_or_die();
    CHECK_EQ(named(r, "aten::mm").size(), 0u);
    strobe_result_free(r);
    CHECK_EQ(strobe_torch_observer_on(strobe__torch_api_get(), 0), 0);
    b = at::mm(a, a); /* no session: nothing */
    CHECK_EQ(strobe_torch_observer_off(), 0);
    start_or_die(&c);
    b = at::mm(a, a);
    r = stop_or_die();
    CHECK_EQ(named(r, "aten::mm").size(), 0u);
    strobe_result_free(r);
}

/* ns per a.add_(1) on a one-element tensor, over n calls. */
double per_op(int n) {
    at::Tensor a = at::zeros({1});
    for (int i = 0; i < 1000; i++)
        a.add_(1);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++)
        a.add_(1);
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

/* One way of running the loop: what is on around it. */
enum cost_mode { NONE, FLOOR, FLOOR_INPUTS, IDLE, RECORDING, SHAPES, NMODES };

double run_mode(int mode, int n) {
    strobe_config c = base_config();
    c.buffer_bytes = 256u << 20;
    c.prefault_bytes = 64u << 20;
    c.record_shapes = mode == SHAPES;
    if (mode == FLOOR || mode == FLOOR_INPUTS)
        CHECK_EQ(strobe_torch_observer_floor(mode == FLOOR ? 1 : 2), 0);
    if (mode >= IDLE)
        CHECK_EQ(strobe_torch_observer_on(strobe__torch_api_get(),
                                          mode == SHAPES ? STROBE_TORCH_SHAPES : 0),
                 0);
    if (mode >= RECORDING) start_or_die(&c);
    double ns = per_op(n);
    if (mode >= RECORDING) {
        strobe_result *r = stop_or_die();
        /* a.add_(1) is two ops (the Scalar overload redispatches to the Tensor one). */
        CHECK_EQ(named(r, "aten::add_").size(), 2 * ((size_t)n + 1000));
        strobe_result_free(r);
    }
    if (mode >= IDLE) CHECK_EQ(strobe_torch_observer_off(), 0);
    if (mode == FLOOR || mode == FLOOR_INPUTS) CHECK_EQ(strobe_torch_observer_floor(0), 0);
    return ns;
}

/* Not a check (the machine is shared): what each way adds per a.add_(1) call (two ops), the
 * best of 7 interleaved rounds of 50,000 calls, for the report. */
void print_costs() {
    double best[NMODES];
    for (int m = 0; m < NMODES; m++)
        best[m] = 1e30;
    for (int round = 0; round < 7; round++)
        for (int m = 0; m < NMODES; m++)
            best[m] = std::min(best[m], run_mode(m, 50000));
    printf("a.add_(1): %.0f ns per call; added: do-nothing callback %.0f, with inputs %.0f; "
           "strobe observer with no session %.0f, recording %.0f, with shapes %.0f\n",
           best[NONE], best[FLOOR] - best[NONE], best[FLOOR_INPUTS] - best[NONE],
           best[IDLE] - best[NONE], best[RECORDING] - best[NONE], best[SHAPES] - best[NONE]);
}

} // namespace

int main() {
    test_record("observer.json");
    test_record("observer.pftrace");
    test_async_end();
    test_off();
    print_costs();
    return check_result();
}
