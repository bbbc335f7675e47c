//! The `pincer` command: parse the arguments and hand them to `pincer::cli`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = pincer::cli::Cli::parse();
    if matches!(cli.command, pincer::cli::Command::Run) {
        code_pages::only_as_used();
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

/// Most of an idle gateway's RSS is its own binary: on each page fault in the code the
/// kernel maps the pages around it too ("fault-around", 64 KiB), so code that ran once
/// pulls in its neighbours. Advising the binary's mappings as randomly accessed maps
/// just the pages that run. They are clean pages either way, shared and reclaimable.
mod code_pages {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn only_as_used() {
        let (Ok(exe), Ok(maps)) = (
            std::env::current_exe(),
            std::fs::read_to_string("/proc/self/maps"),
        ) else {
            return;
        };
        let exe = exe.to_string_lossy();
        for line in maps.lines().filter(|line| line.ends_with(exe.as_ref())) {
            let Some((start, end)) = line
                .split_whitespace()
                .next()
                .and_then(|range| range.split_once('-'))
            else {
                continue;
            };
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            // SAFETY: advice only, on a range the kernel just listed as mapped; it
            // changes no contents and no protection.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_RANDOM);
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn only_as_used() {}
}
