//! The channel conformance suite (tests/conformance) run against a real Synapse: the
//! homeserver the test process started (`pincer_fakes::synapse`), with the bot and the
//! people registered fresh for each test.

use crate::conformance;
use crate::conformance::OWNER;

use pincer_fakes::synapse::MatrixPlatform;

/// The platform with the owner registered (and syncing) before anything happens, so a
/// direct room the bot opens to them is seen.
async fn synapse() -> MatrixPlatform {
    let platform = MatrixPlatform::start().await;
    platform.person(OWNER).await;
    platform
}

conformance!(synapse());
