/* flame.c: flame graphs as self-contained SVG (see flame.h).
 *
 * Contents: metrics, text (XML escaping, values), colours, layout, the SVG (header, frames,
 * script), the entry points.
 *
 * Layout follows flamegraph.pl's conventions: 16 px per level, the root at the bottom, the
 * children of a frame from its left edge in the order of their names, so that what is left of
 * the parent's width on the right is its self value. Positions are rounded to hundredths of a
 * pixel at both edges of a frame, never its width: a child then never sticks out of its parent.
 * Frames narrower than the minimum width are not drawn; their value stays in their parent,
 * whose width includes it. */
#include "flame.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "emit.h"
#include "model/folded.h"
#include "strobe/error.h"

/* ---- metrics ------------------------------------------------------------------------------- */

static const char *const metric_names[CLI_FLAME_METRIC_COUNT] = {"self_cpu", "self_device",
                                                                 "samples", "memory"};
static const char *const metric_titles[CLI_FLAME_METRIC_COUNT] = {
    "self CPU time", "device time (kernels, copies, memsets) by launching stack", "CPU samples",
    "bytes allocated"};

int cli_flame_metric_parse(const char *s) {
    for (int k = 0; k < CLI_FLAME_METRIC_COUNT; k++)
        if (strcmp(s, metric_names[k]) == 0) return k;
    return -1;
}

const char *cli_flame_metric_name(int metric) {
    return metric >= 0 && metric < CLI_FLAME_METRIC_COUNT ? metric_names[metric] : "?";
}

static md_fold_metric fold_metric(int metric) {
    switch (metric) {
    case CLI_FLAME_SELF_DEVICE:
        return MD_FOLD_SELF_DEVICE;
    case CLI_FLAME_SAMPLES:
        return MD_FOLD_SAMPLES;
    case CLI_FLAME_MEMORY:
        return MD_FOLD_MEMORY;
    default:
        return MD_FOLD_SELF_CPU;
    }
}

/* ---- text ---------------------------------------------------------------------------------- */

/* Writes s[0..n) as XML character data or attribute text, at most `max` characters of it (code
 * points; an invalid byte counts as one): the markup characters as entities, control characters
 * (which XML 1.0 forbids, and which a name should not show) as '_', bytes that are not UTF-8 and
 * the non-characters U+FFFE and U+FFFF as U+FFFD. */
static void xml_put(FILE *out, const char *s, size_t n, size_t max) {
    for (size_t i = 0, chars = 0; i < n && chars < max; chars++) {
        unsigned char c = (unsigned char)s[i];
        size_t len = cli_utf8_seq(s + i, n - i);
        if (c == '&')
            fputs("&amp;", out);
        else if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c == '\'')
            fputs("&#39;", out);
        else if (c < 0x20 || c == 0x7f || (c == 0xc2 && len == 2 && (unsigned char)s[i + 1] < 0xa0))
            fputc('_', out);
        else if (len == 0 || (len == 3 && c == 0xef && (unsigned char)s[i + 1] == 0xbf &&
                              (unsigned char)s[i + 2] >= 0xbe))
            fputs("\xef\xbf\xbd", out);
        else
            fwrite(s + i, 1, len, out);
        i += len ? len : 1;
    }
}

static void xml_str(FILE *out, const char *s) {
    xml_put(out, s, strlen(s), SIZE_MAX);
}

/* Code points in s[0..n) (an invalid byte counts as one). */
static size_t chars_in(const char *s, size_t n) {
    size_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        size_t len = cli_utf8_seq(s + i, n - i);
        i += len ? len : 1;
    }
    return chars;
}

/* A frame's label: a Python frame as Kineto names it, "PATH(LINE): FUNC", reads function first,
 * "FUNC \u2014 PATH(LINE)", so that a frame too narrow for the whole label still shows which
 * function it is (the cut takes the end); any other name is its own label. Writes the label to
 * buf (room for len + 8 bytes) and returns its length; 0 when the name is not a Python frame's. */
static size_t frame_label(const char *name, size_t len, char *buf) {
    for (size_t i = 0; i < len; i++) {
        if (name[i] != '(') continue;
        size_t k = i + 1;
        while (k < len && name[k] >= '0' && name[k] <= '9')
            k++;
        if (k == i + 1 || k + 3 > len || memcmp(name + k, "): ", 3) != 0) continue;
        size_t path = k + 1, func = k + 3; /* "PATH(LINE)", then FUNC from func */
        if (func == len) return 0;
        memcpy(buf, name + func, len - func);
        memcpy(buf + (len - func), " \xe2\x80\x94 ", 5);
        memcpy(buf + (len - func) + 5, name, path);
        return len - func + 5 + path;
    }
    return 0;
}

