#!/usr/bin/env bash
# cli_export_pprof.sh: `strobe export --pprof` read back by an independent decoder, Go's own
# `go tool pprof` (Debian's golang-go, which needs no module download):
#   1. a generated trace (ranges with Python "Call stack"s): each sample of `go tool pprof -raw`,
#      in us, is one line of `strobe stacks` with the same weight, so the totals are equal; -top
#      says the same total; -traces and -list show the Python functions at their files and lines;
#   2. generated CPU samples (instants of category cpu_sample) with native frames: counts and
#      cpu nanoseconds (count x 1/--hz) equal `strobe stacks --samples`; a frame's module is its
#      mapping;
#   3. a sampled run of a small C program (`strobe record --sample`, where cc and strobe record
#      work): the same against `strobe stacks --samples`;
#   4. a heap run (`strobe record --heap` of a small C program): alloc_objects, alloc_space and
#      inuse_space add up to the calls, bytes allocated and bytes leaked `strobe summary` prints;
#   5. the shared resnet50 trace, where SHARED_DIR has it: self_cpu and self_cuda as in 1.
# Usage: cli_export_pprof.sh STROBE WORK_DIR [SHARED_DIR [record|no-record]] (no-record: leave
# out 3. and 4.). Exit 77 (with the reason) without go.
set -u
STROBE=$1 WORK=$2 SHARED=${3:-} RUNS=${4:-record}
command -v go >/dev/null || { echo "SKIP: go (Debian's golang-go) is not installed"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK/home" || exit 1
# go keeps a cache under HOME; the build's folder keeps the test's own.
export HOME="$WORK/home" GOCACHE="$WORK/home/cache" GOTOOLCHAIN=local GOFLAGS=
fail=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }

# The samples of `go tool pprof -raw FILE`, one line each: the values, space-separated.
raw_values() {
    go tool pprof -raw "$1" 2>"$WORK/raw.err" |
        awk '/^Samples:/ {s = 1; getline; next} /^Locations/ {s = 0} s && /:/ {sub(/:.*/, ""); $1 = $1; print}'
}

# Compares the samples of pprof file PB (value column COL, divided by DIV and rounded, zeros
# left out) with the weights of folded stacks FOLDED, as sorted lists; says OK or FAIL for NAME.
same_weights() {
    local name=$1 pb=$2 col=$3 div=$4 folded=$5
    raw_values "$pb" | awk -v c="$col" -v d="$div" '{v = int($c / d + 0.5); if (v > 0) print v}' |
        sort -n >"$WORK/$name.pprof"
    awk '{print $NF}' "$folded" | sort -n >"$WORK/$name.stacks"
    local n sp ss
    n=$(wc -l <"$WORK/$name.stacks")
    sp=$(awk '{s += $1} END {print s + 0}' "$WORK/$name.pprof")
    ss=$(awk '{s += $1} END {print s + 0}' "$WORK/$name.stacks")
    if [ "$n" -gt 0 ] && cmp -s "$WORK/$name.pprof" "$WORK/$name.stacks"; then
        ok "$name: $n samples, total $sp, as strobe stacks"
    else
        bad "$name: pprof total $sp ($(wc -l <"$WORK/$name.pprof") samples), strobe stacks $ss ($n lines)"
        head -3 "$WORK/raw.err"
    fi
}

export_ok() { # NAME TRACE ARGS...: strobe export --pprof into WORK/NAME.pb.gz
    local name=$1 trace=$2
    shift 2
    if "$STROBE" export --pprof -q "$trace" -o "$WORK/$name.pb.gz" "$@" 2>"$WORK/$name.err"; then
        return 0
    fi
    bad "$name: strobe export: $(cat "$WORK/$name.err")"
    return 1
}

