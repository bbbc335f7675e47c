//! The `pincer` command: parse the arguments and hand them to `pincer::cli`.
//!
//! The one place of the workspace with unsafe code (the workspace denies it): before any
//! thread starts, the process sets SIGPIPE, takes secrets out of its environment and
//! tunes glibc's allocator; each call says why it is sound.
#![allow(
    unsafe_code,
    reason = "libc calls at start-up; each carries its SAFETY note"
)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    // A sandboxed call's launcher or inner step (`pincer __sandbox …`): nothing else.
    if let Some(code) = pincer::sandbox::launcher::entry() {
        return code;
    }
    // The readers of hostile files (`pincer __pdf-text`, `__image-scale`): a file on
    // stdin, an answer on stdout, nothing else.
    if let Some(code) = pincer::media::child_entry() {
        return code;
    }
    let cli = pincer::cli::Cli::parse();
    if !matches!(cli.command, pincer::cli::Command::Onboard(_)) {
        guard::protect_process();
    }
    if matches!(cli.command, pincer::cli::Command::Run) {
        heap::keep_small();
    }
    if prints_a_report(&cli.command) {
        // `pincer status | head -3` ends quietly, as any Unix tool does, instead of
        // panicking on a closed stdout. Sockets are unaffected (std sends with
        // MSG_NOSIGNAL); only these short-lived commands that print and exit do it.
        // SAFETY: called from `main` before any other thread exists.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    pincer::cli::main(cli)
}

/// The commands that print a report and exit (not the gateway, not the chat REPL).
fn prints_a_report(command: &pincer::cli::Command) -> bool {
    use pincer::cli::Command;
    matches!(
        command,
        Command::Status
            | Command::Doctor
            | Command::Sessions(_)
            | Command::Pairing(_)
            | Command::Cron(_)
            | Command::Memory(_)
            | Command::Mcp(_)
            | Command::Service(_)
            | Command::Backup(_)
            | Command::Restore(_)
    )
}

/// What the process does for itself before any thread starts: its /proc entries
/// closed to other users' processes, and secrets read from the environment and then
/// taken out of it (so `getenv` in a library, or a child that inherits the
/// environment, never sees them). Neither hides the environment the process started
/// with from `/proc/<pid>/environ` for root: keeping commands out of the gateway's
/// `/proc` is the sandbox's job.
mod guard {
    pub(crate) fn protect_process() {
        // Best effort: an older kernel without the prctl leaves the default.
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
        let vars: Vec<(String, String)> = std::env::vars().collect();
        for (key, _) in &vars {
            if pincer::cli::is_secret_var(key) {
                // SAFETY: called from `main` before the runtime or any other thread
                // exists, so nothing reads the environment concurrently.
                unsafe { std::env::remove_var(key) };
            }
        }
        pincer::cli::keep_env(vars);
    }
}

/// The gateway runs for months; glibc's allocator left alone keeps every page it ever
/// used in up to sixteen arenas, so RSS only climbs even when the live heap is flat
/// (the soak showed it). Two arenas, and free pages handed back once a minute, keep
/// RSS near the live heap. Nothing to do with other C libraries.
mod heap {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub(crate) fn keep_small() {
        use std::time::Duration;
        /// How often free pages go back to the system.
        const TRIM_EVERY: Duration = Duration::from_secs(60);
        // SAFETY: mallopt only sets a tunable; called before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
        let trimmer = std::thread::Builder::new()
            .name("heap-trim".into())
            .stack_size(64 * 1024)
            .spawn(|| {
                loop {
                    #[expect(clippy::disallowed_methods, reason = "a thread of its own")]
                    std::thread::sleep(TRIM_EVERY);
                    // SAFETY: malloc_trim takes the allocator's own locks; safe at any time.
                    unsafe {
                        libc::malloc_trim(0);
                    }
                }
            });
        if let Err(err) = trimmer {
            eprintln!("warning: cannot start the heap trimmer: {err}");
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn keep_small() {}
}