/* A value of the metric, for people: a time (ns) in us, ms or s with three decimals; samples; a
 * size in B, KiB, MiB or GiB. `v` is not negative. */
static void fmt_value(char *buf, size_t cap, int metric, int64_t v) {
    if (metric == CLI_FLAME_SAMPLES) {
        snprintf(buf, cap, "%lld sample%s", (long long)v, v == 1 ? "" : "s");
    } else if (metric == CLI_FLAME_MEMORY) {
        if (v < 1024)
            snprintf(buf, cap, "%lld B", (long long)v);
        else if (v < 1024 * 1024)
            snprintf(buf, cap, "%.2f KiB", (double)v / 1024);
        else if (v < 1024 * 1024 * 1024)
            snprintf(buf, cap, "%.2f MiB", (double)v / (1024 * 1024));
        else
            snprintf(buf, cap, "%.2f GiB", (double)v / (1024.0 * 1024 * 1024));
    } else {
        /* From integers: ns to the unit's thousandths, rounded to the nearest. */
        int64_t div = v < 1000000 ? 1 : v < 1000000000 ? 1000 : 1000000;
        const char *unit = v < 1000000 ? "\xc2\xb5s" : v < 1000000000 ? "ms" : "s";
        int64_t t = md_add_sat(v, div / 2) / div;
        snprintf(buf, cap, "%lld.%03lld %s", (long long)(t / 1000), (long long)(t % 1000), unit);
    }
}

static double share(int64_t v, int64_t total) {
    return total > 0 ? 100.0 * (double)v / (double)total : 0;
}

/* ---- colours ------------------------------------------------------------------------------- */

/* Three numbers in [0, 1) from a name, so that a frame keeps its shade from one graph to the
 * next (flamegraph.pl's --hash). */
static void name_hash(const char *s, double v[3]) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    v[0] = (double)(h & 0xffff) / 65536;
    v[1] = (double)((h >> 16) & 0xffff) / 65536;
    v[2] = (double)((h >> 32) & 0xffff) / 65536;
}

/* Per kind: the base colour and how far each channel may vary with the name. */
static const struct {
    const char *label;
    unsigned char base[3], span[3];
} palette[MD_FRAME_KIND_COUNT] = {
    [MD_FRAME_OTHER] = {"other", {190, 190, 190}, {20, 20, 20}},
    [MD_FRAME_OP] = {"operator", {205, 60, 40}, {50, 90, 40}},
    [MD_FRAME_USER] = {"user range", {150, 100, 205}, {40, 40, 45}},
    [MD_FRAME_PYTHON] = {"Python", {60, 180, 60}, {60, 60, 50}},
    [MD_FRAME_DEVICE] = {"kernel / device", {50, 170, 185}, {50, 55, 55}},
    [MD_FRAME_RUNTIME] = {"runtime", {200, 195, 60}, {45, 45, 30}},
    [MD_FRAME_SAMPLE] = {"sample frame", {225, 110, 0}, {30, 120, 55}},
};

static void kind_colour(int kind, const char *name, int rgb[3]) {
    double v[3];
    name_hash(name, v);
    for (int k = 0; k < 3; k++)
        rgb[k] = palette[kind].base[k] + (int)(palette[kind].span[k] * v[k]);
}

/* The relative change from b to t: (t - b) / b, +1 for a frame that is new. */
static double rel_change(int64_t b, int64_t t) {
    if (b <= 0) return t > 0 ? 1 : 0;
    return ((double)t - (double)b) / (double)b;
}

/* Differential colours: grey where unchanged, towards red where the frame grew, towards blue
 * where it shrank, fully so at a change of 100% or more. */
static void diff_colour(double rel, int rgb[3]) {
    double i = fabs(rel) > 1 ? 1 : fabs(rel);
    int strong = 220 + (int)(35 * i), weak = (int)(220 * (1 - i));
    rgb[0] = rel > 0 ? strong : rel < 0 ? weak : 220;
    rgb[1] = rel != 0 ? weak : 220;
    rgb[2] = rel < 0 ? strong : rel > 0 ? weak : 220;
}

