//! The channel conformance suite (tests/conformance) run against the fake Slack.

mod common;
mod conformance;

use pincer_fakes::slack::FakeSlack;

conformance!(FakeSlack::start());
