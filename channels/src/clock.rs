//! The wall clock, read in one place (clippy.toml forbids `SystemTime::now` elsewhere).

use std::time::SystemTime;

/// Now, as the system says.
#[expect(clippy::disallowed_methods, reason = "the one place time enters")]
pub fn now() -> SystemTime {
    SystemTime::now()
}