/* ---- layout -------------------------------------------------------------------------------- */

#define XPAD 10         /* px left and right of the frames */
#define FRAME_H 16      /* px per level; rectangles are one less, so that levels show apart */
#define FONT_SIZE 12    /* px */
#define FONT_WIDTH 0.59 /* of the font size: flamegraph.pl's average width of a character */
#define HEAD_H 84       /* px above the frames: heading, what the graph is of, controls, legend */
#define FOOT_H 40       /* px below: the details line, the note on merged frames */

typedef struct layout {
    size_t n;      /* nodes of the tree */
    int64_t *val;  /* inclusive value, slot 0 (the graph's shape) */
    int64_t *bval; /* inclusive value, slot 1 (diff: the base); NULL otherwise */
    int64_t *off;  /* offset of the frame's left edge from the root's, in value units */
    uint32_t *depth;
    uint32_t *order; /* the nodes, parents before children, children by name */
    uint8_t *shown;
    size_t frames;      /* shown frames */
    uint32_t max_depth; /* of the shown frames */
    size_t merged;      /* frames not shown whose parent is (their descendants not counted) */
    int64_t merged_val; /* their value */
    int64_t total;      /* the root's value */
} layout;

static void layout_free(layout *l) {
    free(l->val);
    free(l->bval);
    free(l->off);
    free(l->depth);
    free(l->order);
    free(l->shown);
}

/* A node to sort: children grouped by parent (the root first), then by name. */
typedef struct sort_key {
    uint32_t parent, node;
    const char *name;
} sort_key;

static int by_parent_name(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    if (x->parent != y->parent) return x->parent + 1 < y->parent + 1 ? -1 : 1; /* MD_NONE: 0 */
    return strcmp(x->name, y->name);
}

/* Inclusive values (negative self values, which torch's self times can be, count as 0), order,
 * offsets, depths and what is shown. @return 0 or STROBE_ENOMEM. */
static int layout_make(layout *l, const md_fold *f, int two, double min_px, double width_px) {
    size_t n = f->count;
    memset(l, 0, sizeof *l);
    l->n = n;
    l->val = calloc(n, sizeof *l->val);
    l->bval = two ? calloc(n, sizeof *l->bval) : NULL;
    l->off = calloc(n, sizeof *l->off);
    l->depth = calloc(n, sizeof *l->depth);
    l->order = malloc(n * sizeof *l->order);
    l->shown = calloc(n, 1);
    if (!l->val || (two && !l->bval) || !l->off || !l->depth || !l->order || !l->shown)
        return STROBE_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        l->val[k] = f->nodes[k].self[0] > 0 ? f->nodes[k].self[0] : 0;
        if (two) l->bval[k] = f->nodes[k].self[1] > 0 ? f->nodes[k].self[1] : 0;
    }
    /* A parent's index is below its children's: one pass from the leaves up sums them. */
    for (size_t k = n; k-- > 1;) {
        uint32_t p = f->nodes[k].parent;
        l->val[p] = md_add_sat(l->val[p], l->val[k]);
        if (two) l->bval[p] = md_add_sat(l->bval[p], l->bval[k]);
    }
    l->total = l->val[0];
    sort_key *keys = malloc(n * sizeof *keys);
    if (keys == NULL) return STROBE_ENOMEM;
    for (size_t k = 0; k < n; k++)
        keys[k] = (sort_key){f->nodes[k].parent, (uint32_t)k, f->names.strs[f->nodes[k].name]};
    qsort(keys, n, sizeof *keys, by_parent_name);
    for (size_t k = 0; k < n; k++)
        l->order[k] = keys[k].node;
    free(keys);
    /* Sorted by parent, a parent's group of children comes after its own place is known. */
    int64_t *next = calloc(n, sizeof *next); /* per parent: where its next child starts */
    if (next == NULL) return STROBE_ENOMEM;
    double min_val = l->total > 0 ? (double)l->total * min_px / width_px : 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = l->order[k], p = f->nodes[i].parent;
        if (p == MD_NONE) {
            l->shown[i] = l->total > 0;
        } else {
            l->off[i] = md_add_sat(l->off[p], next[p]);
            next[p] = md_add_sat(next[p], l->val[i]);
            l->depth[i] = l->depth[p] + 1;
            l->shown[i] = l->shown[p] && l->val[i] > 0 && (double)l->val[i] >= min_val;
            if (l->shown[p] && !l->shown[i] && l->val[i] > 0) {
                l->merged++;
                l->merged_val = md_add_sat(l->merged_val, l->val[i]);
            }
        }
        if (l->shown[i]) {
            l->frames++;
            if (l->depth[i] > l->max_depth) l->max_depth = l->depth[i];
        }
    }
    free(next);
    return 0;
}

