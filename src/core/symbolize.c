/* symbolize.c: turns captured return addresses into "function (file:line)" strings, once, at
 * stop. This is the cold path: it may allocate, open files and start a process.
 *
 * Contents:
 *   string arena          the symbolizer: it owns every string handed out
 *   loaded modules        dl_iterate_phdr: each module's name, load bias and PT_LOAD ranges
 *   ELF symbol tables     .symtab (or .dynsym) of a module's file, mapped read-only
 *   demangling            C++ names, through libstdc++'s __cxa_demangle (loaded where missing)
 *   addr2line             file:line for all of a module's addresses in one child process
 *   strobe__symbolize     the driver
 *
 * Only the files on disk are read, never the process's memory at the addresses given, so a
 * bogus address (a frame built without frame pointers) costs a "??", never a fault. C++ names
 * are demangled with __cxa_demangle, looked up at run time (dlsym): a C library must not link
 * libstdc++ for C programs; a C++ program usually has it loaded, and one that has not (it calls
 * only C functions) gets it opened the first time a mangled name is met.
 * Inlined levels that are strobe's own (its inline functions, and code whose line lies in
 * strobe's public headers, such as the C++ scope guard's constructor) are left out. */
#include "pyframes.h"
#include "stack.h"
#include "util/err.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- String arena ------------------------------------------------------------------------ */

struct block {
    struct block *next;
    size_t used, cap;
    char data[];
};

struct strobe__symbolizer {
    struct block *blocks;
};

static char *arena_alloc(strobe__symbolizer *s, size_t len) {
    struct block *b = s->blocks;
    if (b == NULL || b->cap - b->used < len) {
        size_t cap = len > 16384 ? len : 16384;
        b = malloc(sizeof *b + cap);
        if (b == NULL) return NULL;
        b->next = s->blocks;
        b->used = 0;
        b->cap = cap;
        s->blocks = b;
    }
    char *p = b->data + b->used;
    b->used += len;
    return p;
}

__attribute__((format(printf, 2, 3))) static const char *arena_printf(strobe__symbolizer *s,
                                                                      const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) return NULL;
    char *p = arena_alloc(s, (size_t)len + 1);
    if (p == NULL) return NULL;
    va_start(ap, fmt);
    (void)vsnprintf(p, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return p;
}

void strobe__symbolizer_free(strobe__symbolizer *s) {
    if (s == NULL) return;
    for (struct block *b = s->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(s);
}

/* Grows *p (of *cap elements of `elem` bytes) to hold at least `need`. @return 0 or STROBE_ENOMEM.
 */
static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    STROBE_RETURN_IF(q == NULL, STROBE_ENOMEM);
    *p = q;
    *cap = c;
    return 0;
}

/* ---- Loaded modules ---------------------------------------------------------------------- */

struct sym {
    uintptr_t value, size;
    const char *name; /* points into the module's mapping */
    int rank;         /* 0 global, 1 weak, 2 local: the preferred name of aliases sorts first */
};

struct module {
    char *name;     /* dlpi_name: "" for the main program */
    int is_main;    /* the first module reported, with an empty name */
    uintptr_t bias; /* load bias: a file's vaddr + bias = the address in memory */
    int parsed;     /* its file was looked at (whatever came of it) */
    void *map;      /* the file, mapped read-only while symbolizing */
    size_t map_size;
    struct sym *syms; /* FUNC symbols sorted by value */
    size_t nsyms;
    /* The unwind table's search index (.eh_frame_hdr's sorted table, in the mapping): where a
     * stripped file has no symbol for an address, it still gives the start of the function
     * holding it. NULL: none, or an encoding this reader does not take. */
    const unsigned char *eh_table;
    size_t eh_count;
    uint64_t eh_vaddr;  /* the .eh_frame_hdr's address (the table's entries are relative to it) */
    int64_t eh_to_file; /* a file offset minus its address, in that segment */
};

struct range {
    uintptr_t lo, hi; /* [lo, hi) in memory */
    size_t mod;
};

struct modules {
    struct module *m;
    size_t n, cap;
    struct range *r;
    size_t nr, rcap;
    int oom;
};

