#!/usr/bin/env bash
# cli_docs.sh: the man pages and the bash completion that the build makes and installs.
#   - `cmake --install` puts strobe.1 and strobe-COMMAND.1 for every command `strobe --help`
#     lists under share/man/man1, and the completion under share/bash-completion/completions;
#   - each page renders (groff -man, or man -l) with a NAME, SYNOPSIS and OPTIONS section, and
#     says what `strobe help COMMAND` says: every line of the --help text (spaces aside), hence
#     every option; `strobe help`, `strobe --help` and strobe.1 say the same;
#   - every option in a command's table is in its --help text (so the text lists them all);
#   - sourced in bash, the completion registers `complete -F _strobe strobe` and completes
#     commands, options and option values.
# Usage: cli_docs.sh STROBE BUILD_DIR WORK_DIR
set -u
STROBE=$1 BUILD=$2 WORK=$3
fail=0
rm -rf "$WORK" && mkdir -p "$WORK"
prefix="$WORK/prefix"
if ! cmake --install "$BUILD" --prefix "$prefix" >"$WORK/install.log" 2>&1; then
    echo "FAIL  cmake --install:"; cat "$WORK/install.log"; exit 1
fi
man1="$prefix/share/man/man1"
comp="$prefix/share/bash-completion/completions/strobe"

render() {
    if command -v groff >/dev/null; then
        groff -man -Tascii -P-c -P-b -P-u "$1" 2>"$WORK/render.err"
    elif command -v man >/dev/null; then
        MANWIDTH=200 man -l "$1" 2>"$WORK/render.err" | col -bx
    else
        return 77
    fi
}
# Whitespace folded to one space, so that wrapped or tab-aligned text compares.
fold_ws() { tr -s ' \t\n' '   '; }

# The commands, from the COMMANDS section of `strobe --help`.
cmds=$("$STROBE" --help | sed -n '/^COMMANDS$/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[ -n "$cmds" ] || { echo "FAIL  no commands in strobe --help"; exit 1; }
if [ "$("$STROBE" --help)" != "$("$STROBE" help)" ]; then
    echo "FAIL  strobe --help and strobe help differ"; fail=1
fi

check_page() { # NAME PAGE HELP_TEXT_FILE
    local name=$1 page=$2 help=$3
    if [ ! -f "$page" ]; then echo "FAIL  $name: $page not installed"; fail=1; return; fi
    for sec in '^\.TH ' '^\.SH NAME' '^\.SH SYNOPSIS' '^\.SH OPTIONS'; do
        grep -q "$sec" "$page" || { echo "FAIL  $name: no '$sec' in $page"; fail=1; return; }
    done
    local out
    out=$(render "$page")
    local rc=$?
    if [ $rc -eq 77 ]; then echo "SKIP  $name: neither groff nor man to render"; return; fi
    if [ $rc -ne 0 ] || [ -s "$WORK/render.err" ] || [ -z "$out" ]; then
        echo "FAIL  $name: rendering failed: $(cat "$WORK/render.err")"; fail=1; return
    fi
    local flat
    flat=$(printf '%s' "$out" | fold_ws)
    local missing=0
    # Each line of the --help text, spaces folded, must be in the rendered page.
    if ! FLAT="$flat" awk '{ gsub(/[ \t]+/, " "); sub(/^ /, ""); sub(/ $/, "") }
            $0 != "" && index(ENVIRON["FLAT"], $0) == 0 { print; bad = 1 }
            END { exit bad }' "$help" >"$WORK/missing"; then
        sed "s/^/FAIL  $name: the man page lacks the --help line: /" "$WORK/missing"
        missing=1
    fi
    for opt in $(grep -o -- '--[a-z][a-z-]*' "$help" | sort -u); do
        [[ $flat == *"$opt"* ]] || { echo "FAIL  $name: option $opt not in the man page"; missing=1; }
    done
    [ $missing -eq 0 ] && echo "ok    $name: $page renders and says what --help says" || fail=1
}

"$STROBE" --help >"$WORK/help.strobe"
check_page strobe "$man1/strobe.1" "$WORK/help.strobe"
for c in $cmds; do
    "$STROBE" help "$c" >"$WORK/help.$c"
    if ! cmp -s "$WORK/help.$c" <("$STROBE" "$c" --help); then
        echo "FAIL  $c: strobe help $c and strobe $c --help differ"; fail=1
    fi
    check_page "$c" "$man1/strobe-$c.1" "$WORK/help.$c"
done

# Every option of each command's table is documented in its --help: the completion lists the
# tables' options, so compare with it.
if [ ! -f "$comp" ]; then
    echo "FAIL  completion not installed at $comp"; exit 1
fi
for c in $cmds; do
    opts=$(bash -c 'source "$1"; COMP_WORDS=(strobe "$2" --); COMP_CWORD=2; _strobe; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$comp" "$c")
    [ -n "$opts" ] || { echo "FAIL  completion: no options for $c"; fail=1; continue; }
    for o in $opts; do
        grep -q -- "$o" "$WORK/help.$c" || { echo "FAIL  $c: option $o is not in its --help"; fail=1; }
    done
done

# The completion in bash.
complete_words() { # WORD... : the completions of the last word
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _strobe; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$comp" "$@" | tr '\n' ' ' | sed 's/ $//'
}
expect_completion() { # WANT WORD...
    local want=$1; shift
    local got
    got=$(complete_words "$@")
    if [ "$got" = "$want" ]; then
        echo "ok    completion of '$*': $got"
    else
        echo "FAIL  completion of '$*': got '$got', want '$want'"; fail=1
    fi
}
reg=$(bash -c 'source "$1"; complete -p strobe' _ "$comp")
if [[ $reg == *"-F _strobe"*" strobe" ]]; then
    echo "ok    complete -p strobe: $reg"
else
    echo "FAIL  complete -p strobe: '$reg'"; fail=1
fi
expect_completion "summary" strobe su
expect_completion "check convert critical-path counters" strobe c
expect_completion "--limit" strobe summary --li
expect_completion "--name-width" strobe kernels T --na
expect_completion "table csv json" strobe summary --format ""
expect_completion "text json" strobe info -f ""
expect_completion "stacks" strobe help sta
exit $fail