/* ---- the SVG ------------------------------------------------------------------------------- */

typedef struct svg {
    FILE *out;
    const cli_flame_opts *o;
    const char *id;
    unsigned width;
    int metric;
    int diff;
    double scale; /* px per value unit */
    unsigned height;
} svg;

/* A position in hundredths of a pixel, from an offset in value units. */
static long long hx(const svg *s, double off) {
    return llround((XPAD + off * s->scale) * 100);
}

static void put_px(FILE *out, long long h) {
    fprintf(out, "%lld.%02lld", h / 100, h % 100);
}

/* The script: details on hover, zoom on click, search. It finds its <svg> by its own position
 * (document.currentScript) or by id, and touches nothing outside it, so that several graphs can
 * share an HTML page. Frames are <g class="f"> with data-o (offset), data-v (value) and data-d
 * (depth), and data-l (its label, where it differs from its name); a frame's name is its <title>
 * less the last parenthesis. */
static const char script_text[] =
    "(function () {\n"
    "  var me = document.currentScript;\n"
    "  var svg = (me && me.ownerSVGElement) || document.getElementById(ID);\n"
    "  if (!svg) return;\n"
    "  var gs = svg.querySelectorAll('g.f'), fr = [];\n"
    "  for (var k = 0; k < gs.length; k++) {\n"
    "    var g = gs[k], t = g.querySelector('title').textContent;\n"
    "    fr.push({g: g, r: g.querySelector('rect'), x: g.querySelector('text'), t: t,\n"
    "             n: t.replace(/ \\([^()]*\\)$/, ''), l: g.getAttribute('data-l'),\n"
    "             o: +g.getAttribute('data-o'),\n"
    "             v: +g.getAttribute('data-v'), d: +g.getAttribute('data-d'),\n"
    "             fill: g.querySelector('rect').getAttribute('fill')});\n"
    "  }\n"
    "  var details = svg.querySelector('.details'), matched = svg.querySelector('.matched');\n"
    "  var unzoomBtn = svg.querySelector('.unzoom'), searchBtn = svg.querySelector('.search');\n"
    "  var searching = false;\n"
    "  function label(f, w) {\n"
    "    var c = Math.floor((w - 6) / (FS * FW));\n"
    "    if (c < 3) return '';\n"
    "    var n = f.l || f.n;\n"
    "    return n.length <= c ? n : n.substring(0, c - 2) + '..';\n"
    "  }\n"
    "  function place(f, x, w) {\n"
    "    f.r.setAttribute('x', x.toFixed(2));\n"
    "    f.r.setAttribute('width', w.toFixed(2));\n"
    "    f.x.setAttribute('x', (x + 3).toFixed(2));\n"
    "    f.x.textContent = label(f, w);\n"
    "  }\n"
    "  function zoom(z) {\n"
    "    var zo = z.o, zv = z.v, s = (WIDTH - 2 * XPAD) / zv;\n"
    "    for (var k = 0; k < fr.length; k++) {\n"
    "      var f = fr[k];\n"
    "      f.g.classList.remove('hide', 'parent');\n"
    "      if (f.d >= z.d && f.o >= zo && f.o + f.v <= zo + zv) {\n"
    "        place(f, XPAD + (f.o - zo) * s, f.v * s);\n"
    "      } else if (f.d < z.d && f.o <= zo && f.o + f.v >= zo + zv) {\n"
    "        f.g.classList.add('parent');\n"
    "        place(f, XPAD, WIDTH - 2 * XPAD);\n"
    "      } else {\n"
    "        f.g.classList.add('hide');\n"
    "      }\n"
    "    }\n"
    "    unzoomBtn.classList.remove('hide');\n"
    "  }\n"
    "  function unzoom() {\n"
    "    if (fr.length) zoom(fr[0]);\n"
    "    unzoomBtn.classList.add('hide');\n"
    "  }\n"
    "  function resetSearch() {\n"
    "    for (var k = 0; k < fr.length; k++) fr[k].r.setAttribute('fill', fr[k].fill);\n"
    "    matched.classList.add('hide');\n"
    "    searchBtn.textContent = 'Search';\n"
    "    searching = false;\n"
    "  }\n"
    "  function search(term) {\n"
    "    var re;\n"
    "    try { re = new RegExp(term); } catch (e) {\n"
    "      details.textContent = 'Not a regular expression: ' + term; return;\n"
    "    }\n"
    "    resetSearch();\n"
    "    var hits = [];\n"
    "    for (var k = 0; k < fr.length; k++) {\n"
    "      if (re.test(fr[k].n)) { fr[k].r.setAttribute('fill', 'rgb(230,0,230)'); "
    "hits.push(fr[k]); }\n"
    "    }\n"
    "    /* A match inside a match counts once: by offset, outer (longer) first. */\n"
    "    hits.sort(function (a, b) { return a.o - b.o || b.v - a.v; });\n"
    "    var sum = 0, end = -Infinity;\n"
    "    for (var k = 0; k < hits.length; k++) {\n"
    "      if (hits[k].o >= end) { sum += hits[k].v; end = hits[k].o + hits[k].v; }\n"
    "    }\n"
    "    matched.textContent = 'Matched: ' + (TOTAL > 0 ? 100 * sum / TOTAL : 0).toFixed(2) +\n"
    "        '% (' + hits.length + ' frame' + (hits.length == 1 ? '' : 's') + ')';\n"
    "    matched.classList.remove('hide');\n"
    "    searchBtn.textContent = 'Reset Search';\n"
    "    searching = true;\n"
    "    return sum;\n"
    "  }\n"
    "  function prompt_search() {\n"
    "    if (searching) { resetSearch(); return; }\n"
    "    var term = window.prompt('Search for a frame (a regular expression, e.g. ^aten::)', '');\n"
    "    if (term) search(term);\n"
    "  }\n"
    "  svg.addEventListener('click', function (e) {\n"
    "    var t = e.target;\n"
    "    if (t.closest('.unzoom')) return unzoom();\n"
    "    if (t.closest('.search')) return prompt_search();\n"
    "    var g = t.closest('g.f');\n"
    "    if (!g) return;\n"
    "    for (var k = 0; k < fr.length; k++) if (fr[k].g === g) zoom(fr[k]);\n"
    "    if (g === fr[0].g) unzoomBtn.classList.add('hide');\n"
    "  });\n"
    "  svg.addEventListener('mouseover', function (e) {\n"
    "    var g = e.target.closest('g.f');\n"
    "    if (g) details.textContent = g.querySelector('title').textContent;\n"
    "  });\n"
    "  svg.addEventListener('mouseout', function (e) {\n"
    "    if (e.target.closest('g.f')) details.textContent = ' ';\n"
    "  });\n"
    "  if (document.documentElement === svg) {\n"
    "    window.addEventListener('keydown', function (e) {\n"
    "      if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
    "        e.preventDefault(); prompt_search();\n"
    "      }\n"
    "    });\n"
    "  }\n"
    "  svg.flame = {search: search, resetSearch: resetSearch, zoom: function (k) { zoom(fr[k]); "
    "},\n"
    "               unzoom: unzoom, frames: fr};\n"
    "})();\n";

