//! The `pincer` command: parse the arguments and hand them to `pincer::cli`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = pincer::cli::Cli::parse();
    if matches!(cli.command, pincer::cli::Command::Run) {
        heap::keep_small();
    }
    pincer::cli::main(cli)
}

/// The gateway runs for months; glibc's allocator left alone keeps every page it ever
/// used in up to sixteen arenas, so RSS only climbs even when the live heap is flat
/// (the soak showed it). Two arenas, and free pages handed back once a minute, keep
/// RSS near the live heap. Nothing to do with other C libraries.
mod heap {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn keep_small() {
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
