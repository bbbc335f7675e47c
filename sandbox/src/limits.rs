//! What one sandboxed call may use (`[tools.exec.limits]`), as rlimits set in the
//! sandboxed process just before it execs the command (the landlock `inner` step, the
//! step bubblewrap runs inside), so every process of the call inherits them and none can
//! raise them; and, once the call is over, which limit it ran into, in words for whoever
//! reads its output (the model, or a server's log).
//!
//! What rlimits cannot do is done elsewhere: the number of processes is counted by the
//! launcher (`tree`; `RLIMIT_NPROC` counts every process of the user, and none for
//! root, so it is set only inside a user namespace of the call's own), and the call's
//! memory in total is capped by a cgroup where one can be made (`cgroup`).

use pincer_config::ExecLimits;
use rustix::process::{Resource, Rlimit};

use super::SandboxError;

const MIB: u64 = 1 << 20;

/// Signals the kernel sends when a limit is reached (the shell reports a child killed
/// by one as exit code 128 + its number).
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

/// Set `limits` on this process, for it and everything it starts. `own_userns`: this
/// process is in a user namespace made for the call (bubblewrap run by a user other
/// than root), where `RLIMIT_NPROC` counts the call's tasks alone. A limit is never
/// raised above what the gateway itself has.
pub fn apply(limits: &ExecLimits, own_userns: bool) -> Result<(), SandboxError> {
    let mut set = vec![
        (
            Resource::As,
            "memory_mb",
            limits.memory_mb.saturating_mul(MIB),
            0,
        ),
        // A process that ignores SIGXCPU is killed a second later.
        (Resource::Cpu, "cpu_secs", limits.cpu_secs, 1),
        (
            Resource::Fsize,
            "file_size_mb",
            limits.file_size_mb.saturating_mul(MIB),
            0,
        ),
        (Resource::Nofile, "open_files", limits.open_files, 0),
    ];
    if own_userns {
        set.push((Resource::Nproc, "processes", limits.processes, 0));
    }
    for (resource, key, value, grace) in set {
        if value == 0 {
            continue;
        }
        let now = rustix::process::getrlimit(resource);
        let cap = |v: u64| now.maximum.map_or(v, |max| v.min(max));
        let limit = Rlimit {
            current: Some(cap(value)),
            maximum: Some(cap(value.saturating_add(grace))),
        };
        rustix::process::setrlimit(resource, limit).map_err(|e| {
            SandboxError(format!(
                "cannot set the limit [tools.exec.limits] {key}: {e}; check it in config.toml"
            ))
        })?;
    }
    Ok(())
}

/// Whether this process is in a user namespace other than the first one (its uid map is
/// not the identity over every uid).
pub fn in_child_userns() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
        let fields: Vec<&str> = map.split_whitespace().collect();
        fields != ["0", "0", "4294967295"]
    })
}

/// A limit a call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The launcher counted too many processes and threads and ended the call.
    Processes,
    /// The cgroup's `pids.max` refused a fork.
    ForkRefused,
    /// The cgroup's `memory.max`: the kernel killed a process of the call.
    Memory,
    /// `RLIMIT_CPU`: SIGXCPU.
    Cpu,
    /// `RLIMIT_FSIZE`: SIGXFSZ.
    FileSize,
}

impl Hit {
    /// The limit a call's exit tells of, when it tells: death by SIGXCPU or SIGXFSZ, or
    /// exit code 128 + one of them (how a shell reports a child killed so), counted
    /// only when that limit is set.
    pub fn from_exit(limits: &ExecLimits, code: i32) -> Option<Hit> {
        match code - 128 {
            SIGXCPU if limits.cpu_secs > 0 => Some(Hit::Cpu),
            SIGXFSZ if limits.file_size_mb > 0 => Some(Hit::FileSize),
            _ => None,
        }
    }

    /// What happened, and the key that changes it.
    pub fn describe(self, limits: &ExecLimits) -> String {
        match self {
            Hit::Processes => format!(
                "the command reached {} processes and threads, its limit ([tools.exec.limits] processes), and was ended with all its processes",
                limits.processes
            ),
            Hit::ForkRefused => format!(
                "the command tried to run more than {} processes and threads at once ([tools.exec.limits] processes); the extra ones were refused",
                limits.processes
            ),
            Hit::Memory => format!(
                "the command used more than {} MB of memory, its limit ([tools.exec.limits] memory_mb); the kernel killed its largest process",
                limits.memory_mb
            ),
            Hit::Cpu => format!(
                "a process used up its {} s of CPU time ([tools.exec.limits] cpu_secs) and was killed by SIGXCPU",
                limits.cpu_secs
            ),
            Hit::FileSize => format!(
                "a file reached {} MB, the largest a command may write ([tools.exec.limits] file_size_mb); the writer was stopped by SIGXFSZ",
                limits.file_size_mb
            ),
        }
    }
}

/// The limits in a line, for `pincer doctor` and `pincer status`.
pub fn summary(limits: &ExecLimits) -> String {
    let or_none = |value: u64, text: String| {
        if value == 0 { "none".to_string() } else { text }
    };
    format!(
        "address space {} per process, CPU {} per process, files up to {}, {} open files per process, {} processes and threads per command",
        or_none(limits.memory_mb, format!("{} MB", limits.memory_mb)),
        or_none(limits.cpu_secs, format!("{} s", limits.cpu_secs)),
        or_none(limits.file_size_mb, format!("{} MB", limits.file_size_mb)),
        or_none(limits.open_files, limits.open_files.to_string()),
        or_none(limits.processes, limits.processes.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_reporting_sigxfsz_or_sigxcpu_names_the_limit_only_when_it_is_set() {
        let limits = ExecLimits::default();
        assert_eq!(Hit::from_exit(&limits, 128 + 25), Some(Hit::FileSize));
        assert_eq!(Hit::from_exit(&limits, 128 + 24), Some(Hit::Cpu));
        assert_eq!(Hit::from_exit(&limits, 137), None);
        assert_eq!(Hit::from_exit(&limits, 1), None);
        let off = ExecLimits {
            file_size_mb: 0,
            ..limits
        };
        assert_eq!(Hit::from_exit(&off, 128 + 25), None);
        assert!(Hit::FileSize.describe(&limits).contains("file_size_mb"));
    }

    #[test]
    fn limits_are_set_and_never_raised_past_what_the_process_has() {
        // In a child process: rlimits cannot be lowered back.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "limits::tests::in_a_child_apply",
                "--ignored",
                "--nocapture",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("LIMITS SET"), "{text}");
    }

    #[test]
    #[ignore = "run by limits_are_set_and_never_raised_past_what_the_process_has"]
    fn in_a_child_apply() {
        let hard = rustix::process::getrlimit(Resource::Nofile).maximum;
        let limits = ExecLimits {
            memory_mb: 1024,
            cpu_secs: 100,
            file_size_mb: 8,
            open_files: u64::MAX / 2,
            processes: 64,
        };
        apply(&limits, false).unwrap();
        let fsize = rustix::process::getrlimit(Resource::Fsize);
        assert_eq!(fsize.current, Some(8 * MIB));
        assert_eq!(fsize.maximum, Some(8 * MIB));
        let cpu = rustix::process::getrlimit(Resource::Cpu);
        assert_eq!((cpu.current, cpu.maximum), (Some(100), Some(101)));
        let nofile = rustix::process::getrlimit(Resource::Nofile);
        assert_eq!(nofile.maximum, hard.or(Some(u64::MAX / 2)));
        println!("LIMITS SET");
    }
}