static void write_head(const svg *s, const char *sub) {
    FILE *out = s->out;
    const cli_flame_opts *o = s->o;
    if (!o->embed) fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", out);
    fprintf(out,
            "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" width=\"%u\" "
            "height=\"%u\" viewBox=\"0 0 %u %u\">\n",
            s->id, s->width, s->height, s->width, s->height);
    const char *id = s->id;
    fprintf(out,
            "<style type=\"text/css\">\n"
            "#%s text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
            "#%s .heading { font-size: 17px; text-anchor: middle; }\n"
            "#%s .sub { text-anchor: middle; fill: rgb(70,70,70); }\n"
            "#%s .note, #%s .legend text { font-size: 11px; fill: rgb(70,70,70); }\n"
            "#%s .f text { pointer-events: none; }\n"
            "#%s .f:hover rect { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
            "#%s .ctl { cursor: pointer; }\n"
            "#%s .ctl:hover { text-decoration: underline; }\n"
            "#%s .matched { text-anchor: end; }\n"
            "#%s .hide { display: none; }\n"
            "#%s .parent { opacity: 0.5; }\n"
            "</style>\n",
            id, FONT_SIZE, id, id, id, id, id, id, id, id, id, id, id);
    fprintf(out,
            "<defs><linearGradient id=\"%s-bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
            "<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" "
            "offset=\"95%%\"/></linearGradient></defs>\n"
            "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#%s-bg)\"/>\n",
            id, s->width, s->height, id);
    fprintf(out, "<text class=\"heading\" x=\"%.1f\" y=\"24\">", s->width / 2.0);
    xml_str(out, o->title ? o->title : s->diff ? "Differential flame graph" : "Flame graph");
    fprintf(out, "</text>\n<text class=\"sub\" x=\"%.1f\" y=\"44\">", s->width / 2.0);
    xml_str(out, sub);
    fputs("</text>\n", out);
    fprintf(out, "<text class=\"ctl unzoom hide\" x=\"%d\" y=\"66\">Reset Zoom</text>\n", XPAD);
    fprintf(
        out,
        "<text class=\"ctl search\" x=\"%u\" y=\"66\" style=\"text-anchor: end\">Search</text>\n",
        s->width - XPAD);
}

