/* nvtx.c: NVTX capture (see nvtx.h): the tool side of NVTX's injection interface.
 *
 * How NVTX calls become records:
 * - push/pop (A, W, Ex, and the domain versions) are strobe ranges on the calling thread, nested
 *   as they were made (one stack per thread, whatever the domain);
 * - marks are instants;
 * - start/end ranges may end on another thread and may overlap without nesting, so they cannot
 *   join a thread's stack of ranges: each is recorded at its end as a backend event (start and
 *   end times given), which the core lays on a track of its own, "Backend: NVTX" (or the domain's
 *   name), nested there, with an overlapping one ended at the end of the one it overlaps (counted
 *   in stats.clipped_backend_events). The program's threads keep their nesting, and the
 *   validators see only nested slices;
 * - every range and mark is "user_annotation" (Kineto's category of user regions, which torch's
 *   record_function and the tools that read Kineto traces treat as annotations); the domain's name
 *   is the arg "domain" (Nsight shows the domain beside the range's name, not as a kind), a named
 *   NVTX category the arg "category" (its name, else its number), a color the arg "color"
 *   ("#rrggbb"), a payload the arg "payload".
 *
 * Names cost nothing per call once seen: a name becomes an interned call site (core/hooks.h's
 * strobe__site_args, with the domain, category and color as its constant args), found again
 * through a per-thread cache keyed by the message's address and checked by its content (a reused
 * buffer with new text is not mistaken for the old). A registered string is its own site. Text
 * seen at an address that held other text before (a buffer the program rewrites) is copied into
 * the record instead, so that names made per call do not fill the interned table; it is
 * interned anyway when it needs args.
 *
 * Contents: 1. domains, sites and categories (shared, under one lock), 2. the per-thread cache,
 * 3. the callbacks, 4. injection. */
#include "nvtx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include "core/hooks.h"
#include "nvtx_abi.h"
#include "strobe/backend.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "util/json_fmt.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Longest name kept (the core's limit); longer ones are cut. */
#define MAX_NAME 1024u
/* Interned sites beyond this many are not made: their names are copied per use. */
#define MAX_SITES (1u << 20)
#define CACHE_SLOTS 256u
#define UNNAMED "(unnamed)"

/* ---- 1. domains, sites and categories --------------------------------------------------------
 */

/* A domain handle. Never freed: sites and registered strings refer to it after its destroy. */
typedef struct nv_domain {
    char *name; /* UTF-8 */
    char *json; /* the name as a JSON string */
    struct nv_domain *next;
} nv_domain;

/* An interned site: a name in a domain with a category and color. Never freed (records refer to
 * it until the session that holds them stops, and the session may be any later one). */
typedef struct nv_site {
    strobe__site_args sa; /* first: records point at sa.site */
    const nv_domain *dom; /* NULL: NVTX's default domain */
    uint32_t category;
    uint32_t color;
    int has_color;
    uint64_t hash;
    size_t len;
    char name[];
} nv_site;

/* A registered string: its text, and its site without category or color. */
typedef struct nv_string {
    const nv_domain *dom;
    const nv_site *plain;
    char *text;
    struct nv_string *next; /* every registered string, kept for the process (strings) */
} nv_string;

typedef struct nv_category {
    const nv_domain *dom;
    uint32_t id;
    char *json;
    struct nv_category *next;
} nv_category;

typedef struct nv_pending_name {
    int64_t tid;
    char name[64];
    struct nv_pending_name *next;
} nv_pending_name;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nv_site **sites; /* open addressing, by hash */
static size_t site_cap, site_count;
static nv_domain *domains;
static nv_string *strings; /* registered strings, newest first (under lock) */
static nv_category *categories;
static nv_pending_name *pending_names;
static int pending_any; /* atomic: pending_names is not empty */

static uint64_t hash_of(const nv_domain *dom, const char *s, size_t n, uint32_t cat, int has_color,
                        uint32_t color) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= (uint64_t)(uintptr_t)dom * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)cat << 32 | color) * 0xc2b2ae3d27d4eb4full + (uint64_t)has_color;
    return h ^ (h >> 29);
}

/* Under the lock: the JSON of a category's name, or NULL. */
static const char *category_json(const nv_domain *dom, uint32_t id) {
    for (const nv_category *c = categories; c; c = c->next)
        if (c->dom == dom && c->id == id) return c->json;
    return NULL;
}

