/* folded.c: folded stacks as a tree of frames (see folded.h).
 *
 * Contents: nodes, the stack of an event (memoized), the metrics, folded lines.
 *
 * The frames of an event are computed once per event and once per distinct "Call stack": an
 * operator's node is its enclosing operator's node (or the node of its own "Call stack") with its
 * name below, so a trace is folded in time linear in its events, whatever the depth. */
#include "folded.h"

#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "oplink.h"
#include "strobe/error.h"

/* ---- nodes --------------------------------------------------------------------------------- */

/* The frame name made safe in f->scratch: ';' and control characters (C0, DEL and the C1
 * controls U+0080..U+009F, two bytes in UTF-8) become one '_' each, so that a stack stays one
 * line of frames. @return its length, or -1 when out of memory. */
static int64_t safe_name(md_fold *f, const char *s, size_t n) {
    if (n + 1 > f->scratch_cap) {
        size_t cap = f->scratch_cap ? f->scratch_cap : 256;
        while (cap < n + 1)
            cap *= 2;
        char *p = realloc(f->scratch, cap);
        if (p == NULL) return -1;
        f->scratch = p;
        f->scratch_cap = cap;
    }
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == 0xc2 && k + 1 < n && (unsigned char)s[k + 1] >= 0x80 &&
            (unsigned char)s[k + 1] < 0xa0) {
            k++;
            c = 0;
        }
        f->scratch[len++] = c == ';' || c < 0x20 || c == 0x7f ? '_' : (char)c;
    }
    f->scratch[len] = '\0';
    return (int64_t)len;
}

/* The node of frame s[0..n) under `parent`, made when new with `kind`. @return the node, or
 * MD_NONE when out of memory. */
static uint32_t child(md_fold *f, uint32_t parent, const char *s, size_t n, int kind) {
    if (f->count == f->cap) {
        size_t cap = f->cap * 2;
        md_fold_node *p = cap < MD_NONE ? realloc(f->nodes, cap * sizeof *p) : NULL;
        if (p == NULL) return MD_NONE;
        f->nodes = p;
        f->cap = cap;
    }
    int64_t len = safe_name(f, s, n);
    int64_t name =
        len < 0 ? STROBE_ENOMEM : strobe__strtab_intern(&f->names, f->scratch, (size_t)len);
    if (name < 0) return MD_NONE;
    int fresh;
    uint64_t *v = strobe__u64map_put(&f->children, (uint64_t)parent << 32 | (uint64_t)name, &fresh);
    if (v == NULL) return MD_NONE;
    if (!fresh) return (uint32_t)*v;
    f->nodes[f->count] = (md_fold_node){parent, (uint32_t)name, (uint8_t)kind, {0, 0}};
    *v = f->count;
    return (uint32_t)f->count++;
}

int md_fold_init(md_fold *f) {
    memset(f, 0, sizeof *f);
    strobe__strtab_init(&f->names, &f->pool);
    int64_t name = strobe__strtab_intern(&f->names, "all", 3);
    f->nodes = malloc(1024 * sizeof *f->nodes);
    if (name < 0 || f->nodes == NULL) return STROBE_ENOMEM;
    f->cap = 1024;
    f->nodes[0] = (md_fold_node){MD_NONE, (uint32_t)name, MD_FRAME_OTHER, {0, 0}};
    f->count = 1;
    return 0;
}

void md_fold_free(md_fold *f) {
    free(f->nodes);
    free(f->scratch);
    strobe__u64map_free(&f->children);
    strobe__strtab_release(&f->names);
    strobe__pool_release(&f->pool);
    memset(f, 0, sizeof *f);
}

/* ---- the stack of an event ----------------------------------------------------------------- */

/* One md_fold_add(): the tree, the trace, and what is memoized for it. */
typedef struct fold_ctx {
    md_fold *f;
    const md_model *m;
    md_fold_group group;
    struct memo_slot {
        uint32_t ev, node;
    } * memo;               /* events' nodes of their own frame, the last few (a cache) */
    strobe__u64map stacks;  /* "Call stack" string id -> node of its innermost Python frame */
    strobe__u64map natives; /* a sample's "Call stack" string id -> node of its leaf */
    uint32_t *chain;        /* events whose node is being made */
    size_t chain_cap;
    uint32_t *up; /* per event: its frame's parent (fold_parents) */
} fold_ctx;