static int collect_module(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct modules *ms = data;
    if (grow((void **)&ms->m, &ms->cap, ms->n + 1, sizeof *ms->m) != 0) {
        ms->oom = 1;
        return 1;
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    struct module *m = &ms->m[ms->n];
    memset(m, 0, sizeof *m);
    m->name = strdup(name);
    if (m->name == NULL) {
        ms->oom = 1;
        return 1;
    }
    /* glibc reports the main program first, with an empty name; the vDSO comes with its soname. */
    m->is_main = ms->n == 0 && name[0] == '\0';
    m->bias = (uintptr_t)info->dlpi_addr;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_memsz == 0) continue;
        if (grow((void **)&ms->r, &ms->rcap, ms->nr + 1, sizeof *ms->r) != 0) {
            ms->oom = 1;
            free(m->name);
            return 1;
        }
        uintptr_t lo = m->bias + (uintptr_t)ph->p_vaddr;
        ms->r[ms->nr++] = (struct range){lo, lo + (uintptr_t)ph->p_memsz, ms->n};
    }
    ms->n++;
    return 0;
}

static void modules_free(struct modules *ms) {
    for (size_t i = 0; i < ms->n; i++) {
        free(ms->m[i].name);
        free(ms->m[i].syms);
        if (ms->m[i].map != NULL) (void)munmap(ms->m[i].map, ms->m[i].map_size);
    }
    free(ms->m);
    free(ms->r);
}

/* The module whose PT_LOAD segments hold `addr`, or ms->n for none. */
static size_t module_of(const struct modules *ms, uintptr_t addr) {
    for (size_t i = 0; i < ms->nr; i++)
        if (addr >= ms->r[i].lo && addr < ms->r[i].hi) return ms->r[i].mod;
    return ms->n;
}

/* The main program's path (readlink of /proc/self/exe), "" where unknown. A deleted file reads
 * "PATH (deleted)": the suffix is kept off so that the name shown is the file's. */
static void main_path(char *buf, size_t size) {
    ssize_t len = readlink("/proc/self/exe", buf, size - 1);
    if (len < 0) len = 0;
    buf[len] = '\0';
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if ((size_t)len > dl && strcmp(buf + len - dl, deleted) == 0) buf[len - dl] = '\0';
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- ELF symbol tables ------------------------------------------------------------------- */

#if UINTPTR_MAX > 0xffffffffu
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

/* Whether [off, off + len) lies within a file of `total` bytes, without overflowing. */
static int within(uint64_t off, uint64_t len, size_t total) {
    return off <= total && len <= total - off;
}

static int cmp_sym(const void *a, const void *b) {
    const struct sym *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return x->rank - y->rank;
}

/* Loads the FUNC symbols of the first section of type `type` (SHT_SYMTAB or SHT_DYNSYM). Every
 * offset, size and index read from the file is checked against the mapping first: the file may
 * be anything. @return 0 (symbols found or not), or STROBE_ENOMEM. */
static int take_table(struct module *m, const unsigned char *base, size_t size,
                      const ElfW(Shdr) * sh, size_t shnum, uint32_t type) {
    const ElfW(Shdr) *tab = NULL;
    for (size_t i = 0; i < shnum && tab == NULL; i++)
        if (sh[i].sh_type == type) tab = &sh[i];
    if (tab == NULL || tab->sh_entsize != sizeof(ElfW(Sym)) || tab->sh_link >= shnum) return 0;
    const ElfW(Shdr) *str = &sh[tab->sh_link];
    if (str->sh_type != SHT_STRTAB || !within(tab->sh_offset, tab->sh_size, size) ||
        !within(str->sh_offset, str->sh_size, size) || tab->sh_offset % _Alignof(ElfW(Sym)) != 0)
        return 0;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)(const void *)(base + tab->sh_offset);
    size_t count = (size_t)(tab->sh_size / sizeof(ElfW(Sym)));
    const char *strtab = (const char *)base + str->sh_offset;
    size_t strsize = (size_t)str->sh_size;

    struct sym *out = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < count; i++) {
        const ElfW(Sym) *s = &syms[i];
        int kind = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF ||
            s->st_value == 0 || s->st_size == 0 || s->st_name == 0 || s->st_name >= strsize)
            continue;
        const char *name = strtab + s->st_name;
        /* The name must end inside the string table. */
        if (memchr(name, '\0', strsize - s->st_name) == NULL) continue;
        if (grow((void **)&out, &cap, n + 1, sizeof *out) != 0) {
            free(out);
            return STROBE_ENOMEM;
        }
        int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        out[n++] = (struct sym){(uintptr_t)s->st_value, (uintptr_t)s->st_size, name, rank};
    }
    if (n > 1) qsort(out, n, sizeof *out, cmp_sym);
    m->syms = out;
    m->nsyms = n;
    return 0;
}

