#!/usr/bin/env bash
# Measure Pincer's footprint against the fake model on 127.0.0.1 and print a markdown
# table: cold start of `pincer chat -m hi`, idle and peak memory, shutdown time, the
# size of the request a one-word message turns into, and the in-process harness
# overhead (`cargo bench --bench overhead`). Needs no network beyond 127.0.0.1.
#
# Usage: bench/run.sh            (from anywhere; builds release first)
#   RUNS=N       cold-start runs (default 30)
#   SKIP_CARGO_BENCH=1           leave out the in-process overhead benchmark
#   SKIP_BUILD=1                 measure the binaries already in target/release
# Uses hyperfine for the cold start if it is installed, else a timed loop.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
PINCER="$TARGET_DIR/release/pincer"
FAKES="$TARGET_DIR/release/pincer-fakes"
RUNS="${RUNS:-30}"

WORK=""
FAKE_PID=""
RUN_PID=""

cleanup() {
    for pid in "$RUN_PID" "$FAKE_PID"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [[ -n "$WORK" ]]; then
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench/run.sh: %s\n' "$*" >&2; exit 1; }
now_ns() { date +%s%N; }
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
mib() { awk -v kb="$1" 'BEGIN { printf "%.1f", kb / 1024 }'; }

# True while the process runs (a zombie, exited but not yet reaped, counts as gone).
alive() {
    local state
    state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true)"
    [[ -n "$state" && "$state" != "Z" && "$state" != "X" ]]
}

# A field of /proc/PID/status in kB ("VmRSS", "VmHWM").
status_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }

command -v curl >/dev/null || die "curl is needed to read the fake's request log; install curl"

# --- build -------------------------------------------------------------------------------
if [[ "${SKIP_BUILD:-}" == "1" ]]; then
    [[ -x "$PINCER" && -x "$FAKES" ]] || die "SKIP_BUILD=1 but $PINCER or $FAKES is missing; build them first"
else
    say "building release binaries (cargo build --release -p pincer -p pincer-fakes)"
    (cd "$ROOT" && cargo build --release -p pincer -p pincer-fakes)
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/pincer-bench.XXXXXX")"
export PINCER_HOME="$WORK/home"
H="$PINCER_HOME"

# --- fake model --------------------------------------------------------------------------
say "starting the fake model"
"$FAKES" model --port 0 >"$WORK/fake.out" 2>"$WORK/fake.err" &
FAKE_PID=$!
FAKE=""
for _ in $(seq 1 200); do
    if read -r word url <"$WORK/fake.out" 2>/dev/null && [[ "$word" == "model" ]]; then
        FAKE="$url"
        break
    fi
    alive "$FAKE_PID" || die "the fake model exited: $(cat "$WORK/fake.err")"
    sleep 0.05
done
[[ -n "$FAKE" ]] || die "the fake model printed no address within 10 s"
case "$FAKE" in
    http://127.0.0.1:*) ;;
    *) die "the fake model is not on 127.0.0.1: $FAKE" ;;
esac
say "fake model at $FAKE"

"$PINCER" --home "$H" onboard --non-interactive --base-url "$FAKE/v1" \
    --light-model m --heavy-model m --timezone UTC 2>"$WORK/onboard.err" \
    || die "onboarding failed: $(cat "$WORK/onboard.err")"

# --- (c) peak RSS of one chat, and (d) the request "hi" becomes --------------------------
curl -fsS -X POST "$FAKE/_fake/reset" >/dev/null
PEAK_KB=""
if [[ -x /usr/bin/time ]]; then
    say "peak RSS of one 'pincer chat -m hi' (/usr/bin/time -v)"
    /usr/bin/time -v "$PINCER" --home "$H" chat -m hi >"$WORK/reply.txt" 2>"$WORK/time.txt" \
        || die "pincer chat failed: $(cat "$WORK/time.txt")"
    PEAK_KB="$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$WORK/time.txt")"
else
    say "no /usr/bin/time: skipping peak RSS"
    "$PINCER" --home "$H" chat -m hi >"$WORK/reply.txt" 2>"$WORK/chat.err" \
        || die "pincer chat failed: $(cat "$WORK/chat.err")"
fi
REPLY="$(cat "$WORK/reply.txt")"
[[ "$REPLY" == "echo: hi" ]] || die "unexpected reply from pincer chat: $REPLY"