/* Under the lock: the site's constant args (hooks.h's list), or NULL when it has none. */
static char *site_args(const nv_domain *dom, uint32_t cat, int has_color, uint32_t color) {
    if (dom == NULL && cat == 0 && !has_color) return NULL;
    const char *cj = cat ? category_json(dom, cat) : NULL;
    size_t need = 64 + (dom ? strlen(dom->json) : 0) + (cj ? strlen(cj) : 0);
    char *a = malloc(need), *p = a;
    if (a == NULL) return NULL;
    if (dom) {
        memcpy(p, "domain", 7);
        p += 7;
        size_t n = strlen(dom->json) + 1;
        memcpy(p, dom->json, n);
        p += n;
    }
    if (cat) {
        memcpy(p, "category", 9);
        p += 9;
        if (cj) {
            size_t n = strlen(cj) + 1;
            memcpy(p, cj, n);
            p += n;
        } else {
            p += snprintf(p, need - (size_t)(p - a), "%u", (unsigned)cat) + 1;
        }
    }
    if (has_color) {
        memcpy(p, "color", 6);
        p += 6;
        p += snprintf(p, need - (size_t)(p - a), "\"#%06x\"", (unsigned)(color & 0xffffffu)) + 1;
    }
    *p = '\0';
    return a;
}

static int site_grow(void) {
    size_t cap = site_cap ? site_cap * 2 : 1024;
    nv_site **t = calloc(cap, sizeof *t);
    if (t == NULL) return STROBE_ENOMEM;
    for (size_t i = 0; i < site_cap; i++) {
        nv_site *s = sites[i];
        if (s == NULL) continue;
        size_t j = (size_t)s->hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    free(sites);
    sites = t;
    site_cap = cap;
    return 0;
}

/* The interned site of a name (n bytes) in a domain with a category and color, made on first use.
 * NULL when the table is full or memory ran out: the caller copies the name. */
static const nv_site *intern(const nv_domain *dom, const char *s, size_t n, uint32_t cat,
                             int has_color, uint32_t color) {
    if (n > MAX_NAME) n = MAX_NAME;
    if (!has_color) color = 0;
    uint64_t h = hash_of(dom, s, n, cat, has_color, color);
    nv_site *found = NULL;
    pthread_mutex_lock(&lock);
    if (site_count * 2 >= site_cap && site_grow() != 0) goto out;
    size_t j = (size_t)h & (site_cap - 1);
    for (; sites[j]; j = (j + 1) & (site_cap - 1)) {
        nv_site *x = sites[j];
        if (x->hash == h && x->dom == dom && x->category == cat && x->has_color == has_color &&
            x->color == color && x->len == n && memcmp(x->name, s, n) == 0) {
            found = x;
            goto out;
        }
    }
    if (site_count >= MAX_SITES) goto out;
    nv_site *x = calloc(1, sizeof *x + n + 8); /* zero-padded to whole words (same_text) */
    if (x == NULL) goto out;
    memcpy(x->name, s, n);
    x->dom = dom;
    x->category = cat;
    x->color = color;
    x->has_color = has_color;
    x->hash = h;
    x->len = n;
    x->sa.site.name = x->name;
    x->sa.site.file = "nvtx";
    x->sa.site.scope = STROBE_RECORD_SCOPE_USER_SCOPE;
    x->sa.args = site_args(dom, cat, has_color, color);
    if (x->sa.args) x->sa.site.scope |= STROBE__SITE_HAS_ARGS;
    sites[j] = x;
    site_count++;
    found = x;
out:
    pthread_mutex_unlock(&lock);
    return found;
}

/* Converts a wide (UTF-32) string to UTF-8 in out[cap] (cut at a whole character). */
static size_t utf8_of(const wchar_t *w, char *out, size_t cap) {
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000)) c = 0xfffd;
        char b[4];
        size_t k;
        if (c < 0x80) {
            b[0] = (char)c;
            k = 1;
        } else if (c < 0x800) {
            b[0] = (char)(0xc0 | c >> 6);
            b[1] = (char)(0x80 | (c & 0x3f));
            k = 2;
        } else if (c < 0x10000) {
            b[0] = (char)(0xe0 | c >> 12);
            b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
            b[2] = (char)(0x80 | (c & 0x3f));
            k = 3;
        } else {
            b[0] = (char)(0xf0 | c >> 18);
            b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
            b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
            b[3] = (char)(0x80 | (c & 0x3f));
            k = 4;
        }
        if (n + k >= cap) break;
        memcpy(out + n, b, k);
        n += k;
    }
    out[n] = '\0';
    return n;
}