/* The memo's slots: a direct-mapped cache by event, which holds the operators enclosing the
 * events being folded (an event's node is made again, the same, when its slot was taken). */
#define MEMO_BITS 12

static struct memo_slot *memo_slot_of(const fold_ctx *c, uint32_t x) {
    return &c->memo[(uint32_t)(x * 2654435761u) >> (32 - MEMO_BITS)];
}

static int frame_kind(int md) {
    switch (md) {
    case MD_CPU_OP:
        return MD_FRAME_OP;
    case MD_USER_ANNOTATION:
        return MD_FRAME_USER;
    case MD_PYTHON:
        return MD_FRAME_PYTHON;
    case MD_KERNEL:
    case MD_MEMCPY:
    case MD_MEMSET:
        return MD_FRAME_DEVICE;
    case MD_RUNTIME:
    case MD_DRIVER:
        return MD_FRAME_RUNTIME;
    default:
        return MD_FRAME_OTHER;
    }
}

/* The parent of each event's frame, in c->up: the innermost operator enclosing it on its thread
 * (md_op_parent) that contains it whole. An event that starts inside an operator and ends after
 * it (a partial overlap) is not below it, as it is not its child in torch's tree (md_cpu_selfs),
 * which does not take its time from that operator's self time either: a chain of events each
 * overlapping the next would otherwise give one stack as deep as the chain per event (n events,
 * n^2/2 frames), and a flame graph in which each is as wide as all the rest. Each thread's events
 * come parents first, so an enclosing operator's own parent is known; one that ends before the
 * event does is skipped with all the operators it does not lie whole in. @return 0 or
 * STROBE_ENOMEM. */
static int fold_parents(fold_ctx *c) {
    const md_model *m = c->m;
    /* Where every event lies whole in its enclosing operator (traces without partial overlaps,
     * the usual case), the parents are md_op_parent's, and no array is made (up_of). */
    int overlaps = 0;
    for (size_t i = 0; i < m->count && !overlaps; i++) {
        uint32_t p = md_op_parent(m, (uint32_t)i);
        overlaps = p != MD_NONE && md_add_sat(md_ts(m, p), md_dur(m, p)) <
                                       md_add_sat(md_ts(m, (uint32_t)i), md_dur(m, (uint32_t)i));
    }
    if (!overlaps) return 0;
    c->up = malloc((m->count ? m->count : 1) * sizeof *c->up);
    if (c->up == NULL) return STROBE_ENOMEM;
    for (size_t t = 0; t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        for (size_t k = 0; k < th->count; k++) {
            uint32_t i = th->order[k], p = md_op_parent(m, i);
            int64_t end = md_add_sat(md_ts(m, i), md_dur(m, i));
            while (p != MD_NONE && md_add_sat(md_ts(m, p), md_dur(m, p)) < end)
                p = c->up[p];
            c->up[i] = p;
        }
    }
    return 0;
}

/* Event i's frame's parent (fold_parents). */
static uint32_t up_of(const fold_ctx *c, uint32_t i) {
    return c->up ? c->up[i] : md_op_parent(c->m, i);
}

/* The node of the frames of a "Call stack" (Kineto writes them innermost first, joined by ';';
 * the tree gets them root first; empty frames are left out) under the root, memoized in `memo`.
 * @return the node (the root for a stack of no frames), or MD_NONE when out of memory. */
