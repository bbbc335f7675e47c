//! For tests of races, here and in other crates (feature `testing`): two entries
//! swapped over and over by another thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use rustix::fs::{CWD, RenameFlags, renameat_with};

/// Swaps `a` and `b` atomically (`RENAME_EXCHANGE`) in a loop until dropped.
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Swapper {
    pub fn start(a: PathBuf, b: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let thread = std::thread::spawn({
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            move || {
                while !stop.load(Ordering::Relaxed) {
                    if renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).is_err() {
                        return;
                    }
                    swaps.fetch_add(1, Ordering::Relaxed);
                    // Let the folder's lock go now and then, so the reader gets on.
                    std::thread::yield_now();
                }
            }
        });
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// How many swaps were made so far.
    pub fn swaps(&self) -> usize {
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // A panicked swapper already failed its test.
            let _ = thread.join();
        }
    }
}
