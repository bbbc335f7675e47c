//! The channel conformance suite (tests/conformance) run against the fake Discord.

mod common;
mod conformance;

use pincer_fakes::discord::FakeDiscord;

conformance!(FakeDiscord::start());
