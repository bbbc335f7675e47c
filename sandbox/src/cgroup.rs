//! A cgroup v2 per sandboxed call, where the gateway's user can make one: `memory.max`
//! caps the call's memory in total (what `RLIMIT_AS`, per process, cannot), `pids.max`
//! its processes, and the kernel's OOM killer, confined to the call, ends the largest
//! process of the call and nothing else. Where none can be made (cgroup v1, controllers
//! not delegated, a cgroup shared with other programs) calls get rlimits alone.
//!
//! The gateway prepares once (`prepare`): its own cgroup must offer the memory and pids
//! controllers and be writable (a systemd service with `Delegate=yes`, a user manager's
//! delegated slice, or root with a writable hierarchy). A cgroup may hand controllers to
//! children only while it holds no process itself, so the gateway first moves into a leaf
//! of its own (`pincer-gateway`) if it is alone there. Each call's launcher then makes a
//! sibling `pincer-call-<random>`, sets the limits, moves itself in (everything it starts
//! is inside from the first instruction), and at the end moves back and removes it.
//!
//! It never moves any process but its own, and never touches cgroups it did not make.

use std::path::{Path, PathBuf};

use pincer_config::ExecLimits;
use serde::{Deserialize, Serialize};

use super::limits::Hit;

/// The leaf the gateway moves into to free its cgroup for children.
const LEAF: &str = "pincer-gateway";
/// Each call's cgroup is named this and a random suffix.
const CALL: &str = "pincer-call-";
/// Tasks of the launcher itself, inside the call's cgroup with what it runs.
const LAUNCHER_TASKS: u64 = 4;

/// Where calls get their cgroups: what the launcher is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The directory each call's cgroup is made in.
    pub base: PathBuf,
    /// The gateway's cgroup: where the launcher starts, and goes back to before it
    /// removes the call's (a cgroup with a process in it cannot be removed).
    pub home: PathBuf,
}

/// Why calls get no cgroup of their own (and rlimits alone): what `pincer doctor` says.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cannot read {} ({source})", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("this process is in no cgroup v2 hierarchy")]
    NotInV2,
    #[error("no cgroup v2 hierarchy is mounted")]
    NotMounted,
    #[error(
        "{} is not writable by this user (run pincer as a systemd service with Delegate=yes, or as root)",
        .0.display()
    )]
    NotWritable(PathBuf),
    #[error(
        "the cgroup v2 hierarchy offers {} only the controllers [{offered}], not memory and pids (cgroup v1 holds them, or they are not delegated)",
        group.display()
    )]
    NoControllers { group: PathBuf, offered: String },
    #[error(
        "cannot enable the memory and pids controllers in {} ({source}; run pincer as a systemd service with Delegate=yes, or as root)",
        group.display()
    )]
    Enable {
        group: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} holds other processes besides pincer, so it cannot have child cgroups (give pincer a cgroup of its own: a systemd service with Delegate=yes)",
        .0.display()
    )]
    Shared(PathBuf),
    #[error(
        "cannot move pincer into {} to give calls cgroups of their own ({source})",
        leaf.display()
    )]
    MoveIn {
        leaf: PathBuf,
        source: std::io::Error,
    },
}

/// `path` read whole, or `CgroupError::Read`.
fn read(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|source| CgroupError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// This process's cgroup v2 directory, from `/proc/self/cgroup` and the mount table.
fn own_dir() -> Result<PathBuf, CgroupError> {
    let cgroups = read(Path::new("/proc/self/cgroup"))?;
    let path = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or(CgroupError::NotInV2)?;
    let mounts = read(Path::new("/proc/self/mountinfo"))?;
    let (root, point) = mounts
        .lines()
        .find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if right.split_whitespace().next() != Some("cgroup2") {
                return None;
            }
            let mut fields = left.split_whitespace().skip(3);
            Some((fields.next()?.to_string(), fields.next()?.to_string()))
        })
        .ok_or(CgroupError::NotMounted)?;
    let inside = path.strip_prefix(root.as_str()).unwrap_or(path);
    let inside = inside.trim_start_matches('/');
    let point = PathBuf::from(point);
    Ok(if inside.is_empty() {
        point
    } else {
        point.join(inside)
    })
}

/// The cgroup whose children calls would be, and the problem if there is one, without
/// changing anything: what `pincer doctor` reports.
pub fn probe() -> Result<PathBuf, CgroupError> {
    let own = own_dir()?;
    let group = parent_if_leaf(&own);
    check_controllers(&group)?;
    let writable = |p: &Path| rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_ok();
    if !writable(&group) || !writable(&group.join("cgroup.subtree_control")) {
        return Err(CgroupError::NotWritable(group));
    }
    Ok(group)
}

/// Set up the gateway's cgroup for calls (see the module doc), or say why not.
pub fn prepare() -> Result<Plan, CgroupError> {
    prepare_in(&own_dir()?, std::process::id())
}

fn parent_if_leaf(own: &Path) -> PathBuf {
    match own.parent() {
        Some(parent) if own.file_name().is_some_and(|n| n == LEAF) => parent.to_path_buf(),
        _ => own.to_path_buf(),
    }
}

fn check_controllers(group: &Path) -> Result<(), CgroupError> {
    let offered = read(&group.join("cgroup.controllers"))?;
    let has = |name: &str| offered.split_whitespace().any(|c| c == name);
    if !(has("memory") && has("pids")) {
        return Err(CgroupError::NoControllers {
            group: group.to_path_buf(),
            offered: offered.trim().to_string(),
        });
    }
    Ok(())
}