/* The legend: a swatch and a word per kind of frame the graph shows (diff: per direction). */
static void write_legend(const svg *s, const md_fold *f, const layout *l) {
    const char *labels[MD_FRAME_KIND_COUNT];
    int colours[MD_FRAME_KIND_COUNT][3];
    size_t n = 0;
    if (s->diff) {
        static const char *const words[] = {"grew", "shrank", "unchanged"};
        static const double rels[] = {1, -1, 0};
        for (int k = 0; k < 3; k++) {
            labels[n] = words[k];
            diff_colour(rels[k], colours[n++]);
        }
    } else {
        int present[MD_FRAME_KIND_COUNT] = {0};
        for (size_t k = 1; k < l->n; k++)
            if (l->shown[k]) present[f->nodes[k].kind] = 1;
        for (int k = 1; k < MD_FRAME_KIND_COUNT; k++) {
            if (!present[k]) continue;
            labels[n] = palette[k].label;
            for (int c = 0; c < 3; c++)
                colours[n][c] = palette[k].base[c] + palette[k].span[c] / 2;
            n++;
        }
    }
    if (n == 0) return;
    double w = 0;
    for (size_t k = 0; k < n; k++)
        w += 14 + strlen(labels[k]) * 11 * FONT_WIDTH + 12;
    double x = (s->width - w) / 2;
    fputs("<g class=\"legend\">", s->out);
    for (size_t k = 0; k < n; k++) {
        fprintf(s->out,
                "<rect x=\"%.1f\" y=\"57\" width=\"10\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                "<text x=\"%.1f\" y=\"66\">%s</text>",
                x, colours[k][0], colours[k][1], colours[k][2], x + 14, labels[k]);
        x += 14 + strlen(labels[k]) * 11 * FONT_WIDTH + 12;
    }
    fputs("</g>\n", s->out);
}

