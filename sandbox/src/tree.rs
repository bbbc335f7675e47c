//! The processes under the sandbox launcher, read from `/proc`: counted while a call runs
//! (the process limit, which `RLIMIT_NPROC` cannot give: it counts per user, and not at
//! all for root), orphans that came back to the launcher reaped, and every one of them
//! killed when the call ends. Under bubblewrap the call's processes are in a PID
//! namespace of their own but still listed, with their host pids, in this `/proc`.
//!
//! Reading only: it never decides what a call may do, the launcher does (and the web
//! panel, which refuses connections from the gateway's descendants).

use rustix::process::{Pid, Signal, WaitOptions};

/// The pids a task lists as its children (`/proc/<pid>/task/<tid>/children`, one file
/// per thread: a child forked by any thread is under that thread).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        // A task that ended since the listing has no children left to read.
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            found.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    found
}

/// Every process under `root` (not `root` itself), by the children files: cheap, and
/// what a process that is not the launcher can use (it need not be a subreaper).
pub fn below(root: u32) -> Vec<i32> {
    let Ok(root) = i32::try_from(root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut queue = children_of(root);
    while let Some(pid) = queue.pop() {
        found.push(pid);
        queue.extend(children_of(pid));
    }
    found
}

/// How many tasks (processes and their threads, as `RLIMIT_NPROC` and `pids.max`
/// count) run under `root`, `root` itself not counted. Cheap for a small tree: a
/// directory listing and one small read per task.
pub fn count_tasks(root: Pid) -> usize {
    let mut queue = children_of(root.as_raw_nonzero().get());
    let mut count = 0;
    while let Some(pid) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        count += tasks.count();
        queue.extend(children_of(pid));
    }
    count
}

/// Reap the zombies among this process's own children but `keep` (whose status the
/// caller waits for itself): orphans that ended after coming back to the subreaper
/// would otherwise pile up, counted as tasks, for as long as a long-lived call runs.
pub fn reap_orphans(keep: Option<u32>) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for pid in children_of(me) {
        if keep.is_some_and(|k| i64::from(k) == i64::from(pid)) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| state_of(&stat))
            == Some('Z');
        if zombie && let Some(pid) = Pid::from_raw(pid) {
            // It is ours and dead: collecting it cannot fail in a way that matters.
            let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
}

/// Kill every process under this one, until none is left; reap them all.
pub fn kill_tree() {
    let me = rustix::process::getpid();
    for _ in 0..100 {
        let below = descendants(me);
        if below.is_empty() {
            break;
        }
        for pid in below {
            // Gone already is fine.
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
        #[expect(
            clippy::disallowed_methods,
            reason = "the launcher is a process of its own with no runtime left"
        )]
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Every process whose chain of parents leads to `root`, from every `/proc/<pid>/stat`
/// (slower than the children files, but reliable while processes fork and die).
fn descendants(root: Pid) -> Vec<Pid> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
                && let Some(ppid) = parent_of(&stat)
            {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root.as_raw_nonzero().get()];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found
        .into_iter()
        .skip(1)
        .filter_map(Pid::from_raw)
        .collect()
}

/// The fields of a `/proc/<pid>/stat` line after the command name, which is in
/// parentheses and may itself hold spaces and parentheses.
fn after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

/// The parent pid in a `/proc/<pid>/stat` line.
pub fn parent_of(stat: &str) -> Option<i32> {
    after_name(stat)?.nth(1)?.parse().ok()
}

/// The state letter (`R`, `S`, `Z` …) in a `/proc/<pid>/stat` line.
fn state_of(stat: &str) -> Option<char> {
    after_name(stat)?.next()?.chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_and_state_are_read_past_a_tricky_command_name() {
        assert_eq!(parent_of("42 (a) b) (c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parent_of("garbage"), None);
        assert_eq!(state_of("42 (a) Z) Z 7 42"), Some('Z'));
    }

    #[test]
    fn the_tasks_under_a_process_are_counted_with_their_threads() {
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let shell = Pid::from_raw(child.id() as i32).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while count_tasks(shell) != 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the children never showed"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