static uint32_t stack_node(fold_ctx *c, strobe__u64map *memo, uint32_t stack, int kind) {
    uint64_t *v = strobe__u64map_get(memo, stack);
    if (v) return (uint32_t)*v;
    const char *s = md_str(c->m, stack);
    size_t end = strlen(s);
    uint32_t node = 0;
    while (end > 0 && node != MD_NONE) {
        size_t start = end;
        while (start > 0 && s[start - 1] != ';')
            start--;
        if (end > start) node = child(c->f, node, s + start, end - start, kind);
        end = start ? start - 1 : 0;
    }
    if (node == MD_NONE || (v = strobe__u64map_put(memo, stack, NULL)) == NULL) return MD_NONE;
    *v = node;
    return node;
}

/* The node of event i's own frame: the node of its "Call stack" (MD_FOLD_STACK) or else of its
 * enclosing operator (c->up), with its name below. @return the node, or MD_NONE when out of memory.
 */
static uint32_t event_node(fold_ctx *c, uint32_t i) {
    const md_model *m = c->m;
    size_t n = 0;
    uint32_t base = 0;
    for (uint32_t x = i; x != MD_NONE; x = up_of(c, x)) {
        const struct memo_slot *ms = memo_slot_of(c, x);
        if (ms->ev == x) {
            base = ms->node;
            break;
        }
        if (n == c->chain_cap) {
            size_t cap = c->chain_cap ? c->chain_cap * 2 : 64;
            uint32_t *p = realloc(c->chain, cap * sizeof *p);
            if (p == NULL) return MD_NONE;
            c->chain = p;
            c->chain_cap = cap;
        }
        c->chain[n++] = x;
        uint32_t stack = (m->ev_flags[x] & MD_F_COLD) ? md_at(m, x).stack : 0; /* a cold field */
        if (c->group == MD_FOLD_STACK && stack) {
            base = stack_node(c, &c->stacks, stack, MD_FRAME_PYTHON);
            break;
        }
    }
    while (n-- > 0 && base != MD_NONE) {
        const char *name = md_str(m, md_name_of(m, c->chain[n]));
        base = child(c->f, base, name, strlen(name), frame_kind(md_kind_of(m, c->chain[n])));
        *memo_slot_of(c, c->chain[n]) = (struct memo_slot){c->chain[n], base};
    }
    return base;
}

/* The node of event i's enclosing operator, or (`outside`) a frame of that name under the root
 * for an event that has none. @return MD_NONE when out of memory. */
static uint32_t owner_node(fold_ctx *c, uint32_t owner, const char *outside) {
    if (owner != MD_NONE) return event_node(c, owner);
    return child(c->f, 0, outside, strlen(outside), MD_FRAME_OTHER);
}

static void add(md_fold *f, uint32_t node, int slot, int64_t w) {
    f->nodes[node].self[slot] = md_add_sat(f->nodes[node].self[slot], w);
}

/* ---- the metrics --------------------------------------------------------------------------- */

static const char outside_ranges[] = "[outside any range]";

/* Self CPU time, folded thread by thread. The nodes are then numbered as folding the events in
 * file order numbers them (the flame graph draws siblings in that order where names tie): a
 * node is made by the first event, in file order, whose stack passes through it, root first. */
typedef struct self_fold {
    fold_ctx *c;
    int slot;
    uint64_t count;
    uint32_t base;  /* the first node this fold made */
    uint32_t *own;  /* per node from base: the first event whose stack ends there, or MD_NONE */
    size_t own_cap; /* nodes from base that own has room for */
    size_t owned;   /* nodes from base whose own is set (MD_NONE before an event's) */
    uint32_t *key;  /* per node from base: the first event whose stack passes through it */
} self_fold;

/* md_cpu_selfs()'s callback: an event with a self time is a sample. */
static int fold_self(void *ctx, uint32_t i, int64_t self) {
    self_fold *sf = ctx;
    md_fold *f = sf->c->f;
    if (self == 0) return 0;
    uint32_t node = event_node(sf->c, i);
    if (node == MD_NONE) return STROBE_ENOMEM;
    add(f, node, sf->slot, self);
    sf->count++;
    size_t made = f->count - sf->base;
    if (made > sf->own_cap) {
        size_t cap = sf->own_cap ? sf->own_cap : 256;
        while (cap < made)
            cap *= 2;
        uint32_t *p = realloc(sf->own, cap * sizeof *p);
        if (p == NULL) return STROBE_ENOMEM;
        sf->own = p;
        sf->own_cap = cap;
    }
    for (; sf->owned < made; sf->owned++)
        sf->own[sf->owned] = MD_NONE;
    if (node >= sf->base && sf->own[node - sf->base] > i) sf->own[node - sf->base] = i;
    return 0;
}

