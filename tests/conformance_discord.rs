//! The channel conformance suite (tests/conformance) run against the fake Discord.

use crate::conformance;

use pincer_fakes::discord::FakeDiscord;

conformance!(FakeDiscord::start());
