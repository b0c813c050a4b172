/* test_nvtx_inject: strobe__nvtx_inject() against export tables made here (the layout of NVTX's
 * injection interface, no NVTX header), so that it runs where the CUDA toolkit is absent:
 * - bad tables are refused with STROBE_EINVAL (NULL, no callbacks table, a short one, no core
 *   module), and leave the slots as they were;
 * - a good table gets its slots filled; a second table (another NVTX instance) too, and the
 *   first stays working;
 * - the filled entry points record into a session: push/pop levels, nesting, a reused buffer
 *   with new text, a domain's registered string, and nothing without a session. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "nvtx/nvtx.h"
#include "strobe/strobe.h"

typedef void (*fn_t)(void);

/* One NVTX instance: its slots (what NVTX calls through) and the tables pointing at them. */
typedef struct instance {
    fn_t core[16], core2[16];
    fn_t *core_table[17], *core2_table[17];
    int have_core;
    size_t struct_size;
} instance;

static instance inst[2];
static instance *cur; /* the instance the next get_module_table call serves */

static int get_module_table(int module, fn_t ***out, unsigned *size) {
    if (module == 1 && cur->have_core) {
        *out = cur->core_table;
        *size = 16;
        return 1;
    }
    if (module == 5) {
        *out = cur->core2_table;
        *size = 16;
        return 1;
    }
    return 0;
}

static struct {
    size_t struct_size;
    int (*get)(int, fn_t ***, unsigned *);
} callbacks;

static const void *get_export_table(uint32_t id) {
    callbacks.struct_size = cur->struct_size;
    callbacks.get = get_module_table;
    return id == 1 ? &callbacks : NULL;
}
static const void *get_nothing(uint32_t id) {
    (void)id;
    return NULL;
}

static void instance_init(instance *in) {
    memset(in, 0, sizeof *in);
    for (int i = 0; i < 16; i++) {
        in->core_table[i] = i ? &in->core[i] : NULL;
        in->core2_table[i] = i ? &in->core2[i] : NULL;
    }
    in->have_core = 1;
    in->struct_size = sizeof callbacks;
}

static int inject(const void *(*get)(uint32_t)) {
    void *p;
    memcpy(&p, &get, sizeof p);
    return strobe__nvtx_inject(p);
}

/* NVTX's event attributes (v2, 48 bytes). */
typedef struct attr {
    uint16_t version, size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type, reserved0;
    uint64_t payload;
    int32_t message_type;
    const void *message;
} attr;

typedef int (*push_a_t)(const char *);
typedef int (*pop_t)(void);
typedef void *(*domain_create_t)(const char *);
typedef void *(*register_fn)(void *, const char *);
typedef int (*domain_push_t)(void *, const attr *);
typedef int (*domain_pop_t)(void *);