/* Once the events are folded: each node's key (the least own of the nodes at and below it), and
 * its kind, that of the frame that made it first: walking up from the node where the key's event
 * ends, the nodes are those of the event's enclosing operators (x), up to one with a "Call
 * stack", then its Python frames. The nodes whose key is one event lie on one path up from where
 * it ends, so each node is walked once (an event's nodes were walked at each event, n^2/2 nodes
 * for n nested ranges, as the events come innermost first). @return 0 or STROBE_ENOMEM. */
static int first_events(self_fold *sf) {
    md_fold *f = sf->c->f;
    size_t n = f->count - sf->base;
    if (n == 0) return 0;
    sf->key = malloc(n * sizeof *sf->key);
    if (sf->key == NULL) return STROBE_ENOMEM;
    for (size_t k = 0; k < n; k++)
        sf->key[k] = k < sf->owned ? sf->own[k] : MD_NONE;
    /* A parent's index is below its children's. */
    for (size_t k = n; k-- > 0;) {
        uint32_t p = f->nodes[sf->base + k].parent;
        if (p != MD_NONE && p >= sf->base && sf->key[p - sf->base] > sf->key[k])
            sf->key[p - sf->base] = sf->key[k];
    }
    for (size_t k = 0; k < sf->owned; k++) {
        uint32_t i = sf->own[k], x = i;
        if (i == MD_NONE || sf->key[k] != i) continue;
        for (uint32_t y = sf->base + (uint32_t)k;
             y != MD_NONE && y >= sf->base && sf->key[y - sf->base] == i; y = f->nodes[y].parent) {
            f->nodes[y].kind = MD_FRAME_PYTHON;
            if (x == MD_NONE) continue;
            f->nodes[y].kind = (uint8_t)frame_kind(md_kind_of(sf->c->m, x));
            int stack = sf->c->group == MD_FOLD_STACK && (sf->c->m->ev_flags[x] & MD_F_COLD) &&
                        md_at(sf->c->m, x).stack;
            x = stack ? MD_NONE : up_of(sf->c, x);
        }
    }
    return 0;
}

typedef struct node_order {
    uint32_t key, depth, node;
} node_order;

