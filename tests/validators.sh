# validators.sh: sourced by the test scripts that run the independent trace checkers of
# SHARED_DIR/validators (Perfetto's trace processor, the Chrome DevTools engine, speedscope).
#
#   strobe_check_trace SHARED_DIR TRACE [--strict] [--coerce-ids]
#
# runs on TRACE what SHARED_DIR/validators/check_all.sh runs: tp_query, and for a JSON trace
# parse_trace.mjs and speedscope_check.mjs, with the same arguments, output and exit status (the
# worst of the checkers: 0 ok, 1 findings with --strict, 2 could not parse).
#
# Why not check_all.sh itself: it runs the validators' setup.sh on every call, and setup.sh copies
# tp_query.cc into its cache before comparing times, so it rebuilds tp_query with clang every time
# (10-20 s on a loaded machine). validate_traces checks some 60 traces, and ran past its 20-minute
# timeout that way. Here setup.sh runs only when the cache lacks a checker or holds one older than
# the shared sources, under an exclusive lock; the checkers run under a shared lock, so that no
# setup (ours, or a direct `flock LOCK check_all.sh`, which takes the lock exclusively) rebuilds
# tp_query while one runs ("Text file busy").

STROBE_VLOCK=/tmp/strobe-trace-validators.lock

strobe_validators_home() { echo "${TRACE_VALIDATORS_HOME:-$HOME/.cache/trace-validators}"; }

# True when the cache holds every checker, none older than SHARED_DIR's sources.
strobe_validators_ready() {
    local v="$1/validators" home
    home=$(strobe_validators_home)
    [ -x "$home/tp_query" ] && [ ! "$v/tp_query.cc" -nt "$home/tp_query" ] &&
        cmp -s "$v/parse_trace.mjs" "$home/parse_trace.mjs" &&
        cmp -s "$v/speedscope_check.mjs" "$home/speedscope_check.mjs" &&
        [ -d "$home/node_modules/@paulirish/trace_engine" ] && [ -d "$home/node_modules/speedscope" ]
}

strobe_check_trace() {
    local shared=$1 f=$2 home
    shift 2
    home=$(strobe_validators_home)
    if ! strobe_validators_ready "$shared"; then
        (
            flock -x 9
            strobe_validators_ready "$shared" || "$shared/validators/setup.sh" >/dev/null
        ) 9>>"$STROBE_VLOCK" || {
            echo "the trace validators' setup ($shared/validators/setup.sh) failed"
            return 2
        }
    fi
    (
        flock -s 9
        worst=0
        run() {
            local name=$1 rc
            shift
            echo "===== $name"
            "$@"
            rc=$?
            echo "----- $name exit $rc"
            [ $rc -gt $worst ] && worst=$rc
        }
        run perfetto "$home/tp_query" "$f" "$@"
        case "$f" in
        *.pftrace | *.perfetto-trace | *.pb) ;;
        *)
            run devtools node "$home/parse_trace.mjs" "$f" "$@"
            run speedscope node "$home/speedscope_check.mjs" "$f" "$@"
            ;;
        esac
        exit $worst
    ) 9>>"$STROBE_VLOCK"
}
