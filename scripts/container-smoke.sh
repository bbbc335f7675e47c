#!/usr/bin/env bash
# The container image's smoke test (CI runs it after the tests): `pincer --version`, a
# chat against the fake model, and the sandbox, from the image's root filesystem.
#
# No base image can be pulled here (no registry is reachable), so this does not run
# `podman build` on the Containerfile. It builds the root filesystem the Containerfile's
# runtime stage makes, with the same steps, from this machine's Debian (the runtime's
# base is Debian 12 too): the binary at /usr/local/bin/pincer with the libraries it
# loads, the CA roots, the user pincer (uid 10001), /var/lib/pincer (0700, theirs).
# Then, where podman can run containers, the tree is imported as an image with the
# runtime stage's ENV, USER, VOLUME, WORKDIR, ENTRYPOINT and CMD read from the
# Containerfile, and run as one (network: the host's, to reach the fake on 127.0.0.1);
# where it cannot, the tree is run under bwrap as that user instead. It says which.
#
# Usage: scripts/container-smoke.sh [PINCER_BIN [PINCER_FAKES_BIN]]
#        (default: target/debug/pincer and target/debug/pincer-fakes, as `cargo test` builds;
#        PINCER_SMOKE_ENGINE=bwrap skips podman)
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
bin=${1:-$target/debug/pincer}
fakes=${2:-$target/debug/pincer-fakes}
for file in "$bin" "$fakes"; do
    [ -x "$file" ] || { echo "missing $file: run cargo build -p pincer -p pincer-fakes first" >&2; exit 1; }
done

work=$(mktemp -d /tmp/pincer-container-smoke.XXXXXX)
fake_pid=""
image=""
cleanup() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
    if [ -n "$image" ]; then
        podman "${podman_opts[@]}" rmi -f "$image" localhost/pincer-smoke-base >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
# podman keeps its images and containers in the smoke's own folder, removed after.
podman_opts=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
# crun refuses hosts with cgroups v1 and v2 mounted side by side; runc runs there.
if command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ]; then
    podman_opts+=(--runtime runc)
fi

# --- The runtime stage's root filesystem, as the Containerfile's steps make it.
root=$work/rootfs
mkdir -p "$root"/{etc/ssl/certs,usr/local/bin,var/lib,tmp,dev,proc}
chmod 1777 "$root/tmp"
install -m 0755 "$bin" "$root/usr/local/bin/pincer"
# The libraries the binary loads (Debian 12's, as in debian:bookworm-slim), and the loader.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
# apt-get install ca-certificates
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
# useradd --uid 10001 --user-group pincer; install -d -m 0700 -o pincer -g pincer /var/lib/pincer
printf 'root:x:0:0:root:/root:/bin/sh\npincer:x:10001:10001::/var/lib/pincer:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\npincer:x:10001:\n' >"$root/etc/group"
install -d -m 0700 -o 10001 -g 10001 "$root/var/lib/pincer"

# --- The fake model on the host, and a home for the image's volume.
"$fakes" model --port 0 >"$work/fake.out" 2>"$work/fake.err" &
fake_pid=$!
for _ in $(seq 100); do
    grep -q '^model ' "$work/fake.out" 2>/dev/null && break
    sleep 0.1
done
base_url=$(awk '/^model /{print $2}' "$work/fake.out")
[ -n "$base_url" ] || { echo "the fake model did not start:" >&2; cat "$work/fake.err" >&2; exit 1; }
home=$work/home
install -d -m 0700 "$home"
printf 'version = 1\n[router]\nlight = ["fake/m"]\n[providers.fake]\nkind = "openai"\nbase_url = "%s/v1"\n' \
    "$base_url" >"$home/config.toml"

# --- Run it: in podman where it runs containers, else under bwrap.
engine=bwrap
if [ "${PINCER_SMOKE_ENGINE:-}" != bwrap ] && command -v podman >/dev/null 2>&1; then
    tar -C "$root" -cf "$work/base.tar" .
    changes=()
    # The runtime stage's image settings, from the Containerfile (after its last FROM).
    while IFS= read -r line; do
        changes+=(--change "$line")
    done < <(awk '/^FROM /{keep=""} {keep = keep $0 "\n"} END{printf "%s", keep}' Containerfile \
        | grep -E '^(ENV|USER|VOLUME|WORKDIR|ENTRYPOINT|CMD) ')
    if podman "${podman_opts[@]}" import "${changes[@]}" "$work/base.tar" localhost/pincer-smoke >/dev/null 2>"$work/podman.err" \
        && podman "${podman_opts[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
            --entrypoint /usr/local/bin/pincer localhost/pincer-smoke --help >/dev/null 2>>"$work/podman.err"; then
        engine=podman
        image=localhost/pincer-smoke
    else
        echo "podman cannot run containers here; running the image's tree under bwrap:" >&2
        sed 's/^/  /' "$work/podman.err" >&2
    fi
fi
echo "engine: $engine"
# The volume belongs to the image's user: uid 10001 in a container; under bwrap the
# caller, whom the user namespace shows as 10001.
[ "$engine" = podman ] && chown -R 10001:10001 "$home"

pincer() {
    if [ "$engine" = podman ]; then
        podman "${podman_opts[@]}" run --rm -i --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
            -v "$home:/var/lib/pincer" "$image" "$@"
    else
        bwrap --bind "$root" / --bind "$home" /var/lib/pincer --proc /proc --dev /dev --tmpfs /tmp \
            --unshare-user --uid 10001 --gid 10001 --unshare-pid --share-net --die-with-parent \
            --setenv PINCER_HOME /var/lib/pincer --setenv HOME /var/lib/pincer --chdir /var/lib/pincer \
            /usr/local/bin/pincer "$@"
    fi
}

fail() { echo "container smoke FAILED: $*" >&2; exit 1; }

version=$(pincer --version </dev/null)
expected=$("$bin" --version)
[ "$version" = "$expected" ] || fail "--version said '$version', not '$expected'"
echo "--version: $version"

sandbox=$(pincer status </dev/null | grep '^Sandbox:' || true)
echo "status: $sandbox"

reply=$(echo "hello from the image" | pincer chat)
[ "$reply" = "echo: hello from the image" ] || fail "the chat answered '$reply'"
echo "chat: $reply"

# What Pincer wrote in the volume belongs to the image's user, not root (under bwrap
# the user is 10001 only inside its user namespace).
if [ "$engine" = podman ]; then
    owner=$(stat -c %u "$home/pincer.db")
    [ "$owner" = 10001 ] || fail "pincer.db belongs to uid $owner, not 10001"
fi
echo "container smoke passed ($engine)"
