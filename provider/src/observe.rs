//! What a chain tells whoever counts its work: each request it made and each time it
//! fell back. The core's metrics implement `CallObserver` and the gateway hands it to
//! every chain it builds (`Chain::with_observer`); nothing in this crate counts by
//! itself or reaches a global.

/// Told of every model request a chain makes and every fallback. Called on the turn's
/// task between requests: it must be quick and must not block.
pub trait CallObserver: Send + Sync {
    /// One request to the model `label` ("provider/model") ended: `"ok"`, or the error
    /// kind's name (`ErrorKind::as_str`). A retry is a request of its own.
    fn call(&self, label: &str, outcome: &'static str);

    /// The chain gave up on the model `label` and moves on to the next one, if any.
    fn fallback(&self, label: &str);
}

/// Counts nothing: a chain's observer until one is handed in (tests, and programs that
/// keep no metrics).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn call(&self, _label: &str, _outcome: &'static str) {}

    fn fallback(&self, _label: &str) {}
}