/* ---- Function starts from the unwind table ------------------------------------------------ */

static int32_t rd_s32(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Finds the .eh_frame_hdr (PT_GNU_EH_FRAME) of the mapped file and keeps its search table when
 * it has the encoding every GNU linker writes: version 1, the table's pairs as 4-byte signed
 * offsets from the header (DW_EH_PE_datarel | DW_EH_PE_sdata4), their count as a 4-byte number.
 * Every offset is checked against the mapping. */
static void take_eh_table(struct module *m, const unsigned char *base, size_t size,
                          const ElfW(Ehdr) * eh) {
    if (eh->e_phoff == 0 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
        eh->e_phoff % _Alignof(ElfW(Phdr)) != 0 ||
        !within(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)), size))
        return;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(const void *)(base + eh->e_phoff);
    for (size_t i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_GNU_EH_FRAME || !within(ph[i].p_offset, ph[i].p_filesz, size) ||
            ph[i].p_filesz < 12)
            continue;
        const unsigned char *h = base + ph[i].p_offset;
        /* version; eh_frame_ptr's encoding (4 bytes: sdata4/udata4, pc- or data-relative or
         * absolute); fde_count's (udata4); the table's (datarel | sdata4). */
        if (h[0] != 1 || (h[1] & 0x0f) != 0x0b || h[2] != 0x03 || h[3] != 0x3b) continue;
        uint32_t count;
        memcpy(&count, h + 8, 4);
        if ((uint64_t)count * 8 > ph[i].p_filesz - 12) continue;
        m->eh_table = h + 12;
        m->eh_count = count;
        m->eh_vaddr = (uint64_t)ph[i].p_vaddr;
        m->eh_to_file = (int64_t)ph[i].p_offset - (int64_t)ph[i].p_vaddr;
        return;
    }
}

/* The start of the function holding file address `a`, from the unwind table: the entry with the
 * greatest start at or below `a`, whose description (FDE) must also cover `a`. Only FDEs whose
 * start is a 4-byte pc-relative number (what the table's entry must then equal) are read, so that
 * the 4-byte length after it is read right. @return 1 and *start, or 0. */
static int eh_function_start(const struct module *m, uint64_t a, uint64_t *start) {
    size_t lo = 0, hi = m->eh_count;
    while (lo < hi) { /* the first entry above a */
        size_t mid = lo + (hi - lo) / 2;
        uint64_t v = m->eh_vaddr + (uint64_t)(int64_t)rd_s32(m->eh_table + 8 * mid);
        if (v <= a) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) return 0;
    const unsigned char *e = m->eh_table + 8 * (lo - 1);
    uint64_t fn = m->eh_vaddr + (uint64_t)(int64_t)rd_s32(e);
    uint64_t fde = m->eh_vaddr + (uint64_t)(int64_t)rd_s32(e + 4);
    int64_t off = (int64_t)fde + m->eh_to_file;
    if (off < 0 || !within((uint64_t)off, 16, m->map_size)) return 0;
    const unsigned char *f = (const unsigned char *)m->map + off;
    uint32_t len;
    memcpy(&len, f, 4);
    if (len < 12 || len == 0xffffffffu) return 0; /* too short, or a 64-bit one: not read */
    if (fde + 8 + (uint64_t)(int64_t)rd_s32(f + 8) != fn) return 0;
    uint32_t range;
    memcpy(&range, f + 12, 4);
    if (a - fn >= range) return 0;
    *start = fn;
    return 1;
}

/* Maps the module's file and loads its symbols (.symtab, else .dynsym). A file that cannot be
 * opened or is no ELF file of this machine leaves the module without symbols. Mapping rather
 * than reading keeps a large file's untouched parts (code, debug info) out of memory. @return 0
 * or STROBE_ENOMEM. */