/* @return 0 or STROBE_ENOMEM. */
static int write_frames(const svg *s, const md_fold *f, const layout *l) {
    FILE *out = s->out;
    char v[64], b[64], d[64];
    char *lab = NULL; /* the label of a Python frame (frame_label) */
    size_t cap = 0;
    fputs("<g class=\"frames\">\n", out);
    for (size_t k = 0; k < l->n; k++) {
        uint32_t i = l->order[k];
        if (!l->shown[i]) continue;
        const char *name = f->names.strs[f->nodes[i].name];
        size_t len = f->names.lens[f->nodes[i].name];
        if (len + 8 > cap) {
            char *g = realloc(lab, len + 8);
            if (g == NULL) {
                free(lab);
                return STROBE_ENOMEM;
            }
            lab = g;
            cap = len + 8;
        }
        size_t lab_len = frame_label(name, len, lab);
        long long x0 = hx(s, (double)l->off[i]);
        long long x1 = hx(s, (double)l->off[i] + (double)l->val[i]);
        long long y = s->height - FOOT_H - (l->depth[i] + 1) * FRAME_H;
        int rgb[3];
        fmt_value(v, sizeof v, s->metric, l->val[i]);
        fprintf(out, "<g class=\"f\" data-o=\"%lld\" data-v=\"%lld\" data-d=\"%u\"",
                (long long)l->off[i], (long long)l->val[i], l->depth[i]);
        if (s->diff) fprintf(out, " data-b=\"%lld\"", (long long)l->bval[i]);
        if (lab_len) {
            /* The script relabels the frames on zoom: with this label, not the name. */
            fputs(" data-l=\"", out);
            xml_put(out, lab, lab_len, SIZE_MAX);
            fputc('"', out);
        }
        fputs("><title>", out);
        xml_put(out, name, len, SIZE_MAX);
        fprintf(out, " (%s, %.2f%%", v, share(l->val[i], l->total));
        if (s->diff) {
            int64_t delta = md_sub_sat(l->val[i], l->bval[i]);
            double rel = rel_change(l->bval[i], l->val[i]);
            fmt_value(b, sizeof b, s->metric, l->bval[i]);
            fmt_value(d, sizeof d, s->metric, delta < 0 ? -delta : delta);
            fprintf(out, "; base %s, %s%s, ", b, delta < 0 ? "-" : "+", d);
            if (l->bval[i] > 0)
                fprintf(out, "%+.2f%%", 100 * rel);
            else
                fputs("new", out);
            diff_colour(rel, rgb);
        } else {
            kind_colour(f->nodes[i].kind, name, rgb);
        }
        fputs(")</title><rect x=\"", out);
        put_px(out, x0);
        fputs("\" width=\"", out);
        put_px(out, x1 - x0);
        fprintf(out, "\" y=\"%lld\" height=\"%d\" rx=\"2\" fill=\"rgb(%d,%d,%d)\"/><text x=\"", y,
                FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
        put_px(out, x0 + 300);
        fprintf(out, "\" y=\"%lld\">", y + FRAME_H - 5);
        /* As flamegraph.pl: as many characters as fit at the average width, ".." when cut, and
         * nothing when fewer than three fit. */
        long long fit = (long long)(((double)(x1 - x0) / 100 - 6) / (FONT_SIZE * FONT_WIDTH));
        if (fit >= 3) {
            const char *text = lab_len ? lab : name;
            size_t text_len = lab_len ? lab_len : len;
            size_t chars = chars_in(text, text_len);
            if ((size_t)fit >= chars) {
                xml_put(out, text, text_len, SIZE_MAX);
            } else {
                xml_put(out, text, text_len, (size_t)fit - 2);
                fputs("..", out);
            }
        }
        fputs("</text></g>\n", out);
    }
    fputs("</g>\n", out);
    free(lab);
    return 0;
}

static void write_foot(const svg *s, const layout *l, double min_px) {
    FILE *out = s->out;
    fprintf(out, "<text class=\"details\" x=\"%d\" y=\"%u\"> </text>\n", XPAD, s->height - 22);
    fprintf(out, "<text class=\"matched hide\" x=\"%u\" y=\"%u\"> </text>\n", s->width - XPAD,
            s->height - 22);
    if (l->merged) {
        fprintf(out,
                "<text class=\"note\" x=\"%d\" y=\"%u\">%zu frame%s narrower than %g px (%.2f%% "
                "of the total) merged into %s parents; %zu frames shown</text>\n",
                XPAD, s->height - 6, l->merged, l->merged == 1 ? "" : "s", min_px,
                share(l->merged_val, l->total), l->merged == 1 ? "its" : "their", l->frames);
    }
}

static void write_script(const svg *s, int64_t total) {
    fprintf(s->out,
            "<script type=\"text/ecmascript\"><![CDATA[\n"
            "var ID = '%s', WIDTH = %u, XPAD = %d, FS = %d, FW = %g, TOTAL = %lld;\n",
            s->id, s->width, XPAD, FONT_SIZE, FONT_WIDTH, (long long)total);
    fputs(script_text, s->out);
    fputs("]]></script>\n", s->out);
}

/* Writes the whole document for tree `f` (one slot, or two for a diff). */
static int write_svg(FILE *out, const md_fold *f, int diff, const cli_flame_opts *o, const char *id,
                     unsigned width, double min_px, char *err, size_t errlen) {
    layout l;
    int rc = layout_make(&l, f, diff, min_px, width - 2.0 * XPAD);
    if (rc) {
        layout_free(&l);
        if (errlen) snprintf(err, errlen, "out of memory");
        return rc;
    }
    svg s = {out, o, id, width, o->metric, diff, 0, 0};
    s.scale = l.total > 0 ? (width - 2.0 * XPAD) / (double)l.total : 0;
    s.height = l.total > 0 ? HEAD_H + (l.max_depth + 1) * FRAME_H + FOOT_H : HEAD_H + 60 + FOOT_H;

    /* What the graph is of, its metric and its total. */
    char sub[1024], tv[64], bv[64];
    int used = 0;
    if (o->source) used = snprintf(sub, sizeof sub, "%s: ", o->source);
    if (used < 0 || (size_t)used >= sizeof sub) used = 0;
    fmt_value(tv, sizeof tv, o->metric, l.total);
    if (diff) {
        fmt_value(bv, sizeof bv, o->metric, l.bval[0]);
        snprintf(sub + used, sizeof sub - used, "%s%s, total %s (base %s, %+.2f%%)",
                 metric_titles[o->metric], o->group_by == CLI_FLAME_BY_RANGE ? " by range" : "", tv,
                 bv, 100 * rel_change(l.bval[0], l.total));
    } else {
        snprintf(sub + used, sizeof sub - used, "%s%s, total %s", metric_titles[o->metric],
                 o->group_by == CLI_FLAME_BY_RANGE ? " by range" : "", tv);
    }
    write_head(&s, sub);
    write_legend(&s, f, &l);
    if (l.total > 0) {
        rc = write_frames(&s, f, &l);
        if (rc) {
            layout_free(&l);
            if (errlen) snprintf(err, errlen, "out of memory");
            return rc;
        }
    } else {
        fprintf(out, "<text class=\"sub\" x=\"%.1f\" y=\"%d\">no samples</text>\n", width / 2.0,
                HEAD_H + 30);
    }
    write_foot(&s, &l, min_px);
    write_script(&s, l.total);
    fputs("</svg>\n", out);
    layout_free(&l);
    /* The system's reason (No space left on device ...): fflush fails again on what a failed
     * write left in the buffer, with errno set. */
    errno = 0;
    if (fflush(out) != 0 || ferror(out)) {
        int e = errno;
        if (errlen) snprintf(err, errlen, "writing the SVG: %s", e ? strerror(e) : "failed");
        return STROBE_EIO;
    }
    return 0;
}

/* ---- the entry points ---------------------------------------------------------------------- */

/* Checks the options and fills in the defaults. @return 0 or STROBE_EINVAL with err set. */
static int check_opts(const cli_flame_opts *o, const char **id, unsigned *width, double *min_px,
                      char *err, size_t errlen) {
    *id = o->id ? o->id : "strobe-flame";
    *width = o->width ? o->width : 1200;
    *min_px = o->min_width != 0 ? o->min_width : 0.1;
    const char *why = NULL;
    if (o->metric < 0 || o->metric >= CLI_FLAME_METRIC_COUNT)
        why = "unknown metric";
    else if (o->group_by != CLI_FLAME_BY_STACK && o->group_by != CLI_FLAME_BY_RANGE)
        why = "unknown grouping";
    else if (*width < 100 || *width > 100000)
        why = "width out of range (100 to 100000 px)";
    else if (!(*min_px > 0 && *min_px <= 1000))
        why = "minimum width out of range (above 0, at most 1000 px)";
    else if (**id == '\0' || strspn(*id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_") != strlen(*id))
        why = "id: letters, digits, '-' and '_' only";
    if (why == NULL) return 0;
    if (errlen) snprintf(err, errlen, "%s", why);
    return STROBE_EINVAL;
}

int cli_flame_svg(FILE *out, const md_model *m, const cli_flame_opts *o, char *err, size_t errlen) {
    return cli_flame_svg_diff(out, NULL, m, o, err, errlen);
}

int cli_flame_svg_diff(FILE *out, const md_model *base, const md_model *test,
                       const cli_flame_opts *o, char *err, size_t errlen) {
    static const cli_flame_opts defaults = {0};
    const char *id;
    unsigned width;
    double min_px;
    if (o == NULL) o = &defaults;
    int rc = check_opts(o, &id, &width, &min_px, err, errlen);
    if (rc) return rc;
    md_fold f;
    md_fold_metric metric = fold_metric(o->metric);
    md_fold_group group = o->group_by == CLI_FLAME_BY_RANGE ? MD_FOLD_RANGE : MD_FOLD_STACK;
    rc = md_fold_init(&f);
    if (!rc) rc = md_fold_add(&f, test, metric, group, 0, NULL);
    if (!rc && base) rc = md_fold_add(&f, base, metric, group, 1, NULL);
    if (rc) {
        if (errlen) snprintf(err, errlen, "out of memory");
    } else {
        rc = write_svg(out, &f, base != NULL, o, id, width, min_px, err, errlen);
    }
    md_fold_free(&f);
    return rc;
}
