//! Landlock, built in. Landlock only allows, so hiding `$PINCER_HOME` means allowing
//! everything else: read (and execute) access to every sibling of each directory on the
//! way down from `/` to the home, full access to the workspace and the call's private
//! temp dir, writes to the harmless devices (`/dev/null` …). Signals and abstract UNIX
//! sockets are scoped to the sandbox where the kernel has it (ABI 6+), so nothing inside
//! can signal the gateway or the launcher; Landlock also refuses a sandboxed process
//! ptrace-level access to processes outside it, which is what reading another process's
//! `/proc/<pid>/environ`, `mem` or `fd` needs — for root too. With `network = false`,
//! TCP bind and connect are refused (ABI 4+; with the network on, bind alone), and since Landlock cannot filter UDP, a
//! seccomp filter refuses every other internet and packet socket (and io_uring, which
//! could open one behind seccomp's back). Pathname UNIX sockets outside the workspace
//! and the temp dir are refused too: by Landlock where the kernel can tell them apart
//! (ABI 9, Linux 7.1: `LANDLOCK_ACCESS_FS_RESOLVE_UNIX`), else by the seccomp filter
//! refusing every new UNIX socket (`socketpair` still works).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::{Confinement, SandboxError};

/// The newest Landlock ABI this code was written for (older kernels get what they have).
const ABI_USED: ABI = ABI::V9;

/// Devices a command may read and write; the rest of `/dev` (disks above all: root could
/// read the raw blocks of the secrets file) stays closed.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
];
/// Devices a command may read.
const READ_DEVICES: &[&str] = &["/dev/random", "/dev/urandom"];

/// Whether this kernel enforces Landlock at all.
pub(crate) fn available() -> Result<(), SandboxError> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .map(drop)
        .map_err(|e| SandboxError(format!("Landlock is not available on this kernel ({e})")))
}

/// The paths that stay readable: every entry of each directory on the way from `/` to
/// `hidden`, but that way itself, `/dev` (see `DEVICES`), and anything that resolves
/// into or above `hidden`.
pub(crate) fn read_roots(hidden: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let mut dir = PathBuf::from("/");
    for component in hidden.components().skip(1) {
        let next = dir.join(component);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path == next || path == Path::new("/dev") {
                    continue;
                }
                // A sibling that is a link into (or above) the home would open it up.
                let resolved = path.canonicalize().unwrap_or_else(|_| path.clone());
                if resolved.starts_with(hidden) || hidden.starts_with(&resolved) {
                    continue;
                }
                roots.push(path);
            }
        }
        dir = next;
    }
    roots
}

/// Give up every capability, for good: out of the bounding set (so exec cannot give
/// them back, not even to root), then out of the current sets. Root without
/// capabilities cannot read kernel memory (`/proc/kcore`), remount, or bypass the
/// permissions of files it does not own. For other users there is nothing to drop.
fn drop_capabilities() {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    for cap in CapabilitySet::all().iter() {
        // Not held, or not allowed to drop (no CAP_SETPCAP: then none is held either).
        let _ = rustix::thread::remove_capability_from_bounding_set(cap);
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    // Best effort, as above.
    let _ = rustix::thread::set_capabilities(None, none);
}

/// Restrict this process (and what it will exec) to `confinement`, with `tmp` as its
/// private temp dir. Fails rather than run unconfined.
pub(crate) fn restrict(confinement: &Confinement, tmp: &Path) -> Result<(), SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError(format!("cannot set up Landlock: {e}"));
    let all = AccessFs::from_all(ABI_USED);
    // Connecting to a pathname socket needs its own right (ABI 9): with the network on,
    // the rest of the system's sockets stay reachable, as under bubblewrap.
    let read = if confinement.network {
        AccessFs::from_read(ABI_USED) | AccessFs::ResolveUnix
    } else {
        AccessFs::from_read(ABI_USED)
    };
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(|e| fail(&e))?;
    // With the network on, TCP connects are allowed but binds are not: a command may
    // not open a listening port (a browser sends the panel's cookie to every port of
    // 127.0.0.1, so a listener there could catch it).
    let net = if confinement.network {
        AccessNet::BindTcp.into()
    } else {
        AccessNet::from_all(ABI_USED)
    };
    ruleset = ruleset.handle_access(net).map_err(|e| fail(&e))?;
    let mut created = ruleset
        .scope(Scope::from_all(ABI_USED))
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?;
    for root in read_roots(&confinement.hidden) {
        // A path that vanished since it was listed is simply not granted.
        if let Ok(fd) = PathFd::new(&root) {
            created = created
                .add_rule(PathBeneath::new(fd, read))
                .map_err(|e| fail(&e))?;
        }
    }
    for device in DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            created = created
                .add_rule(PathBeneath::new(
                    fd,
                    AccessFs::ReadFile | AccessFs::WriteFile,
                ))
                .map_err(|e| fail(&e))?;
        }
    }
    for device in READ_DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::ReadFile))
                .map_err(|e| fail(&e))?;
        }
    }
    drop_capabilities();
    let own = confinement.own.as_deref();
    for writable in [Some(confinement.workspace.as_path()), Some(tmp), own]
        .into_iter()
        .flatten()
    {
        let fd = PathFd::new(writable).map_err(|e| fail(&e))?;
        created = created
            .add_rule(PathBeneath::new(fd, all))
            .map_err(|e| fail(&e))?;
    }
    let status = created.restrict_self().map_err(|e| fail(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError(
            "Landlock is not enforced on this kernel; the command was not run".into(),
        ));
    }
    if !confinement.network {
        // Before ABI 4 Landlock cannot refuse TCP either, before ABI 9 the system's UNIX
        // sockets: the filter then takes them too.
        let abi = ABI::from(status.landlock);
        no_internet(abi < ABI::V4, abi < ABI::V9)?;
    }
    Ok(())
}