static int load_symbols(struct module *m, const char *path) {
    m->parsed = 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(ElfW(Ehdr)) ||
        (uint64_t)st.st_size > SIZE_MAX) {
        (void)close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    (void)close(fd);
    if (map == MAP_FAILED) return 0;
    m->map = map;
    m->map_size = size;

    const unsigned char *base = map;
    const ElfW(Ehdr) *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != NATIVE_CLASS ||
        eh->e_ident[EI_DATA] != NATIVE_DATA || eh->e_shoff == 0 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff % _Alignof(ElfW(Shdr)) != 0 ||
        !within(eh->e_shoff, sizeof(ElfW(Shdr)), size))
        return 0;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)(base + eh->e_shoff);
    /* With 0xff00 sections or more, e_shnum is 0 and the count is in section 0's sh_size. */
    uint64_t shnum = eh->e_shnum ? eh->e_shnum : sh[0].sh_size;
    if (shnum > (size - eh->e_shoff) / sizeof(ElfW(Shdr))) return 0;
    take_eh_table(m, base, size, eh);
    STROBE_FORWARD_IF_ERR(take_table(m, base, size, sh, (size_t)shnum, SHT_SYMTAB));
    if (m->nsyms == 0) return take_table(m, base, size, sh, (size_t)shnum, SHT_DYNSYM);
    return 0;
}

/* The function symbol whose [value, value + size) holds the file address `a`, or NULL. Where
 * several do (aliases), the innermost wins, then the global one. */
static const struct sym *find_sym(const struct module *m, uintptr_t a) {
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) { /* the first symbol above a */
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].value <= a) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    /* Walk down a bounded way: a symbol lower down may still span `a` (nested or overlapping
     * symbols are rare, so a short walk finds them without making a lookup linear). */
    const struct sym *best = NULL;
    for (size_t k = lo, steps = 0; k > 0 && steps < 64; k--, steps++) {
        const struct sym *s = &m->syms[k - 1];
        if (best != NULL && s->value != best->value) break;
        if (a - s->value < s->size) best = s; /* lower ranks come first within one value */
    }
    return best;
}

/* ---- demangling -------------------------------------------------------------------------- */

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_demangle_once = PTHREAD_ONCE_INIT;

/* libstdc++'s __cxa_demangle for a process that has no libstdc++ loaded: a C++ program built
 * with only C library calls (printf, no iostream or new) links none, though its symbols are
 * mangled, and `strobe record` symbolizes inside the recorded program. The library is opened
 * local (its symbols do not join the program's), once, and stays open: the names it returns are
 * those c++filt prints, from the same demangler. NULL where no libstdc++ is installed (names then
 * stay mangled). */
static void *load_demangler(void) {
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    return h ? dlsym(h, "__cxa_demangle") : NULL;
}

static void find_demangler(void) {
    /* dlsym returns a data pointer; the cast through a union says what it is. */
    union {
        void *p;
        cxa_demangle_fn f;
    } u;
    u.p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (u.p == NULL) u.p = load_demangler();
    cxa_demangle = u.f;
}

/* A demangled copy of `name` (malloc'd), or NULL: not an Itanium C++ name ("_Z..."), no
 * libstdc++ to be found, or a name the demangler refuses. */
