//! Retention: what the gateway keeps only for a while — received attachments
//! (`inbox/`) and oversized tool results (`tool-output/`) — is removed once older than
//! `[workspace] retention_days`, with the folders it leaves empty. `run` sweeps when
//! the gateway starts and then once a day, on the blocking pool.
//!
//! Nothing else in the workspace is touched (memory files, logs, the agent's own
//! files), symlinks are never followed (a link is not a regular file: it stays, and so
//! does what it points to), and 0 days keeps everything. The sweep works by folder
//! descriptors opened beneath the workspace (`pincer-confine`): a folder a command swaps
//! for a link while the sweep runs is never walked into, so nothing outside is removed.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use pincer_confine::gateway::Folder;
use pincer_confine::{FileType, Rel, Root};

use tokio_util::sync::CancellationToken;

/// The folders swept, inside the workspace; they themselves stay.
const SWEPT: [&str; 2] = ["inbox", "tool-output"];
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Removes the regular files under `workspace/inbox/` and `workspace/tool-output/`
/// modified more than `retention_days` before `now`, and the folders under them left
/// empty; returns how many files it removed. `retention_days = 0` keeps everything.
/// A file that cannot be removed is logged and skipped; `Err` only when one of the
/// two folders cannot be read at all.
pub fn sweep(workspace: &Path, retention_days: u64, now: SystemTime) -> io::Result<usize> {
    if retention_days == 0 {
        return Ok(0);
    }
    let age = Duration::from_secs(retention_days.saturating_mul(DAY.as_secs()));
    let Some(cutoff) = now.checked_sub(age) else {
        return Ok(0); // before the clock's epoch: nothing is that old
    };
    let root = Root::open(workspace)?;
    let mut removed = 0;
    for name in SWEPT {
        let rel = Rel::plain(name).map_err(io::Error::other)?;
        match Folder::open(&root, &rel) {
            Ok(Some(folder)) => sweep_folder(&folder, name, cutoff, &mut removed),
            Ok(None) => {}
            // A file or a link where the folder should be: not ours to follow.
            Err(err)
                if err
                    .raw_os_error()
                    .is_some_and(|e| e == libc::ELOOP || e == libc::ENOTDIR) =>
            {
                tracing::warn!(
                    "retention: {name} is not a folder ({}); left alone",
                    pincer_confine::explain(&err)
                );
            }
            Err(err) => return Err(err),
        }
    }
    Ok(removed)
}

/// Remove the old regular files under `folder` (named `shown` in logs), and the folders
/// below it that this leaves empty. Everything is named by the descriptor of the
/// folder holding it, so a folder swapped for a link mid-sweep is never followed.
fn sweep_folder(folder: &Folder, shown: &str, cutoff: SystemTime, removed: &mut usize) {
    let entries = match folder.entries() {
        Ok(entries) => entries,
        Err(err) => {
            tracing::warn!("retention: cannot read {shown}: {err}");
            return;
        }
    };
    for (name, kind) in entries {
        let path = format!("{shown}/{name}");
        match kind {
            FileType::Directory => {
                // Gone, or swapped for a link since it was listed: skipped.
                let Ok(inner) = folder.folder(&name) else {
                    continue;
                };
                sweep_folder(&inner, &path, cutoff, removed);
                drop(inner);
                match folder.remove_dir(&name) {
                    Ok(()) => {}
                    Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty => {}
                    Err(err) => tracing::warn!("retention: cannot remove {path}: {err}"),
                }
            }
            FileType::RegularFile => {
                let old = folder
                    .modified(&name)
                    .is_ok_and(|modified| modified < cutoff);
                if !old {
                    continue;
                }
                match folder.remove_file(&name) {
                    Ok(()) => *removed += 1,
                    Err(err) => tracing::warn!("retention: cannot remove {path}: {err}"),
                }
            }
            // Links, FIFOs and the rest: not what retention keeps for a while.
            _ => {}
        }
    }
}

/// Sweeps `workspace` when called and then once a day until `shutdown`, logging what
/// it removed. Returns at once when `retention_days` is 0 (keep for ever).
pub async fn run(workspace: PathBuf, retention_days: u64, shutdown: CancellationToken) {
    daily(workspace, retention_days, shutdown, crate::clock::now).await;
}

