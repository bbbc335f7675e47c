//! The `pincer` command: parse the arguments and hand them to `pincer::cli`.
//!
//! The one place of the workspace with unsafe code (the workspace denies it): before any
//! thread starts, the process sets SIGPIPE, takes secrets out of its environment and
//! tunes glibc's allocator; once the gateway has started, it drops the pages only
//! starting needed. Each call says why it is sound.
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
        pincer::gateway::give_back_with(heap::give_back);
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

    /// Once the gateway has started (src/gateway/settle.rs): trim the heap, and drop
    /// this process's mappings of the read-only segments of the binary and its
    /// libraries. Those pages are clean copies of the files, read back from the page
    /// cache when next used. Returns the bytes of mappings dropped.
    #[cfg(target_os = "linux")]
    pub(crate) fn give_back() -> usize {
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim takes the allocator's own locks; safe at any time.
        unsafe {
            libc::malloc_trim(0);
        }
        let mut dropped = 0usize;
        // SAFETY: the callback only reads the program headers the loader hands it, and
        // `dropped` outlives the call.
        unsafe {
            libc::dl_iterate_phdr(Some(read_only), (&raw mut dropped).cast());
        }
        dropped
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn give_back() -> usize {
        0
    }

    /// `dl_iterate_phdr`'s callback, once per loaded object (the executable first):
    /// drop the pages of its loadable segments that are not writable. The data the
    /// loader relocated (`.data.rel.ro`) lies in a writable segment, so it is kept;
    /// the kernel's vDSO is skipped.
    #[cfg(target_os = "linux")]
    unsafe extern "C" fn read_only(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        dropped: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` whose `dlpi_phdr` points to
        // `dlpi_phnum` program headers; `dropped` is the `usize` `give_back` passed.
        let (info, dropped) = unsafe { (&*info, &mut *dropped.cast::<usize>()) };
        // SAFETY: as above.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        // SAFETY: getauxval reads the auxiliary vector.
        let vdso = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
        let holds_vdso = headers.iter().any(|h| {
            let start = info.dlpi_addr.wrapping_add(h.p_vaddr);
            h.p_type == libc::PT_LOAD && (start..start.wrapping_add(h.p_memsz)).contains(&vdso)
        });
        if vdso != 0 && holds_vdso {
            return 0;
        }
        // SAFETY: sysconf reads a constant.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        for header in headers {
            if header.p_type != libc::PT_LOAD || header.p_flags & libc::PF_W != 0 {
                continue;
            }
            let (Ok(base), Ok(size)) = (
                usize::try_from(info.dlpi_addr.wrapping_add(header.p_vaddr)),
                usize::try_from(header.p_memsz),
            ) else {
                continue;
            };
            // Whole pages inside the segment only: an edge page may hold a neighbour's.
            let start = base.next_multiple_of(page);
            let end = (base + size) / page * page;
            if end <= start {
                continue;
            }
            // SAFETY: [start, end) lies inside a read-only, private file mapping that
            // nothing writes; its pages read back the same from the file.
            let done = unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
            };
            if done == 0 {
                *dropped += end - start;
            }
        }
        0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// This process's mappings of `path` that are not writable: (start, end, resident KiB).
    fn read_only_mappings(path: &str) -> Vec<(usize, usize, u64)> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut found: Vec<(usize, usize, u64)> = Vec::new();
        let mut ours = false;
        for line in smaps.lines() {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or_default();
            if let Some((start, end)) = first.split_once('-')
                && let (Ok(start), Ok(end)) = (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                )
            {
                let perms = words.next().unwrap_or_default();
                ours = line.ends_with(path) && !perms.contains('w');
                if ours {
                    found.push((start, end, 0));
                }
            } else if ours && first == "Rss:" {
                let kib = words
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
                if let Some(last) = found.last_mut() {
                    last.2 = kib;
                }
            }
        }
        found
    }

    fn resident(path: &str) -> u64 {
        read_only_mappings(path).iter().map(|m| m.2).sum()
    }

    #[test]
    fn the_read_only_pages_are_given_back_and_read_back_as_they_were() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let exe = exe.to_string_lossy().into_owned();
        // Every page of the read-only mappings resident first, as a long start leaves them.
        let mut sum = 0u8;
        for (start, end, _) in read_only_mappings(&exe) {
            for page in (start..end).step_by(4096) {
                // SAFETY: `page` lies inside a readable mapping of this process.
                sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(page as *const u8) });
            }
        }
        std::hint::black_box(sum);
        let before = resident(&exe);
        let dropped = super::heap::give_back();
        let after = resident(&exe);
        assert!(dropped > 1 << 20, "dropped only {dropped} bytes");
        // What runs between the two readings comes back; the rest does not.
        assert!(
            after * 4 < before,
            "resident read-only KiB {before} -> {after}"
        );
        // Code and constant data read back from the file as they were.
        let words: Vec<String> = "read back as they were"
            .split(' ')
            .map(str::to_uppercase)
            .collect();
        assert_eq!(words.join("-"), "READ-BACK-AS-THEY-WERE");
        let parsed: pincer::cli::Cli = clap::Parser::try_parse_from(["pincer", "status"]).unwrap();
        assert!(matches!(parsed.command, pincer::cli::Command::Status));
    }
}