static char *demangle(const char *name) {
    if (name == NULL || name[0] != '_' || name[1] != 'Z') return NULL;
    pthread_once(&cxa_demangle_once, find_demangler);
    if (cxa_demangle == NULL) return NULL;
    int status = -1;
    char *d = cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

/* Replaces *name (malloc'd) by its demangled form where there is one; keeps it otherwise. */
static void demangle_in_place(char **name) {
    char *d = demangle(*name);
    if (d == NULL) return;
    free(*name);
    *name = d;
}

int strobe__frame_is_own(const char *frame) {
    if (frame == NULL || strncmp(frame, "strobe_", 7) != 0) return 0;
    /* strobe__* is internal (C functions, the C++ guard and its members); a public strobe_*
     * function is strobe's, a user's namespace or class that happens to begin so ("strobe_x::f")
     * is not. */
    if (frame[7] == '_') return 1;
    size_t n = 7;
    while (frame[n] == '_' || (frame[n] >= 'a' && frame[n] <= 'z') ||
           (frame[n] >= 'A' && frame[n] <= 'Z') || (frame[n] >= '0' && frame[n] <= '9'))
        n++;
    return strncmp(frame + n, "::", 2) != 0;
}

/* Whether an addr2line location lies in one of strobe's public headers (".../strobe/X.h:N"):
 * inlined code there is strobe's (the C++ scope guard, the inline range calls). */
static int location_is_own(const char *loc) {
    const char *p = loc ? strstr(loc, "/strobe/") : NULL;
    if (p == NULL) return 0;
    const char *colon = strrchr(p, ':');
    return colon != NULL && colon - p > 10 && memcmp(colon - 2, ".h", 2) == 0 &&
           memchr(p + 8, '/', (size_t)(colon - (p + 8))) == NULL;
}

/* ---- addr2line --------------------------------------------------------------------------- */

/* Reads fd to its end into a NUL-terminated buffer. @return it, or NULL when out of memory. */
static char *read_all(int fd) {
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    for (;;) {
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return buf;
}

/* The next line of *p (cut in place), or NULL at the end. */
static char *next_line(char **p) {
    char *s = *p;
    if (s == NULL || *s == '\0') return NULL;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = s + strlen(s);
    }
    return s;
}

/* A location as addr2line prints it, cleaned: the " (discriminator N)" suffix is cut, and an
 * unknown file or line ("??:0", "??:?", "file.c:?", "file.c:0") gives NULL. */
static char *clean_location(char *loc) {
    char *d = strstr(loc, " (discriminator ");
    if (d) *d = '\0';
    size_t len = strlen(loc);
    while (len > 0 && (loc[len - 1] == '\r' || loc[len - 1] == ' '))
        loc[--len] = '\0';
    if (len < 3 || strncmp(loc, "??", 2) == 0) return NULL;
    if (strcmp(loc + len - 2, ":?") == 0 || strcmp(loc + len - 2, ":0") == 0) return NULL;
    return loc;
}

/* Whether `line` is addr2line's -a echo of `addr` ("0x...", hex). */
static int is_address_line(const char *line, uint64_t addr) {
    if (line[0] != '0' || line[1] != 'x') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(line, &end, 16);
    return errno == 0 && end != line && *end == '\0' && v == addr;
}

/* Asks addr2line about n file addresses of `file` in one run: its answers go to fn[i] and loc[i]
 * (malloc'd, NULL where unknown). With -a, each answer starts with the address asked about; an
 * answer that does not match ends the parse, so a different output format costs the locations,
 * never wrong ones. A missing or failing addr2line leaves everything NULL. @return 0, or
 * STROBE_ENOMEM when out of memory. */

/* The environment for addr2line: the process's, less what would make a profiler record the
 * helper as part of the program (strobe record's preload and settings, the NVTX and CUDA tool
 * variables, markers). NULL when out of memory (the process's own is used then). */
static char **helper_env(void) {
    static const char *const drop[] = {"LD_PRELOAD=", "STROBE_RECORD_", "NVTX_INJECTION64_PATH=",
                                       "CUDA_INJECTION64_PATH=", "STROBE_MARKERS="};
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 1) * sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int keep = 1;
        for (size_t d = 0; keep && d < sizeof drop / sizeof drop[0]; d++)
            keep = strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
        if (keep) env[k++] = environ[i];
    }
    env[k] = NULL;
    return env;
}

