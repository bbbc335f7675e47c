//! The channel conformance suite (tests/conformance) run against the fake Telegram.

use crate::conformance;

use pincer_fakes::telegram::FakeTelegram;

conformance!(FakeTelegram::start());