/// Refuse connecting to any pathname UNIX socket but those under `allowed` from now on
/// (Landlock ABI 9+; on an older kernel nothing is refused): the step bubblewrap runs
/// before a command when the network is off.
pub(crate) fn unix_sockets_only_in(allowed: &[&Path]) -> Result<(), SandboxError> {
    let fail = |e: &dyn std::fmt::Display| {
        SandboxError(format!("cannot refuse the system's UNIX sockets: {e}"))
    };
    let mut created = Ruleset::default()
        .handle_access(AccessFs::ResolveUnix)
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?;
    for path in allowed {
        if let Ok(fd) = PathFd::new(path) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::ResolveUnix))
                .map_err(|e| fail(&e))?;
        }
    }
    created.restrict_self().map_err(|e| fail(&e))?;
    Ok(())
}

/// Refuse every TCP bind (Landlock ABI 4+) and connecting to abstract UNIX sockets made
/// outside (ABI 6+) from now on; on an older kernel what it lacks is not refused: the
/// step bubblewrap runs before a command when the network is on.
pub(crate) fn no_tcp_bind() -> Result<(), SandboxError> {
    let fail =
        |e: &dyn std::fmt::Display| SandboxError(format!("cannot refuse listening ports: {e}"));
    Ruleset::default()
        .handle_access(AccessNet::BindTcp)
        .map_err(|e| fail(&e))?
        .scope(Scope::AbstractUnixSocket)
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?
        .restrict_self()
        .map_err(|e| fail(&e))?;
    Ok(())
}

/// Why a seccomp filter could not be made.
fn filter_failed(e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError(format!("cannot set up the no-network filter: {e}"))
}

/// A condition on a system call's argument `arg` (its low 32 bits).
fn cond(
    arg: u8,
    op: seccompiler::SeccompCmpOp,
    value: i32,
) -> Result<seccompiler::SeccompCondition, SandboxError> {
    seccompiler::SeccompCondition::new(arg, seccompiler::SeccompCmpArgLen::Dword, op, value as u64)
        .map_err(|e| filter_failed(&e))
}

/// The rule matching a socket of any family but UNIX, IPv4 and IPv6: packet, netlink,
/// vsock (which no network namespace holds), bluetooth, and the rest.
fn foreign_families() -> Result<seccompiler::SeccompRule, SandboxError> {
    use seccompiler::SeccompCmpOp::Ne;
    seccompiler::SeccompRule::new(vec![
        cond(0, Ne, libc::AF_UNIX)?,
        cond(0, Ne, libc::AF_INET)?,
        cond(0, Ne, libc::AF_INET6)?,
    ])
    .map_err(|e| filter_failed(&e))
}

/// Refuse, with EPERM, every call of each system call the rules match (a call with no
/// rules: every call of it), from now on.
fn refuse(
    rules: std::collections::BTreeMap<i64, Vec<seccompiler::SeccompRule>>,
) -> Result<(), SandboxError> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| filter_failed(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| filter_failed(&e))?;
    let program: BpfProgram = filter.try_into().map_err(|e| filter_failed(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| filter_failed(&e))
}

/// With the network off under bubblewrap (whose network namespace holds only loopback):
/// refuse sockets of every family but UNIX, IPv4 and IPv6 — a vsock to the hypervisor
/// is in no network namespace.
pub(crate) fn no_foreign_sockets() -> Result<(), SandboxError> {
    refuse(std::collections::BTreeMap::from([(
        libc::SYS_socket,
        vec![foreign_families()?],
    )]))
}

/// The seccomp filter for `network = false`: `socket()` fails (EPERM) for an internet
/// socket that is not plain TCP (UDP, raw, SCTP, MPTCP), for every family but UNIX and
/// internet (packet, netlink, vsock, …), and `io_uring_setup` fails too. TCP is Landlock's, unless `tcp_too` (a kernel whose
/// Landlock cannot filter it): then every internet socket fails. UNIX sockets are
/// Landlock's too, unless `unix_too` (a kernel whose Landlock cannot tell the
/// workspace's sockets from the system's): then `socket(AF_UNIX)` fails, and only
/// `socketpair` makes one.
fn no_internet(tcp_too: bool, unix_too: bool) -> Result<(), SandboxError> {
    use seccompiler::{SeccompCmpOp, SeccompRule};
    let rule = |conds| SeccompRule::new(conds).map_err(|e| filter_failed(&e));
    let mut socket_rules = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        if tcp_too {
            socket_rules.push(rule(vec![cond(0, SeccompCmpOp::Eq, family)?])?);
            continue;
        }
        for kind in [
            libc::SOCK_DGRAM,
            libc::SOCK_RAW,
            libc::SOCK_RDM,
            libc::SOCK_SEQPACKET,
        ] {
            socket_rules.push(rule(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
            ])?);
        }
        // A stream socket that is not TCP (SCTP, MPTCP) is not Landlock's to refuse.
        socket_rules.push(rule(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
        ])?);
    }
    // Only the families the network settings speak of.
    socket_rules.push(foreign_families()?);
    if unix_too {
        socket_rules.push(rule(vec![cond(0, SeccompCmpOp::Eq, libc::AF_UNIX)?])?);
    }
    refuse(std::collections::BTreeMap::from([
        (libc::SYS_socket, socket_rules),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]))
}
