//! Once the gateway has started, it gives back the memory only starting needed.
//!
//! Starting runs code and reads constant data that an idle gateway never touches again:
//! config parsing, migrations, each channel's login (Matrix's device keys and
//! cross-signing), the SDKs' set-up. Those pages of the binary stay mapped, and counted
//! in the gateway's RSS, until something drops them. So when every channel has come up
//! (or failed to), or after a minute at the latest, the gateway:
//!
//! - drops its mappings of the read-only segments (code, constant data, unwind tables)
//!   of the binary and of the libraries it loaded (libc, libm, the loader) with
//!   `MADV_DONTNEED`. The pages are clean copies of the files: the kernel keeps them in
//!   its page cache, and a function needed again costs a minor fault (no disk read).
//!   What the idle gateway runs comes straight back; the rest stays out. Writable
//!   segments, and the data the loader relocated (`.data.rel.ro`), are never touched:
//!   dropping those would lose what the loader wrote. Nor is the kernel's vDSO.
//! - hands the heap's free pages back (`malloc_trim`, which the heap trimmer otherwise
//!   first does a minute after start).
//!
//! It happens once: each turn afterwards brings back the code it runs, and a gateway
//! that has handled many turns holds what they ran. The system calls are in
//! `src/main.rs` (`heap::give_back`), the workspace's one place with unsafe code; an
//! in-process gateway (tests, benches) gives nothing back.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pincer_channels::{Health, Registry};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the channels' health is looked at while they start.
const POLL: Duration = Duration::from_millis(100);
/// Channels still starting after this long are not waited for.
const AT_THE_LATEST: Duration = Duration::from_secs(60);

/// How the memory is given back: `src/main.rs` (the workspace's one place with unsafe
/// code) sets it for `pincer run`; it returns the bytes of mappings dropped.
static GIVE_BACK: OnceLock<fn() -> usize> = OnceLock::new();

/// Set how `pincer run` gives back what starting needed (once; later calls are ignored).
pub fn give_back_with(give_back: fn() -> usize) {
    let _ = GIVE_BACK.set(give_back);
}

/// Wait until no channel is starting, then give back what starting needed.
pub(super) async fn after_start(registry: Arc<Registry>, shutdown: CancellationToken) {
    let Some(&give_back) = GIVE_BACK.get() else {
        return;
    };
    let deadline = Instant::now() + AT_THE_LATEST;
    while registry.handles().any(|h| h.health() == Health::Starting) && Instant::now() < deadline {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
    match tokio::task::spawn_blocking(give_back).await {
        Ok(bytes) => tracing::debug!(bytes, "started: gave back the start's pages"),
        Err(err) => tracing::warn!("cannot give back the start's pages: {err}"),
    }
}