/* A malloc'd UTF-8 copy of an A or W string. */
static char *text_dup(const char *a, const wchar_t *w) {
    if (a) return strndup(a, MAX_NAME);
    char *out = malloc(4 * MAX_NAME + 1);
    if (out == NULL) return NULL;
    utf8_of(w, out, 4 * MAX_NAME + 1);
    return out;
}

static nv_domain *domain_create(const char *a, const wchar_t *w) {
    char *name = text_dup(a ? a : (w ? NULL : ""), w);
    if (name == NULL) return NULL;
    pthread_mutex_lock(&lock);
    nv_domain *d = domains;
    while (d && strcmp(d->name, name) != 0)
        d = d->next;
    if (d == NULL && (d = calloc(1, sizeof *d)) != NULL) {
        size_t n = strlen(name);
        d->json = malloc(STROBE__JSON_STRING_MAX(n) + 1);
        if (d->json == NULL) {
            free(d);
            d = NULL;
        } else {
            *strobe__json_put_string(d->json, name, n) = '\0';
            d->name = name;
            name = NULL;
            d->next = domains;
            domains = d;
        }
    }
    pthread_mutex_unlock(&lock);
    free(name);
    return d;
}

/* Names category `id` of a domain, and gives the name to the sites made with it before. */
static void category_name(const nv_domain *dom, uint32_t id, const char *a, const wchar_t *w) {
    char *name = text_dup(a ? a : (w ? NULL : ""), w);
    if (name == NULL) return;
    size_t n = strlen(name);
    char *json = malloc(STROBE__JSON_STRING_MAX(n) + 1);
    if (json == NULL) {
        free(name);
        return;
    }
    *strobe__json_put_string(json, name, n) = '\0';
    free(name);
    pthread_mutex_lock(&lock);
    nv_category *c = categories;
    while (c && !(c->dom == dom && c->id == id))
        c = c->next;
    if (c == NULL && (c = calloc(1, sizeof *c)) != NULL) {
        c->dom = dom;
        c->id = id;
        c->next = categories;
        categories = c;
    }
    if (c == NULL) {
        free(json);
    } else {
        /* The old text stays allocated: an earlier list of args may still point into it. */
        c->json = json;
        for (size_t i = 0; i < site_cap; i++) {
            nv_site *s = sites[i];
            if (s == NULL || s->dom != dom || s->category != id) continue;
            char *args = site_args(dom, id, s->has_color, s->color);
            /* The old list stays valid (hooks.h): a decoder may be reading it. */
            if (args) __atomic_store_n(&s->sa.args, args, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
}

static void thread_name(uint32_t tid, const char *a, const wchar_t *w) {
    char *name = text_dup(a ? a : (w ? NULL : ""), w);
    if (name == NULL) return;
    if ((int64_t)tid == (int64_t)syscall(SYS_gettid)) {
        strobe_set_thread_name(name);
    } else if (!strobe__thread_name_tid((int64_t)tid, name)) {
        /* A thread strobe has not met yet: named when it first records through NVTX. */
        nv_pending_name *p = calloc(1, sizeof *p);
        if (p) {
            p->tid = (int64_t)tid;
            strncpy(p->name, name, sizeof p->name - 1);
            pthread_mutex_lock(&lock);
            p->next = pending_names;
            pending_names = p;
            __atomic_store_n(&pending_any, 1, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&lock);
        }
    }
    free(name);
}

/* ---- 2. the per-thread cache -------------------------------------------------------------- */

typedef struct nv_centry {
    const void *key; /* the message's address (or the registered string) */
    uintptr_t dom;   /* the domain, | 1 when a color is given */
    uint64_t attr;   /* category | color << 32 */
    const nv_site *site;
} nv_centry;

typedef struct nv_thread {
    nv_centry cache[CACHE_SLOTS];
    char wbuf[4 * MAX_NAME + 1]; /* a W message in UTF-8 */
} nv_thread;

static __thread nv_thread *tls;
static __thread int depth; /* push/pop nesting, returned by push and pop as NVTX asks */
static pthread_key_t thread_key;

static void thread_free(void *p) {
    free(p);
    tls = NULL;
}

static void apply_pending_name(void) {
    int64_t me = (int64_t)syscall(SYS_gettid);
    pthread_mutex_lock(&lock);
    for (nv_pending_name **l = &pending_names; *l;) {
        nv_pending_name *p = *l;
        if (p->tid == me) {
            strobe_set_thread_name(p->name);
            *l = p->next;
            free(p);
        } else {
            l = &p->next;
        }
    }
    if (pending_names == NULL) __atomic_store_n(&pending_any, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static nv_thread *thread_new(void) {
    nv_thread *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    (void)pthread_setspecific(thread_key, t);
    tls = t;
    if (__atomic_load_n(&pending_any, __ATOMIC_ACQUIRE)) apply_pending_name();
    return t;
}

/* Whether `text` is the site's name, read a word at a time. Each word read from `text` starts
 * at a byte known to be in the string (the words before matched the name, which has no NUL), and
 * a word that would cross into the next page is left to strncmp: no byte past a readable page is
 * read. The last word compares the name's tail and its NUL, masked. */
static inline int same_text(const nv_site *s, const char *text) {
    size_t len = s->len, i = 0;
#ifdef STROBE_UNDER_SANITIZER
    /* The sanitizers see the bytes past the NUL that a word read takes in (harmless here). */
    return strncmp(s->name, text, len + 1) == 0;
#endif
    for (;; i += 8) {
        if (UNLIKELY(((uintptr_t)(text + i) & 4095u) > 4088u))
            return strncmp(s->name + i, text + i, len + 1 - i) == 0;
        uint64_t a, b;
        memcpy(&a, text + i, 8);
        memcpy(&b, s->name + i, 8);
        if (len - i < 8) {
            uint64_t mask = ~(uint64_t)0 >> (8 * (7 - (len - i)));
            return ((a ^ b) & mask) == 0;
        }
        if (a != b) return 0;
    }
}

static inline size_t slot_of(const void *key, uintptr_t dom, uint64_t attr) {
    uint64_t k = (uint64_t)(uintptr_t)key ^ (uint64_t)dom * 31u ^ attr * 0x9e3779b97f4a7c15ull;
    return (size_t)((k >> 3) ^ (k >> 11)) & (CACHE_SLOTS - 1);
}

/* The site of `text` (n bytes) seen at `key`, or NULL when the name is to be copied. */
__attribute__((noinline)) static const nv_site *
resolve_slow(nv_centry *e, const void *key, const char *text, size_t n, const nv_domain *dom,
             uint32_t cat, int has_color, uint32_t color, int payload) {
    uintptr_t d = (uintptr_t)dom | (uintptr_t)(has_color != 0);
    uint64_t attr = cat | (uint64_t)color << 32;
    int reused = e->key == key && e->dom == d && e->attr == attr;
    if (reused && dom == NULL && cat == 0 && !has_color && !payload) return NULL;
    const nv_site *s = intern(dom, text, n, cat, has_color, color);
    if (s && !reused) {
        e->key = key;
        e->dom = d;
        e->attr = attr;
        e->site = s;
    }
    return s;
}

static inline const nv_site *resolve(nv_thread *t, const void *key, const char *text,
                                     const nv_domain *dom, uint32_t cat, int has_color,
                                     uint32_t color, int payload) {
    uintptr_t d = (uintptr_t)dom | (uintptr_t)(has_color != 0);
    uint64_t attr = cat | (uint64_t)(has_color ? color : 0) << 32;
    nv_centry *e = &t->cache[slot_of(key, d, attr)];
    if (LIKELY(e->key == key && e->dom == d && e->attr == attr) && LIKELY(same_text(e->site, text)))
        return e->site;
    return resolve_slow(e, key, text, strnlen(text, MAX_NAME), dom, cat, has_color,
                        has_color ? color : 0, payload);
}

/* ---- 3. the callbacks --------------------------------------------------------------------- */

/* What an NVTX event asks: its name (site, or text to copy) and payload. */
typedef struct nv_event {
    const nv_site *site;
    const char *text;
    int ptype;
    uint64_t pbits;
} nv_event;

/* Reads attributes (any NVTX version: fields past `size` are absent) into an event. 0 when no
 * name can be had (out of memory: nothing recorded). */
static int event_of(nv_thread *t, const nv_domain *dom, const nvabi_attr *a, nv_event *ev) {
    ev->site = NULL;
    ev->text = UNNAMED;
    ev->ptype = 0;
    ev->pbits = 0;
    if (a == NULL || a->size < offsetof(nvabi_attr, message_type)) {
        ev->site = intern(dom, UNNAMED, sizeof UNNAMED - 1, 0, 0, 0);
        return ev->site != NULL;
    }
    uint32_t cat = a->category;
    int has_color = a->color_type == NVABI_COLOR_ARGB;
    uint32_t color = a->color;
    if (a->payload_type >= STROBE__PAYLOAD_U64 && a->payload_type <= STROBE__PAYLOAD_FLOAT) {
        ev->ptype = a->payload_type;
        ev->pbits = a->payload;
        if (ev->ptype >= STROBE__PAYLOAD_U32) ev->pbits &= 0xffffffffu;
    }
    const void *key = NULL;
    const char *text = UNNAMED;
    if (a->size >= NVABI_ATTR_MIN_SIZE && a->message != NULL) {
        if (a->message_type == NVABI_MESSAGE_ASCII) {
            key = text = a->message;
        } else if (a->message_type == NVABI_MESSAGE_UNICODE) {
            key = a->message;
            utf8_of(a->message, t->wbuf, sizeof t->wbuf);
            text = t->wbuf;
        } else if (a->message_type == NVABI_MESSAGE_REGISTERED) {
            const nv_string *h = a->message;
            if (h->dom == dom && cat == 0 && !has_color && h->plain) {
                ev->site = h->plain;
                return 1;
            }
            key = h;
            text = h->text;
        }
    }
    if (key == NULL) {
        ev->site = intern(dom, UNNAMED, sizeof UNNAMED - 1, cat, has_color, color);
        return ev->site != NULL;
    }
    ev->site = resolve(t, key, text, dom, cat, has_color, color, ev->ptype != 0);
    ev->text = text;
    return 1;
}

static inline nv_thread *thread_get(void) {
    nv_thread *t = tls;
    return LIKELY(t != NULL) ? t : thread_new();
}

/* Begins (instant == 0) or marks an event of a domain. */
static void record_attr(const nv_domain *dom, const nvabi_attr *a, int instant) {
    nv_thread *t = thread_get();
    nv_event ev;
    if (t == NULL || !event_of(t, dom, a, &ev)) {
        if (!instant) strobe__begin_name(UNNAMED, STROBE_RECORD_SCOPE_USER_SCOPE);
        return;
    }
    if (ev.site) {
        if (instant) {
            strobe__instant_site_payload(&ev.site->sa.site, ev.ptype, ev.pbits);
        } else {
            strobe__begin_site_payload(&ev.site->sa.site, ev.ptype, ev.pbits);
        }
    } else if (instant) {
        strobe__instant_name(ev.text);
    } else {
        strobe__begin_name(ev.text, STROBE_RECORD_SCOPE_USER_SCOPE);
    }
}

/* Begins or marks an A or W message of the default domain. */
static void record_text(const char *a, const wchar_t *w, int instant) {
    nv_thread *t = thread_get();
    const char *text = a;
    const void *key = a;
    if (t != NULL && w != NULL) {
        utf8_of(w, t->wbuf, sizeof t->wbuf);
        text = t->wbuf;
        key = w;
    }
    if (key == NULL) text = key = UNNAMED;
    const nv_site *s = t ? resolve(t, key, text, NULL, 0, 0, 0, 0) : NULL;
    if (instant) {
        if (s) {
            strobe__instant_site(&s->sa.site);
        } else {
            strobe__instant_name(text);
        }
    } else if (s) {
        strobe__begin_site(&s->sa.site);
    } else {
        strobe__begin_name(text ? text : UNNAMED, STROBE_RECORD_SCOPE_USER_SCOPE);
    }
}

/* ---- capture range (strobe__nvtx_set_capture) ---- */

static char *capture_name; /* set once, before the program's NVTX calls */
static void (*capture_begin)(void), (*capture_end)(void);
static int capture_armed;               /* atomic: a name is set */
static int capture_open;                /* atomic: a range is being captured */
static __thread int capture_level = -1; /* its push level, on the thread that opened it */

void strobe__nvtx_set_capture(const char *name, void (*begin)(void), void (*end)(void)) {
    if (name == NULL || begin == NULL || end == NULL) return;
    capture_name = strdup(name);
    capture_begin = begin;
    capture_end = end;
    if (capture_name) __atomic_store_n(&capture_armed, 1, __ATOMIC_RELEASE);
}

/* A push of `text` at `level`: opens the capture when it is the name and none is open. */
static void capture_push(const char *text, int level) {
    if (text == NULL || strcmp(text, capture_name) != 0) return;
    int closed = 0;
    if (!__atomic_compare_exchange_n(&capture_open, &closed, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    capture_level = level;
    capture_begin();
}

/* The text of a push with attributes, for the capture's comparison (W text in `buf`). */
static const char *attr_text(const nvabi_attr *a, char *buf, size_t cap) {
    if (a == NULL || a->size < NVABI_ATTR_MIN_SIZE || a->message == NULL) return NULL;
    if (a->message_type == NVABI_MESSAGE_ASCII) return a->message;
    if (a->message_type == NVABI_MESSAGE_UNICODE) {
        utf8_of(a->message, buf, cap);
        return buf;
    }
    if (a->message_type == NVABI_MESSAGE_REGISTERED) return ((const nv_string *)a->message)->text;
    return NULL;
}

static void capture_push_w(const wchar_t *msg, int level) {
    char buf[4 * MAX_NAME + 1];
    if (msg == NULL) return;
    utf8_of(msg, buf, sizeof buf);
    capture_push(buf, level);
}

static void capture_push_attr(const nvabi_attr *a, int level) {
    char buf[4 * MAX_NAME + 1];
    capture_push(attr_text(a, buf, sizeof buf), level);
}

/* The begin and end of a cached site, given strobe__active as read once by the caller (with
 * the recording bit set): the markers' check costs a bit test of it, not a load of their table
 * (core/hooks.h, strobe__begin_site_record). */
static inline void begin_cached(const strobe_site *site, int act) {
    if (LIKELY(!(act & STROBE__ACTIVE_MARKERS)))
        strobe__begin_site_record(site);
    else
        strobe__begin_site_internal(site);
}

static int push_a(const char *msg) {
    int level = depth++;
    if (UNLIKELY(__atomic_load_n(&capture_armed, __ATOMIC_RELAXED))) capture_push(msg, level);
    int act = STROBE__ACTIVE();
    if (UNLIKELY(act & STROBE__ACTIVE_RECORDING)) {
        /* The common case inline: a message seen before at this address, with the same text. */
        nv_thread *t = tls;
        if (LIKELY(t != NULL && msg != NULL)) {
            nv_centry *e = &t->cache[slot_of(msg, 0, 0)];
            if (LIKELY(e->key == msg && e->dom == 0 && e->attr == 0) &&
                LIKELY(same_text(e->site, msg))) {
                begin_cached(&e->site->sa.site, act);
                return level;
            }
        }
        record_text(msg, NULL, 0);
    }
    return level;
}

static int push_w(const wchar_t *msg) {
    int level = depth++;
    if (UNLIKELY(__atomic_load_n(&capture_armed, __ATOMIC_RELAXED))) capture_push_w(msg, level);
    if (UNLIKELY(strobe_is_active())) record_text(NULL, msg, 0);
    return level;
}

static int push_ex(const nvabi_attr *a) {
    int level = depth++;
    if (UNLIKELY(__atomic_load_n(&capture_armed, __ATOMIC_RELAXED))) capture_push_attr(a, level);
    if (UNLIKELY(strobe_is_active())) record_attr(NULL, a, 0);
    return level;
}

static int domain_push_ex(const nv_domain *dom, const nvabi_attr *a) {
    int level = depth++;
    if (UNLIKELY(__atomic_load_n(&capture_armed, __ATOMIC_RELAXED))) capture_push_attr(a, level);
    int act = STROBE__ACTIVE();
    if (UNLIKELY(act & STROBE__ACTIVE_RECORDING)) {
        /* The common case inline: a registered string of this domain, nothing else given. */
        if (LIKELY(a != NULL && a->size >= NVABI_ATTR_MIN_SIZE &&
                   a->message_type == NVABI_MESSAGE_REGISTERED && a->message != NULL &&
                   a->category == 0 && a->color_type != NVABI_COLOR_ARGB && a->payload_type == 0)) {
            const nv_string *h = a->message;
            if (LIKELY(h->dom == dom && h->plain != NULL)) {
                begin_cached(&h->plain->sa.site, act);
                return level;
            }
        }
        record_attr(dom, a, 0);
    }
    return level;
}

static int pop(void) {
    if (depth == 0) return -1; /* NVTX: an error is a negative value */
    int level = --depth;
    int act = STROBE__ACTIVE();
    if (UNLIKELY(act & STROBE__ACTIVE_RECORDING)) {
        if (LIKELY(!(act & STROBE__ACTIVE_MARKERS)))
            strobe__end_record();
        else
            strobe__end_internal();
    }
    if (UNLIKELY(level == capture_level)) {
        /* The captured range ends (its end is recorded above): the capture closes. */
        capture_level = -1;
        capture_end();
        __atomic_store_n(&capture_open, 0, __ATOMIC_RELEASE);
    }
    return level;
}

static int domain_pop(const nv_domain *dom) {
    (void)dom;
    return pop();
}

static void mark_a(const char *msg) {
    if (UNLIKELY(strobe_is_active())) record_text(msg, NULL, 1);
}

static void mark_w(const wchar_t *msg) {
    if (UNLIKELY(strobe_is_active())) record_text(NULL, msg, 1);
}

static void mark_ex(const nvabi_attr *a) {
    if (UNLIKELY(strobe_is_active())) record_attr(NULL, a, 1);
}

static void domain_mark_ex(const nv_domain *dom, const nvabi_attr *a) {
    if (UNLIKELY(strobe_is_active())) record_attr(dom, a, 1);
}

/* A start/end range: its start and name (see the top of the file for where it goes). */
typedef struct nv_range {
    int64_t start_ns;
    const nv_domain *dom;
    char name[];
} nv_range;

/* @return the range id: 0 when no session records (its end then records nothing). */
static uint64_t start_range(const nv_domain *dom, const nvabi_attr *a, const char *ma,
                            const wchar_t *mw) {
    if (!strobe_is_active()) return 0;
    nv_thread *t = thread_get();
    if (t == NULL) return 0;
    const char *text = ma ? ma : UNNAMED;
    if (mw) {
        utf8_of(mw, t->wbuf, sizeof t->wbuf);
        text = t->wbuf;
    } else if (ma == NULL) {
        nv_event ev;
        if (!event_of(t, dom, a, &ev)) return 0;
        text = ev.site ? ev.site->name : ev.text;
    }
    size_t n = strnlen(text, MAX_NAME);
    nv_range *r = malloc(sizeof *r + n + 1);
    if (r == NULL) return 0;
    memcpy(r->name, text, n);
    r->name[n] = '\0';
    r->dom = dom;
    r->start_ns = strobe_clock_now_ns();
    return (uint64_t)(uintptr_t)r;
}

static void end_range(uint64_t id) {
    if (id == 0) return;
    nv_range *r = (nv_range *)(uintptr_t)id;
    if (strobe_is_active())
        strobe_record_backend_event_ns(r->start_ns, strobe_clock_now_ns(), 0, r->name,
                                       r->dom ? r->dom->name : "NVTX");
    free(r);
}

static uint64_t range_start_a(const char *m) {
    return start_range(NULL, NULL, m ? m : UNNAMED, NULL);
}
static uint64_t range_start_w(const wchar_t *m) {
    return m ? start_range(NULL, NULL, NULL, m) : start_range(NULL, NULL, UNNAMED, NULL);
}
static uint64_t range_start_ex(const nvabi_attr *a) {
    return start_range(NULL, a, NULL, NULL);
}
static uint64_t domain_range_start_ex(const nv_domain *dom, const nvabi_attr *a) {
    return start_range(dom, a, NULL, NULL);
}
static void domain_range_end(const nv_domain *dom, uint64_t id) {
    (void)dom;
    end_range(id);
}

static void name_category_a(uint32_t id, const char *name) {
    category_name(NULL, id, name, NULL);
}
static void name_category_w(uint32_t id, const wchar_t *name) {
    category_name(NULL, id, NULL, name);
}
static void domain_name_category_a(const nv_domain *dom, uint32_t id, const char *name) {
    category_name(dom, id, name, NULL);
}
static void domain_name_category_w(const nv_domain *dom, uint32_t id, const wchar_t *name) {
    category_name(dom, id, NULL, name);
}
static void name_os_thread_a(uint32_t tid, const char *name) {
    thread_name(tid, name, NULL);
}
static void name_os_thread_w(uint32_t tid, const wchar_t *name) {
    thread_name(tid, NULL, name);
}

static const nv_string *register_string(const nv_domain *dom, const char *a, const wchar_t *w) {
    nv_string *h = calloc(1, sizeof *h);
    if (h == NULL) return NULL;
    h->text = text_dup(a ? a : (w ? NULL : ""), w);
    if (h->text == NULL) {
        free(h);
        return NULL;
    }
    h->dom = dom;
    h->plain = intern(dom, h->text, strlen(h->text), 0, 0, 0);
    /* Handles are never released (NVTX has no call for it): listed, so that they stay reachable
     * for the process's lifetime as domains do. */
    pthread_mutex_lock(&lock);
    h->next = strings;
    strings = h;
    pthread_mutex_unlock(&lock);
    return h;
}
static const nv_string *register_string_a(const nv_domain *dom, const char *s) {
    return register_string(dom, s, NULL);
}
static const nv_string *register_string_w(const nv_domain *dom, const wchar_t *s) {
    return register_string(dom, NULL, s);
}
static const nv_domain *domain_create_a(const char *name) {
    return domain_create(name, NULL);
}
static const nv_domain *domain_create_w(const wchar_t *name) {
    return domain_create(NULL, name);
}
/* Kept: sites and registered strings of the domain may still be used or recorded. */
static void domain_destroy(const nv_domain *dom) {
    (void)dom;
}
static void initialize(const void *reserved) {
    (void)reserved;
}

/* ---- 4. injection ------------------------------------------------------------------------ */

typedef struct nv_slot {
    int id;
    nvabi_fn fn;
} nv_slot;

#define SLOT(id, f)                                                                                \
    { id, (nvabi_fn)(f) }

static const nv_slot core_slots[] = {
    SLOT(NVABI_CORE_MarkEx, mark_ex),
    SLOT(NVABI_CORE_MarkA, mark_a),
    SLOT(NVABI_CORE_MarkW, mark_w),
    SLOT(NVABI_CORE_RangeStartEx, range_start_ex),
    SLOT(NVABI_CORE_RangeStartA, range_start_a),
    SLOT(NVABI_CORE_RangeStartW, range_start_w),
    SLOT(NVABI_CORE_RangeEnd, end_range),
    SLOT(NVABI_CORE_RangePushEx, push_ex),
    SLOT(NVABI_CORE_RangePushA, push_a),
    SLOT(NVABI_CORE_RangePushW, push_w),
    SLOT(NVABI_CORE_RangePop, pop),
    SLOT(NVABI_CORE_NameCategoryA, name_category_a),
    SLOT(NVABI_CORE_NameCategoryW, name_category_w),
    SLOT(NVABI_CORE_NameOsThreadA, name_os_thread_a),
    SLOT(NVABI_CORE_NameOsThreadW, name_os_thread_w),
};

static const nv_slot core2_slots[] = {
    SLOT(NVABI_CORE2_DomainMarkEx, domain_mark_ex),
    SLOT(NVABI_CORE2_DomainRangeStartEx, domain_range_start_ex),
    SLOT(NVABI_CORE2_DomainRangeEnd, domain_range_end),
    SLOT(NVABI_CORE2_DomainRangePushEx, domain_push_ex),
    SLOT(NVABI_CORE2_DomainRangePop, domain_pop),
    SLOT(NVABI_CORE2_DomainNameCategoryA, domain_name_category_a),
    SLOT(NVABI_CORE2_DomainNameCategoryW, domain_name_category_w),
    SLOT(NVABI_CORE2_DomainRegisterStringA, register_string_a),
    SLOT(NVABI_CORE2_DomainRegisterStringW, register_string_w),
    SLOT(NVABI_CORE2_DomainCreateA, domain_create_a),
    SLOT(NVABI_CORE2_DomainCreateW, domain_create_w),
    SLOT(NVABI_CORE2_DomainDestroy, domain_destroy),
    SLOT(NVABI_CORE2_Initialize, initialize),
};

/* Fills the slots of one module's table that NVTX offers. @return 1 when the table was found. */
static int fill(const nvabi_callbacks *cb, int module, const nv_slot *slots, size_t n) {
    nvabi_table table = NULL;
    unsigned size = 0;
    if (!cb->get_module_table(module, &table, &size) || table == NULL) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned id = (unsigned)slots[i].id;
        if (id < size && table[id] != NULL) *table[id] = slots[i].fn;
    }
    return 1;
}

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static void setup(void) {
    (void)pthread_key_create(&thread_key, thread_free);
}

int strobe__nvtx_inject(void *get_export_table) {
    if (get_export_table == NULL) return STROBE_EINVAL;
    nvabi_get_export_table get;
    memcpy(&get, &get_export_table, sizeof get);
    const nvabi_callbacks *cb = get(NVABI_ETID_CALLBACKS);
    if (cb == NULL || cb->struct_size < sizeof *cb || cb->get_module_table == NULL)
        return STROBE_EINVAL;
    pthread_once(&setup_once, setup);
    if (!fill(cb, NVABI_MODULE_CORE, core_slots, sizeof core_slots / sizeof *core_slots))
        return STROBE_EINVAL;
    (void)fill(cb, NVABI_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof *core2_slots);
    return 1;
}
