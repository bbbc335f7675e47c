#!/usr/bin/env bash
# Per-call cost of each sandbox against plain `sh -c`: N calls of `sh -c true` run
# bare, under bubblewrap with the arguments Pincer uses, and through Pincer's Landlock
# launcher (the pincer binary re-executed twice: launcher, then the restricted step).
#   PINCER_BIN=target/release/pincer N=200 bash bench/sandbox.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${PINCER_BIN:-target/release/pincer}")
n=${N:-200}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
ws="$home/workspace"
mkdir -p "$ws"
spec="{\"workspace\":\"$ws\",\"hidden\":\"$home\",\"network\":true,\"read_only\":[]}"

per_call() {
    local label=$1
    shift
    local start end
    start=$(date +%s%N)
    for _ in $(seq "$n"); do "$@" >/dev/null; done
    end=$(date +%s%N)
    awk -v l="$label" -v t=$((end - start)) -v n="$n" 'BEGIN { printf "%-10s %7.2f ms per call\n", l, t / n / 1e6 }'
}

cd "$ws"
per_call "sh -c" /bin/sh -c true
if command -v bwrap >/dev/null 2>&1; then
    per_call "bwrap" bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs "$home" \
        --bind "$ws" "$ws" --unshare-pid --unshare-ipc --unshare-uts --cap-drop ALL \
        --die-with-parent --new-session --chdir "$ws" -- /bin/sh -c true
fi
per_call "landlock" "$bin" __sandbox launch "$spec" -- /bin/sh -c true