int main(void) {
    instance_init(&inst[0]);
    instance_init(&inst[1]);
    cur = &inst[0];

    /* Bad tables. */
    CHECK_EQ(strobe__nvtx_inject(NULL), STROBE_EINVAL);
    CHECK_EQ(inject(get_nothing), STROBE_EINVAL);
    inst[0].struct_size = 4;
    CHECK_EQ(inject(get_export_table), STROBE_EINVAL);
    inst[0].struct_size = sizeof callbacks;
    inst[0].have_core = 0;
    CHECK_EQ(inject(get_export_table), STROBE_EINVAL);
    CHECK(inst[0].core[9] == NULL);
    inst[0].have_core = 1;

    /* Two instances, filled before any session. */
    CHECK_EQ(inject(get_export_table), 1);
    cur = &inst[1];
    CHECK_EQ(inject(get_export_table), 1);
    CHECK_EQ(inject(get_export_table), 1); /* again: harmless */
    for (int k = 0; k < 2; k++) {
        CHECK(inst[k].core[9] != NULL);  /* RangePushA */
        CHECK(inst[k].core[11] != NULL); /* RangePop */
        CHECK(inst[k].core2[4] != NULL); /* DomainRangePushEx */
        CHECK(inst[k].core2[0] == NULL); /* slot 0 is never a function */
    }
    push_a_t push0 = (push_a_t)inst[0].core[9], push1 = (push_a_t)inst[1].core[9];
    pop_t pop0 = (pop_t)inst[0].core[11], pop1 = (pop_t)inst[1].core[11];
    domain_create_t dcreate = (domain_create_t)inst[1].core2[12];
    register_fn reg = (register_fn)inst[0].core2[10];
    domain_push_t dpush = (domain_push_t)inst[0].core2[4];
    domain_pop_t dpop = (domain_pop_t)inst[1].core2[5];

    /* No session: levels still counted, nothing recorded. */
    CHECK_EQ(push0("before"), 0);
    CHECK_EQ(pop1(), 0);
    CHECK_EQ(pop1(), -1); /* nothing to pop */
    void *dom = dcreate("dom");
    CHECK(dom != NULL);
    CHECK(dcreate("dom") == dom); /* one handle per name */
    void *handle = reg(dom, "registered");
    CHECK(handle != NULL);

    strobe_config cfg;
    strobe_config_init(&cfg);
    REQUIRE(strobe_start(&cfg) == 0);
    CHECK_EQ(push0("outer"), 0);
    char buf[16] = "buf-a";
    CHECK_EQ(push1(buf), 1); /* the other instance's entry point: one nesting per thread */
    CHECK_EQ(pop0(), 1);
    strcpy(buf, "buf-b"); /* the same address, new text */
    CHECK_EQ(push0(buf), 1);
    CHECK_EQ(pop0(), 1);
    /* Longer and shorter text at one address: each range keeps its own (checked by name below). */
    strcpy(buf, "buf-longer-c");
    (void)push0(buf);
    (void)pop0();
    strcpy(buf, "b-d");
    (void)push0(buf);
    (void)pop0();
    /* A name that ends at the last byte of a page followed by an unreadable one: the cached
     * comparison must not read past it (a fault would end the test). */
    long pg = sysconf(_SC_PAGESIZE);
    char *pages =
        mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(pages != MAP_FAILED);
    REQUIRE(mprotect(pages + pg, (size_t)pg, PROT_NONE) == 0);
    char *edge = pages + pg - 12;
    memcpy(edge, "edge-of-pg\0", 11);
    edge[11] = '\0';
    for (int i = 0; i < 3; i++) {
        (void)push0(edge);
        (void)pop0();
    }
    attr a;
    memset(&a, 0, sizeof a);
    a.version = 3;
    a.size = sizeof a;
    a.message_type = 3;
    a.message = handle;
    CHECK_EQ(dpush(dom, &a), 1);
    CHECK_EQ(dpop(dom), 1);
    CHECK_EQ(pop1(), 0);
    strobe_result *r = NULL;
    REQUIRE(strobe_stop(&r) == 0);
    (void)push0("after");
    (void)pop0();

    const strobe_event *ev = strobe_result_events(r);
    size_t n = strobe_result_event_count(r), outer = SIZE_MAX;
    int seen_a = 0, seen_b = 0, seen_ab = 0, seen_edge = 0, seen_reg = 0, seen_other = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind != STROBE_EVENT_RANGE || ev[i].device_type != STROBE_DEVICE_CPU) continue;
        if (strcmp(ev[i].name, "outer") == 0) {
            outer = i;
        } else if (strcmp(ev[i].name, "buf-a") == 0) {
            seen_a++;
            CHECK_EQ(ev[i].parent, outer);
        } else if (strcmp(ev[i].name, "buf-b") == 0) {
            seen_b++;
            CHECK_EQ(ev[i].parent, outer);
        } else if (strcmp(ev[i].name, "buf-longer-c") == 0 || strcmp(ev[i].name, "b-d") == 0) {
            seen_ab++;
        } else if (strcmp(ev[i].name, "edge-of-pg") == 0) {
            seen_edge++;
        } else if (strcmp(ev[i].name, "registered") == 0) {
            seen_reg++;
            CHECK_EQ(ev[i].parent, outer);
            CHECK_STR(strobe_event_arg(r, i, "domain"), "\"dom\"");
            CHECK_STR(ev[i].category, "user_annotation");
        } else if (strcmp(ev[i].name, "before") == 0 || strcmp(ev[i].name, "after") == 0) {
            fprintf(stderr, "recorded without a session: %s\n", ev[i].name);
            seen_other++;
        }
    }
    CHECK(outer != SIZE_MAX);
    CHECK_EQ(seen_a, 1);
    CHECK_EQ(seen_b, 1);
    CHECK_EQ(seen_ab, 2);
    CHECK_EQ(seen_edge, 3);
    CHECK_EQ(seen_reg, 1);
    CHECK_EQ(seen_other, 0);
    strobe_result_free(r);
    return check_result();
}