static int run_addr2line(const char *file, const uint64_t *addrs, size_t n, char **fn, char **loc,
                         char **inl) {
    enum { FIXED = 6 };
    char **argv = malloc((n + FIXED + 1) * sizeof *argv);
    char *text = malloc(n * 24);
    if (argv == NULL || text == NULL) {
        free(argv);
        free(text);
        return STROBE_ENOMEM;
    }
    argv[0] = "addr2line";
    argv[1] = "-a";
    argv[2] = "-f";
    argv[3] = "-i";
    argv[4] = "-e";
    argv[5] = (char *)file;
    for (size_t i = 0; i < n; i++) {
        argv[FIXED + i] = text + i * 24;
        (void)snprintf(text + i * 24, 24, "0x%llx", (unsigned long long)addrs[i]);
    }
    argv[FIXED + n] = NULL;

    int rc = 0, fds[2];
    posix_spawn_file_actions_t fa;
    char **env = helper_env();
    if (pipe2(fds, O_CLOEXEC) != 0) goto out;
    /* The library never prints unasked: addr2line's complaints go to /dev/null. */
    if (posix_spawn_file_actions_init(&fa) != 0) {
        (void)close(fds[0]);
        (void)close(fds[1]);
        goto out;
    }
    pid_t pid;
    int spawned =
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO) == 0 &&
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0) == 0 &&
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0) == 0 &&
        posix_spawnp(&pid, "addr2line", &fa, NULL, argv, env ? env : environ) == 0;
    (void)posix_spawn_file_actions_destroy(&fa);
    (void)close(fds[1]);
    if (!spawned) {
        (void)close(fds[0]);
        goto out;
    }
    char *buf = read_all(fds[0]);
    (void)close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (buf == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    /* With -i, an address inside inlined code gets one (function, location) pair per inlining
     * level, innermost first; the last pair is the function the frame belongs to, and its line is
     * the call the frame made, which is what a stack shows. */
    char *p = buf, *a = next_line(&p);
    for (size_t i = 0; i < n && rc == 0 && a != NULL; i++) {
        if (!is_address_line(a, addrs[i])) break;
        char *f = NULL, *l = NULL;
        for (;;) {
            char *nf = next_line(&p);
            if (nf == NULL || (i + 1 < n && is_address_line(nf, addrs[i + 1]))) {
                a = nf;
                break;
            }
            char *nl = next_line(&p);
            if (nl == NULL) {
                a = NULL;
                break;
            }
            /* An inner level is a frame of its own in the stack, innermost first, except strobe's
             * own inline code (strobe_range_begin ... and the C++ guard from strobe/instrument.h),
             * which the range's call goes through and which says nothing about the caller. */
            char *dm = f != NULL ? demangle(f) : NULL;
            const char *fname = dm ? dm : f;
            char *c = f != NULL ? clean_location(l) : NULL;
            if (f != NULL && rc == 0 && strcmp(f, "??") != 0 && !strobe__frame_is_own(fname) &&
                !location_is_own(c)) {
                char *prev = inl[i];
                int w = c ? asprintf(&inl[i], "%s%s%s (%s)", prev ? prev : "", prev ? ";" : "",
                                     fname, c)
                          : asprintf(&inl[i], "%s%s%s", prev ? prev : "", prev ? ";" : "", fname);
                if (w < 0) {
                    inl[i] = NULL;
                    rc = STROBE_ENOMEM;
                }
                free(prev);
            }
            free(dm);
            f = nf;
            l = nl;
        }
        if (f == NULL) break;
        if (strcmp(f, "??") != 0 && f[0] != '\0' && (fn[i] = strdup(f)) == NULL) rc = STROBE_ENOMEM;
        if (fn[i] != NULL) demangle_in_place(&fn[i]);
        char *c = clean_location(l);
        if (c != NULL && (loc[i] = strdup(c)) == NULL) rc = STROBE_ENOMEM;
    }
    free(buf);
out:
    free(env);
    free(argv);
    free(text);
    return rc;
}

/* Most addresses given to one addr2line run: the command line stays far below ARG_MAX (about 24
 * bytes an address), and a module with more addresses takes several runs. */
#define ADDR2LINE_BATCH 4096u

/* ---- strobe__symbolize ------------------------------------------------------------------- */

