//! The channel conformance suite (tests/conformance) run against the fake Telegram.

mod common;
mod conformance;

use pincer_fakes::telegram::FakeTelegram;

conformance!(FakeTelegram::start());
