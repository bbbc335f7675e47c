//! # A real Matrix homeserver for the tests: Synapse, people, and a proxy
//!
//! Not a fake: the real Synapse (PyPI `matrix-synapse`, pinned in
//! `tests/synapse/requirements.txt`, installed by `scripts/install-synapse.sh` into
//! `tests/synapse/.venv`, or wherever `PINCER_SYNAPSE_PYTHON` points), run on
//! 127.0.0.1 with SQLite, no federation, registration closed but for the shared secret,
//! and every rate limit out of the way. Tests drive it as Matrix clients do, over the
//! Client-Server API.
//!
//! ```no_run
//! # async fn demo() {
//! use pincer_fakes::synapse::Homeserver;
//! let server = Homeserver::shared().await;
//! let ann = server.register("ann", false).await;
//! let bob = server.register("bob", false).await;
//! bob.accept_invites();
//! let room = ann.create_dm(bob.user_id()).await;
//! ann.send_text(&room, "hi", &[bob.user_id()]).await;
//! // bob.events(&room) fills as bob's sync loop sees the room …
//! # }
//! ```
//!
//! ## Layout
//! - `home`     — `Homeserver`: config, start (waits for `/versions`), stop, restart,
//!   shared-secret registration; one shared instance per test process
//! - `config`   — `homeserver.yaml`, the log config and the signing key it runs from
//! - `person`   — `Person`: one user's client calls (rooms, messages, reactions, media)
//! - `sync`     — a person's `/sync` loop and the events it recorded
//! - `media`    — image sizes and voice-note lengths read from the bytes
//! - `proxy`    — `Proxy`: the TCP proxy the bot connects through (cut, stall)
//! - `shown`    — the bot's messages read from what people saw (edits, buttons)
//! - `platform` — `MatrixPlatform`: `FakePlatform` for the conformance suite
//!
//! ## Behaviour worth knowing
//! - One Synapse start takes 1.3-2.5 s (2 cores, measured 2026-11-28);
//!   `Homeserver::shared` pays it once per test process. User names carry a process-wide counter (`ann-7`), so
//!   tests sharing the server never collide.
//! - Synapse is killed when the test process ends, however it ends (`home`); its files
//!   live in `$TMPDIR/pincer-synapse/<pid>-<n>/` (`homeserver.log` is Synapse's log,
//!   `stdout.log` its output) and are removed by the next start once the process is
//!   gone. A start that fails panics with the tail of both.
//! - People's sync loops ask for up to 500 events a room per sync and see `m.typing`;
//!   events are kept in memory for the test's life.
//! - It does not cover: end-to-end encryption (rooms are unencrypted), federation,
//!   other homeservers' quirks, or rate limiting.

mod config;
mod home;
mod media;
mod person;
mod platform;
mod proxy;
mod shown;
mod sync;

pub use home::{Homeserver, python};
pub use person::Person;
pub use platform::{CHOICES, MatrixPlatform};
pub use proxy::Proxy;
