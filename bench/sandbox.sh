#!/usr/bin/env bash
# Per-call cost of each sandbox against plain `sh -c`: N calls of `sh -c true` run
# bare, under bare bubblewrap, under bubblewrap as Pincer runs it (the pincer binary
# twice more: the launcher outside, which counts processes, and the step inside, which
# sets Landlock rules and rlimits), and through Pincer's Landlock launcher (the pincer
# binary twice: launcher, then the restricted step).
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
    per_call "bwrap+pincer" "$bin" __sandbox watch "$spec" -- bwrap --ro-bind / / --dev /dev --proc /proc \
        --size 4294967296 --tmpfs /tmp --size 4294967296 --tmpfs /dev/shm --size 1048576 --tmpfs "$home" \
        --bind "$ws" "$ws" --unshare-pid --unshare-ipc --unshare-uts --cap-drop ALL \
        --die-with-parent --new-session --chdir "$ws" --ro-bind "$bin" /tmp/.pincer-inside \
        -- /tmp/.pincer-inside __sandbox inside "$spec" -- /bin/sh -c true
fi
per_call "landlock" "$bin" __sandbox launch "$spec" -- /bin/sh -c true