# ---- 1. ranges with Python stacks ----
cat >"$WORK/ranges.json" <<'EOF'
{"traceEvents": [
 {"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":100,"dur":50,
  "args":{"Call stack":"model.py(12): forward;train.py(3): <module>"}},
 {"ph":"X","cat":"cpu_op","name":"aten::convolution","pid":1,"tid":1,"ts":110,"dur":30},
 {"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":200,"dur":20,
  "args":{"Call stack":"model.py(14): forward;train.py(3): <module>"}},
 {"ph":"X","cat":"user_annotation","name":"step<1>","pid":1,"tid":2,"ts":100,"dur":7.4},
 {"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":2,"ts":101,"dur":0.3}
]}
EOF
printf 'import torch\n\n\n\n\n\n\n\n\n\n\ndef forward(x):\n    y = conv(x)\n    return y + 1\n' >"$WORK/model.py"
"$STROBE" stacks -q "$WORK/ranges.json" >"$WORK/ranges.folded" || bad "stacks of ranges.json"
if export_ok ranges "$WORK/ranges.json"; then
    same_weights ranges "$WORK/ranges.pb.gz" 1 1000 "$WORK/ranges.folded"
    top=$(go tool pprof -top "$WORK/ranges.pb.gz" 2>&1)
    echo "$top" | grep -q "of 77.40us total" && ok "ranges: -top total 77.40us" ||
        bad "ranges: -top total is not 77.40us: $top"
    traces=$(go tool pprof -symbolize=none -traces "$WORK/ranges.pb.gz" 2>&1)
    for f in aten::convolution aten::conv2d forward '<module>' 'step<1>'; do
        echo "$traces" | grep -qF "$f" || bad "ranges: -traces lacks $f: $traces"
    done
    # -list finds model.py (in WORK) and puts 50us on line 12 and 20us on line 14.
    list=$(cd "$WORK" && go tool pprof -list '^forward$' ranges.pb.gz 2>&1)
    if echo "$list" | grep -qE '50us +12:def forward' && echo "$list" | grep -qE '20us +14: +return'; then
        ok "ranges: -list shows forward's lines 12 and 14 in model.py"
    else
        bad "ranges: -list: $list"
    fi
fi

# ---- 2. CPU samples with native frames ----
{
    echo '{"traceEvents": ['
    for i in 1 2 3 4 5; do
        echo '{"ph":"i","s":"t","cat":"cpu_sample","name":"work","pid":7,"tid":7,"ts":'$i',"args":{"Call stack":"work (/src/app.c:9);main (/src/app.c:20);__libc_start_main (libc.so.6)"}},'
    done
    echo '{"ph":"i","s":"t","cat":"cpu_sample","name":"memcpy","pid":7,"tid":7,"ts":9,"args":{"Call stack":"memcpy (libc.so.6);main (/src/app.c:21);__libc_start_main (libc.so.6)"}}'
    echo ']}'
} >"$WORK/samples.json"
"$STROBE" stacks -q --samples "$WORK/samples.json" >"$WORK/samples.folded" || bad "stacks of samples.json"
if export_ok samples "$WORK/samples.json" --samples --hz 250; then
    same_weights samples "$WORK/samples.pb.gz" 1 1 "$WORK/samples.folded"
    cpu=$(raw_values "$WORK/samples.pb.gz" | awk '{s += $2} END {print s + 0}')
    [ "$cpu" = 24000000 ] && ok "samples: 6 samples at 250 Hz are 24000000 ns" || bad "samples: cpu ns $cpu, not 24000000"
    raw=$(go tool pprof -raw "$WORK/samples.pb.gz" 2>&1)
    echo "$raw" | grep -q "libc.so.6" && echo "$raw" | grep -qE 'M=2 memcpy' &&
        ok "samples: libc.so.6 is a mapping of its own" || bad "samples: no mapping libc.so.6: $raw"
    echo "$raw" | grep -qE 'work /src/app.c:9' && ok "samples: work at /src/app.c:9" ||
        bad "samples: work's file and line missing: $raw"
fi

# ---- 3. and 4. a sampled run and a heap run of small C programs ----
CC=${CC:-cc}
if [ "$RUNS" = no-record ]; then
    echo "note: no sampled or heap run (strobe record is not built, or a sanitizer build)"
elif command -v "$CC" >/dev/null && "$STROBE" record --help >/dev/null 2>&1; then
    cat >"$WORK/spin.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