/* Symbolizes the addresses idx[0..k) of module m (pcs[idx[j]] each) into out. */
static int symbolize_module(strobe__symbolizer *s, struct module *m, const uint64_t *pcs,
                            const size_t *idx, size_t k, int use_addr2line, const char **out) {
    char exe[4096];
    const char *path = m->name;
    if (m->is_main) {
        main_path(exe, sizeof exe);
        path = exe;
    }
    /* Only a path names a file: the vDSO's "linux-vdso.so.1" does not, and an unnamed module
     * other than the main program has no file to read. */
    int has_file = m->is_main || strchr(path, '/') != NULL;
    if (has_file && !m->parsed)
        STROBE_FORWARD_IF_ERR(load_symbols(m, m->is_main ? "/proc/self/exe" : path));
    const char *shown = path[0] ? base_name(path) : "??";

    uint64_t *addrs = malloc(k * sizeof *addrs);
    char **fn = calloc(k, sizeof *fn), **loc = calloc(k, sizeof *loc);
    char **inl = calloc(k, sizeof *inl); /* inlined frames above the function's own, or NULL */
    int rc = addrs && fn && loc && inl ? 0 : STROBE_ENOMEM;
    /* Return addresses point after the call: pc - 1 lies in the call instruction, in its
     * function and on its line even where the call is a function's last instruction. */
    for (size_t j = 0; j < k && rc == 0; j++)
        addrs[j] = pcs[idx[j]] - 1 - m->bias;
    if (rc == 0 && use_addr2line && has_file) {
        /* Through /proc/PID/exe (PID: ours, not addr2line's), addr2line reads the main program
         * even when its file was deleted or replaced; otherwise it gets the path, so that it
         * finds separate debug files beside it. */
        char self[64];
        const char *a2l_path = path;
        struct stat named, running;
        if (m->is_main &&
            (path[0] == '\0' || stat(path, &named) != 0 || stat("/proc/self/exe", &running) != 0 ||
             named.st_dev != running.st_dev || named.st_ino != running.st_ino)) {
            (void)snprintf(self, sizeof self, "/proc/%ld/exe", (long)getpid());
            a2l_path = self;
        }
        for (size_t j = 0; j < k && rc == 0; j += ADDR2LINE_BATCH) {
            size_t b = k - j < ADDR2LINE_BATCH ? k - j : ADDR2LINE_BATCH;
            rc = run_addr2line(a2l_path, addrs + j, b, fn + j, loc + j, inl + j);
        }
    }
    for (size_t j = 0; j < k && rc == 0; j++) {
        const struct sym *sy = find_sym(m, (uintptr_t)addrs[j]);
        /* The symbol table's name first. addr2line's is taken only with a location, which
         * means debug info answered: without it, addr2line names the nearest symbol below the
         * address, whatever its size, which in a stripped program is often a wrong one. */
        char *dm = sy ? demangle(sy->name) : NULL;
        const char *name = dm ? dm : sy ? sy->name : loc[j] ? fn[j] : NULL;
        const char *r;
        if (inl[j] && name && loc[j]) {
            r = arena_printf(s, "%s;%s (%s)", inl[j], name, loc[j]);
        } else if (name && loc[j]) {
            r = arena_printf(s, "%s (%s)", name, loc[j]);
        } else if (name) {
            r = arena_printf(s, "%s", name);
        } else if (loc[j]) {
            r = arena_printf(s, "%s+0x%llx (%s)", shown,
                             (unsigned long long)(pcs[idx[j]] - m->bias), loc[j]);
        } else {
            /* No name: the function's start where the unwind table knows it, so that a
             * stripped function is one frame however many addresses in it were seen. */
            uint64_t start;
            if (m->eh_table && eh_function_start(m, addrs[j], &start)) {
                r = arena_printf(s, "%s+0x%llx", shown, (unsigned long long)start);
            } else {
                r = arena_printf(s, "%s+0x%llx", shown,
                                 (unsigned long long)(pcs[idx[j]] - m->bias));
            }
        }
        free(dm);
        if (r == NULL) rc = STROBE_ENOMEM;
        out[idx[j]] = r;
    }
    for (size_t j = 0; j < k; j++) {
        if (fn) free(fn[j]);
        if (loc) free(loc[j]);
        if (inl) free(inl[j]);
    }
    free(fn);
    free(loc);
    free(inl);
    free(addrs);
    return rc;
}

/* Python frames in CPU samples are pseudo-addresses (pyframes.h), in no module: named from the
 * sampler's table. */
static void python_names(const uint64_t *pcs, size_t n, const char **out) {
    for (size_t i = 0; i < n; i++) {
        const char *name = strobe__pyframes_name(pcs[i]);
        if (name) out[i] = name;
    }
}

strobe__symbolizer *strobe__symbolize(const uint64_t *pcs, size_t n, const char **out) {
    strobe__symbolizer *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    if (n == 0 || pcs == NULL || out == NULL) return s;
    for (size_t i = 0; i < n; i++)
        out[i] = "??";

    struct modules ms = {0};
    (void)dl_iterate_phdr(collect_module, &ms);
    size_t *mod = malloc(n * sizeof *mod), *idx = malloc(n * sizeof *idx);
    int rc = ms.oom || mod == NULL || idx == NULL ? STROBE_ENOMEM : 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        mod[i] = pcs[i] ? module_of(&ms, (uintptr_t)pcs[i] - 1) : ms.n;

    const char *env = getenv("STROBE_SYMBOLIZE");
    int use_addr2line = env == NULL || strcmp(env, "0") != 0;
    /* Module by module, so that each file is mapped and parsed once and addr2line runs once. */
    for (size_t m = 0; m < ms.n && rc == 0; m++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (mod[i] == m) idx[k++] = i;
        if (k > 0) rc = symbolize_module(s, &ms.m[m], pcs, idx, k, use_addr2line, out);
    }
    free(mod);
    free(idx);
    modules_free(&ms);
    if (rc == 0) python_names(pcs, n, out);
    if (rc != 0) {
        strobe__symbolizer_free(s);
        return NULL;
    }
    return s;
}