static int by_first_event(const void *a, const void *b) {
    const node_order *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Numbers the nodes from sf->base by (first event, depth), and the child map anew. @return 0 or
 * STROBE_ENOMEM. */
static int renumber(self_fold *sf) {
    md_fold *f = sf->c->f;
    size_t n = f->count - sf->base;
    if (n == 0) return 0;
    node_order *ord = malloc(n * sizeof *ord);
    md_fold_node *old = malloc(n * sizeof *old);
    uint32_t *to = malloc(n * sizeof *to);
    int err = ord && old && to ? 0 : STROBE_ENOMEM;
    for (size_t k = 0; !err && k < n; k++) {
        uint32_t p = f->nodes[sf->base + k].parent;
        ord[k].key = sf->key[k];
        ord[k].depth = p != MD_NONE && p >= sf->base ? ord[p - sf->base].depth + 1 : 0;
        ord[k].node = (uint32_t)k;
        old[k] = f->nodes[sf->base + k];
    }
    if (!err) {
        qsort(ord, n, sizeof *ord, by_first_event);
        for (size_t r = 0; r < n; r++)
            to[ord[r].node] = sf->base + (uint32_t)r;
        for (size_t k = 0; k < n; k++) {
            md_fold_node x = old[k];
            if (x.parent != MD_NONE && x.parent >= sf->base) x.parent = to[x.parent - sf->base];
            f->nodes[to[k]] = x;
        }
        strobe__u64map_free(&f->children);
        if (strobe__u64map_reserve(&f->children, f->count)) err = STROBE_ENOMEM;
        for (size_t k = 1; !err && k < f->count; k++) {
            uint64_t *v = strobe__u64map_put(
                &f->children, (uint64_t)f->nodes[k].parent << 32 | f->nodes[k].name, NULL);
            if (v == NULL) err = STROBE_ENOMEM;
            if (v) *v = k;
        }
    }
    free(ord);
    free(old);
    free(to);
    return err;
}

int md_fold_add(md_fold *f, const md_model *m, md_fold_metric metric, md_fold_group group, int slot,
                uint64_t *samples) {
    size_t nev = m->count ? m->count : 1;
    fold_ctx c = {.f = f, .m = m, .group = group};
    uint64_t count = 0;
    int64_t *w = NULL;
    uint32_t *owner = NULL;
    int err = STROBE_ENOMEM;
    c.memo = malloc(((size_t)1 << MEMO_BITS) * sizeof *c.memo);
    if (c.memo == NULL) goto done;
    for (size_t k = 0; k < (size_t)1 << MEMO_BITS; k++)
        c.memo[k].ev = MD_NONE;
    if (fold_parents(&c)) goto done;
    if (metric == MD_FOLD_SELF_CPU) {
        /* Each event of the CPU tree with a self time is a sample, thread by thread. */
        self_fold sf = {.c = &c, .slot = slot, .base = (uint32_t)f->count};
        err = md_cpu_selfs(m, fold_self, &sf);
        if (!err) err = first_events(&sf);
        if (!err) err = renumber(&sf);
        free(sf.own);
        free(sf.key);
        count = sf.count;
        goto done;
    }
    /* zeroed: md_link() sets 1 + the owner where there is one, so that a trace without device
     * work or memory events never touches its pages */
    if (metric != MD_FOLD_SAMPLES && (owner = calloc(nev, sizeof *owner)) == NULL) goto done;

    switch (metric) {
    case MD_FOLD_SELF_CPU:
        break;
    case MD_FOLD_SELF_CUDA_OP:
        /* A weight per operator (touched only where device work is), then each row that has
         * one is a sample. */
        w = calloc(nev, sizeof *w);
        if (w == NULL) goto done;
        if (md_link(m, owner)) goto done;
        for (size_t i = 0; i < m->count; i++) {
            uint32_t o = owner[i] - 1; /* MD_NONE where 0 */
            if (md_is_device_work(md_kind_of(m, (uint32_t)i)) && o != MD_NONE)
                w[o] = md_add_sat(w[o], md_dur(m, (uint32_t)i));
        }
        for (size_t i = 0; i < m->count; i++) {
            if (w[i] == 0 || !md_is_row(md_kind_of(m, (uint32_t)i))) continue;
            uint32_t node = event_node(&c, (uint32_t)i);
            if (node == MD_NONE) goto done;
            add(f, node, slot, w[i]);
            count++;
        }
        break;
    case MD_FOLD_MEMORY: {
        /* A trace of strobe record --heap: its allocation sites' bytes under their native call
         * stacks (root first), the sites it leaves out under "[other sites]"; its [memory]
         * events, a sample of the same bytes, are not added again. */
        md_heap h;
        int hr = md_heap_read(m->heap_json, &h);
        if (hr == STROBE_ENOMEM) goto done;
        if (hr == 0 && h.n > 0) {
            int64_t rest = h.bytes;
            for (size_t i = 0; i < h.n; i++) {
                const md_heap_site *st = &h.sites[i];
                uint32_t node = 0;
                for (size_t k = st->nframes; k-- > 0 && node != MD_NONE;)
                    node = child(f, node, st->frames[k], strlen(st->frames[k]), MD_FRAME_SAMPLE);
                if (node == MD_NONE) {
                    md_heap_free(&h);
                    goto done;
                }
                add(f, node, slot, st->bytes);
                rest -= st->bytes;
                count++;
            }
            if (rest > 0) {
                static const char other[] = "[other sites]";
                uint32_t node = child(f, 0, other, sizeof other - 1, MD_FRAME_OTHER);
                if (node == MD_NONE) {
                    md_heap_free(&h);
                    goto done;
                }
                add(f, node, slot, rest);
            }
            md_heap_free(&h);
            break;
        }
        if (hr == 0) md_heap_free(&h);
    }
        /* fall through */
    case MD_FOLD_SELF_DEVICE:
        if (md_link(m, owner)) goto done;
        for (size_t i = 0; i < m->count; i++) {
            int kind = md_kind_of(m, (uint32_t)i);
            if (!(metric == MD_FOLD_SELF_DEVICE ? md_is_device_work(kind) : kind == MD_MEMORY))
                continue;
            const md_event ev = md_at(m, (uint32_t)i), *e = &ev;
            uint32_t node, o = owner[i] - 1; /* MD_NONE where 0 */
            if (metric == MD_FOLD_SELF_DEVICE && md_is_device_work(e->kind) && e->dur > 0) {
                /* The launching operator's frames (the root where none is known), then the
                 * kernel's name. */
                node = o != MD_NONE ? event_node(&c, o) : 0;
                const char *name = md_str(m, e->name);
                if (node != MD_NONE) node = child(f, node, name, strlen(name), MD_FRAME_DEVICE);
                if (node == MD_NONE) goto done;
                add(f, node, slot, e->dur);
            } else if (metric == MD_FOLD_MEMORY && e->kind == MD_MEMORY && e->bytes > 0 &&
                       e->has_time && !e->bad) {
                if ((node = owner_node(&c, o, outside_ranges)) == MD_NONE) goto done;
                add(f, node, slot, e->bytes);
            } else {
                continue;
            }
            count++;
        }
        break;
    case MD_FOLD_SAMPLES: {
        /* strobe writes them as instants of category cpu_sample, with their native stack. */
        uint32_t cat = 0;
        for (size_t i = 0; i < m->count && cat == 0; i++)
            if (strcmp(md_str(m, md_cat_of(m, (uint32_t)i)), "cpu_sample") == 0)
                cat = md_cat_of(m, (uint32_t)i);
        for (size_t i = 0; cat && i < m->count; i++) {
            if (md_cat_of(m, (uint32_t)i) != cat) continue;
            const md_event ev = md_at(m, (uint32_t)i), *e = &ev;
            if (e->cat != cat || e->ph != 'i' || e->stack == 0) continue;
            uint32_t node;
            if (group == MD_FOLD_STACK) {
                node = stack_node(&c, &c.natives, e->stack, MD_FRAME_SAMPLE);
                if (node == 0) continue; /* a stack of no frames */
            } else {
                node = owner_node(&c, up_of(&c, (uint32_t)i), outside_ranges);
            }
            if (node == MD_NONE) goto done;
            add(f, node, slot, 1);
            count++;
        }
        break;
    }
    }
    err = 0;
done:
    if (samples) *samples = count;
    free(c.memo);
    free(c.chain);
    free(c.up);
    strobe__u64map_free(&c.stacks);
    strobe__u64map_free(&c.natives);
    free(w);
    free(owner);
    return err;
}

/* ---- folded lines -------------------------------------------------------------------------- */

/* The lines are those of the nodes with a weight, each its path of frames joined by ';', sorted
 * as strings. They are written by walking the tree, never held: a stack is as long as its depth,
 * and the lines of a deep tree add up to far more than the tree (n ranges nested in each other
 * give n lines of 1 to n frames). Under one parent, a child c stands for two items: its own line
 * (c's name, then the end of the line) and the lines below it (c's name, then ';'). As names hold
 * no ';' (safe_name), the lines below c are contiguous in the sorted lines, so sorting each
 * parent's items by name and then that next character, and walking them in that order, writes
 * the lines in string order: a name that is a prefix of a sibling's ("layer1", "layer10") sorts
 * its own line before the sibling's lines and its lines below after them when the sibling's next
 * character is below ';' (as digits are). */
typedef struct item {
    const char *name;
    uint32_t len;
    uint32_t node; /* node << 1, | 1 for the lines below it */
} item;

static int by_item(const void *a, const void *b) {
    const item *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int d = memcmp(x->name, y->name, n);
    if (d) return d;
    /* What follows the name: '\0' (its own line) or ';' (the lines below it). */
    unsigned char cx = x->len > n ? (unsigned char)x->name[n] : (x->node & 1) ? ';' : '\0';
    unsigned char cy = y->len > n ? (unsigned char)y->name[n] : (y->node & 1) ? ';' : '\0';
    return (cx > cy) - (cx < cy);
}

/* A node being walked: the first of its items not yet written, and the length of its path. */
typedef struct walk_at {
    uint32_t next, end;
    size_t len;
} walk_at;

int md_fold_print(const md_fold *f, FILE *out, int64_t unit) {
    size_t n = f->count;
    uint32_t *first = calloc(n + 1, sizeof *first); /* per node: its items from first[node] */
    uint8_t *below = calloc(n, 1);                  /* per node: it has children */
    item *items = NULL;
    walk_at *stack = NULL;
    char *path = NULL;
    size_t path_cap = 0, depth = 0, count = 0;
    int err = first && below ? 0 : STROBE_ENOMEM;
    for (size_t k = 1; !err && k < n; k++)
        below[f->nodes[k].parent] = 1;
    /* Each node's items: its own line where its weight is not 0 once rounded, and its lines
     * below where it has children; counted per parent, then placed. */
    for (size_t k = 1; !err && k < n; k++) {
        uint32_t p = f->nodes[k].parent;
        first[p + 1] += (f->nodes[k].self[0] != 0) + below[k];
    }
    for (size_t k = 0; !err && k < n; k++)
        first[k + 1] += first[k];
    count = err ? 0 : first[n];
    if (!err && ((items = malloc((count ? count : 1) * sizeof *items)) == NULL ||
                 (stack = malloc(n * sizeof *stack)) == NULL))
        err = STROBE_ENOMEM;
    for (size_t k = 1; !err && k < n; k++) {
        const md_fold_node *x = &f->nodes[k];
        item it = {f->names.strs[x->name], (uint32_t)f->names.lens[x->name], (uint32_t)k << 1};
        /* first[p] is moved on past the items placed; set back below */
        if (x->self[0] != 0) items[first[x->parent]++] = it;
        it.node |= 1;
        if (below[k]) items[first[x->parent]++] = it;
    }
    for (size_t k = n; !err && k > 0; k--)
        first[k] = first[k - 1];
    if (!err) first[0] = 0;
    for (size_t k = 0; !err && k < n; k++)
        if (first[k + 1] - first[k] > 1)
            qsort(items + first[k], first[k + 1] - first[k], sizeof *items, by_item);
    if (!err) stack[depth++] = (walk_at){first[0], first[1], 0};
    while (!err && depth) {
        walk_at *at = &stack[depth - 1];
        if (at->next == at->end) {
            depth--;
            continue;
        }
        const item *it = &items[at->next++];
        uint32_t k = it->node >> 1;
        size_t len = at->len + it->len + 1;
        if (len > path_cap) {
            size_t cap = path_cap ? path_cap : 4096;
            while (cap < len)
                cap *= 2;
            char *p = realloc(path, cap);
            if (p == NULL) {
                err = STROBE_ENOMEM;
                break;
            }
            path = p;
            path_cap = cap;
        }
        memcpy(path + at->len, it->name, it->len);
        if (it->node & 1) {
            path[len - 1] = ';';
            stack[depth++] = (walk_at){first[k], first[k + 1], len};
            continue;
        }
        int64_t w = f->nodes[k].self[0];
        if (unit > 1) w = md_add_sat(w, unit / 2) / unit;
        if (w <= 0) continue;
        fwrite(path, 1, len - 1, out);
        fprintf(out, " %lld\n", (long long)w);
    }
    free(first);
    free(below);
    free(items);
    free(stack);
    free(path);
    return err;
}