static volatile double x;
__attribute__((noinline)) static void inner(int n) { for (int i = 0; i < n; i++) x += i * 0.5; }
__attribute__((noinline)) static void outer(int n) { for (int k = 0; k < 20; k++) inner(n); x += 1; }
int main(void) {
    for (int r = 0; r < 10; r++) outer(1000000);
    for (int i = 0; i < 300; i++) {
        char *p = malloc(4096 + i);
        if (p == NULL) return 1;
        p[0] = (char)i;
        if (i % 3) free(p);
    }
    printf("%f\n", x);
    return 0;
}
EOF
    if "$CC" -O1 -g -fno-omit-frame-pointer -o "$WORK/spin" "$WORK/spin.c"; then
        if "$STROBE" record --sample -o "$WORK/run.json" -- "$WORK/spin" >"$WORK/run.out" 2>&1 &&
            "$STROBE" stacks -q --samples "$WORK/run.json" >"$WORK/run.folded" 2>&1; then
            export_ok run "$WORK/run.json" --samples && same_weights run "$WORK/run.pb.gz" 1 1 "$WORK/run.folded"
        else
            echo "note: strobe record --sample gave no samples here (perf_event_open refused?): $(tail -2 "$WORK/run.out")"
        fi
        if "$STROBE" record --heap -o "$WORK/heap.json" -- "$WORK/spin" >"$WORK/heap.out" 2>&1 &&
            export_ok heap "$WORK/heap.json" --metric memory; then
            # strobe summary's line: "N allocation calls, B bytes allocated, ... L bytes leaked"
            want=$("$STROBE" summary -q "$WORK/heap.json" 2>&1 | sed -n 's/.* \([0-9]*\) allocation calls, \([0-9]*\) bytes allocated.* \([0-9]*\) bytes leaked at exit.*/\1 \2 \3/p' | head -1)
            got=$(raw_values "$WORK/heap.pb.gz" | awk '{a += $1; b += $2; c += $3} END {print a + 0, b + 0, c + 0}')
            [ -n "$want" ] && [ "$got" = "$want" ] &&
                ok "heap: calls, bytes allocated and leaked $got, as strobe summary" ||
                bad "heap: pprof gives '$got', strobe summary '$want'"
        else
            echo "note: strobe record --heap did not run here: $(tail -2 "$WORK/heap.out")"
        fi
    else
        echo "note: $CC failed; no sampled or heap run"
    fi
else
    echo "note: no C compiler or strobe record here; no sampled or heap run"
fi

# ---- 5. the shared resnet50 trace ----
R50=${SHARED:+$SHARED/traces/kineto_tb_resnet50_nw0.pt.trace.json.gz}
if [ -n "$R50" ] && [ -f "$R50" ]; then
    "$STROBE" stacks -q "$R50" >"$WORK/r50.folded" || bad "stacks of resnet50"
    export_ok r50 "$R50" && same_weights r50 "$WORK/r50.pb.gz" 1 1000 "$WORK/r50.folded"
    "$STROBE" stacks -q --metric self_cuda "$R50" >"$WORK/r50_cuda.folded" || bad "stacks --metric self_cuda of resnet50"
    export_ok r50_cuda "$R50" --metric self_cuda &&
        same_weights r50_cuda "$WORK/r50_cuda.pb.gz" 1 1000 "$WORK/r50_cuda.folded"
    go tool pprof -top -nodecount=8 "$WORK/r50.pb.gz" 2>&1 | sed 's/^/    /'
else
    echo "note: no shared resnet50 trace (SHARED_DIR '${SHARED}'): part 5 not run"
fi

# ---- a trace without the metric's source: refused, no file ----
if "$STROBE" export --pprof -q --samples "$WORK/ranges.json" -o "$WORK/none.pb.gz" 2>"$WORK/none.err"; then
    bad "a trace without samples was exported"
elif [ -e "$WORK/none.pb.gz" ] || ! grep -q "no CPU samples" "$WORK/none.err"; then
    bad "a trace without samples: $(cat "$WORK/none.err"), file left: $(ls "$WORK/none.pb.gz" 2>&1)"
else
    ok "a trace without samples: $(cat "$WORK/none.err")"
fi
exit $fail
