#!/bin/sh
# format_check.sh: every tracked C and C++ source (.c, .h, .cpp) is formatted as .clang-format
# says: clang-format --dry-run -Werror reports each line that `clang-format -i` would change, and
# the test fails if there is one. Skips (77) where clang-format is missing (scripts/deps.sh
# --test installs Debian's). CLANG_FORMAT picks another binary.
# Usage: format_check.sh SOURCE_DIR
set -u
cd "$1" || exit 1
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "SKIP: $cf not found (scripts/deps.sh --test installs it)"
    exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h' '*.cpp')
else
    # Outside git (a source tarball): every source but the build folders' generated ones.
    files=$(find . \( -name 'build*' -o -name '.?*' \) -prune -o \
        \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print | sort)
fi
# shellcheck disable=SC2086 # one file name per word
if ! "$cf" --dry-run -Werror $files; then
    echo "FAIL  not formatted (above); run: $cf -i FILE"
    exit 1
fi
echo "ok  $(printf '%s\n' "$files" | wc -l) files formatted ($("$cf" --version))"
