#!/bin/sh
# layering.sh: checks every #include "..." under include/strobe/, src/, cli/ and python/src/ (C,
# and the torch observer's C++) against the dependency rule in tests/layers.txt, and that
# docs/ARCHITECTURE.md shows the same rule. Each violation is reported as FILE:LINE with the
# include and the reason; the test fails if there is any.
# Usage: layering.sh SOURCE_DIR [LAYERS_FILE]
set -u
root=$1
layers=${2:-tests/layers.txt}
cd "$root" || exit 1
files=$(find include/strobe src cli python/src -name '*.[ch]' -o -name '*.cpp' | sort)
headers=$(find include src cli python/src -name '*.h' | sort)

# One pass: the rule file first, then the list of headers that exist, then the sources.
printf '%s\n' "$headers" | awk -v layers="$layers" '
function own(dir) {
    if (dir == "include/strobe") return "strobe"
    if (dir ~ /^src\//) return substr(dir, 5)
    return dir
}
function bad(file, line, inc, why) {
    printf "%s:%d: #include \"%s\": %s\n", file, line, inc, why
    fail = 1
}
BEGIN {
    while ((getline l < layers) > 0) {
        if (l ~ /^[ \t]*#/ || l ~ /^[ \t]*$/) continue
        n = split(l, w, /[ \t]+/)
        if (w[1] == "except") { except[w[2] " " w[3]] = 1; continue }
        sub(/:$/, "", w[1])
        row[w[1]] = 1
        list[w[1]] = ""
        for (i = 2; i <= n; i++) { ok[w[1] " " w[i]] = 1; list[w[1]] = list[w[1]] " " w[i] }
    }
}
FILENAME == "-" { exists[$0] = 1; next }
FNR == 1 {
    dir = FILENAME; sub(/\/[^\/]*$/, "", dir)
    if (!(dir in row)) { printf "%s: folder %s has no row in %s\n", FILENAME, dir, layers; fail = 1 }
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    if (!(dir in row)) next
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    if ((FILENAME " " inc) in except) next
    if (inc ~ /(^|\/)\.\.?\//) { bad(FILENAME, FNR, inc, "a relative path: name the folder (\"folder/x.h\")"); next }
    if (inc !~ /\//) {
        if (!((dir "/" inc) in exists))
            bad(FILENAME, FNR, inc, "not in " dir "/: a header from another folder is written with its folder")
        next
    }
    folder = inc; sub(/\/[^\/]*$/, "", folder)
    # "strobe/x.h" is the public API, "cli/x.h" a header of the CLI (the repository root is on
    # the path of what includes one), anything else a folder of src/.
    target = (folder == "strobe" ? "include/" : folder == "cli" ? "" : "src/") inc
    if (!(target in exists)) { bad(FILENAME, FNR, inc, "names no header of ours (" target ")"); next }
    if (folder == own(dir) || ((dir " " folder) in ok) || ((dir " " inc) in ok)) next
    bad(FILENAME, FNR, inc, dir " may not include " folder "/ (allowed:" (list[dir] == "" ? " nothing" : list[dir]) ")")
}
END { exit fail }
' - $files
fail=$?

# docs/ARCHITECTURE.md shows the rule rows verbatim, in a code block after
# "<!-- tests/layers.txt -->".
rules=$(grep -v '^[[:space:]]*#' "$layers" | grep -v '^except ' | grep ':')
doc=docs/ARCHITECTURE.md
doc_rows=$(awk '/<!-- tests\/layers.txt -->/ { on = 1; next }
                on && /^```/ { if (in_block) exit; in_block = 1; next }
                on && in_block { print }' "$doc")
if [ "$doc_rows" != "$rules" ]; then
    echo "$doc: the rule after <!-- tests/layers.txt --> differs from $layers:"
    printf '%s\n' "$rules" >"${TMPDIR:-/tmp}/layering.rules.$$"
    printf '%s\n' "$doc_rows" | diff "${TMPDIR:-/tmp}/layering.rules.$$" - | sed 's/^/  /'
    rm -f "${TMPDIR:-/tmp}/layering.rules.$$"
    fail=1
fi

if [ $fail -ne 0 ]; then
    echo "FAIL  includes break the dependency rule (tests/layers.txt, docs/ARCHITECTURE.md)"
    exit 1
fi
echo "ok  every include follows tests/layers.txt"