/// `prepare` with this process's cgroup `own` and pid `me`.
fn prepare_in(own: &Path, me: u32) -> Result<Plan, CgroupError> {
    let group = parent_if_leaf(own);
    check_controllers(&group)?;
    let control = group.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&control).unwrap_or_default();
    let on = |name: &str| enabled.split_whitespace().any(|c| c == name);
    let mut home = own.to_path_buf();
    let enabled_now = on("memory") && on("pids") || {
        match std::fs::write(&control, "+memory +pids") {
            Ok(()) => true,
            Err(err) if err.raw_os_error() == Some(libc::EBUSY) => false,
            Err(source) => return Err(CgroupError::Enable { group, source }),
        }
    };
    if !enabled_now {
        // The cgroup holds processes: only ours may be moved out of the way.
        let procs = std::fs::read_to_string(group.join("cgroup.procs")).unwrap_or_default();
        if procs.split_whitespace().any(|p| p != me.to_string()) {
            return Err(CgroupError::Shared(group));
        }
        let leaf = group.join(LEAF);
        let moved = std::fs::create_dir_all(&leaf)
            .and_then(|()| std::fs::write(leaf.join("cgroup.procs"), me.to_string()))
            .and_then(|()| std::fs::write(&control, "+memory +pids"));
        if let Err(source) = moved {
            return Err(CgroupError::MoveIn { leaf, source });
        }
        home = leaf;
    }
    // Calls a killed launcher left behind: empty ones go (rmdir refuses the others).
    if let Ok(entries) = std::fs::read_dir(&group) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(CALL) {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
    Ok(Plan { base: group, home })
}

/// One call's cgroup, with the launcher inside it.
#[derive(Debug)]
pub struct CallGroup {
    dir: PathBuf,
    home: PathBuf,
}

impl CallGroup {
    /// Make the call's cgroup under `plan.base` with `limits`, and move this process in.
    pub fn enter(plan: &Plan, limits: &ExecLimits, name: &str) -> std::io::Result<CallGroup> {
        let dir = plan.base.join(format!("{CALL}{name}"));
        std::fs::create_dir(&dir)?;
        let setup = || -> std::io::Result<()> {
            if limits.memory_mb > 0 {
                let bytes = limits.memory_mb.saturating_mul(1 << 20);
                std::fs::write(dir.join("memory.max"), bytes.to_string())?;
                // Without swap to go to, the limit holds at once (absent: no swap here).
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
            }
            if limits.processes > 0 {
                let max = limits.processes + LAUNCHER_TASKS;
                std::fs::write(dir.join("pids.max"), max.to_string())?;
            }
            std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
        };
        if let Err(err) = setup() {
            // Nothing was moved in: it can go.
            let _ = std::fs::remove_dir(&dir);
            return Err(err);
        }
        Ok(CallGroup {
            dir,
            home: plan.home.clone(),
        })
    }

    /// The limit the call ran into, as the cgroup counted: a process killed for memory,
    /// or a fork refused.
    pub fn hit(&self) -> Option<Hit> {
        let count = |file: &str, key: &str| {
            std::fs::read_to_string(self.dir.join(file))
                .ok()
                .and_then(|text| {
                    text.lines().find_map(|line| {
                        let (name, value) = line.split_once(' ')?;
                        (name == key).then(|| value.trim().parse::<u64>().ok())?
                    })
                })
                .unwrap_or(0)
        };
        if count("memory.events", "oom_kill") > 0 {
            Some(Hit::Memory)
        } else if count("pids.events", "max") > 0 {
            Some(Hit::ForkRefused)
        } else {
            None
        }
    }

    /// Move back to the gateway's cgroup and remove the call's (its processes are gone).
    pub fn leave(self) {
        // Both best effort: a cgroup left behind is removed at the gateway's next start.
        let _ = std::fs::write(
            self.home.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory laid out like a delegated cgroup (plain files stand in for the
    /// kernel's).
    fn fake_group(controllers: &str, enabled: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(dir.path().join("cgroup.subtree_control"), enabled).unwrap();
        std::fs::write(dir.path().join("cgroup.procs"), "1\n").unwrap();
        dir
    }

    #[test]
    fn without_the_memory_controller_calls_get_rlimits_alone_and_doctor_hears_why() {
        let dir = fake_group("cpu io hugetlb", "");
        let why = prepare_in(dir.path(), 1).unwrap_err().to_string();
        assert!(why.contains("not memory and pids"), "{why}");
        assert!(why.contains("hugetlb"), "{why}");
    }

    #[test]
    fn a_delegated_cgroup_gives_each_call_its_own_with_the_limits() {
        let dir = fake_group("cpu memory pids", "memory pids");
        std::fs::create_dir(dir.path().join("pincer-call-stale")).unwrap();
        let own = dir.path().join(LEAF);
        std::fs::create_dir(&own).unwrap();
        std::fs::write(own.join("cgroup.procs"), "").unwrap();
        let plan = prepare_in(&own, 1).unwrap();
        assert_eq!(plan.base, dir.path());
        assert_eq!(plan.home, own);
        assert!(!dir.path().join("pincer-call-stale").exists());
        let limits = ExecLimits {
            memory_mb: 256,
            processes: 64,
            ..ExecLimits::default()
        };
        let call = CallGroup::enter(&plan, &limits, "t1").unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.path().join("pincer-call-t1").join(f));
        assert_eq!(read("memory.max").unwrap(), (256u64 << 20).to_string());
        assert_eq!(read("pids.max").unwrap(), "68");
        assert_eq!(
            read("cgroup.procs").unwrap(),
            std::process::id().to_string()
        );
        assert_eq!(call.hit(), None);
        std::fs::write(
            dir.path().join("pincer-call-t1/memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(call.hit(), Some(Hit::Memory));
        call.leave();
        assert_eq!(
            std::fs::read_to_string(own.join("cgroup.procs")).unwrap(),
            std::process::id().to_string(),
            "the launcher went back home"
        );
    }
}
