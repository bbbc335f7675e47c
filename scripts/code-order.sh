#!/usr/bin/env bash
# Makes build/code-order.txt: the functions of the release `pincer` that run when the
# gateway starts and idles with no channel (first), then those each channel adds when it
# connects and idles (Telegram, Discord, Slack, Matrix: a gateway with fewer channels
# keeps only its own groups resident), then those a turn on each platform adds, each
# group in the order the build lays them out. build.rs
# hands the list to the linker so those functions sit together at the start of `.text`
# (with the three older channels the idle gateway keeps about 3 MiB of code resident
# instead of 11; with Matrix about 7 instead of 22). Run it when
# `cargo bench --bench idle` shows the code pages growing back (new code, a new rustc
# or new dependency versions rename functions). Needs valgrind, python3 and Synapse
# (scripts/install-synapse.sh); takes about half an hour on two cores.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
command -v valgrind >/dev/null || { echo "code-order: needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'pkill -TERM -f "$work/pincer" 2>/dev/null || true; rm -rf "$work"' EXIT

# A normal release build (a build that keeps its symbols would name every function
# differently: the profile is part of each crate's hash), with the linker's map.
PINCER_LINK_MAP="$work/pincer.map" cargo build --release -p pincer
cp target/release/pincer "$work/pincer"

# Run a bench with `pincer run` under callgrind. The wrapper passes a SIGTERM on (the
# idle bench's restart stops the gateway so); when the bench kills the wrapper instead,
# callgrind writes its profile once the gateway exits on the SIGTERM below.
profile() { # <name> <bench> [VAR=value ...]
    local name=$1 bench=$2
    shift 2
    mkdir -p "$work/$name"
    printf '#!/bin/sh\nvalgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=%s/out.%%p %s "$@" &\ngateway=$!\ntrap '"'"'kill -TERM $gateway'"'"' TERM\nwait $gateway\nwait $gateway\n' \
        "$work/$name" "$work/pincer" > "$work/$name.sh"
    chmod +x "$work/$name.sh"
    env "$@" PINCER_BIN="$work/$name.sh" cargo bench --profile profiling --bench "$bench" >/dev/null
    pkill -TERM -f "$work/pincer" || true
    while pgrep -f "$work/pincer" >/dev/null; do sleep 1; done
}
sets="none telegram discord slack matrix"
# Each set started twice on one home: a first start (Matrix logs in and sets up its
# device) and a restart (it resumes the saved session), the usual start of a gateway.
for set in $sets; do
    profile "idle-$set" idle IDLE_SETS="$set" IDLE_RESTART=1 RUNS=1
done
profile turns e2e

# callgrind counts the instructions of the stripped binary by their address in the
# file; the map says which function's section holds each.
python3 - "$work" $sets <<'PY'
import bisect, glob, re, sys
work, sets = sys.argv[1], sys.argv[2:]
sections = []  # (address, end, symbol) of every function in .text
in_text = False
# lld's map: address, load address, size, alignment, then an output section after one
# space, an input section ("file:(.text.<symbol>)") after nine, a symbol after 17.
for line in open(f"{work}/pincer.map"):
    m = re.match(r"\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+( +)(\S+)", line)
    if not m:
        continue
    address, size, indent, what = m.groups()
    if len(indent) == 1:
        in_text = what == ".text"
    elif in_text and len(indent) == 9 and ":(.text." in what:
        name = what.split(":(.text.", 1)[1].rstrip(")")
        name = re.sub(r"^(unlikely|hot|startup|exit)\.", "", name)
        start = int(address, 16)
        sections.append((start, start + int(size, 16), name))
sections.sort()
starts = [s[0] for s in sections]

def ran(dir):
    """The functions of the binary that ran: every instruction callgrind counted
    (positions are absolute, +/- the previous one, or * for the same), in its section."""
    found, objects, current, at = set(), {}, None, 0
    for path in glob.glob(f"{dir}/out.*"):
        for line in open(path, errors="replace"):
            m = re.match(r"(ob|cob)=\((\d+)\)(?: (.*))?", line)
            if m:
                kind, key, name = m.groups()
                if name:
                    objects[key] = name.strip()
                if kind == "ob":
                    current = objects.get(key)
                continue
            first = line[:1]
            if first not in "0123456789+-*" or not line.strip():
                continue
            token = line.split()[0]
            if token.startswith("0x"):
                at = int(token, 16)
            elif token[0] in "+-":
                at += int(token)
            if current != f"{work}/pincer":
                continue
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and at < sections[i][1]:
                found.add(i)
    return found

size = lambda group: sum(sections[i][1] - sections[i][0] for i in group) // 1024
groups, idle = [], set()
for name in sets:
    added = ran(f"{work}/idle-{name}") - idle
    idle |= added
    groups.append(sorted(added))
    print(f"code-order: {len(added)} functions ({size(added)} KiB) at start and idle with {name}")
turns = ran(f"{work}/turns") - idle
groups.append(sorted(turns))
with open("build/code-order.txt", "w") as out:
    for group in groups:
        for i in group:
            out.write(sections[i][2] + "\n")
print(f"code-order: {len(idle)} functions ({size(idle)} KiB) at start and idle, "
      f"{len(turns)} ({size(turns)} KiB) more in turns: build/code-order.txt")
PY
