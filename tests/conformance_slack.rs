//! The channel conformance suite (tests/conformance) run against the fake Slack.

use crate::conformance;

use pincer_fakes::slack::FakeSlack;

conformance!(FakeSlack::start());
