//! Which models are resting after a failure, and until when: one table per process,
//! shared by every chain and session, keyed by a chain entry's label
//! ("openai/gpt-4.1-mini"). A model that keeps failing the same way rests longer each
//! time (rate limit 30 s → 1 min → 5 min); a success forgets its history. Auth, billing,
//! unknown-model and server-setup failures rest for an hour: they need a human. It
//! decides nothing about retries or fallback (the chain does) and never sleeps; time
//! comes in as `now`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::error::{ErrorKind, format_duration};

/// The ladder a failure climbs, or `None` for failures that are the request's fault,
/// not the model's.
fn ladder(kind: ErrorKind) -> Option<Ladder> {
    match kind {
        ErrorKind::RateLimit => Some(Ladder::RateLimit),
        ErrorKind::Overloaded => Some(Ladder::Overloaded),
        ErrorKind::Server
        | ErrorKind::Timeout
        | ErrorKind::Network
        | ErrorKind::InvalidResponse => Some(Ladder::Flaky),
        ErrorKind::Auth
        | ErrorKind::Billing
        | ErrorKind::ModelNotFound
        | ErrorKind::ServerConfig => Some(Ladder::NeedsHuman),
        ErrorKind::BadRequest | ErrorKind::ContextTooLong => None,
    }
}

/// Failures that share a streak, and how long each step of it rests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ladder {
    /// The provider wants fewer calls: back off hard on repeats.
    RateLimit,
    /// The provider as a whole is busy (503/529); it usually clears quickly.
    Overloaded,
    /// Server errors, timeouts, dropped connections, unreadable replies. Recorded only
    /// after the chain's own retries, so the model already failed several times.
    Flaky,
    /// Auth, billing, unknown models and a server started without a flag it needs:
    /// nothing changes until someone edits a key, an account, the config or the
    /// server's command line (and restarting Pincer forgets the table anyway).
    NeedsHuman,
}

impl Ladder {
    /// The rest after failure number `streak` (from 1) of this ladder; the last step
    /// repeats.
    fn step(self, streak: usize) -> Duration {
        let steps: &[u64] = match self {
            Self::RateLimit => &[30, 60, 300],
            Self::Overloaded => &[15, 30, 60],
            Self::Flaky => &[10, 30, 60],
            Self::NeedsHuman => &[3600],
        };
        let index = streak.saturating_sub(1).min(steps.len() - 1);
        Duration::from_secs(steps.get(index).copied().unwrap_or_default())
    }
}

/// The longest rest a `Retry-After` can impose; a provider asking for a day (a daily
/// quota) is asked again after an hour.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);
/// A failure this long after the previous rest ended starts a new streak: yesterday's
/// rate limit should not make today's first one rest for five minutes.
const STREAK_MEMORY: Duration = Duration::from_secs(900);

/// A few words for "cooling down after …" and the chain's summary of what failed.
pub(crate) fn reason(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Auth => "authentication failure",
        ErrorKind::Billing => "billing refusal",
        ErrorKind::RateLimit => "rate limit",
        ErrorKind::Overloaded => "overload",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Network => "network failure",
        ErrorKind::Server => "server error",
        ErrorKind::ContextTooLong => "conversation too long",
        ErrorKind::BadRequest => "rejected request",
        ErrorKind::ModelNotFound => "unknown model",
        ErrorKind::InvalidResponse => "unreadable reply",
        ErrorKind::ServerConfig => "a server setting missing",
    }
}

/// One model's recent trouble.
#[derive(Debug, Clone, Copy)]
struct Rest {
    /// The model is skipped until then.
    until: Instant,
    /// The failure that started the rest, for logs and the user.
    kind: ErrorKind,
    /// The ladder the streak climbs; a failure of another ladder starts afresh.
    ladder: Ladder,
    /// Consecutive failures on this ladder, counting from 1.
    streak: usize,
}

/// Models cooling down after failures. Cheap to share: wrap it in an `Arc`, one per
/// process, and hand it to every `Chain` (`Chain::with_cooldowns`).
#[derive(Debug, Default)]
pub struct Cooldowns {
    /// Label → its last rest. Labels come from the config, so the map stays small;
    /// expired rests stay to remember the streak.
    rests: Mutex<HashMap<String, Rest>>,
}

impl Cooldowns {
    pub fn new() -> Self {
        Self::default()
    }

    /// The model `label` was given up on after failing with `kind`: rest it for the next
    /// step of its ladder, and never less than the provider's `retry_after` (up to an
    /// hour). Request-specific failures (bad request, too-long context) change nothing.
    ///
    /// A failure that lands while the model is already resting (another session hit the
    /// same wall at the same time) extends the rest if it must but does not climb the
    /// ladder: one burst of failures is one step.
    pub fn record_failure(
        &self,
        label: &str,
        kind: ErrorKind,
        retry_after: Option<Duration>,
        now: Instant,
    ) {
        let Some(ladder) = ladder(kind) else {
            return;
        };
        let mut rests = self.lock();
        // Only a streak on the same ladder counts; a different failure starts afresh.
        let previous = rests
            .get(label)
            .copied()
            .filter(|rest| rest.ladder == ladder);
        let streak = match previous {
            Some(rest) => {
                if now < rest.until {
                    rest.streak
                } else if now.duration_since(rest.until) < STREAK_MEMORY {
                    rest.streak + 1
                } else {
                    1
                }
            }
            None => 1,
        };
        let wait = ladder
            .step(streak)
            .max(retry_after.unwrap_or_default().min(RETRY_AFTER_CAP));
        let mut until = now + wait;
        if let Some(rest) = previous {
            until = until.max(rest.until);
        }
        tracing::info!(
            label,
            kind = kind.as_str(),
            streak,
            rest = %format_duration(until.duration_since(now)),
            "model cooling down"
        );
        rests.insert(
            label.to_string(),
            Rest {
                until,
                kind,
                ladder,
                streak,
            },
        );
    }

    /// The model `label` answered: forget its rest and its streak.
    pub fn record_success(&self, label: &str) {
        self.lock().remove(label);
    }

    /// How much longer `label` rests and why, or `None` when it may be called.
    pub fn cooling(&self, label: &str, now: Instant) -> Option<(Duration, ErrorKind)> {
        let rests = self.lock();
        let rest = rests.get(label)?;
        (now < rest.until).then(|| (rest.until.duration_since(now), rest.kind))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Rest>> {
        // A panic elsewhere while holding the lock leaves a map that is still whole
        // (every write is one insert or remove), so keep using it.
        self.rests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A rest as the user reads it, rounded up: "25s", "5 min", "2 h".
pub(crate) fn format_rest(rest: Duration) -> String {
    let secs = rest.as_secs() + u64::from(rest.subsec_nanos() > 0);
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{} min", secs.div_ceil(60))
    } else {
        format!("{} h", secs.div_ceil(3600))
    }
}