curl -fsS "$FAKE/_fake/requests" >"$WORK/requests.json"
BODY_BYTES="" SYSTEM_CHARS="" TOOLS="" TOOLS_BYTES=""
if command -v jq >/dev/null; then
    [[ "$(jq length "$WORK/requests.json")" -ge 1 ]] || die "the fake saw no request for 'hi'"
    # The fake keeps the parsed body; re-serialised compactly it is within a few bytes of the wire.
    BODY_BYTES="$(jq -c '.[0].body' "$WORK/requests.json" | tr -d '\n' | wc -c)"
    SYSTEM_CHARS="$(jq -r '.[0].body
        | ([.messages[]? | select(.role == "system") | .content
            | if type == "string" then . else (map(.text? // "") | join("")) end]
           + [(.system // "") | if type == "string" then . else (map(.text? // "") | join("")) end])
        | add | length' "$WORK/requests.json")"
    TOOLS="$(jq '.[0].body.tools // [] | length' "$WORK/requests.json")"
    TOOLS_BYTES="$(jq -c '.[0].body.tools // []' "$WORK/requests.json" | tr -d '\n' | wc -c)"
else
    say "no jq: skipping the request-size figures"
fi

# --- (a) cold start ----------------------------------------------------------------------
say "cold start: $RUNS runs of 'pincer chat -m hi'"
if command -v hyperfine >/dev/null; then
    hyperfine --warmup 3 --runs "$RUNS" --export-json "$WORK/hyperfine.json" \
        "'$PINCER' --home '$H' chat -m hi" >&2
    read -r MEAN_MS P50_MS MIN_MS < <(jq -r '.results[0]
        | "\(.mean * 1000) \(.median * 1000) \(.min * 1000)"' "$WORK/hyperfine.json" \
        | awk '{ printf "%.1f %.1f %.1f\n", $1, $2, $3 }')
    COLD_TOOL="hyperfine"
else
    for _ in 1 2 3; do
        "$PINCER" --home "$H" chat -m hi >/dev/null 2>&1 || die "pincer chat failed during warm-up"
    done
    : >"$WORK/cold.ns"
    for _ in $(seq 1 "$RUNS"); do
        t0="$(now_ns)"
        "$PINCER" --home "$H" chat -m hi >/dev/null 2>"$WORK/chat.err" \
            || die "pincer chat failed: $(cat "$WORK/chat.err")"
        t1="$(now_ns)"
        echo $((t1 - t0)) >>"$WORK/cold.ns"
    done
    read -r MEAN_MS P50_MS MIN_MS < <(sort -n "$WORK/cold.ns" | awk '
        { v[NR] = $1; sum += $1 }
        END { r = int((NR + 1) / 2); printf "%.1f %.1f %.1f\n", sum / NR / 1e6, v[r] / 1e6, v[1] / 1e6 }')
    COLD_TOOL="date +%s%N loop"
fi

# --- (b) idle gateway: memory and shutdown -----------------------------------------------
say "idle 'pincer run': RSS after 2 s, then SIGTERM"
"$PINCER" --home "$H" run >"$WORK/run.out" 2>"$WORK/run.err" &
RUN_PID=$!
sleep 2
alive "$RUN_PID" || die "pincer run exited early: $(cat "$WORK/run.err")"
IDLE_RSS_KB="$(status_kb "$RUN_PID" VmRSS)"
IDLE_HWM_KB="$(status_kb "$RUN_PID" VmHWM)"
IDLE_THREADS="$(awk '$1 == "Threads:" { print $2 }' "/proc/$RUN_PID/status")"
t0="$(now_ns)"
kill -TERM "$RUN_PID"
deadline=$((t0 + 15000000000))
while alive "$RUN_PID" && (($(now_ns) < deadline)); do
    sleep 0.005
done
t1="$(now_ns)"
if alive "$RUN_PID"; then
    kill -KILL "$RUN_PID" 2>/dev/null || true
    wait "$RUN_PID" 2>/dev/null || true
    RUN_PID=""
    die "pincer run did not exit within 15 s of SIGTERM"
fi
RUN_RC=0
wait "$RUN_PID" || RUN_RC=$?
RUN_PID=""
STOP_MS="$(ms $((t1 - t0)))"
[[ "$RUN_RC" -eq 0 ]] || die "pincer run exited $RUN_RC after SIGTERM (want 0): $(tail -5 "$WORK/run.err")"

# --- (e) in-process overhead -------------------------------------------------------------
OVERHEAD=""
if [[ "${SKIP_CARGO_BENCH:-}" != "1" ]]; then
    say "in-process overhead (cargo bench --bench overhead)"
    (cd "$ROOT" && cargo bench --bench overhead) >"$WORK/overhead.out"
    OVERHEAD="$(cat "$WORK/overhead.out")"
fi

# --- report ------------------------------------------------------------------------------
BIN_KB="$(($(stat -c %s "$PINCER") / 1024))"
REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null || true)" ]]; then
    REV="$REV (with uncommitted changes)"
fi

echo
echo "## Pincer benchmark — $(date -u +%Y-%m-%dT%H:%MZ), commit $REV"
echo
echo "$(uname -sm), $(nproc) cores, $(rustc --version 2>/dev/null || echo 'rustc ?'); fake model on 127.0.0.1"
echo
echo "| measure | result |"
echo "|---|---|"
echo "| cold start \`pincer chat -m hi\` ($RUNS runs, $COLD_TOOL) | mean $MEAN_MS ms, p50 $P50_MS ms, min $MIN_MS ms |"
echo "| idle \`pincer run\` after 2 s | VmRSS $(mib "$IDLE_RSS_KB") MiB, VmHWM $(mib "$IDLE_HWM_KB") MiB, $IDLE_THREADS threads |"
echo "| \`pincer run\` SIGTERM → exit | $STOP_MS ms, exit code $RUN_RC |"
if [[ -n "$PEAK_KB" ]]; then
    echo "| peak RSS of one \`pincer chat -m hi\` | $(mib "$PEAK_KB") MiB |"
else
    echo "| peak RSS of one \`pincer chat -m hi\` | skipped (no /usr/bin/time) |"
fi
if [[ -n "$BODY_BYTES" ]]; then
    echo "| request body for \"hi\" | $BODY_BYTES bytes ≈ $((BODY_BYTES / 4)) tokens (bytes/4) |"
    echo "| … of which system prompt | $SYSTEM_CHARS chars ≈ $((SYSTEM_CHARS / 4)) tokens |"
    echo "| … of which tool schemas | $TOOLS tools, $TOOLS_BYTES bytes ≈ $((TOOLS_BYTES / 4)) tokens |"
else
    echo "| request body for \"hi\" | skipped (no jq) |"
fi
echo "| release binary \`pincer\` | $(mib "$BIN_KB") MiB |"
if [[ -n "$OVERHEAD" ]]; then
    echo
    echo "$OVERHEAD"
fi
