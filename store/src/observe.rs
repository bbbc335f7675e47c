//! What the store tells whoever counts model usage: every call recorded, with its
//! tokens and cost. The core's metrics implement `UsageObserver` and the gateway hands
//! it to the store it opens (`Store::with_observer`); nothing in this crate counts by
//! itself or reaches a global.

use pincer_provider::{Unobserved, Usage};

/// Told of each model call's usage as the store records it (`Store::record_call`),
/// whether or not its row is written: the tokens were spent. Called on the caller's
/// task: it must be quick and must not block.
pub trait UsageObserver: Send + Sync {
    /// A call to the model `model` ("provider/model") used `usage` and cost `cost_usd`.
    fn usage(&self, model: &str, usage: Usage, cost_usd: f64);
}

/// The provider crate's observer of nothing observes no usage either: the store's
/// observer until one is handed in (tests, and `pincer` subcommands that keep no
/// metrics).
impl UsageObserver for Unobserved {
    fn usage(&self, _model: &str, _usage: Usage, _cost_usd: f64) {}
}
