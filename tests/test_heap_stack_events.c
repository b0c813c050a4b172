/* test_heap_stack_events.c: a memory event with its own call stack (strobe__memory_stack, what
 * `strobe record --heap-stacks` records for each allocation) gets "Call stack" on its [memory]
 * instant, frames innermost first, in a saved result and in a streamed trace (JSON, and
 * .pftrace); memory events without a stack, and ranges open around them, get none.
 *
 * Built with -fno-omit-frame-pointer -O1. The chain's functions are non-static and noinline (and,
 * under GCC, noclone), each call followed by an empty asm so that it is not a tail call. */
#include <stdint.h>

#include "check.h"
#include "core/hooks.h"
#include "core/stack.h"
#include "strobe/strobe.h"

#if defined(__clang__)
#define TEST_NOINLINE __attribute__((noinline))
#else
#define TEST_NOINLINE __attribute__((noinline, noclone))
#endif

static char block_a[64], block_b[32];

void heap_ev_leaf(void);
void heap_ev_mid(void);
void heap_ev_outer(void);

/* The "allocator": takes its caller's stack (its own frame is the first address: the return
 * into heap_ev_leaf) and records the allocation with it, then one without a stack. */
TEST_NOINLINE void heap_ev_leaf(void) {
    uintptr_t lo = 0, hi = 0;
    uint64_t pcs[16];
    int n = strobe__stack_bounds(&lo, &hi) == 0 ? strobe__stack_capture(lo, hi, 0, pcs, 16) : 0;
    strobe__memory_stack(STROBE_DEVICE_CPU_ID, block_a, 64, 64, 0, pcs, n);
    strobe__memory_stack(STROBE_DEVICE_CPU_ID, block_b, 32, 96, 0, pcs, 0);
    __asm__ volatile("" ::: "memory");
}

TEST_NOINLINE void heap_ev_mid(void) {
    heap_ev_leaf();
    __asm__ volatile("" ::: "memory");
}

TEST_NOINLINE void heap_ev_outer(void) {
    strobe_range_begin("around");
    heap_ev_mid();
    strobe_range_end();
    strobe_record_free(STROBE_DEVICE_CPU_ID, block_a, 64, 32, 0);
    __asm__ volatile("" ::: "memory");
}

/* The i-th ';'-separated frame's function of a "Call stack" value (a JSON string or its text),
 * less " (file:line)", into out. @return 1, or 0 when there is no such frame. */
static int frame(const char *stack, int i, char *out, size_t size) {
    const char *p = stack;
    if (*p == '"') p++;
    for (; i > 0; i--) {
        p = strchr(p, ';');
        if (p == NULL) return 0;
        p++;
    }
    size_t len = strcspn(p, ";\"");
    const char *paren = strstr(p, " (");
    if (paren && (size_t)(paren - p) < len) len = (size_t)(paren - p);
    if (len >= size) len = size - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

static void check_frames(const char *stack) {
    static const char *const want[] = {"heap_ev_leaf", "heap_ev_mid", "heap_ev_outer"};
    char f[256];
    for (int i = 0; i < 3; i++) {
        CHECK(frame(stack, i, f, sizeof f));
        CHECK_STR(f, want[i]);
    }
}

static strobe_config base_config(void) {
    strobe_config c;
    strobe_config_init(&c);
    c.buffer_bytes = 8u << 20;
    c.prefault_bytes = 0;
    c.profile_memory = 1;
    return c;
}

/* The saved result: the stacked allocation's [memory] event has the frames; the stackless
 * allocation, the free and the range around them have none. */
static void test_result(void) {
    strobe_config c = base_config();
    REQUIRE(strobe_start(&c) == 0);
    heap_ev_outer();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r);
    int mem = 0, stacked = 0;
    char a[32];
    snprintf(a, sizeof a, "%llu", (unsigned long long)(uintptr_t)block_a);
    for (size_t i = 0; i < n; i++) {
        const char *stack = strobe_event_arg(r, i, "Call stack");
        if (strcmp(ev[i].name, "around") == 0) CHECK(stack == NULL);
        if (strcmp(ev[i].name, "[memory]") != 0) continue;
        mem++;
        const char *bytes = strobe_event_arg(r, i, "Bytes");
        REQUIRE(bytes != NULL);
        if (strcmp(bytes, "64") == 0) {
            REQUIRE(stack != NULL);
            printf("result: [memory] Call stack %s\n", stack);
            CHECK_STR(strobe_event_arg(r, i, "Addr"), a);
            CHECK_STR(strobe_event_arg(r, i, "Total Allocated"), "64");
            check_frames(stack);
            stacked++;
        } else {
            CHECK(stack == NULL);
        }
    }
    CHECK_EQ(mem, 3);
    CHECK_EQ(stacked, 1);
    char path[700];
    snprintf(path, sizeof path, "%s/heap_stack_events.json", STROBE_TEST_OUT_DIR);
    CHECK_EQ(strobe_result_save(r, path), 0);
    strobe_result_free(r);
}

/* The streamed trace (what `strobe record` writes): one "Call stack" in the file, on the
 * [memory] event, with the frames in order. */
static void test_stream(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/heap_stack_events_stream.json", STROBE_TEST_OUT_DIR);
    strobe_config c = base_config();
    c.stream_path = path;
    REQUIRE(strobe_start(&c) == 0);
    heap_ev_outer();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    const char *key = "\"Call stack\"";
    const char *at = strstr(text, key);
    REQUIRE(at != NULL);
    CHECK(strstr(at + 1, key) == NULL); /* one: the stackless events and the range have none */
    /* The event that holds it is the [memory] one: no other event name comes between. */
    const char *ev = at;
    while (ev > text && strncmp(ev, "\"name\"", 6) != 0)
        ev--;
    CHECK(strncmp(ev, "\"name\"", 6) == 0 && strstr(ev, "[memory]") != NULL &&
          strstr(ev, "[memory]") < at);
    const char *v = at + strlen(key);
    while (*v == ':' || *v == ' ')
        v++;
    printf("stream: [memory] Call stack %.120s\n", v);
    check_frames(v);
}

/* The same streamed as Perfetto protobuf: the stack's text is a debug annotation's string,
 * whose bytes are in the file as they are (strobe_check_trace reads the file back fully). */
static void test_stream_pftrace(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/heap_stack_events_stream.pftrace", STROBE_TEST_OUT_DIR);
    strobe_config c = base_config();
    c.stream_path = path;
    REQUIRE(strobe_start(&c) == 0);
    heap_ev_outer();
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    strobe_result_free(r);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    static char bytes[1 << 20];
    size_t len = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    const char *leaf = memmem(bytes, len, "heap_ev_leaf", 12);
    REQUIRE(leaf != NULL);
    size_t rest = len - (size_t)(leaf - bytes);
    const char *mid = memmem(leaf, rest, ";heap_ev_mid", 12);
    const char *outer = memmem(leaf, rest, ";heap_ev_outer", 14);
    CHECK(mid != NULL && outer != NULL && mid < outer);
    /* All within one string: no byte below ' ' between the leaf and the outer frame. */
    for (const char *p = leaf; outer && p < outer; p++)
        CHECK((unsigned char)*p >= ' ');
    printf("pftrace: the stack's text at byte %zu\n", (size_t)(leaf - bytes));
}

int main(void) {
    test_result();
    test_stream();
    test_stream_pftrace();
    return check_result();
}