/// `run` with the wall clock injected (tokio's paused clock does not move `SystemTime`).
async fn daily(
    workspace: PathBuf,
    retention_days: u64,
    shutdown: CancellationToken,
    clock: impl Fn() -> SystemTime,
) {
    if retention_days == 0 {
        tracing::debug!("workspace.retention_days = 0: inbox and tool-output files are kept");
        return;
    }
    loop {
        let (dir, now) = (workspace.clone(), clock());
        let task = tokio::task::spawn_blocking(move || sweep(&dir, retention_days, now));
        let swept = tokio::select! {
            _ = shutdown.cancelled() => return,
            swept = task => swept,
        };
        match swept {
            Ok(Ok(0)) => tracing::debug!("retention: nothing older than {retention_days} days"),
            Ok(Ok(removed)) => tracing::info!(
                removed,
                "removed inbox/ and tool-output/ files older than {retention_days} days (workspace.retention_days)"
            ),
            Ok(Err(err)) => tracing::warn!(
                "retention: cannot sweep {}: {err}; check the folder's permissions",
                workspace.display()
            ),
            Err(err) => tracing::warn!("retention: the sweep stopped: {err}"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(DAY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// Writes `path` (and its folders), last modified `days` ago.
    fn file(path: &Path, days: u64) {
        aged(path, Duration::from_secs(days * DAY.as_secs()));
    }

    fn aged(path: &Path, age: Duration) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, b"x").unwrap();
        let when = SystemTime::now() - age;
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn old_inbox_and_tool_output_files_go_and_everything_else_stays() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let old = [
            "inbox/telegram/42-photo-1.jpg",
            "inbox/slack/C1-notes.txt",
            "tool-output/exec-1.txt",
        ];
        let kept = [
            "inbox/telegram/42-photo-2.jpg",
            "tool-output/exec-2.txt",
            "MEMORY.md",
            "memory/logs/2026-01-01.md",
            "notes/old.md",
        ];
        for path in old {
            file(&ws.join(path), 40);
        }
        file(&ws.join(kept[0]), 29);
        file(&ws.join(kept[1]), 1);
        for path in &kept[2..] {
            file(&ws.join(path), 400);
        }

        assert_eq!(sweep(ws, 30, SystemTime::now()).unwrap(), 3);
        for path in old {
            assert!(!ws.join(path).exists(), "{path} removed");
        }
        for path in kept {
            assert!(ws.join(path).exists(), "{path} kept");
        }
        assert!(!ws.join("inbox/slack").exists(), "an emptied folder goes");
        assert!(ws.join("inbox/telegram").is_dir());
        assert!(ws.join("inbox").is_dir() && ws.join("tool-output").is_dir());
        assert_eq!(sweep(ws, 30, SystemTime::now()).unwrap(), 0);
    }

    #[test]
    fn zero_days_keeps_everything_and_missing_folders_are_fine() {
        let dir = tempfile::tempdir().unwrap();
        file(&dir.path().join("inbox/discord/1-a.png"), 4000);
        assert_eq!(sweep(dir.path(), 0, SystemTime::now()).unwrap(), 0);
        assert!(dir.path().join("inbox/discord/1-a.png").exists());

        let empty = tempfile::tempdir().unwrap();
        assert_eq!(sweep(empty.path(), 30, SystemTime::now()).unwrap(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_never_followed() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        file(&elsewhere.join("precious.txt"), 400);
        let ws = dir.path().join("ws");
        fs::create_dir_all(ws.join("inbox")).unwrap();
        symlink(&elsewhere, ws.join("inbox/folder-link")).unwrap();
        symlink(elsewhere.join("precious.txt"), ws.join("inbox/file-link")).unwrap();
        // The whole folder a link: not swept either.
        symlink(&elsewhere, ws.join("tool-output")).unwrap();

        assert_eq!(sweep(&ws, 30, SystemTime::now()).unwrap(), 0);
        assert!(elsewhere.join("precious.txt").exists());
        assert!(fs::symlink_metadata(ws.join("inbox/folder-link")).is_ok());
        assert!(fs::symlink_metadata(ws.join("inbox/file-link")).is_ok());
    }

    /// A command swaps an inbox folder for a link to the owner's files over and over
    /// while sweeps run: no sweep ever removes a file outside.
    #[test]
    fn a_folder_swapped_for_a_link_mid_sweep_never_leads_it_outside() {
        use pincer_confine::testing::Swapper;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        let ws = dir.path().join("ws");
        // A new file keeps the folder from being removed as empty.
        file(&ws.join("inbox/telegram/new.jpg"), 0);
        fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.join("inbox/link")).unwrap();
        let swapper = Swapper::start(ws.join("inbox/telegram"), ws.join("inbox/link"));
        let mut sweeps = 0;
        while sweeps < 200 || swapper.swaps() < 200 {
            assert!(sweeps < 1_000_000, "the race never ran");
            // Old files on both sides, put back whichever name they are under now.
            for name in ["a.jpg", "b.jpg"] {
                file(&elsewhere.join(name), 400);
            }
            sweep(&ws, 30, SystemTime::now()).unwrap();
            for name in ["a.jpg", "b.jpg"] {
                assert!(
                    elsewhere.join(name).exists(),
                    "a sweep removed a file outside"
                );
            }
            sweeps += 1;
        }
    }

    /// Waits (paused clock: an hour at a time) until `path` is gone; false after 10 real
    /// seconds.
    async fn gone(path: &Path) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while path.exists() {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        true
    }

    #[tokio::test(start_paused = true)]
    async fn run_sweeps_at_start_then_daily_and_stops_on_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("inbox/telegram/42-a.jpg");
        file(&first, 31);
        // 30 days old in half a day: only a later sweep removes it.
        let second = dir.path().join("tool-output/exec-1.txt");
        aged(&second, 30 * DAY - Duration::from_secs(12 * 3600));
        // The wall clock, moved along by tokio's paused clock.
        let (wall, started) = (SystemTime::now(), tokio::time::Instant::now());
        let clock = move || wall + started.elapsed();
        let shutdown = CancellationToken::new();
        let workspace = dir.path().to_path_buf();
        let running = tokio::spawn(daily(workspace, 30, shutdown.clone(), clock));
        assert!(gone(&first).await, "swept at start");
        assert!(second.exists(), "not yet 30 days old at the first sweep");
        assert!(gone(&second).await, "swept again a day later");

        shutdown.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
        assert!(stopped.is_ok(), "run returns on shutdown");
    }

    #[tokio::test(start_paused = true)]
    async fn run_with_zero_days_removes_nothing_and_returns() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("inbox/telegram/42-a.jpg");
        file(&kept, 4000);
        let ran = tokio::time::timeout(
            Duration::from_secs(60),
            run(dir.path().to_path_buf(), 0, CancellationToken::new()),
        )
        .await;
        assert!(ran.is_ok());
        assert!(kept.exists());
    }
}
